//! Signal names and numbers as this platform's libc defines them: what a word written
//! to `kill` may name, and how a signal is named in `reason`. Linux and macOS number
//! most signals differently and each has a few of its own, so the table takes every
//! number from libc.

/// Every standard signal of this platform, by its name without `SIG`. A signal with
/// two names (`IO` and `POLL`, `ABRT` and `IOT`) is named by the first one.
pub const SIGNALS: &[(&str, i32)] = &[
    ("HUP", libc::SIGHUP),
    ("INT", libc::SIGINT),
    ("QUIT", libc::SIGQUIT),
    ("ILL", libc::SIGILL),
    ("TRAP", libc::SIGTRAP),
    ("ABRT", libc::SIGABRT),
    ("IOT", libc::SIGIOT),
    ("BUS", libc::SIGBUS),
    ("FPE", libc::SIGFPE),
    ("KILL", libc::SIGKILL),
    ("USR1", libc::SIGUSR1),
    ("SEGV", libc::SIGSEGV),
    ("USR2", libc::SIGUSR2),
    ("PIPE", libc::SIGPIPE),
    ("ALRM", libc::SIGALRM),
    ("TERM", libc::SIGTERM),
    #[cfg(target_os = "linux")]
    ("STKFLT", libc::SIGSTKFLT),
    ("CHLD", libc::SIGCHLD),
    ("CONT", libc::SIGCONT),
    ("STOP", libc::SIGSTOP),
    ("TSTP", libc::SIGTSTP),
    ("TTIN", libc::SIGTTIN),
    ("TTOU", libc::SIGTTOU),
    ("URG", libc::SIGURG),
    ("XCPU", libc::SIGXCPU),
    ("XFSZ", libc::SIGXFSZ),
    ("VTALRM", libc::SIGVTALRM),
    ("PROF", libc::SIGPROF),
    ("WINCH", libc::SIGWINCH),
    ("IO", libc::SIGIO),
    #[cfg(target_os = "linux")]
    ("POLL", libc::SIGPOLL),
    #[cfg(target_os = "linux")]
    ("PWR", libc::SIGPWR),
    ("SYS", libc::SIGSYS),
    #[cfg(target_os = "macos")]
    ("EMT", libc::SIGEMT),
    #[cfg(target_os = "macos")]
    ("INFO", libc::SIGINFO),
];

/// The real-time signals, first and last (Linux; the C library keeps a few below the
/// first for itself, which can still be sent by number).
#[cfg(target_os = "linux")]
fn realtime() -> (i32, i32) {
    (libc::SIGRTMIN(), libc::SIGRTMAX())
}

/// The highest signal number this platform has: the last real-time one.
#[cfg(target_os = "linux")]
pub fn highest() -> i32 {
    realtime().1
}

/// The highest signal number this platform has.
#[cfg(not(target_os = "linux"))]
pub fn highest() -> i32 {
    SIGNALS.iter().map(|&(_, n)| n).max().unwrap_or(31)
}

/// The signal a word names: a name in any case, with or without `SIG` (`int`,
/// `SigInt`, `SIGINT`), `RTMIN`, `RTMIN+3`, `RTMAX-1` on Linux, or a number from 1 to
/// [`highest`], each also as `kill(1)` spells it after one dash (`-9`, `-INT`). None
/// for anything else; the word is taken as it is, untrimmed.
pub fn named(word: &str) -> Option<i32> {
    let word = match word.strip_prefix('-') {
        Some(rest) if !rest.starts_with('-') => rest,
        _ => word,
    };
    if !word.is_empty() && word.bytes().all(|b| b.is_ascii_digit()) {
        return word
            .parse::<i32>()
            .ok()
            .filter(|n| (1..=highest()).contains(n));
    }
    let upper = word.to_ascii_uppercase();
    let name = upper.strip_prefix("SIG").unwrap_or(&upper);
    SIGNALS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, n)| n)
        .or_else(|| realtime_named(name))
}

/// `RTMIN`, `RTMIN+N`, `RTMAX`, `RTMAX-N`, within the real-time range.
#[cfg(target_os = "linux")]
fn realtime_named(name: &str) -> Option<i32> {
    let (first, last) = realtime();
    let offset = |rest: &str, sign: char| -> Option<i32> {
        if rest.is_empty() {
            return Some(0);
        }
        let digits = rest.strip_prefix(sign)?;
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse().ok()
    };
    let signal = if let Some(rest) = name.strip_prefix("RTMIN") {
        first.checked_add(offset(rest, '+')?)?
    } else if let Some(rest) = name.strip_prefix("RTMAX") {
        last.checked_sub(offset(rest, '-')?)?
    } else {
        return None;
    };
    (first..=last).contains(&signal).then_some(signal)
}

