//! The test rig: a real terminalfs mount in a temporary directory, driven by real
//! shell tools. `Mount` starts the binary, waits (with a deadline) until the tree
//! answers, and on drop stops the driver and removes the mount, and what a killed
//! driver left in its cgroups, even when a test fails.

#![allow(dead_code)]

pub mod slurm;
pub mod sshd;

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_terminalfs");

/// Polls `condition` every 10 ms until it holds or `timeout` passes.
pub fn wait_until(timeout: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if condition() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Runs `sh -c script` with `$M` set to the mount path; returns its output.
/// Closes `file` and returns the close's errno (None: it succeeded). `File`'s own drop
/// hides it, and a shell ignores an error from closing a redirect.
pub fn close_errno(file: std::fs::File) -> Option<i32> {
    use std::os::fd::IntoRawFd;
    let fd = file.into_raw_fd();
    // SAFETY: closing the descriptor taken from `file`, once.
    let closed = unsafe { libc::close(fd) };
    (closed != 0).then(|| std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
}

/// Shell text that waits until `file` exists: a command that ends when a test says so.
pub fn until_exists(file: &Path) -> String {
    format!("while [ ! -e '{}' ]; do sleep 0.05; done", file.display())
}

pub fn sh_in(mount: &Path, script: &str) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .env("M", mount)
        .stdin(Stdio::null())
        .output()
        .expect("sh runs")
}

pub struct Mount {
    pub dir: tempfile::TempDir,
    pub path: PathBuf,
    pub settings: PathBuf,
    pub state: PathBuf,
    /// The driver's `--state-dir`: the one a test passed to the latest start, or the
    /// mount's own.
    pub spool: PathBuf,
    child: Option<Child>,
    /// Everything the driver logged so far.
    pub log: Arc<Mutex<String>>,
}

pub struct Options<'a> {
    pub args: Vec<&'a str>,
    pub settings: &'a str,
}

impl Default for Options<'_> {
    fn default() -> Self {
        Options {
            args: Vec::new(),
            settings: "{}",
        }
    }
}

impl Mount {
    pub fn start() -> Mount {
        Mount::with(Options::default())
    }

    pub fn with_args(args: &[&str]) -> Mount {
        Mount::with(Options {
            args: args.to_vec(),
            ..Options::default()
        })
    }

    pub fn with(options: Options) -> Mount {
        Mount::with_launcher(options, &|_| {})
    }

    /// Like [`Mount::with`], with a chance to adjust how the driver is launched (its
    /// environment, or what it inherits, through `pre_exec`).
    pub fn with_launcher(options: Options, launcher: &dyn Fn(&mut Command)) -> Mount {
        let dir = tempfile::Builder::new()
            .prefix("tfs-test-")
            .tempdir()
            .expect("a temporary directory");
        // Other users may pass through (for the access test); the mount decides.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = dir.path().join("mnt");
        let settings = dir.path().join("settings.json");
        let state = dir.path().join("state");
        let spool = dir.path().join("spool");
        std::fs::write(&settings, options.settings).unwrap();
        let mut mount = Mount {
            dir,
            path,
            settings,
            state,
            spool,
            child: None,
            log: Arc::new(Mutex::new(String::new())),
        };
        mount.spawn_with(&options.args, launcher);
        mount
    }

    /// Starts the driver on this mount's path and waits until it is ready.
    pub fn spawn(&mut self, args: &[&str]) {
        self.spawn_with(args, &|_| {});
    }

    /// [`Mount::spawn`], letting `launcher` adjust the command first.
    pub fn spawn_with(&mut self, args: &[&str], launcher: &dyn Fn(&mut Command)) {
        let mut command = Command::new(BIN);
        if !args.contains(&"--cwd") {
            command.arg("--cwd").arg(self.dir.path());
        }
        match args.iter().position(|arg| *arg == "--state-dir") {
            Some(at) => {
                self.spool = PathBuf::from(args.get(at + 1).expect("--state-dir takes a directory"))
            }
            None => {
                command.arg("--state-dir").arg(&self.spool);
            }
        }
        command
            .arg("--path")
            .arg(&self.path)
            .arg("--settings")
            .arg(&self.settings)
            .args(args)
            .env("XDG_STATE_HOME", &self.state)
            .env("SHELL", "/bin/sh")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        launcher(&mut command);
        // What an earlier driver of this mount logged says nothing about this one.
        let earlier = self.log.lock().unwrap().len();
        let mut child = command.spawn().expect("the terminalfs binary starts");
        let stderr = child.stderr.take().unwrap();
        let log = self.log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut log = log.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        self.child = Some(child);
        let index = self.path.join("index.md");
        let ready = wait_until(Duration::from_secs(20), || {
            self.log.lock().unwrap()[earlier..].contains("ready: mounted")
                && std::fs::metadata(&index).is_ok()
        });
        if !ready {
            let status = self.child.as_mut().unwrap().try_wait();
            panic!(
                "terminalfs did not become ready: {status:?}\nlog:\n{}",
                self.log()
            );
        }
    }

