//! Figures for the deny-list check: how long checking 1 MiB of pathological text takes
//! under the default settings (target: under 100 ms each in a release build), against a
//! baseline measured in the same run: one pass that only splits the same text at
//! whitespace. Among the inputs are a command name that is a 1 MiB glob (refused unread),
//! and commands of half a million operands (`rm -rf x x ...`, `chmod -R 777 x ...`). The
//! slowest found are many distinct short commands (`aliases`, `programs of 16 meanings`),
//! whose cost is rules times commands. Run with `cargo bench --bench policy`; it prints figures and ratios and
//! asserts nothing about speed (a noisy machine would make that flaky).
//!
//! Then how the check grows with the number of distinct files redirections write:
//! twice the files should take about twice the time (four times would be quadratic).
//!
//! Words given after `--` keep only the inputs whose names hold one of them (`cargo bench
//! --bench policy -- backticks`), and leave out the second part, so that one input can be
//! timed or profiled alone.

#[allow(dead_code)]
#[path = "../src/policy/samples.rs"]
mod samples;

use std::hint::black_box;
use std::time::{Duration, Instant};

use samples::{pathological_inputs, random_text, Rng};
use terminalfs::{default_settings_json, Policy};

const TARGET: Duration = Duration::from_millis(100);
const ROUNDS: usize = 5;

/// The fastest of `ROUNDS` runs (the least disturbed by other work on the machine).
fn fastest(mut run: impl FnMut()) -> Duration {
    (0..ROUNDS)
        .map(|_| {
            let started = Instant::now();
            run();
            started.elapsed()
        })
        .min()
        .unwrap_or_default()
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn main() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("settings.json");
    std::fs::write(&path, default_settings_json()).expect("write settings");
    let policy = Policy::load(&path, false).expect("default settings load");

    // Cargo passes `--bench`; every other argument names inputs to keep.
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|arg| !arg.starts_with('-'))
        .collect();
    let mut inputs = pathological_inputs(1 << 20);
    let mut rng = Rng(42);
    let mut random = String::new();
    while random.len() < 1 << 20 {
        random.push_str(&random_text(&mut rng, 1000));
    }
    inputs.push(("random text", random));
    inputs.retain(|(name, _)| filters.is_empty() || filters.iter().any(|f| name.contains(f)));

    println!("checking 1 MiB texts under the default settings (fastest of {ROUNDS} runs)");
    println!(
        "{:<24} {:>10} {:>12} {:>8}  verdict",
        "input", "check ms", "baseline ms", "ratio"
    );
    let mut slowest = (Duration::ZERO, "");
    for (name, text) in &inputs {
        let baseline = fastest(|| {
            black_box(text.split_ascii_whitespace().count());
        });
        let mut allowed = false;
        let check = fastest(|| {
            allowed = black_box(policy.check(text.as_bytes())).is_allowed();
        });
        if check > slowest.0 {
            slowest = (check, name);
        }
        println!(
            "{name:<24} {:>10.2} {:>12.3} {:>8.0}  {}",
            ms(check),
            ms(baseline),
            check.as_secs_f64() / baseline.as_secs_f64().max(1e-9),
            if allowed { "allowed" } else { "refused" }
        );
    }
    println!(
        "slowest: {} at {:.2} ms; target < {} ms: {}",
        slowest.1,
        ms(slowest.0),
        TARGET.as_millis(),
        if slowest.0 < TARGET { "met" } else { "NOT MET" }
    );
    if !filters.is_empty() {
        return;
    }

    println!();
    println!("distinct redirection targets (`: >f0 >f1 ...`), fastest of {ROUNDS} runs");
    let targets = |count: usize| {
        let mut text = String::from(":");
        for i in 0..count {
            text.push_str(&format!(" >f{i}"));
        }
        text
    };
    let mut times = Vec::new();
    for count in [25_000, 50_000] {
        let text = targets(count);
        let check = fastest(|| {
            black_box(policy.check(text.as_bytes()));
        });
        println!(
            "{count:>6} targets ({:>4} KiB) {:>10.2} ms",
            text.len() >> 10,
            ms(check)
        );
        times.push(check);
    }
    println!(
        "twice the targets took {:.1} times as long (linear: about 2; quadratic: about 4)",
        times[1].as_secs_f64() / times[0].as_secs_f64().max(1e-9)
    );
}
