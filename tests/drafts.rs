//! Drafts (SPEC 3): names, the decision at the last close, settle, renames, errors.

use crate::common::{close_errno, wait_until, Mount};
use std::time::{Duration, Instant};

fn errno_of(result: std::io::Result<()>) -> Option<i32> {
    result.err().and_then(|e| e.raw_os_error())
}

#[test]
fn a_command_starts_after_settle_or_at_once_when_looked_for() {
    let mount = Mount::with_args(&["--settle", "1500ms"]);
    let started = Instant::now();
    std::fs::write(mount.p("ctl/later"), "echo later").unwrap();
    // While settling it is still a draft in ctl/ (reporting its text as its size).
    assert!(mount.p("ctl/later").exists());
    // Nothing under cmd/ looked for it, so it starts on its own after the settle time.
    assert!(wait_until(Duration::from_secs(10), || !mount
        .p("ctl/later")
        .exists()));
    assert!(
        started.elapsed() >= Duration::from_millis(1400),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(mount.wait("later"), "completed\n");

    // Looking under cmd/ starts it at once, without waiting out the settle time (a
    // minute here, so that "at once" is far from it however busy the machine is).
    let mount = Mount::with_args(&["--settle", "60s"]);
    let started = Instant::now();
    let out = mount
        .ok("echo 'echo now' > \"$M/ctl/now\"; cat \"$M/cmd/now/wait\"; cat \"$M/cmd/now/stdout\"");
    assert_eq!(out, "completed\nnow\n");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    // A listing of cmd/ does it too.
    std::fs::write(mount.p("ctl/listed"), "true").unwrap();
    assert!(mount.ok("ls \"$M/cmd\"").contains("listed"));
    // So does reading cmd/index.md.
    std::fs::write(mount.p("ctl/indexed"), "true").unwrap();
    assert!(mount.read("cmd/index.md").contains("[indexed]"));
}

#[test]
fn the_command_is_decided_at_the_last_close_not_a_flush() {
    let mount = Mount::start();
    // Two processes write through one inherited descriptor; the first close (from the
    // child `sleep`) must not decide the command.
    mount.ok("( echo 'echo one'; sh -c 'sleep 0.3'; echo 'echo two' ) > \"$M/ctl/both\"");
    assert_eq!(mount.wait("both"), "completed\n");
    assert_eq!(mount.read("cmd/both/command"), "echo one\necho two\n");
    assert_eq!(mount.read("cmd/both/stdout"), "one\ntwo\n");

    // Create now, write later: an empty close decides nothing.
    mount.ok("touch \"$M/ctl/empty-first\"");
    assert!(mount.p("ctl/empty-first").exists());
    assert!(!mount.p("cmd/empty-first").exists());
    mount.ok("echo 'echo filled' > \"$M/ctl/empty-first\"");
    assert_eq!(mount.wait("empty-first"), "completed\n");
    assert_eq!(mount.read("cmd/empty-first/stdout"), "filled\n");

    // A heredoc works like any write.
    mount.ok("cat > \"$M/ctl/heredoc\" <<'EOF'\nx=4\necho \"x is $x\"\nEOF");
    assert_eq!(mount.wait("heredoc"), "completed\n");
    assert_eq!(mount.read("cmd/heredoc/stdout"), "x is 4\n");
}

#[test]
fn rename_moves_a_draft_and_runs_it_under_the_new_name_only() {
    let mount = Mount::with_args(&["--settle", "1s"]);
    mount.ok(
        "echo 'echo renamed' > \"$M/ctl/build.tmp\" && mv \"$M/ctl/build.tmp\" \"$M/ctl/build\"",
    );
    assert_eq!(mount.wait("build"), "completed\n");
    assert_eq!(mount.read("cmd/build/stdout"), "renamed\n");
    assert!(!mount.p("cmd/build.tmp").exists());
    assert!(!mount.p("ctl/build.tmp").exists());
    assert!(!mount.read("cmd/index.md").contains("build.tmp"));

    std::fs::write(mount.p("ctl/a.tmp"), "true").unwrap();
    // Onto a taken name (a command that ran): EEXIST.
    let onto = std::fs::rename(mount.p("ctl/a.tmp"), mount.p("ctl/build"));
    assert_eq!(onto.unwrap_err().raw_os_error(), Some(libc::EEXIST));
    // Out of ctl/: EXDEV (mv then falls back to copying, which fails too).
    let out = std::fs::rename(mount.p("ctl/a.tmp"), mount.dir.path().join("outside"));
    assert_eq!(out.unwrap_err().raw_os_error(), Some(libc::EXDEV));
    // To or from index.md: EPERM.
    let to_index = std::fs::rename(mount.p("ctl/a.tmp"), mount.p("ctl/index.md"));
    assert_eq!(to_index.unwrap_err().raw_os_error(), Some(libc::EPERM));
    let from_index = std::fs::rename(mount.p("ctl/index.md"), mount.p("ctl/x"));
    assert_eq!(from_index.unwrap_err().raw_os_error(), Some(libc::EPERM));
    // To a bad name: EINVAL.
    let bad = std::fs::rename(mount.p("ctl/a.tmp"), mount.p("ctl/.a b"));
    assert_eq!(bad.unwrap_err().raw_os_error(), Some(libc::EINVAL));
}

#[test]
fn a_draft_under_a_tmp_name_runs_only_once_renamed_however_late() {
    let mount = Mount::with_args(&["--settle", "0ms"]);
    std::fs::write(mount.p("ctl/late.tmp"), "echo ran late").unwrap();
    // Looking for it would start any other draft at once; this one stays a draft.
    let looked = std::fs::read_to_string(mount.p("cmd/late.tmp/wait")).map(|_| ());
    assert_eq!(errno_of(looked), Some(libc::ENOENT));
    let listed: Vec<String> = std::fs::read_dir(mount.p("cmd"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!listed.contains(&"late.tmp".to_string()), "{listed:?}");
    assert!(mount.p("ctl/late.tmp").exists());
    mount.ok("mv \"$M/ctl/late.tmp\" \"$M/ctl/late\"");
    assert_eq!(mount.wait("late"), "completed\n");
    assert_eq!(mount.read("cmd/late/stdout"), "ran late\n");
    assert!(!mount.p("cmd/late.tmp").exists());
    assert!(!mount.read("cmd/index.md").contains("late.tmp"));
}

#[test]
fn names_and_sizes_are_checked() {
    let mount = Mount::start();
    let long_hidden = format!(".{}", "n".repeat(64));
    for bad in [
        ".a b",
        "a b",
        "semi;colon",
        "caf\u{e9}",
        &"n".repeat(65),
        &long_hidden,
    ] {
        let result = std::fs::write(mount.p(&format!("ctl/{bad}")), "true");
        assert_eq!(errno_of(result), Some(libc::EINVAL), "{bad:?}");
    }
    assert!(mount.run(&"n".repeat(64), "true").starts_with("completed"));
    // index.md is reserved: the page is read-only.
    assert_eq!(
        errno_of(std::fs::write(mount.p("ctl/index.md"), "true")),
        Some(libc::EACCES)
    );
    // A name runs once.
    mount.run("once", "true");
    assert_eq!(
        errno_of(std::fs::write(mount.p("ctl/once"), "true")),
        Some(libc::EEXIST)
    );
    // A second creator of a name being written: EEXIST.
    let first = std::fs::File::create(mount.p("ctl/held")).unwrap();
    let second = std::fs::OpenOptions::new()
        .write(true)
        .open(mount.p("ctl/held"));
    assert_eq!(second.unwrap_err().raw_os_error(), Some(libc::EEXIST));
    let exclusive = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(mount.p("ctl/held"));
    assert_eq!(exclusive.unwrap_err().raw_os_error(), Some(libc::EEXIST));
    drop(first);
    // More than 1 MiB: EFBIG, and the command does not run.
    let big = vec![b'#'; (1 << 20) + 1];
    assert_eq!(
        errno_of(std::fs::write(mount.p("ctl/big"), &big)),
        Some(libc::EFBIG)
    );
    // Exactly 1 MiB is fine.
    let mut ok = vec![b'#'; 1 << 20];
    ok[0] = b't';
    ok[1] = b'r';
    ok[2] = b'u';
    ok[3] = b'e';
    ok[4] = b'\n';
    std::fs::write(mount.p("ctl/onemeg"), &ok).unwrap();
    assert_eq!(mount.wait("onemeg"), "completed\n");
    // Directories cannot be made, and nothing can be created outside ctl/.
    assert_eq!(
        std::fs::create_dir(mount.p("ctl/dir"))
            .unwrap_err()
            .raw_os_error(),
        Some(libc::EPERM)
    );
    assert_eq!(
        errno_of(std::fs::write(mount.p("cmd/direct"), "true")),
        Some(libc::EACCES)
    );
}

#[test]
fn rm_gives_a_draft_back_and_whitespace_is_refused() {
    let mount = Mount::start();
    mount.ok("touch \"$M/ctl/undo\" && rm \"$M/ctl/undo\"");
    assert!(!mount.p("ctl/undo").exists());
    // The name is free again.
    assert_eq!(mount.run("undo", "echo back"), "completed\n");

    // Its close fails, as for any text the decision refuses (a shell ignores an
    // error from closing a redirect, so the close is made here).
    use std::io::Write;
    let mut file = std::fs::File::create(mount.p("ctl/blank")).unwrap();
    file.write_all(b"  \n\t\n").expect("blanks may be written");
    assert_eq!(close_errno(file), Some(libc::EPERM));
    assert!(wait_until(Duration::from_secs(5), || mount
        .p("cmd/blank/status")
        .exists()));
    assert_eq!(mount.read("cmd/blank/status"), "denied\n");
    let reason = mount.read("cmd/blank/reason");
    assert!(reason.contains("no command"), "{reason}");
    // A shell's redirect still works: it closes the empty draft before it writes.
    mount.ok("echo 'echo fine' > \"$M/ctl/after\"");
    assert_eq!(mount.read("cmd/after/wait"), "completed\n");
}

#[test]
fn an_abandoned_draft_is_freed_after_keep() {
    let mount = Mount::with_args(&["--keep", "1s"]);
    mount.ok("touch \"$M/ctl/forgotten\"");
    assert!(mount.p("ctl/forgotten").exists());
    assert!(wait_until(Duration::from_secs(10), || !mount
        .p("ctl/forgotten")
        .exists()));
}

#[test]
fn write_then_read_never_misses() {
    let mount = Mount::start();
    let out = mount.ok("i=0; bad=0\n\
         while [ $i -lt 500 ]; do\n\
           echo \"exit $((i % 7))\" > \"$M/ctl/r$i\"\n\
           got=\n\
           if [ $((i % 2)) = 0 ]; then\n\
             got=$(cat \"$M/cmd/r$i/wait\") || { echo \"missing r$i\"; bad=$((bad+1)); }\n\
           else\n\
             # The shell's own read: no fork between the close and the lookup.\n\
             read -r got < \"$M/cmd/r$i/wait\" || { echo \"missing r$i\"; bad=$((bad+1)); }\n\
           fi\n\
           code=$(cat \"$M/cmd/r$i/exitcode\")\n\
           [ \"$code\" = \"$((i % 7))\" ] || { echo \"r$i: wrong code $code\"; bad=$((bad+1)); }\n\
           if [ $((i % 7)) = 0 ]; then want=completed; else want=error; fi\n\
           [ $got = $want ] || { echo \"r$i: wait said $got\"; bad=$((bad+1)); }\n\
           i=$((i+1))\n\
         done\n\
         echo \"bad=$bad\"");
    assert!(out.ends_with("bad=0\n"), "{out}");
    // The same from threads that close and look in the same breath (no fork between),
    // several at once so that a lookup can reach the driver before the RELEASE of the
    // close just before it.
    std::thread::scope(|scope| {
        for t in 0..4 {
            let mount = &mount;
            scope.spawn(move || {
                for i in 0..250 {
                    let name = format!("q{t}-{i}");
                    let text = format!("exit {}", i % 7);
                    std::fs::write(mount.p(&format!("ctl/{name}")), text).unwrap();
                    let got = std::fs::read_to_string(mount.p(&format!("cmd/{name}/wait")))
                        .unwrap_or_else(|e| panic!("{name}: {e}"));
                    let want = if i % 7 == 0 { "completed\n" } else { "error\n" };
                    assert_eq!(got, want, "{name}");
                }
            });
        }
    });
}

#[test]
fn a_bad_directive_fails_the_write_that_completes_its_line() {
    use std::io::Write;
    use std::os::fd::IntoRawFd;
    let mount = Mount::start();
    // A shell ignores errors of the close: the redirect must fail at the write.
    let out = mount.sh("echo '#terminalfs colour=x' > $M/ctl/echoed; echo \"rc=$?\"
         cat > $M/ctl/heredoc <<'EOF'
#terminalfs timeout=10x
touch ran-heredoc
EOF
         echo \"rc=$?\"");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stdout, "rc=1\nrc=1\n", "{stderr}");
    assert_eq!(stderr.matches("Invalid argument").count(), 2, "{stderr}");
    for (name, needle) in [("echoed", "'colour'"), ("heredoc", "timeout=10x")] {
        assert_eq!(mount.read(&format!("cmd/{name}/status")), "denied\n");
        let reason = mount.read(&format!("cmd/{name}/reason"));
        assert!(reason.contains(needle), "{name}: {reason}");
    }
    assert!(!mount.dir.path().join("ran-heredoc").exists());

    // A line is judged once it is complete: a good one split across writes passes,
    // and of two lines only the write that completes the bad one fails.
    let mut file = std::fs::File::create(mount.p("ctl/split")).unwrap();
    file.write_all(b"#terminalfs time").unwrap();
    file.write_all(b"out=1m\n#terminalfs keep=1h\n").unwrap();
    let refused = file.write_all(b"#terminalfs colour=red\n").unwrap_err();
    assert_eq!(refused.raw_os_error(), Some(libc::EINVAL));
    drop(file);
    let reason = mount.read("cmd/split/reason");
    assert!(reason.contains("colour"), "{reason}");

    // Without a newline at the end, the close judges the last line.
    let mut file = std::fs::File::create(mount.p("ctl/unended")).unwrap();
    file.write_all(b"#terminalfs memory=lots").unwrap();
    // SAFETY: the descriptor was just taken from the file and is closed once, here.
    let closed = unsafe { libc::close(file.into_raw_fd()) };
    assert_eq!(closed, -1);
    assert_eq!(
        std::io::Error::last_os_error().raw_os_error(),
        Some(libc::EINVAL)
    );
    assert_eq!(mount.read("cmd/unended/status"), "denied\n");
}

#[test]
fn refused_names_leave_their_reason_in_ctl_index() {
    let mount = Mount::start();
    mount.run("build", "true");
    for (name, errno) in [(".a b", libc::EINVAL), ("build", libc::EEXIST)] {
        let refused = std::fs::write(mount.p(&format!("ctl/{name}")), "true");
        assert_eq!(errno_of(refused), Some(errno), "{name}");
    }
    let page = mount.read("ctl/index.md");
    let listed: Vec<&str> = page
        .lines()
        .skip_while(|line| *line != "## Refused lately")
        .filter_map(|line| line.strip_prefix("- 20"))
        .map(|line| line.split_once(' ').unwrap().1)
        .collect();
    assert_eq!(
        listed,
        [
            "`build`: `build` already exists: `rm -r cmd/build` to reuse the name",
            "`.a b`: a command name is 1 to 64 of A-Z a-z 0-9 _ . - and does not start \
             with a dot (a hidden draft, which runs only once renamed, is a dot and 1 to 63 \
             of them)",
        ],
        "{page}"
    );
}

#[test]
fn refused_renames_leave_their_reason_in_ctl_index() {
    // A long settle keeps the draft a draft however slow the machine is.
    let mount = Mount::with_args(&["--settle", "10m"]);
    mount.run("late", "true");
    // A draft renamed onto a command's name, and onto a name no command can have.
    let taken = mount.sh("printf true > \"$M/ctl/a.tmp\" && mv \"$M/ctl/a.tmp\" \"$M/ctl/late\"");
    assert!(!taken.status.success());
    let bad = std::fs::rename(mount.p("ctl/a.tmp"), mount.p("ctl/.a b"));
    assert_eq!(errno_of(bad), Some(libc::EINVAL));
    let page = mount.read("ctl/index.md");
    let mut listed: Vec<&str> = page
        .lines()
        .skip_while(|line| *line != "## Refused lately")
        .filter_map(|line| line.strip_prefix("- 20"))
        .map(|line| line.split_once(' ').unwrap().1)
        .collect();
    // mv may try the same rename twice (renameat2, then rename).
    listed.dedup();
    assert_eq!(
        listed,
        [
            "`a.tmp -> .a b`: a command name is 1 to 64 of A-Z a-z 0-9 _ . - and does not \
             start with a dot (a hidden draft, which runs only once renamed, is a dot and 1 \
             to 63 of them)",
            "`a.tmp -> late`: `late` is taken by a draft or a command",
        ],
        "{page}"
    );
}

/// Runs `script` with `$M` set; fails unless it exits 0 with nothing on stderr.
fn quietly(mount: &Mount, script: &str) {
    let out = mount.sh(script);
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{script}: {out:?}\n{}",
        mount.log()
    );
}

