//! The spool on a real mount (SPEC 5, 7, 10): output on disk, restarts, eviction, the
//! state directory.

use crate::common::{fd_count, run_binary, until_exists, wait_until, Mount, Options};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

fn json(mount: &Mount, file: &str) -> serde_json::Value {
    serde_json::from_str(&mount.read(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

fn deny_sudo() -> Options<'static> {
    Options {
        settings: r#"{"permissions": {"deny": ["Bash(sudo:*)"]}}"#,
        ..Options::default()
    }
}

/// What a restarted driver must show of the commands made by [`make_commands`].
fn check_commands(mount: &Mount) {
    assert_eq!(mount.read("cmd/done/status"), "error\n");
    assert_eq!(mount.read("cmd/done/exitcode"), "3\n");
    assert_eq!(mount.read("cmd/done/stdout"), "out 1\nout 2\n");
    assert_eq!(mount.read("cmd/done/stderr"), "err\n");
    assert_eq!(mount.read("cmd/done/output"), "out 1\nerr\nout 2\n");
    assert_eq!(
        mount.read("cmd/done/command"),
        "echo out 1; echo err >&2; echo out 2; exit 3"
    );
    let result = json(mount, "cmd/done/result.json");
    assert_eq!(result["exitcode"], 3);
    assert_eq!(result["status"], "error");
    assert_eq!(result["stdout"]["bytes"], 12);
    assert!(result["started_at"].is_string() && result["finished_at"].is_string());
    assert_eq!(mount.read("cmd/ok/status"), "completed\n");
    assert_eq!(mount.read("cmd/ok/stdout"), "fine\n");
    assert_eq!(mount.read("cmd/nope/status"), "denied\n");
    assert!(mount.read("cmd/nope/reason").contains("Bash(sudo:*)"));
    assert_eq!(mount.read("cmd/nope/command"), "sudo true");
    assert_eq!(mount.read("cmd/long/status"), "error\n");
    assert_eq!(
        mount.read("cmd/long/reason"),
        "the driver stopped while it ran\n"
    );
    assert_eq!(mount.read("cmd/long/stdout"), "started\n");
    assert_eq!(mount.read("cmd/long/wait"), "error\n");
    // Names stay taken.
    let taken = std::fs::write(mount.p("ctl/done"), "echo again");
    assert_eq!(
        taken.unwrap_err().raw_os_error(),
        Some(libc::EEXIST),
        "a restored name is still taken"
    );
}

fn make_commands(mount: &Mount) {
    assert_eq!(
        mount.run("done", "echo out 1; echo err >&2; echo out 2; exit 3"),
        "error\n"
    );
    assert_eq!(mount.run("ok", "echo fine"), "completed\n");
    assert!(std::fs::write(mount.p("ctl/nope"), "sudo true").is_err());
    std::fs::write(mount.p("ctl/long"), "echo started; exec sleep 300").unwrap();
    assert!(wait_until(Duration::from_secs(20), || {
        mount.read("cmd/long/stdout") == "started\n"
    }));
}

#[test]
fn finished_commands_survive_sigterm_and_a_crash() {
    let mut mount = Mount::with(deny_sudo());
    make_commands(&mount);
    assert_eq!(mount.stop().code(), Some(0));
    mount.spawn(&[]);
    check_commands(&mount);
    assert!(
        mount.log().contains("restored 4 command(s)"),
        "{}",
        mount.log()
    );

    // A command with no output, and a refused one: their files are written once they
    // are a moment old (or the driver stops), so a crash keeps them once they are.
    assert_eq!(mount.run("quiet", "true"), "completed\n");
    assert!(std::fs::write(mount.p("ctl/refused"), "sudo true").is_err());
    assert_eq!(mount.read("cmd/refused/status"), "denied\n");
    let on_disk = |name: &str, check: &dyn Fn(&serde_json::Value) -> bool| {
        wait_until(Duration::from_secs(10), || {
            // The record carries the command's text.
            mount.spool_dirs(name).first().is_some_and(|dir| {
                std::fs::read(dir.join("meta.json"))
                    .ok()
                    .and_then(|text| serde_json::from_slice::<serde_json::Value>(&text).ok())
                    .is_some_and(|record| record["command"].is_string() && check(&record))
            })
        })
    };
    assert!(on_disk("quiet", &|record| record["exit"]["code"] == 0));
    assert!(on_disk("refused", &|record| record["denied"].is_string()));

    // A crash: nothing is written on the way out, the records already on disk serve.
    let mut child = mount.take_child().expect("the driver runs");
    child.kill().unwrap();
    child.wait().unwrap();
    mount.spawn(&[]);
    check_commands(&mount);
    assert_eq!(mount.read("cmd/quiet/status"), "completed\n");
    assert_eq!(mount.read("cmd/refused/status"), "denied\n");
    assert_eq!(mount.read("cmd/refused/command"), "sudo true");

    // --unmount from outside stops the driver the same way.
    std::fs::write(mount.p("ctl/later"), "echo x; exec sleep 300").unwrap();
    assert!(wait_until(Duration::from_secs(20), || {
        mount.read("cmd/later/stdout") == "x\n"
    }));
    let out = run_binary(&[&"--unmount", &"--path", &mount.path]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        mount.wait_exit(Duration::from_secs(30)).is_some(),
        "--unmount said {:?}; the driver logged:\n{}",
        String::from_utf8_lossy(&out.stderr),
        mount.log()
    );
    mount.spawn(&[]);
    check_commands(&mount);
    assert_eq!(mount.read("cmd/later/status"), "error\n");
    assert_eq!(
        mount.read("cmd/later/reason"),
        "the driver stopped while it ran\n"
    );

    // rm -r deletes a restored command's files, and the name is free again.
    let dirs = mount.spool_dirs("done");
    assert_eq!(dirs.len(), 1);
    mount.ok("rm -r \"$M/cmd/done\"");
    assert!(wait_until(Duration::from_secs(10), || !dirs[0].exists()));
    assert_eq!(mount.run("done", "echo new"), "completed\n");
}

#[test]
fn a_command_running_at_a_crash_comes_back_with_its_output() {
    let mut mount = Mount::start();
    std::fs::write(
        mount.p("ctl/chatty"),
        "i=1; while [ $i -le 50 ]; do echo line $i; i=$((i+1)); done; echo half >&2; exec sleep 300",
    )
    .unwrap();
    assert!(wait_until(Duration::from_secs(20), || {
        mount.read("cmd/chatty/stderr") == "half\n"
    }));
    let lines: String = (1..=50).map(|i| format!("line {i}\n")).collect();
    // The counts reach the disk (the index header) within a checkpoint interval.
    let index = mount.spool_dirs("chatty")[0].join("output.idx");
    let stored = (lines.len() + "half\n".len()) as u64;
    assert!(wait_until(Duration::from_secs(10), || {
        std::fs::read(&index).is_ok_and(|bytes| {
            bytes.len() >= 32 && u64::from_le_bytes(bytes[24..32].try_into().unwrap()) == stored
        })
    }));
    // So does its record, which the first byte of output hurries.
    let dir = index.parent().unwrap().to_path_buf();
    assert!(wait_until(Duration::from_secs(10), || {
        std::fs::read(dir.join("meta.json"))
            .ok()
            .and_then(|text| serde_json::from_slice::<serde_json::Value>(&text).ok())
            .is_some_and(|record| {
                record["command"]
                    .as_str()
                    .is_some_and(|text| text.ends_with("exec sleep 300"))
            })
    }));
    let mut child = mount.take_child().expect("the driver runs");
    child.kill().unwrap();
    child.wait().unwrap();
    mount.spawn(&[]);
    assert_eq!(mount.read("cmd/chatty/status"), "error\n");
    assert_eq!(
        mount.read("cmd/chatty/reason"),
        "the driver stopped while it ran\n"
    );
    assert_eq!(
        mount.read("cmd/chatty/stdout"),
        format!("{lines}{CUT_SHORT}")
    );
    assert_eq!(
        mount.read("cmd/chatty/output"),
        format!("{lines}half\n{CUT_SHORT}")
    );
    assert_eq!(
        mount.read("cmd/chatty/stderr"),
        format!("half\n{CUT_SHORT}")
    );
    assert_eq!(
        json(&mount, "cmd/chatty/result.json")["output_incomplete"],
        true
    );
}

/// The line that ends the stored part of each file of a command whose driver died
/// while it ran.
const CUT_SHORT: &str =
    "[terminalfs: output from here on may be missing: the driver stopped while it ran]\n";

/// Five commands log each line whose `echo` succeeded; the driver is killed with
/// SIGKILL and started again: every line a reader saw before the crash is there, the
/// lines are whole and in order, and each stream ends with the one notice that lines
/// the driver had not read yet may be missing.
#[test]
fn a_crash_loses_no_line_silently() {
    let mut mount = Mount::start();
    let logs = tempfile::tempdir().unwrap();
    let names = ["w1", "w2", "w3", "w4", "w5"];
    for name in names {
        let script = format!(
            "i=0; while echo line $i; do echo $i >> {}/ok.{name}; i=$((i+1)); sleep .01; done",
            logs.path().display()
        );
        std::fs::write(mount.p(&format!("ctl/{name}")), script).unwrap();
    }
    let ok_lines = |name: &str| {
        std::fs::read_to_string(logs.path().join(format!("ok.{name}")))
            .unwrap_or_default()
            .lines()
            .count()
    };
    assert!(wait_until(Duration::from_secs(30), || names
        .iter()
        .all(|name| ok_lines(name) >= 30)));
    // What readers were shown just before the crash.
    let shown: Vec<String> = names
        .iter()
        .map(|name| mount.read(&format!("cmd/{name}/stdout")))
        .collect();
    let mut child = mount.take_child().expect("the driver runs");
    child.kill().unwrap();
    child.wait().unwrap();
    // The writers end (their pipe's reader is gone); their logs stop growing.
    let mut last = Vec::new();
    assert!(wait_until(Duration::from_secs(30), || {
        let now: Vec<usize> = names.iter().map(|name| ok_lines(name)).collect();
        let settled = now == last;
        last = now;
        // Looked at again after a pause, so a log still growing is seen to grow.
        std::thread::sleep(Duration::from_millis(300));
        settled
    }));
    mount.spawn(&[]);
    for (name, shown) in names.iter().zip(&shown) {
        let stdout = mount.read(&format!("cmd/{name}/stdout"));
        let body = stdout
            .strip_suffix(CUT_SHORT)
            .unwrap_or_else(|| panic!("{name}: no notice at the end of {stdout:?}"));
        assert!(
            body.starts_with(shown.as_str()),
            "{name}: lost what was shown"
        );
        let kept = body.lines().count();
        let expected: String = (0..kept).map(|i| format!("line {i}\n")).collect();
        assert_eq!(body, expected, "{name}: lines missing or out of order");
        let succeeded = ok_lines(name);
        assert!(
            kept + 1 >= shown.lines().count() && kept <= succeeded + 1,
            "{name}: {kept} lines kept, {succeeded} writes succeeded"
        );
        assert_eq!(stdout.matches("[terminalfs:").count(), 1, "{name}");
        let output = mount.read(&format!("cmd/{name}/output"));
        assert_eq!(output, stdout, "{name}: output");
        let result = json(&mount, &format!("cmd/{name}/result.json"));
        assert_eq!(result["output_incomplete"], true, "{name}");
        assert_eq!(
            result["reason"], "the driver stopped while it ran",
            "{name}"
        );
        assert_eq!(result["status"], "error", "{name}");
    }
}

#[test]
fn a_damaged_spool_is_skipped_with_a_log_line() {
    let mut mount = Mount::start();
    mount.run("good", "echo good");
    mount.run("bad", "echo bad");
    mount.run("cut", "head -c 100000 /dev/zero");
    mount.stop();
    let bad = &mount.spool_dirs("bad")[0];
    std::fs::write(bad.join("meta.json"), "{\"name\": ").unwrap();
    let cut = &mount.spool_dirs("cut")[0];
    std::fs::OpenOptions::new()
        .write(true)
        .open(cut.join("stdout"))
        .unwrap()
        .set_len(10)
        .unwrap();
    mount.spawn(&[]);
    assert_eq!(mount.read("cmd/good/stdout"), "good\n");
    assert!(!mount.p("cmd/bad").exists());
    assert!(!mount.p("cmd/cut").exists());
    let log = mount.log();
    assert!(log.contains(&format!("skipped {}", bad.display())), "{log}");
    assert!(log.contains("stdout is truncated"), "{log}");
}

#[test]
fn output_lives_on_disk_and_finished_commands_hold_no_descriptor() {
    let mount = Mount::start();
    let driver = mount.pid() as i32;
    mount.run("warm", "echo warm");
    let before = crate::common::fd_count(driver);
    for i in 0..200 {
        std::fs::write(mount.p(&format!("ctl/f{i}")), "echo out; echo err >&2").unwrap();
    }
    for i in 0..200 {
        assert_eq!(mount.wait(&format!("f{i}")), "completed\n");
    }
    assert_eq!(mount.read("cmd/f199/output"), "out\nerr\n");
    let after = crate::common::fd_count(driver);
    assert!(
        after < before + 20,
        "{before} descriptors before 200 commands, {after} after"
    );
    let dir = &mount.spool_dirs("f7")[0];
    assert_eq!(std::fs::read(dir.join("stdout")).unwrap(), b"out\n");
    let mode = std::fs::metadata(&mount.spool)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
}

#[test]
fn the_spool_bound_evicts_the_least_recently_read_finished_command() {
    let mount = Mount::with_args(&["--max-spool", "3m"]);
    mount.run("a", "head -c 1000000 /dev/zero");
    mount.run("b", "head -c 1000000 /dev/zero");
    // `a` is read after `b`: `b` is the least recently read.
    assert_eq!(
        std::fs::read(mount.p("cmd/a/stdout")).unwrap().len(),
        1_000_000
    );
    mount.run("c", "head -c 1500000 /dev/zero");
    assert!(
        wait_until(Duration::from_secs(10), || !mount.p("cmd/b").exists()),
        "b is evicted"
    );
    assert!(mount.p("cmd/a").exists() && mount.p("cmd/c").exists());
    assert_eq!(json(&mount, "cmd/c/result.json")["stdout"]["dropped"], 0);
    let index = mount.read("cmd/index.md");
    assert!(index.contains("evicted: 1"), "{index}");
    // Logged after the eviction is seen, and read from the driver's stderr by a thread.
    mount.wait_for_log("evicted");

    // Running commands alone past the bound: the rest is counted, with one notice.
    std::fs::write(
        mount.p("ctl/flood"),
        "head -c 5000000 /dev/zero; exec sleep 300",
    )
    .unwrap();
    assert!(wait_until(Duration::from_secs(20), || {
        json(&mount, "cmd/flood/result.json")["stdout"]["bytes"] == 5_000_000
    }));
    let result = json(&mount, "cmd/flood/result.json");
    assert!(
        result["stdout"]["dropped"].as_u64().unwrap() > 0,
        "{result}"
    );
    let stdout = std::fs::read(mount.p("cmd/flood/stdout")).unwrap();
    let text = String::from_utf8_lossy(&stdout);
    assert!(
        text.contains("--max-spool"),
        "the stored part ends with a notice"
    );
    assert!(
        mount.p("cmd/flood/status").exists(),
        "a running command is never evicted"
    );
}

#[test]
fn bad_state_directories_stop_the_driver_with_a_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("settings.json");
    std::fs::write(&settings, "{}").unwrap();
    let loose = dir.path().join("loose");
    std::fs::create_dir(&loose).unwrap();
    std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o755)).unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    let mut bad = vec![loose.clone(), file.join("state"), file.clone()];
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let other = dir.path().join("other");
        std::fs::create_dir(&other).unwrap();
        std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::chown(&other, Some(65534), Some(65534)).unwrap();
        bad.push(other);
    } else {
        // Another user's directory (root's).
        bad.push("/".into());
    }
    for state in bad {
        let out = run_binary(&[
            &"--path",
            &dir.path().join("mnt"),
            &"--settings",
            &settings,
            &"--state-dir",
            &state,
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{}: {stderr}", state.display());
        assert!(
            stderr.contains(&state.display().to_string()),
            "the message names {}: {stderr}",
            state.display()
        );
    }
}

/// Starts a driver on `state` and returns its error output; it must not start.
fn refused_state_dir(dir: &Path, state: &Path) -> String {
    let settings = dir.join("settings.json");
    std::fs::write(&settings, "{}").unwrap();
    let out = run_binary(&[
        &"--path",
        &dir.join("mnt"),
        &"--settings",
        &settings,
        &"--state-dir",
        &state,
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{}: {stderr}", state.display());
    stderr
}

#[test]
fn a_symlinked_state_directory_or_lock_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real");
    std::fs::create_dir(&real).unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o700)).unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let stderr = refused_state_dir(dir.path(), &link);
    assert!(
        stderr.contains(&format!(
            "the state directory {} is a symbolic link",
            link.display()
        )),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_dir(&real).unwrap().count(),
        0,
        "nothing made in it"
    );
    // A lock that is a link to a file elsewhere: the file is not touched.
    let precious = dir.path().join("precious");
    std::fs::write(&precious, "keep me\n").unwrap();
    std::os::unix::fs::symlink(&precious, real.join("lock")).unwrap();
    let stderr = refused_state_dir(dir.path(), &real);
    assert!(
        stderr.contains(&format!(
            "the lock {} in the state directory is a symbolic link",
            real.join("lock").display()
        )),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "keep me\n");
    // A lock that is a directory is no lock either.
    std::fs::remove_file(real.join("lock")).unwrap();
    std::fs::create_dir(real.join("lock")).unwrap();
    let stderr = refused_state_dir(dir.path(), &real);
    assert!(stderr.contains("is not a file of this user's"), "{stderr}");
}

