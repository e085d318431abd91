//! Who receives: leader/follower.
//!
//! There is no receiver thread per connection. A caller that waits for its
//! calls *leads* the transport: it polls every connection itself, hands out
//! every reply that arrives (its own and other callers'), and stops leading
//! as soon as what it waits for is done. A reply for the leader therefore
//! costs no thread hand-off at all (one wake-up, from `poll`), which is
//! what a database's I/O rate is made of; with a receiver thread per
//! connection every reply cost two (receiver woken, then the caller).
//!
//! Callers that find a leader already there are *followers*: they park,
//! the leader completes their calls and unparks them, and a leader that
//! stops hands the lead to one follower.
//!
//! Calls nobody waits for (a `Batch` submitted and not yet reaped) still
//! get received: the maintenance thread notices a transport with calls
//! outstanding and no leader for a tick and wakes the *fallback* thread,
//! which leads until nothing is outstanding or a caller wants the lead
//! (it asks through [`Lead::want`] and the wake-up eventfd, which also
//! tells a leader that a connection was added or the transport is
//! shutting down).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::thread::Thread;
use std::time::{Duration, Instant};

use super::call::Group;
use super::channel::Channel;
use super::clock::monotonic_ns;
use super::receive::Lost;
use super::transport::Shared;

/// Longest a leader sleeps in `poll` before re-checking what it waits for
/// (completions by other threads: soft timeouts, shutdown).
pub(crate) const LEAD_POLL_MAX: Duration = Duration::from_millis(20);
/// Longest a follower parks before trying to lead again (a safety net: a
/// leader that stops always unparks one).
const FOLLOW_PARK_MAX: Duration = Duration::from_millis(20);

/// The lead, held: dropping it gives the lead up (see [`Lead::try_acquire`]).
#[derive(Debug)]
pub(crate) struct Leading<'a> {
    lead: &'a Lead,
}

impl Drop for Leading<'_> {
    fn drop(&mut self) {
        self.lead.release();
    }
}

/// The fallback thread leading: its flags are cleared when this drops
/// (before the lead itself is given up), on unwind too.
struct FallbackLeading<'a> {
    lead: &'a Lead,
}

impl Drop for FallbackLeading<'_> {
    fn drop(&mut self) {
        self.lead.want.store(false, Ordering::SeqCst);
        self.lead.fallback_leading.store(false, Ordering::SeqCst);
    }
}

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
    pub(crate) released_ns: AtomicU64,
    /// Wakes the fallback thread (flag: it has work).
    pub(crate) fallback: (Mutex<bool>, Condvar),
    /// The leader's poll set, kept to avoid allocating per lead.
    scratch: Mutex<Scratch>,
}

/// Poll set of the leader (only the leader locks it).
#[derive(Default)]
struct Scratch {
    fds: Vec<libc::pollfd>,
    /// Channel index of `fds[1..]`.
    which: Vec<usize>,
    /// Per channel: the last poll reported it readable.
    ready: Vec<bool>,
}

impl std::fmt::Debug for Scratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scratch")
            .field("fds", &self.fds.len())
            .finish()
    }
}

impl Lead {
    pub(crate) fn new() -> io::Result<Self> {
        // SAFETY: plain syscall; the result is checked before use.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Self {
            leading: AtomicBool::new(false),
            fallback_leading: AtomicBool::new(false),
            want: AtomicBool::new(false),
            followers: Mutex::new(Vec::new()),
            // SAFETY: `fd` is a fresh descriptor nobody else owns.
            wake: unsafe { OwnedFd::from_raw_fd(fd) },
            released_ns: AtomicU64::new(0),
            fallback: (Mutex::new(false), Condvar::new()),
            scratch: Mutex::new(Scratch::default()),
        })
    }

    /// Takes the lead if nobody holds it. The lead is given up when the
    /// returned token drops — on unwind too, so a panic while leading
    /// cannot leave every later caller following a leader that is gone.
    pub(crate) fn try_acquire(&self) -> Option<Leading<'_>> {
        self.leading
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::Relaxed)
            .is_ok()
            .then_some(Leading { lead: self })
    }

    pub(crate) fn is_led(&self) -> bool {
        self.leading.load(Ordering::SeqCst)
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

    /// Tells the fallback thread there are calls nobody receives.
    pub(crate) fn signal_fallback(&self) {
        let mut work = self.fallback.0.lock().unwrap_or_else(|p| p.into_inner());
        *work = true;
        self.fallback.1.notify_one();
    }
}

/// `wait_until` for a transport with no connection to receive on (a test
/// transport, `Transport::detached`): completions come from elsewhere and
/// unpark the waiter.
fn wait_unled(done: &dyn Fn() -> bool, until: Option<Instant>) -> bool {
    loop {
        if done() {
            return true;
        }
        let mut park = FOLLOW_PARK_MAX;
        if let Some(u) = until {
            let left = u.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return done();
            }
            park = park.min(left);
        }
        std::thread::park_timeout(park);
    }
}

impl Shared {
    /// Waits until every call of `group` has completed.
    pub(crate) fn wait_group(&self, group: &Group) {
        self.wait_until(&|| group.is_done(), None);
    }

    /// Returns once `done()` holds (true) or `until` passed (false),
    /// receiving replies meanwhile whenever nobody else does. `done` is
    /// checked after every batch of replies: keep it cheap.
    pub(crate) fn wait_until(&self, done: &dyn Fn() -> bool, until: Option<Instant>) -> bool {
        if self.channels.is_empty() {
            return wait_unled(done, until);
        }
        loop {
            if done() {
                return true;
            }
            let passed = until.is_some_and(|u| Instant::now() >= u);
            if let Some(leading) = self.lead.try_acquire() {
                self.lead_loop(done, until, false);
                drop(leading);
                if done() {
                    return true;
                }
            } else if !passed {
                if self.lead.fallback_leading.load(Ordering::SeqCst) {
                    self.lead.want.store(true, Ordering::SeqCst);
                    self.lead.wake();
                }
                self.lead.follow(until, done);
                continue;
            }
            if passed || until.is_some_and(|u| Instant::now() >= u) {
                return done();
            }
        }
    }

