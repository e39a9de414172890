//! Programs that run another program or a string of shell code: a table of wrappers, each
//! with the options that take a value, peeled one layer at a time; shells given `-c` (and
//! their positional arguments) or reading their script from standard input; `eval`,
//! `trap` and the other builtins that run or expand a string later; and the commands of
//! `find -exec`.

use std::ops::Range;

use super::grammar::truncated;
use super::lexer::is_plain;
use super::{basename, is_assignment, is_name, sub_parse, Context, Parser, Rename, MAX_MEANINGS};

/// Shells: their `-c` string is split as shell text, and without a script operand they
/// read their script from standard input.
pub(crate) const SHELLS: &[&str] = &[
    "sh", "bash", "rbash", "dash", "zsh", "ksh", "ksh93", "mksh", "pdksh", "ash", "yash", "posh",
    "csh", "tcsh", "fish",
];

/// What a wrapper does with the words after its options.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Runs {
    /// The words are a command and its arguments.
    Command,
    /// The words are joined into one string that a shell runs (`watch`, `sg`).
    Joined,
    /// The words are the arguments of a shell (`su user -c X`: `-c X` goes to the shell).
    ShellArguments,
    /// Nothing: only the value of its command option runs (`script -c X`).
    Nothing,
    /// The value of its program option, with the words after its options as arguments
    /// (`start-stop-daemon --start --exec PROG -- ARGS`).
    ProgramOption,
    /// The words after a marker word (`gdb ... --args PROG ARGS`).
    AfterMarker(&'static [&'static str]),
}

/// How one wrapper reads its own options.
struct Wrapper {
    names: &'static [&'static str],
    /// Short options that take a value (attached, or as the next word).
    short_value: &'static [u8],
    /// Short options whose value can only be attached (`xargs -i`, `-e`).
    short_optional: &'static [u8],
    /// Long options followed by that many values when not given `--name=value`.
    long_values: &'static [(&'static str, usize)],
    /// Words before the command that are not options (the duration of `timeout`).
    operands: usize,
    /// Words before the options that are not options (the architecture of `setarch`):
    /// as many as there are, up to this count, before the first word starting with `-`.
    leading_operands: usize,
    /// Whether `NAME=value` words may follow the options (`env`, `sudo`).
    assignments: bool,
    /// An option whose value is a shell string that is run (`su -c`, `flock -c`).
    command_short: Option<u8>,
    command_long: Option<&'static str>,
    /// Options whose value is the program run ([`Runs::ProgramOption`]), the last of
    /// them given winning: `start-stop-daemon` runs `--startas` when given, else `--exec`.
    program_short: &'static [u8],
    program_long: &'static [&'static str],
    runs: Runs,
}

const PLAIN: Wrapper = Wrapper {
    names: &[],
    short_value: b"",
    short_optional: b"",
    long_values: &[],
    operands: 0,
    leading_operands: 0,
    assignments: false,
    command_short: None,
    command_long: None,
    program_short: b"",
    program_long: &[],
    runs: Runs::Command,
};

