//! Key names, as tmux's `send-keys` spells them, turned into the bytes an xterm sends.
//!
//! A write to `keys` is a list of words separated by blanks: a key name (`Enter`, `Tab`,
//! `Escape`, `BSpace`, `Up`, `F5`, `PageDown`, …, matched without regard to case), a
//! name with modifiers (`C-c`, `M-x`, `C-M-a`, `S-Up`), a single character as itself, or
//! quoted literal text (`'two words'`, `"say \"hi\""`), which is sent byte for byte. A word
//! that is none of these makes the whole write fail and nothing of it is sent: the list is
//! encoded completely before a byte leaves.
//!
//! Cursor keys follow the terminal's cursor-key mode (DECCKM), as a real terminal's do:
//! `ESC [ A` normally, `ESC O A` once the program has asked for application mode.

use std::fmt;

/// The longest text one write to `keys` may hold.
pub const MAX_KEYS_TEXT: usize = 64 * 1024;

/// The terminal modes that change what a key sends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyModes {
    /// DECCKM: cursor keys, Home and End send `ESC O x` instead of `ESC [ x`.
    pub application_cursor: bool,
}

/// Why a list of keys cannot be sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeysError {
    /// A word that is not a key name, a single character or quoted text.
    UnknownKey(String),
    /// A modifier that the key cannot carry (`C-F1`'s control is fine, `C-é` is not).
    BadModifier(String),
    /// A quote opened and never closed.
    UnclosedQuote,
    /// More than [`MAX_KEYS_TEXT`] bytes.
    TooLong(usize),
    /// Not UTF-8 text.
    NotText,
}

impl fmt::Display for KeysError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeysError::UnknownKey(word) => write!(
                f,
                "unknown key name '{}' (names: Enter, Tab, Escape, BSpace, Space, Up, \
                 Down, Left, Right, Home, End, PageUp, PageDown, IC, DC, F1-F12, C-x, M-x, \
                 one character, or 'quoted text'); nothing was sent",
                crate::log::capped(word)
            ),
            KeysError::BadModifier(word) => write!(
                f,
                "the key '{word}' cannot take that modifier; nothing was sent"
            ),
            KeysError::UnclosedQuote => {
                write!(f, "a quote is opened and not closed; nothing was sent")
            }
            KeysError::TooLong(len) => write!(
                f,
                "a write to keys holds at most {MAX_KEYS_TEXT} bytes, this one {len}; \
                 write raw bytes to stdin instead; nothing was sent"
            ),
            KeysError::NotText => write!(f, "keys takes UTF-8 text; nothing was sent"),
        }
    }
}

/// Turns a whole write to `keys` into the bytes to send, or refuses all of it.
pub fn encode(text: &[u8], modes: KeyModes) -> Result<Vec<u8>, KeysError> {
    if text.len() > MAX_KEYS_TEXT {
        return Err(KeysError::TooLong(text.len()));
    }
    let text = std::str::from_utf8(text).map_err(|_| KeysError::NotText)?;
    let mut out = Vec::new();
    for word in words(text)? {
        match word {
            Word::Literal(literal) => out.extend_from_slice(literal.as_bytes()),
            Word::Key(name) => encode_key(name, modes, &mut out)?,
        }
    }
    Ok(out)
}

enum Word<'a> {
    Key(&'a str),
    Literal(String),
}

/// Splits on blanks; a word starting with a quote runs to the matching quote.
fn words(text: &str) -> Result<Vec<Word<'_>>, KeysError> {
    let mut words = Vec::new();
    let mut rest = text;
    loop {
        rest = rest.trim_start();
        let Some(first) = rest.chars().next() else {
            return Ok(words);
        };
        // A lone quote character is a key like any other character.
        let after_first = &rest[first.len_utf8()..];
        let lone = after_first.chars().next().is_none_or(char::is_whitespace);
        if (first == '\'' || first == '"') && !lone {
            let (literal, after) = quoted(after_first, first)?;
            words.push(Word::Literal(literal));
            rest = after;
        } else {
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            words.push(Word::Key(&rest[..end]));
            rest = &rest[end..];
        }
    }
}