#[test]
fn mv_cp_p_and_install_into_ctl_are_quiet() {
    let mount = Mount::start();
    let outside = mount.dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    for name in ["moved", "copied", "installed"] {
        std::fs::write(outside.join(name), format!("echo {name}\n")).unwrap();
    }
    // Another filesystem: mv copies, then sets mode, owner and times on the copy.
    quietly(
        &mount,
        &format!(
            "chmod 755 {0}/moved && mv {0}/moved $M/ctl/moved",
            outside.display()
        ),
    );
    quietly(
        &mount,
        &format!("cp -p {}/copied $M/ctl/copied", outside.display()),
    );
    quietly(
        &mount,
        &format!(
            "install -m 755 {}/installed $M/ctl/installed",
            outside.display()
        ),
    );
    for name in ["moved", "copied", "installed"] {
        assert_eq!(mount.wait(name), "completed\n", "{name}");
        assert_eq!(
            mount.read(&format!("cmd/{name}/stdout")),
            format!("{name}\n")
        );
    }
    assert!(!outside.join("moved").exists(), "mv took the source away");
    // A chmod of a draft is taken; anywhere else it is still refused.
    quietly(
        &mount,
        "exec 3> $M/ctl/held; chmod 700 $M/ctl/held; echo 'echo held' >&3",
    );
    assert_eq!(mount.wait("held"), "completed\n");
    let out = mount.sh("chmod 777 $M/cmd/held/stdout");
    assert!(!out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("Operation not permitted"));
}

