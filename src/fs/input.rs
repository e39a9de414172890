//! Writes to `cmd/<name>/stdin` and `cmd/<name>/keys`: checked (for a shell), delivered
//! without the tree lock, and answered with the errno that says what went wrong. A
//! write that finds the input full comes back as [`Write::Pending`], for the adapter to
//! park and try again; the adapter holds it only a short while, then tries it once more
//! as [`Attempt::Held`], which answers it without waiting (see [`Input::lean`]).

use super::types::{Error, FsResult, Write, MAX_COMMAND};
use super::Tree;
use crate::policy::{check_shell_input, Verdict};
use crate::supervisor::terminal::KeysError;
use crate::supervisor::{Input, InputError, Job};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Which try of a write to `stdin` or `keys` this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Attempt {
    /// As it arrives, and each time its command may have read since: a full input
    /// makes it wait ([`Write::Pending`]).
    Fresh,
    /// After it has waited as long as the adapter holds a write. While the kernel
    /// waits for the answer it holds the file's lock, which `rm` of the file (and
    /// every lookup in the directory behind that `rm`) waits for; so this try is
    /// answered at once: with part of the write (its writer comes back for the
    /// rest, and the file is free meanwhile), or with EAGAIN once the command has
    /// taken no input for `--wait-timeout`.
    Held,
}

/// Why a write to a command's input failed, for the writer's errno and, once, the log.
pub(super) fn input_error(name: &str, file: &str, errno: i32, why: &str) -> Error {
    Error::loud(errno, format!("cmd/{name}/{file}: {why}"))
}

/// The error for input that was not taken (other than a full input, which waits).
fn error_of(name: &str, file: &str, error: &InputError) -> Error {
    let errno = match error {
        InputError::Full => libc::EAGAIN,
        InputError::Closed | InputError::Gone => libc::EPIPE,
        InputError::Keys(KeysError::TooLong(_)) => libc::EFBIG,
        InputError::Keys(_) => libc::EINVAL,
        InputError::NotTerminal => libc::ENOTTY,
        InputError::TerminalNotClosable => libc::EPERM,
    };
    input_error(name, file, errno, &error.to_string())
}

/// The error for a command whose input is gone.
fn no_input(name: &str, file: &str, errno: i32) -> Error {
    input_error(name, file, errno, "it has no input (any more)")
}

/// Whether a command's text asked for input: None for none, else whether it asked
/// for a terminal (`#terminalfs tty`) rather than a pipe (`#terminalfs stdin`). What a
/// command brought back from an earlier driver's run had, which its job no longer holds.
pub(super) fn asked_input(text: &[u8]) -> Option<bool> {
    match crate::policy::parse_directives(&String::from_utf8_lossy(text))
        .ok()?
        .input
    {
        crate::policy::Input::Closed => None,
        crate::policy::Input::Pipe => Some(false),
        crate::policy::Input::Terminal(_) => Some(true),
    }
}

/// The job's input while its shell runs; EPIPE once it has stopped, through a handle
/// opened before (a descendant may still hold the pipe, but nobody is there to answer).
fn running_input<'a>(name: &str, file: &str, job: &'a Job) -> FsResult<&'a Input> {
    let input = job
        .input()
        .ok_or_else(|| no_input(name, file, libc::EBADF))?;
    if !job.is_running() {
        return Err(error_of(name, file, &InputError::Gone));
    }
    Ok(input)
}

impl Tree {
    /// A write to `stdin`. For a shell, everything given so far plus this write is
    /// checked as one script first; `script` stays locked until the write is delivered,
    /// so two writers cannot slip a command between check and delivery. `script` holds
    /// only what was delivered: a refused write is not in it, as the shell never saw it.
    /// Once a write through a handle is refused (`refused`, the handle's), every later
    /// write through it is too: a writer that writes line by line (a shell's `printf`)
    /// must not have the rest of a refused text run without its start.
    pub(super) fn write_input(
        &self,
        name: &str,
        job: &Job,
        script: Option<&Mutex<Vec<u8>>>,
        refused: &AtomicBool,
        attempt: Attempt,
        data: &[u8],
    ) -> FsResult<Write> {
        let input = running_input(name, "stdin", job)?;
        let mut given = script.map(Mutex::lock);
        if given.is_some() && refused.load(Ordering::SeqCst) {
            let why = "not delivered: an earlier write through this open file was refused";
            return Err(input_error(name, "stdin", libc::EPERM, why));
        }
        if let Some(script) = &given {
            if let Some((errno, why)) = self.judge_shell_input(name, script, data) {
                refused.store(true, Ordering::SeqCst);
                drop(given);
                // The writer's shell shows only the errno: the sentence goes where
                // refused names are listed, and to the log.
                self.note_refusal(&format!("{name}/stdin"), &why);
                return Err(input_error(name, "stdin", errno, &why));
            }
        }
        let written = match attempt {
            Attempt::Fresh => input.write(data),
            Attempt::Held => input.lean(data, self.config.wait_timeout),
        };
        match written {
            Ok(n) => {
                if let Some(given) = &mut given {
                    given.extend_from_slice(&data[..n]);
                }
                Ok(Write::Done(n as u32))
            }
            Err(InputError::Full) => self.still_full(name, "stdin", job, attempt),
            Err(error) => Err(error_of(name, "stdin", &error)),
        }
    }

