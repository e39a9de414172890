//! Processes (SPEC 6 as far as the core goes): how a command runs, exit codes, kill.

use crate::common::{group_members, mount_with_a_vanished_shell, process_alive, wait_until, Mount};
#[cfg(target_os = "linux")]
use crate::common::{until_exists, wait_in_write, Reaper};
use std::time::{Duration, Instant};

/// Long enough for a loaded machine; an idle one needs a fraction of a second.
#[cfg(target_os = "linux")]
const PATIENCE: Duration = Duration::from_secs(30);

#[test]
fn a_command_runs_in_the_shell_cwd_and_environment_it_should() {
    let mount = Mount::start();
    let out = mount.dir.path().display().to_string();
    assert_eq!(
        mount.run("env", "echo \"$TERMINALFS_NAME|$(pwd)|$0\"; cat; echo done"),
        "completed\n"
    );
    assert_eq!(
        mount.read("cmd/env/stdout"),
        format!("env|{out}|/bin/sh\ndone\n")
    );
    // Its own session and process group, and no terminal.
    mount.run("session", "ps -o pid=,pgid=,sid=,tty= -p $$");
    let fields: Vec<String> = mount
        .read("cmd/session/stdout")
        .split_whitespace()
        .map(str::to_string)
        .collect();
    assert_eq!(fields[0], fields[1], "process group leader: {fields:?}");
    assert_eq!(fields[0], fields[2], "session leader: {fields:?}");
    assert_eq!(fields[3], "?", "no terminal: {fields:?}");
}

#[test]
fn shell_and_cwd_flags_are_used() {
    let dir = tempfile::tempdir().unwrap();
    let mount = Mount::with_args(&[
        "--shell",
        "/bin/bash",
        "--cwd",
        dir.path().to_str().unwrap(),
    ]);
    mount.run("which", "echo \"$BASH_VERSION\" | cut -c1-1; pwd");
    let out = mount.read("cmd/which/stdout");
    let mut lines = out.lines();
    assert!(
        lines.next().unwrap().chars().all(|c| c.is_ascii_digit()),
        "{out}"
    );
    assert_eq!(lines.next().unwrap(), dir.path().display().to_string());
}

#[test]
fn exit_codes_signals_and_a_shell_that_cannot_start() {
    let mount = Mount::start();
    assert_eq!(mount.run("zero", "true"), "completed\n");
    assert_eq!(mount.read("cmd/zero/exitcode"), "0\n");
    assert_eq!(mount.run("seven", "exit 7"), "error\n");
    assert_eq!(mount.read("cmd/seven/exitcode"), "7\n");
    assert_eq!(mount.run("killed", "kill -9 $$"), "error\n");
    assert_eq!(mount.read("cmd/killed/exitcode"), "137\n");
    let result: serde_json::Value =
        serde_json::from_str(&mount.read("cmd/killed/result.json")).unwrap();
    assert_eq!(result["signal"], 9);
    assert_eq!(result["exitcode"], 137);

    let (broken, shell, _shells) = mount_with_a_vanished_shell();
    assert_eq!(broken.run("nope", "echo hi"), "error\n");
    assert_eq!(broken.read("cmd/nope/exitcode"), "-1\n");
    let stderr = broken.read("cmd/nope/stderr");
    assert!(
        stderr.contains(&format!("cannot start {}", shell.display())),
        "{stderr}"
    );
    assert!(stderr.contains("No such file or directory"), "{stderr}");
}

#[test]
fn pid_and_kill_exist_only_while_running() {
    let mount = Mount::with_args(&["--kill-grace", "1s"]);
    std::fs::write(mount.p("ctl/victim"), "sleep 300 & sleep 300").unwrap();
    let pid: i32 = mount.read("cmd/victim/pid").trim().parse().unwrap();
    assert!(process_alive(pid));
    assert!(
        wait_until(Duration::from_secs(5), || group_members(pid).len() >= 2),
        "{:?}",
        group_members(pid)
    );
    assert!(!mount.p("cmd/victim/exitcode").exists());
    mount.ok("echo stop > \"$M/cmd/victim/kill\"");
    assert_eq!(mount.wait("victim"), "error\n");
    assert!(!mount.p("cmd/victim/pid").exists());
    assert!(!mount.p("cmd/victim/kill").exists());
    assert_eq!(
        mount.read("cmd/victim/exitcode"),
        format!("{}\n", 128 + libc::SIGTERM)
    );
    assert!(mount.read("cmd/victim/reason").contains("kill"));
    assert!(
        wait_until(Duration::from_secs(5), || group_members(pid).is_empty()),
        "left: {:?}",
        group_members(pid)
    );
    // result.json records that a kill stopped it.
    let result: serde_json::Value =
        serde_json::from_str(&mount.read("cmd/victim/result.json")).unwrap();
    assert_eq!(result["killed"], true);
}

