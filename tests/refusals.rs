//! Refusals a writer with only a shell must see, on a real mount: shells that read their
//! input without being named as one (`source /dev/stdin`, `$SHELL`, `/proc/self/exe`),
//! aliases, a complete line refused at its write (a shell ignores the error of its
//! redirect's close), and `terminalfs check` printing the decision the mount makes.

use crate::common::{close_errno, run_binary, wait_until, Mount, Options};
use std::path::Path;
use std::time::Duration;

/// Long enough for a loaded machine; an idle one needs a fraction of a second.
const PATIENCE: Duration = Duration::from_secs(30);

const DENY_TOUCH: &str = r#"{"permissions": {"deny": ["Bash(touch:*)", "Bash(bash -s)"]}}"#;

/// A mount whose commands run under bash (`source` is bash's), with `$SHELL` a shell.
fn mount() -> Mount {
    Mount::with(Options {
        settings: DENY_TOUCH,
        args: vec!["--shell", "/bin/bash"],
    })
}

/// Runs `script` under bash (which names the errno of a failed write) with `$M` the
/// mount and `$T` a directory of the test's; returns its exit status and what it printed.
fn sh(mount: &Mount, script: &str) -> (Option<i32>, String) {
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(script)
        .env("M", &mount.path)
        .env("T", mount.dir.path())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("sh runs");
    let printed =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code(), printed)
}

/// Asserts that `cmd/<name>` was denied and returns its reason.
fn denied(mount: &Mount, name: &str) -> String {
    mount.holds(&format!("cmd/{name}/status"), "denied\n");
    mount.read(&format!("cmd/{name}/reason"))
}

fn absent(path: &Path) {
    assert!(!path.exists(), "{} was created", path.display());
}

#[test]
fn a_shell_reading_its_input_unnamed_has_every_write_checked() {
    let mount = mount();
    for (name, program) in [
        ("src", "source /dev/stdin"),
        ("dot", ". /dev/stdin"),
        ("fd0", "source /dev/fd/0"),
        ("proc", ". /proc/self/fd/0"),
        ("var", "$SHELL"),
        ("xargs", "xargs -I{} sh -c {}"),
    ] {
        let (status, printed) = sh(
            &mount,
            &format!("printf '#terminalfs stdin\\n{program}\\n' > \"$M/ctl/{name}\""),
        );
        assert_eq!(status, Some(0), "{program}: {printed}");
        let stdin = format!("cmd/{name}/stdin");
        assert!(
            wait_until(PATIENCE, || mount.p(&stdin).exists()),
            "{program}: no stdin\n{}",
            mount.log()
        );
        // A denied command is not delivered: the write fails ...
        let made = mount.dir.path().join(format!("made-{name}"));
        let (status, printed) = sh(
            &mount,
            &format!("echo \"touch $T/made-{name}\" > \"$M/{stdin}\""),
        );
        assert_ne!(status, Some(0), "{program}: the denied write succeeded");
        assert!(printed.contains("Operation not permitted"), "{printed}");
        // ... while what is allowed is, and runs as commands (`source` runs its file
        // once it has read all of it: at the end of the input).
        let (status, printed) = sh(&mount, &format!("echo 'echo ran-{name}' > \"$M/{stdin}\""));
        assert_eq!(status, Some(0), "{program}: {printed}");
        mount.ok(&format!("rm \"$M/{stdin}\""));
        assert_eq!(mount.wait(name), "completed\n", "{program}");
        assert_eq!(
            mount.read(&format!("cmd/{name}/stdout")),
            format!("ran-{name}\n")
        );
        absent(&made);
    }
}

#[test]
fn a_program_that_may_be_a_shell_on_a_terminal_is_refused_at_the_write() {
    let mount = mount();
    for (name, program, why) in [
        ("var", "$SHELL", "'$SHELL' is known only when it runs"),
        ("bash", "$BASH", "'bash' is a shell"),
        ("braces", "${SHELL}", "'${SHELL}'"),
        ("subst", "$(echo sh)", "'$(...)'"),
        ("exe", "/proc/self/exe", "'/proc/self/exe' runs the shell"),
        ("src", "source /dev/stdin", "'source /dev/stdin'"),
        (
            "script",
            "script -q /dev/null",
            "'script -q /dev/null' starts a shell",
        ),
        (
            "tmx",
            "exec tmux -L tfs-refused -f /dev/null",
            "'tmux -L tfs-refused -f /dev/null' is a terminal multiplexer",
        ),
        ("scr", "screen -S tfs-refused", "'screen -S tfs-refused'"),
        (
            "ssh",
            "ssh localhost",
            "'ssh localhost' starts a login shell",
        ),
    ] {
        let (status, printed) = sh(
            &mount,
            &format!("printf '#terminalfs tty\\n{program}\\n' > \"$M/ctl/{name}\""),
        );
        assert_ne!(status, Some(0), "{program}: the write succeeded");
        assert!(printed.contains("Operation not permitted"), "{printed}");
        let reason = denied(&mount, name);
        assert!(reason.contains(why), "{program}: {reason}");
        assert!(reason.contains("cannot be checked"), "{program}: {reason}");
        // Nothing runs, so there are no keys to type into it.
        assert!(!mount.p(&format!("cmd/{name}/keys")).exists());
        // `check` makes the same decision.
        let text = format!("#terminalfs tty\n{program}");
        let out = run_binary(&[&"check", &"--settings", &mount.settings, &text]);
        let printed = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{program}: {printed}");
        assert!(printed.contains(why), "{program}: {printed}");
    }
}

