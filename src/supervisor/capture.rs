//! How a command's stdout and stderr reach its job in the order it wrote them.
//!
//! stdout is a pipe, read in chunks by the pump. stderr is, where the mount can
//! serve it, a hidden file of the mount itself: each stderr write is a synchronous
//! request during which the writer is blocked, so every stdout byte that writer wrote
//! before is already in the stdout pipe. [`Capture::stderr`] therefore first moves
//! what the stdout pipe holds into the job, then appends the stderr bytes, and only
//! then lets the write return. One lock per command makes the pump's reads and this
//! drain take turns, so a chunk the pump has read is appended before the drain runs.
//!
//! The guarantee: for a writer that writes from one thread, `output` shows its writes
//! in the order it made them, whatever their sizes. Writes made at the same time by
//! several threads or processes keep each one's own order and nothing more.
//!
//! Where the hidden file cannot be opened (no mount path, another platform), stderr
//! is a second pipe the pump reads as it comes: no byte is lost, but writes to the two
//! streams made within one pump round may come out grouped by stream.

use crate::supervisor::job::{Job, Stream};
use parking_lot::Mutex;
use std::cell::RefCell;
use std::collections::HashMap;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

/// Bytes moved per read from a stdout pipe.
pub const CHUNK: usize = 64 * 1024;

/// The name, in the mount's root, under which job `id`'s stderr file is opened. It is
/// listed nowhere and resolves only for the supervisor's thread that opens it, until
/// it has (see [`Registry::lookup`]).
pub fn stderr_file_name(id: u64) -> String {
    format!(".terminalfs-stderr-{id}")
}

/// The job id in a name made by [`stderr_file_name`].
pub fn parse_stderr_file_name(name: &[u8]) -> Option<u64> {
    let digits = name.strip_prefix(b".terminalfs-stderr-")?;
    if digits.is_empty() || digits.len() > 19 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// What one read of a stdout pipe gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pumped {
    /// This many bytes were appended.
    Bytes(usize),
    /// Nothing is there now.
    Empty,
    /// Every writer has closed it (just now or before).
    Closed,
}

/// One command's capture: its stdout pipe and the state of its stderr file.
pub struct Capture {
    job: Arc<Job>,
    /// The read end of the stdout pipe (non-blocking), None once it has ended. Only the
    /// pump closes it, so a descriptor the pump polls stays valid while it polls.
    stdout: Mutex<Option<OwnedFd>>,
    /// The stdout pipe's raw descriptor, for polling, -1 when there is none.
    stdout_raw: RawFd,
    /// The stdout pipe was found full once and has been enlarged.
    loud: AtomicBool,
    /// Open handles of the stderr file (the supervisor's own, and reopens such as
    /// `/dev/stderr`).
    stderr_handles: AtomicU32,
    /// The stderr pipe has ended (the child uses the file, or every holder closed it).
    stderr_pipe_ended: AtomicBool,
    /// stderr has been reported closed to the job.
    stderr_closed: AtomicBool,
    /// The pump is done with this command (shell reaped, pipes ended).
    pumped_out: AtomicBool,
}

/// Who asks for a stderr file: as the kernel names the caller of a request to the mount,
/// a thread id on Linux, a process id elsewhere.
pub type Caller = u32;

/// This thread, as a request it makes to the mount names its caller.
pub fn this_caller() -> Caller {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid cannot fail.
    let id = unsafe { libc::gettid() };
    #[cfg(not(target_os = "linux"))]
    // SAFETY: getpid cannot fail.
    let id = unsafe { libc::getpid() };
    id as Caller
}

/// The answer to a lookup or an open of a stderr file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Granted,
    /// The file is there, but not for this caller.
    Refused,
    /// No such file (any more).
    Unknown,
}

/// An id set aside for a command not started yet, whose stderr file the supervisor
/// opens before its start (see `Supervisor::prepare` and `Supervisor::spawn`).
struct Reserved {
    /// The thread that opens the file: the only caller its name resolves for, and the
    /// only one whose open is taken.
    opener: Caller,
    /// The one open it takes has been made: its name resolves for nobody now.
    opened: bool,
    /// Handles of the file open now.
    handles: u32,
}

