//! Sizes for `lseek(SEEK_END)` without a GETATTR each time, coherent among
//! the processes of this host.
//!
//! PostgreSQL takes the size of every relation it plans or scans with
//! `lseek(fd, 0, SEEK_END)`, about ten times per TPC-B transaction and four
//! times in a new backend, each a GETATTR. A size remembered by one process
//! would be wrong as soon as another process extends the file (each
//! process is its own NFS client), so every process of the host that
//! changes a file's size says so on a shared *board*: a table in a file of
//! the shadow directory (`sizes.v1`, mapped by every process) with one slot
//! per file handle (hashed: two files sharing a slot only cost extra
//! GETATTRs). A slot holds a change counter, and the last size a process
//! got from the server with the counter's value at the time, so a new
//! process (a new backend) uses the size another process asked for.
//!
//! The rules, which make a remembered size exactly as fresh as a GETATTR
//! for changes made through this library on this host:
//! * a process reads the counter *before* its GETATTR and keeps the size
//!   with that value ([`Known`]), in its open file description and on the
//!   board;
//! * every call that may change a size (a WRITE past the end the process
//!   knows, a SETATTR of the size) moves the counter on *after* the
//!   server answered, before the libc call returns;
//! * a remembered size is used only while the counter still has the value
//!   read before its GETATTR, and for at most [`ttl`] after that GETATTR
//!   was sent (changes by other hosts, or by programs not using the
//!   library, are seen after that).
//!
//! A change the server applied before the GETATTR was answered is in the
//! size; one applied after it moves the counter after it was read. Data is
//! never cached: reads always go to the server.
//!
//! The published size of a slot is written under a sequence lock (odd
//! while a process writes it); readers never wait for it: a slot being
//! written, or left odd by a process killed while writing it, is read as
//! "nothing published" and costs a GETATTR.

use std::collections::hash_map::DefaultHasher;
use std::ffi::CString;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use dnfs::Handle;

use crate::real;
use crate::state::State;

/// Slots on the board (128 bytes each: a 2 MiB file, of which tmpfs only
/// keeps the pages touched).
const SLOTS: usize = 1 << 14;
/// Handle bytes a slot holds (NFSv3 handles are at most 64 bytes; NFSv4
/// ones up to 128: a longer handle is never published, only counted).
const HANDLE_WORDS: usize = 8;

/// One slot of the board, shared by every process of the host.
#[repr(C)]
struct Slot {
    /// Moved on after every change of the size of a file of this slot.
    counter: AtomicU64,
    /// Sequence lock of the fields below: odd while a process writes them.
    seq: AtomicU64,
    /// The size a process got from the server...
    size: AtomicU64,
    /// ...with the GETATTR sent at this CLOCK_MONOTONIC time (ns)...
    asked_at: AtomicU64,
    /// ...after reading this value of `counter`...
    at_counter: AtomicU64,
    /// ...for the handle of this many bytes...
    handle_len: AtomicU64,
    /// ...these (zero-padded, little-endian words).
    handle: [AtomicU64; HANDLE_WORDS],
    _pad: [u64; 2],
}
/// The board's file name in the shadow directory (versioned: a process of
/// another layout must not read it).
pub const BOARD_FILE: &str = "sizes.v1";
/// Environment variable: how long (milliseconds) a remembered size may be
/// used; `0` turns remembering off (every `lseek(SEEK_END)` asks).
pub const ENV_TTL_MS: &str = "DIRECTNFS_PRELOAD_SIZE_TTL_MS";
/// The default of [`ENV_TTL_MS`].
const DEFAULT_TTL: Duration = Duration::from_millis(1000);

/// The mapped board, or `None` when it cannot be had (then nothing is
/// remembered).
struct Board(&'static [Slot]);

static BOARD: OnceLock<Option<Board>> = OnceLock::new();
static TTL: OnceLock<Duration> = OnceLock::new();

/// How long a remembered size may be used ([`ENV_TTL_MS`]).
pub fn ttl() -> Duration {
    *TTL.get_or_init(|| {
        std::env::var(ENV_TTL_MS)
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_millis)
            .unwrap_or(DEFAULT_TTL)
    })
}

fn board(state: &State) -> Option<&'static Board> {
    BOARD
        .get_or_init(|| {
            if ttl().is_zero() || state.write_behind {
                // With write-behind a WRITE reaches the server after the
                // call returned: no counter could say when.
                return None;
            }
            map_board(&state.shadow.root)
        })
        .as_ref()
}

