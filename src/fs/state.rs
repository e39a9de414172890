//! What the tree holds under its lock: drafts, commands, view inodes and open
//! handles, and [`State::resolve`], the one place that says what an inode is.

use super::fixed;
use super::names::{self, Dynamic, Slot};
use super::types::{Error, FsResult, Kind, Later};
use super::view::{Gaps, View};
use crate::policy::Directives;
use crate::spool::Store;
use crate::supervisor::{Job, SpawnRequest, Stream};
use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant, SystemTime};

pub(super) struct Draft {
    pub name: String,
    pub text: Vec<u8>,
    /// Bumped by every change of the text, so a check made outside the lock is
    /// applied only to the text it saw.
    pub version: u64,
    pub modified: SystemTime,
    pub touched: Instant,
    pub stage: Stage,
}

/// How long after a writer's flush its RELEASE is looked for by a reader of
/// `cmd/index.md` or of the listing of `cmd/` (the kernel sends it right after the
/// close, later only under load).
pub const RELEASE_WINDOW: Duration = Duration::from_millis(200);

/// Where a draft is in its life, with what that stage needs to know.
pub(super) enum Stage {
    /// Open to writers (`writers` may be 0: created, or closed with nothing in it).
    Writing {
        writers: u32,
        /// A writer closed a descriptor after its last write; the final RELEASE
        /// may follow.
        flushed: bool,
        /// Length of the text at the last check on a write.
        checked_len: usize,
        /// The version of the text that passed the whole check at a close, with how
        /// it starts (its `#terminalfs` lines, and whether a shell reads its input).
        passed: Option<(u64, Directives, bool)>,
    },
    /// A write was refused; the last close turns it into a denied command.
    Refused {
        writers: u32,
        refusal: Refusal,
        /// A writer closed a descriptor since; the final RELEASE may follow.
        flushed: bool,
    },
    /// The last writer closed; the whole text is being checked outside the lock.
    Deciding,
    /// Accepted: it starts at `start_at`, or when something looks for it under `cmd/`.
    /// Under a temporary name (see [`names::is_temporary`]) it has no start: it waits
    /// for a rename.
    Decided {
        start_at: Option<Instant>,
        /// The `#terminalfs` lines.
        directives: Directives,
        /// It asked for input and some program of it is a shell: what is written to
        /// its stdin is checked like a command.
        shell_input: bool,
    },
}

impl Draft {
    /// Where it stands, as `ctl/index.md` lists it.
    pub fn stage_text(&self) -> &'static str {
        match self.stage {
            Stage::Writing { writers: 0, .. } => {
                "empty and closed: a later write decides it (freed after --keep otherwise)"
            }
            Stage::Writing { .. } => "being written: decided when its last writer closes it",
            Stage::Refused { .. } => "refused: it becomes a denied command when closed",
            Stage::Deciding => "being checked",
            Stage::Decided {
                start_at: Some(_), ..
            } => "decided: it starts in a moment",
            Stage::Decided { start_at: None, .. } if self.name.starts_with('.') => {
                "hidden draft: runs once renamed to a command name (freed after --keep otherwise)"
            }
            Stage::Decided { start_at: None, .. } => {
                "temporary draft: runs once renamed without .tmp (freed after --keep otherwise)"
            }
        }
    }

    /// Whether writers may still open and change it.
    pub fn writable(&self) -> bool {
        matches!(self.stage, Stage::Writing { .. })
    }

    pub fn writers(&self) -> u32 {
        match self.stage {
            Stage::Writing { writers, .. } | Stage::Refused { writers, .. } => writers,
            Stage::Deciding | Stage::Decided { .. } => 0,
        }
    }

    /// Whether what it becomes is known in a moment, and of what that moment is: its
    /// decision is being made, or a writer closed it after its last write and the
    /// final RELEASE, which the kernel sends on its own time, may follow.
    pub fn settling(&self) -> Option<Later> {
        match self.stage {
            Stage::Deciding => Some(Later::Start),
            Stage::Writing {
                writers, flushed, ..
            }
            | Stage::Refused {
                writers, flushed, ..
            } if writers > 0 && flushed => Some(Later::Close),
            _ => None,
        }
    }

    /// The text was changed: checks made before no longer hold.
    pub fn changed(&mut self) {
        self.version += 1;
        self.modified = SystemTime::now();
        self.touched = Instant::now();
        if let Stage::Writing {
            flushed, passed, ..
        } = &mut self.stage
        {
            *flushed = false;
            *passed = None;
        }
    }
}

