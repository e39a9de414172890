//! One command's life as the supervisor sees it: where it is in its [`Life`] (each
//! stage carrying its own facts, from which `result.json`'s are read), and its captured
//! output (on disk, see [`crate::spool`]).
//!
//! Three locks, taken in this order when more than one is held: the capture (held
//! across the spool's writes and reads: the pump's appends, readers copying bytes out,
//! the seal), the state (its life; never held across I/O, so the tree may wait for
//! it), and what is shown (each file's extent and growth, published after the bytes
//! are on disk). `stat`, `ls` and `/events` read the state and what is shown, never
//! the capture, so a slow state directory holds up only those reading or writing it.
//!
//! The job's record (everything but its output) is saved next to its output when it
//! starts, when its shell stops and when its output ends, so a restarted driver can
//! bring it back with [`Job::restore`].

mod life;
mod record;
#[cfg(test)]
mod tests;

use crate::panics::Watched;
use crate::spool::{Capture, Extent, Held, Store};
use crate::supervisor::cgroup::CommandCgroup;
use crate::supervisor::input::Input;
use crate::supervisor::terminal::{Screen, TerminalSize};
use parking_lot::Mutex;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub use crate::spool::Stream;
pub use life::*;
use record::KeptScreen;
pub use record::{Launch, RecordError};

/// Where the record keeps when stdout and stderr last grew, in milliseconds since the
/// epoch (null: not since the job was made or restored without them).
const STDOUT_GREW_KEY: &str = "stdout_grew_at_ms";
const STDERR_GREW_KEY: &str = "stderr_grew_at_ms";

/// A copy of everything about a job except its output bytes.
#[derive(Debug, Clone)]
pub struct JobSnapshot {
    pub life: Life,
    pub stdout: StreamBytes,
    pub stderr: StreamBytes,
    pub output: StreamBytes,
    /// How the command is contained: `cgroup <path>` or `process group`.
    pub containment: String,
    /// Its shell and working directory; None for a command an earlier version ran
    /// and recorded without them.
    pub launch: Option<Launch>,
    /// The memory limit in bytes, if any.
    pub memory_limit: Option<u64>,
    /// For a command on a terminal: its size and the cursor (row, column from 0).
    pub terminal: Option<(TerminalSize, (u16, u16))>,
    /// The remote host it runs on (see [`crate::hosts`]); None: this machine.
    pub host: Option<String>,
    /// When it started and ended on that host (epoch seconds), once known.
    pub remote_times: Option<(u64, u64)>,
    /// The driver stopped before its output ended: the last bytes may be missing, and
    /// each file says so where its stored part ends.
    pub output_cut_short: bool,
    /// How it is sandboxed, when a sandbox is configured.
    pub sandbox: Option<Value>,
}

struct State {
    life: Life,
    open_pipes: u8,
    kill_grace: Duration,
    /// STOPs and CONTs the driver has sent (see [`Job::pauses_sent`]).
    pauses_sent: u64,
    /// Its pauses and resumes, for `/events`.
    turns: Turns,
}

/// What readers are shown of the output: each file's extent and when each stream
/// grew, copied from the capture after every change is on disk.
#[derive(Debug, Clone)]
struct Shown {
    /// stdout, stderr, output.
    extents: [Extent; 3],
    grew: [Option<SystemTime>; 2],
    cut_short: bool,
}

impl Shown {
    fn of(capture: &Capture) -> Shown {
        Shown {
            extents: [Stream::Stdout, Stream::Stderr, Stream::Output]
                .map(|stream| capture.extent(stream)),
            grew: [Stream::Stdout, Stream::Stderr].map(|stream| capture.grew_at(stream)),
            cut_short: capture.is_cut_short(),
        }
    }

    fn extent(&self, stream: Stream) -> &Extent {
        &self.extents[match stream {
            Stream::Stdout => 0,
            Stream::Stderr => 1,
            Stream::Output => 2,
        }]
    }

