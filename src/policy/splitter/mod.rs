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
//! rather than under-reports, and [`Split::refusal`] says so; the policy refuses such text.
//! The pass never panics, and its time and the size of what it returns are linear in the
//! input (times a small constant).

use std::collections::HashSet;

mod expand;
mod grammar;
mod lexer;
mod scan;
mod wrappers;

pub(crate) use wrappers::SHELLS;

use grammar::Until;
use lexer::Heredoc;
use wrappers::{code_strings, find_exec_commands, peel, shell_run, ShellRun};

/// How deep substitutions, quoted strings inside them and re-parsed `sh -c` strings may nest
/// before the rest of that construct is treated crudely.
pub const MAX_DEPTH: usize = 64;

/// How many wrapper layers (`nohup timeout 5 env X=1 ...`) are peeled off one command.
const MAX_LAYERS: usize = 16;

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
    /// Program names (the first word of some layer) that are unquoted globs, such as
    /// `/usr/bin/sud?`: the program that runs is whichever file matches.
    pub name_globs: Vec<String>,
}

/// The simple commands found in a text, and why it cannot be checked when it cannot.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Split {
    /// Every simple command, in order of appearance (commands inside a substitution come
    /// before the command holding it).
    pub commands: Vec<SimpleCommand>,
    /// Set when some part of the text could hide a command the splitter cannot name: a
    /// construct it does not follow (a string the shell runs as code, a here-document fed
    /// to a shell, a glob for a command name), or nesting deeper than [`MAX_DEPTH`] or
    /// re-parsing past the budget (where it fell back to its crude reading, which
    /// over-reports but may be incomplete). The sentence names the first such construct;
    /// the policy refuses the text with it.
    pub refusal: Option<String>,
}

/// Why text nested too deeply or repeating too much is refused.
pub const TOO_COMPLEX: &str = "it nests too deeply or repeats too much shell text to be \
     read in full";

/// Splits shell text into the simple commands it would run, each in all its spellings.
/// Accepts any text; never panics.
pub fn split(text: &str) -> Split {
    let allowance = text.len().saturating_mul(4).saturating_add(1 << 16);
    let mut cx = Context {
        out: Vec::new(),
        budget: allowance,
        crude_budget: allowance,
        refusal: None,
        args: vec![b"bash".to_vec()],
    };
    let mut parser = Parser::new(text.as_bytes(), 0);
    parser.parse_list(&mut cx, Until::End);
    Split {
        commands: cx.out,
        refusal: cx.refusal,
    }
}

/// Every spelling of every simple command in `text`, without duplicates, in order of
/// appearance. A rule check applies to all of them.
#[cfg(test)]
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

/// What a simple command reads on standard input, as far as the text says.
pub(super) enum Input {
    /// Whatever the shell running the text has.
    Inherited,
    /// The output of the command before it in a pipeline.
    Pipe,
    /// A heredoc or here-string, written so (`<<EOF`, `<<<`).
    Here(String),
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
    /// The first construct that makes the text impossible to check, if any.
    refusal: Option<String>,
    /// The positional parameters of the script being read, `$0` first.
    args: Vec<Vec<u8>>,
}

impl Context {
    /// Notes that the text cannot be checked because of `construct` (the first one noted
    /// is the one given as the reason).
    fn refuse(&mut self, construct: impl FnOnce() -> String) {
        if self.refusal.is_none() {
            self.refusal = Some(construct());
        }
    }
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
    /// The word holds an unquoted `*`, `?` or `[...]`: bash may replace it by file names.
    glob: bool,
    /// The word with each `${x:-word}` (and `-`, `:=`, `=`) replaced by its word: what it
    /// is when the variable is unset. None when it holds no such default.
    alternative: Option<Vec<u8>>,
}

impl Word {
    fn plain(&self) -> bool {
        !self.quoted && !self.expanded
    }

    fn is(&self, keyword: &str) -> bool {
        self.plain() && self.text == keyword.as_bytes()
    }
}

struct Parser<'s> {
    src: &'s [u8],
    pos: usize,
    depth: usize,
    heredocs: Vec<Heredoc>,
    /// The word of the last `${x:-word}` read, for the word's alternative spelling.
    default_word: Option<Vec<u8>>,
}

