//! Starting one command's shell: everything the child needs is prepared in the parent
//! (paths, argument and environment vectors as C strings), then `fork`, and the child
//! runs only async-signal-safe system calls until `execve`.
//!
//! A driver thread never waits for the child's `exec`. A thread of the driver that
//! forks waits only until the child is in its own session and cgroup, with default
//! signal dispositions (a byte on a "placed" pipe), so that a kill sent as soon as the
//! pid is known reaches it. The child makes no request to the mount: its stderr file
//! (see [`capture`](super::capture)) comes opened by the driver, the only process whose
//! open of it is taken. The spawner, a process apart, forks the way `posix_spawn` does (a
//! child sharing its memory, the spawner suspended until the exec), which spares
//! copying page tables only to tear them down at the exec. A failure before `exec` is
//! reported through a close-on-exec status pipe, which the pump reads: end-of-file
//! without data means the shell runs.
//!
//! In the child: a new session; every signal disposition default and an empty mask;
//! the parent-death signal (Linux); the command's cgroup; the address-space limit; the
//! working directory; stdin from `/dev/null` (or a pipe, or a terminal that becomes the
//! controlling one), stdout the pipe, stderr the mount's file (or the stderr pipe where
//! there is none), a long command's script on descriptor 3.

use std::ffi::{CString, OsStr, OsString};
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Signals numbered below this may have a disposition to reset in a child.
#[cfg(target_os = "linux")]
const SIGNAL_LIMIT: i32 = 65;
#[cfg(not(target_os = "linux"))]
const SIGNAL_LIMIT: i32 = 32;

/// `struct clone_args` up to `cgroup` (`CLONE_ARGS_SIZE_VER2`), for `clone3`.
#[cfg(target_os = "linux")]
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

#[cfg(target_os = "linux")]
const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// The stack a child that shares the spawner's memory runs on until its exec (its
/// setup makes system calls only; the lowest page is a guard).
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
const SHARED_CHILD_STACK: usize = 256 * 1024;

/// A child stack kept for the next fork: one child uses it at a time (its parent is
/// suspended until the exec), so mapping, guarding and unmapping a fresh one for every
/// command is work spent on the way to each start. Taken by a swap, so two threads
/// forking at once never share one.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
static SPARE_STACK: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The spare child stack, or a new one (None if none can be mapped).
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn take_child_stack() -> Option<*mut libc::c_void> {
    let spare = SPARE_STACK.swap(0, std::sync::atomic::Ordering::AcqRel);
    if spare != 0 {
        return Some(spare as *mut libc::c_void);
    }
    // SAFETY: a new private anonymous mapping; its lowest page becomes a guard, so an
    // overflow faults instead of writing over other memory.
    unsafe {
        let stack = libc::mmap(
            std::ptr::null_mut(),
            SHARED_CHILD_STACK,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
            -1,
            0,
        );
        if stack == libc::MAP_FAILED {
            return None;
        }
        libc::mprotect(
            stack,
            libc::sysconf(libc::_SC_PAGESIZE) as usize,
            libc::PROT_NONE,
        );
        Some(stack)
    }
}

/// Keeps a stack no child uses any more for the next fork; unmaps it if one is kept.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn give_back_child_stack(stack: *mut libc::c_void) {
    let kept = SPARE_STACK.compare_exchange(
        0,
        stack as usize,
        std::sync::atomic::Ordering::AcqRel,
        std::sync::atomic::Ordering::Acquire,
    );
    if kept.is_err() {
        // SAFETY: our own mapping, which no child runs on any more.
        unsafe { libc::munmap(stack, SHARED_CHILD_STACK) };
    }
}

/// What a child that shares its parent's memory needs: it finds it on the parent's
/// stack, which stays as it is while the parent is suspended until the exec.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
struct Launch<'a> {
    prepared: &'a Prepared,
    parent: libc::pid_t,
    default_action: &'a libc::sigaction,
    born_in_cgroup: bool,
    argv: &'a [*const libc::c_char],
    envp: &'a [*const libc::c_char],
}