/// Every command whose output may still arrive, by job id: the pump's and the stderr
/// file's way to the job.
pub struct Registry {
    captures: parking_lot::RwLock<HashMap<u64, Arc<Capture>>>,
    /// Ids set aside for a command not started yet. Taken after `captures`, never
    /// before.
    reserved: Mutex<HashMap<u64, Reserved>>,
    /// The processes that fork commands: the driver, and its spawner if it has one.
    forkers: Vec<i32>,
}

impl Registry {
    /// A registry for commands forked by `forkers`.
    pub fn new(forkers: Vec<i32>) -> Registry {
        Registry {
            captures: Default::default(),
            reserved: Default::default(),
            forkers,
        }
    }

    /// Takes job `id`'s capture; the handles its stderr file got while the id was set
    /// aside are its own.
    pub fn insert(&self, capture: Arc<Capture>) {
        let mut captures = self.captures.write();
        if let Some(reserved) = self.reserved.lock().remove(&capture.job.id()) {
            capture
                .stderr_handles
                .fetch_add(reserved.handles, Ordering::SeqCst);
        }
        captures.insert(capture.job.id(), capture);
    }

    pub fn get(&self, id: u64) -> Option<Arc<Capture>> {
        self.captures.read().get(&id).cloned()
    }

    /// Sets `id` aside: its stderr file may be looked up and opened, once, by `opener`
    /// (the calling thread) before its command starts.
    pub fn reserve(&self, id: u64, opener: Caller) {
        let reserved = Reserved {
            opener,
            opened: false,
            handles: 0,
        };
        self.reserved.lock().insert(id, reserved);
    }

    /// `id` will not be used after all.
    pub fn unreserve(&self, id: u64) {
        self.reserved.lock().remove(&id);
    }

    /// A lookup of job `id`'s stderr file by name: it resolves only for the thread
    /// that set the id aside, until that thread has opened it.
    pub fn lookup(&self, id: u64, caller: Caller) -> Access {
        let captures = self.captures.read();
        if captures.contains_key(&id) {
            return Access::Refused;
        }
        match self.reserved.lock().get(&id) {
            Some(reserved) if !reserved.opened && reserved.opener == caller => Access::Granted,
            Some(_) => Access::Refused,
            None => Access::Unknown,
        }
    }

    /// An open of job `id`'s stderr file. Before its command starts, the one open of
    /// the thread that set the id aside; after, a reopen by the command itself (see
    /// [`Capture::admits`]). Granted counts a handle.
    pub fn open(&self, id: u64, caller: Caller) -> Access {
        let captured = {
            let captures = self.captures.read();
            match captures.get(&id) {
                Some(capture) => capture.clone(),
                None => {
                    return match self.reserved.lock().get_mut(&id) {
                        Some(reserved) if !reserved.opened && reserved.opener == caller => {
                            reserved.opened = true;
                            reserved.handles += 1;
                            Access::Granted
                        }
                        Some(_) => Access::Refused,
                        None => Access::Unknown,
                    };
                }
            }
        };
        // While its start is under way, the shells of the other commands, which are
        // children of the same forkers: their processes must not pass for this one's.
        let others: Vec<i32> = if captured.job.life().pid().is_none() {
            let captures: Vec<Arc<Capture>> = self.captures.read().values().cloned().collect();
            captures
                .iter()
                .filter(|other| other.job.id() != id)
                .filter_map(|other| other.job.life().pid())
                .collect()
        } else {
            Vec::new()
        };
        // The job's lock and system calls, with no lock of the registry held.
        if !captured.admits(caller, &self.forkers, &others) {
            return Access::Refused;
        }
        match self.captures.read().get(&id) {
            Some(capture) => {
                capture.stderr_opened();
                Access::Granted
            }
            None => Access::Unknown,
        }
    }

    /// The pump is done with job `id`; it is forgotten once no stderr handle is left.
    pub fn pumped_out(&self, id: u64) {
        let mut captures = self.captures.write();
        if let Some(capture) = captures.get(&id) {
            capture.pumped_out.store(true, Ordering::SeqCst);
            if capture.stderr_handles.load(Ordering::SeqCst) == 0 {
                captures.remove(&id);
            }
        }
    }

    /// A handle of job `id`'s stderr file was released.
    pub fn stderr_released(&self, id: u64) {
        let mut captures = self.captures.write();
        if let Some(capture) = captures.get(&id) {
            capture.stderr_released();
            if capture.pumped_out.load(Ordering::SeqCst)
                && capture.stderr_handles.load(Ordering::SeqCst) == 0
            {
                captures.remove(&id);
            }
        } else if let Some(reserved) = self.reserved.lock().get_mut(&id) {
            reserved.handles = reserved.handles.saturating_sub(1);
        }
    }
}

