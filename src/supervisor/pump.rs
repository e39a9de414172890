//! The pump: one thread that reads every command's stdout pipe (and the stderr pipe of
//! a command whose stderr is not a file of the mount), watches exits, appends output
//! to the jobs and reaps shells. Because it reads whenever a pipe has data, a command
//! never blocks on a full pipe, whatever the readers do. Each round reads at most
//! [`READS_PER_ROUND`] chunks per pipe, so several loud commands share it fairly.
//!
//! Order across stdout and stderr is kept by [`capture`](super::capture): the pump
//! only ever reads stdout under the command's capture lock.
//!
//! Exits arrive through a pidfd on Linux; elsewhere (or when pidfds are missing) a
//! small thread blocks in `wait4` for that one child and hands the status over; a
//! status that arrives before the pump has heard of the pid is kept until it has.
//! The pump moves what a command's pipes hold before it records the exit, so
//! everything the shell wrote before it exited is in the job when `wait` answers.
//!
//! Whether a shell is stopped is read from the system (`/proc/<pid>/stat` on Linux,
//! `proc_pidinfo` on macOS) every [`LOOK_EVERY`] while any shell runs, so `paused`
//! follows a stop or continue from outside the `kill` file, or by the command itself.
//! A look is skipped when the driver sent a STOP or CONT since the previous one: the
//! state it read may predate the signal.
//!
//! No signal is ever queued: the pump's wake-ups are a pipe, pollable descriptors and
//! pidfds, so a command that writes fast costs other processes of the same user
//! nothing (real-time signal queues are counted per user).

use crate::supervisor::capture::{Capture, Pumped, Registry, CHUNK};
use crate::supervisor::job::{Exit, Job, Stream};
use crate::supervisor::spawn::{self, Birth, Stage};
use crate::supervisor::spawner::{self, Reaped};
use crate::supervisor::timer::Scheduler;
use crate::supervisor::{News, Notify};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// How often the pump reads whether each running shell is stopped: a stop or continue
/// made outside the `kill` file shows within this (twice this right after a STOP or
/// CONT written to `kill`).
pub const LOOK_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

/// Reads of one pipe per round before the pump turns to the next command.
const READS_PER_ROUND: usize = 16;
/// Reads that take what a pipe holds when its shell exits: more than a full pipe.
const READS_AT_EXIT: usize = 8;
/// The size asked for a loud command's stdout pipe: fewer sleeps and wake-ups of the
/// writer and the pump (Linux only). Pipes start at the default size (64 KiB): a
/// user's pipe buffers are counted together (`pipe-user-pages-soft`, 64 MiB), and past
/// that count every new pipe of the user gets two pages, so quiet commands must not
/// take more than they use.
#[cfg(target_os = "linux")]
const LOUD_PIPE_SIZE: i32 = 1 << 20;

/// Makes a pipe for a command's output: close-on-exec, read end non-blocking.
pub fn make_pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let (read, write) = pipe()?;
    set_nonblocking(read.as_raw_fd());
    Ok((read, write))
}

/// Makes a child's status pipe: close-on-exec, read end non-blocking.
pub fn make_status_pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let (read, write) = pipe()?;
    set_nonblocking(read.as_raw_fd());
    Ok((read, write))
}

struct Source {
    capture: Arc<Capture>,
    /// The stderr pipe, which the child uses when it cannot open its stderr file of
    /// the mount; None once ended.
    stderr: Option<OwnedFd>,
    /// The child's status pipe: what failed before its exec, if anything; None once
    /// it has ended (the child exec'd or died).
    status: Option<OwnedFd>,
    /// What came through the status pipe.
    failure: Vec<u8>,
    /// Who forked it, and so who reaps it.
    birth: Birth,
    /// The start of a failure message: what the child was to run, and where.
    what: String,
    pid: i32,
    pidfd: Option<OwnedFd>,
    reaped: bool,
    /// The job's count of STOPs and CONTs sent, as of the last look at the shell.
    pauses_seen: u64,
}

impl Source {
    fn job(&self) -> &Arc<Job> {
        self.capture.job()
    }

