//! The spool on a real mount (SPEC 5, 7, 10): output on disk, restarts, eviction, the
//! state directory.

use crate::common::{run_binary, wait_until, Mount, Options};
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

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

    // A crash: nothing is written on the way out, the records already on disk serve.
    let mut child = mount.take_child().expect("the driver runs");
    child.kill().unwrap();
    child.wait().unwrap();
    mount.spawn(&[]);
    check_commands(&mount);

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
    let mut child = mount.take_child().expect("the driver runs");
    child.kill().unwrap();
    child.wait().unwrap();
    mount.spawn(&[]);
    assert_eq!(mount.read("cmd/chatty/status"), "error\n");
    assert_eq!(
        mount.read("cmd/chatty/reason"),
        "the driver stopped while it ran\n"
    );
    assert_eq!(mount.read("cmd/chatty/stdout"), lines);
    assert_eq!(mount.read("cmd/chatty/output"), format!("{lines}half\n"));
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
    assert!(mount.log().contains("evicted"), "{}", mount.log());

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
