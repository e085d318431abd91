//! A token bucket per subject, so that one flapping path cannot flood the
//! log while lines about everything else still pass.

use std::collections::HashMap;
use std::time::Duration;

/// Subjects tracked before the table is cleared (a bound on memory; a
/// clear only lets a few more lines through).
const MAX_SUBJECTS: usize = 1024;

#[derive(Debug)]
pub(crate) struct RateLimiter {
    burst: u32,
    refill: Duration,
    buckets: HashMap<String, Bucket>,
}

#[derive(Debug)]
struct Bucket {
    /// Lines that may pass now.
    tokens: u32,
    /// When the last token was added (or the bucket made).
    refilled_at: Duration,
    /// Lines refused since the last one that passed.
    held_back: u64,
}

/// The limiter's answer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Admit {
    /// Write the line; `held_back` lines about the subject were refused
    /// since the last one written.
    Yes { held_back: u64 },
    /// Drop it (counted, and reported with the next line that passes).
    No,
}

impl RateLimiter {
    pub(crate) fn new(burst: u32, refill: Duration) -> Self {
        RateLimiter {
            burst: burst.max(1),
            refill: refill.max(Duration::from_millis(1)),
            buckets: HashMap::new(),
        }
    }

    /// May a line about `subject` pass at time `now` (any monotonic origin)?
    pub(crate) fn admit(&mut self, subject: &str, now: Duration) -> Admit {
        if self.buckets.len() >= MAX_SUBJECTS && !self.buckets.contains_key(subject) {
            self.buckets.clear();
        }
        let (burst, refill) = (self.burst, self.refill);
        let b = self
            .buckets
            .entry(subject.to_owned())
            .or_insert_with(|| Bucket {
                tokens: burst,
                refilled_at: now,
                held_back: 0,
            });
        let elapsed = now.saturating_sub(b.refilled_at);
        let earned = (elapsed.as_nanos() / refill.as_nanos()).min(u128::from(burst)) as u32;
        if earned > 0 {
            b.tokens = (b.tokens + earned).min(burst);
            b.refilled_at = if b.tokens == burst {
                now
            } else {
                b.refilled_at + refill * earned
            };
        }
        if b.tokens == 0 {
            b.held_back += 1;
            return Admit::No;
        }
        b.tokens -= 1;
        Admit::Yes {
            held_back: std::mem::take(&mut b.held_back),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn a_burst_passes_then_one_line_per_refill_reporting_what_was_held_back() {
        let mut l = RateLimiter::new(3, 5 * S);
        for _ in 0..3 {
            assert_eq!(l.admit("p", S), Admit::Yes { held_back: 0 });
        }
        // A path flapping every 100 ms for 5 s: everything is held back...
        let mut t = S;
        let mut passed = 0;
        for _ in 0..49 {
            t += Duration::from_millis(100);
            if matches!(l.admit("p", t), Admit::Yes { .. }) {
                passed += 1;
            }
        }
        assert_eq!(passed, 0);
        // ...until one refill has passed: the next line says so.
        assert_eq!(
            l.admit("p", 6 * S + Duration::from_millis(1)),
            Admit::Yes { held_back: 49 }
        );
        assert_eq!(l.admit("p", 6 * S + Duration::from_millis(2)), Admit::No);
    }

    #[test]
    fn subjects_are_limited_apart() {
        let mut l = RateLimiter::new(1, 10 * S);
        assert_eq!(l.admit("a", S), Admit::Yes { held_back: 0 });
        assert_eq!(l.admit("a", S), Admit::No);
        assert_eq!(l.admit("b", S), Admit::Yes { held_back: 0 });
    }

    #[test]
    fn a_quiet_subject_gets_its_whole_burst_back() {
        let mut l = RateLimiter::new(2, S);
        l.admit("a", S);
        l.admit("a", S);
        assert_eq!(l.admit("a", S), Admit::No);
        assert_eq!(l.admit("a", 100 * S), Admit::Yes { held_back: 1 });
        assert_eq!(l.admit("a", 100 * S), Admit::Yes { held_back: 0 });
        assert_eq!(l.admit("a", 100 * S), Admit::No);
    }

    #[test]
    fn the_subject_table_is_bounded() {
        let mut l = RateLimiter::new(1, S);
        for i in 0..(MAX_SUBJECTS * 3) {
            l.admit(&format!("s{i}"), S);
        }
        assert!(l.buckets.len() <= MAX_SUBJECTS);
    }
}
