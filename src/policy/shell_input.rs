//! Commands that read shell text from their standard input.
//!
//! Text written to a command's stdin runs without passing the deny list, unless the
//! program reading it is a shell: then the whole text it has been given so far is a script,
//! and the driver checks it like a command before each write is delivered. Which program
//! reads stdin is decided at run time, so this errs towards "a shell": any simple command
//! of the text whose program (wrappers such as `env`, `exec`, `busybox` peeled) is a shell
//! and is not just handed a `-c` string counts, wherever it stands in a pipeline; so do
//! `source` and `.` of the input (`/dev/stdin`, `/dev/fd/0`, a process substitution), and
//! a program that starts a shell when given no command (`su`, `unshare -r`, `script`, `ssh
//! host`), a terminal multiplexer whatever it is given (`tmux`, `screen`: a key opens a
//! shell in a new window), a
//! shell run by `xargs` or `parallel` on what they read (`xargs -I{} sh -c {}`), and
//! a program that is only known when it runs: a name held in a variable or built by a
//! substitution (`$SHELL`, `$(which bash)`), a pattern that could name a shell, or the
//! running shell itself (`/proc/self/exe`).
//!
//! Interpreters are not shells here, however easily they start one: `python3 -i`,
//! `expect` and `tclsh` read their own language, and what is typed into them is as
//! unchecked as `python3 -c` in a command.

use crate::policy::splitter::{Split, SHELLS};
use crate::policy::{Policy, Verdict};

/// Why `split` may run a shell that reads commands from its standard input, or None.
/// The sentence names the command.
pub fn shell_reading_input(split: &Split) -> Option<String> {
    // Text the splitter could not read in full may hold a shell past where it stopped.
    if let Some(construct) = &split.refusal {
        return Some(format!("the text cannot be read in full ({construct})"));
    }
    split.commands.iter().find_map(|command| {
        let spelling = command.innermost.first().map_or("", String::as_str);
        let mut words = spelling.split(' ');
        let program = words.next().unwrap_or("");
        let base = program.rsplit('/').next().unwrap_or(program);
        // `xargs` and `parallel` build commands from what they read: a shell they run,
        // even with `-c`, runs that text (`xargs -I{} sh -c {}`).
        let builder = command.forms.iter().find(|form| {
            let first = form.split(' ').next().unwrap_or("");
            matches!(first.rsplit('/').next(), Some("xargs" | "parallel"))
        });
        if let Some(form) = builder.filter(|_| SHELLS.contains(&base) || base == "parallel") {
            return Some(format!(
                "'{form}' runs what it reads from its input with a shell"
            ));
        }
        if command.transparent {
            return None;
        }
        if SHELLS.contains(&base) {
            return Some(format!("'{program}' is a shell"));
        }
        // A multiplexer running a command (`screen -S work top`) still opens a shell at
        // a keystroke.
        let multiplexer = std::iter::once(spelling)
            .chain(command.forms.iter().map(String::as_str))
            .find(|form| {
                let first = form.split(' ').next().unwrap_or("");
                MULTIPLEXERS.contains(&first.rsplit('/').next().unwrap_or(first))
            });
        if let Some(spelling) = multiplexer {
            return Some(format!(
                "'{spelling}' is a terminal multiplexer, which opens a shell in a new \
                 window at a keystroke"
            ));
        }
        if starts_a_shell(base, spelling) {
            return Some(format!(
                "'{spelling}' starts a shell, as it is given no command"
            ));
        }
        if logs_in_remotely(base, spelling) {
            return Some(format!(
                "'{spelling}' starts a login shell, which may be on this machine, as it is \
                 given no remote command"
            ));
        }
        if command.dynamic_name {
            return Some(format!(
                "the program '{program}' is known only when it runs (a variable or a \
                     substitution names it), so it may be a shell"
            ));
        }
        if let Some(glob) = command.name_globs.iter().find(|glob| names_a_shell(glob)) {
            return Some(format!(
                "the program name '{}' is a pattern that may name a shell",
                super::shortened(glob)
            ));
        }
        if is_running_program(program) {
            return Some(format!("'{program}' runs the shell that runs the command"));
        }
        if matches!(base, "source" | ".") {
            if let Some(file) = words.find(|word| may_be_input(word)) {
                return Some(format!(
                    "'{base} {file}' may run what the command reads as shell text"
                ));
            }
        }
        None
    })
}

