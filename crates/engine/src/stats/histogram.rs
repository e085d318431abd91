//! Lock-free log-scale latency histogram.
//!
//! The layout is HDR-like: every power of two is split into 16 linear
//! sub-buckets, so a bucket is at most 1/16 of its lower edge wide and a
//! percentile (reported as the middle of its bucket) is within ~3.2% of the
//! exact sample value. Values below 32 ns get one bucket each. The top bucket
//! ends at 2^37 ns (~137 s); anything larger is counted there, and the exact
//! maximum is kept separately.
//!
//! [`Histogram::record`] is the hot-path call made once per I/O: a bucket
//! `fetch_add`, a sum `fetch_add` and two relaxed loads. `fetch_min` /
//! `fetch_max` run only when a sample is a new extreme, so in steady state the
//! call never loops. No allocation, no lock. The count is not kept in its own
//! atomic: a snapshot adds the buckets up instead, which saves a contended
//! cache line on every record.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Linear sub-buckets per power of two, as a bit count (16 sub-buckets).
const SUB_BITS: u32 = 4;
const SUB: usize = 1 << SUB_BITS;
/// Highest most-significant-bit position with its own buckets: 2^37 ns ≈ 137 s.
const MAX_MSB: u32 = 36;
/// Number of buckets: `SUB` unit-wide buckets below 16, then `SUB` per power
/// of two from 2^4 up to 2^MAX_MSB.
pub const BUCKETS: usize = (MAX_MSB - SUB_BITS + 2) as usize * SUB;

/// Bucket index of a value in nanoseconds.
#[inline]
fn bucket_index(v: u64) -> usize {
    // `v | SUB` makes values below 16 use shift 0, where `v >> 0 == v` is
    // already the right index; above that, index = shift * 16 + top 5 bits.
    let msb = 63 - (v | SUB as u64).leading_zeros();
    let shift = msb - SUB_BITS;
    let idx = ((shift as usize) << SUB_BITS) + (v >> shift) as usize;
    idx.min(BUCKETS - 1)
}

/// `[lower, upper)` edges of a bucket in nanoseconds (nominal: the last
/// bucket also holds every larger value).
#[inline]
fn bucket_bounds(idx: usize) -> (u64, u64) {
    if idx < SUB {
        return (idx as u64, idx as u64 + 1);
    }
    let shift = (idx >> SUB_BITS) - 1;
    let mantissa = (SUB + (idx & (SUB - 1))) as u64;
    let lower = mantissa << shift;
    (lower, lower + (1u64 << shift))
}

/// A concurrent latency histogram in nanoseconds. See the module doc.
pub struct Histogram {
    buckets: [AtomicU64; BUCKETS],
    sum: AtomicU64,
    min: AtomicU64,
    max: AtomicU64,
}

impl Histogram {
    /// An empty histogram. `const`, and only a zeroed ~4 KiB block.
    pub const fn new() -> Self {
        Histogram {
            buckets: [const { AtomicU64::new(0) }; BUCKETS],
            sum: AtomicU64::new(0),
            min: AtomicU64::new(u64::MAX),
            max: AtomicU64::new(0),
        }
    }

    /// Records one sample of `ns` nanoseconds. Wait-free in steady state.
    #[inline]
    pub fn record(&self, ns: u64) {
        self.buckets[bucket_index(ns)].fetch_add(1, Relaxed);
        self.sum.fetch_add(ns, Relaxed);
        // Plain loads first: the read-modify-write (a CAS loop on x86) only
        // runs for a new extreme, which is rare after warm-up.
        if ns < self.min.load(Relaxed) {
            self.min.fetch_min(ns, Relaxed);
        }
        if ns > self.max.load(Relaxed) {
            self.max.fetch_max(ns, Relaxed);
        }
    }

    /// Records one sample given as a `Duration` (saturating at `u64::MAX` ns).
    #[inline]
    pub fn record_duration(&self, d: Duration) {
        self.record(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    }

    /// A point-in-time copy. Concurrent records may be partly visible (e.g. in
    /// the buckets but not yet in the sum); each field is individually exact.
    pub fn snapshot(&self) -> HistogramSnapshot {
        let counts: Vec<u64> = self.buckets.iter().map(|b| b.load(Relaxed)).collect();
        HistogramSnapshot::from_parts(
            counts,
            self.sum.load(Relaxed),
            self.min.load(Relaxed),
            self.max.load(Relaxed),
        )
    }
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Histogram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.snapshot();
        f.debug_struct("Histogram")
            .field("count", &s.count())
            .field("sum_ns", &s.sum())
            .field("min_ns", &s.min())
            .field("max_ns", &s.max())
            .finish()
    }
}

