//! The workload generators and the loop that drives one session: keep every
//! slot busy, time each I/O, count what completes inside the measured
//! window.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use directnfs::stats::Histogram;

use super::block::{self, BLOCK_SIZE};
use super::engines::{Kind, Session};

pub const WARMUP: u8 = 0;
pub const MEASURE: u8 = 1;
pub const STOP: u8 = 2;

/// Give up on a session after this many I/O errors.
const MAX_ERRORS: u64 = 1000;

/// One I/O to do.
#[derive(Debug, Clone, Copy)]
pub struct Op {
    pub kind: Kind,
    pub offset: u64,
    pub len: usize,
    /// First block number encoded in (or expected in) the buffer.
    pub block: u64,
    /// Write sequence (writes only).
    pub seq: u64,
    /// Redo: encode one record of `len` (not a run of 8 KiB blocks).
    pub record: bool,
}

/// Counters of one driving thread, on its own cache line.
#[derive(Debug, Default)]
#[repr(align(64))]
pub struct Counters {
    /// Inside the measured window.
    pub ops: AtomicU64,
    pub bytes: AtomicU64,
    pub reads: AtomicU64,
    pub writes: AtomicU64,
    /// Any time (errors are never excused by the warm-up).
    pub errors: AtomicU64,
    pub verify_errors: AtomicU64,
    /// Every completion, for the progress line.
    pub total: AtomicU64,
}

/// State shared by all threads of a worker.
#[derive(Debug)]
pub struct Shared {
    pub phase: AtomicU8,
    pub hist: Histogram,
    /// Random per run: tells this run's writes from older ones.
    pub stamp: u64,
    /// Last write sequence per 8 KiB block (0 = not written in this run).
    pub table: Vec<AtomicU64>,
    /// Check block headers of everything read (`--verify`).
    pub check_reads: bool,
    /// Completions to wait for before refilling (aio_waitn's `min`).
    pub reap_min: usize,
    /// redo: fsync after every this many writes (0 = never).
    pub fsync_every: usize,
    pub first_error: Mutex<Option<String>>,
}

impl Shared {
    pub fn new(stamp: u64, blocks: usize, check_reads: bool) -> Self {
        Self {
            phase: AtomicU8::new(WARMUP),
            hist: Histogram::new(),
            stamp,
            table: (0..blocks).map(|_| AtomicU64::new(0)).collect(),
            check_reads,
            reap_min: 1,
            fsync_every: 0,
            first_error: Mutex::new(None),
        }
    }

    pub fn phase(&self) -> u8 {
        self.phase.load(Relaxed)
    }

    fn note_error(&self, e: String) {
        let mut g = self.first_error.lock().unwrap_or_else(|p| p.into_inner());
        if g.is_none() {
            *g = Some(e);
        }
    }
}

/// Where a driving thread gets its next I/O.
pub trait Gen {
    /// The next I/O for `slot`, or `None` when there is nothing more to do.
    fn next(&mut self, slot: usize) -> Option<Op>;
    /// A write completed successfully.
    fn written(&mut self, _op: &Op) {}
}

/// xorshift64*: fast, good enough for picking blocks.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in `0..n` (n > 0).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// A lane: one queue slot of one session, with one I/O at a time. Writes of
/// unit `u` are done only by lane `u % lanes`, so no two writes to a block
/// are ever in flight at once and "the last write" of a block is defined.
#[derive(Debug)]
struct Lane {
    id: u64,
    rng: Rng,
    seq: u64,
}

/// oltp: random units (I/O-size aligned) over the file, `write_pct` writes.
#[derive(Debug)]
pub struct OltpGen {
    lanes: Vec<Lane>,
    total_lanes: u64,
    units: u64,
    unit_len: usize,
    unit_blocks: u64,
    write_pct: u64,
}

impl OltpGen {
    /// `lane_ids`: the global lane of each slot of this thread.
    pub fn new(
        lane_ids: &[u64],
        total_lanes: u64,
        file_size: u64,
        unit_len: usize,
        write_pct: u32,
        seed: u64,
    ) -> Self {
        let unit_len = unit_len.max(BLOCK_SIZE) / BLOCK_SIZE * BLOCK_SIZE;
        Self {
            lanes: lane_ids
                .iter()
                .map(|&id| Lane {
                    id,
                    rng: Rng::new(seed ^ (id + 1).wrapping_mul(0xD6E8_FEB8_6659_FD93)),
                    seq: 0,
                })
                .collect(),
            total_lanes: total_lanes.max(1),
            units: (file_size / unit_len as u64).max(1),
            unit_len,
            unit_blocks: (unit_len / BLOCK_SIZE) as u64,
            write_pct: u64::from(write_pct.min(100)),
        }
    }
}

