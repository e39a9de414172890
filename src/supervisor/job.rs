//! One command's life as the supervisor sees it: its phase, its captured output (on
//! disk, see [`crate::spool`]) and the facts `result.json` reports. All of it sits behind
//! one lock per job; the pump holds it only to append a chunk or record an exit, readers
//! only to copy bytes out.
//!
//! The job's record (everything but its output) is saved next to its output when it
//! starts, when its shell stops and when its output ends, so a restarted driver can
//! bring it back with [`Job::restore`].

use crate::spool::{Capture, Extent, Store};
use crate::supervisor::cgroup::CommandCgroup;
use crate::supervisor::input::Input;
use crate::supervisor::terminal::TerminalSize;
use parking_lot::Mutex;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub use crate::spool::Stream;

/// The reason a command that was running when the driver stopped comes back with.
pub const DRIVER_STOPPED: &str = "the driver stopped while it ran";

/// Bytes of one stream, for `result.json` and `cmd/index.md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StreamBytes {
    /// Bytes the command wrote.
    pub bytes: u64,
    /// Bytes held (head and tail).
    pub kept: u64,
    /// Bytes not held: dropped between head and tail, or never stored.
    pub dropped: u64,
}

impl StreamBytes {
    fn of(extent: &Extent) -> StreamBytes {
        StreamBytes {
            bytes: extent.written,
            kept: extent.kept.held(),
            dropped: extent.dropped(),
        }
    }
}

/// How a command's shell ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exit {
    /// The exit status, 128+N after signal N, or -1 when the shell never started.
    pub code: i32,
    pub signal: Option<i32>,
    pub user_ms: u64,
    pub sys_ms: u64,
    pub max_rss_kib: u64,
    /// Where `max_rss_kib` comes from; empty when there is no figure.
    pub max_rss_source: String,
}