/// Every program known to run the command it is given, with its options.
const WRAPPERS: &[Wrapper] = &[
    Wrapper {
        names: &["env"],
        short_value: b"uCSP",
        long_values: &[("unset", 1), ("chdir", 1), ("split-string", 1)],
        assignments: true,
        ..PLAIN
    },
    Wrapper {
        names: &["command", "builtin", "nohup", "fakeroot-tcp"],
        ..PLAIN
    },
    Wrapper {
        names: &["setsid"],
        ..PLAIN
    },
    Wrapper {
        names: &["exec"],
        short_value: b"a",
        ..PLAIN
    },
    Wrapper {
        names: &["nice"],
        short_value: b"n",
        long_values: &[("adjustment", 1)],
        ..PLAIN
    },
    Wrapper {
        names: &["timeout"],
        short_value: b"sk",
        long_values: &[("signal", 1), ("kill-after", 1)],
        operands: 1,
        ..PLAIN
    },
    Wrapper {
        names: &["time"],
        short_value: b"fo",
        long_values: &[("format", 1), ("output", 1)],
        ..PLAIN
    },
    Wrapper {
        names: &["stdbuf"],
        short_value: b"oei",
        long_values: &[("output", 1), ("error", 1), ("input", 1)],
        ..PLAIN
    },
    Wrapper {
        names: &["xargs"],
        short_value: b"adEILnPs",
        short_optional: b"eil",
        long_values: &[
            ("arg-file", 1),
            ("delimiter", 1),
            ("max-args", 1),
            ("max-procs", 1),
            ("max-chars", 1),
            ("process-slot-var", 1),
        ],
        ..PLAIN
    },
    Wrapper {
        names: &["ionice"],
        short_value: b"cnpPu",
        long_values: &[("class", 1), ("classdata", 1)],
        ..PLAIN
    },
    Wrapper {
        names: &["taskset"],
        operands: 1,
        ..PLAIN
    },
    Wrapper {
        names: &["sudo"],
        short_value: b"CDghpRrTtUu",
        long_values: &[
            ("close-from", 1),
            ("chdir", 1),
            ("group", 1),
            ("host", 1),
            ("prompt", 1),
            ("chroot", 1),
            ("role", 1),
            ("command-timeout", 1),
            ("type", 1),
            ("other-user", 1),
            ("user", 1),
        ],
        assignments: true,
        ..PLAIN
    },
    Wrapper {
        names: &["doas"],
        short_value: b"uC",
        ..PLAIN
    },
    Wrapper {
        names: &["flock"],
        short_value: b"wE",
        long_values: &[("timeout", 1), ("wait", 1), ("conflict-exit-code", 1)],
        operands: 1,
        command_short: Some(b'c'),
        command_long: Some("command"),
        ..PLAIN
    },
    Wrapper {
        names: &["chroot"],
        long_values: &[("userspec", 1), ("groups", 1)],
        operands: 1,
        ..PLAIN
    },
    Wrapper {
        names: &["unshare"],
        short_value: b"SGRw",
        long_values: &[
            ("setuid", 1),
            ("setgid", 1),
            ("root", 1),
            ("wd", 1),
            ("propagation", 1),
            ("setgroups", 1),
            ("map-user", 1),
            ("map-group", 1),
            ("map-users", 1),
            ("map-groups", 1),
            ("monotonic", 1),
            ("boottime", 1),
        ],
        ..PLAIN
    },
    Wrapper {
        names: &["nsenter"],
        short_value: b"tSG",
        long_values: &[("target", 1), ("setuid", 1), ("setgid", 1)],
        ..PLAIN
    },
    Wrapper {
        names: &["runuser", "su"],
        short_value: b"ugGsw",
        long_values: &[
            ("user", 1),
            ("group", 1),
            ("supp-group", 1),
            ("shell", 1),
            ("whitelist-environment", 1),
        ],
        command_short: Some(b'c'),
        command_long: Some("command"),
        runs: Runs::ShellArguments,
        ..PLAIN
    },
    Wrapper {
        names: &["sg"],
        operands: 1,
        command_short: Some(b'c'),
        runs: Runs::Joined,
        ..PLAIN
    },
    Wrapper {
        names: &["setpriv"],
        long_values: &[
            ("reuid", 1),
            ("regid", 1),
            ("ruid", 1),
            ("rgid", 1),
            ("euid", 1),
            ("egid", 1),
            ("groups", 1),
            ("inh-caps", 1),
            ("ambient-caps", 1),
            ("bounding-set", 1),
            ("securebits", 1),
            ("pdeathsig", 1),
            ("selinux-label", 1),
            ("apparmor-profile", 1),
            ("landlock-access", 1),
            ("landlock-rule", 1),
            ("seccomp-filter", 1),
        ],
        ..PLAIN
    },
    Wrapper {
        names: &["prlimit"],
        short_value: b"po",
        long_values: &[("pid", 1), ("output", 1)],
        ..PLAIN
    },
    Wrapper {
        names: &["chrt"],
        short_value: b"TPD",
        long_values: &[
            ("sched-runtime", 1),
            ("sched-period", 1),
            ("sched-deadline", 1),
        ],
        operands: 1,
        ..PLAIN
    },
    Wrapper {
        names: &["numactl"],
        short_value: b"imNCpPwbu",
        long_values: &[
            ("interleave", 1),
            ("weighted-interleave", 1),
            ("membind", 1),
            ("cpunodebind", 1),
            ("physcpubind", 1),
            ("preferred", 1),
            ("preferred-many", 1),
        ],
        ..PLAIN
    },
    Wrapper {
        names: &["script"],
        short_value: b"cEIOBTm",
        long_values: &[
            ("echo", 1),
            ("log-in", 1),
            ("log-out", 1),
            ("log-io", 1),
            ("log-timing", 1),
            ("logging-format", 1),
            ("output-limit", 1),
        ],
        command_short: Some(b'c'),
        command_long: Some("command"),
        runs: Runs::Nothing,
        ..PLAIN
    },
    Wrapper {
        names: &["strace"],
        short_value: b"abeEIoOpPsSuUX",
        long_values: &[
            ("expr", 1),
            ("output", 1),
            ("attach", 1),
            ("user", 1),
            ("env", 1),
            ("string-limit", 1),
            ("trace", 1),
            ("signal", 1),
            ("status", 1),
            ("trace-path", 1),
        ],
        ..PLAIN
    },
    Wrapper {
        names: &["ltrace"],
        short_value: b"aAeDFlnopsuwxX",
        long_values: &[("output", 1), ("library", 1), ("indent", 1), ("align", 1)],
        ..PLAIN
    },
    Wrapper {
        names: &["watch"],
        short_value: b"nq",
        long_values: &[("interval", 1), ("equexit", 1)],
        runs: Runs::Joined,
        ..PLAIN
    },
    Wrapper {
        names: &["parallel", "sem"],
        short_value: b"jSlNLnkmIEdCaP",
        long_values: &[
            ("jobs", 1),
            ("sshlogin", 1),
            ("joblog", 1),
            ("delay", 1),
            ("timeout", 1),
            ("arg-file", 1),
            ("max-args", 1),
            ("colsep", 1),
            ("results", 1),
            ("tmpdir", 1),
            ("workdir", 1),
            ("id", 1),
        ],
        runs: Runs::Joined,
        ..PLAIN
    },
    Wrapper {
        names: &["fakeroot"],
        short_value: b"lsib",
        long_values: &[("lib", 1), ("faked", 1)],
        ..PLAIN
    },
    Wrapper {
        names: &["firejail"],
        ..PLAIN
    },
    Wrapper {
        names: &["bwrap"],
        long_values: &[
            ("args", 1),
            ("argv0", 1),
            ("userns", 1),
            ("userns2", 1),
            ("pidns", 1),
            ("uid", 1),
            ("gid", 1),
            ("hostname", 1),
            ("chdir", 1),
            ("unsetenv", 1),
            ("lock-file", 1),
            ("sync-fd", 1),
            ("remount-ro", 1),
            ("exec-label", 1),
            ("file-label", 1),
            ("proc", 1),
            ("dev", 1),
            ("tmpfs", 1),
            ("mqueue", 1),
            ("dir", 1),
            ("seccomp", 1),
            ("add-seccomp-fd", 1),
            ("block-fd", 1),
            ("userns-block-fd", 1),
            ("info-fd", 1),
            ("json-status-fd", 1),
            ("cap-add", 1),
            ("cap-drop", 1),
            ("perms", 1),
            ("size", 1),
            ("overlay-src", 1),
            ("setenv", 2),
            ("bind", 2),
            ("bind-try", 2),
            ("dev-bind", 2),
            ("dev-bind-try", 2),
            ("ro-bind", 2),
            ("ro-bind-try", 2),
            ("bind-fd", 2),
            ("ro-bind-fd", 2),
            ("file", 2),
            ("bind-data", 2),
            ("ro-bind-data", 2),
            ("symlink", 2),
            ("chmod", 2),
            ("tmp-overlay", 2),
            ("ro-overlay", 2),
            ("overlay", 3),
        ],
        ..PLAIN
    },
    Wrapper {
        names: &["systemd-run"],
        short_value: b"upEMH",
        long_values: &[
            ("unit", 1),
            ("property", 1),
            ("description", 1),
            ("slice", 1),
            ("uid", 1),
            ("gid", 1),
            ("nice", 1),
            ("setenv", 1),
            ("machine", 1),
            ("host", 1),
            ("working-directory", 1),
            ("service-type", 1),
            ("on-active", 1),
            ("on-boot", 1),
            ("on-startup", 1),
            ("on-unit-active", 1),
            ("on-unit-inactive", 1),
            ("on-calendar", 1),
            ("timer-property", 1),
            ("path-property", 1),
            ("socket-property", 1),
        ],
        ..PLAIN
    },
    Wrapper {
        names: &["setarch"],
        leading_operands: 1,
        ..PLAIN
    },
    Wrapper {
        // setarch under the names of an architecture, which take no architecture operand.
        names: &[
            "linux32", "linux64", "i386", "i486", "i586", "i686", "athlon", "x86_64", "uname26",
        ],
        ..PLAIN
    },
    Wrapper {
        // The dynamic loader run as a program (`/lib64/ld-linux-x86-64.so.2 PROG`); every
        // `ld-linux*.so*`, `ld-musl*.so*`, `ld64.so*` and `ld.so` is read as `ld.so`.
        names: &["ld.so"],
        long_values: &[
            ("library-path", 1),
            ("inhibit-rpath", 1),
            ("audit", 1),
            ("preload", 1),
            ("argv0", 1),
            ("glibc-hwcaps-prepend", 1),
            ("glibc-hwcaps-mask", 1),
        ],
        ..PLAIN
    },
    Wrapper {
        names: &["logsave"],
        operands: 1,
        ..PLAIN
    },
    Wrapper {
        names: &["ssh-agent"],
        short_value: b"aEOPt",
        ..PLAIN
    },
    Wrapper {
        names: &["systemd-inhibit"],
        long_values: &[("what", 1), ("who", 1), ("why", 1), ("mode", 1)],
        ..PLAIN
    },
    Wrapper {
        names: &["systemd-cat"],
        short_value: b"tp",
        long_values: &[
            ("identifier", 1),
            ("priority", 1),
            ("stderr-priority", 1),
            ("level-prefix", 1),
            ("namespace", 1),
        ],
        ..PLAIN
    },
    Wrapper {
        names: &["dbus-run-session"],
        long_values: &[("dbus-daemon", 1), ("config-file", 1)],
        ..PLAIN
    },
    Wrapper {
        // Options are only ever `--name=value`.
        names: &["eatmydata", "unbuffer", "valgrind", "pgrphack"],
        ..PLAIN
    },
    Wrapper {
        names: &["xvfb-run"],
        short_value: b"efnpsw",
        long_values: &[
            ("error-file", 1),
            ("auth-file", 1),
            ("server-num", 1),
            ("xauth-protocol", 1),
            ("server-args", 1),
            ("wait", 1),
        ],
        ..PLAIN
    },
    Wrapper {
        names: &["tini"],
        short_value: b"pe",
        ..PLAIN
    },
    Wrapper {
        names: &["dumb-init"],
        short_value: b"r",
        long_values: &[("rewrite", 1)],
        ..PLAIN
    },
    Wrapper {
        names: &["chpst"],
        short_value: b"uUbe/Cnlmdopfcrt",
        ..PLAIN
    },
    Wrapper {
        names: &["softlimit"],
        short_value: b"acdflmoprst",
        ..PLAIN
    },
    Wrapper {
        names: &["setuidgid", "envuidgid", "envdir"],
        operands: 1,
        ..PLAIN
    },
    Wrapper {
        names: &["setlock"],
        operands: 1,
        ..PLAIN
    },
    Wrapper {
        names: &["cgexec"],
        short_value: b"g",
        ..PLAIN
    },
    Wrapper {
        names: &["faketime"],
        short_value: b"p",
        long_values: &[("date-prog", 1)],
        operands: 1,
        ..PLAIN
    },
    Wrapper {
        names: &["start-stop-daemon"],
        short_value: b"pxnugcsardNPIkOR",
        long_values: &[
            ("pid", 1),
            ("ppid", 1),
            ("pidfile", 1),
            ("exec", 1),
            ("name", 1),
            ("user", 1),
            ("group", 1),
            ("chuid", 1),
            ("signal", 1),
            ("startas", 1),
            ("chroot", 1),
            ("chdir", 1),
            ("nicelevel", 1),
            ("procsched", 1),
            ("iosched", 1),
            ("umask", 1),
            ("notify-timeout", 1),
            ("output", 1),
            ("retry", 1),
        ],
        program_short: b"xa",
        program_long: &["exec", "startas"],
        runs: Runs::ProgramOption,
        ..PLAIN
    },
    Wrapper {
        names: &["gdb", "gdb-multiarch"],
        runs: Runs::AfterMarker(&["--args", "-args"]),
        ..PLAIN
    },
    Wrapper {
        names: &["busybox"],
        ..PLAIN
    },
];

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
    let wrapper = WRAPPERS.iter().find(|w| w.names.contains(&name))?;
    let mut peeled = Peeled {
        runs: Rest::Words(Vec::new()),
        scripts: Vec::new(),
        values: Vec::new(),
        refusal: None,
    };
    let mut split_string: Option<String> = None;
    let mut program: Option<(usize, String)> = None;
    let mut index = 1;
    while index < 1 + wrapper.leading_operands
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
            if !rest.is_empty() {
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

/// The words GNU `env -S STRING` makes of its string: split at blanks outside quotes;
/// single quotes keep everything but `\\` and `\'`; double quotes keep blanks; `\_` is a
/// space in double quotes and a separator outside them; `\"`, `\'`, `\#`, `\$`, `\\`
/// are those characters, `\f`, `\n`, `\r`, `\t`, `\v` control characters; `\c` and a
/// `#` starting a word end the string. `${NAME}` is left as written.
fn split_env_string(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let (mut single, mut double) = (false, false);
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' if !double => {
                single = !single;
                in_word = true;
            }
            '"' if !single => {
                double = !double;
                in_word = true;
            }
            ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r' if !single && !double => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '#' if !single && !double && !in_word => break,
            '\\' if single => {
                let rest = chars.as_str();
                match rest.chars().next() {
                    Some(next @ ('\\' | '\'')) => {
                        chars.next();
                        word.push(next);
                    }
                    _ => word.push('\\'),
                }
                in_word = true;
            }
            '\\' => match chars.next() {
                Some('_') if !double => {
                    if in_word {
                        words.push(std::mem::take(&mut word));
                        in_word = false;
                    }
                }
                Some('c') => break,
                Some(next) => {
                    word.push(match next {
                        '_' => ' ',
                        'f' => '\x0c',
                        'n' => '\n',
                        'r' => '\r',
                        't' => '\t',
                        'v' => '\x0b',
                        other => other,
                    });
                    in_word = true;
                }
                None => {
                    word.push('\\');
                    in_word = true;
                }
            },
            other => {
                word.push(other);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// Reserved words, which mean something else as the first word of a command.
pub(super) const RESERVED: &[&str] = &[
    "!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "case", "esac", "while",
    "until", "for", "select", "in", "function", "time", "coproc", "[[", "]]",
];

/// For `eval` (`words[0]`) whose arguments read back as the same words (each plain,
/// not a comment, the first not a reserved word), the index of the first of them: their
/// text joined is a simple command with exactly those words, so it needs no second
/// reading. None when the arguments must be read as shell text.
fn eval_of_words(words: &[String]) -> Option<usize> {
    let start = 1 + words[1..].iter().take_while(|w| *w == "--").count();
    let args = words.get(start..).filter(|args| !args.is_empty())?;
    let plain = args
        .iter()
        .all(|arg| !arg.is_empty() && !arg.starts_with('#') && arg.bytes().all(is_plain));
    (plain && !RESERVED.contains(&args[0].as_str())).then_some(start)
}

/// How a shell command runs its script.
pub(super) enum ShellRun {
    /// A `-c` string, with the positional parameters after it (`$0` first).
    String(String, Vec<String>),
    /// A script read from standard input.
    Stdin,
    /// A script read from a pipe it is given as a file: a process substitution
    /// (`bash <(curl x)`) or an open file (`/dev/fd/3`).
    Piped,
}

/// For a shell, how it gets its script (None for a script file or another program); for
/// `.` and `source`, the same when the file they read is standard input or a pipe; for
/// `eval`, its arguments joined (an `eval` of plain words is also peeled as a wrapper).
pub(super) fn shell_run(words: &[String]) -> Option<ShellRun> {
    let name = basename(words.first()?);
    if name == "eval" {
        let args: Vec<&str> = words
            .iter()
            .skip(1)
            .map(String::as_str)
            .skip_while(|w| *w == "--")
            .collect();
        return (!args.is_empty()).then(|| ShellRun::String(args.join(" "), Vec::new()));
    }
    if matches!(words[0].as_str(), "." | "source") {
        // The running shell reads the file as a script of its own: its standard input
        // (`. /dev/stdin <<< x`) or a pipe (`source <(curl x)`) just as a shell would.
        let script = words[1..].iter().find(|w| *w != "--")?;
        return if is_stdin(script) {
            Some(ShellRun::Stdin)
        } else if script == "<(...)" || is_open_file(script) {
            Some(ShellRun::Piped)
        } else {
            None
        };
    }
    if !SHELLS.contains(&name) {
        return None;
    }
    let mut has_c = false;
    let mut has_s = false;
    // `-n` (`-o noexec`) reads the script without running it, unless the shell is
    // interactive, where it is ignored.
    let mut noexec = false;
    let mut interactive = false;
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
            let on = word.starts_with('-');
            has_c |= on && flags.contains('c');
            has_s |= on && flags.contains('s');
            interactive |= on && flags.contains('i');
            if flags.contains('n') {
                noexec = on;
            }
            if flags.ends_with('o') || flags.ends_with('O') {
                if flags.ends_with('o') && words.get(index + 1).is_some_and(|o| o == "noexec") {
                    noexec = on;
                }
                index += 2;
            } else {
                index += 1;
            }
            continue;
        }
        break;
    }
    if noexec && !interactive && name != "fish" {
        // A syntax check (`bash -n <<< 'X'`, `sh -n -c 'X'`): nothing in it runs.
        return None;
    }
    if has_c {
        let script = words.get(index)?.clone();
        let mut args: Vec<String> = words.get(index + 1..).unwrap_or(&[]).to_vec();
        if args.is_empty() {
            args.push(name.to_owned());
        }
        return Some(ShellRun::String(script, args));
    }
    match words.get(index).filter(|_| !has_s) {
        None => Some(ShellRun::Stdin),
        Some(script) if is_stdin(script) => Some(ShellRun::Stdin),
        Some(script) if script == "<(...)" || is_open_file(script) => Some(ShellRun::Piped),
        Some(_) => None,
    }
}

