//! The leader loop: a caller waiting for its calls receives for everyone
//! while it waits (see `io/lead.rs` for why), and the fallback thread does
//! the same for calls nobody waits for.
//!
//! One pass of the loop services every connection — hands out what is
//! buffered, reads what the socket holds, arms the next wait
//! (`SO_RCVLOWAT`) — then `ppoll`s them all plus the lead's wake-up eventfd.
//! A connection that broke is failed here (the engine re-issues its calls)
//! and its receive state dropped; a new one is picked up on the next pass.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::shared::Shared;
use crate::io::call::Group;
use crate::io::lead::{Leading, PollSet, FOLLOW_PARK_MAX};
use crate::io::receive::{Lost, SPECULATIVE_WAIT};

/// Longest a leader sleeps in `poll` before re-checking what it waits for
/// (completions by other threads: soft timeouts, shutdown).
const LEAD_POLL_MAX: Duration = Duration::from_millis(20);

/// Waits until every call of `group` has completed.
pub(crate) fn wait_group(sh: &Shared, group: &Group) {
    if group.is_log() && !sh.is_detached() {
        wait_on_lanes(sh, group);
    }
    wait_until(sh, &|| group.is_done(), None);
}

/// A log call's waiter (`directnfs_engine::class`), while someone else
/// leads: receives the log lanes itself instead of parking until the
/// leader, busy with bulk replies on the other connections, gets to its
/// reply and wakes it (a second scheduling hop on a loaded machine). The
/// lanes' receive state is shared with the leader through each channel's
/// `rx` lock (taken with `try_lock` here: whoever holds it receives).
/// Returns when the group is done, or leaves the rest to `wait_until` when
/// nobody leads or no lane is there.
fn wait_on_lanes(sh: &Shared, group: &Group) {
    let lanes: Vec<usize> = (0..sh.channels.len())
        .filter(|&i| sh.channels[i].lane)
        .collect();
    if lanes.is_empty() {
        return;
    }
    let mut fds: Vec<libc::pollfd> = Vec::with_capacity(lanes.len());
    let started = Instant::now();
    while !group.is_done() && !sh.is_shutdown() && started.elapsed() < LEAD_POLL_MAX {
        if !sh.lead.is_led() {
            return;
        }
        fds.clear();
        for &i in &lanes {
            let ch = &sh.channels[i];
            let Ok(mut guard) = ch.rx.try_lock() else {
                continue;
            };
            let Some(rx) = guard.as_mut() else {
                continue;
            };
            let mut replies = sh.replies(i, rx.epoch);
            let result = rx.service(&mut replies, true).and_then(|()| {
                rx.arm(crate::io::receive::Replies::due(&replies))
                    .map_err(|e| Lost {
                        why: format!("setting SO_RCVLOWAT failed: {e}"),
                        claim: None,
                    })
            });
            match result {
                Ok(_) => fds.push(libc::pollfd {
                    fd: rx.fd(),
                    events: libc::POLLIN,
                    revents: 0,
                }),
                // As the leader's pass would: the connection is failed
                // (its calls re-sent), then this waiter waits the usual way.
                Err(lost) => {
                    let epoch = rx.epoch;
                    *guard = None;
                    drop(guard);
                    if !sh.is_shutdown() {
                        sh.fail(i, epoch, &lost.why);
                    }
                    if let Some(claim) = lost.claim {
                        sh.receive_lost(claim);
                    }
                    return;
                }
            }
        }
        if group.is_done() || fds.is_empty() {
            return;
        }
        // A short wait: the leader may complete the call first (it also
        // polls the lanes), and that unparks nobody here.
        let ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 1_000_000,
        };
        // SAFETY: `fds` is a live array of `fds.len()` pollfds; `ts`
        // outlives the call; no signal mask is passed.
        unsafe {
            libc::ppoll(
                fds.as_mut_ptr(),
                fds.len() as libc::nfds_t,
                &ts,
                std::ptr::null(),
            )
        };
    }
}

/// Returns once `done()` holds (true) or `until` passed (false), receiving
/// replies meanwhile whenever nobody else does. `done` is checked after
/// every batch of replies: keep it cheap.
pub(crate) fn wait_until(sh: &Shared, done: &dyn Fn() -> bool, until: Option<Instant>) -> bool {
    if sh.is_detached() {
        return wait_unled(done, until);
    }
    let finished = wait_led(sh, done, until);
    // Calls still in flight that nobody receives (another thread's, not
    // waited for): a lazy transport needs its fallback receiver now.
    if !sh.threads.started() && !sh.lead.is_led() && sh.in_flight() > 0 {
        sh.start_threads();
    }
    finished
}

