//! The pump: one thread that reads every command's pipes and exit notifications,
//! appends output to the job's rings and reaps shells. Because it reads whenever a pipe
//! has data, a command never blocks on a full pipe, whatever the readers do.
//!
//! Order across stdout and stderr: two pipes carry no common clock, so on Linux the
//! pump asks the kernel for one queued real-time signal per write (`F_SETSIG` with
//! `O_ASYNC`, directed at the pump thread and read through a signalfd) and makes the
//! pipes packet pipes (`O_DIRECT`), where a read returns one write. Reading one write
//! per signal, in signal order, rebuilds the order in which the command wrote. Where
//! that is unavailable (another platform, a full signal queue), the pump falls back to
//! reading whatever is ready, which keeps every byte but may group near-simultaneous
//! writes by stream.
//!
//! Exits arrive through a pidfd on Linux; elsewhere (or when pidfds are missing) a
//! small thread blocks in `waitpid` for that one child and hands the status over. The
//! pump drains a command's pipes before it records the exit, so everything the shell
//! wrote before it exited is in the rings when `wait` answers.

use crate::supervisor::job::{Exit, Job, Stream};
use crate::supervisor::Notify;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

const CHUNK: usize = 256 * 1024;
/// Reads that empty a pipe whose writes are not announced (after a signal-queue
/// overflow, a quiet second, or an exit): up to 256 MiB of packets, so a writer that
/// never stops cannot hold the pump for long.
const DRAIN_ALL: usize = 1 << 16;
/// Reads per round for a polled (unannounced) pipe, for fairness between commands.
const DRAIN_POLLED: usize = 16;
/// A packet pipe splits a write into packets of one page.
const PACKET: usize = 4096;

/// The two pipes of one command: the write ends go to the child, the read ends to the
/// pump.
pub struct Pipes {
    pub stdout_read: OwnedFd,
    pub stdout_write: OwnedFd,
    pub stderr_read: OwnedFd,
    pub stderr_write: OwnedFd,
}

/// Makes a command's pipes: close-on-exec, packet pipes on Linux, read ends
/// non-blocking and enlarged.
pub fn make_pipes() -> std::io::Result<Pipes> {
    let (stdout_read, stdout_write) = pipe(packet_flag())?;
    let (stderr_read, stderr_write) = pipe(packet_flag())?;
    for fd in [&stdout_read, &stderr_read] {
        set_nonblocking(fd.as_raw_fd());
        enlarge_pipe(fd.as_raw_fd());
    }
    Ok(Pipes {
        stdout_read,
        stdout_write,
        stderr_read,
        stderr_write,
    })
}

#[cfg(target_os = "linux")]
fn packet_flag() -> i32 {
    libc::O_DIRECT
}

#[cfg(not(target_os = "linux"))]
fn packet_flag() -> i32 {
    0
}

struct Pipe {
    fd: OwnedFd,
    stream: Stream,
    /// Data is announced by queued signals (read one write per signal) rather than
    /// found by polling.
    ordered: bool,
}

struct Source {
    job: Arc<Job>,
    pid: i32,
    pidfd: Option<OwnedFd>,
    stdout: Option<Pipe>,
    stderr: Option<Pipe>,
    reaped: bool,
}

impl Source {
    fn pipe_mut(&mut self, stream: Stream) -> &mut Option<Pipe> {
        match stream {
            Stream::Stderr => &mut self.stderr,
            _ => &mut self.stdout,
        }
    }
}

enum Incoming {
    Watch(Source),
    Started(u64, i32, Option<OwnedFd>),
    Abandon(u64),
}

struct Shared {
    incoming: Mutex<Vec<Incoming>>,
    /// Exit statuses (pid, raw status, rusage) collected by fallback waiter threads.
    exits: Mutex<Vec<(i32, i32, libc::rusage)>>,
    wake_write: OwnedFd,
    stop: AtomicBool,
    /// The pump thread's id, which ordered pipes signal; 0 when ordering is off.
    tid: AtomicI32,
}

