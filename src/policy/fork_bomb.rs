//! Recognising a fork bomb: a function that runs itself in a pipeline or in the
//! background (`:(){ :|:& };:`, `bomb() { bomb | bomb & }; bomb`, `function f { f & f; }`).
//! Each such call starts a process that makes more, so the count grows until the machine
//! has none left. A function that only calls itself in sequence (`f() { f; }`) recurses
//! in one process and is left alone, and so is a function run in a pipeline from outside
//! its body (`log() { ...; }; make | log`).
//!
//! The text is read as written, quotes included: a definition inside a `sh -c '...'`
//! string is found the same, and so is one that is only printed (`echo 'f(){ f|f& }'`),
//! which is refused too. Looking deeper than the text (a name built at run time, a call
//! through `eval` of a variable) is out of reach, as for every rule.

/// Bytes that end a word.
const METACHARACTERS: &[u8] = b" \t\n;&|()<>{}";

/// The name of the first function in `text` that runs itself in a pipeline or in the
/// background, or None. Linear in the text times a small constant: past that budget the
/// search stops and answers an empty name (a text too tangled to tell, refused rather
/// than let through: unclosed definitions piled up would otherwise hide a bomb after
/// them).
pub fn fork_bomb(text: &str) -> Option<String> {
    let src = text.as_bytes();
    if !src.contains(&b'(') && !text.contains("function") {
        return None;
    }
    if !src.contains(&b'|') && !src.contains(&b'&') {
        return None;
    }
    let mut budget = src.len().saturating_mul(4).saturating_add(1 << 16);
    let mut at = 0;
    while at < src.len() {
        // A definition starts a word, or a quoted string (`sh -c 'f(){ ...'`).
        if at > 0 && !METACHARACTERS.contains(&src[at - 1]) && !b"'\"".contains(&src[at - 1]) {
            at += 1;
            continue;
        }
        if let Some((name, body)) = definition(src, at) {
            let body_end = body_end(src, body);
            // Out of budget (definitions that never close, piled up to hide what
            // follows): refused rather than let through unread.
            let Some(left) = budget.checked_sub(body_end - body) else {
                return Some(String::new());
            };
            budget = left;
            if calls_itself_concurrently(&src[body..body_end], name) {
                return Some(String::from_utf8_lossy(name).into_owned());
            }
        }
        at += 1;
    }
    None
}

/// A function definition starting at `at` (`name ()`, `function name`, `function name
/// ()`): its name, and where its body starts (its `{` or `(`).
fn definition(src: &[u8], at: usize) -> Option<(&[u8], usize)> {
    let mut pos = at;
    let keyword =
        src[at..].starts_with(b"function") && src.get(at + 8).is_some_and(|b| b" \t".contains(b));
    if keyword {
        pos = skip_blanks(src, at + 8);
    }
    let name_end = word_end(src, pos);
    if name_end == pos {
        return None;
    }
    let name = &src[pos..name_end];
    pos = skip_blanks(src, name_end);
    let parens = src[pos..].starts_with(b"(");
    if parens {
        pos = skip_blanks(src, pos + 1);
        if src.get(pos) != Some(&b')') {
            return None;
        }
        pos += 1;
    } else if !keyword {
        return None;
    }
    while src.get(pos).is_some_and(|b| b" \t\n".contains(b)) {
        pos += 1;
    }
    matches!(src.get(pos), Some(b'{' | b'(')).then_some((name, pos))
}

/// Where the body opening at `open` ends: past its matching bracket, or the end of the
/// text.
fn body_end(src: &[u8], open: usize) -> usize {
    let (opening, closing) = if src[open] == b'{' {
        (b'{', b'}')
    } else {
        (b'(', b')')
    };
    let mut depth = 0usize;
    for (pos, &byte) in src.iter().enumerate().skip(open) {
        if byte == opening {
            depth += 1;
        } else if byte == closing {
            depth -= 1;
            if depth == 0 {
                return pos + 1;
            }
        }
    }
    src.len()
}

