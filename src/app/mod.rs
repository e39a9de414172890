//! Wiring and lifetime: loads the settings, locks the state directory, prepares the
//! mount point (cleaning a stale mount), starts the supervisor, the tree and the FUSE
//! session, reports readiness, waits for SIGINT/SIGTERM, then shuts down in order: stop
//! every command, answer every parked read, unmount.

mod error;

pub use error::AppError;

use crate::config::Config;
use crate::fs::{Clock, Comeback, Hooks, Returning, Tree, TreeConfig};
use crate::fuse;
use crate::policy::audit::Audit;
use crate::policy::Policy;
use crate::spool::{Restored, Spool, SpoolConfig};
use crate::supervisor::{Supervisor, SupervisorConfig};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, UNIX_EPOCH};

use crate::log::info as log;

/// What is at a mount point now.
#[derive(Debug, PartialEq, Eq)]
enum MountState {
    NotMounted,
    /// A mount whose driver is gone ("Transport endpoint is not connected").
    Stale,
    Live,
}

fn mount_state(path: &Path) -> MountState {
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
fn detached(path: &Path, mount_point: &Path, seen: &mut bool) -> bool {
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
fn driver_gone(state_dir: &Path, limit: Duration) -> bool {
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
fn running(pid: libc::pid_t) -> bool {
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
fn reap_leftovers(path: &Path, message: &mut String) {
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
fn within(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
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
fn unmount(path: &Path, force: bool, patience: Duration) -> Result<Option<String>, AppError> {
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
fn unmount(path: &Path) -> Result<bool, AppError> {
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
fn detach(path: &Path) -> Result<(), AppError> {
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

/// Refuses a mount point another driver serves, changing nothing anywhere.
fn refuse_live_mount(path: &Path) -> Result<(), AppError> {
    if mount_state(path) == MountState::Live {
        return Err(AppError::LiveMount {
            path: path.to_path_buf(),
        });
    }
    Ok(())
}

fn prepare_mount_point(path: &Path) -> Result<(), AppError> {
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

/// Tells systemd (Type=notify) about our state, when it is listening.
fn sd_notify(state: &str) {
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

/// Why a serving driver stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// The FUSE session ended (the mount went away).
    SessionEnded,
    /// The mount left the namespace while a file of it kept the connection.
    Detached,
    /// SIGINT, SIGTERM or SIGHUP.
    Signal(i32),
    /// A panic that the driver cannot serve on from (see `crate::panics`).
    Panic(&'static str),
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::SessionEnded => f.write_str("the mount went away"),
            Stop::Detached => f.write_str("the mount was detached"),
            Stop::Signal(signal) => f.write_str(&crate::supervisor::signals::name(*signal)),
            Stop::Panic(why) => f.write_str(why),
        }
    }
}

fn block_signals() -> libc::sigset_t {
    // SAFETY: building a signal set and changing this thread's mask; threads spawned
    // later inherit it, so the signals reach only the sigtimedwait below. Children get
    // a clean mask from std::process::Command.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGHUP);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}

/// Waits up to `timeout` for one of the blocked signals; returns it.
fn wait_signal(set: &libc::sigset_t, timeout: Duration) -> Option<i32> {
    #[cfg(target_os = "linux")]
    {
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: valid set and timespec; a null siginfo is allowed.
        let signal = unsafe { libc::sigtimedwait(set, std::ptr::null_mut(), &ts) };
        (signal > 0).then_some(signal)
    }
    #[cfg(not(target_os = "linux"))]
    {
        // macOS has no sigtimedwait: poll the pending set.
        std::thread::sleep(timeout);
        // SAFETY: reading this thread's pending set, then taking one signal with sigwait.
        unsafe {
            let mut pending: libc::sigset_t = std::mem::zeroed();
            libc::sigpending(&mut pending);
            for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                if libc::sigismember(&pending, signal) == 1 && libc::sigismember(set, signal) == 1 {
                    let mut got = 0;
                    libc::sigwait(set, &mut got);
                    return Some(got);
                }
            }
        }
        None
    }
}

/// The pipe a daemon reports readiness on. Close-on-exec: a process the driver starts
/// (a mount helper, a command) must not hold the writer, or the waiting parent would
/// see no end of file while that process lives.
fn readiness_pipe() -> std::io::Result<(std::fs::File, std::fs::File)> {
    let (reader, writer) = crate::supervisor::pipe()?;
    Ok((reader.into(), writer.into()))
}

/// The `--pid-file` of a daemon: locked (`flock`) for the driver's life, so a second
/// daemon naming it is refused with a sentence, and removed as the driver ends, if it
/// still names this process (one removed by hand, or written since by another daemon,
/// is left be).
struct PidFile {
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
struct Detached {
    ready: std::fs::File,
    pid_file: Option<PidFile>,
}

/// Under --daemon: fork now; the parent returns only once the child reports that the
/// mount is ready (exit 0) or failed (exit 1). The child gets a writer to report on.
fn daemonize(config: &Config) -> Result<Option<Detached>, AppError> {
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

/// What the tree needs to show again a command found in the spool. The error is the
/// sentence logged as the reason the record is skipped, and nothing else: the
/// supervisor's restore answers in such a sentence too.
fn comeback(supervisor: &Supervisor, found: Restored) -> Result<Comeback, String> {
    let name = found.meta["name"]
        .as_str()
        .ok_or("its record has no name")?
        .to_string();
    let last_read = found.store.last_read();
    let created = found.meta["created_ms"]
        .as_u64()
        .map_or(last_read, |ms| UNIX_EPOCH + Duration::from_millis(ms));
    let returning = match (found.meta["denied"].as_str(), found.capture) {
        (Some(reason), _) => Returning::Denied {
            reason: reason.to_string(),
            store: found.store,
        },
        (None, Some(capture)) => {
            Returning::Job(supervisor.restore(&found.meta, capture, found.last_seen)?)
        }
        (None, None) => return Err("it has neither output nor a reason".into()),
    };
    Ok(Comeback {
        name,
        text: found.command,
        created,
        last_read,
        returning,
        marks: found.marks,
    })
}

pub fn run(config: Config) -> Result<(), AppError> {
    if !config.settings.exists() {
        return Err(AppError::NoSettings {
            path: config.settings.clone(),
        });
    }
    let policy = Arc::new(
        Policy::load(&config.settings, config.allowlist)
            .map_err(AppError::Settings)?
            .with_start_dir(&config.cwd, Some(&crate::policy::home_dir()))
            .with_sandbox(crate::sandbox::Context {
                forced: config.sandbox,
                protected: [&config.state_dir, &config.audit_log]
                    .into_iter()
                    .chain(config.log_file.as_ref())
                    .cloned()
                    .collect(),
                mount: Some(config.path.clone()),
                home: crate::policy::home_dir(),
                ..Default::default()
            })
            .with_default_host(config.host.clone()),
    );
    if let Some(name) = &config.host {
        policy
            .rules()
            .hosts
            .choose(Some(name), false)
            .map_err(|why| {
                AppError::Hosts(format!(
                    "--host {name}: {}",
                    why.trim_start_matches("refused: ")
                ))
            })?;
    }
    if !config.cwd.is_dir() {
        return Err(AppError::CwdNotADirectory {
            path: config.cwd.clone(),
        });
    }
    crate::log::set_verbose(config.verbose);
    let (mut ready_pipe, pid_file) = match daemonize(&config)? {
        Some(detached) => (Some(detached.ready), detached.pid_file),
        None => (None, None),
    };
    crate::panics::install();
    let result = serve(&config, policy, &mut ready_pipe, pid_file);
    // The commands' TMPDIRs go with the mount.
    crate::sandbox::remove_temp_dirs();
    if let (Err(message), Some(pipe)) = (&result, ready_pipe.as_mut()) {
        let _ = writeln!(pipe, "{message}");
    }
    result
}

fn serve(
    config: &Config,
    policy: Arc<Policy>,
    ready_pipe: &mut Option<std::fs::File>,
    pid_file: Option<PidFile>,
) -> Result<(), AppError> {
    let signals = block_signals();
    // In this order: a second driver on a live mount or on a state directory in use
    // is refused before it writes anything, and nothing of the state directory is
    // read or written before its lock is held (until this function returns).
    refuse_live_mount(&config.path)?;
    let _state_lock = crate::spool::prepare_dir(&config.state_dir).map_err(AppError::StateDir)?;
    // Dropped (the file removed) before the state directory's lock: `--unmount` waits
    // for that lock, and returns only once the pid file is gone.
    let _pid_file = pid_file;
    let hosts_policy = policy.clone();
    crate::hosts::driver::start(
        &config.state_dir,
        Box::new(move || hosts_policy.rules().hosts.clone()),
    )
    .map_err(AppError::Hosts)?;
    prepare_mount_point(&config.path)?;
    // Where the kernel will list the mount (a symbolic link resolved), found before it
    // is mounted: afterwards a look at the path would be a request to this very driver.
    let mount_point = std::fs::canonicalize(&config.path).unwrap_or_else(|_| config.path.clone());
    let audit = Audit::open(&config.audit_log).map_err(AppError::Audit)?;
    let spool = Spool::open(
        SpoolConfig {
            dir: config.state_dir.clone(),
            max_output: config.max_output,
            max_spool: config.max_spool,
        },
        log,
    )
    .map_err(|error| AppError::Start {
        what: "the spool",
        error,
    })?;
    let (wakes, receiver) = fuse::Wakes::new();
    let notify_wakes = wakes.clone();
    let supervisor = Arc::new(
        Supervisor::start(
            SupervisorConfig {
                shell: config.shell.clone(),
                cwd: config.cwd.clone(),
                kill_grace: config.kill_grace,
                cgroup_tag: Some(crate::supervisor::cgroup::tag_for(&config.path)),
                // A small process forks commands (see `supervisor::spawner`); elsewhere
                // than Linux the driver does.
                spawner: if cfg!(target_os = "linux") {
                    std::env::current_exe().ok()
                } else {
                    None
                },
            },
            spool.clone(),
            Arc::new(move |id, news| notify_wakes.job(id, news)),
        )
        .map_err(|error| AppError::Start {
            what: "the supervisor",
            error,
        })?,
    );
    log(&format!(
        "containment: {}; commands are forked by {}",
        supervisor.containment(),
        supervisor.spawning()
    ));
    if supervisor.reaped_at_start() > 0 {
        log(&format!(
            "reaped {} process(es) that an earlier driver at {} left running",
            supervisor.reaped_at_start(),
            config.path.display()
        ));
    }
    // SAFETY: getuid/getgid have no preconditions.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let tree = Arc::new(Tree::new(
        TreeConfig {
            mount: Some(config.path.clone()),
            settle: config.settle,
            keep: config.keep,
            wait_timeout: config.wait_timeout,
            timeout: config.timeout,
            uid,
            gid,
        },
        supervisor.clone(),
        policy.clone(),
        Some(audit),
    ));
    tree.set_spool(spool.clone());
    let started = Instant::now();
    let comebacks = spool
        .restore()
        .into_iter()
        .filter_map(|found| {
            let shown = found.store.dir().display().to_string();
            comeback(&supervisor, found)
                .map_err(|why| log(&format!("skipped {shown} at start: {why}")))
                .ok()
        })
        .collect();
    let restored = tree.restore(comebacks, &log);
    if restored > 0 {
        log(&format!(
            "restored {restored} command(s) from {} in {} ms",
            config.state_dir.display(),
            started.elapsed().as_millis()
        ));
    }
    let mut clock = Clock::start(tree.clone()).map_err(|error| AppError::Start {
        what: "the tree's clock",
        error,
    })?;
    let changed = wakes.clone();
    tree.set_hooks(Hooks {
        changed: Box::new(move || changed.released()),
        start_wanted: clock.starter(),
    });
    let parts = fuse::build(tree.clone(), wakes, receiver);
    let mut waker = parts.waker;
    let reloader = policy.spawn_reloader(Duration::from_millis(500), log);

    let mut fuse_config = fuser::Config::default();
    fuse_config.mount_options = vec![
        fuser::MountOption::FSName("terminalfs".into()),
        fuser::MountOption::Subtype("terminalfs".into()),
        fuser::MountOption::NoSuid,
        fuser::MountOption::NoDev,
    ];
    if cfg!(target_os = "linux") {
        fuse_config.n_threads = Some(2);
    }
    let mut session =
        fuser::Session::new(parts.driver, &config.path, &fuse_config).map_err(|error| {
            AppError::Mount {
                path: config.path.clone(),
                error,
            }
        })?;
    let mut unmounter = session.unmount_callable();
    let session_thread = std::thread::Builder::new()
        .name("tfs-session".into())
        .spawn(move || session.run())
        .map_err(|error| AppError::Start {
            what: "the session thread",
            error,
        })?;
    // Commands' stderr becomes a file of this mount from now on (see
    // `supervisor::capture`); macFUSE is untried for it, so stderr stays a pipe there.
    if cfg!(target_os = "linux") {
        supervisor.capture_stderr_in(config.path.clone());
    }

    log(&format!(
        "ready: mounted at {} (settings {}, {} rule(s), shell {}, cwd {})",
        config.path.display(),
        policy.path().display(),
        policy.rule_count(),
        config.shell.display(),
        config.cwd.display()
    ));
    for warning in policy.warnings() {
        log(&format!("warning: {warning}"));
    }
    sd_notify("READY=1");
    if let Some(mut pipe) = ready_pipe.take() {
        let _ = pipe.write_all(b"ready\n");
    }

    let mut listed = false;
    let cause = loop {
        if session_thread.is_finished() {
            break Stop::SessionEnded;
        }
        // A lazy unmount (`--unmount`, `umount -l`) takes the tree out of the namespace
        // while a command's stderr file keeps the connection open: that is a stop too.
        if detached(&config.path, &mount_point, &mut listed) {
            break Stop::Detached;
        }
        if let Some(why) = crate::panics::fatal() {
            break Stop::Panic(why);
        }
        if let Some(signal) = wait_signal(&signals, Duration::from_millis(200)) {
            break Stop::Signal(signal);
        }
    };
    if let Stop::Panic(_) = cause {
        // Stopping in order after a panic may meet what the panic left undone (a
        // thread that will never report): past the time an orderly stop takes, the
        // mount is detached and the driver exits all the same, never left wedged.
        let limit = config.kill_grace + Duration::from_secs(10);
        let path = config.path.clone();
        let _ = std::thread::Builder::new()
            .name("tfs-last-resort".into())
            .spawn(move || {
                std::thread::sleep(limit);
                log(&format!(
                    "the driver did not stop in order within {} s after a panic; it \
                     detaches its mount and exits now",
                    limit.as_secs()
                ));
                let _ = detach(&path);
                // SAFETY: _exit ends the process at once; nothing here is left to run.
                unsafe { libc::_exit(PANIC_EXIT) };
            });
    }
    // Closing first: a start racing this (a settle time running out, a lookup) either
    // is counted here or does not happen.
    let running = supervisor.close();
    log(&format!(
        "stopping ({cause}): stopping {running} running command(s)"
    ));
    sd_notify("STOPPING=1");
    supervisor.shutdown();
    crate::hosts::driver::stop();
    clock.stop();
    waker.shutdown();
    policy.stop();
    let _ = reloader.join();
    // A detached mount has nothing left to unmount: trying only logs a refusal.
    if cause != Stop::Detached && !session_thread.is_finished() {
        if let Err(e) = unmounter.unmount() {
            log(&format!("unmount was refused ({e}); detaching lazily"));
            if let Err(e) = detach(&config.path) {
                log(&e.to_string());
            }
        }
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    while !session_thread.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    if session_thread.is_finished() {
        if let Ok(Err(e)) = session_thread.join() {
            log(&format!("the FUSE session ended with an error: {e}"));
        }
    }
    spool.save_last_reads();
    spool.sync();
    log("stopped");
    match cause {
        Stop::Panic(why) => Err(AppError::Panicked(why)),
        _ => Ok(()),
    }
}

/// The exit status of a driver that a panic stopped without an orderly stop.
const PANIC_EXIT: i32 = 70;

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn a_refused_mount_says_what_to_check() {
        let path = Path::new("/home/u/mnt");
        let denied = std::io::Error::from_raw_os_error(libc::EACCES);
        let mounting = |error| {
            AppError::Mount {
                path: path.to_path_buf(),
                error,
            }
            .to_string()
        };
        let said = mounting(denied);
        assert!(
            said.starts_with("cannot mount at /home/u/mnt: Permission denied"),
            "{said}"
        );
        assert!(
            said.contains("/dev/fuse") && said.contains("fuse3"),
            "{said}"
        );
        let busy = std::io::Error::from_raw_os_error(libc::EBUSY);
        assert!(!mounting(busy).contains("/dev/fuse"));
    }

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
