//! Wake-ups for writes that found a command's input full.
//!
//! A write to `stdin` or `keys` that finds the pipe (or terminal) full is parked by the
//! adapter and tried again on news for its job. Nothing else announces that the command
//! has read some of its input, so one thread polls every input that a write is waiting
//! for, for room to write, and reports the job as having news the moment there is.
//! It only polls: it never writes, and a descriptor that was closed meanwhile (or
//! reused) costs at most one needless retry.

use crate::supervisor::{News, Notify};
use parking_lot::Mutex;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

struct Shared {
    /// (job, descriptor) pairs a write waits for; each is reported once, then dropped.
    wanted: Mutex<Vec<(u64, RawFd)>>,
    wake_write: OwnedFd,
    stop: AtomicBool,
}

impl Shared {
    fn wake(&self) {
        // SAFETY: writing one byte from a valid buffer to a pipe we own.
        unsafe {
            libc::write(self.wake_write.as_raw_fd(), b"w".as_ptr().cast(), 1);
        }
    }
}

/// The polling thread and what it waits for.
pub struct Writable {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// Where an input reports that it was found full.
#[derive(Clone)]
pub struct Watch {
    pub job: u64,
    pub writable: Arc<Writable>,
}

impl Writable {
    pub fn start(notify: Notify) -> std::io::Result<Arc<Writable>> {
        let (wake_read, wake_write) = super::pump::pipe()?;
        super::pump::set_nonblocking(wake_read.as_raw_fd());
        super::pump::set_nonblocking(wake_write.as_raw_fd());
        let shared = Arc::new(Shared {
            wanted: Mutex::new(Vec::new()),
            wake_write,
            stop: AtomicBool::new(false),
        });
        let thread_shared = shared.clone();
        let thread = std::thread::Builder::new()
            .name("tfs-writable".into())
            .spawn(move || run(&thread_shared, &wake_read, &notify))?;
        Ok(Arc::new(Writable {
            shared,
            thread: Mutex::new(Some(thread)),
        }))
    }

    /// Reports `job` once `fd` has room to write (or has failed).
    pub fn want(&self, job: u64, fd: RawFd) {
        let mut wanted = self.shared.wanted.lock();
        if !wanted.contains(&(job, fd)) {
            wanted.push((job, fd));
            drop(wanted);
            self.shared.wake();
        }
    }

    /// `job` no longer waits for `fd`, which is about to be closed (and its number
    /// perhaps reused by a descriptor that never has room).
    pub fn forget(&self, job: u64, fd: RawFd) {
        self.shared
            .wanted
            .lock()
            .retain(|&entry| entry != (job, fd));
    }

    pub fn stop(&self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.wake();
        if let Some(thread) = self.thread.lock().take() {
            super::join(thread);
        }
    }
}

fn run(shared: &Shared, wake_read: &OwnedFd, notify: &Notify) {
    let mut fds: Vec<libc::pollfd> = Vec::new();
    while !shared.stop.load(Ordering::SeqCst) {
        let wanted: Vec<(u64, RawFd)> = shared.wanted.lock().clone();
        fds.clear();
        fds.push(libc::pollfd {
            fd: wake_read.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        });
        fds.extend(wanted.iter().map(|&(_, fd)| libc::pollfd {
            fd,
            events: libc::POLLOUT,
            revents: 0,
        }));
        // SAFETY: `fds` is a valid array of pollfd for its whole length.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 1000) };
        if ready <= 0 {
            continue;
        }
        if fds[0].revents != 0 {
            let mut buffer = [0u8; 64];
            // SAFETY: reading into a valid buffer from a non-blocking pipe we own.
            while unsafe { libc::read(wake_read.as_raw_fd(), buffer.as_mut_ptr().cast(), 64) } > 0 {
            }
        }
        let ready: Vec<(u64, RawFd)> = wanted
            .iter()
            .zip(&fds[1..])
            .filter(|(_, pollfd)| pollfd.revents != 0)
            .map(|(entry, _)| *entry)
            .collect();
        if ready.is_empty() {
            continue;
        }
        // Only what is still wanted: one forgotten while this thread polled has been
        // closed, and its number may be another descriptor's by now.
        let done: Vec<(u64, RawFd)> = {
            let mut wanted = shared.wanted.lock();
            let done: Vec<(u64, RawFd)> = ready
                .into_iter()
                .filter(|entry| wanted.contains(entry))
                .collect();
            wanted.retain(|entry| !done.contains(entry));
            done
        };
        for (job, _) in done {
            notify(job, News::State);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// The thread, what it reports, and a pipe (read end, write end) that is full.
    fn watching_a_full_pipe() -> (
        Arc<Writable>,
        crossbeam_channel::Receiver<u64>,
        OwnedFd,
        OwnedFd,
    ) {
        let (sender, receiver) = crossbeam_channel::unbounded();
        let writable = Writable::start(Arc::new(move |job, _| {
            let _ = sender.send(job);
        }))
        .unwrap();
        let (read, write) = crate::supervisor::pump::pipe().unwrap();
        crate::supervisor::pump::set_nonblocking(write.as_raw_fd());
        let chunk = [0u8; 4096];
        // SAFETY: writing a valid buffer until the pipe is full.
        while unsafe { libc::write(write.as_raw_fd(), chunk.as_ptr().cast(), chunk.len()) } > 0 {}
        (writable, receiver, read, write)
    }

    #[test]
    fn a_full_pipe_is_reported_once_it_has_room() {
        let (writable, receiver, read, write) = watching_a_full_pipe();
        writable.want(7, write.as_raw_fd());
        assert!(receiver.recv_timeout(Duration::from_millis(300)).is_err());
        let mut buffer = vec![0u8; 1 << 20];
        // SAFETY: reading into a valid buffer.
        unsafe { libc::read(read.as_raw_fd(), buffer.as_mut_ptr().cast(), buffer.len()) };
        assert_eq!(receiver.recv_timeout(Duration::from_secs(10)), Ok(7));
        // Reported once.
        assert!(receiver.recv_timeout(Duration::from_millis(300)).is_err());
        writable.stop();
    }

    #[test]
    fn a_forgotten_descriptor_is_not_reported() {
        let (writable, receiver, read, write) = watching_a_full_pipe();
        writable.want(7, write.as_raw_fd());
        writable.want(8, write.as_raw_fd());
        writable.forget(7, write.as_raw_fd());
        assert!(!writable
            .shared
            .wanted
            .lock()
            .contains(&(7, write.as_raw_fd())));
        drop(read);
        // The other job's wait is untouched; the forgotten one never comes.
        assert_eq!(receiver.recv_timeout(Duration::from_secs(10)), Ok(8));
        assert!(receiver.recv_timeout(Duration::from_millis(300)).is_err());
        writable.stop();
    }
}
