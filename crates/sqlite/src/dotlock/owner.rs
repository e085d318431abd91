//! Who holds a lock: the owner record, its two text forms, and whether its
//! process still lives.
//!
//! * Version 2 (this one) is the content of the lock's symbolic link, one
//!   line, the host last because it is the only free-form field:
//!   `directnfs-sqlite-lock 2 pid=4242 start=123456 nonce=00ab.. host=db1`.
//! * Version 1 (directnfs before the lock became a symbolic link) was the
//!   content of a regular file: a header line `directnfs-sqlite-lock 1`,
//!   then `key=value` lines, then possibly zeros and the byte a waiter
//!   wrote at offset 4095. Still read, so that a lock file left by an
//!   older version is judged like any other.

use std::fmt;
use std::io::Read;

/// The first word of every owner record.
const MAGIC: &str = "directnfs-sqlite-lock";
/// The version this code writes.
const VERSION: u32 = 2;

/// Who holds a lock file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pub host: String,
    pub pid: u32,
    /// Process start time (clock ticks since boot, /proc/PID/stat field
    /// 22), so that a recycled pid is not taken for the owner.
    pub start: u64,
    /// Random, fixed for one database file in one process: tells its own
    /// lock from any other, even one of the same process.
    pub nonce: u64,
}

/// What a lock file's content says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// A complete owner record (version 1 or 2).
    Owner(Owner),
    /// The record of a newer directnfs, whose rules this code does not
    /// know: such a lock is waited for, never broken.
    Newer(u32),
    /// Nothing usable: empty, torn, or not ours.
    None,
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pid {} on host {}", self.pid, self.host)
    }
}

impl Owner {
    /// This process, with the given nonce.
    pub fn me(nonce: u64) -> Owner {
        Owner {
            host: hostname(),
            pid: std::process::id(),
            start: process_start(std::process::id()).unwrap_or(0),
            nonce,
        }
    }

    /// The version 2 record: the content of the lock's symbolic link.
    pub fn to_link(&self) -> String {
        format!(
            "{MAGIC} {VERSION} pid={} start={} nonce={:016x} host={}",
            self.pid, self.start, self.nonce, self.host
        )
    }

    /// True if the owner ran on this host and that process is gone.
    pub fn is_dead_here(&self) -> bool {
        if self.host != hostname() {
            return false;
        }
        match process_start(self.pid) {
            None => !pid_exists(self.pid),
            // A different start time: the pid was recycled.
            Some(start) => self.start != 0 && start != self.start,
        }
    }
}

impl Record {
    /// Reads a lock file's content, in either version. Everything from the
    /// first NUL on is ignored (a version 1 file holds zeros up to the
    /// waiter's byte).
    pub fn parse(text: &str) -> Record {
        let text = text.split('\0').next().unwrap_or_default();
        let Some(rest) = text.strip_prefix(MAGIC).and_then(|r| r.strip_prefix(' ')) else {
            return Record::None;
        };
        let (version, body) = match rest.find(['\n', ' ']) {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, ""),
        };
        let owner = match version.parse::<u32>() {
            Ok(1) => parse_v1(body),
            Ok(VERSION) => parse_v2(body),
            Ok(v) if v > VERSION => return Record::Newer(v),
            _ => None,
        };
        owner.map_or(Record::None, Record::Owner)
    }
}

/// `pid=.. start=.. nonce=.. host=..` on one line, host last.
fn parse_v2(body: &str) -> Option<Owner> {
    let (fields, host) = body.split_once(" host=")?;
    let (mut pid, mut start, mut nonce) = (None, None, None);
    for field in fields.split(' ') {
        match field.split_once('=')? {
            ("pid", v) => pid = v.parse().ok(),
            ("start", v) => start = v.parse().ok(),
            ("nonce", v) => nonce = u64::from_str_radix(v, 16).ok(),
            _ => {}
        }
    }
    owner(Some(host.to_string()), pid, start, nonce)
}

/// `key=value` lines; other lines are skipped.
fn parse_v1(body: &str) -> Option<Owner> {
    let (mut host, mut pid, mut start, mut nonce) = (None, None, None, None);
    for line in body.lines() {
        match line.split_once('=') {
            Some(("host", v)) => host = Some(v.to_string()),
            Some(("pid", v)) => pid = v.parse().ok(),
            Some(("start", v)) => start = v.parse().ok(),
            Some(("nonce", v)) => nonce = u64::from_str_radix(v, 16).ok(),
            _ => {}
        }
    }
    owner(host, pid, start, nonce)
}

