//! Why the driver could not start, mount, unmount or serve on: one variant per cause,
//! with the path or the errno it concerns. Its text is the sentence `main` prints once
//! after `terminalfs: ` (and a daemon hands to the parent waiting for it).

use crate::mounts::ConnectionError;
use crate::owned::OwnedError;
use std::path::PathBuf;

#[derive(Debug)]
pub enum AppError {
    /// No settings file where one is looked for.
    NoSettings { path: PathBuf },
    /// The settings file cannot be used.
    Settings(crate::policy::SettingsError),
    /// `--cwd` names no directory.
    CwdNotADirectory { path: PathBuf },
    /// Another driver serves the mount point.
    LiveMount { path: PathBuf },
    /// The mount point holds files that a mount would hide.
    NotEmpty { path: PathBuf },
    /// `--path` names something other than a directory.
    NotADirectory { path: PathBuf },
    /// The mount point cannot be created or read.
    MountPoint {
        path: PathBuf,
        doing: &'static str,
        error: std::io::Error,
    },
    /// The kernel or fusermount3 refused the mount.
    Mount {
        path: PathBuf,
        error: std::io::Error,
    },
    /// A path with a NUL byte cannot be given to the system.
    NulInPath { path: PathBuf },
    /// Unmounting was refused (the system's errno, or the unmount tool's words).
    Unmount { path: PathBuf, why: String },
    /// Still listed as mounted after unmounting it.
    StillMounted { path: PathBuf },
    /// `--unmount` detached the mount but could not abort its connection: what was
    /// done, then why not (None: fusectl cannot show it at all).
    NotAborted {
        done: String,
        error: Option<ConnectionError>,
    },
    /// The `--pid-file` is locked by a running driver (its pid, when readable).
    PidFileHeld { path: PathBuf, holder: Option<u32> },
    /// The `--pid-file` cannot be locked.
    PidFileLock {
        path: PathBuf,
        error: std::io::Error,
    },
    /// One of the driver's own files (log, audit log, pid file) is refused.
    Owned(OwnedError),
    /// A part of the driver could not be started (a pipe, a thread, the spool).
    Start {
        what: &'static str,
        error: std::io::Error,
    },
    /// The background driver could not be forked off (the daemonize crate's words).
    Detach(String),
    /// The background driver stopped before it was ready and said why.
    Background(String),
    /// The background driver stopped before it was ready without a word.
    BackgroundSilent { log_file: Option<PathBuf> },
    /// The state directory cannot be used.
    StateDir(crate::spool::SpoolError),
    /// The audit log cannot be opened.
    Audit(crate::policy::audit::AuditError),
    /// A panic stopped the driver (see `crate::panics`).
    Panicked(&'static str),
    /// `--host` names no host, or the connections to hosts cannot be set up.
    Hosts(String),
}

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AppError::NoSettings { path } => write!(
                f,
                "no settings file at {}. Create one with `terminalfs --init-settings` (or \
                 `terminalfs --init-settings FILE` and pass --settings FILE); it holds the \
                 deny list, and `{{}}` is a valid empty one",
                path.display()
            ),
            AppError::Settings(error) => error.fmt(f),
            AppError::StateDir(error) => error.fmt(f),
            AppError::Hosts(why) => f.write_str(why),
            AppError::Audit(error) => error.fmt(f),
            AppError::CwdNotADirectory { path } => {
                write!(f, "--cwd {} is not a directory", path.display())
            }
            AppError::LiveMount { path } => write!(
                f,
                "{} is already mounted; stop that driver or run `terminalfs --unmount \
                 --path {}`",
                path.display(),
                path.display()
            ),
            AppError::NotEmpty { path } => write!(
                f,
                "{} is not empty: mounting there would hide its files; choose an empty or \
                 new directory with --path",
                path.display()
            ),
            AppError::NotADirectory { path } => write!(
                f,
                "--path {} is not a directory; name a directory to mount on",
                path.display()
            ),
            AppError::MountPoint { path, doing, error } => {
                write!(
                    f,
                    "cannot {doing} the mount point {}: {error}",
                    path.display()
                )
            }
            AppError::Mount { path, error } => {
                write!(f, "cannot mount at {}: {error}", path.display())?;
                if error.kind() == std::io::ErrorKind::PermissionDenied {
                    f.write_str(
                        "; a user other than root needs /dev/fuse readable and writable \
                         (mode 0666, as Debian's udev rule sets it) and fusermount3 \
                         installed (package fuse3), and must own the mount point",
                    )?;
                }
                Ok(())
            }
            AppError::NulInPath { path } => {
                write!(f, "{} contains a NUL byte", path.display())
            }
            AppError::Unmount { path, why } => {
                write!(f, "cannot unmount {}: {why}", path.display())
            }
            AppError::StillMounted { path } => {
                write!(f, "{} is still mounted after unmounting it", path.display())
            }
            AppError::NotAborted { done, error } => match error {
                Some(error) => write!(f, "{done}; {error}"),
                None => f.write_str(done),
            },
            AppError::PidFileHeld { path, holder } => write!(
                f,
                "the pid file {} is held by a running terminalfs driver{}: stop it with \
                 `terminalfs --unmount` or give this one another --pid-file",
                path.display(),
                holder.map_or(String::new(), |pid| format!(" (pid {pid})"))
            ),
            AppError::PidFileLock { path, error } => {
                write!(f, "cannot lock the pid file {}: {error}", path.display())
            }
            AppError::Owned(error) => error.fmt(f),
            AppError::Start { what, error } => write!(f, "cannot start {what}: {error}"),
            AppError::Detach(why) => {
                write!(f, "cannot start the driver in the background ({why})")
            }
            AppError::Background(why) => f.write_str(why),
            AppError::BackgroundSilent { log_file } => match log_file {
                Some(path) => write!(
                    f,
                    "the background driver stopped before its mount was ready; its log \
                     file {} says why",
                    path.display()
                ),
                None => f.write_str(
                    "the background driver stopped before its mount was ready; run without \
                     --daemon, or with --log-file, to see why",
                ),
            },
            AppError::Panicked(why) => write!(
                f,
                "the driver stopped after an internal error ({why}); its log has the panic"
            ),
        }
    }
}

impl std::error::Error for AppError {}

impl From<OwnedError> for AppError {
    fn from(error: OwnedError) -> AppError {
        AppError::Owned(error)
    }
}
