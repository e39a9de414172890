//! Per-command cgroups (Linux, cgroup v2), used when the driver may create cgroups below
//! its own: as root, or as a systemd user service with `Delegate=yes`.
//!
//! Layout: `<driver's cgroup>/terminalfs-<tag>/slot-<pid>-<start>-<n>`, where the tag is
//! derived from the mount path and `<pid>-<start>` names the driver that made the
//! cgroup (its pid and when it started, so that a later process with that pid is not
//! taken for it). A cgroup holds every descendant of a command, including those that
//! called `setsid`, so stopping a command reaches all of it. Because the parent
//! directory is named after the mount path, the next driver on the same path finds
//! what a crashed one left behind and reaps it; the cgroups of a driver that still
//! runs (one stopping its commands as the next one starts on its path) are left to
//! it. A driver signals, waits for and removes only its own cgroups; the parent goes
//! with the last of them, whichever driver that was.
//!
//! A command has its cgroup to itself from its start until nothing of it is left, but
//! cgroups are made ahead and used again: the first process born into a cgroup made
//! just for it cost this machine about 65 µs for the `mkdir`, 80 µs more in `clone3`
//! and 40 µs for the `rmdir`, against nothing measurable for one that held a process
//! before. So one is made at start, and an emptied cgroup goes back to a pool of up to
//! two, off the path of a start. Where the memory controller would carry its peak
//! and events over, or `cgroup.kill` was written to it (Linux 6.18 SIGKILLs every
//! process born into such a cgroup afterwards), an emptied cgroup is removed instead
//! and a new one made for the pool then; a burst of commands beyond the pool makes
//! cgroups as it starts them.
//!
//! Lock order: a job's state, then a cgroup's `held`, then the pool; the pool is never
//! held while taking `held`.
//!
//! The cgroup2 mount is found in `/proc/self/mountinfo` and the driver's own cgroup in
//! `/proc/self/cgroup`; no path is assumed. Where anything fails, the supervisor falls
//! back to process groups.

pub use crate::paths::tag_for;
use parking_lot::Mutex;
use std::ffi::CString;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// Where command cgroups are made, and what they can do.
#[derive(Debug)]
pub struct Cgroups {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    parent: PathBuf,
    /// `slot-<pid>-<start>-`: how this driver's cgroups are named.
    prefix: String,
    /// The memory controller is enabled for command cgroups (`memory.max` works).
    memory: bool,
    /// Cgroups no command has: made ahead, or emptied by a command that has ended.
    ready: Mutex<Vec<Slot>>,
    /// How many cgroups have been made: the next one's number.
    made: AtomicU64,
}

/// At most this many empty cgroups are kept for later commands; a burst of commands
/// leaves no more behind.
const READY_MAX: usize = 2;

/// A cgroup directory, open.
#[derive(Debug)]
struct Slot {
    dir: PathBuf,
    /// `cgroup.procs` as a C string, prepared for a child between fork and exec.
    procs: CString,
    /// The directory, for a child born into it (`clone3` with `CLONE_INTO_CGROUP`).
    fd: OwnedFd,
}

/// One command's cgroup.
#[derive(Debug)]
pub struct CommandCgroup {
    dir: PathBuf,
    procs: CString,
    /// The directory, open, while the command has the cgroup; None once it let go of
    /// it (back to the pool, or removed): from then on it may be another command's,
    /// so nothing is read or signalled through this one. Locked while signalling, so
    /// a signal never reaches the next command.
    held: Mutex<Option<OwnedFd>>,
    /// `cgroup.kill` was written to it. Such a cgroup is never used again: on Linux
    /// 6.18 a process later born into it (`CLONE_INTO_CGROUP`) is SIGKILLed at once,
    /// though one moved into it lives.
    killed: AtomicBool,
    /// Where it goes when emptied; gone with the supervisor.
    home: Weak<Shared>,
}

/// Finds the cgroup2 mount point in mountinfo text.
pub fn cgroup2_mount(mountinfo: &str) -> Option<PathBuf> {
    crate::mounts::entries(mountinfo.as_bytes())
        .find(|entry| entry.fstype == "cgroup2")
        .map(|entry| entry.mount_point)
}

/// The unified-hierarchy cgroup of the process, from `/proc/self/cgroup` text.
pub fn own_cgroup(proc_cgroup: &str) -> Option<String> {
    proc_cgroup
        .lines()
        .find_map(|line| line.strip_prefix("0::"))
        .map(|path| path.trim().to_string())
}

