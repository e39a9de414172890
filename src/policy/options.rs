//! Option-aware reading of the commands the default deny list names (`rm`, `git`,
//! `chmod`, `chown`, `chgrp`), so one rule covers every way of writing the same command.
//!
//! A command is read into its program (with `git`'s subcommand), a set of options and a
//! list of operands: clustered short options are split (`-rf` is `-r -f`), long options
//! with a short equivalent become it (`--recursive` is `-r`, `-R` is `-r` for `rm`), a
//! long option abbreviated as getopt_long allows is read as every option it may stand for
//! (`--recu` is `-r`; `--force-w` matches a rule's `--force-with-lease`),
//! `--` is dropped, `git`'s global options before the subcommand (`-C dir`, `-c k=v`,
//! `--no-pager`, `--git-dir=...`) are dropped, a `git push` refspec starting with `+`
//! and `git push --mirror` count as `-f`, and path operands are made canonical (`//` and
//! `/.` are `/`, `$HOME`, `${HOME}`, `${HOME:?}` and `~/` are `~`, `..` folds, `**` is
//! `*`: see [`paths`]). A rule whose program is one of these is read the same way and matches a command when the program
//! is the same, every option of the rule is among the command's, and its operands match: for `rm`, `chmod`, `chown` and `chgrp` each of
//! the rule's operands must match a different operand of the command (in any order);
//! for `git`, in order, with more allowed after them only for a `:*` rule. An operand
//! pattern may hold `*`, `?` and `[...]`; one ending in `/[*]` (every entry of a
//! directory) also names a glob whose first name under that directory starts with a
//! wildcard (`/?*`, `/[a-z]*`, `/*/*`). An allow rule without `:*` is stricter: the
//! command's options must be exactly the rule's (`Bash(git status)` does not allow
//! `git status --ignored`). Whether a pattern a redirection writes could name a file a
//! rule's pattern names is answered in [`glob_overlap`].

use super::glob::Glob;

mod glob_overlap;
mod paths;

pub(crate) use glob_overlap::*;
pub(crate) use paths::*;

/// One program the matching knows, and how its options are read.
struct Program {
    name: &'static str,
    /// Long options and the short option each stands for.
    long: &'static [(&'static str, &'static str)],
    /// Short options that are the same option under another letter.
    same: &'static [(char, char)],
    /// Options whose value is the next word (kept with the option, `-o=value`).
    with_value: &'static [&'static str],
    /// Whether the operands are independent paths, matched in any order.
    paths: bool,
}

const PROGRAMS: &[Program] = &[
    Program {
        name: "rm",
        long: &[
            ("recursive", "-r"),
            ("force", "-f"),
            ("dir", "-d"),
            ("verbose", "-v"),
            ("interactive", "-i"),
        ],
        same: &[('R', 'r')],
        with_value: &[],
        paths: true,
    },
    Program {
        name: "chmod",
        long: &[
            ("recursive", "-R"),
            ("verbose", "-v"),
            ("changes", "-c"),
            ("silent", "-f"),
        ],
        same: &[],
        with_value: &[],
        paths: true,
    },
    Program {
        name: "chown",
        long: &[
            ("recursive", "-R"),
            ("verbose", "-v"),
            ("changes", "-c"),
            ("silent", "-f"),
        ],
        same: &[],
        with_value: &[],
        paths: true,
    },
    Program {
        name: "chgrp",
        long: &[
            ("recursive", "-R"),
            ("verbose", "-v"),
            ("changes", "-c"),
            ("silent", "-f"),
        ],
        same: &[],
        with_value: &[],
        paths: true,
    },
    Program {
        name: "git",
        long: &[
            ("force", "-f"),
            ("set-upstream", "-u"),
            ("delete", "-d"),
            ("quiet", "-q"),
            ("verbose", "-v"),
            ("dry-run", "-n"),
            ("all", "--all"),
        ],
        same: &[],
        with_value: &["-o", "--repo", "--push-option", "--receive-pack", "--exec"],
        paths: false,
    },
];

/// `git` options before the subcommand that take the next word as their value.
pub(crate) const GIT_GLOBAL_WITH_VALUE: &[&str] = &[
    "-C",
    "-c",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--config-env",
    "--exec-path",
    "--super-prefix",
    "--list-cmds",
    "--attr-source",
];

