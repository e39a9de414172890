//! Figures for output on disk, in one run: the driver's memory while 20 commands print
//! 20 MB each (and after they expire), the capture rate against a plain pipe, reading a
//! finished 1 GiB `stdout` against the same bytes on tmpfs, and the time to restore 1,000
//! finished commands at start. Run with `cargo bench --bench spool`; it prints figures
//! and ratios and asserts nothing about speed.

#[path = "../tests/common/mod.rs"]
mod common;

use common::{read_rate, status_kib, wait_until, Mount};
use std::process::Command;
use std::time::{Duration, Instant};

const MIB: f64 = (1 << 20) as f64;
const GIB: u64 = 1 << 30;

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap());
    values[values.len() / 2]
}

fn rss_while_printing() {
    let mount = Mount::with_args(&["--keep", "2s"]);
    mount.run("warm", "echo warm");
    let driver = mount.pid();
    let idle = status_kib(driver, "VmRSS:");
    for i in 0..20 {
        std::fs::write(mount.p(&format!("ctl/p{i}")), "head -c 20000000 /dev/zero").unwrap();
    }
    let mut peak = idle;
    let started = Instant::now();
    let all_done = || (0..20).all(|i| mount.read(&format!("cmd/p{i}/status")) != "running\n");
    while !all_done() {
        peak = peak.max(status_kib(driver, "VmRSS:"));
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = started.elapsed();
    for i in 0..20 {
        assert_eq!(mount.wait(&format!("p{i}")), "completed\n");
    }
    // Reading one back whole goes through the page cache, not the driver's memory.
    let bytes = std::fs::read(mount.p("cmd/p7/stdout")).unwrap();
    assert_eq!(bytes.len(), 20_000_000);
    peak = peak.max(status_kib(driver, "VmRSS:"));
    let expired = wait_until(Duration::from_secs(60), || {
        let names = std::fs::read_dir(mount.p("cmd")).unwrap().flatten();
        names.filter(|e| e.file_name() != "index.md").count() == 0
    });
    assert!(expired, "the commands expire after --keep");
    let after = status_kib(driver, "VmRSS:");
    println!(
        "memory: 20 commands printing 20 MB each ({:.1} s): driver RSS idle {:.1} MiB, peak \
         {:.1} MiB, after they expired {:.1} MiB (bound: 32 MiB)",
        took.as_secs_f64(),
        idle as f64 / 1024.0,
        peak as f64 / 1024.0,
        after as f64 / 1024.0
    );
}

/// Seconds a shell needs to run `script`.
fn shell_seconds(script: &str) -> f64 {
    let started = Instant::now();
    let status = Command::new("sh").arg("-c").arg(script).status().unwrap();
    assert!(status.success());
    started.elapsed().as_secs_f64()
}

fn capture_rate() {
    let mount = Mount::start();
    let bytes = 2 * GIB;
    let mut captured = Vec::new();
    let mut piped = Vec::new();
    for round in 0..3 {
        let name = format!("c{round}");
        mount.run(&name, &format!("head -c {bytes} /dev/zero"));
        let result: serde_json::Value =
            serde_json::from_str(&mount.read(&format!("cmd/{name}/result.json"))).unwrap();
        assert_eq!(result["stdout"]["bytes"], bytes);
        let seconds = result["duration_ms"].as_u64().unwrap() as f64 / 1000.0;
        captured.push(bytes as f64 / MIB / seconds);
        mount.ok(&format!("rm -r \"$M/cmd/{name}\""));
        let seconds = shell_seconds(&format!("head -c {bytes} /dev/zero | cat > /dev/null"));
        piped.push(bytes as f64 / MIB / seconds);
    }
    let (captured, piped) = (median(captured), median(piped));
    println!(
        "capture: `head -c 2G /dev/zero` into the spool (64 MiB kept per stream) at {captured:.0} \
         MiB/s; through a pipe into `cat > /dev/null` {piped:.0} MiB/s; ratio {:.2}",
        captured / piped
    );
    // Many small writes: one line per write, as a chatty build prints.
    let lines = 200_000;
    let script = format!("seq {lines}");
    mount.run("lines", &script);
    let result: serde_json::Value =
        serde_json::from_str(&mount.read("cmd/lines/result.json")).unwrap();
    let seconds = result["duration_ms"].as_u64().unwrap() as f64 / 1000.0;
    let piped = shell_seconds(&format!("{script} | cat > /dev/null"));
    println!(
        "capture: `seq {lines}` ({} bytes) took {:.3} s captured, {piped:.3} s into a pipe",
        result["stdout"]["bytes"], seconds
    );
}

fn read_finished_gib() {
    let mount = Mount::with_args(&["--max-output", "1g"]);
    mount.run("gib", &format!("head -c {GIB} /dev/zero"));
    let shm = tempfile::tempdir_in("/dev/shm").expect("tmpfs at /dev/shm");
    let plain = shm.path().join("gib");
    std::fs::write(&plain, vec![0u8; GIB as usize]).unwrap();
    let stdout = mount.p("cmd/gib/stdout");
    read_rate(&stdout);
    read_rate(&plain);
    let fuse: Vec<f64> = (0..5).map(|_| read_rate(&stdout)).collect();
    let tmpfs: Vec<f64> = (0..5).map(|_| read_rate(&plain)).collect();
    let (fuse, tmpfs) = (median(fuse), median(tmpfs));
    println!(
        "read a finished 1 GiB stdout: {fuse:.0} MiB/s; the same bytes from tmpfs: {tmpfs:.0} \
         MiB/s; ratio {:.2} (target 0.5)",
        fuse / tmpfs
    );
}

fn restore_thousand() {
    let mut mount = Mount::start();
    let count = 1000;
    for i in 0..count {
        std::fs::write(
            mount.p(&format!("ctl/r{i}")),
            format!("echo {i}; echo e >&2"),
        )
        .unwrap();
    }
    for i in 0..count {
        assert_eq!(mount.wait(&format!("r{i}")), "completed\n");
    }
    assert_eq!(mount.stop().code(), Some(0));
    let started = Instant::now();
    mount.spawn(&[]);
    let ready = started.elapsed();
    assert_eq!(mount.read("cmd/r999/stdout"), "999\n");
    let log = mount.log();
    let line = log
        .lines()
        .rev()
        .find(|l| l.contains("restored"))
        .unwrap_or("no restore line");
    println!(
        "restore: {count} finished commands back in a start that took {:.0} ms to be ready; \
         log: {}",
        ready.as_secs_f64() * 1e3,
        line.split("terminalfs: ").nth(1).unwrap_or(line)
    );
}

fn main() {
    // `cargo bench` passes --bench; a name filter may follow.
    common::run_benches(&[
        ("memory", rss_while_printing),
        ("capture", capture_rate),
        ("read", read_finished_gib),
        ("restore", restore_thousand),
    ]);
}
