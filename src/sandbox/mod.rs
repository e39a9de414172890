//! The sandbox: a boundary the kernel enforces around each command, whatever it decides
//! at run time. The deny list reads text; this bounds what the processes can do.
//!
//! Read from the settings file's `sandbox` section ([`settings`], Claude Code's shape) or
//! turned on by `--sandbox`. A command's text is reviewed when it is decided
//! ([`review`]: a `sandbox=off` directive, `excludedCommands`, what the kernel lacks);
//! when it starts, [`Request::prepare`] resolves its paths, makes its private `TMPDIR`
//! and, with `allowedDomains`, its proxy ([`proxy`]), and builds what the child applies
//! before its exec ([`linux::Child`], the one hook in the spawn path). The [`Report`]
//! says in `result.json` how it was sandboxed, and keeps the `TMPDIR` and the proxy as
//! long as the command is kept. macOS gets a Seatbelt profile ([`seatbelt`]).

#[cfg(target_os = "linux")]
pub mod linux;
pub mod proxy;
#[cfg(any(target_os = "macos", test))]
pub mod seatbelt;
pub mod settings;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};

pub use settings::{Domain, Section};

/// How a command's text asks to run, as read when it is decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Choice {
    /// Inside the sandbox, when one is in force.
    #[default]
    Inside,
    /// `#terminalfs sandbox=off`, granted by `allowUnsandboxedCommands`.
    Off,
    /// Every simple command matches `excludedCommands`.
    Excluded,
    /// The kernel lacks what the settings ask and `failIfUnavailable` is false.
    Unavailable,
    /// It runs on a remote host whose entry says `"unsandboxed": true`.
    Host,
}

/// Files under the home directory no command may write, even below its working
/// directory: what a shell or a login runs, keys, and user services.
const HOME_PROTECTED: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".config/fish",
    ".ssh",
    ".gitconfig",
    ".config/git",
    ".config/systemd",
];

/// Devices and places every sandboxed command may write.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
    "/dev/shm",
];

/// What a mount knows about the sandbox beyond the settings: set at start.
#[derive(Debug, Default)]
pub struct Context {
    /// `--sandbox`: on even where the section does not say `enabled`.
    pub forced: bool,
    /// The settings file (absolute): `/x` paths are relative to its directory.
    pub settings: PathBuf,
    /// Paths of the driver no command may write: the state directory, the audit log,
    /// the driver's log (the settings file is `settings`).
    pub protected: Vec<PathBuf>,
    /// The mount, which no command may write either; never looked at.
    pub mount: Option<PathBuf>,
    /// What [`describe`] said at the last look ([`Context::refresh`]), for pages read
    /// under the tree's lock, which must not wait for the disk.
    pub shown: parking_lot::Mutex<Vec<String>>,
    /// The home directory.
    pub home: PathBuf,
}

impl Context {
    /// Looks at the paths again for [`Context::shown`] (outside any lock of the tree).
    pub fn refresh(&self, section: &Section, cwd: &Path) {
        *self.shown.lock() = describe(section, self, cwd);
    }

    /// Whether `section` puts commands in a sandbox.
    pub fn enabled(&self, section: &Section) -> bool {
        self.forced || section.enabled
    }
}

/// Reviews a command's text while it is decided: a refusal (a sentence), or how it runs.
/// `off` is a `sandbox=off` directive; `commands` the simple commands of `text`.
pub fn review(
    section: &Section,
    context: &Context,
    off: bool,
    text: &str,
    commands: &[crate::policy::SimpleCommand],
) -> Result<Choice, String> {
    if !context.enabled(section) {
        return Ok(Choice::Inside);
    }
    if off {
        if !section.allow_unsandboxed {
            return Err(
                "refused: '#terminalfs sandbox=off' asks to run outside the sandbox, which \
                 the settings do not allow (sandbox.allowUnsandboxedCommands is false)"
                    .to_owned(),
            );
        }
        return Ok(Choice::Off);
    }
    if section.excludes(text, commands) {
        return Ok(Choice::Excluded);
    }
    match unavailable(section) {
        Some(missing) if section.fail_if_unavailable => Err(format!(
            "refused: the sandbox cannot be enforced here: {missing} (set \
             sandbox.failIfUnavailable to false to run unsandboxed with a warning)"
        )),
        Some(_) => Ok(Choice::Unavailable),
        None => Ok(Choice::Inside),
    }
}

