//! The splitter against real bash. Texts from a generator (and the seed corpus, and every
//! text a run ever caught, kept in `findings.rs`) run under bash in a throwaway sandbox
//! whose every external command is a logging stub; each command bash ran must be among the
//! simple commands the splitter reported, unless the policy refuses the text for a
//! construct it cannot follow, or the splitter reported a command whose name is only known
//! at run time (a `$`, a substitution or a glob in the command word: the documented limit).
//!
//! `cargo test` runs a bounded slice. A long run, with a seed of your choosing:
//!
//! ```text
//! DIFFERENTIAL_TEXTS=1000000 DIFFERENTIAL_SEED=7 cargo test --release --test tests differential -- --nocapture
//! ```
//!
//! A text it reports is added to `findings.rs` once the splitter handles it.

mod findings;
mod generator;
mod sandbox;
mod seeds;

#[allow(dead_code)]
#[path = "../../src/policy/samples.rs"]
mod samples;

use terminalfs::{normalize, split, Split};

use generator::Generator;
use sandbox::{Outcome, Sandbox};

/// How many generated texts `cargo test` runs.
const BOUNDED: usize = 300;

/// Texts per sandbox run.
const BATCH: usize = 500;

/// Whether some spelling of some reported command starts with the program `name`, both
/// with their whitespace collapsed the way rules see them (a spelling joins words with
/// spaces, so a name may hold spaces or newlines; a program named by a path is also
/// spelled by its basename).
fn reported(split: &Split, name: &str) -> bool {
    let name = normalize(name);
    split.commands.iter().any(|command| {
        command.forms.iter().any(|form| {
            normalize(form)
                .strip_prefix(&name)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(' '))
        })
    })
}

/// The first word of every spelling of every reported command, for messages.
fn reported_names(split: &Split) -> Vec<String> {
    let mut names = Vec::new();
    for command in &split.commands {
        for form in &command.forms {
            names.extend(form.split_whitespace().next().map(str::to_owned));
        }
    }
    names
}

/// Whether `name` is the script operand of a reported shell (`bash zapme` reads the file
/// `zapme` found on `PATH` as a script: a script file, the documented limit).
fn is_script_operand(split: &Split, name: &str) -> bool {
    split.commands.iter().any(|command| {
        command.forms.iter().any(|form| {
            let mut words = form.split_whitespace();
            words
                .next()
                .is_some_and(|shell| ["sh", "bash"].contains(&shell))
                && words.any(|word| word == name)
        })
    })
}

/// Whether some reported command's name is decided at run time.
fn has_dynamic_name(split: &Split) -> bool {
    split.commands.iter().any(|command| {
        command.dynamic_name
            || command.forms.iter().any(|form| {
                form.split_whitespace()
                    .next()
                    .is_some_and(|first| first.contains(['$', '`', '*', '?', '[']))
            })
    })
}

/// The commands bash ran that the splitter missed, or None when the text is refused for a
/// construct the splitter cannot follow or names a program only known at run time.
fn missed(text: &str, outcome: &Outcome) -> Option<Vec<String>> {
    let split = split(text);
    if split.refusal.is_some() || has_dynamic_name(&split) {
        return None;
    }
    let missed: Vec<String> = outcome
        .executed
        .iter()
        // An empty name (`$'\0' x`, `''`) names no program: bash only reports it missing.
        .filter(|name| !name.is_empty())
        .filter(|name| !reported(&split, name) && !is_script_operand(&split, name))
        .cloned()
        .collect();
    (!missed.is_empty()).then_some(missed)
}

/// Runs `texts` under bash and returns a description of every disagreement.
fn disagreements(sandbox: &Sandbox, texts: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for batch in texts.chunks(BATCH) {
        let outcomes = sandbox.run(batch);
        for (text, outcome) in batch.iter().zip(&outcomes) {
            if let Some(missed) = missed(text, outcome) {
                out.push(format!(
                    "bash ran {missed:?} (all: {:?}{}) but the splitter reported {:?}\n  text: {text:?}",
                    outcome.executed,
                    if outcome.timed_out { ", timed out" } else { "" },
                    reported_names(&split(text))
                ));
            }
        }
    }
    out
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

#[test]
fn the_sandbox_logs_what_bash_runs() {
    let sandbox = Sandbox::new();
    let texts: Vec<String> = [
        "zapme",
        "/usr/bin/zapme a; nosuchname b",
        "echo $(id)",
        "id > /etc/passwd; ls /usr/bin/.env; cat /logs/x",
        "bash -c 'zapme'",
        "until false; do :; done",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let outcomes = sandbox.run(&texts);
    assert_eq!(outcomes[0].executed, ["zapme"]);
    assert_eq!(outcomes[1].executed, ["zapme", "nosuchname"]);
    assert_eq!(outcomes[2].executed, ["id"]);
    // The root is private: /etc does not exist there, the stubs are read-only.
    assert_eq!(outcomes[3].executed, ["ls", "cat"]);
    assert_eq!(outcomes[4].executed, ["bash", "zapme"]);
    assert!(outcomes[5].timed_out && !outcomes[4].timed_out);
}

#[test]
fn seeds_and_findings_agree_with_bash() {
    let sandbox = Sandbox::new();
    let texts: Vec<String> = seeds::SEEDS
        .iter()
        .chain(findings::FINDINGS)
        .map(|s| (*s).to_owned())
        .collect();
    let found = disagreements(&sandbox, &texts);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn generated_texts_agree_with_bash() {
    let count = env_number("DIFFERENTIAL_TEXTS", BOUNDED as u64) as usize;
    let seed = env_number("DIFFERENTIAL_SEED", 0x5eed);
    let mut generator = Generator::new(seed, seeds::SEEDS);
    let sandbox = Sandbox::new();
    let mut found = Vec::new();
    let mut done = 0;
    while done < count {
        let size = BATCH.min(count - done);
        let texts: Vec<String> = (0..size).map(|_| generator.next_text()).collect();
        let new = disagreements(&sandbox, &texts);
        done += size;
        if count > BOUNDED {
            for line in &new {
                eprintln!("{line}");
            }
            eprintln!("{done} texts, {} disagreements", found.len() + new.len());
        }
        found.extend(new);
    }
    assert!(
        found.is_empty(),
        "{} of {count} texts (seed {seed}) disagree with bash:\n{}",
        found.len(),
        found
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
