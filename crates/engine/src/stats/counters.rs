//! Live I/O counters: per-procedure calls, bytes, errors, recovery events,
//! in-flight depth and one latency histogram per [`ProcClass`].
//!
//! Everything is a relaxed atomic: the counters are statistics, not
//! synchronisation, and a snapshot taken while I/O runs is allowed to see one
//! call's effects partly. Nothing here locks on the record path, and the only
//! allocation is a class's histogram at its first record.

use std::fmt;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;

use super::histogram::{Histogram, HistogramSnapshot};

use directnfs_wire::nfs3::{
    NFSPROC3_ACCESS, NFSPROC3_COMMIT, NFSPROC3_CREATE, NFSPROC3_FSINFO, NFSPROC3_FSSTAT,
    NFSPROC3_GETATTR, NFSPROC3_LINK, NFSPROC3_LOOKUP, NFSPROC3_MKDIR, NFSPROC3_MKNOD,
    NFSPROC3_NULL, NFSPROC3_PATHCONF, NFSPROC3_READ, NFSPROC3_READDIR, NFSPROC3_READDIRPLUS,
    NFSPROC3_READLINK, NFSPROC3_REMOVE, NFSPROC3_RENAME, NFSPROC3_RMDIR, NFSPROC3_SETATTR,
    NFSPROC3_SYMLINK, NFSPROC3_WRITE,
};

/// Number of NFSv3 procedures (RFC 1813 §3.3: NULL = 0 .. COMMIT = 21).
pub const NFS3_PROC_COUNT: usize = directnfs_wire::nfs3::NFSPROC3_COUNT;

/// NFSv3 procedure names indexed by procedure number (RFC 1813 §3.3),
/// as the wire crate names them.
pub const PROC_NAMES: [&str; NFS3_PROC_COUNT] = directnfs_wire::nfs3::NFSPROC3_NAMES;

/// Key under which calls with a procedure number above 21 are counted.
pub const OTHER_PROC_NAME: &str = "OTHER";

/// The name of an NFSv3 procedure number, `None` above 21.
pub fn proc_name(proc_: u32) -> Option<&'static str> {
    directnfs_wire::nfs3::procedure_name(proc_)
}

/// Latency classes: procedures that cost alike share one histogram.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProcClass {
    /// READ.
    Read,
    /// WRITE.
    Write,
    /// COMMIT.
    Commit,
    /// GETATTR, SETATTR, LOOKUP, ACCESS, READLINK, FSSTAT, FSINFO, PATHCONF.
    Metadata,
    /// CREATE, MKDIR, SYMLINK, MKNOD, REMOVE, RMDIR, RENAME, LINK.
    Namespace,
    /// READDIR, READDIRPLUS.
    Directory,
    /// NULL (the ping used for path probing).
    Null,
}

impl ProcClass {
    /// Number of classes.
    pub const COUNT: usize = 7;

    /// Every class, in index order.
    pub const ALL: [ProcClass; ProcClass::COUNT] = [
        ProcClass::Read,
        ProcClass::Write,
        ProcClass::Commit,
        ProcClass::Metadata,
        ProcClass::Namespace,
        ProcClass::Directory,
        ProcClass::Null,
    ];

    /// The class of an NFSv3 procedure number, `None` above 21.
    pub const fn of(proc_: u32) -> Option<ProcClass> {
        Some(match proc_ {
            NFSPROC3_NULL => ProcClass::Null,
            NFSPROC3_READ => ProcClass::Read,
            NFSPROC3_WRITE => ProcClass::Write,
            NFSPROC3_COMMIT => ProcClass::Commit,
            NFSPROC3_GETATTR | NFSPROC3_SETATTR | NFSPROC3_LOOKUP | NFSPROC3_ACCESS
            | NFSPROC3_READLINK | NFSPROC3_FSSTAT | NFSPROC3_FSINFO | NFSPROC3_PATHCONF => {
                ProcClass::Metadata
            }
            NFSPROC3_CREATE | NFSPROC3_MKDIR | NFSPROC3_SYMLINK | NFSPROC3_MKNOD
            | NFSPROC3_REMOVE | NFSPROC3_RMDIR | NFSPROC3_RENAME | NFSPROC3_LINK => {
                ProcClass::Namespace
            }
            NFSPROC3_READDIR | NFSPROC3_READDIRPLUS => ProcClass::Directory,
            _ => return None,
        })
    }

