//! Supervision (SPEC 5–7): containment in a cgroup per command, stopping everything a
//! command started (kill, rm -r, time limits, driver shutdown and driver crash; a driver
//! still stopping leaves the next one on its path alone), limits set by flags and by
//! `#terminalfs` directives, when a command counts as stopped, and faults: many
//! children, closed pipes, a flood of output, a missing shell or cwd, and a thousand
//! commands that must leave no zombie, descriptor or thread behind.
//!
//! Processes that a command makes escape on purpose (`setsid`) are recorded in a
//! [`Reaper`], so a failing test still leaves nothing running.

use crate::common::{
    children_of, fd_count, group_members, is_mounted, mount_with_a_vanished_shell, proc_stat,
    process_alive, run_binary, succeeded, thread_count, until_exists, wait_until, Mount, Options,
    Reaper, BIN,
};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// A command whose shell and a `setsid` descendant (which left the shell's session and
/// process group) both run for five minutes; its first stdout line is the descendant.
const ESCAPER: &str = "setsid sleep 300 & echo $!; sleep 300";

fn result(mount: &Mount, name: &str) -> serde_json::Value {
    let text = mount.read(&format!("cmd/{name}/result.json"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("result.json of {name}: {e}\n{text}"))
}

/// The pid a command prints on its first stdout line (waits for the line).
fn printed_pid(mount: &Mount, name: &str) -> i32 {
    let mut line = None;
    let printed = wait_until(Duration::from_secs(10), || {
        let stdout = mount.read(&format!("cmd/{name}/stdout"));
        line = stdout
            .split_once('\n')
            .and_then(|(first, _)| first.trim().parse::<i32>().ok());
        line.is_some()
    });
    assert!(
        printed,
        "{name} printed no pid: {:?}",
        mount.read(&format!("cmd/{name}/output"))
    );
    line.unwrap()
}

/// The pid of the `setsid sleep` an [`ESCAPER`] printed, once it has left the shell's
/// session (`$!` is printed before `setsid` has run).
fn escaped_pid(mount: &Mount, name: &str, shell: i32) -> i32 {
    let pid = printed_pid(mount, name);
    let escaped = wait_until(Duration::from_secs(10), || {
        proc_stat(pid).is_some_and(|stat| stat.session == pid && stat.session != shell)
            && std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c == "sleep\n")
    });
    assert!(
        escaped,
        "{pid} never became a session leader: {:?}",
        proc_stat(pid)
    );
    pid
}

/// The shell's pid of a running command.
fn shell_pid(mount: &Mount, name: &str) -> i32 {
    let text = mount.read(&format!("cmd/{name}/pid"));
    text.trim()
        .parse()
        .unwrap_or_else(|e| panic!("cmd/{name}/pid is {text:?}: {e}"))
}

/// Waits until `pid` is gone (a zombie counts as gone).
fn gone_within(pid: i32, timeout: Duration) -> bool {
    wait_until(timeout, || !process_alive(pid))
}

/// Where cgroup2 is mounted, from /proc/self/mountinfo (no path assumed).
fn cgroup2_mount() -> Option<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let mount_point = left.split_whitespace().nth(4)?;
        (right.split_whitespace().next()? == "cgroup2")
            .then(|| PathBuf::from(mount_point.replace("\\040", " ")))
    })
}

/// The unified-hierarchy cgroup of a process, as `/proc/<pid>/cgroup` names it.
fn unified_cgroup(pid: i32) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    text.lines()
        .find_map(|line| line.strip_prefix("0::"))
        .map(|path| path.trim().to_string())
}

/// The directory below which a driver makes its per-command cgroups, when the driver
/// can make cgroups at all: cgroup2 is mounted and a cgroup can be created below the
/// driver's own (root here; a delegated systemd service elsewhere). None means the
/// process group is all the containment there is.
fn cgroup_parent(driver: i32, mount_path: &Path) -> Option<PathBuf> {
    let root = cgroup2_mount()?;
    let own = unified_cgroup(driver)?;
    let mut base = root.join(own.trim_start_matches('/'));
    // With a memory controller the driver moves itself into a leaf of its own.
    if base.file_name().is_some_and(|n| n == "terminalfs-driver") {
        base.pop();
    }
    // Tests run in parallel: each probe has a name of its own.
    static PROBES: AtomicU32 = AtomicU32::new(0);
    let probe = base.join(format!(
        "tfs-test-probe-{}-{}",
        std::process::id(),
        PROBES.fetch_add(1, Ordering::Relaxed)
    ));
    let usable = std::fs::create_dir(&probe).is_ok() && probe.join("cgroup.procs").exists();
    let _ = std::fs::remove_dir(&probe);
    let tag = terminalfs::cgroup_tag(mount_path);
    usable.then(|| base.join(format!("terminalfs-{tag}")))
}

/// Set to run the suite where cgroup2 cannot be used (no cgroup2 mount, or one that may
/// not be written): the containment tests then check only what process groups give.
const NO_CGROUPS_OPT_OUT: &str = "TERMINALFS_TEST_WITHOUT_CGROUPS";

/// [`cgroup_parent`], where cgroups are required: a machine on which the driver cannot
/// make cgroups would silently skip the checks that kill and rm -r reach descendants
/// that left their process group, so that fails unless the run opts out by name.
fn cgroups_required(driver: i32, mount_path: &Path) -> Option<PathBuf> {
    let parent = cgroup_parent(driver, mount_path);
    assert!(
        parent.is_some() || std::env::var_os(NO_CGROUPS_OPT_OUT).is_some(),
        "the driver cannot make cgroups here, so the containment checks cannot run; \
         set {NO_CGROUPS_OPT_OUT}=1 to run only the process-group checks"
    );
    parent
}

/// The driver's children that are zombies.
fn zombie_children(driver: i32) -> Vec<i32> {
    children_of(driver)
        .into_iter()
        .filter(|(_, state)| *state == 'Z')
        .map(|(pid, _)| pid)
        .collect()
}

// ----- 1. containment --------------------------------------------------------------

/// A command stopped with SIGKILL goes through `cgroup.kill` where there is one; the
/// commands after it run normally, whichever cgroup they get. (On Linux 6.18 a process
/// born into a cgroup that had `cgroup.kill` written is killed at once, so such a
/// cgroup must not be used again.)
#[test]
fn commands_after_one_killed_with_sigkill_run_normally() {
    let mount = Mount::start();
    std::fs::write(mount.p("ctl/victim"), "sleep 300").unwrap();
    std::fs::write(mount.p("cmd/victim/kill"), "KILL").unwrap();
    assert_eq!(mount.wait("victim"), "error\n");
    assert_eq!(result(&mount, "victim")["signal"], 9);
    for i in 0..4 {
        let name = format!("after{i}");
        assert_eq!(
            mount.run(&name, "echo fine"),
            "completed\n",
            "{}",
            result(&mount, &name)
        );
        assert_eq!(mount.read(&format!("cmd/{name}/stdout")), "fine\n");
    }
}

