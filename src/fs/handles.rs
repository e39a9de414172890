//! Open handles and what they read: open, read, write, close, directory listings,
//! and the view inodes a lookup makes once a stream has dropped bytes.

use super::effects::{Discarded, Effect, Effects};
use super::fixed;
use super::input::{input_error, Attempt};
use super::kill::{self, Asked, Said};
use super::names::{self, Slot};
use super::pages;
use super::slots::{self, How};
use super::state::{Body, Entry, Node, Run, Stage, State, ViewEntry};
use super::types::{Attr, Error, FsResult, Kind, OpenMode, Opened, Read, Write, ANY_JOB};
use super::view::{Gaps, View};
use super::Tree;
use crate::supervisor::{InputError, Job, News, Stream, KEYS_NEED_A_TERMINAL};
use parking_lot::Mutex;
use std::sync::Arc;
use std::time::SystemTime;

/// A view's attributes; ENOENT once its command (and every handle on it) is gone.
pub(super) fn view_attr(id: u64, view: &ViewEntry) -> FsResult<Attr> {
    let job = view.job.upgrade().ok_or(Error::new(
        libc::ENOENT,
        "the command this view showed is gone",
    ))?;
    let slot = match view.stream {
        Stream::Stdout => Slot::Stdout,
        Stream::Stderr => Slot::Stderr,
        Stream::Output => Slot::Output,
    };
    let size = view.view.size(&job, view.stream);
    let mtime = job.grew_at(view.stream).unwrap_or(view.created);
    Ok(Attr::new(
        names::file_ino(id, slot),
        Kind::File,
        size,
        0o400,
        mtime,
    ))
}

/// The size of the `/events` feed read through `fh`, or else of the one thread
/// `caller` opened last; 0 when there is none.
pub(super) fn events_size(state: &mut State, fh: Option<u64>, caller: u32) -> u64 {
    let is_feed = |fh: &u64| {
        matches!(
            state.handles.get(fh).map(|h| &h.body),
            Some(Body::Events(_))
        )
    };
    let chosen = fh.filter(is_feed).or_else(|| {
        (caller != 0)
            .then(|| {
                state
                    .handles
                    .iter()
                    .filter(|(_, h)| matches!(&h.body, Body::Events(feed) if feed.opener == caller))
                    .map(|(fh, _)| *fh)
                    .max()
            })
            .flatten()
    });
    let Some(fh) = chosen else { return 0 };
    // A feed looks at the whole tree: out of its handle while it does.
    let Some(Body::Events(feed)) = state.handles.get_mut(&fh).map(|h| &mut h.body) else {
        return 0;
    };
    let mut feed = std::mem::take(feed);
    let size = feed.size(state);
    if let Some(Body::Events(slot)) = state.handles.get_mut(&fh).map(|h| &mut h.body) {
        *slot = feed;
    }
    size
}

/// For a handle on `kill`: its job, what it has said, and the command's name.
fn kill_said(state: &mut State, fh: u64) -> Option<(Arc<Job>, &mut Said, String)> {
    let handle = state.handles.get(&fh)?;
    if !matches!(handle.body, Body::Kill { .. }) {
        return None;
    }
    let name = handle
        .owner
        .and_then(|id| state.command(id))
        .map(|command| command.name.clone())
        .unwrap_or_default();
    match state.handles.get_mut(&fh).map(|h| &mut h.body) {
        Some(Body::Kill { job, said }) => Some((job.clone(), said, name)),
        _ => None,
    }
}

fn slice_at(bytes: &[u8], offset: u64, size: usize) -> Vec<u8> {
    let start = (offset as usize).min(bytes.len());
    let end = start.saturating_add(size).min(bytes.len());
    bytes[start..end].to_vec()
}

fn opened(fh: u64, direct_io: bool) -> Opened {
    Opened {
        fh,
        direct_io,
        flush: false,
    }
}

