//! Capture on a real mount: `output` keeps a single-threaded writer's order for every
//! write size and for buffered writers, stderr reopened through `/dev/stderr` is
//! captured, no other process opens a command's stderr file (the next command's or a
//! running one's), fast output costs other processes nothing, commands get default
//! signal dispositions, and bad writers (one huge write, a closed stdout, thousands of
//! children) lose no byte.

use crate::common::{
    all_processes, proc_stat, process_alive, status_kib, wait_until, Mount, Options,
};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Write sizes that matter: a byte, glibc's pipe buffer, two of it, a large write, and
/// one larger than the pipe (1 MiB), which the kernel splits.
const SIZES: [usize; 5] = [1, 4096, 8192, 65536, (1 << 20) + 4099];

/// A Python writer alternating one stdout write of each size with a stderr line.
const ALTERNATING: &str = r#"
import os, sys
sizes = [int(s) for s in sys.argv[1].split(",")]
for i in range(int(sys.argv[2])):
    size = sizes[i % len(sizes)]
    os.write(1, bytes([97 + i % 26]) * size)
    os.write(2, b"E%05d\n" % i)
"#;

fn expected_alternating(rounds: usize) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let (mut stdout, mut stderr, mut output) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..rounds {
        let chunk = vec![b'a' + (i % 26) as u8; SIZES[i % SIZES.len()]];
        let line = format!("E{i:05}\n").into_bytes();
        stdout.extend_from_slice(&chunk);
        stderr.extend_from_slice(&line);
        output.extend_from_slice(&chunk);
        output.extend_from_slice(&line);
    }
    (stdout, stderr, output)
}

/// How many of `expected`'s lines are not where they should be in `got`.
fn misplaced(expected: &[u8], got: &[u8]) -> usize {
    let expected: Vec<&[u8]> = expected.split(|b| *b == b'\n').collect();
    let got: Vec<&[u8]> = got.split(|b| *b == b'\n').collect();
    let differ = expected
        .iter()
        .zip(got.iter())
        .filter(|(a, b)| a != b)
        .count();
    differ + expected.len().abs_diff(got.len())
}

#[test]
fn output_keeps_write_order_for_every_write_size() {
    let mount = Mount::with_args(&["--max-output", "64m"]);
    let script = mount.dir.path().join("alternating.py");
    std::fs::write(&script, ALTERNATING).unwrap();
    let sizes: Vec<String> = SIZES.iter().map(usize::to_string).collect();
    let rounds = 40;
    let answer = mount.run(
        "sizes",
        &format!("python3 {} {} {rounds}", script.display(), sizes.join(",")),
    );
    assert_eq!(answer, "completed\n", "{}", mount.read("cmd/sizes/stderr"));
    let (stdout, stderr, output) = expected_alternating(rounds);
    let got = std::fs::read(mount.p("cmd/sizes/output")).unwrap();
    assert_eq!(got.len(), output.len());
    assert!(
        got == output,
        "{} lines misplaced",
        misplaced(&output, &got)
    );
    assert!(std::fs::read(mount.p("cmd/sizes/stdout")).unwrap() == stdout);
    assert_eq!(std::fs::read(mount.p("cmd/sizes/stderr")).unwrap(), stderr);

    // The case a packet pipe cannot tell apart: exactly 4096 bytes, then a line on
    // each stream, many times over.
    mount.run("pages", &format!("python3 {} 4096 300", script.display()));
    let got = std::fs::read(mount.p("cmd/pages/output")).unwrap();
    let mut want = Vec::new();
    for i in 0..300 {
        want.extend(vec![b'a' + (i % 26) as u8; 4096]);
        want.extend(format!("E{i:05}\n").into_bytes());
    }
    assert!(got == want, "{} lines misplaced", misplaced(&want, &got));
}

/// Runs `command` outside the mount with both streams on one pipe: the writes in the
/// order the program made them, which is what `output` must show.
fn reference(dir: &Path, command: &str) -> Vec<u8> {
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("{{ {command}; }} 2>&1 | cat"))
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{command}");
    out.stdout
}