/// A descriptor the driver was started with and that is not close-on-exec (a
/// launcher's pipe, say) is not passed on to commands: a long command holding a
/// launcher's pipe would keep its reader from ever seeing the end.
#[cfg(target_os = "linux")]
#[test]
fn commands_get_no_descriptor_the_driver_was_started_with() {
    use std::os::fd::AsRawFd;

    let null = std::fs::File::open("/dev/null").unwrap();
    // A copy that is not close-on-exec, far above the descriptors the driver sets up
    // for itself and its spawner (the lowest free one from 90 up: never one in use).
    // SAFETY: duplicating a descriptor this test owns.
    let fd = unsafe { libc::fcntl(null.as_raw_fd(), libc::F_DUPFD, 90) };
    assert!(fd >= 90, "a copy of /dev/null");
    let mount = Mount::start();
    // SAFETY: closing the copy this test made; the driver has its own.
    unsafe { libc::close(fd) };
    let driver = mount.pid();
    assert!(
        Path::new(&format!("/proc/{driver}/fd/{fd}")).exists(),
        "the driver has descriptor {fd}, as a launcher would leave it"
    );
    let script =
        format!("if [ -e /proc/$$/fd/{fd} ]; then echo passed on; else echo kept back; fi");
    assert_eq!(mount.run("fds", &script), "completed\n");
    assert_eq!(mount.read("cmd/fds/stdout"), "kept back\n");
}

#[test]
fn each_command_runs_in_a_cgroup_of_its_own() {
    let reaper = Reaper::default();
    let mut mount = Mount::start();
    let driver = mount.pid() as i32;
    std::fs::write(mount.p("ctl/one"), ESCAPER).unwrap();
    std::fs::write(mount.p("ctl/two"), "sleep 300").unwrap();
    let shell = shell_pid(&mount, "one");
    reaper.watch(shell);
    let escaped = escaped_pid(&mount, "one", shell);
    reaper.watch(escaped);
    let other = shell_pid(&mount, "two");
    reaper.watch(other);
    let escaped_stat = proc_stat(escaped).expect("the setsid'd sleep runs");
    assert_ne!(escaped_stat.session, shell, "setsid left the session");
    assert_ne!(escaped_stat.pgrp, shell, "setsid left the process group");

    let containment = result(&mount, "one")["containment"]
        .as_str()
        .expect("result.json names the containment")
        .to_string();
    let Some(parent) = cgroups_required(driver, &mount.path) else {
        // No cgroups here: the process group is the container, and it says so.
        assert_eq!(containment, "process group");
        assert_eq!(proc_stat(shell).unwrap().pgrp, shell);
        assert!(
            mount.log().contains("containment: process groups"),
            "{}",
            mount.log()
        );
        return;
    };
    assert!(
        mount.log().contains(&format!(
            "containment: a cgroup per command below {}",
            parent.display()
        )),
        "{}",
        mount.log()
    );
    // The cgroup directory of a process, from /proc/<pid>/cgroup.
    let root = cgroup2_mount().unwrap();
    let cgroup_of = |pid: i32| unified_cgroup(pid).map(|c| root.join(c.trim_start_matches('/')));
    let cgroup_in = |json: serde_json::Value| {
        let containment = json["containment"].as_str().unwrap_or_default().to_string();
        let dir = containment.strip_prefix("cgroup ").map(PathBuf::from);
        dir.unwrap_or_else(|| panic!("containment is {containment:?}"))
    };
    let dir = cgroup_in(result(&mount, "one"));
    assert_eq!(dir.parent(), Some(parent.as_path()), "{containment}");
    // The shell and the descendant that escaped its process group are both inside.
    assert_eq!(cgroup_of(shell).as_ref(), Some(&dir));
    assert_eq!(cgroup_of(escaped).as_ref(), Some(&dir));
    let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap();
    let procs: Vec<i32> = procs.lines().map(|l| l.parse().unwrap()).collect();
    assert!(
        procs.contains(&shell) && procs.contains(&escaped),
        "{procs:?}"
    );
    // Another command has another cgroup, and the driver stays outside both.
    let two = cgroup_in(result(&mount, "two"));
    assert_ne!(two, dir);
    assert_eq!(two.parent(), Some(parent.as_path()));
    assert_eq!(cgroup_of(other).as_ref(), Some(&two));
    let driver_cgroup = cgroup_of(driver).unwrap();
    assert!(driver_cgroup != dir && driver_cgroup != two);

    // Removing the command stops everything in its cgroup, which is left empty.
    mount.ok("rm -r \"$M/cmd/one\"");
    assert!(
        gone_within(escaped, Duration::from_secs(10)),
        "{:?}",
        proc_stat(escaped)
    );
    assert!(gone_within(shell, Duration::from_secs(10)));
    let empty = |dir: &Path| {
        std::fs::read_to_string(dir.join("cgroup.procs")).map_or(true, |p| p.trim().is_empty())
    };
    assert!(
        wait_until(Duration::from_secs(10), || empty(&dir)),
        "{} still holds processes",
        dir.display()
    );
    // A command that has ended lets go of its cgroup by the time `wait` says so, and
    // the next command is given it (unless the memory controller would carry its peak
    // over: then it is removed and a new one made): a kill written to the one that
    // ended must not reach the one that has its cgroup now.
    let memory = std::fs::read_to_string(parent.join("cgroup.subtree_control"))
        .unwrap_or_default()
        .split_whitespace()
        .any(|controller| controller == "memory");
    assert_eq!(mount.run("three", "true"), "completed\n");
    let three = cgroup_in(result(&mount, "three"));
    std::fs::write(mount.p("ctl/four"), "sleep 300").unwrap();
    let four_shell = shell_pid(&mount, "four");
    reaper.watch(four_shell);
    let four = cgroup_in(result(&mount, "four"));
    if memory {
        assert_ne!(
            four, three,
            "a cgroup with memory accounting is not used again"
        );
        assert!(wait_until(Duration::from_secs(10), || !three.exists()));
    } else {
        assert_eq!(four, three, "the cgroup is used again");
    }
    assert_eq!(cgroup_of(four_shell).as_ref(), Some(&four));
    mount.ok("echo KILL > \"$M/cmd/three/kill\"");
    assert_eq!(mount.read("cmd/four/status"), "running\n");
    assert!(process_alive(four_shell));
    // Empty cgroups kept for later commands stay few.
    let kept = std::fs::read_dir(&parent)
        .unwrap()
        .filter(|entry| entry.as_ref().unwrap().file_type().unwrap().is_dir())
        .count();
    assert!(kept <= 4, "{kept} cgroups below {}", parent.display());
    // Shutdown stops the rest and removes the driver's cgroup directory.
    assert!(parent.is_dir());
    assert!(mount.stop().success());
    assert!(!process_alive(other));
    assert!(!parent.exists(), "{} is left", parent.display());
}

