//! Text run as shell code: shells given `-c` (and their positional arguments) or reading
//! their script from standard input or a pipe, `eval`, `trap` and the other builtins that
//! run or expand a string later, and code assigned to variables bash runs (`PROMPT_COMMAND`).

use super::*;

/// Shells: their `-c` string is split as shell text, and without a script operand they
/// read their script from standard input.
pub(crate) const SHELLS: &[&str] = &[
    "sh", "bash", "rbash", "dash", "zsh", "ksh", "ksh93", "mksh", "pdksh", "ash", "yash", "posh",
    "csh", "tcsh", "fish",
];

/// Reserved words, which mean something else as the first word of a command.
pub(crate) const RESERVED: &[&str] = &[
    "!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "case", "esac", "while",
    "until", "for", "select", "in", "function", "time", "coproc", "[[", "]]",
];

/// For `eval` (`words[0]`) whose arguments read back as the same words (each plain,
/// not a comment, the first not a reserved word), the index of the first of them: their
/// text joined is a simple command with exactly those words, so it needs no second
/// reading. None when the arguments must be read as shell text.
pub(crate) fn eval_of_words(words: &[String]) -> Option<usize> {
    let start = 1 + words[1..].iter().take_while(|w| *w == "--").count();
    let args = words.get(start..).filter(|args| !args.is_empty())?;
    let plain = args
        .iter()
        .all(|arg| !arg.is_empty() && !arg.starts_with('#') && arg.bytes().all(is_plain));
    (plain && !RESERVED.contains(&args[0].as_str())).then_some(start)
}

/// How a shell command runs its script.
pub(crate) enum ShellRun {
    /// A `-c` string, with the positional parameters after it (`$0` first).
    String(String, Vec<String>),
    /// A script read from standard input.
    Stdin,
    /// A script read from a pipe it is given as a file: a process substitution
    /// (`bash <(curl x)`) or an open file (`/dev/fd/3`).
    Piped,
}

/// For a shell, how it gets its script (None for a script file or another program); for
/// `.` and `source`, the same when the file they read is standard input or a pipe; for
/// `eval`, its arguments joined (an `eval` of plain words is also peeled as a wrapper).
pub(crate) fn shell_run(words: &[String]) -> Option<ShellRun> {
    let name = basename(words.first()?);
    if name == "eval" {
        let args: Vec<&str> = words
            .iter()
            .skip(1)
            .map(String::as_str)
            .skip_while(|w| *w == "--")
            .collect();
        return (!args.is_empty()).then(|| ShellRun::String(args.join(" "), Vec::new()));
    }
    if matches!(words[0].as_str(), "." | "source") {
        // The running shell reads the file as a script of its own: its standard input
        // (`. /dev/stdin <<< x`) or a pipe (`source <(curl x)`) just as a shell would.
        let script = words[1..].iter().find(|w| *w != "--")?;
        return if is_stdin(script) {
            Some(ShellRun::Stdin)
        } else if script == "<(...)" || is_open_file(script) {
            Some(ShellRun::Piped)
        } else {
            None
        };
    }
    if matches!(name, "at" | "batch") {
        // `at TIME` and `batch` read the script they queue for `sh` from their input,
        // unless a file is named (`-f FILE`) or they only list or remove jobs.
        let own = |w: &String| w.starts_with('-') && w.contains(['f', 'l', 'r', 'd', 'c']);
        return (!words[1..].iter().any(own)).then_some(ShellRun::Stdin);
    }
    if !SHELLS.contains(&name) {
        return None;
    }
    let mut has_c = false;
    let mut has_s = false;
    // `-n` (`-o noexec`) reads the script without running it, unless the shell is
    // interactive, where it is ignored.
    let mut noexec = false;
    let mut interactive = false;
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
            let on = word.starts_with('-');
            has_c |= on && flags.contains('c');
            has_s |= on && flags.contains('s');
            interactive |= on && flags.contains('i');
            if flags.contains('n') {
                noexec = on;
            }
            if flags.ends_with('o') || flags.ends_with('O') {
                if flags.ends_with('o') && words.get(index + 1).is_some_and(|o| o == "noexec") {
                    noexec = on;
                }
                index += 2;
            } else {
                index += 1;
            }
            continue;
        }
        break;
    }
    if noexec && !interactive && name != "fish" {
        // A syntax check (`bash -n <<< 'X'`, `sh -n -c 'X'`): nothing in it runs.
        return None;
    }
    if has_c {
        let script = words.get(index)?.clone();
        let mut args: Vec<String> = words.get(index + 1..).unwrap_or(&[]).to_vec();
        if args.is_empty() {
            args.push(name.to_owned());
        }
        return Some(ShellRun::String(script, args));
    }
    match words.get(index).filter(|_| !has_s) {
        None => Some(ShellRun::Stdin),
        Some(script) if is_stdin(script) => Some(ShellRun::Stdin),
        Some(script) if script == "<(...)" || is_open_file(script) => Some(ShellRun::Piped),
        Some(_) => None,
    }
}

