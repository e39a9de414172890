//! What a file of a stream can show ([`Extent`]) and reading it back: a stream from
//! its file, `output` through the index.

use super::*;

/// What a file of the stream can show now: the held ranges, how many bytes the command
/// wrote in all, and the line that ends the stored part when storing stopped early.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Extent {
    pub kept: Kept,
    /// Bytes the command wrote to this stream (stored or not).
    pub written: u64,
    /// Present while output is not being stored; it follows the last stored byte.
    pub stop_notice: Option<Arc<[u8]>>,
    /// Bytes of notice lines among the stored ones, which the command did not write.
    pub noted: u64,
    /// Bytes of those notice lines that are held (in the head or the tail).
    pub held_noted: u64,
    /// Bytes the command wrote that the head-and-tail notice stands for: those stored
    /// and dropped between the head and the tail, and those never stored whose notice
    /// lines fell there (so no line shown counts them).
    pub hidden: u64,
    /// Of `hidden`, the bytes never stored because the spool had no room.
    pub hidden_refused: u64,
}

/// What a read found: the held ranges as they were then, and whether the files were
/// there at all (an evicted command's go once nothing has them open).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    pub kept: Kept,
    pub files: bool,
}

impl Held {
    /// The stream offsets that read as NUL: those dropped between the head and the
    /// tail, or every one once the files are gone.
    pub fn missing(&self) -> std::ops::Range<u64> {
        if self.files {
            self.kept.head_end..self.kept.tail_start
        } else {
            0..self.kept.end
        }
    }
}

impl Extent {
    /// Bytes the command wrote that are held: the held ones less the notice lines
    /// among them.
    pub fn kept_written(&self) -> u64 {
        self.kept.held().saturating_sub(self.held_noted)
    }

    /// Bytes not kept: dropped between head and tail, plus those never stored.
    pub fn dropped(&self) -> u64 {
        self.written.saturating_sub(self.kept_written())
    }
}

impl Capture {
    /// The held ranges of `stream` now.
    pub(super) fn extent_kept(&self, stream: Stream) -> Kept {
        match stream {
            Stream::Output => self.output_kept(),
            stream => self.data.kept(self.counts(stream).end),
        }
    }

    /// What the file of `stream`, holding `kept`, shows of the notice lines stored
    /// among its bytes.
    pub(super) fn seen(&self, stream: Stream, kept: &Kept) -> Seen {
        if let Some(restored) = &self.restored {
            return restored[seen_index(stream)];
        }
        let mut seen = Seen::default();
        for note in &self.notes {
            let start = match stream {
                Stream::Output => note.out_at,
                stream if Capture::gap_slot(stream) == note.slot => note.at,
                _ => continue,
            };
            let end = start + note.len;
            let overlap = |from: u64, to: u64| end.min(to).saturating_sub(start.max(from));
            let held = overlap(0, kept.head_end) + overlap(kept.tail_start, kept.end);
            seen.held += held;
            // A line not wholly shown does not count its bytes where it is read.
            if held < note.len {
                seen.hidden_refused += note.refused;
            }
        }
        seen
    }

    /// What a file of `stream` can show now.
    pub fn extent(&self, stream: Stream) -> Extent {
        let (kept, written, line_ended) = match stream {
            Stream::Output => (
                self.output_kept(),
                self.header.out_end + self.header.stdout.refused + self.header.stderr.refused,
                self.header.out_line_ended,
            ),
            stream => {
                let counts = self.counts(stream);
                (
                    self.data.kept(counts.end),
                    counts.end + counts.refused,
                    counts.line_ended,
                )
            }
        };
        let (gap, noted) = match stream {
            Stream::Output => (
                self.gaps[0] + self.gaps[1],
                self.header.stdout.noted + self.header.stderr.noted,
            ),
            stream => (
                self.gaps[Capture::gap_slot(stream)],
                self.counts(stream).noted,
            ),
        };
        let stop_notice = match &self.stop_reason {
            Some(why) => Some(not_kept_line(line_ended, why)),
            None if self.header.cut_short => Some(cut_short_line(line_ended)),
            // Output has ended: the gap's count is final.
            None if gap > 0 => Some(self.gap_notice(stream, gap, self.header.sealed)),
            None => None,
        };
        let seen = self.seen(stream, &kept);
        let held_noted = seen.held.min(noted);
        Extent {
            kept,
            written: written - noted,
            stop_notice: stop_notice.map(Into::into),
            noted,
            held_noted,
            hidden: (kept.dropped() + held_noted).saturating_sub(noted) + seen.hidden_refused,
            hidden_refused: seen.hidden_refused,
        }
    }

    pub(super) fn output_kept(&self) -> Kept {
        let end = self.header.out_end;
        let head_end = end
            .min(self.data.head)
            .min(self.header.head_limit.unwrap_or(u64::MAX));
        let floor = if self.header.records > self.index.capacity() {
            self.header.floor
        } else {
            0
        };
        Kept {
            head_end,
            tail_start: head_end
                .max(end.saturating_sub(self.data.ring))
                .max(floor.min(end)),
            end,
        }
    }

