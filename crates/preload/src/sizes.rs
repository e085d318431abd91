//! Sizes for `lseek(SEEK_END)` without a GETATTR each time, coherent among
//! the processes of one user on this host (all of PostgreSQL's).
//!
//! PostgreSQL takes the size of every relation it plans or scans with
//! `lseek(fd, 0, SEEK_END)`, about ten times per TPC-B transaction and four
//! times in a new backend, each a GETATTR. A size remembered by one process
//! would be wrong as soon as another process extends the file (each
//! process is its own NFS client), so every process that changes a
//! file's size says so on a shared *board*: a table in a file of the
//! shadow directory (`sizes.v1.UID`, mapped by every process of the user,
//! see board.rs) with one slot
//! per file handle (hashed: two files sharing a slot only cost extra
//! GETATTRs). A slot holds a change counter, and the last size a process
//! got from the server with the counter's value at the time, so a new
//! process (a new backend) uses the size another process asked for.
//!
//! The rules, which make a remembered size exactly as fresh as a GETATTR
//! for changes made through this library by processes of the same user on
//! this host:
//! * a process reads the counter *before* its GETATTR and keeps the size
//!   with that value ([`Known`]), in its open file description and on the
//!   board;
//! * every call that may change a size (a WRITE past the end the process
//!   knows, a SETATTR of the size) moves the counter on *after* the
//!   server answered, before the libc call returns;
//! * a remembered size is used only while the counter still has the value
//!   read before its GETATTR, and for at most [`board::ttl`] after that GETATTR
//!   was sent (changes by other hosts, other users, or programs not using
//!   the library, are seen after that).
//!
//! A change the server applied before the GETATTR was answered is in the
//! size; one applied after it moves the counter after it was read.
//!
//! A READ that comes back short tells the size as well (it stopped at the
//! end of the file), and is remembered by the same rules; a read at or
//! past a remembered size then returns end of file without a READ (ops/io.rs).
//! A stream reading a file to its end asks once more and gets 0:
//! PostgreSQL does so for both of its `pg_internal.init` files in every
//! new backend. Data is never cached: reads of bytes within the size
//! always go to the server.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use dnfs::Handle;

use crate::board::{self, monotonic_ns, young, Cell};
use crate::state::State;

/// Slots on the board (128 bytes each: a 2 MiB file, of which tmpfs only
/// keeps the pages touched).
const SLOTS: usize = 1 << 14;
/// The board's file name in the shadow directory (versioned: a process of
/// another layout must not read it).
pub const BOARD_FILE: &str = "sizes.v1";
/// Words of a published size: size, when asked, the counter then, and the
/// handle (its length and 8 words: NFSv3 handles are at most 64 bytes; a
/// longer NFSv4 handle is never published, only counted).
const WORDS: usize = 3 + HANDLE;
const HANDLE: usize = 9;

/// One slot of the board, shared by every process of the user.
#[repr(C)]
struct Slot {
    /// Moved on after every change of the size of a file of this slot.
    counter: AtomicU64,
    /// The size a process got from the server last.
    published: Cell<WORDS>,
    _pad: [u64; 2],
}

static BOARD: OnceLock<Option<&'static [Slot]>> = OnceLock::new();

fn board(state: &State) -> Option<&'static [Slot]> {
    *BOARD.get_or_init(|| {
        let p = board::map(state, BOARD_FILE, SLOTS * std::mem::size_of::<Slot>())?;
        // SAFETY: page-aligned, `SLOTS` slots long, never unmapped; a slot
        // is only AtomicU64s (zero is a valid value) and padding, and
        // every access is atomic.
        Some(unsafe { std::slice::from_raw_parts(p.cast::<Slot>(), SLOTS) })
    })
}

fn slot_index(handle: &Handle) -> usize {
    let mut h = DefaultHasher::new();
    handle.as_bytes().hash(&mut h);
    (h.finish() as usize) % SLOTS
}

impl Slot {
    /// Publishes a size got from the server.
    fn publish(&self, handle: &Handle, known: Known) {
        let Some(h) = board::words::<HANDLE>(handle.as_bytes()) else {
            return;
        };
        let mut w = [0u64; WORDS];
        w[0] = known.size;
        w[1] = known.asked_at;
        w[2] = known.counter;
        w[3..].copy_from_slice(&h);
        self.published.write(&w);
    }