    /// Its shell was started and has not been reaped.
    fn shell_runs(&self) -> bool {
        self.pid > 0 && !self.reaped
    }

    fn over(&self) -> bool {
        self.reaped && self.capture.stdout_fd() < 0 && self.stderr.is_none()
    }
}

enum Incoming {
    Watch(Source),
    Started(u64, i32, Option<OwnedFd>, Birth),
    Abandon(u64),
}

/// An exit status collected by a waiter thread: pid, raw status, usage.
type Collected = (i32, i32, libc::rusage);

struct Shared {
    incoming: Mutex<Vec<Incoming>>,
    /// Exit statuses collected by fallback waiter threads.
    exits: Mutex<Vec<Collected>>,
    wake_write: OwnedFd,
    stop: AtomicBool,
    /// For tests: take the path of a system without pidfds (macOS), and announce each
    /// start only once the pump has taken its exit status, the order that path must
    /// survive.
    #[cfg(test)]
    exit_first: AtomicBool,
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

/// A handle on the pump thread; clones talk to the same thread.
#[derive(Clone)]
pub struct Pump {
    shared: Arc<Shared>,
    thread: Arc<Mutex<Option<JoinHandle<()>>>>,
}

impl Pump {
    pub fn start(
        notify: Notify,
        live: Arc<Mutex<HashMap<u64, Arc<Job>>>>,
        registry: Arc<Registry>,
        spawner_events: Option<OwnedFd>,
        scheduler: Scheduler,
    ) -> std::io::Result<Pump> {
        let (wake_read, wake_write) = pipe()?;
        set_nonblocking(wake_read.as_raw_fd());
        set_nonblocking(wake_write.as_raw_fd());
        let shared = Arc::new(Shared {
            incoming: Mutex::new(Vec::new()),
            exits: Mutex::new(Vec::new()),
            wake_write,
            stop: AtomicBool::new(false),
            #[cfg(test)]
            exit_first: AtomicBool::new(false),
        });
        let thread_shared = shared.clone();
        let thread = std::thread::Builder::new()
            .name("tfs-pump".into())
            .spawn(move || {
                run(
                    thread_shared,
                    wake_read,
                    spawner_events,
                    notify,
                    live,
                    registry,
                    scheduler,
                )
            })?;
        Ok(Pump {
            shared,
            thread: Arc::new(Mutex::new(Some(thread))),
        })
    }

    /// Takes a command's capture, its stderr pipe (none on a terminal, which is stdout
    /// and stderr at once) and its status pipe before its child is forked. `what` names
    /// what it runs, for a failure message.
    pub fn watch(
        &self,
        capture: Arc<Capture>,
        stderr: Option<OwnedFd>,
        status: OwnedFd,
        what: String,
    ) {
        // No wake: nothing can arrive before the fork, and its `started` or `abandon`
        // wakes the pump, which takes both messages at once.
        self.shared.incoming.lock().push(Incoming::Watch(Source {
            capture,
            stderr,
            status: Some(status),
            failure: Vec::new(),
            birth: Birth::Driver,
            what,
            pid: 0,
            pidfd: None,
            reaped: false,
            pauses_seen: 0,
        }));
    }

