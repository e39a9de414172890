//! The shell-aware splitter: it reads command text the way a POSIX shell (with the common
//! bash extensions) would, and lists every *simple command* the shell could run, so that a
//! deny rule such as `Bash(sudo:*)` is checked against each of them and not only against the
//! text as a whole.
//!
//! The model is a single left-to-right pass over the bytes. Words are built with quote
//! removal (`'...'`, `"..."`, `$'...'` with its escapes decoded, `$"..."`) and backslash
//! removal, and where an assignment may stand `NAME[` is read up to its matching `]` as
//! bash reads it (blanks, operators and quotes inside the subscript do not end the word,
//! and its substitutions are entered: `a[x<<1]=1 cmd` assigns and runs `cmd`);
//! commands are cut at `;` `&&` `||` `|` `|&` `&` and newlines; redirections and
//! their targets are dropped; comments are dropped; heredoc bodies are skipped as data (an
//! unquoted delimiter's body is still searched for `$( )` and backticks, which the shell
//! expands, and its lines are joined at each backslash-newline before the delimiter is
//! looked for, as bash joins them). A backslash-newline right after `$` is removed before
//! the `$` form is read (`$\<newline>'..'` is `$'..'`). Command substitution `$( )`, backticks, process substitution `<( )`/`>( )`,
//! `${ }` and arithmetic are entered where they appear, also inside double quotes.
//! Subshells, groups and the compound commands (`if`, `while`, `until`, `for`, `select`,
//! `case`, `[[ ]]`, `(( ))`, functions) are flattened: their keywords, `for` word lists and
//! `case` patterns are not commands, their bodies and conditions are. Each command is then
//! normalised: leading `VAR=value` words go, words are joined by single spaces, and
//! wrappers that run another program (`env`, `command`, `builtin`, `exec`, `nohup`, `nice`,
//! `timeout`, `time`, `stdbuf`, `xargs`, `setsid`, `ionice`, `taskset`, `busybox`, `sudo`,
//! `doas`) are peeled one at a time, every layer kept as a spelling; a program named by a
//! path is also spelled by its basename. The string given to `sh -c` (and `bash`, `dash`,
//! `zsh`, `ksh` ... `-c`; not with `-n`, a syntax check), to `eval`, to `compgen -C` and
//! `complete -C`, and the commands after `find -exec` are split in turn, and so is a heredoc or here-string read by a shell
//! that takes its script from standard input: given to the shell itself, to a compound
//! command or subshell holding it (`{ sh; } <<< x`), or to `exec` (`exec <<< x; sh`,
//! split at once); `.` and `source` of `/dev/stdin` read it too. A shell reading a pipe
//! (`curl x | sh`, `sh <(curl x)`, `sh < <(curl x)`, and `. <(curl x)`) is also spelled
//! `sh -s` (`. -s`), so one rule names every such form.
//! A name the text renames is read as what it stands for wherever it is a command's
//! program, anywhere in the text (a loop may run a use written before the definition; a
//! text that renames is read again knowing every name it renames): an alias (`alias t='X -i'`, `BASH_ALIASES[t]=...`)
//! as its value followed by the arguments, a name in bash's table of programs
//! (`hash -p /usr/bin/X t`, `BASH_CMDS[t]=/usr/bin/X`) as that program; changes of those
//! tables that are not followed (the whole table, a name known at run time, `read`)
//! refuse the text. A value assigned in the text that holds a substitution
//! (`x='a[$(X)]'`) is read as if it ran, since arithmetic on the variable runs it, and
//! so are the names of a shell's startup files (`BASH_ENV`, `ENV`), which the shell
//! expands; a startup file that is a pipe refuses the text.
//! Unquoted brace lists (`{a,b}`) are also expanded and `$IFS` counts as a blank; a word
//! whose quotes bash's brace expansion reads otherwise than its parser (a `"` inside
//! backquotes inside double quotes) is expanded as written and each result read again.
//!
//! Each command also carries the directory it runs in ([`SimpleCommand::dir`]): the
//! directory the text starts in, changed by each `cd DIR` before it (also `builtin cd`,
//! `command cd`, and `cd` alone, which goes home) whose operand is known as written:
//! `/`-rooted, `~`- or `$HOME`-rooted, or relative, folded as `cd` folds it (`/etc/..`
//! is `/`). A `cd` is taken as done for the rest of its list whatever the operator
//! after it (`cd x || exit` is the idiom; a failed `cd x; ...` is not modelled), except
//! where it runs in a subshell of its own: in a pipeline, in an and-or list put in the
//! background (`cd x && make &`), in `( )`, `$( )`, backquotes and `coproc`, whose
//! changes end with them, and in the script of `sh -c`, which starts where its shell
//! runs. The directory is unknown from
//! a `cd` whose operand is not known as written (`cd $x`, `cd -`, `cd ~user`, `cd` with
//! options), after `pushd`, `popd`, `eval`, `source`, a command whose name is known only
//! at run time, and after a compound command (`if`, `while`, `for`, `case`, `{ }`, a
//! function's body) inside which the directory changed. `CDPATH` is not consulted.
//!
//! Limits: this is a filter for mistakes, not a sandbox. Anything decided at run time
//! escapes it: a command name held in a variable (`$cmd`), built by a substitution
//! (`$(echo sudo)`), an alias defined outside the text, a function defined earlier, a
//! value built at run time and then used as a number (`x=$(printf ...); (( x ))`), the
//! elements of an array assignment (`x=('a[$(X)]')`), a script file, `source`, or a
//! program that runs commands itself (`python -c`, `make`, `ssh`). Nesting deeper than
//! [`MAX_DEPTH`] and text past the re-parse budget (four times the input) are not read, and
//! [`Split::refusal`] says so; the policy refuses such text. Once a refusal is set, the
//! rest of the text is not read either: it is refused whatever follows, so the commands
//! listed end there. A command read again with the same words is listed once.
//! The pass never panics, and its time and the size of what it returns are linear in the
//! input (times a small constant).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

