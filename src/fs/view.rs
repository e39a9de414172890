//! Views: what a file of an output stream shows, given what the spool holds of it.
//!
//! A view is the stream's head (`[0, head)`), then an optional notice line saying how
//! many bytes were dropped, then every byte from `base` on, then (once storing stopped
//! early) the line saying so. The command's own inode for `stdout` is the view with no
//! head and no notice from byte 0, so its size is the number of bytes ever stored and
//! only grows; a fresh lookup after bytes were dropped gets a view made then. A view's
//! size only grows, which is what `tail -f` on an open handle needs. Bytes dropped
//! after the view was made keep their place, so offsets stay true, and each open
//! handle reads a notice line there saying how many were dropped ([`Gaps`]).

use crate::supervisor::{Job, Stream};
use std::ops::Range;
use std::sync::Arc;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    /// Bytes of the head shown before the notice.
    pub head: u64,
    pub notice: Arc<[u8]>,
    /// The stream offset shown after the notice.
    pub base: u64,
}

impl View {
    /// Every byte from the start, no notice.
    pub fn whole() -> View {
        View {
            head: 0,
            notice: Arc::from(&b""[..]),
            base: 0,
        }
    }

    /// The view a fresh open of `stream` gets: the whole stream while nothing was
    /// dropped, else the head, one notice line with the exact count, and the newest bytes.
    pub fn fresh(job: &Job, stream: Stream) -> View {
        let extent = job.extent(stream);
        let kept = extent.kept;
        if kept.dropped() == 0 {
            return View::whole();
        }
        let (last, _) = job.read(stream, kept.head_end.saturating_sub(1), 1);
        let lead = if kept.head_end == 0 || last == b"\n" {
            ""
        } else {
            "\n"
        };
        // The count is of the command's bytes: notice lines dropped here are not in it,
        // and the bytes they counted are, with why they were not kept.
        let refused = match extent.hidden_refused {
            0 => String::new(),
            count => format!(
                " ({count} of them were not kept: the spool reached --max-spool with \
                 running commands alone)"
            ),
        };
        let notice = format!(
            "{lead}[terminalfs: {} bytes were dropped here{refused}; the first {} and the \
             newest {} bytes are kept]\n",
            extent.hidden,
            kept.head_end,
            kept.end - kept.tail_start,
        );
        View {
            head: kept.head_end,
            notice: notice.into_bytes().into(),
            base: kept.tail_start,
        }
    }

    /// The view's size now: head, notice, every byte from `base`, and the closing line.
    pub fn size(&self, job: &Job, stream: Stream) -> u64 {
        let extent = job.extent(stream);
        self.head
            + self.notice.len() as u64
            + extent.kept.end.saturating_sub(self.base)
            + extent.stop_notice.map_or(0, |n| n.len() as u64)
    }

    /// Bytes of the view at `offset`, at most `max`, as the handle whose `gaps` these
    /// are reads them, plus whether the shell still runs. Where bytes the view covers
    /// were dropped after it was made (or its command's files are gone), the handle
    /// reads a notice line naming how many, never silent NULs: see [`Gaps`].
    pub fn read(
        &self,
        job: &Job,
        stream: Stream,
        gaps: &mut Gaps,
        offset: u64,
        max: usize,
    ) -> (Vec<u8>, bool) {
        let max = max as u64;
        let mut out = Vec::new();
        let mut running = None;
        while (out.len() as u64) < max {
            let at = offset + out.len() as u64;
            let i = gaps.pieces.partition_point(|(start, _)| *start <= at) - 1;
            let start = gaps.pieces[i].0;
            let next = gaps.pieces.get(i + 1).map(|(next, _)| *next);
            let left = max - out.len() as u64;
            let want = next.map_or(left, |next| left.min(next - at));
            let v = match &gaps.pieces[i].1 {
                Piece::Notice(text) => {
                    let from = (at - start) as usize;
                    let shown = &text[from.min(text.len())..];
                    let shown = &shown[..shown.len().min(want as usize)];
                    out.extend_from_slice(shown);
                    out.resize(out.len() + (want as usize - shown.len()), b'\n');
                    continue;
                }
                Piece::View(v) => v + (at - start),
            };
            let (bytes, still, hole) = self.read_held(job, stream, v, want);
            running = Some(still);
            out.extend_from_slice(&bytes);
            let Some(hole) = hole else {
                if (bytes.len() as u64) < want {
                    break;
                }
                continue;
            };
            // A hole this handle has not been told of: a notice takes its place.
            let at = offset + out.len() as u64;
            let piece_end = next.map_or(u64::MAX, |next| hole.start + (next - at));
            let hole = hole.start..hole.end.min(piece_end);
            let count = hole.end - hole.start;
            let line_ended = match (out.last(), gaps.last) {
                (Some(byte), _) => *byte == b'\n',
                (None, Some((end, byte))) if end == at => byte == b'\n',
                _ => at == 0,
            };
            let lead = if line_ended { "" } else { "\n" };
            let squeeze = gaps.squeeze && next.is_none();
            let text = if squeeze {
                gap_notice(lead, count, "")
            } else {
                fitted_notice(lead, count)
            };
            let shown = if squeeze { text.len() as u64 } else { count };
            let after = (at + shown, Piece::View(hole.end));
            let notice = (at, Piece::Notice(text));
            let mut new = vec![notice];
            if next != Some(after.0) {
                new.push(after);
            }
            let from = if at == start { i } else { i + 1 };
            gaps.pieces
                .splice(from..from + usize::from(at == start), new);
        }
        if let Some(byte) = out.last() {
            gaps.last = Some((offset + out.len() as u64, *byte));
        }
        let running = running.unwrap_or_else(|| job.is_running());
        (out, running)
    }

