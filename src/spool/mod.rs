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

mod capture;
pub mod layout;
mod lock;

pub use capture::{Capture, Extent, Held, Stream};
pub use lock::StateLock;

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

/// The default state directory of a mount: `$XDG_STATE_HOME/terminalfs/<tag of path>`.
pub fn default_dir(mount: &Path) -> PathBuf {
    crate::policy::settings::xdg_dir("XDG_STATE_HOME", ".local/state")
        .join("terminalfs")
        .join(crate::supervisor::cgroup::tag_for(mount))
}

/// Creates `dir` (0700) if missing, refuses one that another user owns, that others
/// may read or enter, that cannot be written or that another driver uses, and takes
/// its lock (see [`lock`]) before anything in it is read or written. The error is a
/// sentence naming it.
pub fn prepare_dir(dir: &Path) -> Result<StateLock, String> {
    let shown = dir.display();
    if let Some(parent) = dir.parent() {
        if !parent.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .map_err(|e| format!("cannot create the state directory {shown}: {e}"))?;
        }
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("cannot create the state directory {shown}: {e}")),
    }
    let meta = std::fs::metadata(dir)
        .map_err(|e| format!("cannot read the state directory {shown}: {e}"))?;
    if !meta.is_dir() {
        return Err(format!("the state directory {shown} is not a directory"));
    }
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(format!(
            "the state directory {shown} belongs to user {} (this driver runs as {me}); \
             give it its own directory",
            meta.uid()
        ));
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "the state directory {shown} can be read by others (mode {mode:o}); \
             run `chmod 700 {shown}` or choose another --state-dir"
        ));
    }
    let lock = lock::lock(dir)?;
    let probe = dir.join(format!(".probe-{}", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&probe)
        .map_err(|e| format!("cannot write in the state directory {shown}: {e}"))?;
    let _ = std::fs::remove_file(&probe);
    Ok(lock)
}

/// One command's directory and what the spool tracks of it.
pub struct Store {
    id: u64,
    dir: PathBuf,
    shared: Arc<Shared>,
    /// Bytes of output files counted against `--max-spool`.
    bytes: AtomicU64,
    /// Last read, in milliseconds since the epoch (orders eviction).
    last_read: AtomicU64,
    /// No more output will come; it may be evicted.
    finished: AtomicBool,
    /// Its files were deleted to make room.
    evicted: AtomicBool,
    /// Its command was removed: the files go when the last user lets go.
    removed: AtomicBool,
    /// Files of its command open now (see [`Store::opened`]).
    readers: AtomicU64,
    /// Its last reservation refused for room, while no later one fitted: the fewest
    /// bytes it would have taken, and [`Shared::freed`] when it was refused (see
    /// [`Spool::reserve`]).
    refused: Mutex<Option<(u64, u64)>>,
    /// A header newer than the one on disk, for the worker to write within a
    /// checkpoint interval when no more output comes to write it. Whoever writes a
    /// header holds this lock, so an older one never lands after a newer one.
    pending: Mutex<Option<[u8; capture::HEADER as usize]>>,
    /// Its record until the worker writes it, and its marks. The worker writes the
    /// newest form, so a record replaced before the worker came to it is never written.
    record: Mutex<Record>,
    /// The command's text while none of the store's files is written: the worker
    /// writes it with the newest record once the store is due or needed (see
    /// [`write_first`]). Only the worker takes it (and the store's drop).
    unwritten: Mutex<Option<Vec<u8>>>,
    /// The command's text when every form of the record carries it (see [`in_record`]);
    /// then no `command` file is written beside a record.
    text: Option<Box<str>>,
}