/// The text up to the closing `quote`, and what follows it. Inside double quotes a
/// backslash makes the next character literal; single quotes take everything as is.
fn quoted(text: &str, quote: char) -> Result<(String, &str), KeysError> {
    let mut literal = String::new();
    let mut chars = text.char_indices();
    while let Some((index, c)) = chars.next() {
        if c == quote {
            return Ok((literal, &text[index + c.len_utf8()..]));
        }
        if c == '\\' && quote == '"' {
            match chars.next() {
                Some((_, next)) => literal.push(next),
                None => break,
            }
        } else {
            literal.push(c);
        }
    }
    Err(KeysError::UnclosedQuote)
}

#[derive(Debug, Clone, Copy, Default)]
struct Modifiers {
    shift: bool,
    meta: bool,
    control: bool,
}

impl Modifiers {
    fn any(self) -> bool {
        self.shift || self.meta || self.control
    }

    /// xterm's modifier parameter: 1 + shift + 2·alt + 4·control.
    fn xterm_parameter(self) -> u8 {
        1 + u8::from(self.shift) + 2 * u8::from(self.meta) + 4 * u8::from(self.control)
    }
}

/// How a named key is sent.
enum Named {
    /// Fixed bytes; with Meta, prefixed by ESC.
    Plain(&'static [u8]),
    /// `ESC [ <final>` or, in application mode, `ESC O <final>`; modified: `ESC [ 1 ; m <final>`.
    Cursor(u8),
    /// `ESC O <final>` (F1–F4); modified: `ESC [ 1 ; m <final>`.
    Function(u8),
    /// `ESC [ <n> ~`; modified: `ESC [ <n> ; m ~`.
    Tilde(u8),
}

fn named(name: &str) -> Option<Named> {
    let lower = name.to_ascii_lowercase();
    Some(match lower.as_str() {
        "enter" => Named::Plain(b"\r"),
        "tab" => Named::Plain(b"\t"),
        "btab" => Named::Plain(b"\x1b[Z"),
        "escape" | "esc" => Named::Plain(b"\x1b"),
        "bspace" => Named::Plain(b"\x7f"),
        "space" => Named::Plain(b" "),
        "up" => Named::Cursor(b'A'),
        "down" => Named::Cursor(b'B'),
        "right" => Named::Cursor(b'C'),
        "left" => Named::Cursor(b'D'),
        "home" => Named::Cursor(b'H'),
        "end" => Named::Cursor(b'F'),
        "ic" | "insert" => Named::Tilde(2),
        "dc" | "delete" => Named::Tilde(3),
        "ppage" | "pageup" | "pgup" => Named::Tilde(5),
        "npage" | "pagedown" | "pgdn" => Named::Tilde(6),
        "f1" => Named::Function(b'P'),
        "f2" => Named::Function(b'Q'),
        "f3" => Named::Function(b'R'),
        "f4" => Named::Function(b'S'),
        "f5" => Named::Tilde(15),
        "f6" => Named::Tilde(17),
        "f7" => Named::Tilde(18),
        "f8" => Named::Tilde(19),
        "f9" => Named::Tilde(20),
        "f10" => Named::Tilde(21),
        "f11" => Named::Tilde(23),
        "f12" => Named::Tilde(24),
        _ => return None,
    })
}

fn encode_key(word: &str, modes: KeyModes, out: &mut Vec<u8>) -> Result<(), KeysError> {
    let unknown = || KeysError::UnknownKey(word.to_string());
    // A word of one character is that character, even `C` or `-`.
    let mut rest = word;
    let mut modifiers = Modifiers::default();
    while rest.chars().count() > 2 || (rest.len() == 2 && rest.ends_with('-')) {
        let Some(prefix) = rest.get(..2) else {
            break;
        };
        match prefix {
            "C-" | "c-" => modifiers.control = true,
            "M-" | "m-" => modifiers.meta = true,
            "S-" | "s-" => modifiers.shift = true,
            _ => break,
        }
        rest = &rest[2..];
    }
    if rest.is_empty() {
        return Err(unknown());
    }
    let mut chars = rest.chars();
    let single = match (chars.next(), chars.next()) {
        (Some(c), None) => Some(c),
        _ => None,
    };
    if let Some(c) = single {
        let mut bytes = [0u8; 4];
        let mut encoded: Vec<u8> = c.encode_utf8(&mut bytes).as_bytes().to_vec();
        if modifiers.shift {
            if !c.is_alphabetic() {
                return Err(KeysError::BadModifier(word.to_string()));
            }
            encoded = c.to_uppercase().collect::<String>().into_bytes();
        }
        if modifiers.control {
            let byte = control_byte(c).ok_or_else(|| KeysError::BadModifier(word.to_string()))?;
            encoded = vec![byte];
        }
        if modifiers.meta {
            out.push(0x1b);
        }
        out.extend_from_slice(&encoded);
        return Ok(());
    }
    let key = named(rest).ok_or_else(unknown)?;
    let parameter = modifiers.xterm_parameter();
    match &key {
        Named::Plain(bytes) => {
            if modifiers.control || modifiers.shift {
                // C-Space is the NUL a terminal sends; other modified plain keys have
                // no standard sequence.
                if rest.eq_ignore_ascii_case("space") && modifiers.control && !modifiers.shift {
                    if modifiers.meta {
                        out.push(0x1b);
                    }
                    out.push(0);
                    return Ok(());
                }
                if rest.eq_ignore_ascii_case("tab") && modifiers.shift && !modifiers.control {
                    if modifiers.meta {
                        out.push(0x1b);
                    }
                    out.extend_from_slice(b"\x1b[Z");
                    return Ok(());
                }
                return Err(KeysError::BadModifier(word.to_string()));
            }
            if modifiers.meta {
                out.push(0x1b);
            }
            out.extend_from_slice(bytes);
        }
        Named::Cursor(last) | Named::Function(last) => {
            let function = matches!(key, Named::Function(_));
            if modifiers.any() {
                out.extend_from_slice(format!("\x1b[1;{parameter}").as_bytes());
            } else if function || modes.application_cursor {
                out.extend_from_slice(b"\x1bO");
            } else {
                out.extend_from_slice(b"\x1b[");
            }
            out.push(*last);
        }
        Named::Tilde(number) => {
            if modifiers.any() {
                out.extend_from_slice(format!("\x1b[{number};{parameter}~").as_bytes());
            } else {
                out.extend_from_slice(format!("\x1b[{number}~").as_bytes());
            }
        }
    }
    Ok(())
}

/// The byte Control with `c` sends: `C-a`…`C-z` are 1…26, `C-@` and `C-Space` 0,
/// `C-[` ESC, `C-\` 28, `C-]` 29, `C-^` 30, `C-_` 31, `C-?` DEL.
fn control_byte(c: char) -> Option<u8> {
    match c {
        'a'..='z' => Some(c as u8 - b'a' + 1),
        'A'..='Z' => Some(c as u8 - b'A' + 1),
        '@' | ' ' | '2' => Some(0),
        '[' | '3' => Some(0x1b),
        '\\' | '4' => Some(0x1c),
        ']' | '5' => Some(0x1d),
        '^' | '6' => Some(0x1e),
        '_' | '7' | '/' => Some(0x1f),
        '?' | '8' => Some(0x7f),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(text: &str) -> Result<Vec<u8>, KeysError> {
        encode(text.as_bytes(), KeyModes::default())
    }

    #[test]
    fn named_keys() {
        for (name, bytes) in [
            ("Enter", &b"\r"[..]),
            ("Tab", b"\t"),
            ("BTab", b"\x1b[Z"),
            ("Escape", b"\x1b"),
            ("BSpace", b"\x7f"),
            ("Space", b" "),
            ("Up", b"\x1b[A"),
            ("Down", b"\x1b[B"),
            ("Right", b"\x1b[C"),
            ("Left", b"\x1b[D"),
            ("Home", b"\x1b[H"),
            ("End", b"\x1b[F"),
            ("PageUp", b"\x1b[5~"),
            ("PPage", b"\x1b[5~"),
            ("PageDown", b"\x1b[6~"),
            ("NPage", b"\x1b[6~"),
            ("IC", b"\x1b[2~"),
            ("DC", b"\x1b[3~"),
            ("F1", b"\x1bOP"),
            ("F4", b"\x1bOS"),
            ("F5", b"\x1b[15~"),
            ("F10", b"\x1b[21~"),
            ("F11", b"\x1b[23~"),
            ("F12", b"\x1b[24~"),
            ("enter", b"\r"),
            ("ESCAPE", b"\x1b"),
        ] {
            assert_eq!(keys(name).as_deref(), Ok(bytes), "{name}");
        }
    }

    #[test]
    fn application_cursor_mode_changes_cursor_keys_only() {
        let app = KeyModes {
            application_cursor: true,
        };
        assert_eq!(encode(b"Up Home", app).unwrap(), b"\x1bOA\x1bOH");
        assert_eq!(encode(b"PageUp Enter", app).unwrap(), b"\x1b[5~\r");
    }

    #[test]
    fn control_and_meta() {
        for (name, bytes) in [
            ("C-c", &b"\x03"[..]),
            ("C-d", b"\x04"),
            ("C-a", b"\x01"),
            ("C-z", b"\x1a"),
            ("C-Z", b"\x1a"),
            ("C-[", b"\x1b"),
            ("C-@", b"\x00"),
            ("C-Space", b"\x00"),
            ("C-?", b"\x7f"),
            ("M-x", b"\x1bx"),
            ("M-Enter", b"\x1b\r"),
            ("C-M-a", b"\x1b\x01"),
            ("M-C-a", b"\x1b\x01"),
            ("C-Up", b"\x1b[1;5A"),
            ("S-Up", b"\x1b[1;2A"),
            ("M-Left", b"\x1b[1;3D"),
            ("C-F1", b"\x1b[1;5P"),
            ("C-PageUp", b"\x1b[5;5~"),
            ("S-Tab", b"\x1b[Z"),
            ("S-a", b"A"),
        ] {
            assert_eq!(keys(name).as_deref(), Ok(bytes), "{name}");
        }
    }

    #[test]
    fn single_characters_are_themselves() {
        for c in ["a", "Z", ":", "-", "C", "M", "é", "'", "\"", "~"] {
            assert_eq!(keys(c).unwrap(), c.as_bytes(), "{c}");
        }
        assert_eq!(keys(": w q Enter").unwrap(), b":wq\r");
    }

    #[test]
    fn quoted_text_is_literal() {
        assert_eq!(keys("'print(6*7)' Enter").unwrap(), b"print(6*7)\r");
        assert_eq!(keys("\"two  words\"").unwrap(), b"two  words");
        assert_eq!(keys(r#""say \"hi\" \\ ok""#).unwrap(), br#"say "hi" \ ok"#);
        assert_eq!(keys(r"'back\slash'").unwrap(), br"back\slash");
        assert_eq!(keys("'Enter'").unwrap(), b"Enter");
        assert_eq!(keys("''").unwrap(), b"");
        assert_eq!(
            keys("'a'bc").unwrap_err(),
            KeysError::UnknownKey("bc".into())
        );
    }

    #[test]
    fn blanks_and_newlines_separate_words() {
        assert_eq!(
            keys("  i\thello\n").unwrap_err(),
            KeysError::UnknownKey("hello".into())
        );
        assert_eq!(keys("\ni Escape\n").unwrap(), b"i\x1b");
        assert_eq!(keys("").unwrap(), b"");
    }

    #[test]
    fn an_unknown_word_refuses_the_whole_write_and_names_it() {
        let err = keys("Enter Ente Enter").unwrap_err();
        assert_eq!(err, KeysError::UnknownKey("Ente".into()));
        assert!(err.to_string().contains("'Ente'"), "{err}");
        for bad in [
            "F13", "C-", "M-", "X-a", "C-é", "C--", "aéb", "hello", "C-Enter",
        ] {
            assert!(keys(bad).is_err(), "{bad}");
        }
        assert_eq!(keys("'open").unwrap_err(), KeysError::UnclosedQuote);
        assert_eq!(keys("\"open\\\"").unwrap_err(), KeysError::UnclosedQuote);
        assert_eq!(
            encode(b"\xff", KeyModes::default()).unwrap_err(),
            KeysError::NotText
        );
    }

    #[test]
    fn size_cap() {
        let at_cap = "a ".repeat(MAX_KEYS_TEXT / 2);
        assert_eq!(keys(&at_cap).unwrap().len(), MAX_KEYS_TEXT / 2);
        let mega = vec![b'a'; 1 << 20];
        assert_eq!(
            encode(&mega, KeyModes::default()).unwrap_err(),
            KeysError::TooLong(1 << 20)
        );
    }
}
