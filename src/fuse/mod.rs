//! The `fuser` adapter: translates each FUSE request into a call on the [`Tree`] and
//! the answer back into a reply. It holds no state of its own except the parking lot
//! ([`lot`]), where replies that cannot be answered yet wait ([`parked`] says how each
//! kind is answered later). It sees only the tree: the supervisor's news reaches it
//! through [`crate::fs::News`].
//!
//! Every request is served inside [`crate::panics::guard`]: a panic answers that
//! request alone with EIO.

mod caller;
mod lot;
mod parked;

pub use lot::{Lot, Wake, Waker, Wakes};

use crate::fs::stderr::stderr_job;
use crate::fs::{Attr, Error as TreeError, Kind, Later, Lookup, News, OpenMode, Read, Tree, Write};
use crate::panics::Site;
use crossbeam_channel::Receiver;
use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, LockOwner,
    OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyWrite, Request, TimeOrNow, WriteFlags,
};
use lot::Awaited;
use parked::{LookupOp, ReadDirOp, ReadOp, WriteOp};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

const TTL: Duration = Duration::ZERO;
/// How long the kernel may keep the entry of a fixed name.
const FIXED_ENTRY_TTL: Duration = Duration::from_secs(3600);
/// How long the kernel keeps attributes that never change (see [`Attr::steady`]):
/// `cat wait` then opens and reads without asking for them. A command's files have
/// inode numbers no later command reuses, so a kept attribute is never another's.
const STEADY_ATTR_TTL: Duration = Duration::from_secs(60);
/// How long a write to `stdin` or `keys` that finds the input full is parked before it
/// is answered all the same (in part, or EAGAIN once the command has taken nothing for
/// `--wait-timeout`). The kernel holds the file's lock until the answer, and `rm` of
/// the file needs that lock while it holds the directory's, which every lookup in the
/// directory needs: so the hold bounds how long an `rm` (and the lookups behind it)
/// wait for a writer. The writer comes back for the rest at once.
const INPUT_HOLD: Duration = Duration::from_secs(1);
/// How long a lookup may wait for a writer's final close before it answers ENOENT.
const LOOKUP_PATIENCE: Duration = Duration::from_secs(1);
/// How long a read of `cmd/index.md` or a listing of `cmd/` may wait for a draft to
/// settle before it takes the page or the directory as it is.
const PAGE_PATIENCE: Duration = crate::fs::RELEASE_WINDOW;

/// The adapter plus the thread that answers its parked replies.
pub struct Parts {
    pub driver: Driver,
    pub waker: Waker,
}

/// Builds the adapter. `wakes`/`receiver` come from [`Wakes::new`]; the supervisor's
/// notify callback calls [`Wakes::job`], and the tree's `changed` hook
/// [`Wakes::released`].
pub fn build(tree: Arc<Tree>, wakes: Wakes, receiver: Receiver<Wake>) -> Parts {
    let lot = Arc::new(Lot::new(wakes));
    lot.listen(&tree);
    Parts {
        waker: Waker::start(tree.clone(), lot.clone(), receiver),
        driver: Driver { tree, lot },
    }
}

pub struct Driver {
    tree: Arc<Tree>,
    lot: Arc<Lot>,
}

/// The uid and gid every file shows: the user who mounted the tree.
pub(crate) fn owner(tree: &Tree) -> (u32, u32) {
    (tree.config().uid, tree.config().gid)
}

/// The errno for a failed request, logged once (in verbose mode) with the operation,
/// what it was on, and the tree's reason.
pub(crate) fn failed(operation: &str, target: std::fmt::Arguments, error: TreeError) -> Errno {
    let line = || format!("{operation} {target}: {error}");
    if error.loud {
        crate::log::info(&line());
    } else {
        crate::log::debug(line);
    }
    Errno::from_i32(error.errno)
}

/// An errno the adapter itself answers with, logged the same way.
pub(crate) fn refused(
    operation: &str,
    target: std::fmt::Arguments,
    errno: i32,
    reason: &str,
) -> Errno {
    failed(operation, target, TreeError::new(errno, reason.to_string()))
}

fn file_attr(attr: &Attr, (uid, gid): (u32, u32)) -> FileAttr {
    FileAttr {
        ino: INodeNo(attr.ino),
        size: attr.size,
        blocks: attr.size.div_ceil(512),
        atime: attr.mtime,
        mtime: attr.mtime,
        ctime: attr.ctime,
        crtime: attr.ctime,
        kind: match attr.kind {
            Kind::Dir => FileType::Directory,
            Kind::File => FileType::RegularFile,
        },
        perm: attr.perm,
        nlink: if attr.kind == Kind::Dir { 2 } else { 1 },
        uid,
        gid,
        rdev: 0,
        blksize: attr.blksize,
        flags: 0,
    }
}