/// A command read option-aware.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Argv {
    /// The program and, for `git`, its subcommand: `rm`, `git push`.
    pub program: String,
    /// The options, one each, sorted: `-f`, `-r`, `--no-preserve-root`, `-o=x`.
    pub options: Vec<String>,
    pub operands: Vec<String>,
    paths: bool,
    /// Whether the last dry-run option (`-n`, `--dry-run` or an abbreviation) is not
    /// undone by a later `--no-dry-run` (or its abbreviation, `--no-d`).
    dry_run: bool,
}

impl Argv {
    /// Reads `command` (words joined by spaces) when its program is one this module
    /// knows; None for any other command.
    pub fn read(command: &str) -> Option<Argv> {
        Argv::read_with_positions(command).map(|(argv, _)| argv)
    }

    /// [`Argv::read`], with where each operand stands among the command's words.
    fn read_with_positions(command: &str) -> Option<(Argv, Vec<usize>)> {
        let first = command.split_whitespace().next()?;
        let name = first.rsplit('/').next()?;
        let program = PROGRAMS.iter().find(|p| p.name == name)?;
        let words: Vec<&str> = command.split_whitespace().collect();
        let mut rest = &words[1..];
        let mut program_name = name.to_owned();
        if name == "git" {
            while let Some(word) = rest.first() {
                if !word.starts_with('-') {
                    break;
                }
                let takes_next = GIT_GLOBAL_WITH_VALUE.contains(word);
                rest = rest.get(if takes_next { 2 } else { 1 }..).unwrap_or(&[]);
            }
            let subcommand = rest.first()?;
            program_name = format!("git {subcommand}");
            rest = &rest[1..];
        }
        let skipped = words.len() - rest.len();
        let mut options = Vec::new();
        let mut operands = Vec::new();
        let mut positions = Vec::new();
        let mut only_operands = false;
        // Whether the last dry-run option stands: `-n` read from a word sets it, a later
        // `--no-dry-run` (`--no-d`, as parse-options abbreviates) clears it.
        let mut dry_run = false;
        let mut read = 0;
        let mut index = 0;
        while index < rest.len() {
            dry_run |= options[read..].iter().any(|o| o == "-n");
            read = options.len();
            let word = rest[index];
            index += 1;
            if !only_operands && is_dry_run_negation(word) {
                dry_run = false;
            }
            if only_operands || word == "-" || !word.starts_with('-') {
                operands.push(word.to_owned());
                positions.push(skipped + index - 1);
                continue;
            }
            if word == "--" {
                only_operands = true;
                continue;
            }
            if let Some(long) = word.strip_prefix("--") {
                let (long_name, value) = match long.split_once('=') {
                    Some((n, v)) => (n, Some(v.to_owned())),
                    None => (long, None),
                };
                let flag = format!("--{long_name}");
                // getopt_long takes any unambiguous prefix of a long option (`--recu` is
                // `--recursive`); an exact name wins over the names it is a prefix of.
                let exact = program.long.iter().find(|(n, _)| *n == long_name);
                let abbreviates = |name: &str| !long_name.is_empty() && name.starts_with(long_name);
                let valued: Vec<&str> = program
                    .with_value
                    .iter()
                    .copied()
                    .filter(|v| {
                        v.strip_prefix("--").is_some_and(|name| {
                            name == long_name
                                || (exact.is_none()
                                    && abbreviates(name)
                                    && !program.long.iter().any(|(n, _)| abbreviates(n)))
                        })
                    })
                    .collect();
                if let [valued] = valued[..] {
                    let value = value.or_else(|| {
                        index += 1;
                        rest.get(index - 1).map(|v| (*v).to_owned())
                    });
                    options.push(format!("{valued}={}", value.unwrap_or_default()));
                    continue;
                }
                match exact {
                    Some((_, short)) => options.push((*short).to_owned()),
                    None => {
                        // Every option the prefix may stand for, so an ambiguous one is
                        // read as all of them; the word itself too, for a rule naming a
                        // long option the table does not know (`--force-with-lease`).
                        options.extend(
                            program
                                .long
                                .iter()
                                .filter(|(n, _)| abbreviates(n))
                                .map(|(_, short)| (*short).to_owned()),
                        );
                        options.push(flag);
                    }
                }
                continue;
            }
            // A cluster of short options; one that takes a value ends it.
            for (at, letter) in word.char_indices().skip(1) {
                let letter = program
                    .same
                    .iter()
                    .find(|(from, _)| *from == letter)
                    .map_or(letter, |(_, to)| *to);
                let flag = format!("-{letter}");
                if program.with_value.contains(&flag.as_str()) {
                    let attached = &word[at + letter.len_utf8()..];
                    let value = if attached.is_empty() {
                        index += 1;
                        rest.get(index - 1)
                            .map(|v| (*v).to_owned())
                            .unwrap_or_default()
                    } else {
                        attached.to_owned()
                    };
                    options.push(format!("{flag}={value}"));
                    break;
                }
                options.push(flag);
            }
        }
        dry_run |= options[read..].iter().any(|o| o == "-n");
        // `--mirror` (or an abbreviation, `--mir`) overwrites every ref on the remote, as a
        // force push does.
        let mirror = program_name == "git push"
            && options
                .iter()
                .any(|o| o.len() > 4 && "--mirror".starts_with(o.as_str()));
        if mirror {
            options.push("-f".to_owned());
        }
        if program_name == "git push" && operands.iter().skip(1).any(|o| o.starts_with('+')) {
            options.push("-f".to_owned());
            for operand in operands.iter_mut().skip(1) {
                if let Some(plain) = operand.strip_prefix('+') {
                    *operand = plain.to_owned();
                }
            }
        }
        if program.paths {
            for operand in &mut operands {
                *operand = canonical_path(operand);
            }
            if name == "chmod" {
                if let Some(mode) = operands.first_mut() {
                    *mode = canonical_mode(mode);
                }
            }
        }
        options.sort();
        options.dedup();
        let argv = Argv {
            program: program_name,
            options,
            operands,
            paths: program.paths,
            dry_run,
        };
        Some((argv, positions))
    }
}

