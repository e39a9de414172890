//! `/events`: one line per change of any command, `<RFC 3339 time> <name> <word>`,
//! with the words `running`, `paused`, `completed <code>`, `error <code>`, `denied`
//! and `removed`; `error` alone for a command whose end no driver saw (it ran when its
//! driver crashed, or its record was lost), as `status` and `wait` say `error` and
//! `result.json` has no exit code. Each open first lists every command's state, then
//! streams changes.
//!
//! A feed is a handle's memory of what it last told of each name; a read compares
//! that with the tree now and turns every difference into lines. What a command went
//! through between two looks is not lost: each job's `Standing` counts its pauses and
//! resumes and has the time of its start and of its last pause and resume, so a feed
//! that last told of a command as running (or not at all) and now finds it over tells
//! `running` (at its start) before its end, and a pause and resume between two looks
//! are told as `paused` and `running` (at their times; a pause or resume before the
//! last of them, whose time is not kept, takes the time of the line before it). A
//! command's lines are in time order. A read with nothing new is parked like
//! `follow` (woken by any command's news) and ends with end-of-file after
//! `--wait-timeout` of silence.
//!
//! A busy mount is never silent, so a feed also ends once `--wait-timeout` has passed
//! since it was first read to its end (after its open or last end-of-file), at the
//! next read that finds nothing unread: a tool that walks the tree (`grep -r`)
//! reads every file to its end, and must not stay on this one while commands come
//! and go. A later read of the same handle goes on where it stopped (`tail -f`), and
//! nothing made for it is lost.
//!
//! `tail -f` on FUSE polls `fstat` and reads exactly the growth of the size, so a
//! feed has a size: every byte it has made, changes up to now included. A `stat`
//! carries no file handle, only the calling thread, so the feed its thread opened
//! answers it (see [`Feed::opener`]); for anyone else the size is 0. The last
//! [`KEPT_BEHIND`] bytes before a read are kept, so a reader going by the size may also
//! read back from the end (`tail -n 10` does).
//!
//! Only a read lets go of lines, so a size asked for again and again with no read
//! (a process polling `fstat`) would hold every line made while the feed is open. A
//! feed that holds [`HELD_AT_MOST`] bytes or more therefore makes no more lines for its
//! size: it stops growing until its reader reads. Nothing made is dropped; the changes
//! since are lines at the next read that reaches the end, as for any reader that looks
//! less often (a command that came and went meanwhile is not named). For the same
//! bound a look tells at most [`TURNS_TOLD`] of one command's pauses and resumes: the
//! last of them, when a handle was not read while it was paused and resumed more often.

use super::state::{Command, Run, State};
use crate::policy::audit::rfc3339;
use crate::supervisor::{Standing, Turns};
use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

/// How many bytes before a read a feed keeps, for a reader that reads back from the
/// end (`tail -n 1000` reads back about 60 KiB).
const KEPT_BEHIND: u64 = 64 * 1024;

/// How many bytes of lines a feed holds at most before its size stops growing (see the
/// module's text): room for [`KEPT_BEHIND`] and a few thousand lines not read yet. A
/// look at the tree may add a few lines per command past it.
pub(super) const HELD_AT_MOST: usize = 256 * 1024;

/// How many of one command's pauses and resumes one look tells at most (even: a
/// pause and its resume go together).
const TURNS_TOLD: u32 = 64;

/// What a feed last told of one name.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Told {
    /// The command it told of: the name given to another command since is a removal
    /// and a new command.
    id: u64,
    /// Its end (or its denial) was told: nothing follows but its removal.
    ended: bool,
    /// The pauses and the resumes told.
    paused: u32,
    resumed: u32,
    /// The time of its last line: its later lines never go before it.
    at: SystemTime,
}

/// What one open of `/events` has said so far.
#[derive(Default)]
pub(super) struct Feed {
    /// Whether the state of every command was listed (the first look after the open).
    listed: bool,
    /// What was last told of each name.
    told: BTreeMap<String, Told>,
    /// Lines made but not read yet, starting at byte offset `base` of the stream.
    unread: Vec<u8>,
    base: u64,
    /// Since when this handle has streamed without an end-of-file: since it was first
    /// read to its end after its open or its last end-of-file.
    since: Option<Instant>,
    /// The thread that opened it (0: not known).
    pub opener: u32,
}

/// What a command's lines are made from: a denial, or its job's standing; None while
/// it has no job yet (it is about to start).
fn facts_of(command: &Command) -> Option<Facts> {
    match &command.run {
        Run::Denied { .. } => Some(Facts::Denied(command.created)),
        Run::Starting => None,
        Run::Job(job) => Some(Facts::Job(job.standing())),
    }
}

