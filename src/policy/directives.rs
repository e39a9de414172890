//! Per-command limits written in the command itself, as leading comment lines the shell
//! ignores: `#terminalfs timeout=10m memory=2G keep=1h cwd=DIR` (also `# terminalfs ...`).
//!
//! Only the top of the text sets anything: a `#!` first line and blank lines are skipped,
//! other comments are passed over, and the top ends at the first line that is neither
//! blank nor a comment. A `#terminalfs` line further down that the shell reads as a
//! comment would set nothing, so it refuses the command rather than being ignored in
//! silence; one the shell reads as data (a heredoc's body, a quoted string) is no
//! comment and is left alone. Each directive line holds space-separated `key=value`
//! pairs; the keys are `timeout` (a duration), `memory` (a size), `keep` (a duration),
//! read with the same units as the command line, and `cwd` (the directory it starts
//! in: absolute, from the home directory with `~`, or relative to the mount's `--cwd`;
//! it must exist). Any unknown key, bad value or key given twice (`timeout=1s
//! timeout=3s`, on one line or on two) refuses the command, with a reason naming it,
//! rather than running it with a limit silently missing or other than the one meant.
//!
//! Two words say what the command reads: `stdin` gives it a pipe that `cmd/<name>/stdin`
//! writes into, `tty` (or `tty=COLSxROWS`, 120x40 unless given) a terminal. `tty` wins
//! over `stdin`, since a terminal takes input too; each of them is a key of its own, so
//! `tty stdin` is fine and `tty tty=80x24` is a key given twice.
//!
//! `host=NAME` names where it runs (an entry of the settings' `hosts`, or `local`);
//! whether that name may be used is the policy's to judge (see `crate::hosts`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::units::{parse_duration, parse_size, TerminalSize};

/// What a command's standard input is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Input {
    /// At end of file from the start.
    #[default]
    Closed,
    /// A pipe fed by writes to `cmd/<name>/stdin`.
    Pipe,
    /// A terminal of this size, which is also its stdout and stderr.
    Terminal(TerminalSize),
}

/// Limits a command sets for itself; `None` leaves the driver's setting in force.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Directives {
    /// Stop the command after this long.
    pub timeout: Option<Duration>,
    /// Memory limit in bytes.
    pub memory: Option<u64>,
    /// How long to keep the command's directory once it has stopped and is not in use.
    pub keep: Option<Duration>,
    pub input: Input,
    /// Where it starts: as written until [`resolve_cwd`] makes it the directory meant.
    pub cwd: Option<PathBuf>,
    /// How it asks to run with respect to the sandbox (`sandbox=off`).
    pub sandbox: crate::sandbox::Choice,
    /// The host it runs on (`host=NAME`).
    pub host: Option<String>,
}

/// Reads the `#terminalfs` lines at the top of a command.
pub fn parse_directives(text: &str) -> Result<Directives, String> {
    let mut directives = Directives::default();
    // The pairs read so far, by key, to name both in the refusal of a key given twice.
    let mut given: Vec<(&str, &str)> = Vec::new();
    let mut body_from = None;
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if index == 0 && line.starts_with("#!") {
            continue;
        }
        if line.is_empty() {
            continue;
        }
        if !line.starts_with('#') {
            body_from = Some(index);
            break;
        }
        let Some(pairs) = directive_pairs(line) else {
            continue;
        };
        for pair in pairs.split_whitespace() {
            apply(&mut directives, pair)?;
            let key = pair.split_once('=').map_or(pair, |(key, _)| key);
            if let Some((_, first)) = given.iter().find(|(seen, _)| *seen == key) {
                return Err(format!(
                    "the #terminalfs directive key '{key}' is given twice ({first}, then \
                     {pair}); give it once"
                ));
            }
            given.push((key, pair));
        }
    }
    if let Some(from) = body_from {
        if let Some((number, line)) = late_directive(text, from) {
            return Err(format!(
                "a #terminalfs line after the command has begun (line {number}: '{line}') \
                 is an ordinary comment to the shell and would set nothing; put every \
                 #terminalfs line at the top, before the first command"
            ));
        }
    }
    Ok(directives)
}

/// The pairs of a `#terminalfs` line (`line` trimmed), or None for any other line.
fn directive_pairs(line: &str) -> Option<&str> {
    let pairs = line
        .strip_prefix('#')?
        .trim_start()
        .strip_prefix("terminalfs")?;
    (pairs.is_empty() || pairs.starts_with(char::is_whitespace)).then_some(pairs)
}

