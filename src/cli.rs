//! The command line, defined once with clap. Doc comments here are the `--help` text;
//! completions and the man page are generated from this definition.

use crate::units::{parse_duration, parse_size, UnitError};
use clap::{CommandFactory, Parser};
use clap_complete::Shell;
use std::path::PathBuf;
use std::time::Duration;

/// Why a flag's value cannot be used: clap prints it after the flag's name and exits 2.
#[derive(Debug)]
enum ValueError {
    /// Not a duration or a size.
    Unit(UnitError),
    /// A value below what the flag needs, with the sentence saying why.
    TooSmall(&'static str),
}

impl std::fmt::Display for ValueError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ValueError::Unit(error) => error.fmt(f),
            ValueError::TooSmall(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for ValueError {}

impl From<UnitError> for ValueError {
    fn from(error: UnitError) -> ValueError {
        ValueError::Unit(error)
    }
}

fn duration(text: &str) -> Result<Duration, ValueError> {
    Ok(parse_duration(text)?)
}

/// `--wait-timeout`: a read must be able to wait at all.
fn wait_duration(text: &str) -> Result<Duration, ValueError> {
    match parse_duration(text)? {
        zero if zero.is_zero() => Err(ValueError::TooSmall(
            "a blocking read must be able to wait: give more than zero (the default is 25s)",
        )),
        wait => Ok(wait),
    }
}

/// `--timeout`: a limit of zero would stop every command as it starts.
fn limit(text: &str) -> Result<Duration, ValueError> {
    match parse_duration(text)? {
        zero if zero.is_zero() => Err(ValueError::TooSmall(
            "a limit of zero would stop every command as it starts: give more than zero, or \
             leave --timeout out for no limit",
        )),
        limit => Ok(limit),
    }
}

/// `--max-output`: the head and the newest bytes need a byte each.
fn output_size(text: &str) -> Result<u64, ValueError> {
    match parse_size(text)? {
        0 | 1 => Err(ValueError::TooSmall(
            "a stream keeps its head and its newest bytes: give at least 2",
        )),
        bytes => Ok(bytes),
    }
}

/// `--max-spool`: room for at least some output.
fn spool_size(text: &str) -> Result<u64, ValueError> {
    match parse_size(text)? {
        0 => Err(ValueError::TooSmall(
            "commands need room for their output: give more than zero",
        )),
        bytes => Ok(bytes),
    }
}

/// A FUSE filesystem that runs shell commands: write a command into ctl/<name>, and
/// cmd/<name>/ shows it running. It runs what is written as you, in a kernel sandbox
/// only when --sandbox or the settings say so.
#[derive(Debug, Parser)]
#[command(name = "terminalfs", version, about, long_about = None, after_help = UNITS)]
pub struct Cli {
    /// Where to mount the tree (created if missing) [default: ~/mnt/terminalfs]
    #[arg(long, value_name = "DIR")]
    pub path: Option<PathBuf>,

    /// The settings file with the deny list [default:
    /// $XDG_CONFIG_HOME/terminalfs/settings.json, else ~/.config/terminalfs/settings.json]
    #[arg(long, value_name = "FILE")]
    pub settings: Option<PathBuf>,

    /// Write the default settings file (to FILE, or the default path) and exit;
    /// never overwrites an existing file
    #[arg(long, value_name = "FILE", num_args = 0..=1, conflicts_with = "unmount")]
    pub init_settings: Option<Option<PathBuf>>,

    /// Unmount the tree at --path (live or left behind by a crash) and exit. On Linux it
    /// then waits up to --kill-grace plus 5 s for the mount's driver to let go, and
    /// aborts its FUSE connection if it has not (a driver that does not answer): what
    /// waited on the mount gets an error. It returns once the driver has exited (its
    /// pid file gone, its --state-dir free), so a new mount may start at once. Exit
    /// status: 0 unmounted, 32 nothing was mounted there (as umount(8)), 1 failed
    #[arg(long)]
    pub unmount: bool,

    /// With --unmount: abort the mount's FUSE connection at once, without waiting for
    /// its driver (Linux; macOS always unmounts with force)
    #[arg(long, requires = "unmount")]
    pub force: bool,

    /// Shell that runs each command as `<shell> -c <text>` [default: $SHELL, else /bin/sh]
    #[arg(long, value_name = "PATH")]
    pub(crate) shell: Option<PathBuf>,

    /// Working directory of commands [default: the driver's working directory]
    #[arg(long, value_name = "DIR")]
    pub(crate) cwd: Option<PathBuf>,

    /// How long a stopped command stays after its files were last open
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = duration)]
    pub(crate) keep: Duration,