/// Where a child that shares its parent's memory begins, on its own stack.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
extern "C" fn launch_child(launch: *mut libc::c_void) -> ! {
    // SAFETY: `fork_sharing_memory` passes a `Launch` that lives until this child has
    // exec'd or exited, since its parent is suspended until then.
    unsafe {
        let launch = &*(launch as *const Launch);
        launch.prepared.child(
            launch.parent,
            launch.default_action,
            -1,
            launch.born_in_cgroup,
            (launch.argv, launch.envp),
        )
    }
}

/// `clone3` for a child with its own stack: the child calls `entry(arg)`, which never
/// returns; the parent gets the pid, or minus the errno.
///
/// # Safety
/// `args` must ask for a stack that is valid for the child, and `entry` must never
/// return.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
unsafe fn clone3_with_entry(
    args: &CloneArgs,
    entry: extern "C" fn(*mut libc::c_void) -> !,
    arg: *mut libc::c_void,
) -> i64 {
    let result: i64;
    // The child starts on the new stack with the parent's registers, so it finds the
    // entry and its argument in two that the system call keeps.
    std::arch::asm!(
        "syscall",
        "test rax, rax",
        "jnz 2f",
        "mov rdi, r12",
        "call r13",
        "ud2",
        "2:",
        inlateout("rax") libc::SYS_clone3 => result,
        // The child's path sets rdi; the parent's never does, but say so anyway.
        inlateout("rdi") args as *const CloneArgs => _,
        in("rsi") std::mem::size_of::<CloneArgs>(),
        in("r12") arg,
        in("r13") entry,
        lateout("rcx") _,
        lateout("r11") _,
        options(nostack),
    );
    result
}

/// The step of the child's setup that failed, as reported through the status pipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Stage {
    Session = 1,
    Orphaned = 2,
    Cgroup = 3,
    Cwd = 4,
    Descriptors = 5,
    Exec = 6,
    Sandbox = 7,
}

impl Stage {
    fn from_byte(byte: u8) -> Option<Stage> {
        Some(match byte {
            1 => Stage::Session,
            2 => Stage::Orphaned,
            3 => Stage::Cgroup,
            4 => Stage::Cwd,
            5 => Stage::Descriptors,
            6 => Stage::Exec,
            7 => Stage::Sandbox,
            _ => return None,
        })
    }
}

/// What a child reported before it could exec, decoded from the status pipe's bytes.
pub fn decode_failure(bytes: &[u8]) -> Option<(Stage, std::io::Error)> {
    let stage = Stage::from_byte(*bytes.first()?)?;
    let errno = i32::from_ne_bytes(bytes.get(1..5)?.try_into().ok()?);
    Some((stage, std::io::Error::from_raw_os_error(errno)))
}

/// Everything the child needs, prepared before the fork.
pub struct Prepared {
    pub(super) program: CString,
    pub(super) args: Vec<CString>,
    pub(super) env: Vec<CString>,
    pub(super) cwd: CString,
    dev_null: CString,
    /// The command's cgroup's `cgroup.procs`, to join.
    pub procs: Option<CString>,
    /// The command's cgroup's directory, for a child born in it (Linux `clone3` with
    /// `CLONE_INTO_CGROUP`, which spares the slow migration of a joining process).
    pub cgroup_dir: Option<std::os::fd::OwnedFd>,
    /// An address-space limit in bytes.
    pub rlimit: Option<u64>,
    /// The stderr file, opened through the mount by the driver, else stderr is
    /// `stderr_pipe`.
    pub stderr_open: Option<RawFd>,
    /// The child's stdin, else `/dev/null`.
    pub stdin: Option<RawFd>,
    /// stdin is a terminal, to become the session's controlling terminal.
    pub terminal: bool,
    pub stdout: RawFd,
    pub stderr_pipe: RawFd,
    /// The script on descriptor 3 for a long command.
    pub script: Option<RawFd>,
    /// The write end of the status pipe (close-on-exec).
    pub status: RawFd,
    /// Fork the child as a child of this process's parent (Linux `CLONE_PARENT`), so
    /// that parent reaps it: the spawner's children are the driver's.
    pub adopt: bool,
    /// The signals whose disposition the child resets before its exec.
    pub resets: Resets,
    /// The signal the child gets when its parent dies (Linux; 0: none). SIGKILL for a
    /// command the driver forks itself; none for the spawner, which outlives the
    /// driver to stop the commands (see `watcher`), nor for the shells it forks, which
    /// it stops then with all they started.
    pub death_signal: libc::c_int,
    /// The sandbox the child applies last before its exec.
    #[cfg(target_os = "linux")]
    pub sandbox: Option<crate::sandbox::linux::Child>,
}

