//! Field splitting: the words bash makes of a word at the blanks of its unquoted
//! expansions.

use super::*;

/// The words bash makes of `text` by splitting it at the blanks that lie in `fields`
/// (the values of unquoted expansions, in order); empty words go.
pub(super) fn split_fields(text: &[u8], fields: &[(usize, usize)]) -> Vec<Vec<u8>> {
    if fields.is_empty() {
        return vec![text.to_vec()];
    }
    let mut out = Vec::new();
    let mut current = Vec::new();
    let mut field = 0;
    for (at, &byte) in text.iter().enumerate() {
        while field < fields.len() && fields[field].1 <= at {
            field += 1;
        }
        let inside = fields.get(field).is_some_and(|&(start, _)| start <= at);
        if inside && matches!(byte, b' ' | b'\t' | b'\n') {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
        } else {
            current.push(byte);
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// A word split at the blanks of its expanded values (see [`split_fields`]); a quoted word
/// left empty stays one empty word.
pub(super) fn split_word(word: Word) -> Vec<Word> {
    let mut pieces = split_fields(&word.text, word.fields());
    if pieces.is_empty() && word.quoted {
        pieces.push(Vec::new());
    }
    let count = pieces.len();
    let mut alternative = word.alternative;
    pieces
        .into_iter()
        .enumerate()
        .map(|(index, text)| Word {
            text,
            alternative: if index + 1 == count {
                alternative.take()
            } else {
                None
            },
            quoted: word.quoted,
            expanded: word.expanded,
            brace: word.brace,
            glob: word.glob,
            dynamic: word.dynamic,
            ..Word::default()
        })
        .collect()
}