/// Whether `word` undoes a dry run: `--no-dry-run` or a prefix of it past `--no-`
/// (parse-options takes `--no-d`; an ambiguous one is read as this one too).
fn is_dry_run_negation(word: &str) -> bool {
    word.strip_prefix("--no-")
        .map(|rest| rest.split_once('=').map_or(rest, |(name, _)| name))
        .is_some_and(|name| "dry-run".starts_with(name))
}

/// A rule's pattern read option-aware, ready to match commands.
#[derive(Debug, Clone)]
pub struct ArgvPattern {
    argv: Argv,
    operands: Vec<Operand>,
    /// A `:*` rule: more operands may follow (in order for `git`).
    open: bool,
}

#[derive(Debug, Clone)]
enum Operand {
    Literal(String),
    Glob(Glob),
    /// `DIR/[*]`, every entry of a directory (held as `DIR/`): names `DIR/*` and any
    /// glob whose first name under `DIR` starts with a wildcard (`/?*`, `/[a-z]*`,
    /// `/*/*`), which reaches every entry or most of them.
    Entries(String),
}

impl Operand {
    fn matches(&self, operand: &str) -> bool {
        match self {
            Operand::Literal(text) => text == operand,
            Operand::Glob(glob) => glob.is_match(operand),
            Operand::Entries(dir) => operand
                .strip_prefix(dir.as_str())
                .is_some_and(|rest| rest.starts_with(['*', '?', '['])),
        }
    }
}

impl ArgvPattern {
    /// Reads a rule's pattern (without `Bash(`, `)` and `:*`); None when its program is
    /// not one read option-aware.
    pub fn new(pattern: &str, open: bool) -> Option<ArgvPattern> {
        let argv = Argv::read(pattern)?;
        let operands = argv
            .operands
            .iter()
            .map(|operand| {
                if !operand.contains(['*', '?', '[']) {
                    return Operand::Literal(operand.clone());
                }
                if let Some(dir) = operand.strip_suffix("[*]").filter(|d| d.ends_with('/')) {
                    if !dir.contains(['*', '?', '[']) {
                        return Operand::Entries(dir.to_owned());
                    }
                }
                let mut escaped = String::with_capacity(operand.len());
                for c in operand.chars() {
                    if matches!(c, '{' | '}' | ',') {
                        escaped.push('\\');
                    }
                    escaped.push(c);
                }
                super::glob::Glob::new(&escaped, super::glob::RULE)
                    .map(Operand::Glob)
                    .unwrap_or_else(|_| Operand::Literal(operand.clone()))
            })
            .collect();
        Some(ArgvPattern {
            argv,
            operands,
            open,
        })
    }

