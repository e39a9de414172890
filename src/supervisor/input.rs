//! A command's input, when it has one: the write end of its stdin pipe, or the master side
//! of its terminal together with the screen that the terminal's output draws.
//!
//! Nothing here blocks. Raw writes go straight to the descriptor, which is non-blocking:
//! a full pipe takes part of a write or none of it, and the caller decides whether to wait
//! and try again. Keys and the terminal's answers to status queries must arrive whole, so
//! what the terminal does not take at once waits in a small backlog, which goes out first
//! on the next write, on each output the program makes, and on the tree's periodic tick.
//! Whenever a write finds no room, the input asks the [`Writable`] thread to report its
//! job as soon as there is room, so the parked write is tried again at once.
//!
//! A write that has waited a while for room ([`Input::lean`]) is not kept waiting
//! longer: while the kernel waits for its answer it holds the file's lock, which
//! `rm stdin` (and every lookup in the command's directory behind that `rm`) needs.
//! So its first byte joins the backlog and counts as written; its writer comes back
//! with the rest. Once the command has taken nothing for the writer's patience, such
//! a write is refused as `Full` instead.
//!
//! Locks: the screen's lock may be held while taking the input's lock, never the other
//! way round.

use crate::supervisor::terminal::keys::{self, KeyModes, KeysError};
use crate::supervisor::terminal::{Screen, TerminalSize};
use crate::supervisor::writable::Watch;
use parking_lot::Mutex;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// What a command reads, as the supervisor is asked to set it up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Stdin {
    /// `/dev/null`: end of file at once.
    #[default]
    Closed,
    /// A pipe the driver writes into.
    Pipe,
    /// A pseudo-terminal of this size, which is also stdout and stderr.
    Terminal(TerminalSize),
}

/// The most bytes waiting for a terminal to take them.
const MAX_BACKLOG: usize = 256 * 1024;

/// The longest held write taken whole into the backlog: Linux's `PIPE_BUF`, written out
/// so that the README's 4 KiB holds where `PIPE_BUF` is smaller (512 on macOS).
const WHOLE_MAX: usize = 4096;

/// Why `keys` fails for a command that has no terminal.
pub const KEYS_NEED_A_TERMINAL: &str =
    "keys need a terminal: start the command with '#terminalfs tty'";

/// Why input was not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputError {
    /// Nothing fits now; try again later.
    Full,
    /// The command's stdin was closed by removing `stdin`.
    Closed,
    /// Nothing reads it any more: the command stopped or closed its input.
    Gone,
    /// The keys cannot be sent.
    Keys(KeysError),
    /// Keys need a terminal; this command has a plain pipe.
    NotTerminal,
    /// A terminal is not closed from its input side.
    TerminalNotClosable,
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InputError::Full => write!(f, "the command's input is full: it is not reading"),
            InputError::Closed => write!(f, "stdin was closed (removed); nothing more is taken"),
            InputError::Gone => write!(
                f,
                "nothing reads this input any more: the command has stopped or closed it"
            ),
            InputError::Keys(error) => write!(f, "{error}"),
            InputError::NotTerminal => {
                write!(
                    f,
                    "{KEYS_NEED_A_TERMINAL}; write raw input to stdin instead"
                )
            }
            InputError::TerminalNotClosable => write!(
                f,
                "a terminal cannot be closed from its input side: send C-d through keys for \
                 end of file, or stop the command with kill"
            ),
        }
    }
}

struct Descriptor {
    /// None once closed by removing `stdin` (and what was taken before is out), or
    /// once released.
    fd: Option<OwnedFd>,
    /// Bytes that must follow everything already written, whole.
    backlog: Vec<u8>,
    /// A write found no reader.
    gone: bool,
    /// `stdin` was removed: nothing more is taken, and the descriptor closes as soon
    /// as the backlog (bytes its writers were told were written) is out.
    closed: bool,
    /// Since when a write has found no room, with nothing taken since; None once the
    /// descriptor takes a byte.
    full_since: Option<Instant>,
}

/// The input side of one command.
pub struct Input {
    descriptor: Mutex<Descriptor>,
    /// Present for a command on a terminal.
    screen: Option<Mutex<Screen>>,
    /// Who to tell that a write found no room; None in tests of this module alone.
    watch: Option<Watch>,
}

