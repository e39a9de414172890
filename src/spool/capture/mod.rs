//! One command's output on disk: `stdout` and `stderr` as bounded files (see
//! [`layout`](super::layout)), and `output` as an index of the interleaving rather than a
//! third copy of the bytes.
//!
//! The index is a file of 16-byte records, one per run of bytes from one stream: where
//! the run starts in `output` and where it starts in its stream. It is bounded the same
//! way (a head of records and a ring of the newest). Every byte of `output`'s head lies
//! in its stream's head and every byte of `output`'s tail in its stream's tail, so the
//! stream files serve `output` whatever was dropped.
//!
//! A header at the start of the index holds the counts a restart needs; it is rewritten
//! after every chunk that was stored, before the chunk is shown (a `write(2)`, no
//! `fsync`: a crash of the driver loses none of it), and once more when output ends. A
//! driver that stopped before the output ended leaves it unsealed; the next one marks
//! it cut short and shows one notice where the stored part ends.
//!
//! While output can still arrive, the three files are open; once it has ended they are
//! closed, and each read opens what it needs, so a finished command holds no descriptor.
//! Output that cannot be stored is counted. A full disk or a failed write stops storing
//! for good, and one notice line ends the stream's stored part. Output that running
//! commands alone leave no room for under `--max-spool` opens a gap instead (the first
//! bytes of a chunk that fit the room left are stored, the rest is the gap): the same
//! notice line shows while it is open, and the next bytes of that stream that fit (once
//! finished commands can be evicted or commands were removed) are stored after that
//! line and a second one with the exact count of bytes dropped, so readers see the
//! stream only grow. A stream whose gap is still open when output ends gets that count
//! line too. The notice lines stored among the stream's bytes are counted (`noted`) so
//! that byte counts stay the command's own. Where such lines (in a stream or in
//! `output`) fall between the head and the tail they are not shown: the bytes they
//! counted are then among those the head-and-tail notice counts ([`Extent::hidden`]).

mod index;
mod read;

pub(crate) use index::*;
pub use read::{Extent, Held};

use super::layout::{Kept, Layout};
use super::{Spool, Store};
use std::fs::File;
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Which captured stream a file shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stream {
    Stdout,
    Stderr,
    /// stdout and stderr interleaved in the order they arrived.
    Output,
}

/// Longest time the header may lag behind the files while output arrives.
pub const CHECKPOINT: Duration = Duration::from_millis(200);

pub(crate) const STDOUT_FILE: &str = "stdout";
pub(crate) const STDERR_FILE: &str = "stderr";
pub(crate) const INDEX_FILE: &str = "output.idx";

/// A notice line stored among a stream's bytes where a gap closed: where it starts in
/// its stream (`slot`: 0 stdout, 1 stderr) and in `output`, its length, and the count
/// of bytes it stands for.
#[derive(Debug, Clone, Copy)]
struct Note {
    slot: usize,
    at: u64,
    out_at: u64,
    len: u64,
    refused: u64,
}

/// Where the notice lines of one file (stdout, stderr, output) are, as its extent
/// needs it: bytes of them that are held, and the bytes counted by those not shown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Seen {
    pub held: u64,
    pub hidden_refused: u64,
}

/// The key of a command's record under which [`Seen`] of its three files is saved
/// once it has notice lines, so that a restart shows the same counts.
pub(crate) const NOTICES_KEY: &str = "notices";
const SEEN_FILES: [(Stream, &str); 3] = [
    (Stream::Stdout, "stdout"),
    (Stream::Stderr, "stderr"),
    (Stream::Output, "output"),
];

fn seen_index(stream: Stream) -> usize {
    match stream {
        Stream::Stdout => 0,
        Stream::Stderr => 1,
        Stream::Output => 2,
    }
}

struct Files {
    stdout: File,
    stderr: File,
    index: File,
}

