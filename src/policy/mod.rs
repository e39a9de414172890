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
pub mod directives;
pub mod fork_bomb;
pub(crate) mod glob;
pub mod options;
pub mod rules;
pub mod settings;
pub mod shell_input;
pub mod splitter;

use std::collections::HashSet;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use parking_lot::{Mutex, RwLock};

pub use audit::default_audit_path;
pub use directives::{parse_directives, Directives, Input};
pub use rules::{Candidate, Rule};
pub use settings::{
    default_settings_json, default_settings_path, home_dir, init_settings, RuleSet, SettingsError,
};
pub use shell_input::{check_shell_input, shell_on_terminal_reason, shell_reading_input};
pub use splitter::{SimpleCommand, Split};

/// The answer to "may this text run?".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Run it.
    Allow,
    /// Refuse it. `rule` is the entry that refused it, when one did; `reason` is the
    /// sentence shown in `cmd/<name>/reason`.
    Deny {
        rule: Option<String>,
        reason: String,
    },
}

impl Verdict {
    /// Whether the command may run.
    pub fn is_allowed(&self) -> bool {
        matches!(self, Verdict::Allow)
    }
}

/// The decision on a command's text, as a mount makes it: the verdict, the simple
/// commands it was reached on, and what a command that may run needs to start.
#[derive(Debug, Clone)]
pub struct Explained {
    pub verdict: Verdict,
    pub commands: Vec<SimpleCommand>,
    /// The files redirections write, each checked as `> FILE` (see [`written_form`]).
    pub written: Vec<String>,
    /// The `#terminalfs` lines (the defaults when they were not read).
    pub directives: Directives,
    /// Why what is written to the command's input is checked as a shell's script: the
    /// program that may be a shell reading it. None when it takes no input, or no
    /// program of it may read its input as commands.
    pub shell_input: Option<String>,
    /// For each of `commands`, its spellings with relative path operands made absolute
    /// (see [`Candidate::in_directory`]), which deny and ask rules are checked against too.
    pub judged: Vec<Vec<Candidate>>,
}

impl Explained {
    /// The text `terminalfs check` prints: the decision, the rule and the reason, then
    /// every simple command with its other spellings (wrappers peeled, basenames).
    pub fn report(&self) -> String {
        let mut out = String::new();
        match &self.verdict {
            Verdict::Allow => out.push_str("allowed\n"),
            Verdict::Deny { rule, reason } => {
                out.push_str("refused\n");
                if let Some(rule) = rule {
                    out.push_str(&format!("rule: {rule}\n"));
                }
                out.push_str(&format!("reason: {reason}\n"));
            }
        }
        if let (Verdict::Allow, Some(host)) = (&self.verdict, &self.directives.host) {
            out.push_str(&format!("host: {host} (the text runs there)\n"));
        }
        if let (Verdict::Allow, Some(why)) = (&self.verdict, &self.shell_input) {
            out.push_str(&format!(
                "input: checked against the rules as a shell's script, as {why}\n"
            ));
        }
        out.push_str(&format!("simple commands: {}\n", self.commands.len()));
        let none = Vec::new();
        for (index, command) in self.commands.iter().enumerate() {
            let mut forms = command.forms.iter();
            if let Some(first) = forms.next() {
                out.push_str(&format!("  {}\n", rules::normalize(first)));
            }
            for form in forms {
                out.push_str(&format!("    also: {}\n", rules::normalize(form)));
            }
            for judged in self.judged.get(index).unwrap_or(&none) {
                let why = judged.judged.as_deref().unwrap_or("");
                out.push_str(&format!("    judged as: {} ({why})\n", judged.text));
            }
        }
        if !self.written.is_empty() {
            out.push_str(&format!("files written: {}\n", self.written.len()));
            for file in &self.written {
                out.push_str(&format!("  {}\n", written_form(file)));
            }
        }
        out
    }
}

/// The reason given for text that holds no command.
pub const NO_COMMAND_REASON: &str = "refused: no command: only whitespace was written";

/// The reason given for text holding a NUL byte: a shell drops it, so the text it runs is
/// not the text checked (`su\0do` runs `sudo`).
pub const NUL_REASON: &str = "refused: the command holds a NUL byte, which a shell would drop";

/// The refusal every text gets whatever the rules: nothing but blanks, or a NUL byte.
pub fn plain_refusal(text: &[u8]) -> Option<&'static str> {
    if text.iter().all(u8::is_ascii_whitespace) {
        Some(NO_COMMAND_REASON)
    } else if text.contains(&0) {
        Some(NUL_REASON)
    } else {
        None
    }
}

