//! Hedged reads: when a READ has waited longer than the network paths
//! usually take, the engine sends it a second time on another channel and
//! hands the caller whichever reply comes first.
//!
//! * **Which requests**: only those whose [`crate::Request::hedgeable`]
//!   says so (the driver's NFSv3 READs). Writes, COMMIT and everything
//!   that changes the server are never hedged, nor is anything on NFSv4.1
//!   (a second copy of a COMPOUND would reuse its session slot and
//!   sequence id).
//! * **When**: once a READ has been outstanding for the *hedge delay*: the
//!   95th percentile of the recent READ latencies of the fastest path
//!   (the lowest of the paths' p95s; each path keeps its last
//!   [`WINDOW`] READ latencies), clamped to `[min, max]` of the
//!   [`HedgePolicy`]. Before a path has [`WINDOW`] samples the delay is
//!   `max`. The lowest p95 and not the READ's own path's: a path that is
//!   uniformly slow has a slow p95, and its READs are exactly the ones to
//!   hedge.
//! * **Where**: the least-loaded other channel that is up, a channel of
//!   another path first (the channel choice avoids the first copy's); with
//!   one channel up, no hedge. A request is hedged at most once.
//! * **First reply wins**: both copies sit in their channels' in-flight
//!   tables, each knowing the other's (channel, XID). The reply that
//!   matches first takes its copy *and removes the other from its table*,
//!   under the engine's lock, before the driver sees it; the other copy's
//!   reply then matches nothing and is dropped like any stale reply, so it
//!   never reaches the caller's buffer. A copy lost to a failed channel (or
//!   a JUKEBOX answer) while the other is still in flight is simply
//!   dropped: the other carries the request on.

use std::time::Duration;

/// Latencies each path keeps for its p95.
pub const WINDOW: usize = 32;

/// When and whether to hedge (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HedgePolicy {
    /// The shortest hedge delay.
    pub min: Duration,
    /// The longest hedge delay (and the delay before the paths have
    /// enough samples).
    pub max: Duration,
}

/// The recent READ latencies of each path, and the hedge delay they give.
#[derive(Debug, Default)]
pub struct PathLatencies {
    paths: Vec<Window>,
}

#[derive(Debug, Clone, Default)]
struct Window {
    samples: [u64; WINDOW],
    next: usize,
    filled: bool,
    /// The p95 of `samples`, recomputed each time the window wraps.
    p95: Option<u64>,
}

impl PathLatencies {
    /// Records one READ latency of `path`.
    pub fn record(&mut self, path: usize, ns: u64) {
        if self.paths.len() <= path {
            self.paths.resize_with(path + 1, Window::default);
        }
        let w = &mut self.paths[path];
        w.samples[w.next] = ns;
        w.next += 1;
        if w.next == WINDOW {
            w.next = 0;
            w.filled = true;
        }
        if w.filled && w.next % (WINDOW / 4) == 0 {
            let mut sorted = w.samples;
            sorted.sort_unstable();
            // The 95th percentile by nearest rank.
            w.p95 = Some(sorted[(WINDOW * 95).div_ceil(100) - 1]);
        }
    }

    /// The hedge delay in nanoseconds: the lowest p95 of the paths,
    /// clamped to the policy's bounds; `max` until some path has a full
    /// window.
    pub fn delay(&self, policy: &HedgePolicy) -> u64 {
        let min = nanos(policy.min);
        let max = nanos(policy.max).max(min);
        self.paths
            .iter()
            .filter_map(|w| w.p95)
            .min()
            .map_or(max, |p| p.clamp(min, max))
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn policy() -> HedgePolicy {
        HedgePolicy {
            min: Duration::from_millis(2),
            max: Duration::from_millis(200),
        }
    }

    #[test]
    fn the_delay_is_the_maximum_until_a_path_has_a_full_window() {
        let mut l = PathLatencies::default();
        assert_eq!(l.delay(&policy()), 200 * MS);
        for _ in 0..WINDOW - 1 {
            l.record(0, 5 * MS);
        }
        assert_eq!(l.delay(&policy()), 200 * MS);
        l.record(0, 5 * MS);
        assert_eq!(l.delay(&policy()), 5 * MS);
    }

    #[test]
    fn the_delay_follows_the_fastest_paths_p95_within_bounds() {
        let mut l = PathLatencies::default();
        for i in 0..WINDOW as u64 {
            // Path 0: 50 ms throughout; path 1: 3 ms, one outlier at 90 ms.
            l.record(0, 50 * MS);
            l.record(1, if i == 7 { 90 * MS } else { 3 * MS });
        }
        assert_eq!(l.delay(&policy()), 3 * MS);
        let fast = PathLatencies {
            paths: vec![Window {
                samples: [100_000; WINDOW],
                next: 0,
                filled: true,
                p95: Some(100_000),
            }],
        };
        assert_eq!(fast.delay(&policy()), 2 * MS);
        let mut slow = PathLatencies::default();
        for _ in 0..WINDOW {
            slow.record(0, 900 * MS);
        }
        assert_eq!(slow.delay(&policy()), 200 * MS);
    }
}
