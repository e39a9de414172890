//! A throwaway OpenSSH server on 127.0.0.1 for the tests of remote hosts: its own host
//! key, user key and home directory in a temporary directory, on a free port, no
//! password logins. The guard stops it (and every session process it forked) when
//! dropped.

use super::{all_processes, wait_until};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub struct Sshd {
    pub dir: tempfile::TempDir,
    pub port: u16,
    /// The user key the server accepts.
    pub key: PathBuf,
    child: Option<Child>,
}

fn keygen(path: &std::path::Path) {
    let out = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .output()
        .expect("ssh-keygen runs (apt-get install openssh-client)");
    assert!(out.status.success(), "ssh-keygen: {out:?}");
}

/// Every process below `pid`, deepest last.
pub fn descendants(pid: i32) -> Vec<i32> {
    let all = all_processes();
    let mut found = vec![pid];
    let mut at = 0;
    while at < found.len() {
        let parent = found[at];
        found.extend(
            all.iter()
                .filter(|(_, s)| s.ppid == parent)
                .map(|(p, _)| *p),
        );
        at += 1;
    }
    found.remove(0);
    found
}

impl Sshd {
    /// Starts the server; panics with a sentence when it cannot.
    pub fn start() -> Sshd {
        assert!(
            std::path::Path::new("/usr/sbin/sshd").exists(),
            "the remote-host tests need Debian's openssh-server (apt-get install -y openssh-server)"
        );
        let dir = tempfile::Builder::new()
            .prefix("tfs-sshd-")
            .tempdir()
            .unwrap();
        let key = dir.path().join("id");
        keygen(&key);
        keygen(&dir.path().join("host_key"));
        std::fs::copy(
            dir.path().join("id.pub"),
            dir.path().join("authorized_keys"),
        )
        .unwrap();
        // Sessions get a home of their own: the login user's shell startup files (a
        // `.bashrc` that takes locks, prints or waits) stay out of the tests.
        std::fs::create_dir(dir.path().join("home")).unwrap();
        // Privilege separation wants this directory.
        let _ = std::fs::create_dir_all("/run/sshd");
        for _ in 0..20 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|listener| listener.local_addr())
                .expect("a free port on loopback")
                .port();
            let config = dir.path().join("sshd_config");
            std::fs::write(
                &config,
                format!(
                    "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\n\
                     AuthorizedKeysFile {d}/authorized_keys\nPidFile {d}/sshd.pid\nUsePAM no\n\
                     StrictModes no\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n\
                     KbdInteractiveAuthentication no\nMaxSessions 100\nMaxStartups 100:30:200\n\
                     LogLevel ERROR\nSubsystem sftp internal-sftp\nSetEnv HOME={d}/home\n",
                    d = dir.path().display()
                ),
            )
            .unwrap();
            let mut child = Command::new("/usr/sbin/sshd")
                .args(["-D", "-e", "-f"])
                .arg(&config)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("sshd starts");
            let up = wait_until(Duration::from_secs(20), || {
                std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
                    || child.try_wait().ok().flatten().is_some()
            });
            if up && child.try_wait().ok().flatten().is_none() {
                return Sshd {
                    dir,
                    port,
                    key,
                    child: Some(child),
                };
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("sshd did not start on any free port of 127.0.0.1");
    }

    /// The user the tests log in as: whoever runs them.
    pub fn user() -> String {
        std::env::var("USER")
            .ok()
            .filter(|u| !u.is_empty())
            .unwrap_or_else(|| {
                String::from_utf8_lossy(&Command::new("id").arg("-un").output().unwrap().stdout)
                    .trim()
                    .to_string()
            })
    }

    /// ssh options that reach this server with the test key.
    pub fn options(&self) -> Vec<String> {
        [
            "-p",
            &self.port.to_string(),
            "-i",
            &self.key.display().to_string(),
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
            "-o",
            "LogLevel=ERROR",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }

    /// A `hosts` entry for this server, as JSON.
    pub fn entry(&self) -> serde_json::Value {
        serde_json::json!({"ssh": format!("{}@127.0.0.1", Sshd::user()), "options": self.options()})
    }

    /// Kills the server and every session process it forked: every connection drops.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let below = descendants(child.id() as i32);
            let _ = child.kill();
            let _ = child.wait();
            for pid in below {
                // SAFETY: a signal to a process this server forked.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.kill();
    }
}
