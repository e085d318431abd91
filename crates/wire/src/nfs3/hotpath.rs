//! The I/O driver's codec for READ, WRITE, COMMIT and GETATTR: encoders
//! that append straight into a reused buffer, and decoders that borrow the
//! data instead of copying it.
//!
//! * WRITE: [`encode_write_args_header`] writes `WRITE3args` up to and
//!   including the length word of `data`; the caller then sends the data
//!   bytes and [`pad_len`](crate::xdr::pad_len)`(count)` zero bytes as
//!   separate iovecs, so the payload is never copied into the request.
//! * READ: [`decode_read_reply_head`] decodes everything before the data
//!   bytes, so a driver can receive the payload straight into the caller's
//!   buffer; [`decode_read_reply_status`] does the same without building
//!   the attributes; [`decode_read_reply`] does the same on a complete
//!   record and returns the payload as a slice of it.
//!
//! The bytes are exactly those of the general-purpose types in
//! [`io`](super::io) and [`getattr`](super::getattr) (tested).

use super::attr::{post_op_attr, wcc_data, FATTR3_SIZE};
use super::io::check_count;
use super::types::{nfsstat3, stable_how, writeverf3, NFS3_FHSIZE};
use crate::xdr::{Decode, DecodeError, XdrReader, XdrWrite};

/// Largest `WRITE3args` header [`encode_write_args_header`] produces
/// (64-byte handle): reserve this much to never reallocate.
pub const WRITE_ARGS_HEADER_MAX: usize = 4 + NFS3_FHSIZE + 8 + 4 + 4 + 4;

/// Appends `GETATTR3args` (RFC 1813 §3.3.1) for handle `fh`.
#[inline]
pub fn encode_getattr_args(out: &mut Vec<u8>, fh: &[u8]) {
    debug_assert!(fh.len() <= NFS3_FHSIZE);
    out.put_opaque(fh);
}

/// Appends `READ3args` (RFC 1813 §3.3.6): `file`, `offset`, `count`.
#[inline]
pub fn encode_read_args(out: &mut Vec<u8>, fh: &[u8], offset: u64, count: u32) {
    debug_assert!(fh.len() <= NFS3_FHSIZE);
    out.put_opaque(fh);
    out.put_u64(offset);
    out.put_u32(count);
}

/// Appends `WRITE3args` (RFC 1813 §3.3.7) up to and including the length
/// word of `data` (which is `count`). The caller sends exactly `count`
/// data bytes next, then `pad_len(count)` zero bytes.
#[inline]
pub fn encode_write_args_header(
    out: &mut Vec<u8>,
    fh: &[u8],
    offset: u64,
    count: u32,
    stable: stable_how,
) {
    debug_assert!(fh.len() <= NFS3_FHSIZE);
    out.put_opaque(fh);
    out.put_u64(offset);
    out.put_u32(count);
    out.put_u32(stable.0);
    out.put_u32(count);
}

/// Appends `COMMIT3args` (RFC 1813 §3.3.21): `file`, `offset`, `count`.
#[inline]
pub fn encode_commit_args(out: &mut Vec<u8>, fh: &[u8], offset: u64, count: u32) {
    debug_assert!(fh.len() <= NFS3_FHSIZE);
    out.put_opaque(fh);
    out.put_u64(offset);
    out.put_u32(count);
}

/// The part of a `READ3res` before the data bytes; see
/// [`decode_read_reply_head`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadReplyHead {
    /// The status; [`ok`](Self::ok) is `Some` exactly when it is `NFS3_OK`.
    pub status: nfsstat3,
    /// The file's attributes (both arms carry them).
    pub file_attributes: post_op_attr,
    /// On success: the count and eof flag; `count` data bytes follow.
    pub ok: Option<ReadOkHead>,
}

/// `READ3resok` fields before the data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOkHead {
    /// Bytes of data that follow (checked equal to the opaque length and at
    /// most the requested count).
    pub count: u32,
    /// True if the read reached the end of the file.
    pub eof: bool,
}

