//! The grammar: command lists, separators, compound commands and their reserved words,
//! redirections and heredoc operators, and the words of each simple command handed on to
//! be expanded and emitted.

use super::directory::{directory_change, Change};
use super::expand::expand_braces;
use super::lexer::Heredoc;
use super::scan::Arithmetic;
use std::cell::Cell;
use std::rc::Rc;

use super::wrappers::{assignment, RESERVED};
use super::{
    emit_texts, is_fd_prefix, literal_word, sub_parse, Context, Input, Names, Parser, Word,
};
use crate::policy::options::{is_rooted, join_path};

/// Reserved words that begin a compound command.
const COMPOUND_STARTS: &[&[u8]] = &[
    b"{", b"while", b"until", b"if", b"for", b"select", b"case", b"[[", b"((",
];

/// The longest directory followed; past it, `cd a; cd a; ...` makes the
/// directory unknown rather than a copy of a long path for every command.
const MAX_DIR: usize = 1024;

/// Where a command list ends.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Until {
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
    /// After the reserved word `time`: its `-p` option, then a command.
    Time,
    /// After `coproc`: a name when a compound command follows it, else the command.
    Coproc,
}

/// The state of one command list being read.
struct ListState {
    words: Vec<Word>,
    mode: Mode,
    /// Open `case` commands whose `esac` has not been seen.
    cases: usize,
    /// Open subshell parentheses.
    parens: usize,
    /// A redirection came before the first word, so reserved words are plain words now.
    redirected: bool,
    /// The command follows a `|`: `time` and `!` are reserved only at a pipeline's start.
    piped: bool,
    /// What the current command reads on standard input, if a heredoc or here-string.
    stdin: Stdin,
    /// The command follows `coproc` and is a simple command.
    coproc: bool,
    /// The compound commands and subshells open around the command, innermost last.
    frames: Vec<Frame>,
    /// The directory before the last command's `cd`, which a `|` after it undoes (it ran
    /// in a subshell).
    undo: Option<Option<String>>,
    /// The directory before the first `cd` of the and-or list being read, which a `&`
    /// after it undoes (the whole list ran in a subshell).
    list_undo: Option<Option<String>>,
    /// A compound command inside which the directory changed has ended: it is unknown.
    forget_dir: bool,
    /// The last thing read was a redirection (and its target).
    redirection_last: bool,
    /// How many of `frames`, from the outermost, hold a shell that reads the standard input
    /// the text has: a heredoc or here-string given to such a frame is its script.
    readers: usize,
    /// The compound command or subshell just closed holds such a shell, so a heredoc or
    /// here-string after it (`{ sh; } <<< x`) is that shell's script.
    closed_reader: bool,
}

/// A compound command or subshell open around the command being read.
enum Frame {
    /// `if`, `while`, `until`, `for`, `select`, `case` or `{`; true once the directory
    /// changed inside it, which makes it unknown after it (how often its parts ran is
    /// not known).
    Compound(bool),
    /// `(`, with the directory it started in, which is the directory again after it.
    Subshell(Option<String>),
}

impl ListState {
    /// Whether bash brace-expands `word` where it stands: a command's words but the
    /// assignments before its name, and the words of a `for` list.
    fn brace_expands(&self, word: &Word) -> bool {
        match self.mode {
            Mode::Command | Mode::Time | Mode::Coproc => {
                !(word.assignment && self.words.iter().all(|w| w.assignment))
            }
            Mode::ForHeader => true,
            Mode::CaseSubject | Mode::CasePattern | Mode::FunctionName | Mode::Conditional => false,
        }
    }

    /// After `time` or `coproc`, a redirection ends their options and name: the next word
    /// is the command (`time </dev/null -p x` runs `-p`).
    fn after_redirection(&mut self) {
        if matches!(self.mode, Mode::Time | Mode::Coproc) {
            self.mode = Mode::Command;
        }
    }
}

/// The heredocs and here-strings of the command being read.
#[derive(Default)]
struct Stdin {
    /// Flags to raise on the command's heredocs if it turns out to be a shell.
    heredocs: Vec<Rc<Cell<bool>>>,
    /// The here-strings (`<<< word`), after quote removal.
    strings: Vec<Vec<u8>>,
    /// How the last one was written, for the command's spelling (`<<EOF`, `<<<`).
    marker: Option<String>,
    /// Standard input is a process substitution (`sh < <(curl x)`): a pipe.
    process: bool,
}

