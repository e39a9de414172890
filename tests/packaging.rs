//! What packages ship besides the binary: completions and the man page generated from the
//! command-line definition, the systemd user unit, the asset script and the cargo-deb
//! metadata. Nothing here mounts; the binary runs with an empty home so any attempt to
//! read settings or create a mount point would show.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_terminalfs");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The long options SPEC section 8 names, each of which the man page must document.
const SPEC_OPTIONS: &[&str] = &[
    "--path",
    "--settings",
    "--shell",
    "--cwd",
    "--keep",
    "--settle",
    "--wait-timeout",
    "--max-output",
    "--timeout",
    "--kill-grace",
    "--allowlist",
    "--daemon",
    "--pid-file",
    "--log-file",
    "--init-settings",
    "--unmount",
];

fn repo_file(relative: &str) -> PathBuf {
    Path::new(ROOT).join(relative)
}

fn read_repo_file(relative: &str) -> String {
    std::fs::read_to_string(repo_file(relative))
        .unwrap_or_else(|e| panic!("cannot read {relative}: {e}"))
}

/// Runs the binary with `args` in an empty home (no settings file anywhere) and checks
/// that it left that home empty: the packaging flags must not look for settings, write
/// state or create a mount point.
fn terminalfs(args: &[&str]) -> Output {
    let home = tempfile::tempdir().expect("temporary home");
    let output = Command::new(BIN)
        .args(args)
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("XDG_STATE_HOME", home.path().join("state"))
        .env_remove("NOTIFY_SOCKET")
        .current_dir(home.path())
        .stdin(Stdio::null())
        .output()
        .expect("terminalfs runs");
    let left: Vec<_> = std::fs::read_dir(home.path())
        .expect("read the temporary home")
        .map(|entry| entry.expect("directory entry").file_name())
        .collect();
    assert!(
        left.is_empty(),
        "terminalfs {args:?} wrote into the home directory: {left:?}"
    );
    output
}

/// Stdout of a run that must succeed.
fn stdout_of(args: &[&str]) -> String {
    let output = terminalfs(args);
    assert!(
        output.status.success(),
        "terminalfs {args:?} failed: {}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("utf-8 output")
}

/// The man page with roff's `\-` escapes undone, so options read as typed.
fn man_text() -> String {
    stdout_of(&["--man"]).replace("\\-", "-")
}

#[test]
fn bash_completion_offers_the_long_options() {
    let script = stdout_of(&["--completions", "bash"]);
    assert!(script.contains("--wait-timeout"), "{script}");
    assert!(script.contains("--init-settings"), "{script}");
    assert!(script.contains("terminalfs"), "{script}");
}

#[test]
fn completions_for_every_supported_shell_are_generated() {
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let script = stdout_of(&["--completions", shell]);
        assert!(
            script.contains("wait-timeout"),
            "{shell} completion misses --wait-timeout:\n{script}"
        );
    }
}

