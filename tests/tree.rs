//! The tree and its pages (SPEC 1–2): listings in every state, sizes, owners, pages.

use crate::common::{until_exists, wait_until, Mount, Options};
use std::os::unix::fs::MetadataExt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn ls(mount: &Mount, dir: &str) -> Vec<String> {
    let out = mount.ok(&format!("ls -A \"$M/{dir}\""));
    out.lines().map(str::to_string).collect()
}

#[test]
fn listings_show_state() {
    let mount = Mount::with(Options {
        settings: r#"{"permissions": {"deny": ["Bash(sudo:*)"]}}"#,
        ..Options::default()
    });
    assert_eq!(
        ls(&mount, ""),
        ["cmd", "ctl", "events", "index.md", "skills"]
    );
    assert_eq!(ls(&mount, "ctl"), ["index.md"]);
    assert_eq!(ls(&mount, "cmd"), ["index.md"]);
    assert_eq!(ls(&mount, "skills"), ["index.md", "terminalfs"]);
    assert_eq!(ls(&mount, "skills/terminalfs"), ["SKILL.md", "index.md"]);

    std::fs::write(mount.p("ctl/sleeper"), "sleep 300").unwrap();
    assert_eq!(ls(&mount, "cmd"), ["index.md", "sleeper"]);
    assert_eq!(
        ls(&mount, "cmd/sleeper"),
        [
            "command",
            "follow",
            "kill",
            "output",
            "pid",
            "result.json",
            "status",
            "stderr",
            "stdout",
            "wait"
        ]
    );
    assert_eq!(mount.read("cmd/sleeper/status"), "running\n");

    assert_eq!(mount.run("done", "exit 3"), "error\n");
    assert_eq!(
        ls(&mount, "cmd/done"),
        [
            "command",
            "exitcode",
            "follow",
            "output",
            "result.json",
            "status",
            "stderr",
            "stdout",
            "wait"
        ]
    );
    assert_eq!(mount.read("cmd/done/exitcode"), "3\n");
    assert_eq!(mount.read("cmd/done/status"), "error\n");

    let refused = std::fs::write(mount.p("ctl/nope"), "sudo reboot");
    assert_eq!(refused.unwrap_err().raw_os_error(), Some(libc::EPERM));
    assert!(wait_until(Duration::from_secs(5), || mount
        .p("cmd/nope")
        .exists()));
    assert_eq!(ls(&mount, "cmd/nope"), ["command", "reason", "status"]);
    assert_eq!(mount.read("cmd/nope/status"), "denied\n");
    assert_eq!(mount.read("cmd/nope/command"), "sudo reboot");
    let reason = mount.read("cmd/nope/reason");
    assert!(reason.contains("Bash(sudo:*)"), "{reason}");
    assert!(
        reason.contains(&mount.settings.display().to_string()),
        "{reason}"
    );
}

