//! Policy: the settings file, deny/ask/allow rules, the shell-aware splitter, per-command
//! directives and the audit log. Nothing here knows about FUSE or processes.
//!
//! [`Policy`] is the one object the rest of the driver holds (in an `Arc`): it owns the
//! rules read from the settings file, answers [`Policy::check`] for command text, and
//! reloads the file when it changes, keeping the rules in force when an edit does not parse
//! or the file disappears. A check runs every rule against the whole text and against every
//! simple command [`splitter::split`] finds in it, and against `> FILE` for every file a
//! redirection writes. Deny rules come first, then ask rules
//! (which refuse too, as nobody is there to answer); while any rule is in force, a fork
//! bomb ([`fork_bomb`]) is refused next; text the splitter could only read
//! crudely (absurd nesting, see [`splitter::MAX_DEPTH`]) is refused next; then, under
//! `--allowlist`, every simple command must match an allow rule. None of this is a sandbox: it catches the
//! commands an agent should not run by mistake, not an adversary.
//!
//! Where the directory a simple command runs in is known ([`SimpleCommand::dir`]: the
//! starting directory, [`Policy::with_start_dir`], as changed by the `cd`s before it),
//! its relative path operands are also judged as the absolute paths they name, for the
//! commands read option-aware whose operands are paths (`rm`, `chmod`, `chown`, `chgrp`):
//! deny and ask rules see `cd / && rm -rf *` as `rm -rf /*` too, and `cd /etc && rm -rf
//! ..` as `rm -rf /`, and the reason says what the operand was judged as. Allow rules
//! are matched against the command as written only: a directory taken as reached by a
//! `cd` that may fail must not let a command run.

pub mod audit;
mod decide;
pub mod directives;
pub mod fork_bomb;
pub(crate) mod glob;
pub mod options;
mod reload;
pub mod rules;
pub mod settings;
pub mod shell_input;
mod spellings;
pub mod splitter;
mod verdict;
mod written;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender};
use parking_lot::{Mutex, RwLock};

pub use audit::default_audit_path;
pub(crate) use decide::shortened;
pub use directives::{parse_directives, Directives, Input};
use reload::{parse_bytes, Seen, Stamp};
pub use rules::{Candidate, Rule};
pub use settings::{
    default_settings_json, default_settings_path, home_dir, init_settings, RuleSet, SettingsError,
};
pub use shell_input::{check_shell_input, shell_on_terminal_reason, shell_reading_input};
use spellings::{canonical_dir, judge_in_directories, path_candidates, path_spellings};
pub use splitter::{SimpleCommand, Split};
#[cfg(test)]
use verdict::NUL_REASON;
use verdict::{checking, refusal};
pub use verdict::{plain_refusal, Explained, Verdict, CHECKER_FAILED, NO_COMMAND_REASON};
pub use written::written_form;
use written::{dd_output, written_glob_names_rule};

/// The rules of one settings file, kept current while the driver runs.
#[derive(Debug)]
pub struct Policy {
    /// The settings file, absolute.
    path: PathBuf,
    /// Whether every simple command must match an allow rule.
    allowlist: bool,
    /// The directory commands start in (absolute), when known.
    start_dir: Option<String>,
    /// The home directory (absolute, not `/`), when known: a directory in it is also
    /// spelled from `~`, and `~` as it.
    home: Option<String>,
    /// What the sandbox needs beyond the settings (`--sandbox`, the driver's paths).
    sandbox: Arc<crate::sandbox::Context>,
    /// The host a command runs on when it names none (`--host`).
    default_host: Option<String>,
    /// The rules in force. A check clones the `Arc` and lets go at once; a reload swaps it.
    rules: RwLock<Arc<RuleSet>>,
    /// What the file looked like at the last look. Held for a whole reload (stat, read,
    /// parse), so reloads run one at a time; checks never take it.
    seen: Mutex<Seen>,
    /// Dropped by [`Policy::stop`], which wakes and ends every reloader thread.
    stop_sender: Mutex<Option<Sender<()>>>,
    stop_receiver: Receiver<()>,
}