/// Answers a READDIR with `entries`, the directory's from `offset` on.
pub(crate) fn reply_listing(
    mut reply: ReplyDirectory,
    offset: u64,
    entries: Vec<(u64, Kind, String)>,
) {
    for (index, (ino, kind, name)) in entries.into_iter().enumerate() {
        let kind = match kind {
            Kind::Dir => FileType::Directory,
            Kind::File => FileType::RegularFile,
        };
        if reply.add(INodeNo(ino), offset + index as u64 + 1, kind, name) {
            break;
        }
    }
    reply.ok();
}

pub(crate) fn reply_entry(reply: ReplyEntry, attr: &Attr, owner: (u32, u32)) {
    // A fixed name (`ctl`, `cmd`, the pages) always means the same inode, so the kernel
    // may keep the entry: every path through `ctl/` or `cmd/` then saves a lookup.
    // Attributes are kept only when they never change.
    let entry_ttl = if crate::fs::names::is_fixed(attr.ino) {
        FIXED_ENTRY_TTL
    } else {
        TTL
    };
    reply.entry_with_ttls(
        &attr_ttl(attr),
        &entry_ttl,
        &file_attr(attr, owner),
        Generation(0),
    );
}

/// How long the kernel may keep `attr`: 0 (sizes grow, `tail -f` needs the true
/// one), unless it never changes.
fn attr_ttl(attr: &Attr) -> Duration {
    if attr.steady {
        STEADY_ATTR_TTL
    } else {
        TTL
    }
}

fn open_flags(direct_io: bool, flush: bool) -> FopenFlags {
    let mut flags = FopenFlags::empty();
    if direct_io {
        flags |= FopenFlags::FOPEN_DIRECT_IO;
    }
    if !flush {
        // The kernel then sends no FLUSH at each close of the descriptor.
        flags |= FopenFlags::FOPEN_NOFLUSH;
    }
    flags
}

fn open_mode(flags: i32) -> OpenMode {
    OpenMode {
        write: flags & libc::O_ACCMODE != libc::O_RDONLY,
        append: flags & libc::O_APPEND != 0,
    }
}

impl Driver {
    fn owner(&self) -> (u32, u32) {
        owner(&self.tree)
    }

    /// Serves one request. A panic in `work` is logged once and its reply, dropped on
    /// the way out, answers EIO (see [`crate::panics`]); once a panic has left the
    /// tree half-updated, nothing more is served from it: every request gets EIO
    /// while the driver stops.
    fn serve(&self, operation: &str, work: impl FnOnce()) {
        if crate::panics::broken() {
            return drop(work);
        }
        crate::panics::guard(|| format!("serving a FUSE {operation} request"), work);
    }
}

impl Filesystem for Driver {
    /// The session is over. Replies still parked then are of an aborted connection
    /// (a clean unmount waits for them, and a stopping driver answers them first),
    /// so they are answered as such now rather than when the driver has stopped.
    fn destroy(&mut self) {
        let aborted = self.lot.abort();
        if aborted > 0 {
            crate::log::info(&format!(
                "the mount was aborted by force while {aborted} request(s) waited for an \
                 answer; their callers got an error"
            ));
        }
    }

    fn lookup(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        self.serve("lookup", || {
            if crate::panics::injected(Site::Lookup, name.as_bytes()) {
                panic!("a panic injected for a test");
            }
            if crate::panics::injected(Site::Locked, name.as_bytes()) {
                self.tree.panic_holding_lock();
            }
            crate::panics::note_lookup(name.as_bytes());
            if parent.0 == crate::fs::names::ROOT {
                match self.tree.stderr_lookup(name.as_bytes(), req.pid()) {
                    Some(Ok(attr)) => return reply_entry(reply, &attr, self.owner()),
                    Some(Err(e)) => {
                        return reply.error(failed(
                            "lookup",
                            format_args!("{}/{:?} by pid {}", parent.0, name, req.pid()),
                            e,
                        ))
                    }
                    None => {}
                }
            }
            match self.tree.lookup_as(parent.0, name.as_bytes(), req.pid()) {
                Ok(Lookup::Found(attr)) => reply_entry(reply, &attr, self.owner()),
                Ok(Lookup::Later(later)) => self.lot.park(
                    &self.tree,
                    Awaited::Release,
                    req.pid(),
                    Instant::now()
                        + match later {
                            Later::Close => LOOKUP_PATIENCE,
                            Later::Start => self.tree.config().wait_timeout,
                        },
                    Box::new(LookupOp {
                        parent: parent.0,
                        name: name.to_os_string(),
                        reply,
                    }),
                ),
                Err(e) => reply.error(failed("lookup", format_args!("{}/{:?}", parent.0, name), e)),
            }
        });
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        self.serve("forget", || {
            if stderr_job(ino.0).is_some() {
                return;
            }
            self.tree.forget(ino.0, nlookup);
        });
    }

