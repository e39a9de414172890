//! Interactive commands on a real mount: a stdin pipe fed by writes, a terminal with a
//! rendered screen and keys, real programs (cat, read, python3, vi, less, top) driven
//! through files alone, the deny list on what a shell is given, and bad input.

use crate::common::{process_alive, until_exists, wait_until, Mount, Options};
use std::io::Write;
use std::path::Path;
use std::time::Duration;

/// Long enough for a loaded machine; an idle one needs a fraction of a second.
const PATIENCE: Duration = Duration::from_secs(30);

/// Writes `command` to `ctl/<name>` and waits until `cmd/<name>/<file>` exists.
fn start(mount: &Mount, name: &str, command: &str, file: &str) {
    std::fs::write(mount.p(&format!("ctl/{name}")), command).expect("ctl/<name> takes a command");
    let path = mount.p(&format!("cmd/{name}/{file}"));
    assert!(
        wait_until(PATIENCE, || path.exists()),
        "cmd/{name}/{file} never appeared; log:\n{}",
        mount.log()
    );
}

/// Appends `data` to a file the way `echo >>` does: one open (creating the file if it
/// is not there), one write, one close.
fn append(path: &Path, data: &[u8]) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)?;
    file.write_all(data)
}

/// Sends key names to a command's terminal.
fn keys(mount: &Mount, name: &str, keys: &str) {
    append(&mount.p(&format!("cmd/{name}/keys")), keys.as_bytes())
        .unwrap_or_else(|e| panic!("keys '{keys}' to {name}: {e}"));
}

/// Waits until the command's screen shows `needle`; returns the screen.
fn screen_shows(mount: &Mount, name: &str, needle: &str) -> String {
    mount.holds(&format!("cmd/{name}/screen"), needle)
}

/// Waits until `relative` reads exactly `expected`.
fn reads(mount: &Mount, relative: &str, expected: &str) {
    let path = mount.p(relative);
    let mut text = String::new();
    let same = wait_until(PATIENCE, || {
        text = std::fs::read_to_string(&path).unwrap_or_default();
        text == expected
    });
    assert!(
        same,
        "{relative} never read {expected:?}; it reads {text:?}"
    );
}

/// Writes a command that is refused; returns its reason.
fn refused(mount: &Mount, name: &str, command: &str) -> String {
    // A bad `#terminalfs` line fails the write itself; other refusals come at the close.
    match std::fs::write(mount.p(&format!("ctl/{name}")), command) {
        Err(e) if ![Some(libc::EPERM), Some(libc::EINVAL)].contains(&e.raw_os_error()) => {
            panic!("ctl/{name}: {e}")
        }
        _ => {}
    }
    reads(mount, &format!("cmd/{name}/status"), "denied\n");
    mount.read(&format!("cmd/{name}/reason"))
}

fn errno_of(result: std::io::Result<()>) -> i32 {
    result
        .expect_err("the write must fail")
        .raw_os_error()
        .expect("an errno")
}

fn result_json(mount: &Mount, name: &str) -> serde_json::Value {
    serde_json::from_str(&mount.read(&format!("cmd/{name}/result.json"))).expect("valid JSON")
}

// ----- stdin ---------------------------------------------------------------------------

#[test]
fn cat_echoes_separate_writes_in_order_and_rm_stdin_ends_it() {
    let mount = Mount::with_args(&["--keep", "2s"]);
    start(&mount, "cat", "#terminalfs stdin\ncat", "stdin");
    // No keys or screen without a terminal.
    let listing = mount.ok("ls $M/cmd/cat");
    assert!(listing.contains("stdin"), "{listing}");
    assert!(
        !listing.contains("keys") && !listing.contains("screen"),
        "{listing}"
    );
    for word in ["one", "two", "three"] {
        mount.ok(&format!("echo {word} >> $M/cmd/cat/stdin"));
    }
    reads(&mount, "cmd/cat/stdout", "one\ntwo\nthree\n");
    assert_eq!(mount.read("cmd/cat/status"), "running\n");
    mount.ok("rm $M/cmd/cat/stdin");
    assert_eq!(mount.wait("cat"), "completed\n");
    assert_eq!(mount.read("cmd/cat/stdout"), "one\ntwo\nthree\n");
    // Removing stdin did not pin the command: it expires after --keep like any other.
    let dir = mount.p("cmd/cat");
    assert!(
        wait_until(PATIENCE, || !dir.exists()),
        "cmd/cat was kept after rm stdin"
    );
}

