//! The end of a simple command: its words after brace expansion, what it reads on standard
//! input, and the commands it becomes (through wrappers, `sh -c`, `eval`, `find -exec`).

use super::*;

impl<'s> Parser<'s> {
    /// Files the words bash's brace expansion made of one word: arguments of the command,
    /// or words of a `for` list (data, whose substitutions were read with them).
    pub(super) fn brace_expanded(&mut self, st: &mut ListState, words: Vec<Word>) {
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
    pub(super) fn word(&mut self, st: &mut ListState, word: Word) {
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
    pub(super) fn finish(&mut self, cx: &mut Context, st: &mut ListState) {
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
    pub(super) fn feed_shell(&self, cx: &mut Context, stdin: &Stdin) {
        for flag in &stdin.heredocs {
            flag.set(true);
        }
        for text in &stdin.strings {
            sub_parse(cx, text, self.depth + 1);
        }
    }

    /// Whether a compound command (`{`, `(`, `while`, ...) starts at the next word, which
    /// makes the word before it a `coproc` name.
    pub(super) fn compound_follows(&self) -> bool {
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
}

impl<'s> Parser<'s> {
    /// Turns the words of one simple command into a [`SimpleCommand`](super::SimpleCommand)
    /// (and, through `sh -c`, `eval` and `find -exec`, into further commands).
    pub(super) fn emit_words(
        &mut self,
        cx: &mut Context,
        mut words: Vec<Word>,
        stdin: &Input,
    ) -> bool {
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