fn owner(
    host: Option<String>,
    pid: Option<u32>,
    start: Option<u64>,
    nonce: Option<u64>,
) -> Option<Owner> {
    Some(Owner {
        host: host.filter(|h| !h.is_empty())?,
        pid: pid?,
        start: start?,
        nonce: nonce?,
    })
}

/// This host's name, as recorded in owner records.
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its full length, which is passed.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "unknown".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// Start time of process `pid` (field 22 of /proc/PID/stat), if it exists.
fn process_start(pid: u32) -> Option<u64> {
    let mut text = String::new();
    std::fs::File::open(format!("/proc/{pid}/stat"))
        .ok()?
        .read_to_string(&mut text)
        .ok()?;
    // The command name (field 2) is in parentheses and may hold spaces.
    let after = &text[text.rfind(')')? + 1..];
    // Fields from 3 on; the start time is field 22.
    after.split_whitespace().nth(22 - 3)?.parse().ok()
}

fn pid_exists(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: kill with signal 0 only checks for existence.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// 64 random bits (the kernel's; the clock and pid if that fails).
pub fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    // SAFETY: the pointer and length describe `b`.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    if n != 8 {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        return t ^ u64::from(std::process::id()) << 40;
    }
    u64::from_ne_bytes(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v1_text(o: &Owner) -> String {
        format!(
            "directnfs-sqlite-lock 1\nhost={}\npid={}\nstart={}\nnonce={:016x}\n",
            o.host, o.pid, o.start, o.nonce
        )
    }

    #[test]
    fn owner_round_trips_through_its_link_text() {
        let me = Owner::me(0x1234);
        assert_eq!(Record::parse(&me.to_link()), Record::Owner(me));
    }

    #[test]
    fn a_host_name_with_spaces_survives_because_it_comes_last() {
        let mut o = Owner::me(7);
        o.host = "odd host=name".into();
        assert_eq!(Record::parse(&o.to_link()), Record::Owner(o));
    }

    #[test]
    fn a_version_1_file_is_read_even_after_a_waiter_wrote_its_byte() {
        let o = Owner::me(0xfeed);
        let mut text = v1_text(&o);
        assert_eq!(Record::parse(&text), Record::Owner(o.clone()));
        // What a version 1 lock file held once a waiter had marked it:
        // zeros up to offset 4095, then 'W'.
        text.push_str(&"\0".repeat(4095 - text.len()));
        text.push('W');
        assert_eq!(Record::parse(&text), Record::Owner(o));
    }

    #[test]
    fn empty_torn_or_foreign_content_has_no_owner() {
        let o = Owner::me(1);
        let link = o.to_link();
        let v1 = v1_text(&o);
        // The observed leftover: 4095 zero bytes and the waiter's byte.
        let zeros = format!("{}W", "\0".repeat(4095));
        for text in [
            "",
            "hello\n",
            zeros.as_str(),
            &link[..link.len() / 2],
            &v1[..v1.len() / 2],
            "directnfs-sqlite-lock x pid=1",
            "directnfs-sqlite-lock 2 pid=1 start=2 nonce=3 host=",
        ] {
            assert_eq!(Record::parse(text), Record::None, "{text:?}");
        }
    }

    #[test]
    fn a_newer_version_is_recognised_as_such() {
        assert_eq!(
            Record::parse("directnfs-sqlite-lock 3 whatever=it says"),
            Record::Newer(3)
        );
    }

    #[test]
    fn a_live_process_is_not_dead() {
        assert!(!Owner::me(1).is_dead_here());
    }

    #[test]
    fn a_recycled_pid_is_dead() {
        let mut o = Owner::me(1);
        o.start += 1;
        assert!(o.is_dead_here());
    }

    #[test]
    fn another_hosts_owner_is_never_dead() {
        let mut o = Owner::me(1);
        o.host = "some-other-host".into();
        o.pid = u32::MAX - 1;
        assert!(!o.is_dead_here());
    }

    #[test]
    fn a_vanished_pid_is_dead() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let mut o = Owner::me(1);
        o.pid = pid;
        o.start = 12345;
        assert!(o.is_dead_here());
    }
}
