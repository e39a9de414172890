//! Names given a new meaning by the text: aliases, functions, `hash -p` and the tables
//! bash keeps (`BASH_ALIASES`, `BASH_CMDS`), followed to the commands that use them.

use super::*;

/// Notes an assignment to bash's table of programs (`BASH_CMDS[NAME]=PATH`, as
/// `hash -p PATH NAME`) or of aliases (`BASH_ALIASES[NAME]=TEXT`, as `alias`). Any
/// other change of them (the whole table, a name known at run time, `+=`) is refused:
/// which program a name runs would not be known.
pub(crate) fn note_table_entry(cx: &mut Context, target: &str, value: &str) {
    let (table, key) = match target.split_once('[') {
        Some((table, rest)) => (table, rest.strip_suffix(']')),
        None => (target.trim_end_matches('+'), None),
    };
    if !matches!(table, "BASH_CMDS" | "BASH_ALIASES") {
        return;
    }
    let key = key.filter(|k| is_name(k.as_bytes()) || is_plain_name(k));
    match key {
        Some(key) if !target.ends_with('+') => {
            let rename = if table == "BASH_CMDS" {
                Rename::Program(value.to_owned())
            } else {
                Rename::Alias(value.to_owned())
            };
            give_meaning(cx, key, rename);
        }
        _ => cx.refuse(|| {
            format!(
                "it changes bash's table of {} ('{}') in a way that is not followed, so \
                 which program a name runs is not known",
                if table == "BASH_CMDS" {
                    "programs"
                } else {
                    "aliases"
                },
                truncated(target)
            )
        }),
    }
}

/// Whether a command name is plain text (no expansion, quote or blank), as a key of
/// `BASH_CMDS` may be (`BASH_CMDS[ls.x]`).
pub(crate) fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(is_plain) && !name.contains(['$', '`', '[', ']'])
}

/// Notes what a command renames for the rest of the text: `hash -p PATH NAME...` makes
/// each NAME run PATH, `alias NAME=TEXT` makes NAME read TEXT; a builtin that assigns
/// those tables otherwise than by `NAME=value` (`read`, `printf -v`, `mapfile`) is
/// refused. The `NAME=value` operands of `declare` and its kin are read as assignments
/// ([`assignment`]), and so are the arguments of `printf -v NAME`, whose output is the
/// value.
pub(crate) fn note_renames(cx: &mut Context, words: &[String], depth: usize) {
    let Some(first) = words.first() else { return };
    let args = &words[1..];
    match first.as_str() {
        "hash" => {
            let mut path = None;
            let mut index = 0;
            while let Some(arg) = args.get(index) {
                if arg == "--" {
                    index += 1;
                    break;
                }
                if !arg.starts_with('-') || arg.len() < 2 {
                    break;
                }
                index += 1;
                if let Some(at) = arg.find('p') {
                    let attached = &arg[at + 1..];
                    if attached.is_empty() {
                        path = args.get(index).cloned();
                        index += 1;
                    } else {
                        path = Some(attached.to_owned());
                    }
                }
            }
            if let Some(path) = path {
                for name in args.get(index..).unwrap_or(&[]) {
                    give_meaning(cx, name, Rename::Program(path.clone()));
                }
            }
        }
        "alias" => {
            for (name, value) in args.iter().filter_map(|a| a.split_once('=')) {
                give_meaning(cx, name, Rename::Alias(value.to_owned()));
            }
        }
        "declare" | "typeset" | "local" | "export" | "readonly" => {
            if first != "export"
                && args
                    .iter()
                    .any(|a| a.starts_with('-') && a != "--" && a.contains('n'))
            {
                cx.refuse(|| {
                    format!(
                        "`{first} -n` makes a name stand for another variable (a nameref), \
                         which is not followed"
                    )
                });
            }
            for arg in args.iter().filter(|a| !a.starts_with(['-', '+'])) {
                let name = arg.split_once('=').map_or(arg.as_str(), |(name, _)| name);
                if first != "export" && first != "readonly" && may_name_a_table(name) {
                    refuse_name_known_at_run_time(cx, first, arg);
                }
                if is_assignment(arg) || arg.split_once('=').is_some_and(|(t, _)| t.contains('[')) {
                    assignment(cx, arg, depth);
                }
            }
        }
        "printf" if args.iter().any(|a| a.starts_with("-v")) => {
            // Each argument, and what the format makes of them all (its escapes decoded,
            // the arguments put in): `'a[\x24(X)]'`, `'%s(X)]' 'a[$'` make `a[$(X)]`.
            let output = printf_output(args);
            for arg in args
                .iter()
                .filter(|a| !a.starts_with('-'))
                .chain(output.as_ref())
            {
                if let Some(text) = assigned_code(arg) {
                    Parser::new(&[], depth).expand_as_double_quoted(cx, text.as_bytes());
                }
            }
        }
        _ => {}
    }
    if let Some(name) = assigned_names(first, args)
        .into_iter()
        .find(|n| may_name_a_table(n))
    {
        refuse_name_known_at_run_time(cx, first, name);
    }
    match first.as_str() {
        "read" | "printf" | "mapfile" | "readarray" | "wait" => {
            if let Some(arg) = args
                .iter()
                .find(|a| a.contains("BASH_CMDS") || a.contains("BASH_ALIASES"))
            {
                cx.refuse(|| {
                    format!(
                        "`{first}` assigns bash's table of programs or aliases ('{}'), so \
                         which program a name runs is not known",
                        truncated(arg)
                    )
                });
            }
        }
        _ => {}
    }
}

