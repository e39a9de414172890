//! The sandbox on a real mount (as root, which must gain nothing inside): what a
//! sandboxed command may write, read and reach, whatever program makes the attempt, and
//! the ways out the settings grant.

use std::io::{Read, Write};
use std::net::{TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common::{run_binary, wait_until, Mount, Options};

/// A directory outside the mount's working directory, which no sandboxed command may
/// write.
fn outside() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("tfs-outside-")
        .tempdir()
        .expect("a temporary directory")
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn result(mount: &Mount, name: &str) -> serde_json::Value {
    serde_json::from_str(&mount.read(&format!("cmd/{name}/result.json"))).expect("JSON")
}

/// The mount's working directory (the tests' `--cwd`).
fn cwd(mount: &Mount) -> PathBuf {
    mount.dir.path().to_path_buf()
}

#[test]
fn writes_land_only_in_the_working_directory_tmpdir_and_allow_write() {
    let out = outside();
    let extra = outside();
    let settings = format!(
        r#"{{"sandbox": {{"enabled": true, "filesystem": {{"allowWrite": ["/{}"]}}}}}}"#,
        extra.path().display()
    );
    let mount = Mount::with(Options {
        settings: &settings,
        ..Options::default()
    });
    let o = out.path().display();
    let script = format!(
        "echo s > {o}/shell\n\
         python3 -c 'open(\"{o}/python\", \"w\").write(\"x\")'\n\
         perl -e 'open(F, \">\", \"{o}/perl\") or exit 3; print F \"x\"'\n\
         setsid sh -c 'echo d > {o}/daemon; echo tried > daemon-tried' </dev/null >/dev/null 2>&1 &\n\
         echo here > inside\n\
         t=$(mktemp) && echo tmp > \"$t\" && echo \"tmp-ok $TMPDIR\"\n\
         echo a > {e}/allowed && echo allow-ok\n\
         echo to-stderr > /dev/stderr\n\
         id -u\n",
        e = extra.path().display()
    );
    mount.run("w", &script);
    let stdout = mount.read("cmd/w/stdout");
    assert!(stdout.contains("allow-ok"), "{stdout}");
    assert!(
        stdout.contains("0\n"),
        "root inside is still uid 0: {stdout}"
    );
    assert_eq!(mount.read("cmd/w/stderr").matches("to-stderr").count(), 1);
    let tried = cwd(&mount).join("daemon-tried");
    assert!(
        wait_until(Duration::from_secs(30), || tried.exists()),
        "the setsid'd daemon never ran"
    );
    assert!(entries(out.path()).is_empty(), "{:?}", entries(out.path()));
    assert_eq!(
        std::fs::read_to_string(cwd(&mount).join("inside")).unwrap(),
        "here\n"
    );
    assert_eq!(entries(extra.path()), ["allowed"]);
    // The TMPDIR outlives the command's exit and goes with the command.
    let tmpdir = stdout
        .lines()
        .find_map(|line| line.strip_prefix("tmp-ok "))
        .expect("a TMPDIR line")
        .to_owned();
    assert!(Path::new(&tmpdir).is_dir(), "{tmpdir} went at the exit");
    let sandbox = &result(&mount, "w")["sandbox"];
    assert_eq!(sandbox["mode"], "on", "{sandbox}");
    assert_eq!(sandbox["network"], "none");
    assert_eq!(sandbox["tmpdir"], tmpdir.as_str());
    mount.ok("rm -r \"$M/cmd/w\"");
    assert!(
        wait_until(Duration::from_secs(30), || !Path::new(&tmpdir).exists()),
        "{tmpdir} outlived its command"
    );
}

/// A protected path's parent cannot be renamed away and made again without it.
#[test]
fn the_directories_above_a_protected_path_cannot_be_renamed_away() {
    let mount = Mount::with(Options {
        settings: r#"{"sandbox": {"enabled": true}}"#,
        ..Options::default()
    });
    let dir = cwd(&mount);
    std::fs::create_dir_all(dir.join(".git/hooks")).unwrap();
    std::fs::write(dir.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    mount.run(
        "swap",
        "mv .git .g; mkdir -p .git/hooks; echo x > .git/hooks/pre-commit; echo tried\n",
    );
    assert!(mount.read("cmd/swap/stdout").contains("tried"));
    assert!(!dir.join(".g").exists(), "the .git directory was renamed");
    assert!(!dir.join(".git/hooks/pre-commit").exists());
    assert_eq!(
        std::fs::read_to_string(dir.join(".git/HEAD")).unwrap(),
        "ref: refs/heads/main\n"
    );
}

#[test]
fn deny_write_and_the_never_writable_paths_hold_inside_the_working_directory() {
    let mount = Mount::with(Options {
        settings: r#"{"sandbox": {"enabled": true,
                      "filesystem": {"denyWrite": ["./keep", "./not-there"]}}}"#,
        ..Options::default()
    });
    let dir = cwd(&mount);
    std::fs::create_dir_all(dir.join(".git/hooks")).unwrap();
    std::fs::create_dir_all(dir.join("keep")).unwrap();
    std::fs::write(dir.join("keep/old"), "old\n").unwrap();
    let settings_before = std::fs::read(&mount.settings).unwrap();
    let audit = mount.state.join("terminalfs/audit.jsonl");
    assert!(audit.exists(), "the audit log is where the test looks");
    mount.run(
        "d",
        "echo x > .git/hooks/pre-commit\n\
         echo x > keep/new\n\
         echo x >> keep/old\n\
         rm -f keep/old\n\
         mv keep moved\n\
         echo '{}' > settings.json\n\
         echo 'echo escaped > escaped' > mnt/ctl/evil\n\
         echo x > spool/planted\n\
         echo x >> state/terminalfs/audit.jsonl\n\
         echo x > allowed-here && echo wrote-cwd\n",
    );
    assert!(mount.read("cmd/d/stdout").contains("wrote-cwd"));
    assert!(!dir.join(".git/hooks/pre-commit").exists());
    assert!(!dir.join("keep/new").exists() && !dir.join("moved").exists());
    assert_eq!(
        std::fs::read_to_string(dir.join("keep/old")).unwrap(),
        "old\n"
    );
    assert_eq!(std::fs::read(&mount.settings).unwrap(), settings_before);
    assert!(!mount.p("cmd/evil").exists() && !dir.join("escaped").exists());
    assert!(!dir.join("spool/planted").exists());
    assert!(!std::fs::read_to_string(&audit).unwrap().contains("\nx\n"));
    let sandbox = &result(&mount, "d")["sandbox"];
    let not_in_force = sandbox["not_in_force"].to_string();
    assert!(not_in_force.contains("not-there"), "{sandbox}");
    let index = mount.read("index.md");
    assert!(
        index.contains("NOT in force") && index.contains("not-there"),
        "{index}"
    );
}

