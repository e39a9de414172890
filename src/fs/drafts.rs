//! Drafts: `ctl/<name>` from its creation through writes, checks and closes to the
//! decision, and the start that turns a decided draft into `cmd/<name>`.

use super::names::{self, BadName, Dynamic};
use super::state::{Body, Command, Draft, Entry, Refusal, Run, State};
use super::types::{Attr, Errno, FsResult, Kind, OpenMode, Opened, MAX_COMMAND};
use super::Tree;
use crate::policy::{parse_directives, Directives, Verdict, NO_COMMAND_REASON};
use crate::supervisor::SpawnRequest;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// How much of a draft a check looks at.
#[derive(Clone, Copy)]
enum Check {
    Write,
    Close,
}

/// A draft's attributes: writable and empty-looking while it can be written (so the
/// kernel's append offset stays 0), read-only with its text once decided or refused.
pub(super) fn draft_attr(id: u64, draft: &Draft) -> Attr {
    let (size, perm) = if draft.start_at.is_none() && draft.refusal.is_none() {
        (0, 0o600)
    } else {
        (draft.text.len() as u64, 0o400)
    };
    Attr::new(names::entry_ino(id), Kind::File, size, perm, draft.modified)
}

impl Tree {
    pub fn create(&self, parent: u64, name: &[u8], mode: OpenMode) -> FsResult<(Attr, Opened)> {
        let OpenMode { write, append } = mode;
        let mut state = self.state.lock();
        if let Some(Dynamic::Entry(id)) = names::decode(parent) {
            if let Some(opened) = self.create_late_kill(&mut state, id, name) {
                return Ok(opened);
            }
        }
        if parent != names::CTL {
            return Err(Errno(
                if names::decode(parent).is_some() || super::fixed::children(parent).is_some() {
                    libc::EACCES
                } else {
                    libc::ENOENT
                },
            ));
        }
        let name = match names::check_name(name) {
            Ok(name) => name.to_string(),
            Err(BadName::Reserved) => return Err(Errno(libc::EEXIST)),
            Err(BadName::Invalid) => return Err(Errno(libc::EINVAL)),
        };
        if state.ctl.contains_key(&name) || state.cmd.contains_key(&name) {
            return Err(Errno(libc::EEXIST));
        }
        let id = state.take_id();
        let now = SystemTime::now();
        let draft = Draft {
            name: name.clone(),
            text: Vec::new(),
            writers: u32::from(write),
            flushed_after_write: false,
            start_at: None,
            refusal: None,
            checked_len: 0,
            passed_close: false,
            directives: Directives::default(),
            modified: now,
            touched: Instant::now(),
        };
        let attr = draft_attr(id, &draft);
        state.ctl.insert(name, id);
        state.entries.insert(id, Entry::Draft(draft));
        let fh = state.add_handle(Some(id), Body::Draft { write, append });
        Ok((
            attr,
            Opened {
                fh,
                direct_io: true,
            },
        ))
    }

    /// Changes a file's size or times. Only a draft that can still be written may be
    /// resized (a redirect truncates it first); `kill` accepts a truncation.
    pub fn setattr(&self, ino: u64, size: Option<u64>) -> FsResult<Attr> {
        let mut state = self.state.lock();
        match names::decode(ino) {
            Some(Dynamic::Entry(id)) => {
                if let Some(draft) = state.draft_mut(id) {
                    if let Some(size) = size {
                        if draft.start_at.is_some() || draft.refusal.is_some() {
                            return Err(Errno(libc::EACCES));
                        }
                        if size as usize > MAX_COMMAND {
                            return Err(Errno(libc::EFBIG));
                        }
                        draft.text.resize(size as usize, 0);
                        draft.passed_close = false;
                        draft.modified = SystemTime::now();
                    }
                    draft.touched = Instant::now();
                } else if size.is_some() {
                    return Err(Errno(libc::EISDIR));
                }
            }
            Some(Dynamic::File(_, slot)) => {
                if size.is_some() && slot != names::Slot::Kill {
                    return Err(Errno(libc::EACCES));
                }
            }
            None => {
                if size.is_some() {
                    return Err(Errno(libc::EACCES));
                }
            }
        }
        self.attr_locked(&state, ino)
    }

