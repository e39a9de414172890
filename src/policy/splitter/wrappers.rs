//! Programs that run another program or a string of shell code, peeled one layer at a
//! time: the wrapper's options are skipped by its entry in [`table`], and what it runs is
//! handed on as a command (or, for `find -exec`, as the commands after it). What is run
//! as shell code is read in [`shell_code`], `env -S` strings in [`env_string`], names the
//! text gives a new meaning in [`renames`], and `printf` output in [`printf`].

use std::ops::Range;

use super::grammar::truncated;
use super::lexer::is_plain;
use super::{basename, is_assignment, is_name, sub_parse, Context, Parser, Rename, MAX_MEANINGS};

mod env_string;
mod printf;
mod renames;
mod shell_code;
mod table;

pub(crate) use env_string::*;
pub(crate) use printf::*;
pub(crate) use renames::*;
pub(crate) use shell_code::*;
pub(crate) use table::*;

/// One layer peeled off a command: the command it runs and the shell strings it hands to a
/// shell.
pub(super) struct Peeled {
    pub runs: Rest,
    pub scripts: Vec<String>,
    /// The values of the variables it puts in the program's environment that hold a
    /// substitution (`env 'x=a[$(X)]' bash -c '((x))'`): see [`assigned_code`].
    pub values: Vec<String>,
    /// Why the command cannot be checked, when an operand makes it so
    /// (`env BASH_ENV=/dev/stdin bash`).
    pub refusal: Option<String>,
}

/// The command a wrapper runs.
pub(super) enum Rest {
    /// Its own words from this index on (shared with the wrapper's, not copied).
    From(usize),
    /// Words of its own making (`env -S`, `su`'s shell); empty when it runs no command.
    Words(Vec<String>),
}

