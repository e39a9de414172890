//! The job's life, its record and its signals, against real processes and a real spool.

use super::*;
use crate::spool::{prepare_dir, Spool, SpoolConfig};
use std::io::BufRead;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

fn spool_in(dir: &std::path::Path) -> Arc<Spool> {
    let _unlocked = prepare_dir(dir).expect("a fresh state directory");
    Spool::open(
        SpoolConfig {
            dir: dir.to_path_buf(),
            max_output: 1024,
            max_spool: 1 << 20,
        },
        |_| {},
    )
    .expect("the spool opens")
}

/// A job named `name` that has not started: no cgroup, no input; `/bin/sh` in `/tmp`.
fn new_job(spool: &Arc<Spool>, id: u64, name: &str, grace: Duration) -> Job {
    let capture = spool.capture(name, b"true");
    let config = crate::supervisor::SupervisorConfig {
        shell: "/bin/sh".into(),
        cwd: "/tmp".into(),
        kill_grace: grace,
        cgroup_tag: None,
        spawner: None,
    };
    Job::new(id, capture, &config, None, String::new(), None, None)
}

/// A job whose shell runs as `pid`.
fn running_job(spool: &Arc<Spool>, pid: i32) -> Job {
    let job = new_job(spool, 1, "job", Duration::from_secs(1));
    job.mark_started(pid, SystemTime::now(), Instant::now());
    job
}

fn exit(code: i32, signal: Option<i32>) -> Exit {
    Exit {
        code,
        signal,
        ..Exit::never_ran()
    }
}

/// A job whose shell had pid `pid` and has been reaped, with its pipes still open
/// (as a descendant holding them would leave them).
fn reaped_job(dir: &std::path::Path, pid: i32) -> Job {
    let job = running_job(&spool_in(dir), pid);
    assert!(job.mark_exited(exit(0, None)));
    job
}

/// A process of its own group that ignores SIGINT, standing in for a shell; killed
/// and reaped when dropped, however the test ends.
struct StandIn(std::process::Child);

impl StandIn {
    fn pid(&self) -> i32 {
        self.0.id() as i32
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn stand_in() -> StandIn {
    let mut command = Command::new("sleep");
    command.arg("60").process_group(0);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        command.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_IGN);
            Ok(())
        });
    }
    StandIn(command.spawn().expect("sleep starts"))
}

/// A stand-in, and a job (in a spool of its own under `dir`) whose shell it is.
fn stood_in(dir: &tempfile::TempDir) -> (StandIn, Job) {
    let shell = stand_in();
    let job = running_job(&spool_in(&dir.path().join("spool")), shell.pid());
    (shell, job)
}

/// Signals the stand-in and records how it really ended.
fn reap(job: &Job, mut shell: StandIn) {
    use std::os::unix::process::ExitStatusExt;
    let _ = shell.0.kill();
    let status = shell.0.wait().expect("the stand-in is reaped");
    let signal = status.signal();
    let code = status.code().unwrap_or_else(|| 128 + signal.unwrap_or(0));
    assert!(job.mark_exited(exit(code, signal)));
}

