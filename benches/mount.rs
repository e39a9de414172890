//! Figures for a real mount: read throughput of a growing file against a plain file,
//! how soon `follow` and `wait` see what happens, the cost of a small-file round trip,
//! the pump's capture rate, how soon typed keys show on a terminal's screen, and what a
//! terminal costs in memory, and what the sandbox adds to a round trip. Run with `cargo bench`; it prints figures and ratios
//! and asserts nothing about speed (a noisy machine would make that flaky).

#[path = "../tests/common/mod.rs"]
mod common;

use common::{read_rate, Mount};
use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const GIB: u64 = 1 << 30;

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap());
    values[values.len() / 2]
}

fn percentile(mut values: Vec<f64>, p: f64) -> f64 {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let index = ((values.len() as f64 - 1.0) * p).round() as usize;
    values[index]
}

fn throughput() {
    let mount = Mount::with_args(&["--max-output", "1g"]);
    mount.run("gib", "head -c 1073741824 /dev/zero");
    let plain = mount.dir.path().join("plain");
    std::fs::write(&plain, vec![0u8; GIB as usize]).unwrap();
    let fuse: Vec<f64> = (0..5)
        .map(|_| read_rate(&mount.p("cmd/gib/stdout")))
        .collect();
    let local: Vec<f64> = (0..5).map(|_| read_rate(&plain)).collect();
    let (fuse, local) = (median(fuse), median(local));
    println!("read 1 GiB of stdout: {fuse:.0} MiB/s; same bytes from a local file: {local:.0} MiB/s; ratio {:.2}", fuse / local);
    let meta = std::fs::metadata(mount.p("cmd/gib/stdout")).unwrap();
    use std::os::unix::fs::MetadataExt;
    println!("  (st_blksize of stdout: {} bytes)", meta.blksize());
}

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

fn follow_latency() {
    let mount = Mount::start();
    std::fs::write(
        mount.p("ctl/ticks"),
        "i=0; while [ $i -lt 60 ]; do date +%s%N; sleep 0.05; i=$((i+1)); done",
    )
    .unwrap();
    let file = std::fs::File::open(mount.p("cmd/ticks/follow")).unwrap();
    let mut delays = Vec::new();
    for line in BufReader::new(file).lines() {
        let printed: u128 = line.unwrap().trim().parse().unwrap();
        delays.push(now_ns().saturating_sub(printed) as f64 / 1e6);
    }
    println!(
        "follow: a line reaches the reader {:.2} ms after it is printed (median), {:.2} ms (p99), {} lines",
        median(delays.clone()),
        percentile(delays.clone(), 0.99),
        delays.len()
    );
}

fn wait_round_trip() {
    let mount = Mount::start();
    let mut times = Vec::new();
    for i in 0..200 {
        let started = Instant::now();
        std::fs::write(mount.p(&format!("ctl/w{i}")), "true").unwrap();
        let answer = mount.read(&format!("cmd/w{i}/wait"));
        assert_eq!(answer, "completed\n");
        times.push(started.elapsed().as_secs_f64() * 1e3);
    }
    println!(
        "write a command + read its wait: {:.2} ms median, {:.2} ms p99 (200 runs of `true`)",
        median(times.clone()),
        percentile(times, 0.99)
    );
}

/// Median ms of 200 `true` round trips (write a command, read its `wait`).
fn round_trip_ms(mount: &Mount, prefix: &str) -> f64 {
    let mut times = Vec::new();
    for i in 0..200 {
        let started = Instant::now();
        std::fs::write(mount.p(&format!("ctl/{prefix}{i}")), "true").unwrap();
        let answer = mount.read(&format!("cmd/{prefix}{i}/wait"));
        assert_eq!(answer, "completed\n");
        times.push(started.elapsed().as_secs_f64() * 1e3);
    }
    median(times)
}

/// The sandbox's cost on a round trip: Landlock and seccomp alone (a working directory
/// with nothing to cover), and with the mount namespace that covers `.git/hooks`, the
/// settings and the mount lying below it (the test rig's layout), each against the
/// same mount without a sandbox, interleaved so load hits all alike.
fn sandbox_round_trip() {
    let plain = Mount::start();
    let bare = tempfile::tempdir().unwrap();
    let bare_dir = bare.path().to_str().unwrap().to_owned();
    let landlock = Mount::with(common::Options {
        args: vec!["--cwd", &bare_dir],
        settings: r#"{"sandbox": {"enabled": true}}"#,
    });
    let covered = Mount::with(common::Options {
        settings: r#"{"sandbox": {"enabled": true}}"#,
        ..Default::default()
    });
    std::fs::create_dir_all(covered.dir.path().join(".git/hooks")).unwrap();
    let mut figures = [Vec::new(), Vec::new(), Vec::new()];
    for round in 0..3 {
        for (index, mount) in [&plain, &landlock, &covered].into_iter().enumerate() {
            figures[index].push(round_trip_ms(mount, &format!("r{round}-")));
        }
    }
    let [base, landlock, covered] = figures.map(median);
    println!(
        "round trip of `true`: {base:.2} ms bare; sandboxed by Landlock + seccomp {landlock:.2} ms \
         (ratio {:.2}); with a mount namespace covering paths {covered:.2} ms (ratio {:.2})",
        landlock / base,
        covered / base
    );
}

