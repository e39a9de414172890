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

pub mod names;
pub mod pages;

use crate::policy::audit::Audit;
use crate::policy::{parse_directives, Directives, Policy, Verdict, NO_COMMAND_REASON};
use crate::supervisor::ring::View;
use crate::supervisor::{Job, Phase, SpawnRequest, Stream, Supervisor};
use names::{BadName, Dynamic, Slot};
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant, SystemTime};

/// An errno for the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Errno(pub i32);

pub type FsResult<T> = Result<T, Errno>;

/// Largest command text accepted (SPEC 3).
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
}

pub enum Read {
    Data(Vec<u8>),
    /// Nothing to say yet; ask again when job `job` has news.
    Pending {
        job: u64,
    },
}

pub enum Lookup {
    Found(Attr),
    /// A writer of `ctl/<name>` has closed but its last close is still on its way;
    /// ask again after the next release.
    Later,
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

struct Draft {
    name: String,
    text: Vec<u8>,
    writers: u32,
    /// A writer closed a descriptor after writing; the final RELEASE may follow.
    flushed_after_write: bool,
    /// Set when the command was decided; it starts at this instant.
    start_at: Option<Instant>,
    /// Set when a write was refused; the last close turns it into a denied command.
    refusal: Option<Refusal>,
    /// Length of the text at the last check on a write.
    checked_len: usize,
    /// The whole text passed the check at a close and has not changed since, so the
    /// decision need not check it again.
    passed_close: bool,
    /// The `#terminalfs` lines, read when the command was decided.
    directives: Directives,
    modified: SystemTime,
    touched: Instant,
}

/// Why a command will not run, and which rule said so (if one did).
#[derive(Clone)]
struct Refusal {
    rule: Option<String>,
    reason: String,
}

impl Refusal {
    fn plain(reason: String) -> Refusal {
        Refusal { rule: None, reason }
    }
}

/// How much of a draft a check looks at.
#[derive(Clone, Copy)]
enum Check {
    Write,
    Close,
}

enum Run {
    Denied { reason: String },
    Job(Arc<Job>),
}

struct Command {
    name: String,
    text: Arc<[u8]>,
    run: Run,
    created: SystemTime,
    /// Open handles on any of its files.
    open: u32,
    /// When the last handle closed (or when it was made).
    idle_since: SystemTime,
    /// A single file was removed: it no longer expires on its own.
    pinned: bool,
    /// Files removed one by one.
    hidden: u16,
    /// Still listed under `cmd/` (false once removed, while readers finish).
    listed: bool,
    keep: Duration,
    /// The newest view entry made for each stream file.
    views: HashMap<Slot, u64>,
}

/// A fixed view of one output stream, made when a lookup found bytes dropped: its
/// own inode, whose size only grows, so `tail -f` on a handle opened through it keeps
/// following while a fresh lookup gets a fresh view (and notice).
struct ViewEntry {
    command: u64,
    /// Weak: a view the kernel has not forgotten yet must not keep an expired
    /// command's output in memory; open handles hold their own reference.
    job: Weak<Job>,
    stream: Stream,
    view: View,
    /// Lookups the kernel has not forgotten yet.
    lookups: u64,
    created: SystemTime,
}

enum Entry {
    Draft(Draft),
    Command(Command),
    View(ViewEntry),
}

enum Body {
    /// Bytes rendered at open.
    Fixed(Vec<u8>),
    /// A writer (or reader) of a draft; `append` for O_APPEND.
    Draft {
        write: bool,
        append: bool,
    },
    /// `stdout`, `stderr` or `output`.
    Growing {
        job: Arc<Job>,
        stream: Stream,
        view: View,
    },
    /// Always the `output` stream; the field keeps the shape of `Growing`.
    Follow {
        job: Arc<Job>,
        stream: Stream,
        view: View,
    },
    Wait {
        job: Arc<Job>,
    },
    Kill {
        job: Arc<Job>,
    },
    Listing(Vec<(u64, Kind, String)>),
}

struct Handle {
    /// The draft or command id this handle keeps alive, if any.
    owner: Option<u64>,
    body: Body,
}

#[derive(Default)]
struct State {
    next_id: u64,
    next_fh: u64,
    entries: HashMap<u64, Entry>,
    ctl: BTreeMap<String, u64>,
    cmd: BTreeMap<String, u64>,
    handles: HashMap<u64, Handle>,
}

pub struct Tree {
    config: TreeConfig,
    started: SystemTime,
    state: Mutex<State>,
    supervisor: Arc<Supervisor>,
    policy: Arc<Policy>,
    audit: Option<Audit>,
}

fn status_word(run: &Run) -> &'static str {
    match run {
        Run::Denied { .. } => "denied",
        Run::Job(job) => match job.outcome() {
            None => "running",
            Some(true) => "completed",
            Some(false) => "error",
        },
    }
}

impl Tree {
    pub fn new(
        config: TreeConfig,
        supervisor: Arc<Supervisor>,
        policy: Arc<Policy>,
        audit: Option<Audit>,
    ) -> Tree {
        Tree {
            config,
            started: SystemTime::now(),
            state: Mutex::new(State {
                next_id: 1,
                next_fh: 1,
                ..State::default()
            }),
            supervisor,
            policy,
            audit,
        }
    }

    pub fn config(&self) -> &TreeConfig {
        &self.config
    }

    // ----- attributes ---------------------------------------------------------------

    fn attr(&self, ino: u64, kind: Kind, size: u64, perm: u16, mtime: SystemTime) -> Attr {
        Attr {
            ino,
            kind,
            size,
            perm,
            mtime,
            ctime: mtime,
            blksize: if kind == Kind::File {
                GROWING_BLKSIZE
            } else {
                4096
            },
        }
    }

