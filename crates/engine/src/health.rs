//! Health of one channel (a TCP connection) as a small state machine.
//!
//! ```text
//!   Idle --first tick--+
//!                      v
//!   Connecting --connected--> Up --failure--> Down{failures, retry_at}
//!       ^                                         |
//!       +------------- retry_at reached ----------+
//! ```
//! A channel carries new requests only when `Up`. After a failure it waits
//! `Backoff::delay(failures)` before the next connection attempt; a
//! successful connect (and NULL probe, done by the driver) resets the count.

use crate::retry::Backoff;

/// State of a channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    /// Not connected yet, and not failed: connected at the first tick of
    /// the maintenance thread (a forked child's extra connections, which a
    /// process that makes a few calls and exits never opens).
    Idle,
    /// A connection attempt is under way.
    Connecting,
    /// Connected and answering.
    Up,
    /// Failed; the next attempt is due at `retry_at_ns`.
    Down {
        /// Consecutive failures so far.
        failures: u32,
        /// When to try again.
        retry_at_ns: u64,
    },
}

impl Health {
    /// Short name for statistics.
    pub fn name(&self) -> &'static str {
        match self {
            Health::Idle => "idle",
            Health::Connecting => "connecting",
            Health::Up => "up",
            Health::Down { .. } => "down",
        }
    }

    /// True when the channel may carry new requests.
    pub fn is_up(&self) -> bool {
        matches!(self, Health::Up)
    }

    /// The connection (or the probe) worked.
    pub fn on_connected(&mut self) {
        *self = Health::Up;
    }

    /// The connection broke, a connect failed, or a request timed out.
    pub fn on_failure(&mut self, now_ns: u64, backoff: &Backoff) {
        let failures = match *self {
            Health::Down { failures, .. } => failures + 1,
            // A connection that was up and broke gets a quick first retry.
            Health::Up => 1,
            Health::Idle | Health::Connecting => match self.previous_failures() {
                0 => 1,
                n => n + 1,
            },
        };
        let delay = backoff.delay(failures).as_nanos() as u64;
        *self = Health::Down {
            failures,
            retry_at_ns: now_ns.saturating_add(delay),
        };
    }

    fn previous_failures(&self) -> u32 {
        match *self {
            Health::Down { failures, .. } => failures,
            _ => 0,
        }
    }

    /// If a reconnection attempt is due (or an idle channel's first), moves
    /// to `Connecting` and returns the number of failures so far.
    pub fn start_reconnect_if_due(&mut self, now_ns: u64) -> Option<u32> {
        match *self {
            Health::Idle => {
                *self = Health::Connecting;
                Some(0)
            }
            Health::Down {
                failures,
                retry_at_ns,
            } if retry_at_ns <= now_ns => {
                *self = Health::Connecting;
                Some(failures)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_channel_waits_for_backoff_before_reconnecting() {
        let b = Backoff::default();
        let mut h = Health::Up;
        h.on_failure(1_000, &b);
        assert!(!h.is_up());
        assert_eq!(h.start_reconnect_if_due(1_000), None);
        assert_eq!(h.start_reconnect_if_due(1_000 + 100_000_000), Some(1));
        assert_eq!(h, Health::Connecting);
        h.on_connected();
        assert!(h.is_up());
    }

    #[test]
    fn an_idle_channel_connects_at_the_first_tick() {
        let mut h = Health::Idle;
        assert!(!h.is_up());
        assert_eq!(h.name(), "idle");
        assert_eq!(h.start_reconnect_if_due(0), Some(0));
        assert_eq!(h, Health::Connecting);
        assert_eq!(h.start_reconnect_if_due(u64::MAX), None);
    }

    #[test]
    fn repeated_failures_back_off_longer() {
        let b = Backoff::default();
        let mut h = Health::Down {
            failures: 3,
            retry_at_ns: 0,
        };
        h.on_failure(0, &b);
        assert_eq!(
            h,
            Health::Down {
                failures: 4,
                retry_at_ns: 800_000_000
            }
        );
    }
}