fn small_file_ops() {
    let mount = Mount::start();
    mount.run("s", "echo x");
    let path = mount.p("cmd/s/status");
    let started = Instant::now();
    let rounds = 5000;
    for _ in 0..rounds {
        std::fs::read(&path).unwrap();
    }
    let each = started.elapsed().as_secs_f64() * 1e6 / rounds as f64;
    let plain = mount.dir.path().join("status");
    std::fs::write(&plain, "completed\n").unwrap();
    let started = Instant::now();
    for _ in 0..rounds {
        std::fs::read(&plain).unwrap();
    }
    let local = started.elapsed().as_secs_f64() * 1e6 / rounds as f64;
    println!(
        "open+read+close of a status file: {each:.1} µs (local file {local:.1} µs, ratio {:.1})",
        each / local
    );
}

fn capture_rate() {
    let mount = Mount::with_args(&["--max-output", "1m"]);
    std::fs::write(mount.p("ctl/yes"), "timeout 5 yes").unwrap();
    mount.wait("yes");
    let result: serde_json::Value =
        serde_json::from_str(&mount.read("cmd/yes/result.json")).unwrap();
    let bytes = result["stdout"]["bytes"].as_u64().unwrap();
    let status = std::fs::read_to_string(format!("/proc/{}/status", mount.pid())).unwrap();
    let rss = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .unwrap_or("")
        .to_string();
    println!(
        "capture: `yes` for 5 s gave {:.0} MiB/s into 1 MiB rings; driver {}",
        bytes as f64 / (1 << 20) as f64 / 5.0,
        rss.split_whitespace().skip(1).collect::<Vec<_>>().join(" ")
    );
    let _ = Duration::ZERO;
}

/// Latencies (ms) of `stat index.md`, one after another, until `stop` is set.
fn stat_latencies(mount: &Mount, stop: &std::sync::atomic::AtomicBool) -> Vec<f64> {
    use std::sync::atomic::Ordering;
    let page = mount.p("index.md");
    let mut times = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        let started = Instant::now();
        std::fs::metadata(&page).unwrap();
        times.push(started.elapsed().as_secs_f64() * 1e3);
    }
    times
}

/// How long an unrelated `stat` waits while 200 decided commands start at once (an
/// `ls cmd/` starts them all), against the same `stat` on the idle mount.
fn stat_while_starting() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let mount = Mount::with_args(&["--settle", "10m"]);
    let idle = {
        let stop = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let stats = scope.spawn(|| stat_latencies(&mount, &stop));
            std::thread::sleep(Duration::from_millis(500));
            stop.store(true, Ordering::SeqCst);
            stats.join().unwrap()
        })
    };
    let count = 200;
    for i in 0..count {
        std::fs::write(mount.p(&format!("ctl/s{i}")), "sleep 2").unwrap();
    }
    // Every draft is decided once its last close has arrived: it then shows its size.
    for i in 0..count {
        let path = mount.p(&format!("ctl/s{i}"));
        while std::fs::metadata(&path).map_or(0, |m| m.len()) == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let stop = AtomicBool::new(false);
    let (busy, took) = std::thread::scope(|scope| {
        let stats = scope.spawn(|| stat_latencies(&mount, &stop));
        std::thread::sleep(Duration::from_millis(50));
        let started = Instant::now();
        let listed = std::fs::read_dir(mount.p("cmd")).unwrap().count();
        assert!(listed >= count);
        for i in 0..count {
            // A lookup under a command waits until its spawn is done.
            std::fs::metadata(mount.p(&format!("cmd/s{i}/pid"))).unwrap();
        }
        let took = started.elapsed();
        stop.store(true, Ordering::SeqCst);
        (stats.join().unwrap(), took)
    });
    let max = |v: &[f64]| v.iter().cloned().fold(0.0, f64::max);
    println!(
        "stat index.md while {count} commands start: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms \
         ({} stats; all started in {:.0} ms); idle: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        percentile(busy.clone(), 0.5),
        percentile(busy.clone(), 0.99),
        max(&busy),
        busy.len(),
        took.as_secs_f64() * 1e3,
        percentile(idle.clone(), 0.5),
        percentile(idle.clone(), 0.99),
        max(&idle),
    );
}

/// Polls `path` until it contains `needle`; gives up after ten seconds.
fn poll_until(path: &std::path::Path, needle: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if std::fs::read_to_string(path).is_ok_and(|text| text.contains(needle)) {
            return true;
        }
    }
    false
}

