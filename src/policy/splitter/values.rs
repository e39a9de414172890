//! Values the text gives its variables, followed to where they are used: `x=/; rm -rf
//! $x` is judged as `rm -rf /` too. A value is known when it is assigned as plain text
//! (`x=/`, `declare x=/`, `local`, `export`, `readonly`, `typeset`, an array `a=(/ x)`,
//! whose use is spelled with all its elements, `printf -v x /` with a format of plain
//! text; `set -- /` gives the positional parameters); any other assignment makes
//! the variable unknown again. A use is spelled with the values it can take: a known
//! variable's value; `${x:-D}` of an unknown one its default `D`; `"$X/"*` of an unknown
//! one (not one the environment always sets, such as `HOME` or `PWD`) the empty string,
//! as it may be unset (`/*`); `${X:?}` is honoured as set and not empty, so it is left
//! as written. The spellings made are checked by deny and ask rules only.
//!
//! The values are the text's, in order of reading, whatever runs between: a value
//! assigned in a subshell or a branch not taken is taken as assigned (which errs
//! towards refusing).

use super::{basename, is_name, Context};

/// Variables the environment a command starts with always sets: an unknown one of these
/// is not taken as possibly empty.
const ALWAYS_SET: &[&str] = &[
    "HOME", "PWD", "OLDPWD", "USER", "LOGNAME", "SHELL", "PATH", "HOSTNAME", "TERM",
];

/// Notes an assignment `target=value` as the text wrote it (quotes removed).
pub(super) fn note_assignment(cx: &mut Context, target: &str, value: &str) {
    let (name, append) = match target.strip_suffix('+') {
        Some(name) => (name, true),
        None => (target, false),
    };
    if !is_name(name.as_bytes()) {
        return;
    }
    // An array's elements were kept as written when they were read.
    let value = if value == "(...)" && !cx.arrays.is_empty() {
        cx.arrays
            .remove(0)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    } else if value.starts_with('(') {
        return set(cx, name, None);
    } else {
        value.to_owned()
    };
    let known = !append && !value.contains(['$', '`', '*', '?', '[', '\\', '\'', '"', '(']);
    set(cx, name, known.then_some(value));
}

/// Notes the assignments a command makes by its arguments: `declare`, `typeset`,
/// `local`, `export`, `readonly` (`NAME=VALUE` operands), `set --` (the positional
/// parameters, then expanded as bash expands them) and `printf -v NAME FORMAT` with a format of plain text.
pub(super) fn note_command(cx: &mut Context, words: &[String]) {
    let Some(program) = words.first() else {
        return;
    };
    match basename(program) {
        "declare" | "typeset" | "local" | "export" | "readonly" => {
            for word in &words[1..] {
                if let Some((target, value)) = word.split_once('=') {
                    note_assignment(cx, target, value);
                }
            }
        }
        "set" if words.get(1).map(String::as_str) == Some("--") => {
            // The positional parameters, which the splitter expands as bash does.
            let mut args = vec![b"bash".to_vec()];
            args.extend(words[2..].iter().map(|w| w.as_bytes().to_vec()));
            cx.args = args;
            cx.args_generation = cx.new_generation();
        }
        "printf" if words.get(1).map(String::as_str) == Some("-v") => {
            if let (Some(name), Some(format)) = (words.get(2), words.get(3)) {
                let value = plain(format).filter(|f| !f.contains('%') && words.len() == 4);
                if is_name(name.as_bytes()) {
                    set(cx, name, value);
                }
            }
        }
        _ => {}
    }
}

/// `text` when it holds nothing a shell would expand or a format would change.
fn plain(text: &str) -> Option<String> {
    (!text.contains(['$', '`', '*', '?', '[', '\\', '%'])).then(|| text.to_owned())
}

fn set(cx: &mut Context, name: &str, value: Option<String>) {
    let changed = match &value {
        Some(value) => cx.values.get(name) != Some(value),
        None => cx.values.contains_key(name),
    };
    if !changed {
        return;
    }
    match value {
        Some(value) => cx.values.insert(name.to_owned(), value),
        None => cx.values.remove(name),
    };
    cx.values_generation = cx.new_generation();
}

/// The words with each use of a variable spelled with a value it can take (see the
/// module's text); None when no word changes.
pub(super) fn substituted(cx: &Context, words: &[String]) -> Option<Vec<String>> {
    if !words.iter().any(|w| w.contains('$')) {
        return None;
    }
    let out: Vec<String> = words.iter().map(|w| substitute(cx, w)).collect();
    (out != words).then_some(out)
}