fn write(path: &Path, text: &str) -> std::io::Result<()> {
    std::fs::write(path, text)
}

fn pids_in(dir: &Path) -> Vec<i32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .collect()
}

/// The state letter and start time (clock ticks after boot) of process `pid` ("self"
/// for this one), from `/proc/<pid>/stat`; None once it is gone.
fn process_start(pid: &str) -> Option<(char, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: the fields follow the last ')'.
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    let state = fields.next()?.chars().next()?;
    // Field 22 of the file, the 20th after the name.
    let start = fields.nth(18)?.parse().ok()?;
    Some((state, start))
}

/// The name prefix of the cgroups a driver with this pid and start time makes.
fn slot_prefix(pid: u32, start: u64) -> String {
    format!("slot-{pid}-{start}-")
}

/// Whether the driver that made the cgroup `name` still runs. A name that does not say
/// which driver made it counts as left behind.
fn owner_runs(name: &str) -> bool {
    let owner = name
        .strip_prefix("slot-")
        .and_then(|rest| rest.rsplit_once('-'))
        .and_then(|(owner, _)| owner.split_once('-'));
    let Some((pid, start)) = owner else {
        return false;
    };
    pid.parse::<u32>().is_ok()
        && process_start(pid).is_some_and(|(state, started)| {
            !matches!(state, 'Z' | 'X') && start.parse() == Ok(started)
        })
}

/// The child cgroups of `parent` whose names `keep` accepts.
fn slots_in(parent: &Path, keep: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|entry| entry.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|entry| keep(&entry.file_name().to_string_lossy()))
        .map(|entry| entry.path())
        .collect()
}

fn populated(dir: &Path) -> bool {
    match std::fs::read_to_string(dir.join("cgroup.events")) {
        Ok(events) => says_populated(&events),
        Err(_) => false,
    }
}

fn says_populated(events: &str) -> bool {
    events.lines().any(|line| line == "populated 1")
}

/// Whether the cgroup open as `dir` holds a process, read relative to the open
/// directory, with no path to build or look up: a command's exit waits for this. A
/// cgroup removed from under it (by hand, or by a driver that took this one for gone)
/// gives ENOENT or ENODEV (see [`gone`]).
fn populated_at(dir: BorrowedFd) -> std::io::Result<bool> {
    let mut events = crate::mounts::open_at(dir, c"cgroup.events", libc::O_RDONLY)?;
    let mut text = [0u8; 256];
    let read = std::io::Read::read(&mut events, &mut text)?;
    Ok(says_populated(&String::from_utf8_lossy(&text[..read])))
}

/// Whether an error reading a cgroup says that it is gone, rather than that it could
/// not be read just now (out of descriptors, say).
fn gone(error: &std::io::Error) -> bool {
    matches!(error.raw_os_error(), Some(libc::ENOENT | libc::ENODEV))
}

/// SIGKILLs everything in a cgroup (with `cgroup.kill` where the kernel has it) and
/// waits, up to `patience`, until it is empty. Returns how many processes it saw.
fn kill_all(dir: &Path, patience: Duration) -> usize {
    let seen = pids_in(dir).len();
    if write(&dir.join("cgroup.kill"), "1").is_err() {
        for pid in pids_in(dir) {
            // SAFETY: sending a signal; a vanished pid gives ESRCH.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
    let deadline = Instant::now() + patience;
    while populated(dir) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    seen
}

/// Why commands get no cgroups of their own (they get process groups instead); said
/// once, in the driver's containment line.
#[derive(Debug)]
pub enum CgroupError {
    /// Cgroups exist only on Linux.
    NotLinux,
    /// `/proc/self/mountinfo` could not be read.
    MountInfo(std::io::Error),
    /// No cgroup2 filesystem is mounted.
    NoCgroup2,
    /// `/proc/self/cgroup` names no cgroup v2 path for this process.
    NoOwnPath,
    /// `/proc/self/stat` does not tell when this process started.
    NoStartTime,
    /// The directory for this mount's cgroups could not be made.
    Create { dir: PathBuf, error: std::io::Error },
    /// A cgroup made below `parent` could not be made or holds no `cgroup.procs`.
    Unusable {
        parent: PathBuf,
        error: Option<std::io::Error>,
    },
}

impl std::fmt::Display for CgroupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CgroupError::NotLinux => f.write_str("cgroups exist only on Linux"),
            CgroupError::MountInfo(error) => {
                write!(f, "cannot read /proc/self/mountinfo: {error}")
            }
            CgroupError::NoCgroup2 => f.write_str("no cgroup2 filesystem is mounted"),
            CgroupError::NoOwnPath => f.write_str("this process has no cgroup v2 path"),
            CgroupError::NoStartTime => f.write_str("cannot read /proc/self/stat"),
            CgroupError::Create { dir, error } => {
                write!(f, "cannot create the cgroup {}: {error}", dir.display())
            }
            CgroupError::Unusable { parent, error } => {
                write!(f, "cannot create cgroups below {}", parent.display())?;
                match error {
                    Some(error) => write!(f, ": {error}"),
                    None => Ok(()),
                }
            }
        }
    }
}

