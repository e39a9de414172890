//! One command's life as the supervisor sees it: where it is in its [`Life`] (each
//! stage carrying its own facts, from which `result.json`'s are read), and its captured
//! output (on disk, see [`crate::spool`]). All of it sits behind
//! one lock per job; the pump holds it only to append a chunk or record an exit, readers
//! only to copy bytes out.
//!
//! The job's record (everything but its output) is saved next to its output when it
//! starts, when its shell stops and when its output ends, so a restarted driver can
//! bring it back with [`Job::restore`].

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

/// The reason a command that was running when the driver stopped comes back with.
pub const DRIVER_STOPPED: &str = "the driver stopped while it ran";

/// Where the record keeps when stdout and stderr last grew, in milliseconds since the
/// epoch (null: not since the job was made or restored without them).
const STDOUT_GREW_KEY: &str = "stdout_grew_at_ms";
const STDERR_GREW_KEY: &str = "stderr_grew_at_ms";

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
            kept: extent.kept_written(),
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
    /// The account of a shell that never ran: -1, no usage.
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

/// A shell that was spawned and has not been reaped yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shell {
    /// Its pid, which is also its process group id.
    pub pid: i32,
    pub started_at: SystemTime,
    since: Instant,
    /// It is stopped: a STOP was written to `kill` and no CONT since, or the pump saw
    /// it stopped (whoever stopped it) and not continued since.
    pub paused: bool,
}

/// A set of signal numbers (1 to 127; others are never held).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Signals(u128);

impl Signals {
    pub fn insert(&mut self, signal: i32) {
        if (1..128).contains(&signal) {
            self.0 |= 1 << signal;
        }
    }

    pub fn contains(self, signal: i32) -> bool {
        (1..128).contains(&signal) && self.0 & (1 << signal) != 0
    }

    /// The one of them a shell that ended with `exit` died of: the signal that ended
    /// it, or the one its exit code 128+N names (a shell that exits so on a trap).
    fn died_of(self, exit: &Exit) -> Option<i32> {
        exit.signal
            .filter(|&signal| self.contains(signal))
            .or_else(|| Some(exit.code - 128).filter(|&signal| self.contains(signal)))
    }
}

/// Why the driver stopped a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// A kill (a write to `kill`, its removal): the sentence says which.
    Kill(String),
    /// Its time limit was reached: the sentence names the limit.
    Timeout(String),
    /// The driver shut down while it ran.
    Shutdown,
    /// It died of this signal, written to its `kill` file by name or number.
    Signal(i32),
}

impl Stop {
    /// The sentence of `reason`.
    pub fn sentence(&self) -> String {
        match self {
            Stop::Kill(why) | Stop::Timeout(why) => why.clone(),
            Stop::Shutdown => "stopped because terminalfs shut down".to_string(),
            Stop::Signal(signal) => format!(
                "killed: it died of {}, written to its kill file",
                super::signals::name(*signal)
            ),
        }
    }
}

/// How a command's shell came to an end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// On its own. `note` explains a failure a memory limit in force probably caused
    /// (or, read back at a restart, whatever reason the record gave).
    Exited { note: Option<String> },
    /// The driver stopped it.
    Stopped(Stop),
    /// Its shell never ran; the sentence says why.
    NotStarted(String),
    /// It still ran when an earlier driver stopped (read back at a restart); `killed`
    /// when that driver stopped it on its way out.
    Interrupted { killed: bool },
}

/// A command's shell once it is over: the facts of its whole run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Done {
    pub pid: Option<i32>,
    pub started_at: Option<SystemTime>,
    pub finished_at: Option<SystemTime>,
    pub duration: Option<Duration>,
    /// None when its end was never seen: it still ran when an earlier driver stopped
    /// without seeing it end (a crash), so its exit code is unknown.
    pub exit: Option<Exit>,
    pub end: End,
}

/// A job's life. Each stage holds exactly what is known in it, so no stage can carry
/// facts of another (a pid before the spawn, a kill reason on a job nobody stopped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Life {
    /// Made; its shell is not spawned yet.
    Starting,
    /// Its shell runs. `signalled`: every signal written to `kill` (other than STOP
    /// and CONT), so that whichever of them it dies of says why it ended, however
    /// many more were written after it.
    Running { shell: Shell, signalled: Signals },
    /// Its shell runs, and the driver has begun to stop it: TERM sent, KILL after the
    /// grace. The first reason stands, but a shutdown outranks it.
    Stopping { shell: Shell, why: Stop },
    /// Its shell has been reaped, or never ran.
    Done(Done),
}

impl Life {
    /// True until the shell has been reaped (or failed to start).
    pub fn is_running(&self) -> bool {
        !matches!(self, Life::Done(_))
    }

    fn shell(&self) -> Option<&Shell> {
        match self {
            Life::Running { shell, .. } | Life::Stopping { shell, .. } => Some(shell),
            Life::Starting | Life::Done(_) => None,
        }
    }

    /// The running shell's pid.
    pub fn running_pid(&self) -> Option<i32> {
        self.shell().map(|shell| shell.pid)
    }

