//! The spool against a model: what was appended, and what head-and-tail keeping means.

use super::*;
use std::os::unix::fs::symlink;

fn quiet(_: &str) {}

fn spool_in(dir: &Path, max_output: u64, max_spool: u64) -> Arc<Spool> {
    let _unlocked = prepare_dir(dir).expect("a fresh temporary state directory is accepted");
    Spool::open(
        SpoolConfig {
            dir: dir.to_path_buf(),
            max_output,
            max_spool,
        },
        quiet,
    )
    .expect("the worker starts")
}

/// What was appended, per stream and interleaved.
#[derive(Default)]
struct Model {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    output: Vec<u8>,
}

impl Model {
    fn append(&mut self, capture: &mut Capture, stream: Stream, bytes: &[u8]) {
        capture.append(stream, bytes);
        match stream {
            Stream::Stderr => self.stderr.extend_from_slice(bytes),
            _ => self.stdout.extend_from_slice(bytes),
        }
        self.output.extend_from_slice(bytes);
    }

    fn of(&self, stream: Stream) -> &[u8] {
        match stream {
            Stream::Stdout => &self.stdout,
            Stream::Stderr => &self.stderr,
            Stream::Output => &self.output,
        }
    }
}

fn read_all(capture: &Capture, stream: Stream) -> Vec<u8> {
    let mut out = Vec::new();
    capture.read(stream, 0, usize::MAX / 2, &mut out);
    out
}

/// Every held byte of every stream reads back as written; every other byte is NUL;
/// heads and tails have the sizes the bound allows.
fn check(capture: &Capture, model: &Model, capacity: u64) {
    for stream in [Stream::Stdout, Stream::Stderr, Stream::Output] {
        let want = model.of(stream);
        let extent = capture.extent(stream);
        let kept = extent.kept;
        assert_eq!(kept.end, want.len() as u64, "{stream:?} end");
        assert_eq!(extent.written, want.len() as u64);
        let got = read_all(capture, stream);
        assert_eq!(got.len(), want.len(), "{stream:?} length");
        for (at, (got, want)) in got.iter().zip(want).enumerate() {
            if kept.holds(at as u64) {
                assert_eq!(got, want, "{stream:?} byte {at}");
            } else {
                assert_eq!(*got, 0, "{stream:?} dropped byte {at}");
            }
        }
        assert!(kept.held() <= capacity.max(2));
        assert_eq!(kept.head_end.min(capacity / 4), kept.head_end);
        // Reading in small pieces gives the same bytes.
        let mut pieces = Vec::new();
        let mut at = 0u64;
        while at < kept.end {
            let before = pieces.len();
            capture.read(stream, at, 37, &mut pieces);
            at += (pieces.len() - before) as u64;
        }
        assert_eq!(pieces, got, "{stream:?} in pieces");
    }
    let stdout = capture.extent(Stream::Stdout).kept;
    if model.stdout.len() as u64 <= capacity {
        assert_eq!(stdout.dropped(), 0);
    } else {
        assert_eq!(stdout.head_end, capacity / 4, "the first quarter stays");
        assert_eq!(stdout.dropped(), model.stdout.len() as u64 - capacity);
    }
}

fn pattern(seed: u32, len: usize) -> Vec<u8> {
    (0..len as u32)
        .map(|i| b'a' + ((i * 7 + seed * 13) % 26) as u8)
        .collect()
}

#[test]
fn streams_and_output_read_back_before_and_after_dropping() {
    let dir = tempfile::tempdir().unwrap();
    for capacity in [8u64, 100, 4096] {
        for (out_chunk, err_chunk) in [(1usize, 1usize), (5, 3), (300, 7), (10_000, 1)] {
            let spool = spool_in(
                &dir.path().join(format!("s{capacity}-{out_chunk}")),
                capacity,
                u64::MAX,
            );
            let mut capture = spool.capture("job", b"true");
            let mut model = Model::default();
            for round in 0..60u32 {
                model.append(&mut capture, Stream::Stdout, &pattern(round, out_chunk));
                if round % 3 == 0 {
                    model.append(
                        &mut capture,
                        Stream::Stderr,
                        &pattern(round + 99, err_chunk),
                    );
                }
                if round % 17 == 0 {
                    check(&capture, &model, capacity);
                }
            }
            check(&capture, &model, capacity);
            capture.seal();
            check(&capture, &model, capacity);
        }
    }
}

#[test]
fn a_finished_capture_holds_no_descriptor() {
    let dir = tempfile::tempdir().unwrap();
    let spool = spool_in(&dir.path().join("state"), 1 << 20, u64::MAX);
    // Only descriptors on this spool's output files: other tests open files at the
    // same time, and the worker opens records and the heartbeat for a moment.
    let count = || {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .flatten()
            .filter_map(|fd| std::fs::read_link(fd.path()).ok())
            .filter(|target| target.starts_with(dir.path()))
            .filter(|target| {
                target.file_name().is_some_and(|name| {
                    ["stdout", "stderr", "output.idx"].contains(&&*name.to_string_lossy())
                })
            })
            .count()
    };
    let before = count();
    let mut captures: Vec<Capture> = (0..50)
        .map(|i| {
            let mut capture = spool.capture(&format!("c{i}"), b"echo");
            capture.append(Stream::Stdout, b"line\n");
            capture.append(Stream::Stderr, b"oops\n");
            capture
        })
        .collect();
    assert_eq!(
        count(),
        before + 150,
        "running captures keep their files open"
    );
    for capture in &mut captures {
        capture.seal();
    }
    assert_eq!(count(), before, "sealed captures closed their files");
    assert_eq!(read_all(&captures[7], Stream::Output), b"line\noops\n");
}