/// Whether a command given a pipe or a heredoc feeds it to a shell as its script, by a
/// route other than being a shell itself: `bash -c bash`, `sh -c 'exec sh'`,
/// `eval "$(cat)"` (the commands its `-c` string or `eval` runs, which read the same
/// input), `xargs sh -c`, `script`. `commands` is the command, then the commands its
/// strings run. A terminal multiplexer, a remote login and a command whose own program
/// is named at run time are left out here: piping text to them is ordinary (`| tmux load-buffer -`,
/// `| ssh host cat`, `| $PAGER`).
pub(crate) fn feeds_a_shell(commands: &[crate::policy::SimpleCommand]) -> bool {
    let Some((first, run)) = commands.split_first() else {
        return false;
    };
    let spelling = first.innermost.first().map_or("", String::as_str);
    let program = spelling.split(' ').next().unwrap_or("");
    let base = program.rsplit('/').next().unwrap_or(program);
    // The command itself: a shell built by `xargs` or `parallel` on what they read, or a
    // program that starts a shell when given no command (`script`). A shell itself
    // (`| bash`, `. /dev/stdin`) is judged where it is read: spelled `bash -s`, or its
    // heredoc read as its script.
    let built = first.forms.iter().any(|form| {
        let word = form.split(' ').next().unwrap_or("");
        matches!(word.rsplit('/').next(), Some("xargs" | "parallel"))
    });
    // A shell given a script file of its own (`xargs -n1 bash check.sh`) runs that file
    // with what it reads as arguments.
    let own_script = spelling
        .split(' ')
        .skip(1)
        .take_while(|word| !(word.starts_with('-') && word.contains('c')))
        .any(|word| !word.starts_with('-'));
    // `parallel` given no command runs each line it reads as a command line.
    let parallel_alone = base == "parallel"
        && spelling
            .split(' ')
            .skip(1)
            .all(|word| word.starts_with('-') || word.chars().all(|c| c.is_ascii_digit()));
    if (built && SHELLS.contains(&base) && !own_script)
        || starts_a_shell(base, spelling)
        || parallel_alone
    {
        return true;
    }
    // The commands its `-c` string or `eval` runs read the same input. A program named by
    // a substitution there (`eval "$(cat)"`) is the input's own text; one named by a
    // variable (`eval $PAGER`) or an unreadable pattern (`[`) is not taken as a shell.
    let kept: Vec<crate::policy::SimpleCommand> = run
        .iter()
        .filter(|command| {
            let spelling = command.innermost.first().map_or("", String::as_str);
            let program = spelling.split(' ').next().unwrap_or("");
            let base = program.rsplit('/').next().unwrap_or(program);
            !(MULTIPLEXERS.contains(&base) || logs_in_remotely(base, spelling))
        })
        .map(|command| {
            let spelling = command.forms.first().map_or("", String::as_str);
            let name = spelling.split(' ').next().unwrap_or("");
            crate::policy::SimpleCommand {
                name_globs: Vec::new(),
                dynamic_name: command.dynamic_name && name.contains(['(', '`']),
                ..command.clone()
            }
        })
        .collect();
    let split = Split {
        commands: kept,
        ..Split::default()
    };
    shell_reading_input(&split).is_some()
}

/// Programs that start a shell when given no command to run (`su`, `unshare -r`,
/// `chroot /`, `script`): a wrapper left with nothing to run is its own innermost layer.
const SHELL_STARTERS: &[&str] = &[
    "su", "runuser", "sudo", "doas", "run0", "pkexec", "unshare", "chroot", "nsenter", "sg",
    "newgrp", "login", "script", "firejail",
];

