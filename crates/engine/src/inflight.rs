//! The in-flight table: every request sent on a channel and not yet answered.
//!
//! An XID is `generation << SLOT_BITS | slot`, so matching a reply to its
//! request is an array index plus a generation check — O(1), no hashing, no
//! search — and a late reply to a slot that has since been reused (the
//! request timed out and was re-sent elsewhere) carries an old generation and
//! is recognised as stale instead of completing the wrong request.
//!
//! The table has a fixed capacity (`max_inflight`): when it is full, `insert`
//! returns the entry back and the caller must wait. That is the channel's
//! backpressure; nothing here grows without bound.

/// Bits of the XID that index the slot. 2^16 slots is far beyond any sane
/// per-channel depth, and leaves 16 bits of generation to tell reuses apart.
pub const SLOT_BITS: u32 = 16;
/// The largest capacity a table may have.
pub const MAX_CAPACITY: usize = 1 << SLOT_BITS;
const SLOT_MASK: u32 = (1 << SLOT_BITS) - 1;

#[derive(Debug)]
struct Slot<T> {
    generation: u16,
    entry: Option<Entry<T>>,
}

#[derive(Debug)]
struct Entry<T> {
    value: T,
    deadline_ns: u64,
}

/// Fixed-capacity table of in-flight requests indexed by XID.
#[derive(Debug)]
pub struct InflightTable<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    len: usize,
    /// Salt mixed into XIDs so two channels (or two client processes) do
    /// not produce identical XID sequences; a server's duplicate request
    /// cache keys on XID plus client address.
    salt: u32,
}

impl<T> InflightTable<T> {
    /// A table holding at most `capacity` requests (clamped to
    /// 1..=[`MAX_CAPACITY`]); `salt` seeds the generation counters.
    pub fn new(capacity: usize, salt: u32) -> Self {
        let capacity = capacity.clamp(1, MAX_CAPACITY);
        let slots = (0..capacity)
            .map(|i| Slot {
                generation: (salt as u16).wrapping_add(i as u16),
                entry: None,
            })
            .collect();
        // Pop from the end: hand out low slots first (cache friendly).
        let free = (0..capacity as u32).rev().collect();
        Self {
            slots,
            free,
            len: 0,
            salt,
        }
    }

    /// Requests currently in flight.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing is in flight.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// True when no slot is free.
    pub fn is_full(&self) -> bool {
        self.free.is_empty()
    }

    /// The maximum number of requests in flight.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Stores `value` and returns its XID, or gives the value back when the
    /// table is full.
    pub fn insert(&mut self, value: T, deadline_ns: u64) -> Result<u32, T> {
        let Some(index) = self.free.pop() else {
            return Err(value);
        };
        let slot = &mut self.slots[index as usize];
        slot.generation = slot.generation.wrapping_add(1);
        slot.entry = Some(Entry { value, deadline_ns });
        self.len += 1;
        Ok(Self::xid_of(index, slot.generation))
    }

    fn xid_of(index: u32, generation: u16) -> u32 {
        (generation as u32) << SLOT_BITS | index
    }

    fn locate(&self, xid: u32) -> Option<usize> {
        let index = (xid & SLOT_MASK) as usize;
        let slot = self.slots.get(index)?;
        (slot.entry.is_some() && slot.generation == (xid >> SLOT_BITS) as u16).then_some(index)
    }

    /// The request waiting for `xid`, if any, without removing it.
    pub fn get(&self, xid: u32) -> Option<&T> {
        let i = self.locate(xid)?;
        self.slots[i].entry.as_ref().map(|e| &e.value)
    }

    /// The request waiting for `xid`, if any, to change in place.
    pub fn get_mut(&mut self, xid: u32) -> Option<&mut T> {
        let i = self.locate(xid)?;
        self.slots[i].entry.as_mut().map(|e| &mut e.value)
    }

    /// Removes and returns the request waiting for `xid`. `None` for an XID
    /// that was never issued, already answered, or belongs to an older use
    /// of the slot.
    pub fn take(&mut self, xid: u32) -> Option<T> {
        let i = self.locate(xid)?;
        let entry = self.slots[i].entry.take()?;
        self.free.push(i as u32);
        self.len -= 1;
        Some(entry.value)
    }