#[test]
fn a_read_prompt_is_answered() {
    let mount = Mount::start();
    start(
        &mount,
        "ask",
        "#terminalfs stdin\nprintf 'name? '; read answer; echo \"hello $answer\"",
        "stdin",
    );
    reads(&mount, "cmd/ask/stdout", "name? ");
    mount.ok("echo world > $M/cmd/ask/stdin");
    assert_eq!(mount.wait("ask"), "completed\n");
    assert_eq!(mount.read("cmd/ask/stdout"), "name? hello world\n");
    // Once it stopped, stdin is gone, and a write says the pipe is broken.
    assert!(!mount.p("cmd/ask/stdin").exists());
    let late = errno_of(append(&mount.p("cmd/ask/stdin"), b"late\n"));
    assert_eq!(late, libc::EPIPE);
    mount.wait_for_log("cmd/ask/stdin: nothing reads");
}

#[test]
fn a_python_repl_on_a_pipe_prints_42() {
    let mount = Mount::start();
    start(&mount, "py", "#terminalfs stdin\npython3 -i -q", "stdin");
    mount.ok("echo 'print(6*7)' >> $M/cmd/py/stdin");
    let output = mount.p("cmd/py/output");
    assert!(
        wait_until(PATIENCE, || std::fs::read_to_string(&output)
            .unwrap_or_default()
            .contains("42\n")),
        "no 42 in {}",
        std::fs::read_to_string(&output).unwrap_or_default()
    );
    // The REPL stays alive across writes.
    mount.ok("echo 'x = 5' >> $M/cmd/py/stdin; echo 'print(x * 2)' >> $M/cmd/py/stdin");
    reads(&mount, "cmd/py/stdout", "42\n10\n");
    mount.ok("rm $M/cmd/py/stdin");
    assert_eq!(mount.wait("py"), "completed\n");
}

#[test]
fn a_full_pipe_blocks_then_gives_eagain_and_loses_nothing() {
    let mount = Mount::with_args(&["--wait-timeout", "1s"]);
    // The reader waits for a file before it reads anything.
    let gate = mount.dir.path().join("go");
    start(
        &mount,
        "slow",
        &format!("#terminalfs stdin\n{}; wc -c", until_exists(&gate)),
        "stdin",
    );
    let path = mount.p("cmd/slow/stdin");
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    // One write larger than the pipe delivers what fits and says how much.
    let mut taken = file.write(&vec![b'x'; 1 << 20]).unwrap();
    assert!(taken > 0 && taken < 1 << 20, "{taken}");
    let chunk = vec![b'x'; 16 * 1024];
    let error = loop {
        match file.write(&chunk) {
            Ok(n) => taken += n,
            Err(error) => break error,
        }
        assert!(taken < 64 << 20, "the pipe never filled");
    };
    assert_eq!(error.raw_os_error(), Some(libc::EAGAIN), "{error}");
    assert!(taken > 0, "nothing fitted");
    drop(file);
    std::fs::write(&gate, "").unwrap();
    mount.ok("rm $M/cmd/slow/stdin");
    assert_eq!(mount.wait("slow"), "completed\n");
    assert_eq!(mount.read("cmd/slow/stdout").trim(), taken.to_string());
}

#[test]
fn a_megabyte_through_stdin_arrives_whole_and_in_order() {
    let mount = Mount::start();
    start(
        &mount,
        "sum",
        "#terminalfs stdin\nsleep 0.5; sha256sum",
        "stdin",
    );
    let data: Vec<u8> = (0..100_000)
        .flat_map(|n| format!("{n:07}\n").into_bytes())
        .collect();
    // Many writes of odd sizes, through one handle that blocks while the pipe is full.
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(mount.p("cmd/sum/stdin"))
        .unwrap();
    for piece in data.chunks(7_777) {
        file.write_all(piece).unwrap();
    }
    drop(file);
    mount.ok("rm $M/cmd/sum/stdin");
    assert_eq!(mount.wait("sum"), "completed\n");
    let expected = {
        let out = std::process::Command::new("sha256sum")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = out;
        out.stdin.take().unwrap().write_all(&data).unwrap();
        String::from_utf8(out.wait_with_output().unwrap().stdout).unwrap()
    };
    assert_eq!(mount.read("cmd/sum/stdout"), expected);
}

