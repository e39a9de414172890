//! Per-command cgroups (Linux, cgroup v2), used when the driver may create cgroups below
//! its own: as root, or as a systemd user service with `Delegate=yes`.
//!
//! Layout: `<driver's cgroup>/terminalfs-<tag>/slot-<n>`, where the tag is derived from
//! the mount path. A cgroup holds every descendant of a command, including those that
//! called `setsid`, so stopping a command reaches all of it. Because the parent
//! directory is named after the mount path, the next driver on the same path finds
//! what a crashed one left behind and reaps it.
//!
//! A command has its cgroup to itself from its start until nothing of it is left, but
//! cgroups are made ahead and used again: the first process born into a cgroup made
//! just for it cost this machine about 65 µs for the `mkdir`, 80 µs more in `clone3`
//! and 40 µs for the `rmdir`, against nothing measurable for one that held a process
//! before. So one is made at start, and an emptied cgroup goes back to a pool of up to
//! two, off the path of a start. Where the memory controller would carry its peak
//! and events over, an emptied cgroup is removed instead and a new one made for the
//! pool then; a burst of commands beyond the pool makes cgroups as it starts them.
//!
//! Lock order: a job's state, then a cgroup's `held`, then the pool; the pool is never
//! held while taking `held`.
//!
//! The cgroup2 mount is found in `/proc/self/mountinfo` and the driver's own cgroup in
//! `/proc/self/cgroup`; no path is assumed. Where anything fails, the supervisor falls
//! back to process groups.

use parking_lot::Mutex;
use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
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
    /// Where it goes when emptied; gone with the supervisor.
    home: Weak<Shared>,
}

/// Finds the cgroup2 mount point in mountinfo text.
pub fn cgroup2_mount(mountinfo: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let fstype = right.split_whitespace().next()?;
        let mount_point = left.split_whitespace().nth(4)?;
        (fstype == "cgroup2").then(|| PathBuf::from(unescape_mountinfo(mount_point)))
    })
}

fn unescape_mountinfo(text: &str) -> String {
    text.replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
}

/// The unified-hierarchy cgroup of the process, from `/proc/self/cgroup` text.
pub fn own_cgroup(proc_cgroup: &str) -> Option<String> {
    proc_cgroup
        .lines()
        .find_map(|line| line.strip_prefix("0::"))
        .map(|path| path.trim().to_string())
}

