//! Words: quote and backslash removal, `$` forms, backticks, `$'...'` escapes and
//! heredoc bodies, read byte by byte.

use super::expand::{expand_braces_written, parameter, special_value, Parameter};
use super::grammar::truncated;
use super::scan::{Arithmetic, Group};
use super::{give_up, is_name, is_name_byte, sub_parse, Context, Parser, Word, MAX_DEPTH};

/// The longest `${...}` kept as written in its word.
const MAX_PARAMETER: usize = 256;

/// A heredoc whose body starts after the next newline.
pub(super) struct Heredoc {
    /// The depth of the command list it was started in.
    pub depth: usize,
    /// Set once the command it belongs to turns out to be a shell reading its script from
    /// standard input: the body is then split as commands.
    pub feeds_shell: std::rc::Rc<std::cell::Cell<bool>>,
    pub delimiter: Vec<u8>,
    pub strip_tabs: bool,
    pub expand: bool,
}

/// Whether text holds a `{` and a quote, backslash or substitution, so that bash's brace
/// expansion may read braces in it that the parser reads as quoted (or the other way).
pub(super) fn may_hide_braces(text: &[u8]) -> bool {
    text.contains(&b'{') && text.iter().any(|b| b"\"'`\\$<>".contains(b))
}

/// Whether a word read so far ends in an extended-glob operator, so that a `(` after it
/// opens a pattern: `?`, `*`, `+`, `@`, or `!` after something (a lone `!` before `(`
/// is the negation of a subshell, `!(false)`).
fn extglob_operator(text: &[u8]) -> bool {
    matches!(text, [.., b'?' | b'*' | b'+' | b'@'] | [_, .., b'!'])
}

/// Whether `byte` stands for itself in an unquoted word (no quote, expansion, operator,
/// blank, glob, brace or `=`).
pub(super) fn is_plain(byte: u8) -> bool {
    PLAIN[usize::from(byte)]
}

/// [`is_plain`] as a table: it runs for every byte of every word.
static PLAIN: [bool; 256] = {
    let mut table = [true; 256];
    let special = b" \t\n;&|()<>\\'\"$`={*?[";
    let mut at = 0;
    while at < special.len() {
        table[special[at] as usize] = false;
        at += 1;
    }
    table
};

/// What reading a `$` produced.
pub(super) enum Dollar {
    /// A plain `$`, or a `${...}` kept as written.
    Literal,
    /// A `$name`: the `$` kept, the name read on as text. Its value is known at run time.
    Variable,
    /// A positional or special parameter whose value the text tells.
    Known,
    /// A substitution that was entered, or a parameter only known at run time.
    Expanded,
    /// A quoted string (`$'...'`, `$"..."`).
    Quoted,
    /// An unquoted `$IFS`, which separates words.
    Blank,
}
impl<'s> Parser<'s> {
    /// Skips spaces, tabs and backslash-newline continuations.
    pub(super) fn skip_blanks(&mut self) {
        loop {
            match self.peek() {
                Some(b' ' | b'\t') => self.advance(1),
                Some(b'\\') if self.peek_at(1) == Some(b'\n') => self.advance(2),
                _ => return,
            }
        }
    }

    /// Skips a comment up to (not including) its newline.
    pub(super) fn skip_comment(&mut self) {
        match self.rest().iter().position(|&b| b == b'\n') {
            Some(offset) => self.advance(offset),
            None => self.pos = self.src.len(),
        }
    }