#[derive(Debug, Clone, Copy)]
enum Facts {
    Denied(SystemTime),
    Job(Standing),
}

/// The word of a job that is over, and when it ended (None: not known).
fn end_word(success: bool, code: Option<i32>) -> String {
    let word = if success { "completed" } else { "error" };
    // No code is made up for a command whose end was never seen.
    match code {
        Some(code) => format!("{word} {code}"),
        None => word.to_string(),
    }
}

/// The word and time of a job as it stands now, for the list an open begins with.
fn job_word(standing: Standing) -> (String, Option<SystemTime>) {
    match standing {
        Standing::Over {
            success, code, at, ..
        } => (end_word(success, code), at),
        Standing::Running {
            paused: true,
            turns,
            ..
        } => ("paused".to_string(), turns.last_paused),
        Standing::Running { since, turns, .. } => {
            let at = if turns.resumed > 0 {
                turns.last_resumed
            } else {
                since
            };
            ("running".to_string(), at)
        }
    }
}

/// The lines of the changes of a job a feed last told of as `told` (nothing: it is
/// new to the feed), in order, with their times where known: its start, the pauses
/// and resumes not told yet, its end.
fn job_changes(told: Option<&Told>, standing: Standing) -> Vec<(Option<SystemTime>, String)> {
    let (started, turns, over) = match standing {
        // A job whose shell is not spawned yet runs from now on.
        Standing::Running { since, turns, .. } => {
            (Some(since.or_else(|| Some(SystemTime::now()))), turns, None)
        }
        Standing::Over {
            success,
            code,
            at,
            since,
            turns,
        } => (since.map(Some), turns, Some((end_word(success, code), at))),
    };
    let mut lines = Vec::new();
    if told.is_none() {
        lines.extend(started.map(|at| (at, "running".to_string())));
    }
    let done = told.map_or(0, |told| told.paused + told.resumed);
    let total = turns.paused + turns.resumed;
    // The last TURNS_TOLD at most, from a change of the kind that comes next.
    let skipped = total.saturating_sub(done).saturating_sub(TURNS_TOLD);
    let done = done + skipped.next_multiple_of(2);
    // Pauses and resumes alternate, a pause first: change n (from 1) is a pause when
    // odd, and only the last of each kind has its time.
    for n in done + 1..=total {
        lines.push(if n % 2 == 1 {
            let last = n.div_ceil(2) == turns.paused;
            (turns.last_paused.filter(|_| last), "paused".to_string())
        } else {
            let last = n / 2 == turns.resumed;
            (turns.last_resumed.filter(|_| last), "running".to_string())
        });
    }
    if let Some((word, at)) = over {
        lines.push((at.or_else(|| Some(SystemTime::now())), word));
    }
    lines
}

/// Times for a command's lines: each its own when known and not before the line
/// before it, else that line's (now for a first line).
fn in_time_order(
    after: Option<SystemTime>,
    lines: Vec<(Option<SystemTime>, String)>,
) -> Vec<(SystemTime, String)> {
    let mut last = after;
    lines
        .into_iter()
        .map(|(at, word)| {
            let at = match (at, last) {
                (Some(at), Some(last)) => at.max(last),
                (Some(at), None) => at,
                (None, Some(last)) => last,
                (None, None) => SystemTime::now(),
            };
            last = Some(at);
            (at, word)
        })
        .collect()
}

impl Feed {
    /// A feed opened by thread `opener`, with where every command stands now: what
    /// changes after the open is told after it, however late the first read comes.
    pub fn opened_by(opener: u32, state: &State) -> Feed {
        let mut feed = Feed {
            opener,
            ..Feed::default()
        };
        feed.catch_up(state);
        feed
    }

