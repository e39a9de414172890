//! The settings file's `sandbox` section, in Claude Code's shape, read into a
//! [`Section`]: which paths may be written and read, which domains reached, which
//! commands run outside, and what to do when the kernel cannot enforce it.
//!
//! A section of the wrong shape is an error, so the whole settings file is refused like a
//! bad rule (a sandbox that silently lost a path would be worse than none). Keys this
//! reader does not know are warned about, except keys that would narrow access
//! ([`NARROWING`]): those are errors until they are enforced.

use crate::policy::settings::kind;
use serde_json::{Map, Value};

use crate::policy::Rule;

/// Keys that would take access away if they were read; refused until they are, so that
/// nobody believes them in force.
const NARROWING: &[&str] = &[
    "deniedDomains",
    "allowRead",
    "denyExecute",
    "deniedPorts",
    "allowedPorts",
    "denyNetwork",
];

/// The `sandbox` section, as written (paths are resolved per command, see
/// [`super::Request::prepare`]).
#[derive(Debug, Clone)]
pub struct Section {
    pub enabled: bool,
    pub allow_write: Vec<String>,
    pub deny_write: Vec<String>,
    pub deny_read: Vec<String>,
    pub allowed_domains: Vec<Domain>,
    pub allow_local_binding: bool,
    pub allow_unix_sockets: Vec<String>,
    pub allow_all_unix_sockets: bool,
    /// `excludedCommands`, each as the `Bash(…)` rule it stands for.
    pub excluded: Vec<Rule>,
    pub allow_unsandboxed: bool,
    pub fail_if_unavailable: bool,
    /// Unknown keys and entries that do nothing, said at load and on `/index.md`.
    pub warnings: Vec<String>,
}

impl Default for Section {
    fn default() -> Section {
        Section {
            enabled: false,
            allow_write: Vec::new(),
            deny_write: Vec::new(),
            deny_read: Vec::new(),
            allowed_domains: Vec::new(),
            allow_local_binding: false,
            allow_unix_sockets: Vec::new(),
            allow_all_unix_sockets: false,
            excluded: Vec::new(),
            allow_unsandboxed: false,
            fail_if_unavailable: true,
            warnings: Vec::new(),
        }
    }
}

/// An allowed domain: a name, or every name below one (`*.crates.io`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Domain {
    Exact(String),
    Below(String),
}

impl Domain {
    /// Reads one `allowedDomains` entry; the error says what is wrong in a sentence.
    pub fn parse(entry: &str) -> Result<Domain, String> {
        let lower = entry.trim().to_ascii_lowercase();
        let (wild, name) = match lower.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, lower.as_str()),
        };
        let name = name.strip_suffix('.').unwrap_or(name);
        let bad = |why: &str| {
            format!(
                "the allowed domain '{entry}' is malformed: {why} (write a name such as \
                 'pypi.org', or '*.crates.io' for every name below one)"
            )
        };
        if name.contains('*') {
            return Err(bad("a '*' may only stand first, as '*.'"));
        }
        if name.contains("://") || name.contains('/') || name.contains(':') {
            return Err(bad(
                "give the host name alone, without scheme, port or path",
            ));
        }
        if name.is_empty() {
            return Err(bad("it names no host"));
        }
        for label in name.split('.') {
            if label.is_empty() || label.len() > 63 {
                return Err(bad("each dot-separated part must hold 1 to 63 characters"));
            }
            if !label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
                || label.starts_with('-')
                || label.ends_with('-')
            {
                return Err(bad(
                    "a name holds only letters, digits and inner hyphens between its dots",
                ));
            }
        }
        if wild && !name.contains('.') {
            return Err(bad(
                "a wildcard must stand above a name with a dot ('*.example.com')",
            ));
        }
        Ok(if wild {
            Domain::Below(name.to_owned())
        } else {
            Domain::Exact(name.to_owned())
        })
    }

    /// Whether `host` (as a client named it) is this domain.
    pub fn matches(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        match self {
            Domain::Exact(name) => host == *name,
            Domain::Below(name) => host
                .strip_suffix(name.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
        }
    }
}

impl std::fmt::Display for Domain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Domain::Exact(name) => f.write_str(name),
            Domain::Below(name) => write!(f, "*.{name}"),
        }
    }
}

fn boolean(map: &Map<String, Value>, key: &str, at: &str, default: bool) -> Result<bool, String> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(value)) => Ok(*value),
        Some(other) => Err(format!(
            "\"{at}{key}\" must be true or false, not {}",
            kind(other)
        )),
    }
}

