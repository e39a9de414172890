//! Output (SPEC 5): head and tail, notices, interleaving, follow, result.json, bytes.

use crate::common::{proc_stat, status_kib, wait_until, Mount, Tail};
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::MetadataExt;
use std::time::{Duration, Instant};

fn json(mount: &Mount, file: &str) -> serde_json::Value {
    serde_json::from_str(&mount.read(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

#[test]
fn commands_cost_the_driver_no_memory_per_byte_of_output() {
    // Output lives in the spool: sixty commands must not grow the address space.
    let mount = Mount::start();
    mount.run("warm", "echo warm");
    let before = status_kib(mount.pid(), "VmSize:");
    for i in 0..60 {
        std::fs::write(mount.p(&format!("ctl/l{i}")), format!("echo line {i}")).unwrap();
    }
    for i in 0..60 {
        assert_eq!(mount.wait(&format!("l{i}")), "completed\n");
    }
    let after = status_kib(mount.pid(), "VmSize:");
    let grown_mib = after.saturating_sub(before) / 1024;
    assert!(
        grown_mib < 256,
        "the driver's address space grew by {grown_mib} MiB for 60 one-line commands"
    );
}

fn numbered(lines: std::ops::RangeInclusive<u32>) -> String {
    lines.map(|i| format!("line {i:05}\n")).collect()
}

#[test]
fn overflow_keeps_the_head_and_the_tail_with_one_exact_notice() {
    let mount = Mount::with_args(&["--max-output", "4k"]);
    mount.run(
        "flood",
        "i=1; while [ $i -le 2000 ]; do printf 'line %05d\\n' $i; i=$((i+1)); done; echo err >&2",
    );
    let stream = numbered(1..=2000);
    // The first quarter and the newest three quarters of 4 KiB.
    let (head, tail) = (&stream[..1024], &stream[stream.len() - 3072..]);
    let dropped = stream.len() - 4096;
    let text = mount.read("cmd/flood/stdout");
    assert!(text.starts_with(head), "the head comes first, exact");
    assert!(text.ends_with(tail), "the tail comes last, exact");
    let notice = &text[head.len()..text.len() - tail.len()];
    assert_eq!(
        notice.lines().filter(|l| !l.is_empty()).count(),
        1,
        "{notice:?}"
    );
    assert!(
        notice.contains(&format!("{dropped} bytes were dropped")),
        "{notice}"
    );
    // The tools agree with that view.
    let out = mount.ok(
        "f=\"$M/cmd/flood/stdout\"; head -n 5 \"$f\"; tail -n 3 \"$f\"; tail -c 11 \"$f\"; \
         wc -c < \"$f\"; grep -c 'line 02000' \"$f\"; grep -c 'dropped' \"$f\"",
    );
    let expected = format!(
        "{}line 01998\nline 01999\nline 02000\nline 02000\n{}\n1\n1\n",
        numbered(1..=5),
        text.len()
    );
    assert_eq!(out, expected);
    assert_eq!(
        std::fs::metadata(mount.p("cmd/flood/stdout"))
            .unwrap()
            .len(),
        text.len() as u64
    );
    // stderr did not overflow: no notice.
    assert_eq!(mount.read("cmd/flood/stderr"), "err\n");
    // output follows the same rule: its head is stdout's first lines.
    let output = mount.read("cmd/flood/output");
    assert!(output.starts_with(head) && output.ends_with(&format!("{}err\n", &tail[4..])));
    // result.json and the index report kept and dropped bytes.
    let result = json(&mount, "cmd/flood/result.json");
    assert_eq!(result["stdout"]["bytes"], stream.len() as u64);
    assert_eq!(result["stdout"]["kept"], 4096);
    assert_eq!(result["stdout"]["dropped"], dropped as u64);
    assert_eq!(result["stderr"]["dropped"], 0);
    assert_eq!(result["output"]["dropped"], dropped as u64 + 4);
    assert!(mount
        .read("cmd/index.md")
        .contains(&format!("| {} | {dropped} |", 4096 + 4)));
}

#[test]
fn tail_f_opened_before_overflow_keeps_following_after_it() {
    let mount = Mount::with_args(&["--max-output", "1k"]);
    std::fs::write(
        mount.p("ctl/slow"),
        "i=1; while [ $i -le 300 ]; do printf 'line %05d\\n' $i; i=$((i+1)); sleep 0.01; done",
    )
    .unwrap();
    let tail = Tail::follow(&mount.p("cmd/slow/stdout"));
    tail.prints(
        (1..=300).map(|i| format!("line {i:05}")),
        Duration::from_secs(30),
    );
    drop(tail);
    assert_eq!(mount.wait("slow"), "completed\n");
    // By now a fresh read shows the first lines, the notice, and the last lines.
    let fresh = mount.read("cmd/slow/stdout");
    assert!(fresh.starts_with("line 00001\n"), "{fresh}");
    assert!(fresh.contains("bytes were dropped here"), "{fresh}");
    assert!(fresh.ends_with("line 00300\n"), "{fresh}");
}

#[test]
fn output_interleaves_in_write_order() {
    let mount = Mount::start();
    for i in 0..40 {
        mount.run(
            &format!("o{i}"),
            "echo a; echo b >&2; echo c; printf d >&2; printf e; echo f >&2",
        );
        assert_eq!(
            mount.read(&format!("cmd/o{i}/output")),
            "a\nb\nc\ndef\n",
            "run {i}"
        );
        assert_eq!(mount.read(&format!("cmd/o{i}/stdout")), "a\nc\ne");
        assert_eq!(mount.read(&format!("cmd/o{i}/stderr")), "b\ndf\n");
    }
    // Large writes interleave too, each kept whole.
    mount.run("big", "head -c 20000 /dev/zero | tr '\\0' o; echo; echo E >&2; head -c 9000 /dev/zero | tr '\\0' p");
    let output = mount.read("cmd/big/output");
    let expected = format!("{}\nE\n{}", "o".repeat(20000), "p".repeat(9000));
    assert_eq!(output, expected);
}

#[test]
fn follow_streams_live_and_ends_by_itself() {
    let mount = Mount::start();
    std::fs::write(
        mount.p("ctl/live"),
        "echo first; sleep 1.5; date +%s%N; sleep 3; echo last >&2",
    )
    .unwrap();
    let mut follow = std::fs::File::open(mount.p("cmd/live/follow")).unwrap();
    let started = Instant::now();
    let mut reader = BufReader::new(&mut follow);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    assert_eq!(line, "first\n");
    line.clear();
    reader.read_line(&mut line).unwrap();
    let received = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let printed: u128 = line.trim().parse().unwrap();
    let delay = Duration::from_nanos((received.saturating_sub(printed)) as u64);
    // Live, not at the end: well before the command's last three seconds are over.
    assert!(
        delay < Duration::from_millis(2500),
        "a line reached follow after {delay:?}"
    );
    let mut rest = String::new();
    reader.read_to_string(&mut rest).unwrap();
    assert_eq!(rest, "last\n");
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(mount.read("cmd/live/status"), "completed\n");
    // A new open streams from the beginning, then ends at once.
    let all = mount.read("cmd/live/follow");
    assert!(
        all.starts_with("first\n") && all.ends_with("last\n"),
        "{all}"
    );
}

#[test]
fn many_followers_do_not_slow_each_other() {
    let mount = Mount::start();
    std::fs::write(
        mount.p("ctl/chatty"),
        "i=1; while [ $i -le 20 ]; do echo \"tick $i\"; i=$((i+1)); sleep 0.1; done",
    )
    .unwrap();
    let expected: String = (1..=20).map(|i| format!("tick {i}\n")).collect();
    let followers: Vec<_> = (0..30)
        .map(|_| {
            let path = mount.p("cmd/chatty/follow");
            std::thread::spawn(move || {
                let started = Instant::now();
                let text = std::fs::read_to_string(path).unwrap();
                (text, started.elapsed())
            })
        })
        .collect();
    for follower in followers {
        let (text, took) = follower.join().unwrap();
        assert_eq!(text, expected);
        assert!(took < Duration::from_secs(10), "{took:?}");
    }
}

#[test]
fn result_json_is_valid_at_every_moment() {
    let mount = Mount::start();
    std::fs::write(
        mount.p("ctl/job"),
        "python3 -c 'x = bytearray(60 * 1024 * 1024); print(len(x))'; sleep 0.5; echo done",
    )
    .unwrap();
    let mut seen_running = false;
    assert!(wait_until(Duration::from_secs(30), || {
        let result = json(&mount, "cmd/job/result.json");
        for key in [
            "name",
            "command",
            "status",
            "exitcode",
            "signal",
            "pid",
            "started_at",
            "finished_at",
            "duration_ms",
            "user_ms",
            "sys_ms",
            "max_rss_kib",
            "stdout",
            "stderr",
            "output",
            "timed_out",
            "killed",
            "reason",
            "shell",
            "cwd",
            "containment",
        ] {
            assert!(result.get(key).is_some(), "{key} missing: {result}");
        }
        if result["status"] == "running" {
            seen_running = true;
            assert!(result["exitcode"].is_null());
            assert!(result["finished_at"].is_null());
        }
        result["status"] != "running"
    }));
    assert!(seen_running);
    let result = json(&mount, "cmd/job/result.json");
    assert_eq!(result["name"], "job");
    assert_eq!(result["status"], "completed");
    assert_eq!(result["exitcode"], 0);
    assert!(
        result["max_rss_kib"].as_u64().unwrap() >= 60 * 1024,
        "{result}"
    );
    assert!(result["user_ms"].is_u64() && result["sys_ms"].is_u64());
    for key in ["started_at", "finished_at"] {
        let stamp = result[key].as_str().unwrap();
        assert!(
            stamp.len() == 24 && stamp.ends_with('Z') && &stamp[10..11] == "T",
            "{stamp}"
        );
    }
    assert_eq!(result["stdout"]["bytes"], "62914560\ndone\n".len() as u64);
}

#[test]
fn growing_files_advertise_a_large_block_size() {
    let mount = Mount::start();
    mount.run("blk", "echo x");
    for file in ["stdout", "stderr", "output"] {
        let meta = std::fs::metadata(mount.p(&format!("cmd/blk/{file}"))).unwrap();
        assert_eq!(meta.blksize(), 1 << 20, "{file}");
    }
}

#[test]
fn carriage_returns_nul_and_invalid_utf8_are_served_byte_exact() {
    let mount = Mount::start();
    mount.run(
        "bytes",
        "printf 'progress 1\\rprogress 2\\rdone\\r'; printf '\\000\\377\\376x' >&2",
    );
    assert_eq!(
        std::fs::read(mount.p("cmd/bytes/stdout")).unwrap(),
        b"progress 1\rprogress 2\rdone\r"
    );
    assert_eq!(
        std::fs::read(mount.p("cmd/bytes/stderr")).unwrap(),
        b"\0\xff\xfex"
    );
    assert_eq!(
        std::fs::read(mount.p("cmd/bytes/output")).unwrap(),
        b"progress 1\rprogress 2\rdone\r\0\xff\xfex"
    );
    // Pages that mention the command keep their shape.
    let index = mount.read("cmd/index.md");
    let row = index.lines().find(|l| l.starts_with("| [bytes]")).unwrap();
    assert_eq!(row.matches(" | ").count(), 7, "{row}");
    let result = json(&mount, "cmd/bytes/result.json");
    assert_eq!(result["stderr"]["bytes"], 4);
}

/// `first`, then (once `go` exists) 1.9 MB of numbered lines, then `last`: with
/// `--max-output 1m`, a reader held still while the lines come finds most of them
/// dropped. Returns the command text and the stream it prints.
fn flood_after(go: &std::path::Path) -> (String, Vec<u8>) {
    let command = format!(
        "echo first; while [ ! -e '{}' ]; do sleep 0.02; done; seq 1 300000; echo last",
        go.display()
    );
    let mut stream = b"first\n".to_vec();
    for i in 1..=300000 {
        stream.extend_from_slice(format!("{i}\n").as_bytes());
    }
    stream.extend_from_slice(b"last\n");
    (command, stream)
}

/// Checks that `shown` is `stream` with holes where bytes were dropped, each one
/// announced by a notice line naming how many bytes it stands for: in place (then
/// newlines to the hole's full length, so offsets stay true) or, with `squeeze`,
/// instead of the hole. A notice begins on a line of its own, after a newline added
/// when the bytes before it did not end one. Returns how many holes there were.
fn assert_holes(shown: &[u8], stream: &[u8], squeeze: bool) -> usize {
    let mark = b"[terminalfs: ";
    let notice_at = |from: usize| {
        shown[from..]
            .windows(mark.len())
            .position(|w| w == mark)
            .map(|p| p + from)
    };
    assert!(!shown.contains(&0), "a NUL byte was read");
    let (mut at, mut from, mut holes) = (0usize, 0usize, 0);
    while let Some(notice) = notice_at(at) {
        let line_end = notice + shown[notice..].iter().position(|b| *b == b'\n').unwrap() + 1;
        let line = std::str::from_utf8(&shown[notice..line_end]).unwrap();
        let count: usize = line[mark.len()..]
            .split(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no count in {line:?}"));
        assert!(
            line.contains("bytes were dropped here after this file was opened"),
            "{line:?}"
        );
        // The hole begins at the notice, or at the newline put before it. When the
        // dropped bytes began with a newline, the one put before the notice reads like
        // the stream's own: that reading runs past the stream's end, and is not taken.
        let next = notice_at(line_end).unwrap_or(shown.len());
        let fits = |start: usize| {
            let kept = start - at;
            if stream.get(from..from + kept) != Some(&shown[at..start]) {
                return None;
            }
            let (resume, after) = if squeeze {
                (line_end, from + kept + count)
            } else {
                (start + count, start + count)
            };
            let filler = &shown[line_end.min(resume)..resume];
            let tail = next.min(shown.len()) - resume.min(next);
            (resume <= next
                && filler.iter().all(|b| *b == b'\n')
                && stream.get(after..after + tail) == shown.get(resume..resume + tail))
            .then_some((resume, after))
        };
        let lead = (shown[notice - 1] == b'\n').then(|| notice - 1);
        let (resume, after) = fits(notice)
            .or_else(|| lead.and_then(fits))
            .unwrap_or_else(|| panic!("the bytes around {line:?} are not the stream's"));
        holes += 1;
        at = resume;
        from = after;
    }
    assert_eq!(&shown[at..], &stream[from..], "the newest bytes, exact");
    holes
}

#[test]
fn tail_f_held_still_past_an_overflow_reads_a_notice_where_bytes_were_dropped() {
    let mount = Mount::with_args(&["--max-output", "1m"]);
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("go");
    let (command, stream) = flood_after(&go);
    std::fs::write(mount.p("ctl/gap"), command).unwrap();
    let tail = Tail::follow(&mount.p("cmd/gap/output"));
    let mut held = std::fs::File::open(mount.p("cmd/gap/output")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    assert_eq!(tail.next_line(deadline).as_deref(), Some("first"));
    let size_before = held.metadata().unwrap().len();
    tail.signal(libc::SIGSTOP);
    std::fs::write(&go, "").unwrap();
    assert_eq!(mount.wait("gap"), "completed\n");
    tail.signal(libc::SIGCONT);
    let mut lines = vec!["first".to_string()];
    while lines.last().map(String::as_str) != Some("last") {
        let line = tail.next_line(deadline);
        lines.push(line.unwrap_or_else(|| panic!("tail stopped after {} lines", lines.len())));
    }
    let shown = (lines.join("\n") + "\n").into_bytes();
    // Offsets stay true: the hole keeps its length, as the handle's size says.
    assert_eq!(shown.len(), stream.len());
    assert_eq!(assert_holes(&shown, &stream, false), 1);
    // Another handle held open since before the overflow reads the same, and its
    // size only grew.
    let size_after = held.metadata().unwrap().len();
    assert!(size_before <= 6 && size_after == stream.len() as u64);
    let mut read = Vec::new();
    held.read_to_end(&mut read).unwrap();
    assert_eq!(read, shown);
    // A fresh read is the head, one notice and the newest bytes; wc agrees with stat.
    let fresh = std::fs::read(mount.p("cmd/gap/output")).unwrap();
    assert!(!fresh.contains(&0));
    let out = mount.ok("f=\"$M/cmd/gap/output\"; wc -c < \"$f\"; stat -c %s \"$f\"");
    assert_eq!(out, format!("{0}\n{0}\n", fresh.len()));
}

/// Reads a child's stdout on a thread, so every wait has a deadline; the child is
/// killed and reaped when dropped.
struct Piped {
    child: std::process::Child,
    bytes: std::sync::mpsc::Receiver<Vec<u8>>,
    got: Vec<u8>,
}

impl Piped {
    fn spawn(command: &mut std::process::Command) -> Piped {
        let mut child = command
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let (sender, bytes) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut buffer = vec![0u8; 1 << 16];
            while let Ok(n @ 1..) = stdout.read(&mut buffer) {
                if sender.send(buffer[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        Piped {
            child,
            bytes,
            got: Vec::new(),
        }
    }

    /// Reads until `done` holds of what came, or its stdout ends; false at the deadline.
    fn until(&mut self, deadline: Instant, done: impl Fn(&[u8]) -> bool) -> bool {
        while !done(&self.got) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.bytes.recv_timeout(left) {
                Ok(chunk) => self.got.extend_from_slice(&chunk),
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return true,
                Err(_) => return false,
            }
        }
        true
    }

    fn signal(&self, signal: i32) {
        // SAFETY: a signal to our own child, which is not reaped before it is dropped.
        unsafe { libc::kill(self.child.id() as i32, signal) };
    }
}

impl Drop for Piped {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_slow_follow_reader_reads_a_notice_then_the_newest_bytes() {
    let mount = Mount::with_args(&["--max-output", "1m"]);
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("go");
    let (command, stream) = flood_after(&go);
    std::fs::write(mount.p("ctl/slow"), command).unwrap();
    let mut cat = Piped::spawn(std::process::Command::new("cat").arg(mount.p("cmd/slow/follow")));
    let deadline = Instant::now() + Duration::from_secs(60);
    assert!(
        cat.until(deadline, |got| got == b"first\n"),
        "{:?}",
        cat.got
    );
    cat.signal(libc::SIGSTOP);
    // A read cat has under way when the STOP comes is answered before cat stops (with
    // EINTR, nothing having come for it): once cat shows stopped, no read of it can
    // take bytes of the flood until it is continued.
    let pid = cat.child.id() as i32;
    assert!(
        wait_until(Duration::from_secs(30), || {
            proc_stat(pid).is_some_and(|stat| stat.state == 'T')
        }),
        "cat never stopped"
    );
    std::fs::write(&go, "").unwrap();
    assert_eq!(mount.wait("slow"), "completed\n");
    cat.signal(libc::SIGCONT);
    // follow ends by itself once the command has stopped and it is drained.
    assert!(cat.until(deadline, |_| false), "follow did not end");
    let shown = std::mem::take(&mut cat.got);
    assert_eq!(assert_holes(&shown, &stream, true), 1);
    // Nothing stands in for the dropped bytes but the notice (`assert_holes` allows no
    // filler there): the 1 MiB kept, and the notice.
    assert!(
        (1_048_576..1_048_576 + 200).contains(&shown.len()),
        "{} bytes",
        shown.len()
    );
}
