//! One permission rule, parsed from an entry of a Claude Code settings file, and matched
//! against one normalised command.
//!
//! Only `Bash` entries make rules; entries for other tools (`Read(...)`, `WebFetch(...)`,
//! `mcp__server__tool`) are recognised and skipped so one file can serve both. A `Bash`
//! entry has one of four shapes: bare `Bash` or `Bash(*)` matches everything;
//! `Bash(git push:*)` is a prefix that ends at a word boundary; a pattern holding `*`, `?`
//! or `[` is a glob anchored at both ends in which `*` also crosses `/` and spaces (a `\`
//! escapes the next character); anything else must equal the command. Runs of whitespace
//! compare as one space on both sides, and both sides are trimmed. Matching is
//! case-sensitive. A rule whose program is `rm`, `git`, `chmod`, `chown` or `chgrp` also
//! matches option-aware (see [`options`](super::options)): `Bash(rm -r /)` names
//! `rm -rf /`, `rm --recursive --force -- //` and `rm -Rfv / x` alike.

use super::options::{resolve_operands, Argv, ArgvPattern};

/// A parsed `Bash(...)` permission rule.
#[derive(Debug, Clone)]
pub struct Rule {
    text: String,
    shape: Shape,
    /// The pattern read option-aware, when its program is one [`options`](super::options)
    /// knows (`rm`, `git`, `chmod`, `chown`, `chgrp`).
    argv: Option<ArgvPattern>,
}

/// One spelling of a command, normalised, and read option-aware when its program is one
/// that is matched that way.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub text: String,
    pub argv: Option<Argv>,
    /// For a spelling with its relative path operands made absolute, the sentence saying
    /// what they were judged as (`it runs in /, so '*' is judged as '/*'`).
    pub judged: Option<String>,
}

impl Candidate {
    pub fn new(command: &str) -> Candidate {
        Candidate::of_spelling(Candidate::spelling(command))
    }

    /// How [`Candidate::new`] spells `command` before reading it: whitespace normalized
    /// and numbers canonical. Two commands of one spelling are the same candidate.
    pub fn spelling(command: &str) -> String {
        canonical_numbers(normalize(command))
    }

    /// The candidate of a [`Candidate::spelling`].
    pub fn of_spelling(text: String) -> Candidate {
        let argv = Argv::read(&text);
        Candidate {
            text,
            argv,
            judged: None,
        }
    }

    /// The spelling of `command` run in `dir` (`/`- or `~`-rooted) with its relative path
    /// operands made absolute; None when it has none.
    pub fn in_directory(command: &str, dir: &str) -> Option<Candidate> {
        let (text, changed) = resolve_operands(command, dir)?;
        let operands: Vec<String> = changed
            .iter()
            .map(|(operand, path)| format!("'{operand}' is judged as '{path}'"))
            .collect();
        Some(Candidate {
            judged: Some(format!("it runs in {dir}, so {}", operands.join(", "))),
            ..Candidate::new(&text)
        })
    }
}

#[derive(Debug, Clone)]
enum Shape {
    /// `Bash`, `Bash(*)`, `Bash(:*)`.
    Everything,
    /// `Bash(prefix:*)` without glob characters in the prefix.
    Prefix(String),
    /// `Bash(pattern:*)` whose pattern has glob characters: the pattern alone, or followed
    /// by a space and anything.
    GlobPrefix(Glob, Glob),
    /// A pattern with glob characters.
    Glob(Glob),
    /// Anything else.
    Exact(String),
}

impl Rule {
    /// Parses one permission entry. `Ok(None)` for an entry about another tool; an error
    /// naming the entry when it is malformed.
    pub fn parse(entry: &str) -> Result<Option<Rule>, String> {
        let trimmed = entry.trim();
        if trimmed.is_empty() {
            return Err("empty permission entry".to_owned());
        }
        let (tool, argument) = match trimmed.find('(') {
            Some(open) => {
                let Some(inner) = trimmed[open + 1..].strip_suffix(')') else {
                    return Err(format!(
                        "permission entry '{entry}' does not end with ')' to close its '('"
                    ));
                };
                (&trimmed[..open], Some(inner))
            }
            None => (trimmed, None),
        };
        if tool.is_empty() || tool.contains(|c: char| c.is_whitespace() || c == ')') {
            return Err(format!(
                "permission entry '{entry}' does not start with a tool name such as Bash"
            ));
        }
        if tool != "Bash" {
            if tool.eq_ignore_ascii_case("bash") {
                return Err(format!(
                    "permission entry '{entry}' names the tool '{tool}'; tool names are \
                     case-sensitive, write 'Bash'"
                ));
            }
            return Ok(None);
        }
        let shape = match argument {
            None => Shape::Everything,
            Some(pattern) => Self::shape(entry, pattern)?,
        };
        let argv = argument.and_then(|pattern| {
            let pattern = normalize(pattern);
            match pattern.strip_suffix(":*") {
                Some(prefix) => ArgvPattern::new(prefix, true),
                None => ArgvPattern::new(&pattern, false),
            }
        });
        Ok(Some(Rule {
            text: entry.to_owned(),
            shape,
            argv,
        }))
    }

