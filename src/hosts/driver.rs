//! The connections to remote hosts, owned by the driver: one OpenSSH master per host
//! (`ssh -M -N` on a private control socket, with more masters when one carries its
//! `max_sessions`), started and reaped by one thread that lives as long as the driver,
//! so on Linux a crash takes them with it (parent-death signal) and the far side's
//! wrappers see their input end. The same thread sends signals to remote process
//! groups (a short session over the master); another one probes each host's
//! reachability every few seconds, so a page never waits on the network.

use super::{Engine, Host, Hosts};
use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime};

/// The script the far side runs around every ssh and kubectl command.
const WRAPPER: &str = include_str!("wrapper.sh");

/// The script that sends a signal to the group a wrapper wrote down (`$0` the token,
/// `$1` the signal word); it waits a moment for a command that has just started, and
/// sends nothing unless the file holds a process group (never 0 or 1, which `kill`
/// reads as "every process").
const SIGNAL: &str = r#"f="${XDG_RUNTIME_DIR:-$HOME/.cache}/terminalfs/$0"; i=0
until g=$(cat "$f" 2>/dev/null) && [ -n "$g" ]; do i=$((i+1)); [ "$i" -gt 20 ] && exit 1; sleep 0.1; done
case $g in *[!0-9]*|0|1) exit 1;; esac
kill -s "$1" -- "-$g""#;

/// The script that reads back, and removes, the far side's start and end times (epoch
/// seconds) a wrapper left for token `$0`.
const TIMES: &str =
    r#"f="${XDG_RUNTIME_DIR:-$HOME/.cache}/terminalfs/$0.t"; cat "$f" && rm -f "$f""#;

/// How long a new connection may take before the command fails.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);
/// How often each host's reachability is looked at again.
const PROBE_EVERY: Duration = Duration::from_secs(30);
/// The most masters kept for one host.
const MOST_MASTERS: usize = 64;

static DRIVER: OnceLock<Driver> = OnceLock::new();

/// What a command's standard input is, as far as the launcher is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// At end of file: the launcher's input is held open by the driver instead, so the
    /// far side's wrapper can tell a lost connection by its end.
    Closed,
    /// A pipe fed by `cmd/<name>/stdin`, passed through.
    Pipe,
    /// A terminal (`ssh -tt`, `kubectl exec -t`).
    Terminal,
}

/// One OpenSSH master connection.
pub struct Master {
    socket: PathBuf,
    log: PathBuf,
    child: Mutex<Child>,
    /// Sessions it carries now.
    sessions: AtomicUsize,
}

impl Master {
    /// Whether its process has ended; the words it left, then.
    fn ended(&self) -> Option<String> {
        match self.child.lock().try_wait() {
            Ok(None) => None,
            _ => Some(words(&self.log)),
        }
    }
}

/// The last lines ssh wrote to its log, as one sentence part.
fn words(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect();
    let tail = lines[lines.len().saturating_sub(3)..].join(" / ");
    if tail.is_empty() {
        "ssh said nothing".to_string()
    } else {
        format!("ssh said: {tail}")
    }
}

/// A command on a remote host: what its launcher needs to be signalled and ended.
pub struct Remote {
    host: Arc<Host>,
    token: String,
    master: Option<Arc<Master>>,
    /// The write end of the launcher's input, held until the command ends.
    hold: Mutex<Option<OwnedFd>>,
    released: AtomicBool,
    mode: Mode,
    /// When the command started and ended on the far side (epoch seconds), once read.
    times: Mutex<Option<(u64, u64)>>,
    /// The job to save again once the times are known.
    job: Mutex<Option<std::sync::Weak<crate::supervisor::Job>>>,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Remote({}, {})", self.host.name, self.token)
    }
}

/// What the supervisor runs for a host command.
pub struct Launched {
    pub program: OsString,
    pub args: Vec<OsString>,
    /// The launcher's input when the command itself takes none.
    pub stdin: Option<OwnedFd>,
    pub remote: Arc<Remote>,
}

enum Work {
    Connect(Arc<Host>, Sender<Result<Arc<Master>, String>>),
    Run(Command),
    /// A session whose output is a remote command's times.
    Times(Command, Arc<Remote>),
    Stop(Sender<()>),
}

/// Each host's last look: when, and what it found ("reachable", or why not).
type Probes = BTreeMap<String, (SystemTime, Result<String, String>)>;

