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

#[test]
fn an_rm_r_that_the_end_of_its_command_overtakes_leaves_nothing_that_stays() {
    let mount = Mount::with_args(&["--keep", "1s"]);
    std::fs::write(mount.p("ctl/raced"), "exec sleep 100").unwrap();
    let dir = mount.p("cmd/raced");
    let pid = dir.join("pid");
    assert!(wait_until(Duration::from_secs(30), || pid.exists()));
    // rm -r's own steps (list, remove each file listed, skip the rmdir after a failure),
    // with the command's end after its removal of `status`.
    let listed: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(listed.contains(&"kill".to_string()), "{listed:?}");
    let mut failed = Vec::new();
    for name in &listed {
        match std::fs::remove_file(dir.join(name)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => failed.push(name.as_str()),
            Err(e) => panic!("rm {name}: {e}"),
        }
        if name == "status" {
            std::fs::write(mount.p("cmd/raced/kill"), "KILL").unwrap();
            assert_eq!(mount.wait("raced"), "error\n");
        }
    }
    assert_eq!(failed, ["pid", "kill"]);
    assert_eq!(mount.ok("ls \"$M/cmd/raced\""), "exitcode\nreason\n");
    // What is left is not pinned: it goes after --keep.
    assert!(
        wait_until(Duration::from_secs(30), || !dir.exists()),
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