fn map_board(root: &str) -> Option<Board> {
    crate::shadow::make_shared_dir(root).ok()?;
    let path = CString::new(format!("{root}/{BOARD_FILE}")).ok()?;
    let len = SLOTS * std::mem::size_of::<Slot>();
    // SAFETY: NUL-terminated path; a local file every user may share (as
    // the shadow files), made once with mode 0666.
    let fd = unsafe {
        real::open(
            path.as_ptr(),
            libc::O_RDWR | libc::O_CREAT | libc::O_CLOEXEC,
            0o666,
        )
    };
    if fd < 0 {
        return None;
    }
    // SAFETY: fd was just opened; zeroed stat buffer filled by fstat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let ok = unsafe { real::fstat(fd, &mut st) } == 0
        && (st.st_size as usize >= len
            || unsafe { libc::fchmod(fd, 0o666) } == 0
                && unsafe { real::ftruncate(fd, len as libc::off_t) } == 0);
    if !ok {
        // SAFETY: our descriptor.
        unsafe { real::close(fd) };
        return None;
    }
    // SAFETY: a shared mapping of `len` bytes of a file that long; it
    // stays mapped for the life of the process (and its forked children).
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
    if p == libc::MAP_FAILED {
        return None;
    }
    // SAFETY: page-aligned, `SLOTS` slots long, never unmapped; a slot is
    // only AtomicU64s (the layout of u64, zero is a valid value) and
    // padding, and every access is atomic.
    Some(Board(unsafe {
        std::slice::from_raw_parts(p.cast::<Slot>(), SLOTS)
    }))
}

impl Board {
    fn slot(&self, handle: &Handle) -> &Slot {
        let mut h = DefaultHasher::new();
        handle.as_bytes().hash(&mut h);
        &self.0[(h.finish() as usize) % SLOTS]
    }
}

/// A handle as the words a slot keeps, or `None` if it is too long.
fn handle_words(handle: &Handle) -> Option<(u64, [u64; HANDLE_WORDS])> {
    let bytes = handle.as_bytes();
    if bytes.len() > HANDLE_WORDS * 8 {
        return None;
    }
    let mut words = [0u64; HANDLE_WORDS];
    for (w, chunk) in words.iter_mut().zip(bytes.chunks(8)) {
        let mut b = [0u8; 8];
        b[..chunk.len()].copy_from_slice(chunk);
        *w = u64::from_le_bytes(b);
    }
    Some((bytes.len() as u64, words))
}

