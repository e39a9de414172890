//! A bounded byte ring addressed by absolute offsets.
//!
//! Every byte a stream ever carried has an absolute offset: the first byte is 0, the
//! n-th is n-1. The ring keeps the newest `capacity` of them; `start()` is the offset of
//! the oldest byte still held and equals the number of bytes dropped. Storage grows as
//! bytes arrive, never beyond the capacity, so a command that prints a line costs a line.
//!
//! [`View`] turns a ring into the bytes of a file: an optional notice line saying how
//! many bytes were dropped, followed by the retained bytes from a fixed base. A view's
//! size only grows, which is what `tail -f` on an open handle needs.

/// Bytes are placed at index `offset % capacity` once the ring has wrapped; before
/// that the buffer is simply the stream's prefix, so no index arithmetic is needed to
/// grow it lazily.
#[derive(Debug)]
pub struct Ring {
    capacity: usize,
    buf: Vec<u8>,
    start: u64,
    end: u64,
}

impl Ring {
    /// A ring that keeps at most `capacity` bytes (at least one).
    pub fn new(capacity: usize) -> Ring {
        Ring {
            capacity: capacity.max(1),
            buf: Vec::new(),
            start: 0,
            end: 0,
        }
    }

    /// Offset of the oldest retained byte; also the count of dropped bytes.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// Offset one past the newest byte; also the count of bytes ever written.
    pub fn end(&self) -> u64 {
        self.end
    }

    /// Bytes dropped to make room.
    pub fn dropped(&self) -> u64 {
        self.start
    }

    /// Bytes currently held.
    pub fn len(&self) -> usize {
        (self.end - self.start) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }

    /// Memory the ring's storage holds now.
    pub fn allocated(&self) -> usize {
        self.buf.capacity()
    }

    /// Appends bytes, dropping the oldest ones when the ring is full.
    pub fn write(&mut self, mut data: &[u8]) {
        if data.len() > self.capacity {
            let skip = data.len() - self.capacity;
            self.end += skip as u64;
            data = &data[skip..];
        }
        // Grow the flat prefix while the stream still fits.
        if self.buf.len() < self.capacity {
            let room = self.capacity - self.buf.len();
            let take = room.min(data.len());
            if self.buf.len() as u64 == self.end {
                if self.buf.capacity() < self.buf.len() + take {
                    let wanted = (self.buf.len() + take)
                        .max(self.buf.capacity() * 2)
                        .min(self.capacity);
                    self.buf.reserve_exact(wanted - self.buf.len());
                }
                self.buf.extend_from_slice(&data[..take]);
                self.end += take as u64;
                data = &data[take..];
            } else {
                // The stream skipped ahead (a write larger than the ring); start the
                // wrapped layout with a full-size buffer.
                self.buf.resize(self.capacity, 0);
            }
        }
        // Wrapped layout: byte at offset o lives at index o % capacity.
        while !data.is_empty() {
            let index = (self.end % self.capacity as u64) as usize;
            let take = (self.capacity - index).min(data.len());
            self.buf[index..index + take].copy_from_slice(&data[..take]);
            self.end += take as u64;
            data = &data[take..];
        }
        self.start = self
            .start
            .max(self.end.saturating_sub(self.capacity as u64));
    }

    /// Appends the retained bytes in `[from, from + max)` to `out`; offsets before
    /// `start()` are skipped, so the caller must compare against `start()` itself.
    pub fn copy_from(&self, from: u64, max: usize, out: &mut Vec<u8>) {
        let from = from.max(self.start);
        if from >= self.end {
            return;
        }
        let mut remaining = ((self.end - from) as usize).min(max);
        let mut offset = from;
        out.reserve(remaining);
        while remaining > 0 {
            let index = if self.end <= self.capacity as u64 {
                offset as usize
            } else {
                (offset % self.capacity as u64) as usize
            };
            let take = (self.buf.len() - index).min(remaining);
            out.extend_from_slice(&self.buf[index..index + take]);
            offset += take as u64;
            remaining -= take;
        }
    }
}

/// A file's view of a ring, fixed when the view is made: the notice line (empty when
/// nothing had been dropped) and the absolute offset that follows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    pub notice: Vec<u8>,
    pub base: u64,
}

impl View {
    /// The whole stream from its first byte, with no notice: what a file shows when
    /// nothing had been dropped at the time it was looked up.
    pub fn whole() -> View {
        View {
            notice: Vec::new(),
            base: 0,
        }
    }