/// What this platform lacks to enforce `section`, in a sentence.
pub fn unavailable(section: &Section) -> Option<String> {
    #[cfg(target_os = "linux")]
    {
        let plan = Plan {
            // Covering paths is assumed needed: denyWrite, .git/hooks or a startup file
            // usually lies below some writable root.
            read_only: vec![PathBuf::from("/")],
            allow_local_binding: section.allow_local_binding,
            ..Plan::default()
        };
        linux::missing(&plan)
    }
    #[cfg(target_os = "macos")]
    {
        let _ = section;
        (!Path::new(SANDBOX_EXEC).exists())
            .then(|| format!("{SANDBOX_EXEC} (Seatbelt) is not on this Mac"))
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    {
        let _ = section;
        Some("this platform has no sandbox terminalfs can apply".to_owned())
    }
}

/// Seatbelt's command-line tool, which runs a program under a profile (macOS).
#[cfg(target_os = "macos")]
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// A command's sandbox, resolved against its working directory.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// Where it may write.
    pub writable: Vec<PathBuf>,
    /// Paths below a writable root bound read-only over themselves.
    pub read_only: Vec<PathBuf>,
    /// The directories between a writable root and a read-only path, each bound over
    /// itself so that it cannot be renamed away (a mount point's rename fails with
    /// EBUSY): `mv .git .g; mkdir .git` would otherwise leave `.git/hooks` writable.
    pub pinned: Vec<PathBuf>,
    /// The driver's mount, when it lies below a writable root: bound read-only too, and
    /// never looked at by the driver (that would be a request to itself).
    pub mount: Option<PathBuf>,
    /// Paths hidden (`denyRead`).
    pub hidden: Vec<PathBuf>,
    /// Deny paths that do not exist, so cannot be covered (said, not in force).
    pub not_in_force: Vec<PathBuf>,
    pub allowed_domains: Vec<Domain>,
    pub allow_local_binding: bool,
    pub allow_all_unix_sockets: bool,
}

impl Plan {
    /// Whether a mount namespace is needed.
    pub fn needs_mounts(&self) -> bool {
        !self.read_only.is_empty() || !self.hidden.is_empty() || self.mount.is_some()
    }

    /// The network in one phrase.
    pub fn network(&self) -> String {
        if self.allowed_domains.is_empty() {
            "none".to_owned()
        } else {
            let names: Vec<String> = self.allowed_domains.iter().map(Domain::to_string).collect();
            format!(
                "HTTP and HTTPS through the driver's proxy to {}",
                names.join(", ")
            )
        }
    }
}

/// Resolves one settings path as Claude Code reads it.
pub fn resolve(spelled: &str, cwd: &Path, context: &Context) -> PathBuf {
    if let Some(rest) = spelled.strip_prefix("//") {
        return PathBuf::from("/").join(rest);
    }
    if spelled == "~" {
        return context.home.clone();
    }
    if let Some(rest) = spelled.strip_prefix("~/") {
        return context.home.join(rest);
    }
    if let Some(rest) = spelled.strip_prefix('/') {
        let dir = context.settings.parent().unwrap_or(Path::new("/"));
        return dir.join(rest);
    }
    cwd.join(spelled.strip_prefix("./").unwrap_or(spelled))
}

/// Whether `path` lies at or below `root` (both as given).
fn below(path: &Path, root: &Path) -> bool {
    path.starts_with(root)
}

