//! A command's terminal screen: everything the program wrote to its terminal, fed through
//! the `vt100` emulator, read back as plain text and a cursor position.
//!
//! The emulator keeps no scrollback, so a screen's memory is fixed by its size (two grids,
//! the normal and the alternate one, of 32 bytes a cell). Some programs ask the terminal
//! about itself and wait for the answer (a cursor position report, device attributes, the
//! text area size); [`Screen::feed`] returns the answers a terminal would give, for the
//! caller to write back to the program.

use std::num::NonZeroU16;

pub use crate::units::TerminalSize;

/// Collects the answers to the program's status queries while the emulator parses.
#[derive(Default)]
struct Answers {
    bytes: Vec<u8>,
}

impl vt100::Callbacks for Answers {
    fn unhandled_csi(
        &mut self,
        screen: &mut vt100::Screen,
        first: Option<u8>,
        _second: Option<u8>,
        params: &[&[u16]],
        c: char,
    ) {
        let param = |index: usize| params.get(index).and_then(|p| p.first()).copied();
        let (row, col) = screen.cursor_position();
        let answer = match (first, c, param(0)) {
            // Device status: "OK".
            (None, 'n', Some(5)) => "\x1b[0n".to_string(),
            // Cursor position report, 1-based.
            (None, 'n', Some(6)) => format!("\x1b[{};{}R", row + 1, col + 1),
            (Some(b'?'), 'n', Some(6)) => format!("\x1b[?{};{}R", row + 1, col + 1),
            // Primary device attributes: a VT100 with advanced video, as xterm says by
            // default.
            (None, 'c', None | Some(0)) => "\x1b[?1;2c".to_string(),
            // Secondary device attributes: a VT100-class terminal, firmware 0.
            (Some(b'>'), 'c', None | Some(0)) => "\x1b[>0;0;0c".to_string(),
            // The text area's size in characters.
            (None, 't', Some(18)) => {
                let (rows, cols) = screen.size();
                format!("\x1b[8;{rows};{cols}t")
            }
            _ => return,
        };
        self.bytes.extend_from_slice(answer.as_bytes());
    }
}

/// A terminal screen of a fixed size.
pub struct Screen {
    parser: vt100::Parser<Answers>,
}

impl Screen {
    pub fn new(size: TerminalSize) -> Screen {
        let rows = NonZeroU16::new(size.rows).unwrap_or(NonZeroU16::MIN);
        let cols = NonZeroU16::new(size.cols).unwrap_or(NonZeroU16::MIN);
        Screen {
            parser: vt100::Parser::new_with_callbacks(rows, cols, 0, Answers::default()),
        }
    }

    /// Applies bytes the program wrote; returns what a terminal would answer to the
    /// queries among them (empty almost always).
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<u8> {
        self.parser.process(bytes);
        std::mem::take(&mut self.parser.callbacks_mut().bytes)
    }

    pub fn size(&self) -> TerminalSize {
        let (rows, cols) = self.parser.screen().size();
        TerminalSize {
            cols: cols.get(),
            rows: rows.get(),
        }
    }

    /// The cursor as (row, column), counted from 0 at the top left.
    pub fn cursor(&self) -> (u16, u16) {
        self.parser.screen().cursor_position()
    }

    /// Whether the program asked for application cursor keys (DECCKM).
    pub fn application_cursor(&self) -> bool {
        self.parser.screen().application_cursor()
    }

    /// The screen as text: one line per row, each ending in a newline, without the
    /// blanks at the end of a row, and without the blank rows below both the last
    /// written row and the cursor.
    pub fn text(&self) -> String {
        let screen = self.parser.screen();
        let (_, cols) = screen.size();
        let rows: Vec<String> = screen
            .rows(0, cols.get())
            .map(|row| row.trim_end().to_string())
            .collect();
        let cursor_row = usize::from(self.cursor().0);
        let last_written = rows.iter().rposition(|row| !row.is_empty());
        let keep = last_written.map_or(0, |row| row + 1).max(cursor_row + 1);
        let mut text = String::new();
        for row in rows.iter().take(keep) {
            text.push_str(row);
            text.push('\n');
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn screen(cols: u16, rows: u16) -> Screen {
        Screen::new(TerminalSize { cols, rows })
    }

    #[test]
    fn text_is_one_line_per_row_trimmed() {
        let mut s = screen(20, 5);
        assert!(s.feed(b"hello   \r\n\r\n  world").is_empty());
        assert_eq!(s.text(), "hello\n\n  world\n");
        assert_eq!(s.cursor(), (2, 7));
    }

    #[test]
    fn blank_rows_down_to_the_cursor_are_kept() {
        let mut s = screen(20, 5);
        s.feed(b"top\x1b[4;1H");
        assert_eq!(s.text(), "top\n\n\n\n");
        assert_eq!(screen(20, 5).text(), "\n");
    }

    #[test]
    fn a_redraw_replaces_the_screen() {
        let mut s = screen(20, 5);
        s.feed(b"first\r\nsecond");
        s.feed(b"\x1b[H\x1b[2Jnew");
        assert_eq!(s.text(), "new\n");
        // The alternate screen, as full-screen programs use it, and back.
        s.feed(b"\x1b[?1049h\x1b[Hfull screen");
        assert_eq!(s.text(), "full screen\n");
        s.feed(b"\x1b[?1049l");
        assert_eq!(s.text(), "new\n");
    }

    #[test]
    fn long_lines_wrap_and_nothing_scrolls_back() {
        let mut s = screen(4, 2);
        s.feed(b"abcdefgh\r\nij");
        assert_eq!(s.text(), "efgh\nij\n");
        assert_eq!(s.parser.screen().scrollback_len(), 0);
    }

    #[test]
    fn status_queries_are_answered() {
        let mut s = screen(80, 24);
        s.feed(b"\x1b[3;5H");
        assert_eq!(s.feed(b"\x1b[6n"), b"\x1b[3;5R");
        assert_eq!(s.feed(b"\x1b[5n"), b"\x1b[0n");
        assert_eq!(s.feed(b"\x1b[c"), b"\x1b[?1;2c");
        assert_eq!(s.feed(b"\x1b[0c"), b"\x1b[?1;2c");
        assert_eq!(s.feed(b"\x1b[>c"), b"\x1b[>0;0;0c");
        assert_eq!(s.feed(b"\x1b[18t"), b"\x1b[8;24;80t");
        // Two queries in one write, split across two writes.
        assert_eq!(s.feed(b"x\x1b[6n\x1b["), b"\x1b[3;6R");
        assert_eq!(s.feed(b"6n"), b"\x1b[3;6R");
        assert!(s.feed(b"\x1b[?25l\x1b[1mplain").is_empty());
    }

    #[test]
    fn cursor_keys_mode_is_seen() {
        let mut s = screen(80, 24);
        assert!(!s.application_cursor());
        s.feed(b"\x1b[?1h");
        assert!(s.application_cursor());
    }

    #[test]
    fn size() {
        let s = screen(33, 7);
        assert_eq!(s.size(), TerminalSize { cols: 33, rows: 7 });
    }
}
