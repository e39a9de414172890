//! Rendering of the pages (Markdown with YAML frontmatter) and of the small status
//! files. Pure functions of the facts they are given, so they are unit-tested without
//! a mount; the tree calls them when a file is opened and keeps the bytes for that open.

use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::policy::audit::rfc3339;
use crate::supervisor::{JobSnapshot, StreamBytes};
use crate::units::format_duration;

/// Facts every page may mention.
pub struct Site<'a> {
    /// Where the tree is mounted, when the driver knows it.
    pub mount: Option<&'a Path>,
    pub shell: &'a Path,
    pub cwd: &'a Path,
    pub settings: &'a Path,
    pub rules: usize,
    /// Settings entries that make no rule (`deny: Read(./.env)`, `deny: sudo`).
    pub ignored: Vec<String>,
    /// What the sandbox does, in lines (see [`crate::sandbox::describe`]).
    pub sandbox: Vec<String>,
    pub commands: usize,
    pub wait_timeout: Duration,
    pub keep: Duration,
    pub settle: Duration,
    /// The `/index.md` section on remote hosts (empty without any).
    pub hosts: String,
}

impl Site<'_> {
    /// The mount path as written in pages: the real one or a placeholder.
    pub(super) fn mount_text(&self) -> String {
        match self.mount {
            Some(path) => path.display().to_string(),
            None => "<mount>".to_string(),
        }
    }
}

/// One row of `/cmd/index.md`.
pub struct Row<'a> {
    pub name: &'a str,
    pub status: &'a str,
    pub exitcode: Option<i32>,
    /// When its shell started (or when it was refused).
    pub started: Option<SystemTime>,
    /// How long it ran, or has been running.
    pub duration: Option<Duration>,
    pub command: &'a [u8],
    /// Output bytes held and dropped, stdout and stderr together.
    pub kept: u64,
    pub dropped: u64,
}

/// A YAML scalar that can hold any text: a JSON string is a valid YAML
/// double-quoted scalar.
fn yaml(text: &str) -> String {
    serde_json::to_string(text).expect("a string always serialises")
}

pub(super) fn frontmatter(
    kind: &str,
    title: &str,
    description: &str,
    extra: &[(&str, String)],
) -> String {
    let mut out = String::from("---\n");
    out.push_str(&format!("type: {kind}\n"));
    out.push_str(&format!("title: {}\n", yaml(title)));
    out.push_str(&format!("description: {}\n", yaml(description)));
    out.push_str(&format!("timestamp: {}\n", rfc3339(SystemTime::now())));
    for (key, value) in extra {
        out.push_str(&format!("{key}: {value}\n"));
    }
    out.push_str("---\n\n");
    out
}

/// How many characters of a command's first line `cmd/index.md` shows.
pub const CELL_CHARS: usize = 200;

/// What follows a first line cut at [`CELL_CHARS`].
const CUT_MARK: &str = " … (cut)";

/// The first line of a command as a Markdown table cell: verbatim inside a code span
/// (what the table itself forces, `|`, is written `\|`, which a table's code span
/// shows as `|`), then an ellipsis when more lines follow. Control characters, which
/// would break the row, show as spaces. A first line longer than [`CELL_CHARS`]
/// characters is cut there and marked, so one long command cannot swell the page.
pub fn table_cell(text: &[u8]) -> String {
    let text = String::from_utf8_lossy(text);
    let trimmed = text.trim_end_matches(['\n', '\r']);
    let mut lines = trimmed.lines();
    let first = lines.next().unwrap_or("");
    let more = lines.next().is_some();
    let cut = first.chars().nth(CELL_CHARS).is_some();
    let first: String = first
        .chars()
        .take(CELL_CHARS)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if first.trim().is_empty() {
        return if more { "(blank) …" } else { "(blank)" }.to_string();
    }
    let mut cell = code_span(&first.replace('|', "\\|"));
    if cut {
        cell.push_str(CUT_MARK);
    } else if more {
        cell.push_str(" …");
    }
    cell
}

