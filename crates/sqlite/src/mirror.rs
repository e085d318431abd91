//! What this process knows of a database file's bytes, and of its WAL's,
//! while it holds the database: reads of those bytes cost no round trip.
//!
//! The process-wide lock of [`crate::lock`] excludes every other process
//! while any connection of this one holds SHARED or more, or has the
//! WAL-index mapped (WAL mode: for as long as the database is open). While
//! it is held nobody else changes the database or its WAL, so bytes this
//! process wrote or read there since taking the lock are still the file's
//! bytes (for writes still in flight under write-behind, the mirror is the
//! newer copy). Every connection of the process shares one mirror per
//! file, which matters in WAL mode: SQLite empties a connection's page
//! cache whenever another connection committed, and a checkpoint reads
//! every frame it copies back from the WAL; on a local disk the kernel's
//! page cache answers those reads, here the mirror does.
//!
//! Validity: the [`crate::lock::Inode`] clears both mirrors whenever it
//! takes or drops the process-wide lock (another process may have used
//! the database in between; in rollback-journal modes the lock is kept
//! between transactions that follow each other within
//! [`crate::linger::period`], so there the mirror serves such a run of
//! transactions); the
//! VFS clears a mirror when a write or sync of its file fails (the server
//! may not have what it holds) and cuts it at a truncate. A read fills it
//! only if no write, truncate or clear came between asking the server and
//! the answer. It is bounded ([`limit`]): a write or read that would pass
//! the bound drops what was kept first.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, OnceLock};

/// Default bound per file, in MiB: twice the WAL of SQLite's default
/// auto-checkpoint (1000 pages of 4 KiB plus frame headers), and the whole
/// of a database of that size.
pub const DEFAULT_MIB: usize = 32;

/// The bound per file, from `DIRECTNFS_SQLITE_MIRROR_MIB` (read once; 0
/// turns the mirrors off), else [`DEFAULT_MIB`].
pub fn limit() -> usize {
    static LIMIT: OnceLock<usize> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        let mib = std::env::var("DIRECTNFS_SQLITE_MIRROR_MIB")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(DEFAULT_MIB);
        mib.saturating_mul(1 << 20)
    })
}

/// Byte ranges of one file and their contents.
#[derive(Debug)]
pub struct Mirror {
    inner: Mutex<Extents>,
}

/// Disjoint, non-adjacent extents (adjacent ones merge): start -> bytes.
#[derive(Debug, Default)]
struct Extents {
    map: BTreeMap<u64, Vec<u8>>,
    bytes: usize,
    limit: usize,
    /// Moves at every write, truncate and clear (see [`Mirror::fill`]).
    generation: u64,
}

impl Mirror {
    /// An empty mirror holding at most `limit` bytes (0: holds nothing).
    pub fn new(limit: usize) -> Mirror {
        Mirror {
            inner: Mutex::new(Extents {
                limit,
                ..Extents::default()
            }),
        }
    }

    fn extents(&self) -> MutexGuard<'_, Extents> {
        // Every update below leaves the map consistent before it can panic
        // (allocation aside), so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Fills `out` with the bytes at `off` if the mirror holds all of them.
    pub fn read(&self, off: u64, out: &mut [u8]) -> bool {
        self.extents().read(off, out)
    }

    /// Taken before asking the server for bytes the mirror lacked; passed
    /// to [`Mirror::fill`] with the answer.
    pub fn generation(&self) -> u64 {
        self.extents().generation
    }

    /// Keeps bytes read from the server at `off`, unless the mirror
    /// changed since `generation` (a write that raced the read is newer).
    pub fn fill(&self, generation: u64, off: u64, data: &[u8]) {
        let mut e = self.extents();
        if e.generation == generation {
            e.write(off, data);
        }
    }

    /// Records that `data` was written at `off`.
    pub fn write(&self, off: u64, data: &[u8]) {
        let mut e = self.extents();
        e.generation += 1;
        e.write(off, data);
    }

    /// The file was cut to `size` bytes.
    pub fn truncate(&self, size: u64) {
        let mut e = self.extents();
        e.generation += 1;
        e.truncate(size);
    }

    /// Forgets everything.
    pub fn clear(&self) {
        let mut e = self.extents();
        e.generation += 1;
        e.forget();
    }

