//! The per-file log of writes that unstable mode (and a FILE_SYNC write the
//! server downgraded) needs to survive a server restart: RFC 1813 §3.3.7
//! and §3.3.21 — data a WRITE put in the server's memory (UNSTABLE) is
//! lost if the server restarts before a COMMIT, which the client sees as a
//! change of the write verifier, and must then send again.
//!
//! Sending it again is only safe if it never lands on top of newer data.
//! So the log holds writes in the order they were *submitted* (a sequence
//! number), not only once acknowledged: a write still in flight when a
//! repair starts may be executed by the server before the repair's WRITE,
//! and its bytes must then not be re-sent. A write submitted while a
//! repair re-sends bytes it overlaps waits until the repair is over
//! ([`WriteLog::blocks`]), so it lands after it.
//!
//! Pure bookkeeping, no I/O: `file.rs` holds it under a mutex and logs the
//! WRITEs it sends; `fsync.rs` does the COMMITs and the re-sends.

use std::collections::VecDeque;
use std::sync::Arc;

use directnfs_wire::nfs3::writeverf3;

/// One logged write.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// Submission order.
    pub seq: u64,
    pub offset: u64,
    /// The data sent; `data[..len]` is what the entry covers (a short
    /// write's reply took fewer bytes than sent).
    pub data: Arc<[u8]>,
    pub len: usize,
    pub state: State,
}

/// Where a logged write stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    /// Submitted, no reply processed yet.
    InFlight,
    /// Acknowledged with this write verifier; `durable` when the server
    /// said FILE_SYNC or DATA_SYNC (then kept only to keep an older write's
    /// replay off its bytes).
    Acked { verf: writeverf3, durable: bool },
}

impl Entry {
    pub(crate) fn end(&self) -> u64 {
        self.offset + self.len as u64
    }

    /// Acknowledged, not durable: what a COMMIT has to prove durable.
    fn is_unstable(&self) -> bool {
        matches!(self.state, State::Acked { durable: false, .. })
    }

    fn is_durable(&self) -> bool {
        matches!(self.state, State::Acked { durable: true, .. })
    }

    /// In flight, but nobody holds its data any more: the call is gone
    /// and its reply will never be processed (a `Batch` dropped without
    /// reaping it, a `write_at` that returned early with an error).
    fn is_abandoned(&self) -> bool {
        self.state == State::InFlight && Arc::strong_count(&self.data) == 1
    }

    /// The write verifier it was acknowledged with.
    pub(crate) fn verf(&self) -> Option<writeverf3> {
        match self.state {
            State::Acked { verf, .. } => Some(verf),
            State::InFlight => None,
        }
    }
}

/// A byte range to send again with FILE_SYNC: `data` goes at `offset`.
#[derive(Debug, Clone)]
pub(crate) struct Segment {
    pub offset: u64,
    pub data: Arc<[u8]>,
}

/// See the module doc.
#[derive(Debug, Default)]
pub(crate) struct WriteLog {
    /// In submission order (`seq` ascending).
    entries: VecDeque<Entry>,
    next_seq: u64,
    /// Bytes acknowledged and not known durable.
    bytes: usize,
    /// Bytes of every acknowledged entry (the memory the log holds beyond
    /// what calls in flight hold anyway).
    logged: usize,
    /// Entries acknowledged and not known durable.
    unstable: usize,
    /// While a repair runs: the byte ranges it sends again (sorted,
    /// disjoint). New writes overlapping them wait.
    repair: Option<Vec<(u64, u64)>>,
}

impl WriteLog {
    /// Nothing logged.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Bytes acknowledged and not yet known durable.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Bytes of every acknowledged entry kept.
    pub(crate) fn logged(&self) -> usize {
        self.logged
    }

