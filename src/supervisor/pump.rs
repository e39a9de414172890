//! The pump: one thread that polls every command's pipes and exit notifications,
//! appends output to the job's rings and reaps shells. Because it reads whenever a pipe
//! is readable, a command never blocks on a full pipe, whatever the readers do.
//!
//! Exits arrive through a pidfd on Linux; elsewhere (or when pidfds are missing) a
//! small thread blocks in `waitpid` for that one child and hands the status over. The
//! pump drains a command's pipes before it records the exit, so everything the shell
//! wrote before it exited is in the rings when `wait` answers.

use crate::supervisor::job::{Exit, Job, Stream};
use crate::supervisor::Notify;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::process::{ChildStderr, ChildStdout};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

const CHUNK: usize = 256 * 1024;

struct Source {
    job: Arc<Job>,
    pid: i32,
    pidfd: Option<OwnedFd>,
    stdout: Option<ChildStdout>,
    stderr: Option<ChildStderr>,
    reaped: bool,
}

struct Shared {
    incoming: Mutex<Vec<Source>>,
    /// Exit statuses (pid, raw status, rusage) collected by fallback waiter threads.
    exits: Mutex<Vec<(i32, i32, libc::rusage)>>,
    wake_write: OwnedFd,
    stop: AtomicBool,
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
        let (wake_read, wake_write) = nonblocking_pipe()?;
        let shared = Arc::new(Shared {
            incoming: Mutex::new(Vec::new()),
            exits: Mutex::new(Vec::new()),
            wake_write,
            stop: AtomicBool::new(false),
        });
        let thread_shared = shared.clone();
        let thread = std::thread::Builder::new()
            .name("tfs-pump".into())
            .spawn(move || run(thread_shared, wake_read, notify, live))?;
        Ok(Pump {
            shared,
            thread: Some(thread),
        })
    }

    /// Hands a freshly spawned child to the pump.
    pub fn add(&self, job: Arc<Job>, pid: i32, stdout: ChildStdout, stderr: ChildStderr) {
        set_nonblocking(stdout.as_raw_fd());
        set_nonblocking(stderr.as_raw_fd());
        enlarge_pipe(stdout.as_raw_fd());
        enlarge_pipe(stderr.as_raw_fd());
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
        self.shared.incoming.lock().push(Source {
            job,
            pid,
            pidfd,
            stdout: Some(stdout),
            stderr: Some(stderr),
            reaped: false,
        });
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
    notify: Notify,
    live: Arc<Mutex<HashMap<u64, Arc<Job>>>>,
) {
    let mut sources: Vec<Source> = Vec::new();
    let mut buffer = vec![0u8; CHUNK];
    let mut fds: Vec<libc::pollfd> = Vec::new();
    while !shared.stop.load(Ordering::SeqCst) {
        sources.append(&mut shared.incoming.lock());

        fds.clear();
        fds.push(pollfd(wake_read.as_raw_fd()));
        for source in &sources {
            fds.push(pollfd(source.stdout.as_ref().map_or(-1, |p| p.as_raw_fd())));
            fds.push(pollfd(source.stderr.as_ref().map_or(-1, |p| p.as_raw_fd())));
            fds.push(pollfd(source.pidfd.as_ref().map_or(-1, |p| p.as_raw_fd())));
        }
        // SAFETY: `fds` is a valid array of pollfd for its whole length.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) };
        if ready < 0 {
            continue; // EINTR
        }
        if fds[0].revents != 0 {
            drain_wake(wake_read.as_raw_fd());
        }
        let fallback_exits: Vec<(i32, i32, libc::rusage)> =
            std::mem::take(&mut *shared.exits.lock());

        for (index, source) in sources.iter_mut().enumerate() {
            let [out_fd, err_fd, pid_fd] =
                [fds[1 + 3 * index], fds[2 + 3 * index], fds[3 + 3 * index]];
            let mut news = false;
            if out_fd.revents != 0 {
                news |= pump_once(&mut source.stdout, Stream::Stdout, &source.job, &mut buffer);
            }
            if err_fd.revents != 0 {
                news |= pump_once(&mut source.stderr, Stream::Stderr, &source.job, &mut buffer);
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
            if let Some((raw, usage)) = status {
                // Take what the shell wrote before it exited, then record the exit.
                drain(&mut source.stdout, Stream::Stdout, &source.job, &mut buffer);
                drain(&mut source.stderr, Stream::Stderr, &source.job, &mut buffer);
                source.job.mark_exited(exit_from(raw, &usage));
                source.reaped = true;
                news = true;
            }
            if news {
                notify(source.job.id());
            }
        }
        sources.retain(|s| {
            let over = s.reaped && s.stdout.is_none() && s.stderr.is_none();
            if over {
                live.lock().remove(&s.job.id());
                s.job.remove_cgroup_if_done();
            }
            !over
        });
    }
}

fn pollfd(fd: RawFd) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }
}

/// Reads one chunk from a readable pipe; closes it at EOF. Returns whether anything
/// changed.
fn pump_once<P: Read + AsRawFd>(
    pipe: &mut Option<P>,
    stream: Stream,
    job: &Job,
    buffer: &mut [u8],
) -> bool {
    let Some(reader) = pipe.as_mut() else {
        return false;
    };
    match reader.read(buffer) {
        Ok(0) => {
            *pipe = None;
            job.pipe_closed();
            true
        }
        Ok(n) => {
            job.append(stream, &buffer[..n]);
            true
        }
        Err(e)
            if e.kind() == std::io::ErrorKind::WouldBlock
                || e.kind() == std::io::ErrorKind::Interrupted =>
        {
            false
        }
        Err(_) => {
            *pipe = None;
            job.pipe_closed();
            true
        }
    }
}

/// Reads everything a pipe holds right now, without waiting for more.
fn drain<P: Read + AsRawFd>(pipe: &mut Option<P>, stream: Stream, job: &Job, buffer: &mut [u8]) {
    // Bounded so a descendant that keeps writing cannot hold the pump here.
    for _ in 0..64 {
        let before = pipe.is_some();
        if !pump_once(pipe, stream, job, buffer) || !before || pipe.is_none() {
            return;
        }
    }
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

fn nonblocking_pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe fills two descriptors we then own.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    for fd in fds {
        set_nonblocking(fd);
        // SAFETY: marking our own descriptor close-on-exec.
        unsafe {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn set_nonblocking(fd: RawFd) {
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
