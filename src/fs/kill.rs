//! What a write to `cmd/<name>/kill` asks for, line by line, and what a handle on it
//! has done so far.
//!
//! Each line is a signal's name in any case, with or without `SIG`, or its number,
//! either after one dash as `kill(1)` takes them (`-9`, `-INT`, `-stop` is SIGSTOP)
//! or after its option (`-s INT`, `-n 9`, `--signal INT`), surrounding whitespace
//! ignored; the signals go out in the order written. `stop`
//! (in any case but all upper case, which is SIGSTOP) and any word that names no
//! signal stop the command: SIGTERM, then SIGKILL after the grace. Blank lines say
//! nothing. One write names at most [`MAX_SIGNALS`] signals before its first stop, or
//! is refused whole. A handle that said nothing by its close (`: > kill`,
//! `echo > kill`) stops the command then, so a writer that sends its lines one write
//! at a time (bash's `printf` does) is read the same as one that sends them at once.

use crate::supervisor::signals;

/// The reason of a command stopped by `stop`, or by a close that said nothing.
pub(super) const KILLED_BY_A_WRITE: &str = "killed: a write to its kill file stopped it";

/// The most signals one write to `kill` may name. Each is a pass over the command's
/// processes on the thread that serves the write; a write naming more is refused
/// whole (EINVAL, and the log says why), so nothing of it is sent.
pub(super) const MAX_SIGNALS: usize = 16;

/// Longest part of a word that names no signal shown in `reason` and the log.
const WORD_SHOWN: usize = 40;

/// What one line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Asked {
    /// Send this signal to the whole command.
    Signal(i32),
    /// Stop the command: `stop`.
    Stop,
    /// Stop the command: this word (as shown, quoted and cut short) names no signal.
    Unknown(String),
}

impl Asked {
    /// The sentence of `reason` for a stop this asked for.
    pub(super) fn reason(&self) -> String {
        match self {
            Asked::Unknown(word) => {
                format!("killed: a write to its kill file ({word} is no signal name) stopped it")
            }
            Asked::Signal(_) | Asked::Stop => KILLED_BY_A_WRITE.to_string(),
        }
    }
}

/// What a handle on `kill` has done: a close of one that said nothing stops the
/// command, and nothing written after a stop is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum Said {
    #[default]
    Nothing,
    /// A write of it was refused (too many signals): its close stops nothing.
    Refused,
    Signals,
    Stopped,
}

impl Said {
    /// Takes in what a write asks for and returns what is to be done of it: all of
    /// it up to and including its first stop, nothing once the handle has stopped the
    /// command. A write naming more than [`MAX_SIGNALS`] signals before that is
    /// refused whole, with the sentence that says why; lines past the first of too
    /// many are not read.
    pub(super) fn heed(
        &mut self,
        asked: impl IntoIterator<Item = Asked>,
    ) -> Result<Vec<Asked>, String> {
        if *self == Said::Stopped {
            return Ok(Vec::new());
        }
        let mut heeded = Vec::new();
        let mut signals = 0;
        for asked in asked {
            let stop = !matches!(asked, Asked::Signal(_));
            signals += usize::from(!stop);
            if signals > MAX_SIGNALS {
                if *self == Said::Nothing {
                    *self = Said::Refused;
                }
                return Err(format!(
                    "a write names at most {MAX_SIGNALS} signals, one a line; this one named \
                     more, and none of them was sent"
                ));
            }
            heeded.push(asked);
            if stop {
                *self = Said::Stopped;
                return Ok(heeded);
            }
        }
        if !heeded.is_empty() {
            *self = Said::Signals;
        }
        Ok(heeded)
    }
}

/// What each line of a write asks for, in order, read as they are taken; blank
/// lines ask nothing.
pub(super) fn asked(data: &[u8]) -> impl Iterator<Item = Asked> + '_ {
    data.split(|&b| b == b'\n')
        .map(|line| String::from_utf8_lossy(line))
        .filter_map(|line| {
            let word = line.trim();
            (!word.is_empty()).then(|| one(word))
        })
}

fn one(line: &str) -> Asked {
    if line.eq_ignore_ascii_case("stop") && line != "STOP" {
        return Asked::Stop;
    }
    match spelled(line) {
        Some(signal) => Asked::Signal(signal),
        None => Asked::Unknown(shown(line)),
    }
}

/// The signal a line names: one word, or `kill(1)`'s option before one (`-s INT`,
/// `-s 9`, `-n 9`, `--signal INT`), words apart by any whitespace. The word after an
/// option takes no dash of its own: `-s -9` names nothing.
fn spelled(line: &str) -> Option<i32> {
    let mut words = line.split_whitespace();
    match (words.next()?, words.next(), words.next()) {
        (word, None, _) => signals::named(word),
        ("-s" | "-n" | "--signal", Some(word), None) if !word.starts_with('-') => {
            signals::named(word)
        }
        _ => None,
    }
}

