//! Drafts: `ctl/<name>` from its creation through writes, checks and closes to the
//! decision, and the start that turns a decided draft into `cmd/<name>`.

use super::effects::{queue_start, Effect, Effects};
use super::names::{self, BadName, Dynamic};
use super::state::{named, Body, Command, Draft, Entry, Refusal, Run, Stage, State};
use super::types::{Attr, Error, FsResult, Kind, OpenMode, Opened, MAX_COMMAND};
use super::Tree;
use crate::policy::{plain_refusal, Directives, Input, Verdict, NO_COMMAND_REASON};
use crate::supervisor::{SpawnRequest, Stdin};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// Writes check up to the last blank and, past this size, only every this much growth.
const CHECK_STEP: usize = 64 * 1024;

/// A draft's attributes: writable and empty-looking while it can be written (so the
/// kernel's append offset stays 0), read-only with its text once decided or refused.
pub(super) fn draft_attr(id: u64, draft: &Draft) -> Attr {
    let (size, perm) = if draft.writable() {
        (0, 0o600)
    } else {
        (draft.text.len() as u64, 0o400)
    };
    Attr::new(names::entry_ino(id), Kind::File, size, perm, draft.modified)
}

/// What a write can decide at once, under the lock: nothing but blanks is not judged
/// (more may come), a NUL byte is refused (see [`plain_refusal`]).
fn quick_refusal(text: &[u8]) -> Result<(), Option<Refusal>> {
    if text.iter().all(u8::is_ascii_whitespace) {
        return Err(None);
    }
    match plain_refusal(text) {
        Some(reason) => Err(Some(Refusal::plain(reason.to_owned()))),
        None => Ok(()),
    }
}

/// The refusal of text that holds no command (nothing but blanks).
fn no_command() -> Refusal {
    Refusal::plain(NO_COMMAND_REASON.to_owned())
}

/// What a whole command decides: how it starts (its `#terminalfs` lines, and whether a
/// shell reads its input), or why it is refused.
type Decision = Result<(Directives, bool), Refusal>;

impl Tree {
    /// A verdict on `text` as a refusal, if it is one: with EINVAL when its
    /// `#terminalfs` lines refuse it (the text reads wrong), else EPERM.
    fn refusal_of(&self, verdict: Verdict, text: &[u8]) -> Option<Refusal> {
        match verdict {
            Verdict::Deny { rule, reason } => {
                let invalid = rule.is_none()
                    && plain_refusal(text).is_none()
                    && self
                        .policy
                        .directives(&String::from_utf8_lossy(text))
                        .is_err();
                Some(Refusal {
                    rule,
                    reason,
                    errno: if invalid { libc::EINVAL } else { libc::EPERM },
                })
            }
            Verdict::Allow => None,
        }
    }
}

/// How many refused names `ctl/index.md` lists.
const REFUSALS_KEPT: usize = 10;

/// Remembers a name refused at `ctl/` (or a write refused at `cmd/<name>/stdin`) for
/// `ctl/index.md`, where a writer whose shell said only "File exists" (or "File too
/// large") can read why. The same refusal again only moves to now.
pub(super) fn note_refusal(state: &mut State, name: &str, why: &str) {
    if let Some(last) = state.refusals.back_mut() {
        if last.1 == name && last.2 == why {
            last.0 = SystemTime::now();
            return;
        }
    }
    if state.refusals.len() == REFUSALS_KEPT {
        state.refusals.pop_front();
    }
    state
        .refusals
        .push_back((SystemTime::now(), name.to_string(), why.to_string()));
}

impl Tree {
    /// [`note_refusal`] from outside the tree lock.
    pub(super) fn note_refusal(&self, name: &str, why: &str) {
        note_refusal(&mut self.state.lock(), name, why);
    }
}

/// A name for a new draft, checked; `reserved` is the errno for `index.md`.
fn new_name_of(name: &[u8], reserved: i32) -> FsResult<String> {
    match names::check_draft_name(name) {
        Ok(name) => Ok(name.to_string()),
        Err(BadName::Reserved) => Err(Error::new(reserved, "index.md is the directory's page")),
        Err(BadName::Invalid) => Err(Error::new(
            libc::EINVAL,
            "a command name is 1 to 64 of A-Z a-z 0-9 _ . - and does not start with a dot \
             (a hidden draft, which runs only once renamed, is a dot and 1 to 63 of them)",
        )),
    }
}

