//! Commands' stderr files: one hidden file per command, in the mount's root, that the
//! supervisor opens through the mount and hands to the command as its stderr, so that
//! every stderr write becomes a request here and can be ordered against stdout (see
//! `supervisor::capture`). The file is listed nowhere. Its name, predictable and made
//! ahead for the next command, resolves only for the supervisor's thread that opens
//! it, until it has; that open is the only one taken before the command starts. Once
//! the command runs, reopens through `/proc/<pid>/fd/2` (`/dev/stderr`) reach its inode
//! directly, and are taken from the command's own processes (its session) alone. So no
//! other process can write into a command's stderr or hold it open. A refusal is
//! EACCES, logged with `--verbose` (anyone may ask, as often as they like).
//!
//! None of this takes the tree's lock: a stderr write is served while other requests
//! hold it, and the supervisor's work for it never waits on the tree.

use super::{Attr, Error, FsResult, Kind, Tree};
use crate::supervisor::capture::{parse_stderr_file_name, Access, Caller};
use std::time::SystemTime;

/// Inode numbers of stderr files: far above every other inode of the tree.
const STDERR_BASE: u64 = 1 << 62;

/// The job whose stderr file has inode `ino`, if it is one.
pub fn stderr_job(ino: u64) -> Option<u64> {
    ino.checked_sub(STDERR_BASE)
}

impl Tree {
    fn stderr_attr(id: u64) -> Attr {
        let now = SystemTime::now();
        Attr {
            ino: STDERR_BASE + id,
            kind: Kind::File,
            size: 0,
            perm: 0o200,
            mtime: now,
            ctime: now,
            blksize: 4096,
            steady: false,
        }
    }

    /// A lookup of `name` in the root by `caller` that may be a stderr file; None when
    /// the name is not one (the ordinary lookup applies).
    pub fn stderr_lookup(&self, name: &[u8], caller: Caller) -> Option<FsResult<Attr>> {
        let id = parse_stderr_file_name(name)?;
        Some(stderr_access(self.spawner.stderr_lookup(id, caller)).map(|()| Self::stderr_attr(id)))
    }

    /// Attributes of job `id`'s stderr file: empty, write-only.
    pub fn stderr_getattr(&self, id: u64) -> Attr {
        Self::stderr_attr(id)
    }

    /// An open of job `id`'s stderr file by `caller`.
    pub fn stderr_open(&self, id: u64, caller: Caller) -> FsResult<()> {
        stderr_access(self.spawner.stderr_open(id, caller))
    }

    /// A write to job `id`'s stderr file; returns the bytes taken.
    pub fn stderr_write(&self, id: u64, bytes: &[u8]) -> FsResult<u32> {
        if self.spawner.stderr_write(id, bytes) {
            Ok(bytes.len() as u32)
        } else {
            Err(Error::new(
                libc::EBADF,
                "the command of this stderr file takes no more output",
            ))
        }
    }

    /// The last close of one open of job `id`'s stderr file.
    pub fn stderr_release(&self, id: u64) {
        self.spawner.stderr_release(id);
    }
}

/// A lookup's or an open's answer as the caller sees it.
fn stderr_access(access: Access) -> FsResult<()> {
    match access {
        Access::Granted => Ok(()),
        Access::Refused => Err(Error::new(
            libc::EACCES,
            "a command's stderr file is opened only by terminalfs as it starts the \
             command, and reopened only by the command's own processes",
        )),
        Access::Unknown => Err(Error::new(
            libc::ENOENT,
            "no command has this stderr file (any more)",
        )),
    }
}
