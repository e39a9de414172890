//! The `fuser` adapter: translates each FUSE request into a call on the [`Tree`] and
//! the answer back into a reply. It holds no state of its own except the parking lot.
//!
//! The parking lot keeps replies that cannot be answered yet: blocking reads (`wait`,
//! `follow`), writes to a command's input while it is full (for [`INPUT_HOLD`] at
//! most: the kernel holds the file's lock meanwhile), and lookups, reads of
//! `cmd/index.md` and listings of `cmd/` that race a writer's final close. No FUSE
//! worker ever waits; the reply is stored and the worker returns. A parked reply is
//! answered when what it waits for happens: news of a change of state (an exit, a
//! start, a release) is answered on the thread that brings it, so `wait` costs no
//! extra thread hop; output news goes to one thread (the "waker"), which also answers
//! replies whose deadline (`--wait-timeout`, or a shorter patience) passes and
//! those whose reading process has a signal pending (fuser does not pass
//! FUSE_INTERRUPT on, so without this a Ctrl-C'd reader would hang). Each parked reply
//! is owned by exactly one place at a time (the lot, or the thread that took it out),
//! so it is answered exactly once.
//!
//! A second thread (the "ticker") does the tree's slow work off the request threads:
//! the periodic tick (settle, keep, abandoned drafts), the spawns the tree queues, and
//! readying the next start while a draft is written (it opens a file of this mount, so
//! never on a thread that serves it).

use crate::fs::stderr::stderr_job;
use crate::fs::{
    Attr, Error as TreeError, Hooks, Kind, Later, Lookup, OpenMode, Read, Tree, Write, ANY_JOB,
};
use crate::panics::Site;
use crate::supervisor::News;
use crossbeam_channel::{Receiver, Sender};
use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, LockOwner,
    OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyWrite, Request, TimeOrNow, WriteFlags,
};
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::thread::JoinHandle;
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
/// How often the waker looks at deadlines and callers' signals, and the ticker at the
/// tree's clock.
const TICK: Duration = Duration::from_millis(50);
/// How often the ticker looks at every command (keep times, evictions) rather than at
/// drafts and inputs alone: a look that takes each job's lock in turn.
const SWEEP: Duration = Duration::from_secs(1);

/// News for the waker.
pub enum Wake {
    /// Job `id` gained output or changed state.
    Job(u64),
    /// A handle was released: parked lookups may now find their command.
    Released,
    /// Answer everything and stop.
    Shutdown,
}

enum Op {
    Read {
        fh: u64,
        offset: u64,
        size: u32,
        reply: ReplyData,
    },
    Lookup {
        parent: u64,
        name: OsString,
        reply: ReplyEntry,
    },
    /// A listing of `cmd/` opened while a draft settled.
    ReadDir {
        fh: u64,
        offset: u64,
        reply: ReplyDirectory,
    },
    /// A write to `stdin` or `keys` that found the input full; tried once more as held
    /// at the deadline (see [`INPUT_HOLD`]).
    Write {
        fh: u64,
        data: Vec<u8>,
        reply: ReplyWrite,
    },
}

struct Parked {
    /// The job whose news can answer this; None for lookups.
    job: Option<u64>,
    /// Thread id of the caller, for the signal check.
    pid: u32,
    deadline: Instant,
    op: Op,
    /// Counts this reply as waiting for `job`'s news until it is answered.
    _waiting: Waiting,
}

/// What a parked reply waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Awaited {
    /// A release or a decision (lookups that race a writer's close or a start).
    Release,
    /// News of this kind about job `id` ([`ANY_JOB`]: any job's).
    Job(u64, News),
}

/// How news reaches the waker. News that no parked reply waits for is not sent: a loud
/// command reports every chunk it writes, and waking the waker for each one (to retry
/// a `wait` that only an exit can answer) cost as much as a quarter of the capture.
#[derive(Clone)]
pub struct Wakes {
    sender: Sender<Wake>,
    /// Parked replies not answered yet, by what they wait for.
    waiting: Arc<Mutex<HashMap<Awaited, usize>>>,
    /// The tree and the lot, once built: news of a state change (an exit, a start, a
    /// release) is answered on the thread that brings it, not handed to the waker,
    /// which would cost a `wait` one more thread to be scheduled.
    here: Arc<OnceLock<(Weak<Tree>, Weak<Lot>)>>,
}

