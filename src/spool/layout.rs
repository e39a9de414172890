//! Where a stream's bytes live in its file once it is bounded: the head and the tail.
//!
//! Every byte a stream carries has an absolute offset (the first is 0). A stream keeps at
//! most `capacity` bytes: the first quarter of them (the head) stays forever, and the rest
//! of the room is a ring for the newest bytes. In the file, offset `o` of the head sits at
//! position `o`, and offset `o` past the head at `head + (o - head) % ring`. Before the
//! ring wraps this is simply position `o`, so a short stream's file is the stream itself.
//! The same arithmetic places the records of the `output` index (counted in records).

/// The split of one bounded stream: `head` units kept from the start, `ring` units of the
/// newest ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub head: u64,
    pub ring: u64,
}

/// What is kept of a stream that has carried `end` units: `[0, head_end)` and
/// `[tail_start, end)`; the units between were dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Kept {
    pub head_end: u64,
    pub tail_start: u64,
    pub end: u64,
}

impl Kept {
    /// Units dropped between the head and the tail.
    pub fn dropped(&self) -> u64 {
        self.tail_start - self.head_end
    }

    /// Units still held.
    pub fn held(&self) -> u64 {
        self.head_end + (self.end - self.tail_start)
    }

    /// Whether offset `at` is held.
    #[cfg(test)]
    pub fn holds(&self, at: u64) -> bool {
        at < self.head_end || (at >= self.tail_start && at < self.end)
    }
}

impl Layout {
    /// A quarter of `capacity` (at least 1) for the head, the rest (at least 1) for the
    /// ring.
    pub fn new(capacity: u64) -> Layout {
        let capacity = capacity.max(2);
        let head = capacity / 4;
        Layout {
            head,
            ring: capacity - head,
        }
    }

    pub fn capacity(&self) -> u64 {
        self.head + self.ring
    }

    /// The file position of offset `at`.
    pub fn position(&self, at: u64) -> u64 {
        if at < self.head {
            at
        } else {
            self.head + (at - self.head) % self.ring
        }
    }

    /// The file size (in units) after `end` units.
    pub fn file_len(&self, end: u64) -> u64 {
        end.min(self.capacity())
    }

    pub fn kept(&self, end: u64) -> Kept {
        let head_end = end.min(self.head);
        Kept {
            head_end,
            tail_start: head_end.max(end.saturating_sub(self.ring)),
            end,
        }
    }

    /// How a write of `len` units at offset `end` lands in the file: up to two pieces
    /// `(offset in the written data, file position, length)`, the part of the data that
    /// would be overwritten before the write ends being left out. At most three pieces
    /// in all (head, then the ring up to its end, then from its start).
    pub fn pieces(&self, end: u64, len: u64) -> Vec<(u64, u64, u64)> {
        let mut out = Vec::with_capacity(3);
        let mut skip = 0u64;
        let mut at = end;
        let mut left = len;
        if at < self.head {
            let take = (self.head - at).min(left);
            out.push((0, at, take));
            skip += take;
            at += take;
            left -= take;
        }
        if left > self.ring {
            let over = left - self.ring;
            skip += over;
            at += over;
            left = self.ring;
        }
        while left > 0 {
            let position = self.position(at);
            let take = (self.capacity() - position).min(left);
            out.push((skip, position, take));
            skip += take;
            at += take;
            left -= take;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model of the file: apply pieces to a byte vector.
    fn write(file: &mut Vec<u8>, layout: &Layout, end: u64, data: &[u8]) {
        for (from, position, len) in layout.pieces(end, data.len() as u64) {
            let (from, position, len) = (from as usize, position as usize, len as usize);
            if file.len() < position + len {
                file.resize(position + len, 0);
            }
            file[position..position + len].copy_from_slice(&data[from..from + len]);
        }
    }

    #[test]
    fn short_streams_are_the_file_itself() {
        let layout = Layout::new(16);
        assert_eq!((layout.head, layout.ring), (4, 12));
        let mut file = Vec::new();
        write(&mut file, &layout, 0, b"hello ");
        write(&mut file, &layout, 6, b"world");
        assert_eq!(file, b"hello world");
        let kept = layout.kept(11);
        assert_eq!((kept.head_end, kept.tail_start, kept.dropped()), (4, 4, 0));
    }

    #[test]
    fn every_held_offset_reads_back_whatever_the_chunking() {
        for capacity in [2u64, 3, 8, 17, 64] {
            for chunk in [1usize, 2, 3, 7, 50, 300] {
                let layout = Layout::new(capacity);
                let stream: Vec<u8> = (0..1000u32).map(|i| (i * 31 % 251) as u8).collect();
                let mut file = Vec::new();
                let mut end = 0u64;
                for piece in stream.chunks(chunk) {
                    write(&mut file, &layout, end, piece);
                    end += piece.len() as u64;
                    assert!(file.len() as u64 <= layout.capacity());
                    assert_eq!(file.len() as u64, layout.file_len(end));
                    let kept = layout.kept(end);
                    for at in 0..end {
                        if kept.holds(at) {
                            let got = file[layout.position(at) as usize];
                            assert_eq!(
                                got, stream[at as usize],
                                "cap {capacity} chunk {chunk} at {at}"
                            );
                        }
                    }
                    assert_eq!(kept.held(), end.min(layout.capacity()));
                    assert_eq!(kept.dropped(), end.saturating_sub(layout.capacity()));
                }
            }
        }
    }
}