/// One non-empty bucket of a [`HistogramSnapshot`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HistogramBucket {
    /// Smallest value the bucket holds, in nanoseconds.
    pub lower_ns: u64,
    /// Every sample in the bucket is below this (for the last, overflow
    /// bucket: at most this, the observed maximum).
    pub upper_ns: u64,
    /// Samples in the bucket.
    pub count: u64,
}

/// An immutable copy of a [`Histogram`], mergeable with others (across
/// threads, channels or runs). All values are in nanoseconds.
#[derive(Clone, PartialEq, Eq)]
pub struct HistogramSnapshot {
    counts: Vec<u64>,
    count: u64,
    sum: u64,
    min: u64,
    max: u64,
}

impl HistogramSnapshot {
    /// An empty snapshot (the identity for [`merge`](Self::merge)).
    pub fn empty() -> Self {
        HistogramSnapshot {
            counts: vec![0; BUCKETS],
            count: 0,
            sum: 0,
            min: 0,
            max: 0,
        }
    }

    fn from_parts(counts: Vec<u64>, sum: u64, min: u64, max: u64) -> Self {
        let count = counts.iter().fold(0u64, |a, &c| a.wrapping_add(c));
        let first = counts.iter().position(|&c| c != 0);
        let last = counts.iter().rposition(|&c| c != 0);
        let (Some(first), Some(last)) = (first, last) else {
            return Self::empty();
        };
        // A racing record may have reached its bucket but not min/max yet;
        // keep min/max consistent with the buckets (a no-op when they are).
        // (The last bucket also holds every value beyond its nominal edge.)
        let first_top = if first == BUCKETS - 1 {
            u64::MAX
        } else {
            bucket_bounds(first).1 - 1
        };
        let min = min.min(first_top);
        let max = max.max(bucket_bounds(last).0);
        HistogramSnapshot {
            counts,
            count,
            sum,
            min,
            max,
        }
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// True when no sample was recorded.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Sum of all samples (ns).
    pub fn sum(&self) -> u64 {
        self.sum
    }

    /// Smallest sample (exact), 0 when empty.
    pub fn min(&self) -> u64 {
        self.min
    }

    /// Largest sample (exact), 0 when empty.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Arithmetic mean (exact, from the sum), 0.0 when empty.
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        self.sum as f64 / self.count as f64
    }

    /// The value at percentile `p` (0..=100; clamped): the middle of the
    /// bucket holding the sample of rank `ceil(p/100 * count)`, clamped to
    /// `[min, max]`, so within ~3.2% of the exact sample. `percentile(100.0)`
    /// is the exact maximum. 0 when empty.
    pub fn percentile(&self, p: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let q = if p.is_nan() {
            0.0
        } else {
            p.clamp(0.0, 100.0) / 100.0
        };
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0u64;
        for (idx, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (lower, upper) = bucket_bounds(idx);
                let mid = lower + (upper - lower - 1) / 2;
                return mid.clamp(self.min, self.max);
            }
        }
        self.max
    }

    /// Adds `other`'s samples to this snapshot.
    pub fn merge(&mut self, other: &HistogramSnapshot) {
        if other.count == 0 {
            return;
        }
        if self.count == 0 {
            self.min = other.min;
            self.max = other.max;
        } else {
            self.min = self.min.min(other.min);
            self.max = self.max.max(other.max);
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a = a.wrapping_add(*b);
        }
        self.count = self.count.wrapping_add(other.count);
        self.sum = self.sum.wrapping_add(other.sum);
    }

    /// The non-empty buckets, smallest first.
    pub fn buckets(&self) -> impl Iterator<Item = HistogramBucket> + '_ {
        let max = self.max;
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c != 0)
            .map(move |(idx, &count)| {
                let (lower_ns, mut upper_ns) = bucket_bounds(idx);
                if idx == BUCKETS - 1 && max >= upper_ns {
                    upper_ns = max;
                }
                HistogramBucket {
                    lower_ns,
                    upper_ns,
                    count,
                }
            })
    }

    /// A snapshot rebuilt from bucket counts, each given by any value the
    /// bucket holds (e.g. its `upper_ns - 1`), plus the exact sum, min and
    /// max. This is how a [`HistogramSnapshot::buckets`] list that went
    /// through a file or a socket becomes mergeable again: rebuilt on the
    /// same grid, two processes' histograms add up exactly.
    pub fn from_bucket_counts(
        buckets: impl IntoIterator<Item = (u64, u64)>,
        sum: u64,
        min: u64,
        max: u64,
    ) -> Self {
        let mut counts = vec![0u64; BUCKETS];
        for (value_ns, count) in buckets {
            let slot = &mut counts[bucket_index(value_ns)];
            *slot = slot.wrapping_add(count);
        }
        Self::from_parts(counts, sum, min, max)
    }
}