impl Files {
    fn open(dir: &Path, create: bool) -> io::Result<Files> {
        let open = |name: &str| {
            std::fs::OpenOptions::new()
                .read(true)
                .write(create)
                .create(create)
                .mode(0o600)
                .open(dir.join(name))
        };
        Ok(Files {
            stdout: open(STDOUT_FILE)?,
            stderr: open(STDERR_FILE)?,
            index: open(INDEX_FILE)?,
        })
    }

    fn data(&self, stream: Stream) -> &File {
        match stream {
            Stream::Stderr => &self.stderr,
            _ => &self.stdout,
        }
    }
}

/// The capture of one command's output.
pub struct Capture {
    /// The command's name, for its record.
    name: String,
    store: Arc<Store>,
    spool: Arc<Spool>,
    data: Layout,
    index: Layout,
    header: Header,
    /// Open while output may still arrive (after the first byte).
    files: Option<Files>,
    /// Why storing stopped for good, once it did.
    stop_reason: Option<String>,
    /// Bytes of stdout and of stderr refused since their gap opened (0: none open),
    /// and why the newest gap opened.
    gaps: [u64; 2],
    gap_reason: String,
    last_stream: Option<Stream>,
    dirty: bool,
    /// When the command last wrote to stdout and to stderr, by the wall clock (None:
    /// not since this capture was made). Not derived from the monotonic clock, which
    /// stops while the machine sleeps.
    grew: [Option<SystemTime>; 2],
    /// The notice lines stored since this capture was made.
    notes: Vec<Note>,
    /// For a capture restored with notice lines: what its files showed of them, as
    /// saved in its record (or, from a record without it, every line as held).
    restored: Option<[Seen; 3]>,
}

impl Capture {
    pub(crate) fn new(spool: Arc<Spool>, name: &str, store: Arc<Store>, header: Header) -> Capture {
        let capacity = header.capacity;
        let files = None;
        Capture {
            name: name.to_string(),
            store,
            spool,
            data: Layout::new(capacity),
            index: index_layout(capacity),
            header,
            files,
            stop_reason: header.stopped.then(|| "it was not stored".to_string()),
            gaps: [0; 2],
            gap_reason: String::new(),
            last_stream: None,
            dirty: false,
            grew: [None; 2],
            notes: Vec::new(),
            restored: (header.stdout.noted + header.stderr.noted > 0).then(|| {
                let held = |noted| Seen {
                    held: noted,
                    hidden_refused: 0,
                };
                [
                    held(header.stdout.noted),
                    held(header.stderr.noted),
                    held(header.stdout.noted + header.stderr.noted),
                ]
            }),
        }
    }