    /// The watched command's shell is running as `pid`: reap it when it exits. A child
    /// of the spawner is reaped there, and its exit comes as an event.
    pub fn started(&self, job: u64, pid: i32, birth: Birth) {
        if birth == Birth::Spawner {
            return self.send(Incoming::Started(job, pid, None, birth));
        }
        let pidfd = if self.exit_first() {
            None
        } else {
            open_pidfd(pid)
        };
        if pidfd.is_none() {
            let shared = self.shared.clone();
            let collected = Arc::new(AtomicBool::new(false));
            let waiter_collected = collected.clone();
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
                    waiter_collected.store(true, Ordering::SeqCst);
                    shared.wake();
                })
                .expect("a waiter thread can be spawned");
            if self.exit_first() {
                self.until_exit_taken(pid, &collected);
            }
        }
        self.send(Incoming::Started(job, pid, pidfd, birth));
    }

    #[cfg(test)]
    fn exit_first(&self) -> bool {
        self.shared.exit_first.load(Ordering::SeqCst)
    }

    #[cfg(not(test))]
    fn exit_first(&self) -> bool {
        false
    }

    /// For tests: the pidfd-less path, each start announced after its exit was taken.
    #[cfg(test)]
    pub fn announce_starts_after_exits(&self) {
        self.shared.exit_first.store(true, Ordering::SeqCst);
    }

    /// Waits (with a deadline) until the waiter has collected `pid`'s status and the
    /// pump has taken it from the shared list, before it knows whose it is.
    fn until_exit_taken(&self, pid: i32, collected: &AtomicBool) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while std::time::Instant::now() < deadline {
            let taken = collected.load(Ordering::SeqCst)
                && !self.shared.exits.lock().iter().any(|(p, ..)| *p == pid);
            if taken {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// The watched command never started: close its pipes.
    pub fn abandon(&self, job: u64) {
        self.send(Incoming::Abandon(job));
    }

    fn send(&self, message: Incoming) {
        self.shared.incoming.lock().push(message);
        self.shared.wake();
    }

    pub fn stop(&self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.wake();
        if let Some(thread) = self.thread.lock().take() {
            super::join(thread);
        }
    }
}

fn run(
    shared: Arc<Shared>,
    wake_read: OwnedFd,
    mut spawner_events: Option<OwnedFd>,
    notify: Notify,
    live: Arc<Mutex<HashMap<u64, Arc<Job>>>>,
    registry: Arc<Registry>,
    scheduler: Scheduler,
) {
    let mut sources: HashMap<u64, Source> = HashMap::new();
    // Exit statuses whose pid no source has yet (the waiter was quicker than the
    // message that names the pid).
    let mut unclaimed: Vec<Collected> = Vec::new();
    let mut buffer = vec![0u8; CHUNK];
    let mut fds: Vec<libc::pollfd> = Vec::new();
    let mut order: Vec<u64> = Vec::new();
    let mut reaped_by_spawner: Vec<Reaped> = Vec::new();
    let mut next_look = std::time::Instant::now() + LOOK_EVERY;
    while !shared.stop.load(Ordering::SeqCst) {
        take_incoming(&shared, &mut sources, &registry);

        fds.clear();
        order.clear();
        fds.push(pollfd(wake_read.as_raw_fd()));
        fds.push(pollfd(
            spawner_events.as_ref().map_or(-1, |fd| fd.as_raw_fd()),
        ));
        for (id, source) in &sources {
            order.push(*id);
            fds.push(pollfd(source.capture.stdout_fd()));
            fds.push(pollfd(
                source.stderr.as_ref().map_or(-1, |fd| fd.as_raw_fd()),
            ));
            fds.push(pollfd(
                source.status.as_ref().map_or(-1, |fd| fd.as_raw_fd()),
            ));
            fds.push(pollfd(source.pidfd.as_ref().map_or(-1, |p| p.as_raw_fd())));
        }
        // While a shell runs, wake for the next look at its state.
        let timeout = if sources.values().any(Source::shell_runs) {
            let left = next_look.saturating_duration_since(std::time::Instant::now());
            // Rounded up: a timeout of 0 would spin until the look is due.
            (left.as_micros().div_ceil(1000)).min(LOOK_EVERY.as_millis()) as libc::c_int
        } else {
            -1
        };
        // SAFETY: `fds` is a valid array of pollfd for its whole length.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
        if ready < 0 {
            continue; // EINTR
        }
        if fds[0].revents != 0 {
            drain_wake(wake_read.as_raw_fd());
        }
        take_incoming(&shared, &mut sources, &registry);
        unclaimed.append(&mut shared.exits.lock());
        if fds[1].revents != 0 {
            let events = spawner_events.as_ref().map_or(-1, |fd| fd.as_raw_fd());
            let ended = spawner::read_events(events, &mut reaped_by_spawner);
            for reaped in reaped_by_spawner.drain(..) {
                unclaimed.push((reaped.pid, reaped.status, reaped.rusage()));
            }
            if ended {
                // The spawner is gone, and its children with it (their parent-death
                // signal): they count as killed.
                spawner_events = None;
                for source in sources.values() {
                    if source.pid > 0 && !source.reaped && source.birth == Birth::Spawner {
                        // SAFETY: rusage is plain data; zero is valid for every field.
                        let usage: libc::rusage = unsafe { std::mem::zeroed() };
                        unclaimed.push((source.pid, libc::SIGKILL, usage));
                    }
                }
            }
        }

        let mut news: Vec<(u64, News)> = Vec::new();
        for (index, id) in order.iter().enumerate() {
            let Some(source) = sources.get_mut(id) else {
                continue;
            };
            let base = 2 + 4 * index;
            let [out_fd, err_fd, status_fd, pid_fd] =
                [fds[base], fds[base + 1], fds[base + 2], fds[base + 3]];
            let mut changed = None;
            if out_fd.revents != 0 {
                changed = pump_stdout(&source.capture, &mut buffer, READS_PER_ROUND);
            }
            if err_fd.revents != 0 {
                changed = either(changed, pump_stderr(source, &mut buffer, READS_PER_ROUND));
            }
            if status_fd.revents != 0 {
                read_status(source);
            }
            let mut status = None;
            if pid_fd.revents != 0 {
                status = reap(source.pid);
                if status.is_some() {
                    source.pidfd = None;
                }
            }
            if source.pid > 0 {
                if let Some(at) = unclaimed.iter().position(|(pid, ..)| *pid == source.pid) {
                    let (_, raw, usage) = unclaimed.swap_remove(at);
                    status = Some((raw, usage));
                }
            }
            if let Some((raw, usage)) = status {
                // Take what the shell wrote before it exited, then record the exit.
                pump_stdout(&source.capture, &mut buffer, READS_AT_EXIT);
                pump_stderr(source, &mut buffer, READS_AT_EXIT);
                // The child is gone, so its status pipe holds all it will ever hold.
                read_status(source);
                let mut exited = false;
                match spawn::decode_failure(&source.failure) {
                    Some((stage, error)) => {
                        let message = match stage {
                            Stage::Cgroup => format!(
                                "terminalfs: cannot place the command in its cgroup: {error}\n"
                            ),
                            Stage::Sandbox => {
                                format!("terminalfs: cannot apply the sandbox: {error}\n")
                            }
                            Stage::Orphaned => {
                                "terminalfs: not started: the driver was going away\n".to_string()
                            }
                            _ => format!("terminalfs: cannot start {}: {error}\n", source.what),
                        };
                        source.job().mark_failed_to_start(&message);
                    }
                    None => {
                        let peak = source.job().memory_peak_kib();
                        let exit = exit_from(raw, &usage, peak, source.birth);
                        exited = source.job().mark_exited(exit);
                    }
                }
                // A cgroup that goes back to the pool as it is (no removal, nothing
                // made, unless it was removed from under the command) is free before
                // anyone hears of the exit, unless something the command started lives
                // on there.
                if source.job().cgroup_reusable() {
                    source.job().remove_cgroup_if_done();
                }
                source.reaped = true;
                changed = Some(News::State);
                if exited {
                    // Those waiting for the exit hear of it before its record is made
                    // and handed to the spool (which writes it later in any case).
                    notify(*id, News::State);
                    source.job().save_record();
                    changed = None;
                }
            }
            if let Some(changed) = changed {
                news.push((*id, changed));
            }
        }
        if std::time::Instant::now() >= next_look {
            next_look = std::time::Instant::now() + LOOK_EVERY;
            for (id, source) in sources.iter_mut().filter(|(_, s)| s.shell_runs()) {
                let sent = source.job().pauses_sent();
                if sent != source.pauses_seen {
                    source.pauses_seen = sent;
                    continue;
                }
                let stopped = shell_stopped(source.pid);
                if stopped.is_some_and(|stopped| source.job().observe_stopped(stopped, sent)) {
                    news.push((*id, News::State));
                }
            }
        }
        for (id, news) in news {
            notify(id, news);
        }
        sources.retain(|id, source| {
            let over = source.over();
            if over {
                live.lock().remove(id);
                if !source.job().remove_cgroup_if_done() {
                    scheduler.tidy(source.job().clone());
                }
                registry.pumped_out(*id);
            }
            !over
        });
    }
}

fn take_incoming(shared: &Shared, sources: &mut HashMap<u64, Source>, registry: &Registry) {
    for message in shared.incoming.lock().drain(..) {
        match message {
            Incoming::Watch(source) => {
                sources.insert(source.job().id(), source);
            }
            Incoming::Started(id, pid, pidfd, birth) => {
                if let Some(source) = sources.get_mut(&id) {
                    source.pid = pid;
                    source.pidfd = pidfd;
                    source.birth = birth;
                }
            }
            Incoming::Abandon(id) => {
                sources.remove(&id);
                registry.pumped_out(id);
            }
        }
    }
}

fn pollfd(fd: RawFd) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }
}

