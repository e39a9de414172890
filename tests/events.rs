//! `/events` on a real mount: the listing at open, one line per change, end-of-file
//! after --wait-timeout of silence or of streaming, and the waiting idiom SKILL.md
//! teaches.

use crate::common::{Mount, Options};
use std::io::{BufRead, BufReader};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Reads `/events` line by line on a thread, for as long as the test lasts: past an
/// end-of-file it reads the same handle again, as `tail -f` does.
fn reader(mount: &Mount) -> mpsc::Receiver<String> {
    let file = std::fs::File::open(mount.p("events")).expect("events opens");
    let (sender, lines) = mpsc::channel();
    std::thread::spawn(move || {
        let mut file = BufReader::new(file);
        let mut line = String::new();
        loop {
            line.clear();
            match file.read_line(&mut line) {
                Ok(0) => continue,
                Ok(_) => {
                    let line = line.trim_end_matches('\n').to_string();
                    if sender.send(line).is_err() {
                        break;
                    }
                }
                Err(_) => break,
            }
        }
    });
    lines
}

/// The next line, which must be `<RFC 3339 time> <rest>`; returns its time.
fn next(lines: &mpsc::Receiver<String>, rest: &str) -> String {
    let line = lines
        .recv_timeout(Duration::from_secs(20))
        .unwrap_or_else(|_| panic!("no event came; wanted {rest:?}"));
    let (time, said) = line.split_once(' ').expect("a time, then the event");
    assert!(
        time.len() == 24 && time.starts_with("20") && time.ends_with('Z'),
        "{line}"
    );
    assert_eq!(said, rest, "{line}");
    time.to_string()
}

#[test]
fn events_list_every_command_then_stream_each_change() {
    let mount = Mount::with(Options {
        args: vec!["--wait-timeout", "20s"],
        settings: r#"{"permissions": {"deny": ["Bash(sudo:*)"]}}"#,
    });
    assert_eq!(mount.run("done", "exit 3"), "error\n");
    let lines = reader(&mount);
    next(&lines, "done error 3");
    std::fs::write(mount.p("ctl/t"), "sleep 30").unwrap();
    next(&lines, "t running");
    mount.ok("echo STOP > $M/cmd/t/kill");
    let paused = next(&lines, "t paused");
    mount.ok("echo CONT > $M/cmd/t/kill");
    // A resumption is dated when it happened, not when the command first started.
    let resumed = next(&lines, "t running");
    assert!(
        resumed >= paused,
        "resumed at {resumed}, paused at {paused}"
    );
    mount.ok("echo stop > $M/cmd/t/kill");
    next(&lines, "t error 143");
    mount.ok("rm -r $M/cmd/t");
    next(&lines, "t removed");
    assert!(!mount.sh("echo 'sudo id' > $M/ctl/s").status.success());
    next(&lines, "s denied");
    mount.run("ok", "true");
    // Started and stopped between two looks, it is told as started, then stopped.
    next(&lines, "ok running");
    next(&lines, "ok completed 0");
    // A new open lists the state of every command now, in the order they came to be.
    let again = reader(&mount);
    next(&again, "done error 3");
    next(&again, "s denied");
    next(&again, "ok completed 0");
}

#[test]
fn a_paused_command_continued_by_its_time_limit_shows_at_once() {
    // A long grace: without news of the time limit, nothing would show before the KILL.
    let mount = Mount::with_args(&["--wait-timeout", "20s", "--kill-grace", "60s"]);
    let lines = reader(&mount);
    std::fs::write(
        mount.p("ctl/t"),
        "#terminalfs timeout=8s\ntrap '' TERM; echo ready; while :; do sleep 0.1; done",
    )
    .unwrap();
    next(&lines, "t running");
    // Paused before its trap is set, the shell would die of the TERM it is to ignore.
    assert!(crate::common::wait_until(Duration::from_secs(7), || mount
        .read("cmd/t/stdout")
        == "ready\n"));
    mount.ok("echo STOP > $M/cmd/t/kill");
    next(&lines, "t paused");
    // The time limit continues it to hear its TERM, which it ignores.
    next(&lines, "t running");
    mount.ok("echo KILL > $M/cmd/t/kill");
    next(&lines, "t error 137");
}

