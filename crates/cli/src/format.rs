//! Text forms of attributes: `ls -l` mode strings and UTC timestamps.

use std::time::{SystemTime, UNIX_EPOCH};

use directnfs::FileType;

/// `ls -l`'s type character.
pub fn type_char(t: FileType) -> char {
    match t {
        FileType::File => '-',
        FileType::Dir => 'd',
        FileType::Symlink => 'l',
        _ => '?',
    }
}

/// `rwxr-xr-x`, with setuid/setgid/sticky shown as `s`/`S`/`t`/`T`.
pub fn mode_string(mode: u32) -> String {
    let mut s = String::with_capacity(9);
    let special = [(0o4000, 's', 'S'), (0o2000, 's', 'S'), (0o1000, 't', 'T')];
    for (i, (bit, on, off)) in special.iter().enumerate() {
        let shift = 6 - 3 * i as u32;
        let m = mode >> shift;
        s.push(if m & 4 != 0 { 'r' } else { '-' });
        s.push(if m & 2 != 0 { 'w' } else { '-' });
        let x = m & 1 != 0;
        s.push(match (mode & bit != 0, x) {
            (true, true) => *on,
            (true, false) => *off,
            (false, true) => 'x',
            (false, false) => '-',
        });
    }
    s
}

/// Seconds and nanoseconds since the epoch (negative times clamp to 0).
fn epoch(t: SystemTime) -> (i64, u32) {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => (d.as_secs() as i64, d.subsec_nanos()),
        Err(_) => (0, 0),
    }
}

fn parts(t: SystemTime) -> (i64, u32, u32, i64, i64, i64, u32) {
    let (secs, nanos) = epoch(t);
    let (y, mo, d) = directnfs::alert::civil_from_days(secs.div_euclid(86_400));
    let sod = secs.rem_euclid(86_400);
    (y, mo, d, sod / 3600, sod / 60 % 60, sod % 60, nanos)
}

/// `2024-05-01 12:34` (UTC), for `ls -l`.
pub fn short_time(t: SystemTime) -> String {
    let (y, mo, d, h, mi, _, _) = parts(t);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}")
}

/// `2024-05-01 12:34:56.123456789 UTC`, for `stat`.
pub fn full_time(t: SystemTime) -> String {
    let (y, mo, d, h, mi, s, n) = parts(t);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}.{n:09} UTC")
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn mode_strings_match_ls() {
        assert_eq!(mode_string(0o644), "rw-r--r--");
        assert_eq!(mode_string(0o755), "rwxr-xr-x");
        assert_eq!(mode_string(0o4755), "rwsr-xr-x");
        assert_eq!(mode_string(0o2644), "rw-r-Sr--");
        assert_eq!(mode_string(0o1777), "rwxrwxrwt");
        assert_eq!(mode_string(0), "---------");
    }

    #[test]
    fn times_are_utc_civil_dates() {
        let t = UNIX_EPOCH + Duration::new(1_700_000_000, 5);
        assert_eq!(short_time(t), "2023-11-14 22:13");
        assert_eq!(full_time(t), "2023-11-14 22:13:20.000000005 UTC");
        assert_eq!(short_time(UNIX_EPOCH), "1970-01-01 00:00");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(short_time(leap), "2000-02-29 00:00");
    }
}