/// `text` in a code span: fenced by one more backtick than its longest run of them,
/// padded with a space where it starts or ends with a backtick or a space (one space
/// each side is what a code span strips).
fn code_span(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let edge = |c: Option<char>| matches!(c, Some('`' | ' '));
    let pad = if edge(text.chars().next()) || edge(text.chars().last()) {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// A duration as people read it: `250ms`, `3.2s`, `4m05s`, `2h03m`.
fn elapsed_text(duration: Duration) -> String {
    let ms = duration.as_millis();
    let s = duration.as_secs();
    match s {
        0 => format!("{ms}ms"),
        1..=59 => format!("{:.1}s", duration.as_secs_f64()),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s / 60 % 60),
    }
}

pub fn root_index(site: &Site) -> String {
    let mount = site.mount_text();
    let mut page = frontmatter(
        "index",
        "terminalfs",
        "A filesystem that runs shell commands: write a command into ctl/<name>, read cmd/<name>/ to watch it.",
        &[
            ("mount", yaml(&mount)),
            ("shell", yaml(&site.shell.display().to_string())),
            ("cwd", yaml(&site.cwd.display().to_string())),
            ("commands", site.commands.to_string()),
            ("rules", site.rules.to_string()),
            ("settings", yaml(&site.settings.display().to_string())),
        ],
    );
    page.push_str(&format!(
        "# terminalfs at {mount}\n\n\
         Commands run as `{shell} -c <text>` in `{cwd}` (a command's own \
         `#terminalfs cwd=DIR` line moves it), as the user who mounted this tree, with the \
         environment the driver was started with plus `TERMINALFS_NAME=<name>` (and \
         `TERM=xterm-256color` on a terminal); standard input is at end of file unless the \
         command asks for it. A driver restarted from another directory without `--cwd` \
         changes what relative paths mean.\n\
         {count} command(s) exist now; {rules} rule(s) from `{settings}` refuse commands.\n\
         The rules are not a sandbox: what they do not refuse runs with your rights, \
         bounded only by the kernel sandbox when the Sandbox section below says it is on.\n\n\
         ## Layout\n\n\
         - `ctl/<name>`: write a command here to run it as `<name>` (see `ctl/index.md`, \
           which also lists drafts and the last refusals with their reasons).\n\
         - `cmd/index.md`: every command with its status (`starting` until its process exists).\n\
         - `cmd/<name>/`: `command`, `status`, `pid` and `kill` while it runs, `exitcode` once it stopped,\n  \
           `stdout`, `stderr`, `output`, `follow`, `wait`, `result.json`; `reason` only when \
           it was refused or stopped abnormally (killed, timed out, the driver stopped); \
           `stdin` while a command started with `#terminalfs stdin` or `tty` runs; `screen` \
           and `keys` for one on a terminal (`#terminalfs tty`).\n\
         - `events`: one line per change of any command (`<time> <name> <word>`).\n\
         - `skills/terminalfs/SKILL.md`: how an agent uses this mount.\n\n\
         ## Tools\n\n\
         - `terminalfs check --settings {settings} --cwd {cwd} 'TEXT'` prints whether this \
           mount's rules would run a text, and which rule refuses it, without running \
           anything.\n\
         - `terminalfs selftest --path {mount}` exercises this mount as an agent would and \
           prints one line per check.\n\
         - `man terminalfs` describes the tree, the directives and every option.\n",
        shell = site.shell.display(),
        cwd = site.cwd.display(),
        count = site.commands,
        rules = site.rules,
        settings = site.settings.display(),
    ));
    page.push_str("\n## Sandbox\n\n");
    for line in &site.sandbox {
        page.push_str(&format!("- {line}\n"));
    }
    page.push_str(&site.hosts);
    if !site.ignored.is_empty() {
        page.push_str(
            "\n## Ignored settings entries\n\n\
             These entries make no rule here: they name another tool, or no tool at all (a \
             command is written `Bash(<command>:*)`).\n\n",
        );
        for entry in &site.ignored {
            page.push_str(&format!("- `{entry}`\n"));
        }
    }
    page
}

/// `drafts`: each draft's name and where it stands; `refusals`: the last refused names,
/// renames and writes, oldest first.
pub fn ctl_index(
    site: &Site,
    drafts: &[(&str, &str)],
    refusals: &std::collections::VecDeque<(SystemTime, String, String)>,
) -> String {
    let m = site.mount_text();
    let mut page = frontmatter(
        "index",
        "Run a command",
        "Write a command into ctl/<name>; it runs when the writer closes the file.",
        &[("drafts", drafts.len().to_string())],
    );
    page.push_str(&format!(
        "# Run a command\n\n\
         Write the command text into `{m}/ctl/<name>`; when the last writer closes the file, \
         the command is decided and starts as `cmd/<name>/`.\n\n\
         ```sh\n\
         echo 'make test' > {m}/ctl/tests\n\
         cat {m}/cmd/tests/wait\n\
         tail -n 20 {m}/cmd/tests/output\n\
         ```\n\n\
         - A name is 1–64 characters of `A-Z a-z 0-9 _ . -`, not starting with `.`.\n\
         - A name runs once; remove `cmd/<name>` (or let it expire) to use it again.\n\
         - A multi-line script can be written with a heredoc. `#terminalfs` lines at the \
           very top set its limits: `timeout=10m`, `memory=4G`, `keep=1h`, `cwd=DIR` (where \
           it starts), `stdin`, `tty`. A bare number of `timeout=` or `keep=` is seconds. \
           An unknown key, a bad value, a key given twice, a `cwd=` that is no directory, \
           or a `#terminalfs` line after the command has begun (the shell would take it for \
           a comment) fails the write or close with \"Invalid argument\", and \
           `cmd/<name>/reason` says why.\n\
         - `memory=` is the command's cgroup `memory.max` where the driver has the memory \
           controller; elsewhere it is an address-space limit (`RLIMIT_AS`), which a JVM \
           and other programs that reserve much more than they use cannot start under \
           (\"Could not allocate compressed class space\"): leave it out for them there. \
           `result.json`'s `memory_limit` says which it was.\n\
         - `#terminalfs stdin` at the top gives it a standard input fed by writes to \
           `cmd/<name>/stdin`; `#terminalfs tty` (or `tty=COLSxROWS`) runs it on a \
           terminal with `cmd/<name>/screen` and `cmd/<name>/keys` (see the skill). What \
           a shell reads from `stdin` is checked by the deny list as one script of at \
           most 1 MiB in all; a write refused there (\"Operation not permitted\", or \
           \"File too large\" past 1 MiB) is listed with its reason under \"Refused \
           lately\" at the end of this page.\n\
         - A draft whose name ends in `.tmp`, or a hidden one (`.` and 1–63 of the name \
           characters, as editors and write tools save through: `mkstemp` in `ctl/`, write, \
           rename), never runs under that name: it runs when renamed to a command name \
           (`mv ctl/<name>.tmp ctl/<name>`), {settle} after the rename; one never renamed \
           is freed after --keep, and said below.\n\
         - `mv`, `cp -p` and `install` into `ctl/` work: a draft takes mode and owner \
           changes and ignores them.\n\
         - A write that the deny list refuses fails with \"Operation not permitted\"; \
           `cmd/<name>/reason` says which rule refused it. `terminalfs check 'TEXT'` tells \
           before you write.\n\
         - \"Invalid argument\" at the create means the name is not allowed; \"File \
           exists\" that it is taken (a draft or a command has it).\n\
         - Every refused name, rename and write is listed with its reason under \
           \"Refused lately\" below, and is one line in the driver's log.\n\
         - `rm ctl/<name>` gives back a name that has not run yet.\n\
         - A command starts {settle} after it is written, or at once when anything looks \
           under `cmd/` for it.\n",
        settle = format_duration(site.settle),
    ));
    if !drafts.is_empty() {
        page.push_str("\n## Drafts\n\n");
        for (name, stage) in drafts {
            page.push_str(&format!("- {}: {stage}\n", code_span(name)));
        }
    }
    if !refusals.is_empty() {
        page.push_str(
            "\n## Refused lately\n\n\
             Names, renames and command texts refused here, drafts freed, and writes \
             refused at `cmd/<name>/stdin` (as `<name>/stdin`), newest first:\n\n",
        );
        for (at, name, why) in refusals.iter().rev() {
            let name = code_span(&name.replace(|c: char| c.is_control(), " "));
            page.push_str(&format!("- {} {name}: {why}\n", rfc3339(*at)));
        }
    }
    page
}

/// `evicted`: finished commands removed so far to keep the spool under its bound.
pub fn cmd_index(site: &Site, rows: &[Row], evicted: u64) -> String {
    let m = site.mount_text();
    let mut page = frontmatter(
        "index",
        "Commands",
        "Every command with its status.",
        &[
            ("count", rows.len().to_string()),
            ("evicted", evicted.to_string()),
        ],
    );
    page.push_str("# Commands\n\n");
    if evicted > 0 {
        page.push_str(&format!(
            "{evicted} finished command(s) were removed early to keep the output on disk \
             under --max-spool (least recently read first).\n\n"
        ));
    }
    if rows.is_empty() {
        page.push_str(&format!(
            "Nothing has run yet. Start something with:\n\n\
             ```sh\necho 'uname -a' > {m}/ctl/hello\ncat {m}/cmd/hello/wait\n\
             cat {m}/cmd/hello/stdout\n```\n\n\
             `wait` blocks until the command stops; its output is complete after that.\n"
        ));
        return page;
    }
    page.push_str(&format!(
        "The command column shows each command's first line, at most {CELL_CHARS} \
         characters: a line cut there ends in `{cut}`, a command of more lines in `…`. \
         `cat {m}/cmd/<name>/command` shows the whole text.\n\n",
        cut = CUT_MARK.trim_start(),
    ));
    page.push_str(
        "| name | status | exit code | started | duration | command | kept bytes | dropped bytes |\n",
    );
    page.push_str("|---|---|---|---|---|---|---|---|\n");
    for row in rows {
        page.push_str(&format!(
            "| [{name}]({name}/status) | {status} | {code} | {started} | {duration} | {command} \
             | {kept} | {dropped} |\n",
            kept = row.kept,
            name = row.name,
            status = row.status,
            code = row.exitcode.map(|c| c.to_string()).unwrap_or_default(),
            started = row.started.map(rfc3339).unwrap_or_default(),
            duration = row.duration.map(elapsed_text).unwrap_or_default(),
            command = table_cell(row.command),
            dropped = row.dropped,
        ));
    }
    page
}

pub fn skills_index() -> String {
    let mut page = frontmatter("index", "Skills", "Agent skills for this mount.", &[]);
    page.push_str("# Skills\n\n- [terminalfs](terminalfs/SKILL.md): run, watch and stop shell commands through files.\n");
    page
}

pub fn skill_dir_index() -> String {
    let mut page = frontmatter(
        "index",
        "terminalfs skill",
        "The skill that teaches an agent to use this mount.",
        &[],
    );
    page.push_str("# terminalfs skill\n\n- [SKILL.md](SKILL.md): the skill itself.\n");
    page
}

/// The answer of `wait`: the word `status` shows, so `[ "$(cat wait)" = running ]`
/// means what it says.
pub fn wait_answer(stopped: Option<bool>) -> &'static [u8] {
    match stopped {
        None => b"running\n",
        Some(true) => b"completed\n",
        Some(false) => b"error\n",
    }
}