impl Policy {
    /// Reads the settings file at `path`. Under `allowlist`, every simple command must match
    /// an allow rule. The error names the file and says what is wrong with it.
    pub fn load(path: &Path, allowlist: bool) -> Result<Policy, SettingsError> {
        let io = |doing, path: &Path, error| SettingsError::Io {
            path: path.to_path_buf(),
            doing,
            error,
        };
        let path = std::path::absolute(path).map_err(|e| io("resolve settings path", path, e))?;
        let meta = fs::metadata(&path).map_err(|e| io("read settings file", &path, e))?;
        let bytes = fs::read(&path).map_err(|e| io("read settings file", &path, e))?;
        let rules = parse_bytes(&path, &bytes)?;
        let path_for_sandbox = path.clone();
        let (stop_sender, stop_receiver) = crossbeam_channel::bounded(0);
        Ok(Policy {
            path,
            allowlist,
            start_dir: None,
            home: None,
            sandbox: Arc::new(crate::sandbox::Context {
                settings: path_for_sandbox,
                home: home_dir(),
                ..Default::default()
            }),
            default_host: None,
            rules: RwLock::new(Arc::new(rules)),
            seen: Mutex::new(Seen {
                stamp: Some(Stamp::of(&meta)),
                bytes,
            }),
            stop_sender: Mutex::new(Some(stop_sender)),
            stop_receiver,
        })
    }

    /// Judges commands as run in `dir` (absolute), with `home` the home directory: a
    /// relative path operand of a command whose directory has not been changed in a way
    /// the text does not say is judged as the path it names from there, and a path in
    /// the home directory is also judged as spelled from `~` (and one from `~` as in
    /// `home`), so `rm -rf *` run in the home directory meets `Bash(rm -r ~/[*])`.
    /// Without it only the directories a `cd` to an absolute or `~` path leads to are
    /// known. A directory whose name is not UTF-8 or not absolute is taken as unknown.
    pub fn with_start_dir(mut self, dir: &Path, home: Option<&Path>) -> Policy {
        self.start_dir = canonical_dir(dir);
        self.home = home.and_then(canonical_dir).filter(|home| home != "/");
        self
    }

    /// Sandboxes commands as `context` says, besides the settings' `sandbox` section
    /// (the settings file in it is this policy's own).
    pub fn with_sandbox(mut self, mut context: crate::sandbox::Context) -> Policy {
        context.settings = self.path.clone();
        self.sandbox = Arc::new(context);
        self.refresh_sandbox();
        self
    }

    /// Whether commands run in the sandbox now (a text may still be let out, see
    /// [`Policy::sandbox_mode`]).
    pub fn sandbox_enabled(&self) -> bool {
        self.sandbox.enabled(&self.rules().sandbox)
    }

    /// How a command decided with `choice` runs, by the settings in force now.
    pub fn sandbox_mode(&self, choice: crate::sandbox::Choice) -> crate::sandbox::Mode {
        crate::sandbox::Mode::of(&self.rules().sandbox, &self.sandbox, choice)
    }

    /// What the sandbox does for commands, in lines, as found at the last look
    /// ([`Policy::refresh_sandbox`]); read under the tree's lock, so no disk is touched.
    pub fn sandbox_lines(&self) -> Vec<String> {
        self.sandbox.shown.lock().clone()
    }

    /// Looks again at the paths the sandbox names, for [`Policy::sandbox_lines`].
    pub fn refresh_sandbox(&self) {
        let cwd = self.start_dir.as_deref().unwrap_or("/");
        self.sandbox.refresh(&self.rules().sandbox, Path::new(cwd));
    }

    /// Runs commands that name no host on `host` (`--host`; `local` is this machine).
    pub fn with_default_host(mut self, host: Option<String>) -> Policy {
        self.default_host = host;
        self
    }

    /// The settings file (absolute).
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The rules in force now.
    pub(crate) fn rules(&self) -> Arc<RuleSet> {
        self.rules.read().clone()
    }