// ----- the deny list on a shell's input ------------------------------------------------

const DENY_SUDO: &str = r#"{"permissions": {"deny": ["Bash(sudo:*)"]}}"#;

#[test]
fn what_a_shell_is_given_is_checked_as_one_script() {
    let mount = Mount::with(Options {
        settings: DENY_SUDO,
        ..Options::default()
    });
    start(&mount, "sh", "#terminalfs stdin\nsh", "stdin");
    let stdin = mount.p("cmd/sh/stdin");
    // A loop written in pieces is accepted.
    for piece in ["for i in 1 2\n", "do echo $i\n", "done\n"] {
        append(&stdin, piece.as_bytes()).unwrap_or_else(|e| panic!("{piece:?}: {e}"));
    }
    reads(&mount, "cmd/sh/stdout", "1\n2\n");
    // A denied command is refused and not delivered.
    assert_eq!(errno_of(append(&stdin, b"sudo id\n")), libc::EPERM);
    // A quote opened on one line and closed on the next is still seen.
    append(&stdin, b"echo 'a\n").unwrap();
    assert_eq!(errno_of(append(&stdin, b"b'; sudo id\n")), libc::EPERM);
    append(&stdin, b"b'\n").unwrap();
    // A here-document in pieces is data, whatever it says.
    for piece in ["cat <<EOF\n", "sudo is only text\n", "EOF\n"] {
        append(&stdin, piece.as_bytes()).unwrap();
    }
    // bash's printf writes line by line: once its first line is refused, the lines
    // after it are refused too, and none of them runs.
    let out = mount.sh(
        "bash -c \"printf 'cat <<X | sudo sh\\necho HEREDOC-BODY-RAN\\nX\\n' >> $M/cmd/sh/stdin\"",
    );
    assert!(!out.status.success(), "the refused printf succeeded");
    mount.ok("rm $M/cmd/sh/stdin");
    assert_eq!(mount.wait("sh"), "completed\n");
    assert_eq!(
        mount.read("cmd/sh/stdout"),
        "1\n2\na\nb\nsudo is only text\n"
    );
    assert!(mount.log().contains("Bash(sudo:*)"), "{}", mount.log());
    let audit =
        std::fs::read_to_string(mount.state.join("terminalfs/audit.jsonl")).unwrap_or_default();
    assert!(
        audit
            .lines()
            .any(|l| l.contains("sh/stdin") && l.contains("denied")),
        "{audit}"
    );
}

#[test]
fn a_shell_takes_a_mebibyte_of_input_in_all_and_says_why_it_takes_no_more() {
    let mount = Mount::with(Options {
        settings: DENY_SUDO,
        ..Options::default()
    });
    start(&mount, "sh", "#terminalfs stdin\nexec bash", "stdin");
    let stdin = mount.p("cmd/sh/stdin");
    // 17 writes of 60 lines of 1 KiB: 1,044,480 bytes, each write through its own open.
    let line = format!(": {}\n", "a".repeat(1021));
    let chunk = line.repeat(60);
    for round in 0..17 {
        append(&stdin, chunk.as_bytes()).unwrap_or_else(|e| panic!("write {round}: {e}"));
    }
    append(&stdin, b"echo alive\n").unwrap();
    reads(&mount, "cmd/sh/stdout", "alive\n");
    // The next 60 KiB would pass 1 MiB in all: refused, not delivered.
    assert_eq!(errno_of(append(&stdin, chunk.as_bytes())), libc::EFBIG);
    // Up to exactly 1 MiB is taken; after that, not a byte more.
    let given = 17 * chunk.len() + "echo alive\n".len();
    let filler = format!("#{}\n", "x".repeat((1 << 20) - given - 2));
    append(&stdin, filler.as_bytes()).unwrap();
    assert_eq!(errno_of(append(&stdin, b"echo again\n")), libc::EFBIG);
    // Why, without the log: ctl/index.md lists both, with the sentence.
    let page = mount.read("ctl/index.md");
    let listed: Vec<&str> = page
        .lines()
        .filter(|line| line.contains("`sh/stdin`"))
        .collect();
    assert_eq!(listed.len(), 2, "{page}");
    for line in listed {
        assert!(
            line.contains("checked as one script of at most 1048576 bytes in all"),
            "{page}"
        );
    }
    mount.ok("rm $M/cmd/sh/stdin");
    assert_eq!(mount.wait("sh"), "completed\n");
    assert_eq!(mount.read("cmd/sh/stdout"), "alive\n");
}