    /// Bytes held.
    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.extents().bytes
    }
}

fn end_of(start: u64, v: &[u8]) -> u64 {
    start + v.len() as u64
}

impl Extents {
    fn forget(&mut self) {
        self.map.clear();
        self.bytes = 0;
    }

    fn read(&self, off: u64, out: &mut [u8]) -> bool {
        let Some(end) = off.checked_add(out.len() as u64) else {
            return false;
        };
        let Some((&start, v)) = self.map.range(..=off).next_back() else {
            return false;
        };
        if end > end_of(start, v) {
            return false;
        }
        let at = (off - start) as usize;
        out.copy_from_slice(&v[at..at + out.len()]);
        true
    }

    fn write(&mut self, off: u64, data: &[u8]) {
        let Some(end) = off.checked_add(data.len() as u64) else {
            return;
        };
        if data.is_empty() {
            return;
        }
        if data.len() > self.limit {
            // Cannot be kept; and what we held of this range is now old.
            self.forget();
            return;
        }
        // Every extent that overlaps or touches [off, end): they merge
        // into one, lowest start first.
        let touching: Vec<u64> = self
            .map
            .range(..=end)
            .rev()
            .take_while(|(&s, v)| end_of(s, v) >= off)
            .map(|(&s, _)| s)
            .collect();
        let new_start = touching.last().map_or(off, |&s| s.min(off));
        let new_end = touching
            .first()
            .and_then(|s| self.map.get(s).map(|v| end_of(*s, v)))
            .map_or(end, |e| e.max(end));
        let grows = (new_end - new_start) as usize
            - touching
                .iter()
                .filter_map(|s| self.map.get(s))
                .map(Vec::len)
                .sum::<usize>();
        if self.bytes + grows > self.limit {
            self.forget();
            self.map.insert(off, data.to_vec());
            self.bytes = data.len();
            return;
        }
        // The lowest extent's buffer becomes the merged one when it starts
        // first (an append to the WAL's one growing extent copies only the
        // new bytes).
        let reuse = touching.last().copied().filter(|&s| s == new_start);
        let mut merged = reuse.and_then(|s| self.map.remove(&s)).unwrap_or_default();
        merged.resize((new_end - new_start) as usize, 0);
        for s in touching.iter().filter(|&&s| Some(s) != reuse) {
            if let Some(v) = self.map.remove(s) {
                let at = (s - new_start) as usize;
                merged[at..at + v.len()].copy_from_slice(&v);
            }
        }
        let at = (off - new_start) as usize;
        merged[at..at + data.len()].copy_from_slice(data);
        self.bytes += grows;
        self.map.insert(new_start, merged);
    }

