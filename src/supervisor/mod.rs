//! The command supervisor: spawns `<shell> -c <text>` in its own session and process
//! group, captures stdout and stderr into the spool, reaps the shell, and stops the whole
//! group on request (SIGTERM, then SIGKILL after a grace period).
//!
//! It knows nothing about FUSE or the tree. Whoever cares about progress passes a
//! [`Notify`] callback; it is called with a job id and [`News`] whenever that job gained
//! output or changed state, from the supervisor's own threads, and must not block.
//!
//! Threads: one pump thread polls every pipe (and, on Linux, every pidfd) and owns all
//! reading and reaping; one timer thread delivers the delayed SIGKILLs and time limits;
//! one `writable` thread watches full inputs for room. No thread exists per command, so
//! a finished command leaves none behind.
//!
//! stderr writes of a command arrive through [`Supervisor::stderr_write`] when its
//! stderr is a file of the mount (see [`capture`]); the caller serves that file.

pub mod capture;
pub mod cgroup;
mod fork;
mod input;
mod job;
mod pump;
pub mod signals;
mod spawn;
pub mod spawner;
mod start_error;
pub mod terminal;
mod timer;
mod watcher;
mod writable;

pub use input::{Input, InputError, Stdin, KEYS_NEED_A_TERMINAL};
#[cfg(test)]
pub(crate) use job::Exit;
use job::Stop;
pub use job::{Job, JobSnapshot, RecordError, Standing, Stream, StreamBytes, Turns};
pub(crate) use pump::pipe;
pub use start_error::StartError;

use crate::spool::Spool;
use crate::supervisor::capture::{Access, Caller, Capture, Registry};
use crate::supervisor::cgroup::{Cgroups, CommandCgroup};
use crate::supervisor::pump::Pump;
use crate::supervisor::spawn::{Birth, Environment, Prepared};
use crate::supervisor::timer::{Timer, TimerAction};
use crate::supervisor::writable::{Watch, Writable};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// Joins one of the supervisor's threads, unless this is that thread: a thread that
/// reports news may answer a reader with it and hold the tree for a moment, and so
/// drop the last reference to the supervisor; it then ends on its own, having been
/// told to stop.
fn join(thread: std::thread::JoinHandle<()>) {
    if thread.thread().id() != std::thread::current().id() {
        let _ = thread.join();
    }
}

/// What a job's news is about, so that a reader waiting for one kind is not woken by
/// the other (a loud command has output news for every chunk it writes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum News {
    /// It wrote output.
    Output,
    /// Its state changed: it started or stopped, was paused or continued, one of its
    /// streams ended, its input has room.
    State,
}

/// Called with a job id whenever the job has news; must return quickly.
pub type Notify = Arc<dyn Fn(u64, News) + Send + Sync>;

/// What the supervisor needs to run commands, fixed at start.
#[derive(Debug, Clone)]
pub struct SupervisorConfig {
    pub shell: PathBuf,
    pub cwd: PathBuf,
    pub kill_grace: Duration,
    /// Try per-command cgroups named after this tag (see [`cgroup`]); None: process
    /// groups only.
    pub cgroup_tag: Option<String>,
    /// The program to run as the spawner (see [`spawner`]): this binary. None: the
    /// driver forks commands itself.
    pub spawner: Option<PathBuf>,
}

/// One command to start.
#[derive(Debug, Clone)]
pub struct SpawnRequest {
    pub name: String,
    /// The command as written: bytes, passed to the shell unchanged.
    pub text: Arc<[u8]>,
    pub timeout: Option<Duration>,
    /// Bytes of memory the command may use (`memory.max`, else an address-space limit).
    pub memory: Option<u64>,
    /// What it reads: nothing, a pipe, or a terminal.
    pub stdin: Stdin,
    /// Where it starts, when its `cwd=` says (else `--cwd`).
    pub cwd: Option<PathBuf>,
    /// Whether and how it runs in the sandbox.
    pub sandbox: crate::sandbox::Mode,
    /// The remote host it runs on through its launcher (see [`crate::hosts`]); None:
    /// this machine.
    /// An Err says why the host named cannot be used now.
    pub host: Option<Result<Arc<crate::hosts::Host>, String>>,
}