#[test]
fn a_deny_read_files_bytes_never_appear_in_any_output() {
    let mount = Mount::with(Options {
        settings: r#"{"sandbox": {"enabled": true,
                      "filesystem": {"denyRead": ["./secret.txt", "./secrets"]}}}"#,
        ..Options::default()
    });
    let dir = cwd(&mount);
    std::fs::write(dir.join("secret.txt"), "TOPSECRET-FILE-4242\n").unwrap();
    std::fs::create_dir_all(dir.join("secrets")).unwrap();
    std::fs::write(dir.join("secrets/key"), "TOPSECRET-DIR-4242\n").unwrap();
    mount.run(
        "r",
        "cat secret.txt; cat secrets/key; base64 secret.txt\n\
         python3 -c 'print(open(\"secret.txt\").read())'\n\
         cp secret.txt copy.txt; cat copy.txt\n\
         perl -ne print secrets/key\n\
         echo done\n",
    );
    assert!(mount.read("cmd/r/stdout").contains("done"));
    for file in ["stdout", "stderr", "output", "result.json"] {
        let text = mount.read(&format!("cmd/r/{file}"));
        assert!(!text.contains("TOPSECRET"), "{file}: {text}");
        assert!(
            !text.contains("VE9QU0VDUkVU"),
            "{file} has the base64: {text}"
        );
    }
    let copy = std::fs::read_to_string(dir.join("copy.txt")).unwrap_or_default();
    assert!(!copy.contains("TOPSECRET"));
}

