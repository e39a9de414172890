//! The driver's log: one line per event, stamped with the time, on stderr (the log
//! file under `--daemon`). Failed file operations are logged only in verbose mode
//! (`--verbose`, or `TERMINALFS_LOG=debug` in the environment): a shell completing a
//! path makes many lookups that fail, and each is worth a line only when asked for.

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
pub fn info(message: &str) {
    let stamp = crate::time::rfc3339(std::time::SystemTime::now());
    eprintln!("{stamp} terminalfs: {message}");
}

/// One line on the log in verbose mode; the message is built only then.
pub fn debug(message: impl FnOnce() -> String) {
    if verbose() {
        info(&message());
    }
}