impl Wakes {
    /// The sending side, and the receiver the waker thread reads.
    pub fn new() -> (Wakes, Receiver<Wake>) {
        let (sender, receiver) = crossbeam_channel::unbounded();
        let wakes = Wakes {
            sender,
            waiting: Arc::new(Mutex::new(HashMap::new())),
            here: Arc::new(OnceLock::new()),
        };
        (wakes, receiver)
    }

    /// Job `id` has news. Output goes to the waker (the pump that reads a loud
    /// command must not also serve its readers); a change of state is answered here.
    pub fn job(&self, id: u64, news: News) {
        if !self.wanted(Some((id, news))) {
            return;
        }
        if news == News::Output || !self.answer_here(Some(id)) {
            let _ = self.sender.send(Wake::Job(id));
        }
    }

    /// A handle was released or a command appeared: parked lookups may find theirs.
    fn released(&self) {
        if self.wanted(None) && !self.answer_here(None) {
            let _ = self.sender.send(Wake::Released);
        }
    }

    /// Answers what job `id`'s news (None: a release) may answer, on this thread;
    /// false before the lot exists.
    fn answer_here(&self, news: Option<u64>) -> bool {
        let Some((tree, lot)) = self.here.get() else {
            return false;
        };
        let Some(lot) = lot.upgrade() else {
            return false;
        };
        // Once the lot has closed nothing is parked, and the tree is left alone.
        if lot.closed.load(Ordering::SeqCst) {
            return true;
        }
        let Some(tree) = tree.upgrade() else {
            return false;
        };
        lot.answer(&tree, &Look::news(news));
        true
    }

    /// Whether a parked reply waits for this news (None: a release). Output news
    /// answers readers of output; state news answers those too.
    fn wanted(&self, news: Option<(u64, News)>) -> bool {
        let waiting = self.waiting.lock();
        let any = |awaited: Awaited| waiting.get(&awaited).is_some_and(|n| *n > 0);
        let about = |id: u64| match news {
            Some((_, News::Output)) => any(Awaited::Job(id, News::Output)),
            _ => any(Awaited::Job(id, News::Output)) || any(Awaited::Job(id, News::State)),
        };
        // `/events` hears of every job and every decision.
        about(ANY_JOB)
            || match news {
                Some((id, _)) => about(id),
                None => any(Awaited::Release),
            }
    }

    fn send(&self, wake: Wake) {
        let _ = self.sender.send(wake);
    }

    /// Counts one reply as waiting for `awaited` until the returned value is dropped.
    /// Taken before the reply is parked, so news after it is always sent, and news
    /// before it is found by the look the parking itself asks for.
    fn waiting(&self, awaited: Awaited) -> Waiting {
        *self.waiting.lock().entry(awaited).or_insert(0) += 1;
        Waiting {
            waiting: self.waiting.clone(),
            awaited,
        }
    }
}

/// One parked reply's place in [`Wakes`]' count; it leaves when the reply is answered.
struct Waiting {
    waiting: Arc<Mutex<HashMap<Awaited, usize>>>,
    awaited: Awaited,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let mut waiting = self.waiting.lock();
        if let Some(count) = waiting.get_mut(&self.awaited) {
            *count -= 1;
            if *count == 0 {
                waiting.remove(&self.awaited);
            }
        }
    }
}

/// Replies waiting for news.
pub struct Lot {
    parked: Mutex<Vec<Parked>>,
    wakes: Wakes,
    closed: AtomicBool,
}

impl Lot {
    /// Parks a reply until what it awaits happens or `deadline` passes.
    fn park(&self, tree: &Tree, awaited: Awaited, pid: u32, deadline: Instant, op: Op) {
        let job = match awaited {
            Awaited::Job(id, _) => Some(id),
            Awaited::Release => None,
        };
        let parked = Parked {
            job,
            pid,
            deadline,
            op,
            _waiting: self.wakes.waiting(awaited),
        };
        {
            // `closed` is set under the same lock, so a reply is either in the lot
            // before the waker empties it for the last time, or answered here.
            let mut lot = self.parked.lock();
            if !self.closed.load(Ordering::SeqCst) {
                lot.push(parked);
                drop(lot);
                // The news may have come between the tree's answer and the push
                // above; one more look finds it.
                self.answer(tree, &Look::news(job));
                return;
            }
        }
        // Shutting down: nothing more will come; answer now.
        finish_timed_out(tree, parked);
    }