#[test]
fn a_standing_holds_what_the_life_says_in_every_stage() {
    let started = UNIX_EPOCH + Duration::from_secs(1_000);
    let finished = started + Duration::from_secs(3);
    let turns = Turns {
        paused: 2,
        resumed: 1,
        last_paused: Some(started + Duration::from_secs(2)),
        last_resumed: Some(started + Duration::from_secs(1)),
    };
    let shell = |paused| Shell {
        pid: 41,
        started_at: started,
        since: Instant::now(),
        paused,
    };
    let exit = |code| Exit {
        code,
        ..Exit::never_ran()
    };
    let done = |exit: Option<Exit>, end: End| {
        Life::Done(Done {
            pid: Some(41),
            started_at: Some(started),
            finished_at: Some(finished),
            duration: Some(Duration::from_secs(3)),
            exit,
            end,
        })
    };
    let running = |paused| Standing::Running {
        since: Some(started),
        paused,
        turns,
    };
    let over = |success, code| Standing::Over {
        success,
        code,
        at: Some(finished),
        since: Some(started),
        turns,
    };
    let kill = Stop::Kill("killed: SIGTERM written to its kill file".into());
    let cases = [
        (
            Life::Starting,
            Standing::Running {
                since: None,
                paused: false,
                turns,
            },
        ),
        (
            Life::Running {
                shell: shell(false),
                signalled: Signals::default(),
            },
            running(false),
        ),
        (
            Life::Running {
                shell: shell(true),
                signalled: Signals::default(),
            },
            running(true),
        ),
        (
            Life::Stopping {
                shell: shell(false),
                why: kill.clone(),
            },
            running(false),
        ),
        (
            Life::Stopping {
                shell: shell(true),
                why: Stop::Shutdown,
            },
            running(true),
        ),
        (
            done(Some(exit(0)), End::Exited { note: None }),
            over(true, Some(0)),
        ),
        (
            done(Some(exit(3)), End::Exited { note: None }),
            over(false, Some(3)),
        ),
        (
            done(Some(exit(143)), End::Stopped(kill)),
            over(false, Some(143)),
        ),
        (
            done(
                Some(exit(0)),
                End::Stopped(Stop::Timeout("timed out".into())),
            ),
            over(false, Some(0)),
        ),
        (
            done(Some(exit(-1)), End::NotStarted("no such shell".into())),
            over(false, Some(-1)),
        ),
        (
            done(Some(exit(0)), End::Interrupted { killed: true }),
            over(false, Some(0)),
        ),
        (
            done(None, End::Interrupted { killed: false }),
            over(false, None),
        ),
    ];
    for (life, standing) in cases {
        assert_eq!(life.standing(turns), standing, "{life:?}");
        // The same facts the life's own accessors give.
        match standing {
            Standing::Running { since, paused, .. } => {
                assert_eq!(life.outcome(), None);
                assert_eq!((since, paused), (life.started_at(), life.is_paused()));
            }
            Standing::Over {
                success, code, at, ..
            } => {
                assert_eq!(Some(success), life.outcome());
                assert_eq!(code, life.exit().map(|exit| exit.code));
                assert_eq!(at, life.finished_at());
            }
        }
    }
    // A shell that never ran has no start to tell of.
    let never = Life::Done(Done {
        pid: None,
        started_at: Some(started),
        finished_at: Some(started),
        duration: Some(Duration::ZERO),
        exit: Some(Exit::never_ran()),
        end: End::NotStarted("no such shell".into()),
    });
    assert!(matches!(
        never.standing(turns),
        Standing::Over { since: None, .. }
    ));
}

#[test]
fn a_signal_written_to_kill_that_the_shell_dies_of_is_a_kill() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (child, job) = stood_in(&dir);
    assert!(job.signal(libc::SIGKILL));
    reap(&job, child);
    let life = job.life();
    assert!(life.killed(), "{life:?}");
    assert!(!life.timed_out());
    assert_eq!(
        life.reason().as_deref(),
        Some("killed: it died of SIGKILL, written to its kill file")
    );
    assert_eq!(life.outcome(), Some(false));
}

#[test]
fn a_signal_written_after_the_one_the_shell_dies_of_does_not_hide_it() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (child, job) = stood_in(&dir);
    assert!(job.signal(libc::SIGKILL));
    // Written before the death is seen: the shell is still unreaped.
    assert!(job.signal(libc::SIGINT));
    reap(&job, child);
    let life = job.life();
    assert!(life.killed(), "{life:?}");
    assert_eq!(
        life.reason().as_deref(),
        Some("killed: it died of SIGKILL, written to its kill file")
    );
}

#[test]
fn any_signal_written_names_the_death_by_it() {
    let mut written = Signals::default();
    written.insert(libc::SIGUSR1);
    written.insert(libc::SIGTERM);
    // Out of range: never held, never matched.
    written.insert(0);
    written.insert(500);
    assert!(!written.contains(0) && !written.contains(500));
    assert_eq!(
        written.died_of(&exit(143, Some(libc::SIGTERM))),
        Some(libc::SIGTERM)
    );
    assert_eq!(
        written.died_of(&exit(128 + libc::SIGUSR1, Some(libc::SIGUSR1))),
        Some(libc::SIGUSR1)
    );
    // A shell that exits 128+N on a trap of N.
    assert_eq!(
        written.died_of(&exit(128 + libc::SIGUSR1, None)),
        Some(libc::SIGUSR1)
    );
    assert_eq!(written.died_of(&exit(130, Some(libc::SIGINT))), None);
    assert_eq!(written.died_of(&exit(0, None)), None);
    assert_eq!(written.died_of(&exit(1, None)), None);
}