    /// Skips the bodies of the heredocs started on the line just ended.
    pub(super) fn read_heredocs(&mut self, cx: &mut Context) {
        // A heredoc started inside `$( ... )` has its body after the next newline at that
        // depth; one started outside it waits for the newline after the `)`.
        let depth = self.depth;
        let (pending, later): (Vec<Heredoc>, Vec<Heredoc>) = std::mem::take(&mut self.heredocs)
            .into_iter()
            .partition(|heredoc| heredoc.depth >= depth);
        self.heredocs = later;
        for heredoc in pending {
            let body_start = self.pos;
            let mut body_end = self.src.len();
            while self.pos < self.src.len() {
                let line_start = self.pos;
                let (line, line_end) = self.heredoc_line(heredoc.expand);
                let tabs = if heredoc.strip_tabs {
                    line.iter().take_while(|&&b| b == b'\t').count()
                } else {
                    0
                };
                let logical = &line[tabs..];
                self.pos = (line_end + 1).min(self.src.len());
                if logical == heredoc.delimiter.as_slice() {
                    body_end = line_start;
                    break;
                }
                let rest = logical.strip_prefix(heredoc.delimiter.as_slice());
                if self.substitutions > 0 && rest.is_some_and(|r| r.contains(&b')')) {
                    // Inside `$( )` bash ends the body at a line that starts with the
                    // delimiter and holds a `)`, and reads on right after the delimiter
                    // (`E)` closes the substitution; `Ex)` runs `x`).
                    body_end = line_start;
                    self.pos = source_offset(
                        &self.src[line_start..line_end],
                        tabs + heredoc.delimiter.len(),
                        heredoc.expand,
                    ) + line_start;
                    break;
                }
            }
            let body = &self.src[body_start..body_end.max(body_start)];
            if heredoc.feeds_shell.get() {
                // The body is the script of the shell reading it (expansions and all).
                sub_parse(cx, body, self.depth + 1);
            } else if heredoc.expand && body.iter().any(|&b| b == b'$' || b == b'`') {
                // An unquoted delimiter's body is expanded like a double-quoted string.
                self.expand_as_double_quoted(cx, body);
            }
        }
    }

    /// The heredoc body line at the position and where it ends (its newline, or the end of
    /// the input). In the body of an unquoted delimiter bash removes each backslash-newline
    /// before it compares a line with the delimiter, so `E\` and `OF` on the next line are
    /// the line `EOF`; an escaped backslash (`\\`) joins nothing.
    fn heredoc_line(&self, join: bool) -> (std::borrow::Cow<'s, [u8]>, usize) {
        let rest = self.rest();
        let end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
        if !join || !rest[..end].contains(&b'\\') {
            return (std::borrow::Cow::Borrowed(&rest[..end]), self.pos + end);
        }
        let mut line = Vec::with_capacity(end);
        let mut at = 0;
        while let Some(&byte) = rest.get(at) {
            match (byte, rest.get(at + 1)) {
                (b'\n', _) => break,
                (b'\\', Some(b'\n')) => at += 2,
                (b'\\', Some(&next)) => {
                    line.extend_from_slice(&[byte, next]);
                    at += 2;
                }
                _ => {
                    line.push(byte);
                    at += 1;
                }
            }
        }
        (std::borrow::Cow::Owned(line), self.pos + at.min(rest.len()))
    }

    /// Reads `text` as the inside of a double-quoted string (with no closing quote), so the
    /// substitutions in it are found: an unquoted heredoc's body, or a string the shell
    /// will expand later (a prompt, an array subscript).
    pub(super) fn expand_as_double_quoted(&self, cx: &mut Context, text: &[u8]) {
        if self.depth + 1 >= MAX_DEPTH {
            give_up(cx);
        } else {
            super::wrappers::check_table_names(cx, text);
            let mut inner = Parser::new(text, self.depth + 1);
            let mut scratch = Vec::new();
            let outer = std::mem::replace(&mut cx.unclosed, false);
            inner.double_quoted(cx, &mut scratch, true);
            if cx.unclosed {
                // bash runs an unclosed `$(` in such a string cut short by a byte
                // (`$(zapme` runs `zapm`): refused rather than modelled.
                cx.refuse(|| {
                    format!(
                        "the string '{}' is expanded a second time (a prompt or a \
                         subscript) and holds a `$(` that is not closed",
                        super::grammar::truncated(&String::from_utf8_lossy(text))
                    )
                });
            }
            cx.unclosed = outer;
        }
    }