    fn shape(entry: &str, pattern: &str) -> Result<Shape, String> {
        let pattern = normalize(pattern);
        if pattern.is_empty() {
            return Err(format!(
                "permission entry '{entry}' has an empty pattern; write 'Bash' to match \
                 every command"
            ));
        }
        if pattern == "*" {
            return Ok(Shape::Everything);
        }
        if let Some(prefix) = pattern.strip_suffix(":*") {
            let prefix = normalize(prefix);
            if prefix.is_empty() {
                return Ok(Shape::Everything);
            }
            if !has_glob_characters(&prefix) {
                return Ok(Shape::Prefix(prefix));
            }
            let alone = Glob::new(entry, &prefix)?;
            let followed = Glob::new(entry, &format!("{prefix} *"))?;
            return Ok(Shape::GlobPrefix(alone, followed));
        }
        if has_glob_characters(&pattern) {
            return Ok(Shape::Glob(Glob::new(entry, &pattern)?));
        }
        Ok(Shape::Exact(pattern))
    }

    /// Whether the rule matches one command (normalised here, so any spacing will do);
    /// the rule tables of the tests read best this way.
    #[cfg(test)]
    pub fn matches(&self, command: &str) -> bool {
        if let Shape::Everything = self.shape {
            return true;
        }
        self.matches_candidate(&Candidate::new(command))
    }

    /// Whether the rule matches one spelling of a command: as text, or option-aware.
    pub fn matches_candidate(&self, candidate: &Candidate) -> bool {
        if matches!((&self.argv, &candidate.argv), (Some(p), Some(a)) if p.spares(a)) {
            return false;
        }
        self.matches_normalized(&candidate.text)
            || matches!((&self.argv, &candidate.argv), (Some(p), Some(a)) if p.matches(a, false))
    }

    /// [`Rule::matches_candidate`] for an allow rule: option-aware, a rule without `:*`
    /// needs the command's options to be exactly its own.
    pub fn allows(&self, candidate: &Candidate) -> bool {
        self.matches_normalized(&candidate.text)
            || matches!((&self.argv, &candidate.argv), (Some(p), Some(a)) if p.matches(a, true))
    }

    /// The program the rule names (its first word), when that word is plain text.
    pub fn program(&self) -> Option<&str> {
        let pattern = match &self.shape {
            Shape::Prefix(text) | Shape::Exact(text) => text.as_str(),
            Shape::GlobPrefix(glob, _) | Shape::Glob(glob) => glob.literal_start.as_str(),
            Shape::Everything => return None,
        };
        let first = pattern.split(' ').next()?;
        let complete = !matches!(self.shape, Shape::GlobPrefix(..) | Shape::Glob(_))
            || pattern.len() > first.len();
        (complete && !first.is_empty()).then_some(first)
    }

    /// [`Rule::matches`] for a command already passed through [`normalize`].
    pub fn matches_normalized(&self, command: &str) -> bool {
        match &self.shape {
            Shape::Everything => true,
            Shape::Prefix(prefix) => match command.strip_prefix(prefix.as_str()) {
                Some(rest) => rest.is_empty() || rest.starts_with(' '),
                None => false,
            },
            Shape::GlobPrefix(alone, followed) => {
                alone.is_match(command) || followed.is_match(command)
            }
            Shape::Glob(matcher) => matcher.is_match(command),
            Shape::Exact(exact) => *exact == command,
        }
    }

    /// The entry exactly as it was written in the settings file.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// For a rule about a file a redirection writes (`Bash(> /dev/sd*)`), its pattern
    /// for the file (`/dev/sd*`).
    pub fn written_pattern(&self) -> Option<&str> {
        let pattern = match &self.shape {
            Shape::Exact(text) | Shape::Prefix(text) => text.as_str(),
            Shape::Glob(_) | Shape::GlobPrefix(..) => self
                .text
                .strip_prefix("Bash(")?
                .strip_suffix(')')
                .map(|p| p.strip_suffix(":*").unwrap_or(p))?
                .trim(),
            Shape::Everything => return None,
        };
        pattern.strip_prefix("> ").map(str::trim_start)
    }
}