impl Exit {
    /// The account of a shell that never ran (or whose end was never seen): -1, no usage.
    fn never_ran() -> Exit {
        Exit {
            code: -1,
            signal: None,
            user_ms: 0,
            sys_ms: 0,
            max_rss_kib: 0,
            max_rss_source: String::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    /// Made; its shell is not started yet.
    Starting,
    /// Spawned; `pid` is the shell and also the process group id.
    Running { pid: i32 },
    /// The shell has been reaped (or never started).
    Stopped(Exit),
}

/// A copy of everything about a job except its output bytes.
#[derive(Debug, Clone)]
pub struct JobSnapshot {
    pub phase: Phase,
    pub pid: Option<i32>,
    pub started_at: Option<SystemTime>,
    pub finished_at: Option<SystemTime>,
    pub duration: Option<Duration>,
    pub killed: bool,
    pub timed_out: bool,
    pub reason: Option<String>,
    pub stdout: StreamBytes,
    pub stderr: StreamBytes,
    pub output: StreamBytes,
    /// How the command is contained: `cgroup <path>` or `process group`.
    pub containment: String,
    /// The memory limit in bytes, if any.
    pub memory_limit: Option<u64>,
    /// For a command on a terminal: its size and the cursor (row, column from 0).
    pub terminal: Option<(TerminalSize, (u16, u16))>,
}

struct State {
    phase: Phase,
    pid: Option<i32>,
    capture: Capture,
    started_at: Option<SystemTime>,
    started: Option<Instant>,
    finished_at: Option<SystemTime>,
    duration: Option<Duration>,
    killed: bool,
    timed_out: bool,
    reason: Option<String>,
    open_pipes: u8,
    kill_grace: Duration,
    /// Stopped by the driver's shutdown (or found running after a crash): it did not
    /// get to finish, whatever its exit code says.
    interrupted: bool,
    /// Stopped by a STOP written to `kill` and not continued since.
    paused: bool,
}

pub struct Job {
    id: u64,
    name: String,
    state: Mutex<State>,
    cgroup: Option<CommandCgroup>,
    containment: String,
    /// (bytes, enforced as an address-space rlimit rather than by the cgroup)
    memory: Option<(u64, bool)>,
    /// Its stdin pipe or terminal, when it has one.
    input: Option<Input>,
}

impl Job {
    pub(crate) fn new(
        id: u64,
        capture: Capture,
        kill_grace: Duration,
        cgroup: Option<CommandCgroup>,
        containment: String,
        memory: Option<(u64, bool)>,
        input: Option<Input>,
    ) -> Job {
        // A terminal is stdout and stderr at once: one stream to read, not two.
        let open_pipes = if input.as_ref().is_some_and(Input::is_terminal) {
            1
        } else {
            2
        };
        Job {
            id,
            name: capture.name().to_string(),
            cgroup,
            containment,
            memory,
            input,
            state: Mutex::new(State {
                phase: Phase::Starting,
                pid: None,
                capture,
                started_at: None,
                started: None,
                finished_at: None,
                duration: None,
                killed: false,
                timed_out: false,
                reason: None,
                // The pipes exist from the start; the pump counts them closed.
                open_pipes,
                kill_grace,
                interrupted: false,
                paused: false,
            }),
        }
    }

    /// A job an earlier driver left in the spool, from the record it saved; it has
    /// stopped. One that was still running then comes back as stopped by the driver.
    pub fn restore(
        id: u64,
        meta: &Value,
        mut capture: Capture,
        kill_grace: Duration,
    ) -> Result<Job, String> {
        let name = meta["name"].as_str().ok_or("the record has no name")?;
        let time = |key: &str| {
            meta[key]
                .as_u64()
                .map(|ms| UNIX_EPOCH + Duration::from_millis(ms))
        };
        let flag = |key: &str| meta[key].as_bool().unwrap_or(false);
        let number = |value: &Value, key: &str| value[key].as_u64().unwrap_or(0);
        let exit = meta.get("exit").filter(|e| !e.is_null()).map(|e| Exit {
            code: e["code"].as_i64().unwrap_or(-1) as i32,
            signal: e["signal"].as_i64().map(|s| s as i32),
            user_ms: number(e, "user_ms"),
            sys_ms: number(e, "sys_ms"),
            max_rss_kib: number(e, "max_rss_kib"),
            max_rss_source: e["max_rss_source"].as_str().unwrap_or("").to_string(),
        });
        let interrupted = exit.is_none() || flag("interrupted");
        let started_at = time("started_at_ms");
        let finished_at = time("finished_at_ms").or(started_at);
        let reason = if interrupted {
            Some(DRIVER_STOPPED.to_string())
        } else {
            meta["reason"].as_str().map(str::to_string)
        };
        capture.seal();
        let job = Job {
            id,
            name: name.to_string(),
            cgroup: None,
            containment: meta["containment"].as_str().unwrap_or("").to_string(),
            memory: meta["memory_limit"].as_u64().map(|bytes| (bytes, false)),
            input: None,
            state: Mutex::new(State {
                phase: Phase::Stopped(exit.unwrap_or_else(Exit::never_ran)),
                pid: meta["pid"].as_i64().map(|p| p as i32),
                capture,
                started_at,
                started: None,
                finished_at,
                duration: meta["duration_ms"]
                    .as_u64()
                    .map(Duration::from_millis)
                    .or_else(|| finished_at?.duration_since(started_at?).ok()),
                killed: flag("killed"),
                timed_out: flag("timed_out"),
                reason,
                open_pipes: 0,
                kill_grace,
                interrupted,
                paused: false,
            }),
        };
        if interrupted {
            // Said once, so the next restart reads the same story.
            let state = job.state.lock();
            state.capture.save(&job.record(&state));
        }
        Ok(job)
    }

    /// What a restart needs to bring the job back (everything but its output).
    fn record(&self, state: &State) -> Value {
        let ms = |t: Option<SystemTime>| {
            t.and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map(|d| d.as_millis() as u64)
        };
        let exit = match &state.phase {
            Phase::Starting | Phase::Running { .. } => Value::Null,
            Phase::Stopped(exit) => json!({
                "code": exit.code,
                "signal": exit.signal,
                "user_ms": exit.user_ms,
                "sys_ms": exit.sys_ms,
                "max_rss_kib": exit.max_rss_kib,
                "max_rss_source": exit.max_rss_source,
            }),
        };
        json!({
            "name": self.name,
            "pid": state.pid,
            "exit": exit,
            "started_at_ms": ms(state.started_at),
            "finished_at_ms": ms(state.finished_at),
            "duration_ms": state.duration.map(|d| d.as_millis() as u64),
            "killed": state.killed,
            "timed_out": state.timed_out,
            "interrupted": state.interrupted,
            "reason": state.reason,
            "containment": self.containment,
            "memory_limit": self.memory.map(|(bytes, _)| bytes),
        })
    }

    /// Saves the record; once the shell has stopped and no pipe is left open, the
    /// output is complete and its files are closed.
    fn save(&self, state: &mut State) {
        if state.open_pipes == 0 && matches!(state.phase, Phase::Stopped(_)) {
            state.capture.seal();
        }
        state.capture.save(&self.record(state));
    }

    /// The job's files in the spool.
    pub fn store(&self) -> Arc<Store> {
        self.state.lock().capture.store().clone()
    }

    /// Its output was evicted from the spool to make room.
    pub fn evicted(&self) -> bool {
        self.state.lock().capture.store().evicted()
    }

    /// The driver is stopping while the job runs: whatever happens next, it did not
    /// finish on its own.
    pub(crate) fn mark_interrupted(&self) {
        let mut state = self.state.lock();
        if matches!(state.phase, Phase::Running { .. }) {
            state.interrupted = true;
        }
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    /// Whether the job runs but was paused (SIGSTOP) and not continued since.
    pub fn is_paused(&self) -> bool {
        let state = self.state.lock();
        state.paused && matches!(state.phase, Phase::Running { .. })
    }

    /// Records a pause (SIGSTOP sent) or its end (SIGCONT sent); returns whether that
    /// changed anything.
    pub(crate) fn set_paused(&self, paused: bool) -> bool {
        let mut state = self.state.lock();
        let changed = state.paused != paused;
        state.paused = paused;
        changed
    }

    pub(crate) fn kill_grace(&self) -> Duration {
        self.state.lock().kill_grace
    }

    pub(crate) fn mark_started(&self, pid: i32, at: SystemTime, instant: Instant) {
        let mut state = self.state.lock();
        state.phase = Phase::Running { pid };
        state.pid = Some(pid);
        state.started_at = Some(at);
        state.started = Some(instant);
        self.save(&mut state);
    }

    pub(crate) fn mark_failed_to_start(&self, message: &str) {
        let mut state = self.state.lock();
        state.capture.append(Stream::Stderr, message.as_bytes());
        state.open_pipes = 0;
        state.phase = Phase::Stopped(Exit::never_ran());
        let now = SystemTime::now();
        state.started_at = Some(now);
        state.finished_at = Some(now);
        state.duration = Some(Duration::ZERO);
        state.reason = Some(
            message
                .trim_end()
                .trim_start_matches("terminalfs: ")
                .to_string(),
        );
        self.save(&mut state);
    }

    /// Appends a chunk the pump read from one of the command's pipes (stdout or
    /// stderr, or its terminal, whose screen it also draws), in the order the chunks
    /// must appear in `output`.
    pub(crate) fn append(&self, stream: Stream, bytes: &[u8]) {
        self.state.lock().capture.append(stream, bytes);
        if let Some(input) = &self.input {
            input.displayed(bytes);
        }
    }

    /// The command's stdin pipe or terminal, if it was started with one.
    pub fn input(&self) -> Option<&Input> {
        self.input.as_ref()
    }

    pub(crate) fn pipe_closed(&self) {
        let mut state = self.state.lock();
        state.open_pipes = state.open_pipes.saturating_sub(1);
        if state.open_pipes == 0 && matches!(state.phase, Phase::Stopped(_)) {
            self.save(&mut state);
        }
    }

    pub(crate) fn mark_exited(&self, exit: Exit) {
        let mut state = self.state.lock();
        state.finished_at = Some(SystemTime::now());
        state.duration = state.started.map(|started| started.elapsed());
        if state.reason.is_none() {
            state.reason = self.memory_reason(&exit);
        }
        state.phase = Phase::Stopped(exit);
        self.save(&mut state);
    }

    /// Why a command with a memory limit failed, when the limit is the likely cause.
    fn memory_reason(&self, exit: &Exit) -> Option<String> {
        let (bytes, rlimit) = self.memory?;
        let limit = crate::units::format_size(bytes);
        if self.cgroup.as_ref().is_some_and(CommandCgroup::oom_killed) {
            return Some(format!(
                "killed: it exceeded its memory limit (memory={limit}, cgroup memory.max)"
            ));
        }
        (rlimit && exit.code != 0).then(|| {
            format!(
                "failed with a memory limit of {limit} in force (an address-space limit, as no \
                 memory controller is available); allocations beyond it fail"
            )
        })
    }

    /// The command's cgroup directory, if it has one.
    pub(crate) fn cgroup_dir(&self) -> Option<&std::path::Path> {
        self.cgroup.as_ref().map(CommandCgroup::path)
    }

    /// Whether any process is left in the command's cgroup.
    pub fn cgroup_populated(&self) -> bool {
        self.cgroup.as_ref().is_some_and(CommandCgroup::populated)
    }

    /// Removes the cgroup when the shell is gone and nothing is left in it. Returns
    /// true when there is no cgroup (any more).
    pub(crate) fn remove_cgroup_if_done(&self) -> bool {
        let Some(cgroup) = &self.cgroup else {
            return true;
        };
        if self.is_running() || cgroup.populated() {
            return false;
        }
        cgroup.remove()
    }

    /// Records that the time limit was hit; false when the shell had already stopped.
    pub(crate) fn mark_timed_out(&self, limit: Duration) -> bool {
        let mut state = self.state.lock();
        if !matches!(state.phase, Phase::Running { .. }) {
            return false;
        }
        state.timed_out = true;
        state.killed = true;
        state.reason = Some(format!(
            "timed out: it ran longer than its limit of {} and was stopped",
            crate::units::format_duration(limit)
        ));
        true
    }

    /// Sends `signal` to the job's process group while anything of it may be alive
    /// (its shell runs, or a descendant still holds its pipes). A non-empty `why` is
    /// recorded as the reason, but only when the shell itself was still running.
    /// Returns whether a signal was sent.
    pub(crate) fn signal_group(&self, signal: i32, why: &str) -> bool {
        let mut state = self.state.lock();
        let running = matches!(state.phase, Phase::Running { .. });
        let Some(pgid) = state.pid else {
            return false;
        };
        // Until the shell is reaped its pid, and so its group id, cannot be reused.
        // After that the group is signalled only while no process holds that pid: a
        // group outlives its leader only while the pid stays taken, so if a process
        // has it now, the group is gone and a group of that id belongs to a stranger.
        let group_alive = running || (state.open_pipes > 0 && !pid_in_use(pgid));
        let cgroup_alive = self.cgroup_populated();
        if !group_alive && !cgroup_alive {
            return false;
        }
        if running && !why.is_empty() && !state.killed {
            state.killed = true;
            state.reason = Some(why.to_string());
        }
        if group_alive {
            // SAFETY: killpg only sends a signal; a vanished group gives ESRCH.
            unsafe {
                libc::killpg(pgid, signal);
            }
        }
        if let Some(cgroup) = &self.cgroup {
            // Whatever left the process group (setsid) is reached through the cgroup;
            // the group's members already have their signal.
            cgroup.signal(signal, group_alive.then_some(pgid));
        }
        true
    }

    /// None while the shell runs; then whether it succeeded: exit 0 and not stopped
    /// by a kill or a time limit.
    pub fn outcome(&self) -> Option<bool> {
        let state = self.state.lock();
        match &state.phase {
            Phase::Starting | Phase::Running { .. } => None,
            Phase::Stopped(exit) => Some(exit.code == 0 && !state.killed && !state.interrupted),
        }
    }

    /// True until the shell has been reaped (or failed to start).
    pub fn is_running(&self) -> bool {
        !matches!(self.state.lock().phase, Phase::Stopped(_))
    }

    pub fn snapshot(&self) -> JobSnapshot {
        let state = self.state.lock();
        let bytes = |stream| StreamBytes::of(&state.capture.extent(stream));
        JobSnapshot {
            phase: state.phase.clone(),
            pid: state.pid,
            started_at: state.started_at,
            finished_at: state.finished_at,
            duration: state
                .duration
                .or_else(|| state.started.map(|s| s.elapsed())),
            killed: state.killed,
            timed_out: state.timed_out,
            reason: state.reason.clone(),
            stdout: bytes(Stream::Stdout),
            stderr: bytes(Stream::Stderr),
            output: bytes(Stream::Output),
            containment: self.containment.clone(),
            memory_limit: self.memory.map(|(bytes, _)| bytes),
            terminal: self.input.as_ref().and_then(Input::terminal_state),
        }
    }

    /// What a file of `stream` can show now.
    pub fn extent(&self, stream: Stream) -> Extent {
        self.state.lock().capture.extent(stream)
    }

    /// Stored bytes of `stream` from absolute offset `from` (at most `max`; bytes no
    /// longer held read as NUL), plus whether the shell still runs.
    pub fn read(&self, stream: Stream, from: u64, max: usize) -> (Vec<u8>, bool) {
        let state = self.state.lock();
        let mut out = Vec::new();
        state.capture.read(stream, from, max, &mut out);
        (out, !matches!(state.phase, Phase::Stopped(_)))
    }
}

/// Whether some process has pid `pid` now (one we may not signal counts too).
fn pid_in_use(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists and may be signalled.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spool::{prepare_dir, Spool, SpoolConfig};
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};

    /// A job whose shell had pid `pid` and has been reaped, with its pipes still open
    /// (as a descendant holding them would leave them).
    fn reaped_job(dir: &std::path::Path, pid: i32) -> Job {
        prepare_dir(dir).expect("a fresh state directory");
        let spool = Spool::open(
            SpoolConfig {
                dir: dir.to_path_buf(),
                max_output: 1024,
                max_spool: 1 << 20,
            },
            |_| {},
        )
        .expect("the spool opens");
        let capture = spool.capture("reaped", b"true");
        let job = Job::new(
            1,
            capture,
            Duration::from_secs(1),
            None,
            String::new(),
            None,
            None,
        );
        job.mark_started(pid, SystemTime::now(), Instant::now());
        job.mark_exited(Exit {
            code: 0,
            signal: None,
            user_ms: 0,
            sys_ms: 0,
            max_rss_kib: 0,
            max_rss_source: String::new(),
        });
        job
    }

    fn gone(pid: i32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => stat
                .rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        }
    }

    #[test]
    fn a_group_id_taken_by_another_process_is_not_signalled() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        // The shell's pid came back to another process, which leads its own group.
        let mut stranger = Command::new("sleep")
            .arg("60")
            .process_group(0)
            .spawn()
            .expect("sleep starts");
        let job = reaped_job(&dir.path().join("spool"), stranger.id() as i32);
        let sent = job.signal_group(libc::SIGTERM, "");
        let alive = stranger.try_wait().expect("try_wait").is_none();
        let _ = stranger.kill();
        let _ = stranger.wait();
        assert!(alive, "the other process's group got the signal");
        assert!(!sent);
    }

    #[test]
    fn a_group_that_outlived_its_reaped_shell_is_signalled() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut shell = Command::new("sh")
            .args(["-c", "sleep 60 & echo $!"])
            .process_group(0)
            .stdout(Stdio::piped())
            .spawn()
            .expect("sh starts");
        let mut line = String::new();
        std::io::BufReader::new(shell.stdout.take().expect("piped"))
            .read_line(&mut line)
            .expect("sh prints the pid of its child");
        let child: i32 = line.trim().parse().expect("a pid");
        shell.wait().expect("the shell is reaped");
        let job = reaped_job(&dir.path().join("spool"), shell.id() as i32);
        assert!(job.signal_group(libc::SIGKILL, ""));
        let deadline = Instant::now() + Duration::from_secs(20);
        while !gone(child) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let stopped = gone(child);
        if !stopped {
            // SAFETY: only a signal to the process this test started.
            unsafe {
                libc::kill(child, libc::SIGKILL);
            }
        }
        assert!(stopped, "the group's remaining member was not signalled");
    }
}
