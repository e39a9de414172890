//! The validated configuration, built once from the command line and the environment.
//! Everything downstream takes a `Config` and never looks at flags or variables again.

use crate::cli::Cli;
use crate::policy::{default_audit_path, default_settings_path};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Config {
    pub(crate) path: PathBuf,
    pub(crate) settings: PathBuf,
    pub(crate) audit_log: PathBuf,
    pub(crate) shell: PathBuf,
    pub(crate) cwd: PathBuf,
    pub(crate) keep: Duration,
    pub(crate) settle: Duration,
    pub(crate) wait_timeout: Duration,
    pub(crate) max_output: u64,
    pub(crate) max_spool: u64,
    pub(crate) state_dir: PathBuf,
    pub(crate) timeout: Option<Duration>,
    pub(crate) kill_grace: Duration,
    pub(crate) allowlist: bool,
    pub(crate) sandbox: bool,
    /// The host of commands that name none (`--host`).
    pub(crate) host: Option<String>,
    pub(crate) daemon: bool,
    /// Log every failed file operation (`--verbose` or `TERMINALFS_LOG=debug`).
    pub(crate) verbose: bool,
    pub(crate) pid_file: Option<PathBuf>,
    pub(crate) log_file: Option<PathBuf>,
}

fn home() -> PathBuf {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// Makes a path absolute against the current directory, without touching the disk.
pub fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .unwrap_or_else(|_| PathBuf::from("/"))
            .join(path)
    }
}

/// Why a configuration cannot be built.
#[derive(Debug)]
pub enum ConfigError {
    /// The current directory, where commands start without `--cwd`, cannot be read.
    CurrentDirectory(std::io::Error),
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigError::CurrentDirectory(error) => {
                write!(f, "cannot read the current directory: {error}")
            }
        }
    }
}

impl std::error::Error for ConfigError {}

/// The directory commands start in: `dir` made absolute, else the current directory.
pub fn working_dir(dir: Option<&Path>) -> Result<PathBuf, ConfigError> {
    match dir {
        Some(dir) => Ok(absolute(dir)),
        None => std::env::current_dir().map_err(ConfigError::CurrentDirectory),
    }
}

pub fn default_mount_path() -> PathBuf {
    home().join("mnt").join("terminalfs")
}

impl Config {
    pub fn from_cli(cli: &Cli) -> Result<Config, ConfigError> {
        let shell = cli
            .shell
            .clone()
            .or_else(|| {
                std::env::var_os("SHELL")
                    .filter(|s| !s.is_empty())
                    .map(PathBuf::from)
            })
            .unwrap_or_else(|| PathBuf::from("/bin/sh"));
        let cwd = working_dir(cli.cwd.as_deref())?;
        let path = absolute(&cli.path.clone().unwrap_or_else(default_mount_path));
        let state_dir = match &cli.state_dir {
            Some(dir) => absolute(dir),
            None => crate::spool::default_dir(&path),
        };
        Ok(Config {
            path,
            settings: absolute(&cli.settings.clone().unwrap_or_else(default_settings_path)),
            audit_log: absolute(&cli.audit_log.clone().unwrap_or_else(default_audit_path)),
            shell,
            cwd,
            keep: cli.keep,
            settle: cli.settle,
            wait_timeout: cli.wait_timeout,
            max_output: cli.max_output,
            max_spool: cli.max_spool,
            state_dir,
            timeout: cli.timeout,
            kill_grace: cli.kill_grace,
            allowlist: cli.allowlist,
            sandbox: cli.sandbox,
            host: cli.host.clone(),
            daemon: cli.daemon,
            verbose: cli.verbose || crate::log::verbose_from_env(),
            pid_file: cli.pid_file.as_deref().map(absolute),
            log_file: cli.log_file.as_deref().map(absolute),
        })
    }
}