#[test]
fn the_budget_evicts_the_least_recently_read_finished_command_first() {
    let dir = tempfile::tempdir().unwrap();
    let spool = spool_in(&dir.path().join("state"), 1 << 20, 10_000);
    let mut old = spool.capture("old", b"x");
    old.append(Stream::Stdout, &[b'o'; 4000]);
    old.seal();
    let mut read = spool.capture("read", b"x");
    read.append(Stream::Stdout, &[b'r'; 4000]);
    read.seal();
    std::thread::sleep(Duration::from_millis(5));
    let mut touched = Vec::new();
    read.read(Stream::Stdout, 0, 10, &mut touched);
    let mut running = spool.capture("running", b"x");
    running.append(Stream::Stdout, &[b'n'; 4000]);
    assert!(old.store().evicted(), "the one read longest ago goes first");
    assert!(!read.store().evicted());
    assert_eq!(spool.evictions(), 1);
    assert!(spool.used() <= 10_000);
    // Running commands alone past the bound: what fits is stored (the bound less the
    // 8000 bytes and the one 16-byte record of the index), the rest counted.
    running.append(Stream::Stdout, &[b'n'; 4000]);
    assert!(read.store().evicted());
    running.append(Stream::Stdout, &[b'n'; 4000]);
    let extent = running.extent(Stream::Stdout);
    assert_eq!(extent.written, 12_000);
    assert_eq!(extent.kept.end, 10_000 - 16);
    assert_eq!(extent.dropped(), 2_016);
    assert_eq!(spool.used(), 10_000);
    let notice = String::from_utf8_lossy(extent.stop_notice.as_deref().unwrap()).into_owned();
    assert!(notice.contains("--max-spool"), "{notice}");
    spool.sync();
    assert!(
        !old.store().dir().exists(),
        "an evicted command's files are deleted"
    );
}

#[test]
fn output_refused_for_room_is_stored_again_once_room_frees() {
    let dir = tempfile::tempdir().unwrap();
    let spool = spool_in(&dir.path().join("state"), 1 << 20, 10_000);
    // The filler leaves room for exactly `late`'s first bytes on each stream and
    // their index records (16 bytes each).
    let mut filler = spool.capture("filler", b"x");
    filler.append(Stream::Stdout, &[b'f'; 10_000 - 16 - (6 + 16) - (4 + 16)]);
    let mut late = spool.capture("late", b"x");
    late.append(Stream::Stdout, b"first\n");
    late.append(Stream::Stderr, b"err\n");
    assert_eq!(spool.used(), 10_000);
    // Running commands alone fill the spool: refused, and the gap shows.
    late.append(Stream::Stdout, &[b'l'; 4000]);
    late.append(Stream::Stdout, &[b'l'; 3000]);
    let open = late.extent(Stream::Stdout).stop_notice.unwrap();
    let open = String::from_utf8_lossy(&open).into_owned();
    assert!(
        open.starts_with("[terminalfs: output from here on was not kept: the spool reached"),
        "{open}"
    );
    // The other stream has no gap: it is stored and shows no notice.
    assert_eq!(late.extent(Stream::Stderr).stop_notice, None);
    assert_eq!(late.extent(Stream::Stderr).dropped(), 0);
    // Once the filler has finished it may be evicted: the next bytes fit.
    filler.seal();
    late.append(Stream::Stdout, b"after\n");
    assert!(filler.store().evicted());
    let extent = late.extent(Stream::Stdout);
    assert_eq!(extent.stop_notice, None);
    assert_eq!(extent.written, 6 + 7000 + 6);
    assert_eq!((extent.kept_written(), extent.dropped()), (12, 7000));
    let gap = format!("{open}[terminalfs: 7000 bytes were not kept there]\n");
    let mut stdout = Vec::new();
    late.read(Stream::Stdout, 0, 1 << 20, &mut stdout);
    assert_eq!(
        String::from_utf8_lossy(&stdout),
        format!("first\n{gap}after\n")
    );
    // `output` has the same, in arrival order; its counts are the command's own.
    let mut output = Vec::new();
    late.read(Stream::Output, 0, 1 << 20, &mut output);
    assert_eq!(
        String::from_utf8_lossy(&output),
        format!("first\nerr\n{gap}after\n")
    );
    let extent = late.extent(Stream::Output);
    assert_eq!((extent.written, extent.dropped()), (6 + 7000 + 4 + 6, 7000));
    // The counts, notices included, come back after a restart.
    late.seal();
    spool.sync();
    let index = std::fs::read(late.store().dir().join(super::capture::INDEX_FILE)).unwrap();
    let header = super::capture::Header::decode(&index).expect("a sound header");
    assert_eq!(header.stdout.noted, gap.len() as u64);
    assert!(!header.stopped);
}

/// A gap's notice lines that `output` drops between its head and its tail: what it
/// keeps is the command's bytes only, and the bytes the head-and-tail notice stands
/// for include those the lines counted, the same after a restart.
#[test]
fn notice_lines_dropped_from_output_leave_its_counts_whole() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let before = {
        // A capacity of 400 (a head of 100); the filler's two full streams and late's
        // first bytes (each with its index record) fill the budget exactly.
        let spool = spool_in(&state, 400, 2 * (400 + 16) + (100 + 16) + (2 + 16));
        let mut filler = spool.capture("filler", b"x");
        filler.append(Stream::Stdout, &[b'f'; 400]);
        filler.append(Stream::Stderr, &[b'g'; 400]);
        let mut late = spool.capture("late", b"x");
        late.append(Stream::Stdout, &pattern(1, 100));
        late.append(Stream::Stderr, b"e\n");
        late.append(Stream::Stderr, &[b'r'; 500]);
        assert_eq!(late.extent(Stream::Stderr).dropped(), 500);
        filler.seal();
        late.append(Stream::Stderr, b"after\n");
        assert!(filler.store().evicted());
        let stderr = late.extent(Stream::Stderr);
        let noted = stderr.noted;
        assert!(noted > 0 && stderr.stop_notice.is_none(), "the gap closed");
        // stderr is short: its lines show, and they count the 500 bytes.
        assert_eq!((stderr.kept_written(), stderr.dropped()), (8, 500));
        assert_eq!((stderr.hidden, stderr.hidden_refused), (0, 0));
        // stdout runs past the bound: `output`'s tail moves past the lines.
        late.append(Stream::Stdout, &pattern(2, 2000));
        let output = late.extent(Stream::Output);
        assert_eq!(output.written, 100 + 2 + 500 + 6 + 2000);
        assert_eq!(output.kept.held(), 400);
        assert_eq!(output.kept.end, 100 + 2 + noted + 6 + 2000);
        assert_eq!(output.held_noted, 0, "the lines are not held");
        assert_eq!(output.kept_written(), 400, "what is held is the command's");
        assert_eq!(output.dropped(), output.written - 400);
        // The notice's count is every byte not shown: the stored ones dropped less the
        // lines, and the 500 never stored.
        assert_eq!(output.hidden, output.kept.dropped() - noted + 500);
        assert_eq!(output.hidden, output.dropped());
        assert_eq!(output.hidden_refused, 500);
        let stdout = late.extent(Stream::Stdout);
        assert_eq!((stdout.hidden, stdout.dropped()), (2100 - 400, 2100 - 400));
        late.seal();
        late.save(&serde_json::json!({"name": "late"}));
        spool.sync();
        [Stream::Stdout, Stream::Stderr, Stream::Output].map(|stream| late.extent(stream))
    };
    let spool = spool_in(&state, 400, 1 << 20);
    let restored = spool.restore();
    assert_eq!(restored.len(), 1);
    assert!(restored[0].meta.get(super::capture::NOTICES_KEY).is_none());
    let late = restored[0].capture.as_ref().unwrap();
    let after = [Stream::Stdout, Stream::Stderr, Stream::Output].map(|stream| late.extent(stream));
    assert_eq!(after, before);
}

