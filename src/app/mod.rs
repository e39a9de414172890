//! Wiring and lifetime: loads the settings, locks the state directory, prepares the
//! mount point (cleaning a stale mount), starts the supervisor, the tree and the FUSE
//! session, reports readiness, waits for SIGINT/SIGTERM, then shuts down in order: stop
//! every command, answer every parked read, unmount.

mod daemon;
mod error;
mod mount_point;
mod restore;
mod signals;
mod unmount;

pub use error::AppError;
pub use unmount::{clean_up, Unmounted, NOTHING_MOUNTED};

use crate::config::Config;
use crate::fs::{Clock, Hooks, Tree, TreeConfig};
use crate::fuse;
use crate::policy::audit::Audit;
use crate::policy::Policy;
use crate::spool::{Spool, SpoolConfig};
use crate::supervisor::{Supervisor, SupervisorConfig};
use daemon::{daemonize, sd_notify, PidFile};
use mount_point::{detached, prepare_mount_point, refuse_live_mount};
use restore::comeback;
use signals::{block_signals, wait_signal, Stop};
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};
use unmount::detach;

use crate::log::info as log;

pub fn run(config: Config) -> Result<(), AppError> {
    if !config.settings.exists() {
        return Err(AppError::NoSettings {
            path: config.settings.clone(),
        });
    }
    let policy = Arc::new(
        Policy::load(&config.settings, config.allowlist)
            .map_err(AppError::Settings)?
            .with_start_dir(&config.cwd, Some(&crate::policy::home_dir()))
            .with_sandbox(crate::sandbox::Context {
                forced: config.sandbox,
                protected: [&config.state_dir, &config.audit_log]
                    .into_iter()
                    .chain(config.log_file.as_ref())
                    .cloned()
                    .collect(),
                mount: Some(config.path.clone()),
                home: crate::policy::home_dir(),
                ..Default::default()
            })
            .with_default_host(config.host.clone()),
    );
    if let Some(name) = &config.host {
        policy
            .rules()
            .hosts
            .choose(Some(name), false)
            .map_err(|why| {
                AppError::Hosts(format!(
                    "--host {name}: {}",
                    why.trim_start_matches("refused: ")
                ))
            })?;
    }
    if !config.cwd.is_dir() {
        return Err(AppError::CwdNotADirectory {
            path: config.cwd.clone(),
        });
    }
    crate::log::set_verbose(config.verbose);
    let (mut ready_pipe, pid_file) = match daemonize(&config)? {
        Some(detached) => (Some(detached.ready), detached.pid_file),
        None => (None, None),
    };
    crate::panics::install();
    let result = serve(&config, policy, &mut ready_pipe, pid_file);
    // The commands' TMPDIRs go with the mount.
    crate::sandbox::remove_temp_dirs();
    if let (Err(message), Some(pipe)) = (&result, ready_pipe.as_mut()) {
        let _ = writeln!(pipe, "{message}");
    }
    result
}

