//! Self-describing, checksummed blocks and a ledger of what was written,
//! so a final pass over a file proves that nothing acknowledged was lost,
//! torn or misplaced (docs/design.md "Data checks").
//!
//! # Block layout
//!
//! A block is [`BLOCK_SIZE`] bytes (any multiple of [`SECTOR`] works), made
//! of 512-byte sectors. Every sector starts with a stamp, so a block that
//! is half one write and half another (a torn write) shows it sector by
//! sector:
//!
//! ```text
//! sector 0:  magic "DNFSBLK\x01" | block_no u64 | seq u64 | checksum u64 | payload
//! sector k:  seq u64 | block_no u64 | payload                 (k >= 1)
//! ```
//!
//! All integers are little-endian. The payload is a pseudo-random stream
//! seeded by `(block_no, seq)`. The checksum is FNV-1a 64 over the whole
//! block with the checksum field read as zero.
//!
//! # Ledger
//!
//! [`Ledger`] records, per block, the last sequence known *durable* (a
//! FILE_SYNC write acknowledged, or an UNSTABLE write followed by a
//! successful fsync), the sequences acknowledged but not yet durable, and
//! the sequences *in doubt* (submitted without an acknowledgement: in
//! flight, or failed). A block may legitimately hold its durable sequence
//! or any later sequence that was acknowledged or in doubt; anything else
//! (an older sequence, a sequence never written to this block, zeros after
//! a durable write, a torn or corrupt block) is a [`Violation`].
//!
//! Sequence numbers come from one counter per ledger and start at 1; 0
//! means "never written" (the block reads as zeros).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::rng::{SplitMix64, GAMMA};

/// Size of the blocks the tests write (a database block).
pub const BLOCK_SIZE: usize = 8192;
/// Granularity of the torn-write check.
pub const SECTOR: usize = 512;
/// First 8 bytes of every block.
pub const MAGIC: [u8; 8] = *b"DNFSBLK\x01";

const OFF_MAGIC: usize = 0;
const OFF_BLOCK: usize = 8;
const OFF_SEQ: usize = 16;
const OFF_SUM: usize = 24;
const HEADER: usize = 32;
const STAMP: usize = 16;

/// Why a block did not verify.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockError {
    /// The buffer is not a whole number of sectors.
    BadLength(usize),
    /// Every byte is zero: never written (or lost).
    Zero,
    /// A complete, valid block, but of another block number.
    Misplaced {
        /// The block number asked for.
        expected: u64,
        /// The block number the data carries.
        found: u64,
        /// Its sequence.
        seq: u64,
    },
    /// Sectors of different writes (or zero sectors next to written ones).
    Torn {
        /// Distinct sequences found, in sector order of first appearance.
        seqs: Vec<u64>,
        /// Sectors that were all zero.
        zero_sectors: usize,
        /// Sectors whose stamp names another block.
        foreign_sectors: usize,
    },
    /// Stamps agree but the content does not match them.
    Corrupt {
        /// What was wrong.
        detail: String,
    },
}

impl fmt::Display for BlockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BlockError::BadLength(n) => write!(f, "buffer of {n} bytes is not whole sectors"),
            BlockError::Zero => write!(f, "block is all zeros"),
            BlockError::Misplaced {
                expected,
                found,
                seq,
            } => write!(
                f,
                "misplaced: block {expected} holds block {found} (seq {seq})"
            ),
            BlockError::Torn {
                seqs,
                zero_sectors,
                foreign_sectors,
            } => write!(
                f,
                "torn: sequences {seqs:?}, {zero_sectors} zero sector(s), {foreign_sectors} sector(s) of other blocks"
            ),
            BlockError::Corrupt { detail } => write!(f, "corrupt: {detail}"),
        }
    }
}

impl std::error::Error for BlockError {}

