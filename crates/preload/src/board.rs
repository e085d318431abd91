//! Boards: tables in files of the shadow directory that every process of
//! the host maps, where one process leaves what it learned from the server
//! (a size, the handle a name led to) for the others, and says when it
//! changed something (a change counter moves on). sizes.rs and names.rs
//! are the two boards; this module maps them and gives them their cells.
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

/// Maps `len` bytes of the board file `name` in the shadow directory
/// (made on first use on the host: zero-filled, mode 0666, put in place
/// whole so no process ever opens it half made). The mapping is never
/// undone, and forked children keep it. A board that cannot be mapped is
/// said once on stderr: this process's changes then reach the others
/// only after [`ttl`].
pub fn map(state: &State, name: &str, len: usize) -> Option<*mut u8> {
    let mapped = map_file(&state.shadow.root, name, len);
    if mapped.is_none() {
        crate::warn::once(&format!("board {name}"), || {
            format!(
                "cannot map the board {}/{name} ({}): the sizes and names this \
                 process changes reach other processes of the host only after \
                 {ENV_TTL_MS} ({} ms)",
                state.shadow.root,
                std::io::Error::last_os_error(),
                ttl().as_millis()
            )
        });
    }
    mapped
}

fn map_file(root: &str, name: &str, len: usize) -> Option<*mut u8> {
    crate::shadow::make_shared_dir(root).ok()?;
    let path = CString::new(format!("{root}/{name}")).ok()?;
    let mut fd = open_rw(&path);
    if fd < 0 && crate::fail::errno() == libc::ENOENT {
        make_board_file(root, name, &path, len)?;
        fd = open_rw(&path);
    }
    if fd < 0 {
        return None;
    }
    // SAFETY: fd was just opened; zeroed stat buffer filled by fstat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { real::fstat(fd, &mut st) } != 0 || (st.st_size as usize) < len {
        // SAFETY: our descriptor.
        unsafe { real::close(fd) };
        return None;
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
    // SAFETY: the mapping keeps the file; the descriptor is not needed.
    unsafe { real::close(fd) };
    (p != libc::MAP_FAILED).then_some(p.cast())
}

fn open_rw(path: &CString) -> libc::c_int {
    // SAFETY: NUL-terminated path; plain open of a local file.
    unsafe { real::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC, 0) }
}

/// Makes the board file under a name of this process's, sized and with
/// its mode, then links it into place (one process wins; the others'
/// attempts fail with `EEXIST` and are removed).
fn make_board_file(root: &str, name: &str, path: &CString, len: usize) -> Option<()> {
    let tmp = CString::new(format!("{root}/.{name}.{}", std::process::id())).ok()?;
    // SAFETY: NUL-terminated path; a new local file.
    let fd = unsafe {
        real::open(
            tmp.as_ptr(),
            libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC,
            0o666,
        )
    };
    if fd < 0 {
        return None;
    }
    // SAFETY: our descriptor; mode bits and size of our new file.
    let made =
        unsafe { libc::fchmod(fd, 0o666) == 0 && real::ftruncate(fd, len as libc::off_t) == 0 };
    // SAFETY: our descriptor; the link and unlink name our own file.
    let linked = unsafe {
        real::close(fd);
        let linked = made
            && (real::link(tmp.as_ptr(), path.as_ptr()) == 0
                || crate::fail::errno() == libc::EEXIST);
        real::unlink(tmp.as_ptr());
        linked
    };
    linked.then_some(())
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
