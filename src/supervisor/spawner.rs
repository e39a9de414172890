//! The spawner: a small single-threaded process, started by the driver when it starts
//! (the driver's own binary, run again with [`SPAWNER_ARG`]), that forks every command.
//!
//! Why a second process: forking the driver copies its whole address space, which
//! makes each start slower as the driver grows (page tables to copy at fork, and to
//! tear down at exec), and a child's `ru_maxrss` starts at the size of the process it
//! was forked from: a forked driver reported `true` as using what the driver used. The
//! spawner stays a few MiB, so a command's peak is its own.
//!
//! Protocol, over a `SOCK_SEQPACKET` socket pair (the spawner's end is descriptor 3):
//! the driver's first message carries the events socket; then each request is one
//! message with a [`Prepared`] encoded as length-prefixed fields and its descriptors as
//! `SCM_RIGHTS`, answered by one message holding the pid (or minus the errno) and
//! whose child it is. Where the kernel allows (`clone3` with `CLONE_PARENT`), each
//! command is forked as the driver's child: the driver reaps it through its pidfd, so
//! an exit wakes the pump directly, and the command dies with the driver (its
//! parent-death signal), not with the spawner. Otherwise the spawner reaps its own
//! children and sends `(pid, status, user µs, system µs, max RSS KiB)` on the events
//! socket, which the pump reads. The spawner dies with the driver (parent-death
//! signal), and its own children with it.
//!
//! A request that cannot be sent (the spawner is gone) is forked by the driver. One
//! sent and never answered is not: the spawner may have forked it before it stopped,
//! so the command is reported as not started rather than run twice.

use super::spawn::{Birth, Prepared, Resets};
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The argument that makes the binary a spawner.
pub const SPAWNER_ARG: &str = "--internal-spawner";

/// Bytes of one exit event.
pub const EVENT_BYTES: usize = 40;

/// Bytes of the answer to a request: the pid (or minus the errno), then 1 when the
/// child is the driver's (adopted) and 0 when it is the spawner's.
const ANSWER_BYTES: usize = 8;

/// The largest request: a long command goes by script file, so this is the
/// environment plus up to 100 KiB of text.
const MAX_MESSAGE: usize = 4 << 20;

/// One reaped child, as the spawner reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reaped {
    pub pid: i32,
    pub status: i32,
    pub user_us: u64,
    pub sys_us: u64,
    pub max_rss_kib: u64,
}

impl Reaped {
    pub fn encode(&self) -> [u8; EVENT_BYTES] {
        let mut out = [0u8; EVENT_BYTES];
        out[0..4].copy_from_slice(&self.pid.to_ne_bytes());
        out[4..8].copy_from_slice(&self.status.to_ne_bytes());
        out[8..16].copy_from_slice(&self.user_us.to_ne_bytes());
        out[16..24].copy_from_slice(&self.sys_us.to_ne_bytes());
        out[24..32].copy_from_slice(&self.max_rss_kib.to_ne_bytes());
        out
    }

    pub fn decode(bytes: &[u8]) -> Option<Reaped> {
        let bytes: &[u8; EVENT_BYTES] = bytes.try_into().ok()?;
        let u64_at = |at: usize| u64::from_ne_bytes(bytes[at..at + 8].try_into().unwrap());
        let i32_at = |at: usize| i32::from_ne_bytes(bytes[at..at + 4].try_into().unwrap());
        Some(Reaped {
            pid: i32_at(0),
            status: i32_at(4),
            user_us: u64_at(8),
            sys_us: u64_at(16),
            max_rss_kib: u64_at(24),
        })
    }

    /// The status and usage as `wait4` would give them.
    pub fn rusage(&self) -> libc::rusage {
        // SAFETY: rusage is plain data; zero is a valid value for every field.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let timeval = |us: u64| libc::timeval {
            tv_sec: (us / 1_000_000) as libc::time_t,
            tv_usec: (us % 1_000_000) as libc::suseconds_t,
        };
        usage.ru_utime = timeval(self.user_us);
        usage.ru_stime = timeval(self.sys_us);
        // ru_maxrss is KiB on Linux and bytes on macOS.
        usage.ru_maxrss = if cfg!(target_os = "macos") {
            (self.max_rss_kib * 1024) as libc::c_long
        } else {
            self.max_rss_kib as libc::c_long
        };
        usage
    }
}

