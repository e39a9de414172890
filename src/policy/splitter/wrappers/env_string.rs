//! `env -S STRING`: the string split into words as `env` splits it, so the program it
//! names is peeled like any other.

/// The words GNU `env -S STRING` makes of its string: split at blanks outside quotes;
/// single quotes keep everything but `\\` and `\'`; double quotes keep blanks; `\_` is a
/// space in double quotes and a separator outside them; `\"`, `\'`, `\#`, `\$`, `\\`
/// are those characters, `\f`, `\n`, `\r`, `\t`, `\v` control characters; `\c` and a
/// `#` starting a word end the string. `${NAME}` is left as written.
pub(crate) fn split_env_string(text: &str) -> Vec<String> {
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