    /// Reads a heredoc's delimiter word the way bash does: quotes and backslashes removed,
    /// nothing expanded (`E$(x)` ends at a line `E$(x)`). Returns it and whether any part
    /// was quoted.
    pub(super) fn delimiter_word(&mut self, cx: &mut Context) -> (Vec<u8>, bool) {
        let mut text = Vec::new();
        let mut quoted = false;
        while let Some(byte) = self.peek() {
            match byte {
                b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>' => break,
                b'\\' => {
                    quoted = true;
                    if let Some(next) = self.peek_at(1) {
                        text.push(next);
                    }
                    self.advance(2);
                }
                b'\'' => {
                    quoted = true;
                    self.advance(1);
                    self.single_quoted(&mut text);
                }
                b'$' if self.peek_at(1) == Some(b'\'') => {
                    // Decoded, and a NUL dropped (the delimiter is a C string that goes on).
                    quoted = true;
                    self.advance(2);
                    let mut decoded = Vec::new();
                    self.ansi_c_decode(&mut decoded);
                    text.extend(decoded.into_iter().filter(|&b| b != 0));
                }
                b'"' => {
                    quoted = true;
                    self.advance(1);
                    while let Some(inner) = self.peek() {
                        self.advance(1);
                        match inner {
                            b'"' => break,
                            b'\\' if matches!(self.peek(), Some(b'$' | b'`' | b'"' | b'\\')) => {
                                text.extend(self.peek());
                                self.advance(1);
                            }
                            other => text.push(other),
                        }
                    }
                }
                b'$' if matches!(self.peek_at(1), Some(b'(' | b'{')) => {
                    let start = self.pos;
                    let (open, close) = if self.peek_at(1) == Some(b'(') {
                        (b'(', b')')
                    } else {
                        (b'{', b'}')
                    };
                    self.advance(2);
                    self.scan_group(cx, Group::skip(open, close));
                    self.advance(1);
                    text.extend_from_slice(&self.src[start..self.pos.min(self.src.len())]);
                }
                b'`' => {
                    let start = self.pos;
                    self.advance(1);
                    while let Some(inner) = self.peek() {
                        self.advance(if inner == b'\\' { 2 } else { 1 });
                        if inner == b'`' {
                            break;
                        }
                    }
                    text.extend_from_slice(&self.src[start..self.pos.min(self.src.len())]);
                }
                other => {
                    text.push(other);
                    self.advance(1);
                }
            }
        }
        (text, quoted)
    }

    /// Reads the bracketed group at the cursor (its substitutions entered) into `word`
    /// as it is written, and marks the word a pattern (and an expansion, if the group
    /// holds a substitution): an element's subscript, an extended glob. Returns whether
    /// the group closed, or None when it is nested too deep to read (the text is then
    /// refused).
    fn pattern_group(&mut self, cx: &mut Context, word: &mut Word, group: Group) -> Option<bool> {
        if self.depth + 1 >= MAX_DEPTH {
            self.give_up(cx);
            return None;
        }
        let start = self.pos;
        self.advance(1);
        self.depth += 1;
        let closed = self.scan_group(cx, group);
        self.depth -= 1;
        if closed {
            self.advance(1);
        }
        let read = &self.src[start..self.pos];
        word.text.extend_from_slice(read);
        word.glob = true;
        if read.iter().any(|b| b"$`".contains(b)) {
            word.expanded = true;
            word.dynamic = true;
        }
        Some(closed)
    }

