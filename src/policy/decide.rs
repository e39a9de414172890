//! The rules applied to a split text: every spelling of every simple command, every
//! file written, deny and ask rules first, then fork bombs, crude reads, and allow rules
//! under `--allowlist`.

use std::collections::HashSet;

use super::*;

impl Policy {
    /// The rules' verdict on `text`, split into `split`, whose commands have the judged
    /// spellings `judged` too.
    /// Files written relative to the directory the text starts in are judged from `start`
    /// when it is given.
    pub(super) fn decide(
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
}

/// The first rule, in file order, that matches any of the candidates, with the first
/// candidate it matches.
pub(super) fn first_match<'r, 'c>(
    rules: &'r [Rule],
    candidates: &'c [Candidate],
) -> Option<(&'r Rule, &'c Candidate)> {
    rules.iter().find_map(|rule| {
        let candidate = candidates.iter().find(|c| rule.matches_candidate(c))?;
        Some((rule, candidate))
    })
}

/// A command name that is a pattern, compiled as bash reads it: a `*` or `?` stops at a
/// `/`, and letters match in either case (`shopt -s nocaseglob` may be on).
pub(super) fn name_glob(base: &str) -> Result<glob::Glob, glob::GlobError> {
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
pub(super) fn glob_names_rule<'r>(glob: &str, rules: &'r [Rule]) -> Option<(&'r Rule, &'r str)> {
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