    /// Position in [`ProcClass::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Lower-case name, used as JSON key and Prometheus `class` label.
    pub const fn as_str(self) -> &'static str {
        match self {
            ProcClass::Read => "read",
            ProcClass::Write => "write",
            ProcClass::Commit => "commit",
            ProcClass::Metadata => "metadata",
            ProcClass::Namespace => "namespace",
            ProcClass::Directory => "directory",
            ProcClass::Null => "null",
        }
    }
}

impl fmt::Display for ProcClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Call counters indexed by NFSv3 procedure number, plus one for anything
/// out of range (so a caller bug or a future procedure never panics).
pub struct ProcCounters {
    calls: [AtomicU64; NFS3_PROC_COUNT],
    other: AtomicU64,
}

impl ProcCounters {
    /// All zero.
    pub const fn new() -> Self {
        ProcCounters {
            calls: [const { AtomicU64::new(0) }; NFS3_PROC_COUNT],
            other: AtomicU64::new(0),
        }
    }

    #[inline]
    fn slot(&self, proc_: u32) -> &AtomicU64 {
        self.calls.get(proc_ as usize).unwrap_or(&self.other)
    }

    /// Counts one call of `proc_`.
    #[inline]
    pub fn record(&self, proc_: u32) {
        self.slot(proc_).fetch_add(1, Relaxed);
    }

    /// Calls of `proc_` so far (above 21: all out-of-range calls together).
    pub fn get(&self, proc_: u32) -> u64 {
        self.slot(proc_).load(Relaxed)
    }

    /// Current values: `[0..22]` by procedure number, then the out-of-range count.
    pub fn load_all(&self) -> ([u64; NFS3_PROC_COUNT], u64) {
        (
            std::array::from_fn(|i| self.calls[i].load(Relaxed)),
            self.other.load(Relaxed),
        )
    }
}

impl Default for ProcCounters {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for ProcCounters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (calls, other) = self.load_all();
        f.debug_map().entries(calls_by_name(&calls, other)).finish()
    }
}