    fn grew_at(&self, stream: Stream) -> Option<SystemTime> {
        match stream {
            Stream::Stdout => self.grew[0],
            Stream::Stderr => self.grew[1],
            Stream::Output => self.grew[0].max(self.grew[1]),
        }
    }
}

pub struct Job {
    id: u64,
    name: String,
    /// The spool's files; taken before `state` when both are held. Watched, as the
    /// state is: a panic that unwinds through either stops the driver (see
    /// `crate::panics`).
    capture: Watched<Capture>,
    state: Watched<State>,
    shown: Mutex<Shown>,
    /// The capture's store, which never changes.
    store: Arc<Store>,
    cgroup: Option<CommandCgroup>,
    containment: String,
    /// None only for a command an earlier version ran and recorded without it.
    launch: Option<Launch>,
    /// (bytes, enforced as an address-space rlimit rather than by the cgroup)
    memory: Option<(u64, bool)>,
    /// Its stdin pipe or terminal, when it has one.
    input: Option<Input>,
    /// For a command on a terminal that an earlier driver ran: its last screen.
    kept_screen: Option<KeptScreen>,
    /// How it is sandboxed; it also holds its `TMPDIR` and proxy while it is kept.
    sandbox: Mutex<Option<crate::sandbox::Report>>,
    /// Its launcher's far side, for a command on a remote host; set before it starts.
    remote: std::sync::OnceLock<Arc<crate::hosts::driver::Remote>>,
    /// The host an earlier driver ran it on, and the far side's times it knew.
    restored_host: Option<String>,
    restored_times: Option<(u64, u64)>,
}

