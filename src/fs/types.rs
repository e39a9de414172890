//! The values the tree answers with: attributes, errno values, what an open asks for
//! and what a read or lookup gives back.

use crate::supervisor::News;
use std::borrow::Cow;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

/// Why an operation failed: the errno the caller gets and a sentence for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub errno: i32,
    pub reason: Cow<'static, str>,
    /// Logged whatever the log level: the writer has no other way to learn why (a
    /// write to a command's input that was not delivered). Others only when verbose.
    pub loud: bool,
}

impl Error {
    pub fn new(errno: i32, reason: impl Into<Cow<'static, str>>) -> Error {
        Error {
            errno,
            reason: reason.into(),
            loud: false,
        }
    }

    /// An error that is always logged.
    pub fn loud(errno: i32, reason: impl Into<Cow<'static, str>>) -> Error {
        Error {
            loud: true,
            ..Error::new(errno, reason)
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = std::io::Error::from_raw_os_error(self.errno);
        write!(f, "{} ({name})", self.reason)
    }
}

pub type FsResult<T> = Result<T, Error>;

/// Largest command text accepted.
pub const MAX_COMMAND: usize = 1 << 20;
/// Block size advertised for growing files, so `cat` reads in large chunks.
pub const GROWING_BLKSIZE: u32 = 1 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Dir,
    File,
}

/// Attributes of one inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attr {
    pub ino: u64,
    pub kind: Kind,
    pub size: u64,
    pub perm: u16,
    pub mtime: SystemTime,
    pub ctime: SystemTime,
    pub blksize: u32,
    /// These attributes hold for the inode's whole life (a blocking file's: size 0,
    /// the command's start), so the kernel may keep them.
    pub steady: bool,
}

impl Attr {
    pub(super) fn new(ino: u64, kind: Kind, size: u64, perm: u16, mtime: SystemTime) -> Attr {
        Attr {
            ino,
            kind,
            size,
            perm,
            mtime,
            ctime: mtime,
            steady: false,
            blksize: if kind == Kind::File {
                GROWING_BLKSIZE
            } else {
                4096
            },
        }
    }
}

/// What an open asks for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpenMode {
    pub write: bool,
    /// O_APPEND: every write goes to the end.
    pub append: bool,
}

/// How the adapter should open a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opened {
    pub fh: u64,
    /// Bypass the page cache: growing and blocking files, whose size changes.
    pub direct_io: bool,
    /// Every close of a descriptor must be heard (FLUSH): only a draft open for
    /// writing, whose closes check its text. Other closes cost the closer a round trip
    /// to the driver for nothing.
    pub flush: bool,
}

/// The job a read waits on when any command's news may answer it (`/events`).
pub const ANY_JOB: u64 = u64::MAX;

#[derive(Debug)]
pub enum Read {
    Data(Vec<u8>),
    /// `cmd/index.md` opened while a draft was settling (see `Draft::settling`): ask
    /// again after the tree reports a change, and at the deadline take the page as it
    /// is then ([`Tree::read_timed_out`](super::Tree::read_timed_out)).
    Later,
    /// Nothing to say yet; ask again when job `job` has news of this kind (news of
    /// its state also answers a read that waits for output).
    Pending {
        job: u64,
        news: News,
    },
}

/// What a write did.
#[derive(Debug)]
pub enum Write {
    /// Took this many bytes.
    Done(u32),
    /// Nothing fits now (the command is not reading its input); ask again when job
    /// `job` has news or a moment has passed, until `--wait-timeout`.
    Pending { job: u64 },
}

#[derive(Debug)]
pub enum Lookup {
    Found(Attr),
    /// Not known yet; ask again after the tree reports a change.
    Later(Later),
}

/// What a lookup that has to wait is waiting for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Later {
    /// A writer of `ctl/<name>` has closed but its last close is still on its way;
    /// it may never come (the writer may keep the file open), so wait briefly.
    Close,
    /// The tree is at work on it (checking its text, or spawning it); it will finish.
    Start,
}

/// Settings the tree needs, fixed at start.
#[derive(Debug, Clone)]
pub struct TreeConfig {
    pub mount: Option<PathBuf>,
    pub settle: Duration,
    pub keep: Duration,
    pub wait_timeout: Duration,
    pub timeout: Option<Duration>,
    pub uid: u32,
    pub gid: u32,
}