/// A chunk only part of which fits what running commands leave of the budget: the
/// part that fits is stored, the rest is the gap, and the notice counts exactly it.
#[test]
fn the_part_of_a_chunk_that_fits_is_stored_and_the_gap_counts_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let spool = spool_in(&dir.path().join("state"), 1 << 20, 10_000);
    let mut filler = spool.capture("filler", b"x");
    filler.append(Stream::Stdout, &[b'f'; 5000]);
    let mut late = spool.capture("late", b"x");
    late.append(Stream::Stdout, b"first\n");
    // 10000 less the filler's 5016 and late's 22 (with its index record).
    let room = 10_000 - 5016 - 22;
    let chunk = pattern(1, 6000);
    late.append(Stream::Stdout, &chunk);
    assert_eq!(spool.used(), 10_000, "the room is taken, all of it");
    let extent = late.extent(Stream::Stdout);
    assert_eq!(extent.written, 6 + 6000);
    assert_eq!(extent.kept_written(), 6 + room);
    assert_eq!(extent.dropped(), 6000 - room);
    let open = extent.stop_notice.expect("the gap shows");
    let open = String::from_utf8_lossy(&open).into_owned();
    assert!(
        open.starts_with("\n[terminalfs: output from here on was not kept: the spool reached"),
        "the notice starts a line of its own: {open:?}"
    );
    let mut kept = b"first\n".to_vec();
    kept.extend_from_slice(&chunk[..room as usize]);
    assert_eq!(read_all(&late, Stream::Stdout), kept);
    assert_eq!(read_all(&late, Stream::Output), kept);
    // More while no room frees: counted in the same gap.
    late.append(Stream::Stdout, &chunk[..100]);
    assert_eq!(late.extent(Stream::Stdout).dropped(), 6100 - room);
    // Room frees: the gap closes with the exact count of what was not stored.
    filler.seal();
    late.append(Stream::Stdout, b"after\n");
    assert!(filler.store().evicted());
    let extent = late.extent(Stream::Stdout);
    assert_eq!(extent.stop_notice, None);
    assert_eq!(extent.dropped(), 6100 - room);
    kept.extend_from_slice(open.as_bytes());
    kept.extend_from_slice(
        format!("[terminalfs: {} bytes were not kept there]\n", 6100 - room).as_bytes(),
    );
    kept.extend_from_slice(b"after\n");
    assert_eq!(read_all(&late, Stream::Stdout), kept);
    assert_eq!(read_all(&late, Stream::Output), kept);
    let output = late.extent(Stream::Output);
    assert_eq!(
        (output.written, output.dropped()),
        (6 + 6100 + 6, 6100 - room)
    );
    late.seal();
    spool.sync();
    let index = std::fs::read(late.store().dir().join(super::capture::INDEX_FILE)).unwrap();
    let header = super::capture::Header::decode(&index).expect("a sound header");
    assert_eq!(header.stdout.end, kept.len() as u64);
    assert_eq!(header.stdout.refused, 6100 - room);
}

/// A part stored past the head of a bounded stream, then a gap, then the ring
/// wrapping over it: every held byte of the stream and of `output` is where the
/// layout says, and the counts add up.
#[test]
fn a_part_stored_in_the_ring_keeps_head_tail_and_index_true() {
    let dir = tempfile::tempdir().unwrap();
    // Streams of 1000 bytes: a head of 250, a ring of 750.
    let spool = spool_in(&dir.path().join("state"), 1000, 3000);
    let mut filler = spool.capture("filler", b"x");
    filler.append(Stream::Stdout, &[b'f'; 1000]);
    filler.append(Stream::Stderr, &[b'g'; 1000]);
    let mut late = spool.capture("late", b"x");
    let mut model = Model::default();
    let stored = |model: &mut Model, late: &mut Capture, stream, bytes: &[u8]| {
        late.append(stream, bytes);
        match stream {
            Stream::Stderr => model.stderr.extend_from_slice(bytes),
            _ => model.stdout.extend_from_slice(bytes),
        }
        model.output.extend_from_slice(bytes);
    };
    stored(&mut model, &mut late, Stream::Stdout, &pattern(2, 900));
    // 3000 less the filler's 2032 and late's 916: 52 bytes of the next chunk fit.
    let chunk = pattern(3, 500);
    late.append(Stream::Stdout, &chunk);
    model.stdout.extend_from_slice(&chunk[..52]);
    model.output.extend_from_slice(&chunk[..52]);
    assert_eq!(late.extent(Stream::Stdout).kept.end, 952);
    assert_eq!(late.extent(Stream::Stdout).dropped(), 448);
    // A first byte of stderr needs an index record too: refused, its own gap.
    late.append(Stream::Stderr, b"e\n");
    assert_eq!(late.extent(Stream::Stderr).dropped(), 2);
    let closed = |late: &Capture, stream, dropped: u64| {
        let mut notice = late.extent(stream).stop_notice.unwrap().to_vec();
        notice.extend_from_slice(
            format!("[terminalfs: {dropped} bytes were not kept there]\n").as_bytes(),
        );
        notice
    };
    let mut notice = closed(&late, Stream::Stdout, 448);
    let stderr_notice = closed(&late, Stream::Stderr, 2);
    filler.seal();
    let tail = pattern(4, 2000);
    late.append(Stream::Stdout, &tail);
    notice.extend_from_slice(&tail);
    model.stdout.extend_from_slice(&notice);
    model.output.extend_from_slice(&notice);
    assert!(filler.store().evicted());
    stored(&mut model, &mut late, Stream::Stderr, b"later\n");
    // The stderr gap closed with its notice before "later".
    let at = model.stderr.len() - 6;
    model.stderr.splice(at..at, stderr_notice.iter().copied());
    let at = model.output.len() - 6;
    model.output.splice(at..at, stderr_notice.iter().copied());
    for stream in [Stream::Stdout, Stream::Stderr, Stream::Output] {
        let want = model.of(stream);
        let kept = late.extent(stream).kept;
        assert_eq!(kept.end, want.len() as u64, "{stream:?} end");
        let got = read_all(&late, stream);
        for (at, (got, want)) in got.iter().zip(want).enumerate() {
            if kept.holds(at as u64) {
                assert_eq!(got, want, "{stream:?} byte {at}");
            } else {
                assert_eq!(*got, 0, "{stream:?} dropped byte {at}");
            }
        }
    }
    let stdout = late.extent(Stream::Stdout);
    assert_eq!(stdout.written, 900 + 500 + 2000);
    assert_eq!(stdout.kept.head_end, 250, "the head stays");
    assert_eq!(stdout.kept.held(), 1000, "a full stream");
    assert_eq!(stdout.noted, notice.len() as u64 - 2000);
    late.seal();
}