impl Tree {
    pub fn create(&self, parent: u64, name: &[u8], mode: OpenMode) -> FsResult<(Attr, Opened)> {
        let OpenMode { write, append } = mode;
        self.locked(|state, effects| {
            if let Some(Dynamic::Entry(id)) = names::decode(parent) {
                if let Some(created) = self.create_late(state, id, name) {
                    return created;
                }
            }
            if parent != names::CTL {
                return Err(
                    if names::decode(parent).is_some() || super::fixed::children(parent).is_some() {
                        Error::new(libc::EACCES, "commands are created only in ctl/")
                    } else {
                        Error::new(libc::ENOENT, "no such directory")
                    },
                );
            }
            // Logged at every level: the shell's "Invalid argument" says too little.
            let refused = |state: &mut State, error: Error| {
                note_refusal(state, &String::from_utf8_lossy(name), &error.reason);
                Err(Error::loud(error.errno, error.reason))
            };
            let name = match new_name_of(name, libc::EEXIST) {
                Ok(name) => name,
                Err(error) => return refused(state, error),
            };
            if state.cmd.contains_key(&name) {
                let why = format!("`{name}` already exists: `rm -r cmd/{name}` to reuse the name");
                return refused(state, Error::new(libc::EEXIST, why));
            }
            if state.ctl.contains_key(&name) {
                let why = format!("`{name}` is being written already: choose another name");
                return refused(state, Error::new(libc::EEXIST, why));
            }
            let id = state.take_id();
            let draft = Draft {
                name: name.clone(),
                text: Vec::new(),
                version: 0,
                modified: SystemTime::now(),
                touched: Instant::now(),
                stage: Stage::Writing {
                    writers: u32::from(write),
                    flushed: false,
                    checked_len: 0,
                    passed: None,
                },
            };
            let attr = draft_attr(id, &draft);
            state.ctl.insert(name, id);
            state.entries.insert(id, Entry::Draft(draft));
            let fh = state.add_handle(Some(id), Body::Draft { write, append });
            // A command is on its way: the ticker readies its start meanwhile.
            effects.push(Effect::StartWanted);
            Ok((
                attr,
                Opened {
                    fh,
                    direct_io: true,
                    flush: write,
                },
            ))
        })
    }

    /// Changes a file's size or times. Only a draft that can still be written may be
    /// resized (a redirect truncates it first); `kill`, `stdin` and `keys` accept a truncation.
    /// A change of mode or owner (`owner`) is taken on a draft and changes nothing, so
    /// `mv`, `cp -p` and `install` into `ctl/` are quiet; anywhere else it is EPERM.
    pub fn setattr(&self, ino: u64, size: Option<u64>, owner: bool) -> FsResult<Attr> {
        let mut state = self.state.lock();
        let draft = match names::decode(ino) {
            Some(Dynamic::Entry(id)) => matches!(state.entries.get(&id), Some(Entry::Draft(_))),
            _ => false,
        };
        if owner && !draft {
            return Err(Error::new(
                libc::EPERM,
                "modes and owners are fixed here; only a draft in ctl/ takes (and ignores) them",
            ));
        }
        match names::decode(ino) {
            Some(Dynamic::Entry(id)) => {
                if let Some(draft) = state.draft_mut(id) {
                    if let Some(size) = size {
                        if !draft.writable() {
                            return Err(Error::new(
                                libc::EACCES,
                                "the draft was decided or refused and can no longer be changed",
                            ));
                        }
                        if size as usize > MAX_COMMAND {
                            return Err(Error::new(libc::EFBIG, "a command is at most 1 MiB"));
                        }
                        draft.text.resize(size as usize, 0);
                        let flushed = match draft.stage {
                            Stage::Writing { flushed, .. } => flushed,
                            _ => false,
                        };
                        draft.changed();
                        // A truncation is no write: a close already seen still counts.
                        if let Stage::Writing { flushed: f, .. } = &mut draft.stage {
                            *f = flushed;
                        }
                    }
                    draft.touched = Instant::now();
                } else if size.is_some() {
                    return Err(Error::new(
                        libc::EISDIR,
                        "only a draft in ctl/ can be truncated",
                    ));
                }
            }
            Some(Dynamic::File(_, slot)) => {
                if size.is_some() && !super::slots::row_of(slot).how.is_written() {
                    return Err(Error::new(
                        libc::EACCES,
                        "only kill, stdin and keys can be truncated under cmd/<name>/",
                    ));
                }
            }
            None => {
                if size.is_some() {
                    return Err(Error::new(
                        libc::EACCES,
                        "fixed files and directories cannot be resized",
                    ));
                }
            }
        }
        self.attr_locked(&state, ino)
    }

