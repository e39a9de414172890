//! Brace expansion of unquoted words.

/// Words longer than this are not brace-expanded.
const MAX_BRACE_WORD: usize = 4096;

/// The most words one brace-expanded word may turn into.
const MAX_BRACE_RESULTS: usize = 64;

/// Expands the unquoted brace lists (`{a,b}c` → `ac bc`) and sequences (`{1..3}`,
/// `{a..e..2}`) of one word after quote removal. Past the limits (a word over 4096 bytes,
/// more than 64 results) it stops and returns what it has as an error: the results are
/// then incomplete.
pub(super) fn expand_braces(word: &str) -> Result<Vec<String>, Vec<String>> {
    let strings = |words: Vec<Vec<u8>>| {
        words
            .into_iter()
            .map(|w| String::from_utf8_lossy(&w).into_owned())
            .collect()
    };
    expand_with(word.as_bytes(), &plain_braces)
        .map(strings)
        .map_err(strings)
}

/// Expands the brace lists and sequences of one word as written, quotes and all, the way
/// bash does before any other expansion. Its brace scanner knows fewer quotes than its
/// parser: a `"` inside backquotes or `${ }` inside double quotes ends the quotes for it,
/// so braces the parser read as quoted can expand (and each result's substitutions then
/// run on their own). `substitution_end` gives the offset of the `)` closing a `$(` whose
/// text starts at the offset it is given. Same limits as [`expand_braces`].
pub(super) fn expand_braces_written(
    word: &[u8],
    substitution_end: &dyn Fn(&[u8], usize) -> usize,
) -> Result<Vec<Vec<u8>>, Vec<Vec<u8>>> {
    expand_with(word, &|w| written_braces(w, substitution_end))
}

/// What a byte means to the brace scanner.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Brace {
    /// Quoted, escaped or inside a substitution: nothing.
    Hidden,
    /// Itself: a `{` may open a group, a `,` or `}` may end an alternative.
    Plain,
    /// The `{` of a `${`: it nests, but never opens a group.
    Nests,
}

/// The bytes of a word after quote removal: all plain, except the `{` of a `${`.
fn plain_braces(word: &[u8]) -> Vec<Brace> {
    (0..word.len())
        .map(|at| {
            if word[at] == b'{' && at > 0 && word[at - 1] == b'$' {
                Brace::Nests
            } else {
                Brace::Plain
            }
        })
        .collect()
}

/// The bytes of a word as written, read the way bash's brace scanner reads them: a
/// backslash escapes the next byte outside single quotes; `'`, `"` and a backquote each
/// quote up to the next byte like them (nothing else is a quote inside them); a `$'..'`
/// is one quoted string; `$(`, `<(` and `>(` are stepped over to their `)`, and inside
/// double quotes a `$(` is too.
fn written_braces(word: &[u8], substitution_end: &dyn Fn(&[u8], usize) -> usize) -> Vec<Brace> {
    let mut kinds = vec![Brace::Hidden; word.len()];
    let mut quote = None;
    let mut at = 0;
    while at < word.len() {
        let byte = word[at];
        let next = word.get(at + 1).copied();
        if byte == b'\\' && quote != Some(b'\'') {
            at += 2;
            continue;
        }
        if byte == b'$' && next == Some(b'{') && quote != Some(b'\'') {
            if quote.is_none() {
                kinds[at + 1] = Brace::Nests;
            }
            at += 2;
            continue;
        }
        if byte == b'$' && next == Some(b'\'') && quote.is_none() {
            // The parser has turned a `$'..'` into a quoted string by now: its escaped
            // quotes (`\'`) do not end it.
            at += 2;
            while at < word.len() && word[at] != b'\'' {
                at += if word[at] == b'\\' { 2 } else { 1 };
            }
            at += 1;
            continue;
        }
        let opens_substitution = next == Some(b'(')
            && match quote {
                None => matches!(byte, b'$' | b'<' | b'>'),
                Some(b'"') => byte == b'$',
                Some(_) => false,
            };
        if opens_substitution {
            at = substitution_end(word, at + 2).saturating_add(1);
            continue;
        }
        match quote {
            Some(open) if byte == open => quote = None,
            Some(_) => {}
            None if matches!(byte, b'\'' | b'"' | b'`') => quote = Some(byte),
            None => kinds[at] = Brace::Plain,
        }
        at += 1;
    }
    kinds
}

