//! Brace expansion of unquoted words.

/// Words longer than this are not brace-expanded.
const MAX_BRACE_WORD: usize = 4096;

/// The most words one brace-expanded word may turn into.
const MAX_BRACE_RESULTS: usize = 64;

/// Expands the unquoted brace lists of one word (`{a,b}c` → `ac bc`), within limits.
pub(super) fn expand_braces(word: &str) -> Vec<String> {
    if word.len() > MAX_BRACE_WORD {
        return vec![word.to_owned()];
    }
    let mut done = Vec::new();
    let mut pending = vec![word.to_owned()];
    let mut rounds = 0;
    while let Some(current) = pending.pop() {
        rounds += 1;
        if rounds > MAX_BRACE_RESULTS * 4 || done.len() + pending.len() >= MAX_BRACE_RESULTS {
            done.push(current);
            continue;
        }
        match brace_list(&current) {
            Some((open, commas, close)) => {
                let prefix = &current[..open];
                let suffix = &current[close + 1..];
                let mut bounds = vec![open];
                bounds.extend(commas);
                bounds.push(close);
                for pair in bounds.windows(2).rev() {
                    let alternative = &current[pair[0] + 1..pair[1]];
                    pending.push(format!("{prefix}{alternative}{suffix}"));
                }
            }
            None => done.push(current),
        }
    }
    done
}

/// The first `{...}` in `word` holding a comma at its own level: its `{`, its commas and its
/// `}` (byte offsets; all ASCII, so they are character boundaries).
fn brace_list(word: &str) -> Option<(usize, Vec<usize>, usize)> {
    let mut stack: Vec<(usize, Vec<usize>)> = Vec::new();
    for (at, byte) in word.bytes().enumerate() {
        match byte {
            b'{' => stack.push((at, Vec::new())),
            b',' => {
                if let Some((_, commas)) = stack.last_mut() {
                    commas.push(at);
                }
            }
            b'}' => {
                if let Some((open, commas)) = stack.pop() {
                    if !commas.is_empty() {
                        return Some((open, commas, at));
                    }
                }
            }
            _ => {}
        }
    }
    None
}
