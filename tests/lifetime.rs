//! Lifetime (SPEC 7): expiry after --keep, pinning, removal with readers.

use crate::common::{wait_until, Mount};
use std::io::Read;
use std::time::Duration;

#[test]
fn stopped_commands_expire_running_ones_never() {
    let mount = Mount::with_args(&["--keep", "1s"]);
    mount.run("brief", "echo hi");
    std::fs::write(mount.p("ctl/runner"), "sleep 4").unwrap();
    assert!(mount.p("cmd/runner").exists());
    assert!(wait_until(Duration::from_secs(10), || !mount
        .p("cmd/brief")
        .exists()));
    // Still running after more than --keep.
    std::thread::sleep(Duration::from_millis(1500));
    assert!(mount.p("cmd/runner/pid").exists());
    // Once stopped, it too goes after --keep.
    assert_eq!(mount.wait("runner"), "completed\n");
    assert!(wait_until(Duration::from_secs(10), || !mount
        .p("cmd/runner")
        .exists()));
    // Its name can be used again.
    assert_eq!(mount.run("runner", "true"), "completed\n");
}

#[test]
fn an_open_file_holds_the_command() {
    let mount = Mount::with_args(&["--keep", "1s"]);
    mount.run("held", "echo kept");
    let mut file = std::fs::File::open(mount.p("cmd/held/stdout")).unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    assert!(
        mount.p("cmd/held").exists(),
        "expired while a file was open"
    );
    let mut text = String::new();
    file.read_to_string(&mut text).unwrap();
    assert_eq!(text, "kept\n");
    drop(file);
    assert!(wait_until(Duration::from_secs(10), || !mount
        .p("cmd/held")
        .exists()));
}

#[test]
fn removing_a_file_pins_the_command() {
    let mount = Mount::with_args(&["--keep", "1s"]);
    mount.run("pinned", "echo p");
    std::fs::remove_file(mount.p("cmd/pinned/stderr")).unwrap();
    assert!(!mount.p("cmd/pinned/stderr").exists());
    assert!(!mount.ok("ls \"$M/cmd/pinned\"").contains("stderr"));
    std::thread::sleep(Duration::from_millis(2500));
    assert!(
        mount.p("cmd/pinned/stdout").exists(),
        "a pinned command expired"
    );
    mount.ok("rm -r \"$M/cmd/pinned\"");
    assert!(!mount.p("cmd/pinned").exists());
}

/// `rm -r $M/cmd/<name>`'s own steps, from this thread: list the directory, remove each
/// file listed in turn, skip the rmdir after a failure. `before` runs just before it
/// comes to `pid`. Returns the files whose removal failed.
fn rm_r(mount: &Mount, name: &str, before: &dyn Fn()) -> Vec<String> {
    let dir = mount.p(&format!("cmd/{name}"));
    let listed: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(listed.contains(&"pid".to_string()), "{listed:?}");
    let mut failed = Vec::new();
    for file in listed {
        if file == "pid" {
            before();
        }
        match std::fs::remove_file(dir.join(&file)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => failed.push(file),
            Err(e) => panic!("rm {file}: {e}"),
        }
    }
    if failed.is_empty() {
        std::fs::remove_dir(&dir).unwrap();
    }
    failed
}

#[test]
fn an_rm_r_that_the_end_of_its_command_overtakes_still_removes_it() {
    let mount = Mount::with_args(&["--keep", "1s"]);
    // The command ends between rm's listing and its removal of `pid`.
    let start = |name: &str| {
        std::fs::write(mount.p(&format!("ctl/{name}")), "exec sleep 100").unwrap();
        let pid = mount.p(&format!("cmd/{name}/pid"));
        assert!(wait_until(Duration::from_secs(30), || pid.exists()));
    };
    let ends = |name: &str| {
        std::fs::write(mount.p(&format!("cmd/{name}/kill")), "KILL").unwrap();
        assert_eq!(mount.wait(name), "error\n");
        // To anyone else, it has stopped.
        assert!(!mount.ok(&format!("ls $M/cmd/{name}")).contains("pid"));
        assert!(!mount
            .sh(&format!("test -e $M/cmd/{name}/pid"))
            .status
            .success());
    };
    start("raced");
    assert_eq!(
        rm_r(&mount, "raced", &|| ends("raced")),
        Vec::<String>::new()
    );
    assert!(!mount.p("cmd/raced").exists());

    // When the files were removed by two processes, the second finds `pid` and `kill`
    // gone: what is left is not pinned, and goes after --keep.
    start("split");
    mount.ok("rm $M/cmd/split/command $M/cmd/split/status");
    assert_eq!(rm_r(&mount, "split", &|| ends("split")), ["pid", "kill"]);
    assert_eq!(mount.ok("ls $M/cmd/split"), "exitcode\nreason\n");
    assert!(
        wait_until(Duration::from_secs(30), || !mount.p("cmd/split").exists()),
        "the rest of an rm -r was kept"
    );
}

#[test]
fn a_reader_keeps_reading_after_rm_r() {
    let mount = Mount::start();
    let big: String = (0..20_000).map(|i| format!("row {i}\n")).collect();
    mount.run(
        "removed",
        "i=0; while [ $i -lt 20000 ]; do echo \"row $i\"; i=$((i+1)); done",
    );
    let out = mount.ok(
        "exec 3< \"$M/cmd/removed/stdout\"; dd bs=4 count=1 <&3 >/dev/null 2>&1; rm -r \"$M/cmd/removed\"; \
         [ -e \"$M/cmd/removed\" ] && echo still-there; cat <&3 | wc -c",
    );
    assert_eq!(out.trim(), (big.len() - 4).to_string());
    assert!(!mount.p("cmd/removed").exists());
}