#[test]
fn a_shell_on_a_terminal_is_refused_while_rules_are_in_force() {
    let mount = Mount::with(Options {
        settings: DENY_SUDO,
        ..Options::default()
    });
    let reason = refused(&mount, "bash", "#terminalfs tty\nbash");
    assert!(reason.contains("cannot be checked"), "{reason}");
    // The writer learns it, as for any other refusal: at the write, which a shell's
    // redirect reports (it ignores its close), and at the close of a write in pieces.
    let out = mount.sh("printf '#terminalfs tty\\nbash\\n' > $M/ctl/tsh");
    assert!(!out.status.success(), "printf to ctl/tsh did not fail");
    assert_eq!(mount.read("cmd/tsh/status"), "denied\n");
    // No blank after `bash`: only the close can judge it, and cat reports its close.
    let out = mount.sh("printf '#terminalfs tty\\nbash' | cat > $M/ctl/tsh2");
    assert!(!out.status.success(), "the close of ctl/tsh2 did not fail");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Operation not permitted"), "{stderr}");
    assert!(mount.read("cmd/tsh2/reason").contains("cannot be checked"));
    // Another program on a terminal runs.
    assert_eq!(mount.run("echo", "#terminalfs tty\necho hi"), "completed\n");
    // Without rules, a shell on a terminal runs too.
    let free = Mount::start();
    start(&free, "bash", "#terminalfs tty\nsh", "keys");
    keys(&free, "bash", "'echo $((6*7))' Enter 'exit' Enter");
    assert_eq!(free.wait("bash"), "completed\n");
    assert!(free.read("cmd/bash/stdout").contains("42"));
}

// ----- terminals -----------------------------------------------------------------------

#[test]
fn a_terminal_has_its_size_term_and_one_stream() {
    let mount = Mount::start();
    let script = "#terminalfs tty=100x30\nstty size; echo \"TERM=$TERM\"; tty; echo oops >&2; \
                  python3 -c 'import os; print(\"cols\", os.get_terminal_size().columns)'";
    assert_eq!(mount.run("size", script), "completed\n");
    let stdout = mount.read("cmd/size/stdout");
    assert!(stdout.contains("30 100\r\n"), "{stdout:?}");
    assert!(stdout.contains("TERM=xterm-256color\r\n"), "{stdout:?}");
    assert!(stdout.contains("/dev/pts/"), "{stdout:?}");
    assert!(stdout.contains("oops\r\n"), "{stdout:?}");
    assert!(stdout.contains("cols 100\r\n"), "{stdout:?}");
    assert_eq!(mount.read("cmd/size/stderr"), "");
    assert_eq!(mount.read("cmd/size/output"), stdout);
    // After exit, the screen shows the last screen; result.json the size and cursor.
    let screen = mount.read("cmd/size/screen");
    assert!(
        screen.starts_with("30 100\nTERM=xterm-256color\n"),
        "{screen}"
    );
    let result = result_json(&mount, "size");
    assert_eq!(result["terminal"]["cols"], 100);
    assert_eq!(result["terminal"]["rows"], 30);
    assert_eq!(result["terminal"]["cursor"]["row"], 5);
    assert_eq!(result["terminal"]["cursor"]["col"], 0);
    // Stopped: no keys, no stdin.
    let listing = mount.ok("ls $M/cmd/size");
    assert!(listing.contains("screen"), "{listing}");
    assert!(
        !listing.contains("keys") && !listing.contains("stdin"),
        "{listing}"
    );
}