/// Non-zero counts keyed by procedure name.
fn calls_by_name(
    calls: &[u64; NFS3_PROC_COUNT],
    other: u64,
) -> impl Iterator<Item = (&'static str, u64)> + '_ {
    PROC_NAMES
        .iter()
        .zip(calls)
        .map(|(&n, &c)| (n, c))
        .chain(std::iter::once((OTHER_PROC_NAME, other)))
        .filter(|&(_, c)| c != 0)
}

/// Live statistics for one scope: a channel, a path, a server or a file.
///
/// The driver calls `on_submit` when a call goes on the wire for the first
/// time and `on_complete` exactly once when it finishes (reply, or final
/// error); `on_retransmit`, `on_timeout`, `on_reconnect` and `on_failover` as
/// those events happen. A timed-out call is still in flight until its
/// `on_complete` (hard semantics: it is retried, not dropped).
///
/// Under half a KiB, plus 4 KiB for each class's histogram, made at the
/// class's first completion (a file that is only read carries one: a new
/// process that opens a few files touches a few pages, not seven per
/// file); share it behind an `Arc` or embed it in a long-lived structure
/// rather than creating one per I/O.
pub struct IoStats {
    calls: ProcCounters,
    bytes_read: AtomicU64,
    bytes_written: AtomicU64,
    errors: AtomicU64,
    retransmits: AtomicU64,
    timeouts: AtomicU64,
    reconnects: AtomicU64,
    failovers: AtomicU64,
    lost: AtomicU64,
    moved_same_path: AtomicU64,
    moved_other_path: AtomicU64,
    hedges_sent: AtomicU64,
    hedges_won: AtomicU64,
    // Signed so an unmatched completion shows as 0, not as 2^64 - 1.
    inflight: AtomicI64,
    inflight_peak: AtomicU64,
    // Signed for the same reason as `inflight`.
    write_behind_bytes: AtomicI64,
    write_behind_errors: AtomicU64,
    fsync_waits: AtomicU64,
    fsync_wait_ns: AtomicU64,
    latency: [Latencies; ProcClass::COUNT],
}

/// Samples a class keeps in place before it gets its histogram.
const INLINE: usize = 4;

/// The latencies of one class: the first [`INLINE`] samples in place, the
/// rest in a histogram made at the next one. A file read once or twice (a
/// new PostgreSQL backend's `pg_filenode.map`) never zeroes the 4 KiB of a
/// histogram's buckets.
#[derive(Debug)]
struct Latencies {
    /// The first samples, in ns plus one (0: not written yet).
    first: [AtomicU64; INLINE],
    /// Samples recorded before the histogram was made.
    seen: AtomicU64,
    /// Every sample after the first [`INLINE`].
    rest: OnceLock<Box<Histogram>>,
}

impl Latencies {
    const fn new() -> Self {
        Latencies {
            first: [const { AtomicU64::new(0) }; INLINE],
            seen: AtomicU64::new(0),
            rest: OnceLock::new(),
        }
    }

    #[inline]
    fn record(&self, ns: u64) {
        // Once the histogram is made (a busy file or channel), one load
        // and the histogram's own record, as before there were first
        // samples.
        if let Some(h) = self.rest.get() {
            h.record(ns);
            return;
        }
        let i = self.seen.fetch_add(1, Relaxed) as usize;
        match self.first.get(i) {
            Some(slot) => slot.store(ns.saturating_add(1), Relaxed),
            None => self
                .rest
                .get_or_init(|| Box::new(Histogram::new()))
                .record(ns),
        }
    }

    /// Every sample (one being recorded at this moment may be missing).
    fn snapshot(&self) -> HistogramSnapshot {
        let mut all = self
            .rest
            .get()
            .map_or_else(HistogramSnapshot::default, |h| h.snapshot());
        let first = Histogram::new();
        for v in &self.first {
            match v.load(Relaxed) {
                0 => {}
                v => first.record(v - 1),
            }
        }
        all.merge(&first.snapshot());
        all
    }
}

impl IoStats {
    /// All zero.
    pub const fn new() -> Self {
        IoStats {
            calls: ProcCounters::new(),
            bytes_read: AtomicU64::new(0),
            bytes_written: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            retransmits: AtomicU64::new(0),
            timeouts: AtomicU64::new(0),
            reconnects: AtomicU64::new(0),
            failovers: AtomicU64::new(0),
            lost: AtomicU64::new(0),
            moved_same_path: AtomicU64::new(0),
            moved_other_path: AtomicU64::new(0),
            hedges_sent: AtomicU64::new(0),
            hedges_won: AtomicU64::new(0),
            inflight: AtomicI64::new(0),
            inflight_peak: AtomicU64::new(0),
            write_behind_bytes: AtomicI64::new(0),
            write_behind_errors: AtomicU64::new(0),
            fsync_waits: AtomicU64::new(0),
            fsync_wait_ns: AtomicU64::new(0),
            latency: [const { Latencies::new() }; ProcClass::COUNT],
        }
    }

    /// A call of NFSv3 procedure `proc_` was sent: counts it and raises the
    /// in-flight depth (and its peak).
    #[inline]
    pub fn on_submit(&self, proc_: u32) {
        self.calls.record(proc_);
        let now = self.inflight.fetch_add(1, Relaxed).saturating_add(1);
        let now = u64::try_from(now).unwrap_or(0);
        if now > self.inflight_peak.load(Relaxed) {
            self.inflight_peak.fetch_max(now, Relaxed);
        }
    }

    /// A call submitted with [`on_submit`](Self::on_submit) finished after
    /// `latency_ns` (first send to final reply), moving the given payload
    /// bytes; `ok == false` counts an error (NFS status other than NFS3_OK,
    /// RPC failure, or giving up). The latency goes to the procedure's class
    /// histogram; out-of-range procedure numbers have no class and no latency.
    #[inline]
    pub fn on_complete(
        &self,
        proc_: u32,
        latency_ns: u64,
        bytes_read: u64,
        bytes_written: u64,
        ok: bool,
    ) {
        self.inflight.fetch_sub(1, Relaxed);
        if let Some(class) = ProcClass::of(proc_) {
            self.latency[class.index()].record(latency_ns);
        }
        if bytes_read != 0 {
            self.bytes_read.fetch_add(bytes_read, Relaxed);
        }
        if bytes_written != 0 {
            self.bytes_written.fetch_add(bytes_written, Relaxed);
        }
        if !ok {
            self.errors.fetch_add(1, Relaxed);
        }
    }

    /// An attempt of a call submitted with [`on_submit`](Self::on_submit)
    /// ended without a reply (its connection failed, or it timed out): an
    /// error completion like [`on_complete`](Self::on_complete), counted
    /// apart so that replies received = calls - lost - in flight.
    #[inline]
    pub fn on_lost(&self, proc_: u32, latency_ns: u64) {
        self.lost.fetch_add(1, Relaxed);
        self.on_complete(proc_, latency_ns, 0, 0, false);
    }

    /// A call whose attempt on this scope was lost was sent again, on a
    /// channel of the same network path or of another one.
    #[inline]
    pub fn on_moved(&self, to_other_path: bool) {
        let c = if to_other_path {
            &self.moved_other_path
        } else {
            &self.moved_same_path
        };
        c.fetch_add(1, Relaxed);
    }

    /// A READ was hedged: sent a second time on this scope while its first
    /// copy was outstanding elsewhere (also counted by
    /// [`on_submit`](Self::on_submit); see `crate::hedge`).
    #[inline]
    pub fn on_hedge_sent(&self) {
        self.hedges_sent.fetch_add(1, Relaxed);
    }

    /// A hedge sent on this scope was answered before its first copy.
    #[inline]
    pub fn on_hedge_won(&self) {
        self.hedges_won.fetch_add(1, Relaxed);
    }

    /// The copy of a hedged READ on this scope was withdrawn because the
    /// other copy was answered first: it ends without a reply used, counted
    /// as lost (so replies received = calls - lost - in flight still
    /// holds) but not as an error.
    #[inline]
    pub fn on_hedge_dropped(&self) {
        self.lost.fetch_add(1, Relaxed);
        self.inflight.fetch_sub(1, Relaxed);
    }

    /// A call was sent again (same XID or a new one) after a timeout or a
    /// lost connection.
    #[inline]
    pub fn on_retransmit(&self) {
        self.retransmits.fetch_add(1, Relaxed);
    }

    /// A call was moved to another path.
    #[inline]
    pub fn on_failover(&self) {
        self.failovers.fetch_add(1, Relaxed);
    }

    /// A connection was re-established.
    #[inline]
    pub fn on_reconnect(&self) {
        self.reconnects.fetch_add(1, Relaxed);
    }

    /// A call's timer expired without a reply.
    #[inline]
    pub fn on_timeout(&self) {
        self.timeouts.fetch_add(1, Relaxed);
    }

    /// Write-behind: `bytes` more (positive) or fewer (negative) bytes of
    /// WRITEs are in flight that the writer did not wait for.
    #[inline]
    pub fn on_write_behind(&self, bytes: i64) {
        self.write_behind_bytes.fetch_add(bytes, Relaxed);
    }

    /// A write-behind WRITE failed (its error waits for the next `fsync`).
    #[inline]
    pub fn on_write_behind_error(&self) {
        self.write_behind_errors.fetch_add(1, Relaxed);
    }

    /// An `fsync` waited `ns` for write-behind WRITEs before its COMMIT.
    #[inline]
    pub fn on_fsync_wait(&self, ns: u64) {
        self.fsync_waits.fetch_add(1, Relaxed);
        self.fsync_wait_ns.fetch_add(ns, Relaxed);
    }

    /// The latencies of one class (e.g. for a benchmark's own report).
    pub fn latency(&self, class: ProcClass) -> HistogramSnapshot {
        self.latency[class.index()].snapshot()
    }

    /// The per-procedure call counters.
    pub fn calls(&self) -> &ProcCounters {
        &self.calls
    }

    /// Calls in flight now.
    pub fn inflight(&self) -> u64 {
        u64::try_from(self.inflight.load(Relaxed)).unwrap_or(0)
    }

    /// A mergeable copy with full histograms (for summing channels into paths
    /// and servers before summarising).
    pub fn raw_snapshot(&self) -> RawIoSnapshot {
        let (calls, other_calls) = self.calls.load_all();
        RawIoSnapshot {
            calls,
            other_calls,
            bytes_read: self.bytes_read.load(Relaxed),
            bytes_written: self.bytes_written.load(Relaxed),
            errors: self.errors.load(Relaxed),
            retransmits: self.retransmits.load(Relaxed),
            timeouts: self.timeouts.load(Relaxed),
            reconnects: self.reconnects.load(Relaxed),
            failovers: self.failovers.load(Relaxed),
            lost: self.lost.load(Relaxed),
            moved_same_path: self.moved_same_path.load(Relaxed),
            moved_other_path: self.moved_other_path.load(Relaxed),
            hedges_sent: self.hedges_sent.load(Relaxed),
            hedges_won: self.hedges_won.load(Relaxed),
            inflight: self.inflight(),
            inflight_peak: self.inflight_peak.load(Relaxed),
            write_behind_bytes: u64::try_from(self.write_behind_bytes.load(Relaxed)).unwrap_or(0),
            write_behind_errors: self.write_behind_errors.load(Relaxed),
            fsync_waits: self.fsync_waits.load(Relaxed),
            fsync_wait_ns: self.fsync_wait_ns.load(Relaxed),
            latency: std::array::from_fn(|i| self.latency[i].snapshot()),
        }
    }
}

impl Default for IoStats {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for IoStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IoStats")
            .field("calls", &self.calls)
            .field("bytes_read", &self.bytes_read.load(Relaxed))
            .field("bytes_written", &self.bytes_written.load(Relaxed))
            .field("errors", &self.errors.load(Relaxed))
            .field("inflight", &self.inflight())
            .finish_non_exhaustive()
    }
}

