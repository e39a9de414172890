//! The Linux sandbox: rules built in the driver, applied by the child with system calls
//! only, between its last `dup2` and its `execve`.
//!
//! - Landlock ([`landlock`] crate) grants writes beneath the writable roots only and, from
//!   ABI 4, TCP connects only to the command's proxy port (binds only with
//!   `allowLocalBinding`); its ruleset is a descriptor made here and passed on.
//! - Seccomp filters ([`seccompiler`]) allow only the sockets Landlock rules (TCP), Unix
//!   sockets when allowed, and netlink; refuse `io_uring` (which makes sockets without
//!   `socket(2)`), `listen` unless local binding is allowed, and the x32 system calls.
//! - Landlock only grants, so a path that must stay unwritable inside a writable root
//!   (`.git/hooks`, a `denyWrite`), and a `denyRead`, is covered in a mount namespace of
//!   the child's own: a read-only bind of itself, an empty read-only tmpfs or `/dev/null`.
//!   Not root: in a user namespace mapping only the user's own ids. Made only when some
//!   such path exists.
//! - Capabilities go (bounding set, `SECBIT_NOROOT`, an empty set) and `NO_NEW_PRIVS` is
//!   set, so root inside gains nothing and no set-uid program widens anything.

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use landlock::{
    AccessFs, AccessNet, CompatLevel, Compatible, NetPort, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, ABI,
};

/// The Landlock ABI this kernel offers (0: none), asked once.
pub fn landlock_abi() -> i32 {
    static ABI_FOUND: std::sync::OnceLock<i32> = std::sync::OnceLock::new();
    *ABI_FOUND.get_or_init(|| {
        // SAFETY: the version query takes no attributes and returns a number.
        let abi = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<u8>(),
                0usize,
                1u32, // LANDLOCK_CREATE_RULESET_VERSION
            )
        };
        abi.max(0) as i32
    })
}

/// Whether a process of this user can make a user and mount namespace (needed, when not
/// root, to cover paths inside writable roots), asked once with a throwaway child.
pub fn user_namespaces() -> bool {
    static FOUND: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *FOUND.get_or_init(|| {
        // SAFETY: the child only calls unshare and _exit; the parent waits for it.
        unsafe {
            let pid = libc::fork();
            if pid == 0 {
                let made = libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS);
                libc::_exit(if made == 0 { 0 } else { 1 });
            }
            if pid < 0 {
                return false;
            }
            let mut status = 0;
            while libc::waitpid(pid, &mut status, 0) < 0
                && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
            {}
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
        }
    })
}

/// What the kernel lacks for `plan`, in a sentence; None when it has everything.
pub fn missing(plan: &super::Plan) -> Option<String> {
    if let Some(gap) = abi_gap(landlock_abi()) {
        return Some(gap);
    }
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if plan.needs_mounts() && !root && !user_namespaces() {
        return Some(
            "this user cannot make user namespaces (kernel.unprivileged_userns_clone or an \
             AppArmor policy forbids it), which covering denyWrite/denyRead paths needs"
                .to_owned(),
        );
    }
    None
}

/// What a kernel whose Landlock is ABI `abi` (0: none) lacks, in a sentence.
fn abi_gap(abi: i32) -> Option<String> {
    match abi {
        ..1 => Some(
            "the kernel has no Landlock (Linux 5.13 or later with landlock in the lsm= list)"
                .to_owned(),
        ),
        1..4 => Some(format!(
            "the kernel's Landlock is ABI {abi}; network rules need ABI 4 (Linux 6.7)"
        )),
        4..6 => Some(format!(
            "the kernel's Landlock is ABI {abi}, so signals to the driver and other commands \
             are not contained (that needs ABI 6, Linux 6.12)"
        )),
        _ => None,
    }
}