#[test]
fn sizes_equal_the_bytes_a_read_returns_and_owner_is_the_user() {
    let mount = Mount::start();
    mount.run("sized", "printf 'out\\n'; printf 'err!\\n' >&2; exit 1");
    std::fs::write(mount.p("ctl/live"), "echo started; sleep 300").unwrap();
    assert!(wait_until(Duration::from_secs(5), || mount
        .read("cmd/live/stdout")
        == "started\n"));
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let files = [
        "index.md",
        "ctl/index.md",
        "cmd/index.md",
        "skills/index.md",
        "skills/terminalfs/index.md",
        "skills/terminalfs/SKILL.md",
        "cmd/sized/command",
        "cmd/sized/status",
        "cmd/sized/exitcode",
        "cmd/sized/stdout",
        "cmd/sized/stderr",
        "cmd/sized/output",
        "cmd/sized/result.json",
        "cmd/live/pid",
        "cmd/live/status",
        "cmd/live/stdout",
    ];
    for file in files {
        let path = mount.p(file);
        // A page may change between the stat and the read (`cmd/index.md` shows how long
        // a running command has run, `9.9s` then `10s`): the size must equal what a read
        // returns at some try, which a size computed wrongly never does.
        let (meta, bytes) = (0..10)
            .map(|_| {
                (
                    std::fs::metadata(&path).unwrap(),
                    std::fs::read(&path).unwrap(),
                )
            })
            .find(|(meta, bytes)| meta.len() == bytes.len() as u64)
            .unwrap_or_else(|| panic!("{file}: its size never equals what a read returns"));
        assert_eq!(meta.len(), bytes.len() as u64, "{file}");
        assert_eq!(meta.uid(), uid, "{file}");
        assert_eq!(meta.mode() & 0o077, 0, "{file} is readable by others");
    }
    // Sizes as seen through `wc -c` (which uses the size) and `cat | wc -c` agree.
    let out = mount.ok("wc -c < \"$M/cmd/sized/stderr\"; cat \"$M/cmd/sized/stderr\" | wc -c");
    assert_eq!(out, "5\n5\n");
    for file in ["cmd/live/wait", "cmd/live/follow", "cmd/live/kill"] {
        assert_eq!(std::fs::metadata(mount.p(file)).unwrap().len(), 0, "{file}");
    }
    // Writable: ctl drafts and kill; everything else read-only.
    let kill_mode = std::fs::metadata(mount.p("cmd/live/kill")).unwrap().mode();
    assert_eq!(kill_mode & 0o777, 0o200);
    let page = std::fs::write(mount.p("index.md"), "x").unwrap_err();
    assert_eq!(page.raw_os_error(), Some(libc::EACCES));
    let status = std::fs::write(mount.p("cmd/sized/status"), "x").unwrap_err();
    assert_eq!(status.raw_os_error(), Some(libc::EACCES));
}

