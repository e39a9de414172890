//! Reading back at start what an earlier driver left: each command's record, output
//! counts checked against its files, and what can be known of one whose record was lost.

use super::*;

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

impl Spool {
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
            // A command's name never starts with '.': such a directory is another's
            // (the control sockets of remote hosts).
            if !entry.file_type().is_ok_and(|t| t.is_dir())
                || entry.file_name().as_encoded_bytes().starts_with(b".")
            {
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
    pub(super) fn restore_lost(self: &Arc<Self>, dir: &Path) -> Result<Restored, SpoolError> {
        let name = dir
            .file_name()
            .and_then(|name| name.to_str())
            .and_then(|name| name.rsplit_once('.'))
            .map(|(name, _)| name)
            .filter(|name| !name.is_empty())
            .ok_or_else(|| {
                SpoolError::Damaged(format!(
                    "no {META_FILE}, and its name is not one of a command's directory"
                ))
            })?;
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

    pub(super) fn restore_one(self: &Arc<Self>, dir: &Path) -> Result<Restored, SpoolError> {
        let meta_path = dir.join(META_FILE);
        let text = std::fs::read(&meta_path)
            .map_err(|e| SpoolError::io(format!("no readable {META_FILE}"), e))?;
        let mut meta: Value = serde_json::from_slice(&text)
            .map_err(|e| SpoolError::Damaged(format!("{META_FILE} is not JSON ({e})")))?;
        if meta.get("version").and_then(Value::as_u64) != Some(META_VERSION) {
            return Err(SpoolError::Damaged(format!(
                "{META_FILE} has an unknown version"
            )));
        }
        let marks = match meta.as_object_mut().and_then(|map| map.remove(MARKS_KEY)) {
            None => serde_json::Map::new(),
            Some(Value::Object(marks)) => marks,
            Some(_) => {
                return Err(SpoolError::Damaged(format!(
                    "the marks in {META_FILE} are not an object"
                )))
            }
        };
        // The text is in the record or in a file of its own; a record restored
        // without its text (see `restore_lost`) has none.
        let text: Option<Box<str>> =
            match meta.as_object_mut().and_then(|map| map.remove(COMMAND_KEY)) {
                None => None,
                Some(Value::String(text)) => Some(text.into()),
                Some(_) => {
                    return Err(SpoolError::Damaged(format!(
                        "the command in {META_FILE} is not a string"
                    )))
                }
            };
        let command = match (&text, std::fs::read(dir.join(COMMAND_FILE))) {
            (Some(text), _) => text.as_bytes().to_vec(),
            (None, Err(e))
                if e.kind() == std::io::ErrorKind::NotFound && meta[RECORD_LOST_KEY] == true =>
            {
                Vec::new()
            }
            (None, read) => {
                read.map_err(|e| SpoolError::io(format!("no readable {COMMAND_FILE}"), e))?
            }
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
}

/// The eviction count an earlier driver left; 0 when there is none, and when it
/// cannot be read (said in the log).
pub(super) fn read_evicted(dir: &Path, log: fn(&str)) -> u64 {
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
pub(super) fn read_header(dir: &Path) -> Result<Option<Header>, SpoolError> {
    let index_path = dir.join(capture::INDEX_FILE);
    let file = match std::fs::File::open(&index_path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        opened => opened
            .map_err(|e| SpoolError::io(format!("cannot open {}", index_path.display()), e))?,
    };
    let mut bytes = vec![0u8; capture::HEADER as usize];
    if std::os::unix::fs::FileExt::read_exact_at(&file, &mut bytes, 0).is_err() {
        return Ok(None);
    }
    let mut header = Header::decode(&bytes)
        .ok_or_else(|| SpoolError::Damaged("its index header is damaged".into()))?;
    let (out_len, err_len, index_len) = header.file_lens();
    for (name, want) in [
        (capture::STDOUT_FILE, out_len),
        (capture::STDERR_FILE, err_len),
        (capture::INDEX_FILE, index_len),
    ] {
        let have = std::fs::metadata(dir.join(name)).map_or(0, |m| m.len());
        if have < want {
            return Err(SpoolError::Damaged(format!(
                "{name} is truncated ({have} of {want} bytes)"
            )));
        }
    }
    // Output that had not ended when its driver stopped may lack its last bytes.
    header.cut_short |= !header.sealed;
    header.sealed = false;
    Ok(Some(header))
}

pub(super) fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).ok()?.modified().ok()
}