    /// Takes out every parked reply `look` concerns (its news, its deadline, a signal
    /// check), answers those that can be answered now, and parks the rest again. Any
    /// thread may look, never holding the lot's lock while it asks the tree.
    fn answer(&self, tree: &Tree, look: &Look) {
        let taken: Vec<Parked> = {
            let mut parked = self.parked.lock();
            let (take, keep): (Vec<Parked>, Vec<Parked>) = std::mem::take(&mut *parked)
                .into_iter()
                .partition(|p| look.concerns(p));
            *parked = keep;
            take
        };
        let mut back = Vec::new();
        for parked in taken {
            // A panic while one parked reply is answered fails that reply alone
            // (dropped, it answers EIO), as when a request is served.
            let answered = crate::panics::guard(
                || "answering a parked FUSE request".to_string(),
                || {
                    if crate::panics::broken() {
                        return fail_parked(parked.op, libc::EIO, STOPPING_BROKEN);
                    }
                    if parked.deadline <= look.now {
                        return finish_due(tree, parked);
                    }
                    match look.check_signals.then(|| caller(parked.pid)) {
                        Some(Caller::Signalled) => finish_interrupted(parked),
                        Some(Caller::Gone) => finish_aborted(parked),
                        Some(Caller::Waiting) | None => {
                            if let Some(parked) = retry(tree, parked) {
                                back.push(parked);
                            }
                        }
                    }
                },
            );
            let _ = answered;
        }
        if back.is_empty() {
            return;
        }
        let mut parked = self.parked.lock();
        if !self.closed.load(Ordering::SeqCst) {
            parked.extend(back);
            return;
        }
        // The lot closed while these were out: nothing more will come.
        drop(parked);
        for parked in back {
            finish_timed_out(tree, parked);
        }
    }

    /// Closes the lot as the driver stops, answering every parked reply as if its
    /// deadline had passed.
    fn close(&self, tree: &Tree) {
        let all: Vec<Parked> = {
            let mut parked = self.parked.lock();
            self.closed.store(true, Ordering::SeqCst);
            std::mem::take(&mut *parked)
        };
        for parked in all {
            finish_timed_out(tree, parked);
        }
    }

    /// Closes the lot when the session ended under it, answering every parked reply as
    /// aborted (see [`Caller::Gone`]): their callers are free already, and nothing
    /// will come for them. Returns how many there were.
    fn abort(&self) -> usize {
        let all: Vec<Parked> = {
            let mut parked = self.parked.lock();
            self.closed.store(true, Ordering::SeqCst);
            std::mem::take(&mut *parked)
        };
        let count = all.len();
        for parked in all {
            finish_aborted(parked);
        }
        count
    }
}

/// What one look at the lot is for.
struct Look {
    /// Jobs with news.
    jobs: HashSet<u64>,
    /// A release or a decision: parked lookups may find theirs.
    lookups: bool,
    now: Instant,
    /// Whether to ask each caller's signals (every 100 ms, by the waker).
    check_signals: bool,
}

impl Look {
    /// A look for job `id`'s news (None: a release's).
    fn news(news: Option<u64>) -> Look {
        Look {
            jobs: news.into_iter().collect(),
            lookups: news.is_none(),
            now: Instant::now(),
            check_signals: false,
        }
    }

    fn concerns(&self, parked: &Parked) -> bool {
        parked.deadline <= self.now
            || self.check_signals
            || match parked.job {
                // `/events`: any command's news, or any decision.
                Some(ANY_JOB) => !self.jobs.is_empty() || self.lookups,
                Some(id) => self.jobs.contains(&id),
                None => self.lookups,
            }
    }
}

pub struct Driver {
    tree: Arc<Tree>,
    lot: Arc<Lot>,
}

/// The adapter plus the thread that answers its parked replies.
pub struct Parts {
    pub driver: Driver,
    pub waker: Waker,
}

