//! `terminalfs --unmount` and the lazy unmount the driver itself falls back on: the
//! mount found and detached, its driver given time to exit and let go of the state
//! directory's lock, and what a crashed driver left running reaped.

#[cfg(not(target_os = "linux"))]
use super::mount_point::{mount_state, MountState};
use super::AppError;
use std::path::Path;
use std::time::{Duration, Instant};

/// What `terminalfs --unmount` found and did, in a sentence for the user.
#[derive(Debug)]
pub enum Unmounted {
    /// A mount was there and is gone, and its driver has exited.
    Done(String),
    /// Nothing was mounted there (exit status [`NOTHING_MOUNTED`]).
    Nothing(String),
}

/// The exit status of `--unmount` when nothing was mounted, as `umount` has it.
pub const NOTHING_MOUNTED: i32 = 32;

/// `terminalfs --unmount`: unmounts whatever is at `path` (a live driver then stops
/// its commands itself; a crashed one's leftovers are reaped here). On Linux, a FUSE
/// mount's connection is then given `patience` to end (its driver answers what waits,
/// stops its commands and exits) and is aborted if it has not, or at once with
/// `force`. Then it waits (for `patience` more at most) until no driver holds the lock
/// of `state_dir` (the default one for `path` when None): a driver lets go of it last,
/// after its pid file is gone, so a mount started next finds everything free. Safe to
/// call when nothing is mounted.
pub fn clean_up(
    path: &Path,
    state_dir: Option<&Path>,
    force: bool,
    patience: Duration,
) -> Result<Unmounted, AppError> {
    #[cfg(target_os = "linux")]
    let message = unmount(path, force, patience)?;
    #[cfg(not(target_os = "linux"))]
    let message = {
        // macOS unmounts with force always, and has no fusectl to watch.
        let _ = (force, patience);
        if unmount(path)? {
            Some(format!("unmounted {}", path.display()))
        } else {
            None
        }
    };
    let Some(mut message) = message else {
        let mut message = format!("nothing was mounted at {}", path.display());
        reap_leftovers(path, &mut message);
        return Ok(Unmounted::Nothing(message));
    };
    let state_dir = state_dir.map_or_else(|| crate::spool::default_dir(path), Path::to_path_buf);
    if !driver_gone(&state_dir, patience) {
        message.push_str(&format!(
            "; its driver still held {} {} s later, so a new mount there may be refused \
             until it exits",
            state_dir.join(crate::spool::LOCK_FILE).display(),
            patience.as_secs_f32()
        ));
    }
    reap_leftovers(path, &mut message);
    Ok(Unmounted::Done(message))
}

/// Whether the driver of `state_dir` has exited (or none was there) within `limit`:
/// its lock can be taken (and is let go of at once), and the process whose pid the
/// lock holds has ended (it lets go of the lock just before it exits).
pub(super) fn driver_gone(state_dir: &Path, limit: Duration) -> bool {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let Ok(mut lock) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(state_dir.join(crate::spool::LOCK_FILE))
    else {
        return true;
    };
    let mut text = String::new();
    let _ = lock.read_to_string(&mut text);
    let pid: Option<libc::pid_t> = text.trim().parse().ok();
    within(limit, || {
        // SAFETY: flock on a descriptor this function owns; closing it lets go.
        let free = unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) } == 0;
        free && pid.is_none_or(|pid| !running(pid))
    })
}

/// Whether process `pid` runs (a zombie has exited).
pub(super) fn running(pid: libc::pid_t) -> bool {
    #[cfg(target_os = "linux")]
    {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            // The state follows the command name, which ends at the last ')'.
            Ok(stat) => stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
            Err(_) => false,
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        // SAFETY: signal 0 only asks whether the process exists.
        unsafe { libc::kill(pid, 0) == 0 }
    }
}

/// Stops what a driver that no longer runs left in its cgroups, and says so.
pub(super) fn reap_leftovers(path: &Path, message: &mut String) {
    // Only drivers that no longer run lose what is left in their cgroups.
    let reaped =
        crate::supervisor::cgroup::reap_leftovers(&crate::supervisor::cgroup::tag_for(path));
    if reaped > 0 {
        message.push_str(&format!(
            "; stopped {reaped} process(es) a crashed driver left running"
        ));
    }
}