#[test]
fn a_stop_seen_from_outside_shows_as_paused_until_seen_continued() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (child, job) = stood_in(&dir);
    let sent = job.pauses_sent();
    assert!(job.observe_stopped(true, sent), "stopped by someone else");
    assert!(job.life().is_paused());
    assert!(!job.observe_stopped(true, sent), "no change, no news");
    assert!(job.observe_stopped(false, sent));
    assert!(!job.life().is_paused());
    // Each STOP or CONT the driver sends is counted, and a look begun before it
    // is not taken for the truth.
    assert!(job.signal(libc::SIGSTOP));
    assert!(
        !job.observe_stopped(false, sent),
        "a look older than the STOP"
    );
    assert!(job.life().is_paused());
    assert!(job.signal(libc::SIGCONT));
    assert_eq!(job.pauses_sent(), sent + 2);
    // A command stopped from outside is continued after its TERM, so it hears it.
    assert!(job.observe_stopped(true, sent + 2));
    assert!(job.stop(Stop::Kill("killed: by a test".into())));
    assert_eq!(job.pauses_sent(), sent + 3);
    assert!(!job.life().is_paused());
    reap(&job, child);
    assert!(
        !job.observe_stopped(true, sent + 3),
        "a reaped shell is not paused"
    );
    assert!(!job.life().is_paused());
    // Each change was counted once, whoever made it, the stop's CONT included.
    let Standing::Over { turns, .. } = job.standing() else {
        panic!("reaped: {:?}", job.standing());
    };
    assert_eq!((turns.paused, turns.resumed), (3, 3), "{turns:?}");
    assert!(turns.last_paused.is_some() && turns.last_paused <= turns.last_resumed);
}

#[test]
fn a_signal_the_shell_survives_explains_nothing() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (child, job) = stood_in(&dir);
    // It ignores INT, then dies of a KILL nobody wrote to its kill file.
    assert!(job.signal(libc::SIGINT));
    reap(&job, child);
    let life = job.life();
    assert_eq!(life.exit().map(|e| e.signal), Some(Some(libc::SIGKILL)));
    assert!(!life.killed(), "{life:?}");
    assert_eq!(life.reason(), None);
}

#[test]
fn the_first_reason_to_stop_stands_and_a_pause_ends_with_it() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (child, job) = stood_in(&dir);
    assert!(job.signal(libc::SIGSTOP));
    assert!(job.life().is_paused());
    assert!(job.stop(Stop::Kill("killed: by a test".into())));
    let life = job.life();
    assert!(!life.is_paused(), "a stop continues a paused job");
    assert!(life.killed() && life.is_running());
    assert!(!job.time_out(Duration::from_secs(1)), "already stopping");
    assert!(job.signal(libc::SIGKILL));
    reap(&job, child);
    let life = job.life();
    assert!(!life.timed_out());
    assert_eq!(life.reason().as_deref(), Some("killed: by a test"));
    assert_eq!(life.outcome(), Some(false));
}

#[test]
fn a_shutdown_outranks_a_stop_under_way() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (child, job) = stood_in(&dir);
    assert!(job.time_out(Duration::from_secs(1)));
    assert!(job.stop(Stop::Shutdown));
    reap(&job, child);
    let life = job.life();
    assert!(
        life.interrupted() && life.killed() && !life.timed_out(),
        "{life:?}"
    );
}

#[test]
fn every_end_reads_back_the_same_after_a_restart() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let spool = spool_in(&dir.path().join("spool"));
    let ended = |how: &dyn Fn(&Job) -> bool| {
        let child = stand_in();
        let job = running_job(&spool, child.pid());
        assert!(how(&job));
        reap(&job, child);
        job
    };
    let never = new_job(&spool, 3, "never", Duration::ZERO);
    never.mark_failed_to_start("terminalfs: cannot make pipes: no room\n");
    let child = stand_in();
    let lost = running_job(&spool, child.pid());
    drop(child);
    let jobs = [
        ended(&|_| true),
        ended(&|job| job.signal(libc::SIGKILL)),
        ended(&|job| job.time_out(Duration::from_secs(60))),
        ended(&|job| job.stop(Stop::Kill("killed: a test".into()))),
        ended(&|job| job.stop(Stop::Shutdown)),
        never,
        lost,
    ];
    let ms = |t: Option<SystemTime>| t.map(|t| t.duration_since(UNIX_EPOCH).unwrap().as_millis());
    for job in &jobs {
        let record = job.record(&job.state.lock(), &job.capture.lock());
        let capture = spool.capture("again", b"true");
        let restored =
            Job::restore(2, &record, capture, Duration::ZERO, None).expect("the record reads back");
        let (before, after) = (job.life(), restored.life());
        let interrupted = before.interrupted() || before.is_running();
        assert_eq!(after.interrupted(), interrupted, "{before:?}");
        assert_eq!(after.killed(), before.killed(), "{before:?}");
        assert_eq!(after.timed_out(), before.timed_out(), "{before:?}");
        assert_eq!(after.pid(), before.pid());
        assert_eq!(ms(after.started_at()), ms(before.started_at()));
        assert_eq!(restored.snapshot().launch, job.snapshot().launch);
        assert!(after.outcome().is_some());
        if interrupted {
            assert_eq!(after.reason().as_deref(), Some(DRIVER_STOPPED));
            assert_eq!(after.outcome(), Some(false));
        } else {
            assert_eq!(after.reason(), before.reason(), "{before:?}");
            assert_eq!(after.exit(), before.exit());
            assert_eq!(after.outcome(), before.outcome());
            assert_eq!(ms(after.finished_at()), ms(before.finished_at()));
        }
    }
}

