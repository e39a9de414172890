//! Figures for remote hosts, against a throwaway sshd on 127.0.0.1: what a command on a
//! host costs through the mount (write `ctl/<name>`, read `wait`) over the connection
//! the driver keeps, against a fresh `ssh host true`, and the memory and descriptors
//! a hundred remote commands leave behind. Prints figures and ratios; asserts nothing
//! about speed.

#[path = "../tests/common/mod.rs"]
mod common;

use common::sshd::Sshd;
use common::{Mount, Options};
use std::time::Instant;

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap());
    values[values.len() / 2]
}

fn round_trip() {
    let sshd = Sshd::start();
    let settings = serde_json::json!({"hosts": {"box": sshd.entry()}}).to_string();
    let mount = Mount::with(Options {
        args: vec![],
        settings: &settings,
    });
    // The connection is made by the first command; the figures are of the rest.
    assert_eq!(
        mount.run("warm", "#terminalfs host=box\ntrue"),
        "completed\n"
    );
    let runs = 30;
    let mut through_mount = Vec::new();
    for i in 0..runs {
        let started = Instant::now();
        std::fs::write(mount.p(&format!("ctl/r{i}")), "#terminalfs host=box\ntrue").unwrap();
        assert_eq!(mount.read(&format!("cmd/r{i}/wait")), "completed\n");
        through_mount.push(started.elapsed().as_secs_f64() * 1e3);
    }
    let mut local = Vec::new();
    for i in 0..runs {
        let started = Instant::now();
        std::fs::write(mount.p(&format!("ctl/l{i}")), "true").unwrap();
        assert_eq!(mount.read(&format!("cmd/l{i}/wait")), "completed\n");
        local.push(started.elapsed().as_secs_f64() * 1e3);
    }
    let mut fresh = Vec::new();
    for _ in 0..runs {
        let started = Instant::now();
        let status = std::process::Command::new("ssh")
            .args(["-o", "BatchMode=yes", "-T"])
            .args(sshd.options())
            .arg(format!("{}@127.0.0.1", Sshd::user()))
            .arg("true")
            .status()
            .unwrap();
        assert!(status.success());
        fresh.push(started.elapsed().as_secs_f64() * 1e3);
    }
    let (through_mount, local, fresh) = (median(through_mount), median(local), median(fresh));
    println!(
        "remote round trip through the mount (write ctl, read wait, host=box over the kept \
         connection): {through_mount:.2} ms; fresh `ssh host true`: {fresh:.2} ms; ratio \
         {:.2} (goal <= 0.5); the same round trip run here: {local:.2} ms",
        through_mount / fresh
    );
}

fn hundred_at_once() {
    let sshd = Sshd::start();
    let settings = serde_json::json!({"hosts": {"box": sshd.entry()}}).to_string();
    let mount = Mount::with(Options {
        args: vec![],
        settings: &settings,
    });
    assert_eq!(
        mount.run("warm", "#terminalfs host=box\ntrue"),
        "completed\n"
    );
    let (fds, rss) = (
        common::fd_count(mount.pid() as i32),
        common::status_kib(mount.pid(), "VmRSS:"),
    );
    let started = Instant::now();
    for n in 0..100 {
        std::fs::write(
            mount.p(&format!("ctl/c{n}")),
            "#terminalfs host=box\necho hi",
        )
        .unwrap();
    }
    for n in 0..100 {
        assert_eq!(mount.wait(&format!("c{n}")), "completed\n");
    }
    let took = started.elapsed().as_secs_f64();
    std::thread::sleep(std::time::Duration::from_secs(2));
    println!(
        "100 remote commands at once: {took:.2} s; driver descriptors {fds} before, {} after; \
         VmRSS {rss} KiB before, {} KiB after",
        common::fd_count(mount.pid() as i32),
        common::status_kib(mount.pid(), "VmRSS:")
    );
}

fn main() {
    common::run_benches(&[("round-trip", round_trip), ("hundred", hundred_at_once)]);
}