fn put(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_ne_bytes());
    out.extend_from_slice(bytes);
}

fn put_c(out: &mut Vec<u8>, text: &CString) {
    put(out, text.as_bytes());
}

fn put_opt(out: &mut Vec<u8>, text: Option<&CString>) {
    match text {
        Some(text) => {
            out.push(1);
            put_c(out, text);
        }
        None => out.push(0),
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
}

impl Reader<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (first, rest) = self.bytes.split_first()?;
        self.bytes = rest;
        Some(*first)
    }

    fn u32(&mut self) -> Option<u32> {
        let (head, rest) = self.bytes.split_at_checked(4)?;
        self.bytes = rest;
        Some(u32::from_ne_bytes(head.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        let (head, rest) = self.bytes.split_at_checked(8)?;
        self.bytes = rest;
        Some(u64::from_ne_bytes(head.try_into().ok()?))
    }

    fn c_string(&mut self) -> Option<CString> {
        let len = self.u32()? as usize;
        let (head, rest) = self.bytes.split_at_checked(len)?;
        self.bytes = rest;
        CString::new(head).ok()
    }

    fn opt(&mut self) -> Option<Option<CString>> {
        match self.byte()? {
            0 => Some(None),
            _ => Some(Some(self.c_string()?)),
        }
    }

    /// Length-prefixed bytes (the sandbox's, Linux only).
    #[cfg(target_os = "linux")]
    fn bytes(&mut self) -> Option<&[u8]> {
        let len = self.u32()? as usize;
        let (head, rest) = self.bytes.split_at_checked(len)?;
        self.bytes = rest;
        Some(head)
    }

    fn list(&mut self) -> Option<Vec<CString>> {
        let count = self.u32()? as usize;
        (0..count).map(|_| self.c_string()).collect()
    }
}

/// A request's bytes and the descriptors that go with it, in this order: stdout, the
/// stderr pipe, the status pipe, then stdin, the script and the cgroup directory
/// where present.
fn encode(prepared: &Prepared) -> (Vec<u8>, Vec<RawFd>) {
    let mut out = Vec::new();
    put_c(&mut out, &prepared.program);
    for list in [&prepared.args, &prepared.env] {
        out.extend_from_slice(&(list.len() as u32).to_ne_bytes());
        for item in list.iter() {
            put_c(&mut out, item);
        }
    }
    put_c(&mut out, &prepared.cwd);
    put_opt(&mut out, prepared.procs.as_ref());
    out.extend_from_slice(
        &prepared
            .rlimit
            .map_or(0, |bytes| bytes.max(1))
            .to_ne_bytes(),
    );
    out.push(prepared.terminal as u8);
    let mut fds = vec![prepared.stdout, prepared.stderr_pipe, prepared.status];
    for fd in [
        prepared.stdin,
        prepared.script,
        prepared.cgroup_dir.as_ref().map(AsRawFd::as_raw_fd),
        prepared.stderr_open,
    ] {
        out.push(fd.is_some() as u8);
        fds.extend(fd);
    }
    // The sandbox last: its bytes, and its ruleset after the other descriptors.
    #[cfg(target_os = "linux")]
    if let Some(sandbox) = &prepared.sandbox {
        let (bytes, ruleset) = sandbox.encode();
        out.push(1);
        put(&mut out, &bytes);
        fds.push(ruleset);
    }
    (out, fds)
}

/// The request back as a [`Prepared`], owning its descriptors.
fn decode(bytes: &[u8], fds: Vec<OwnedFd>) -> Option<(Prepared, Vec<OwnedFd>)> {
    let mut reader = Reader { bytes };
    let program = reader.c_string()?;
    let args = reader.list()?;
    let env = reader.list()?;
    let cwd = reader.c_string()?;
    let procs = reader.opt()?;
    let rlimit = Some(reader.u64()?).filter(|bytes| *bytes > 0);
    let terminal = reader.byte()? != 0;
    let present: Vec<bool> = (0..4)
        .map(|_| reader.byte().map(|b| b != 0))
        .collect::<Option<_>>()?;
    let mut fds = fds.into_iter();
    let (stdout, stderr_pipe, status) = (fds.next()?, fds.next()?, fds.next()?);
    let stdin = if present[0] { Some(fds.next()?) } else { None };
    let script = if present[1] { Some(fds.next()?) } else { None };
    let cgroup_dir = if present[2] { Some(fds.next()?) } else { None };
    let stderr_open = if present[3] { Some(fds.next()?) } else { None };
    #[cfg(target_os = "linux")]
    let sandbox = match reader.byte() {
        Some(1) => Some(crate::sandbox::linux::Child::decode(
            reader.bytes()?,
            fds.next()?,
        )?),
        _ => None,
    };
    let mut prepared = Prepared::from_parts(
        program,
        args,
        env,
        cwd,
        stdout.as_raw_fd(),
        stderr_pipe.as_raw_fd(),
        status.as_raw_fd(),
    );
    prepared.procs = procs;
    prepared.rlimit = rlimit;
    prepared.terminal = terminal;
    prepared.stdin = stdin.as_ref().map(AsRawFd::as_raw_fd);
    prepared.script = script.as_ref().map(AsRawFd::as_raw_fd);
    prepared.cgroup_dir = cgroup_dir;
    prepared.stderr_open = stderr_open.as_ref().map(AsRawFd::as_raw_fd);
    #[cfg(target_os = "linux")]
    {
        prepared.sandbox = sandbox;
    }
    let keep = [
        Some(stdout),
        Some(stderr_pipe),
        Some(status),
        stdin,
        script,
        stderr_open,
    ]
    .into_iter()
    .flatten()
    .collect();
    Some((prepared, keep))
}

/// Sends one message with descriptors.
fn send(socket: RawFd, bytes: &[u8], fds: &[RawFd]) -> std::io::Result<()> {
    let mut iov = libc::iovec {
        iov_base: bytes.as_ptr() as *mut libc::c_void,
        iov_len: bytes.len(),
    };
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(std::mem::size_of_val(fds) as u32) } as usize;
    let mut control = vec![0u8; space.max(1)];
    // SAFETY: msghdr is plain data; the pointers set below outlive the call.
    let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
    message.msg_iov = &mut iov;
    message.msg_iovlen = 1;
    if !fds.is_empty() {
        message.msg_control = control.as_mut_ptr().cast();
        message.msg_controllen = space as _;
        // SAFETY: the control buffer has room for one header and `fds`.
        unsafe {
            let header = libc::CMSG_FIRSTHDR(&message);
            (*header).cmsg_level = libc::SOL_SOCKET;
            (*header).cmsg_type = libc::SCM_RIGHTS;
            (*header).cmsg_len = libc::CMSG_LEN(std::mem::size_of_val(fds) as u32) as _;
            std::ptr::copy_nonoverlapping(
                fds.as_ptr(),
                libc::CMSG_DATA(header).cast::<RawFd>(),
                fds.len(),
            );
        }
    }
    loop {
        // SAFETY: a valid message on our own socket.
        let sent = unsafe { libc::sendmsg(socket, &message, libc::MSG_NOSIGNAL) };
        if sent >= 0 {
            return Ok(());
        }
        let error = std::io::Error::last_os_error();
        if error.raw_os_error() != Some(libc::EINTR) {
            return Err(error);
        }
    }
}