    /// Appends the stored bytes of `stream` in `[from, from + max)` to `out`; bytes not
    /// held read as NUL, so offsets stay true. Stops at the stored end. Returns what
    /// was held when the bytes were read.
    pub fn read(&self, stream: Stream, from: u64, max: usize, out: &mut Vec<u8>) -> Held {
        self.store.touch();
        self.copy(stream, from, max, out)
    }

    /// [`Capture::read`] without counting as a read (for eviction and expiry).
    pub fn copy(&self, stream: Stream, from: u64, max: usize, out: &mut Vec<u8>) -> Held {
        let extent = self.extent(stream);
        let to = from.saturating_add(max as u64).min(extent.kept.end);
        let mut held = Held {
            kept: extent.kept,
            files: true,
        };
        if from >= to {
            return held;
        }
        let opened;
        let files = match &self.files {
            Some(files) => Some(files),
            None => {
                opened = Files::open(self.store.dir(), false).ok();
                opened.as_ref()
            }
        };
        let start = out.len();
        let want = (to - from) as usize;
        out.resize(start + want, 0);
        let Some(files) = files else {
            held.files = false;
            return held;
        };
        let buffer = &mut out[start..];
        let _ = match stream {
            Stream::Output => self.read_output(files, &extent.kept, from, buffer),
            stream => read_held(files.data(stream), &self.data, &extent.kept, from, buffer),
        };
        held
    }

    /// Fills `buffer` with `output` from offset `from`, run by run.
    pub(super) fn read_output(
        &self,
        files: &Files,
        kept: &Kept,
        from: u64,
        buffer: &mut [u8],
    ) -> io::Result<()> {
        let records = self.header.records;
        let head_records = records.min(self.index.head);
        let ring_from = self.index.head.max(records.saturating_sub(self.index.ring));
        let held_records = head_records + records.saturating_sub(ring_from);
        let nth = |i: u64| {
            if i < head_records {
                i
            } else {
                ring_from + (i - head_records)
            }
        };
        let mut at = from;
        let to = from + buffer.len() as u64;
        while at < to {
            // Skip what is not held; each held part is served by the runs inside it.
            let (part_end, held) = if at < kept.head_end {
                (kept.head_end, true)
            } else if at < kept.tail_start {
                (kept.tail_start, false)
            } else {
                (kept.end, true)
            };
            let part_end = part_end.min(to);
            if !held {
                at = part_end;
                continue;
            }
            // The last held record starting at or before `at`.
            let (mut low, mut high) = (0u64, held_records);
            while high - low > 1 {
                let middle = (low + high) / 2;
                if read_record(&files.index, &self.index, nth(middle))?.0 <= at {
                    low = middle;
                } else {
                    high = middle;
                }
            }
            let mut i = low;
            while at < part_end && i < held_records {
                let k = nth(i);
                let (start, stderr, stream_start) = read_record(&files.index, &self.index, k)?;
                let run_end = if k + 1 == records {
                    self.header.out_end
                } else if i + 1 == head_records && ring_from > head_records {
                    self.header.head_limit.unwrap_or(self.header.out_end)
                } else {
                    read_record(&files.index, &self.index, k + 1)?.0
                };
                let piece_end = run_end.min(part_end);
                if piece_end > at && at >= start {
                    let (stream, counts) = if stderr {
                        (Stream::Stderr, self.header.stderr)
                    } else {
                        (Stream::Stdout, self.header.stdout)
                    };
                    let offset = stream_start + (at - start);
                    let slice = &mut buffer[(at - from) as usize..(piece_end - from) as usize];
                    let stream_kept = self.data.kept(counts.end);
                    read_held(files.data(stream), &self.data, &stream_kept, offset, slice)?;
                    at = piece_end;
                }
                i += 1;
            }
            at = at.max(part_end);
        }
        Ok(())
    }
}

/// Fills `buffer` with stream bytes from `from`; bytes not held stay as they are (NUL).
pub(super) fn read_held(
    file: &File,
    layout: &Layout,
    kept: &Kept,
    from: u64,
    buffer: &mut [u8],
) -> io::Result<()> {
    let to = from + buffer.len() as u64;
    let mut at = from;
    while at < to {
        let (end, held) = if at < kept.head_end {
            (kept.head_end, true)
        } else if at < kept.tail_start {
            (kept.tail_start, false)
        } else if at < kept.end {
            let position = layout.position(at);
            (at + (layout.capacity() - position), true)
        } else {
            return Ok(());
        };
        let end = end.min(to).min(kept.end.max(at));
        if held {
            let slice = &mut buffer[(at - from) as usize..(end - from) as usize];
            file.read_exact_at(slice, layout.position(at))?;
        }
        at = end;
    }
    Ok(())
}
