//! Who receives: the lead token of a transport.
//!
//! There is no receiver thread per connection. A caller that waits for its
//! calls *leads* the transport: it polls every connection itself, hands out
//! every reply that arrives (its own and other callers'), and stops leading
//! as soon as what it waits for is done (`transport/leader.rs`). A reply
//! for the leader therefore costs no thread hand-off at all (one wake-up,
//! from `poll`), which is what a database's I/O rate is made of; with a
//! receiver thread per connection every reply cost two (receiver woken,
//! then the caller).
//!
//! Callers that find a leader already there are *followers*: they park,
//! the leader completes their calls and unparks them, and a leader that
//! stops hands the lead to one follower.
//!
//! Calls nobody waits for (a `Batch` submitted and not yet reaped) still
//! get received: the maintenance thread notices calls outstanding and no
//! leader for a tick and wakes the *fallback* thread, which leads until
//! nothing is outstanding or a caller wants the lead (it asks through
//! [`Lead::want`] and the wake-up eventfd, which also tells a leader that
//! a connection was added or the transport is shutting down).
//!
//! This module is the token and its bookkeeping; the loops are in
//! `transport/leader.rs`.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::thread::Thread;
use std::time::{Duration, Instant};

use super::clock::monotonic_ns;

/// Longest a follower parks before trying to lead again (a safety net: a
/// leader that stops always unparks one).
pub(crate) const FOLLOW_PARK_MAX: Duration = Duration::from_millis(20);

/// The leadership of one transport.
#[derive(Debug)]
pub(crate) struct Lead {
    leading: AtomicBool,
    /// Whether the fallback thread holds the lead (callers then ask it to
    /// step down instead of just waiting).
    pub(crate) fallback_leading: AtomicBool,
    /// A caller wants the fallback thread to step down.
    pub(crate) want: AtomicBool,
    followers: Mutex<Vec<Thread>>,
    /// Non-blocking eventfd the leader polls beside the connections.
    wake: OwnedFd,
    /// When the lead was last given up (`monotonic_ns`).
    released_ns: AtomicU64,
    /// Wakes the fallback thread (flag: it has work).
    fallback: (Mutex<bool>, Condvar),
    /// The leader's poll set, kept to avoid allocating per lead.
    poll_set: Mutex<PollSet>,
}

/// The leader's poll set (reached only through [`Leading`]).
#[derive(Default)]
pub(crate) struct PollSet {
    pub fds: Vec<libc::pollfd>,
    /// Channel index of `fds[1..]`.
    pub which: Vec<usize>,
    /// Per channel: the last poll reported it readable.
    pub ready: Vec<bool>,
}

impl std::fmt::Debug for PollSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PollSet")
            .field("fds", &self.fds.len())
            .finish()
    }
}

/// The lead, held: dropping it gives the lead up — on unwind too, so a
/// panic while leading cannot leave every later caller following a leader
/// that is gone. It is the only way to the leader's poll set.
#[derive(Debug)]
pub(crate) struct Leading<'a> {
    lead: &'a Lead,
    pub poll_set: MutexGuard<'a, PollSet>,
}

impl Drop for Leading<'_> {
    fn drop(&mut self) {
        self.lead.release();
    }
}

/// The fallback thread leading: its flags are cleared when this drops
/// (before the lead itself is given up), on unwind too.
#[derive(Debug)]
pub(crate) struct FallbackLeading<'a> {
    lead: &'a Lead,
}

impl Drop for FallbackLeading<'_> {
    fn drop(&mut self) {
        self.lead.want.store(false, Ordering::SeqCst);
        self.lead.fallback_leading.store(false, Ordering::SeqCst);
    }
}

impl Lead {
    pub(crate) fn new() -> io::Result<Self> {
        let fd = crate::fdfloor::making(|| {
            // SAFETY: plain syscall; the result is checked before use.
            let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
            (fd >= 0).then(|| crate::fdfloor::raise(fd))
        });
        let Some(fd) = fd else {
            return Err(io::Error::last_os_error());
        };
        Ok(Self {
            leading: AtomicBool::new(false),
            fallback_leading: AtomicBool::new(false),
            want: AtomicBool::new(false),
            followers: Mutex::new(Vec::new()),
            // SAFETY: `fd` is a fresh descriptor nobody else owns.
            wake: unsafe { OwnedFd::from_raw_fd(fd) },
            released_ns: AtomicU64::new(0),
            fallback: (Mutex::new(false), Condvar::new()),
            poll_set: Mutex::new(PollSet::default()),
        })
    }