/// The text of a command as its record carries it: short UTF-8 only. Any other text
/// has a file of its own. One file fewer per command is most of what a short command
/// costs the disk: on some filesystems making a file is dear (ext4 without a journal
/// scans past every inode freed in the last seconds).
fn in_record(text: &[u8]) -> Option<Box<str>> {
    if text.len() > IN_RECORD_MAX {
        return None;
    }
    std::str::from_utf8(text).ok().map(Box::from)
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Store {
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Notes a read, for least-recently-read eviction.
    pub fn touch(&self) {
        self.last_read.store(now_ms(), Ordering::Relaxed);
    }

    /// When it was last read (or made, or restored).
    pub fn last_read(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.last_read.load(Ordering::Relaxed))
    }

    /// A file of its command was opened: until [`Store::closed`], it counts as being
    /// read now (it is evicted last), and if it is evicted all the same its files stay
    /// until then, so the reader keeps reading its bytes.
    pub fn opened(&self) {
        self.readers.fetch_add(1, Ordering::SeqCst);
    }

    /// A file opened with [`Store::opened`] was closed; the last close of an evicted
    /// command deletes its files.
    pub fn closed(&self) {
        // Eviction sets `evicted` before it looks at `readers`, and this the other way
        // round, so one of the two sees the other and deletes (perhaps both: a second
        // delete finds nothing).
        if self.readers.fetch_sub(1, Ordering::SeqCst) == 1 && self.evicted() {
            self.shared.send(Task::Delete(self.dir.clone()));
        }
    }

    /// Its files were deleted to keep the spool under its bound (or will be, when the
    /// last of its files open closes).
    pub fn evicted(&self) -> bool {
        self.evicted.load(Ordering::SeqCst)
    }

    /// Deletes its files once nothing uses them any more (a reader may still hold one).
    pub fn remove(&self) {
        self.removed.store(true, Ordering::SeqCst);
    }

    /// Keeps `value` under `key` in the record's marks and has the record written
    /// again. Marks are the caller's own notes beside its record: every later save
    /// keeps them, and a restart gives them back ([`Restored::marks`]).
    pub fn mark(self: &Arc<Self>, key: &str, value: Value) {
        let queued = {
            let mut record = self.record.lock();
            if record.marks.get(key) == Some(&value) {
                return;
            }
            record.marks.insert(key.to_string(), value);
            std::mem::replace(&mut record.unwritten, true)
        };
        if !queued {
            self.shared.send(Task::Record(self.clone()));
        }
    }

    fn is_gone(&self) -> bool {
        self.evicted() || self.removed.load(Ordering::SeqCst)
    }

    fn set_finished(&self, bytes: u64) {
        let mut registry = self.shared.registry.lock();
        let before = self.bytes.swap(bytes, Ordering::SeqCst);
        if !self.evicted() {
            registry.used = registry.used.saturating_sub(before) + bytes;
        }
        self.finished.store(true, Ordering::SeqCst);
        // It may be evicted from now on.
        self.shared.room_freed();
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        let mut registry = self.shared.registry.lock();
        registry.stores.remove(&self.id);
        if !self.evicted() {
            registry.used = registry.used.saturating_sub(*self.bytes.get_mut());
            self.shared.room_freed();
        }
        match self.unwritten.get_mut().take() {
            // Nothing of it was written (output would have had the worker write the
            // first files, holding the store till then): nothing to delete, and a
            // removed command leaves nothing behind.
            Some(command) => {
                if !self.is_gone() {
                    // Nothing of it is on disk: only a record saved counts.
                    let text = self.text.as_deref();
                    let record = self.record.get_mut().take().and_then(|(saved, marks)| {
                        saved.map(|meta| encode_record(meta, marks, text))
                    });
                    // Without a record to carry it, the text has its own file.
                    let command = (record.is_none() || text.is_none()).then_some(command);
                    self.shared.send(Task::Left {
                        dir: self.dir.clone(),
                        command,
                        record,
                    });
                }
            }
            None => {
                // An evicted store whose reader never said it closed goes now too.
                let evicted_and_read = self.evicted() && *self.readers.get_mut() > 0;
                if (self.removed.load(Ordering::SeqCst) && !self.evicted()) || evicted_and_read {
                    self.shared.send(Task::Delete(self.dir.clone()));
                } else if !self.is_gone() {
                    // A record that could not be written yet is written still.
                    let text = self.text.as_deref();
                    let record = self.record.get_mut().take().and_then(|(saved, marks)| {
                        saved.map(|meta| encode_record(meta, marks, text))
                    });
                    if record.is_some() {
                        self.shared.send(Task::Left {
                            dir: self.dir.clone(),
                            command: None,
                            record,
                        });
                    }
                }
            }
        }
    }
}

/// A store's record as the worker has yet to write it, and its marks. Nothing is kept
/// once written: a mark added later is written into the record on disk.
#[derive(Default)]
struct Record {
    /// The newest record saved (see [`Spool::save`]), until the worker writes it.
    saved: Option<Value>,
    /// Written under `marks` in every form of the record (see [`Store::mark`]).
    marks: serde_json::Map<String, Value>,
    /// The record on disk is older than this: a record was saved, or marks added.
    unwritten: bool,
}

impl Record {
    /// What is not written yet, if anything: the newest record saved (None when only
    /// the marks changed) and the marks. From now on it counts as written.
    fn take(&mut self) -> Option<(Option<Value>, serde_json::Map<String, Value>)> {
        if !std::mem::take(&mut self.unwritten) {
            return None;
        }
        Some((self.saved.take(), self.marks.clone()))
    }

    /// Gives back a record [`Record::take`] gave that could not be written: it is
    /// unwritten again, in its newest form (one saved meanwhile wins).
    fn put_back(&mut self, saved: Option<Value>) {
        if self.saved.is_none() {
            self.saved = saved;
        }
        self.unwritten = true;
    }
}

