//! What became of the thread that made a parked request, read from `/proc` (Linux
//! only). fuser does not pass FUSE_INTERRUPT on, and a caller whose request the driver
//! has read waits for the answer even when killed; so the lot asks here, and answers
//! a caller with a signal pending (EINTR) or gone (an aborted connection freed it).

/// What became of a parked request's caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(super) enum Caller {
    /// Still waiting for the answer (or out of the driver's sight).
    Waiting,
    /// It has a signal pending that it does not block: the kernel would have sent
    /// FUSE_INTERRUPT, which fuser does not pass on.
    Signalled,
    /// It is gone. A caller whose request the driver has read waits for the answer
    /// even when killed; only an aborted connection (`--unmount --force`, an `abort`
    /// file written) frees it before then.
    Gone,
}

/// What became of thread `pid` (0: one in a pid namespace the driver cannot see).
#[cfg(target_os = "linux")]
pub(super) fn caller(pid: u32) -> Caller {
    if pid == 0 {
        // A reader in a pid namespace the driver cannot see: nothing to look at.
        return Caller::Waiting;
    }
    // Only a caller whose entry is gone is gone: a read that fails otherwise (no
    // descriptor left, a /proc that hides it) says nothing, and it is left waiting.
    let status = match std::fs::read_to_string(format!("/proc/{pid}/status")) {
        Ok(status) => status,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Caller::Gone,
        Err(_) => return Caller::Waiting,
    };
    let field = |key: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(key))
            .and_then(|value| u64::from_str_radix(value.trim(), 16).ok())
            .unwrap_or(0)
    };
    if (field("SigPnd:") | field("ShdPnd:")) & !field("SigBlk:") != 0 {
        Caller::Signalled
    } else {
        Caller::Waiting
    }
}

#[cfg(not(target_os = "linux"))]
pub(super) fn caller(_pid: u32) -> Caller {
    Caller::Waiting
}