#[test]
fn a_command_ignoring_sigterm_is_killed_after_the_grace() {
    let mount = Mount::with_args(&["--kill-grace", "1s"]);
    std::fs::write(
        mount.p("ctl/stubborn"),
        "trap 'echo got TERM' TERM; echo ready; while :; do sleep 0.1; done",
    )
    .unwrap();
    let pid: i32 = mount.read("cmd/stubborn/pid").trim().parse().unwrap();
    // A SIGTERM before the trap is set would end it at once.
    assert!(wait_until(Duration::from_secs(10), || mount
        .read("cmd/stubborn/stdout")
        .starts_with("ready")));
    let started = Instant::now();
    mount.ok("echo x > \"$M/cmd/stubborn/kill\"");
    assert_eq!(mount.wait("stubborn"), "error\n");
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(mount.read("cmd/stubborn/exitcode"), "137\n");
    assert!(mount.read("cmd/stubborn/stdout").contains("got TERM"));
    assert!(wait_until(Duration::from_secs(5), || group_members(pid).is_empty()));
}

#[test]
fn rm_r_stops_a_running_command() {
    let mount = Mount::start();
    std::fs::write(mount.p("ctl/gone"), "sleep 300 & sleep 300").unwrap();
    let pid: i32 = mount.read("cmd/gone/pid").trim().parse().unwrap();
    mount.ok("rm -r \"$M/cmd/gone\"");
    assert!(!mount.p("cmd/gone").exists());
    assert!(
        wait_until(Duration::from_secs(10), || group_members(pid).is_empty()),
        "left: {:?}",
        group_members(pid)
    );
    // rmdir alone removes a stopped command too.
    mount.run("plain", "true");
    std::fs::remove_dir(mount.p("cmd/plain")).unwrap();
    assert!(!mount.p("cmd/plain").exists());
}

// Linux only: it watches the reader through /proc.
#[cfg(target_os = "linux")]
#[test]
fn many_commands_at_once() {
    use std::os::fd::AsRawFd;

    let mount = Mount::start();
    // Every command waits for a shared lock on a file the test holds exclusively, so
    // none can stop before the test lets them (a fixed sleep would only hope so).
    let gate_path = mount.dir.path().join("gate");
    let gate = std::fs::File::create(&gate_path).unwrap();
    // SAFETY: locking a descriptor we own.
    assert_eq!(unsafe { libc::flock(gate.as_raw_fd(), libc::LOCK_EX) }, 0);
    for i in 0..200 {
        std::fs::write(
            mount.p(&format!("ctl/c{i}")),
            format!("flock -s gate true; echo out{i}; echo err{i} >&2"),
        )
        .unwrap();
    }
    // 200 parked waits at once, each on its own thread inside read(2).
    let waiters: Vec<_> = (0..200)
        .map(|i| crate::common::parked_read(mount.p(&format!("cmd/c{i}/wait"))))
        .collect();
    // While they are parked, the mount still answers.
    let started = Instant::now();
    let listing = mount.ok("ls \"$M/cmd\" | wc -l; head -c 3 \"$M/index.md\"");
    assert_eq!(listing, "201\n---");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    // None has stopped: each still holds its wait.
    assert_eq!(mount.read("cmd/c199/status"), "running\n");
    drop(gate);
    for (i, waiter) in waiters.into_iter().enumerate() {
        let answer = waiter
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|e| panic!("c{i}: {e}"))
            .unwrap();
        assert_eq!(answer, b"completed\n", "c{i}");
    }
    for i in 0..200 {
        assert_eq!(mount.read(&format!("cmd/c{i}/stdout")), format!("out{i}\n"));
        assert_eq!(mount.read(&format!("cmd/c{i}/stderr")), format!("err{i}\n"));
    }
}