    /// A write through a draft's writing handle. The bytes go in under the lock; the
    /// check of the text so far (bounded: see [`CHECK_STEP`]) runs after it.
    pub(super) fn write_draft(
        &self,
        owner: u64,
        append: bool,
        offset: u64,
        data: &[u8],
    ) -> FsResult<u32> {
        let written = data.len() as u32;
        let due = {
            let mut state = self.state.lock();
            let Some(draft) = state.draft_mut(owner) else {
                // The draft was removed while open: the bytes go nowhere.
                return Ok(written);
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
                refuse(
                    draft,
                    Refusal::plain(format!(
                        "refused: the command is longer than {MAX_COMMAND} bytes"
                    )),
                );
                return Err(Error::new(
                    libc::EFBIG,
                    "the command is longer than 1 MiB and will not run",
                ));
            };
            if !draft.writable() {
                return Err(Error::new(libc::EPERM, "an earlier write was refused or the draft was decided; it takes no more writes"));
            }
            if draft.text.len() < end {
                draft.text.resize(end, 0);
            }
            draft.text[start..end].copy_from_slice(data);
            draft.changed();
            match quick_refusal(&draft.text) {
                Err(None) => return Ok(written),
                Err(Some(refusal)) => {
                    let error = Error::new(refusal.errno, refusal.reason.clone());
                    refuse(draft, refusal);
                    return Err(error);
                }
                Ok(()) => {}
            }
            let len = draft.text.len();
            let Stage::Writing { checked_len, .. } = &mut draft.stage else {
                return Ok(written);
            };
            if len > CHECK_STEP && len < *checked_len + CHECK_STEP {
                return Ok(written);
            }
            *checked_len = len;
            (draft.version, draft.text.clone())
        };
        let (version, text) = due;
        let Some(refusal) = self.write_refusal(&text) else {
            return Ok(written);
        };
        let mut state = self.state.lock();
        match state.draft_mut(owner) {
            // Refused as it stood after this write; a later change is checked anew.
            Some(draft) if draft.version == version => {
                let error = Error::new(refusal.errno, refusal.reason.clone());
                refuse(draft, refusal);
                Err(error)
            }
            _ => Ok(written),
        }
    }

    /// A close of one descriptor. Decides nothing (a redirect flushes before it
    /// writes, and a child that inherited the descriptor flushes when it exits), but
    /// fails the close when the text as it stands would be refused, so the writer sees
    /// a refusal that the decision will make. The check runs outside the lock.
    pub fn flush(&self, fh: u64) -> FsResult<()> {
        let (owner, version, text) = {
            let mut state = self.state.lock();
            let Some(super::state::Handle {
                owner: Some(owner),
                body: Body::Draft { write: true, .. },
            }) = state.handles.get(&fh)
            else {
                return Ok(());
            };
            let owner = *owner;
            let Some(draft) = state.draft_mut(owner) else {
                return Ok(());
            };
            if !draft.writable() {
                return match &mut draft.stage {
                    Stage::Refused {
                        flushed, refusal, ..
                    } => {
                        // A lookup under cmd/ now waits for the last close, as after
                        // any close that follows the last write.
                        *flushed = true;
                        let errno = refusal.errno;
                        draft.touched = Instant::now();
                        Err(Error::new(errno, "an earlier write was refused"))
                    }
                    _ => Ok(()),
                };
            }
            (owner, draft.version, draft.text.clone())
        };
        // An empty draft is not refused: a shell's redirect closes it before it writes.
        let decision = (!text.is_empty()).then(|| self.decision(&text));
        let mut state = self.state.lock();
        if let Some(draft) = state.draft_mut(owner) {
            if draft.version == version {
                let empty = draft.text.is_empty();
                if let Stage::Writing {
                    flushed, passed, ..
                } = &mut draft.stage
                {
                    if let Some(Ok((directives, shell_input))) = &decision {
                        *passed = Some((version, directives.clone(), *shell_input));
                    }
                    if !empty {
                        *flushed = true;
                        draft.touched = Instant::now();
                    }
                }
            }
        }
        match decision {
            Some(Err(refusal)) => Err(Error::new(refusal.errno, refusal.reason)),
            _ => Ok(()),
        }
    }