/// The first `#terminalfs` line from line `from` on (numbered from 1, trimmed) that the
/// shell reads as a comment. Each candidate line is replaced by a command of a name
/// nothing else has and the text split as the checker splits it: a candidate whose
/// stand-in comes out as a command stood where a command may, so the shell skips it as
/// a comment; one in a heredoc's body or a quoted string stays data.
fn late_directive(text: &str, from: usize) -> Option<(usize, &str)> {
    const STAND_IN: &str = "terminalfs-late-directive-";
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let candidates: Vec<usize> = (from..lines.len())
        .filter(|&index| directive_pairs(lines[index].trim()).is_some())
        .collect();
    if candidates.is_empty() {
        return None;
    }
    let mut probe = String::with_capacity(text.len() + candidates.len() * 32);
    for (index, line) in lines.iter().enumerate() {
        if candidates.contains(&index) {
            // The shell skips a comment's `\r` with it; a stand-in must not keep one.
            probe.push_str(&format!("{STAND_IN}{index}"));
            if line.ends_with('\n') {
                probe.push('\n');
            }
        } else {
            probe.push_str(line);
        }
    }
    let split = super::splitter::split(&probe);
    let found = candidates.into_iter().find(|index| {
        let stand_in = format!("{STAND_IN}{index}");
        split
            .commands
            .iter()
            .any(|command| command.forms.contains(&stand_in))
    })?;
    Some((found + 1, lines[found].trim()))
}

/// The directory a command with `cwd=dir` starts in: `dir` when absolute, from `home`
/// for `~` and `~/...`, else from `base` (the mount's `--cwd`). It must be a directory
/// now; the reason says why not.
pub fn resolve_cwd(dir: &Path, base: Option<&Path>, home: &Path) -> Result<PathBuf, String> {
    let written = dir.display();
    let full = if dir.is_absolute() {
        dir.to_path_buf()
    } else if let Ok(rest) = dir.strip_prefix("~") {
        home.join(rest)
    } else {
        match base {
            Some(base) => base.join(dir),
            None => {
                return Err(format!(
                    "the #terminalfs directive cwd={written} is relative and the directory \
                     commands start in is not known; give an absolute path"
                ))
            }
        }
    };
    match std::fs::metadata(&full) {
        Ok(meta) if meta.is_dir() => Ok(full),
        Ok(_) => Err(format!(
            "the #terminalfs directive cwd={written} names {}, which is not a directory",
            full.display()
        )),
        Err(err) => Err(format!(
            "the #terminalfs directive cwd={written} names no directory to start in ({}: {err})",
            full.display()
        )),
    }
}