    fn getattr(&self, req: &Request, ino: INodeNo, fh: Option<FileHandle>, reply: ReplyAttr) {
        self.serve("getattr", || {
            if let Some(id) = stderr_job(ino.0) {
                return reply.attr(
                    &TTL,
                    &file_attr(&self.tree.stderr_getattr(id), self.owner()),
                );
            }
            match self.tree.getattr_as(ino.0, fh.map(|fh| fh.0), req.pid()) {
                Ok(attr) => reply.attr(&attr_ttl(&attr), &file_attr(&attr, self.owner())),
                Err(e) => reply.error(failed("getattr", format_args!("inode {}", ino.0), e)),
            }
        });
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        self.serve("setattr", || {
            let owner = mode.is_some() || uid.is_some() || gid.is_some();
            if let Some(id) = stderr_job(ino.0).filter(|_| !owner) {
                // `> /dev/stderr` truncates: an append-only stream has nothing to cut.
                return reply.attr(
                    &TTL,
                    &file_attr(&self.tree.stderr_getattr(id), self.owner()),
                );
            }
            match self.tree.setattr(ino.0, size, owner) {
                Ok(attr) => reply.attr(&TTL, &file_attr(&attr, self.owner())),
                Err(e) => reply.error(failed("setattr", format_args!("inode {}", ino.0), e)),
            }
        });
    }

    fn mknod(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        self.serve("mknod", || {
            // The mode constants are u16 on macOS and u32 on Linux.
            #[allow(clippy::unnecessary_cast)]
            let (format, regular) = (libc::S_IFMT as u32, libc::S_IFREG as u32);
            if mode & format != regular {
                return reply.error(refused(
                    "mknod",
                    format_args!("{}/{:?}", parent.0, name),
                    libc::EPERM,
                    "only regular files can be made",
                ));
            }
            match self
                .tree
                .create(parent.0, name.as_bytes(), OpenMode::default())
            {
                Ok((attr, opened)) => {
                    self.tree.release(opened.fh);
                    reply_entry(reply, &attr, self.owner());
                }
                Err(e) => reply.error(failed("mknod", format_args!("{}/{:?}", parent.0, name), e)),
            }
        });
    }

    fn mkdir(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        _mode: u32,
        _umask: u32,
        reply: ReplyEntry,
    ) {
        self.serve("mkdir", || {
            reply.error(refused(
                "mkdir",
                format_args!("{}/{:?}", parent.0, name),
                libc::EPERM,
                "directories are made by the tree, not by mkdir",
            ));
        });
    }

    fn unlink(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        self.serve("unlink", || {
            match self.tree.unlink_as(parent.0, name.as_bytes(), req.pid()) {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(failed("unlink", format_args!("{}/{:?}", parent.0, name), e)),
            }
        });
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        self.serve("rmdir", || {
            match self.tree.rmdir(parent.0, name.as_bytes()) {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(failed("rmdir", format_args!("{}/{:?}", parent.0, name), e)),
            }
        });
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        self.serve("rename", || {
            #[cfg(target_os = "linux")]
            if flags.contains(RenameFlags::RENAME_EXCHANGE) {
                return reply.error(refused(
                    "rename",
                    format_args!("{}/{:?}", parent.0, name),
                    libc::EINVAL,
                    "drafts cannot be exchanged",
                ));
            }
            let _ = flags;
            match self
                .tree
                .rename(parent.0, name.as_bytes(), newparent.0, newname.as_bytes())
            {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(failed(
                    "rename",
                    format_args!("{}/{:?} to {}/{:?}", parent.0, name, newparent.0, newname),
                    e,
                )),
            }
        });
    }