    /// Delay between writing a command and starting it, unless something looks for it
    #[arg(long, value_name = "DURATION", default_value = "250ms", value_parser = duration)]
    pub(crate) settle: Duration,

    /// Longest time any read blocks (`wait`, `follow`); more than zero
    #[arg(long, value_name = "DURATION", default_value = "25s", value_parser = wait_duration)]
    pub(crate) wait_timeout: Duration,

    /// Bytes kept per output stream: the first quarter and the newest bytes; what lies
    /// between is dropped, with a notice; at least 2
    #[arg(long, value_name = "SIZE", default_value = "64m", value_parser = output_size)]
    pub(crate) max_output: u64,

    /// Bytes all commands' output may take on disk; finished commands least recently
    /// read are removed first to stay under it; more than zero
    #[arg(long, value_name = "SIZE", default_value = "2g", value_parser = spool_size)]
    pub(crate) max_spool: u64,

    /// Where output and finished commands are kept (created 0700; refused if others
    /// may read it) [default: $XDG_STATE_HOME/terminalfs/<id of --path>]
    #[arg(long, value_name = "DIR")]
    pub(crate) state_dir: Option<PathBuf>,

    /// Stop any command that runs longer than this; more than zero (leave it out for no
    /// limit). A `timeout=` directive may shorten it, not lengthen it [default: none]
    #[arg(long, value_name = "DURATION", value_parser = limit)]
    pub(crate) timeout: Option<Duration>,

    /// Time between SIGTERM and SIGKILL when a command is stopped
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = duration)]
    pub kill_grace: Duration,

    /// Run only commands whose every simple command matches an allow rule
    #[arg(long)]
    pub(crate) allowlist: bool,

    /// Run every command in the kernel sandbox the settings' "sandbox" section describes,
    /// even where it does not say "enabled" (see docs/sandbox.md)
    #[arg(long)]
    pub sandbox: bool,
    /// Run commands that name no host on this entry of the settings' `hosts` table
    /// (`local`: this machine); `#terminalfs host=NAME` picks another. See docs/hosts.md
    #[arg(long, value_name = "NAME")]
    pub(crate) host: Option<String>,

    /// The audit log of every decision (created 0600; a symbolic link is refused)
    /// [default: $XDG_STATE_HOME/terminalfs/audit.jsonl, else
    /// ~/.local/state/terminalfs/audit.jsonl]
    #[arg(long, value_name = "FILE")]
    pub(crate) audit_log: Option<PathBuf>,

    /// Detach once the mount is ready
    #[arg(long)]
    pub(crate) daemon: bool,

    /// Log every failed file operation with its reason (also: TERMINALFS_LOG=debug)
    #[arg(long, short)]
    pub(crate) verbose: bool,

    /// With --daemon: write the driver's pid here (created 0600, locked while it runs,
    /// removed when it stops; a symbolic link is refused)
    #[arg(long, value_name = "FILE", requires = "daemon")]
    pub(crate) pid_file: Option<PathBuf>,

    /// With --daemon: append the log here (created 0600; a symbolic link is refused;
    /// rotated past 16 MiB like the audit log, three old files kept) [default: discarded]
    #[arg(long, value_name = "FILE", requires = "daemon")]
    pub(crate) log_file: Option<PathBuf>,

    /// Print the completion script for SHELL and exit (the README says where to put it)
    #[arg(long, value_name = "SHELL", conflicts_with = "man")]
    pub completions: Option<Shell>,

    /// Print the man page (roff) and exit
    /// (`terminalfs --man | gzip > ~/.local/share/man/man1/terminalfs.1.gz`); with
    /// `check` or `selftest`, the page of that subcommand, terminalfs-check(1) or
    /// terminalfs-selftest(1)
    #[arg(long, value_name = "SUBCOMMAND", num_args = 0..=1, value_parser = MAN_PAGES)]
    pub man: Option<Option<String>>,

    #[command(subcommand)]
    pub command: Option<Subcommand>,
}