    /// Reads one word, entering every expansion in it.
    pub(super) fn lex_word(&mut self, cx: &mut Context) -> Word {
        let mut word = Word::default();
        // Only this word may start with an element's subscript, not the words inside it.
        let assignment_ok = std::mem::take(&mut self.assignment_ok);
        // The word so far is `NAME[subscript]` and `=` or `+=` follows it.
        let mut subscripted = false;
        while let Some(byte) = self.peek() {
            let before = word.text.len();
            match byte {
                b'(' if extglob_operator(&word.text) => {
                    // `?( )`, `*( )`, `+( )`, `@( )`, `!( )`: with `shopt -s extglob` a
                    // pattern inside the word (`/usr/bin/@(sud)o`), read to its `)` as
                    // part of it. (Without extglob bash refuses such text as a syntax
                    // error, so a pattern is the only way it runs.)
                    if self
                        .pattern_group(cx, &mut word, Group::entering(b'(', b')', false))
                        .is_none()
                    {
                        break;
                    }
                }
                b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' => break,
                b'<' | b'>' => {
                    if self.peek_at(1) != Some(b'(') {
                        break;
                    }
                    // Process substitution.
                    let start = self.pos;
                    let placeholder: &[u8] = if byte == b'<' { b"<(...)" } else { b">(...)" };
                    self.advance(2);
                    self.command_substitution(cx);
                    self.push_placeholder(&mut word.text, start, placeholder);
                    word.expanded = true;
                    word.dynamic = true;
                }
                b'\\' => match self.peek_at(1) {
                    Some(b'\n') => self.advance(2),
                    Some(next) => {
                        word.text.push(next);
                        word.quoted = true;
                        self.advance(2);
                    }
                    None => {
                        word.text.push(b'\\');
                        self.advance(1);
                    }
                },
                b'\'' => {
                    self.advance(1);
                    self.single_quoted(&mut word.text);
                    word.quoted = true;
                }
                b'"' => {
                    self.advance(1);
                    word.dynamic |= self.double_quoted(cx, &mut word.text, false);
                    word.quoted = true;
                }
                b'$' => match self.dollar(cx, &mut word.text, false) {
                    Dollar::Literal => {}
                    Dollar::Variable => word.dynamic = true,
                    Dollar::Known => {
                        word.expanded = true;
                        let end = word.text.len();
                        word.fields_mut().text.push((before, end));
                    }
                    Dollar::Expanded => {
                        word.expanded = true;
                        word.dynamic = true;
                    }
                    Dollar::Quoted => word.quoted = true,
                    Dollar::Blank => {
                        if !word.text.is_empty() || word.quoted || word.expanded {
                            break;
                        }
                    }
                },
                b'`' => {
                    self.backtick(cx, &mut word.text, false);
                    word.expanded = true;
                    word.dynamic = true;
                }
                b'=' => {
                    let name = word.text.strip_suffix(b"+").unwrap_or(&word.text);
                    // `NAME[subscript]=value` assigns to an array element.
                    let name = match name.iter().position(|&b| b == b'[') {
                        Some(open) if name.ends_with(b"]") => &name[..open],
                        _ => name,
                    };
                    if !word.assignment && (subscripted || word.plain() && is_name(name)) {
                        word.assignment = true;
                        word.text.push(b'=');
                        self.advance(1);
                        if self.peek() == Some(b'(') {
                            // An array assignment: `NAME=(a b c)`.
                            self.advance(1);
                            self.array_elements(cx);
                            word.text.extend_from_slice(b"(...)");
                        }
                    } else {
                        word.text.push(b'=');
                        self.advance(1);
                    }
                }
                b'{' => {
                    word.brace = true;
                    word.text.push(b'{');
                    self.advance(1);
                }
                b'[' if assignment_ok && word.plain() && is_name(&word.text) => {
                    // Where an assignment may stand, bash reads `NAME[` up to its matching
                    // `]` as one word: blanks, operators and quotes inside do not end it
                    // (`a[x<<1]=1`, `a[0;0]=1`). The subscript is arithmetic, expanded
                    // when the element is assigned: its substitutions run, also in single
                    // quotes.
                    let group = Group {
                        expands_single: true,
                        ..Group::entering(b'[', b']', true)
                    };
                    let Some(closed) = self.pattern_group(cx, &mut word, group) else {
                        break;
                    };
                    let rest = self.rest();
                    subscripted = closed && (rest.starts_with(b"=") || rest.starts_with(b"+="));
                }
                b'*' | b'?' | b'[' => {
                    word.glob |= byte != b'[' || self.rest()[1..].contains(&b']');
                    word.text.push(byte);
                    self.advance(1);
                }
                _ => {
                    // A run of bytes that mean nothing to the shell, taken at once.
                    let rest = self.rest();
                    let run = rest
                        .iter()
                        .position(|&b| !is_plain(b))
                        .unwrap_or(rest.len())
                        .max(1);
                    word.text.extend_from_slice(&rest[..run]);
                    self.advance(run);
                }
            }
            // The spelling with every `${x:-word}` standing as its word.
            match self.default_word.take() {
                Some(default) => {
                    let alternative = word
                        .alternative
                        .get_or_insert_with(|| word.text[..before].to_vec());
                    let start = alternative.len();
                    alternative.extend_from_slice(&default);
                    let end = alternative.len();
                    if byte == b'$' {
                        // Unquoted: its word is split at blanks.
                        word.fields_mut().alternative.push((start, end));
                    }
                }
                None => {
                    if let Some(alternative) = &mut word.alternative {
                        alternative.extend_from_slice(&word.text[before..]);
                    }
                }
            }
        }
        word
    }

