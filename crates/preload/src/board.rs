//! Boards: tables in files of the shadow directory that every process of
//! one user on the host maps, where one process leaves what it learned
//! from the server (a size, the handle a name led to) for the others, and
//! says when it changed something (a change counter moves on). sizes.rs
//! and lookups.rs are the two boards; this module maps them and gives
//! them their cells.
//!
//! A cell is written under a sequence lock (odd while a process writes
//! it). Readers never wait for it: a cell being written, or left odd by a
//! process killed while writing it, reads as empty, and the caller asks
//! the server. Writers never wait either: a cell another process is
//! writing is simply not written.

use std::ffi::CString;
use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use crate::real;
use crate::state::State;

/// Environment variable: how long (milliseconds) what a board says may be
/// used after it was asked from the server; with `0` this process asks
/// the server at every `lseek(SEEK_END)`, `open` and `access` (and still
/// moves the counters when it changes something).
pub const ENV_TTL_MS: &str = "DIRECTNFS_PRELOAD_TTL_MS";
/// The default of [`ENV_TTL_MS`].
const DEFAULT_TTL: Duration = Duration::from_millis(1000);

static TTL: OnceLock<Duration> = OnceLock::new();

/// How long a board's entry may be used ([`ENV_TTL_MS`]).
pub fn ttl() -> Duration {
    *TTL.get_or_init(|| {
        std::env::var(ENV_TTL_MS)
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_millis)
            .unwrap_or(DEFAULT_TTL)
    })
}

/// True if an entry asked at `asked_at` (see [`monotonic_ns`]) is still
/// young enough at `now`.
pub fn young(asked_at: u64, now: u64) -> bool {
    asked_at != 0 && now.saturating_sub(asked_at) < ttl().as_nanos() as u64
}

/// True if this process may use what the boards say: they are not turned
/// off, and no write-behind (a WRITE then reaches the server after its
/// call returned, so no counter could say when a size changed). A process
/// that may not use them still moves their counters when it changes
/// something, so the others stay right.
pub fn usable(state: &State) -> bool {
    !ttl().is_zero() && !state.write_behind
}

/// Maps `len` bytes of this user's board file `name` in the shadow
/// directory (`NAME.UID`: made on first use, zero-filled, mode 0600, put
/// in place whole so no process ever opens it half made). The mapping is
/// never undone, and forked children keep it. A board that cannot be
/// mapped is said once on stderr: this process's changes then reach the
/// others only after [`ttl`].
///
/// Each user has its own boards: an entry says which file handle a path
/// names, so a board others could write would let them send this user's
/// `open` to a file of their choosing. Processes of different users
/// therefore see each other's changes as those of another host do.
pub fn map(state: &State, name: &str, len: usize) -> Option<*mut u8> {
    // SAFETY: geteuid cannot fail.
    let file = format!("{name}.{}", unsafe { libc::geteuid() });
    match map_file(&state.shadow.root, &file, len) {
        Ok(p) => Some(p),
        Err(why) => {
            crate::warn::once(&format!("board {name}"), || {
                format!(
                    "cannot map the board {}/{file} ({why}): the sizes and names \
                     this process changes reach other processes of the host only \
                     after {ENV_TTL_MS} ({} ms)",
                    state.shadow.root,
                    ttl().as_millis()
                )
            });
            None
        }
    }
}

fn os_error(what: &str) -> String {
    format!("{what}: {}", std::io::Error::last_os_error())
}

fn map_file(root: &str, name: &str, len: usize) -> Result<*mut u8, String> {
    crate::shadow::make_shared_dir(root).map_err(|e| format!("shadow directory: errno {}", e.0))?;
    let path = CString::new(format!("{root}/{name}")).map_err(|_| "bad path".to_string())?;
    let mut fd = open_rw(&path);
    if fd < 0 && crate::fail::errno() == libc::ENOENT {
        make_board_file(root, name, &path, len)?;
        fd = open_rw(&path);
    }
    if fd < 0 {
        return Err(os_error("open"));
    }
    // SAFETY: fd was just opened; zeroed stat buffer filled by fstat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let fstat_ok = unsafe { real::fstat(fd, &mut st) } == 0;
    // SAFETY: geteuid cannot fail.
    let euid = unsafe { libc::geteuid() };
    let why = if !fstat_ok {
        Some(os_error("fstat"))
    } else if st.st_mode & libc::S_IFMT != libc::S_IFREG || st.st_uid != euid {
        Some(format!("not a file of user {euid}"))
    } else if st.st_mode & 0o077 != 0 {
        Some("others may use it".to_string())
    } else if (st.st_size as usize) < len {
        Some("too short".to_string())
    } else {
        None
    };
    if let Some(why) = why {
        // SAFETY: our descriptor.
        unsafe { real::close(fd) };
        return Err(why);
    }
    // SAFETY: a shared mapping of `len` bytes of a file at least that long.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            0,
        )
    };
    let failed = (p == libc::MAP_FAILED).then(|| os_error("mmap"));
    // SAFETY: the mapping keeps the file; the descriptor is not needed.
    unsafe { real::close(fd) };
    match failed {
        Some(why) => Err(why),
        None => Ok(p.cast()),
    }
}

