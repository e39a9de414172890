//! What the spawner does once the driver is gone (its socket ends, however the driver
//! died): it stops everything the commands it forked started, so a driver killed with
//! SIGKILL leaves nothing running, without waiting for the next start.
//!
//! Each command's shell leads its own session and process group (its pid names both).
//! Shells the spawner forks have no parent-death signal of their own: the driver's
//! death must not kill them before the watcher has seen who descends from them, or a
//! child that left the group (`setsid`, `setpgid`) would lose its link to the command
//! and run on. The watcher kills, with SIGKILL and again until none is left, every
//! process in those groups and sessions and every process descending from one of them;
//! then, where cgroups are used, it kills what is left in the driver's cgroups the way
//! a new start would. A process that left the command's session after its shell had
//! already exited (reparented then) is found only through the cgroup.

use std::time::{Duration, Instant};

/// How long the watcher keeps killing before it gives up on what it cannot stop.
const GIVE_UP_AFTER: Duration = Duration::from_secs(5);

/// How often, at most, the watched list is pruned while the spawner is awake.
pub const PRUNE_EVERY: Duration = Duration::from_secs(1);

/// The shells the spawner forked whose process group or session may still hold
/// processes; pruned every second or so while any is listed (and whenever it grows),
/// so a shell's pid freed and given to another process stays listed only that long.
#[derive(Debug, Default)]
pub struct Watched {
    /// Each shell's pid and its start time (clock ticks after boot; 0 where unknown).
    leaders: Vec<(i32, u64)>,
    /// Its length after the last prune.
    kept: usize,
    /// When it was last pruned.
    pruned: Option<Instant>,
}

impl Watched {
    /// Notes a shell the spawner forked.
    pub fn add(&mut self, pid: i32) {
        let started = started_at(pid).unwrap_or(0);
        self.leaders.push((pid, started));
        if self.leaders.len() >= 2 * self.kept.max(32) {
            self.prune();
        }
    }

    /// How long the spawner may sleep before it should call [`Watched::tick`]: a poll
    /// timeout in milliseconds, -1 (forever) when nothing is listed.
    pub fn poll_timeout(&self) -> i32 {
        if self.leaders.is_empty() {
            -1
        } else {
            PRUNE_EVERY.as_millis() as i32
        }
    }

    /// Called each time the spawner wakes: prunes, at most once per [`PRUNE_EVERY`].
    pub fn tick(&mut self) {
        let due = self.pruned.is_none_or(|at| at.elapsed() >= PRUNE_EVERY);
        if due && !self.leaders.is_empty() {
            self.prune();
        }
    }

    /// Drops the shells whose group and session have no member left.
    fn prune(&mut self) {
        let mut live = None;
        self.leaders.retain(|(leader, _)| {
            group_alive(*leader) || in_session(live.get_or_insert_with(processes), *leader)
        });
        self.kept = self.leaders.len();
        self.pruned = Some(Instant::now());
    }

    /// The shells whose group and session numbers are still theirs: a number is not
    /// given to a new process while a group or session of that number has a member,
    /// so one is another's only when a process of that pid runs that is not the shell.
    /// A shell whose start time is unknown is not told apart from a newcomer with its
    /// pid, so it counts only while no process has that pid.
    fn leaders(&self, processes: &[Process]) -> Vec<i32> {
        self.leaders
            .iter()
            .filter(|(leader, started)| {
                processes
                    .iter()
                    .find(|process| process.pid == *leader)
                    .is_none_or(|process| *started != 0 && process.started == *started)
            })
            .map(|(leader, _)| *leader)
            .collect()
    }

    /// Stops everything the watched shells started, then what is left in the cgroups
    /// of the driver `driver` (tagged `tag`), once that driver is gone. Returns the
    /// number of processes killed.
    pub fn stop_all(&self, driver: i32, tag: Option<&str>) -> usize {
        let deadline = Instant::now() + GIVE_UP_AFTER;
        let mut killed = 0;
        loop {
            let processes = processes();
            let targets = targets(&processes, &self.leaders(&processes));
            if targets.is_empty() {
                break;
            }
            for pid in &targets {
                // SAFETY: sending a signal; a pid gone meanwhile is ESRCH, harmless.
                if unsafe { libc::kill(*pid, libc::SIGKILL) } == 0 {
                    killed += 1;
                }
            }
            if Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        #[cfg(target_os = "linux")]
        if let Some(tag) = tag {
            // The cgroups name their driver: they count as left behind only once it
            // has finished dying.
            while process_running(driver) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            killed += super::cgroup::reap_leftovers(tag);
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (driver, tag);
        killed
    }
}

/// One process as `/proc/<pid>/stat` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Process {
    pid: i32,
    ppid: i32,
    group: i32,
    session: i32,
    /// Clock ticks after boot.
    started: u64,
    /// It has exited and waits to be reaped (nothing more to kill).
    zombie: bool,
}

/// Every process, on Linux; elsewhere none (the process groups are then all there is).
fn processes() -> Vec<Process> {
    #[cfg(target_os = "linux")]
    {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
            .filter_map(read_process)
            .collect()
    }
    #[cfg(not(target_os = "linux"))]
    Vec::new()
}

#[cfg(target_os = "linux")]
fn read_process(pid: i32) -> Option<Process> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    let state = fields.next()?;
    let mut number = || fields.next()?.parse::<i32>().ok();
    let (ppid, group, session) = (number()?, number()?, number()?);
    // After the session: tty, tpgid, flags, four fault counts, four times, priority,
    // nice, threads, itrealvalue, then the start time.
    let started = fields.nth(15)?.parse().ok()?;
    Some(Process {
        pid,
        ppid,
        group,
        session,
        started,
        zombie: matches!(state, "Z" | "X"),
    })
}