/// `'frob'`: the word quoted, control characters escaped, cut short when long.
fn shown(word: &str) -> String {
    let mut chars = word.chars();
    let head: String = chars.by_ref().take(WORD_SHOWN).collect();
    let more = if chars.next().is_some() { "..." } else { "" };
    format!("'{}{more}'", head.escape_debug())
}

#[cfg(test)]
mod tests {
    use super::*;
    use Asked::{Signal, Stop, Unknown};

    fn unknown(word: &str) -> Asked {
        Unknown(format!("'{word}'"))
    }

    #[test]
    fn each_line_is_a_signal_a_stop_or_a_word_that_names_none() {
        let table: Vec<(&[u8], Vec<Asked>)> = vec![
            (b"INT\n", vec![Signal(libc::SIGINT)]),
            (b"int\n", vec![Signal(libc::SIGINT)]),
            (b"Int", vec![Signal(libc::SIGINT)]),
            (b"sigint\n", vec![Signal(libc::SIGINT)]),
            (b"SigInt\r\n", vec![Signal(libc::SIGINT)]),
            (b"  SIGINT \t\n", vec![Signal(libc::SIGINT)]),
            (b"usr1\n", vec![Signal(libc::SIGUSR1)]),
            (b"SigQuit\n", vec![Signal(libc::SIGQUIT)]),
            (b"WINCH\n", vec![Signal(libc::SIGWINCH)]),
            (b"ALRM\n", vec![Signal(libc::SIGALRM)]),
            (b"SIGALRM\n", vec![Signal(libc::SIGALRM)]),
            (b"14\n", vec![Signal(14)]),
            (b"28\n", vec![Signal(28)]),
            (b"2\n", vec![Signal(libc::SIGINT)]),
            (b"kill\n", vec![Signal(libc::SIGKILL)]),
            (b"term\n", vec![Signal(libc::SIGTERM)]),
            (b"cont\n", vec![Signal(libc::SIGCONT)]),
            // STOP in upper case, or with SIG, pauses; `stop` is the word that stops.
            (b"STOP\n", vec![Signal(libc::SIGSTOP)]),
            (b"SIGSTOP\n", vec![Signal(libc::SIGSTOP)]),
            (b"sigstop\n", vec![Signal(libc::SIGSTOP)]),
            // As kill(1) spells them.
            (b"-9\n", vec![Signal(libc::SIGKILL)]),
            (b"-INT\n", vec![Signal(libc::SIGINT)]),
            (b"-stop\n", vec![Signal(libc::SIGSTOP)]),
            (b"-SIGINT\n", vec![Signal(libc::SIGINT)]),
            (b"-sigint\n", vec![Signal(libc::SIGINT)]),
            (b"-s INT\n", vec![Signal(libc::SIGINT)]),
            (b"-s int\n", vec![Signal(libc::SIGINT)]),
            (b"-s SIGINT\n", vec![Signal(libc::SIGINT)]),
            (b"-s 9\n", vec![Signal(libc::SIGKILL)]),
            (b"  -s \t HUP \r\n", vec![Signal(libc::SIGHUP)]),
            (b"-n 9\n", vec![Signal(libc::SIGKILL)]),
            (b"-n INT\n", vec![Signal(libc::SIGINT)]),
            (b"--signal INT\n", vec![Signal(libc::SIGINT)]),
            (b"--signal 15\n", vec![Signal(libc::SIGTERM)]),
            // After an option, `stop` is SIGSTOP's name, as in `kill -s stop`.
            (b"-s stop\n", vec![Signal(libc::SIGSTOP)]),
            (
                b"-s INT\n-n 1\n",
                vec![Signal(libc::SIGINT), Signal(libc::SIGHUP)],
            ),
            (b"stop\n", vec![Stop]),
            (b"Stop\n", vec![Stop]),
            (b" stop\r\n", vec![Stop]),
            // In order, blank lines and whitespace-only lines saying nothing.
            (
                b"INT\n\nHUP\n",
                vec![Signal(libc::SIGINT), Signal(libc::SIGHUP)],
            ),
            (
                b"\r\n  \nINT\n\t\nKILL\n\n",
                vec![Signal(libc::SIGINT), Signal(libc::SIGKILL)],
            ),
            (b"", vec![]),
            (b"\n", vec![]),
            (b"\n\r\n \n", vec![]),
            // Words that name no signal, shown as written.
            (b"frob\n", vec![unknown("frob")]),
            (b"SIGFOO\n", vec![unknown("SIGFOO")]),
            (b"0\n", vec![unknown("0")]),
            (b"--9\n", vec![unknown("--9")]),
            (b"999\n", vec![unknown("999")]),
            (b"INT TERM\n", vec![unknown("INT TERM")]),
            // kill(1)'s options with no signal, or more than one word after them.
            (b"-s\n", vec![unknown("-s")]),
            (b"-n\n", vec![unknown("-n")]),
            (b"--signal\n", vec![unknown("--signal")]),
            (b"-s frob\n", vec![unknown("-s frob")]),
            (b"-s 0\n", vec![unknown("-s 0")]),
            (b"-s INT TERM\n", vec![unknown("-s INT TERM")]),
            (b"-s INT 1234\n", vec![unknown("-s INT 1234")]),
            (b"-s -9\n", vec![unknown("-s -9")]),
            (b"-s --signal\n", vec![unknown("-s --signal")]),
            (b"-S INT\n", vec![unknown("-S INT")]),
            (b"-x INT\n", vec![unknown("-x INT")]),
            (b"--signal=INT\n", vec![unknown("--signal=INT")]),
            (b"INT -s\n", vec![unknown("INT -s")]),
            (b"-s stop stop\n", vec![unknown("-s stop stop")]),
            (
                b"INT\nfrob\nHUP\n",
                vec![Signal(libc::SIGINT), unknown("frob"), Signal(libc::SIGHUP)],
            ),
            (b"\xff\x01\n", vec![unknown("\u{fffd}\\u{1}")]),
        ];
        for (data, expected) in table {
            let got: Vec<Asked> = asked(data).collect();
            assert_eq!(got, expected, "{:?}", String::from_utf8_lossy(data));
        }
        let long = "x".repeat(500);
        assert_eq!(
            asked(long.as_bytes()).collect::<Vec<_>>(),
            vec![Unknown(format!("'{}...'", "x".repeat(WORD_SHOWN)))]
        );
    }

