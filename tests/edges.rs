//! Edge cases of writing commands and reading results: appends, oversize and
//! unusual bytes, children that close an inherited descriptor, late kills, pages
//! that change while open, and a full signal queue.

use crate::common::{wait_until, Mount, Options};
use std::io::{Read, Write};
use std::time::Duration;

const SUDO_DENIED: &str = r#"{"permissions": {"deny": ["Bash(sudo:*)"]}}"#;

#[test]
fn appending_writes_keep_everything_written() {
    let mount = Mount::start();
    std::fs::write(mount.dir.path().join("more"), "echo two\n").unwrap();
    // `cat` stats its output between the two appends.
    mount.ok("{ echo 'echo one'; cat \"$M/../more\"; } >> \"$M/ctl/appended\"");
    assert_eq!(mount.wait("appended"), "completed\n");
    assert_eq!(mount.read("cmd/appended/command"), "echo one\necho two\n");
    assert_eq!(mount.read("cmd/appended/stdout"), "one\ntwo\n");

    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(mount.p("ctl/py"))
        .unwrap();
    file.write_all(b"echo first\n").unwrap();
    std::fs::metadata(mount.p("ctl/py")).unwrap();
    file.write_all(b"echo second\n").unwrap();
    drop(file);
    assert_eq!(mount.wait("py"), "completed\n");
    assert_eq!(mount.read("cmd/py/stdout"), "first\nsecond\n");
}

#[test]
fn a_long_command_cannot_rewrite_the_script_its_shell_reads() {
    let mount = Mount::start();
    // Over 100 KiB, so the shell reads the text from a file on descriptor 3: the
    // first line tries to append a line the check never saw, for the shell to read
    // when it gets to the end.
    let mut script =
        String::from("printf '\\necho injected\\n' >> /dev/fd/3; echo \"append: $?\"\n");
    for _ in 0..2_000 {
        script.push_str(&format!("# {}\n", "x".repeat(60)));
    }
    script.push_str("echo end\n");
    assert!(script.len() > 120 * 1024);
    assert_eq!(mount.run("long", &script), "completed\n");
    let stdout = mount.read("cmd/long/stdout");
    assert!(!stdout.contains("injected"), "{stdout}");
    assert!(stdout.contains("append: 1\nend\n"), "{stdout}");
}

#[test]
fn an_oversized_command_is_refused_not_cut_short() {
    let mount = Mount::start();
    let mut script = String::from("echo step1\n");
    script.push_str(&"#".repeat(1 << 20));
    script.push_str("\necho step2\n");
    std::fs::write(mount.dir.path().join("script"), &script).unwrap();
    let out = mount.sh("cat \"$M/../script\" > \"$M/ctl/trunc\"");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("File too large"));
    assert!(wait_until(Duration::from_secs(5), || mount
        .p("cmd/trunc/status")
        .exists()));
    assert_eq!(mount.read("cmd/trunc/status"), "denied\n");
    assert!(mount.read("cmd/trunc/reason").contains("longer than"));
}

#[test]
fn a_child_closing_an_inherited_descriptor_decides_nothing() {
    let mount = Mount::with(Options {
        settings: SUDO_DENIED,
        ..Options::default()
    });
    // `/bin/true` inherits the descriptor and closes it while the text is `sudo`.
    mount.ok(
        "(printf 'sudo'; /bin/true; printf 'ku() { echo solved; }; sudoku\\n') > \"$M/ctl/puzzle\"",
    );
    assert_eq!(mount.wait("puzzle"), "completed\n");
    assert_eq!(mount.read("cmd/puzzle/stdout"), "solved\n");
}

