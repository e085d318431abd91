//! The I/O path's codec for NFSv4.1: encoders that append a whole
//! `SEQUENCE, PUTFH, READ|WRITE|COMMIT` COMPOUND straight into a reused
//! buffer, and decoders of their replies that borrow instead of copying.
//! Same shape as NFSv3's [`nfs3::hotpath`](crate::nfs3::hotpath):
//!
//! * WRITE: [`encode_write_compound_header`] writes the COMPOUND up to and
//!   including the length word of WRITE's `data`; the caller then sends the
//!   data bytes and [`pad_len`](crate::xdr::pad_len)`(count)` zero bytes as
//!   separate iovecs. WRITE is the last operation, so the data ends the
//!   record and is never copied into the request.
//! * READ: [`decode_read_reply_head`] decodes everything before the data
//!   bytes (COMPOUND status, tag, SEQUENCE, PUTFH and READ results), so a
//!   driver can receive the payload straight into the caller's buffer: on
//!   success `count` data bytes and `pad_len(count)` padding follow and
//!   end the record. [`decode_read_reply`] does the same on a complete
//!   record and returns the data as a slice of it.
//!
//! Encoding allocates nothing once the buffer has grown to
//! [`WRITE_COMPOUND_HEADER_MAX`] (or [`READ_COMPOUND_MAX`]); decoding
//! allocates nothing. The bytes are exactly those of the general-purpose
//! [`COMPOUND4args`](super::compound::COMPOUND4args) and
//! [`COMPOUND4res`](super::compound::COMPOUND4res) (tested). The tag is
//! always empty and the minor version 1.

use super::io::{COMMIT4resok, WRITE4resok};
use super::result::Nfs4Res;
use super::session::{SEQUENCE4args, SEQUENCE4res, SEQUENCE4resok};
use super::types::{
    bitmap4, nfs_opnum4, nfsstat4, sessionid4, stable_how4, stateid4, verifier4, MAX_BITMAP_WORDS,
    NFS4_FHSIZE, NFS4_OPAQUE_LIMIT,
};
use crate::xdr::{Decode, DecodeError, Encode, XdrReader, XdrWrite};

/// The NFSv4 minor version every COMPOUND of this crate carries.
pub const NFS4_MINOR_VERSION: u32 = 1;

/// Bytes of an empty-tag COMPOUND header: tag length, minor version,
/// operation count.
const COMPOUND_HEADER_LEN: usize = 12;
/// Bytes of `OP_SEQUENCE` + `SEQUENCE4args`.
const SEQUENCE_OP_LEN: usize = 4 + SEQUENCE4args::SIZE;
/// Largest `OP_PUTFH` + `PUTFH4args` (a 128-byte handle).
const PUTFH_OP_MAX: usize = 4 + 4 + NFS4_FHSIZE;

/// Largest `SEQUENCE, PUTFH, READ` COMPOUND [`encode_read_compound`]
/// produces (RPC header not included): reserve this much to never
/// reallocate.
pub const READ_COMPOUND_MAX: usize =
    COMPOUND_HEADER_LEN + SEQUENCE_OP_LEN + PUTFH_OP_MAX + 4 + stateid4::SIZE + 8 + 4;
/// Largest `SEQUENCE, PUTFH, WRITE` header
/// [`encode_write_compound_header`] produces, up to and including the
/// data's length word.
pub const WRITE_COMPOUND_HEADER_MAX: usize =
    COMPOUND_HEADER_LEN + SEQUENCE_OP_LEN + PUTFH_OP_MAX + 4 + stateid4::SIZE + 8 + 4 + 4;
/// Largest `SEQUENCE, PUTFH, COMMIT` COMPOUND [`encode_commit_compound`]
/// produces.
pub const COMMIT_COMPOUND_MAX: usize =
    COMPOUND_HEADER_LEN + SEQUENCE_OP_LEN + PUTFH_OP_MAX + 4 + 8 + 4;
/// Largest `SEQUENCE, PUTFH, GETATTR` COMPOUND [`encode_getattr_compound`]
/// produces.
pub const GETATTR_COMPOUND_MAX: usize =
    COMPOUND_HEADER_LEN + SEQUENCE_OP_LEN + PUTFH_OP_MAX + 4 + 4 + 4 * MAX_BITMAP_WORDS;

/// Appends a `COMPOUND4args` header (RFC 8881 §16.2.1) with an empty tag,
/// minor version 1 and `numops` operations; the operations follow.
#[inline]
pub fn encode_compound_header(out: &mut Vec<u8>, numops: u32) {
    out.put_u32(0);
    out.put_u32(NFS4_MINOR_VERSION);
    out.put_u32(numops);
}