/// Whether a shell reads a startup file that is a pipe or its standard input: an
/// interactive shell runs `--rcfile <(curl x)` (and `--init-file`) as `bash <(curl x)`
/// runs its script.
pub(super) fn startup_file_piped(words: &[String]) -> bool {
    if !words.first().is_some_and(|w| SHELLS.contains(&basename(w))) {
        return false;
    }
    words.iter().enumerate().any(|(index, word)| {
        let value = match word.split_once('=') {
            Some(("--rcfile" | "--init-file", value)) => Some(value),
            _ if matches!(word.as_str(), "--rcfile" | "--init-file") => {
                words.get(index + 1).map(String::as_str)
            }
            _ => None,
        };
        value.is_some_and(is_pipe)
    })
}

/// Whether a file a shell reads as a script is a pipe or its standard input
/// (`<(...)`, `/dev/stdin`, `/dev/fd/3`).
fn is_pipe(path: &str) -> bool {
    path == "<(...)" || is_stdin(path) || is_open_file(path)
}

/// Whether the options of `command` (the words between its name and the command) ask
/// only for a description of the command (`-v`, `-V`, also with `-p`).
fn describes_only(options: &[String]) -> bool {
    options
        .iter()
        .any(|o| o.starts_with('-') && !o.starts_with("--") && o.contains(['v', 'V']))
}