fn strings(map: &Map<String, Value>, key: &str, at: &str) -> Result<Vec<String>, String> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(index, item)| match item {
                Value::String(text) if !text.trim().is_empty() => Ok(text.clone()),
                other => Err(format!(
                    "\"{at}{key}\"[{index}] must be a non-empty string, not {}",
                    if other.is_string() {
                        "an empty one"
                    } else {
                        kind(other)
                    }
                )),
            })
            .collect(),
        Some(other) => Err(format!(
            "\"{at}{key}\" must be a list of strings, not {}",
            kind(other)
        )),
    }
}

fn object<'v>(
    map: &'v Map<String, Value>,
    key: &str,
    at: &str,
) -> Result<Option<&'v Map<String, Value>>, String> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(inner)) => Ok(Some(inner)),
        Some(other) => Err(format!(
            "\"{at}{key}\" must be an object, not {}",
            kind(other)
        )),
    }
}

/// Warns about keys of `map` not in `known`; a narrowing key is an error.
fn check_keys(
    map: &Map<String, Value>,
    known: &[&str],
    at: &str,
    warnings: &mut Vec<String>,
) -> Result<(), String> {
    for key in map.keys() {
        if known.contains(&key.as_str()) {
            continue;
        }
        if NARROWING.contains(&key.as_str()) {
            return Err(format!(
                "\"{at}{key}\" would narrow access, and terminalfs does not enforce it yet; \
                 remove it (nothing is run as if it were in force)"
            ));
        }
        warnings.push(format!(
            "\"{at}{key}\" is not a sandbox setting terminalfs knows; ignored"
        ));
    }
    Ok(())
}

/// The path an `Edit(…)` or `Read(…)` rule names, up to its first wildcard.
fn rule_path(entry: &str, tool: &str) -> Option<String> {
    let inner = entry
        .trim()
        .strip_prefix(tool)?
        .strip_prefix('(')?
        .strip_suffix(')')?;
    let cut = inner.find(['*', '?', '[', '{']).unwrap_or(inner.len());
    let path = inner[..cut].trim_end_matches('/');
    Some(if path.is_empty() {
        "/".to_owned()
    } else {
        path.to_owned()
    })
}

impl Section {
    /// Reads the section (None when the file has none) and adds what the permission
    /// rules grant or deny (`ignored` holds them as `list: entry`, as
    /// [`crate::policy::RuleSet::ignored`] does).
    pub fn parse(value: Option<&Value>, ignored: &[String]) -> Result<Section, String> {
        let mut section = Section::default();
        match value {
            None | Some(Value::Null) => {}
            Some(Value::Object(map)) => section.read(map)?,
            Some(other) => {
                return Err(format!(
                    "\"sandbox\" must be an object like {{\"enabled\": true}}, not {}",
                    kind(other)
                ))
            }
        }
        for entry in ignored {
            let Some((list, entry)) = entry.split_once(": ") else {
                continue;
            };
            match list {
                "allow" => {
                    if let Some(path) = rule_path(entry, "Edit") {
                        section.allow_write.push(path);
                    } else if let Some(domain) = entry
                        .trim()
                        .strip_prefix("WebFetch(domain:")
                        .and_then(|rest| rest.strip_suffix(')'))
                    {
                        section.allowed_domains.push(
                            Domain::parse(domain)
                                .map_err(|err| format!("\"permissions.allow\" {entry}: {err}"))?,
                        );
                    }
                }
                "deny" => {
                    if let Some(path) = rule_path(entry, "Read") {
                        section.deny_read.push(path);
                    }
                }
                _ => {}
            }
        }
        Ok(section)
    }