/// Why a command will not run, and which rule said so (if one did).
#[derive(Clone)]
pub(super) struct Refusal {
    pub rule: Option<String>,
    pub reason: String,
    /// The errno a write or close it fails gets: EPERM for what the deny list (or the
    /// text itself) refuses, EINVAL for a bad `#terminalfs` line.
    pub errno: i32,
}

impl Refusal {
    pub fn plain(reason: String) -> Refusal {
        Refusal {
            rule: None,
            reason,
            errno: libc::EPERM,
        }
    }
}

pub(super) enum Run {
    /// Refused; `store` keeps its record across restarts (when there is a spool).
    Denied {
        reason: String,
        store: Option<Arc<Store>>,
    },
    /// Decided and queued for its spawn, which happens outside the tree lock; lookups
    /// under it wait until the job exists.
    Starting,
    Job(Arc<Job>),
}

impl Run {
    /// The word `cmd/index.md` shows: `status`'s, or `starting` while the spawn is
    /// under way (nothing under `cmd/<name>/` is shown until it is done).
    pub fn index_word(&self) -> &'static str {
        match self {
            Run::Starting => "starting",
            run => run.status_word(),
        }
    }

    /// The word `status` shows.
    pub fn status_word(&self) -> &'static str {
        match self {
            Run::Denied { .. } => "denied",
            Run::Starting => "running",
            Run::Job(job) => {
                let life = job.life();
                match life.outcome() {
                    None if life.is_paused() => "paused",
                    None => "running",
                    Some(true) => "completed",
                    Some(false) => "error",
                }
            }
        }
    }
}

pub(super) struct Command {
    pub name: String,
    pub text: Arc<[u8]>,
    pub run: Run,
    pub created: SystemTime,
    /// Open handles on any of its files.
    pub open: u32,
    /// When the last handle closed (or when it was made).
    pub idle_since: SystemTime,
    /// A single file was removed: it no longer expires on its own.
    pub pinned: bool,
    /// Files removed one by one.
    pub hidden: u16,
    /// The process that last removed one of its files (see `slots::vanished`).
    pub remover: Option<u32>,
    /// Still listed under `cmd/` (false once removed, while readers finish).
    pub listed: bool,
    pub keep: Duration,
    /// The newest view entry made for each stream file.
    pub views: HashMap<Slot, u64>,
    /// For a shell reading a stdin pipe: everything written to it so far, checked as
    /// one script before each write is delivered.
    pub script: Option<Arc<Mutex<Vec<u8>>>>,
}

/// A fixed view of one output stream, made when a lookup found bytes dropped: its
/// own inode, whose size only grows, so `tail -f` on a handle opened through it keeps
/// following while a fresh lookup gets a fresh view (and notice).
pub(super) struct ViewEntry {
    pub command: u64,
    /// Weak: a view the kernel has not forgotten yet must not keep an expired
    /// command's output in memory; open handles hold their own reference.
    pub job: Weak<Job>,
    pub stream: Stream,
    pub view: View,
    /// Lookups the kernel has not forgotten yet.
    pub lookups: u64,
    pub created: SystemTime,
}

pub(super) enum Entry {
    Draft(Draft),
    Command(Command),
    View(ViewEntry),
}