impl Tree {
    /// The inode a lookup of a stream file gets: the command's own while nothing was
    /// dropped, else a view made now (or the newest one, if nothing was dropped since).
    pub(super) fn stream_lookup(&self, state: &mut State, id: u64, slot: Slot) -> Option<Attr> {
        let command = state.command(id)?;
        let Run::Job(job) = &command.run else {
            return None;
        };
        let stream = slots::stream_of(slot)?;
        let fresh = View::fresh(job, stream);
        if fresh.base == 0 {
            return None;
        }
        let reuse = command.views.get(&slot).copied().filter(
            |view_id| matches!(state.entries.get(view_id), Some(Entry::View(v)) if v.view == fresh),
        );
        let view_id = match reuse {
            Some(view_id) => view_id,
            None => {
                let job = job.clone();
                let view_id = state.take_id();
                state.entries.insert(
                    view_id,
                    Entry::View(ViewEntry {
                        command: id,
                        job: Arc::downgrade(&job),
                        stream,
                        view: fresh,
                        lookups: 0,
                        created: SystemTime::now(),
                    }),
                );
                if let Some(command) = state.command_mut(id) {
                    command.views.insert(slot, view_id);
                }
                view_id
            }
        };
        match state.entries.get_mut(&view_id) {
            Some(Entry::View(view)) => {
                view.lookups += 1;
                view_attr(view_id, view).ok()
            }
            _ => None,
        }
    }

    /// The kernel dropped `count` references to an inode; view inodes go at zero.
    pub fn forget(&self, ino: u64, count: u64) {
        let mut state = self.state.lock();
        let Some(names::Dynamic::File(id, _)) = names::decode(ino) else {
            return;
        };
        let mut gone = None;
        if let Some(Entry::View(view)) = state.entries.get_mut(&id) {
            view.lookups = view.lookups.saturating_sub(count);
            if view.lookups == 0 {
                gone = state.entries.remove(&id);
            }
        }
        drop(state);
        drop(gone);
    }

    // ----- listing ------------------------------------------------------------------

    /// Opens a directory: the listing is taken now (starting every decided command
    /// first when the directory is `cmd/`) and served from the handle.
    pub fn opendir(&self, ino: u64) -> FsResult<u64> {
        self.locked(|state, effects| self.opendir_locked(state, effects, ino))
    }

    fn opendir_locked(&self, state: &mut State, effects: &mut Effects, ino: u64) -> FsResult<u64> {
        // `ls cmd/` waits for a draft about to become a command, as `cmd/index.md` does.
        if ino == names::CMD && state.drafts_settling() {
            return Ok(state.add_handle(None, Body::Settling(ino)));
        }
        let listing = self.listing(state, effects, ino)?;
        Ok(state.add_handle(None, Body::Listing(listing)))
    }

    /// What directory `ino` holds now (starting decided drafts first, for `cmd/`).
    fn listing(
        &self,
        state: &mut State,
        effects: &mut Effects,
        ino: u64,
    ) -> FsResult<Vec<(u64, Kind, String)>> {
        if ino == names::CMD {
            self.start_all_decided(state, effects);
        }
        let mut listing = vec![
            (ino, Kind::Dir, ".".to_string()),
            (fixed::parent_of(ino), Kind::Dir, "..".to_string()),
        ];
        match state.resolve(ino) {
            Ok(Node::Dir(_, children)) => {
                for (name, child, kind) in children {
                    listing.push((*child, *kind, name.to_string()));
                }
                let dynamic = match ino {
                    names::CTL => Some((&state.ctl, Kind::File)),
                    names::CMD => Some((&state.cmd, Kind::Dir)),
                    _ => None,
                };
                if let Some((map, kind)) = dynamic {
                    for (name, id) in map {
                        listing.push((names::entry_ino(*id), kind, name.clone()));
                    }
                }
            }
            Ok(Node::CommandDir(id, command)) => {
                listing[1].0 = names::CMD;
                for slot in slots::visible_slots(command) {
                    listing.push((
                        names::file_ino(id, slot),
                        Kind::File,
                        slot.name().to_string(),
                    ));
                }
            }
            _ if matches!(names::decode(ino), Some(names::Dynamic::Entry(_))) => {
                return Err(Error::new(libc::ENOENT, "no such command"))
            }
            _ => return Err(Error::new(libc::ENOTDIR, "not a directory")),
        }
        Ok(listing)
    }

    /// Entries of an open directory from `offset` on. None: `cmd/` was opened while a
    /// draft settled, and still settles; ask again after the tree reports a change,
    /// and at the deadline take [`Tree::readdir_timed_out`].
    pub fn readdir(&self, fh: u64, offset: u64) -> FsResult<Option<Vec<(u64, Kind, String)>>> {
        if self.settle(fh, false)? {
            return Ok(None);
        }
        let state = self.state.lock();
        match state.handles.get(&fh).map(|h| &h.body) {
            Some(Body::Listing(listing)) => Ok(Some(
                listing.iter().skip(offset as usize).cloned().collect(),
            )),
            _ => Err(Error::new(libc::EBADF, "not an open directory")),
        }
    }

