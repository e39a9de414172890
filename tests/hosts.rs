//! Remote hosts on a real mount: a throwaway sshd on 127.0.0.1 started by each test,
//! a single-node Slurm cluster started the same way, and a stand-in `kubectl` (no
//! Kubernetes cluster here).

use crate::common::sshd::Sshd;
use crate::common::{process_alive, wait_until, Mount, Options};
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

fn settings(hosts: Value) -> String {
    json!({"permissions": {"deny": ["Bash(sudo:*)"]}, "hosts": hosts}).to_string()
}

fn mount_with(hosts: Value, args: &[&str]) -> Mount {
    let text = settings(hosts);
    Mount::with(Options {
        args: args.to_vec(),
        settings: &text,
    })
}

fn result_of(mount: &Mount, name: &str) -> Value {
    serde_json::from_str(&mount.read(&format!("cmd/{name}/result.json"))).expect("result.json")
}

/// The first line of a command's stdout once it is there: a remote pid the command
/// printed.
fn printed_pid(mount: &Mount, name: &str) -> i32 {
    let text = mount.holds(&format!("cmd/{name}/stdout"), "\n");
    text.lines().next().unwrap().trim().parse().expect("a pid")
}

#[test]
fn a_command_runs_over_ssh_with_its_streams_apart() {
    let sshd = Sshd::start();
    let mount = mount_with(json!({"box": sshd.entry()}), &[]);
    let answer = mount.run(
        "r",
        "#terminalfs host=box\necho out; echo err >&2; echo \"$TERMINALFS_NAME\"; exit 3",
    );
    assert_eq!(answer, "error\n", "{}", mount.log());
    assert_eq!(mount.read("cmd/r/exitcode"), "3\n");
    assert_eq!(mount.read("cmd/r/stdout"), "out\nr\n");
    assert_eq!(mount.read("cmd/r/stderr"), "err\n");
    let result = result_of(&mount, "r");
    assert_eq!(result["host"], "box");
    assert_eq!(result["output_order"], "per stream");
    assert!(
        result["containment"].as_str().unwrap().contains("host box"),
        "{result}"
    );
    // events name the host after the word.
    // The far side's times are read back over the connection once it ended.
    let remote_times = wait_until(Duration::from_secs(20), || {
        result_of(&mount, "r")["remote"]["finished_at"].is_string()
    });
    assert!(remote_times, "{}", mount.read("cmd/r/result.json"));
    let events = mount.read("events");
    assert!(events.contains(" r error 3 box\n"), "{events}");
    // --host sets the default; `local` is this machine.
    let local = mount.run("l", "#terminalfs host=local\necho here");
    assert_eq!(local, "completed\n");
    assert_eq!(result_host(&mount, "l"), Value::Null);
    // The index lists the host and, once looked at, that it is reachable.
    mount.holds("index.md", "| box | `ssh ");
    mount.holds("index.md", "reachable (at ");
}

/// Writes a command that is refused (the close fails with EPERM); returns its reason.
fn refused(mount: &Mount, name: &str, text: &str) -> String {
    let written = std::fs::write(mount.p(&format!("ctl/{name}")), text);
    assert_eq!(
        written.map_err(|e| e.raw_os_error()),
        Err(Some(libc::EPERM)),
        "{name}"
    );
    assert_eq!(mount.read(&format!("cmd/{name}/status")), "denied\n");
    mount.read(&format!("cmd/{name}/reason"))
}

fn result_host(mount: &Mount, name: &str) -> Value {
    result_of(mount, name)["host"].clone()
}

#[test]
fn selftest_runs_a_command_on_every_host() {
    let sshd = Sshd::start();
    let mount = mount_with(json!({"box": sshd.entry()}), &[]);
    let out = crate::common::run_binary(&[&"selftest", &"--path", &mount.path]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("ran a command on each host: box"), "{said}");
}

