//! The cross-process, cross-host lock: a lock file `<db>.dnfs-lock` next to
//! the database, created with NFSv3 EXCLUSIVE CREATE (RFC 1813 §3.3.8,
//! `createmode3 EXCLUSIVE`): the server creates it for exactly one client,
//! and a retransmitted CREATE of ours is recognised by its verifier. This is
//! SQLite's unix-dotfile locking, made atomic by the protocol rather than
//! by `O_EXCL` semantics that old NFS clients did not honour.
//!
//! The file holds its owner: `host`, `pid`, the process start time (so a
//! recycled pid is not mistaken for the owner) and a random `nonce`. A lock
//! whose owner ran on THIS host and is gone (killed, crashed) is stale and
//! is broken automatically; breaking is serialized among the processes of
//! this host with `flock` on a local file, and a lock is removed only if
//! it still holds the same owner that was judged dead. A lock owned by
//! another host is never broken automatically (we cannot tell whether that
//! process lives): the error names the owner and the file to remove.

use std::fmt;
use std::io::Read;

use dnfs::{Client, OpenOptions};

/// Suffix of the lock file, appended to the database's path.
pub const SUFFIX: &str = ".dnfs-lock";

/// Largest lock file we read.
const MAX_OWNER: usize = 1024;

/// A waiter writes one byte here to say "I want the lock"; the holder sees
/// the file size grow past it when it releases, and steps aside briefly so
/// the waiter gets its turn (see [`DotLock::release`]).
const WANT_OFFSET: u64 = 4095;

/// The lock, held. Released with [`DotLock::release`].
#[derive(Debug)]
pub struct DotLock {
    path: String,
}

/// Who holds a lock file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pub host: String,
    pub pid: u32,
    /// Process start time (clock ticks since boot, /proc/PID/stat field 22).
    pub start: u64,
    pub nonce: u64,
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pid {} on host {}", self.pid, self.host)
    }
}

/// Outcome of [`DotLock::acquire`].
#[derive(Debug)]
pub enum Acquire {
    /// We own the lock now.
    Held(DotLock),
    /// Someone else does (`None`: could not tell who).
    Busy(Option<Owner>),
}

impl Owner {
    /// This process.
    pub fn me(nonce: u64) -> Owner {
        Owner {
            host: hostname(),
            pid: std::process::id(),
            start: process_start(std::process::id()).unwrap_or(0),
            nonce,
        }
    }

    fn to_text(&self) -> String {
        format!(
            "directnfs-sqlite-lock 1\nhost={}\npid={}\nstart={}\nnonce={:016x}\n",
            self.host, self.pid, self.start, self.nonce
        )
    }