/// One word with its variables spelled with values they can take.
fn substitute(cx: &Context, word: &str) -> String {
    let mut out = String::with_capacity(word.len());
    let mut rest = word;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (use_, len) = read_use(after);
        let value = use_.and_then(|u| value_of(cx, &u, &after[len..]));
        match value {
            Some(value) => {
                out.push_str(&value);
                rest = &after[len..];
            }
            None => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A variable's use after a `$`.
struct Use {
    name: String,
    /// `${x:-D}` or `${x-D}`: the default.
    default: Option<String>,
    /// `${x:?}` or `${x?}`: an unset (or empty) one stops the shell.
    required: bool,
}

/// Reads the use after a `$` (`x`, `{x}`, `{x:-D}`, `{x:?M}`, `{a[@]}`, `1`, `@`), and
/// how many bytes it takes; None for another form (`$(`, `$((`, `${#x}`, `${x%y}`).
fn read_use(after: &str) -> (Option<Use>, usize) {
    let plain = |name: &str| Use {
        name: name.to_owned(),
        default: None,
        required: false,
    };
    if let Some(braced) = after.strip_prefix('{') {
        let Some(close) = braced.find('}') else {
            return (None, 0);
        };
        let inner = &braced[..close];
        let len = close + 2;
        let name_end = inner
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '@' || c == '*'))
            .unwrap_or(inner.len());
        let (name, operator) = inner.split_at(name_end);
        let name = match operator {
            "[@]" | "[*]" => name,
            _ if name.is_empty() => return (None, 0),
            _ => name,
        };
        let use_ = match operator {
            "" | "[@]" | "[*]" => plain(name),
            _ => match [":-", "-", ":?", "?"]
                .iter()
                .find_map(|op| operator.strip_prefix(op).map(|rest| (*op, rest)))
            {
                Some((":-" | "-", default)) => Use {
                    default: Some(default.to_owned()),
                    ..plain(name)
                },
                Some((":?" | "?", _)) => Use {
                    required: true,
                    ..plain(name)
                },
                _ => return (None, 0),
            },
        };
        return (Some(use_), len);
    }
    let first = after.chars().next();
    match first {
        Some(c) if c.is_ascii_digit() || c == '@' || c == '*' => (Some(plain(&c.to_string())), 1),
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (Some(plain(&after[..end])), end)
        }
        _ => (None, 0),
    }
}

/// The value a use is spelled with, given what follows it in the word; None to leave it
/// as written.
fn value_of(cx: &Context, use_: &Use, next: &str) -> Option<String> {
    if let Some(value) = cx.values.get(&use_.name) {
        return match &use_.default {
            Some(default) if value.is_empty() => plain(default),
            _ => Some(value.clone()),
        };
    }
    if use_.required || ALWAYS_SET.contains(&use_.name.as_str()) {
        return None;
    }
    match &use_.default {
        Some(default) => plain(default),
        // Unset, it is empty: `"$X/"*` is `/*`. One the text sets somewhere (to a value
        // not known here) is taken as set.
        None => (next.starts_with('/') && !cx.set_somewhere.contains(&use_.name)).then(String::new),
    }
}

/// The names a text may set anywhere: assigned (`NAME=`, `NAME+=`, `NAME[...]=`, also
/// after `declare` and the like), a `for` or `select` variable, those `read`, `getopts`,
/// `mapfile` and `printf -v` set. Read from the words between blanks and operators,
/// without the grammar: a name found where it is not set only spares its uses.
pub(super) fn names_set(text: &str) -> std::collections::HashSet<String> {
    let mut out = std::collections::HashSet::new();
    let tokens: Vec<&str> = text
        .split(|c: char| c.is_ascii_whitespace() || ";&|()`\"'".contains(c))
        .filter(|t| !t.is_empty())
        .collect();
    let name_of = |token: &str| is_name(token.as_bytes()).then(|| token.to_owned());
    for (index, token) in tokens.iter().enumerate() {
        if let Some(at) = token.find(['=', '[']) {
            let name = token[..at].strip_suffix('+').unwrap_or(&token[..at]);
            out.extend(name_of(name));
            continue;
        }
        let after = |n: usize| tokens.get(index + n).copied().unwrap_or("");
        match *token {
            "for" | "select" => out.extend(name_of(after(1))),
            "getopts" => out.extend(name_of(after(2))),
            "-v" | "-a" => out.extend(name_of(after(1))),
            "read" | "mapfile" | "readarray" | "local" | "declare" | "typeset" => {
                out.extend((1..=8).filter_map(|n| name_of(after(n))));
            }
            _ => {}
        }
    }
    out
}
