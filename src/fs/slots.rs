//! The files under `cmd/<name>/`, as rows of one table: name, mode, when the file
//! shows, and how it is read or written. Adding a file is one [`Slot`] (its inode
//! offset), one row here and, for a rendered file, its reader.

use super::names::Slot;
use super::pages;
use super::state::{Command, Run};
use super::types::{Attr, Kind};
use super::view::View;
use crate::supervisor::{JobSnapshot, Stream};
use std::time::SystemTime;

/// When a file shows in its command's directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum When {
    /// Always, for a denied command too.
    Always,
    /// A denied command, or a job with a reason (killed, timed out, failed to start).
    Reason,
    /// A job whose shell runs.
    Running,
    /// A job whose shell has stopped and whose exit is known.
    Exited,
    /// Every job; never for a denied command.
    Job,
    /// A running job with a stdin pipe or terminal (until `stdin` is removed).
    Input,
    /// A job on a terminal, also once it has stopped.
    Terminal,
    /// A running job on a terminal.
    TerminalRunning,
}

impl When {
    /// Whether a file shown this way shows for the command's whole life, rather than
    /// coming or going when it stops.
    fn lasts(self) -> bool {
        match self {
            When::Always | When::Job | When::Terminal => true,
            When::Reason | When::Running | When::Exited | When::Input | When::TerminalRunning => {
                false
            }
        }
    }
}

/// How a file is read or written.
#[derive(Clone, Copy)]
pub(super) enum How {
    /// Bytes rendered at open by the reader; None when there is nothing to show.
    Rendered(fn(&Facts) -> Option<Vec<u8>>),
    /// A growing stream of the job's output.
    Stream(Stream),
    /// The interleaved output from now on, blocking at the end while the job runs.
    Follow,
    /// Blocks until the job stops, then answers with its status word.
    Wait,
    /// Written to stop the job.
    Kill,
    /// Written to feed the job's stdin.
    Input,
    /// Written with key names for the job's terminal.
    Keys,
}

impl How {
    /// Whether the file is opened for writing rather than reading.
    pub fn is_written(self) -> bool {
        matches!(self, How::Kill | How::Input | How::Keys)
    }

    /// `stdout`, `stderr` or `output`: a lookup may get a view inode.
    pub fn is_stream(self) -> bool {
        matches!(self, How::Stream(_))
    }
}

pub(super) struct Row {
    pub slot: Slot,
    pub name: &'static str,
    pub perm: u16,
    pub when: When,
    pub how: How,
}

/// The files of a command directory, in listing order.
pub(super) const ROWS: [Row; 15] = [
    row(
        Slot::Command,
        "command",
        0o400,
        When::Always,
        How::Rendered(command),
    ),
    row(
        Slot::Status,
        "status",
        0o400,
        When::Always,
        How::Rendered(status),
    ),
    row(Slot::Pid, "pid", 0o400, When::Running, How::Rendered(pid)),
    row(Slot::Kill, "kill", 0o200, When::Running, How::Kill),
    row(
        Slot::Exitcode,
        "exitcode",
        0o400,
        When::Exited,
        How::Rendered(exitcode),
    ),
    row(
        Slot::Reason,
        "reason",
        0o400,
        When::Reason,
        How::Rendered(reason),
    ),
    row(
        Slot::Stdout,
        "stdout",
        0o400,
        When::Job,
        How::Stream(Stream::Stdout),
    ),
    row(
        Slot::Stderr,
        "stderr",
        0o400,
        When::Job,
        How::Stream(Stream::Stderr),
    ),
    row(
        Slot::Output,
        "output",
        0o400,
        When::Job,
        How::Stream(Stream::Output),
    ),
    row(Slot::Follow, "follow", 0o400, When::Job, How::Follow),
    row(Slot::Wait, "wait", 0o400, When::Job, How::Wait),
    row(
        Slot::Result,
        "result.json",
        0o400,
        When::Job,
        How::Rendered(result),
    ),
    row(Slot::Stdin, "stdin", 0o200, When::Input, How::Input),
    row(
        Slot::Screen,
        "screen",
        0o400,
        When::Terminal,
        How::Rendered(screen),
    ),
    row(Slot::Keys, "keys", 0o200, When::TerminalRunning, How::Keys),
];

const fn row(slot: Slot, name: &'static str, perm: u16, when: When, how: How) -> Row {
    Row {
        slot,
        name,
        perm,
        when,
        how,
    }
}

