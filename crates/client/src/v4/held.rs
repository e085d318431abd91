//! The byte ranges one lock owner holds, as the server sees them after
//! each LOCK and LOCKU (POSIX rules, RFC 8881 §9.5: a new lock replaces
//! the owner's own lock on the overlap, an unlock may split a range), so
//! that a server restart can reclaim exactly them (`reclaim.rs`).

/// The end of a range that runs to the end of the file, however far it
/// grows (RFC 8881 §18.10.3: a length of all ones).
pub(crate) const TO_EOF: u64 = u64::MAX;

/// One held range: `start..end` (`end` [`TO_EOF`]: to the end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Range {
    pub start: u64,
    pub end: u64,
    pub exclusive: bool,
}

impl Range {
    /// The range of a LOCK's offset and length (0 or all ones: to the
    /// end; a length past the end of the file space is cut there).
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

    /// The LOCK length of the range (all ones: to the end).
    pub(crate) fn length(&self) -> u64 {
        if self.end == TO_EOF {
            TO_EOF
        } else {
            self.end - self.start
        }
    }
}

/// Sorted, disjoint ranges; neighbours of one type are merged.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Held(Vec<Range>);

impl Held {
    /// A granted LOCK: `r` replaces whatever the owner held on its bytes.
    pub(crate) fn add(&mut self, r: Range) {
        if r.start >= r.end {
            return;
        }
        self.remove(r.start, r.end);
        let at = self.0.partition_point(|x| x.start < r.start);
        self.0.insert(at, r);
        self.merge();
    }

    /// A LOCKU of `start..end`: what the owner held there is released.
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
        assert_eq!(Range::of(10, 5, false).length(), 5);
        assert_eq!(Range::of(10, 0, false).length(), u64::MAX);
    }

    #[test]
    fn an_unlock_splits_a_range_and_adjacent_locks_merge() {
        let mut h = Held::default();
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
        let mut h = Held::default();
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
        let mut h = Held::default();
        h.add(Range::of(7, 3, true));
        h.add(r(50, 50, true));
        h.remove(8, 8);
        assert_eq!(h.ranges(), [r(7, 10, true)]);
    }
}