    /// The words bash makes of the word written as `raw` when its brace expansion (which
    /// reads the word as written, with fewer quotes than the parser knows: see
    /// [`expand_braces_written`]) finds a list or a sequence in it. Each result is read
    /// again as a word, so the substitutions in it are split once per result, as bash runs
    /// them. None when the word has no `{`, or nothing that quotes or substitutes (then
    /// the word's own `brace` expansion is bash's), or nothing expands.
    pub(super) fn brace_words(&self, cx: &mut Context, raw: &[u8]) -> Option<Vec<Word>> {
        if !may_hide_braces(raw) {
            return None;
        }
        let results = match expand_braces_written(raw, &substitution_close) {
            Ok(results) => results,
            Err(_) => {
                if raw.contains(&b'`') {
                    // Backquotes may hide braces from the parser but not from brace
                    // expansion; past the limits which results run cannot be followed.
                    cx.refuse(|| {
                        format!(
                            "the word '{}' holds backquotes and a brace expansion too large \
                             to follow",
                            truncated(&String::from_utf8_lossy(raw))
                        )
                    });
                }
                return None;
            }
        };
        if results.len() == 1 && results[0] == raw {
            return None;
        }
        let size: usize = results.iter().map(Vec::len).sum();
        if cx.budget < size {
            give_up(cx);
            return None;
        }
        cx.budget -= size;
        let mut words = Vec::with_capacity(results.len());
        for result in &results {
            let mut parser = Parser::new(result, self.depth);
            parser.substitutions = self.substitutions;
            let mut word = parser.lex_word(cx);
            if parser.pos < result.len() {
                // A result whose quotes no longer pair up reads as more than one word to
                // the parser, but is one word to bash.
                cx.refuse(|| {
                    format!(
                        "brace expansion cuts the word '{}' into words whose quotes do not \
                         pair up",
                        truncated(&String::from_utf8_lossy(raw))
                    )
                });
                return None;
            }
            // Expanded already: bash expands braces once.
            word.brace = false;
            // An unquoted word that expands to nothing is no word at all.
            if !word.text.is_empty() || word.quoted {
                words.push(word);
            }
        }
        Some(words)
    }

