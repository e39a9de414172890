//! Reading output and waiting (SPEC 5 as far as the core goes).

use crate::common::{wait_until, Mount, Tail};
use std::io::Read;
use std::time::{Duration, Instant};

#[test]
fn output_grows_while_the_command_runs() {
    let mount = Mount::start();
    std::fs::write(
        mount.p("ctl/ticks"),
        "i=1; while [ $i -le 40 ]; do echo \"line $i\"; i=$((i+1)); sleep 0.05; done; echo done >&2; sleep 1",
    )
    .unwrap();
    // Mid-run, cat shows what has arrived.
    assert!(wait_until(Duration::from_secs(10), || mount
        .read("cmd/ticks/stdout")
        .contains("line 3\n")));
    assert_eq!(mount.read("cmd/ticks/status"), "running\n");
    let partial = mount.read("cmd/ticks/stdout");
    assert!(partial.starts_with("line 1\nline 2\nline 3\n"), "{partial}");
    assert!(wait_until(Duration::from_secs(10), || mount
        .read("cmd/ticks/stderr")
        == "done\n"));
    // Still running (sleep 1), all of stdout there: the tools agree.
    let all: String = (1..=40).map(|i| format!("line {i}\n")).collect();
    assert_eq!(mount.read("cmd/ticks/stdout"), all);
    let out = mount.ok(
        "f=\"$M/cmd/ticks/stdout\"; tail -n 2 \"$f\"; tail -c 8 \"$f\"; wc -c < \"$f\"; wc -l \"$f\" | cut -d' ' -f1; grep -c 'line 1' \"$f\"",
    );
    assert_eq!(
        out,
        format!("line 39\nline 40\nline 40\n{}\n40\n11\n", all.len())
    );
    assert_eq!(mount.read("cmd/ticks/output"), format!("{all}done\n"));
}

#[test]
fn tail_f_on_an_open_handle_sees_every_line() {
    let mount = Mount::start();
    std::fs::write(
        mount.p("ctl/stream"),
        "i=1; while [ $i -le 30 ]; do echo \"tick $i\"; i=$((i+1)); sleep 0.1; done",
    )
    .unwrap();
    let tail = Tail::follow(&mount.p("cmd/stream/stdout"));
    tail.prints(
        (1..=30).map(|i| format!("tick {i}")),
        Duration::from_secs(20),
    );
}

