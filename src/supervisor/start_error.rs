//! Why a command could not start: the system's error and what was being done. It is
//! said once, on the command's own stderr, where its user reads it.

use std::fmt;

#[derive(Debug)]
pub enum StartError {
    /// The pipe the child reports its exec on could not be made.
    Pipes(std::io::Error),
    /// A command too long for `-c` could not be held in a script file.
    Script { bytes: usize, error: std::io::Error },
    /// The shell could not be prepared or forked: `what` is the shell and directory.
    Start { what: String, error: std::io::Error },
    /// The sandbox could not be prepared: its own line for the command's stderr,
    /// complete (the sandbox's module words it).
    Sandbox(String),
}

impl StartError {
    /// The line the command's stderr shows.
    pub fn stderr_line(&self) -> String {
        match self {
            StartError::Sandbox(line) => line.clone(),
            _ => format!("terminalfs: {self}\n"),
        }
    }
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::Pipes(error) => write!(f, "cannot make pipes: {error}"),
            StartError::Script { bytes, error } => {
                write!(
                    f,
                    "cannot hold a {bytes}-byte command for the shell: {error}"
                )
            }
            StartError::Start { what, error } => write!(f, "cannot start {what}: {error}"),
            StartError::Sandbox(line) => f.write_str(line.trim_end()),
        }
    }
}

impl std::error::Error for StartError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StartError::Pipes(error)
            | StartError::Script { error, .. }
            | StartError::Start { error, .. } => Some(error),
            StartError::Sandbox(_) => None,
        }
    }
}