/// Brace expansion of `word` with `kinds` telling which of its bytes count.
fn expand_with(
    word: &[u8],
    kinds: &dyn Fn(&[u8]) -> Vec<Brace>,
) -> Result<Vec<Vec<u8>>, Vec<Vec<u8>>> {
    if word.len() > MAX_BRACE_WORD {
        return Err(vec![word.to_vec()]);
    }
    let mut done = Vec::new();
    let mut pending = vec![word.to_vec()];
    while let Some(current) = pending.pop() {
        if done.len() + pending.len() >= MAX_BRACE_RESULTS {
            done.push(current);
            done.extend(pending.into_iter().rev());
            return Err(done);
        }
        match brace_group(&current, &kinds(&current)) {
            Some((open, alternatives, close)) => {
                if alternatives.len() > MAX_BRACE_RESULTS {
                    done.push(current);
                    done.extend(pending.into_iter().rev());
                    return Err(done);
                }
                let prefix = &current[..open];
                let suffix = &current[close + 1..];
                for alternative in alternatives.iter().rev() {
                    pending.push([prefix, alternative, suffix].concat());
                }
            }
            None => done.push(current),
        }
    }
    Ok(done)
}

/// The first `{...}` in `word` that expands, found the way bash finds it: a `{` is closed
/// by the first `}` at its own level once a `,` (or a sequence's `..`) was seen there, so a
/// `}` before any comma is a plain character (`{a}b,c}` is `a}b` and `c`); a `${`
/// opens a level of its own, inside which no group opens (`${x:-{a,b}}`), up to its `}`; a
/// group that closes nowhere is skipped and the search goes on after its `{` from the top
/// level, and a `{..}` that is neither a list nor a sequence is plain text. Only bytes
/// `kinds` marks count. Its `{` offset, what it expands to, and its `}` offset.
fn brace_group(word: &[u8], kinds: &[Brace]) -> Option<(usize, Vec<Vec<u8>>, usize)> {
    let mut from = 0;
    let mut level = 0usize;
    while from < word.len() {
        let open = from;
        from += 1;
        match (word[open], kinds[open]) {
            (_, Brace::Hidden) => continue,
            (b'{', Brace::Plain) if level == 0 => {}
            (b'{', _) => {
                level += 1;
                continue;
            }
            (b'}', _) => {
                level = level.saturating_sub(1);
                continue;
            }
            _ => continue,
        }
        let Some((close, commas)) = closing_brace(word, kinds, open) else {
            continue;
        };
        if commas.is_empty() {
            if let Some(sequence) = std::str::from_utf8(&word[open + 1..close])
                .ok()
                .and_then(sequence)
            {
                let sequence = sequence.into_iter().map(String::into_bytes).collect();
                return Some((open, sequence, close));
            }
            from = close + 1;
            continue;
        }
        let mut bounds = vec![open];
        bounds.extend(commas);
        bounds.push(close);
        let alternatives = bounds
            .windows(2)
            .map(|pair| word[pair[0] + 1..pair[1]].to_vec())
            .collect();
        return Some((open, alternatives, close));
    }
    None
}

/// The `}` that closes the `{` at `open`, and the offsets of the commas at its level; None
/// when nothing closes it. Only bytes `kinds` marks count.
fn closing_brace(bytes: &[u8], kinds: &[Brace], open: usize) -> Option<(usize, Vec<usize>)> {
    let mut level = 0usize;
    let mut commas = Vec::new();
    let mut sequence = false;
    let mut at = open + 1;
    while at < bytes.len() {
        let kind = kinds[at];
        match bytes[at] {
            _ if kind == Brace::Hidden => {}
            b'}' if level == 0 && (sequence || !commas.is_empty()) => {
                return Some((at, commas));
            }
            b'{' => level += 1,
            b'}' if level > 0 => level -= 1,
            b',' if level == 0 => commas.push(at),
            b'.' if level == 0
                && bytes.get(at + 1) == Some(&b'.')
                && bytes.get(at + 2).is_some_and(|&b| b != b'}') =>
            {
                sequence = true;
            }
            _ => {}
        }
        at += 1;
    }
    None
}

/// The words of a sequence expression (`1..5`, `05..1..2`, `a..e`), or None when `inner`
/// is not one. More than the result limit comes back as one word too many, so the caller
/// sees the limit.
fn sequence(inner: &str) -> Option<Vec<String>> {
    let parts: Vec<&str> = inner.split("..").collect();
    if !(2..=3).contains(&parts.len()) {
        return None;
    }
    let step: i64 = match parts.get(2) {
        Some(step) => step.parse::<i64>().ok()?.checked_abs()?.max(1),
        None => 1,
    };
    let limit = MAX_BRACE_RESULTS as i64 + 1;
    if let (Ok(from), Ok(to)) = (parts[0].parse::<i64>(), parts[1].parse::<i64>()) {
        let padded = [parts[0], parts[1]].iter().any(|p| {
            p.trim_start_matches('-').len() > 1 && p.trim_start_matches('-').starts_with('0')
        });
        let width = if padded {
            parts[0].len().max(parts[1].len())
        } else {
            0
        };
        let direction = if to >= from { 1 } else { -1 };
        let count = (to.abs_diff(from) / step as u64)
            .saturating_add(1)
            .min(limit as u64);
        return Some(
            (0..count as i64)
                .map(|i| format!("{:0width$}", from + direction * i * step))
                .collect(),
        );
    }
    let (from, to) = (single_char(parts[0])?, single_char(parts[1])?);
    let (low, high) = (from.min(to) as i64, from.max(to) as i64);
    let direction = if to >= from { 1 } else { -1 };
    let count = ((high - low) / step + 1).min(limit);
    Some(
        (0..count)
            .filter_map(|i| char::from_u32((from as i64 + direction * i * step) as u32))
            .map(String::from)
            .collect(),
    )
}