    fn open(&self, req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        self.serve("open", || {
            if let Some(id) = stderr_job(ino.0) {
                if !open_mode(flags.0).write {
                    return reply.error(refused(
                        "open",
                        format_args!("inode {} by pid {}", ino.0, req.pid()),
                        libc::EACCES,
                        "a command's stderr file is written, never read",
                    ));
                }
                return match self.tree.stderr_open(id, req.pid()) {
                    // Direct I/O: each write reaches the supervisor while its writer waits.
                    // No FLUSH: a command's exit need not wait for one.
                    Ok(()) => reply.opened(FileHandle(0), open_flags(true, false)),
                    Err(e) => reply.error(failed(
                        "open",
                        format_args!("inode {} by pid {}", ino.0, req.pid()),
                        e,
                    )),
                };
            }
            match self.tree.open_as(ino.0, open_mode(flags.0), req.pid()) {
                Ok(opened) => reply.opened(
                    FileHandle(opened.fh),
                    open_flags(opened.direct_io, opened.flush),
                ),
                Err(e) => reply.error(failed("open", format_args!("inode {}", ino.0), e)),
            }
        });
    }

    fn read(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        self.serve("read", || match self.tree.read(fh.0, offset, size) {
            Ok(Read::Data(bytes)) => reply.data(&bytes),
            Ok(Read::Pending { job, news }) => self.lot.park(
                &self.tree,
                Awaited::Job(job, news),
                req.pid(),
                Instant::now() + self.tree.config().wait_timeout,
                Box::new(ReadOp {
                    fh: fh.0,
                    offset,
                    size,
                    reply,
                }),
            ),
            Ok(Read::Later) => self.lot.park(
                &self.tree,
                Awaited::Release,
                req.pid(),
                Instant::now() + PAGE_PATIENCE,
                Box::new(ReadOp {
                    fh: fh.0,
                    offset,
                    size,
                    reply,
                }),
            ),
            Err(e) => reply.error(failed(
                "read",
                format_args!("inode {} fh {}", ino.0, fh.0),
                e,
            )),
        });
    }

    fn write(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        self.serve("write", || {
            if let Some(id) = stderr_job(ino.0) {
                return match self.tree.stderr_write(id, data) {
                    Ok(n) => reply.written(n),
                    Err(e) => reply.error(failed("write", format_args!("inode {}", ino.0), e)),
                };
            }
            match self.tree.write(fh.0, offset, data) {
                Ok(Write::Done(n)) => reply.written(n),
                Ok(Write::Pending { job }) => self.lot.park(
                    &self.tree,
                    Awaited::Job(job, News::State),
                    req.pid(),
                    Instant::now() + INPUT_HOLD.min(self.tree.config().wait_timeout),
                    Box::new(WriteOp {
                        fh: fh.0,
                        data: data.to_vec(),
                        reply,
                    }),
                ),
                Err(e) => reply.error(failed(
                    "write",
                    format_args!("inode {} fh {}", ino.0, fh.0),
                    e,
                )),
            }
        });
    }

    fn flush(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        self.serve("flush", || {
            if stderr_job(ino.0).is_some() {
                return reply.ok();
            }
            match self.tree.flush(fh.0) {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(failed(
                    "flush",
                    format_args!("inode {} fh {}", ino.0, fh.0),
                    e,
                )),
            }
        });
    }

    fn release(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.serve("release", || {
            if let Some(id) = stderr_job(ino.0) {
                reply.ok();
                return self.tree.stderr_release(id);
            }
            self.tree.release(fh.0);
            reply.ok();
            self.lot.wakes.released();
        });
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        self.serve("opendir", || match self.tree.opendir(ino.0) {
            Ok(fh) => reply.opened(FileHandle(fh), FopenFlags::empty()),
            Err(e) => reply.error(failed("opendir", format_args!("inode {}", ino.0), e)),
        });
    }

    fn readdir(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        reply: ReplyDirectory,
    ) {
        self.serve("readdir", || match self.tree.readdir(fh.0, offset) {
            Ok(Some(entries)) => reply_listing(reply, offset, entries),
            Ok(None) => self.lot.park(
                &self.tree,
                Awaited::Release,
                req.pid(),
                Instant::now() + PAGE_PATIENCE,
                Box::new(ReadDirOp {
                    fh: fh.0,
                    offset,
                    reply,
                }),
            ),
            Err(e) => reply.error(failed("readdir", format_args!("fh {}", fh.0), e)),
        });
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        self.serve("releasedir", || {
            self.tree.releasedir(fh.0);
            reply.ok();
        });
    }

    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        _mode: u32,
        _umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        self.serve("create", || {
            match self
                .tree
                .create(parent.0, name.as_bytes(), open_mode(flags))
            {
                Ok((attr, opened)) => reply.created(
                    &TTL,
                    &file_attr(&attr, self.owner()),
                    Generation(0),
                    FileHandle(opened.fh),
                    open_flags(opened.direct_io, opened.flush),
                ),
                Err(e) => reply.error(failed("create", format_args!("{}/{:?}", parent.0, name), e)),
            }
        });
    }
}
