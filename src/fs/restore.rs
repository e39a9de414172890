//! Bringing back, at start, the commands an earlier driver left in the spool.

use super::names;
use super::state::Run;
use super::Tree;
use crate::policy::parse_directives;
use crate::spool::{Spool, Store};
use crate::supervisor::Job;
use std::sync::Arc;
use std::time::SystemTime;

/// A command found in the spool, ready to be shown again.
pub struct Comeback {
    pub name: String,
    pub text: Vec<u8>,
    /// When it was made (refused) or last read: its `--keep` clock starts there.
    pub created: SystemTime,
    pub last_read: SystemTime,
    pub returning: Returning,
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
                if names::check_name(name.as_bytes()).is_err() || state.cmd.contains_key(&name) {
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
                }
                count += 1;
            }
            count
        })
    }
}
