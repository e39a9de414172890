//! Whether two glob patterns could match the same path: a file a redirection writes that
//! is a pattern (`> /dev/s[d]a`) against a rule's pattern (`> /dev/sd*`).

/// Whether two glob patterns (`*`, `?`, `[...]`) could match the same text: a redirection
/// to `/dev/s[d]a` and a rule for `/dev/sd*`. A `*` stops at `/` in the first, as bash's
/// pathname expansion does, and is taken to cross it in the rule's; a
/// form the reader does not know (`[[:alpha:]]`, `@(...)`) matches anything, so the
/// answer errs towards yes. A pattern longer than a path may be (4096 bytes) names no
/// file: a redirection to it fails.
#[cfg(test)]
pub(crate) fn globs_overlap(a: &str, b: &str) -> bool {
    GlobPattern::new(a).path_overlaps(&GlobPattern::new(b))
}

/// A glob pattern read once, to be compared with many ([`GlobPattern::overlaps`]).
pub(crate) struct GlobPattern {
    pub(crate) tokens: Vec<GlobToken>,
    /// Longer than a path may be (4096 bytes): it names no file.
    pub(crate) too_long: bool,
}

impl GlobPattern {
    pub(crate) fn new(pattern: &str) -> GlobPattern {
        const PATH_MAX: usize = 4096;
        let too_long = pattern.len() > PATH_MAX;
        GlobPattern {
            tokens: if too_long {
                Vec::new()
            } else {
                glob_tokens(pattern)
            },
            too_long,
        }
    }

    /// Whether some text matches both a path bash expands (`self`), whose `*` stops at a
    /// `/` as bash's does, and a rule's pattern, whose `*` is taken to cross `/`.
    pub(crate) fn path_overlaps(&self, rule: &GlobPattern) -> bool {
        !self.too_long && !rule.too_long && tokens_overlap(&self.tokens, &rule.tokens, true)
    }
}

pub(crate) fn tokens_overlap(a: &[GlobToken], b: &[GlobToken], a_star_in_a_name: bool) -> bool {
    // Most pairs differ in their literal starts: no search for them.
    let literal = |t: &GlobToken| matches!(t, GlobToken::Byte(_));
    let differ = a
        .iter()
        .take_while(|t| literal(t))
        .zip(b.iter().take_while(|t| literal(t)))
        .any(|(x, y)| !x.shares(y));
    if differ {
        return false;
    }
    // seen[i][j]: the suffixes from i and j were already tried and share no text.
    let mut seen = vec![vec![false; b.len() + 1]; a.len() + 1];
    let mut stack = vec![(0, 0)];
    while let Some((i, j)) = stack.pop() {
        if std::mem::replace(&mut seen[i][j], true) {
            continue;
        }
        match (a.get(i), b.get(j)) {
            (None, None) => return true,
            (Some(GlobToken::Star), _) => {
                stack.push((i + 1, j));
                let crosses = matches!(b.get(j), Some(GlobToken::Byte(b'/')));
                if j < b.len() && !(a_star_in_a_name && crosses) {
                    stack.push((i, j + 1));
                }
            }
            (_, Some(GlobToken::Star)) => {
                stack.push((i, j + 1));
                if i < a.len() {
                    stack.push((i + 1, j));
                }
            }
            (Some(x), Some(y)) if x.shares(y) => {
                stack.push((i + 1, j + 1));
            }
            _ => {}
        }
    }
    false
}

/// One element of a glob pattern; a byte past ASCII stands as 0x80.
#[derive(Debug)]
pub(crate) enum GlobToken {
    Byte(u8),
    Any,
    Star,
    /// A bracket expression: the bytes it takes, and whether it is negated.
    Class(Vec<u8>, bool),
}

impl GlobToken {
    /// Whether some byte is taken by both.
    pub(crate) fn shares(&self, other: &GlobToken) -> bool {
        match (self, other) {
            (GlobToken::Byte(b), token) | (token, GlobToken::Byte(b)) => token.takes(*b),
            _ => (0..=0x80_u8).any(|c| self.takes(c) && other.takes(c)),
        }
    }

    pub(crate) fn takes(&self, byte: u8) -> bool {
        match self {
            GlobToken::Byte(b) => *b == byte,
            GlobToken::Any | GlobToken::Star => true,
            GlobToken::Class(bytes, negated) => bytes.contains(&byte) != *negated,
        }
    }
}

pub(crate) fn glob_tokens(pattern: &str) -> Vec<GlobToken> {
    let bytes: Vec<u8> = pattern.bytes().map(|b| b.min(0x80)).collect();
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let byte = bytes[at];
        at += 1;
        let extended =
            matches!(byte, b'?' | b'*' | b'+' | b'@' | b'!') && bytes.get(at) == Some(&b'(');
        if extended {
            // An extended glob's pattern list (`@(a|b)`) may match anything: a `*`.
            let mut depth = 0usize;
            while let Some(&b) = bytes.get(at) {
                at += 1;
                depth = match b {
                    b'(' => depth + 1,
                    b')' => depth - 1,
                    _ => depth,
                };
                if depth == 0 {
                    break;
                }
            }
            out.push(GlobToken::Star);
            continue;
        }
        match byte {
            b'*' => out.push(GlobToken::Star),
            b'?' => out.push(GlobToken::Any),
            b'\\' if at < bytes.len() => {
                out.push(GlobToken::Byte(bytes[at]));
                at += 1;
            }
            b'[' => {
                let negated = matches!(bytes.get(at), Some(b'!' | b'^'));
                let start = at + usize::from(negated);
                // A `]` first is one of the bytes; the class ends at the next `]`.
                let close = bytes
                    .iter()
                    .skip(start + 1)
                    .position(|&b| b == b']')
                    .map(|p| p + start + 1);
                let Some(close) = close.filter(|_| start < bytes.len()) else {
                    out.push(GlobToken::Byte(b'['));
                    continue;
                };
                let inner = &bytes[start..close];
                if inner
                    .windows(2)
                    .any(|w| w[0] == b'[' && matches!(w[1], b':' | b'=' | b'.'))
                {
                    out.push(GlobToken::Any);
                } else {
                    let mut set = Vec::new();
                    let mut k = 0;
                    while k < inner.len() {
                        if k + 2 < inner.len() && inner[k + 1] == b'-' {
                            set.extend(inner[k]..=inner[k + 2]);
                            k += 3;
                        } else {
                            set.push(inner[k]);
                            k += 1;
                        }
                    }
                    out.push(GlobToken::Class(set, negated));
                }
                at = close + 1;
            }
            _ => out.push(GlobToken::Byte(byte)),
        }
    }
    out
}