/// Whether a shell reads a startup file that is a pipe or its standard input: an
/// interactive shell runs `--rcfile <(curl x)` (and `--init-file`) as `bash <(curl x)`
/// runs its script.
pub(crate) fn startup_file_piped(words: &[String]) -> bool {
    if !words.first().is_some_and(|w| SHELLS.contains(&basename(w))) {
        return false;
    }
    words.iter().enumerate().any(|(index, word)| {
        let value = match word.split_once('=') {
            Some(("--rcfile" | "--init-file", value)) => Some(value),
            _ if matches!(word.as_str(), "--rcfile" | "--init-file") => {
                words.get(index + 1).map(String::as_str)
            }
            _ => None,
        };
        value.is_some_and(is_pipe)
    })
}

/// Whether a file a shell reads as a script is a pipe or its standard input
/// (`<(...)`, `/dev/stdin`, `/dev/fd/3`).
pub(crate) fn is_pipe(path: &str) -> bool {
    path == "<(...)" || is_stdin(path) || is_open_file(path)
}

/// Whether the options of `command` (the words between its name and the command) ask
/// only for a description of the command (`-v`, `-V`, also with `-p`).
pub(crate) fn describes_only(options: &[String]) -> bool {
    options
        .iter()
        .any(|o| o.starts_with('-') && !o.starts_with("--") && o.contains(['v', 'V']))
}

/// Whether a script file is the shell's own standard input (`/dev/stdin`, `/dev/fd/0`,
/// `/proc/self/fd/0`).
pub(crate) fn is_stdin(path: &str) -> bool {
    matches!(
        path_parts(path).as_slice(),
        ["dev", "stdin"] | ["dev", "fd", "0"] | ["proc", _, "fd", "0"]
    )
}

/// Whether a script file is a descriptor already open, as a process substitution is
/// handed on (`/dev/fd/63`, `/proc/self/fd/63`).
pub(crate) fn is_open_file(path: &str) -> bool {
    matches!(
        path_parts(path).as_slice(),
        ["dev", "fd", _] | ["proc", _, "fd", _]
    )
}

pub(crate) fn path_parts(path: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    for part in path.split('/').filter(|p| !p.is_empty() && *p != ".") {
        if part == ".." {
            // `/dev/../dev/stdin` is `/dev/stdin`.
            parts.pop();
        } else {
            parts.push(part);
        }
    }
    parts
}