/// Terminal multiplexers and session holders: whatever they are given to run, a key
/// (`C-b c` in tmux, `C-a c` in screen) opens a new window with a shell, and attaching
/// (`tmux a`, `dtach -a`, `abduco -a`) reaches a session that may hold one.
const MULTIPLEXERS: &[&str] = &[
    "tmux",
    "tmate",
    "screen",
    "byobu",
    "byobu-tmux",
    "byobu-screen",
    "zellij",
    "dtach",
    "abduco",
    "dvtm",
    "mtm",
];

/// Whether `ssh` (or `slogin`) is given no remote command, so it starts a login shell
/// where it connects, which may be this machine (`localhost`, an alias, this host's
/// name); `mosh` and `rlogin` always do. Options that make `ssh` start no session (`-N`,
/// `-W`, `-s`, `-G`, `-V`, `-Q`, `-O`) leave it out; options after the destination count,
/// as `ssh` reads them there too.
fn logs_in_remotely(base: &str, spelling: &str) -> bool {
    match base {
        "mosh" | "rlogin" => return true,
        "ssh" | "slogin" => {}
        _ => return false,
    }
    /// Short options of `ssh` that take a value, attached or as the next word.
    const VALUED: &[u8] = b"BbcDEeFIiJLlmOoPpQRSWw";
    let mut words = spelling.split(' ').skip(1);
    let mut destination = false;
    while let Some(word) = words.next() {
        if word == "--" {
            // A word after the destination is a remote command.
            return words.nth(usize::from(!destination)).is_none();
        }
        let Some(cluster) = word.strip_prefix('-').filter(|c| !c.is_empty()) else {
            if destination {
                return false;
            }
            destination = true;
            continue;
        };
        for (at, option) in cluster.bytes().enumerate() {
            if b"NWsGVQO".contains(&option) {
                return false;
            }
            if VALUED.contains(&option) {
                if at + 1 == cluster.len() {
                    words.next();
                }
                break;
            }
        }
    }
    destination
}

/// Whether the innermost layer `spelling` of a command, whose program's basename is
/// `base`, starts a shell: a program of [`SHELL_STARTERS`] without the `-c` of those that
/// take their command so, or `machinectl shell`.
fn starts_a_shell(base: &str, spelling: &str) -> bool {
    let mut words = spelling.split(' ').skip(1);
    if base == "machinectl" {
        return words.any(|word| word == "shell");
    }
    let takes_c = matches!(base, "su" | "runuser" | "sg" | "script");
    SHELL_STARTERS.contains(&base)
        && !(takes_c
            && words.any(|word| {
                word.starts_with("--command")
                    || (word.starts_with('-') && !word.starts_with("--") && word.contains('c'))
            }))
}

/// Whether a program name that is a pattern (`/bin/ba?h`) could name a shell.
fn names_a_shell(glob: &str) -> bool {
    let base = glob.rsplit('/').next().unwrap_or(glob);
    let options = super::glob::GlobOptions {
        literal_separator: true,
        case_insensitive: false,
        backslash_escape: true,
    };
    // One that cannot be compiled (too long, or unreadable) may name one.
    super::glob::Glob::new(base, options).map_or(true, |matcher| {
        SHELLS.iter().any(|shell| matcher.is_match(shell))
    })
}

/// Whether `path` is a process's own program (`/proc/self/exe`, `/proc/$$/exe`) or an
/// open file run as one (`/dev/fd/3`): for a command, that is whatever the shell running it
/// opened or is.
fn is_running_program(path: &str) -> bool {
    let parts: Vec<&str> = path
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    matches!(parts.as_slice(), ["proc", _, "exe"])
        || matches!(parts.as_slice(), ["proc", _, "fd", _] | ["dev", "fd", _])
}

/// Whether a file given to `source` may be the command's input: a device or an open
/// file (`/dev/stdin`, `/dev/fd/0`, `/proc/self/fd/0`, `/dev/tty`), a process
/// substitution, or a name known only when it runs.
fn may_be_input(word: &str) -> bool {
    let parts: Vec<&str> = word
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    word.contains(['$', '`', '<', '>', '*', '?', '['])
        || matches!(parts.first(), Some(&"dev"))
        || matches!(parts.as_slice(), ["proc", _, "fd", ..])
}