struct Driver {
    dir: PathBuf,
    temporary: bool,
    work: Sender<Work>,
    probes: Mutex<Probes>,
    next: AtomicU64,
}

/// Quotes bytes for a POSIX shell.
fn quote(bytes: &[u8]) -> Vec<u8> {
    let mut out = vec![b'\''];
    for &b in bytes {
        if b == b'\'' {
            out.extend_from_slice(b"'\\''");
        } else {
            out.push(b);
        }
    }
    out.push(b'\'');
    out
}

/// A private directory for control sockets: in the state directory when its path is
/// short enough for a socket (108 bytes on Linux, 104 on macOS), else a new one in
/// the temporary directory. Made 0700, never through a symbolic link.
fn socket_dir(state_dir: &Path) -> std::io::Result<(PathBuf, bool)> {
    let dir = state_dir.join(".hosts");
    if dir.as_os_str().len() + 16 < 100 {
        match std::fs::symlink_metadata(&dir) {
            Ok(meta) if meta.is_dir() && meta.uid() == current_uid() => {
                // What a crashed driver left: its masters died with it.
                for entry in std::fs::read_dir(&dir)?.flatten() {
                    let _ = std::fs::remove_file(entry.path());
                }
                std::fs::set_permissions(
                    &dir,
                    std::os::unix::fs::PermissionsExt::from_mode(0o700),
                )?;
                return Ok((dir, false));
            }
            Ok(_) => {
                return Err(std::io::Error::other(format!(
                    "{} is not a directory of this user",
                    dir.display()
                )))
            }
            Err(_) => {
                std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
                return Ok((dir, false));
            }
        }
    }
    let template = std::env::temp_dir().join("terminalfs-XXXXXX");
    let mut bytes = template.into_os_string().into_vec();
    bytes.push(0);
    // SAFETY: a NUL-terminated writable template, as mkdtemp wants.
    let made = unsafe { libc::mkdtemp(bytes.as_mut_ptr().cast()) };
    if made.is_null() {
        return Err(std::io::Error::last_os_error());
    }
    bytes.pop();
    Ok((PathBuf::from(OsString::from_vec(bytes)), true))
}

fn current_uid() -> u32 {
    // SAFETY: getuid cannot fail.
    unsafe { libc::getuid() }
}

/// A launcher process that dies with the thread that starts it (Linux), in a group of
/// its own so a terminal's signals do not reach it.
fn owned(command: &mut Command) -> &mut Command {
    command.process_group(0);
    #[cfg(target_os = "linux")]
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    command
}

/// Starts the hosts' thread and prober. `hosts` gives the table in force now.
pub fn start(state_dir: &Path, hosts: Box<dyn Fn() -> Hosts + Send>) -> Result<(), String> {
    let (dir, temporary) = socket_dir(state_dir)
        .map_err(|error| format!("cannot make a directory for ssh control sockets: {error}"))?;
    let (work, receiver) = crossbeam_channel::unbounded();
    let driver = Driver {
        dir,
        temporary,
        work,
        probes: Mutex::new(BTreeMap::new()),
        next: AtomicU64::new(1),
    };
    if DRIVER.set(driver).is_err() {
        return Err("the hosts' driver is started twice".to_string());
    }
    std::thread::Builder::new()
        .name("hosts".into())
        .spawn(move || serve(receiver))
        .map_err(|error| format!("cannot start the hosts' thread: {error}"))?;
    std::thread::Builder::new()
        .name("hosts-probe".into())
        .spawn(move || loop {
            probe_all(&hosts());
            std::thread::sleep(PROBE_EVERY);
        })
        .map_err(|error| format!("cannot start the hosts' prober: {error}"))?;
    Ok(())
}

/// Closes every master connection (the far side's wrappers then stop what is left)
/// and removes the control sockets' directory.
pub fn stop() {
    let Some(driver) = DRIVER.get() else {
        return;
    };
    let (done, wait) = crossbeam_channel::bounded(1);
    if driver.work.send(Work::Stop(done)).is_ok() {
        let _ = wait.recv_timeout(Duration::from_secs(5));
    }
    if driver.temporary {
        let _ = std::fs::remove_dir_all(&driver.dir);
    }
}