    fn site<'a>(&'a self, state: &State) -> pages::Site<'a> {
        let supervisor = self.supervisor.config();
        pages::Site {
            mount: self.config.mount.as_deref(),
            shell: &supervisor.shell,
            cwd: &supervisor.cwd,
            settings: self.policy.path(),
            rules: self.policy.rule_count(),
            commands: state.cmd.len(),
            wait_timeout: self.config.wait_timeout,
            keep: self.config.keep,
            settle: self.config.settle,
        }
    }

    fn render_static(&self, state: &State, ino: u64) -> Option<Vec<u8>> {
        let site = self.site(state);
        let page = match ino {
            names::ROOT_INDEX => pages::root_index(&site),
            names::CTL_INDEX => pages::ctl_index(&site),
            names::CMD_INDEX => {
                let rows: Vec<_> = state
                    .cmd
                    .values()
                    .filter_map(|id| match state.entries.get(id) {
                        Some(Entry::Command(c)) => Some(c),
                        _ => None,
                    })
                    .map(|c| {
                        let (exitcode, dropped) = match &c.run {
                            Run::Denied { .. } => (None, 0),
                            Run::Job(job) => {
                                let s = job.snapshot();
                                let code = match s.phase {
                                    Phase::Stopped(exit) => Some(exit.code),
                                    Phase::Running { .. } => None,
                                };
                                (code, s.stdout.1 + s.stderr.1)
                            }
                        };
                        (c, exitcode, dropped)
                    })
                    .collect();
                let rows: Vec<pages::Row> = rows
                    .iter()
                    .map(|(c, exitcode, dropped)| pages::Row {
                        name: &c.name,
                        status: status_word(&c.run),
                        exitcode: *exitcode,
                        command: &c.text,
                        dropped: *dropped,
                    })
                    .collect();
                pages::cmd_index(&site, &rows)
            }
            names::SKILLS_INDEX => pages::skills_index(),
            names::SKILLS_TFS_INDEX => pages::skill_dir_index(),
            names::SKILL_MD => pages::skill(&site),
            _ => return None,
        };
        Some(page.into_bytes())
    }

    fn static_dir(ino: u64) -> Option<&'static [(&'static str, u64, Kind)]> {
        const ROOT: &[(&str, u64, Kind)] = &[
            ("index.md", names::ROOT_INDEX, Kind::File),
            ("ctl", names::CTL, Kind::Dir),
            ("cmd", names::CMD, Kind::Dir),
            ("skills", names::SKILLS, Kind::Dir),
        ];
        const CTL: &[(&str, u64, Kind)] = &[("index.md", names::CTL_INDEX, Kind::File)];
        const CMD: &[(&str, u64, Kind)] = &[("index.md", names::CMD_INDEX, Kind::File)];
        const SKILLS: &[(&str, u64, Kind)] = &[
            ("index.md", names::SKILLS_INDEX, Kind::File),
            ("terminalfs", names::SKILLS_TFS, Kind::Dir),
        ];
        const SKILLS_TFS: &[(&str, u64, Kind)] = &[
            ("index.md", names::SKILLS_TFS_INDEX, Kind::File),
            ("SKILL.md", names::SKILL_MD, Kind::File),
        ];
        match ino {
            names::ROOT => Some(ROOT),
            names::CTL => Some(CTL),
            names::CMD => Some(CMD),
            names::SKILLS => Some(SKILLS),
            names::SKILLS_TFS => Some(SKILLS_TFS),
            _ => None,
        }
    }

    fn parent_of(ino: u64) -> u64 {
        match ino {
            names::SKILLS_TFS => names::SKILLS,
            _ => names::ROOT,
        }
    }

    /// Which files a command directory shows now.
    fn visible_slots(command: &Command) -> Vec<Slot> {
        let (running, has_reason) = match &command.run {
            Run::Denied { .. } => {
                return [Slot::Command, Slot::Status, Slot::Reason]
                    .into_iter()
                    .filter(|s| command.hidden & s.bit() == 0)
                    .collect()
            }
            Run::Job(job) => {
                let snapshot = job.snapshot();
                (
                    matches!(snapshot.phase, Phase::Running { .. }),
                    snapshot.reason.is_some(),
                )
            }
        };
        Slot::ALL
            .into_iter()
            .filter(|slot| match slot {
                Slot::Pid | Slot::Kill => running,
                Slot::Exitcode => !running,
                Slot::Reason => has_reason,
                _ => true,
            })
            .filter(|s| command.hidden & s.bit() == 0)
            .collect()
    }

    fn file_attr(&self, id: u64, command: &Command, slot: Slot) -> Attr {
        let ino = names::file_ino(id, slot);
        let perm = match slot {
            Slot::Kill => 0o200,
            _ => 0o400,
        };
        let (size, mtime) = match (slot, &command.run) {
            (Slot::Follow | Slot::Wait | Slot::Kill, _) => (0, command.created),
            (Slot::Stdout | Slot::Stderr | Slot::Output, Run::Job(job)) => {
                let size = job.view_size(stream_of(slot), &View::whole());
                let mtime = job.snapshot().finished_at.unwrap_or_else(SystemTime::now);
                (size, mtime)
            }
            _ => (
                render_file(&command.name, &command.text, &command.run, slot)
                    .map_or(0, |b| b.len() as u64),
                command.created,
            ),
        };
        self.attr(ino, Kind::File, size, perm, mtime)
    }

    /// A view's attributes; ENOENT once its command (and every handle on it) is gone.
    fn view_attr(&self, id: u64, view: &ViewEntry) -> FsResult<Attr> {
        let job = view.job.upgrade().ok_or(Errno(libc::ENOENT))?;
        let slot = match view.stream {
            Stream::Stdout => Slot::Stdout,
            Stream::Stderr => Slot::Stderr,
            Stream::Output => Slot::Output,
        };
        let size = job.view_size(view.stream, &view.view);
        let mtime = job.snapshot().finished_at.unwrap_or(view.created);
        Ok(self.attr(names::file_ino(id, slot), Kind::File, size, 0o400, mtime))
    }

    /// The inode a lookup of a stream file gets: the command's own while nothing was
    /// dropped, else a view made now (or the newest one, if nothing was dropped since).
    fn stream_lookup(&self, state: &mut State, id: u64, slot: Slot) -> Option<Attr> {
        let Some(Entry::Command(command)) = state.entries.get(&id) else {
            return None;
        };
        let Run::Job(job) = &command.run else {
            return None;
        };
        let stream = stream_of(slot);
        let fresh = job.fresh_view(stream);
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
                let view_id = state.next_id;
                state.next_id += 1;
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
                if let Some(Entry::Command(command)) = state.entries.get_mut(&id) {
                    command.views.insert(slot, view_id);
                }
                view_id
            }
        };
        match state.entries.get_mut(&view_id) {
            Some(Entry::View(view)) => {
                view.lookups += 1;
                self.view_attr(view_id, view).ok()
            }
            _ => None,
        }
    }

    /// The kernel dropped `count` references to an inode; view inodes go at zero.
    pub fn forget(&self, ino: u64, count: u64) {
        let mut state = self.state.lock();
        let Some(Dynamic::File(id, _)) = names::decode(ino) else {
            return;
        };
        if let Some(Entry::View(view)) = state.entries.get_mut(&id) {
            view.lookups = view.lookups.saturating_sub(count);
            if view.lookups == 0 {
                state.entries.remove(&id);
            }
        }
    }

    fn entry_attr(&self, id: u64, entry: &Entry) -> FsResult<Attr> {
        match entry {
            Entry::Draft(draft) => {
                let (size, perm) = if draft.start_at.is_none() && draft.refusal.is_none() {
                    (0, 0o600)
                } else {
                    (draft.text.len() as u64, 0o400)
                };
                Ok(self.attr(names::entry_ino(id), Kind::File, size, perm, draft.modified))
            }
            Entry::Command(command) => {
                Ok(self.attr(names::entry_ino(id), Kind::Dir, 0, 0o700, command.created))
            }
            Entry::View(view) => self.view_attr(id, view),
        }
    }

    fn attr_locked(&self, state: &State, ino: u64) -> FsResult<Attr> {
        if Self::static_dir(ino).is_some() {
            let perm = if ino == names::CTL || ino == names::CMD || ino == names::ROOT {
                0o700
            } else {
                0o500
            };
            let mtime = if ino == names::ROOT {
                self.started
            } else {
                SystemTime::now()
            };
            return Ok(self.attr(ino, Kind::Dir, 0, perm, mtime));
        }
        if let Some(page) = self.render_static(state, ino) {
            return Ok(self.attr(ino, Kind::File, page.len() as u64, 0o400, SystemTime::now()));
        }
        match names::decode(ino) {
            Some(Dynamic::Entry(id)) => match state.entries.get(&id) {
                Some(entry) => self.entry_attr(id, entry),
                None => Err(Errno(libc::ENOENT)),
            },
            Some(Dynamic::File(id, slot)) => match state.entries.get(&id) {
                Some(Entry::Command(command)) => Ok(self.file_attr(id, command, slot)),
                Some(Entry::View(view)) => self.view_attr(id, view),
                _ => Err(Errno(libc::ENOENT)),
            },
            None => Err(Errno(libc::ENOENT)),
        }
    }

    /// Attributes of an inode; with the handle of an open file, its size is the size
    /// of what that handle reads (a page rendered at open, or the handle's view), so a
    /// reader going by the size gets every byte.
    pub fn getattr(&self, ino: u64, fh: Option<u64>) -> FsResult<Attr> {
        let state = self.state.lock();
        let mut attr = self.attr_locked(&state, ino)?;
        match fh.and_then(|fh| state.handles.get(&fh)).map(|h| &h.body) {
            Some(Body::Fixed(bytes)) => attr.size = bytes.len() as u64,
            Some(Body::Growing { job, stream, view }) => attr.size = job.view_size(*stream, view),
            _ => {}
        }
        Ok(attr)
    }

    // ----- lookup and listing ---------------------------------------------------------

    pub fn lookup(&self, parent: u64, name: &[u8]) -> FsResult<Lookup> {
        let mut state = self.state.lock();
        if let Some(dir) = Self::static_dir(parent) {
            if let Some((_, ino, _)) = dir.iter().find(|(n, _, _)| n.as_bytes() == name) {
                return self.attr_locked(&state, *ino).map(Lookup::Found);
            }
        }
        let Ok(text_name) = std::str::from_utf8(name) else {
            return Err(Errno(libc::ENOENT));
        };
        match parent {
            names::CTL => match state.ctl.get(text_name) {
                Some(id) => self.entry_attr(*id, &state.entries[id]).map(Lookup::Found),
                None => Err(Errno(libc::ENOENT)),
            },
            names::CMD => {
                if let Some(&draft_id) = state.ctl.get(text_name) {
                    if let Some(Entry::Draft(draft)) = state.entries.get(&draft_id) {
                        if draft.start_at.is_some() {
                            self.start_draft(&mut state, draft_id);
                        } else if draft.writers > 0 && draft.flushed_after_write {
                            return Ok(Lookup::Later);
                        }
                    }
                }
                match state.cmd.get(text_name) {
                    Some(id) => self.entry_attr(*id, &state.entries[id]).map(Lookup::Found),
                    None => Err(Errno(libc::ENOENT)),
                }
            }
            _ => match names::decode(parent) {
                Some(Dynamic::Entry(id)) => match state.entries.get(&id) {
                    Some(Entry::Command(command)) => {
                        let slot = Slot::from_name(text_name)
                            .filter(|slot| Self::visible_slots(command).contains(slot))
                            .ok_or(Errno(libc::ENOENT))?;
                        if matches!(slot, Slot::Stdout | Slot::Stderr | Slot::Output) {
                            if let Some(view) = self.stream_lookup(&mut state, id, slot) {
                                return Ok(Lookup::Found(view));
                            }
                        }
                        match state.entries.get(&id) {
                            Some(Entry::Command(command)) => {
                                Ok(Lookup::Found(self.file_attr(id, command, slot)))
                            }
                            _ => Err(Errno(libc::ENOENT)),
                        }
                    }
                    Some(Entry::Draft(_) | Entry::View(_)) => Err(Errno(libc::ENOTDIR)),
                    None => Err(Errno(libc::ENOENT)),
                },
                _ => Err(Errno(libc::ENOENT)),
            },
        }
    }

    /// Opens a directory: the listing is taken now (starting every decided command
    /// first when the directory is `cmd/`) and served from the handle.
    pub fn opendir(&self, ino: u64) -> FsResult<u64> {
        let mut state = self.state.lock();
        if ino == names::CMD {
            self.start_all_decided(&mut state);
        }
        let mut listing = vec![
            (ino, Kind::Dir, ".".to_string()),
            (Self::parent_of(ino), Kind::Dir, "..".to_string()),
        ];
        if let Some(dir) = Self::static_dir(ino) {
            for (name, child, kind) in dir {
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
        } else {
            let Some(Dynamic::Entry(id)) = names::decode(ino) else {
                return Err(Errno(libc::ENOTDIR));
            };
            let Some(Entry::Command(command)) = state.entries.get(&id) else {
                return Err(Errno(libc::ENOENT));
            };
            listing[1].0 = names::CMD;
            for slot in Self::visible_slots(command) {
                listing.push((
                    names::file_ino(id, slot),
                    Kind::File,
                    slot.name().to_string(),
                ));
            }
        }
        Ok(self.add_handle(&mut state, None, Body::Listing(listing)))
    }

    /// Entries of an open directory from `offset` on.
    pub fn readdir(&self, fh: u64, offset: u64) -> FsResult<Vec<(u64, Kind, String)>> {
        let state = self.state.lock();
        match state.handles.get(&fh).map(|h| &h.body) {
            Some(Body::Listing(listing)) => {
                Ok(listing.iter().skip(offset as usize).cloned().collect())
            }
            _ => Err(Errno(libc::EBADF)),
        }
    }

    // ----- open, read, write, close -------------------------------------------------

    fn add_handle(&self, state: &mut State, owner: Option<u64>, body: Body) -> u64 {
        let fh = state.next_fh;
        state.next_fh += 1;
        if let Some(Some(Entry::Command(command))) = owner.map(|id| state.entries.get_mut(&id)) {
            command.open += 1;
        }
        state.handles.insert(fh, Handle { owner, body });
        fh
    }

    pub fn open(&self, ino: u64, mode: OpenMode) -> FsResult<Opened> {
        let OpenMode { write, append } = mode;
        let mut state = self.state.lock();
        if ino == names::CMD_INDEX {
            self.start_all_decided(&mut state);
        }
        if Self::static_dir(ino).is_some() {
            return Err(Errno(libc::EISDIR));
        }
        if let Some(page) = self.render_static(&state, ino) {
            if write {
                return Err(Errno(libc::EACCES));
            }
            let fh = self.add_handle(&mut state, None, Body::Fixed(page));
            return Ok(Opened {
                fh,
                direct_io: false,
            });
        }
        match names::decode(ino) {
            Some(Dynamic::Entry(id)) => match state.entries.get_mut(&id) {
                Some(Entry::Draft(draft)) => {
                    if write {
                        if draft.start_at.is_some() || draft.refusal.is_some() || draft.writers > 0
                        {
                            return Err(Errno(libc::EEXIST));
                        }
                        draft.writers += 1;
                        draft.touched = Instant::now();
                    }
                    let body = Body::Draft { write, append };
                    let fh = self.add_handle(&mut state, Some(id), body);
                    Ok(Opened {
                        fh,
                        direct_io: true,
                    })
                }
                Some(Entry::Command(_)) => Err(Errno(libc::EISDIR)),
                Some(Entry::View(_)) | None => Err(Errno(libc::ENOENT)),
            },
            Some(Dynamic::File(id, _))
                if matches!(state.entries.get(&id), Some(Entry::View(_))) =>
            {
                if write {
                    return Err(Errno(libc::EACCES));
                }
                let Some(Entry::View(view)) = state.entries.get(&id) else {
                    unreachable!("matched just above");
                };
                let body = Body::Growing {
                    job: view.job.upgrade().ok_or(Errno(libc::ENOENT))?,
                    stream: view.stream,
                    view: view.view.clone(),
                };
                let owner = Some(view.command);
                let fh = self.add_handle(&mut state, owner, body);
                Ok(Opened {
                    fh,
                    direct_io: true,
                })
            }
            Some(Dynamic::File(id, slot)) => {
                let Some(Entry::Command(command)) = state.entries.get(&id) else {
                    return Err(Errno(libc::ENOENT));
                };
                if !Self::visible_slots(command).contains(&slot) {
                    return Err(Errno(libc::ENOENT));
                }
                if write != (slot == Slot::Kill) {
                    return Err(Errno(libc::EACCES));
                }
                let (body, direct_io) = match (&command.run, slot) {
                    (Run::Job(job), Slot::Stdout | Slot::Stderr | Slot::Output) => {
                        let stream = stream_of(slot);
                        let view = View::whole();
                        (
                            Body::Growing {
                                job: job.clone(),
                                stream,
                                view,
                            },
                            true,
                        )
                    }
                    (Run::Job(job), Slot::Follow) => {
                        let view = job.fresh_view(Stream::Output);
                        (
                            Body::Follow {
                                job: job.clone(),
                                stream: Stream::Output,
                                view,
                            },
                            true,
                        )
                    }
                    (Run::Job(job), Slot::Wait) => (Body::Wait { job: job.clone() }, true),
                    (Run::Job(job), Slot::Kill) => (Body::Kill { job: job.clone() }, true),
                    (run, slot) => {
                        let bytes = render_file(&command.name, &command.text, run, slot)
                            .ok_or(Errno(libc::ENOENT))?;
                        (Body::Fixed(bytes), true)
                    }
                };
                let fh = self.add_handle(&mut state, Some(id), body);
                Ok(Opened { fh, direct_io })
            }
            None => Err(Errno(libc::ENOENT)),
        }
    }

    pub fn read(&self, fh: u64, offset: u64, size: u32) -> FsResult<Read> {
        let state = self.state.lock();
        let handle = state.handles.get(&fh).ok_or(Errno(libc::EBADF))?;
        let size = size as usize;
        // Output is copied without the tree lock, so a large read holds up nobody.
        if let Body::Growing { job, stream, view } | Body::Follow { job, view, stream } =
            &handle.body
        {
            let (job, stream, view, follow) = (
                job.clone(),
                *stream,
                view.clone(),
                matches!(handle.body, Body::Follow { .. }),
            );
            drop(state);
            let (bytes, running) = job.read_view(stream, &view, offset, size);
            if follow && bytes.is_empty() && running {
                return Ok(Read::Pending { job: job.id() });
            }
            return Ok(Read::Data(bytes));
        }
        Ok(match &handle.body {
            Body::Fixed(bytes) => Read::Data(slice_at(bytes, offset, size)),
            Body::Draft { .. } => match handle.owner.and_then(|id| state.entries.get(&id)) {
                Some(Entry::Draft(draft)) => Read::Data(slice_at(&draft.text, offset, size)),
                _ => Read::Data(Vec::new()),
            },
            Body::Wait { job } => {
                if offset >= 10 {
                    return Ok(Read::Data(Vec::new()));
                }
                match job.outcome() {
                    None => Read::Pending { job: job.id() },
                    outcome => Read::Data(slice_at(pages::wait_answer(outcome), offset, size)),
                }
            }
            Body::Growing { .. } | Body::Follow { .. } => unreachable!("answered above"),
            Body::Kill { .. } | Body::Listing(_) => return Err(Errno(libc::EBADF)),
        })
    }

    /// What a parked read answers once `--wait-timeout` has passed: `running  \n`
    /// for `wait`, end-of-file for `follow`.
    pub fn read_timed_out(&self, fh: u64, offset: u64, size: u32) -> Vec<u8> {
        let state = self.state.lock();
        match state.handles.get(&fh).map(|h| &h.body) {
            Some(Body::Wait { .. }) => slice_at(pages::wait_answer(None), offset, size as usize),
            _ => Vec::new(),
        }
    }

    pub fn write(&self, fh: u64, offset: u64, data: &[u8]) -> FsResult<u32> {
        let mut state = self.state.lock();
        let handle = state.handles.get(&fh).ok_or(Errno(libc::EBADF))?;
        match &handle.body {
            Body::Kill { job } => {
                let job = job.clone();
                drop(state);
                self.supervisor
                    .kill(&job, "killed: a write to its kill file stopped it");
                Ok(data.len() as u32)
            }
            Body::Draft {
                write: true,
                append,
            } => {
                let append = *append;
                let Some(owner) = handle.owner else {
                    return Err(Errno(libc::EBADF));
                };
                let Some(Entry::Draft(draft)) = state.entries.get_mut(&owner) else {
                    // The draft was removed while open: the bytes go nowhere.
                    return Ok(data.len() as u32);
                };
                // An appending writer's offset comes from a size that is 0 while the
                // draft can be written: appends go to the end of what is there.
                let start = if append {
                    draft.text.len()
                } else {
                    usize::try_from(offset).unwrap_or(usize::MAX)
                };
                let Some(end) = start
                    .checked_add(data.len())
                    .filter(|end| *end <= MAX_COMMAND)
                else {
                    // The rest of the command is lost: never run the part that came.
                    draft.refusal = Some(Refusal::plain(format!(
                        "refused: the command is longer than {MAX_COMMAND} bytes"
                    )));
                    return Err(Errno(libc::EFBIG));
                };
                if draft.refusal.is_some() {
                    return Err(Errno(libc::EPERM));
                }
                if draft.text.len() < end {
                    draft.text.resize(end, 0);
                }
                draft.text[start..end].copy_from_slice(data);
                draft.modified = SystemTime::now();
                draft.touched = Instant::now();
                draft.flushed_after_write = false;
                draft.passed_close = false;
                if let Some(refusal) = self.check_draft(draft, Check::Write) {
                    draft.refusal = Some(refusal);
                    return Err(Errno(libc::EPERM));
                }
                Ok(data.len() as u32)
            }
            _ => Err(Errno(libc::EBADF)),
        }
    }

    /// A close of one descriptor. Decides nothing (a redirect flushes before it
    /// writes, and a child that inherited the descriptor flushes when it exits), but
    /// fails the close when the text as it stands would be refused, so the writer sees
    /// a refusal that the decision will make.
    pub fn flush(&self, fh: u64) -> FsResult<()> {
        let mut state = self.state.lock();
        let Some(Handle {
            owner: Some(owner),
            body: Body::Draft { write: true, .. },
        }) = state.handles.get(&fh)
        else {
            return Ok(());
        };
        let owner = *owner;
        if let Some(Entry::Draft(draft)) = state.entries.get_mut(&owner) {
            if draft.refusal.is_some() || self.check_draft(draft, Check::Close).is_some() {
                return Err(Errno(libc::EPERM));
            }
            draft.passed_close = !draft.text.iter().all(u8::is_ascii_whitespace);
            if !draft.text.is_empty() {
                draft.flushed_after_write = true;
            }
        }
        Ok(())
    }

    /// Checks a draft's text so far. Writes check up to the last blank (a write may
    /// end inside a word: `su` of `sum`) and, past 64 KiB, only every 64 KiB of
    /// growth; a close checks everything. Whitespace alone is not refused here: more
    /// may come.
    fn check_draft(&self, draft: &mut Draft, check: Check) -> Option<Refusal> {
        const STEP: usize = 64 * 1024;
        if draft.text.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        if draft.text.contains(&0) {
            return Some(Refusal::plain(
                "refused: the command holds a NUL byte, which a shell would drop".to_string(),
            ));
        }
        let verdict = match check {
            Check::Write => {
                if draft.text.len() > STEP && draft.text.len() < draft.checked_len + STEP {
                    return None;
                }
                draft.checked_len = draft.text.len();
                self.policy.check_partial(&draft.text)
            }
            Check::Close => self.policy.check(&draft.text),
        };
        match verdict {
            Verdict::Deny { rule, reason } => Some(Refusal { rule, reason }),
            Verdict::Allow => None,
        }
    }

    /// The last close of a handle. For a draft's writer this decides the command.
    pub fn release(&self, fh: u64) {
        let mut state = self.state.lock();
        let Some(handle) = state.handles.remove(&fh) else {
            return;
        };
        let Some(owner) = handle.owner else {
            return;
        };
        match state.entries.get_mut(&owner) {
            Some(Entry::Draft(draft)) => {
                if let Body::Draft { write: true, .. } = handle.body {
                    draft.writers = draft.writers.saturating_sub(1);
                    draft.touched = Instant::now();
                    draft.flushed_after_write = false;
                    if draft.writers == 0 && (!draft.text.is_empty() || draft.refusal.is_some()) {
                        self.decide(&mut state, owner);
                    }
                }
            }
            Some(Entry::Command(command)) => {
                command.open = command.open.saturating_sub(1);
                if command.open == 0 {
                    command.idle_since = SystemTime::now();
                    if !command.listed {
                        state.entries.remove(&owner);
                    }
                }
            }
            Some(Entry::View(_)) | None => {}
        }
    }

    pub fn releasedir(&self, fh: u64) {
        self.state.lock().handles.remove(&fh);
    }

    // ----- drafts and decisions -----------------------------------------------------

    pub fn create(&self, parent: u64, name: &[u8], mode: OpenMode) -> FsResult<(Attr, Opened)> {
        let OpenMode { write, append } = mode;
        let mut state = self.state.lock();
        if let Some(Dynamic::Entry(id)) = names::decode(parent) {
            if let Some(opened) = self.create_late_kill(&mut state, id, name) {
                return Ok(opened);
            }
        }
        if parent != names::CTL {
            return Err(Errno(
                if names::decode(parent).is_some() || Self::static_dir(parent).is_some() {
                    libc::EACCES
                } else {
                    libc::ENOENT
                },
            ));
        }
        let name = match names::check_name(name) {
            Ok(name) => name.to_string(),
            Err(BadName::Reserved) => return Err(Errno(libc::EEXIST)),
            Err(BadName::Invalid) => return Err(Errno(libc::EINVAL)),
        };
        if state.ctl.contains_key(&name) || state.cmd.contains_key(&name) {
            return Err(Errno(libc::EEXIST));
        }
        let id = state.next_id;
        state.next_id += 1;
        let now = SystemTime::now();
        let draft = Draft {
            name: name.clone(),
            text: Vec::new(),
            writers: u32::from(write),
            flushed_after_write: false,
            start_at: None,
            refusal: None,
            checked_len: 0,
            passed_close: false,
            directives: Directives::default(),
            modified: now,
            touched: Instant::now(),
        };
        state.ctl.insert(name, id);
        state.entries.insert(id, Entry::Draft(draft));
        let attr = self.entry_attr(id, &state.entries[&id])?;
        let fh = self.add_handle(&mut state, Some(id), Body::Draft { write, append });
        Ok((
            attr,
            Opened {
                fh,
                direct_io: true,
            },
        ))
    }

    /// `echo > cmd/<name>/kill` just after the command stopped finds no `kill` and
    /// creates one: that is a kill racing the end, which is not an error. The handle
    /// writes to a job that has stopped, which does nothing.
    fn create_late_kill(&self, state: &mut State, id: u64, name: &[u8]) -> Option<(Attr, Opened)> {
        let Some(Entry::Command(command)) = state.entries.get(&id) else {
            return None;
        };
        let Run::Job(job) = &command.run else {
            return None;
        };
        if name != Slot::Kill.name().as_bytes() || command.hidden & Slot::Kill.bit() != 0 {
            return None;
        }
        let attr = self.file_attr(id, command, Slot::Kill);
        let body = Body::Kill { job: job.clone() };
        let fh = self.add_handle(state, Some(id), body);
        Some((
            attr,
            Opened {
                fh,
                direct_io: true,
            },
        ))
    }

    /// Changes a file's size or times. Only a draft that can still be written may be
    /// resized (a redirect truncates it first); `kill` accepts a truncation.
    pub fn setattr(&self, ino: u64, size: Option<u64>) -> FsResult<Attr> {
        let mut state = self.state.lock();
        match names::decode(ino) {
            Some(Dynamic::Entry(id)) => {
                if let Some(Entry::Draft(draft)) = state.entries.get_mut(&id) {
                    if let Some(size) = size {
                        if draft.start_at.is_some() || draft.refusal.is_some() {
                            return Err(Errno(libc::EACCES));
                        }
                        if size as usize > MAX_COMMAND {
                            return Err(Errno(libc::EFBIG));
                        }
                        draft.text.resize(size as usize, 0);
                        draft.passed_close = false;
                        draft.modified = SystemTime::now();
                    }
                    draft.touched = Instant::now();
                } else if size.is_some() {
                    return Err(Errno(libc::EISDIR));
                }
            }
            Some(Dynamic::File(_, slot)) => {
                if size.is_some() && slot != Slot::Kill {
                    return Err(Errno(libc::EACCES));
                }
            }
            None => {
                if size.is_some() {
                    return Err(Errno(libc::EACCES));
                }
            }
        }
        self.attr_locked(&state, ino)
    }

    /// The last writer closed a draft with text in it: refuse it, or schedule its start.
    fn decide(&self, state: &mut State, id: u64) {
        let Some(Entry::Draft(draft)) = state.entries.get_mut(&id) else {
            return;
        };
        let text = String::from_utf8_lossy(&draft.text).into_owned();
        let refusal = if let Some(refusal) = draft.refusal.clone() {
            Some(refusal)
        } else if text.trim().is_empty() {
            Some(Refusal::plain(format!("refused: {NO_COMMAND_REASON}")))
        } else if let Some(refusal) = (!draft.passed_close)
            .then(|| self.check_draft(draft, Check::Close))
            .flatten()
        {
            Some(refusal)
        } else {
            match parse_directives(&text) {
                Ok(directives) => {
                    draft.directives = directives;
                    None
                }
                Err(reason) => Some(Refusal::plain(format!("refused: {reason}"))),
            }
        };
        match refusal {
            Some(Refusal { rule, reason }) => {
                let name = draft.name.clone();
                let text: Arc<[u8]> = std::mem::take(&mut draft.text).into();
                self.record("denied", &name, &text, rule.as_deref(), Some(&reason));
                state.ctl.remove(&name);
                state.entries.remove(&id);
                self.add_command(state, name, text, Run::Denied { reason }, self.config.keep);
            }
            None => {
                draft.start_at = Some(Instant::now() + self.config.settle);
            }
        }
    }

    fn record(
        &self,
        decision: &str,
        name: &str,
        text: &[u8],
        rule: Option<&str>,
        reason: Option<&str>,
    ) {
        if let Some(audit) = &self.audit {
            let command = String::from_utf8_lossy(text);
            let cwd = &self.supervisor.config().cwd;
            if let Err(error) = audit.record(name, &command, cwd, decision, rule, reason) {
                eprintln!("terminalfs: cannot write the audit log: {error}");
            }
        }
    }

    fn add_command(
        &self,
        state: &mut State,
        name: String,
        text: Arc<[u8]>,
        run: Run,
        keep: Duration,
    ) {
        let id = state.next_id;
        state.next_id += 1;
        let now = SystemTime::now();
        state.cmd.insert(name.clone(), id);
        state.entries.insert(
            id,
            Entry::Command(Command {
                name,
                text,
                run,
                created: now,
                open: 0,
                idle_since: now,
                pinned: false,
                hidden: 0,
                listed: true,
                keep,
                views: HashMap::new(),
            }),
        );
    }

    /// Starts a decided draft now: it leaves `ctl/` and appears under `cmd/`.
    fn start_draft(&self, state: &mut State, id: u64) {
        let Some(Entry::Draft(draft)) = state.entries.remove(&id) else {
            return;
        };
        state.ctl.remove(&draft.name);
        let directives = draft.directives;
        let text: Arc<[u8]> = draft.text.into();
        let job = self.supervisor.spawn(SpawnRequest {
            name: draft.name.clone(),
            text: text.clone(),
            timeout: directives.timeout.or(self.config.timeout),
            memory: directives.memory,
        });
        self.record("ran", &draft.name, &text, None, None);
        let keep = directives.keep.unwrap_or(self.config.keep);
        self.add_command(state, draft.name, text, Run::Job(job), keep);
    }

    fn start_all_decided(&self, state: &mut State) {
        let decided: Vec<u64> = state
            .ctl
            .values()
            .filter(
                |id| matches!(state.entries.get(id), Some(Entry::Draft(d)) if d.start_at.is_some()),
            )
            .copied()
            .collect();
        for id in decided {
            self.start_draft(state, id);
        }
    }

    // ----- removal and renaming -----------------------------------------------------

    pub fn unlink(&self, parent: u64, name: &[u8]) -> FsResult<()> {
        let mut state = self.state.lock();
        if Self::static_dir(parent).is_some() {
            if name == b"index.md" {
                return Err(Errno(libc::EPERM));
            }
            if parent == names::CTL {
                let name = std::str::from_utf8(name).map_err(|_| Errno(libc::ENOENT))?;
                let id = *state.ctl.get(name).ok_or(Errno(libc::ENOENT))?;
                if let Some(Entry::Draft(draft)) = state.entries.get(&id) {
                    if draft.start_at.is_some() {
                        // Decided: it is about to run and can no longer be taken back.
                        return Err(Errno(libc::EBUSY));
                    }
                }
                state.ctl.remove(name);
                state.entries.remove(&id);
                return Ok(());
            }
            if parent == names::CMD {
                let known = std::str::from_utf8(name).is_ok_and(|n| state.cmd.contains_key(n));
                return Err(Errno(if known { libc::EISDIR } else { libc::ENOENT }));
            }
            return Err(Errno(libc::EPERM));
        }
        let Some(Dynamic::Entry(id)) = names::decode(parent) else {
            return Err(Errno(libc::ENOTDIR));
        };
        let Some(Entry::Command(command)) = state.entries.get_mut(&id) else {
            return Err(Errno(libc::ENOENT));
        };
        let slot = std::str::from_utf8(name)
            .ok()
            .and_then(Slot::from_name)
            .filter(|slot| Self::visible_slots(command).contains(slot))
            .ok_or(Errno(libc::ENOENT))?;
        command.hidden |= slot.bit();
        command.pinned = true;
        Ok(())
    }

    /// Removes `cmd/<name>`, stopping it first if it runs. Readers that hold one of its
    /// files open keep reading until they close.
    pub fn rmdir(&self, parent: u64, name: &[u8]) -> FsResult<()> {
        let mut state = self.state.lock();
        if parent != names::CMD {
            return Err(Errno(if Self::static_dir(parent).is_some() {
                libc::EPERM
            } else {
                libc::ENOTDIR
            }));
        }
        let name = std::str::from_utf8(name).map_err(|_| Errno(libc::ENOENT))?;
        let id = *state.cmd.get(name).ok_or(Errno(libc::ENOENT))?;
        self.remove_command(&mut state, id, "killed: its directory was removed");
        Ok(())
    }

    fn remove_command(&self, state: &mut State, id: u64, why: &str) {
        let Some(Entry::Command(command)) = state.entries.get_mut(&id) else {
            return;
        };
        if let Run::Job(job) = &command.run {
            self.supervisor.kill(job, why);
        }
        command.listed = false;
        let (name, open) = (command.name.clone(), command.open);
        state.cmd.remove(&name);
        if open == 0 {
            state.entries.remove(&id);
        }
    }

    pub fn rename(
        &self,
        parent: u64,
        name: &[u8],
        new_parent: u64,
        new_name: &[u8],
    ) -> FsResult<()> {
        let mut state = self.state.lock();
        if parent != names::CTL || new_parent != names::CTL {
            if parent == names::CTL || new_parent == names::CTL {
                return Err(Errno(libc::EXDEV));
            }
            return Err(Errno(libc::EPERM));
        }
        if name == b"index.md" || new_name == b"index.md" {
            return Err(Errno(libc::EPERM));
        }
        let old = std::str::from_utf8(name).map_err(|_| Errno(libc::ENOENT))?;
        let id = *state.ctl.get(old).ok_or(Errno(libc::ENOENT))?;
        let new = match names::check_name(new_name) {
            Ok(new) => new.to_string(),
            Err(BadName::Reserved) => return Err(Errno(libc::EPERM)),
            Err(BadName::Invalid) => return Err(Errno(libc::EINVAL)),
        };
        if new == old {
            return Ok(());
        }
        if state.ctl.contains_key(&new) || state.cmd.contains_key(&new) {
            return Err(Errno(libc::EEXIST));
        }
        state.ctl.remove(old);
        state.ctl.insert(new.clone(), id);
        if let Some(Entry::Draft(draft)) = state.entries.get_mut(&id) {
            draft.name = new;
            draft.modified = SystemTime::now();
        }
        Ok(())
    }

    // ----- time ---------------------------------------------------------------------

    /// Periodic work: start commands whose settle time is over, free abandoned drafts,
    /// and remove stopped commands nobody has looked at for their keep time.
    pub fn tick(&self) {
        let mut state = self.state.lock();
        let now = Instant::now();
        let wall = SystemTime::now();
        let mut due = Vec::new();
        let mut abandoned = Vec::new();
        let mut expired = Vec::new();
        for (id, entry) in &state.entries {
            match entry {
                Entry::Draft(draft) => {
                    if draft.start_at.is_some_and(|at| at <= now) {
                        due.push(*id);
                    } else if draft.start_at.is_none()
                        && draft.writers == 0
                        && now.duration_since(draft.touched) >= self.config.keep
                    {
                        abandoned.push(*id);
                    }
                }
                Entry::Command(command) => {
                    if !command.listed || command.pinned || command.open > 0 {
                        continue;
                    }
                    let stopped_at = match &command.run {
                        Run::Denied { .. } => Some(command.created),
                        Run::Job(job) => job.snapshot().finished_at,
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
            self.start_draft(&mut state, id);
        }
        for id in abandoned {
            if let Some(Entry::Draft(draft)) = state.entries.remove(&id) {
                state.ctl.remove(&draft.name);
            }
        }
        for id in expired {
            self.remove_command(&mut state, id, "");
        }
    }
}

fn stream_of(slot: Slot) -> Stream {
    match slot {
        Slot::Stderr => Stream::Stderr,
        Slot::Output | Slot::Follow => Stream::Output,
        _ => Stream::Stdout,
    }
}

fn slice_at(bytes: &[u8], offset: u64, size: usize) -> Vec<u8> {
    let start = (offset as usize).min(bytes.len());
    let end = start.saturating_add(size).min(bytes.len());
    bytes[start..end].to_vec()
}

/// The bytes of a small file rendered at open; None when it does not exist now.
fn render_file(name: &str, text: &[u8], run: &Run, slot: Slot) -> Option<Vec<u8>> {
    let line = |s: String| Some(format!("{s}\n").into_bytes());
    match (slot, run) {
        (Slot::Command, _) => Some(text.to_vec()),
        (Slot::Status, run) => line(status_word(run).to_string()),
        (Slot::Reason, Run::Denied { reason }) => line(reason.clone()),
        (_, Run::Denied { .. }) => None,
        (slot, Run::Job(job)) => {
            let snapshot = job.snapshot();
            match (slot, &snapshot.phase) {
                (Slot::Pid, Phase::Running { pid }) => line(pid.to_string()),
                (Slot::Exitcode, Phase::Stopped(exit)) => line(exit.code.to_string()),
                (Slot::Reason, _) => snapshot
                    .reason
                    .clone()
                    .map(|r| format!("{r}\n").into_bytes()),
                (Slot::Result, _) => {
                    Some(pages::result_json(name, text, &snapshot, status_word(run)))
                }
                _ => None,
            }
        }
    }
}
