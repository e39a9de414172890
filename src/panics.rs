//! What a panic in a serving driver ends. A panic while one request is served (or one
//! command's text is checked) is caught where that work began: the request gets an
//! error, the text a refusal, the panic one log entry with its backtrace, and the
//! mount lives on. Two panics end the driver instead, in order and with a non-zero
//! status, so a service manager starts it again with its commands restored:
//!
//! - one on a thread of the driver's own (pump, ticker, waker, spool worker, timer),
//!   which nothing above catches: whatever it was doing would never be done again;
//! - one that unwound through a lock guarding shared state ([`Watched`]: the tree's
//!   and each job's; other locks guard what a panic cannot leave half-made: a queue,
//!   a count, a file). `parking_lot` does not poison, so without this the next request would
//!   be served from state the panic may have left half-updated.
//!
//! In a build with debug assertions, `TERMINALFS_TEST_PANIC` injects panics so the
//! integration tests can reach these paths (see [`injected`]).

use parking_lot::{Mutex, MutexGuard};
use std::cell::{Cell, RefCell};
use std::ops::{Deref, DerefMut};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// Set once a panic unwound through a [`Watched`] lock.
static BROKEN: AtomicBool = AtomicBool::new(false);
/// Where panics happened so far, so each place's backtrace is logged once.
static SEEN: Mutex<std::collections::BTreeSet<(String, u32)>> =
    Mutex::new(std::collections::BTreeSet::new());
/// Places remembered at most; past them every panic's backtrace is logged.
const MAX_SEEN: usize = 256;

/// Why the driver must stop, once a panic has made it so (the first cause).
static FATAL: OnceLock<String> = OnceLock::new();

thread_local! {
    /// How many [`guard`]s this thread is inside.
    static GUARDED: Cell<u32> = const { Cell::new(0) };
    /// The report of a panic a guard of this thread is about to catch.
    static CAUGHT: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Installs the hook that logs each panic once, with its backtrace: inside a
/// [`guard`] the guard logs it with what was being done; elsewhere the hook logs it
/// and marks the driver as having to stop.
pub fn install() {
    std::panic::set_hook(Box::new(|info| {
        let thread = std::thread::current();
        let name = thread.name().unwrap_or("unnamed").to_string();
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_string());
        let place = info
            .location()
            .map_or(String::new(), |l| format!(" at {}:{}", l.file(), l.line()));
        // A panic met again at the same place (the same text checked at each write)
        // is said in one line: its backtrace was logged the first time.
        let first = info.location().is_none_or(|l| {
            let mut seen = SEEN.lock();
            seen.len() >= MAX_SEEN || seen.insert((l.file().to_string(), l.line()))
        });
        let report = if first {
            format!(
                "panic on thread {name}{place}: {message}\n{}",
                std::backtrace::Backtrace::force_capture()
            )
        } else {
            format!("panic on thread {name}{place} again: {message} (backtrace above)")
        };
        if GUARDED.with(Cell::get) > 0 {
            CAUGHT.with(|caught| *caught.borrow_mut() = Some(report));
        } else {
            crate::log::info(&format!(
                "{report}\nthe driver stops: its thread {name} has ended"
            ));
            stop_driver(format!("a panic ended its thread {name}"));
        }
    }));
}

/// Runs `work`; a panic in it is logged once (what it was doing, from `what`, then the
/// panic and its backtrace) and comes back as None. Whatever `work` owned, such as a
/// FUSE reply, is dropped on the way out (fuser answers a dropped reply with EIO).
pub fn guard<T>(what: impl FnOnce() -> String, work: impl FnOnce() -> T) -> Option<T> {
    GUARDED.with(|g| g.set(g.get() + 1));
    let result = std::panic::catch_unwind(AssertUnwindSafe(work));
    GUARDED.with(|g| g.set(g.get() - 1));
    let Err(_) = result else {
        return result.ok();
    };
    let report = CAUGHT
        .with(|caught| caught.borrow_mut().take())
        .unwrap_or_else(|| "a panic the hook did not see".to_string());
    let broken = BROKEN.load(Ordering::SeqCst);
    crate::log::info(&format!(
        "{}: {report}\n{}",
        what(),
        if broken {
            "it unwound through a lock on shared state, which it may have left \
             half-updated: the driver stops rather than serve from it"
        } else {
            "it was answered with an error; the mount and its commands go on"
        }
    ));
    if broken {
        stop_driver("a panic left shared state half-updated".to_string());
    }
    None
}