#[test]
fn vi_edits_and_saves_a_file_through_keys_alone() {
    let mount = Mount::start();
    let file = mount.dir.path().join("notes.txt");
    start(&mount, "vi", "#terminalfs tty=80x24\nvi notes.txt", "keys");
    // Keys typed before the editor is ready would be echoed and then discarded, as on
    // any terminal: wait for its screen.
    screen_shows(&mount, "vi", "notes.txt");
    keys(
        &mount,
        "vi",
        "i 'hello from keys' Enter 'second line' Escape",
    );
    let screen = screen_shows(&mount, "vi", "second line");
    assert!(
        screen.starts_with("hello from keys\nsecond line\n"),
        "{screen}"
    );
    keys(&mount, "vi", ": w q Enter");
    assert_eq!(mount.wait("vi"), "completed\n");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "hello from keys\nsecond line\n"
    );
}

#[test]
fn less_pages_and_quits() {
    let mount = Mount::start();
    let lines: String = (1..=200).map(|n| format!("line {n}\n")).collect();
    std::fs::write(mount.dir.path().join("numbers.txt"), lines).unwrap();
    start(
        &mount,
        "less",
        "#terminalfs tty=80x24\nless numbers.txt",
        "keys",
    );
    let first = screen_shows(&mount, "less", "line 23");
    assert!(first.starts_with("line 1\n"), "{first}");
    assert!(!first.contains("line 24\n"), "{first}");
    keys(&mount, "less", "Space");
    let second = screen_shows(&mount, "less", "line 46");
    assert!(second.starts_with("line 24\n"), "{second}");
    keys(&mount, "less", "G");
    screen_shows(&mount, "less", "line 200");
    keys(&mount, "less", "q");
    assert_eq!(mount.wait("less"), "completed\n");
}

#[test]
fn top_runs_in_batch_mode_on_a_terminal() {
    let mount = Mount::start();
    assert_eq!(
        mount.run("top", "#terminalfs tty\ntop -b -n 1"),
        "completed\n"
    );
    let stdout = mount.read("cmd/top/stdout");
    assert!(
        stdout.contains("PID") && stdout.contains("COMMAND"),
        "{stdout}"
    );
    // The screen holds the end of that listing, as a terminal would.
    let last = stdout.trim_end().lines().last().unwrap().trim_end();
    assert!(mount.read("cmd/top/screen").contains(last), "{last:?}");
}

#[test]
fn a_python_repl_on_a_terminal_and_ctrl_c() {
    let mount = Mount::start();
    // `exec`: the REPL itself leads the session, so Ctrl-C reaches only the REPL, not a
    // shell waiting for it.
    start(
        &mount,
        "repl",
        "#terminalfs tty\nexec python3 -i -q",
        "keys",
    );
    screen_shows(&mount, "repl", ">>>");
    keys(&mount, "repl", "'print(6*7)' Enter");
    // The answer, then the next prompt (which may come a moment after it).
    screen_shows(&mount, "repl", ">>> print(6*7)\n42\n>>>");
    // Ctrl-C reaches the foreground process group: the REPL prints KeyboardInterrupt
    // and goes on. (After one, Python leaves by SIGINT at end of input, as on any
    // terminal; os._exit(0) leaves with 0.)
    keys(&mount, "repl", "'import time; time.sleep(100)' Enter");
    screen_shows(&mount, "repl", "time.sleep(100)");
    keys(&mount, "repl", "C-c");
    screen_shows(&mount, "repl", "KeyboardInterrupt");
    keys(&mount, "repl", "'print(\"still\", 6*7)' Enter");
    screen_shows(&mount, "repl", "still 42");
    keys(&mount, "repl", "'import os; os._exit(0)' Enter");
    assert_eq!(mount.wait("repl"), "completed\n");
}

