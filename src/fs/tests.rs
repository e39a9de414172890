//! The tree without a mount: every operation called as the FUSE adapter would call it,
//! with a fake spawner that records what it was asked and lets a test finish its jobs.

use super::names::{self, Slot};
use super::*;
use crate::spool::{prepare_dir, Spool, SpoolConfig};
use crate::supervisor::{Exit, Job, SpawnRequest};
use parking_lot::Mutex as TestMutex;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A pid no process has: fake jobs are never signalled, but should a bug try, it
/// reaches nobody.
const NO_PID: i32 = i32::MAX;

/// Starts nothing: each spawn is recorded and gets a job that "runs" until the test
/// finishes it; each kill is recorded.
pub(super) struct Fake {
    spool: Arc<Spool>,
    next: AtomicU64,
    pub spawned: TestMutex<Vec<(SpawnRequest, Arc<Job>)>>,
    pub kills: TestMutex<Vec<(u64, String)>>,
    /// The read end of each stdin pipe handed out, by command name.
    pub stdin: TestMutex<Vec<(String, OwnedFd)>>,
    /// (job id, signal) for each signal sent through `kill`.
    pub signals: TestMutex<Vec<(u64, i32)>>,
    shell: PathBuf,
    cwd: PathBuf,
}

impl Fake {
    fn new(dir: &Path) -> Fake {
        let spool_dir = dir.join("spool");
        let _unlocked = prepare_dir(&spool_dir).expect("a fresh state directory");
        let spool = Spool::open(
            SpoolConfig {
                dir: spool_dir,
                max_output: 1 << 16,
                max_spool: 1 << 24,
            },
            |_| {},
        )
        .expect("the spool opens");
        Fake {
            spool,
            next: AtomicU64::new(1),
            spawned: TestMutex::new(Vec::new()),
            kills: TestMutex::new(Vec::new()),
            stdin: TestMutex::new(Vec::new()),
            signals: TestMutex::new(Vec::new()),
            shell: PathBuf::from("/bin/sh"),
            cwd: dir.to_path_buf(),
        }
    }

    /// The job spawned for `name`.
    pub fn job(&self, name: &str) -> Arc<Job> {
        self.spawned
            .lock()
            .iter()
            .find(|(request, _)| request.name == name)
            .map(|(_, job)| job.clone())
            .unwrap_or_else(|| panic!("{name} was never spawned"))
    }

    pub fn spawns(&self) -> usize {
        self.spawned.lock().len()
    }

    /// Writes `bytes` to the job's stdout, as the pump would.
    pub fn print(&self, name: &str, bytes: &[u8]) {
        self.job(name)
            .append(crate::supervisor::Stream::Stdout, bytes);
    }

    /// The job's shell exits with `code` and its pipes close.
    pub fn finish(&self, name: &str, code: i32) {
        let job = self.job(name);
        job.pipe_closed();
        job.pipe_closed();
        // As the pump does: the exit is recorded, then the record saved.
        let recorded = job.mark_exited(Exit {
            code,
            signal: None,
            user_ms: 0,
            sys_ms: 0,
            max_rss_kib: 0,
            max_rss_source: String::new(),
        });
        assert!(recorded, "{name} had not exited yet");
        job.save_record();
    }
}

impl Spawner for Fake {
    fn spawn(&self, request: SpawnRequest) -> Arc<Job> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let capture = self.spool.capture(&request.name, &request.text);
        // A stdin pipe is real, so that the tree's writes can be read back.
        let input = (request.stdin == crate::supervisor::Stdin::Pipe).then(|| {
            let mut fds = [0; 2];
            // SAFETY: pipe fills two descriptors into a valid array; fcntl sets flags on
            // them (pipe2 does both at once, but macOS has no pipe2).
            let made = unsafe { libc::pipe(fds.as_mut_ptr()) };
            assert_eq!(made, 0, "a pipe");
            for fd in fds {
                // SAFETY: flags on a descriptor this test just made.
                unsafe {
                    libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
                    libc::fcntl(fd, libc::F_SETFL, libc::O_NONBLOCK);
                }
            }
            // SAFETY: both descriptors are new and owned by nobody else.
            let (read, write) =
                unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
            self.stdin.lock().push((request.name.clone(), read));
            crate::supervisor::Input::pipe(write, None)
        });
        let config = crate::supervisor::SupervisorConfig {
            shell: self.shell.clone(),
            cwd: self.cwd.clone(),
            kill_grace: Duration::from_secs(1),
            cgroup_tag: None,
            spawner: None,
        };
        let job = Arc::new(Job::new(
            id,
            capture,
            &config,
            None,
            "fake".to_string(),
            None,
            input,
        ));
        job.mark_started(NO_PID, SystemTime::now(), Instant::now());
        self.spawned.lock().push((request, job.clone()));
        job
    }

    fn kill(&self, job: &Arc<Job>, why: &str) {
        self.kills.lock().push((job.id(), why.to_string()));
    }

    fn signal(&self, job: &Arc<Job>, signal: i32) {
        self.signals.lock().push((job.id(), signal));
    }

    fn shell(&self) -> &Path {
        &self.shell
    }

    fn cwd(&self) -> &Path {
        &self.cwd
    }
}

pub(super) struct Rig {
    pub tree: Tree,
    pub fake: Arc<Fake>,
    _dir: tempfile::TempDir,
}

const W: OpenMode = OpenMode {
    write: true,
    append: false,
};
const R: OpenMode = OpenMode {
    write: false,
    append: false,
};

impl Rig {
    pub fn new() -> Rig {
        Rig::with(Duration::from_secs(3600), Duration::from_secs(3600))
    }

    /// A tree whose drafts settle for `settle` and whose commands are kept `keep`.
    pub fn with(settle: Duration, keep: Duration) -> Rig {
        Rig::with_timeout(settle, keep, None)
    }

