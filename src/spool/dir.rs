//! Where the state directory is and whether it may be used: made private if missing,
//! refused when another user owns it or others may reach it, locked before anything
//! in it is read or written.

use super::*;

/// The default state directory of a mount: `$XDG_STATE_HOME/terminalfs/<tag of path>`.
pub fn default_dir(mount: &Path) -> PathBuf {
    crate::paths::xdg_dir("XDG_STATE_HOME", ".local/state")
        .join("terminalfs")
        .join(crate::paths::tag_for(mount))
}

/// Creates `dir` (0700) if missing, refuses one that another user owns, that others
/// may read or enter, that cannot be written or that another driver uses, and takes
/// its lock (see [`lock`]) before anything in it is read or written. The error is a
/// sentence naming it.
pub fn prepare_dir(dir: &Path) -> Result<StateLock, String> {
    let shown = dir.display();
    if let Some(parent) = dir.parent() {
        if !parent.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .map_err(|e| format!("cannot create the state directory {shown}: {e}"))?;
        }
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("cannot create the state directory {shown}: {e}")),
    }
    let meta = std::fs::metadata(dir)
        .map_err(|e| format!("cannot read the state directory {shown}: {e}"))?;
    if !meta.is_dir() {
        return Err(format!("the state directory {shown} is not a directory"));
    }
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(format!(
            "the state directory {shown} belongs to user {} (this driver runs as {me}); \
             give it its own directory",
            meta.uid()
        ));
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "the state directory {shown} can be read by others (mode {mode:o}); \
             run `chmod 700 {shown}` or choose another --state-dir"
        ));
    }
    let lock = lock::lock(dir)?;
    let probe = dir.join(format!(".probe-{}", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&probe)
        .map_err(|e| format!("cannot write in the state directory {shown}: {e}"))?;
    let _ = std::fs::remove_file(&probe);
    Ok(lock)
}