    /// A write that found the input full: it waits, or, held already, fails.
    fn still_full(&self, name: &str, file: &str, job: &Job, attempt: Attempt) -> FsResult<Write> {
        match attempt {
            Attempt::Fresh => Ok(Write::Pending { job: job.id() }),
            Attempt::Held => Err(input_error(
                name,
                file,
                libc::EAGAIN,
                &format!(
                    "the command has taken no input for {} (--wait-timeout); this write \
                     was not taken",
                    crate::units::format_duration(self.config.wait_timeout)
                ),
            )),
        }
    }

    /// Whether a shell that was given `script` may be given `data` too; the errno and
    /// the sentence when not. Past [`MAX_COMMAND`] bytes in all, a shell's input
    /// cannot be checked as one script any more, so it takes no more.
    fn judge_shell_input(&self, name: &str, script: &[u8], data: &[u8]) -> Option<(i32, String)> {
        if script.len() + data.len() > MAX_COMMAND {
            return Some((
                libc::EFBIG,
                format!(
                    "not delivered: a shell's input is checked as one script of at most \
                     {MAX_COMMAND} bytes in all, and this write would pass that (it has \
                     been given {} bytes); start a new command, or run a script file",
                    script.len()
                ),
            ));
        }
        let mut whole = Vec::with_capacity(script.len() + data.len());
        whole.extend_from_slice(script);
        whole.extend_from_slice(data);
        match check_shell_input(&self.policy, &whole) {
            Verdict::Deny { rule, reason } => {
                self.record_stdin_refusal(name, data, rule.as_deref(), &reason);
                Some((libc::EPERM, format!("not delivered: {reason}")))
            }
            Verdict::Allow => None,
        }
    }

    /// A write to `keys`: every word known, or nothing sent.
    pub(super) fn write_keys(
        &self,
        name: &str,
        job: &Job,
        attempt: Attempt,
        data: &[u8],
    ) -> FsResult<Write> {
        let input = running_input(name, "keys", job)?;
        let sent = match attempt {
            Attempt::Fresh => input.send_keys(data),
            Attempt::Held => input.lean_keys(data, self.config.wait_timeout),
        };
        match sent {
            Ok(()) => Ok(Write::Done(data.len() as u32)),
            Err(InputError::Full) => self.still_full(name, "keys", job, attempt),
            Err(error) => Err(error_of(name, "keys", &error)),
        }
    }

    /// Audits a refusal of what a shell on `name`'s stdin was to be given.
    fn record_stdin_refusal(&self, name: &str, text: &[u8], rule: Option<&str>, reason: &str) {
        self.record("denied", &format!("{name}/stdin"), text, rule, Some(reason));
    }

    /// `rm cmd/<name>/stdin`: closes a pipe so the command reads end of file. A
    /// terminal is not closed this way (EPERM).
    ///
    /// A shell runs what it holds at end of file, an unfinished last line included. Each
    /// write was checked whole, but one taken in part (a nearly full pipe takes what
    /// fits) leaves the shell a beginning that was not: `touch /tmp/ab` of a write
    /// `touch /tmp/abc` passed for. So what the shell was given must pass as one
    /// script before its end of file is given; when it does not, the input stays open
    /// (EPERM, audited) and the command can be stopped instead. The script's lock is
    /// held to the close, so no write adds to it in between.
    pub(super) fn close_input(
        &self,
        name: &str,
        job: &Job,
        script: Option<&Mutex<Vec<u8>>>,
    ) -> FsResult<()> {
        let input = job
            .input()
            .ok_or_else(|| no_input(name, "stdin", libc::ENOENT))?;
        let given = script.map(Mutex::lock);
        if let Some(given) = &given {
            if let Verdict::Deny { rule, reason } = check_shell_input(&self.policy, given) {
                self.record_stdin_refusal(name, given, rule.as_deref(), &reason);
                return Err(input_error(
                    name,
                    "stdin",
                    libc::EPERM,
                    &format!(
                        "not closed: at its end of file the shell would run what it was \
                         given, and {reason}; stop the command instead"
                    ),
                ));
            }
        }
        input
            .close()
            .map_err(|error| error_of(name, "stdin", &error))
    }
}
