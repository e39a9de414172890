//! The settings file: Claude Code's shape, `{"permissions": {"deny": [...], "ask": [...],
//! "allow": [...]}}`, read into a [`RuleSet`]; the default list written by
//! `--init-settings`; and where the settings file lives when no flag says otherwise.
//!
//! Keys other than `permissions` and its three lists are ignored, and so are entries for
//! tools other than `Bash`, so a harness's file can be used whole. Anything of the wrong
//! type, and any `Bash` entry that does not parse, makes the whole file invalid: a deny list
//! that silently lost an entry would be worse than none.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::rules::Rule;

/// Why a settings file cannot be read, used or written.
#[derive(Debug)]
pub enum SettingsError {
    /// The system refused an operation on the file or its directory.
    Io {
        path: PathBuf,
        doing: &'static str,
        error: std::io::Error,
    },
    /// `--init-settings` never overwrites a file.
    Exists { path: PathBuf },
    /// The file is not UTF-8 text.
    NotUtf8 {
        path: PathBuf,
        error: std::str::Utf8Error,
    },
    /// Its JSON does not make rules; `why` is [`RuleSet::parse`]'s sentence.
    Invalid { path: PathBuf, why: String },
}

impl std::fmt::Display for SettingsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SettingsError::Io { path, doing, error } => {
                write!(f, "cannot {doing} {}: {error}", path.display())
            }
            SettingsError::Exists { path } => write!(
                f,
                "settings file {} already exists; not overwriting it",
                path.display()
            ),
            SettingsError::NotUtf8 { path, error } => {
                write!(f, "settings file {} is not UTF-8: {error}", path.display())
            }
            SettingsError::Invalid { path, why } => {
                write!(f, "settings file {}: {why}", path.display())
            }
        }
    }
}

impl std::error::Error for SettingsError {}
pub use crate::paths::home_dir;
use crate::paths::xdg_dir;

/// The rules of one settings file, in file order.
#[derive(Debug, Clone, Default)]
pub struct RuleSet {
    /// Commands refused outright.
    pub deny: Vec<Rule>,
    /// Commands that would need a confirmation; refused too, since nobody is there to ask.
    pub ask: Vec<Rule>,
    /// Commands allowed under `--allowlist`; ignored otherwise.
    pub allow: Vec<Rule>,
    /// Entries that make no rule, as `list: entry` (`deny: Read(./.env)`), in file order.
    pub ignored: Vec<String>,
    /// Warnings about ignored entries that name no tool at all (`"sudo"` where
    /// `"Bash(sudo:*)"` was meant): said at start and on every reload.
    pub warnings: Vec<String>,
    /// The `sandbox` section, with what `Edit`, `Read` and `WebFetch` rules add to it.
    pub sandbox: std::sync::Arc<crate::sandbox::Section>,
    /// The `hosts` table: where `#terminalfs host=NAME` may send a command.
    pub hosts: crate::hosts::Hosts,
}

impl RuleSet {
    /// Parses the text of a settings file. `{}` is valid and has no rules.
    ///
    /// The error is a sentence about the JSON alone (the caller names the file, see
    /// [`SettingsError::Invalid`]): it is built from the entry at fault, and a type
    /// for it would only carry that text.
    pub fn parse(json_text: &str) -> Result<RuleSet, String> {
        let value: Value =
            serde_json::from_str(json_text).map_err(|err| format!("not valid JSON: {err}"))?;
        let Value::Object(top) = value else {
            return Err(format!(
                "the top level must be a JSON object like {{\"permissions\": {{\"deny\": \
                 [...]}}}}, not {}",
                kind(&value)
            ));
        };
        let hosts = crate::hosts::Hosts::parse(&top)?;
        let Some(permissions) = top.get("permissions") else {
            let sandbox = crate::sandbox::Section::parse(top.get("sandbox"), &[])?;
            return Ok(RuleSet {
                sandbox: sandbox.into(),
                hosts,
                ..RuleSet::default()
            });
        };
        let Value::Object(permissions) = permissions else {
            return Err(format!(
                "\"permissions\" must be an object with \"deny\", \"ask\" and \"allow\" lists, \
                 not {}",
                kind(permissions)
            ));
        };
        let mut rules = RuleSet {
            hosts,
            ..RuleSet::default()
        };
        for key in ["deny", "ask", "allow"] {
            let list = rule_list(permissions.get(key), key, &mut rules)?;
            match key {
                "deny" => rules.deny = list,
                "ask" => rules.ask = list,
                _ => rules.allow = list,
            }
        }
        rules.sandbox = crate::sandbox::Section::parse(top.get("sandbox"), &rules.ignored)?.into();
        Ok(rules)
    }
}

