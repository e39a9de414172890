//! Random sequences of draft operations (create, write, append, truncate, flush,
//! release, rename, unlink, lookup under `cmd/`, and running the queued spawns) played
//! against the tree and against a small model of what they mean; after every step both
//! must answer the same and list the same drafts.

use super::names;
use super::tests::Rig;
use super::{Later, Lookup, OpenMode, Write};
use proptest::prelude::*;
use std::collections::BTreeMap;

/// `c.tmp` is a temporary name: a draft decided under it waits for a rename.
const NAMES: [&str; 3] = ["a", "b", "c.tmp"];

#[derive(Debug, Clone)]
enum Op {
    Create {
        name: usize,
        append: bool,
    },
    Write {
        handle: usize,
        at: usize,
        data: String,
    },
    Truncate {
        name: usize,
    },
    Flush {
        handle: usize,
    },
    Release {
        handle: usize,
    },
    Rename {
        from: usize,
        to: usize,
    },
    Unlink {
        name: usize,
    },
    Lookup {
        name: usize,
    },
    StartPending,
}

fn op() -> impl Strategy<Value = Op> {
    let name = 0..NAMES.len();
    prop_oneof![
        (name.clone(), any::<bool>()).prop_map(|(name, append)| Op::Create { name, append }),
        (0..4usize, 0..12usize, "[ech o\n]{0,6}").prop_map(|(handle, at, data)| Op::Write {
            handle,
            at,
            data
        }),
        name.clone().prop_map(|name| Op::Truncate { name }),
        (0..4usize).prop_map(|handle| Op::Flush { handle }),
        (0..4usize).prop_map(|handle| Op::Release { handle }),
        (name.clone(), name.clone()).prop_map(|(from, to)| Op::Rename { from, to }),
        name.clone().prop_map(|name| Op::Unlink { name }),
        name.prop_map(|name| Op::Lookup { name }),
        Just(Op::StartPending),
    ]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Writing,
    Decided,
}

#[derive(Debug)]
struct Draft {
    id: u64,
    text: Vec<u8>,
    writers: u32,
    flushed: bool,
    stage: Stage,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Command {
    Denied,
    Starting,
    Running,
}

/// What a lookup under `cmd/` answered, as far as the model can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    Found,
    LaterClose,
    LaterStart,
    Missing,
}

#[derive(Default, Debug)]
struct Model {
    next_id: u64,
    ctl: BTreeMap<String, Draft>,
    cmd: BTreeMap<String, Command>,
    /// Open writers: (draft id, append).
    handles: Vec<(u64, bool)>,
}

impl Model {
    fn draft_by_id(&mut self, id: u64) -> Option<&mut Draft> {
        self.ctl.values_mut().find(|d| d.id == id)
    }

    fn create(&mut self, name: &str, append: bool) -> Result<(), i32> {
        if self.ctl.contains_key(name) || self.cmd.contains_key(name) {
            return Err(libc::EEXIST);
        }
        self.next_id += 1;
        self.ctl.insert(
            name.to_string(),
            Draft {
                id: self.next_id,
                text: Vec::new(),
                writers: 1,
                flushed: false,
                stage: Stage::Writing,
            },
        );
        self.handles.push((self.next_id, append));
        Ok(())
    }

    fn write(&mut self, handle: usize, at: usize, data: &[u8]) {
        let (id, append) = self.handles[handle];
        if let Some(draft) = self.draft_by_id(id) {
            let start = if append { draft.text.len() } else { at };
            let end = start + data.len();
            if draft.text.len() < end {
                draft.text.resize(end, 0);
            }
            draft.text[start..end].copy_from_slice(data);
            draft.flushed = false;
        }
    }

    fn truncate(&mut self, name: &str) -> Result<(), i32> {
        let draft = self.ctl.get_mut(name).ok_or(libc::ENOENT)?;
        if draft.stage != Stage::Writing {
            return Err(libc::EACCES);
        }
        draft.text.clear();
        Ok(())
    }