    /// Adds a line for every change since the last look; true when any was added.
    fn catch_up(&mut self, state: &State) -> bool {
        // (time, name, its place among the name's lines, line)
        let mut lines: Vec<(SystemTime, String, usize, String)> = Vec::new();
        let mut told: BTreeMap<String, Told> = BTreeMap::new();
        for (name, id) in &state.cmd {
            let Some(facts) = state.command(*id).and_then(facts_of) else {
                continue;
            };
            let before = self.told.get(name);
            // The same name on another command: the one told of was removed first.
            let replaced = before.filter(|before| before.id != *id).is_some();
            let before = before.filter(|before| before.id == *id);
            let (words, ended, turns) = match facts {
                Facts::Denied(at) => {
                    let words = before.is_none().then(|| (Some(at), "denied".to_string()));
                    (words.into_iter().collect(), true, Turns::default())
                }
                Facts::Job(standing) => {
                    let (turns, over) = match standing {
                        Standing::Running { turns, .. } => (turns, false),
                        Standing::Over { turns, .. } => (turns, true),
                    };
                    let words = match before {
                        Some(before) if before.ended => Vec::new(),
                        Some(before) => job_changes(Some(before), standing),
                        None if !self.listed => {
                            let (word, at) = job_word(standing);
                            vec![(at, word)]
                        }
                        None => job_changes(None, standing),
                    };
                    (words, over, turns)
                }
            };
            let mut words = in_time_order(before.map(|before| before.at), words);
            if replaced {
                let at = words.first().map_or_else(SystemTime::now, |(at, _)| *at);
                words.insert(0, (at, "removed".to_string()));
            }
            let at = words.last().map(|(at, _)| *at);
            told.insert(
                name.clone(),
                Told {
                    id: *id,
                    ended,
                    paused: turns.paused,
                    resumed: turns.resumed,
                    at: at
                        .or(before.map(|before| before.at))
                        .unwrap_or(SystemTime::UNIX_EPOCH),
                },
            );
            // A remote command's lines name its host after the word.
            let host = match state.command(*id).map(|command| &command.run) {
                Some(Run::Job(job)) => job.host().map(|host| format!(" {host}")),
                _ => None,
            }
            .unwrap_or_default();
            for (place, (at, word)) in words.into_iter().enumerate() {
                let host = if word == "removed" { "" } else { &host };
                lines.push((at, name.clone(), place, format!("{name} {word}{host}")));
            }
        }
        let now = SystemTime::now();
        for name in self.told.keys().filter(|name| !told.contains_key(*name)) {
            lines.push((now, name.clone(), 0, format!("{name} removed")));
        }
        self.told = told;
        self.listed = true;
        // In the order things happened; names, then each name's own order, break ties.
        lines.sort();
        for (at, _, _, line) in &lines {
            self.unread
                .extend_from_slice(format!("{} {line}\n", rfc3339(*at)).as_bytes());
        }
        !lines.is_empty()
    }

    /// The size of the stream: every byte made so far, with a line for each change
    /// up to now while the feed holds less than [`HELD_AT_MOST`]. A reader going by it
    /// reads that much without waiting.
    pub fn size(&mut self, state: &State) -> u64 {
        if self.unread.len() < HELD_AT_MOST {
            self.catch_up(state);
        }
        self.base + self.unread.len() as u64
    }

    /// Drops what lies before `offset`: the reader is past it.
    fn forget_before(&mut self, offset: u64) {
        let consumed = offset
            .saturating_sub(self.base)
            .min(self.unread.len() as u64);
        self.unread.drain(..consumed as usize);
        self.base += consumed;
    }