    #[test]
    fn a_word_that_names_no_signal_is_named_in_the_reason() {
        assert_eq!(
            unknown("frob").reason(),
            "killed: a write to its kill file ('frob' is no signal name) stopped it"
        );
        assert_eq!(Stop.reason(), KILLED_BY_A_WRITE);
    }

    #[test]
    fn a_handle_heeds_everything_up_to_its_first_stop_and_nothing_after() {
        let mut said = Said::default();
        assert_eq!(said.heed(vec![]), Ok(vec![]));
        assert_eq!(said, Said::Nothing, "blank lines say nothing");
        assert_eq!(said.heed(vec![Signal(2)]), Ok(vec![Signal(2)]));
        assert_eq!(said, Said::Signals);
        assert_eq!(said.heed(vec![]), Ok(vec![]));
        assert_eq!(
            said,
            Said::Signals,
            "a blank write after a signal is no stop"
        );
        assert_eq!(
            said.heed(vec![Signal(1), unknown("x"), Signal(9), Stop]),
            Ok(vec![Signal(1), unknown("x")])
        );
        assert_eq!(said, Said::Stopped);
        assert_eq!(said.heed(vec![Signal(2)]), Ok(vec![]));
        assert_eq!(said.heed(vec![Stop]), Ok(vec![]));
        let mut said = Said::default();
        assert_eq!(said.heed(vec![Stop]), Ok(vec![Stop]));
        assert_eq!(said, Said::Stopped);
    }

    #[test]
    fn a_write_of_too_many_signals_is_refused_whole_and_read_no_further() {
        let mut said = Said::default();
        let most = vec![Signal(2); MAX_SIGNALS];
        assert!(said.heed(vec![Signal(2); MAX_SIGNALS + 1]).is_err());
        assert_eq!(said, Said::Refused, "its close stops nothing");
        assert_eq!(said.heed(most.clone()), Ok(most.clone()));
        assert_eq!(said, Said::Signals);
        assert!(said.heed(vec![Signal(2); MAX_SIGNALS + 1]).is_err());
        assert_eq!(said, Said::Signals);
        // A stop within the limit ends the write; what follows it is not counted.
        let mut stopping = most.clone();
        stopping.push(Stop);
        stopping.extend(vec![Signal(2); 100]);
        assert_eq!(said.heed(stopping), Ok([most, vec![Stop]].concat()));
        // Lines past the first of too many are never read.
        let mut said = Said::default();
        let endless = std::iter::repeat_with(|| Signal(15));
        assert!(said.heed(endless).is_err());
    }
}
