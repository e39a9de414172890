//! The mount point before a mount: what is there now (nothing, a live mount, a stale
//! one whose driver is gone), a stale one cleaned away, and an empty directory made
//! ready; and, while serving, whether the driver's own mount has been detached.

use super::unmount::detach;
use super::AppError;
use crate::log::info as log;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// What is at a mount point now.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum MountState {
    NotMounted,
    /// A mount whose driver is gone ("Transport endpoint is not connected").
    Stale,
    Live,
}

pub(super) fn mount_state(path: &Path) -> MountState {
    match std::fs::metadata(path) {
        Err(e) if e.raw_os_error() == Some(libc::ENOTCONN) => MountState::Stale,
        Err(_) => MountState::NotMounted,
        Ok(meta) => {
            let parent = path.parent().unwrap_or(Path::new("/"));
            match std::fs::metadata(parent) {
                Ok(parent_meta) if parent_meta.dev() != meta.dev() => MountState::Live,
                _ => MountState::NotMounted,
            }
        }
    }
}

/// Whether the driver's own mount has been detached (a lazy unmount). On Linux this is
/// read from the kernel's list of mounts, never from the mount itself: a look at the
/// path is a request this driver must answer, and a SIGKILL that lands while one of its
/// own request threads holds it leaves the looking thread waiting for an answer no one
/// will give, so the driver never exits. (macOS has no such list to read.) Only a
/// mount point `seen` in the list before counts as detached once it is missing: one the
/// list spells otherwise never stops the driver this way (the session's end still does).
pub(super) fn detached(path: &Path, mount_point: &Path, seen: &mut bool) -> bool {
    #[cfg(target_os = "linux")]
    {
        let _ = path;
        let listed = crate::mounts::find(&crate::mounts::read_list(), mount_point).is_some();
        let gone = *seen && !listed;
        *seen |= listed;
        gone
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (mount_point, seen);
        mount_state(path) == MountState::NotMounted
    }
}

/// Refuses a mount point another driver serves, changing nothing anywhere.
pub(super) fn refuse_live_mount(path: &Path) -> Result<(), AppError> {
    if mount_state(path) == MountState::Live {
        return Err(AppError::LiveMount {
            path: path.to_path_buf(),
        });
    }
    Ok(())
}

pub(super) fn prepare_mount_point(path: &Path) -> Result<(), AppError> {
    let owned = || path.to_path_buf();
    refuse_live_mount(path)?;
    if mount_state(path) == MountState::Stale {
        detach(path)?;
        log(&format!("cleaned up a stale mount at {}", path.display()));
    }
    match std::fs::read_dir(path) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(AppError::NotEmpty { path: owned() });
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(path).map_err(|error| AppError::MountPoint {
                path: owned(),
                doing: "create",
                error,
            })?;
        }
        Err(_) if path.exists() && !path.is_dir() => {
            return Err(AppError::NotADirectory { path: owned() });
        }
        Err(error) => {
            return Err(AppError::MountPoint {
                path: owned(),
                doing: "use",
                error,
            })
        }
    }
    Ok(())
}
