//! The text of one alert line: `2026-11-24T10:01:02.123Z directnfs[1234]:
//! WARNING: ...`, UTC, millisecond precision.

use std::time::{SystemTime, UNIX_EPOCH};

/// Severity, as syslog names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    Warning,
    Notice,
}

impl Level {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Level::Warning => "WARNING",
            Level::Notice => "NOTICE",
        }
    }

    /// The syslog severity number (RFC 5424 §6.2.1).
    pub(crate) fn syslog_severity(self) -> u8 {
        match self {
            Level::Warning => 4,
            Level::Notice => 5,
        }
    }
}

pub(crate) fn format_line(at: SystemTime, level: Level, message: &str) -> String {
    format!(
        "{} directnfs[{}]: {}: {}",
        utc_timestamp(at),
        std::process::id(),
        level.name(),
        message.replace('\n', " ")
    )
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub(crate) fn utc_timestamp(at: SystemTime) -> String {
    let d = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, day) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_millis()
    )
}

/// The proleptic Gregorian date (year, month 1-12, day 1-31) of a day
/// count since 1970-01-01 (Howard Hinnant's `civil_from_days`), as the
/// alert log's timestamps and `dnfs ls -l` show dates.
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps_are_utc_iso_8601_with_milliseconds() {
        let at = |s: u64, ms: u64| UNIX_EPOCH + Duration::from_millis(s * 1000 + ms);
        assert_eq!(utc_timestamp(at(0, 0)), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            utc_timestamp(at(951_782_400, 5)),
            "2000-02-29T00:00:00.005Z"
        );
        assert_eq!(
            utc_timestamp(at(1_795_518_062, 123)),
            "2026-11-24T11:01:02.123Z"
        );
    }

    #[test]
    fn a_line_names_the_process_and_level_and_stays_one_line() {
        let l = format_line(UNIX_EPOCH, Level::Warning, "filer1: path a->b DOWN (x\ny)");
        assert_eq!(
            l,
            format!(
                "1970-01-01T00:00:00.000Z directnfs[{}]: WARNING: filer1: path a->b DOWN (x y)",
                std::process::id()
            )
        );
    }
}
