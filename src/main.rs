//! The `terminalfs` binary: parse the command line, pick the mode, report errors.

use clap::Parser;
use terminalfs::cli::Cli;
use terminalfs::config::{absolute, default_mount_path, Config};
use terminalfs::{app, policy};

fn main() {
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
    if cli.unmount {
        let path = absolute(&cli.path.clone().unwrap_or_else(default_mount_path));
        return match app::unmount(&path)? {
            true => {
                println!("terminalfs: unmounted {}", path.display());
                Ok(())
            }
            false => {
                println!("terminalfs: nothing was mounted at {}", path.display());
                Ok(())
            }
        };
    }
    let config = Config::from_cli(cli)?;
    app::run(config)
}