/// FNV-1a 64 of `parts`, one after the other.
fn fnv1a64(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in *part {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// Checksum of a block: FNV-1a 64 with the checksum field as zeros.
fn block_checksum(buf: &[u8]) -> u64 {
    fnv1a64(&[&buf[..OFF_SUM], &[0u8; 8], &buf[OFF_SUM + 8..]])
}

fn get_u64(buf: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&buf[at..at + 8]);
    u64::from_le_bytes(b)
}

fn put_u64(buf: &mut [u8], at: usize, v: u64) {
    buf[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// The payload stream of `(block_no, seq)`: splitmix64.
struct Stream(SplitMix64);

impl Stream {
    fn new(block_no: u64, seq: u64) -> Self {
        Stream(SplitMix64::new(
            block_no.rotate_left(32) ^ seq.wrapping_mul(GAMMA) ^ 0xd1b5_4a32,
        ))
    }

    fn fill(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(8) {
            let v = self.0.next_u64().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

fn check_len(len: usize) -> Result<(), BlockError> {
    if len == 0 || len % SECTOR != 0 {
        Err(BlockError::BadLength(len))
    } else {
        Ok(())
    }
}

/// Fills `buf` (usually [`BLOCK_SIZE`] bytes; any non-zero multiple of
/// [`SECTOR`]) with block `block_no` at write sequence `seq`.
///
/// # Panics
/// If `buf` is not a non-zero multiple of [`SECTOR`] bytes.
pub fn encode_block(block_no: u64, seq: u64, buf: &mut [u8]) {
    assert!(
        check_len(buf.len()).is_ok(),
        "block buffer of {} bytes is not a non-zero multiple of {SECTOR}",
        buf.len()
    );
    let mut stream = Stream::new(block_no, seq);
    for (i, sector) in buf.chunks_mut(SECTOR).enumerate() {
        if i == 0 {
            sector[OFF_MAGIC..OFF_MAGIC + 8].copy_from_slice(&MAGIC);
            put_u64(sector, OFF_BLOCK, block_no);
            put_u64(sector, OFF_SEQ, seq);
            put_u64(sector, OFF_SUM, 0);
            stream.fill(&mut sector[HEADER..]);
        } else {
            put_u64(sector, 0, seq);
            put_u64(sector, 8, block_no);
            stream.fill(&mut sector[STAMP..]);
        }
    }
    let sum = block_checksum(buf);
    put_u64(buf, OFF_SUM, sum);
}

/// What one sector claims to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SectorKind {
    Zero,
    /// (block_no, seq) from the header or the stamp.
    Stamped(u64, u64),
    /// Sector 0 without the magic.
    NoMagic,
}

fn classify(i: usize, sector: &[u8]) -> SectorKind {
    if sector.iter().all(|&b| b == 0) {
        SectorKind::Zero
    } else if i == 0 {
        if sector[OFF_MAGIC..OFF_MAGIC + 8] == MAGIC {
            SectorKind::Stamped(get_u64(sector, OFF_BLOCK), get_u64(sector, OFF_SEQ))
        } else {
            SectorKind::NoMagic
        }
    } else {
        SectorKind::Stamped(get_u64(sector, 8), get_u64(sector, 0))
    }
}

/// Checks that `buf` holds a complete, intact block `block_no`; returns its
/// write sequence. Distinguishes never-written ([`BlockError::Zero`]),
/// another block's data ([`BlockError::Misplaced`]), a mix of writes
/// ([`BlockError::Torn`]) and damaged content ([`BlockError::Corrupt`]).
pub fn verify_block(block_no: u64, buf: &[u8]) -> Result<u64, BlockError> {
    check_len(buf.len())?;
    let kinds: Vec<SectorKind> = buf
        .chunks(SECTOR)
        .enumerate()
        .map(|(i, s)| classify(i, s))
        .collect();
    if kinds.iter().all(|k| *k == SectorKind::Zero) {
        return Err(BlockError::Zero);
    }
    if kinds[0] == SectorKind::NoMagic {
        return Err(BlockError::Corrupt {
            detail: format!("no magic: first bytes {:02x?}", &buf[..16.min(buf.len())]),
        });
    }
    // Torn: the sectors do not all carry the same (block, seq).
    let first = kinds.iter().find_map(|k| match k {
        SectorKind::Stamped(b, s) => Some((*b, *s)),
        _ => None,
    });
    let Some((found_block, seq)) = first else {
        return Err(BlockError::Corrupt {
            detail: "no stamped sector".into(),
        });
    };
    let consistent = kinds
        .iter()
        .all(|k| *k == SectorKind::Stamped(found_block, seq));
    if !consistent {
        let mut seqs = Vec::new();
        let (mut zero_sectors, mut foreign_sectors) = (0, 0);
        for k in &kinds {
            match k {
                SectorKind::Zero => zero_sectors += 1,
                SectorKind::Stamped(b, s) => {
                    if *b != block_no {
                        foreign_sectors += 1;
                    }
                    if !seqs.contains(s) {
                        seqs.push(*s);
                    }
                }
                SectorKind::NoMagic => {}
            }
        }
        return Err(BlockError::Torn {
            seqs,
            zero_sectors,
            foreign_sectors,
        });
    }
    // Consistent stamps: the content must be exactly what they promise.
    let stored = get_u64(buf, OFF_SUM);
    let computed = block_checksum(buf);
    if stored != computed {
        return Err(BlockError::Corrupt {
            detail: format!(
                "checksum {stored:#018x} stored, {computed:#018x} computed (block {found_block} seq {seq})"
            ),
        });
    }
    let mut expected = vec![0u8; buf.len()];
    encode_block(found_block, seq, &mut expected);
    if let Some(at) = expected.iter().zip(buf).position(|(a, b)| a != b) {
        return Err(BlockError::Corrupt {
            detail: format!(
                "checksum matches but byte {at} differs from block {found_block} seq {seq}"
            ),
        });
    }
    if found_block != block_no {
        return Err(BlockError::Misplaced {
            expected: block_no,
            found: found_block,
            seq,
        });
    }
    Ok(seq)
}

/// How an acknowledged write stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// On stable storage (FILE_SYNC acknowledged, or committed).
    Durable,
    /// Acknowledged UNSTABLE: durable only after a successful fsync/COMMIT.
    Unstable,
}

/// One block's history, as far as it still matters.
#[derive(Debug, Default, Clone)]
struct Record {
    /// Last sequence known durable (0: nothing written yet).
    durable: u64,
    /// Acknowledged, not yet durable, newer than `durable`.
    acked: Vec<u64>,
    /// Submitted, not acknowledged (in flight, or failed), newer than `durable`.
    doubt: Vec<u64>,
}

impl Record {
    fn latest_acked(&self) -> u64 {
        self.acked
            .iter()
            .copied()
            .max()
            .unwrap_or(0)
            .max(self.durable)
    }

    fn drop_upto(&mut self, seq: u64) {
        self.acked.retain(|&s| s > seq);
        self.doubt.retain(|&s| s > seq);
    }
}

/// A block that does not hold what the ledger allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    /// The block itself is damaged (torn, misplaced, corrupt), or zero
    /// although something was durably written to it.
    Block {
        /// The block number.
        block_no: u64,
        /// What is wrong with it.
        error: BlockError,
    },
    /// An intact block, but with a sequence the ledger does not allow:
    /// older than the durable one (a lost write, or a stale write replayed
    /// over a newer one) or never issued for this block.
    Sequence {
        /// The block number.
        block_no: u64,
        /// The sequence found (0: zeros).
        found: u64,
        /// The durable sequence.
        durable: u64,
        /// The newest acknowledged sequence.
        latest_acked: u64,
        /// Sequences that were allowed besides `durable`.
        allowed: Vec<u64>,
    },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::Block { block_no, error } => write!(f, "block {block_no}: {error}"),
            Violation::Sequence {
                block_no,
                found,
                durable,
                latest_acked,
                allowed,
            } => write!(
                f,
                "block {block_no}: holds seq {found}, but durable is {durable}, latest acknowledged {latest_acked}, also allowed {allowed:?}"
            ),
        }
    }
}

impl std::error::Error for Violation {}

/// Per block: the last sequence durably written, the acknowledged but not
/// yet durable ones, and those in doubt. Thread-safe (`&self` everywhere):
/// one lock per block. See the module doc for the rules.
#[derive(Debug)]
pub struct Ledger {
    blocks: Vec<Mutex<Record>>,
    next_seq: AtomicU64,
}

/// Totals of a [`Ledger::check_all`] pass.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CheckReport {
    /// Blocks checked.
    pub blocks: u64,
    /// Blocks holding their latest acknowledged sequence.
    pub latest: u64,
    /// Blocks holding a newer in-doubt write (allowed).
    pub in_doubt_landed: u64,
    /// Blocks holding the durable sequence while a newer unstable write was
    /// acknowledged but never committed (allowed).
    pub uncommitted_lost: u64,
    /// Every violation found.
    pub violations: Vec<Violation>,
}