    fn read(&mut self, map: &Map<String, Value>) -> Result<(), String> {
        let at = "sandbox.";
        check_keys(
            map,
            &[
                "enabled",
                "filesystem",
                "network",
                "excludedCommands",
                "allowUnsandboxedCommands",
                "failIfUnavailable",
            ],
            at,
            &mut self.warnings,
        )?;
        self.enabled = boolean(map, "enabled", at, false)?;
        self.allow_unsandboxed = boolean(map, "allowUnsandboxedCommands", at, false)?;
        self.fail_if_unavailable = boolean(map, "failIfUnavailable", at, true)?;
        for (index, command) in strings(map, "excludedCommands", at)?.iter().enumerate() {
            let spelled = format!("Bash({command}:*)");
            let rule = Rule::parse(&spelled)
                .map_err(|err| format!("\"sandbox.excludedCommands\"[{index}]: {err}"))?
                .ok_or_else(|| format!("\"sandbox.excludedCommands\"[{index}] names no command"))?;
            self.excluded.push(rule);
        }
        if let Some(fs) = object(map, "filesystem", at)? {
            let at = "sandbox.filesystem.";
            check_keys(
                fs,
                &["allowWrite", "denyWrite", "denyRead"],
                at,
                &mut self.warnings,
            )?;
            self.allow_write = strings(fs, "allowWrite", at)?;
            self.deny_write = strings(fs, "denyWrite", at)?;
            self.deny_read = strings(fs, "denyRead", at)?;
        }
        if let Some(net) = object(map, "network", at)? {
            let at = "sandbox.network.";
            check_keys(
                net,
                &[
                    "allowedDomains",
                    "allowLocalBinding",
                    "allowUnixSockets",
                    "allowAllUnixSockets",
                    "httpProxyPort",
                    "socksProxyPort",
                ],
                at,
                &mut self.warnings,
            )?;
            for (index, entry) in strings(net, "allowedDomains", at)?.iter().enumerate() {
                self.allowed_domains.push(
                    Domain::parse(entry)
                        .map_err(|err| format!("\"{at}allowedDomains\"[{index}]: {err}"))?,
                );
            }
            self.allow_local_binding = boolean(net, "allowLocalBinding", at, false)?;
            self.allow_unix_sockets = strings(net, "allowUnixSockets", at)?;
            self.allow_all_unix_sockets = boolean(net, "allowAllUnixSockets", at, false)?;
            for key in ["httpProxyPort", "socksProxyPort"] {
                if net.contains_key(key) {
                    self.warnings.push(format!(
                        "\"{at}{key}\" is ignored: terminalfs runs its own proxy"
                    ));
                }
            }
            if !self.allow_unix_sockets.is_empty() && !self.allow_all_unix_sockets {
                self.warnings.push(format!(
                    "\"{at}allowUnixSockets\" cannot be told apart by path on Linux; Unix \
                     sockets stay closed there (allowAllUnixSockets opens them all)"
                ));
            }
        }
        Ok(())
    }

    /// Whether any command is excluded.
    pub fn excludes_any(&self) -> bool {
        !self.excluded.is_empty()
    }

    /// Whether every simple command of `text` matches `excludedCommands` (a text with no
    /// simple command is not excluded). Only a program found by its bare name through the
    /// usual `PATH` counts: a word with a `/` may name a file the sandboxed command wrote
    /// (`./docker`, and `./sh -c 'docker ps'` runs `./sh`), and a text assigning `PATH`,
    /// `LD_*`, `BASH_ENV` or `ENV` changes what a name finds or what loads with it.
    pub fn excludes(&self, text: &str, commands: &[crate::policy::SimpleCommand]) -> bool {
        !self.excluded.is_empty()
            && !commands.is_empty()
            && !assigns_loader_variable(text)
            && commands.iter().all(|command| {
                let by_name = !command.dynamic_name
                    && command.name_globs.is_empty()
                    && command
                        .forms
                        .iter()
                        .chain(&command.innermost)
                        .all(|form| !form.split(' ').next().unwrap_or("").contains('/'));
                by_name
                    && (command.transparent
                        || command.innermost.first().is_some_and(|written| {
                            let candidate = crate::policy::Candidate::new(written);
                            self.excluded.iter().any(|rule| rule.allows(&candidate))
                        }))
            })
    }
}