/// The words a wrapper runs and the shell strings it runs, or None when the command is not
/// a wrapper.
pub(super) fn peel(words: &[String]) -> Option<Peeled> {
    let name = basename(words.first()?);
    if name == "eval" {
        // `eval` of plain words runs those words: peeled like a wrapper.
        return eval_of_words(words).map(|start| Peeled {
            runs: Rest::From(start),
            scripts: Vec::new(),
            values: Vec::new(),
            refusal: None,
        });
    }
    let name = loader_name(name);
    let subcommand = words.get(1).map(String::as_str);
    let wrapper = WRAPPERS.iter().find(|w| {
        w.names.contains(&name)
            && (w.subcommands.is_empty() || subcommand.is_some_and(|s| w.subcommands.contains(&s)))
    })?;
    let mut peeled = Peeled {
        runs: Rest::Words(Vec::new()),
        scripts: Vec::new(),
        values: Vec::new(),
        refusal: None,
    };
    let mut split_string: Option<String> = None;
    let mut program: Option<(usize, String)> = None;
    let first = if wrapper.subcommands.is_empty() { 1 } else { 2 };
    let mut index = first;
    while index < first + wrapper.leading_operands
        && words.get(index).is_some_and(|w| !w.starts_with('-'))
    {
        index += 1;
    }
    while index < words.len() {
        let word = words[index].as_str();
        if word == "--" {
            index += 1;
            break;
        }
        if word == "-" && matches!(name, "env" | "su") {
            index += 1;
            continue;
        }
        if let Some(long) = word.strip_prefix("--") {
            let (long_name, attached) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_owned())),
                None => (long, None),
            };
            let count = wrapper
                .long_values
                .iter()
                .find(|(n, _)| *n == long_name)
                .map_or(0, |(_, count)| *count);
            let takes = if attached.is_some() { 0 } else { count };
            let value = attached.or_else(|| (takes > 0).then(|| words.get(index + 1).cloned())?);
            if wrapper.command_long == Some(long_name) {
                let value = value.or_else(|| words.get(index + 1).cloned());
                peeled.scripts.extend(value);
                index += if long.contains('=') { 1 } else { 2 };
                continue;
            }
            if name == "env" && long_name == "split-string" {
                split_string = value;
            } else if let Some(rank) = wrapper.program_long.iter().position(|l| *l == long_name) {
                keep_program(&mut program, rank, value);
            }
            index += 1 + takes;
            continue;
        }
        if word.len() > 1 && word.starts_with('-') {
            let flags = &word.as_bytes()[1..];
            let mut takes_next = false;
            for (at, flag) in flags.iter().enumerate() {
                if wrapper.short_optional.contains(flag) {
                    break;
                }
                let attached = word.get(at + 2..).unwrap_or("");
                let value = if attached.is_empty() {
                    words.get(index + 1).cloned()
                } else {
                    Some(attached.to_owned())
                };
                if wrapper.command_short == Some(*flag) {
                    takes_next = attached.is_empty();
                    peeled.scripts.extend(value);
                    break;
                }
                if wrapper.short_value.contains(flag) {
                    takes_next = attached.is_empty();
                    if name == "env" && *flag == b'S' {
                        split_string = value;
                    } else if let Some(rank) = wrapper.program_short.iter().position(|f| f == flag)
                    {
                        keep_program(&mut program, rank, value);
                    }
                    break;
                }
            }
            index += if takes_next { 2 } else { 1 };
            continue;
        }
        break;
    }
    if wrapper.assignments {
        // env takes any word holding `=` as a variable, also one bash would not name.
        while index < words.len()
            && (is_assignment(&words[index]) || (name == "env" && words[index].contains('=')))
        {
            if let Some(function) = words[index].strip_prefix("BASH_FUNC_") {
                // An exported function: its body runs if a shell below calls it.
                if let Some((_, body)) = function.split_once('=') {
                    peeled.scripts.push(body.to_owned());
                }
            }
            // Read as an assignment before a command is: a prompt, a startup file's
            // name, `PROMPT_COMMAND`, a value holding a substitution.
            let (run, expand) = code_in_assignment(&words[index]);
            peeled.scripts.extend(run);
            peeled.values.extend(expand);
            if peeled.refusal.is_none() {
                peeled.refusal = startup_file_pipe(&words[index]);
            }
            index += 1;
        }
    }
    let index = index.min(words.len());
    if name == "command" && describes_only(&words[1..index]) {
        // `command -v NAME` and `command -V NAME` say what NAME is; they run nothing.
        return Some(peeled);
    }
    let rest = &words[index..];
    match wrapper.runs {
        Runs::Command => {
            let start = (index + wrapper.operands).min(words.len());
            let rest = &words[start..];
            // `flock FILE -c COMMAND`: the command option may follow the operands.
            let command_option = rest.first().is_some_and(|w| {
                wrapper
                    .command_short
                    .is_some_and(|c| *w == format!("-{}", c as char))
                    || wrapper.command_long.is_some_and(|l| *w == format!("--{l}"))
            });
            if command_option {
                peeled.scripts.extend(rest.get(1).cloned());
            } else if let Some(split_string) = split_string {
                // The words of the string are env's own arguments again: options and
                // assignments may lead them (`env -S '-u X A=1 sudo'`).
                let mut command = vec!["env".to_owned()];
                command.extend(split_env_string(&split_string));
                command.extend(rest.iter().cloned());
                peeled.runs = Rest::Words(command);
            } else if !rest.is_empty() {
                peeled.runs = Rest::From(start);
            }
        }
        Runs::Joined => {
            let rest = rest.get(wrapper.operands..).unwrap_or(&[]);
            if name == "parallel" && rest.first().is_some_and(|w| w == ":::") {
                // No command: each argument is a command line of its own.
                let args = rest[1..].iter().filter(|w| !w.starts_with(":::"));
                peeled.scripts.extend(args.cloned());
            } else if !rest.is_empty() {
                peeled.scripts.push(rest.join(" "));
            }
        }
        Runs::ShellArguments => {
            // `su [user [shell arguments]]`; `runuser -u user command`.
            let by_option = words.iter().any(|w| w == "-u" || w.starts_with("--user"));
            if by_option && name == "runuser" {
                if !rest.is_empty() {
                    peeled.runs = Rest::From(index);
                }
            } else if rest.len() > 1 {
                let mut command = vec!["sh".to_owned()];
                command.extend(rest[1..].iter().cloned());
                peeled.runs = Rest::Words(command);
            }
        }
        Runs::Nothing => {}
        Runs::EachScript => peeled.scripts.extend(rest.iter().cloned()),
        Runs::ShellWords => {
            if !rest.is_empty() {
                let mut command = vec!["sh".to_owned()];
                command.extend(rest.iter().cloned());
                peeled.runs = Rest::Words(command);
            }
        }
        Runs::ProgramOption => {
            if let Some((_, program)) = program {
                let mut command = vec![program];
                command.extend(rest.iter().cloned());
                peeled.runs = Rest::Words(command);
            }
        }
        Runs::AfterMarker(markers) => {
            peeled.scripts.extend(gdb_shell_commands(words));
            let after = words.iter().position(|w| markers.contains(&w.as_str()));
            if let Some(start) = after.map(|at| at + 1).filter(|&at| at < words.len()) {
                peeled.runs = Rest::From(start);
            }
        }
    }
    Some(peeled)
}

