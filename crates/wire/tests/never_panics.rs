//! Every reply decoder survives arbitrary bytes and damaged valid replies:
//! it returns a value or an error, never panics.

// Tests: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod props;

use common::*;
use directnfs_wire::mount::{exports, mountres3};
use directnfs_wire::nfs3::*;
use directnfs_wire::rpc::ReplyHeader;
use directnfs_wire::xdr::{decode_exact, Decode, XdrReader};
use props::damaged;
use proptest::collection::vec;
use proptest::prelude::*;

/// Runs every reply decoder over `bytes`.
fn decode_all(bytes: &[u8]) {
    fn one<T: Decode>(bytes: &[u8]) {
        let _ = decode_exact::<T>(bytes, "fuzz");
    }
    one::<u32>(bytes);
    one::<mountres3>(bytes);
    one::<exports>(bytes);
    one::<GETATTR3res>(bytes);
    one::<SETATTR3res>(bytes);
    one::<LOOKUP3res>(bytes);
    one::<ACCESS3res>(bytes);
    one::<READ3res>(bytes);
    one::<WRITE3res>(bytes);
    one::<CREATE3res>(bytes);
    one::<MKDIR3res>(bytes);
    one::<READLINK3res>(bytes);
    one::<SYMLINK3res>(bytes);
    one::<LINK3res>(bytes);
    one::<REMOVE3res>(bytes);
    one::<RMDIR3res>(bytes);
    one::<RENAME3res>(bytes);
    one::<SYMLINK3res>(bytes);
    one::<READLINK3res>(bytes);
    one::<READDIR3res>(bytes);
    one::<READDIRPLUS3res>(bytes);
    one::<FSSTAT3res>(bytes);
    one::<FSINFO3res>(bytes);
    one::<PATHCONF3res>(bytes);
    one::<COMMIT3res>(bytes);
    one::<ReplyHeader>(bytes);
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
    fn reply_decoders_never_panic_on_small_words(words in vec(0u32..4, 0..128)) {
        // Mostly 0 and 1: booleans and statuses that walk deep into unions.
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_be_bytes()).collect();
        decode_all(&bytes);
    }

    #[test]
    fn reply_decoders_never_panic_on_damaged_replies(
        bytes in prop_oneof![
            damaged(read_res()),
            damaged(write_res()),
            damaged(readdir_res()),
            damaged(readdirplus_res()),
            damaged(lookup_res()),
            damaged(fsinfo_res()),
            damaged(create_res()),
            damaged(readlink_res()),
            damaged(symlink_res()),
            damaged(link_res()),
            damaged(mnt_res()),
            damaged(export_res()),
        ]
    ) {
        decode_all(&bytes);
    }
}