impl std::error::Error for CgroupError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CgroupError::MountInfo(error) | CgroupError::Create { error, .. } => Some(error),
            CgroupError::Unusable {
                error: Some(error), ..
            } => Some(error),
            _ => None,
        }
    }
}

/// The driver's own cgroup path, its directory, and where commands of `tag` go.
fn locate(tag: &str) -> Result<(String, PathBuf, PathBuf), CgroupError> {
    if !cfg!(target_os = "linux") {
        return Err(CgroupError::NotLinux);
    }
    let mountinfo =
        std::fs::read_to_string("/proc/self/mountinfo").map_err(CgroupError::MountInfo)?;
    let mount = cgroup2_mount(&mountinfo).ok_or(CgroupError::NoCgroup2)?;
    let own = std::fs::read_to_string("/proc/self/cgroup")
        .ok()
        .as_deref()
        .and_then(own_cgroup)
        .ok_or(CgroupError::NoOwnPath)?;
    let base = mount.join(own.trim_start_matches('/'));
    let parent = base.join(format!("terminalfs-{tag}"));
    Ok((own, base, parent))
}

/// Kills and removes what drivers for `tag` that are gone left in their cgroups (for
/// `--unmount` after a crash), and the parent if nothing else is left in it. Returns
/// the processes killed.
pub fn reap_leftovers(tag: &str) -> usize {
    let Ok((_, _, parent)) = locate(tag) else {
        return 0;
    };
    let killed = reap_orphans(&parent);
    let _ = std::fs::remove_dir(&parent);
    killed
}

impl Cgroups {
    /// Sets up `terminalfs-<tag>` below the driver's cgroup. Returns None (and a
    /// reason) where cgroups cannot be used; otherwise also the number of processes
    /// reaped from cgroups an earlier driver on the same path left behind.
    pub fn setup(tag: &str) -> Result<(Cgroups, usize), CgroupError> {
        let (own, base, parent) = locate(tag)?;
        let (_, start) = process_start("self").ok_or(CgroupError::NoStartTime)?;
        let reaped = reap_orphans(&parent);
        let memory_available = std::fs::read_to_string(base.join("cgroup.controllers"))
            .unwrap_or_default()
            .split_whitespace()
            .any(|c| c == "memory");
        if memory_available && own != "/" {
            // A cgroup with processes cannot hand controllers to its children: move the
            // driver into a leaf of its own first (the systemd Delegate=yes layout).
            let leaf = base.join("terminalfs-driver");
            let _ = std::fs::create_dir(&leaf);
            let _ = write(&leaf.join("cgroup.procs"), &std::process::id().to_string());
        }
        if memory_available {
            let _ = write(&base.join("cgroup.subtree_control"), "+memory");
        }
        if !parent.is_dir() {
            std::fs::create_dir(&parent).map_err(|error| CgroupError::Create {
                dir: parent.clone(),
                error,
            })?;
        }
        let memory =
            memory_available && write(&parent.join("cgroup.subtree_control"), "+memory").is_ok();
        let cgroups = Cgroups {
            shared: Arc::new(Shared {
                parent,
                prefix: slot_prefix(std::process::id(), start),
                memory,
                ready: Mutex::new(Vec::new()),
                made: AtomicU64::new(0),
            }),
        };
        // Prove that a process can be placed here before relying on it; the proof is
        // the first command's cgroup.
        match cgroups.shared.make() {
            Ok(slot) if std::fs::metadata(slot.dir.join("cgroup.procs")).is_ok() => {
                cgroups.shared.ready.lock().push(slot);
            }
            made => {
                let error = match made {
                    Ok(slot) => {
                        let _ = std::fs::remove_dir(&slot.dir);
                        None
                    }
                    Err(error) => Some(error),
                };
                let parent = &cgroups.shared.parent;
                let _ = std::fs::remove_dir(parent);
                return Err(CgroupError::Unusable {
                    parent: parent.clone(),
                    error,
                });
            }
        }
        Ok((cgroups, reaped))
    }

