//! Commands found in the spool at start, turned into what the tree shows again.

use crate::fs::{Comeback, Returning};
use crate::spool::Restored;
use crate::supervisor::{RecordError, Supervisor};
use std::time::{Duration, UNIX_EPOCH};

/// Why a command found in the spool is not shown again; its files stay where they
/// are. Logged once, by the caller, with the directory it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Skipped {
    /// Its record names no command.
    NoName,
    /// It has neither output to show nor a reason it was refused.
    Empty,
    /// The supervisor cannot bring its job back from the record.
    Record(RecordError),
}

impl std::fmt::Display for Skipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Skipped::NoName => f.write_str("its record has no name"),
            Skipped::Empty => f.write_str("it has neither output nor a reason"),
            Skipped::Record(why) => write!(f, "{why}"),
        }
    }
}

/// What the tree needs to show again a command found in the spool, or why it is
/// skipped.
pub(super) fn comeback(supervisor: &Supervisor, found: Restored) -> Result<Comeback, Skipped> {
    let name = found.meta["name"]
        .as_str()
        .ok_or(Skipped::NoName)?
        .to_string();
    let last_read = found.store.last_read();
    let created = found.meta["created_ms"]
        .as_u64()
        .map_or(last_read, |ms| UNIX_EPOCH + Duration::from_millis(ms));
    let returning = match (found.meta["denied"].as_str(), found.capture) {
        (Some(reason), _) => Returning::Denied {
            reason: reason.to_string(),
            store: found.store,
        },
        (None, Some(capture)) => Returning::Job(
            supervisor
                .restore(&found.meta, capture, found.last_seen)
                .map_err(Skipped::Record)?,
        ),
        (None, None) => return Err(Skipped::Empty),
    };
    Ok(Comeback {
        name,
        text: found.command,
        created,
        last_read,
        returning,
        marks: found.marks,
    })
}
