//! How a simple command changes the directory the commands after it run in: `cd` with an
//! operand known as written moves it, and the commands that may move it some other way
//! make it unknown (see the module documentation of the splitter).

use super::Word;

/// What one simple command does to the directory of the shell running it.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Change {
    /// `cd` to this operand (as written: `/etc`, `..`, `~/src`).
    To(String),
    /// Something the text does not say: `cd $x`, `cd -`, `pushd`, `eval`, `$cmd`.
    Unknown,
}

/// The commands that run in the shell itself and may change its directory.
const CHANGERS: &[&[u8]] = &[b"cd", b"pushd", b"popd", b"eval", b"source", b"."];

/// What the command made of `words` (its assignments first) does to the directory; None
/// when it leaves it alone.
pub(super) fn directory_change(words: &[Word]) -> Option<Change> {
    let words = &words[words.iter().take_while(|w| w.assignment).count()..];
    let first = words.first()?;
    if !known_name(first) {
        // `$cmd`, `{cd,/}`, `c?`: whichever command runs may be a `cd`.
        return Some(Change::Unknown);
    }
    match first.text.as_slice() {
        b"cd" => Some(cd(&words[1..])),
        b"builtin" | b"command" => {
            let rest = &words[1..];
            match rest.first() {
                Some(next) if known_name(next) && next.text == b"cd" => Some(cd(&rest[1..])),
                _ if rest
                    .iter()
                    .any(|w| !known_name(w) || CHANGERS.contains(&w.text.as_slice())) =>
                {
                    Some(Change::Unknown)
                }
                _ => None,
            }
        }
        name if CHANGERS.contains(&name) => Some(Change::Unknown),
        _ => None,
    }
}

/// Whether a word standing as a command's name is the name as written.
fn known_name(word: &Word) -> bool {
    !(word.dynamic || word.glob || word.brace || word.alternative.is_some())
}

/// The change of `cd` with these arguments: home without one, the operand when it is
/// known as written, else unknown (`cd -`, `cd -P x`, `cd a b`, `cd $x`).
fn cd(args: &[Word]) -> Change {
    let args = match args.first() {
        Some(first) if first.text == b"--" => &args[1..],
        _ => args,
    };
    match args {
        [] => Change::To("~".to_owned()),
        [operand] => target(operand).map_or(Change::Unknown, Change::To),
        _ => Change::Unknown,
    }
}

/// The directory a `cd` operand names, when the text says: a plain path (`/etc`, `..`,
/// `src`), `~` or `~/...` unquoted, or `$HOME` (`${HOME}`) alone or before a plain path.
/// None for anything else: a value known only at run time, a pattern, `-` and options,
/// `~user`, a quoted `~`, and a path holding blanks.
fn target(word: &Word) -> Option<String> {
    if word.glob || word.brace || word.alternative.is_some() || word.text.is_empty() {
        return None;
    }
    let text = std::str::from_utf8(&word.text).ok()?;
    if text.starts_with('-') || text.contains(char::is_whitespace) {
        return None;
    }
    if word.dynamic {
        let rest = text
            .strip_prefix("${HOME}")
            .or_else(|| text.strip_prefix("$HOME"))?;
        let plain = (rest.is_empty() || rest.starts_with('/')) && !rest.contains(['$', '`']);
        return plain.then(|| format!("~{rest}"));
    }
    if text.starts_with('~') {
        let home = !word.quoted && (text == "~" || text.starts_with("~/"));
        return home.then(|| text.to_owned());
    }
    Some(text.to_owned())
}