impl Input {
    /// Input through a pipe whose (non-blocking) write end is `fd`.
    pub(crate) fn pipe(fd: OwnedFd, watch: Option<Watch>) -> Input {
        Input {
            descriptor: Mutex::new(Descriptor {
                fd: Some(fd),
                backlog: Vec::new(),
                gone: false,
                closed: false,
                full_since: None,
            }),
            screen: None,
            watch,
        }
    }

    /// Input through a terminal whose (non-blocking) master side is `master`.
    pub(crate) fn terminal(master: OwnedFd, size: TerminalSize, watch: Option<Watch>) -> Input {
        Input {
            screen: Some(Mutex::new(Screen::new(size))),
            ..Input::pipe(master, watch)
        }
    }

    /// `Full`, after asking to hear when there is room.
    fn full(&self, descriptor: &mut Descriptor) -> InputError {
        descriptor.full_since.get_or_insert_with(Instant::now);
        self.wait_for_room(descriptor);
        InputError::Full
    }

    /// Whether the command has taken nothing for `patience` while writes waited.
    fn stalled(descriptor: &Descriptor, patience: Duration) -> bool {
        descriptor
            .full_since
            .is_some_and(|since| since.elapsed() >= patience)
    }

    fn wait_for_room(&self, descriptor: &Descriptor) {
        if let (Some(watch), Some(fd)) = (&self.watch, &descriptor.fd) {
            watch.writable.want(watch.job, fd.as_raw_fd());
        }
    }

    pub fn is_terminal(&self) -> bool {
        self.screen.is_some()
    }

    /// Writes raw bytes: takes as many as fit now, in order after any backlog. `Full`
    /// when none fit.
    pub fn write(&self, data: &[u8]) -> Result<usize, InputError> {
        let mut descriptor = self.descriptor.lock();
        self.flush_locked(&mut descriptor)?;
        if !descriptor.backlog.is_empty() {
            return Err(self.full(&mut descriptor));
        }
        if data.is_empty() {
            return Ok(0);
        }
        match write_some(&mut descriptor, data)? {
            0 => Err(self.full(&mut descriptor)),
            n => Ok(n),
        }
    }

    /// A raw write that has waited for room as long as a write is held: takes what
    /// fits now, else, unless the command has taken nothing for `patience` (or the
    /// backlog is at its bound), part of `data` into the backlog, so that its writer
    /// gets a count and lets go of the file: the whole write when it is [`WHOLE_MAX`]
    /// bytes or fewer (so that writers sharing the input do not mix within such a
    /// write, as a Linux pipe promises up to `PIPE_BUF`), else its first byte alone
    /// (the writer comes back for the rest). `Full` otherwise.
    pub fn lean(&self, data: &[u8], patience: Duration) -> Result<usize, InputError> {
        match self.write(data) {
            Err(InputError::Full) => {}
            taken => return taken,
        }
        let mut descriptor = self.descriptor.lock();
        let whole = data.len() <= WHOLE_MAX;
        let part = if whole {
            data
        } else {
            &data[..1.min(data.len())]
        };
        if part.is_empty()
            || Self::stalled(&descriptor, patience)
            || descriptor.backlog.len() + part.len() > MAX_BACKLOG
        {
            return Err(self.full(&mut descriptor));
        }
        // Between the two locks the command may have read, or the input closed: the
        // bytes go after what waits, and only while the input still takes bytes.
        self.flush_locked(&mut descriptor)?;
        descriptor.backlog.extend_from_slice(part);
        self.flush_locked(&mut descriptor)?;
        if !descriptor.backlog.is_empty() {
            self.wait_for_room(&descriptor);
        }
        Ok(part.len())
    }

    /// Sends a write to `keys`: encoded whole, in the terminal's current key modes, and
    /// taken whole or not at all.
    pub fn send_keys(&self, text: &[u8]) -> Result<(), InputError> {
        self.send_keys_after(text, None)
    }

    /// [`Input::send_keys`] for a write that has waited for room as long as a write is
    /// held: keys cannot be taken in part, so they join the backlog whole, unless the
    /// terminal has taken nothing for `patience` or the backlog would pass its bound
    /// (`Full`).
    pub fn lean_keys(&self, text: &[u8], patience: Duration) -> Result<(), InputError> {
        self.send_keys_after(text, Some(patience))
    }