    /// True while a repair sends again bytes of `[offset, offset + len)`:
    /// a new write there must wait for it to end.
    pub(crate) fn blocks(&self, offset: u64, len: usize) -> bool {
        let Some(ranges) = &self.repair else {
            return false;
        };
        let end = offset.saturating_add(len as u64);
        // The first range ending after `offset` is the only candidate.
        let i = ranges.partition_point(|&(_, e)| e <= offset);
        ranges.get(i).is_some_and(|&(s, _)| s < end)
    }

    /// A write is about to be sent.
    pub(crate) fn submit(&mut self, offset: u64, data: &Arc<[u8]>) {
        self.push(offset, data, data.len(), State::InFlight);
    }

    /// Appends a write as the newest entry.
    fn push(&mut self, offset: u64, data: &Arc<[u8]>, len: usize, state: State) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.entries.push_back(Entry {
            seq,
            offset,
            data: Arc::clone(data),
            len,
            state,
        });
    }

    /// The reply to a write: the server took `count` bytes of `data` at
    /// `offset`. A write never [`submit`](Self::submit)ted (FILE_SYNC mode
    /// while the log was empty) is logged now if it needs to be.
    pub(crate) fn acked(
        &mut self,
        offset: u64,
        data: &Arc<[u8]>,
        count: usize,
        verf: writeverf3,
        durable: bool,
    ) {
        let state = State::Acked { verf, durable };
        let len = count.min(data.len());
        let found = self.find_in_flight(offset, data);
        if len == 0 {
            if let Some(i) = found {
                self.entries.remove(i);
            }
            return;
        }
        // A durable write shields only older unstable ones from their
        // replay: with none it need not be kept.
        let needed = !durable || self.unstable_before(found.unwrap_or(self.entries.len()));
        match (found, needed) {
            (Some(i), true) => {
                let e = &mut self.entries[i];
                e.len = len;
                e.state = state;
            }
            (Some(i), false) => {
                self.entries.remove(i);
                self.trim_front();
                return;
            }
            (None, true) => self.push(offset, data, len, state),
            (None, false) => return,
        }
        self.logged += len;
        if !durable {
            self.bytes += len;
            self.unstable += 1;
        }
        self.trim_front();
    }

    /// The write failed (no reply, an error status): forget it. The
    /// caller is told, and what that range holds is then unspecified.
    pub(crate) fn failed(&mut self, offset: u64, data: &Arc<[u8]>) {
        if let Some(i) = self.find_in_flight(offset, data) {
            self.entries.remove(i);
        }
        self.trim_front();
    }

    /// What an fsync has to make durable: every write acknowledged and not
    /// durable, oldest first.
    pub(crate) fn snapshot(&self) -> Vec<Entry> {
        self.entries
            .iter()
            .filter(|e| e.is_unstable())
            .cloned()
            .collect()
    }

    /// Starts a repair of `stale` (entries of a [`snapshot`](Self::snapshot)
    /// whose verifier the COMMIT did not confirm): returns the bytes to
    /// send again — those no later write covers, acknowledged or still in
    /// flight — and holds back new writes overlapping them until
    /// [`end_repair`](Self::end_repair). The segments are disjoint, so
    /// their order does not matter.
    pub(crate) fn begin_repair(&mut self, stale: &[Entry]) -> Vec<Segment> {
        let mut segments = Vec::new();
        for w in stale {
            let later = self
                .entries
                .iter()
                .filter(|e| e.seq > w.seq)
                .map(|e| (e.offset, e.end()));
            for (s, e) in uncovered(w.offset, w.end(), later) {
                let from = (s - w.offset) as usize;
                let to = (e - w.offset) as usize;
                segments.push(Segment {
                    offset: s,
                    data: Arc::from(&w.data[from..to]),
                });
            }
        }
        let mut ranges: Vec<(u64, u64)> = segments
            .iter()
            .map(|s| (s.offset, s.offset + s.data.len() as u64))
            .collect();
        ranges.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
        for (s, e) in ranges {
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        self.repair = Some(merged);
        segments
    }

    /// The repair is over (done or failed): held-back writes may go.
    pub(crate) fn end_repair(&mut self) {
        self.repair = None;
    }

    /// A COMMIT (and repair) proved every entry of `snapshot` durable:
    /// drop them, and whatever else is no longer needed.
    pub(crate) fn committed(&mut self, snapshot: &[Entry]) {
        let mut done = snapshot.iter().map(|e| e.seq).peekable();
        let mut unstable_seen = false;
        let mut kept = VecDeque::with_capacity(self.entries.len());
        for e in self.entries.drain(..) {
            while done.next_if(|&s| s < e.seq).is_some() {}
            let committed = done.next_if_eq(&e.seq).is_some();
            let drop = if committed {
                self.bytes -= e.len;
                self.unstable -= 1;
                true
            } else if e.is_unstable() {
                unstable_seen = true;
                false
            } else {
                // A durable write shields only older unstable ones.
                e.is_abandoned() || (e.is_durable() && !unstable_seen)
            };
            if drop {
                if e.verf().is_some() {
                    self.logged -= e.len;
                }
            } else {
                kept.push_back(e);
            }
        }
        self.entries = kept;
    }

    fn find_in_flight(&self, offset: u64, data: &Arc<[u8]>) -> Option<usize> {
        // Replies come back roughly in submission order: the entry is
        // usually among the last few (about the queue depth).
        self.entries.iter().rposition(|e| {
            e.state == State::InFlight && e.offset == offset && Arc::ptr_eq(&e.data, data)
        })
    }

    /// Whether an unstable entry is older than position `i`.
    fn unstable_before(&self, i: usize) -> bool {
        self.unstable > 0 && self.entries.iter().take(i).any(Entry::is_unstable)
    }

    /// Drops durable and abandoned entries from the front: nothing older
    /// is left for them to shield.
    fn trim_front(&mut self) {
        while let Some(e) = self.entries.front() {
            if !(e.is_durable() || e.is_abandoned()) {
                break;
            }
            if e.is_durable() {
                self.logged -= e.len;
            }
            self.entries.pop_front();
        }
    }
}