/// The news of two things that happened to one job: a change of state says more than
/// output (whoever waits for output also hears of state changes).
fn either(a: Option<News>, b: Option<News>) -> Option<News> {
    match (a, b) {
        (Some(News::State), _) | (_, Some(News::State)) => Some(News::State),
        (a, b) => a.or(b),
    }
}

/// Up to `reads` reads of a command's stdout; the news they make, if any.
fn pump_stdout(capture: &Capture, buffer: &mut [u8], reads: usize) -> Option<News> {
    let mut news = None;
    for _ in 0..reads {
        match capture.pump_stdout(buffer) {
            Pumped::Bytes(_) => news = Some(News::Output),
            Pumped::Empty => break,
            Pumped::Closed => return Some(News::State),
        }
    }
    news
}

/// Up to `reads` reads of a command's stderr pipe into the job; closes it at
/// end-of-file. The news they make, if any.
fn pump_stderr(source: &mut Source, buffer: &mut [u8], reads: usize) -> Option<News> {
    let mut news = None;
    for _ in 0..reads {
        let Some(fd) = source.stderr.as_ref() else {
            return news;
        };
        // SAFETY: reading into a valid buffer from a descriptor we own.
        let n = unsafe { libc::read(fd.as_raw_fd(), buffer.as_mut_ptr().cast(), buffer.len()) };
        if n > 0 {
            source.job().append(Stream::Stderr, &buffer[..n as usize]);
            news = Some(News::Output);
            continue;
        }
        let error = std::io::Error::last_os_error().raw_os_error();
        if n < 0 && matches!(error, Some(libc::EAGAIN) | Some(libc::EINTR)) {
            return news;
        }
        source.stderr = None;
        source.capture.stderr_pipe_ended();
        return Some(News::State);
    }
    news
}