#[test]
fn an_atomic_save_through_a_hidden_file_runs_once_under_its_final_name() {
    let mount = Mount::start();
    // As an editor or a write tool saves: mkstemp beside the target, write, rename.
    let script = r#"
import os, sys, tempfile
ctl = os.path.join(sys.argv[1], "ctl")
fd, tmp = tempfile.mkstemp(dir=ctl, prefix=".x")
os.write(fd, b"echo saved\n")
os.close(fd)
print(os.path.basename(tmp))
os.replace(tmp, os.path.join(ctl, "saved"))
"#;
    let out = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(&mount.path)
        .output()
        .expect("python3 runs");
    assert!(out.status.success() && out.stderr.is_empty(), "{out:?}");
    let hidden = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(hidden.starts_with(".x"), "{hidden}");
    assert_eq!(mount.wait("saved"), "completed\n");
    assert_eq!(mount.read("cmd/saved/stdout"), "saved\n");
    assert!(!mount.p(&format!("cmd/{hidden}")).exists());
    assert!(!mount.p(&format!("ctl/{hidden}")).exists());

    // With the shell's tools: a hidden draft waits, listed as such, until `mv` names it.
    quietly(&mount, "echo 'echo moved' > $M/ctl/.draft");
    let index = mount.read("ctl/index.md");
    assert!(
        index.contains("- `.draft`: hidden draft: runs once renamed"),
        "{index}"
    );
    let listing = mount.ok("ls $M/cmd");
    assert!(!listing.contains("draft"), "{listing}");
    assert!(mount.p("ctl/.draft").exists(), "it never runs as .draft");
    quietly(&mount, "mv $M/ctl/.draft $M/ctl/moved");
    assert_eq!(mount.wait("moved"), "completed\n");
    assert_eq!(mount.read("cmd/moved/stdout"), "moved\n");
    // A bad hidden name is still refused.
    let out = mount.sh("echo x > \"$M/ctl/.a b\"");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Invalid argument"),
        "{out:?}"
    );
}

