//! The parking lot: replies that cannot be answered yet, and the thread (the
//! "waker") that answers them when the tree cannot be asked on the thread that brings
//! the news.
//!
//! It keeps blocking reads (`wait`, `follow`, `/events`), writes to a command's input
//! while it is full (for [`super::INPUT_HOLD`] at most: the kernel holds the file's
//! lock meanwhile), and lookups, reads of `cmd/index.md` and listings of `cmd/` that
//! race a writer's final close. No FUSE worker ever waits; the reply is stored and the
//! worker returns. A parked reply is answered when what it waits for happens: news of
//! a change of state (an exit, a start, a release) is answered on the thread that
//! brings it, so `wait` costs no extra thread hop; output news goes to the waker, which
//! also answers replies whose deadline (`--wait-timeout`, or a shorter patience)
//! passes and those whose caller has a signal pending or is gone (see
//! [`super::caller`]). A reply is asked of the tree again only on news of its command
//! (or of a release); a caller found still waiting leaves it as it was. Each parked
//! reply is owned by exactly one place at a time (the lot, or the thread that took it
//! out), so it is answered exactly once.

use super::caller::{caller, Caller};
use super::parked::Op;
use crate::fs::{News, Tree, ANY_JOB};
use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the waker looks at deadlines.
const TICK: Duration = Duration::from_millis(50);
/// How often it asks about callers' signals.
const SIGNAL_CHECK: Duration = Duration::from_millis(100);

/// Why a parked reply is failed once a panic has left shared state half-updated.
const STOPPING_BROKEN: &str = "the driver is stopping after an internal error";
/// Why the reply of a caller with a signal pending is EINTR.
const INTERRUPTED: &str = "the caller was interrupted by a signal";
/// Why the reply of a caller an aborted connection freed is ECONNABORTED: the caller
/// already had its error, so the answer goes nowhere, but the log says why.
const ABORTED: &str = "the mount was aborted by force; its caller already got an error";

/// News for the waker.
pub enum Wake {
    /// Job `id` gained output or changed state.
    Job(u64),
    /// A handle was released: parked lookups may now find their command.
    Released,
    /// Answer everything and stop.
    Shutdown,
}

/// One parked reply: what it waits for, whose it is, until when.
struct Parked {
    /// The job whose news can answer this; None for lookups.
    job: Option<u64>,
    /// Thread id of the caller, for the signal check.
    pid: u32,
    deadline: Instant,
    op: Box<dyn Op>,
    /// Counts this reply as waiting for `job`'s news until it is answered.
    _waiting: Waiting,
}

/// What a parked reply waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Awaited {
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
    pub fn released(&self) {
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
    pub(super) wakes: Wakes,
    closed: AtomicBool,
    /// How many looks have brought news: see [`Lot::answer`].
    news: AtomicU64,
}

impl Lot {
    /// Parks a reply until what it awaits happens or `deadline` passes.
    pub(super) fn park(
        &self,
        tree: &Tree,
        awaited: Awaited,
        pid: u32,
        deadline: Instant,
        op: Box<dyn Op>,
    ) {
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
        finish(tree, parked);
    }

    /// Takes out every parked reply `look` concerns (its news, its deadline, a signal
    /// check), answers those that can be answered now, and parks the rest again. Any
    /// thread may look, never holding the lot's lock while it asks the tree.
    fn answer(&self, tree: &Tree, look: &Look) {
        if look.brings_news() {
            // Counted before anything is taken out: a look whose replies are out
            // meanwhile sees the count move and asks the tree again.
            self.news.fetch_add(1, Ordering::SeqCst);
        }
        let mut taken: Vec<Parked> = {
            let mut parked = self.parked.lock();
            let (take, keep): (Vec<Parked>, Vec<Parked>) = std::mem::take(&mut *parked)
                .into_iter()
                .partition(|p| look.concerns(p));
            *parked = keep;
            take
        };
        let mut look = look;
        let again = Look::everything(look.now);
        loop {
            let seen = self.news.load(Ordering::SeqCst);
            let back = self.answer_taken(tree, look, taken);
            if back.is_empty() {
                return;
            }
            let mut parked = self.parked.lock();
            if self.closed.load(Ordering::SeqCst) {
                // The lot closed while these were out: nothing more will come.
                drop(parked);
                for parked in back {
                    finish(tree, parked);
                }
                return;
            }
            if self.news.load(Ordering::SeqCst) == seen {
                parked.extend(back);
                return;
            }
            // News came while these were out of the lot, where it could not find
            // them: each is asked of the tree once more.
            drop(parked);
            taken = back;
            look = &again;
        }
    }

