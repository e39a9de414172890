//! The `terminalfs` binary: parse the command line, pick the mode, report errors.

use clap::Parser;
use std::io::{Read, Write};
use std::path::Path;
use terminalfs::{
    absolute, default_mount_path, working_dir, Cli, Config, Policy, Subcommand, Unmounted,
};

fn main() {
    // The driver runs this binary again as its spawner process.
    if std::env::args_os().nth(1).as_deref() == Some(std::ffi::OsStr::new(terminalfs::SPAWNER_ARG))
    {
        std::process::exit(terminalfs::spawner_main());
    }
    let cli = Cli::parse();
    if let Some(Subcommand::Check {
        settings,
        allowlist,
        cwd,
        text,
    }) = &cli.command
    {
        std::process::exit(
            match check(
                settings.as_deref(),
                (*allowlist, cli.sandbox),
                cwd.as_deref(),
                text,
            ) {
                Ok(allowed) => i32::from(!allowed),
                Err(message) => {
                    report(&message);
                    2
                }
            },
        );
    }
    let code = match run(&cli) {
        Ok(Done::Done) => 0,
        Ok(Done::NothingMounted) => terminalfs::NOTHING_MOUNTED,
        Err(message) => {
            report(&message);
            1
        }
    };
    std::process::exit(code);
}

/// How a run that did not fail ended.
enum Done {
    Done,
    /// `--unmount` found nothing mounted.
    NothingMounted,
}

/// Whatever stopped a run: each module's own error, or a sentence, reported once.
type Failure = Box<dyn std::error::Error>;

fn run(cli: &Cli) -> Result<Done, Failure> {
    // Packaging helpers: they read no settings and mount nothing.
    if let Some(shell) = cli.completions {
        return print_bytes(&terminalfs::completion_script(shell)).map(|()| Done::Done);
    }
    if let Some(subcommand) = &cli.man {
        let page = terminalfs::man_page(subcommand.as_deref())
            .map_err(|e| format!("cannot render the man page: {e}"))?;
        return print_bytes(&page).map(|()| Done::Done);
    }
    if let Some(file) = &cli.init_settings {
        let path = absolute(
            &file
                .clone()
                .or_else(|| cli.settings.clone())
                .unwrap_or_else(terminalfs::default_settings_path),
        );
        terminalfs::init_settings(&path)?;
        println!(
            "terminalfs: wrote the default settings to {}",
            path.display()
        );
        return Ok(Done::Done);
    }
    if let Some(Subcommand::Selftest { path }) = &cli.command {
        let path = absolute(
            &path
                .clone()
                .or_else(|| cli.path.clone())
                .unwrap_or_else(default_mount_path),
        );
        let tally = terminalfs::selftest(&path, &mut std::io::stdout().lock())
            .map_err(|e| format!("cannot write to standard output: {e}"))?;
        if tally.failed > 0 {
            return Err(format!(
                "selftest: {} of {} checks failed",
                tally.failed,
                tally.failed + tally.passed
            )
            .into());
        }
        return Ok(Done::Done);
    }
    if cli.unmount {
        let path = absolute(&cli.path.clone().unwrap_or_else(default_mount_path));
        // A driver stops its commands within its kill grace; 5 s more for the rest.
        let patience = cli.kill_grace + std::time::Duration::from_secs(5);
        let state_dir = cli.state_dir().map(|dir| absolute(&dir));
        return Ok(
            match terminalfs::clean_up(&path, state_dir.as_deref(), cli.force, patience)? {
                Unmounted::Done(message) => {
                    println!("terminalfs: {message}");
                    Done::Done
                }
                Unmounted::Nothing(message) => {
                    println!("terminalfs: {message}");
                    Done::NothingMounted
                }
            },
        );
    }
    if let Err(bad) = cli.check_paths() {
        bad.exit();
    }
    let config = Config::from_cli(cli)?;
    terminalfs::run(config)?;
    Ok(Done::Done)
}

/// `terminalfs check`: prints the decision and returns whether the text would run.
/// Commands start in `cwd` (else the current directory), as in a mount's `--cwd`.
fn check(
    settings: Option<&Path>,
    (allowlist, sandbox): (bool, bool),
    cwd: Option<&Path>,
    text: &str,
) -> Result<bool, Failure> {
    let path =
        absolute(&settings.map_or_else(terminalfs::default_settings_path, Path::to_path_buf));
    let cwd = working_dir(cwd)?;
    let policy = Policy::load(&path, allowlist)?
        .with_start_dir(&cwd, Some(&terminalfs::home_dir()))
        .with_sandbox(terminalfs::SandboxContext {
            forced: sandbox,
            home: terminalfs::home_dir(),
            ..Default::default()
        });
    let text = if text == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read standard input: {e}"))?;
        bytes
    } else {
        text.as_bytes().to_vec()
    };
    let explained = policy.explain(&text);
    print_bytes(explained.report().as_bytes())?;
    if explained.verdict.is_allowed() {
        let mut lines = vec![format!(
            "sandbox for this text: {}",
            terminalfs::sandbox_choice_text(&policy, explained.directives.sandbox)
        )];
        lines.extend(policy.sandbox_lines());
        print_bytes(format!("{}\n", lines.join("\n")).as_bytes())?;
    }
    Ok(explained.verdict.is_allowed())
}

/// Says why on stderr. A stderr that cannot be written (a closed pipe) loses the
/// sentence, not the exit code: `eprintln!` would panic and exit 101.
fn report(message: &dyn std::fmt::Display) {
    let _ = writeln!(std::io::stderr(), "terminalfs: {message}");
}

fn print_bytes(bytes: &[u8]) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(|e| format!("cannot write to standard output: {e}").into())
}