#[test]
fn a_hidden_draft_never_renamed_is_freed_after_keep() {
    let mount = Mount::with_args(&["--keep", "1"]);
    quietly(&mount, "echo 'touch ran' > $M/ctl/.forgotten");
    assert!(
        wait_until(Duration::from_secs(20), || !mount
            .p("ctl/.forgotten")
            .exists()),
        "never freed"
    );
    let index = mount.read("ctl/index.md");
    assert!(
        index.contains("`.forgotten`: freed after --keep"),
        "{index}"
    );
    assert!(!mount.dir.path().join("ran").exists());
}

#[test]
fn a_terminalfs_line_after_the_command_began_refuses_it_with_a_sentence() {
    let mount = Mount::start();
    let cwd = mount.dir.path();
    // The write that completes the late line fails: nothing runs, `reason` says why.
    let written = std::fs::write(
        mount.p("ctl/late"),
        "touch first\n#terminalfs timeout=2s\nsleep 5\n",
    );
    assert_eq!(errno_of(written), Some(libc::EINVAL));
    assert_eq!(mount.read("cmd/late/status"), "denied\n");
    let reason = mount.read("cmd/late/reason");
    assert!(
        reason.contains("after the command has begun (line 2: '#terminalfs timeout=2s')"),
        "{reason}"
    );
    assert!(!cwd.join("first").exists());
    // A heredoc's body is data, not a comment: it runs.
    let text = "cat <<'X'\n#terminalfs keep=1s\nX\n";
    assert_eq!(mount.run("heredoc", text), "completed\n");
    assert_eq!(mount.read("cmd/heredoc/stdout"), "#terminalfs keep=1s\n");
    // An unknown key refuses too, at the write, with a sentence.
    let written = std::fs::write(mount.p("ctl/colour"), "#terminalfs colour=red\ntrue\n");
    assert_eq!(errno_of(written), Some(libc::EINVAL));
    assert!(mount
        .read("cmd/colour/reason")
        .contains("unknown key 'colour'"));
}