    /// The shell's pid, running or not (None before the spawn).
    pub fn pid(&self) -> Option<i32> {
        match self {
            Life::Done(done) => done.pid,
            _ => self.running_pid(),
        }
    }

    pub fn exit(&self) -> Option<&Exit> {
        match self {
            Life::Done(done) => done.exit.as_ref(),
            _ => None,
        }
    }

    pub fn is_paused(&self) -> bool {
        self.shell().is_some_and(|shell| shell.paused)
    }

    pub fn started_at(&self) -> Option<SystemTime> {
        match self {
            Life::Done(done) => done.started_at,
            _ => self.shell().map(|shell| shell.started_at),
        }
    }

    pub fn finished_at(&self) -> Option<SystemTime> {
        match self {
            Life::Done(done) => done.finished_at,
            _ => None,
        }
    }

    /// How long it ran, or has run so far.
    pub fn duration(&self) -> Option<Duration> {
        match self {
            Life::Done(done) => done.duration,
            _ => self.shell().map(|shell| shell.since.elapsed()),
        }
    }

    /// Why the driver stopped it (or is stopping it), if it did.
    fn stopped_for(&self) -> Option<&Stop> {
        match self {
            Life::Stopping { why, .. } => Some(why),
            Life::Done(Done {
                end: End::Stopped(why),
                ..
            }) => Some(why),
            _ => None,
        }
    }

    /// Stopped (or being stopped) by a kill, a time limit, a signal it died of or the
    /// driver's shutdown.
    pub fn killed(&self) -> bool {
        match self {
            Life::Done(Done {
                end: End::Interrupted { killed },
                ..
            }) => *killed,
            _ => self.stopped_for().is_some(),
        }
    }

    pub fn timed_out(&self) -> bool {
        matches!(self.stopped_for(), Some(Stop::Timeout(_)))
    }

    /// It did not get to finish because the driver stopped, whatever its exit code.
    pub fn interrupted(&self) -> bool {
        matches!(
            self,
            Life::Done(Done {
                end: End::Interrupted { .. },
                ..
            })
        ) || matches!(self.stopped_for(), Some(Stop::Shutdown))
    }

    /// The sentence of `reason`, if it has one.
    pub fn reason(&self) -> Option<String> {
        match self {
            Life::Starting | Life::Running { .. } => None,
            Life::Stopping { why, .. } => Some(why.sentence()),
            Life::Done(done) => match &done.end {
                End::Exited { note } => note.clone(),
                End::Stopped(why) => Some(why.sentence()),
                End::NotStarted(why) => Some(why.clone()),
                End::Interrupted { .. } => Some(DRIVER_STOPPED.to_string()),
            },
        }
    }

    /// None while the shell runs; then whether it succeeded: exit 0 and not stopped
    /// by the driver.
    pub fn outcome(&self) -> Option<bool> {
        match self {
            Life::Done(done) => Some(
                done.exit.as_ref().is_some_and(|exit| exit.code == 0)
                    && !self.killed()
                    && !self.interrupted(),
            ),
            _ => None,
        }
    }
}

/// How often a job's shell was paused and resumed, and when it last was: what
/// `/events` needs to tell a reader that looked before and after them of each change.
/// Pauses and resumes alternate, a pause first: `paused` is `resumed`, or one more
/// while it is paused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Turns {
    pub paused: u32,
    pub resumed: u32,
    pub last_paused: Option<SystemTime>,
    pub last_resumed: Option<SystemTime>,
}

impl Turns {
    /// Shows `shell` paused or not; a change is counted, with its time. Returns
    /// whether it changed.
    fn set(&mut self, shell: &mut Shell, paused: bool) -> bool {
        if shell.paused == paused {
            return false;
        }
        shell.paused = paused;
        let now = Some(SystemTime::now());
        if paused {
            self.paused += 1;
            self.last_paused = now;
        } else {
            self.resumed += 1;
            self.last_resumed = now;
        }
        true
    }
}

/// Where a command stands, in the few facts `/events` tells of it, read under the
/// job's lock without copying its [`Life`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Its shell has not been reaped: since when it runs (None before its spawn),
    /// whether it is paused, and its pauses and resumes so far.
    Running {
        since: Option<SystemTime>,
        paused: bool,
        turns: Turns,
    },
    /// Its shell is over: whether it succeeded (see [`Life::outcome`]), its exit code
    /// (None when its end was never seen), when it finished, since when it had run
    /// (None for a shell that never ran), and its pauses and resumes.
    Over {
        success: bool,
        code: Option<i32>,
        at: Option<SystemTime>,
        since: Option<SystemTime>,
        turns: Turns,
    },
}

impl Life {
    /// Where it stands, having been paused and resumed as `turns` says.
    pub fn standing(&self, turns: Turns) -> Standing {
        match self.outcome() {
            Some(success) => Standing::Over {
                success,
                code: self.exit().map(|exit| exit.code),
                at: self.finished_at(),
                since: self.started_at().filter(|_| self.pid().is_some()),
                turns,
            },
            None => Standing::Running {
                since: self.started_at(),
                paused: self.is_paused(),
                turns,
            },
        }
    }
}

