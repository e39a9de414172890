//! The answer a check gives: [`Verdict`], and [`Explained`], the decision with what it
//! was reached on, as `terminalfs check` prints it; the refusals every text may get
//! whatever the rules.

use super::{rules, written_form, Candidate, Directives, SimpleCommand};

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
            for (text, why) in &command.readings {
                out.push_str(&format!("    judged as: {text} ({why})\n"));
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
pub(super) fn checking(text: &[u8]) -> String {
    format!(
        "checking a command's text ({})",
        crate::log::capped(&String::from_utf8_lossy(text))
    )
}

/// A refusal that names no rule.
pub(super) fn refusal(reason: String) -> Verdict {
    Verdict::Deny { rule: None, reason }
}
