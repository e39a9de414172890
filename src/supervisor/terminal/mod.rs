//! What a command on a terminal needs besides its process: the pseudo-terminal itself
//! (`pty`), the screen its output draws (`screen`, rendered by the `vt100` emulator), and
//! the bytes that named keys send (`keys`). Each part is plain data and system calls; the
//! job that owns a terminal decides when to feed, read and write.

pub mod keys;
pub mod pty;
pub mod screen;

pub use keys::KeysError;
pub use screen::{Screen, TerminalSize};
