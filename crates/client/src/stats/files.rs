//! The per-file records behind v$dnfs_files: one [`FileRecord`] per path
//! opened through a client, bounded in number ([`MAX_FILE_STATS`]).

use std::collections::HashMap;
use std::ops::Deref;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use directnfs_engine::stats::{IoStats, RawIoSnapshot};

use super::snapshot::{FileStats, IoSnapshot, EVICTED_FILES};

/// Per-file statistics records (v$dnfs_files) kept before those of files
/// no longer open are dropped, their counters added to one
/// [`EVICTED_FILES`] record. A record is at most about 30 KiB (one 4 KiB
/// latency histogram per class of calls made on the file, seven classes),
/// so this bounds what closed files cost at about 30 MiB however many
/// distinct paths a program opens. Files still open are never
/// dropped: with more open than this, the table holds them all and the
/// next sweep waits until it has doubled.
pub const MAX_FILE_STATS: usize = 1024;

/// `size` of a record whose size was never seen.
const UNKNOWN: u64 = u64::MAX;

/// The counters of one file and the size last seen.
#[derive(Debug)]
pub(crate) struct FileRecord {
    io: IoStats,
    size: AtomicU64,
}

impl FileRecord {
    fn new() -> Self {
        FileRecord {
            io: IoStats::new(),
            size: AtomicU64::new(UNKNOWN),
        }
    }

    /// The file is `size` bytes long now (attributes, `set_len`).
    pub(crate) fn set_size(&self, size: u64) {
        self.size.store(size.min(UNKNOWN - 1), Relaxed);
    }

    /// A write ended at `end`: the file is at least that long.
    pub(crate) fn extend_to(&self, end: u64) {
        let end = end.min(UNKNOWN - 1);
        // Read first: a write inside the file (the common case for a
        // database) changes nothing and must not write the shared line.
        let now = self.size.load(Relaxed);
        if now != UNKNOWN && now >= end {
            return;
        }
        let _ = self.size.fetch_update(Relaxed, Relaxed, |s| {
            (s == UNKNOWN || s < end).then_some(end)
        });
    }

    fn size(&self) -> Option<u64> {
        Some(self.size.load(Relaxed)).filter(|&s| s != UNKNOWN)
    }
}

impl Deref for FileRecord {
    type Target = IoStats;

    fn deref(&self) -> &IoStats {
        &self.io
    }
}

/// Per-file statistics records, bounded by [`MAX_FILE_STATS`].
#[derive(Debug)]
pub(crate) struct FileStatsTable {
    by_path: HashMap<String, Arc<FileRecord>>,
    /// The summed counters of the records dropped, and how many.
    evicted: Option<RawIoSnapshot>,
    /// Size of `by_path` at which the next sweep runs.
    sweep_at: usize,
}

impl Default for FileStatsTable {
    fn default() -> Self {
        Self {
            by_path: HashMap::new(),
            evicted: None,
            sweep_at: MAX_FILE_STATS,
        }
    }
}

impl FileStatsTable {
    /// The record of `path`, made (and the table swept) if needed.
    pub(crate) fn get(&mut self, path: &str) -> Arc<FileRecord> {
        if let Some(s) = self.by_path.get(path) {
            return Arc::clone(s);
        }
        if self.by_path.len() >= self.sweep_at {
            self.sweep();
        }
        let s = Arc::new(FileRecord::new());
        self.by_path.insert(path.to_string(), Arc::clone(&s));
        s
    }

    /// Drops the records no open `File` holds (the table's reference is
    /// the only one; no new one can be taken without the table's lock),
    /// adding their counters to the evicted total.
    fn sweep(&mut self) {
        let evicted = &mut self.evicted;
        self.by_path.retain(|_, s| {
            if Arc::strong_count(s) > 1 {
                return true;
            }
            let raw = s.raw_snapshot();
            match evicted {
                Some(total) => {
                    // The highest peak of any one file, not their sum.
                    let peak = total.inflight_peak.max(raw.inflight_peak);
                    total.merge(&raw);
                    total.inflight_peak = peak;
                }
                None => *evicted = Some(raw),
            }
            false
        });
        // Open files beyond the cap: sweep again only once the table has
        // doubled, so opening a file costs O(1) amortised.
        self.sweep_at = MAX_FILE_STATS.max(2 * self.by_path.len());
    }

    pub(crate) fn snapshot(&self, server: &str) -> Vec<FileStats> {
        let mut v: Vec<FileStats> = self
            .by_path
            .iter()
            .map(|(path, s)| FileStats {
                path: path.clone(),
                server: server.to_string(),
                size: s.size(),
                pid: None,
                totals: IoSnapshot::from_raw(&s.raw_snapshot()),
            })
            .collect();
        v.sort_by(|a, b| a.path.cmp(&b.path));
        if let Some(raw) = &self.evicted {
            v.push(FileStats {
                path: EVICTED_FILES.to_string(),
                server: server.to_string(),
                totals: IoSnapshot::from_raw(raw),
                ..FileStats::default()
            });
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_is_unknown_until_seen_then_raised_by_writes_and_set_exactly() {
        let r = FileRecord::new();
        assert_eq!(r.size(), None);
        r.extend_to(8192);
        assert_eq!(r.size(), Some(8192));
        r.extend_to(4096);
        assert_eq!(
            r.size(),
            Some(8192),
            "a write inside the file keeps its size"
        );
        r.set_size(100);
        assert_eq!(r.size(), Some(100), "set_len/attributes set it exactly");
    }
}