fn stop_driver(why: String) {
    let _ = FATAL.set(why);
}

/// Why the driver must stop, once a panic has made it so.
pub fn fatal() -> Option<&'static str> {
    FATAL.get().map(String::as_str)
}

/// Whether shared state may be half-updated: nothing more is served from it.
pub fn broken() -> bool {
    BROKEN.load(Ordering::SeqCst)
}

/// A mutex whose guard, dropped by a panic's unwinding, marks the driver's shared
/// state as [`broken`].
pub struct Watched<T>(Mutex<T>);

impl<T> Watched<T> {
    pub fn new(value: T) -> Watched<T> {
        Watched(Mutex::new(value))
    }

    pub fn lock(&self) -> WatchedGuard<'_, T> {
        WatchedGuard(self.0.lock())
    }
}

pub struct WatchedGuard<'a, T>(MutexGuard<'a, T>);

impl<T> Deref for WatchedGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> DerefMut for WatchedGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

impl<T> Drop for WatchedGuard<'_, T> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            BROKEN.store(true, Ordering::SeqCst);
        }
    }
}

/// The variable that injects panics in a build with debug assertions.
#[cfg(debug_assertions)]
pub const TEST_PANIC_ENV: &str = "TERMINALFS_TEST_PANIC";

/// Where a test may inject a panic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Site {
    /// A lookup of the given name, in the adapter (`lookup:NAME`).
    Lookup,
    /// A lookup of the given name, with the tree's lock held (`locked:NAME`).
    Locked,
    /// Checking a command's text that contains the given word (`check:WORD`).
    Check,
    /// The driver's own thread of that name (`thread:ticker`, `thread:waker`), at its
    /// next turn after a lookup of `panic-<name>` (see [`thread_turn`]).
    Thread,
}

/// Set by a lookup that asks the thread named in `TERMINALFS_TEST_PANIC` to panic.
static THREAD_PANIC_ASKED: AtomicBool = AtomicBool::new(false);

/// A lookup of `name`: `panic-<thread>` asks that thread to panic at its next turn
/// when `TERMINALFS_TEST_PANIC` names it.
pub fn note_lookup(name: &[u8]) {
    if let Some(thread) = name.strip_prefix(b"panic-") {
        if injected(Site::Thread, thread) {
            THREAD_PANIC_ASKED.store(true, Ordering::SeqCst);
        }
    }
}

/// One turn of the driver's own thread `name`: panics when a test asked for it.
pub fn thread_turn(name: &str) {
    if THREAD_PANIC_ASKED.load(Ordering::SeqCst) && injected(Site::Thread, name.as_bytes()) {
        panic!("a panic injected for a test");
    }
}

/// Whether `TERMINALFS_TEST_PANIC` asks for a panic at `site` about `key` (a name, a
/// text, a thread): always false without debug assertions.
pub fn injected(site: Site, key: &[u8]) -> bool {
    #[cfg(debug_assertions)]
    {
        static WANTED: OnceLock<Option<(Site, Vec<u8>)>> = OnceLock::new();
        let wanted = WANTED.get_or_init(|| {
            let value = std::env::var_os(TEST_PANIC_ENV)?;
            let (site, key) = value.to_str()?.split_once(':')?;
            let site = match site {
                "lookup" => Site::Lookup,
                "locked" => Site::Locked,
                "check" => Site::Check,
                "thread" => Site::Thread,
                _ => return None,
            };
            Some((site, key.as_bytes().to_vec()))
        });
        match wanted {
            Some((wanted, word)) if *wanted == site => match site {
                Site::Check => !word.is_empty() && key.windows(word.len()).any(|w| w == word),
                _ => key == word.as_slice(),
            },
            _ => false,
        }
    }
    #[cfg(not(debug_assertions))]
    {
        let _ = (site, key);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guarded_panic_comes_back_as_none() {
        assert_eq!(guard(|| "adding".into(), || 2 + 2), Some(4));
        let caught: Option<()> = guard(|| "failing".into(), || panic!("on purpose"));
        assert_eq!(caught, None);
        assert!(!broken(), "no watched lock was held");
    }
}