#[test]
fn signals_the_driver_ignores_are_not_ignored_in_commands() {
    // A driver started in the background of a script ignores SIGINT and SIGQUIT, one
    // started by nohup SIGHUP; its commands must not inherit that, or Ctrl-C on their
    // terminal would do nothing.
    let mount = Mount::with_launcher(Options::default(), &|command| {
        use std::os::unix::process::CommandExt;
        // SAFETY: signal() is async-signal-safe.
        unsafe {
            command.pre_exec(|| {
                for signal in [libc::SIGINT, libc::SIGQUIT, libc::SIGHUP] {
                    libc::signal(signal, libc::SIG_IGN);
                }
                Ok(())
            });
        }
    });
    mount.run("ign", "grep SigIgn /proc/self/status");
    let line = mount.read("cmd/ign/stdout");
    let mask = u64::from_str_radix(line.trim().trim_start_matches("SigIgn:").trim(), 16)
        .expect("a hexadecimal mask");
    // The standard signals (1-31); glibc keeps 32 and 33 for itself.
    assert_eq!(mask & 0x7fff_ffff, 0, "{line}");
}

#[test]
fn ctrl_c_stops_the_foreground_process_group() {
    let mount = Mount::start();
    start(
        &mount,
        "sleep",
        "#terminalfs tty\nsleep 1000; echo after",
        "keys",
    );
    // Wait for the sleep itself: a Ctrl-C that reaches the shell before it forks is
    // held by the shell until its next child ends, as on any terminal.
    let shell: i32 = mount.read("cmd/sleep/pid").trim().parse().unwrap();
    let sleeping = || {
        crate::common::group_members(shell).into_iter().any(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c == "sleep\n")
        })
    };
    assert!(wait_until(PATIENCE, sleeping), "sleep never started");
    keys(&mount, "sleep", "C-c");
    assert_eq!(mount.wait("sleep"), "error\n");
    assert_eq!(mount.read("cmd/sleep/exitcode"), "130\n");
    let output = mount.read("cmd/sleep/output");
    assert!(output.ends_with("^C"), "{output:?}");
    assert!(!output.contains("after"), "{output:?}");
}

#[test]
fn a_password_prompt_is_answered_without_echo() {
    let mount = Mount::start();
    start(
        &mount,
        "pw",
        "#terminalfs tty\npython3 -c \"import getpass; p = getpass.getpass('Password: '); \
         print('length', len(p))\"",
        "keys",
    );
    screen_shows(&mount, "pw", "Password:");
    keys(&mount, "pw", "'s3cret!' Enter");
    assert_eq!(mount.wait("pw"), "completed\n");
    let stdout = mount.read("cmd/pw/stdout");
    assert!(stdout.contains("length 7"), "{stdout:?}");
    assert!(
        !stdout.contains("s3cret"),
        "the password was echoed: {stdout:?}"
    );
}

#[test]
fn raw_bytes_go_through_stdin_of_a_terminal() {
    let mount = Mount::start();
    start(
        &mount,
        "raw",
        "#terminalfs tty\nread line; echo \"got [$line]\"",
        "stdin",
    );
    mount.ok("printf 'abc\\r' >> $M/cmd/raw/stdin");
    assert_eq!(mount.wait("raw"), "completed\n");
    assert!(mount.read("cmd/raw/stdout").contains("got [abc]"));
}

#[test]
fn kill_wait_and_follow_work_on_a_terminal() {
    let mount = Mount::start();
    start(
        &mount,
        "loop",
        "#terminalfs tty\necho started; sleep 1000",
        "keys",
    );
    screen_shows(&mount, "loop", "started");
    let pid: i32 = mount.read("cmd/loop/pid").trim().parse().unwrap();
    mount.ok("echo > $M/cmd/loop/kill");
    assert_eq!(mount.wait("loop"), "error\n");
    assert!(mount.read("cmd/loop/reason").contains("killed"));
    assert!(wait_until(PATIENCE, || !crate::common::process_alive(pid)));
    // follow gives the stream and ends.
    assert_eq!(mount.read("cmd/loop/follow"), mount.read("cmd/loop/output"));
    assert!(mount.read("cmd/loop/output").contains("started"));
}

#[test]
fn limits_and_containment_hold_on_a_terminal() {
    let mount = Mount::start();
    assert_eq!(
        mount.run("slow", "#terminalfs tty timeout=1s\necho begun; sleep 1000"),
        "error\n"
    );
    let reason = mount.read("cmd/slow/reason");
    assert!(reason.contains("timed out"), "{reason}");
    let result = result_json(&mount, "slow");
    assert_eq!(result["timed_out"], true);
    // Contained like any other command: in its own cgroup (as on CI; the supervision
    // tests say how to opt out where the driver cannot make one).
    let containment = result["containment"].as_str().unwrap().to_owned();
    if std::env::var_os("TERMINALFS_TEST_WITHOUT_CGROUPS").is_none() {
        assert!(containment.starts_with("cgroup "), "{containment}");
    } else {
        assert_eq!(containment, "process group");
    }
    assert!(mount.read("cmd/slow/screen").contains("begun"));
}