/// The hosts' thread: masters by host, started on demand and reaped as they end, and
/// the short signal sessions, reaped as they end.
fn serve(receiver: Receiver<Work>) {
    let mut masters: BTreeMap<String, Vec<Arc<Master>>> = BTreeMap::new();
    let mut running: Vec<(Child, Option<Arc<Remote>>)> = Vec::new();
    let mut count = 0u64;
    loop {
        let work = receiver.recv_timeout(Duration::from_secs(1));
        running.retain_mut(|(child, remote)| match child.try_wait() {
            Ok(None) => true,
            Ok(Some(status)) => {
                if let Some(remote) = remote.take().filter(|_| status.success()) {
                    remote.took_times(child.stdout.take());
                }
                false
            }
            Err(_) => false,
        });
        for pool in masters.values_mut() {
            pool.retain(|master| master.ended().is_none());
        }
        match work {
            Ok(Work::Connect(host, reply)) => {
                // Keyed by how the host is reached, so an edit of its entry in the
                // settings never reuses a connection made the old way.
                let key = format!("{:?}\0{:?}", host.engine, host.options);
                let pool = masters.entry(key).or_default();
                let free = pool
                    .iter()
                    .find(|master| master.sessions.load(Ordering::SeqCst) < host.max_sessions);
                let answer = match free {
                    Some(master) => Ok(master.clone()),
                    None if pool.len() >= MOST_MASTERS => Err(format!(
                        "host {}: {MOST_MASTERS} connections carry {} sessions each already",
                        host.describe(),
                        host.max_sessions
                    )),
                    None => {
                        count += 1;
                        let made = connect(&host, count);
                        if let Ok(master) = &made {
                            pool.push(master.clone());
                        }
                        made
                    }
                };
                if let Ok(master) = &answer {
                    master.sessions.fetch_add(1, Ordering::SeqCst);
                }
                let _ = reply.send(answer);
            }
            Ok(Work::Run(mut command)) => {
                if let Ok(child) = owned(&mut command).spawn() {
                    running.push((child, None));
                }
            }
            Ok(Work::Times(mut command, remote)) => {
                if let Ok(child) = owned(&mut command).stdout(Stdio::piped()).spawn() {
                    running.push((child, Some(remote)));
                }
            }
            Ok(Work::Stop(done)) => {
                for master in masters.values().flatten() {
                    let mut child = master.child.lock();
                    let _ = child.kill();
                    let _ = child.wait();
                    let _ = std::fs::remove_file(&master.socket);
                    let _ = std::fs::remove_file(&master.log);
                }
                masters.clear();
                let _ = done.send(());
            }
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return,
        }
    }
}

fn driver() -> Result<&'static Driver, String> {
    DRIVER
        .get()
        .ok_or_else(|| "remote hosts are not available in this process".to_string())
}