/// Appends `OP_SEQUENCE` and its `SEQUENCE4args` (RFC 8881 §18.46.1).
#[inline]
pub fn encode_sequence_op(out: &mut Vec<u8>, seq: &SEQUENCE4args) {
    out.put_u32(nfs_opnum4::OP_SEQUENCE.0);
    seq.encode(out);
}

/// Appends `OP_PUTFH` and the handle (RFC 8881 §18.19.1).
#[inline]
pub fn encode_putfh_op(out: &mut Vec<u8>, fh: &[u8]) {
    debug_assert!(fh.len() <= NFS4_FHSIZE);
    out.put_u32(nfs_opnum4::OP_PUTFH.0);
    out.put_opaque(fh);
}

/// Appends `SEQUENCE, PUTFH(fh), READ(stateid, offset, count)`: a whole
/// COMPOUND4args (RFC 8881 §18.22.1).
#[inline]
pub fn encode_read_compound(
    out: &mut Vec<u8>,
    seq: &SEQUENCE4args,
    fh: &[u8],
    stateid: &stateid4,
    offset: u64,
    count: u32,
) {
    encode_sequence_putfh(out, seq, fh);
    let mut op = [0u8; 4 + stateid4::SIZE + 12];
    put_stateid_op(&mut op, nfs_opnum4::OP_READ, stateid, offset);
    op[28..32].copy_from_slice(&count.to_be_bytes());
    out.extend_from_slice(&op);
}

/// Appends the header of a 3-operation COMPOUND and its first two
/// operations, `SEQUENCE(seq)` and `PUTFH(fh)`, with one copy of the fixed
/// part: the I/O path pays for each reserve-and-copy.
#[inline]
fn encode_sequence_putfh(out: &mut Vec<u8>, seq: &SEQUENCE4args, fh: &[u8]) {
    debug_assert!(fh.len() <= NFS4_FHSIZE);
    let mut head = [0u8; COMPOUND_HEADER_LEN + SEQUENCE_OP_LEN + 8];
    let mut w = |at: usize, v: u32| head[at..at + 4].copy_from_slice(&v.to_be_bytes());
    // tag length 0 (the array is zeroed), minor version, 3 operations.
    w(4, NFS4_MINOR_VERSION);
    w(8, 3);
    w(12, nfs_opnum4::OP_SEQUENCE.0);
    w(32, seq.sa_sequenceid);
    w(36, seq.sa_slotid);
    w(40, seq.sa_highest_slotid);
    w(44, seq.sa_cachethis as u32);
    w(48, nfs_opnum4::OP_PUTFH.0);
    w(52, fh.len() as u32);
    head[16..32].copy_from_slice(&seq.sa_sessionid.0);
    out.extend_from_slice(&head);
    out.put_opaque_fixed(fh);
}

/// Writes `op`, `stateid` and `offset` into the first 28 bytes of `buf`
/// (READ's and WRITE's arguments start alike).
#[inline]
fn put_stateid_op(buf: &mut [u8], op: nfs_opnum4, stateid: &stateid4, offset: u64) {
    buf[0..4].copy_from_slice(&op.0.to_be_bytes());
    buf[4..8].copy_from_slice(&stateid.seqid.to_be_bytes());
    buf[8..20].copy_from_slice(&stateid.other);
    buf[20..28].copy_from_slice(&offset.to_be_bytes());
}

/// Appends `SEQUENCE, PUTFH(fh), WRITE(stateid, offset, stable, data)` up
/// to and including the length word of `data` (which is `count`,
/// RFC 8881 §18.32.1). The caller sends exactly `count` data bytes next,
/// then `pad_len(count)` zero bytes; they end the record.
#[inline]
pub fn encode_write_compound_header(
    out: &mut Vec<u8>,
    seq: &SEQUENCE4args,
    fh: &[u8],
    stateid: &stateid4,
    offset: u64,
    stable: stable_how4,
    count: u32,
) {
    encode_sequence_putfh(out, seq, fh);
    let mut op = [0u8; 4 + stateid4::SIZE + 16];
    put_stateid_op(&mut op, nfs_opnum4::OP_WRITE, stateid, offset);
    op[28..32].copy_from_slice(&stable.0.to_be_bytes());
    op[32..36].copy_from_slice(&count.to_be_bytes());
    out.extend_from_slice(&op);
}