mod directory;
mod emit;
use emit::{emit_texts, Names};
mod expand;
mod git;
mod grammar;
mod lexer;
mod scan;
mod values;
mod wrappers;

pub(crate) use wrappers::SHELLS;

use crate::policy::options;
use grammar::Until;
use lexer::Heredoc;
use wrappers::{
    alias_ends_a_word, check_table_names, code_strings, find_exec_commands, note_renames, peel,
    quoted, quoted_but_glob, renamed, shell_run, startup_file_piped, Rest, ShellRun,
};

/// How deep substitutions, quoted strings inside them and re-parsed `sh -c` strings may nest
/// before the text is given up on.
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
    /// The program's name (the first word of some layer) holds a substitution or a
    /// variable, so which program runs is only known at run time (`$cmd`, `zap$(x)me`).
    pub dynamic_name: bool,
    /// The directory the command runs in, had every `cd` before it succeeded: `/`-rooted,
    /// `~`-rooted, or relative to the directory the text starts in (`.` for that one).
    /// None when something before it may have changed the directory in a way the text
    /// does not say (see [`split`]).
    pub dir: Option<String>,
    /// What the command was also judged as beyond its wrappers, and why: `git push -f`
    /// for `git p`, because of `alias p from -c` (see [`git`]).
    pub readings: Vec<(String, String)>,
}

/// The simple commands found in a text, and why it cannot be checked when it cannot.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Split {
    /// Every simple command, in order of appearance (commands inside a substitution come
    /// before the command holding it).
    pub commands: Vec<SimpleCommand>,
    /// Set when some part of the text could hide a command the splitter cannot name: a
    /// construct it does not follow (a string the shell runs as code, a syntax error bash
    /// goes on after, a glob for a command name), or nesting deeper than [`MAX_DEPTH`] or
    /// re-parsing past the budget. The sentence names the first such construct; the
    /// policy refuses the text with it, and [`Split::commands`] ends where it was found.
    pub refusal: Option<String>,
    /// The files redirections open for writing (`> f`, `>> f`, `>| f`, `&> f`, `<> f`),
    /// as written after quote removal (a relative one joined to the directory it is
    /// written in when a `cd` made that known), each once, in order of appearance. A
    /// redirection duplicating a descriptor (`2>&1`) names none.
    pub written: Vec<String>,
}