impl Gen for OltpGen {
    #[inline]
    fn next(&mut self, slot: usize) -> Option<Op> {
        let lane = self.lanes.get_mut(slot)?;
        let write = lane.rng.below(100) < self.write_pct && lane.id < self.units;
        let unit = if write {
            let owned = (self.units - 1 - lane.id) / self.total_lanes + 1;
            lane.rng.below(owned) * self.total_lanes + lane.id
        } else {
            lane.rng.below(self.units)
        };
        let seq = if write {
            lane.seq += 1;
            lane.seq
        } else {
            0
        };
        Some(Op {
            kind: if write { Kind::Write } else { Kind::Read },
            offset: unit * self.unit_len as u64,
            len: self.unit_len,
            block: unit * self.unit_blocks,
            seq,
            record: false,
        })
    }
}

/// scan: sequential chunks of one worker's range, shared by its threads.
#[derive(Debug, Clone)]
pub struct ScanGen {
    pub cursor: Arc<AtomicU64>,
    pub end: u64,
    pub chunk: u64,
    /// Stop early when the phase leaves this value (warm-up pass).
    pub only_in: Option<(Arc<Shared>, u8)>,
}

impl Gen for ScanGen {
    fn next(&mut self, _slot: usize) -> Option<Op> {
        if let Some((sh, ph)) = &self.only_in {
            if sh.phase() != *ph {
                return None;
            }
        }
        let off = self.cursor.fetch_add(self.chunk, Relaxed);
        if off >= self.end {
            return None;
        }
        let len = self.chunk.min(self.end - off) as usize;
        Some(Op {
            kind: Kind::Read,
            offset: off,
            len,
            block: off / BLOCK_SIZE as u64,
            seq: 0,
            record: false,
        })
    }
}

/// A redo record written (for the verify pass).
#[derive(Debug, Clone, Copy)]
pub struct Record {
    pub offset: u64,
    pub len: usize,
    pub index: u64,
}

/// The log writer's position, shared by its threads.
#[derive(Debug)]
pub struct RedoState {
    pub pos: u64,
    pub next_index: u64,
    /// Records of the current lap and of the previous one.
    pub cur: Vec<Record>,
    pub prev: Vec<Record>,
    rng: Rng,
    fixed: Option<usize>,
    size: u64,
}

impl RedoState {
    pub fn new(size: u64, fixed: Option<usize>, seed: u64) -> Self {
        Self {
            pos: 0,
            next_index: 0,
            cur: Vec::new(),
            prev: Vec::new(),
            rng: Rng::new(seed),
            fixed,
            size,
        }
    }

    /// Records that no later write overlapped.
    pub fn live_records(&self) -> Vec<Record> {
        let mut v: Vec<Record> = self
            .prev
            .iter()
            .filter(|r| r.offset >= self.pos)
            .copied()
            .collect();
        v.extend_from_slice(&self.cur);
        v
    }
}

/// redo: sequential writes of 8k..64k (512-byte multiples) or a fixed size,
/// wrapping at the end of the log file.
#[derive(Debug, Clone)]
pub struct RedoGen {
    pub state: Arc<Mutex<RedoState>>,
}

pub const REDO_MIN: usize = 8 << 10;
pub const REDO_MAX: usize = 64 << 10;

impl Gen for RedoGen {
    fn next(&mut self, _slot: usize) -> Option<Op> {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let len = match s.fixed {
            Some(n) => n,
            None => {
                let steps = ((REDO_MAX - REDO_MIN) / 512 + 1) as u64;
                REDO_MIN + s.rng.below(steps) as usize * 512
            }
        }
        .max(block::MIN_LEN);
        if s.pos + len as u64 > s.size {
            s.pos = 0;
            s.prev = std::mem::take(&mut s.cur);
        }
        let rec = Record {
            offset: s.pos,
            len,
            index: s.next_index,
        };
        s.pos += len as u64;
        s.next_index += 1;
        s.cur.push(rec);
        Some(Op {
            kind: Kind::Write,
            offset: rec.offset,
            len,
            block: rec.index,
            seq: rec.index + 1,
            record: true,
        })
    }
}

/// Encodes the data a write op carries into `buf`.
#[inline]
pub fn encode_op(buf: &mut [u8], op: &Op, stamp: u64) {
    let b = &mut buf[..op.len];
    if op.record {
        block::encode(b, op.block, op.seq, stamp);
    } else {
        block::encode_run(b, op.block, op.seq, stamp);
    }
}