pub(super) enum Body {
    /// Bytes rendered at open.
    Fixed(Vec<u8>),
    /// A page opened while a draft was settling, rendered at the first read after it
    /// settled: `echo … > ctl/x; cat cmd/index.md` shows x even when the kernel sends
    /// the writer's last RELEASE after the open.
    Settling(u64),
    /// A writer (or reader) of a draft; `append` for O_APPEND.
    Draft {
        write: bool,
        append: bool,
    },
    /// `stdout`, `stderr` or `output`.
    /// `gaps`: what this handle showed where bytes were dropped after its view was made.
    Growing {
        job: Arc<Job>,
        stream: Stream,
        view: View,
        gaps: Arc<Mutex<Gaps>>,
    },
    /// Always the `output` stream; the fields keep the shape of `Growing`.
    Follow {
        job: Arc<Job>,
        stream: Stream,
        view: View,
        gaps: Arc<Mutex<Gaps>>,
    },
    /// `answer` is what this handle said, once it said something, so a reader that
    /// reads again (at the end, or in small pieces) gets the rest of the same word.
    Wait {
        job: Arc<Job>,
        answer: Option<&'static [u8]>,
    },
    /// A writer of `kill`. `said` is what it has done so far: a close of one that
    /// said nothing (`: > kill`, `echo > kill`) stops the command.
    Kill {
        job: Arc<Job>,
        said: super::kill::Said,
    },
    /// A writer of `stdin`. `script` holds what a shell has been given so far, which
    /// each write is checked with; None when the program is not a shell. `refused` is
    /// set by this handle's first refused write, and refuses every later one.
    Input {
        job: Arc<Job>,
        script: Option<Arc<Mutex<Vec<u8>>>>,
        refused: Arc<std::sync::atomic::AtomicBool>,
    },
    /// A writer of `keys`.
    Keys {
        job: Arc<Job>,
    },
    Listing(Vec<(u64, Kind, String)>),
    /// A reader of `/events`.
    Events(super::events::Feed),
}

pub(super) struct Handle {
    /// The draft or command id this handle keeps alive, if any.
    pub owner: Option<u64>,
    pub body: Body,
}

#[derive(Default)]
pub(super) struct State {
    pub next_id: u64,
    pub next_fh: u64,
    pub entries: HashMap<u64, Entry>,
    pub ctl: BTreeMap<String, u64>,
    pub cmd: BTreeMap<String, u64>,
    pub handles: HashMap<u64, Handle>,
    /// The last few names refused at `ctl/` (time, name, why), for `ctl/index.md`.
    pub refusals: std::collections::VecDeque<(SystemTime, String, String)>,
    /// Commands waiting for their spawn, oldest first.
    pub starts: VecDeque<(u64, SpawnRequest)>,
    /// Commands whose job has a stdin pipe or a terminal, for the tick that sends what
    /// waits in them (pruned by it once they stop).
    pub inputs: BTreeSet<u64>,
}