fn single_char(text: &str) -> Option<char> {
    let mut chars = text.chars();
    let c = chars.next()?;
    (chars.next().is_none() && c.is_ascii_alphabetic()).then_some(c)
}

/// What a `${...}` stands for, as far as the text alone tells.
pub(super) enum Parameter {
    /// A positional or special parameter of the script, whose value is known (empty,
    /// unless a `-c` string was given arguments).
    Known(Vec<u8>),
    /// A variable with a default (`${x:-word}`, `${x-word}`, `${x:=word}`) or an
    /// alternate value (`${x:+word}`, `${x+word}`): the word is what it stands for when
    /// the variable is unset (or set).
    Default(Vec<u8>),
    /// A form whose value the shell computes in a way that can run commands: `${x@P}`
    /// expands a prompt string; a substring offset holding quotes or expansions is
    /// arithmetic the splitter does not read. The sentence names it.
    Unreadable(&'static str),
    /// Anything else: kept as written.
    Unknown,
}

/// The value of a positional or special parameter (`0`-`9`, `@`, `*`, `#`) given the
/// script's arguments (`args[0]` is `$0`); None for any other name.
pub(super) fn special_value(name: &[u8], args: &[Vec<u8>]) -> Option<Vec<u8>> {
    match name {
        b"@" | b"*" => Some(args.get(1..).unwrap_or(&[]).join(&b' ')),
        b"#" => Some(args.len().saturating_sub(1).to_string().into_bytes()),
        digits if !digits.is_empty() && digits.iter().all(u8::is_ascii_digit) => {
            let index: usize = std::str::from_utf8(digits).ok()?.parse().ok()?;
            Some(args.get(index).cloned().unwrap_or_default())
        }
        _ => None,
    }
}

/// Reads the inside of `${...}` (without the braces).
pub(super) fn parameter(inner: &[u8], args: &[Vec<u8>]) -> Parameter {
    if inner.ends_with(b"@P") {
        return Parameter::Unreadable(
            "`${...@P}` expands a value as a prompt string, which can run commands",
        );
    }
    if inner.first() == Some(&b'#') && inner.len() > 1 {
        // `${#x}`: a length, a number.
        return Parameter::Unknown;
    }
    let name_end = match inner.first() {
        Some(b'@' | b'*' | b'#' | b'?' | b'$' | b'!' | b'-') => 1,
        Some(b) if b.is_ascii_digit() => inner.iter().take_while(|b| b.is_ascii_digit()).count(),
        _ => inner
            .iter()
            .take_while(|&&b| b.is_ascii_alphanumeric() || b == b'_')
            .count(),
    };
    let (name, rest) = inner.split_at(name_end);
    let offset = rest.strip_prefix(b":").filter(|r| {
        !r.starts_with(b"-") && !r.starts_with(b"=") && !r.starts_with(b"+") && !r.starts_with(b"?")
    });
    if offset.is_some_and(|o| o.iter().any(|b| b"'\"$`(\n\\[".contains(b))) {
        return Parameter::Unreadable(
            "a `${x:offset}` whose offset holds quotes or expansions is arithmetic that can \
             run commands",
        );
    }
    let default = [&b":-"[..], b"-", b":=", b"="]
        .iter()
        .find_map(|op| rest.strip_prefix(*op))
        .map(unquote);
    let alternate = [&b":+"[..], b"+"]
        .iter()
        .find_map(|op| rest.strip_prefix(*op))
        .map(unquote);
    match special_value(name, args) {
        Some(value) => Parameter::Known(match (default, alternate) {
            (Some(word), _) if value.is_empty() => word,
            (_, Some(word)) if !value.is_empty() => word,
            (_, Some(_)) => Vec::new(),
            _ => value,
        }),
        None => match default.or(alternate) {
            Some(word) if !name.is_empty() && !word.is_empty() => Parameter::Default(word),
            _ => Parameter::Unknown,
        },
    }
}

/// A word with its quotes and backslashes removed, crudely (no expansion), and each
/// `$'...'` decoded (bash decodes it in a `${x:-word}`, also inside double quotes).
fn unquote(word: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(word.len());
    let mut at = 0;
    while let Some(&b) = word.get(at) {
        match b {
            b'$' if word.get(at + 1) == Some(&b'\'') => {
                let mut parser = super::Parser::new(word, 0);
                parser.pos = at + 2;
                parser.ansi_c_quoted(&mut out);
                at = parser.pos;
            }
            b'\'' | b'"' => at += 1,
            b'\\' => {
                out.extend(word.get(at + 1));
                at += 2;
            }
            other => {
                out.push(other);
                at += 1;
            }
        }
    }
    out
}