fn frontmatter(page: &str) -> Vec<(String, String)> {
    let body = page.strip_prefix("---\n").expect("frontmatter first");
    let end = body.find("\n---\n").expect("frontmatter closed");
    body[..end]
        .lines()
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn pages_have_frontmatter_and_say_what_they_should() {
    let mount = Mount::start();
    for page in [
        "index.md",
        "ctl/index.md",
        "cmd/index.md",
        "skills/index.md",
        "skills/terminalfs/index.md",
    ] {
        let keys: Vec<String> = frontmatter(&mount.read(page))
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        for key in ["type", "title", "description", "timestamp"] {
            assert!(keys.contains(&key.to_string()), "{page} lacks {key}");
        }
    }
    let root = frontmatter(&mount.read("index.md"));
    let get = |key: &str| {
        root.iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .unwrap()
    };
    assert_eq!(get("mount"), format!("\"{}\"", mount.path.display()));
    assert_eq!(get("shell"), "\"/bin/sh\"");
    assert_eq!(get("commands"), "0");
    assert_eq!(get("rules"), "0");
    assert_eq!(get("settings"), format!("\"{}\"", mount.settings.display()));
    let timestamp = get("timestamp");
    assert!(
        timestamp.ends_with('Z') && timestamp.contains('T'),
        "{timestamp}"
    );

    let empty = mount.read("cmd/index.md");
    assert!(empty.contains("count: 0"));
    assert!(empty.contains("Nothing has run yet"), "{empty}");

    mount.run("first", "echo hi");
    mount.run("pipes", "echo 'a|b' | cat\necho second line");
    std::fs::write(mount.p("ctl/slow"), "sleep 300").unwrap();
    let index = mount.read("cmd/index.md");
    assert!(index.contains("count: 3"), "{index}");
    // name, status, exit code, started, duration, command verbatim, kept, dropped.
    let row = |name: &str| -> Vec<String> {
        let line = index
            .lines()
            .find(|line| line.starts_with(&format!("| [{name}]({name}/status) |")))
            .unwrap_or_else(|| panic!("no row for {name}:\n{index}"));
        line.trim_matches('|')
            .split(" | ")
            .map(|cell| cell.trim().to_string())
            .collect()
    };
    let first = row("first");
    assert_eq!(first[1..3], ["completed", "0"], "{first:?}");
    assert!(
        first[3].starts_with("20") && first[3].ends_with('Z'),
        "{first:?}"
    );
    assert!(first[4].ends_with('s'), "{first:?}");
    assert_eq!(first[5..], ["`echo hi`", "3", "0"], "{first:?}");
    let pipes = row("pipes");
    assert_eq!(
        pipes[5..],
        ["`echo 'a\\|b' \\| cat` …", "16", "0"],
        "{pipes:?}"
    );
    // Read at once, its spawn may still be under way: `starting`, with no start time
    // yet; once running, it has one.
    let slow = row("slow");
    match slow[1].as_str() {
        "starting" => assert_eq!(slow[2..5], ["", "", ""], "{slow:?}"),
        "running" => assert!(slow[2].is_empty() && slow[3].starts_with("20"), "{slow:?}"),
        _ => panic!("{slow:?}"),
    }
    assert_eq!(slow[5..], ["`sleep 300`", "0", "0"], "{slow:?}");
    let heading = index.lines().find(|l| l.starts_with("| name |")).unwrap();
    assert_eq!(
        heading,
        "| name | status | exit code | started | duration | command | kept bytes | dropped bytes |"
    );
    let skill = mount.read("skills/terminalfs/SKILL.md");
    assert!(
        skill.starts_with("---\nname: terminalfs\ndescription: "),
        "{skill}"
    );
    assert!(skill.contains(&format!("{}/ctl/", mount.path.display())));
}

#[test]
fn the_index_cuts_a_long_command_and_command_keeps_it_whole() {
    let mount = Mount::start();
    // One line of 100 kB (under the kernel's limit for one argument, so it runs).
    let text = format!(": {}", "é".repeat(50_000));
    assert_eq!(mount.run("long", &text), "completed\n");
    let index = mount.read("cmd/index.md");
    let row = index
        .lines()
        .find(|line| line.starts_with("| [long]"))
        .unwrap_or_else(|| panic!("no row: {index}"));
    let shown: String = text.chars().take(200).collect();
    assert!(row.contains(&format!("`{shown}` … (cut)")), "{row}");
    assert!(row.len() < 600, "{} bytes: {row}", row.len());
    assert!(index.contains("at most 200 characters"), "{index}");
    assert_eq!(mount.read("cmd/long/command"), text);
}

#[test]
fn find_newer_and_ls_t_see_a_command_stop() {
    let mount = Mount::start();
    let marks = tempfile::tempdir().unwrap();
    let marker = marks.path().join("started");
    // The marker takes the time the command started (its stderr, which never grows,
    // keeps it); it prints and ends a second later.
    let listed = mount.ok(&format!(
        "echo 'sleep 1; echo done' > \"$M/ctl/x\"\n\
         touch -r \"$M/cmd/x/stderr\" {marker}\n\
         [ \"$(cat \"$M/cmd/x/wait\")\" = completed ]\n\
         cd \"$M/cmd\" && find x -newer {marker} | sort\n\
         ls -t x | head -n 1",
        marker = marker.display()
    ));
    let mut newer: Vec<&str> = listed.lines().collect();
    let newest = newer.pop().unwrap_or_default();
    let changed = [
        "x/exitcode",
        "x/output",
        "x/result.json",
        "x/status",
        "x/stdout",
    ];
    assert_eq!(newer[0], "x", "{listed}");
    assert_eq!(newer[1..], changed, "{listed}");
    assert!(
        changed.contains(&format!("x/{newest}").as_str()),
        "{listed}"
    );
    // The text and the blocking files keep the time it was written.
    let meta = |file: &str| std::fs::metadata(mount.p(&format!("cmd/x/{file}"))).unwrap();
    let written = meta("command").modified().unwrap();
    for file in ["wait", "follow"] {
        assert_eq!(meta(file).modified().unwrap(), written, "{file}");
    }
}

#[test]
fn a_stream_has_the_time_it_last_grew() {
    let mount = Mount::start();
    let marks = tempfile::tempdir().unwrap();
    let more = marks.path().join("more");
    let before = SystemTime::now();
    let text = format!("echo once; {}; echo more", until_exists(&more));
    std::fs::write(mount.p("ctl/x"), text).unwrap();
    assert!(wait_until(Duration::from_secs(20), || {
        mount.read("cmd/x/stdout") == "once\n"
    }));
    let seen = SystemTime::now();
    let mtime = |file: &str| {
        std::fs::metadata(mount.p(&format!("cmd/x/{file}")))
            .and_then(|meta| meta.modified())
            .unwrap_or_else(|e| panic!("{file}: {e}"))
    };
    let printed = mtime("stdout");
    assert!(before <= printed && printed <= seen, "{printed:?}");
    let started = mtime("stderr");
    assert!(before <= started && started <= printed, "{started:?}");
    assert_eq!(mtime("output"), printed);
    // A second and more later nothing has grown, so nothing has moved.
    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(mtime("stdout"), printed);
    assert_eq!(mtime("output"), printed);
    assert_eq!(mtime("stderr"), started);
    // stderr never got a byte: it has the time the command started, as `result.json`
    // tells it (to the millisecond).
    let result: serde_json::Value = serde_json::from_str(&mount.read("cmd/x/result.json")).unwrap();
    let started_at = result["started_at"].as_str().unwrap().to_string();
    let out = std::process::Command::new("date")
        .args(["-u", "-d", &started_at, "+%s%3N"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let millis = String::from_utf8_lossy(&out.stdout).trim().parse::<u128>();
    let since_epoch = started.duration_since(UNIX_EPOCH).unwrap().as_millis();
    assert_eq!(millis, Ok(since_epoch), "{started_at}");
    // More output moves stdout and output, and the times hold once it has ended.
    std::fs::write(&more, "").unwrap();
    assert_eq!(mount.read("cmd/x/wait"), "completed\n");
    assert_eq!(mount.read("cmd/x/stdout"), "once\nmore\n");
    let grew = mtime("stdout");
    assert!(grew > printed, "{grew:?} <= {printed:?}");
    assert_eq!(mtime("output"), grew);
    assert_eq!(mtime("stderr"), started);
    let ended = mtime("status");
    assert!(grew <= ended, "{grew:?} > {ended:?}");
}

/// The fenced `sh` blocks of a Markdown text.
fn sh_blocks(text: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        match (&mut current, line) {
            (None, "```sh") => current = Some(String::new()),
            (Some(block), "```") => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            (Some(block), line) => {
                block.push_str(line);
                block.push('\n');
            }
            _ => {}
        }
    }
    blocks
}

/// The `(name, file)` pairs a line names as `cmd/<name>/<file>`.
fn command_files(line: &str) -> Vec<(&str, &str)> {
    let word = |c: char| c.is_ascii_alphanumeric() || "_.-".contains(c);
    line.match_indices("cmd/")
        .filter_map(|(at, _)| {
            let rest = &line[at + 4..];
            let name_end = rest.find(|c| !word(c))?;
            let rest_file = rest[name_end..].strip_prefix('/')?;
            let file_end = rest_file.find(|c| !word(c)).unwrap_or(rest_file.len());
            Some((&rest[..name_end], &rest_file[..file_end]))
        })
        .collect()
}

/// Lines of `block` that read a command's output or exit code before anything waited
/// for it (its `wait` or `follow`, or a loop that polls it): a read straight after the
/// write races the command and often finds nothing yet.
fn unwaited_reads(block: &str) -> Vec<String> {
    let mut started = std::collections::HashSet::new();
    let mut waited = std::collections::HashSet::new();
    let mut bad = Vec::new();
    for line in block.lines() {
        let looping = ["for ", "until ", "while "]
            .iter()
            .any(|w| line.trim_start().starts_with(w));
        for (name, file) in command_files(line) {
            if looping || matches!(file, "wait" | "follow") {
                waited.insert(name.to_string());
            } else if matches!(file, "stdout" | "stderr" | "output" | "exitcode" | "screen")
                && started.contains(name)
                && !waited.contains(name)
            {
                bad.push(line.to_string());
            }
        }
        if let Some(at) = line.find("ctl/") {
            let name: String = line[at + 4..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || "_.-".contains(*c))
                .collect();
            started.insert(name.clone());
            waited.remove(&name);
        }
    }
    bad
}

#[test]
fn examples_wait_before_they_read_output() {
    // The rule catches the race it is for.
    assert_eq!(
        unwaited_reads("echo x > $M/ctl/a\ncat $M/cmd/a/stdout\n"),
        ["cat $M/cmd/a/stdout"]
    );
    assert!(
        unwaited_reads("echo x > $M/ctl/a\ncat $M/cmd/a/wait\ncat $M/cmd/a/stdout\n").is_empty()
    );
    let mount = Mount::start();
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("the README");
    let mut texts = vec![("README.md".to_string(), readme)];
    for page in [
        "index.md",
        "ctl/index.md",
        "cmd/index.md",
        "skills/terminalfs/SKILL.md",
    ] {
        texts.push((page.to_string(), mount.read(page)));
    }
    let mut blocks = 0;
    for (page, text) in &texts {
        for block in sh_blocks(text) {
            blocks += 1;
            let bad = unwaited_reads(&block);
            assert!(
                bad.is_empty(),
                "{page}: {bad:?} reads before waiting:\n{block}"
            );
        }
    }
    assert!(blocks >= 10, "only {blocks} examples found");
    // The example of the empty index prints what it shows, every time.
    let example = sh_blocks(&mount.read("cmd/index.md")).concat();
    assert!(example.contains("ctl/hello"), "{example}");
    let uname = std::process::Command::new("uname")
        .arg("-a")
        .output()
        .unwrap();
    for round in 0..5 {
        let out = mount.sh(&format!("set -e\n{example}"));
        assert!(out.status.success(), "{out:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!("completed\n{}", String::from_utf8_lossy(&uname.stdout)),
            "round {round}"
        );
        mount.ok("rm -r \"$M/cmd/hello\"");
    }
}

#[test]
fn skill_examples_work_when_copied() {
    let mount = Mount::start();
    let skill = mount.read("skills/terminalfs/SKILL.md");
    let blocks = sh_blocks(&skill);
    assert!(
        blocks.len() >= 3,
        "SKILL.md has {} shell examples",
        blocks.len()
    );
    let mut printed = Vec::new();
    for block in &blocks {
        let out = mount.sh(&format!("set -e\n{block}"));
        assert!(
            out.status.success(),
            "example failed:\n{block}\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        printed.push(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    // What an example prints is what it says it prints.
    let printed_by = |needle: &str| {
        let index = blocks.iter().position(|block| block.contains(needle));
        printed[index.unwrap_or_else(|| panic!("no example with {needle}"))].clone()
    };
    assert_eq!(printed_by("cmd/py/stdin"), "42\n");
    let edit = printed_by("ctl/edit");
    assert!(
        edit.contains("notes.txt"),
        "the screen was read too early: {edit:?}"
    );
    assert_eq!(mount.read("cmd/edit/status"), "completed\n");
    assert_eq!(
        std::fs::read_to_string(mount.dir.path().join("notes.txt")).unwrap(),
        "first line\n"
    );
    // The examples did what they say.
    assert_eq!(mount.read("cmd/listing/status"), "completed\n");
    assert_eq!(mount.read("cmd/script/output"), "step one\nstep two\n");
    assert!(
        !mount.p("cmd/ticker").exists(),
        "the ticker example removes itself"
    );
    assert_eq!(mount.read("cmd/fresh/stdout"), "GREETING=\n");
    assert_eq!(mount.read("cmd/deploy/stdout"), "deployed\n");
    assert!(!mount.p("cmd/deploy.tmp").exists());
    assert_eq!(mount.read("cmd/limited/stdout"), "within limits\n");
    assert_eq!(mount.read("cmd/badkey/status"), "denied\n");
    assert_eq!(mount.read("cmd/nap/exitcode"), "130\n");
    assert_eq!(mount.read("cmd/fast/stdout"), "fast\n");
    assert_eq!(mount.read("cmd/slow/status"), "error\n");
}

#[test]
fn reused_names_get_fresh_inodes() {
    let mount = Mount::start();
    mount.run("again", "echo one");
    let first = std::fs::metadata(mount.p("cmd/again/stdout"))
        .unwrap()
        .ino();
    let dir_first = std::fs::metadata(mount.p("cmd/again")).unwrap().ino();
    mount.ok("rm -r \"$M/cmd/again\"");
    assert_eq!(mount.run("again", "echo two"), "completed\n");
    assert_eq!(mount.read("cmd/again/stdout"), "two\n");
    assert_ne!(
        std::fs::metadata(mount.p("cmd/again/stdout"))
            .unwrap()
            .ino(),
        first
    );
    assert_ne!(
        std::fs::metadata(mount.p("cmd/again")).unwrap().ino(),
        dir_first
    );
}

#[test]
fn the_readme_wait_loop_ends_on_every_word_wait_can_say() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("the README");
    let section = &readme[readme
        .find("\n## Waiting for a long build\n")
        .expect("the section")..];
    let block = sh_blocks(section).into_iter().next().expect("its example");
    let (start, looped) = block.split_once('\n').expect("a start, then the loop");
    assert!(start.contains("> $M/ctl/release"), "{start}");
    let mount = Mount::with_args(&["--wait-timeout", "1"]);
    let run_loop = |name: &str| {
        let script = looped.replace("cmd/release/", &format!("cmd/{name}/"));
        let out = mount.sh(&format!("set -e\n{script}"));
        assert!(out.status.success(), "{name}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // Still running at the first answers: it reads again until the end.
    std::fs::write(mount.p("ctl/slow"), "sleep 3; echo at last").unwrap();
    assert!(run_loop("slow").ends_with("built\n"));
    std::fs::write(mount.p("ctl/broken"), "echo oops >&2; exit 3").unwrap();
    assert_eq!(run_loop("broken"), "oops\n");
    std::fs::write(mount.p("ctl/held"), "exec sleep 300").unwrap();
    assert!(wait_until(Duration::from_secs(30), || {
        mount.read("cmd/held/status") == "running\n"
    }));
    mount.ok("echo STOP > $M/cmd/held/kill");
    assert!(run_loop("held").starts_with("paused: echo CONT > "));
    mount.ok("echo stop > $M/cmd/held/kill");
    let refused = std::fs::write(mount.p("ctl/odd"), "#terminalfs colour=red\ntrue\n");
    assert!(refused.is_err());
    assert!(run_loop("odd").contains("unknown key 'colour'"));
}

#[test]
fn the_pages_teach_the_tools_the_environment_and_where_commands_run() {
    let mount = Mount::start();
    let cwd = mount.dir.path().display().to_string();
    let root = mount.read("index.md");
    let skill = mount.read("skills/terminalfs/SKILL.md");
    let ctl = mount.read("ctl/index.md");
    for (page, text) in [("index.md", &root), ("SKILL.md", &skill)] {
        for needed in [
            "terminalfs check",
            "terminalfs selftest",
            "TERMINALFS_NAME=<name>",
            "environment",
            &format!("`/bin/sh -c <text>` in `{cwd}`"),
            "cwd=DIR",
        ] {
            assert!(text.contains(needed), "{page} lacks {needed:?}:\n{text}");
        }
    }
    assert!(root.contains(&format!("cwd: \"{cwd}\"")), "{root}");
    // The check the pages show works as written, against this mount's settings.
    let shown = root
        .split('`')
        .find(|span| span.starts_with("terminalfs check "))
        .expect("a check command");
    let checked = std::process::Command::new("sh")
        .args([
            "-c",
            &shown
                .replace("terminalfs ", "\"$BIN\" ")
                .replace("'TEXT'", "'echo hi'"),
        ])
        .env("BIN", crate::common::BIN)
        .output()
        .unwrap();
    assert!(checked.status.success(), "{shown}: {checked:?}");
    assert!(String::from_utf8_lossy(&checked.stdout).starts_with("allowed\n"));
    assert!(root.contains("shell: \"/bin/sh\""), "{root}");
    // When `reason` exists, said where its files are listed.
    assert!(root.contains("`reason` only when"), "{root}");
    assert!(skill.contains("`reason` exists only when"), "{skill}");
    // What memory= becomes without a memory controller, and why a JVM minds.
    for (page, text) in [("ctl/index.md", &ctl), ("SKILL.md", &skill)] {
        assert!(
            text.contains("address-space limit") && text.contains("JVM"),
            "{page}:\n{text}"
        );
        assert!(text.contains("bare number"), "{page}:\n{text}");
        assert!(text.contains("Refused lately"), "{page}:\n{text}");
    }
}