/// A decoded `READ3res` whose data borrows the reply buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadReply<'a> {
    /// The status; [`ok`](Self::ok) is `Some` exactly when it is `NFS3_OK`.
    pub status: nfsstat3,
    /// The file's attributes (both arms carry them).
    pub file_attributes: post_op_attr,
    /// On success: count, eof and the data.
    pub ok: Option<ReadOk<'a>>,
}

/// `READ3resok` with the data borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOk<'a> {
    /// Bytes returned; always equal to `data.len()`.
    pub count: u32,
    /// True if the read reached the end of the file.
    pub eof: bool,
    /// The bytes read, a slice of the reply buffer (no copy).
    pub data: &'a [u8],
}

/// Decodes a `READ3res` (RFC 1813 §3.3.6) up to, not including, the data
/// bytes. On success the reader is left at the first data byte; `count`
/// bytes and `pad_len(count)` padding bytes follow, and they need not be in
/// the reader yet (the driver can receive them straight into the caller's
/// buffer).
///
/// Errors, beyond truncation:
/// * data longer than `max_count` (the count requested):
///   `TooLong { what: "READ3resok data", len, max: max_count }`;
/// * the `count` field disagrees with the opaque length:
///   `TooLong { what: "READ3resok data (longer than count)", .. }` or
///   `Truncated { what: "READ3resok data (shorter than count)", .. }`.
///   RFC 1813 makes them equal; a reply where they differ cannot be
///   trusted, so it is refused (as the Linux client does with EIO) rather
///   than left for every caller to check.
///
/// An unknown status decodes as a failure with the status kept.
pub fn decode_read_reply_head(
    r: &mut XdrReader<'_>,
    max_count: u32,
) -> Result<ReadReplyHead, DecodeError> {
    let status = nfsstat3::decode(r)?;
    let file_attributes = post_op_attr::decode(r)?;
    let ok = read_ok_head(r, status, max_count)?;
    Ok(ReadReplyHead {
        status,
        file_attributes,
        ok,
    })
}

/// [`decode_read_reply_head`] without the attributes: the status and, on
/// success, count and eof — all the I/O driver needs. The attributes are
/// checked (their presence flag and their length) and skipped, so the
/// result and the errors are those of [`decode_read_reply_head`] (tested);
/// building them would cost as much as the rest of the reply.
pub fn decode_read_reply_status(
    r: &mut XdrReader<'_>,
    max_count: u32,
) -> Result<(nfsstat3, Option<ReadOkHead>), DecodeError> {
    let status = nfsstat3::decode(r)?;
    // post_op_attr: the same reads `post_op_attr::decode` makes.
    if r.bool("optional-data")? {
        let _: &[u8; FATTR3_SIZE] = r.array("fattr3")?;
    }
    Ok((status, read_ok_head(r, status, max_count)?))
}

/// The rest of a READ3res head after the attributes: on success, count,
/// eof and the data's length, checked against each other and `max_count`.
fn read_ok_head(
    r: &mut XdrReader<'_>,
    status: nfsstat3,
    max_count: u32,
) -> Result<Option<ReadOkHead>, DecodeError> {
    if !status.is_ok() {
        return Ok(None);
    }
    let count = r.u32("READ3resok count")?;
    let eof = r.bool("READ3resok eof")?;
    let data_len = r.u32("READ3resok data")?;
    if data_len > max_count {
        return Err(DecodeError::TooLong {
            what: "READ3resok data",
            len: data_len as u64,
            max: max_count as u64,
        });
    }
    check_count(
        count,
        data_len as usize,
        "READ3resok data (longer than count)",
        "READ3resok data (shorter than count)",
    )?;
    Ok(Some(ReadOkHead { count, eof }))
}