/// What the child applies before its exec, prepared in full here.
#[derive(Debug)]
pub struct Child {
    /// The Landlock ruleset.
    ruleset: OwnedFd,
    /// The seccomp programs, installed in turn.
    filters: Vec<Program>,
    /// `uid_map` and `gid_map` lines, when a user namespace is made.
    maps: Option<(CString, CString)>,
    /// Paths bound read-only over themselves in a new mount namespace, each with the
    /// flags its mount has (a user namespace may not clear them).
    read_only: Vec<(CString, libc::c_ulong)>,
    /// Directories bound over themselves, so they cannot be renamed (see `Plan::pinned`).
    pinned: Vec<CString>,
    /// Paths hidden: a directory under an empty tmpfs, a file under `/dev/null`.
    hidden: Vec<(CString, bool)>,
}

fn c_path(path: &Path) -> Result<CString, String> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| format!("the path {} holds a NUL byte", path.display()))
}

fn rights(abi: ABI) -> landlock::BitFlags<AccessFs> {
    AccessFs::from_write(abi)
}

/// Builds the rules for `plan`: `extra_files` are open files the command may write
/// again by path (its stderr file in the mount); `proxy_port` the one TCP port it may
/// connect to.
pub fn build(
    plan: &super::Plan,
    extra_files: &[RawFd],
    proxy_port: Option<u16>,
) -> Result<Child, String> {
    // SAFETY: getuid and getgid cannot fail.
    let ids = unsafe { (libc::getuid(), libc::getgid()) };
    build_for(plan, extra_files, proxy_port, ids)
}

/// [`build`] for a child that runs as the user and group `ids`.
fn build_for(
    plan: &super::Plan,
    extra_files: &[RawFd],
    proxy_port: Option<u16>,
    (uid, gid): (libc::uid_t, libc::gid_t),
) -> Result<Child, String> {
    let abi_number = landlock_abi();
    let abi = match abi_number {
        1 => ABI::V1,
        2 => ABI::V2,
        3 => ABI::V3,
        4 => ABI::V4,
        5 => ABI::V5,
        _ => ABI::V6,
    };
    let failed = |what: &str, err: &dyn std::fmt::Display| format!("cannot {what}: {err}");
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(rights(abi))
        .map_err(|e| failed("make the Landlock ruleset", &e))?;
    if abi_number >= 4 {
        let mut net: landlock::BitFlags<AccessNet> = AccessNet::ConnectTcp.into();
        if !plan.allow_local_binding {
            net |= AccessNet::BindTcp;
        }
        ruleset = ruleset
            .handle_access(net)
            .map_err(|e| failed("make the Landlock ruleset", &e))?;
    }
    if abi_number >= 6 {
        // Signals and abstract Unix sockets stay inside the sandbox: a command cannot
        // signal the driver or other commands, nor reach an abstract socket outside.
        ruleset = ruleset
            .set_compatibility(CompatLevel::BestEffort)
            .scope(landlock::Scope::Signal | landlock::Scope::AbstractUnixSocket)
            .map_err(|e| failed("scope the Landlock ruleset", &e))?
            .set_compatibility(CompatLevel::HardRequirement);
    }
    let mut created = ruleset
        .create()
        .map_err(|e| failed("make the Landlock ruleset", &e))?;
    for root in &plan.writable {
        let Ok(fd) = PathFd::new(root) else {
            continue;
        };
        let is_dir = std::fs::metadata(root).is_ok_and(|m| m.is_dir());
        let access = if is_dir {
            rights(abi)
        } else {
            rights(abi) & AccessFs::from_file(abi)
        };
        created = created
            .add_rule(PathBeneath::new(fd, access))
            .map_err(|e| failed(&format!("allow writes below {}", root.display()), &e))?;
    }
    for &fd in extra_files {
        // SAFETY: the caller's descriptor stays open while this borrows it.
        let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
        created = created
            .add_rule(PathBeneath::new(
                borrowed,
                rights(abi) & AccessFs::from_file(abi),
            ))
            .map_err(|e| failed("allow writes to the command's stderr", &e))?;
    }
    if let (Some(port), true) = (proxy_port, abi_number >= 4) {
        created = created
            .add_rule(NetPort::new(port, AccessNet::ConnectTcp))
            .map_err(|e| failed("allow the proxy's port", &e))?;
    }
    let ruleset: Option<OwnedFd> = created.into();
    let ruleset = ruleset.ok_or("the kernel gave no Landlock ruleset")?;
    let filters = socket_filters(plan.allow_all_unix_sockets, plan.allow_local_binding)?.to_vec();
    let maps = (plan.needs_mounts() && uid != 0).then(|| {
        (
            CString::new(format!("{uid} {uid} 1")).expect("digits"),
            CString::new(format!("{gid} {gid} 1")).expect("digits"),
        )
    });
    Ok(Child {
        ruleset,
        filters,
        maps,
        read_only: plan
            .read_only
            .iter()
            .map(|p| Ok((c_path(p)?, kept_flags(p)?)))
            .chain(plan.mount.iter().map(|p| Ok((c_path(p)?, FUSE_FLAGS))))
            .collect::<Result<_, String>>()?,
        pinned: plan
            .pinned
            .iter()
            .map(|p| c_path(p))
            .collect::<Result<_, String>>()?,
        hidden: plan
            .hidden
            .iter()
            .map(|p| Ok((c_path(p)?, p.is_dir())))
            .collect::<Result<_, String>>()?,
    })
}

