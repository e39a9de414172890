//! The audit log: one JSON object per line, appended for every decision (a command that ran
//! or one that was refused), in a file outside the tree that only its owner can read.
//!
//! Each line holds `time` (RFC 3339, UTC, milliseconds), `name`, `command`, `cwd`,
//! `decision` (`ran` or `denied`), `rule` and `reason` (null when there is none). A line is
//! written with a single `write` on a file opened for appending, so lines from several
//! threads never interleave. Failures are returned, never panicked on: the caller decides
//! whether a command may run without its audit line.

use std::fs::{self, File};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use serde_json::Value;

/// An open audit log.
#[derive(Debug)]
pub struct Audit {
    path: PathBuf,
    /// The log file; the lock makes each line one write even if the OS did not.
    file: Mutex<File>,
}

impl Audit {
    /// Opens (creating it with mode 0600, and its directories with mode 0700) the audit log
    /// at `path` for appending. An existing file readable by others is made private.
    pub fn open(path: &Path) -> Result<Audit, String> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .map_err(|err| {
                    format!(
                        "cannot create audit log directory {}: {err}",
                        parent.display()
                    )
                })?;
        }
        let file = fs::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .open(path)
            .map_err(|err| format!("cannot open audit log {}: {err}", path.display()))?;
        let meta = file
            .metadata()
            .map_err(|err| format!("cannot stat audit log {}: {err}", path.display()))?;
        if meta.permissions().mode() & 0o077 != 0 {
            file.set_permissions(fs::Permissions::from_mode(0o600))
                .map_err(|err| {
                    format!("cannot make audit log {} private: {err}", path.display())
                })?;
        }
        Ok(Audit {
            path: path.to_owned(),
            file: Mutex::new(file),
        })
    }

    /// Where the log is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one decision. `decision` is `ran` or `denied`.
    pub fn record(
        &self,
        name: &str,
        command: &str,
        cwd: &Path,
        decision: &str,
        rule: Option<&str>,
        reason: Option<&str>,
    ) -> Result<(), String> {
        let line = audit_line(
            SystemTime::now(),
            name,
            command,
            &cwd.to_string_lossy(),
            decision,
            rule,
            reason,
        );
        self.file
            .lock()
            .write_all(line.as_bytes())
            .map_err(|err| format!("cannot write audit log {}: {err}", self.path.display()))
    }
}

/// One audit line, newline included, with the keys in a fixed, readable order.
fn audit_line(
    time: SystemTime,
    name: &str,
    command: &str,
    cwd: &str,
    decision: &str,
    rule: Option<&str>,
    reason: Option<&str>,
) -> String {
    let text = |s: &str| Value::String(s.to_owned()).to_string();
    let optional = |s: Option<&str>| s.map_or_else(|| "null".to_owned(), text);
    format!(
        "{{\"time\":{},\"name\":{},\"command\":{},\"cwd\":{},\"decision\":{},\"rule\":{},\
         \"reason\":{}}}\n",
        text(&rfc3339(time)),
        text(name),
        text(command),
        text(cwd),
        text(decision),
        optional(rule),
        optional(reason),
    )
}

/// `$XDG_STATE_HOME/terminalfs/audit.jsonl`, or `~/.local/state/terminalfs/audit.jsonl`.
pub fn default_audit_path() -> PathBuf {
    super::settings::xdg_dir("XDG_STATE_HOME", ".local/state").join("terminalfs/audit.jsonl")
}

/// Formats a time as RFC 3339 in UTC with milliseconds: `2024-05-01T12:34:56.789Z`.
/// Times before 1970 work too; years past 9999 print with more digits.
pub fn rfc3339(time: SystemTime) -> String {
    let millis: i128 = match time.duration_since(UNIX_EPOCH) {
        Ok(after) => after.as_millis() as i128,
        Err(before) => -(before.duration().as_millis() as i128),
    };
    let seconds = millis.div_euclid(1000);
    let milli = millis.rem_euclid(1000);
    let days = seconds.div_euclid(86_400);
    let of_day = seconds.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{milli:03}Z",
        of_day / 3600,
        of_day % 3600 / 60,
        of_day % 60
    )
}

