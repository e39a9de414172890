//! Tests of the connections' pieces that run without a remote host: quoting, the
//! wrapper's private files, the signal script.

use super::*;

#[test]
fn quoting_survives_a_shell() {
    let text = b"it's \"$HOME\" `x` \\ \n done";
    let mut script = b"printf %s ".to_vec();
    script.extend(quote(text));
    let out = Command::new("sh")
        .arg("-c")
        .arg(OsString::from_vec(script))
        .output()
        .expect("sh runs");
    assert_eq!(out.stdout, text);
}

/// Runs the wrapper here as the far side would, its private directory under `runtime`.
fn wrapper(runtime: &Path, token: &str, text: &str) -> std::process::Output {
    Command::new("sh")
        .args(["-c", WRAPPER, "terminalfs", token, "w", "sh", "", text])
        .env("XDG_RUNTIME_DIR", runtime)
        .stdin(Stdio::null())
        .output()
        .expect("sh runs")
}

#[test]
fn the_wrapper_keeps_its_files_private_and_never_reuses_one() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let out = wrapper(dir.path(), "tok1", "echo ran");
    assert_eq!(out.stdout, b"ran\n", "{out:?}");
    let private = dir.path().join("terminalfs");
    let mode = std::fs::metadata(&private).expect("made").mode() & 0o777;
    assert_eq!(mode, 0o700);
    assert!(!private.join("tok1").exists(), "the group file is removed");
    assert!(private.join("tok1.t").exists(), "the times are left");

    // A file already there (here naming every process) is never written or used.
    std::fs::write(private.join("tok2"), "1\n").expect("write");
    let out = wrapper(dir.path(), "tok2", "echo ran");
    assert_eq!(out.status.code(), Some(126), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    assert_eq!(std::fs::read(private.join("tok2")).expect("read"), b"1\n");

    // A directory reached through a symbolic link is refused.
    let other = tempfile::tempdir().expect("temporary directory");
    std::fs::create_dir(other.path().join("real")).expect("mkdir");
    std::os::unix::fs::symlink(other.path().join("real"), other.path().join("terminalfs"))
        .expect("symlink");
    let out = wrapper(other.path(), "tok3", "echo ran");
    assert_eq!(out.status.code(), Some(126), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a directory of this user"));
}

/// In a new pid namespace the wrapper's parent is pid 1, as under `kubectl exec`:
/// in stdin-pipe mode it then starts no watcher, so the command is its only child.
#[cfg(target_os = "linux")]
#[test]
fn a_wrapper_whose_parent_is_init_watches_no_parent() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let out = Command::new("unshare")
        .args([
            "--user",
            "--map-root-user",
            "--pid",
            "--fork",
            "--mount-proc",
        ])
        .args(["sh", "-c", "sh -c \"$0\" terminalfs tok i sh '' \"$1\""])
        .args([WRAPPER, "ps -o args= --ppid $PPID"])
        .env("XDG_RUNTIME_DIR", dir.path())
        .stdin(Stdio::null())
        .output()
        .expect("unshare (util-linux) runs");
    assert!(
        out.status.success(),
        "a pid namespace could not be made: {out:?}"
    );
    let children = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        children.lines().collect::<Vec<_>>(),
        ["sh -c ps -o args= --ppid $PPID"]
    );
}

#[test]
fn the_signal_script_sends_nothing_to_a_group_that_is_not_one() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let private = dir.path().join("terminalfs");
    std::fs::create_dir(&private).expect("mkdir");
    for bad in ["1", "0", "-1", "1 2", "x"] {
        std::fs::write(private.join("tok"), bad).expect("write");
        // `kill` is shadowed so that a call would be seen, never sent.
        let script = format!("kill() {{ echo \"kill $*\"; }}\n{SIGNAL}");
        let out = Command::new("sh")
            .args(["-c", &script, "tok", "TERM"])
            .env("XDG_RUNTIME_DIR", dir.path())
            .output()
            .expect("sh runs");
        assert_eq!(out.status.code(), Some(1), "{bad}: {out:?}");
        assert!(out.stdout.is_empty(), "{bad}: {out:?}");
    }
    std::fs::write(private.join("tok"), "4242\n").expect("write");
    let script = format!("kill() {{ echo \"kill $*\"; }}\n{SIGNAL}");
    let out = Command::new("sh")
        .args(["-c", &script, "tok", "TERM"])
        .env("XDG_RUNTIME_DIR", dir.path())
        .output()
        .expect("sh runs");
    assert_eq!(out.stdout, b"kill -s TERM -- -4242\n", "{out:?}");
}