/// Plans the sandbox of a command in `cwd` with its private `tmp`.
pub fn plan(section: &Section, context: &Context, cwd: &Path, tmp: Option<&Path>) -> Plan {
    let real = |path: &Path| std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let exists = |path: &Path| std::fs::symlink_metadata(path).is_ok();
    let mut plan = Plan {
        allowed_domains: section.allowed_domains.clone(),
        allow_local_binding: section.allow_local_binding,
        allow_all_unix_sockets: section.allow_all_unix_sockets,
        ..Plan::default()
    };
    plan.writable.push(real(cwd));
    plan.writable.extend(tmp.map(real));
    for spelled in &section.allow_write {
        let path = resolve(spelled, cwd, context);
        if exists(&path) {
            plan.writable.push(real(&path));
        } else {
            plan.not_in_force.push(path);
        }
    }
    plan.writable
        .extend(DEVICES.iter().map(PathBuf::from).filter(|p| exists(p)));
    let mut never: Vec<PathBuf> = context.protected.clone();
    never.push(context.settings.clone());
    never.extend(HOME_PROTECTED.iter().map(|p| context.home.join(p)));
    never.push(cwd.join(".git/hooks"));
    never.push(cwd.join(".git/config"));
    let denied: Vec<PathBuf> = section
        .deny_write
        .iter()
        .map(|spelled| resolve(spelled, cwd, context))
        .collect();
    for path in &denied {
        if !exists(path) {
            plan.not_in_force.push(path.clone());
        }
    }
    never.extend(denied);
    for path in never {
        let covered = |path: &Path| plan.writable.iter().any(|root| below(path, root));
        if exists(&path) {
            let path = real(&path);
            if covered(&path) && !plan.read_only.contains(&path) {
                plan.read_only.push(path);
            }
        } else if !plan.not_in_force.contains(&path) {
            // Nothing covers a path that does not exist: a command may make it where
            // it may write.
            let resolved = match (path.parent(), path.file_name()) {
                (Some(parent), Some(name)) => real(parent).join(name),
                _ => path.clone(),
            };
            if covered(&resolved) {
                plan.not_in_force.push(path);
            }
        }
    }
    for path in &plan.read_only {
        let Some(root) = plan
            .writable
            .iter()
            .filter(|root| below(path, root))
            .max_by_key(|root| root.as_os_str().len())
        else {
            continue;
        };
        for dir in path.ancestors().skip(1) {
            if dir == root.as_path() || !below(dir, root) {
                break;
            }
            if !plan.pinned.iter().any(|pinned| pinned == dir) {
                plan.pinned.push(dir.to_path_buf());
            }
        }
    }
    if let Some(mount) = &context.mount {
        // Its parent is resolved, never the mount itself.
        let mount = match (mount.parent(), mount.file_name()) {
            (Some(parent), Some(name)) => real(parent).join(name),
            _ => mount.clone(),
        };
        if plan.writable.iter().any(|root| below(&mount, root)) {
            plan.mount = Some(mount);
        }
    }
    for spelled in &section.deny_read {
        let path = resolve(spelled, cwd, context);
        if exists(&path) {
            plan.hidden.push(real(&path));
        } else {
            plan.not_in_force.push(path);
        }
    }
    plan
}

/// A command's private temporary directory: removed with the command's record (its
/// [`Report`] is dropped), not at its exit.
#[derive(Debug)]
pub struct TempDir(PathBuf);

impl TempDir {
    /// A new directory, mode 0700, for the command `name`.
    fn make(name: &str) -> Result<TempDir, String> {
        use std::os::unix::fs::DirBuilderExt;
        let base = tmp_base();
        private_dir(&base)?;
        let clean: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .take(40)
            .collect();
        for attempt in 0u32..100 {
            let stamp = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            let dir = base.join(format!("{clean}.{stamp:x}{attempt}"));
            match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => return Ok(TempDir(dir)),
                Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(err) => return Err(format!("cannot make {}: {err}", dir.display())),
            }
        }
        Err(format!("cannot make a new directory in {}", base.display()))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Makes `dir` (its parent must exist) as a directory only this user may enter, or
/// accepts the one there only if it is just that: a directory, not a symbolic link,
/// owned by this user, mode 0700. Another user could otherwise make it first in the
/// shared temporary directory and read or replace what commands write in it.
fn private_dir(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        // The umask may have taken bits the commands need.
        Ok(()) => std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|err| format!("cannot make {} private: {err}", dir.display()))?,
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(err) => return Err(format!("cannot make {}: {err}", dir.display())),
    }
    let found = std::fs::symlink_metadata(dir)
        .map_err(|err| format!("cannot look at {}: {err}", dir.display()))?;
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    if !found.file_type().is_dir() || found.uid() != uid || found.mode() & 0o7777 != 0o700 {
        return Err(format!(
            "{} exists and is not a directory of this user's with mode 0700 (it may be \
             another user's); remove it or run from another TMPDIR",
            dir.display()
        ));
    }
    Ok(())
}