    /// The entries of a listing that waited its patience out: as they are now.
    pub fn readdir_timed_out(&self, fh: u64, offset: u64) -> FsResult<Vec<(u64, Kind, String)>> {
        self.settle(fh, true)?;
        Ok(self.readdir(fh, offset)?.unwrap_or_default())
    }

    /// A handle opened while a draft settled (`Body::Settling`) becomes what it reads,
    /// the page or the listing of `cmd/`, once nothing settles, or `anyway` (its wait
    /// is over), starting decided drafts first as an open does. Returns whether it
    /// must wait still; false for every other handle.
    fn settle(&self, fh: u64, anyway: bool) -> FsResult<bool> {
        self.locked(|state, effects| {
            let Some(Body::Settling(ino)) = state.handles.get(&fh).map(|h| &h.body) else {
                return Ok(false);
            };
            let ino = *ino;
            if !anyway && state.drafts_settling() {
                return Ok(true);
            }
            let body = if ino == names::CMD {
                Body::Listing(self.listing(state, effects, ino)?)
            } else {
                self.start_all_decided(state, effects);
                Body::Fixed(self.render_page(state, ino))
            };
            if let Some(handle) = state.handles.get_mut(&fh) {
                handle.body = body;
            }
            Ok(false)
        })
    }

    pub fn releasedir(&self, fh: u64) {
        let handle = self.state.lock().handles.remove(&fh);
        drop(handle);
    }

    // ----- open, read, write, close -------------------------------------------------

    /// `open_as` by a caller not known.
    #[cfg(test)]
    pub fn open(&self, ino: u64, mode: OpenMode) -> FsResult<Opened> {
        self.open_as(ino, mode, 0)
    }

    /// Opens a file for thread `caller` (0: not known), whom a feed of `/events`
    /// remembers for its `fstat` (see [`events_size`]).
    pub fn open_as(&self, ino: u64, mode: OpenMode, caller: u32) -> FsResult<Opened> {
        self.locked(|state, effects| self.open_locked(state, effects, ino, mode, caller))
    }