fn rule_list(value: Option<&Value>, key: &str, set: &mut RuleSet) -> Result<Vec<Rule>, String> {
    let entries = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(entries)) => entries,
        Some(other) => {
            return Err(format!(
                "\"permissions.{key}\" must be a list of strings, not {}",
                kind(other)
            ))
        }
    };
    let mut rules = Vec::new();
    for (index, entry) in entries.iter().enumerate() {
        let Value::String(entry) = entry else {
            return Err(format!(
                "\"permissions.{key}\"[{index}] must be a string such as \"Bash(sudo:*)\", \
                 not {}",
                kind(entry)
            ));
        };
        match Rule::parse(entry) {
            Ok(Some(rule)) => rules.push(rule),
            Ok(None) => {
                set.ignored.push(format!("{key}: {entry}"));
                if names_no_tool(entry) {
                    let word = entry.trim();
                    set.warnings.push(format!(
                        "\"permissions.{key}\"[{index}] is '{word}', which names no tool and \
                         is ignored; a command is written 'Bash({word}:*)'"
                    ));
                }
            }
            Err(err) => return Err(format!("\"permissions.{key}\"[{index}]: {err}")),
        }
    }
    Ok(rules)
}

/// Whether an entry that is not a `Bash` rule names no tool: tools are named like `Read`,
/// `WebFetch` or `mcp__server__tool`; a word in lower case (`sudo`) is a command written
/// without `Bash(...)`. (An entry holding spaces is already an error.)
fn names_no_tool(entry: &str) -> bool {
    let tool = entry.trim().split('(').next().unwrap_or("");
    !(tool.starts_with("mcp__")
        || tool.chars().next().is_some_and(|c| c.is_ascii_uppercase())
            && tool.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
}

/// How a JSON value is named in a sentence about the settings file.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The deny entries of the default settings file. `rm`, `git` and `chmod` rules are
/// matched option-aware, so each entry stands for every spelling of its command
/// (`rm -r /` covers `rm -rf /`, `rm --recursive --force -- //`, `rm -Rfv /`).
const DEFAULT_DENY: &[&str] = &[
    // Becoming someone else.
    "Bash(sudo:*)",
    "Bash(su:*)",
    "Bash(doas:*)",
    "Bash(pkexec:*)",
    "Bash(run0:*)",
    "Bash(sudoedit:*)",
    // Deleting everything: `/`, everything in it, the home directory. `[*]` is a literal
    // star: `rm -rf /*` as typed, not any path.
    "Bash(rm -r /)",
    "Bash(rm -r /[*])",
    "Bash(rm -r ~)",
    "Bash(rm -r ~/[*])",
    // `--no-preserve-root` as an option of the programs that have it (also abbreviated,
    // `rm --no-pres`, as the option-aware reading sees it); a mention elsewhere runs.
    "Bash(rm --no-preserve-root:*)",
    "Bash(chmod --no-preserve-root:*)",
    "Bash(chown --no-preserve-root:*)",
    "Bash(chgrp --no-preserve-root:*)",
    // Stopping the machine.
    "Bash(shutdown:*)",
    "Bash(reboot:*)",
    "Bash(halt:*)",
    "Bash(poweroff:*)",
    "Bash(systemctl poweroff:*)",
    "Bash(systemctl reboot:*)",
    "Bash(systemctl halt:*)",
    // The same verbs after options (`systemctl --no-block poweroff`).
    "Bash(systemctl -* poweroff:*)",
    "Bash(systemctl -* reboot:*)",
    "Bash(systemctl -* halt:*)",
    "Bash(systemctl kexec:*)",
    "Bash(systemctl -* kexec:*)",
    "Bash(systemctl soft-reboot:*)",
    "Bash(systemctl -* soft-reboot:*)",
    // Starting the targets those verbs start (`systemctl start reboot.target`), also
    // under their runlevel names.
    "Bash(systemctl start poweroff.target:*)",
    "Bash(systemctl start reboot.target:*)",
    "Bash(systemctl start halt.target:*)",
    "Bash(systemctl isolate poweroff.target:*)",
    "Bash(systemctl isolate reboot.target:*)",
    "Bash(systemctl isolate halt.target:*)",
    "Bash(systemctl -* start poweroff.target:*)",
    "Bash(systemctl -* start reboot.target:*)",
    "Bash(systemctl -* start halt.target:*)",
    "Bash(systemctl -* isolate poweroff.target:*)",
    "Bash(systemctl -* isolate reboot.target:*)",
    "Bash(systemctl -* isolate halt.target:*)",
    "Bash(systemctl start runlevel0.target:*)",
    "Bash(systemctl start runlevel6.target:*)",
    "Bash(systemctl start kexec.target:*)",
    "Bash(systemctl isolate runlevel0.target:*)",
    "Bash(systemctl isolate runlevel6.target:*)",
    "Bash(systemctl isolate kexec.target:*)",
    "Bash(systemctl -* start runlevel0.target:*)",
    "Bash(systemctl -* start runlevel6.target:*)",
    "Bash(systemctl -* start kexec.target:*)",
    "Bash(systemctl -* isolate runlevel0.target:*)",
    "Bash(systemctl -* isolate runlevel6.target:*)",
    "Bash(systemctl -* isolate kexec.target:*)",
    "Bash(systemctl start soft-reboot.target:*)",
    "Bash(systemctl start ctrl-alt-del.target:*)",
    "Bash(systemctl isolate soft-reboot.target:*)",
    "Bash(systemctl isolate ctrl-alt-del.target:*)",
    "Bash(systemctl -* start soft-reboot.target:*)",
    "Bash(systemctl -* start ctrl-alt-del.target:*)",
    "Bash(systemctl -* isolate soft-reboot.target:*)",
    "Bash(systemctl -* isolate ctrl-alt-del.target:*)",
    // The same asked of logind or systemd over D-Bus (`busctl call ... PowerOff b true`).
    "Bash(busctl *call * PowerOff*)",
    "Bash(busctl *call * Reboot*)",
    "Bash(busctl *call * Halt*)",
    "Bash(busctl *call * KExec*)",
    "Bash(busctl *call * SoftReboot*)",
    "Bash(loginctl poweroff:*)",
    "Bash(loginctl reboot:*)",
    "Bash(loginctl -* poweroff:*)",
    "Bash(loginctl -* reboot:*)",
    // Runlevel 0 (halt) and 6 (reboot).
    "Bash(init 0)",
    "Bash(init 6)",
    "Bash(telinit 0)",
    "Bash(telinit 6)",
    "Bash(init -* 0)",
    "Bash(init -* 6)",
    "Bash(telinit -* 0)",
    "Bash(telinit -* 6)",
    // A signal to every process (`kill -9 -1`, `kill -s KILL -1`, `kill -- -1`).
    "Bash(kill * -1)",
    "Bash(kill * -1 *)",
    // A signal to init, which reboots on `SIGINT` (`kill -INT 1`).
    "Bash(kill 1)",
    "Bash(kill 1 *)",
    "Bash(kill -* 1)",
    // The sysrq trigger: `echo b > /proc/sysrq-trigger` reboots at once.
    "Bash(> /proc/sysrq-trigger)",
    // Overwriting disks: making a filesystem on a device (or on a file named at run time;
    // one on an image file runs), `dd` or a redirection writing to a disk device
    // (`/dev/null`, `/dev/zero`, `/dev/stdout` and the like stay allowed).
    "Bash(mkfs */dev/*)",
    "Bash(mkfs.* */dev/*)",
    "Bash(mke2fs */dev/*)",
    "Bash(mkfs *$*)",
    "Bash(mkfs.* *$*)",
    "Bash(mke2fs *$*)",
    "Bash(mkswap */dev/*)",
    "Bash(wipefs */dev/*)",
    "Bash(dd *of=/dev/sd*)",
    "Bash(dd *of=/dev/hd*)",
    "Bash(dd *of=/dev/vd*)",
    "Bash(dd *of=/dev/xvd*)",
    "Bash(dd *of=/dev/nvme*)",
    "Bash(dd *of=/dev/mmcblk*)",
    "Bash(dd *of=/dev/md*)",
    "Bash(dd *of=/dev/dm-*)",
    "Bash(dd *of=/dev/loop*)",
    "Bash(dd *of=/dev/mapper/*)",
    "Bash(dd *of=/dev/disk/*)",
    "Bash(> /dev/sd*)",
    "Bash(> /dev/hd*)",
    "Bash(> /dev/vd*)",
    "Bash(> /dev/xvd*)",
    "Bash(> /dev/nvme*)",
    "Bash(> /dev/mmcblk*)",
    "Bash(> /dev/md*)",
    "Bash(> /dev/dm-*)",
    "Bash(> /dev/loop*)",
    "Bash(> /dev/mapper/*)",
    "Bash(> /dev/disk/*)",
    // Rewriting shared history.
    "Bash(git push -f:*)",
    "Bash(git push --force-with-lease:*)",
    "Bash(git push --force-if-includes:*)",
    // A shell reading its script from a pipe (`curl ... | sh`): spelled `sh -s` whatever
    // its options.
    "Bash(sh -s)",
    "Bash(bash -s)",
    "Bash(zsh -s)",
    "Bash(dash -s)",
    "Bash(ksh -s)",
    "Bash(ash -s)",
    "Bash(mksh -s)",
    "Bash(yash -s)",
    "Bash(fish -s)",
    "Bash(rbash -s)",
    "Bash(ksh93 -s)",
    "Bash(pdksh -s)",
    "Bash(posh -s)",
    "Bash(csh -s)",
    "Bash(tcsh -s)",
    // The running shell sourcing a pipe (`. <(curl ...)`), spelled the same way.
    "Bash(. -s)",
    "Bash(source -s)",
    // Opening the whole disk to everyone.
    "Bash(chmod -R 777 /)",
    "Bash(chmod -R 777 /[*])",
];

/// The text `--init-settings` writes: pretty JSON in Claude Code's shape with a deny list
/// of commands an agent should never run unattended, and empty `ask` and `allow` lists.
pub fn default_settings_json() -> String {
    let mut out = String::from("{\n  \"permissions\": {\n    \"deny\": [\n");
    for (index, entry) in DEFAULT_DENY.iter().enumerate() {
        let quoted = Value::String((*entry).to_owned()).to_string();
        out.push_str("      ");
        out.push_str(&quoted);
        if index + 1 < DEFAULT_DENY.len() {
            out.push(',');
        }
        out.push('\n');
    }
    out.push_str("    ],\n    \"ask\": [],\n    \"allow\": []\n  }\n}\n");
    out
}

/// Writes the default settings file at `path` with mode 0600, creating its parent
/// directories (mode 0700). Refuses to touch a file that exists.
pub fn init_settings(path: &Path) -> Result<(), SettingsError> {
    let io = |doing, path: &Path, error| SettingsError::Io {
        path: path.to_path_buf(),
        doing,
        error,
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)
            .map_err(|err| io("create directory", parent, err))?;
    }
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|err| {
            if err.kind() == std::io::ErrorKind::AlreadyExists {
                SettingsError::Exists {
                    path: path.to_path_buf(),
                }
            } else {
                io("create settings file", path, err)
            }
        })?;
    file.write_all(default_settings_json().as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|err| io("write settings file", path, err))
}

