//! The index file `output.idx`: a header of the counts a restart needs, then 16-byte
//! records, one per run of bytes from one stream (where it starts in `output` and in
//! its stream), bounded as the streams are.

use super::*;

pub(crate) const HEADER: u64 = 128;
pub(super) const RECORD: u64 = 16;
pub(super) const MAGIC: u64 = u64::from_le_bytes(*b"tfsidx01");
pub(super) const STDERR_BIT: u64 = 1 << 63;

/// Records an index of `capacity`-byte streams may hold: at worst one per 16 bytes,
/// so the index is never larger than one stream.
pub(super) fn index_layout(capacity: u64) -> Layout {
    Layout::new((capacity / RECORD).max(64))
}

/// The counts of one stream that survive a restart.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    /// Bytes stored (offsets `0..end`).
    pub end: u64,
    /// Bytes that arrived and were not stored.
    pub refused: u64,
    /// Bytes of notice lines stored among the stream's bytes (see the module's text).
    pub noted: u64,
    /// The last stored byte ended a line (or nothing was stored).
    pub line_ended: bool,
}

/// The header: everything needed to read the files back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Header {
    pub capacity: u64,
    pub stdout: Counts,
    pub stderr: Counts,
    pub records: u64,
    pub out_end: u64,
    pub out_line_ended: bool,
    /// `output` offset of the first record that did not fit the index's head.
    pub head_limit: Option<u64>,
    /// `output` offset of the oldest record still in the index's ring, once it wrapped.
    pub floor: u64,
    /// Storing stopped for good or a gap was open, if it did.
    pub stopped: bool,
    pub sealed: bool,
    /// The driver stopped before the output ended: what the command wrote after the
    /// stored part may be lost (it was still in a pipe, or not yet read).
    pub cut_short: bool,
}

impl Header {
    pub(super) fn encode(&self) -> [u8; HEADER as usize] {
        let flags = u64::from(self.stopped)
            | u64::from(self.sealed) << 1
            | u64::from(self.stdout.line_ended) << 2
            | u64::from(self.stderr.line_ended) << 3
            | u64::from(self.out_line_ended) << 4
            | u64::from(self.cut_short) << 5;
        let words = [
            MAGIC,
            self.capacity,
            self.records,
            self.out_end,
            self.stdout.end,
            self.stderr.end,
            self.stdout.refused,
            self.stderr.refused,
            flags,
            self.head_limit.unwrap_or(u64::MAX),
            self.floor,
            self.stdout.noted,
            self.stderr.noted,
        ];
        let mut out = [0u8; HEADER as usize];
        for (index, word) in words.iter().enumerate() {
            out[index * 8..index * 8 + 8].copy_from_slice(&word.to_le_bytes());
        }
        out
    }

    pub(crate) fn decode(bytes: &[u8]) -> Option<Header> {
        if bytes.len() < HEADER as usize {
            return None;
        }
        let word = |index: usize| {
            u64::from_le_bytes(bytes[index * 8..index * 8 + 8].try_into().expect("8 bytes"))
        };
        if word(0) != MAGIC || word(1) == 0 {
            return None;
        }
        let flags = word(8);
        let header = Header {
            capacity: word(1),
            records: word(2),
            out_end: word(3),
            stdout: Counts {
                end: word(4),
                refused: word(6),
                noted: word(11),
                line_ended: flags & 4 != 0,
            },
            stderr: Counts {
                end: word(5),
                refused: word(7),
                noted: word(12),
                line_ended: flags & 8 != 0,
            },
            out_line_ended: flags & 16 != 0,
            stopped: flags & 1 != 0,
            sealed: flags & 2 != 0,
            cut_short: flags & 32 != 0,
            head_limit: Some(word(9)).filter(|w| *w != u64::MAX),
            floor: word(10),
        };
        let consistent = header.stdout.end + header.stderr.end == header.out_end
            && header.stdout.noted <= header.stdout.end
            && header.stderr.noted <= header.stderr.end;
        consistent.then_some(header)
    }

    /// File lengths these counts need: (stdout, stderr, index).
    pub(crate) fn file_lens(&self) -> (u64, u64, u64) {
        let data = Layout::new(self.capacity);
        let index = index_layout(self.capacity);
        let index_len = match self.records {
            0 => 0,
            records => HEADER + RECORD * index.file_len(records),
        };
        (
            data.file_len(self.stdout.end),
            data.file_len(self.stderr.end),
            index_len,
        )
    }
}

/// Record `k`: (`output` offset, from stderr, stream offset).
pub(super) fn read_record(index: &File, layout: &Layout, k: u64) -> io::Result<(u64, bool, u64)> {
    let mut record = [0u8; RECORD as usize];
    index.read_exact_at(&mut record, HEADER + RECORD * layout.position(k))?;
    let start = u64::from_le_bytes(record[..8].try_into().expect("8 bytes"));
    let tag = u64::from_le_bytes(record[8..].try_into().expect("8 bytes"));
    Ok((start, tag & STDERR_BIT != 0, tag & !STDERR_BIT))
}