    /// Parses a lock file; `None` if it is not one of ours (or is empty:
    /// its creator died between CREATE and WRITE).
    pub fn parse(text: &str) -> Option<Owner> {
        let mut lines = text.lines();
        if lines.next()? != "directnfs-sqlite-lock 1" {
            return None;
        }
        let (mut host, mut pid, mut start, mut nonce) = (None, None, None, None);
        for line in lines {
            let (k, v) = line.split_once('=')?;
            match k {
                "host" => host = Some(v.to_string()),
                "pid" => pid = v.parse().ok(),
                "start" => start = v.parse().ok(),
                "nonce" => nonce = u64::from_str_radix(v, 16).ok(),
                _ => {}
            }
        }
        Some(Owner {
            host: host?,
            pid: pid?,
            start: start?,
            nonce: nonce?,
        })
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

impl DotLock {
    /// Tries once to take the lock at `path` (inside the client's export).
    pub fn acquire(client: &Client, path: &str) -> dnfs::Result<Acquire> {
        // Two rounds: the second after breaking a stale lock, or after the
        // lock vanished between our CREATE and our read of its owner.
        for _ in 0..2 {
            let opts = OpenOptions {
                create: true,
                create_new: true,
                truncate: false,
                mode: Some(0o644),
            };
            match client.open_with(path, opts) {
                Ok(file) => {
                    let me = Owner::me(random_u64());
                    if let Err(e) = file.write_at(me.to_text().as_bytes(), 0) {
                        let _ = client.remove(path);
                        return Err(e);
                    }
                    return Ok(Acquire::Held(DotLock {
                        path: path.to_string(),
                    }));
                }
                Err(e) if e.errno() == libc::EEXIST => {}
                Err(e) => return Err(e),
            }
            match read_owner(client, path)? {
                Seen::Gone => continue,
                Seen::Unknown => return Ok(Acquire::Busy(None)),
                Seen::Owner(owner) if owner.is_dead_here() => {
                    break_stale(client, path, &owner)?;
                    continue;
                }
                Seen::Owner(owner) => return Ok(Acquire::Busy(Some(owner))),
            }
        }
        Ok(Acquire::Busy(None))
    }

    /// Removes the lock file. Returns true if another process asked for
    /// the lock meanwhile ([`mark_wanted`]): the caller should then not
    /// take it again at once, or a process running back-to-back
    /// transactions would starve the others (the gap between our REMOVE and
    /// our next CREATE is one round trip).
    pub fn release(&self, client: &Client) -> dnfs::Result<bool> {
        let wanted = client
            .metadata(&self.path)
            .map(|m| m.size > WANT_OFFSET)
            .unwrap_or(false);
        match client.remove(&self.path) {
            Err(e) if e.errno() == libc::ENOENT => {
                tracing_free_warn(&format!(
                    "lock file {} had been removed by someone else while held",
                    self.path
                ));
                Ok(wanted)
            }
            Err(e) => Err(e),
            Ok(()) => Ok(wanted),
        }
    }
}

/// Tells the holder of the lock at `path` that we wait for it (best
/// effort: one byte written at [`WANT_OFFSET`]).
pub fn mark_wanted(client: &Client, path: &str) {
    let _ = crate::names::fresh(client, path, || {
        client.open(path)?.write_at(b"W", WANT_OFFSET)
    });
}

/// True if the lock file exists (someone, maybe us, holds the lock).
pub fn exists(client: &Client, path: &str) -> dnfs::Result<bool> {
    match crate::names::fresh(client, path, || client.metadata(path)) {
        Ok(_) => Ok(true),
        Err(e) if e.errno() == libc::ENOENT => Ok(false),
        Err(e) => Err(e),
    }
}

enum Seen {
    Owner(Owner),
    /// Exists but unreadable or not ours (e.g. empty).
    Unknown,
    Gone,
}

fn read_owner(client: &Client, path: &str) -> dnfs::Result<Seen> {
    let mut buf = vec![0u8; MAX_OWNER];
    // Lock files come and go under other processes: refresh a stale
    // cached handle (see names::fresh).
    let read = crate::names::fresh(client, path, || client.open(path)?.read_at(&mut buf, 0));
    let n = match read {
        Ok(n) => n,
        Err(e) if e.errno() == libc::ENOENT => return Ok(Seen::Gone),
        // Re-created again under us: look again later.
        Err(e) if e.errno() == libc::ESTALE => return Ok(Seen::Unknown),
        Err(e) => return Err(e),
    };
    let text = String::from_utf8_lossy(&buf[..n]);
    Ok(Owner::parse(&text).map_or(Seen::Unknown, Seen::Owner))
}

/// Removes a lock whose owner is dead, if it still names that owner.
/// Processes of this host break locks one at a time (flock on a local
/// file), so two breakers cannot remove each other's fresh lock.
fn break_stale(client: &Client, path: &str, dead: &Owner) -> dnfs::Result<()> {
    let guard = LocalFlock::take();
    match read_owner(client, path)? {
        Seen::Owner(now) if now == *dead => {
            tracing_free_warn(&format!(
                "breaking stale lock {path} of {dead} (process is gone)"
            ));
            match client.remove(path) {
                Err(e) if e.errno() != libc::ENOENT => return Err(e),
                _ => {}
            }
        }
        _ => {} // someone else broke it or took it meanwhile
    }
    drop(guard);
    Ok(())
}

/// An exclusive `flock` on `$TMPDIR/directnfs-sqlite-lockbreak`, released
/// on drop. If the file cannot be used, breaking proceeds without it (the
/// re-check of the owner still protects against most races).
struct LocalFlock(Option<std::fs::File>);

impl LocalFlock {
    fn take() -> Self {
        use std::os::unix::io::AsRawFd;
        let path = std::env::temp_dir().join("directnfs-sqlite-lockbreak");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .ok();
        if let Some(f) = &file {
            // SAFETY: flock on a valid, open descriptor we own.
            unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) };
        }
        LocalFlock(file)
    }
}

impl Drop for LocalFlock {
    fn drop(&mut self) {
        use std::os::unix::io::AsRawFd;
        if let Some(f) = &self.0 {
            // SAFETY: as in take(); closing would also release it.
            unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_UN) };
        }
    }
}

fn tracing_free_warn(msg: &str) {
    crate::report(crate::sys::SQLITE_WARNING, msg);
}

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

    #[test]
    fn owner_round_trips_through_text() {
        let me = Owner::me(0x1234);
        assert_eq!(Owner::parse(&me.to_text()), Some(me));
    }

    #[test]
    fn empty_or_foreign_lock_files_have_no_owner() {
        assert_eq!(Owner::parse(""), None);
        assert_eq!(Owner::parse("hello\n"), None);
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
