//! Shared checks for the fuzz targets, so each target stays three lines.
//!
//! Every check may return early on an error; it panics (a fuzz finding)
//! only when a decoder panics or breaks one of its promises.
#![forbid(unsafe_code)]

pub use directnfs_wire::{mount, nfs3, portmap, rpc};

use directnfs_wire::rpc::RecordReader;
use directnfs_wire::xdr::{decode_exact, to_bytes, Decode, Encode, XdrReader};

/// Decodes `data` as `T`; if that works, the value must survive its own
/// encoding unchanged (decoding normalises, e.g. booleans, so compare
/// values, not bytes).
pub fn roundtrip<T: Decode + Encode + PartialEq + std::fmt::Debug>(data: &[u8]) {
    let Ok(v) = decode_exact::<T>(data, "fuzz") else {
        return;
    };
    let again = decode_exact::<T>(&to_bytes(&v), "fuzz re-encode");
    assert_eq!(again.as_ref(), Ok(&v));
}

/// The hot-path READ decoder: the first 4 bytes are the requested count,
/// the rest the reply. Data never exceeds the request, `count` always
/// equals the data length, and the head-only decoder agrees.
pub fn read_reply(data: &[u8]) {
    let Some((max, reply)) = data.split_first_chunk::<4>() else {
        return;
    };
    let max = u32::from_be_bytes(*max) & 0x000f_ffff;
    let head = nfs3::decode_read_reply_head(&mut XdrReader::new(reply), max);
    let Ok(full) = nfs3::decode_read_reply(&mut XdrReader::new(reply), max) else {
        return;
    };
    let head = head.ok();
    assert_eq!(head.map(|h| h.status), Some(full.status));
    if let Some(ok) = full.ok {
        assert!(ok.data.len() <= max as usize);
        assert_eq!(ok.count as usize, ok.data.len());
        assert_eq!(head.and_then(|h| h.ok).map(|h| h.count), Some(ok.count));
    }
}

/// The hot-path WRITE decoder agrees with `WRITE3res`.
pub fn write_reply(data: &[u8]) {
    let fast = nfs3::decode_write_reply(&mut XdrReader::new(data));
    let slow = nfs3::WRITE3res::decode(&mut XdrReader::new(data));
    assert_eq!(fast.is_ok(), slow.is_ok());
    if let (Ok(f), Ok(s)) = (fast, slow) {
        assert_eq!(f.status, s.status());
        assert_eq!(f.ok.map(|o| o.verf), s.ok().map(|o| o.verf));
    }
}

/// The hot-path COMMIT decoder agrees with `COMMIT3res`.
pub fn commit_reply(data: &[u8]) {
    let fast = nfs3::decode_commit_reply(&mut XdrReader::new(data));
    let slow = nfs3::COMMIT3res::decode(&mut XdrReader::new(data));
    assert_eq!(fast.is_ok(), slow.is_ok());
    if let (Ok(f), Ok(s)) = (fast, slow) {
        assert_eq!(f.verf, s.ok().map(|o| o.verf));
    }
}

/// Record reassembly: the first byte picks the record limit (1..=256) and
/// the second the chunk size the stream is fed in (1..=256), as a socket
/// would. No record may exceed the limit, and chunking must not change
/// what comes out.
pub fn record_reassembly(data: &[u8]) {
    let [max, chunk, stream @ ..] = data else {
        return;
    };
    let max = usize::from(*max) + 1;
    let chunk = usize::from(*chunk) + 1;

    let whole = RecordReader::new(max).drain(stream);

    let mut rr = RecordReader::new(max);
    let mut buf = Vec::new();
    let mut got = Vec::new();
    let mut failed = false;
    for piece in stream.chunks(chunk) {
        buf.extend_from_slice(piece);
        match rr.drain(&buf) {
            Ok((records, used)) => {
                buf.drain(..used);
                got.extend(records);
            }
            Err(_) => {
                failed = true;
                break;
            }
        }
    }
    for r in &got {
        assert!(r.len() <= max, "record of {} bytes, limit {max}", r.len());
    }
    match whole {
        Ok((records, _)) => {
            assert!(!failed);
            assert_eq!(records, got);
        }
        // The error surfaces at the same point however the bytes arrive;
        // the records before it are the same.
        Err(_) => assert!(failed),
    }
}
