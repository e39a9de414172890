//! The driver itself (SPEC 7, 10): a panic fails one request and nothing else, unless it
//! may have left shared state half-updated or ended a thread of the driver's own; the
//! driver's own files (audit log, log file, pid file) are never opened through a
//! symbolic link, are private, and hold no long payload whole; `--unmount` returns once
//! the driver has exited and says whether anything was mounted.

#[cfg(target_os = "linux")]
use crate::common::parked_read;
use crate::common::{is_mounted, process_alive, wait_until, Mount, Options, BIN};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

const PANIC_ENV: &str = "TERMINALFS_TEST_PANIC";

fn with_panic(site: &'static str) -> Mount {
    Mount::with_launcher(Options::default(), &move |command| {
        command.env(PANIC_ENV, site);
    })
}

/// Starts a command that writes a line every 100 ms; returns its shell's pid.
fn start_ticking(mount: &Mount, name: &str) -> i32 {
    std::fs::write(
        mount.p(&format!("ctl/{name}")),
        "while :; do echo tick; sleep 0.1; done",
    )
    .unwrap();
    mount
        .holds(&format!("cmd/{name}/pid"), "\n")
        .trim()
        .parse()
        .unwrap()
}

fn stdout_len(mount: &Mount, name: &str) -> u64 {
    std::fs::metadata(mount.p(&format!("cmd/{name}/stdout"))).map_or(0, |m| m.len())
}

#[test]
fn a_panic_while_serving_one_request_fails_that_request_alone() {
    let mount = with_panic("lookup:boom");
    let pid = start_ticking(&mount, "ticking");
    for _ in 0..2 {
        let error = std::fs::metadata(mount.p("boom")).expect_err("the lookup fails");
        assert_eq!(error.raw_os_error(), Some(libc::EIO), "{error}");
    }
    // Logged once per panic, with its backtrace.
    let logged = || mount.log().matches("serving a FUSE lookup request").count();
    assert!(wait_until(Duration::from_secs(10), || logged() >= 2));
    let log = mount.log();
    // Its backtrace the first time; a line the second.
    assert_eq!(log.matches("panic on thread").count(), 2, "{log}");
    assert_eq!(log.matches("(backtrace above)").count(), 1, "{log}");
    assert!(log.contains("a panic injected for a test"), "{log}");
    assert!(log.contains("terminalfs::fuse"), "no backtrace: {log}");
    assert!(log.contains("the mount and its commands go on"), "{log}");
    // The mount answers, the running command runs on and writes on.
    assert!(mount.is_mounted());
    assert!(process_alive(pid));
    let before = stdout_len(&mount, "ticking");
    assert!(
        wait_until(Duration::from_secs(10), || stdout_len(&mount, "ticking")
            > before),
        "the command's output stopped growing"
    );
    assert!(mount.read("cmd/ticking/status").contains("running"));
    assert_eq!(mount.run("after", "echo fine"), "completed\n");
    assert_eq!(mount.read("cmd/after/stdout"), "fine\n");
}

#[test]
fn a_panic_while_checking_a_text_refuses_that_text() {
    let mount = with_panic("check:PANICWORD");
    let pid = start_ticking(&mount, "ticking");
    // A close's check fails, which `std::fs::write` does not report: the reason does.
    let _ = std::fs::write(mount.p("ctl/odd"), "echo PANICWORD");
    let reason = mount.holds("cmd/odd/reason", "the checker failed on this text");
    assert!(reason.contains("nothing ran"), "{reason}");
    mount.wait_for_log("checking a command's text (echo PANICWORD)");
    assert!(process_alive(pid));
    assert_eq!(mount.run("after", "echo fine"), "completed\n");
}

#[test]
#[cfg(target_os = "linux")]
fn a_panic_holding_the_tree_lock_stops_the_driver_and_answers_what_waits() {
    let mut mount = with_panic("locked:boom");
    let pid = start_ticking(&mount, "ticking");
    mount.run("kept", "echo kept");
    let waiting = parked_read(mount.p("cmd/ticking/wait"));
    let error = std::fs::metadata(mount.p("boom")).expect_err("the lookup fails");
    assert_eq!(error.raw_os_error(), Some(libc::EIO), "{error}");
    let status = mount
        .wait_exit(Duration::from_secs(60))
        .expect("the driver exits");
    assert_eq!(status.code(), Some(1), "{status:?}\n{}", mount.log());
    let log = mount.log();
    assert!(log.contains("half-updated"), "{log}");
    assert!(log.contains("stopped after an internal error"), "{log}");
    // The parked read was answered (with an error), once; nothing is left mounted,
    // and the command was stopped.
    let answer = waiting
        .recv_timeout(Duration::from_secs(10))
        .expect("the parked read is answered");
    assert!(answer.is_err(), "{answer:?}");
    assert!(!is_mounted(&mount.path));
    assert!(wait_until(Duration::from_secs(10), || !process_alive(pid)));
    // Started again (as a service manager would), it has its commands back.
    mount.spawn(&[]);
    assert_eq!(mount.read("cmd/kept/stdout"), "kept\n");
    assert!(mount
        .read("cmd/ticking/reason")
        .contains("the driver stopped"));
}

