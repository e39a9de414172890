//! One driver per state directory: the driver holds an exclusive `flock` on
//! `<state dir>/lock` for its whole life, and writes its pid into it. The kernel lets go
//! of the lock with the process, so a driver that crashed leaves none behind.

use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

pub const LOCK_FILE: &str = "lock";

/// The state directory's lock, held until dropped (or the process ends).
#[derive(Debug)]
#[must_use = "the state directory is only reserved while its lock is kept"]
pub struct StateLock {
    _file: std::fs::File,
}

/// Takes the lock of the state directory `dir` (which must exist), without waiting. A
/// directory another driver holds is refused with a sentence naming it and, when it
/// can be read, that driver's pid; nothing in the directory is changed then.
pub fn lock(dir: &Path) -> Result<StateLock, String> {
    let path = dir.join(LOCK_FILE);
    let shown = dir.display();
    // Close-on-exec (as every file std opens): a command must not keep the lock alive
    // after its driver is gone.
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&path)
        .map_err(|e| format!("cannot write in the state directory {shown}: {e}"))?;
    // SAFETY: flock on a descriptor this function owns.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
            return Err(format!("cannot lock the state directory {shown}: {e}"));
        }
        let mut text = String::new();
        let _ = file.read_to_string(&mut text);
        let holder = match text.trim().parse::<u32>() {
            Ok(pid) => format!("another terminalfs driver (pid {pid})"),
            Err(_) => "another terminalfs driver".to_string(),
        };
        return Err(format!(
            "the state directory {shown} is in use by {holder}; stop that driver \
             or give this one its own --state-dir"
        ));
    }
    // Written over the old pid rather than after truncating it, so a full disk (no
    // room for a new block) still takes it; the pid is a help, not a need.
    let pid = format!("{}\n", std::process::id());
    let _ = file
        .rewind()
        .and_then(|()| file.write_all(pid.as_bytes()))
        .and_then(|()| file.set_len(pid.len() as u64));
    Ok(StateLock { _file: file })
}