/// What to do instead of mounting.
#[derive(Debug, clap::Subcommand)]
pub enum Subcommand {
    /// Exercise a live mount the way its users do (run, wait, output order, follow,
    /// kill, signals, refusals, the index, events, expiry, each remote host), print one
    /// line per check; exit 1 if any fails
    Selftest {
        /// The mount to test [default: --path, else ~/mnt/terminalfs]
        #[arg(long, value_name = "DIR")]
        path: Option<PathBuf>,
    },
    /// Check command text against the settings as a mount would, and print the decision,
    /// the rule that matched and every simple command found. Exits 0 when the text would
    /// run, 1 when it would be refused, 2 on an error.
    Check {
        /// The settings file [default: $XDG_CONFIG_HOME/terminalfs/settings.json]
        #[arg(long, value_name = "FILE")]
        settings: Option<PathBuf>,

        /// Check as under --allowlist: every simple command must match an allow rule
        #[arg(long)]
        allowlist: bool,

        /// The directory commands start in, as a mount's --cwd: relative path operands
        /// are judged from there [default: the current directory]
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,

        /// The command text, or - to read it from standard input
        #[arg(value_name = "TEXT")]
        text: String,
    },
}

impl Cli {
    /// `--state-dir` as given (`--unmount` waits for the driver holding it).
    pub fn state_dir(&self) -> Option<PathBuf> {
        self.state_dir.clone()
    }

    /// Checks the flags that name files and directories before anything is mounted or
    /// created: a value that cannot work is a usage error, which names the flag and
    /// exits 2 like any other bad value. (A missing settings file is not a bad value:
    /// the driver says how to make one.)
    pub fn check_paths(&self) -> Result<(), clap::Error> {
        let bad = |flag: &str, value: &std::path::Path, why: &str| {
            Cli::command().error(
                clap::error::ErrorKind::ValueValidation,
                format!("invalid value '{}' for '{flag}': {why}", value.display()),
            )
        };
        let directory = |flag: &str, value: &Option<PathBuf>, must_exist: bool| {
            let Some(value) = value else { return Ok(()) };
            match std::fs::metadata(value) {
                Ok(meta) if meta.is_dir() => Ok(()),
                Ok(_) => Err(bad(flag, value, "not a directory")),
                Err(_) if !must_exist => Ok(()),
                Err(e) => Err(bad(
                    flag,
                    value,
                    &format!("cannot use it as a directory: {e}"),
                )),
            }
        };
        let file = |flag: &str, value: &Option<PathBuf>| match value {
            Some(value) if value.is_dir() => Err(bad(flag, value, "a directory, not a file")),
            _ => Ok(()),
        };
        directory("--path <DIR>", &self.path, false)?;
        directory("--cwd <DIR>", &self.cwd, true)?;
        directory("--state-dir <DIR>", &self.state_dir, false)?;
        file("--settings <FILE>", &self.settings)?;
        file("--audit-log <FILE>", &self.audit_log)?;
        file("--pid-file <FILE>", &self.pid_file)?;
        file("--log-file <FILE>", &self.log_file)?;
        if let Some(shell) = &self.shell {
            if !runnable(shell) {
                return Err(bad(
                    "--shell <PATH>",
                    shell,
                    "not an executable file (a name without a slash is looked up on PATH)",
                ));
            }
        }
        Ok(())
    }
}

