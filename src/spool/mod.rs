//! The spool: every command's output and record, on disk in a private state directory,
//! so memory does not grow with output and finished commands survive a restart.
//!
//! ```text
//! <state dir>/                  0700, checked at start
//!   <name>.<stamp>/             one command (a reused name gets a new stamp)
//!     meta.json                 its record (what the caller saved; status, exit, reason),
//!                               with the marks added to it under `marks` and, when it is
//!                               short UTF-8, the command's text under `command`
//!     command                   the text as written, when it is not in the record
//!     stdout, stderr            bounded output (see `layout`)
//!     output.idx                counts, then the index of the interleaving (see `capture`)
//!   evicted                     how many finished commands were evicted, in decimal
//!   lock                        flock'd by the driver using the directory; its pid
//!   alive                       its modification time: the last moment a driver was seen
//!                               alive while commands ran (touched every checkpoint)
//! ```
//!
//! A [`Store`] is one command's directory; a [`Capture`] writes and reads its output.
//! The spool keeps the total under `--max-spool`: when a byte would pass it, finished
//! commands least recently read are evicted first (one with a file open counts as read
//! now, so it goes last); running ones never are. An evicted command's files go at once,
//! or, while a file of it is open, when the last one closes. Small writes
//! (records) and every removal are done by one worker thread, so nobody waits for them
//! while holding a lock. A new command's first files (`command` and its record) wait
//! until it is [`FIRST_WRITE_DELAY`] old or its output begins, so a short command writes
//! each once and one removed before then writes none. A file the worker cannot write (a
//! full disk) is kept and written once there may be room (see `Retries`). The spool
//! knows nothing of the tree or of processes.

mod budget;
mod capture;
mod dir;
mod error;
pub mod layout;
mod lock;
mod restore;
#[cfg(test)]
pub(crate) mod stall;
mod store;
mod worker;

pub use capture::{Capture, Extent, Held, Stream};
pub use dir::{default_dir, prepare_dir};
pub use error::SpoolError;
pub use lock::{StateLock, LOCK_FILE};
pub use restore::Restored;
use restore::*;
pub use store::Store;
use store::*;
use worker::*;

use capture::Header;
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const META_FILE: &str = "meta.json";
const COMMAND_FILE: &str = "command";
/// Where `meta.json` keeps the command's text, when it is there (see [`in_record`]).
const COMMAND_KEY: &str = "command";
/// The longest text kept in the record rather than in a file of its own: every later
/// form of the record repeats it.
const IN_RECORD_MAX: usize = 4096;
const EVICTED_FILE: &str = "evicted";
const ALIVE_FILE: &str = "alive";
/// Where `meta.json` keeps the marks (see [`Store::mark`]).
const MARKS_KEY: &str = "marks";
/// The reason of a command restored without its record (see [`Spool::restore`]).
pub const RECORD_LOST: &str = "its record was lost: it could not be written (a full disk?) \
                               before its driver stopped; its exit status is unknown";
/// The reason a command that was running when the driver stopped comes back with, and
/// the cause its cut-short output's notice names.
pub const DRIVER_STOPPED: &str = "the driver stopped while it ran";
/// Set in the record made for such a command: it ended, but how is not known.
pub const RECORD_LOST_KEY: &str = "record_lost";
/// The version of `meta.json` this driver writes and reads.
const META_VERSION: u64 = 1;
/// How long a new command's first files wait before the worker writes them, unless
/// they are needed sooner: most commands have ended by then, and their record is
/// written once, in its final form.
pub const FIRST_WRITE_DELAY: Duration = capture::CHECKPOINT;

/// Fixed at start.
#[derive(Debug, Clone)]
pub struct SpoolConfig {
    pub dir: PathBuf,
    /// Bytes kept per stream.
    pub max_output: u64,
    /// Bytes all commands' files may take together.
    pub max_spool: u64,
}

#[derive(Default)]
struct Registry {
    stores: HashMap<u64, Weak<Store>>,
    used: u64,
    next_id: u64,
    evicted: u64,
    /// How many reservations took this lock (see [`Spool::reserve`]).
    #[cfg(test)]
    tries: u64,
}

