//! The shell-aware splitter: it reads command text the way a POSIX shell (with the common
//! bash extensions) would, and lists every *simple command* the shell could run, so that a
//! deny rule such as `Bash(sudo:*)` is checked against each of them and not only against the
//! text as a whole.
//!
//! The model is a single left-to-right pass over the bytes. Words are built with quote
//! removal (`'...'`, `"..."`, `$'...'` with its escapes decoded, `$"..."`) and backslash
//! removal; commands are cut at `;` `&&` `||` `|` `|&` `&` and newlines; redirections and
//! their targets are dropped; comments are dropped; heredoc bodies are skipped as data (an
//! unquoted delimiter's body is still searched for `$( )` and backticks, which the shell
//! expands). Command substitution `$( )`, backticks, process substitution `<( )`/`>( )`,
//! `${ }` and arithmetic are entered where they appear, also inside double quotes.
//! Subshells, groups and the compound commands (`if`, `while`, `until`, `for`, `select`,
//! `case`, `[[ ]]`, `(( ))`, functions) are flattened: their keywords, `for` word lists and
//! `case` patterns are not commands, their bodies and conditions are. Each command is then
//! normalised: leading `VAR=value` words go, words are joined by single spaces, and
//! wrappers that run another program (`env`, `command`, `builtin`, `exec`, `nohup`, `nice`,
//! `timeout`, `time`, `stdbuf`, `xargs`, `setsid`, `ionice`, `taskset`, `busybox`, `sudo`,
//! `doas`) are peeled one at a time, every layer kept as a spelling; a program named by a
//! path is also spelled by its basename. The string given to `sh -c` (and `bash`, `dash`,
//! `zsh`, `ksh` ... `-c`), to `eval`, and the commands after `find -exec` are split in turn.
//! Unquoted brace lists (`{a,b}`) are also expanded and `$IFS` counts as a blank.
//!
//! Limits: this is a filter for mistakes, not a sandbox. Anything decided at run time
//! escapes it: a command name held in a variable (`$cmd`), built by a substitution
//! (`$(echo sudo)`), an alias, a function defined earlier, a script file, `source`, or a
//! program that runs commands itself (`python -c`, `make`, `ssh`). Nesting deeper than
//! [`MAX_DEPTH`] and text past the re-parse budget (four times the input) are not parsed
//! but cut crudely at every operator and bracket with quotes removed, which over-reports
//! rather than under-reports, and [`Split::gave_up`] says so; the policy refuses such text.
//! The pass never panics, and its time and the size of what it returns are linear in the
//! input (times a small constant).

use std::collections::HashSet;

/// How deep substitutions, quoted strings inside them and re-parsed `sh -c` strings may nest
/// before the rest of that construct is treated crudely.
pub const MAX_DEPTH: usize = 64;

/// How many wrapper layers (`nohup timeout 5 env X=1 ...`) are peeled off one command.
const MAX_LAYERS: usize = 16;

/// The longest `${...}` kept as written in its word.
const MAX_PARAMETER: usize = 256;

/// Words longer than this are not brace-expanded.
const MAX_BRACE_WORD: usize = 4096;

/// The most words one brace-expanded word may turn into.
const MAX_BRACE_RESULTS: usize = 64;

/// Shells whose `-c` string is split as shell text.
const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "csh", "tcsh", "fish",
];

/// One simple command the shell could run, in every spelling a rule is checked against.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SimpleCommand {
    /// Every spelling, outermost first: the command as written (normalised), each layer
    /// left after peeling a wrapper, and the basename spelling of any layer whose program is
    /// named by a path. Deny and ask rules are checked against all of them.
    pub forms: Vec<String>,
    /// The spellings of the program that finally runs once every wrapper is peeled (with
    /// and without its path). An allow rule must match one of these.
    pub innermost: Vec<String>,
    /// True when the innermost program is a shell given a `-c` string (or `eval`) whose text
    /// was split into commands of its own; those commands stand for it under `--allowlist`.
    pub transparent: bool,
}

/// The simple commands found in a text, and whether any part of it was only read crudely.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Split {
    /// Every simple command, in order of appearance (commands inside a substitution come
    /// before the command holding it).
    pub commands: Vec<SimpleCommand>,
    /// True when nesting deeper than [`MAX_DEPTH`] or re-parsing more than the budget
    /// allows made the splitter fall back to its crude reading for some part of the text.
    /// The commands listed are then an over-approximation, and may be incomplete.
    pub gave_up: bool,
}

/// Splits shell text into the simple commands it would run, each in all its spellings.
/// Accepts any text; never panics.
pub fn split(text: &str) -> Split {
    let allowance = text.len().saturating_mul(4).saturating_add(1 << 16);
    let mut cx = Context {
        out: Vec::new(),
        budget: allowance,
        crude_budget: allowance,
        gave_up: false,
    };
    let mut parser = Parser::new(text.as_bytes(), 0);
    parser.parse_list(&mut cx, Until::End);
    Split {
        commands: cx.out,
        gave_up: cx.gave_up,
    }
}

/// Every spelling of every simple command in `text`, without duplicates, in order of
/// appearance. A rule check applies to all of them.
pub fn simple_commands(text: &str) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for command in split(text).commands {
        for form in command.forms {
            if seen.insert(form.clone()) {
                out.push(form);
            }
        }
    }
    out
}

/// State shared by every parser working on one input.
struct Context {
    /// The commands found so far.
    out: Vec<SimpleCommand>,
    /// How many more bytes may be read a second time (backtick bodies, `sh -c` strings,
    /// `eval` arguments, `find -exec` commands, retried `((`).
    budget: usize,
    /// How many more bytes the crude fallback may read.
    crude_budget: usize,
    /// Whether the crude fallback was needed.
    gave_up: bool,
}