/// The flags of a FUSE mount, known without asking it (a `statvfs` of the driver's own
/// mount would be a request to the driver).
const FUSE_FLAGS: libc::c_ulong = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_RELATIME;

/// The flags of the mount `path` is on that a bind of it must keep.
fn kept_flags(path: &Path) -> Result<libc::c_ulong, String> {
    let c = c_path(path)?;
    // SAFETY: statvfs fills a plain struct for a valid path.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut stat) } < 0 {
        return Err(format!(
            "cannot look at {}: {}",
            path.display(),
            std::io::Error::last_os_error()
        ));
    }
    // The ST_ flags have the MS_ flags' values.
    Ok(stat.f_flag as libc::c_ulong
        & (libc::MS_NOSUID
            | libc::MS_NODEV
            | libc::MS_NOEXEC
            | libc::MS_NOATIME
            | libc::MS_NODIRATIME
            | libc::MS_RELATIME))
}

/// The seccomp programs (see [`compile_socket_filters`]), compiled once for each of
/// their four forms.
fn socket_filters(unix: bool, listen: bool) -> Result<&'static [Program], String> {
    type Compiled = std::sync::OnceLock<Result<Vec<Program>, String>>;
    static FORMS: [Compiled; 4] = [
        Compiled::new(),
        Compiled::new(),
        Compiled::new(),
        Compiled::new(),
    ];
    FORMS[usize::from(unix) * 2 + usize::from(listen)]
        .get_or_init(|| compile_socket_filters(unix, listen))
        .as_deref()
        .map_err(Clone::clone)
}

/// One seccomp program.
type Program = Vec<libc::sock_filter>;