/// The shell commands `gdb` runs from its command options (`-ex 'shell X'`, `-ex '!X'`,
/// `--eval-command=shell X`, `-iex`).
fn gdb_shell_commands(words: &[String]) -> Vec<String> {
    const OPTIONS: &[&str] = &["ex", "eval-command", "iex", "init-eval-command"];
    let mut commands = Vec::new();
    for (index, word) in words.iter().enumerate() {
        let option = word.trim_start_matches('-');
        if word.len() == option.len() {
            continue;
        }
        let value = match option.split_once('=') {
            Some((name, value)) if OPTIONS.contains(&name) => Some(value.to_owned()),
            None if OPTIONS.contains(&option) => words.get(index + 1).cloned(),
            _ => None,
        };
        let Some(value) = value else { continue };
        let value = value.trim_start();
        if let Some(command) = value.strip_prefix('!') {
            commands.push(command.to_owned());
        } else if let Some(command) = value
            .strip_prefix("shell")
            .filter(|c| c.starts_with(char::is_whitespace))
        {
            commands.push(command.trim_start().to_owned());
        }
    }
    commands
}

/// Keeps the value of a program option (`--exec`, `--startas`) when it outranks the one
/// kept: a higher `rank` wins, and a later one of the same rank.
fn keep_program(program: &mut Option<(usize, String)>, rank: usize, value: Option<String>) {
    if let Some(value) = value {
        if program.as_ref().is_none_or(|(kept, _)| rank >= *kept) {
            *program = Some((rank, value));
        }
    }
}

/// The name the dynamic loader is known by in the table (`ld.so`) for any of its file
/// names (`ld-linux-x86-64.so.2`, `ld-linux-aarch64.so.1`, `ld-musl-x86_64.so.1`,
/// `ld64.so.2`); any other name as it is.
fn loader_name(name: &str) -> &str {
    let loader = ["ld-linux", "ld-musl", "ld64.so"]
        .iter()
        .any(|start| name.starts_with(start) && name.contains(".so"))
        || name == "ld.so";
    if loader {
        "ld.so"
    } else {
        name
    }
}

/// A word quoted so that shell text reads it back as it is, but for its `*`, `?`, `[` and
/// `]`, left bare so that it stays a pattern.
pub(super) fn quoted_but_glob(word: &str) -> String {
    let mut out = String::with_capacity(word.len() * 2);
    for c in word.chars() {
        match c {
            '*' | '?' | '[' | ']' | '/' | '.' | '-' | '_' => out.push(c),
            c if c.is_ascii_alphanumeric() => out.push(c),
            '\'' => out.push_str("\\'"),
            c => {
                out.push('\'');
                out.push(c);
                out.push('\'');
            }
        }
    }
    out
}

/// A word quoted so that shell text reads it back as it is.
pub(super) fn quoted(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\\''"))
}