impl Shared {
    fn wake(&self) {
        let byte = 1u8;
        // SAFETY: writing one byte from a valid buffer to a pipe we own.
        unsafe {
            libc::write(self.wake_write.as_raw_fd(), (&byte as *const u8).cast(), 1);
        }
    }
}

pub struct Pump {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Pump {
    pub fn start(
        notify: Notify,
        live: Arc<Mutex<HashMap<u64, Arc<Job>>>>,
    ) -> std::io::Result<Pump> {
        let (wake_read, wake_write) = pipe(0)?;
        set_nonblocking(wake_read.as_raw_fd());
        set_nonblocking(wake_write.as_raw_fd());
        let shared = Arc::new(Shared {
            incoming: Mutex::new(Vec::new()),
            exits: Mutex::new(Vec::new()),
            wake_write,
            stop: AtomicBool::new(false),
            tid: AtomicI32::new(0),
        });
        let thread_shared = shared.clone();
        let (ready_send, ready) = crossbeam_channel::bounded(1);
        let thread = std::thread::Builder::new()
            .name("tfs-pump".into())
            .spawn(move || {
                let signals = signals::Signals::open();
                if let Some(signals) = &signals {
                    thread_shared.tid.store(signals.tid, Ordering::SeqCst);
                }
                let _ = ready_send.send(());
                run(thread_shared, wake_read, signals, notify, live)
            })?;
        let _ = ready.recv();
        Ok(Pump {
            shared,
            thread: Some(thread),
        })
    }

    /// Takes a command's pipes before its child is spawned, so that even its first
    /// write is announced and read in order. A command on a terminal has one stream (the
    /// terminal's master side as `stdout`, no `stderr`), which has no order to rebuild.
    pub fn watch(&self, job: Arc<Job>, stdout: OwnedFd, stderr: Option<OwnedFd>) {
        let tid = self.shared.tid.load(Ordering::SeqCst);
        let two = stderr.is_some();
        let pipe = |fd: OwnedFd, stream| {
            let ordered = two && tid != 0 && signals::announce_writes(fd.as_raw_fd(), tid);
            Some(Pipe {
                fd,
                stream,
                ordered,
            })
        };
        let stdout = pipe(stdout, Stream::Stdout);
        let stderr = stderr.and_then(|fd| pipe(fd, Stream::Stderr));
        self.send(Incoming::Watch(Source {
            job,
            pid: 0,
            pidfd: None,
            stdout,
            stderr,
            reaped: false,
        }));
    }

    /// The watched command's shell is running as `pid`: reap it when it exits.
    pub fn started(&self, job: u64, pid: i32) {
        let pidfd = open_pidfd(pid);
        if pidfd.is_none() {
            let shared = self.shared.clone();
            std::thread::Builder::new()
                .name("tfs-wait".into())
                .spawn(move || {
                    let mut status = 0;
                    // SAFETY: rusage is plain data that wait4 fills in.
                    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
                    loop {
                        // SAFETY: waiting for our own child with valid out-pointers.
                        let got = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
                        if got == pid {
                            break;
                        }
                        if got < 0
                            && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR)
                        {
                            status = 0;
                            break;
                        }
                    }
                    shared.exits.lock().push((pid, status, usage));
                    shared.wake();
                })
                .expect("a waiter thread can be spawned");
        }
        self.send(Incoming::Started(job, pid, pidfd));
    }

    /// The watched command never started: close its pipes.
    pub fn abandon(&self, job: u64) {
        self.send(Incoming::Abandon(job));
    }

    fn send(&self, message: Incoming) {
        self.shared.incoming.lock().push(message);
        self.shared.wake();
    }