/// Commands decided by several writers at once all run, with their output: children
/// that open their stderr file through the mount before their exec (all but one readied
/// ahead) are served while other commands are written and started.
#[test]
fn commands_written_by_several_writers_at_once_all_run() {
    let mount = Mount::start();
    // Each writer is killed after two minutes, so that a mount that stopped serving
    // fails the test rather than hanging it.
    mount.ok(r#"pids=
        for w in 1 2 3 4 5 6; do
          timeout -s KILL 120 sh -c 'for n in 1 2 3 4 5 6 7 8; do
            echo "echo o$0.$n; echo e$0.$n >&2" > "$M/ctl/w$0-$n" || exit 1
          done' $w &
          pids="$pids $!"
        done
        for pid in $pids; do wait $pid || exit 1; done"#);
    for w in 1..=6 {
        for n in 1..=8 {
            let name = format!("w{w}-{n}");
            assert_eq!(
                mount.read(&format!("cmd/{name}/wait")),
                "completed\n",
                "{name}"
            );
            assert_eq!(
                mount.read(&format!("cmd/{name}/stdout")),
                format!("o{w}.{n}\n")
            );
            assert_eq!(
                mount.read(&format!("cmd/{name}/stderr")),
                format!("e{w}.{n}\n")
            );
        }
    }
}

/// Waits until `cmd/<name>/<file>` contains `needle`; returns what it holds then.
#[test]
fn kill_sends_a_signal_named_or_numbered_to_the_whole_command() {
    let mount = Mount::start();
    // By name, with or without SIG, and by number: the shell's trap runs.
    for (name, written, signal) in [
        ("int", "INT", "INT"),
        ("sigint", "SIGINT\n", "INT"),
        ("two", "2", "INT"),
    ] {
        std::fs::write(
            mount.p(&format!("ctl/{name}")),
            format!("trap 'echo got {signal}; exit 7' {signal}; echo ready; while :; do sleep 0.05; done"),
        )
        .unwrap();
        mount.holds(&format!("cmd/{name}/stdout"), "ready");
        std::fs::write(mount.p(&format!("cmd/{name}/kill")), written).unwrap();
        assert_eq!(mount.wait(name), "error\n", "{name}");
        assert_eq!(mount.read(&format!("cmd/{name}/exitcode")), "7\n", "{name}");
        assert_eq!(
            mount.read(&format!("cmd/{name}/stdout")),
            format!("ready\ngot {signal}\n")
        );
        // It handled the signal and chose its own exit: nobody killed it.
        let result: serde_json::Value =
            serde_json::from_str(&mount.read(&format!("cmd/{name}/result.json"))).unwrap();
        assert_eq!(result["killed"], false, "{name}");
        assert_eq!(result["reason"], serde_json::Value::Null, "{name}");
        assert!(!mount.p(&format!("cmd/{name}/reason")).exists());
    }
    // To the whole command: a child in the background gets it too. Each says when its
    // trap is set (the parent's `ready` can come before the child has its own).
    std::fs::write(
        mount.p("ctl/family"),
        "(trap 'echo child; exit 0' USR1; echo child-ready; while :; do sleep 0.05; done) &
         trap 'echo parent' USR1; echo ready; wait; wait",
    )
    .unwrap();
    assert!(wait_until(Duration::from_secs(20), || {
        let text = mount.read("cmd/family/stdout");
        text.lines().any(|l| l == "ready") && text.lines().any(|l| l == "child-ready")
    }));
    mount.ok("echo USR1 > $M/cmd/family/kill");
    assert_eq!(mount.wait("family"), "completed\n");
    let mut said: Vec<String> = mount
        .read("cmd/family/stdout")
        .lines()
        .map(String::from)
        .collect();
    said.sort();
    assert_eq!(said, ["child", "child-ready", "parent", "ready"]);
    // A signal with no trap ends it the default way; HUP is 128+1.
    std::fs::write(mount.p("ctl/hup"), "sleep 600; echo never").unwrap();
    mount.ok("cat $M/cmd/hup/pid >/dev/null; echo HUP > $M/cmd/hup/kill");
    assert_eq!(mount.wait("hup"), "error\n");
    assert_eq!(mount.read("cmd/hup/exitcode"), "129\n");
    // A signal it dies of is a kill, and `reason` names it.
    std::fs::write(mount.p("ctl/nine"), "sleep 600").unwrap();
    mount.ok("cat $M/cmd/nine/pid >/dev/null; echo KILL > $M/cmd/nine/kill");
    assert_eq!(mount.wait("nine"), "error\n");
    assert_eq!(mount.read("cmd/nine/exitcode"), "137\n");
    for (name, signal) in [("hup", "SIGHUP"), ("nine", "SIGKILL")] {
        let result: serde_json::Value =
            serde_json::from_str(&mount.read(&format!("cmd/{name}/result.json"))).unwrap();
        let said = format!("killed: it died of {signal}, written to its kill file");
        assert_eq!(result["killed"], true, "{name}");
        assert_eq!(result["timed_out"], false, "{name}");
        assert_eq!(result["reason"], said.as_str(), "{name}");
        assert_eq!(
            mount.read(&format!("cmd/{name}/reason")),
            format!("{said}\n")
        );
    }
}

/// A command whose shell traps the signals of the kill words below and goes on.
const LISTENER: &str =
    "for s in INT HUP QUIT WINCH USR1 USR2 ALRM TERM; do trap \"echo got $s\" $s; \
     done; echo ready; while :; do sleep 0.05; done";

/// Lines of `stdout` that say `got <signal>`.
fn got(mount: &Mount, name: &str, signal: &str) -> usize {
    let said = format!("got {signal}");
    mount
        .read(&format!("cmd/{name}/stdout"))
        .lines()
        .filter(|line| *line == said)
        .count()
}

/// Does `write` to the kill file of the LISTENER `ears`, `written` being what it
/// writes, and sees the trap of `signal` run once more while it goes on running.
fn hears(mount: &Mount, signal: &str, written: &str, write: impl FnOnce()) {
    let before = got(mount, "ears", signal);
    write();
    assert!(
        wait_until(Duration::from_secs(30), || got(mount, "ears", signal)
            > before),
        "{written:?} did not reach the trap of {signal}: {:?}",
        mount.read("cmd/ears/stdout")
    );
    assert_eq!(mount.read("cmd/ears/status"), "running\n", "{written:?}");
}

/// Signal names in any case, with or without SIG, and any signal number reach a
/// command that traps them, and it goes on running: `int` is Ctrl-C, not a stop.
#[test]
fn kill_words_in_any_case_and_any_number_send_that_signal_and_it_runs_on() {
    let mount = Mount::with_args(&["--kill-grace", "1s"]);
    std::fs::write(mount.p("ctl/ears"), LISTENER).unwrap();
    mount.holds("cmd/ears/stdout", "ready");
    let usr2 = libc::SIGUSR2.to_string();
    let alrm = libc::SIGALRM.to_string();
    for (written, signal) in [
        ("int\n", "INT"),
        ("Int\n", "INT"),
        ("  SigInt\r\n", "INT"),
        ("sighup\n", "HUP"),
        ("SigQuit\n", "QUIT"),
        ("WINCH\n", "WINCH"),
        ("-INT\n", "INT"),
        ("usr1\n", "USR1"),
        (&format!("{usr2}\n"), "USR2"),
        (&alrm, "ALRM"),
    ] {
        hears(&mount, signal, written, || {
            std::fs::write(mount.p("cmd/ears/kill"), written).unwrap()
        });
    }
    assert_eq!(got(&mount, "ears", "TERM"), 0, "nothing was a stop");
    mount.ok("echo stop > $M/cmd/ears/kill");
    assert_eq!(mount.wait("ears"), "error\n");
    assert_eq!(got(&mount, "ears", "TERM"), 1);
}

/// kill(1)'s option before a signal (`-s INT`, `--signal HUP`, `-n <number>`)
/// names it: the command's traps run and it goes on running, where a line taken for
/// a word that names no signal would have stopped it.
#[test]
fn kill_words_after_kill_s_send_that_signal_and_it_runs_on() {
    let mount = Mount::with_args(&["--kill-grace", "1s"]);
    std::fs::write(mount.p("ctl/ears"), LISTENER).unwrap();
    mount.holds("cmd/ears/stdout", "ready");
    let usr1 = libc::SIGUSR1;
    for (line, signal) in [
        ("-s INT", "INT"),
        ("--signal HUP", "HUP"),
        (&format!("-n {usr1}"), "USR1"),
    ] {
        hears(&mount, signal, line, || {
            mount.ok(&format!("printf -- '{line}\\n' > $M/cmd/ears/kill"));
        });
    }
    assert_eq!(got(&mount, "ears", "TERM"), 0, "nothing was a stop");
    // A line whose words still name no signal stops it, and says which.
    mount.ok("printf -- '-s frob\\n' > $M/cmd/ears/kill");
    assert_eq!(mount.wait("ears"), "error\n");
    assert_eq!(got(&mount, "ears", "TERM"), 1);
    assert_eq!(
        mount.read("cmd/ears/reason"),
        "killed: a write to its kill file ('-s frob' is no signal name) stopped it\n"
    );
}

/// A real-time signal by number reaches the command (Linux has them).
#[cfg(target_os = "linux")]
#[test]
fn a_real_time_signal_by_number_reaches_the_command() {
    let mount = Mount::start();
    let rt = libc::SIGRTMIN() + 2;
    std::fs::write(
        mount.p("ctl/rt"),
        format!("trap 'echo got rt; exit 5' {rt}; echo ready; while :; do sleep 0.05; done"),
    )
    .unwrap();
    mount.holds("cmd/rt/stdout", "ready");
    std::fs::write(mount.p("cmd/rt/kill"), format!("{rt}\n")).unwrap();
    assert_eq!(mount.wait("rt"), "error\n");
    assert_eq!(mount.read("cmd/rt/exitcode"), "5\n");
    assert_eq!(mount.read("cmd/rt/stdout"), "ready\ngot rt\n");
}

/// A blank line between two signals adds no stop, whether the lines come in one
/// write (dash's printf) or one write each (bash's printf, line-buffered).
#[test]
fn a_blank_line_between_signals_is_no_stop() {
    let mount = Mount::with_args(&["--kill-grace", "1s"]);
    std::fs::write(mount.p("ctl/ears"), LISTENER).unwrap();
    mount.holds("cmd/ears/stdout", "ready");
    for (round, shell) in ["dash", "bash"].into_iter().enumerate() {
        mount.ok(&format!(
            "{shell} -c \"printf 'INT\\n\\nHUP\\n\\n' > $M/cmd/ears/kill\""
        ));
        assert!(
            wait_until(Duration::from_secs(30), || got(&mount, "ears", "INT")
                > round
                && got(&mount, "ears", "HUP") > round),
            "{shell}: {:?}",
            mount.read("cmd/ears/stdout")
        );
        // A stop would have sent TERM before the write returned: a signal written
        // after it comes back alone.
        mount.ok("echo USR2 > $M/cmd/ears/kill");
        assert!(wait_until(Duration::from_secs(30), || got(
            &mount, "ears", "USR2"
        ) > round));
        assert_eq!(
            got(&mount, "ears", "TERM"),
            0,
            "{shell}: a blank line stopped it"
        );
        assert_eq!(mount.read("cmd/ears/status"), "running\n", "{shell}");
    }
    // A write of nothing but a blank line still stops it.
    mount.ok("echo > $M/cmd/ears/kill");
    assert_eq!(mount.wait("ears"), "error\n");
    assert_eq!(got(&mount, "ears", "TERM"), 1);
    assert_eq!(
        mount.read("cmd/ears/reason"),
        "killed: a write to its kill file stopped it\n"
    );
}

/// A word that names no signal stops the command as `stop` does (TERM, then KILL
/// after the grace), and the log and `reason` name the word.
#[test]
fn a_word_that_names_no_signal_stops_it_and_says_which_word() {
    let mount = Mount::with_args(&["--kill-grace", "1s"]);
    std::fs::write(mount.p("ctl/ears"), LISTENER).unwrap();
    mount.holds("cmd/ears/stdout", "ready");
    mount.ok("echo frob > $M/cmd/ears/kill");
    assert_eq!(mount.wait("ears"), "error\n");
    // Its TERM trap runs; the KILL after the grace ends it.
    assert_eq!(got(&mount, "ears", "TERM"), 1);
    assert_eq!(mount.read("cmd/ears/exitcode"), "137\n");
    let said = "killed: a write to its kill file ('frob' is no signal name) stopped it";
    assert_eq!(mount.read("cmd/ears/reason"), format!("{said}\n"));
    let result: serde_json::Value =
        serde_json::from_str(&mount.read("cmd/ears/result.json")).unwrap();
    assert_eq!(result["killed"], true);
    assert_eq!(result["reason"], said);
    mount.wait_for_log("cmd/ears/kill: 'frob' is no signal name");
}

/// The signal a command dies of names its end even when more signals were written
/// after it, in the same write or the next, before its death was seen.
#[test]
fn a_write_to_kill_naming_too_many_signals_is_refused_and_sends_none() {
    let mount = Mount::start();
    std::fs::write(
        mount.p("ctl/many"),
        "trap 'echo got TERM' TERM; echo ready; while :; do sleep 0.05; done",
    )
    .unwrap();
    mount.holds("cmd/many/stdout", "ready");
    let written = std::fs::write(mount.p("cmd/many/kill"), "TERM\n".repeat(100_000));
    let error = written.expect_err("100,000 signals in one write are refused");
    assert_eq!(error.raw_os_error(), Some(libc::EINVAL), "{error}");
    mount.wait_for_log("cmd/many/kill: a write names at most 16 signals");
    // None of them was sent: its trap never ran, and it still runs.
    assert_eq!(mount.read("cmd/many/status"), "running\n");
    std::fs::write(mount.p("cmd/many/kill"), "KILL\n").unwrap();
    assert_eq!(mount.wait("many"), "error\n");
    assert_eq!(mount.read("cmd/many/exitcode"), "137\n");
    assert_eq!(mount.read("cmd/many/stdout"), "ready\n");
}

#[test]
fn a_later_signal_does_not_hide_the_one_a_command_died_of() {
    let mount = Mount::start();
    std::fs::write(mount.p("ctl/both"), "exec sleep 300").unwrap();
    mount.ok("cat $M/cmd/both/pid >/dev/null; printf 'INT\\nKILL\\n' > $M/cmd/both/kill");
    std::fs::write(mount.p("ctl/apart"), "exec sleep 300").unwrap();
    // Two writes on one open handle: `kill` goes once the command has stopped, but a
    // handle open on it takes the second write whenever it comes.
    mount.ok(
        "cat $M/cmd/apart/pid >/dev/null; exec 3> $M/cmd/apart/kill; echo USR1 >&3; \
         echo TERM >&3; exec 3>&-",
    );
    for name in ["both", "apart"] {
        assert_eq!(mount.wait(name), "error\n", "{name}");
        let code: i32 = mount
            .read(&format!("cmd/{name}/exitcode"))
            .trim()
            .parse()
            .unwrap();
        let signal = match code {
            130 => "SIGINT",
            137 => "SIGKILL",
            138 => "SIGUSR1",
            143 => "SIGTERM",
            other => panic!("{name} ended with {other}"),
        };
        let result: serde_json::Value =
            serde_json::from_str(&mount.read(&format!("cmd/{name}/result.json"))).unwrap();
        let said = format!("killed: it died of {signal}, written to its kill file");
        assert_eq!(result["killed"], true, "{name}: {result}");
        assert_eq!(result["reason"], said.as_str(), "{name}");
        assert_eq!(
            mount.read(&format!("cmd/{name}/reason")),
            format!("{said}\n")
        );
    }
    // USR1 ends `sleep` at once; the TERM after it cannot be what it died of.
    assert_eq!(mount.read("cmd/apart/exitcode"), "138\n");
}

/// A signal written the moment the command exists reaches it: the child is in its own
/// group before `cmd/<name>` can be looked up. The program is started with `exec`, as
/// SKILL.md's signal example does: a shell that forks it (dash does, and catches INT
/// until its child has exec'd) can lose a signal that arrives in between.
#[test]
fn a_signal_written_at_once_reaches_a_command_that_execs() {
    let mount = Mount::start();
    let names: Vec<String> = (0..20).map(|i| format!("nap{i}")).collect();
    for name in &names {
        mount.ok(&format!(
            "echo 'exec sleep 300' > $M/ctl/{name}; echo INT > $M/cmd/{name}/kill"
        ));
    }
    for name in &names {
        assert_eq!(mount.wait(name), "error\n", "{name}");
        assert_eq!(
            mount.read(&format!("cmd/{name}/exitcode")),
            "130\n",
            "{name}"
        );
    }
}

#[test]
fn stop_pauses_until_cont_and_wait_waits_through_it() {
    let mount = Mount::with_args(&["--wait-timeout", "1s"]);
    std::fs::write(
        mount.p("ctl/ticker"),
        "i=0; while :; do i=$((i+1)); echo $i; sleep 0.05; done",
    )
    .unwrap();
    mount.holds("cmd/ticker/stdout", "3\n");
    mount.ok("echo STOP > $M/cmd/ticker/kill");
    assert_eq!(mount.read("cmd/ticker/status"), "paused\n");
    // Paused: wait times out with `paused`, and the output stops growing. A line
    // written just before the STOP may still be on its way in during the first wait;
    // nothing comes during the second.
    assert_eq!(mount.read("cmd/ticker/wait"), "paused\n");
    let before = mount.read("cmd/ticker/stdout");
    assert_eq!(mount.read("cmd/ticker/wait"), "paused\n");
    assert_eq!(mount.read("cmd/ticker/stdout"), before);
    assert_eq!(mount.read("cmd/ticker/status"), "paused\n");
    mount.ok("echo CONT > $M/cmd/ticker/kill");
    assert_eq!(mount.read("cmd/ticker/status"), "running\n");
    assert!(wait_until(Duration::from_secs(20), || mount
        .read("cmd/ticker/stdout")
        .len()
        > before.len()));
    // Stopping a paused command continues it after the TERM, so TERM (not the KILL
    // after the grace) ends it; `: > kill`, a close without a write, stops it too.
    mount.ok("echo STOP > $M/cmd/ticker/kill");
    assert_eq!(mount.read("cmd/ticker/status"), "paused\n");
    mount.ok(": > $M/cmd/ticker/kill");
    assert_eq!(mount.wait("ticker"), "error\n");
    assert_eq!(mount.read("cmd/ticker/exitcode"), "143\n");
    assert!(mount.read("cmd/ticker/reason").contains("kill"));
    // A kill file written after the command stopped is harmless.
    assert!(mount
        .sh("echo INT > $M/cmd/ticker/kill")
        .status
        .code()
        .is_some());
    assert_eq!(mount.read("cmd/ticker/status"), "error\n");
}

/// Starts `slow`, a command that reads its stdin (`wc -c`) once the returned file
/// exists, and writes the quarter megabyte [`dd_into_stdin`] copies (of `x`: a shell's
/// input must hold no NUL byte).
#[cfg(target_os = "linux")]
fn start_gated(mount: &Mount) -> std::path::PathBuf {
    std::fs::write(mount.dir.path().join("xs"), vec![b'x'; 256 * 1024]).unwrap();
    let gate = mount.dir.path().join("go");
    std::fs::write(
        mount.p("ctl/slow"),
        format!("#terminalfs stdin\n{}; wc -c", until_exists(&gate)),
    )
    .unwrap();
    assert!(wait_until(PATIENCE, || mount.p("cmd/slow/stdin").exists()));
    gate
}

/// `dd` of a quarter megabyte into `cmd/<name>/stdin`, in one write, watched by
/// `reaper`; its stderr is kept.
#[cfg(target_os = "linux")]
fn dd_into_stdin(mount: &Mount, name: &str, reaper: &Reaper) -> std::process::Child {
    let source = mount.dir.path().join("xs");
    let child = std::process::Command::new("dd")
        .arg(format!("if={}", source.display()))
        .arg("bs=256K")
        .arg("count=1")
        .arg(format!(
            "of={}",
            mount.p(&format!("cmd/{name}/stdin")).display()
        ))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("dd starts");
    reaper.watch(child.id() as i32);
    child
}

/// What a `dd` that ended said, and how many bytes it reports it wrote.
#[cfg(target_os = "linux")]
fn dd_result(child: std::process::Child) -> (String, u64) {
    let out = child.wait_with_output().expect("dd is waited for");
    assert!(
        !out.status.success(),
        "dd wrote a megabyte into a full pipe"
    );
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    let copied = said
        .lines()
        .find_map(|line| line.split_once(" byte")?.0.parse().ok())
        .unwrap_or_else(|| panic!("no byte count in: {said}"));
    (said, copied)
}

/// Waits (with a deadline) until `child` has exited; whether it has.
#[cfg(target_os = "linux")]
fn exits_within(child: &mut std::process::Child, timeout: Duration) -> bool {
    wait_until(timeout, || child.try_wait().expect("try_wait").is_some())
}

/// A write waiting on a full stdin holds the file's lock in the kernel, which `rm` of it
/// needs while it holds the directory's (and every lookup in the directory needs that
/// one). The driver answers such a write after a short hold, in part, so `rm` and the
/// lookups behind it go through long before `--wait-timeout`; the writer then finds
/// the input closed (EPIPE), and every byte it was told went in reaches the command.
#[cfg(target_os = "linux")]
#[test]
fn rm_of_stdin_and_lookups_go_through_while_a_writer_waits_on_a_full_pipe() {
    let mount = Mount::with_args(&["--wait-timeout", "60s"]);
    let reaper = Reaper::default();
    let gate = start_gated(&mount);
    let mut writer = dd_into_stdin(&mount, "slow", &reaper);
    assert!(wait_in_write(writer.id() as i32), "dd never wrote");
    // Half the wait: the writer would still hold the lock if it were kept waiting.
    let half = Duration::from_secs(30);
    let mut rm = std::process::Command::new("rm")
        .arg(mount.p("cmd/slow/stdin"))
        .spawn()
        .unwrap();
    reaper.watch(rm.id() as i32);
    let mut cat = std::process::Command::new("cat")
        .arg(mount.p("cmd/slow/status"))
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    reaper.watch(cat.id() as i32);
    assert!(exits_within(&mut rm, half), "rm waited for the writer");
    assert!(
        exits_within(&mut cat, half),
        "a lookup waited for the writer"
    );
    assert!(rm.wait().unwrap().success());
    assert!(cat.wait().unwrap().success());
    assert!(!mount.p("cmd/slow/stdin").exists(), "stdin was not removed");
    assert!(exits_within(&mut writer, half), "the writer still waits");
    let (said, copied) = dd_result(writer);
    assert!(said.contains("Broken pipe"), "{said}");
    std::fs::write(&gate, "").unwrap();
    assert_eq!(mount.wait("slow"), "completed\n");
    assert_eq!(mount.read("cmd/slow/stdout").trim(), copied.to_string());
}

/// Two writers on an input the command does not read: each is answered with EAGAIN
/// once the command has taken nothing for `--wait-timeout` (the second does not wait
/// its own timeout after the first's), and what they were told went in arrives whole.
#[cfg(target_os = "linux")]
#[test]
fn writers_on_a_stdin_nobody_reads_get_eagain_and_lose_nothing() {
    let mount = Mount::with_args(&["--wait-timeout", "3s"]);
    let reaper = Reaper::default();
    let gate = start_gated(&mount);
    let first = dd_into_stdin(&mount, "slow", &reaper);
    let second = dd_into_stdin(&mount, "slow", &reaper);
    let mut copied = 0;
    for writer in [first, second] {
        let (said, taken) = dd_result(writer);
        assert!(said.contains("Resource temporarily unavailable"), "{said}");
        copied += taken;
    }
    assert!(
        mount.log().contains("has taken no input for 3s"),
        "{}",
        mount.log()
    );
    std::fs::write(&gate, "").unwrap();
    mount.ok("rm $M/cmd/slow/stdin");
    assert_eq!(mount.wait("slow"), "completed\n");
    assert_eq!(mount.read("cmd/slow/stdout").trim(), copied.to_string());
}

#[test]
fn a_command_gets_the_drivers_environment_plus_its_name_and_nothing_else() {
    let mount = Mount::with_launcher(crate::common::Options::default(), &|driver| {
        driver
            .env("TFS_FROM_THE_DRIVER", "here")
            .env_remove("PYTHONUNBUFFERED")
            .env_remove("PYTHONDONTWRITEBYTECODE");
    });
    assert_eq!(mount.run("env", "env"), "completed\n");
    let env = mount.read("cmd/env/stdout");
    let has = |line: &str| env.lines().any(|l| l == line);
    assert!(has("TFS_FROM_THE_DRIVER=here"), "{env}");
    assert!(has("TERMINALFS_NAME=env"), "{env}");
    assert!(
        !env.lines().any(|l| l.starts_with("PYTHON")),
        "nothing is added but the name: {env}"
    );
}

#[test]
fn wait_answers_paused_when_its_wait_runs_out_on_a_paused_command() {
    let patience = Duration::from_secs(30);
    let mount = Mount::with_args(&["--wait-timeout", "1"]);
    let status = |word: &str| {
        let want = format!("{word}\n");
        wait_until(patience, || mount.read("cmd/nap/status") == want)
    };
    std::fs::write(mount.p("ctl/nap"), "exec sleep 300").unwrap();
    assert!(status("running"));
    mount.ok("echo STOP > $M/cmd/nap/kill");
    assert!(status("paused"));
    // Only when the wait runs out, never at once: a pause is no end.
    let asked = Instant::now();
    assert_eq!(mount.read("cmd/nap/wait"), "paused\n");
    assert!(
        asked.elapsed() >= Duration::from_millis(900),
        "{:?}",
        asked.elapsed()
    );
    mount.ok("echo CONT > $M/cmd/nap/kill");
    assert!(status("running"));
    assert_eq!(mount.read("cmd/nap/wait"), "running\n");
    // The skill's loop stops on it rather than spinning.
    mount.ok("echo STOP > $M/cmd/nap/kill");
    assert!(status("paused"));
    let out =
        mount.ok("while w=$(cat $M/cmd/nap/wait) && [ \"$w\" = running ]; do :; done; echo \"$w\"");
    assert_eq!(out, "paused\n");
    // Stopping a paused command ends it.
    mount.ok("echo stop > $M/cmd/nap/kill");
    assert_eq!(mount.wait("nap"), "error\n");
}

/// Makes the launched driver the child of a stand-in for a reaping init: the process
/// the test starts forks, the child goes on to become the driver, and the parent,
/// made a child subreaper, reaps everything that comes to it until nothing is left,
/// then exits with the driver's status. Where the machine's init reaps orphans (as
/// systemd and a shell's job control do), this is what happens to a crashed driver's
/// processes anyway; a container's init may not.
#[cfg(target_os = "linux")]
fn under_a_subreaper(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the hook runs in the forked child before its exec and makes only
    // async-signal-safe calls (fork, prctl, close_range, waitpid, _exit).
    unsafe {
        command.pre_exec(|| {
            let driver = libc::fork();
            if driver < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if driver == 0 {
                return Ok(());
            }
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1);
            // Only the driver's exec may end the launcher's report pipe.
            libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32);
            let mut code = 1;
            loop {
                let mut status = 0;
                let pid = libc::waitpid(-1, &mut status, 0);
                if pid == driver {
                    code = if libc::WIFEXITED(status) {
                        libc::WEXITSTATUS(status)
                    } else {
                        128 + libc::WTERMSIG(status)
                    };
                }
                if pid < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                    libc::_exit(code);
                }
            }
        });
    }
}