    fn open_locked(
        &self,
        state: &mut State,
        effects: &mut Effects,
        ino: u64,
        mode: OpenMode,
        caller: u32,
    ) -> FsResult<Opened> {
        let OpenMode { write, append } = mode;
        // Reading what commands there are starts every decided one first.
        if ino == names::CMD_INDEX || ino == names::EVENTS {
            self.start_all_decided(state, effects);
        }
        let missing = || Error::new(libc::ENOENT, "no such file");
        let (owner, body, direct_io) = match state.resolve(ino)? {
            Node::Dir(..) | Node::CommandDir(..) => {
                return Err(Error::new(libc::EISDIR, "a directory"))
            }
            Node::Events => {
                if write {
                    return Err(Error::new(libc::EACCES, "events are read-only"));
                }
                let feed = Body::Events(super::events::Feed::opened_by(caller, state));
                return Ok(opened(state.add_handle(None, feed), true));
            }
            Node::Page(ino) => {
                if write {
                    return Err(Error::new(libc::EACCES, "pages are read-only"));
                }
                // The index of commands waits for a draft about to become one; read
                // through the driver, since its size is not known before.
                if ino == names::CMD_INDEX && state.drafts_settling() {
                    return Ok(opened(state.add_handle(None, Body::Settling(ino)), true));
                }
                let page = self.render_page(state, ino);
                return Ok(opened(state.add_handle(None, Body::Fixed(page)), false));
            }
            Node::Draft(id, draft) => {
                if write {
                    if !draft.writable() || draft.writers() > 0 {
                        return Err(Error::new(
                            libc::EEXIST,
                            "the draft is open for writing already, or was decided or refused",
                        ));
                    }
                    let draft = state.draft_mut(id).ok_or_else(missing)?;
                    if let Stage::Writing { writers, .. } = &mut draft.stage {
                        *writers += 1;
                    }
                    draft.touched = std::time::Instant::now();
                }
                (id, Body::Draft { write, append }, true)
            }
            Node::View(_, view) => {
                if write {
                    return Err(Error::new(libc::EACCES, "output is read-only"));
                }
                let body = Body::Growing {
                    job: view.job.upgrade().ok_or_else(missing)?,
                    stream: view.stream,
                    view: view.view.clone(),
                    gaps: Arc::new(Mutex::new(Gaps::new(false))),
                };
                (view.command, body, true)
            }
            Node::CommandFile(id, command, slot) => {
                if !slots::visible_slots(command).contains(&slot) {
                    return Err(missing());
                }
                let row = slots::row_of(slot);
                if write != row.how.is_written() {
                    return Err(Error::new(
                        libc::EACCES,
                        "kill, stdin and keys are only written; the other files are only read",
                    ));
                }
                let body = match (&command.run, row.how) {
                    (Run::Job(job), How::Stream(stream)) => Body::Growing {
                        job: job.clone(),
                        stream,
                        view: View::whole(),
                        gaps: Arc::new(Mutex::new(Gaps::new(false))),
                    },
                    // `follow` is read from its start to its end, at offsets of its
                    // own: a hole is its notice alone.
                    (Run::Job(job), How::Follow) => Body::Follow {
                        job: job.clone(),
                        stream: Stream::Output,
                        view: View::fresh(job, Stream::Output),
                        gaps: Arc::new(Mutex::new(Gaps::new(true))),
                    },
                    (Run::Job(job), How::Wait) => Body::Wait {
                        job: job.clone(),
                        answer: None,
                    },
                    (Run::Job(job), How::Kill) => Body::Kill {
                        job: job.clone(),
                        said: Said::Nothing,
                    },
                    (Run::Job(job), How::Input) => Body::Input {
                        job: job.clone(),
                        script: command.script.clone(),
                        refused: Arc::default(),
                    },
                    (Run::Job(job), How::Keys) => Body::Keys { job: job.clone() },
                    _ => Body::Fixed(slots::render(command, slot).ok_or_else(missing)?),
                };
                (id, body, true)
            }
        };
        let flush = matches!(body, Body::Draft { write: true, .. });
        Ok(Opened {
            flush,
            ..opened(state.add_handle(Some(owner), body), direct_io)
        })
    }

    /// `echo > cmd/<name>/kill` just after the command stopped finds no `kill` and
    /// creates one: that is a kill racing the end, which is not an error. The handle
    /// writes to a job that has stopped, which does nothing.
    ///
    /// `echo > cmd/<name>/stdin` (or `keys`) where that file is not shown also comes
    /// here, and gets the errno that says why: EPIPE once the command has stopped or
    /// its stdin was removed, EACCES for a command started without stdin, ENOTTY for
    /// keys to a command without a terminal.
    pub(super) fn create_late(
        &self,
        state: &mut State,
        id: u64,
        name: &[u8],
    ) -> Option<FsResult<(Attr, Opened)>> {
        let command = state.command(id)?;
        let Run::Job(job) = &command.run else {
            return None;
        };
        if name == Slot::Stdin.name().as_bytes() || name == Slot::Keys.name().as_bytes() {
            let keys = name == Slot::Keys.name().as_bytes();
            // A command an earlier driver ran has no input here: what it asked for is
            // in its text, and it has stopped, so it answers as it did before the restart.
            let (errno, why) = match job
                .input()
                .map(|input| input.is_terminal())
                .or_else(|| super::input::asked_input(&command.text))
            {
                Some(false) if keys => (libc::ENOTTY, InputError::NotTerminal.to_string()),
                Some(_) => (libc::EPIPE, InputError::Gone.to_string()),
                None if keys => (libc::ENOTTY, KEYS_NEED_A_TERMINAL.to_owned()),
                None => (
                    libc::EACCES,
                    "it was started without stdin: start it with '#terminalfs stdin' (or \
                     'tty')"
                        .to_owned(),
                ),
            };
            let file = if keys { "keys" } else { "stdin" };
            return Some(Err(input_error(&command.name, file, errno, &why)));
        }
        if name != Slot::Kill.name().as_bytes() || command.hidden & Slot::Kill.bit() != 0 {
            return None;
        }
        let attr = slots::file_attr(id, command, Slot::Kill);
        let body = Body::Kill {
            job: job.clone(),
            said: Said::Nothing,
        };
        let fh = state.add_handle(Some(id), body);
        Some(Ok((attr, opened(fh, true))))
    }