/// The seccomp programs, each installed in turn (the kernel runs them all):
/// - `socket` is an allow list: TCP over IPv4 or IPv6 (the one kind Landlock rules), a
///   Unix socket when `unix` allows it, and netlink (which `getaddrinfo` uses to list the
///   machine's addresses); any other socket, and a `socketpair` of anything but Unix
///   sockets, fails with EAFNOSUPPORT.
/// - `io_uring_setup` (which makes sockets without `socket(2)`) fails with EPERM, and so
///   does `listen` unless `listen` allows it: a listen on an unbound socket binds it
///   without a `bind(2)` Landlock could refuse.
/// - On x86_64, a system call of the x32 ABI fails with ENOSYS: its numbers are not the
///   ones the other programs name.
fn compile_socket_filters(unix: bool, listen: bool) -> Result<Vec<Program>, String> {
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen as Len, SeccompCmpOp as Op, SeccompCondition as Cond,
        SeccompFilter, SeccompRule,
    };
    let arch: seccompiler::TargetArch = std::env::consts::ARCH
        .try_into()
        .map_err(|e| format!("no seccomp for this architecture: {e}"))?;
    let bad = |e: seccompiler::BackendError| format!("cannot build the seccomp filter: {e}");
    let cond = |arg: u8, op: Op, value: libc::c_int| Cond::new(arg, Len::Dword, op, value as u64);
    let rule = |conds: Vec<Result<Cond, seccompiler::BackendError>>| {
        SeccompRule::new(conds.into_iter().collect::<Result<_, _>>().map_err(bad)?).map_err(bad)
    };
    let mut other_family = vec![
        cond(0, Op::Ne, libc::AF_INET),
        cond(0, Op::Ne, libc::AF_INET6),
        cond(0, Op::Ne, libc::AF_NETLINK),
    ];
    if unix {
        other_family.push(cond(0, Op::Ne, libc::AF_UNIX));
    }
    let mut socket_rules = vec![rule(other_family)?];
    for family in [libc::AF_INET, libc::AF_INET6] {
        // The type's low four bits are the kind; the kernel refuses any other flag than
        // SOCK_NONBLOCK and SOCK_CLOEXEC.
        for kind in (0..16).filter(|&kind| kind != libc::SOCK_STREAM) {
            socket_rules.push(rule(vec![
                cond(0, Op::Eq, family),
                cond(1, Op::MaskedEq(0xf), kind),
            ])?);
        }
        socket_rules.push(rule(vec![
            cond(0, Op::Eq, family),
            cond(2, Op::Ne, 0),
            cond(2, Op::Ne, libc::IPPROTO_TCP),
        ])?);
    }
    let pair_rules = vec![rule(vec![cond(0, Op::Ne, libc::AF_UNIX)])?];
    let families = [
        (libc::SYS_socket, socket_rules),
        (libc::SYS_socketpair, pair_rules),
    ];
    let mut refused = vec![(libc::SYS_io_uring_setup, Vec::new())];
    if !listen {
        refused.push((libc::SYS_listen, Vec::new()));
    }
    let compile = |rules: Vec<(i64, Vec<SeccompRule>)>, errno: i32| -> Result<Program, String> {
        let filter = SeccompFilter::new(
            rules.into_iter().collect(),
            SeccompAction::Allow,
            SeccompAction::Errno(errno as u32),
            arch,
        )
        .map_err(bad)?;
        let program: seccompiler::BpfProgram = filter
            .try_into()
            .map_err(|e: seccompiler::BackendError| bad(e))?;
        Ok(program
            .into_iter()
            .map(|f| libc::sock_filter {
                code: f.code,
                jt: f.jt,
                jf: f.jf,
                k: f.k,
            })
            .collect())
    };
    let mut programs = vec![
        compile(families.into(), libc::EAFNOSUPPORT)?,
        compile(refused, libc::EPERM)?,
    ];
    if cfg!(target_arch = "x86_64") {
        programs.push(refuse_x32());
    }
    Ok(programs)
}

/// A program refusing every system call numbered with the x32 bit (ENOSYS); seccompiler
/// has no way to name a range of numbers.
fn refuse_x32() -> Program {
    const X32_BIT: u32 = 0x4000_0000;
    const RET_ERRNO: u32 = 0x0005_0000;
    const RET_ALLOW: u32 = 0x7fff_0000;
    let op = |code: u32, jt: u8, jf: u8, k: u32| libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    };
    vec![
        // The number is the first word of `struct seccomp_data`.
        op(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0, 0, 0),
        op(libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K, 0, 1, X32_BIT),
        op(
            libc::BPF_RET | libc::BPF_K,
            0,
            0,
            RET_ERRNO | libc::ENOSYS as u32,
        ),
        op(libc::BPF_RET | libc::BPF_K, 0, 0, RET_ALLOW),
    ]
}