impl<'s> Parser<'s> {
    /// Reads a command list up to `until`, emitting each simple command. It runs in the
    /// directory of the text around it, and its own changes end with it: it is a
    /// substitution's or a shell's script, or the text itself.
    pub(super) fn parse_list(&mut self, cx: &mut Context, until: Until) {
        let outer = (cx.dir.clone(), cx.dir_generation);
        self.parse_commands(cx, until);
        cx.restore_dir(outer);
    }

    fn parse_commands(&mut self, cx: &mut Context, until: Until) {
        let mut st = ListState {
            words: Vec::new(),
            mode: Mode::Command,
            cases: 0,
            parens: 0,
            redirected: false,
            piped: false,
            stdin: Stdin::default(),
            coproc: false,
            frames: Vec::new(),
            undo: None,
            list_undo: None,
            forget_dir: false,
            redirection_last: false,
            readers: 0,
            closed_reader: false,
        };
        loop {
            if cx.refusal.is_some() {
                // The text is refused whatever follows: reading on would only cost time.
                self.pos = self.src.len();
                return;
            }
            self.skip_blanks();
            let Some(byte) = self.peek() else {
                self.finish(cx, &mut st);
                cx.unclosed |= until == Until::Paren;
                return;
            };
            let before = self.pos;
            let after_redirection = std::mem::take(&mut st.redirection_last);
            match byte {
                b'#' => self.skip_comment(),
                b'\n' => {
                    self.advance(1);
                    match st.mode {
                        Mode::Conditional | Mode::CaseSubject | Mode::CasePattern => {}
                        Mode::ForHeader | Mode::FunctionName => st.mode = Mode::Command,
                        Mode::Command | Mode::Time | Mode::Coproc => {
                            // A newline right after `|` goes on with the pipeline: the
                            // command on the next line reads the pipe.
                            let piped = st.piped && st.words.is_empty();
                            // After `&&` or `||` the list goes on on the next line.
                            let ends_list = !st.words.is_empty();
                            self.finish(cx, &mut st);
                            if ends_list {
                                st.list_undo = None;
                            }
                            st.mode = Mode::Command;
                            st.piped |= piped;
                        }
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
                        st.list_undo = None;
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
                        st.redirection_last = true;
                        st.redirected |= st.words.is_empty();
                        st.after_redirection();
                    }
                    _ => {
                        self.advance(1);
                        self.separator(cx, &mut st);
                        if let Some(before) = st.list_undo.take() {
                            cx.set_dir(before);
                        }
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
                        undo_directory(cx, &mut st);
                        st.piped = st.mode == Mode::Command;
                    }
                    _ => {
                        self.advance(1);
                        match st.mode {
                            Mode::CasePattern => {}
                            _ => {
                                self.operator(cx, &mut st, "|");
                                undo_directory(cx, &mut st);
                                st.piped = st.mode == Mode::Command;
                            }
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
                                while let Some(frame) = st.frames.pop() {
                                    if let Frame::Subshell(dir) = frame {
                                        cx.set_dir(dir);
                                        break;
                                    }
                                }
                                closed_frames(&mut st);
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
                        st.redirected |= st.words.is_empty();
                        st.after_redirection();
                        self.redirect(cx, &mut st);
                        st.redirection_last = true;
                    }
                }
                _ => {
                    let start = self.pos;
                    // bash reads `NAME[...]` as a subscript only where an assignment may
                    // stand: first, or after assignments but not right after a
                    // redirection's target (`X=1 >f a[x;y]` is `a[x` then `y]`).
                    self.assignment_ok =
                        matches!(st.mode, Mode::Command | Mode::Time | Mode::Coproc)
                            && (st.words.is_empty()
                                || !after_redirection && st.words.iter().all(|w| w.assignment));
                    let word = self.lex_word(cx);
                    if word.text.is_empty() && vanishes(&self.src[start..self.pos]) {
                        // `"$@"` with no arguments is no word at all.
                        continue;
                    }
                    let redirect_follows =
                        matches!(self.peek(), Some(b'<' | b'>')) && self.peek_at(1) != Some(b'(');
                    if !(redirect_follows && is_fd_prefix(&word)) {
                        let words = st
                            .brace_expands(&word)
                            .then(|| self.brace_words(cx, &self.src[start..self.pos]))
                            .flatten();
                        match words {
                            Some(words) => self.brace_expanded(&mut st, words),
                            None => self.word(&mut st, word),
                        }
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
            Mode::ForHeader | Mode::Command | Mode::Time | Mode::Coproc => {}
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
        if matches!(st.mode, Mode::Time | Mode::Coproc) {
            st.mode = Mode::Command;
            st.coproc = false;
        }
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
        st.frames.push(Frame::Subshell(cx.dir.clone()));
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
        st.list_undo = None;
        st.mode = if st.cases > 0 {
            Mode::CasePattern
        } else {
            Mode::Command
        };
    }

    /// Files the words bash's brace expansion made of one word: arguments of the command,
    /// or words of a `for` list (data, whose substitutions were read with them).
    fn brace_expanded(&mut self, st: &mut ListState, words: Vec<Word>) {
        match st.mode {
            Mode::ForHeader => {}
            // Reserved words are known before expansion: none of these is one.
            Mode::Command => st.words.extend(words),
            _ => {
                for word in words {
                    self.word(st, word);
                }
            }
        }
    }

    /// Files a word according to the mode and to the reserved words.
    fn word(&mut self, st: &mut ListState, word: Word) {
        match st.mode {
            Mode::Command => {
                if st.words.is_empty() && !st.redirected && word.plain() {
                    match word.text.as_slice() {
                        b"if" | b"while" | b"until" | b"{" => {
                            st.frames.push(Frame::Compound(false));
                            return;
                        }
                        b"fi" | b"done" | b"}" => {
                            close_compound(st);
                            return;
                        }
                        b"then" | b"elif" | b"else" | b"do" => return,
                        b"!" if !st.piped => return,
                        b"time" if !st.piped => {
                            st.mode = Mode::Time;
                            return;
                        }
                        b"coproc" => {
                            st.mode = Mode::Coproc;
                            st.coproc = true;
                            return;
                        }
                        b"esac" => {
                            st.cases = st.cases.saturating_sub(1);
                            close_compound(st);
                            return;
                        }
                        b"for" | b"select" => {
                            st.frames.push(Frame::Compound(false));
                            st.mode = Mode::ForHeader;
                            return;
                        }
                        b"case" => {
                            st.frames.push(Frame::Compound(false));
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
                    close_compound(st);
                }
            }
            Mode::FunctionName => st.mode = Mode::Command,
            Mode::Time => {
                if !(word.is("-p") || word.is("--")) {
                    st.mode = Mode::Command;
                    self.word(st, word);
                }
            }
            Mode::Coproc => {
                st.mode = Mode::Command;
                let keyword = word.plain() && COMPOUND_STARTS.contains(&word.text.as_slice());
                if keyword || !self.compound_follows() {
                    st.coproc = !keyword;
                    self.word(st, word);
                } else {
                    st.coproc = false;
                }
            }
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
        let redirected = std::mem::take(&mut st.redirected);
        if let Some(first) = st
            .words
            .first()
            .filter(|_| redirected && self.substitutions > 0)
        {
            if first.plain() && RESERVED.iter().any(|r| r.as_bytes() == first.text) {
                // bash reads a `$( )` a second time from its own printing of it, which puts
                // redirections last: `$(</dev/null ! time x)` runs `x`.
                cx.refuse(|| {
                    format!(
                        "the reserved word '{}' follows a redirection inside `$( )`, which \
                         bash reads a second time with the redirection moved",
                        String::from_utf8_lossy(&first.text)
                    )
                });
            }
        }
        let piped = std::mem::take(&mut st.piped);
        let stdin = std::mem::take(&mut st.stdin);
        let coproc = std::mem::take(&mut st.coproc);
        let closed_reader = std::mem::take(&mut st.closed_reader);
        st.undo = None;
        if std::mem::take(&mut st.forget_dir) {
            cx.set_dir(None);
        }
        // `exec <<< x` gives every command after it that standard input, so a shell started
        // later reads it: it is split as a script at once.
        let exec_only = st.words.len() == 1 && st.words[0].is("exec");
        if (st.words.is_empty() && closed_reader) || exec_only {
            // A heredoc or here-string given to a compound command or subshell is read by
            // the shell inside it (`{ sh; } <<< x`, `( sh ) <<EOF`).
            self.feed_shell(cx, &stdin);
        }
        if st.words.is_empty() {
            return;
        }
        let mut words = std::mem::take(&mut st.words);
        // A command in a pipeline or after `coproc` runs in a subshell: a `cd` there
        // changes nothing after it.
        let change = directory_change(&words).filter(|_| !(piped || coproc));
        let input = match (&stdin.marker, piped || stdin.process) {
            (Some(marker), _) => Input::Here(marker.clone()),
            (None, true) => Input::Pipe,
            (None, false) => Input::Inherited,
        };
        let coproc = coproc && self.substitutions > 0;
        let keyed = repeat_key(cx, &words, &input, coproc);
        let known = keyed.then(|| cx.seen.get(cx.key.as_slice()).copied());
        let reads_stdin = match known.flatten() {
            // The same command read again (`$(a)$(a)...`, a script's repeated lines) adds
            // nothing: it is listed once. Its words go, and their room serves the next.
            Some(reads_stdin) => {
                words.clear();
                st.words = words;
                reads_stdin
            }
            None => {
                let key = keyed.then(|| cx.key.clone());
                if coproc {
                    // bash reads a `$( )` a second time from its own printing of it, which
                    // spells `coproc cmd` as `coproc COPROC cmd`: `COPROC` is what runs.
                    let mut texts = vec!["COPROC".to_owned()];
                    texts.extend(words.iter().map(|w| lossy(&w.text)));
                    emit_texts(cx, &texts, self.depth, None, &input, &Names::default());
                }
                let reads_stdin = self.emit_words(cx, words, &input);
                if let Some(key) = key {
                    cx.seen.insert(key, reads_stdin);
                }
                reads_stdin
            }
        };
        if reads_stdin {
            // A shell reading its script from standard input: what it reads is commands.
            self.feed_shell(cx, &stdin);
            if matches!(input, Input::Inherited) {
                // It reads what a redirection of the frames around it gives them.
                st.readers = st.frames.len();
            }
        }
        if let Some(change) = change {
            let before = cx.dir.clone();
            // The frames below a marked one are marked already, down to a subshell.
            for frame in st.frames.iter_mut().rev() {
                match frame {
                    Frame::Compound(false) => *frame = Frame::Compound(true),
                    Frame::Compound(true) | Frame::Subshell(_) => break,
                }
            }
            if st.list_undo.is_none() {
                st.list_undo = Some(before.clone());
            }
            st.undo = Some(before);
            match change {
                Change::To(operand) => follow_cd(cx, operand),
                Change::Unknown => cx.set_dir(None),
            }
        }
    }

    /// Splits the heredocs and here-strings of a command as the script of a shell reading
    /// them.
    fn feed_shell(&self, cx: &mut Context, stdin: &Stdin) {
        for flag in &stdin.heredocs {
            flag.set(true);
        }
        for text in &stdin.strings {
            sub_parse(cx, text, self.depth + 1);
        }
    }

    /// Whether a compound command (`{`, `(`, `while`, ...) starts at the next word, which
    /// makes the word before it a `coproc` name.
    fn compound_follows(&self) -> bool {
        let rest = self.rest();
        let rest = &rest[rest
            .iter()
            .position(|&b| b != b' ' && b != b'\t')
            .unwrap_or(rest.len())..];
        if rest.starts_with(b"(") {
            return true;
        }
        let end = rest
            .iter()
            .position(|b| b" \t\n;&|()<>".contains(b))
            .unwrap_or(rest.len());
        COMPOUND_STARTS.contains(&&rest[..end])
    }

    /// Reads a redirection operator at `<` or `>` and drops it with its target.
    fn redirect(&mut self, cx: &mut Context, st: &mut ListState) {
        let first = self.peek();
        self.advance(1);
        let mut writing = first == Some(b'>');
        if first == Some(b'<') {
            match self.peek() {
                Some(b'<') => {
                    self.advance(1);
                    match self.peek() {
                        Some(b'<') => {
                            self.advance(1);
                            self.skip_blanks();
                            if self.starts_word() {
                                let word = self.lex_word(cx);
                                st.stdin.strings.push(word.text);
                                st.stdin.marker = Some("<<<".to_owned());
                                st.stdin.process = false;
                            }
                            return;
                        }
                        Some(b'-') => {
                            self.advance(1);
                            self.heredoc(cx, st, true);
                            return;
                        }
                        _ => {
                            self.heredoc(cx, st, false);
                            return;
                        }
                    }
                }
                Some(b'&') => self.advance(1),
                Some(b'>') => {
                    writing = true;
                    self.advance(1);
                }
                _ => {}
            }
        } else if matches!(self.peek(), Some(b'>' | b'|' | b'&')) {
            self.advance(1);
        }
        let duplicates = self.src.get(self.pos.wrapping_sub(1)) == Some(&b'&');
        self.skip_blanks();
        let closes = duplicates && self.peek() == Some(b'-');
        let start = self.pos;
        let Some(mut target) = self.starts_word().then(|| self.lex_word(cx)) else {
            return;
        };
        // `>&2` duplicates a descriptor; `>& file` writes the file.
        let descriptor =
            target.text.iter().all(u8::is_ascii_digit) || target.text.starts_with(b"-");
        if writing && !(duplicates && descriptor) {
            cx.writes(&target.text);
        }
        if first == Some(b'<') && !writing && !duplicates && target.text == b"<(...)" {
            // `sh < <(curl x)` reads a pipe as `curl x | sh` does (the last redirection of
            // standard input is the one it reads).
            st.stdin.process = true;
            st.stdin.marker = None;
        }
        // A target is brace-expanded too (more than one word is an error bash reports
        // after running the substitutions of each).
        self.brace_words(cx, &self.src[start..self.pos]);
        if closes && (target.text.len() > 1 || target.quoted) {
            // `2>&-x`, `<& -x`: bash closes the descriptor and reads what follows the `-`
            // as a word of the command (`2>&-sudo id` runs `sudo id`).
            target.text.remove(0);
            target.assignment = false;
            target.alternative = None;
            if let Some(fields) = &mut target.fields {
                fields.alternative.clear();
                for field in &mut fields.text {
                    *field = (field.0.saturating_sub(1), field.1.saturating_sub(1));
                }
            }
            self.word(st, target);
        }
    }

    /// Reads (and drops) the file `&>` or `&>>` writes; expansions in it still count.
    fn redirect_target(&mut self, cx: &mut Context) {
        self.skip_blanks();
        if self.starts_word() {
            let start = self.pos;
            let target = self.lex_word(cx);
            cx.writes(&target.text);
            self.brace_words(cx, &self.src[start..self.pos]);
        }
    }

    /// Reads a heredoc's delimiter; the body is skipped at the next newline.
    fn heredoc(&mut self, cx: &mut Context, st: &mut ListState, strip_tabs: bool) {
        self.skip_blanks();
        if !self.starts_word() {
            return;
        }
        let start = self.pos;
        let (delimiter, quoted) = self.delimiter_word(cx);
        let written = &self.src[start..self.pos];
        if written.windows(3).any(|w| w == b"$((") {
            // bash matches such a delimiter against body lines in a way of its own (an
            // arithmetic expansion may run on over several lines): refused, not modelled.
            cx.refuse(|| {
                format!(
                    "the here-document delimiter '{}' holds `$((`",
                    truncated(&String::from_utf8_lossy(written))
                )
            });
            return;
        }
        let feeds_shell = Rc::new(Cell::new(false));
        st.stdin.heredocs.push(feeds_shell.clone());
        st.stdin.marker = Some(format!("<<{}", String::from_utf8_lossy(&delimiter)));
        st.stdin.process = false;
        self.heredocs.push(Heredoc {
            depth: self.depth,
            feeds_shell,
            delimiter,
            strip_tabs,
            expand: !quoted,
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
    /// Turns the words of one simple command into a [`SimpleCommand`](super::SimpleCommand)
    /// (and, through `sh -c`, `eval` and `find -exec`, into further commands).
    fn emit_words(&mut self, cx: &mut Context, mut words: Vec<Word>, stdin: &Input) -> bool {
        let assignments = words.iter().take_while(|w| w.assignment).count();
        for word in words.drain(..assignments) {
            assignment(cx, &String::from_utf8_lossy(&word.text), self.depth);
        }
        let Some(first) = words.first() else {
            return false;
        };
        if let Some(alternative) = &first.alternative {
            // `${x:-zapme} args`: the command the default names, when `x` is unset.
            let mut texts: Vec<String> = split_fields(alternative, first.alternative_fields())
                .iter()
                .map(|t| lossy(t))
                .collect();
            for word in &words[1..] {
                texts.extend(
                    split_fields(&word.text, word.fields())
                        .iter()
                        .map(|t| lossy(t)),
                );
            }
            emit_texts(cx, &texts, self.depth, None, stdin, &Names::default());
        }
        // The values of unquoted expansions are split into words at blanks.
        if words.iter().any(|w| !w.fields().is_empty()) {
            words = words.into_iter().flat_map(split_word).collect();
        }
        // Which words brace expansion applies to, and whether an empty result is kept (an
        // unquoted empty word is no word at all: `{a,}` is just `a`).
        let braces: Vec<(bool, bool)> = words.iter().map(|w| (w.brace, w.quoted)).collect();
        let mut names = Names::default();
        let mut texts = Vec::with_capacity(words.len());
        for word in words {
            let text = String::from_utf8(word.text).unwrap_or_else(|err| lossy(err.as_bytes()));
            if word.glob {
                names.globs.push(text.clone());
            }
            if word.dynamic {
                names.dynamic.push(text.clone());
            }
            texts.push(text);
        }
        if braces.iter().any(|&(brace, _)| brace) {
            let mut expanded = Vec::new();
            for (index, (&(brace, quoted), text)) in braces.iter().zip(&texts).enumerate() {
                if !brace {
                    expanded.push(text.clone());
                    continue;
                }
                match expand_braces(text) {
                    Ok(results) => {
                        expanded.extend(results.into_iter().filter(|r| quoted || !r.is_empty()));
                    }
                    Err(results) => {
                        if index == 0 {
                            // The program's name is among the results; past the limits it
                            // cannot be known.
                            cx.refuse(|| {
                                format!(
                                    "the command name '{}' is a brace expansion too large to \
                                     follow",
                                    truncated(text)
                                )
                            });
                        }
                        expanded.extend(results);
                    }
                }
            }
            if expanded != texts {
                let written = texts.join(" ");
                return emit_texts(cx, &expanded, self.depth, Some(written), stdin, &names);
            }
        }
        emit_texts(cx, &texts, self.depth, None, stdin, &names)
    }
}

/// The longest command (in bytes) looked up among those already read: a long one is rare,
/// and remembering it would cost a copy.
const MAX_REPEAT_KEY: usize = 4096;

/// Builds in `cx.key` what makes one simple command, as a key for `cx.seen`: its words with
/// what was learnt of them, what it reads on standard input, whether it follows `coproc`
/// inside a substitution, and the positional parameters and directory in force (as
/// generation numbers). False for a long command, which is not remembered.
///
/// The key is short, as it is hashed for every command: fixed-size parts stand as they
/// are, and each part of varying size after its length, so that no two commands share a
/// key.
fn repeat_key(cx: &mut Context, words: &[Word], stdin: &Input, coproc: bool) -> bool {
    let mut size = 0;
    for word in words {
        let fields = word.fields().len() + word.alternative_fields().len();
        size += word.text.len() + word.alternative.as_ref().map_or(0, Vec::len) + 8 * fields + 24;
        if size > MAX_REPEAT_KEY {
            // A long command (a word list of a megabyte) is not read to its end here.
            return false;
        }
    }
    let generation = cx.args_generation;
    let dir_generation = cx.dir_generation;
    let renames_generation = cx.renames_generation;
    let key = &mut cx.key;
    key.clear();
    // Every length, offset and count is at most `MAX_REPEAT_KEY`: 32 bits hold it.
    let number = |key: &mut Vec<u8>, value: usize| {
        key.extend_from_slice(&u32::try_from(value).unwrap_or(u32::MAX).to_le_bytes());
    };
    let bytes = |key: &mut Vec<u8>, bytes: &[u8]| {
        number(key, bytes.len());
        key.extend_from_slice(bytes);
    };
    let fields = |key: &mut Vec<u8>, fields: &[(usize, usize)]| {
        number(key, fields.len());
        for &(start, end) in fields {
            number(key, start);
            number(key, end);
        }
    };
    key.extend_from_slice(&generation.to_le_bytes());
    key.extend_from_slice(&dir_generation.to_le_bytes());
    key.extend_from_slice(&renames_generation.to_le_bytes());
    key.push(u8::from(coproc));
    match stdin {
        Input::Inherited => key.push(0),
        Input::Pipe => key.push(1),
        Input::Here(marker) => {
            key.push(2);
            bytes(key, marker.as_bytes());
        }
    }
    for word in words {
        key.push(
            u8::from(word.assignment)
                | (u8::from(word.brace) << 1)
                | (u8::from(word.glob) << 2)
                | (u8::from(word.dynamic) << 3)
                | (u8::from(word.alternative.is_some()) << 4),
        );
        bytes(key, &word.text);
        fields(key, word.fields());
        if let Some(alternative) = &word.alternative {
            bytes(key, alternative);
        }
        fields(key, word.alternative_fields());
    }
    true
}

/// Makes the directory the one `cd operand` leads to from the directory in force. The
/// same `cd` from the same directory as the last one (`cd /; cd /`, a repeated line) leads
/// to the same place, which is not worked out again.
fn follow_cd(cx: &mut Context, operand: String) {
    if let Some((from, last, to)) = &cx.last_cd {
        if *from == cx.dir_generation && *last == operand {
            if to.1 != cx.dir_generation {
                let to = to.clone();
                cx.restore_dir(to);
            }
            return;
        }
    }
    let from = cx.dir_generation;
    // From an unknown directory only a rooted operand leads somewhere known.
    let start = cx.dir.as_deref().or(is_rooted(&operand).then_some("/"));
    let after = start
        .and_then(|dir| join_path(dir, &operand))
        .filter(|dir| dir.len() <= MAX_DIR);
    cx.set_dir(after);
    cx.last_cd = Some((from, operand, (cx.dir.clone(), cx.dir_generation)));
}

/// The words bash makes of `text` by splitting it at the blanks that lie in `fields`
/// (the values of unquoted expansions, in order); empty words go.
fn split_fields(text: &[u8], fields: &[(usize, usize)]) -> Vec<Vec<u8>> {
    if fields.is_empty() {
        return vec![text.to_vec()];
    }
    let mut out = Vec::new();
    let mut current = Vec::new();
    let mut field = 0;
    for (at, &byte) in text.iter().enumerate() {
        while field < fields.len() && fields[field].1 <= at {
            field += 1;
        }
        let inside = fields.get(field).is_some_and(|&(start, _)| start <= at);
        if inside && matches!(byte, b' ' | b'\t' | b'\n') {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
        } else {
            current.push(byte);
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// A word split at the blanks of its expanded values (see [`split_fields`]); a quoted word
/// left empty stays one empty word.
fn split_word(word: Word) -> Vec<Word> {
    let mut pieces = split_fields(&word.text, word.fields());
    if pieces.is_empty() && word.quoted {
        pieces.push(Vec::new());
    }
    let count = pieces.len();
    let mut alternative = word.alternative;
    pieces
        .into_iter()
        .enumerate()
        .map(|(index, text)| Word {
            text,
            alternative: if index + 1 == count {
                alternative.take()
            } else {
                None
            },
            quoted: word.quoted,
            expanded: word.expanded,
            brace: word.brace,
            glob: word.glob,
            dynamic: word.dynamic,
            ..Word::default()
        })
        .collect()
}

/// Ends the innermost compound command: the directory is unknown after it when it
/// changed inside it (known at the next command, which takes it).
fn close_compound(st: &mut ListState) {
    if let Some(Frame::Compound(changed)) = st.frames.last() {
        st.forget_dir |= *changed;
        st.frames.pop();
        closed_frames(st);
    }
}

/// After frames were closed: notes whether one of them held a shell reading the standard
/// input the text has.
fn closed_frames(st: &mut ListState) {
    if st.frames.len() < st.readers {
        st.readers = st.frames.len();
        st.closed_reader = true;
    }
}

/// After `|`: the command before it ran in a subshell, so its `cd` is undone.
fn undo_directory(cx: &mut Context, st: &mut ListState) {
    if let Some(before) = st.undo.take() {
        cx.set_dir(before);
    }
}

/// Whether a word written so expands to no word when the script has no arguments.
fn vanishes(raw: &[u8]) -> bool {
    matches!(
        raw,
        b"$@" | b"\"$@\"" | b"${@}" | b"\"${@}\"" | b"$*" | b"${*}" | b"${@:-}" | b"\"${@:-}\""
    )
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// At most 60 characters of `text`, marked when cut.
pub(super) fn truncated(text: &str) -> String {
    match text.char_indices().nth(60) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_owned(),
    }
}
