//! The audit log: one JSON object per line, appended for every decision (a command that ran
//! or one that was refused), in a file outside the tree that only its owner can read.
//!
//! Each line holds `time` (RFC 3339, UTC, milliseconds), `name`, `command`, `cwd`,
//! `decision` (`ran` or `denied`), `rule` and `reason` (null when there is none). A line is
//! written with a single `write` on a file opened for appending, so lines from several
//! threads never interleave. Failures are returned, never panicked on: the caller decides
//! whether a command may run without its audit line.
//!
//! The file is never opened through a symbolic link, and only when the user owns it.
//!
//! The log is bounded: a command longer than [`MAX_TEXT`] keeps only its first
//! [`MAX_TEXT`] bytes in `command`, with `command_bytes` (its whole length) and
//! `command_sha256` (of the whole text) to identify it, and `command_truncated: true`.
//! Past [`ROTATE_AT`] bytes the file is renamed to `audit.jsonl.1` (older ones shift up
//! to [`KEEP_ROTATED`]) and a new one begins.

use std::fs::{self, File};
use std::io::Write;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use parking_lot::Mutex;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Bytes of a command kept in one entry.
pub const MAX_TEXT: usize = 4096;
/// Size past which the log is rotated.
pub const ROTATE_AT: u64 = 16 << 20;
/// Rotated files kept (`audit.jsonl.1` is the newest).
pub const KEEP_ROTATED: u32 = 3;

/// Why the audit log cannot be opened or written.
#[derive(Debug)]
pub enum AuditError {
    /// Its directory cannot be created.
    Directory {
        path: PathBuf,
        error: std::io::Error,
    },
    /// The file itself is refused (a symbolic link, another user's) or cannot be opened.
    Open(crate::owned::OwnedError),
    /// The system refused an operation on it.
    Io {
        path: PathBuf,
        doing: &'static str,
        error: std::io::Error,
    },
}

impl std::fmt::Display for AuditError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AuditError::Directory { path, error } => write!(
                f,
                "cannot create audit log directory {}: {error}",
                path.display()
            ),
            AuditError::Open(error) => error.fmt(f),
            AuditError::Io { path, doing, error } => {
                write!(f, "cannot {doing} audit log {}: {error}", path.display())
            }
        }
    }
}

impl std::error::Error for AuditError {}

/// An open audit log.
#[derive(Debug)]
pub struct Audit {
    path: PathBuf,
    rotate_at: u64,
    /// The log file and its size; the lock makes each line one write even if the OS
    /// did not, and keeps a rotation from splitting lines.
    file: Mutex<(File, u64)>,
}

impl Audit {
    /// Opens (creating it with mode 0600, and its directories with mode 0700) the audit log
    /// at `path` for appending. An existing file readable by others is made private.
    pub fn open(path: &Path) -> Result<Audit, AuditError> {
        Audit::open_rotating_at(path, ROTATE_AT)
    }

    /// [`Audit::open`], rotating past `rotate_at` bytes.
    pub fn open_rotating_at(path: &Path, rotate_at: u64) -> Result<Audit, AuditError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .map_err(|error| AuditError::Directory {
                    path: parent.to_path_buf(),
                    error,
                })?;
        }
        let file = open_log(path)?;
        let meta = file.metadata().map_err(|error| AuditError::Io {
            path: path.to_path_buf(),
            doing: "stat",
            error,
        })?;
        Ok(Audit {
            path: path.to_owned(),
            rotate_at,
            file: Mutex::new((file, meta.len())),
        })
    }

    fn failed(&self, doing: &'static str, error: std::io::Error) -> AuditError {
        AuditError::Io {
            path: self.path.clone(),
            doing,
            error,
        }
    }

    /// Renames the log to `.1` (shifting older ones up, the oldest dropped) and starts
    /// a new one.
    fn rotate(&self, file: &mut (File, u64)) -> Result<(), AuditError> {
        let numbered = |n: u32| {
            let mut name = self.path.as_os_str().to_owned();
            name.push(format!(".{n}"));
            PathBuf::from(name)
        };
        for n in (1..KEEP_ROTATED).rev() {
            let _ = fs::rename(numbered(n), numbered(n + 1));
        }
        fs::rename(&self.path, numbered(1)).map_err(|error| self.failed("rotate", error))?;
        *file = (open_log(&self.path)?, 0);
        Ok(())
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
    ) -> Result<(), AuditError> {
        let line = audit_line(
            SystemTime::now(),
            name,
            command,
            &cwd.to_string_lossy(),
            decision,
            rule,
            reason,
        );
        let mut file = self.file.lock();
        if file.1 > 0 && file.1 + line.len() as u64 > self.rotate_at {
            self.rotate(&mut file)?;
        }
        file.0
            .write_all(line.as_bytes())
            .map_err(|error| self.failed("write", error))?;
        file.1 += line.len() as u64;
        Ok(())
    }
}

