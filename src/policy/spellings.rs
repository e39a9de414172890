//! The other spellings of a path and of a command: relative operands made absolute in
//! the directory a command runs in, paths in the home directory spelled from `~` and
//! back, and paths through well-known symbolic links.

use std::path::Path;

use super::{options, Candidate, SimpleCommand};

/// The other spellings of a path, which deny and ask rules see too: with the well-known
/// symbolic links before a `..` followed ([`options::physical_path`]), a path in the
/// home directory spelled from `~` (`/root/x` is `~/x` when the home directory is
/// `/root`), one from `~` as in the home directory, and, when `canonical` is asked for,
/// the path made canonical ([`options::canonical_path`]). Empty for a path that is not
/// rooted.
pub(super) fn path_spellings(path: &str, home: Option<&str>, canonical: bool) -> Vec<String> {
    if !options::is_rooted(path) {
        return Vec::new();
    }
    // Most paths have no other spelling: found without building any.
    let through_links = path.contains("/..") || path.contains("proc/");
    let home_named = path.starts_with(['~', '$']) || home.is_some_and(|h| path.contains(h));
    if !(canonical || through_links || home_named) {
        return Vec::new();
    }
    let mut bases = vec![options::canonical_path(path)];
    if through_links {
        bases.extend(options::physical_path(path));
    }
    let mut out: Vec<String> = Vec::new();
    for (index, base) in bases.into_iter().enumerate() {
        for (from_home, spelling) in spellings_of_dir(base, home).into_iter().enumerate() {
            let wanted = index > 0 || from_home > 0 || canonical;
            if wanted && spelling != path && !out.contains(&spelling) {
                out.push(spelling);
            }
        }
    }
    out
}

/// The spellings of a command with its rooted path operands (and `dd`'s `of=`) spelled
/// as [`path_spellings`] spells them, each with what they were judged as; none when no
/// operand has another spelling.
pub(super) fn path_candidates(form: &str, home: Option<&str>) -> Vec<Candidate> {
    let words: Vec<&str> = form.split_whitespace().collect();
    let dd = words.first().and_then(|w| w.rsplit('/').next()) == Some("dd");
    let others: Vec<Vec<String>> = words
        .iter()
        .map(|word| match word.strip_prefix("of=").filter(|_| dd) {
            Some(file) => path_spellings(file, home, true)
                .into_iter()
                .map(|p| format!("of={p}"))
                .collect(),
            None => path_spellings(word, home, false),
        })
        .collect();
    let count = others.iter().map(Vec::len).max().unwrap_or(0);
    (0..count)
        .map(|k| {
            let mut judged = Vec::new();
            let text: Vec<&str> = words
                .iter()
                .zip(&others)
                .map(|(word, other)| match other.get(k).or(other.last()) {
                    Some(spelling) => {
                        judged.push(format!("'{word}' is judged as '{spelling}'"));
                        spelling.as_str()
                    }
                    None => word,
                })
                .collect();
            Candidate {
                judged: Some(judged.join(", ")),
                ..Candidate::new(&text.join(" "))
            }
        })
        .collect()
}

/// For each command, its spellings with relative path operands made absolute, where the
/// directory it runs in is known: rooted, or relative to `start` (absolute) when given.
/// A directory in `home` is spelled both ways, from `/` and from `~`.
pub(super) fn judge_in_directories(
    commands: &[SimpleCommand],
    start: Option<&str>,
    home: Option<&str>,
) -> Vec<Vec<Candidate>> {
    commands
        .iter()
        .map(|command| {
            let dir = command.dir.as_deref().and_then(|dir| {
                if options::is_rooted(dir) {
                    Some(dir.to_owned())
                } else {
                    options::join_path(start?, dir)
                }
            });
            let Some(dir) = dir else {
                return Vec::new();
            };
            let mut judged: Vec<Candidate> = Vec::new();
            for dir in spellings_of_dir(dir, home) {
                for form in &command.forms {
                    if let Some(candidate) = Candidate::in_directory(form, &dir) {
                        if !judged.iter().any(|c| c.text == candidate.text) {
                            judged.push(candidate);
                        }
                    }
                }
            }
            judged
        })
        .collect()
}

/// An absolute directory, canonical (`..` folded); None when it is not UTF-8 or not
/// absolute.
pub(super) fn canonical_dir(dir: &Path) -> Option<String> {
    dir.to_str()
        .filter(|dir| dir.starts_with('/'))
        .and_then(|dir| options::join_path("/", dir))
}

/// `dir` (`/`- or `~`-rooted, canonical), and the same directory (or file) spelled from
/// the other root when it is in `home`. A `~` path is made canonical again once the home
/// directory stands for `~` (`~/../../dev/sda` is `/dev/sda`, `~/../root/x` is `~/x` again
/// when the home directory is `/root`); `~NAME`, NAME being the last name of the home
/// directory, is `~`.
pub(super) fn spellings_of_dir(dir: String, home: Option<&str>) -> Vec<String> {
    let mut out = vec![dir];
    let Some(home) = home else {
        return out;
    };
    let from_home = |path: &str| {
        let rest = path.strip_prefix(home)?;
        (rest.is_empty() || rest.starts_with('/')).then(|| format!("~{rest}"))
    };
    let other = match out[0].strip_prefix('~') {
        Some(rest) => {
            let (user, rest) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let owner = user.is_empty() || home.rsplit('/').next() == Some(user);
            owner.then(|| options::canonical_path(&format!("{home}{rest}")))
        }
        None => from_home(&out[0]),
    };
    if let Some(other) = other {
        let again = from_home(&other).filter(|_| other.starts_with('/'));
        for spelling in std::iter::once(other).chain(again) {
            if !out.contains(&spelling) {
                out.push(spelling);
            }
        }
    }
    out
}