// ----- 2. kill, rm -r, TERM then KILL ----------------------------------------------

#[test]
fn kill_and_rm_r_reach_descendants_that_left_the_group() {
    let reaper = Reaper::default();
    let mount = Mount::with_args(&["--kill-grace", "2s"]);
    let contained = cgroups_required(mount.pid() as i32, &mount.path).is_some();
    std::fs::write(mount.p("ctl/killed"), ESCAPER).unwrap();
    std::fs::write(mount.p("ctl/removed"), ESCAPER).unwrap();
    let mut pids = Vec::new();
    for name in ["killed", "removed"] {
        let shell = shell_pid(&mount, name);
        reaper.watch(shell);
        let escaped = escaped_pid(&mount, name, shell);
        reaper.watch(escaped);
        assert!(process_alive(escaped));
        assert_ne!(proc_stat(escaped).unwrap().pgrp, shell);
        pids.push((shell, escaped));
    }

    mount.ok("echo stop > \"$M/cmd/killed/kill\"");
    assert_eq!(mount.wait("killed"), "error\n");
    assert_eq!(
        mount.read("cmd/killed/exitcode"),
        "143\n",
        "SIGTERM stopped it"
    );
    assert!(mount.read("cmd/killed/reason").contains("kill"));
    assert_eq!(result(&mount, "killed")["killed"], true);
    let (shell, escaped) = pids[0];
    assert!(wait_until(Duration::from_secs(5), || group_members(shell).is_empty()));
    if contained {
        assert!(
            gone_within(escaped, Duration::from_secs(5)),
            "the setsid'd sleep survived kill: {:?}",
            proc_stat(escaped)
        );
    }

    mount.ok("rm -r \"$M/cmd/removed\"");
    assert!(!mount.p("cmd/removed").exists());
    let (shell, escaped) = pids[1];
    assert!(wait_until(Duration::from_secs(5), || group_members(shell).is_empty()));
    if contained {
        assert!(
            gone_within(escaped, Duration::from_secs(5)),
            "the setsid'd sleep survived rm -r: {:?}",
            proc_stat(escaped)
        );
    }
    // None of them lingers as the driver's zombie.
    let driver = mount.pid() as i32;
    let no_zombies = || zombie_children(driver).is_empty();
    assert!(wait_until(Duration::from_secs(5), no_zombies));
}

#[test]
fn sigterm_first_and_sigkill_after_the_grace() {
    let mount = Mount::with_args(&["--kill-grace", "1s"]);
    std::fs::write(
        mount.p("ctl/tidy"),
        "trap 'echo cleanup; exit 3' TERM; echo ready; while :; do sleep 0.1; done",
    )
    .unwrap();
    std::fs::write(
        mount.p("ctl/deaf"),
        "trap '' TERM; echo ready; while :; do sleep 0.1; done",
    )
    .unwrap();
    // Each counts the SIGTERMs it gets: a second one is not harmless, as many programs
    // take it as "stop now, skip the cleanup".
    let counters = ["count1", "count2", "count3"];
    for name in counters {
        std::fs::write(
            mount.p(&format!("ctl/{name}")),
            "trap 'echo TERM' TERM; echo ready; while :; do sleep 0.1; done",
        )
        .unwrap();
    }
    for name in ["tidy", "deaf"].iter().chain(&counters) {
        assert!(
            wait_until(Duration::from_secs(10), || mount
                .read(&format!("cmd/{name}/stdout"))
                .starts_with("ready")),
            "{name} never set its trap"
        );
    }
    let deaf = shell_pid(&mount, "deaf");
    let started = Instant::now();
    mount.ok("for c in tidy deaf count1 count2 count3; do echo x > \"$M/cmd/$c/kill\"; done");

    // The trap ran on SIGTERM and chose its own exit code.
    assert_eq!(mount.wait("tidy"), "error\n");
    assert_eq!(mount.read("cmd/tidy/stdout"), "ready\ncleanup\n");
    assert_eq!(mount.read("cmd/tidy/exitcode"), "3\n");
    let tidy = result(&mount, "tidy");
    assert_eq!(tidy["signal"], serde_json::Value::Null);
    assert_eq!(tidy["killed"], true);

    // Ignoring SIGTERM buys the grace period, then SIGKILL.
    assert_eq!(mount.wait("deaf"), "error\n");
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(mount.read("cmd/deaf/exitcode"), "137\n");
    let deaf_result = result(&mount, "deaf");
    assert_eq!(deaf_result["signal"], 9);
    assert_eq!(deaf_result["killed"], true);
    assert!(wait_until(Duration::from_secs(5), || group_members(deaf).is_empty()));

    // One SIGTERM, then SIGKILL after the grace.
    for name in counters {
        assert_eq!(mount.wait(name), "error\n");
        assert_eq!(mount.read(&format!("cmd/{name}/exitcode")), "137\n");
        assert_eq!(
            mount.read(&format!("cmd/{name}/stdout")),
            "ready\nTERM\n",
            "{name} got SIGTERM more than once"
        );
    }
}

// ----- 3. limits ---------------------------------------------------------------------

#[test]
fn time_limits_from_the_flag_and_from_directives() {
    let reaper = Reaper::default();
    let mount = Mount::with_args(&["--timeout", "2s", "--kill-grace", "1s"]);
    let contained = cgroups_required(mount.pid() as i32, &mount.path).is_some();
    let started = Instant::now();
    std::fs::write(mount.p("ctl/slow"), "sleep 30").unwrap();
    std::fs::write(mount.p("ctl/quick"), "echo fine").unwrap();
    // A directive may shorten the flag's limit, never lengthen it.
    std::fs::write(
        mount.p("ctl/longer"),
        "#terminalfs timeout=1m\nsleep 30; echo survived",
    )
    .unwrap();
    std::fs::write(
        mount.p("ctl/stubborn"),
        "#terminalfs timeout=1s\ntrap '' TERM; setsid sleep 300 & echo $!; \
         while :; do sleep 0.1; done",
    )
    .unwrap();
    let stubborn = shell_pid(&mount, "stubborn");
    reaper.watch(stubborn);
    let escaped = escaped_pid(&mount, "stubborn", stubborn);
    reaper.watch(escaped);
    reaper.watch(shell_pid(&mount, "slow"));
    reaper.watch(shell_pid(&mount, "longer"));

    assert_eq!(mount.wait("quick"), "completed\n");
    assert_eq!(mount.read("cmd/quick/stdout"), "fine\n");
    assert_eq!(result(&mount, "quick")["timed_out"], false);
    assert!(!mount.p("cmd/quick/reason").exists());

    // The flag's limit: SIGTERM after 2 s.
    assert_eq!(mount.wait("slow"), "error\n");
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(1900) && elapsed < Duration::from_secs(20),
        "{elapsed:?}"
    );
    assert_eq!(mount.read("cmd/slow/exitcode"), "143\n");
    timed_out_at(&mount, "slow", "2s");
    let slow = result(&mount, "slow");
    assert_eq!(slow["killed"], true);
    assert!(slow["reason"].as_str().unwrap().contains("timed out"));

    // The directive's limit, on a command that ignores SIGTERM: KILL after the grace,
    // and its setsid'd descendant goes too.
    assert_eq!(mount.wait("stubborn"), "error\n");
    assert_eq!(mount.read("cmd/stubborn/exitcode"), "137\n");
    timed_out_at(&mount, "stubborn", "1s");
    if contained {
        assert!(
            gone_within(escaped, Duration::from_secs(5)),
            "{:?}",
            proc_stat(escaped)
        );
    }

    assert_eq!(mount.wait("longer"), "error\n");
    assert_eq!(mount.read("cmd/longer/stdout"), "");
    timed_out_at(&mount, "longer", "2s");
}