/// Opens the log for appending: never through a symbolic link, only the user's own
/// file, private (see [`crate::owned::open`]).
fn open_log(path: &Path) -> Result<File, AuditError> {
    crate::owned::open(path, "audit log", crate::owned::Access::Append).map_err(AuditError::Open)
}

/// The first [`MAX_TEXT`] bytes of `command`, cut at a character boundary.
fn kept_text(command: &str) -> &str {
    let mut end = command.len().min(MAX_TEXT);
    while !command.is_char_boundary(end) {
        end -= 1;
    }
    &command[..end]
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
    let kept = kept_text(command);
    let whole = if kept.len() < command.len() {
        format!(
            ",\"command_truncated\":true,\"command_bytes\":{},\"command_sha256\":\"{:x}\"",
            command.len(),
            Sha256::digest(command.as_bytes())
        )
    } else {
        String::new()
    };
    format!(
        "{{\"time\":{},\"name\":{},\"command\":{}{whole},\"cwd\":{},\"decision\":{},\
         \"rule\":{},\"reason\":{}}}\n",
        text(&rfc3339(time)),
        text(name),
        text(kept),
        text(cwd),
        text(decision),
        optional(rule),
        optional(reason),
    )
}

/// `$XDG_STATE_HOME/terminalfs/audit.jsonl`, or `~/.local/state/terminalfs/audit.jsonl`.
pub fn default_audit_path() -> PathBuf {
    crate::paths::xdg_dir("XDG_STATE_HOME", ".local/state").join("terminalfs/audit.jsonl")
}

pub use crate::time::rfc3339;

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

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
    fn long_commands_keep_a_bounded_prefix_with_length_and_digest() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("audit.jsonl");
        let audit = Audit::open(&path).expect("open audit log");
        // A mebibyte of text whose cut point falls inside a two-byte character.
        let command = format!("echo {}", "é".repeat(1 << 19));
        audit
            .record(
                "big",
                &command,
                Path::new("/"),
                "denied",
                None,
                Some("too long"),
            )
            .expect("record");
        let text = fs::read_to_string(&path).expect("read audit log");
        assert!(
            text.len() < 2 * MAX_TEXT,
            "an entry of {} bytes",
            text.len()
        );
        let entry: Value = serde_json::from_str(text.trim_end()).expect("JSON");
        let kept = entry["command"].as_str().expect("a string");
        assert!(kept.len() <= MAX_TEXT && kept.len() > MAX_TEXT - 4);
        assert!(command.starts_with(kept));
        assert_eq!(entry["command_bytes"], command.len());
        assert_eq!(entry["command_truncated"], true);
        let digest = format!("{:x}", Sha256::digest(command.as_bytes()));
        assert_eq!(entry["command_sha256"], digest);
        // Short commands stay whole, with no extra fields.
        audit
            .record("small", "ls", Path::new("/"), "ran", None, None)
            .expect("record");
        let text = fs::read_to_string(&path).expect("read audit log");
        let last: Value = serde_json::from_str(text.lines().last().unwrap()).expect("JSON");
        assert_eq!(last["command"], "ls");
        assert!(last.get("command_sha256").is_none());
    }

    #[test]
    fn the_log_rotates_by_size_and_keeps_a_few_files() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("audit.jsonl");
        let audit = Audit::open_rotating_at(&path, 10_000).expect("open audit log");
        let command = "x".repeat(3000);
        for i in 0..40 {
            audit
                .record(
                    &format!("n{i}"),
                    &command,
                    Path::new("/"),
                    "ran",
                    None,
                    None,
                )
                .expect("record");
        }
        let name = |suffix: &str| dir.path().join(format!("audit.jsonl{suffix}"));
        for suffix in ["", ".1", ".2", ".3"] {
            let text = fs::read_to_string(name(suffix)).expect("a log file");
            assert!(
                text.len() <= 10_000 && !text.is_empty(),
                "{suffix}: {}",
                text.len()
            );
            for line in text.lines() {
                serde_json::from_str::<Value>(line).expect("whole JSON lines");
            }
            let mode = fs::metadata(name(suffix))
                .expect("stat")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(
            !name(".4").exists(),
            "only {KEEP_ROTATED} old files are kept"
        );
        let newest = fs::read_to_string(&path).expect("read");
        assert!(newest.lines().last().unwrap().contains("\"n39\""));
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
        assert!(err.to_string().contains("audit log"), "{err}");
    }
}