    /// Receives on every connection until `done()`, `until`, shutdown, or
    /// (for the fallback thread) nothing outstanding or a caller wanting
    /// the lead. Always makes one pass over what is already buffered and
    /// queued, even when `until` has passed.
    fn lead_loop(&self, done: &dyn Fn() -> bool, until: Option<Instant>, fallback: bool) {
        let mut scratch = self.lead.scratch.lock().unwrap_or_else(|p| p.into_inner());
        let Scratch { fds, which, ready } = &mut *scratch;
        ready.clear();
        // First pass: hand out what is buffered, then poll (a socket that
        // holds what its low-water mark asks for is readable at once).
        ready.resize(self.channels.len(), false);
        let mut timed_out = false;
        loop {
            fds.clear();
            which.clear();
            fds.push(libc::pollfd {
                fd: self.lead.wake_fd(),
                events: libc::POLLIN,
                revents: 0,
            });
            let mut speculative = false;
            for (i, ch) in self.channels.iter().enumerate() {
                if let Some(spec) = self.service_channel(ch, ready[i], timed_out) {
                    speculative |= spec.0;
                    fds.push(libc::pollfd {
                        fd: spec.1,
                        events: libc::POLLIN,
                        revents: 0,
                    });
                    which.push(i);
                }
            }
            if done() || self.is_shutdown() {
                return;
            }
            if fallback && (self.lead.want.load(Ordering::SeqCst) || !self.anything_outstanding()) {
                return;
            }
            let mut timeout = if speculative {
                super::receive::SPECULATIVE_WAIT
            } else {
                LEAD_POLL_MAX
            };
            if let Some(u) = until {
                let left = u.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return;
                }
                timeout = timeout.min(left);
            }
            let ts = libc::timespec {
                tv_sec: timeout.as_secs() as libc::time_t,
                tv_nsec: timeout.subsec_nanos() as libc::c_long,
            };
            // SAFETY: `fds` is a live array of `fds.len()` pollfds; `ts`
            // outlives the call; no signal mask is passed.
            let rc = unsafe {
                libc::ppoll(
                    fds.as_mut_ptr(),
                    fds.len() as libc::nfds_t,
                    &ts,
                    std::ptr::null(),
                )
            };
            timed_out = rc == 0;
            ready.iter_mut().for_each(|r| *r = false);
            if rc > 0 {
                if fds[0].revents != 0 {
                    self.lead.drain_wake();
                }
                for (pfd, &i) in fds[1..].iter().zip(which.iter()) {
                    ready[i] = pfd.revents != 0;
                }
            }
        }
    }

    /// One leader pass over a connection: hand out what arrived, then arm
    /// the next wait. Returns whether that wait is speculative and the fd
    /// to poll, or None when the channel has no connection (or just lost
    /// it: then it is failed and its calls re-sent here).
    fn service_channel(
        &self,
        ch: &Channel,
        readable: bool,
        timed_out: bool,
    ) -> Option<(bool, libc::c_int)> {
        let mut guard = ch.rx.lock().unwrap_or_else(|p| p.into_inner());
        let rx = guard.as_mut()?;
        if timed_out {
            rx.wait_timed_out();
        }
        // After a timeout every socket is read: data below its low-water
        // mark does not make it readable.
        let result = rx.service(self, ch, readable || timed_out).and_then(|()| {
            rx.arm(ch).map_err(|e| Lost {
                why: format!("setting SO_RCVLOWAT failed: {e}"),
                call: None,
            })
        });
        match result {
            Ok(spec) => Some((spec, rx.fd())),
            Err(lost) => {
                let epoch = rx.epoch;
                *guard = None;
                drop(guard);
                if !self.is_shutdown() {
                    self.fail_from_lead(ch, epoch, lost);
                }
                None
            }
        }
    }

    /// The fallback receiver: leads when the maintenance thread finds
    /// calls nobody receives (see the module doc).
    pub(crate) fn fallback_loop(&self) {
        loop {
            {
                let (lock, cv) = &self.lead.fallback;
                let mut work = lock.lock().unwrap_or_else(|p| p.into_inner());
                while !*work && !self.is_shutdown() {
                    work = cv.wait(work).unwrap_or_else(|p| p.into_inner());
                }
                *work = false;
            }
            if self.is_shutdown() {
                return;
            }
            self.lead.fallback_leading.store(true, Ordering::SeqCst);
            let _flags = FallbackLeading { lead: &self.lead };
            if let Some(_leading) = self.lead.try_acquire() {
                self.lead_loop(&|| false, None, true);
            }
        }
    }

    /// Called by the maintenance thread every tick: wakes the fallback
    /// receiver when calls are outstanding and nobody has led for a tick.
    pub(crate) fn check_orphans(&self, tick: Duration) {
        if self.lead.is_led() || !self.anything_outstanding() {
            return;
        }
        let released = self.lead.released_ns.load(Ordering::Relaxed);
        if monotonic_ns().saturating_sub(released) >= tick.as_nanos() as u64 {
            self.lead.signal_fallback();
        }
    }

    fn anything_outstanding(&self) -> bool {
        self.channels
            .iter()
            .any(|c| c.outstanding_requests.load(Ordering::Relaxed) > 0)
    }
}