/// A copy of an [`IoStats`] with full histograms, so several scopes can be
/// added up exactly (percentiles of a sum need the buckets, not summaries).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct RawIoSnapshot {
    /// Calls by NFSv3 procedure number.
    pub calls: [u64; NFS3_PROC_COUNT],
    /// Calls with a procedure number above 21.
    pub other_calls: u64,
    /// READ payload bytes received.
    pub bytes_read: u64,
    /// WRITE payload bytes sent.
    pub bytes_written: u64,
    /// Calls that completed with an error.
    pub errors: u64,
    /// Calls sent again.
    pub retransmits: u64,
    /// Timer expiries.
    pub timeouts: u64,
    /// Connections re-established.
    pub reconnects: u64,
    /// Calls moved off a failed channel.
    pub failovers: u64,
    /// Attempts that ended without a reply (see [`IoStats::on_lost`]).
    pub lost: u64,
    /// Lost attempts sent again on a channel of the same path.
    pub moved_same_path: u64,
    /// Lost attempts sent again on a channel of another path.
    pub moved_other_path: u64,
    /// READs hedged: sent a second time while outstanding.
    pub hedges_sent: u64,
    /// Hedges answered before the first copy.
    pub hedges_won: u64,
    /// Calls in flight when the copy was taken.
    pub inflight: u64,
    /// Highest in-flight depth seen. After a merge: the sum of the parts'
    /// peaks, an upper bound (the parts may have peaked at different times).
    pub inflight_peak: u64,
    /// Bytes of write-behind WRITEs in flight when the copy was taken.
    pub write_behind_bytes: u64,
    /// Write-behind WRITEs that failed (each reported by an `fsync`).
    pub write_behind_errors: u64,
    /// `fsync`s that waited for write-behind WRITEs.
    pub fsync_waits: u64,
    /// Total time those `fsync`s waited, nanoseconds.
    pub fsync_wait_ns: u64,
    /// Latency per class, indexed by [`ProcClass::index`].
    pub latency: [HistogramSnapshot; ProcClass::COUNT],
}