/// A stream's time is the wall clock's when its bytes came, not one derived from a
/// monotonic clock that stops while the machine sleeps: an hour asleep between the
/// capture's start and a write shows as an hour.
#[test]
fn a_stream_has_the_wall_time_its_bytes_came() {
    let dir = tempfile::tempdir().unwrap();
    let spool = spool_in(&dir.path().join("state"), 1 << 20, u64::MAX);
    let mut capture = spool.capture("slept", b"x");
    assert_eq!(capture.grew_at(Stream::Stdout), None);
    let woke = SystemTime::now() + Duration::from_secs(3600);
    capture.append_at(Stream::Stdout, b"after the sleep\n", woke);
    assert_eq!(capture.grew_at(Stream::Stdout), Some(woke));
    assert_eq!(capture.grew_at(Stream::Stderr), None);
    assert_eq!(capture.grew_at(Stream::Output), Some(woke));
    let later = woke + Duration::from_millis(1500);
    capture.append_at(Stream::Stderr, b"err\n", later);
    assert_eq!(capture.grew_at(Stream::Stdout), Some(woke));
    assert_eq!(capture.grew_at(Stream::Stderr), Some(later));
    assert_eq!(capture.grew_at(Stream::Output), Some(later));
    // Bytes that are not stored still made the stream grow.
    capture.seal();
    let last = later + Duration::from_secs(1);
    capture.append_at(Stream::Stdout, b"late", last);
    assert_eq!(capture.grew_at(Stream::Stdout), Some(last));
    // A restored capture takes the times its record kept.
    let mut restored = spool.capture("restored", b"x");
    restored.restore_grew(Some(woke), None);
    assert_eq!(restored.grew_at(Stream::Output), Some(woke));
    assert_eq!(restored.grew_at(Stream::Stderr), None);
}

/// How many reservations have taken the registry's lock so far.
fn tries(spool: &Spool) -> u64 {
    spool.shared.registry.lock().tries
}

#[test]
fn a_gap_tries_the_budget_again_only_once_room_may_have_been_freed() {
    let dir = tempfile::tempdir().unwrap();
    let spool = spool_in(&dir.path().join("state"), 1 << 20, 10_000);
    // No room is left once `loud` has written its first line.
    let mut filler = spool.capture("filler", b"x");
    filler.append(Stream::Stdout, &[b'f'; 10_000 - 16 - (6 + 16)]);
    let mut loud = spool.capture("loud", b"x");
    loud.append(Stream::Stdout, b"first\n");
    loud.append(Stream::Stdout, &[b'l'; 4000]);
    assert!(
        loud.extent(Stream::Stdout).stop_notice.is_some(),
        "a gap opened"
    );
    // A loud command goes on writing while nothing frees room: no chunk looks at the
    // other stores again.
    let before = tries(&spool);
    for _ in 0..10_000 {
        loud.append(Stream::Stdout, &[b'l'; 4000]);
    }
    assert_eq!(
        tries(&spool),
        before,
        "no room was freed, so nothing was tried"
    );
    // Another command that starts and writes nothing frees no room either.
    let quiet_one = spool.capture("quiet", b"x");
    loud.append(Stream::Stdout, &[b'l'; 4000]);
    assert_eq!(tries(&spool), before);
    drop(quiet_one);
    // Its store let go: room may have been freed, so the next chunk tries once more
    // (and is refused: the filler still runs).
    loud.append(Stream::Stdout, &[b'l'; 4000]);
    loud.append(Stream::Stdout, &[b'l'; 4000]);
    assert_eq!(tries(&spool), before + 1);
    // The filler finishes and may be evicted: the next chunk, as large as those
    // refused, is stored after the count of what was not.
    filler.seal();
    loud.append(Stream::Stdout, &[b'a'; 4000]);
    assert!(filler.store().evicted());
    let extent = loud.extent(Stream::Stdout);
    assert_eq!(extent.stop_notice, None);
    assert_eq!(extent.dropped(), 4000 * 10_004);
    let mut stdout = Vec::new();
    loud.read(Stream::Stdout, 0, 1 << 20, &mut stdout);
    let stdout = String::from_utf8_lossy(&stdout);
    assert!(
        stdout.ends_with(&format!(
            "[terminalfs: {} bytes were not kept there]\n{}",
            4000 * 10_004,
            "a".repeat(4000)
        )),
        "{stdout}"
    );
    loud.seal();
}

#[test]
fn a_gap_still_open_when_output_ends_gets_its_count() {
    let dir = tempfile::tempdir().unwrap();
    let spool = spool_in(&dir.path().join("state"), 1 << 20, 10_000);
    let mut filler = spool.capture("filler", b"x");
    filler.append(Stream::Stdout, &[b'f'; 10_000 - 16 - (10 + 16)]);
    let mut late = spool.capture("late", b"x");
    late.append(Stream::Stdout, b"no newline");
    late.append(Stream::Stdout, &[b'l'; 3000]);
    let open = late.extent(Stream::Stdout).stop_notice.unwrap();
    assert!(open.starts_with(b"\n[terminalfs: output from here on"));
    late.seal();
    let extent = late.extent(Stream::Stdout);
    let sealed = extent.stop_notice.clone().unwrap();
    assert!(sealed.starts_with(&open), "the shown line stays");
    assert!(
        sealed.ends_with(b"]\n[terminalfs: 3000 bytes were not kept there]\n"),
        "{}",
        String::from_utf8_lossy(&sealed)
    );
    assert_eq!((extent.written, extent.dropped()), (3010, 3000));
    filler.seal();
}