#[test]
fn an_alias_for_a_denied_command_is_refused() {
    let mount = mount();
    let (status, printed) = sh(
        &mount,
        "printf 'shopt -s expand_aliases\\nalias t=touch\\nt '\"$T/made\"'\\n' > \"$M/ctl/d\"",
    );
    assert_ne!(status, Some(0), "the write succeeded: {printed}");
    let reason = denied(&mount, "d");
    assert!(reason.contains("Bash(touch:*)"), "{reason}");
    absent(&mount.dir.path().join("made"));
    // An alias for an allowed command runs.
    let text = "shopt -s expand_aliases\nalias say=echo\nsay hi";
    assert_eq!(mount.run("ok", text), "completed\n");
    let out = run_binary(&[&"check", &"--settings", &mount.settings, &text]);
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn a_complete_line_refused_fails_its_write() {
    let mount = mount();
    let (status, printed) = sh(&mount, "echo 'echo hi | bash' > \"$M/ctl/x\"");
    assert_ne!(status, Some(0), "echo into ctl/x succeeded: {printed}");
    assert!(printed.contains("Operation not permitted"), "{printed}");
    assert!(denied(&mount, "x").contains("Bash(bash -s)"));
    // A line a backslash joins to the next may still become something else.
    let (status, printed) = sh(
        &mount,
        "{ printf 'echo hi | bash \\\\\\n'; printf 'build.sh\\n'; } > \"$M/ctl/y\"",
    );
    assert_eq!(status, Some(0), "{printed}");
    assert_ne!(mount.wait("y"), "denied\n");
    assert_eq!(mount.read("cmd/y/command"), "echo hi | bash \\\nbuild.sh\n");
}

/// Prints `check`'s decision for `text` (given on standard input) and its exit code.
fn check(settings: &Path, text: &[u8]) -> (Option<i32>, String) {
    use std::io::Write;
    let mut child = std::process::Command::new(crate::common::BIN)
        .arg("check")
        .arg("--settings")
        .arg(settings)
        .arg("-")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text)
        .expect("write stdin");
    let out = child.wait_with_output().expect("the binary ends");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn check_prints_the_decision_the_mount_makes() {
    let mount = mount();
    for (name, text, why) in [
        ("tty", &b"#terminalfs tty\nbash"[..], "cannot be checked"),
        ("key", b"#terminalfs foo=1\necho x", "unknown key 'foo'"),
        ("nul", b"echo a\0sudo b", "NUL byte"),
        ("alias", b"alias t=touch\nt x", "Bash(touch:*)"),
    ] {
        let (code, printed) = check(&mount.settings, text);
        assert_eq!(code, Some(1), "{name}: {printed}");
        assert!(printed.starts_with("refused\n"), "{name}: {printed}");
        let line = printed
            .lines()
            .find_map(|line| line.strip_prefix("reason: "))
            .unwrap_or_else(|| panic!("{name}: no reason in {printed}"));
        assert!(line.contains(why), "{name}: {printed}");
        assert!(!printed.contains("sudo"), "{name}: {printed}");
        // The mount refuses it with the very same reason, at the write or at the close.
        use std::io::Write;
        let mut file = std::fs::File::create(mount.p(&format!("ctl/{name}"))).expect(name);
        let errno = match file.write_all(text) {
            Err(e) => {
                drop(file);
                e.raw_os_error()
            }
            Ok(()) => close_errno(file),
        };
        // A bad `#terminalfs` line reads wrong (EINVAL); the rest is refused (EPERM).
        let want = if name == "key" {
            libc::EINVAL
        } else {
            libc::EPERM
        };
        assert_eq!(errno, Some(want), "{name}: not refused");
        assert_eq!(denied(&mount, name).trim_end(), line, "{name}");
    }
    // A shell on a pipe runs, and `check` says its input is checked.
    let (code, printed) = check(&mount.settings, b"#terminalfs stdin\n$SHELL");
    assert_eq!(code, Some(0), "{printed}");
    assert!(
        printed.contains("input: checked against the rules as a shell's script"),
        "{printed}"
    );
}