/// The descriptors a command's standard streams are made of.
struct Wiring {
    /// The child's stdin (None: `/dev/null`), stdout, and stderr if it cannot open its
    /// stderr file (on a terminal: the terminal, always).
    child: (Option<OwnedFd>, OwnedFd, OwnedFd),
    /// What the pump reads: stdout (or the terminal) and stderr (none for a terminal).
    pump: (OwnedFd, Option<OwnedFd>),
    input: Option<Input>,
}

impl Wiring {
    fn new(stdin: Stdin, watch: Watch) -> std::io::Result<Wiring> {
        if let Stdin::Terminal(size) = stdin {
            let pty = terminal::pty::Pty::open(size)?;
            return Ok(Wiring {
                child: (
                    Some(pty.slave.try_clone()?),
                    pty.slave.try_clone()?,
                    pty.slave,
                ),
                pump: (pty.master.try_clone()?, None),
                input: Some(Input::terminal(pty.master, size, Some(watch))),
            });
        }
        let (stdout_read, stdout_write) = pump::make_pipe()?;
        let (stderr_read, stderr_write) = pump::make_pipe()?;
        let (child_stdin, input) = match stdin {
            Stdin::Pipe => {
                let (read, write) = pump::pipe()?;
                pump::set_nonblocking(write.as_raw_fd());
                (Some(read), Some(Input::pipe(write, Some(watch))))
            }
            _ => (None, None),
        };
        Ok(Wiring {
            child: (child_stdin, stdout_write, stderr_write),
            pump: (stdout_read, Some(stderr_read)),
            input,
        })
    }
}

pub struct Supervisor {
    config: SupervisorConfig,
    /// The driver's environment, which every command is given (with its own name).
    environment: Environment,
    spool: Arc<Spool>,
    pump: Pump,
    timer: Timer,
    /// Reports jobs whose full input has room again.
    writable: Arc<Writable>,
    next_id: AtomicU64,
    notify: Notify,
    live: Arc<parking_lot::Mutex<HashMap<u64, Arc<Job>>>>,
    cgroups: Option<Cgroups>,
    /// One line on how commands are contained, for the log.
    containment: String,
    /// Processes reaped at start from cgroups an earlier driver left behind.
    reaped_at_start: usize,
    spawner: Option<spawner::Spawner>,
    /// Who forks commands, for the log.
    spawning: &'static str,
    /// Set when shutdown begins: no command starts after that.
    closing: AtomicBool,
    /// Held shared by every start from its look at `closing` until its job is live,
    /// and exclusively while shutdown begins: a start either finishes before shutdown
    /// counts the live jobs, or sees `closing` and does not begin.
    start_gate: parking_lot::RwLock<()>,
    registry: Arc<Registry>,
    /// Where commands' stderr files are opened (the mount's root), once it is mounted.
    stderr_dir: parking_lot::Mutex<Option<PathBuf>>,
    /// The next command's id, with its stderr file open already (see
    /// [`Supervisor::prepare`]).
    ready: parking_lot::Mutex<Option<(u64, OwnedFd)>>,
}

