//! One integration-test binary: every test drives a real terminalfs mount in a
//! temporary directory with real shell tools and real child processes.

mod common;

mod drafts;
mod lifetime;
mod mount;
mod processes;
mod reading;
mod tree;
