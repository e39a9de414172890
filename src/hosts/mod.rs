//! Remote hosts: commands that run on another machine through a launcher people already
//! operate (OpenSSH, Slurm's `srun`, `kubectl exec`), named in the settings file's
//! `hosts` table and picked with `#terminalfs host=NAME` or `--host NAME`.
//!
//! A host command is a local launcher process whose pipes the supervisor captures like
//! any command's. For ssh and kubectl the far side runs a small POSIX shell wrapper
//! (`wrapper.sh`, nothing installed there): it puts the command in a process group of
//! its own, writes that group's id to a file named by a token, and kills the group when
//! its standard input ends, so a lost connection or a dead driver stops the remote
//! processes. Signals written to `kill` travel as a second short session over the same
//! connection. `srun` forwards signals itself; what it cannot (SIGKILL, STOP, CONT)
//! goes through `scancel`. This module parses the table ([`Hosts::parse`]), judges a
//! pick ([`Hosts::choose`]), and runs the connections ([`driver`]).

pub mod driver;

use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The name that always means this machine.
pub const LOCAL: &str = "local";

/// How a host is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Engine {
    /// `ssh [options] DESTINATION`.
    Ssh(String),
    /// `kubectl exec -i [options] TARGET --`.
    Kubectl(String),
    /// `srun [options]`: a job step on a Slurm cluster.
    Srun,
}

impl Engine {
    /// The launcher's word, as the settings file spells it.
    pub fn word(&self) -> &'static str {
        match self {
            Engine::Ssh(_) => "ssh",
            Engine::Kubectl(_) => "kubectl",
            Engine::Srun => "srun",
        }
    }
}

/// One entry of the `hosts` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    pub name: String,
    pub engine: Engine,
    /// Passed to the launcher before the destination.
    pub options: Vec<String>,
    /// Where the command starts on the far side (its home directory when None).
    pub cwd: Option<String>,
    /// The far side's shell for `<shell> -c <text>` (`sh` when None).
    pub shell: Option<String>,
    /// Variables the command gets, besides `TERMINALFS_NAME`.
    pub env: Vec<(String, String)>,
    /// The user declares the far side its own boundary: it may run under the sandbox.
    pub unsandboxed: bool,
    /// Sessions one ssh connection carries before another is opened (the server's
    /// `MaxSessions`, 10 unless the entry says otherwise).
    pub max_sessions: usize,
}

impl Host {
    /// The shell the far side runs the text with.
    pub fn shell(&self) -> &str {
        self.shell.as_deref().unwrap_or("sh")
    }

    /// One line for pages and logs: `build (ssh builder@build-2)`.
    pub fn describe(&self) -> String {
        match &self.engine {
            Engine::Ssh(to) | Engine::Kubectl(to) => {
                format!("{} ({} {to})", self.name, self.engine.word())
            }
            Engine::Srun => format!("{} (srun {})", self.name, self.options.join(" ")),
        }
    }
}

/// The `hosts` table of a settings file, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hosts {
    entries: BTreeMap<String, Arc<Host>>,
}

const KEYS: &[&str] = &[
    "ssh",
    "kubectl",
    "srun",
    "options",
    "cwd",
    "shell",
    "env",
    "unsandboxed",
    "max_sessions",
];

fn strings(value: &Value, what: &str) -> Result<Vec<String>, String> {
    let bad = || format!("{what} must be a list of strings");
    value
        .as_array()
        .ok_or_else(bad)?
        .iter()
        .map(|item| item.as_str().map(str::to_string).ok_or_else(bad))
        .collect()
}

fn text(value: &Value, what: &str) -> Result<String, String> {
    match value.as_str() {
        Some(text) if !text.is_empty() && !text.contains('\0') => Ok(text.to_string()),
        _ => Err(format!("{what} must be a non-empty string")),
    }
}

fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        && !name.starts_with('.')
}