/// A `kill` command (normalised) with its numbers written without leading zeros:
/// `kill` reads `-01` and `-0000001` as `-1` (every process) and `-09` as signal 9,
/// so `kill -KILL -0000001` is `kill -KILL -1` to the rules. Other commands as they are.
fn canonical_numbers(text: String) -> String {
    let first = text.split(' ').next().unwrap_or("");
    let is_number = |word: &str| {
        let digits = word.strip_prefix('-').unwrap_or(word);
        digits.len() > 1 && digits.starts_with('0') && digits.bytes().all(|b| b.is_ascii_digit())
    };
    if first.rsplit('/').next() != Some("kill") || !text.split(' ').any(is_number) {
        return text;
    }
    let words: Vec<String> = text
        .split(' ')
        .map(|word| {
            if !is_number(word) {
                return word.to_owned();
            }
            let (sign, digits) = match word.strip_prefix('-') {
                Some(digits) => ("-", digits),
                None => ("", word),
            };
            let trimmed = digits.trim_start_matches('0');
            format!("{sign}{}", if trimmed.is_empty() { "0" } else { trimmed })
        })
        .collect();
    words.join(" ")
}

/// Collapses every run of whitespace to one space and trims both ends.
pub fn normalize(text: &str) -> String {
    if is_normal(text) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// Whether `text` is already as [`normalize`] leaves it: ASCII (so no other whitespace),
/// no whitespace but single spaces between words. Whole-slice passes the compiler makes
/// fast, which is most of a long command's check.
fn is_normal(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.is_ascii()
        && !bytes.starts_with(b" ")
        && !bytes.ends_with(b" ")
        && bytes
            .iter()
            .filter(|&&b| (b'\t'..=b'\r').contains(&b))
            .count()
            == 0
        && !text.contains("  ")
}

fn has_glob_characters(pattern: &str) -> bool {
    pattern.contains(['*', '?', '['])
}

/// An anchored glob in which `*` crosses `/`, with its literal start checked first: most
/// commands fail that cheap test, which keeps a check of many commands fast.
#[derive(Debug, Clone)]
struct Glob {
    literal_start: String,
    matcher: super::glob::Glob,
}

impl Glob {
    /// Compiles `pattern`; braces are literal characters, `\` escapes the next one.
    fn new(entry: &str, pattern: &str) -> Result<Glob, String> {
        let mut escaped = String::with_capacity(pattern.len());
        for c in pattern.chars() {
            if matches!(c, '{' | '}' | ',') {
                escaped.push('\\');
            }
            escaped.push(c);
        }
        let matcher = super::glob::Glob::new(&escaped, super::glob::RULE)
            .map_err(|err| format!("permission entry '{entry}' has a bad glob pattern: {err}"))?;
        let literal_end = pattern.find(['*', '?', '[', '\\']).unwrap_or(pattern.len());
        Ok(Glob {
            literal_start: pattern[..literal_end].to_owned(),
            matcher,
        })
    }

    fn is_match(&self, command: &str) -> bool {
        command.starts_with(&self.literal_start) && self.matcher.is_match(command)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(entry: &str) -> Rule {
        Rule::parse(entry)
            .expect("the test entry parses")
            .expect("the test entry is a Bash rule")
    }

    #[test]
    fn other_tools_are_skipped() {
        for entry in [
            "Read(./secrets/**)",
            "WebFetch(domain:example.com)",
            "Edit",
            "Write(src/*)",
            "mcp__github__create_issue",
            "  Read  ",
            "Glob()",
        ] {
            assert!(
                Rule::parse(entry).expect("other tools parse").is_none(),
                "{entry}"
            );
        }
    }

    #[test]
    fn malformed_entries_are_errors_naming_the_entry() {
        for entry in [
            "",
            "   ",
            "Bash(",
            "Bash()",
            "Bash(  )",
            "Bash(foo",
            "Bash(foo)x",
            "(sudo)",
            "bash(sudo:*)",
            "BASH",
            "Read(",
            "Bash(echo [)",
        ] {
            let err = Rule::parse(entry).expect_err(entry);
            if !entry.trim().is_empty() {
                assert!(err.contains(entry), "{err}");
            }
        }
    }

    #[test]
    fn everything_shapes() {
        for entry in ["Bash", "Bash(*)", "Bash(:*)", " Bash "] {
            let r = rule(entry);
            assert!(r.matches("anything at all"));
            assert!(r.matches(""));
            assert_eq!(r.text(), entry);
        }
    }

    #[test]
    fn prefix_ends_at_a_word_boundary() {
        let r = rule("Bash(git push:*)");
        assert!(r.matches("git push"));
        assert!(r.matches("git push origin main"));
        assert!(r.matches("  git   push\torigin "));
        assert!(!r.matches("git pushover"));
        assert!(!r.matches("git pul"));
        assert!(!r.matches("echo git push"));
    }

    #[test]
    fn a_dry_run_push_is_named_only_by_rules_that_say_so() {
        let force = rule("Bash(git push --force:*)");
        for dry in [
            "git push --dry-run --force",
            "git push --force --dry-run origin main",
            "git push -nf",
            "git -C x push --dry origin +main",
        ] {
            assert!(!force.matches(dry), "{dry}");
        }
        for undone in [
            "git push --dry-run --no-dry-run --force",
            "git push -nf --no-d",
            "git push --dry --no-dry origin +main",
        ] {
            assert!(force.matches(undone), "{undone}");
        }
        assert!(force.matches("git push --force"));
        assert!(force.matches("git push --force -v"));
        assert!(rule("Bash(git push:*)").matches("git push --force"));
        assert!(!rule("Bash(git push:*)").matches("git push -n"));
        assert!(rule("Bash(git push -n:*)").matches("git push --dry-run"));
        assert!(rule("Bash(git:*)").matches("git push -n --force"));
        assert!(rule("Bash(git push*)").matches("git push -n --force"));
    }

    #[test]
    fn globs_are_anchored_and_cross_slashes() {
        let r = rule("Bash(rm -rf /*)");
        assert!(r.matches("rm -rf /"));
        assert!(r.matches("rm -rf /home"));
        assert!(r.matches("rm -rf /home/user/x"));
        assert!(!r.matches("echo rm -rf /"));
        assert!(!r.matches("rm -rf ./x"));
        let literal = rule("Bash(rm -rf /[*])");
        assert!(literal.matches("rm -rf /*"));
        assert!(!literal.matches("rm -rf /home"));
        let question = rule("Bash(ls ?)");
        assert!(question.matches("ls a"));
        assert!(!question.matches("ls ab"));
        let braces = rule("Bash(rm -rf ${HOME}/*)");
        assert!(braces.matches("rm -rf ${HOME}/x"));
        assert!(!braces.matches("rm -rf HOME/x"));
        let middle = rule("Bash(git push * --force)");
        assert!(middle.matches("git push origin --force"));
        assert!(!middle.matches("git push --force"));
    }

    #[test]
    fn glob_prefix() {
        let r = rule("Bash(git * push:*)");
        assert!(r.matches("git -C x push"));
        assert!(r.matches("git -C x push origin"));
        assert!(!r.matches("git -C x pushover"));
    }

    #[test]
    fn exact_matches_whole_command_only() {
        let r = rule("Bash(halt)");
        assert!(r.matches("halt"));
        assert!(r.matches("  halt "));
        assert!(!r.matches("halt now"));
        assert!(!r.matches("shalt"));
        let spaced = rule("Bash(  echo   a  b )");
        assert!(spaced.matches("echo a b"));
        assert!(spaced.matches("echo  a\tb"));
        assert!(!spaced.matches("echo ab"));
        let colon = rule("Bash(npm run test:unit)");
        assert!(colon.matches("npm run test:unit"));
        assert!(!colon.matches("npm run test"));
    }

    #[test]
    fn parentheses_inside_the_pattern() {
        let r = rule("Bash(echo (a):*)");
        assert!(r.matches("echo (a) b"));
    }

    #[test]
    fn normalize_collapses_whitespace() {
        assert_eq!(normalize("  a \t b\n\nc  "), "a b c");
        assert_eq!(normalize(""), "");
        assert_eq!(normalize(" \n "), "");
        assert_eq!(normalize("a b"), "a b");
        assert_eq!(normalize("a  b"), "a b");
        assert_eq!(normalize("a b "), "a b");
        assert_eq!(normalize(" a"), "a");
        assert_eq!(normalize("a\u{a0}b é"), "a b é");
        assert_eq!(normalize(" "), "");
    }
}