    /// Removes every request whose deadline is at or before `now_ns` and
    /// appends `(xid, value)` to `out`.
    pub fn take_expired(&mut self, now_ns: u64, out: &mut Vec<(u32, T)>) {
        if self.len == 0 {
            return;
        }
        for (i, slot) in self.slots.iter_mut().enumerate() {
            if slot.entry.as_ref().is_some_and(|e| e.deadline_ns <= now_ns) {
                if let Some(e) = slot.entry.take() {
                    out.push((Self::xid_of(i as u32, slot.generation), e.value));
                    self.free.push(i as u32);
                    self.len -= 1;
                }
            }
        }
    }

    /// The earliest deadline among requests in flight.
    pub fn next_deadline(&self) -> Option<u64> {
        self.slots
            .iter()
            .filter_map(|s| s.entry.as_ref().map(|e| e.deadline_ns))
            .min()
    }

    /// Removes every request (the channel died) and appends them to `out`.
    pub fn drain_into(&mut self, out: &mut Vec<T>) {
        for (i, slot) in self.slots.iter_mut().enumerate() {
            if let Some(e) = slot.entry.take() {
                out.push(e.value);
                self.free.push(i as u32);
            }
        }
        self.len = 0;
    }

    /// The salt this table was created with.
    pub fn salt(&self) -> u32 {
        self.salt
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn reply_is_matched_to_its_request() {
        let mut t = InflightTable::new(4, 0);
        let a = t.insert("a", 10).unwrap();
        let b = t.insert("b", 10).unwrap();
        assert_ne!(a, b);
        assert_eq!(t.take(b), Some("b"));
        assert_eq!(t.take(a), Some("a"));
        assert!(t.is_empty());
    }

    #[test]
    fn full_table_gives_the_value_back() {
        let mut t = InflightTable::new(1, 0);
        t.insert(1, 0).unwrap();
        assert_eq!(t.insert(2, 0), Err(2));
    }

    #[test]
    fn stale_xid_of_a_reused_slot_matches_nothing() {
        let mut t = InflightTable::new(1, 0);
        let old = t.insert("old", 0).unwrap();
        t.take(old);
        let new = t.insert("new", 0).unwrap();
        assert_ne!(old, new);
        assert_eq!(t.take(old), None);
        assert_eq!(t.take(new), Some("new"));
    }

    #[test]
    fn unknown_and_duplicate_xids_match_nothing() {
        let mut t = InflightTable::new(8, 3);
        let x = t.insert(7, 0).unwrap();
        assert_eq!(t.take(0xdead_beef), None);
        assert_eq!(t.take(x), Some(7));
        assert_eq!(t.take(x), None);
    }

    #[test]
    fn expired_requests_are_taken_in_one_pass() {
        let mut t = InflightTable::new(8, 0);
        t.insert("early", 5).unwrap();
        let late = t.insert("late", 50).unwrap();
        let mut out = Vec::new();
        t.take_expired(10, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].1, "early");
        assert_eq!(t.next_deadline(), Some(50));
        assert_eq!(t.take(late), Some("late"));
    }

    proptest! {
        /// Any interleaving of inserts and takes: each request comes out
        /// exactly once, by its own XID, and never through another's.
        #[test]
        #[cfg_attr(miri, ignore = "slow under Miri: property test")]
        fn every_request_completes_exactly_once(ops in proptest::collection::vec(any::<(bool, u8)>(), 0..400)) {
            let mut t = InflightTable::new(16, 77);
            let mut live: Vec<(u32, usize)> = Vec::new();
            let mut next = 0usize;
            for (insert, pick) in ops {
                if insert {
                    match t.insert(next, 0) {
                        Ok(x) => { live.push((x, next)); }
                        Err(v) => prop_assert_eq!(v, next),
                    }
                    next += 1;
                } else if !live.is_empty() {
                    let (x, v) = live.swap_remove(pick as usize % live.len());
                    prop_assert_eq!(t.take(x), Some(v));
                    prop_assert_eq!(t.take(x), None);
                }
                prop_assert_eq!(t.len(), live.len());
            }
        }
    }
}