/// Where this driver's commands get their `TMPDIR`s: one directory per driver process,
/// removed whole when the mount ends ([`remove_temp_dirs`]).
fn tmp_base() -> PathBuf {
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    std::env::temp_dir().join(format!("terminalfs-{uid}-{}", std::process::id()))
}

/// Removes every command's `TMPDIR` of this driver (at the end of the mount).
pub fn remove_temp_dirs() {
    let _ = std::fs::remove_dir_all(tmp_base());
}

/// How one command was sandboxed, for `result.json`; it also owns the command's
/// `TMPDIR` and proxy, which go when it does.
#[derive(Debug)]
pub struct Report {
    value: Value,
    refused: Arc<AtomicU64>,
    _tmp: Option<TempDir>,
    _proxy: Option<proxy::Proxy>,
}

impl Report {
    /// A command that runs outside: `mode` and why.
    pub fn outside(mode: &str, why: &str) -> Report {
        Report {
            value: json!({"mode": mode, "why": why}),
            refused: Arc::default(),
            _tmp: None,
            _proxy: None,
        }
    }

    /// `result.json`'s `sandbox` object.
    pub fn json(&self) -> Value {
        let mut value = self.value.clone();
        if let Value::Object(map) = &mut value {
            if map.get("mode").and_then(Value::as_str) == Some("on") {
                map.insert(
                    "connections_refused".to_owned(),
                    self.refused.load(Ordering::Relaxed).into(),
                );
            }
        }
        value
    }
}

/// How a command was decided to run, carried to its start.
#[derive(Debug, Clone, Default)]
pub enum Mode {
    /// No sandbox is configured.
    #[default]
    None,
    /// In the sandbox these settings describe.
    Inside(Arc<Section>, Arc<Context>),
    /// Outside, for this reason (a `Choice` other than `Inside`).
    Outside(Choice),
}

/// What the spawn path needs to start one command: what its child applies, variables
/// for its environment, and the report for `result.json` (None without a sandbox).
pub struct Prepared {
    #[cfg(target_os = "linux")]
    pub child: Option<linux::Child>,
    /// The Seatbelt profile to run the shell under.
    #[cfg(target_os = "macos")]
    pub profile: Option<String>,
    pub env: Vec<(&'static str, OsString)>,
    pub report: Option<Report>,
}

impl Mode {
    /// The mode for a decided command: `choice` from [`review`], the settings in force
    /// now (a reload between the decision and the start sandboxes a command the new
    /// settings no longer let out).
    pub fn of(section: &Arc<Section>, context: &Arc<Context>, choice: Choice) -> Mode {
        if !context.enabled(section) {
            return Mode::None;
        }
        match choice {
            Choice::Off if section.allow_unsandboxed => Mode::Outside(Choice::Off),
            Choice::Host => Mode::Outside(Choice::Host),
            Choice::Excluded if section.excludes_any() => Mode::Outside(Choice::Excluded),
            Choice::Unavailable if !section.fail_if_unavailable => {
                Mode::Outside(Choice::Unavailable)
            }
            _ => Mode::Inside(section.clone(), context.clone()),
        }
    }

