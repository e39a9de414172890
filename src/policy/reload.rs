//! Keeping the rules current: the settings file's stamp, the reload when it changes
//! (the rules in force stay when an edit does not parse or the file disappears), and the
//! thread that looks every so often.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use crossbeam_channel::RecvTimeoutError;

use super::{Policy, RuleSet, SettingsError};

/// The settings file as last seen: its identity and content, or absent.
#[derive(Debug, Default)]
pub(super) struct Seen {
    /// None when the file could not be read at the last look (that has been logged).
    pub(super) stamp: Option<Stamp>,
    pub(super) bytes: Vec<u8>,
}

/// What identifies one version of the file without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stamp {
    device: u64,
    inode: u64,
    length: u64,
    modified: (i64, i64),
    changed: (i64, i64),
}

impl Stamp {
    pub(super) fn of(meta: &fs::Metadata) -> Stamp {
        Stamp {
            device: meta.dev(),
            inode: meta.ino(),
            length: meta.len(),
            modified: (meta.mtime(), meta.mtime_nsec()),
            changed: (meta.ctime(), meta.ctime_nsec()),
        }
    }

    /// Whether the file changed so recently that a second write within the same clock tick
    /// could have left the stamp as it is; such a file is compared by content too.
    pub(super) fn is_recent(&self) -> bool {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        self.modified.0.max(self.changed.0) >= now - 2
    }
}

impl Policy {
    /// Looks at the settings file and reloads it if it changed. Returns a line to log when
    /// something happened: the rules were reloaded, or a change could not be loaded and the
    /// old rules stay in force (said once per change, not on every call). None when the file
    /// is as it was.
    pub(crate) fn reload_if_changed(&self) -> Option<String> {
        let mut seen = self.seen.lock();
        let looked = fs::metadata(&self.path).and_then(|meta| {
            let stamp = Stamp::of(&meta);
            if seen.stamp == Some(stamp) && !stamp.is_recent() {
                return Ok((stamp, None));
            }
            Ok((stamp, Some(fs::read(&self.path)?)))
        });
        let (stamp, bytes) = match looked {
            Ok((_, None)) => return None,
            Ok((stamp, Some(bytes))) => (stamp, bytes),
            Err(err) => {
                // Said once: a file already seen missing stays quiet until it comes back.
                seen.stamp.take()?;
                seen.bytes.clear();
                return Some(format!(
                    "settings file {} cannot be read ({err}); keeping the {} rules in force",
                    self.path.display(),
                    self.rule_count()
                ));
            }
        };
        if seen.stamp == Some(stamp) && seen.bytes == bytes {
            return None;
        }
        let parsed = parse_bytes(&self.path, &bytes);
        seen.stamp = Some(stamp);
        seen.bytes = bytes;
        match parsed {
            Ok(rules) => {
                let count = self.count(&rules);
                let mut line = format!(
                    "settings reloaded from {}: {count} rules",
                    self.path.display()
                );
                for warning in rules.warnings.iter().chain(&rules.sandbox.warnings) {
                    line.push_str(&format!("; warning: {warning}"));
                }
                *self.rules.write() = Arc::new(rules);
                Some(line)
            }
            Err(err) => Some(format!(
                "{err}; keeping the {} rules in force",
                self.rule_count()
            )),
        }
    }

    /// Starts a thread that calls [`Policy::reload_if_changed`] every `every` and passes each
    /// line it returns to `log`, until [`Policy::stop`] is called or the policy is dropped.
    pub(crate) fn spawn_reloader(
        self: &Arc<Self>,
        every: Duration,
        log: impl Fn(&str) + Send + 'static,
    ) -> JoinHandle<()> {
        let policy: Weak<Policy> = Arc::downgrade(self);
        let stop = self.stop_receiver.clone();
        std::thread::Builder::new()
            .name("tfs-settings".to_owned())
            .spawn(move || loop {
                match stop.recv_timeout(every) {
                    Err(RecvTimeoutError::Timeout) => {}
                    Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
                }
                let Some(policy) = policy.upgrade() else {
                    return;
                };
                if let Some(line) = policy.reload_if_changed() {
                    log(&line);
                }
                policy.refresh_sandbox();
            })
            .expect("the OS has room for one more thread at startup")
    }

    /// Ends every reloader thread promptly (they return within one wake-up).
    pub(crate) fn stop(&self) {
        self.stop_sender.lock().take();
    }
}

pub(super) fn parse_bytes(path: &Path, bytes: &[u8]) -> Result<RuleSet, SettingsError> {
    let text = std::str::from_utf8(bytes).map_err(|error| SettingsError::NotUtf8 {
        path: path.to_path_buf(),
        error,
    })?;
    RuleSet::parse(text).map_err(|why| SettingsError::Invalid {
        path: path.to_path_buf(),
        why,
    })
}