/// Whether `program` names an executable regular file, looked up on `PATH` when it
/// has no slash, as commands' shells are.
fn runnable(program: &std::path::Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    let executable = |path: &std::path::Path| {
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.as_os_str().as_bytes().contains(&b'/') {
        return executable(program);
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| executable(&dir.join(program))))
}

/// The completion script for `shell`, generated from the definition above.
pub fn completion_script(shell: Shell) -> Vec<u8> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "terminalfs", &mut script);
    script
}

/// The subcommands that have a man page of their own, which the main page lists as
/// `terminalfs-<name>(1)`.
pub const MAN_PAGES: [&str; 2] = ["check", "selftest"];

/// The title of a subcommand's page.
fn page_title(subcommand: &str) -> Option<&'static str> {
    match subcommand {
        "check" => Some("terminalfs-check"),
        "selftest" => Some("terminalfs-selftest"),
        _ => None,
    }
}

/// How durations and sizes are written, for `--help` and the man page.
const UNITS: &str = "Durations are a whole number with ms, s, m, h or d (250ms, 30s, 10m, 1h); \
a bare number is seconds (--keep 5 is five seconds). Sizes are a number of bytes with k, m or \
g (64k, 16m, 2g).";

/// The sections of the main man page that describe the tree it mounts, in roff: what a
/// reader of `man terminalfs` needs besides the options.
const TREE_SECTIONS: &str = r##".SH THE TREE
Writing a command into \fIctl/<name>\fR runs it as \fB<shell> \-c <text>\fR, as the user
who mounted the tree; \fIcmd/<name>/\fR then shows it. Every directory has an
\fIindex.md\fR page; \fIskills/terminalfs/SKILL.md\fR teaches an agent the whole loop.
.TP
.B index.md
How the tree is laid out, the shell, working directory and rules in force.
.TP
.B ctl/<name>
A draft: write the command text here. It is decided when the last writer closes the
file and starts after \-\-settle, or at once when anything looks under cmd/ for it. A
name is 1 to 64 of A\-Z a\-z 0\-9 _ . \- not starting with a dot, and runs once. A name
ending in .tmp, or a hidden one (a dot and 1 to 63 of those characters, as editors save
through), never runs as such: it runs when renamed to a command name, and is freed
after \-\-keep otherwise. mv, cp \-p and install into ctl/ work: mode and owner changes
on a draft are taken and ignored.
.TP
.B ctl/index.md
How to run something, the drafts, and the last refusals with their reasons.
.TP
.B cmd/index.md
Every command with its status; \fBstarting\fR while its process is being made.
.TP
.B cmd/<name>/command, status
The text as written; running, paused, completed, error or denied.
.TP
.B cmd/<name>/pid, kill
Only while it runs. See KILL.
.TP
.B cmd/<name>/exitcode
Once it has stopped; 128+N after signal N.
.TP
.B cmd/<name>/reason
Only when it was refused or stopped abnormally (killed, timed out, the driver stopped).
.TP
.B cmd/<name>/stdout, stderr, output
Its output as it grows; output holds both in the order written. Past \-\-max\-output a
stream keeps its first quarter and its newest bytes, with one line naming what was
dropped.
.TP
.B cmd/<name>/follow
A live stream of output that ends when the command stops.
.TP
.B cmd/<name>/wait
See WAIT.
.TP
.B cmd/<name>/result.json
Exit code, signal, times, CPU, peak memory, byte counts, shell, directory, containment.
.TP
.B cmd/<name>/stdin, screen, keys
With the stdin or tty directives: input while it runs; a terminal's screen as text and
tmux key names to type.
.TP
.B events
One line per change of any command: \fI<time> <name> <word>\fR, the word being running,
paused, completed <code>, error <code>, denied or removed. Each open first lists every
command as it is; a read ends after \-\-wait\-timeout of silence.
.SH WAIT
A read of \fIwait\fR blocks until the command stops, or \-\-wait\-timeout passes, then
gives one word and a newline: \fBcompleted\fR, \fBerror\fR, \fBrunning\fR (it timed
out: read again) or \fBpaused\fR (it timed out while the command was paused; only then,
never at once). A loop on running therefore ends on a paused command.
.SH KILL
A write to \fIkill\fR: \fBstop\fR (any case but all capitals), nothing, a blank line or a word
that names no signal stops the command and everything it started: SIGTERM, then SIGKILL
after \-\-kill\-grace. A signal's name or number (INT, int, SIGINT, 2, \-2, \-s INT, HUP,
TERM, KILL, USR1, ...) sends just that signal. \fBSTOP\fR in capitals pauses it until
\fBCONT\fR. Several lines are sent in order, at most 16 a write. Writing to kill once the
command has stopped does nothing.
.SH DIRECTIVES
Leading comment lines of a command set its limits; the shell ignores them:
.PP
.B "#terminalfs timeout=10m memory=4G keep=1h cwd=DIR"
.PP
\fBtimeout\fR stops it after that long (the shorter of it and \-\-timeout);
\fBmemory\fR is its cgroup's memory.max, or where the driver has no memory controller an
address\-space limit, which a JVM cannot start under; \fBkeep\fR is how long it stays
once stopped; \fBcwd\fR is where it starts (absolute, ~/..., or relative to \-\-cwd; it
must exist). \fBstdin\fR gives it a pipe fed by cmd/<name>/stdin, \fBtty\fR or
\fBtty=COLSxROWS\fR a terminal. An unknown key, a bad value, a key given twice, or a
#terminalfs line after the command has begun (which the shell would skip as a comment)
refuses the command: the write or close fails with EINVAL and \fIreason\fR says why.
.SH REFUSALS
EPERM at a write or close of ctl/<name> means the deny list refused the text (its
settings file is \-\-settings); \fIcmd/<name>/reason\fR names the rule. EINVAL means a
bad name or directive, EEXIST a name taken. Each refusal is listed on ctl/index.md and
is one line of the log. \fBterminalfs check\fR tells before running. The deny list is not
a sandbox.
.SH ENVIRONMENT
A command gets the driver's environment plus TERMINALFS_NAME=<name> (and
TERM=xterm\-256color on a terminal), starts in \-\-cwd (by default the driver's working
directory), in a session of its own, and in a cgroup of its own where the driver may
make one. TERMINALFS_LOG=debug does what \-\-verbose does.
"##;