/// How an arithmetic expression after `((` ended.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Arithmetic {
    /// At its `))`.
    Closed,
    /// At a lone `)`: it was nested subshells, `( (...) )`, and must be read again as such.
    Mismatched,
    /// At the end of the input (a syntax error for the shell, which runs nothing).
    Unterminated,
}

/// Where a command list ends.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Until {
    /// At the end of the input.
    End,
    /// At the `)` closing a `$(`, `<(` or `>(`.
    Paren,
}

/// What the words being read mean, which depends on the compound command around them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Words of a simple command.
    Command,
    /// After `for`/`select`: the variable and word list, up to a separator or `do`.
    ForHeader,
    /// After `case`: the subject word, up to `in`.
    CaseSubject,
    /// A `case` pattern list, up to its `)`.
    CasePattern,
    /// After `function`: the function's name.
    FunctionName,
    /// Inside `[[ ... ]]`, where operators are words.
    Conditional,
}

/// The state of one command list being read.
struct ListState {
    words: Vec<Word>,
    mode: Mode,
    /// Open `case` commands whose `esac` has not been seen.
    cases: usize,
    /// Open subshell parentheses.
    parens: usize,
}

/// A word after quote removal.
#[derive(Default)]
struct Word {
    text: Vec<u8>,
    /// Some part was quoted or backslash-escaped.
    quoted: bool,
    /// Some part came from an expansion (`$(`, backticks, `${`, arithmetic).
    expanded: bool,
    /// The word is a `NAME=value` (or `NAME+=value`) assignment.
    assignment: bool,
    /// The word holds an unquoted `{`, so brace expansion may apply.
    brace: bool,
}

impl Word {
    fn plain(&self) -> bool {
        !self.quoted && !self.expanded
    }

    fn is(&self, keyword: &str) -> bool {
        self.plain() && self.text == keyword.as_bytes()
    }
}

/// A heredoc whose body starts after the next newline.
struct Heredoc {
    delimiter: Vec<u8>,
    strip_tabs: bool,
    expand: bool,
}

/// What reading a `$` produced.
enum Dollar {
    /// A plain `$` or a parameter kept as written.
    Literal,
    /// A substitution that was entered.
    Expanded,
    /// A quoted string (`$'...'`, `$"..."`).
    Quoted,
    /// An unquoted `$IFS`, which separates words.
    Blank,
}

struct Parser<'s> {
    src: &'s [u8],
    pos: usize,
    depth: usize,
    heredocs: Vec<Heredoc>,
}

impl<'s> Parser<'s> {
    fn new(src: &'s [u8], depth: usize) -> Self {
        Parser {
            src,
            pos: 0,
            depth,
            heredocs: Vec::new(),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.src.get(self.pos).copied()
    }

    fn peek_at(&self, ahead: usize) -> Option<u8> {
        self.src.get(self.pos.saturating_add(ahead)).copied()
    }

    fn advance(&mut self, by: usize) {
        self.pos = self.pos.saturating_add(by).min(self.src.len());
    }

    fn rest(&self) -> &'s [u8] {
        self.src.get(self.pos..).unwrap_or(&[])
    }

    /// Skips spaces, tabs and backslash-newline continuations.
    fn skip_blanks(&mut self) {
        loop {
            match self.peek() {
                Some(b' ' | b'\t') => self.advance(1),
                Some(b'\\') if self.peek_at(1) == Some(b'\n') => self.advance(2),
                _ => return,
            }
        }
    }

    /// Skips a comment up to (not including) its newline.
    fn skip_comment(&mut self) {
        match self.rest().iter().position(|&b| b == b'\n') {
            Some(offset) => self.advance(offset),
            None => self.pos = self.src.len(),
        }
    }

    /// Reads a command list up to `until`, emitting each simple command.
    fn parse_list(&mut self, cx: &mut Context, until: Until) {
        let mut st = ListState {
            words: Vec::new(),
            mode: Mode::Command,
            cases: 0,
            parens: 0,
        };
        loop {
            self.skip_blanks();
            let Some(byte) = self.peek() else {
                self.finish(cx, &mut st);
                return;
            };
            let before = self.pos;
            match byte {
                b'#' => self.skip_comment(),
                b'\n' => {
                    self.advance(1);
                    match st.mode {
                        Mode::Conditional | Mode::CaseSubject | Mode::CasePattern => {}
                        Mode::ForHeader | Mode::FunctionName => st.mode = Mode::Command,
                        Mode::Command => self.finish(cx, &mut st),
                    }
                    self.read_heredocs(cx);
                }
                b';' => {
                    if self.peek_at(1) == Some(b';') {
                        self.advance(2);
                        if self.peek() == Some(b'&') {
                            self.advance(1);
                        }
                        self.end_case_item(cx, &mut st);
                    } else if self.peek_at(1) == Some(b'&') {
                        self.advance(2);
                        self.end_case_item(cx, &mut st);
                    } else {
                        self.advance(1);
                        self.separator(cx, &mut st);
                    }
                }
                b'&' => match self.peek_at(1) {
                    Some(b'&') => {
                        self.advance(2);
                        self.operator(cx, &mut st, "&&");
                    }
                    Some(b'>') => {
                        self.advance(2);
                        if self.peek() == Some(b'>') {
                            self.advance(1);
                        }
                        self.redirect_target(cx);
                    }
                    _ => {
                        self.advance(1);
                        self.separator(cx, &mut st);
                    }
                },
                b'|' => match self.peek_at(1) {
                    Some(b'|') => {
                        self.advance(2);
                        self.operator(cx, &mut st, "||");
                    }
                    Some(b'&') => {
                        self.advance(2);
                        self.separator(cx, &mut st);
                    }
                    _ => {
                        self.advance(1);
                        match st.mode {
                            Mode::CasePattern => {}
                            _ => self.operator(cx, &mut st, "|"),
                        }
                    }
                },
                b'(' => self.open_paren(cx, &mut st),
                b')' => {
                    self.advance(1);
                    match st.mode {
                        Mode::Conditional => st.words.push(literal_word(")")),
                        Mode::CasePattern => st.mode = Mode::Command,
                        _ => {
                            self.finish(cx, &mut st);
                            st.mode = Mode::Command;
                            if st.parens > 0 {
                                st.parens -= 1;
                            } else if until == Until::Paren {
                                return;
                            }
                        }
                    }
                }
                b'<' | b'>' if self.peek_at(1) != Some(b'(') => {
                    if st.mode == Mode::Conditional {
                        self.advance(1);
                        st.words
                            .push(literal_word(if byte == b'<' { "<" } else { ">" }));
                    } else {
                        self.redirect(cx);
                    }
                }
                _ => {
                    let word = self.lex_word(cx);
                    let redirect_follows =
                        matches!(self.peek(), Some(b'<' | b'>')) && self.peek_at(1) != Some(b'(');
                    if !(redirect_follows && is_fd_prefix(&word)) {
                        self.word(&mut st, word);
                    }
                }
            }
            if self.pos == before {
                // Every branch consumes input; this guard keeps a missed case from looping.
                self.advance(1);
            }
        }
    }