fn apply(directives: &mut Directives, pair: &str) -> Result<(), String> {
    match pair {
        "stdin" => {
            if directives.input == Input::Closed {
                directives.input = Input::Pipe;
            }
            return Ok(());
        }
        "tty" => {
            directives.input = Input::Terminal(TerminalSize::default());
            return Ok(());
        }
        _ => {}
    }
    let Some((key, value)) = pair.split_once('=') else {
        return Err(format!(
            "the #terminalfs directive '{pair}' is not key=value (keys: timeout, memory, keep, \
             cwd, host, tty=COLSxROWS, sandbox=off; words: stdin, tty)"
        ));
    };
    let bad = |err: String| format!("the #terminalfs directive {key}={value} is not valid: {err}");
    match key {
        "timeout" => {
            let timeout = parse_duration(value).map_err(|e| bad(e.to_string()))?;
            if timeout.is_zero() {
                return Err(bad("a timeout must be longer than zero".to_owned()));
            }
            directives.timeout = Some(timeout);
        }
        "memory" => {
            let memory = parse_size(value).map_err(|e| bad(e.to_string()))?;
            if memory == 0 {
                return Err(bad("a memory limit must be more than zero".to_owned()));
            }
            directives.memory = Some(memory);
        }
        "keep" => directives.keep = Some(parse_duration(value).map_err(|e| bad(e.to_string()))?),
        "cwd" if value.is_empty() => return Err(bad("it names no directory".to_owned())),
        "cwd" => directives.cwd = Some(PathBuf::from(value)),
        "host" => directives.host = Some(value.to_owned()),
        "tty" => {
            directives.input =
                Input::Terminal(TerminalSize::parse(value).map_err(|e| bad(e.to_string()))?)
        }
        "sandbox" if value == "off" => directives.sandbox = crate::sandbox::Choice::Off,
        "sandbox" => return Err(bad("the only value is 'off'".to_owned())),
        _ => {
            return Err(format!(
                "the #terminalfs directive has an unknown key '{key}' (keys: timeout, memory, \
                 keep, cwd, host, tty=COLSxROWS, sandbox=off; words: stdin, tty)"
            ))
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_directives() {
        for text in [
            "",
            "make",
            "\n\n",
            "# just a comment\nmake",
            "make\n# terminalfsx comes later\n#terminalfsy=1",
        ] {
            assert_eq!(parse_directives(text), Ok(Directives::default()), "{text}");
        }
    }

    #[test]
    fn all_keys() {
        let d = parse_directives("#terminalfs timeout=10m memory=2G keep=1h\nmake")
            .expect("valid directives");
        assert_eq!(d.timeout, Some(Duration::from_secs(600)));
        assert_eq!(d.memory, Some(2 << 30));
        assert_eq!(d.keep, Some(Duration::from_secs(3600)));
    }

    #[test]
    fn shebang_blank_lines_and_other_comments_are_skipped() {
        let text = "#!/bin/bash\n\n# build it\n# terminalfs timeout=5s\n  #terminalfs keep=0\n\
                    cargo build\n# done\n";
        let d = parse_directives(text).expect("valid directives");
        assert_eq!(d.timeout, Some(Duration::from_secs(5)));
        assert_eq!(d.keep, Some(Duration::ZERO));
        assert_eq!(d.memory, None);
    }

    #[test]
    fn a_directive_after_the_command_began_is_refused_where_the_shell_skips_it() {
        for (text, line) in [
            (
                "echo first\n#terminalfs timeout=2s\nsleep 5",
                "line 2: '#terminalfs timeout=2s'",
            ),
            (
                "#terminalfs keep=1h\nmake\n  # terminalfs memory=1k\n",
                "line 3",
            ),
            ("make\r\n#terminalfs\r\nls", "line 2: '#terminalfs'"),
            (
                "if true; then\n  #terminalfs timeout=1s\n  make\nfi",
                "line 2",
            ),
            // After a heredoc ends, a line is a comment again.
            ("cat <<EOF\nx\nEOF\n#terminalfs keep=1s\n", "line 4"),
        ] {
            let err = parse_directives(text).expect_err(text);
            assert!(err.contains(line), "{text:?}: {err}");
            assert!(err.contains("after the command has begun"), "{err}");
        }
        // Data, not comments: a heredoc's body, a quoted string, part of a word.
        for text in [
            "cat > notes <<'EOF'\n#terminalfs timeout=1s\nEOF\n",
            "cat <<EOF\n  #terminalfs keep=1s\nEOF",
            "python3 -c '\n#terminalfs timeout=1s\nprint(1)'",
            "echo \"a\n#terminalfs b\"",
            "echo x #terminalfs timeout=1s",
        ] {
            assert_eq!(
                parse_directives(text),
                Ok(Directives::default()),
                "{text:?}"
            );
        }
    }

    #[test]
    fn cwd_is_read_as_written_and_resolved_to_a_directory() {
        let d = parse_directives("#terminalfs cwd=src/app\nmake").expect("valid");
        assert_eq!(d.cwd, Some(PathBuf::from("src/app")));
        let err = parse_directives("#terminalfs cwd=\nmake").expect_err("empty");
        assert!(err.contains("cwd= is not valid"), "{err}");

        let root = tempfile::tempdir().unwrap();
        let base = root.path();
        std::fs::create_dir_all(base.join("a/b")).unwrap();
        std::fs::write(base.join("file"), "").unwrap();
        let home = base.join("a");
        let resolve = |dir: &str| resolve_cwd(Path::new(dir), Some(base), &home);
        assert_eq!(resolve("a/b"), Ok(base.join("a/b")));
        assert_eq!(
            resolve(&base.join("a").display().to_string()),
            Ok(base.join("a"))
        );
        assert_eq!(resolve("~/b"), Ok(home.join("b")));
        assert_eq!(resolve("~"), Ok(home.clone()));
        let missing = resolve("nowhere").expect_err("missing");
        assert!(
            missing.contains("cwd=nowhere names no directory") && missing.contains("nowhere:"),
            "{missing}"
        );
        let file = resolve("file").expect_err("a file");
        assert!(file.contains("not a directory"), "{file}");
        let unknown = resolve_cwd(Path::new("x"), None, &home).expect_err("no base");
        assert!(unknown.contains("give an absolute path"), "{unknown}");
    }

    #[test]
    fn crlf_is_fine() {
        let d = parse_directives("#terminalfs timeout=1s\r\n#terminalfs memory=2k\r\nls")
            .expect("valid directives");
        assert_eq!(d.timeout, Some(Duration::from_secs(1)));
        assert_eq!(d.memory, Some(2048));
    }

    #[test]
    fn a_key_given_twice_is_refused_naming_it() {
        for (text, key, pairs) in [
            (
                "#terminalfs timeout=1s timeout=3s\nls",
                "timeout",
                "(timeout=1s, then timeout=3s)",
            ),
            (
                "#terminalfs timeout=1s\r\n#terminalfs timeout=2s\r\nls",
                "timeout",
                "then",
            ),
            (
                "#terminalfs memory=1G keep=1h memory=1G",
                "memory",
                "(memory=1G, then memory=1G)",
            ),
            (
                "# terminalfs keep=0\n#terminalfs keep=1h\nls",
                "keep",
                "(keep=0, then keep=1h)",
            ),
            (
                "#terminalfs stdin stdin\ncat",
                "stdin",
                "(stdin, then stdin)",
            ),
            (
                "#terminalfs tty\n#terminalfs tty=80x24\nvi",
                "tty",
                "(tty, then tty=80x24)",
            ),
            (
                "#terminalfs tty=80x24 tty=90x30\nvi",
                "tty",
                "then tty=90x30",
            ),
        ] {
            let err = parse_directives(text).expect_err(text);
            assert!(
                err.contains(&format!("key '{key}' is given twice")),
                "{text}: {err}"
            );
            assert!(err.contains(pairs), "{text}: {err}");
        }
        // A bad value is reported as such even when its key came before.
        let err = parse_directives("#terminalfs timeout=1s timeout=soon").expect_err("bad");
        assert!(err.contains("timeout=soon is not valid"), "{err}");
        // Different keys, and the two input words, are no repetition.
        parse_directives("#terminalfs tty stdin timeout=1s\n#terminalfs keep=1h memory=1k\nvi")
            .expect("each key once");
    }

    #[test]
    fn a_similar_comment_is_not_a_directive() {
        let d =
            parse_directives("#terminalfsx timeout=oops\n#terminalfs\nls").expect("not directives");
        assert_eq!(d, Directives::default());
    }

    #[test]
    fn input_words() {
        let input = |text: &str| parse_directives(text).expect(text).input;
        assert_eq!(input("ls"), Input::Closed);
        assert_eq!(input("#terminalfs stdin\npython3 -i"), Input::Pipe);
        let default = Input::Terminal(TerminalSize::default());
        assert_eq!(input("#terminalfs tty\nvi"), default);
        assert_eq!(input("#terminalfs tty stdin\nvi"), default);
        assert_eq!(
            input("#terminalfs stdin\n#terminalfs tty timeout=1m\nvi"),
            default
        );
        assert_eq!(
            input("#terminalfs tty=80x24\nvi"),
            Input::Terminal(TerminalSize { cols: 80, rows: 24 })
        );
    }

    #[test]
    fn errors_name_the_key_or_value() {
        for (text, needle) in [
            ("#terminalfs color=red", "color"),
            ("#terminalfs timeout=soon", "timeout=soon"),
            ("#terminalfs timeout=0", "timeout=0"),
            ("#terminalfs memory=lots", "memory=lots"),
            ("#terminalfs memory=0", "memory=0"),
            ("#terminalfs keep=-1", "keep=-1"),
            ("#terminalfs timeout", "'timeout'"),
            ("#terminalfs =5", "unknown key ''"),
            ("# terminalfs timeout=1s bogus=2\nls", "bogus"),
            ("#terminalfs tty=0x0", "tty=0x0"),
            ("#terminalfs tty=100000x1", "too large"),
            ("#terminalfs tty=wide", "COLSxROWS"),
            ("#terminalfs stdin=yes", "unknown key 'stdin'"),
        ] {
            let err = parse_directives(text).expect_err(text);
            assert!(err.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn sandbox_off_is_the_only_sandbox_value() {
        let d = parse_directives("#terminalfs sandbox=off\nmake").expect("valid");
        assert_eq!(d.sandbox, crate::sandbox::Choice::Off);
        let err = parse_directives("#terminalfs sandbox=on\nmake").unwrap_err();
        assert!(err.contains("sandbox=on") && err.contains("'off'"), "{err}");
    }
}