const C_WRITER: &str = r#"
#include <stdio.h>
int main(void) {
    for (int i = 0; i < 3000; i++) {
        printf("out %d: some text to fill the buffer\n", i);
        if (i % 7 == 0) fprintf(stderr, "err %d\n", i);
    }
    return 0;
}
"#;

const PYTHON_WRITER: &str = r#"
import sys
for i in range(3000):
    print("out %d: some text to fill the buffer" % i)
    if i % 7 == 0:
        sys.stderr.write("err %d\n" % i)
"#;

const RUST_WRITER: &str = r#"
use std::io::Write;
fn main() {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for i in 0..3000 {
        writeln!(out, "out {i}: some text to fill the buffer").unwrap();
        if i % 7 == 0 {
            eprintln!("err {i}");
        }
    }
}
"#;

#[test]
fn buffered_writers_keep_their_order_against_unbuffered_stderr() {
    let mount = Mount::start();
    let dir = mount.dir.path();
    std::fs::write(dir.join("writer.c"), C_WRITER).unwrap();
    std::fs::write(dir.join("writer.py"), PYTHON_WRITER).unwrap();
    std::fs::write(dir.join("writer.rs"), RUST_WRITER).unwrap();
    let built = Command::new("cc")
        .args(["-O2", "-o", "c-writer", "writer.c"])
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(built.success(), "cc builds the C writer");
    let built = Command::new("rustc")
        .args(["-O", "-o", "rust-writer", "writer.rs"])
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(built.success(), "rustc builds the Rust writer");
    for (name, command) in [
        ("c", "./c-writer"),
        ("python", "python3 writer.py"),
        ("rust", "./rust-writer"),
    ] {
        let want = reference(dir, command);
        // The writer must really interleave, or this proves nothing.
        let text = String::from_utf8_lossy(&want);
        let first_err = text.find("err ").unwrap();
        assert!(text[first_err..].contains("out "), "{name} interleaves");
        assert_eq!(mount.run(name, command), "completed\n");
        let got = std::fs::read(mount.p(&format!("cmd/{name}/output"))).unwrap();
        assert!(
            got == want,
            "{name}: {} lines misplaced",
            misplaced(&want, &got)
        );
    }
}

#[test]
fn stderr_reopened_through_dev_stderr_is_captured_in_order() {
    let mount = Mount::start();
    mount.run(
        "reopen",
        "echo a; echo b > /dev/stderr; echo c; echo d >> /dev/stderr; \
         awk 'BEGIN { print \"e\" > \"/dev/stderr\" }'; echo f; ls -l /proc/self/fd/2 >/dev/null; \
         setsid -w sh -c 'echo g > /dev/stderr'",
    );
    // A process of the command that left its session (setsid) reopens it too.
    assert_eq!(mount.read("cmd/reopen/output"), "a\nb\nc\nd\ne\nf\ng\n");
    assert_eq!(mount.read("cmd/reopen/stderr"), "b\nd\ne\ng\n");
    // The stderr file is listed nowhere.
    let root: Vec<String> = std::fs::read_dir(&mount.path)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(root.iter().all(|name| !name.contains("stderr")), "{root:?}");
    // Nor can it be looked up by name once its command has it.
    assert!(!mount.p(".terminalfs-stderr-1").exists());
}

/// The driver's queued signals and their limit, from `SigQ:` in its status.
fn signal_queue(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status
        .lines()
        .find_map(|line| line.strip_prefix("SigQ:"))
        .expect("a SigQ line");
    let (queued, limit) = line.trim().split_once('/').unwrap();
    (queued.parse().unwrap(), limit.parse().unwrap())
}

/// Signals pending for any thread of `pid`, or for the process, as one mask.
fn pending_signals(pid: u32) -> u64 {
    let mut mask = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
        for line in status.lines() {
            if let Some(bits) = line
                .strip_prefix("SigPnd:")
                .or_else(|| line.strip_prefix("ShdPnd:"))
            {
                mask |= u64::from_str_radix(bits.trim(), 16).unwrap_or(0);
            }
        }
    }
    mask
}