    /// Stands a substitution that started at `start` in its word as `placeholder` (such as
    /// `$(...)`), unless it was empty (`$()`, ``` `` ```), which expands to nothing. Its
    /// commands are checked on their own; keeping only a placeholder keeps every spelling
    /// short however deep the nesting.
    pub(super) fn push_placeholder(&self, buf: &mut Vec<u8>, start: usize, placeholder: &[u8]) {
        let raw = self.src.get(start..self.pos).unwrap_or(&[]);
        // Only a short text can be empty; looking no further keeps deep nesting linear.
        let empty = raw.len() <= 16 && raw.iter().all(|b| b" \t\n$()`<>".contains(b));
        if !empty {
            buf.extend_from_slice(placeholder);
        }
    }

    /// Reads a single-quoted string after its opening quote.
    pub(super) fn single_quoted(&mut self, buf: &mut Vec<u8>) {
        match self.rest().iter().position(|&b| b == b'\'') {
            Some(offset) => {
                buf.extend_from_slice(&self.src[self.pos..self.pos + offset]);
                self.advance(offset + 1);
            }
            None => {
                buf.extend_from_slice(self.rest());
                self.pos = self.src.len();
            }
        }
    }

    /// Reads a double-quoted string after its opening quote, or a heredoc body (which has no
    /// closing quote) when `heredoc` is set, entering `$( )`, `${ }` and backticks. Returns
    /// whether some part of it is only known at run time.
    pub(super) fn double_quoted(
        &mut self,
        cx: &mut Context,
        buf: &mut Vec<u8>,
        heredoc: bool,
    ) -> bool {
        let mut dynamic = false;
        while let Some(byte) = self.peek() {
            match byte {
                b'"' if !heredoc => {
                    self.advance(1);
                    return dynamic;
                }
                b'\\' => match self.peek_at(1) {
                    Some(b'\n') => self.advance(2),
                    Some(next @ (b'$' | b'`' | b'\\')) => {
                        buf.push(next);
                        self.advance(2);
                    }
                    Some(b'"') if !heredoc => {
                        buf.push(b'"');
                        self.advance(2);
                    }
                    _ => {
                        buf.push(b'\\');
                        self.advance(1);
                    }
                },
                b'$' => {
                    dynamic |= matches!(
                        self.dollar(cx, buf, true),
                        Dollar::Variable | Dollar::Expanded
                    );
                }
                b'`' => {
                    self.backtick(cx, buf, true);
                    dynamic = true;
                }
                other => {
                    buf.push(other);
                    self.advance(1);
                }
            }
        }
        dynamic
    }

