//! Commands' stderr files: one hidden file per command, in the mount's root, that the
//! supervisor opens through the mount and hands to the command as its stderr, so that
//! every stderr write becomes a request here and can be ordered against stdout (see
//! `supervisor::capture`). The file is listed nowhere; its name resolves only while
//! the supervisor opens it, and reopens through `/proc/<pid>/fd/2` (`/dev/stderr`)
//! reach its inode directly.
//!
//! None of this takes the tree's lock: a stderr write is served while other requests
//! hold it, and the supervisor's work for it never waits on the tree.

use super::{Attr, Error, FsResult, Kind, Tree};
use crate::supervisor::capture::parse_stderr_file_name;
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

    /// A lookup of `name` in the root that may be a stderr file; None when the name
    /// is not one (the ordinary lookup applies).
    pub fn stderr_lookup(&self, name: &[u8]) -> Option<FsResult<Attr>> {
        let id = parse_stderr_file_name(name)?;
        Some(if self.spawner.stderr_lookup(id) {
            Ok(Self::stderr_attr(id))
        } else {
            Err(Error::new(
                libc::ENOENT,
                "no command is being started with this stderr file",
            ))
        })
    }

    /// Attributes of job `id`'s stderr file: empty, write-only.
    pub fn stderr_getattr(&self, id: u64) -> Attr {
        Self::stderr_attr(id)
    }

    /// An open of job `id`'s stderr file.
    pub fn stderr_open(&self, id: u64) -> FsResult<()> {
        if self.spawner.stderr_open(id) {
            Ok(())
        } else {
            Err(Error::new(
                libc::ENOENT,
                "the command of this stderr file is gone",
            ))
        }
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
