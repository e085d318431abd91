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
//!   [`HedgePolicy`]. Before a path has [`FIRST`] samples the delay is
//!   `max`; from then on its p95 is that of the samples it has, recomputed
//!   every [`FIRST`] (so a new mount hedges, and steers, after a few READs
//!   of each path, not [`WINDOW`]). The lowest p95 and not the READ's own path's: a path that is
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
//! * **Steering**: a path whose recent READ p95 is more than
//!   [`STEER_FACTOR`] times the best path's, and above the policy's `min`,
//!   is *slow*: first copies of hedgeable requests avoid its channels while
//!   another path has one up. One in [`PROBE_EVERY`] such requests is also
//!   sent at once on a slow path (a probe: a second copy, twinned like a
//!   hedge, so the caller waits for neither; outside the budget, counted
//!   as a hedge); a READ of a slow path answered
//!   within the bound (by a probe, or the late reply of a copy that lost to
//!   its hedge, which is still timed) restores the path at once: its window
//!   is refilled with that latency. A copy that lost to its hedge is timed
//!   when its reply comes (each channel remembers the last [`GHOSTS`] it
//!   dropped); without that a slow path would only be timed by the replies
//!   it wins, and look fast.
//! * **Budget**: hedges are at most [`BUDGET_PERCENT`]% of the hedgeable
//!   requests sent, plus a burst of [`BUDGET_BURST`] (a token bucket: each
//!   request earns a tenth of a hedge, each hedge spends one). A hedge due
//!   with the bucket empty is not sent (counted by
//!   [`crate::Engine::hedges_over_budget`]): on a server slow for every
//!   path, hedges cannot add more than a tenth to its load.

use std::time::Duration;

/// Latencies each path keeps for its p95.
pub const WINDOW: usize = 32;

/// Samples a path needs before its p95 counts; its p95 is recomputed every
/// this many.
pub const FIRST: usize = WINDOW / 4;

/// A path is slow when its p95 is more than this many times the best
/// path's (see the module doc).
pub const STEER_FACTOR: u64 = 4;

/// One hedgeable request in this many, while a path is slow, sends a
/// probe copy there.
pub const PROBE_EVERY: u64 = 64;

/// Hedges allowed per hundred hedgeable requests sent.
pub const BUDGET_PERCENT: u64 = 10;

/// Hedges allowed at once beyond the budget's rate (the bucket's size).
pub const BUDGET_BURST: u64 = 8;

/// Dropped copies each channel remembers, to time their late replies.
pub const GHOSTS: usize = 32;

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
    /// The lowest p95 of the paths.
    best: Option<u64>,
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
    /// Records one READ latency of `path`. A path that is slow
    /// ([`slow`](Self::slow)) and answered within the bound is restored:
    /// its whole window becomes `ns`.
    pub fn record(&mut self, path: usize, ns: u64, min_ns: u64) {
        if self.paths.len() <= path {
            self.paths.resize_with(path + 1, Window::default);
        }
        if self.slow(path, min_ns) && !self.beyond(ns, min_ns) {
            let w = &mut self.paths[path];
            w.samples = [ns; WINDOW];
            w.next = 0;
            w.filled = true;
            w.p95 = Some(ns);
            self.update_best();
            return;
        }
        let w = &mut self.paths[path];
        w.samples[w.next] = ns;
        w.next += 1;
        if w.next == WINDOW {
            w.next = 0;
            w.filled = true;
        }
        let n = if w.filled { WINDOW } else { w.next };
        if n >= FIRST && w.next % FIRST == 0 {
            let mut sorted = w.samples;
            let sorted = &mut sorted[..n];
            sorted.sort_unstable();
            // The 95th percentile by nearest rank (of 8 samples: the
            // largest).
            w.p95 = Some(sorted[(n * 95).div_ceil(100) - 1]);
            self.update_best();
        }
    }

    fn update_best(&mut self) {
        self.best = self.paths.iter().filter_map(|w| w.p95).min();
    }

    /// A latency beyond the steering bound: more than [`STEER_FACTOR`]
    /// times the best p95 and more than `min_ns`.
    fn beyond(&self, ns: u64, min_ns: u64) -> bool {
        self.best
            .is_some_and(|b| ns > b.saturating_mul(STEER_FACTOR) && ns > min_ns)
    }

    /// Whether `path` is slow: its p95 is beyond the steering bound, so
    /// first copies avoid it (see the module doc).
    pub fn slow(&self, path: usize, min_ns: u64) -> bool {
        self.paths
            .get(path)
            .and_then(|w| w.p95)
            .is_some_and(|p| self.beyond(p, min_ns))
    }

    /// Whether some path is slow.
    pub fn any_slow(&self, min_ns: u64) -> bool {
        (0..self.paths.len()).any(|p| self.slow(p, min_ns))
    }

    /// The hedge delay in nanoseconds: the lowest p95 of the paths,
    /// clamped to the policy's bounds; `max` until some path has a full
    /// window.
    pub fn delay(&self, policy: &HedgePolicy) -> u64 {
        let min = nanos(policy.min);
        let max = nanos(policy.max).max(min);
        self.best.map_or(max, |p| p.clamp(min, max))
    }
}