    /// Answers what can be answered of `taken` as `look` says; returns the rest.
    fn answer_taken(&self, tree: &Tree, look: &Look, taken: Vec<Parked>) -> Vec<Parked> {
        let mut back = Vec::new();
        for parked in taken {
            // A panic while one parked reply is answered fails that reply alone
            // (dropped, it answers EIO), as when a request is served.
            let _ = crate::panics::guard(
                || "answering a parked FUSE request".to_string(),
                || {
                    if crate::panics::broken() {
                        return parked.op.fail(libc::EIO, STOPPING_BROKEN);
                    }
                    if parked.deadline <= look.now {
                        return parked.op.due(tree);
                    }
                    match look.check_signals.then(|| caller(parked.pid)) {
                        Some(Caller::Signalled) => parked.op.fail(libc::EINTR, INTERRUPTED),
                        Some(Caller::Gone) => parked.op.fail(libc::ECONNABORTED, ABORTED),
                        // Only news of its command (or of a release) can change its
                        // answer: a caller that is merely still there goes back as
                        // it was, not asked of the tree again.
                        _ if !look.has_news_for(&parked) => back.push(parked),
                        _ => {
                            let Parked {
                                job,
                                pid,
                                deadline,
                                op,
                                _waiting,
                            } = parked;
                            if let Some(op) = op.retry(tree) {
                                back.push(Parked {
                                    job,
                                    pid,
                                    deadline,
                                    op,
                                    _waiting,
                                });
                            }
                        }
                    }
                },
            );
        }
        back
    }

    /// Closes the lot as the driver stops, answering every parked reply as if its
    /// deadline had passed.
    pub(super) fn close(&self, tree: &Tree) {
        let all: Vec<Parked> = {
            let mut parked = self.parked.lock();
            self.closed.store(true, Ordering::SeqCst);
            std::mem::take(&mut *parked)
        };
        for parked in all {
            finish(tree, parked);
        }
    }