    /// Takes the lead if nobody holds it.
    pub(crate) fn try_acquire(&self) -> Option<Leading<'_>> {
        self.leading
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::Relaxed)
            .ok()?;
        Some(Leading {
            lead: self,
            poll_set: self.poll_set.lock().unwrap_or_else(|p| p.into_inner()),
        })
    }

    /// The fallback thread takes the lead if nobody holds it; it is marked
    /// as the fallback's until the returned tokens drop.
    pub(crate) fn try_acquire_fallback(&self) -> (FallbackLeading<'_>, Option<Leading<'_>>) {
        self.fallback_leading.store(true, Ordering::SeqCst);
        (FallbackLeading { lead: self }, self.try_acquire())
    }

    pub(crate) fn is_led(&self) -> bool {
        self.leading.load(Ordering::SeqCst)
    }

    /// Nanoseconds (`monotonic_ns`) since the lead was last given up.
    pub(crate) fn unled_for_ns(&self) -> u64 {
        monotonic_ns().saturating_sub(self.released_ns.load(Ordering::Relaxed))
    }

    /// Gives the lead up and hands it to a follower, if any waits.
    fn release(&self) {
        self.released_ns.store(monotonic_ns(), Ordering::Relaxed);
        self.leading.store(false, Ordering::SeqCst);
        self.hand_off();
    }

    /// Wakes the longest-waiting follower to take the lead. It is taken
    /// off the list, so it knows it was chosen (see `follow`).
    fn hand_off(&self) {
        let next = {
            let mut followers = self.followers.lock().unwrap_or_else(|p| p.into_inner());
            (!followers.is_empty()).then(|| followers.remove(0))
        };
        if let Some(t) = next {
            t.unpark();
        }
    }

    /// Parks the calling thread as a follower until unparked (a completion
    /// or a hand-off), `until` or a short safety timeout.
    pub(crate) fn follow(&self, until: Option<Instant>, done: &dyn Fn() -> bool) {
        let me = std::thread::current();
        self.followers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(me.clone());
        // Re-check after registering: a leader that stopped in between did
        // not see us, but we see that it stopped.
        if self.is_led() && !done() {
            let mut park = FOLLOW_PARK_MAX;
            if let Some(u) = until {
                park = park.min(u.saturating_duration_since(Instant::now()));
            }
            std::thread::park_timeout(park);
        }
        let chosen = {
            let mut followers = self.followers.lock().unwrap_or_else(|p| p.into_inner());
            match followers.iter().position(|t| t.id() == me.id()) {
                Some(i) => {
                    followers.remove(i);
                    false
                }
                None => true,
            }
        };
        // Chosen to lead but no longer needing to (our calls completed
        // meanwhile): pass the lead on, or the others would wait for the
        // safety timeout.
        if chosen && done() && !self.is_led() {
            self.hand_off();
        }
    }

    pub(crate) fn wake_fd(&self) -> libc::c_int {
        self.wake.as_raw_fd()
    }

    /// Wakes the leader out of `poll`.
    pub(crate) fn wake(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to our eventfd; a full
        // counter (EAGAIN) still leaves it readable, which is all we need.
        let _ = unsafe { libc::write(self.wake.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    /// Clears the eventfd after the leader saw it readable.
    pub(crate) fn drain_wake(&self) {
        let mut v: u64 = 0;
        // SAFETY: reads 8 bytes into a live u64 from our non-blocking eventfd.
        let _ = unsafe { libc::read(self.wake.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
    }

    /// Tells the fallback thread there are calls nobody receives (or that
    /// the transport is stopping).
    pub(crate) fn signal_fallback(&self) {
        let mut work = self.fallback.0.lock().unwrap_or_else(|p| p.into_inner());
        *work = true;
        self.fallback.1.notify_one();
    }

    /// The fallback thread waits here until signalled (or `stop()`).
    pub(crate) fn wait_for_fallback_work(&self, stop: &dyn Fn() -> bool) {
        let (lock, cv) = &self.fallback;
        let mut work = lock.lock().unwrap_or_else(|p| p.into_inner());
        while !*work && !stop() {
            work = cv.wait(work).unwrap_or_else(|p| p.into_inner());
        }
        *work = false;
    }
}