/// Which signal dispositions a child resets before its exec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resets {
    /// Every one: the forking process's are not known (the driver's, inherited from
    /// whoever started it).
    Every,
    /// Only these: every other is known to be default in the forking process (the
    /// spawner, which made them so; see [`default_dispositions`]).
    Only(&'static [i32]),
}

/// A process's environment, read once, as the entries a child is given.
pub struct Environment(Vec<(OsString, CString)>);

impl Environment {
    /// This process's environment as it is now. (The driver never changes its own.)
    pub fn of_this_process() -> Environment {
        let entries = std::env::vars_os()
            .filter_map(|(key, value)| {
                // A variable with a NUL byte cannot be passed on; it is left out.
                let entry = CString::new(env_entry(key.as_bytes(), value.as_bytes())).ok()?;
                Some((key, entry))
            })
            .collect();
        Environment(entries)
    }

    /// The entries, with `extra` in place of variables of the same names.
    pub fn with(&self, extra: &[(&str, &OsStr)]) -> std::io::Result<Vec<CString>> {
        let mut entries: Vec<CString> = self
            .0
            .iter()
            .filter(|(key, _)| !extra.iter().any(|(name, _)| OsStr::new(name) == key))
            .map(|(_, entry)| entry.clone())
            .collect();
        for (name, value) in extra {
            entries.push(c_string(&env_entry(name.as_bytes(), value.as_bytes()))?);
        }
        Ok(entries)
    }
}

/// `name=value`, as an environment entry.
fn env_entry(name: &[u8], value: &[u8]) -> Vec<u8> {
    [name, b"=", value].concat()
}

/// Who forked a command's shell, and so who reaps it and what its `ru_maxrss` starts
/// from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Birth {
    /// The driver forked it and reaps it; it started at the driver's size.
    Driver,
    /// The spawner forked it and reaps it; its exit comes as an event.
    Spawner,
    /// The spawner forked it as the driver's child: the driver reaps it, so its exit
    /// reaches the pump through its pidfd, with no hop through the spawner.
    Adopted,
}

fn c_string(bytes: &[u8]) -> std::io::Result<CString> {
    CString::new(bytes).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))
}

/// The program a name without a slash runs, found on `PATH` the way a shell would.
fn resolve(program: &Path) -> OsString {
    if program.as_os_str().as_bytes().contains(&b'/') {
        return program.as_os_str().to_owned();
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| std::fs::metadata(candidate).is_ok_and(|m| m.is_file()))
        .map_or_else(
            || program.as_os_str().to_owned(),
            |found| found.into_os_string(),
        )
}

impl Prepared {
    /// A child to run `program` with `args` (the first is its name) and `env`, in
    /// `cwd`, from strings already prepared.
    pub fn from_parts(
        program: CString,
        args: Vec<CString>,
        env: Vec<CString>,
        cwd: CString,
        stdout: RawFd,
        stderr_pipe: RawFd,
        status: RawFd,
    ) -> Prepared {
        Prepared {
            program,
            args,
            env,
            cwd,
            dev_null: c"/dev/null".to_owned(),
            procs: None,
            cgroup_dir: None,
            rlimit: None,
            stderr_open: None,
            stdin: None,
            terminal: false,
            stdout,
            stderr_pipe,
            script: None,
            status,
            adopt: false,
            resets: Resets::Every,
            death_signal: libc::SIGKILL,
            #[cfg(target_os = "linux")]
            sandbox: None,
        }
    }