    /// Whether a deny or ask rule with this pattern leaves the command alone although it
    /// names it: `git push --dry-run` (`-n`) sends nothing, so a rule about `git push`
    /// names it only when the rule itself has `-n`. A rule for all of `git` names it.
    pub fn spares(&self, command: &Argv) -> bool {
        command.program == "git push"
            && command.dry_run
            && self.argv.program == "git push"
            && !self.argv.dry_run
    }

    /// Whether the command, read option-aware, is one this pattern names. A pattern names
    /// a command with more options than its own, unless `exact` is asked for (allow rules
    /// that do not end in `:*`), where the options must be the same.
    pub fn matches(&self, command: &Argv, exact: bool) -> bool {
        let options = if exact && !self.open {
            command.options == self.argv.options
        } else {
            self.argv
                .options
                .iter()
                .all(|o| command.options.iter().any(|c| names_option(c, o)))
        };
        if command.program != self.argv.program || !options {
            return false;
        }
        if self.argv.paths {
            let mut used = vec![false; command.operands.len()];
            return self.operands.iter().all(|pattern| {
                let found = command
                    .operands
                    .iter()
                    .enumerate()
                    .find(|(at, operand)| !used[*at] && pattern.matches(operand));
                match found {
                    Some((at, _)) => {
                        used[at] = true;
                        true
                    }
                    None => false,
                }
            });
        }
        let enough = if self.open {
            command.operands.len() >= self.operands.len()
        } else {
            command.operands.len() == self.operands.len()
        };
        enough
            && self
                .operands
                .iter()
                .zip(&command.operands)
                .all(|(pattern, operand)| pattern.matches(operand))
    }
}

/// Whether the command's option `given` is the rule's option `wanted`: the same, or a long
/// option abbreviated as getopt_long reads it (`--force-w` is `--force-with-lease`, at
/// least one letter after `--`), with the same value when the option keeps one.
fn names_option(given: &str, wanted: &str) -> bool {
    if given == wanted {
        return true;
    }
    let split = |option: &str| -> Option<(String, Option<String>)> {
        let long = option.strip_prefix("--").filter(|l| !l.is_empty())?;
        Some(match long.split_once('=') {
            Some((name, value)) => (name.to_owned(), Some(value.to_owned())),
            None => (long.to_owned(), None),
        })
    };
    match (split(given), split(wanted)) {
        (Some((given, given_value)), Some((wanted, wanted_value))) => {
            !given.is_empty() && wanted.starts_with(&given) && given_value == wanted_value
        }
        _ => false,
    }
}