/// Receives one message and its descriptors (close-on-exec); an empty message with no
/// descriptors is the end.
fn receive(socket: RawFd, buffer: &mut [u8]) -> std::io::Result<(usize, Vec<OwnedFd>)> {
    let mut iov = libc::iovec {
        iov_base: buffer.as_mut_ptr().cast(),
        iov_len: buffer.len(),
    };
    let mut control = vec![0u8; 256];
    // SAFETY: msghdr is plain data; the pointers set below outlive the call.
    let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
    message.msg_iov = &mut iov;
    message.msg_iovlen = 1;
    message.msg_control = control.as_mut_ptr().cast();
    message.msg_controllen = control.len() as _;
    #[cfg(target_os = "linux")]
    let flags = libc::MSG_CMSG_CLOEXEC;
    #[cfg(not(target_os = "linux"))]
    let flags = 0;
    let received = loop {
        // SAFETY: a valid message buffer on our own socket.
        let n = unsafe { libc::recvmsg(socket, &mut message, flags) };
        if n >= 0 {
            break n as usize;
        }
        let error = std::io::Error::last_os_error();
        if error.raw_os_error() != Some(libc::EINTR) {
            return Err(error);
        }
    };
    let mut fds = Vec::new();
    // SAFETY: walking the control messages the kernel filled in.
    unsafe {
        let mut header = libc::CMSG_FIRSTHDR(&message);
        while !header.is_null() {
            if (*header).cmsg_level == libc::SOL_SOCKET && (*header).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(header).cast::<RawFd>();
                let bytes = (*header).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                for index in 0..bytes / std::mem::size_of::<RawFd>() {
                    let fd = std::ptr::read_unaligned(data.add(index));
                    #[cfg(not(target_os = "linux"))]
                    libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
                    fds.push(OwnedFd::from_raw_fd(fd));
                }
            }
            header = libc::CMSG_NXTHDR(&message, header);
        }
    }
    Ok((received, fds))
}

