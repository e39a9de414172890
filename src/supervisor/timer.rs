//! The supervisor's timer thread: delayed SIGKILLs after the grace period and
//! per-command time limits. One thread sleeps until the earliest deadline.

use crate::supervisor::job::Job;
use crate::supervisor::{News, Notify};
use crossbeam_channel::{Receiver, Sender};
use std::collections::BinaryHeap;
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub enum TimerAction {
    /// SIGKILL the group: the grace period after SIGTERM is over.
    Kill(Arc<Job>),
    /// The command's time limit is reached: stop it the same way `kill` does. Weak, so
    /// a limit hours away does not keep a removed command's output in memory (a job
    /// nobody holds any more has stopped: the pump holds it while it runs).
    Timeout(Weak<Job>, Duration),
    /// Try again to remove a finished job's cgroup (attempts left).
    Tidy(Arc<Job>, u32),
}

struct Entry {
    at: Instant,
    seq: u64,
    action: TimerAction,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    // Reversed, so the max-heap pops the earliest deadline.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

enum Message {
    Schedule(Instant, TimerAction),
    Stop,
}

/// Schedules actions on the timer thread.
#[derive(Clone)]
pub struct Scheduler(Sender<Message>);

impl Scheduler {
    pub fn schedule(&self, at: Instant, action: TimerAction) {
        let _ = self.0.send(Message::Schedule(at, action));
    }

    /// Tries again, for a while, to let go of the cgroup of a job whose last process
    /// is still leaving it (its pipes close a moment before it leaves its cgroup).
    pub fn tidy(&self, job: Arc<Job>) {
        self.schedule(
            Instant::now() + TIDY_EVERY,
            TimerAction::Tidy(job, TIDY_ATTEMPTS),
        );
    }
}

/// How often, and how many times, a finished job's cgroup is looked at again.
const TIDY_EVERY: Duration = Duration::from_millis(100);
const TIDY_ATTEMPTS: u32 = 50;

pub struct Timer {
    sender: Sender<Message>,
    thread: Option<JoinHandle<()>>,
}

impl Timer {
    /// Starts the timer thread; `notify` hears of each job its time limit stops.
    pub fn start(notify: Notify) -> Timer {
        let (sender, receiver) = crossbeam_channel::unbounded();
        let resend = sender.clone();
        let thread = std::thread::Builder::new()
            .name("tfs-timer".into())
            .spawn(move || run(receiver, resend, notify))
            .expect("the timer thread can be spawned at start-up");
        Timer {
            sender,
            thread: Some(thread),
        }
    }

    pub fn schedule(&self, at: Instant, action: TimerAction) {
        self.scheduler().schedule(at, action);
    }

    /// A handle that schedules on this timer from another thread.
    pub fn scheduler(&self) -> Scheduler {
        Scheduler(self.sender.clone())
    }

    pub fn stop(&mut self) {
        let _ = self.sender.send(Message::Stop);
        if let Some(thread) = self.thread.take() {
            super::join(thread);
        }
    }
}

fn run(receiver: Receiver<Message>, resend: Sender<Message>, notify: Notify) {
    let mut heap = BinaryHeap::new();
    let mut seq = 0u64;
    loop {
        let message = match heap.peek() {
            Some(Entry { at, .. }) => match receiver.recv_deadline(*at) {
                Ok(message) => Some(message),
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => None,
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return,
            },
            None => match receiver.recv() {
                Ok(message) => Some(message),
                Err(_) => return,
            },
        };
        match message {
            Some(Message::Schedule(at, action)) => {
                seq += 1;
                heap.push(Entry { at, seq, action });
            }
            Some(Message::Stop) => return,
            None => {}
        }
        let now = Instant::now();
        while heap.peek().is_some_and(|entry| entry.at <= now) {
            let entry = heap.pop().expect("peeked just above");
            match entry.action {
                TimerAction::Kill(job) => {
                    job.signal_group(libc::SIGKILL);
                    let tidy = TimerAction::Tidy(job, TIDY_ATTEMPTS);
                    let _ = resend.send(Message::Schedule(now + Duration::from_millis(50), tidy));
                }
                TimerAction::Tidy(job, attempts) => {
                    if !job.remove_cgroup_if_done() && attempts > 0 {
                        let tidy = TimerAction::Tidy(job, attempts - 1);
                        let _ = resend.send(Message::Schedule(now + TIDY_EVERY, tidy));
                    }
                }
                TimerAction::Timeout(job, limit) => {
                    let Some(job) = job.upgrade() else {
                        continue;
                    };
                    if job.time_out(limit) {
                        // The caller's Kill path is reproduced here without the
                        // supervisor: TERM now (sent), KILL after the job's grace, and
                        // news of the change (a paused job runs again to hear its TERM).
                        notify(job.id(), News::State);
                        let grace = job.kill_grace();
                        let _ = resend.send(Message::Schedule(now + grace, TimerAction::Kill(job)));
                    }
                }
            }
        }
    }
}
