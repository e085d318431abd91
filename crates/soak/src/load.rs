//! The load: threads that write and read checksummed 8 KiB blocks
//! (`directnfs_testkit::blocks`) while faults come and go, and record every
//! acknowledgement in a [`Ledger`] so that each read, and the final pass,
//! can tell a lost, stale, torn or misplaced block from a legitimate one.
//!
//! A file is shared by several workers; worker `slot` of `n` owns the
//! blocks `b % n == slot`, so a block has one writer and at most one I/O in
//! flight. FILE_SYNC files count a write durable when it is acknowledged;
//! `unstable` files only once an fsync that started after the
//! acknowledgement returned (every [`FSYNC_EVERY`] writes, and at the end).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use directnfs::{Batch, Client, File};
use directnfs_testkit::blocks::{encode_block, Durability, Ledger, BLOCK_SIZE};

use crate::schedule::Rng;

/// Blocks per file: 16 MiB.
pub const BLOCKS_PER_FILE: u64 = 2048;
/// Unstable writers fsync after this many acknowledged writes.
pub const FSYNC_EVERY: usize = 16;
/// Operations a batch worker keeps in flight.
pub const BATCH_DEPTH: usize = 8;
/// Percent of operations that are writes.
const WRITE_PCT: u64 = 50;
/// An operation slower than this counts as a stall in the report.
pub const SLOW_OP: Duration = Duration::from_secs(1);
/// Errors printed and kept verbatim (all are counted, by kind).
const ERRORS_KEPT: usize = 10;

/// Which API a worker uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// `File::read_exact_at` / `write_at` / `fsync`.
    Blocking,
    /// `Batch::read_owned` / `write_owned` / `wait`, [`BATCH_DEPTH`] deep.
    Batch,
}

/// One file under load, its durability mode and its ledger.
#[derive(Debug)]
pub struct FileLoad {
    /// `file_sync` or `unstable`, for messages.
    pub mode: &'static str,
    /// Its path on the server.
    pub path: String,
    /// What was written to it.
    pub ledger: Ledger,
    /// Writes count as durable only after an fsync.
    pub unstable: bool,
    /// Workers sharing the file.
    pub workers: u64,
}

impl FileLoad {
    fn durability(&self) -> Durability {
        if self.unstable {
            Durability::Unstable
        } else {
            Durability::Durable
        }
    }

    /// Writes every block once (1 MiB at a time) and makes it durable.
    pub fn fill(&self, file: &File) -> directnfs::Result<()> {
        let per_chunk = (1 << 20) / BLOCK_SIZE as u64;
        let mut chunk = vec![0u8; 1 << 20];
        let mut first = 0;
        while first < self.ledger.len() {
            let n = per_chunk.min(self.ledger.len() - first);
            let mut seqs = Vec::with_capacity(n as usize);
            for i in 0..n {
                let seq = self.ledger.begin(first + i);
                let at = i as usize * BLOCK_SIZE;
                encode_block(first + i, seq, &mut chunk[at..at + BLOCK_SIZE]);
                seqs.push(seq);
            }
            file.write_all_at(&chunk[..n as usize * BLOCK_SIZE], first * BLOCK_SIZE as u64)?;
            for (i, seq) in seqs.into_iter().enumerate() {
                self.ledger.ack(first + i as u64, seq, self.durability());
            }
            first += n;
        }
        file.fsync()?;
        for b in 0..self.ledger.len() {
            self.ledger.mark_durable(b, self.ledger.latest_acked(b));
        }
        Ok(())
    }
}