impl CheckReport {
    /// True when nothing was lost, torn or misplaced.
    pub fn is_ok(&self) -> bool {
        self.violations.is_empty()
    }
}

impl Ledger {
    /// A ledger for `blocks` blocks, none written yet.
    pub fn new(blocks: u64) -> Self {
        Self {
            blocks: (0..blocks).map(|_| Mutex::new(Record::default())).collect(),
            next_seq: AtomicU64::new(1),
        }
    }

    /// Number of blocks.
    pub fn len(&self) -> u64 {
        self.blocks.len() as u64
    }

    /// True for a ledger of no blocks.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    fn rec(&self, block_no: u64) -> MutexGuard<'_, Record> {
        let i = usize::try_from(block_no).unwrap_or(usize::MAX);
        match self.blocks.get(i) {
            Some(m) => m.lock().unwrap_or_else(|p| p.into_inner()),
            None => panic!("block {block_no} outside the ledger of {}", self.len()),
        }
    }

    /// Starts a write of `block_no`: returns its (new, unique) sequence,
    /// in doubt until [`ack`](Self::ack)ed.
    pub fn begin(&self, block_no: u64) -> u64 {
        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        self.rec(block_no).doubt.push(seq);
        seq
    }

    /// The write `seq` of `block_no` was acknowledged.
    pub fn ack(&self, block_no: u64, seq: u64, durability: Durability) {
        match durability {
            Durability::Durable => self.mark_durable(block_no, seq),
            Durability::Unstable => {
                let mut r = self.rec(block_no);
                if seq > r.durable {
                    r.doubt.retain(|&s| s != seq);
                    r.acked.push(seq);
                }
            }
        }
    }

    /// `seq` of `block_no` is known durable (a FILE_SYNC acknowledgement,
    /// or a successful fsync after its acknowledgement). Every older
    /// sequence of the block stops being acceptable.
    pub fn mark_durable(&self, block_no: u64, seq: u64) {
        let mut r = self.rec(block_no);
        if seq > r.durable {
            r.durable = seq;
            r.drop_upto(seq);
        }
    }

    /// The newest acknowledged sequence of `block_no` (durable or not); 0
    /// if none. What a read by the block's only writer must return.
    pub fn latest_acked(&self, block_no: u64) -> u64 {
        self.rec(block_no).latest_acked()
    }

    /// The durable sequence of `block_no` (0: none).
    pub fn durable(&self, block_no: u64) -> u64 {
        self.rec(block_no).durable
    }

    /// Checks a block read while the ledger is live.
    ///
    /// `strict` (read-your-writes, for a block's only writer in FILE_SYNC
    /// mode): the block must hold its latest acknowledged sequence, or a
    /// newer one still in doubt. Otherwise any sequence the ledger allows
    /// (see the module doc) passes. Returns the sequence found.
    pub fn check(&self, block_no: u64, buf: &[u8], strict: bool) -> Result<u64, Violation> {
        let found = match verify_block(block_no, buf) {
            Ok(seq) => seq,
            Err(BlockError::Zero) => 0,
            Err(error) => return Err(Violation::Block { block_no, error }),
        };
        let r = self.rec(block_no);
        let latest = r.latest_acked();
        let ok = if strict {
            found == latest || (found > latest && r.doubt.contains(&found))
        } else {
            found == r.durable || r.acked.contains(&found) || r.doubt.contains(&found)
        };
        if ok {
            return Ok(found);
        }
        if found == 0 {
            return Err(Violation::Block {
                block_no,
                error: BlockError::Zero,
            });
        }
        let mut allowed: Vec<u64> = r.acked.iter().chain(&r.doubt).copied().collect();
        allowed.sort_unstable();
        Err(Violation::Sequence {
            block_no,
            found,
            durable: r.durable,
            latest_acked: latest,
            allowed,
        })
    }

    /// The final pass: `read(first_block, buf)` fills `buf` with
    /// consecutive blocks starting at `first_block` (`buf.len()` is a
    /// multiple of `block_size`, at most `chunk_blocks` blocks); every block
    /// is checked with the relaxed rule. Read errors become violations of
    /// the blocks concerned ([`BlockError::Corrupt`] naming the error).
    pub fn check_all<E: fmt::Display>(
        &self,
        block_size: usize,
        chunk_blocks: u64,
        mut read: impl FnMut(u64, &mut [u8]) -> Result<(), E>,
    ) -> CheckReport {
        let mut report = CheckReport::default();
        let chunk_blocks = chunk_blocks.max(1);
        let mut buf = Vec::new();
        let mut first = 0u64;
        while first < self.len() {
            let n = chunk_blocks.min(self.len() - first);
            buf.resize(n as usize * block_size, 0);
            let read_result = read(first, &mut buf);
            for (i, block) in buf.chunks(block_size).enumerate() {
                let block_no = first + i as u64;
                report.blocks += 1;
                if let Err(e) = &read_result {
                    report.violations.push(Violation::Block {
                        block_no,
                        error: BlockError::Corrupt {
                            detail: format!("read failed: {e}"),
                        },
                    });
                    continue;
                }
                match self.check(block_no, block, false) {
                    Ok(found) => {
                        let r = self.rec(block_no);
                        let latest = r.latest_acked();
                        if found == latest {
                            report.latest += 1;
                        } else if found > latest {
                            report.in_doubt_landed += 1;
                        } else {
                            report.uncommitted_lost += 1;
                        }
                    }
                    Err(v) => report.violations.push(v),
                }
            }
            first += n;
        }
        report
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn block(no: u64, seq: u64) -> Vec<u8> {
        let mut b = vec![0u8; BLOCK_SIZE];
        encode_block(no, seq, &mut b);
        b
    }

    #[test]
    fn a_block_verifies_and_carries_its_sequence() {
        let b = block(42, 7);
        assert_eq!(&b[..8], &MAGIC);
        assert_eq!(verify_block(42, &b), Ok(7));
        // Deterministic: the same block and sequence give the same bytes.
        assert_eq!(b, block(42, 7));
        assert_ne!(b, block(42, 8));
        assert_ne!(b[HEADER..], block(43, 7)[HEADER..]);
    }

    #[test]
    fn other_sizes_of_whole_sectors_work() {
        for len in [SECTOR, 4096, 65536] {
            let mut b = vec![0u8; len];
            encode_block(3, 9, &mut b);
            assert_eq!(verify_block(3, &b), Ok(9));
        }
        assert_eq!(
            verify_block(3, &[0u8; 100]),
            Err(BlockError::BadLength(100))
        );
        assert_eq!(verify_block(3, &[]), Err(BlockError::BadLength(0)));
    }

    #[test]
    fn zeros_are_reported_as_zero() {
        assert_eq!(verify_block(1, &[0u8; BLOCK_SIZE]), Err(BlockError::Zero));
    }

    #[test]
    fn another_blocks_data_is_misplaced() {
        let b = block(5, 3);
        assert_eq!(
            verify_block(6, &b),
            Err(BlockError::Misplaced {
                expected: 6,
                found: 5,
                seq: 3
            })
        );
    }

    #[test]
    fn half_old_half_new_is_torn() {
        let old = block(9, 1);
        let new = block(9, 2);
        let mut torn = new.clone();
        torn[4096..].copy_from_slice(&old[4096..]);
        match verify_block(9, &torn) {
            Err(BlockError::Torn {
                seqs,
                zero_sectors: 0,
                foreign_sectors: 0,
            }) => assert_eq!(seqs, vec![2, 1]),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_short_write_followed_by_zeros_is_torn() {
        let mut b = block(9, 4);
        b[3 * SECTOR..].fill(0);
        match verify_block(9, &b) {
            Err(BlockError::Torn {
                seqs, zero_sectors, ..
            }) => {
                assert_eq!(seqs, vec![4]);
                assert_eq!(zero_sectors, BLOCK_SIZE / SECTOR - 3);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_sector_of_another_block_is_torn() {
        let mut b = block(9, 4);
        let other = block(10, 4);
        b[SECTOR..2 * SECTOR].copy_from_slice(&other[SECTOR..2 * SECTOR]);
        match verify_block(9, &b) {
            Err(BlockError::Torn {
                foreign_sectors, ..
            }) => assert_eq!(foreign_sectors, 1),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_flipped_bit_is_corrupt() {
        for at in [40, 600, BLOCK_SIZE - 1] {
            let mut b = block(11, 2);
            b[at] ^= 0x10;
            assert!(
                matches!(verify_block(11, &b), Err(BlockError::Corrupt { .. })),
                "flip at {at}"
            );
        }
        let mut b = block(11, 2);
        b[OFF_SUM] ^= 1;
        assert!(matches!(
            verify_block(11, &b),
            Err(BlockError::Corrupt { .. })
        ));
        let mut b = block(11, 2);
        b[0] = b'X';
        assert!(matches!(
            verify_block(11, &b),
            Err(BlockError::Corrupt { .. })
        ));
    }

    #[test]
    fn errors_display_what_is_wrong() {
        let e = verify_block(6, &block(5, 3)).unwrap_err();
        assert!(e.to_string().contains("misplaced"), "{e}");
        assert!(BlockError::Zero.to_string().contains("zeros"));
    }

    #[test]
    fn ledger_accepts_the_latest_durable_write() {
        let l = Ledger::new(4);
        let s1 = l.begin(0);
        l.ack(0, s1, Durability::Durable);
        let s2 = l.begin(0);
        l.ack(0, s2, Durability::Durable);
        assert!(s2 > s1);
        assert_eq!(l.check(0, &block(0, s2), true), Ok(s2));
        // The older write is lost data if it reappears.
        assert!(matches!(
            l.check(0, &block(0, s1), false),
            Err(Violation::Sequence { found, durable, .. }) if found == s1 && durable == s2
        ));
        // Zeros after a durable write: lost.
        assert!(matches!(
            l.check(0, &[0u8; BLOCK_SIZE], false),
            Err(Violation::Block {
                error: BlockError::Zero,
                ..
            })
        ));
        // Never written: zeros are right.
        assert_eq!(l.check(1, &[0u8; BLOCK_SIZE], true), Ok(0));
    }

    #[test]
    fn ledger_allows_in_doubt_writes_to_have_landed_or_not() {
        let l = Ledger::new(2);
        let s1 = l.begin(1);
        l.ack(1, s1, Durability::Durable);
        let s2 = l.begin(1); // in flight when the server died
        assert_eq!(l.check(1, &block(1, s1), true), Ok(s1));
        assert_eq!(l.check(1, &block(1, s2), true), Ok(s2));
        // A sequence never issued for this block is not allowed.
        let other = l.begin(0);
        assert!(l.check(1, &block(1, other), false).is_err());
        // Once a newer write is durable, the in-doubt one is stale.
        let s3 = l.begin(1);
        l.ack(1, s3, Durability::Durable);
        assert!(l.check(1, &block(1, s2), false).is_err());
    }

    #[test]
    fn ledger_unstable_writes_count_only_after_fsync() {
        let l = Ledger::new(1);
        let s1 = l.begin(0);
        l.ack(0, s1, Durability::Durable);
        let s2 = l.begin(0);
        l.ack(0, s2, Durability::Unstable);
        assert_eq!(l.latest_acked(0), s2);
        assert_eq!(l.durable(0), s1);
        // Before fsync a restarted server may have lost s2: both pass the
        // relaxed check; only the latest passes the strict one.
        assert_eq!(l.check(0, &block(0, s1), false), Ok(s1));
        assert_eq!(l.check(0, &block(0, s2), false), Ok(s2));
        assert!(l.check(0, &block(0, s1), true).is_err());
        l.mark_durable(0, s2);
        assert!(l.check(0, &block(0, s1), false).is_err());
        assert_eq!(l.check(0, &block(0, s2), false), Ok(s2));
    }

    #[test]
    fn ledger_reports_damaged_blocks() {
        let l = Ledger::new(2);
        let s = l.begin(0);
        l.ack(0, s, Durability::Durable);
        let mut b = block(0, s);
        b[5000] ^= 1;
        assert!(matches!(
            l.check(0, &b, false),
            Err(Violation::Block {
                error: BlockError::Corrupt { .. },
                ..
            })
        ));
        assert!(matches!(
            l.check(1, &block(0, s), false),
            Err(Violation::Block {
                error: BlockError::Misplaced { .. },
                ..
            })
        ));
    }

    #[test]
    fn check_all_walks_every_block_in_chunks() {
        let l = Ledger::new(10);
        let mut file = vec![0u8; 10 * BLOCK_SIZE];
        for b in 0..10u64 {
            let s = l.begin(b);
            l.ack(b, s, Durability::Durable);
            let at = b as usize * BLOCK_SIZE;
            encode_block(b, s, &mut file[at..at + BLOCK_SIZE]);
        }
        let read = |file: &[u8], first: u64, buf: &mut [u8]| -> Result<(), String> {
            let at = first as usize * BLOCK_SIZE;
            buf.copy_from_slice(&file[at..at + buf.len()]);
            Ok(())
        };
        let report = l.check_all(BLOCK_SIZE, 4, |first, buf| read(&file, first, buf));
        assert!(report.is_ok(), "{:?}", report.violations);
        assert_eq!(report.blocks, 10);
        assert_eq!(report.latest, 10);

        // Swap two blocks and lose a third: three violations.
        let (a, b) = file.split_at_mut(3 * BLOCK_SIZE);
        a[2 * BLOCK_SIZE..].swap_with_slice(&mut b[..BLOCK_SIZE]);
        file[7 * BLOCK_SIZE..8 * BLOCK_SIZE].fill(0);
        let report = l.check_all(BLOCK_SIZE, 4, |first, buf| read(&file, first, buf));
        assert_eq!(report.violations.len(), 3, "{:?}", report.violations);

        // A failed read marks its blocks.
        let report = l.check_all(BLOCK_SIZE, 4, |first, _buf: &mut [u8]| {
            if first == 4 {
                Err("EIO".to_string())
            } else {
                read(&file, first, _buf)
            }
        });
        assert!(report.violations.len() >= 4);
    }

    #[test]
    fn ledger_is_shared_between_threads() {
        let l = std::sync::Arc::new(Ledger::new(64));
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let l = &l;
                s.spawn(move || {
                    for i in 0..100u64 {
                        let b = (i * 4 + t) % 64;
                        let seq = l.begin(b);
                        l.ack(b, seq, Durability::Durable);
                    }
                });
            }
        });
        let latest: Vec<u64> = (0..64).map(|b| l.latest_acked(b)).collect();
        let mut sorted = latest.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 64, "sequences are unique per write");
    }
}