    /// Prepares `<shell> <args...>` in `cwd` with the environment `env` (see
    /// [`Environment::with`]).
    pub fn new(
        shell: &Path,
        args: &[&OsStr],
        cwd: &Path,
        env: Vec<CString>,
        stdout: RawFd,
        stderr_pipe: RawFd,
        status: RawFd,
    ) -> std::io::Result<Prepared> {
        let program = c_string(resolve(shell).as_bytes())?;
        let mut args_c = vec![c_string(shell.as_os_str().as_bytes())?];
        for arg in args {
            args_c.push(c_string(arg.as_bytes())?);
        }
        Ok(Prepared::from_parts(
            program,
            args_c,
            env,
            c_string(cwd.as_os_str().as_bytes())?,
            stdout,
            stderr_pipe,
            status,
        ))
    }

    /// Forks the child; returns its pid, and whether it is this process's parent's
    /// child ([`Prepared::adopt`]), once the child is placed (its session, signals and
    /// cgroup), without waiting for its exec; or, forking with shared memory (the
    /// spawner), once it has exec'd.
    pub fn fork(&self) -> std::io::Result<(i32, bool)> {
        // SAFETY: getpid and getppid cannot fail.
        let (me, my_parent) = unsafe { (libc::getpid(), libc::getppid()) };
        let pointers = |list: &[CString]| {
            let mut pointers: Vec<*const libc::c_char> = list.iter().map(|s| s.as_ptr()).collect();
            pointers.push(std::ptr::null());
            pointers
        };
        let (argv, envp) = (pointers(&self.args), pointers(&self.env));
        let default_action = default_action();
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        if self.adopt {
            // SAFETY: the child runs only `child`, as after a fork.
            let forked = unsafe {
                self.fork_sharing_memory((me, my_parent), &default_action, (&argv, &envp))
            };
            if let Some(forked) = forked {
                return forked;
            }
        }
        let mut placed = [0; 2];
        #[cfg(target_os = "linux")]
        // SAFETY: pipe2 fills two descriptors, closed below.
        let made = unsafe { libc::pipe2(placed.as_mut_ptr(), libc::O_CLOEXEC) };
        #[cfg(not(target_os = "linux"))]
        // SAFETY: pipe fills two descriptors, marked close-on-exec and closed below.
        let made = unsafe {
            let made = libc::pipe(placed.as_mut_ptr());
            if made == 0 {
                libc::fcntl(placed[0], libc::F_SETFD, libc::FD_CLOEXEC);
                libc::fcntl(placed[1], libc::F_SETFD, libc::FD_CLOEXEC);
            }
            made
        };
        if made < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: the child runs only `child`, which makes async-signal-safe system
        // calls on memory prepared before the fork, and never returns.
        let (pid, born_in_cgroup, adopted) = unsafe { self.clone_child() };
        if pid == 0 {
            let parent = if adopted { my_parent } else { me };
            // SAFETY: in the child of a fork, before exec.
            unsafe {
                self.child(
                    parent,
                    &default_action,
                    placed[1],
                    born_in_cgroup,
                    (&argv, &envp),
                )
            }
        }
        let error = std::io::Error::last_os_error();
        // SAFETY: closing our copy of the write end, then waiting for the child's one
        // byte, or for the end of the pipe if it died first (its status pipe says why).
        unsafe {
            libc::close(placed[1]);
            if pid > 0 {
                let mut byte = 0u8;
                while libc::read(placed[0], (&mut byte as *mut u8).cast(), 1) < 0
                    && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
                {
                }
            }
            libc::close(placed[0]);
        }
        if pid < 0 {
            return Err(error);
        }
        Ok((pid, adopted))
    }