    /// Handles `(`: a subshell, a function definition's `()`, or an arithmetic command.
    fn open_paren(&mut self, cx: &mut Context, st: &mut ListState) {
        match st.mode {
            Mode::Conditional => {
                self.advance(1);
                st.words.push(literal_word("("));
                return;
            }
            Mode::CasePattern | Mode::CaseSubject | Mode::FunctionName => {
                self.advance(1);
                return;
            }
            Mode::ForHeader | Mode::Command => {}
        }
        if self.peek_at(1) == Some(b'(') && st.words.is_empty() && cx.budget > 0 {
            // `(( expr ))` or `for (( ; ; ))`; when it is not closed by `))` it was nested
            // subshells after all, read again below. The budget pays for the second reading.
            let start = self.pos;
            self.advance(2);
            if self.arithmetic(cx) != Arithmetic::Mismatched {
                return;
            }
            cx.budget = cx.budget.saturating_sub(self.pos - start);
            self.pos = start;
        }
        self.advance(1);
        if st.mode == Mode::Command && !st.words.is_empty() {
            self.skip_blanks();
            if self.peek() == Some(b')') {
                // `name () body`: a function definition, not a command.
                self.advance(1);
                st.words.clear();
                return;
            }
            self.finish(cx, st);
        }
        st.mode = Mode::Command;
        st.parens += 1;
    }

    /// `&&`, `||` or `|`: an operator word inside `[[ ]]`, a separator elsewhere.
    fn operator(&mut self, cx: &mut Context, st: &mut ListState, text: &str) {
        if st.mode == Mode::Conditional {
            st.words.push(literal_word(text));
        } else {
            self.separator(cx, st);
        }
    }

    /// Ends the current simple command at `;`, `&` or a pipe.
    fn separator(&mut self, cx: &mut Context, st: &mut ListState) {
        match st.mode {
            Mode::CasePattern => {}
            _ => {
                self.finish(cx, st);
                st.mode = Mode::Command;
            }
        }
    }

    /// `;;`, `;&` or `;;&`: the end of a case item; a pattern list follows.
    fn end_case_item(&mut self, cx: &mut Context, st: &mut ListState) {
        self.finish(cx, st);
        st.mode = if st.cases > 0 {
            Mode::CasePattern
        } else {
            Mode::Command
        };
    }

    /// Files a word according to the mode and to the reserved words.
    fn word(&mut self, st: &mut ListState, word: Word) {
        match st.mode {
            Mode::Command => {
                if st.words.is_empty() && word.plain() {
                    match word.text.as_slice() {
                        b"if" | b"then" | b"elif" | b"else" | b"fi" | b"do" | b"done"
                        | b"while" | b"until" | b"{" | b"}" | b"!" | b"coproc" => return,
                        b"esac" => {
                            st.cases = st.cases.saturating_sub(1);
                            return;
                        }
                        b"for" | b"select" => {
                            st.mode = Mode::ForHeader;
                            return;
                        }
                        b"case" => {
                            st.mode = Mode::CaseSubject;
                            return;
                        }
                        b"function" => {
                            st.mode = Mode::FunctionName;
                            return;
                        }
                        b"[[" => st.mode = Mode::Conditional,
                        _ => {}
                    }
                }
                st.words.push(word);
            }
            Mode::ForHeader => {
                if word.is("do") {
                    st.mode = Mode::Command;
                }
            }
            Mode::CaseSubject => {
                if word.is("in") {
                    st.cases += 1;
                    st.mode = Mode::CasePattern;
                }
            }
            Mode::CasePattern => {
                if word.is("esac") {
                    st.cases = st.cases.saturating_sub(1);
                    st.mode = Mode::Command;
                }
            }
            Mode::FunctionName => st.mode = Mode::Command,
            Mode::Conditional => {
                let end = word.is("]]");
                st.words.push(word);
                if end {
                    st.mode = Mode::Command;
                }
            }
        }
    }