    /// A write through a draft's writing handle.
    pub(super) fn write_draft(
        &self,
        state: &mut State,
        owner: u64,
        append: bool,
        offset: u64,
        data: &[u8],
    ) -> FsResult<u32> {
        let Some(draft) = state.draft_mut(owner) else {
            // The draft was removed while open: the bytes go nowhere.
            return Ok(data.len() as u32);
        };
        // An appending writer's offset comes from a size that is 0 while the
        // draft can be written: appends go to the end of what is there.
        let start = if append {
            draft.text.len()
        } else {
            usize::try_from(offset).unwrap_or(usize::MAX)
        };
        let Some(end) = start
            .checked_add(data.len())
            .filter(|end| *end <= MAX_COMMAND)
        else {
            // The rest of the command is lost: never run the part that came.
            draft.refusal = Some(Refusal::plain(format!(
                "refused: the command is longer than {MAX_COMMAND} bytes"
            )));
            return Err(Errno(libc::EFBIG));
        };
        if draft.refusal.is_some() {
            return Err(Errno(libc::EPERM));
        }
        if draft.text.len() < end {
            draft.text.resize(end, 0);
        }
        draft.text[start..end].copy_from_slice(data);
        draft.modified = SystemTime::now();
        draft.touched = Instant::now();
        draft.flushed_after_write = false;
        draft.passed_close = false;
        if let Some(refusal) = self.check_draft(draft, Check::Write) {
            draft.refusal = Some(refusal);
            return Err(Errno(libc::EPERM));
        }
        Ok(data.len() as u32)
    }

    /// A close of one descriptor. Decides nothing (a redirect flushes before it
    /// writes, and a child that inherited the descriptor flushes when it exits), but
    /// fails the close when the text as it stands would be refused, so the writer sees
    /// a refusal that the decision will make.
    pub fn flush(&self, fh: u64) -> FsResult<()> {
        let mut state = self.state.lock();
        let Some(super::state::Handle {
            owner: Some(owner),
            body: Body::Draft { write: true, .. },
        }) = state.handles.get(&fh)
        else {
            return Ok(());
        };
        let owner = *owner;
        if let Some(draft) = state.draft_mut(owner) {
            if draft.refusal.is_some() || self.check_draft(draft, Check::Close).is_some() {
                return Err(Errno(libc::EPERM));
            }
            draft.passed_close = !draft.text.iter().all(u8::is_ascii_whitespace);
            if !draft.text.is_empty() {
                draft.flushed_after_write = true;
            }
        }
        Ok(())
    }

    /// Checks a draft's text so far. Writes check up to the last blank (a write may
    /// end inside a word: `su` of `sum`) and, past 64 KiB, only every 64 KiB of
    /// growth; a close checks everything. Whitespace alone is not refused here: more
    /// may come.
    fn check_draft(&self, draft: &mut Draft, check: Check) -> Option<Refusal> {
        const STEP: usize = 64 * 1024;
        if draft.text.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        if draft.text.contains(&0) {
            return Some(Refusal::plain(
                "refused: the command holds a NUL byte, which a shell would drop".to_string(),
            ));
        }
        let verdict = match check {
            Check::Write => {
                if draft.text.len() > STEP && draft.text.len() < draft.checked_len + STEP {
                    return None;
                }
                draft.checked_len = draft.text.len();
                self.policy.check_partial(&draft.text)
            }
            Check::Close => self.policy.check(&draft.text),
        };
        match verdict {
            Verdict::Deny { rule, reason } => Some(Refusal { rule, reason }),
            Verdict::Allow => None,
        }
    }

    /// The last close of a draft's writing handle: decide when it was the last writer.
    pub(super) fn release_writer(&self, state: &mut State, owner: u64) {
        let Some(draft) = state.draft_mut(owner) else {
            return;
        };
        draft.writers = draft.writers.saturating_sub(1);
        draft.touched = Instant::now();
        draft.flushed_after_write = false;
        if draft.writers == 0 && (!draft.text.is_empty() || draft.refusal.is_some()) {
            self.decide(state, owner);
        }
    }

    /// The last writer closed a draft with text in it: refuse it, or schedule its start.
    fn decide(&self, state: &mut State, id: u64) {
        let Some(draft) = state.draft_mut(id) else {
            return;
        };
        let text = String::from_utf8_lossy(&draft.text).into_owned();
        let refusal = if let Some(refusal) = draft.refusal.clone() {
            Some(refusal)
        } else if text.trim().is_empty() {
            Some(Refusal::plain(format!("refused: {NO_COMMAND_REASON}")))
        } else if let Some(refusal) = (!draft.passed_close)
            .then(|| self.check_draft(draft, Check::Close))
            .flatten()
        {
            Some(refusal)
        } else {
            match parse_directives(&text) {
                Ok(directives) => {
                    draft.directives = directives;
                    None
                }
                Err(reason) => Some(Refusal::plain(format!("refused: {reason}"))),
            }
        };
        match refusal {
            Some(Refusal { rule, reason }) => {
                let name = draft.name.clone();
                let text: Arc<[u8]> = std::mem::take(&mut draft.text).into();
                self.record("denied", &name, &text, rule.as_deref(), Some(&reason));
                state.ctl.remove(&name);
                state.entries.remove(&id);
                self.add_command(state, name, text, Run::Denied { reason }, self.config.keep);
            }
            None => {
                draft.start_at = Some(Instant::now() + self.config.settle);
            }
        }
    }

