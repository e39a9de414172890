//! Redirections: the operator, the file a redirection writes (noted for the rules), and
//! heredoc operators, whose bodies the lexer reads at the next line.

use super::*;

impl<'s> Parser<'s> {
    /// Reads a redirection operator at `<` or `>` and drops it with its target.
    pub(super) fn redirect(&mut self, cx: &mut Context, st: &mut ListState) {
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
    pub(super) fn redirect_target(&mut self, cx: &mut Context) {
        self.skip_blanks();
        if self.starts_word() {
            let start = self.pos;
            let target = self.lex_word(cx);
            cx.writes(&target.text);
            self.brace_words(cx, &self.src[start..self.pos]);
        }
    }

    /// Reads a heredoc's delimiter; the body is skipped at the next newline.
    pub(super) fn heredoc(&mut self, cx: &mut Context, st: &mut ListState, strip_tabs: bool) {
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

    pub(super) fn starts_word(&self) -> bool {
        match self.peek() {
            None => false,
            Some(b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')') => false,
            Some(b'<' | b'>') => self.peek_at(1) == Some(b'('),
            Some(_) => true,
        }
    }
}