impl Supervisor {
    pub fn start(
        config: SupervisorConfig,
        spool: Arc<Spool>,
        notify: Notify,
    ) -> std::io::Result<Supervisor> {
        // An ignored SIGCHLD survives exec, and with it the kernel reaps children by
        // itself: the pump would never get an exit status (a busy poll on the pidfd and
        // a command that never stops, or exit code 0 made up by a waiter thread).
        // SAFETY: restoring the default disposition of one signal; no handler involved.
        unsafe {
            libc::signal(libc::SIGCHLD, libc::SIG_DFL);
        }
        let live: Arc<parking_lot::Mutex<HashMap<u64, Arc<Job>>>> = Default::default();
        let (spawner, events, spawning) = match &config.spawner {
            Some(program) => match spawner::Spawner::start(program, config.cgroup_tag.as_deref()) {
                Ok((spawner, events)) => (Some(spawner), Some(events), "a spawner process"),
                Err(error) => {
                    eprintln!("terminalfs: forking commands from the driver: cannot start the spawner: {error}");
                    (None, None, "the driver")
                }
            },
            None => (None, None, "the driver"),
        };
        let mut forkers = vec![std::process::id() as i32];
        forkers.extend(spawner.as_ref().map(spawner::Spawner::pid));
        let registry = Arc::new(Registry::new(forkers));
        let timer = Timer::start(notify.clone());
        let pump = Pump::start(
            notify.clone(),
            live.clone(),
            registry.clone(),
            events,
            timer.scheduler(),
        )?;
        let writable = Writable::start(notify.clone())?;
        let (cgroups, containment, reaped_at_start) = match &config.cgroup_tag {
            None => (None, "process groups".to_string(), 0),
            Some(tag) => match Cgroups::setup(tag) {
                Ok((cgroups, reaped)) => {
                    let memory = if cgroups.memory() {
                        "memory.max"
                    } else {
                        "an address-space limit (no memory controller)"
                    };
                    let line = format!(
                        "a cgroup per command below {}; memory= uses {memory}",
                        cgroups.parent().display()
                    );
                    (Some(cgroups), line, reaped)
                }
                Err(why) => (None, format!("process groups ({why})"), 0),
            },
        };
        Ok(Supervisor {
            environment: Environment::of_this_process(),
            config,
            spool,
            pump,
            timer,
            writable,
            next_id: AtomicU64::new(1),
            notify,
            live,
            cgroups,
            containment,
            reaped_at_start,
            spawner,
            spawning,
            closing: AtomicBool::new(false),
            start_gate: parking_lot::RwLock::new(()),
            ready: parking_lot::Mutex::new(None),
            registry,
            stderr_dir: parking_lot::Mutex::new(None),
        })
    }

    pub fn config(&self) -> &SupervisorConfig {
        &self.config
    }

