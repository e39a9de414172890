//! A stand-in for a slow disk, in test builds only: the data writes of captures whose
//! directory lies under a held directory wait until it is let go, so a test can show
//! what does and does not wait for the disk.

use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};

/// The held directories, and how many writes wait on each.
static HELD: Mutex<Vec<(PathBuf, usize)>> = Mutex::new(Vec::new());
static LET_GO: Condvar = Condvar::new();

/// Holds the writes under `dir` until the guard is dropped.
pub struct Hold(PathBuf);

pub fn hold(dir: &Path) -> Hold {
    HELD.lock().unwrap().push((dir.to_path_buf(), 0));
    Hold(dir.to_path_buf())
}

impl Hold {
    /// How many writes under the held directory are waiting now.
    pub fn waiting(&self) -> usize {
        let held = HELD.lock().unwrap();
        held.iter()
            .find(|(dir, _)| *dir == self.0)
            .map_or(0, |(_, waiting)| *waiting)
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        HELD.lock().unwrap().retain(|(dir, _)| *dir != self.0);
        LET_GO.notify_all();
    }
}

/// Waits while a directory above `dir` is held.
pub(super) fn wait_if_held(dir: &Path) {
    let mut held = HELD.lock().unwrap();
    let Some(entry) = held.iter_mut().find(|(root, _)| dir.starts_with(root)) else {
        return;
    };
    entry.1 += 1;
    let root = entry.0.clone();
    while held.iter().any(|(dir, _)| *dir == root) {
        held = LET_GO.wait(held).unwrap();
    }
}