/// The row of a slot.
pub(super) fn row_of(slot: Slot) -> &'static Row {
    ROWS.iter()
        .find(|row| row.slot == slot)
        .expect("every slot has a row")
}

/// What a reader of a rendered file sees of its command.
pub(super) struct Facts<'a> {
    pub name: &'a str,
    pub text: &'a [u8],
    pub run: &'a Run,
    /// The job's state, taken once; None for a denied command.
    pub snapshot: Option<JobSnapshot>,
}

impl Facts<'_> {
    pub fn of(command: &Command) -> Facts<'_> {
        Facts {
            name: &command.name,
            text: &command.text,
            run: &command.run,
            snapshot: match &command.run {
                Run::Job(job) => Some(job.snapshot()),
                Run::Denied { .. } | Run::Starting => None,
            },
        }
    }
}

fn line(text: impl std::fmt::Display) -> Option<Vec<u8>> {
    Some(format!("{text}\n").into_bytes())
}

fn command(facts: &Facts) -> Option<Vec<u8>> {
    Some(facts.text.to_vec())
}

fn status(facts: &Facts) -> Option<Vec<u8>> {
    line(facts.run.status_word())
}

fn pid(facts: &Facts) -> Option<Vec<u8>> {
    line(facts.snapshot.as_ref()?.life.running_pid()?)
}

fn exitcode(facts: &Facts) -> Option<Vec<u8>> {
    line(facts.snapshot.as_ref()?.life.exit()?.code)
}

fn reason(facts: &Facts) -> Option<Vec<u8>> {
    match facts.run {
        Run::Denied { reason, .. } => line(reason),
        Run::Starting => None,
        Run::Job(_) => line(facts.snapshot.as_ref()?.life.reason()?),
    }
}

fn screen(facts: &Facts) -> Option<Vec<u8>> {
    match facts.run {
        Run::Job(job) => job.screen_text().map(String::into_bytes),
        Run::Denied { .. } | Run::Starting => None,
    }
}

fn result(facts: &Facts) -> Option<Vec<u8>> {
    let snapshot = facts.snapshot.as_ref()?;
    Some(pages::result_json(
        facts.name,
        facts.text,
        snapshot,
        facts.run.status_word(),
    ))
}

/// Which files a command directory shows now.
pub(super) fn visible_slots(command: &Command) -> Vec<Slot> {
    shown_rows(command)
        .map(|row| row.slot)
        .filter(|slot| command.hidden & slot.bit() == 0)
        .collect()
}

/// The file `name` of `command` as `caller` may find it: one shown now, or one that
/// went when the command stopped, for the process removing its files (see [`vanished`]).
pub(super) fn find(command: &Command, name: &[u8], caller: Option<u32>) -> Option<Slot> {
    let slot = std::str::from_utf8(name).ok().and_then(Slot::from_name)?;
    // A caller of pid 0 is outside the driver's pid namespace: it names nobody.
    let removing = caller.is_some_and(|pid| pid != 0) && command.remover == caller;
    (visible_slots(command).contains(&slot) || removing && vanished(command, slot)).then_some(slot)
}

/// Whether `slot` is a file `command` showed while it ran and that went when it stopped
/// (`pid`, `kill`, and `stdin` and `keys` for a job that had them), not removed since.
///
/// `rm -r` lists a directory, then looks up and removes each file it listed, and skips
/// the `rmdir` after a failure. A command that stops between the listing and the
/// removal of `pid` would fail it with ENOENT (the kernel looks a name up before it
/// asks for its removal, and `pid` shows only while the command runs), leaving the
/// command behind and rm failing. So the process that last removed one of the
/// command's files still finds these files, and removes them: nobody else does (an
/// `ls`, a `test -e` run after an `rm` are other processes), so the listing and every
/// other lookup keep saying the command has stopped.
pub(super) fn vanished(command: &Command, slot: Slot) -> bool {
    let Run::Job(job) = &command.run else {
        return false;
    };
    if command.hidden & slot.bit() != 0 || job.life().is_running() {
        return false;
    }
    match row_of(slot).when {
        When::Running => true,
        When::Input => job.input().is_some(),
        When::TerminalRunning => job.is_terminal(),
        When::Always | When::Reason | When::Exited | When::Job | When::Terminal => false,
    }
}