/// `name`'s reason says it timed out at `limit`, and its result that it timed out.
fn timed_out_at(mount: &Mount, name: &str, limit: &str) {
    let reason = mount.read(&format!("cmd/{name}/reason"));
    assert!(
        reason.contains("timed out") && reason.contains(limit),
        "{reason}"
    );
    assert_eq!(result(mount, name)["timed_out"], true);
}

/// No limit is the absence of one: a limit of zero, which would stop every command as it
/// starts, is refused alike from the flag (a usage error) and from a directive.
#[test]
fn a_time_limit_of_zero_is_refused_by_the_flag_and_the_directive() {
    for value in ["0", "0s", "0ms"] {
        let out = run_binary(&[&"--timeout", &value]);
        assert_eq!(out.status.code(), Some(2), "--timeout {value}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("--timeout") && stderr.contains("leave --timeout out for no limit"),
            "{stderr}"
        );
    }
    let mount = Mount::start();
    // A bad directive fails the write itself; the command is refused with its reason.
    let write = std::fs::write(mount.p("ctl/zero"), "#terminalfs timeout=0\necho ran");
    assert_eq!(write.unwrap_err().raw_os_error(), Some(libc::EINVAL));
    assert_eq!(mount.read("cmd/zero/status"), "denied\n");
    let reason = mount.read("cmd/zero/reason");
    assert!(
        reason.contains("timeout=0") && reason.contains("longer than zero"),
        "{reason}"
    );
    // Without a limit a command runs as long as it likes.
    assert_eq!(mount.run("free", "sleep 1; echo done"), "completed\n");
    assert_eq!(result(&mount, "free")["timed_out"], false);
}

#[test]
fn a_removed_command_frees_its_output_though_its_time_limit_is_far_off() {
    let mount = Mount::with_args(&["--timeout", "1h"]);
    let text = "head -c 5000000 /dev/zero; head -c 3000000 /dev/zero >&2";
    assert_eq!(mount.run("big", text), "completed\n");
    let dirs = mount.spool_dirs("big");
    assert_eq!(dirs.len(), 1, "one spool directory per command");
    let on_disk = |name: &str| std::fs::metadata(dirs[0].join(name)).map_or(0, |m| m.len());
    assert_eq!(
        (on_disk("stdout"), on_disk("stderr")),
        (5_000_000, 3_000_000)
    );
    mount.ok("rm -r \"$M/cmd/big\"");
    assert!(
        wait_until(Duration::from_secs(10), || !dirs[0].exists()),
        "rm -r left {} behind",
        dirs[0].display()
    );
}

#[test]
fn a_memory_directive_limits_what_a_command_may_allocate() {
    let mount = Mount::start();
    let big = "python3 -c \"bytearray(256*1024*1024)\"";
    std::fs::write(
        mount.p("ctl/greedy"),
        format!("#terminalfs memory=64m\n{big}"),
    )
    .unwrap();
    std::fs::write(
        mount.p("ctl/modest"),
        "#terminalfs memory=64m\npython3 -c \"bytearray(8*1024*1024); print('ok')\"",
    )
    .unwrap();
    std::fs::write(mount.p("ctl/free"), big).unwrap();

    assert_eq!(mount.wait("greedy"), "error\n");
    let stderr = mount.read("cmd/greedy/stderr");
    assert!(stderr.contains("MemoryError"), "{stderr}");
    let reason = mount.read("cmd/greedy/reason");
    assert!(
        reason.contains("memory limit") && reason.contains("64"),
        "{reason}"
    );
    let greedy = result(&mount, "greedy");
    assert_eq!(greedy["memory_limit"], 64 * 1024 * 1024);
    assert!(greedy["reason"].as_str().unwrap().contains("memory limit"));

    // Under the limit the same interpreter works, and without it the big one does.
    assert_eq!(mount.wait("modest"), "completed\n");
    assert_eq!(mount.read("cmd/modest/stdout"), "ok\n");
    assert_eq!(result(&mount, "modest")["memory_limit"], 64 * 1024 * 1024);
    assert!(!mount.p("cmd/modest/reason").exists());
    assert_eq!(
        mount.wait("free"),
        "completed\n",
        "{}",
        mount.read("cmd/free/output")
    );
    assert_eq!(
        result(&mount, "free")["memory_limit"],
        serde_json::Value::Null
    );
}

#[test]
fn a_keep_directive_overrides_keep() {
    let mount = Mount::with_args(&["--keep", "60s"]);
    std::fs::write(mount.p("ctl/brief"), "#terminalfs keep=1s\necho brief").unwrap();
    std::fs::write(mount.p("ctl/plain"), "echo plain").unwrap();
    assert_eq!(mount.wait("plain"), "completed\n");
    assert_eq!(mount.wait("brief"), "completed\n");
    assert_eq!(mount.read("cmd/brief/stdout"), "brief\n");
    // Every file of it has been closed by now; its second starts here at the latest.
    let closed = Instant::now();
    assert!(
        wait_until(Duration::from_secs(10), || !mount.p("cmd/brief").exists()),
        "cmd/brief is still there"
    );
    assert!(
        closed.elapsed() >= Duration::from_millis(900),
        "removed after {:?}",
        closed.elapsed()
    );
    assert!(
        mount.p("cmd/plain").exists(),
        "--keep 60s still holds the other"
    );
    // The name is free again.
    assert_eq!(mount.run("brief", "echo again"), "completed\n");
    assert_eq!(mount.read("cmd/brief/stdout"), "again\n");
}