    /// Prepares the command `name` in `cwd`, whose stderr file (opened through the
    /// mount) is `stderr`; the error is the sentence that keeps it from starting.
    pub fn prepare(
        &self,
        name: &str,
        cwd: &Path,
        stderr: Option<std::os::fd::RawFd>,
    ) -> Result<Prepared, String> {
        let (section, context) = match self {
            Mode::None => {
                return Ok(Prepared {
                    #[cfg(target_os = "linux")]
                    child: None,
                    #[cfg(target_os = "macos")]
                    profile: None,
                    env: Vec::new(),
                    report: None,
                })
            }
            Mode::Outside(choice) => {
                let report = match choice {
                    Choice::Off => Report::outside("off", "#terminalfs sandbox=off"),
                    Choice::Host => Report::outside(
                        "host",
                        "it runs on a remote host whose entry says \"unsandboxed\": true",
                    ),
                    Choice::Excluded => Report::outside(
                        "excluded",
                        "every simple command matches sandbox.excludedCommands",
                    ),
                    _ => Report::outside(
                        "unavailable",
                        &format!(
                            "warning: ran unsandboxed (failIfUnavailable is false): {}",
                            unavailable(&Section::default()).unwrap_or_default()
                        ),
                    ),
                };
                return Ok(Prepared {
                    #[cfg(target_os = "linux")]
                    child: None,
                    #[cfg(target_os = "macos")]
                    profile: None,
                    env: Vec::new(),
                    report: Some(report),
                });
            }
            Mode::Inside(section, context) => (section, context),
        };
        let fail = |what: String| format!("terminalfs: sandbox: {what}\n");
        let tmp = TempDir::make(name)
            .map_err(|why| fail(format!("cannot make the command's TMPDIR: {why}")))?;
        let plan = plan(section, context, cwd, Some(tmp.path()));
        let refused = Arc::new(AtomicU64::new(0));
        let proxy = if plan.allowed_domains.is_empty() {
            None
        } else {
            Some(
                proxy::Proxy::start(name, plan.allowed_domains.clone(), refused.clone())
                    .map_err(|err| fail(format!("cannot start the proxy: {err}")))?,
            )
        };
        let mut env: Vec<(&'static str, OsString)> =
            vec![("TMPDIR", tmp.path().as_os_str().to_owned())];
        if let Some(proxy) = &proxy {
            let url = format!("http://127.0.0.1:{}", proxy.port());
            for key in [
                "http_proxy",
                "https_proxy",
                "all_proxy",
                "HTTP_PROXY",
                "HTTPS_PROXY",
                "ALL_PROXY",
            ] {
                env.push((key, url.clone().into()));
            }
            // Nothing allowed may go around the proxy (outside it nothing is reachable).
            env.push(("no_proxy", OsString::new()));
            env.push(("NO_PROXY", OsString::new()));
        }
        #[cfg(target_os = "linux")]
        let child = linux::build(
            &plan,
            stderr.as_slice(),
            proxy.as_ref().map(proxy::Proxy::port),
        )
        .map_err(fail)?;
        #[cfg(target_os = "macos")]
        let profile = seatbelt::profile(&plan, proxy.as_ref().map(proxy::Proxy::port));
        #[cfg(not(target_os = "linux"))]
        let _ = stderr;
        let paths = |list: &[PathBuf]| -> Vec<String> {
            list.iter().map(|p| p.display().to_string()).collect()
        };
        let mechanism = if cfg!(target_os = "macos") {
            "seatbelt (sandbox-exec)"
        } else if plan.needs_mounts() {
            "landlock + seccomp + mount namespace"
        } else {
            "landlock + seccomp"
        };
        let value = json!({
            "mode": "on",
            "mechanism": mechanism,
            "writable": paths(&plan.writable),
            "read_only": paths(&[plan.read_only.clone(), plan.mount.iter().cloned().collect()].concat()),
            "unreadable": paths(&plan.hidden),
            "not_in_force": paths(&plan.not_in_force),
            "network": plan.network(),
            "local_binding": plan.allow_local_binding,
            "unix_sockets": if plan.allow_all_unix_sockets { "all" } else { "none" },
            "tmpdir": tmp.path().display().to_string(),
        });
        Ok(Prepared {
            #[cfg(target_os = "linux")]
            child: Some(child),
            #[cfg(target_os = "macos")]
            profile: Some(profile),
            env,
            report: Some(Report {
                value,
                refused,
                _tmp: Some(tmp),
                _proxy: proxy,
            }),
        })
    }
}

/// How a text decided with `choice` runs under `policy`'s settings now, in a phrase.
pub fn choice_text(policy: &crate::policy::Policy, choice: Choice) -> &'static str {
    match policy.sandbox_mode(choice) {
        Mode::None => "none (no sandbox is enabled)",
        Mode::Inside(..) => "inside",
        Mode::Outside(Choice::Off) => "outside (#terminalfs sandbox=off, allowed)",
        Mode::Outside(Choice::Excluded) => "outside (every simple command is excluded)",
        Mode::Outside(Choice::Host) => "outside (on a host whose entry says unsandboxed)",
        Mode::Outside(_) => "outside (the kernel cannot enforce it; failIfUnavailable is false)",
    }
}

/// What is in force, in lines for `/index.md` and `terminalfs check`.
pub fn describe(section: &Section, context: &Context, cwd: &Path) -> Vec<String> {
    if !context.enabled(section) {
        return vec!["sandbox: off (enable it with sandbox.enabled or --sandbox)".to_owned()];
    }
    let plan = plan(section, context, cwd, None);
    let paths = |list: &[PathBuf]| -> String {
        if list.is_empty() {
            "none".to_owned()
        } else {
            list.iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    let mut lines = vec![
        format!(
            "sandbox: on ({}){}",
            if cfg!(target_os = "linux") {
                "Landlock, seccomp, a mount namespace where paths need covering"
            } else {
                "Linux only; a Seatbelt profile on macOS"
            },
            match unavailable(section) {
                Some(missing) if section.fail_if_unavailable =>
                    format!("; every command is refused: {missing}"),
                Some(missing) => format!("; commands run UNSANDBOXED: {missing}"),
                None => String::new(),
            }
        ),
        format!(
            "sandbox writable: {} and a private TMPDIR",
            paths(&plan.writable)
        ),
        format!(
            "sandbox read-only inside those: {}",
            paths(&[plan.read_only.clone(), plan.mount.iter().cloned().collect()].concat())
        ),
        format!("sandbox unreadable: {}", paths(&plan.hidden)),
        format!("sandbox network: {}", plan.network()),
    ];
    if !plan.not_in_force.is_empty() {
        lines.push(format!(
            "sandbox paths NOT in force (they do not exist): {}",
            paths(&plan.not_in_force)
        ));
    }
    if !section.excluded.is_empty() {
        let names: Vec<&str> = section.excluded.iter().map(|r| r.text()).collect();
        lines.push(format!("sandbox excludedCommands: {}", names.join(", ")));
    }
    lines.push(format!(
        "sandbox=off directive: {}",
        if section.allow_unsandboxed {
            "allowed"
        } else {
            "refused"
        }
    ));
    for warning in &section.warnings {
        lines.push(format!("sandbox warning: {warning}"));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(json: &str) -> Section {
        Section::parse(Some(&serde_json::from_str(json).unwrap()), &[]).unwrap()
    }

    fn commands(text: &str) -> Vec<crate::policy::SimpleCommand> {
        crate::policy::splitter::split(text).commands
    }

    #[test]
    fn paths_are_read_as_claude_code_reads_them() {
        let context = Context {
            settings: PathBuf::from("/etc/tfs/settings.json"),
            home: PathBuf::from("/home/u"),
            ..Context::default()
        };
        let cwd = Path::new("/work/p");
        for (spelled, meant) in [
            ("//tmp/build", "/tmp/build"),
            ("~/.cache/pip", "/home/u/.cache/pip"),
            ("~", "/home/u"),
            ("/cache", "/etc/tfs/cache"),
            ("./out", "/work/p/out"),
            ("out/x", "/work/p/out/x"),
        ] {
            assert_eq!(
                resolve(spelled, cwd, &context),
                PathBuf::from(meant),
                "{spelled}"
            );
        }
    }

    #[test]
    fn off_needs_the_setting_and_every_command_must_be_excluded() {
        let context = Context::default();
        let strict = section(r#"{"enabled": true, "excludedCommands": ["docker"]}"#);
        let reason = review(&strict, &context, true, "make", &commands("make")).unwrap_err();
        assert!(reason.contains("allowUnsandboxedCommands"), "{reason}");
        let loose = section(r#"{"enabled": true, "allowUnsandboxedCommands": true}"#);
        assert_eq!(
            review(&loose, &context, true, "make", &commands("make")),
            Ok(Choice::Off)
        );
        for (text, excluded) in [
            ("docker ps", true),
            ("docker", true),
            ("docker ps && docker images", true),
            ("docker ps; rm -rf x", false),
            ("dockerd", false),
            ("make", false),
            // A program named by a path may be a file the sandboxed command wrote.
            ("./docker ps", false),
            ("/tmp/x/docker ps", false),
            ("./sh -c 'docker ps'", false),
            ("sh -c 'docker ps'", true),
            // A command that changes what the name finds or what loads with it.
            ("PATH=. docker ps", false),
            ("LD_PRELOAD=./x.so docker ps", false),
            ("env PATH=. docker ps", false),
            ("env LD_LIBRARY_PATH=. docker ps", false),
            ("BASH_ENV=./x sh -c 'docker ps'", false),
            ("ENV=./x docker ps", false),
            ("FOO=1 docker ps", true),
        ] {
            let choice = review(&strict, &context, false, text, &commands(text));
            assert_eq!(
                choice == Ok(Choice::Excluded),
                excluded,
                "{text}: {choice:?}"
            );
        }
        // Nothing applies while the sandbox is off.
        let off = section(r#"{"enabled": false}"#);
        assert_eq!(
            review(&off, &context, true, "make", &commands("make")),
            Ok(Choice::Inside)
        );
        let forced = Context {
            forced: true,
            ..Context::default()
        };
        assert!(review(&off, &forced, true, "make", &commands("make")).is_err());
    }

    #[test]
    fn a_plan_covers_what_lies_inside_writable_roots_and_says_what_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().join("p");
        std::fs::create_dir_all(cwd.join(".git/hooks")).unwrap();
        std::fs::create_dir_all(cwd.join("keep")).unwrap();
        let context = Context {
            settings: cwd.join("settings.json"),
            home: dir.path().join("home"),
            mount: Some(cwd.join("mnt")),
            ..Context::default()
        };
        std::fs::write(&context.settings, "{}").unwrap();
        let section = section(
            r#"{"enabled": true, "filesystem": {"denyWrite": ["./keep", "./gone"],
                "denyRead": ["./keep"], "allowWrite": ["./nowhere"]}}"#,
        );
        let plan = plan(&section, &context, &cwd, None);
        let cwd = std::fs::canonicalize(&cwd).unwrap();
        assert_eq!(plan.writable[0], cwd);
        for path in [".git/hooks", "keep", "settings.json"] {
            assert!(plan.read_only.contains(&cwd.join(path)), "{path}: {plan:?}");
        }
        assert_eq!(plan.mount, Some(cwd.join("mnt")));
        assert_eq!(plan.hidden, [cwd.join("keep")]);
        assert!(plan.not_in_force.iter().any(|p| p.ends_with("gone")));
        assert!(plan.not_in_force.iter().any(|p| p.ends_with("nowhere")));
        // A never-writable path a command could make inside the directory is listed;
        // one outside every writable root (the home's startup files) is not.
        assert!(
            plan.not_in_force.iter().any(|p| p.ends_with(".git/config")),
            "{plan:?}"
        );
        assert!(!plan.not_in_force.iter().any(|p| p.ends_with(".bashrc")));
        std::fs::write(cwd.join(".git/config"), "").unwrap();
        let again = super::plan(&section, &context, &cwd, None);
        assert!(
            again.read_only.contains(&cwd.join(".git/config")),
            "{again:?}"
        );
        assert!(!again
            .not_in_force
            .iter()
            .any(|p| p.ends_with(".git/config")));
        assert!(plan.needs_mounts());
    }

    #[test]
    fn the_temporary_base_is_made_private_or_refused() {
        use std::os::unix::fs::PermissionsExt;
        let top = tempfile::tempdir().unwrap();
        let new = top.path().join("new");
        private_dir(&new).unwrap();
        let mode = std::fs::symlink_metadata(&new)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o7777, 0o700);
        private_dir(&new).unwrap();
        let link = top.path().join("link");
        std::os::unix::fs::symlink(&new, &link).unwrap();
        let open = top.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let file = top.path().join("file");
        std::fs::write(&file, "").unwrap();
        let theirs = top.path().join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534))
            .expect("giving a directory to nobody needs root, as the sandbox tests do");
        for path in [link, open, file, theirs] {
            let why = private_dir(&path).unwrap_err();
            assert!(why.contains(&path.display().to_string()), "{why}");
        }
    }
}