    /// The view a fresh read sees now.
    pub fn fresh(ring: &Ring) -> View {
        let dropped = ring.dropped();
        let notice = if dropped == 0 {
            Vec::new()
        } else {
            format!(
                "[terminalfs: {dropped} earlier bytes were dropped; the newest {} follow]\n",
                ring.len()
            )
            .into_bytes()
        };
        View {
            notice,
            base: ring.start(),
        }
    }

    /// The view's size: notice plus every byte from `base` to the ring's end.
    pub fn size(&self, ring: &Ring) -> u64 {
        self.notice.len() as u64 + ring.end().saturating_sub(self.base)
    }

    /// Bytes of the view at `offset`, at most `max` of them. Bytes that were dropped
    /// after the view was made read as NUL, so offsets stay true for the reader.
    pub fn read(&self, ring: &Ring, offset: u64, max: usize) -> Vec<u8> {
        let mut out = Vec::new();
        let notice_len = self.notice.len() as u64;
        let mut offset = offset;
        let mut max = max;
        if offset < notice_len {
            let take = ((notice_len - offset) as usize).min(max);
            out.extend_from_slice(&self.notice[offset as usize..offset as usize + take]);
            offset += take as u64;
            max -= take;
        }
        if max == 0 {
            return out;
        }
        let absolute = self.base + (offset - notice_len);
        if absolute < ring.start() {
            let gap = ((ring.start() - absolute) as usize).min(max);
            out.resize(out.len() + gap, 0);
            max -= gap;
            ring.copy_from(ring.start(), max, &mut out);
        } else {
            ring.copy_from(absolute, max, &mut out);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contents(ring: &Ring) -> Vec<u8> {
        let mut out = Vec::new();
        ring.copy_from(0, usize::MAX, &mut out);
        out
    }

    #[test]
    fn keeps_everything_below_capacity() {
        let mut ring = Ring::new(16);
        ring.write(b"hello ");
        ring.write(b"world");
        assert_eq!(contents(&ring), b"hello world");
        assert_eq!((ring.start(), ring.end()), (0, 11));
        assert!(ring.allocated() <= 16);
    }

    #[test]
    fn wraps_and_drops_the_oldest() {
        let mut ring = Ring::new(8);
        ring.write(b"0123456789");
        assert_eq!(contents(&ring), b"23456789");
        assert_eq!(ring.dropped(), 2);
        ring.write(b"ab");
        assert_eq!(contents(&ring), b"456789ab");
        ring.write(b"cdefghijklmnop");
        assert_eq!(contents(&ring), b"ijklmnop");
        assert_eq!(ring.end(), 26);
        assert_eq!(ring.allocated(), 8);
    }

    #[test]
    fn exact_offsets_across_the_wrap() {
        let mut ring = Ring::new(5);
        let stream: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        for chunk in stream.chunks(3) {
            ring.write(chunk);
        }
        for from in ring.start()..ring.end() {
            let mut out = Vec::new();
            ring.copy_from(from, 2, &mut out);
            let expect = &stream[from as usize..(from as usize + 2).min(1000)];
            assert_eq!(out, expect, "offset {from}");
        }
    }

    #[test]
    fn byte_by_byte_equals_bulk() {
        let stream: Vec<u8> = (0..300u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut a = Ring::new(64);
        let mut b = Ring::new(64);
        for byte in &stream {
            a.write(std::slice::from_ref(byte));
        }
        b.write(&stream);
        assert_eq!(contents(&a), contents(&b));
        assert_eq!(contents(&a), &stream[300 - 64..]);
    }

    #[test]
    fn fresh_view_starts_with_a_notice_after_overflow() {
        let mut ring = Ring::new(4);
        ring.write(b"abc");
        let view = View::fresh(&ring);
        assert!(view.notice.is_empty());
        assert_eq!(view.read(&ring, 0, 100), b"abc");
        ring.write(b"defg");
        let view = View::fresh(&ring);
        let text = view.read(&ring, 0, 1000);
        let notice = String::from_utf8_lossy(&view.notice).to_string();
        assert!(notice.contains("3 earlier bytes were dropped"), "{notice}");
        assert!(text.ends_with(b"\ndefg"));
        assert_eq!(view.size(&ring), text.len() as u64);
    }

    #[test]
    fn an_old_view_only_grows_and_pads_lost_bytes() {
        let mut ring = Ring::new(4);
        ring.write(b"ab");
        let view = View::fresh(&ring);
        let before = view.size(&ring);
        ring.write(b"cdefgh");
        assert_eq!(view.size(&ring), before + 6);
        // Offsets 0..4 were dropped after the view was made.
        assert_eq!(view.read(&ring, 0, 8), b"\0\0\0\0efgh");
        assert_eq!(view.read(&ring, 6, 8), b"gh");
    }
}
