//! Decide under the lock, act after it. Tree operations decide what must happen while
//! they hold the tree lock and leave it here as [`Effect`]s; the effects run once the
//! lock is released, so no request waits behind a fork, a signal, a cgroup write or
//! an audit line of another.
//!
//! Spawns are queued in the state and run by [`Tree::start_until`], on a thread of
//! the caller's choosing that serves no request of the mount (a start may open its
//! stderr file through it); a command waiting for its spawn is [`Run::Starting`] and
//! lookups under it are answered once its job exists.

use super::state::{Entry, Handle, Run, State};
use super::Tree;
use crate::supervisor::capture::{Access, Caller};
use crate::supervisor::{Job, SpawnRequest, Supervisor};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// Starts and stops commands for the tree. The supervisor is the real one; tests of
/// the tree use a fake that records what it was asked.
pub trait Spawner: Send + Sync {
    /// Starts a command; never fails (a command that cannot start is a job that has
    /// stopped, with the reason on its stderr).
    fn spawn(&self, request: SpawnRequest) -> Arc<Job>;
    /// Stops a job (SIGTERM, then SIGKILL after a grace); nothing for a stopped one.
    fn kill(&self, job: &Arc<Job>, why: &str);
    /// Sends one signal to the whole of a running job; nothing for a stopped one.
    fn signal(&self, job: &Arc<Job>, signal: i32);
    /// The shell commands run in, for the pages.
    fn shell(&self) -> &Path;
    /// The directory commands run in, for the pages and the audit log.
    fn cwd(&self) -> &Path;
    /// Commands' stderr files (`stderr.rs`): a lookup of job `id`'s by name, by
    /// `caller`. A spawner that hands out no such files keeps the defaults: none exist.
    fn stderr_lookup(&self, _id: u64, _caller: Caller) -> Access {
        Access::Unknown
    }
    /// An open of job `id`'s stderr file by `caller`.
    fn stderr_open(&self, _id: u64, _caller: Caller) -> Access {
        Access::Unknown
    }
    /// A write to job `id`'s stderr file; false when it has none.
    fn stderr_write(&self, _id: u64, _bytes: &[u8]) -> bool {
        false
    }
    /// The release of one open of job `id`'s stderr file.
    fn stderr_release(&self, _id: u64) {}
    /// Nothing is queued to start. `coming`: a draft is being written, so ready what
    /// its start needs, off its path; else let go of what was readied.
    fn prepare(&self, _coming: bool) {}
}

impl Spawner for Supervisor {
    fn spawn(&self, request: SpawnRequest) -> Arc<Job> {
        Supervisor::spawn(self, request)
    }

    fn kill(&self, job: &Arc<Job>, why: &str) {
        Supervisor::kill(self, job, why)
    }

    fn signal(&self, job: &Arc<Job>, signal: i32) {
        Supervisor::signal(self, job, signal)
    }

    fn shell(&self) -> &Path {
        &self.config().shell
    }

    fn cwd(&self) -> &Path {
        &self.config().cwd
    }

    fn stderr_lookup(&self, id: u64, caller: Caller) -> Access {
        Supervisor::stderr_lookup(self, id, caller)
    }

    fn stderr_open(&self, id: u64, caller: Caller) -> Access {
        Supervisor::stderr_open(self, id, caller)
    }

    fn stderr_write(&self, id: u64, bytes: &[u8]) -> bool {
        Supervisor::stderr_write(self, id, bytes)
    }

    fn stderr_release(&self, id: u64) {
        Supervisor::stderr_release(self, id)
    }

    fn prepare(&self, coming: bool) {
        if coming {
            Supervisor::prepare(self)
        } else {
            Supervisor::unprepare(self)
        }
    }
}

/// Callbacks the tree calls after releasing its lock.
pub struct Hooks {
    /// Something a parked lookup may be waiting for happened (a decision, a spawn).
    pub changed: Box<dyn Fn() + Send + Sync>,
    /// Spawns were queued, or a draft came or went: call [`Tree::start_until`] soon,
    /// off the request thread.
    pub start_wanted: Box<dyn Fn() + Send + Sync>,
}

/// One thing to do once the tree lock is released.
pub(super) enum Effect {
    Kill {
        job: Arc<Job>,
        why: &'static str,
    },
    Audit {
        decision: &'static str,
        name: String,
        text: Arc<[u8]>,
        rule: Option<String>,
        reason: Option<String>,
    },
    /// Dropped outside the lock: the last reference to a job drops its cgroup, which
    /// removes a directory.
    Discard(Discarded),
    /// The ticker should look at the queue of starts soon: a spawn was queued, or
    /// what it readies for the next start is wanted or no longer wanted.
    StartWanted,
    Changed,
}