impl Slot {
    /// Publishes a size got from the server (unless another process is
    /// writing the slot: then this one is simply not published).
    fn publish(&self, handle: &Handle, known: Known) {
        let Some((len, words)) = handle_words(handle) else {
            return;
        };
        let s = self.seq.load(Ordering::Relaxed);
        if s & 1 == 1
            || self
                .seq
                .compare_exchange(s, s + 1, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
        self.size.store(known.size, Ordering::Relaxed);
        self.asked_at.store(known.asked_at, Ordering::Relaxed);
        self.at_counter.store(known.counter, Ordering::Relaxed);
        self.handle_len.store(len, Ordering::Relaxed);
        for (dst, w) in self.handle.iter().zip(words) {
            dst.store(w, Ordering::Relaxed);
        }
        self.seq.store(s + 2, Ordering::Release);
    }

    /// The size published for `handle`, if there is one (still to be
    /// checked against the counter and the clock).
    fn published(&self, handle: &Handle) -> Option<Known> {
        let (len, words) = handle_words(handle)?;
        let s1 = self.seq.load(Ordering::Acquire);
        if s1 & 1 == 1 {
            return None;
        }
        let known = Known {
            size: self.size.load(Ordering::Relaxed),
            asked_at: self.asked_at.load(Ordering::Relaxed),
            counter: self.at_counter.load(Ordering::Relaxed),
        };
        let same = self.handle_len.load(Ordering::Relaxed) == len
            && self
                .handle
                .iter()
                .zip(words)
                .all(|(a, w)| a.load(Ordering::Relaxed) == w);
        fence(Ordering::Acquire);
        if self.seq.load(Ordering::Relaxed) != s1 || !same || known.asked_at == 0 {
            return None;
        }
        Some(known)
    }

    /// True if `known` may still be used: no change since its GETATTR,
    /// and not older than the TTL.
    fn still_good(&self, known: &Known, now: u64) -> bool {
        now.saturating_sub(known.asked_at) < ttl().as_nanos() as u64
            && self.counter.load(Ordering::Acquire) == known.counter
    }
}

/// CLOCK_MONOTONIC in nanoseconds (the same clock in every process).
fn monotonic_ns() -> u64 {
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

/// A size one process got from the server, with the board's counter as it
/// was before it asked and when it asked.
#[derive(Debug, Clone, Copy)]
pub struct Known {
    size: u64,
    counter: u64,
    asked_at: u64,
}

/// What one open file description remembers.
#[derive(Debug, Default)]
pub struct Remembered(Mutex<Option<Known>>);

impl Remembered {
    /// The remembered size of `handle` (this description's, else the one
    /// another process published), if it may still be used.
    pub fn size(&self, state: &State, handle: &Handle) -> Option<u64> {
        let slot = board(state)?.slot(handle);
        let now = monotonic_ns();
        let mut mine = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(known) = *mine {
            if slot.still_good(&known, now) {
                return Some(known.size);
            }
        }
        let known = slot.published(handle)?;
        if !slot.still_good(&known, now) {
            return None;
        }
        *mine = Some(known);
        Some(known.size)
    }

    /// Gets the size of `handle` with `ask` (a GETATTR) and remembers it,
    /// here and on the board.
    pub fn ask(
        &self,
        state: &State,
        handle: &Handle,
        ask: impl FnOnce() -> crate::fail::Res<u64>,
    ) -> crate::fail::Res<u64> {
        let Some(board) = board(state) else {
            return ask();
        };
        let slot = board.slot(handle);
        let counter = slot.counter.load(Ordering::Acquire);
        let asked_at = monotonic_ns();
        let size = ask()?;
        let known = Known {
            size,
            counter,
            asked_at,
        };
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(known);
        if slot.counter.load(Ordering::Acquire) == counter {
            slot.publish(handle, known);
        }
        Ok(size)
    }

    /// After a WRITE that ended at `end` was answered (or failed): if it
    /// may have made the file longer than this process knows, every
    /// process forgets the size.
    pub fn wrote(&self, state: &State, handle: &Handle, end: u64) {
        if let Some(known) = self.size(state, handle) {
            if end <= known {
                // The counter has not moved since the size was asked: no
                // change the server finished since then made the file
                // shorter, and this WRITE did not make it longer. (A change
                // still in flight moves the counter when it is answered.)
                return;
            }
        }
        changed(state, handle);
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

/// Says on the board that the size of `handle` may have changed (after
/// the server answered the call that changed it).
pub fn changed(state: &State, handle: &Handle) {
    if let Some(board) = board(state) {
        board.slot(handle).counter.fetch_add(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot() -> Box<Slot> {
        // SAFETY: a slot is AtomicU64s and u64s, for which zero is valid.
        Box::new(unsafe { std::mem::zeroed() })
    }

    fn handle(b: &[u8]) -> Handle {
        Handle::from_bytes(b).unwrap()
    }

    #[test]
    fn a_published_size_serves_its_handle_until_the_counter_moves() {
        let s = slot();
        let h = handle(&[1, 2, 3, 4, 5, 6, 7, 8, 9]);
        let now = monotonic_ns();
        let known = Known {
            size: 8192,
            counter: 0,
            asked_at: now,
        };
        assert!(s.published(&h).is_none(), "nothing published yet");
        s.publish(&h, known);
        let got = s.published(&h).unwrap();
        assert_eq!((got.size, got.counter), (8192, 0));
        assert!(s.still_good(&got, now));
        assert!(s.published(&handle(&[1, 2, 3])).is_none(), "another handle");
        assert!(s.published(&handle(&[1, 2, 3, 4, 5, 6, 7, 8, 10])).is_none());
        s.counter.fetch_add(1, Ordering::AcqRel);
        assert!(!s.still_good(&got, now), "a change moved the counter");
    }

    #[test]
    fn a_size_expires_after_the_ttl() {
        let s = slot();
        let now = monotonic_ns();
        let old = Known {
            size: 1,
            counter: 0,
            asked_at: now - ttl().as_nanos() as u64,
        };
        assert!(!s.still_good(&old, now));
    }

    #[test]
    fn a_slot_being_written_reads_as_nothing_published() {
        let s = slot();
        let h = handle(&[7; 64]);
        let known = Known {
            size: 5,
            counter: 0,
            asked_at: monotonic_ns(),
        };
        s.publish(&h, known);
        assert!(s.published(&h).is_some());
        // A writer killed half way leaves the sequence odd.
        s.seq.fetch_add(1, Ordering::AcqRel);
        assert!(s.published(&h).is_none());
        // ... and nobody publishes over it either.
        s.publish(&h, known);
        assert_eq!(s.seq.load(Ordering::Acquire) & 1, 1);
    }

    #[test]
    fn slots_are_128_bytes() {
        assert_eq!(std::mem::size_of::<Slot>(), 128);
    }
}