    /// Warnings about the entries of the settings file in force (said at start; a reload
    /// says them in its line).
    pub(crate) fn warnings(&self) -> Vec<String> {
        let rules = self.rules();
        rules
            .warnings
            .iter()
            .chain(&rules.sandbox.warnings)
            .map(|w| format!("settings file {}: {w}", self.path.display()))
            .collect()
    }

    /// How many rules are in force: deny and ask, and allow under `--allowlist`.
    pub(crate) fn rule_count(&self) -> usize {
        self.count(&self.rules())
    }

    fn count(&self, rules: &RuleSet) -> usize {
        rules.deny.len() + rules.ask.len() + if self.allowlist { rules.allow.len() } else { 0 }
    }

    /// Decides whether shell text may run by the rules: a command's text without its
    /// `#terminalfs` lines in mind, or a script given to a shell. Bytes that are not
    /// UTF-8 are read lossily. The directory the text starts in is taken as unknown (a
    /// shell's script may follow a `cd` written to it before).
    pub fn check(&self, text: &[u8]) -> Verdict {
        guarded(text, || self.check_rules(text))
            .unwrap_or_else(|| refusal(CHECKER_FAILED.to_string()))
    }

    fn check_rules(&self, text: &[u8]) -> Verdict {
        if let Some(reason) = plain_refusal(text) {
            return refusal(reason.to_owned());
        }
        let text = String::from_utf8_lossy(text);
        let split = splitter::split(&text);
        let judged = judge_in_directories(&split.commands, None, self.home.as_deref());
        self.decide(&text, &split, &judged, None)
    }

    /// The whole decision on a command's text, the one the mount makes at a close and
    /// `terminalfs check` prints: nothing but blanks and NUL bytes are refused, then bad
    /// `#terminalfs` lines, then a shell on a terminal while rules are in force, then
    /// the rules ([`Policy::check`], with the text starting in the directory given to
    /// [`Policy::with_start_dir`]).
    pub fn explain(&self, text: &[u8]) -> Explained {
        guarded(text, || self.explain_unguarded(text)).unwrap_or_else(|| Explained {
            verdict: refusal(CHECKER_FAILED.to_string()),
            commands: Vec::new(),
            written: Vec::new(),
            directives: Directives::default(),
            shell_input: None,
            judged: Vec::new(),
        })
    }

    fn explain_unguarded(&self, text: &[u8]) -> Explained {
        let refused = |reason: String| Explained {
            verdict: refusal(reason),
            commands: Vec::new(),
            written: Vec::new(),
            directives: Directives::default(),
            shell_input: None,
            judged: Vec::new(),
        };
        if let Some(reason) = plain_refusal(text) {
            return refused(reason.to_owned());
        }
        let text = String::from_utf8_lossy(text);
        let mut directives = match self.directives(&text) {
            Ok(directives) => directives,
            Err(reason) => return refused(format!("refused: {reason}")),
        };
        // The host is judged here, before anything leaves the machine; the directive
        // then names the host the command runs on (None: this machine).
        let rules = self.rules();
        let name = directives.host.as_deref().or(self.default_host.as_deref());
        match rules.hosts.choose(name, self.sandbox_enabled()) {
            // `cwd=` names a directory here; the far side's is its entry's "cwd".
            Ok(Some(host)) if directives.cwd.is_some() => {
                return refused(format!(
                    "refused: cwd= names a directory on this machine, and the command runs \
                     on host {}; set \"cwd\" in its entry of the settings' hosts instead",
                    host.name
                ))
            }
            Ok(host) => directives.host = host.map(|host| host.name.clone()),
            Err(reason) => return refused(reason),
        }
        // A `cwd=` directive moves where the commands start, and so what they name.
        let start_dir = match &directives.cwd {
            Some(dir) => canonical_dir(dir),
            None => self.start_dir.clone(),
        };
        let split = splitter::split(&text);
        let judged =
            judge_in_directories(&split.commands, start_dir.as_deref(), self.home.as_deref());
        let shell_input = match directives.input {
            Input::Closed => None,
            Input::Pipe | Input::Terminal(_) => shell_reading_input(&split),
        };
        let verdict = match (&shell_input, directives.input) {
            (Some(why), Input::Terminal(_)) if self.rule_count() > 0 => {
                refusal(shell_on_terminal_reason(why))
            }
            _ => self.decide(&text, &split, &judged, start_dir.as_deref()),
        };
        let verdict = match verdict {
            Verdict::Allow => match crate::sandbox::review(
                &self.rules().sandbox,
                &self.sandbox,
                directives.sandbox == crate::sandbox::Choice::Off,
                &text,
                &split.commands,
            ) {
                Ok(choice) => {
                    // A host command has passed `Hosts::choose`: under the sandbox only
                    // an entry marked "unsandboxed" gets here, and its launcher runs
                    // outside (it needs the network and ~/.ssh).
                    directives.sandbox = match directives.host {
                        Some(_) => crate::sandbox::Choice::Host,
                        None => choice,
                    };
                    Verdict::Allow
                }
                Err(reason) => refusal(reason),
            },
            denied => denied,
        };
        Explained {
            verdict,
            commands: split.commands,
            written: split.written,
            directives,
            shell_input,
            judged,
        }
    }

