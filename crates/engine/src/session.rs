//! The fore channel's slot table of an NFSv4.1 session (RFC 8881
//! §2.10.6): which slot each COMPOUND goes on and with which sequence id,
//! so that a request re-sent after a lost reply is recognised by the
//! server as a retry and answered from its reply cache (exactly once).
//!
//! Pure bookkeeping: the driver acquires a [`Ticket`] before encoding the
//! SEQUENCE operation, keeps it while the request (and every re-send of
//! the *same* bytes, on any connection of the session) is in flight, and
//! finishes it with what the reply said. A slot carries one request at a
//! time (§2.10.6.1).

/// Most slots used, whatever the server grants: the table is a `Vec`
/// sized by the server's answer, so its answer is bounded first.
pub const MAX_SLOTS: u32 = 1024;

/// A slot and the sequence id a request carries on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket {
    /// `sa_slotid`.
    pub slot: u32,
    /// `sa_sequenceid`.
    pub seqid: u32,
}

/// What became of a request sent with a ticket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// SEQUENCE succeeded: the server consumed the sequence id (whatever
    /// the later operations of the COMPOUND did).
    Done,
    /// SEQUENCE failed with an error that leaves the slot as it was
    /// (BADSESSION, DELAY, BADSLOT, ...): the sequence id was not consumed.
    NotExecuted,
    /// No reply will come (soft timeout, the session given up): the
    /// server may or may not have executed it.
    Lost,
    /// SEQUENCE said NFS4ERR_SEQ_MISORDERED.
    Misordered,
}

/// What the caller does after [`SlotTable::finish`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Nothing more: the outcome stands.
    Settled,
    /// A misordered request on a slot that was in doubt: the lost request
    /// never reached the server. Send the request again as a new one
    /// (a fresh ticket gives the corrected sequence id).
    Resend,
}

#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    /// The last sequence id the server is believed to have seen.
    last: u32,
    busy: bool,
    /// The last request's reply was lost: `last` counts it as executed,
    /// which a SEQ_MISORDERED answer would refute.
    in_doubt: bool,
}

/// The slot table of one session.
#[derive(Debug, Clone)]
pub struct SlotTable {
    slots: Vec<Slot>,
    /// Highest slot id the server wants used (`sr_target_highest_slotid`).
    target_highest: u32,
}

impl SlotTable {
    /// A table for `granted` slots (`csr_fore_chan_attrs.ca_maxrequests`),
    /// at least 1 and at most [`MAX_SLOTS`]. Every slot starts at sequence
    /// id 0, so its first request sends 1 (RFC 8881 §18.36.4).
    pub fn new(granted: u32) -> Self {
        let n = granted.clamp(1, MAX_SLOTS);
        Self {
            slots: vec![Slot::default(); n as usize],
            target_highest: n - 1,
        }
    }

    /// Number of slots.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Always false: a table has at least one slot.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Slots carrying a request now.
    pub fn busy(&self) -> usize {
        self.slots.iter().filter(|s| s.busy).count()
    }

    /// Slots new requests may take: those up to the server's target
    /// ([`set_target_highest`](Self::set_target_highest)), at least 1.
    pub fn usable(&self) -> usize {
        (self.target_highest as usize + 1).min(self.slots.len())
    }

    /// The lowest free slot at or below the server's target, with the
    /// next sequence id; `None` when every usable slot is busy (wait for
    /// a [`finish`](Self::finish)).
    pub fn acquire(&mut self) -> Option<Ticket> {
        let usable = self.usable();
        let (i, slot) = self
            .slots
            .iter_mut()
            .take(usable)
            .enumerate()
            .find(|(_, s)| !s.busy)?;
        slot.busy = true;
        Some(Ticket {
            slot: i as u32,
            // RFC 8881 §2.10.6.1: sequence ids wrap around.
            seqid: slot.last.wrapping_add(1),
        })
    }

    /// `sa_highest_slotid`: the highest slot id in use (0 when none).
    pub fn highest_busy(&self) -> u32 {
        self.slots.iter().rposition(|s| s.busy).unwrap_or(0) as u32
    }

    /// The server's `sr_target_highest_slotid`: new requests use slots up
    /// to it (busy slots above it finish normally).
    pub fn set_target_highest(&mut self, target: u32) {
        self.target_highest = target.min(self.slots.len() as u32 - 1);
    }