#[test]
fn a_panic_on_a_thread_of_the_driver_stops_it_with_a_failure() {
    let mut mount = with_panic("thread:ticker");
    mount.run("kept", "echo kept");
    // A lookup of this name asks the ticker to panic at its next turn.
    let _ = std::fs::metadata(mount.p("panic-ticker"));
    let status = mount
        .wait_exit(Duration::from_secs(60))
        .expect("the driver exits");
    assert!(!status.success(), "{status:?}");
    let log = mount.log();
    assert!(log.contains("panic on thread tfs-ticker"), "{log}");
    assert!(
        log.contains("the driver stops: its thread tfs-ticker has ended"),
        "{log}"
    );
    assert!(!is_mounted(&mount.path), "the mount is left behind");
    mount.spawn(&[]);
    assert_eq!(mount.read("cmd/kept/stdout"), "kept\n");
}

#[test]
#[cfg(target_os = "linux")]
fn a_panic_on_the_waker_still_answers_every_parked_read() {
    let mut mount = with_panic("thread:waker");
    let pid = start_ticking(&mount, "ticking");
    let waiting = parked_read(mount.p("cmd/ticking/wait"));
    let _ = std::fs::metadata(mount.p("panic-waker"));
    let status = mount
        .wait_exit(Duration::from_secs(60))
        .expect("the driver exits");
    assert!(!status.success(), "{status:?}");
    let log = mount.log();
    assert!(
        log.contains("the driver stops: its thread tfs-waker has ended"),
        "{log}"
    );
    // No waker is left to answer it: the stop does.
    let _answered = waiting
        .recv_timeout(Duration::from_secs(10))
        .expect("the parked read is answered");
    assert!(!is_mounted(&mount.path));
    assert!(wait_until(Duration::from_secs(10), || !process_alive(pid)));
}

/// A directory with a settings file, for drivers started by hand.
struct Place {
    dir: tempfile::TempDir,
}

impl Place {
    fn new() -> Place {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("settings.json"), "{}").unwrap();
        Place { dir }
    }

    fn p(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn mount(&self) -> PathBuf {
        self.p("mnt")
    }

    /// Runs the binary with the mount's flags and `args`, under umask 022.
    fn run(&self, args: &[&dyn AsRef<std::ffi::OsStr>], env: &[(&str, &str)]) -> Output {
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg("umask 022; exec \"$@\"")
            .arg("sh")
            .arg(BIN)
            .arg("--path")
            .arg(self.mount())
            .arg("--settings")
            .arg(self.p("settings.json"))
            .args(args.iter().map(|a| a.as_ref()))
            .env("XDG_STATE_HOME", self.p("state"))
            .env("SHELL", "/bin/sh")
            .stdin(Stdio::null());
        for (key, value) in env {
            command.env(key, value);
        }
        command.output().expect("the binary runs")
    }
}

impl Place {
    /// `--unmount` of this mount, with the driver's environment (its default state
    /// directory depends on it).
    fn unmount(&self) -> Output {
        Command::new(BIN)
            .arg("--unmount")
            .arg("--path")
            .arg(self.mount())
            .env("XDG_STATE_HOME", self.p("state"))
            .stdin(Stdio::null())
            .output()
            .expect("the binary runs")
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let _ = self.unmount();
        if is_mounted(&self.mount()) {
            let _ = Command::new("umount").arg("-l").arg(self.mount()).status();
        }
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o777
}

#[test]
fn the_drivers_own_files_are_never_opened_through_a_symbolic_link() {
    let place = Place::new();
    let victim = place.p("victim");
    std::fs::write(&victim, "untouched\n").unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o644)).unwrap();
    let link = place.p("link");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    for (flag, daemon, what) in [
        ("--audit-log", false, "audit log"),
        ("--log-file", true, "log file"),
        ("--pid-file", true, "pid file"),
    ] {
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&flag, &link];
        if daemon {
            args.push(&"--daemon");
        }
        let out = place.run(&args, &[]);
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{flag}: {said}");
        assert!(
            said.contains(&format!("the {what} {} is a symbolic link", link.display())),
            "{flag}: {said}"
        );
        assert!(!is_mounted(&place.mount()), "{flag} mounted");
        assert_eq!(mode(&victim), 0o644, "{flag} changed the target's mode");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched\n");
    }
}

