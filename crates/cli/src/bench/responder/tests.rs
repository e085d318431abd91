use super::proto::{answer, Export, Garbage};
use super::xdr::{put_opaque, put_u32, put_u64};

fn export() -> Export {
    Export {
        path: "/bench".into(),
        names: vec!["data".into()],
        data: vec![7u8; 65536],
        port: 2049,
    }
}

/// An AUTH_SYS-less call header (AUTH_NONE credential and verifier).
fn call(prog: u32, vers: u32, proc_: u32) -> Vec<u8> {
    let mut c = Vec::new();
    for v in [0x1234, 0, 2, prog, vers, proc_, 0, 0, 0, 0] {
        put_u32(&mut c, v);
    }
    c
}

fn read_call(off: u64, count: u32) -> Vec<u8> {
    let mut c = call(100_003, 3, 6);
    put_opaque(&mut c, &2u64.to_be_bytes());
    put_u64(&mut c, off);
    put_u32(&mut c, count);
    c
}

#[test]
fn read_returns_the_bytes_asked_for() {
    let mut out = Vec::new();
    answer(&export(), &read_call(8192, 8192), &mut out).unwrap();
    let len = u32::from_be_bytes(out[0..4].try_into().unwrap());
    assert_eq!(len as usize | 0x8000_0000, 0x8000_0000 | (out.len() - 4));
    // marker, xid, REPLY, accepted, verf(2), SUCCESS, NFS3_OK, post_op(1+84), count, eof, len
    assert_eq!(&out[4..8], &0x1234u32.to_be_bytes());
    assert_eq!(&out[24..28], &[0; 4], "accept_stat SUCCESS");
    assert_eq!(&out[28..32], &[0; 4], "NFS3_OK");
    let count_at = 32 + 4 + 84;
    assert_eq!(&out[count_at..count_at + 4], &8192u32.to_be_bytes());
    assert_eq!(out.len(), count_at + 12 + 8192);
    assert!(out[count_at + 12..].iter().all(|&b| b == 7));
}

#[test]
fn mount_answers_only_the_export() {
    let mut c = call(100_005, 3, 1);
    put_opaque(&mut c, b"/bench");
    let mut out = Vec::new();
    answer(&export(), &c, &mut out).unwrap();
    assert_eq!(&out[28..32], &[0; 4], "MNT3_OK");
    let mut c = call(100_005, 3, 1);
    put_opaque(&mut c, b"/other");
    out.clear();
    answer(&export(), &c, &mut out).unwrap();
    assert_eq!(&out[28..32], &2u32.to_be_bytes(), "MNT3ERR_NOENT");
}

#[test]
fn truncated_calls_are_garbage_not_panics() {
    let full = read_call(0, 8192);
    for cut in 0..full.len() {
        let mut out = Vec::new();
        assert_eq!(
            answer(&export(), &full[..cut], &mut out),
            Err(Garbage),
            "cut at {cut}"
        );
        assert!(out.is_empty(), "nothing half-written for a garbage call");
    }
}

proptest::proptest! {
    #[test]
    fn hostile_input_never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512),
                                  flip in 0usize..512) {
        let mut out = Vec::new();
        let _ = answer(&export(), &bytes, &mut out);
        // And a valid call with one byte damaged.
        let mut c = read_call(u64::MAX - 3, u32::MAX);
        let i = flip % c.len();
        c[i] ^= 0xff;
        let _ = answer(&export(), &c, &mut out);
    }
}