#[test]
fn a_bad_directive_refuses_the_command() {
    let mount = Mount::start();
    let cwd = mount.dir.path().to_path_buf();
    for (name, directive, needle) in [
        ("colour", "#terminalfs colour=red", "colour"),
        ("soon", "#terminalfs timeout=soon", "timeout=soon"),
        ("mixed", "#terminalfs timeout=1s memory=lots", "memory=lots"),
        (
            "twice",
            "#terminalfs timeout=1s timeout=3s",
            "key 'timeout' is given twice (timeout=1s, then timeout=3s)",
        ),
        (
            "two-lines",
            "#terminalfs keep=1h\n#terminalfs memory=1g keep=2h",
            "key 'keep' is given twice (keep=1h, then keep=2h)",
        ),
    ] {
        // The directive lines are whole before the command starts: the write fails.
        let written = std::fs::write(
            mount.p(&format!("ctl/{name}")),
            format!("{directive}\ntouch ran-{name}"),
        );
        let errno = written.err().and_then(|e| e.raw_os_error());
        assert_eq!(errno, Some(libc::EINVAL), "{name}");
        assert_eq!(mount.read(&format!("cmd/{name}/status")), "denied\n");
        let reason = mount.read(&format!("cmd/{name}/reason"));
        assert!(reason.contains(needle), "{name}: {reason}");
        let mut listing: Vec<String> = std::fs::read_dir(mount.p(&format!("cmd/{name}")))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        listing.sort();
        assert_eq!(listing, ["command", "reason", "status"], "{name}");
        assert!(!cwd.join(format!("ran-{name}")).exists(), "{name} ran");
    }
    // A good directive next to them runs.
    assert_eq!(
        mount.run(
            "good",
            "#terminalfs timeout=1m keep=1h memory=1g\ntouch ran-good"
        ),
        "completed\n"
    );
    assert!(cwd.join("ran-good").exists());
}

// ----- 4. a command has stopped when its shell exits -----------------------------

#[test]
fn a_command_stops_with_its_shell_while_descendants_go_on() {
    let reaper = Reaper::default();
    let mount = Mount::start();
    let cwd = mount.dir.path().to_path_buf();
    let started = Instant::now();
    std::fs::write(mount.p("ctl/bg"), "(sleep 30 & echo $!); echo started").unwrap();
    std::fs::write(mount.p("ctl/late"), "(sleep 1; echo late) & echo started").unwrap();
    // This one's shell waits for a file, so its kill file can be opened while it runs.
    std::fs::write(
        mount.p("ctl/held"),
        "sleep 300 & echo $!; while [ ! -e go-held ]; do sleep 0.05; done",
    )
    .unwrap();

    assert_eq!(mount.wait("bg"), "completed\n");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "wait took {:?}",
        started.elapsed()
    );
    let sleeper = printed_pid(&mount, "bg");
    reaper.watch(sleeper);
    assert!(process_alive(sleeper));
    assert_eq!(mount.read("cmd/bg/exitcode"), "0\n");
    assert!(mount.read("cmd/bg/stdout").ends_with("started\n"));

    // A descendant holding stdout keeps writing after the command stopped.
    assert_eq!(mount.wait("late"), "completed\n");
    assert!(mount.read("cmd/late/stdout").starts_with("started\n"));
    assert!(
        wait_until(Duration::from_secs(10), || mount
            .read("cmd/late/stdout")
            .contains("late\n")),
        "{:?}",
        mount.read("cmd/late/stdout")
    );

    // rm -r still reaches the background process of a stopped command.
    mount.ok("rm -r \"$M/cmd/bg\"");
    assert!(
        gone_within(sleeper, Duration::from_secs(10)),
        "{:?}",
        proc_stat(sleeper)
    );

    // So does a kill file opened while the shell ran, written after it stopped.
    let held = printed_pid(&mount, "held");
    reaper.watch(held);
    let mut kill = std::fs::OpenOptions::new()
        .write(true)
        .open(mount.p("cmd/held/kill"))
        .unwrap();
    std::fs::write(cwd.join("go-held"), "").unwrap();
    assert_eq!(mount.wait("held"), "completed\n");
    assert!(process_alive(held));
    std::io::Write::write_all(&mut kill, b"stop\n").expect("killing a stopped command is fine");
    drop(kill);
    assert!(
        gone_within(held, Duration::from_secs(10)),
        "{:?}",
        proc_stat(held)
    );
    assert_eq!(mount.read("cmd/held/status"), "completed\n");
}

// ----- 5. faults ---------------------------------------------------------------------

#[test]
fn many_children_and_a_closed_stdout() {
    let mount = Mount::start();
    let driver = mount.pid() as i32;
    std::fs::write(
        mount.p("ctl/forks"),
        "for i in $(seq 200); do sleep 1 & done; wait; echo all done",
    )
    .unwrap();
    std::fs::write(mount.p("ctl/closed"), "exec >&-; sleep 0.2; echo still >&2").unwrap();
    assert_eq!(mount.wait("closed"), "completed\n");
    assert_eq!(mount.read("cmd/closed/stdout"), "");
    assert_eq!(mount.read("cmd/closed/stderr"), "still\n");
    assert_eq!(mount.read("cmd/closed/exitcode"), "0\n");
    let closed = result(&mount, "closed");
    assert_eq!(closed["stdout"]["bytes"], 0);
    assert_eq!(closed["stderr"]["bytes"], 6);

    assert_eq!(mount.wait("forks"), "completed\n");
    assert_eq!(mount.read("cmd/forks/stdout"), "all done\n");
    assert_eq!(mount.read("cmd/forks/exitcode"), "0\n");
    let no_zombies = || zombie_children(driver).is_empty();
    assert!(
        wait_until(Duration::from_secs(5), no_zombies),
        "{:?}",
        zombie_children(driver)
    );
}

#[test]
fn a_gigabyte_of_output_is_counted_dropped_and_does_not_stall_the_mount() {
    let mount = Mount::with_args(&["--max-output", "1m"]);
    const GIB: u64 = 1 << 30;
    const MIB: u64 = 1 << 20;
    std::fs::write(mount.p("ctl/flood"), format!("head -c {GIB} /dev/zero")).unwrap();
    let pid = shell_pid(&mount, "flood");
    // While it floods, the mount answers and runs other commands.
    let asked = Instant::now();
    assert_eq!(mount.run("ping", "echo pong"), "completed\n");
    assert_eq!(mount.read("cmd/ping/stdout"), "pong\n");
    assert!(mount.read("index.md").starts_with("---"));
    assert!(
        asked.elapsed() < Duration::from_secs(10),
        "the mount stalled for {:?}",
        asked.elapsed()
    );

    assert_eq!(mount.wait("flood"), "completed\n");
    assert!(!process_alive(pid));
    let flood = result(&mount, "flood");
    assert_eq!(flood["stdout"]["bytes"], GIB);
    assert_eq!(flood["stdout"]["dropped"], GIB - MIB);
    assert_eq!(flood["output"]["bytes"], GIB);
    assert_eq!(flood["output"]["dropped"], GIB - MIB);
    assert_eq!(flood["stderr"]["bytes"], 0);
    // A fresh read: the first quarter MiB, a notice, then the last three quarters.
    let stdout = std::fs::read(mount.p("cmd/flood/stdout")).unwrap();
    let start = stdout.iter().position(|&b| b != 0).unwrap();
    assert_eq!(start, (MIB / 4) as usize, "the head is exact");
    let end = start + stdout[start..].iter().position(|&b| b == 0).unwrap();
    let notice = String::from_utf8_lossy(&stdout[start..end]);
    assert!(notice.contains(&(GIB - MIB).to_string()), "{notice}");
    assert_eq!(stdout.len() - end, (MIB - MIB / 4) as usize);
}

