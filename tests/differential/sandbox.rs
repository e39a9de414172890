//! A throwaway sandbox in which real bash runs generated texts: bubblewrap gives it fresh
//! user, mount, pid, network, ipc and uts namespaces and a private root on a tmpfs that
//! holds only bash, the libraries it links and a directory of logging stubs (bound at
//! `/usr/bin` and `/usr/sbin`, with `/bin` and `/sbin` pointing there). Run as root, the
//! sandbox is started as `nobody` first, so bash never runs as root on the real
//! filesystem. Every external command is a stub that appends its name to a per-text log
//! and exits 1; a name found nowhere is logged by `command_not_found_handle`. `sh` and
//! `bash` are stubs too, which log and then run the real bash, so shells started by a
//! text are followed.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Names that get a logging stub. Any other name bash looks up on `PATH` is logged by
/// `command_not_found_handle`; these exist so that paths (`/usr/bin/zapme`) and globs
/// (`/usr/bin/zap?e`) find a file.
pub const STUBS: &[&str] = &[
    "zapme",
    "sudo",
    "rm",
    "git",
    "cat",
    "ls",
    "grep",
    "env",
    "nohup",
    "timeout",
    "xargs",
    "find",
    "dd",
    "chmod",
    "make",
    "cargo",
    "tee",
    "id",
    "su",
    "doas",
    "flock",
    "chroot",
    "unshare",
    "nsenter",
    "runuser",
    "sg",
    "setpriv",
    "prlimit",
    "chrt",
    "numactl",
    "script",
    "strace",
    "ltrace",
    "watch",
    "parallel",
    "fakeroot",
    "firejail",
    "bwrap",
    "systemd-run",
    "nice",
    "stdbuf",
    "setsid",
    "ionice",
    "taskset",
    "busybox",
];

/// How long one text may run before its process group is killed.
const TEXT_LIMIT: Duration = Duration::from_secs(2);

/// What bash did with one text.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The names of the external commands it ran (stubs and names not found), in order.
    pub executed: Vec<String>,
    /// Whether it was still running at the limit and was killed.
    pub timed_out: bool,
}

pub struct Sandbox {
    dir: tempfile::TempDir,
    libraries: Vec<PathBuf>,
}