thread_local! {
    /// The buffer a stderr write drains the stdout pipe into, one per thread that
    /// serves such writes.
    static DRAIN_BUFFER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

impl Capture {
    pub fn new(job: Arc<Job>, stdout: OwnedFd) -> Capture {
        let stdout_raw = stdout.as_raw_fd();
        Capture {
            job,
            stdout: Mutex::new(Some(stdout)),
            stdout_raw,
            loud: AtomicBool::new(false),
            stderr_handles: AtomicU32::new(0),
            stderr_pipe_ended: AtomicBool::new(false),
            stderr_closed: AtomicBool::new(false),
            pumped_out: AtomicBool::new(false),
        }
    }

    pub fn job(&self) -> &Arc<Job> {
        &self.job
    }

    /// The stdout pipe to poll, or -1 once it has ended.
    pub fn stdout_fd(&self) -> RawFd {
        if self.stdout.lock().is_some() {
            self.stdout_raw
        } else {
            -1
        }
    }

    /// One read of the stdout pipe into the job (the pump's side).
    pub fn pump_stdout(&self, buffer: &mut [u8]) -> Pumped {
        let mut stdout = self.stdout.lock();
        let Some(fd) = stdout.as_ref() else {
            return Pumped::Closed;
        };
        match read(fd.as_raw_fd(), buffer) {
            Ok(0) => {
                *stdout = None;
                self.job.pipe_closed();
                Pumped::Closed
            }
            Ok(n) => {
                // A read that fills the buffer found a writer faster than the pump.
                if n == buffer.len() && !self.loud.swap(true, Ordering::Relaxed) {
                    super::pump::enlarge_pipe(fd.as_raw_fd());
                }
                self.job.append(Stream::Stdout, &buffer[..n]);
                Pumped::Bytes(n)
            }
            Err(_) => Pumped::Empty,
        }
    }

    /// A stderr write of the command: first what its stdout pipe holds, then `bytes`.
    /// The pipe's content is measured first, so a writer that never stops cannot keep
    /// this going.
    pub fn stderr(&self, bytes: &[u8]) {
        let stdout = self.stdout.lock();
        if let Some(fd) = stdout.as_ref() {
            let mut left = pending_bytes(fd.as_raw_fd());
            DRAIN_BUFFER.with(|buffer| {
                let mut buffer = buffer.borrow_mut();
                if buffer.len() < CHUNK {
                    buffer.resize(CHUNK, 0);
                }
                while left > 0 {
                    let want = left.min(buffer.len());
                    match read(fd.as_raw_fd(), &mut buffer[..want]) {
                        Ok(n) if n > 0 => {
                            self.job.append(Stream::Stdout, &buffer[..n]);
                            left -= n;
                        }
                        // The end and an empty pipe are the pump's to handle.
                        _ => break,
                    }
                }
            });
        }
        self.job.append(Stream::Stderr, bytes);
    }

    /// Whether `caller` may reopen the stderr file (`/dev/stderr`, through
    /// `/proc/<pid>/fd/2`): only a process of the command, of the session its shell
    /// leads or descended from its shell (one that left the session with `setsid`).
    /// While its start is under way (the shell may run, and reopen, before the fork's
    /// answer gives its pid), a process of a session led by a child of one of
    /// `forkers` (the driver, its spawner) that is none of the `others` (the other
    /// commands' shells). Anyone else who reaches the file (another process's
    /// descriptors in `/proc`) is refused.
    fn admits(&self, caller: Caller, forkers: &[i32], others: &[i32]) -> bool {
        // A caller of pid 0 comes from another pid namespace; getsid(0) would be ours.
        let Ok(caller) = libc::pid_t::try_from(caller) else {
            return false;
        };
        // SAFETY: getsid only reads the session of a process, or fails.
        let session = if caller > 0 {
            unsafe { libc::getsid(caller) }
        } else {
            -1
        };
        if session <= 0 {
            return false;
        }
        match self.job.life().pid() {
            Some(shell) => session == shell || descends_from(caller, shell),
            None => {
                !others.contains(&session)
                    && super::pump::parent_of(session).is_some_and(|p| forkers.contains(&p))
            }
        }
    }

    /// A handle of the stderr file was opened.
    fn stderr_opened(&self) {
        self.stderr_handles.fetch_add(1, Ordering::SeqCst);
    }

    /// A handle of the stderr file was released.
    fn stderr_released(&self) {
        let _ = self
            .stderr_handles
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        self.close_stderr_when_over();
    }

    /// The stderr pipe has ended: its holders closed it, or the child uses the file
    /// instead (its copy of the pipe went at exec).
    pub fn stderr_pipe_ended(&self) {
        self.stderr_pipe_ended.store(true, Ordering::SeqCst);
        self.close_stderr_when_over();
    }

    /// stderr has ended, the way a pipe ends when its last writer closes it, once its
    /// pipe has ended and no handle of its file is left. (The file is opened before the
    /// child's exec, so before its pipe can end; a reopen needs an open handle.)
    fn close_stderr_when_over(&self) {
        if self.stderr_pipe_ended.load(Ordering::SeqCst)
            && self.stderr_handles.load(Ordering::SeqCst) == 0
            && !self.stderr_closed.swap(true, Ordering::SeqCst)
        {
            self.job.pipe_closed();
        }
    }
}

/// Whether `ancestor` is among the parents of `pid`, looking at most 64 generations
/// up: a process orphaned on the way (re-parented to init or a subreaper) is not.
fn descends_from(pid: libc::pid_t, ancestor: libc::pid_t) -> bool {
    let mut at = pid;
    for _ in 0..64 {
        match super::pump::parent_of(at) {
            Some(parent) if parent == ancestor => return true,
            Some(parent) if parent > 1 && parent != at => at = parent,
            _ => return false,
        }
    }
    false
}

/// Bytes waiting in a pipe.
fn pending_bytes(fd: RawFd) -> usize {
    let mut count: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int through a valid pointer.
    let rc = unsafe { libc::ioctl(fd, libc::FIONREAD, &mut count) };
    if rc < 0 {
        0
    } else {
        count.max(0) as usize
    }
}

/// One `read`; `Err` for nothing there now (or an interrupted read).
fn read(fd: RawFd, buffer: &mut [u8]) -> Result<usize, ()> {
    // SAFETY: reading into a valid buffer of its own length.
    let n = unsafe { libc::read(fd, buffer.as_mut_ptr().cast(), buffer.len()) };
    if n >= 0 {
        return Ok(n as usize);
    }
    match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::EAGAIN) | Some(libc::EINTR) => Err(()),
        // Any other error ends the pipe as end-of-file would.
        _ => Ok(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_aside_file_resolves_and_opens_once_for_its_opener_alone() {
        let registry = Registry::new(vec![std::process::id() as i32]);
        let (opener, other) = (this_caller(), this_caller() + 1);
        assert_eq!(registry.lookup(7, opener), Access::Unknown);
        assert_eq!(registry.open(7, opener), Access::Unknown);
        registry.reserve(7, opener);
        assert_eq!(registry.lookup(7, other), Access::Refused);
        assert_eq!(registry.open(7, other), Access::Refused);
        assert_eq!(registry.lookup(7, opener), Access::Granted);
        assert_eq!(registry.open(7, opener), Access::Granted);
        // One open ever: after it the name resolves for nobody, and no open is taken,
        // not even the opener's, nor after its handle is released.
        assert_eq!(registry.lookup(7, opener), Access::Refused);
        assert_eq!(registry.open(7, opener), Access::Refused);
        registry.stderr_released(7);
        assert_eq!(registry.open(7, opener), Access::Refused);
        assert_eq!(registry.open(7, 0), Access::Refused);
        registry.unreserve(7);
        assert_eq!(registry.lookup(7, opener), Access::Unknown);
    }

    #[test]
    fn stderr_file_names_round_trip_and_reject_look_alikes() {
        assert_eq!(
            parse_stderr_file_name(stderr_file_name(42).as_bytes()),
            Some(42)
        );
        assert_eq!(parse_stderr_file_name(b".terminalfs-stderr-"), None);
        assert_eq!(parse_stderr_file_name(b".terminalfs-stderr-4x"), None);
        assert_eq!(parse_stderr_file_name(b".terminalfs-stderr-+4"), None);
        assert_eq!(parse_stderr_file_name(b"terminalfs-stderr-4"), None);
        assert_eq!(
            parse_stderr_file_name(b".terminalfs-stderr-99999999999999999999"),
            None
        );
    }
}