    pub fn memory(&self) -> bool {
        self.shared.memory
    }

    pub fn parent(&self) -> &Path {
        &self.shared.parent
    }

    /// A cgroup for one command, with `memory.max` when asked and possible: one made
    /// ahead when there is one, else a new one.
    pub fn take(&self, memory_max: Option<u64>) -> std::io::Result<CommandCgroup> {
        let ready = self.shared.ready.lock().pop();
        let slot = match ready {
            Some(slot) => slot,
            None => self.shared.make()?,
        };
        let cgroup = CommandCgroup {
            dir: slot.dir,
            procs: slot.procs,
            held: Mutex::new(Some(slot.fd)),
            killed: AtomicBool::new(false),
            home: Arc::downgrade(&self.shared),
        };
        if let (Some(bytes), true) = (memory_max, self.shared.memory) {
            write(&cgroup.dir.join("memory.max"), &bytes.to_string())?;
            // Without swap the limit is the limit.
            let _ = write(&cgroup.dir.join("memory.swap.max"), "0");
        }
        Ok(cgroup)
    }

    /// This driver's command cgroups (another driver on the same path has its own).
    fn own_slots(&self) -> Vec<PathBuf> {
        slots_in(&self.shared.parent, |name| {
            name.starts_with(&self.shared.prefix)
        })
    }

    /// Sends `signal` to every process in every command cgroup of this driver but those
    /// in `skip` (signalled already), including what a command that has stopped left
    /// running (shutdown). Returns how many processes it signalled.
    pub fn signal_all(&self, signal: i32, skip: &[&Path]) -> usize {
        let mut seen = 0;
        for dir in self.own_slots() {
            if !skip.contains(&dir.as_path()) {
                for pid in pids_in(&dir) {
                    seen += 1;
                    // SAFETY: sending a signal; a vanished pid gives ESRCH.
                    unsafe {
                        libc::kill(pid, signal);
                    }
                }
            }
        }
        seen
    }

    /// Whether any process is left in any command cgroup of this driver.
    pub fn populated(&self) -> bool {
        self.own_slots().iter().any(|dir| populated(dir))
    }

    /// Kills everything in this driver's command cgroups and removes them, and the
    /// parent unless another driver's are in it (shutdown).
    pub fn tear_down(&self) {
        self.shared.ready.lock().clear();
        reap(self.own_slots());
        let _ = std::fs::remove_dir(&self.shared.parent);
    }
}

impl Shared {
    /// Makes a new cgroup, and the parent again if a driver that was stopping on this
    /// path removed it when it held no cgroup of this one's.
    fn make(&self) -> std::io::Result<Slot> {
        let number = self.made.fetch_add(1, Ordering::Relaxed);
        let dir = self.parent.join(format!("{}{number}", self.prefix));
        if let Err(error) = std::fs::create_dir(&dir) {
            if error.kind() != std::io::ErrorKind::NotFound {
                return Err(error);
            }
            if let Err(error) = std::fs::create_dir(&self.parent) {
                if error.kind() != std::io::ErrorKind::AlreadyExists {
                    return Err(error);
                }
            }
            if self.memory {
                write(&self.parent.join("cgroup.subtree_control"), "+memory")?;
            }
            std::fs::create_dir(&dir)?;
        }
        let procs = CString::new(dir.join("cgroup.procs").as_os_str().as_encoded_bytes())
            .map_err(|_| std::io::Error::other("the cgroup path has a NUL byte"))?;
        let fd = std::fs::File::open(&dir)?.into();
        Ok(Slot { dir, procs, fd })
    }

    /// Takes back an emptied cgroup: into the pool when it may be used again (`reuse`:
    /// it is still there and [`CommandCgroup::reusable`]), else it is removed and a new
    /// one made, so that the next start finds one ready either way.
    fn give_back(&self, slot: Slot, reuse: bool) {
        if reuse {
            let mut ready = self.ready.lock();
            if ready.len() < READY_MAX {
                return ready.push(slot);
            }
        }
        let _ = std::fs::remove_dir(&slot.dir);
        drop(slot);
        if !reuse && self.ready.lock().is_empty() {
            if let Ok(slot) = self.make() {
                self.ready.lock().push(slot);
            }
        }
    }
}