impl Sandbox {
    /// Prepares the stubs; panics with a sentence when bubblewrap is missing.
    pub fn new() -> Sandbox {
        let dir = tempfile::tempdir().expect("temporary directory");
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).expect("chmod");
        let stubs = dir.path().join("stubs");
        fs::create_dir(&stubs).expect("stub directory");
        let logger = "#!/.tools/bash\nprintf '%s\\0' \"${0##*/}\" >> \"$STUB_LOG\"\n";
        for name in STUBS {
            write_executable(&stubs.join(name), &format!("{logger}exit 1\n"));
        }
        for shell in ["sh", "bash"] {
            write_executable(
                &stubs.join(shell),
                &format!("{logger}exec /.tools/bash \"$@\"\n"),
            );
        }
        fs::write(
            stubs.join(".env"),
            "command_not_found_handle() { printf '%s\\0' \"${1##*/}\" >> \"$STUB_LOG\"; \
             return 127; }\n",
        )
        .expect("write the environment file");
        fs::write(stubs.join(".driver"), DRIVER).expect("write the driver");
        Sandbox {
            dir,
            libraries: bash_libraries(),
        }
    }

    /// Runs each text as `bash -c TEXT` in one fresh sandbox, one after the other, and
    /// returns what each did.
    pub fn run(&self, texts: &[String]) -> Vec<Outcome> {
        let batch = self.dir.path().join(format!("batch-{}", unique()));
        let (text_dir, log_dir) = (batch.join("texts"), batch.join("logs"));
        fs::create_dir_all(&text_dir).expect("text directory");
        fs::create_dir_all(&log_dir).expect("log directory");
        for dir in [&batch, &text_dir] {
            fs::set_permissions(dir, fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        fs::set_permissions(&log_dir, fs::Permissions::from_mode(0o777)).expect("chmod");
        for (index, text) in texts.iter().enumerate() {
            fs::write(text_dir.join(format!("{index:06}")), text).expect("write a text");
        }
        let status = self
            .command(&text_dir, &log_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("bwrap runs (install Debian's bubblewrap package)");
        assert!(status.success(), "the sandbox failed: {status}");
        let outcomes = (0..texts.len())
            .map(|index| {
                let log = log_dir.join(format!("{index:06}"));
                let executed = fs::read_to_string(&log)
                    .unwrap_or_default()
                    .split_terminator('\0')
                    .map(str::to_owned)
                    .collect();
                let timed_out = log.with_extension("timeout").exists();
                Outcome {
                    executed,
                    timed_out,
                }
            })
            .collect();
        let _ = fs::remove_dir_all(&batch);
        outcomes
    }

    fn command(&self, text_dir: &Path, log_dir: &Path) -> Command {
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        let mut command = if root {
            let mut c = Command::new("setpriv");
            c.args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--inh-caps=-all",
                "--",
                "bwrap",
            ]);
            c
        } else {
            Command::new("bwrap")
        };
        command.args([
            "--unshare-all",
            "--unshare-user",
            "--die-with-parent",
            "--new-session",
            "--clearenv",
            "--tmpfs",
            "/",
            "--dir",
            "/.tools",
        ]);
        command.args(["--ro-bind", "/usr/bin/bash", "/.tools/bash"]);
        for library in &self.libraries {
            command.arg("--ro-bind").arg(library).arg(library);
        }
        let stubs = self.dir.path().join("stubs");
        command.arg("--ro-bind").arg(&stubs).arg("/usr/bin");
        command.arg("--ro-bind").arg(&stubs).arg("/usr/sbin");
        command.args([
            "--symlink",
            "usr/bin",
            "/bin",
            "--symlink",
            "usr/sbin",
            "/sbin",
        ]);
        command.arg("--ro-bind").arg(text_dir).arg("/texts");
        command.arg("--bind").arg(log_dir).arg("/logs");
        command.args(["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]);
        command.args(["--chdir", "/tmp"]);
        command.args(["--setenv", "PATH", "/usr/bin:/usr/sbin"]);
        command.args(["--setenv", "BASH_ENV", "/usr/bin/.env"]);
        command.args(["--setenv", "HOME", "/tmp"]);
        let ticks = (TEXT_LIMIT.as_millis() / 20).to_string();
        command.args(["--setenv", "TICKS", &ticks]);
        command.args(["/.tools/bash", "/usr/bin/.driver"]);
        command
    }
}

/// Runs every text in its own process group, kills it at the limit, and notes that.
const DRIVER: &str = r#"set -m
exec {sleeper}<> <(:)
for f in /texts/*; do
  n=${f##*/}
  export STUB_LOG=/logs/$n
  : > "$STUB_LOG"
  /.tools/bash -c "$(< "$f")" < /dev/null > /dev/null 2>&1 &
  pid=$!
  for ((k = 0; k < TICKS; k++)); do
    kill -0 "$pid" 2> /dev/null || break
    read -t 0.02 -u "$sleeper"
  done
  if kill -0 "$pid" 2> /dev/null; then : > "/logs/$n.timeout"; fi
  kill -KILL -- "-$pid" 2> /dev/null
  wait "$pid" 2> /dev/null
done
exit 0
"#;

fn write_executable(path: &Path, text: &str) {
    fs::write(path, text).expect("write a stub");
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).expect("chmod a stub");
}

/// The shared libraries bash links, as `ldd` lists them.
fn bash_libraries() -> Vec<PathBuf> {
    let out = Command::new("ldd")
        .arg("/usr/bin/bash")
        .output()
        .expect("ldd runs");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter(|word| word.starts_with('/'))
        .map(PathBuf::from)
        .collect()
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}