/// Decodes a complete `READ3res` (RFC 1813 §3.3.6), borrowing the data
/// from the reader's buffer. `max_count` is the count that was requested;
/// see [`decode_read_reply_head`] for the errors. The reader is left after
/// the data's padding.
pub fn decode_read_reply<'a>(
    r: &mut XdrReader<'a>,
    max_count: u32,
) -> Result<ReadReply<'a>, DecodeError> {
    let head = decode_read_reply_head(r, max_count)?;
    let ok = match head.ok {
        None => None,
        Some(ReadOkHead { count, eof }) => Some(ReadOk {
            count,
            eof,
            data: r.opaque_fixed(count as usize, "READ3resok data")?,
        }),
    };
    Ok(ReadReply {
        status: head.status,
        file_attributes: head.file_attributes,
        ok,
    })
}

/// A decoded `WRITE3res` (RFC 1813 §3.3.7); fixed size, no allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteReply {
    /// The status; [`ok`](Self::ok) is `Some` exactly when it is `NFS3_OK`.
    pub status: nfsstat3,
    /// The file's attributes before and after (both arms carry them).
    pub file_wcc: wcc_data,
    /// On success: count, committed and verifier.
    pub ok: Option<WriteOk>,
}

/// `WRITE3resok` fields after `file_wcc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteOk {
    /// Bytes written (may be less than sent: the caller resends the rest).
    pub count: u32,
    /// How durable the data is (`FILE_SYNC` means on stable storage).
    pub committed: stable_how,
    /// The server's write verifier.
    pub verf: writeverf3,
}

/// Decodes a `WRITE3res` (RFC 1813 §3.3.7) without allocating. An unknown
/// status decodes as a failure with the status kept; an unknown
/// `committed` value is kept too (treat it as `UNSTABLE`).
pub fn decode_write_reply(r: &mut XdrReader<'_>) -> Result<WriteReply, DecodeError> {
    let status = nfsstat3::decode(r)?;
    let file_wcc = wcc_data::decode(r)?;
    let ok = if status.is_ok() {
        Some(WriteOk {
            count: r.u32("WRITE3resok count")?,
            committed: stable_how::decode(r)?,
            verf: writeverf3::decode(r)?,
        })
    } else {
        None
    };
    Ok(WriteReply {
        status,
        file_wcc,
        ok,
    })
}

/// A decoded `COMMIT3res` (RFC 1813 §3.3.21); fixed size, no allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommitReply {
    /// The status; `verf` is `Some` exactly when it is `NFS3_OK`.
    pub status: nfsstat3,
    /// The file's attributes before and after.
    pub file_wcc: wcc_data,
    /// On success, the write verifier to compare with the WRITEs'.
    pub verf: Option<writeverf3>,
}

