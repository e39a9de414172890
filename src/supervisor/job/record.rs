//! A job's record: everything but its output, saved next to its output when it starts,
//! when its shell stops and when its output ends, and read back by a restarted driver
//! ([`Job::restore`]).

use super::*;

/// Why a saved record cannot bring its job back. The record is left in place; the
/// sentence is logged once, where the restart skips it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordError {
    /// The record names no command.
    NoName,
    /// The record's kept terminal is not in the form this program saves.
    UnknownTerminal,
}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RecordError::NoName => "the record has no name",
            RecordError::UnknownTerminal => "the record's terminal is not one terminalfs makes",
        })
    }
}

impl std::error::Error for RecordError {}

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

/// A terminal's screen as the record keeps it, so `screen` and `result.json` read the
/// same after a restart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct KeptScreen {
    pub(super) size: TerminalSize,
    /// (row, column), from 0.
    pub(super) cursor: (u16, u16),
    pub(super) text: String,
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
    ) -> Result<Job, RecordError> {
        let name = meta["name"].as_str().ok_or(RecordError::NoName)?;
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
        // The driver died while it ran: it never saw the command end.
        let unseen_end = exit.is_none() && !flag(crate::spool::RECORD_LOST_KEY);
        let interrupted = unseen_end || flag("interrupted");
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
        if unseen_end {
            // Whatever was still in its pipes when the driver died is lost. (A driver
            // that stopped in order read them to their end, or left the output unsealed,
            // which the spool reads as cut short.)
            capture.cut_short();
        }
        let kept_screen = match &meta["terminal"] {
            Value::Null => None,
            terminal => {
                Some(KeptScreen::from_record(terminal).ok_or(RecordError::UnknownTerminal)?)
            }
        }
        .map(|kept| match exit {
            // Saved before its last output, while it still ran.
            None => KeptScreen::redraw(kept.size, &capture).unwrap_or(kept),
            Some(_) => kept,
        });
        let job = Job {
            id,
            name: name.to_string(),
            store: capture.store().clone(),
            shown: Mutex::new(Shown::of(&capture)),
            cgroup: None,
            containment: meta["containment"].as_str().unwrap_or("").to_string(),
            launch: Launch::from_record(meta),
            memory: meta["memory_limit"].as_u64().map(|bytes| (bytes, false)),
            input: None,
            kept_screen,
            sandbox: parking_lot::Mutex::new(None),
            remote: std::sync::OnceLock::new(),
            restored_host: meta["host"].as_str().map(str::to_string),
            restored_times: meta["remote_times"][0]
                .as_u64()
                .zip(meta["remote_times"][1].as_u64()),
            state: Watched::new(State {
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
                open_pipes: 0,
                kill_grace,
                pauses_sent: 0,
                turns: Turns::default(),
            }),
            capture: Watched::new(capture),
        };
        if interrupted {
            // Said once, so the next restart reads the same story.
            let capture = job.capture.lock();
            capture.save(&job.record(&job.state.lock(), &capture));
        }
        Ok(job)
    }

    /// What a restart needs to bring the job back (everything but its output).
    pub(super) fn record(&self, state: &State, capture: &Capture) -> Value {
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
            "containment": self.containment(),
            "shell": self.launch().map(|launch| launch.shell.to_string_lossy().into_owned()),
            "cwd": self.launch().map(|launch| launch.cwd.to_string_lossy().into_owned()),
            "host": self.host(),
            "remote_times": self.remote_times().map(|(start, end)| [start, end]),
            "memory_limit": self.memory.map(|(bytes, _)| bytes),
            "terminal": self.kept_screen_now().map(|kept| kept.record()),
            STDOUT_GREW_KEY: ms(capture.grew_at(Stream::Stdout)),
            STDERR_GREW_KEY: ms(capture.grew_at(Stream::Stderr)),
        })
    }
}