impl Job {
    /// A job that runs with `config`'s shell, working directory and kill grace.
    pub(crate) fn new(
        id: u64,
        capture: Capture,
        config: &super::SupervisorConfig,
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
            store: capture.store().clone(),
            shown: Mutex::new(Shown::of(&capture)),
            capture: Watched::new(capture),
            cgroup,
            containment,
            launch: Some(Launch {
                shell: config.shell.clone(),
                cwd: config.cwd.clone(),
            }),
            memory,
            input,
            kept_screen: None,
            sandbox: Mutex::new(None),
            remote: std::sync::OnceLock::new(),
            restored_host: None,
            restored_times: None,
            state: Watched::new(State {
                life: Life::Starting,
                // The pipes exist from the start; the pump counts them closed.
                open_pipes,
                kill_grace: config.kill_grace,
                pauses_sent: 0,
                turns: Turns::default(),
            }),
        }
    }

    /// The screen as it reads now, for a job on a terminal (live or restored).
    fn kept_screen_now(&self) -> Option<KeptScreen> {
        match &self.input {
            Some(input) if input.is_terminal() => {
                let (size, cursor) = input.terminal_state()?;
                Some(KeptScreen {
                    size,
                    cursor,
                    text: input.screen_text()?,
                })
            }
            _ => self.kept_screen.clone(),
        }
    }

    /// Whether the command ran on a terminal (it has a `screen`).
    pub fn is_terminal(&self) -> bool {
        self.input.as_ref().is_some_and(Input::is_terminal) || self.kept_screen.is_some()
    }

    /// The terminal's screen as text: live, or as it was last saved for a command an
    /// earlier driver ran.
    pub fn screen_text(&self) -> Option<String> {
        match &self.input {
            Some(input) if input.is_terminal() => input.screen_text(),
            _ => self.kept_screen.as_ref().map(|kept| kept.text.clone()),
        }
    }

    /// The terminal's size and cursor, live or as last saved.
    fn terminal_state(&self) -> Option<(TerminalSize, (u16, u16))> {
        match &self.input {
            Some(input) if input.is_terminal() => input.terminal_state(),
            _ => self
                .kept_screen
                .as_ref()
                .map(|kept| (kept.size, kept.cursor)),
        }
    }

    /// Saves the record; once the shell has stopped and no pipe is left open, the
    /// output is complete and its files are closed, and so is its input (the screen
    /// stays). Called with no lock of the job held.
    fn save(&self) {
        let mut capture = self.capture.lock();
        self.seal_if_over(&mut capture);
        let record = self.record(&self.state.lock(), &capture);
        capture.save(&record);
    }

    /// Closes the output and the input once the shell has stopped and no pipe is left
    /// open (the capture's lock held, the state's not).
    fn seal_if_over(&self, capture: &mut Capture) {
        let over = {
            let state = self.state.lock();
            state.open_pipes == 0 && !state.life.is_running()
        };
        if over {
            capture.seal();
            self.publish(capture);
            if let Some(input) = &self.input {
                input.release();
            }
        }
    }

    /// Shows readers what `capture` holds now.
    fn publish(&self, capture: &Capture) {
        *self.shown.lock() = Shown::of(capture);
    }

    /// Saves the record as it stands (see [`Job::mark_exited`]).
    pub(crate) fn save_record(&self) {
        self.save();
    }

    /// The job's files in the spool.
    pub fn store(&self) -> Arc<Store> {
        self.store.clone()
    }

    /// Its output was evicted from the spool to make room.
    pub fn evicted(&self) -> bool {
        self.store.evicted()
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    /// Where the job is in its life, and what is known of it so far.
    pub fn life(&self) -> Life {
        self.state.lock().life.clone()
    }

    /// When its shell was reaped; None while it runs. Cheaper than a whole
    /// [`Job::life`] for the tree's tick, which asks it of every command.
    pub fn finished_at(&self) -> Option<SystemTime> {
        self.state.lock().life.finished_at()
    }

    /// When `stream`'s file last grew, its mtime: when the command last wrote to it
    /// (to either stream, for `output`), else when its shell started (None before),
    /// never before it started (the pump may read a first write before the spawn is
    /// timed). A command brought back by a restart has the times its record kept; one
    /// whose record has none (saved before they were kept, or before its output
    /// ended) shows what it wrote at the time it ended.
    pub fn grew_at(&self, stream: Stream) -> Option<SystemTime> {
        let shown = self.shown.lock().clone();
        let state = self.state.lock();
        let written = || shown.extent(stream).written > 0;
        let grew = shown
            .grew_at(stream)
            .or_else(|| state.life.finished_at().filter(|_| written()));
        grew.max(state.life.started_at())
    }

    /// Where it stands, for `/events`, which asks it of every command on every read.
    pub fn standing(&self) -> Standing {
        let state = self.state.lock();
        state.life.standing(state.turns)
    }

    pub(crate) fn kill_grace(&self) -> Duration {
        self.state.lock().kill_grace
    }

    pub(crate) fn mark_started(&self, pid: i32, at: SystemTime, instant: Instant) {
        self.state.lock().life = Life::Running {
            shell: Shell {
                pid,
                started_at: at,
                since: instant,
                paused: false,
            },
            signalled: Signals::default(),
        };
        self.save();
    }

    pub(crate) fn mark_failed_to_start(&self, message: &str) {
        if let Some(remote) = self.remote.get() {
            remote.ended(-1);
        }
        {
            let mut capture = self.capture.lock();
            capture.append(Stream::Stderr, message.as_bytes());
            self.publish(&capture);
        }
        let mut state = self.state.lock();
        state.open_pipes = 0;
        let now = SystemTime::now();
        let why = message
            .trim_end()
            .trim_start_matches("terminalfs: ")
            .to_string();
        state.life = Life::Done(Done {
            pid: state.life.pid(),
            started_at: Some(now),
            finished_at: Some(now),
            duration: Some(Duration::ZERO),
            exit: Some(Exit::never_ran()),
            end: End::NotStarted(why),
        });
        drop(state);
        self.save();
    }

    /// Appends a chunk the pump read from one of the command's pipes (stdout or
    /// stderr, or its terminal, whose screen it also draws), in the order the chunks
    /// must appear in `output`.
    pub(crate) fn append(&self, stream: Stream, bytes: &[u8]) {
        {
            let mut capture = self.capture.lock();
            capture.append(stream, bytes);
            // Shown only now that the bytes and their counts are on disk.
            self.publish(&capture);
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
        let over = {
            let mut state = self.state.lock();
            state.open_pipes = state.open_pipes.saturating_sub(1);
            state.open_pipes == 0 && !state.life.is_running()
        };
        if over {
            self.save();
        }
    }

    /// The shell has been reaped with `exit`. Why it ended: the stop the driver began,
    /// a signal written to `kill` that it died of, or its own doing. The record is not
    /// saved here: whoever waits for the exit is answered first, then the caller saves
    /// it ([`Job::save_record`]; the spool writes it later in any case). False when the
    /// exit was recorded already.
    #[must_use = "a recorded exit still has its record to save"]
    pub(crate) fn mark_exited(&self, exit: Exit) -> bool {
        let mut state = self.state.lock();
        let (pid, started_at, since, end) = match &state.life {
            Life::Starting => (None, None, None, None),
            Life::Running { shell, signalled } => {
                let died_of = signalled.died_of(&exit);
                let end = died_of.map(|signal| End::Stopped(Stop::Signal(signal)));
                (
                    Some(shell.pid),
                    Some(shell.started_at),
                    Some(shell.since),
                    end,
                )
            }
            Life::Stopping { shell, why } => (
                Some(shell.pid),
                Some(shell.started_at),
                Some(shell.since),
                Some(End::Stopped(why.clone())),
            ),
            // Reaped twice: the first account stands.
            Life::Done(_) => return false,
        };
        let lost = self.remote.get().and_then(|remote| remote.ended(exit.code));
        let end = end.unwrap_or_else(|| End::Exited {
            note: lost.or_else(|| self.memory_reason(&exit)),
        });
        state.life = Life::Done(Done {
            pid,
            started_at,
            finished_at: Some(SystemTime::now()),
            duration: since.map(|since| since.elapsed()),
            exit: Some(exit),
            end,
        });
        drop(state);
        self.seal_if_over(&mut self.capture.lock());
        true
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
        self.cgroup
            .as_ref()
            .filter(|cgroup| cgroup.held())
            .map(CommandCgroup::path)
    }

    /// Whether any process is left in the command's cgroup.
    pub fn cgroup_populated(&self) -> bool {
        self.cgroup.as_ref().is_some_and(CommandCgroup::populated)
    }

    /// The command's cgroup directory, open, for a child born into it.
    #[cfg(target_os = "linux")]
    pub(crate) fn cgroup_fd(&self) -> Option<std::os::fd::OwnedFd> {
        self.cgroup.as_ref().and_then(CommandCgroup::fd)
    }

    /// Whether the job's cgroup, once empty, serves the next command as it is.
    pub(crate) fn cgroup_reusable(&self) -> bool {
        self.cgroup.as_ref().is_some_and(CommandCgroup::reusable)
    }

    /// The cgroup's peak memory use in KiB, where the memory controller keeps one.
    pub(crate) fn memory_peak_kib(&self) -> Option<u64> {
        self.cgroup
            .as_ref()
            .and_then(CommandCgroup::memory_peak_kib)
    }

    /// Lets go of the cgroup when the shell is gone and nothing is left in it (it may
    /// serve another command then). Returns true when there is no cgroup (any more).
    pub(crate) fn remove_cgroup_if_done(&self) -> bool {
        let Some(cgroup) = &self.cgroup else {
            return true;
        };
        if self.is_running() {
            return false;
        }
        cgroup.release()
    }

    /// Begins to stop the job for `why`: TERM to all of it, and CONT after it when it
    /// was paused (a stopped process cannot act on its TERM). A job already being
    /// stopped keeps its first reason, unless the driver is shutting down; one whose
    /// shell has stopped records nothing,
    /// but what it left running still gets the TERM. Returns whether a signal was sent.
    pub(crate) fn stop(&self, why: Stop) -> bool {
        let mut state = self.state.lock();
        self.stop_locked(&mut state, why)
    }

    fn stop_locked(&self, state: &mut State, why: Stop) -> bool {
        let mut paused = false;
        match &mut state.life {
            Life::Running { shell, .. } => {
                let mut shell = *shell;
                paused = state.turns.set(&mut shell, false);
                state.life = Life::Stopping { shell, why };
            }
            // The driver going away outranks any stop under way: the job is still
            // running when the driver stops, and is read back as such.
            Life::Stopping { why: under_way, .. } if why == Stop::Shutdown => *under_way = why,
            _ => {}
        }
        let sent = self.send(state, libc::SIGTERM);
        if sent && paused {
            self.send(state, libc::SIGCONT);
            state.pauses_sent += 1;
        }
        sent
    }

    /// How many STOPs and CONTs the driver has sent the job: a look at the shell's
    /// state taken while one was on its way may be older than the one it said.
    pub(crate) fn pauses_sent(&self) -> u64 {
        self.state.lock().pauses_sent
    }

    /// What the pump saw of the shell: stopped (by whatever signal, whoever sent it)
    /// or not, in a look begun when [`Job::pauses_sent`] said `sent`. Taken only if
    /// the driver has sent no STOP or CONT since, which the look may predate. Returns
    /// whether that changed whether it shows as paused.
    pub(crate) fn observe_stopped(&self, stopped: bool, sent: u64) -> bool {
        let mut guard = self.state.lock();
        let state = &mut *guard;
        if state.pauses_sent != sent {
            return false;
        }
        match &mut state.life {
            Life::Running { shell, .. } | Life::Stopping { shell, .. } => {
                state.turns.set(shell, stopped)
            }
            _ => false,
        }
    }

    /// Stops the job because it ran past `limit`; false (and nothing sent) unless its
    /// shell was running and nobody had begun to stop it.
    pub(crate) fn time_out(&self, limit: Duration) -> bool {
        let mut state = self.state.lock();
        if !matches!(state.life, Life::Running { .. }) {
            return false;
        }
        let why = format!(
            "timed out: it ran longer than its limit of {} and was stopped",
            crate::units::format_duration(limit)
        );
        self.stop_locked(&mut state, Stop::Timeout(why))
    }

    /// Sends `signal` (written to `kill`) to the whole job and notes it: STOP pauses,
    /// CONT resumes, any other is remembered so that a death by it reads as a kill.
    /// Noted before it is sent, under the same lock the exit is recorded with, so a
    /// quick death cannot be recorded first. Returns whether it was sent.
    pub(crate) fn signal(&self, signal: i32) -> bool {
        let mut guard = self.state.lock();
        let state = &mut *guard;
        match &mut state.life {
            Life::Running { shell, .. } | Life::Stopping { shell, .. }
                if matches!(signal, libc::SIGSTOP | libc::SIGCONT) =>
            {
                state.turns.set(shell, signal == libc::SIGSTOP);
                state.pauses_sent += 1;
            }
            Life::Running { signalled, .. } => signalled.insert(signal),
            _ => {}
        }
        self.send(state, signal)
    }

    /// Sends `signal` to whatever of the job may still be alive, recording nothing
    /// (the KILL after a grace, the last sweep at shutdown).
    pub(crate) fn signal_group(&self, signal: i32) -> bool {
        let state = self.state.lock();
        self.send(&state, signal)
    }

    /// Sends `signal` to the job's process group while anything of it may be alive
    /// (its shell runs, or a descendant still holds its pipes), and to its cgroup.
    /// Returns whether a signal was sent.
    fn send(&self, state: &State, signal: i32) -> bool {
        let running = state.life.is_running();
        let Some(pgid) = state.life.pid() else {
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
        // A remote command's signals go to the far side's group; the launcher here
        // gets only what the host's engine says it must.
        let local = match self.remote.get() {
            Some(remote) if running => remote.signal(signal),
            _ => true,
        };
        if group_alive && local {
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
    /// by a kill, a time limit or the driver.
    pub fn outcome(&self) -> Option<bool> {
        self.state.lock().life.outcome()
    }

    /// True until the shell has been reaped (or failed to start).
    pub fn is_running(&self) -> bool {
        self.state.lock().life.is_running()
    }

    pub fn snapshot(&self) -> JobSnapshot {
        let shown = self.shown.lock().clone();
        let state = self.state.lock();
        let bytes = |stream| StreamBytes::of(shown.extent(stream));
        JobSnapshot {
            life: state.life.clone(),
            stdout: bytes(Stream::Stdout),
            stderr: bytes(Stream::Stderr),
            output: bytes(Stream::Output),
            containment: self.containment(),
            launch: self.launch(),
            memory_limit: self.memory.map(|(bytes, _)| bytes),
            terminal: self.terminal_state(),
            output_cut_short: shown.cut_short,
            sandbox: self
                .sandbox
                .lock()
                .as_ref()
                .map(crate::sandbox::Report::json),
            host: self.host(),
            remote_times: self.remote_times(),
        }
    }

    /// When it started and ended on its remote host (epoch seconds), once known.
    fn remote_times(&self) -> Option<(u64, u64)> {
        match self.remote.get() {
            Some(remote) => remote.times(),
            None => self.restored_times,
        }
    }

    /// Makes it a command on a remote host: its signals go through `remote`.
    pub(crate) fn set_remote(&self, remote: Arc<crate::hosts::driver::Remote>) {
        let _ = self.remote.set(remote);
    }

    /// The remote host it runs (or ran) on; None: this machine.
    pub fn host(&self) -> Option<String> {
        match self.remote.get() {
            Some(remote) => Some(remote.host().name.clone()),
            None => self.restored_host.clone(),
        }
    }

    /// How it is contained: for a remote command, the far side's process group.
    fn containment(&self) -> String {
        match self.remote.get() {
            Some(remote) => format!(
                "a process group on host {} through its launcher ({})",
                remote.host().name,
                remote.host().engine.word()
            ),
            None => self.containment.clone(),
        }
    }

    /// Its shell and working directory: for a remote command, the far side's.
    fn launch(&self) -> Option<Launch> {
        match self.remote.get() {
            Some(remote) => Some(Launch {
                shell: remote.host().shell().into(),
                cwd: remote.host().cwd.as_deref().unwrap_or("~").into(),
            }),
            None => self.launch.clone(),
        }
    }

    /// Keeps how it is sandboxed (and with it its `TMPDIR` and proxy).
    pub fn set_sandbox(&self, report: crate::sandbox::Report) {
        *self.sandbox.lock() = Some(report);
    }

    /// What a file of `stream` can show now.
    pub fn extent(&self, stream: Stream) -> Extent {
        self.shown.lock().extent(stream).clone()
    }

    /// Stored bytes of `stream` from absolute offset `from` (at most `max`; bytes no
    /// longer held read as NUL), plus whether the shell still runs.
    pub fn read(&self, stream: Stream, from: u64, max: usize) -> (Vec<u8>, bool) {
        let (bytes, running, _) = self.read_held(stream, from, max);
        (bytes, running)
    }

    /// [`Job::read`], with what was held when the bytes were read.
    pub fn read_held(&self, stream: Stream, from: u64, max: usize) -> (Vec<u8>, bool, Held) {
        let capture = self.capture.lock();
        let mut out = Vec::new();
        let held = capture.read(stream, from, max, &mut out);
        (out, self.state.lock().life.is_running(), held)
    }
}

/// Whether some process has pid `pid` now (one we may not signal counts too).
fn pid_in_use(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists and may be signalled.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}