/// Polls `done` every 20 ms for up to `limit`; whether it held.
pub(super) fn within(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The Linux `--unmount`. Nothing here looks at the mount point itself (a `stat` is a
/// request to its driver, and one that does not answer would keep this process
/// waiting for ever): the mount is found in the kernel's list, detached lazily (which
/// asks the driver nothing), and watched through its connection in fusectl.
#[cfg(target_os = "linux")]
pub(super) fn unmount(
    path: &Path,
    force: bool,
    patience: Duration,
) -> Result<Option<String>, AppError> {
    use crate::mounts::{find, listed_name, read_list, Connection};
    let listed = listed_name(path);
    let shown = path.display();
    let Some(entry) = find(&read_list(), &listed) else {
        return Ok(None);
    };
    // Opened while the list shows the mount, before and after: the number is then this
    // mount's (one is reused only once its mount is gone), and the held directory stays
    // this connection's.
    let connection = if entry.is_fuse() {
        Connection::open(entry.device)
            .map_err(|e| e.to_string())
            .and_then(|connection| match find(&read_list(), &listed) {
                Some(now) if now.device == entry.device => Ok(connection),
                _ => Err("the mount changed while it was looked up".to_string()),
            })
    } else {
        Err(format!("it is no FUSE mount but {}", entry.fstype))
    };
    // Forced, the connection is aborted before the mount is detached: whatever waits
    // on it gets its error at once, and the driver finds its connection aborted rather
    // than its mount gone (which it could see first, between a detach and an abort,
    // and stop as if unmounted). A failure here is met again below.
    if let (true, Ok(connection)) = (force, &connection) {
        let _ = connection.abort();
    }
    detach(&listed)?;
    if !within(Duration::from_secs(5), || {
        find(&read_list(), &listed).is_none()
    }) {
        return Err(AppError::StillMounted {
            path: path.to_path_buf(),
        });
    }
    let mut message = format!("unmounted {shown}");
    let connection = match connection {
        Ok(connection) => connection,
        Err(why) if entry.is_fuse() => {
            message.push_str(&format!(
                "; its FUSE connection cannot be watched or aborted ({why}): if its driver \
                 does not answer, abort it as root with `echo 1 > {}/{}/abort`",
                crate::mounts::FUSECTL,
                entry.device
            ));
            return if force {
                Err(AppError::NotAborted {
                    done: message,
                    error: None,
                })
            } else {
                Ok(Some(message))
            };
        }
        Err(_) => return Ok(Some(message)),
    };
    if connection.mounted_fusectl {
        message.push_str(&format!("; mounted fusectl at {}", crate::mounts::FUSECTL));
    }
    if !force && within(patience, || connection.gone()) {
        return Ok(Some(message));
    }
    if let Err(error) = connection.abort() {
        return Err(AppError::NotAborted {
            done: message,
            error: Some(error),
        });
    }
    let file = connection.abort_path();
    if force {
        message.push_str(&format!(
            "; aborted its FUSE connection ({}): whatever waited on it got an error",
            file.display()
        ));
    } else {
        message.push_str(&format!(
            "; its FUSE connection was still in use {} s later (a driver that does not \
             answer, or a process holding a file of it), so it was aborted ({}): whatever \
             waited on it got an error",
            patience.as_secs_f32(),
            file.display()
        ));
    }
    // Aborted, the driver is done with it at once; what lasts is only the files other
    // processes hold (their reads fail), which nothing here can close, so this only
    // looks whether any are left to say so.
    if !within(Duration::from_secs(1), || connection.gone()) {
        message.push_str("; files still open on it fail until they are closed");
    }
    Ok(Some(message))
}

/// Unmounts whatever is at `path` (live or stale). Returns whether anything was there.
/// Safe to call when nothing is mounted.
#[cfg(not(target_os = "linux"))]
pub(super) fn unmount(path: &Path) -> Result<bool, AppError> {
    if mount_state(path) == MountState::NotMounted {
        return Ok(false);
    }
    detach(path)?;
    if !within(Duration::from_secs(5), || {
        mount_state(path) == MountState::NotMounted
    }) {
        return Err(AppError::StillMounted {
            path: path.to_path_buf(),
        });
    }
    Ok(true)
}

/// A lazy unmount: the tree leaves the namespace now, open files finish later.
pub(super) fn detach(path: &Path) -> Result<(), AppError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| {
            AppError::NulInPath {
                path: path.to_path_buf(),
            }
        })?;
        #[cfg(target_os = "linux")]
        // SAFETY: a valid C string and a flag.
        let rc = unsafe { libc::umount2(c_path.as_ptr(), libc::MNT_DETACH) };
        #[cfg(not(target_os = "linux"))]
        // SAFETY: a valid C string and a flag.
        let rc = unsafe { libc::unmount(c_path.as_ptr(), libc::MNT_FORCE) };
        if rc == 0 {
            return Ok(());
        }
        return Err(AppError::Unmount {
            path: path.to_path_buf(),
            why: std::io::Error::last_os_error().to_string(),
        });
    }
    let attempts: &[(&str, &[&str])] = if cfg!(target_os = "linux") {
        &[
            ("fusermount3", &["-u", "-z"]),
            ("fusermount", &["-u", "-z"]),
        ]
    } else {
        &[("umount", &["-f"]), ("diskutil", &["unmount", "force"])]
    };
    let mut last = String::from("no unmount tool was found");
    for (program, args) in attempts {
        match std::process::Command::new(program)
            .args(*args)
            .arg(path)
            .output()
        {
            Ok(out) if out.status.success() => return Ok(()),
            Ok(out) => last = String::from_utf8_lossy(&out.stderr).trim().to_string(),
            Err(e) => last = format!("{program}: {e}"),
        }
    }
    Err(AppError::Unmount {
        path: path.to_path_buf(),
        why: last,
    })
}
