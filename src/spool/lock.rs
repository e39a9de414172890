//! One driver per state directory: the driver holds an exclusive `flock` on
//! `<state dir>/lock` for its whole life, and writes its pid into it. The kernel lets go
//! of the lock with the process, so a driver that crashed leaves none behind.

use super::SpoolError;
use std::io::{Read, Seek, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

pub const LOCK_FILE: &str = "lock";

/// The state directory's lock, held until dropped (or the process ends).
#[derive(Debug)]
#[must_use = "the state directory is only reserved while its lock is kept"]
pub struct StateLock {
    _file: std::fs::File,
}

/// Takes the lock of the state directory `dir`, opened as `handle`, without waiting.
/// The lock file is opened from that descriptor without following a symbolic link,
/// and must be a regular file of this user's. A directory another driver holds is
/// refused with a sentence naming it and, when it can be read, that driver's pid;
/// nothing in the directory is changed then.
pub fn lock(dir: &Path, handle: &std::fs::File) -> Result<StateLock, SpoolError> {
    let shown = dir.display();
    let path = dir.join(LOCK_FILE);
    let name = std::ffi::CString::new(LOCK_FILE).expect("no NUL in the name");
    // Close-on-exec: a command must not keep the lock alive after its driver is gone.
    // SAFETY: openat on a directory descriptor we hold, with a NUL-terminated name.
    let fd = unsafe {
        libc::openat(
            handle.as_raw_fd(),
            name.as_ptr(),
            libc::O_RDWR | libc::O_CREAT | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            0o600 as libc::c_uint,
        )
    };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        return Err(if e.raw_os_error() == Some(libc::ELOOP) {
            SpoolError::Refused(format!(
                "the lock {} in the state directory is a symbolic link; remove it \
                 (terminalfs makes its own)",
                path.display()
            ))
        } else if e.raw_os_error() == Some(libc::EISDIR) {
            not_a_lock(&path)
        } else {
            SpoolError::io(format!("cannot write in the state directory {shown}"), e)
        });
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    let mut file = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    let meta = file
        .metadata()
        .map_err(|e| SpoolError::io(format!("cannot read the lock {}", path.display()), e))?;
    // SAFETY: geteuid has no preconditions.
    if !meta.is_file() || meta.uid() != unsafe { libc::geteuid() } {
        return Err(not_a_lock(&path));
    }
    // SAFETY: flock on a descriptor this function owns.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
            return Err(SpoolError::io(
                format!("cannot lock the state directory {shown}"),
                e,
            ));
        }
        let mut text = String::new();
        let _ = file.read_to_string(&mut text);
        let holder = match text.trim().parse::<u32>() {
            Ok(pid) => format!("another terminalfs driver (pid {pid})"),
            Err(_) => "another terminalfs driver".to_string(),
        };
        return Err(SpoolError::Refused(format!(
            "the state directory {shown} is in use by {holder}; stop that driver \
             or give this one its own --state-dir"
        )));
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

/// The refusal of a `lock` that is not a regular file of this user's.
fn not_a_lock(path: &Path) -> SpoolError {
    SpoolError::Refused(format!(
        "the lock {} is not a file of this user's; remove it (terminalfs makes its own)",
        path.display()
    ))
}