impl RawIoSnapshot {
    /// Adds `other` into `self`.
    pub fn merge(&mut self, other: &RawIoSnapshot) {
        for (a, b) in self.calls.iter_mut().zip(&other.calls) {
            *a = a.wrapping_add(*b);
        }
        let add = |a: &mut u64, b: u64| *a = a.wrapping_add(b);
        add(&mut self.other_calls, other.other_calls);
        add(&mut self.bytes_read, other.bytes_read);
        add(&mut self.bytes_written, other.bytes_written);
        add(&mut self.errors, other.errors);
        add(&mut self.retransmits, other.retransmits);
        add(&mut self.timeouts, other.timeouts);
        add(&mut self.reconnects, other.reconnects);
        add(&mut self.failovers, other.failovers);
        add(&mut self.lost, other.lost);
        add(&mut self.moved_same_path, other.moved_same_path);
        add(&mut self.moved_other_path, other.moved_other_path);
        add(&mut self.hedges_sent, other.hedges_sent);
        add(&mut self.hedges_won, other.hedges_won);
        add(&mut self.inflight, other.inflight);
        add(&mut self.inflight_peak, other.inflight_peak);
        add(&mut self.write_behind_bytes, other.write_behind_bytes);
        add(&mut self.write_behind_errors, other.write_behind_errors);
        add(&mut self.fsync_waits, other.fsync_waits);
        add(&mut self.fsync_wait_ns, other.fsync_wait_ns);
        for (a, b) in self.latency.iter_mut().zip(&other.latency) {
            a.merge(b);
        }
    }

