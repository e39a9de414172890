//! Figures for starting and capturing, each beside a baseline measured in the same run:
//! a command's round trip against a bare spawn-and-reap of the same shell (and against
//! `pueue add && pueue wait` when pueue is installed), capture against a pipe into a
//! file, how soon `wait` answers after an exit, how loud commands share the pump, and
//! how many lines the ordering test finds out of place. Run with `cargo bench`; it
//! prints and asserts nothing about speed.

#[path = "../tests/common/mod.rs"]
mod common;

use common::{Mount, Options};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap());
    values[values.len() / 2]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

/// Ms of one bare spawn and reap of `shell -c true`.
fn bare_spawn(shell: &str) -> f64 {
    let started = Instant::now();
    let status = Command::new(shell)
        .args(["-c", "true"])
        .stdin(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    ms(started.elapsed())
}

/// Ms of writing `ctl/<name>` with `true` and reading its `wait`.
fn round_trip(mount: &Mount, name: &str) -> f64 {
    trip(mount, name, "true", "wait", "completed\n")
}

/// Ms of the same file operations for a command the deny list refuses: what the files
/// alone cost, with no process started.
fn refused_trip(mount: &Mount, name: &str) -> f64 {
    trip(mount, name, "zapme", "status", "denied\n")
}

fn trip(mount: &Mount, name: &str, text: &str, file: &str, answer: &str) -> f64 {
    let started = Instant::now();
    // The refused text fails its close, which `fs::write` does not report.
    std::fs::write(mount.p(&format!("ctl/{name}")), text).unwrap();
    assert_eq!(mount.read(&format!("cmd/{name}/{file}")), answer);
    ms(started.elapsed())
}

fn spawn() {
    for shell in ["/bin/sh", "/bin/bash"] {
        let options = || Options {
            args: vec!["--shell", shell],
            settings: r#"{"permissions": {"deny": ["Bash(zapme:*)"]}}"#,
        };
        // Refused commands go to a mount of their own: a draft readies the next start,
        // which must not be one of the round trips.
        let (mount, other) = (Mount::with(options()), Mount::with(options()));
        // Warm every path up, then take one of each in turn, so that the machine's
        // changes of pace (a shared host's neighbours) hit all three alike.
        for i in 0..20 {
            round_trip(&mount, &format!("warm{i}"));
            refused_trip(&other, &format!("warm{i}"));
            bare_spawn(shell);
        }
        let (mut trips, mut refused, mut bares) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..200 {
            trips.push(round_trip(&mount, &format!("r{i}")));
            refused.push(refused_trip(&other, &format!("n{i}")));
            bares.push(bare_spawn(shell));
        }
        // The ratio in each fifth of the run, for how much it moves with the pace.
        let fifths: Vec<String> = (0..5)
            .map(|k| {
                let part = |v: &[f64]| median(v[k * 40..(k + 1) * 40].to_vec());
                format!("{:.2}", part(&trips) / part(&bares))
            })
            .collect();
        let (trip, files, bare) = (median(trips), median(refused), median(bares));
        println!(
            "spawn ({shell}): round trip {trip:.2} ms, bare spawn+reap {bare:.2} ms, ratio {:.2} \
             (by fifths of the run: {})",
            trip / bare,
            fifths.join(", ")
        );
        println!(
            "  the same file operations for a refused command (no process): {files:.2} ms \
             ({:.2} of a bare spawn); the round trip beyond them: {:.2} ms, ratio {:.2}",
            files / bare,
            trip - files,
            (trip - files) / bare
        );
        let result: serde_json::Value =
            serde_json::from_str(&mount.read("cmd/r0/result.json")).unwrap();
        println!(
            "  max_rss_kib of `true`: {} ({})",
            result["max_rss_kib"],
            result["max_rss_source"]
                .as_str()
                .unwrap_or("source not given")
        );
    }
    pueue_trips();
}

/// Runs `args` quietly; whether it succeeded.
fn quietly(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `pueue add && pueue wait` for `true`, with a daemon started for it when none runs.
fn pueue_trips() {
    if !quietly("pueue", &["--version"]) {
        println!("  pueue is not installed: no comparison with `pueue add && pueue wait`");
        return;
    }
    let started_daemon = !quietly("pueue", &["status"]);
    if started_daemon && !(quietly("pueued", &["--daemonize"]) && wait_for_pueued()) {
        println!("  pueue is installed but its daemon does not start: no comparison");
        return;
    }
    // `pueue wait` looks at the task about every two seconds: a few trips say enough.
    let times: Vec<f64> = (0..5)
        .map(|_| {
            let started = Instant::now();
            let script = "id=$(pueue add -p -- true) && pueue wait \"$id\" >/dev/null";
            assert!(quietly("sh", &["-c", script]));
            ms(started.elapsed())
        })
        .collect();
    println!("  pueue add && pueue wait: {:.2} ms median", median(times));
    if started_daemon {
        quietly("pueue", &["shutdown"]);
    }
}

fn wait_for_pueued() -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if quietly("pueue", &["status"]) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

fn capture() {
    let mount = Mount::start();
    let bytes = "2G";
    let (mut captured, mut piped) = (Vec::new(), Vec::new());
    for round in 0..3 {
        let name = format!("zero{round}");
        let started = Instant::now();
        mount.run(&name, &format!("head -c {bytes} /dev/zero"));
        captured.push(ms(started.elapsed()));
        // The same bytes through a pipe into a file on the state directory's
        // filesystem, which the spool writes too.
        let file = mount.state.join("piped");
        std::fs::create_dir_all(&mount.state).unwrap();
        let started = Instant::now();
        let status = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "head -c {bytes} /dev/zero | cat > '{}'",
                file.display()
            ))
            .status()
            .unwrap();
        assert!(status.success());
        piped.push(ms(started.elapsed()));
        std::fs::remove_file(&file).unwrap();
    }
    let (captured, piped) = (median(captured), median(piped));
    println!(
        "capture of head -c {bytes} /dev/zero: {captured:.0} ms; through a pipe into a file: {piped:.0} ms; speed ratio {:.2}",
        piped / captured
    );

    // Three loud commands at once: each one's share, and a follow reader's latency.
    std::fs::write(
        mount.p("ctl/ticks"),
        "i=0; while [ $i -lt 40 ]; do date +%s%N; sleep 0.05; i=$((i+1)); done",
    )
    .unwrap();
    let started = Instant::now();
    for i in 0..3 {
        std::fs::write(mount.p(&format!("ctl/loud{i}")), "head -c 1G /dev/zero").unwrap();
    }
    let follow = std::fs::File::open(mount.p("cmd/ticks/follow")).unwrap();
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        let delays: Vec<f64> = std::io::BufReader::new(follow)
            .lines()
            .map(|line| {
                let printed: u128 = line.unwrap().trim().parse().unwrap();
                now_ns().saturating_sub(printed) as f64 / 1e6
            })
            .collect();
        delays
    });
    let took: Vec<f64> = (0..3)
        .map(|i| {
            mount.wait(&format!("loud{i}"));
            let result: serde_json::Value =
                serde_json::from_str(&mount.read(&format!("cmd/loud{i}/result.json"))).unwrap();
            result["duration_ms"].as_f64().unwrap()
        })
        .collect();
    let delays = reader.join().unwrap();
    println!(
        "three loud commands at once (1 GiB each): {:.0} / {:.0} / {:.0} ms (all done after {:.0} ms)",
        took[0],
        took[1],
        took[2],
        ms(started.elapsed())
    );
    println!(
        "  meanwhile a follow reader got each line {:.2} ms (median) after it was printed",
        median(delays)
    );
}

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