/// Whether every file a command shows for its whole life (`command`, `status`, the
/// output files, `result.json`, a terminal's `screen`) has been removed, so that at
/// most the files that come and go with its run are left (`pid`, `kill`, `stdin`,
/// `keys` while it runs; `exitcode`, `reason` once it has stopped).
///
/// That is what a removal the command's end overtook leaves when [`vanished`] does not
/// save it (a tool that removes `pid` first, or files removed by several processes):
/// its `pid` and `kill` were gone when it came to them, so it skipped the `rmdir`, and
/// `exitcode` and `reason` came after its listing. Such a rest is no longer pinned (see
/// `tick_locked`): it expires after `--keep`.
pub(super) fn emptied(command: &Command) -> bool {
    shown_rows(command)
        .filter(|row| row.when.lasts())
        .all(|row| command.hidden & row.slot.bit() != 0)
}

/// The rows a command directory shows now, removed files included.
fn shown_rows(command: &Command) -> impl Iterator<Item = &'static Row> {
    let (denied, running, exited, has_reason) = match &command.run {
        Run::Denied { .. } => (true, false, false, true),
        // Nobody should look: lookups under it wait for its job.
        Run::Starting => (true, false, false, false),
        Run::Job(job) => {
            let life = job.life();
            (
                false,
                life.is_running(),
                life.exit().is_some(),
                life.reason().is_some(),
            )
        }
    };
    let input_open = match &command.run {
        Run::Job(job) => job.input().is_some_and(|input| input.is_open()),
        Run::Denied { .. } | Run::Starting => false,
    };
    let terminal = match &command.run {
        Run::Job(job) => job.is_terminal(),
        Run::Denied { .. } | Run::Starting => false,
    };
    ROWS.iter().filter(move |row| match row.when {
        When::Always => true,
        When::Reason => has_reason,
        When::Running => !denied && running,
        When::Exited => !denied && exited,
        When::Job => !denied,
        When::Input => running && input_open,
        When::Terminal => terminal,
        When::TerminalRunning => running && terminal,
    })
}

/// The bytes of a rendered file; None when it does not exist now.
pub(super) fn render(command: &Command, slot: Slot) -> Option<Vec<u8>> {
    match row_of(slot).how {
        How::Rendered(reader) => reader(&Facts::of(command)),
        _ => None,
    }
}

/// The stream a file shows, if it shows one.
pub(super) fn stream_of(slot: Slot) -> Option<Stream> {
    match row_of(slot).how {
        How::Stream(stream) => Some(stream),
        How::Follow => Some(Stream::Output),
        _ => None,
    }
}

/// When a command last changed as its directory and rendered files show it: when it
/// stopped (its `status`, `exitcode`, `reason` and files shown changed then), else
/// when it was written.
pub(super) fn changed_at(command: &Command) -> SystemTime {
    match &command.run {
        Run::Job(job) => job.finished_at().unwrap_or(command.created),
        Run::Denied { .. } | Run::Starting => command.created,
    }
}

/// The mtime of a rendered file: when its content last changed. `command` never
/// changes; `result.json` and `screen` change all the time while the command runs.
fn rendered_mtime(command: &Command, slot: Slot) -> SystemTime {
    let running = matches!(&command.run, Run::Job(job) if job.is_running());
    match slot {
        Slot::Command => command.created,
        Slot::Result | Slot::Screen if running => SystemTime::now(),
        _ => changed_at(command),
    }
}

/// Attributes of a file under `cmd/<name>/`, as its command's own inode shows it.
pub(super) fn file_attr(id: u64, command: &Command, slot: Slot) -> Attr {
    let ino = super::names::file_ino(id, slot);
    let row = row_of(slot);
    let steady = matches!(
        row.how,
        How::Follow | How::Wait | How::Kill | How::Input | How::Keys
    );
    let (size, mtime) = match (row.how, &command.run) {
        _ if steady => (0, command.created),
        (How::Stream(stream), Run::Job(job)) => {
            let size = View::whole().size(job, stream);
            let mtime = job.grew_at(stream).unwrap_or(command.created);
            (size, mtime)
        }
        _ => (
            render(command, slot).map_or(0, |b| b.len() as u64),
            rendered_mtime(command, slot),
        ),
    };
    Attr {
        steady,
        ..Attr::new(ino, Kind::File, size, row.perm, mtime)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_slot_has_one_row_in_inode_order() {
        for (index, row) in ROWS.iter().enumerate() {
            assert_eq!(row.slot as usize, index + 1, "{}", row.name);
            assert_eq!(row_of(row.slot).name, row.name);
        }
    }
}
