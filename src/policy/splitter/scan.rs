//! The one balanced-group scanner: it reads from just after an opening bracket to the
//! bracket that closes it, minding quotes, backslashes and (where the shell has them)
//! comments, and either entering every substitution on the way or only stepping over it.
//! Arithmetic `(( ))`, `${ }`, array assignments `=( )` and heredoc delimiters are all
//! read with it.

use super::grammar::Until;
use super::lexer::may_hide_braces;
use super::{give_up, Context, Parser, MAX_DEPTH};

/// The longest substitution whose text is remembered to skip an identical one after it.
const MAX_REMEMBERED: usize = 4096;

/// What kind of group is being read, which decides how its inside is treated.
#[derive(Clone, Copy)]
pub(super) struct Group {
    pub open: u8,
    pub close: u8,
    /// Enter `$(..)`, `${..}`, backticks and double-quoted strings so their commands are
    /// found; when false they are stepped over (quotes still matched).
    pub enter: bool,
    /// Whether `#` at the start of a word begins a comment (array assignments).
    pub comments: bool,
    /// Whether the group sits inside double quotes (only passed on to `$`).
    pub in_quotes: bool,
    /// Whether single quotes only pair up for finding the group's end, and the text
    /// inside them is expanded all the same: arithmetic, and `${ }` (an array subscript
    /// is arithmetic; `"${x:-'..'}"` keeps its quotes as text).
    pub expands_single: bool,
}

impl Group {
    /// A group whose substitutions are only stepped over.
    pub const fn skip(open: u8, close: u8) -> Group {
        Group {
            open,
            close,
            enter: false,
            comments: false,
            in_quotes: false,
            expands_single: false,
        }
    }

    /// A group whose substitutions are entered.
    pub const fn entering(open: u8, close: u8, in_quotes: bool) -> Group {
        Group {
            open,
            close,
            enter: true,
            comments: false,
            in_quotes,
            expands_single: false,
        }
    }
}

/// How an arithmetic expression after `((` ended.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Arithmetic {
    /// At its `))`.
    Closed,
    /// At a lone `)`: it was nested subshells, `( (...) )`, and must be read again as such.
    Mismatched,
    /// At the end of the input (a syntax error for the shell, which runs nothing).
    Unterminated,
}

