//! Views: what a file of an output stream shows, given what the spool holds of it.
//!
//! A view is the stream's head (`[0, head)`), then an optional notice line saying how
//! many bytes were dropped, then every byte from `base` on, then (once storing stopped
//! early) the line saying so. The command's own inode for `stdout` is the view with no
//! head and no notice from byte 0, so its size is the number of bytes ever stored and
//! only grows; a fresh lookup after bytes were dropped gets a view made then. A view's
//! size only grows, which is what `tail -f` on an open handle needs; bytes dropped
//! after the view was made read as NUL, so offsets stay true.

use crate::supervisor::{Job, Stream};
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
        let kept = job.extent(stream).kept;
        if kept.dropped() == 0 {
            return View::whole();
        }
        let (last, _) = job.read(stream, kept.head_end.saturating_sub(1), 1);
        let lead = if kept.head_end == 0 || last == b"\n" {
            ""
        } else {
            "\n"
        };
        let notice = format!(
            "{lead}[terminalfs: {} bytes were dropped here; the first {} and the newest {} \
             bytes are kept]\n",
            kept.dropped(),
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

    /// Bytes of the view at `offset`, at most `max`, plus whether the shell still runs.
    pub fn read(&self, job: &Job, stream: Stream, offset: u64, max: usize) -> (Vec<u8>, bool) {
        let extent = job.extent(stream);
        let mut out = Vec::new();
        let mut offset = offset;
        let mut max = max as u64;
        let mut running = true;
        let mut take = |out: &mut Vec<u8>, from: u64, len: u64| {
            let (bytes, still) = job.read(stream, from, len as usize);
            running = still;
            let got = bytes.len() as u64;
            out.extend_from_slice(&bytes);
            got
        };
        if offset < self.head && max > 0 {
            let got = take(&mut out, offset, max.min(self.head - offset));
            offset += got;
            max -= got;
        }
        let notice_end = self.head + self.notice.len() as u64;
        if offset >= self.head && offset < notice_end && max > 0 {
            let from = (offset - self.head) as usize;
            let len = (self.notice.len() - from).min(max as usize);
            out.extend_from_slice(&self.notice[from..from + len]);
            offset += len as u64;
            max -= len as u64;
        }
        let stored_end = notice_end + extent.kept.end.saturating_sub(self.base);
        if offset >= notice_end && offset < stored_end && max > 0 {
            let got = take(
                &mut out,
                self.base + (offset - notice_end),
                max.min(stored_end - offset),
            );
            offset += got;
            max -= got;
        }
        if let Some(stop) = &extent.stop_notice {
            if offset >= stored_end && max > 0 {
                let from = ((offset - stored_end) as usize).min(stop.len());
                let len = (stop.len() - from).min(max as usize);
                out.extend_from_slice(&stop[from..from + len]);
            }
        }
        if out.is_empty() {
            running = job.is_running();
        }
        (out, running)
    }
}
