//! The fore channel's slots as the session hands them out (RFC 8881
//! §2.10.6.1): which requests may take a slot of the current table and
//! when — a blocking request waits for one, a large read or write takes
//! its extra slots only when free, a pipelined batch never takes the
//! quarter kept for blocking calls, and while a new client ID reclaims
//! the old one's state only the reclaim's requests go — and what the
//! session counts across its tables (the batches' slots, the peak).
//!
//! Pure bookkeeping over `directnfs_engine::session::SlotTable` (which
//! owns the sequence ids); the session holds a [`Table`] under its lock
//! and waits on its condition variable for a slot.

use std::sync::atomic::{AtomicU32, Ordering};

use directnfs_engine::session::{Next, Outcome, SlotTable, Ticket};
use directnfs_wire::nfs4::sessionid4;

/// A slot held for one request: the session generation it belongs to
/// (a ticket of an older session is void), the session, the ticket and
/// the highest slot in use when it was taken.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Slot {
    pub(super) generation: u64,
    pub(super) sessionid: sessionid4,
    pub(super) ticket: Ticket,
    pub(super) highest: u32,
    /// Taken by `try_batch_slot`: counted in [`Tally`]'s batch slots.
    pub(super) batch: bool,
}

/// Slots pipelined batches leave to everything else (blocking calls,
/// lease renewal, a batch's own blocking path): at least one, a quarter
/// of the `usable` ones (those the server granted, up to its
/// `sr_target_highest_slotid`). A batch holds its slots until it reaps
/// their replies, so without them a thread that submits a batch and then
/// makes a blocking call before reaping it would wait for itself.
pub(super) fn reserved(usable: u32) -> u32 {
    (usable / 4).max(1)
}

/// The slot table of one session, and whether a reclaim holds it.
#[derive(Debug)]
pub(super) struct Table {
    slots: SlotTable,
    /// Slots granted.
    granted: u32,
    /// A new client ID is reclaiming the old one's state: only reclaim
    /// requests may take slots (RFC 8881 §8.4.2.1: nothing else before
    /// RECLAIM_COMPLETE).
    pub(super) reclaiming: bool,
}

impl Table {
    /// The table of a session the server granted `granted` slots.
    pub(super) fn new(granted: u32) -> Self {
        Self {
            slots: SlotTable::new(granted),
            granted,
            reclaiming: false,
        }
    }

    /// Slots granted.
    pub(super) fn granted(&self) -> u32 {
        self.granted
    }

    /// Slots new requests may take now: the granted ones up to the
    /// server's `sr_target_highest_slotid`.
    pub(super) fn usable(&self) -> u32 {
        self.slots.usable() as u32
    }

    /// A free slot for a request that may wait for one (`None`: wait
    /// and ask again): none while a reclaim is in progress, unless the
    /// request is the reclaim's.
    pub(super) fn take(&mut self, reclaim: bool) -> Option<Ticket> {
        if self.reclaiming && !reclaim {
            return None;
        }
        self.slots.acquire()
    }

    /// A free slot now for a request that does not wait (a large read's
    /// or write's extra pieces), or `None` when every slot is busy or a
    /// reclaim is in progress.
    pub(super) fn try_take(&mut self) -> Option<Ticket> {
        self.take(false)
    }

    /// A free slot for a pipelined batch, whose batches hold
    /// `batch_held` slots already: `None` when every slot is busy, the
    /// batches would take one of the [`reserved`] ones, or a reclaim is
    /// in progress.
    pub(super) fn take_for_batch(&mut self, batch_held: u32) -> Option<Ticket> {
        // Counted from the slots the server wants used now, not from
        // those it granted: a server that lowered its target (to one
        // slot, say) would otherwise see the batches take every slot a
        // blocking call may use, and the writer that holds them unreaped
        // wait for itself.
        let usable = self.usable();
        if self.reclaiming || batch_held + reserved(usable) >= usable {
            return None;
        }
        self.slots.acquire()
    }

    /// Slots busy now.
    pub(super) fn busy(&self) -> u32 {
        self.slots.busy() as u32
    }

    /// The highest slot busy (`sa_highest_slotid`).
    pub(super) fn highest_busy(&self) -> u32 {
        self.slots.highest_busy()
    }

    /// Releases `t` with what became of its request.
    pub(super) fn finish(&mut self, t: Ticket, outcome: Outcome) -> Next {
        self.slots.finish(t, outcome)
    }

    /// The server's `sr_target_highest_slotid`.
    pub(super) fn set_target_highest(&mut self, target: u32) {
        self.slots.set_target_highest(target);
    }
}

/// What the session counts across its tables: the slots pipelined
/// batches hold (a recovery's new table starts empty; the old tickets
/// still count here until settled) and the most slots busy at once.
#[derive(Debug, Default)]
pub(super) struct Tally {
    batch_held: AtomicU32,
    peak_busy: AtomicU32,
}

impl Tally {
    /// Slots pipelined batches hold now.
    pub(super) fn batch_held(&self) -> u32 {
        self.batch_held.load(Ordering::Relaxed)
    }