    /// Reads what follows a `$`.
    pub(super) fn dollar(
        &mut self,
        cx: &mut Context,
        buf: &mut Vec<u8>,
        in_quotes: bool,
    ) -> Dollar {
        // bash removes a backslash-newline before it reads what follows the `$`
        // (`$\<newline>'\x73udo'` is `$'\x73udo'`): the `$` is read as if it stood at the
        // last newline removed.
        let mut start = self.pos;
        while self.src.get(start + 1..start + 3) == Some(b"\\\n") {
            start += 2;
        }
        self.pos = start;
        match self.peek_at(1) {
            Some(b'(') => {
                if self.peek_at(2) == Some(b'(') && cx.budget > 0 {
                    self.advance(3);
                    if self.arithmetic(cx) != Arithmetic::Mismatched {
                        buf.extend_from_slice(b"$((...))");
                        return Dollar::Expanded;
                    }
                    // Not arithmetic after all: `$( (subshell) )`, whose text bash takes by
                    // matching parentheses (quotes paired, heredocs not read) and parses
                    // when it runs it.
                    let scanned = self.pos.saturating_sub(start);
                    if cx.budget < scanned {
                        self.give_up(cx);
                        return Dollar::Expanded;
                    }
                    cx.budget -= scanned;
                    self.pos = start + 2;
                    let closed = self.scan_group(cx, Group::skip(b'(', b')'));
                    let text = &self.src[start + 2..self.pos];
                    if closed {
                        self.advance(1);
                    }
                    sub_parse(cx, text, self.depth + 1);
                } else {
                    self.advance(2);
                    self.command_substitution(cx);
                }
                self.push_placeholder(buf, start, b"$(...)");
                Dollar::Expanded
            }
            Some(b'[') => {
                // `$[ expr ]`, the old spelling of `$(( expr ))`.
                self.advance(2);
                self.old_arithmetic(cx);
                buf.extend_from_slice(b"$[...]");
                Dollar::Expanded
            }
            Some(b'{') => {
                self.advance(2);
                if !in_quotes && self.rest().starts_with(b"IFS}") {
                    self.advance(4);
                    return Dollar::Blank;
                }
                self.braced_parameter(cx, in_quotes);
                let inner_end = self.pos.saturating_sub(1).max(start + 2);
                match parameter(&self.src[start + 2..inner_end], &cx.args) {
                    Parameter::Known(value) => {
                        buf.extend_from_slice(&value);
                        return Dollar::Known;
                    }
                    Parameter::Default(word) => self.default_word = Some(word),
                    Parameter::Unreadable(reason) => cx.refuse(|| reason.to_owned()),
                    Parameter::Unknown => {}
                }
                // A plain `${HOME}` stays as written so rules can name it; anything holding
                // an expansion of its own stands as `${...}`.
                let raw = &self.src[start..self.pos];
                if raw.len() <= MAX_PARAMETER && !raw[1..].iter().any(|b| b"$`".contains(b)) {
                    buf.push(b'$');
                    buf.extend_from_slice(&raw[1..]);
                } else {
                    buf.extend_from_slice(b"${...}");
                }
                Dollar::Expanded
            }
            Some(b'\'') if !in_quotes => {
                self.advance(2);
                self.ansi_c_quoted(buf);
                Dollar::Quoted
            }
            Some(b'"') if !in_quotes => {
                self.advance(2);
                self.double_quoted(cx, buf, false);
                Dollar::Quoted
            }
            Some(name @ (b'@' | b'*' | b'#' | b'0'..=b'9')) => {
                // The script's positional parameters are known: empty in a `-c` string
                // with no arguments, so `s$@udo` reads as `sudo` and `$0 -c X` runs X.
                self.advance(2);
                buf.extend(special_value(&[name], &cx.args).unwrap_or_default());
                Dollar::Known
            }
            _ => {
                let rest = self.src.get(start + 1..).unwrap_or(&[]);
                if !in_quotes
                    && rest.starts_with(b"IFS")
                    && !rest.get(3).is_some_and(|&b| is_name_byte(b))
                {
                    self.advance(4);
                    return Dollar::Blank;
                }
                buf.push(b'$');
                self.advance(1);
                if self.peek().is_some_and(is_name_byte) {
                    Dollar::Variable
                } else {
                    Dollar::Literal
                }
            }
        }
    }

    /// Reads a `$'...'` string after its opening `$'`, decoding its escapes.
    /// bash ends the string at an escaped NUL (`\0`, `\x00`, `\u0000`, `\c@`): what
    /// follows inside the quotes is dropped.
    pub(super) fn ansi_c_quoted(&mut self, out: &mut Vec<u8>) {
        let mut decoded = Vec::new();
        self.ansi_c_decode(&mut decoded);
        let end = decoded
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(decoded.len());
        out.extend_from_slice(&decoded[..end]);
    }