    fn flush(&mut self, handle: usize) -> Result<(), i32> {
        let (id, _) = self.handles[handle];
        let Some(draft) = self.draft_by_id(id) else {
            return Ok(());
        };
        if draft.text.is_empty() {
            return Ok(());
        }
        draft.flushed = true;
        // Nothing but blanks is what the decision would refuse: the close says so.
        let blank = draft.text.iter().all(u8::is_ascii_whitespace);
        if draft.stage == Stage::Writing && blank {
            return Err(libc::EPERM);
        }
        Ok(())
    }

    fn release(&mut self, handle: usize) {
        let (id, _) = self.handles.remove(handle);
        let Some(name) = self
            .ctl
            .iter()
            .find(|(_, d)| d.id == id)
            .map(|(n, _)| n.clone())
        else {
            return;
        };
        let draft = self.ctl.get_mut(&name).expect("found just above");
        draft.writers -= 1;
        draft.flushed = false;
        if draft.writers > 0 || draft.text.is_empty() {
            return;
        }
        if draft.text.iter().all(u8::is_ascii_whitespace) {
            self.ctl.remove(&name);
            self.cmd.insert(name, Command::Denied);
        } else {
            draft.stage = Stage::Decided;
        }
    }

    fn rename(&mut self, from: &str, to: &str) -> Result<(), i32> {
        if !self.ctl.contains_key(from) {
            return Err(libc::ENOENT);
        }
        if from == to {
            return Ok(());
        }
        if self.ctl.contains_key(to) || self.cmd.contains_key(to) {
            return Err(libc::EEXIST);
        }
        let draft = self.ctl.remove(from).expect("checked above");
        self.ctl.insert(to.to_string(), draft);
        Ok(())
    }

    fn unlink(&mut self, name: &str) -> Result<(), i32> {
        self.ctl.remove(name).ok_or(libc::ENOENT)?;
        Ok(())
    }

    fn lookup(&mut self, name: &str) -> Seen {
        if let Some(draft) = self.ctl.get(name) {
            match draft.stage {
                Stage::Decided if name.ends_with(".tmp") => {}
                Stage::Decided => {
                    self.ctl.remove(name);
                    self.cmd.insert(name.to_string(), Command::Starting);
                }
                Stage::Writing if draft.writers > 0 && draft.flushed => return Seen::LaterClose,
                Stage::Writing => {}
            }
        }
        match self.cmd.get(name) {
            None => Seen::Missing,
            Some(Command::Starting) => Seen::LaterStart,
            Some(Command::Denied | Command::Running) => Seen::Found,
        }
    }

    fn start_pending(&mut self) {
        for command in self.cmd.values_mut() {
            if *command == Command::Starting {
                *command = Command::Running;
            }
        }
    }
}