/// Starts a master connection to `host` and waits until it is up or has failed.
fn connect(host: &Arc<Host>, count: u64) -> Result<Arc<Master>, String> {
    let Engine::Ssh(destination) = &host.engine else {
        return Err(format!("host {} is not reached by ssh", host.name));
    };
    let driver = driver()?;
    let socket = driver.dir.join(format!("m{count}"));
    let log = driver.dir.join(format!("m{count}.log"));
    let _ = std::fs::remove_file(&socket);
    let log_file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&log)
        .map_err(|error| format!("host {}: cannot open {}: {error}", host.name, log.display()))?;
    let mut command = Command::new("ssh");
    command
        .args(["-M", "-N", "-S"])
        .arg(&socket)
        .args(["-o", "ControlPersist=no", "-o", "BatchMode=yes"])
        .args(["-o", "ConnectTimeout=15", "-o", "ServerAliveInterval=10"])
        .args(&host.options)
        .arg(destination)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log_file);
    let child = owned(&mut command)
        .spawn()
        .map_err(|error| format!("host {}: cannot run ssh: {error}", host.describe()))?;
    let master = Arc::new(Master {
        socket,
        log,
        child: Mutex::new(child),
        sessions: AtomicUsize::new(0),
    });
    let deadline = Instant::now() + CONNECT_TIMEOUT;
    loop {
        if std::fs::symlink_metadata(&master.socket).is_ok() {
            return Ok(master);
        }
        if let Some(said) = master.ended() {
            let _ = std::fs::remove_file(&master.log);
            return Err(format!("host {} is unreachable: {said}", host.describe()));
        }
        if Instant::now() >= deadline {
            let _ = master.child.lock().kill();
            let _ = master.child.lock().wait();
            return Err(format!(
                "host {}: no connection within {}s",
                host.describe(),
                CONNECT_TIMEOUT.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The entry's `env` as ` VAR='value'…` words for an `export` line, so that the wrapper
/// and the short sessions after it (which find its files through `XDG_RUNTIME_DIR` or
/// `HOME`) see the same variables.
fn exports(host: &Host) -> Vec<u8> {
    let mut words = Vec::new();
    for (var, value) in &host.env {
        words.extend(format!(" {var}=").as_bytes());
        words.extend(quote(value.as_bytes()));
    }
    words
}

/// What runs a command named `name` with `text` on `host`. For ssh this connects (or
/// picks a connection with room) first, and fails with a sentence naming the host and
/// ssh's own words when it cannot.
pub fn launch(host: &Arc<Host>, name: &str, text: &[u8], mode: Mode) -> Result<Launched, String> {
    let driver = driver()?;
    let token = format!(
        "{}-{}-{}",
        std::process::id(),
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros()),
        driver.next.fetch_add(1, Ordering::Relaxed)
    );
    let (stdin, hold) = match mode {
        Mode::Closed if !matches!(host.engine, Engine::Srun) => {
            let (read, write) = crate::supervisor::pipe()
                .map_err(|error| format!("terminalfs: cannot make a pipe: {error}"))?;
            (Some(read), Some(write))
        }
        _ => (None, None),
    };
    let mut script: Vec<u8> = b"export TERMINALFS_NAME=".to_vec();
    script.extend(quote(name.as_bytes()));
    script.extend(exports(host));
    script.push(b'\n');
    script.extend_from_slice(WRAPPER.as_bytes());
    let word = match mode {
        Mode::Closed => "w",
        Mode::Pipe => "i",
        Mode::Terminal => "t",
    };
    let wrapped: Vec<Vec<u8>> = vec![
        b"sh".to_vec(),
        b"-c".to_vec(),
        script,
        b"terminalfs".to_vec(),
        token.clone().into_bytes(),
        word.as_bytes().to_vec(),
        host.shell().as_bytes().to_vec(),
        host.cwd.clone().unwrap_or_default().into_bytes(),
        text.to_vec(),
    ];
    let os = |bytes: Vec<u8>| OsString::from_vec(bytes);
    let mut master = None;
    let (program, args) = match &host.engine {
        Engine::Ssh(destination) => {
            let (reply, answer) = crossbeam_channel::bounded(1);
            driver
                .work
                .send(Work::Connect(host.clone(), reply))
                .map_err(|_| "the hosts' thread has stopped".to_string())?;
            let connected = answer
                .recv_timeout(CONNECT_TIMEOUT + Duration::from_secs(10))
                .map_err(|_| format!("host {}: no connection in time", host.describe()))??;
            let mut args: Vec<OsString> = vec!["-S".into(), connected.socket.clone().into()];
            master = Some(connected);
            args.extend(["-o", "ControlMaster=no", "-o", "BatchMode=yes"].map(OsString::from));
            args.push(if mode == Mode::Terminal { "-tt" } else { "-T" }.into());
            args.extend(host.options.iter().map(OsString::from));
            args.push(destination.into());
            args.push("--".into());
            let mut remote = b"exec".to_vec();
            for word in wrapped {
                remote.push(b' ');
                remote.extend(quote(&word));
            }
            args.push(os(remote));
            (OsString::from("ssh"), args)
        }
        Engine::Kubectl(target) => {
            let mut args: Vec<OsString> = vec!["exec".into()];
            args.push(if mode == Mode::Terminal { "-it" } else { "-i" }.into());
            args.extend(host.options.iter().map(OsString::from));
            args.push(target.into());
            args.push("--".into());
            args.extend(wrapped.into_iter().map(os));
            (OsString::from("kubectl"), args)
        }
        Engine::Srun => {
            let mut args: Vec<OsString> = vec![format!("--job-name=terminalfs-{token}").into()];
            if mode == Mode::Terminal {
                args.push("--pty".into());
            }
            if let Some(cwd) = &host.cwd {
                args.push(format!("--chdir={cwd}").into());
            }
            args.extend(host.options.iter().map(OsString::from));
            args.push("env".into());
            args.push(format!("TERMINALFS_NAME={name}").into());
            args.extend(
                host.env
                    .iter()
                    .map(|(k, v)| OsString::from(format!("{k}={v}"))),
            );
            args.extend([host.shell().into(), "-c".into(), os(text.to_vec())]);
            (OsString::from("srun"), args)
        }
    };
    Ok(Launched {
        program,
        args,
        stdin,
        remote: Arc::new(Remote {
            host: host.clone(),
            token,
            master,
            hold: Mutex::new(hold),
            released: AtomicBool::new(false),
            mode,
            times: Mutex::new(None),
            job: Mutex::new(None),
        }),
    })
}

impl Remote {
    pub fn host(&self) -> &Arc<Host> {
        &self.host
    }

    /// Saves `job`'s record again once the far side's times are read.
    pub fn belongs_to(&self, job: std::sync::Weak<crate::supervisor::Job>) {
        *self.job.lock() = Some(job);
    }

    /// When the command started and ended on the far side (epoch seconds), once
    /// known: read back over the connection after it ends (not on a terminal, where
    /// the wrapper gives way to the shell).
    pub fn times(&self) -> Option<(u64, u64)> {
        *self.times.lock()
    }

    fn took_times(&self, stdout: Option<std::process::ChildStdout>) {
        use std::io::Read;
        let mut text = String::new();
        if let Some(mut stdout) = stdout {
            let _ = stdout.read_to_string(&mut text);
        }
        let mut words = text.split_whitespace().map(str::parse::<u64>);
        if let (Some(Ok(start)), Some(Ok(end))) = (words.next(), words.next()) {
            *self.times.lock() = Some((start, end));
            let job = self.job.lock().as_ref().and_then(std::sync::Weak::upgrade);
            if let Some(job) = job {
                job.save_record();
            }
        }
    }

    /// A session that runs `script` with the token and `arg` on the far side, over
    /// the kept connection (ssh) or a new exec (kubectl).
    fn session(&self, script: &str, arg: &str) -> Option<Command> {
        let mut text = Vec::new();
        if !self.host.env.is_empty() {
            text.extend(b"export");
            text.extend(exports(&self.host));
            text.push(b'\n');
        }
        text.extend(script.as_bytes());
        match &self.host.engine {
            Engine::Ssh(destination) => {
                let master = self.master.as_ref()?;
                let mut command = Command::new("ssh");
                command
                    .arg("-S")
                    .arg(&master.socket)
                    .args(["-o", "ControlMaster=no", "-o", "BatchMode=yes", "-T"])
                    .args(&self.host.options)
                    .arg(destination)
                    .arg("--");
                let mut remote = b"sh -c ".to_vec();
                remote.extend(quote(&text));
                remote.extend(format!(" {} {arg}", self.token).as_bytes());
                command.arg(OsString::from_vec(remote));
                Some(command)
            }
            Engine::Kubectl(target) => {
                let mut command = Command::new("kubectl");
                command
                    .arg("exec")
                    .args(&self.host.options)
                    .arg(target)
                    .args(["--", "sh", "-c"])
                    .arg(OsString::from_vec(text))
                    .args([&self.token, arg]);
                Some(command)
            }
            Engine::Srun => None,
        }
    }

    /// Sends `signal` to the far side's process group (or job step). Returns whether
    /// the local launcher's own group must get it too: for ssh and kubectl only
    /// SIGKILL (a launcher stuck on a dead connection), for srun every signal it
    /// forwards itself.
    pub fn signal(&self, signal: i32) -> bool {
        let name = crate::supervisor::signals::name(signal);
        let word = match name.strip_prefix("SIG") {
            Some(word) if !word.contains('+') => word.to_string(),
            _ => signal.to_string(),
        };
        let command = match &self.host.engine {
            Engine::Ssh(_) | Engine::Kubectl(_) => match self.session(SIGNAL, &word) {
                Some(command) => command,
                None => return true,
            },
            Engine::Srun => {
                if signal == libc::SIGTERM {
                    // srun cancels the step itself on TERM.
                    return true;
                }
                let mut command = Command::new("scancel");
                command.arg(format!("--name=terminalfs-{}", self.token));
                if signal != libc::SIGKILL {
                    command.arg(format!("--signal={word}"));
                }
                command
            }
        };
        let mut command = command;
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Ok(driver) = driver() {
            let _ = driver.work.send(Work::Run(command));
        }
        signal == libc::SIGKILL
    }

    /// The launcher has ended with `code`: its session and held input are let go of.
    /// A reason when the connection it ran over was lost.
    pub fn ended(self: &Arc<Self>, code: i32) -> Option<String> {
        drop(self.hold.lock().take());
        if code != -1 && self.mode != Mode::Terminal && !self.released.load(Ordering::SeqCst) {
            if let (Some(mut command), Ok(driver)) = (self.session(TIMES, ""), driver()) {
                command.stdin(Stdio::null()).stderr(Stdio::null());
                let _ = driver.work.send(Work::Times(command, self.clone()));
            }
        }
        let master = self.master.as_ref()?;
        if !self.released.swap(true, Ordering::SeqCst) {
            master.sessions.fetch_sub(1, Ordering::SeqCst);
        }
        if code != 255 {
            return None;
        }
        // ssh says 255 for its own failures and for a remote `exit 255` alike. The
        // master usually ends with the connection, but under load it may not have been
        // reaped yet; this runs under the job's lock, so it is not waited for.
        Some(match master.ended() {
            Some(said) => format!(
                "host {}: the connection was lost while the command ran; {said}",
                self.host.describe()
            ),
            None => format!(
                "host {}: ssh ended with status 255: the connection was lost while the \
                 command ran, or the command itself exited 255",
                self.host.describe()
            ),
        })
    }
}

/// Looks at every host once: a live master, or a fresh `ssh … true`, `kubectl exec …
/// true` or `sinfo`, each bounded in time.
fn probe_all(hosts: &Hosts) {
    let Ok(driver) = driver() else {
        return;
    };
    for host in hosts.iter() {
        let result = probe(host);
        driver
            .probes
            .lock()
            .insert(host.name.clone(), (SystemTime::now(), result));
    }
    let names: Vec<String> = hosts.iter().map(|host| host.name.clone()).collect();
    driver.probes.lock().retain(|name, _| names.contains(name));
}

fn probe(host: &Host) -> Result<String, String> {
    let mut command = match &host.engine {
        Engine::Ssh(destination) => {
            let mut command = Command::new("ssh");
            command
                .args(["-o", "BatchMode=yes", "-o", "ConnectTimeout=5", "-T"])
                .args(&host.options)
                .args([destination.as_str(), "--", "true"]);
            command
        }
        Engine::Kubectl(target) => {
            let mut command = Command::new("kubectl");
            command
                .arg("exec")
                .args(&host.options)
                .args([target.as_str(), "--", "true"]);
            command
        }
        Engine::Srun => {
            let mut command = Command::new("sinfo");
            command.arg("--noheader");
            command
        }
    };
    let mut child = owned(&mut command)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| format!("cannot run {}: {error}", host.engine.word()))?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let mut said = String::new();
                if let Some(mut stderr) = child.stderr.take() {
                    use std::io::Read;
                    let _ = stderr.read_to_string(&mut said);
                }
                let said = said.split_whitespace().collect::<Vec<_>>().join(" ");
                return if status.success() {
                    Ok("reachable".to_string())
                } else if said.is_empty() {
                    Err(format!(
                        "unreachable: {} exited with {status}",
                        host.engine.word()
                    ))
                } else {
                    Err(format!("unreachable: {said}"))
                };
            }
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("unreachable: no answer within 10s".to_string());
            }
        }
    }
}