/// The commands `find` runs with `-exec`, `-execdir`, `-ok` and `-okdir`, as ranges of
/// `words`: a nested `find` reads its command from the same words instead of a copy.
pub(super) fn find_exec_commands(words: &[String]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    if words.first().map(|w| basename(w)) != Some("find") {
        return out;
    }
    let mut index = 1;
    while index < words.len() {
        if matches!(
            words[index].as_str(),
            "-exec" | "-execdir" | "-ok" | "-okdir"
        ) {
            index += 1;
            let start = index;
            while index < words.len() && !matches!(words[index].as_str(), ";" | "+") {
                index += 1;
            }
            if index > start {
                out.push(start..index);
            }
        }
        index += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split(' ').map(str::to_owned).collect()
    }

    /// The command one layer of `text` runs, and the shell strings it runs.
    fn peeled(text: &str) -> (Vec<String>, Vec<String>) {
        let all = words(text);
        let peeled = peel(&all).expect("a wrapper");
        let runs = match peeled.runs {
            Rest::From(start) => all[start..].to_vec(),
            Rest::Words(words) => words,
        };
        (runs, peeled.scripts)
    }

    #[test]
    fn printf_output_decodes_escapes_and_puts_arguments_in() {
        let output = |args: &[&str]| {
            let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
            printf_output(&args)
        };
        assert_eq!(
            output(&["-v", "x", "a[\\x24(X)]"]).as_deref(),
            Some("a[$(X)]")
        );
        assert_eq!(output(&["-vx", "a[\\044(X)]"]).as_deref(), Some("a[$(X)]"));
        assert_eq!(
            output(&["-v", "x", "--", "%s(X)]", "a[$"]).as_deref(),
            Some("a[$(X)]")
        );
        assert_eq!(output(&["-v", "x", "%b", "\\0044"]).as_deref(), Some("$"));
        assert_eq!(
            output(&["-v", "x", "%s,", "a", "b"]).as_deref(),
            Some("a,b,")
        );
        assert_eq!(
            output(&["-v", "x", "100%% %05d", "3"]).as_deref(),
            Some("100% 3")
        );
        assert_eq!(output(&["-v", "x"]), None);
    }

    #[test]
    fn env_split_string_splits_as_gnu_env_does() {
        for (string, want) in [
            ("sudo -i", vec!["sudo", "-i"]),
            ("'su'do -i", vec!["sudo", "-i"]),
            ("\"sudo\" -i", vec!["sudo", "-i"]),
            ("sudo\\_-i", vec!["sudo", "-i"]),
            ("\"a\\_b\" c", vec!["a b", "c"]),
            ("a'b c'd", vec!["ab cd"]),
            ("'a\\'b' \"x\\\"y\"", vec!["a'b", "x\"y"]),
            ("'a\\nb' a\\tb", vec!["a\\nb", "a\tb"]),
            ("s\\udo", vec!["sudo"]),
            ("sudo #-i", vec!["sudo"]),
            ("a#b", vec!["a#b"]),
            ("x\\cy z", vec!["x"]),
            ("  a\t b  ", vec!["a", "b"]),
            ("''", vec![""]),
        ] {
            assert_eq!(split_env_string(string), want, "{string}");
        }
        // The words are env's arguments again: its options and assignments are peeled.
        assert_eq!(peeled("env -S sudo\\_-i x").0, ["env", "sudo", "-i", "x"]);
        assert_eq!(peeled("env -S'su'do").0, ["env", "sudo"]);
        assert_eq!(
            peeled("env --split-string=-i\\_sudo").0,
            ["env", "-i", "sudo"]
        );
    }

    #[test]
    fn programs_that_run_programs_are_peeled() {
        for (text, runs) in [
            ("setarch x86_64 -R sudo -i", "sudo -i"),
            ("setarch i686 --addr-no-randomize sudo", "sudo"),
            ("setarch -R sudo", "sudo"),
            ("linux32 sudo -i", "sudo -i"),
            ("x86_64 -v sudo", "sudo"),
            (
                "/lib64/ld-linux-x86-64.so.2 /usr/bin/sudo -i",
                "/usr/bin/sudo -i",
            ),
            ("ld-linux-aarch64.so.1 --library-path /x sudo", "sudo"),
            ("ld.so --preload x.so --argv0 y sudo", "sudo"),
            ("ld-musl-x86_64.so.1 sudo", "sudo"),
            ("logsave -a /tmp/log sudo -i", "sudo -i"),
            ("ssh-agent -t 60 -a /tmp/s sudo", "sudo"),
            ("systemd-inhibit --what=shutdown --why x sudo", "sudo"),
            ("systemd-cat -t tag -p info sudo", "sudo"),
            ("dbus-run-session --config-file x -- sudo", "sudo"),
            ("dbus-run-session sudo", "sudo"),
            ("eatmydata -- sudo", "sudo"),
            ("valgrind --tool=none -q sudo", "sudo"),
            ("xvfb-run -a -s '-screen' -w 3 sudo", "sudo"),
            ("unbuffer -p sudo", "sudo"),
            ("tini -s -p SIGKILL -- sudo", "sudo"),
            ("tini sudo", "sudo"),
            ("dumb-init -c --rewrite 15:9 sudo", "sudo"),
            ("chpst -u nobody -/ /x -v sudo", "sudo"),
            ("setuidgid me sudo", "sudo"),
            ("softlimit -m 100 sudo", "sudo"),
            ("cgexec -g cpu:/x -g memory:/y --sticky sudo", "sudo"),
            ("faketime -f 2020-01-01 sudo -i", "sudo -i"),
            ("faketime --exclude-monotonic @1 sudo", "sudo"),
            (
                "start-stop-daemon --start --exec /usr/bin/sudo -- -i",
                "/usr/bin/sudo -i",
            ),
            (
                "start-stop-daemon -S -x /bin/true -a /usr/bin/sudo -- -i",
                "/usr/bin/sudo -i",
            ),
            ("start-stop-daemon -S -b -x/usr/bin/sudo", "/usr/bin/sudo"),
            (
                "start-stop-daemon --start --startas=sudo --exec /bin/true",
                "sudo",
            ),
            ("gdb -q -batch -ex run --args sudo -i", "sudo -i"),
        ] {
            assert_eq!(peeled(text).0.join(" "), runs, "{text}");
        }
        assert!(peeled("start-stop-daemon --stop --pidfile /run/x")
            .0
            .is_empty());
        assert!(peeled("gdb ./prog core").0.is_empty());
        let gdb: Vec<String> = [
            "gdb",
            "-batch",
            "-ex",
            "shell x",
            "--eval-command=!y",
            "-iex",
        ]
        .iter()
        .chain(&["z", "--ex", "shell\tw", "prog"])
        .map(|w| (*w).to_owned())
        .collect();
        assert_eq!(peel(&gdb).expect("a wrapper").scripts, ["x", "y", "w"]);
        assert_eq!(peeled("gdb -ex !sudo").1, ["sudo"]);
        assert!(peel(&words("ld-2.so")).is_none());
        assert!(peel(&words("ldd /bin/ls")).is_none());
    }
}
