//! Starting, stopping and recovering the driver, and what it logs.

use crate::common::{
    group_members, is_mounted, process_alive, run_binary, succeeded, wait_until, Mount, Options,
    Reaper, BIN,
};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn refuses_to_start_without_settings_and_says_how() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope/settings.json");
    let out = run_binary(&[&"--path", &dir.path().join("mnt"), &"--settings", &missing]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&missing.display().to_string()), "{stderr}");
    assert!(stderr.contains("terminalfs --init-settings"), "{stderr}");
    assert!(!is_mounted(&dir.path().join("mnt")));
}

#[test]
fn refuses_settings_that_are_not_a_json_object() {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("settings.json");
    std::fs::write(&settings, "[1, 2").unwrap();
    let out = run_binary(&[&"--path", &dir.path().join("mnt"), &"--settings", &settings]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("settings.json"));
}

#[test]
fn refuses_a_mount_point_that_is_not_an_empty_directory() {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("settings.json");
    std::fs::write(&settings, "{}").unwrap();
    let busy = dir.path().join("busy");
    std::fs::create_dir(&busy).unwrap();
    std::fs::write(busy.join("notes.txt"), "mine").unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, "mine").unwrap();
    // A file is a bad value for the flag (exit 2); a busy directory is refused at the
    // mount (exit 1).
    for (path, sentence, code) in [
        (
            &busy,
            "is not empty: mounting there would hide its files",
            1,
        ),
        (&file, "not a directory", 2),
    ] {
        let out = run_binary(&[&"--path", path, &"--settings", &settings]);
        assert_eq!(out.status.code(), Some(code), "{out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(sentence), "{stderr}");
        assert!(stderr.contains(&path.display().to_string()), "{stderr}");
        assert!(!is_mounted(path));
    }
    assert_eq!(
        std::fs::read_to_string(busy.join("notes.txt")).unwrap(),
        "mine"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
}

#[test]
fn bad_flag_values_name_the_flag_and_exit_2() {
    for (flag, value, sentence) in [
        ("--keep", "5x", "unknown unit"),
        ("--max-output", "lots", "not a size"),
        ("--wait-timeout", "", "not a duration"),
        // Values out of range say what the range is.
        ("--max-output", "0", "give at least 2"),
        ("--max-output", "1", "give at least 2"),
        ("--wait-timeout", "0", "give more than zero"),
        ("--wait-timeout", "0ms", "give more than zero"),
        ("--max-spool", "0", "give more than zero"),
        ("--max-spool", "0k", "give more than zero"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mnt");
        let out = run_binary(&[&flag, &value, &"--path", &path]);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(flag), "{flag} {value}: {stderr}");
        assert!(stderr.contains(sentence), "{flag} {value}: {stderr}");
        assert!(!path.exists(), "{flag} {value} made the mount point");
    }
    // Values naming files and directories are checked before anything is made.
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("settings.json");
    std::fs::write(&settings, "{}").unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, "mine").unwrap();
    let (file, folder) = (file.to_str().unwrap(), dir.path().to_str().unwrap());
    for (flag, value, sentence) in [
        ("--cwd", "/nonexistent", "cannot use it as a directory"),
        ("--cwd", file, "not a directory"),
        ("--path", file, "not a directory"),
        ("--state-dir", file, "not a directory"),
        ("--settings", folder, "a directory, not a file"),
        ("--audit-log", folder, "a directory, not a file"),
        ("--shell", "/nonexistent/sh", "not an executable file"),
        ("--shell", file, "not an executable file"),
        (
            "--shell",
            "no-such-shell-anywhere",
            "not an executable file",
        ),
    ] {
        let path = dir.path().join("mnt");
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&flag, &value];
        if flag != "--settings" {
            args.extend([&"--settings" as &dyn AsRef<std::ffi::OsStr>, &settings]);
        }
        if flag != "--path" {
            args.extend([&"--path" as &dyn AsRef<std::ffi::OsStr>, &path]);
        }
        let out = run_binary(&args);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(flag), "{flag} {value}: {stderr}");
        assert!(stderr.contains(value), "{flag} {value}: {stderr}");
        assert!(stderr.contains(sentence), "{flag} {value}: {stderr}");
        assert!(!path.exists(), "{flag} {value} made the mount point");
    }
    assert_eq!(std::fs::read_to_string(file).unwrap(), "mine");
    // The smallest values in range start.
    let mount = Mount::with_args(&["--max-output", "2"]);
    assert_eq!(mount.run("small", "echo abc"), "completed\n");
    let result: serde_json::Value =
        serde_json::from_str(&mount.read("cmd/small/result.json")).unwrap();
    assert_eq!(result["stdout"]["bytes"], 4, "{result}");
    assert_eq!(result["stdout"]["kept"], 2, "{result}");
}