/// The reason given for a text whose check panicked: the driver logs the panic, the
/// text is refused, and nothing else is lost.
pub const CHECKER_FAILED: &str = "refused: the checker failed on this text (an internal \
     error, logged by the driver); nothing ran";

/// What a panic's log entry says was being done: checking a text, named as the audit
/// log names a long one.
fn checking(text: &[u8]) -> String {
    format!(
        "checking a command's text ({})",
        crate::log::capped(&String::from_utf8_lossy(text))
    )
}

/// A refusal that names no rule.
fn refusal(reason: String) -> Verdict {
    Verdict::Deny { rule: None, reason }
}

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

/// The settings file as last seen: its identity and content, or absent.
#[derive(Debug, Default)]
struct Seen {
    /// None when the file could not be read at the last look (that has been logged).
    stamp: Option<Stamp>,
    bytes: Vec<u8>,
}

/// What identifies one version of the file without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    device: u64,
    inode: u64,
    length: u64,
    modified: (i64, i64),
    changed: (i64, i64),
}

impl Stamp {
    fn of(meta: &fs::Metadata) -> Stamp {
        Stamp {
            device: meta.dev(),
            inode: meta.ino(),
            length: meta.len(),
            modified: (meta.mtime(), meta.mtime_nsec()),
            changed: (meta.ctime(), meta.ctime_nsec()),
        }
    }

