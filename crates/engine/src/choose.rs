//! Which channel carries the next request.
//!
//! The channel with the least outstanding work (bytes in flight plus a
//! per-request cost, so a pile of small requests also counts) among those
//! that are up. Ties go to the first candidate at or after a rotating start
//! index, so equal channels share the load instead of the first one taking
//! everything. One I/O never waits behind a slow path while another is idle.

/// What the chooser needs to know about a channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    /// The channel may carry new requests.
    pub up: bool,
    /// Bytes of requests sent and not yet answered.
    pub outstanding_bytes: u64,
    /// Requests sent and not yet answered.
    pub outstanding_requests: u64,
}

/// Weight of one request in bytes when comparing channels: roughly the
/// fixed cost of an RPC expressed as payload it could have carried.
pub const REQUEST_COST_BYTES: u64 = 4096;

/// Picks the least-loaded channel that is up, skipping `avoid` (the channel
/// a retransmission comes from) when another one is available. `start`
/// rotates the tie-break. Returns an index into `candidates`.
pub fn least_loaded(candidates: &[Candidate], start: usize, avoid: Option<usize>) -> Option<usize> {
    least_loaded_by(candidates.len(), |i| candidates[i], start, avoid)
}

/// [`least_loaded`] over `n` candidates read on demand by `get` (the I/O
/// driver reads its channels' atomics directly instead of building a
/// slice for every request).
#[inline]
pub fn least_loaded_by(
    n: usize,
    get: impl Fn(usize) -> Candidate,
    start: usize,
    avoid: Option<usize>,
) -> Option<usize> {
    if n == 0 {
        return None;
    }
    let mut best: Option<(usize, u64)> = None;
    let mut fallback = None;
    let mut i = start % n;
    for _ in 0..n {
        let c = get(i);
        if c.up {
            if Some(i) == avoid {
                fallback = Some(i);
            } else {
                let load = c
                    .outstanding_bytes
                    .saturating_add(c.outstanding_requests.saturating_mul(REQUEST_COST_BYTES));
                if best.is_none_or(|(_, b)| load < b) {
                    best = Some((i, load));
                }
            }
        }
        i += 1;
        if i == n {
            i = 0;
        }
    }
    best.map(|(i, _)| i).or(fallback)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(up: bool, bytes: u64, reqs: u64) -> Candidate {
        Candidate {
            up,
            outstanding_bytes: bytes,
            outstanding_requests: reqs,
        }
    }

    #[test]
    fn picks_the_idle_channel_over_a_busy_one() {
        let cs = [c(true, 1 << 20, 1), c(true, 0, 0), c(true, 8192, 1)];
        assert_eq!(least_loaded(&cs, 0, None), Some(1));
    }

    #[test]
    fn never_picks_a_channel_that_is_down() {
        let cs = [c(false, 0, 0), c(true, 1 << 20, 9)];
        assert_eq!(least_loaded(&cs, 0, None), Some(1));
        assert_eq!(least_loaded(&[c(false, 0, 0)], 0, None), None);
    }

    #[test]
    fn retransmission_avoids_its_old_channel_when_it_can() {
        let cs = [c(true, 0, 0), c(true, 1 << 30, 100)];
        assert_eq!(least_loaded(&cs, 0, Some(0)), Some(1));
        assert_eq!(least_loaded(&cs[..1], 0, Some(0)), Some(0));
    }

    #[test]
    fn ties_rotate_with_the_start_index() {
        let cs = [c(true, 0, 0); 3];
        assert_eq!(least_loaded(&cs, 0, None), Some(0));
        assert_eq!(least_loaded(&cs, 1, None), Some(1));
        assert_eq!(least_loaded(&cs, 5, None), Some(2));
    }
}