// Linux only: it watches the reader through /proc.
#[cfg(target_os = "linux")]
#[test]
fn logs_ready_and_shuts_down_cleanly_on_sigterm_and_sigint() {
    for signal in [libc::SIGTERM, libc::SIGINT] {
        let mut mount = Mount::start();
        assert!(mount.log().contains("ready: mounted at"));
        assert!(mount.is_mounted());
        std::fs::write(mount.p("ctl/long"), "sleep 300").unwrap();
        let pid: i32 = mount.read("cmd/long/pid").trim().parse().unwrap();
        // A parked wait (its reader inside read(2)) must be answered by the shutdown.
        let waiter = crate::common::parked_read(mount.p("cmd/long/wait"));
        mount.signal(signal);
        let status = mount
            .wait_exit(Duration::from_secs(20))
            .expect("driver exits");
        assert_eq!(status.code(), Some(0), "log: {}", mount.log());
        assert!(!is_mounted(&mount.path), "still mounted after {signal}");
        // SAFETY: probing whether a pid still exists.
        assert!(wait_until(Duration::from_secs(5), || unsafe {
            libc::kill(pid, 0)
        } != 0));
        let answer = waiter
            .recv_timeout(Duration::from_secs(5))
            .expect("a parked wait was left hanging")
            .expect("a parked wait is answered, not failed");
        // Stopped by the shutdown, or answered as if timed out just before that.
        assert!(
            [&b"error\n"[..], b"running\n"].contains(&answer.as_slice()),
            "{:?}",
            String::from_utf8_lossy(&answer)
        );
    }
}

#[test]
fn a_stale_mount_is_recovered_by_the_next_start_and_by_unmount() {
    // What the crashed driver leaves running is stopped here if the test fails first.
    let reaper = Reaper::default();
    let mut mount = Mount::start();
    let mut child = mount.take_child().unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    // The kernel keeps a dead mount: "Transport endpoint is not connected".
    let error = std::fs::metadata(mount.p("index.md")).unwrap_err();
    assert_eq!(error.raw_os_error(), Some(libc::ENOTCONN));
    mount.spawn(&[]);
    assert!(
        mount.log().contains("cleaned up a stale mount"),
        "{}",
        mount.log()
    );
    assert!(mount.read("index.md").contains("terminalfs"));

    // Now crash again, with a command whose descendant left its session, and clean up
    // with --unmount: the mount goes and so does what the crashed driver left.
    std::fs::write(
        mount.p("ctl/orphan"),
        "setsid sleep 300 & echo $!; sleep 300",
    )
    .unwrap();
    assert!(wait_until(Duration::from_secs(5), || !mount
        .read("cmd/orphan/stdout")
        .is_empty()));
    let orphan: i32 = mount.read("cmd/orphan/stdout").trim().parse().unwrap();
    reaper.watch(orphan);
    let shell: i32 = mount.read("cmd/orphan/pid").trim().parse().unwrap();
    assert!(wait_until(Duration::from_secs(5), || group_members(shell)
        .len()
        >= 2));
    for pid in group_members(shell) {
        reaper.watch(pid);
    }
    // The spawner, which would stop what the commands started once the driver is
    // gone, is killed first: what is left is for --unmount to stop.
    let spawner = crate::common::all_processes()
        .into_iter()
        .map(|(pid, _)| pid)
        .find(|&pid| {
            crate::common::proc_stat(pid).is_some_and(|stat| stat.ppid == mount.pid() as i32)
                && std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|line| {
                    line.split(|b| *b == 0)
                        .any(|arg| arg == b"--internal-spawner")
                })
        })
        .expect("the driver's spawner");
    // SAFETY: killing the spawner of the driver this test started.
    unsafe {
        libc::kill(spawner, libc::SIGKILL);
    }
    let mut child = mount.take_child().unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    let out = run_binary(&[&"--unmount", &"--path", &mount.path]);
    succeeded(&out);
    assert!(!is_mounted(&mount.path));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("a crashed driver left running"), "{said}");
    assert!(
        wait_until(Duration::from_secs(5), || !process_alive(orphan)),
        "{orphan} survived"
    );
    // And once more when nothing is mounted: safe, and it says so (exit 32, as umount).
    let out = run_binary(&[&"--unmount", &"--path", &mount.path]);
    assert_eq!(out.status.code(), Some(32));
    assert!(String::from_utf8_lossy(&out.stdout).contains("nothing was mounted"));
}