#[test]
fn binary_output_is_byte_exact() {
    let mount = Mount::start();
    let data: Vec<u8> = (0..300_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let source = mount.dir.path().join("blob");
    std::fs::write(&source, &data).unwrap();
    mount.run(
        "blob",
        &format!("cat '{}'; printf '\\000\\377\\r' >&2", source.display()),
    );
    assert_eq!(std::fs::read(mount.p("cmd/blob/stdout")).unwrap(), data);
    assert_eq!(
        std::fs::read(mount.p("cmd/blob/stderr")).unwrap(),
        b"\0\xff\r"
    );
}

#[test]
fn wait_answers_the_status_word_and_times_out() {
    let mount = Mount::with_args(&["--wait-timeout", "1s"]);
    std::fs::write(mount.p("ctl/slow"), "sleep 60").unwrap();
    let started = Instant::now();
    let answer = std::fs::read(mount.p("cmd/slow/wait")).unwrap();
    assert_eq!(answer, b"running\n");
    let waited = started.elapsed();
    // The timeout answered, not the end of the command.
    assert!(
        waited >= Duration::from_millis(900) && waited < Duration::from_secs(30),
        "{waited:?}"
    );
    mount.ok("echo > \"$M/cmd/slow/kill\"");
    assert_eq!(mount.wait("slow"), "error\n");
    // A stopped command answers at once, every time: three reads that each waited for
    // the one-second timeout would take three seconds.
    let started = Instant::now();
    for _ in 0..3 {
        assert_eq!(std::fs::read(mount.p("cmd/slow/wait")).unwrap(), b"error\n");
    }
    assert!(started.elapsed() < Duration::from_millis(2500));
}

#[test]
fn a_shell_loop_on_the_wait_word_waits_through_timeouts() {
    let mount = Mount::with_args(&["--wait-timeout", "1s"]);
    // The loop an agent writes: it must not end while the command runs, even though
    // each read of `wait` times out (three times here) and answers `running`.
    let out = mount.ok("echo 'sleep 3; echo done' > $M/ctl/slow
         n=0
         while [ \"$(cat $M/cmd/slow/wait)\" = running ]; do n=$((n+1)); done
         cat $M/cmd/slow/status $M/cmd/slow/stdout
         [ $n -ge 1 ] && echo timed-out-at-least-once");
    assert_eq!(out, "completed\ndone\ntimed-out-at-least-once\n");
    // A reader taking one byte at a time gets the whole word, then end-of-file.
    let out = mount.ok(
        "echo 'exit 4' > $M/ctl/four; dd if=$M/cmd/four/wait bs=1 2>/dev/null; \
         dd if=$M/cmd/four/wait bs=3 2>/dev/null",
    );
    assert_eq!(out, "error\nerror\n");
}

// Linux only: it watches the reader through /proc.
#[cfg(target_os = "linux")]
#[test]
fn a_parked_wait_delays_nothing_else() {
    let mount = Mount::start();
    std::fs::write(mount.p("ctl/long"), "sleep 300").unwrap();
    let path = mount.p("cmd/long/wait");
    // Each waiter is inside read(2) before anything else is asked.
    let waiters: Vec<_> = (0..4)
        .map(|_| crate::common::parked_read(path.clone()))
        .collect();
    let started = Instant::now();
    assert_eq!(mount.run("quick", "echo fast"), "completed\n");
    assert!(mount.ok("ls \"$M/cmd\"").contains("quick"));
    // A blocked worker would hold this up until the 25 s wait timeout.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    mount.ok("echo > \"$M/cmd/long/kill\"");
    for waiter in waiters {
        let answer = waiter
            .recv_timeout(Duration::from_secs(10))
            .expect("a parked wait is answered once the command stops")
            .unwrap();
        assert_eq!(answer, b"error\n");
    }
}

// Linux only: it watches the reader through /proc.
#[cfg(target_os = "linux")]
#[test]
fn an_interrupted_reader_is_freed_quickly() {
    use crate::common::children_of;
    use std::process::{Command, Stdio};

    let mount = Mount::start();
    std::fs::write(mount.p("ctl/forever"), "sleep 300").unwrap();
    let wait = mount.p("cmd/forever/wait");
    let follow = mount.p("cmd/forever/follow");
    // timeout sends SIGINT after 1 s. The waker looks at callers' signals every 100 ms;
    // without it the read would last until the 25 s wait timeout. The bounds allow
    // 8 s after the signal: far above what an idle machine needs (about 0.1 s), which a
    // loaded one can take, and far below 25 s.
    for (signal, file) in [("INT", &wait), ("TERM", &wait), ("INT", &follow)] {
        let started = Instant::now();
        let status = Command::new("timeout")
            .args(["-s", signal, "1"])
            .arg("cat")
            .arg(file)
            .stdout(Stdio::null())
            .status()
            .unwrap();
        let took = started.elapsed();
        assert_eq!(status.code(), Some(124), "{signal} {file:?}");
        assert!(took < Duration::from_secs(9), "{signal} {file:?}: {took:?}");
    }
    // SIGKILL of the reader, once it is parked in read(2).
    let mut cat = Command::new("cat")
        .arg(&wait)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        crate::common::wait_in_read(cat.id() as i32),
        "cat never blocked reading wait"
    );
    let started = Instant::now();
    cat.kill().unwrap();
    cat.wait().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    // Ctrl-C in a shell reading wait: the shell's child gets SIGINT. A shell on a
    // terminal leaves SIGINT at its default for what it runs; this test may itself have
    // been started with SIGINT ignored (a background job of a script, or nohup), which
    // cat would inherit and so never die of the Ctrl-C, whatever the mount does.
    let mut reader = Command::new("sh");
    reader
        .arg("-c")
        .arg(format!("cat '{}'", wait.display()))
        .stdout(Stdio::null());
    // SAFETY: only signal(2), which is async-signal-safe, between fork and exec.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut reader, || {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut reader = reader.spawn().unwrap();
    // The shell's cat, once it is parked in read(2).
    let mut cat = None;
    let found = wait_until(Duration::from_secs(10), || {
        cat = children_of(reader.id() as i32).first().map(|(pid, _)| *pid);
        cat.is_some()
    });
    assert!(found, "the shell started no cat");
    assert!(
        crate::common::wait_in_read(cat.unwrap()),
        "the shell's cat never blocked reading wait"
    );
    let started = Instant::now();
    // Ctrl-C reaches the foreground process, here the shell's child cat.
    let sent = Command::new("pkill")
        .args(["-INT", "-P"])
        .arg(reader.id().to_string())
        .status()
        .unwrap();
    assert!(sent.success(), "the shell's cat was found");
    assert!(wait_until(Duration::from_secs(10), || reader
        .try_wait()
        .unwrap()
        .is_some()));
    // Within the 8 s the other readers get (pkill and the shell's exit included).
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn follow_streams_and_ends_when_the_command_stops() {
    let mount = Mount::start();
    std::fs::write(
        mount.p("ctl/f"),
        "for i in 1 2 3; do echo \"f $i\"; sleep 0.3; done",
    )
    .unwrap();
    let mut text = String::new();
    std::fs::File::open(mount.p("cmd/f/follow"))
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    assert_eq!(text, "f 1\nf 2\nf 3\n");
    // On a finished command: everything, then EOF at once.
    assert_eq!(mount.read("cmd/f/follow"), "f 1\nf 2\nf 3\n");
}
