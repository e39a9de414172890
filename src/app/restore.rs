//! Commands found in the spool at start, turned into what the tree shows again.

use crate::fs::{Comeback, Returning};
use crate::spool::Restored;
use crate::supervisor::Supervisor;
use std::time::{Duration, UNIX_EPOCH};

/// What the tree needs to show again a command found in the spool. The error is the
/// sentence logged as the reason the record is skipped, and nothing else: the
/// supervisor's restore answers in such a sentence too.
pub(super) fn comeback(supervisor: &Supervisor, found: Restored) -> Result<Comeback, String> {
    let name = found.meta["name"]
        .as_str()
        .ok_or("its record has no name")?
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
        (None, Some(capture)) => {
            Returning::Job(supervisor.restore(&found.meta, capture, found.last_seen)?)
        }
        (None, None) => return Err("it has neither output nor a reason".into()),
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