    /// The refusal a write's check of `text` gives, if any: of what no later write can
    /// change (see [`crate::policy::Policy::check_partial`]).
    fn write_refusal(&self, text: &[u8]) -> Option<Refusal> {
        if let Err(refusal) = quick_refusal(text) {
            return refusal;
        }
        self.refusal_of(self.policy.check_partial(text), text)
    }

    /// The decision on a whole command, the one `terminalfs check` prints: the close's
    /// check and the last close both ask this, so a close fails for every refusal the
    /// decision makes.
    fn decision(&self, text: &[u8]) -> Decision {
        let explained = self.policy.explain(text);
        match self.refusal_of(explained.verdict, text) {
            Some(refusal) => Err(refusal),
            None => Ok((explained.directives, explained.shell_input.is_some())),
        }
    }

    /// The last close of a draft's writing handle. When it was the last writer and
    /// text came, the draft is decided: at once when a close already checked this
    /// very text (or a write was refused), else after a whole check outside the lock.
    pub(super) fn release_writer(&self, owner: u64) {
        let due = self.locked(|state, effects| {
            let draft = state.draft_mut(owner)?;
            draft.touched = Instant::now();
            let version = draft.version;
            let (writers, passed) = match &mut draft.stage {
                Stage::Writing {
                    writers,
                    flushed,
                    passed,
                    ..
                } => {
                    *flushed = false;
                    (
                        writers,
                        passed
                            .as_ref()
                            .filter(|passed| passed.0 == version)
                            .cloned(),
                    )
                }
                Stage::Refused { writers, .. } => (writers, None),
                Stage::Deciding | Stage::Decided { .. } => return None,
            };
            *writers = writers.saturating_sub(1);
            if *writers > 0 {
                return None;
            }
            if let Stage::Refused { refusal, .. } = &draft.stage {
                let refusal = refusal.clone();
                self.conclude(state, effects, owner, Err(refusal));
                return None;
            }
            if draft.text.is_empty() {
                // Closed with nothing in it (`touch`): no start is coming for now.
                effects.push(Effect::StartWanted);
                return None;
            }
            if let Some((_, directives, shell_input)) = passed {
                self.conclude(state, effects, owner, Ok((directives, shell_input)));
                return None;
            }
            if draft.text.iter().all(u8::is_ascii_whitespace) {
                self.conclude(state, effects, owner, Err(no_command()));
                return None;
            }
            draft.stage = Stage::Deciding;
            Some((version, draft.text.clone()))
        });
        let Some((version, text)) = due else {
            return;
        };
        let decision = self.decision(&text);
        self.locked(|state, effects| {
            if state
                .draft_mut(owner)
                .is_some_and(|draft| draft.version == version)
            {
                self.conclude(state, effects, owner, decision);
            }
            effects.push(Effect::Changed);
        });
    }