    /// [`Rig::with`], with `--timeout` set to `timeout`.
    pub fn with_timeout(settle: Duration, keep: Duration, timeout: Option<Duration>) -> Rig {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let settings = dir.path().join("settings.json");
        std::fs::write(&settings, r#"{"permissions": {"deny": ["Bash(sudo:*)"]}}"#)
            .expect("settings written");
        let policy = Policy::load(&settings, false).expect("settings load");
        let fake = Arc::new(Fake::new(dir.path()));
        let tree = Tree::new(
            TreeConfig {
                mount: None,
                settle,
                keep,
                wait_timeout: Duration::from_secs(10),
                timeout,
                uid: 0,
                gid: 0,
            },
            fake.clone(),
            Arc::new(policy),
            None,
        );
        Rig {
            tree,
            fake,
            _dir: dir,
        }
    }

    /// Opens `ctl/<name>` for writing, creating it.
    pub fn create(&self, name: &str) -> FsResult<u64> {
        self.tree
            .create(names::CTL, name.as_bytes(), W)
            .map(|(_, opened)| opened.fh)
    }

    pub fn write(&self, fh: u64, offset: u64, text: &str) -> FsResult<u32> {
        match self.tree.write(fh, offset, text.as_bytes())? {
            Write::Done(n) => Ok(n),
            Write::Pending { .. } => panic!("a draft write never waits"),
        }
    }

    /// `echo text > ctl/<name>`: create, write, close (flush, then release).
    pub fn submit(&self, name: &str, text: &str) -> FsResult<()> {
        let fh = self.create(name)?;
        let written = self.write(fh, 0, text).map(|_| ());
        let flushed = self.tree.flush(fh);
        self.tree.release(fh);
        written.and(flushed)
    }

    pub fn lookup(&self, parent: u64, name: &str) -> FsResult<Lookup> {
        self.tree.lookup(parent, name.as_bytes())
    }

    /// The attributes a lookup finds now; panics when it would wait.
    pub fn found(&self, parent: u64, name: &str) -> FsResult<Attr> {
        match self.lookup(parent, name)? {
            Lookup::Found(attr) => Ok(attr),
            Lookup::Later(later) => panic!("lookup of {name} waits ({later:?})"),
        }
    }

    /// `cmd/<name>` once its spawn is done: starts what is queued first.
    pub fn command(&self, name: &str) -> u64 {
        if let Ok(Lookup::Later(Later::Start)) = self.lookup(names::CMD, name) {
            self.tree.start_pending();
        }
        self.found(names::CMD, name)
            .unwrap_or_else(|e| panic!("cmd/{name}: {e}"))
            .ino
    }

    /// `echo text > ctl/<name>` and wait until it runs.
    pub fn run(&self, name: &str, text: &str) -> u64 {
        self.submit(name, text).expect("the command is taken");
        self.command(name)
    }

    pub fn ls(&self, dir: u64) -> Vec<String> {
        let fh = self.tree.opendir(dir).expect("opendir");
        let names = self
            .tree
            .readdir(fh, 2)
            .expect("readdir")
            .expect("a listing nothing holds up")
            .into_iter()
            .map(|(_, _, name)| name)
            .collect();
        self.tree.releasedir(fh);
        names
    }

    /// Reads a whole file; None when a read would wait.
    pub fn cat(&self, ino: u64) -> FsResult<Option<String>> {
        let fh = self.tree.open(ino, R)?.fh;
        let mut text = Vec::new();
        let result = loop {
            match self.tree.read(fh, text.len() as u64, 4096) {
                Ok(Read::Data(bytes)) if bytes.is_empty() => break Ok(Some(())),
                Ok(Read::Data(bytes)) => text.extend_from_slice(&bytes),
                Ok(Read::Pending { .. } | Read::Later) => break Ok(None),
                Err(e) => break Err(e),
            }
        };
        self.tree.release(fh);
        result.map(|done| done.map(|()| String::from_utf8_lossy(&text).into_owned()))
    }

    /// A file under `cmd/<name>/`, read whole.
    pub fn read(&self, name: &str, file: &str) -> String {
        let dir = self.command(name);
        let ino = self
            .found(dir, file)
            .unwrap_or_else(|e| panic!("cmd/{name}/{file}: {e}"))
            .ino;
        self.cat(ino)
            .unwrap_or_else(|e| panic!("cmd/{name}/{file}: {e}"))
            .unwrap_or_else(|| panic!("cmd/{name}/{file} waits"))
    }

    /// Opens `/events` as thread `caller`; the handle.
    pub fn open_events(&self, caller: u32) -> u64 {
        self.tree
            .open_as(names::EVENTS, OpenMode::default(), caller)
            .expect("events open")
            .fh
    }

    pub fn draft_attr(&self, name: &str) -> FsResult<Attr> {
        self.found(names::CTL, name)
    }
}

pub(super) fn errno<T: std::fmt::Debug>(result: FsResult<T>) -> i32 {
    let error = result.expect_err("the operation fails");
    assert!(
        !error.reason.is_empty(),
        "errno {} without a reason",
        error.errno
    );
    error.errno
}

// ----- drafts ----------------------------------------------------------------------

#[test]
fn a_new_draft_is_empty_and_writable() {
    let rig = Rig::new();
    let fh = rig.create("build").expect("created");
    let attr = rig.draft_attr("build").expect("ctl/build exists");
    assert_eq!((attr.size, attr.perm, attr.kind), (0, 0o600, Kind::File));
    assert_eq!(rig.ls(names::CTL), ["index.md", "build"]);
    rig.tree.release(fh);
}

#[test]
fn names_are_checked_at_create() {
    let rig = Rig::new();
    assert_eq!(errno(rig.create("a b")), libc::EINVAL);
    assert_eq!(errno(rig.create(".a b")), libc::EINVAL);
    assert_eq!(
        errno(rig.create(&format!(".{}", "n".repeat(64)))),
        libc::EINVAL
    );
    assert_eq!(errno(rig.create("index.md")), libc::EEXIST);
    let fh = rig.create("x").expect("created");
    assert_eq!(errno(rig.create("x")), libc::EEXIST);
    rig.tree.release(fh);
}

#[test]
fn commands_are_created_only_in_ctl() {
    let rig = Rig::new();
    assert_eq!(errno(rig.tree.create(names::CMD, b"x", W)), libc::EACCES);
    assert_eq!(errno(rig.tree.create(999, b"x", W)), libc::ENOENT);
}

#[test]
fn the_last_close_decides_and_the_draft_can_no_longer_change() {
    let rig = Rig::new();
    rig.submit("x", "echo hi").expect("taken");
    let attr = rig.draft_attr("x").expect("still in ctl/ while it settles");
    assert_eq!((attr.size, attr.perm), (7, 0o400));
    assert_eq!(
        errno(rig.tree.setattr(attr.ino, Some(0), false)),
        libc::EACCES
    );
    assert_eq!(errno(rig.tree.open(attr.ino, W)), libc::EEXIST);
    assert_eq!(
        rig.fake.spawns(),
        0,
        "nothing starts before the settle time"
    );
    // Decided but not started: it can still be taken back, and then nothing runs.
    rig.tree.unlink(names::CTL, b"x").expect("taken back");
    assert_eq!(errno(rig.lookup(names::CMD, "x")), libc::ENOENT);
    rig.tree.start_pending();
    assert_eq!(rig.fake.spawns(), 0);
}

#[test]
fn writes_land_at_their_offset_and_appends_at_the_end() {
    let rig = Rig::new();
    let fh = rig.create("x").expect("created");
    rig.write(fh, 0, "echo abc").expect("written");
    rig.write(fh, 5, "xyz").expect("written");
    rig.tree.release(fh);
    let ino = rig.draft_attr("x").expect("draft").ino;
    assert_eq!(rig.cat(ino).expect("read"), Some("echo xyz".to_string()));

    let fh = rig
        .tree
        .create(
            names::CTL,
            b"y",
            OpenMode {
                write: true,
                append: true,
            },
        )
        .expect("created")
        .1
        .fh;
    rig.write(fh, 0, "echo ").expect("written");
    rig.write(fh, 0, "one")
        .expect("an append ignores the offset");
    rig.tree.release(fh);
    let ino = rig.draft_attr("y").expect("draft").ino;
    assert_eq!(rig.cat(ino).expect("read"), Some("echo one".to_string()));
}

#[test]
fn a_truncation_empties_a_writable_draft() {
    let rig = Rig::new();
    let fh = rig.create("x").expect("created");
    rig.write(fh, 0, "sudo rm").expect_err("refused");
    let fh2 = rig.create("y").expect("created");
    rig.write(fh2, 0, "echo long text").expect("written");
    let ino = rig.draft_attr("y").expect("draft").ino;
    rig.tree.setattr(ino, Some(0), false).expect("truncated");
    rig.write(fh2, 0, "echo b").expect("written");
    rig.tree.release(fh2);
    assert_eq!(rig.cat(ino).expect("read"), Some("echo b".to_string()));
    rig.tree.release(fh);
}

#[test]
fn a_refused_write_fails_and_the_close_makes_a_denied_command() {
    let rig = Rig::new();
    let fh = rig.create("bad").expect("created");
    let error = rig.write(fh, 0, "echo x; sudo ls ").expect_err("refused");
    assert_eq!(error.errno, libc::EPERM);
    assert!(error.reason.contains("sudo"), "{}", error.reason);
    assert_eq!(errno(rig.write(fh, 16, "more")), libc::EPERM);
    assert_eq!(errno(rig.tree.flush(fh)), libc::EPERM);
    rig.tree.release(fh);
    assert!(rig.lookup(names::CTL, "bad").is_err(), "it left ctl/");
    let dir = rig.command("bad");
    assert_eq!(rig.ls(dir), ["command", "status", "reason"]);
    assert_eq!(rig.read("bad", "status"), "denied\n");
    assert!(rig.read("bad", "reason").contains("Bash(sudo:*)"));
    assert_eq!(rig.fake.spawns(), 0);
}

#[test]
fn a_refusal_seen_only_at_the_close_denies_too() {
    let rig = Rig::new();
    let fh = rig.create("late").expect("created");
    // A write checks up to its last blank: "sud" could still become "sudoku".
    rig.write(fh, 0, "sudo").expect("not refused yet");
    assert_eq!(errno(rig.tree.flush(fh)), libc::EPERM);
    rig.tree.release(fh);
    assert_eq!(rig.read("late", "status"), "denied\n");
}

#[test]
fn blank_text_and_nul_bytes_are_refused() {
    let rig = Rig::new();
    // Blanks are not refused at a write (more may come), but at the close.
    let error = rig.submit("blank", "  \n\t").expect_err("refused");
    assert_eq!(error.errno, libc::EPERM);
    assert!(error.reason.contains("no command"), "{}", error.reason);
    assert_eq!(rig.read("blank", "status"), "denied\n");
    let error = rig.submit("nul", "echo a\0b").expect_err("refused");
    assert_eq!(error.errno, libc::EPERM);
    assert!(error.reason.contains("NUL"), "{}", error.reason);
    assert_eq!(rig.read("nul", "status"), "denied\n");
}

#[test]
fn a_command_longer_than_the_limit_never_runs() {
    let rig = Rig::new();
    let fh = rig.create("big").expect("created");
    let chunk = "e".repeat(1 << 19);
    rig.write(fh, 0, &chunk).expect("first half");
    rig.write(fh, 1 << 19, &chunk).expect("second half");
    assert_eq!(errno(rig.write(fh, 1 << 20, "x")), libc::EFBIG);
    rig.tree.release(fh);
    assert_eq!(rig.read("big", "status"), "denied\n");
    assert!(rig.read("big", "reason").contains("longer than"));
}

#[test]
fn a_bad_directive_is_refused_and_a_good_one_reaches_the_spawn() {
    let rig = Rig::new();
    let refused = rig.submit("bad", "#terminalfs timeout=soon\ntrue");
    assert_eq!(errno(refused), libc::EINVAL);
    assert_eq!(rig.read("bad", "status"), "denied\n");
    rig.run("limited", "#terminalfs timeout=5s\ntrue");
    let spawned = rig.fake.spawned.lock();
    let (request, _) = spawned.last().expect("spawned");
    assert_eq!(request.name, "limited");
    assert_eq!(request.timeout, Some(Duration::from_secs(5)));
    assert_eq!(&*request.text, b"#terminalfs timeout=5s\ntrue");
}

#[test]
fn a_timeout_directive_shortens_the_drivers_timeout_but_never_lengthens_it() {
    let hour = Duration::from_secs(3600);
    let rig = Rig::with_timeout(hour, hour, Some(Duration::from_secs(60)));
    rig.run("longer", "#terminalfs timeout=10m\ntrue");
    rig.run("shorter", "#terminalfs timeout=5s\ntrue");
    rig.run("plain", "true");
    let spawned = rig.fake.spawned.lock();
    let limits: Vec<(&str, Option<Duration>)> = spawned
        .iter()
        .map(|(request, _)| (request.name.as_str(), request.timeout))
        .collect();
    assert_eq!(
        limits,
        [
            ("longer", Some(Duration::from_secs(60))),
            ("shorter", Some(Duration::from_secs(5))),
            ("plain", Some(Duration::from_secs(60))),
        ]
    );
}

#[test]
fn only_one_writer_at_a_time() {
    let rig = Rig::new();
    let fh = rig.create("x").expect("created");
    let ino = rig.draft_attr("x").expect("draft").ino;
    assert_eq!(errno(rig.tree.open(ino, W)), libc::EEXIST);
    let reader = rig.tree.open(ino, R).expect("a reader may open it");
    rig.tree.release(reader.fh);
    rig.tree.release(fh);
}

#[test]
fn drafts_are_renamed_within_ctl_only() {
    let rig = Rig::new();
    let fh = rig.create("a").expect("created");
    let other = rig.create("b").expect("created");
    let refused: [(&[u8], u64, &[u8], i32); 5] = [
        (b"a", names::CTL, b"b", libc::EEXIST),
        (b"a", names::CMD, b"a", libc::EXDEV),
        (b"a", names::CTL, b"index.md", libc::EPERM),
        (b"a", names::CTL, b"a b", libc::EINVAL),
        (b"zz", names::CTL, b"c", libc::ENOENT),
    ];
    for (from, to_dir, to, expected) in refused {
        let renamed = rig.tree.rename(names::CTL, from, to_dir, to);
        assert_eq!(
            errno(renamed),
            expected,
            "{:?}",
            String::from_utf8_lossy(to)
        );
    }
    rig.tree
        .rename(names::CTL, b"a", names::CTL, b"c")
        .expect("renamed");
    rig.write(fh, 0, "echo renamed")
        .expect("the open handle still writes");
    rig.tree.release(fh);
    rig.tree.release(other);
    assert_eq!(rig.read("c", "command"), "echo renamed");
    assert!(rig.lookup(names::CMD, "a").is_err());
}

#[test]
fn an_undecided_draft_can_be_removed() {
    let rig = Rig::new();
    let fh = rig.create("x").expect("created");
    rig.write(fh, 0, "echo gone").expect("written");
    rig.tree.unlink(names::CTL, b"x").expect("removed");
    assert_eq!(errno(rig.lookup(names::CTL, "x")), libc::ENOENT);
    // The open writer's bytes now go nowhere, and its close decides nothing.
    rig.write(fh, 9, " more").expect("taken and dropped");
    rig.tree.release(fh);
    assert_eq!(errno(rig.lookup(names::CMD, "x")), libc::ENOENT);
    assert_eq!(rig.fake.spawns(), 0);
}

#[test]
fn a_draft_under_a_temporary_name_waits_for_its_rename() {
    // A settle time already over: only the temporary name holds it back.
    let rig = Rig::with(Duration::ZERO, Duration::from_secs(3600));
    rig.submit("late.tmp", "echo ran").expect("accepted");
    rig.tree.tick();
    assert!(!rig.tree.state.lock().drafts_coming(), "no start is coming");
    // Looking for it under `cmd/` does not start it either.
    assert_eq!(errno(rig.lookup(names::CMD, "late.tmp")), libc::ENOENT);
    rig.ls(names::CMD);
    assert_eq!(rig.fake.spawns(), 0);
    assert!(rig.draft_attr("late.tmp").is_ok(), "still a draft");

    // Renamed, it starts under its new name, never the old one.
    rig.tree
        .rename(names::CTL, b"late.tmp", names::CTL, b"late")
        .expect("renamed");
    rig.tree.tick();
    rig.tree.start_pending();
    assert_eq!(rig.fake.spawns(), 1);
    assert_eq!(rig.read("late", "command"), "echo ran");
    assert_eq!(errno(rig.lookup(names::CMD, "late.tmp")), libc::ENOENT);

    // Renamed into a temporary name before its start, it waits again.
    let rig = Rig::new();
    rig.submit("soon", "echo soon").expect("accepted");
    rig.tree
        .rename(names::CTL, b"soon", names::CTL, b"soon.tmp")
        .expect("renamed");
    assert_eq!(errno(rig.lookup(names::CMD, "soon.tmp")), libc::ENOENT);
    assert_eq!(rig.fake.spawns(), 0);
}

#[test]
fn a_hidden_draft_runs_only_under_the_name_it_is_renamed_to() {
    // As a write tool saves: a hidden temporary file, written and closed, then renamed.
    let rig = Rig::with(Duration::ZERO, Duration::from_secs(3600));
    rig.submit(".save.Xa3k", "echo saved").expect("accepted");
    rig.tree.tick();
    assert_eq!(errno(rig.lookup(names::CMD, ".save.Xa3k")), libc::ENOENT);
    rig.ls(names::CMD);
    assert_eq!(rig.fake.spawns(), 0, "a hidden draft never runs as such");
    let page = rig.cat(names::CTL_INDEX).unwrap().unwrap();
    assert!(
        page.contains("`.save.Xa3k`: hidden draft: runs once renamed"),
        "{page}"
    );
    rig.tree
        .rename(names::CTL, b".save.Xa3k", names::CTL, b"saved")
        .expect("renamed");
    rig.tree.tick();
    rig.tree.start_pending();
    assert_eq!(rig.fake.spawns(), 1);
    assert_eq!(rig.read("saved", "command"), "echo saved");
    // Mode and owner changes on a draft are taken and change nothing; elsewhere EPERM.
    let fh = rig.create(".other").expect("created");
    let ino = rig.draft_attr(".other").unwrap().ino;
    let attr = rig
        .tree
        .setattr(ino, None, true)
        .expect("a chmod of a draft");
    assert_eq!(attr.perm, 0o600);
    rig.tree.release(fh);
    let attr = rig
        .tree
        .setattr(ino, None, true)
        .expect("closed, still a draft");
    assert_eq!(attr.perm, 0o600, "a mode change changes nothing");
    assert_eq!(
        errno(rig.tree.setattr(names::CTL_INDEX, None, true)),
        libc::EPERM
    );
    let dir = rig.found(names::CMD, "saved").expect("the command").ino;
    assert_eq!(errno(rig.tree.setattr(dir, None, true)), libc::EPERM);
}

#[test]
fn a_hidden_draft_never_renamed_is_freed_after_keep_and_said() {
    let rig = Rig::with(Duration::ZERO, Duration::ZERO);
    rig.submit(".forgot", "echo x").expect("accepted");
    rig.tree.tick();
    assert_eq!(errno(rig.lookup(names::CTL, ".forgot")), libc::ENOENT);
    assert_eq!(rig.fake.spawns(), 0);
    let page = rig.cat(names::CTL_INDEX).unwrap().unwrap();
    assert!(
        page.contains("`.forgot`") && page.contains("never was"),
        "{page}"
    );
}

#[test]
fn the_index_says_starting_until_the_spawn_is_done() {
    let rig = Rig::with(Duration::ZERO, Duration::from_secs(3600));
    rig.submit("queued", "echo x").expect("accepted");
    rig.tree.tick();
    let page = rig.cat(names::CMD_INDEX).unwrap().unwrap();
    assert!(
        page.contains("| [queued](queued/status) | starting |  |  |  |"),
        "{page}"
    );
    rig.tree.start_pending();
    let page = rig.cat(names::CMD_INDEX).unwrap().unwrap();
    assert!(
        page.contains("| [queued](queued/status) | running |"),
        "{page}"
    );
}

#[test]
fn a_refused_text_is_listed_in_ctl_index_with_its_reason() {
    let rig = Rig::new();
    let refused = rig.submit("late", "echo first\n#terminalfs timeout=2s\nsleep 5");
    assert_eq!(errno(refused), libc::EINVAL);
    assert_eq!(rig.read("late", "status"), "denied\n");
    assert!(rig
        .read("late", "reason")
        .contains("after the command has begun"));
    let page = rig.cat(names::CTL_INDEX).unwrap().unwrap();
    assert!(
        page.contains("`late`: refused: a #terminalfs line after the command has begun"),
        "{page}"
    );
}

#[test]
fn a_temporary_draft_never_renamed_is_freed_after_keep_and_said() {
    let rig = Rig::with(Duration::ZERO, Duration::ZERO);
    rig.submit("forgot.tmp", "echo x").expect("accepted");
    rig.tree.tick();
    assert_eq!(errno(rig.lookup(names::CTL, "forgot.tmp")), libc::ENOENT);
    assert_eq!(rig.fake.spawns(), 0);
    let page = rig.cat(names::CTL_INDEX).unwrap().unwrap();
    assert!(
        page.contains("forgot.tmp") && page.contains("never was"),
        "{page}"
    );
}

#[test]
fn an_empty_draft_stays_until_it_is_abandoned() {
    let rig = Rig::with(Duration::from_secs(3600), Duration::ZERO);
    let fh = rig.create("empty").expect("created");
    rig.tree.release(fh);
    assert!(rig.draft_attr("empty").is_ok(), "closed empty: not decided");
    rig.tree.tick();
    assert_eq!(errno(rig.lookup(names::CTL, "empty")), libc::ENOENT);
}

// ----- starting, and lookups that wait ----------------------------------------------

#[test]
fn a_lookup_racing_the_last_close_of_a_refused_draft_waits_for_it() {
    let rig = Rig::new();
    let fh = rig.create("x").expect("created");
    assert_eq!(errno(rig.write(fh, 0, "sudo id\n")), libc::EPERM);
    assert_eq!(errno(rig.lookup(names::CMD, "x")), libc::ENOENT);
    assert_eq!(errno(rig.tree.flush(fh)), libc::EPERM);
    assert!(matches!(
        rig.lookup(names::CMD, "x"),
        Ok(Lookup::Later(Later::Close))
    ));
    rig.tree.release(fh);
    let dir = rig.found(names::CMD, "x").expect("a denied command").ino;
    assert_eq!(
        rig.cat(rig.found(dir, "status").unwrap().ino).unwrap(),
        Some("denied\n".into())
    );
}

#[test]
fn a_lookup_racing_the_last_close_waits_for_it() {
    let rig = Rig::new();
    let fh = rig.create("x").expect("created");
    rig.write(fh, 0, "true").expect("written");
    assert_eq!(
        errno(rig.lookup(names::CMD, "x")),
        libc::ENOENT,
        "still being written: not a command"
    );
    rig.tree.flush(fh).expect("the close's flush");
    assert!(matches!(
        rig.lookup(names::CMD, "x"),
        Ok(Lookup::Later(Later::Close))
    ));
    rig.tree.release(fh);
    assert!(matches!(
        rig.lookup(names::CMD, "x"),
        Ok(Lookup::Later(Later::Start))
    ));
}

#[test]
fn a_long_queue_of_spawns_gives_way_to_the_clock() {
    // Settled at once: each tick starts what is due.
    let rig = Rig::with(Duration::ZERO, Duration::from_secs(3600));
    for name in ["a", "b", "c"] {
        rig.submit(name, "true").expect("accepted");
    }
    rig.tree.tick();
    // One spawn at least each time; past the deadline the rest wait for the next call.
    assert!(rig.tree.start_until(Some(Instant::now())));
    assert_eq!(rig.fake.spawns(), 1);
    // A draft written meanwhile leaves ctl/ at the tick between two calls.
    rig.submit("d", "true").expect("accepted");
    rig.tree.tick();
    assert_eq!(errno(rig.lookup(names::CTL, "d")), libc::ENOENT);
    assert!(rig.tree.start_until(Some(Instant::now())));
    assert_eq!(rig.fake.spawns(), 2);
    assert!(!rig.tree.start_until(None), "nothing left");
    assert_eq!(rig.fake.spawns(), 4);
    assert!(!rig.tree.start_until(Some(Instant::now())));
    assert_eq!(rig.fake.spawns(), 4);
}

#[test]
fn a_started_command_appears_at_once_and_lookups_wait_for_its_spawn() {
    let rig = Rig::new();
    rig.submit("x", "sleep 1").expect("taken");
    assert!(matches!(
        rig.lookup(names::CMD, "x"),
        Ok(Lookup::Later(Later::Start))
    ));
    assert_eq!(rig.fake.spawns(), 0, "the lookup only queued the spawn");
    assert!(rig.ls(names::CMD).contains(&"x".to_string()));
    assert_eq!(errno(rig.lookup(names::CTL, "x")), libc::ENOENT);
    assert!(matches!(
        rig.lookup(names::CMD, "x"),
        Ok(Lookup::Later(Later::Start))
    ));
    rig.tree.start_pending();
    assert_eq!(rig.fake.spawns(), 1);
    let dir = rig.found(names::CMD, "x").expect("found").ino;
    let files = rig.ls(dir);
    assert!(files.contains(&"pid".to_string()) && files.contains(&"kill".to_string()));
}

#[test]
fn lookups_under_a_starting_command_wait_too() {
    let rig = Rig::new();
    rig.run("first", "true");
    rig.submit("x", "true").expect("taken");
    assert!(matches!(
        rig.lookup(names::CMD, "x"),
        Ok(Lookup::Later(Later::Start))
    ));
    // The directory's inode, as a listing hands it out before the spawn is done.
    let fh = rig.tree.opendir(names::CMD).expect("opendir");
    let listing = rig
        .tree
        .readdir(fh, 0)
        .expect("readdir")
        .expect("nothing settles");
    rig.tree.releasedir(fh);
    let (dir, _, _) = listing
        .into_iter()
        .find(|(_, _, name)| name == "x")
        .expect("listed");
    assert!(matches!(
        rig.lookup(dir, "status"),
        Ok(Lookup::Later(Later::Start))
    ));
    rig.tree.start_pending();
    assert!(rig.found(dir, "pid").is_ok());
}

#[test]
fn listing_cmd_queues_every_decided_draft_and_spawns_none_itself() {
    let rig = Rig::new();
    for i in 0..5 {
        rig.submit(&format!("c{i}"), "true").expect("taken");
    }
    let listed = rig.ls(names::CMD);
    assert_eq!(listed.len(), 6, "{listed:?}");
    assert_eq!(rig.fake.spawns(), 0);
    rig.tree.start_pending();
    assert_eq!(rig.fake.spawns(), 5);
}

#[test]
fn the_tick_starts_a_draft_once_it_has_settled() {
    let rig = Rig::with(Duration::ZERO, Duration::from_secs(3600));
    rig.submit("x", "true").expect("taken");
    rig.tree.tick();
    assert_eq!(rig.fake.spawns(), 0, "the tick only queues");
    rig.tree.start_pending();
    assert_eq!(rig.fake.spawns(), 1);
    assert_eq!(rig.read("x", "status"), "running\n");
}

#[test]
fn a_reused_name_gets_new_inodes() {
    let rig = Rig::new();
    let first = rig.run("x", "true");
    rig.fake.finish("x", 0);
    rig.tree.rmdir(names::CMD, b"x").expect("removed");
    let second = rig.run("x", "true");
    assert_ne!(first, second);
}

// ----- the files of a command ----------------------------------------------------------

#[test]
fn a_running_command_shows_pid_and_kill_and_a_stopped_one_its_exit_code() {
    let rig = Rig::new();
    let dir = rig.run("x", "make");
    let running = rig.ls(dir);
    assert!(running.contains(&"pid".to_string()));
    assert!(running.contains(&"kill".to_string()));
    assert!(!running.contains(&"exitcode".to_string()));
    assert_eq!(rig.read("x", "status"), "running\n");
    assert_eq!(rig.read("x", "pid"), format!("{NO_PID}\n"));
    assert_eq!(rig.read("x", "command"), "make");
    rig.fake.finish("x", 0);
    let stopped = rig.ls(dir);
    assert!(!stopped.contains(&"pid".to_string()));
    assert!(!stopped.contains(&"kill".to_string()));
    assert_eq!(rig.read("x", "exitcode"), "0\n");
    assert_eq!(rig.read("x", "status"), "completed\n");
    assert_eq!(errno(rig.found(dir, "pid")), libc::ENOENT);
}

#[test]
fn a_failing_command_is_an_error() {
    let rig = Rig::new();
    rig.run("x", "false");
    rig.fake.finish("x", 3);
    assert_eq!(rig.read("x", "status"), "error\n");
    assert_eq!(rig.read("x", "exitcode"), "3\n");
    let result: serde_json::Value =
        serde_json::from_str(&rig.read("x", "result.json")).expect("JSON");
    assert_eq!(result["exitcode"], 3);
}

#[test]
fn wait_blocks_while_it_runs_then_answers_its_status_word() {
    let rig = Rig::new();
    let dir = rig.run("x", "sleep 9");
    let wait = rig.found(dir, "wait").expect("wait").ino;
    let timed_out = rig.tree.open(wait, R).expect("open").fh;
    assert!(matches!(
        rig.tree.read(timed_out, 0, 4096),
        Ok(Read::Pending { .. })
    ));
    assert_eq!(rig.tree.read_timed_out(timed_out, 0, 4096), b"running\n");
    let fh = rig.tree.open(wait, R).expect("open").fh;
    assert!(matches!(
        rig.tree.read(fh, 0, 4096),
        Ok(Read::Pending { .. })
    ));
    rig.fake.finish("x", 0);
    match rig.tree.read(fh, 0, 4096).expect("read") {
        Read::Data(bytes) => assert_eq!(bytes, b"completed\n"),
        Read::Pending { .. } | Read::Later => panic!("still waiting after the end"),
    }
    rig.tree.release(fh);
    rig.tree.release(timed_out);
}

#[test]
fn output_grows_as_the_command_prints() {
    let rig = Rig::new();
    let dir = rig.run("x", "echo");
    let stdout = rig.found(dir, "stdout").expect("stdout").ino;
    assert_eq!(rig.tree.getattr(stdout, None).expect("attr").size, 0);
    rig.fake.print("x", b"hello\n");
    assert_eq!(rig.tree.getattr(stdout, None).expect("attr").size, 6);
    assert_eq!(rig.read("x", "stdout"), "hello\n");
    assert_eq!(rig.read("x", "output"), "hello\n");
    assert_eq!(rig.read("x", "stderr"), "");
}

#[test]
fn files_under_a_command_open_only_as_they_are_meant() {
    let rig = Rig::new();
    let dir = rig.run("x", "true");
    let kill = rig.found(dir, "kill").expect("kill").ino;
    let status = rig.found(dir, "status").expect("status").ino;
    assert_eq!(errno(rig.tree.open(kill, R)), libc::EACCES);
    assert_eq!(errno(rig.tree.open(status, W)), libc::EACCES);
    assert_eq!(errno(rig.tree.open(dir, R)), libc::EISDIR);
    assert_eq!(errno(rig.tree.open(names::ROOT_INDEX, W)), libc::EACCES);
    assert_eq!(rig.tree.getattr(kill, None).expect("attr").perm, 0o200);
}

#[test]
fn only_a_draft_open_for_writing_hears_its_closes() {
    let rig = Rig::new();
    let (attr, opened) = rig.tree.create(names::CTL, b"d", W).expect("created");
    assert!(opened.flush, "a new draft checks its text at every close");
    assert!(!rig.tree.open(attr.ino, R).expect("read").flush);
    rig.tree.release(opened.fh);
    let dir = rig.run("x", "sleep 1");
    for name in ["wait", "status", "output", "stdout", "follow", "kill"] {
        let ino = rig.found(dir, name).expect(name).ino;
        let mode = if name == "kill" { W } else { R };
        assert!(!rig.tree.open(ino, mode).expect(name).flush, "{name}");
    }
    assert!(!rig.tree.open(names::ROOT_INDEX, R).expect("index").flush);
}

#[test]
fn a_removed_file_is_hidden_and_pins_its_command() {
    let rig = Rig::with(Duration::from_secs(3600), Duration::ZERO);
    let dir = rig.run("x", "true");
    rig.tree.unlink(dir, b"stderr").expect("removed");
    assert!(!rig.ls(dir).contains(&"stderr".to_string()));
    assert_eq!(errno(rig.found(dir, "stderr")), libc::ENOENT);
    rig.fake.finish("x", 0);
    rig.tree.tick();
    assert!(
        rig.found(names::CMD, "x").is_ok(),
        "pinned: it does not expire"
    );
}

#[test]
fn a_pin_is_kept_in_the_record_and_restored_with_the_files_removed() {
    let rig = Rig::with(Duration::from_secs(3600), Duration::ZERO);
    let dir = rig.run("x", "true");
    rig.tree.unlink(dir, b"stderr").expect("removed");
    rig.fake.finish("x", 0);
    rig.fake.spool.sync();
    let record: serde_json::Value = serde_json::from_slice(
        &std::fs::read(rig.fake.job("x").store().dir().join("meta.json")).expect("a record"),
    )
    .expect("JSON");
    assert_eq!(
        record["marks"],
        serde_json::json!({"pinned": true, "removed": ["stderr"]}),
        "{record}"
    );

    // Brought back: refused commands, one pinned (a file name this version does not
    // know is left out), one not.
    let comeback = |name: &str, marks: serde_json::Value| {
        let store = rig
            .fake
            .spool
            .keep_record(name, b"sudo x", serde_json::json!({"name": name}));
        Comeback {
            name: name.to_string(),
            text: b"sudo x".to_vec(),
            created: SystemTime::now(),
            last_read: SystemTime::now(),
            returning: Returning::Denied {
                reason: "denied".to_string(),
                store,
            },
            marks: marks.as_object().expect("marks are an object").clone(),
        }
    };
    let restored = rig.tree.restore(
        vec![
            comeback(
                "kept",
                serde_json::json!({"pinned": true, "removed": ["reason", "no-such-file"]}),
            ),
            comeback("loose", serde_json::json!({})),
        ],
        &|line| panic!("{line}"),
    );
    assert_eq!(restored, 2);
    let kept = rig.command("kept");
    assert_eq!(rig.ls(kept), ["command", "status"]);
    rig.tree.tick();
    assert!(
        rig.found(names::CMD, "kept").is_ok(),
        "pinned: it does not expire"
    );
    assert_eq!(errno(rig.found(names::CMD, "loose")), libc::ENOENT);
}

/// `rm -r cmd/x` as GNU rm does it, as process `pid`: list the directory, remove each
/// file listed in turn, and skip the `rmdir` when a removal fails. `before` runs just
/// before rm comes to the file it names. Returns the files whose removal failed.
fn rm_r(rig: &Rig, pid: u32, dir: u64, name: &str, before: (&str, &dyn Fn())) -> Vec<String> {
    let mut failed = Vec::new();
    for file in rig.ls(dir) {
        if file == before.0 {
            before.1();
        }
        // The kernel looks a name up before it sends the unlink.
        match rig.tree.lookup_as(dir, file.as_bytes(), pid) {
            Ok(Lookup::Found(_)) => rig
                .tree
                .unlink_as(dir, file.as_bytes(), pid)
                .expect("removed"),
            Ok(Lookup::Later(later)) => panic!("lookup of {file} waits ({later:?})"),
            Err(e) => {
                assert_eq!(e.errno, libc::ENOENT, "{file}");
                failed.push(file);
            }
        }
    }
    if failed.is_empty() {
        rig.tree
            .rmdir(names::CMD, name.as_bytes())
            .expect("removed");
    }
    failed
}

#[test]
fn an_rm_r_that_the_end_of_its_command_overtakes_still_removes_it() {
    let rig = Rig::new();
    let dir = rig.run("x", "sleep 100");
    // The command ends after rm listed it and removed `command` and `status`: `pid` and
    // `kill` went, but rm, which removes the command's files, still finds them. Nobody
    // else does.
    let stops = || {
        rig.fake.finish("x", 0);
        let listed = rig.ls(dir);
        assert!(!listed.contains(&"pid".to_string()), "{listed:?}");
        assert!(listed.contains(&"exitcode".to_string()), "{listed:?}");
        assert_eq!(errno(rig.found(dir, "pid")), libc::ENOENT);
        assert_eq!(errno(rig.tree.lookup_as(dir, b"kill", 2)), libc::ENOENT);
    };
    assert!(rm_r(&rig, 1, dir, "x", ("pid", &stops)).is_empty());
    assert_eq!(errno(rig.lookup(names::CMD, "x")), libc::ENOENT);

    // rm -r of a command that runs throughout, or that stopped before the listing,
    // removes it.
    for (name, stops) in [("running", false), ("stopped", true)] {
        let dir = rig.run(name, "sleep 100");
        if stops {
            rig.fake.finish(name, 0);
        }
        assert!(rm_r(&rig, 1, dir, name, ("", &|| ())).is_empty());
        assert_eq!(errno(rig.lookup(names::CMD, name)), libc::ENOENT);
    }

    // Callers from another pid namespace all come as pid 0: none of them is taken for
    // the one removing the command's files.
    let dir = rig.run("outside", "sleep 100");
    rig.tree.unlink_as(dir, b"command", 0).expect("removed");
    rig.fake.finish("outside", 0);
    assert_eq!(errno(rig.tree.lookup_as(dir, b"pid", 0)), libc::ENOENT);
}

#[test]
fn what_a_removal_the_end_overtook_leaves_is_not_pinned() {
    let rig = Rig::with(Duration::from_secs(3600), Duration::ZERO);
    let dir = rig.run("x", "sleep 100");
    // One process removed `command` and `status`; another lists the rest, the command
    // ends, and the second finds `pid` and `kill` gone and leaves the directory.
    for file in ["command", "status"] {
        rig.tree
            .unlink_as(dir, file.as_bytes(), 1)
            .expect("removed");
    }
    let stops = || rig.fake.finish("x", 0);
    assert_eq!(rm_r(&rig, 2, dir, "x", ("pid", &stops)), ["pid", "kill"]);
    assert_eq!(rig.ls(dir), ["exitcode"]);
    // Nothing it kept is left: the pin of those removals does not hold it.
    rig.tree.tick();
    assert_eq!(errno(rig.lookup(names::CMD, "x")), libc::ENOENT);

    // A stopped command with one lasting file left stays pinned.
    let dir = rig.run("kept", "true");
    rig.fake.finish("kept", 0);
    for file in rig.ls(dir).iter().filter(|file| *file != "stdout") {
        rig.tree.unlink(dir, file.as_bytes()).expect("removed");
    }
    assert_eq!(rig.ls(dir), ["stdout"]);
    rig.tree.tick();
    assert!(
        rig.found(names::CMD, "kept").is_ok(),
        "pinned: it does not expire"
    );
}

#[test]
fn fixed_files_and_directories_cannot_be_removed() {
    let rig = Rig::new();
    rig.run("x", "true");
    assert_eq!(
        errno(rig.tree.unlink(names::ROOT, b"index.md")),
        libc::EPERM
    );
    assert_eq!(errno(rig.tree.unlink(names::CMD, b"x")), libc::EISDIR);
    assert_eq!(errno(rig.tree.unlink(names::CMD, b"nope")), libc::ENOENT);
    assert_eq!(errno(rig.tree.rmdir(names::ROOT, b"ctl")), libc::EPERM);
    assert_eq!(errno(rig.tree.rmdir(names::CMD, b"nope")), libc::ENOENT);
}

// ----- kill, removal and expiry ---------------------------------------------------------

#[test]
fn a_write_to_kill_stops_the_job() {
    let rig = Rig::new();
    let dir = rig.run("x", "sleep 9");
    let kill = rig.found(dir, "kill").expect("kill").ino;
    let fh = rig.tree.open(kill, W).expect("open").fh;
    assert!(matches!(
        rig.tree.write(fh, 0, b"stop\n"),
        Ok(Write::Done(5))
    ));
    rig.tree.release(fh);
    let kills = rig.fake.kills.lock();
    assert_eq!(kills.len(), 1);
    assert_eq!(kills[0].0, rig.fake.job("x").id());
    assert!(kills[0].1.contains("kill file"), "{}", kills[0].1);
}

/// The signals a command was sent, in order, and the reasons of the stops asked.
type Heard = (Vec<i32>, Vec<String>);

/// Opens `kill` of a fresh command, writes each of `writes` through that one handle,
/// closes it, and returns what was sent and the reasons of the stops.
fn through_kill(writes: &[&[u8]]) -> Heard {
    let rig = Rig::new();
    let dir = rig.run("x", "sleep 9");
    let id = rig.fake.job("x").id();
    let kill = rig.found(dir, "kill").expect("kill").ino;
    let fh = rig.tree.open(kill, W).expect("open").fh;
    for data in writes {
        match rig.tree.write(fh, 0, data) {
            Ok(Write::Done(n)) => assert_eq!(n as usize, data.len()),
            other => panic!("{data:?}: {other:?}"),
        }
    }
    rig.tree.release(fh);
    let signals = rig.fake.signals.lock();
    let kills = rig.fake.kills.lock();
    assert!(signals.iter().all(|&(job, _)| job == id));
    assert!(kills.iter().all(|(job, _)| *job == id));
    (
        signals.iter().map(|&(_, s)| s).collect(),
        kills.iter().map(|(_, why)| why.clone()).collect(),
    )
}

const STOPPED: &str = "killed: a write to its kill file stopped it";

#[test]
fn a_signal_name_in_any_case_or_a_number_in_kill_sends_that_signal() {
    for (text, signal) in [
        (&b"INT\n"[..], libc::SIGINT),
        (b"int\n", libc::SIGINT),
        (b"Int", libc::SIGINT),
        (b"sigint\r\n", libc::SIGINT),
        (b"SigInt", libc::SIGINT),
        (b"  SIGUSR1 \n", libc::SIGUSR1),
        (b"usr1\n", libc::SIGUSR1),
        (b"SigQuit\n", libc::SIGQUIT),
        (b"15\n", libc::SIGTERM),
        (b"WINCH\n", libc::SIGWINCH),
        (b"alrm\n", libc::SIGALRM),
        (b"14\n", 14),
        (b"28\n", 28),
        (b"STOP\n", libc::SIGSTOP),
        (b"sigstop\n", libc::SIGSTOP),
        (b"cont", libc::SIGCONT),
        (b"kill\n", libc::SIGKILL),
    ] {
        let label = String::from_utf8_lossy(text);
        assert_eq!(through_kill(&[text]), (vec![signal], vec![]), "{label}");
    }
    #[cfg(target_os = "linux")]
    assert_eq!(
        through_kill(&[b"34\n"]),
        (vec![34], vec![]),
        "a real-time signal by number"
    );
}

#[test]
fn lines_go_in_order_and_blank_lines_add_no_stop() {
    let (int, hup, kill) = (libc::SIGINT, libc::SIGHUP, libc::SIGKILL);
    // One write, or one write a line as bash's printf makes them: the same.
    assert_eq!(through_kill(&[b"INT\n\nHUP\n"]), (vec![int, hup], vec![]));
    assert_eq!(
        through_kill(&[b"INT\n", b"\n", b"HUP\n"]),
        (vec![int, hup], vec![])
    );
    assert_eq!(
        through_kill(&[b"\n", b"INT\n", b"\r\n", b"KILL\n", b"\n"]),
        (vec![int, kill], vec![])
    );
}

#[test]
fn stop_a_blank_write_or_a_bare_close_stops_the_command() {
    let stopped = (vec![], vec![STOPPED.to_string()]);
    for writes in [
        &[&b"stop\n"[..]][..],
        &[b"Stop"],
        &[b" stop \r\n"],
        &[b"\n"],
        &[b"\n\n \n"],
        &[b"\n", b"\n"],
        &[b""],
        &[],
    ] {
        assert_eq!(through_kill(writes), stopped, "{writes:?}");
    }
}

#[test]
fn a_word_that_names_no_signal_stops_the_command_and_the_reason_names_it() {
    for (writes, sent, word) in [
        (&[&b"frob\n"[..]][..], vec![], "frob"),
        (&[b"SIGFOO"], vec![], "SIGFOO"),
        (&[b"0\n"], vec![], "0"),
        (&[b"999\n"], vec![], "999"),
        (&[b"INTT\n"], vec![], "INTT"),
        // Signals before it go out; nothing after it does, in this write or a later one.
        (&[b"INT\nfrob\nHUP\n"], vec![libc::SIGINT], "frob"),
        (&[b"INT\n", b"frob\n", b"HUP\n"], vec![libc::SIGINT], "frob"),
    ] {
        let why =
            format!("killed: a write to its kill file ('{word}' is no signal name) stopped it");
        assert_eq!(through_kill(writes), (sent, vec![why]), "{writes:?}");
    }
    // One stop a handle, whatever follows.
    assert_eq!(
        through_kill(&[b"stop\n", b"frob\n", b"INT\n"]),
        (vec![], vec![STOPPED.to_string()])
    );
}

#[test]
fn a_write_naming_too_many_signals_is_refused_whole() {
    let rig = Rig::new();
    let dir = rig.run("x", "sleep 9");
    let id = rig.fake.job("x").id();
    let kill = rig.found(dir, "kill").expect("kill").ino;
    let fh = rig.tree.open(kill, W).expect("open").fh;
    let many = "TERM\n".repeat(100_000);
    assert_eq!(errno(rig.tree.write(fh, 0, many.as_bytes())), libc::EINVAL);
    // As many as are allowed, the same one over and over included, are sent in turn.
    let most = "INT\n".repeat(16);
    assert!(matches!(
        rig.tree.write(fh, 0, most.as_bytes()),
        Ok(Write::Done(64))
    ));
    assert_eq!(
        errno(rig.tree.write(fh, 0, b"INT\n".repeat(17).as_slice())),
        libc::EINVAL
    );
    rig.tree.release(fh);
    assert_eq!(*rig.fake.signals.lock(), vec![(id, libc::SIGINT); 16]);
    assert!(
        rig.fake.kills.lock().is_empty(),
        "a refused write stops nothing"
    );
}

#[test]
fn removing_a_command_stops_it_and_readers_keep_reading() {
    let rig = Rig::new();
    let dir = rig.run("x", "sleep 9");
    rig.fake.print("x", b"kept\n");
    let stdout = rig.found(dir, "stdout").expect("stdout").ino;
    let reader = rig.tree.open(stdout, R).expect("open").fh;
    rig.tree.rmdir(names::CMD, b"x").expect("removed");
    assert_eq!(rig.fake.kills.lock().len(), 1);
    assert!(!rig.ls(names::CMD).contains(&"x".to_string()));
    assert_eq!(errno(rig.lookup(names::CMD, "x")), libc::ENOENT);
    match rig.tree.read(reader, 0, 100).expect("still readable") {
        Read::Data(bytes) => assert_eq!(bytes, b"kept\n"),
        Read::Pending { .. } | Read::Later => panic!("stdout never waits"),
    }
    rig.tree.release(reader);
    assert_eq!(errno(rig.tree.getattr(stdout, None)), libc::ENOENT);
}

#[test]
fn a_command_removed_while_starting_is_stopped_once_spawned() {
    let rig = Rig::new();
    rig.submit("x", "sleep 9").expect("taken");
    rig.ls(names::CMD);
    rig.tree
        .rmdir(names::CMD, b"x")
        .expect("removed before its spawn");
    assert!(rig.fake.kills.lock().is_empty(), "nothing to stop yet");
    rig.tree.start_pending();
    let kills = rig.fake.kills.lock();
    assert_eq!(kills.len(), 1, "stopped as soon as it exists");
    assert_eq!(kills[0].0, rig.fake.job("x").id());
}

#[test]
fn a_stopped_command_expires_after_its_keep_time_and_a_running_one_does_not() {
    let rig = Rig::with(Duration::from_secs(3600), Duration::ZERO);
    rig.run("done", "true");
    rig.run("busy", "sleep 9");
    rig.fake.finish("done", 0);
    rig.tree.tick();
    assert_eq!(errno(rig.lookup(names::CMD, "done")), libc::ENOENT);
    assert!(rig.found(names::CMD, "busy").is_ok());
    assert!(
        rig.fake
            .kills
            .lock()
            .iter()
            .all(|(id, _)| *id != rig.fake.job("busy").id()),
        "expiry stops nothing that runs"
    );
}

#[test]
fn the_frequent_tick_looks_at_drafts_and_inputs_and_leaves_expiry_to_the_whole_one() {
    let rig = Rig::with(Duration::ZERO, Duration::ZERO);
    rig.run("done", "true");
    rig.fake.finish("done", 0);
    rig.submit("due", "echo due").expect("accepted");
    rig.submit("forgot.tmp", "echo x").expect("accepted");
    rig.tree.tick_drafts();
    rig.tree.start_pending();
    // Drafts: the settled one started, the abandoned one freed.
    assert_eq!(rig.fake.spawns(), 2);
    assert!(rig.found(names::CMD, "due").is_ok());
    assert_eq!(errno(rig.lookup(names::CTL, "forgot.tmp")), libc::ENOENT);
    // Commands: the stopped one waits for the whole tick.
    assert!(rig.found(names::CMD, "done").is_ok());
    rig.tree.tick();
    assert_eq!(errno(rig.lookup(names::CMD, "done")), libc::ENOENT);
}

#[test]
fn commands_with_an_input_are_kept_for_the_tick_until_they_stop() {
    let rig = Rig::with(Duration::from_secs(3600), Duration::from_secs(3600));
    let inputs = || rig.tree.state.lock().inputs.len();
    rig.run("plain", "true");
    rig.run("fed", "#terminalfs stdin\ncat");
    assert_eq!(inputs(), 1, "only the command with a stdin");
    rig.tree.tick_drafts();
    assert_eq!(inputs(), 1, "kept while it runs");
    rig.fake.finish("fed", 0);
    rig.tree.tick_drafts();
    assert_eq!(inputs(), 0, "dropped once it stopped");
}

#[test]
fn an_open_file_keeps_its_command_from_expiring() {
    let rig = Rig::with(Duration::from_secs(3600), Duration::ZERO);
    let dir = rig.run("x", "true");
    rig.fake.finish("x", 0);
    let status = rig.found(dir, "status").expect("status").ino;
    let fh = rig.tree.open(status, R).expect("open").fh;
    rig.tree.tick();
    assert!(rig.found(names::CMD, "x").is_ok(), "a reader holds it");
    rig.tree.release(fh);
    rig.tree.tick();
    assert_eq!(errno(rig.lookup(names::CMD, "x")), libc::ENOENT);
}

#[test]
fn a_denied_command_expires_too() {
    let rig = Rig::with(Duration::from_secs(3600), Duration::ZERO);
    rig.submit("bad", "sudo x").expect_err("refused");
    rig.tree.tick();
    assert_eq!(errno(rig.lookup(names::CMD, "bad")), libc::ENOENT);
}

// ----- pages and attributes ---------------------------------------------------------------

#[test]
fn the_command_index_lists_commands_with_their_status() {
    let rig = Rig::new();
    rig.run("ok", "true");
    rig.fake.finish("ok", 0);
    rig.submit("bad", "sudo x").expect_err("refused");
    let page = rig
        .cat(names::CMD_INDEX)
        .expect("read")
        .expect("a page never waits");
    assert!(page.contains("[ok](ok/status) | completed"), "{page}");
    assert!(page.contains("[bad](bad/status) | denied"), "{page}");
}

#[test]
fn opening_the_command_index_queues_decided_drafts() {
    let rig = Rig::new();
    rig.submit("x", "true").expect("taken");
    let fh = rig.tree.open(names::CMD_INDEX, R).expect("open");
    rig.tree.release(fh.fh);
    assert!(matches!(
        rig.lookup(names::CMD, "x"),
        Ok(Lookup::Later(Later::Start))
    ));
}

#[test]
fn the_command_index_waits_for_a_draft_whose_last_close_is_on_its_way() {
    let rig = Rig::new();
    let writer = rig.create("x").expect("created");
    rig.write(writer, 0, "true").expect("written");
    rig.tree.flush(writer).expect("the close's flush");
    // `cat cmd/index.md` right after the writer's close: the kernel has not sent the
    // writer's RELEASE yet.
    let page = rig.tree.open(names::CMD_INDEX, R).expect("open").fh;
    assert!(matches!(rig.tree.read(page, 0, 4096), Ok(Read::Later)));
    rig.tree.release(writer);
    let Ok(Read::Data(bytes)) = rig.tree.read(page, 0, 4096) else {
        panic!("the page is rendered once the draft is decided");
    };
    let text = String::from_utf8_lossy(&bytes);
    assert!(
        text.contains("count: 1") && text.contains("[x](x/status)"),
        "{text}"
    );
    // Rendered once: later reads of the handle go on in the same text.
    let Ok(Read::Data(rest)) = rig.tree.read(page, bytes.len() as u64, 4096) else {
        panic!("a rendered page never waits");
    };
    assert!(rest.is_empty());
    rig.tree.release(page);

    // A writer that never lets go: at the deadline the page is taken as it is.
    let held = rig.create("y").expect("created");
    rig.write(held, 0, "true").expect("written");
    rig.tree.flush(held).expect("a flush");
    let page = rig.tree.open(names::CMD_INDEX, R).expect("open").fh;
    assert!(matches!(rig.tree.read(page, 0, 4096), Ok(Read::Later)));
    let text = String::from_utf8(rig.tree.read_timed_out(page, 0, 4096)).unwrap();
    assert!(
        text.contains("[x](x/status)") && !text.contains("[y]"),
        "{text}"
    );
    rig.tree.release(page);
    // Once its RELEASE is overdue, such a writer (one that closed a copy of its
    // descriptor and writes on) holds up no reader of the page.
    std::thread::sleep(super::RELEASE_WINDOW + Duration::from_millis(50));
    let page = rig.tree.open(names::CMD_INDEX, R).expect("open").fh;
    assert!(matches!(rig.tree.read(page, 0, 4096), Ok(Read::Data(_))));
    rig.tree.release(page);
    rig.tree.release(held);

    // A listing of cmd/ opened in the same moment waits for the draft too.
    let writer = rig.create("z").expect("created");
    rig.write(writer, 0, "true").expect("written");
    rig.tree.flush(writer).expect("the close's flush");
    let dir = rig.tree.opendir(names::CMD).expect("opendir");
    assert!(matches!(rig.tree.readdir(dir, 0), Ok(None)));
    rig.tree.release(writer);
    let listed = rig.tree.readdir(dir, 0).expect("readdir").expect("settled");
    assert!(listed.iter().any(|(_, _, name)| name == "z"), "{listed:?}");
    rig.tree.releasedir(dir);
}

#[test]
fn every_slot_named_in_a_listing_resolves() {
    let rig = Rig::new();
    let dir = rig.run("x", "true");
    for name in rig.ls(dir) {
        let slot = Slot::from_name(&name).expect("a known slot");
        let attr = rig.found(dir, &name).expect("found");
        assert_eq!(
            attr.ino,
            names::file_ino(
                names::decode(dir).map_or(0, |d| match d {
                    names::Dynamic::Entry(id) => id,
                    names::Dynamic::File(id, _) => id,
                }),
                slot
            )
        );
    }
}

#[test]
fn inodes_that_are_nothing_say_so() {
    let rig = Rig::new();
    assert_eq!(
        errno(rig.tree.getattr(names::entry_ino(4242), None)),
        libc::ENOENT
    );
    assert_eq!(errno(rig.tree.getattr(999_999, None)), libc::ENOENT);
    assert_eq!(errno(rig.tree.read(77, 0, 10)), libc::EBADF);
    assert_eq!(errno(rig.lookup(names::ROOT, "nope")), libc::ENOENT);
}

/// A draft that ends without a start (refused, removed, or closed empty) has the
/// ticker woken, so that the file it readied for a start is let go of at once, not a
/// tick later: an open file keeps a plain `fusermount3 -u` from unmounting.
#[test]
fn a_draft_that_ends_without_a_start_has_the_ticker_let_go_of_what_it_readied() {
    let rig = Rig::new();
    let wanted = Arc::new(AtomicU64::new(0));
    let count = wanted.clone();
    rig.tree.set_hooks(Hooks {
        changed: Box::new(|| {}),
        start_wanted: Box::new(move || {
            count.fetch_add(1, Ordering::SeqCst);
        }),
    });
    let fh = rig.create("refused").expect("a draft");
    rig.write(fh, 0, "sudo id")
        .expect_err("the deny list refuses it");
    let before = wanted.load(Ordering::SeqCst);
    rig.tree.release(fh);
    assert!(
        rig.found(names::CMD, "refused").is_ok(),
        "refused: a denied command now"
    );
    assert!(wanted.load(Ordering::SeqCst) > before, "after a refusal");

    let fh = rig.create("removed").expect("a draft");
    rig.write(fh, 0, "true").expect("written");
    let before = wanted.load(Ordering::SeqCst);
    rig.tree
        .unlink(names::CTL, b"removed")
        .expect("a draft can be removed");
    assert!(wanted.load(Ordering::SeqCst) > before, "after a removal");
    rig.tree.release(fh);

    let fh = rig.create("empty").expect("a draft");
    let before = wanted.load(Ordering::SeqCst);
    rig.tree.release(fh);
    assert!(
        wanted.load(Ordering::SeqCst) > before,
        "after an empty close"
    );
}

/// What an open handle reads from `offset` to the end, now.
fn read_to_end(rig: &Rig, fh: u64, offset: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        match rig.tree.read(fh, offset + out.len() as u64, 1 << 20) {
            Ok(Read::Data(bytes)) if bytes.is_empty() => return out,
            Ok(Read::Data(bytes)) => out.extend_from_slice(&bytes),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn bytes_dropped_under_an_open_handle_read_as_a_notice_never_as_nul() {
    let rig = Rig::new();
    let dir = rig.run("loud", "loud");
    let ino = rig.found(dir, "stdout").expect("stdout").ino;
    let fh = rig.tree.open(ino, OpenMode::default()).expect("open").fh;
    // 64 KiB per stream: a head of 16 KiB and a ring of 48 KiB. 60 bytes past the head
    // are dropped before the handle reads them: too few for the whole notice line, which
    // takes exactly 100.
    rig.fake.print("loud", &[b'a'; 16384 + 60]);
    rig.fake.print("loud", &[b'b'; 49152]);
    let read = read_to_end(&rig, fh, 0);
    let notice = b"\n[terminalfs: 60 bytes dropped]\n";
    let mut expected = vec![b'a'; 16384];
    expected.extend_from_slice(notice);
    expected.resize(16444, b'\n');
    expected.extend_from_slice(&[b'b'; 49152]);
    let at = read.iter().zip(&expected).position(|(a, b)| a != b);
    assert_eq!(
        (read.len(), at),
        (expected.len(), None),
        "offsets stay true; the notice stands first: {:?}",
        at.map(|at| String::from_utf8_lossy(
            &read[at.saturating_sub(40)..(at + 80).min(read.len())]
        ))
    );
    // The handle shows the same bytes when it reads them again.
    assert_eq!(read_to_end(&rig, fh, 16000), &expected[16000..]);
    // Bytes it had read go too: read again, five of them are a notice cut to fit.
    rig.fake.print("loud", b"ccccc");
    let again = read_to_end(&rig, fh, 16444);
    assert_eq!(&again[..5], b"\n[te\n");
    assert_eq!(&again[5..], &[&[b'b'; 49147][..], b"ccccc"].concat()[..]);
    // A hole long enough gets the whole line, then newlines to its end.
    rig.fake.print("loud", &[b'd'; 40000]);
    let far = read_to_end(&rig, fh, 20000);
    let line = b"\n[terminalfs: 36449 bytes were dropped here after this file was opened; \
                 blank lines hold their place]\n";
    assert_eq!(&far[..line.len()], line);
    assert!(far[line.len()..36449].iter().all(|b| *b == b'\n'));
    assert_eq!(far.len(), 16384 + 60 + 49152 + 5 + 40000 - 20000);
    assert_eq!(
        &far[36449..],
        &[&[b'b'; 9147][..], b"ccccc", &[b'd'; 40000]].concat()[..]
    );
    assert!(!far.contains(&0));
    rig.tree.release(fh);

    // Files gone (an evicted command read in the moment before the tree removes it):
    // every byte a handle cannot read is a hole with its notice, none of it NUL.
    rig.fake.finish("loud", 0);
    // Only the stream's file: the spool's worker may still be writing the record.
    let stdout = rig.fake.job("loud").store().dir().join("stdout");
    std::fs::remove_file(stdout).expect("the file goes");
    let ino = rig.found(dir, "stdout").expect("stdout").ino;
    let fh = rig.tree.open(ino, OpenMode::default()).expect("open").fh;
    let read = read_to_end(&rig, fh, 0);
    let size = rig.tree.getattr(ino, Some(fh)).expect("attr").size;
    assert_eq!(read.len() as u64, size);
    assert!(!read.contains(&0));
    let text = String::from_utf8_lossy(&read);
    assert!(
        text.starts_with("[terminalfs: 16384 bytes were dropped here"),
        "{text:.200}"
    );
    assert_eq!(
        text.matches("bytes were dropped here after this file was opened")
            .count(),
        2
    );
    rig.tree.release(fh);
}

#[test]
fn only_blocking_files_have_attributes_the_kernel_may_keep() {
    let rig = Rig::new();
    let dir = rig.run("x", "true");
    for file in ["wait", "follow", "kill"] {
        let attr = rig.found(dir, file).unwrap();
        assert!(attr.steady, "{file}");
        assert_eq!(attr.size, 0, "{file}");
    }
    rig.fake.finish("x", 0);
    // Growing and rendered files change size: their attributes are asked for each time.
    for file in ["stdout", "output", "status", "result.json", "command"] {
        assert!(!rig.found(dir, file).unwrap().steady, "{file}");
    }
    // A blocking file reads the same once the command has ended.
    assert_eq!(rig.found(dir, "wait").unwrap().size, 0);
    assert!(rig.found(dir, "wait").unwrap().steady);
}

#[test]
fn what_changes_when_a_command_stops_takes_that_time() {
    let rig = Rig::new();
    let dir = rig.run("x", "true");
    let attr = |file: &str| rig.found(dir, file).unwrap();
    let written = attr("command").mtime;
    let blocking: Vec<Attr> = ["wait", "follow", "kill"].map(attr).to_vec();
    assert_eq!(attr("status").mtime, written);
    assert_eq!(rig.tree.getattr(dir, None).unwrap().mtime, written);
    let before_stop = SystemTime::now();
    assert!(before_stop > written);
    rig.fake.finish("x", 0);
    for file in ["status", "exitcode", "result.json"] {
        let mtime = attr(file).mtime;
        assert!(mtime >= before_stop, "{file}: {mtime:?} < {before_stop:?}");
    }
    // Streams change only as they grow: these never did.
    for file in ["stdout", "stderr", "output"] {
        let mtime = attr(file).mtime;
        assert!(mtime < before_stop, "{file}: {mtime:?} >= {before_stop:?}");
    }
    assert!(rig.tree.getattr(dir, None).unwrap().mtime >= before_stop);
    // The text never changes, and blocking files keep the attributes the kernel holds.
    assert_eq!(attr("command").mtime, written);
    for (file, before) in ["wait", "follow"].iter().zip(&blocking) {
        let after = attr(file);
        assert_eq!(
            (after.mtime, after.size),
            (before.mtime, before.size),
            "{file}"
        );
        assert!(after.steady, "{file}");
    }
    // Once stopped, the times hold still.
    let status = attr("status").mtime;
    assert_eq!(attr("result.json").mtime, status);
    assert_eq!(attr("status").mtime, status);
}

#[test]
fn a_stream_has_the_time_it_last_grew() {
    let rig = Rig::new();
    let dir = rig.run("x", "true");
    let attr = |file: &str| rig.found(dir, file).unwrap().mtime;
    let started = rig.fake.job("x").life().started_at().unwrap();
    for file in ["stdout", "stderr", "output"] {
        assert_eq!(attr(file), started, "{file}");
    }
    let before = SystemTime::now();
    rig.fake.print("x", b"once\n");
    let printed = attr("stdout");
    assert!(printed >= before, "{printed:?} < {before:?}");
    assert_eq!(attr("output"), printed);
    assert_eq!(attr("stderr"), started, "stderr never grew");
    // Nothing more written: nothing moves, while it runs or once it ended.
    assert_eq!(attr("stdout"), printed);
    rig.fake.finish("x", 0);
    assert_eq!(attr("stdout"), printed);
    assert_eq!(attr("output"), printed);
    assert_eq!(attr("stderr"), started);
}

#[test]
fn events_have_the_size_of_the_feed_the_caller_opened() {
    let rig = Rig::new();
    rig.run("a", "true");
    rig.fake.finish("a", 0);
    let fh = rig.open_events(7);
    let size = |caller, fh| rig.tree.getattr_as(names::EVENTS, fh, caller).unwrap().size;
    let first = size(7, None);
    assert!(first > 0);
    assert_eq!(size(8, None), 0, "another thread has no feed here");
    assert_eq!(size(0, Some(fh)), first, "the handle's own feed");
    let data = |offset, len| match rig.tree.read(fh, offset, len).unwrap() {
        Read::Data(bytes) => String::from_utf8(bytes).unwrap(),
        _ => panic!("a feed with bytes made answers at once"),
    };
    // Read from the end back, as `tail -n` does: the bytes before stay readable.
    let end = data(first - 10, 10);
    let whole = data(0, first as u32);
    assert!(whole.ends_with(&end), "{whole:?} {end:?}");
    assert!(whole.ends_with(" a completed 0\n"), "{whole:?}");
    // A change grows the size by its line, which a read of the growth gets at once.
    rig.run("b", "sleep 1");
    let grown = size(7, None);
    assert!(grown > first);
    assert!(data(first, (grown - first) as u32).ends_with(" b running\n"));
    assert_eq!(size(7, None), grown, "nothing new");
    rig.tree.release(fh);
    assert_eq!(size(7, None), 0, "released");
}

#[test]
fn a_feed_only_stated_stops_growing_at_its_bound_and_loses_nothing() {
    let rig = Rig::new();
    let fh = rig.open_events(7);
    // Never read, the feed's size is all it holds.
    let size = || rig.tree.getattr_as(names::EVENTS, None, 7).unwrap().size;
    let bound = events::HELD_AT_MOST as u64;
    let mut largest = 0;
    // Three lines of about 100 bytes for each: some 450 KB if nothing bounded them.
    let name = |i: usize| format!("{i:0>64}");
    for i in 0..1500 {
        rig.run(&name(i), "true");
        largest = largest.max(size());
        rig.fake.finish(&name(i), 0);
        largest = largest.max(size());
        rig.tree.rmdir(names::CMD, name(i).as_bytes()).unwrap();
        largest = largest.max(size());
    }
    assert!(largest >= bound, "{largest}");
    assert!(
        largest < bound + 1024,
        "past the bound by a look at most: {largest}"
    );
    rig.run("last", "sleep 9");
    assert_eq!(size(), largest, "no line made for the size past the bound");
    // A read takes every line made, then the changes since, as one look sees them.
    let mut text = Vec::new();
    while let Read::Data(bytes) = rig.tree.read(fh, text.len() as u64, 1 << 20).unwrap() {
        assert!(!bytes.is_empty(), "the feed had not been read to its end");
        text.extend_from_slice(&bytes);
    }
    let text = String::from_utf8(text).unwrap();
    assert!(text.len() as u64 > largest);
    assert!(
        text.ends_with(" last running\n"),
        "{}",
        &text[text.len() - 200..]
    );
    let lines: Vec<&str> = text.lines().collect();
    for (i, said) in ["running", "completed 0", "removed"].iter().enumerate() {
        assert!(
            lines[i].ends_with(&format!(" {} {said}", name(0))),
            "{}",
            lines[i]
        );
    }
    // The lines made before the bound come whole and in order.
    let held = &text[..largest as usize];
    assert!(held.ends_with('\n'));
    for (i, line) in held.lines().enumerate() {
        let command = name(i / 3);
        assert!(line.contains(&format!(" {command} ")), "line {i}: {line}");
    }
    rig.tree.release(fh);
}

/// What a feed has made past `offset` up to its size now (read without waiting), as
/// lines; `offset` moves past them.
fn feed_lines(rig: &Rig, fh: u64, offset: &mut u64) -> Vec<String> {
    let size = rig
        .tree
        .getattr_as(names::EVENTS, Some(fh), 0)
        .unwrap()
        .size;
    if size == *offset {
        return Vec::new();
    }
    let Read::Data(bytes) = rig.tree.read(fh, *offset, (size - *offset) as u32).unwrap() else {
        panic!("a feed with bytes made answers at once");
    };
    *offset += bytes.len() as u64;
    let text = String::from_utf8(bytes).unwrap();
    text.lines().map(str::to_string).collect()
}

/// The `<name> <word>` of each line, and whether each name's lines are in time order.
fn words_in_order(lines: &[String]) -> Vec<String> {
    let mut last: std::collections::BTreeMap<&str, &str> = Default::default();
    let mut words = Vec::new();
    for line in lines {
        let (time, rest) = line.split_once(' ').unwrap();
        let name = rest.split(' ').next().unwrap();
        if let Some(before) = last.insert(name, time) {
            assert!(before <= time, "{name}: {lines:?}");
        }
        words.push(rest.to_string());
    }
    words
}

#[test]
fn a_feed_tells_every_change_made_between_two_reads() {
    let rig = Rig::new();
    let fh = rig.open_events(7);
    let mut offset = 0;
    assert_eq!(feed_lines(&rig, fh, &mut offset), Vec::<String>::new());
    // Started and ended between two reads: its start is told before its end.
    rig.run("a", "true");
    rig.fake.finish("a", 0);
    let lines = feed_lines(&rig, fh, &mut offset);
    assert_eq!(words_in_order(&lines), ["a running", "a completed 0"]);
    // Paused and resumed between two reads, by the driver or seen from outside.
    rig.run("b", "sleep 1");
    assert_eq!(
        words_in_order(&feed_lines(&rig, fh, &mut offset)),
        ["b running"]
    );
    let job = rig.fake.job("b");
    let sent = job.pauses_sent();
    assert!(job.observe_stopped(true, sent));
    assert!(job.observe_stopped(false, sent));
    let lines = feed_lines(&rig, fh, &mut offset);
    assert_eq!(words_in_order(&lines), ["b paused", "b running"]);
    // Twice more, then its end, all between two reads.
    for _ in 0..2 {
        assert!(job.observe_stopped(true, sent));
        assert!(job.observe_stopped(false, sent));
    }
    rig.fake.finish("b", 3);
    let lines = feed_lines(&rig, fh, &mut offset);
    assert_eq!(
        words_in_order(&lines),
        [
            "b paused",
            "b running",
            "b paused",
            "b running",
            "b error 3"
        ]
    );
    assert_eq!(feed_lines(&rig, fh, &mut offset), Vec::<String>::new());
    // A new open lists where each command stands, not how it got there.
    let listing = rig.open_events(8);
    let lines = feed_lines(&rig, listing, &mut 0);
    assert_eq!(words_in_order(&lines), ["a completed 0", "b error 3"]);
    rig.tree.release(listing);
    // A name given to a new command between two reads: the old one's removal first.
    rig.tree.rmdir(names::CMD, b"b").unwrap();
    rig.run("b", "sleep 1");
    assert_eq!(
        words_in_order(&feed_lines(&rig, fh, &mut offset)),
        ["b removed", "b running"]
    );
    rig.tree.release(fh);
}

/// With the state directory made slow on purpose (a stand-in that holds a loud
/// command's write to its files), `stat` of its files, a listing of its directory
/// and its `result.json` answer at once, showing what is on disk so far.
#[test]
fn stat_and_ls_of_a_loud_command_never_wait_for_the_disk() {
    let rig = Rig::new();
    let dir = rig.run("loud", "yes");
    let stdout = rig.found(dir, "stdout").expect("stdout").ino;
    let output = rig.found(dir, "output").expect("output").ino;
    let result = rig.found(dir, "result.json").expect("result.json").ino;
    rig.fake.print("loud", b"first\n");
    std::thread::scope(|scope| {
        // Let go when this closure ends, even by a failed assertion, so the writer
        // ends and the scope can join it.
        let hold = crate::spool::stall::hold(rig._dir.path());
        scope.spawn(|| rig.fake.print("loud", &[b'y'; 8192]));
        let deadline = Instant::now() + Duration::from_secs(30);
        while hold.waiting() == 0 {
            assert!(
                Instant::now() < deadline,
                "the write never reached the disk"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        let (done, answers) = crossbeam_channel::bounded(1);
        let rig = &rig;
        scope.spawn(move || {
            let sizes = (
                rig.tree.getattr(stdout, None).expect("stdout").size,
                rig.tree.getattr(output, None).expect("output").size,
            );
            let listed = rig.ls(dir).len();
            let shown = rig.cat(result).expect("result.json").expect("no wait");
            let _ = done.send((sizes, listed, shown));
        });
        let answered = answers.recv_timeout(Duration::from_secs(30));
        assert_eq!(hold.waiting(), 1, "the write still waits");
        let (sizes, listed, shown) = answered.expect("stat waited for the disk");
        assert_eq!(sizes, (6, 6), "bytes not yet on disk are not shown");
        assert!(listed > 5, "{listed}");
        let shown: serde_json::Value = serde_json::from_str(&shown).expect("JSON");
        assert_eq!(shown["stdout"]["bytes"], 6);
        drop(hold);
    });
    let stdout_size = rig.tree.getattr(stdout, None).expect("stdout").size;
    assert_eq!(stdout_size, 6 + 8192);
}
