//! Path operands as the rules compare them: made canonical (`//`, `/.`, `..`, the home
//! directory's spellings), joined to the directory a command runs in, and followed through
//! the well-known symbolic links (`/var/run`, `/bin`, `/proc/self/root`).

use super::*;

/// `command` with its relative path operands made absolute: each is joined to `dir`, the
/// directory the command runs in (`/`- or `~`-rooted), and made canonical, so that
/// `rm -rf *` run in `/` reads `rm -rf /*` and `rm -rf ..` run in `/etc` reads `rm -rf /`.
/// Only the commands read option-aware whose operands are paths (`rm`, `chmod`, `chown`,
/// `chgrp`, not the mode or owner before their files) are rewritten, and only operands
/// known as written (none holding `$` or a backquote). Returns the rewritten command and
/// each operand changed with what it became; None when nothing changed.
pub(crate) fn resolve_operands(
    command: &str,
    dir: &str,
) -> Option<(String, Vec<(String, String)>)> {
    let (argv, positions) = Argv::read_with_positions(command)?;
    if !argv.paths {
        return None;
    }
    // The mode or owner comes first, unless a reference file gives it.
    let skip = usize::from(
        argv.program != "rm" && !argv.options.iter().any(|o| o.starts_with("--reference")),
    );
    let mut words: Vec<String> = command.split_whitespace().map(str::to_owned).collect();
    let mut changed = Vec::new();
    for &at in positions.iter().skip(skip) {
        let operand = &words[at];
        if is_rooted(operand) || operand.contains(['$', '`']) {
            continue;
        }
        if let Some(path) = join_path(dir, operand) {
            changed.push((operand.clone(), path.clone()));
            words[at] = path;
        }
    }
    (!changed.is_empty()).then(|| (words.join(" "), changed))
}

/// Whether `path` names the same file wherever it is used from: it starts at `/` or at
/// the home directory (`~`, `$HOME`, `${HOME}`).
pub(crate) fn is_rooted(path: &str) -> bool {
    path.starts_with(['/', '~']) || path.starts_with("$HOME") || path.starts_with("${HOME}")
}

/// `path` as seen from the directory `dir`, made canonical: `path` itself when it is
/// rooted (`/x`, `~/x`), else the two joined. `dir` is `/`-rooted, `~`-rooted or relative
/// to some directory (`.` for that one). `.` and `..` are folded as written (`/etc/..`
/// is `/`, as `cd` sees it; a symbolic link is not followed); `..` at `/` stays at `/`.
/// None when the path climbs above a home directory, which is then unknown.
pub(crate) fn join_path(dir: &str, path: &str) -> Option<String> {
    let joined = if is_rooted(path) || dir == "." {
        path.to_owned()
    } else {
        format!("{dir}/{path}")
    };
    let canonical = canonical_path(&joined);
    let mut parts = canonical.split('/');
    let climbs_out_of_home =
        parts.next().is_some_and(|p| p.starts_with('~')) && parts.next() == Some("..");
    (!climbs_out_of_home).then_some(canonical)
}

/// `//`, `/./` and a trailing `/` or `/.` collapse; `$HOME`, `${HOME}` and `~` are `~`;
/// `..` takes away the name before it (`/etc/..` is `/`, `a/../b` is `b`), at `/` it
/// stays at `/`, and one leading a relative path, or following `~`, stays.
pub(crate) fn canonical_path(path: &str) -> String {
    // Most operands are canonical already: found without building any parts (a command
    // of half a million operands reads each one).
    if is_canonical(path) {
        return path.to_owned();
    }
    fold_path(path)
}

