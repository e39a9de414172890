//! A single-node Slurm cluster on this machine for the tests of `srun` hosts: a private
//! `munged` (its own socket), `slurmctld` and `slurmd` with every file in a temporary
//! directory and every address 127.0.0.1. The guard stops them (and any step daemon
//! left) when dropped. Clients find it through `SLURM_CONF`.

use super::sshd::descendants;
use super::wait_until;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

pub struct Slurm {
    pub dir: tempfile::TempDir,
    /// The `slurm.conf` every client is pointed at (`SLURM_CONF`).
    pub conf: PathBuf,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port on loopback")
        .port()
}

fn pid_in(file: &Path) -> Option<i32> {
    std::fs::read_to_string(file).ok()?.trim().parse().ok()
}

fn short_hostname() -> String {
    let out = Command::new("hostname")
        .arg("-s")
        .output()
        .expect("hostname runs");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

impl Slurm {
    /// Starts the cluster and waits until its node is idle; panics with a sentence when
    /// it cannot.
    pub fn start() -> Slurm {
        for program in [
            "/usr/sbin/munged",
            "/usr/sbin/slurmctld",
            "/usr/sbin/slurmd",
        ] {
            assert!(
                Path::new(program).exists(),
                "the Slurm tests need {program} (apt-get install -y slurm-wlm munge)"
            );
        }
        let dir = tempfile::Builder::new()
            .prefix("tfs-slurm-")
            .tempdir()
            .unwrap();
        let root = dir.path();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o755)).unwrap();
        // munged runs as munge and wants its socket's directory searchable by all.
        let munge = root.join("munge");
        std::fs::create_dir(&munge).unwrap();
        let chown = Command::new("chown")
            .arg("munge:munge")
            .arg(&munge)
            .status()
            .unwrap();
        assert!(
            chown.success(),
            "cannot give {} to the munge user",
            munge.display()
        );
        std::fs::set_permissions(&munge, std::fs::Permissions::from_mode(0o711)).unwrap();
        let socket = munge.join("sock");
        let started = Command::new("runuser")
            .args(["-u", "munge", "--", "/usr/sbin/munged"])
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--pid-file={}", munge.join("pid").display()))
            .arg(format!("--log-file={}", munge.join("log").display()))
            .arg(format!("--seed-file={}", munge.join("seed").display()))
            .status()
            .unwrap();
        assert!(started.success(), "munged did not start");
        let host = short_hostname();
        let conf = root.join("slurm.conf");
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        std::fs::create_dir(root.join("spool")).unwrap();
        std::fs::create_dir(root.join("state")).unwrap();
        std::fs::write(
            &conf,
            format!(
                "ClusterName=tfs\nSlurmctldHost={host}(127.0.0.1)\nAuthType=auth/munge\n\
                 AuthInfo=socket={sock}\nCredType=cred/munge\nProctrackType=proctrack/linuxproc\n\
                 TaskPlugin=task/none\nSelectType=select/cons_tres\nSlurmUser=root\n\
                 ReturnToService=2\nSlurmctldPort={ctld}\nSlurmdPort={d}\n\
                 SlurmctldPidFile={r}/slurmctld.pid\nSlurmdPidFile={r}/slurmd.pid\n\
                 SlurmdSpoolDir={r}/spool\nStateSaveLocation={r}/state\n\
                 SlurmctldLogFile={r}/slurmctld.log\nSlurmdLogFile={r}/slurmd.log\n\
                 NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=512 State=UNKNOWN\n\
                 PartitionName=debug Nodes={host} Default=YES State=UP\n",
                sock = socket.display(),
                ctld = free_port(),
                d = free_port(),
                r = root.display(),
            ),
        )
        .unwrap();
        let slurm = Slurm { dir, conf };
        for daemon in ["/usr/sbin/slurmctld", "/usr/sbin/slurmd"] {
            let status = Command::new(daemon)
                .arg("-f")
                .arg(&slurm.conf)
                .env("SLURM_CONF", &slurm.conf)
                .status()
                .unwrap();
            assert!(status.success(), "{daemon} did not start");
        }
        let idle = wait_until(Duration::from_secs(60), || {
            Command::new("sinfo")
                .args(["--noheader", "-o", "%t"])
                .env("SLURM_CONF", &slurm.conf)
                .output()
                .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains("idle"))
        });
        assert!(idle, "the Slurm node was not idle within a minute");
        slurm
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        let root = self.dir.path();
        for file in ["slurmd.pid", "slurmctld.pid", "munge/pid"] {
            if let Some(pid) = pid_in(&root.join(file)) {
                let below = descendants(pid);
                // SAFETY: signals to a daemon this guard started and what it forked.
                unsafe {
                    libc::kill(pid, libc::SIGTERM);
                }
                let gone = wait_until(Duration::from_secs(5), || {
                    // SAFETY: kill with 0 only asks whether the process exists.
                    unsafe { libc::kill(pid, 0) != 0 }
                });
                for left in below.into_iter().chain((!gone).then_some(pid)) {
                    // SAFETY: as above.
                    unsafe {
                        libc::kill(left, libc::SIGKILL);
                    }
                }
            }
        }
    }
}