impl<'s> Parser<'s> {
    fn new(src: &'s [u8], depth: usize) -> Self {
        Parser {
            src,
            pos: 0,
            depth,
            heredocs: Vec::new(),
            default_word: None,
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
    cx.refuse(|| TOO_COMPLEX.to_owned());
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
            emit_texts(cx, words, MAX_DEPTH, None, &Input::Inherited, &[]);
        }
    }
}

/// Builds the spellings of one simple command from its words, peeling wrappers, and splits
/// the scripts it hands to a shell or keeps to run later. `written` is an extra spelling
/// (the text before brace expansion); `stdin` is what the command reads on standard input.
/// At `MAX_DEPTH` nothing is split any further. Returns whether the command is a shell
/// that reads its script from standard input.
fn emit_texts(
    cx: &mut Context,
    words: Vec<String>,
    depth: usize,
    written: Option<String>,
    stdin: &Input,
    globs: &[String],
) -> bool {
    let mut layers = vec![words];
    let mut scripts: Vec<(String, Option<Vec<String>>)> = Vec::new();
    while layers.len() < MAX_LAYERS {
        let Some(peeled) = layers.last().and_then(|layer| peel(layer)) else {
            break;
        };
        scripts.extend(peeled.scripts.into_iter().map(|s| (s, None)));
        if peeled.words.is_empty() {
            break;
        }
        layers.push(peeled.words);
    }
    let mut command = SimpleCommand::default();
    if let Some(written) = written {
        command.forms.push(written);
    }
    let mut reads_stdin = false;
    let mut expand = Vec::new();
    let mut execs = Vec::new();
    for layer in layers.iter_mut() {
        match shell_run(layer) {
            Some(ShellRun::String(script, args)) => {
                scripts.push((script, (basename(&layer[0]) != "eval").then_some(args)));
            }
            Some(ShellRun::Stdin) => {
                reads_stdin = true;
                match stdin {
                    // The shell's script is the heredoc or here-string, split on its own.
                    Input::Here(marker) => layer.push(marker.clone()),
                    // A script from a pipe: spelled `<shell> -s` whatever its options, so
                    // `Bash(sh -s)` names `curl ... | sh -e`.
                    Input::Pipe => command.forms.push(format!("{} -s", basename(&layer[0]))),
                    // Standard input is the driver's (nothing, or what is written to it,
                    // which is checked as it comes).
                    Input::Inherited => {}
                }
            }
            None => {}
        }
        let (run, again) = code_strings(layer);
        scripts.extend(run.into_iter().map(|s| (s, None)));
        expand.extend(again);
        execs.extend(find_exec_commands(layer));
    }
    command.transparent = layers.last().is_some_and(|l| {
        matches!(shell_run(l), Some(ShellRun::String(..)))
            || (reads_stdin && matches!(stdin, Input::Here(_)))
    });
    for layer in &layers {
        for spelling in spellings(layer) {
            if !command.forms.contains(&spelling) {
                command.forms.push(spelling);
            }
        }
    }
    command.innermost = layers.last().map(|l| spellings(l)).unwrap_or_default();
    command.name_globs = layers
        .iter()
        .filter_map(|layer| layer.first())
        .filter(|name| globs.contains(name))
        .cloned()
        .collect();
    cx.out.push(command);
    if depth >= MAX_DEPTH {
        if !(scripts.is_empty() && expand.is_empty() && execs.is_empty()) {
            cx.refuse(|| TOO_COMPLEX.to_owned());
        }
        return reads_stdin;
    }
    for (script, args) in scripts {
        match args {
            Some(args) => {
                let args = args.into_iter().map(String::into_bytes).collect();
                let outer = std::mem::replace(&mut cx.args, args);
                sub_parse(cx, script.as_bytes(), depth + 1);
                cx.args = outer;
            }
            None => sub_parse(cx, script.as_bytes(), depth + 1),
        }
    }
    for text in expand {
        Parser::new(&[], depth).expand_as_double_quoted(cx, text.as_bytes());
    }
    for exec in execs {
        let size: usize = exec.iter().map(|w| w.len() + 1).sum();
        if cx.budget < size {
            cx.refuse(|| TOO_COMPLEX.to_owned());
            continue;
        }
        cx.budget -= size;
        emit_texts(cx, exec, depth + 1, None, &Input::Inherited, &[]);
    }
    reads_stdin
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