/// Reads the child's status pipe; at its end the child has exec'd (or died).
fn read_status(source: &mut Source) {
    let Some(fd) = source.status.as_ref() else {
        return;
    };
    let mut bytes = [0u8; 16];
    loop {
        // SAFETY: reading into a valid buffer from a descriptor we own.
        let n = unsafe { libc::read(fd.as_raw_fd(), bytes.as_mut_ptr().cast(), bytes.len()) };
        if n > 0 {
            if source.failure.len() < 64 {
                source.failure.extend_from_slice(&bytes[..n as usize]);
            }
            continue;
        }
        let error = std::io::Error::last_os_error().raw_os_error();
        if n < 0 && error == Some(libc::EINTR) {
            continue;
        }
        if n < 0 && error == Some(libc::EAGAIN) {
            return;
        }
        source.status = None;
        return;
    }
}
/// What is read of a process: whether it is stopped, and its parent.
struct ProcessState {
    stopped: bool,
    parent: i32,
}

/// Whether process `pid` is stopped (by any stop signal, or traced); None when it
/// cannot be told (it is gone, or the system does not say).
pub(crate) fn shell_stopped(pid: i32) -> Option<bool> {
    process_state(pid).map(|state| state.stopped)
}

/// The parent of process `pid`; None when it cannot be told.
pub(crate) fn parent_of(pid: i32) -> Option<i32> {
    process_state(pid).map(|state| state.parent)
}

