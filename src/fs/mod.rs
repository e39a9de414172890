//! The tree: every directory and file of the mount, drafts and commands, open handles
//! and what a read, write or close means. It speaks in inode numbers, byte slices and
//! errno values and never sees a FUSE reply, so tests drive it without a mount.
//!
//! A read that has to wait (`wait`, `follow`, or a lookup racing a writer's close)
//! comes back as [`Read::Pending`] or [`Lookup::Later`]; the FUSE adapter parks the
//! reply and asks again when the supervisor reports news.
//!
//! Locking: one mutex guards [`State`] for one operation at a time. A job's own lock
//! (inside the supervisor) may be taken while holding it, never the other way round.
//!
//! Layout: `types` (the values the tree answers with), `state` (what the lock guards,
//! and `resolve`), `fixed` (fixed directories and pages), `slots` (the table of files
//! under `cmd/<name>/`), `drafts` (writing, checking, deciding and starting),
//! `handles` (open, read, write, close, listings and view inodes), `pages` (rendering).

mod clock;
mod drafts;
mod effects;
mod events;
mod fixed;
mod handles;
mod input;
mod kill;
pub mod names;
pub mod pages;
mod restore;
mod skill;
mod slots;
mod state;
pub mod stderr;
mod types;
pub mod view;

/// What a job's news is about, as the supervisor tells it: the adapter hears it here.
pub use crate::supervisor::News;
pub use clock::Clock;
pub use effects::{Hooks, Spawner};
pub use restore::{Comeback, Returning};
pub use state::RELEASE_WINDOW;
pub use types::{
    Attr, Error, FsResult, Kind, Later, Lookup, OpenMode, Read, TreeConfig, Write, ANY_JOB,
};

use crate::panics::Watched;
use crate::policy::audit::Audit;
use crate::policy::Policy;
use crate::spool::Spool;
use crate::supervisor::Job;
use effects::{Effect, Effects};
use names::{Dynamic, Slot};
use parking_lot::Mutex;
use state::{Entry, Node, Run, Stage, State};
use std::sync::{Arc, OnceLock};
use std::time::{Instant, SystemTime};

pub struct Tree {
    config: TreeConfig,
    started: SystemTime,
    /// Watched: a panic that unwinds through it stops the driver (see `crate::panics`).
    state: Watched<State>,
    spawner: Arc<dyn Spawner>,
    policy: Arc<Policy>,
    audit: Option<Audit>,
    hooks: OnceLock<Hooks>,
    /// Where refused commands' records are kept, and whom to ask about evictions.
    spool: OnceLock<Arc<Spool>>,
}

impl Tree {
    /// Panics with the tree's lock held: a test's way to a half-updated tree (see
    /// `crate::panics::Site::Locked`).
    pub fn panic_holding_lock(&self) {
        let _state = self.state.lock();
        panic!("a panic injected for a test, with the tree's lock held");
    }

    pub fn new(
        config: TreeConfig,
        spawner: Arc<dyn Spawner>,
        policy: Arc<Policy>,
        audit: Option<Audit>,
    ) -> Tree {
        Tree {
            config,
            started: SystemTime::now(),
            state: Watched::new(State::new()),
            spawner,
            policy,
            audit,
            hooks: OnceLock::new(),
            spool: OnceLock::new(),
        }
    }

    pub fn config(&self) -> &TreeConfig {
        &self.config
    }

    // ----- attributes ---------------------------------------------------------------

