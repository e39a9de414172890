//! Where a command is in its life: starting, running, stopping with the reason, done
//! with its exit and how it ended, each stage carrying its own facts; its pauses and
//! resumes counted; and the few facts `/events` compares between two looks.

use crate::spool::Extent;
use std::time::{Duration, Instant, SystemTime};

pub use crate::spool::DRIVER_STOPPED;

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
    pub(super) fn of(extent: &Extent) -> StreamBytes {
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
    pub(super) fn never_ran() -> Exit {
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
    pub(super) since: Instant,
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
    pub(super) fn died_of(self, exit: &Exit) -> Option<i32> {
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
                crate::supervisor::signals::name(*signal)
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
    pub(super) fn set(&mut self, shell: &mut Shell, paused: bool) -> bool {
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