#[test]
fn the_state_directory_refusal_names_what_others_may_do_and_the_whole_mode() {
    let dir = tempfile::tempdir().unwrap();
    for (mode, words) in [
        (0o730, "can be written and entered by others (mode 730)"),
        (0o720, "can be written by others (mode 720)"),
        (0o702, "can be written by others (mode 702)"),
        (0o711, "can be entered by others (mode 711)"),
        (0o740, "can be read by others (mode 740)"),
        (
            0o1777,
            "can be read, written and entered by others (mode 1777)",
        ),
    ] {
        let state = dir.path().join(format!("state-{mode:o}"));
        std::fs::create_dir(&state).unwrap();
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(mode)).unwrap();
        let stderr = refused_state_dir(dir.path(), &state);
        assert!(
            stderr.contains(&format!("the state directory {} {words}", state.display())),
            "{mode:o}: {stderr}"
        );
    }
}

#[test]
fn the_audit_log_stays_in_its_place_and_bounded() {
    let mount = Mount::with(deny_sudo());
    mount.run("x", "true");
    let audit = mount.state.join("terminalfs/audit.jsonl");
    assert!(audit.is_file());
    assert!(!mount.spool.join("audit.jsonl").exists());
    // Ten refused texts of almost a mebibyte each: each entry keeps 4 KiB of it.
    let text = format!("sudo true # {}", "\\\"".repeat(330_000));
    for i in 0..10 {
        assert!(std::fs::write(mount.p(&format!("ctl/big{i}")), &text).is_err());
        // The refusal is decided at the last close, which the kernel sends on its own.
        let status = mount.p(&format!("cmd/big{i}/status"));
        assert!(wait_until(Duration::from_secs(10), || {
            std::fs::read_to_string(&status).is_ok_and(|s| s == "denied\n")
        }));
    }
    let size = std::fs::metadata(&audit).unwrap().len();
    assert!(size < 10 * 16 * 1024, "the audit log grew to {size} bytes");
    let log = std::fs::read_to_string(&audit).unwrap();
    let last: serde_json::Value = serde_json::from_str(log.lines().last().unwrap()).unwrap();
    assert_eq!(last["command_bytes"], text.len());
    assert_eq!(last["command_sha256"].as_str().unwrap().len(), 64);
}