    /// Sends keys; `patience` is None for a first try (`Full` while keys wait), the
    /// patience of a write that has waited its hold.
    fn send_keys_after(&self, text: &[u8], patience: Option<Duration>) -> Result<(), InputError> {
        let Some(screen) = &self.screen else {
            return Err(InputError::NotTerminal);
        };
        let modes = KeyModes {
            application_cursor: screen.lock().application_cursor(),
        };
        let bytes = keys::encode(text, modes).map_err(InputError::Keys)?;
        let mut descriptor = self.descriptor.lock();
        self.flush_locked(&mut descriptor)?;
        if !descriptor.backlog.is_empty() {
            let joins = patience.is_some_and(|patience| {
                !Self::stalled(&descriptor, patience)
                    && descriptor.backlog.len() + bytes.len() <= MAX_BACKLOG
            });
            if !joins {
                return Err(self.full(&mut descriptor));
            }
            descriptor.backlog.extend_from_slice(&bytes);
            self.wait_for_room(&descriptor);
            return Ok(());
        }
        let written = write_some(&mut descriptor, &bytes)?;
        descriptor.backlog.extend_from_slice(&bytes[written..]);
        if !descriptor.backlog.is_empty() {
            self.wait_for_room(&descriptor);
        }
        Ok(())
    }

    /// Closes a pipe so that the command reads end of file, after what its writers
    /// were told was written: the descriptor stays open until the backlog is out.
    pub fn close(&self) -> Result<(), InputError> {
        if self.is_terminal() {
            return Err(InputError::TerminalNotClosable);
        }
        let mut descriptor = self.descriptor.lock();
        descriptor.closed = true;
        let _ = self.flush_locked(&mut descriptor);
        Ok(())
    }

    /// The command has stopped and its output is drained: nothing reads what would be
    /// written any more. Closes the descriptor (a pipe's write end, a terminal's master,
    /// which frees the pseudo-terminal), so a finished command holds none; the screen
    /// stays as the program left it, and later writes fail as they would on a reader
    /// that is gone.
    pub(crate) fn release(&self) {
        let mut descriptor = self.descriptor.lock();
        descriptor.gone = true;
        descriptor.backlog = Vec::new();
        if let (Some(watch), Some(fd)) = (&self.watch, &descriptor.fd) {
            watch.writable.forget(watch.job, fd.as_raw_fd());
        }
        descriptor.fd = None;
    }

    /// Sends what waits in the backlog, as far as it goes now.
    pub fn flush(&self) {
        let _ = self.flush_locked(&mut self.descriptor.lock());
    }

    /// Sends what waits in the backlog, as far as it goes now, and closes a removed
    /// input once it is all out. `Closed` or `Gone` when the input takes nothing more.
    fn flush_locked(&self, descriptor: &mut Descriptor) -> Result<(), InputError> {
        if !descriptor.backlog.is_empty() {
            let backlog = std::mem::take(&mut descriptor.backlog);
            match write_some(descriptor, &backlog) {
                Ok(written) => descriptor.backlog = backlog[written..].to_vec(),
                // Bytes writers were told were written wait while a reader may come
                // for them; none will once the input is gone. (`write_some` fails only
                // then, or with the descriptor dropped, which waits for an empty
                // backlog: this keeps them should another failure ever come.)
                Err(error) => {
                    if !descriptor.gone {
                        descriptor.backlog = backlog;
                    }
                    return Err(error);
                }
            }
        }
        if descriptor.closed && descriptor.backlog.is_empty() {
            if let (Some(watch), Some(fd)) = (&self.watch, &descriptor.fd) {
                watch.writable.forget(watch.job, fd.as_raw_fd());
            }
            descriptor.fd = None;
        }
        if descriptor.gone {
            Err(InputError::Gone)
        } else if descriptor.closed {
            Err(InputError::Closed)
        } else {
            Ok(())
        }
    }

    /// Feeds what the program displayed to the screen and answers its status queries.
    /// Does nothing for a pipe.
    pub(crate) fn displayed(&self, bytes: &[u8]) {
        let Some(screen) = &self.screen else {
            return;
        };
        let answers = screen.lock().feed(bytes);
        let mut descriptor = self.descriptor.lock();
        if descriptor.backlog.len() + answers.len() <= MAX_BACKLOG {
            descriptor.backlog.extend_from_slice(&answers);
        }
        let _ = self.flush_locked(&mut descriptor);
    }

