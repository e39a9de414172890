//! Readiness and `--daemon`: systemd's notify socket, the fork whose parent waits on a
//! close-on-exec pipe until the mount is ready or failed, and the locked pid file.

use super::AppError;
use crate::config::Config;
use crate::log::info as log;
use std::io::Write;
use std::path::Path;

/// Tells systemd (Type=notify) about our state, when it is listening.
pub(super) fn sd_notify(state: &str) {
    let Some(socket) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    let Ok(sender) = std::os::unix::net::UnixDatagram::unbound() else {
        return;
    };
    let bytes = socket.as_encoded_bytes();
    #[cfg(target_os = "linux")]
    if let Some(name) = bytes.strip_prefix(b"@") {
        use std::os::linux::net::SocketAddrExt;
        if let Ok(addr) = std::os::unix::net::SocketAddr::from_abstract_name(name) {
            let _ = sender.send_to_addr(state.as_bytes(), &addr);
        }
        return;
    }
    let _ = bytes;
    let _ = sender.send_to(state.as_bytes(), Path::new(&socket));
}

/// The pipe a daemon reports readiness on. Close-on-exec: a process the driver starts
/// (a mount helper, a command) must not hold the writer, or the waiting parent would
/// see no end of file while that process lives.
pub(super) fn readiness_pipe() -> std::io::Result<(std::fs::File, std::fs::File)> {
    let (reader, writer) = crate::supervisor::pipe()?;
    Ok((reader.into(), writer.into()))
}

/// The `--pid-file` of a daemon: locked (`flock`) for the driver's life, so a second
/// daemon naming it is refused with a sentence, and removed as the driver ends, if it
/// still names this process (one removed by hand, or written since by another daemon,
/// is left be).
pub(super) struct PidFile {
    file: std::fs::File,
    path: std::path::PathBuf,
}

impl PidFile {
    /// Opens and locks the file, before the fork: the daemon inherits the lock.
    fn lock(path: &Path) -> Result<PidFile, AppError> {
        use std::io::Read;
        use std::os::fd::AsRawFd;
        let mut file = crate::owned::open(path, "pid file", crate::owned::Access::ReadWrite)?;
        // SAFETY: flock on a descriptor this function owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let error = std::io::Error::last_os_error();
            if error.raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Err(AppError::PidFileLock {
                    path: path.to_path_buf(),
                    error,
                });
            }
            let mut text = String::new();
            let _ = file.read_to_string(&mut text);
            return Err(AppError::PidFileHeld {
                path: path.to_path_buf(),
                holder: text.trim().parse().ok(),
            });
        }
        Ok(PidFile {
            file,
            path: path.to_path_buf(),
        })
    }

    /// Writes this process's pid in it (the daemon, after the fork).
    fn write_pid(&mut self) {
        use std::io::{Seek, Write};
        let pid = format!("{}\n", std::process::id());
        let written = self
            .file
            .set_len(0)
            .and_then(|()| self.file.rewind())
            .and_then(|()| self.file.write_all(pid.as_bytes()));
        if let Err(error) = written {
            log(&format!(
                "cannot write the pid file {}: {error}",
                self.path.display()
            ));
        }
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        let ours = std::fs::read_to_string(&self.path)
            .is_ok_and(|text| text.trim() == std::process::id().to_string());
        if ours {
            if let Err(error) = std::fs::remove_file(&self.path) {
                log(&format!(
                    "cannot remove the pid file {}: {error}",
                    self.path.display()
                ));
            }
        }
    }
}

/// What a daemon keeps from its start: the writer it reports readiness on, and its
/// pid file.
pub(super) struct Detached {
    pub(super) ready: std::fs::File,
    pub(super) pid_file: Option<PidFile>,
}

/// Under --daemon: fork now; the parent returns only once the child reports that the
/// mount is ready (exit 0) or failed (exit 1). The child gets a writer to report on.
pub(super) fn daemonize(config: &Config) -> Result<Option<Detached>, AppError> {
    if !config.daemon {
        return Ok(None);
    }
    let pid_file = config.pid_file.as_deref().map(PidFile::lock).transpose()?;
    let (mut reader, writer) = readiness_pipe().map_err(|error| AppError::Start {
        what: "the readiness pipe",
        error,
    })?;
    let mut daemon = daemonize::Daemonize::new().working_directory("/");
    if let Some(path) = &config.log_file {
        let file = crate::log::open_file(path)?;
        let copy = file.try_clone().map_err(|error| AppError::Start {
            what: "the log file",
            error,
        })?;
        daemon = daemon
            .stdout(daemonize::Stdio::from(file))
            .stderr(daemonize::Stdio::from(copy));
    }
    match daemon.execute() {
        daemonize::Outcome::Parent(Ok(_)) => {
            drop(writer);
            let mut answer = String::new();
            use std::io::Read;
            let _ = reader.read_to_string(&mut answer);
            if answer.starts_with("ready") {
                println!(
                    "terminalfs: mounted at {} (running in the background)",
                    config.path.display()
                );
                std::process::exit(0);
            }
            let why = answer.trim();
            Err(if why.is_empty() {
                AppError::BackgroundSilent {
                    log_file: config.log_file.clone(),
                }
            } else {
                AppError::Background(why.to_string())
            })
        }
        daemonize::Outcome::Parent(Err(e)) => Err(AppError::Detach(e.to_string())),
        daemonize::Outcome::Child(Err(e)) => {
            // Said once, by the waiting parent: this process's stderr may still be the
            // same terminal.
            let mut writer = writer;
            let _ = writeln!(writer, "{}", AppError::Detach(e.to_string()));
            std::process::exit(1);
        }
        daemonize::Outcome::Child(Ok(_)) => {
            drop(reader);
            let mut pid_file = pid_file;
            if let Some(pid_file) = &mut pid_file {
                pid_file.write_pid();
            }
            Ok(Some(Detached {
                ready: writer,
                pid_file,
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn the_readiness_pipe_is_closed_on_exec() {
        let (reader, writer) = readiness_pipe().expect("a pipe");
        for end in [&reader, &writer] {
            // SAFETY: F_GETFD on a descriptor this test owns.
            let flags = unsafe { libc::fcntl(end.as_raw_fd(), libc::F_GETFD) };
            assert!(flags >= 0);
            assert_ne!(flags & libc::FD_CLOEXEC, 0, "a child would inherit it");
        }
    }
}