/// The parts of `[start, end)` not covered by any of `later`, in order.
pub(crate) fn uncovered(
    start: u64,
    end: u64,
    later: impl Iterator<Item = (u64, u64)>,
) -> Vec<(u64, u64)> {
    let mut parts = vec![(start, end)];
    for (ws, we) in later {
        parts = parts
            .into_iter()
            .flat_map(|(s, e)| {
                if we <= s || ws >= e {
                    vec![(s, e)]
                } else {
                    let mut keep = Vec::with_capacity(2);
                    if s < ws {
                        keep.push((s, ws));
                    }
                    if we < e {
                        keep.push((we, e));
                    }
                    keep
                }
            })
            .collect();
        if parts.is_empty() {
            break;
        }
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: writeverf3 = writeverf3(*b"old-verf");

    fn data(len: usize, byte: u8) -> Arc<[u8]> {
        Arc::from(vec![byte; len])
    }

    #[test]
    fn replay_skips_bytes_a_later_write_covers() {
        let later = [(10, 20), (30, 35)];
        assert_eq!(
            uncovered(0, 40, later.into_iter()),
            vec![(0, 10), (20, 30), (35, 40)]
        );
    }

    #[test]
    fn replay_of_a_fully_rewritten_block_sends_nothing() {
        assert!(uncovered(0, 8192, [(0, 8192)].into_iter()).is_empty());
        assert_eq!(uncovered(0, 8192, [].into_iter()), vec![(0, 8192)]);
    }

    #[test]
    fn replay_skips_bytes_of_a_later_write_still_in_flight() {
        let mut log = WriteLog::default();
        let (a, b) = (data(100, 1), data(50, 2));
        log.submit(0, &a);
        log.acked(0, &a, 100, OLD, false);
        log.submit(25, &b); // newer, no reply yet
        let stale = log.snapshot();
        assert_eq!(stale.len(), 1);
        let segs = log.begin_repair(&stale);
        let got: Vec<(u64, usize)> = segs.iter().map(|s| (s.offset, s.data.len())).collect();
        assert_eq!(got, vec![(0, 25), (75, 25)]);
        assert!(segs.iter().all(|s| s.data.iter().all(|&x| x == 1)));
    }

    #[test]
    fn writes_overlapping_a_repair_are_held_back_until_it_ends() {
        let mut log = WriteLog::default();
        let a = data(100, 1);
        log.submit(1000, &a);
        log.acked(1000, &a, 100, OLD, false);
        let stale = log.snapshot();
        log.begin_repair(&stale);
        assert!(log.blocks(1050, 1));
        assert!(log.blocks(900, 101));
        assert!(!log.blocks(900, 100));
        assert!(!log.blocks(1100, 10));
        log.end_repair();
        assert!(!log.blocks(1050, 1));
    }

    #[test]
    fn a_reply_finds_its_entry_in_submission_order() {
        let mut log = WriteLog::default();
        let (a, b) = (data(10, 1), data(10, 2));
        log.submit(0, &a);
        log.submit(0, &b);
        // b answered first; a (older) must stay older.
        log.acked(0, &b, 10, OLD, false);
        log.acked(0, &a, 10, OLD, false);
        let snap = log.snapshot();
        assert!(Arc::ptr_eq(&snap[0].data, &a) && Arc::ptr_eq(&snap[1].data, &b));
        // The repair re-sends nothing of a: b covers it.
        let segs = log.begin_repair(&snap);
        assert_eq!(segs.len(), 1);
        assert!(Arc::ptr_eq(&snap[1].data, &b) && segs[0].data[0] == 2);
        assert_eq!(log.bytes(), 20);
        log.end_repair();
        log.committed(&snap);
        assert!(log.is_empty());
        assert_eq!((log.bytes(), log.logged()), (0, 0));
    }

    #[test]
    fn durable_writes_are_kept_only_while_an_older_unstable_one_needs_them() {
        let mut log = WriteLog::default();
        let (a, b, c) = (data(10, 1), data(10, 2), data(10, 3));
        // Nothing unstable: a durable reply is not kept at all.
        log.submit(0, &a);
        log.acked(0, &a, 10, OLD, true);
        assert!(log.is_empty());
        // Behind an unstable write it is kept, until that is committed.
        log.submit(0, &a);
        log.acked(0, &a, 10, OLD, false);
        log.submit(0, &b);
        log.acked(0, &b, 10, OLD, true);
        assert_eq!(log.logged(), 20);
        let snap = log.snapshot();
        assert!(log.begin_repair(&snap).is_empty());
        log.end_repair();
        // A write acknowledged during the fsync is not committed by it.
        log.submit(0, &c);
        log.acked(0, &c, 10, OLD, false);
        log.committed(&snap);
        assert_eq!(log.snapshot().len(), 1);
        assert_eq!((log.bytes(), log.logged()), (10, 10));
    }

    #[test]
    fn short_failed_and_abandoned_writes_leave_the_log_consistent() {
        let mut log = WriteLog::default();
        let (a, b) = (data(10, 1), data(10, 2));
        log.submit(0, &a);
        log.acked(0, &a, 4, OLD, false);
        assert_eq!((log.bytes(), log.snapshot()[0].end()), (4, 4));
        log.submit(0, &b);
        log.failed(0, &b);
        assert_eq!(log.entries.len(), 1);
        {
            let lost = data(10, 3);
            log.submit(0, &lost);
        }
        // Nobody can ever answer the lost one: dropped on the next commit.
        let snap = log.snapshot();
        log.committed(&snap);
        assert!(log.is_empty());
        assert_eq!((log.bytes(), log.logged()), (0, 0));
    }
}