/// A man page (section 1, roff), generated from the definition above: the main one,
/// or with `subcommand`, `terminalfs-<subcommand>`.
pub fn man_page(subcommand: Option<&str>) -> std::io::Result<Vec<u8>> {
    // `terminalfs help` has no page: the main page lists only pages that exist.
    let main = Cli::command().disable_help_subcommand(true);
    let command = match subcommand {
        None => main,
        Some(name) => {
            let missing = || {
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("no man page for {name}"),
                )
            };
            let title = page_title(name).ok_or_else(missing)?;
            let sub = main.find_subcommand(name).cloned().ok_or_else(missing)?;
            sub.name(title).bin_name(format!("terminalfs {name}"))
        }
    };
    let source = format!("{} {}", command.get_name(), env!("CARGO_PKG_VERSION"));
    let mut page = Vec::new();
    let man = clap_mangen::Man::new(command).source(source);
    if subcommand.is_some() {
        man.render(&mut page)?;
        return Ok(page);
    }
    // The main page: what the tree is, before the options that run it.
    man.render_title(&mut page)?;
    man.render_name_section(&mut page)?;
    man.render_synopsis_section(&mut page)?;
    man.render_description_section(&mut page)?;
    page.extend_from_slice(TREE_SECTIONS.as_bytes());
    man.render_options_section(&mut page)?;
    man.render_subcommands_section(&mut page)?;
    page.extend_from_slice(format!(".SH \"DURATIONS AND SIZES\"\n{UNITS}\n").as_bytes());
    man.render_version_section(&mut page)?;
    Ok(page)
}