/// Keys typed into `cat` on a terminal until the screen shows them, against the same
/// line written to `cat` on a stdin pipe until `stdout` shows it.
fn keys_round_trip() {
    let mount = Mount::start();
    std::fs::write(mount.p("ctl/tty"), "#terminalfs tty\nexec cat").unwrap();
    std::fs::write(mount.p("ctl/pipe"), "#terminalfs stdin\nexec cat").unwrap();
    assert!(poll_until(&mount.p("cmd/tty/status"), "running"));
    assert!(poll_until(&mount.p("cmd/pipe/status"), "running"));
    let (mut keys, mut pipe) = (Vec::new(), Vec::new());
    for i in 0..200 {
        let word = format!("k{i}x");
        let started = Instant::now();
        std::fs::write(mount.p("cmd/tty/keys"), format!("'{word}' Enter")).unwrap();
        assert!(poll_until(
            &mount.p("cmd/tty/screen"),
            &format!("{word}\n{word}\n")
        ));
        keys.push(started.elapsed().as_secs_f64() * 1e3);
        let started = Instant::now();
        std::fs::write(mount.p("cmd/pipe/stdin"), format!("{word}\n")).unwrap();
        assert!(poll_until(
            &mount.p("cmd/pipe/stdout"),
            &format!("{word}\n")
        ));
        pipe.push(started.elapsed().as_secs_f64() * 1e3);
    }
    println!(
        "keys to screen: {:.2} ms median, {:.2} ms p99; stdin to stdout: {:.2} ms median, \
         {:.2} ms p99; ratio {:.2} (200 lines into cat)",
        median(keys.clone()),
        percentile(keys.clone(), 0.99),
        median(pipe.clone()),
        percentile(pipe.clone(), 0.99),
        median(keys) / median(pipe)
    );
}

/// 256 MiB written to a command's stdin (`cat > /dev/null`) in 64 KiB and 1 MiB writes,
/// against the same bytes through a plain pipe into `cat`.
fn stdin_throughput() {
    use std::io::Write;
    let total = 256usize << 20;
    let mount = Mount::start();
    let mut figures = Vec::new();
    for (i, size) in [64usize << 10, 1 << 20].into_iter().enumerate() {
        let name = format!("sink{i}");
        std::fs::write(
            mount.p(&format!("ctl/{name}")),
            "#terminalfs stdin\nexec cat > /dev/null",
        )
        .unwrap();
        assert!(poll_until(
            &mount.p(&format!("cmd/{name}/status")),
            "running"
        ));
        let mut stdin = std::fs::OpenOptions::new()
            .append(true)
            .open(mount.p(&format!("cmd/{name}/stdin")))
            .unwrap();
        let chunk = vec![0u8; size];
        let started = Instant::now();
        for _ in 0..total / size {
            stdin.write_all(&chunk).unwrap();
        }
        figures.push(total as f64 / (1 << 20) as f64 / started.elapsed().as_secs_f64());
    }
    let mut cat = std::process::Command::new("sh")
        .args(["-c", "cat > /dev/null"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = cat.stdin.take().unwrap();
    let chunk = vec![0u8; 64 << 10];
    let started = Instant::now();
    for _ in 0..total / chunk.len() {
        pipe.write_all(&chunk).unwrap();
    }
    drop(pipe);
    cat.wait().unwrap();
    let plain = total as f64 / (1 << 20) as f64 / started.elapsed().as_secs_f64();
    println!(
        "stdin: {:.0} MiB/s in 64 KiB writes, {:.0} MiB/s in 1 MiB writes; a plain pipe into \
         cat: {plain:.0} MiB/s; ratio {:.2}",
        figures[0],
        figures[1],
        figures[0] / plain
    );
}

/// The driver's resident memory with 50 idle commands on 120x40 terminals, against 50
/// idle commands without one.
fn terminal_memory() {
    let count = 50;
    let mut figures = Vec::new();
    for header in ["", "#terminalfs tty\n"] {
        let mount = Mount::start();
        let before = common::status_kib(mount.pid(), "VmRSS:");
        for i in 0..count {
            std::fs::write(mount.p(&format!("ctl/m{i}")), format!("{header}sleep 600")).unwrap();
        }
        for i in 0..count {
            assert!(poll_until(&mount.p(&format!("cmd/m{i}/status")), "running"));
        }
        if !header.is_empty() {
            // Type into each, so every screen has been drawn on.
            for i in 0..count {
                std::fs::write(mount.p(&format!("cmd/m{i}/keys")), "'x'").unwrap();
            }
        }
        std::thread::sleep(Duration::from_millis(500));
        let after = common::status_kib(mount.pid(), "VmRSS:");
        figures.push(after.saturating_sub(before) as f64 / count as f64);
    }
    println!(
        "memory per idle command: {:.0} KiB with a 120x40 terminal, {:.0} KiB without \
         (driver VmRSS growth over {count} commands)",
        figures[1], figures[0]
    );
}

fn main() {
    // `cargo bench` passes --bench; a name filter may follow.
    common::run_benches(&[
        ("throughput", throughput),
        ("follow", follow_latency),
        ("wait", wait_round_trip),
        ("small", small_file_ops),
        ("sandbox", sandbox_round_trip),
        ("capture", capture_rate),
        ("starting", stat_while_starting),
        ("keys", keys_round_trip),
        ("stdin", stdin_throughput),
        ("terminal-memory", terminal_memory),
    ]);
}
