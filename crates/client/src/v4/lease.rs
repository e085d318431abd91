//! The lease of an idle client (RFC 8881 §8.3): every SEQUENCE renews
//! it, so a client that sends nothing for a quarter of the lease sends a
//! SEQUENCE-only COMPOUND from its renewal thread. This module keeps the
//! time of the last COMPOUND, decides when a renewal is due and runs the
//! thread; what a renewal sends is the session's (`Session::renew`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How often the renewal thread looks: a quarter of the lease, at least
/// a second.
pub(super) fn renewal_period(lease: Duration) -> Duration {
    (lease / 4).max(Duration::from_secs(1))
}

/// The renewal thread's wait before its next look: the first comes after
/// at most a second (a forked child's statistics endpoint starts there,
/// `publish::start_deferred`), the others after a `period`.
fn tick_wait(first: bool, period: Duration) -> Duration {
    if first {
        period.min(Duration::from_secs(1))
    } else {
        period
    }
}

/// When the session was last used, and whether renewal is paused (for
/// tests: an idle client's lease can then expire).
#[derive(Debug)]
pub(super) struct Idle {
    /// Start of the session clock, and the last COMPOUND's time on it
    /// (milliseconds).
    epoch: Instant,
    last_used_ms: AtomicU64,
    paused: AtomicBool,
}

impl Idle {
    pub(super) fn new() -> Self {
        Self {
            epoch: Instant::now(),
            last_used_ms: AtomicU64::new(0),
            paused: AtomicBool::new(false),
        }
    }

    /// A COMPOUND's SEQUENCE succeeded now: the lease is renewed.
    pub(super) fn used(&self) {
        self.last_used_ms
            .store(self.epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    /// Stops or resumes the renewal.
    pub(super) fn pause(&self, paused: bool) {
        self.paused.store(paused, Ordering::Relaxed);
    }

    /// True when the renewal thread, looking every `period`, is to renew
    /// the lease now.
    pub(super) fn renewal_due(&self, period: Duration) -> bool {
        let now_ms = self.epoch.elapsed().as_millis() as u64;
        renewal_due(
            now_ms,
            self.last_used_ms.load(Ordering::Relaxed),
            period,
            self.paused.load(Ordering::Relaxed),
        )
    }
}

/// True when a client last used at `last_used_ms`, at `now_ms` on the
/// same clock, has been idle for a `period` and renewal is not paused.
fn renewal_due(now_ms: u64, last_used_ms: u64, period: Duration, paused: bool) -> bool {
    let idle = Duration::from_millis(now_ms.saturating_sub(last_used_ms));
    idle >= period && !paused
}

/// Starts the thread `dnfs-v41-renew`, which calls `tick` every `period`
/// (the first time after at most a second) until `tick` returns false or
/// the returned sender is dropped.
pub(super) fn start(
    period: Duration,
    mut tick: impl FnMut() -> bool + Send + 'static,
) -> mpsc::Sender<()> {
    let (tx, rx) = mpsc::channel::<()>();
    let mut first = true;
    let spawned = crate::signals::spawn("dnfs-v41-renew", move || loop {
        match rx.recv_timeout(tick_wait(first, period)) {
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            _ => return,
        }
        if std::mem::take(&mut first) {
            // A no-op for a client that published at once.
            crate::publish::start_deferred();
        }
        if !tick() {
            return;
        }
    });
    if let Err(e) = spawned {
        tracing::warn!("NFSv4.1: no lease renewal thread ({e}): an idle client may lose its lease");
    }
    tx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renewal_looks_every_quarter_of_the_lease_and_at_least_every_second() {
        assert_eq!(
            renewal_period(Duration::from_secs(60)),
            Duration::from_secs(15)
        );
        assert_eq!(
            renewal_period(Duration::from_secs(2)),
            Duration::from_secs(1)
        );
    }

    #[test]
    fn the_first_look_comes_within_a_second() {
        let period = Duration::from_secs(15);
        assert_eq!(tick_wait(true, period), Duration::from_secs(1));
        assert_eq!(tick_wait(false, period), period);
        let short = Duration::from_millis(1500);
        assert_eq!(
            tick_wait(true, Duration::from_millis(500)),
            Duration::from_millis(500)
        );
        assert_eq!(tick_wait(false, short), short);
    }

    #[test]
    fn a_lease_is_renewed_only_after_a_period_idle_and_not_while_paused() {
        let period = Duration::from_secs(15);
        assert!(!renewal_due(20_000, 10_000, period, false), "idle 10 s");
        assert!(renewal_due(25_000, 10_000, period, false), "idle 15 s");
        assert!(renewal_due(40_000, 0, period, false), "never used");
        assert!(!renewal_due(40_000, 0, period, true), "paused");
        // A use stamped after the look (a racing COMPOUND) is not idle.
        assert!(!renewal_due(10_000, 10_005, period, false));
    }

    #[test]
    fn a_used_session_is_not_due_for_renewal() {
        let idle = Idle::new();
        assert!(idle.renewal_due(Duration::ZERO));
        idle.used();
        assert!(!idle.renewal_due(Duration::from_secs(3600)));
        idle.pause(true);
        assert!(!idle.renewal_due(Duration::ZERO));
        idle.pause(false);
        assert!(idle.renewal_due(Duration::ZERO));
    }
}