#[test]
fn the_skill_idiom_waits_for_the_first_of_several_past_the_wait_timeout() {
    let mount = Mount::with_args(&["--wait-timeout", "1s"]);
    let started = Instant::now();
    // Each grep ends at a second of silence; the loop opens events again until the
    // first of a, b and c has stopped (b, after about 3 s).
    let out = mount.ok("echo 'sleep 60' > $M/ctl/a
         echo 'sleep 3; exit 2' > $M/ctl/b
         echo 'sleep 60' > $M/ctl/c
         until grep -m1 -E '^[^ ]+ (a|b|c) (completed|error)' $M/events; do :; done");
    let took = started.elapsed();
    assert!(
        out.ends_with(" b error 2\n") && out.lines().count() == 1,
        "{out}"
    );
    assert!(took >= Duration::from_millis(2500), "{took:?}");
    // A plain read ends after a second of silence, having listed what exists.
    let started = Instant::now();
    let listing = mount.read("events");
    assert!(started.elapsed() >= Duration::from_millis(900));
    let words: Vec<&str> = listing
        .lines()
        .map(|line| line.split_once(' ').unwrap().1)
        .collect();
    assert_eq!(words, ["a running", "c running", "b error 2"], "{listing}");
    mount.ok("echo stop > $M/cmd/a/kill; echo stop > $M/cmd/c/kill");
}

#[test]
fn a_walk_of_a_busy_mount_ends_and_a_handle_read_past_its_end_goes_on() {
    let mount = Mount::with_args(&["--wait-timeout", "2s"]);
    // A command comes and goes every fifth of a second for up to 90 s, so the mount
    // is never silent for long while the walk runs.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let busy = {
        let (stop, ctl) = (stop.clone(), mount.p("ctl"));
        std::thread::spawn(move || {
            let started = Instant::now();
            let mut i = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst)
                && started.elapsed() < Duration::from_secs(90)
            {
                std::fs::write(ctl.join(format!("busy{i}")), "true").unwrap();
                i += 1;
                std::thread::sleep(Duration::from_millis(200));
            }
            started.elapsed()
        })
    };
    // grep reads every file to its end, events among them. No match is exit code 1;
    // 2 when a file went between the listing and its open (a command's `pid` once it
    // stopped), or could not be read (a running command's `kill`).
    let walk = mount.sh("timeout 300 grep -r -s -l zzz-not-there $M");
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let busy_for = busy.join().unwrap();
    assert!(matches!(walk.status.code(), Some(1 | 2)), "{walk:?}");
    assert!(
        busy_for < Duration::from_secs(90),
        "the walk outlasted 90 s of commands coming and going"
    );
    // One handle read to its end, then again after a command ran: the later read
    // goes on with the stream.
    let mut events = std::fs::File::open(mount.p("events")).unwrap();
    let mut seen = String::new();
    std::io::Read::read_to_string(&mut events, &mut seen).unwrap();
    assert!(seen.contains(" busy0 completed 0\n"), "{seen}");
    assert_eq!(mount.run("late", "true"), "completed\n");
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut later = String::new();
    while !later.contains(" late completed 0\n") {
        assert!(Instant::now() < deadline, "{later}");
        std::io::Read::read_to_string(&mut events, &mut later).unwrap();
    }
    assert!(!later.contains(" busy0 "), "{later}");
}

/// Kills the `tail` it holds when the test ends, failed or not.
struct Tail(std::process::Child);

impl Drop for Tail {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Skips lines until one is `<time> <rest>`.
fn until(lines: &mpsc::Receiver<String>, rest: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = lines
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("no event came; wanted {rest:?}"));
        if line.split_once(' ').map(|(_, said)| said) == Some(rest) {
            return;
        }
    }
}