/// The strings of shell code a builtin keeps to run later (`trap 'X' EXIT`,
/// `mapfile -C X`, `compgen -C X`), and the strings it will expand again as words (a subscript in
/// `printf -v 'a[$(X)]'`, `unset`, `test -v`, `[[ -v ]]`): `(run, expand)`.
pub(crate) fn code_strings(words: &[String]) -> (Vec<String>, Vec<String>) {
    let mut run = Vec::new();
    let mut expand = Vec::new();
    let Some(first) = words.first() else {
        return (run, expand);
    };
    let args = &words[1..];
    match first.as_str() {
        "trap" => {
            let operands: Vec<&String> = args.iter().skip_while(|a| a.starts_with('-')).collect();
            if operands.len() >= 2 {
                run.push(operands[0].clone());
            }
        }
        // The value of an alias is read where the alias is used (see [`renamed`]):
        // defining one runs nothing.
        // `compgen -C X` runs X at once, `complete -C X` at each completion; the word
        // list of `-W` is expanded as words are.
        "compgen" | "complete" => {
            for (index, arg) in args.iter().enumerate() {
                if !arg.starts_with('-') || arg.starts_with("--") {
                    continue;
                }
                for (at, flag) in arg.bytes().enumerate().skip(1) {
                    if !b"ACFGPSWXo".contains(&flag) {
                        continue;
                    }
                    let attached = &arg[at + 1..];
                    let value = if attached.is_empty() {
                        args.get(index + 1).cloned()
                    } else {
                        Some(attached.to_owned())
                    };
                    match flag {
                        b'C' => run.extend(value),
                        b'W' => expand.extend(value.as_deref().and_then(assigned_code)),
                        _ => {}
                    }
                    break;
                }
            }
        }
        "mapfile" | "readarray" => {
            for (index, arg) in args.iter().enumerate() {
                if arg == "-C" {
                    run.extend(args.get(index + 1).cloned());
                } else if let Some(callback) = arg.strip_prefix("-C") {
                    run.push(callback.to_owned());
                }
            }
        }
        _ => {}
    }
    // Words a builtin takes as variable names, whose subscripts are expanded once more
    // (`printf -v 'a[$(X)]'`), and the arithmetic of `let`.
    let after = |flag: &str| -> Vec<&str> {
        args.windows(2)
            .filter(|pair| pair[0] == flag)
            .map(|pair| pair[1].as_str())
            .collect()
    };
    // An option's value may also be attached (`printf -va[$(X)] x`).
    let attached = |flag: &str| -> Vec<&str> {
        args.iter()
            .filter_map(|a| a.strip_prefix(flag).filter(|name| !name.is_empty()))
            .collect()
    };
    let names: Vec<&str> = match first.as_str() {
        "printf" => [after("-v"), attached("-v")].concat(),
        "test" | "[" | "[[" => after("-v"),
        "wait" => [after("-p"), attached("-p")].concat(),
        "unset" | "read" | "declare" | "typeset" | "local" | "export" | "readonly" | "let" => args
            .iter()
            .filter(|a| !a.starts_with('-'))
            .map(String::as_str)
            .collect(),
        _ => Vec::new(),
    };
    for name in names {
        let name = match first.as_str() {
            "let" => name,
            _ => name.split('=').next().unwrap_or(""),
        };
        let subscript = first == "let" || name.contains('[');
        if subscript && expands_again(name) {
            expand.push(name.to_owned());
        }
    }
    // Values expanded again as subscripts: a nameref's (`declare -n r='a[$(X)]'`), an
    // integer's arithmetic (`declare -i`), a compound assignment given as a string
    // (`declare -a 'a=([$(X)]=1)'`), and the arithmetic operands of `[[ ]]`.
    match first.as_str() {
        "declare" | "typeset" | "local" | "export" | "readonly" => {
            let options: String = args
                .iter()
                .filter(|a| a.starts_with(['-', '+']))
                .map(|a| &a[1..])
                .collect();
            for arg in args.iter().filter(|a| !a.starts_with(['-', '+'])) {
                if let Some((_, value)) = arg.split_once('=') {
                    let reread = options.contains(['n', 'i']) || value.starts_with('(');
                    // Any other value is read as an assignment's is (see `note_renames`).
                    if reread && value.contains('[') && expands_again(value) {
                        expand.push(value.to_owned());
                    }
                }
            }
        }
        "[[" => {
            for pair in args.windows(3) {
                if ["-eq", "-ne", "-lt", "-le", "-gt", "-ge"].contains(&pair[1].as_str()) {
                    for operand in [&pair[0], &pair[2]] {
                        if operand.contains('[') && expands_again(operand) {
                            expand.push(operand.clone());
                        }
                    }
                }
            }
        }
        _ => {}
    }
    // An assignment to an array element whose subscript is quoted, which the parser left
    // as the command's first word (`a['a[$(X)]']=1`).
    if let Some((target, _)) = first.split_once('=') {
        let target = target.strip_suffix('+').unwrap_or(target);
        let named = target
            .split_once('[')
            .is_some_and(|(name, _)| is_name(name.as_bytes()));
        if named && target.ends_with(']') && expands_again(target) {
            expand.push(target.to_owned());
        }
    }
    (run, expand)
}