fn put(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_ne_bytes());
    out.extend_from_slice(bytes);
}

fn take<'b>(bytes: &mut &'b [u8]) -> Option<&'b [u8]> {
    let (len, rest) = bytes.split_at_checked(4)?;
    let len = u32::from_ne_bytes(len.try_into().ok()?) as usize;
    let (head, rest) = rest.split_at_checked(len)?;
    *bytes = rest;
    Some(head)
}

impl Child {
    /// The bytes a spawner needs, and the ruleset descriptor to pass with them.
    pub fn encode(&self) -> (Vec<u8>, RawFd) {
        let mut out = Vec::new();
        out.extend_from_slice(&(self.filters.len() as u32).to_ne_bytes());
        for filter in &self.filters {
            let mut program = Vec::with_capacity(filter.len() * 8);
            for f in filter {
                program.extend_from_slice(&f.code.to_ne_bytes());
                program.extend_from_slice(&[f.jt, f.jf]);
                program.extend_from_slice(&f.k.to_ne_bytes());
            }
            put(&mut out, &program);
        }
        match &self.maps {
            Some((uid, gid)) => {
                out.push(1);
                put(&mut out, uid.as_bytes());
                put(&mut out, gid.as_bytes());
            }
            None => out.push(0),
        }
        out.extend_from_slice(&(self.read_only.len() as u32).to_ne_bytes());
        for (path, flags) in &self.read_only {
            out.extend_from_slice(&flags.to_ne_bytes());
            put(&mut out, path.as_bytes());
        }
        out.extend_from_slice(&(self.pinned.len() as u32).to_ne_bytes());
        for path in &self.pinned {
            put(&mut out, path.as_bytes());
        }
        out.extend_from_slice(&(self.hidden.len() as u32).to_ne_bytes());
        for (path, dir) in &self.hidden {
            out.push(*dir as u8);
            put(&mut out, path.as_bytes());
        }
        (out, self.ruleset.as_raw_fd())
    }

    /// The child back from [`Child::encode`]'s bytes and the descriptor passed with them.
    pub fn decode(mut bytes: &[u8], ruleset: OwnedFd) -> Option<Child> {
        let (head, rest) = bytes.split_at_checked(4)?;
        bytes = rest;
        let mut filters = Vec::new();
        for _ in 0..u32::from_ne_bytes(head.try_into().ok()?) {
            let program = take(&mut bytes)?;
            filters.push(
                program
                    .chunks_exact(8)
                    .map(|c| libc::sock_filter {
                        code: u16::from_ne_bytes([c[0], c[1]]),
                        jt: c[2],
                        jf: c[3],
                        k: u32::from_ne_bytes([c[4], c[5], c[6], c[7]]),
                    })
                    .collect(),
            );
        }
        let (flag, rest) = bytes.split_first()?;
        bytes = rest;
        let maps = if *flag == 1 {
            let uid = CString::new(take(&mut bytes)?).ok()?;
            let gid = CString::new(take(&mut bytes)?).ok()?;
            Some((uid, gid))
        } else {
            None
        };
        let count = |bytes: &mut &[u8]| -> Option<usize> {
            let (head, rest) = bytes.split_at_checked(4)?;
            *bytes = rest;
            Some(u32::from_ne_bytes(head.try_into().ok()?) as usize)
        };
        let mut read_only = Vec::new();
        for _ in 0..count(&mut bytes)? {
            let (flags, rest) = bytes.split_at_checked(8)?;
            bytes = rest;
            let flags = u64::from_ne_bytes(flags.try_into().ok()?) as libc::c_ulong;
            read_only.push((CString::new(take(&mut bytes)?).ok()?, flags));
        }
        let mut pinned = Vec::new();
        for _ in 0..count(&mut bytes)? {
            pinned.push(CString::new(take(&mut bytes)?).ok()?);
        }
        let mut hidden = Vec::new();
        for _ in 0..count(&mut bytes)? {
            let (dir, rest) = bytes.split_first()?;
            bytes = rest;
            hidden.push((CString::new(take(&mut bytes)?).ok()?, *dir == 1));
        }
        Some(Child {
            ruleset,
            filters,
            maps,
            read_only,
            pinned,
            hidden,
        })
    }