/// What a command runs with: `<shell> -c <text>` in `cwd`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub shell: PathBuf,
    pub cwd: PathBuf,
}

impl Launch {
    /// The shell and directory a record kept; None unless it has both (a record an
    /// earlier version wrote has neither).
    fn from_record(meta: &Value) -> Option<Launch> {
        Some(Launch {
            shell: meta["shell"].as_str()?.into(),
            cwd: meta["cwd"].as_str()?.into(),
        })
    }
}

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
}

struct State {
    life: Life,
    capture: Capture,
    open_pipes: u8,
    kill_grace: Duration,
    /// STOPs and CONTs the driver has sent (see [`Job::pauses_sent`]).
    pauses_sent: u64,
    /// Its pauses and resumes, for `/events`.
    turns: Turns,
}

pub struct Job {
    id: u64,
    name: String,
    state: Mutex<State>,
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
}

/// A terminal's screen as the record keeps it, so `screen` and `result.json` read the
/// same after a restart.
#[derive(Debug, Clone, PartialEq, Eq)]
struct KeptScreen {
    size: TerminalSize,
    /// (row, column), from 0.
    cursor: (u16, u16),
    text: String,
}

impl KeptScreen {
    fn record(&self) -> Value {
        json!({
            "cols": self.size.cols,
            "rows": self.size.rows,
            "cursor": [self.cursor.0, self.cursor.1],
            "screen": self.text,
        })
    }

    /// The screen drawn again from the terminal's whole output; None when part of it
    /// was dropped (a screen cannot be drawn from part of the stream).
    fn redraw(size: TerminalSize, capture: &Capture) -> Option<KeptScreen> {
        let extent = capture.extent(Stream::Stdout);
        if extent.dropped() > 0 {
            return None;
        }
        let mut screen = Screen::new(size);
        let mut at = 0;
        while at < extent.kept.end {
            let mut chunk = Vec::new();
            capture.copy(Stream::Stdout, at, 1 << 20, &mut chunk);
            if chunk.is_empty() {
                break;
            }
            at += chunk.len() as u64;
            screen.feed(&chunk);
        }
        Some(KeptScreen {
            size,
            cursor: screen.cursor(),
            text: screen.text(),
        })
    }

