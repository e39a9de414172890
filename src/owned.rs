//! The driver's own files outside the state directory (the log file, the audit log, the
//! pid file): opened without following a symbolic link at their own name, refused
//! unless owned by the user the driver runs as, and made private (mode 0600). A path
//! that names a symbolic link is refused with a sentence naming it: a link there could
//! turn the driver's writes (and its `chmod`) against a file it was never meant to
//! touch.

use std::fs::File;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Why one of the driver's own files cannot be used.
#[derive(Debug)]
pub enum OwnedError {
    /// The path names a symbolic link.
    Symlink { what: &'static str, path: PathBuf },
    /// The file belongs to another user.
    NotOwned {
        what: &'static str,
        path: PathBuf,
        owner: u32,
    },
    /// The system refused an operation on it.
    Io {
        what: &'static str,
        path: PathBuf,
        doing: &'static str,
        error: std::io::Error,
    },
}

impl std::fmt::Display for OwnedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OwnedError::Symlink { what, path } => write!(
                f,
                "the {what} {} is a symbolic link, which is refused: name the file itself",
                path.display()
            ),
            OwnedError::NotOwned { what, path, owner } => write!(
                f,
                "the {what} {} belongs to user {owner}, not to the user running terminalfs; \
                 name a file of your own",
                path.display()
            ),
            OwnedError::Io {
                what,
                path,
                doing,
                error,
            } => write!(f, "cannot {doing} the {what} {}: {error}", path.display()),
        }
    }
}

impl std::error::Error for OwnedError {}

/// How a file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Appended to (logs).
    Append,
    /// Read and written in place (the pid file).
    ReadWrite,
}

/// Opens (creating it with mode 0600) the driver's file at `path`, `what` naming it
/// in errors: a symbolic link or a file of another user is refused, and a file of the
/// user's that others may read or write is made private. Close-on-exec, as every file
/// std opens.
pub fn open(path: &Path, what: &'static str, access: Access) -> Result<File, OwnedError> {
    let mut options = std::fs::OpenOptions::new();
    match access {
        Access::Append => options.append(true),
        Access::ReadWrite => options.read(true).write(true),
    };
    let io = |doing: &'static str, error: std::io::Error| OwnedError::Io {
        what,
        path: path.to_path_buf(),
        doing,
        error,
    };
    let file = options
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|error| {
            // O_NOFOLLOW fails with ELOOP when the last component is a link.
            if error.raw_os_error() == Some(libc::ELOOP) && is_symlink(path) {
                OwnedError::Symlink {
                    what,
                    path: path.to_path_buf(),
                }
            } else {
                io("open", error)
            }
        })?;
    let meta = file.metadata().map_err(|e| io("look at", e))?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(OwnedError::NotOwned {
            what,
            path: path.to_path_buf(),
            owner: meta.uid(),
        });
    }
    if meta.mode() & 0o077 != 0 {
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(|e| io("make private", e))?;
    }
    Ok(file)
}

/// Whether `path` itself is a symbolic link.
pub fn is_symlink(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symlink_is_refused_and_a_new_file_is_private() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let target = dir.path().join("target");
        std::fs::write(&target, "kept\n").expect("a file");
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).expect("a link");
        let refused = open(&link, "log file", Access::Append).expect_err("a link is refused");
        assert!(matches!(refused, OwnedError::Symlink { .. }), "{refused}");
        assert!(refused.to_string().contains(&*link.to_string_lossy()));
        let meta = std::fs::metadata(&target).expect("the target");
        assert_eq!(meta.mode() & 0o777, 0o644, "the target is untouched");
        assert_eq!(std::fs::read_to_string(&target).expect("read"), "kept\n");

        let fresh = dir.path().join("fresh");
        open(&fresh, "log file", Access::Append).expect("a new file");
        let mode = std::fs::metadata(&fresh).expect("made").mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
}
