//! One command's directory ([`Store`]) and its record: what the spool tracks of it
//! (bytes, last read, open files, eviction) and the record and marks the worker writes.

use super::*;

/// One command's directory and what the spool tracks of it.
pub struct Store {
    pub(super) id: u64,
    pub(super) dir: PathBuf,
    pub(super) shared: Arc<Shared>,
    /// Bytes of output files counted against `--max-spool`.
    pub(super) bytes: AtomicU64,
    /// Last read, in milliseconds since the epoch (orders eviction).
    pub(super) last_read: AtomicU64,
    /// No more output will come; it may be evicted.
    pub(super) finished: AtomicBool,
    /// Its files were deleted to make room.
    pub(super) evicted: AtomicBool,
    /// Its command was removed: the files go when the last user lets go.
    pub(super) removed: AtomicBool,
    /// Files of its command open now (see [`Store::opened`]).
    pub(super) readers: AtomicU64,
    /// Its last reservation refused for room, while no later one fitted: the fewest
    /// bytes it would have taken, and [`Shared::freed`] when it was refused (see
    /// [`Spool::reserve`]).
    pub(super) refused: Mutex<Option<(u64, u64)>>,
    /// Its record until the worker writes it, and its marks. The worker writes the
    /// newest form, so a record replaced before the worker came to it is never written.
    pub(super) record: Mutex<Record>,
    /// The command's text while none of the store's files is written: the worker
    /// writes it with the newest record once the store is due or needed (see
    /// [`write_first`]). Only the worker takes it (and the store's drop).
    pub(super) unwritten: Mutex<Option<Vec<u8>>>,
    /// The command's text when every form of the record carries it (see [`in_record`]);
    /// then no `command` file is written beside a record.
    pub(super) text: Option<Box<str>>,
}

/// The text of a command as its record carries it: short UTF-8 only. Any other text
/// has a file of its own. One file fewer per command is most of what a short command
/// costs the disk: on some filesystems making a file is dear (ext4 without a journal
/// scans past every inode freed in the last seconds).
pub(super) fn in_record(text: &[u8]) -> Option<Box<str>> {
    if text.len() > IN_RECORD_MAX {
        return None;
    }
    std::str::from_utf8(text).ok().map(Box::from)
}

pub(super) fn now_ms() -> u64 {
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

    pub(super) fn is_gone(&self) -> bool {
        self.evicted() || self.removed.load(Ordering::SeqCst)
    }

    pub(super) fn set_finished(&self, bytes: u64) {
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
pub(super) struct Record {
    /// The newest record saved (see [`Spool::save`]), until the worker writes it.
    pub(super) saved: Option<Value>,
    /// Written under `marks` in every form of the record (see [`Store::mark`]).
    pub(super) marks: serde_json::Map<String, Value>,
    /// The record on disk is older than this: a record was saved, or marks added.
    pub(super) unwritten: bool,
}

impl Record {
    /// What is not written yet, if anything: the newest record saved (None when only
    /// the marks changed) and the marks. From now on it counts as written.
    pub(super) fn take(&mut self) -> Option<(Option<Value>, serde_json::Map<String, Value>)> {
        if !std::mem::take(&mut self.unwritten) {
            return None;
        }
        Some((self.saved.take(), self.marks.clone()))
    }

    /// Gives back a record [`Record::take`] gave that could not be written: it is
    /// unwritten again, in its newest form (one saved meanwhile wins).
    pub(super) fn put_back(&mut self, saved: Option<Value>) {
        if self.saved.is_none() {
            self.saved = saved;
        }
        self.unwritten = true;
    }
}

/// The bytes of `meta.json`: `meta` with this driver's version, `marks` and the
/// command's `text` when the record carries it.
pub(super) fn encode_record(
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
pub(super) fn write_record(store: &Store, log: fn(&str)) -> Result<bool, Failed> {
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
