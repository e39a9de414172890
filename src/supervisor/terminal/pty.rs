//! Pseudo-terminals: a pair made with a window size, the child side made the controlling
//! terminal of a new session, and reads of the driver's side that treat the end of the
//! terminal as an end of file.
//!
//! The driver keeps the master side; the child gets the slave side as stdin, stdout and
//! stderr. Once every process holding the slave side has closed it, Linux answers reads
//! of the master with EIO (after the bytes still buffered): that is the terminal's end of
//! file, and [`read`] reports it as `Ok(0)`.

use crate::supervisor::terminal::screen::TerminalSize;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The value of `TERM` for programs on a terminal: what the screen renderer understands.
pub const TERM: &str = "xterm-256color";

/// Both sides of a new pseudo-terminal, close-on-exec.
pub struct Pty {
    /// The driver's side: what is written here is typed; what is read, displayed.
    /// Non-blocking.
    pub master: OwnedFd,
    /// The program's side, to become its stdin, stdout and stderr.
    pub slave: OwnedFd,
}

fn winsize(size: TerminalSize) -> libc::winsize {
    libc::winsize {
        ws_row: size.rows,
        ws_col: size.cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    }
}

fn check(result: libc::c_int) -> std::io::Result<libc::c_int> {
    if result < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(result)
    }
}

impl Pty {
    /// Opens a pseudo-terminal of `size` with the line discipline's defaults (canonical
    /// input, echo, signals from Ctrl-C and Ctrl-Z, output newlines as CR LF).
    pub fn open(size: TerminalSize) -> std::io::Result<Pty> {
        let mut master: RawFd = -1;
        let mut slave: RawFd = -1;
        // macOS's openpty takes the size through a mutable pointer.
        let mut window = winsize(size);
        // SAFETY: out-pointers to two descriptors and a winsize that outlive the call;
        // no name buffer and default terminal settings.
        check(unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                &raw mut window,
            )
        })?;
        // SAFETY: openpty succeeded, so both are new descriptors owned by nobody else.
        let pty = unsafe {
            Pty {
                master: OwnedFd::from_raw_fd(master),
                slave: OwnedFd::from_raw_fd(slave),
            }
        };
        for fd in [pty.master.as_raw_fd(), pty.slave.as_raw_fd()] {
            // SAFETY: setting a descriptor flag on a descriptor we own.
            check(unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) })?;
        }
        set_nonblocking(pty.master.as_raw_fd())?;
        Ok(pty)
    }
}

fn set_nonblocking(fd: RawFd) -> std::io::Result<()> {
    // SAFETY: reading and setting the status flags of a descriptor we own.
    unsafe {
        let flags = check(libc::fcntl(fd, libc::F_GETFL))?;
        check(libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK))?;
    }
    Ok(())
}

/// Sets the window size a terminal reports (`TIOCGWINSZ`, `stty size`).
#[cfg(test)]
pub fn set_size(fd: &impl AsRawFd, size: TerminalSize) -> std::io::Result<()> {
    let window = winsize(size);
    // SAFETY: TIOCSWINSZ reads one winsize from a pointer valid for the call.
    check(unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCSWINSZ, &window) })?;
    Ok(())
}

/// The window size a terminal reports.
#[cfg(test)]
pub fn size(fd: &impl AsRawFd) -> std::io::Result<TerminalSize> {
    // SAFETY: an all-zero winsize is a valid value to be overwritten.
    let mut window: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: TIOCGWINSZ writes one winsize through a pointer valid for the call.
    check(unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCGWINSZ, &mut window) })?;
    Ok(TerminalSize {
        cols: window.ws_col,
        rows: window.ws_row,
    })
}

/// In the child between fork and exec, after `setsid`: makes the terminal on `fd` (its
/// stdin) the controlling terminal of the new session, so that Ctrl-C reaches the
/// foreground process group and `/dev/tty` opens. Async-signal-safe.
pub fn make_controlling_terminal(fd: RawFd) -> std::io::Result<()> {
    // SAFETY: TIOCSCTTY takes an integer argument; no memory is touched.
    check(unsafe { libc::ioctl(fd, libc::TIOCSCTTY as _, 0) })?;
    Ok(())
}

/// Reads what the program displayed. `Ok(0)` is the end: every process has closed its
/// side of the terminal. `WouldBlock` means nothing is there yet.
#[cfg(test)]
pub fn read(master: &impl AsRawFd, buf: &mut [u8]) -> std::io::Result<usize> {
    // SAFETY: reading into a buffer valid for its length.
    let n = unsafe { libc::read(master.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    if n >= 0 {
        return Ok(n as usize);
    }
    let error = std::io::Error::last_os_error();
    if error.raw_os_error() == Some(libc::EIO) {
        return Ok(0);
    }
    Err(error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    /// Runs `script` under `sh` on a new terminal of `size`; returns what it displayed.
    fn run_on_terminal(size: TerminalSize, script: &str) -> String {
        let pty = Pty::open(size).expect("a pseudo-terminal");
        let stdio = |fd: &OwnedFd| Stdio::from(fd.try_clone().expect("dup"));
        let mut command = Command::new("/bin/sh");
        command
            .arg("-c")
            .arg(script)
            .env("TERM", TERM)
            .stdin(stdio(&pty.slave))
            .stdout(stdio(&pty.slave))
            .stderr(stdio(&pty.slave));
        // SAFETY: setsid and an ioctl, both async-signal-safe.
        unsafe {
            command.pre_exec(|| {
                check(libc::setsid())?;
                make_controlling_terminal(0)
            });
        }
        let mut child = command.spawn().expect("sh starts");
        drop(command);
        drop(pty.slave);
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut shown = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match read(&pty.master, &mut buf) {
                Ok(0) => break,
                Ok(n) => shown.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    assert!(Instant::now() < deadline, "no end of the terminal");
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => panic!("reading the terminal: {e}"),
            }
        }
        child.wait().expect("sh is reaped");
        String::from_utf8_lossy(&shown).into_owned()
    }

    #[test]
    fn the_child_sees_its_size_and_a_controlling_terminal() {
        let size = TerminalSize { cols: 97, rows: 31 };
        let shown = run_on_terminal(
            size,
            "stty size; test -t 0 && test -t 1 && test -t 2 && echo all-terminals; \
             echo \"TERM=$TERM\"; (: < /dev/tty) && echo has-tty",
        );
        assert!(shown.contains("31 97\r\n"), "{shown:?}");
        assert!(shown.contains("all-terminals\r\n"), "{shown:?}");
        assert!(shown.contains("TERM=xterm-256color\r\n"), "{shown:?}");
        assert!(shown.contains("has-tty\r\n"), "{shown:?}");
    }

    #[test]
    fn resize_is_reported() {
        let pty = Pty::open(TerminalSize::default()).expect("a pseudo-terminal");
        assert_eq!(size(&pty.slave).unwrap(), TerminalSize::default());
        let new = TerminalSize { cols: 7, rows: 3 };
        set_size(&pty.master, new).unwrap();
        assert_eq!(size(&pty.slave).unwrap(), new);
    }

    #[test]
    fn the_end_of_the_terminal_reads_as_end_of_file() {
        let pty = Pty::open(TerminalSize::default()).expect("a pseudo-terminal");
        let mut buf = [0u8; 16];
        assert_eq!(
            read(&pty.master, &mut buf).unwrap_err().kind(),
            std::io::ErrorKind::WouldBlock
        );
        drop(pty.slave);
        assert_eq!(read(&pty.master, &mut buf).unwrap(), 0);
    }
}