/// Whether `body` calls `name` as a command that is piped (`name | x`, `x | name`) or
/// put in the background (`name &`).
fn calls_itself_concurrently(body: &[u8], name: &[u8]) -> bool {
    let mut at = 0;
    while let Some(found) = find(&body[at..], name).map(|p| p + at) {
        at = found + 1;
        let end = found + name.len();
        if word_end(body, found) != end || !at_command_start(body, found) {
            continue;
        }
        // The command's end: its separator, past its arguments.
        let stop = body[end..]
            .iter()
            .position(|b| b";&|\n(){}".contains(b))
            .map_or(body.len(), |p| p + end);
        let after = body.get(stop..).unwrap_or(&[]);
        let piped_into = after.starts_with(b"|") && !after.starts_with(b"||");
        let backgrounded = after.starts_with(b"&") && !matches!(after.get(1), Some(b'&' | b'>'));
        let before = body[..found].trim_ascii_end();
        let piped_from = before.ends_with(b"|") && !before.ends_with(b"||");
        if piped_into || backgrounded || piped_from {
            return true;
        }
    }
    false
}

/// Whether the word at `at` stands where a command starts: after a separator, a bracket
/// or at the start.
fn at_command_start(body: &[u8], at: usize) -> bool {
    body[..at]
        .trim_ascii_end()
        .last()
        .is_none_or(|b| b";&|\n(){".contains(b))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

fn word_end(src: &[u8], from: usize) -> usize {
    src[from..]
        .iter()
        .position(|b| METACHARACTERS.contains(b) || b"'\"`$".contains(b))
        .map_or(src.len(), |p| p + from)
}

fn skip_blanks(src: &[u8], from: usize) -> usize {
    src[from..]
        .iter()
        .position(|b| !b" \t".contains(b))
        .map_or(src.len(), |p| p + from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fork_bombs_are_found_by_their_function() {
        for (text, name) in [
            (":(){ :|:& };:", ":"),
            (":(){ :|: & };:", ":"),
            (": () { : | : & } ; :", ":"),
            ("bomb() { bomb | bomb & }; bomb", "bomb"),
            ("f() {\n  f | f &\n}\nf", "f"),
            ("function f { f|f& }; f", "f"),
            ("function f() { f & f; }; f", "f"),
            ("f() ( f | f ); f", "f"),
            ("f(){ g | f; }; f", "f"),
            ("f(){ f x y | cat; }; f", "f"),
            ("sh -c ':(){ :|:& };:'", ":"),
            ("echo start; x(){ x & }; x", "x"),
        ] {
            assert_eq!(fork_bomb(text).as_deref(), Some(name), "{text}");
        }
    }

    #[test]
    fn other_functions_are_not() {
        for text in [
            "f() { f; }",
            "log() { echo \"$@\"; }; make | log",
            "f() { echo a | grep a; }; f &",
            "f() { ff | cat; }",
            "f() { g || f; }",
            "f() { f && g; }",
            "f() { f &> /dev/null; }",
            "retry() { \"$@\" || retry \"$@\"; }",
            "echo 'a|b' & wait",
            "ls | grep x &",
            "(cd x && make) | tee log",
            "",
        ] {
            assert_eq!(fork_bomb(text), None, "{text}");
        }
    }

    #[test]
    fn definitions_that_never_close_are_too_tangled_not_a_way_past() {
        let started = std::time::Instant::now();
        // Nothing piped or put in the background: no bomb, whatever else.
        assert_eq!(fork_bomb(&"f(){ ".repeat(50_000)), None);
        let text = format!("{}x | y", "f(){ ".repeat(50_000));
        assert_eq!(fork_bomb(&text), Some(String::new()));
        let hidden = format!("echo '{}' ; :(){{ :|:& }};:", "g(){ ".repeat(200));
        assert!(fork_bomb(&hidden).is_some());
        // Closed definitions, however many, are read to the end.
        let many = "f(){ true; }; ".repeat(20_000);
        assert_eq!(fork_bomb(&many), None);
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
    }
}