    /// A job, under the next id, for a command an earlier driver left in the spool.
    pub fn restore(
        &self,
        meta: &serde_json::Value,
        capture: crate::spool::Capture,
        last_seen: Option<std::time::SystemTime>,
    ) -> Result<Arc<Job>, RecordError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        Job::restore(id, meta, capture, self.config.kill_grace, last_seen).map(Arc::new)
    }

    /// Who forks commands: "a spawner process" or "the driver".
    pub fn spawning(&self) -> &str {
        self.spawning
    }

    /// How commands are contained, in one line for the log.
    pub fn containment(&self) -> &str {
        &self.containment
    }

    /// Processes killed at start because an earlier driver on the same path left them.
    pub fn reaped_at_start(&self) -> usize {
        self.reaped_at_start
    }

    /// From now on each command opens its stderr at `dir/<stderr_file_name(id)>`,
    /// which must reach [`Supervisor::stderr_lookup`], [`Supervisor::stderr_open`],
    /// [`Supervisor::stderr_write`] and [`Supervisor::stderr_release`] (see
    /// [`capture`]). Without it, or when that open fails, stderr is a pipe.
    pub fn capture_stderr_in(&self, dir: PathBuf) {
        *self.stderr_dir.lock() = Some(dir);
    }

    /// A lookup of job `id`'s stderr file by `caller`: the name resolves only for the
    /// thread that is about to open it (see [`Registry::lookup`]).
    pub fn stderr_lookup(&self, id: u64, caller: Caller) -> Access {
        self.registry.lookup(id, caller)
    }

    /// An open of job `id`'s stderr file by `caller`: the one open of the thread that
    /// readies or starts its command, then reopens by the command's own processes (see
    /// [`Registry::open`]). Granted counts a handle.
    pub fn stderr_open(&self, id: u64, caller: Caller) -> Access {
        self.registry.open(id, caller)
    }

    /// Readies the next start while its draft is written: sets its id aside and opens
    /// its stderr file, so that the start itself has no request to make to this mount.
    /// (That open and its lookup cost a round trip about 0.25 ms longer than a start
    /// with stderr on a pipe.) Nothing when the mount is not up or shutdown has begun.
    pub fn prepare(&self) {
        let _gate = self.start_gate.read();
        if self.closing.load(Ordering::SeqCst) || self.ready.lock().is_some() {
            return;
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let Some(file) = self.open_stderr_file(id) else {
            return;
        };
        let mut ready = self.ready.lock();
        if ready.is_none() {
            *ready = Some((id, file));
        } else {
            drop(file);
            self.registry.unreserve(id);
        }
    }

    /// Sets `id` aside for this thread and opens its stderr file through the mount;
    /// None (and the id is not set aside) when the mount is not up or the open fails:
    /// its command's stderr is then a pipe. The file's name resolves for this thread
    /// alone, and the open it makes is the only one taken before the command starts,
    /// so no other process can get hold of a command's stderr by its predictable name.
    /// Opens through the mount, so never on a thread that serves it.
    fn open_stderr_file(&self, id: u64) -> Option<OwnedFd> {
        let dir = self.stderr_dir.lock().clone()?;
        self.registry.reserve(id, capture::this_caller());
        match std::fs::OpenOptions::new()
            .append(true)
            .open(dir.join(capture::stderr_file_name(id)))
        {
            Ok(file) => Some(file.into()),
            Err(_) => {
                self.registry.unreserve(id);
                None
            }
        }
    }

    /// Lets go of a readied start: its file handle on the mount would keep an idle
    /// mount busy (`fusermount3 -u` refuses it), and shutdown unmounts.
    pub fn unprepare(&self) {
        let taken = self.ready.lock().take();
        if let Some((id, file)) = taken {
            drop(file);
            self.registry.unreserve(id);
        }
    }

    /// A write to job `id`'s stderr file: what its stdout pipe holds goes first. False
    /// when the job has no such file.
    pub fn stderr_write(&self, id: u64, bytes: &[u8]) -> bool {
        let Some(capture) = self.registry.get(id) else {
            return false;
        };
        capture.stderr(bytes);
        (self.notify)(id, News::Output);
        true
    }

    /// A handle of job `id`'s stderr file was released.
    pub fn stderr_release(&self, id: u64) {
        self.registry.stderr_released(id);
        (self.notify)(id, News::State);
    }

    /// Starts a command. Never fails: a shell that cannot start gives a job that has
    /// already stopped with exit code -1 and the reason on its stderr. Opens its stderr
    /// file through the mount when none was readied, so never on a thread that serves it.
    pub fn spawn(&self, request: SpawnRequest) -> Arc<Job> {
        let _gate = self.start_gate.read();
        // A `cwd=` directive: the directory its job records as where it ran.
        let config = match &request.cwd {
            Some(cwd) => std::borrow::Cow::Owned(SupervisorConfig {
                cwd: cwd.clone(),
                ..self.config.clone()
            }),
            None => std::borrow::Cow::Borrowed(&self.config),
        };
        // On a terminal stderr is the terminal: a readied start waits for the next one.
        let ready = match request.stdin {
            Stdin::Terminal(_) => None,
            _ => self.ready.lock().take(),
        };
        let (id, stderr) = match ready {
            Some((id, file)) => (id, Some(file)),
            None => (self.next_id.fetch_add(1, Ordering::Relaxed), None),
        };
        if self.closing.load(Ordering::SeqCst) {
            // Shutdown has taken its list of jobs: nothing may start behind its back.
            let capture = self.spool.capture(&request.name, &request.text);
            let job = Job::new(id, capture, &config, None, String::new(), None, None);
            return self.failed(
                Arc::new(job),
                "terminalfs: not started: terminalfs is shutting down\n",
            );
        }
        // None readied (a burst of commands): this thread opens it now, as `prepare`
        // would have. On a terminal, stderr is the terminal: one stream, nothing to order.
        let terminal = matches!(request.stdin, Stdin::Terminal(_));
        let stderr = match stderr {
            None if !terminal => self.open_stderr_file(id),
            stderr => stderr,
        };
        let cgroup: Option<CommandCgroup> = self
            .cgroups
            .as_ref()
            .and_then(|cgroups| cgroups.take(request.memory).ok());
        let rlimit = match (&cgroup, request.memory) {
            (Some(_), Some(_)) if self.cgroups.as_ref().is_some_and(Cgroups::memory) => None,
            (_, memory) => memory,
        };
        let containment = match &cgroup {
            Some(cgroup) => format!("cgroup {}", cgroup.path().display()),
            None => "process group".to_string(),
        };
        let procs = cgroup.as_ref().map(|c| c.procs().clone());
        let memory = request.memory.map(|bytes| (bytes, rlimit.is_some()));
        let watch = Watch {
            job: id,
            writable: self.writable.clone(),
        };
        let wiring = match Wiring::new(request.stdin, watch) {
            Ok(wiring) => wiring,
            Err(error) => {
                let capture = self.spool.capture(&request.name, &request.text);
                let job = Job::new(id, capture, &config, cgroup, containment, memory, None);
                let what = match request.stdin {
                    Stdin::Terminal(_) => "a terminal",
                    _ => "pipes",
                };
                let message = format!("terminalfs: cannot make {what}: {error}\n");
                return self.failed(Arc::new(job), &message);
            }
        };
        let Wiring {
            child: (stdin, stdout_write, stderr_write),
            pump,
            input,
        } = wiring;
        let child = (stdin, stdout_write, stderr_write, stderr);
        let capture = self.spool.capture(&request.name, &request.text);
        let job = Job::new(id, capture, &config, cgroup, containment, memory, input);
        let job = Arc::new(job);
        let launched = match &request.host {
            None => None,
            Some(Err(why)) => {
                drop(child);
                drop(pump);
                return self.failed(job, &format!("terminalfs: {why}\n"));
            }
            Some(Ok(host)) => {
                let mode = match request.stdin {
                    Stdin::Terminal(_) => crate::hosts::driver::Mode::Terminal,
                    Stdin::Pipe => crate::hosts::driver::Mode::Pipe,
                    _ => crate::hosts::driver::Mode::Closed,
                };
                match crate::hosts::driver::launch(host, &request.name, &request.text, mode) {
                    Ok(launched) => {
                        job.set_remote(launched.remote.clone());
                        launched.remote.belongs_to(Arc::downgrade(&job));
                        Some(launched)
                    }
                    Err(message) => {
                        drop(child);
                        drop(pump);
                        return self.failed(job, &format!("terminalfs: {message}\n"));
                    }
                }
            }
        };
        let child = match &launched {
            Some(launched) if child.0.is_none() => {
                let stdin = launched.stdin.as_ref().and_then(|fd| fd.try_clone().ok());
                (stdin, child.1, child.2, child.3)
            }
            _ => child,
        };
        match self.fork(
            &job,
            &request,
            launched.as_ref(),
            child,
            pump,
            procs,
            rlimit,
        ) {
            Ok((pid, birth)) => {
                job.mark_started(pid, SystemTime::now(), Instant::now());
                self.live.lock().insert(id, job.clone());
                self.pump.started(id, pid, birth);
                if let Some(limit) = request.timeout {
                    self.timer.schedule(
                        Instant::now() + limit,
                        TimerAction::Timeout(Arc::downgrade(&job), limit),
                    );
                }
            }
            Err(error) => {
                self.pump.abandon(id);
                return self.failed(job, &error.stderr_line());
            }
        }
        (self.notify)(id, News::State);
        job
    }

    /// A job that never ran: it has stopped with exit code -1 and `message` on its
    /// stderr, and the cgroup made for it is gone.
    fn failed(&self, job: Arc<Job>, message: &str) -> Arc<Job> {
        // The id it may have been given with a readied stderr file is used up.
        self.registry.unreserve(job.id());
        job.mark_failed_to_start(message);
        job.remove_cgroup_if_done();
        (self.notify)(job.id(), News::State);
        job
    }

    /// Stops a running job: SIGTERM to its group now, SIGKILL after the grace period.
    /// Killing a stopped job is not an error and does nothing.
    pub fn kill(&self, job: &Arc<Job>, why: &str) {
        self.stop(job, Stop::Kill(why.to_string()));
    }

    fn stop(&self, job: &Arc<Job>, why: Stop) {
        if job.stop(why) {
            self.timer.schedule(
                Instant::now() + self.config.kill_grace,
                TimerAction::Kill(job.clone()),
            );
            (self.notify)(job.id(), News::State);
        }
    }

    /// Sends `signal` to the whole of a running job (its process group and cgroup);
    /// SIGSTOP and SIGCONT also mark it paused or running again. Nothing for a job
    /// that has stopped.
    pub fn signal(&self, job: &Arc<Job>, signal: i32) {
        if job.signal(signal) {
            (self.notify)(job.id(), News::State);
        }
    }

    /// Begins shutdown: waits for starts under way, lets no other start begin, and
    /// returns how many commands run now (the ones [`Supervisor::shutdown`] stops).
    pub fn close(&self) -> usize {
        let _gate = self.start_gate.write();
        self.closing.store(true, Ordering::SeqCst);
        self.unprepare();
        self.live_count()
    }

    /// Stops every live job, and whatever stopped jobs left running in their cgroups,
    /// the same way (SIGTERM, then SIGKILL after the grace period), and waits (up to
    /// the grace period plus a margin) until their shells have been reaped.
    pub fn shutdown(&self) {
        self.close();
        let jobs: Vec<Arc<Job>> = self.live.lock().values().cloned().collect();
        for job in &jobs {
            self.stop(job, Stop::Shutdown);
        }
        // A stopped job is no longer live, but a daemon it started may still be in its
        // cgroup; it gets its SIGTERM and grace too, not just the final SIGKILL. (The
        // live jobs' cgroups have had theirs: one SIGTERM each, not two.)
        let signalled: Vec<&std::path::Path> =
            jobs.iter().filter_map(|job| job.cgroup_dir()).collect();
        if let Some(cgroups) = &self.cgroups {
            cgroups.signal_all(libc::SIGTERM, &signalled);
        }
        let grace_over = Instant::now() + self.config.kill_grace;
        let deadline = grace_over + Duration::from_secs(2);
        let mut grace_kill_sent = false;
        while Instant::now() < deadline
            && (jobs
                .iter()
                .any(|job| job.is_running() || job.cgroup_populated())
                || self.cgroups.as_ref().is_some_and(Cgroups::populated))
        {
            if !grace_kill_sent && Instant::now() >= grace_over {
                if let Some(cgroups) = &self.cgroups {
                    cgroups.signal_all(libc::SIGKILL, &[]);
                }
                grace_kill_sent = true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        for job in &jobs {
            job.signal_group(libc::SIGKILL);
        }
        if let Some(cgroups) = &self.cgroups {
            cgroups.tear_down();
        }
    }

    /// For tests: exits are collected without pidfds (as on macOS), and the pump hears
    /// of each start only after it has taken that start's exit.
    #[cfg(test)]
    fn announce_starts_after_exits(&self) {
        self.pump.announce_starts_after_exits();
    }

    /// Jobs whose shell has not been reaped yet.
    pub fn live_count(&self) -> usize {
        self.live.lock().len()
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        self.timer.stop();
        self.pump.stop();
        self.writable.stop();
        // Whatever path the driver leaves by, nothing it started stays behind.
        if let Some(cgroups) = &self.cgroups {
            cgroups.tear_down();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A supervisor that forks by itself (no spawner process), with no cgroups.
    fn supervisor(state: &std::path::Path) -> Supervisor {
        let spool = Spool::open(
            crate::spool::SpoolConfig {
                dir: state.join("spool"),
                max_output: 4096,
                max_spool: 1 << 30,
            },
            |_| {},
        )
        .expect("the spool starts");
        Supervisor::start(
            SupervisorConfig {
                shell: PathBuf::from("/bin/sh"),
                cwd: std::env::temp_dir(),
                kill_grace: Duration::from_millis(200),
                cgroup_tag: None,
                spawner: None,
            },
            spool,
            Arc::new(|_, _| {}),
        )
        .expect("the supervisor starts")
    }

    #[test]
    fn an_exit_taken_before_its_start_is_announced_is_kept() {
        let state = tempfile::tempdir().expect("a temporary directory");
        let supervisor = supervisor(state.path());
        supervisor.announce_starts_after_exits();
        let jobs: Vec<Arc<Job>> = (0..5)
            .map(|n| {
                supervisor.spawn(SpawnRequest {
                    name: format!("quick{n}"),
                    text: Arc::from(format!("echo said {n}; exit {n}").as_bytes()),
                    timeout: None,
                    memory: None,
                    stdin: Stdin::Closed,
                    cwd: None,
                    sandbox: Default::default(),
                    host: None,
                })
            })
            .collect();
        let deadline = Instant::now() + Duration::from_secs(30);
        while jobs.iter().any(|job| job.is_running()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        for (n, job) in jobs.iter().enumerate() {
            let life = job.snapshot().life;
            match life.exit() {
                Some(exit) => assert_eq!(exit.code, n as i32, "job {n}"),
                None => panic!("job {n} never stopped: {life:?}"),
            }
            let (said, _) = job.read(Stream::Stdout, 0, 4096);
            assert_eq!(String::from_utf8_lossy(&said), format!("said {n}\n"));
        }
        supervisor.shutdown();
    }

    #[test]
    fn close_counts_every_start_that_races_it_and_refuses_the_rest() {
        let state = tempfile::tempdir().expect("a temporary directory");
        let supervisor = Arc::new(supervisor(state.path()));
        let started = Arc::new(AtomicU64::new(0));
        // The starters live until the end: a shell's parent-death signal follows the
        // thread that forked it.
        let (jobs_sender, jobs_receiver) = std::sync::mpsc::channel();
        let finish = Arc::new(std::sync::Barrier::new(5));
        let starters: Vec<_> = (0..4)
            .map(|i| {
                let (supervisor, started) = (supervisor.clone(), started.clone());
                let (jobs_sender, finish) = (jobs_sender.clone(), finish.clone());
                std::thread::spawn(move || {
                    for n in 0..50 {
                        let job = supervisor.spawn(SpawnRequest {
                            name: format!("s{i}-{n}"),
                            text: Arc::from(&b"sleep 30"[..]),
                            timeout: None,
                            memory: None,
                            stdin: Stdin::Closed,
                            cwd: None,
                            sandbox: Default::default(),
                            host: None,
                        });
                        jobs_sender.send(job).expect("the test collects jobs");
                        started.fetch_add(1, Ordering::SeqCst);
                    }
                    finish.wait();
                })
            })
            .collect();
        drop(jobs_sender);
        // Close while the starters are busy: after a few starts, well before the last.
        let deadline = Instant::now() + Duration::from_secs(30);
        while started.load(Ordering::SeqCst) < 8 && Instant::now() < deadline {
            std::thread::yield_now();
        }
        let counted = supervisor.close();
        let jobs: Vec<Arc<Job>> = jobs_receiver.iter().take(200).collect();
        let running = jobs.iter().filter(|job| job.is_running()).count();
        let refused: Vec<&Arc<Job>> = jobs
            .iter()
            .filter(|job| {
                job.snapshot()
                    .life
                    .exit()
                    .is_some_and(|exit| exit.code == -1)
            })
            .collect();
        supervisor.shutdown();
        finish.wait();
        for starter in starters {
            starter.join().expect("a starter finishes");
        }
        assert!(
            counted >= 8,
            "close came after at least 8 starts: {counted}"
        );
        assert_eq!(running, counted, "every start that ran was counted");
        assert_eq!(running + refused.len(), jobs.len(), "the rest never began");
        // Starts after close (all but the slowest machines have some) say why.
        for job in refused {
            let (said, _) = job.read(Stream::Stderr, 0, 4096);
            assert_eq!(
                String::from_utf8_lossy(&said),
                "terminalfs: not started: terminalfs is shutting down\n"
            );
            // The message is all of stderr: nothing was dropped to make room for it.
            assert_eq!(job.snapshot().stderr.dropped, 0);
        }
        assert!(
            jobs.iter().all(|job| !job.is_running()),
            "shutdown stopped them"
        );
    }
}
