//! `git` as git reads itself: the configuration a text gives it (`-c key=value`, the
//! `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n` variables, an earlier `git
//! config key value`) can make a later git run another command or program. An alias is
//! spelled as what it expands to (`git -c alias.p='push -f' p` is also `git push -f`); an
//! alias starting with `!`, a setting that names a program to run (`core.pager`,
//! `core.sshCommand`, `diff.external`, ...), the variables that do the same
//! (`GIT_EDITOR`, `GIT_SSH_COMMAND`, ...) and `rebase --exec` are shell text, read as
//! commands. `remote.NAME.mirror=true` makes a push a mirror push, which the option reader
//! counts as forced.

use super::{basename, Context};
use crate::policy::options::GIT_GLOBAL_WITH_VALUE;

/// Settings whose value git runs as shell text.
const RUNS_PROGRAM: &[&str] = &[
    "core.fsmonitor",
    "core.sshcommand",
    "core.pager",
    "core.editor",
    "core.askpass",
    "diff.external",
    "sequence.editor",
    "gpg.program",
];

/// Variables whose value git runs as shell text.
const RUNS_PROGRAM_ENV: &[&str] = &[
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "GIT_SSH_COMMAND",
    "GIT_SSH",
    "GIT_PAGER",
    "GIT_EXTERNAL_DIFF",
    "GIT_ASKPASS",
];

/// How many alias expansions are followed (git itself refuses a loop).
const MAX_ALIASES: usize = 8;

/// What a git command runs besides itself.
#[derive(Default)]
pub(super) struct GitRun {
    /// The command spelled with its alias expanded (and a mirror push so spelled).
    pub expanded: Option<Vec<String>>,
    /// Shell text git runs: `!` aliases, program settings, `rebase --exec`.
    pub scripts: Vec<String>,
    /// How each reading was reached, for `terminalfs check`: what the command or shell
    /// text was judged as, and why (`alias p from -c`).
    pub readings: Vec<(String, String)>,
}

/// A configuration key as git compares it: section and name in lower case, the
/// subsection (between them) as written.
fn key_form(key: &str) -> String {
    match (key.find('.'), key.rfind('.')) {
        (Some(first), Some(last)) if first != last => format!(
            "{}{}{}",
            key[..first].to_ascii_lowercase(),
            &key[first..last],
            key[last..].to_ascii_lowercase()
        ),
        _ => key.to_ascii_lowercase(),
    }
}

