//! Time as text: RFC 3339 in UTC, for the log, the pages and the audit log.

use std::time::{SystemTime, UNIX_EPOCH};

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
}