/// `what` with every word that is a number (and any punctuation after it)
/// replaced by `#`.
fn error_kind(what: &str) -> String {
    what.split(' ')
        .map(|w| {
            let digits = w.trim_end_matches([':', ',', ')', ';']);
            if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
                format!("#{}", &w[digits.len()..])
            } else {
                w.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Errors that reached a caller.
#[derive(Debug, Default)]
struct Errors {
    first: Vec<String>,
    by_kind: BTreeMap<String, ErrorKind>,
}

/// Errors of one kind (the same message but for its numbers).
#[derive(Debug, Clone)]
pub struct ErrorKind {
    /// How many.
    pub count: u64,
    /// The first one, with its time.
    pub first: String,
}

/// The longest single operation a caller waited for.
#[derive(Debug, Clone, Default)]
pub struct Stall {
    /// How long.
    pub length: Duration,
    /// Which operation.
    pub what: String,
    /// When it finished, from the start of the load.
    pub at: Duration,
}

/// What the workers share: the stop flag, counters, errors, stalls.
#[derive(Debug)]
pub struct Shared {
    start: Instant,
    /// Set to end the load.
    pub stop: AtomicBool,
    /// Reads that succeeded.
    pub reads: AtomicU64,
    /// Writes that succeeded.
    pub writes: AtomicU64,
    /// Fsyncs that succeeded.
    pub fsyncs: AtomicU64,
    /// Operations that took longer than [`SLOW_OP`].
    pub slow_ops: AtomicU64,
    /// Errors that reached a caller.
    pub error_count: AtomicU64,
    errors: Mutex<Errors>,
    longest_ns: AtomicU64,
    longest: Mutex<Stall>,
    /// Per worker: when its oldest unfinished operation started (ns from
    /// `start`, plus 1), or 0 while it has none. The watchdog reads it.
    busy_since: Vec<AtomicU64>,
}

impl Shared {
    /// Counters for `workers` workers, the clock starting now.
    pub fn new(workers: usize) -> Self {
        Self {
            start: Instant::now(),
            stop: AtomicBool::new(false),
            reads: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            fsyncs: AtomicU64::new(0),
            slow_ops: AtomicU64::new(0),
            error_count: AtomicU64::new(0),
            errors: Mutex::new(Errors::default()),
            longest_ns: AtomicU64::new(0),
            longest: Mutex::new(Stall::default()),
            busy_since: (0..workers).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Time since the load started.
    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    /// An error that reached a caller: the first ones are printed at once
    /// and kept, every one is counted by kind (its text with the numbers
    /// blanked out, so that "write of block 17" and "of block 912" agree).
    pub fn error(&self, what: String) {
        let line = format!("[{:7.1}s] {what}", self.elapsed().as_secs_f64());
        self.error_count.fetch_add(1, Ordering::Relaxed);
        let kind = error_kind(&what);
        let mut errors = self.errors.lock().unwrap_or_else(|p| p.into_inner());
        if errors.first.len() < ERRORS_KEPT {
            eprintln!("soak: CALLER ERROR {line}");
            errors.first.push(line.clone());
        }
        errors
            .by_kind
            .entry(kind)
            .or_insert_with(|| ErrorKind {
                count: 0,
                first: line,
            })
            .count += 1;
    }

    /// The first errors, verbatim.
    pub fn first_errors(&self) -> Vec<String> {
        self.errors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .first
            .clone()
    }

    /// Every error kind: how often it happened and its first occurrence,
    /// most frequent first.
    pub fn errors_by_kind(&self) -> Vec<ErrorKind> {
        let errors = self.errors.lock().unwrap_or_else(|p| p.into_inner());
        let mut v: Vec<ErrorKind> = errors.by_kind.values().cloned().collect();
        v.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.first.cmp(&b.first)));
        v
    }

    /// The longest operation so far.
    pub fn longest(&self) -> Stall {
        self.longest
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Operations that succeeded (reads, writes and fsyncs).
    pub fn ops(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
            + self.writes.load(Ordering::Relaxed)
            + self.fsyncs.load(Ordering::Relaxed)
    }

    /// The oldest unfinished operation of any worker: (worker, its age).
    pub fn oldest_busy(&self) -> Option<(usize, Duration)> {
        let now = self.elapsed().as_nanos() as u64;
        self.busy_since
            .iter()
            .enumerate()
            .filter_map(|(i, b)| match b.load(Ordering::Relaxed) {
                0 => None,
                since => Some((i, Duration::from_nanos(now.saturating_sub(since - 1)))),
            })
            .max_by_key(|(_, age)| *age)
    }

    fn mark_busy(&self, worker: usize, since: Instant) {
        let ns = since.saturating_duration_since(self.start).as_nanos() as u64;
        self.busy_since[worker].store(ns + 1, Ordering::Relaxed);
    }

    fn mark_idle(&self, worker: usize) {
        self.busy_since[worker].store(0, Ordering::Relaxed);
    }

    /// An operation that started at `started` finished now.
    fn took(&self, started: Instant, what: impl FnOnce() -> String) {
        let length = started.elapsed();
        if length >= SLOW_OP {
            self.slow_ops.fetch_add(1, Ordering::Relaxed);
        }
        let ns = length.as_nanos() as u64;
        if ns > self.longest_ns.fetch_max(ns, Ordering::Relaxed) {
            let mut l = self.longest.lock().unwrap_or_else(|p| p.into_inner());
            if length > l.length {
                *l = Stall {
                    length,
                    what: what(),
                    at: self.elapsed(),
                };
            }
        }
    }
}

/// One worker's identity.
#[derive(Debug, Clone, Copy)]
pub struct Worker<'a> {
    /// Index into the shared per-worker state.
    pub id: usize,
    /// The file it works on.
    pub file: &'a FileLoad,
    /// Which of the file's workers it is (it owns blocks `b % workers == slot`).
    pub slot: u64,
    /// Its API.
    pub api: Api,
    /// Seed of its choice of blocks and operations.
    pub seed: u64,
}

impl Worker<'_> {
    fn name(&self) -> String {
        let api = match self.api {
            Api::Blocking => "blocking",
            Api::Batch => "batch",
        };
        format!("{} {api} worker {}", self.file.mode, self.slot)
    }

    /// A random block this worker owns.
    fn pick(&self, rng: &mut Rng) -> u64 {
        let owned = self.file.ledger.len() / self.file.workers;
        self.slot + self.file.workers * rng.below(owned)
    }

    /// Runs until `shared.stop`, then makes its unstable writes durable.
    pub fn run(&self, shared: &Shared, client: &Client) {
        let file = match client.open(&self.file.path) {
            Ok(f) => f,
            Err(e) => return shared.error(format!("{}: open: {e}", self.name())),
        };
        match self.api {
            Api::Blocking => self.run_blocking(shared, &file),
            Api::Batch => self.run_batch(shared, client, &file),
        }
    }

    fn run_blocking(&self, shared: &Shared, file: &File) {
        let mut rng = Rng::new(self.seed);
        let mut buf = vec![0u8; BLOCK_SIZE];
        let mut unsynced = Vec::new();
        let ledger = &self.file.ledger;
        while !shared.stop.load(Ordering::Relaxed) {
            let b = self.pick(&mut rng);
            let offset = b * BLOCK_SIZE as u64;
            if rng.below(100) < WRITE_PCT {
                let seq = ledger.begin(b);
                encode_block(b, seq, &mut buf);
                let t0 = Instant::now();
                shared.mark_busy(self.id, t0);
                let r = file.write_at(&buf, offset);
                shared.mark_idle(self.id);
                shared.took(t0, || format!("{}: write of block {b}", self.name()));
                match r {
                    Ok(n) if n == BLOCK_SIZE => {
                        shared.writes.fetch_add(1, Ordering::Relaxed);
                        ledger.ack(b, seq, self.file.durability());
                        if self.file.unstable {
                            unsynced.push((b, seq));
                        }
                    }
                    Ok(n) => {
                        shared.error(format!("{}: short write of block {b}: {n}", self.name()))
                    }
                    Err(e) => shared.error(format!("{}: write of block {b}: {e}", self.name())),
                }
                if unsynced.len() >= FSYNC_EVERY {
                    self.fsync(shared, file, &mut unsynced);
                }
            } else {
                let t0 = Instant::now();
                shared.mark_busy(self.id, t0);
                let r = file.read_exact_at(&mut buf, offset);
                shared.mark_idle(self.id);
                shared.took(t0, || format!("{}: read of block {b}", self.name()));
                match r {
                    Ok(()) => {
                        shared.reads.fetch_add(1, Ordering::Relaxed);
                        self.check(shared, b, &buf);
                    }
                    Err(e) => shared.error(format!("{}: read of block {b}: {e}", self.name())),
                }
            }
        }
        if self.file.unstable {
            self.fsync(shared, file, &mut unsynced);
        }
    }

    /// A block read back must be what the ledger allows; for a FILE_SYNC
    /// file the owner must read its own latest acknowledged write.
    fn check(&self, shared: &Shared, b: u64, buf: &[u8]) {
        if let Err(v) = self.file.ledger.check(b, buf, !self.file.unstable) {
            shared.error(format!("{}: read back: {v}", self.name()));
        }
    }

    /// fsync; on success every write acknowledged before it is durable.
    fn fsync(&self, shared: &Shared, file: &File, unsynced: &mut Vec<(u64, u64)>) {
        let t0 = Instant::now();
        shared.mark_busy(self.id, t0);
        let r = file.fsync();
        shared.mark_idle(self.id);
        shared.took(t0, || {
            format!("{}: fsync of {} writes", self.name(), unsynced.len())
        });
        match r {
            Ok(()) => {
                shared.fsyncs.fetch_add(1, Ordering::Relaxed);
                for (b, seq) in unsynced.drain(..) {
                    self.file.ledger.mark_durable(b, seq);
                }
            }
            // The writes stay unsynced: the next fsync may still make them
            // durable; until then they only count as acknowledged.
            Err(e) => shared.error(format!("{}: fsync: {e}", self.name())),
        }
    }

    fn run_batch(&self, shared: &Shared, client: &Client, file: &File) {
        let mut rng = Rng::new(self.seed);
        let mut batch = Batch::new(client);
        let mut slots: Vec<Option<Pending>> = (0..BATCH_DEPTH).map(|_| None).collect();
        let mut buffers: Vec<Vec<u8>> = (0..BATCH_DEPTH).map(|_| vec![0u8; BLOCK_SIZE]).collect();
        let mut unsynced = Vec::new();
        let mut done = Vec::new();
        loop {
            let stopping = shared.stop.load(Ordering::Relaxed);
            let draining = self.file.unstable && unsynced.len() >= FSYNC_EVERY;
            if !stopping && !draining {
                self.fill_batch(shared, &mut batch, file, &mut slots, &mut buffers, &mut rng);
            }
            let in_flight = slots.iter().filter(|s| s.is_some()).count();
            if in_flight == 0 {
                if draining || (stopping && self.file.unstable) {
                    self.fsync(shared, file, &mut unsynced);
                }
                if stopping {
                    break;
                }
                continue;
            }
            match slots.iter().flatten().map(|p| p.started).min() {
                Some(oldest) => shared.mark_busy(self.id, oldest),
                None => shared.mark_idle(self.id),
            }
            done.clear();
            batch.wait_into(&mut done, 1, Some(Duration::from_secs(1)));
            for c in done.drain(..) {
                let Some(p) = slots.get_mut(c.token as usize).and_then(Option::take) else {
                    shared.error(format!(
                        "{}: completion with unknown token {}",
                        self.name(),
                        c.token
                    ));
                    continue;
                };
                let what = match p.write {
                    Some(_) => "write",
                    None => "read",
                };
                shared.took(p.started, || {
                    format!("{}: batch {what} of block {}", self.name(), p.block)
                });
                let buf = c.buffer.unwrap_or_else(|| vec![0u8; BLOCK_SIZE]);
                match (p.write, c.result) {
                    (Some(seq), Ok(n)) if n == BLOCK_SIZE => {
                        shared.writes.fetch_add(1, Ordering::Relaxed);
                        self.file.ledger.ack(p.block, seq, self.file.durability());
                        if self.file.unstable {
                            unsynced.push((p.block, seq));
                        }
                    }
                    (None, Ok(n)) if n == BLOCK_SIZE => {
                        shared.reads.fetch_add(1, Ordering::Relaxed);
                        self.check(shared, p.block, &buf);
                    }
                    (_, Ok(n)) => shared.error(format!(
                        "{}: batch {what} of block {}: {n} bytes of {BLOCK_SIZE}",
                        self.name(),
                        p.block
                    )),
                    (_, Err(e)) => {
                        shared.error(format!(
                            "{}: batch {what} of block {}: {e}",
                            self.name(),
                            p.block
                        ));
                    }
                }
                buffers.push(buf);
            }
        }
        shared.mark_idle(self.id);
    }

    /// Submits operations into the free slots, each on a block with nothing
    /// else in flight.
    fn fill_batch(
        &self,
        shared: &Shared,
        batch: &mut Batch<'_>,
        file: &File,
        slots: &mut [Option<Pending>],
        buffers: &mut Vec<Vec<u8>>,
        rng: &mut Rng,
    ) {
        for token in 0..slots.len() {
            if slots[token].is_some() {
                continue;
            }
            let Some(mut buf) = buffers.pop() else { return };
            let mut b = self.pick(rng);
            while slots.iter().flatten().any(|p| p.block == b) {
                b = self.pick(rng);
            }
            let offset = b * BLOCK_SIZE as u64;
            let started = Instant::now();
            let (write, r) = if rng.below(100) < WRITE_PCT {
                let seq = self.file.ledger.begin(b);
                encode_block(b, seq, &mut buf);
                (
                    Some(seq),
                    batch.write_owned(file, offset, buf, token as u64),
                )
            } else {
                (None, batch.read_owned(file, offset, buf, token as u64))
            };
            match r {
                Ok(()) => {
                    slots[token] = Some(Pending {
                        block: b,
                        write,
                        started,
                    })
                }
                Err(e) => {
                    shared.error(format!("{}: batch submit for block {b}: {e}", self.name()));
                    buffers.push(vec![0u8; BLOCK_SIZE]);
                }
            }
        }
    }
}

/// A batch operation in flight.
#[derive(Debug, Clone, Copy)]
struct Pending {
    block: u64,
    /// The sequence written, for a write.
    write: Option<u64>,
    started: Instant,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_kinds_ignore_the_numbers_in_a_message() {
        assert_eq!(
            error_kind("file_sync batch worker 2: batch write of block 1673: WRITE /soak-1-f.dat: NFS3ERR_JUKEBOX (os error 11)"),
            "file_sync batch worker #: batch write of block #: WRITE /soak-1-f.dat: NFS3ERR_JUKEBOX (os error #)"
        );
        assert_eq!(
            error_kind("read of block 7"),
            error_kind("read of block 912")
        );
    }
}