pub struct Waker {
    wakes: Wakes,
    tree: Arc<Tree>,
    lot: Arc<Lot>,
    thread: Option<JoinHandle<()>>,
    ticker: Sender<Tick>,
    ticker_thread: Option<JoinHandle<()>>,
}

/// News for the ticker.
enum Tick {
    /// The tree queued spawns.
    Start,
    Stop,
}

impl Waker {
    /// Stops the ticker, answers every parked reply (reads as if their deadline had
    /// passed) and stops the waker thread.
    pub fn shutdown(&mut self) {
        let _ = self.ticker.send(Tick::Stop);
        if let Some(thread) = self.ticker_thread.take() {
            let _ = thread.join();
        }
        self.wakes.send(Wake::Shutdown);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        // The waker closes the lot as it stops; one that a panic ended could not.
        self.lot.close(&self.tree);
    }
}

impl Drop for Waker {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Builds the adapter. `wakes`/`receiver` come from [`Wakes::new`]; the supervisor's
/// notify callback calls [`Wakes::job`].
pub fn build(tree: Arc<Tree>, wakes: Wakes, receiver: Receiver<Wake>) -> Parts {
    let lot = Arc::new(Lot {
        parked: Mutex::new(Vec::new()),
        wakes: wakes.clone(),
        closed: AtomicBool::new(false),
    });
    let _ = wakes
        .here
        .set((Arc::downgrade(&tree), Arc::downgrade(&lot)));
    let (ticker, ticks) = crossbeam_channel::unbounded();
    let changed = wakes.clone();
    let start = ticker.clone();
    tree.set_hooks(Hooks {
        changed: Box::new(move || changed.released()),
        start_wanted: Box::new(move || {
            let _ = start.send(Tick::Start);
        }),
    });
    let thread_tree = tree.clone();
    let thread_lot = lot.clone();
    let thread = std::thread::Builder::new()
        .name("tfs-waker".into())
        .spawn(move || run_waker(thread_tree, thread_lot, receiver))
        .expect("the waker thread can be spawned at start-up");
    let ticker_tree = tree.clone();
    let ticker_thread = std::thread::Builder::new()
        .name("tfs-ticker".into())
        .spawn(move || run_ticker(&ticker_tree, &ticks))
        .expect("the ticker thread can be spawned at start-up");
    Parts {
        driver: Driver {
            tree: tree.clone(),
            lot: lot.clone(),
        },
        waker: Waker {
            wakes,
            tree,
            lot,
            thread: Some(thread),
            ticker,
            ticker_thread: Some(ticker_thread),
        },
    }
}

/// The tree's clock and its queued spawns, off the request and waker threads.
fn run_ticker(tree: &Tree, ticks: &Receiver<Tick>) {
    let mut last_tick = Instant::now();
    let mut last_sweep = last_tick;
    let mut more = false;
    loop {
        // Spawns left by a long queue go on at once, after the clock's tick.
        let wait = if more { Duration::ZERO } else { TICK };
        match ticks.recv_timeout(wait) {
            Ok(Tick::Stop) => return,
            Ok(Tick::Start) | Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return,
        }
        crate::panics::thread_turn("ticker");
        if crate::panics::broken() {
            // Nothing more is started or ticked from a half-updated tree.
            continue;
        }
        // Starts asked for go first: a tick may take a while with many commands.
        more = tree.start_until(Some(last_tick + TICK));
        if last_tick.elapsed() >= TICK {
            last_tick = Instant::now();
            if last_sweep.elapsed() >= SWEEP {
                last_sweep = last_tick;
                tree.tick();
            } else {
                tree.tick_drafts();
            }
        }
    }
}

fn run_waker(tree: Arc<Tree>, lot: Arc<Lot>, receiver: Receiver<Wake>) {
    let mut last_signal_check = Instant::now();
    loop {
        let mut jobs = HashSet::new();
        let mut lookups = false;
        let mut shutdown = false;
        crate::panics::thread_turn("waker");
        let first = receiver.recv_timeout(TICK);
        for wake in first.into_iter().chain(receiver.try_iter()) {
            match wake {
                Wake::Job(id) => {
                    jobs.insert(id);
                }
                Wake::Released => lookups = true,
                Wake::Shutdown => shutdown = true,
            }
        }
        if shutdown {
            return lot.close(&tree);
        }
        let now = Instant::now();
        let check_signals = now.duration_since(last_signal_check) >= Duration::from_millis(100);
        if check_signals {
            last_signal_check = now;
        }
        lot.answer(
            &tree,
            &Look {
                jobs,
                lookups,
                now,
                check_signals,
            },
        );
    }
}

/// Asks the tree again; gives the entry back when it still has to wait.
fn retry(tree: &Tree, parked: Parked) -> Option<Parked> {
    match parked.op {
        Op::Read {
            fh,
            offset,
            size,
            reply,
        } => match tree.read(fh, offset, size) {
            Ok(Read::Data(bytes)) => {
                reply.data(&bytes);
                None
            }
            Ok(Read::Pending { .. } | Read::Later) => Some(Parked {
                op: Op::Read {
                    fh,
                    offset,
                    size,
                    reply,
                },
                ..parked
            }),
            Err(e) => {
                reply.error(failed("read", format_args!("fh {fh}"), e));
                None
            }
        },
        Op::Lookup {
            parent,
            name,
            reply,
        } => match tree.lookup(parent, name.as_bytes()) {
            Ok(Lookup::Found(attr)) => {
                reply_entry(reply, &attr, owner(tree));
                None
            }
            Ok(Lookup::Later(_)) => Some(Parked {
                op: Op::Lookup {
                    parent,
                    name,
                    reply,
                },
                ..parked
            }),
            Err(e) => {
                reply.error(failed("lookup", format_args!("{parent}/{name:?}"), e));
                None
            }
        },
        Op::Write { fh, data, reply } => match tree.write(fh, 0, &data) {
            Ok(Write::Done(n)) => {
                reply.written(n);
                None
            }
            Ok(Write::Pending { .. }) => Some(Parked {
                op: Op::Write { fh, data, reply },
                ..parked
            }),
            Err(e) => {
                reply.error(failed("write", format_args!("fh {fh}"), e));
                None
            }
        },
        Op::ReadDir { fh, offset, reply } => match tree.readdir(fh, offset) {
            Ok(Some(entries)) => {
                reply_listing(reply, offset, entries);
                None
            }
            Ok(None) => Some(Parked {
                op: Op::ReadDir { fh, offset, reply },
                ..parked
            }),
            Err(e) => {
                reply.error(failed("readdir", format_args!("fh {fh}"), e));
                None
            }
        },
    }
}

/// The uid and gid every file shows: the user who mounted the tree.
fn owner(tree: &Tree) -> (u32, u32) {
    (tree.config().uid, tree.config().gid)
}

/// Answers a parked reply whose deadline has passed: a held write is tried once more
/// (taken in part, or refused); anything else as timed out.
fn finish_due(tree: &Tree, parked: Parked) {
    match parked.op {
        Op::Write { fh, data, reply } => match tree.write_held(fh, &data) {
            Ok(n) => reply.written(n),
            Err(e) => reply.error(failed("write", format_args!("fh {fh}"), e)),
        },
        _ => finish_timed_out(tree, parked),
    }
}

/// Why a parked reply is failed once a panic has left shared state half-updated.
const STOPPING_BROKEN: &str = "the driver is stopping after an internal error";

/// Answers a parked reply whose wait is over without an answer: its deadline passed,
/// or the driver is stopping (after a panic that left the tree half-updated, with EIO
/// and without asking the tree).
fn finish_timed_out(tree: &Tree, parked: Parked) {
    if crate::panics::broken() {
        return fail_parked(parked.op, libc::EIO, STOPPING_BROKEN);
    }
    match parked.op {
        Op::Read {
            fh,
            offset,
            size,
            reply,
        } => reply.data(&tree.read_timed_out(fh, offset, size)),
        Op::Write { fh, reply, .. } => reply.error(refused(
            "write",
            format_args!("fh {fh}"),
            libc::EAGAIN,
            "the command took no input before the wait ran out; nothing was written",
        )),
        Op::ReadDir { fh, offset, reply } => match tree.readdir_timed_out(fh, offset) {
            Ok(entries) => reply_listing(reply, offset, entries),
            Err(e) => reply.error(failed("readdir", format_args!("fh {fh}"), e)),
        },
        op => fail_parked(
            op,
            libc::ENOENT,
            "it did not appear before the wait ran out",
        ),
    }
}

/// Answers a parked request whose caller an aborted connection freed: the caller
/// already had its error, so the answer goes nowhere, but the log says why.
fn finish_aborted(parked: Parked) {
    fail_parked(
        parked.op,
        libc::ECONNABORTED,
        "the mount was aborted by force; its caller already got an error",
    );
}

fn finish_interrupted(parked: Parked) {
    fail_parked(
        parked.op,
        libc::EINTR,
        "the caller was interrupted by a signal",
    );
}

/// Answers a parked request with an error, logged like any other.
fn fail_parked(op: Op, errno: i32, reason: &str) {
    match op {
        Op::Read { fh, reply, .. } => {
            reply.error(refused("read", format_args!("fh {fh}"), errno, reason))
        }
        Op::Lookup {
            parent,
            name,
            reply,
        } => reply.error(refused(
            "lookup",
            format_args!("{parent}/{name:?}"),
            errno,
            reason,
        )),
        Op::Write { fh, reply, .. } => {
            reply.error(refused("write", format_args!("fh {fh}"), errno, reason))
        }
        Op::ReadDir { fh, reply, .. } => {
            reply.error(refused("readdir", format_args!("fh {fh}"), errno, reason))
        }
    }
}

/// What became of the thread that made a parked request (only Linux shows it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
enum Caller {
    /// Still waiting for the answer (or out of the driver's sight).
    Waiting,
    /// It has a signal pending that it does not block: the kernel would have sent
    /// FUSE_INTERRUPT, which fuser does not pass on.
    Signalled,
    /// It is gone. A caller whose request the driver has read waits for the answer
    /// even when killed; only an aborted connection (`--unmount --force`, an `abort`
    /// file written) frees it before then.
    Gone,
}

#[cfg(target_os = "linux")]
fn caller(pid: u32) -> Caller {
    if pid == 0 {
        // A reader in a pid namespace the driver cannot see: nothing to look at.
        return Caller::Waiting;
    }
    // Only a caller whose entry is gone is gone: a read that fails otherwise (no
    // descriptor left, a /proc that hides it) says nothing, and it is left waiting.
    let status = match std::fs::read_to_string(format!("/proc/{pid}/status")) {
        Ok(status) => status,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Caller::Gone,
        Err(_) => return Caller::Waiting,
    };
    let field = |key: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(key))
            .and_then(|value| u64::from_str_radix(value.trim(), 16).ok())
            .unwrap_or(0)
    };
    if (field("SigPnd:") | field("ShdPnd:")) & !field("SigBlk:") != 0 {
        Caller::Signalled
    } else {
        Caller::Waiting
    }
}

