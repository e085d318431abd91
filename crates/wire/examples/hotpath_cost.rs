//! Runs one hot-path step a million times, for counting its instructions
//! under callgrind (repeatable on a busy machine, unlike timings): NFSv3
//! against NFSv4.1, encoding a READ call (RPC header included) and
//! decoding a READ reply up to its data.
//!
//! ```sh
//! cargo build --release -p directnfs-wire --example hotpath_cost
//! for step in v3-encode v4-encode v3-decode v4-decode; do
//!     valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!         target/release/examples/hotpath_cost $step 2>&1 | grep refs
//! done
//! ```
//! Subtract the `setup` step's count and divide by a million: instructions
//! per I/O.

// A dev tool: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use directnfs_wire::xdr::{to_bytes, XdrReader};
use directnfs_wire::{nfs3, nfs4, rpc};

const ROUNDS: u32 = 1_000_000;

fn main() {
    let step = std::env::args().nth(1).unwrap_or_default();
    let fh = [7u8; 24];
    let auth = [0u8; 16];
    let seq = nfs4::SEQUENCE4args {
        sa_sessionid: nfs4::sessionid4([1; 16]),
        sa_sequenceid: 1,
        sa_slotid: 3,
        sa_highest_slotid: 63,
        sa_cachethis: false,
    };
    let stateid = nfs4::stateid4 {
        seqid: 0,
        other: [5; 12],
    };
    let v3_reply = to_bytes::<nfs3::READ3res>(&nfs3::Nfs3Res::Ok(nfs3::READ3resok {
        file_attributes: None,
        count: 8192,
        eof: false,
        data: vec![0; 8192],
    }));
    let v4_reply = to_bytes(&nfs4::COMPOUND4res {
        status: nfs4::nfsstat4::NFS4_OK,
        tag: Default::default(),
        resarray: vec![
            nfs4::nfs_resop4::OP_SEQUENCE(nfs4::Nfs4Res::Ok(Default::default())),
            nfs4::nfs_resop4::OP_PUTFH(nfs4::nfsstat4::NFS4_OK),
            nfs4::nfs_resop4::OP_READ(nfs4::Nfs4Res::Ok(nfs4::READ4resok {
                eof: false,
                data: vec![0; 8192],
            })),
        ],
    });
    let mut out = Vec::with_capacity(512);
    let rounds = if step == "setup" { 0 } else { ROUNDS };
    for i in 0..rounds {
        out.clear();
        match step.as_str() {
            "v3-encode" => {
                rpc::encode_call_header(&mut out, i, 100003, 3, 6, &auth);
                nfs3::encode_read_args(&mut out, black_box(&fh), u64::from(i) * 8192, 8192);
            }
            "v4-encode" => {
                rpc::encode_call_header(&mut out, i, 100003, 4, 1, &auth);
                nfs4::encode_read_compound(
                    &mut out,
                    black_box(&seq),
                    black_box(&fh),
                    &stateid,
                    u64::from(i) * 8192,
                    8192,
                );
            }
            "v3-decode" => {
                black_box(
                    nfs3::decode_read_reply_head(&mut XdrReader::new(black_box(&v3_reply)), 8192)
                        .unwrap(),
                );
            }
            "v4-decode" => {
                black_box(
                    nfs4::decode_read_reply_head(&mut XdrReader::new(black_box(&v4_reply)), 8192)
                        .unwrap(),
                );
            }
            other => {
                panic!("step {other:?}: one of setup, v3-encode, v4-encode, v3-decode, v4-decode")
            }
        }
        black_box(&out);
    }
}
