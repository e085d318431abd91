//! What to do when a request has no reply in time, and how long to wait
//! before trying to reconnect a dead channel.
//!
//! Follows NFS mount semantics: `timeo` is the per-attempt timeout,
//! `retrans` the number of retransmissions, `hard` retries forever (the
//! default: a database would rather stall than see a spurious I/O error),
//! `soft` gives up after `retrans` retransmissions.

use std::time::Duration;

/// Retransmission policy for one client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// How long one attempt may wait for its reply.
    pub timeo: Duration,
    /// Retransmissions before a soft mount gives up.
    pub retrans: u32,
    /// Retry forever.
    pub hard: bool,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            timeo: Duration::from_secs(10),
            retrans: 3,
            hard: true,
        }
    }
}

/// The decision after an attempt failed (timeout, dead connection).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterFailure {
    /// Send it again (on another channel when there is one).
    Retry,
    /// Report a timeout to the caller.
    GiveUp,
}

impl RetryPolicy {
    /// Decides after attempt number `attempts` (1 for the first send) failed.
    pub fn after_failure(&self, attempts: u32) -> AfterFailure {
        if self.hard || attempts <= self.retrans {
            AfterFailure::Retry
        } else {
            AfterFailure::GiveUp
        }
    }

    /// For a soft mount, how long a request may wait for *any* channel
    /// before it fails (`timeo` x (`retrans` + 1)); `None` when hard.
    pub fn soft_deadline(&self) -> Option<Duration> {
        (!self.hard).then(|| self.timeo.saturating_mul(self.retrans.saturating_add(1)))
    }
}

/// Exponential backoff between reconnection attempts, capped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// Delay after the first failure.
    pub initial: Duration,
    /// Upper bound.
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        // Short first step: a cut cable or a restarting server usually comes
        // back within seconds, and every second of delay is a stalled DB.
        Self {
            initial: Duration::from_millis(100),
            max: Duration::from_secs(5),
        }
    }
}

impl Backoff {
    /// Delay before attempt `failures + 1`, after `failures` consecutive failures.
    pub fn delay(&self, failures: u32) -> Duration {
        let shift = failures.saturating_sub(1).min(20);
        self.initial.saturating_mul(1u32 << shift).min(self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hard_mount_retries_forever() {
        let p = RetryPolicy::default();
        assert_eq!(p.after_failure(1_000_000), AfterFailure::Retry);
        assert_eq!(p.soft_deadline(), None);
    }

    #[test]
    fn soft_mount_gives_up_after_retrans_retransmissions() {
        let p = RetryPolicy {
            hard: false,
            retrans: 2,
            timeo: Duration::from_secs(1),
        };
        assert_eq!(p.after_failure(1), AfterFailure::Retry);
        assert_eq!(p.after_failure(2), AfterFailure::Retry);
        assert_eq!(p.after_failure(3), AfterFailure::GiveUp);
        assert_eq!(p.soft_deadline(), Some(Duration::from_secs(3)));
    }

    #[test]
    fn backoff_doubles_up_to_its_cap() {
        let b = Backoff::default();
        assert_eq!(b.delay(1), Duration::from_millis(100));
        assert_eq!(b.delay(2), Duration::from_millis(200));
        assert_eq!(b.delay(4), Duration::from_millis(800));
        assert_eq!(b.delay(60), Duration::from_secs(5));
    }
}