/// Whether a string the shell expands a second time holds something that runs there: a
/// substitution or a `${ }`.
pub(crate) fn expands_again(text: &str) -> bool {
    text.contains("$(") || text.contains('`') || text.contains("${")
}

/// The assignments whose value the shell runs or expands later: prompts (`PS4` with
/// `set -x`) and the startup files of a shell (`BASH_ENV`, `ENV`) are expanded,
/// `PROMPT_COMMAND` is run. `(run, expand)` like [`code_strings`]. Any other value is
/// expanded when it holds a substitution ([`assigned_code`]).
pub(crate) fn code_in_assignment(word: &str) -> (Option<String>, Option<String>) {
    let Some((name, value)) = word.split_once('=') else {
        return (None, None);
    };
    let name = name.trim_end_matches('+');
    match name {
        "PS0" | "PS1" | "PS2" | "PS3" | "PS4" | "BASH_ENV" | "ENV" => {
            (None, Some(value.to_owned()))
        }
        "PROMPT_COMMAND" => (Some(value.to_owned()), None),
        _ => (None, assigned_code(value)),
    }
}

/// The value assigned to a variable, when it holds a substitution written in it (not one
/// the assignment itself ran, which was read where it stood), as text to read as if
/// it ran: `x='a[$(X)]'`.
///
/// Why every such value: bash evaluates a variable's value as arithmetic wherever the
/// variable is used as a number (`(( x ))`, `$((x))`, `let x`, `[[ $x -eq 0 ]]`,
/// `${a[x]}`, `${s:x}`, another variable holding its name), and arithmetic expands an
/// array subscript, `$( )` in it included, so `x='a[$(X)]'; (( x ))` runs X. Following
/// which variables reach arithmetic (through other variables, functions, the
/// environment of a child shell) is not possible from the text, and a substitution in a
/// literal value is rarely data: so it is checked as if it ran. What it cannot see: a
/// value built at run time (`x=$(printf ...)`, `read x`, `x+=` in parts, the elements of
/// `x=(...)`), or inherited.
pub(crate) fn assigned_code(value: &str) -> Option<String> {
    // The splitter writes a substitution it already read as `$(...)`, `` `...` `` or
    // `$((...))`: those ran (or not) where they stood.
    let written = value
        .replace("$((...))", "")
        .replace("$(...)", "")
        .replace("`...`", "");
    expands_again(&written).then_some(written)
}

/// What an assignment (a command's leading `NAME=value`, or one of `declare`'s operands)
/// runs or changes: the code in its value is read, and an entry of bash's tables of
/// programs and aliases is noted for the rest of the text.
pub(crate) fn assignment(cx: &mut Context, word: &str, depth: usize) {
    let (run, expand) = code_in_assignment(word);
    if let Some(script) = run {
        sub_parse(cx, script.as_bytes(), depth + 1);
    }
    if let Some(text) = expand {
        Parser::new(&[], depth).expand_as_double_quoted(cx, text.as_bytes());
    }
    if let Some(refusal) = startup_file_pipe(word) {
        cx.refuse(|| refusal);
    }
    let Some((target, value)) = word.split_once('=') else {
        return;
    };
    note_table_entry(cx, target, value);
    crate::policy::splitter::values::note_assignment(cx, target, value);
}

/// Why an assignment cannot be checked when it names a pipe or standard input as a
/// shell's startup file (`BASH_ENV=/dev/stdin`, `ENV=<(curl x)`).
pub(crate) fn startup_file_pipe(word: &str) -> Option<String> {
    let (target, value) = word.split_once('=')?;
    (matches!(target, "BASH_ENV" | "ENV") && is_pipe(value)).then(|| {
        format!(
            "{target} names a pipe or standard input ('{}'): the startup script a shell \
             reads from it cannot be checked",
            truncated(value)
        )
    })
}