#[test]
fn no_connection_leaves_a_command_without_allowed_domains() {
    let mount = Mount::with(Options {
        settings: r#"{"sandbox": {"enabled": true}}"#,
        ..Options::default()
    });
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    tcp.set_nonblocking(true).unwrap();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let (tcp_port, udp_port) = (
        tcp.local_addr().unwrap().port(),
        udp.local_addr().unwrap().port(),
    );
    mount.run(
        "n",
        &format!(
            "curl -sS -m 10 http://127.0.0.1:{tcp_port}/ || echo curl-failed\n\
             python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {tcp_port}), 10)' \
               || echo tcp-failed\n\
             python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\
               .sendto(b\"x\", (\"127.0.0.1\", {udp_port}))' || echo udp-failed\n\
             python3 -c 'import socket; socket.socket(socket.AF_UNIX).connect(\"/run/x\")' \
               || echo unix-failed\n\
             {LISTEN} || echo bind-failed\n"
        ),
    );
    let stdout = mount.read("cmd/n/stdout");
    for failed in [
        "curl-failed",
        "tcp-failed",
        "udp-failed",
        "unix-failed",
        "bind-failed",
    ] {
        assert!(stdout.contains(failed), "{failed}: {stdout}");
    }
    assert!(
        tcp.accept().is_err(),
        "a TCP connection reached the test's server"
    );
    let mut buffer = [0u8; 16];
    assert!(
        udp.recv_from(&mut buffer).is_err(),
        "a datagram reached the test"
    );
    let stderr = mount.read("cmd/n/stderr");
    assert!(
        stderr.contains("Permission denied") || stderr.contains("Couldn't connect"),
        "{stderr}"
    );
}

/// A program that listens on a loopback port and says so.
const LISTEN: &str = "python3 -c 'import socket; s = socket.socket(); \
                      s.bind((\"127.0.0.1\", 0)); s.listen(); print(\"listening\")'";

#[test]
fn allow_local_binding_lets_a_command_listen_on_loopback() {
    let mount = Mount::with(Options {
        settings: r#"{"sandbox": {"enabled": true, "network": {"allowLocalBinding": true}}}"#,
        ..Options::default()
    });
    mount.run("l", LISTEN);
    assert_eq!(
        mount.read("cmd/l/stdout"),
        "listening\n",
        "{}",
        mount.read("cmd/l/stderr")
    );
    assert_eq!(result(&mount, "l")["sandbox"]["local_binding"], true);
}

/// A one-line HTTP server on loopback, counting the connections it takes; stops when
/// dropped.
struct Server {
    port: u16,
    taken: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl Server {
    fn start(body: &'static str) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let taken = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (count, stopping) = (taken.clone(), stop.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().take(50) {
                if stopping.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(mut stream) = stream else { continue };
                count.fetch_add(1, Ordering::SeqCst);
                stream
                    .set_read_timeout(Some(Duration::from_secs(10)))
                    .unwrap();
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).is_ok_and(|n| n == 1) {
                    head.push(byte[0]);
                }
                let _ = write!(
                    stream,
                    "HTTP/1.0 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        Server { port, taken, stop }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = std::net::TcpStream::connect(("127.0.0.1", self.port));
    }
}

#[test]
fn allowed_domains_go_through_the_proxy_and_nothing_else_does() {
    let mount = Mount::with(Options {
        settings: r#"{"sandbox": {"enabled": true,
                      "network": {"allowedDomains": ["localhost"]}}}"#,
        ..Options::default()
    });
    let server = Server::start("hello-through-the-proxy");
    let port = server.port;
    mount.run(
        "p",
        &format!(
            "curl -sS -m 20 http://localhost:{port}/; echo\n\
             curl -sS -m 20 http://127.0.0.1:{port}/; echo\n\
             curl -sS -m 20 --noproxy '*' http://localhost:{port}/ || echo direct-failed\n\
             curl -sS -m 20 https://example.invalid/ || echo https-refused\n"
        ),
    );
    let stdout = mount.read("cmd/p/stdout");
    assert!(stdout.contains("hello-through-the-proxy"), "{stdout}");
    assert!(
        stdout.contains("refused 127.0.0.1:"),
        "a literal IP is refused: {stdout}"
    );
    assert!(
        stdout.contains("direct-failed") && stdout.contains("https-refused"),
        "{stdout}"
    );
    assert_eq!(
        server.taken.load(Ordering::SeqCst),
        1,
        "only the proxied fetch arrived"
    );
    let sandbox = &result(&mount, "p")["sandbox"];
    assert_eq!(sandbox["connections_refused"], 2, "{sandbox}");
    mount.wait_for_log("sandbox: p: refused a connection to 127.0.0.1:");
}