    /// Closes the lot when the session ended under it, answering every parked reply as
    /// aborted (see [`Caller::Gone`](super::caller::Caller::Gone)): their callers are free already, and nothing
    /// will come for them. Returns how many there were.
    pub(super) fn abort(&self) -> usize {
        let all: Vec<Parked> = {
            let mut parked = self.parked.lock();
            self.closed.store(true, Ordering::SeqCst);
            std::mem::take(&mut *parked)
        };
        let count = all.len();
        for parked in all {
            parked.op.fail(libc::ECONNABORTED, ABORTED);
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
    /// Every reply is to be asked of the tree again.
    all: bool,
}

impl Look {
    /// A look for job `id`'s news (None: a release's).
    fn news(news: Option<u64>) -> Look {
        Look {
            jobs: news.into_iter().collect(),
            lookups: news.is_none(),
            now: Instant::now(),
            check_signals: false,
            all: false,
        }
    }

    /// A look that asks the tree again for every reply it is given.
    fn everything(now: Instant) -> Look {
        Look {
            jobs: HashSet::new(),
            lookups: false,
            now,
            check_signals: false,
            all: true,
        }
    }

    /// Whether this look brings news of a job or a release.
    fn brings_news(&self) -> bool {
        !self.jobs.is_empty() || self.lookups
    }

    fn concerns(&self, parked: &Parked) -> bool {
        parked.deadline <= self.now || self.check_signals || self.has_news_for(parked)
    }

    /// Whether this look brings news that may change `parked`'s answer.
    fn has_news_for(&self, parked: &Parked) -> bool {
        self.all
            || match parked.job {
                // `/events`: any command's news, or any decision.
                Some(ANY_JOB) => !self.jobs.is_empty() || self.lookups,
                Some(id) => self.jobs.contains(&id),
                None => self.lookups,
            }
    }
}

/// The waker thread; [`Waker::shutdown`] answers every parked reply and stops it.
pub struct Waker {
    wakes: Wakes,
    tree: Arc<Tree>,
    lot: Arc<Lot>,
    thread: Option<JoinHandle<()>>,
}

impl Waker {
    /// Starts the waker for `lot` on `tree`, reading the news `receiver` brings.
    pub(super) fn start(tree: Arc<Tree>, lot: Arc<Lot>, receiver: Receiver<Wake>) -> Waker {
        let (thread_tree, thread_lot) = (tree.clone(), lot.clone());
        let thread = std::thread::Builder::new()
            .name("tfs-waker".into())
            .spawn(move || run(thread_tree, thread_lot, receiver))
            .expect("the waker thread can be spawned at start-up");
        Waker {
            wakes: lot.wakes.clone(),
            tree,
            lot,
            thread: Some(thread),
        }
    }

    /// Answers every parked reply (reads as if their deadline had passed) and stops
    /// the waker thread.
    pub fn shutdown(&mut self) {
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

impl Lot {
    /// An empty lot that counts its replies in `wakes`.
    pub(super) fn new(wakes: Wakes) -> Lot {
        Lot {
            parked: Mutex::new(Vec::new()),
            wakes,
            closed: AtomicBool::new(false),
            news: AtomicU64::new(0),
        }
    }

    /// Lets `wakes` answer state news on the thread that brings it, once the tree and
    /// this lot exist.
    pub(super) fn listen(self: &Arc<Self>, tree: &Arc<Tree>) {
        let _ = self
            .wakes
            .here
            .set((Arc::downgrade(tree), Arc::downgrade(self)));
    }
}

/// A parked reply whose wait is over without an answer (the driver is stopping):
/// after a panic that left the tree half-updated, EIO without asking the tree.
fn finish(tree: &Tree, parked: Parked) {
    if crate::panics::broken() {
        return parked.op.fail(libc::EIO, STOPPING_BROKEN);
    }
    parked.op.time_out(tree);
}

fn run(tree: Arc<Tree>, lot: Arc<Lot>, receiver: Receiver<Wake>) {
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
        let check_signals = now.duration_since(last_signal_check) >= SIGNAL_CHECK;
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
                all: false,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::{Spawner, TreeConfig};
    use crate::supervisor::{Job, SpawnRequest};
    use std::path::Path;
    use std::sync::atomic::AtomicUsize;

    /// The lot's tests start nothing.
    struct NoSpawner;

    impl Spawner for NoSpawner {
        fn spawn(&self, _request: SpawnRequest) -> Arc<Job> {
            unreachable!("the lot's tests start no command")
        }
        fn kill(&self, _job: &Arc<Job>, _why: &str) {}
        fn signal(&self, _job: &Arc<Job>, _signal: i32) {}
        fn shell(&self) -> &Path {
            Path::new("/bin/sh")
        }
        fn cwd(&self) -> &Path {
            Path::new("/")
        }
    }

    fn tree(dir: &Path) -> Arc<Tree> {
        let settings = dir.join("settings.json");
        std::fs::write(&settings, "{}").expect("settings");
        let policy = crate::policy::Policy::load(&settings, false).expect("load");
        Arc::new(Tree::new(
            TreeConfig {
                mount: None,
                settle: Duration::from_millis(50),
                keep: Duration::from_secs(60),
                wait_timeout: Duration::from_secs(60),
                timeout: None,
                uid: 0,
                gid: 0,
            },
            Arc::new(NoSpawner),
            Arc::new(policy),
            None,
        ))
    }

    /// A parked operation that counts how often the tree is asked and how it ends.
    struct Counting {
        asked: Arc<AtomicUsize>,
        ended: Arc<AtomicUsize>,
    }

    impl Op for Counting {
        fn retry(self: Box<Self>, _tree: &Tree) -> Option<Box<dyn Op>> {
            self.asked.fetch_add(1, Ordering::SeqCst);
            Some(self)
        }
        fn time_out(self: Box<Self>, _tree: &Tree) {
            self.ended.fetch_add(1, Ordering::SeqCst);
        }
        fn fail(self: Box<Self>, _errno: i32, _reason: &str) {
            self.ended.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_reply_is_asked_again_only_on_news_of_its_command_and_answered_once() {
        let dir = tempfile::tempdir().expect("a directory");
        let tree = tree(dir.path());
        let (wakes, _receiver) = Wakes::new();
        let lot = Arc::new(Lot::new(wakes));
        let (asked, ended) = (Arc::default(), Arc::default());
        let counting = Counting {
            asked: Arc::clone(&asked),
            ended: Arc::clone(&ended),
        };
        // The caller is this process, alive and without a signal pending.
        let caller = std::process::id();
        let deadline = Instant::now() + Duration::from_secs(600);
        let awaited = Awaited::Job(7, News::State);
        lot.park(&tree, awaited, caller, deadline, Box::new(counting));
        // Parking looks once for news that came before it.
        let parked = asked.load(Ordering::SeqCst);
        assert_eq!(parked, 1);
        let signal_check = || Look {
            jobs: HashSet::new(),
            lookups: false,
            now: Instant::now(),
            check_signals: true,
            all: false,
        };
        for _ in 0..5 {
            lot.answer(&tree, &signal_check());
        }
        assert_eq!(asked.load(Ordering::SeqCst), parked, "a signal check asked");
        lot.answer(&tree, &Look::news(Some(8)));
        lot.answer(&tree, &Look::news(None));
        assert_eq!(asked.load(Ordering::SeqCst), parked, "other news asked");
        lot.answer(&tree, &Look::news(Some(7)));
        assert_eq!(asked.load(Ordering::SeqCst), parked + 1);
        assert_eq!(ended.load(Ordering::SeqCst), 0);
        lot.close(&tree);
        lot.close(&tree);
        assert_eq!(ended.load(Ordering::SeqCst), 1, "answered once");
    }
}