    /// The `#terminalfs` lines of `text`, its `cwd=` made the directory it names (see
    /// [`directives::resolve_cwd`]), or why they refuse it.
    pub(crate) fn directives(&self, text: &str) -> Result<Directives, String> {
        let mut directives = parse_directives(text)?;
        if let Some(dir) = directives.cwd.take() {
            let base = self.start_dir.as_deref().map(Path::new);
            directives.cwd = Some(directives::resolve_cwd(&dir, base, &home_dir())?);
        }
        Ok(directives)
    }

    /// [`Policy::explain`]'s verdict for a command's text still being written. Only what
    /// no later text can change is refused. Text whose last line is complete (it ends
    /// with a newline that no backslash joins to the next line) is judged whole: later
    /// writes may add lines, not change this one (`echo hi | bash` then stays what it
    /// is). Other text is judged up to its last whitespace: a write that ends inside a
    /// word (`rm -rf /` of `rm -rf /tmp/x`) is not judged on half a word. Either way a
    /// refusal stands only if it also holds with one more word after it, on the line that
    /// may go on or on a line of its own, since the last command may still grow (`bash`
    /// of `bash build.sh`), a quote or here-document left open may take the next line,
    /// and a rule may name the whole text. Text that is blank so far is not refused:
    /// more may come. The full check at the close still runs.
    pub(crate) fn check_partial(&self, text: &[u8]) -> Verdict {
        let (judged, next): (&[u8], &[u8]) = if ends_a_line(text) {
            (text, b"terminalfs-next-word")
        } else {
            match text.iter().rposition(u8::is_ascii_whitespace) {
                Some(end) => (&text[..end], b" terminalfs-next-word"),
                None => return Verdict::Allow,
            }
        };
        if judged.iter().all(u8::is_ascii_whitespace) {
            return Verdict::Allow;
        }
        let verdict = self.explain(judged).verdict;
        if verdict.is_allowed() || self.explain(&[judged, next].concat()).verdict.is_allowed() {
            Verdict::Allow
        } else {
            verdict
        }
    }
}

/// Whether `text` ends with a newline that ends its last line: not one a backslash
/// escapes, which joins the next line to it.
fn ends_a_line(text: &[u8]) -> bool {
    let Some(body) = text.strip_suffix(b"\n") else {
        return false;
    };
    let backslashes = body.iter().rev().take_while(|&&b| b == b'\\').count();
    backslashes % 2 == 0
}

#[cfg(test)]
mod samples;
#[cfg(test)]
mod tests;

/// Runs one decision on `text` inside the driver's panic guard (see `crate::panics`):
/// a panic comes back as None, logged once with what was being checked. Sound because a
/// decision's state lives in that one call and the rules are only read.
fn guarded<T>(text: &[u8], decide: impl FnOnce() -> T) -> Option<T> {
    crate::panics::guard(
        || checking(text),
        || {
            if crate::panics::injected(crate::panics::Site::Check, text) {
                panic!("a panic injected for a test");
            }
            #[cfg(test)]
            tests::panic_if_asked();
            decide()
        },
    )
}
