//! terminalfs: a FUSE filesystem that runs shell commands.
pub mod app;
pub mod cli;
pub mod config;
pub mod fs;
pub mod fuse;
pub mod policy;
pub mod spool;
pub mod supervisor;
pub mod units;