/// Why text nested too deeply or repeating too much is refused.
pub const TOO_COMPLEX: &str = "it nests too deeply or repeats too much shell text to be \
     read in full";

/// Splits shell text into the simple commands it would run, each in all its spellings.
/// Accepts any text; never panics.
pub fn split(text: &str) -> Split {
    // A text that renames names (`alias`, `hash -p`) is read again knowing all of them
    // from its start, since a use may come before the definition (in a loop, or once
    // more after it), until a reading finds no new one.
    let mut renames = Renames::new();
    let mut readings = 0;
    let set_somewhere = values::names_set(text);
    loop {
        let allowance = text.len().saturating_mul(4).saturating_add(1 << 16);
        let mut cx = Context::new(allowance);
        cx.renames = renames;
        cx.set_somewhere = set_somewhere.clone();
        let known: usize = cx.renames.values().map(Vec::len).sum();
        check_table_names(&mut cx, text.as_bytes());
        let mut parser = Parser::new(text.as_bytes(), 0);
        parser.parse_list(&mut cx, Until::End);
        readings += 1;
        let found: usize = cx.renames.values().map(Vec::len).sum();
        if found > known && cx.refusal.is_none() {
            if readings < MAX_RENAME_READINGS {
                renames = cx.renames;
                continue;
            }
            cx.refuse(|| {
                "it defines aliases or names of programs that define more of them, too \
                 deep to follow"
                    .to_owned()
            });
        }
        return Split {
            commands: cx.out,
            refusal: cx.refusal,
            written: cx.written,
        };
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
    /// The values the text gave its variables, as far as they are known (see [`values`]).
    values: HashMap<String, String>,
    /// The elements of the array assignments (`a=(...)`) read since the last command was
    /// emitted, as written, in order: an assignment's word holds only `(...)`.
    arrays: Vec<String>,
    /// The names the text may set anywhere ([`values::names_set`]): an unknown one of
    /// these is not taken as possibly unset.
    set_somewhere: HashSet<String>,
    /// A number for `values`, as `args_generation` is for `args`.
    values_generation: u64,
    /// The git settings earlier `git config` commands wrote, in order (see [`git`]).
    git_config: Vec<(String, String)>,
    /// The commands found so far.
    out: Vec<SimpleCommand>,
    /// How many more bytes may be read a second time (backtick bodies, `sh -c` strings,
    /// `eval` arguments, `find -exec` commands, retried `((`).
    budget: usize,
    /// The first construct that makes the text impossible to check, if any.
    refusal: Option<String>,
    /// The positional parameters of the script being read, `$0` first.
    args: Vec<Vec<u8>>,
    /// A number for `args`: a new one whenever `args` changes, and its own again when the
    /// arguments around a script are put back after it, so that a command read again with
    /// the same arguments is known.
    args_generation: u64,
    /// The simple commands already read (see `grammar::repeat::repeat_key`), with whether each is
    /// a shell reading its script from standard input.
    seen: HashMap<Vec<u8>, bool>,
    /// The strings already split as scripts of their own, after the generation of `args`.
    scripts: HashSet<Vec<u8>>,
    /// Room to build a key for `seen` or `scripts` in.
    key: Vec<u8>,
    /// Set when a `$(` ran to the end of its text without its `)`.
    unclosed: bool,
    /// The directory the next command runs in (see [`SimpleCommand::dir`]).
    dir: Option<String>,
    /// A number for `dir`, as `args_generation` is for `args`: a command read again in
    /// another directory is another, and one read again in the directory put back after a
    /// substitution that changed it (`$(cd x)`, a backquoted `$cmd`) is the same.
    dir_generation: u64,
    /// The last `cd` followed (see `grammar::cd::follow_cd`): the generation of the directory
    /// it started from, its operand, and the directory it led to with its generation.
    last_cd: Option<(u64, String, (Option<String>, u64))>,
    /// The generation numbers handed out so far (for `args` and `dir`): a new one is never
    /// one that stands for other arguments or another directory.
    generations: u64,
    /// The files redirections open for writing (see [`Split::written`]), in order.
    written: Vec<String>,
    /// The same files, to find one already noted without a search through `written`.
    written_seen: HashSet<String>,
    /// Names the text gives a meaning of its own choosing: bash's table of programs
    /// (`hash -p PATH NAME`, `BASH_CMDS[NAME]=PATH`) maps a name to a program, and an
    /// alias (`alias NAME=TEXT`, `BASH_ALIASES[NAME]=TEXT`) to shell text (see
    /// [`wrappers::renamed`]). Every meaning a name is given anywhere in the text counts
    /// everywhere in it: a loop may run a use after the definition below it.
    renames: Renames,
    /// A number for `renames`, as `args_generation` is for `args`: a command read again
    /// after a name was renamed, or while a name is not (inside its own alias), is another.
    renames_generation: u64,
}

/// Every meaning each renamed name is given in a text.
type Renames = HashMap<String, Vec<Rename>>;

/// How many times a text that renames names is read, each time knowing the names the
/// readings before it found, before it is given up on.
const MAX_RENAME_READINGS: usize = 4;

/// How many meanings one name may be given in a text before it is refused: each use of
/// the name is read once for each.
const MAX_MEANINGS: usize = 16;

/// What reading a renamed name as one of its meanings costs of the budget beyond the
/// command's size.
const RENAME_READING_COST: usize = 64;

/// What a name stands for once the text has renamed it.
#[derive(Clone, PartialEq, Eq)]
enum Rename {
    /// A program's path, from bash's table of programs.
    Program(String),
    /// Shell text read where the name stands first in a command: an alias's value.
    Alias(String),
}

impl Context {
    /// A context for reading a `bash -c` script with `budget` bytes to read again.
    fn new(budget: usize) -> Context {
        Context {
            out: Vec::new(),
            budget,
            refusal: None,
            args: vec![b"bash".to_vec()],
            args_generation: 0,
            seen: HashMap::new(),
            scripts: HashSet::new(),
            key: Vec::new(),
            unclosed: false,
            dir: Some(".".to_owned()),
            dir_generation: 0,
            last_cd: None,
            generations: 1,
            written: Vec::new(),
            written_seen: HashSet::new(),
            renames: Renames::new(),
            renames_generation: 0,
            values: HashMap::new(),
            arrays: Vec::new(),
            set_somewhere: HashSet::new(),
            values_generation: 0,
            git_config: Vec::new(),
        }
    }

    /// Makes `dir` the directory the next command runs in.
    fn set_dir(&mut self, dir: Option<String>) {
        if self.dir != dir {
            self.dir = dir;
            self.dir_generation = self.new_generation();
        }
    }

    /// Puts back the directory and its generation taken before a script that may have
    /// changed it.
    fn restore_dir(&mut self, (dir, generation): (Option<String>, u64)) {
        self.dir = dir;
        self.dir_generation = generation;
    }

    fn new_generation(&mut self) -> u64 {
        self.generations += 1;
        self.generations - 1
    }

    /// Notes a file a redirection opens for writing; a relative one as seen from the
    /// directory the command runs in, when that is known (`cd /dev && echo x > sda`
    /// writes `/dev/sda`; after `cd dev` it writes `dev/sda` from where the text starts).
    fn writes(&mut self, target: &[u8]) {
        let target = String::from_utf8_lossy(target).into_owned();
        let joined = self
            .dir
            .as_deref()
            .filter(|&dir| dir != ".")
            .filter(|_| !options::is_rooted(&target) && !target.contains(['$', '`']))
            .and_then(|dir| options::join_path(dir, &target));
        let file = joined.unwrap_or(target);
        if !self.written_seen.contains(&file) {
            self.written_seen.insert(file.clone());
            self.written.push(file);
        }
    }

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
    /// Some part is only known at run time: a substitution, `$name`, an unset parameter.
    dynamic: bool,
    /// The word with each `${x:-word}` (and `-`, `:=`, `=`; and `:+`, `+`) replaced by its
    /// word: what it is when the variable is unset (or set). None when it holds no such
    /// default.
    alternative: Option<Vec<u8>>,
    /// Where the values of unquoted expansions stand, which bash splits into words at
    /// blanks; None when there is none (boxed: most words have none, and a word is small).
    fields: Option<Box<Fields>>,
}

/// Where in a word the values of unquoted expansions (a known parameter's) stand, in order:
/// bash splits them into words at blanks (`${1:-nohup x}` is two words).
#[derive(Default)]
struct Fields {
    /// In the word's `text`.
    text: Vec<(usize, usize)>,
    /// In its `alternative` (the word of an unquoted `${x:-word}`).
    alternative: Vec<(usize, usize)>,
}

impl Word {
    fn fields(&self) -> &[(usize, usize)] {
        self.fields.as_ref().map_or(&[], |f| &f.text)
    }

    fn alternative_fields(&self) -> &[(usize, usize)] {
        self.fields.as_ref().map_or(&[], |f| &f.alternative)
    }

    fn fields_mut(&mut self) -> &mut Fields {
        self.fields.get_or_insert_with(Box::default)
    }

    fn plain(&self) -> bool {
        !self.quoted && !self.expanded
    }

    fn is(&self, keyword: &str) -> bool {
        self.plain() && self.text == keyword.as_bytes()
    }
}

/// What the commands read at a point depend on besides the text: the depth, the
/// substitutions around it, and the generations of the positional parameters, of the
/// directory and of the renamed names.
type ReadState = (usize, usize, u64, u64, u64);

struct Parser<'s> {
    src: &'s [u8],
    pos: usize,
    depth: usize,
    /// How many `$( )`, `<( )` or `>( )` of this text enclose the position.
    substitutions: usize,
    /// The last substitution read (its text's start and end, after the opening bracket)
    /// with the state it was read in.
    last_substitution: Option<(usize, usize, ReadState)>,
    heredocs: Vec<Heredoc>,
    /// The word of the last `${x:-word}` read, for the word's alternative spelling.
    default_word: Option<Vec<u8>>,
    /// The next word stands where an assignment may (a command's first word, or after
    /// assignments), so `NAME[...]` in it is read up to its matching `]`.
    assignment_ok: bool,
}