    /// Calls by procedure name, non-zero ones only, RFC 1813 order, then
    /// [`OTHER_PROC_NAME`].
    pub fn calls_by_name(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        calls_by_name(&self.calls, self.other_calls)
    }

    /// Every call sent (first attempts and retransmissions).
    pub fn sends(&self) -> u64 {
        self.calls
            .iter()
            .fold(self.other_calls, |a, &c| a.wrapping_add(c))
    }

    /// Replies received: sends that were neither lost nor are in flight.
    pub fn receives(&self) -> u64 {
        self.sends()
            .saturating_sub(self.lost)
            .saturating_sub(self.inflight)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const READ: u32 = 6;
    const WRITE: u32 = 7;
    const GETATTR: u32 = 1;

    #[test]
    #[cfg_attr(miri, ignore = "slow under Miri: large histograms")]
    fn proc_names_follow_rfc_1813_numbering() {
        assert_eq!(proc_name(0), Some("NULL"));
        assert_eq!(proc_name(1), Some("GETATTR"));
        assert_eq!(proc_name(6), Some("READ"));
        assert_eq!(proc_name(7), Some("WRITE"));
        assert_eq!(proc_name(17), Some("READDIRPLUS"));
        assert_eq!(proc_name(21), Some("COMMIT"));
        assert_eq!(proc_name(22), None);
    }

    #[test]
    #[cfg_attr(miri, ignore = "slow under Miri: large histograms")]
    fn a_classs_first_latencies_are_kept_in_place_and_counted_with_the_rest() {
        let s = IoStats::new();
        for ns in [5_000, 70_000, 1_000] {
            s.on_submit(READ);
            s.on_complete(READ, ns, 0, 0, true);
        }
        let read = &s.latency[ProcClass::Read.index()];
        assert!(read.rest.get().is_none(), "a histogram for three samples");
        let l = s.latency(ProcClass::Read);
        assert_eq!(
            (l.count(), l.min(), l.max(), l.sum()),
            (3, 1_000, 70_000, 76_000)
        );
        for ns in 1..=10u64 {
            s.on_complete(READ, ns * 100_000, 0, 0, true);
        }
        assert!(read.rest.get().is_some(), "the fifth sample on make one");
        let l = s.raw_snapshot().latency[ProcClass::Read.index()].clone();
        assert_eq!(l.count(), 13);
        assert_eq!((l.min(), l.max()), (1_000, 1_000_000));
        assert_eq!(l.sum(), 76_000 + 5_500_000);
    }

    #[test]
    fn every_procedure_has_a_class_and_none_beyond_21() {
        use ProcClass::*;
        let want = [
            Null, Metadata, Metadata, Metadata, Metadata, Metadata, Read, Write, Namespace,
            Namespace, Namespace, Namespace, Namespace, Namespace, Namespace, Namespace, Directory,
            Directory, Metadata, Metadata, Metadata, Commit,
        ];
        for (p, w) in want.iter().enumerate() {
            assert_eq!(ProcClass::of(p as u32), Some(*w), "{}", PROC_NAMES[p]);
        }
        assert_eq!(ProcClass::of(22), None);
        assert_eq!(ProcClass::of(u32::MAX), None);
    }

    #[test]
    fn class_index_matches_position_in_all() {
        for (i, c) in ProcClass::ALL.iter().enumerate() {
            assert_eq!(c.index(), i);
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "slow under Miri: large histograms")]
    fn out_of_range_procedures_count_as_other_without_panicking() {
        let s = IoStats::new();
        s.on_submit(99);
        s.on_complete(99, 1_000, 0, 0, false);
        assert_eq!(s.calls().get(99), 1);
        let raw = s.raw_snapshot();
        assert_eq!(raw.calls_by_name().collect::<Vec<_>>(), [("OTHER", 1)]);
        assert_eq!(raw.errors, 1);
        assert!(raw.latency.iter().all(HistogramSnapshot::is_empty));
    }

    #[test]
    #[cfg_attr(miri, ignore = "slow under Miri: large histograms")]
    fn submit_and_complete_track_calls_bytes_errors_and_latency() {
        let s = IoStats::new();
        s.on_submit(READ);
        s.on_submit(WRITE);
        s.on_submit(GETATTR);
        s.on_complete(READ, 200_000, 8192, 0, true);
        s.on_complete(WRITE, 500_000, 0, 8192, true);
        s.on_complete(GETATTR, 50_000, 0, 0, false);
        let raw = s.raw_snapshot();
        assert_eq!(
            raw.calls_by_name().collect::<Vec<_>>(),
            [("GETATTR", 1), ("READ", 1), ("WRITE", 1)]
        );
        assert_eq!((raw.bytes_read, raw.bytes_written), (8192, 8192));
        assert_eq!(raw.errors, 1);
        assert_eq!((raw.inflight, raw.inflight_peak), (0, 3));
        assert_eq!((raw.sends(), raw.receives()), (3, 3));
        assert_eq!(raw.latency[ProcClass::Read.index()].max(), 200_000);
        assert_eq!(raw.latency[ProcClass::Write.index()].count(), 1);
        assert_eq!(raw.latency[ProcClass::Metadata.index()].count(), 1);
    }

    #[test]
    fn recovery_events_are_counted() {
        let s = IoStats::new();
        s.on_retransmit();
        s.on_retransmit();
        s.on_timeout();
        s.on_reconnect();
        s.on_failover();
        s.on_moved(true);
        s.on_moved(false);
        s.on_moved(true);
        let raw = s.raw_snapshot();
        assert_eq!(
            (raw.retransmits, raw.timeouts, raw.reconnects, raw.failovers),
            (2, 1, 1, 1)
        );
        assert_eq!((raw.moved_same_path, raw.moved_other_path), (1, 2));
    }

    #[test]
    #[cfg_attr(miri, ignore = "slow under Miri: large histograms")]
    fn lost_attempts_are_errors_and_not_receives() {
        let s = IoStats::new();
        for _ in 0..4 {
            s.on_submit(READ);
        }
        s.on_complete(READ, 1_000, 8192, 0, true);
        s.on_lost(READ, 2_000);
        let raw = s.raw_snapshot();
        assert_eq!((raw.sends(), raw.lost, raw.inflight), (4, 1, 2));
        assert_eq!(raw.receives(), 1);
        assert_eq!(raw.errors, 1);
    }

    #[test]
    fn unmatched_completion_shows_zero_inflight_not_wraparound() {
        let s = IoStats::new();
        s.on_complete(READ, 1, 0, 0, true);
        assert_eq!(s.inflight(), 0);
        s.on_submit(READ);
        assert_eq!(s.raw_snapshot().inflight, 0);
    }

    #[test]
    #[cfg_attr(miri, ignore = "slow under Miri: large histograms")]
    fn inflight_peak_survives_completions() {
        let s = IoStats::new();
        for _ in 0..5 {
            s.on_submit(READ);
        }
        for _ in 0..4 {
            s.on_complete(READ, 1_000, 1, 0, true);
        }
        let raw = s.raw_snapshot();
        assert_eq!((raw.inflight, raw.inflight_peak), (1, 5));
    }

    #[test]
    #[cfg_attr(miri, ignore = "slow under Miri: large histograms")]
    fn merged_raw_snapshots_add_up_and_keep_exact_percentiles() {
        let (a, b, both) = (IoStats::new(), IoStats::new(), IoStats::new());
        for i in 0..100u64 {
            let s = if i % 2 == 0 { &a } else { &b };
            for t in [s, &both] {
                t.on_submit(READ);
                t.on_complete(READ, 10_000 + i * 1_000, 4096, 0, true);
            }
        }
        let mut m = a.raw_snapshot();
        m.merge(&b.raw_snapshot());
        let mut want = both.raw_snapshot();
        // Peaks are summed by merge (an upper bound); the rest is exact.
        want.inflight_peak = 2;
        assert_eq!(m, want);
        let read = ProcClass::Read.index();
        assert_eq!(
            m.latency[read].percentile(99.0),
            want.latency[read].percentile(99.0)
        );
    }

    #[test]
    #[cfg_attr(miri, ignore = "slow under Miri: large histograms")]
    // The driver's threads update these atomics at once: the one place
    // the engine's tests need threads (clippy.toml keeps them out).
    #[allow(clippy::disallowed_methods)]
    fn concurrent_submit_complete_balances_to_zero_inflight() {
        let s = IoStats::new();
        std::thread::scope(|sc| {
            for _ in 0..4 {
                sc.spawn(|| {
                    for _ in 0..5_000 {
                        s.on_submit(WRITE);
                        s.on_complete(WRITE, 30_000, 0, 512, true);
                    }
                });
            }
        });
        let raw = s.raw_snapshot();
        assert_eq!(raw.calls[WRITE as usize], 20_000);
        assert_eq!(raw.bytes_written, 20_000 * 512);
        assert_eq!(raw.inflight, 0);
        assert!((1..=4).contains(&raw.inflight_peak));
        assert_eq!(raw.latency[ProcClass::Write.index()].count(), 20_000);
    }
}