#[test]
fn fast_output_leaves_other_processes_their_signals_and_timers() {
    let mount = Mount::start();
    std::fs::write(mount.p("ctl/loud"), "yes").unwrap();
    assert!(wait_until(Duration::from_secs(10), || {
        std::fs::metadata(mount.p("cmd/loud/stdout")).is_ok_and(|m| m.len() > (8 << 20))
    }));
    for _ in 0..3 {
        // `timeout` creates a POSIX timer, which needs room in the user's queue.
        let out = Command::new("timeout")
            .args(["1", "sleep", "0.2"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "timeout failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let (queued, limit) = signal_queue(mount.pid());
        // The count is the whole user's (other processes of the user add to it); a
        // driver that queued a signal per write filled it to the limit.
        assert!(queued * 2 < limit, "SigQ {queued}/{limit}");
        assert_eq!(
            pending_signals(mount.pid()),
            0,
            "the driver has signals queued"
        );
    }
    std::fs::write(mount.p("cmd/loud/kill"), "TERM").unwrap();
    assert_eq!(mount.wait("loud"), "error\n");
}

#[test]
fn commands_get_every_signal_disposition_default() {
    // What a non-interactive shell does to a job started with `&`: SIGINT and
    // SIGQUIT ignored. Some signals blocked as well, for good measure.
    let mount = Mount::with_launcher(Options::default(), &|command| {
        // SAFETY: only signal(2) and sigprocmask(2) between fork and exec.
        unsafe {
            command.pre_exec(|| {
                libc::signal(libc::SIGINT, libc::SIG_IGN);
                libc::signal(libc::SIGQUIT, libc::SIG_IGN);
                libc::signal(libc::SIGUSR1, libc::SIG_IGN);
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                libc::sigaddset(&mut set, libc::SIGUSR2);
                libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
                Ok(())
            });
        }
    });
    let driver = std::fs::read_to_string(format!("/proc/{}/status", mount.pid())).unwrap();
    let ignored = driver
        .lines()
        .find_map(|line| line.strip_prefix("SigIgn:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .unwrap();
    // Bit n-1 stands for signal n.
    assert_eq!(
        ignored & 0b110,
        0b110,
        "the driver ignores SIGINT and SIGQUIT"
    );
    mount.run(
        "dispositions",
        "exec grep -E '^Sig(Ign|Blk)' /proc/self/status",
    );
    assert_eq!(
        mount.read("cmd/dispositions/stdout"),
        "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n"
    );
    // And so a SIGINT stops a command.
    std::fs::write(mount.p("ctl/sleeper"), "exec sleep 60").unwrap();
    let mut pid = None;
    assert!(wait_until(Duration::from_secs(10), || {
        let result: serde_json::Value =
            serde_json::from_str(&mount.read("cmd/sleeper/result.json")).unwrap();
        pid = result["pid"].as_i64();
        pid.is_some()
    }));
    // SAFETY: signalling the command the test just started.
    unsafe {
        libc::kill(pid.unwrap() as i32, libc::SIGINT);
    }
    assert_eq!(mount.wait("sleeper"), "error\n");
    let result: serde_json::Value =
        serde_json::from_str(&mount.read("cmd/sleeper/result.json")).unwrap();
    assert_eq!(result["signal"], 2, "{result}");
}

#[test]
fn one_gib_in_one_write_arrives_whole_and_memory_stays_bounded() {
    let mount = Mount::start();
    mount.run(
        "huge",
        "python3 -c 'import os; n = os.write(1, bytes(1 << 30)); os.write(2, b\"wrote %d\\n\" % n)'",
    );
    let result = mount.read("cmd/huge/result.json");
    let json: serde_json::Value = serde_json::from_str(&result).unwrap();
    assert_eq!(json["stdout"]["bytes"], 1u64 << 30, "{result}");
    assert_eq!(
        mount.read("cmd/huge/stderr"),
        format!("wrote {}\n", 1u64 << 30)
    );
    // The stderr line comes after every stdout byte.
    let output = std::fs::read(mount.p("cmd/huge/output")).unwrap();
    assert!(output.ends_with(format!("\0wrote {}\n", 1u64 << 30).as_bytes()));
    let rss = status_kib(mount.pid(), "VmRSS:");
    assert!(rss < 256 * 1024, "the driver holds {rss} KiB");
}

#[test]
fn stderr_keeps_coming_after_stdout_is_closed() {
    let mount = Mount::start();
    mount.run(
        "closed",
        "echo before; exec 1>&-; i=0; while [ $i -lt 2000 ]; do echo e$i >&2; i=$((i+1)); done",
    );
    assert_eq!(mount.read("cmd/closed/stdout"), "before\n");
    let stderr = mount.read("cmd/closed/stderr");
    let want: String = (0..2000).map(|i| format!("e{i}\n")).collect();
    assert_eq!(stderr, want);
    assert_eq!(mount.read("cmd/closed/output"), format!("before\n{want}"));
}

#[test]
fn two_thousand_children_writing_at_once_lose_nothing() {
    let mount = Mount::with_args(&["--max-output", "64m"]);
    mount.run(
        "crowd",
        "i=0; while [ $i -lt 2000 ]; do \
           { printf 'out %s %0500d\\n' $i 0; printf 'err %s %0300d\\n' $i 0 >&2; } & \
           i=$((i+1)); done; wait",
    );
    for (stream, tag, width) in [("stdout", "out", 500), ("stderr", "err", 300)] {
        let text = mount.read(&format!("cmd/crowd/{stream}"));
        let mut seen: Vec<u32> = text
            .lines()
            .map(|line| {
                let mut parts = line.split(' ');
                assert_eq!(parts.next(), Some(tag), "a whole line: {line}");
                let n = parts.next().unwrap().parse().unwrap();
                assert_eq!(parts.next().map(str::len), Some(width), "a whole line");
                n
            })
            .collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..2000).collect::<Vec<u32>>(), "{stream}");
    }
    let output = mount.read("cmd/crowd/output");
    assert_eq!(output.lines().count(), 4000);
    let rss = status_kib(mount.pid(), "VmRSS:");
    assert!(rss < 256 * 1024, "the driver holds {rss} KiB");
}

#[test]
fn a_stderr_writer_outliving_a_dead_driver_gets_errors_not_a_hang() {
    let mut mount = Mount::start();
    let pidfile = mount.dir.path().join("writer.pid");
    std::fs::write(
        mount.p("ctl/orphan"),
        format!(
            "setsid sh -c 'echo $$ > {}; while :; do echo x >&2 || exit 3; sleep 0.02; done' &\n\
             sleep 60",
            pidfile.display()
        ),
    )
    .unwrap();
    assert!(wait_until(Duration::from_secs(10), || {
        mount.read("cmd/orphan/stderr").len() > 20
    }));
    let writer: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let mut child = mount.take_child().expect("the driver runs");
    child.kill().unwrap();
    child.wait().unwrap();
    // The writer's next write fails instead of waiting forever for an answer.
    let gone = wait_until(Duration::from_secs(10), || {
        proc_stat(writer).is_none_or(|stat| stat.state == 'Z')
    });
    if !gone {
        // SAFETY: killing the test's own stray writer before failing.
        unsafe {
            libc::kill(writer, libc::SIGKILL);
        }
    }
    assert!(gone, "the writer is still there after the driver died");
}

fn result(mount: &Mount, name: &str) -> serde_json::Value {
    serde_json::from_str(&mount.read(&format!("cmd/{name}/result.json"))).unwrap()
}

#[test]
fn max_rss_is_the_commands_own_peak_and_says_where_it_comes_from() {
    let mount = Mount::start();
    assert!(
        mount
            .log()
            .contains("commands are forked by a spawner process"),
        "{}",
        mount.log()
    );
    assert_eq!(mount.run("small", "true"), "completed\n");
    let small = result(&mount, "small");
    let kib = small["max_rss_kib"].as_u64().unwrap();
    assert!(kib > 0 && kib < 10 * 1024, "{small}");
    assert!(small["max_rss_source"].as_str().is_some(), "{small}");
    // 200 MB allocated and touched: the figure is Python's own peak, within 10%.
    let script = "import resource\n\
                  b = bytearray(200 * 1024 * 1024)\n\
                  for i in range(0, len(b), 4096):\n    b[i] = 1\n\
                  print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n";
    std::fs::write(mount.dir.path().join("big.py"), script).unwrap();
    assert_eq!(mount.run("big", "exec python3 big.py"), "completed\n");
    let own: f64 = mount.read("cmd/big/stdout").trim().parse().unwrap();
    let big = result(&mount, "big");
    let reported = big["max_rss_kib"].as_f64().unwrap();
    assert!(own > 200_000.0, "python touched {own} KiB");
    assert!(
        (reported - own).abs() <= own * 0.1,
        "reported {reported} KiB, python's own peak {own} KiB"
    );
}

#[test]
fn commands_are_the_drivers_children_and_outlive_a_lost_spawner() {
    let mount = Mount::start();
    std::fs::write(mount.p("ctl/long"), "sleep 60").unwrap();
    let mut pid = None;
    assert!(wait_until(Duration::from_secs(10), || {
        pid = result(&mount, "long")["pid"].as_i64();
        pid.is_some()
    }));
    let pid = pid.unwrap() as i32;
    // The spawner forks it, but as the driver's child: the driver reaps it.
    assert_eq!(proc_stat(pid).unwrap().ppid, mount.pid() as i32);
    let spawner = all_processes()
        .into_iter()
        .map(|(pid, _)| pid)
        .find(|&p| {
            proc_stat(p).is_some_and(|stat| stat.ppid == mount.pid() as i32)
                && std::fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|line| {
                    line.split(|b| *b == 0)
                        .any(|arg| arg == b"--internal-spawner")
                })
        })
        .expect("the driver's spawner");
    // SAFETY: killing the driver's spawner, which this test found above.
    unsafe {
        libc::kill(spawner, libc::SIGKILL);
    }
    assert!(wait_until(Duration::from_secs(10), || !process_alive(
        spawner
    )));
    // The command runs on, and is still the driver's to stop and to account for.
    assert_eq!(mount.read("cmd/long/status"), "running\n");
    assert!(process_alive(pid));
    std::fs::write(mount.p("cmd/long/kill"), "TERM").unwrap();
    assert_eq!(mount.wait("long"), "error\n");
    assert_eq!(result(&mount, "long")["signal"], 15);
    // The driver forks by itself from now on.
    assert_eq!(mount.run("after", "echo still"), "completed\n");
    assert_eq!(mount.read("cmd/after/stdout"), "still\n");
}

/// The driver's descriptors that are files of its own mount: each as its link in
/// `/proc/<pid>/fd` and the path it leads to.
fn own_handles(mount: &Mount) -> Vec<(std::path::PathBuf, String)> {
    let dir = format!("/proc/{}/fd", mount.pid());
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|entry| {
                    let target = std::fs::read_link(entry.path()).ok()?;
                    target
                        .starts_with(&mount.path)
                        .then(|| (entry.path(), target.display().to_string()))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The paths of [`own_handles`].
fn own_files(mount: &Mount) -> Vec<String> {
    own_handles(mount)
        .into_iter()
        .map(|(_, target)| target)
        .collect()
}

/// Writes `evil` into `target` from a process of its own (no part of terminalfs, nor of
/// any command), as `sh` would: appending, then truncating. Both must fail, refused.
fn inject(mount: &Mount, target: &str) {
    for redirect in [">>", ">"] {
        let out = mount.sh(&format!("echo evil {redirect} '{target}'"));
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && said.contains("Permission denied"),
            "echo evil {redirect} {target}: {} {said}\n{}",
            out.status,
            mount.log()
        );
    }
}

#[test]
fn no_other_process_opens_the_next_or_a_running_commands_stderr_file() {
    let mount = Mount::with_args(&["--verbose"]);
    // The next command's file, readied while its draft is written: its predictable
    // name, and the driver's own descriptor of it.
    let mut draft = std::fs::File::create(mount.p("ctl/victim")).unwrap();
    let readied = || {
        own_handles(&mount)
            .into_iter()
            .find(|(_, target)| target.contains(".terminalfs-stderr-"))
    };
    assert!(
        wait_until(Duration::from_secs(10), || readied().is_some()),
        "{:?}",
        own_files(&mount)
    );
    let (link, name) = readied().unwrap();
    inject(&mount, &name);
    inject(&mount, &link.display().to_string());
    let out = mount.sh(&format!("cat '{name}'"));
    assert!(!out.status.success(), "the file reads as nothing");
    // The id after it is no file at all, and none is made by the attempt.
    let id: u64 = name.rsplit('-').next().unwrap().parse().unwrap();
    let after = mount.p(&format!(".terminalfs-stderr-{}", id + 1));
    let out = mount.sh(&format!("echo evil > '{}'", after.display()));
    assert!(!out.status.success());
    assert!(std::fs::read_dir(&mount.path).unwrap().all(|entry| !entry
        .unwrap()
        .file_name()
        .to_string_lossy()
        .contains("stderr")));
    // The command gets the readied file, and is refused nothing itself.
    let go = mount.dir.path().join("go");
    use std::io::Write;
    draft
        .write_all(
            format!(
                "echo one >&2; while [ ! -e '{}' ]; do sleep 0.05; done; \
                 echo two >&2; echo three > /dev/stderr",
                go.display()
            )
            .as_bytes(),
        )
        .unwrap();
    drop(draft);
    mount.holds("cmd/victim/stderr", "one\n");
    let shell = mount.read("cmd/victim/pid").trim().to_string();
    let fd = format!("/proc/{shell}/fd/2");
    let running = std::fs::read_link(&fd).unwrap().display().to_string();
    // (Shown as deleted once a refused lookup has had the kernel drop the name.)
    let running = running.trim_end_matches(" (deleted)").to_string();
    assert_eq!(running, name, "the command's stderr is the readied file");
    // The running command's file: by name, and through its shell's descriptor, from
    // outside its session.
    inject(&mount, &running);
    inject(&mount, &fd);
    std::fs::write(&go, "").unwrap();
    assert_eq!(mount.wait("victim"), "completed\n");
    assert_eq!(mount.read("cmd/victim/stderr"), "one\ntwo\nthree\n");
    assert_eq!(mount.read("cmd/victim/output"), "one\ntwo\nthree\n");
    // Each refusal is one line of the verbose log.
    assert!(
        mount.log().contains("opened only by terminalfs"),
        "{}",
        mount.log()
    );
    // A start with nothing readied has the file too, opened the same way.
    let said = mount.ok("echo 'readlink /proc/$$/fd/2' > \"$M/ctl/plain\"; cat \"$M/cmd/plain/wait\" >/dev/null; cat \"$M/cmd/plain/stdout\"");
    assert!(said.contains(".terminalfs-stderr-"), "{said}");
}

#[test]
fn the_next_stderr_file_is_opened_while_its_draft_is_written_and_only_then() {
    let mut mount = Mount::start();
    // Idle: the driver holds nothing of its mount, so `fusermount3 -u` may take it.
    assert!(
        wait_until(Duration::from_secs(10), || own_files(&mount).is_empty()),
        "{:?}",
        own_files(&mount)
    );
    // A writer keeps a draft open: the next command's stderr file is readied.
    let mut draft = std::fs::File::create(mount.p("ctl/ready")).unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || own_files(&mount)
            .iter()
            .any(|f| f.contains(".terminalfs-stderr-"))),
        "{:?}",
        own_files(&mount)
    );
    use std::io::Write;
    draft
        .write_all(b"echo out; echo err >&2; echo out2; echo err2 >/dev/stderr")
        .unwrap();
    drop(draft);
    // Its command writes through the readied file, in order, reopened too.
    assert_eq!(mount.wait("ready"), "completed\n");
    assert_eq!(mount.read("cmd/ready/stderr"), "err\nerr2\n");
    assert_eq!(mount.read("cmd/ready/output"), "out\nerr\nout2\nerr2\n");
    // With no draft left, the driver lets go of its mount again; so it does when the
    // only draft is an empty one nobody writes (`touch`), which may stay for hours.
    assert!(
        wait_until(Duration::from_secs(10), || own_files(&mount).is_empty()),
        "{:?}",
        own_files(&mount)
    );
    drop(std::fs::File::create(mount.p("ctl/touched")).unwrap());
    assert!(mount.p("ctl/touched").exists());
    assert!(
        wait_until(Duration::from_secs(10), || own_files(&mount).is_empty()),
        "{:?}",
        own_files(&mount)
    );
    assert!(mount.stop().success());
}