/// Kills and removes the cgroups below `parent` whose driver no longer runs; returns the
/// processes killed.
fn reap_orphans(parent: &Path) -> usize {
    reap(slots_in(parent, |name| !owner_runs(name)))
}

/// Kills everything in these cgroups and removes them; returns the processes killed.
fn reap(dirs: Vec<PathBuf>) -> usize {
    let mut killed = 0;
    for dir in dirs {
        killed += kill_all(&dir, Duration::from_secs(2));
        let _ = std::fs::remove_dir(&dir);
    }
    killed
}

impl Drop for CommandCgroup {
    /// The job is gone: a cgroup it did not let go of goes too, if it is empty (the
    /// kernel refuses otherwise, and shutdown or the next start on this path takes care
    /// of it).
    fn drop(&mut self) {
        if self.held.get_mut().is_some() {
            let _ = std::fs::remove_dir(&self.dir);
        }
    }
}

impl CommandCgroup {
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The path of `cgroup.procs`, for the child to join between fork and exec.
    pub fn procs(&self) -> &CString {
        &self.procs
    }

    /// Whether the command still has the cgroup (it has not let go of it).
    pub fn held(&self) -> bool {
        self.held.lock().is_some()
    }

    /// The directory, open, for a child born into the cgroup.
    #[cfg(target_os = "linux")]
    pub fn fd(&self) -> Option<OwnedFd> {
        self.held.lock().as_ref()?.try_clone().ok()
    }

    /// Sends a signal to every process in the cgroup, except the members of process
    /// group `skip`, which the caller has just signalled with killpg: a process must
    /// get one SIGTERM, not two, since many programs take a second one as "stop now,
    /// skip the cleanup". Returns whether any process was there.
    pub fn signal(&self, signal: i32, skip: Option<i32>) -> bool {
        let held = self.held.lock();
        if held.is_none() {
            return false;
        }
        if signal == libc::SIGKILL && write(&self.dir.join("cgroup.kill"), "1").is_ok() {
            self.killed.store(true, Ordering::SeqCst);
            return true;
        }
        let pids = pids_in(&self.dir);
        for pid in &pids {
            // SAFETY: getpgid and kill only look up and signal a process; a vanished
            // pid gives ESRCH.
            unsafe {
                if skip.is_some_and(|group| libc::getpgid(*pid) == group) {
                    continue;
                }
                libc::kill(*pid, signal);
            }
        }
        !pids.is_empty()
    }

    /// Whether a process is left in the cgroup. One that cannot be read now counts as
    /// holding one (as in [`CommandCgroup::release`]): what waits for it to empty, or
    /// signals what is left, does not pass it over.
    pub fn populated(&self) -> bool {
        let held = self.held.lock();
        held.as_ref()
            .is_some_and(|dir| match populated_at(dir.as_fd()) {
                Ok(populated) => populated,
                Err(error) => !gone(&error),
            })
    }

    /// Whether the memory controller killed something here.
    pub fn oom_killed(&self) -> bool {
        let held = self.held.lock();
        held.is_some()
            && std::fs::read_to_string(self.dir.join("memory.events"))
                .unwrap_or_default()
                .lines()
                .filter_map(|line| line.strip_prefix("oom_kill "))
                .any(|count| count.trim() != "0")
    }

    /// Whether the cgroup, once empty, goes back to the pool as it is (see
    /// [`Shared::give_back`]).
    pub fn reusable(&self) -> bool {
        !self.killed.load(Ordering::SeqCst) && self.home.upgrade().is_some_and(|home| !home.memory)
    }

    /// The most memory the cgroup used, in KiB, where the memory controller keeps it.
    pub fn memory_peak_kib(&self) -> Option<u64> {
        let home = self.home.upgrade()?;
        let held = self.held.lock();
        if !home.memory || held.is_none() {
            return None;
        }
        let text = std::fs::read_to_string(self.dir.join("memory.peak")).ok()?;
        Some(text.trim().parse::<u64>().ok()? / 1024)
    }