/// A driver killed with SIGKILL leaves nothing running: within seconds its command's
/// shell, a background child, a child that left the session with `setsid` and the
/// spawner are all gone (reaped, not zombies), and a restart brings the command back
/// as an error the driver stopped.
#[cfg(target_os = "linux")]
#[test]
fn a_driver_killed_with_sigkill_leaves_nothing_running() {
    use crate::common::{children_of, proc_stat, Options};
    let reaper = Reaper::default();
    let files = tempfile::tempdir().unwrap();
    let mut mount = Mount::with_launcher(Options::default(), &under_a_subreaper);
    let dir = files.path().display();
    std::fs::write(
        mount.p("ctl/loop"),
        format!(
            "sleep 1000 & echo $! > {dir}/bg.tmp; mv {dir}/bg.tmp {dir}/bg; \
             setsid sh -c 'echo $$ > {dir}/sid.tmp; mv {dir}/sid.tmp {dir}/sid; exec sleep 1000' & \
             while :; do echo o; sleep .2; done"
        ),
    )
    .unwrap();
    let pid_in = |file: &str| -> i32 {
        let path = files.path().join(file);
        assert!(wait_until(PATIENCE, || path.exists()), "{file} is written");
        std::fs::read_to_string(&path)
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    let (background, escaped) = (pid_in("bg"), pid_in("sid"));
    assert!(wait_until(PATIENCE, || mount
        .read("cmd/loop/stdout")
        .starts_with("o\n")));
    let result: serde_json::Value =
        serde_json::from_str(&mount.read("cmd/loop/result.json")).unwrap();
    let shell = result["pid"].as_i64().unwrap() as i32;
    let stand_in = mount.pid() as i32;
    let driver = children_of(stand_in)
        .first()
        .expect("the driver runs under the stand-in")
        .0;
    let is_spawner = |pid: i32| {
        std::fs::read(format!("/proc/{pid}/cmdline"))
            .is_ok_and(|line| line.windows(18).any(|w| w == b"--internal-spawner"))
    };
    let spawner = children_of(driver)
        .into_iter()
        .map(|(pid, _)| pid)
        .find(|pid| is_spawner(*pid))
        .expect("the driver has a spawner");
    let everyone = [driver, spawner, shell, background, escaped];
    for pid in everyone {
        reaper.watch(pid);
    }
    assert_ne!(
        proc_stat(escaped).unwrap().session,
        shell,
        "the setsid child left the command's session"
    );
    // SAFETY: killing the driver this test started.
    unsafe {
        libc::kill(driver, libc::SIGKILL);
    }
    let gone = wait_until(PATIENCE, || {
        everyone.iter().all(|pid| proc_stat(*pid).is_none())
    });
    let left: Vec<_> = everyone
        .iter()
        .filter_map(|pid| proc_stat(*pid).map(|stat| (*pid, stat.state)))
        .collect();
    assert!(gone, "still there (pid, state): {left:?} of {everyone:?}");
    // With nothing left to reap, the stand-in ends with the driver's status.
    assert!(mount.wait_exit(PATIENCE).is_some());
    mount.spawn(&[]);
    assert_eq!(mount.read("cmd/loop/status"), "error\n");
    assert_eq!(
        mount.read("cmd/loop/reason"),
        "the driver stopped while it ran\n"
    );
}
