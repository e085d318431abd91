//! NFSv4.1: every reply decoder (and the CB_COMPOUND call decoder, which
//! reads what a server sends) survives arbitrary bytes and damaged valid
//! replies: it returns a value or an error, never panics.

// Tests: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod props;
mod strategies_v41;

use directnfs_wire::nfs4::*;
use directnfs_wire::xdr::{decode_exact, Decode, XdrReader};
use props::damaged;
use proptest::collection::vec;
use proptest::prelude::*;
use strategies_v41::*;

/// The operations of the hot path's COMPOUNDs and of a few others.
const SENT: &[&[nfs_opnum4]] = &[
    &[
        nfs_opnum4::OP_SEQUENCE,
        nfs_opnum4::OP_PUTFH,
        nfs_opnum4::OP_READ,
    ],
    &[
        nfs_opnum4::OP_SEQUENCE,
        nfs_opnum4::OP_PUTROOTFH,
        nfs_opnum4::OP_LOOKUP,
        nfs_opnum4::OP_GETFH,
        nfs_opnum4::OP_GETATTR,
    ],
    &[nfs_opnum4::OP_EXCHANGE_ID],
    &[nfs_opnum4::OP_CREATE_SESSION],
];

/// Runs every reply decoder over `bytes`.
fn decode_all(bytes: &[u8]) {
    fn one<T: Decode>(bytes: &[u8]) {
        let _ = decode_exact::<T>(bytes, "fuzz");
    }
    one::<COMPOUND4res>(bytes);
    one::<nfs_resop4>(bytes);
    one::<fattr4>(bytes);
    one::<bitmap4>(bytes);
    one::<EXCHANGE_ID4res>(bytes);
    one::<CREATE_SESSION4res>(bytes);
    one::<SEQUENCE4res>(bytes);
    one::<BIND_CONN_TO_SESSION4res>(bytes);
    one::<GETFH4res>(bytes);
    one::<GETATTR4res>(bytes);
    one::<SETATTR4res>(bytes);
    one::<ACCESS4res>(bytes);
    one::<OPEN4res>(bytes);
    one::<CLOSE4res>(bytes);
    one::<READ4res>(bytes);
    one::<WRITE4res>(bytes);
    one::<COMMIT4res>(bytes);
    one::<CREATE4res>(bytes);
    one::<REMOVE4res>(bytes);
    one::<RENAME4res>(bytes);
    one::<LINK4res>(bytes);
    one::<READLINK4res>(bytes);
    one::<READDIR4res>(bytes);
    one::<LOCK4res>(bytes);
    one::<LOCKT4res>(bytes);
    one::<LOCKU4res>(bytes);
    one::<TEST_STATEID4res>(bytes);
    one::<SECINFO_NO_NAME4res>(bytes);
    one::<CB_COMPOUND4res>(bytes);
    let _ = CB_COMPOUND4args::decode(&mut XdrReader::new(bytes));
    for sent in SENT {
        let _ = COMPOUND4res::decode_expecting(&mut XdrReader::new(bytes), sent);
    }
    let max = bytes.first().map_or(0, |b| u32::from(*b) << 4);
    let _ = decode_read_reply(&mut XdrReader::new(bytes), max);
    let _ = decode_read_reply_head(&mut XdrReader::new(bytes), max);
    let _ = decode_write_reply(&mut XdrReader::new(bytes));
    let _ = decode_commit_reply(&mut XdrReader::new(bytes));
}

proptest! {
    #[test]
    fn reply_decoders_never_panic_on_arbitrary_bytes(bytes in vec(any::<u8>(), 0..512)) {
        decode_all(&bytes);
    }

    #[test]
    fn reply_decoders_never_panic_on_small_words(words in vec(prop_oneof![0u32..4, 8u32..60, Just(10044u32)], 0..128)) {
        // Small values: statuses, booleans, operation numbers and short
        // lengths that walk deep into unions and COMPOUNDs.
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_be_bytes()).collect();
        decode_all(&bytes);
    }

    #[test]
    fn reply_decoders_never_panic_on_damaged_replies(
        bytes in prop_oneof![
            damaged(compound_res()),
            damaged(resop()),
            damaged(fattr()),
            damaged(cb_compound_args()),
            damaged(open_res()),
            damaged(readdir_res()),
            damaged(exchange_id_res()),
        ]
    ) {
        decode_all(&bytes);
    }
}