/// Appends `SEQUENCE, PUTFH(fh), COMMIT(offset, count)` (RFC 8881
/// §18.3.1).
#[inline]
pub fn encode_commit_compound(
    out: &mut Vec<u8>,
    seq: &SEQUENCE4args,
    fh: &[u8],
    offset: u64,
    count: u32,
) {
    encode_sequence_putfh(out, seq, fh);
    out.put_u32(nfs_opnum4::OP_COMMIT.0);
    out.put_u64(offset);
    out.put_u32(count);
}

/// Appends `SEQUENCE, PUTFH(fh), GETATTR(attrs)` (RFC 8881 §18.7.1).
#[inline]
pub fn encode_getattr_compound(out: &mut Vec<u8>, seq: &SEQUENCE4args, fh: &[u8], attrs: &bitmap4) {
    encode_sequence_putfh(out, seq, fh);
    out.put_u32(nfs_opnum4::OP_GETATTR.0);
    attrs.encode(out);
}

/// A decoded reply to a `SEQUENCE, PUTFH, op` COMPOUND; `T` is what the
/// last operation returns on success.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SequencedReply<T> {
    /// The COMPOUND status: `NFS4_OK` exactly when every operation
    /// succeeded (then [`ok`](Self::ok) is `Some`).
    pub status: nfsstat4,
    /// The SEQUENCE result; `None` when the reply has no results at all
    /// (a COMPOUND-level error such as `NFS4ERR_MINOR_VERS_MISMATCH`).
    /// A failed SEQUENCE means nothing else ran, and the slot's sequence
    /// id was not consumed (RFC 8881 §2.10.6.1).
    pub sequence: Option<SEQUENCE4res>,
    /// The operation that failed (SEQUENCE included), when one did.
    pub failed_op: Option<nfs_opnum4>,
    /// The last operation's data, when everything succeeded.
    pub ok: Option<T>,
}

impl<T> SequencedReply<T> {
    /// The SEQUENCE result's data, if SEQUENCE succeeded.
    pub fn sequence_ok(&self) -> Option<&SEQUENCE4resok> {
        self.sequence.as_ref().and_then(Nfs4Res::ok)
    }
}

/// READ's result before the data; see [`decode_read_reply_head`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOkHead {
    /// True if the read reached the end of the file.
    pub eof: bool,
    /// Bytes of data that follow (at most the count asked for).
    pub count: u32,
}

/// READ's result with the data borrowed from the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOk<'a> {
    /// True if the read reached the end of the file.
    pub eof: bool,
    /// The bytes read, a slice of the reply buffer (no copy).
    pub data: &'a [u8],
}

/// Decodes the reply to [`encode_read_compound`] (after the RPC reply
/// header) up to, not including, the data bytes. On success the reader is
/// left at the first data byte; `count` bytes and `pad_len(count)` padding
/// bytes follow and end the record, and they need not be in the reader
/// yet.
///
/// Errors, beyond truncation: the checks of
/// [`COMPOUND4res::decode_expecting`](super::compound::COMPOUND4res::decode_expecting)
/// (results in the order sent, nothing after a failure, the COMPOUND
/// status equal to the last result's), and data longer than `max_count`
/// (the count asked for): `TooLong { what: "READ4resok data", len, max }`.
pub fn decode_read_reply_head(
    r: &mut XdrReader<'_>,
    max_count: u32,
) -> Result<SequencedReply<ReadOkHead>, DecodeError> {
    decode_sequenced(r, nfs_opnum4::OP_READ, |r| {
        let eof = r.bool("READ4resok eof")?;
        let count = r.u32("READ4resok data")?;
        if count > max_count {
            return Err(DecodeError::TooLong {
                what: "READ4resok data",
                len: count as u64,
                max: max_count as u64,
            });
        }
        Ok(ReadOkHead { eof, count })
    })
}

/// Decodes a complete reply to [`encode_read_compound`], borrowing the
/// data from the reader's buffer; see [`decode_read_reply_head`]. The
/// reader is left after the data's padding.
pub fn decode_read_reply<'a>(
    r: &mut XdrReader<'a>,
    max_count: u32,
) -> Result<SequencedReply<ReadOk<'a>>, DecodeError> {
    decode_sequenced(r, nfs_opnum4::OP_READ, |r| {
        let eof = r.bool("READ4resok eof")?;
        let data = r.opaque(max_count as usize, "READ4resok data")?;
        Ok(ReadOk { eof, data })
    })
}

/// Decodes the reply to [`encode_write_compound_header`] without
/// allocating. An unknown `committed` value is kept (treat it as
/// `UNSTABLE4`).
pub fn decode_write_reply(
    r: &mut XdrReader<'_>,
) -> Result<SequencedReply<WRITE4resok>, DecodeError> {
    decode_sequenced(r, nfs_opnum4::OP_WRITE, WRITE4resok::decode)
}

