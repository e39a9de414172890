//! One command's life as the supervisor sees it: its phase, its three rings and the
//! facts `result.json` reports. All of it sits behind one lock per job; the pump holds
//! it only to append a chunk or record an exit, readers only to copy bytes out.

use crate::supervisor::cgroup::CommandCgroup;
use crate::supervisor::input::Input;
use crate::supervisor::ring::{Ring, View};
use crate::supervisor::terminal::TerminalSize;
use parking_lot::Mutex;
use std::time::{Duration, Instant, SystemTime};

/// Which captured stream a file shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stream {
    Stdout,
    Stderr,
    /// stdout and stderr interleaved in the order the pump received them.
    Output,
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
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
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
    /// (bytes written, bytes dropped) for stdout, stderr, output.
    pub stdout: (u64, u64),
    pub stderr: (u64, u64),
    pub output: (u64, u64),
    /// True while some process still holds the command's stdout or stderr open.
    pub pipes_open: bool,
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
    stdout: Ring,
    stderr: Ring,
    output: Ring,
    started_at: Option<SystemTime>,
    started: Option<Instant>,
    finished_at: Option<SystemTime>,
    duration: Option<Duration>,
    killed: bool,
    timed_out: bool,
    reason: Option<String>,
    open_pipes: u8,
    kill_grace: Duration,
}

pub struct Job {
    id: u64,
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
        max_output: usize,
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
            cgroup,
            containment,
            memory,
            input,
            state: Mutex::new(State {
                phase: Phase::Running { pid: 0 },
                pid: None,
                stdout: Ring::new(max_output),
                stderr: Ring::new(max_output),
                output: Ring::new(max_output),
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
            }),
        }
    }

    pub fn id(&self) -> u64 {
        self.id
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
    }

    pub(crate) fn mark_failed_to_start(&self, message: &str) {
        let mut state = self.state.lock();
        state.stderr.write(message.as_bytes());
        state.output.write(message.as_bytes());
        state.open_pipes = 0;
        state.phase = Phase::Stopped(Exit {
            code: -1,
            signal: None,
            user_ms: 0,
            sys_ms: 0,
            max_rss_kib: 0,
        });
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
    }

    /// Appends a chunk the pump read from one of the command's pipes (or its terminal,
    /// whose screen it also draws).
    pub(crate) fn append(&self, stream: Stream, bytes: &[u8]) {
        {
            let mut state = self.state.lock();
            match stream {
                Stream::Stdout => state.stdout.write(bytes),
                Stream::Stderr => state.stderr.write(bytes),
                Stream::Output => {}
            }
            state.output.write(bytes);
        }
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
    }

    pub(crate) fn mark_exited(&self, exit: Exit) {
        let mut state = self.state.lock();
        state.finished_at = Some(SystemTime::now());
        state.duration = state.started.map(|started| started.elapsed());
        if state.reason.is_none() {
            state.reason = self.memory_reason(&exit);
        }
        state.phase = Phase::Stopped(exit);
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
        let group_alive = running || state.open_pipes > 0;
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
            Phase::Running { .. } => None,
            Phase::Stopped(exit) => Some(exit.code == 0 && !state.killed),
        }
    }

    pub fn is_running(&self) -> bool {
        matches!(self.state.lock().phase, Phase::Running { .. })
    }

    pub fn snapshot(&self) -> JobSnapshot {
        let state = self.state.lock();
        let counts = |ring: &Ring| (ring.end(), ring.dropped());
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
            stdout: counts(&state.stdout),
            stderr: counts(&state.stderr),
            output: counts(&state.output),
            pipes_open: state.open_pipes > 0,
            containment: self.containment.clone(),
            memory_limit: self.memory.map(|(bytes, _)| bytes),
            terminal: self.input.as_ref().and_then(Input::terminal_state),
        }
    }

    /// The view a fresh open of `stream` gets.
    pub fn fresh_view(&self, stream: Stream) -> View {
        let state = self.state.lock();
        View::fresh(ring(&state, stream))
    }

    /// A view's current size.
    pub fn view_size(&self, stream: Stream, view: &View) -> u64 {
        let state = self.state.lock();
        view.size(ring(&state, stream))
    }

    /// Bytes of a view, plus whether the shell is still running (for blocking reads).
    pub fn read_view(
        &self,
        stream: Stream,
        view: &View,
        offset: u64,
        max: usize,
    ) -> (Vec<u8>, bool) {
        let state = self.state.lock();
        let bytes = view.read(ring(&state, stream), offset, max);
        (bytes, matches!(state.phase, Phase::Running { .. }))
    }
}

fn ring(state: &State, stream: Stream) -> &Ring {
    match stream {
        Stream::Stdout => &state.stdout,
        Stream::Stderr => &state.stderr,
        Stream::Output => &state.output,
    }
}