    /// Decides a draft whose text has been checked (`decision` is what the check
    /// found): refused, it becomes a denied command now; accepted, it is scheduled.
    fn conclude(&self, state: &mut State, effects: &mut Effects, id: u64, decision: Decision) {
        let Some(draft) = state.draft_mut(id) else {
            return;
        };
        match decision {
            Ok((directives, shell_input)) => {
                draft.stage = Stage::Decided {
                    start_at: self.start_at(&draft.name),
                    directives,
                    shell_input,
                };
            }
            Err(Refusal { rule, reason, .. }) => {
                let name = draft.name.clone();
                let text: Arc<[u8]> = std::mem::take(&mut draft.text).into();
                // Listed on ctl/index.md too, where a writer looks after a failed close.
                note_refusal(state, &name, &reason);
                effects.push(Effect::Audit {
                    decision: "denied",
                    name: name.clone(),
                    text: text.clone(),
                    rule,
                    reason: Some(reason.clone()),
                });
                state.ctl.remove(&name);
                effects.discard_entry(state.entries.remove(&id));
                let store = self.spool.get().map(|spool| {
                    let meta = serde_json::json!({
                        "name": name,
                        "denied": reason,
                        "created_ms": epoch_ms(SystemTime::now()),
                    });
                    spool.keep_record(&name, &text, meta)
                });
                let run = Run::Denied { reason, store };
                self.add_command(state, name, text, run, self.config.keep, None);
                // No start follows: the ticker lets go of what it readied for one now,
                // not a tick later (a readied file keeps `fusermount3 -u` from working).
                effects.push(Effect::StartWanted);
            }
        }
    }