/// The bytes of `meta.json`: `meta` with this driver's version, `marks` and the
/// command's `text` when the record carries it.
fn encode_record(
    mut meta: Value,
    marks: serde_json::Map<String, Value>,
    text: Option<&str>,
) -> Vec<u8> {
    if let Value::Object(map) = &mut meta {
        map.insert("version".into(), META_VERSION.into());
        map.remove(MARKS_KEY);
        if !marks.is_empty() {
            map.insert(MARKS_KEY.into(), Value::Object(marks));
        }
        if let Some(text) = text {
            map.insert(COMMAND_KEY.into(), text.into());
        }
    }
    let mut bytes = serde_json::to_vec_pretty(&meta).expect("a JSON value serialises");
    bytes.push(b'\n');
    bytes
}

/// Writes the newest form of `store`'s record, if it is not written yet; true when it
/// wrote one. When only its marks changed, the record is the one on disk, which only
/// the worker writes. A record
/// that could not be written is given back to the store, unwritten, and the failure
/// returned (the marks of a record that cannot be read are logged and dropped).
fn write_record(store: &Store, log: fn(&str)) -> Result<bool, Failed> {
    let Some((saved, marks)) = store.record.lock().take() else {
        return Ok(false);
    };
    let meta = match &saved {
        Some(meta) => meta.clone(),
        None => {
            let path = store.dir.join(META_FILE);
            let read = std::fs::read(&path)
                .map_err(|e| e.to_string())
                .and_then(|text| serde_json::from_slice(&text).map_err(|e| e.to_string()));
            match read {
                Ok(meta) => meta,
                Err(e) => {
                    log(&format!("cannot add marks to {}: {e}", path.display()));
                    return Ok(false);
                }
            }
        }
    };
    let bytes = encode_record(meta, marks, store.text.as_deref());
    write_atomically(&store.dir, META_FILE, &bytes)
        .map(|()| true)
        .map_err(|error| {
            store.record.lock().put_back(saved);
            Failed {
                path: store.dir.join(META_FILE),
                error,
            }
        })
}

/// A write the worker could not do (the disk is full, most likely).
struct Failed {
    path: PathBuf,
    error: std::io::Error,
}

/// What the worker could not write, tried again when room may have been freed.
enum Unwritten {
    /// A store's files: its command, when that failed too, and its record (which the
    /// store keeps, unwritten).
    Store {
        store: Weak<Store>,
        command: Option<Vec<u8>>,
    },
    /// The files of a store let go before they could be written.
    Left {
        dir: PathBuf,
        files: Vec<(&'static str, Vec<u8>)>,
    },
}

impl Unwritten {
    /// Tries again. Ok with the command's directory once written, with None when no
    /// longer wanted (its store is gone); what is still unwritten when it fails again.
    fn write(self, log: fn(&str)) -> Result<Option<PathBuf>, (Unwritten, Failed)> {
        match self {
            Unwritten::Store { store, command } => {
                let Some(strong) = store.upgrade() else {
                    return Ok(None);
                };
                if strong.is_gone() {
                    return Ok(None);
                }
                let command_file = |bytes: &[u8]| {
                    write_atomically(&strong.dir, COMMAND_FILE, bytes).map_err(|error| Failed {
                        path: strong.dir.join(COMMAND_FILE),
                        error,
                    })
                };
                // A text the record carries has no file of its own, once a record is
                // written; any other text is written before the record, which a
                // restart cannot read back without it.
                let carried = strong.text.is_some();
                if let Some(bytes) = command.as_ref().filter(|_| !carried) {
                    if let Err(failed) = command_file(bytes) {
                        return Err((Unwritten::Store { store, command }, failed));
                    }
                }
                match write_record(&strong, log) {
                    Ok(written) => {
                        if let Some(bytes) = command.as_ref().filter(|_| carried && !written) {
                            if let Err(failed) = command_file(bytes) {
                                return Err((Unwritten::Store { store, command }, failed));
                            }
                        }
                        Ok(Some(strong.dir.clone()))
                    }
                    Err(failed) => {
                        // The record that was to carry the text waits: the text gets
                        // its own file after all (a small file may still fit), so a
                        // driver that stops before the record is written leaves it.
                        if let Some(bytes) = command.as_ref().filter(|_| carried) {
                            let _ = command_file(bytes);
                        }
                        let item = Unwritten::Store {
                            store,
                            command: None,
                        };
                        Err((item, failed))
                    }
                }
            }
            Unwritten::Left { dir, mut files } => {
                while let Some((name, bytes)) = files.first() {
                    if let Err(error) = write_atomically(&dir, name, bytes) {
                        let path = dir.join(name);
                        return Err((Unwritten::Left { dir, files }, Failed { path, error }));
                    }
                    files.remove(0);
                }
                Ok(Some(dir))
            }
        }
    }