    /// A batch took a slot.
    pub(super) fn batch_took(&self) {
        self.batch_held.fetch_add(1, Ordering::Relaxed);
    }

    /// `slot` is released (a batch's stops counting).
    pub(super) fn released(&self, slot: &Slot) {
        if slot.batch {
            self.batch_held.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// `busy` slots are busy now.
    pub(super) fn busy_now(&self, busy: u32) {
        self.peak_busy.fetch_max(busy, Ordering::Relaxed);
    }

    /// Most slots busy at once so far.
    pub(super) fn peak(&self) -> u32 {
        self.peak_busy.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(ticket: Ticket, batch: bool) -> Slot {
        Slot {
            generation: 0,
            sessionid: sessionid4::default(),
            ticket,
            highest: 0,
            batch,
        }
    }

    /// Takes batch slots until refused, counting them as the session
    /// does: how many a batch got.
    fn fill_with_batches(t: &mut Table, tally: &Tally) -> u32 {
        while t.take_for_batch(tally.batch_held()).is_some() {
            tally.batch_took();
        }
        tally.batch_held()
    }

    #[test]
    fn batches_never_take_the_last_quarter_of_the_slots() {
        let mut t = Table::new(64);
        let tally = Tally::default();
        assert_eq!(fill_with_batches(&mut t, &tally), 48);
        // The quarter is there for blocking calls.
        let blocking: Vec<_> = std::iter::from_fn(|| t.take(false)).collect();
        assert_eq!(blocking.len(), 16);
        assert_eq!(t.busy(), 64);
    }

    #[test]
    fn a_small_table_keeps_at_least_one_slot_from_batches() {
        assert_eq!(reserved(1), 1);
        assert_eq!(reserved(3), 1);
        assert_eq!(reserved(8), 2);
        let tally = Tally::default();
        assert_eq!(fill_with_batches(&mut Table::new(2), &tally), 1);
        let tally = Tally::default();
        assert_eq!(fill_with_batches(&mut Table::new(1), &tally), 0);
    }

    #[test]
    fn batches_leave_a_quarter_of_the_slots_the_server_wants_used() {
        // 64 granted, but the server wants only slots 0..=7 used.
        let mut t = Table::new(64);
        t.set_target_highest(7);
        let tally = Tally::default();
        assert_eq!(fill_with_batches(&mut t, &tally), 6);
        let blocking: Vec<_> = std::iter::from_fn(|| t.take(false)).collect();
        assert_eq!(blocking.len(), 2, "the quarter of 8 is left");
        // Down to one slot: no batch takes it, a blocking call does.
        let mut t = Table::new(64);
        t.set_target_highest(0);
        let tally = Tally::default();
        assert_eq!(fill_with_batches(&mut t, &tally), 0);
        assert!(t.take(false).is_some());
    }

    #[test]
    fn batches_count_slots_they_hold_even_when_blocking_calls_freed_theirs() {
        let mut t = Table::new(8);
        let tally = Tally::default();
        assert_eq!(fill_with_batches(&mut t, &tally), 6);
        // The batches' slots go back to the table (a recovery's new
        // table starts empty) but are still held by unsettled batches.
        let mut fresh = Table::new(8);
        assert!(fresh.take_for_batch(tally.batch_held()).is_none());
        let ticket = Ticket { slot: 0, seqid: 1 };
        tally.released(&slot(ticket, false));
        assert_eq!(tally.batch_held(), 6, "a blocking slot is not a batch's");
        tally.released(&slot(ticket, true));
        assert_eq!(tally.batch_held(), 5);
        assert!(fresh.take_for_batch(tally.batch_held()).is_some());
    }

    #[test]
    fn a_reclaim_in_progress_lets_only_reclaim_requests_take_slots() {
        let mut t = Table::new(16);
        t.reclaiming = true;
        assert_eq!(t.take(false), None);
        assert_eq!(t.try_take(), None);
        assert_eq!(t.take_for_batch(0), None);
        assert!(t.take(true).is_some());
        t.reclaiming = false;
        assert!(t.take(false).is_some());
        assert!(t.try_take().is_some());
        assert!(t.take_for_batch(0).is_some());
    }

    #[test]
    fn a_released_slot_is_taken_again_with_the_next_sequence_id() {
        let mut t = Table::new(2);
        let a = t.take(false).expect("a free slot");
        let b = t.try_take().expect("a second free slot");
        assert_eq!(t.try_take(), None, "every slot busy");
        assert_eq!(t.highest_busy(), 1);
        assert_eq!(t.finish(a, Outcome::Done), Next::Settled);
        assert_eq!(t.busy(), 1);
        let again = t.take(false).expect("the released slot");
        assert_eq!(again.slot, a.slot);
        assert_eq!(again.seqid, a.seqid + 1);
        assert_ne!(again.slot, b.slot);
    }

    #[test]
    fn the_peak_is_the_most_slots_busy_at_once() {
        let tally = Tally::default();
        assert_eq!(tally.peak(), 0);
        tally.busy_now(3);
        tally.busy_now(1);
        tally.busy_now(2);
        assert_eq!(tally.peak(), 3);
    }
}
