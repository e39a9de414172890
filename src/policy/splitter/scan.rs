//! The one balanced-group scanner: it reads from just after an opening bracket to the
//! bracket that closes it, minding quotes, backslashes and (where the shell has them)
//! comments, and either entering every substitution on the way or only stepping over it.
//! Arithmetic `(( ))`, `${ }`, array assignments `=( )` and the crude fallback for text
//! nested too deeply are all read with it.

use super::grammar::Until;
use super::{crude, Context, Parser, MAX_DEPTH};

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
        while let Some(byte) = self.peek() {
            let starts_word = word_start;
            word_start = matches!(byte, b' ' | b'\t' | b'\n' | b'(' | b';' | b'|' | b'&');
            match byte {
                b if b == group.close => {
                    if nesting == 0 {
                        return true;
                    }
                    nesting -= 1;
                    self.advance(1);
                }
                b if b == group.open => {
                    nesting += 1;
                    self.advance(1);
                }
                b'\\' => self.advance(2),
                b'#' if group.comments && starts_word => self.skip_comment(),
                b'\'' => {
                    self.advance(1);
                    self.single_quoted(&mut scratch);
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

    /// Steps over the rest of a group whose opening byte was consumed, including its
    /// closing byte, and reads what it held crudely: used where nesting is too deep.
    pub(super) fn crude_group(&mut self, cx: &mut Context, open: u8, close: u8) {
        let start = self.pos;
        self.scan_group(cx, Group::skip(open, close));
        crude(cx, &self.src[start..self.pos]);
        if self.peek() == Some(close) {
            self.advance(1);
        }
    }

    /// Reads a command list up to its `)` (after `$(`, `<(` or `>(`).
    pub(super) fn command_substitution(&mut self, cx: &mut Context) {
        if self.depth + 1 >= MAX_DEPTH {
            self.crude_group(cx, b'(', b')');
            return;
        }
        self.depth += 1;
        self.parse_list(cx, Until::Paren);
        self.depth -= 1;
    }

    /// Reads an arithmetic expression after `((`, entering substitutions in it.
    pub(super) fn arithmetic(&mut self, cx: &mut Context) -> Arithmetic {
        if self.depth + 1 >= MAX_DEPTH {
            self.crude_group(cx, b'(', b')');
            if self.peek() == Some(b')') {
                self.advance(1);
            }
            return Arithmetic::Closed;
        }
        self.depth += 1;
        let group = Group::entering(b'(', b')', true);
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
        if self.depth + 1 >= MAX_DEPTH {
            self.crude_group(cx, b'{', b'}');
            return;
        }
        self.depth += 1;
        let group = Group::entering(b'{', b'}', in_quotes);
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
        if self.scan_group(cx, group) {
            self.advance(1);
        }
    }
}