/// When `pid` started, where that can be known.
fn started_at(pid: i32) -> Option<u64> {
    #[cfg(target_os = "linux")]
    return read_process(pid).map(|process| process.started);
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        None
    }
}

/// Whether `pid` runs and has not begun to exit for good (Linux).
#[cfg(target_os = "linux")]
fn process_running(pid: i32) -> bool {
    read_process(pid).is_some_and(|process| !process.zombie)
}

/// Whether any process is in the process group `group`.
fn group_alive(group: i32) -> bool {
    // SAFETY: signal 0 only checks that some member exists.
    let rc = unsafe { libc::kill(-group, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

fn in_session(processes: &[Process], session: i32) -> bool {
    processes.iter().any(|process| process.session == session)
}

/// The live processes to kill: those in a leader's group or session, and every
/// descendant of one of them. Without a list of processes (not Linux), the leaders'
/// groups themselves, as negative pids.
fn targets(processes: &[Process], leaders: &[i32]) -> Vec<i32> {
    if processes.is_empty() {
        return leaders
            .iter()
            .filter(|leader| group_alive(**leader))
            .map(|leader| -leader)
            .collect();
    }
    let mut marked: std::collections::HashSet<i32> = processes
        .iter()
        .filter(|p| leaders.contains(&p.group) || leaders.contains(&p.session))
        .map(|p| p.pid)
        .collect();
    // Descendants, however far down: mark children of marked ones until none is new.
    loop {
        let before = marked.len();
        for process in processes {
            if marked.contains(&process.ppid) {
                marked.insert(process.pid);
            }
        }
        if marked.len() == before {
            break;
        }
    }
    processes
        .iter()
        .filter(|p| !p.zombie && marked.contains(&p.pid))
        .map(|p| p.pid)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn process(pid: i32, ppid: i32, group: i32, session: i32) -> Process {
        Process {
            pid,
            ppid,
            group,
            session,
            started: 7,
            zombie: false,
        }
    }

    #[test]
    fn targets_are_the_groups_sessions_and_descendants_of_the_shells() {
        let processes = [
            process(1, 0, 1, 1),
            // The driver and an unrelated shell.
            process(50, 1, 50, 50),
            process(60, 1, 60, 60),
            // A command's shell, a background child, a child in a group of its own in
            // the same session, and a `setsid` grandchild with a child of its own.
            process(100, 50, 100, 100),
            process(101, 100, 100, 100),
            process(102, 100, 102, 100),
            process(103, 102, 103, 103),
            process(104, 103, 103, 103),
            // A process whose shell exited, still in the command's group.
            process(105, 1, 100, 100),
            Process {
                zombie: true,
                ..process(106, 100, 100, 100)
            },
        ];
        let mut found = targets(&processes, &[100]);
        found.sort_unstable();
        assert_eq!(found, vec![100, 101, 102, 103, 104, 105]);
        assert!(targets(&processes, &[200]).is_empty());
        // A shell's pid now taken by another process: its numbers are not the shell's.
        let watched = Watched {
            leaders: vec![(100, 7), (60, 8)],
            ..Watched::default()
        };
        assert_eq!(watched.leaders(&processes), vec![100]);
    }

    #[test]
    fn a_shell_of_unknown_start_is_watched_only_while_its_pid_is_free() {
        let processes = [process(1, 0, 1, 1), process(100, 1, 100, 100)];
        let watched = Watched {
            // 100: start unknown, its pid taken; 200: start unknown, its pid free (its
            // group may still have members); 300: known and gone.
            leaders: vec![(100, 0), (200, 0), (300, 9)],
            ..Watched::default()
        };
        assert_eq!(watched.leaders(&processes), vec![200, 300]);
    }

    #[test]
    fn the_watched_list_is_pruned_on_a_timer_not_only_as_it_grows() {
        let mut watched = Watched::default();
        assert_eq!(watched.poll_timeout(), -1);
        watched.add(i32::MAX);
        assert_eq!(watched.poll_timeout(), PRUNE_EVERY.as_millis() as i32);
        watched.tick();
        assert!(
            watched.leaders.is_empty(),
            "a pid no process has is dropped"
        );
        // A second wake within the period does no work; one after it prunes again.
        watched.leaders.push((i32::MAX - 1, 0));
        watched.tick();
        assert_eq!(watched.leaders.len(), 1);
        watched.pruned = watched.pruned.and_then(|at| at.checked_sub(PRUNE_EVERY));
        watched.tick();
        assert!(watched.leaders.is_empty());
    }

    #[test]
    fn the_watched_list_forgets_shells_whose_group_and_session_are_empty() {
        let mut watched = Watched::default();
        // Pids no process has: a prune drops them all.
        for pid in 0..64 {
            watched.add(i32::MAX - pid);
        }
        assert!(watched.leaders.len() < 64, "{}", watched.leaders.len());
        // This process's own group is alive, so it is kept.
        // SAFETY: getpgrp cannot fail.
        let own = unsafe { libc::getpgrp() };
        for _ in 0..64 {
            watched.add(own);
        }
        assert!(watched.leaders.iter().any(|(leader, _)| *leader == own));
    }
}