    /// Whether the file changed so recently that a second write within the same clock tick
    /// could have left the stamp as it is; such a file is compared by content too.
    fn is_recent(&self) -> bool {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        self.modified.0.max(self.changed.0) >= now - 2
    }
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
        crate::panics::guard(
            || checking(text),
            || {
                if crate::panics::injected(crate::panics::Site::Check, text) {
                    panic!("a panic injected for a test");
                }
                #[cfg(test)]
                tests::panic_if_asked();
                self.check_rules(text)
            },
        )
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
        crate::panics::guard(
            || checking(text),
            || {
                if crate::panics::injected(crate::panics::Site::Check, text) {
                    panic!("a panic injected for a test");
                }
                #[cfg(test)]
                tests::panic_if_asked();
                self.explain_unguarded(text)
            },
        )
        .unwrap_or_else(|| Explained {
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

    /// The rules' verdict on `text`, split into `split`, whose commands have the judged
    /// spellings `judged` too.
    /// Files written relative to the directory the text starts in are judged from `start`
    /// when it is given.
    fn decide(
        &self,
        text: &str,
        split: &Split,
        judged: &[Vec<Candidate>],
        start: Option<&str>,
    ) -> Verdict {
        let rules = self.rules();
        let commands = &split.commands;
        // Hashing a spelling costs far less than reading it again (options, operands):
        // the text itself is often its one command's one spelling.
        let mut seen = HashSet::new();
        let mut candidates = Vec::new();
        for form in std::iter::once(text).chain(
            commands
                .iter()
                .flat_map(|c| c.forms.iter().map(String::as_str)),
        ) {
            let spelling = Candidate::spelling(form);
            if !seen.contains(&spelling) {
                seen.insert(spelling.clone());
                candidates.push(Candidate::of_spelling(spelling));
            }
        }
        // After the spellings as written, so a rule that matches both is reported plainly.
        candidates.extend(judged.iter().flatten().cloned());
        let home = self.home.as_deref();
        let from_start: Vec<String> = match start {
            Some(start) => split
                .written
                .iter()
                .filter(|file| !options::is_rooted(file) && !file.contains(['$', '`']))
                .filter_map(|file| options::join_path(start, file))
                .collect(),
            None => Vec::new(),
        };
        let mut written: Vec<&str> = split.written.iter().map(String::as_str).collect();
        written.extend(from_start.iter().map(String::as_str));
        for command in commands {
            for form in &command.forms {
                written.extend(dd_output(form));
                candidates.extend(path_candidates(form, home));
            }
        }
        for file in &written {
            candidates.push(Candidate::new(&written_form(file)));
            for other in path_spellings(file, home, false) {
                candidates.push(Candidate {
                    judged: Some(format!("'{file}' is judged as '{other}'")),
                    ..Candidate::new(&format!("> {other}"))
                });
            }
        }
        let globbed = commands.iter().flat_map(|c| &c.name_globs);
        if !(rules.deny.is_empty() && rules.ask.is_empty()) {
            let unread = globbed.clone().find_map(|glob| {
                let base = glob.rsplit('/').next().unwrap_or(glob);
                match name_glob(base) {
                    Err(err @ glob::GlobError::TooLong(_)) => Some((glob, err)),
                    _ => None,
                }
            });
            if let Some((glob, err)) = unread {
                return refusal(format!(
                    "refused: the command name '{}' is a pattern that could name a program a \
                     rule refuses, and it is not checked: {err}",
                    shortened(glob)
                ));
            }
        }
        for (kind, list) in [("denied", &rules.deny), ("refused by 'ask'", &rules.ask)] {
            if let Some((rule, candidate)) = first_match(list, &candidates) {
                let judged = candidate
                    .judged
                    .as_ref()
                    .map_or(String::new(), |why| format!(" ({why})"));
                return Verdict::Deny {
                    rule: Some(rule.text().to_owned()),
                    reason: if kind == "denied" {
                        format!(
                            "denied by rule '{}' in {}{judged}",
                            rule.text(),
                            self.path.display()
                        )
                    } else {
                        format!(
                            "refused by 'ask' rule '{}' in {}{judged}: it needs a \
                             confirmation and nobody is here to give one",
                            rule.text(),
                            self.path.display()
                        )
                    },
                };
            }
            if let Some((file, rule)) = written_glob_names_rule(&written, list, home) {
                return Verdict::Deny {
                    rule: Some(rule.text().to_owned()),
                    reason: format!(
                        "the file '{file}' a redirection writes is a pattern that could \
                         name a file {kind} by rule '{}' in {}",
                        rule.text(),
                        self.path.display()
                    ),
                };
            }
            for glob in globbed.clone() {
                if let Some((rule, program)) = glob_names_rule(glob, list) {
                    return Verdict::Deny {
                        rule: Some(rule.text().to_owned()),
                        reason: format!(
                            "the command name '{glob}' is a pattern that could name \
                             '{program}', {kind} by rule '{}' in {}",
                            rule.text(),
                            self.path.display()
                        ),
                    };
                }
            }
        }
        if self.count(&rules) > 0 {
            if let Some(name) = fork_bomb::fork_bomb(text) {
                if name.is_empty() {
                    return refusal(
                        "refused: its function definitions are too tangled (too many that \
                         never close) to check for a fork bomb"
                            .to_string(),
                    );
                }
                return refusal(format!(
                    "refused: the function '{name}' runs itself in a pipeline or in the \
                     background, which makes processes until there are none left (a fork \
                     bomb)"
                ));
            }
        }
        if let Some(construct) = &split.refusal {
            return Verdict::Deny {
                rule: None,
                reason: format!(
                    "{construct}, so it is refused rather than run unchecked against the rules"
                ),
            };
        }
        if self.allowlist {
            for command in commands.iter().filter(|c| !c.transparent) {
                let allowed = command.innermost.iter().any(|form| {
                    let form = Candidate::new(form);
                    rules.allow.iter().any(|rule| rule.allows(&form))
                });
                if !allowed {
                    let shown = command.forms.first().map(String::as_str).unwrap_or("");
                    return Verdict::Deny {
                        rule: None,
                        reason: format!(
                            "'{}' matches no allow rule in {} (running with --allowlist)",
                            rules::normalize(shown),
                            self.path.display()
                        ),
                    };
                }
            }
        }
        Verdict::Allow
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

    /// Looks at the settings file and reloads it if it changed. Returns a line to log when
    /// something happened: the rules were reloaded, or a change could not be loaded and the
    /// old rules stay in force (said once per change, not on every call). None when the file
    /// is as it was.
    pub(crate) fn reload_if_changed(&self) -> Option<String> {
        let mut seen = self.seen.lock();
        let looked = fs::metadata(&self.path).and_then(|meta| {
            let stamp = Stamp::of(&meta);
            if seen.stamp == Some(stamp) && !stamp.is_recent() {
                return Ok((stamp, None));
            }
            Ok((stamp, Some(fs::read(&self.path)?)))
        });
        let (stamp, bytes) = match looked {
            Ok((_, None)) => return None,
            Ok((stamp, Some(bytes))) => (stamp, bytes),
            Err(err) => {
                // Said once: a file already seen missing stays quiet until it comes back.
                seen.stamp.take()?;
                seen.bytes.clear();
                return Some(format!(
                    "settings file {} cannot be read ({err}); keeping the {} rules in force",
                    self.path.display(),
                    self.rule_count()
                ));
            }
        };
        if seen.stamp == Some(stamp) && seen.bytes == bytes {
            return None;
        }
        let parsed = parse_bytes(&self.path, &bytes);
        seen.stamp = Some(stamp);
        seen.bytes = bytes;
        match parsed {
            Ok(rules) => {
                let count = self.count(&rules);
                let mut line = format!(
                    "settings reloaded from {}: {count} rules",
                    self.path.display()
                );
                for warning in rules.warnings.iter().chain(&rules.sandbox.warnings) {
                    line.push_str(&format!("; warning: {warning}"));
                }
                *self.rules.write() = Arc::new(rules);
                Some(line)
            }
            Err(err) => Some(format!(
                "{err}; keeping the {} rules in force",
                self.rule_count()
            )),
        }
    }

    /// Starts a thread that calls [`Policy::reload_if_changed`] every `every` and passes each
    /// line it returns to `log`, until [`Policy::stop`] is called or the policy is dropped.
    pub(crate) fn spawn_reloader(
        self: &Arc<Self>,
        every: Duration,
        log: impl Fn(&str) + Send + 'static,
    ) -> JoinHandle<()> {
        let policy: Weak<Policy> = Arc::downgrade(self);
        let stop = self.stop_receiver.clone();
        std::thread::Builder::new()
            .name("tfs-settings".to_owned())
            .spawn(move || loop {
                match stop.recv_timeout(every) {
                    Err(RecvTimeoutError::Timeout) => {}
                    Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
                }
                let Some(policy) = policy.upgrade() else {
                    return;
                };
                if let Some(line) = policy.reload_if_changed() {
                    log(&line);
                }
                policy.refresh_sandbox();
            })
            .expect("the OS has room for one more thread at startup")
    }

    /// Ends every reloader thread promptly (they return within one wake-up).
    pub(crate) fn stop(&self) {
        self.stop_sender.lock().take();
    }
}

fn parse_bytes(path: &Path, bytes: &[u8]) -> Result<RuleSet, SettingsError> {
    let text = std::str::from_utf8(bytes).map_err(|error| SettingsError::NotUtf8 {
        path: path.to_path_buf(),
        error,
    })?;
    RuleSet::parse(text).map_err(|why| SettingsError::Invalid {
        path: path.to_path_buf(),
        why,
    })
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

/// How a file a redirection writes is checked against the rules: `> FILE`, its path
/// made canonical as an operand of `rm` is (`> //dev/./sda` is `> /dev/sda`), so
/// `Bash(> /dev/sd*)` refuses `cat x > /dev/sda`, `>> /dev/sda`, `&> /dev/sda` alike.
pub fn written_form(file: &str) -> String {
    format!("> {}", options::canonical_path(file))
}

/// The file `dd` writes (`of=FILE`) in one spelling of a command; a redirection in all
/// but name, checked as `> FILE` too.
fn dd_output(form: &str) -> Option<&str> {
    let mut words = form.split_whitespace();
    let program = words.next()?;
    if program.rsplit('/').next() != Some("dd") {
        return None;
    }
    words.filter_map(|w| w.strip_prefix("of=")).next_back()
}

/// The other spellings of a path, which deny and ask rules see too: with the well-known
/// symbolic links before a `..` followed ([`options::physical_path`]), a path in the
/// home directory spelled from `~` (`/root/x` is `~/x` when the home directory is
/// `/root`), one from `~` as in the home directory, and, when `canonical` is asked for,
/// the path made canonical ([`options::canonical_path`]). Empty for a path that is not
/// rooted.
fn path_spellings(path: &str, home: Option<&str>, canonical: bool) -> Vec<String> {
    if !options::is_rooted(path) {
        return Vec::new();
    }
    // Most paths have no other spelling: found without building any.
    let through_links = path.contains("/..") || path.contains("proc/");
    let home_named = path.starts_with(['~', '$']) || home.is_some_and(|h| path.contains(h));
    if !(canonical || through_links || home_named) {
        return Vec::new();
    }
    let mut bases = vec![options::canonical_path(path)];
    if through_links {
        bases.extend(options::physical_path(path));
    }
    let mut out: Vec<String> = Vec::new();
    for (index, base) in bases.into_iter().enumerate() {
        for (from_home, spelling) in spellings_of_dir(base, home).into_iter().enumerate() {
            let wanted = index > 0 || from_home > 0 || canonical;
            if wanted && spelling != path && !out.contains(&spelling) {
                out.push(spelling);
            }
        }
    }
    out
}

/// The spellings of a command with its rooted path operands (and `dd`'s `of=`) spelled
/// as [`path_spellings`] spells them, each with what they were judged as; none when no
/// operand has another spelling.
fn path_candidates(form: &str, home: Option<&str>) -> Vec<Candidate> {
    let words: Vec<&str> = form.split_whitespace().collect();
    let dd = words.first().and_then(|w| w.rsplit('/').next()) == Some("dd");
    let others: Vec<Vec<String>> = words
        .iter()
        .map(|word| match word.strip_prefix("of=").filter(|_| dd) {
            Some(file) => path_spellings(file, home, true)
                .into_iter()
                .map(|p| format!("of={p}"))
                .collect(),
            None => path_spellings(word, home, false),
        })
        .collect();
    let count = others.iter().map(Vec::len).max().unwrap_or(0);
    (0..count)
        .map(|k| {
            let mut judged = Vec::new();
            let text: Vec<&str> = words
                .iter()
                .zip(&others)
                .map(|(word, other)| match other.get(k).or(other.last()) {
                    Some(spelling) => {
                        judged.push(format!("'{word}' is judged as '{spelling}'"));
                        spelling.as_str()
                    }
                    None => word,
                })
                .collect();
            Candidate {
                judged: Some(judged.join(", ")),
                ..Candidate::new(&text.join(" "))
            }
        })
        .collect()
}

/// The first file written that is a glob (`> /dev/s[d]a`) with the first rule about a
/// written file (`Bash(> /dev/sd*)`) whose pattern could name a file it matches: bash
/// writes to the one file the glob matches.
fn written_glob_names_rule<'f, 'r>(
    written: &[&'f str],
    rules: &'r [Rule],
    home: Option<&str>,
) -> Option<(&'f str, &'r Rule)> {
    // A relative pattern names files in a directory not known here: judged only once
    // made rooted (the splitter notes it joined to a rooted directory it runs in).
    let is_glob = |file: &&&str| {
        options::is_rooted(file)
            && (file.contains(['*', '?', '['])
                || ["+(", "@(", "!("].iter().any(|e| file.contains(e)))
    };
    let mut globs = written.iter().filter(is_glob).peekable();
    globs.peek()?;
    // Letters are compared in either case: `shopt -s nocaseglob` may be on.
    let patterns: Vec<(&Rule, options::GlobPattern)> = rules
        .iter()
        .filter_map(|rule| {
            let pattern = rule.written_pattern()?.to_ascii_lowercase();
            Some((rule, options::GlobPattern::new(&pattern)))
        })
        .collect();
    for file in globs {
        let mut spellings = vec![options::canonical_path(file)];
        if file.contains("/..") || file.contains("proc/") {
            spellings.extend(options::physical_path(file));
        }
        spellings.extend(path_spellings(file, home, false));
        let spellings: Vec<options::GlobPattern> = spellings
            .iter()
            .map(|s| options::GlobPattern::new(&s.to_ascii_lowercase()))
            .collect();
        for (rule, pattern) in &patterns {
            if spellings.iter().any(|file| file.path_overlaps(pattern)) {
                return Some((file, rule));
            }
        }
    }
    None
}

/// The first rule, in file order, that matches any of the candidates, with the first
/// candidate it matches.
fn first_match<'r, 'c>(
    rules: &'r [Rule],
    candidates: &'c [Candidate],
) -> Option<(&'r Rule, &'c Candidate)> {
    rules.iter().find_map(|rule| {
        let candidate = candidates.iter().find(|c| rule.matches_candidate(c))?;
        Some((rule, candidate))
    })
}

/// For each command, its spellings with relative path operands made absolute, where the
/// directory it runs in is known: rooted, or relative to `start` (absolute) when given.
/// A directory in `home` is spelled both ways, from `/` and from `~`.
fn judge_in_directories(
    commands: &[SimpleCommand],
    start: Option<&str>,
    home: Option<&str>,
) -> Vec<Vec<Candidate>> {
    commands
        .iter()
        .map(|command| {
            let dir = command.dir.as_deref().and_then(|dir| {
                if options::is_rooted(dir) {
                    Some(dir.to_owned())
                } else {
                    options::join_path(start?, dir)
                }
            });
            let Some(dir) = dir else {
                return Vec::new();
            };
            let mut judged: Vec<Candidate> = Vec::new();
            for dir in spellings_of_dir(dir, home) {
                for form in &command.forms {
                    if let Some(candidate) = Candidate::in_directory(form, &dir) {
                        if !judged.iter().any(|c| c.text == candidate.text) {
                            judged.push(candidate);
                        }
                    }
                }
            }
            judged
        })
        .collect()
}

/// An absolute directory, canonical (`..` folded); None when it is not UTF-8 or not
/// absolute.
fn canonical_dir(dir: &Path) -> Option<String> {
    dir.to_str()
        .filter(|dir| dir.starts_with('/'))
        .and_then(|dir| options::join_path("/", dir))
}

/// `dir` (`/`- or `~`-rooted, canonical), and the same directory (or file) spelled from
/// the other root when it is in `home`. A `~` path is made canonical again once the home
/// directory stands for `~` (`~/../../dev/sda` is `/dev/sda`, `~/../root/x` is `~/x` again
/// when the home directory is `/root`); `~NAME`, NAME being the last name of the home
/// directory, is `~`.
fn spellings_of_dir(dir: String, home: Option<&str>) -> Vec<String> {
    let mut out = vec![dir];
    let Some(home) = home else {
        return out;
    };
    let from_home = |path: &str| {
        let rest = path.strip_prefix(home)?;
        (rest.is_empty() || rest.starts_with('/')).then(|| format!("~{rest}"))
    };
    let other = match out[0].strip_prefix('~') {
        Some(rest) => {
            let (user, rest) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let owner = user.is_empty() || home.rsplit('/').next() == Some(user);
            owner.then(|| options::canonical_path(&format!("{home}{rest}")))
        }
        None => from_home(&out[0]),
    };
    if let Some(other) = other {
        let again = from_home(&other).filter(|_| other.starts_with('/'));
        for spelling in std::iter::once(other).chain(again) {
            if !out.contains(&spelling) {
                out.push(spelling);
            }
        }
    }
    out
}

/// A command name that is a pattern, compiled as bash reads it: a `*` or `?` stops at a
/// `/`, and letters match in either case (`shopt -s nocaseglob` may be on).
fn name_glob(base: &str) -> Result<glob::Glob, glob::GlobError> {
    glob::Glob::new(
        base,
        glob::GlobOptions {
            literal_separator: true,
            case_insensitive: true,
            backslash_escape: true,
        },
    )
}

/// `text` as a reason quotes it: whole when short, else its first 60 characters, an
/// ellipsis and its length.
pub(crate) fn shortened(text: &str) -> String {
    const SHOWN: usize = 60;
    match text.char_indices().nth(SHOWN) {
        Some((end, _)) => format!("{}… ({} bytes)", &text[..end], text.len()),
        None => text.to_owned(),
    }
}

/// The first rule whose program a command name that is a glob (`/usr/bin/sud?`, `zap*`)
/// could name, with that program. Letters match in either case (`shopt -s nocaseglob`
/// may be on). A bracket form bash reads and the matcher does not (`[[=o=]]`,
/// `[[.o.]]`, `[[:alpha:]]`), or an extended glob (`@(sud)o`), could name any program:
/// the first rule that names one is taken. A pattern the matcher cannot compile (an
/// unclosed `[`, as in `[` itself) is a literal name to bash too, and names nothing else;
/// one too long to compile is refused before this is asked ([`glob::MAX_GLOB`]).
fn glob_names_rule<'r>(glob: &str, rules: &'r [Rule]) -> Option<(&'r Rule, &'r str)> {
    let named = |rule: &'r Rule| Some((rule, rule.program()?));
    let base = glob.rsplit('/').next().unwrap_or(glob);
    let extended = ["?(", "*(", "+(", "@(", "!("];
    if ["[=", "[.", "[:"]
        .iter()
        .chain(&extended)
        .any(|form| base.contains(form))
    {
        return rules.iter().find_map(named);
    }
    let matcher = name_glob(base).ok()?;
    rules.iter().find_map(|rule| {
        let (rule, program) = named(rule)?;
        let program_base = program.rsplit('/').next().unwrap_or(program);
        matcher.is_match(program_base).then_some((rule, program))
    })
}

#[cfg(test)]
mod samples;
#[cfg(test)]
mod tests;