#[test]
fn nul_bytes_are_refused_and_other_bytes_reach_the_shell_unchanged() {
    let mount = Mount::start();
    let out = mount.sh("printf 'echo a\\000b' > \"$M/ctl/nul\"");
    assert!(!out.status.success());
    assert!(wait_until(Duration::from_secs(5), || mount
        .p("cmd/nul/reason")
        .exists()));
    assert!(mount.read("cmd/nul/reason").contains("NUL"));

    std::fs::write(
        mount.p("ctl/latin1"),
        b"printf '%s' 'caf\xe9' | od -An -tx1",
    )
    .unwrap();
    assert_eq!(mount.wait("latin1"), "completed\n");
    assert_eq!(
        mount
            .read("cmd/latin1/stdout")
            .split_whitespace()
            .collect::<Vec<_>>(),
        ["63", "61", "66", "e9"]
    );
    assert_eq!(
        std::fs::read(mount.p("cmd/latin1/command")).unwrap(),
        b"printf '%s' 'caf\xe9' | od -An -tx1"
    );
}

#[test]
fn a_kill_that_races_the_end_is_not_an_error() {
    let mount = Mount::start();
    mount.run("over", "true");
    assert!(!mount.ok("ls \"$M/cmd/over\"").contains("kill"));
    mount.ok("echo 1 > \"$M/cmd/over/kill\"");
    assert_eq!(mount.read("cmd/over/status"), "completed\n");
}

#[test]
fn a_decided_command_can_be_taken_back_until_it_starts() {
    let mount = Mount::with_args(&["--settle", "2s"]);
    std::fs::write(mount.p("ctl/decided"), "touch ran").unwrap();
    // Decided once the last close has arrived: the draft then shows its text's size.
    assert!(wait_until(Duration::from_secs(5), || {
        std::fs::metadata(mount.p("ctl/decided")).is_ok_and(|m| m.len() > 0)
    }));
    mount.ok("rm $M/ctl/decided");
    // Listing cmd/ starts every decided command at once: none is left to start.
    assert!(!mount.ok("ls $M/cmd").contains("decided"));
    assert!(!mount.p("cmd/decided").exists());
    // The name is free, and only the second command runs.
    assert_eq!(mount.run("decided", "echo second"), "completed\n");
    assert_eq!(mount.read("cmd/decided/stdout"), "second\n");
    assert!(!mount.dir.path().join("ran").exists());
}

#[test]
fn a_page_reads_whole_as_rendered_at_open() {
    let mount = Mount::start();
    std::fs::write(mount.p("ctl/changing"), "sleep 1; exit 3").unwrap();
    // The lookup waits for the writer's last close and starts the command, so the page
    // below is rendered while it runs, however late that close arrives.
    assert!(mount.p("cmd/changing").is_dir());
    let mut page = std::fs::File::open(mount.p("cmd/index.md")).unwrap();
    assert_eq!(mount.wait("changing"), "error\n");
    let mut text = String::new();
    page.read_to_string(&mut text).unwrap();
    let row = text
        .lines()
        .find(|line| line.starts_with("| [changing](changing/status) | running |  | "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(row.ends_with(" | `sleep 1; exit 3` | 0 | 0 |"), "{row}");
}

// Linux only: RLIMIT_SIGPENDING limits the queue of real-time signals.
#[cfg(target_os = "linux")]
#[test]
fn a_full_signal_queue_loses_no_output_before_wait_answers() {
    use std::os::unix::process::CommandExt;

    // A tiny queue of pending signals makes the pump fall back to reading as it can.
    let mount = Mount::with_launcher(Options::default(), &|command| {
        // SAFETY: setrlimit between fork and exec touches no memory of the parent.
        unsafe {
            command.pre_exec(|| {
                let limit = libc::rlimit {
                    rlim_cur: 16,
                    rlim_max: 16,
                };
                libc::setrlimit(libc::RLIMIT_SIGPENDING, &limit);
                Ok(())
            });
        }
    });
    mount.run(
        "chatty",
        "i=0; while [ $i -lt 5000 ]; do echo out; echo err >&2; i=$((i+1)); done",
    );
    let output = mount.read("cmd/chatty/output");
    assert_eq!(output.lines().count(), 10_000);
    assert_eq!(mount.read("cmd/chatty/stdout").lines().count(), 5000);
}