    /// The spool directories of commands named `name` (one per run of that name).
    pub fn spool_dirs(&self, name: &str) -> Vec<PathBuf> {
        let prefix = format!("{name}.");
        std::fs::read_dir(&self.spool)
            .map(|entries| {
                entries
                    .flatten()
                    .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                    .map(|e| e.path())
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Waits until the driver's log holds `text`; fails with the whole log if it never does.
    pub fn wait_for_log(&self, text: &str) {
        assert!(
            wait_until(Duration::from_secs(30), || self.log().contains(text)),
            "no {text:?} in the log:\n{}",
            self.log()
        );
    }

    /// Waits (up to 30 s) until `relative` under the mount holds `needle`; returns what
    /// it holds then.
    pub fn holds(&self, relative: &str, needle: &str) -> String {
        let path = self.p(relative);
        let mut text = String::new();
        let found = wait_until(Duration::from_secs(30), || {
            text = std::fs::read_to_string(&path).unwrap_or_default();
            text.contains(needle)
        });
        assert!(
            found,
            "{relative} never held {needle:?}: {text:?}\n{}",
            self.log()
        );
        text
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("the driver runs").id()
    }

    pub fn p(&self, relative: &str) -> PathBuf {
        self.path.join(relative)
    }

    /// Runs a shell script with `$M` set to the mount path.
    pub fn sh(&self, script: &str) -> Output {
        sh_in(&self.path, script)
    }

    /// Runs a script that must succeed; returns its stdout.
    pub fn ok(&self, script: &str) -> String {
        let out = self.sh(script);
        assert!(
            out.status.success(),
            "script failed ({}): {script}\nstdout: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn read(&self, relative: &str) -> String {
        std::fs::read_to_string(self.p(relative))
            .unwrap_or_else(|e| panic!("cannot read {relative}: {e}\n{}", self.log()))
    }

    /// Writes a command and waits for it to stop; returns the `wait` answer.
    pub fn run(&self, name: &str, command: &str) -> String {
        std::fs::write(self.p(&format!("ctl/{name}")), command)
            .unwrap_or_else(|e| panic!("cannot write ctl/{name}: {e}"));
        self.wait(name)
    }

    /// Reads `wait` until it says the command stopped (each read may time out).
    pub fn wait(&self, name: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let answer = self.read(&format!("cmd/{name}/wait"));
            if answer != "running\n" || Instant::now() > deadline {
                return answer;
            }
        }
    }

    pub fn signal(&self, signal: i32) {
        // SAFETY: sending a signal to our own child process.
        unsafe {
            libc::kill(self.pid() as i32, signal);
        }
    }

    /// Sends SIGTERM and waits (with a deadline) for the driver to exit.
    pub fn stop(&mut self) -> ExitStatus {
        self.signal(libc::SIGTERM);
        self.wait_exit(Duration::from_secs(20))
            .expect("terminalfs exits after SIGTERM")
    }

    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let child = self.child.as_mut()?;
        let mut status = None;
        wait_until(timeout, || {
            status = child.try_wait().ok().flatten();
            status.is_some()
        });
        if status.is_some() {
            self.child = None;
        }
        status
    }

    /// Forgets the driver without stopping it (for crash tests that kill it).
    pub fn take_child(&mut self) -> Option<Child> {
        self.child.take()
    }

    pub fn is_mounted(&self) -> bool {
        is_mounted(&self.path)
    }
}

/// Whether /proc/self/mountinfo lists `path` as a mount point.
pub fn is_mounted(path: &Path) -> bool {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let wanted = path.to_string_lossy().replace(' ', "\\040");
    info.lines()
        .any(|line| line.split(' ').nth(4) == Some(wanted.as_str()))
}

impl Drop for Mount {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SAFETY: signalling our own child.
            unsafe {
                libc::kill(child.id() as i32, libc::SIGTERM);
            }
            let exited = wait_until(Duration::from_secs(15), || {
                matches!(child.try_wait(), Ok(Some(_)))
            });
            if !exited {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
        if is_mounted(&self.path) {
            let _ = Command::new("umount").arg("-l").arg(&self.path).status();
        }
        // A driver killed on purpose leaves its cgroups for the next one on its path,
        // and no later test uses this path: the product's own cleanup removes them.
        let _ = Command::new(BIN)
            .arg("--unmount")
            .arg("--path")
            .arg(&self.path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// The fields of `/proc/<pid>/stat` after `(comm)`: state, ppid, pgrp, session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    pub state: char,
    pub ppid: i32,
    pub pgrp: i32,
    pub session: i32,
}

/// Reads `/proc/<pid>/stat`; None once the process is gone (or fully reaped).
pub fn proc_stat(pid: i32) -> Option<ProcStat> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // comm may hold spaces and parentheses: the fields start after the last ')'.
    let fields: Vec<&str> = stat.rsplit(')').next()?.split_whitespace().collect();
    Some(ProcStat {
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        session: fields.get(3)?.parse().ok()?,
    })
}

/// Every process on the machine with its stat fields.
pub fn all_processes() -> Vec<(i32, ProcStat)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_string_lossy().parse::<i32>().ok())
        .filter_map(|pid| proc_stat(pid).map(|stat| (pid, stat)))
        .collect()
}

/// Whether `pid` runs; a zombie no longer counts.
pub fn process_alive(pid: i32) -> bool {
    proc_stat(pid).is_some_and(|stat| stat.state != 'Z')
}

/// The live (non-zombie) members of process group `pgid`.
pub fn group_members(pgid: i32) -> Vec<i32> {
    all_processes()
        .into_iter()
        .filter(|(_, stat)| stat.pgrp == pgid && stat.state != 'Z')
        .map(|(pid, _)| pid)
        .collect()
}

/// The children of `parent`, with their state ('Z' for a zombie).
pub fn children_of(parent: i32) -> Vec<(i32, char)> {
    all_processes()
        .into_iter()
        .filter(|(_, stat)| stat.ppid == parent)
        .map(|(pid, stat)| (pid, stat.state))
        .collect()
}

/// How many descriptors `pid` has open.
pub fn fd_count(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |dir| dir.count())
}

