//! Parsing of the human units used on the command line and in directives:
//! durations such as `250ms`, `30s`, `10m`, `1h` (a bare number means seconds) and
//! sizes such as `512`, `64k`, `16m`, `2g` (binary multiples; a bare number means bytes),
//! and terminal sizes such as `120x40` (columns by rows).
//! Pure functions, shared by the CLI and the `#terminalfs` directive parser; what is
//! wrong with a value is a [`UnitError`], whose text is a lowercase phrase.

use std::time::Duration;

/// Why a value is not a duration, a size or a terminal size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnitError {
    /// It does not start with a whole number.
    NotANumber {
        text: String,
        what: &'static str,
        example: &'static str,
    },
    /// Its number, or the number times its unit, does not fit.
    TooLarge { text: String, what: &'static str },
    /// Its unit is none of `units`.
    UnknownUnit { text: String, units: &'static str },
    /// Not `COLSxROWS`.
    NotATerminalSize { text: String },
    /// A terminal without a cell.
    NoCells { cols: u32, rows: u32 },
    /// A terminal past [`MAX_SIDE`] a side or [`MAX_CELLS`] in all.
    TooLargeTerminal { cols: u32, rows: u32 },
}

impl std::fmt::Display for UnitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UnitError::NotANumber {
                text,
                what,
                example,
            } => write!(f, "'{text}' is not a {what} (try {example})"),
            UnitError::TooLarge { text, what } => write!(f, "'{text}' is too large a {what}"),
            UnitError::UnknownUnit { text, units } => {
                write!(f, "'{text}' has an unknown unit (use {units})")
            }
            UnitError::NotATerminalSize { text } => write!(
                f,
                "'{text}' is not a terminal size; write COLSxROWS, such as 120x40"
            ),
            UnitError::NoCells { cols, rows } => write!(
                f,
                "a terminal of {cols}x{rows} has no cells; give COLSxROWS of at least 1x1"
            ),
            UnitError::TooLargeTerminal { cols, rows } => write!(
                f,
                "a terminal of {cols}x{rows} is too large: at most {MAX_SIDE} columns, \
                 {MAX_SIDE} rows and {MAX_CELLS} cells"
            ),
        }
    }
}

impl std::error::Error for UnitError {}

/// Splits `text` into its leading whole number and the unit after it; `example`
/// completes the error message ("try ...").
fn number_and_unit(
    text: &str,
    what: &'static str,
    example: &'static str,
) -> Result<(u64, String), UnitError> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    if digits.is_empty() {
        return Err(UnitError::NotANumber {
            text: text.to_string(),
            what,
            example,
        });
    }
    let value = digits.parse().map_err(|_| UnitError::TooLarge {
        text: text.to_string(),
        what,
    })?;
    Ok((value, unit.trim().to_ascii_lowercase()))
}

/// Parses a duration: a whole number followed by `ms`, `s`, `m`, `h` or `d`;
/// a bare number is seconds.
pub fn parse_duration(text: &str) -> Result<Duration, UnitError> {
    let text = text.trim();
    let (value, unit) = number_and_unit(text, "duration", "250ms, 30s, 10m or 1h")?;
    let millis_per_unit: u64 = match unit.as_str() {
        "ms" => 1,
        "" | "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => {
            return Err(UnitError::UnknownUnit {
                text: text.to_string(),
                units: "ms, s, m, h or d",
            })
        }
    };
    value
        .checked_mul(millis_per_unit)
        .map(Duration::from_millis)
        .ok_or_else(|| UnitError::TooLarge {
            text: text.to_string(),
            what: "duration",
        })
}

/// Parses a size in bytes: a whole number, optionally followed by `k`, `m` or `g`
/// (powers of 1024, with or without a trailing `b`/`ib`).
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    let text = text.trim();
    let (value, unit) = number_and_unit(text, "size", "4096, 64k, 16m or 2g")?;
    let unit = unit
        .strip_suffix("ib")
        .or_else(|| unit.strip_suffix('b'))
        .unwrap_or(&unit);
    let multiplier: u64 = match unit {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        _ => {
            return Err(UnitError::UnknownUnit {
                text: text.to_string(),
                units: "k, m or g",
            })
        }
    };
    value
        .checked_mul(multiplier)
        .ok_or_else(|| UnitError::TooLarge {
            text: text.to_string(),
            what: "size",
        })
}