impl<'s> Parser<'s> {
    /// Reads from just after a group's opening byte up to (not including) the byte that
    /// closes it at its own level. True when that byte was found; false at the end of the
    /// input.
    pub(super) fn scan_group(&mut self, cx: &mut Context, group: Group) -> bool {
        let mut nesting = 0usize;
        let mut scratch = Vec::new();
        let mut word_start = true;
        // Inside `${ }` a bare `{` does not nest: the first `}` closes it (`${x:-{a}`);
        // only a `${` of its own does.
        let braces = group.open == b'{';
        // Inside the `[..]` that starts an array element (`x=([k]=v)`): a subscript, which
        // is arithmetic for an indexed array.
        let mut subscript = false;
        while let Some(byte) = self.peek() {
            if cx.refusal.is_some() {
                // The text is refused whatever follows.
                self.pos = self.src.len();
                return false;
            }
            let starts_word = word_start;
            word_start = matches!(byte, b' ' | b'\t' | b'\n' | b'(' | b';' | b'|' | b'&');
            if group.comments {
                self.array_syntax_error(cx, byte);
                match byte {
                    b'[' if starts_word => subscript = true,
                    b']' => subscript = false,
                    _ => {}
                }
            }
            match byte {
                b if b == group.close => {
                    if nesting == 0 {
                        return true;
                    }
                    nesting -= 1;
                    self.advance(1);
                }
                b if b == group.open && !braces => {
                    nesting += 1;
                    self.advance(1);
                }
                b'$' if braces && !group.enter && self.peek_at(1) == Some(b'{') => {
                    nesting += 1;
                    self.advance(2);
                }
                b'<' | b'>'
                    if (group.comments || (braces && group.enter && !group.in_quotes))
                        && self.peek_at(1) == Some(b'(') =>
                {
                    // A process substitution among the elements, or in an unquoted `${ }`
                    // (`${x:-<(ls)}`), runs its commands.
                    self.advance(2);
                    self.command_substitution(cx);
                }
                b'\\' => self.advance(2),
                b'#' if group.comments && starts_word => self.skip_comment(),
                b'\'' => {
                    self.advance(1);
                    self.single_quoted(&mut scratch);
                    let expands = group.expands_single || subscript;
                    if expands && scratch.iter().any(|b| b"$`".contains(b)) {
                        // bash expands it as if in double quotes (`(( '$(x)' ))` runs x).
                        self.expand_as_double_quoted(cx, &scratch);
                    }
                }
                b'"' if group.enter => {
                    self.advance(1);
                    self.double_quoted(cx, &mut scratch, false);
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
                b'$' if group.enter => {
                    self.dollar(cx, &mut scratch, group.in_quotes);
                }
                b'`' if group.enter => self.backtick(cx, &mut scratch, group.in_quotes),
                _ => self.advance(1),
            }
            scratch.clear();
        }
        false
    }

    /// Notes, at `byte` inside an array assignment's `( )`, the syntax errors bash does not
    /// stop at: an unquoted operator (`x=(a; b)`, `x=(a && b)`, `x=(a <f)`) makes bash
    /// report the error, drop the command and go on at the next line, which the splitter
    /// cannot follow. Inside `$( )` bash reads the elements a second time, so there an
    /// escaped operator (`x=(a \; b)`) is such an error too.
    fn array_syntax_error(&self, cx: &mut Context, byte: u8) {
        let next = self.peek_at(1);
        let operator = match byte {
            b';' | b'&' | b'|' | b'(' => Some(byte),
            b'<' | b'>' if next != Some(b'(') => Some(byte),
            b'\\' if self.substitutions > 0 => next.filter(|n| b";&|<>()".contains(n)),
            _ => None,
        };
        if let Some(operator) = operator {
            cx.refuse(|| {
                format!(
                    "an array assignment `NAME=( .. )` holds {} '{}', a syntax error after \
                     which bash goes on at the next line",
                    if byte == b'\\' {
                        "the escaped operator"
                    } else {
                        "the operator"
                    },
                    operator as char
                )
            });
        }
    }

    /// Gives up where nesting is too deep: the text is refused, so the rest of it is not
    /// read.
    pub(super) fn give_up(&mut self, cx: &mut Context) {
        give_up(cx);
        self.pos = self.src.len();
    }

    /// Reads a command list up to its `)` (after `$(`, `<(` or `>(`).
    pub(super) fn command_substitution(&mut self, cx: &mut Context) {
        if self.depth + 1 >= MAX_DEPTH {
            self.give_up(cx);
            return;
        }
        let start = self.pos;
        let state = (
            self.depth,
            self.substitutions,
            cx.args_generation,
            cx.dir_generation,
            cx.renames_generation,
        );
        if let Some((at, end, seen_state)) = self.last_substitution {
            let seen = &self.src[at..end];
            if seen_state == state && self.rest().starts_with(seen) {
                // The same text as the substitution before, read in the same state: the
                // same commands, already listed (`$(a)$(a)...`).
                self.advance(seen.len());
                return;
            }
        }
        self.depth += 1;
        self.substitutions += 1;
        self.parse_list(cx, Until::Paren);
        self.substitutions -= 1;
        self.depth -= 1;
        let text = &self.src[start..self.pos];
        // Only a short one-line text is remembered: a newline could read heredoc bodies.
        if text.len() <= MAX_REMEMBERED && !text.contains(&b'\n') && cx.refusal.is_none() {
            self.last_substitution = Some((start, self.pos, state));
        }
    }

    /// Reads an arithmetic expression after `$[` up to its `]`, entering substitutions in
    /// it.
    pub(super) fn old_arithmetic(&mut self, cx: &mut Context) {
        self.expanding_group(cx, b'[', b']', true);
    }

    /// Reads an arithmetic expression after `((`, entering substitutions in it.
    pub(super) fn arithmetic(&mut self, cx: &mut Context) -> Arithmetic {
        if self.depth + 1 >= MAX_DEPTH {
            self.give_up(cx);
            if self.peek() == Some(b')') {
                self.advance(1);
            }
            return Arithmetic::Closed;
        }
        self.depth += 1;
        let group = Group {
            expands_single: true,
            ..Group::entering(b'(', b')', true)
        };
        let ending = if !self.scan_group(cx, group) {
            Arithmetic::Unterminated
        } else if self.peek_at(1) == Some(b')') {
            self.advance(2);
            Arithmetic::Closed
        } else {
            Arithmetic::Mismatched
        };
        self.depth -= 1;
        ending
    }

    /// Reads `${ ... }` after its `${`, entering substitutions in it. Single quotes inside
    /// it pair up even within double quotes, as they do for bash when it looks for the `}`.
    pub(super) fn braced_parameter(&mut self, cx: &mut Context, in_quotes: bool) {
        self.expanding_group(cx, b'{', b'}', in_quotes);
    }

    /// Reads a group after its opening byte and past its closing one, one level deeper,
    /// entering substitutions, the text in single quotes too.
    fn expanding_group(&mut self, cx: &mut Context, open: u8, close: u8, in_quotes: bool) {
        if self.depth + 1 >= MAX_DEPTH {
            self.give_up(cx);
            return;
        }
        self.depth += 1;
        let group = Group {
            expands_single: true,
            ..Group::entering(open, close, in_quotes)
        };
        if self.scan_group(cx, group) {
            self.advance(1);
        }
        self.depth -= 1;
    }

    /// Reads the rest of an array assignment's `( ... )` after its `(`, entering
    /// substitutions and skipping comments.
    pub(super) fn array_elements(&mut self, cx: &mut Context) {
        let group = Group {
            comments: true,
            ..Group::entering(b'(', b')', false)
        };
        let start = self.pos;
        let closed = self.scan_group(cx, group);
        let elements = &self.src[start..self.pos];
        cx.arrays
            .push(String::from_utf8_lossy(elements).into_owned());
        self.element_braces(cx, elements);
        if closed {
            self.advance(1);
        }
    }

    /// bash brace-expands each element of an array assignment, reading the element as
    /// written (see [`Parser::brace_words`]): elements are read again as words when
    /// braces and quotes meet in them, for the substitutions each result runs.
    fn element_braces(&self, cx: &mut Context, elements: &[u8]) {
        if cx.refusal.is_some() || !may_hide_braces(elements) {
            return;
        }
        if cx.budget < elements.len() {
            give_up(cx);
            return;
        }
        cx.budget -= elements.len();
        let mut parser = Parser::new(elements, self.depth);
        parser.substitutions = self.substitutions;
        while let Some(byte) = parser.peek() {
            match byte {
                b' ' | b'\t' | b'\n' => parser.advance(1),
                b'\\' if parser.peek_at(1) == Some(b'\n') => parser.advance(2),
                b'#' => parser.skip_comment(),
                _ => {
                    let start = parser.pos;
                    let _element = parser.lex_word(cx);
                    if parser.pos == start {
                        parser.advance(1);
                        continue;
                    }
                    self.brace_words(cx, &elements[start..parser.pos]);
                }
            }
        }
    }
}