#[test]
fn a_missing_shell_fails_the_command_at_once() {
    let (mut mount, shell, _shells) = mount_with_a_vanished_shell();
    let shell = shell.display().to_string();
    let asked = Instant::now();
    assert_eq!(mount.run("nope", "echo hi"), "error\n");
    assert!(
        asked.elapsed() < Duration::from_secs(10),
        "{:?}",
        asked.elapsed()
    );
    assert_eq!(mount.read("cmd/nope/exitcode"), "-1\n");
    let stderr = mount.read("cmd/nope/stderr");
    assert!(
        stderr.contains(&shell) && stderr.contains("No such file or directory"),
        "{stderr}"
    );
    let nope = result(&mount, "nope");
    assert_eq!(nope["exitcode"], -1);
    assert_eq!(nope["status"], "error");
    assert!(nope["reason"].as_str().unwrap().contains(&shell));
    assert!(!mount.p("cmd/nope/kill").exists());
    // Nothing is left of it: the cgroup it was given is free for the next command
    // (or, with the memory controller, removed).
    mount.ok("echo x > \"$M/ctl/again\"; cat \"$M/cmd/again/wait\" >/dev/null");
    if let Some(parent) = cgroups_required(mount.pid() as i32, &mount.path) {
        let containment = nope["containment"].as_str().unwrap();
        let dir = containment
            .strip_prefix("cgroup ")
            .unwrap_or_else(|| panic!("containment is {containment:?}"));
        let memory = std::fs::read_to_string(parent.join("cgroup.subtree_control"))
            .unwrap_or_default()
            .contains("memory");
        if memory {
            assert!(wait_until(Duration::from_secs(5), || !Path::new(dir).exists()));
        } else {
            assert_eq!(result(&mount, "again")["containment"], containment);
        }
    }
    let stopping = Instant::now();
    assert!(mount.stop().success());
    assert!(stopping.elapsed() < Duration::from_secs(10));
}

#[test]
fn a_cwd_that_vanished_fails_the_command_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("work");
    std::fs::create_dir(&cwd).unwrap();
    let mount = Mount::with_args(&["--cwd", cwd.to_str().unwrap()]);
    assert_eq!(mount.run("here", "pwd"), "completed\n");
    std::fs::remove_dir(&cwd).unwrap();
    assert_eq!(mount.run("gone", "pwd"), "error\n");
    assert_eq!(mount.read("cmd/gone/exitcode"), "-1\n");
    let stderr = mount.read("cmd/gone/stderr");
    assert!(stderr.contains(&cwd.display().to_string()), "{stderr}");
}