    /// The bytes at `offset`, at most `size`, once there are any; None to wait. Empty
    /// (end-of-file) once `limit` has passed since the stream began or last ended.
    pub fn read(
        &mut self,
        state: &State,
        offset: u64,
        size: usize,
        limit: Duration,
    ) -> Option<Vec<u8>> {
        self.forget_before(offset.saturating_sub(KEPT_BEHIND));
        if offset >= self.base + self.unread.len() as u64 {
            // Everything made so far was read: news, or the end of this stream.
            let since = *self.since.get_or_insert_with(Instant::now);
            if since.elapsed() >= limit {
                self.since = None;
                return Some(Vec::new());
            }
            if !self.catch_up(state) {
                return None;
            }
        }
        let start = offset.saturating_sub(self.base) as usize;
        let start = start.min(self.unread.len());
        let end = start.saturating_add(size).min(self.unread.len());
        Some(self.unread[start..end].to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    #[test]
    fn every_standing_has_its_word_and_time() {
        let started = UNIX_EPOCH + Duration::from_secs(1_000);
        let paused = started + Duration::from_secs(1);
        let resumed = started + Duration::from_secs(2);
        let finished = started + Duration::from_secs(3);
        let none = Turns::default();
        let once = Turns {
            paused: 1,
            resumed: 1,
            last_paused: Some(paused),
            last_resumed: Some(resumed),
        };
        let stopped = Turns {
            resumed: 0,
            last_resumed: None,
            ..once
        };
        let over = |success, code| Standing::Over {
            success,
            code,
            at: Some(finished),
            since: Some(started),
            turns: none,
        };
        let running = |since, paused, turns| Standing::Running {
            since,
            paused,
            turns,
        };
        let unseen = Standing::Over {
            success: false,
            code: None,
            at: None,
            since: Some(started),
            turns: none,
        };
        let ended = Some(finished);
        for (standing, word, at) in [
            (
                running(Some(started), false, none),
                "running",
                Some(started),
            ),
            (
                running(Some(started), false, once),
                "running",
                Some(resumed),
            ),
            (
                running(Some(started), true, stopped),
                "paused",
                Some(paused),
            ),
            (running(None, false, none), "running", None),
            (over(true, Some(0)), "completed 0", ended),
            (over(false, Some(3)), "error 3", ended),
            (over(false, Some(143)), "error 143", ended),
            (over(false, Some(0)), "error 0", ended),
            (over(false, Some(-1)), "error -1", ended),
            // No code is made up for an end never seen, nor a time not known.
            (unseen, "error", None),
        ] {
            assert_eq!(job_word(standing), (word.to_string(), at), "{standing:?}");
        }
    }

    /// The lines made for a job a feed told of as `told`, as `(time, word)`.
    fn changes(told: Option<&Told>, standing: Standing) -> Vec<(SystemTime, String)> {
        in_time_order(told.map(|told| told.at), job_changes(told, standing))
    }

    #[test]
    fn what_a_job_went_through_between_two_looks_is_told_in_order() {
        let started = UNIX_EPOCH + Duration::from_secs(1_000);
        let at = |secs| started + Duration::from_secs(secs);
        let word = |at, word: &str| (at, word.to_string());
        let told = |paused, resumed, at| Told {
            id: 1,
            ended: false,
            paused,
            resumed,
            at,
        };
        // Started and ended between two looks: its start, then its end.
        let ended = Standing::Over {
            success: true,
            code: Some(0),
            at: Some(at(1)),
            since: Some(started),
            turns: Turns::default(),
        };
        assert_eq!(
            changes(None, ended),
            [word(started, "running"), word(at(1), "completed 0")]
        );
        // Told running; paused and resumed twice, then ended: every change, only the
        // last pause and resume with their own times, none before the one before it.
        let turns = Turns {
            paused: 2,
            resumed: 2,
            last_paused: Some(at(6)),
            last_resumed: Some(at(7)),
        };
        let ended = Standing::Over {
            success: true,
            code: Some(0),
            at: Some(at(8)),
            since: Some(started),
            turns,
        };
        assert_eq!(
            changes(Some(&told(0, 0, started)), ended),
            [
                word(started, "paused"),
                word(started, "running"),
                word(at(6), "paused"),
                word(at(7), "running"),
                word(at(8), "completed 0"),
            ]
        );
        // Told paused (the first pause): what came after.
        assert_eq!(
            changes(Some(&told(1, 0, at(2))), ended),
            [
                word(at(2), "running"),
                word(at(6), "paused"),
                word(at(7), "running"),
                word(at(8), "completed 0"),
            ]
        );
        // A pause and resume while running: both, and nothing once told.
        let running = Standing::Running {
            since: Some(started),
            paused: false,
            turns: Turns {
                paused: 1,
                resumed: 1,
                ..turns
            },
        };
        assert_eq!(
            changes(Some(&told(0, 0, started)), running),
            [word(at(6), "paused"), word(at(7), "running")]
        );
        assert_eq!(changes(Some(&told(1, 1, at(7))), running), []);
        // A line is never before one told earlier: an end not timed is now.
        let unseen = Standing::Over {
            success: false,
            code: None,
            at: None,
            since: Some(started),
            turns: Turns::default(),
        };
        let before = SystemTime::now();
        let lines = changes(Some(&told(0, 0, at(5))), unseen);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert_eq!(lines[0].1, "error");
        assert!(lines[0].0 >= before);
        // A shell that never ran did not run: only its end.
        let never = Standing::Over {
            success: false,
            code: Some(-1),
            at: Some(at(1)),
            since: None,
            turns: Turns::default(),
        };
        assert_eq!(changes(None, never), [word(at(1), "error -1")]);
        // A handle not read while a command was paused and resumed a hundred times is
        // told the last of them, from a pause, the last two at their times.
        let often = Standing::Running {
            since: Some(started),
            paused: false,
            turns: Turns {
                paused: 100,
                resumed: 100,
                ..turns
            },
        };
        let lines = changes(Some(&told(0, 0, started)), often);
        assert_eq!(lines.len(), TURNS_TOLD as usize);
        assert_eq!(lines[0], word(started, "paused"));
        assert_eq!(
            lines[lines.len() - 2..],
            [word(at(6), "paused"), word(at(7), "running")]
        );
        let lines = changes(Some(&told(1, 0, at(2))), often);
        assert_eq!(lines[0], word(at(2), "running"));
        assert_eq!(lines.len(), TURNS_TOLD as usize - 1);
    }
}