pub(super) enum Discarded {
    Entry(#[allow(dead_code)] Entry),
    Handle(#[allow(dead_code)] Handle),
}

/// What one operation leaves to do after the lock.
#[derive(Default)]
pub(super) struct Effects(Vec<Effect>);

impl Effects {
    pub fn push(&mut self, effect: Effect) {
        self.0.push(effect);
    }

    pub fn discard_entry(&mut self, entry: Option<Entry>) {
        if let Some(entry) = entry {
            self.0.push(Effect::Discard(Discarded::Entry(entry)));
        }
    }
}

impl Tree {
    /// Runs `operation` under the tree lock, then what it left to do.
    pub(super) fn locked<T>(&self, operation: impl FnOnce(&mut State, &mut Effects) -> T) -> T {
        let mut effects = Effects::default();
        let result = {
            let mut state = self.state.lock();
            operation(&mut state, &mut effects)
        };
        self.perform(effects);
        result
    }

    pub(super) fn perform(&self, effects: Effects) {
        for effect in effects.0 {
            match effect {
                Effect::Kill { job, why } => self.spawner.kill(&job, why),
                Effect::Audit {
                    decision,
                    name,
                    text,
                    rule,
                    reason,
                } => {
                    // A refused command text is one line of the log at every level.
                    if let Some(reason) = &reason {
                        crate::log::info(&format!("refused ctl/{name}: {reason}"));
                    }
                    self.record(decision, &name, &text, rule.as_deref(), reason.as_deref())
                }
                Effect::Discard(discarded) => drop(discarded),
                Effect::StartWanted => {
                    if let Some(hooks) = self.hooks.get() {
                        (hooks.start_wanted)();
                    }
                }
                Effect::Changed => {
                    if let Some(hooks) = self.hooks.get() {
                        (hooks.changed)();
                    }
                }
            }
        }
    }

    /// Sets the callbacks; the first call wins.
    pub fn set_hooks(&self, hooks: Hooks) {
        let _ = self.hooks.set(hooks);
    }

    /// Runs every queued spawn (see [`Tree::start_until`]).
    #[cfg(test)]
    pub fn start_pending(&self) {
        self.start_until(None);
    }

    /// Runs queued spawns, one at a time and each outside the lock, and gives each job
    /// to its command (or stops it, if its directory went meanwhile), until the queue
    /// is empty or, after one spawn at least, `until` has passed. Returns whether
    /// spawns are left: a long queue gives way to the clock (drafts whose settle time
    /// is over leave `ctl/` at its tick), then goes on.
    pub fn start_until(&self, until: Option<Instant>) -> bool {
        loop {
            let (next, coming) = {
                let mut state = self.state.lock();
                (state.starts.pop_front(), state.drafts_coming())
            };
            let Some((id, request)) = next else {
                self.spawner.prepare(coming);
                return false;
            };
            let (name, text) = (request.name.clone(), request.text.clone());
            let cwd = request.cwd.clone();
            let job = self.spawner.spawn(request);
            self.locked(|state, effects| {
                if job.input().is_some() {
                    state.inputs.insert(id);
                }
                match state.command_mut(id) {
                    Some(command) => {
                        command.run = Run::Job(job.clone());
                        if !command.listed {
                            job.store().remove();
                            effects.push(Effect::Kill {
                                job,
                                why: "killed: its directory was removed",
                            });
                        }
                    }
                    None => {
                        job.store().remove();
                        effects.push(Effect::Kill {
                            job,
                            why: "killed: its directory was removed",
                        })
                    }
                }
                effects.push(Effect::Changed);
            });
            // After the lookups parked for it have their answer.
            let cwd = cwd.as_deref().unwrap_or(self.spawner.cwd());
            self.record_in(cwd, "ran", &name, &text, None, None);
            if until.is_some_and(|until| Instant::now() >= until) {
                return !self.state.lock().starts.is_empty();
            }
        }
    }

    /// Appends a decision to the audit log; a failure goes to the log, not the user.
    pub(super) fn record(
        &self,
        decision: &str,
        name: &str,
        text: &[u8],
        rule: Option<&str>,
        reason: Option<&str>,
    ) {
        self.record_in(self.spawner.cwd(), decision, name, text, rule, reason);
    }

    /// [`Tree::record`] of a command that runs in `cwd` (its `cwd=` directive's).
    fn record_in(
        &self,
        cwd: &std::path::Path,
        decision: &str,
        name: &str,
        text: &[u8],
        rule: Option<&str>,
        reason: Option<&str>,
    ) {
        if let Some(audit) = &self.audit {
            let command = String::from_utf8_lossy(text);
            if let Err(error) = audit.record(name, &command, cwd, decision, rule, reason) {
                crate::log::info(&format!("cannot write the audit log: {error}"));
            }
        }
    }
}

/// Queues the spawn of a decided draft's command.
pub(super) fn queue_start(
    state: &mut State,
    effects: &mut Effects,
    id: u64,
    request: SpawnRequest,
) {
    state.starts.push_back((id, request));
    effects.push(Effect::StartWanted);
}

/// Moves a queued spawn to the front of the queue: something waits for that command,
/// and a burst of commands queued before it must not make the wait run out.
pub(super) fn hurry_start(state: &mut State, id: u64) {
    if let Some(at) = state.starts.iter().position(|(queued, _)| *queued == id) {
        if let Some(start) = state.starts.remove(at) {
            state.starts.push_front(start);
        }
    }
}