#[test]
fn a_mount_can_send_every_command_to_a_host() {
    let sshd = Sshd::start();
    let mount = mount_with(json!({"box": sshd.entry()}), &["--host", "box"]);
    assert_eq!(mount.run("d", "echo there"), "completed\n");
    assert_eq!(result_host(&mount, "d"), "box");
    assert_eq!(
        mount.run("h", "#terminalfs host=local\ntrue"),
        "completed\n"
    );
    assert_eq!(result_host(&mount, "h"), Value::Null);
}

#[test]
fn bad_host_picks_and_entries_are_refused_with_a_sentence() {
    let mount = mount_with(json!({"box": {"ssh": "nobody@127.0.0.1"}}), &[]);
    let reason = refused(&mount, "u", "#terminalfs host=elsewhere\ntrue");
    assert!(
        reason.contains("host=elsewhere names no host") && reason.contains("box"),
        "{reason}"
    );
    // cwd= names a directory here; a host's directory is its entry's.
    let reason = refused(&mount, "c", "#terminalfs host=box cwd=/\ntrue");
    assert!(reason.contains("set \"cwd\" in its entry"), "{reason}");
    // The deny list judges the text here first.
    assert!(refused(&mount, "s", "#terminalfs host=box\nsudo true").contains("Bash(sudo:*)"));
    // A mount without hosts refuses host=.
    let plain = Mount::start();
    assert!(refused(&plain, "p", "#terminalfs host=box\ntrue").contains("this mount has no hosts"));
    // Entries that cannot be used keep the driver from starting (fail closed).
    for (entry, says) in [
        (
            json!({"options": ["-p", "22"]}),
            "needs one of \"ssh\", \"kubectl\" or \"srun\"",
        ),
        (
            json!({"ssh": "h", "options": "-p 22"}),
            "options must be a list of strings",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("settings.json");
        std::fs::write(&file, settings(json!({"bad": entry}))).unwrap();
        let out = std::process::Command::new(crate::common::BIN)
            .arg("--path")
            .arg(dir.path().join("mnt"))
            .arg("--settings")
            .arg(&file)
            .env("XDG_STATE_HOME", dir.path())
            .output()
            .unwrap();
        assert!(!out.status.success());
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(said.contains(says), "{said}");
    }
    // Under the sandbox only an entry that says "unsandboxed": true may run.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port().to_string();
    drop(closed);
    let entry = |free: bool| json!({"ssh": "nobody@127.0.0.1", "options": ["-p", port], "unsandboxed": free});
    let text =
        json!({"sandbox": {"enabled": true}, "hosts": {"kept": entry(false), "free": entry(true)}})
            .to_string();
    let sandboxed = Mount::with(Options {
        args: vec![],
        settings: &text,
    });
    let reason = refused(&sandboxed, "k", "#terminalfs host=kept\ntrue");
    assert!(reason.contains("\"unsandboxed\": true"), "{reason}");
    assert_eq!(sandboxed.run("f", "#terminalfs host=free\ntrue"), "error\n");
    assert!(sandboxed.read("cmd/f/reason").contains("host free"));
    // `check` names the host a text runs on.
    let out = std::process::Command::new(crate::common::BIN)
        .args(["check", "--settings"])
        .arg(&mount.settings)
        .arg("#terminalfs host=box\nmake")
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("host: box"),
        "{out:?}"
    );
    // --host naming no entry is refused at start.
    let out = std::process::Command::new(crate::common::BIN)
        .args(["--host", "nowhere", "--settings"])
        .arg(&mount.settings)
        .arg("--path")
        .arg(mount.dir.path().join("other"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--host nowhere"));
}

#[test]
fn kill_words_stop_and_timeouts_reach_the_remote_group() {
    let sshd = Sshd::start();
    let mount = mount_with(json!({"box": sshd.entry()}), &["--kill-grace", "2s"]);
    // A signal word: the remote shell dies of it, and so does its child.
    std::fs::write(mount.p("ctl/i"), "#terminalfs host=box\necho $$; sleep 300").unwrap();
    let pid = printed_pid(&mount, "i");
    assert!(process_alive(pid));
    std::fs::write(mount.p("cmd/i/kill"), "INT").unwrap();
    assert_eq!(mount.wait("i"), "error\n");
    assert_eq!(mount.read("cmd/i/exitcode"), "130\n");
    assert!(wait_until(Duration::from_secs(20), || !process_alive(pid)));
    // STOP and CONT pause and resume the far side.
    std::fs::write(mount.p("ctl/p"), "#terminalfs host=box\necho $$; sleep 300").unwrap();
    let pid = printed_pid(&mount, "p");
    std::fs::write(mount.p("cmd/p/kill"), "STOP").unwrap();
    assert!(wait_until(Duration::from_secs(20), || {
        crate::common::proc_stat(pid).is_some_and(|s| s.state == 'T')
    }));
    std::fs::write(mount.p("cmd/p/kill"), "CONT").unwrap();
    assert!(wait_until(Duration::from_secs(20), || {
        crate::common::proc_stat(pid).is_some_and(|s| s.state != 'T')
    }));
    // stop: TERM to the remote group.
    std::fs::write(mount.p("cmd/p/kill"), "stop").unwrap();
    assert_eq!(mount.wait("p"), "error\n");
    assert!(wait_until(Duration::from_secs(20), || !process_alive(pid)));
    assert!(mount.read("cmd/p/reason").contains("killed"));
    // timeout=
    std::fs::write(
        mount.p("ctl/t"),
        "#terminalfs host=box timeout=1s\necho $$; sleep 300",
    )
    .unwrap();
    let pid = printed_pid(&mount, "t");
    assert_eq!(mount.wait("t"), "error\n");
    assert!(mount.read("cmd/t/reason").contains("timed out"));
    assert!(wait_until(Duration::from_secs(20), || !process_alive(pid)));
}

#[test]
fn stdin_and_a_terminal_go_through_the_channel() {
    let sshd = Sshd::start();
    let mount = mount_with(json!({"box": sshd.entry()}), &[]);
    std::fs::write(mount.p("ctl/c"), "#terminalfs host=box stdin\ntr a-z A-Z").unwrap();
    mount.holds("cmd/c/status", "running");
    std::fs::write(mount.p("cmd/c/stdin"), "hello\n").unwrap();
    std::fs::remove_file(mount.p("cmd/c/stdin")).ok();
    mount.holds("cmd/c/stdout", "HELLO\n");
    let _ = mount.sh("printf '' > \"$M/cmd/c/stdin\"");
    std::fs::write(
        mount.p("ctl/y"),
        "#terminalfs host=box tty=80x24\ntty; stty size",
    )
    .unwrap();
    assert_eq!(
        mount.wait("y"),
        "completed\n",
        "{}",
        mount.read("cmd/y/stdout")
    );
    let screen = mount.read("cmd/y/stdout");
    assert!(
        screen.contains("/dev/pts/") && screen.contains("24 80"),
        "{screen}"
    );
}

#[test]
fn an_unreachable_host_or_a_refused_key_is_an_error_at_once() {
    let sshd = Sshd::start();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let mut far = sshd.entry();
    far["options"][1] = json!(port.to_string());
    let mut wrong = sshd.entry();
    let other = tempfile::tempdir().unwrap();
    let key = other.path().join("k");
    std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(&key)
        .status()
        .unwrap();
    wrong["options"][3] = json!(key.display().to_string());
    let mount = mount_with(json!({"far": far, "wrong": wrong}), &[]);
    let started = Instant::now();
    assert_eq!(mount.run("f", "#terminalfs host=far\ntrue"), "error\n");
    let reason = mount.read("cmd/f/reason");
    assert!(
        reason.contains("host far") && reason.contains("Connection refused"),
        "{reason}"
    );
    assert_eq!(mount.run("w", "#terminalfs host=wrong\ntrue"), "error\n");
    let reason = mount.read("cmd/w/reason");
    assert!(
        reason.contains("host wrong") && reason.contains("Permission denied"),
        "{reason}"
    );
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn a_dropped_connection_ends_the_command_as_error_keeping_its_output() {
    let mut sshd = Sshd::start();
    let mount = mount_with(json!({"box": sshd.entry()}), &[]);
    std::fs::write(
        mount.p("ctl/d"),
        "#terminalfs host=box\necho before; sleep 300",
    )
    .unwrap();
    mount.holds("cmd/d/stdout", "before\n");
    sshd.kill();
    assert_eq!(mount.wait("d"), "error\n");
    let reason = mount.read("cmd/d/reason");
    assert!(
        reason.contains("host box") && reason.contains("connection was lost"),
        "{reason}"
    );
    assert_eq!(mount.read("cmd/d/stdout"), "before\n");
}

#[test]
fn remote_commands_stop_with_the_mount_and_finished_ones_come_back() {
    let sshd = Sshd::start();
    let mut mount = mount_with(json!({"box": sshd.entry()}), &["--kill-grace", "1s"]);
    assert_eq!(
        mount.run("done", "#terminalfs host=box\necho kept"),
        "completed\n"
    );
    std::fs::write(
        mount.p("ctl/long"),
        "#terminalfs host=box\necho $$; sleep 300",
    )
    .unwrap();
    let pid = printed_pid(&mount, "long");
    assert!(mount.stop().success());
    assert!(
        wait_until(Duration::from_secs(20), || !process_alive(pid)),
        "the remote sleep outlived the mount"
    );
    mount.spawn(&[]);
    assert_eq!(mount.read("cmd/done/stdout"), "kept\n");
    assert_eq!(result_host(&mount, "done"), "box");
    assert!(result_of(&mount, "done")["remote"]["started_at"].is_string());
    assert_eq!(mount.read("cmd/long/status"), "error\n");
}

#[test]
fn a_hundred_remote_commands_at_once_share_a_few_connections() {
    let sshd = Sshd::start();
    let mount = mount_with(json!({"box": sshd.entry()}), &[]);
    // Warm: one connection up, and the driver's descriptors counted at rest.
    assert_eq!(mount.run("w", "#terminalfs host=box\ntrue"), "completed\n");
    let idle = crate::common::fd_count(mount.pid() as i32);
    for n in 0..100 {
        std::fs::write(
            mount.p(&format!("ctl/c{n}")),
            format!("#terminalfs host=box\nseq 1 {n}; echo end {n}"),
        )
        .unwrap();
    }
    for n in 0..100 {
        assert_eq!(mount.wait(&format!("c{n}")), "completed\n", "c{n}");
        let mut expected: String = (1..=n).map(|i| format!("{i}\n")).collect();
        expected.push_str(&format!("end {n}\n"));
        assert_eq!(mount.read(&format!("cmd/c{n}/stdout")), expected, "c{n}");
    }
    // Ten sessions a connection: a handful of masters, not a hundred.
    let masters = crate::common::sshd::descendants(mount.pid() as i32)
        .into_iter()
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|line| line.contains("-M\0-N"))
        })
        .count();
    assert!((1..=12).contains(&masters), "{masters} masters");
    assert!(
        wait_until(Duration::from_secs(20), || crate::common::fd_count(
            mount.pid() as i32
        ) <= idle + 2),
        "descriptors: {} at rest before, {} now",
        idle,
        crate::common::fd_count(mount.pid() as i32)
    );
}