#[test]
fn a_full_disk_stops_storing_without_failing() {
    let dir = tempfile::tempdir().unwrap();
    let spool = spool_in(&dir.path().join("state"), 1 << 20, u64::MAX);
    let mut capture = spool.capture("full", b"x");
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(capture.store().dir())
        .unwrap();
    symlink("/dev/full", capture.store().dir().join("stdout")).unwrap();
    capture.append(Stream::Stdout, b"lost\n");
    capture.append(Stream::Stderr, b"also lost\n");
    let extent = capture.extent(Stream::Stdout);
    assert_eq!(
        (extent.written, extent.kept.end, extent.dropped()),
        (5, 0, 5)
    );
    let notice = String::from_utf8_lossy(extent.stop_notice.as_deref().unwrap()).into_owned();
    assert!(notice.contains("full"), "{notice}");
    assert_eq!(capture.extent(Stream::Stderr).dropped(), 10);
}

#[test]
fn a_restart_brings_back_output_and_records() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = Model::default();
    {
        let spool = spool_in(&dir.path().join("state"), 64, u64::MAX);
        let mut capture = spool.capture("build", b"make all");
        for round in 0..40 {
            model.append(&mut capture, Stream::Stdout, &pattern(round, 9));
            model.append(&mut capture, Stream::Stderr, &pattern(round, 2));
        }
        capture.seal();
        spool.save(
            capture.store(),
            &serde_json::json!({"name": "build", "status": "done"}),
        );
        let refused = spool.keep_record(
            "nope",
            b"sudo x",
            serde_json::json!({"name": "nope", "denied": "no"}),
        );
        // Texts the record cannot carry (not UTF-8, or long) keep a file of their own.
        let odd = spool.keep_record(
            "odd",
            b"echo \xff",
            serde_json::json!({"name": "odd", "denied": "no"}),
        );
        let long = spool.keep_record(
            "long",
            &[b'x'; IN_RECORD_MAX + 1],
            serde_json::json!({"name": "long", "denied": "no"}),
        );
        spool.sync();
        assert_eq!(names_in(refused.dir()), ["meta.json"]);
        assert_eq!(record_in(refused.dir())["command"], "sudo x");
        for store in [&odd, &long] {
            assert_eq!(names_in(store.dir()), ["command", "meta.json"]);
            assert!(record_in(store.dir()).get("command").is_none());
        }
        drop((refused, odd, long));
        drop(capture);
    }
    let spool = spool_in(&dir.path().join("state"), 64, u64::MAX);
    let mut restored = spool.restore();
    restored.sort_by_key(|r| r.meta["name"].as_str().unwrap().to_string());
    assert_eq!(restored.len(), 4);
    assert_eq!(restored[0].command, b"make all");
    assert_eq!(restored[0].meta["status"], "done");
    assert!(restored[0].meta.get("command").is_none(), "the text apart");
    check(restored[0].capture.as_ref().unwrap(), &model, 64);
    assert_eq!(restored[1].command, [b'x'; IN_RECORD_MAX + 1]);
    assert!(restored[2].capture.is_none());
    assert_eq!(restored[2].meta["denied"], "no");
    assert_eq!(restored[2].command, b"sudo x");
    assert_eq!(restored[3].command, b"echo \xff");
    assert!(spool.used() > 0);
}

#[test]
fn damaged_commands_are_skipped_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let (truncated, bad_json) = {
        let spool = spool_in(&dir.path().join("state"), 1 << 20, u64::MAX);
        let mut a = spool.capture("a", b"x");
        a.append(Stream::Stdout, &[b'a'; 1000]);
        a.seal();
        spool.save(a.store(), &serde_json::json!({"name": "a"}));
        let b = spool.keep_record("b", b"x", serde_json::json!({"name": "b"}));
        spool.sync();
        (a.store().dir().to_path_buf(), b.dir().to_path_buf())
    };
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(truncated.join("stdout"))
        .unwrap();
    file.set_len(10).unwrap();
    std::fs::write(bad_json.join("meta.json"), "{ not json").unwrap();
    std::fs::create_dir(dir.path().join("state/stray")).unwrap();
    let spool = spool_in(&dir.path().join("state"), 1 << 20, u64::MAX);
    assert!(spool.restore().is_empty());
    assert!(truncated.exists(), "a damaged command is left in place");
}

#[test]
fn output_that_never_ended_comes_back_after_a_stop_or_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let spool = spool_in(&state, 1 << 20, u64::MAX);
    // A command stopped or lost while it ran: its capture is never sealed, and its
    // first bytes came well within a checkpoint interval.
    let mut capture = spool.capture("later", b"echo x; exec sleep 300");
    capture.append(Stream::Stdout, b"x\n");
    let running = capture.store().dir().to_path_buf();
    // A crash now finds a header (its counts may lag), never one the index lacks.
    assert!(
        matches!(read_header(&running), Ok(Some(_))),
        "{:?}",
        read_header(&running)
    );
    capture.append(Stream::Stderr, b"y\n");
    spool.save(
        capture.store(),
        &serde_json::json!({"name": "later", "exit": null}),
    );
    // A stop: the driver syncs the spool and exits; the header is the newest.
    spool.sync();
    let header = read_header(&running).unwrap().expect("a header");
    assert_eq!((header.stdout.end, header.stderr.end), (2, 2));
    let again = spool_in(&state, 1 << 20, u64::MAX);
    let restored = again.restore();
    assert_eq!(restored.len(), 1);
    let back = restored[0].capture.as_ref().expect("its output");
    assert_eq!(read_all(back, Stream::Output), b"x\ny\n");
    drop(capture);
}

#[test]
fn removing_a_command_deletes_its_files_once_unused() {
    let dir = tempfile::tempdir().unwrap();
    let spool = spool_in(&dir.path().join("state"), 1 << 20, u64::MAX);
    let mut capture = spool.capture("gone", b"x");
    capture.append(Stream::Stdout, b"bytes\n");
    capture.seal();
    let path = capture.store().dir().to_path_buf();
    capture.store().remove();
    spool.sync();
    assert!(path.exists(), "a reader may still hold it");
    drop(capture);
    spool.sync();
    assert!(!path.exists());
    assert_eq!(spool.used(), 0);
}

