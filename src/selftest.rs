//! `terminalfs selftest`: a client of a live mount that uses it the way people and
//! agents do, through plain opens, reads and writes of its files, and prints one line
//! per check and a total. It knows nothing of the driver's insides, so it checks any
//! mount, including a macFUSE one that no test suite runs on.
//!
//! The commands it writes are POSIX shell (`printf`, `[ -e ]`, `while`), so it expects
//! the mount's `--shell` to be sh, bash, dash, zsh or ksh. Every command it makes is
//! named `selftest-<pid>-<check>` and removed at the end.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Longest one check waits for the mount before it fails. Generous: a loaded machine
/// is not a broken mount, and `wait` itself answers within `--wait-timeout`.
const PATIENCE: Duration = Duration::from_secs(90);

/// Why a check failed, as the one line printed for it. A sentence is the product here,
/// not a cause to match on: every failure is shown to the user as it is and counted,
/// and nothing branches on which failure it was.
type Failure = String;

/// A check's line for the user: what it saw when it passed, or why it failed.
type Outcome = Result<String, Failure>;

/// A check: its name and what it does, returning a line for the user either way.
type Check = (&'static str, fn(&mut Client) -> Outcome);

/// The checks, in the order they run.
const CHECKS: &[Check] = &[
    ("run", run),
    ("error", error),
    ("order", order),
    ("follow", follow),
    ("kill", kill),
    ("signal", signal),
    ("refusal", refusal),
    ("index", index),
    ("events", events),
    ("expiry", expiry),
    ("hosts", hosts),
];

/// How many checks passed and failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    pub passed: usize,
    pub failed: usize,
}

/// Runs every check against the mount at `mount`, printing one line per check and the
/// total to `out`.
pub fn run_all(mount: &Path, out: &mut dyn Write) -> std::io::Result<Tally> {
    let mut client = Client {
        mount: mount.to_path_buf(),
        prefix: format!("selftest-{}-", std::process::id()),
        made: Vec::new(),
        scratch: None,
    };
    let mut tally = Tally {
        passed: 0,
        failed: 0,
    };
    // Without a mount nothing else can pass; say so once instead of eight times.
    let checks: &[Check] = match client.is_mounted() {
        Ok(()) => CHECKS,
        Err(_) => &[("mount", mounted)],
    };
    for &(name, check) in checks {
        let outcome = check(&mut client);
        let (word, detail) = match &outcome {
            Ok(detail) => ("ok  ", detail),
            Err(why) => ("FAIL", why),
        };
        writeln!(out, "{word}  {name:<8}  {detail}")?;
        match outcome {
            Ok(_) => tally.passed += 1,
            Err(_) => tally.failed += 1,
        }
    }
    client.clean_up();
    writeln!(
        out,
        "selftest: {} passed, {} failed at {}",
        tally.passed,
        tally.failed,
        mount.display()
    )?;
    Ok(tally)
}

fn mounted(client: &mut Client) -> Outcome {
    client
        .is_mounted()
        .map(|()| "the mount answers".to_string())
}

struct Client {
    mount: PathBuf,
    prefix: String,
    /// Names of the commands made, to remove at the end.
    made: Vec<String>,
    /// A private directory outside the mount, for handshakes with commands.
    scratch: Option<PathBuf>,
}

impl Client {
    fn p(&self, relative: &str) -> PathBuf {
        self.mount.join(relative)
    }

    fn is_mounted(&self) -> Result<(), Failure> {
        let index = self.p("index.md");
        let page = std::fs::read_to_string(&index).map_err(|e| {
            format!(
                "cannot read {}: {e}; is terminalfs mounted there?",
                index.display()
            )
        })?;
        if !page.starts_with("---\n") || !page.contains("terminalfs") {
            return Err(format!(
                "{} is not a terminalfs index page; is terminalfs mounted at {}?",
                index.display(),
                self.mount.display()
            ));
        }
        Ok(())
    }

    fn name(&self, check: &str) -> String {
        format!("{}{check}", self.prefix)
    }

