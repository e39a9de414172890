//! The start of one command's process: its pipes, a long command held in a sealed
//! script file, its sandbox and environment, and the fork (by the spawner process, or
//! here where there is none).

use super::*;

/// Longest command passed inline as `<shell> -c <text>`.
const MAX_INLINE_COMMAND: usize = 100 * 1024;

/// A close-on-exec descriptor holding `text`, positioned at its start, that nothing
/// can write: the policy checked this text, so the shell reading it must not be able
/// to change what it reads next (`>> /dev/fd/3` from the script itself). On Linux a
/// memfd sealed against writes, growth and shrinking; elsewhere a read-only open of a
/// file that is removed before the command starts.
fn script_file(text: &[u8]) -> std::io::Result<OwnedFd> {
    #[cfg(target_os = "linux")]
    {
        use std::io::Seek;
        use std::os::fd::{AsRawFd, FromRawFd};
        // SAFETY: a NUL-terminated name and flags; the result is a new descriptor or -1.
        let fd = unsafe {
            libc::memfd_create(
                c"terminalfs-command".as_ptr(),
                libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: the descriptor was just created and is owned by nobody else.
        let mut file = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
        file.write_all(text)?;
        file.seek(std::io::SeekFrom::Start(0))?;
        let seals =
            libc::F_SEAL_WRITE | libc::F_SEAL_GROW | libc::F_SEAL_SHRINK | libc::F_SEAL_SEAL;
        // SAFETY: fcntl on a descriptor we own.
        if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_ADD_SEALS, seals) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(file.into())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let path =
            std::env::temp_dir().join(format!("terminalfs-{}-{}", std::process::id(), text.len()));
        let mut writer = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)?;
        let reader = writer
            .write_all(text)
            .and_then(|()| std::fs::File::open(&path));
        std::fs::remove_file(&path)?;
        Ok(reader?.into())
    }
}

impl Supervisor {
    /// Makes the command's pipes and forks its child (see [`spawn`]); returns its pid and
    /// who forked it, or why it could not start.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn fork(
        &self,
        job: &Arc<Job>,
        request: &SpawnRequest,
        launched: Option<&crate::hosts::driver::Launched>,
        (stdin, stdout_write, stderr_write, stderr_file): (
            Option<OwnedFd>,
            OwnedFd,
            OwnedFd,
            Option<OwnedFd>,
        ),
        (stdout_read, stderr_read): (OwnedFd, Option<OwnedFd>),
        procs: Option<std::ffi::CString>,
        rlimit: Option<u64>,
    ) -> Result<(i32, Birth), StartError> {
        let terminal = matches!(request.stdin, Stdin::Terminal(_));
        let (status_read, status_write) = pump::make_status_pipe().map_err(StartError::Pipes)?;
        // A kernel limits one argument to 128 KiB; a longer command is handed to the
        // shell as a script file on descriptor 3 instead of through `-c`.
        let script = if request.text.len() > MAX_INLINE_COMMAND {
            Some(
                script_file(&request.text).map_err(|error| StartError::Script {
                    bytes: request.text.len(),
                    error,
                })?,
            )
        } else {
            None
        };
        let script = script.filter(|_| launched.is_none());
        let mut args: Vec<&OsStr> = match &script {
            Some(_) => vec![OsStr::new("/dev/fd/3")],
            None => vec![OsStr::new("-c"), OsStr::from_bytes(&request.text)],
        };
        let cwd = request.cwd.as_ref().unwrap_or(&self.config.cwd);
        let mut program = self.config.shell.as_path();
        let mut what = format!("{} -c in {}", self.config.shell.display(), cwd.display());
        if let Some(launched) = launched {
            program = std::path::Path::new(&launched.program);
            args = launched.args.iter().map(|arg| arg.as_os_str()).collect();
            what = format!(
                "{} for host {}",
                program.display(),
                launched.remote.host().name
            );
        }
        let sandbox = request
            .sandbox
            .prepare(
                &request.name,
                cwd,
                stderr_file.as_ref().map(|file| file.as_raw_fd()),
            )
            .map_err(StartError::Sandbox)?;
        let mut env = vec![("TERMINALFS_NAME", OsStr::new(&request.name))];
        if terminal {
            env.push(("TERM", OsStr::new(terminal::pty::TERM)));
        }
        env.extend(
            sandbox
                .env
                .iter()
                .map(|(key, value)| (*key, value.as_os_str())),
        );
        // On macOS the sandbox is Seatbelt's: the shell runs under `sandbox-exec`.
        #[cfg(target_os = "macos")]
        let wrapped: Vec<&OsStr>;
        #[cfg(target_os = "macos")]
        let (program, args) = match &sandbox.profile {
            Some(profile) => {
                wrapped = [OsStr::new("-p"), OsStr::new(profile), program.as_os_str()]
                    .into_iter()
                    .chain(args.iter().copied())
                    .collect();
                (std::path::Path::new(crate::sandbox::SANDBOX_EXEC), wrapped)
            }
            None => (program, args),
        };
        let mut prepared = Prepared::new(
            program,
            &args,
            cwd,
            self.environment
                .with(&env)
                .map_err(|error| StartError::Start {
                    what: what.clone(),
                    error,
                })?,
            stdout_write.as_raw_fd(),
            stderr_write.as_raw_fd(),
            status_write.as_raw_fd(),
        )
        .map_err(|error| StartError::Start {
            what: what.clone(),
            error,
        })?;
        prepared.stdin = stdin.as_ref().map(|fd| fd.as_raw_fd());
        prepared.terminal = terminal;
        #[cfg(target_os = "linux")]
        if procs.is_some() {
            prepared.cgroup_dir = job.cgroup_fd();
        }
        prepared.procs = procs;
        prepared.rlimit = rlimit;
        prepared.script = script.as_ref().map(|fd| fd.as_raw_fd());
        prepared.stderr_open = stderr_file.as_ref().map(|file| file.as_raw_fd());
        #[cfg(target_os = "linux")]
        {
            prepared.sandbox = sandbox.child;
        }
        if let Some(report) = sandbox.report {
            job.set_sandbox(report);
        }
        let capture = Arc::new(Capture::new(job.clone(), stdout_read));
        self.registry.insert(capture.clone());
        self.pump
            .watch(capture, stderr_read, status_read, what.clone());
        let forked = match self
            .spawner
            .as_ref()
            .map(|spawner| spawner.spawn(&prepared))
        {
            Some(Ok(forked)) => forked,
            // No spawner, or the request did not reach it: fork here.
            _ => prepared.fork().map(|(pid, _)| (pid, Birth::Driver)),
        };
        let forked = forked.map_err(|error| StartError::Start { what, error })?;
        // Our copies of the child's ends go now, or the pipes never end; the script
        // too (the child has its own).
        drop((
            stdin,
            stdout_write,
            stderr_write,
            status_write,
            script,
            stderr_file,
        ));
        Ok(forked)
    }
}
