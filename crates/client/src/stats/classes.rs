//! Statistics per I/O class (`log`, `data`, `bulk`; see
//! `directnfs_engine::class`): the reads and writes the files of each class
//! made, with their latency as the caller saw it (from the call into
//! `read_at`/`write_at` or a batch's submit to its return, every `rsize`/
//! `wsize` piece and retry included). A DBA compares the log class's p99
//! with and without a scan running beside it.

use std::collections::BTreeMap;

use directnfs_engine::stats::IoStats;
use directnfs_engine::IoClass;

use super::snapshot::IoSnapshot;

/// One [`IoStats`] per class, indexed by [`IoClass::index`].
#[derive(Debug, Default)]
pub(crate) struct IoClassStats([IoStats; 3]);

impl IoClassStats {
    /// One read or write of a file of `class` ended after `latency_ns`,
    /// moving `bytes_read`/`bytes_written`; `proc_` is the NFSv3 procedure
    /// it stands for (READ or WRITE, also on NFSv4.1).
    pub(crate) fn record(
        &self,
        class: IoClass,
        proc_: u32,
        latency_ns: u64,
        bytes_read: u64,
        bytes_written: u64,
        ok: bool,
    ) {
        let s = &self.0[class.index()];
        s.on_submit(proc_);
        s.on_complete(proc_, latency_ns, bytes_read, bytes_written, ok);
    }

    /// The classes that made a read or write, by name.
    pub(crate) fn snapshot(&self) -> BTreeMap<String, IoSnapshot> {
        IoClass::ALL
            .iter()
            .map(|&c| (c, IoSnapshot::from_raw(&self.0[c.index()].raw_snapshot())))
            .filter(|(_, io)| io.calls() > 0)
            .map(|(c, io)| (c.name().to_owned(), io))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const READ: u32 = 6;
    const WRITE: u32 = 7;

    #[test]
    fn each_class_counts_its_own_calls_bytes_and_latency() {
        let s = IoClassStats::default();
        for _ in 0..3 {
            s.record(IoClass::Log, WRITE, 200_000, 0, 8192, true);
        }
        s.record(IoClass::Bulk, READ, 9_000_000, 1 << 20, 0, true);
        s.record(IoClass::Bulk, READ, 11_000_000, 1 << 20, 0, false);
        let snap = s.snapshot();
        assert_eq!(
            snap.keys().collect::<Vec<_>>(),
            ["bulk", "log"],
            "data made no call"
        );
        let log = &snap["log"];
        assert_eq!((log.writes, log.reads, log.bytes_written), (3, 0, 3 * 8192));
        assert_eq!(log.latency_us["write"].count, 3);
        assert!(log.latency_us["write"].p99 >= 190.0 && log.latency_us["write"].p99 <= 210.0);
        let bulk = &snap["bulk"];
        assert_eq!((bulk.reads, bulk.bytes_read, bulk.errors), (2, 2 << 20, 1));
        assert!(
            bulk.latency_us["read"].p50 >= 8_000.0,
            "{:?}",
            bulk.latency_us
        );
    }
}