/// Renders a duration the way `parse_duration` reads it back, for logs and pages.
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms % 1000 != 0 {
        format!("{ms}ms")
    } else if ms % 3_600_000 == 0 && ms > 0 {
        format!("{}h", ms / 3_600_000)
    } else if ms % 60_000 == 0 && ms > 0 {
        format!("{}m", ms / 60_000)
    } else {
        format!("{}s", ms / 1000)
    }
}

/// Renders a byte count the way `parse_size` reads it back (largest exact unit).
pub fn format_size(bytes: u64) -> String {
    for (unit, size) in [("g", 1u64 << 30), ("m", 1 << 20), ("k", 1 << 10)] {
        if bytes >= size && bytes % size == 0 {
            return format!("{}{unit}", bytes / size);
        }
    }
    bytes.to_string()
}

/// The most columns or rows a terminal may have, and the most cells in all.
pub const MAX_SIDE: u16 = 1000;
pub const MAX_CELLS: u32 = 100_000;

/// A terminal's size in character cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TerminalSize {
    pub cols: u16,
    pub rows: u16,
}

impl Default for TerminalSize {
    fn default() -> TerminalSize {
        TerminalSize {
            cols: 120,
            rows: 40,
        }
    }
}

impl TerminalSize {
    /// A size no smaller than 1x1 and no larger than [`MAX_SIDE`] a side and
    /// [`MAX_CELLS`] in all, or why not.
    pub fn new(cols: u32, rows: u32) -> Result<TerminalSize, UnitError> {
        if cols == 0 || rows == 0 {
            return Err(UnitError::NoCells { cols, rows });
        }
        let side = u32::from(MAX_SIDE);
        if cols > side || rows > side || cols.saturating_mul(rows) > MAX_CELLS {
            return Err(UnitError::TooLargeTerminal { cols, rows });
        }
        Ok(TerminalSize {
            cols: cols as u16,
            rows: rows as u16,
        })
    }

    /// Reads `COLSxROWS`, such as `120x40`.
    pub fn parse(text: &str) -> Result<TerminalSize, UnitError> {
        let parts = text.split_once(['x', 'X']);
        let number = |part: &str| {
            (!part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
                .then(|| part.parse::<u32>().unwrap_or(u32::MAX))
        };
        match parts.and_then(|(cols, rows)| Some((number(cols)?, number(rows)?))) {
            Some((cols, rows)) => TerminalSize::new(cols, rows),
            None => Err(UnitError::NotATerminalSize {
                text: text.to_string(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("30"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert!(parse_duration("").is_err());
        assert!(parse_duration("ten").is_err());
        assert!(parse_duration("5x").is_err());
        assert!(parse_duration("-5s").is_err());
        assert!(parse_duration("99999999999999999999s").is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("512"), Ok(512));
        assert_eq!(parse_size("64k"), Ok(64 << 10));
        assert_eq!(parse_size("16M"), Ok(16 << 20));
        assert_eq!(parse_size("2g"), Ok(2 << 30));
        assert_eq!(parse_size("1MiB"), Ok(1 << 20));
        assert!(parse_size("m").is_err());
        assert!(parse_size("3t").is_err());
    }

    #[test]
    fn sizes_format_round_trip() {
        for text in ["512", "64k", "16m", "2g", "1025"] {
            assert_eq!(format_size(parse_size(text).unwrap()), text);
        }
    }

    #[test]
    fn format_round_trips() {
        for text in ["250ms", "30s", "10m", "1h", "0s"] {
            assert_eq!(format_duration(parse_duration(text).unwrap()), text);
        }
    }

    #[test]
    fn terminal_sizes() {
        assert_eq!(
            TerminalSize::parse("120x40"),
            Ok(TerminalSize {
                cols: 120,
                rows: 40
            })
        );
        assert_eq!(
            TerminalSize::default(),
            TerminalSize::parse("120x40").unwrap()
        );
        assert_eq!(TerminalSize::parse("1X1").unwrap().cols, 1);
        assert!(TerminalSize::parse("1000x100").is_ok());
        for (bad, needle) in [
            ("0x0", "no cells"),
            ("80x0", "no cells"),
            ("100000x1", "too large"),
            ("99999999999999999999x1", "too large"),
            ("1001x1", "too large"),
            ("1000x1000", "too large"),
            ("80", "COLSxROWS"),
            ("x24", "COLSxROWS"),
            ("80x-1", "COLSxROWS"),
            ("80x24x2", "COLSxROWS"),
            ("+80x24", "COLSxROWS"),
        ] {
            let err = TerminalSize::parse(bad).expect_err(bad).to_string();
            assert!(err.contains(needle), "{bad}: {err}");
        }
    }
}