#[test]
fn rm_r_stops_and_removes_a_command_on_a_terminal() {
    let mount = Mount::start();
    start(&mount, "t", "#terminalfs tty\nexec cat", "keys");
    let pid: i32 = mount.read("cmd/t/pid").trim().parse().unwrap();
    mount.ok("rm -r $M/cmd/t");
    assert!(!mount.p("cmd/t").exists());
    assert!(
        wait_until(PATIENCE, || !process_alive(pid)),
        "cat still runs after rm -r"
    );
}

// ----- bad input -----------------------------------------------------------------------

#[test]
fn bad_input_gets_a_clear_errno_and_nothing_half_sent() {
    let mount = Mount::start();
    // Keys to a command without a terminal; stdin to a command without stdin.
    start(&mount, "plain", "sleep 1000", "kill");
    let keys_path = mount.p("cmd/plain/keys");
    assert_eq!(errno_of(append(&keys_path, b"Enter")), libc::ENOTTY);
    let stdin_path = mount.p("cmd/plain/stdin");
    assert_eq!(errno_of(append(&stdin_path, b"x\n")), libc::EACCES);
    start(&mount, "pipe", "#terminalfs stdin\nsleep 1000", "stdin");
    assert_eq!(
        errno_of(append(&mount.p("cmd/pipe/keys"), b"Enter")),
        libc::ENOTTY
    );
    assert!(wait_until(PATIENCE, || {
        let log = mount.log();
        log.contains("cmd/plain/stdin: it was started without stdin")
            && log.contains("cmd/pipe/keys: keys need a terminal")
    }));

    // On a terminal: an unknown key name and a 1 MiB write send nothing.
    start(&mount, "cat", "#terminalfs tty\ncat", "keys");
    let keys_path = mount.p("cmd/cat/keys");
    assert_eq!(
        errno_of(append(&keys_path, b"'sent' Enter Bogus Enter")),
        libc::EINVAL
    );
    mount.wait_for_log("cmd/cat/keys: unknown key name 'Bogus'");
    let mebibyte = vec![b'a'; 1 << 20];
    assert_eq!(errno_of(append(&keys_path, &mebibyte)), libc::EFBIG);
    // Removing stdin on a terminal removes the file: keys still reach the program.
    mount.ok("rm $M/cmd/cat/stdin");
    let listing = mount.ok("ls $M/cmd/cat");
    assert!(!listing.lines().any(|file| file == "stdin"), "{listing}");
    keys(&mount, "cat", "'marker' Enter");
    screen_shows(&mount, "cat", "marker\nmarker");
    let output = mount.read("cmd/cat/output");
    assert!(!output.contains("sent"), "{output:?}");
    assert!(!output.contains("aaaa"), "{output:?}");
    mount.ok("echo > $M/cmd/cat/kill");
    mount.wait("cat");

    // A handle opened while the command ran gets EPIPE once it has stopped.
    start(&mount, "once", "#terminalfs tty\nread line", "keys");
    let mut held = std::fs::OpenOptions::new()
        .append(true)
        .open(mount.p("cmd/once/keys"))
        .unwrap();
    held.write_all(b"'first' Enter").unwrap();
    assert_eq!(mount.wait("once"), "completed\n");
    let late = held.write_all(b"'second' Enter").unwrap_err();
    assert_eq!(late.raw_os_error(), Some(libc::EPIPE), "{late}");
    assert!(!mount.read("cmd/once/output").contains("second"));

    // Sizes that are no terminal.
    for (size, needle) in [("0x0", "no cells"), ("100000x1", "too large")] {
        let name = format!("size{}", size.len());
        let reason = refused(&mount, &name, &format!("#terminalfs tty={size}\necho hi"));
        assert!(reason.contains(needle), "{reason}");
    }
}