    /// Whether `self` and `other` are the files of the same command.
    fn same(&self, other: &Unwritten) -> bool {
        match (self, other) {
            (Unwritten::Store { store: a, .. }, Unwritten::Store { store: b, .. }) => {
                Weak::ptr_eq(a, b)
            }
            (Unwritten::Left { dir: a, .. }, Unwritten::Left { dir: b, .. }) => a == b,
            _ => false,
        }
    }
}

/// The worker's writes that failed, each said once in the log when it first fails and
/// once when it is written after all; tried again after a removal frees room and
/// every [`RETRY_EVERY`].
#[derive(Default)]
struct Retries {
    waiting: Vec<Unwritten>,
    next: Option<Instant>,
}

/// How often writes that failed are tried again, when no removal came to free room.
const RETRY_EVERY: Duration = Duration::from_secs(10);

impl Retries {
    /// Takes note of a write that failed: said in the log unless it failed before.
    fn failed(&mut self, item: Unwritten, failed: Failed, log: fn(&str)) {
        let known = self.waiting.iter().position(|other| other.same(&item));
        match known {
            Some(at) => self.waiting[at] = item,
            None => {
                log(&format!(
                    "cannot write {}: {}; it is written once there is room",
                    failed.path.display(),
                    failed.error
                ));
                self.waiting.push(item);
            }
        }
        self.next
            .get_or_insert_with(|| Instant::now() + RETRY_EVERY);
    }

    /// When to try again, if anything waits.
    fn due(&self) -> Option<Instant> {
        self.next
    }