    /// Writes `text` into `ctl/<name>` the way `echo … > ctl/<name>` does.
    fn start(&mut self, check: &str, text: &str) -> Result<String, Failure> {
        let name = self.name(check);
        self.made.push(name.clone());
        match std::fs::write(self.p(&format!("ctl/{name}")), text) {
            Ok(()) => Ok(name),
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
                let reason = self.read(&format!("cmd/{name}/reason"));
                Err(format!(
                    "`{text}` was refused: {}",
                    reason.as_deref().unwrap_or("no reason").trim()
                ))
            }
            Err(e) => Err(format!("cannot write ctl/{name}: {e}")),
        }
    }

    fn read(&self, relative: &str) -> Result<String, Failure> {
        std::fs::read_to_string(self.p(relative))
            .map_err(|e| format!("cannot read {relative}: {e}"))
    }

    /// Fails unless `cmd/<name>/<file>` holds exactly `want`.
    fn expect(&self, name: &str, file: &str, want: &str) -> Result<(), Failure> {
        let got = self.read(&format!("cmd/{name}/{file}"))?;
        if got == want {
            Ok(())
        } else {
            Err(format!("cmd/{name}/{file} holds {got:?}, not {want:?}"))
        }
    }

    /// Reads `wait` until it says the command stopped; returns that word.
    fn wait(&self, name: &str) -> Result<String, Failure> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let word = self.read(&format!("cmd/{name}/wait"))?;
            match word.as_str() {
                "completed\n" | "error\n" => return Ok(word),
                "running\n" if Instant::now() < deadline => continue,
                "running\n" => {
                    return Err(format!(
                        "cmd/{name}/wait still says running after {}s",
                        PATIENCE.as_secs()
                    ))
                }
                other => return Err(format!("cmd/{name}/wait said {other:?}")),
            }
        }
    }

    fn scratch(&mut self) -> Result<PathBuf, Failure> {
        if let Some(dir) = &self.scratch {
            return Ok(dir.clone());
        }
        let dir = std::env::temp_dir().join(format!("terminalfs-{}", self.prefix));
        std::fs::create_dir_all(&dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
        self.scratch = Some(dir.clone());
        Ok(dir)
    }

    fn clean_up(&mut self) {
        for name in self.made.drain(..) {
            let _ = std::fs::remove_dir_all(self.mount.join("cmd").join(&name));
            let _ = std::fs::remove_file(self.mount.join("ctl").join(&name));
        }
        if let Some(dir) = self.scratch.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn run(client: &mut Client) -> Outcome {
    let name = client.start("run", "echo hello")?;
    let word = client.wait(&name)?;
    if word != "completed\n" {
        return Err(format!("`echo hello` ended with wait saying {word:?}"));
    }
    client.expect(&name, "status", "completed\n")?;
    client.expect(&name, "stdout", "hello\n")?;
    client.expect(&name, "exitcode", "0\n")?;
    Ok("`echo hello` completed with exit code 0 and printed hello".to_string())
}

fn error(client: &mut Client) -> Outcome {
    let name = client.start("error", "echo oops >&2; exit 3")?;
    let word = client.wait(&name)?;
    if word != "error\n" {
        return Err(format!("`exit 3` ended with wait saying {word:?}"));
    }
    client.expect(&name, "exitcode", "3\n")?;
    client.expect(&name, "stderr", "oops\n")?;
    client.expect(&name, "stdout", "")?;
    Ok("`exit 3` is an error with exit code 3 and its stderr kept apart".to_string())
}

fn order(client: &mut Client) -> Outcome {
    // Linux orders every write; elsewhere pipes are polled, and only writes apart in
    // time keep their order.
    let pause = if cfg!(target_os = "linux") {
        ""
    } else {
        " sleep 0.2;"
    };
    let text = format!(
        "printf 'one\\n';{pause} printf 'two\\n' >&2;{pause} printf 'three\\n';{pause} printf 'four\\n' >&2"
    );
    let name = client.start("order", &text)?;
    client.wait(&name)?;
    client.expect(&name, "output", "one\ntwo\nthree\nfour\n")?;
    client.expect(&name, "stdout", "one\nthree\n")?;
    client.expect(&name, "stderr", "two\nfour\n")?;
    Ok("output interleaves stdout and stderr in the order they were written".to_string())
}

fn follow(client: &mut Client) -> Outcome {
    let go = client.scratch()?.join("go");
    let text = format!(
        "echo first; while [ ! -e '{}' ]; do sleep 0.05; done; echo second",
        go.display()
    );
    let name = client.start("follow", &text)?;
    let path = client.p(&format!("cmd/{name}/follow"));
    let mut follow =
        std::fs::File::open(&path).map_err(|e| format!("cannot open cmd/{name}/follow: {e}"))?;
    let mut seen = Vec::new();
    let mut chunk = [0u8; 4096];
    while !seen.ends_with(b"first\n") {
        let n = follow
            .read(&mut chunk)
            .map_err(|e| format!("cannot read cmd/{name}/follow: {e}"))?;
        if n == 0 {
            return Err(format!(
                "follow ended before the command went on: {:?}",
                String::from_utf8_lossy(&seen)
            ));
        }
        seen.extend_from_slice(&chunk[..n]);
    }
    client.expect(&name, "status", "running\n")?;
    let released = Instant::now();
    std::fs::write(&go, "").map_err(|e| format!("cannot write {}: {e}", go.display()))?;
    follow
        .read_to_end(&mut seen)
        .map_err(|e| format!("cannot read cmd/{name}/follow: {e}"))?;
    let took = released.elapsed();
    if seen != b"first\nsecond\n" {
        return Err(format!(
            "follow gave {:?}, not \"first\\nsecond\\n\"",
            String::from_utf8_lossy(&seen)
        ));
    }
    client.expect(&name, "status", "completed\n")?;
    Ok(format!(
        "follow gave output while the command ran and ended {} ms after its last line",
        took.as_millis()
    ))
}

fn kill(client: &mut Client) -> Outcome {
    let name = client.start("kill", "sleep 600; echo never")?;
    let pid: i32 = client
        .read(&format!("cmd/{name}/pid"))?
        .trim()
        .parse()
        .map_err(|e| format!("cmd/{name}/pid is not a number: {e}"))?;
    let asked = Instant::now();
    std::fs::write(client.p(&format!("cmd/{name}/kill")), "stop\n")
        .map_err(|e| format!("cannot write cmd/{name}/kill: {e}"))?;
    let word = client.wait(&name)?;
    let took = asked.elapsed();
    if word != "error\n" {
        return Err(format!("a killed command's wait said {word:?}"));
    }
    let reason = client.read(&format!("cmd/{name}/reason"))?;
    if !reason.contains("kill") {
        return Err(format!(
            "cmd/{name}/reason does not say it was killed: {reason:?}"
        ));
    }
    client.expect(&name, "stdout", "")?;
    // SAFETY: signal 0 only asks whether the process exists.
    if unsafe { libc::kill(pid, 0) } == 0 {
        return Err(format!("process {pid} still runs after the kill"));
    }
    Ok(format!(
        "a write to kill stopped `sleep 600` (pid {pid}) in {} ms",
        took.as_millis()
    ))
}

fn signal(client: &mut Client) -> Outcome {
    let name = client.start(
        "signal",
        "trap 'echo caught; exit 5' INT; echo ready; while :; do sleep 0.05; done",
    )?;
    let deadline = Instant::now() + PATIENCE;
    while client.read(&format!("cmd/{name}/stdout"))? != "ready\n" {
        if Instant::now() > deadline {
            return Err(format!("cmd/{name}/stdout never said ready"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    std::fs::write(client.p(&format!("cmd/{name}/kill")), "INT\n")
        .map_err(|e| format!("cannot write cmd/{name}/kill: {e}"))?;
    client.wait(&name)?;
    client.expect(&name, "exitcode", "5\n")?;
    client.expect(&name, "stdout", "ready\ncaught\n")?;
    Ok("INT written to kill reached the command's trap".to_string())
}

fn refusal(client: &mut Client) -> Outcome {
    // A name the tree refuses (a character outside the name set): EINVAL, nothing made.
    match std::fs::write(client.p("ctl/bad:name"), "true") {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {}
        other => {
            return Err(format!(
                "ctl/bad:name was not refused with EINVAL: {other:?}"
            ))
        }
    }
    // A bad `#terminalfs` line: the write or the close fails with EINVAL, and the
    // command shows as denied with a reason.
    let name = client.name("refusal");
    client.made.push(name.clone());
    let path = client.p(&format!("ctl/{name}"));
    let failed = write_and_close(&path, b"#terminalfs bogus=1\ntrue\n");
    if failed.as_ref().err().and_then(|e| e.raw_os_error()) != Some(libc::EINVAL) {
        return Err(format!(
            "a bad #terminalfs line was not refused with EINVAL: {failed:?}"
        ));
    }
    client.expect(&name, "status", "denied\n")?;
    let reason = client.read(&format!("cmd/{name}/reason"))?;
    if !reason.contains("bogus") {
        return Err(format!(
            "cmd/{name}/reason does not name the bad key: {reason:?}"
        ));
    }
    // A name runs once.
    match std::fs::write(&path, "true") {
        Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {}
        other => {
            return Err(format!(
                "reusing {name} was not refused with EEXIST: {other:?}"
            ))
        }
    }
    Ok(format!(
        "a bad name, a bad #terminalfs line and a reused name were refused; reason: {}",
        reason.trim()
    ))
}

/// Writes `bytes` to a new file and closes it, returning the first error of the write
/// or of the close (which `std::fs::write` would not report).
fn write_and_close(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::fd::IntoRawFd;
    let mut file = std::fs::File::create(path)?;
    let written = file.write_all(bytes);
    let fd = file.into_raw_fd();
    // SAFETY: `fd` was just taken from the file and is closed exactly once, here.
    let closed = unsafe { libc::close(fd) };
    written?;
    if closed != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

fn index(client: &mut Client) -> Outcome {
    let name = client.name("run");
    let page = client.read("cmd/index.md")?;
    if !page.starts_with("---\n") {
        return Err("cmd/index.md has no frontmatter".to_string());
    }
    if !page.lines().any(|line| line.contains(&format!("[{name}]"))) {
        return Err(format!("cmd/index.md does not list {name}"));
    }
    Ok("cmd/index.md lists the commands".to_string())
}

fn events(client: &mut Client) -> Outcome {
    use std::io::BufRead;
    let want = format!(" {} completed 0", client.name("run"));
    let file =
        std::fs::File::open(client.p("events")).map_err(|e| format!("cannot open events: {e}"))?;
    // The listing at open names every command; a read ends after --wait-timeout.
    for line in std::io::BufReader::new(file).lines() {
        let line = line.map_err(|e| format!("cannot read events: {e}"))?;
        if line.ends_with(&want) {
            return Ok(format!("events listed `{}`", line.trim()));
        }
    }
    Err(format!("events never said `{}`", want.trim()))
}

/// Every host `/index.md` lists runs a command and says so in `result.json`; the
/// check names the ones that did not.
fn hosts(client: &mut Client) -> Outcome {
    let page = client.read("index.md")?;
    let Some((_, table)) = page.split_once("\n## Hosts\n") else {
        return Ok("no hosts in the settings file".to_string());
    };
    let names: Vec<String> = table
        .lines()
        .filter_map(|line| line.strip_prefix("| "))
        .filter_map(|row| row.split(" |").next())
        .filter(|name| *name != "host" && !name.starts_with('-'))
        .map(str::to_string)
        .collect();
    let mut failed = Vec::new();
    for (index, host) in names.iter().enumerate() {
        let text = format!("#terminalfs host={host}\necho selftest on {host}");
        let outcome = client
            .start(&format!("host{index}"), &text)
            .and_then(|name| {
                let word = client.wait(&name)?;
                let said = client.read(&format!("cmd/{name}/stdout"))?;
                let result = client.read(&format!("cmd/{name}/result.json"))?;
                if word == "completed\n"
                    && said == format!("selftest on {host}\n")
                    && result.contains(&format!("\"host\": \"{host}\""))
                {
                    Ok(())
                } else {
                    let reason = client
                        .read(&format!("cmd/{name}/reason"))
                        .unwrap_or_default();
                    Err(format!("{host}: {} {}", word.trim(), reason.trim()))
                }
            });
        if let Err(why) = outcome {
            failed.push(why);
        }
    }
    if failed.is_empty() {
        Ok(format!("ran a command on each host: {}", names.join(", ")))
    } else {
        Err(format!("hosts that failed: {}", failed.join("; ")))
    }
}

fn expiry(client: &mut Client) -> Outcome {
    let name = client.start("expiry", "#terminalfs keep=1s\ntrue")?;
    client.wait(&name)?;
    // The wait just closed was the last open file: the command goes a second later.
    let closed = Instant::now();
    let dir = client.p(&format!("cmd/{name}"));
    loop {
        match std::fs::symlink_metadata(&dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
            Err(e) => return Err(format!("cannot look up cmd/{name}: {e}")),
            Ok(_) if closed.elapsed() > PATIENCE => {
                return Err(format!("cmd/{name} with keep=1s is still there"))
            }
            Ok(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    let took = closed.elapsed();
    if took < Duration::from_millis(900) {
        return Err(format!(
            "cmd/{name} with keep=1s went {} ms after its last close",
            took.as_millis()
        ));
    }
    Ok(format!(
        "a command with keep=1s went {} ms after its files were closed",
        took.as_millis()
    ))
}