#[cfg(not(target_os = "linux"))]
fn realtime_named(_name: &str) -> Option<i32> {
    None
}

/// `SIGINT` for 2, `SIGRTMIN+2` for a real-time signal, `signal N` for a number that
/// has no name.
pub fn name(signal: i32) -> String {
    if let Some((name, _)) = SIGNALS.iter().find(|&&(_, n)| n == signal) {
        return format!("SIG{name}");
    }
    #[cfg(target_os = "linux")]
    {
        let (first, last) = realtime();
        if (first..=last).contains(&signal) {
            return match signal - first {
                0 => "SIGRTMIN".to_string(),
                offset => format!("SIGRTMIN+{offset}"),
            };
        }
    }
    format!("signal {signal}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_in_any_case_with_or_without_sig_and_numbers_name_signals() {
        for (word, signal) in [
            ("INT", libc::SIGINT),
            ("int", libc::SIGINT),
            ("Int", libc::SIGINT),
            ("sigint", libc::SIGINT),
            ("SigInt", libc::SIGINT),
            ("SIGINT", libc::SIGINT),
            ("usr1", libc::SIGUSR1),
            ("SigQuit", libc::SIGQUIT),
            ("WINCH", libc::SIGWINCH),
            ("alrm", libc::SIGALRM),
            ("SIGALRM", libc::SIGALRM),
            ("iot", libc::SIGABRT),
            ("io", libc::SIGIO),
            ("sys", libc::SIGSYS),
            ("2", libc::SIGINT),
            ("14", libc::SIGALRM),
            ("28", 28),
            ("1", libc::SIGHUP),
            ("-9", libc::SIGKILL),
            ("-int", libc::SIGINT),
            ("-SIGTERM", libc::SIGTERM),
        ] {
            assert_eq!(named(word), Some(signal), "{word}");
        }
        // Every name of the table, every number up to the highest.
        for &(name, signal) in SIGNALS {
            assert_eq!(named(name), Some(signal), "{name}");
            assert_eq!(named(&format!("sig{}", name.to_lowercase())), Some(signal));
        }
        for number in 1..=highest() {
            assert_eq!(named(&number.to_string()), Some(number));
        }
    }

    #[test]
    fn other_words_and_numbers_name_none() {
        let beyond = (highest() + 1).to_string();
        for word in [
            "",
            "0",
            "00",
            "-",
            "--9",
            "--INT",
            "-0",
            "- 9",
            "+2",
            &beyond,
            "99999999999",
            "SIG",
            "SIGFOO",
            "frob",
            "INTT",
            "2x",
            "IN T",
            " INT",
            "INT ",
            "SIGSIGINT",
            "RTMIN+",
            "RTMAX+1",
            "RTMIN-1",
            "RTMIN+999",
            "ｉｎｔ",
        ] {
            assert_eq!(named(word), None, "{word:?}");
        }
    }

    #[test]
    fn signals_are_named_by_their_first_name() {
        assert_eq!(name(libc::SIGINT), "SIGINT");
        assert_eq!(name(libc::SIGABRT), "SIGABRT");
        assert_eq!(name(libc::SIGWINCH), "SIGWINCH");
        assert_eq!(name(0), "signal 0");
        for &(_, signal) in SIGNALS {
            assert_eq!(named(&name(signal)), Some(signal));
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn real_time_signals_are_named_and_numbered() {
        let (first, last) = realtime();
        assert!(first > 31 && last > first, "{first}..{last}");
        assert_eq!(highest(), last);
        assert_eq!(named("RTMIN"), Some(first));
        assert_eq!(named("sigrtmin+2"), Some(first + 2));
        assert_eq!(named("RTMAX"), Some(last));
        assert_eq!(named("SIGRTMAX-1"), Some(last - 1));
        assert_eq!(named(&first.to_string()), Some(first));
        assert_eq!(name(first), "SIGRTMIN");
        assert_eq!(name(first + 3), "SIGRTMIN+3");
        for signal in first..=last {
            assert_eq!(named(&name(signal)), Some(signal));
        }
    }
}
