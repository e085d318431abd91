//! Sizes for `lseek(SEEK_END)` without a GETATTR each time, coherent among
//! the processes of this host.
//!
//! PostgreSQL takes the size of every relation it plans or scans with
//! `lseek(fd, 0, SEEK_END)`, about ten times per TPC-B transaction, each a
//! GETATTR. A size remembered by one process would be wrong as soon as
//! another process extends the file (each process is its own NFS client),
//! so every process of the host that changes a file's size says so on a
//! shared *board*: a table of change counters in a file of the shadow
//! directory (`sizes`, mapped by every process), one counter per file
//! handle (hashed: two files sharing a counter only cost extra GETATTRs).
//!
//! The rules, which make a remembered size exactly as fresh as a GETATTR
//! for changes made through this library on this host:
//! * a process reads the counter *before* its GETATTR and keeps the size
//!   with that value ([`Known`]);
//! * every call that may change a size (a WRITE past the end the process
//!   knows, a SETATTR of the size) moves the counter on *after* the
//!   server answered, before the libc call returns;
//! * a remembered size is used only while the counter still has the value
//!   read before its GETATTR, and for at most [`ttl`] (changes by other
//!   hosts, or by programs not using the library, are seen after that).
//!
//! A change the server applied before the GETATTR was answered is in the
//! size; one applied after it moves the counter after it was read. Data is
//! never cached: reads always go to the server.

use std::collections::hash_map::DefaultHasher;
use std::ffi::CString;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use dnfs::Handle;

use crate::real;
use crate::state::State;

/// Counters on the board (8 bytes each: a 512 KiB file).
const SLOTS: usize = 1 << 16;
/// The board's file name in the shadow directory.
pub const BOARD_FILE: &str = "sizes";
/// Environment variable: how long (milliseconds) a remembered size may be
/// used; `0` turns remembering off (every `lseek(SEEK_END)` asks).
pub const ENV_TTL_MS: &str = "DIRECTNFS_PRELOAD_SIZE_TTL_MS";
/// The default of [`ENV_TTL_MS`].
const DEFAULT_TTL: Duration = Duration::from_millis(1000);

/// The mapped board, or `None` when it cannot be had (then nothing is
/// remembered).
struct Board(&'static [AtomicU64]);

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
    let len = SLOTS * std::mem::size_of::<AtomicU64>();
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
    // SAFETY: page-aligned, `SLOTS` u64s long, never unmapped; AtomicU64
    // has the layout of u64, and every access is atomic.
    Some(Board(unsafe {
        std::slice::from_raw_parts(p.cast::<AtomicU64>(), SLOTS)
    }))
}

impl Board {
    fn slot(&self, handle: &Handle) -> &AtomicU64 {
        let mut h = DefaultHasher::new();
        handle.as_bytes().hash(&mut h);
        &self.0[(h.finish() as usize) % SLOTS]
    }
}

/// A size one process got from the server, with the board's counter as it
/// was before it asked.
#[derive(Debug, Clone, Copy)]
pub struct Known {
    size: u64,
    counter: u64,
    at: Instant,
}

/// What one open file description remembers.
#[derive(Debug, Default)]
pub struct Remembered(Mutex<Option<Known>>);

impl Remembered {
    /// The remembered size of `handle`, if it may still be used.
    pub fn size(&self, state: &State, handle: &Handle) -> Option<u64> {
        let board = board(state)?;
        let known = (*self.0.lock().unwrap_or_else(|p| p.into_inner()))?;
        let fresh = known.at.elapsed() < ttl()
            && board.slot(handle).load(Ordering::Acquire) == known.counter;
        fresh.then_some(known.size)
    }

    /// Gets the size of `handle` with `ask` (a GETATTR) and remembers it.
    pub fn ask(
        &self,
        state: &State,
        handle: &Handle,
        ask: impl FnOnce() -> crate::fail::Res<u64>,
    ) -> crate::fail::Res<u64> {
        let Some(board) = board(state) else {
            return ask();
        };
        let counter = board.slot(handle).load(Ordering::Acquire);
        let at = Instant::now();
        let size = ask()?;
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(Known { size, counter, at });
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
        board.slot(handle).fetch_add(1, Ordering::AcqRel);
    }
}

/// The board's counter of `handle` (tests).
pub fn counter(state: &State, handle: &Handle) -> Option<u64> {
    board(state).map(|b| b.slot(handle).load(Ordering::Acquire))
}
