//! The operations a reply may be parked for, each handled in one place: how it asks
//! the tree again, how it ends when its wait is over, and how it fails. The lot holds
//! them as [`Op`] trait objects, so it never needs to know the reply's kind.

use super::{failed, owner, refused, reply_entry, reply_listing};
use crate::fs::{Lookup, Read, Tree, Write};
use fuser::{ReplyData, ReplyDirectory, ReplyEntry, ReplyWrite};
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;

/// A parked operation with its reply.
pub(super) trait Op: Send {
    /// Asks the tree again: answered (None), or itself back while it still waits.
    fn retry(self: Box<Self>, tree: &Tree) -> Option<Box<dyn Op>>;

    /// Its wait is over without an answer: the driver is stopping, or (by default,
    /// see [`Op::due`]) its deadline passed.
    fn time_out(self: Box<Self>, tree: &Tree);

    /// Its deadline passed.
    fn due(self: Box<Self>, tree: &Tree) {
        self.time_out(tree);
    }

    /// Answers it with `errno`, logged with `reason` like any other failure.
    fn fail(self: Box<Self>, errno: i32, reason: &str);
}

/// A read of `wait`, `follow`, `/events`, or a page made at its first read.
pub(super) struct ReadOp {
    pub fh: u64,
    pub offset: u64,
    pub size: u32,
    pub reply: ReplyData,
}

impl Op for ReadOp {
    fn retry(self: Box<Self>, tree: &Tree) -> Option<Box<dyn Op>> {
        match tree.read(self.fh, self.offset, self.size) {
            Ok(Read::Data(bytes)) => {
                self.reply.data(&bytes);
                None
            }
            Ok(Read::Pending { .. } | Read::Later) => Some(self),
            Err(e) => {
                let fh = self.fh;
                self.reply.error(failed("read", format_args!("fh {fh}"), e));
                None
            }
        }
    }

    fn time_out(self: Box<Self>, tree: &Tree) {
        let ReadOp {
            fh,
            offset,
            size,
            reply,
        } = *self;
        reply.data(&tree.read_timed_out(fh, offset, size));
    }

    fn fail(self: Box<Self>, errno: i32, reason: &str) {
        let fh = self.fh;
        self.reply
            .error(refused("read", format_args!("fh {fh}"), errno, reason));
    }
}

/// A lookup that races a writer's final close or a command's start.
pub(super) struct LookupOp {
    pub parent: u64,
    pub name: OsString,
    pub reply: ReplyEntry,
}

impl Op for LookupOp {
    fn retry(self: Box<Self>, tree: &Tree) -> Option<Box<dyn Op>> {
        match tree.lookup(self.parent, self.name.as_bytes()) {
            Ok(Lookup::Found(attr)) => {
                reply_entry(self.reply, &attr, owner(tree));
                None
            }
            Ok(Lookup::Later(_)) => Some(self),
            Err(e) => {
                let LookupOp {
                    parent,
                    name,
                    reply,
                } = *self;
                reply.error(failed("lookup", format_args!("{parent}/{name:?}"), e));
                None
            }
        }
    }

    fn time_out(self: Box<Self>, _tree: &Tree) {
        self.fail(libc::ENOENT, "it did not appear before the wait ran out");
    }

    fn fail(self: Box<Self>, errno: i32, reason: &str) {
        let LookupOp {
            parent,
            name,
            reply,
        } = *self;
        reply.error(refused(
            "lookup",
            format_args!("{parent}/{name:?}"),
            errno,
            reason,
        ));
    }
}

/// A listing of `cmd/` opened while a draft settled.
pub(super) struct ReadDirOp {
    pub fh: u64,
    pub offset: u64,
    pub reply: ReplyDirectory,
}

impl Op for ReadDirOp {
    fn retry(self: Box<Self>, tree: &Tree) -> Option<Box<dyn Op>> {
        match tree.readdir(self.fh, self.offset) {
            Ok(Some(entries)) => {
                reply_listing(self.reply, self.offset, entries);
                None
            }
            Ok(None) => Some(self),
            Err(e) => {
                let fh = self.fh;
                self.reply
                    .error(failed("readdir", format_args!("fh {fh}"), e));
                None
            }
        }
    }

    fn time_out(self: Box<Self>, tree: &Tree) {
        let ReadDirOp { fh, offset, reply } = *self;
        match tree.readdir_timed_out(fh, offset) {
            Ok(entries) => reply_listing(reply, offset, entries),
            Err(e) => reply.error(failed("readdir", format_args!("fh {fh}"), e)),
        }
    }

    fn fail(self: Box<Self>, errno: i32, reason: &str) {
        let fh = self.fh;
        self.reply
            .error(refused("readdir", format_args!("fh {fh}"), errno, reason));
    }
}

/// A write to `stdin` or `keys` that found the input full; tried once more as held
/// at its deadline (see [`super::INPUT_HOLD`]).
pub(super) struct WriteOp {
    pub fh: u64,
    pub data: Vec<u8>,
    pub reply: ReplyWrite,
}

impl Op for WriteOp {
    fn retry(self: Box<Self>, tree: &Tree) -> Option<Box<dyn Op>> {
        match tree.write(self.fh, 0, &self.data) {
            Ok(Write::Done(n)) => {
                self.reply.written(n);
                None
            }
            Ok(Write::Pending { .. }) => Some(self),
            Err(e) => {
                let fh = self.fh;
                self.reply
                    .error(failed("write", format_args!("fh {fh}"), e));
                None
            }
        }
    }

    fn time_out(self: Box<Self>, _tree: &Tree) {
        self.fail(
            libc::EAGAIN,
            "the command took no input before the wait ran out; nothing was written",
        );
    }

    /// A held write is taken in part, or refused.
    fn due(self: Box<Self>, tree: &Tree) {
        let WriteOp { fh, data, reply } = *self;
        match tree.write_held(fh, &data) {
            Ok(n) => reply.written(n),
            Err(e) => reply.error(failed("write", format_args!("fh {fh}"), e)),
        }
    }

    fn fail(self: Box<Self>, errno: i32, reason: &str) {
        let fh = self.fh;
        self.reply
            .error(refused("write", format_args!("fh {fh}"), errno, reason));
    }
}
