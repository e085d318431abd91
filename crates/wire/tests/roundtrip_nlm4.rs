//! NLMv4 and NSM: `decode(encode(x)) == x` for every argument and result
//! type, and the decoders never panic on arbitrary bytes.

// Tests: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use directnfs_wire::nlm4::*;
use directnfs_wire::xdr::{decode_exact, to_bytes, Decode, XdrReader};
use proptest::collection::vec;
use proptest::prelude::*;

fn netobj_s() -> impl Strategy<Value = netobj> {
    vec(any::<u8>(), 0..40).prop_map(netobj)
}

fn name_s() -> impl Strategy<Value = lm_name> {
    vec(any::<u8>(), 0..40).prop_map(lm_name)
}

fn lock_s() -> impl Strategy<Value = nlm4_lock> {
    (
        name_s(),
        netobj_s(),
        netobj_s(),
        any::<i32>(),
        any::<u64>(),
        any::<u64>(),
    )
        .prop_map(|(caller_name, fh, oh, svid, l_offset, l_len)| nlm4_lock {
            caller_name,
            fh,
            oh,
            svid,
            l_offset,
            l_len,
        })
}

fn stats_s() -> impl Strategy<Value = nlm4_stats> {
    prop_oneof![0u32..10, any::<u32>()].prop_map(nlm4_stats)
}

fn holder_s() -> impl Strategy<Value = nlm4_holder> {
    (
        any::<bool>(),
        any::<i32>(),
        netobj_s(),
        any::<u64>(),
        any::<u64>(),
    )
        .prop_map(|(exclusive, svid, oh, l_offset, l_len)| nlm4_holder {
            exclusive,
            svid,
            oh,
            l_offset,
            l_len,
        })
}

fn roundtrip<T: Decode + directnfs_wire::Encode + PartialEq + std::fmt::Debug>(v: T) {
    let bytes = to_bytes(&v);
    assert_eq!(decode_exact::<T>(&bytes, "nlm4").unwrap(), v);
}

proptest! {
    #[test]
    fn lockargs_roundtrip(cookie in netobj_s(), block: bool, exclusive: bool, alock in lock_s(), reclaim: bool, state: i32) {
        roundtrip(nlm4_lockargs { cookie, block, exclusive, alock, reclaim, state });
    }

    #[test]
    fn cancargs_roundtrip(cookie in netobj_s(), block: bool, exclusive: bool, alock in lock_s()) {
        roundtrip(nlm4_cancargs { cookie, block, exclusive, alock });
    }

    #[test]
    fn testargs_roundtrip(cookie in netobj_s(), exclusive: bool, alock in lock_s()) {
        roundtrip(nlm4_testargs { cookie, exclusive, alock });
    }

    #[test]
    fn unlockargs_roundtrip(cookie in netobj_s(), alock in lock_s()) {
        roundtrip(nlm4_unlockargs { cookie, alock });
    }

    #[test]
    fn res_roundtrip(cookie in netobj_s(), stat in stats_s()) {
        roundtrip(nlm4_res { cookie, stat });
    }

    #[test]
    fn testres_roundtrip(cookie in netobj_s(), stat in stats_s(), holder in holder_s()) {
        let holder = (stat == nlm4_stats::NLM4_DENIED).then_some(holder);
        roundtrip(nlm4_testres { cookie, stat, holder });
    }

    #[test]
    fn notify_and_stat_chge_roundtrip(name in name_s(), state: i32) {
        roundtrip(nlm4_notify { name: name.clone(), state });
        roundtrip(stat_chge { mon_name: name, state });
    }

    #[test]
    fn nlm4_decoders_never_panic(bytes in vec(any::<u8>(), 0..256)) {
        let _ = nlm4_res::decode(&mut XdrReader::new(&bytes));
        let _ = nlm4_testres::decode(&mut XdrReader::new(&bytes));
        let _ = nlm4_lockargs::decode(&mut XdrReader::new(&bytes));
        let _ = nlm4_testargs::decode(&mut XdrReader::new(&bytes));
    }
}