    pub fn stop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.wake();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn run(
    shared: Arc<Shared>,
    wake_read: OwnedFd,
    signals: Option<signals::Signals>,
    notify: Notify,
    live: Arc<Mutex<HashMap<u64, Arc<Job>>>>,
) {
    let mut sources: HashMap<u64, Source> = HashMap::new();
    // Read ends of ordered pipes, by descriptor, to find a signal's pipe.
    let mut by_fd: HashMap<RawFd, u64> = HashMap::new();
    let mut buffer = vec![0u8; CHUNK];
    let mut fds: Vec<libc::pollfd> = Vec::new();
    let mut order: Vec<u64> = Vec::new();
    while !shared.stop.load(Ordering::SeqCst) {
        take_incoming(&shared, &mut sources, &mut by_fd);

        fds.clear();
        order.clear();
        fds.push(pollfd(wake_read.as_raw_fd()));
        fds.push(pollfd(signals.as_ref().map_or(-1, |s| s.fd.as_raw_fd())));
        for (id, source) in &sources {
            order.push(*id);
            let unordered = |pipe: &Option<Pipe>| match pipe {
                Some(pipe) if !pipe.ordered => pipe.fd.as_raw_fd(),
                _ => -1,
            };
            fds.push(pollfd(unordered(&source.stdout)));
            fds.push(pollfd(unordered(&source.stderr)));
            fds.push(pollfd(source.pidfd.as_ref().map_or(-1, |p| p.as_raw_fd())));
        }
        // A quiet second is a safety net: read anything a lost signal left behind.
        // SAFETY: `fds` is a valid array of pollfd for its whole length.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 1000) };
        if ready < 0 {
            continue; // EINTR
        }
        if fds[0].revents != 0 {
            drain_wake(wake_read.as_raw_fd());
        }
        // What arrived while we slept comes first: a signal may name its pipes.
        take_incoming(&shared, &mut sources, &mut by_fd);
        let mut news: Vec<u64> = Vec::new();
        let mut drain_all = ready == 0;
        if let Some(signals) = &signals {
            drain_all |= read_announced(signals, &mut sources, &by_fd, &mut buffer, &mut news);
        }
        let fallback_exits: Vec<(i32, i32, libc::rusage)> =
            std::mem::take(&mut *shared.exits.lock());

        let reads = if drain_all { DRAIN_ALL } else { DRAIN_POLLED };
        for (index, id) in order.iter().enumerate() {
            let Some(source) = sources.get_mut(id) else {
                continue;
            };
            let [out_fd, err_fd, pid_fd] =
                [fds[2 + 3 * index], fds[3 + 3 * index], fds[4 + 3 * index]];
            let mut changed = false;
            if out_fd.revents != 0 || drain_all {
                changed |= drain(&mut source.stdout, &source.job, &mut buffer, reads);
            }
            if err_fd.revents != 0 || drain_all {
                changed |= drain(&mut source.stderr, &source.job, &mut buffer, reads);
            }
            let mut status = None;
            if pid_fd.revents != 0 {
                status = reap(source.pid);
                if status.is_some() {
                    source.pidfd = None;
                }
            }
            if let Some(&(_, raw, usage)) =
                fallback_exits.iter().find(|(pid, ..)| *pid == source.pid)
            {
                status = Some((raw, usage));
            }
            if status.is_some() {
                if let Some(signals) = &signals {
                    // Writes announced just before the exit come first, in order.
                    read_announced(signals, &mut sources, &by_fd, &mut buffer, &mut news);
                }
            }
            let Some(source) = sources.get_mut(id) else {
                continue;
            };
            if let Some((raw, usage)) = status {
                // Take what the shell wrote before it exited, then record the exit.
                drain(&mut source.stdout, &source.job, &mut buffer, DRAIN_ALL);
                drain(&mut source.stderr, &source.job, &mut buffer, DRAIN_ALL);
                source.job.mark_exited(exit_from(raw, &usage));
                source.reaped = true;
                changed = true;
            }
            if changed {
                news.push(*id);
            }
        }
        news.sort_unstable();
        news.dedup();
        for id in news {
            notify(id);
        }
        sources.retain(|_, s| {
            if s.stdout.is_none() && s.stderr.is_none() {
                // Closed pipes' descriptors may be reused by the next command.
                by_fd.retain(|_, job| *job != s.job.id());
            }
            let over = s.reaped && s.stdout.is_none() && s.stderr.is_none();
            if over {
                live.lock().remove(&s.job.id());
                s.job.remove_cgroup_if_done();
            }
            !over
        });
    }
}

fn take_incoming(
    shared: &Shared,
    sources: &mut HashMap<u64, Source>,
    by_fd: &mut HashMap<RawFd, u64>,
) {
    for message in shared.incoming.lock().drain(..) {
        match message {
            Incoming::Watch(source) => {
                for pipe in [&source.stdout, &source.stderr].into_iter().flatten() {
                    if pipe.ordered {
                        by_fd.insert(pipe.fd.as_raw_fd(), source.job.id());
                    }
                }
                sources.insert(source.job.id(), source);
            }
            Incoming::Started(id, pid, pidfd) => {
                if let Some(source) = sources.get_mut(&id) {
                    source.pid = pid;
                    source.pidfd = pidfd;
                }
            }
            Incoming::Abandon(id) => {
                by_fd.retain(|_, job| *job != id);
                sources.remove(&id);
            }
        }
    }
}

/// Reads the writes announced by queued signals, one write per signal, in order.
/// Returns true when the queue overflowed and order was lost (then every pipe must be
/// read as it is).
fn read_announced(
    signals: &signals::Signals,
    sources: &mut HashMap<u64, Source>,
    by_fd: &HashMap<RawFd, u64>,
    buffer: &mut [u8],
    news: &mut Vec<u64>,
) -> bool {
    let mut overflowed = false;
    for announced in signals.take() {
        let fd = match announced {
            signals::Announced::Write(fd) => fd,
            signals::Announced::Overflow => {
                overflowed = true;
                continue;
            }
        };
        let Some(id) = by_fd.get(&fd) else {
            continue;
        };
        let Some(source) = sources.get_mut(id) else {
            continue;
        };
        for stream in [Stream::Stdout, Stream::Stderr] {
            let job = source.job.clone();
            let pipe = source.pipe_mut(stream);
            if pipe.as_ref().is_some_and(|p| p.fd.as_raw_fd() == fd) {
                if read_write(pipe, &job, buffer) {
                    news.push(*id);
                }
                break;
            }
        }
    }
    overflowed
}

fn pollfd(fd: RawFd) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }
}