    pub fn read(&self, fh: u64, offset: u64, size: u32) -> FsResult<Read> {
        let mut state = self.state.lock();
        if let Some(Body::Settling(_)) = state.handles.get(&fh).map(|h| &h.body) {
            drop(state);
            if self.settle(fh, false)? {
                return Ok(Read::Later);
            }
            return self.read(fh, offset, size);
        }
        if let Some(Body::Wait { job, answer }) = state.handles.get_mut(&fh).map(|h| &mut h.body) {
            let said = match answer {
                Some(said) => *said,
                None => match job.outcome() {
                    None => {
                        return Ok(Read::Pending {
                            job: job.id(),
                            news: News::State,
                        })
                    }
                    outcome => *answer.insert(pages::wait_answer(outcome)),
                },
            };
            return Ok(Read::Data(slice_at(said, offset, size as usize)));
        }
        // A feed reads the whole tree: out of its handle while it looks.
        if let Some(Body::Events(feed)) = state.handles.get_mut(&fh).map(|h| &mut h.body) {
            let mut feed = std::mem::take(feed);
            let bytes = feed.read(&state, offset, size as usize, self.config.wait_timeout);
            if let Some(Body::Events(slot)) = state.handles.get_mut(&fh).map(|h| &mut h.body) {
                *slot = feed;
            }
            return Ok(match bytes {
                Some(bytes) => Read::Data(bytes),
                None => Read::Pending {
                    job: ANY_JOB,
                    news: News::State,
                },
            });
        }
        let handle = state
            .handles
            .get(&fh)
            .ok_or(Error::new(libc::EBADF, "no such open file"))?;
        let size = size as usize;
        // Output is copied without the tree lock, so a large read holds up nobody.
        if let Body::Growing {
            job,
            stream,
            view,
            gaps,
        }
        | Body::Follow {
            job,
            view,
            stream,
            gaps,
        } = &handle.body
        {
            let (job, stream, view, gaps, follow) = (
                job.clone(),
                *stream,
                view.clone(),
                gaps.clone(),
                matches!(handle.body, Body::Follow { .. }),
            );
            drop(state);
            let (bytes, running) = view.read(&job, stream, &mut gaps.lock(), offset, size);
            if follow && bytes.is_empty() && running {
                return Ok(Read::Pending {
                    job: job.id(),
                    news: News::Output,
                });
            }
            return Ok(Read::Data(bytes));
        }
        Ok(match &handle.body {
            Body::Fixed(bytes) => Read::Data(slice_at(bytes, offset, size)),
            Body::Draft { .. } => match handle.owner.and_then(|id| state.entries.get(&id)) {
                Some(Entry::Draft(draft)) => Read::Data(slice_at(&draft.text, offset, size)),
                _ => Read::Data(Vec::new()),
            },
            Body::Growing { .. }
            | Body::Follow { .. }
            | Body::Wait { .. }
            | Body::Events(_)
            | Body::Settling(_) => {
                unreachable!("answered above")
            }
            Body::Kill { .. } | Body::Input { .. } | Body::Keys { .. } | Body::Listing(_) => {
                return Err(Error::new(libc::EBADF, "this file is not read"))
            }
        })
    }

    /// What a parked read answers once its wait is over (`--wait-timeout`, or the
    /// page's patience): `running\n` (or `paused\n`) for `wait`, end-of-file for `follow`, the page as
    /// it is for `cmd/index.md`.
    pub fn read_timed_out(&self, fh: u64, offset: u64, size: u32) -> Vec<u8> {
        let _ = self.settle(fh, true);
        let mut state = self.state.lock();
        match state.handles.get_mut(&fh).map(|h| &mut h.body) {
            Some(Body::Wait { answer, job }) => {
                let said = *answer.get_or_insert_with(|| {
                    let life = job.life();
                    pages::wait_timed_out(life.outcome(), life.is_paused())
                });
                slice_at(said, offset, size as usize)
            }
            // A page that waited for a draft to settle, taken as it is now.
            Some(Body::Fixed(bytes)) => slice_at(bytes, offset, size as usize),
            _ => Vec::new(),
        }
    }

    pub fn write(&self, fh: u64, offset: u64, data: &[u8]) -> FsResult<Write> {
        self.write_as(fh, offset, data, Attempt::Fresh)
    }

