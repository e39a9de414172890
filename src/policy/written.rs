//! Files a command writes (redirections, `dd of=`), judged as `> FILE`.

use super::*;

/// How a file a redirection writes is checked against the rules: `> FILE`, its path
/// made canonical as an operand of `rm` is (`> //dev/./sda` is `> /dev/sda`), so
/// `Bash(> /dev/sd*)` refuses `cat x > /dev/sda`, `>> /dev/sda`, `&> /dev/sda` alike.
pub fn written_form(file: &str) -> String {
    format!("> {}", options::canonical_path(file))
}

/// The file `dd` writes (`of=FILE`) in one spelling of a command; a redirection in all
/// but name, checked as `> FILE` too.
pub(super) fn dd_output(form: &str) -> Option<&str> {
    let mut words = form.split_whitespace();
    let program = words.next()?;
    if program.rsplit('/').next() != Some("dd") {
        return None;
    }
    words.filter_map(|w| w.strip_prefix("of=")).next_back()
}

/// The first file written that is a glob (`> /dev/s[d]a`) with the first rule about a
/// written file (`Bash(> /dev/sd*)`) whose pattern could name a file it matches: bash
/// writes to the one file the glob matches.
pub(super) fn written_glob_names_rule<'f, 'r>(
    written: &[&'f str],
    rules: &'r [Rule],
    home: Option<&str>,
) -> Option<(&'f str, &'r Rule)> {
    // A relative pattern names files in a directory not known here: judged only once
    // made rooted (the splitter notes it joined to a rooted directory it runs in).
    let is_glob = |file: &&&str| {
        options::is_rooted(file)
            && (file.contains(['*', '?', '['])
                || ["+(", "@(", "!("].iter().any(|e| file.contains(e)))
    };
    let mut globs = written.iter().filter(is_glob).peekable();
    globs.peek()?;
    // Letters are compared in either case: `shopt -s nocaseglob` may be on.
    let patterns: Vec<(&Rule, options::GlobPattern)> = rules
        .iter()
        .filter_map(|rule| {
            let pattern = rule.written_pattern()?.to_ascii_lowercase();
            Some((rule, options::GlobPattern::new(&pattern)))
        })
        .collect();
    for file in globs {
        let mut spellings = vec![options::canonical_path(file)];
        if file.contains("/..") || file.contains("proc/") {
            spellings.extend(options::physical_path(file));
        }
        spellings.extend(path_spellings(file, home, false));
        let spellings: Vec<options::GlobPattern> = spellings
            .iter()
            .map(|s| options::GlobPattern::new(&s.to_ascii_lowercase()))
            .collect();
        for (rule, pattern) in &patterns {
            if spellings.iter().any(|file| file.path_overlaps(pattern)) {
                return Some((file, rule));
            }
        }
    }
    None
}