/// Drives `sess` with `gen` until the generator runs dry or the phase is
/// STOP, then waits for everything in flight. Returns an error only when
/// the session itself broke.
pub fn drive(
    sess: &mut dyn Session,
    gen: &mut dyn Gen,
    sh: &Shared,
    ctr: &Counters,
) -> Result<(), String> {
    let reap_min = sh.reap_min.max(1);
    let depth = sess.depth();
    let mut busy: Vec<Option<(Op, Instant)>> = vec![None; depth];
    let mut free: Vec<usize> = (0..depth).rev().collect();
    let mut done = Vec::with_capacity(depth);
    let mut dry = false;
    // Writes since the last fsync (redo --fsync-every).
    let mut unsynced = 0usize;
    loop {
        let stopping = sh.phase() == STOP;
        if !stopping && !dry {
            while let Some(&slot) = free.last() {
                let Some(op) = gen.next(slot) else {
                    dry = true;
                    break;
                };
                if op.kind == Kind::Write {
                    encode_op(sess.buf(slot), &op, sh.stamp);
                }
                let t0 = Instant::now();
                sess.submit(slot, op.kind, op.offset, op.len)?;
                busy[slot] = Some((op, t0));
                free.pop();
            }
        }
        if free.len() == depth {
            if stopping || dry {
                return Ok(());
            }
            continue;
        }
        let in_flight = depth - free.len();
        let min = if stopping || dry {
            1
        } else {
            reap_min.min(in_flight)
        };
        sess.reap(&mut done, min, Duration::from_millis(200))?;
        if done.is_empty() {
            continue;
        }
        let now = Instant::now();
        let measuring = sh.phase() == MEASURE;
        let (mut ops, mut bytes, mut reads, mut writes) = (0u64, 0u64, 0u64, 0u64);
        let n_done = done.len() as u64;
        for (slot, res) in done.drain(..) {
            let Some((op, t0)) = busy.get_mut(slot).and_then(Option::take) else {
                return Err(format!("completion for idle slot {slot}"));
            };
            free.push(slot);
            match res {
                Ok(n) if n == op.len => {
                    match op.kind {
                        Kind::Write => {
                            if !op.record {
                                let blocks = (op.len / BLOCK_SIZE) as u64;
                                for b in op.block..op.block + blocks {
                                    if let Some(t) = sh.table.get(b as usize) {
                                        t.store(op.seq, Relaxed);
                                    }
                                }
                            }
                            gen.written(&op);
                            writes += 1;
                            unsynced += 1;
                            if sh.fsync_every > 0 && unsynced >= sh.fsync_every {
                                unsynced = 0;
                                sess.fsync()?;
                            }
                        }
                        Kind::Read => {
                            if sh.check_reads {
                                let buf = &sess.buf(slot)[..op.len];
                                let bad = buf
                                    .chunks(BLOCK_SIZE)
                                    .enumerate()
                                    .filter(|(i, c)| !block::quick_check(c, op.block + *i as u64))
                                    .count();
                                if bad > 0 {
                                    ctr.verify_errors.fetch_add(bad as u64, Relaxed);
                                    sh.note_error(format!(
                                        "read at offset {} returned {bad} block(s) with a wrong header",
                                        op.offset
                                    ));
                                }
                            }
                            reads += 1;
                        }
                    }
                    if measuring {
                        sh.hist
                            .record(u64::try_from((now - t0).as_nanos()).unwrap_or(u64::MAX));
                        ops += 1;
                        bytes += n as u64;
                    }
                }
                Ok(n) => {
                    let e = format!(
                        "short {:?} at offset {}: {n} of {} bytes",
                        op.kind, op.offset, op.len
                    );
                    sh.note_error(e);
                    ctr.errors.fetch_add(1, Relaxed);
                }
                Err(e) => {
                    sh.note_error(format!("{:?} at offset {}: {e}", op.kind, op.offset));
                    ctr.errors.fetch_add(1, Relaxed);
                }
            }
        }
        if measuring {
            ctr.ops.fetch_add(ops, Relaxed);
            ctr.bytes.fetch_add(bytes, Relaxed);
            ctr.reads.fetch_add(reads, Relaxed);
            ctr.writes.fetch_add(writes, Relaxed);
        }
        ctr.total.fetch_add(n_done, Relaxed);
        if ctr.errors.load(Relaxed) > MAX_ERRORS {
            return Err(format!("more than {MAX_ERRORS} I/O errors; giving up"));
        }
    }
}