#[test]
fn a_missing_cwd_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("settings.json");
    std::fs::write(&settings, "{}").unwrap();
    let path = dir.path().join("mnt");
    let missing = dir.path().join("no-such-directory");
    let mut child = Command::new(BIN)
        .arg("--path")
        .arg(&path)
        .arg("--settings")
        .arg(&settings)
        .arg("--cwd")
        .arg(&missing)
        .env("XDG_STATE_HOME", dir.path().join("state"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut status = None;
    let exited = wait_until(Duration::from_secs(10), || {
        status = child.try_wait().unwrap();
        status.is_some()
    });
    if !exited {
        let _ = child.kill();
        let _ = child.wait();
        if is_mounted(&path) {
            let _ = Command::new("umount").arg("-l").arg(&path).status();
        }
        panic!("terminalfs kept running with a missing --cwd");
    }
    let status = status.unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(!status.success(), "{status}");
    assert!(
        stderr.contains(&missing.display().to_string()),
        "the error names the directory: {stderr}"
    );
    assert!(!is_mounted(&path));
}

#[test]
fn an_inherited_ignored_sigchld_does_not_lose_exit_statuses() {
    // A launcher may leave SIGCHLD ignored, which survives exec; then the kernel reaps
    // children by itself and the driver could never collect an exit status.
    let mount = Mount::with_launcher(
        Options {
            args: vec!["--wait-timeout", "1s"],
            ..Options::default()
        },
        &|command| {
            // SAFETY: only signal(2), which is async-signal-safe, between fork and exec.
            unsafe {
                command.pre_exec(|| {
                    libc::signal(libc::SIGCHLD, libc::SIG_IGN);
                    Ok(())
                });
            }
        },
    );
    std::fs::write(mount.p("ctl/hello"), "echo hello; exit 5").unwrap();
    let stopped = wait_until(Duration::from_secs(10), || {
        mount.read("cmd/hello/wait") != "running\n"
    });
    assert!(stopped, "status: {}", mount.read("cmd/hello/status"));
    assert_eq!(mount.read("cmd/hello/exitcode"), "5\n");
    assert_eq!(mount.read("cmd/hello/stdout"), "hello\n");
}

#[test]
fn a_thousand_commands_leave_no_zombie_descriptor_or_thread() {
    let mount = Mount::start();
    let driver = mount.pid() as i32;
    // Warm up, so whatever is made once and kept exists before counting.
    for i in 0..10 {
        assert_eq!(mount.run(&format!("warm{i}"), "echo warm"), "completed\n");
    }
    let settled = |fds: usize, threads: usize| {
        let mut seen = (0, 0, Vec::new());
        let ok = wait_until(Duration::from_secs(10), || {
            seen = (
                fd_count(driver),
                thread_count(driver),
                zombie_children(driver),
            );
            seen.0 <= fds && seen.1 <= threads && seen.2.is_empty()
        });
        (ok, seen)
    };
    let (_, (fds, threads, _)) = settled(usize::MAX, usize::MAX);
    assert!(fds > 0 && threads > 0);

    const BATCH: usize = 100;
    for batch in 0..10 {
        let names: Vec<String> = (0..BATCH)
            .map(|i| format!("n{}", batch * BATCH + i))
            .collect();
        for (i, name) in names.iter().enumerate() {
            let text = if i % 10 == 9 {
                // Some end by a signal, some by an error, some leave a child behind.
                "echo $TERMINALFS_NAME; kill -9 $$".to_string()
            } else if i % 10 == 8 {
                "echo $TERMINALFS_NAME >&2; exit 4".to_string()
            } else if i % 10 == 7 {
                "(sleep 0.2 &); echo $TERMINALFS_NAME".to_string()
            } else {
                "echo $TERMINALFS_NAME".to_string()
            };
            std::fs::write(mount.p(&format!("ctl/{name}")), text).unwrap();
        }
        for (i, name) in names.iter().enumerate() {
            let expected = if i % 10 >= 8 {
                "error\n"
            } else {
                "completed\n"
            };
            assert_eq!(mount.wait(name), expected, "{name}");
        }
        assert_eq!(
            mount.read(&format!("cmd/{}/output", names[0])),
            format!("{}\n", names[0])
        );
    }
    assert_eq!(mount.read("cmd/n999/exitcode"), "137\n");
    assert_eq!(mount.read("cmd/n998/stderr"), "n998\n");

    let (ok, seen) = settled(fds + 5, threads + 2);
    assert!(
        ok,
        "before: {fds} fds, {threads} threads; after 1000 commands (fds, threads, zombies): \
         {seen:?}"
    );
}

// ----- 6. driver shutdown and crash -------------------------------------------------

// Linux only: it watches the reader through /proc.
#[cfg(target_os = "linux")]
#[test]
fn driver_sigterm_stops_everything_answers_reads_and_unmounts() {
    let reaper = Reaper::default();
    let mut mount = Mount::with_args(&["--kill-grace", "1s"]);
    let driver = mount.pid() as i32;
    let parent = cgroups_required(driver, &mount.path);
    std::fs::write(mount.p("ctl/escaper"), ESCAPER).unwrap();
    std::fs::write(
        mount.p("ctl/deaf"),
        "trap '' TERM; echo ready; while :; do sleep 0.1; done",
    )
    .unwrap();
    // Counts the SIGTERMs it gets in a file (its stdout goes with the mount).
    std::fs::write(
        mount.p("ctl/counter"),
        "trap 'echo TERM >> terms' TERM; echo ready; while :; do sleep 0.1; done",
    )
    .unwrap();
    let counter = shell_pid(&mount, "counter");
    reaper.watch(counter);
    let escaper = shell_pid(&mount, "escaper");
    reaper.watch(escaper);
    let escaped = escaped_pid(&mount, "escaper", escaper);
    reaper.watch(escaped);
    let deaf = shell_pid(&mount, "deaf");
    reaper.watch(deaf);
    for name in ["deaf", "counter"] {
        assert!(wait_until(Duration::from_secs(10), || mount
            .read(&format!("cmd/{name}/stdout"))
            .starts_with("ready")));
    }

    let waiting = crate::common::parked_read(mount.p("cmd/escaper/wait"));
    let following = crate::common::parked_read(mount.p("cmd/deaf/follow"));
    let stopped = Instant::now();
    mount.signal(libc::SIGTERM);
    let status = mount
        .wait_exit(Duration::from_secs(20))
        .expect("the driver exits after SIGTERM");
    assert_eq!(status.code(), Some(0), "{status}\n{}", mount.log());
    assert!(
        stopped.elapsed() < Duration::from_secs(15),
        "{:?}",
        stopped.elapsed()
    );

    let answer = waiting
        .recv_timeout(Duration::from_secs(5))
        .unwrap()
        .unwrap();
    // Stopped by the shutdown, or answered as if timed out just before that.
    assert!(
        [&b"error\n"[..], b"running\n"].contains(&answer.as_slice()),
        "{:?}",
        String::from_utf8_lossy(&answer)
    );
    let followed = following
        .recv_timeout(Duration::from_secs(5))
        .unwrap()
        .unwrap();
    assert!(
        followed.starts_with(b"ready\n"),
        "{:?}",
        String::from_utf8_lossy(&followed)
    );

    assert!(!is_mounted(&mount.path), "still mounted");
    assert!(
        mount.log().contains("stopping (SIGTERM)"),
        "{}",
        mount.log()
    );
    // SIGTERM once, then SIGKILL after the grace.
    assert_eq!(
        std::fs::read_to_string(mount.dir.path().join("terms"))
            .ok()
            .as_deref(),
        Some("TERM\n")
    );
    for pid in [escaper, deaf, counter] {
        assert!(
            gone_within(pid, Duration::from_secs(5)),
            "{pid}: {:?}",
            proc_stat(pid)
        );
        assert!(group_members(pid).is_empty(), "{:?}", group_members(pid));
    }
    if let Some(parent) = parent {
        assert!(
            gone_within(escaped, Duration::from_secs(5)),
            "{:?}",
            proc_stat(escaped)
        );
        assert!(!parent.exists(), "{} is left", parent.display());
    }
}

#[test]
fn driver_sigterm_gives_what_a_stopped_command_left_running_a_sigterm_first() {
    let reaper = Reaper::default();
    let mut mount = Mount::with_args(&["--kill-grace", "2s"]);
    let driver = mount.pid() as i32;
    if cgroups_required(driver, &mount.path).is_none() {
        return; // Without cgroups nothing can find a daemon that left its group.
    }
    let cwd = mount.dir.path().to_path_buf();
    // A daemon: its own session, no pipes of the command; the shell exits at once.
    let daemon = "setsid sh -c 'trap \"echo bye > bye; exit 0\" TERM; echo $$ > daemon; \
                  while :; do sleep 0.1; done' </dev/null >/dev/null 2>&1 &";
    assert_eq!(mount.run("daemon", daemon), "completed\n");
    // It writes its pid once its trap is set.
    let mut pid = 0;
    let ready = wait_until(Duration::from_secs(10), || {
        let text = std::fs::read_to_string(cwd.join("daemon")).unwrap_or_default();
        text.ends_with('\n') && {
            pid = text.trim().parse().unwrap();
            true
        }
    });
    assert!(ready, "the daemon never started");
    reaper.watch(pid);
    assert!(process_alive(pid));
    assert!(mount.stop().success());
    assert!(
        gone_within(pid, Duration::from_secs(5)),
        "{:?}",
        proc_stat(pid)
    );
    assert_eq!(
        std::fs::read_to_string(cwd.join("bye")).ok().as_deref(),
        Some("bye\n"),
        "the daemon was killed without a SIGTERM first"
    );
}

/// The pids of the driver's spawner (its child run with the spawner's argument).
fn spawner_of(driver: i32) -> i32 {
    children_of(driver)
        .into_iter()
        .map(|(pid, _)| pid)
        .find(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|line| line.windows(18).any(|w| w == b"--internal-spawner"))
        })
        .expect("the driver has a spawner")
}

/// Starts the escaping command `name` and returns its shell, the process it started
/// with setsid, and the members of its process group, all watched by `reaper`.
fn start_escaper(mount: &Mount, reaper: &Reaper, name: &str) -> (i32, i32, Vec<i32>) {
    std::fs::write(mount.p(&format!("ctl/{name}")), ESCAPER).unwrap();
    let shell = shell_pid(mount, name);
    reaper.watch(shell);
    let escaped = escaped_pid(mount, name, shell);
    reaper.watch(escaped);
    // The shell's own `sleep 300` too, which outlives a shell killed on its own.
    let mut group = Vec::new();
    let forked = wait_until(Duration::from_secs(10), || {
        group = group_members(shell);
        group.len() >= 2
    });
    for &pid in &group {
        reaper.watch(pid);
    }
    assert!(forked, "{group:?}");
    (shell, escaped, group)
}