/// A short, stable, file-name-safe tag for a mount path.
pub fn tag_for(path: &Path) -> String {
    // FNV-1a: stable across runs and platforms, unlike the std hasher.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in path.as_os_str().as_encoded_bytes() {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
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

fn populated(dir: &Path) -> bool {
    match std::fs::read_to_string(dir.join("cgroup.events")) {
        Ok(events) => events.lines().any(|line| line == "populated 1"),
        Err(_) => false,
    }
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

/// The driver's own cgroup path, its directory, and where commands of `tag` go.
fn locate(tag: &str) -> Result<(String, PathBuf, PathBuf), String> {
    if !cfg!(target_os = "linux") {
        return Err("cgroups exist only on Linux".into());
    }
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("cannot read /proc/self/mountinfo: {e}"))?;
    let mount = cgroup2_mount(&mountinfo).ok_or("no cgroup2 filesystem is mounted")?;
    let own = std::fs::read_to_string("/proc/self/cgroup")
        .ok()
        .as_deref()
        .and_then(own_cgroup)
        .ok_or("this process has no cgroup v2 path")?;
    let base = mount.join(own.trim_start_matches('/'));
    let parent = base.join(format!("terminalfs-{tag}"));
    Ok((own, base, parent))
}

/// Kills and removes what a driver for `tag` that is gone left in its cgroups (for
/// `--unmount` after a crash). Returns the processes killed.
pub fn reap_leftovers(tag: &str) -> usize {
    let Ok((_, _, parent)) = locate(tag) else {
        return 0;
    };
    if !parent.is_dir() {
        return 0;
    }
    let killed = reap_tree(&parent);
    let _ = std::fs::remove_dir(&parent);
    killed
}

impl Cgroups {
    /// Sets up `terminalfs-<tag>` below the driver's cgroup. Returns None (and a
    /// reason) where cgroups cannot be used; otherwise also the number of processes
    /// reaped from cgroups an earlier driver on the same path left behind.
    pub fn setup(tag: &str) -> Result<(Cgroups, usize), String> {
        let (own, base, parent) = locate(tag)?;
        let mut reaped = 0;
        if parent.is_dir() {
            reaped = reap_tree(&parent);
        }
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
            std::fs::create_dir(&parent)
                .map_err(|e| format!("cannot create the cgroup {}: {e}", parent.display()))?;
        }
        let memory =
            memory_available && write(&parent.join("cgroup.subtree_control"), "+memory").is_ok();
        let cgroups = Cgroups {
            shared: Arc::new(Shared {
                parent,
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
                if let Ok(slot) = made {
                    let _ = std::fs::remove_dir(&slot.dir);
                }
                let parent = &cgroups.shared.parent;
                let _ = std::fs::remove_dir(parent);
                return Err(format!("cannot create cgroups below {}", parent.display()));
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
            home: Arc::downgrade(&self.shared),
        };
        if let (Some(bytes), true) = (memory_max, self.shared.memory) {
            write(&cgroup.dir.join("memory.max"), &bytes.to_string())?;
            // Without swap the limit is the limit.
            let _ = write(&cgroup.dir.join("memory.swap.max"), "0");
        }
        Ok(cgroup)
    }

    /// Sends `signal` to every process in every command cgroup but those in `skip`
    /// (signalled already), including what a command that has stopped left running
    /// (shutdown). Returns how many processes it signalled.
    pub fn signal_all(&self, signal: i32, skip: &[&Path]) -> usize {
        let mut seen = 0;
        if let Ok(entries) = std::fs::read_dir(&self.shared.parent) {
            for entry in entries.flatten() {
                let dir = entry.path();
                if entry.file_type().is_ok_and(|t| t.is_dir()) && !skip.contains(&dir.as_path()) {
                    for pid in pids_in(&dir) {
                        seen += 1;
                        // SAFETY: sending a signal; a vanished pid gives ESRCH.
                        unsafe {
                            libc::kill(pid, signal);
                        }
                    }
                }
            }
        }
        seen
    }

    /// Whether any process is left in any command cgroup.
    pub fn populated(&self) -> bool {
        populated(&self.shared.parent)
    }

    /// Kills everything in every command cgroup and removes them (shutdown).
    pub fn tear_down(&self) {
        self.shared.ready.lock().clear();
        reap_tree(&self.shared.parent);
        let _ = std::fs::remove_dir(&self.shared.parent);
    }
}

impl Shared {
    /// Makes a new cgroup (removing what an earlier one of the same name left).
    fn make(&self) -> std::io::Result<Slot> {
        let number = self.made.fetch_add(1, Ordering::Relaxed);
        let dir = self.parent.join(format!("slot-{number}"));
        if let Err(error) = std::fs::create_dir(&dir) {
            if error.kind() != std::io::ErrorKind::AlreadyExists {
                return Err(error);
            }
            kill_all(&dir, Duration::from_secs(1));
            let _ = std::fs::remove_dir(&dir);
            std::fs::create_dir(&dir)?;
        }
        let procs = CString::new(dir.join("cgroup.procs").as_os_str().as_encoded_bytes())
            .map_err(|_| std::io::Error::other("the cgroup path has a NUL byte"))?;
        let fd = std::fs::File::open(&dir)?.into();
        Ok(Slot { dir, procs, fd })
    }

    /// Takes back an emptied cgroup: into the pool, unless the memory controller keeps
    /// what its last command did there; then it is removed and a new one made, so
    /// that the next start finds one ready either way.
    fn give_back(&self, slot: Slot) {
        if !self.memory {
            let mut ready = self.ready.lock();
            if ready.len() < READY_MAX {
                return ready.push(slot);
            }
        }
        let _ = std::fs::remove_dir(&slot.dir);
        drop(slot);
        if self.memory && self.ready.lock().is_empty() {
            if let Ok(slot) = self.make() {
                self.ready.lock().push(slot);
            }
        }
    }
}

/// Kills and removes every child cgroup of `parent`; returns the processes killed.
fn reap_tree(parent: &Path) -> usize {
    let mut killed = 0;
    if let Ok(entries) = std::fs::read_dir(parent) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                killed += kill_all(&entry.path(), Duration::from_secs(2));
                let _ = std::fs::remove_dir(entry.path());
            }
        }
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

    pub fn populated(&self) -> bool {
        self.held.lock().is_some() && populated(&self.dir)
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
        self.home.upgrade().is_some_and(|home| !home.memory)
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
        if populated(&self.dir) {
            return false;
        }
        let fd = held.take();
        drop(held);
        match (self.home.upgrade(), fd) {
            (Some(home), Some(fd)) => home.give_back(Slot {
                dir: self.dir.clone(),
                procs: self.procs.clone(),
                fd,
            }),
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
    fn tags_are_stable_and_distinct() {
        assert_eq!(tag_for(Path::new("/a")), tag_for(Path::new("/a")));
        assert_ne!(tag_for(Path::new("/a")), tag_for(Path::new("/b")));
        assert_eq!(tag_for(Path::new("/a")).len(), 16);
    }
}