/// What an inode is, found by [`State::resolve`].
pub(super) enum Node<'a> {
    /// A fixed directory and its fixed children.
    Dir(u64, fixed::Children),
    /// A fixed page, rendered when read.
    Page(u64),
    /// `/events`.
    Events,
    /// `ctl/<name>`.
    Draft(u64, &'a Draft),
    /// `cmd/<name>`.
    CommandDir(u64, &'a Command),
    /// A file under `cmd/<name>/` (whether it shows now is the slot table's call).
    CommandFile(u64, &'a Command, Slot),
    /// A fixed view of a stream, made by a lookup after bytes were dropped.
    View(u64, &'a ViewEntry),
}

/// The name as text and the id of `name` in `map` (`ctl/` or `cmd/`); ENOENT with
/// `missing` when it is not there.
pub(super) fn named<'n>(
    map: &BTreeMap<String, u64>,
    name: &'n [u8],
    missing: &'static str,
) -> FsResult<(&'n str, u64)> {
    std::str::from_utf8(name)
        .ok()
        .and_then(|text| Some((text, *map.get(text)?)))
        .ok_or_else(|| Error::new(libc::ENOENT, missing))
}

impl State {
    pub fn new() -> State {
        State {
            next_id: 1,
            next_fh: 1,
            ..State::default()
        }
    }

    /// What `ino` is now; ENOENT when it is nothing (any more).
    pub fn resolve(&self, ino: u64) -> FsResult<Node<'_>> {
        if let Some(children) = fixed::children(ino) {
            return Ok(Node::Dir(ino, children));
        }
        if fixed::is_page(ino) {
            return Ok(Node::Page(ino));
        }
        if ino == names::EVENTS {
            return Ok(Node::Events);
        }
        let missing = || Error::new(libc::ENOENT, "no such file or directory");
        match names::decode(ino).ok_or_else(missing)? {
            Dynamic::Entry(id) => match self.entries.get(&id).ok_or_else(missing)? {
                Entry::Draft(draft) => Ok(Node::Draft(id, draft)),
                Entry::Command(command) => Ok(Node::CommandDir(id, command)),
                // A view's inodes are its files'; its entry inode is never handed out.
                Entry::View(_) => Err(missing()),
            },
            Dynamic::File(id, slot) => match self.entries.get(&id).ok_or_else(missing)? {
                Entry::Command(command) => Ok(Node::CommandFile(id, command, slot)),
                Entry::View(view) => Ok(Node::View(id, view)),
                Entry::Draft(_) => Err(missing()),
            },
        }
    }

    pub fn take_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Whether any draft is settling (see [`Draft::settling`]), for a reader of
    /// `cmd/index.md` or of the listing of `cmd/`: one being decided, or one a writer flushed less than
    /// [`RELEASE_WINDOW`] ago (a writer that keeps a draft open after closing a copy of
    /// its descriptor holds up no page).
    pub fn drafts_settling(&self) -> bool {
        self.drafts().any(|draft| match draft.settling() {
            Some(Later::Start) => true,
            Some(Later::Close) => draft.touched.elapsed() < RELEASE_WINDOW,
            None => false,
        })
    }

    /// Whether a command is on its way: a draft open for writing, or one being decided
    /// or decided (an empty one that nobody writes is not).
    pub fn drafts_coming(&self) -> bool {
        self.drafts().any(|draft| {
            draft.writers() > 0
                || matches!(
                    draft.stage,
                    Stage::Deciding
                        | Stage::Decided {
                            start_at: Some(_),
                            ..
                        }
                )
        })
    }

    fn drafts(&self) -> impl Iterator<Item = &Draft> {
        self.ctl
            .values()
            .filter_map(|id| match self.entries.get(id) {
                Some(Entry::Draft(draft)) => Some(draft),
                _ => None,
            })
    }

    pub fn draft_mut(&mut self, id: u64) -> Option<&mut Draft> {
        match self.entries.get_mut(&id) {
            Some(Entry::Draft(draft)) => Some(draft),
            _ => None,
        }
    }

    pub fn command(&self, id: u64) -> Option<&Command> {
        match self.entries.get(&id) {
            Some(Entry::Command(command)) => Some(command),
            _ => None,
        }
    }

    pub fn command_mut(&mut self, id: u64) -> Option<&mut Command> {
        match self.entries.get_mut(&id) {
            Some(Entry::Command(command)) => Some(command),
            _ => None,
        }
    }

    /// Opens a handle; one owned by a command keeps it (and its output) alive.
    pub fn add_handle(&mut self, owner: Option<u64>, body: Body) -> u64 {
        let fh = self.next_fh;
        self.next_fh += 1;
        if let Some(command) = owner.and_then(|id| self.command_mut(id)) {
            command.open += 1;
            if let Run::Job(job) = &command.run {
                job.store().opened();
            }
        }
        self.handles.insert(fh, Handle { owner, body });
        fh
    }
}
