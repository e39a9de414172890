//! Commands that read shell text from their standard input.
//!
//! Text written to a command's stdin runs without passing the deny list, unless the
//! program reading it is a shell: then the whole text it has been given so far is a script,
//! and the driver checks it like a command before each write is delivered. Which program
//! reads stdin is decided at run time, so this errs towards "a shell": any simple command
//! of the text whose program (wrappers such as `env`, `exec`, `busybox` peeled) is a shell
//! and is not just handed a `-c` string counts, wherever it stands in a pipeline.

use crate::policy::splitter::{split, SHELLS};
use crate::policy::{Policy, Verdict};

/// Whether `text` runs a shell that could read commands from its standard input.
pub fn runs_a_shell(text: &str) -> bool {
    let split = split(text);
    // Text the splitter could not read in full may hold a shell past where it stopped.
    split.refusal.is_some()
        || split.commands.iter().any(|command| {
            !command.transparent
                && command.innermost.iter().any(|spelling| {
                    let program = spelling.split(' ').next().unwrap_or("");
                    let program = program.rsplit('/').next().unwrap_or(program);
                    SHELLS.contains(&program)
                })
        })
}

/// Decides whether a shell may be given `script`: everything written to it so far plus
/// the write at hand. Blank text runs nothing and is allowed.
pub fn check_shell_input(policy: &Policy, script: &[u8]) -> Verdict {
    if script.iter().all(u8::is_ascii_whitespace) {
        return Verdict::Allow;
    }
    policy.check(script)
}

/// Why a shell on a terminal is refused while rules are in force.
pub const SHELL_ON_TERMINAL_REASON: &str =
    "refused: a shell on a terminal cannot be checked against the deny list (line editing, \
     history and completion change what runs); run it with '#terminalfs stdin' instead, \
     where everything written to it is checked";

#[cfg(test)]
mod tests {
    use super::*;

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
        ] {
            assert!(runs_a_shell(text), "{text}");
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
        ] {
            assert!(!runs_a_shell(text), "{text}");
        }
    }
}