/// Decodes a `COMMIT3res` (RFC 1813 §3.3.21) without allocating.
pub fn decode_commit_reply(r: &mut XdrReader<'_>) -> Result<CommitReply, DecodeError> {
    let status = nfsstat3::decode(r)?;
    let file_wcc = wcc_data::decode(r)?;
    let verf = if status.is_ok() {
        Some(writeverf3::decode(r)?)
    } else {
        None
    };
    Ok(CommitReply {
        status,
        file_wcc,
        verf,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nfs3::Nfs3Res;
    use crate::nfs3::{
        nfs_fh3, COMMIT3args, GETATTR3args, READ3args, READ3res, READ3resfail, READ3resok,
        WRITE3args,
    };
    use crate::xdr::{pad_len, to_bytes, Encode};

    fn fh() -> nfs_fh3 {
        nfs_fh3::new(&[1, 2, 3, 4, 5]).unwrap()
    }

    #[test]
    fn write_header_plus_data_plus_pad_equals_write3args() {
        let data = b"hello".to_vec();
        let mut out = Vec::new();
        encode_write_args_header(&mut out, fh().as_bytes(), 4096, 5, stable_how::FILE_SYNC);
        assert!(out.len() <= WRITE_ARGS_HEADER_MAX);
        out.extend_from_slice(&data);
        out.resize(out.len() + pad_len(data.len()), 0);
        let args = WRITE3args {
            file: fh(),
            offset: 4096,
            count: 5,
            stable: stable_how::FILE_SYNC,
            data,
        };
        assert_eq!(out, to_bytes(&args));
    }

    #[test]
    fn fast_read_commit_getattr_args_match_structs() {
        let mut out = Vec::new();
        encode_read_args(&mut out, fh().as_bytes(), 7, 8192);
        let expect = READ3args {
            file: fh(),
            offset: 7,
            count: 8192,
        };
        assert_eq!(out, to_bytes(&expect));
        out.clear();
        encode_commit_args(&mut out, fh().as_bytes(), 0, 0);
        assert_eq!(
            out,
            to_bytes(&COMMIT3args {
                file: fh(),
                offset: 0,
                count: 0
            })
        );
        out.clear();
        encode_getattr_args(&mut out, fh().as_bytes());
        assert_eq!(out, to_bytes(&GETATTR3args { object: fh() }));
    }

    fn read_ok_bytes(count: u32, data: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        nfsstat3::NFS3_OK.encode(&mut v);
        v.put_bool(false); // no attributes
        v.put_u32(count);
        v.put_bool(true);
        v.put_opaque(data);
        v
    }

    #[test]
    fn read_reply_borrows_data() {
        let bytes = read_ok_bytes(3, b"abc");
        let mut r = XdrReader::new(&bytes);
        let reply = decode_read_reply(&mut r, 8192).unwrap();
        assert_eq!(r.remaining(), 0);
        let ok = reply.ok.unwrap();
        assert_eq!((ok.count, ok.eof, ok.data), (3, true, &b"abc"[..]));
        assert!(std::ptr::eq(ok.data.as_ptr(), bytes[20..].as_ptr()));
    }

    #[test]
    fn read_reply_rejects_more_data_than_requested() {
        let bytes = read_ok_bytes(5, b"hello");
        let err = decode_read_reply(&mut XdrReader::new(&bytes), 4).unwrap_err();
        assert_eq!(
            err,
            DecodeError::TooLong {
                what: "READ3resok data",
                len: 5,
                max: 4
            }
        );
    }

    #[test]
    fn read_reply_rejects_count_that_disagrees_with_data_length() {
        let bytes = read_ok_bytes(4, b"hello");
        assert!(matches!(
            decode_read_reply(&mut XdrReader::new(&bytes), 100),
            Err(DecodeError::TooLong {
                what: "READ3resok data (longer than count)",
                ..
            })
        ));
        let bytes = read_ok_bytes(6, b"hello");
        assert!(matches!(
            decode_read_reply(&mut XdrReader::new(&bytes), 100),
            Err(DecodeError::Truncated {
                what: "READ3resok data (shorter than count)",
                ..
            })
        ));
        // The general-purpose decoder agrees.
        assert!(crate::xdr::decode_exact::<READ3res>(&bytes, "READ3res").is_err());
    }

    #[test]
    fn read_reply_head_does_not_need_the_data() {
        let bytes = read_ok_bytes(5, b"hello");
        let head_only = &bytes[..bytes.len() - 8];
        let mut r = XdrReader::new(head_only);
        let head = decode_read_reply_head(&mut r, 5).unwrap();
        assert_eq!(
            head.ok,
            Some(ReadOkHead {
                count: 5,
                eof: true
            })
        );
        assert_eq!(r.remaining(), 0);
    }

    #[test]
    fn unknown_status_read_reply_is_a_failure_not_an_error() {
        let res: READ3res = Nfs3Res::Fail(nfsstat3(9999), READ3resfail::default());
        let bytes = to_bytes(&res);
        let reply = decode_read_reply(&mut XdrReader::new(&bytes), 0).unwrap();
        assert_eq!(reply.status, nfsstat3(9999));
        assert!(reply.ok.is_none());
    }

    #[test]
    fn read_reply_matches_general_decoder() {
        let res: READ3res = Nfs3Res::Ok(READ3resok {
            file_attributes: None,
            count: 2,
            eof: false,
            data: vec![9, 8],
        });
        let bytes = to_bytes(&res);
        let fast = decode_read_reply(&mut XdrReader::new(&bytes), 2).unwrap();
        assert_eq!(fast.ok.unwrap().data, &[9, 8]);
    }
}