    /// The screen as text, for a terminal.
    pub fn screen_text(&self) -> Option<String> {
        self.screen.as_ref().map(|screen| screen.lock().text())
    }

    /// The terminal's size and cursor (row, column from 0), for a terminal.
    pub fn terminal_state(&self) -> Option<(TerminalSize, (u16, u16))> {
        let screen = self.screen.as_ref()?.lock();
        Some((screen.size(), screen.cursor()))
    }

    /// Whether `stdin` can still be written: not closed, and read by someone as far as
    /// the driver knows.
    pub fn is_open(&self) -> bool {
        let descriptor = self.descriptor.lock();
        descriptor.fd.is_some() && !descriptor.gone && !descriptor.closed
    }
}

/// One non-blocking write; 0 when nothing fits now.
fn write_some(descriptor: &mut Descriptor, data: &[u8]) -> Result<usize, InputError> {
    if descriptor.gone {
        return Err(InputError::Gone);
    }
    let Some(fd) = &descriptor.fd else {
        return Err(InputError::Closed);
    };
    loop {
        // SAFETY: writing from a buffer valid for its length to a descriptor we own.
        let n = unsafe { libc::write(fd.as_raw_fd(), data.as_ptr().cast(), data.len()) };
        if n > 0 {
            descriptor.full_since = None;
        }
        if n >= 0 {
            return Ok(n as usize);
        }
        match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EAGAIN) => return Ok(0),
            _ => {
                // EPIPE (no reader), EIO (the terminal has ended): nothing will take it.
                descriptor.gone = true;
                descriptor.backlog.clear();
                return Err(InputError::Gone);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::supervisor::terminal::pty::{self, Pty};
    use std::os::fd::FromRawFd;

    /// A non-blocking pipe: (read end, write end).
    fn pipe() -> (OwnedFd, OwnedFd) {
        let mut fds = [0; 2];
        // SAFETY: pipe fills two descriptors into a valid array (pipe2 is not on macOS).
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        for fd in fds {
            // SAFETY: setting flags on descriptors we own.
            unsafe {
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
                libc::fcntl(fd, libc::F_SETFL, libc::O_NONBLOCK);
            }
        }
        // SAFETY: both descriptors are new and owned by nobody else.
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
    }

    fn read_all(fd: &OwnedFd) -> Vec<u8> {
        let mut out = Vec::new();
        let mut buf = [0u8; 65536];
        loop {
            // SAFETY: reading into a valid buffer.
            let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                return out;
            }
            out.extend_from_slice(&buf[..n as usize]);
        }
    }

    #[test]
    fn pipe_writes_arrive_in_order_and_a_full_pipe_takes_nothing() {
        let (read, write) = pipe();
        let input = Input::pipe(write, None);
        assert_eq!(input.write(b"one\n"), Ok(4));
        assert_eq!(input.write(b"two\n"), Ok(4));
        assert_eq!(read_all(&read), b"one\ntwo\n");
        // Fill the pipe: a write then takes part, then nothing.
        let big = vec![b'x'; 1 << 20];
        let mut taken = 0;
        loop {
            match input.write(&big) {
                Ok(n) => taken += n,
                Err(error) => {
                    assert_eq!(error, InputError::Full);
                    break;
                }
            }
        }
        assert!(taken > 0 && taken < big.len(), "{taken}");
        assert_eq!(read_all(&read).len(), taken);
        assert_eq!(input.write(b"after\n"), Ok(6));
        assert_eq!(read_all(&read), b"after\n");
    }

    /// Fills `input`'s pipe; how many bytes it took.
    fn fill(input: &Input) -> usize {
        let big = vec![b'x'; 1 << 20];
        let mut taken = 0;
        while let Ok(n) = input.write(&big) {
            taken += n;
        }
        taken
    }

    #[test]
    fn a_held_write_takes_a_byte_until_the_patience_runs_out_and_closing_waits_for_it() {
        let (read, write) = pipe();
        let input = Input::pipe(write, None);
        let taken = fill(&input);
        // A held write is answered in part, one byte at a time, in order behind the
        // ones before; a fresh write still waits behind them.
        let patience = Duration::from_secs(3600);
        let long = vec![b'a'; WHOLE_MAX + 1];
        assert_eq!(input.lean(&long, patience), Ok(1));
        assert_eq!(input.lean(b"b", patience), Ok(1));
        assert_eq!(input.write(b"c"), Err(InputError::Full));
        assert_eq!(input.lean(b"", patience), Err(InputError::Full));
        // Once the command has taken nothing for the patience, it is refused.
        assert_eq!(input.lean(b"c", Duration::ZERO), Err(InputError::Full));
        // Removal takes nothing more, but what was taken arrives before end of file.
        input.close().unwrap();
        assert!(!input.is_open());
        assert_eq!(input.write(b"c"), Err(InputError::Closed));
        assert_eq!(input.lean(b"c", patience), Err(InputError::Closed));
        let mut got = read_all(&read);
        input.flush();
        got.extend(read_all(&read));
        assert_eq!(got.len(), taken + 2);
        assert!(got.ends_with(b"xab"), "{:?}", &got[got.len() - 3..]);
        let mut buf = [0u8; 4];
        // SAFETY: reading into a valid buffer; 0 is end of file, the descriptor closed.
        assert_eq!(
            unsafe { libc::read(read.as_raw_fd(), buf.as_mut_ptr().cast(), 4) },
            0
        );
    }

    #[test]
    fn a_held_write_a_pipe_takes_whole_is_taken_whole() {
        let (read, write) = pipe();
        let input = Input::pipe(write, None);
        let taken = fill(&input);
        // Two writers of a line each, their writes held: neither line is split, so
        // they cannot mix, whichever comes back first.
        let patience = Duration::from_secs(3600);
        assert_eq!(input.lean(b"AAAA\n", patience), Ok(5));
        assert_eq!(input.lean(b"BBBB\n", patience), Ok(5));
        let line = vec![b'c'; WHOLE_MAX];
        assert_eq!(input.lean(&line, patience), Ok(WHOLE_MAX));
        let mut got = read_all(&read);
        input.flush();
        got.extend(read_all(&read));
        assert_eq!(got.len(), taken + 10 + WHOLE_MAX);
        assert!(got[taken..].starts_with(b"AAAA\nBBBB\nccc"));
    }

    #[test]
    fn a_held_write_takes_what_fits_once_there_is_room() {
        let (read, write) = pipe();
        let input = Input::pipe(write, None);
        let taken = fill(&input);
        assert_eq!(read_all(&read).len(), taken);
        assert_eq!(input.lean(b"room", Duration::ZERO), Ok(4));
        assert_eq!(read_all(&read), b"room");
    }

    #[test]
    fn held_keys_join_the_backlog_whole_until_the_patience_runs_out() {
        // A pipe stands in for the terminal's master side: it fills the same way.
        let (read, write) = pipe();
        let size = TerminalSize { cols: 40, rows: 10 };
        let input = Input::terminal(write, size, None);
        let taken = fill(&input);
        assert_eq!(input.send_keys(b"'a'"), Ok(()));
        assert_eq!(input.send_keys(b"'b'"), Err(InputError::Full));
        let patience = Duration::from_secs(3600);
        assert_eq!(input.lean_keys(b"'b' 'c'", patience), Ok(()));
        assert_eq!(
            input.lean_keys(b"'d'", Duration::ZERO),
            Err(InputError::Full)
        );
        let mut got = read_all(&read);
        input.flush();
        got.extend(read_all(&read));
        assert_eq!(got.len(), taken + 3);
        assert!(got.ends_with(b"xabc"));
    }

    #[test]
    fn closing_gives_end_of_file_and_refuses_later_writes() {
        let (read, write) = pipe();
        let input = Input::pipe(write, None);
        assert!(input.is_open());
        input.close().unwrap();
        assert!(!input.is_open());
        let mut buf = [0u8; 4];
        // SAFETY: reading into a valid buffer.
        assert_eq!(
            unsafe { libc::read(read.as_raw_fd(), buf.as_mut_ptr().cast(), 4) },
            0
        );
        assert_eq!(input.write(b"late"), Err(InputError::Closed));
        assert_eq!(input.send_keys(b"Enter"), Err(InputError::NotTerminal));
    }

    #[test]
    fn a_reader_gone_is_reported() {
        let (read, write) = pipe();
        let input = Input::pipe(write, None);
        drop(read);
        assert_eq!(input.write(b"x"), Err(InputError::Gone));
        assert!(!input.is_open());
    }

    #[test]
    fn a_released_pipe_is_closed_and_refuses_writes_as_gone() {
        let (read, write) = pipe();
        let input = Input::pipe(write, None);
        input.release();
        let mut buf = [0u8; 4];
        // SAFETY: reading into a valid buffer; 0 is end of file, no writer left.
        assert_eq!(
            unsafe { libc::read(read.as_raw_fd(), buf.as_mut_ptr().cast(), 4) },
            0
        );
        assert!(!input.is_open());
        assert_eq!(input.write(b"late"), Err(InputError::Gone));
        assert_eq!(input.close(), Ok(()));
        assert_eq!(input.write(b"late"), Err(InputError::Gone));
    }

    #[test]
    fn a_released_terminal_hangs_up_and_keeps_its_screen() {
        let size = TerminalSize { cols: 40, rows: 10 };
        let pty = Pty::open(size).unwrap();
        // SAFETY: setting a status flag on a descriptor we own.
        unsafe { libc::fcntl(pty.slave.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
        let read_slave = || {
            let mut buf = [0u8; 16];
            // SAFETY: reading into a valid buffer from a non-blocking descriptor.
            let n = unsafe { libc::read(pty.slave.as_raw_fd(), buf.as_mut_ptr().cast(), 16) };
            (n, std::io::Error::last_os_error().raw_os_error())
        };
        let input = Input::terminal(pty.master, size, None);
        assert_eq!(read_slave(), (-1, Some(libc::EAGAIN)));
        input.displayed(b"all done\r\n");
        input.release();
        // With its master closed, the terminal is hung up: no more waiting for input.
        let (n, error) = read_slave();
        assert!(n == 0 || error == Some(libc::EIO), "{n} {error:?}");
        assert_eq!(input.screen_text().unwrap(), "all done\n\n");
        assert_eq!(input.terminal_state(), Some((size, (1, 0))));
        assert_eq!(input.send_keys(b"Enter"), Err(InputError::Gone));
        assert_eq!(input.write(b"x"), Err(InputError::Gone));
        assert_eq!(input.close(), Err(InputError::TerminalNotClosable));
    }

    #[test]
    fn keys_reach_the_terminal_and_queries_are_answered() {
        let size = TerminalSize { cols: 40, rows: 10 };
        let pty = Pty::open(size).unwrap();
        let input = Input::terminal(pty.master.try_clone().unwrap(), size, None);
        // Raw mode on the program's side, so bytes pass as they are.
        // SAFETY: termios is plain data filled by tcgetattr.
        unsafe {
            let mut termios: libc::termios = std::mem::zeroed();
            libc::tcgetattr(pty.slave.as_raw_fd(), &mut termios);
            libc::cfmakeraw(&mut termios);
            libc::tcsetattr(pty.slave.as_raw_fd(), libc::TCSANOW, &termios);
        }
        let slave = &pty.slave;
        let read_slave = |want: usize| {
            let mut got = Vec::new();
            let mut buf = [0u8; 256];
            while got.len() < want {
                // SAFETY: reading into a valid buffer from a blocking descriptor.
                let n = unsafe { libc::read(slave.as_raw_fd(), buf.as_mut_ptr().cast(), 256) };
                assert!(n > 0);
                got.extend_from_slice(&buf[..n as usize]);
            }
            got
        };
        input.send_keys(b"i 'hi' Escape Up").unwrap();
        assert_eq!(read_slave(7), b"ihi\x1b\x1b[A");
        input.displayed(b"\x1b[?1h\x1b[2;3H\x1b[6n");
        assert_eq!(read_slave(6), b"\x1b[2;3R");
        input.send_keys(b"Up").unwrap();
        assert_eq!(read_slave(3), b"\x1bOA");
        assert_eq!(
            input.send_keys(b"Up Sideways"),
            Err(InputError::Keys(KeysError::UnknownKey("Sideways".into())))
        );
        assert_eq!(input.close(), Err(InputError::TerminalNotClosable));
        input.displayed(b"\x1b[Hhello");
        assert_eq!(input.screen_text().unwrap(), "hello\n");
        assert_eq!(input.terminal_state(), Some((size, (0, 5))));
        assert_eq!(pty::size(&pty.slave).unwrap(), size);
    }
}