/// Decodes the reply to [`encode_commit_compound`] without allocating:
/// on success, the write verifier to compare with the WRITEs'.
pub fn decode_commit_reply(
    r: &mut XdrReader<'_>,
) -> Result<SequencedReply<verifier4>, DecodeError> {
    decode_sequenced(r, nfs_opnum4::OP_COMMIT, |r| {
        Ok(COMMIT4resok::decode(r)?.writeverf)
    })
}

/// Decodes a `SEQUENCE, PUTFH, last` COMPOUND4res whose `last` result
/// data `ok` reads.
fn decode_sequenced<'a, T>(
    r: &mut XdrReader<'a>,
    last: nfs_opnum4,
    ok: impl FnOnce(&mut XdrReader<'a>) -> Result<T, DecodeError>,
) -> Result<SequencedReply<T>, DecodeError> {
    if let Some(seq) = decode_ok_prefix(r, last) {
        return Ok(SequencedReply {
            status: nfsstat4::NFS4_OK,
            sequence: Some(Nfs4Res::Ok(seq)),
            failed_op: None,
            ok: Some(ok(r)?),
        });
    }
    let mut walk = Walk::head(r, 3)?;
    let mut reply = SequencedReply {
        status: walk.status,
        sequence: None,
        failed_op: None,
        ok: None,
    };
    match walk.next(r, nfs_opnum4::OP_SEQUENCE)? {
        None => return walk.done(reply),
        Some(nfsstat4::NFS4_OK) => reply.sequence = Some(Nfs4Res::Ok(SEQUENCE4resok::decode(r)?)),
        Some(failed) => {
            reply.sequence = Some(Nfs4Res::Fail(failed));
            reply.failed_op = Some(nfs_opnum4::OP_SEQUENCE);
            return walk.done(reply);
        }
    }
    match walk.next(r, nfs_opnum4::OP_PUTFH)? {
        None => return walk.done(reply),
        Some(nfsstat4::NFS4_OK) => {}
        Some(_) => {
            reply.failed_op = Some(nfs_opnum4::OP_PUTFH);
            return walk.done(reply);
        }
    }
    match walk.next(r, last)? {
        None => {}
        Some(nfsstat4::NFS4_OK) => reply.ok = Some(ok(r)?),
        Some(_) => reply.failed_op = Some(last),
    }
    walk.done(reply)
}

/// Bytes of a successful `SEQUENCE, PUTFH, op` reply before op's data:
/// status, empty tag, 3 results, SEQUENCE's, PUTFH's, op's number and
/// status.
const OK_PREFIX_LEN: usize = 20 + SEQUENCE4resok::SIZE + 16;

/// The common case in one bounds check (as the RPC reply header's fast
/// path does): a reply whose status, tag, result count, operation numbers
/// and statuses are exactly those of a successful `SEQUENCE, PUTFH, last`
/// with an empty tag. Takes those bytes and returns SEQUENCE's result, or
/// leaves the reader alone (`None`) for the general walk, which decodes
/// such a reply the same way (tested).
#[inline]
fn decode_ok_prefix(r: &mut XdrReader<'_>, last: nfs_opnum4) -> Option<SEQUENCE4resok> {
    let b = r.rest().get(..OK_PREFIX_LEN)?;
    let w = |at: usize| u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
    let fixed = [
        (0, nfsstat4::NFS4_OK.0),
        (4, 0),
        (8, 3),
        (12, nfs_opnum4::OP_SEQUENCE.0),
        (16, nfsstat4::NFS4_OK.0),
        (56, nfs_opnum4::OP_PUTFH.0),
        (60, nfsstat4::NFS4_OK.0),
        (64, last.0),
        (68, nfsstat4::NFS4_OK.0),
    ];
    if fixed.iter().any(|&(at, v)| w(at) != v) {
        return None;
    }
    let mut sessionid = [0u8; 16];
    sessionid.copy_from_slice(&b[20..36]);
    let seq = SEQUENCE4resok {
        sr_sessionid: sessionid4(sessionid),
        sr_sequenceid: w(36),
        sr_slotid: w(40),
        sr_highest_slotid: w(44),
        sr_target_highest_slotid: w(48),
        sr_status_flags: w(52),
    };
    r.take(OK_PREFIX_LEN, "COMPOUND4res").ok()?;
    Some(seq)
}