    fn attr_locked(&self, state: &State, ino: u64) -> FsResult<Attr> {
        match state.resolve(ino)? {
            Node::Dir(ino, _) => {
                let mtime = if ino == names::ROOT {
                    self.started
                } else {
                    SystemTime::now()
                };
                Ok(Attr::new(ino, Kind::Dir, 0, fixed::dir_perm(ino), mtime))
            }
            Node::Events => Ok(Attr::new(
                names::EVENTS,
                Kind::File,
                0,
                0o400,
                SystemTime::now(),
            )),
            Node::Page(ino) => {
                let size = self.render_page(state, ino).len() as u64;
                Ok(Attr::new(ino, Kind::File, size, 0o400, SystemTime::now()))
            }
            Node::Draft(id, draft) => Ok(drafts::draft_attr(id, draft)),
            // Its listing changes when the command stops (`exitcode` comes, `pid` goes).
            Node::CommandDir(id, command) => Ok(Attr::new(
                names::entry_ino(id),
                Kind::Dir,
                0,
                0o700,
                slots::changed_at(command),
            )),
            Node::CommandFile(id, command, slot) => Ok(slots::file_attr(id, command, slot)),
            Node::View(id, view) => handles::view_attr(id, view),
        }
    }

    /// `getattr_as` by a caller not known.
    #[cfg(test)]
    pub fn getattr(&self, ino: u64, fh: Option<u64>) -> FsResult<Attr> {
        self.getattr_as(ino, fh, 0)
    }

    /// Attributes of an inode, asked by thread `caller` (0: not known); with the handle
    /// of an open file, its size is the size of what that handle reads (a page rendered
    /// at open, or the handle's view), so a reader going by the size gets every byte. A
    /// page not rendered yet (see `Body::Settling`) reads through the driver and says 0
    /// until it is. `/events` has the size of the feed the handle reads, or without
    /// one (an `fstat`) of the feed `caller` opened last: `tail -f` reads exactly what
    /// that size grows by.
    pub fn getattr_as(&self, ino: u64, fh: Option<u64>, caller: u32) -> FsResult<Attr> {
        let mut state = self.state.lock();
        let mut attr = self.attr_locked(&state, ino)?;
        if ino == names::EVENTS {
            attr.size = handles::events_size(&mut state, fh, caller);
            return Ok(attr);
        }
        match fh.and_then(|fh| state.handles.get(&fh)).map(|h| &h.body) {
            Some(state::Body::Fixed(bytes)) => attr.size = bytes.len() as u64,
            Some(state::Body::Settling(_)) => attr.size = 0,
            Some(state::Body::Growing {
                job, stream, view, ..
            }) => attr.size = view.size(job, *stream),
            _ => {}
        }
        Ok(attr)
    }

    // ----- lookup -------------------------------------------------------------------

    pub fn lookup(&self, parent: u64, name: &[u8]) -> FsResult<Lookup> {
        self.locked(|state, effects| self.lookup_locked(state, effects, parent, name, None))
    }

    /// A lookup by process `pid`: the one removing a command's files still finds those
    /// that went when it stopped (see `slots::vanished`).
    pub fn lookup_as(&self, parent: u64, name: &[u8], pid: u32) -> FsResult<Lookup> {
        self.locked(|state, effects| self.lookup_locked(state, effects, parent, name, Some(pid)))
    }