/// One read from a pipe into the job's rings; closes the pipe at end-of-file.
/// Returns the bytes read (0 for nothing now or end-of-file) and whether anything
/// changed.
fn read_once(pipe: &mut Option<Pipe>, job: &Job, buffer: &mut [u8]) -> (usize, bool) {
    let Some(open) = pipe.as_ref() else {
        return (0, false);
    };
    // SAFETY: reading into a valid buffer from a descriptor we own.
    let n = unsafe {
        libc::read(
            open.fd.as_raw_fd(),
            buffer.as_mut_ptr().cast(),
            buffer.len(),
        )
    };
    if n > 0 {
        job.append(open.stream, &buffer[..n as usize]);
        return (n as usize, true);
    }
    let error = std::io::Error::last_os_error().raw_os_error();
    if n < 0 && matches!(error, Some(libc::EAGAIN) | Some(libc::EINTR)) {
        return (0, false);
    }
    *pipe = None;
    job.pipe_closed();
    (0, true)
}

/// Reads the one write a signal announced: a packet, plus the packets that continue
/// it (a write larger than a page is split into full-page packets).
fn read_write(pipe: &mut Option<Pipe>, job: &Job, buffer: &mut [u8]) -> bool {
    let mut changed = false;
    for _ in 0..4096 {
        let (n, news) = read_once(pipe, job, buffer);
        changed |= news;
        if n != PACKET {
            break;
        }
    }
    changed
}