    /// Releases `t`'s slot with what became of its request. A ticket that
    /// is not busy (finished twice, or of another table) changes nothing.
    pub fn finish(&mut self, t: Ticket, outcome: Outcome) -> Next {
        let Some(slot) = self.slots.get_mut(t.slot as usize) else {
            return Next::Settled;
        };
        if !slot.busy {
            return Next::Settled;
        }
        slot.busy = false;
        match outcome {
            Outcome::Done => {
                slot.last = t.seqid;
                slot.in_doubt = false;
                Next::Settled
            }
            Outcome::NotExecuted => Next::Settled,
            Outcome::Lost => {
                // Count it as executed: if it was not, the next request
                // on this slot is misordered and we step back then.
                slot.last = t.seqid;
                slot.in_doubt = true;
                Next::Settled
            }
            Outcome::Misordered if slot.in_doubt => {
                slot.last = slot.last.wrapping_sub(1);
                slot.in_doubt = false;
                Next::Resend
            }
            Outcome::Misordered => Next::Settled,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_request_on_a_slot_sends_sequence_id_1() {
        let mut t = SlotTable::new(4);
        assert_eq!(t.acquire(), Some(Ticket { slot: 0, seqid: 1 }));
        assert_eq!(t.acquire(), Some(Ticket { slot: 1, seqid: 1 }));
        assert_eq!(t.highest_busy(), 1);
        assert_eq!(t.busy(), 2);
    }

    #[test]
    fn a_slot_carries_one_request_at_a_time() {
        let mut t = SlotTable::new(1);
        let a = t.acquire().unwrap();
        assert_eq!(t.acquire(), None);
        assert_eq!(t.finish(a, Outcome::Done), Next::Settled);
        assert_eq!(t.acquire(), Some(Ticket { slot: 0, seqid: 2 }));
    }

    #[test]
    fn unconsumed_sequence_id_is_sent_again() {
        let mut t = SlotTable::new(1);
        let a = t.acquire().unwrap();
        t.finish(a, Outcome::NotExecuted);
        assert_eq!(t.acquire(), Some(a));
    }

    #[test]
    fn lost_reply_then_misordered_steps_back_once() {
        let mut t = SlotTable::new(1);
        let a = t.acquire().unwrap();
        t.finish(a, Outcome::Lost);
        let b = t.acquire().unwrap();
        assert_eq!(b.seqid, 2);
        assert_eq!(t.finish(b, Outcome::Misordered), Next::Resend);
        assert_eq!(t.acquire().unwrap().seqid, 1);
    }

    #[test]
    fn misordered_without_doubt_is_settled_and_changes_nothing() {
        let mut t = SlotTable::new(1);
        let a = t.acquire().unwrap();
        assert_eq!(t.finish(a, Outcome::Misordered), Next::Settled);
        assert_eq!(t.acquire().unwrap().seqid, 1);
    }

    #[test]
    fn sequence_ids_wrap() {
        let mut t = SlotTable::new(1);
        t.slots[0].last = u32::MAX;
        assert_eq!(t.acquire().unwrap().seqid, 0);
    }

    #[test]
    fn target_highest_limits_new_requests() {
        let mut t = SlotTable::new(8);
        t.set_target_highest(0);
        let a = t.acquire().unwrap();
        assert_eq!(t.acquire(), None);
        t.finish(a, Outcome::Done);
        t.set_target_highest(1000);
        assert_eq!(t.target_highest, 7);
    }

    #[test]
    fn grant_is_bounded() {
        assert_eq!(SlotTable::new(0).len(), 1);
        assert_eq!(SlotTable::new(u32::MAX).len(), MAX_SLOTS as usize);
    }

    #[test]
    fn finishing_twice_or_a_foreign_ticket_is_harmless() {
        let mut t = SlotTable::new(2);
        let a = t.acquire().unwrap();
        t.finish(a, Outcome::Done);
        t.finish(a, Outcome::Lost);
        t.finish(Ticket { slot: 99, seqid: 1 }, Outcome::Done);
        assert_eq!(t.acquire(), Some(Ticket { slot: 0, seqid: 2 }));
    }
}
