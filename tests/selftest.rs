//! `terminalfs selftest` against real mounts: it passes on a sound one, and fails,
//! saying which check and why, where something is wrong.

use crate::common::{run_binary, Mount, Options};

fn lines(out: &std::process::Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn selftest_passes_every_check_on_a_live_mount() {
    let mount = Mount::start();
    let out = run_binary(&[&"selftest", &"--path", &mount.path]);
    let lines = lines(&out);
    assert!(out.status.success(), "{lines:#?}\n{out:?}");
    let checks: Vec<&str> = lines
        .iter()
        .filter_map(|line| line.strip_prefix("ok    "))
        .map(|rest| rest.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(
        checks,
        [
            "run", "error", "order", "follow", "kill", "signal", "refusal", "index", "events",
            "expiry", "hosts"
        ],
        "{lines:#?}"
    );
    assert_eq!(
        lines.last().unwrap(),
        &format!("selftest: 11 passed, 0 failed at {}", mount.path.display())
    );
    // It cleans up after itself: nothing of its own is left under cmd/ or ctl/.
    for dir in ["cmd", "ctl"] {
        let left: Vec<String> = std::fs::read_dir(mount.p(dir))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name != "index.md")
            .collect();
        assert!(left.is_empty(), "{dir}/ still holds {left:?}");
    }
}

#[test]
fn selftest_fails_where_the_mount_misbehaves() {
    // A deny list that refuses `echo` breaks the checks that echo (run, error, follow, kill, signal) and the events
    // check, which looks for the run check's command.
    let mount = Mount::with(Options {
        args: vec!["--wait-timeout", "2s"],
        settings: r#"{"permissions": {"deny": ["Bash(echo:*)"]}}"#,
    });
    let out = run_binary(&[&"selftest", &"--path", &mount.path]);
    let lines = lines(&out);
    assert_eq!(out.status.code(), Some(1), "{lines:#?}");
    let run = lines
        .iter()
        .find(|l| l.starts_with("FAIL  run "))
        .expect("run fails");
    assert!(
        run.contains("`echo hello` was refused: denied by rule"),
        "{run}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with("ok    order ")),
        "{lines:#?}"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("selftest: 6 of 11 checks failed"),
        "{lines:#?}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn selftest_without_a_mount_says_so_once() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_binary(&[&"selftest", &"--path", &dir.path()]);
    let lines = lines(&out);
    assert_eq!(out.status.code(), Some(1), "{lines:#?}");
    assert_eq!(lines.len(), 2, "{lines:#?}");
    assert!(lines[0].starts_with("FAIL  mount "), "{lines:#?}");
    assert!(
        lines[0].contains("is terminalfs mounted there?"),
        "{lines:#?}"
    );
}