    /// Lets go of the cgroup once it is empty; returns whether it is let go. An
    /// emptied cgroup goes back to be used again (see the module's notes).
    pub fn release(&self) -> bool {
        let mut held = self.held.lock();
        if held.is_none() {
            return true;
        }
        // One removed from under it would fail the next start: only one still there
        // goes back. One that cannot be read now is kept as if it held a process, and
        // looked at again later (the pump leaves it to the timer's tidying).
        let there = match held.as_ref().map(|dir| populated_at(dir.as_fd())) {
            Some(Ok(true)) => return false,
            Some(Ok(false)) => true,
            Some(Err(error)) if !gone(&error) => return false,
            _ => false,
        };
        let fd = held.take();
        drop(held);
        match (self.home.upgrade(), fd) {
            (Some(home), Some(fd)) => home.give_back(
                Slot {
                    dir: self.dir.clone(),
                    procs: self.procs.clone(),
                    fd,
                },
                there && self.reusable(),
            ),
            _ => {
                let _ = std::fs::remove_dir(&self.dir);
            }
        }
        true
    }
}

/// Between fork and exec: moves the calling process into the cgroup whose
/// `cgroup.procs` is `procs`. Only async-signal-safe calls.
///
/// # Safety
/// Must be called in a forked child before exec, with a valid C string.
pub unsafe fn join_in_child(procs: &CString) -> std::io::Result<()> {
    let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let written = libc::write(fd, b"0".as_ptr().cast(), 1);
    let error = std::io::Error::last_os_error();
    libc::close(fd);
    if written != 1 {
        return Err(error);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_cgroup2_mount_wherever_it_is() {
        let info = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
                    35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n\
                    41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
        assert_eq!(
            cgroup2_mount(info),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        let pure =
            "24 1 0:22 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate\n";
        assert_eq!(cgroup2_mount(pure), Some(PathBuf::from("/sys/fs/cgroup")));
        let spaced = "24 1 0:22 / /mnt/my\\040cg rw - cgroup2 none rw\n";
        assert_eq!(cgroup2_mount(spaced), Some(PathBuf::from("/mnt/my cg")));
        assert_eq!(cgroup2_mount("1 2 0:1 / / rw - ext4 /dev/vda rw\n"), None);
    }

    #[test]
    fn events_read_through_the_directory_say_populated_or_gone() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let open = || OwnedFd::from(std::fs::File::open(dir.path()).expect("the directory"));
        let events = dir.path().join("cgroup.events");
        std::fs::write(&events, "populated 1\nfrozen 0\n").unwrap();
        assert!(populated_at(open().as_fd()).expect("read"));
        std::fs::write(&events, "populated 0\nfrozen 0\n").unwrap();
        assert!(!populated_at(open().as_fd()).expect("read"));
        // Removed from under its holder: gone, not merely unreadable.
        let held = open();
        std::fs::remove_file(&events).unwrap();
        let error = populated_at(held.as_fd()).expect_err("no events file");
        assert!(gone(&error), "{error}");
        assert!(!gone(&std::io::Error::from_raw_os_error(libc::EMFILE)));
    }

    #[test]
    fn reads_the_unified_cgroup_line() {
        let text = "9:name=systemd:/\n4:memory:/x\n0::/user.slice/user-1000.slice/app.service\n";
        assert_eq!(
            own_cgroup(text).as_deref(),
            Some("/user.slice/user-1000.slice/app.service")
        );
        assert_eq!(own_cgroup("0::/\n").as_deref(), Some("/"));
        assert_eq!(own_cgroup("4:memory:/x\n"), None);
    }

    #[test]
    fn a_cgroup_belongs_to_a_running_driver_only_while_that_driver_runs() {
        let (_, start) = process_start("self").expect("this process has a stat");
        let me = std::process::id();
        assert!(owner_runs(&format!("{}7", slot_prefix(me, start))));
        // Another process that reuses the pid started later.
        assert!(!owner_runs(&format!("{}7", slot_prefix(me, start + 1))));
        // A driver that has died (a zombie until reaped) or is gone.
        let mut child = std::process::Command::new("sleep")
            .arg("300")
            .spawn()
            .unwrap();
        let pid = child.id();
        let (_, started) = process_start(&pid.to_string()).unwrap();
        let name = format!("{}0", slot_prefix(pid, started));
        assert!(owner_runs(&name));
        child.kill().unwrap();
        let dead = Instant::now() + Duration::from_secs(10);
        while owner_runs(&name) && Instant::now() < dead {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(!owner_runs(&name), "a zombie does not run");
        child.wait().unwrap();
        assert!(!owner_runs(&name));
        // A name that does not say whose it is counts as left behind.
        assert!(!owner_runs("slot-0"));
        assert!(!owner_runs("slot-self-0-0"));
        assert!(!owner_runs("terminalfs-driver"));
    }
}