    /// Tries every waiting write once more.
    fn retry(&mut self, log: fn(&str)) {
        let mut still = Vec::new();
        for item in std::mem::take(&mut self.waiting) {
            match item.write(log) {
                Ok(Some(dir)) => log(&format!(
                    "wrote the files of {} that could not be written before",
                    dir.display()
                )),
                Ok(None) => {}
                Err((item, _)) => still.push(item),
            }
        }
        self.waiting = still;
        self.next = (!self.waiting.is_empty()).then(|| Instant::now() + RETRY_EVERY);
    }
}

/// Something the worker does off every lock.
enum Task {
    /// Nothing but a look at the stores whose first files wait (`Shared::deferred`).
    Look,
    /// A store's first files are needed now (its output begins).
    First(Arc<Store>),
    /// The files of a store let go before the worker wrote them: its command, when
    /// none of its files were written, and its record.
    Left {
        dir: PathBuf,
        command: Option<Vec<u8>>,
        record: Option<Vec<u8>>,
    },
    /// Writes the store's newest unwritten record, if it still has one, atomically (a
    /// temporary file renamed over it), unless the store is gone by then. The record of
    /// a store whose first files wait is left for them, unless this task holds the
    /// store's last reference: then the first files are written now, record and all.
    Record(Arc<Store>),
    /// Sets the modification time of a store's record (the last read, kept across
    /// restarts), writing its first files first if they wait.
    Stamp(Arc<Store>, SystemTime),
    /// Writes a file of the state directory itself atomically.
    Keep(&'static str, Vec<u8>),
    Delete(PathBuf),
    /// Answers once everything before it is done, and every store's first files are
    /// written.
    Barrier(crossbeam_channel::Sender<()>),
    /// Answers once everything before it is done, leaving waiting first files waiting.
    #[cfg(test)]
    Settled(crossbeam_channel::Sender<()>),
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

/// A command found in the state directory at start.
pub struct Restored {
    pub store: Arc<Store>,
    pub command: Vec<u8>,
    /// What was saved with [`Spool::save`].
    pub meta: Value,
    /// What was kept with [`Store::mark`].
    pub marks: serde_json::Map<String, Value>,
    /// Its output, for a command that ran (a refused one has none).
    pub capture: Option<Capture>,
    /// The last moment its driver is known to have been alive with it: the latest of
    /// that driver's heartbeat and the last write to its output files.
    pub last_seen: Option<SystemTime>,
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
            pending: Mutex::new(None),
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

    /// Why output is refused for room: running commands alone fill the spool.
    pub(crate) fn full_reason(&self) -> String {
        format!(
            "the spool reached --max-spool ({}) with running commands alone",
            crate::units::format_size(self.config.max_spool)
        )
    }

    /// Takes `more` bytes of the budget for `store`, evicting finished commands (least
    /// recently read first) when the spool would pass `--max-spool`, and returns how
    /// many it took. When the room left once every finished command is evicted is less
    /// than `more` but at least `least`, it takes that room, all of it, and no more
    /// (the caller stores the part of its bytes that fits); less than `least` is
    /// refused.
    ///
    /// A store refused for room (its output has a gap open, and every chunk asks
    /// again) is refused at once, without the registry's lock or a look at every
    /// store, while it asks for no less than it was refused and no room has been
    /// freed since ([`Shared::freed`]): the answer could only be the same.
    fn reserve(&self, store: &Store, more: u64, least: u64) -> Result<u64, String> {
        if more == 0 {
            return Ok(0);
        }
        let least = least.clamp(1, more);
        let refused = *store.refused.lock();
        if let Some((asked, freed)) = refused {
            if least >= asked && self.shared.freed.load(Ordering::SeqCst) == freed {
                return Err(self.full_reason());
            }
        }
        let mut victims = Vec::new();
        // The stores looked at are dropped only once the lock is released: one may be
        // let go meanwhile, and the last reference's drop takes the lock.
        let mut looked_at: Vec<Arc<Store>> = Vec::new();
        let result = {
            let mut registry = self.shared.registry.lock();
            #[cfg(test)]
            {
                registry.tries += 1;
            }
            let take = |registry: &mut Registry, bytes: u64| -> Result<u64, String> {
                registry.used += bytes;
                store.bytes.fetch_add(bytes, Ordering::SeqCst);
                if refused.is_some() {
                    *store.refused.lock() = None;
                }
                Ok(bytes)
            };
            let result = loop {
                if registry.used + more <= self.config.max_spool {
                    break take(&mut registry, more);
                }
                if looked_at.is_empty() {
                    looked_at = registry.stores.values().filter_map(Weak::upgrade).collect();
                }
                let victim = looked_at
                    .iter()
                    .filter(|s| {
                        s.id != store.id && s.finished.load(Ordering::SeqCst) && !s.is_gone()
                    })
                    .filter(|s| s.bytes.load(Ordering::SeqCst) > 0)
                    .min_by_key(|s| {
                        let open = s.readers.load(Ordering::SeqCst) > 0;
                        (open, s.last_read.load(Ordering::Relaxed))
                    })
                    .cloned();
                let Some(victim) = victim else {
                    let room = self.config.max_spool.saturating_sub(registry.used);
                    if room >= least {
                        break take(&mut registry, room);
                    }
                    // Read under the lock, where every bump is made: room freed from
                    // now on lets the next try through.
                    let freed = self.shared.freed.load(Ordering::SeqCst);
                    *store.refused.lock() = Some((least, freed));
                    break Err(self.full_reason());
                };
                victim.evicted.store(true, Ordering::SeqCst);
                let bytes = victim.bytes.load(Ordering::SeqCst);
                registry.used = registry.used.saturating_sub(bytes);
                registry.evicted += 1;
                self.shared.room_freed();
                victims.push(victim);
            };
            if !victims.is_empty() {
                // Queued under the lock (a send never waits): evictions made at once on
                // several threads queue their counts in the order they were counted,
                // so the file is left with the latest.
                self.shared.send(Task::Keep(
                    EVICTED_FILE,
                    format!("{}\n", registry.evicted).into_bytes(),
                ));
            }
            result
        };
        for victim in victims {
            // A reader with a file open keeps its bytes: its last close deletes them.
            let read = victim.readers.load(Ordering::SeqCst) > 0;
            (self.shared.log)(&format!(
                "evicted {} ({}) to stay under --max-spool {}{}",
                victim.dir.display(),
                crate::units::format_size(victim.bytes.load(Ordering::SeqCst)),
                crate::units::format_size(self.config.max_spool),
                if read {
                    "; its files go when the last one open is closed"
                } else {
                    ""
                }
            ));
            if !read {
                self.shared.send(Task::Delete(victim.dir.clone()));
            }
        }
        result
    }

    /// Every command left in the state directory by an earlier driver. A directory
    /// whose record was never written comes back with what can be known of it (see
    /// [`Spool::restore_lost`]); one that cannot be read back (a truncated file, a bad record) is left where it is and
    /// named in the log.
    pub fn restore(self: &Arc<Self>) -> Vec<Restored> {
        let Ok(entries) = std::fs::read_dir(&self.config.dir) else {
            return Vec::new();
        };
        let mut found = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let restored = match std::fs::symlink_metadata(path.join(META_FILE)) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => self.restore_lost(&path),
                _ => self.restore_one(&path),
            };
            match restored {
                Ok(restored) => found.push(restored),
                Err(why) => (self.shared.log)(&format!(
                    "skipped {} at start: {why}; it is left in place",
                    path.display()
                )),
            }
        }
        found
    }