    /// The screen a record kept; None unless it is one a terminal of terminalfs has
    /// (a size out of bounds would have the redraw allocate without limit).
    fn from_record(value: &Value) -> Option<KeptScreen> {
        let side = |v: &Value| v.as_u64().and_then(|n| u32::try_from(n).ok());
        let place = |v: &Value| v.as_u64().and_then(|n| u16::try_from(n).ok());
        Some(KeptScreen {
            size: TerminalSize::new(side(&value["cols"])?, side(&value["rows"])?).ok()?,
            cursor: (place(&value["cursor"][0])?, place(&value["cursor"][1])?),
            text: value["screen"].as_str()?.to_string(),
        })
    }
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
            cgroup,
            containment,
            launch: Some(Launch {
                shell: config.shell.clone(),
                cwd: config.cwd.clone(),
            }),
            memory,
            input,
            kept_screen: None,
            state: Mutex::new(State {
                life: Life::Starting,
                capture,
                // The pipes exist from the start; the pump counts them closed.
                open_pipes,
                kill_grace: config.kill_grace,
                pauses_sent: 0,
                turns: Turns::default(),
            }),
        }
    }

    /// A job an earlier driver left in the spool, from the record it saved; it has
    /// stopped. One that was still running then comes back as stopped by the driver;
    /// if that driver never saw it end, it has no exit code and it finished at
    /// `last_seen`, the last moment that driver was known alive with it.
    pub fn restore(
        id: u64,
        meta: &Value,
        mut capture: Capture,
        kill_grace: Duration,
        last_seen: Option<SystemTime>,
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
        // A record made at a restart for a command whose own record was lost tells
        // its reason, not that a driver stopped while it ran.
        let interrupted =
            (exit.is_none() && !flag(crate::spool::RECORD_LOST_KEY)) || flag("interrupted");
        let reason = meta["reason"].as_str().map(str::to_string);
        // A signal it died of was saved as a kill with its sentence: it reads the same.
        let end = if interrupted {
            End::Interrupted {
                killed: flag("killed"),
            }
        } else if flag("timed_out") {
            End::Stopped(Stop::Timeout(reason.unwrap_or_default()))
        } else if flag("killed") {
            End::Stopped(Stop::Kill(reason.unwrap_or_default()))
        } else {
            End::Exited { note: reason }
        };
        // When each stream last grew, as the driver that captured it saw it.
        capture.restore_grew(time(STDOUT_GREW_KEY), time(STDERR_GREW_KEY));
        let started_at = time("started_at_ms");
        let finished_at = time("finished_at_ms").or_else(|| match exit {
            None => started_at.map(|started| last_seen.map_or(started, |seen| seen.max(started))),
            Some(_) => started_at,
        });
        capture.seal();
        let kept_screen = match &meta["terminal"] {
            Value::Null => None,
            terminal => Some(
                KeptScreen::from_record(terminal)
                    .ok_or("the record's terminal is not one terminalfs makes")?,
            ),
        }
        .map(|kept| match exit {
            // Saved before its last output, while it still ran.
            None => KeptScreen::redraw(kept.size, &capture).unwrap_or(kept),
            Some(_) => kept,
        });
        let job = Job {
            id,
            name: name.to_string(),
            cgroup: None,
            containment: meta["containment"].as_str().unwrap_or("").to_string(),
            launch: Launch::from_record(meta),
            memory: meta["memory_limit"].as_u64().map(|bytes| (bytes, false)),
            input: None,
            kept_screen,
            state: Mutex::new(State {
                life: Life::Done(Done {
                    pid: meta["pid"].as_i64().map(|p| p as i32),
                    started_at,
                    finished_at,
                    duration: meta["duration_ms"]
                        .as_u64()
                        .map(Duration::from_millis)
                        .or_else(|| finished_at?.duration_since(started_at?).ok()),
                    exit,
                    end,
                }),
                capture,
                open_pipes: 0,
                kill_grace,
                pauses_sent: 0,
                turns: Turns::default(),
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
        let life = &state.life;
        let exit = match life.exit() {
            None => Value::Null,
            Some(exit) => json!({
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
            "pid": life.pid(),
            "exit": exit,
            "started_at_ms": ms(life.started_at()),
            "finished_at_ms": ms(life.finished_at()),
            "duration_ms": match life {
                Life::Done(done) => done.duration.map(|d| d.as_millis() as u64),
                _ => None,
            },
            "killed": life.killed(),
            "timed_out": life.timed_out(),
            "interrupted": life.interrupted(),
            "reason": life.reason(),
            "containment": self.containment,
            "shell": self.launch.as_ref().map(|launch| launch.shell.to_string_lossy()),
            "cwd": self.launch.as_ref().map(|launch| launch.cwd.to_string_lossy()),
            "memory_limit": self.memory.map(|(bytes, _)| bytes),
            "terminal": self.kept_screen_now().map(|kept| kept.record()),
            STDOUT_GREW_KEY: ms(state.capture.grew_at(Stream::Stdout)),
            STDERR_GREW_KEY: ms(state.capture.grew_at(Stream::Stderr)),
        })
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
    /// stays).
    fn save(&self, state: &mut State) {
        self.seal_if_over(state);
        state.capture.save(&self.record(state));
    }

    /// Closes the output and the input once the shell has stopped and no pipe is left
    /// open.
    fn seal_if_over(&self, state: &mut State) {
        if state.open_pipes == 0 && !state.life.is_running() {
            state.capture.seal();
            if let Some(input) = &self.input {
                input.release();
            }
        }
    }

    /// Saves the record as it stands (see [`Job::mark_exited`]).
    pub(crate) fn save_record(&self) {
        let state = self.state.lock();
        state.capture.save(&self.record(&state));
    }

    /// The job's files in the spool.
    pub fn store(&self) -> Arc<Store> {
        self.state.lock().capture.store().clone()
    }

    /// Its output was evicted from the spool to make room.
    pub fn evicted(&self) -> bool {
        self.state.lock().capture.store().evicted()
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
        let state = self.state.lock();
        let written = || state.capture.extent(stream).written > 0;
        let grew = state
            .capture
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
        let mut state = self.state.lock();
        state.life = Life::Running {
            shell: Shell {
                pid,
                started_at: at,
                since: instant,
                paused: false,
            },
            signalled: Signals::default(),
        };
        self.save(&mut state);
    }

    pub(crate) fn mark_failed_to_start(&self, message: &str) {
        let mut state = self.state.lock();
        state.capture.append(Stream::Stderr, message.as_bytes());
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
        if state.open_pipes == 0 && !state.life.is_running() {
            self.save(&mut state);
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
        let end = end.unwrap_or_else(|| End::Exited {
            note: self.memory_reason(&exit),
        });
        state.life = Life::Done(Done {
            pid,
            started_at,
            finished_at: Some(SystemTime::now()),
            duration: since.map(|since| since.elapsed()),
            exit: Some(exit),
            end,
        });
        self.seal_if_over(&mut state);
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
    /// by a kill, a time limit or the driver.
    pub fn outcome(&self) -> Option<bool> {
        self.state.lock().life.outcome()
    }

    /// True until the shell has been reaped (or failed to start).
    pub fn is_running(&self) -> bool {
        self.state.lock().life.is_running()
    }

    pub fn snapshot(&self) -> JobSnapshot {
        let state = self.state.lock();
        let bytes = |stream| StreamBytes::of(&state.capture.extent(stream));
        JobSnapshot {
            life: state.life.clone(),
            stdout: bytes(Stream::Stdout),
            stderr: bytes(Stream::Stderr),
            output: bytes(Stream::Output),
            containment: self.containment.clone(),
            launch: self.launch.clone(),
            memory_limit: self.memory.map(|(bytes, _)| bytes),
            terminal: self.terminal_state(),
        }
    }

    /// What a file of `stream` can show now.
    pub fn extent(&self, stream: Stream) -> Extent {
        self.state.lock().capture.extent(stream)
    }

    /// Stored bytes of `stream` from absolute offset `from` (at most `max`; bytes no
    /// longer held read as NUL), plus whether the shell still runs.
    pub fn read(&self, stream: Stream, from: u64, max: usize) -> (Vec<u8>, bool) {
        let (bytes, running, _) = self.read_held(stream, from, max);
        (bytes, running)
    }

    /// [`Job::read`], with what was held when the bytes were read.
    pub fn read_held(&self, stream: Stream, from: u64, max: usize) -> (Vec<u8>, bool, Held) {
        let state = self.state.lock();
        let mut out = Vec::new();
        let held = state.capture.read(stream, from, max, &mut out);
        (out, state.life.is_running(), held)
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

    fn spool_in(dir: &std::path::Path) -> Arc<Spool> {
        let _unlocked = prepare_dir(dir).expect("a fresh state directory");
        Spool::open(
            SpoolConfig {
                dir: dir.to_path_buf(),
                max_output: 1024,
                max_spool: 1 << 20,
            },
            |_| {},
        )
        .expect("the spool opens")
    }

    /// A job named `name` that has not started: no cgroup, no input; `/bin/sh` in `/tmp`.
    fn new_job(spool: &Arc<Spool>, id: u64, name: &str, grace: Duration) -> Job {
        let capture = spool.capture(name, b"true");
        let config = crate::supervisor::SupervisorConfig {
            shell: "/bin/sh".into(),
            cwd: "/tmp".into(),
            kill_grace: grace,
            cgroup_tag: None,
            spawner: None,
        };
        Job::new(id, capture, &config, None, String::new(), None, None)
    }

    /// A job whose shell runs as `pid`.
    fn running_job(spool: &Arc<Spool>, pid: i32) -> Job {
        let job = new_job(spool, 1, "job", Duration::from_secs(1));
        job.mark_started(pid, SystemTime::now(), Instant::now());
        job
    }

    fn exit(code: i32, signal: Option<i32>) -> Exit {
        Exit {
            code,
            signal,
            ..Exit::never_ran()
        }
    }

    /// A job whose shell had pid `pid` and has been reaped, with its pipes still open
    /// (as a descendant holding them would leave them).
    fn reaped_job(dir: &std::path::Path, pid: i32) -> Job {
        let job = running_job(&spool_in(dir), pid);
        assert!(job.mark_exited(exit(0, None)));
        job
    }

    /// A process of its own group that ignores SIGINT, standing in for a shell; killed
    /// and reaped when dropped, however the test ends.
    struct StandIn(std::process::Child);

    impl StandIn {
        fn pid(&self) -> i32 {
            self.0.id() as i32
        }
    }

    impl Drop for StandIn {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    fn stand_in() -> StandIn {
        let mut command = Command::new("sleep");
        command.arg("60").process_group(0);
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            command.pre_exec(|| {
                libc::signal(libc::SIGINT, libc::SIG_IGN);
                Ok(())
            });
        }
        StandIn(command.spawn().expect("sleep starts"))
    }

    /// A stand-in, and a job (in a spool of its own under `dir`) whose shell it is.
    fn stood_in(dir: &tempfile::TempDir) -> (StandIn, Job) {
        let shell = stand_in();
        let job = running_job(&spool_in(&dir.path().join("spool")), shell.pid());
        (shell, job)
    }

    /// Signals the stand-in and records how it really ended.
    fn reap(job: &Job, mut shell: StandIn) {
        use std::os::unix::process::ExitStatusExt;
        let _ = shell.0.kill();
        let status = shell.0.wait().expect("the stand-in is reaped");
        let signal = status.signal();
        let code = status.code().unwrap_or_else(|| 128 + signal.unwrap_or(0));
        assert!(job.mark_exited(exit(code, signal)));
    }

    #[test]
    fn a_standing_holds_what_the_life_says_in_every_stage() {
        let started = UNIX_EPOCH + Duration::from_secs(1_000);
        let finished = started + Duration::from_secs(3);
        let turns = Turns {
            paused: 2,
            resumed: 1,
            last_paused: Some(started + Duration::from_secs(2)),
            last_resumed: Some(started + Duration::from_secs(1)),
        };
        let shell = |paused| Shell {
            pid: 41,
            started_at: started,
            since: Instant::now(),
            paused,
        };
        let exit = |code| Exit {
            code,
            ..Exit::never_ran()
        };
        let done = |exit: Option<Exit>, end: End| {
            Life::Done(Done {
                pid: Some(41),
                started_at: Some(started),
                finished_at: Some(finished),
                duration: Some(Duration::from_secs(3)),
                exit,
                end,
            })
        };
        let running = |paused| Standing::Running {
            since: Some(started),
            paused,
            turns,
        };
        let over = |success, code| Standing::Over {
            success,
            code,
            at: Some(finished),
            since: Some(started),
            turns,
        };
        let kill = Stop::Kill("killed: SIGTERM written to its kill file".into());
        let cases = [
            (
                Life::Starting,
                Standing::Running {
                    since: None,
                    paused: false,
                    turns,
                },
            ),
            (
                Life::Running {
                    shell: shell(false),
                    signalled: Signals::default(),
                },
                running(false),
            ),
            (
                Life::Running {
                    shell: shell(true),
                    signalled: Signals::default(),
                },
                running(true),
            ),
            (
                Life::Stopping {
                    shell: shell(false),
                    why: kill.clone(),
                },
                running(false),
            ),
            (
                Life::Stopping {
                    shell: shell(true),
                    why: Stop::Shutdown,
                },
                running(true),
            ),
            (
                done(Some(exit(0)), End::Exited { note: None }),
                over(true, Some(0)),
            ),
            (
                done(Some(exit(3)), End::Exited { note: None }),
                over(false, Some(3)),
            ),
            (
                done(Some(exit(143)), End::Stopped(kill)),
                over(false, Some(143)),
            ),
            (
                done(
                    Some(exit(0)),
                    End::Stopped(Stop::Timeout("timed out".into())),
                ),
                over(false, Some(0)),
            ),
            (
                done(Some(exit(-1)), End::NotStarted("no such shell".into())),
                over(false, Some(-1)),
            ),
            (
                done(Some(exit(0)), End::Interrupted { killed: true }),
                over(false, Some(0)),
            ),
            (
                done(None, End::Interrupted { killed: false }),
                over(false, None),
            ),
        ];
        for (life, standing) in cases {
            assert_eq!(life.standing(turns), standing, "{life:?}");
            // The same facts the life's own accessors give.
            match standing {
                Standing::Running { since, paused, .. } => {
                    assert_eq!(life.outcome(), None);
                    assert_eq!((since, paused), (life.started_at(), life.is_paused()));
                }
                Standing::Over {
                    success, code, at, ..
                } => {
                    assert_eq!(Some(success), life.outcome());
                    assert_eq!(code, life.exit().map(|exit| exit.code));
                    assert_eq!(at, life.finished_at());
                }
            }
        }
        // A shell that never ran has no start to tell of.
        let never = Life::Done(Done {
            pid: None,
            started_at: Some(started),
            finished_at: Some(started),
            duration: Some(Duration::ZERO),
            exit: Some(Exit::never_ran()),
            end: End::NotStarted("no such shell".into()),
        });
        assert!(matches!(
            never.standing(turns),
            Standing::Over { since: None, .. }
        ));
    }

    #[test]
    fn a_signal_written_to_kill_that_the_shell_dies_of_is_a_kill() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let (child, job) = stood_in(&dir);
        assert!(job.signal(libc::SIGKILL));
        reap(&job, child);
        let life = job.life();
        assert!(life.killed(), "{life:?}");
        assert!(!life.timed_out());
        assert_eq!(
            life.reason().as_deref(),
            Some("killed: it died of SIGKILL, written to its kill file")
        );
        assert_eq!(life.outcome(), Some(false));
    }

    #[test]
    fn a_signal_written_after_the_one_the_shell_dies_of_does_not_hide_it() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let (child, job) = stood_in(&dir);
        assert!(job.signal(libc::SIGKILL));
        // Written before the death is seen: the shell is still unreaped.
        assert!(job.signal(libc::SIGINT));
        reap(&job, child);
        let life = job.life();
        assert!(life.killed(), "{life:?}");
        assert_eq!(
            life.reason().as_deref(),
            Some("killed: it died of SIGKILL, written to its kill file")
        );
    }

    #[test]
    fn any_signal_written_names_the_death_by_it() {
        let mut written = Signals::default();
        written.insert(libc::SIGUSR1);
        written.insert(libc::SIGTERM);
        // Out of range: never held, never matched.
        written.insert(0);
        written.insert(500);
        assert!(!written.contains(0) && !written.contains(500));
        assert_eq!(
            written.died_of(&exit(143, Some(libc::SIGTERM))),
            Some(libc::SIGTERM)
        );
        assert_eq!(
            written.died_of(&exit(128 + libc::SIGUSR1, Some(libc::SIGUSR1))),
            Some(libc::SIGUSR1)
        );
        // A shell that exits 128+N on a trap of N.
        assert_eq!(
            written.died_of(&exit(128 + libc::SIGUSR1, None)),
            Some(libc::SIGUSR1)
        );
        assert_eq!(written.died_of(&exit(130, Some(libc::SIGINT))), None);
        assert_eq!(written.died_of(&exit(0, None)), None);
        assert_eq!(written.died_of(&exit(1, None)), None);
    }

    #[test]
    fn a_stop_seen_from_outside_shows_as_paused_until_seen_continued() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let (child, job) = stood_in(&dir);
        let sent = job.pauses_sent();
        assert!(job.observe_stopped(true, sent), "stopped by someone else");
        assert!(job.life().is_paused());
        assert!(!job.observe_stopped(true, sent), "no change, no news");
        assert!(job.observe_stopped(false, sent));
        assert!(!job.life().is_paused());
        // Each STOP or CONT the driver sends is counted, and a look begun before it
        // is not taken for the truth.
        assert!(job.signal(libc::SIGSTOP));
        assert!(
            !job.observe_stopped(false, sent),
            "a look older than the STOP"
        );
        assert!(job.life().is_paused());
        assert!(job.signal(libc::SIGCONT));
        assert_eq!(job.pauses_sent(), sent + 2);
        // A command stopped from outside is continued after its TERM, so it hears it.
        assert!(job.observe_stopped(true, sent + 2));
        assert!(job.stop(Stop::Kill("killed: by a test".into())));
        assert_eq!(job.pauses_sent(), sent + 3);
        assert!(!job.life().is_paused());
        reap(&job, child);
        assert!(
            !job.observe_stopped(true, sent + 3),
            "a reaped shell is not paused"
        );
        assert!(!job.life().is_paused());
        // Each change was counted once, whoever made it, the stop's CONT included.
        let Standing::Over { turns, .. } = job.standing() else {
            panic!("reaped: {:?}", job.standing());
        };
        assert_eq!((turns.paused, turns.resumed), (3, 3), "{turns:?}");
        assert!(turns.last_paused.is_some() && turns.last_paused <= turns.last_resumed);
    }

    #[test]
    fn a_signal_the_shell_survives_explains_nothing() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let (child, job) = stood_in(&dir);
        // It ignores INT, then dies of a KILL nobody wrote to its kill file.
        assert!(job.signal(libc::SIGINT));
        reap(&job, child);
        let life = job.life();
        assert_eq!(life.exit().map(|e| e.signal), Some(Some(libc::SIGKILL)));
        assert!(!life.killed(), "{life:?}");
        assert_eq!(life.reason(), None);
    }

    #[test]
    fn the_first_reason_to_stop_stands_and_a_pause_ends_with_it() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let (child, job) = stood_in(&dir);
        assert!(job.signal(libc::SIGSTOP));
        assert!(job.life().is_paused());
        assert!(job.stop(Stop::Kill("killed: by a test".into())));
        let life = job.life();
        assert!(!life.is_paused(), "a stop continues a paused job");
        assert!(life.killed() && life.is_running());
        assert!(!job.time_out(Duration::from_secs(1)), "already stopping");
        assert!(job.signal(libc::SIGKILL));
        reap(&job, child);
        let life = job.life();
        assert!(!life.timed_out());
        assert_eq!(life.reason().as_deref(), Some("killed: by a test"));
        assert_eq!(life.outcome(), Some(false));
    }

    #[test]
    fn a_shutdown_outranks_a_stop_under_way() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let (child, job) = stood_in(&dir);
        assert!(job.time_out(Duration::from_secs(1)));
        assert!(job.stop(Stop::Shutdown));
        reap(&job, child);
        let life = job.life();
        assert!(
            life.interrupted() && life.killed() && !life.timed_out(),
            "{life:?}"
        );
    }

    #[test]
    fn every_end_reads_back_the_same_after_a_restart() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let spool = spool_in(&dir.path().join("spool"));
        let ended = |how: &dyn Fn(&Job) -> bool| {
            let child = stand_in();
            let job = running_job(&spool, child.pid());
            assert!(how(&job));
            reap(&job, child);
            job
        };
        let never = new_job(&spool, 3, "never", Duration::ZERO);
        never.mark_failed_to_start("terminalfs: cannot make pipes: no room\n");
        let child = stand_in();
        let lost = running_job(&spool, child.pid());
        drop(child);
        let jobs = [
            ended(&|_| true),
            ended(&|job| job.signal(libc::SIGKILL)),
            ended(&|job| job.time_out(Duration::from_secs(60))),
            ended(&|job| job.stop(Stop::Kill("killed: a test".into()))),
            ended(&|job| job.stop(Stop::Shutdown)),
            never,
            lost,
        ];
        let ms =
            |t: Option<SystemTime>| t.map(|t| t.duration_since(UNIX_EPOCH).unwrap().as_millis());
        for job in &jobs {
            let record = job.record(&job.state.lock());
            let capture = spool.capture("again", b"true");
            let restored = Job::restore(2, &record, capture, Duration::ZERO, None)
                .expect("the record reads back");
            let (before, after) = (job.life(), restored.life());
            let interrupted = before.interrupted() || before.is_running();
            assert_eq!(after.interrupted(), interrupted, "{before:?}");
            assert_eq!(after.killed(), before.killed(), "{before:?}");
            assert_eq!(after.timed_out(), before.timed_out(), "{before:?}");
            assert_eq!(after.pid(), before.pid());
            assert_eq!(ms(after.started_at()), ms(before.started_at()));
            assert_eq!(restored.snapshot().launch, job.snapshot().launch);
            assert!(after.outcome().is_some());
            if interrupted {
                assert_eq!(after.reason().as_deref(), Some(DRIVER_STOPPED));
                assert_eq!(after.outcome(), Some(false));
            } else {
                assert_eq!(after.reason(), before.reason(), "{before:?}");
                assert_eq!(after.exit(), before.exit());
                assert_eq!(after.outcome(), before.outcome());
                assert_eq!(ms(after.finished_at()), ms(before.finished_at()));
            }
        }
    }

    #[test]
    fn the_shell_and_directory_it_ran_with_are_kept_in_the_record() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let spool = spool_in(&dir.path().join("spool"));
        // Nothing signals its pid here: no process needs to stand in.
        let job = running_job(&spool, i32::MAX);
        let ran_with = Launch {
            shell: "/bin/sh".into(),
            cwd: "/tmp".into(),
        };
        assert_eq!(job.snapshot().launch.as_ref(), Some(&ran_with));
        assert!(job.mark_exited(exit(0, None)));
        let record = job.record(&job.state.lock());
        assert_eq!(
            (&record["shell"], &record["cwd"]),
            (&json!("/bin/sh"), &json!("/tmp"))
        );
        let restore = |record: &Value| {
            let capture = spool.capture("again", b"true");
            Job::restore(2, record, capture, Duration::ZERO, None).expect("it reads back")
        };
        assert_eq!(restore(&record).snapshot().launch, Some(ran_with));
        // A record written before they were kept: it reads back without them, and
        // saves them as null again.
        let mut old = record.clone();
        let map = old.as_object_mut().expect("a record is an object");
        map.remove("shell");
        map.remove("cwd");
        let restored = restore(&old);
        assert_eq!(restored.snapshot().launch, None);
        assert_eq!(restored.life().exit(), job.life().exit());
        let again = restored.record(&restored.state.lock());
        assert!(
            again["shell"].is_null() && again["cwd"].is_null(),
            "{again}"
        );
    }

    #[test]
    fn the_times_its_streams_last_grew_are_kept_in_the_record() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let spool = spool_in(&dir.path().join("spool"));
        let job = new_job(&spool, 1, "grew", Duration::ZERO);
        let started = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        // Nothing signals its pid here: no process needs to stand in.
        job.mark_started(i32::MAX, started, Instant::now());
        // Written a while after the start (whether or not the machine slept between):
        // the stream's time is the wall clock's when the bytes came.
        let wrote = started + Duration::from_millis(90_123);
        job.state
            .lock()
            .capture
            .append_at(Stream::Stdout, b"hello\n", wrote);
        assert_eq!(job.grew_at(Stream::Stdout), Some(wrote));
        assert_eq!(job.grew_at(Stream::Output), Some(wrote));
        assert_eq!(job.grew_at(Stream::Stderr), Some(started), "never written");
        assert!(job.mark_exited(exit(0, None)));
        let ended = job.finished_at().expect("it ended");
        assert!(ended > wrote + Duration::from_secs(1));
        let record = job.record(&job.state.lock());
        assert_eq!(record[STDOUT_GREW_KEY], json!(1_700_000_090_123_u64));
        assert!(record[STDERR_GREW_KEY].is_null(), "{record}");
        // Restored with what it wrote: each stream has the time it last grew.
        let restore = |record: &Value| {
            let mut capture = spool.capture("again", b"true");
            capture.append(Stream::Stdout, b"hello\n");
            Job::restore(2, record, capture, Duration::ZERO, None).expect("it reads back")
        };
        let restored = restore(&record);
        assert_eq!(restored.grew_at(Stream::Stdout), Some(wrote));
        assert_eq!(restored.grew_at(Stream::Output), Some(wrote));
        assert_eq!(restored.grew_at(Stream::Stderr), Some(started));
        // Saved again (as a restart does), the times stay.
        let again = restored.record(&restored.state.lock());
        assert_eq!(again[STDOUT_GREW_KEY], record[STDOUT_GREW_KEY]);
        // A record from before the times were kept: what was written holds the end.
        let mut old = record.clone();
        let map = old.as_object_mut().expect("a record is an object");
        map.remove(STDOUT_GREW_KEY);
        map.remove(STDERR_GREW_KEY);
        let restored = restore(&old);
        let ended = restored.finished_at();
        assert!(ended.is_some());
        assert_eq!(restored.grew_at(Stream::Stdout), ended);
        assert_eq!(restored.grew_at(Stream::Stderr), Some(started));
    }

    #[test]
    fn a_record_whose_terminal_is_out_of_bounds_is_refused() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let spool = spool_in(&dir.path().join("spool"));
        let job = new_job(&spool, 1, "drawn", Duration::ZERO);
        // Still running when saved: a restart draws its screen again from its output.
        let mut record = job.record(&job.state.lock());
        let restore = |record: &Value| {
            let capture = spool.capture("again", b"true");
            Job::restore(2, record, capture, Duration::ZERO, None)
        };
        record["terminal"] = json!({"cols": 40, "rows": 10, "cursor": [0, 0], "screen": ""});
        let restored = restore(&record).expect("a terminal of 40x10 reads back");
        assert!(restored.is_terminal());
        for (cols, rows) in [(1001, 1), (1000, 1000), (0, 10), (1_u64 << 40, 1)] {
            record["terminal"]["cols"] = json!(cols);
            record["terminal"]["rows"] = json!(rows);
            let refused = restore(&record).err();
            assert!(
                refused
                    .as_deref()
                    .is_some_and(|why| why.contains("terminal")),
                "{cols}x{rows}: {refused:?}"
            );
        }
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
        let sent = job.signal_group(libc::SIGTERM);
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
        assert!(job.signal_group(libc::SIGKILL));
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