    fn lookup_locked(
        &self,
        state: &mut State,
        effects: &mut Effects,
        parent: u64,
        name: &[u8],
        caller: Option<u32>,
    ) -> FsResult<Lookup> {
        let missing = || Error::new(libc::ENOENT, "no such file or directory");
        let children = match state.resolve(parent)? {
            Node::Dir(_, children) => children,
            Node::CommandDir(id, command) if matches!(command.run, Run::Starting) => {
                effects::hurry_start(state, id);
                return Ok(Lookup::Later(Later::Start));
            }
            Node::CommandDir(id, command) => {
                let slot = slots::find(command, name, caller).ok_or_else(missing)?;
                if slots::row_of(slot).how.is_stream() {
                    if let Some(view) = self.stream_lookup(state, id, slot) {
                        return Ok(Lookup::Found(view));
                    }
                }
                let command = state.command(id).ok_or_else(missing)?;
                return Ok(Lookup::Found(slots::file_attr(id, command, slot)));
            }
            Node::Draft(..) => return Err(Error::new(libc::ENOTDIR, "a draft is a file")),
            Node::Page(_) | Node::Events | Node::CommandFile(..) | Node::View(..) => {
                return Err(missing())
            }
        };
        if let Some((_, ino, _)) = children.iter().find(|(n, _, _)| n.as_bytes() == name) {
            return self.attr_locked(state, *ino).map(Lookup::Found);
        }
        let text_name = std::str::from_utf8(name).map_err(|_| missing())?;
        match parent {
            names::CTL => {
                let id = *state.ctl.get(text_name).ok_or_else(missing)?;
                self.attr_locked(state, names::entry_ino(id))
                    .map(Lookup::Found)
            }
            names::CMD => {
                if let Some(&draft_id) = state.ctl.get(text_name) {
                    if let Some(Entry::Draft(draft)) = state.entries.get(&draft_id) {
                        if let Stage::Decided { .. } = draft.stage {
                            self.start_draft(state, effects, draft_id);
                        } else if let Some(later) = draft.settling() {
                            return Ok(Lookup::Later(later));
                        }
                    }
                }
                let id = *state.cmd.get(text_name).ok_or_else(missing)?;
                if matches!(state.command(id), Some(c) if matches!(c.run, Run::Starting)) {
                    effects::hurry_start(state, id);
                    return Ok(Lookup::Later(Later::Start));
                }
                self.attr_locked(state, names::entry_ino(id))
                    .map(Lookup::Found)
            }
            _ => Err(missing()),
        }
    }

    // ----- removal ------------------------------------------------------------------

    /// An unlink by no process in particular, for the tests.
    #[cfg(test)]
    pub fn unlink(&self, parent: u64, name: &[u8]) -> FsResult<()> {
        self.unlink_by(parent, name, None)
    }

    /// An unlink by process `pid`: the process removing a command's files also removes
    /// those that went when it stopped (see `slots::vanished`).
    pub fn unlink_as(&self, parent: u64, name: &[u8], pid: u32) -> FsResult<()> {
        self.unlink_by(parent, name, Some(pid))
    }

    fn unlink_by(&self, parent: u64, name: &[u8], caller: Option<u32>) -> FsResult<()> {
        let closing =
            self.locked(|state, effects| self.unlink_locked(state, effects, parent, name, caller))?;
        match closing {
            Some(Closing { name, job, script }) => self.close_input(&name, &job, script.as_deref()),
            None => Ok(()),
        }
    }

    /// Removes a file from a listing; for `stdin` on a pipe, says whose input to close
    /// once the lock is released (that does not pin the command: it is an action on the
    /// command, not the removal of a view of it).
    ///
    /// A terminal has no end of file to give: its input side closes only with the
    /// program's session, and a C-d is a key the program may read as it likes (an
    /// editor does not end on it). So `rm stdin` on a terminal removes the file like
    /// any other, hiding it and pinning the command; `keys` and the handles already
    /// open still reach the program. `rm -r` on a running terminal command then goes
    /// on to its `rmdir`, which stops it.
    fn unlink_locked(
        &self,
        state: &mut State,
        effects: &mut Effects,
        parent: u64,
        name: &[u8],
        caller: Option<u32>,
    ) -> FsResult<Option<Closing>> {
        let id = match state.resolve(parent) {
            Ok(Node::Dir(..)) => {
                if name == b"index.md" {
                    return Err(Error::new(libc::EPERM, "index.md is the directory's page"));
                }
                return match parent {
                    names::CTL => self.unlink_draft(state, effects, name).map(|()| None),
                    names::CMD => {
                        let known =
                            std::str::from_utf8(name).is_ok_and(|n| state.cmd.contains_key(n));
                        Err(if known {
                            Error::new(libc::EISDIR, "a command is a directory: rm -r removes it")
                        } else {
                            Error::new(libc::ENOENT, "no command of that name")
                        })
                    }
                    _ => Err(Error::new(libc::EPERM, "fixed files cannot be removed")),
                };
            }
            Ok(Node::CommandDir(id, _)) => id,
            _ if matches!(names::decode(parent), Some(Dynamic::Entry(_))) => {
                return Err(Error::new(libc::ENOENT, "no such command"))
            }
            _ => return Err(Error::new(libc::ENOTDIR, "not a directory")),
        };
        let command = state
            .command_mut(id)
            .ok_or(Error::new(libc::ENOENT, "no such command"))?;
        let slot = slots::find(command, name, caller).ok_or(Error::new(
            libc::ENOENT,
            "no such file in this command's directory",
        ))?;
        if slot == Slot::Stdin && !slots::vanished(command, slot) {
            if let Run::Job(job) = &command.run {
                if !job.is_terminal() {
                    return Ok(Some(Closing {
                        name: command.name.clone(),
                        job: job.clone(),
                        script: command.script.clone(),
                    }));
                }
            }
        }
        command.hidden |= slot.bit();
        command.remover = caller.filter(|&pid| pid != 0);
        command.pinned = true;
        restore::keep_pin(command);
        Ok(None)
    }