#[test]
fn after_a_driver_sigkill_nothing_runs_unowned() {
    let reaper = Reaper::default();
    let mut mount = Mount::start();
    let first = mount.pid() as i32;
    let contained = cgroups_required(first, &mount.path).is_some();
    let (shell, escaped, group) = start_escaper(&mount, &reaper, "orphan");
    let mut child = mount.take_child().expect("the driver runs");
    child.kill().unwrap();
    child.wait().unwrap();
    // The spawner outlives the driver and stops everything the command started: its
    // group, and what left the session with setsid.
    for pid in group.iter().copied().chain([shell, escaped]) {
        assert!(
            gone_within(pid, Duration::from_secs(10)),
            "{pid} outlived the driver: {:?}",
            proc_stat(pid)
        );
    }
    mount.spawn(&[]);
    assert_ne!(mount.pid() as i32, first);
    assert_eq!(mount.read("cmd/orphan/status"), "error\n");
    if !contained {
        assert_eq!(mount.run("again", "echo again"), "completed\n");
        return;
    }

    // Where the spawner dies too, the next driver on the same path reaps what the last
    // one left in its cgroups.
    let second = mount.pid() as i32;
    let (shell, escaped, _) = start_escaper(&mount, &reaper, "orphan2");
    let spawner = spawner_of(second);
    // SAFETY: killing the spawner of the driver this test started.
    unsafe {
        libc::kill(spawner, libc::SIGKILL);
    }
    let mut child = mount.take_child().expect("the driver runs");
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(process_alive(escaped), "{:?}", proc_stat(escaped));
    mount.log.lock().unwrap().clear();
    mount.spawn(&[]);
    assert!(
        gone_within(escaped, Duration::from_secs(10)),
        "{:?}",
        proc_stat(escaped)
    );
    assert!(
        wait_until(Duration::from_secs(5), || group_members(shell).is_empty()),
        "{:?}",
        group_members(shell)
    );
    // It says how many it reaped.
    let log = mount.log();
    let wanted = format!(
        "process(es) that an earlier driver at {} left running",
        mount.path.display()
    );
    let line = log
        .lines()
        .find(|line| line.contains(&wanted))
        .unwrap_or_else(|| panic!("no reaped line in the log:\n{log}"));
    let count: usize = line
        .split("reaped ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!(count >= 1, "{line}");
    // And the new driver works.
    assert_eq!(mount.run("again", "echo again"), "completed\n");
    assert_eq!(mount.read("cmd/again/stdout"), "again\n");
}

/// A driver, taken from its [`Mount`], that is SIGKILLed and reaped when dropped if it
/// still runs (a test that fails leaves no driver behind).
struct Driver(std::process::Child);

impl Driver {
    fn pid(&self) -> i32 {
        self.0.id() as i32
    }

    /// Waits (with a deadline) for the driver to exit.
    fn exited_within(&mut self, timeout: Duration) -> bool {
        wait_until(timeout, || matches!(self.0.try_wait(), Ok(Some(_))))
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        if !matches!(self.0.try_wait(), Ok(Some(_))) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

#[test]
fn a_driver_still_stopping_leaves_the_next_one_on_its_path_alone() {
    let reaper = Reaper::default();
    // The first driver gives its commands a long grace, and its command ignores SIGTERM
    // and ends only when told to: that driver is still stopping while the next one
    // starts on the same path and runs commands.
    let mut mount = Mount::with_args(&["--kill-grace", "60s"]);
    let contained = cgroups_required(mount.pid() as i32, &mount.path).is_some();
    let release = mount.dir.path().join("release");
    std::fs::write(
        mount.p("ctl/stubborn"),
        format!("trap '' TERM; echo up; {}", until_exists(&release)),
    )
    .unwrap();
    let stubborn = shell_pid(&mount, "stubborn");
    reaper.watch(stubborn);
    assert!(
        wait_until(Duration::from_secs(10), || mount
            .read("cmd/stubborn/stdout")
            == "up\n"),
        "{:?}",
        mount.read("cmd/stubborn/output")
    );
    let mut first = Driver(mount.take_child().expect("the driver runs"));
    let out = run_binary(&[&"--unmount", &"--path", &mount.path]);
    succeeded(&out);
    mount.wait_for_log("stopping (");
    // The first driver keeps its state directory until it has stopped: the next one
    // on its path is refused there, and starts with a state directory of its own.
    let refused = run_binary(&[
        &"--path",
        &mount.path,
        &"--settings",
        &mount.settings,
        &"--state-dir",
        &mount.spool,
    ]);
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains(&format!("(pid {})", first.pid())), "{said}");
    let own = mount.dir.path().join("spool-2");
    mount.spawn(&["--state-dir", own.to_str().unwrap()]);
    let go = mount.dir.path().join("go");
    std::fs::write(
        mount.p("ctl/long"),
        format!("{}; echo done", until_exists(&go)),
    )
    .unwrap();
    assert_eq!(
        mount.read("cmd/long/status"),
        "running\n",
        "{}",
        mount.read("cmd/long/result.json")
    );
    let long = shell_pid(&mount, "long");
    reaper.watch(long);
    assert_eq!(mount.run("before", "true"), "completed\n");
    // The first driver is still waiting for its own command, which has its grace.
    assert!(process_alive(first.pid()) && process_alive(stubborn));

    // Once its command ends, the first driver stops at once: the second one's running
    // command is none of its business ...
    std::fs::write(&release, "").unwrap();
    assert!(
        first.exited_within(Duration::from_secs(30)),
        "the first driver is still stopping:\n{}",
        mount.log()
    );
    // ... and it has neither signalled nor removed anything of the second one's.
    assert_eq!(mount.read("cmd/long/status"), "running\n");
    assert!(process_alive(long));
    std::fs::write(&go, "").unwrap();
    assert_eq!(mount.wait("long"), "completed\n");
    assert_eq!(mount.read("cmd/long/stdout"), "done\n");
    let after = mount.run("after", "true");
    assert_eq!(after, "completed\n", "{}", result(&mount, "after"));
    if contained {
        let containment = result(&mount, "after")["containment"].clone();
        assert!(
            containment
                .as_str()
                .is_some_and(|c| c.starts_with("cgroup ")),
            "{containment}"
        );
    }
    // The last driver on the path leaves no cgroup directory behind.
    let parent = cgroups_required(mount.pid() as i32, &mount.path);
    assert!(mount.stop().success());
    if let Some(parent) = parent {
        assert!(!parent.exists(), "{} is left", parent.display());
    }
}