#[test]
fn bad_state_directories_are_refused_with_their_name() {
    let dir = tempfile::tempdir().unwrap();
    let loose = dir.path().join("loose");
    std::fs::create_dir(&loose).unwrap();
    std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o755)).unwrap();
    let why = prepare_dir(&loose).unwrap_err();
    assert!(matches!(why, SpoolError::Refused(_)), "{why:?}");
    let why = why.to_string();
    assert!(
        why.contains(&loose.display().to_string()) && why.contains("755"),
        "{why}"
    );

    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    let inside = file.join("state");
    let why = prepare_dir(&inside).unwrap_err();
    assert_eq!(why.errno(), Some(libc::ENOTDIR), "{why:?}");
    let why = why.to_string();
    assert!(why.contains(&inside.display().to_string()), "{why}");

    let fresh = dir.path().join("a/b/state");
    let _lock = prepare_dir(&fresh).unwrap();
    let mode = std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
}

#[test]
fn a_state_directory_is_locked_while_its_lock_is_held() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let lock = prepare_dir(&state).unwrap();
    let why = prepare_dir(&state).unwrap_err().to_string();
    assert!(
        why.contains(&format!(
            "the state directory {} is in use by another terminalfs driver (pid {})",
            state.display(),
            std::process::id()
        )),
        "{why}"
    );
    drop(lock);
    let again = prepare_dir(&state).expect("free again once let go");
    assert_eq!(
        std::fs::read_to_string(state.join("lock")).unwrap(),
        format!("{}\n", std::process::id())
    );
    drop(again);
}

#[test]
fn output_survives_an_index_that_wraps() {
    let dir = tempfile::tempdir().unwrap();
    for capacity in [100u64, 4096, 1 << 16] {
        let spool = spool_in(&dir.path().join(format!("s{capacity}")), capacity, u64::MAX);
        let mut capture = spool.capture("chatty", b"x");
        let mut model = Model::default();
        for round in 0..3000u32 {
            let stream = if round % 2 == 0 {
                Stream::Stdout
            } else {
                Stream::Stderr
            };
            model.append(
                &mut capture,
                stream,
                &pattern(round, 1 + (round % 5) as usize),
            );
        }
        check(&capture, &model, capacity);
        let kept = capture.extent(Stream::Output).kept;
        assert!(kept.end - kept.tail_start > 0, "the newest output is held");
        capture.seal();
        check(&capture, &model, capacity);
    }
}

#[test]
fn a_store_let_go_while_the_budget_looks_at_it_deadlocks_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // A budget of one byte: past the first, every reservation looks at every store
    // for a finished one to evict.
    let spool = spool_in(&dir.path().join("state"), 1 << 20, 1);
    let stop = Arc::new(AtomicBool::new(false));
    let rounds = Arc::new(AtomicU64::new(0));
    let looker = {
        let (spool, stop, rounds) = (spool.clone(), stop.clone(), rounds.clone());
        std::thread::spawn(move || {
            let own = spool.new_store(spool.fresh_dir("looker"), 0, false, now_ms(), None);
            while !stop.load(Ordering::SeqCst) {
                let _ = spool.reserve(&own, 1, 1);
                rounds.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    // Meanwhile stores come and go; the last reference to one may be the budget's.
    let churner = {
        let (spool, stop) = (spool.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                let store = spool.new_store(spool.fresh_dir("brief"), 0, false, now_ms(), None);
                // Held a moment, so that the budget may be looking at it when it goes.
                for _ in 0..1000 {
                    std::hint::black_box(&store);
                }
                drop(store);
            }
        })
    };
    let mut seen = 0;
    let mut stuck = false;
    for _ in 0..60 {
        std::thread::sleep(Duration::from_millis(50));
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while rounds.load(Ordering::SeqCst) == seen && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let now = rounds.load(Ordering::SeqCst);
        if now == seen {
            stuck = true;
            break;
        }
        seen = now;
    }
    stop.store(true, Ordering::SeqCst);
    if stuck {
        // The stuck thread holds the spool's lock for good: leave it all to the
        // process's end rather than wait for it.
        std::mem::forget((looker, churner, spool, dir));
        panic!("the budget stopped after {seen} rounds: a store's last drop waited for a lock its own thread held");
    }
    looker.join().unwrap();
    churner.join().unwrap();
}

/// Lines the spools of these tests logged (every test's: filter by directory).
static LOGGED: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn logged(line: &str) {
    LOGGED.lock().push(line.to_string());
}

/// A spool whose new stores' first files wait `delay`, logging into [`LOGGED`].
fn deferring_spool_in(dir: &Path, delay: Duration) -> Arc<Spool> {
    let _unlocked = prepare_dir(dir).expect("a fresh temporary state directory is accepted");
    let config = SpoolConfig {
        dir: dir.to_path_buf(),
        max_output: 1 << 20,
        max_spool: u64::MAX,
    };
    Spool::start(config, logged, delay).expect("the worker starts")
}

/// Longer than any test runs: first files are written only when something needs them.
const NEVER_DUE: Duration = Duration::from_secs(3600);

/// The names in `dir`, sorted; none when it does not exist.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn record_in(dir: &Path) -> Value {
    let text = std::fs::read(dir.join(META_FILE)).expect("a record on disk");
    serde_json::from_slice(&text).expect("the record is JSON")
}

#[test]
fn a_short_command_writes_its_command_and_newest_record_once() {
    let dir = tempfile::tempdir().unwrap();
    let spool = deferring_spool_in(&dir.path().join("state"), NEVER_DUE);
    let capture = spool.capture("short", b"true");
    let store_dir = capture.store().dir().to_path_buf();
    capture.save(&serde_json::json!({"name": "short", "status": "running"}));
    // The worker has seen the start record, and has written nothing for it.
    spool.settled();
    assert!(!store_dir.exists(), "{:?}", names_in(&store_dir));
    capture.save(&serde_json::json!({"name": "short", "status": "done"}));
    spool.settled();
    assert!(!store_dir.exists(), "{:?}", names_in(&store_dir));

    // Due (here: a sync): one directory, one command, one record, the newest.
    spool.sync();
    assert_eq!(names_in(&store_dir), ["meta.json"]);
    assert_eq!(record_in(&store_dir)["command"], "true");
    assert_eq!(record_in(&store_dir)["status"], "done");

    // Later records replace it atomically, leaving no temporary file.
    let first = std::fs::metadata(store_dir.join(META_FILE)).unwrap().ino();
    capture.save(&serde_json::json!({"name": "short", "status": "read again"}));
    spool.settled();
    assert_eq!(names_in(&store_dir), ["meta.json"]);
    assert_eq!(record_in(&store_dir)["status"], "read again");
    assert_eq!(record_in(&store_dir)["command"], "true");
    let second = std::fs::metadata(store_dir.join(META_FILE)).unwrap().ino();
    assert_ne!(first, second, "renamed over, not rewritten in place");
}