    /// Removes `cmd/<name>`, stopping it first if it runs. Readers that hold one of its
    /// files open keep reading until they close.
    pub fn rmdir(&self, parent: u64, name: &[u8]) -> FsResult<()> {
        self.locked(|state, effects| {
            if parent != names::CMD {
                return Err(if fixed::children(parent).is_some() {
                    Error::new(libc::EPERM, "only commands under cmd/ can be removed")
                } else {
                    Error::new(libc::ENOTDIR, "not a directory")
                });
            }
            let (_, id) = state::named(&state.cmd, name, "no command of that name")?;
            remove_command(state, effects, id, "killed: its directory was removed");
            Ok(())
        })
    }
}

/// Takes a command off `cmd/`, stopping it if it runs; its entry goes once no handle
/// is open on it.
fn remove_command(state: &mut State, effects: &mut Effects, id: u64, why: &'static str) {
    let Some(command) = state.command_mut(id) else {
        return;
    };
    match &command.run {
        Run::Job(job) => {
            // Its spool files go once the last reader lets go.
            job.store().remove();
            effects.push(Effect::Kill {
                job: job.clone(),
                why,
            });
        }
        Run::Denied { store, .. } => {
            if let Some(store) = store {
                store.remove();
            }
        }
        Run::Starting => {}
    }
    command.listed = false;
    let (name, open) = (command.name.clone(), command.open);
    state.cmd.remove(&name);
    // News for `/events`, whose readers hear of a removal as of any change.
    effects.push(Effect::Changed);
    if open == 0 {
        effects.discard_entry(state.entries.remove(&id));
    }
}

/// How much of the tree a tick looks at.
#[derive(Clone, Copy)]
enum Sweep {
    /// Every entry: drafts, and each command for its keep time and its eviction.
    Commands,
    /// Drafts only (and the commands with an input, as every tick does).
    DraftsAndInputs,
}

impl Tree {
    // ----- time ---------------------------------------------------------------------

    /// Periodic work: start commands whose settle time is over, free abandoned drafts,
    /// send what waits in commands' inputs, and remove stopped commands nobody has
    /// looked at for their keep time or whose output was evicted. It only decides; the
    /// spawns it queues run in [`Tree::start_until`].
    pub fn tick(&self) {
        self.tick_with(Sweep::Commands);
    }

    /// [`Tree::tick`] without the look at every command, which costs a lock of each
    /// job: only drafts and the commands with an input. For the clock's frequent
    /// beat, with a whole tick now and then.
    pub fn tick_drafts(&self) {
        self.tick_with(Sweep::DraftsAndInputs);
    }

