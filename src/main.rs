//! The `terminalfs` binary: parse the command line, pick the mode, report errors.

use clap::Parser;
use std::io::Write;
use terminalfs::cli::{self, Cli};
use terminalfs::config::{absolute, default_mount_path, Config};
use terminalfs::{app, policy, selftest};

fn main() {
    // The driver runs this binary again as its spawner process.
    if std::env::args_os().nth(1).as_deref() == Some(std::ffi::OsStr::new(terminalfs::SPAWNER_ARG))
    {
        std::process::exit(terminalfs::spawner_main());
    }
    let cli = Cli::parse();
    let code = match run(&cli) {
        Ok(()) => 0,
        Err(message) => {
            eprintln!("terminalfs: {message}");
            1
        }
    };
    std::process::exit(code);
}

fn run(cli: &Cli) -> Result<(), String> {
    // Packaging helpers: they read no settings and mount nothing.
    if let Some(shell) = cli.completions {
        return print_bytes(&cli::completion_script(shell));
    }
    if cli.man {
        let page = cli::man_page().map_err(|e| format!("cannot render the man page: {e}"))?;
        return print_bytes(&page);
    }
    if let Some(file) = &cli.init_settings {
        let path = absolute(
            &file
                .clone()
                .or_else(|| cli.settings.clone())
                .unwrap_or_else(policy::default_settings_path),
        );
        policy::init_settings(&path)?;
        println!(
            "terminalfs: wrote the default settings to {}",
            path.display()
        );
        return Ok(());
    }
    if let Some(cli::Subcommand::Selftest { path }) = &cli.command {
        let path = absolute(
            &path
                .clone()
                .or_else(|| cli.path.clone())
                .unwrap_or_else(default_mount_path),
        );
        let tally = selftest::run_all(&path, &mut std::io::stdout().lock())
            .map_err(|e| format!("cannot write to standard output: {e}"))?;
        if tally.failed > 0 {
            return Err(format!(
                "selftest: {} of {} checks failed",
                tally.failed,
                tally.failed + tally.passed
            ));
        }
        return Ok(());
    }
    if cli.unmount {
        let path = absolute(&cli.path.clone().unwrap_or_else(default_mount_path));
        println!("terminalfs: {}", app::clean_up(&path)?);
        return Ok(());
    }
    let config = Config::from_cli(cli)?;
    app::run(config)
}

fn print_bytes(bytes: &[u8]) -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(|e| format!("cannot write to standard output: {e}"))
}