    /// Applies the sandbox to the calling process: its namespaces and binds, then no
    /// capabilities, no new privileges, the Landlock ruleset and the seccomp filter.
    /// Returns the errno of the step that failed.
    ///
    /// # Safety
    /// Only in the child of a fork, before its exec: makes system calls only, on memory
    /// prepared before the fork.
    pub unsafe fn apply(&self) -> Result<(), i32> {
        let errno = || {
            std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO)
        };
        let check = |result: libc::c_int| if result < 0 { Err(errno()) } else { Ok(()) };
        let in_user_ns = if let Some((uid_map, gid_map)) = &self.maps {
            check(libc::unshare(libc::CLONE_NEWUSER))?;
            write_file(c"/proc/self/setgroups", b"deny")?;
            write_file(c"/proc/self/uid_map", uid_map.as_bytes())?;
            write_file(c"/proc/self/gid_map", gid_map.as_bytes())?;
            true
        } else {
            false
        };
        if !self.read_only.is_empty() || !self.hidden.is_empty() {
            check(libc::unshare(libc::CLONE_NEWNS))?;
            check(libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_SLAVE,
                std::ptr::null(),
            ))?;
            // Pinned first: a later bind below one is then inside its mount.
            for path in &self.pinned {
                check(libc::mount(
                    path.as_ptr(),
                    path.as_ptr(),
                    std::ptr::null(),
                    libc::MS_BIND | libc::MS_REC,
                    std::ptr::null(),
                ))?;
            }
            for (path, flags) in &self.read_only {
                bind_read_only(path, *flags)?;
            }
            for (path, dir) in &self.hidden {
                if *dir {
                    check(libc::mount(
                        c"none".as_ptr(),
                        path.as_ptr(),
                        c"tmpfs".as_ptr(),
                        libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                        c"mode=000,size=4k".as_ptr().cast(),
                    ))?;
                } else {
                    check(libc::mount(
                        c"/dev/null".as_ptr(),
                        path.as_ptr(),
                        std::ptr::null(),
                        libc::MS_BIND,
                        std::ptr::null(),
                    ))?;
                }
            }
        }
        drop_capabilities(in_user_ns || libc::geteuid() == 0)?;
        check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))?;
        check(libc::syscall(
            libc::SYS_landlock_restrict_self,
            self.ruleset.as_raw_fd(),
            0,
        ) as i32)?;
        for filter in &self.filters {
            let program = libc::sock_fprog {
                len: filter.len() as u16,
                filter: filter.as_ptr() as *mut libc::sock_filter,
            };
            check(libc::syscall(
                libc::SYS_seccomp,
                1, // SECCOMP_SET_MODE_FILTER
                0,
                &program as *const libc::sock_fprog,
            ) as i32)?;
        }
        Ok(())
    }
}

/// Writes `bytes` to the file at `path` (a `/proc` control file).
unsafe fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> Result<(), i32> {
    let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO));
    }
    let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
    let error = std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO);
    libc::close(fd);
    if written == bytes.len() as isize {
        Ok(())
    } else {
        Err(error)
    }
}

/// Binds `path` over itself read-only, keeping `kept`, the flags its mount has. Only
/// the path's own mount is looked up, never anything in it: the driver's mount may be
/// one, and the child makes no request to it.
unsafe fn bind_read_only(path: &std::ffi::CStr, kept: libc::c_ulong) -> Result<(), i32> {
    let errno = || {
        std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO)
    };
    if libc::mount(
        path.as_ptr(),
        path.as_ptr(),
        std::ptr::null(),
        libc::MS_BIND | libc::MS_REC,
        std::ptr::null(),
    ) < 0
    {
        return Err(errno());
    }
    if libc::mount(
        std::ptr::null(),
        path.as_ptr(),
        std::ptr::null(),
        libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | kept,
        std::ptr::null(),
    ) < 0
    {
        return Err(errno());
    }
    Ok(())
}