fn wait_led(sh: &Shared, done: &dyn Fn() -> bool, until: Option<Instant>) -> bool {
    loop {
        if done() {
            return true;
        }
        let passed = until.is_some_and(|u| Instant::now() >= u);
        if let Some(mut leading) = sh.lead.try_acquire() {
            lead_loop(sh, &mut leading, done, until, false);
            drop(leading);
            if done() {
                return true;
            }
        } else if !passed {
            if sh.lead.fallback_leading.load(Ordering::SeqCst) {
                sh.lead.want.store(true, Ordering::SeqCst);
                sh.lead.wake();
            }
            sh.lead.follow(until, done);
            continue;
        }
        if passed || until.is_some_and(|u| Instant::now() >= u) {
            return done();
        }
    }
}

/// Waits until some reply was handed out (or 5 ms), leading the receive if
/// nobody does: room for a call the engine refused.
pub(crate) fn wait_for_room(sh: &Shared) {
    let seen = sh.completions();
    let until = Instant::now() + Duration::from_millis(5);
    wait_until(sh, &|| sh.completions() != seen, Some(until));
}

/// The fallback receiver: leads when the maintenance thread finds calls
/// nobody receives (see `io/lead.rs`).
pub(crate) fn fallback_loop(sh: &Shared) {
    loop {
        sh.lead.wait_for_fallback_work(&|| sh.is_shutdown());
        if sh.is_shutdown() {
            return;
        }
        let (_flags, leading) = sh.lead.try_acquire_fallback();
        if let Some(mut leading) = leading {
            lead_loop(sh, &mut leading, &|| false, None, true);
        }
    }
}

/// Receives on every connection until `done()`, `until`, shutdown, or (for
/// the fallback thread) nothing outstanding or a caller wanting the lead.
/// Always makes one pass over what is already buffered and queued, even
/// when `until` has passed.
fn lead_loop(
    sh: &Shared,
    leading: &mut Leading<'_>,
    done: &dyn Fn() -> bool,
    until: Option<Instant>,
    fallback: bool,
) {
    let PollSet { fds, which, ready } = &mut *leading.poll_set;
    // A lazy transport starts its threads once a caller has waited a tick
    // (timeouts are the maintenance thread's: threads.rs).
    let entered = Instant::now();
    ready.clear();
    // First pass: hand out what is buffered, then poll (a socket that
    // holds what its low-water mark asks for is readable at once).
    ready.resize(sh.channels.len(), false);
    let mut timed_out = false;
    loop {
        fds.clear();
        which.clear();
        fds.push(libc::pollfd {
            fd: sh.lead.wake_fd(),
            events: libc::POLLIN,
            revents: 0,
        });
        let mut speculative = false;
        for (i, &readable) in ready.iter().enumerate() {
            if let Some((spec, fd)) = service_channel(sh, i, readable, timed_out) {
                speculative |= spec;
                fds.push(libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                });
                which.push(i);
            }
        }
        if done() || sh.is_shutdown() {
            return;
        }
        if fallback && (sh.lead.want.load(Ordering::SeqCst) || sh.in_flight() == 0) {
            return;
        }
        let mut timeout = if speculative {
            SPECULATIVE_WAIT
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
        if !sh.threads.started() {
            let waited = entered.elapsed();
            if waited >= sh.threads.tick {
                sh.start_threads();
            } else {
                timeout = timeout.min(sh.threads.tick - waited);
            }
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
                sh.lead.drain_wake();
            }
            for (pfd, &i) in fds[1..].iter().zip(which.iter()) {
                ready[i] = pfd.revents != 0;
            }
        }
    }
}

/// One leader pass over a connection: hand out what arrived, then arm the
/// next wait. Returns whether that wait is speculative and the fd to poll,
/// or None when the channel has no connection (or just lost it: then it is
/// failed and its calls re-sent here).
fn service_channel(
    sh: &Shared,
    channel: usize,
    readable: bool,
    timed_out: bool,
) -> Option<(bool, libc::c_int)> {
    let ch = &sh.channels[channel];
    let mut guard = ch.rx.lock().unwrap_or_else(|p| p.into_inner());
    let rx = guard.as_mut()?;
    if timed_out {
        rx.wait_timed_out();
    }
    let mut replies = sh.replies(channel, rx.epoch);
    // After a timeout every socket is read: data below its low-water mark
    // does not make it readable.
    let result = rx
        .service(&mut replies, readable || timed_out)
        .and_then(|()| {
            rx.arm(crate::io::receive::Replies::due(&replies))
                .map_err(|e| Lost {
                    why: format!("setting SO_RCVLOWAT failed: {e}"),
                    claim: None,
                })
        });
    match result {
        Ok(spec) => Some((spec, rx.fd())),
        Err(lost) => {
            let epoch = rx.epoch;
            *guard = None;
            drop(guard);
            if !sh.is_shutdown() {
                sh.fail(channel, epoch, &lost.why);
            }
            // Re-issued, or completed with `Shutdown`: never left behind.
            if let Some(claim) = lost.claim {
                sh.receive_lost(claim);
            }
            None
        }
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