/// Whether a script file is the shell's own standard input (`/dev/stdin`, `/dev/fd/0`,
/// `/proc/self/fd/0`).
fn is_stdin(path: &str) -> bool {
    matches!(
        path_parts(path).as_slice(),
        ["dev", "stdin"] | ["dev", "fd", "0"] | ["proc", _, "fd", "0"]
    )
}

/// Whether a script file is a descriptor already open, as a process substitution is
/// handed on (`/dev/fd/63`, `/proc/self/fd/63`).
fn is_open_file(path: &str) -> bool {
    matches!(
        path_parts(path).as_slice(),
        ["dev", "fd", _] | ["proc", _, "fd", _]
    )
}

fn path_parts(path: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    for part in path.split('/').filter(|p| !p.is_empty() && *p != ".") {
        if part == ".." {
            // `/dev/../dev/stdin` is `/dev/stdin`.
            parts.pop();
        } else {
            parts.push(part);
        }
    }
    parts
}

/// The strings of shell code a builtin keeps to run later (`trap 'X' EXIT`,
/// `mapfile -C X`, `compgen -C X`), and the strings it will expand again as words (a subscript in
/// `printf -v 'a[$(X)]'`, `unset`, `test -v`, `[[ -v ]]`): `(run, expand)`.
pub(super) fn code_strings(words: &[String]) -> (Vec<String>, Vec<String>) {
    let mut run = Vec::new();
    let mut expand = Vec::new();
    let Some(first) = words.first() else {
        return (run, expand);
    };
    let args = &words[1..];
    match first.as_str() {
        "trap" => {
            let operands: Vec<&String> = args.iter().skip_while(|a| a.starts_with('-')).collect();
            if operands.len() >= 2 {
                run.push(operands[0].clone());
            }
        }
        // The value of an alias is read where the alias is used (see [`renamed`]):
        // defining one runs nothing.
        // `compgen -C X` runs X at once, `complete -C X` at each completion; the word
        // list of `-W` is expanded as words are.
        "compgen" | "complete" => {
            for (index, arg) in args.iter().enumerate() {
                if !arg.starts_with('-') || arg.starts_with("--") {
                    continue;
                }
                for (at, flag) in arg.bytes().enumerate().skip(1) {
                    if !b"ACFGPSWXo".contains(&flag) {
                        continue;
                    }
                    let attached = &arg[at + 1..];
                    let value = if attached.is_empty() {
                        args.get(index + 1).cloned()
                    } else {
                        Some(attached.to_owned())
                    };
                    match flag {
                        b'C' => run.extend(value),
                        b'W' => expand.extend(value.as_deref().and_then(assigned_code)),
                        _ => {}
                    }
                    break;
                }
            }
        }
        "mapfile" | "readarray" => {
            for (index, arg) in args.iter().enumerate() {
                if arg == "-C" {
                    run.extend(args.get(index + 1).cloned());
                } else if let Some(callback) = arg.strip_prefix("-C") {
                    run.push(callback.to_owned());
                }
            }
        }
        _ => {}
    }
    // Words a builtin takes as variable names, whose subscripts are expanded once more
    // (`printf -v 'a[$(X)]'`), and the arithmetic of `let`.
    let after = |flag: &str| -> Vec<&str> {
        args.windows(2)
            .filter(|pair| pair[0] == flag)
            .map(|pair| pair[1].as_str())
            .collect()
    };
    // An option's value may also be attached (`printf -va[$(X)] x`).
    let attached = |flag: &str| -> Vec<&str> {
        args.iter()
            .filter_map(|a| a.strip_prefix(flag).filter(|name| !name.is_empty()))
            .collect()
    };
    let names: Vec<&str> = match first.as_str() {
        "printf" => [after("-v"), attached("-v")].concat(),
        "test" | "[" | "[[" => after("-v"),
        "wait" => [after("-p"), attached("-p")].concat(),
        "unset" | "read" | "declare" | "typeset" | "local" | "export" | "readonly" | "let" => args
            .iter()
            .filter(|a| !a.starts_with('-'))
            .map(String::as_str)
            .collect(),
        _ => Vec::new(),
    };
    for name in names {
        let name = match first.as_str() {
            "let" => name,
            _ => name.split('=').next().unwrap_or(""),
        };
        let subscript = first == "let" || name.contains('[');
        if subscript && expands_again(name) {
            expand.push(name.to_owned());
        }
    }
    // Values expanded again as subscripts: a nameref's (`declare -n r='a[$(X)]'`), an
    // integer's arithmetic (`declare -i`), a compound assignment given as a string
    // (`declare -a 'a=([$(X)]=1)'`), and the arithmetic operands of `[[ ]]`.
    match first.as_str() {
        "declare" | "typeset" | "local" | "export" | "readonly" => {
            let options: String = args
                .iter()
                .filter(|a| a.starts_with(['-', '+']))
                .map(|a| &a[1..])
                .collect();
            for arg in args.iter().filter(|a| !a.starts_with(['-', '+'])) {
                if let Some((_, value)) = arg.split_once('=') {
                    let reread = options.contains(['n', 'i']) || value.starts_with('(');
                    // Any other value is read as an assignment's is (see `note_renames`).
                    if reread && value.contains('[') && expands_again(value) {
                        expand.push(value.to_owned());
                    }
                }
            }
        }
        "[[" => {
            for pair in args.windows(3) {
                if ["-eq", "-ne", "-lt", "-le", "-gt", "-ge"].contains(&pair[1].as_str()) {
                    for operand in [&pair[0], &pair[2]] {
                        if operand.contains('[') && expands_again(operand) {
                            expand.push(operand.clone());
                        }
                    }
                }
            }
        }
        _ => {}
    }
    // An assignment to an array element whose subscript is quoted, which the parser left
    // as the command's first word (`a['a[$(X)]']=1`).
    if let Some((target, _)) = first.split_once('=') {
        let target = target.strip_suffix('+').unwrap_or(target);
        let named = target
            .split_once('[')
            .is_some_and(|(name, _)| is_name(name.as_bytes()));
        if named && target.ends_with(']') && expands_again(target) {
            expand.push(target.to_owned());
        }
    }
    (run, expand)
}