/// The hedge budget, a token bucket in hundredths of a hedge (see the
/// module doc).
#[derive(Debug)]
pub struct Budget {
    credit: u64,
}

impl Default for Budget {
    fn default() -> Self {
        Self {
            credit: BUDGET_BURST * 100,
        }
    }
}

impl Budget {
    /// A hedgeable request was sent: it earns [`BUDGET_PERCENT`]
    /// hundredths of a hedge.
    pub fn on_request(&mut self) {
        self.credit = (self.credit + BUDGET_PERCENT).min(BUDGET_BURST * 100);
    }

    /// Whether a hedge may be sent now.
    pub fn allows(&self) -> bool {
        self.credit >= 100
    }

    /// A hedge was sent.
    pub fn spend(&mut self) {
        self.credit = self.credit.saturating_sub(100);
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
    fn the_delay_is_the_maximum_until_a_path_has_its_first_samples() {
        let mut l = PathLatencies::default();
        assert_eq!(l.delay(&policy()), 200 * MS);
        for _ in 0..FIRST - 1 {
            l.record(0, 5 * MS, 0);
        }
        assert_eq!(l.delay(&policy()), 200 * MS);
        l.record(0, 5 * MS, 0);
        assert_eq!(l.delay(&policy()), 5 * MS);
        // A partial window's p95 is of the samples it has: 16 samples, one
        // of 9 ms, is its 16th by nearest rank.
        for i in 0..FIRST {
            l.record(0, if i == 3 { 9 * MS } else { 4 * MS }, 0);
        }
        assert_eq!(l.delay(&policy()), 9 * MS);
    }

    #[test]
    fn the_delay_follows_the_fastest_paths_p95_within_bounds() {
        let mut l = PathLatencies::default();
        for i in 0..WINDOW as u64 {
            // Path 0: 50 ms throughout; path 1: 3 ms, one outlier at 90 ms.
            l.record(0, 50 * MS, 0);
            l.record(1, if i == 7 { 90 * MS } else { 3 * MS }, 0);
        }
        assert_eq!(l.delay(&policy()), 3 * MS);
        let fast = PathLatencies {
            paths: vec![Window {
                samples: [100_000; WINDOW],
                next: 0,
                filled: true,
                p95: Some(100_000),
            }],
            best: Some(100_000),
        };
        assert_eq!(fast.delay(&policy()), 2 * MS);
        let mut slow = PathLatencies::default();
        for _ in 0..WINDOW {
            slow.record(0, 900 * MS, 0);
        }
        assert_eq!(slow.delay(&policy()), 200 * MS);
    }

    #[test]
    fn a_path_is_slow_only_beyond_both_the_factor_and_the_minimum() {
        let mut l = PathLatencies::default();
        for _ in 0..WINDOW {
            l.record(0, 100_000, 2 * MS);
            // 15x the best, but under the 2 ms minimum: not slow.
            l.record(1, 1_500_000, 2 * MS);
        }
        assert!(!l.slow(1, 2 * MS) && !l.any_slow(2 * MS));
        // Beyond both: slow.
        for _ in 0..WINDOW {
            l.record(1, 5 * MS, 2 * MS);
        }
        assert!(l.slow(1, 2 * MS) && !l.slow(0, 2 * MS));
        // 4x the best exactly is not beyond it.
        let mut m = PathLatencies::default();
        for _ in 0..WINDOW {
            m.record(0, MS, 0);
            m.record(1, 4 * MS, 0);
        }
        assert!(!m.slow(1, 0));
    }

    #[test]
    fn one_answer_in_time_restores_a_slow_path() {
        let mut l = PathLatencies::default();
        for _ in 0..WINDOW {
            l.record(0, MS, 0);
            l.record(1, 50 * MS, 0);
        }
        assert!(l.slow(1, 0));
        // A slow answer keeps it slow; one within 4x the best restores it.
        l.record(1, 60 * MS, 0);
        assert!(l.slow(1, 0));
        l.record(1, 2 * MS, 0);
        assert!(!l.slow(1, 0));
        assert_eq!(l.delay(&policy()), 2 * MS);
    }

    #[test]
    fn the_budget_allows_a_burst_then_a_tenth_of_the_requests() {
        let mut b = Budget::default();
        let mut sent = 0;
        for _ in 0..1000 {
            b.on_request();
            if b.allows() {
                b.spend();
                sent += 1;
            }
        }
        // The full bucket wastes the first request's tenth.
        let most = BUDGET_BURST + 1000 * BUDGET_PERCENT / 100;
        assert!((most - 1..=most).contains(&sent), "{sent}");
    }
}
