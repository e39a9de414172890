//! The spool's errors: why the state directory cannot be used, why a command's files
//! cannot be read back, why output finds no room. Each carries its cause (the system's
//! error where there is one) and a sentence naming the file; it is said once, where it
//! is reported (the driver's exit message, the log line of a command left in place).

use std::fmt;

#[derive(Debug)]
pub enum SpoolError {
    /// The state directory or its lock may not be used as it is (a symbolic link,
    /// another user's, open to others, held by another driver): the sentence says why
    /// and what to do.
    Refused(String),
    /// A system call on a file of the spool failed: what was being done, and the error.
    Io {
        doing: String,
        error: std::io::Error,
    },
    /// A file of a command's directory does not hold what the spool writes there.
    Damaged(String),
    /// Running commands alone fill `--max-spool`.
    Full(String),
}

impl SpoolError {
    pub(super) fn io(doing: impl Into<String>, error: std::io::Error) -> SpoolError {
        SpoolError::Io {
            doing: doing.into(),
            error,
        }
    }

    /// The errno of a failed system call, if that is the cause.
    pub fn errno(&self) -> Option<i32> {
        match self {
            SpoolError::Io { error, .. } => error.raw_os_error(),
            _ => None,
        }
    }
}

impl fmt::Display for SpoolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpoolError::Refused(sentence)
            | SpoolError::Damaged(sentence)
            | SpoolError::Full(sentence) => f.write_str(sentence),
            SpoolError::Io { doing, error } => write!(f, "{doing}: {error}"),
        }
    }
}

impl std::error::Error for SpoolError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SpoolError::Io { error, .. } => Some(error),
            _ => None,
        }
    }
}

impl From<SpoolError> for String {
    fn from(error: SpoolError) -> String {
        error.to_string()
    }
}
