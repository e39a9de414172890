//! terminalfs: a FUSE filesystem that runs shell commands.
//!
//! Only what the binary needs is public; everything else is the crate's own, so code
//! nothing calls shows up as dead.
pub mod app;
pub mod cli;
pub mod config;
pub(crate) mod fs;
pub(crate) mod fuse;
pub(crate) mod log;
pub mod policy;
pub mod selftest;
pub(crate) mod spool;
pub(crate) mod supervisor;
pub(crate) mod time;
pub(crate) mod units;

/// The tag in the names of a mount's cgroups, for tools and tests that look for them.
pub use supervisor::cgroup::tag_for as cgroup_tag;
/// The spawner process (`supervisor::spawner`): the argument that makes this binary
/// one, and its main loop.
pub use supervisor::spawner::{serve as spawner_main, SPAWNER_ARG};