/// Walks the results of a COMPOUND4res one operation at a time, holding
/// the server to RFC 8881 §16.2.3 like the general decoder.
struct Walk {
    status: nfsstat4,
    /// Results the reply claims.
    n: usize,
    /// Operations sent.
    sent: usize,
    /// Results read so far.
    read: usize,
    /// The status of the last result read.
    last: Option<nfsstat4>,
}

impl Walk {
    /// Reads status, tag (skipped: it is ours, empty) and the result
    /// count, at most `sent`.
    fn head(r: &mut XdrReader<'_>, sent: usize) -> Result<Self, DecodeError> {
        let status = nfsstat4::decode(r)?;
        r.opaque(NFS4_OPAQUE_LIMIT, "COMPOUND4res tag")?;
        let n = r.array_len(sent, 8, "COMPOUND4res resarray")?;
        Ok(Self {
            status,
            n,
            sent,
            read: 0,
            last: None,
        })
    }

    /// Reads the next result's operation number (which must be
    /// `expected`, or `OP_ILLEGAL` with a failure) and status; `None` when
    /// the reply has no more results.
    fn next(
        &mut self,
        r: &mut XdrReader<'_>,
        expected: nfs_opnum4,
    ) -> Result<Option<nfsstat4>, DecodeError> {
        if self.read == self.n {
            return Ok(None);
        }
        let op = nfs_opnum4::decode(r)?;
        let status = nfsstat4::decode(r)?;
        if op != expected && (op != nfs_opnum4::OP_ILLEGAL || status.is_ok()) {
            return Err(DecodeError::BadDiscriminant {
                what: "nfs_resop4 (not the operation sent at its place)",
                value: op.0,
            });
        }
        self.read += 1;
        if !status.is_ok() && self.read < self.n {
            return Err(DecodeError::TooLong {
                what: "COMPOUND4res resarray (results after a failed operation)",
                len: self.n as u64,
                max: self.read as u64,
            });
        }
        self.last = Some(status);
        Ok(Some(status))
    }