fn stand_in(dir: &Path, name: &str, body: &str) {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn with_path(bin: &Path, hosts: Value, args: &[&str]) -> Mount {
    let text = settings(hosts);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Mount::with_launcher(
        Options {
            args: args.to_vec(),
            settings: &text,
        },
        &move |command| {
            command.env("PATH", &path);
        },
    )
}

#[test]
fn kubectl_exec_runs_under_the_same_wrapper() {
    let bin = tempfile::tempdir().unwrap();
    // A pod that is this machine: everything after `--` runs here, as `kubectl exec` runs
    // it in the container; the arguments before it are logged.
    let log = bin.path().join("kubectl.log");
    stand_in(
        bin.path(),
        "kubectl",
        &format!(
            "for a; do [ \"$a\" = -- ] && break; printf '%s ' \"$a\" >>'{}'; done; echo >>'{}'\n\
             while [ \"$1\" != -- ]; do shift; done; shift; exec \"$@\"\n",
            log.display(),
            log.display()
        ),
    );
    let mount = with_path(
        bin.path(),
        json!({"gpu": {"kubectl": "pod/gpu-0", "options": ["-n", "ml"], "env": {"STAGE": "two"}}}),
        &["--kill-grace", "1s"],
    );
    assert_eq!(
        mount.run("k", "#terminalfs host=gpu\necho \"$STAGE\"; exit 4"),
        "error\n"
    );
    assert_eq!(mount.read("cmd/k/exitcode"), "4\n");
    assert_eq!(mount.read("cmd/k/stdout"), "two\n");
    assert!(std::fs::read_to_string(&log)
        .unwrap()
        .contains("exec -i -n ml pod/gpu-0"));
    std::fs::write(mount.p("ctl/s"), "#terminalfs host=gpu\necho $$; sleep 300").unwrap();
    let pid = printed_pid(&mount, "s");
    std::fs::write(mount.p("cmd/s/kill"), "USR1").unwrap();
    assert_eq!(mount.wait("s"), "error\n");
    assert_eq!(
        mount.read("cmd/s/exitcode"),
        (128 + libc::SIGUSR1).to_string() + "\n"
    );
    assert!(wait_until(Duration::from_secs(20), || !process_alive(pid)));
}

#[test]
fn srun_runs_a_job_step_on_a_real_cluster() {
    let slurm = crate::common::slurm::Slurm::start();
    let text =
        settings(json!({"hpc": {"srun": ["--partition=debug"], "env": {"WHERE": "cluster"}}}));
    let conf = slurm.conf.clone();
    let mount = Mount::with_launcher(
        Options {
            args: vec!["--kill-grace", "2s"],
            settings: &text,
        },
        &move |command| {
            command.env("SLURM_CONF", &conf);
        },
    );
    assert_eq!(
        mount.run(
            "j",
            "#terminalfs host=hpc\necho \"$WHERE $TERMINALFS_NAME\"; exit 7"
        ),
        "error\n",
        "{}",
        mount.read("cmd/j/stderr")
    );
    assert_eq!(mount.read("cmd/j/exitcode"), "7\n");
    assert_eq!(mount.read("cmd/j/stdout"), "cluster j\n");
    // A signal srun does not forward goes through scancel to the step.
    std::fs::write(
        mount.p("ctl/s"),
        "#terminalfs host=hpc\ntrap 'echo got USR2' USR2; echo $$; while :; do sleep 0.1; done",
    )
    .unwrap();
    let pid = printed_pid(&mount, "s");
    std::fs::write(mount.p("cmd/s/kill"), "USR2").unwrap();
    mount.holds("cmd/s/stdout", "got USR2\n");
    // stop: TERM to srun cancels the step.
    std::fs::write(mount.p("cmd/s/kill"), "stop").unwrap();
    assert_eq!(mount.wait("s"), "error\n");
    assert!(wait_until(Duration::from_secs(20), || !process_alive(pid)));
    // timeout=
    std::fs::write(
        mount.p("ctl/t"),
        "#terminalfs host=hpc timeout=1s\necho $$; sleep 300",
    )
    .unwrap();
    let pid = printed_pid(&mount, "t");
    assert_eq!(mount.wait("t"), "error\n");
    assert!(mount.read("cmd/t/reason").contains("timed out"));
    assert!(wait_until(Duration::from_secs(20), || !process_alive(pid)));
    mount.holds("index.md", "| hpc | `srun --partition=debug` | `reachable");
}