    fn record(
        &self,
        decision: &str,
        name: &str,
        text: &[u8],
        rule: Option<&str>,
        reason: Option<&str>,
    ) {
        if let Some(audit) = &self.audit {
            let command = String::from_utf8_lossy(text);
            let cwd = &self.supervisor.config().cwd;
            if let Err(error) = audit.record(name, &command, cwd, decision, rule, reason) {
                eprintln!("terminalfs: cannot write the audit log: {error}");
            }
        }
    }

    fn add_command(
        &self,
        state: &mut State,
        name: String,
        text: Arc<[u8]>,
        run: Run,
        keep: Duration,
    ) {
        let id = state.take_id();
        let now = SystemTime::now();
        state.cmd.insert(name.clone(), id);
        state.entries.insert(
            id,
            Entry::Command(Command {
                name,
                text,
                run,
                created: now,
                open: 0,
                idle_since: now,
                pinned: false,
                hidden: 0,
                listed: true,
                keep,
                views: HashMap::new(),
            }),
        );
    }

    /// Starts a decided draft now: it leaves `ctl/` and appears under `cmd/`.
    pub(super) fn start_draft(&self, state: &mut State, id: u64) {
        let Some(Entry::Draft(draft)) = state.entries.remove(&id) else {
            return;
        };
        state.ctl.remove(&draft.name);
        let directives = draft.directives;
        let text: Arc<[u8]> = draft.text.into();
        let job = self.supervisor.spawn(SpawnRequest {
            name: draft.name.clone(),
            text: text.clone(),
            timeout: directives.timeout.or(self.config.timeout),
            memory: directives.memory,
        });
        self.record("ran", &draft.name, &text, None, None);
        let keep = directives.keep.unwrap_or(self.config.keep);
        self.add_command(state, draft.name, text, Run::Job(job), keep);
    }

    pub(super) fn start_all_decided(&self, state: &mut State) {
        let decided: Vec<u64> = state
            .ctl
            .values()
            .filter(
                |id| matches!(state.entries.get(id), Some(Entry::Draft(d)) if d.start_at.is_some()),
            )
            .copied()
            .collect();
        for id in decided {
            self.start_draft(state, id);
        }
    }

    /// `rm ctl/<name>`: takes back a draft that has not been decided.
    pub(super) fn unlink_draft(&self, state: &mut State, name: &[u8]) -> FsResult<()> {
        let name = std::str::from_utf8(name).map_err(|_| Errno(libc::ENOENT))?;
        let id = *state.ctl.get(name).ok_or(Errno(libc::ENOENT))?;
        if let Some(Entry::Draft(draft)) = state.entries.get(&id) {
            if draft.start_at.is_some() {
                // Decided: it is about to run and can no longer be taken back.
                return Err(Errno(libc::EBUSY));
            }
        }
        state.ctl.remove(name);
        state.entries.remove(&id);
        Ok(())
    }

    pub fn rename(
        &self,
        parent: u64,
        name: &[u8],
        new_parent: u64,
        new_name: &[u8],
    ) -> FsResult<()> {
        let mut state = self.state.lock();
        if parent != names::CTL || new_parent != names::CTL {
            if parent == names::CTL || new_parent == names::CTL {
                return Err(Errno(libc::EXDEV));
            }
            return Err(Errno(libc::EPERM));
        }
        if name == b"index.md" || new_name == b"index.md" {
            return Err(Errno(libc::EPERM));
        }
        let old = std::str::from_utf8(name).map_err(|_| Errno(libc::ENOENT))?;
        let id = *state.ctl.get(old).ok_or(Errno(libc::ENOENT))?;
        let new = match names::check_name(new_name) {
            Ok(new) => new.to_string(),
            Err(BadName::Reserved) => return Err(Errno(libc::EPERM)),
            Err(BadName::Invalid) => return Err(Errno(libc::EINVAL)),
        };
        if new == old {
            return Ok(());
        }
        if state.ctl.contains_key(&new) || state.cmd.contains_key(&new) {
            return Err(Errno(libc::EEXIST));
        }
        state.ctl.remove(old);
        state.ctl.insert(new.clone(), id);
        if let Some(draft) = state.draft_mut(id) {
            draft.name = new;
            draft.modified = SystemTime::now();
        }
        Ok(())
    }
}