/// A tmpfs of a given size mounted for one test; unmounted (lazily, so a driver still holding a
/// file cannot stop it) when dropped, whether the test passed or not.
struct Tmpfs {
    path: PathBuf,
    _dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Tmpfs {
        let dir = tempfile::Builder::new()
            .prefix("tfs-disk-")
            .tempdir()
            .expect("a temporary directory");
        let path = dir.path().join("disk");
        std::fs::create_dir(&path).unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0700")])
            .arg("tfs-test-disk")
            .arg(&path)
            .output()
            .expect("mount runs");
        assert!(
            out.status.success(),
            "cannot mount a {size} tmpfs at {}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        Tmpfs { path, _dir: dir }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
    }
}

#[test]
fn a_full_disk_drops_output_with_a_notice_and_harms_nothing() {
    // Declared first, so it is unmounted after the driver has stopped.
    let disk = Tmpfs::mount("1m");
    let state = disk.path.join("spool");
    let mount = Mount::with_args(&["--state-dir", state.to_str().unwrap()]);
    let script = "yes 0123456789 | head -c 3000000; echo late >&2; exit 7";
    assert_eq!(mount.run("big", script), "error\n");
    assert_eq!(mount.read("cmd/big/exitcode"), "7\n");
    let result = json(&mount, "cmd/big/result.json");
    let (bytes, kept, dropped) = (
        result["stdout"]["bytes"].as_u64().unwrap(),
        result["stdout"]["kept"].as_u64().unwrap(),
        result["stdout"]["dropped"].as_u64().unwrap(),
    );
    assert_eq!(bytes, 3_000_000, "{result}");
    assert!(kept < 1 << 20 && kept + dropped == bytes, "{result}");
    assert_eq!(result["stderr"]["bytes"], 5);
    assert_eq!(result["stderr"]["dropped"], 5);
    let notice = "[terminalfs: output from here on was not kept: \
                  the disk holding the state directory is full]\n";
    let stdout = std::fs::read(mount.p("cmd/big/stdout")).unwrap();
    assert!(
        stdout.ends_with(notice.as_bytes()),
        "{:?}",
        String::from_utf8_lossy(&stdout[stdout.len().saturating_sub(200)..])
    );
    // What was kept is exactly the beginning; the notice starts a line of its own.
    let mut expected = b"0123456789\n".repeat(300_000);
    expected.truncate(kept as usize);
    if expected.last() != Some(&b'\n') {
        expected.push(b'\n');
    }
    expected.extend_from_slice(notice.as_bytes());
    assert!(
        stdout == expected,
        "the stored part is not the start of the output"
    );
    assert!(mount.read("cmd/big/stderr").ends_with(notice));
    let log = mount.log();
    assert!(
        log.contains("no longer storing the output of big: the disk holding the state"),
        "{log}"
    );

    // The driver still answers, and a command run while the disk is full completes.
    let index = mount.read("cmd/index.md");
    let row = index
        .lines()
        .find(|line| line.starts_with("| [big]"))
        .unwrap_or_else(|| panic!("{index}"));
    assert!(
        row.contains(&format!("| {kept} | {} |", dropped + 5)),
        "{row}"
    );
    assert_eq!(mount.run("meanwhile", "echo hi; exit 3"), "error\n");
    assert_eq!(mount.read("cmd/meanwhile/exitcode"), "3\n");

    // Once space is freed, output is kept again.
    let dirs = mount.spool_dirs("big");
    // Room is freed by the spool's worker, after `rm -r` has returned.
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    mount.ok("rm -r \"$M/cmd/big\"");
    assert!(wait_until(Duration::from_secs(20), || {
        dirs.iter().all(|dir| !dir.exists())
    }));
    assert_eq!(
        mount.run("after", "yes abc | head -c 200000"),
        "completed\n"
    );
    let result = json(&mount, "cmd/after/result.json");
    assert_eq!(
        result["stdout"]["kept"],
        200_000,
        "{result}\n{}",
        mount.log()
    );
    assert_eq!(result["stdout"]["dropped"], 0, "{result}");
    assert_eq!(
        std::fs::read(mount.p("cmd/after/stdout")).unwrap().len(),
        200_000
    );
}

/// The driver's soft limit of open files.
fn open_files_limit(pid: i32) -> usize {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = limits
        .lines()
        .find(|line| line.starts_with("Max open files"))
        .expect("a limit of open files");
    line.split_whitespace().nth(3).unwrap().parse().unwrap()
}

#[test]
fn ten_thousand_finished_commands_hold_no_descriptor() {
    const COMMANDS: usize = 10_000;
    const BATCH: usize = 250;
    // The records of 10,000 commands on a tmpfs: the disk's speed is not the subject.
    let disk = Tmpfs::mount("256m");
    let state = disk.path.join("spool");
    let mount = Mount::with_args(&["--state-dir", state.to_str().unwrap()]);
    let driver = mount.pid() as i32;
    assert_eq!(mount.run("warm", "true"), "completed\n");
    // Nothing runs: what is open now is what the driver holds when idle (or a file the
    // spool is writing, which only makes the bound below looser).
    let idle = fd_count(driver);
    let peak = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (peak, done) = (peak.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                peak.fetch_max(fd_count(driver), Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let started = Instant::now();
    // One shell writes the commands and reads each `wait` with builtins (no process per
    // step but the commands themselves), in batches: starts are queued one after the
    // other, and a batch waits for its own before the next is written.
    let out = mount.sh(&format!(
        "b=0; while [ $b -lt {COMMANDS} ]; do
           i=$b; while [ $i -lt $((b+{BATCH})) ]; do echo true > \"$M/ctl/n$i\" || exit 1; i=$((i+1)); done
           i=$b; while [ $i -lt $((b+{BATCH})) ]; do
             w=running; while [ \"$w\" = running ]; do read w < \"$M/cmd/n$i/wait\" || exit 2; done
             [ \"$w\" = completed ] || {{ echo \"n$i: $w\"; exit 3; }}
             i=$((i+1))
           done
           b=$((b+{BATCH}))
         done"
    ));
    let took = started.elapsed();
    done.store(true, Ordering::SeqCst);
    sampler.join().unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let peak = peak.load(Ordering::SeqCst);
    // Records may still be on their way to the disk; then nothing is left open.
    let mut after = fd_count(driver);
    let settling = Instant::now();
    let settled = wait_until(Duration::from_secs(120), || {
        after = fd_count(driver);
        after <= idle + 2
    });
    eprintln!(
        "{COMMANDS} commands finished in {:.1} s; descriptors: idle {idle}, peak {peak}, \
         {after} {:.1} s later",
        took.as_secs_f64(),
        settling.elapsed().as_secs_f64()
    );
    assert!(
        settled,
        "{idle} descriptors idle, {after} after {COMMANDS} finished commands"
    );
    let limit = open_files_limit(driver);
    assert!(
        peak < limit / 2,
        "{peak} descriptors open at the peak (limit {limit})"
    );
    assert_eq!(
        mount.read(&format!("cmd/n{}/status", COMMANDS - 1)),
        "completed\n"
    );
}

#[test]
fn a_command_lost_in_a_crash_has_no_made_up_exit_code_and_a_true_duration() {
    let mut mount = Mount::start();
    assert_eq!(mount.run("done", "exit 3"), "error\n");
    let written = SystemTime::now();
    std::fs::write(mount.p("ctl/lost"), "echo started; exec sleep 300").unwrap();
    assert!(wait_until(Duration::from_secs(20), || {
        mount.read("cmd/lost/stdout") == "started\n"
    }));
    let seen = SystemTime::now();
    // While a command runs the driver marks itself alive in the state directory; let
    // it do so for a second and a half after the command was seen running.
    let alive = mount.spool.join("alive");
    assert!(wait_until(Duration::from_secs(30), || {
        std::fs::metadata(&alive)
            .and_then(|m| m.modified())
            .is_ok_and(|t| t >= seen + Duration::from_millis(1500))
    }));
    let mut child = mount.take_child().expect("the driver runs");
    child.kill().unwrap();
    child.wait().unwrap();
    let killed = SystemTime::now();
    mount.spawn(&[]);

    assert_eq!(mount.read("cmd/lost/status"), "error\n");
    assert_eq!(mount.read("cmd/lost/wait"), "error\n");
    assert_eq!(
        mount.read("cmd/lost/reason"),
        "the driver stopped while it ran\n"
    );
    // Its end was not seen: no exit code is made up.
    assert!(!mount.p("cmd/lost/exitcode").exists());
    assert!(!mount.ok("ls \"$M/cmd/lost\"").contains("exitcode"));
    let result = json(&mount, "cmd/lost/result.json");
    assert!(result["exitcode"].is_null(), "{result}");
    assert!(result["signal"].is_null(), "{result}");
    assert!(result["finished_at"].is_string(), "{result}");
    let duration = result["duration_ms"].as_u64().expect("a duration");
    let most = killed.duration_since(written).unwrap().as_millis() as u64;
    assert!(
        (1500..=most).contains(&duration),
        "it ran at least 1.5 s and at most {most} ms: {result}"
    );
    // result.json says what `status`, `wait` and `reason` say.
    assert_eq!(result["status"], "error", "{result}");
    assert_eq!(
        result["reason"], "the driver stopped while it ran",
        "{result}"
    );
    // /events: the same word, with no code made up (one that ended on its own before
    // the crash keeps its code), at the moment result.json says it finished.
    let events = |mount: &Mount| -> Vec<(String, String)> {
        mount
            .ok("head -n 2 \"$M/events\"")
            .lines()
            .map(|line| {
                let (at, rest) = line.split_once(' ').unwrap();
                (at.to_string(), rest.to_string())
            })
            .collect()
    };
    let listed = events(&mount);
    let words: Vec<&str> = listed.iter().map(|(_, rest)| rest.as_str()).collect();
    assert_eq!(words, ["done error 3", "lost error"], "{listed:?}");
    assert_eq!(result["finished_at"], listed[1].0.as_str(), "{result}");
    assert_eq!(json(&mount, "cmd/done/result.json")["exitcode"], 3);

    // The next restart tells the same story.
    mount.stop();
    mount.spawn(&[]);
    let again = json(&mount, "cmd/lost/result.json");
    assert_eq!(again["duration_ms"], duration, "{again}");
    assert_eq!(again["finished_at"], result["finished_at"]);
    assert!(again["exitcode"].is_null());
    assert_eq!(again["reason"], result["reason"]);
    assert_eq!(events(&mount), listed);
}

/// Bytes of output the index header of `dir` says are stored.
fn stored_bytes(dir: &Path) -> Option<u64> {
    let bytes = std::fs::read(dir.join("output.idx")).ok()?;
    Some(u64::from_le_bytes(bytes.get(24..32)?.try_into().ok()?))
}

#[test]
fn a_terminal_screen_reads_the_same_after_a_restart() {
    let mut mount = Mount::start();
    let drawn = "#terminalfs tty=40x10\nprintf 'first\\nsecond\\033[1;3HX\\033[6;10Hlow'";
    assert_eq!(mount.run("drawn", drawn), "completed\n");
    let screen = "fiXst\nsecond\n\n\n\n         low\n";
    assert_eq!(mount.read("cmd/drawn/screen"), screen);
    let terminal = json(&mount, "cmd/drawn/result.json")["terminal"].clone();
    assert_eq!(terminal["cursor"]["row"], 5, "{terminal}");

    mount.stop();
    mount.spawn(&[]);
    assert_eq!(mount.read("cmd/drawn/screen"), screen);
    assert_eq!(json(&mount, "cmd/drawn/result.json")["terminal"], terminal);

    // A terminal still running at a crash: its screen is drawn again from its output.
    let live = "#terminalfs tty=40x10\nprintf 'one\\ntwo\\033[1;1HO'; exec sleep 300";
    std::fs::write(mount.p("ctl/live"), live).unwrap();
    assert!(wait_until(Duration::from_secs(20), || {
        mount.read("cmd/live/screen") == "One\ntwo\n"
    }));
    let stdout = std::fs::read(mount.p("cmd/live/stdout")).unwrap();
    let dir = mount.spool_dirs("live")[0].clone();
    assert!(wait_until(Duration::from_secs(10), || {
        stored_bytes(&dir) == Some(stdout.len() as u64)
    }));
    // The record of the start is written by the spool's worker too, on its own time:
    // a crash before it lands loses the command, so wait for it as for the bytes.
    assert!(wait_until(Duration::from_secs(10), || {
        dir.join("meta.json").exists()
    }));
    let mut child = mount.take_child().expect("the driver runs");
    child.kill().unwrap();
    child.wait().unwrap();
    mount.spawn(&[]);
    assert_eq!(mount.read("cmd/live/status"), "error\n");
    assert_eq!(mount.read("cmd/live/screen"), "One\ntwo\n");
    let result = json(&mount, "cmd/live/result.json");
    assert_eq!(result["terminal"]["cols"], 40, "{result}");
    assert_eq!(result["terminal"]["cursor"]["col"], 1, "{result}");
    assert_eq!(mount.read("cmd/drawn/screen"), screen);
}

#[test]
fn the_eviction_count_survives_a_restart() {
    let mut mount = Mount::with_args(&["--max-spool", "1m"]);
    let evicted = |mount: &Mount, count: u32| {
        let index = mount.read("cmd/index.md");
        assert!(index.contains(&format!("evicted: {count}")), "{index}");
    };
    mount.run("a", "head -c 600000 /dev/zero");
    mount.run("b", "head -c 600000 /dev/zero");
    assert!(wait_until(Duration::from_secs(10), || !mount
        .p("cmd/a")
        .exists()));
    evicted(&mount, 1);
    mount.stop();
    mount.spawn(&["--max-spool", "1m"]);
    evicted(&mount, 1);

    mount.run("c", "head -c 600000 /dev/zero");
    assert!(wait_until(Duration::from_secs(10), || !mount
        .p("cmd/b")
        .exists()));
    evicted(&mount, 2);
    // A crash too: the count is on disk once the spool has written it.
    let file = mount.spool.join("evicted");
    assert!(wait_until(Duration::from_secs(10), || {
        std::fs::read_to_string(&file).is_ok_and(|text| text == "2\n")
    }));
    let mut child = mount.take_child().expect("the driver runs");
    child.kill().unwrap();
    child.wait().unwrap();
    mount.spawn(&["--max-spool", "1m"]);
    evicted(&mount, 2);

    // A damaged count is said in the log and starts again from 0.
    mount.stop();
    std::fs::write(&file, "many\n").unwrap();
    mount.spawn(&["--max-spool", "1m"]);
    evicted(&mount, 0);
    assert!(
        mount.log().contains("does not hold a count"),
        "{}",
        mount.log()
    );
}

#[test]
fn a_command_looked_for_starts_ahead_of_a_burst_queued_before_it() {
    // Starts run one after the other. With a one-second wait, the last of 2,000
    // commands queued at once would not appear in time if it waited its turn. It is
    // queued once it leaves ctl/ (its settle time over; looking there starts nothing).
    let mount = Mount::with_args(&["--wait-timeout", "1"]);
    let out = mount.sh(
        "i=0; while [ $i -lt 2000 ]; do echo true > \"$M/ctl/q$i\" || exit 1; i=$((i+1)); done
         timeout 60 sh -c 'while [ -e \"$1\" ]; do :; done' _ \"$M/ctl/q1999\" || exit 4
         cat \"$M/cmd/q1999/status\"",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{} (4: ctl/q1999 was still there after 60 s) {stdout}{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        mount.log()
    );
    assert!(
        stdout == "running\n" || stdout == "completed\n",
        "{stdout:?}"
    );
}

/// The files of `cmd/<name>`, sorted.
fn listing(mount: &Mount, name: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(mount.p(&format!("cmd/{name}")))
        .unwrap_or_else(|e| panic!("cannot list cmd/{name}: {e}"))
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// `result.json`'s `shell` and `cwd`.
fn ran_with(mount: &Mount, name: &str) -> (serde_json::Value, serde_json::Value) {
    let result = json(mount, &format!("cmd/{name}/result.json"));
    (result["shell"].clone(), result["cwd"].clone())
}

#[test]
fn result_json_names_the_shell_and_directory_a_command_ran_with_across_a_restart() {
    let mut mount = Mount::with(Options {
        args: vec!["--shell", "/bin/sh"],
        ..deny_sudo()
    });
    // The rig runs the first driver in the test's directory.
    let first_cwd = mount.dir.path().to_path_buf();
    let first = (
        serde_json::json!("/bin/sh"),
        serde_json::json!(first_cwd.to_str().unwrap()),
    );
    let physical = |dir: &Path| std::fs::canonicalize(dir).unwrap().display().to_string();
    let gate = mount.dir.path().join("gate");
    let text = format!("echo \"$0\"; pwd; {}", until_exists(&gate));
    std::fs::write(mount.p("ctl/first"), text).unwrap();
    let printed = format!("/bin/sh\n{}\n", physical(&first_cwd));
    assert!(wait_until(Duration::from_secs(20), || {
        mount.read("cmd/first/stdout") == printed
    }));
    // While it runs.
    assert_eq!(mount.read("cmd/first/status"), "running\n");
    assert_eq!(ran_with(&mount, "first"), first);
    std::fs::write(&gate, "").unwrap();
    assert_eq!(mount.wait("first"), "completed\n");
    // Once it stopped.
    assert_eq!(ran_with(&mount, "first"), first);
    // A refused command never ran: it has no result.json, only command, status, reason.
    assert!(std::fs::write(mount.p("ctl/nope"), "sudo true").is_err());
    assert_eq!(listing(&mount, "nope"), ["command", "reason", "status"]);

    // Another shell and directory after a restart: what ran keeps what it ran with.
    assert_eq!(mount.stop().code(), Some(0));
    let elsewhere = mount.dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let second_args = ["--shell", "/bin/bash", "--cwd", elsewhere.to_str().unwrap()];
    mount.spawn(&second_args);
    assert_eq!(mount.read("cmd/first/stdout"), printed);
    assert_eq!(ran_with(&mount, "first"), first);
    assert_eq!(listing(&mount, "nope"), ["command", "reason", "status"]);
    // A command started now runs with the new ones, and says so.
    assert_eq!(mount.run("second", "echo \"$0\"; pwd"), "completed\n");
    assert_eq!(
        mount.read("cmd/second/stdout"),
        format!("/bin/bash\n{}\n", physical(&elsewhere))
    );
    let second = (
        serde_json::json!("/bin/bash"),
        serde_json::json!(elsewhere.to_str().unwrap()),
    );
    assert_eq!(ran_with(&mount, "second"), second);

    // And a third driver, with the first's settings again, tells both apart.
    mount.stop();
    mount.spawn(&["--shell", "/bin/sh"]);
    assert_eq!(ran_with(&mount, "first"), first);
    assert_eq!(ran_with(&mount, "second"), second);
}

#[test]
fn a_pinned_command_stays_pinned_and_its_removed_files_stay_removed_after_a_restart() {
    // Kept an hour at first, so nothing expires before the restart.
    let mut mount = Mount::with(deny_sudo());
    // Pinned once it stopped.
    assert_eq!(mount.run("done", "echo out; echo err >&2"), "completed\n");
    std::fs::remove_file(mount.p("cmd/done/stdout")).unwrap();
    // Pinned while it ran: the records saved when it ends keep the pin.
    let gate = mount.dir.path().join("gate");
    std::fs::write(
        mount.p("ctl/live"),
        format!("echo started; {}", until_exists(&gate)),
    )
    .unwrap();
    assert!(wait_until(Duration::from_secs(20), || {
        mount.read("cmd/live/stdout") == "started\n"
    }));
    std::fs::remove_file(mount.p("cmd/live/stderr")).unwrap();
    std::fs::write(&gate, "").unwrap();
    assert_eq!(mount.wait("live"), "completed\n");
    // A refused command, pinned.
    assert!(std::fs::write(mount.p("ctl/nope"), "sudo true").is_err());
    std::fs::remove_file(mount.p("cmd/nope/reason")).unwrap();
    // Not pinned: the same keep must remove it after the restart.
    assert_eq!(mount.run("loose", "echo loose"), "completed\n");
    let pinned = ["done", "live", "nope"];
    let before: Vec<Vec<String>> = pinned.iter().map(|name| listing(&mount, name)).collect();
    assert!(
        !before[0].contains(&"stdout".to_string()),
        "{:?}",
        before[0]
    );
    assert!(
        !before[1].contains(&"stderr".to_string()),
        "{:?}",
        before[1]
    );
    assert_eq!(before[2], ["command", "status"]);

    assert_eq!(mount.stop().code(), Some(0));
    mount.spawn(&["--keep", "1s"]);
    assert!(
        mount.log().contains("restored 4 command(s)"),
        "{}",
        mount.log()
    );
    let after: Vec<Vec<String>> = pinned.iter().map(|name| listing(&mount, name)).collect();
    assert_eq!(after, before, "the same files, the same ones removed");
    assert!(!mount.p("cmd/done/stdout").exists());
    assert_eq!(mount.read("cmd/done/stderr"), "err\n");
    assert_eq!(mount.read("cmd/live/stdout"), "started\n");
    // The unpinned one, restored with the same keep, expires...
    assert!(
        wait_until(Duration::from_secs(20), || !mount.p("cmd/loose").exists()),
        "the unpinned command did not expire"
    );
    // ...and the pinned ones stay, well past their keep.
    let stays_until = std::time::Instant::now() + Duration::from_secs(3);
    while std::time::Instant::now() < stays_until {
        for name in pinned {
            assert!(
                mount.p(&format!("cmd/{name}/status")).exists(),
                "{name} expired though pinned"
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }

    // A file removed after the restart is kept too, and a second restart shows both.
    std::fs::remove_file(mount.p("cmd/done/stderr")).unwrap();
    mount.stop();
    mount.spawn(&["--keep", "1s"]);
    let done = listing(&mount, "done");
    assert!(
        !done.contains(&"stdout".to_string()) && !done.contains(&"stderr".to_string()),
        "{done:?}"
    );
    assert_eq!(listing(&mount, "nope"), ["command", "status"]);

    // rm -r still removes a pinned command, and its files.
    mount.ok("rm -r \"$M/cmd/done\"");
    assert!(!mount.p("cmd/done").exists());
    assert!(wait_until(Duration::from_secs(10), || mount
        .spool_dirs("done")
        .is_empty()));
    mount.stop();
    mount.spawn(&["--keep", "1s"]);
    assert!(!mount.p("cmd/done").exists());
    assert!(mount.p("cmd/live/status").exists());
}

/// The names and sizes of the files in `dir`, recursively (times change as its driver
/// rewrites a record), but for the `.tmp` files a record is written through on its way
/// to its name, which come and go while the driver saves.
fn snapshot(dir: &Path) -> Vec<(PathBuf, u64)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        if entry.file_name().to_string_lossy().ends_with(".tmp") {
            continue;
        }
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        found.push((entry.path(), if meta.is_dir() { 0 } else { meta.len() }));
        if meta.is_dir() {
            found.extend(snapshot(&entry.path()));
        }
    }
    found.sort();
    found
}

#[test]
fn a_state_directory_serves_one_driver_at_a_time() {
    let mut first = Mount::start();
    assert_eq!(first.run("one", "echo from the first"), "completed\n");
    // Its record in its final form: nothing of the first driver changes the state now.
    let dirs = first.spool_dirs("one");
    assert_eq!(dirs.len(), 1);
    assert!(wait_until(Duration::from_secs(20), || {
        std::fs::read(dirs[0].join("meta.json"))
            .ok()
            .and_then(|text| serde_json::from_slice::<serde_json::Value>(&text).ok())
            .is_some_and(|record| record["exit"]["code"] == 0)
    }));
    let before = snapshot(&first.spool);

    // A second driver on another path with the same state directory.
    let other = tempfile::tempdir().unwrap();
    let second_path = other.path().join("mnt");
    let mut second = Command::new(crate::common::BIN)
        .arg("--path")
        .arg(&second_path)
        .arg("--settings")
        .arg(&first.settings)
        .arg("--state-dir")
        .arg(&first.spool)
        .arg("--cwd")
        .arg(other.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut status = None;
    let exited = wait_until(Duration::from_secs(20), || {
        status = second.try_wait().unwrap();
        status.is_some()
    });
    if !exited {
        let _ = second.kill();
        let _ = second.wait();
        let _ = Command::new("umount").arg("-l").arg(&second_path).status();
        panic!("a second driver on the same state directory kept running");
    }
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut second.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.unwrap().code(), Some(1), "{stderr}");
    let said = format!(
        "the state directory {} is in use by another terminalfs driver (pid {})",
        first.spool.display(),
        first.pid()
    );
    assert!(stderr.contains(&said), "{stderr}");
    assert!(
        !second_path.exists(),
        "nothing is made for a refused driver"
    );
    assert_eq!(
        snapshot(&first.spool),
        before,
        "the state is left as it was"
    );
    let lock = std::fs::read_to_string(first.spool.join("lock")).unwrap();
    assert_eq!(lock, format!("{}\n", first.pid()));

    // The first driver goes on, its command's files intact.
    assert_eq!(first.read("cmd/one/output"), "from the first\n");
    assert_eq!(first.run("two", "echo still here"), "completed\n");
    assert_eq!(first.read("cmd/two/output"), "still here\n");
    // --unmount does not need the lock.
    let out = run_binary(&[&"--unmount", &"--path", &first.path]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(first.wait_exit(Duration::from_secs(30)).is_some());

    // Once it has stopped a driver starts on that state directory, and again after
    // that one is killed outright: the kernel let go of the lock.
    first.spawn(&[]);
    assert_eq!(first.read("cmd/one/output"), "from the first\n");
    let mut child = first.take_child().expect("the driver runs");
    child.kill().unwrap();
    child.wait().unwrap();
    first.spawn(&[]);
    assert_eq!(first.read("cmd/one/output"), "from the first\n");
    assert_eq!(first.read("cmd/two/output"), "still here\n");
    let lock = std::fs::read_to_string(first.spool.join("lock")).unwrap();
    assert_eq!(lock.trim(), first.pid().to_string());
}

#[test]
fn a_command_with_a_file_open_is_evicted_last_and_its_reader_keeps_its_bytes() {
    let expected: String = (1..=150000).map(|i| format!("{i}\n")).collect();
    let mount = Mount::with_args(&["--max-spool", "3m", "--max-output", "1m"]);
    mount.run("open", "seq 1 150000");
    let mut held = std::fs::File::open(mount.p("cmd/open/output")).unwrap();
    // Four commands of a full 1 MiB each pass the bound with two at most besides it:
    // the others go, though `open` is the one read longest ago.
    for i in 0..4 {
        mount.run(
            &format!("big{i}"),
            "head -c 900000 /dev/urandom | base64 -w 100",
        );
    }
    let index = mount.read("cmd/index.md");
    assert!(index.contains("evicted: 2"), "{index}");
    assert!(mount.p("cmd/open").exists(), "{}", mount.log());
    let mut read = String::new();
    std::io::Read::read_to_string(&mut held, &mut read).unwrap();
    assert_eq!(read, expected);
    drop(held);

    // When nothing else is left to evict, it goes, but a reader with its file open
    // still reads every byte; its files go when that reader closes.
    let mount = Mount::with_args(&["--max-spool", "1500k", "--max-output", "1m"]);
    mount.run("open", "seq 1 150000");
    let mut held = std::fs::File::open(mount.p("cmd/open/output")).unwrap();
    mount.run("big", "head -c 900000 /dev/urandom | base64 -w 100");
    mount.wait_for_log("its files go when the last one open is closed");
    assert_eq!(mount.spool_dirs("open").len(), 1, "kept while open");
    let mut read = String::new();
    std::io::Read::read_to_string(&mut held, &mut read).unwrap();
    assert_eq!(read, expected);
    drop(held);
    assert!(
        wait_until(Duration::from_secs(10), || mount
            .spool_dirs("open")
            .is_empty()
            && !mount.p("cmd/open").exists()),
        "the files and the command go after the last close"
    );
    assert_eq!(
        json(&mount, "cmd/big/result.json")["stdout"]["dropped"],
        1_212_000 - 1_048_576
    );
}

/// The directories of the commands named `name` in the state directory `state`.
fn dirs_of(state: &Path, name: &str) -> Vec<PathBuf> {
    let prefix = format!("{name}.");
    std::fs::read_dir(state)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect()
}

/// The record of the command named `name` in the state directory `state`, if written.
fn record_on_disk(state: &Path, name: &str) -> Option<serde_json::Value> {
    dirs_of(state, name)
        .iter()
        .find_map(|dir| serde_json::from_slice(&std::fs::read(dir.join("meta.json")).ok()?).ok())
}

#[test]
fn a_record_a_full_disk_refused_is_written_later_or_restored_as_lost() {
    // Declared first, so it is unmounted after the driver has stopped.
    let disk = Tmpfs::mount("2m");
    let state = disk.path.join("spool");
    let mut mount = Mount::with_args(&["--state-dir", state.to_str().unwrap()]);
    // Fill the disk.
    assert_eq!(
        mount.run("big", "yes 0123456789 | head -c 3000000"),
        "completed\n"
    );
    assert_eq!(
        json(&mount, "cmd/big/result.json")["stdout"]["dropped"]
            .as_u64()
            .map(|d| d > 0),
        Some(true)
    );

    // A command run while it is full: its record cannot be written, and the log says so
    // once however often it is tried again.
    assert_eq!(mount.run("meanwhile", "echo hi; exit 3"), "error\n");
    mount.wait_for_log("meanwhile.");
    assert!(record_on_disk(&state, "meanwhile").is_none());
    let failures = |log: &str| {
        log.lines()
            .filter(|line| line.contains("cannot write") && line.contains("/meanwhile."))
            .count()
    };
    // Removals that free next to nothing have it tried again, in vain and silently.
    assert_eq!(mount.run("small", "true"), "completed\n");
    mount.ok("rm -r \"$M/cmd/small\"");
    assert_eq!(mount.run("small2", "true"), "completed\n");
    mount.ok("rm -r \"$M/cmd/small2\"");
    assert!(record_on_disk(&state, "meanwhile").is_none());

    // Room is freed: the record is written, and the log says that once too.
    mount.ok("rm -r \"$M/cmd/big\"");
    assert!(
        wait_until(Duration::from_secs(30), || record_on_disk(
            &state,
            "meanwhile"
        )
        .is_some_and(|record| record["exit"]["code"] == 3)),
        "{}",
        mount.log()
    );
    mount.wait_for_log("that could not be written before");
    let log = mount.log();
    assert_eq!(failures(&log), 1, "{log}");

    // Full again, and the driver killed before there is room: the next one shows the
    // command as an error whose record was lost, and writes that record.
    assert_eq!(
        mount.run("big", "yes 0123456789 | head -c 3000000"),
        "completed\n"
    );
    assert_eq!(mount.run("lost", "echo gone; exit 0"), "completed\n");
    assert!(record_on_disk(&state, "lost").is_none());
    let lost = dirs_of(&state, "lost");
    assert_eq!(lost.len(), 1, "{}", mount.log());
    let mut child = mount.take_child().expect("the driver runs");
    child.kill().unwrap();
    child.wait().unwrap();
    for dir in dirs_of(&state, "big") {
        std::fs::remove_dir_all(dir).unwrap();
    }
    mount.spawn(&["--state-dir", state.to_str().unwrap()]);
    assert_eq!(mount.read("cmd/lost/status"), "error\n");
    let reason = mount.read("cmd/lost/reason");
    assert!(reason.contains("its record was lost"), "{reason}");
    // Its exit status is unknown: /events makes up no code either.
    let event = mount.ok("grep -m1 -E '^[^ ]+ lost ' \"$M/events\"");
    assert_eq!(event.split_once(' ').unwrap().1, "lost error\n");
    assert!(
        mount.log().contains("without its record"),
        "{}",
        mount.log()
    );
    assert!(wait_until(Duration::from_secs(30), || {
        record_on_disk(&state, "lost").is_some_and(|record| record["record_lost"] == true)
    }));
    assert_eq!(mount.read("cmd/meanwhile/exitcode"), "3\n");
}

/// Output refused because running commands alone filled `--max-spool` is stored again
/// once room frees: the stream shows the notice where the gap is, the exact count of
/// what was dropped, then what came after, and the counts add up.
#[test]
fn output_refused_for_room_is_kept_again_once_room_frees() {
    let flags = tempfile::tempdir().unwrap();
    let (go, more) = (flags.path().join("go"), flags.path().join("more"));
    let mount = Mount::with_args(&["--max-output", "1000", "--max-spool", "20k"]);
    let names: Vec<String> = (0..10).map(|i| format!("A{i}")).collect();
    for name in &names {
        std::fs::write(
            mount.p(&format!("ctl/{name}")),
            format!(
                "head -c 999 /dev/zero | tr '\\0' a; head -c 999 /dev/zero | tr '\\0' b >&2; \
                 until [ -e {} ]; do sleep 0.05; done",
                go.display()
            ),
        )
        .unwrap();
    }
    let written = |name: &str, stream: &str, bytes: u64| {
        wait_until(Duration::from_secs(20), || {
            json(&mount, &format!("cmd/{name}/result.json"))[stream]["bytes"] == bytes
        })
    };
    for name in &names {
        assert!(
            written(name, "stdout", 999) && written(name, "stderr", 999),
            "{name}"
        );
    }
    std::fs::write(
        mount.p("ctl/B"),
        format!(
            "head -c 999 /dev/zero | tr '\\0' c; until [ -e {} ]; do sleep 0.05; done; \
             echo AFTER-LINE",
            more.display()
        ),
    )
    .unwrap();
    assert!(wait_until(Duration::from_secs(20), || {
        json(&mount, "cmd/B/result.json")["stdout"]["bytes"] == 999
    }));
    // What little room the others left holds the first of B's bytes (less its index
    // record); the rest is the gap.
    let fitted = json(&mount, "cmd/B/result.json")["stdout"]["kept"]
        .as_u64()
        .unwrap() as usize;
    assert!(
        fitted <= 20 * 1024 - 10 * (999 + 999 + 2 * 16) - 16,
        "{fitted} fitted"
    );
    let dropped = 999 - fitted;
    let open = "[terminalfs: output from here on was not kept: the spool reached --max-spool \
                (20k) with running commands alone]\n";
    let shown = if fitted == 0 {
        open.to_string()
    } else {
        format!("{}\n{open}", "c".repeat(fitted))
    };
    assert_eq!(
        mount.read("cmd/B/stdout"),
        shown,
        "the gap shows while it is open"
    );
    // The others finish: they may go to make room.
    std::fs::write(&go, "").unwrap();
    for name in &names {
        assert_eq!(mount.wait(name), "completed\n", "{name}");
    }
    std::fs::write(&more, "").unwrap();
    assert_eq!(mount.wait("B"), "completed\n");
    let kept = format!("{shown}[terminalfs: {dropped} bytes were not kept there]\nAFTER-LINE\n");
    assert_eq!(mount.read("cmd/B/stdout"), kept);
    assert_eq!(mount.read("cmd/B/output"), kept);
    let result = json(&mount, "cmd/B/result.json");
    assert_eq!(result["stdout"]["bytes"], 1010, "{result}");
    assert_eq!(result["stdout"]["kept"], fitted + 11, "{result}");
    assert_eq!(result["stdout"]["dropped"], dropped, "{result}");
    mount.wait_for_log(&format!(
        "storing the output of B again; {dropped} bytes of its stdout were dropped"
    ));
}

/// A command printing more than `--max-spool` has room for shows exactly the bytes
/// that fit, then the notice; once it ends, the count of the rest.
#[test]
fn a_command_printing_past_the_spool_bound_keeps_exactly_what_fits() {
    let flags = tempfile::tempdir().unwrap();
    let end = flags.path().join("end");
    let mount = Mount::with_args(&["--max-spool", "20k"]);
    std::fs::write(
        mount.p("ctl/big"),
        format!(
            "head -c 30000 /dev/zero | tr '\\0' a; {}",
            until_exists(&end)
        ),
    )
    .unwrap();
    assert!(wait_until(Duration::from_secs(20), || {
        json(&mount, "cmd/big/result.json")["stdout"]["bytes"] == 30000
    }));
    // 20k less the one 16-byte record of the index.
    let fits = 20 * 1024 - 16;
    let open = "\n[terminalfs: output from here on was not kept: the spool reached \
                --max-spool (20k) with running commands alone]\n";
    let shown = format!("{}{open}", "a".repeat(fits));
    assert_eq!(mount.read("cmd/big/stdout"), shown);
    assert_eq!(mount.read("cmd/big/output"), shown);
    let result = json(&mount, "cmd/big/result.json");
    assert_eq!(result["stdout"]["kept"], fits, "{result}");
    assert_eq!(result["stdout"]["dropped"], 30000 - fits, "{result}");
    std::fs::write(&end, "").unwrap();
    assert_eq!(mount.wait("big"), "completed\n");
    let ended = format!(
        "{shown}[terminalfs: {} bytes were not kept there]\n",
        30000 - fits
    );
    assert_eq!(mount.read("cmd/big/stdout"), ended);
    assert_eq!(mount.read("cmd/big/output"), ended);
}

/// After a restart, a finished command's streams have the times they last grew, not the
/// time it ended.
#[test]
fn a_restored_stream_has_the_time_it_last_grew() {
    let mut mount = Mount::start();
    let mtime = |mount: &Mount, file: &str| {
        std::fs::metadata(mount.p(&format!("cmd/quiet-end/{file}")))
            .and_then(|meta| meta.modified())
            .unwrap_or_else(|e| panic!("{file}: {e}"))
    };
    // It writes, then sleeps five seconds before it ends: however late the driver
    // takes in its bytes on a loaded machine, they come well before the end.
    assert_eq!(mount.run("quiet-end", "echo early; sleep 5"), "completed\n");
    let grew = mtime(&mount, "stdout");
    let started = mtime(&mount, "stderr");
    let ended = mtime(&mount, "status");
    assert!(
        ended.duration_since(grew).unwrap() >= Duration::from_millis(1500),
        "{grew:?} {ended:?}"
    );
    assert_eq!(mount.stop().code(), Some(0));
    mount.spawn(&[]);
    assert_eq!(mount.read("cmd/quiet-end/stdout"), "early\n");
    let near = |a: SystemTime, b: SystemTime| {
        a.duration_since(b)
            .or_else(|_| b.duration_since(a))
            .unwrap()
            < Duration::from_secs(1)
    };
    for file in ["stdout", "output"] {
        let restored = mtime(&mount, file);
        assert!(near(restored, grew), "{file}: {restored:?}, grew {grew:?}");
        assert!(
            !near(restored, ended),
            "{file}: {restored:?}, ended {ended:?}"
        );
    }
    assert!(near(mtime(&mount, "stderr"), started), "never written");
}

/// A stream that lost bytes to `--max-spool` and then ran past `--max-output`: where
/// `output` drops the lines that counted them, its one notice counts every byte it
/// does not show and says why some were not kept, and `result.json` counts what the
/// file holds.
#[test]
fn output_counts_bytes_lost_to_the_spool_bound_where_it_drops_their_lines() {
    let flags = tempfile::tempdir().unwrap();
    let (go, more) = (flags.path().join("go"), flags.path().join("more"));
    let mount = Mount::with_args(&["--max-output", "1000", "--max-spool", "4k"]);
    // Three full streams and a half one (each with its index record) leave 532 bytes.
    let fillers = [("F0", 1000), ("F1", 1000), ("F2", 1000), ("F3", 500)];
    for (name, bytes) in fillers {
        std::fs::write(
            mount.p(&format!("ctl/{name}")),
            format!(
                "head -c {bytes} /dev/zero | tr '\\0' f; {}",
                until_exists(&go)
            ),
        )
        .unwrap();
        assert!(
            wait_until(Duration::from_secs(20), || {
                json(&mount, &format!("cmd/{name}/result.json"))["stdout"]["bytes"] == bytes
            }),
            "{name}"
        );
    }
    std::fs::write(
        mount.p("ctl/B"),
        format!(
            "head -c 3000 /dev/zero | tr '\\0' b >&2; {}; echo err-after >&2; \
             head -c 5000 /dev/zero | tr '\\0' c",
            until_exists(&more)
        ),
    )
    .unwrap();
    assert!(wait_until(Duration::from_secs(20), || {
        json(&mount, "cmd/B/result.json")["stderr"]["bytes"] == 3000
    }));
    let fitted = json(&mount, "cmd/B/result.json")["stderr"]["kept"]
        .as_u64()
        .unwrap();
    assert!(fitted <= 4096 - (3 * 1016 + 516) - 16, "{fitted} fitted");
    // What fitted fills `output`'s head (a quarter of 1000), so the lines that follow
    // it lie between the head and the tail once stdout runs past the bound.
    assert!(fitted > 250, "{fitted} fitted");
    let refused = 3000 - fitted;
    std::fs::write(&go, "").unwrap();
    for (name, _) in fillers {
        assert_eq!(mount.wait(name), "completed\n", "{name}");
    }
    std::fs::write(&more, "").unwrap();
    assert_eq!(mount.wait("B"), "completed\n");
    // stderr is under the bound: its lines show where the gap was, with the count.
    let stderr = format!(
        "{}\n[terminalfs: output from here on was not kept: the spool reached --max-spool \
         (4k) with running commands alone]\n[terminalfs: {refused} bytes were not kept \
         there]\nerr-after\n",
        "b".repeat(fitted as usize)
    );
    assert_eq!(mount.read("cmd/B/stderr"), stderr);
    // `output` drops those lines: its notice counts the bytes they counted too.
    let written = 3000 + 10 + 5000;
    let notice = format!(
        "\n[terminalfs: {} bytes were dropped here ({refused} of them were not kept: the \
         spool reached --max-spool with running commands alone); the first 250 and the \
         newest 750 bytes are kept]\n",
        written - 1000
    );
    let output = mount.read("cmd/B/output");
    assert_eq!(
        output,
        format!("{}{notice}{}", "b".repeat(250), "c".repeat(750))
    );
    let result = json(&mount, "cmd/B/result.json");
    assert_eq!(result["output"]["bytes"], written, "{result}");
    assert_eq!(result["output"]["kept"], 1000, "{result}");
    assert_eq!(result["output"]["dropped"], written - 1000, "{result}");
    assert_eq!(result["stderr"]["kept"], fitted + 10, "{result}");
    assert_eq!(result["stderr"]["dropped"], refused, "{result}");
}

#[test]
fn a_restored_command_answers_writes_to_its_input_as_before_the_restart() {
    let mut mount = Mount::start();
    assert_eq!(
        mount.run("py", "#terminalfs stdin\necho ready"),
        "completed\n"
    );
    assert_eq!(
        mount.run("term", "#terminalfs tty\necho ready"),
        "completed\n"
    );
    assert_eq!(mount.run("plain", "echo ready"), "completed\n");
    let writes = "echo x >> $M/cmd/py/stdin; echo Enter >> $M/cmd/term/keys; \
                  echo x >> $M/cmd/term/stdin; echo x >> $M/cmd/plain/stdin";
    let stderr = |mount: &Mount| {
        let out = mount.sh(writes);
        assert!(!out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let before = stderr(&mount);
    assert_eq!(before.matches("Broken pipe").count(), 3, "{before}");
    assert_eq!(before.matches("Permission denied").count(), 1, "{before}");
    mount.stop();
    let logged_before = mount.log().len();
    mount.spawn(&[]);
    assert_eq!(stderr(&mount), before);
    // The restarted driver logs the same sentences: wait for each, as the log is read
    // while the driver writes it (the first driver logged them too, before).
    let since = || mount.log()[logged_before..].to_string();
    for line in [
        "cmd/py/stdin: nothing reads this input any more",
        "cmd/term/keys: nothing reads",
        "cmd/term/stdin: nothing reads",
        "cmd/plain/stdin: it was started without stdin",
    ] {
        assert!(
            wait_until(Duration::from_secs(30), || since().contains(line)),
            "no {line:?} after the restart:\n{}",
            since()
        );
    }
    assert_eq!(since().matches("started without stdin").count(), 1);
}
