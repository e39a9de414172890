//! The long-running check, in its own test binary so it runs alone after the main
//! suite: a command that prints without pause for a minute must neither be slowed by
//! the driver nor grow the driver's memory past a bound.

#[path = "common/mod.rs"]
mod common;

use common::{status_kib, Mount};
use std::time::{Duration, Instant};

fn stdout_bytes(mount: &Mount) -> u64 {
    let result: serde_json::Value =
        serde_json::from_str(&mount.read("cmd/yes/result.json")).expect("valid result.json");
    result["stdout"]["bytes"].as_u64().expect("a byte count")
}

#[test]
fn a_minute_of_yes_keeps_memory_bounded_and_is_never_blocked() {
    let mount = Mount::with_args(&["--max-output", "1m"]);
    std::fs::write(mount.p("ctl/yes"), "timeout 60 yes").unwrap();
    let started = Instant::now();
    let mut peak = 0;
    let mut last_bytes = 0;
    let mut samples = Vec::new();
    while started.elapsed() < Duration::from_secs(58) {
        std::thread::sleep(Duration::from_secs(2));
        peak = peak.max(status_kib(mount.pid(), "VmRSS:"));
        let bytes = stdout_bytes(&mount);
        // Never blocked: the count keeps climbing between any two samples.
        assert!(
            bytes > last_bytes,
            "output stalled at {bytes} bytes after {:?}",
            started.elapsed()
        );
        samples.push(bytes - last_bytes);
        last_bytes = bytes;
    }
    assert_eq!(mount.wait("yes"), "error\n", "timeout ends yes with 124");
    assert_eq!(mount.read("cmd/yes/exitcode"), "124\n");
    let total = stdout_bytes(&mount);
    println!(
        "yes wrote {} MiB in 60 s; driver peak RSS {} MiB; slowest 2 s window {} MiB",
        total >> 20,
        peak >> 10,
        samples.iter().min().copied().unwrap_or(0) >> 20
    );
    assert!(peak < 64 * 1024, "driver RSS peaked at {peak} KiB");
    // A fresh read shows the first quarter MiB, one notice line, then exactly the
    // newest three quarters.
    let text = std::fs::read(mount.p("cmd/yes/stdout")).unwrap();
    let notice = text
        .windows(13)
        .position(|w| w == b"[terminalfs: ")
        .expect("a notice line");
    assert_eq!(notice, 256 << 10);
    assert!(text[..notice].chunks(2).all(|pair| pair == b"y\n"));
    let after = notice + text[notice..].iter().position(|b| *b == b'\n').unwrap() + 1;
    assert!(String::from_utf8_lossy(&text[notice..after]).contains("bytes were dropped"));
    assert_eq!(text.len() - after, 768 << 10);
    assert!(text[after..]
        .chunks(2)
        .all(|pair| pair == b"y\n" || pair == b"\ny" || pair == b"y"));
}