#[cfg(not(target_os = "linux"))]
fn caller(_pid: u32) -> Caller {
    Caller::Waiting
}

/// The errno for a failed request, logged once (in verbose mode) with the operation,
/// what it was on, and the tree's reason.
fn failed(operation: &str, target: std::fmt::Arguments, error: TreeError) -> Errno {
    let line = || format!("{operation} {target}: {error}");
    if error.loud {
        crate::log::info(&line());
    } else {
        crate::log::debug(line);
    }
    Errno::from_i32(error.errno)
}

/// An errno the adapter itself answers with, logged the same way.
fn refused(operation: &str, target: std::fmt::Arguments, errno: i32, reason: &str) -> Errno {
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
fn reply_listing(mut reply: ReplyDirectory, offset: u64, entries: Vec<(u64, Kind, String)>) {
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

fn reply_entry(reply: ReplyEntry, attr: &Attr, owner: (u32, u32)) {
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
                    Op::Lookup {
                        parent: parent.0,
                        name: name.to_os_string(),
                        reply,
                    },
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
                Op::Read {
                    fh: fh.0,
                    offset,
                    size,
                    reply,
                },
            ),
            Ok(Read::Later) => self.lot.park(
                &self.tree,
                Awaited::Release,
                req.pid(),
                Instant::now() + PAGE_PATIENCE,
                Op::Read {
                    fh: fh.0,
                    offset,
                    size,
                    reply,
                },
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
                    Op::Write {
                        fh: fh.0,
                        data: data.to_vec(),
                        reply,
                    },
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
                Op::ReadDir {
                    fh: fh.0,
                    offset,
                    reply,
                },
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