    /// A write to `stdin` or `keys` that has waited as long as the adapter holds one
    /// (see [`Attempt::Held`]): the count taken, never [`Write::Pending`]; EAGAIN once
    /// the command has taken no input for `--wait-timeout`.
    pub fn write_held(&self, fh: u64, data: &[u8]) -> FsResult<u32> {
        match self.write_as(fh, 0, data, Attempt::Held)? {
            Write::Done(n) => Ok(n),
            Write::Pending { .. } => Err(Error::new(libc::EAGAIN, "the input is full")),
        }
    }

    fn write_as(&self, fh: u64, offset: u64, data: &[u8], attempt: Attempt) -> FsResult<Write> {
        let mut state = self.state.lock();
        if let Some(said) = kill_said(&mut state, fh) {
            let (job, said, name) = said;
            let heeded = said.heed(kill::asked(data));
            drop(state);
            return match heeded {
                Ok(asked) => {
                    self.heed_kill(&name, &job, asked);
                    Ok(Write::Done(data.len() as u32))
                }
                Err(too_many) => Err(input_error(&name, "kill", libc::EINVAL, &too_many)),
            };
        }
        let handle = state
            .handles
            .get(&fh)
            .ok_or(Error::new(libc::EBADF, "no such open file"))?;
        let name = || match handle.owner.and_then(|id| state.command(id)) {
            Some(command) => command.name.clone(),
            None => String::new(),
        };
        match (&handle.body, handle.owner) {
            (
                Body::Input {
                    job,
                    script,
                    refused,
                },
                _,
            ) => {
                let (job, script, refused, name) =
                    (job.clone(), script.clone(), refused.clone(), name());
                drop(state);
                self.write_input(&name, &job, script.as_deref(), &refused, attempt, data)
            }
            (Body::Keys { job }, _) => {
                let (job, name) = (job.clone(), name());
                drop(state);
                self.write_keys(&name, &job, attempt, data)
            }
            (
                Body::Draft {
                    write: true,
                    append,
                },
                Some(owner),
            ) => {
                let append = *append;
                drop(state);
                self.write_draft(owner, append, offset, data)
                    .map(Write::Done)
            }
            _ => Err(Error::new(libc::EBADF, "this file is not written")),
        }
    }

    /// Does what a write to `kill` asked for, in order. A word that names no signal
    /// stops the command as `stop` does, and says so in the log and in `reason`.
    fn heed_kill(&self, name: &str, job: &Arc<Job>, asked: Vec<Asked>) {
        for asked in asked {
            match &asked {
                Asked::Signal(signal) => self.spawner.signal(job, *signal),
                Asked::Stop => self.spawner.kill(job, kill::KILLED_BY_A_WRITE),
                Asked::Unknown(word) => {
                    let what = if job.is_running() {
                        "stopping the command (TERM, then KILL after the grace)"
                    } else {
                        "the command has stopped already"
                    };
                    crate::log::info(&format!(
                        "cmd/{name}/kill: {word} is no signal name; {what}"
                    ));
                    self.spawner.kill(job, &asked.reason());
                }
            }
        }
    }

    /// The last close of a handle. For a draft's writer this decides the command.
    pub fn release(&self, fh: u64) {
        let writer = self.locked(|state, effects| {
            let handle = state.handles.remove(&fh)?;
            let owner = handle.owner?;
            let writer = matches!(handle.body, Body::Draft { write: true, .. });
            // `: > kill` opens and closes without a write, `echo > kill` writes a
            // blank line: either stops it.
            if let Body::Kill { job, said } = &handle.body {
                if *said == Said::Nothing {
                    effects.push(Effect::Kill {
                        job: job.clone(),
                        why: kill::KILLED_BY_A_WRITE,
                    });
                }
            }
            effects.push(Effect::Discard(Discarded::Handle(handle)));
            match state.entries.get_mut(&owner) {
                Some(Entry::Draft(_)) => return writer.then_some(owner),
                Some(Entry::Command(command)) => {
                    command.open = command.open.saturating_sub(1);
                    if let Run::Job(job) = &command.run {
                        job.store().closed();
                    }
                    if command.open == 0 {
                        command.idle_since = SystemTime::now();
                        if !command.listed {
                            effects.discard_entry(state.entries.remove(&owner));
                        }
                    }
                }
                Some(Entry::View(_)) | None => {}
            }
            None
        });
        if let Some(owner) = writer {
            self.release_writer(owner);
        }
    }
}