/// How many threads `pid` has.
pub fn thread_count(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |dir| dir.count())
}

/// When a process started (clock ticks after boot), to tell it from a later one that
/// reuses its pid.
pub fn start_time(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After "(comm)": field 22 of stat is the 20th.
    stat.rsplit(')')
        .next()?
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()
}

/// SIGKILLs, when dropped, every recorded process that still runs, so a failing test
/// leaves nothing behind (not even what it made escape the driver on purpose). A pid
/// reused by another process since is left alone.
#[derive(Default)]
pub struct Reaper {
    pids: Mutex<Vec<(i32, Option<u64>)>>,
}

impl Reaper {
    pub fn watch(&self, pid: i32) {
        self.pids.lock().unwrap().push((pid, start_time(pid)));
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        for (pid, started) in self.pids.lock().unwrap().drain(..) {
            if started.is_some() && process_alive(pid) && start_time(pid) == started {
                // SAFETY: sending a signal to a process this test made.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
    }
}

#[cfg(target_os = "linux")]
/// Whether thread or process `id` (a pid, or a tid of this process) sits in read(2)
/// right now, from `/proc/<id>/syscall` (or `/proc/self/task/<id>/syscall`).
fn in_read(syscall_file: &str) -> bool {
    in_syscall(syscall_file, libc::SYS_read)
}

#[cfg(target_os = "linux")]
fn in_syscall(syscall_file: &str, number: libc::c_long) -> bool {
    std::fs::read_to_string(syscall_file)
        .is_ok_and(|s| s.split_whitespace().next() == Some(&number.to_string()))
}

#[cfg(target_os = "linux")]
/// Waits (with a deadline) until process `pid` is blocked in openat(2).
pub fn wait_in_open(pid: i32) -> bool {
    wait_until(Duration::from_secs(10), || {
        in_syscall(&format!("/proc/{pid}/syscall"), libc::SYS_openat)
    })
}

#[cfg(target_os = "linux")]
/// Waits (with a deadline) until process `pid` is blocked in read(2): a reader that is
/// really parked, not one that has yet to open its file.
pub fn wait_in_read(pid: i32) -> bool {
    wait_until(Duration::from_secs(10), || {
        in_read(&format!("/proc/{pid}/syscall"))
    })
}

#[cfg(target_os = "linux")]
/// Waits (with a deadline) until process `pid` is blocked in write(2).
pub fn wait_in_write(pid: i32) -> bool {
    wait_until(Duration::from_secs(10), || {
        in_syscall(&format!("/proc/{pid}/syscall"), libc::SYS_write)
    })
}

#[cfg(target_os = "linux")]
/// Reads `path` to its end on a thread; returns, once that thread is inside read(2) on
/// the open file, a receiver for what it read.
pub fn parked_read(path: PathBuf) -> mpsc::Receiver<std::io::Result<Vec<u8>>> {
    use std::io::Read;
    let (sender, receiver) = mpsc::channel();
    let (tid_sender, tid_receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let read = (|| {
            let mut file = std::fs::File::open(&path)?;
            // SAFETY: gettid has no preconditions.
            let _ = tid_sender.send(unsafe { libc::gettid() });
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes)?;
            Ok(bytes)
        })();
        let _ = tid_sender.send(-1);
        let _ = sender.send(read);
    });
    let tid = tid_receiver.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(tid > 0, "the reader could not open its file");
    // Parked: the thread sits in read(2) (or still has something to read first).
    let parked = wait_until(Duration::from_secs(10), || {
        in_read(&format!("/proc/self/task/{tid}/syscall"))
    });
    assert!(parked, "the reader never blocked in read(2)");
    receiver
}