    /// Final checks: the COMPOUND status is the last result's, and a
    /// reply where nothing failed answers every operation (an OK COMPOUND
    /// with missing results is as broken as one with extra results).
    fn done<T>(self, reply: SequencedReply<T>) -> Result<SequencedReply<T>, DecodeError> {
        if let Some(last) = self.last {
            if last != self.status {
                return Err(DecodeError::BadDiscriminant {
                    what: "COMPOUND4res status (not the last result's)",
                    value: self.status.0,
                });
            }
        }
        let failed = self.last.is_some_and(|s| !s.is_ok());
        if !failed && self.status.is_ok() && self.read < self.sent {
            return Err(DecodeError::Truncated {
                what: "COMPOUND4res resarray (fewer results than operations, none failed)",
                need: self.sent,
                have: self.read,
            });
        }
        Ok(reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nfs4::compound::{nfs_argop4, nfs_resop4, COMPOUND4args, COMPOUND4res};
    use crate::nfs4::fh::PUTFH4args;
    use crate::nfs4::getattr::GETATTR4args;
    use crate::nfs4::io::{COMMIT4args, READ4args, READ4resok, WRITE4args};
    use crate::nfs4::types::{nfs_fh4, sessionid4, MAX_BITMAP_WORDS, NFS4_FHSIZE};
    use crate::xdr::{pad_len, to_bytes};

    fn seq() -> SEQUENCE4args {
        SEQUENCE4args {
            sa_sessionid: sessionid4([0x5a; 16]),
            sa_sequenceid: 7,
            sa_slotid: 2,
            sa_highest_slotid: 15,
            sa_cachethis: false,
        }
    }

    fn fh() -> nfs_fh4 {
        nfs_fh4::new(&[1, 2, 3, 4, 5]).unwrap()
    }

    fn stateid() -> stateid4 {
        stateid4 {
            seqid: 1,
            other: [9; 12],
        }
    }

    fn compound(op: nfs_argop4) -> Vec<u8> {
        to_bytes(&COMPOUND4args {
            tag: Default::default(),
            minorversion: 1,
            argarray: vec![
                nfs_argop4::OP_SEQUENCE(seq()),
                nfs_argop4::OP_PUTFH(PUTFH4args { object: fh() }),
                op,
            ],
        })
    }

    #[test]
    fn fast_encoders_match_the_general_compound() {
        let mut out = Vec::new();
        encode_read_compound(&mut out, &seq(), fh().as_bytes(), &stateid(), 4096, 8192);
        assert!(out.len() <= READ_COMPOUND_MAX);
        let read = READ4args {
            stateid: stateid(),
            offset: 4096,
            count: 8192,
        };
        assert_eq!(out, compound(nfs_argop4::OP_READ(read)));

        out.clear();
        encode_commit_compound(&mut out, &seq(), fh().as_bytes(), 0, 0);
        assert!(out.len() <= COMMIT_COMPOUND_MAX);
        let commit = COMMIT4args {
            offset: 0,
            count: 0,
        };
        assert_eq!(out, compound(nfs_argop4::OP_COMMIT(commit)));

        out.clear();
        let attrs = bitmap4::from_bits(&[1, 4, 33]);
        encode_getattr_compound(&mut out, &seq(), fh().as_bytes(), &attrs);
        assert!(out.len() <= GETATTR_COMPOUND_MAX);
        let getattr = GETATTR4args {
            attr_request: attrs,
        };
        assert_eq!(out, compound(nfs_argop4::OP_GETATTR(getattr)));
    }

    #[test]
    fn encoders_never_grow_a_buffer_reserved_for_the_largest_compound() {
        let fh = nfs_fh4::new(&[0xfe; NFS4_FHSIZE]).unwrap();
        let attrs = bitmap4::from_words(&[u32::MAX; MAX_BITMAP_WORDS]).unwrap();
        let largest = [
            WRITE_COMPOUND_HEADER_MAX,
            READ_COMPOUND_MAX,
            COMMIT_COMPOUND_MAX,
            GETATTR_COMPOUND_MAX,
        ];
        let mut out = Vec::with_capacity(largest.into_iter().max().unwrap());
        let cap = out.capacity();
        for _ in 0..3 {
            out.clear();
            encode_write_compound_header(
                &mut out,
                &seq(),
                fh.as_bytes(),
                &stateid(),
                1,
                stable_how4::FILE_SYNC4,
                8192,
            );
            assert_eq!(out.len(), WRITE_COMPOUND_HEADER_MAX);
            out.clear();
            encode_read_compound(&mut out, &seq(), fh.as_bytes(), &stateid(), 1, 8192);
            assert_eq!(out.len(), READ_COMPOUND_MAX);
            out.clear();
            encode_commit_compound(&mut out, &seq(), fh.as_bytes(), 0, 0);
            assert_eq!(out.len(), COMMIT_COMPOUND_MAX);
            out.clear();
            encode_getattr_compound(&mut out, &seq(), fh.as_bytes(), &attrs);
            assert_eq!(out.len(), GETATTR_COMPOUND_MAX);
        }
        assert_eq!(out.capacity(), cap, "no reallocation");
    }

    #[test]
    fn building_blocks_make_other_compounds_too() {
        // A SEQUENCE-only COMPOUND: what renews an idle client's lease.
        let mut out = Vec::new();
        encode_compound_header(&mut out, 1);
        encode_sequence_op(&mut out, &seq());
        let general = COMPOUND4args {
            tag: Default::default(),
            minorversion: 1,
            argarray: vec![nfs_argop4::OP_SEQUENCE(seq())],
        };
        assert_eq!(out, to_bytes(&general));
        out.clear();
        encode_compound_header(&mut out, 2);
        encode_sequence_op(&mut out, &seq());
        encode_putfh_op(&mut out, fh().as_bytes());
        let general = COMPOUND4args {
            argarray: vec![
                nfs_argop4::OP_SEQUENCE(seq()),
                nfs_argop4::OP_PUTFH(PUTFH4args { object: fh() }),
            ],
            ..general
        };
        assert_eq!(out, to_bytes(&general));
    }

    #[test]
    fn write_header_plus_data_plus_pad_equals_the_compound() {
        let data = b"hello".to_vec();
        let mut out = Vec::new();
        encode_write_compound_header(
            &mut out,
            &seq(),
            fh().as_bytes(),
            &stateid(),
            8,
            stable_how4::FILE_SYNC4,
            5,
        );
        assert!(out.len() <= WRITE_COMPOUND_HEADER_MAX);
        out.extend_from_slice(&data);
        out.resize(out.len() + pad_len(data.len()), 0);
        let write = WRITE4args {
            stateid: stateid(),
            offset: 8,
            stable: stable_how4::FILE_SYNC4,
            data,
        };
        assert_eq!(out, compound(nfs_argop4::OP_WRITE(write)));
    }

    fn seq_ok() -> nfs_resop4 {
        nfs_resop4::OP_SEQUENCE(Nfs4Res::Ok(SEQUENCE4resok {
            sr_sessionid: sessionid4([0x5a; 16]),
            sr_sequenceid: 7,
            sr_slotid: 2,
            sr_highest_slotid: 15,
            sr_target_highest_slotid: 15,
            sr_status_flags: 0,
        }))
    }

    fn reply(status: nfsstat4, resarray: Vec<nfs_resop4>) -> Vec<u8> {
        to_bytes(&COMPOUND4res {
            status,
            tag: Default::default(),
            resarray,
        })
    }

    fn read_ok(data: &[u8]) -> Vec<u8> {
        reply(
            nfsstat4::NFS4_OK,
            vec![
                seq_ok(),
                nfs_resop4::OP_PUTFH(nfsstat4::NFS4_OK),
                nfs_resop4::OP_READ(Nfs4Res::Ok(READ4resok {
                    eof: true,
                    data: data.to_vec(),
                })),
            ],
        )
    }

    #[test]
    fn read_reply_borrows_the_data_and_the_head_stops_before_it() {
        let bytes = read_ok(b"hello");
        let mut r = XdrReader::new(&bytes);
        let full = decode_read_reply(&mut r, 8192).unwrap();
        assert_eq!(r.remaining(), 0);
        let ok = full.ok.unwrap();
        assert_eq!((ok.eof, ok.data), (true, &b"hello"[..]));
        let data_at = bytes.len() - 8;
        assert!(std::ptr::eq(ok.data.as_ptr(), bytes[data_at..].as_ptr()));
        assert_eq!(full.sequence_ok().unwrap().sr_slotid, 2);

        let mut r = XdrReader::new(&bytes[..data_at]);
        let head = decode_read_reply_head(&mut r, 5).unwrap();
        assert_eq!(
            head.ok,
            Some(ReadOkHead {
                eof: true,
                count: 5
            })
        );
        assert_eq!(r.remaining(), 0);
    }

    #[test]
    fn the_one_check_fast_path_and_the_walk_agree() {
        let fast_bytes = read_ok(b"hello");
        // A tag (legal, ours is empty) sends the same reply down the walk.
        let mut x: COMPOUND4res = crate::xdr::decode_exact(&fast_bytes, "c").unwrap();
        x.tag = "t".into();
        let walk_bytes = to_bytes(&x);
        let fast = decode_read_reply(&mut XdrReader::new(&fast_bytes), 10).unwrap();
        let walk = decode_read_reply(&mut XdrReader::new(&walk_bytes), 10).unwrap();
        assert_eq!(fast, walk);
        assert_eq!(
            decode_read_reply_head(&mut XdrReader::new(&fast_bytes), 10).unwrap(),
            decode_read_reply_head(&mut XdrReader::new(&walk_bytes), 10).unwrap()
        );
    }

    #[test]
    fn read_reply_refuses_more_data_than_asked_for() {
        let bytes = read_ok(b"hello");
        for decode in [
            |r: &mut XdrReader<'_>| decode_read_reply_head(r, 4).map(|_| ()),
            |r: &mut XdrReader<'_>| decode_read_reply(r, 4).map(|_| ()),
        ] {
            assert_eq!(
                decode(&mut XdrReader::new(&bytes)).unwrap_err(),
                DecodeError::TooLong {
                    what: "READ4resok data",
                    len: 5,
                    max: 4
                }
            );
        }
    }

    #[test]
    fn failed_sequence_is_reported_with_nothing_after_it() {
        let bytes = reply(
            nfsstat4::NFS4ERR_BADSESSION,
            vec![nfs_resop4::OP_SEQUENCE(Nfs4Res::Fail(
                nfsstat4::NFS4ERR_BADSESSION,
            ))],
        );
        let r = decode_write_reply(&mut XdrReader::new(&bytes)).unwrap();
        assert_eq!(r.status, nfsstat4::NFS4ERR_BADSESSION);
        assert_eq!(r.failed_op, Some(nfs_opnum4::OP_SEQUENCE));
        assert_eq!(
            r.sequence,
            Some(Nfs4Res::Fail(nfsstat4::NFS4ERR_BADSESSION))
        );
        assert!(r.ok.is_none() && r.sequence_ok().is_none());
    }

    #[test]
    fn failed_putfh_and_failed_write_name_the_operation() {
        let bytes = reply(
            nfsstat4::NFS4ERR_STALE,
            vec![seq_ok(), nfs_resop4::OP_PUTFH(nfsstat4::NFS4ERR_STALE)],
        );
        let r = decode_commit_reply(&mut XdrReader::new(&bytes)).unwrap();
        assert_eq!(r.failed_op, Some(nfs_opnum4::OP_PUTFH));
        assert!(r.sequence_ok().is_some());

        let bytes = reply(
            nfsstat4::NFS4ERR_NOSPC,
            vec![
                seq_ok(),
                nfs_resop4::OP_PUTFH(nfsstat4::NFS4_OK),
                nfs_resop4::OP_WRITE(Nfs4Res::Fail(nfsstat4::NFS4ERR_NOSPC)),
            ],
        );
        let r = decode_write_reply(&mut XdrReader::new(&bytes)).unwrap();
        assert_eq!(r.failed_op, Some(nfs_opnum4::OP_WRITE));
        assert_eq!(r.status, nfsstat4::NFS4ERR_NOSPC);
    }

    #[test]
    fn hostile_replies_are_errors() {
        // Everything OK but the READ result missing.
        let bytes = reply(
            nfsstat4::NFS4_OK,
            vec![seq_ok(), nfs_resop4::OP_PUTFH(nfsstat4::NFS4_OK)],
        );
        assert!(matches!(
            decode_read_reply(&mut XdrReader::new(&bytes), 10),
            Err(DecodeError::Truncated { .. })
        ));
        // A failure, then more results.
        let mut bytes = reply(
            nfsstat4::NFS4ERR_STALE,
            vec![seq_ok(), nfs_resop4::OP_PUTFH(nfsstat4::NFS4ERR_STALE)],
        );
        bytes[11] = 3; // claim a third result
        bytes.extend_from_slice(&[0, 0, 0, 25, 0, 0, 0, 0]);
        assert!(matches!(
            decode_read_reply(&mut XdrReader::new(&bytes), 10),
            Err(DecodeError::TooLong { .. })
        ));
        // Four results for three operations.
        let mut bytes = read_ok(b"");
        bytes[11] = 4;
        assert!(matches!(
            decode_read_reply(&mut XdrReader::new(&bytes), 10),
            Err(DecodeError::TooLong {
                what: "COMPOUND4res resarray",
                ..
            })
        ));
        // The results of another COMPOUND (GETFH where PUTFH was sent).
        let bytes = reply(
            nfsstat4::NFS4_OK,
            vec![
                seq_ok(),
                nfs_resop4::OP_GETFH(Nfs4Res::Ok(Default::default())),
            ],
        );
        assert!(matches!(
            decode_read_reply(&mut XdrReader::new(&bytes), 10),
            Err(DecodeError::BadDiscriminant { value: 10, .. })
        ));
        // COMPOUND status OK over a failed operation.
        let bytes = reply(
            nfsstat4::NFS4_OK,
            vec![nfs_resop4::OP_SEQUENCE(Nfs4Res::Fail(
                nfsstat4::NFS4ERR_DELAY,
            ))],
        );
        assert!(matches!(
            decode_read_reply(&mut XdrReader::new(&bytes), 10),
            Err(DecodeError::BadDiscriminant { .. })
        ));
    }

    #[test]
    fn ok_compound_without_results_is_an_error() {
        let bytes = reply(nfsstat4::NFS4_OK, vec![]);
        assert!(matches!(
            decode_write_reply(&mut XdrReader::new(&bytes)),
            Err(DecodeError::Truncated {
                need: 3,
                have: 0,
                ..
            })
        ));
    }

    #[test]
    fn compound_level_error_without_results() {
        let bytes = reply(nfsstat4::NFS4ERR_MINOR_VERS_MISMATCH, vec![]);
        let r = decode_read_reply(&mut XdrReader::new(&bytes), 10).unwrap();
        assert_eq!(r.status, nfsstat4::NFS4ERR_MINOR_VERS_MISMATCH);
        assert!(r.sequence.is_none() && r.failed_op.is_none() && r.ok.is_none());
    }

    #[test]
    fn fast_decoders_agree_with_the_general_one() {
        let bytes = read_ok(b"abc");
        let general = COMPOUND4res::decode_expecting(
            &mut XdrReader::new(&bytes),
            &[
                nfs_opnum4::OP_SEQUENCE,
                nfs_opnum4::OP_PUTFH,
                nfs_opnum4::OP_READ,
            ],
        )
        .unwrap();
        let fast = decode_read_reply(&mut XdrReader::new(&bytes), 3).unwrap();
        let nfs_resop4::OP_READ(Nfs4Res::Ok(read)) = &general.resarray[2] else {
            panic!("{general:?}")
        };
        assert_eq!(fast.ok.unwrap().data, read.data);
        let nfs_resop4::OP_SEQUENCE(seq) = &general.resarray[0] else {
            panic!("{general:?}")
        };
        assert_eq!(fast.sequence.as_ref(), Some(seq));
    }
}