/// An octal mode without leading zeros; `a+rwx` and its spellings as `777`.
fn canonical_mode(mode: &str) -> String {
    if mode.chars().all(|c| c.is_ascii_digit()) {
        let trimmed = mode.trim_start_matches('0');
        return if trimmed.is_empty() { "0" } else { trimmed }.to_owned();
    }
    match mode {
        "a+rwx" | "ugo+rwx" | "+rwx" | "a=rwx" | "ugo=rwx" => "777".to_owned(),
        other => other.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_taken_as_canonical_is_one() {
        let names = [
            "", "/", "//", ".", "..", "~", "$HOME", "${HOME}", "a", "**", "x.y",
        ];
        for a in names {
            for b in names {
                for c in ["", "/"] {
                    let path = format!("{a}/{b}{c}");
                    for path in [path.clone(), format!("/{path}"), b.to_owned()] {
                        if is_canonical(&path) {
                            assert_eq!(fold_path(&path), path);
                        }
                    }
                }
            }
        }
        assert!(is_canonical("/usr/bin/x") && is_canonical("~/x") && is_canonical("a/b"));
    }

    fn argv(command: &str) -> Argv {
        Argv::read(command).expect("a known program")
    }

    #[test]
    fn spellings_of_one_rm_read_the_same() {
        let want = argv("rm -r -f /");
        for spelling in [
            "rm -rf /",
            "rm -fr /",
            "rm -Rf /",
            "rm -r -f /",
            "rm --recursive --force /",
            "rm -rf -- /",
            "rm -rf //",
            "rm -rf /.",
            "/bin/rm -rf /",
        ] {
            assert_eq!(argv(spelling), want, "{spelling}");
        }
        assert_eq!(argv("rm -rf ${HOME}/").operands, ["~"]);
        assert_eq!(argv("rm -rf $HOME").operands, ["~"]);
        assert_eq!(argv("rm -rf ~/").operands, ["~"]);
        assert_eq!(argv("rm -- -f").operands, ["-f"]);
        for (spelling, operand) in [
            ("rm -rf ${HOME:?}/", "~"),
            ("rm -rf ${HOME:?unset}/x", "~/x"),
            ("rm -rf ${HOME?}", "~"),
            ("rm -rf ${HOME:-/tmp/h}", "~"),
            ("rm -rf ${HOME%/}/*", "~/*"),
            ("rm -rf ${HOME:+x}", "${HOME:+x}"),
            ("rm -rf ${HOMEDIR}", "${HOMEDIR}"),
            ("rm -rf $HOMEDIR", "$HOMEDIR"),
            ("rm -rf /**", "/*"),
            ("rm -rf /***/**", "/*/*"),
            ("rm -rf /tmp/../*", "/*"),
            ("rm -rf /../*", "/*"),
            ("chmod -R 777 /..", "/"),
        ] {
            assert_eq!(
                argv(spelling).operands.last().unwrap(),
                operand,
                "{spelling}"
            );
        }
        assert!(Argv::read("ls -la").is_none());
    }

    #[test]
    fn git_global_options_and_force_spellings() {
        for spelling in [
            "git push -f",
            "git push --force origin main",
            "git -C /repo push -uf",
            "git -c user.name=x --no-pager push -f",
            "git --git-dir=/x/.git push --force",
            "git push origin +main",
        ] {
            let read = argv(spelling);
            assert_eq!(read.program, "git push", "{spelling}");
            assert!(read.options.contains(&"-f".to_owned()), "{spelling}");
        }
        assert!(!argv("git push origin main")
            .options
            .contains(&"-f".to_owned()));
        assert_eq!(argv("git push -o ci.skip origin").operands, ["origin"]);
    }

    #[test]
    fn long_options_may_be_abbreviated() {
        assert_eq!(
            argv("rm --recu --fo /").options,
            ["--fo", "--recu", "-f", "-r"]
        );
        assert_eq!(argv("rm --recursive --force /").options, ["-f", "-r"]);
        // `--` still ends the options, and is no prefix of every option.
        assert_eq!(argv("rm -- --recursive").operands, ["--recursive"]);
        assert!(argv("rm -- --recursive").options.is_empty());
        // An exact name wins over the longer names it starts.
        assert_eq!(argv("git push --dry-run").options, ["-n"]);
        assert_eq!(argv("git push --force").options, ["-f"]);
        // A value-taking option abbreviated still takes its value.
        let read = argv("git push --push-o ci.skip origin main");
        assert_eq!(read.options, ["--push-option=ci.skip"]);
        assert_eq!(read.operands, ["origin", "main"]);
        let rm = ArgvPattern::new("rm -r /", false).expect("rm pattern");
        assert!(rm.matches(&argv("rm --recu /"), false));
        assert!(rm.matches(&argv("rm --r /"), false));
        assert!(!rm.matches(&argv("rm --f /"), false));
        let lease = ArgvPattern::new("git push --force-with-lease", true).expect("git pattern");
        for spelling in [
            "git push --force-with-lease",
            "git push --force-w origin main",
            "git push --force-with-lease=main:abc origin",
            "git push --fo origin",
        ] {
            assert!(lease.matches(&argv(spelling), false), "{spelling}");
        }
        for spelling in [
            "git push --follow-tags",
            "git push --force-with-leases",
            "git push -- --force-with-lease",
        ] {
            assert!(!lease.matches(&argv(spelling), false), "{spelling}");
        }
        let root = ArgvPattern::new("rm --no-preserve-root", true).expect("rm pattern");
        assert!(root.matches(&argv("rm -rf --no-pres /x"), false));
        assert!(!root.matches(&argv("rm -rf --preserve-root /x"), false));
        // Allow rules stay exact: an abbreviation is not the option they allow.
        let allow = ArgvPattern::new("rm -r /tmp/x", false).expect("rm pattern");
        assert!(allow.matches(&argv("rm -r /tmp/x"), true));
        assert!(!allow.matches(&argv("rm --rec /tmp/x"), true));
    }

    #[test]
    fn known_links_are_followed_before_dot_dot() {
        for (path, physical) in [
            ("/var/run/../dev/sda", Some("/dev/sda")),
            ("/var/lock/../dev/sda", Some("/run/dev/sda")),
            ("/var/lock/../../dev/sda", None),
            ("/proc/self/root/dev/sda", Some("/dev/sda")),
            ("/proc/thread-self/root", Some("/")),
            ("/proc/42/root/../etc", Some("/etc")),
            ("/bin/../dev/sda", Some("/usr/dev/sda")),
            ("//var/./run/x", Some("/run/x")),
            ("/var/tmp/../dev/sda", None),
            ("/dev/sda", None),
            ("dev/sda", None),
            ("~/x/..", None),
        ] {
            assert_eq!(physical_path(path).as_deref(), physical, "{path}");
        }
    }

    #[test]
    fn globs_overlap_when_some_text_matches_both() {
        for (a, b) in [
            ("/dev/s[d]a", "/dev/sd*"),
            ("/dev/s?a", "/dev/sd*"),
            ("/dev/*", "/dev/sd*"),
            ("/dev/[!a]da", "/dev/sd*"),
            ("/dev/[r-t]d[a-c]1", "/dev/sd*"),
            ("/dev/s[[:alpha:]]a", "/dev/sd*"),
            ("/dev/@(x|sda)", "/dev/sd*"),
            ("/dev/sda", "/dev/sda"),
            ("/dev/[]s]da", "/dev/sd*"),
            ("/*/sda", "/dev/sd*"),
            ("/d*/sd?", "/dev/sd*"),
        ] {
            assert!(globs_overlap(a, b), "{a} {b}");
        }
        for (a, b) in [
            ("/dev/nu?l", "/dev/sd*"),
            ("/dev/[!s]da", "/dev/sd*"),
            ("/tmp/*.log", "/dev/sd*"),
            ("/dev/s[a-c]a", "/dev/sd*"),
            ("/dev/sda?", "/dev/sda"),
            // bash's `*` does not match a `/`.
            ("*", "/dev/sd*"),
            ("/*", "/dev/sd*"),
            ("/*.log", "/dev/sd*"),
        ] {
            assert!(!globs_overlap(a, b), "{a} {b}");
        }
    }

    #[test]
    fn dot_dot_folds_as_cd_folds_it() {
        assert_eq!(argv("rm -rf /etc/..").operands, ["/"]);
        assert_eq!(argv("rm -rf /..").operands, ["/"]);
        assert_eq!(argv("rm -rf /usr/local/../../*").operands, ["/*"]);
        assert_eq!(argv("rm -rf ~/src/../").operands, ["~"]);
        assert_eq!(argv("rm -rf a/../b").operands, ["b"]);
        // What `..` leaves a relative path, or the home directory, for is not known.
        assert_eq!(argv("rm -rf ../x").operands, ["../x"]);
        assert_eq!(argv("rm -rf ~/..").operands, ["~/.."]);
        assert_eq!(argv("rm -rf ~me/../x").operands, ["~me/../x"]);
    }

    #[test]
    fn paths_are_joined_to_the_directory() {
        assert_eq!(join_path("/", "*").as_deref(), Some("/*"));
        assert_eq!(join_path("/etc", "..").as_deref(), Some("/"));
        assert_eq!(join_path("/etc", "../../..").as_deref(), Some("/"));
        assert_eq!(join_path("/etc", "./x/").as_deref(), Some("/etc/x"));
        assert_eq!(join_path("/etc", "/srv").as_deref(), Some("/srv"));
        assert_eq!(join_path("/etc", "~/a").as_deref(), Some("~/a"));
        assert_eq!(join_path("/etc", "$HOME").as_deref(), Some("~"));
        assert_eq!(join_path("~/a", "../*").as_deref(), Some("~/*"));
        assert_eq!(join_path("~", ".."), None);
        assert_eq!(join_path("~/a", "../.."), None);
        assert_eq!(join_path(".", "a/b").as_deref(), Some("a/b"));
        assert_eq!(join_path("a", "../..").as_deref(), Some(".."));
        assert_eq!(join_path("..", "x").as_deref(), Some("../x"));
    }

    #[test]
    fn relative_operands_are_resolved_and_others_kept() {
        let resolve = |command: &str, dir: &str| resolve_operands(command, dir);
        assert_eq!(
            resolve("rm -rf * /tmp/x ~/y $HOME/z", "/"),
            Some((
                "rm -rf /* /tmp/x ~/y $HOME/z".to_owned(),
                vec![("*".to_owned(), "/*".to_owned())]
            ))
        );
        assert_eq!(
            resolve("/bin/rm -r -- .. -x", "/etc").map(|(text, _)| text),
            Some("/bin/rm -r -- / /etc/-x".to_owned())
        );
        // Operands known only at run time are left as written.
        assert_eq!(resolve("rm -rf $dir/* `x`", "/"), None);
        // A mode or an owner is not a path; with a reference file every operand is.
        assert_eq!(
            resolve("chmod -R 777 .", "/").map(|(text, _)| text),
            Some("chmod -R 777 /".to_owned())
        );
        assert_eq!(
            resolve("chown me:me x", "/srv").map(|(text, _)| text),
            Some("chown me:me /srv/x".to_owned())
        );
        assert_eq!(
            resolve("chgrp --reference=a b", "/srv").map(|(text, _)| text),
            Some("chgrp --reference=a /srv/b".to_owned())
        );
        // Other programs, and `git`, whose operands are not paths, are not rewritten.
        assert_eq!(resolve("ls *", "/"), None);
        assert_eq!(resolve("git push origin main", "/"), None);
        assert_eq!(resolve("rm -rf ..", "~"), None);
    }

    #[test]
    fn patterns_need_their_options_and_operands() {
        let rm = ArgvPattern::new("rm -r /", false).expect("rm pattern");
        assert!(rm.matches(&argv("rm -rfv /"), false));
        assert!(rm.matches(&argv("rm -rf /tmp/x /"), false));
        assert!(!rm.matches(&argv("rm -rf /tmp/x"), false));
        assert!(!rm.matches(&argv("rm -f /"), false));
        let star = ArgvPattern::new("rm -r /[*]", false).expect("rm pattern");
        assert!(star.matches(&argv("rm -rf /*"), false));
        assert!(!star.matches(&argv("rm -rf /home"), false));
        for every in [
            "/?*",
            "/*/*",
            "/[a-z]*",
            "/**",
            "/*/",
            "/[!.]*",
            "/tmp/../?*",
        ] {
            assert!(
                star.matches(&argv(&format!("rm -rf {every}")), false),
                "{every}"
            );
        }
        for some in ["/tmp/*", "/usr/local/?*", "/.*", "/b*", "./*", "*"] {
            assert!(
                !star.matches(&argv(&format!("rm -rf {some}")), false),
                "{some}"
            );
        }
        let home = ArgvPattern::new("rm -r ~/[*]", false).expect("rm pattern");
        assert!(home.matches(&argv("rm -rf $HOME/?*"), false));
        assert!(home.matches(&argv("rm -rf ${HOME:?}/**"), false));
        assert!(!home.matches(&argv("rm -rf ~/src/*"), false));
        let push = ArgvPattern::new("git push -f", true).expect("git pattern");
        assert!(push.matches(&argv("git -C x push -uf origin main"), false));
        assert!(!push.matches(&argv("git push origin main"), false));
        let chmod = ArgvPattern::new("chmod -R 777 /", false).expect("chmod pattern");
        assert!(chmod.matches(&argv("chmod -R 0777 /"), false));
        assert!(chmod.matches(&argv("chmod 777 --recursive /"), false));
        assert!(chmod.matches(&argv("chmod -R a+rwx /"), false));
        assert!(!chmod.matches(&argv("chmod -R 755 /"), false));
    }
}