    /// The child's side; never returns.
    ///
    /// # Safety
    /// Only in the child of a fork.
    unsafe fn child(
        &self,
        parent: libc::pid_t,
        default_action: &libc::sigaction,
        placed: RawFd,
        born_in_cgroup: bool,
        (argv, envp): (&[*const libc::c_char], &[*const libc::c_char]),
    ) -> ! {
        if libc::setsid() < 0 {
            self.fail(Stage::Session);
        }
        // Nothing the driver ignores or blocks reaches the command. (Handled signals
        // are reset by exec itself, but a handler must not run in a child that shares
        // its parent's memory; ignored ones would survive the exec.)
        match self.resets {
            Resets::Every => {
                for signal in settable_signals() {
                    reset_signal(signal, default_action);
                }
            }
            Resets::Only(signals) => {
                for &signal in signals {
                    reset_signal(signal, default_action);
                }
            }
        }
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::pthread_sigmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
        #[cfg(target_os = "linux")]
        if self.death_signal != 0 {
            libc::prctl(libc::PR_SET_PDEATHSIG, self.death_signal);
            // The parent may have died between fork and prctl: then no signal will
            // ever come, so do not run unowned.
            if libc::getppid() != parent {
                self.fail_with(Stage::Orphaned, libc::ESRCH);
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = parent;
        if let (Some(procs), false) = (&self.procs, born_in_cgroup) {
            if super::cgroup::join_in_child(procs).is_err() {
                self.fail(Stage::Cgroup);
            }
        }
        if let Some(bytes) = self.rlimit {
            let limit = libc::rlimit {
                rlim_cur: bytes as libc::rlim_t,
                rlim_max: bytes as libc::rlim_t,
            };
            libc::setrlimit(libc::RLIMIT_AS, &limit);
        }
        // Placed: a kill of its group or cgroup reaches it from now on. (A child that
        // shares its parent's memory has none to tell: its parent waits for its exec.)
        if placed >= 0 {
            libc::write(placed, b"p".as_ptr().cast(), 1);
            libc::close(placed);
        }
        if libc::chdir(self.cwd.as_ptr()) < 0 {
            self.fail(Stage::Cwd);
        }
        let stdin = match self.stdin {
            Some(fd) => fd,
            None => libc::open(self.dev_null.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC),
        };
        if stdin < 0 || libc::dup2(stdin, 0) < 0 || libc::dup2(self.stdout, 1) < 0 {
            self.fail(Stage::Descriptors);
        }
        // A terminal becomes the new session's own, so that Ctrl-C reaches the
        // foreground group and /dev/tty opens.
        if self.terminal && super::terminal::pty::make_controlling_terminal(0).is_err() {
            self.fail(Stage::Descriptors);
        }
        if libc::dup2(self.stderr_open.unwrap_or(self.stderr_pipe), 2) < 0 {
            self.fail(Stage::Descriptors);
        }
        if let Some(fd) = self.script {
            let placed = if fd == 3 {
                libc::fcntl(3, libc::F_SETFD, 0)
            } else {
                libc::dup2(fd, 3)
            };
            if placed < 0 {
                self.fail(Stage::Descriptors);
            }
        }
        // Whatever else is open, such as a descriptor the driver was started with and
        // never marked close-on-exec, closes at the exec: the command gets only its
        // own. (Linux 5.11; before that, and on macOS, such a descriptor passes on.)
        #[cfg(target_os = "linux")]
        {
            let first: libc::c_uint = if self.script.is_some() { 4 } else { 3 };
            libc::syscall(
                libc::SYS_close_range,
                first,
                libc::c_uint::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            );
            if let Some(sandbox) = &self.sandbox {
                if let Err(errno) = sandbox.apply() {
                    self.fail_with(Stage::Sandbox, errno);
                }
            }
        }
        libc::execve(self.program.as_ptr(), argv.as_ptr(), envp.as_ptr());
        self.fail(Stage::Exec)
    }

    /// The `clone3` flags to try, best first: into the command's cgroup at once where
    /// there is one (`CLONE_INTO_CGROUP`, Linux 5.7) and as a child of this process's
    /// parent when [`Prepared::adopt`] asks (`CLONE_PARENT`). The kernel may refuse
    /// either (too old, a cgroup it will not place a process in this way), so each is
    /// then dropped in turn.
    #[cfg(target_os = "linux")]
    fn clone_tries(&self) -> Vec<u64> {
        let cgroup = if self.cgroup_dir.is_some() {
            CLONE_INTO_CGROUP
        } else {
            0
        };
        let adopt = if self.adopt {
            libc::CLONE_PARENT as u64
        } else {
            0
        };
        let mut tries = vec![cgroup | adopt];
        if cgroup != 0 && adopt != 0 {
            tries.extend([cgroup, adopt]);
        }
        tries.retain(|&flags| flags != 0);
        tries
    }

    /// The arguments of `clone3` with `flags`.
    #[cfg(target_os = "linux")]
    fn clone_args(&self, flags: u64) -> CloneArgs {
        use std::os::fd::AsRawFd;
        CloneArgs {
            flags,
            // With CLONE_PARENT the kernel takes the exit signal this process would
            // send its own parent (SIGCHLD) and refuses any other.
            exit_signal: if flags & (libc::CLONE_PARENT as u64) == 0 {
                libc::SIGCHLD as u64
            } else {
                0
            },
            cgroup: self.cgroup_dir.as_ref().map_or(0, |d| d.as_raw_fd() as u64),
            ..CloneArgs::default()
        }
    }

    /// Forks with [`Prepared::clone_tries`], else plainly (the child then joins its
    /// cgroup by itself); returns the pid (0 in the child, -1 on failure), whether the
    /// child was born in its cgroup and whether it was adopted.
    ///
    /// # Safety
    /// As `fork`: the child may only make async-signal-safe calls.
    unsafe fn clone_child(&self) -> (libc::pid_t, bool, bool) {
        #[cfg(target_os = "linux")]
        for flags in self.clone_tries() {
            let args = self.clone_args(flags);
            let pid = libc::syscall(
                libc::SYS_clone3,
                &args as *const CloneArgs,
                std::mem::size_of::<CloneArgs>(),
            );
            if pid >= 0 {
                return (
                    pid as libc::pid_t,
                    flags & CLONE_INTO_CGROUP != 0,
                    flags & libc::CLONE_PARENT as u64 != 0,
                );
            }
        }
        (libc::fork(), false, false)
    }

    /// Forks the way `posix_spawn` does: the child shares this process's memory (no
    /// page tables to copy, none to tear down at its exec) and runs on a stack of its
    /// own, while this process is suspended until the child has exec'd or exited
    /// (`CLONE_VM | CLONE_VFORK`). So no "placed" byte is needed: when this returns,
    /// the child runs the shell, or has reported why not on its status pipe. None when
    /// the kernel refuses every try (the caller forks the usual way).
    ///
    /// Only the spawner forks this way. The child makes no request to the driver's
    /// mount: its stderr file comes opened.
    ///
    /// What the child may do follows from sharing the memory: it runs
    /// [`Prepared::child`] on the mapped stack, reads `self`, the argument and
    /// environment arrays and `default_action` where this thread left them (this
    /// thread is suspended, so they stay put), and makes only system calls: no
    /// allocation, no lock, no Rust code that might panic, since the allocator's and
    /// any lock's state are this process's. Every signal is blocked around the clone,
    /// so no handler of this process runs in the child on shared memory before the
    /// child has reset every disposition; the child then empties its mask. A write the
    /// child made to memory would be seen here; it makes none but to its own stack.
    ///
    /// # Safety
    /// As `fork`: the caller holds no lock the child could need, and `self`, `argv`
    /// and `envp` (NULL-terminated arrays of pointers into `self`) stay valid until
    /// this returns. Only one child at a time uses the spare stack, which
    /// [`take_child_stack`] hands out by a swap.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    unsafe fn fork_sharing_memory(
        &self,
        (me, my_parent): (libc::pid_t, libc::pid_t),
        default_action: &libc::sigaction,
        (argv, envp): (&[*const libc::c_char], &[*const libc::c_char]),
    ) -> Option<std::io::Result<(i32, bool)>> {
        let stack = take_child_stack()?;
        let mut launch = Launch {
            prepared: self,
            parent: me,
            default_action,
            born_in_cgroup: false,
            argv,
            envp,
        };
        // No handler of this process may run in the child on the shared memory before
        // the child has reset them all; the child empties its mask after that.
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let mut forked = None;
        for flags in self.clone_tries() {
            let adopted = flags & libc::CLONE_PARENT as u64 != 0;
            launch.parent = if adopted { my_parent } else { me };
            launch.born_in_cgroup = flags & CLONE_INTO_CGROUP != 0;
            let mut args = self.clone_args(flags | (libc::CLONE_VM | libc::CLONE_VFORK) as u64);
            args.stack = stack as u64;
            args.stack_size = SHARED_CHILD_STACK as u64;
            let pid = clone3_with_entry(&args, launch_child, (&mut launch as *mut Launch).cast());
            if pid > 0 {
                forked = Some(Ok((pid as i32, adopted)));
                break;
            }
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        // Every child that ran on it has exec'd or exited (CLONE_VFORK).
        give_back_child_stack(stack);
        forked
    }

    /// Reports the current errno at `stage` through the status pipe and exits.
    ///
    /// # Safety
    /// Only in the child of a fork (or of [`Prepared::fork_sharing_memory`]) before
    /// its exec: it ends the process with `_exit`, skipping every destructor and
    /// `atexit` handler, which belong to the parent.
    unsafe fn fail(&self, stage: Stage) -> ! {
        let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        self.fail_with(stage, errno)
    }

    /// Reports `errno` at `stage` through the status pipe and exits.
    ///
    /// # Safety
    /// As [`Prepared::fail`]: only in a child before its exec. It writes to
    /// `self.status` and calls `_exit`, both async-signal-safe, and touches no lock or
    /// allocator, which a child that shares its parent's memory must not.
    unsafe fn fail_with(&self, stage: Stage, errno: i32) -> ! {
        let mut message = [0u8; 5];
        message[0] = stage as u8;
        message[1..].copy_from_slice(&errno.to_ne_bytes());
        libc::write(self.status, message.as_ptr().cast(), message.len());
        libc::_exit(127)
    }
}

/// Gives every signal its default disposition but those in `keep`, which the caller
/// sets itself (a process that forks children sharing its memory, so that each child
/// has only `keep` to reset).
pub fn default_dispositions(keep: &[i32]) {
    let default_action = default_action();
    for signal in settable_signals().filter(|signal| !keep.contains(signal)) {
        // SAFETY: setting a disposition with a valid sigaction.
        unsafe { reset_signal(signal, &default_action) };
    }
}

/// Every signal whose disposition can be set (all but SIGKILL and SIGSTOP).
fn settable_signals() -> impl Iterator<Item = i32> {
    (1..SIGNAL_LIMIT).filter(|&signal| signal != libc::SIGKILL && signal != libc::SIGSTOP)
}

/// The default disposition: `SIG_DFL`, no flags, an empty mask.
fn default_action() -> libc::sigaction {
    // SAFETY: a zeroed sigaction with SIG_DFL is the default disposition.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = libc::SIG_DFL;
        action
    }
}

/// Gives `signal` its default disposition. Between fork and exec: only system calls.
///
/// # Safety
/// `default_action` must be a valid sigaction with `SIG_DFL`.
unsafe fn reset_signal(signal: i32, default_action: &libc::sigaction) {
    let refused = libc::sigaction(signal, default_action, std::ptr::null_mut()) != 0;
    // glibc refuses the signals it reserves for itself (32 and 33), yet an ignored one
    // is inherited like any other. The kernel's own call takes them; its structure,
    // whatever the architecture's field order, is all zeros for "default, no flags,
    // empty mask".
    #[cfg(target_os = "linux")]
    if refused {
        let zeroed = [0u64; 8];
        libc::syscall(
            libc::SYS_rt_sigaction,
            signal,
            zeroed.as_ptr(),
            std::ptr::null_mut::<u64>(),
            SIGSET_BYTES,
        );
    }
    #[cfg(not(target_os = "linux"))]
    let _ = refused;
}

/// The kernel's signal-set size, which `rt_sigaction` checks.
#[cfg(target_os = "linux")]
const SIGSET_BYTES: usize = if cfg!(any(target_arch = "mips", target_arch = "mips64")) {
    16
} else {
    8
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_round_trip_through_their_bytes() {
        let mut bytes = vec![Stage::Cwd as u8];
        bytes.extend_from_slice(&libc::ENOENT.to_ne_bytes());
        let (stage, error) = decode_failure(&bytes).unwrap();
        assert_eq!(stage, Stage::Cwd);
        assert_eq!(error.raw_os_error(), Some(libc::ENOENT));
        assert!(decode_failure(&[]).is_none());
        assert!(decode_failure(&[9, 0, 0, 0, 0]).is_none());
        assert!(decode_failure(&[6, 0]).is_none());
    }
}
