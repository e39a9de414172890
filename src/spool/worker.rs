//! The worker: the one thread that writes records, a new command's first files when
//! due, the `alive` heartbeat, and does every removal, so nobody
//! waits for the disk while holding a lock; and what it keeps to try again when a
//! write fails.

use super::*;

/// A write the worker could not do (the disk is full, most likely).
pub(super) struct Failed {
    pub(super) path: PathBuf,
    pub(super) error: std::io::Error,
}

/// What the worker could not write, tried again when room may have been freed.
pub(super) enum Unwritten {
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
    pub(super) fn write(self, log: fn(&str)) -> Result<Option<PathBuf>, (Unwritten, Failed)> {
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
    pub(super) fn same(&self, other: &Unwritten) -> bool {
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
pub(super) struct Retries {
    pub(super) waiting: Vec<Unwritten>,
    pub(super) next: Option<Instant>,
}

/// How often writes that failed are tried again, when no removal came to free room.
pub(super) const RETRY_EVERY: Duration = Duration::from_secs(10);

impl Retries {
    /// Takes note of a write that failed: said in the log unless it failed before.
    pub(super) fn failed(&mut self, item: Unwritten, failed: Failed, log: fn(&str)) {
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
    pub(super) fn due(&self) -> Option<Instant> {
        self.next
    }

    /// Tries every waiting write once more.
    pub(super) fn retry(&mut self, log: fn(&str)) {
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
pub(super) enum Task {
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

pub(super) fn work(
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

/// Moves the new stores whose first files wait into the worker's own list.
pub(super) fn take_deferred(shared: &Weak<Shared>, waiting: &mut VecDeque<(Instant, Weak<Store>)>) {
    if let Some(shared) = shared.upgrade() {
        waiting.extend(shared.deferred.lock().drain(..));
    }
}

/// Writes a store's first files, its command and its newest record, unless they are
/// written already; a store gone by then gets none. Only the worker calls it: a record
/// saved meanwhile either is the one taken here or finds none waiting and asks for its
/// own write. What cannot be written is left to `retries`.
pub(super) fn write_first(store: &Arc<Store>, retries: &mut Retries, log: fn(&str)) {
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
pub(super) fn running(shared: &Shared) -> bool {
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
pub(super) fn beat(path: &Path) {
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

/// [`write_atomically`], saying in the log when it fails.
pub(super) fn write_logged(dir: &Path, name: &str, bytes: &[u8], log: fn(&str)) {
    if let Err(e) = write_atomically(dir, name, bytes) {
        log(&format!("cannot write {}: {e}", dir.join(name).display()));
    }
}

pub(super) fn write_atomically(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
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
