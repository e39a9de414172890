//! The tree's clock: one thread ("tfs-ticker") that does the tree's slow work off the
//! request threads: the spawns the tree queues (at once when asked), the periodic
//! look at drafts and inputs (settle, abandoned drafts), the sweep of every command
//! (keep times, evictions), and readying the next start while a draft is written (it
//! opens a file of this mount, so never on a thread that serves it).

use super::Tree;
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the clock looks at drafts and inputs.
const TICK: Duration = Duration::from_millis(50);
/// How often it looks at every command (keep times, evictions) rather than at drafts
/// and inputs alone: a look that takes each job's lock in turn.
const SWEEP: Duration = Duration::from_secs(1);

/// News for the clock.
enum Tick {
    /// The tree queued spawns.
    Start,
    Stop,
}

/// The running clock; stopped when dropped.
pub struct Clock {
    sender: Sender<Tick>,
    thread: Option<JoinHandle<()>>,
}

impl Clock {
    /// Starts the clock's thread on `tree`.
    pub fn start(tree: Arc<Tree>) -> std::io::Result<Clock> {
        let (sender, receiver) = crossbeam_channel::unbounded();
        let thread = std::thread::Builder::new()
            .name("tfs-ticker".into())
            .spawn(move || run(&tree, &receiver))?;
        Ok(Clock {
            sender,
            thread: Some(thread),
        })
    }

    /// What the tree calls when it wants its queued spawns run soon
    /// ([`super::Hooks::start_wanted`]).
    pub fn starter(&self) -> Box<dyn Fn() + Send + Sync> {
        let sender = self.sender.clone();
        Box::new(move || {
            let _ = sender.send(Tick::Start);
        })
    }

    /// Stops the thread and waits for it.
    pub fn stop(&mut self) {
        let _ = self.sender.send(Tick::Stop);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Clock {
    fn drop(&mut self) {
        self.stop();
    }
}

fn run(tree: &Tree, ticks: &Receiver<Tick>) {
    let mut last_tick = Instant::now();
    let mut last_sweep = last_tick;
    let mut more = false;
    loop {
        // Spawns left by a long queue go on at once, after the clock's tick.
        let wait = if more { Duration::ZERO } else { TICK };
        match ticks.recv_timeout(wait) {
            Ok(Tick::Stop) | Err(RecvTimeoutError::Disconnected) => return,
            Ok(Tick::Start) | Err(RecvTimeoutError::Timeout) => {}
        }
        crate::panics::thread_turn("ticker");
        if crate::panics::broken() {
            // Nothing more is started or ticked from a half-updated tree.
            more = false;
            continue;
        }
        // Starts asked for go first: a tick may take a while with many commands.
        more = tree.start_until(Some(last_tick + TICK));
        if last_tick.elapsed() >= TICK {
            last_tick = Instant::now();
            if last_sweep.elapsed() >= SWEEP {
                last_sweep = last_tick;
                tree.tick();
            } else {
                tree.tick_drafts();
            }
        }
    }
}