#[test]
fn unmount_stops_a_live_driver() {
    let mut mount = Mount::start();
    let out = run_binary(&[&"--unmount", &"--path", &mount.path]);
    succeeded(&out);
    let status = mount
        .wait_exit(Duration::from_secs(20))
        .expect("driver exits when unmounted");
    assert_eq!(status.code(), Some(0));
    // A driver that answers is let go of, never aborted.
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("unmounted"), "{said}");
    assert!(!said.contains("abort"), "{said}");
}

#[cfg(target_os = "linux")]
#[test]
fn a_driver_whose_mount_was_detached_does_not_unmount_it_again() {
    let mut mount = Mount::start();
    // A file held open keeps the connection, and so the session, after the detach.
    let mut holder = Command::new("sh")
        .arg("-c")
        .arg("exec 3< \"$1\"; exec sleep 60")
        .arg("sh")
        .arg(mount.p("index.md"))
        .spawn()
        .unwrap();
    let held = wait_until(Duration::from_secs(10), || {
        std::fs::read_dir(format!("/proc/{}/fd", holder.id())).is_ok_and(|fds| {
            fds.flatten()
                .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|to| to.ends_with("index.md")))
        })
    });
    let said = unmount_within_a_minute(&mount.path, &["--kill-grace", "1s"]);
    let _ = holder.kill();
    let _ = holder.wait();
    assert!(held, "the holder never opened index.md");
    assert!(said.contains("unmounted"), "{said}");
    let status = mount
        .wait_exit(Duration::from_secs(30))
        .expect("the driver exits once its mount is detached");
    assert_eq!(status.code(), Some(0));
    let log = mount.log();
    assert!(log.contains("the mount was detached"), "{log}");
    assert!(!log.contains("unmount was refused"), "{log}");
    assert!(!log.contains("cannot unmount"), "{log}");
}

/// Sends SIGCONT to a driver stopped on purpose when dropped (before its `Mount`), and
/// SIGKILLs the readers it holds, so a failing test leaves nothing stopped or blocked.
#[cfg(target_os = "linux")]
struct Stopped {
    driver: i32,
    readers: Vec<std::process::Child>,
}

#[cfg(target_os = "linux")]
impl Stopped {
    /// SIGSTOPs `driver` and waits until every thread of it has stopped: from then on
    /// it takes and answers no request.
    fn driver(driver: u32) -> Stopped {
        let driver = driver as i32;
        // SAFETY: signalling the test's own driver.
        unsafe {
            libc::kill(driver, libc::SIGSTOP);
        }
        let stopped = Stopped {
            driver,
            readers: Vec::new(),
        };
        let tasks = format!("/proc/{driver}/task");
        let all_stopped = wait_until(Duration::from_secs(10), || {
            std::fs::read_dir(&tasks).is_ok_and(|entries| {
                entries.flatten().all(|task| {
                    std::fs::read_to_string(task.path().join("stat")).is_ok_and(|stat| {
                        stat.rsplit(')')
                            .next()
                            .and_then(|s| s.split_whitespace().next())
                            == Some("T")
                    })
                })
            })
        });
        assert!(all_stopped, "the driver never stopped");
        stopped
    }

