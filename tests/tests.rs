//! One integration-test binary: every test drives a real terminalfs mount in a
//! temporary directory with real shell tools and real child processes.

mod common;

mod capture;

mod deny;
mod differential;
mod drafts;
mod driver;
mod edges;
mod events;
mod hosts;
mod interactive;
mod lifetime;
mod mount;
mod output;
mod packaging;
mod processes;
mod reading;
mod refusals;
// The sandbox run here is Linux's; the Seatbelt one is not run in CI.
#[cfg(target_os = "linux")]
mod sandbox;
mod selftest;
mod spool;
mod supervision;
mod tree;
