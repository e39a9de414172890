//! `/events`: one line per change of any command, `<RFC 3339 time> <name> <word>`,
//! with the words `running`, `paused`, `completed <code>`, `error <code>`, `denied`
//! and `removed`; `error` alone for a command whose end no driver saw (it ran when its
//! driver crashed, or its record was lost), as `status` and `wait` say `error` and
//! `result.json` has no exit code. Each open first lists every command's state, then
//! streams changes.
//!
//! A feed is a handle's memory of the state it last reported for each name; a read
//! compares that with the tree now and turns every difference into a line. A read
//! with nothing new is parked like `follow` (woken by any command's news) and ends
//! with end-of-file after `--wait-timeout` of silence.
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
//! less often: one per difference between what the feed said and the tree then (a
//! command that came and went meanwhile is not named).

use super::state::{Command, Run, State};
use crate::policy::audit::rfc3339;
use crate::supervisor::Standing;
use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

/// How many bytes before a read a feed keeps, for a reader that reads back from the
/// end (`tail -n 1000` reads back about 60 KiB).
const KEPT_BEHIND: u64 = 64 * 1024;

/// How many bytes of lines a feed holds at most before its size stops growing (see the
/// module's text): room for [`KEPT_BEHIND`] and a few thousand lines not read yet. A
/// look at the tree may add one line per command past it.
pub(super) const HELD_AT_MOST: usize = 256 * 1024;

/// What one open of `/events` has said so far.
#[derive(Default)]
pub(super) struct Feed {
    /// The word last reported for each name.
    seen: BTreeMap<String, String>,
    /// Lines made but not read yet, starting at byte offset `base` of the stream.
    unread: Vec<u8>,
    base: u64,
    /// Since when this handle has streamed without an end-of-file: since it was first
    /// read to its end after its open or its last end-of-file.
    since: Option<Instant>,
    /// The thread that opened it (0: not known).
    pub opener: u32,
}

/// A command's state as an event word, and when it came to be; None while it has
/// no job yet (it is about to start).
fn word_of(command: &Command) -> Option<(String, SystemTime)> {
    match &command.run {
        Run::Denied { .. } => Some(("denied".to_string(), command.created)),
        Run::Starting => None,
        Run::Job(job) => Some(job_word(job.standing())),
    }
}

/// The word of a command that has a job, and when it came to be.
fn job_word(standing: Standing) -> (String, SystemTime) {
    match standing {
        Standing::Over { success, code, at } => {
            let word = if success { "completed" } else { "error" };
            let at = at.unwrap_or_else(SystemTime::now);
            // No code is made up for a command whose end was never seen.
            match code {
                Some(code) => (format!("{word} {code}"), at),
                None => (word.to_string(), at),
            }
        }
        Standing::Running { paused: true, .. } => ("paused".to_string(), SystemTime::now()),
        Standing::Running { since, .. } => {
            ("running".to_string(), since.unwrap_or_else(SystemTime::now))
        }
    }
}

impl Feed {
    /// A feed opened by thread `opener`.
    pub fn opened_by(opener: u32) -> Feed {
        Feed {
            opener,
            ..Feed::default()
        }
    }

    /// Adds a line for every change since the last look; true when any was added.
    fn catch_up(&mut self, state: &State) -> bool {
        let mut lines: Vec<(SystemTime, String)> = Vec::new();
        let mut now: BTreeMap<String, String> = BTreeMap::new();
        for (name, id) in &state.cmd {
            let Some((word, at)) = state.command(*id).and_then(word_of) else {
                continue;
            };
            if self.seen.get(name) != Some(&word) {
                // Running again after this feed saw it otherwise (paused): it resumed
                // now, not when it first started.
                let resumed = self.seen.contains_key(name) && word == "running";
                let at = if resumed { SystemTime::now() } else { at };
                lines.push((at, format!("{name} {word}")));
            }
            now.insert(name.clone(), word);
        }
        for name in self.seen.keys().filter(|name| !now.contains_key(*name)) {
            lines.push((SystemTime::now(), format!("{name} removed")));
        }
        self.seen = now;
        // In the order things happened; names break ties.
        lines.sort();
        for (at, line) in &lines {
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
        let finished = started + Duration::from_secs(3);
        let over = |success, code| Standing::Over {
            success,
            code,
            at: Some(finished),
        };
        let running = Standing::Running {
            since: Some(started),
            paused: false,
        };
        for (standing, word, at) in [
            (running, "running", started),
            (over(true, Some(0)), "completed 0", finished),
            (over(false, Some(3)), "error 3", finished),
            (over(false, Some(143)), "error 143", finished),
            (over(false, Some(0)), "error 0", finished),
            (over(false, Some(-1)), "error -1", finished),
            (over(false, None), "error", finished),
        ] {
            assert_eq!(job_word(standing), (word.to_string(), at), "{standing:?}");
        }
        // Times not known are now: a pause, a shell not spawned yet, an end not timed.
        let before = SystemTime::now();
        for (standing, word) in [
            (
                Standing::Running {
                    since: Some(started),
                    paused: true,
                },
                "paused",
            ),
            (
                Standing::Running {
                    since: None,
                    paused: false,
                },
                "running",
            ),
            (
                Standing::Over {
                    success: false,
                    code: None,
                    at: None,
                },
                "error",
            ),
        ] {
            let (said, at) = job_word(standing);
            assert_eq!(said, word, "{standing:?}");
            assert!(at >= before, "{standing:?}");
        }
    }
}
