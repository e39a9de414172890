//! Where the state directory is and whether it may be used: made private if missing,
//! refused when another user owns it or others may reach it, locked before anything
//! in it is read or written.

use super::*;
use std::os::fd::AsRawFd;

/// The default state directory of a mount: `$XDG_STATE_HOME/terminalfs/<tag of path>`.
pub fn default_dir(mount: &Path) -> PathBuf {
    crate::paths::xdg_dir("XDG_STATE_HOME", ".local/state")
        .join("terminalfs")
        .join(crate::paths::tag_for(mount))
}

/// Creates `dir` (0700) if missing, refuses one that is a symbolic link, that another
/// user owns, that others may read, write or enter, that cannot be written or that
/// another driver uses, and takes its lock (see [`lock`]) before anything in it is read
/// or written. The directory is opened without following a link, checked through that
/// descriptor, and the lock and the probe are opened from it. The error is a sentence
/// naming it.
pub fn prepare_dir(dir: &Path) -> Result<StateLock, SpoolError> {
    let shown = dir.display();
    if let Some(parent) = dir.parent() {
        if !parent.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .map_err(|e| {
                    SpoolError::io(format!("cannot create the state directory {shown}"), e)
                })?;
        }
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            return Err(SpoolError::io(
                format!("cannot create the state directory {shown}"),
                e,
            ))
        }
    }
    let handle = open_dir(dir)?;
    let meta = handle
        .metadata()
        .map_err(|e| SpoolError::io(format!("cannot read the state directory {shown}"), e))?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(SpoolError::Refused(format!(
            "the state directory {shown} belongs to user {} (this driver runs as {me}); \
             give it its own directory",
            meta.uid()
        )));
    }
    let mode = meta.permissions().mode() & 0o7777;
    if let Some(reach) = others_may(mode) {
        return Err(SpoolError::Refused(format!(
            "the state directory {shown} can be {reach} by others (mode {mode:o}); \
             run `chmod 700 {shown}` or choose another --state-dir"
        )));
    }
    let lock = lock::lock(dir, &handle)?;
    let probe = format!(".probe-{}", std::process::id());
    let probe_c = std::ffi::CString::new(probe.as_str()).expect("no NUL in the name");
    // SAFETY: openat on a directory descriptor we hold, with a NUL-terminated name; the
    // descriptor it returns is closed at once.
    let made = unsafe {
        let fd = libc::openat(
            handle.as_raw_fd(),
            probe_c.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            0o600 as libc::c_uint,
        );
        if fd >= 0 {
            libc::close(fd);
        }
        fd >= 0
    };
    if !made {
        let e = std::io::Error::last_os_error();
        return Err(SpoolError::io(
            format!("cannot write in the state directory {shown}"),
            e,
        ));
    }
    // SAFETY: unlinkat of the name just made, in the directory we hold.
    unsafe {
        libc::unlinkat(handle.as_raw_fd(), probe_c.as_ptr(), 0);
    }
    Ok(lock)
}

/// Opens the state directory itself, never what a symbolic link in its place names.
fn open_dir(dir: &Path) -> Result<std::fs::File, SpoolError> {
    let shown = dir.display();
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
        .open(dir);
    match opened {
        Ok(handle) => Ok(handle),
        Err(_) if std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) => {
            Err(SpoolError::Refused(format!(
                "the state directory {shown} is a symbolic link; give the directory it \
                 names as --state-dir, or another one"
            )))
        }
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => Err(SpoolError::Refused(format!(
            "the state directory {shown} is not a directory"
        ))),
        Err(e) => Err(SpoolError::io(
            format!("cannot open the state directory {shown}"),
            e,
        )),
    }
}

/// What others may do in a directory of mode `mode`, as words ("read", "written and
/// entered"); None when they may do nothing.
fn others_may(mode: u32) -> Option<String> {
    let words: Vec<&str> = [(0o044, "read"), (0o022, "written"), (0o011, "entered")]
        .into_iter()
        .filter(|(bits, _)| mode & bits != 0)
        .map(|(_, word)| word)
        .collect();
    match words.as_slice() {
        [] => None,
        [one] => Some(one.to_string()),
        [first @ .., last] => Some(format!("{} and {last}", first.join(", "))),
    }
}

#[cfg(test)]
mod tests {
    use super::others_may;

    #[test]
    fn the_refusal_says_what_others_may_do() {
        assert_eq!(others_may(0o700), None);
        assert_eq!(others_may(0o1700), None);
        assert_eq!(others_may(0o730).as_deref(), Some("written and entered"));
        assert_eq!(others_may(0o720).as_deref(), Some("written"));
        assert_eq!(others_may(0o702).as_deref(), Some("written"));
        assert_eq!(others_may(0o750).as_deref(), Some("read and entered"));
        assert_eq!(
            others_may(0o1777).as_deref(),
            Some("read, written and entered")
        );
    }
}