#[test]
fn a_cwd_directive_says_where_a_command_starts() {
    let mount = Mount::start();
    let base = mount.dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(base.join("sub/deeper")).unwrap();
    assert_eq!(
        mount.run("relative", "#terminalfs cwd=sub/deeper\npwd"),
        "completed\n"
    );
    assert_eq!(
        mount.read("cmd/relative/stdout"),
        format!("{}\n", base.join("sub/deeper").display())
    );
    let result: serde_json::Value =
        serde_json::from_str(&mount.read("cmd/relative/result.json")).unwrap();
    assert_eq!(result["cwd"], base.join("sub/deeper").display().to_string());
    // The audit log names the directory it ran in too.
    let audit = mount.state.join("terminalfs/audit.jsonl");
    let mut ran = serde_json::Value::Null;
    assert!(wait_until(Duration::from_secs(10), || {
        let text = std::fs::read_to_string(&audit).unwrap_or_default();
        ran = text
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .find(|entry| entry["name"] == "relative")
            .unwrap_or_default();
        !ran.is_null()
    }));
    assert_eq!(ran["cwd"], base.join("sub/deeper").display().to_string());
    assert_eq!(mount.run("rooted", "#terminalfs cwd=/\npwd"), "completed\n");
    assert_eq!(mount.read("cmd/rooted/stdout"), "/\n");
    // Without it, commands start in --cwd.
    assert_eq!(mount.run("plain", "pwd"), "completed\n");
    assert_eq!(
        mount.read("cmd/plain/stdout"),
        format!("{}\n", base.display())
    );
    // A directory that is not there refuses the command with a sentence.
    let written = std::fs::write(mount.p("ctl/nowhere"), "#terminalfs cwd=missing\ntouch ran");
    assert_eq!(errno_of(written), Some(libc::EINVAL));
    let reason = mount.read("cmd/nowhere/reason");
    assert!(
        reason.contains("cwd=missing names no directory"),
        "{reason}"
    );
    assert!(!base.join("ran").exists());
}