/// The answer of a `wait` whose wait ran out: `paused\n` when the command is paused
/// then (never sooner: a pause is no end), else as [`wait_answer`], `running\n`.
pub fn wait_timed_out(stopped: Option<bool>, paused: bool) -> &'static [u8] {
    match stopped {
        None if paused => b"paused\n",
        stopped => wait_answer(stopped),
    }
}

/// `result.json` for a job: every field known so far.
pub fn result_json(name: &str, text: &[u8], snapshot: &JobSnapshot, status: &str) -> Vec<u8> {
    use serde_json::json;
    let life = &snapshot.life;
    let exit = life.exit();
    let stream = |bytes: StreamBytes| json!({ "bytes": bytes.bytes, "kept": bytes.kept, "dropped": bytes.dropped });
    let value = json!({
        "name": name,
        "command": String::from_utf8_lossy(text),
        "status": status,
        "exitcode": exit.as_ref().map(|e| e.code),
        "signal": exit.as_ref().and_then(|e| e.signal),
        "pid": life.pid(),
        "started_at": life.started_at().map(rfc3339),
        "finished_at": life.finished_at().map(rfc3339),
        "duration_ms": life.duration().map(|d| d.as_millis() as u64),
        "user_ms": exit.as_ref().map(|e| e.user_ms),
        "sys_ms": exit.as_ref().map(|e| e.sys_ms),
        "max_rss_kib": exit.as_ref().map(|e| e.max_rss_kib),
        "max_rss_source": exit
            .as_ref()
            .map(|e| e.max_rss_source.as_str())
            .filter(|source| !source.is_empty()),
        "stdout": stream(snapshot.stdout),
        "stderr": stream(snapshot.stderr),
        "output": stream(snapshot.output),
        "timed_out": life.timed_out(),
        "killed": life.killed(),
        "reason": life.reason(),
        "output_incomplete": snapshot.output_cut_short,
        "shell": snapshot.launch.as_ref().map(|launch| launch.shell.to_string_lossy()),
        "cwd": snapshot.launch.as_ref().map(|launch| launch.cwd.to_string_lossy()),
        "containment": snapshot.containment,
        "host": snapshot.host,
        // The far side's clock: when the command started and ended there.
        "remote": snapshot.remote_times.map(|(start, end)| json!({
            "started_at": rfc3339(std::time::UNIX_EPOCH + Duration::from_secs(start)),
            "finished_at": rfc3339(std::time::UNIX_EPOCH + Duration::from_secs(end)),
            "duration_s": end.saturating_sub(start),
        })),
        // Across a launcher's two streams only each stream's own order survives.
        "output_order": snapshot.host.as_ref().map(|_| "per stream"),
        "memory_limit": snapshot.memory_limit,
        "sandbox": snapshot.sandbox,
        "terminal": snapshot.terminal.map(|(size, (row, col))| json!({
            "cols": size.cols,
            "rows": size.rows,
            "cursor": { "row": row, "col": col },
        })),
    });
    let mut bytes = serde_json::to_vec_pretty(&value).expect("a JSON value always serialises");
    bytes.push(b'\n');
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::skill::skill;
    use std::path::PathBuf;

    fn site(mount: Option<&Path>) -> Site<'_> {
        Site {
            mount,
            shell: Path::new("/bin/sh"),
            cwd: Path::new("/tmp"),
            settings: Path::new("/etc/s.json"),
            rules: 3,
            ignored: vec!["deny: sudo".to_owned()],
            sandbox: vec!["sandbox: off".to_owned()],
            commands: 2,
            wait_timeout: Duration::from_secs(25),
            keep: Duration::from_secs(60),
            settle: Duration::from_millis(250),
            hosts: String::new(),
        }
    }

    fn frontmatter_keys(page: &str) -> Vec<String> {
        let body = page
            .strip_prefix("---\n")
            .expect("frontmatter opens the page");
        let end = body.find("\n---\n").expect("frontmatter is closed");
        body[..end]
            .lines()
            .map(|l| l.split(':').next().unwrap().to_string())
            .collect()
    }

    #[test]
    fn pages_have_frontmatter() {
        let mount = PathBuf::from("/m");
        let s = site(Some(&mount));
        for page in [
            root_index(&s),
            ctl_index(&s, &[], &Default::default()),
            cmd_index(&s, &[], 0),
            skills_index(),
            skill_dir_index(),
        ] {
            let keys = frontmatter_keys(&page);
            for key in ["type", "title", "description", "timestamp"] {
                assert!(keys.iter().any(|k| k == key), "{key} missing in {page}");
            }
        }
        let keys = frontmatter_keys(&skill(&s));
        assert_eq!(keys, ["name", "description"]);
    }

    #[test]
    fn root_index_states_the_facts() {
        let mount = PathBuf::from("/m");
        let page = root_index(&site(Some(&mount)));
        assert!(page.contains("mount: \"/m\""));
        assert!(page.contains("shell: \"/bin/sh\""));
        assert!(page.contains("commands: 2"));
        assert!(page.contains("rules: 3"));
        assert!(page.contains("settings: \"/etc/s.json\""));
        assert!(page.contains("## Ignored settings entries"));
        assert!(page.contains("- `deny: sudo`\n"));
    }

    #[test]
    fn skill_names_the_mount_or_a_placeholder() {
        let mount = PathBuf::from("/srv/tfs");
        let known = skill(&site(Some(&mount)));
        assert!(known.contains("echo 'ls -la' > /srv/tfs/ctl/listing"));
        assert!(!known.contains("<mount>"));
        let unknown = skill(&site(None));
        assert!(unknown.contains("Replace `<mount>`"));
        assert!(unknown.contains("<mount>/ctl/listing"));
    }

    #[test]
    fn empty_command_index_says_how_to_start() {
        let page = cmd_index(&site(None), &[], 0);
        assert!(page.contains("count: 0"));
        assert!(page.contains("Nothing has run yet"));
    }

    #[test]
    fn command_table_escapes_and_shortens() {
        let rows = [
            Row {
                name: "a",
                status: "completed",
                exitcode: Some(0),
                started: Some(SystemTime::UNIX_EPOCH),
                duration: Some(Duration::from_millis(3250)),
                command: b"echo a | tr a b\necho second",
                kept: 12,
                dropped: 0,
            },
            Row {
                name: "b",
                status: "running",
                exitcode: None,
                started: None,
                duration: None,
                command: b"\xff\x00`x` <y>",
                kept: 3,
                dropped: 7,
            },
        ];
        let page = cmd_index(&site(None), &rows, 2);
        assert!(page.contains("count: 2"));
        assert!(page.contains("evicted: 2"));
        assert!(page.contains(
            "| [a](a/status) | completed | 0 | 1970-01-01T00:00:00.000Z | 3.2s \
             | `echo a \\| tr a b` … | 12 | 0 |"
        ));
        assert!(
            page.contains("| [b](b/status) | running |  |  |  | ``\u{fffd} `x` <y>`` | 3 | 7 |")
        );
        for line in page.lines().filter(|l| l.starts_with("| [")) {
            assert_eq!(line.matches(" | ").count(), 7, "{line}");
        }
    }

    #[test]
    fn commands_show_verbatim_in_code_spans() {
        assert_eq!(
            table_cell(b"make 2>&1 | tee log"),
            "`make 2>&1 \\| tee log`"
        );
        assert_eq!(
            table_cell(b"RUSTUP_HOME=x *y* [z]"),
            "`RUSTUP_HOME=x *y* [z]`"
        );
        assert_eq!(table_cell(b"echo `date`"), "`` echo `date` ``");
        assert_eq!(table_cell(b"`a``b"), "``` `a``b ```");
        assert_eq!(table_cell(b" \n\n"), "(blank)");
        assert_eq!(table_cell(b"a\tb\nsecond"), "`a b` …");
    }

    #[test]
    fn a_long_first_line_is_cut_on_a_character_boundary() {
        // Exactly the width shows whole.
        let whole = "x".repeat(CELL_CHARS);
        assert_eq!(table_cell(whole.as_bytes()), format!("`{whole}`"));
        // 300 kB on one line, of two-byte characters, becomes one short cell.
        let long = "é".repeat(150_000);
        let cell = table_cell(long.as_bytes());
        assert_eq!(cell, format!("`{}` … (cut)", "é".repeat(CELL_CHARS)));
        // Cut and more lines: the cut says it.
        let text = format!("{}\nsecond", "y".repeat(CELL_CHARS + 1));
        assert_eq!(
            table_cell(text.as_bytes()),
            format!("`{}` … (cut)", "y".repeat(CELL_CHARS))
        );
    }

    #[test]
    fn durations_read_as_people_write_them() {
        let text = |ms| elapsed_text(Duration::from_millis(ms));
        assert_eq!(text(250), "250ms");
        assert_eq!(text(3_250), "3.2s");
        assert_eq!(text(245_000), "4m05s");
        assert_eq!(text(7_380_000), "2h03m");
    }

    #[test]
    fn wait_answers_are_the_status_words() {
        assert_eq!(wait_answer(None), b"running\n");
        assert_eq!(wait_answer(Some(true)), b"completed\n");
        assert_eq!(wait_answer(Some(false)), b"error\n");
        assert_eq!(wait_timed_out(None, true), b"paused\n");
        assert_eq!(wait_timed_out(None, false), b"running\n");
        assert_eq!(wait_timed_out(Some(true), true), b"completed\n");
    }
}
