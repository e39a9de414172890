//! Per-command cgroups (Linux, cgroup v2), used when the driver may create cgroups below
//! its own: as root, or as a systemd user service with `Delegate=yes`.
//!
//! Layout: `<driver's cgroup>/terminalfs-<tag>/cmd-<job id>`, where the tag is derived
//! from the mount path. A cgroup holds every descendant of a command, including those
//! that called `setsid`, so stopping a command reaches all of it. Because the parent
//! directory is named after the mount path, the next driver on the same path finds
//! what a crashed one left behind and reaps it.
//!
//! The cgroup2 mount is found in `/proc/self/mountinfo` and the driver's own cgroup in
//! `/proc/self/cgroup`; no path is assumed. Where anything fails, the supervisor falls
//! back to process groups.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Where command cgroups are made, and what they can do.
#[derive(Debug)]
pub struct Cgroups {
    parent: PathBuf,
    /// The memory controller is enabled for command cgroups (`memory.max` works).
    memory: bool,
}

/// One command's cgroup.
#[derive(Debug)]
pub struct CommandCgroup {
    dir: PathBuf,
    /// `cgroup.procs` as a C string, prepared for the child between fork and exec.
    procs: CString,
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
        // Prove that a process can be placed here before relying on it.
        let probe = parent.join("probe");
        let _ = std::fs::create_dir(&probe);
        let procs = probe.join("cgroup.procs");
        let placed = std::fs::metadata(&procs).is_ok();
        let _ = std::fs::remove_dir(&probe);
        if !placed {
            let _ = std::fs::remove_dir(&parent);
            return Err(format!("cannot create cgroups below {}", parent.display()));
        }
        Ok((Cgroups { parent, memory }, reaped))
    }

    pub fn memory(&self) -> bool {
        self.memory
    }

    pub fn parent(&self) -> &Path {
        &self.parent
    }

    /// Creates the cgroup for one command, with `memory.max` when asked and possible.
    pub fn create(&self, job: u64, memory_max: Option<u64>) -> std::io::Result<CommandCgroup> {
        let dir = self.parent.join(format!("cmd-{job}"));
        if dir.is_dir() {
            kill_all(&dir, Duration::from_secs(1));
            let _ = std::fs::remove_dir(&dir);
        }
        std::fs::create_dir(&dir)?;
        if let (Some(bytes), true) = (memory_max, self.memory) {
            write(&dir.join("memory.max"), &bytes.to_string())?;
            // Without swap the limit is the limit.
            let _ = write(&dir.join("memory.swap.max"), "0");
        }
        let procs = CString::new(dir.join("cgroup.procs").as_os_str().as_encoded_bytes())
            .map_err(|_| std::io::Error::other("the cgroup path has a NUL byte"))?;
        Ok(CommandCgroup { dir, procs })
    }

    /// Sends `signal` to every process in every command cgroup but those in `skip`
    /// (signalled already), including what a command that has stopped left running
    /// (shutdown). Returns how many processes it signalled.
    pub fn signal_all(&self, signal: i32, skip: &[&Path]) -> usize {
        let mut seen = 0;
        if let Ok(entries) = std::fs::read_dir(&self.parent) {
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
        populated(&self.parent)
    }

    /// Kills everything in every command cgroup and removes them (shutdown).
    pub fn tear_down(&self) {
        reap_tree(&self.parent);
        let _ = std::fs::remove_dir(&self.parent);
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
    /// The job is gone: its cgroup goes too, if it is empty (the kernel refuses
    /// otherwise, and shutdown or the next start on this path takes care of it).
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
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

    /// Sends a signal to every process in the cgroup, except the members of process
    /// group `skip`, which the caller has just signalled with killpg: a process must
    /// get one SIGTERM, not two, since many programs take a second one as "stop now,
    /// skip the cleanup". Returns whether any process was there.
    pub fn signal(&self, signal: i32, skip: Option<i32>) -> bool {
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
        populated(&self.dir)
    }

    /// Whether the memory controller killed something here.
    pub fn oom_killed(&self) -> bool {
        std::fs::read_to_string(self.dir.join("memory.events"))
            .unwrap_or_default()
            .lines()
            .filter_map(|line| line.strip_prefix("oom_kill "))
            .any(|count| count.trim() != "0")
    }

    /// Removes the cgroup once it is empty; returns whether it is gone.
    pub fn remove(&self) -> bool {
        !self.dir.exists() || std::fs::remove_dir(&self.dir).is_ok()
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
