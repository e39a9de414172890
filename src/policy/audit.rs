//! The audit log: one JSON object per line, appended for every decision (a command that ran
//! or one that was refused), in a file outside the tree that only its owner can read.
//!
//! Each line holds `time` (RFC 3339, UTC, milliseconds), `name`, `command`, `cwd`,
//! `decision` (`ran` or `denied`), `rule` and `reason` (null when there is none). A line is
//! written with a single `write` on a file opened for appending, so lines from several
//! threads never interleave. Failures are returned, never panicked on: the caller decides
//! whether a command may run without its audit line.

use std::fs::{self, File};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use parking_lot::Mutex;
use serde_json::Value;

/// An open audit log.
#[derive(Debug)]
pub struct Audit {
    path: PathBuf,
    /// The log file; the lock makes each line one write even if the OS did not.
    file: Mutex<File>,
}

impl Audit {
    /// Opens (creating it with mode 0600, and its directories with mode 0700) the audit log
    /// at `path` for appending. An existing file readable by others is made private.
    pub fn open(path: &Path) -> Result<Audit, String> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .map_err(|err| {
                    format!(
                        "cannot create audit log directory {}: {err}",
                        parent.display()
                    )
                })?;
        }
        let file = fs::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .open(path)
            .map_err(|err| format!("cannot open audit log {}: {err}", path.display()))?;
        let meta = file
            .metadata()
            .map_err(|err| format!("cannot stat audit log {}: {err}", path.display()))?;
        if meta.permissions().mode() & 0o077 != 0 {
            file.set_permissions(fs::Permissions::from_mode(0o600))
                .map_err(|err| {
                    format!("cannot make audit log {} private: {err}", path.display())
                })?;
        }
        Ok(Audit {
            path: path.to_owned(),
            file: Mutex::new(file),
        })
    }

    /// Where the log is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one decision. `decision` is `ran` or `denied`.
    pub fn record(
        &self,
        name: &str,
        command: &str,
        cwd: &Path,
        decision: &str,
        rule: Option<&str>,
        reason: Option<&str>,
    ) -> Result<(), String> {
        let line = audit_line(
            SystemTime::now(),
            name,
            command,
            &cwd.to_string_lossy(),
            decision,
            rule,
            reason,
        );
        self.file
            .lock()
            .write_all(line.as_bytes())
            .map_err(|err| format!("cannot write audit log {}: {err}", self.path.display()))
    }
}

/// One audit line, newline included, with the keys in a fixed, readable order.
fn audit_line(
    time: SystemTime,
    name: &str,
    command: &str,
    cwd: &str,
    decision: &str,
    rule: Option<&str>,
    reason: Option<&str>,
) -> String {
    let text = |s: &str| Value::String(s.to_owned()).to_string();
    let optional = |s: Option<&str>| s.map_or_else(|| "null".to_owned(), text);
    format!(
        "{{\"time\":{},\"name\":{},\"command\":{},\"cwd\":{},\"decision\":{},\"rule\":{},\
         \"reason\":{}}}\n",
        text(&rfc3339(time)),
        text(name),
        text(command),
        text(cwd),
        text(decision),
        optional(rule),
        optional(reason),
    )
}

/// `$XDG_STATE_HOME/terminalfs/audit.jsonl`, or `~/.local/state/terminalfs/audit.jsonl`.
pub fn default_audit_path() -> PathBuf {
    super::settings::xdg_dir("XDG_STATE_HOME", ".local/state").join("terminalfs/audit.jsonl")
}

pub use crate::time::rfc3339;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_json_lines_in_a_private_file() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("state/terminalfs/audit.jsonl");
        let audit = Audit::open(&path).expect("open audit log");
        audit
            .record(
                "build",
                "make \"all\"\n",
                Path::new("/src"),
                "ran",
                None,
                None,
            )
            .expect("record ran");
        audit
            .record(
                "x",
                "sudo ls",
                Path::new("/"),
                "denied",
                Some("Bash(sudo:*)"),
                Some("denied by rule 'Bash(sudo:*)' in /s.json"),
            )
            .expect("record denied");
        drop(audit);
        let reopened = Audit::open(&path).expect("reopen appends");
        reopened
            .record("y", "ls", Path::new("/"), "ran", None, None)
            .expect("record after reopen");
        let text = fs::read_to_string(&path).expect("read audit log");
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("each line is JSON"))
            .collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0]["name"], "build");
        assert_eq!(lines[0]["command"], "make \"all\"\n");
        assert_eq!(lines[0]["cwd"], "/src");
        assert_eq!(lines[0]["decision"], "ran");
        assert!(lines[0]["rule"].is_null() && lines[0]["reason"].is_null());
        assert_eq!(lines[1]["rule"], "Bash(sudo:*)");
        assert_eq!(lines[1]["decision"], "denied");
        let time = lines[2]["time"].as_str().expect("time is a string");
        assert!(time.ends_with('Z') && time.len() == 24, "{time}");
        assert!(text.starts_with("{\"time\":"));
        let mode = fs::metadata(&path).expect("stat").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let dir_mode = fs::metadata(path.parent().expect("has a parent"))
            .expect("stat dir")
            .permissions()
            .mode();
        assert_eq!(dir_mode & 0o077, 0);
    }

    #[test]
    fn an_open_readable_file_is_made_private() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("audit.jsonl");
        fs::write(&path, "").expect("create");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).expect("chmod");
        Audit::open(&path).expect("open");
        let mode = fs::metadata(&path).expect("stat").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn unopenable_path_is_an_error() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let file = dir.path().join("file");
        fs::write(&file, "").expect("create");
        let err = Audit::open(&file.join("audit.jsonl")).expect_err("parent is a file");
        assert!(err.contains("audit log"), "{err}");
    }
}