    /// The size published for `handle`, if there is one (still to be
    /// checked with [`still_good`](Self::still_good)).
    fn published(&self, handle: &Handle) -> Option<Known> {
        let h = board::words::<HANDLE>(handle.as_bytes())?;
        let w = self.published.read()?;
        (w[3..] == h).then_some(Known {
            size: w[0],
            asked_at: w[1],
            counter: w[2],
        })
    }

    /// True if `known` may still be used: no change since its GETATTR,
    /// and not older than the TTL.
    fn still_good(&self, known: &Known, now: u64) -> bool {
        young(known.asked_at, now) && self.counter.load(Ordering::Acquire) == known.counter
    }
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
pub struct Remembered {
    known: Mutex<Option<Known>>,
    /// Its handle's slot (hashed once per description, not per call).
    slot: OnceLock<usize>,
}

impl Remembered {
    fn slot(&self, board: &'static [Slot], handle: &Handle) -> &'static Slot {
        &board[*self.slot.get_or_init(|| slot_index(handle))]
    }

    /// The remembered size of `handle` (this description's, else the one
    /// another process published), if it may still be used.
    pub fn size(&self, state: &State, handle: &Handle) -> Option<u64> {
        if !board::usable(state) {
            return None;
        }
        let slot = self.slot(board(state)?, handle);
        let now = monotonic_ns();
        let mut mine = self.known.lock().unwrap_or_else(|p| p.into_inner());
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
        self.observe(state, handle, || ask().map(|size| (size, Some(size))))
    }

    /// Runs `call`, which asks the server something and may learn the
    /// size of `handle` from the answer (a GETATTR, or a READ that came
    /// back short: it ended at the end of the file), and remembers that
    /// size like an asked one, here and on the board: the counter is read
    /// before the call is sent, so the rules above hold for it too.
    pub fn observe<T>(
        &self,
        state: &State,
        handle: &Handle,
        call: impl FnOnce() -> crate::fail::Res<(T, Option<u64>)>,
    ) -> crate::fail::Res<T> {
        let Some(board) = board(state).filter(|_| board::usable(state)) else {
            return call().map(|(answer, _)| answer);
        };
        let slot = self.slot(board, handle);
        let counter = slot.counter.load(Ordering::Acquire);
        let asked_at = monotonic_ns();
        let (answer, size) = call()?;
        let Some(size) = size else {
            return Ok(answer);
        };
        let known = Known {
            size,
            counter,
            asked_at,
        };
        *self.known.lock().unwrap_or_else(|p| p.into_inner()) = Some(known);
        if slot.counter.load(Ordering::Acquire) == counter {
            slot.publish(handle, known);
        }
        Ok(answer)
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
        if let Some(board) = board(state) {
            self.slot(board, handle)
                .counter
                .fetch_add(1, Ordering::AcqRel);
        }
        *self.known.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

/// Says on the board that the size of `handle` may have changed (after
/// the server answered the call that changed it).
pub fn changed(state: &State, handle: &Handle) {
    if let Some(board) = board(state) {
        board[slot_index(handle)]
            .counter
            .fetch_add(1, Ordering::AcqRel);
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
        let empty = s.published(&h);
        assert!(empty.is_none_or(|k| !s.still_good(&k, now)), "nothing yet");
        s.publish(&h, known);
        let got = s.published(&h).unwrap();
        assert_eq!((got.size, got.counter), (8192, 0));
        assert!(s.still_good(&got, now));
        assert!(s.published(&handle(&[1, 2, 3])).is_none(), "another handle");
        assert!(s
            .published(&handle(&[1, 2, 3, 4, 5, 6, 7, 8, 10]))
            .is_none());
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
            asked_at: now - board::ttl().as_nanos() as u64,
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
        s.published.break_lock();
        assert!(s.published(&h).is_none());
    }

    #[test]
    fn slots_are_128_bytes() {
        assert_eq!(std::mem::size_of::<Slot>(), 128);
    }
}