#[test]
fn completions_for_an_unknown_shell_are_a_usage_error() {
    let output = terminalfs(&["--completions", "tcsh"]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--completions"), "{stderr}");
}

#[test]
fn man_page_is_roff_and_documents_every_option() {
    let page = man_text();
    assert!(page.starts_with('.'), "not roff: {page}");
    let title = page
        .lines()
        .position(|line| line.starts_with(".TH "))
        .expect("a .TH title line");
    let first_section = page
        .lines()
        .position(|line| line.starts_with(".SH "))
        .expect("a .SH section");
    assert!(title < first_section, ".TH must come before any section");
    assert!(
        page.lines().nth(title).unwrap().contains("terminalfs 1"),
        "{page}"
    );
    for option in SPEC_OPTIONS {
        let documented = page
            .lines()
            .filter(|line| line.starts_with("\\fB"))
            .any(|line| line.contains(&format!("\\fB{option}\\fR")));
        assert!(
            documented,
            "the man page does not document {option}:\n{page}"
        );
    }
    assert!(page.contains(env!("CARGO_PKG_VERSION")), "{page}");
}

#[test]
fn man_page_describes_the_tree_as_well_as_the_options() {
    let page = man_text();
    let sections: Vec<&str> = page
        .lines()
        .filter_map(|line| line.strip_prefix(".SH "))
        .collect();
    for section in [
        "THE TREE",
        "WAIT",
        "KILL",
        "DIRECTIVES",
        "REFUSALS",
        "ENVIRONMENT",
        "OPTIONS",
        "\"DURATIONS AND SIZES\"",
    ] {
        assert!(sections.contains(&section), "no {section} in {sections:?}");
    }
    let tree = sections.iter().position(|s| *s == "THE TREE").unwrap();
    let options = sections.iter().position(|s| *s == "OPTIONS").unwrap();
    assert!(tree < options, "the tree comes first: {sections:?}");
    for needed in [
        "ctl/<name>",
        "ctl/index.md",
        "cmd/index.md",
        "cmd/<name>/wait",
        "cmd/<name>/reason",
        "cmd/<name>/result.json",
        "cmd/<name>/stdin, screen, keys",
        "\\fBpaused\\fR",
        "\\fBSTOP\\fR in capitals",
        "cwd=DIR",
        "TERMINALFS_NAME",
        "events",
        "a bare number is seconds",
    ] {
        assert!(page.contains(needed), "the man page lacks {needed:?}");
    }
    // Clean roff: groff finds nothing to warn about (.ci/run installs groff-base).
    let mut groff = Command::new("groff")
        .args(["-man", "-ww", "-z"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("groff runs");
    use std::io::Write;
    groff
        .stdin
        .take()
        .unwrap()
        .write_all(stdout_of(&["--man"]).as_bytes())
        .unwrap();
    let out = groff.wait_with_output().unwrap();
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn help_shows_the_packaging_flags_and_the_default_paths() {
    let help = stdout_of(&["--help"]);
    for needle in [
        "--wait-timeout",
        "--man",
        "--completions",
        "selftest",
        "~/.config/terminalfs/settings.json",
        "~/.local/state/terminalfs/audit.jsonl",
    ] {
        assert!(help.contains(needle), "--help misses {needle}:\n{help}");
    }
    let page = man_text();
    assert!(page.contains("--completions"), "{page}");
}

/// The unit as `section -> key -> values` (a key may repeat), failing on any line that
/// is neither a comment, a section header nor `Key=Value`.
fn parse_unit(text: &str) -> BTreeMap<String, BTreeMap<String, Vec<String>>> {
    let mut sections: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            sections.entry(name.to_string()).or_default();
            current = Some(name.to_string());
            continue;
        }
        let (key, value) = line
            .split_once('=')
            .unwrap_or_else(|| panic!("line {}: not Key=Value: {line}", number + 1));
        let section = current
            .as_ref()
            .unwrap_or_else(|| panic!("line {}: a key outside any section", number + 1));
        assert!(
            !key.trim().is_empty() && !key.trim().contains(char::is_whitespace),
            "line {}: bad key {key:?}",
            number + 1
        );
        sections
            .get_mut(section)
            .expect("section exists")
            .entry(key.trim().to_string())
            .or_default()
            .push(value.trim().to_string());
    }
    sections
}

#[test]
fn systemd_unit_notifies_delegates_and_cleans_up_the_mount() {
    let unit = parse_unit(&read_repo_file("systemd/terminalfs.service"));
    let names: Vec<_> = unit.keys().map(String::as_str).collect();
    assert_eq!(names, ["Install", "Service", "Unit"]);
    let service = &unit["Service"];
    let one = |key: &str| -> &str {
        let values = service
            .get(key)
            .unwrap_or_else(|| panic!("[Service] has no {key}="));
        assert_eq!(values.len(), 1, "{key}= is set more than once");
        &values[0]
    };

    assert_eq!(one("Type"), "notify");
    assert_eq!(one("Delegate"), "yes");
    assert!(
        ["mixed", "process"].contains(&one("KillMode")),
        "KillMode must leave the commands to the driver"
    );
    assert_eq!(one("Restart"), "on-failure");
    let stop_timeout: u64 = one("TimeoutStopSec")
        .parse()
        .expect("TimeoutStopSec in plain seconds");
    assert!(
        stop_timeout >= 15,
        "TimeoutStopSec={stop_timeout} leaves too little room for the 5 s grace"
    );

    // The mount path is named once, in the environment both Exec lines use.
    let environment = &service["Environment"];
    assert!(
        environment.contains(&"TERMINALFS_MOUNT=%h/mnt/terminalfs".to_string()),
        "{environment:?}"
    );
    let text = read_repo_file("systemd/terminalfs.service");
    let named: usize = text
        .lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| line.matches("mnt/terminalfs").count())
        .sum();
    assert_eq!(named, 1, "the mount path is written once");
    // Commands find what `cargo install` and `pip install --user` put in the home.
    let path = environment
        .iter()
        .find_map(|value| value.strip_prefix("PATH="))
        .expect("a PATH");
    let dirs: Vec<&str> = path.split(':').collect();
    for needed in ["%h/.cargo/bin", "%h/.local/bin", "/usr/bin", "/bin"] {
        assert!(dirs.contains(&needed), "{path}");
    }
    // The comments say how to add to it and how to bring in the login environment.
    for said in [
        "systemctl --user edit terminalfs",
        "environment.d",
        "systemctl --user import-environment SSH_AUTH_SOCK",
    ] {
        assert!(text.contains(said), "the unit's comments miss {said}");
    }

    let start = one("ExecStart");
    assert!(start.starts_with("/usr/bin/terminalfs "), "{start}");
    assert!(start.contains("--path ${TERMINALFS_MOUNT}"), "{start}");
    assert!(
        !start.contains("--daemon"),
        "Type=notify needs the foreground driver"
    );
    let stop_post = one("ExecStopPost");
    let stop_post_command = stop_post.trim_start_matches(['-', '@', ':', '+', '!']);
    assert!(
        stop_post_command.starts_with("/usr/bin/terminalfs "),
        "{stop_post}"
    );
    assert!(stop_post.contains("--unmount"), "{stop_post}");
    assert!(
        stop_post.contains("--path ${TERMINALFS_MOUNT}"),
        "{stop_post}"
    );

    assert_eq!(unit["Install"]["WantedBy"], ["default.target"]);
}

#[test]
fn systemd_unit_passes_systemd_analyze_verify() {
    // .ci/run installs systemd when systemd-analyze is missing.
    let dir = tempfile::tempdir().expect("temporary directory");
    let runtime = dir.path().join("runtime");
    std::fs::create_dir(&runtime).expect("runtime directory");
    let unit = dir.path().join("terminalfs.service");
    let text = read_repo_file("systemd/terminalfs.service").replace("/usr/bin/terminalfs", BIN);
    std::fs::write(&unit, text).expect("write the unit copy");

    let output = Command::new("systemd-analyze")
        .args(["verify", "--user", "--man=no"])
        .arg(&unit)
        .env("XDG_RUNTIME_DIR", &runtime)
        .stdin(Stdio::null())
        .output()
        .expect("systemd-analyze runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "verify failed:\n{stderr}");
    // Unknown keys and unparsable values are only warnings; they count here.
    let complaints: Vec<_> = stderr
        .lines()
        .filter(|line| line.contains("terminalfs.service"))
        .collect();
    assert!(complaints.is_empty(), "verify complained:\n{stderr}");
}

/// Runs packaging/generate-assets.sh with the test binary, writing into `out`.
fn generate_assets(out: &Path) {
    let output = Command::new("sh")
        .arg(repo_file("packaging/generate-assets.sh"))
        .env("TERMINALFS_BIN", BIN)
        .env("TERMINALFS_ASSETS", out)
        .stdin(Stdio::null())
        .output()
        .expect("sh runs");
    assert!(
        output.status.success(),
        "generate-assets.sh failed: {}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn generate_assets_writes_man_page_and_completions() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let out = dir.path().join("assets");
    generate_assets(&out);

    let gz = std::fs::read(out.join("terminalfs.1.gz")).expect("the man page");
    assert_eq!(&gz[..2], [0x1f, 0x8b], "not gzip");
    let unzipped = Command::new("gzip")
        .arg("-dc")
        .arg(out.join("terminalfs.1.gz"))
        .output()
        .expect("gzip runs");
    assert!(unzipped.status.success());
    assert_eq!(
        String::from_utf8(unzipped.stdout).expect("utf-8 man page"),
        stdout_of(&["--man"])
    );

    // Every page the main page refers to is written, and is that subcommand's page.
    let main = stdout_of(&["--man"]).replace("\\-", "-");
    let referred: std::collections::BTreeSet<&str> = main
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '(' || c == ')'))
        .filter_map(|word| word.strip_prefix("terminalfs-")?.strip_suffix("(1)"))
        .collect();
    assert_eq!(
        referred.iter().copied().collect::<Vec<_>>(),
        ["check", "selftest"],
        "{main}"
    );
    for name in referred {
        let file = out.join(format!("terminalfs-{name}.1.gz"));
        let unzipped = Command::new("gzip")
            .arg("-dc")
            .arg(&file)
            .output()
            .expect("gzip runs");
        assert!(
            unzipped.status.success(),
            "{}: {unzipped:?}",
            file.display()
        );
        let page = String::from_utf8(unzipped.stdout).expect("utf-8 man page");
        assert_eq!(page, stdout_of(&["--man", name]));
        let page = page.replace("\\-", "-");
        assert!(page.contains(&format!(".TH terminalfs-{name} 1")), "{page}");
        assert!(page.contains(&format!("terminalfs {name}")), "{page}");
    }
    let settings = stdout_of(&["--man", "check"]).replace("\\-", "-");
    assert!(settings.contains("--settings"), "{settings}");

    for (shell, file) in [
        ("bash", "terminalfs.bash"),
        ("zsh", "_terminalfs"),
        ("fish", "terminalfs.fish"),
    ] {
        let written = std::fs::read_to_string(out.join("completions").join(file))
            .unwrap_or_else(|e| panic!("completions/{file}: {e}"));
        assert!(!written.is_empty(), "completions/{file} is empty");
        assert_eq!(written, stdout_of(&["--completions", shell]), "{file}");
    }
    let leftovers: Vec<_> = walk(&out)
        .into_iter()
        .filter(|path| path.extension().is_some_and(|ext| ext == "tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read directory") {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// The `[source, destination, mode]` rows of `assets` in `[package.metadata.deb]`,
/// found by a plain text scan of Cargo.toml.
fn deb_assets(cargo_toml: &str) -> Vec<(String, String)> {
    let section: Vec<&str> = cargo_toml
        .lines()
        .skip_while(|line| line.trim() != "[package.metadata.deb]")
        .skip(1)
        .take_while(|line| !line.starts_with('['))
        .collect();
    assert!(
        !section.is_empty(),
        "Cargo.toml has no [package.metadata.deb]"
    );
    let rows: Vec<&str> = section
        .iter()
        .skip_while(|line| !line.trim_start().starts_with("assets"))
        .skip(1)
        .take_while(|line| line.trim() != "]")
        .copied()
        .collect();
    rows.iter()
        .map(|row| {
            let quoted: Vec<&str> = row.split('"').skip(1).step_by(2).collect();
            assert_eq!(quoted.len(), 3, "not [source, destination, mode]: {row}");
            (quoted[0].to_string(), quoted[1].to_string())
        })
        .collect()
}

#[test]
fn deb_assets_exist_once_generated() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let out = dir.path().join("assets");
    generate_assets(&out);

    let assets = deb_assets(&read_repo_file("Cargo.toml"));
    assert!(!assets.is_empty(), "no deb assets");
    for (source, _) in &assets {
        // The release binary stands in for the one under test, and target/assets for
        // the directory the script just wrote.
        let path = if source == "target/release/terminalfs" {
            PathBuf::from(BIN)
        } else if let Some(rest) = source.strip_prefix("target/assets/") {
            out.join(rest)
        } else {
            repo_file(source)
        };
        assert!(path.is_file(), "deb asset {source} does not exist");
    }

    let destination = |source: &str| -> &str {
        &assets
            .iter()
            .find(|(s, _)| s == source)
            .unwrap_or_else(|| panic!("the deb does not ship {source}"))
            .1
    };
    assert_eq!(destination("target/release/terminalfs"), "usr/bin/");
    assert_eq!(
        destination("systemd/terminalfs.service"),
        "usr/lib/systemd/user/"
    );
    assert!(destination("target/assets/terminalfs.1.gz").starts_with("usr/share/man/man1/"));
    for file in ["terminalfs.bash", "_terminalfs", "terminalfs.fish"] {
        destination(&format!("target/assets/completions/{file}"));
    }
}

#[test]
fn package_versions_and_license_match_cargo_toml() {
    let version = env!("CARGO_PKG_VERSION");
    assert!(stdout_of(&["--version"]).contains(version));

    let pkgbuild = read_repo_file("packaging/arch/PKGBUILD");
    assert!(
        pkgbuild.lines().any(|l| l == format!("pkgver={version}")),
        "PKGBUILD"
    );
    let spec = read_repo_file("packaging/rpm/terminalfs.spec");
    assert!(
        spec.lines()
            .any(|l| l.starts_with("Version:") && l.split_whitespace().nth(1) == Some(version)),
        "terminalfs.spec"
    );
    let formula = read_repo_file("packaging/homebrew/terminalfs.rb");
    assert!(
        formula.contains(&format!("v{version}.tar.gz")),
        "terminalfs.rb"
    );

    let license = read_repo_file("LICENSE");
    assert!(license.starts_with("MIT License"));
    assert!(license.contains("Copyright (c) 2026 The terminalfs authors"));
    assert_eq!(env!("CARGO_PKG_LICENSE"), "MIT");
    assert!(pkgbuild.contains("license=('MIT')"));
    assert!(spec.contains("License:        MIT"));
    assert!(formula.contains("license \"MIT\""));
}

/// The `sh` blocks of one README section.
fn readme_blocks(section: &str) -> Vec<String> {
    let readme = read_repo_file("README.md");
    let start = readme
        .find(&format!("\n## {section}\n"))
        .unwrap_or_else(|| panic!("the README has no section {section}"));
    let body = &readme[start + 1..];
    let body = &body[..body[3..].find("\n## ").map_or(body.len(), |end| end + 3)];
    body.split("```sh\n")
        .skip(1)
        .map(|block| block[..block.find("```").expect("a closed block")].to_string())
        .collect()
}

#[test]
fn readme_service_steps_install_the_unit_man_page_and_completions() {
    let blocks = readme_blocks("Running it as a service");
    let all = blocks.concat();
    for needed in [
        "systemctl --user daemon-reload",
        "systemctl --user enable --now terminalfs",
        "terminalfs --man",
        "terminalfs --completions bash",
    ] {
        assert!(
            all.contains(needed),
            "the service steps miss {needed}:\n{all}"
        );
    }
    // Everything but systemctl runs here, in a fresh home, with `terminalfs` on PATH.
    let home = tempfile::tempdir().expect("temporary home");
    let bin_dir = home.path().join("bin");
    std::fs::create_dir(&bin_dir).unwrap();
    std::os::unix::fs::symlink(BIN, bin_dir.join("terminalfs")).unwrap();
    let script: String = all
        .lines()
        .filter(|line| !line.starts_with("systemctl "))
        .map(|line| format!("{line}\n"))
        .collect();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap());
    let output = Command::new("sh")
        .args(["-euc", &script])
        .env("HOME", home.path())
        .env("PATH", path)
        .current_dir(ROOT)
        .stdin(Stdio::null())
        .output()
        .expect("sh runs");
    assert!(output.status.success(), "{output:?}");
    let installed = home.path().join(".config/systemd/user/terminalfs.service");
    let unit = parse_unit(&std::fs::read_to_string(&installed).unwrap());
    for key in ["ExecStart", "ExecStopPost"] {
        let line = &unit["Service"][key][0];
        assert!(line.contains("%h/.cargo/bin/terminalfs "), "{key}={line}");
    }
    let man = std::fs::read(home.path().join(".local/share/man/man1/terminalfs.1.gz")).unwrap();
    assert_eq!(&man[..2], b"\x1f\x8b", "the man page is gzipped");
    let completion = std::fs::read_to_string(
        home.path()
            .join(".local/share/bash-completion/completions/terminalfs"),
    )
    .unwrap();
    assert!(completion.contains("--wait-timeout"), "{completion}");
}

/// With stdout and stderr both closed pipes (`terminalfs … 2>&1 | head -c0`), a
/// failure to print is reported by the exit code, 1, not by a panic (101).
#[test]
fn a_closed_stdout_and_stderr_give_exit_code_1() {
    use std::os::fd::{FromRawFd, OwnedFd};

    // A pipe whose reading end is closed before the binary starts: every write fails.
    let mut ends = [0; 2];
    // SAFETY: pipe fills two descriptors into a valid array.
    assert_eq!(unsafe { libc::pipe(ends.as_mut_ptr()) }, 0);
    // SAFETY: both descriptors are new and owned here alone.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(ends[0]), OwnedFd::from_raw_fd(ends[1])) };
    drop(read);
    let status = Command::new(BIN)
        .arg("--man")
        .stdin(Stdio::null())
        .stdout(Stdio::from(write.try_clone().unwrap()))
        .stderr(Stdio::from(write))
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(1), "{status}");
}

/// Runs the README's one command for a fresh machine (`./setup.sh`) with every program it calls
/// replaced by a stub that logs its arguments; `present` are the stubs on PATH (besides
/// `cargo`, `terminalfs` and `apt-get`), `uid` what `id -u` prints. Returns the exit
/// status, the calls made in order, and stderr.
fn run_fresh_machine_command(present: &[&str], uid: u32) -> (bool, Vec<String>, String) {
    use std::os::unix::fs::PermissionsExt;
    let blocks = readme_blocks("Run it (fresh Debian, Rust installed)");
    assert_eq!(blocks.len(), 1, "one command: {blocks:?}");
    let dir = tempfile::tempdir().expect("temporary directory");
    let (bin, log, home) = (
        dir.path().join("bin"),
        dir.path().join("calls"),
        dir.path().join("home"),
    );
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let stub = |name: &str, body: &str| {
        let path = bin.join(name);
        let script = format!(
            "#!/bin/sh\necho \"{name} $*\" >> '{}'\n{body}\n",
            log.display()
        );
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    for name in ["cargo", "terminalfs", "apt-get"].iter().chain(present) {
        stub(name, "exit 0");
    }
    // `sudo` runs what it is given; `id` answers for the user asked about.
    if present.contains(&"sudo") {
        stub("sudo", "exec \"$@\"");
    }
    std::fs::write(
        bin.join("id"),
        format!("#!/bin/sh\n[ \"$1\" = -u ] && echo {uid}\n"),
    )
    .unwrap();
    std::fs::set_permissions(bin.join("id"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = Command::new("/bin/bash")
        .args(["-c", &blocks[0]])
        .env_clear()
        .env("PATH", &bin)
        .env("HOME", &home)
        .stdin(Stdio::null())
        .output()
        .expect("bash runs");
    let calls = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect();
    (
        out.status.success(),
        calls,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_fresh_machine_command_installs_what_is_missing_then_builds_and_mounts() {
    // Everything there: build, write the default deny list, mount.
    let (ok, calls, _) = run_fresh_machine_command(&["fusermount3", "cc"], 1000);
    assert!(ok);
    assert_eq!(
        calls,
        [
            "cargo install --locked --path .",
            "terminalfs --init-settings",
            "terminalfs "
        ]
    );

    // FUSE and the linker missing, as root: both installed first.
    let (ok, calls, _) = run_fresh_machine_command(&[], 0);
    assert!(ok);
    assert_eq!(
        calls[..2],
        ["apt-get update", "apt-get install -y fuse3 gcc libc6-dev"]
    );
    assert_eq!(calls[2], "cargo install --locked --path .");

    // Only the linker missing, as a user with sudo.
    let (ok, calls, _) = run_fresh_machine_command(&["fusermount3", "sudo"], 1000);
    assert!(ok);
    assert_eq!(
        calls[..4],
        [
            "sudo apt-get update",
            "apt-get update",
            "sudo apt-get install -y gcc libc6-dev",
            "apt-get install -y gcc libc6-dev"
        ]
    );

    // A user without sudo is told what to install, and nothing is built.
    let (ok, calls, stderr) = run_fresh_machine_command(&[], 1000);
    assert!(!ok);
    assert!(calls.is_empty(), "{calls:?}");
    assert!(
        stderr.contains("as root: apt-get install fuse3 gcc libc6-dev"),
        "{stderr}"
    );
}

/// The packaged binary carries no debug information (it was most of a 33 MB package),
/// and the RPM build, which would look for some to package apart, is told so.
#[test]
fn the_release_binary_is_stripped_of_debug_information() {
    let cargo = read_repo_file("Cargo.toml");
    let release: Vec<&str> = cargo
        .lines()
        .skip_while(|line| line.trim() != "[profile.release]")
        .skip(1)
        .take_while(|line| !line.starts_with('['))
        .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
        .collect();
    assert_eq!(release, ["strip = \"debuginfo\""], "{cargo}");
    let spec = read_repo_file("packaging/rpm/terminalfs.spec");
    assert!(
        spec.lines()
            .any(|line| line == "%global debug_package %{nil}"),
        "{spec}"
    );
}