/// Whether a string the shell expands a second time holds something that runs there: a
/// substitution or a `${ }`.
fn expands_again(text: &str) -> bool {
    text.contains("$(") || text.contains('`') || text.contains("${")
}

/// The assignments whose value the shell runs or expands later: prompts (`PS4` with
/// `set -x`) and the startup files of a shell (`BASH_ENV`, `ENV`) are expanded,
/// `PROMPT_COMMAND` is run. `(run, expand)` like [`code_strings`]. Any other value is
/// expanded when it holds a substitution ([`assigned_code`]).
fn code_in_assignment(word: &str) -> (Option<String>, Option<String>) {
    let Some((name, value)) = word.split_once('=') else {
        return (None, None);
    };
    let name = name.trim_end_matches('+');
    match name {
        "PS0" | "PS1" | "PS2" | "PS3" | "PS4" | "BASH_ENV" | "ENV" => {
            (None, Some(value.to_owned()))
        }
        "PROMPT_COMMAND" => (Some(value.to_owned()), None),
        _ => (None, assigned_code(value)),
    }
}

/// The value assigned to a variable, when it holds a substitution written in it (not one
/// the assignment itself ran, which was read where it stood), as text to read as if
/// it ran: `x='a[$(X)]'`.
///
/// Why every such value: bash evaluates a variable's value as arithmetic wherever the
/// variable is used as a number (`(( x ))`, `$((x))`, `let x`, `[[ $x -eq 0 ]]`,
/// `${a[x]}`, `${s:x}`, another variable holding its name), and arithmetic expands an
/// array subscript, `$( )` in it included, so `x='a[$(X)]'; (( x ))` runs X. Following
/// which variables reach arithmetic (through other variables, functions, the
/// environment of a child shell) is not possible from the text, and a substitution in a
/// literal value is rarely data: so it is checked as if it ran. What it cannot see: a
/// value built at run time (`x=$(printf ...)`, `read x`, `x+=` in parts, the elements of
/// `x=(...)`), or inherited.
pub(super) fn assigned_code(value: &str) -> Option<String> {
    // The splitter writes a substitution it already read as `$(...)`, `` `...` `` or
    // `$((...))`: those ran (or not) where they stood.
    let written = value
        .replace("$((...))", "")
        .replace("$(...)", "")
        .replace("`...`", "");
    expands_again(&written).then_some(written)
}

