//! The driver's log: one line per event, stamped with the time, on stderr (the log
//! file under `--daemon`). Failed file operations are logged only in verbose mode
//! (`--verbose`, or `TERMINALFS_LOG=debug` in the environment): a shell completing a
//! path makes many lookups that fail, and each is worth a line only when asked for.
//! The `--log-file` is private (0600), rotated like the audit log, and holds no
//! payload longer than [`MAX_PAYLOAD`] bytes whole.

use crate::owned::{Access, OwnedError};
use crate::policy::audit::KEEP_ROTATED;
use parking_lot::Mutex;
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

static VERBOSE: AtomicBool = AtomicBool::new(false);

/// The environment variable that turns verbose logging on (`debug` or `verbose`).
pub const ENV: &str = "TERMINALFS_LOG";

/// Whether the environment asks for verbose logging.
pub fn verbose_from_env() -> bool {
    std::env::var(ENV).is_ok_and(|v| matches!(v.trim(), "debug" | "verbose"))
}

pub fn set_verbose(on: bool) {
    VERBOSE.store(on, Ordering::Relaxed);
}

pub fn verbose() -> bool {
    VERBOSE.load(Ordering::Relaxed)
}

/// One line on the log.
/// A line longer than [`MAX_LINE`] is cut (see [`capped`]); one write, so lines from
/// several threads never interleave.
pub fn info(message: &str) {
    let stamp = crate::time::rfc3339(std::time::SystemTime::now());
    let mut text = format!("{stamp} terminalfs: ");
    for (n, line) in message.split('\n').enumerate() {
        if n > 0 {
            text.push('\n');
        }
        text.push_str(&cut(line, MAX_LINE));
    }
    text.push('\n');
    let mut file = FILE.lock();
    // A closed stderr loses the line, never the driver.
    let _ = std::io::stderr().write_all(text.as_bytes());
    if let Some(log) = file.as_mut() {
        count(log, text.len() as u64);
    }
}

/// One line on the log in verbose mode; the message is built only then.
pub fn debug(message: impl FnOnce() -> String) {
    if verbose() {
        info(&message());
    }
}

/// Bytes of a payload (a command's text, keys, stdin) kept in a log line; the rest is
/// named by its length and hash, as the audit log names a long command.
pub const MAX_PAYLOAD: usize = 256;
/// Bytes of one line of the log past which it is cut the same way, whatever wrote it.
pub const MAX_LINE: usize = 4096;

/// `text` as a log line shows it: whole when short, else its first [`MAX_PAYLOAD`]
/// bytes, its length and its SHA-256.
pub fn capped(text: &str) -> String {
    cut(text, MAX_PAYLOAD)
}

fn cut(text: &str, keep: usize) -> String {
    if text.len() <= keep {
        return text.to_string();
    }
    let mut end = keep;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}… ({} bytes in all, sha256 {:x})",
        &text[..end],
        text.len(),
        Sha256::digest(text.as_bytes())
    )
}

/// The `--log-file` of a daemon: its path, for rotation, and how much it holds.
struct LogFile {
    path: PathBuf,
    size: u64,
    rotate_at: u64,
}

static FILE: Mutex<Option<LogFile>> = Mutex::new(None);

/// Size past which the `--log-file` is rotated, as the audit log is.
pub const ROTATE_AT: u64 = crate::policy::audit::ROTATE_AT;

/// Opens the `--log-file` at `path` (see [`crate::owned::open`]: no symbolic link,
/// the user's own, mode 0600) and rotates it from now on as the audit log is rotated.
/// The daemon's stdout and stderr are the file returned.
pub fn open_file(path: &Path) -> Result<File, OwnedError> {
    let file = crate::owned::open(path, "log file", Access::Append)?;
    let size = file.metadata().map_or(0, |m| m.len());
    *FILE.lock() = Some(LogFile {
        path: path.to_path_buf(),
        size,
        rotate_at: rotate_at(),
    });
    Ok(file)
}

/// [`ROTATE_AT`], or in a build with debug assertions what
/// `TERMINALFS_TEST_LOG_ROTATE_AT` says (a test's way to a rotation).
fn rotate_at() -> u64 {
    #[cfg(debug_assertions)]
    if let Some(bytes) = std::env::var("TERMINALFS_TEST_LOG_ROTATE_AT")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return bytes;
    }
    ROTATE_AT
}

/// Counts `written` bytes into the log file and rotates it when it is full: the file
/// becomes `.1` (older ones shift up, the oldest of [`KEEP_ROTATED`] dropped) and a new
/// one takes its place as stdout and stderr.
fn count(log: &mut LogFile, written: u64) {
    log.size += written;
    if log.size < log.rotate_at {
        return;
    }
    let numbered = |n: u32| {
        let mut name = log.path.as_os_str().to_owned();
        name.push(format!(".{n}"));
        PathBuf::from(name)
    };
    for n in (1..KEEP_ROTATED).rev() {
        let _ = std::fs::rename(numbered(n), numbered(n + 1));
    }
    let fresh = std::fs::rename(&log.path, numbered(1))
        .map_err(|e| e.to_string())
        .and_then(|()| {
            crate::owned::open(&log.path, "log file", Access::Append).map_err(|e| e.to_string())
        });
    match fresh {
        Ok(file) => {
            for target in [libc::STDOUT_FILENO, libc::STDERR_FILENO] {
                // SAFETY: dup2 of a descriptor this function owns onto stdout/stderr.
                unsafe { libc::dup2(file.as_raw_fd(), target) };
            }
            log.size = 0;
        }
        Err(why) => {
            // Tried again only after as much more again.
            log.size = 0;
            let _ = writeln!(
                std::io::stderr(),
                "{} terminalfs: cannot rotate the log file {}: {why}",
                crate::time::rfc3339(std::time::SystemTime::now()),
                log.path.display()
            );
        }
    }
}