#[test]
fn sandbox_off_needs_the_setting_and_excluded_commands_run_outside() {
    let out = outside();
    let o = out.path().display().to_string();
    let mut mount = Mount::with(Options {
        settings: r#"{"permissions": {"deny": ["Bash(sudo:*)"]},
                      "sandbox": {"enabled": true, "excludedCommands": ["touch"]}}"#,
        ..Options::default()
    });
    let refused = std::fs::write(
        mount.p("ctl/off"),
        format!("#terminalfs sandbox=off\ntouch {o}/off\n"),
    );
    assert_eq!(refused.unwrap_err().raw_os_error(), Some(libc::EPERM));
    let reason = mount.holds("cmd/off/reason", "allowUnsandboxedCommands");
    assert!(reason.contains("sandbox=off"), "{reason}");
    mount.run("ex", &format!("touch {o}/excluded"));
    mount.run("mixed", &format!("touch {o}/mixed; echo hi"));
    assert_eq!(entries(out.path()), ["excluded"]);
    assert_eq!(result(&mount, "ex")["sandbox"]["mode"], "excluded");
    assert_eq!(result(&mount, "mixed")["sandbox"]["mode"], "on");
    // A reload grants sandbox=off to the commands that come after it.
    std::fs::write(
        &mount.settings,
        r#"{"permissions": {"deny": ["Bash(sudo:*)"]},
            "sandbox": {"enabled": true, "allowUnsandboxedCommands": true}}"#,
    )
    .unwrap();
    mount.wait_for_log("settings reloaded");
    mount.run(
        "off2",
        &format!("#terminalfs sandbox=off\ntouch {o}/off2\n"),
    );
    assert_eq!(entries(out.path()), ["excluded", "off2"]);
    assert_eq!(result(&mount, "off2")["sandbox"]["mode"], "off");
    // The deny list still applies outside.
    let refused = std::fs::write(mount.p("ctl/su"), "#terminalfs sandbox=off\nsudo true\n");
    assert_eq!(refused.unwrap_err().raw_os_error(), Some(libc::EPERM));
    mount.holds("cmd/su/reason", "sudo");
    mount.stop();
}

#[test]
fn what_a_program_decides_at_run_time_leaves_no_trace_outside() {
    let out = outside();
    let mount = Mount::with(Options {
        settings: r#"{"sandbox": {"enabled": true}}"#,
        ..Options::default()
    });
    let o = out.path().display();
    mount.run(
        "rt",
        &format!(
            "python3 -c 'import os; os.system(\"echo p > {o}/python\")'\n\
             perl -e 'system(\"echo p > {o}/perl\")'\n\
             awk 'BEGIN{{system(\"echo a > {o}/awk\")}}'\n\
             eval \"$(printf 'echo e > {o}/eval')\"\n\
             x=$(printf touch); $x {o}/variable\n\
             printf 'all:\\n\\ttouch {o}/make\\n' | make -f -\n\
             sh -c 'cd / && exec sh -c \"echo x > {o}/exec\"'\n\
             echo finished\n"
        ),
    );
    assert!(mount.read("cmd/rt/stdout").contains("finished"));
    assert!(entries(out.path()).is_empty(), "{:?}", entries(out.path()));
}

#[test]
fn check_prints_the_sandbox_and_bad_sections_are_refused_at_load() {
    let dir = outside();
    let settings = dir.path().join("settings.json");
    std::fs::write(
        &settings,
        r#"{"sandbox": {"enabled": true, "allowUnsandboxedCommands": false}}"#,
    )
    .unwrap();
    let out = run_binary(&[
        &"check",
        &"--settings",
        &settings,
        &"--cwd",
        &dir.path(),
        &"make",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("sandbox for this text: inside"), "{text}");
    assert!(text.contains("sandbox writable:"), "{text}");
    let out = run_binary(&[
        &"check",
        &"--settings",
        &settings,
        &"#terminalfs sandbox=off\nmake",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("allowUnsandboxedCommands"));
    for (bad, says) in [
        (
            r#"{"sandbox": {"network": {"allowedDomains": ["*.*"]}}}"#,
            "malformed",
        ),
        (
            r#"{"sandbox": {"network": {"deniedDomains": ["x.org"]}}}"#,
            "deniedDomains",
        ),
        (r#"{"sandbox": {"enabled": "yes"}}"#, "sandbox.enabled"),
    ] {
        std::fs::write(&settings, bad).unwrap();
        let out = run_binary(&[&"check", &"--settings", &settings, &"true"]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{bad}: {stderr}");
    }
}
