//! One simple command's spellings: its words with wrappers peeled (each layer a spelling
//! of its own), renamed names read as each of their meanings, and the scripts it hands to
//! a shell or keeps to run later split in turn.

use super::*;

/// The shell that reads a command's input: `sh` for `at` and `batch`, which queue it for
/// one, else the program itself.
fn queued_shell(words: &[String]) -> &str {
    match basename(&words[0]) {
        "at" | "batch" => "sh",
        name => name,
    }
}

/// Words of a command that, standing as a program's name, make it unknown until run time.
#[derive(Default)]
pub(super) struct Names {
    /// Unquoted globs.
    pub(super) globs: Vec<String>,
    /// Words holding a substitution or a variable.
    pub(super) dynamic: Vec<String>,
}

/// Builds the spellings of one simple command from its words, peeling wrappers, and splits
/// the scripts it hands to a shell or keeps to run later. `written` is an extra spelling
/// (the text before brace expansion); `stdin` is what the command reads on standard input;
/// `names` are the words that make a name unknown until run time.
/// At `MAX_DEPTH` nothing is split any further. Returns whether the command is a shell
/// that reads its script from standard input.
pub(super) fn emit_texts(
    cx: &mut Context,
    words: &[String],
    depth: usize,
    written: Option<String>,
    stdin: &Input,
    names: &Names,
) -> bool {
    if cx.refusal.is_some() {
        // The text is refused whatever this command is.
        return false;
    }
    // `$BASH` is the path of the shell running the text, unless the text sets it:
    // `$BASH -c X` runs bash on X.
    let bash_named = matches!(words.first().map(String::as_str), Some("$BASH" | "${BASH}"))
        && !cx.values.contains_key("BASH")
        && !cx.set_somewhere.contains("BASH");
    let first: Cow<[String]> = if bash_named {
        let mut named = words.to_vec();
        named[0] = "bash".to_owned();
        Cow::Owned(named)
    } else {
        Cow::Borrowed(words)
    };
    // Each layer is a run of words in one of `stores`: a wrapper's command is the tail of
    // its own words, so peeling shares them instead of copying them.
    let mut stores: Vec<Cow<[String]>> = vec![first];
    let mut layers: Vec<(usize, usize)> = vec![(0, 0)];
    let mut scripts: Vec<(String, Option<Vec<String>>)> = Vec::new();
    let mut values: Vec<String> = Vec::new();
    loop {
        let (store, start) = layers[layers.len() - 1];
        let Some(peeled) = peel(&stores[store][start..]) else {
            break;
        };
        if layers.len() == MAX_LAYERS {
            // The program that finally runs is further in than the layers read.
            cx.refuse(|| {
                format!(
                    "more than {MAX_LAYERS} programs that run a program (`nohup`, `env`, \
                     `eval` ...) stand before the command"
                )
            });
            break;
        }
        scripts.extend(peeled.scripts.into_iter().map(|s| (s, None)));
        values.extend(peeled.values);
        if let Some(refusal) = peeled.refusal {
            cx.refuse(|| refusal);
        }
        match peeled.runs {
            Rest::From(offset) => layers.push((store, start + offset)),
            Rest::Words(words) if words.is_empty() => break,
            Rest::Words(words) => {
                stores.push(Cow::Owned(words));
                layers.push((stores.len() - 1, 0));
            }
        }
    }
    let mut readings = Vec::new();
    // What git's configuration makes a git command run: its alias expanded as a further
    // layer, the programs it runs as scripts.
    if let Some(&(store, start)) = layers.last() {
        let run = git::read(cx, &stores[store][start..]);
        readings = run.readings;
        if git::note_config(cx, &stores[store][start..]) {
            cx.values_generation = cx.new_generation();
        }
        scripts.extend(run.scripts.into_iter().map(|s| (s, None)));
        if let Some(words) = run.expanded {
            stores.push(Cow::Owned(words));
            layers.push((stores.len() - 1, 0));
        }
    }
    if cx.refusal.is_some() {
        // Refused already (too many layers): the command as written is all that is worth
        // listing, and spelling every layer of it would only cost time.
        let spellings = spellings(&stores[0]);
        cx.out.push(SimpleCommand {
            forms: spellings.clone(),
            innermost: spellings,
            dir: cx.dir.clone(),
            ..SimpleCommand::default()
        });
        return false;
    }
    let mut command = SimpleCommand {
        readings,
        ..SimpleCommand::default()
    };
    if let Some(written) = written {
        command.forms.push(written);
    }
    // The command with its variables spelled with values they can take, checked too;
    // then what it assigns, for the commands after it.
    let valued = values::substituted(cx, &stores[0]);
    if let Some(&(store, start)) = layers.last() {
        values::note_command(cx, &stores[store][start..]);
    }
    let mut reads_stdin = false;
    let mut expand = Vec::new();
    let mut execs = Vec::new();
    let mut renames = Vec::new();
    for (index, &(store, start)) in layers.iter().enumerate() {
        let layer = &stores[store][start..];
        let last = index + 1 == layers.len();
        // Only the innermost program can be a shell or `eval` (an `eval` of plain words
        // was peeled as a wrapper).
        match shell_run(layer).filter(|_| last) {
            Some(ShellRun::String(script, args)) => {
                command.transparent |= last;
                scripts.push((script, (basename(&layer[0]) != "eval").then_some(args)));
            }
            Some(ShellRun::Stdin) => {
                reads_stdin = true;
                match stdin {
                    // The shell's script is the heredoc or here-string, split on its own.
                    Input::Here(_) => command.transparent |= last,
                    // A script from a pipe: spelled `<shell> -s` whatever its options, so
                    // `Bash(sh -s)` names `curl ... | sh -e`.
                    Input::Pipe => command.forms.push(format!("{} -s", queued_shell(layer))),
                    // Standard input is the driver's (nothing, or what is written to it,
                    // which is checked as it comes).
                    Input::Inherited => {}
                }
            }
            // `bash <(curl x)` reads a pipe just as `curl x | bash` does.
            Some(ShellRun::Piped) => command.forms.push(format!("{} -s", basename(&layer[0]))),
            None => {}
        }
        if startup_file_piped(layer) {
            // `bash -i --rcfile <(curl x)` runs what the pipe brings, as `bash <(curl x)`.
            command.forms.push(format!("{} -s", basename(&layer[0])));
        }
        let (run, again) = code_strings(layer);
        scripts.extend(run.into_iter().map(|s| (s, None)));
        expand.extend(again);
        note_renames(cx, layer, depth);
        if let Some(name) = renamed(cx, layer) {
            renames.push((store, start, name.to_owned()));
        }
        // `find -exec` commands are ranges of this layer's words: nested `find`s read
        // from the one word list, not from a copy per level.
        execs.extend(
            find_exec_commands(layer)
                .into_iter()
                .map(|r| (store, start + r.start, start + r.end)),
        );
    }
    for (index, &(store, start)) in layers.iter().enumerate() {
        let layer = &stores[store][start..];
        let mut layer_spellings = spellings(layer);
        if let (Input::Here(marker), true) = (stdin, reads_stdin && index + 1 == layers.len()) {
            // A shell reading a heredoc is spelled with it: `bash <<EOF`.
            for spelling in &mut layer_spellings {
                spelling.push(' ');
                spelling.push_str(marker);
            }
        }
        if index + 1 == layers.len() {
            command.innermost = layer_spellings.clone();
        }
        for spelling in layer_spellings {
            if !command.forms.contains(&spelling) {
                command.forms.push(spelling);
            }
        }
    }
    for spelling in valued.iter().flat_map(|words| spellings(words)) {
        if !command.forms.contains(&spelling) {
            command.forms.push(spelling);
        }
    }
    cx.arrays.clear();
    let first_words = || {
        layers
            .iter()
            .filter_map(|&(store, start)| stores[store].get(start))
    };
    command.name_globs = first_words()
        .filter(|name| names.globs.contains(name))
        .cloned()
        .collect();
    command.dynamic_name = first_words().any(|name| names.dynamic.contains(name));
    command.dir = cx.dir.clone();
    let index = cx.out.len();
    let outer_shell = stores[0].first().map_or("", |w| basename(w)).to_owned();
    cx.out.push(command);
    if depth >= MAX_DEPTH {
        if !(scripts.is_empty()
            && expand.is_empty()
            && execs.is_empty()
            && values.is_empty()
            && renames.is_empty())
        {
            cx.refuse(|| TOO_COMPLEX.to_owned());
        }
        return reads_stdin;
    }
    for value in values {
        Parser::new(&[], depth).expand_as_double_quoted(cx, value.as_bytes());
    }
    for (store, start, name) in renames {
        if cx.refusal.is_some() {
            // The text is refused whatever the name stands for.
            break;
        }
        // The program or text the text made this name stand for (`hash -p`, `alias`),
        // read in its place; the name is not renamed inside, as bash does not expand an
        // alias within itself.
        let layer = &stores[store][start..];
        let Some(kept) = cx.renames.remove(&name) else {
            continue;
        };
        let outer_generation = cx.renames_generation;
        let inner_generation = cx.new_generation();
        cx.renames_generation = inner_generation;
        // Each reading costs the command's size and a little more, so that many short
        // uses of a name with many meanings spend the budget as their work does.
        let size = layer.iter().map(|w| w.len() + 1).sum::<usize>() + RENAME_READING_COST;
        for rename in &kept {
            if cx.refusal.is_some() {
                break;
            }
            if cx.budget < size {
                cx.refuse(|| TOO_COMPLEX.to_owned());
                break;
            }
            cx.budget -= size;
            match rename {
                Rename::Program(path) => {
                    let mut words = vec![path.clone()];
                    words.extend(layer[1..].iter().cloned());
                    // A pattern stays one, as the path (expanded when `hash -p` ran)
                    // and as an argument.
                    let mut globs: Vec<String> = names.globs.clone();
                    if path.contains(['*', '?', '[']) {
                        globs.push(path.clone());
                    }
                    let names = Names {
                        globs,
                        dynamic: names.dynamic.clone(),
                    };
                    reads_stdin |= emit_texts(cx, &words, depth + 1, None, stdin, &names);
                }
                Rename::Alias(text) if text.replace("<<<", "").contains("<<") => {
                    // bash reads the body of a here-document in an alias from the lines
                    // after the alias is used, not from the alias.
                    cx.refuse(|| {
                        format!(
                            "the alias '{name}' holds a here-document, whose body is read \
                             from the text after each use"
                        )
                    });
                }
                Rename::Alias(text) if layer.len() > 1 && !alias_ends_a_word(text) => {
                    // bash reads the text after the alias as it stands: after a blank an
                    // alias is expanded, after an operator or a reserved word a keyword
                    // is one, which the arguments read back as words would not show.
                    cx.refuse(|| {
                        format!(
                            "the alias '{name}' is empty or ends in a blank, an operator or a \
                             reserved word, so the words after it are read anew as shell text"
                        )
                    });
                }
                Rename::Alias(text) => {
                    let mut script = text.clone();
                    for word in &layer[1..] {
                        script.push(' ');
                        if names.globs.contains(word) {
                            script.push_str(&quoted_but_glob(word));
                        } else {
                            script.push_str(&quoted(word));
                        }
                    }
                    sub_parse(cx, script.as_bytes(), depth + 1);
                }
            }
        }
        let meanings = cx.renames.entry(name).or_default();
        if meanings.is_empty() && cx.renames_generation == inner_generation {
            // Nothing was renamed while the name was away: the table is as it was.
            *meanings = kept;
            cx.renames_generation = outer_generation;
        } else {
            for rename in kept {
                if !meanings.contains(&rename) {
                    meanings.push(rename);
                }
            }
            cx.renames_generation = cx.new_generation();
        }
    }
    let fed = matches!(stdin, Input::Pipe | Input::Here(_));
    for (script, args) in scripts {
        match args {
            Some(args) => {
                let args = args.into_iter().map(String::into_bytes).collect();
                let outer = std::mem::replace(&mut cx.args, args);
                let generation = cx.new_generation();
                let outer_generation = std::mem::replace(&mut cx.args_generation, generation);
                sub_parse(cx, script.as_bytes(), depth + 1);
                cx.args = outer;
                cx.args_generation = outer_generation;
            }
            None => sub_parse(cx, script.as_bytes(), depth + 1),
        }
    }
    if fed && cx.refusal.is_none() && crate::policy::shell_input::feeds_a_shell(&cx.out[index..]) {
        // What the command reads reaches a shell as its script: spelled as a shell reading
        // a pipe is, so the rules that refuse `curl ... | sh` refuse it too.
        let shell = if SHELLS.contains(&outer_shell.as_str()) {
            outer_shell
        } else {
            "sh".to_owned()
        };
        let spelling = format!("{shell} -s");
        if !cx.out[index].forms.contains(&spelling) {
            cx.out[index].forms.push(spelling);
        }
    }
    for text in expand {
        if text.contains(['\'', '"']) {
            // bash expands such a name in a quoting context of its own; with quotes inside
            // the substitution, which commands it runs is not what a second reading finds.
            cx.refuse(|| {
                format!(
                    "the name '{}' is expanded a second time (as a subscript), and the \
                     substitution in it holds quotes",
                    grammar::truncated(&text)
                )
            });
            break;
        }
        Parser::new(&[], depth).expand_as_double_quoted(cx, text.as_bytes());
    }
    for (store, start, end) in execs {
        let exec = &stores[store][start..end];
        let size: usize = exec.iter().map(|w| w.len() + 1).sum();
        if cx.budget < size {
            cx.refuse(|| TOO_COMPLEX.to_owned());
            continue;
        }
        cx.budget -= size;
        emit_texts(
            cx,
            exec,
            depth + 1,
            None,
            &Input::Inherited,
            &Names::default(),
        );
    }
    reads_stdin
}