/// The `/index.md` section on hosts: each one, how it is reached, and whether it was
/// reachable at the last look.
pub fn section(hosts: &Hosts) -> String {
    if hosts.is_empty() {
        return String::new();
    }
    let probes = DRIVER
        .get()
        .map(|driver| driver.probes.lock().clone())
        .unwrap_or_default();
    let mut out = String::from(
        "\n## Hosts\n\n`#terminalfs host=NAME` runs a command there (`local` is this machine); \
         see docs/hosts.md.\n\n| host | reached by | now |\n|---|---|---|\n",
    );
    for host in hosts.iter() {
        let now = match probes.get(&host.name) {
            None => "not looked at yet".to_string(),
            Some((at, result)) => {
                let when = crate::policy::audit::rfc3339(*at);
                match result {
                    Ok(word) => format!("{word} (at {when})"),
                    Err(why) => format!("{why} (at {when})"),
                }
            }
        };
        let how = match &host.engine {
            Engine::Ssh(to) | Engine::Kubectl(to) => format!("{} {to}", host.engine.word()),
            Engine::Srun => format!("srun {}", host.options.join(" ")),
        };
        out.push_str(&format!(
            "| {} | {} | {} |\n",
            host.name,
            crate::fs::pages::table_cell(how.as_bytes()),
            crate::fs::pages::table_cell(now.as_bytes())
        ));
    }
    out
}

#[cfg(test)]
#[path = "driver_tests.rs"]
mod tests;