/// The names of the variables `read`, `printf -v`, `mapfile` (`readarray`) and `wait -p`
/// assign, as written.
pub(crate) fn assigned_names<'a>(program: &str, args: &'a [String]) -> Vec<&'a String> {
    // Options that take a value, and the one whose value is a name.
    let (valued, naming, operands_are_names) = match program {
        "read" => ("dinNptu", 'a', true),
        "printf" => ("", 'v', false),
        "mapfile" | "readarray" => ("dnOsuCc", '\0', true),
        "wait" => ("", 'p', false),
        _ => ("", '\0', false),
    };
    let mut names = Vec::new();
    let mut index = 0;
    while let Some(arg) = args.get(index) {
        index += 1;
        if arg == "--" {
            break;
        }
        if !arg.starts_with('-') || arg.len() < 2 {
            index -= 1;
            break;
        }
        for (at, letter) in arg.char_indices().skip(1) {
            if letter != naming && !valued.contains(letter) {
                continue;
            }
            let value = if at + 1 < arg.len() {
                Some(&arg[at + 1..])
            } else {
                index += 1;
                args.get(index - 1).map(String::as_str)
            };
            if letter == naming {
                names.extend(value);
            }
            break;
        }
    }
    let operands = if operands_are_names {
        args.get(index..).unwrap_or(&[])
    } else {
        &[]
    };
    args.iter()
        .filter(|a| names.contains(&a.as_str()) || operands.contains(a))
        .collect()
}

/// Whether a variable's name as written (before any `[`) is known only at run time and
/// may be `BASH_CMDS` or `BASH_ALIASES`: what is written before its first expansion
/// starts one of them (`$x`, `BASH_${x}`, not `VAR_$x`).
pub(crate) fn may_name_a_table(name: &str) -> bool {
    let base = name.split('[').next().unwrap_or(name);
    base.find(['$', '`']).is_some_and(|at| {
        let known = &base[..at];
        "BASH_CMDS".starts_with(known) || "BASH_ALIASES".starts_with(known)
    })
}

/// Refuses a builtin assigning a variable whose name is known only at run time
/// (`declare "$x[t]=..."`, `printf -v "$x"`, `read "$x"`): it may be bash's table of
/// programs or aliases.
pub(crate) fn refuse_name_known_at_run_time(cx: &mut Context, program: &str, arg: &str) {
    cx.refuse(|| {
        format!(
            "`{program}` assigns a variable whose name is known only at run time ('{}'), \
             which may be bash's table of programs or aliases",
            truncated(arg)
        )
    });
}

/// Refuses `text` when it names bash's table of programs or aliases (`BASH_CMDS`,
/// `BASH_ALIASES`) other than at the start of a word followed by `[`, as an entry
/// assigned by name is written (`BASH_CMDS[t]=PATH`, `declare BASH_ALIASES[t]=TEXT`),
/// which is followed: a nameref to them, `${BASH_CMDS[t]:=PATH}` or their name kept in a
/// variable would change them unseen.
pub(crate) fn check_table_names(cx: &mut Context, text: &[u8]) {
    if cx.refusal.is_some() {
        return;
    }
    let mut from = 0;
    while let Some(at) = text[from..].iter().position(|&b| b == b'B') {
        let at = from + at;
        from = at + 1;
        let rest = &text[at..];
        let Some(table) = ["BASH_CMDS", "BASH_ALIASES"]
            .into_iter()
            .find(|t| rest.starts_with(t.as_bytes()))
        else {
            continue;
        };
        let word_start = at == 0 || b" \t\n;&|(`'\"".contains(&text[at - 1]);
        if !(word_start && rest.get(table.len()) == Some(&b'[')) {
            cx.refuse(|| {
                format!(
                    "it names bash's table of {} ('{table}') otherwise than to assign an \
                     entry by name, so which program a name runs is not known",
                    if table == "BASH_CMDS" {
                        "programs"
                    } else {
                        "aliases"
                    }
                )
            });
            return;
        }
    }
}

/// Notes one more meaning of `name` (see `Context::renames`); past [`MAX_MEANINGS`] the
/// text is refused.
pub(crate) fn give_meaning(cx: &mut Context, name: &str, rename: Rename) {
    let meanings = cx.renames.entry(name.to_owned()).or_default();
    if meanings.contains(&rename) {
        return;
    }
    if meanings.len() >= MAX_MEANINGS {
        cx.refuse(|| {
            format!(
                "the name '{}' is given more than {MAX_MEANINGS} meanings (`alias`, \
                 `hash -p`), each to be read wherever it is used",
                truncated(name)
            )
        });
        return;
    }
    meanings.push(rename);
    cx.renames_generation = cx.new_generation();
}

/// Whether a command's name was renamed by the text (`hash -p /usr/bin/X t`,
/// `alias t='X -i'`): then the name, to read each program or text it stands for in its
/// place (see `Context::renames`).
pub(crate) fn renamed<'w>(cx: &Context, words: &'w [String]) -> Option<&'w str> {
    let name = words.first()?;
    (!name.contains('/') && cx.renames.contains_key(name)).then_some(name.as_str())
}

/// Whether an alias's value, read before the words after it, leaves them the words they
/// were: it does not end in a blank (which makes bash expand the next word as an alias),
/// an operator, a backslash or a reserved word (after which the next word may be a
/// keyword).
pub(crate) fn alias_ends_a_word(value: &str) -> bool {
    let last_word = value
        .rsplit(|c: char| c.is_ascii_whitespace())
        .next()
        .unwrap_or("");
    !value.is_empty()
        && !value.ends_with(|c: char| c.is_ascii_whitespace() || ";&|()<>\\".contains(c))
        && !RESERVED.contains(&last_word)
}