/// Plays `ops` on a fresh tree and on the model, comparing as it goes.
fn play(ops: &[Op]) -> Result<(), TestCaseError> {
    let rig = Rig::new();
    let mut model = Model::default();
    // The tree's handle for each of the model's.
    let mut fhs: Vec<u64> = Vec::new();
    let errno = |result: super::FsResult<()>| result.map_err(|e| e.errno);
    for (step, op) in ops.iter().enumerate() {
        match op {
            Op::Create { name, append } => {
                let mode = OpenMode {
                    write: true,
                    append: *append,
                };
                let tree = rig.tree.create(names::CTL, NAMES[*name].as_bytes(), mode);
                let expected = model.create(NAMES[*name], *append);
                prop_assert_eq!(tree.as_ref().map(|_| ()).map_err(|e| e.errno), expected);
                if let Ok((_, opened)) = tree {
                    fhs.push(opened.fh);
                }
            }
            Op::Write { handle, at, data } if !fhs.is_empty() => {
                let handle = handle % fhs.len();
                // An offset past the end would leave NULs, which a close refuses.
                let at = {
                    let (id, _) = model.handles[handle];
                    let len = model.draft_by_id(id).map_or(0, |d| d.text.len());
                    at % (len + 1)
                };
                let written = rig.tree.write(fhs[handle], at as u64, data.as_bytes());
                prop_assert!(
                    matches!(written, Ok(Write::Done(n)) if n as usize == data.len()),
                    "step {}: write answered {:?}",
                    step,
                    written.map(|_| ())
                );
                model.write(handle, at, data.as_bytes());
            }
            Op::Truncate { name } => {
                let tree = match rig.tree.lookup(names::CTL, NAMES[*name].as_bytes()) {
                    Ok(Lookup::Found(attr)) => {
                        errno(rig.tree.setattr(attr.ino, Some(0), false).map(|_| ()))
                    }
                    Ok(Lookup::Later(_)) => unreachable!("ctl/ lookups never wait"),
                    Err(e) => Err(e.errno),
                };
                prop_assert_eq!(tree, model.truncate(NAMES[*name]), "step {}", step);
            }
            Op::Flush { handle } if !fhs.is_empty() => {
                let handle = handle % fhs.len();
                let tree = errno(rig.tree.flush(fhs[handle]));
                prop_assert_eq!(tree, model.flush(handle), "step {}", step);
            }
            Op::Release { handle } if !fhs.is_empty() => {
                let handle = handle % fhs.len();
                rig.tree.release(fhs.remove(handle));
                model.release(handle);
            }
            Op::Rename { from, to } => {
                let tree = rig.tree.rename(
                    names::CTL,
                    NAMES[*from].as_bytes(),
                    names::CTL,
                    NAMES[*to].as_bytes(),
                );
                prop_assert_eq!(
                    errno(tree),
                    model.rename(NAMES[*from], NAMES[*to]),
                    "step {}",
                    step
                );
            }
            Op::Unlink { name } => {
                let tree = rig.tree.unlink(names::CTL, NAMES[*name].as_bytes());
                prop_assert_eq!(errno(tree), model.unlink(NAMES[*name]), "step {}", step);
            }
            Op::Lookup { name } => {
                let seen = match rig.tree.lookup(names::CMD, NAMES[*name].as_bytes()) {
                    Ok(Lookup::Found(_)) => Seen::Found,
                    Ok(Lookup::Later(Later::Close)) => Seen::LaterClose,
                    Ok(Lookup::Later(Later::Start)) => Seen::LaterStart,
                    Err(e) if e.errno == libc::ENOENT => Seen::Missing,
                    Err(e) => return Err(TestCaseError::fail(format!("step {step}: {e}"))),
                };
                prop_assert_eq!(seen, model.lookup(NAMES[*name]), "step {}", step);
            }
            Op::StartPending => {
                rig.tree.start_pending();
                model.start_pending();
            }
            Op::Write { .. } | Op::Flush { .. } | Op::Release { .. } => {}
        }
        // The drafts listed, and what each shows of itself.
        let listed: Vec<String> = rig.ls(names::CTL).split_off(1);
        let expected: Vec<String> = model.ctl.keys().cloned().collect();
        prop_assert_eq!(&listed, &expected, "step {}", step);
        for (name, draft) in &model.ctl {
            let attr = rig.draft_attr(name).expect("a listed draft resolves");
            let size = match draft.stage {
                Stage::Writing => 0,
                Stage::Decided => draft.text.len() as u64,
            };
            prop_assert_eq!(attr.size, size, "step {}: ctl/{}", step, name);
            let fh = rig
                .tree
                .open(attr.ino, OpenMode::default())
                .expect("a draft opens for reading")
                .fh;
            let text = match rig.tree.read(fh, 0, 1 << 16) {
                Ok(super::Read::Data(bytes)) => bytes,
                _ => Vec::new(),
            };
            rig.tree.release(fh);
            prop_assert_eq!(&text, &draft.text, "step {}: ctl/{}", step, name);
        }
    }
    for fh in fhs {
        rig.tree.release(fh);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn draft_operations_agree_with_the_model(ops in prop::collection::vec(op(), 1..40)) {
        play(&ops)?;
    }
}