/// The proleptic Gregorian date of a day count from 1970-01-01, by counting 400-year eras
/// (146097 days each) from 0000-03-01, so the leap day falls at the end of a year.
fn civil_from_days(days: i128) -> (i128, u32, u32) {
    let shifted = days + 719_468;
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_from_march + 2) / 5 + 1) as u32;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    } as u32;
    let year = year_of_era + era * 400 + i128::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(millis: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(millis)
    }

    #[test]
    fn rfc3339_known_instants() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(at(951_782_400_000)), "2000-02-29T00:00:00.000Z");
        assert_eq!(rfc3339(at(1_709_210_096_789)), "2024-02-29T12:34:56.789Z");
        assert_eq!(rfc3339(at(1_735_689_599_999)), "2024-12-31T23:59:59.999Z");
        assert_eq!(rfc3339(at(4_107_542_400_000)), "2100-03-01T00:00:00.000Z");
        assert_eq!(
            rfc3339(UNIX_EPOCH - Duration::from_millis(1)),
            "1969-12-31T23:59:59.999Z"
        );
        assert_eq!(
            rfc3339(UNIX_EPOCH - Duration::from_secs(86_400 * 365)),
            "1969-01-01T00:00:00.000Z"
        );
    }

    #[test]
    fn rfc3339_every_day_round_trips() {
        // Walk day by day over 1600..2500 and check the date advances like a calendar.
        let mut previous = civil_from_days(-135_140);
        assert_eq!(previous, (1600, 1, 1));
        for days in -135_139..193_000 {
            let next = civil_from_days(days);
            let (y, m, d) = previous;
            let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
            let month_length = match m {
                2 if leap => 29,
                2 => 28,
                4 | 6 | 9 | 11 => 30,
                _ => 31,
            };
            let expected = if d < month_length {
                (y, m, d + 1)
            } else if m < 12 {
                (y, m + 1, 1)
            } else {
                (y + 1, 1, 1)
            };
            assert_eq!(next, expected, "day {days}");
            previous = next;
        }
    }

    #[test]
    fn rfc3339_never_panics_at_extremes() {
        let far = UNIX_EPOCH + Duration::from_secs(u64::MAX / 4);
        assert!(rfc3339(far).ends_with('Z'));
        let now = rfc3339(SystemTime::now());
        assert_eq!(now.len(), 24, "{now}");
    }

    #[test]
    fn records_are_json_lines_in_a_private_file() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("state/terminalfs/audit.jsonl");
        let audit = Audit::open(&path).expect("open audit log");
        audit
            .record(
                "build",
                "make \"all\"\n",
                Path::new("/src"),
                "ran",
                None,
                None,
            )
            .expect("record ran");
        audit
            .record(
                "x",
                "sudo ls",
                Path::new("/"),
                "denied",
                Some("Bash(sudo:*)"),
                Some("denied by rule 'Bash(sudo:*)' in /s.json"),
            )
            .expect("record denied");
        drop(audit);
        let reopened = Audit::open(&path).expect("reopen appends");
        reopened
            .record("y", "ls", Path::new("/"), "ran", None, None)
            .expect("record after reopen");
        let text = fs::read_to_string(&path).expect("read audit log");
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("each line is JSON"))
            .collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0]["name"], "build");
        assert_eq!(lines[0]["command"], "make \"all\"\n");
        assert_eq!(lines[0]["cwd"], "/src");
        assert_eq!(lines[0]["decision"], "ran");
        assert!(lines[0]["rule"].is_null() && lines[0]["reason"].is_null());
        assert_eq!(lines[1]["rule"], "Bash(sudo:*)");
        assert_eq!(lines[1]["decision"], "denied");
        let time = lines[2]["time"].as_str().expect("time is a string");
        assert!(time.ends_with('Z') && time.len() == 24, "{time}");
        assert!(text.starts_with("{\"time\":"));
        let mode = fs::metadata(&path).expect("stat").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let dir_mode = fs::metadata(path.parent().expect("has a parent"))
            .expect("stat dir")
            .permissions()
            .mode();
        assert_eq!(dir_mode & 0o077, 0);
    }

    #[test]
    fn an_open_readable_file_is_made_private() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("audit.jsonl");
        fs::write(&path, "").expect("create");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).expect("chmod");
        Audit::open(&path).expect("open");
        let mode = fs::metadata(&path).expect("stat").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn unopenable_path_is_an_error() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let file = dir.path().join("file");
        fs::write(&file, "").expect("create");
        let err = Audit::open(&file.join("audit.jsonl")).expect_err("parent is a file");
        assert!(err.contains("audit log"), "{err}");
    }
}