    /// Bytes of the view from `at` (at most `max`) up to the first one not held, whether
    /// the shell still runs, and the hole (view offsets) that stopped the read, if one
    /// did.
    fn read_held(
        &self,
        job: &Job,
        stream: Stream,
        at: u64,
        max: u64,
    ) -> (Vec<u8>, bool, Option<Range<u64>>) {
        let notice_end = self.head + self.notice.len() as u64;
        let mut out = Vec::new();
        let mut at = at;
        let mut max = max;
        let mut running = None;
        // The parts of the view that show stream bytes: (view start, view end, stream
        // offset at the view start). The stream part ends with what is stored.
        let parts = [(0, self.head, 0), (notice_end, u64::MAX, self.base)];
        for (index, (first, last, base)) in parts.into_iter().enumerate() {
            if index == 1 && at >= self.head && at < notice_end && max > 0 {
                let from = (at - self.head) as usize;
                let len = (self.notice.len() - from).min(max as usize);
                out.extend_from_slice(&self.notice[from..from + len]);
                at += len as u64;
                max -= len as u64;
            }
            if at < first || at >= last || max == 0 {
                continue;
            }
            let from = base + (at - first);
            let len = max.min(last - at);
            let (mut bytes, still, held) = job.read_held(stream, from, len as usize);
            running = Some(still);
            let missing = held.missing();
            let stored = held.kept.end.min(base.saturating_add(last - first));
            let gap_start = missing.start.max(from);
            if gap_start < missing.end.min(stored) && gap_start < from + bytes.len() as u64 {
                bytes.truncate((gap_start - from) as usize);
                out.extend_from_slice(&bytes);
                let hole = first + (gap_start - base)..first + (missing.end.min(stored) - base);
                return (out, still, Some(hole));
            }
            at += bytes.len() as u64;
            max -= bytes.len() as u64;
            out.extend_from_slice(&bytes);
            if (bytes.len() as u64) < len {
                break;
            }
        }
        let extent = job.extent(stream);
        let stored_end = notice_end + extent.kept.end.saturating_sub(self.base);
        if let Some(stop) = &extent.stop_notice {
            if at >= stored_end && max > 0 {
                let from = ((at - stored_end) as usize).min(stop.len());
                let len = (stop.len() - from).min(max as usize);
                out.extend_from_slice(&stop[from..from + len]);
            }
        }
        let running = running.unwrap_or_else(|| job.is_running());
        (out, running, None)
    }
}

/// The notice that stands where `count` bytes were dropped after a view was made.
fn gap_notice(lead: &str, count: u64, more: &str) -> Arc<[u8]> {
    format!(
        "{lead}[terminalfs: {count} bytes were dropped here after this file was opened{more}]\n"
    )
    .into_bytes()
    .into()
}

/// The notice for a hole of `count` bytes that keeps its place: the whole line when it
/// fits (newlines fill the rest), else a short one, else as much of the short one as
/// fits, ending with a newline.
fn fitted_notice(lead: &str, count: u64) -> Arc<[u8]> {
    let whole = gap_notice(lead, count, "; blank lines hold their place");
    if whole.len() as u64 <= count {
        return whole;
    }
    let mut short = format!("{lead}[terminalfs: {count} bytes dropped]\n").into_bytes();
    if short.len() as u64 > count {
        short.truncate(count as usize);
        if let Some(last) = short.last_mut() {
            *last = b'\n';
        }
    }
    short.into()
}

/// What one open handle of a view has shown where bytes were dropped after the view
/// was made. The first read to meet such a hole gets a notice line there naming how
/// many bytes it covers; the handle keeps showing the same bytes at the same offsets.
/// A handle that keeps offsets true (`stdout`, `stderr`, `output`) reads the hole at
/// its full length: the notice, then newlines (blank lines for a line reader, nothing
/// that makes `grep` call it binary). A handle that squeezes (`follow`, whose offsets
/// are its own) reads the notice and then the next byte still held.
#[derive(Debug)]
pub struct Gaps {
    /// From each handle offset on (up to the next one): the view from a view offset,
    /// or a notice (then newlines). Sorted, the first at 0.
    pieces: Vec<(u64, Piece)>,
    squeeze: bool,
    /// The handle offset after the last byte read, and that byte.
    last: Option<(u64, u8)>,
}

#[derive(Debug)]
enum Piece {
    View(u64),
    Notice(Arc<[u8]>),
}

impl Gaps {
    /// For a handle that keeps offsets true (`squeeze` false) or skips holes.
    pub fn new(squeeze: bool) -> Gaps {
        Gaps {
            pieces: vec![(0, Piece::View(0))],
            squeeze,
            last: None,
        }
    }
}