    /// Emits the words gathered so far as a simple command.
    fn finish(&mut self, cx: &mut Context, st: &mut ListState) {
        if st.words.is_empty() {
            return;
        }
        let words = std::mem::take(&mut st.words);
        self.emit_words(cx, words);
    }

    /// Reads a redirection operator at `<` or `>` and drops it with its target.
    fn redirect(&mut self, cx: &mut Context) {
        let first = self.peek();
        self.advance(1);
        if first == Some(b'<') {
            match self.peek() {
                Some(b'<') => {
                    self.advance(1);
                    match self.peek() {
                        Some(b'<') => self.advance(1),
                        Some(b'-') => {
                            self.advance(1);
                            self.heredoc(cx, true);
                            return;
                        }
                        _ => {
                            self.heredoc(cx, false);
                            return;
                        }
                    }
                }
                Some(b'&' | b'>') => self.advance(1),
                _ => {}
            }
        } else if matches!(self.peek(), Some(b'>' | b'|' | b'&')) {
            self.advance(1);
        }
        self.redirect_target(cx);
    }

    /// Reads (and drops) the word a redirection points at; expansions in it still count.
    fn redirect_target(&mut self, cx: &mut Context) {
        self.skip_blanks();
        if self.starts_word() {
            let _target = self.lex_word(cx);
        }
    }

    /// Reads a heredoc's delimiter; the body is skipped at the next newline.
    fn heredoc(&mut self, cx: &mut Context, strip_tabs: bool) {
        self.skip_blanks();
        if !self.starts_word() {
            return;
        }
        let word = self.lex_word(cx);
        self.heredocs.push(Heredoc {
            delimiter: word.text,
            strip_tabs,
            expand: !word.quoted,
        });
    }

    fn starts_word(&self) -> bool {
        match self.peek() {
            None => false,
            Some(b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')') => false,
            Some(b'<' | b'>') => self.peek_at(1) == Some(b'('),
            Some(_) => true,
        }
    }

    /// Skips the bodies of the heredocs started on the line just ended.
    fn read_heredocs(&mut self, cx: &mut Context) {
        let pending = std::mem::take(&mut self.heredocs);
        for heredoc in pending {
            let body_start = self.pos;
            let mut body_end = self.src.len();
            while self.pos < self.src.len() {
                let line_start = self.pos;
                let line_end = match self.rest().iter().position(|&b| b == b'\n') {
                    Some(offset) => line_start + offset,
                    None => self.src.len(),
                };
                let line = &self.src[line_start..line_end];
                let line = if heredoc.strip_tabs {
                    let tabs = line.iter().take_while(|&&b| b == b'\t').count();
                    &line[tabs..]
                } else {
                    line
                };
                self.pos = (line_end + 1).min(self.src.len());
                if line == heredoc.delimiter.as_slice() {
                    body_end = line_start;
                    break;
                }
            }
            let body = &self.src[body_start..body_end.max(body_start)];
            if heredoc.expand && body.iter().any(|&b| b == b'$' || b == b'`') {
                // An unquoted delimiter's body is expanded like a double-quoted string.
                if self.depth + 1 >= MAX_DEPTH {
                    crude(cx, body);
                } else {
                    let mut inner = Parser::new(body, self.depth + 1);
                    let mut scratch = Vec::new();
                    inner.double_quoted(cx, &mut scratch, true);
                }
            }
        }
    }