    /// Waits until every reader has exited; their statuses, or None past `limit`.
    fn readers_exit(&mut self, limit: Duration) -> Option<Vec<std::process::ExitStatus>> {
        let mut done = Vec::new();
        let ended = wait_until(limit, || {
            done = self
                .readers
                .iter_mut()
                .filter_map(|reader| reader.try_wait().ok().flatten())
                .collect();
            done.len() == self.readers.len()
        });
        ended.then_some(done)
    }
}

#[cfg(target_os = "linux")]
impl Drop for Stopped {
    fn drop(&mut self) {
        // SAFETY: signalling the test's own driver.
        unsafe {
            libc::kill(self.driver, libc::SIGCONT);
        }
        for reader in &mut self.readers {
            let _ = reader.kill();
            let _ = reader.wait();
        }
    }
}

/// Runs `terminalfs --unmount` with `extra` flags, killing it (and failing) past a
/// minute: an unmount that hangs is the failure this guards against.
#[cfg(target_os = "linux")]
fn unmount_within_a_minute(path: &std::path::Path, extra: &[&str]) -> String {
    let mut unmount = Command::new(BIN)
        .arg("--unmount")
        .arg("--path")
        .arg(path)
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = exit_within(&mut unmount, Duration::from_secs(60));
    let out = unmount.wait_with_output().unwrap();
    assert!(status.is_some(), "--unmount hung");
    succeeded(&out);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Waits up to `limit` for `child` to exit, killing it past that: its status, or None.
#[cfg(target_os = "linux")]
fn exit_within(
    child: &mut std::process::Child,
    limit: Duration,
) -> Option<std::process::ExitStatus> {
    let mut status = None;
    wait_until(limit, || {
        status = child.try_wait().unwrap();
        status.is_some()
    });
    if status.is_none() {
        let _ = child.kill();
    }
    status
}

/// A reader of `file` under the mount, as a process of its own (a thread blocked on a
/// mount that does not answer could never be stopped).
#[cfg(target_os = "linux")]
fn reader(file: std::path::PathBuf) -> std::process::Child {
    Command::new("cat")
        .arg(file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Starts `sleep 300` as `long` and a reader of its `wait`, once the driver has
/// parked that read.
#[cfg(target_os = "linux")]
fn parked_wait_reader(mount: &Mount) -> std::process::Child {
    mount.ok("echo 'sleep 300' > $M/ctl/long");
    mount.holds("cmd/long/status", "running");
    let mut parked = reader(mount.p("cmd/long/wait"));
    if !crate::common::wait_in_read(parked.id() as i32) {
        let _ = parked.kill();
        let _ = parked.wait();
        panic!("cat never blocked reading wait");
    }
    parked
}

#[cfg(target_os = "linux")]
#[test]
fn unmount_aborts_a_driver_that_does_not_answer_and_frees_its_readers() {
    let mut mount = Mount::start();
    // One reader parked by the driver (a `wait`), one whose open the driver never takes.
    let parked = parked_wait_reader(&mount);
    let mut stopped = Stopped::driver(mount.pid());
    stopped.readers.push(parked);
    let blocked = reader(mount.p("index.md"));
    let blocked_pid = blocked.id() as i32;
    stopped.readers.push(blocked);
    assert!(
        crate::common::wait_in_open(blocked_pid),
        "cat never blocked opening index.md"
    );
    // The unmount's wait for the driver is --kill-grace plus 5 s.
    let said = unmount_within_a_minute(&mount.path, &["--kill-grace", "1s"]);
    assert!(said.contains("so it was aborted"), "{said}");
    assert!(!mount.is_mounted());
    let statuses = stopped
        .readers_exit(Duration::from_secs(30))
        .expect("the blocked readers return once the connection is aborted");
    for status in statuses {
        assert!(
            !status.success(),
            "a reader of an aborted mount read it all"
        );
    }
    // Resumed, the driver finds its session ended, stops its command and exits.
    drop(stopped);
    let status = mount
        .wait_exit(Duration::from_secs(30))
        .expect("the resumed driver exits");
    assert_eq!(status.code(), Some(0));
    assert!(mount.log().contains("stopping 1 running command(s)"));
}

#[cfg(target_os = "linux")]
#[test]
fn unmount_force_aborts_at_once() {
    let mut mount = Mount::start();
    let mut stopped = Stopped::driver(mount.pid());
    stopped.readers.push(reader(mount.p("index.md")));
    assert!(crate::common::wait_in_open(stopped.readers[0].id() as i32));
    let said = unmount_within_a_minute(&mount.path, &["--force"]);
    assert!(said.contains("aborted its FUSE connection"), "{said}");
    assert!(!said.contains("still in use"), "{said}");
    assert!(!mount.is_mounted());
    let statuses = stopped
        .readers_exit(Duration::from_secs(30))
        .expect("the blocked reader returns once the connection is aborted");
    assert!(!statuses[0].success());
    drop(stopped);
    assert!(mount.wait_exit(Duration::from_secs(30)).is_some());
}

/// A forced unmount frees a reader the driver had parked (a `wait`), and the driver's
/// log says the mount was aborted, not that the reader was interrupted by a signal.
#[cfg(target_os = "linux")]
#[test]
fn a_forced_unmount_is_logged_as_an_abort() {
    let mut mount = Mount::with_args(&["--verbose"]);
    let mut parked = parked_wait_reader(&mount);
    // The driver is left to stop its command: only the connection is aborted.
    let said = unmount_within_a_minute(&mount.path, &["--force"]);
    let status = exit_within(&mut parked, Duration::from_secs(30));
    let _ = parked.wait();
    assert!(said.contains("aborted its FUSE connection"), "{said}");
    assert!(
        status.is_some_and(|status| !status.success()),
        "the parked reader returns with an error once the mount is aborted"
    );
    mount.wait_for_log("the mount was aborted by force; its caller already got an error");
    assert!(mount.wait_exit(Duration::from_secs(30)).is_some());
    assert!(
        !mount.log().contains("interrupted by a signal"),
        "{}",
        mount.log()
    );
}

#[test]
fn a_second_driver_on_a_live_mount_is_refused() {
    let mount = Mount::start();
    // Its default state directory would be under this one.
    let state_home = mount.dir.path().join("second");
    let out = Command::new(BIN)
        .arg("--path")
        .arg(&mount.path)
        .arg("--settings")
        .arg(&mount.settings)
        .env("XDG_STATE_HOME", &state_home)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("already mounted"));
    assert!(
        !state_home.exists(),
        "a refused driver makes no state directory"
    );
    assert!(mount.read("index.md").contains("terminalfs"));
}

#[test]
fn other_users_cannot_read_or_write_the_mount() {
    let mount = Mount::start();
    // Control: nobody can reach the directory that holds the mount point.
    let control = Command::new("runuser")
        .args(["-u", "nobody", "--", "ls"])
        .arg(mount.dir.path())
        .output()
        .unwrap();
    assert!(
        control.status.success(),
        "{}",
        String::from_utf8_lossy(&control.stderr)
    );
    for args in [
        vec!["ls".to_string(), mount.path.display().to_string()],
        vec!["cat".to_string(), mount.p("index.md").display().to_string()],
        vec![
            "sh".to_string(),
            "-c".to_string(),
            format!("echo id > {}/ctl/intruder", mount.path.display()),
        ],
    ] {
        let out = Command::new("runuser")
            .args(["-u", "nobody", "--"])
            .args(&args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?} was allowed");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("Permission denied"),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(!mount.p("ctl/intruder").exists());
    assert!(!mount.p("cmd/intruder").exists());
}

/// Stops a daemon (from its pid file) and removes its mount when dropped, so a failing
/// daemon test leaves neither behind.
struct DaemonGuard {
    pid_file: std::path::PathBuf,
    path: std::path::PathBuf,
}

impl Drop for DaemonGuard {
    fn drop(&mut self) {
        let pid = std::fs::read_to_string(&self.pid_file)
            .ok()
            .and_then(|text| text.trim().parse::<i32>().ok());
        if let Some(pid) = pid.filter(|&pid| pid > 0 && process_alive(pid)) {
            // SAFETY: signalling the daemon this test started.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
            if !wait_until(Duration::from_secs(15), || !process_alive(pid)) {
                // SAFETY: as above.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
        if is_mounted(&self.path) {
            let _ = Command::new("umount").arg("-l").arg(&self.path).status();
        }
    }
}

#[test]
fn daemon_mode_detaches_once_ready() {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("settings.json");
    std::fs::write(&settings, "{}").unwrap();
    let path = dir.path().join("mnt");
    let pid_file = dir.path().join("pid");
    let _guard = DaemonGuard {
        pid_file: pid_file.clone(),
        path: path.clone(),
    };
    let started = Instant::now();
    let out = Command::new(BIN)
        .arg("--path")
        .arg(&path)
        .arg("--settings")
        .arg(&settings)
        .arg("--daemon")
        .arg("--pid-file")
        .arg(&pid_file)
        .arg("--log-file")
        .arg(dir.path().join("log"))
        .env("XDG_STATE_HOME", dir.path().join("state"))
        .output()
        .unwrap();
    succeeded(&out);
    assert!(started.elapsed() < Duration::from_secs(20));
    // Ready means ready: the tree answers right away.
    assert!(std::fs::read_to_string(path.join("index.md"))
        .unwrap()
        .contains("terminalfs"));
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: signalling the daemon we started.
    unsafe {
        libc::kill(pid, libc::SIGTERM);
    }
    assert!(wait_until(Duration::from_secs(20), || !is_mounted(&path)));
    // Once it has ended, its pid file is gone with it.
    assert!(wait_until(Duration::from_secs(20), || !process_alive(pid)));
    assert!(!pid_file.exists(), "the pid file is left behind");
    let log = std::fs::read_to_string(dir.path().join("log")).unwrap();
    assert!(log.contains("ready: mounted"), "{log}");
}

#[test]
fn readiness_and_stopping_are_reported_to_systemd() {
    let dir = tempfile::tempdir().unwrap();
    let socket_path = dir.path().join("notify");
    let socket = std::os::unix::net::UnixDatagram::bind(&socket_path).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let notify = socket_path.clone();
    let mut mount = Mount::with_launcher(crate::common::Options::default(), &move |command| {
        command.env("NOTIFY_SOCKET", &notify);
    });
    let mut buffer = [0u8; 256];
    let n = socket.recv(&mut buffer).expect("READY=1 arrives");
    assert_eq!(&buffer[..n], b"READY=1");
    // Ready means ready: the tree answers.
    assert!(mount.read("index.md").contains("terminalfs"));
    assert_eq!(mount.stop().code(), Some(0));
    let n = socket.recv(&mut buffer).expect("STOPPING=1 arrives");
    assert_eq!(&buffer[..n], b"STOPPING=1");
}

#[test]
fn verbose_logs_each_failed_operation_once_with_its_reason() {
    let mount = Mount::with_args(&["--verbose"]);
    let refused = std::fs::write(mount.p("ctl/bad name"), "true").unwrap_err();
    assert_eq!(refused.raw_os_error(), Some(libc::EINVAL));
    let line = "create 3/\"bad name\": a command name is 1 to 64 of";
    mount.wait_for_log(line);
    let log = mount.log();
    assert_eq!(log.matches("create 3/\"bad name\"").count(), 1, "{log}");
    assert!(
        log.contains("lookup 3/\"bad name\": no such file or directory"),
        "{log}"
    );
}

#[test]
fn the_environment_turns_verbose_logging_on_and_it_is_off_by_default() {
    let quiet = Mount::start();
    let loud = Mount::with_launcher(Options::default(), &|command| {
        command.env("TERMINALFS_LOG", "debug");
    });
    for mount in [&quiet, &loud] {
        assert!(std::fs::remove_file(mount.p("index.md")).is_err());
    }
    let line = "unlink 1/\"index.md\": index.md is the directory's page";
    assert!(wait_until(Duration::from_secs(10), || loud
        .log()
        .contains(line)));
    // The quiet driver has seen the same request by now; it logged nothing of it.
    assert!(!quiet.log().contains("unlink"), "{}", quiet.log());
}