/// Reads what a pipe holds now, at most `max_reads` reads, without waiting for more.
fn drain(pipe: &mut Option<Pipe>, job: &Job, buffer: &mut [u8], max_reads: usize) -> bool {
    let mut changed = false;
    for _ in 0..max_reads {
        let (n, news) = read_once(pipe, job, buffer);
        changed |= news;
        if n == 0 {
            break;
        }
    }
    changed
}

fn reap(pid: i32) -> Option<(i32, libc::rusage)> {
    let mut status = 0;
    // SAFETY: rusage is plain data that wait4 fills in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: reaping our own child without blocking, with valid out-pointers.
    let got = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
    (got == pid).then_some((status, usage))
}

fn exit_from(raw: i32, usage: &libc::rusage) -> Exit {
    let ms = |tv: libc::timeval| tv.tv_sec as u64 * 1000 + tv.tv_usec as u64 / 1000;
    let (code, signal) = if libc::WIFSIGNALED(raw) {
        let signal = libc::WTERMSIG(raw);
        (128 + signal, Some(signal))
    } else {
        (libc::WEXITSTATUS(raw), None)
    };
    // ru_maxrss is KiB on Linux and bytes on macOS.
    let max_rss_kib = if cfg!(target_os = "macos") {
        usage.ru_maxrss as u64 / 1024
    } else {
        usage.ru_maxrss as u64
    };
    Exit {
        code,
        signal,
        user_ms: ms(usage.ru_utime),
        sys_ms: ms(usage.ru_stime),
        max_rss_kib,
    }
}

/// A close-on-exec pipe with extra `flags` (such as `O_DIRECT`).
pub(crate) fn pipe(flags: i32) -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    #[cfg(target_os = "linux")]
    // SAFETY: pipe2 fills two descriptors we then own.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), flags | libc::O_CLOEXEC) };
    #[cfg(not(target_os = "linux"))]
    // SAFETY: pipe fills two descriptors we then own; both are marked close-on-exec.
    let rc = unsafe {
        let _ = flags;
        let rc = libc::pipe(fds.as_mut_ptr());
        if rc == 0 {
            libc::fcntl(fds[0], libc::F_SETFD, libc::FD_CLOEXEC);
            libc::fcntl(fds[1], libc::F_SETFD, libc::FD_CLOEXEC);
        }
        rc
    };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

pub(crate) fn set_nonblocking(fd: RawFd) {
    // SAFETY: fcntl on a descriptor we own.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
}

fn drain_wake(fd: RawFd) {
    let mut sink = [0u8; 256];
    // SAFETY: reading into a valid buffer from our own non-blocking pipe.
    while unsafe { libc::read(fd, sink.as_mut_ptr().cast(), sink.len()) } > 0 {}
}