    /// Reads one word, entering every expansion in it.
    fn lex_word(&mut self, cx: &mut Context) -> Word {
        let mut word = Word::default();
        while let Some(byte) = self.peek() {
            match byte {
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
                    self.double_quoted(cx, &mut word.text, false);
                    word.quoted = true;
                }
                b'$' => match self.dollar(cx, &mut word.text, false) {
                    Dollar::Literal => {}
                    Dollar::Expanded => word.expanded = true,
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
                }
                b'=' => {
                    let name = word.text.strip_suffix(b"+").unwrap_or(&word.text);
                    // `NAME[subscript]=value` assigns to an array element.
                    let name = match name.iter().position(|&b| b == b'[') {
                        Some(open) if name.ends_with(b"]") => &name[..open],
                        _ => name,
                    };
                    if !word.assignment && word.plain() && is_name(name) {
                        word.assignment = true;
                        word.text.push(b'=');
                        self.advance(1);
                        if self.peek() == Some(b'(') {
                            // An array assignment: `NAME=(a b c)`.
                            self.advance(1);
                            self.balanced_with_expansions(cx);
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
                other => {
                    word.text.push(other);
                    self.advance(1);
                }
            }
        }
        word
    }

    /// Stands a substitution that started at `start` in its word as `placeholder` (such as
    /// `$(...)`), unless it was empty (`$()`, ``` `` ```), which expands to nothing. Its
    /// commands are checked on their own; keeping only a placeholder keeps every spelling
    /// short however deep the nesting.
    fn push_placeholder(&self, buf: &mut Vec<u8>, start: usize, placeholder: &[u8]) {
        let raw = self.src.get(start..self.pos).unwrap_or(&[]);
        // Only a short text can be empty; looking no further keeps deep nesting linear.
        let empty = raw.len() <= 16 && raw.iter().all(|b| b" \t\n$()`<>".contains(b));
        if !empty {
            buf.extend_from_slice(placeholder);
        }
    }

    /// Reads a single-quoted string after its opening quote.
    fn single_quoted(&mut self, buf: &mut Vec<u8>) {
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
    /// closing quote) when `heredoc` is set, entering `$( )`, `${ }` and backticks.
    fn double_quoted(&mut self, cx: &mut Context, buf: &mut Vec<u8>, heredoc: bool) {
        while let Some(byte) = self.peek() {
            match byte {
                b'"' if !heredoc => {
                    self.advance(1);
                    return;
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
                    self.dollar(cx, buf, true);
                }
                b'`' => self.backtick(cx, buf, true),
                other => {
                    buf.push(other);
                    self.advance(1);
                }
            }
        }
    }

    /// Reads what follows a `$`.
    fn dollar(&mut self, cx: &mut Context, buf: &mut Vec<u8>, in_quotes: bool) -> Dollar {
        let start = self.pos;
        match self.peek_at(1) {
            Some(b'(') => {
                if self.peek_at(2) == Some(b'(') && cx.budget > 0 {
                    self.advance(3);
                    if self.arithmetic(cx) != Arithmetic::Mismatched {
                        buf.extend_from_slice(b"$((...))");
                        return Dollar::Expanded;
                    }
                    // Not arithmetic after all: `$( (subshell) )`.
                    let scanned = self.pos.saturating_sub(start);
                    if cx.budget < scanned {
                        cx.gave_up = true;
                        self.pos = start + 2;
                        let inner_start = self.pos;
                        self.skip_balanced(b'(', b')');
                        crude(cx, &self.src[inner_start..self.pos]);
                        buf.extend_from_slice(b"$(...)");
                        return Dollar::Expanded;
                    }
                    cx.budget -= scanned;
                    self.pos = start + 2;
                } else {
                    self.advance(2);
                }
                self.command_substitution(cx);
                self.push_placeholder(buf, start, b"$(...)");
                Dollar::Expanded
            }
            Some(b'{') => {
                self.advance(2);
                if !in_quotes && self.rest().starts_with(b"IFS}") {
                    self.advance(4);
                    return Dollar::Blank;
                }
                self.braced_parameter(cx, in_quotes);
                // A plain `${HOME}` stays as written so rules can name it; anything holding
                // an expansion of its own stands as `${...}`.
                let raw = &self.src[start..self.pos];
                if raw.len() <= MAX_PARAMETER && !raw[1..].iter().any(|b| b"$`".contains(b)) {
                    buf.extend_from_slice(raw);
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
            Some(b'@' | b'*') => {
                // Empty in a `-c` string with no arguments; dropping them means `s$@udo`
                // still reads as `sudo`.
                self.advance(2);
                Dollar::Expanded
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
                Dollar::Literal
            }
        }
    }

    /// Reads a command list up to its `)` (after `$(`, `<(` or `>(`).
    fn command_substitution(&mut self, cx: &mut Context) {
        if self.depth + 1 >= MAX_DEPTH {
            let start = self.pos;
            self.skip_balanced(b'(', b')');
            crude(cx, &self.src[start..self.pos]);
            return;
        }
        self.depth += 1;
        self.parse_list(cx, Until::Paren);
        self.depth -= 1;
    }

    /// Reads an arithmetic expression after `((`, entering substitutions in it.
    fn arithmetic(&mut self, cx: &mut Context) -> Arithmetic {
        if self.depth + 1 >= MAX_DEPTH {
            let start = self.pos;
            self.skip_balanced(b'(', b')');
            crude(cx, &self.src[start..self.pos]);
            if self.peek() == Some(b')') {
                self.advance(1);
            }
            return Arithmetic::Closed;
        }
        self.depth += 1;
        let mut nesting = 0usize;
        let mut scratch = Vec::new();
        let ending = loop {
            match self.peek() {
                None => break Arithmetic::Unterminated,
                Some(b'(') => {
                    nesting += 1;
                    self.advance(1);
                }
                Some(b')') => {
                    if nesting == 0 {
                        if self.peek_at(1) == Some(b')') {
                            self.advance(2);
                            break Arithmetic::Closed;
                        }
                        break Arithmetic::Mismatched;
                    }
                    nesting -= 1;
                    self.advance(1);
                }
                Some(b'$') => {
                    self.dollar(cx, &mut scratch, true);
                }
                Some(b'`') => self.backtick(cx, &mut scratch, true),
                Some(b'"') => {
                    self.advance(1);
                    self.double_quoted(cx, &mut scratch, false);
                }
                Some(b'\'') => {
                    self.advance(1);
                    self.single_quoted(&mut scratch);
                }
                Some(b'\\') => self.advance(2),
                Some(_) => self.advance(1),
            }
            scratch.clear();
        };
        self.depth -= 1;
        ending
    }

    /// Reads `${ ... }` after its `${`, entering substitutions in it.
    fn braced_parameter(&mut self, cx: &mut Context, in_quotes: bool) {
        if self.depth + 1 >= MAX_DEPTH {
            let start = self.pos;
            self.skip_balanced(b'{', b'}');
            crude(cx, &self.src[start..self.pos]);
            return;
        }
        self.depth += 1;
        let mut nesting = 0usize;
        let mut scratch = Vec::new();
        while let Some(byte) = self.peek() {
            match byte {
                b'}' => {
                    self.advance(1);
                    if nesting == 0 {
                        break;
                    }
                    nesting -= 1;
                }
                b'{' => {
                    nesting += 1;
                    self.advance(1);
                }
                b'\\' => self.advance(2),
                b'\'' if !in_quotes => {
                    self.advance(1);
                    self.single_quoted(&mut scratch);
                }
                b'"' => {
                    self.advance(1);
                    self.double_quoted(cx, &mut scratch, false);
                }
                b'$' => {
                    self.dollar(cx, &mut scratch, in_quotes);
                }
                b'`' => self.backtick(cx, &mut scratch, in_quotes),
                _ => self.advance(1),
            }
            scratch.clear();
        }
        self.depth -= 1;
    }

    /// Reads the rest of a parenthesised group (after its `(`) up to the matching `)`,
    /// entering substitutions; used for array assignments.
    fn balanced_with_expansions(&mut self, cx: &mut Context) {
        let mut nesting = 0usize;
        let mut scratch = Vec::new();
        while let Some(byte) = self.peek() {
            match byte {
                b')' => {
                    self.advance(1);
                    if nesting == 0 {
                        return;
                    }
                    nesting -= 1;
                }
                b'(' => {
                    nesting += 1;
                    self.advance(1);
                }
                b'\\' => self.advance(2),
                b'\'' => {
                    self.advance(1);
                    self.single_quoted(&mut scratch);
                }
                b'"' => {
                    self.advance(1);
                    self.double_quoted(cx, &mut scratch, false);
                }
                b'$' => {
                    self.dollar(cx, &mut scratch, false);
                }
                b'`' => self.backtick(cx, &mut scratch, false),
                _ => self.advance(1),
            }
            scratch.clear();
        }
    }

    /// Skips to the `close` matching an `open` already consumed, minding quotes and
    /// backslashes but nothing else. Used where nesting is too deep to parse.
    fn skip_balanced(&mut self, open: u8, close: u8) {
        let mut nesting = 1usize;
        while let Some(byte) = self.peek() {
            match byte {
                b'\\' => self.advance(2),
                b'\'' => {
                    self.advance(1);
                    let mut sink = Vec::new();
                    self.single_quoted(&mut sink);
                }
                b'"' => {
                    self.advance(1);
                    while let Some(inner) = self.peek() {
                        self.advance(if inner == b'\\' { 2 } else { 1 });
                        if inner == b'"' {
                            break;
                        }
                    }
                }
                b if b == open => {
                    nesting += 1;
                    self.advance(1);
                }
                b if b == close => {
                    self.advance(1);
                    nesting -= 1;
                    if nesting == 0 {
                        return;
                    }
                }
                _ => self.advance(1),
            }
        }
    }

    /// Reads a `$'...'` string after its opening `$'`, decoding its escapes.
    fn ansi_c_quoted(&mut self, buf: &mut Vec<u8>) {
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
    fn radix_digits(&mut self, radix: u32, max: usize) -> Option<u32> {
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
    fn backtick(&mut self, cx: &mut Context, buf: &mut Vec<u8>, in_quotes: bool) {
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

    /// Turns the words of one simple command into a [`SimpleCommand`] (and, through
    /// `sh -c`, `eval` and `find -exec`, into further commands).
    fn emit_words(&mut self, cx: &mut Context, words: Vec<Word>) {
        let words: Vec<Word> = words.into_iter().skip_while(|w| w.assignment).collect();
        if words.is_empty() {
            return;
        }
        let texts: Vec<String> = words
            .iter()
            .map(|w| String::from_utf8_lossy(&w.text).into_owned())
            .collect();
        if words.iter().any(|w| w.brace) {
            let mut expanded = Vec::new();
            for (word, text) in words.iter().zip(&texts) {
                if word.brace {
                    expanded.extend(expand_braces(text));
                } else {
                    expanded.push(text.clone());
                }
            }
            if expanded != texts {
                let written = texts.join(" ");
                emit_texts(cx, expanded, self.depth, Some(written));
                return;
            }
        }
        emit_texts(cx, texts, self.depth, None);
    }
}

/// Splits `text` (the body of backticks, a `-c` string, `eval`'s arguments) as shell text of
/// its own, or crudely when nesting or the re-parse budget runs out.
fn sub_parse(cx: &mut Context, text: &[u8], depth: usize) {
    if depth >= MAX_DEPTH || cx.budget < text.len() {
        crude(cx, text);
        return;
    }
    cx.budget -= text.len();
    let mut parser = Parser::new(text, depth);
    parser.parse_list(cx, Until::End);
}

/// The conservative reading used where the parser gives up: quotes and backslashes are
/// removed and the text is cut at every operator and bracket; each distinct piece is a
/// command. Past its own budget it lists nothing more (the text is marked as given up on
/// either way).
fn crude(cx: &mut Context, text: &[u8]) {
    cx.gave_up = true;
    if cx.crude_budget < text.len() {
        cx.crude_budget = 0;
        return;
    }
    cx.crude_budget -= text.len();
    let mut seen = HashSet::new();
    for piece in text.split(|b| b";&|(){}<>\n`".contains(b)) {
        let cleaned: Vec<u8> = piece
            .iter()
            .copied()
            .filter(|b| !matches!(b, b'\'' | b'"' | b'\\'))
            .collect();
        if !seen.insert(cleaned.clone()) {
            continue;
        }
        let cleaned = String::from_utf8_lossy(&cleaned);
        let words: Vec<String> = cleaned
            .split_whitespace()
            .skip_while(|w| {
                matches!(
                    *w,
                    "if" | "then"
                        | "elif"
                        | "else"
                        | "fi"
                        | "do"
                        | "done"
                        | "while"
                        | "until"
                        | "!"
                        | "case"
                        | "esac"
                        | "for"
                        | "in"
                ) || w
                    .split_once('=')
                    .is_some_and(|(name, _)| is_name(name.as_bytes()))
            })
            .map(str::to_owned)
            .collect();
        if !words.is_empty() {
            emit_texts(cx, words, MAX_DEPTH, None);
        }
    }
}

/// Builds the spellings of one simple command from its words, peeling wrappers, and splits
/// the scripts it hands to a shell. `written` is an extra spelling (the text before brace
/// expansion). At `MAX_DEPTH` nothing is split any further.
fn emit_texts(cx: &mut Context, words: Vec<String>, depth: usize, written: Option<String>) {
    let mut layers = vec![words];
    while layers.len() < MAX_LAYERS {
        match layers.last().and_then(|layer| peel(layer)) {
            Some(next) if !next.is_empty() => layers.push(next),
            _ => break,
        }
    }
    let mut command = SimpleCommand::default();
    if let Some(written) = written {
        command.forms.push(written);
    }
    for layer in &layers {
        for spelling in spellings(layer) {
            if !command.forms.contains(&spelling) {
                command.forms.push(spelling);
            }
        }
    }
    let innermost = layers.last().map(|l| spellings(l)).unwrap_or_default();
    command.innermost = innermost;
    let mut scripts = Vec::new();
    let mut execs = Vec::new();
    if depth < MAX_DEPTH {
        for (index, layer) in layers.iter().enumerate() {
            if let Some(script) = shell_script(layer) {
                if index + 1 == layers.len() {
                    command.transparent = true;
                }
                scripts.push(script);
            }
            execs.extend(find_exec_commands(layer));
        }
    }
    cx.out.push(command);
    for script in scripts {
        sub_parse(cx, script.as_bytes(), depth + 1);
    }
    for exec in execs {
        let size: usize = exec.iter().map(|w| w.len() + 1).sum();
        if cx.budget < size {
            cx.gave_up = true;
            continue;
        }
        cx.budget -= size;
        emit_texts(cx, exec, depth + 1, None);
    }
}

/// The command joined by single spaces, and with its program's basename when it is a path.
fn spellings(words: &[String]) -> Vec<String> {
    let mut out = vec![words.join(" ")];
    if let Some(first) = words.first() {
        let base = basename(first);
        if base != first && !base.is_empty() {
            let mut rest = vec![base.to_owned()];
            rest.extend(words.iter().skip(1).cloned());
            out.push(rest.join(" "));
        }
    }
    out
}

fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// For a shell given `-c`, its command string; for `eval`, its arguments joined.
fn shell_script(words: &[String]) -> Option<String> {
    let name = basename(words.first()?);
    if name == "eval" {
        let args: Vec<&str> = words
            .iter()
            .skip(1)
            .map(String::as_str)
            .skip_while(|w| *w == "--")
            .collect();
        return (!args.is_empty()).then(|| args.join(" "));
    }
    if !SHELLS.contains(&name) {
        return None;
    }
    let mut has_c = false;
    let mut index = 1;
    while index < words.len() {
        let word = words[index].as_str();
        if word == "--" || word == "-" {
            index += 1;
            break;
        }
        if let Some(long) = word.strip_prefix("--") {
            index += if matches!(long, "rcfile" | "init-file") {
                2
            } else {
                1
            };
            continue;
        }
        if word.len() > 1 && (word.starts_with('-') || word.starts_with('+')) {
            let flags = &word[1..];
            if flags.contains('c') {
                has_c = true;
            }
            index += if flags.ends_with('o') || flags.ends_with('O') {
                2
            } else {
                1
            };
            continue;
        }
        break;
    }
    if has_c {
        words.get(index).cloned()
    } else {
        None
    }
}

/// The commands `find` runs with `-exec`, `-execdir`, `-ok` and `-okdir`.
fn find_exec_commands(words: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    if words.first().map(|w| basename(w)) != Some("find") {
        return out;
    }
    let mut index = 1;
    while index < words.len() {
        if matches!(
            words[index].as_str(),
            "-exec" | "-execdir" | "-ok" | "-okdir"
        ) {
            let mut command = Vec::new();
            index += 1;
            while index < words.len() && !matches!(words[index].as_str(), ";" | "+") {
                command.push(words[index].clone());
                index += 1;
            }
            if !command.is_empty() {
                out.push(command);
            }
        }
        index += 1;
    }
    out
}

/// How a wrapper's own options are read.
struct Options {
    /// Short options that take an argument (attached or as the next word).
    short_with_argument: &'static [u8],
    /// Short options whose optional argument can only be attached.
    short_optional: &'static [u8],
    /// Long options that take the next word as argument when given without `=`.
    long_with_argument: &'static [&'static str],
    /// Operands the wrapper takes before the command (the duration of `timeout`).
    operands: usize,
    /// Whether `NAME=value` words may follow the options (`env`, `sudo`).
    assignments: bool,
}

const NO_OPTIONS: Options = Options {
    short_with_argument: b"",
    short_optional: b"",
    long_with_argument: &[],
    operands: 0,
    assignments: false,
};

/// The words a wrapper runs, or None when the command is not a wrapper.
fn peel(words: &[String]) -> Option<Vec<String>> {
    let name = basename(words.first()?);
    let options = match name {
        "env" => Options {
            short_with_argument: b"uCSP",
            long_with_argument: &["unset", "chdir", "split-string"],
            assignments: true,
            ..NO_OPTIONS
        },
        "command" | "builtin" | "nohup" | "setsid" | "busybox" => NO_OPTIONS,
        "exec" => Options {
            short_with_argument: b"a",
            ..NO_OPTIONS
        },
        "nice" => Options {
            short_with_argument: b"n",
            long_with_argument: &["adjustment"],
            ..NO_OPTIONS
        },
        "timeout" => Options {
            short_with_argument: b"sk",
            long_with_argument: &["signal", "kill-after"],
            operands: 1,
            ..NO_OPTIONS
        },
        "time" => Options {
            short_with_argument: b"fo",
            long_with_argument: &["format", "output"],
            ..NO_OPTIONS
        },
        "stdbuf" => Options {
            short_with_argument: b"oei",
            long_with_argument: &["output", "error", "input"],
            ..NO_OPTIONS
        },
        "xargs" => Options {
            short_with_argument: b"adEILnPs",
            short_optional: b"eil",
            long_with_argument: &[
                "arg-file",
                "delimiter",
                "max-args",
                "max-procs",
                "max-chars",
                "process-slot-var",
            ],
            ..NO_OPTIONS
        },
        "ionice" => Options {
            short_with_argument: b"cnpPu",
            long_with_argument: &["class", "classdata", "pid", "pgid", "uid"],
            ..NO_OPTIONS
        },
        "taskset" => Options {
            operands: 1,
            ..NO_OPTIONS
        },
        "sudo" => Options {
            short_with_argument: b"CDghpRrTtUu",
            long_with_argument: &[
                "close-from",
                "chdir",
                "group",
                "host",
                "prompt",
                "chroot",
                "role",
                "command-timeout",
                "type",
                "other-user",
                "user",
            ],
            assignments: true,
            ..NO_OPTIONS
        },
        "doas" => Options {
            short_with_argument: b"uC",
            ..NO_OPTIONS
        },
        _ => return None,
    };
    let mut split_string: Option<String> = None;
    let mut index = 1;
    while index < words.len() {
        let word = words[index].as_str();
        if word == "--" {
            index += 1;
            break;
        }
        if word == "-" && name == "env" {
            index += 1;
            continue;
        }
        if let Some(long) = word.strip_prefix("--") {
            let (long_name, value) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_owned())),
                None => (long, None),
            };
            let takes_next = value.is_none() && options.long_with_argument.contains(&long_name);
            let value = if takes_next {
                words.get(index + 1).cloned()
            } else {
                value
            };
            if name == "env" && long_name == "split-string" {
                split_string = value;
            }
            index += if takes_next { 2 } else { 1 };
            continue;
        }
        if word.len() > 1 && word.starts_with('-') {
            let flags = &word.as_bytes()[1..];
            let mut takes_next = false;
            for (at, flag) in flags.iter().enumerate() {
                if options.short_optional.contains(flag) {
                    break;
                }
                if options.short_with_argument.contains(flag) {
                    let attached = word.get(at + 2..).unwrap_or("");
                    if attached.is_empty() {
                        takes_next = true;
                    }
                    if name == "env" && *flag == b'S' {
                        split_string = if attached.is_empty() {
                            words.get(index + 1).cloned()
                        } else {
                            Some(attached.to_owned())
                        };
                    }
                    break;
                }
            }
            index += if takes_next { 2 } else { 1 };
            continue;
        }
        break;
    }
    if options.assignments {
        while index < words.len() && is_assignment(&words[index]) {
            index += 1;
        }
    }
    index = index.saturating_add(options.operands);
    let mut rest: Vec<String> = Vec::new();
    if let Some(split_string) = split_string {
        rest.extend(split_string.split_whitespace().map(str::to_owned));
    }
    rest.extend(words.iter().skip(index).cloned());
    Some(rest)
}

/// Expands the unquoted brace lists of one word (`{a,b}c` → `ac bc`), within limits.
fn expand_braces(word: &str) -> Vec<String> {
    if word.len() > MAX_BRACE_WORD {
        return vec![word.to_owned()];
    }
    let mut done = Vec::new();
    let mut pending = vec![word.to_owned()];
    let mut rounds = 0;
    while let Some(current) = pending.pop() {
        rounds += 1;
        if rounds > MAX_BRACE_RESULTS * 4 || done.len() + pending.len() >= MAX_BRACE_RESULTS {
            done.push(current);
            continue;
        }
        match brace_list(&current) {
            Some((open, commas, close)) => {
                let prefix = &current[..open];
                let suffix = &current[close + 1..];
                let mut bounds = vec![open];
                bounds.extend(commas);
                bounds.push(close);
                for pair in bounds.windows(2).rev() {
                    let alternative = &current[pair[0] + 1..pair[1]];
                    pending.push(format!("{prefix}{alternative}{suffix}"));
                }
            }
            None => done.push(current),
        }
    }
    done
}

/// The first `{...}` in `word` holding a comma at its own level: its `{`, its commas and its
/// `}` (byte offsets; all ASCII, so they are character boundaries).
fn brace_list(word: &str) -> Option<(usize, Vec<usize>, usize)> {
    let mut stack: Vec<(usize, Vec<usize>)> = Vec::new();
    for (at, byte) in word.bytes().enumerate() {
        match byte {
            b'{' => stack.push((at, Vec::new())),
            b',' => {
                if let Some((_, commas)) = stack.last_mut() {
                    commas.push(at);
                }
            }
            b'}' => {
                if let Some((open, commas)) = stack.pop() {
                    if !commas.is_empty() {
                        return Some((open, commas, at));
                    }
                }
            }
            _ => {}
        }
    }
    None
}

fn literal_word(text: &str) -> Word {
    Word {
        text: text.as_bytes().to_vec(),
        quoted: true,
        ..Word::default()
    }
}

fn is_fd_prefix(word: &Word) -> bool {
    if !word.plain() || word.text.is_empty() {
        return false;
    }
    if word.text.iter().all(u8::is_ascii_digit) {
        return true;
    }
    word.text
        .strip_prefix(b"{")
        .and_then(|t| t.strip_suffix(b"}"))
        .is_some_and(is_name)
}

fn is_name_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

fn is_name(text: &[u8]) -> bool {
    match text.first() {
        Some(first) if first.is_ascii_alphabetic() || *first == b'_' => {
            text.iter().all(|&b| is_name_byte(b))
        }
        _ => false,
    }
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=')
        .is_some_and(|(name, _)| is_name(name.as_bytes()))
}