    /// Takes what a restored capture's files showed of its notice lines from its
    /// saved record (see [`NOTICES_KEY`]); a value not of that form changes nothing.
    pub(crate) fn restore_notices(&mut self, saved: &serde_json::Value) {
        let Some(restored) = &mut self.restored else {
            return;
        };
        let mut read = [Seen::default(); 3];
        for (index, (_, file)) in SEEN_FILES.iter().enumerate() {
            let pair = saved[*file].as_array().map(|pair| {
                pair.iter()
                    .filter_map(serde_json::Value::as_u64)
                    .collect::<Vec<_>>()
            });
            let Some([held, hidden_refused]) = pair.as_deref() else {
                return;
            };
            read[index] = Seen {
                held: *held,
                hidden_refused: *hidden_refused,
            };
        }
        *restored = read;
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// Saves (replaces) the command's record next to its output, with what its files
    /// show of its notice lines when it has any.
    pub fn save(&self, meta: &serde_json::Value) {
        let noted = self.header.stdout.noted + self.header.stderr.noted;
        if noted == 0 {
            return self.spool.save(&self.store, meta);
        }
        let mut meta = meta.clone();
        if let Some(map) = meta.as_object_mut() {
            let seen = SEEN_FILES
                .iter()
                .map(|(stream, file)| {
                    let seen = self.seen(*stream, &self.extent_kept(*stream));
                    (
                        file.to_string(),
                        serde_json::json!([seen.held, seen.hidden_refused]),
                    )
                })
                .collect();
            map.insert(NOTICES_KEY.into(), serde_json::Value::Object(seen));
        }
        self.spool.save(&self.store, &meta);
    }

    /// Bytes the files take, by their counts.
    pub(crate) fn disk_bytes(header: &Header) -> u64 {
        let (out, err, index) = header.file_lens();
        out + err + index
    }

    fn counts(&self, stream: Stream) -> Counts {
        match stream {
            Stream::Stderr => self.header.stderr,
            _ => self.header.stdout,
        }
    }

    fn gap_slot(stream: Stream) -> usize {
        usize::from(stream == Stream::Stderr)
    }

    fn counts_mut(&mut self, stream: Stream) -> &mut Counts {
        match stream {
            Stream::Stderr => &mut self.header.stderr,
            _ => &mut self.header.stdout,
        }
    }

    /// Stores bytes the command wrote to `stream` (stdout or stderr), in arrival order.
    pub fn append(&mut self, stream: Stream, bytes: &[u8]) {
        self.append_at(stream, bytes, SystemTime::now());
    }

    /// [`Capture::append`] of bytes that arrived at `now` (the stream's mtime).
    pub(crate) fn append_at(&mut self, stream: Stream, bytes: &[u8], now: SystemTime) {
        if bytes.is_empty() || stream == Stream::Output {
            return;
        }
        let len = bytes.len() as u64;
        let slot = Capture::gap_slot(stream);
        self.grew[slot] = Some(now);
        if self.stop_reason.is_some() || self.header.sealed || self.store.is_gone() {
            self.counts_mut(stream).refused += len;
            return;
        }
        let dropped = self.gaps[slot];
        // A gap closes with its notice, stored where readers saw it shown, and only
        // with at least one byte of the command's own after it.
        let (at, out_at) = (self.counts(stream).end, self.header.out_end);
        let stored = if dropped == 0 {
            self.store_bytes(stream, bytes, 1).map(|stored| (stored, 0))
        } else {
            let mut notice = self.gap_notice(stream, dropped, true);
            let noted = notice.len();
            notice.extend_from_slice(bytes);
            self.store_bytes(stream, &notice, noted + 1)
                .map(|stored| (stored, noted))
        };
        match stored {
            Ok((stored, noted)) => {
                if noted > 0 {
                    self.notes.push(Note {
                        slot,
                        at,
                        out_at,
                        len: noted as u64,
                        refused: dropped,
                    });
                    self.counts_mut(stream).noted += noted as u64;
                    self.gaps[slot] = 0;
                    self.header.stopped = self.gaps.iter().any(|gap| *gap > 0);
                    self.spool.log(&format!(
                        "storing the output of {} again; {dropped} bytes of its {} were dropped",
                        self.name,
                        if stream == Stream::Stderr {
                            "stderr"
                        } else {
                            "stdout"
                        },
                    ));
                    self.checkpoint();
                }
                // Only the part that fitted was stored: the rest opens a gap.
                let rest = len - (stored - noted) as u64;
                if rest > 0 {
                    self.open_gap(stream, rest, self.spool.full_reason());
                }
            }
            Err(Refusal::Room(why)) => {
                self.open_gap(stream, len, why);
                return;
            }
            Err(Refusal::Failed(why)) => {
                self.stop(why);
                self.counts_mut(stream).refused += len;
                return;
            }
        }
        // The counts reach the file before the bytes are shown: whatever a reader saw
        // is there after a crash.
        self.checkpoint();
    }

    /// The driver stopped before this output ended: a notice follows the stored part
    /// of each file, and the counts say so from now on.
    pub fn cut_short(&mut self) {
        if !self.header.cut_short {
            self.header.cut_short = true;
            self.dirty = true;
            self.checkpoint();
        }
    }

    /// Whether the driver stopped before this output ended (see [`Capture::cut_short`]).
    pub fn is_cut_short(&self) -> bool {
        self.header.cut_short
    }

    /// `dropped` bytes of `stream` were refused for room (`why`): they are counted,
    /// and the stream's gap opens or grows.
    fn open_gap(&mut self, stream: Stream, dropped: u64, why: String) {
        if self.gaps == [0, 0] {
            self.spool.log(&format!(
                "not storing the output of {} for now: {why}; what comes is counted \
                 as dropped until it fits",
                self.name
            ));
        }
        self.gaps[Capture::gap_slot(stream)] += dropped;
        self.gap_reason = why;
        self.counts_mut(stream).refused += dropped;
        if !self.header.stopped {
            self.header.stopped = true;
            self.dirty = true;
            self.checkpoint();
        }
    }

    /// When the command last wrote to `stream` (to either stream, for `output`), by
    /// the wall clock when the bytes arrived; None when it has not since this capture
    /// was made, unless an earlier driver's times were given back
    /// ([`Capture::restore_grew`]).
    pub fn grew_at(&self, stream: Stream) -> Option<SystemTime> {
        match stream {
            Stream::Output => self.grew[0].max(self.grew[1]),
            stream => self.grew[Capture::gap_slot(stream)],
        }
    }

    /// Gives a restored capture the times its streams last grew (stdout, stderr) as
    /// the driver that captured them kept them.
    pub fn restore_grew(&mut self, stdout: Option<SystemTime>, stderr: Option<SystemTime>) {
        self.grew = [stdout, stderr];
    }

    /// The notice shown where `dropped` bytes of `stream` (any stream, for `output`)
    /// were refused: the line shown while the gap is open, then, once it has closed
    /// (`closed`), the line with the count.
    fn gap_notice(&self, stream: Stream, dropped: u64, closed: bool) -> Vec<u8> {
        let line_ended = match stream {
            Stream::Output => self.header.out_line_ended,
            Stream::Stderr => self.header.stderr.line_ended,
            Stream::Stdout => self.header.stdout.line_ended,
        };
        let mut notice = not_kept_line(line_ended, &self.gap_reason);
        if closed {
            notice.extend_from_slice(
                format!("[terminalfs: {dropped} bytes were not kept there]\n").as_bytes(),
            );
        }
        notice
    }

    /// Stores `bytes` of `stream`, or as many of the first of them as the budget has
    /// room for, if that is at least `least`. Returns how many were stored.
    fn store_bytes(
        &mut self,
        stream: Stream,
        bytes: &[u8],
        least: usize,
    ) -> Result<usize, Refusal> {
        if self.files.is_none() {
            let dir = self.store.dir();
            let opened = std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .and_then(|()| Files::open(dir, true))
                // The header goes first: a record or byte written before it would leave
                // zeros where a restart (after a crash or a stop before output ended)
                // reads the counts, and the command would be skipped as damaged.
                .and_then(|files| {
                    files.index.write_all_at(&self.header.encode(), 0)?;
                    Ok(files)
                })
                .map_err(|e| Refusal::Failed(write_failure(&e)));
            // The command and its record follow the directory at once: a crash must not
            // find output without them for longer than the worker takes to write them.
            // Asked for only now, so the worker's creates in the directory do not
            // contend with these for its lock while the command's first bytes wait.
            self.spool.write_first_now(&self.store);
            self.files = Some(opened?);
        }
        let counts = *self.counts_mut(stream);
        let new_record = self.last_stream != Some(stream);
        let record_grows = if new_record {
            RECORD
                * (self.index.file_len(self.header.records + 1)
                    - self.index.file_len(self.header.records))
        } else {
            0
        };
        let grows = |len: u64| {
            record_grows + self.data.file_len(counts.end + len) - self.data.file_len(counts.end)
        };
        let whole = grows(bytes.len() as u64);
        let granted = self
            .spool
            .reserve(&self.store, whole, grows(least as u64))
            .map_err(|full| Refusal::Room(full.to_string()))?;
        // Room short of the whole: the stream's file is below its bound for every
        // byte that fits (past it, bytes would cost nothing and the whole would have
        // fitted), so each stored byte takes one of the room.
        let len = if granted >= whole {
            bytes.len() as u64
        } else {
            granted - record_grows
        };
        debug_assert_eq!(grows(len), granted.min(whole));
        let bytes = &bytes[..len as usize];
        let files = self.files.as_ref().expect("opened above");
        if new_record {
            let k = self.header.records;
            let mut record = [0u8; RECORD as usize];
            record[..8].copy_from_slice(&self.header.out_end.to_le_bytes());
            let tag = counts.end
                | if stream == Stream::Stderr {
                    STDERR_BIT
                } else {
                    0
                };
            record[8..].copy_from_slice(&tag.to_le_bytes());
            let position = HEADER + RECORD * self.index.position(k);
            files
                .index
                .write_all_at(&record, position)
                .map_err(|e| Refusal::Failed(write_failure(&e)))?;
            if k == self.index.head {
                self.header.head_limit = Some(self.header.out_end);
            }
            if k >= self.index.capacity() {
                // Record k took the slot of record k - ring; the oldest left is the next.
                let oldest = k + 1 - self.index.ring;
                self.header.floor = read_record(&files.index, &self.index, oldest)
                    .map_err(|e| Refusal::Failed(write_failure(&e)))?
                    .0;
            }
            self.header.records += 1;
            self.last_stream = Some(stream);
        }
        #[cfg(test)]
        super::stall::wait_if_held(self.store.dir());
        for (from, position, piece) in self.data.pieces(counts.end, len) {
            let part = &bytes[from as usize..(from + piece) as usize];
            files
                .data(stream)
                .write_all_at(part, position)
                .map_err(|e| Refusal::Failed(write_failure(&e)))?;
        }
        let line_ended = bytes.last() == Some(&b'\n');
        let counts = self.counts_mut(stream);
        counts.end += len;
        counts.line_ended = line_ended;
        self.header.out_end += len;
        self.header.out_line_ended = line_ended;
        self.dirty = true;
        Ok(bytes.len())
    }

    /// Storing stops for good: later bytes are only counted.
    fn stop(&mut self, why: String) {
        if self.stop_reason.is_some() {
            return;
        }
        self.header.stopped = true;
        self.spool.log(&format!(
            "no longer storing the output of {}: {why}; what follows is counted as dropped",
            self.name
        ));
        self.stop_reason = Some(why);
        self.dirty = true;
        self.checkpoint();
    }

    /// Writes the header if it changed.
    fn checkpoint(&mut self) {
        if !self.dirty {
            return;
        }
        if let Some(files) = &self.files {
            if files.index.write_all_at(&self.header.encode(), 0).is_ok() {
                self.dirty = false;
            }
        }
    }

    /// No more output will come: the header is final and the files are closed.
    pub fn seal(&mut self) {
        if self.header.sealed {
            return;
        }
        self.header.sealed = true;
        self.dirty = true;
        self.checkpoint();
        self.files = None;
        self.store.set_finished(Capture::disk_bytes(&self.header));
    }
}

/// Why bytes were not stored.
enum Refusal {
    /// Running commands alone fill `--max-spool`: later bytes may fit.
    Room(String),
    /// The disk is full or a write failed: storing stops for good.
    Failed(String),
}

/// The line that follows the last stored byte of a stream whose driver stopped before
/// the output ended, starting a line of its own.
fn cut_short_line(line_ended: bool) -> Vec<u8> {
    let lead = if line_ended { "" } else { "\n" };
    format!(
        "{lead}[terminalfs: output from here on may be missing: {}]\n",
        super::DRIVER_STOPPED
    )
    .into_bytes()
}

/// The line that follows the last stored byte of a stream when what came next was not
/// kept, starting a line of its own.
fn not_kept_line(line_ended: bool, why: &str) -> Vec<u8> {
    let lead = if line_ended { "" } else { "\n" };
    format!("{lead}[terminalfs: output from here on was not kept: {why}]\n").into_bytes()
}

fn write_failure(error: &io::Error) -> String {
    match error.raw_os_error() {
        Some(libc::ENOSPC) | Some(libc::EDQUOT) => {
            "the disk holding the state directory is full".to_string()
        }
        _ => format!("the spool could not be written ({error})"),
    }
}
