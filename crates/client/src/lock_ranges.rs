//! Byte-range locks one owner holds on one file, as the server sees them
//! after each lock and unlock, by POSIX's rules (RFC 8881 §9.5 for
//! NFSv4.1, the same for NLM): a lock replaces what the owner held on its
//! bytes (a downgrade, an upgrade, a split), an unlock removes its bytes,
//! neighbours of one mode merge. Both protocol versions keep their held
//! locks in a [`Ranges`] so that a server restart can reclaim exactly them
//! (`v4/reclaim.rs`, `nlm/held.rs`).

/// The end of a range that runs to the end of the file, however far it
/// grows (a length of 0 or of all ones on the wire).
pub(crate) const TO_EOF: u64 = u64::MAX;

/// One held range: bytes `start..end` (`end` [`TO_EOF`]: to the end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Range {
    pub start: u64,
    pub end: u64,
    pub exclusive: bool,
}

impl Range {
    /// The range of a lock's offset and length: 0 or all ones (or a length
    /// past the end of the file space) run to the end.
    pub(crate) fn of(offset: u64, len: u64, exclusive: bool) -> Self {
        let end = if len == 0 || len == TO_EOF {
            TO_EOF
        } else {
            offset.saturating_add(len)
        };
        Self {
            start: offset,
            end,
            exclusive,
        }
    }

    /// NFSv4.1's LOCK length of the range (all ones: to the end).
    pub(crate) fn nfs4_length(&self) -> u64 {
        if self.end == TO_EOF {
            TO_EOF
        } else {
            self.end - self.start
        }
    }

    /// NLM's (offset, length) of the range (length 0: to the end).
    pub(crate) fn nlm4_offset_len(&self) -> (u64, u64) {
        match self.end {
            TO_EOF => (self.start, 0),
            end => (self.start, end - self.start),
        }
    }
}

impl std::fmt::Display for Range {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mode = if self.exclusive {
            "exclusive"
        } else {
            "shared"
        };
        match self.end {
            TO_EOF => write!(f, "bytes {}.. (to the end), {mode}", self.start),
            end => write!(f, "bytes {}..{end}, {mode}", self.start),
        }
    }
}

/// Sorted, disjoint ranges; neighbours of one mode are merged.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Ranges(Vec<Range>);

impl Ranges {
    /// A granted lock: `r` replaces whatever the owner held on its bytes.
    pub(crate) fn add(&mut self, r: Range) {
        if r.start >= r.end {
            return;
        }
        self.remove(r.start, r.end);
        let at = self.0.partition_point(|x| x.start < r.start);
        self.0.insert(at, r);
        self.merge();
    }

    /// An unlock of `start..end`: what the owner held there is released.
    pub(crate) fn remove(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        let mut kept = Vec::with_capacity(self.0.len() + 1);
        for x in self.0.drain(..) {
            if x.end <= start || x.start >= end {
                kept.push(x);
                continue;
            }
            if x.start < start {
                kept.push(Range { end: start, ..x });
            }
            if x.end > end {
                kept.push(Range { start: end, ..x });
            }
        }
        self.0 = kept;
    }

    fn merge(&mut self) {
        let mut out: Vec<Range> = Vec::with_capacity(self.0.len());
        for x in self.0.drain(..) {
            match out.last_mut() {
                Some(last) if last.end == x.start && last.exclusive == x.exclusive => {
                    last.end = x.end;
                }
                _ => out.push(x),
            }
        }
        self.0 = out;
    }

    pub(crate) fn ranges(&self) -> &[Range] {
        &self.0
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn clear(&mut self) {
        self.0.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(start: u64, end: u64, exclusive: bool) -> Range {
        Range {
            start,
            end,
            exclusive,
        }
    }

    #[test]
    fn lengths_of_zero_and_all_ones_run_to_the_end() {
        assert_eq!(Range::of(10, 0, true), r(10, TO_EOF, true));
        assert_eq!(Range::of(10, u64::MAX, true), r(10, TO_EOF, true));
        assert_eq!(Range::of(u64::MAX - 1, 5, false).end, TO_EOF);
        assert_eq!(Range::of(10, 5, false).nfs4_length(), 5);
        assert_eq!(Range::of(10, 0, false).nfs4_length(), u64::MAX);
        assert_eq!(Range::of(10, 5, false).nlm4_offset_len(), (10, 5));
        assert_eq!(Range::of(10, u64::MAX, false).nlm4_offset_len(), (10, 0));
    }

    #[test]
    fn an_unlock_splits_a_range_and_adjacent_locks_merge() {
        let mut h = Ranges::default();
        h.add(Range::of(0, 100, true));
        h.remove(40, 60);
        assert_eq!(h.ranges(), [r(0, 40, true), r(60, 100, true)]);
        h.add(Range::of(40, 20, true));
        assert_eq!(h.ranges(), [r(0, 100, true)], "merged again");
        h.remove(0, TO_EOF);
        assert!(h.is_empty());
    }

    #[test]
    fn a_new_lock_replaces_the_owners_own_type_on_the_overlap() {
        let mut h = Ranges::default();
        h.add(Range::of(0, 100, false));
        h.add(Range::of(50, 0, true));
        assert_eq!(h.ranges(), [r(0, 50, false), r(50, TO_EOF, true)]);
        h.add(Range::of(20, 10, true));
        assert_eq!(
            h.ranges(),
            [
                r(0, 20, false),
                r(20, 30, true),
                r(30, 50, false),
                r(50, TO_EOF, true)
            ]
        );
        h.remove(25, 60);
        assert_eq!(
            h.ranges(),
            [r(0, 20, false), r(20, 25, true), r(60, TO_EOF, true)]
        );
        h.add(Range::of(5, 0, false));
        assert_eq!(h.ranges(), [r(0, TO_EOF, false)]);
    }

    #[test]
    fn empty_ranges_change_nothing() {
        let mut h = Ranges::default();
        h.add(Range::of(7, 3, true));
        h.add(r(50, 50, true));
        h.remove(8, 8);
        assert_eq!(h.ranges(), [r(7, 10, true)]);
    }
}