/// [`canonical_path`] the long way, for a path that may not be canonical.
pub(crate) fn fold_path(path: &str) -> String {
    let mut path = path.to_owned();
    if let Some(rest) = home_spelling_len(&path).map(|len| &path[len..]) {
        if rest.is_empty() || rest.starts_with('/') {
            path = format!("~{rest}");
        }
    }
    // Without `globstar`, bash reads `**` as `*`.
    while path.contains("**") {
        path = path.replace("**", "*");
    }
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/').filter(|p| !p.is_empty() && *p != ".") {
        match (part, parts.last()) {
            ("..", Some(&last)) if last != ".." && !(parts.len() == 1 && last.starts_with('~')) => {
                parts.pop();
            }
            ("..", None) if absolute => {}
            _ => parts.push(part),
        }
    }
    let joined = parts.join("/");
    match (absolute, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_owned(),
        (false, false) => joined,
    }
}

/// Whether [`canonical_path`] leaves `path` as it is: no home spelling to fold, no `**`,
/// no empty, `.` or `..` name.
pub(crate) fn is_canonical(path: &str) -> bool {
    if path.is_empty() || path.starts_with('$') || path.contains("**") {
        return false;
    }
    let body = path.strip_prefix('/').unwrap_or(path);
    path == "/" || body.split('/').all(|name| !matches!(name, "" | "." | ".."))
}

/// Symbolic links found on most Linux systems, and where they lead (as names from `/`):
/// `/var/run/..` is `/`, not `/var`. `/proc/<pid>/root` (any pid, `self`,
/// `thread-self`) leads to `/` and is handled on its own.
pub(crate) const KNOWN_LINKS: &[(&[&str], &[&str])] = &[
    (&["var", "run"], &["run"]),
    (&["var", "lock"], &["run", "lock"]),
    (&["bin"], &["usr", "bin"]),
    (&["sbin"], &["usr", "sbin"]),
    (&["lib"], &["usr", "lib"]),
    (&["lib32"], &["usr", "lib32"]),
    (&["lib64"], &["usr", "lib64"]),
    (&["libx32"], &["usr", "libx32"]),
];

/// An absolute path with `.` and `..` folded after following the symbolic links in
/// [`KNOWN_LINKS`] and `/proc/<pid>/root`, as the kernel would: `/var/run/../dev/sda`
/// is `/dev/sda`, `/proc/self/root/dev/sda` is `/dev/sda`. None when that is what
/// [`canonical_path`] makes of it already, or the path is not absolute. No file is
/// looked at (the path may lead into the mount itself), so other links are not known.
pub(crate) fn physical_path(path: &str) -> Option<String> {
    if !path.starts_with('/') {
        return None;
    }
    let path = path.replace("**", "*");
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            _ => {
                parts.push(part);
                if let ["proc", _, "root"] | ["proc", _, "task", _, "root"] = parts.as_slice() {
                    parts.clear();
                } else if let Some((_, to)) = KNOWN_LINKS.iter().find(|(from, _)| *from == parts) {
                    parts = to.to_vec();
                }
            }
        }
    }
    let physical = format!("/{}", parts.join("/"));
    (physical != canonical_path(&path)).then_some(physical)
}

/// The length of the spelling of the home directory that `path` starts with: `$HOME`,
/// `${HOME}`, or `${HOME...}` with an operator that leaves a set `HOME` as it is (`:?`
/// and `?` with or without a message, `:-`, `-`, `:=`, `=` with a default, `%/` and
/// `%%/`, which only drop a trailing `/`).
pub(crate) fn home_spelling_len(path: &str) -> Option<usize> {
    if let Some(rest) = path.strip_prefix("$HOME") {
        let name_goes_on = rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
        return (!name_goes_on).then_some("$HOME".len());
    }
    let rest = path.strip_prefix("${HOME")?;
    let close = rest.find('}')?;
    let operator = &rest[..close];
    let same = operator.is_empty()
        || [":?", "?", ":-", "-", ":=", "="]
            .iter()
            .any(|op| operator.starts_with(op))
        || matches!(operator, "%/" | "%%/");
    same.then_some("${HOME".len() + close + 1)
}