/// The settings in force for one git command, later ones first, each with where it
/// was given.
fn settings(cx: &Context, globals: &[(usize, String)]) -> Vec<(String, String, &'static str)> {
    let mut out: Vec<(String, String, &'static str)> = Vec::new();
    for (_, pair) in globals.iter().rev() {
        if let Some((key, value)) = pair.split_once('=') {
            out.push((key_form(key), value.to_owned(), "-c"));
        } else {
            out.push((key_form(pair), "true".to_owned(), "-c"));
        }
    }
    let count: usize = cx
        .values
        .get("GIT_CONFIG_COUNT")
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    for n in (0..count.min(64)).rev() {
        let key = cx.values.get(&format!("GIT_CONFIG_KEY_{n}"));
        let value = cx.values.get(&format!("GIT_CONFIG_VALUE_{n}"));
        if let (Some(key), Some(value)) = (key, value) {
            out.push((key_form(key), value.clone(), "GIT_CONFIG_KEY_n"));
        }
    }
    out.extend(
        cx.git_config
            .iter()
            .rev()
            .map(|(k, v)| (k.clone(), v.clone(), "an earlier git config")),
    );
    out
}

/// Reads a `git` command (`words[0]` is git): what its configuration makes it run.
pub(super) fn read(cx: &Context, words: &[String]) -> GitRun {
    let mut run = GitRun::default();
    if words.first().map(|w| basename(w)) != Some("git") {
        return run;
    }
    // The global options before the subcommand, with the `-c` values.
    let mut globals: Vec<(usize, String)> = Vec::new();
    let mut index = 1;
    while let Some(word) = words.get(index) {
        if !word.starts_with('-') {
            break;
        }
        if word == "-c" {
            if let Some(value) = words.get(index + 1) {
                globals.push((index, value.clone()));
            }
        }
        let takes = GIT_GLOBAL_WITH_VALUE.contains(&word.as_str());
        index += if takes { 2 } else { 1 };
    }
    let config = settings(cx, &globals);
    let found = |key: &str| config.iter().find(|(k, _, _)| k == key);
    let get = |key: &str| found(key).map(|(_, v, _)| v.as_str());
    let mut runs = |text: &str, why: String| {
        run.scripts.push(text.to_owned());
        run.readings.push((text.to_owned(), why));
    };
    for key in RUNS_PROGRAM {
        if let Some((_, value, from)) = found(key).filter(|(_, v, _)| !v.is_empty()) {
            runs(value, format!("{key} from {from}"));
        }
    }
    if let Some((_, value, from)) = found("credential.helper") {
        if let Some(helper) = value.strip_prefix('!') {
            runs(helper, format!("credential.helper from {from}"));
        }
    }
    for name in RUNS_PROGRAM_ENV {
        if let Some(value) = cx.values.get(*name).filter(|v| !v.is_empty()) {
            runs(value, (*name).to_owned());
        }
    }
    let mut words: Vec<String> = words.to_vec();
    let mut changed = false;
    let mut reasons: Vec<String> = Vec::new();
    for _ in 0..MAX_ALIASES {
        let Some(sub) = words.get(index) else {
            break;
        };
        let Some((_, value, from)) = found(&format!("alias.{}", sub.to_ascii_lowercase())) else {
            break;
        };
        let why = format!("alias {sub} from {from}");
        if let Some(shell) = value.strip_prefix('!') {
            let mut text = shell.to_owned();
            for arg in &words[index + 1..] {
                text.push(' ');
                text.push_str(arg);
            }
            runs(&text, why);
            break;
        }
        reasons.push(why);
        let expansion: Vec<String> = value.split_whitespace().map(str::to_owned).collect();
        if expansion.is_empty() {
            break;
        }
        words.splice(index..=index, expansion);
        changed = true;
    }
    let sub = words.get(index).cloned();
    let sub = sub.as_deref();
    if sub == Some("push") {
        let remote = words[index + 1..].iter().find(|w| !w.starts_with('-'));
        let remote = remote.map_or("origin", String::as_str).to_owned();
        if get(&format!("remote.{remote}.mirror")) == Some("true") {
            words.insert(index + 1, "--mirror".to_owned());
            reasons.push(format!("remote.{remote}.mirror"));
            changed = true;
        }
    }
    if sub == Some("rebase") {
        let mut at = index + 1;
        while let Some(word) = words.get(at) {
            if word == "-x" || word == "--exec" {
                if let Some(text) = words.get(at + 1) {
                    runs(text, "rebase --exec".to_owned());
                }
                at += 1;
            } else if let Some(text) = word.strip_prefix("--exec=") {
                runs(text, "rebase --exec".to_owned());
            } else if let Some(text) = word.strip_prefix("-x").filter(|t| !t.is_empty()) {
                runs(text, "rebase --exec".to_owned());
            }
            at += 1;
        }
    }
    if changed {
        run.readings
            .push((words.join(" "), reasons.join(", then ")));
        run.expanded = Some(words);
    }
    run
}

/// Notes the settings a `git config` command writes (`git config KEY VALUE`, `git config
/// set KEY VALUE`, with `--global` and the like), for the git commands after it. Returns
/// whether anything was noted.
pub(super) fn note_config(cx: &mut Context, words: &[String]) -> bool {
    if words.first().map(|w| basename(w)) != Some("git") {
        return false;
    }
    let mut rest = words[1..].iter().skip_while(|w| w.starts_with('-'));
    if rest.next().map(String::as_str) != Some("config") {
        return false;
    }
    let operands: Vec<&String> = rest
        .filter(|w| !w.starts_with('-'))
        .skip_while(|w| *w == "set")
        .collect();
    let [key, value, ..] = operands.as_slice() else {
        return false;
    };
    if !key.contains('.') {
        return false;
    }
    cx.git_config.push((key_form(key), value.to_string()));
    true
}