fn wake_up() {
    let mount = Mount::start();
    let mut delays = Vec::new();
    for i in 0..30 {
        std::fs::write(
            mount.p(&format!("ctl/exit{i}")),
            "sleep 0.1; exec date +%s%N",
        )
        .unwrap();
        let answer = mount.read(&format!("cmd/exit{i}/wait"));
        let woke = now_ns();
        assert_eq!(answer, "completed\n");
        let printed: u128 = mount
            .read(&format!("cmd/exit{i}/stdout"))
            .trim()
            .parse()
            .unwrap();
        delays.push(woke.saturating_sub(printed) as f64 / 1e6);
    }
    println!(
        "wake-up: `wait` answers {:.2} ms (median) after the last thing a command does",
        median(delays)
    );
}

const ALTERNATING: &str = r#"
import os, sys
size = int(sys.argv[1])
for i in range(300):
    os.write(1, bytes([97 + i % 26]) * size)
    os.write(2, b"E%05d\n" % i)
    os.write(1, b"O%05d\n" % i)
"#;

fn ordering() {
    let mount = Mount::start();
    let script = mount.dir.path().join("alternating.py");
    std::fs::write(&script, ALTERNATING).unwrap();
    for size in [4096, 8192, 65536] {
        let name = format!("order{size}");
        mount.run(&name, &format!("python3 {} {size}", script.display()));
        let got = std::fs::read(mount.p(&format!("cmd/{name}/output"))).unwrap();
        let mut want = Vec::new();
        for i in 0..300 {
            want.extend(vec![b'a' + (i % 26) as u8; size]);
            want.extend(format!("E{i:05}\nO{i:05}\n").into_bytes());
        }
        let lines = |bytes: &[u8]| -> Vec<Vec<u8>> {
            bytes.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect()
        };
        let (got, want) = (lines(&got), lines(&want));
        let misplaced =
            want.iter().zip(&got).filter(|(a, b)| a != b).count() + want.len().abs_diff(got.len());
        println!(
            "ordering: {size}-byte stdout writes, a stderr line, a stdout line, 300 times: {misplaced} of {} lines misplaced",
            want.len()
        );
    }
}

fn main() {
    // `cargo bench` passes --bench; a name filter may follow.
    common::run_benches(&[
        ("spawn", spawn),
        ("capture", capture),
        ("wake", wake_up),
        ("ordering", ordering),
    ]);
}
