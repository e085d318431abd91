//! RPCSEC_GSS (RFC 2203) values survive their encoding, and the body
//! decoders give back exactly what was encoded.

use directnfs_wire::rpc::gss::{
    data_body_args, decode_integ_data, decode_priv_data, encode_data_body, encode_integ_data,
    encode_priv_data, GssCred, GssInitRes, GssProc, GssService, MAX_GSS_HANDLE,
};
use directnfs_wire::xdr::{decode_exact, to_bytes};
use proptest::prelude::*;

fn cred() -> impl Strategy<Value = GssCred> {
    (
        0u32..4,
        any::<u32>(),
        1u32..4,
        proptest::collection::vec(any::<u8>(), 0..MAX_GSS_HANDLE),
    )
        .prop_map(|(p, seq_num, s, handle)| GssCred {
            gss_proc: GssProc(p),
            seq_num,
            service: GssService(s),
            handle,
        })
}

fn init_res() -> impl Strategy<Value = GssInitRes> {
    (
        proptest::collection::vec(any::<u8>(), 0..64),
        any::<u32>(),
        any::<u32>(),
        any::<u32>(),
        proptest::collection::vec(any::<u8>(), 0..2048),
    )
        .prop_map(
            |(handle, gss_major, gss_minor, seq_window, gss_token)| GssInitRes {
                handle,
                gss_major,
                gss_minor,
                seq_window,
                gss_token,
            },
        )
}

proptest! {
    #[test]
    fn gss_cred_roundtrips(c in cred()) {
        let bytes = to_bytes(&c);
        prop_assert_eq!(decode_exact::<GssCred>(&bytes, "cred").unwrap(), c.clone());
        prop_assert!(c.to_opaque_auth().body.len() <= 400);
    }

    #[test]
    fn gss_init_res_roundtrips(r in init_res()) {
        let bytes = to_bytes(&r);
        prop_assert_eq!(decode_exact::<GssInitRes>(&bytes, "init").unwrap(), r);
    }

    #[test]
    fn gss_integ_data_roundtrips(
        seq in any::<u32>(),
        args in proptest::collection::vec(any::<u8>(), 0..512),
        checksum in proptest::collection::vec(any::<u8>(), 0..96),
    ) {
        let mut plain = Vec::new();
        encode_data_body(&mut plain, seq, &args);
        let mut out = Vec::new();
        encode_integ_data(&mut out, &plain, &checksum);
        let d = decode_integ_data(&out, 1 << 20).unwrap();
        prop_assert_eq!(d.checksum, &checksum[..]);
        prop_assert_eq!(data_body_args(d.databody, seq).unwrap(), &args[..]);
        prop_assert!(data_body_args(d.databody, seq.wrapping_add(1)).is_err());
    }

    #[test]
    fn gss_priv_data_roundtrips(wrapped in proptest::collection::vec(any::<u8>(), 0..1024)) {
        let mut out = Vec::new();
        encode_priv_data(&mut out, &wrapped);
        prop_assert_eq!(decode_priv_data(&out, 1 << 20).unwrap(), &wrapped[..]);
    }
}