#[test]
fn the_shell_and_directory_it_ran_with_are_kept_in_the_record() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let spool = spool_in(&dir.path().join("spool"));
    // Nothing signals its pid here: no process needs to stand in.
    let job = running_job(&spool, i32::MAX);
    let ran_with = Launch {
        shell: "/bin/sh".into(),
        cwd: "/tmp".into(),
    };
    assert_eq!(job.snapshot().launch.as_ref(), Some(&ran_with));
    assert!(job.mark_exited(exit(0, None)));
    let record = job.record(&job.state.lock(), &job.capture.lock());
    assert_eq!(
        (&record["shell"], &record["cwd"]),
        (&json!("/bin/sh"), &json!("/tmp"))
    );
    let restore = |record: &Value| {
        let capture = spool.capture("again", b"true");
        Job::restore(2, record, capture, Duration::ZERO, None).expect("it reads back")
    };
    assert_eq!(restore(&record).snapshot().launch, Some(ran_with));
    // A record written before they were kept: it reads back without them, and
    // saves them as null again.
    let mut old = record.clone();
    let map = old.as_object_mut().expect("a record is an object");
    map.remove("shell");
    map.remove("cwd");
    let restored = restore(&old);
    assert_eq!(restored.snapshot().launch, None);
    assert_eq!(restored.life().exit(), job.life().exit());
    let again = restored.record(&restored.state.lock(), &restored.capture.lock());
    assert!(
        again["shell"].is_null() && again["cwd"].is_null(),
        "{again}"
    );
}

#[test]
fn the_times_its_streams_last_grew_are_kept_in_the_record() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let spool = spool_in(&dir.path().join("spool"));
    let job = new_job(&spool, 1, "grew", Duration::ZERO);
    let started = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    // Nothing signals its pid here: no process needs to stand in.
    job.mark_started(i32::MAX, started, Instant::now());
    // Written a while after the start (whether or not the machine slept between):
    // the stream's time is the wall clock's when the bytes came.
    let wrote = started + Duration::from_millis(90_123);
    {
        let mut capture = job.capture.lock();
        capture.append_at(Stream::Stdout, b"hello\n", wrote);
        job.publish(&capture);
    }
    assert_eq!(job.grew_at(Stream::Stdout), Some(wrote));
    assert_eq!(job.grew_at(Stream::Output), Some(wrote));
    assert_eq!(job.grew_at(Stream::Stderr), Some(started), "never written");
    assert!(job.mark_exited(exit(0, None)));
    let ended = job.finished_at().expect("it ended");
    assert!(ended > wrote + Duration::from_secs(1));
    let record = job.record(&job.state.lock(), &job.capture.lock());
    assert_eq!(record[STDOUT_GREW_KEY], json!(1_700_000_090_123_u64));
    assert!(record[STDERR_GREW_KEY].is_null(), "{record}");
    // Restored with what it wrote: each stream has the time it last grew.
    let restore = |record: &Value| {
        let mut capture = spool.capture("again", b"true");
        capture.append(Stream::Stdout, b"hello\n");
        Job::restore(2, record, capture, Duration::ZERO, None).expect("it reads back")
    };
    let restored = restore(&record);
    assert_eq!(restored.grew_at(Stream::Stdout), Some(wrote));
    assert_eq!(restored.grew_at(Stream::Output), Some(wrote));
    assert_eq!(restored.grew_at(Stream::Stderr), Some(started));
    // Saved again (as a restart does), the times stay.
    let again = restored.record(&restored.state.lock(), &restored.capture.lock());
    assert_eq!(again[STDOUT_GREW_KEY], record[STDOUT_GREW_KEY]);
    // A record from before the times were kept: what was written holds the end.
    let mut old = record.clone();
    let map = old.as_object_mut().expect("a record is an object");
    map.remove(STDOUT_GREW_KEY);
    map.remove(STDERR_GREW_KEY);
    let restored = restore(&old);
    let ended = restored.finished_at();
    assert!(ended.is_some());
    assert_eq!(restored.grew_at(Stream::Stdout), ended);
    assert_eq!(restored.grew_at(Stream::Stderr), Some(started));
}