    fn ansi_c_decode(&mut self, buf: &mut Vec<u8>) {
        while let Some(byte) = self.peek() {
            self.advance(1);
            match byte {
                b'\'' => return,
                b'\\' => {
                    let Some(escaped) = self.peek() else {
                        buf.push(b'\\');
                        return;
                    };
                    self.advance(1);
                    match escaped {
                        b'n' => buf.push(b'\n'),
                        b't' => buf.push(b'\t'),
                        b'r' => buf.push(b'\r'),
                        b'a' => buf.push(0x07),
                        b'b' => buf.push(0x08),
                        b'e' | b'E' => buf.push(0x1b),
                        b'f' => buf.push(0x0c),
                        b'v' => buf.push(0x0b),
                        b'\\' | b'\'' | b'"' | b'?' => buf.push(escaped),
                        b'x' => match self.radix_digits(16, 2) {
                            Some(value) => buf.push(value as u8),
                            None => buf.extend_from_slice(b"\\x"),
                        },
                        b'u' | b'U' => {
                            let width = if escaped == b'u' { 4 } else { 8 };
                            match self.radix_digits(16, width).and_then(char::from_u32) {
                                Some(c) => {
                                    let mut utf8 = [0u8; 4];
                                    buf.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
                                }
                                None => buf.extend_from_slice(&[b'\\', escaped]),
                            }
                        }
                        b'0'..=b'7' => {
                            self.pos -= 1;
                            let value = self.radix_digits(8, 3).unwrap_or(0);
                            buf.push((value & 0xff) as u8);
                        }
                        b'c' => {
                            if let Some(control) = self.peek() {
                                self.advance(1);
                                buf.push(control & 0x1f);
                            }
                        }
                        other => buf.extend_from_slice(&[b'\\', other]),
                    }
                }
                other => buf.push(other),
            }
        }
    }

    /// Reads up to `max` digits in `radix`; None when there is none.
    pub(super) fn radix_digits(&mut self, radix: u32, max: usize) -> Option<u32> {
        let mut value: u32 = 0;
        let mut count = 0;
        while count < max {
            let Some(digit) = self.peek().and_then(|b| (b as char).to_digit(radix)) else {
                break;
            };
            value = value.saturating_mul(radix).saturating_add(digit);
            self.advance(1);
            count += 1;
        }
        (count > 0).then_some(value)
    }

    /// Reads a backtick substitution at its opening backtick and splits its body.
    pub(super) fn backtick(&mut self, cx: &mut Context, buf: &mut Vec<u8>, in_quotes: bool) {
        let start = self.pos;
        self.advance(1);
        let mut body = Vec::new();
        while let Some(byte) = self.peek() {
            match byte {
                b'`' => {
                    self.advance(1);
                    break;
                }
                b'\\' => match self.peek_at(1) {
                    Some(next @ (b'`' | b'\\' | b'$')) => {
                        body.push(next);
                        self.advance(2);
                    }
                    Some(b'"') if in_quotes => {
                        body.push(b'"');
                        self.advance(2);
                    }
                    _ => {
                        body.push(b'\\');
                        self.advance(1);
                    }
                },
                other => {
                    body.push(other);
                    self.advance(1);
                }
            }
        }
        self.push_placeholder(buf, start, b"`...`");
        if body.iter().any(|b| !b.is_ascii_whitespace()) {
            sub_parse(cx, &body, self.depth + 1);
        }
    }
}

/// The offset in `raw` (a heredoc body line as written) of the byte at `offset` in the
/// line bash compares, which has its backslash-newlines removed when `join` is set.
fn source_offset(raw: &[u8], offset: usize, join: bool) -> usize {
    if !join {
        return offset;
    }
    let mut at = 0;
    let mut seen = 0;
    while seen < offset && at < raw.len() {
        match (raw[at], raw.get(at + 1)) {
            (b'\\', Some(b'\n')) => at += 2,
            (b'\\', Some(_)) => {
                at += 2;
                seen += 2;
            }
            _ => {
                at += 1;
                seen += 1;
            }
        }
    }
    // A backslash-newline right after the delimiter is removed too.
    while raw.get(at..at + 2) == Some(b"\\\n") {
        at += 2;
    }
    at
}

/// Where the `$( )` whose text starts at `from` in `word` is closed: the offset of its `)`,
/// or the word's length when nothing closes it.
fn substitution_close(word: &[u8], from: usize) -> usize {
    let mut parser = Parser::new(word, 0);
    parser.pos = from;
    parser.scan_group(&mut Context::new(0), Group::skip(b'(', b')'));
    parser.pos
}
