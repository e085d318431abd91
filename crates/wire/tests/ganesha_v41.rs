//! The NFSv4.1 records captured from NFS-Ganesha by the `capture_v41`
//! example (see `testdata/README-v41.md`): every reply decodes with every
//! byte used, and the facts of `v41/facts.rs` hold of it, the same facts
//! the live test checks against a running server.

// Tests: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod v41;

use v41::client::Exchange;
use v41::facts::{check, check_across, CALLS, STEPS};

macro_rules! replies {
    ($($name:literal),* $(,)?) => {
        &[$(($name, include_bytes!(concat!("../testdata/ganesha_v41_", $name, "_reply.bin")) as &[u8])),*]
    };
}
macro_rules! calls {
    ($($name:literal),* $(,)?) => {
        &[$(($name, include_bytes!(concat!("../testdata/ganesha_v41_", $name, "_call.bin")) as &[u8])),*]
    };
}

const REPLIES: &[(&str, &[u8])] = v41::facts::with_steps!(replies);
const CALL_RECORDS: &[(&str, &[u8])] = calls!["write", "commit", "read"];

fn exchange(name: &str) -> Exchange {
    let reply = REPLIES
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no vector for {name}"))
        .1
        .to_vec();
    let call = CALL_RECORDS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, b)| b.to_vec())
        .unwrap_or_default();
    Exchange { call, reply }
}

#[test]
fn every_step_has_a_vector_and_its_facts_hold() {
    assert_eq!(REPLIES.iter().map(|(n, _)| *n).collect::<Vec<_>>(), STEPS);
    assert_eq!(
        CALL_RECORDS.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        CALLS
    );
    for name in STEPS {
        check(name, &exchange(name));
    }
}

#[test]
fn facts_across_steps_hold() {
    let all: Vec<(&str, Exchange)> = STEPS.iter().map(|n| (*n, exchange(n))).collect();
    check_across(|name| &all.iter().find(|(n, _)| *n == name).unwrap().1);
}

#[test]
fn lookupp_of_a_directory_is_its_parent() {
    use directnfs_wire::nfs4::*;
    let fh = |name: &str| {
        let res = v41::facts::compound_res(name, &exchange(name).reply);
        res.resarray
            .iter()
            .find_map(|r| match r {
                nfs_resop4::OP_GETFH(Nfs4Res::Ok(ok)) => Some(ok.object),
                _ => None,
            })
            .unwrap()
    };
    // The capture works in the export itself: LOOKUPP from "subdir" is
    // the export's handle.
    assert_eq!(fh("lookupp"), fh("lookup_export"));
    assert_ne!(fh("create_dir"), fh("lookup_export"));
}
