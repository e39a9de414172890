//! Globs compiled from a command's text (a command name that is a pattern, `/usr/bin/sud?`)
//! or from a rule, made so that no text can make the compiler panic or run long.
//!
//! `globset`'s single-glob matcher panics when the regex it builds passes the regex
//! engine's size limit (`/usr/bin/` then `?*` 70,000 times does), and compiling a pattern
//! of hundreds of kilobytes takes long even where it succeeds. So a pattern is compiled
//! only up to [`MAX_GLOB`] bytes, and through a one-glob `GlobSet`, whose build reports a
//! regex that is too big as an error instead of panicking. A caller turns
//! [`GlobError`] into a refusal with a sentence (for text) or a load error (for rules).

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// The longest pattern compiled. A file name is at most 255 bytes, and a path at most
/// 4096: a command name pattern longer than this is never written by hand, and one this
/// long compiles in well under a millisecond whatever it holds.
pub(crate) const MAX_GLOB: usize = 1024;

/// Why a pattern was not compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum GlobError {
    /// Longer than [`MAX_GLOB`] bytes; the length.
    TooLong(usize),
    /// The glob syntax is bad (an unclosed `[`), or its regex passes the size limit.
    Unreadable(String),
}

impl std::fmt::Display for GlobError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GlobError::TooLong(len) => write!(
                f,
                "the pattern is {len} bytes long, longer than the {MAX_GLOB} bytes a pattern \
                 is read to"
            ),
            GlobError::Unreadable(why) => write!(f, "the pattern cannot be read: {why}"),
        }
    }
}

/// How a pattern is read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GlobOptions {
    /// `*` and `?` stop at `/`, as in a name bash expands.
    pub literal_separator: bool,
    /// Letters match in either case (`shopt -s nocaseglob`).
    pub case_insensitive: bool,
    /// `\` escapes the character after it.
    pub backslash_escape: bool,
}

/// How a rule's pattern is read: `*` crosses `/`, `\` escapes.
pub(crate) const RULE: GlobOptions = GlobOptions {
    literal_separator: false,
    case_insensitive: false,
    backslash_escape: true,
};

/// A compiled pattern.
#[derive(Debug, Clone)]
pub(crate) struct Glob(GlobSet);

impl Glob {
    /// Compiles `pattern`, bounded as the module says.
    pub(crate) fn new(pattern: &str, options: GlobOptions) -> Result<Glob, GlobError> {
        if pattern.len() > MAX_GLOB {
            return Err(GlobError::TooLong(pattern.len()));
        }
        let glob = GlobBuilder::new(pattern)
            .literal_separator(options.literal_separator)
            .case_insensitive(options.case_insensitive)
            .backslash_escape(options.backslash_escape)
            .build()
            .map_err(|err| GlobError::Unreadable(err.to_string()))?;
        let set = GlobSetBuilder::new()
            .add(glob)
            .build()
            .map_err(|err| GlobError::Unreadable(err.to_string()))?;
        Ok(Glob(set))
    }

    pub(crate) fn is_match(&self, text: &str) -> bool {
        self.0.is_match(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAME: GlobOptions = GlobOptions {
        literal_separator: true,
        case_insensitive: true,
        backslash_escape: true,
    };

    #[test]
    fn a_pattern_past_the_bound_is_an_error_not_a_panic() {
        let long = "?*".repeat(70_000);
        assert_eq!(
            Glob::new(&long, NAME).err(),
            Some(GlobError::TooLong(140_000))
        );
        let message = GlobError::TooLong(140_000).to_string();
        assert!(message.contains("140000 bytes"), "{message}");
    }

    #[test]
    fn the_worst_patterns_at_the_bound_compile_and_match() {
        for unit in ["?*", "[!a]*", "*?", "[[:alpha:]]", "\\*", "é*"] {
            let pattern: String = unit.repeat(MAX_GLOB / unit.len());
            assert!(pattern.len() <= MAX_GLOB);
            match Glob::new(&pattern, NAME) {
                Ok(glob) => {
                    let _ = glob.is_match("sudo");
                }
                Err(GlobError::Unreadable(_)) => {}
                Err(other) => panic!("{unit}: {other}"),
            }
        }
        let glob = Glob::new("sud?", NAME).expect("compiles");
        assert!(glob.is_match("SUDO"));
        assert!(!glob.is_match("su/o"));
    }

    #[test]
    fn an_unclosed_bracket_is_unreadable() {
        assert!(matches!(
            Glob::new("[", NAME),
            Err(GlobError::Unreadable(_))
        ));
    }
}