/// A `SOCK_SEQPACKET` pair, close-on-exec.
fn socket_pair() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    #[cfg(target_os = "linux")]
    let kind = libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC;
    #[cfg(not(target_os = "linux"))]
    let kind = libc::SOCK_STREAM;
    // SAFETY: socketpair fills two descriptors we then own.
    if unsafe { libc::socketpair(libc::AF_UNIX, kind, 0, fds.as_mut_ptr()) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both were just created and are owned by nobody else.
    let pair = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    #[cfg(not(target_os = "linux"))]
    // SAFETY: fcntl on our own descriptors.
    unsafe {
        libc::fcntl(fds[0], libc::F_SETFD, libc::FD_CLOEXEC);
        libc::fcntl(fds[1], libc::F_SETFD, libc::FD_CLOEXEC);
    }
    Ok(pair)
}

/// The driver's handle on its spawner.
pub struct Spawner {
    control: parking_lot::Mutex<OwnedFd>,
    pid: i32,
}

impl Spawner {
    /// Starts `program` as the spawner; returns the handle and the events socket for
    /// the pump.
    pub fn start(
        program: &std::path::Path,
        cgroup_tag: Option<&str>,
    ) -> std::io::Result<(Spawner, OwnedFd)> {
        let (control, theirs) = socket_pair()?;
        let (events, their_events) = socket_pair()?;
        let (status_read, status_write) = super::pump::make_status_pipe()?;
        let null = std::fs::OpenOptions::new().write(true).open("/dev/null")?;
        let stderr = std::io::stderr().as_raw_fd();
        let mut args = vec![std::ffi::OsStr::new(SPAWNER_ARG)];
        args.extend(cgroup_tag.map(std::ffi::OsStr::new));
        let mut prepared = Prepared::new(
            program,
            &args,
            std::path::Path::new("/"),
            super::spawn::Environment::of_this_process().with(&[])?,
            null.as_raw_fd(),
            stderr,
            status_write.as_raw_fd(),
        )?;
        prepared.script = Some(theirs.as_raw_fd());
        // It outlives the driver to stop what the commands started (see `watcher`).
        prepared.death_signal = 0;
        let (pid, _) = prepared.fork()?;
        drop((theirs, status_write));
        // Its exec is done (or failed) once the status pipe ends.
        let mut failure = Vec::new();
        let mut chunk = [0u8; 16];
        let mut ready = libc::pollfd {
            fd: status_read.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        loop {
            // SAFETY: one valid pollfd, then a read into a valid buffer from our pipe.
            let n = unsafe {
                libc::poll(&mut ready, 1, -1);
                libc::read(
                    status_read.as_raw_fd(),
                    chunk.as_mut_ptr().cast(),
                    chunk.len(),
                )
            };
            match n {
                0 => break,
                n if n > 0 => failure.extend_from_slice(&chunk[..n as usize]),
                _ => match std::io::Error::last_os_error().raw_os_error() {
                    Some(libc::EAGAIN) | Some(libc::EINTR) => continue,
                    _ => break,
                },
            }
        }
        if let Some((_, error)) = super::spawn::decode_failure(&failure) {
            return Err(error);
        }
        send(control.as_raw_fd(), b"events", &[their_events.as_raw_fd()])?;
        let spawner = Spawner {
            control: parking_lot::Mutex::new(control),
            pid,
        };
        Ok((spawner, events))
    }

    /// The spawner's pid.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Has the spawner fork `prepared`; returns the pid and whose child it is. The outer
    /// error: the request did not reach the spawner (the caller forks by itself); the
    /// inner one: the command did not start, or may have started without the driver
    /// learning its pid.
    pub fn spawn(&self, prepared: &Prepared) -> std::io::Result<std::io::Result<(i32, Birth)>> {
        let (bytes, fds) = encode(prepared);
        if bytes.len() > MAX_MESSAGE {
            return Err(std::io::Error::from_raw_os_error(libc::EMSGSIZE));
        }
        let control = self.control.lock();
        send(control.as_raw_fd(), &bytes, &fds)?;
        let mut answer = [0u8; ANSWER_BYTES];
        // Sent but not answered: the spawner may have forked before it stopped, so
        // forking again could run the command twice. It is reported as not started.
        match receive(control.as_raw_fd(), &mut answer) {
            Ok((n, _)) if n == ANSWER_BYTES => {}
            _ => {
                return Ok(Err(std::io::Error::other(
                    "the spawner stopped before saying whether it had started the command",
                )))
            }
        }
        let pid = i32::from_ne_bytes(answer[..4].try_into().unwrap());
        if pid < 0 {
            return Ok(Err(std::io::Error::from_raw_os_error(-pid)));
        }
        let birth = if answer[4] == 1 {
            Birth::Adopted
        } else {
            Birth::Spawner
        };
        Ok(Ok((pid, birth)))
    }
}

/// Reads exit events from the spawner's events socket: what is there now, and
/// whether the socket has ended (the spawner is gone).
pub fn read_events(events: RawFd, out: &mut Vec<Reaped>) -> bool {
    let mut buffer = [0u8; EVENT_BYTES];
    loop {
        // SAFETY: reading one datagram into a valid buffer, without waiting.
        let n = unsafe {
            libc::recv(
                events,
                buffer.as_mut_ptr().cast(),
                buffer.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if n == EVENT_BYTES as isize {
            out.extend(Reaped::decode(&buffer));
            continue;
        }
        if n == 0 {
            return true;
        }
        let error = std::io::Error::last_os_error().raw_os_error();
        return !matches!(error, Some(libc::EAGAIN) | Some(libc::EINTR));
    }
}

/// The only signals whose disposition the spawner changes from the default.
const OWN_SIGNALS: [i32; 2] = [libc::SIGCHLD, libc::SIGPIPE];

/// The self-pipe the SIGCHLD handler writes to.
static CHILD_PIPE: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

extern "C" fn on_child(_signal: libc::c_int) {
    let fd = CHILD_PIPE.load(std::sync::atomic::Ordering::Relaxed);
    // SAFETY: write is async-signal-safe; a full pipe already says "look".
    unsafe {
        libc::write(fd, b"c".as_ptr().cast(), 1);
    }
}

/// The spawner's main loop, when the binary was started with [`SPAWNER_ARG`] (and the
/// driver's cgroup tag, when it uses cgroups): serves requests on descriptor 3 until
/// the driver closes it or dies, then stops everything the commands started (see
/// `watcher`) and exits.
pub fn serve() -> i32 {
    // SAFETY: getppid cannot fail; the driver is this process's parent.
    let driver = unsafe { libc::getppid() };
    let tag = std::env::args().nth(2);
    let mut watched = super::watcher::Watched::default();
    let code = serve_until_gone(&mut watched);
    watched.stop_all(driver, tag.as_deref());
    code
}

/// Serves requests until the driver is gone, noting every shell forked in `watched`.
fn serve_until_gone(watched: &mut super::watcher::Watched) -> i32 {
    // SAFETY: descriptor 3 was set up by the driver for this process alone.
    let control = unsafe { OwnedFd::from_raw_fd(3) };
    // SAFETY: marking our own descriptor close-on-exec, so no command inherits it.
    unsafe {
        libc::fcntl(3, libc::F_SETFD, libc::FD_CLOEXEC);
    }
    let mut buffer = vec![0u8; MAX_MESSAGE];
    let events = match receive(control.as_raw_fd(), &mut buffer) {
        Ok((_, mut fds)) if fds.len() == 1 => fds.remove(0),
        _ => return 1,
    };
    let Ok((wake_read, wake_write)) = super::pump::make_status_pipe() else {
        return 1;
    };
    // The stdin of every command that has none of its own, opened once rather than by
    // each child on its way to its exec.
    let dev_null = std::fs::File::open("/dev/null").ok();
    super::pump::set_nonblocking(wake_write.as_raw_fd());
    CHILD_PIPE.store(wake_write.as_raw_fd(), std::sync::atomic::Ordering::Relaxed);
    // Every disposition default but the two set here, so that a child has only those
    // two to reset before its exec (see `OWN_SIGNALS`).
    super::spawn::default_dispositions(&OWN_SIGNALS);
    // SAFETY: installing a handler that only writes one byte, and ignoring SIGPIPE (a
    // gone driver is an error on the socket, not a death).
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_child as *const () as usize;
        action.sa_flags = libc::SA_RESTART | libc::SA_NOCLDSTOP;
        libc::sigaction(libc::SIGCHLD, &action, std::ptr::null_mut());
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    let mut fds = [
        libc::pollfd {
            fd: control.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: wake_read.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    loop {
        // SAFETY: two valid pollfds.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), 2, watched.poll_timeout()) };
        watched.tick();
        if ready <= 0 {
            continue;
        }
        if fds[1].revents != 0 {
            let mut sink = [0u8; 64];
            // SAFETY: draining our own non-blocking pipe.
            while unsafe { libc::read(fds[1].fd, sink.as_mut_ptr().cast(), sink.len()) } > 0 {}
            reap_all(events.as_raw_fd());
        }
        if fds[0].revents != 0 {
            let Ok((n, received)) = receive(control.as_raw_fd(), &mut buffer) else {
                return 0;
            };
            if n == 0 && received.is_empty() {
                // The driver is gone.
                return 0;
            }
            let (pid, adopted) = match decode(&buffer[..n], received) {
                Some((mut prepared, _keep)) => {
                    prepared.adopt = true;
                    prepared.resets = Resets::Only(&OWN_SIGNALS);
                    prepared.death_signal = 0;
                    if prepared.stdin.is_none() {
                        prepared.stdin = dev_null.as_ref().map(|file| file.as_raw_fd());
                    }
                    match prepared.fork() {
                        Ok(forked) => forked,
                        Err(error) => (-error.raw_os_error().unwrap_or(libc::EIO), false),
                    }
                }
                None => (-libc::EINVAL, false),
            };
            if pid > 0 {
                watched.add(pid);
            }
            let mut answer = [0u8; ANSWER_BYTES];
            answer[..4].copy_from_slice(&pid.to_ne_bytes());
            answer[4] = u8::from(adopted);
            if send(control.as_raw_fd(), &answer, &[]).is_err() {
                return 0;
            }
        }
    }
}

/// Reaps every child that has exited and reports each on `events`.
fn reap_all(events: RawFd) {
    loop {
        let mut status = 0;
        // SAFETY: rusage is plain data that wait4 fills in.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: reaping our own children without blocking, with valid out-pointers.
        let pid = unsafe { libc::wait4(-1, &mut status, libc::WNOHANG, &mut usage) };
        if pid <= 0 {
            return;
        }
        let us = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000 + tv.tv_usec as u64;
        let max_rss_kib = if cfg!(target_os = "macos") {
            usage.ru_maxrss as u64 / 1024
        } else {
            usage.ru_maxrss as u64
        };
        let reaped = Reaped {
            pid,
            status,
            user_us: us(usage.ru_utime),
            sys_us: us(usage.ru_stime),
            max_rss_kib,
        };
        let _ = send(events, &reaped.encode(), &[]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A spawner that stops after taking a request and before answering may have
    /// forked: the command is reported as not started rather than forked again. One
    /// that is gone before the request is sent has forked nothing: the caller forks.
    #[test]
    fn a_request_the_spawner_took_is_never_forked_again() {
        let (out_read, out_write) = crate::supervisor::pipe().expect("a pipe");
        let (status_read, status_write) = crate::supervisor::pipe().expect("a pipe");
        let prepared = Prepared::new(
            std::path::Path::new("/bin/sh"),
            &[std::ffi::OsStr::new("-c"), std::ffi::OsStr::new("true")],
            std::path::Path::new("/"),
            Vec::new(),
            out_write.as_raw_fd(),
            out_write.as_raw_fd(),
            status_write.as_raw_fd(),
        )
        .expect("a request");
        let (ours, theirs) = socket_pair().expect("a socket pair");
        let spawner = Spawner {
            control: parking_lot::Mutex::new(ours),
            pid: 0,
        };
        let taker = std::thread::spawn(move || {
            let mut buffer = vec![0u8; MAX_MESSAGE];
            let taken = receive(theirs.as_raw_fd(), &mut buffer).map(|(n, _)| n);
            // Gone without an answer.
            drop(theirs);
            taken
        });
        let answer = spawner.spawn(&prepared).expect("the request was sent");
        let error = answer.expect_err("no pid came back");
        assert!(error.to_string().contains("before saying"), "{error}");
        assert!(taker.join().unwrap().expect("the request arrived") > 0);
        // Now nothing listens: the request cannot be sent, and the caller forks.
        assert!(spawner.spawn(&prepared).is_err());
        drop((out_read, status_read));
    }

    #[test]
    fn events_round_trip() {
        let reaped = Reaped {
            pid: 42,
            status: 9,
            user_us: 1_500_001,
            sys_us: 7,
            max_rss_kib: 1234,
        };
        assert_eq!(Reaped::decode(&reaped.encode()), Some(reaped));
        assert_eq!(Reaped::decode(&[0; 3]), None);
        let usage = reaped.rusage();
        assert_eq!(usage.ru_utime.tv_sec, 1);
        assert_eq!(usage.ru_utime.tv_usec, 500_001);
    }

    #[test]
    fn requests_round_trip_with_their_descriptors() {
        let c = |text: &str| CString::new(text).unwrap();
        let mut prepared = Prepared::from_parts(
            c("/bin/sh"),
            vec![c("/bin/sh"), c("-c"), c("true")],
            vec![c("A=1"), c("B=two")],
            c("/tmp"),
            10,
            11,
            12,
        );
        prepared.procs = Some(c("/sys/fs/cgroup/x/cgroup.procs"));
        prepared.rlimit = Some(1 << 20);
        prepared.stdin = Some(13);
        let (bytes, fds) = encode(&prepared);
        assert_eq!(fds, vec![10, 11, 12, 13]);
        let owned: Vec<OwnedFd> = (0..4)
            .map(|_| std::fs::File::open("/dev/null").unwrap().into())
            .collect();
        let raw: Vec<RawFd> = owned.iter().map(AsRawFd::as_raw_fd).collect();
        let (back, keep) = decode(&bytes, owned).unwrap();
        assert_eq!(keep.len(), 4);
        assert_eq!(back.args, prepared.args);
        assert_eq!(back.env, prepared.env);
        assert_eq!(back.cwd, prepared.cwd);
        assert_eq!(back.procs, prepared.procs);
        assert_eq!(back.rlimit, Some(1 << 20));
        assert_eq!(back.stdin, Some(raw[3]));
        assert_eq!(back.stdout, raw[0]);
        assert_eq!(back.script, None);
        assert!(decode(&bytes[..bytes.len() - 1], Vec::new()).is_none());
    }
}