#[test]
fn a_command_older_than_the_delay_has_its_record_on_disk_while_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let spool = spool_in(&dir.path().join("state"), 1 << 20, u64::MAX);
    let capture = spool.capture("slow", b"sleep 300");
    capture.save(&serde_json::json!({"name": "slow", "status": "running"}));
    let store_dir = capture.store().dir().to_path_buf();
    // No output, no sync: only its age brings it to disk.
    let deadline = Instant::now() + FIRST_WRITE_DELAY * 50;
    while !store_dir.join(META_FILE).exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(names_in(&store_dir), ["meta.json"]);
    assert_eq!(record_in(&store_dir)["status"], "running");
    assert_eq!(record_in(&store_dir)["command"], "sleep 300");
}

#[test]
fn output_a_sync_a_stamp_and_a_store_let_go_write_first_files_early() {
    let dir = tempfile::tempdir().unwrap();
    let spool = deferring_spool_in(&dir.path().join("state"), NEVER_DUE);
    let start = serde_json::json!({"status": "running"});

    // The first byte of output: the record follows the directory.
    let mut loud = spool.capture("loud", b"echo hi");
    loud.save(&start);
    loud.append(Stream::Stdout, b"hi\n");
    spool.settled();
    let loud_dir = loud.store().dir().to_path_buf();
    assert_eq!(
        names_in(&loud_dir),
        ["meta.json", "output.idx", "stderr", "stdout"]
    );
    assert_eq!(record_in(&loud_dir), {
        let mut want = start.clone();
        want["version"] = META_VERSION.into();
        want["command"] = "echo hi".into();
        want
    });

    // A stamp of its last read needs the record: written first, then stamped.
    let quiet = spool.capture("quiet", b"true");
    quiet.save(&start);
    // Read an hour ago (as if restored), so the stamp differs from the write.
    let hour_ago = now_ms() - 3_600_000;
    quiet.store().last_read.store(hour_ago, Ordering::Relaxed);
    spool.save_last_read(quiet.store());
    spool.settled();
    let quiet_dir = quiet.store().dir().to_path_buf();
    assert_eq!(names_in(&quiet_dir), ["meta.json"]);
    let stamped = std::fs::metadata(quiet_dir.join(META_FILE))
        .unwrap()
        .modified()
        .unwrap();
    let read_at = quiet.store().last_read();
    let apart = stamped
        .duration_since(read_at)
        .unwrap_or_else(|e| e.duration());
    assert!(apart < Duration::from_millis(1), "{stamped:?} {read_at:?}");

    // A store let go unremoved (the driver stopping) keeps its files.
    let refused = spool.keep_record("nope", b"sudo x", serde_json::json!({"denied": "no"}));
    let refused_dir = refused.dir().to_path_buf();
    drop(refused);
    spool.settled();
    assert_eq!(names_in(&refused_dir), ["meta.json"]);
    assert_eq!(record_in(&refused_dir)["denied"], "no");
    assert_eq!(record_in(&refused_dir)["command"], "sudo x");

    // A sync writes every waiting store.
    let waiting = spool.capture("waiting", b"sleep 1");
    spool.settled();
    assert!(!waiting.store().dir().exists());
    spool.sync();
    assert_eq!(names_in(waiting.store().dir()), ["command"]);
}

#[test]
fn a_command_removed_before_its_files_were_written_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let spool = deferring_spool_in(&state, NEVER_DUE);
    let capture = spool.capture("brief", b"true");
    capture.save(&serde_json::json!({"status": "done"}));
    let refused = spool.keep_record("nope", b"sudo x", serde_json::json!({"denied": "no"}));
    let later = spool.capture("later", b"true");
    for store in [capture.store(), &refused, later.store()] {
        store.remove();
    }
    // Let go before it was due, or still held when a sync or a stamp comes.
    drop((capture, refused));
    spool.save_last_read(later.store());
    spool.sync();
    drop(later);
    spool.sync();
    // The heartbeat may have been touched meanwhile; no command's directory is made.
    let dirs: Vec<String> = names_in(&state)
        .into_iter()
        .filter(|name| state.join(name).is_dir())
        .collect();
    assert!(dirs.is_empty(), "{dirs:?}");
    let shown = state.display().to_string();
    let lines: Vec<String> = LOGGED
        .lock()
        .iter()
        .filter(|line| line.contains(&shown))
        .cloned()
        .collect();
    assert!(lines.is_empty(), "{lines:?}");
}

#[test]
fn marks_outlive_later_saves_and_come_back_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let (job_dir, refused_dir) = {
        let spool = deferring_spool_in(&state, NEVER_DUE);
        let mut capture = spool.capture("pinned", b"echo p");
        capture.save(&serde_json::json!({"name": "pinned", "status": "running"}));
        capture.append(Stream::Stdout, b"p\n");
        // Marked while it runs; the record saved when it ends keeps the mark.
        capture.store().mark("pinned", true.into());
        capture.seal();
        capture.save(&serde_json::json!({"name": "pinned", "status": "done"}));
        let refused = spool.keep_record(
            "nope",
            b"sudo x",
            serde_json::json!({"name": "nope", "denied": "no"}),
        );
        // Marked before its first files were written: they carry the mark.
        refused.mark("removed", serde_json::json!(["reason"]));
        spool.sync();
        (
            capture.store().dir().to_path_buf(),
            refused.dir().to_path_buf(),
        )
    };
    let on_disk = record_in(&job_dir);
    assert_eq!(on_disk["status"], "done");
    assert_eq!(on_disk["marks"], serde_json::json!({"pinned": true}));
    assert_eq!(
        record_in(&refused_dir)["marks"],
        serde_json::json!({"removed": ["reason"]})
    );

    let spool = spool_in(&state, 1 << 20, u64::MAX);
    let mut restored = spool.restore();
    restored.sort_by_key(|r| r.meta["name"].as_str().unwrap().to_string());
    assert_eq!(restored.len(), 2);
    assert_eq!(restored[1].meta["status"], "done");
    assert_eq!(
        Value::Object(restored[1].marks.clone()),
        serde_json::json!({"pinned": true})
    );
    assert!(restored[1].meta.get("marks").is_none(), "marks apart");
    // A mark added after the restart is written with the record read back.
    restored[1]
        .store
        .mark("removed", serde_json::json!(["stderr"]));
    spool.sync();
    let again = record_in(&job_dir);
    assert_eq!(again["status"], "done");
    assert!(again["command"].is_string(), "{again}");
    assert_eq!(again["name"], "pinned");
    assert_eq!(
        again["marks"],
        serde_json::json!({"pinned": true, "removed": ["stderr"]})
    );
    assert_eq!(
        Value::Object(restored[0].marks.clone()),
        serde_json::json!({"removed": ["reason"]})
    );
}