// ----- what a finished command keeps ---------------------------------------------------

/// What the driver's descriptors point at (`/dev/ptmx`, `pipe:[…]`, paths).
/// What the driver's descriptors point at, but its cgroup directories: spare ones are
/// kept ready for the next commands (a few at most, however many have run), so their
/// number moves with how starts and ends overlapped, not with what finished commands
/// hold.
#[cfg(target_os = "linux")]
fn descriptor_targets(pid: i32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|dir| {
            dir.flatten()
                .filter_map(|entry| std::fs::read_link(entry.path()).ok())
                .map(|target| target.display().to_string())
                .filter(|target| !target.starts_with("/sys/fs/cgroup/"))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(target_os = "linux")]
#[test]
fn finished_commands_of_every_kind_hold_no_descriptor() {
    let mount = Mount::with(Options {
        settings: DENY_SUDO,
        ..Options::default()
    });
    let driver = mount.pid() as i32;
    let killed = |name: &str, command: &str| {
        start(&mount, name, command, "kill");
        mount.ok(&format!("echo > $M/cmd/{name}/kill"));
        assert_eq!(mount.wait(name), "error\n");
    };
    // One command of every kind, each left finished (the default --keep keeps them).
    let every_kind = |round: usize| {
        assert_eq!(
            mount.run(&format!("plain{round}"), "echo plain"),
            "completed\n"
        );
        let fed = format!("fed{round}");
        start(&mount, &fed, "#terminalfs stdin\nhead -n 1", "stdin");
        mount.ok(&format!("echo line >> $M/cmd/{fed}/stdin"));
        assert_eq!(mount.wait(&fed), "completed\n");
        let tty = format!("tty{round}");
        assert_eq!(
            mount.run(&tty, &format!("#terminalfs tty\necho shown-{round}")),
            "completed\n"
        );
        refused(&mount, &format!("refused{round}"), "sudo true");
        killed(&format!("killed{round}"), "sleep 1000");
        killed(&format!("killedin{round}"), "#terminalfs stdin\nsleep 1000");
        killed(&format!("killedtty{round}"), "#terminalfs tty\nsleep 1000");
        let late = format!("late{round}");
        assert_eq!(
            mount.run(&late, "#terminalfs stdin timeout=1s\nsleep 1000"),
            "error\n"
        );
        assert!(mount
            .read(&format!("cmd/{late}/reason"))
            .contains("timed out"));
        let late_tty = format!("latetty{round}");
        assert_eq!(
            mount.run(&late_tty, "#terminalfs tty timeout=1s\nsleep 1000"),
            "error\n"
        );
    };
    // The first round makes what the driver makes once and keeps (a cgroup ready for
    // the next command, a stderr file readied ahead).
    every_kind(0);
    let baseline = descriptor_targets(driver).len();
    for round in 1..4 {
        every_kind(round);
    }
    let mut held = Vec::new();
    let released = wait_until(PATIENCE, || {
        held = descriptor_targets(driver);
        held.len() <= baseline && !held.iter().any(|target| target.contains("ptmx"))
    });
    assert!(
        released,
        "{baseline} descriptors after the first round, after three more: {held:#?}"
    );
    // Letting go of the terminal changes nothing that can be read.
    for round in 0..4 {
        let tty = format!("tty{round}");
        assert_eq!(
            mount.read(&format!("cmd/{tty}/screen")),
            format!("shown-{round}\n\n")
        );
        let terminal = &result_json(&mount, &tty)["terminal"];
        assert_eq!(terminal["cursor"]["row"], 1, "{terminal}");
        assert_eq!(terminal["cursor"]["col"], 0, "{terminal}");
    }
    // Input to a finished command fails as it always did: nothing reads it.
    assert_eq!(
        errno_of(append(&mount.p("cmd/tty3/keys"), b"Enter")),
        libc::EPIPE
    );
    assert_eq!(
        errno_of(append(&mount.p("cmd/fed3/stdin"), b"more\n")),
        libc::EPIPE
    );
    mount.wait_for_log("cmd/tty3/keys: nothing reads this input any more");
    mount.wait_for_log("cmd/fed3/stdin: nothing reads this input any more");
}