/// Decides whether a shell may be given `script`: everything written to it so far plus
/// the write at hand. Blank text runs nothing and is allowed.
pub fn check_shell_input(policy: &Policy, script: &[u8]) -> Verdict {
    if script.iter().all(u8::is_ascii_whitespace) {
        return Verdict::Allow;
    }
    policy.check(script)
}

/// Why a command on a terminal is refused while rules are in force; `why` says which of
/// its programs may be a shell (see [`shell_reading_input`]).
pub fn shell_on_terminal_reason(why: &str) -> String {
    format!(
        "refused: {why}, and a shell on a terminal cannot be checked against the deny list \
         (line editing, history and completion change what runs); run it with \
         '#terminalfs stdin' instead, where everything written to it is checked"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::splitter::split;

    fn runs_a_shell(text: &str) -> bool {
        shell_reading_input(&split(text)).is_some()
    }

    #[test]
    fn shells_are_found() {
        for text in [
            "bash",
            "sh",
            "/bin/dash -s",
            "zsh -i",
            "ksh",
            "fish",
            "busybox sh",
            "exec bash",
            "env FOO=1 bash --norc",
            "cat | bash",
            "sh -c 'bash -i'",
            "bash script.sh",
            "bash /dev/stdin",
            "$0",
            "f() { bash; }",
        ] {
            assert!(runs_a_shell(text), "{text}");
        }
    }

    /// Shells that read their input without being named: `source` of the input, a
    /// program only known when it runs, the running shell itself. Each is named in the
    /// sentence that says why.
    #[test]
    fn unnamed_shells_are_found_and_named() {
        for (text, named) in [
            ("source /dev/stdin", "source /dev/stdin"),
            (". /dev/stdin", ". /dev/stdin"),
            ("source /dev/fd/0", "source /dev/fd/0"),
            ("source /proc/self/fd/0", "source /proc/self/fd/0"),
            ("builtin source //dev/./stdin", "source //dev/./stdin"),
            ("source /dev/tty", "source /dev/tty"),
            ("source <(cat)", "source <(...)"),
            ("read -r f; . \"$f\"", ". $f"),
            ("$SHELL", "'$SHELL' is known only when it runs"),
            ("\"$BASH\" -i", "'bash' is a shell"),
            ("${X}", "'${X}'"),
            ("exec $SHELL", "'$SHELL'"),
            ("$(which bash)", "'$(...)'"),
            ("`echo sh`", "known only when it runs"),
            ("read l; $l", "'$l'"),
            ("eval \"$(cat)\"", "known only when it runs"),
            ("/proc/self/exe", "'/proc/self/exe' runs the shell"),
            ("/proc/$$/exe -i", "'/proc/$$/exe'"),
            ("exec 3</bin/sh; /dev/fd/3", "'/dev/fd/3'"),
            ("/bin/ba?h", "'/bin/ba?h' is a pattern"),
            ("printf '%s\\n' 'a(' | sh", "'sh' is a shell"),
            ("su", "'su' starts a shell"),
            ("su - bob", "'su - bob' starts a shell"),
            ("sudo -s", "'sudo -s'"),
            ("unshare -r", "'unshare -r'"),
            ("chroot /", "'chroot /'"),
            ("nsenter -t 1 -m", "'nsenter -t 1 -m'"),
            ("script -q /dev/null", "'script -q /dev/null'"),
            ("newgrp users", "'newgrp users'"),
            ("machinectl shell", "'machinectl shell'"),
            ("tmux", "'tmux' is a terminal multiplexer"),
            ("exec tmux -L x -f /dev/null", "'tmux -L x -f /dev/null'"),
            ("tmux new-session vim", "'tmux new-session vim'"),
            ("tmux attach", "'tmux attach'"),
            ("screen", "'screen' is a terminal multiplexer"),
            ("screen -S work top", "'screen -S work top'"),
            ("/usr/bin/byobu", "'/usr/bin/byobu' is a terminal"),
            ("zellij", "'zellij'"),
            ("dtach -A /tmp/s top", "'dtach -A /tmp/s top'"),
            ("abduco -c s", "'abduco -c s'"),
            ("env TERM=xterm tmate", "'tmate'"),
            ("ssh localhost", "'ssh localhost' starts a login shell"),
            (
                "ssh -p 2222 -i key -t bob@host",
                "'ssh -p 2222 -i key -t bob@host'",
            ),
            ("ssh host -l bob", "'ssh host -l bob'"),
            (
                "ssh -oBatchMode=yes -- host",
                "'ssh -oBatchMode=yes -- host'",
            ),
            ("mosh host", "'mosh host'"),
            ("rlogin host", "'rlogin host'"),
            (
                "xargs -I{} sh -c {}",
                "'xargs -I{} sh -c {}' runs what it reads",
            ),
            ("xargs -I% bash -c '%'", "'xargs -I% bash -c %'"),
            ("parallel -j2", "'parallel -j2' runs what it reads"),
        ] {
            let why = shell_reading_input(&split(text)).unwrap_or_else(|| panic!("{text}"));
            assert!(why.contains(named), "{text}: {why}");
        }
    }

    /// Feeds `writes` one by one as a shell's input; returns which were accepted.
    fn feed(policy: &Policy, writes: &[&str]) -> Vec<bool> {
        let mut given = Vec::new();
        writes
            .iter()
            .map(|write| {
                let mut script = given.clone();
                script.extend_from_slice(write.as_bytes());
                let accepted = check_shell_input(policy, &script).is_allowed();
                if accepted {
                    given = script;
                }
                accepted
            })
            .collect()
    }

    #[test]
    fn the_script_so_far_is_checked_as_one() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("settings.json");
        std::fs::write(&path, crate::policy::default_settings_json()).expect("write settings");
        let policy = Policy::load(&path, false).expect("default settings load");
        assert_eq!(feed(&policy, &["\n", "  \n", "echo hi\n"]), [true; 3]);
        assert_eq!(
            feed(
                &policy,
                &["for i in 1 2\n", "do\n", "  echo $i\n", "done\n"]
            ),
            [true; 4]
        );
        assert_eq!(
            feed(
                &policy,
                &["cat <<EOF\n", "sudo is only text here\n", "EOF\n"]
            ),
            [true; 3]
        );
        // A quote opened on one line and closed on the next.
        assert_eq!(
            feed(&policy, &["echo 'a\n", "b'; sudo ls\n", "echo ok\n"]),
            [true, false, true]
        );
        // A word split across writes; a denied word is refused even before its line ends,
        // as closing stdin would run it.
        assert_eq!(feed(&policy, &["sud", "o ls\n"]), [true, false]);
        assert_eq!(feed(&policy, &["su"]), [false]);
        assert_eq!(feed(&policy, &["sudo ls\n", "ls\n"]), [false, true]);
        // A shell drops a NUL byte from its input: `su\0do` would run `sudo`.
        assert_eq!(feed(&policy, &["echo hi\n", "su\0do ls\n"]), [true, false]);
    }

    #[test]
    fn other_programs_are_not() {
        for text in [
            "python3 -i",
            "cat",
            "sh -c 'cat'",
            "bash -c \"read answer; echo $answer\"",
            "read answer; echo \"$answer\"",
            "vi notes.txt",
            "echo bash",
            "source ./venv/bin/activate && python3 -i",
            ". ~/.profile; cat",
            "/usr/bin/ca? notes.txt",
            "cat /proc/self/exe > /dev/null",
            "su -c 'cat' bob",
            "runuser -u bob -- cat",
            "script -qc cat /dev/null",
            "unshare -r cat",
            "chroot / cat",
            "machinectl list",
            "ssh host uptime",
            "ssh -p 2222 host 'cat /etc/os-release'",
            "ssh -N -L 8080:localhost:80 host",
            "ssh -W host:22 jump",
            "ssh -s host sftp",
            "ssh -V",
            "ssh -G host",
            "ssh -- host ls",
            "ssh-keygen -t ed25519",
            "scp a host:b",
            "expect -c 'spawn ls; expect eof'",
            "xargs -n1 gzip",
            "find . -name '*.o' | xargs rm -f",
        ] {
            assert!(!runs_a_shell(text), "{text}");
        }
    }
}