fn open_rw(path: &CString) -> libc::c_int {
    // SAFETY: NUL-terminated path; plain open of a local file, never
    // following a link an other user may have put there.
    unsafe {
        real::open(
            path.as_ptr(),
            libc::O_RDWR | libc::O_CLOEXEC | libc::O_NOFOLLOW,
            0,
        )
    }
}

/// Makes the board file under a name of this process's, sized, then
/// links it into place (one process wins; the others' attempts fail with
/// `EEXIST` and are removed).
fn make_board_file(root: &str, name: &str, path: &CString, len: usize) -> Result<(), String> {
    let tmp = CString::new(format!("{root}/.{name}.{}", std::process::id()))
        .map_err(|_| "bad path".to_string())?;
    // SAFETY: NUL-terminated path; a new local file of this user's.
    let fd = unsafe {
        real::open(
            tmp.as_ptr(),
            libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC,
            0o600,
        )
    };
    if fd < 0 {
        return Err(os_error("create"));
    }
    // SAFETY: our descriptor; the size of our new file.
    let sized = unsafe { real::ftruncate(fd, len as libc::off_t) } == 0;
    // SAFETY: our descriptor; the link and unlink name our own file.
    let linked = unsafe {
        real::close(fd);
        let linked = sized
            && (real::link(tmp.as_ptr(), path.as_ptr()) == 0
                || crate::fail::errno() == libc::EEXIST);
        real::unlink(tmp.as_ptr());
        linked
    };
    if linked {
        Ok(())
    } else {
        Err(os_error("make"))
    }
}

/// CLOCK_MONOTONIC in nanoseconds (the same clock in every process).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given; the
    // monotonic clock always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

/// Bytes as little-endian words, zero-padded, with their length first;
/// `None` if they need more than `W - 1` words.
pub fn words<const W: usize>(bytes: &[u8]) -> Option<[u64; W]> {
    if bytes.len() > (W - 1) * 8 {
        return None;
    }
    let mut out = [0u64; W];
    out[0] = bytes.len() as u64;
    for (w, chunk) in out[1..].iter_mut().zip(bytes.chunks(8)) {
        let mut b = [0u8; 8];
        b[..chunk.len()].copy_from_slice(chunk);
        *w = u64::from_le_bytes(b);
    }
    Some(out)
}

/// `N` words under a sequence lock, in a board.
#[derive(Debug)]
#[repr(C)]
pub struct Cell<const N: usize> {
    seq: AtomicU64,
    words: [AtomicU64; N],
}

impl<const N: usize> Cell<N> {
    /// Writes the words, unless another process is writing the cell.
    pub fn write(&self, words: &[u64; N]) {
        let s = self.seq.load(Ordering::Relaxed);
        if s & 1 == 1
            || self
                .seq
                .compare_exchange(s, s + 1, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
        for (dst, w) in self.words.iter().zip(words) {
            dst.store(*w, Ordering::Relaxed);
        }
        self.seq.store(s + 2, Ordering::Release);
    }

    /// The words, if no process was writing them meanwhile.
    pub fn read(&self) -> Option<[u64; N]> {
        let s1 = self.seq.load(Ordering::Acquire);
        if s1 & 1 == 1 {
            return None;
        }
        let mut out = [0u64; N];
        for (o, w) in out.iter_mut().zip(&self.words) {
            *o = w.load(Ordering::Relaxed);
        }
        fence(Ordering::Acquire);
        (self.seq.load(Ordering::Relaxed) == s1).then_some(out)
    }

    /// Marks the cell as being written forever (tests: a writer killed
    /// half way).
    #[cfg(test)]
    pub fn break_lock(&self) {
        self.seq.fetch_add(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_carry_length_and_bytes() {
        let w = words::<3>(b"abcdefghi").unwrap();
        assert_eq!(w[0], 9);
        assert_eq!(w[1], u64::from_le_bytes(*b"abcdefgh"));
        assert_eq!(w[2], u64::from(b'i'));
        assert!(words::<3>(&[0; 17]).is_none());
        assert_ne!(words::<3>(b"a"), words::<3>(b"a\0"));
    }

    #[test]
    fn a_cell_reads_what_was_written_and_nothing_while_locked() {
        // SAFETY: atomics, for which zero is valid.
        let c: Box<Cell<2>> = Box::new(unsafe { std::mem::zeroed() });
        assert_eq!(c.read(), Some([0, 0]));
        c.write(&[3, 4]);
        assert_eq!(c.read(), Some([3, 4]));
        c.break_lock();
        assert_eq!(c.read(), None);
        c.write(&[5, 6]);
        assert_eq!(c.seq.load(Ordering::Relaxed) & 1, 1, "not written over");
    }
}
