//! The grammar: command lists, separators, compound commands and their reserved words.
//! The words of each simple command are handed on to [`simple`] to be expanded and
//! emitted; redirections are read in [`redirect`], `cd` followed in [`cd`], words split
//! in [`fields`], and commands read before are recognised in [`repeat`].

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

mod cd;
mod fields;
mod redirect;
mod repeat;
mod simple;

use cd::*;
use fields::*;
use repeat::*;

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