/// `tail -f -n +1 -s 0.1 <path>`, its lines read on a thread so that every wait for a
/// line has a deadline; killed (and reaped) when dropped, even when a test fails.
pub struct Tail {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Tail {
    pub fn follow(path: &Path) -> Tail {
        let mut child = Command::new("tail")
            .args(["-f", "-n", "+1", "-s", "0.1"])
            .arg(path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("tail starts");
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Tail { child, lines }
    }

    /// Sends `signal` to tail (SIGSTOP holds a reader still while output comes).
    pub fn signal(&self, signal: i32) {
        // SAFETY: a signal to our own child, which is not reaped before it is dropped.
        unsafe { libc::kill(self.child.id() as i32, signal) };
    }

    /// The next line tail prints, or None when none comes before `deadline`.
    pub fn next_line(&self, deadline: Instant) -> Option<String> {
        let left = deadline.saturating_duration_since(Instant::now());
        self.lines.recv_timeout(left).ok()
    }

    /// Checks that tail prints exactly `want`, line by line, all within `within`.
    pub fn prints(&self, want: impl IntoIterator<Item = String>, within: Duration) {
        let deadline = Instant::now() + within;
        for (index, want) in want.into_iter().enumerate() {
            let line = self.next_line(deadline).unwrap_or_else(|| {
                panic!(
                    "tail printed no line {} ({want:?}) within {within:?}",
                    index + 1
                )
            });
            assert_eq!(line, want, "line {}", index + 1);
        }
    }
}

impl Drop for Tail {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `/proc/<pid>/status` field in KiB (`VmRSS:`, `VmSize:`); 0 once the process is
/// gone.
pub fn status_kib(pid: u32, key: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(key))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Runs the terminalfs binary once, not as a mount (`--unmount`, `--init-settings`,
/// a start that must fail), and returns what it printed and how it ended.
pub fn run_binary(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    Command::new(BIN)
        .args(args.iter().map(|arg| arg.as_ref()))
        .stdin(Stdio::null())
        .output()
        .expect("the terminalfs binary runs")
}

/// Asserts that a run of the binary succeeded, showing its stderr when it did not.
pub fn succeeded(out: &Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Reads a file to the end with 1 MiB reads; returns MiB/s (for the benches).
pub fn read_rate(path: &Path) -> f64 {
    use std::io::Read;
    let mut file = std::fs::File::open(path).unwrap();
    let mut buffer = vec![0u8; 1 << 20];
    let started = Instant::now();
    let mut total = 0u64;
    loop {
        let n = file.read(&mut buffer).unwrap();
        if n == 0 {
            break;
        }
        total += n as u64;
    }
    total as f64 / (1 << 20) as f64 / started.elapsed().as_secs_f64()
}

/// Runs the benches whose name holds the filter `cargo bench` passes after its own
/// flags (all of them without one), in the order given.
pub fn run_benches(all: &[(&str, fn())]) {
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with("--"));
    for (name, bench) in all {
        if filter.as_deref().is_none_or(|f| name.contains(f)) {
            bench();
        }
    }
}

/// A mount whose `--shell` is removed once it has started, so its commands' shell
/// cannot start (a `--shell` that names nothing at start is a usage error). Returns
/// the shell's path, and the directory that held it, to keep until the test ends.
pub fn mount_with_a_vanished_shell() -> (Mount, PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let shell = dir.path().join("shell");
    std::fs::copy("/bin/sh", &shell).expect("a copy of /bin/sh");
    let mount = Mount::with_args(&["--shell", shell.to_str().expect("a UTF-8 path")]);
    std::fs::remove_file(&shell).expect("the shell is removed");
    (mount, shell, dir)
}