/// Whether `text` holds an assignment (`NAME=` or `NAME+=`, anywhere a word may start) to
/// a variable that decides which program a name runs or what is loaded into it. It reads
/// more than the shell would (a quoted `PATH=` counts too), which only keeps a command in.
fn assigns_loader_variable(text: &str) -> bool {
    let bytes = text.as_bytes();
    let is_name = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    (0..bytes.len()).any(|start| {
        if start > 0 && is_name(bytes[start - 1]) {
            return false;
        }
        let end = start + bytes[start..].iter().take_while(|&&b| is_name(b)).count();
        let name = &text[start..end];
        let rest = &bytes[end..];
        (rest.starts_with(b"=") || rest.starts_with(b"+="))
            && (matches!(name, "PATH" | "BASH_ENV" | "ENV") || name.starts_with("LD_"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<Section, String> {
        let value: Value = serde_json::from_str(json).unwrap();
        Section::parse(Some(&value), &[])
    }

    #[test]
    fn claude_codes_shape_is_read() {
        let section = parse(
            r#"{"enabled": true,
                "filesystem": {"allowWrite": ["//tmp/build", "~/.cache/pip"],
                               "denyWrite": ["./.git/hooks"], "denyRead": ["~/.ssh"]},
                "network": {"allowedDomains": ["pypi.org", "*.crates.io"],
                            "allowLocalBinding": true},
                "excludedCommands": ["docker"],
                "allowUnsandboxedCommands": true, "failIfUnavailable": false}"#,
        )
        .unwrap();
        assert!(section.enabled && section.allow_unsandboxed && !section.fail_if_unavailable);
        assert_eq!(section.allow_write, ["//tmp/build", "~/.cache/pip"]);
        assert_eq!(section.deny_write, ["./.git/hooks"]);
        assert_eq!(section.deny_read, ["~/.ssh"]);
        assert_eq!(
            section.allowed_domains,
            [
                Domain::Exact("pypi.org".into()),
                Domain::Below("crates.io".into())
            ]
        );
        assert!(section.allow_local_binding);
        assert_eq!(section.excluded.len(), 1);
        assert!(section.warnings.is_empty());
        assert!(parse("{}").unwrap().fail_if_unavailable);
    }

    #[test]
    fn unknown_keys_warn_and_narrowing_keys_fail() {
        let section = parse(r#"{"enabled": true, "colour": "blue"}"#).unwrap();
        assert_eq!(section.warnings.len(), 1);
        assert!(section.warnings[0].contains("sandbox.colour"));
        let err = parse(r#"{"network": {"deniedDomains": ["x.com"]}}"#).unwrap_err();
        assert!(
            err.contains("deniedDomains") && err.contains("narrow"),
            "{err}"
        );
        let err = parse(r#"{"filesystem": {"allowRead": ["."]}}"#).unwrap_err();
        assert!(err.contains("allowRead"), "{err}");
    }

    #[test]
    fn malformed_sections_are_errors() {
        for (json, says) in [
            (r#"[]"#, "\"sandbox\" must be an object"),
            (r#"{"enabled": "yes"}"#, "sandbox.enabled"),
            (r#"{"filesystem": {"allowWrite": "/tmp"}}"#, "allowWrite"),
            (r#"{"filesystem": {"denyRead": [3]}}"#, "denyRead\"[0]"),
            (r#"{"network": []}"#, "sandbox.network"),
            (r#"{"network": {"allowedDomains": ["*"]}}"#, "malformed"),
            (r#"{"network": {"allowedDomains": ["a.*.com"]}}"#, "'*'"),
            (
                r#"{"network": {"allowedDomains": ["https://x.org"]}}"#,
                "scheme",
            ),
            (r#"{"network": {"allowedDomains": ["x..org"]}}"#, "1 to 63"),
            (r#"{"network": {"allowedDomains": ["*com"]}}"#, "'*'"),
        ] {
            let err = parse(json).unwrap_err();
            assert!(err.contains(says), "{json}: {err}");
        }
    }

    #[test]
    fn domains_match_names_and_names_below() {
        let exact = Domain::parse("PyPI.org").unwrap();
        assert!(exact.matches("pypi.org") && exact.matches("pypi.org."));
        assert!(!exact.matches("evil-pypi.org") && !exact.matches("x.pypi.org"));
        let below = Domain::parse("*.crates.io").unwrap();
        assert!(below.matches("static.crates.io") && below.matches("a.b.crates.io"));
        assert!(!below.matches("crates.io") && !below.matches("evilcrates.io"));
        assert_eq!(below.to_string(), "*.crates.io");
    }

    #[test]
    fn permission_rules_add_paths_and_domains() {
        let ignored = [
            "allow: Edit(./build/**)".to_owned(),
            "allow: WebFetch(domain:docs.rs)".to_owned(),
            "deny: Read(~/.aws)".to_owned(),
            "deny: Edit(./x)".to_owned(),
        ];
        let section = Section::parse(None, &ignored).unwrap();
        assert_eq!(section.allow_write, ["./build"]);
        assert_eq!(section.deny_read, ["~/.aws"]);
        assert_eq!(section.allowed_domains, [Domain::Exact("docs.rs".into())]);
        let bad = ["allow: WebFetch(domain:*)".to_owned()];
        assert!(Section::parse(None, &bad).is_err());
    }
}