#[test]
fn the_log_file_is_private_holds_no_long_payload_and_is_rotated() {
    let place = Place::new();
    let log = place.p("log");
    let pid_file = place.p("pid");
    let out = place.run(
        &[
            &"--daemon",
            &"--verbose",
            &"--log-file",
            &log,
            &"--pid-file",
            &pid_file,
        ],
        &[("TERMINALFS_TEST_LOG_ROTATE_AT", "40000")],
    );
    assert!(out.status.success(), "{out:?}");
    let m = place.mount();
    assert_eq!(mode(&log), 0o600, "the log file under umask 022");
    assert_eq!(mode(&pid_file), 0o600);
    // A long mistyped word written to `keys` is logged as a prefix, a length and a hash.
    std::fs::write(m.join("ctl/term"), "#terminalfs tty\ncat").unwrap();
    assert!(wait_until(Duration::from_secs(30), || m
        .join("cmd/term/keys")
        .exists()));
    let word = "s".repeat(60_000);
    let refused = std::fs::write(m.join("cmd/term/keys"), &word).expect_err("no such key");
    assert_eq!(refused.raw_os_error(), Some(libc::EINVAL), "{refused}");
    let capped = |text: &str| text.contains("60000 bytes in all, sha256 ");
    assert!(
        wait_until(Duration::from_secs(10), || capped(
            &std::fs::read_to_string(&log).unwrap_or_default()
        )),
        "{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    // Failed lookups are logged (verbose) until the file is rotated.
    let rotated = place.p("log.1");
    for n in 0..2000 {
        if rotated.exists() {
            break;
        }
        let _ = std::fs::metadata(m.join(format!("missing-{n}")));
    }
    assert!(
        wait_until(Duration::from_secs(10), || rotated.exists()),
        "the log was never rotated"
    );
    assert!(wait_until(Duration::from_secs(10), || log.exists()));
    for file in [&log, &rotated] {
        assert_eq!(mode(file), 0o600, "{}", file.display());
        let text = std::fs::read_to_string(file).unwrap();
        let longest = text.lines().map(str::len).max().unwrap_or(0);
        assert!(
            longest < 5000,
            "a line of {longest} bytes in {}",
            file.display()
        );
    }
    let all = std::fs::read_to_string(&rotated).unwrap() + &std::fs::read_to_string(&log).unwrap();
    assert!(capped(&all));
    assert!(!all.contains(&word[..1000]));
}

#[test]
fn unmount_returns_once_the_driver_has_exited_so_a_new_mount_starts_at_once() {
    let place = Place::new();
    let pid_file = place.p("pid");
    let log = place.p("log");
    let start = || {
        place.run(
            &[&"--daemon", &"--pid-file", &pid_file, &"--log-file", &log],
            &[],
        )
    };
    for round in 0..5 {
        let out = start();
        assert!(
            out.status.success(),
            "round {round}: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        let pid: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let out = place.unmount();
        assert_eq!(out.status.code(), Some(0), "round {round}: {out:?}");
        // Returned: the driver is gone, and its pid file with it.
        assert!(!process_alive(pid), "round {round}: {pid} still runs");
        assert!(!pid_file.exists(), "round {round}: the pid file is left");
        assert!(!is_mounted(&place.mount()));
    }
    let out = place.unmount();
    assert_eq!(out.status.code(), Some(32), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("nothing was mounted"));
}

#[test]
fn a_second_daemon_on_a_held_pid_file_is_refused_in_one_sentence() {
    let place = Place::new();
    let pid_file = place.p("pid");
    let out = place.run(&[&"--daemon", &"--pid-file", &pid_file], &[]);
    assert!(out.status.success(), "{out:?}");
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let other = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .arg("--path")
        .arg(other.path().join("mnt"))
        .arg("--settings")
        .arg(place.p("settings.json"))
        .arg("--daemon")
        .arg("--pid-file")
        .arg(&pid_file)
        .env("XDG_STATE_HOME", other.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert_eq!(
        said.trim(),
        format!(
            "terminalfs: the pid file {} is held by a running terminalfs driver (pid {}): \
             stop it with `terminalfs --unmount` or give this one another --pid-file",
            pid_file.display(),
            pid.trim()
        )
    );
    // The running one is untouched.
    assert_eq!(std::fs::read_to_string(&pid_file).unwrap(), pid);
}