#[test]
fn a_record_without_marks_comes_back_with_none_and_bad_marks_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    // As a driver that kept no marks wrote them.
    let old = state.join("old.1");
    let bad = state.join("bad.2");
    drop(prepare_dir(&state).unwrap());
    for (dir, record) in [
        (&old, r#"{"version": 1, "name": "old", "denied": "no"}"#),
        (
            &bad,
            r#"{"version": 1, "name": "bad", "denied": "no", "marks": 3}"#,
        ),
    ] {
        std::fs::create_dir(dir).unwrap();
        std::fs::write(dir.join(COMMAND_FILE), "sudo x").unwrap();
        std::fs::write(dir.join(META_FILE), record).unwrap();
    }
    let spool = spool_in(&state, 1 << 20, u64::MAX);
    let restored = spool.restore();
    assert_eq!(restored.len(), 1);
    assert_eq!(restored[0].meta["name"], "old");
    assert!(restored[0].marks.is_empty());
    assert!(
        bad.exists(),
        "a record that cannot be read is left in place"
    );
}

/// The lines logged about `path`.
fn logged_about(path: &Path, what: &str) -> usize {
    let shown = path.display().to_string();
    LOGGED
        .lock()
        .iter()
        .filter(|line| line.contains(&shown) && line.contains(what))
        .count()
}

/// Waits (with a deadline) until `path` is a file.
fn becomes_a_file(path: &Path) -> bool {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if path.is_file() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn a_record_that_cannot_be_written_is_written_once_there_may_be_room() {
    let dir = tempfile::tempdir().unwrap();
    let spool = deferring_spool_in(&dir.path().join("state"), NEVER_DUE);
    // A directory where the record goes: writing it fails as on a full disk.
    let block = |capture: &Capture| {
        let blocker = capture.store().dir().join(META_FILE);
        std::fs::create_dir_all(&blocker).unwrap();
        blocker
    };
    let mut stuck = spool.capture("stuck", b"echo a");
    let blocker = block(&stuck);
    stuck.append(Stream::Stdout, b"a\n");
    for round in 0..3 {
        spool.save(
            stuck.store(),
            &serde_json::json!({ "name": "stuck", "round": round }),
        );
        spool.sync();
    }
    assert!(blocker.is_dir());
    assert!(stuck.store().dir().join(COMMAND_FILE).is_file());
    assert_eq!(
        logged_about(&blocker, "cannot write"),
        1,
        "one line for the failure, none per retry: {:?}",
        LOGGED.lock()
    );
    assert_eq!(
        names_in(stuck.store().dir())
            .iter()
            .filter(|n| n.starts_with('.'))
            .count(),
        0
    );

    // Room is freed by a removal: the newest record is written then.
    std::fs::remove_dir(&blocker).unwrap();
    let mut other = spool.capture("other", b"true");
    other.append(Stream::Stdout, b"x");
    spool.sync();
    other.store().remove();
    drop(other);
    spool.sync();
    let record: Value = serde_json::from_slice(&std::fs::read(&blocker).unwrap()).unwrap();
    assert_eq!(record["round"], 2);
    assert_eq!(record["command"], "echo a");
    assert_eq!(
        logged_about(stuck.store().dir(), "that could not be written before"),
        1
    );

    // With no removal, it is tried again after a while.
    let mut later = spool.capture("later", b"echo b");
    let blocker = block(&later);
    later.append(Stream::Stdout, b"b\n");
    spool.save(later.store(), &serde_json::json!({ "name": "later" }));
    spool.sync();
    assert_eq!(logged_about(&blocker, "cannot write"), 1);
    std::fs::remove_dir(&blocker).unwrap();
    assert!(becomes_a_file(&blocker), "never tried again");
}

#[test]
fn a_directory_without_its_record_comes_back_as_lost() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let lost = {
        let spool = spool_in(&state, 1 << 20, u64::MAX);
        let mut capture = spool.capture("lost", b"echo hi");
        capture.append(Stream::Stdout, b"hi\n");
        capture.seal();
        spool.save(capture.store(), &serde_json::json!({ "name": "lost" }));
        spool.sync();
        capture.store().dir().to_path_buf()
    };
    // As a record the disk refused leaves it: the text in a file of its own.
    std::fs::remove_file(lost.join(META_FILE)).unwrap();
    std::fs::write(lost.join(COMMAND_FILE), "echo hi").unwrap();
    let empty = state.join("empty.18ed41a184f89c730");
    std::fs::create_dir(&empty).unwrap();
    let spool = spool_in(&state, 1 << 20, u64::MAX);
    let mut restored = spool.restore();
    restored.sort_by_key(|r| r.meta["name"].as_str().unwrap().to_string());
    assert_eq!(restored.len(), 2);
    // Nothing but its name is known of one.
    let nothing = restored.remove(0);
    assert_eq!(nothing.meta["name"], "empty");
    assert!(nothing.command.is_empty());
    assert_eq!(
        read_all(nothing.capture.as_ref().unwrap(), Stream::Stdout),
        b""
    );
    assert_eq!(restored[0].meta["name"], "lost");
    assert_eq!(restored[0].meta["reason"], RECORD_LOST);
    assert_eq!(restored[0].command, b"echo hi");
    let capture = restored[0].capture.as_ref().unwrap();
    assert_eq!(read_all(capture, Stream::Stdout), b"hi\n");
    spool.sync();
    drop(restored);
    drop(spool);

    // Its record is written: the next start finds it as it was shown.
    let spool = spool_in(&state, 1 << 20, u64::MAX);
    let mut restored = spool.restore();
    restored.sort_by_key(|r| r.meta["name"].as_str().unwrap().to_string());
    assert_eq!(restored.len(), 2);
    restored.remove(0);
    assert_eq!(restored[0].meta["reason"], RECORD_LOST);
    assert_eq!(restored[0].meta[RECORD_LOST_KEY], true);
    assert_eq!(
        read_all(restored[0].capture.as_ref().unwrap(), Stream::Stdout),
        b"hi\n"
    );
}