fn is_variable(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

impl Hosts {
    /// Reads the `hosts` table of a settings file's top level (none: no hosts). Anything
    /// it cannot use fully refuses the whole file, with a sentence naming the entry.
    pub fn parse(top: &serde_json::Map<String, Value>) -> Result<Hosts, String> {
        Hosts::table(top.get("hosts"))
    }

    fn table(value: Option<&Value>) -> Result<Hosts, String> {
        let table = match value {
            None | Some(Value::Null) => return Ok(Hosts::default()),
            Some(Value::Object(table)) => table,
            Some(_) => return Err("\"hosts\" must be an object of named hosts".to_string()),
        };
        let mut entries = BTreeMap::new();
        for (name, entry) in table {
            if name == LOCAL {
                return Err(format!(
                    "hosts.{LOCAL}: the name '{LOCAL}' is reserved for this machine"
                ));
            }
            if !is_name(name) {
                return Err(format!(
                    "hosts.{name}: a host name is letters, digits, '-', '_' and '.' (at most 64)"
                ));
            }
            let at = |key: &str| format!("hosts.{name}.{key}");
            let Value::Object(entry) = entry else {
                return Err(format!("hosts.{name} must be an object"));
            };
            if let Some(key) = entry.keys().find(|key| !KEYS.contains(&key.as_str())) {
                return Err(format!(
                    "hosts.{name} has an unknown key '{key}' (keys: {})",
                    KEYS.join(", ")
                ));
            }
            let engines: Vec<&str> = ["ssh", "kubectl", "srun"]
                .into_iter()
                .filter(|key| entry.contains_key(*key))
                .collect();
            let mut options = match entry.get("options") {
                Some(value) => strings(value, &at("options"))?,
                None => Vec::new(),
            };
            let engine = match engines.as_slice() {
                ["ssh"] => Engine::Ssh(text(&entry["ssh"], &at("ssh"))?),
                ["kubectl"] => Engine::Kubectl(text(&entry["kubectl"], &at("kubectl"))?),
                ["srun"] => {
                    let mut list = strings(&entry["srun"], &at("srun"))?;
                    list.append(&mut options);
                    options = list;
                    Engine::Srun
                }
                [] => {
                    return Err(format!(
                        "hosts.{name} needs one of \"ssh\", \"kubectl\" or \"srun\" to say how \
                         it is reached"
                    ))
                }
                _ => {
                    return Err(format!(
                        "hosts.{name} names more than one of \"ssh\", \"kubectl\" and \"srun\" \
                         ({}); give one",
                        engines.join(", ")
                    ))
                }
            };
            let optional = |key: &str| -> Result<Option<String>, String> {
                entry
                    .get(key)
                    .map(|value| text(value, &at(key)))
                    .transpose()
            };
            let mut env = Vec::new();
            match entry.get("env") {
                None => {}
                Some(Value::Object(vars)) => {
                    for (var, value) in vars {
                        if !is_variable(var) {
                            return Err(format!("{}: '{var}' is not a variable name", at("env")));
                        }
                        let Some(value) = value.as_str() else {
                            return Err(format!("{}.{var} must be a string", at("env")));
                        };
                        env.push((var.clone(), value.to_string()));
                    }
                }
                Some(_) => return Err(format!("{} must be an object of strings", at("env"))),
            }
            let unsandboxed = match entry.get("unsandboxed") {
                None => false,
                Some(Value::Bool(flag)) => *flag,
                Some(_) => return Err(format!("{} must be true or false", at("unsandboxed"))),
            };
            let max_sessions = match entry.get("max_sessions") {
                None => 10,
                Some(value) => match value.as_u64() {
                    Some(n @ 1..=1000) => n as usize,
                    _ => {
                        return Err(format!(
                            "{} must be a number from 1 to 1000",
                            at("max_sessions")
                        ))
                    }
                },
            };
            entries.insert(
                name.clone(),
                Arc::new(Host {
                    name: name.clone(),
                    engine,
                    options,
                    cwd: optional("cwd")?,
                    shell: optional("shell")?,
                    env,
                    unsandboxed,
                    max_sessions,
                }),
            );
        }
        Ok(Hosts { entries })
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Arc<Host>> {
        self.entries.values()
    }

    pub fn get(&self, name: &str) -> Option<&Arc<Host>> {
        self.entries.get(name)
    }

    /// The host a command runs on: None for this machine (no name, or `local`), or why
    /// the name cannot be used, as a refusal's sentence. `sandboxed`: the sandbox is in
    /// force, where only an entry that says `"unsandboxed": true` may run.
    pub fn choose(&self, name: Option<&str>, sandboxed: bool) -> Result<Option<Arc<Host>>, String> {
        let Some(name) = name.filter(|name| *name != LOCAL) else {
            return Ok(None);
        };
        if self.entries.is_empty() {
            return Err(format!(
                "refused: host={name}: this mount has no hosts (the settings file has no \
                 \"hosts\" table)"
            ));
        }
        let Some(host) = self.entries.get(name) else {
            let known: Vec<&str> = self.entries.keys().map(String::as_str).collect();
            return Err(format!(
                "refused: host={name} names no host in the settings file (hosts: {}, and \
                 {LOCAL} for this machine)",
                known.join(", ")
            ));
        };
        if sandboxed && !host.unsandboxed {
            return Err(format!(
                "refused: host={name}: under the sandbox a host command runs only when its \
                 entry says \"unsandboxed\": true (its launcher needs the network and ~/.ssh)"
            ));
        }
        Ok(Some(host.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Hosts, String> {
        let value: Value = serde_json::from_str(text).expect("test JSON");
        Hosts::table(Some(&value))
    }

    #[test]
    fn the_three_engines_parse() {
        let hosts = parse(
            r#"{"build": {"ssh": "builder@build-2", "options": ["-p", "2222"], "cwd": "/srv/work",
                          "shell": "bash", "env": {"CI": "1"}},
                "gpu": {"kubectl": "pod/gpu-0", "options": ["-n", "ml", "-c", "main"]},
                "hpc": {"srun": ["--partition=short", "--time=10"]}}"#,
        )
        .expect("valid hosts");
        let build = hosts.get("build").expect("build");
        assert_eq!(build.engine, Engine::Ssh("builder@build-2".into()));
        assert_eq!(build.options, ["-p", "2222"]);
        assert_eq!(build.cwd.as_deref(), Some("/srv/work"));
        assert_eq!(build.shell(), "bash");
        assert_eq!(build.env, [("CI".to_string(), "1".to_string())]);
        assert_eq!(
            hosts.get("gpu").expect("gpu").engine,
            Engine::Kubectl("pod/gpu-0".into())
        );
        let hpc = hosts.get("hpc").expect("hpc");
        assert_eq!(hpc.engine, Engine::Srun);
        assert_eq!(hpc.options, ["--partition=short", "--time=10"]);
        assert_eq!(hpc.shell(), "sh");
    }

    #[test]
    fn bad_entries_are_refused_with_a_sentence() {
        for (text, says) in [
            (
                r#"{"a": {"options": []}}"#,
                "needs one of \"ssh\", \"kubectl\" or \"srun\"",
            ),
            (
                r#"{"a": {"ssh": "h", "options": "-p 22"}}"#,
                "hosts.a.options must be a list of strings",
            ),
            (
                r#"{"a": {"ssh": "h", "options": ["-p", 22]}}"#,
                "hosts.a.options must be a list of strings",
            ),
            (
                r#"{"a": {"srun": "--partition=x"}}"#,
                "hosts.a.srun must be a list of strings",
            ),
            (r#"{"a": {"ssh": "h", "kubectl": "p"}}"#, "more than one"),
            (r#"{"local": {"ssh": "h"}}"#, "reserved"),
            (r#"{"a": {"ssh": ""}}"#, "non-empty string"),
            (r#"{"a": {"ssh": "h", "port": 22}}"#, "unknown key 'port'"),
            (r#"{"a b": {"ssh": "h"}}"#, "a host name is"),
            (
                r#"{"a": {"ssh": "h", "env": {"1X": "y"}}}"#,
                "not a variable name",
            ),
            (
                r#"{"a": {"ssh": "h", "unsandboxed": "yes"}}"#,
                "true or false",
            ),
            (r#"["a"]"#, "must be an object"),
        ] {
            let error = parse(text).expect_err(text);
            assert!(error.contains(says), "{text}: {error}");
        }
    }

    #[test]
    fn choosing_a_host() {
        let hosts = parse(r#"{"build": {"ssh": "h"}, "free": {"ssh": "h", "unsandboxed": true}}"#)
            .expect("valid hosts");
        assert_eq!(hosts.choose(None, false), Ok(None));
        assert_eq!(hosts.choose(Some(LOCAL), true), Ok(None));
        assert_eq!(
            hosts
                .choose(Some("build"), false)
                .expect("known")
                .map(|h| h.name.clone()),
            Some("build".into())
        );
        let unknown = hosts.choose(Some("nope"), false).expect_err("unknown");
        assert!(
            unknown.contains("names no host") && unknown.contains("build, free"),
            "{unknown}"
        );
        let sandboxed = hosts.choose(Some("build"), true).expect_err("sandboxed");
        assert!(sandboxed.contains("\"unsandboxed\": true"), "{sandboxed}");
        assert!(hosts.choose(Some("free"), true).is_ok());
        let none = Hosts::default()
            .choose(Some("build"), false)
            .expect_err("no table");
        assert!(none.contains("this mount has no hosts"), "{none}");
    }
}