/// `$XDG_CONFIG_HOME/terminalfs/settings.json`, or `~/.config/terminalfs/settings.json`.
pub fn default_settings_path() -> PathBuf {
    xdg_dir("XDG_CONFIG_HOME", ".config").join("terminalfs/settings.json")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn empty_object_is_empty() {
        for text in ["{}", r#"{"permissions": {}}"#] {
            let rules = RuleSet::parse(text).expect("parses");
            assert!(rules.deny.is_empty() && rules.ask.is_empty() && rules.allow.is_empty());
        }
    }

    #[test]
    fn lists_are_read_and_other_tools_skipped() {
        let rules = RuleSet::parse(
            r#"{"model": "x", "permissions": {"deny": ["Bash(sudo:*)", "Read(./.env)"],
               "ask": ["Bash(git push:*)"], "allow": ["Bash(ls)", "WebFetch"],
               "defaultMode": "plan"}, "env": {"A": "1"}}"#,
        )
        .expect("valid settings");
        assert_eq!(rules.deny.len(), 1);
        assert_eq!(rules.ask.len(), 1);
        assert_eq!(rules.allow.len(), 1);
        assert_eq!(rules.deny[0].text(), "Bash(sudo:*)");
    }

    #[test]
    fn wrong_shapes_are_errors() {
        for (text, needle) in [
            ("", "not valid JSON"),
            ("{", "not valid JSON"),
            ("[]", "top level must be a JSON object"),
            ("\"x\"", "top level"),
            ("3", "top level"),
            (
                r#"{"permissions": []}"#,
                "\"permissions\" must be an object",
            ),
            (
                r#"{"permissions": "deny"}"#,
                "\"permissions\" must be an object",
            ),
            (
                r#"{"permissions": {"deny": "Bash(sudo:*)"}}"#,
                "permissions.deny",
            ),
            (r#"{"permissions": {"deny": [3]}}"#, "permissions.deny\"[0]"),
            (r#"{"permissions": {"ask": [null]}}"#, "permissions.ask"),
            (r#"{"permissions": {"allow": {}}}"#, "permissions.allow"),
            (
                r#"{"permissions": {"deny": ["Bash(ls)", "Bash("]}}"#,
                "Bash(",
            ),
        ] {
            let err = RuleSet::parse(text).expect_err(text);
            assert!(err.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn load_names_the_path() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let missing = dir.path().join("missing.json");
        let load = |path| super::super::Policy::load(path, false).map(|_| ());
        let err = load(&missing).expect_err("missing file").to_string();
        assert!(err.contains(&missing.display().to_string()), "{err}");
        let bad = dir.path().join("bad.json");
        fs::write(&bad, "[1]").expect("write test file");
        let err = load(&bad).expect_err("bad file").to_string();
        assert!(err.contains(&bad.display().to_string()), "{err}");
    }

    #[test]
    fn bare_words_are_ignored_with_a_warning() {
        let rules = RuleSet::parse(
            r#"{"permissions": {"deny": ["sudo", "Bash(su:*)", "Read(./.env)", "reboot",
               "mcp__x__y"], "ask": ["WebFetch"]}}"#,
        )
        .expect("valid settings");
        assert_eq!(rules.deny.len(), 1);
        assert_eq!(
            rules.ignored,
            [
                "deny: sudo",
                "deny: Read(./.env)",
                "deny: reboot",
                "deny: mcp__x__y",
                "ask: WebFetch"
            ]
        );
        assert_eq!(rules.warnings.len(), 2, "{:?}", rules.warnings);
        assert!(rules.warnings[0].contains("'sudo'"), "{:?}", rules.warnings);
        assert!(rules.warnings[0].contains("Bash(sudo:*)"));
        assert!(rules.warnings[1].contains("'reboot'"));
        // A Bash entry that does not parse still makes the whole file invalid.
        assert!(RuleSet::parse(r#"{"permissions": {"deny": ["sudo", "Bash(x"]}}"#).is_err());
    }

    #[test]
    fn default_settings_parse_and_deny() {
        let text = default_settings_json();
        let rules = RuleSet::parse(&text).expect("the default settings parse");
        assert_eq!(rules.deny.len(), DEFAULT_DENY.len());
        assert!(rules.ask.is_empty() && rules.allow.is_empty());
        let value: Value = serde_json::from_str(&text).expect("default is JSON");
        assert!(value["permissions"]["deny"].is_array());
    }

    #[test]
    fn init_writes_0600_and_refuses_to_overwrite() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("a/b/settings.json");
        init_settings(&path).expect("first init");
        let meta = fs::metadata(&path).expect("settings file exists");
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        let parent = fs::metadata(dir.path().join("a/b")).expect("parent exists");
        assert_eq!(parent.permissions().mode() & 0o077, 0);
        fs::write(&path, "{}").expect("overwrite by hand");
        let err = init_settings(&path).expect_err("second init refuses");
        assert!(err.to_string().contains("already exists"), "{err}");
        assert_eq!(fs::read_to_string(&path).expect("read back"), "{}");
        RuleSet::parse(&fs::read_to_string(&path).expect("read back")).expect("still valid");
    }

    #[test]
    fn default_paths_end_in_terminalfs() {
        assert!(default_settings_path().ends_with("terminalfs/settings.json"));
        assert!(default_settings_path().is_absolute());
        assert!(crate::policy::default_audit_path().ends_with("terminalfs/audit.jsonl"));
    }
}