#[test]
fn a_record_whose_terminal_is_out_of_bounds_is_refused() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let spool = spool_in(&dir.path().join("spool"));
    let job = new_job(&spool, 1, "drawn", Duration::ZERO);
    // Still running when saved: a restart draws its screen again from its output.
    let mut record = job.record(&job.state.lock(), &job.capture.lock());
    let restore = |record: &Value| {
        let capture = spool.capture("again", b"true");
        Job::restore(2, record, capture, Duration::ZERO, None)
    };
    record["terminal"] = json!({"cols": 40, "rows": 10, "cursor": [0, 0], "screen": ""});
    let restored = restore(&record).expect("a terminal of 40x10 reads back");
    assert!(restored.is_terminal());
    for (cols, rows) in [(1001, 1), (1000, 1000), (0, 10), (1_u64 << 40, 1)] {
        record["terminal"]["cols"] = json!(cols);
        record["terminal"]["rows"] = json!(rows);
        let refused = restore(&record).err();
        assert_eq!(
            refused,
            Some(super::RecordError::UnknownTerminal),
            "{cols}x{rows}"
        );
    }
}

fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

#[test]
fn a_group_id_taken_by_another_process_is_not_signalled() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    // The shell's pid came back to another process, which leads its own group.
    let mut stranger = Command::new("sleep")
        .arg("60")
        .process_group(0)
        .spawn()
        .expect("sleep starts");
    let job = reaped_job(&dir.path().join("spool"), stranger.id() as i32);
    let sent = job.signal_group(libc::SIGTERM);
    let alive = stranger.try_wait().expect("try_wait").is_none();
    let _ = stranger.kill();
    let _ = stranger.wait();
    assert!(alive, "the other process's group got the signal");
    assert!(!sent);
}

#[test]
fn a_group_that_outlived_its_reaped_shell_is_signalled() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut shell = Command::new("sh")
        .args(["-c", "sleep 60 & echo $!"])
        .process_group(0)
        .stdout(Stdio::piped())
        .spawn()
        .expect("sh starts");
    let mut line = String::new();
    std::io::BufReader::new(shell.stdout.take().expect("piped"))
        .read_line(&mut line)
        .expect("sh prints the pid of its child");
    let child: i32 = line.trim().parse().expect("a pid");
    shell.wait().expect("the shell is reaped");
    let job = reaped_job(&dir.path().join("spool"), shell.id() as i32);
    assert!(job.signal_group(libc::SIGKILL));
    let deadline = Instant::now() + Duration::from_secs(20);
    while !gone(child) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let stopped = gone(child);
    if !stopped {
        // SAFETY: only a signal to the process this test started.
        unsafe {
            libc::kill(child, libc::SIGKILL);
        }
    }
    assert!(stopped, "the group's remaining member was not signalled");
}

/// While a write of a loud command's output waits for the disk (held by a stand-in for
/// a slow one), everything `stat`, `ls` and `/events` ask of its job answers at once,
/// and the bytes being written are not shown before they are on disk.
#[test]
fn what_stat_asks_never_waits_for_the_disk() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let spool = spool_in(&state);
    let job = Arc::new(running_job(&spool, i32::MAX));
    job.append(Stream::Stdout, b"first\n");
    let hold = crate::spool::stall::hold(&state);
    let writer = {
        let job = job.clone();
        std::thread::spawn(move || job.append(Stream::Stdout, &[b'x'; 4096]))
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while hold.waiting() == 0 {
        assert!(
            Instant::now() < deadline,
            "the write never reached the disk"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let (done, answers) = crossbeam_channel::bounded(1);
    {
        let job = job.clone();
        std::thread::spawn(move || {
            let extent = job.extent(Stream::Stdout);
            let snapshot = job.snapshot();
            let _ = (job.life(), job.standing(), job.is_running(), job.outcome());
            let _ = (
                job.grew_at(Stream::Output),
                job.finished_at(),
                job.evicted(),
            );
            let _ = done.send((extent.written, snapshot.output.bytes));
        });
    }
    let answered = answers.recv_timeout(Duration::from_secs(30));
    assert_eq!(hold.waiting(), 1, "the write still waits");
    assert_eq!(
        answered.expect("stat's questions waited for the disk"),
        (6, 6),
        "bytes not on disk yet are not shown"
    );
    drop(hold);
    writer.join().unwrap();
    assert_eq!(job.extent(Stream::Stdout).written, 6 + 4096);
}