struct Shared {
    registry: Mutex<Registry>,
    /// Bumped, under the registry's lock, whenever room may have been freed: bytes
    /// given back, a store evicted, a command finished (it may be evicted now). A
    /// reservation refused for room is tried again only once this has moved.
    freed: AtomicU64,
    tasks: crossbeam_channel::Sender<Task>,
    /// New stores whose first files wait, with when they are due, in that order. Not a
    /// task: the worker looks at least every [`capture::CHECKPOINT`], so a store due no
    /// sooner needs no wake-up, and a start does not wake the worker for nothing.
    deferred: Mutex<VecDeque<(Instant, Weak<Store>)>>,
    log: fn(&str),
}

impl Shared {
    /// Notes that room may have been freed; called under the registry's lock.
    fn room_freed(&self) {
        self.freed.fetch_add(1, Ordering::SeqCst);
    }

    fn send(&self, task: Task) {
        // The worker outlives every sender but the last; a closed channel means the
        // process is ending and the task no longer matters.
        let _ = self.tasks.send(task);
    }
}

/// The spool of one mount.
pub struct Spool {
    config: SpoolConfig,
    shared: Arc<Shared>,
    /// The heartbeat the previous driver left, read before this one beats.
    last_alive: Option<SystemTime>,
    /// How long a new store's first files wait ([`FIRST_WRITE_DELAY`]).
    first_write_delay: Duration,
    worker: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Spool {
    /// Opens the spool in a directory [`prepare_dir`] accepted, and starts its worker.
    pub fn open(config: SpoolConfig, log: fn(&str)) -> std::io::Result<Arc<Spool>> {
        Spool::start(config, log, FIRST_WRITE_DELAY)
    }

    fn start(
        config: SpoolConfig,
        log: fn(&str),
        first_write_delay: Duration,
    ) -> std::io::Result<Arc<Spool>> {
        let (tasks, receiver) = crossbeam_channel::unbounded();
        let evicted = read_evicted(&config.dir, log);
        let last_alive = modified(&config.dir.join(ALIVE_FILE));
        let shared = Arc::new(Shared {
            registry: Mutex::new(Registry {
                evicted,
                ..Registry::default()
            }),
            freed: AtomicU64::new(0),
            tasks,
            deferred: Mutex::new(VecDeque::new()),
            log,
        });
        let registry = Arc::downgrade(&shared);
        let dir = config.dir.clone();
        let worker = std::thread::Builder::new()
            .name("tfs-spool".into())
            .spawn(move || work(receiver, registry, &dir, log))?;
        Ok(Arc::new(Spool {
            config,
            shared,
            last_alive,
            first_write_delay,
            worker: Mutex::new(Some(worker)),
        }))
    }

    /// Writes a line to the driver's log.
    pub fn log(&self, message: &str) {
        (self.shared.log)(message);
    }

    /// Bytes of output on disk, as counted against `--max-spool`.
    #[cfg(test)]
    pub fn used(&self) -> u64 {
        self.shared.registry.lock().used
    }

    /// Finished commands evicted to stay under `--max-spool`, by this driver and the
    /// ones before it on the same state directory.
    pub fn evictions(&self) -> u64 {
        self.shared.registry.lock().evicted
    }

    fn new_store(
        &self,
        dir: PathBuf,
        bytes: u64,
        finished: bool,
        last_read: u64,
        text: Option<Box<str>>,
    ) -> Arc<Store> {
        let mut registry = self.shared.registry.lock();
        registry.next_id += 1;
        let store = Arc::new(Store {
            id: registry.next_id,
            dir,
            shared: self.shared.clone(),
            bytes: AtomicU64::new(bytes),
            last_read: AtomicU64::new(last_read),
            finished: AtomicBool::new(finished),
            evicted: AtomicBool::new(false),
            removed: AtomicBool::new(false),
            readers: AtomicU64::new(0),
            refused: Mutex::new(None),
            record: Mutex::new(Record::default()),
            unwritten: Mutex::new(None),
            text,
        });
        registry.used += bytes;
        registry.stores.insert(store.id, Arc::downgrade(&store));
        store
    }

    /// A new directory for a command named `name` (nothing is written yet).
    fn fresh_dir(&self, name: &str) -> PathBuf {
        let stamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let unique = self.shared.registry.lock().next_id;
        self.config.dir.join(format!("{name}.{stamp:x}{unique:x}"))
    }

    /// Starts capturing the output of a command named `name` running `text`. The
    /// directory is made by the first byte of output, or by the worker when the first
    /// files are due; nothing here waits for the disk.
    pub fn capture(self: &Arc<Self>, name: &str, text: &[u8]) -> Capture {
        let store = self.unwritten_store(name, text, false);
        Capture::new(self.clone(), name, store, self.fresh_header())
    }

    /// Keeps the record of a command that never ran (refused): its text and `meta`.
    pub fn keep_record(self: &Arc<Self>, name: &str, text: &[u8], meta: Value) -> Arc<Store> {
        let store = self.unwritten_store(name, text, true);
        self.save(&store, &meta);
        store
    }

    /// A new store for `text` whose first files the worker writes when they are due.
    fn unwritten_store(&self, name: &str, text: &[u8], finished: bool) -> Arc<Store> {
        let store = self.new_store(self.fresh_dir(name), 0, finished, now_ms(), in_record(text));
        *store.unwritten.lock() = Some(text.to_vec());
        // The time is taken under the lock, so the list stays in the order it is due.
        self.shared.deferred.lock().push_back((
            Instant::now() + self.first_write_delay,
            Arc::downgrade(&store),
        ));
        if self.first_write_delay < capture::CHECKPOINT {
            // The worker may sleep past it.
            self.shared.send(Task::Look);
        }
        store
    }

    /// Asks the worker for the first files of `store` now, if they still wait: its
    /// output begins, and a directory of output is not left without its record.
    pub(crate) fn write_first_now(&self, store: &Arc<Store>) {
        if store.unwritten.lock().is_some() {
            self.shared.send(Task::First(store.clone()));
        }
    }

    /// Saves (replaces) a command's record; written by the worker.
    pub fn save(&self, store: &Arc<Store>, meta: &Value) {
        let queued = {
            let mut record = store.record.lock();
            record.saved = Some(meta.clone());
            std::mem::replace(&mut record.unwritten, true)
        };
        if !queued {
            self.shared.send(Task::Record(store.clone()));
        }
    }

    /// Records when `store` was last read, so a restart keeps its place in the queue
    /// for expiry and eviction.
    pub fn save_last_read(&self, store: &Arc<Store>) {
        self.shared
            .send(Task::Stamp(store.clone(), store.last_read()));
    }

    /// Records every command's last read (see [`Spool::save_last_read`]).
    pub fn save_last_reads(&self) {
        let stores: Vec<Arc<Store>> = {
            let registry = self.shared.registry.lock();
            registry.stores.values().filter_map(Weak::upgrade).collect()
        };
        for store in stores.iter().filter(|s| !s.is_gone()) {
            self.save_last_read(store);
        }
    }

    /// Waits until the worker has done everything asked of it so far, and written
    /// every first file that was waiting and every header a capture left for it (a
    /// command stopped at shutdown may not have ended its output yet).
    pub fn sync(&self) {
        let (done, wait) = crossbeam_channel::bounded(1);
        self.shared.send(Task::Barrier(done));
        let _ = wait.recv_timeout(Duration::from_secs(30));
    }

    /// Waits until the worker has done everything asked of it so far, without
    /// hurrying first files that wait.
    #[cfg(test)]
    fn settled(&self) {
        let (done, wait) = crossbeam_channel::bounded(1);
        self.shared.send(Task::Settled(done));
        let _ = wait.recv_timeout(Duration::from_secs(30));
    }

    /// The counts of a capture that has stored nothing, bounded by `--max-output`.
    fn fresh_header(&self) -> Header {
        let mut header = Header {
            capacity: self.config.max_output.max(2),
            out_line_ended: true,
            ..Header::default()
        };
        header.stdout.line_ended = true;
        header.stderr.line_ended = true;
        header
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        // The worker ends when every sender is gone; stores may still hold one, so
        // only wait for what was asked so far.
        self.sync();
        drop(self.worker.lock().take());
    }
}

#[cfg(test)]
mod tests;