impl<'s> Parser<'s> {
    fn new(src: &'s [u8], depth: usize) -> Self {
        Parser {
            src,
            pos: 0,
            depth,
            substitutions: 0,
            last_substitution: None,
            heredocs: Vec::new(),
            default_word: None,
            assignment_ok: false,
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

/// The longest string whose reading is remembered, so that it is read only once.
const MAX_REPEAT_SCRIPT: usize = 4096;

/// Splits `text` (the body of backticks, a `-c` string, `eval`'s arguments) as shell text of
/// its own, or gives up when nesting or the re-parse budget runs out.
fn sub_parse(cx: &mut Context, text: &[u8], depth: usize) {
    if text.len() <= MAX_REPEAT_SCRIPT {
        // The same string read again (backticks repeated, `sh -c` with the same text) with
        // the same positional parameters in the same directory finds the same commands.
        cx.key.clear();
        cx.key.extend_from_slice(&cx.args_generation.to_le_bytes());
        cx.key.extend_from_slice(&cx.dir_generation.to_le_bytes());
        cx.key
            .extend_from_slice(&cx.renames_generation.to_le_bytes());
        cx.key.extend_from_slice(text);
        if cx.scripts.contains(cx.key.as_slice()) {
            return;
        }
        cx.scripts.insert(cx.key.clone());
    }
    if depth >= MAX_DEPTH || cx.budget < text.len() {
        give_up(cx);
        return;
    }
    cx.budget -= text.len();
    check_table_names(cx, text);
    let mut parser = Parser::new(text, depth);
    parser.parse_list(cx, Until::End);
}

/// Where the parser gives up (nesting past [`MAX_DEPTH`], the re-parse budget spent): the
/// text is refused, so nothing after it needs reading.
fn give_up(cx: &mut Context) {
    cx.refuse(|| TOO_COMPLEX.to_owned());
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