    /// Adds `cmd/<name>`, its `--keep` clock starting now.
    pub(super) fn add_command(
        &self,
        state: &mut State,
        name: String,
        text: Arc<[u8]>,
        run: Run,
        keep: Duration,
        script: Option<Arc<Mutex<Vec<u8>>>>,
    ) -> u64 {
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
                remover: None,
                listed: true,
                keep,
                views: HashMap::new(),
                script,
            }),
        );
        id
    }

    /// When a draft decided now under `name` starts on its own: after the settle time,
    /// or never under a temporary name (a rename gives it its start).
    fn start_at(&self, name: &str) -> Option<Instant> {
        (!names::is_temporary(name)).then(|| Instant::now() + self.config.settle)
    }

    /// Starts a decided draft: it leaves `ctl/` and appears under `cmd/` at once, as
    /// a command whose spawn is queued (see [`Tree::start_until`]). One under a
    /// temporary name does not start.
    pub(super) fn start_draft(&self, state: &mut State, effects: &mut Effects, id: u64) {
        if !matches!(
            state.entries.get(&id),
            Some(Entry::Draft(Draft {
                stage: Stage::Decided {
                    start_at: Some(_),
                    ..
                },
                ..
            }))
        ) {
            return;
        }
        let Some(Entry::Draft(draft)) = state.entries.remove(&id) else {
            return;
        };
        let Stage::Decided {
            directives,
            shell_input,
            ..
        } = draft.stage
        else {
            return;
        };
        state.ctl.remove(&draft.name);
        let text: Arc<[u8]> = draft.text.into();
        let request = SpawnRequest {
            name: draft.name.clone(),
            text: text.clone(),
            // `--timeout` bounds every command: a directive may only shorten it.
            timeout: directives
                .timeout
                .into_iter()
                .chain(self.config.timeout)
                .min(),
            memory: directives.memory,
            cwd: directives.cwd,
            stdin: match directives.input {
                Input::Closed => Stdin::Closed,
                Input::Pipe => Stdin::Pipe,
                Input::Terminal(size) => Stdin::Terminal(size),
            },
            sandbox: self.policy.sandbox_mode(directives.sandbox),
            // Judged at the decision; an edit of the settings since may have taken it
            // away, and then the command does not run here instead.
            host: directives.host.as_deref().map(|name| {
                self.policy.rules().hosts.get(name).cloned().ok_or_else(|| {
                    format!("host {name} is no longer in the settings file; nothing ran")
                })
            }),
        };
        let keep = directives.keep.unwrap_or(self.config.keep);
        let script = shell_input.then(Default::default);
        let command = self.add_command(state, draft.name, text, Run::Starting, keep, script);
        queue_start(state, effects, command, request);
    }

    pub(super) fn start_all_decided(&self, state: &mut State, effects: &mut Effects) {
        let decided: Vec<u64> = state
            .ctl
            .values()
            .filter(|id| {
                matches!(
                    state.entries.get(id),
                    Some(Entry::Draft(Draft {
                        stage: Stage::Decided { .. },
                        ..
                    }))
                )
            })
            .copied()
            .collect();
        for id in decided {
            self.start_draft(state, effects, id);
        }
    }

    /// `rm ctl/<name>`: takes back a draft that has not been decided.
    pub(super) fn unlink_draft(
        &self,
        state: &mut State,
        effects: &mut Effects,
        name: &[u8],
    ) -> FsResult<()> {
        // Still a draft, even decided and waiting out the settle time: it has not
        // started, so it can be taken back and nothing runs. (A decision under way
        // finds no draft and does nothing; a parked lookup looks again.)
        let (name, id) = named(&state.ctl, name, "no draft of that name")?;
        let name = name.to_owned();
        let mut refused = None;
        if let Some(Entry::Draft(draft)) = state.entries.get(&id) {
            // A refused attempt is audited even when its draft goes before its last
            // close would have decided it.
            if let Stage::Refused { refusal, .. } = &draft.stage {
                refused = Some(refusal.reason.clone());
                effects.push(Effect::Audit {
                    decision: "denied",
                    name: name.to_owned(),
                    text: draft.text.clone().into(),
                    rule: refusal.rule.clone(),
                    reason: Some(refusal.reason.clone()),
                });
            }
        }
        if let Some(why) = refused {
            note_refusal(state, &name, &why);
        }
        state.ctl.remove(&name);
        effects.discard_entry(state.entries.remove(&id));
        effects.push(Effect::Changed);
        // Perhaps no start is coming now: the ticker sees to what it readied.
        effects.push(Effect::StartWanted);
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
                return Err(Error::new(
                    libc::EXDEV,
                    "drafts are renamed only within ctl/",
                ));
            }
            return Err(Error::new(
                libc::EPERM,
                "only drafts in ctl/ can be renamed",
            ));
        }
        // Every refusal from here on concerns names in ctl/: ctl/index.md lists it.
        let refused = |state: &mut State, error: Error| {
            let shown = format!(
                "{} -> {}",
                String::from_utf8_lossy(name),
                String::from_utf8_lossy(new_name)
            );
            note_refusal(state, &shown, &error.reason);
            Err(Error::loud(error.errno, error.reason))
        };
        if name == b"index.md" || new_name == b"index.md" {
            let error = Error::new(libc::EPERM, "index.md is the directory's page");
            return refused(&mut state, error);
        }
        // A source that is no draft never gets here: the kernel's lookup answers ENOENT.
        let (old, id) = named(&state.ctl, name, "no draft of that name")?;
        let old = old.to_string();
        let new = match new_name_of(new_name, libc::EPERM) {
            Ok(new) => new,
            Err(error) => return refused(&mut state, error),
        };
        if new == old {
            return Ok(());
        }
        if state.ctl.contains_key(&new) || state.cmd.contains_key(&new) {
            let why = format!("`{new}` is taken by a draft or a command");
            return refused(&mut state, Error::new(libc::EEXIST, why));
        }
        state.ctl.remove(old.as_str());
        state.ctl.insert(new.clone(), id);
        let start_at = self.start_at(&new);
        if let Some(draft) = state.draft_mut(id) {
            // Out of a temporary name it starts a settle time from now; into one, it
            // waits again. Between two other names its start stays as it was.
            if let Stage::Decided { start_at: at, .. } = &mut draft.stage {
                if at.is_none() || start_at.is_none() {
                    *at = start_at;
                }
            }
            draft.name = new;
            draft.modified = SystemTime::now();
        }
        Ok(())
    }
}

/// A write was refused: the draft takes no more and is denied at its last close.
fn refuse(draft: &mut Draft, refusal: Refusal) {
    let writers = draft.writers();
    draft.stage = Stage::Refused {
        writers,
        refusal,
        flushed: false,
    };
}

/// Milliseconds since the epoch, as records store times.
pub(super) fn epoch_ms(time: SystemTime) -> u64 {
    time.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