    /// A directory without a record: the record of its command could not be written
    /// (a full disk) before its driver stopped. It comes back from what is known (its
    /// name from the directory's, its text from `command`, its output) as an error
    /// whose reason is [`RECORD_LOST`], and that record is written (and said in the
    /// log). Even with neither text nor output it is shown, not deleted: that a command
    /// of that name ran is known, and the user removes it as any other.
    fn restore_lost(self: &Arc<Self>, dir: &Path) -> Result<Restored, String> {
        let name = dir
            .file_name()
            .and_then(|name| name.to_str())
            .and_then(|name| name.rsplit_once('.'))
            .map(|(name, _)| name)
            .filter(|name| !name.is_empty())
            .ok_or(format!(
                "no {META_FILE}, and its name is not one of a command's directory"
            ))?;
        let command = std::fs::read(dir.join(COMMAND_FILE)).ok();
        let header = read_header(dir);
        let meta = serde_json::json!({
            "version": META_VERSION,
            "name": name,
            "exit": null,
            RECORD_LOST_KEY: true,
            "reason": RECORD_LOST,
        });
        // Output that cannot be read back (a damaged index) is not shown.
        let header = header.ok().flatten();
        let disk = header.as_ref().map_or(0, Capture::disk_bytes);
        let store = self.new_store(dir.to_path_buf(), disk, true, now_ms(), None);
        let mut capture = Capture::new(
            self.clone(),
            name,
            store.clone(),
            header.unwrap_or_else(|| self.fresh_header()),
        );
        capture.seal();
        self.save(&store, &meta);
        (self.shared.log)(&format!(
            "restored {} at start without its record, which was never written: \
             it shows as an error ({RECORD_LOST})",
            dir.display()
        ));
        Ok(Restored {
            store,
            command: command.unwrap_or_default(),
            meta,
            marks: serde_json::Map::new(),
            capture: Some(capture),
            last_seen: self.last_alive,
        })
    }

