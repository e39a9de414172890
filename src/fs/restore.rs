//! Bringing back, at start, the commands an earlier driver left in the spool.

use super::names::{self, Slot};
use super::state::{Command, Run};
use super::Tree;
use crate::policy::parse_directives;
use crate::spool::{Spool, Store};
use crate::supervisor::Job;
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::SystemTime;

/// The mark that keeps a command pinned across restarts (see [`keep_pin`]).
const PINNED: &str = "pinned";
/// The mark that lists the files removed one by one.
const REMOVED: &str = "removed";

/// A command found in the spool, ready to be shown again.
pub struct Comeback {
    pub name: String,
    pub text: Vec<u8>,
    /// When it was made (refused) or last read: its `--keep` clock starts there.
    pub created: SystemTime,
    pub last_read: SystemTime,
    pub returning: Returning,
    /// What its record's marks kept of it (see [`keep_pin`]).
    pub marks: Map<String, Value>,
}

pub enum Returning {
    Denied {
        reason: String,
        store: Arc<Store>,
    },
    /// A job that has stopped, with its output.
    Job(Arc<Job>),
}

impl Tree {
    /// Keeps refused commands' records in `spool` and counts its evictions on
    /// `cmd/index.md`; the first call wins.
    pub fn set_spool(&self, spool: Arc<Spool>) {
        let _ = self.spool.set(spool);
    }

    /// Shows again commands an earlier driver left: finished ones with their output,
    /// refused ones with their reason, each under its old name with its `--keep` clock
    /// running from its last read. Returns how many came back; one whose name is
    /// invalid or taken is named in `log` and left out.
    pub fn restore(&self, comebacks: Vec<Comeback>, log: &dyn Fn(&str)) -> usize {
        self.locked(|state, _| {
            let mut count = 0;
            for comeback in comebacks {
                let name = comeback.name;
                if names::check_draft_name(name.as_bytes()).is_err()
                    || state.cmd.contains_key(&name)
                {
                    log(&format!(
                        "left out cmd/{name} at start: the name is invalid or taken"
                    ));
                    continue;
                }
                let text: Arc<[u8]> = comeback.text.into();
                let keep = parse_directives(&String::from_utf8_lossy(&text))
                    .ok()
                    .and_then(|d| d.keep)
                    .unwrap_or(self.config.keep);
                let run = match comeback.returning {
                    Returning::Denied { reason, store } => Run::Denied {
                        reason,
                        store: Some(store),
                    },
                    Returning::Job(job) => Run::Job(job),
                };
                let id = self.add_command(state, name, text, run, keep, None);
                if let Some(command) = state.command_mut(id) {
                    command.created = comeback.created;
                    command.idle_since = comeback.last_read;
                    command.pinned = comeback.marks.get(PINNED) == Some(&Value::Bool(true));
                    command.hidden = removed_files(&comeback.marks);
                }
                count += 1;
            }
            count
        })
    }
}

/// Keeps in its record's marks that `command` is pinned and which files were removed
/// from it, so a restarted driver shows it the same: still pinned, the same files
/// gone. A command whose spawn is still queued has no record yet; it cannot be
/// reached to have a file removed (lookups under it wait for its job).
pub(super) fn keep_pin(command: &Command) {
    let store = match &command.run {
        Run::Job(job) => job.store(),
        Run::Denied {
            store: Some(store), ..
        } => store.clone(),
        Run::Denied { store: None, .. } | Run::Starting => return,
    };
    let removed: Vec<&str> = Slot::all()
        .filter(|slot| command.hidden & slot.bit() != 0)
        .map(Slot::name)
        .collect();
    store.mark(PINNED, Value::Bool(command.pinned));
    store.mark(REMOVED, removed.into());
}

/// The files a record's marks say were removed, as `Command::hidden` bits; names of
/// files this version does not have are left out.
fn removed_files(marks: &Map<String, Value>) -> u16 {
    marks
        .get(REMOVED)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter_map(Slot::from_name)
        .fold(0, |hidden, slot| hidden | slot.bit())
}