#[test]
fn tail_f_goes_on_past_every_end_of_the_stream() {
    use std::process::{Command, Stdio};
    let mount = Mount::with_args(&["--wait-timeout", "2s"]);
    assert_eq!(mount.run("first", "true"), "completed\n");
    let mut tail = Tail(
        Command::new("tail")
            .args(["-f", "-s", "0.2"])
            .arg(mount.p("events"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("tail runs"),
    );
    let (sender, lines) = mpsc::channel();
    let stdout = tail.0.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    until(&lines, "first completed 0");
    // A command that runs 5 s: its end comes after two ends of the stream.
    std::fs::write(mount.p("ctl/slow"), "sleep 5").unwrap();
    until(&lines, "slow running");
    until(&lines, "slow completed 0");
    std::fs::write(mount.p("ctl/after"), "true").unwrap();
    until(&lines, "after completed 0");
    // Others see a size of 0, as before.
    assert_eq!(std::fs::metadata(mount.p("events")).unwrap().len(), 0);
    drop(lines);
    let _ = tail.0.kill();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut tail.0.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(!stderr.contains("truncated"), "{stderr}");
}

/// A stop or a continue made outside the `kill` file (a signal from elsewhere, a
/// command that stops itself) shows in `status` and `/events` as well.
#[test]
fn stops_and_continues_from_outside_the_kill_file_show() {
    // The feed must not end while the test runs (it ends --wait-timeout after it
    // began, and a read after that begins with a fresh list, which tells a command
    // already paused as paused alone): on a loaded machine the steps below can take
    // longer than 20 s.
    let mount = Mount::with_args(&["--wait-timeout", "300s"]);
    let lines = reader(&mount);
    let signal = |pid: i32, signal: i32| {
        // SAFETY: a signal to the shell of a command this test started.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
    };
    std::fs::write(mount.p("ctl/t"), "exec sleep 300").unwrap();
    next(&lines, "t running");
    let pid: i32 = mount.read("cmd/t/pid").trim().parse().unwrap();
    signal(pid, libc::SIGSTOP);
    next(&lines, "t paused");
    assert_eq!(mount.read("cmd/t/status"), "paused\n");
    signal(pid, libc::SIGCONT);
    next(&lines, "t running");
    assert_eq!(mount.read("cmd/t/status"), "running\n");
    // Paused through `kill`, continued from outside.
    mount.ok("echo STOP > $M/cmd/t/kill");
    next(&lines, "t paused");
    signal(pid, libc::SIGCONT);
    next(&lines, "t running");
    assert_eq!(mount.read("cmd/t/status"), "running\n");
    mount.ok("echo KILL > $M/cmd/t/kill");
    next(&lines, "t error 137");
    // A command that stops itself; a CONT through `kill` lets it finish.
    std::fs::write(mount.p("ctl/own"), "echo before; kill -STOP $$; echo after").unwrap();
    next(&lines, "own running");
    next(&lines, "own paused");
    assert_eq!(mount.read("cmd/own/status"), "paused\n");
    mount.ok("echo CONT > $M/cmd/own/kill");
    assert_eq!(mount.wait("own"), "completed\n");
    assert_eq!(mount.read("cmd/own/stdout"), "before\nafter\n");
}

/// A handle opened before commands come and go, read only once they are over, is
/// told every change: each start before its end, a pause and a resume made within a
/// few milliseconds of each other.
#[test]
fn a_handle_read_late_is_told_every_change_in_order() {
    let mount = Mount::with_args(&["--wait-timeout", "20s"]);
    let mut events = std::fs::File::open(mount.p("events")).expect("events opens");
    mount.ok("for i in $(seq 1 20); do\n\
           echo 'echo x' > $M/ctl/sq$i; cat $M/cmd/sq$i/wait >/dev/null\n\
         done\n\
         echo 'sleep 300' > $M/ctl/pr; cat $M/cmd/pr/pid >/dev/null\n\
         echo STOP > $M/cmd/pr/kill; echo CONT > $M/cmd/pr/kill\n\
         echo stop > $M/cmd/pr/kill; cat $M/cmd/pr/wait >/dev/null");
    // Everything is over: read what the handle was told (a read past it would wait
    // for the --wait-timeout, then end).
    let mut told = String::new();
    let mut buffer = vec![0; 65536];
    while !told.ends_with(" pr error 143\n") {
        let n = std::io::Read::read(&mut events, &mut buffer).expect("events reads");
        assert!(n > 0, "the stream ended: {told}");
        told.push_str(std::str::from_utf8(&buffer[..n]).unwrap());
    }
    let said = |name: &str| -> Vec<String> {
        let mut last = "";
        let mut words = Vec::new();
        for line in told.lines() {
            let (time, rest) = line.split_once(' ').unwrap();
            if let Some(word) = rest.strip_prefix(&format!("{name} ")) {
                assert!(last <= time, "{name} went back in time: {told}");
                last = time;
                words.push(word.to_string());
            }
        }
        words
    };
    for i in 1..=20 {
        assert_eq!(
            said(&format!("sq{i}")),
            ["running", "completed 0"],
            "{told}"
        );
    }
    assert_eq!(
        said("pr"),
        ["running", "paused", "running", "error 143"],
        "{told}"
    );
}