/// What an assignment (a command's leading `NAME=value`, or one of `declare`'s operands)
/// runs or changes: the code in its value is read, and an entry of bash's tables of
/// programs and aliases is noted for the rest of the text.
pub(super) fn assignment(cx: &mut Context, word: &str, depth: usize) {
    let (run, expand) = code_in_assignment(word);
    if let Some(script) = run {
        sub_parse(cx, script.as_bytes(), depth + 1);
    }
    if let Some(text) = expand {
        Parser::new(&[], depth).expand_as_double_quoted(cx, text.as_bytes());
    }
    if let Some(refusal) = startup_file_pipe(word) {
        cx.refuse(|| refusal);
    }
    let Some((target, value)) = word.split_once('=') else {
        return;
    };
    note_table_entry(cx, target, value);
}

/// Why an assignment cannot be checked when it names a pipe or standard input as a
/// shell's startup file (`BASH_ENV=/dev/stdin`, `ENV=<(curl x)`).
fn startup_file_pipe(word: &str) -> Option<String> {
    let (target, value) = word.split_once('=')?;
    (matches!(target, "BASH_ENV" | "ENV") && is_pipe(value)).then(|| {
        format!(
            "{target} names a pipe or standard input ('{}'): the startup script a shell \
             reads from it cannot be checked",
            truncated(value)
        )
    })
}

/// Notes an assignment to bash's table of programs (`BASH_CMDS[NAME]=PATH`, as
/// `hash -p PATH NAME`) or of aliases (`BASH_ALIASES[NAME]=TEXT`, as `alias`). Any
/// other change of them (the whole table, a name known at run time, `+=`) is refused:
/// which program a name runs would not be known.
fn note_table_entry(cx: &mut Context, target: &str, value: &str) {
    let (table, key) = match target.split_once('[') {
        Some((table, rest)) => (table, rest.strip_suffix(']')),
        None => (target.trim_end_matches('+'), None),
    };
    if !matches!(table, "BASH_CMDS" | "BASH_ALIASES") {
        return;
    }
    let key = key.filter(|k| is_name(k.as_bytes()) || is_plain_name(k));
    match key {
        Some(key) if !target.ends_with('+') => {
            let rename = if table == "BASH_CMDS" {
                Rename::Program(value.to_owned())
            } else {
                Rename::Alias(value.to_owned())
            };
            give_meaning(cx, key, rename);
        }
        _ => cx.refuse(|| {
            format!(
                "it changes bash's table of {} ('{}') in a way that is not followed, so \
                 which program a name runs is not known",
                if table == "BASH_CMDS" {
                    "programs"
                } else {
                    "aliases"
                },
                truncated(target)
            )
        }),
    }
}

/// Whether a command name is plain text (no expansion, quote or blank), as a key of
/// `BASH_CMDS` may be (`BASH_CMDS[ls.x]`).
fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(is_plain) && !name.contains(['$', '`', '[', ']'])
}