/// `_LINUX_CAPABILITY_VERSION_3` and its two 32-bit halves.
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Empties the bounding, ambient and own capability sets and locks `SECBIT_NOROOT`, so
/// no exec (of anything, as root) gives them back. Only where there are capabilities
/// to drop (`holds`: root, or inside a user namespace); a failure then is an error.
unsafe fn drop_capabilities(holds: bool) -> Result<(), i32> {
    if !holds {
        return Ok(());
    }
    let errno = || {
        std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO)
    };
    for cap in 0..64 {
        if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno() != libc::EINVAL {
            return Err(errno());
        }
    }
    libc::prctl(
        libc::PR_CAP_AMBIENT,
        libc::PR_CAP_AMBIENT_CLEAR_ALL,
        0,
        0,
        0,
    );
    // SECBIT_NOROOT, SECBIT_NO_SETUID_FIXUP, SECBIT_NO_CAP_AMBIENT_RAISE, each locked.
    let bits = 0x01 | 0x02 | 0x04 | 0x08 | 0x40 | 0x80;
    if libc::prctl(libc::PR_SET_SECUREBITS, bits, 0, 0, 0) < 0 {
        return Err(errno());
    }
    let header = CapHeader {
        version: 0x2008_0522,
        pid: 0,
    };
    let data = [CapData {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    if libc::syscall(libc::SYS_capset, &header as *const CapHeader, data.as_ptr()) < 0 {
        return Err(errno());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    /// As an ordinary user (nobody), the child's own user and mount namespaces cover
    /// `.git/hooks` and a `denyRead` file, and Landlock keeps writes in the working
    /// directory: the same rules as root gets, applied without privileges.
    #[test]
    fn an_ordinary_user_is_sandboxed_the_same_way() {
        assert_eq!(
            unsafe { libc::geteuid() },
            0,
            "this test becomes nobody, which needs root"
        );
        let top = tempfile::tempdir().unwrap();
        let (work, out) = (top.path().join("work"), top.path().join("out"));
        std::fs::create_dir_all(work.join(".git/hooks")).unwrap();
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(work.join("secret"), "TOPSECRET-NOBODY\n").unwrap();
        let nobody: (libc::uid_t, libc::gid_t) = (65534, 65534);
        for path in [
            top.path(),
            &work,
            &work.join(".git"),
            &work.join(".git/hooks"),
            &out,
        ] {
            std::os::unix::fs::chown(path, Some(nobody.0), Some(nobody.1)).unwrap();
        }
        std::fs::set_permissions(
            top.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        let plan = super::super::Plan {
            writable: vec![work.clone()],
            read_only: vec![work.join(".git/hooks")],
            hidden: vec![work.join("secret")],
            ..Default::default()
        };
        let child = build_for(&plan, &[], None, nobody).unwrap();
        assert!(child.maps.is_some(), "nobody needs a user namespace");
        let script = format!(
            "echo x > {out}/f || echo out-refused\n\
             echo y > inside && echo inside-ok\n\
             echo z > .git/hooks/h || echo hooks-refused\n\
             cat secret\n\
             id -u\n",
            out = out.display()
        );
        let mut command = std::process::Command::new("/bin/sh");
        command.arg("-c").arg(script).current_dir(&work);
        // SAFETY: the closure makes system calls only, in the child before its exec.
        unsafe {
            command.pre_exec(move || {
                if libc::setgroups(0, std::ptr::null()) < 0
                    || libc::setgid(nobody.1) < 0
                    || libc::setuid(nobody.0) < 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                // A change of user leaves the process undumpable, its /proc files
                // root's; a process started as nobody, as the driver would be, is not.
                libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0);
                child.apply().map_err(std::io::Error::from_raw_os_error)
            });
        }
        let output = command.output().expect("sh runs");
        let stdout = String::from_utf8_lossy(&output.stdout);
        for expected in ["out-refused", "inside-ok", "hooks-refused", "65534"] {
            assert!(
                stdout.contains(expected),
                "{expected} missing: {stdout}\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        assert!(!stdout.contains("TOPSECRET"), "{stdout}");
        assert!(!out.join("f").exists() && !work.join(".git/hooks/h").exists());
        assert_eq!(std::fs::read_to_string(work.join("inside")).unwrap(), "y\n");
    }

    /// The socket filters let TCP, netlink and Unix socket pairs through and refuse every
    /// other socket, a listen without a bind, and an x32 system call.
    #[test]
    fn only_the_sockets_landlock_rules_are_made() {
        let script = "import ctypes, errno, os, socket\n\
            def made(*a):\n\
            \x20   try:\n\
            \x20       socket.socket(*a).close(); return 'ok'\n\
            \x20   except OSError as e: return errno.errorcode[e.errno]\n\
            S, I6 = socket.SOCK_STREAM, socket.AF_INET6\n\
            print('tcp', made(socket.AF_INET, S))\n\
            print('tcp6-nonblock', made(I6, S | socket.SOCK_NONBLOCK, socket.IPPROTO_TCP))\n\
            print('udp', made(socket.AF_INET, socket.SOCK_DGRAM))\n\
            print('raw6', made(I6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6))\n\
            print('sctp', made(socket.AF_INET, S, 132))\n\
            print('packet', made(socket.AF_PACKET, socket.SOCK_RAW))\n\
            print('unix', made(socket.AF_UNIX, S))\n\
            print('netlink', made(socket.AF_NETLINK, socket.SOCK_RAW, 0))\n\
            a, b = socket.socketpair(); print('pair', 'ok')\n\
            s = socket.socket()\n\
            try:\n\
            \x20   s.listen(); print('listen', 'ok')\n\
            except OSError as e: print('listen', errno.errorcode[e.errno])\n\
            libc = ctypes.CDLL(None, use_errno=True)\n\
            r = libc.syscall(0x40000000 | 39)\n\
            print('x32', 'ok' if r >= 0 else errno.errorcode[ctypes.get_errno()])\n";
        // SAFETY: getuid and getgid cannot fail.
        let ids = unsafe { (libc::getuid(), libc::getgid()) };
        let child = build_for(&super::super::Plan::default(), &[], None, ids).unwrap();
        let mut command = std::process::Command::new("python3");
        command.arg("-c").arg(script);
        // SAFETY: the closure makes system calls only, in the child before its exec.
        unsafe {
            command.pre_exec(move || child.apply().map_err(std::io::Error::from_raw_os_error));
        }
        let output = command.output().expect("python3 runs");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let mut expected = vec![
            "tcp ok",
            "tcp6-nonblock ok",
            "udp EAFNOSUPPORT",
            "raw6 EAFNOSUPPORT",
            "sctp EAFNOSUPPORT",
            "packet EAFNOSUPPORT",
            "unix EAFNOSUPPORT",
            "netlink ok",
            "pair ok",
            "listen EPERM",
        ];
        if cfg!(target_arch = "x86_64") {
            expected.push("x32 ENOSYS");
        }
        assert_eq!(
            stdout.lines().collect::<Vec<_>>(),
            expected,
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    #[test]
    fn a_landlock_without_signal_scoping_is_missing_something() {
        assert!(abi_gap(0).unwrap().contains("no Landlock"));
        assert!(abi_gap(3).unwrap().contains("network rules need ABI 4"));
        for abi in [4, 5] {
            let gap = abi_gap(abi).unwrap();
            assert!(gap.contains("signals") && gap.contains("ABI 6"), "{gap}");
        }
        assert_eq!(abi_gap(6), None);
        assert_eq!(abi_gap(7), None);
    }
}