#[cfg(target_os = "linux")]
fn process_state(pid: i32) -> Option<ProcessState> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: the state and the parent
    // follow the last ')'.
    let mut fields = stat.rsplit(')').next()?.split_whitespace();
    let state = fields.next()?;
    Some(ProcessState {
        // Only a stop signal: a traced process (`t`) stops at each of its tracer's
        // events, and would flip between paused and running.
        stopped: state == "T",
        parent: fields.next()?.parse().ok()?,
    })
}

#[cfg(target_os = "macos")]
fn process_state(pid: i32) -> Option<ProcessState> {
    // SAFETY: proc_bsdinfo is plain data that proc_pidinfo fills in.
    let mut info: libc::proc_bsdinfo = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::proc_bsdinfo>() as libc::c_int;
    // SAFETY: the buffer is a proc_bsdinfo of the size given.
    let got = unsafe {
        libc::proc_pidinfo(
            pid,
            libc::PROC_PIDTBSDINFO,
            0,
            (&mut info as *mut libc::proc_bsdinfo).cast(),
            size,
        )
    };
    (got == size).then_some(ProcessState {
        stopped: info.pbi_status == libc::SSTOP,
        parent: info.pbi_ppid as i32,
    })
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn process_state(_pid: i32) -> Option<ProcessState> {
    None
}

fn reap(pid: i32) -> Option<(i32, libc::rusage)> {
    let mut status = 0;
    // SAFETY: rusage is plain data that wait4 fills in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: reaping our own child without blocking, with valid out-pointers.
    let got = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
    (got == pid).then_some((status, usage))
}

/// How a command ended. Its peak memory is its cgroup's `memory.peak` when there is
/// one (everything it started, at once), else `ru_maxrss`: the largest of the shell
/// and the descendants it waited for, which a child forked from the driver would
/// start at the driver's size, so it is said which process forked it.
fn exit_from(raw: i32, usage: &libc::rusage, peak: Option<u64>, birth: Birth) -> Exit {
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
    let (max_rss_kib, max_rss_source) = match peak {
        Some(peak) => (peak, "cgroup memory.peak (the whole command)"),
        None if birth != Birth::Driver => (
            max_rss_kib,
            "ru_maxrss: the largest of the shell and the processes it waited for \
             (at least the spawner's few MiB, which the shell began in)",
        ),
        None => (
            max_rss_kib,
            "ru_maxrss, forked from the driver: at least the driver's size at the fork",
        ),
    };
    Exit {
        code,
        signal,
        user_ms: ms(usage.ru_utime),
        sys_ms: ms(usage.ru_stime),
        max_rss_kib,
        max_rss_source: max_rss_source.to_string(),
    }
}

/// A close-on-exec pipe.
pub(crate) fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    #[cfg(target_os = "linux")]
    // SAFETY: pipe2 fills two descriptors we then own.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    #[cfg(not(target_os = "linux"))]
    // SAFETY: pipe fills two descriptors we then own; both are marked close-on-exec.
    let rc = unsafe {
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

/// A bigger pipe means fewer wake-ups for a loud command (Linux only).
pub(crate) fn enlarge_pipe(fd: RawFd) {
    #[cfg(target_os = "linux")]
    // SAFETY: F_SETPIPE_SZ on our own pipe; failure (over the user's count, or not a
    // pipe) leaves its size as it was.
    unsafe {
        libc::fcntl(fd, libc::F_SETPIPE_SZ, LOUD_PIPE_SIZE);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(any(target_os = "linux", target_os = "macos"))]
    #[test]
    fn a_stopped_process_reads_as_stopped_until_continued() {
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .expect("sleep starts");
        let pid = child.id() as i32;
        let reads = |want: bool| {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while std::time::Instant::now() < deadline {
                if shell_stopped(pid) == Some(want) {
                    return true;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            false
        };
        assert!(reads(false));
        // SAFETY: signals to the child this test started.
        unsafe { libc::kill(pid, libc::SIGSTOP) };
        let stopped = reads(true);
        // SAFETY: as above.
        unsafe { libc::kill(pid, libc::SIGCONT) };
        let continued = reads(false);
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            stopped && continued,
            "stopped {stopped}, continued {continued}"
        );
    }
}