impl Default for HistogramSnapshot {
    fn default() -> Self {
        Self::empty()
    }
}

impl fmt::Debug for HistogramSnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HistogramSnapshot")
            .field("count", &self.count)
            .field("sum_ns", &self.sum)
            .field("min_ns", &self.min)
            .field("max_ns", &self.max)
            .field("buckets", &self.buckets().collect::<Vec<_>>())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Exact percentile with the same rank rule as the histogram.
    fn exact(sorted: &[u64], p: f64) -> u64 {
        let n = sorted.len() as u64;
        let rank = (((p / 100.0) * n as f64).ceil() as u64).clamp(1, n);
        sorted[(rank - 1) as usize]
    }

    fn rel_err(got: u64, want: u64) -> f64 {
        (got as f64 - want as f64).abs() / (want as f64).max(1.0)
    }

    /// xorshift64*: a seeded generator, so failures reproduce.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        /// Log-uniform over [100 ns, 100 s].
        fn latency(&mut self) -> u64 {
            let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
            (100.0 * 10f64.powf(9.0 * u)) as u64
        }
    }

    const PS: [f64; 9] = [0.0, 1.0, 10.0, 25.0, 50.0, 90.0, 99.0, 99.9, 100.0];

    #[test]
    fn bucket_index_and_bounds_agree_for_every_bucket() {
        for idx in 0..BUCKETS {
            let (lo, hi) = bucket_bounds(idx);
            assert!(lo < hi);
            assert_eq!(bucket_index(lo), idx, "lower edge of {idx}");
            assert_eq!(bucket_index(hi - 1), idx, "upper edge of {idx}");
            if idx + 1 < BUCKETS {
                assert_eq!(bucket_bounds(idx + 1).0, hi, "buckets are contiguous");
            }
        }
    }

    #[test]
    fn buckets_are_at_most_one_sixteenth_of_their_lower_edge_wide() {
        for idx in SUB..BUCKETS {
            let (lo, hi) = bucket_bounds(idx);
            assert!((hi - lo) * 16 <= lo, "bucket {idx}: [{lo}, {hi})");
        }
    }

    #[test]
    fn range_covers_100ns_to_100s_and_clamps_beyond() {
        assert!(bucket_index(100) < BUCKETS - 1);
        assert!(bucket_index(100_000_000_000) < BUCKETS - 1);
        assert_eq!(bucket_index(u64::MAX), BUCKETS - 1);
        assert_eq!(bucket_index(0), 0);
    }

    #[test]
    fn empty_histogram_reports_zeros() {
        let s = Histogram::new().snapshot();
        assert!(s.is_empty());
        assert_eq!((s.count(), s.sum(), s.min(), s.max()), (0, 0, 0, 0));
        assert_eq!(s.percentile(50.0), 0);
        assert_eq!(s.mean(), 0.0);
        assert_eq!(s.buckets().count(), 0);
    }

    #[test]
    fn count_sum_min_max_mean_are_exact() {
        let h = Histogram::new();
        for v in [300, 1_000, 50_000, 7] {
            h.record(v);
        }
        let s = h.snapshot();
        assert_eq!(s.count(), 4);
        assert_eq!(s.sum(), 51_307);
        assert_eq!(s.min(), 7);
        assert_eq!(s.max(), 50_000);
        assert_eq!(s.mean(), 51_307.0 / 4.0);
        assert_eq!(s.percentile(100.0), 50_000);
        assert_eq!(s.percentile(0.0), 7);
    }

    #[test]
    fn single_value_percentiles_are_that_value() {
        let h = Histogram::new();
        h.record(123_456);
        let s = h.snapshot();
        for p in PS {
            assert_eq!(s.percentile(p), 123_456);
        }
    }

    #[test]
    fn huge_values_land_in_the_overflow_bucket_with_exact_max() {
        let h = Histogram::new();
        h.record(u64::MAX / 2);
        let s = h.snapshot();
        assert_eq!(s.max(), u64::MAX / 2);
        assert_eq!(s.percentile(50.0), u64::MAX / 2);
        let b: Vec<_> = s.buckets().collect();
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].upper_ns, u64::MAX / 2);
    }

    #[test]
    fn record_duration_matches_record_in_nanoseconds() {
        let h = Histogram::new();
        h.record_duration(Duration::from_micros(250));
        h.record_duration(Duration::MAX);
        let s = h.snapshot();
        assert_eq!(s.min(), 250_000);
        assert_eq!(s.max(), u64::MAX);
    }

    #[test]
    #[cfg_attr(miri, ignore = "slow under Miri: large histograms")]
    fn percentiles_of_seeded_log_uniform_samples_are_within_six_percent() {
        for seed in 1..=20u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let h = Histogram::new();
            let mut v: Vec<u64> = (0..5_000).map(|_| rng.latency()).collect();
            for &x in &v {
                h.record(x);
            }
            v.sort_unstable();
            let s = h.snapshot();
            for p in PS {
                let (got, want) = (s.percentile(p), exact(&v, p));
                assert!(
                    rel_err(got, want) <= 0.035,
                    "seed {seed} p{p}: got {got}, exact {want}"
                );
            }
        }
    }

    #[test]
    fn merge_equals_recording_everything_into_one() {
        let mut rng = Rng(42);
        let (a, b, all) = (Histogram::new(), Histogram::new(), Histogram::new());
        for i in 0..2_000 {
            let x = rng.latency();
            if i % 3 == 0 { &a } else { &b }.record(x);
            all.record(x);
        }
        let mut m = a.snapshot();
        m.merge(&b.snapshot());
        assert_eq!(m, all.snapshot());
        let mut e = HistogramSnapshot::empty();
        e.merge(&m);
        assert_eq!(e, m);
        m.merge(&HistogramSnapshot::empty());
        assert_eq!(m, all.snapshot());
    }

    #[test]
    #[cfg_attr(miri, ignore = "slow under Miri: large histograms")]
    // The driver's threads update these atomics at once: the one place
    // the engine's tests need threads (clippy.toml keeps them out).
    #[allow(clippy::disallowed_methods)]
    fn concurrent_records_are_all_counted() {
        let h = Histogram::new();
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let h = &h;
                s.spawn(move || {
                    for i in 0..10_000u64 {
                        h.record(100 + t * 10_000 + i);
                    }
                });
            }
        });
        let s = h.snapshot();
        assert_eq!(s.count(), 40_000);
        assert_eq!(s.min(), 100);
        assert_eq!(s.max(), 100 + 3 * 10_000 + 9_999);
    }

    #[test]
    #[cfg_attr(miri, ignore = "slow under Miri: large histograms")]
    fn rebuilt_from_its_bucket_counts_a_snapshot_is_unchanged() {
        let h = Histogram::new();
        for v in [0, 7, 15, 16, 1_000, 1_000, 2_000_000, 1 << 40] {
            h.record(v);
        }
        let s = h.snapshot();
        let back = HistogramSnapshot::from_bucket_counts(
            s.buckets().map(|b| (b.upper_ns - 1, b.count)),
            s.sum(),
            s.min(),
            s.max(),
        );
        assert_eq!(back, s);
    }

    proptest! {
        #[test]
        #[cfg_attr(miri, ignore = "slow under Miri: large histograms")]
        fn percentiles_are_within_six_percent_of_exact(
            mut v in proptest::collection::vec(0u64..100_000_000_000, 1..400),
            p in 0.0f64..=100.0,
        ) {
            let h = Histogram::new();
            for &x in &v {
                h.record(x);
            }
            v.sort_unstable();
            let s = h.snapshot();
            let (got, want) = (s.percentile(p), exact(&v, p));
            prop_assert!(rel_err(got, want) <= 0.06, "p{}: got {}, exact {}", p, got, want);
            prop_assert_eq!(s.count(), v.len() as u64);
            prop_assert_eq!(s.min(), v[0]);
            prop_assert_eq!(s.max(), v[v.len() - 1]);
        }
    }
}