#[test]
fn the_deny_list_judges_paths_from_the_directory_a_cwd_directive_names() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().canonicalize().unwrap().join("victim");
    std::fs::create_dir(&victim).unwrap();
    std::fs::write(victim.join("kept"), "").unwrap();
    let settings = format!(
        r#"{{"permissions": {{"deny": ["Bash(rm -r {}/[*])"]}}}}"#,
        victim.display()
    );
    let mount = Mount::with(crate::common::Options {
        settings: &settings,
        ..Default::default()
    });
    let text = format!("#terminalfs cwd={}\nrm -rf *\n", victim.display());
    let written = std::fs::write(mount.p("ctl/wipe"), text);
    assert_eq!(errno_of(written), Some(libc::EPERM));
    assert_eq!(mount.read("cmd/wipe/status"), "denied\n");
    let reason = mount.read("cmd/wipe/reason");
    assert!(reason.contains("judged as"), "{reason}");
    assert!(victim.join("kept").exists());
}

#[test]
fn every_refusal_at_ctl_is_one_line_of_the_default_log_and_listed_on_the_index() {
    let mount = Mount::with(crate::common::Options {
        settings: r#"{"permissions": {"deny": ["Bash(sudo:*)"]}}"#,
        ..Default::default()
    });
    mount.run("taken", "true");
    let results = [
        errno_of(std::fs::write(mount.p("ctl/bad name"), "true")),
        errno_of(std::fs::write(mount.p("ctl/taken"), "true")),
        errno_of(std::fs::write(mount.p("ctl/root"), "sudo id\n")),
        errno_of(std::fs::write(
            mount.p("ctl/late"),
            "true\n#terminalfs keep=1s\n",
        )),
    ];
    assert_eq!(
        results,
        [
            Some(libc::EINVAL),
            Some(libc::EEXIST),
            Some(libc::EPERM),
            Some(libc::EINVAL)
        ]
    );
    std::fs::write(mount.p("ctl/a.tmp"), "true").unwrap();
    let renamed = std::fs::rename(mount.p("ctl/a.tmp"), mount.p("ctl/taken"));
    assert_eq!(errno_of(renamed), Some(libc::EEXIST));
    let lines = [
        "a command name is 1 to 64",
        "`taken` already exists",
        "refused ctl/root: denied by rule 'Bash(sudo:*)'",
        "refused ctl/late: refused: a #terminalfs line after the command has begun",
        "`taken` is taken by a draft or a command",
    ];
    for line in lines {
        mount.wait_for_log(line);
    }
    // Each once, though each failed a write and then a close.
    let log = mount.log();
    for line in &lines[..4] {
        assert_eq!(log.matches(line).count(), 1, "{line}:\n{log}");
    }
    let index = mount.read("ctl/index.md");
    for listed in [
        "`bad name`: a command name",
        "`taken`: `taken` already exists",
        "`root`: denied by rule 'Bash(sudo:*)'",
        "`late`: refused: a #terminalfs line",
        "`a.tmp -> taken`: `taken` is taken",
    ] {
        assert!(index.contains(listed), "{listed}:\n{index}");
    }
}
