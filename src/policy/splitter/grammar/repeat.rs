//! A cache of the simple commands already read: a command read again (`$(a)$(a)...`, a
//! script's repeated lines) adds nothing and is not emitted again.

use super::*;

/// The longest command (in bytes) looked up among those already read: a long one is rare,
/// and remembering it would cost a copy.
pub(super) const MAX_REPEAT_KEY: usize = 4096;

/// Builds in `cx.key` what makes one simple command, as a key for `cx.seen`: its words with
/// what was learnt of them, what it reads on standard input, whether it follows `coproc`
/// inside a substitution, and the positional parameters and directory in force (as
/// generation numbers). False for a long command, which is not remembered.
///
/// The key is short, as it is hashed for every command: fixed-size parts stand as they
/// are, and each part of varying size after its length, so that no two commands share a
/// key.
pub(super) fn repeat_key(cx: &mut Context, words: &[Word], stdin: &Input, coproc: bool) -> bool {
    let mut size = 0;
    for word in words {
        let fields = word.fields().len() + word.alternative_fields().len();
        size += word.text.len() + word.alternative.as_ref().map_or(0, Vec::len) + 8 * fields + 24;
        if size > MAX_REPEAT_KEY {
            // A long command (a word list of a megabyte) is not read to its end here.
            return false;
        }
    }
    let generation = cx.args_generation;
    let dir_generation = cx.dir_generation;
    let renames_generation = cx.renames_generation;
    let values_generation = cx.values_generation;
    let key = &mut cx.key;
    key.clear();
    // Every length, offset and count is at most `MAX_REPEAT_KEY`: 32 bits hold it.
    let number = |key: &mut Vec<u8>, value: usize| {
        key.extend_from_slice(&u32::try_from(value).unwrap_or(u32::MAX).to_le_bytes());
    };
    let bytes = |key: &mut Vec<u8>, bytes: &[u8]| {
        number(key, bytes.len());
        key.extend_from_slice(bytes);
    };
    let fields = |key: &mut Vec<u8>, fields: &[(usize, usize)]| {
        number(key, fields.len());
        for &(start, end) in fields {
            number(key, start);
            number(key, end);
        }
    };
    key.extend_from_slice(&generation.to_le_bytes());
    key.extend_from_slice(&dir_generation.to_le_bytes());
    key.extend_from_slice(&renames_generation.to_le_bytes());
    key.extend_from_slice(&values_generation.to_le_bytes());
    key.push(u8::from(coproc));
    match stdin {
        Input::Inherited => key.push(0),
        Input::Pipe => key.push(1),
        Input::Here(marker) => {
            key.push(2);
            bytes(key, marker.as_bytes());
        }
    }
    for word in words {
        key.push(
            u8::from(word.assignment)
                | (u8::from(word.brace) << 1)
                | (u8::from(word.glob) << 2)
                | (u8::from(word.dynamic) << 3)
                | (u8::from(word.alternative.is_some()) << 4),
        );
        bytes(key, &word.text);
        fields(key, word.fields());
        if let Some(alternative) = &word.alternative {
            bytes(key, alternative);
        }
        fields(key, word.alternative_fields());
    }
    true
}
