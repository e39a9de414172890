//! terminalfs: a FUSE filesystem that runs shell commands.
//!
//! Every module is the crate's own, so code nothing calls shows up as dead. The public
//! surface is what the binary, the benches and the integration tests use, named here.
pub(crate) mod app;
pub(crate) mod cli;
pub(crate) mod config;
pub(crate) mod fs;
pub(crate) mod fuse;
pub(crate) mod hosts;
pub(crate) mod log;
pub(crate) mod mounts;
pub(crate) mod owned;
pub(crate) mod panics;
pub(crate) mod paths;
pub(crate) mod policy;
pub(crate) mod sandbox;
pub(crate) mod selftest;
pub(crate) mod spool;
pub(crate) mod supervisor;
pub(crate) mod time;
pub(crate) mod units;

/// Serving a mount, and cleaning up after one (`--unmount`).
pub use app::{clean_up, run, Unmounted, NOTHING_MOUNTED};
/// The command line and the configuration built from it.
pub use cli::{completion_script, man_page, Cli, Subcommand};
pub use config::{absolute, default_mount_path, working_dir, Config};
/// The shell model the deny list applies its rules to, and the whitespace rule its rules
/// compare spellings by (the differential tests).
pub use policy::rules::normalize;
pub use policy::splitter::{split, Split};
/// The deny list: the settings file and the check (`terminalfs check`, `benches/policy.rs`).
pub use policy::{default_settings_json, default_settings_path, home_dir, init_settings, Policy};
/// The sandbox's settings beyond the settings file, and how a text would run in it.
pub use sandbox::{choice_text as sandbox_choice_text, Context as SandboxContext};
/// `terminalfs selftest`.
pub use selftest::{run_all as selftest, Tally};
/// The tag in the names of a mount's cgroups, for tools and tests that look for them.
pub use supervisor::cgroup::tag_for as cgroup_tag;
/// The spawner process (`supervisor::spawner`): the argument that makes this binary
/// one, and its main loop.
pub use supervisor::spawner::{serve as spawner_main, SPAWNER_ARG};