/// A bigger pipe means fewer wake-ups for a chatty command (Linux only).
fn enlarge_pipe(fd: RawFd) {
    #[cfg(target_os = "linux")]
    // SAFETY: F_SETPIPE_SZ on our own pipe; failure leaves the default size.
    unsafe {
        libc::fcntl(fd, libc::F_SETPIPE_SZ, 1 << 20);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = fd;
}

#[cfg(target_os = "linux")]
fn open_pidfd(pid: i32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    // SAFETY: a non-negative result is a descriptor nobody else owns.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

#[cfg(not(target_os = "linux"))]
fn open_pidfd(_pid: i32) -> Option<OwnedFd> {
    None
}

/// Queued signals that announce writes, in write order (Linux only).
#[cfg(target_os = "linux")]
mod signals {
    use std::os::fd::{FromRawFd, OwnedFd, RawFd};

    // fcntl commands and the owner type from <fcntl.h>, the same on every Linux
    // architecture; the libc crate does not export them for every target.
    const F_SETSIG: i32 = 10;
    const F_SETOWN_EX: i32 = 15;
    const F_OWNER_TID: i32 = 0;

    #[repr(C)]
    struct OwnerEx {
        kind: i32,
        pid: i32,
    }

    fn signal() -> i32 {
        libc::SIGRTMIN() + 4
    }

    /// What one queued signal says.
    pub enum Announced {
        /// A write (or a close) happened on this read end.
        Write(RawFd),
        /// The signal queue was full: order is lost until every pipe is read.
        Overflow,
    }

    pub struct Signals {
        pub fd: OwnedFd,
        pub tid: i32,
    }

    impl Signals {
        /// Blocks the announcing signals in the calling thread and opens a signalfd
        /// for them. Call on the thread that will read them.
        pub fn open() -> Option<Signals> {
            // SAFETY: building a signal set, masking it for this thread only, and
            // opening a signalfd for it.
            unsafe {
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                libc::sigaddset(&mut set, signal());
                libc::sigaddset(&mut set, libc::SIGIO);
                if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
                    return None;
                }
                let fd = libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC);
                if fd < 0 {
                    return None;
                }
                let tid = libc::syscall(libc::SYS_gettid) as i32;
                Some(Signals {
                    fd: OwnedFd::from_raw_fd(fd),
                    tid,
                })
            }
        }

        /// Every signal queued so far, oldest first.
        pub fn take(&self) -> Vec<Announced> {
            use std::os::fd::AsRawFd;
            let mut out = Vec::new();
            // SAFETY: signalfd_siginfo is plain data.
            let mut infos: [libc::signalfd_siginfo; 64] = unsafe { std::mem::zeroed() };
            loop {
                let size = std::mem::size_of_val(&infos);
                // SAFETY: reading whole records into a buffer of the right type.
                let n = unsafe { libc::read(self.fd.as_raw_fd(), infos.as_mut_ptr().cast(), size) };
                if n <= 0 {
                    return out;
                }
                let count = n as usize / std::mem::size_of::<libc::signalfd_siginfo>();
                for info in &infos[..count] {
                    if info.ssi_signo as i32 == signal() {
                        out.push(Announced::Write(info.ssi_fd));
                    } else {
                        out.push(Announced::Overflow);
                    }
                }
            }
        }
    }

    /// Asks the kernel to queue one signal to thread `tid` per write into the pipe
    /// whose read end is `fd`. False when it cannot.
    pub fn announce_writes(fd: RawFd, tid: i32) -> bool {
        let owner = OwnerEx {
            kind: F_OWNER_TID,
            pid: tid,
        };
        // SAFETY: fcntl on our own descriptor with a valid owner structure.
        unsafe {
            if libc::fcntl(fd, F_SETOWN_EX, &owner as *const OwnerEx) < 0
                || libc::fcntl(fd, F_SETSIG, signal()) < 0
            {
                return false;
            }
            let flags = libc::fcntl(fd, libc::F_GETFL);
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_ASYNC) == 0
        }
    }
}

/// Elsewhere there is no signalfd: pipes are polled and read as they come.
#[cfg(not(target_os = "linux"))]
mod signals {
    use std::os::fd::{OwnedFd, RawFd};

    /// The same shape as on Linux, so the pump has one loop; nothing here makes one.
    #[allow(dead_code)]
    pub enum Announced {
        Write(RawFd),
        Overflow,
    }

    pub struct Signals {
        pub fd: OwnedFd,
        pub tid: i32,
    }

    impl Signals {
        pub fn open() -> Option<Signals> {
            None
        }

        pub fn take(&self) -> Vec<Announced> {
            Vec::new()
        }
    }

    pub fn announce_writes(_fd: RawFd, _tid: i32) -> bool {
        false
    }
}