    fn truncate(&mut self, size: u64) {
        let cut: Vec<u64> = self.map.range(size..).map(|(&s, _)| s).collect();
        for s in cut {
            if let Some(v) = self.map.remove(&s) {
                self.bytes -= v.len();
            }
        }
        if let Some((&s, v)) = self.map.range_mut(..size).next_back() {
            let keep = (size - s) as usize;
            if v.len() > keep {
                self.bytes -= v.len() - keep;
                v.truncate(keep);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT_FOR_TESTS: usize = DEFAULT_MIB << 20;

    /// The model: one optional byte per offset.
    fn model_read(m: &[Option<u8>], off: usize, len: usize) -> Option<Vec<u8>> {
        m.get(off..off + len)?.iter().copied().collect()
    }

    #[test]
    fn appends_merge_into_one_extent_and_read_back() {
        let m = Mirror::new(LIMIT_FOR_TESTS);
        m.write(0, &[1; 32]);
        for i in 0..100u64 {
            m.write(32 + i * 10, &[i as u8; 10]);
        }
        assert_eq!(m.extents().map.len(), 1);
        assert_eq!(m.bytes(), 32 + 1000);
        let mut out = [0u8; 10];
        assert!(m.read(32 + 50 * 10, &mut out));
        assert_eq!(out, [50; 10]);
        let mut past = [0u8; 10];
        assert!(
            !m.read(32 + 1000 - 5, &mut past),
            "a read past what was written"
        );
    }

    #[test]
    fn gaps_are_not_served_and_overwrites_win() {
        let m = Mirror::new(LIMIT_FOR_TESTS);
        m.write(0, &[1; 10]);
        m.write(20, &[2; 10]);
        let mut out = [0u8; 15];
        assert!(!m.read(5, &mut out), "spans the gap 10..20");
        m.write(8, &[3; 14]); // bridges both
        assert!(m.read(5, &mut out));
        assert_eq!(&out[..3], &[1; 3]);
        assert_eq!(&out[3..], &[3; 12]);
        assert_eq!(m.extents().map.len(), 1);
        assert_eq!(m.bytes(), 30);
    }

    #[test]
    fn truncate_cuts_what_is_served() {
        let m = Mirror::new(LIMIT_FOR_TESTS);
        m.write(0, &[7; 100]);
        m.write(200, &[8; 100]);
        m.truncate(50);
        assert_eq!(m.bytes(), 50);
        let mut out = [0u8; 10];
        assert!(m.read(40, &mut out));
        assert!(!m.read(45, &mut out));
        assert!(!m.read(200, &mut out));
        m.truncate(0);
        assert_eq!(m.bytes(), 0);
    }

    #[test]
    fn the_limit_drops_what_was_kept() {
        let m = Mirror::new(100);
        m.write(0, &[1; 80]);
        m.write(80, &[2; 30]); // 110 > 100: start again with this write
        let mut out = [0u8; 10];
        assert!(!m.read(0, &mut out));
        assert!(m.read(80, &mut out));
        assert_eq!(out, [2; 10]);
        assert!(m.bytes() <= 100);
        m.write(0, &[3; 101]); // larger than the limit on its own
        assert_eq!(m.bytes(), 0);
        assert!(!m.read(80, &mut out));
    }

    #[test]
    fn a_fill_loses_to_a_write_that_came_after_the_read_was_asked() {
        let m = Mirror::new(LIMIT_FOR_TESTS);
        let g = m.generation();
        m.write(0, &[2; 10]); // raced the read
        m.fill(g, 0, &[1; 10]); // the older answer
        let mut out = [0u8; 10];
        assert!(m.read(0, &mut out));
        assert_eq!(out, [2; 10]);
        let g = m.generation();
        m.fill(g, 10, &[3; 5]);
        assert!(m.read(10, &mut out[..5]));
        assert_eq!(&out[..5], &[3; 5]);
        let g = m.generation();
        m.clear();
        m.fill(g, 0, &[4; 10]);
        assert!(!m.read(0, &mut out));
    }

    #[test]
    fn a_zero_limit_holds_nothing() {
        let m = Mirror::new(0);
        m.write(0, &[1; 10]);
        let mut out = [0u8; 1];
        assert!(!m.read(0, &mut out));
        assert_eq!(m.bytes(), 0);
    }

    #[test]
    fn random_writes_and_truncates_match_a_byte_model() {
        // A small deterministic generator (no extra dependency).
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        // Miri runs the unit tests too (scripts/test.sh): a few rounds
        // there, every one here.
        let rounds = if cfg!(miri) { 3 } else { 200 };
        for round in 0..rounds {
            let m = Mirror::new(LIMIT_FOR_TESTS);
            let mut model: Vec<Option<u8>> = vec![None; 512];
            for step in 0..60 {
                if next(10) == 0 {
                    let size = next(512) as usize;
                    m.truncate(size as u64);
                    model[size..].fill(None);
                } else {
                    let off = next(480) as usize;
                    let len = 1 + next(32) as usize;
                    let byte = (round * 60 + step) as u8;
                    m.write(off as u64, &vec![byte; len]);
                    model[off..off + len].fill(Some(byte));
                }
                let held = model.iter().filter(|b| b.is_some()).count();
                assert_eq!(m.bytes(), held, "round {round} step {step}");
                for _ in 0..8 {
                    let off = next(500) as usize;
                    let len = 1 + next(12) as usize;
                    let mut out = vec![0u8; len];
                    // Touching extents merge, so the mirror serves
                    // exactly the ranges the model holds.
                    let got = m.read(off as u64, &mut out).then_some(out);
                    assert_eq!(
                        got,
                        model_read(&model, off, len),
                        "round {round} step {step}"
                    );
                }
            }
        }
    }
}