    fn tick_with(&self, sweep: Sweep) {
        let inputs = self.locked(|state, effects| {
            self.tick_locked(state, effects, sweep);
            // Those whose command has gone, or whose job has stopped, need no more.
            let State {
                inputs, entries, ..
            } = state;
            let mut running = Vec::new();
            inputs.retain(|id| {
                let Some(Entry::Command(command)) = entries.get(id) else {
                    return false;
                };
                match &command.run {
                    Run::Job(job) if job.is_running() => {
                        running.push(job.clone());
                        true
                    }
                    _ => false,
                }
            });
            running
        });
        // What a terminal did not take at once goes out as soon as it can.
        for job in inputs {
            if let Some(input) = job.input() {
                input.flush();
            }
        }
    }

    fn tick_locked(&self, state: &mut State, effects: &mut Effects, sweep: Sweep) {
        let now = Instant::now();
        let wall = SystemTime::now();
        let mut due = Vec::new();
        let mut abandoned = Vec::new();
        let mut expired = Vec::new();
        let mut evicted = Vec::new();
        let entries: Box<dyn Iterator<Item = (&u64, &Entry)>> = match sweep {
            Sweep::Commands => Box::new(state.entries.iter()),
            Sweep::DraftsAndInputs => Box::new(
                state
                    .ctl
                    .values()
                    .filter_map(|id| Some((id, state.entries.get(id)?))),
            ),
        };
        for (id, entry) in entries {
            match entry {
                Entry::Draft(draft) => match draft.stage {
                    Stage::Decided {
                        start_at: Some(start_at),
                        ..
                    } if start_at <= now => due.push(*id),
                    // Empty, or decided under a temporary name and never renamed.
                    Stage::Writing { writers: 0, .. } | Stage::Decided { start_at: None, .. }
                        if now.duration_since(draft.touched) >= self.config.keep =>
                    {
                        abandoned.push(*id)
                    }
                    _ => {}
                },
                Entry::Command(command) => {
                    // A pin holds while something it keeps is left: a command with
                    // all its lasting files removed is what an `rm -r` that raced the
                    // command's end leaves behind (see `slots::emptied`). It cannot be
                    // removed at once, as an `rm -r` that did not race may still be on
                    // its way to the `rmdir`, which must find it; it expires instead.
                    let pinned = command.pinned && !slots::emptied(command);
                    if !command.listed || pinned || command.open > 0 {
                        continue;
                    }
                    if matches!(&command.run, Run::Job(job) if job.evicted()) {
                        evicted.push(*id);
                        continue;
                    }
                    let stopped_at = match &command.run {
                        Run::Denied { .. } => Some(command.created),
                        Run::Starting => None,
                        Run::Job(job) => job.finished_at(),
                    };
                    let Some(stopped_at) = stopped_at else {
                        continue;
                    };
                    let idle_from = stopped_at.max(command.idle_since);
                    if wall.duration_since(idle_from).unwrap_or_default() >= command.keep {
                        expired.push(*id);
                    }
                }
                Entry::View(_) => {}
            }
        }
        for id in due {
            self.start_draft(state, effects, id);
        }
        for id in abandoned {
            if let Some(Entry::Draft(draft)) = state.entries.remove(&id) {
                state.ctl.remove(&draft.name);
                let held = matches!(draft.stage, Stage::Decided { start_at: None, .. });
                if held {
                    let why = "freed after --keep: a draft under a `.tmp` or hidden name runs \
                               only once renamed, and it never was";
                    drafts::note_refusal(state, &draft.name, why);
                }
            }
        }
        for id in expired {
            remove_command(state, effects, id, "");
        }
        for id in evicted {
            if let (Some(command), Some(spool)) = (state.command(id), self.spool.get()) {
                spool.log(&format!(
                    "removed cmd/{}: its output was evicted to stay under --max-spool",
                    command.name
                ));
            }
            remove_command(state, effects, id, "");
        }
    }
}

#[cfg(test)]
mod input_tests;
#[cfg(test)]
mod model;
#[cfg(test)]
mod tests;

/// A command's stdin to close once the tree's lock is released (`rm cmd/<name>/stdin`),
/// with what its shell was given when that is checked.
struct Closing {
    name: String,
    job: Arc<Job>,
    script: Option<Arc<Mutex<Vec<u8>>>>,
}