fn serve(
    config: &Config,
    policy: Arc<Policy>,
    ready_pipe: &mut Option<std::fs::File>,
    pid_file: Option<PidFile>,
) -> Result<(), AppError> {
    let signals = block_signals();
    // In this order: a second driver on a live mount or on a state directory in use
    // is refused before it writes anything, and nothing of the state directory is
    // read or written before its lock is held (until this function returns).
    refuse_live_mount(&config.path)?;
    let _state_lock = crate::spool::prepare_dir(&config.state_dir).map_err(AppError::StateDir)?;
    // Dropped (the file removed) before the state directory's lock: `--unmount` waits
    // for that lock, and returns only once the pid file is gone.
    let _pid_file = pid_file;
    let hosts_policy = policy.clone();
    crate::hosts::driver::start(
        &config.state_dir,
        Box::new(move || hosts_policy.rules().hosts.clone()),
    )
    .map_err(AppError::Hosts)?;
    prepare_mount_point(&config.path)?;
    // Where the kernel will list the mount (a symbolic link resolved), found before it
    // is mounted: afterwards a look at the path would be a request to this very driver.
    let mount_point = std::fs::canonicalize(&config.path).unwrap_or_else(|_| config.path.clone());
    let audit = Audit::open(&config.audit_log).map_err(AppError::Audit)?;
    let spool = Spool::open(
        SpoolConfig {
            dir: config.state_dir.clone(),
            max_output: config.max_output,
            max_spool: config.max_spool,
        },
        log,
    )
    .map_err(|error| AppError::Start {
        what: "the spool",
        error,
    })?;
    let (wakes, receiver) = fuse::Wakes::new();
    let notify_wakes = wakes.clone();
    let supervisor = Arc::new(
        Supervisor::start(
            SupervisorConfig {
                shell: config.shell.clone(),
                cwd: config.cwd.clone(),
                kill_grace: config.kill_grace,
                cgroup_tag: Some(crate::supervisor::cgroup::tag_for(&config.path)),
                // A small process forks commands (see `supervisor::spawner`); elsewhere
                // than Linux the driver does.
                spawner: if cfg!(target_os = "linux") {
                    std::env::current_exe().ok()
                } else {
                    None
                },
            },
            spool.clone(),
            Arc::new(move |id, news| notify_wakes.job(id, news)),
        )
        .map_err(|error| AppError::Start {
            what: "the supervisor",
            error,
        })?,
    );
    log(&format!(
        "containment: {}; commands are forked by {}",
        supervisor.containment(),
        supervisor.spawning()
    ));
    if supervisor.reaped_at_start() > 0 {
        log(&format!(
            "reaped {} process(es) that an earlier driver at {} left running",
            supervisor.reaped_at_start(),
            config.path.display()
        ));
    }
    // SAFETY: getuid/getgid have no preconditions.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let tree = Arc::new(Tree::new(
        TreeConfig {
            mount: Some(config.path.clone()),
            settle: config.settle,
            keep: config.keep,
            wait_timeout: config.wait_timeout,
            timeout: config.timeout,
            uid,
            gid,
        },
        supervisor.clone(),
        policy.clone(),
        Some(audit),
    ));
    tree.set_spool(spool.clone());
    let started = Instant::now();
    let comebacks = spool
        .restore()
        .into_iter()
        .filter_map(|found| {
            let shown = found.store.dir().display().to_string();
            comeback(&supervisor, found)
                .map_err(|why| log(&format!("skipped {shown} at start: {why}")))
                .ok()
        })
        .collect();
    let restored = tree.restore(comebacks, &log);
    if restored > 0 {
        log(&format!(
            "restored {restored} command(s) from {} in {} ms",
            config.state_dir.display(),
            started.elapsed().as_millis()
        ));
    }
    let mut clock = Clock::start(tree.clone()).map_err(|error| AppError::Start {
        what: "the tree's clock",
        error,
    })?;
    let changed = wakes.clone();
    tree.set_hooks(Hooks {
        changed: Box::new(move || changed.released()),
        start_wanted: clock.starter(),
    });
    let parts = fuse::build(tree.clone(), wakes, receiver);
    let mut waker = parts.waker;
    let reloader = policy.spawn_reloader(Duration::from_millis(500), log);

    let mut fuse_config = fuser::Config::default();
    fuse_config.mount_options = vec![
        fuser::MountOption::FSName("terminalfs".into()),
        fuser::MountOption::Subtype("terminalfs".into()),
        fuser::MountOption::NoSuid,
        fuser::MountOption::NoDev,
    ];
    if cfg!(target_os = "linux") {
        fuse_config.n_threads = Some(2);
    }
    let mut session =
        fuser::Session::new(parts.driver, &config.path, &fuse_config).map_err(|error| {
            AppError::Mount {
                path: config.path.clone(),
                error,
            }
        })?;
    let mut unmounter = session.unmount_callable();
    let session_thread = std::thread::Builder::new()
        .name("tfs-session".into())
        .spawn(move || session.run())
        .map_err(|error| AppError::Start {
            what: "the session thread",
            error,
        })?;
    // Commands' stderr becomes a file of this mount from now on (see
    // `supervisor::capture`); macFUSE is untried for it, so stderr stays a pipe there.
    if cfg!(target_os = "linux") {
        supervisor.capture_stderr_in(config.path.clone());
    }

    log(&format!(
        "ready: mounted at {} (settings {}, {} rule(s), shell {}, cwd {})",
        config.path.display(),
        policy.path().display(),
        policy.rule_count(),
        config.shell.display(),
        config.cwd.display()
    ));
    for warning in policy.warnings() {
        log(&format!("warning: {warning}"));
    }
    sd_notify("READY=1");
    if let Some(mut pipe) = ready_pipe.take() {
        let _ = pipe.write_all(b"ready\n");
    }

    let mut listed = false;
    let cause = loop {
        if session_thread.is_finished() {
            break Stop::SessionEnded;
        }
        // A lazy unmount (`--unmount`, `umount -l`) takes the tree out of the namespace
        // while a command's stderr file keeps the connection open: that is a stop too.
        if detached(&config.path, &mount_point, &mut listed) {
            break Stop::Detached;
        }
        if let Some(why) = crate::panics::fatal() {
            break Stop::Panic(why);
        }
        if let Some(signal) = wait_signal(&signals, Duration::from_millis(200)) {
            break Stop::Signal(signal);
        }
    };
    if let Stop::Panic(_) = cause {
        // Stopping in order after a panic may meet what the panic left undone (a
        // thread that will never report): past the time an orderly stop takes, the
        // mount is detached and the driver exits all the same, never left wedged.
        let limit = config.kill_grace + Duration::from_secs(10);
        let path = config.path.clone();
        let _ = std::thread::Builder::new()
            .name("tfs-last-resort".into())
            .spawn(move || {
                std::thread::sleep(limit);
                log(&format!(
                    "the driver did not stop in order within {} s after a panic; it \
                     detaches its mount and exits now",
                    limit.as_secs()
                ));
                let _ = detach(&path);
                // SAFETY: _exit ends the process at once; nothing here is left to run.
                unsafe { libc::_exit(PANIC_EXIT) };
            });
    }
    // Closing first: a start racing this (a settle time running out, a lookup) either
    // is counted here or does not happen.
    let running = supervisor.close();
    log(&format!(
        "stopping ({cause}): stopping {running} running command(s)"
    ));
    sd_notify("STOPPING=1");
    supervisor.shutdown();
    crate::hosts::driver::stop();
    clock.stop();
    waker.shutdown();
    policy.stop();
    let _ = reloader.join();
    // A detached mount has nothing left to unmount: trying only logs a refusal.
    if cause != Stop::Detached && !session_thread.is_finished() {
        if let Err(e) = unmounter.unmount() {
            log(&format!("unmount was refused ({e}); detaching lazily"));
            if let Err(e) = detach(&config.path) {
                log(&e.to_string());
            }
        }
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    while !session_thread.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    if session_thread.is_finished() {
        if let Ok(Err(e)) = session_thread.join() {
            log(&format!("the FUSE session ended with an error: {e}"));
        }
    }
    spool.save_last_reads();
    spool.sync();
    log("stopped");
    match cause {
        Stop::Panic(why) => Err(AppError::Panicked(why)),
        _ => Ok(()),
    }
}

/// The exit status of a driver that a panic stopped without an orderly stop.
const PANIC_EXIT: i32 = 70;

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn a_refused_mount_says_what_to_check() {
        let path = Path::new("/home/u/mnt");
        let denied = std::io::Error::from_raw_os_error(libc::EACCES);
        let mounting = |error| {
            AppError::Mount {
                path: path.to_path_buf(),
                error,
            }
            .to_string()
        };
        let said = mounting(denied);
        assert!(
            said.starts_with("cannot mount at /home/u/mnt: Permission denied"),
            "{said}"
        );
        assert!(
            said.contains("/dev/fuse") && said.contains("fuse3"),
            "{said}"
        );
        let busy = std::io::Error::from_raw_os_error(libc::EBUSY);
        assert!(!mounting(busy).contains("/dev/fuse"));
    }
}