    fn restore_one(self: &Arc<Self>, dir: &Path) -> Result<Restored, String> {
        let meta_path = dir.join(META_FILE);
        let text =
            std::fs::read(&meta_path).map_err(|e| format!("no readable {META_FILE} ({e})"))?;
        let mut meta: Value =
            serde_json::from_slice(&text).map_err(|e| format!("{META_FILE} is not JSON ({e})"))?;
        if meta.get("version").and_then(Value::as_u64) != Some(META_VERSION) {
            return Err(format!("{META_FILE} has an unknown version"));
        }
        let marks = match meta.as_object_mut().and_then(|map| map.remove(MARKS_KEY)) {
            None => serde_json::Map::new(),
            Some(Value::Object(marks)) => marks,
            Some(_) => return Err(format!("the marks in {META_FILE} are not an object")),
        };
        // The text is in the record or in a file of its own; a record restored
        // without its text (see `restore_lost`) has none.
        let text: Option<Box<str>> =
            match meta.as_object_mut().and_then(|map| map.remove(COMMAND_KEY)) {
                None => None,
                Some(Value::String(text)) => Some(text.into()),
                Some(_) => return Err(format!("the command in {META_FILE} is not a string")),
            };
        let command = match (&text, std::fs::read(dir.join(COMMAND_FILE))) {
            (Some(text), _) => text.as_bytes().to_vec(),
            (None, Err(e))
                if e.kind() == std::io::ErrorKind::NotFound && meta[RECORD_LOST_KEY] == true =>
            {
                Vec::new()
            }
            (None, read) => read.map_err(|e| format!("no readable {COMMAND_FILE} ({e})"))?,
        };
        let last_read = modified(&meta_path)
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or_else(now_ms, |d| d.as_millis() as u64);
        let last_seen = [
            capture::STDOUT_FILE,
            capture::STDERR_FILE,
            capture::INDEX_FILE,
        ]
        .iter()
        .filter_map(|file| modified(&dir.join(file)))
        .chain(self.last_alive)
        .max();
        let notices = meta
            .as_object_mut()
            .and_then(|map| map.remove(capture::NOTICES_KEY));
        let name = meta["name"].as_str().unwrap_or_default().to_string();
        let Some(header) = read_header(dir)? else {
            // A refused command, or one that never wrote a byte.
            let store = self.new_store(dir.to_path_buf(), 0, true, last_read, text);
            store.record.lock().marks = marks.clone();
            let capture = (meta.get("denied").is_none()).then(|| {
                let header = self.fresh_header();
                let mut capture = Capture::new(self.clone(), &name, store.clone(), header);
                capture.seal();
                capture
            });
            return Ok(Restored {
                store,
                command,
                meta,
                marks,
                capture,
                last_seen,
            });
        };
        let disk = Capture::disk_bytes(&header);
        let store = self.new_store(dir.to_path_buf(), disk, true, last_read, text);
        store.record.lock().marks = marks.clone();
        let mut capture = Capture::new(self.clone(), &name, store.clone(), header);
        if let Some(notices) = &notices {
            capture.restore_notices(notices);
        }
        capture.seal();
        Ok(Restored {
            store,
            command,
            meta,
            marks,
            capture: Some(capture),
            last_seen,
        })
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

/// The eviction count an earlier driver left; 0 when there is none, and when it
/// cannot be read (said in the log).
fn read_evicted(dir: &Path, log: fn(&str)) -> u64 {
    let path = dir.join(EVICTED_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => text.trim().parse().unwrap_or_else(|_| {
            log(&format!(
                "ignored {}: it does not hold a count; eviction counts start again from 0",
                path.display()
            ));
            0
        }),
        Err(_) => 0,
    }
}

/// The counts of the output a command's directory holds, checked against its files'
/// sizes (unsealed, as a capture reads it back); None when it has no output, or none
/// that can be known: an index without its header (its first write found the disk
/// full, or the driver stopped before it) counts nothing.
fn read_header(dir: &Path) -> Result<Option<Header>, String> {
    let index_path = dir.join(capture::INDEX_FILE);
    let file = match std::fs::File::open(&index_path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        opened => opened.map_err(|e| format!("cannot open {} ({e})", index_path.display()))?,
    };
    let mut bytes = vec![0u8; capture::HEADER as usize];
    if std::os::unix::fs::FileExt::read_exact_at(&file, &mut bytes, 0).is_err() {
        return Ok(None);
    }
    let mut header = Header::decode(&bytes).ok_or("its index header is damaged")?;
    let (out_len, err_len, index_len) = header.file_lens();
    for (name, want) in [
        (capture::STDOUT_FILE, out_len),
        (capture::STDERR_FILE, err_len),
        (capture::INDEX_FILE, index_len),
    ] {
        let have = std::fs::metadata(dir.join(name)).map_or(0, |m| m.len());
        if have < want {
            return Err(format!("{name} is truncated ({have} of {want} bytes)"));
        }
    }
    header.sealed = false;
    Ok(Some(header))
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).ok()?.modified().ok()
}

fn work(
    tasks: crossbeam_channel::Receiver<Task>,
    shared: Weak<Shared>,
    state_dir: &Path,
    log: fn(&str),
) {
    let mut swept = Instant::now();
    // Stores whose first files wait, in the order they were made (so the soonest due
    // is first). A store let go meanwhile is not kept alive by this list.
    let mut waiting: VecDeque<(Instant, Weak<Store>)> = VecDeque::new();
    let mut retries = Retries::default();
    loop {
        take_deferred(&shared, &mut waiting);
        let soonest = [waiting.front().map(|(due, _)| *due), retries.due()]
            .into_iter()
            .flatten()
            .min();
        let timeout = soonest.map_or(capture::CHECKPOINT, |due| {
            due.saturating_duration_since(Instant::now())
                .min(capture::CHECKPOINT)
        });
        let task = match tasks.recv_timeout(timeout) {
            Ok(task) => Some(task),
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => None,
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return,
        };
        // Those made before the task was sent, so that a barrier finds them.
        take_deferred(&shared, &mut waiting);
        if swept.elapsed() >= capture::CHECKPOINT {
            swept = Instant::now();
            if let Some(shared) = shared.upgrade() {
                write_pending_headers(&shared);
                if running(&shared) {
                    beat(&state_dir.join(ALIVE_FILE));
                }
            }
        }
        let now = Instant::now();
        while waiting.front().is_some_and(|(due, _)| *due <= now) {
            if let Some((_, store)) = waiting.pop_front() {
                if let Some(store) = store.upgrade() {
                    write_first(&store, &mut retries, log);
                }
            }
        }
        if retries.due().is_some_and(|due| due <= now) {
            retries.retry(log);
        }
        let Some(task) = task else {
            continue;
        };
        match task {
            Task::Look => {}
            Task::First(store) => write_first(&store, &mut retries, log),
            Task::Left {
                dir,
                command,
                record,
            } => {
                let files = [(COMMAND_FILE, command), (META_FILE, record)]
                    .into_iter()
                    .filter_map(|(name, bytes)| Some((name, bytes?)))
                    .collect();
                if let Err((item, failed)) = (Unwritten::Left { dir, files }).write(log) {
                    retries.failed(item, failed, log);
                }
            }
            Task::Record(store) => {
                if store.unwritten.lock().is_some() {
                    // Written with the first files, in its newest form: now, when this
                    // is the last reference, or its drop would hand them back behind
                    // a barrier already queued.
                    if Arc::strong_count(&store) == 1 {
                        write_first(&store, &mut retries, log);
                    }
                    continue;
                }
                if store.is_gone() {
                    continue;
                }
                if let Err(failed) = write_record(&store, log) {
                    let item = Unwritten::Store {
                        store: Arc::downgrade(&store),
                        command: None,
                    };
                    retries.failed(item, failed, log);
                }
            }
            Task::Stamp(store, time) => {
                write_first(&store, &mut retries, log);
                if store.is_gone() {
                    continue;
                }
                // Opened, not created: a record that could not be written stays absent
                // rather than empty.
                let path = store.dir.join(META_FILE);
                if let Ok(file) = std::fs::File::options().write(true).open(&path) {
                    let _ = file.set_modified(time);
                }
            }
            Task::Keep(name, bytes) => write_logged(state_dir, name, &bytes, log),
            Task::Delete(dir) => match std::fs::remove_dir_all(&dir) {
                // Room was freed: what could not be written may fit now.
                Ok(()) => retries.retry(log),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => log(&format!("cannot delete {}: {e}", dir.display())),
            },
            Task::Barrier(done) => {
                for (_, store) in waiting.drain(..) {
                    if let Some(store) = store.upgrade() {
                        write_first(&store, &mut retries, log);
                    }
                }
                if let Some(shared) = shared.upgrade() {
                    write_pending_headers(&shared);
                }
                if retries.due().is_some() {
                    retries.retry(log);
                }
                let _ = done.send(());
            }
            #[cfg(test)]
            Task::Settled(done) => {
                let _ = done.send(());
            }
        }
    }
}

/// Writes a store's first files, its command and its newest record, unless they are
/// written already; a store gone by then gets none. Only the worker calls it: a record
/// saved meanwhile either is the one taken here or finds none waiting and asks for its
/// own write. What cannot be written is left to `retries`.
/// Moves the new stores whose first files wait into the worker's own list.
fn take_deferred(shared: &Weak<Shared>, waiting: &mut VecDeque<(Instant, Weak<Store>)>) {
    if let Some(shared) = shared.upgrade() {
        waiting.extend(shared.deferred.lock().drain(..));
    }
}

fn write_first(store: &Arc<Store>, retries: &mut Retries, log: fn(&str)) {
    let Some(command) = store.unwritten.lock().take() else {
        return;
    };
    if store.is_gone() {
        return;
    }
    let item = Unwritten::Store {
        store: Arc::downgrade(store),
        command: Some(command),
    };
    if let Err((item, failed)) = item.write(log) {
        retries.failed(item, failed, log);
    }
}

/// Whether any command's output may still arrive.
fn running(shared: &Shared) -> bool {
    // Collected first: the last reference to a store may be dropped here, and its
    // drop takes the registry's lock.
    let stores: Vec<Arc<Store>> = {
        let registry = shared.registry.lock();
        registry.stores.values().filter_map(Weak::upgrade).collect()
    };
    stores
        .iter()
        .any(|store| !store.finished.load(Ordering::SeqCst) && !store.is_gone())
}

/// Marks the driver alive now, so a restart after a crash knows until when the
/// commands it finds unfinished were still running at least.
fn beat(path: &Path) {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path);
    if let Ok(file) = file {
        let _ = file.set_modified(SystemTime::now());
    }
}

/// Writes the headers captures left for the worker (output that stopped arriving
/// before the next checkpoint), so a crash finds counts at most one interval old.
fn write_pending_headers(shared: &Shared) {
    let stores: Vec<Arc<Store>> = {
        let registry = shared.registry.lock();
        registry.stores.values().filter_map(Weak::upgrade).collect()
    };
    for store in stores {
        let mut pending = store.pending.lock();
        if let Some(header) = pending.take() {
            if store.is_gone() {
                continue;
            }
            let path = store.dir.join(capture::INDEX_FILE);
            if let Ok(file) = std::fs::OpenOptions::new().write(true).open(path) {
                let _ = std::os::unix::fs::FileExt::write_all_at(&file, &header, 0);
            }
        }
    }
}

/// [`write_atomically`], saying in the log when it fails.
fn write_logged(dir: &Path, name: &str, bytes: &[u8], log: fn(&str)) {
    if let Err(e) = write_atomically(dir, name, bytes) {
        log(&format!("cannot write {}: {e}", dir.join(name).display()));
    }
}

fn write_atomically(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let temporary = dir.join(format!(".{name}.tmp"));
    let open = || {
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&temporary)
    };
    // The directory is made by the first file written into it, not tried for each.
    let mut file = match open() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)?;
            open()?
        }
        opened => opened?,
    };
    // A file that could not be written whole (a full disk) is not left behind.
    let written = file
        .write_all(bytes)
        .and_then(|()| std::fs::rename(&temporary, dir.join(name)));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

#[cfg(test)]
mod tests;
