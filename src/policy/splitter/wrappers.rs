//! Programs that run another program or a shell string: wrappers peeled layer by layer,
//! the `-c` string of a shell and `eval`, and the commands of `find -exec`.

use super::{basename, is_assignment};

/// Shells whose `-c` string is split as shell text.
pub(crate) const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "csh", "tcsh", "fish",
];

/// For a shell given `-c`, its command string; for `eval`, its arguments joined.
pub(super) fn shell_script(words: &[String]) -> Option<String> {
    let name = basename(words.first()?);
    if name == "eval" {
        let args: Vec<&str> = words
            .iter()
            .skip(1)
            .map(String::as_str)
            .skip_while(|w| *w == "--")
            .collect();
        return (!args.is_empty()).then(|| args.join(" "));
    }
    if !SHELLS.contains(&name) {
        return None;
    }
    let mut has_c = false;
    let mut index = 1;
    while index < words.len() {
        let word = words[index].as_str();
        if word == "--" || word == "-" {
            index += 1;
            break;
        }
        if let Some(long) = word.strip_prefix("--") {
            index += if matches!(long, "rcfile" | "init-file") {
                2
            } else {
                1
            };
            continue;
        }
        if word.len() > 1 && (word.starts_with('-') || word.starts_with('+')) {
            let flags = &word[1..];
            if flags.contains('c') {
                has_c = true;
            }
            index += if flags.ends_with('o') || flags.ends_with('O') {
                2
            } else {
                1
            };
            continue;
        }
        break;
    }
    if has_c {
        words.get(index).cloned()
    } else {
        None
    }
}

/// The commands `find` runs with `-exec`, `-execdir`, `-ok` and `-okdir`.
pub(super) fn find_exec_commands(words: &[String]) -> Vec<Vec<String>> {
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
            let mut command = Vec::new();
            index += 1;
            while index < words.len() && !matches!(words[index].as_str(), ";" | "+") {
                command.push(words[index].clone());
                index += 1;
            }
            if !command.is_empty() {
                out.push(command);
            }
        }
        index += 1;
    }
    out
}

/// How a wrapper's own options are read.
struct Options {
    /// Short options that take an argument (attached or as the next word).
    short_with_argument: &'static [u8],
    /// Short options whose optional argument can only be attached.
    short_optional: &'static [u8],
    /// Long options that take the next word as argument when given without `=`.
    long_with_argument: &'static [&'static str],
    /// Operands the wrapper takes before the command (the duration of `timeout`).
    operands: usize,
    /// Whether `NAME=value` words may follow the options (`env`, `sudo`).
    assignments: bool,
}

const NO_OPTIONS: Options = Options {
    short_with_argument: b"",
    short_optional: b"",
    long_with_argument: &[],
    operands: 0,
    assignments: false,
};

/// The words a wrapper runs, or None when the command is not a wrapper.
pub(super) fn peel(words: &[String]) -> Option<Vec<String>> {
    let name = basename(words.first()?);
    let options = match name {
        "env" => Options {
            short_with_argument: b"uCSP",
            long_with_argument: &["unset", "chdir", "split-string"],
            assignments: true,
            ..NO_OPTIONS
        },
        "command" | "builtin" | "nohup" | "setsid" | "busybox" => NO_OPTIONS,
        "exec" => Options {
            short_with_argument: b"a",
            ..NO_OPTIONS
        },
        "nice" => Options {
            short_with_argument: b"n",
            long_with_argument: &["adjustment"],
            ..NO_OPTIONS
        },
        "timeout" => Options {
            short_with_argument: b"sk",
            long_with_argument: &["signal", "kill-after"],
            operands: 1,
            ..NO_OPTIONS
        },
        "time" => Options {
            short_with_argument: b"fo",
            long_with_argument: &["format", "output"],
            ..NO_OPTIONS
        },
        "stdbuf" => Options {
            short_with_argument: b"oei",
            long_with_argument: &["output", "error", "input"],
            ..NO_OPTIONS
        },
        "xargs" => Options {
            short_with_argument: b"adEILnPs",
            short_optional: b"eil",
            long_with_argument: &[
                "arg-file",
                "delimiter",
                "max-args",
                "max-procs",
                "max-chars",
                "process-slot-var",
            ],
            ..NO_OPTIONS
        },
        "ionice" => Options {
            short_with_argument: b"cnpPu",
            long_with_argument: &["class", "classdata", "pid", "pgid", "uid"],
            ..NO_OPTIONS
        },
        "taskset" => Options {
            operands: 1,
            ..NO_OPTIONS
        },
        "sudo" => Options {
            short_with_argument: b"CDghpRrTtUu",
            long_with_argument: &[
                "close-from",
                "chdir",
                "group",
                "host",
                "prompt",
                "chroot",
                "role",
                "command-timeout",
                "type",
                "other-user",
                "user",
            ],
            assignments: true,
            ..NO_OPTIONS
        },
        "doas" => Options {
            short_with_argument: b"uC",
            ..NO_OPTIONS
        },
        _ => return None,
    };
    let mut split_string: Option<String> = None;
    let mut index = 1;
    while index < words.len() {
        let word = words[index].as_str();
        if word == "--" {
            index += 1;
            break;
        }
        if word == "-" && name == "env" {
            index += 1;
            continue;
        }
        if let Some(long) = word.strip_prefix("--") {
            let (long_name, value) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_owned())),
                None => (long, None),
            };
            let takes_next = value.is_none() && options.long_with_argument.contains(&long_name);
            let value = if takes_next {
                words.get(index + 1).cloned()
            } else {
                value
            };
            if name == "env" && long_name == "split-string" {
                split_string = value;
            }
            index += if takes_next { 2 } else { 1 };
            continue;
        }
        if word.len() > 1 && word.starts_with('-') {
            let flags = &word.as_bytes()[1..];
            let mut takes_next = false;
            for (at, flag) in flags.iter().enumerate() {
                if options.short_optional.contains(flag) {
                    break;
                }
                if options.short_with_argument.contains(flag) {
                    let attached = word.get(at + 2..).unwrap_or("");
                    if attached.is_empty() {
                        takes_next = true;
                    }
                    if name == "env" && *flag == b'S' {
                        split_string = if attached.is_empty() {
                            words.get(index + 1).cloned()
                        } else {
                            Some(attached.to_owned())
                        };
                    }
                    break;
                }
            }
            index += if takes_next { 2 } else { 1 };
            continue;
        }
        break;
    }
    if options.assignments {
        while index < words.len() && is_assignment(&words[index]) {
            index += 1;
        }
    }
    index = index.saturating_add(options.operands);
    let mut rest: Vec<String> = Vec::new();
    if let Some(split_string) = split_string {
        rest.extend(split_string.split_whitespace().map(str::to_owned));
    }
    rest.extend(words.iter().skip(index).cloned());
    Some(rest)
}