/// Notes what a command renames for the rest of the text: `hash -p PATH NAME...` makes
/// each NAME run PATH, `alias NAME=TEXT` makes NAME read TEXT; a builtin that assigns
/// those tables otherwise than by `NAME=value` (`read`, `printf -v`, `mapfile`) is
/// refused. The `NAME=value` operands of `declare` and its kin are read as assignments
/// ([`assignment`]), and so are the arguments of `printf -v NAME`, whose output is the
/// value.
pub(super) fn note_renames(cx: &mut Context, words: &[String], depth: usize) {
    let Some(first) = words.first() else { return };
    let args = &words[1..];
    match first.as_str() {
        "hash" => {
            let mut path = None;
            let mut index = 0;
            while let Some(arg) = args.get(index) {
                if arg == "--" {
                    index += 1;
                    break;
                }
                if !arg.starts_with('-') || arg.len() < 2 {
                    break;
                }
                index += 1;
                if let Some(at) = arg.find('p') {
                    let attached = &arg[at + 1..];
                    if attached.is_empty() {
                        path = args.get(index).cloned();
                        index += 1;
                    } else {
                        path = Some(attached.to_owned());
                    }
                }
            }
            if let Some(path) = path {
                for name in args.get(index..).unwrap_or(&[]) {
                    give_meaning(cx, name, Rename::Program(path.clone()));
                }
            }
        }
        "alias" => {
            for (name, value) in args.iter().filter_map(|a| a.split_once('=')) {
                give_meaning(cx, name, Rename::Alias(value.to_owned()));
            }
        }
        "declare" | "typeset" | "local" | "export" | "readonly" => {
            if first != "export"
                && args
                    .iter()
                    .any(|a| a.starts_with('-') && a != "--" && a.contains('n'))
            {
                cx.refuse(|| {
                    format!(
                        "`{first} -n` makes a name stand for another variable (a nameref), \
                         which is not followed"
                    )
                });
            }
            for arg in args.iter().filter(|a| !a.starts_with(['-', '+'])) {
                let name = arg.split_once('=').map_or(arg.as_str(), |(name, _)| name);
                if first != "export" && first != "readonly" && may_name_a_table(name) {
                    refuse_name_known_at_run_time(cx, first, arg);
                }
                if is_assignment(arg) || arg.split_once('=').is_some_and(|(t, _)| t.contains('[')) {
                    assignment(cx, arg, depth);
                }
            }
        }
        "printf" if args.iter().any(|a| a.starts_with("-v")) => {
            // Each argument, and what the format makes of them all (its escapes decoded,
            // the arguments put in): `'a[\x24(X)]'`, `'%s(X)]' 'a[$'` make `a[$(X)]`.
            let output = printf_output(args);
            for arg in args
                .iter()
                .filter(|a| !a.starts_with('-'))
                .chain(output.as_ref())
            {
                if let Some(text) = assigned_code(arg) {
                    Parser::new(&[], depth).expand_as_double_quoted(cx, text.as_bytes());
                }
            }
        }
        _ => {}
    }
    if let Some(name) = assigned_names(first, args)
        .into_iter()
        .find(|n| may_name_a_table(n))
    {
        refuse_name_known_at_run_time(cx, first, name);
    }
    match first.as_str() {
        "read" | "printf" | "mapfile" | "readarray" | "wait" => {
            if let Some(arg) = args
                .iter()
                .find(|a| a.contains("BASH_CMDS") || a.contains("BASH_ALIASES"))
            {
                cx.refuse(|| {
                    format!(
                        "`{first}` assigns bash's table of programs or aliases ('{}'), so \
                         which program a name runs is not known",
                        truncated(arg)
                    )
                });
            }
        }
        _ => {}
    }
}

/// The names of the variables `read`, `printf -v`, `mapfile` (`readarray`) and `wait -p`
/// assign, as written.
fn assigned_names<'a>(program: &str, args: &'a [String]) -> Vec<&'a String> {
    // Options that take a value, and the one whose value is a name.
    let (valued, naming, operands_are_names) = match program {
        "read" => ("dinNptu", 'a', true),
        "printf" => ("", 'v', false),
        "mapfile" | "readarray" => ("dnOsuCc", '\0', true),
        "wait" => ("", 'p', false),
        _ => ("", '\0', false),
    };
    let mut names = Vec::new();
    let mut index = 0;
    while let Some(arg) = args.get(index) {
        index += 1;
        if arg == "--" {
            break;
        }
        if !arg.starts_with('-') || arg.len() < 2 {
            index -= 1;
            break;
        }
        for (at, letter) in arg.char_indices().skip(1) {
            if letter != naming && !valued.contains(letter) {
                continue;
            }
            let value = if at + 1 < arg.len() {
                Some(&arg[at + 1..])
            } else {
                index += 1;
                args.get(index - 1).map(String::as_str)
            };
            if letter == naming {
                names.extend(value);
            }
            break;
        }
    }
    let operands = if operands_are_names {
        args.get(index..).unwrap_or(&[])
    } else {
        &[]
    };
    args.iter()
        .filter(|a| names.contains(&a.as_str()) || operands.contains(a))
        .collect()
}

/// Whether a variable's name as written (before any `[`) is known only at run time and
/// may be `BASH_CMDS` or `BASH_ALIASES`: what is written before its first expansion
/// starts one of them (`$x`, `BASH_${x}`, not `VAR_$x`).
fn may_name_a_table(name: &str) -> bool {
    let base = name.split('[').next().unwrap_or(name);
    base.find(['$', '`']).is_some_and(|at| {
        let known = &base[..at];
        "BASH_CMDS".starts_with(known) || "BASH_ALIASES".starts_with(known)
    })
}

/// Refuses a builtin assigning a variable whose name is known only at run time
/// (`declare "$x[t]=..."`, `printf -v "$x"`, `read "$x"`): it may be bash's table of
/// programs or aliases.
fn refuse_name_known_at_run_time(cx: &mut Context, program: &str, arg: &str) {
    cx.refuse(|| {
        format!(
            "`{program}` assigns a variable whose name is known only at run time ('{}'), \
             which may be bash's table of programs or aliases",
            truncated(arg)
        )
    });
}

/// Refuses `text` when it names bash's table of programs or aliases (`BASH_CMDS`,
/// `BASH_ALIASES`) other than at the start of a word followed by `[`, as an entry
/// assigned by name is written (`BASH_CMDS[t]=PATH`, `declare BASH_ALIASES[t]=TEXT`),
/// which is followed: a nameref to them, `${BASH_CMDS[t]:=PATH}` or their name kept in a
/// variable would change them unseen.
pub(super) fn check_table_names(cx: &mut Context, text: &[u8]) {
    if cx.refusal.is_some() {
        return;
    }
    let mut from = 0;
    while let Some(at) = text[from..].iter().position(|&b| b == b'B') {
        let at = from + at;
        from = at + 1;
        let rest = &text[at..];
        let Some(table) = ["BASH_CMDS", "BASH_ALIASES"]
            .into_iter()
            .find(|t| rest.starts_with(t.as_bytes()))
        else {
            continue;
        };
        let word_start = at == 0 || b" \t\n;&|(`'\"".contains(&text[at - 1]);
        if !(word_start && rest.get(table.len()) == Some(&b'[')) {
            cx.refuse(|| {
                format!(
                    "it names bash's table of {} ('{table}') otherwise than to assign an \
                     entry by name, so which program a name runs is not known",
                    if table == "BASH_CMDS" {
                        "programs"
                    } else {
                        "aliases"
                    }
                )
            });
            return;
        }
    }
}

