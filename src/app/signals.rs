//! The signals that stop a serving driver (SIGINT, SIGTERM, SIGHUP), blocked in every
//! thread and waited for by the main one, and the reasons a driver stops.

use std::time::Duration;

/// Why a serving driver stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stop {
    /// The FUSE session ended (the mount went away).
    SessionEnded,
    /// The mount left the namespace while a file of it kept the connection.
    Detached,
    /// SIGINT, SIGTERM or SIGHUP.
    Signal(i32),
    /// A panic that the driver cannot serve on from (see `crate::panics`).
    Panic(&'static str),
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::SessionEnded => f.write_str("the mount went away"),
            Stop::Detached => f.write_str("the mount was detached"),
            Stop::Signal(signal) => f.write_str(&crate::supervisor::signals::name(*signal)),
            Stop::Panic(why) => f.write_str(why),
        }
    }
}

pub(super) fn block_signals() -> libc::sigset_t {
    // SAFETY: building a signal set and changing this thread's mask; threads spawned
    // later inherit it, so the signals reach only the sigtimedwait below. Children get
    // a clean mask from std::process::Command.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGHUP);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}

/// Waits up to `timeout` for one of the blocked signals; returns it.
pub(super) fn wait_signal(set: &libc::sigset_t, timeout: Duration) -> Option<i32> {
    #[cfg(target_os = "linux")]
    {
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: valid set and timespec; a null siginfo is allowed.
        let signal = unsafe { libc::sigtimedwait(set, std::ptr::null_mut(), &ts) };
        (signal > 0).then_some(signal)
    }
    #[cfg(not(target_os = "linux"))]
    {
        // macOS has no sigtimedwait: poll the pending set.
        std::thread::sleep(timeout);
        // SAFETY: reading this thread's pending set, then taking one signal with sigwait.
        unsafe {
            let mut pending: libc::sigset_t = std::mem::zeroed();
            libc::sigpending(&mut pending);
            for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                if libc::sigismember(&pending, signal) == 1 && libc::sigismember(set, signal) == 1 {
                    let mut got = 0;
                    libc::sigwait(set, &mut got);
                    return Some(got);
                }
            }
        }
        None
    }
}