/// What `printf -v NAME FORMAT ARGS...` assigns, roughly: the format with its escapes
/// decoded, each conversion (`%s`, `%b`, `%d` ...) replaced by the next argument (its
/// escapes decoded for `%b`), the format used again while arguments remain. None without
/// a format.
fn printf_output(args: &[String]) -> Option<String> {
    let mut index = 0;
    while let Some(arg) = args.get(index) {
        if arg == "--" {
            index += 1;
            break;
        }
        if !arg.starts_with('-') {
            break;
        }
        index += if arg == "-v" { 2 } else { 1 };
    }
    let format: Vec<char> = args.get(index)?.chars().collect();
    let mut rest = args.get(index + 1..).unwrap_or(&[]).iter();
    let mut out = String::new();
    loop {
        let mut used = false;
        let mut at = 0;
        while at < format.len() && out.len() <= MAX_PRINTF_OUTPUT {
            match format[at] {
                '\\' => at = decode_escape(&format, at + 1, false, &mut out),
                '%' if format.get(at + 1) == Some(&'%') => {
                    out.push('%');
                    at += 2;
                }
                '%' => {
                    at += 1;
                    while at < format.len() && !format[at].is_ascii_alphabetic() {
                        at += 1;
                    }
                    let arg = rest.next().map_or("", String::as_str);
                    used = true;
                    if format.get(at) == Some(&'b') {
                        let arg: Vec<char> = arg.chars().collect();
                        let mut from = 0;
                        while from < arg.len() {
                            if arg[from] == '\\' {
                                from = decode_escape(&arg, from + 1, true, &mut out);
                            } else {
                                out.push(arg[from]);
                                from += 1;
                            }
                        }
                    } else {
                        out.push_str(arg);
                    }
                    at += 1;
                }
                c => {
                    out.push(c);
                    at += 1;
                }
            }
        }
        if !used || rest.len() == 0 || out.len() > MAX_PRINTF_OUTPUT {
            return Some(out);
        }
    }
}

/// How much of `printf`'s output is worked out.
const MAX_PRINTF_OUTPUT: usize = 1 << 16;

/// Decodes the escape whose letter is at `at` (after a backslash) as `printf` does in its
/// format, or in a `%b` argument (`argument`, where `\0` leads up to three octal digits),
/// into `out`; returns where the text goes on.
fn decode_escape(text: &[char], at: usize, argument: bool, out: &mut String) -> usize {
    let Some(&letter) = text.get(at) else {
        out.push('\\');
        return at;
    };
    let number = |from: usize, radix: u32, most: usize| {
        let digits = text[from..]
            .iter()
            .take(most)
            .take_while(|c| c.is_digit(radix))
            .count();
        let value: String = text[from..from + digits].iter().collect();
        (u32::from_str_radix(&value, radix).ok(), from + digits)
    };
    let (code, next) = match letter {
        'x' => number(at + 1, 16, 2),
        'u' => number(at + 1, 16, 4),
        'U' => number(at + 1, 16, 8),
        '0' if argument => number(at + 1, 8, 3),
        '0'..='7' => number(at, 8, 3),
        'n' => (Some(10), at + 1),
        't' => (Some(9), at + 1),
        'r' => (Some(13), at + 1),
        'a' => (Some(7), at + 1),
        'b' => (Some(8), at + 1),
        'f' => (Some(12), at + 1),
        'v' => (Some(11), at + 1),
        'e' | 'E' => (Some(27), at + 1),
        '\\' | '\'' | '"' | '?' => (Some(u32::from(letter)), at + 1),
        _ => {
            out.push('\\');
            out.push(letter);
            return at + 1;
        }
    };
    match code.and_then(char::from_u32) {
        Some(c) => out.push(c),
        None => {
            out.push('\\');
            out.push(letter);
            return at + 1;
        }
    }
    next
}

/// Notes one more meaning of `name` (see `Context::renames`); past [`MAX_MEANINGS`] the
/// text is refused.
fn give_meaning(cx: &mut Context, name: &str, rename: Rename) {
    let meanings = cx.renames.entry(name.to_owned()).or_default();
    if meanings.contains(&rename) {
        return;
    }
    if meanings.len() >= MAX_MEANINGS {
        cx.refuse(|| {
            format!(
                "the name '{}' is given more than {MAX_MEANINGS} meanings (`alias`, \
                 `hash -p`), each to be read wherever it is used",
                truncated(name)
            )
        });
        return;
    }
    meanings.push(rename);
    cx.renames_generation = cx.new_generation();
}

/// Whether a command's name was renamed by the text (`hash -p /usr/bin/X t`,
/// `alias t='X -i'`): then the name, to read each program or text it stands for in its
/// place (see `Context::renames`).
pub(super) fn renamed<'w>(cx: &Context, words: &'w [String]) -> Option<&'w str> {
    let name = words.first()?;
    (!name.contains('/') && cx.renames.contains_key(name)).then_some(name.as_str())
}

/// Whether an alias's value, read before the words after it, leaves them the words they
/// were: it does not end in a blank (which makes bash expand the next word as an alias),
/// an operator, a backslash or a reserved word (after which the next word may be a
/// keyword).
pub(super) fn alias_ends_a_word(value: &str) -> bool {
    let last_word = value
        .rsplit(|c: char| c.is_ascii_whitespace())
        .next()
        .unwrap_or("");
    !value.is_empty()
        && !value.ends_with(|c: char| c.is_ascii_whitespace() || ";&|()<>\\".contains(c))
        && !RESERVED.contains(&last_word)
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
