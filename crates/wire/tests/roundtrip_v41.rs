//! NFSv4.1: `decode(encode(x)) == x` for every argument and result type,
//! COMPOUND and CB_COMPOUND, and the hot path's codecs agree with the
//! general-purpose ones.

// Tests: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod props;
mod strategies_v41;

use directnfs_wire::nfs4::*;
use directnfs_wire::xdr::{pad_len, to_bytes, Decode, XdrReader};
use props::{roundtrip, roundtrips};
use proptest::prelude::*;
use strategies_v41::*;

roundtrips! {
    fh_roundtrip: fh();
    stateid_roundtrip: stateid();
    bitmap_roundtrip: bitmap();
    settime_roundtrip: settime();
    fattr_roundtrip: fattr();

    exchange_id_args_roundtrip: exchange_id_args();
    exchange_id_res_roundtrip: exchange_id_res();
    create_session_args_roundtrip: create_session_args();
    create_session_res_roundtrip: create_session_res();
    sequence_args_roundtrip: sequence_args();
    sequence_res_roundtrip: sequence_res();
    bind_conn_args_roundtrip: bind_conn_args();
    bind_conn_res_roundtrip: bind_conn_res();
    secinfo_res_roundtrip: secinfo_res();
    getattr_res_roundtrip: getattr_res();
    setattr_args_roundtrip: setattr_args();
    setattr_res_roundtrip: setattr_res();
    access_res_roundtrip: access_res();
    open_args_roundtrip: open_args();
    open_res_roundtrip: open_res();
    close_args_roundtrip: close_args();
    test_stateid_args_roundtrip: test_stateid_args();
    test_stateid_res_roundtrip: test_stateid_res();
    read_args_roundtrip: read_args();
    read_res_roundtrip: read_res();
    write_args_roundtrip: write_args();
    write_res_roundtrip: write_res();
    commit_res_roundtrip: commit_res();
    create_args_roundtrip: create_args();
    create_res_roundtrip: create_res();
    remove_res_roundtrip: remove_res();
    rename_res_roundtrip: rename_res();
    link_res_roundtrip: link_res();
    readlink_res_roundtrip: readlink_res();
    readdir_args_roundtrip: readdir_args();
    readdir_res_roundtrip: readdir_res();
    lock_args_roundtrip: lock_args();
    lock_res_roundtrip: lock_res();
    lockt_args_roundtrip: lockt_args();
    lockt_res_roundtrip: lockt_res();
    locku_args_roundtrip: locku_args();

    argop_roundtrip: argop();
    resop_roundtrip: resop();
    compound_args_roundtrip: compound_args();
    compound_res_roundtrip: compound_res();
    cb_argop_roundtrip: cb_argop();
    cb_resop_roundtrip: cb_resop();
    cb_compound_res_roundtrip: cb_compound_res();
}

/// Wraps `last` in a SEQUENCE, PUTFH COMPOUND4res (status consistent).
fn sequenced(seq: SEQUENCE4res, last: nfs_resop4) -> COMPOUND4res {
    let mut resarray = vec![nfs_resop4::OP_SEQUENCE(seq)];
    if seq.status().is_ok() {
        resarray.push(nfs_resop4::OP_PUTFH(nfsstat4::NFS4_OK));
        resarray.push(last);
    }
    let status = resarray.last().unwrap().status();
    COMPOUND4res {
        status,
        tag: Default::default(),
        resarray,
    }
}

proptest! {
    // CB_COMPOUND4args stops decoding after a NotDecoded operation, so
    // decode_exact does not apply: the value must come back, with nothing
    // after it on the wire.
    #[test]
    fn cb_compound_args_roundtrip(x in cb_compound_args()) {
        let bytes = to_bytes(&x);
        let mut r = XdrReader::new(&bytes);
        prop_assert_eq!(CB_COMPOUND4args::decode(&mut r).unwrap(), x);
        prop_assert_eq!(r.remaining(), 0);
    }

    #[test]
    fn every_compound_res_decodes_against_the_operations_it_answers(x in compound_res()) {
        let sent: Vec<nfs_opnum4> = x.resarray.iter().map(nfs_resop4::opnum).collect();
        let bytes = to_bytes(&x);
        let back = COMPOUND4res::decode_expecting(&mut XdrReader::new(&bytes), &sent);
        // All OK with the operations answered: accepted, same value. A
        // failure may stand for more operations sent.
        prop_assert_eq!(back.unwrap(), x.clone());
        if x.failed().is_some() {
            let mut more = sent.clone();
            more.push(nfs_opnum4::OP_GETFH);
            prop_assert!(COMPOUND4res::decode_expecting(&mut XdrReader::new(&bytes), &more).is_ok());
        }
    }

    #[test]
    fn hot_read_reply_agrees_with_the_general_decoder(seq in sequence_res(), read in read_res()) {
        let x = sequenced(seq, nfs_resop4::OP_READ(read.clone()));
        let bytes = to_bytes(&x);
        let mut r = XdrReader::new(&bytes);
        let fast = decode_read_reply(&mut r, u32::MAX).unwrap();
        prop_assert_eq!(r.remaining(), 0);
        prop_assert_eq!(fast.status, x.status);
        prop_assert_eq!(fast.sequence, Some(seq));
        match (&read, seq.status().is_ok()) {
            (Nfs4Res::Ok(ok), true) => {
                let f = fast.ok.unwrap();
                prop_assert_eq!((f.eof, f.data), (ok.eof, &ok.data[..]));
                // The head stops right before the data.
                let head_len = bytes.len() - ok.data.len() - pad_len(ok.data.len());
                let mut r = XdrReader::new(&bytes[..head_len]);
                let head = decode_read_reply_head(&mut r, u32::MAX).unwrap();
                prop_assert_eq!(head.ok, Some(ReadOkHead { eof: ok.eof, count: ok.data.len() as u32 }));
                prop_assert_eq!(r.remaining(), 0);
                if let Some(short) = (ok.data.len() as u32).checked_sub(1) {
                    prop_assert!(decode_read_reply(&mut XdrReader::new(&bytes), short).is_err());
                }
            }
            (Nfs4Res::Fail(_), true) => prop_assert_eq!(fast.failed_op, Some(nfs_opnum4::OP_READ)),
            (_, false) => prop_assert_eq!(fast.failed_op, Some(nfs_opnum4::OP_SEQUENCE)),
        }
    }

    #[test]
    fn hot_write_and_commit_replies_agree(seq in sequence_res(), w in write_res(), c in commit_res()) {
        let x = sequenced(seq, nfs_resop4::OP_WRITE(w));
        let fast = decode_write_reply(&mut XdrReader::new(&to_bytes(&x))).unwrap();
        prop_assert_eq!(fast.status, x.status);
        if seq.status().is_ok() {
            prop_assert_eq!(fast.ok, w.ok().copied());
        }
        let x = sequenced(seq, nfs_resop4::OP_COMMIT(c));
        let fast = decode_commit_reply(&mut XdrReader::new(&to_bytes(&x))).unwrap();
        if seq.status().is_ok() {
            prop_assert_eq!(fast.ok, c.ok().map(|o| o.writeverf));
        }
    }

    #[test]
    fn hot_encoders_equal_the_general_compound(
        seq in sequence_args(),
        fh in fh(),
        read in read_args(),
        write in write_args(),
        attrs in bitmap(),
        offset in any::<u64>(),
        count in any::<u32>(),
    ) {
        let general = |op: nfs_argop4| to_bytes(&COMPOUND4args {
            tag: Default::default(),
            minorversion: 1,
            argarray: vec![nfs_argop4::OP_SEQUENCE(seq), nfs_argop4::OP_PUTFH(PUTFH4args { object: fh }), op],
        });
        let mut out = Vec::new();
        encode_read_compound(&mut out, &seq, fh.as_bytes(), &read.stateid, read.offset, read.count);
        prop_assert!(out.len() <= READ_COMPOUND_MAX);
        prop_assert_eq!(&out, &general(nfs_argop4::OP_READ(read)));
        out.clear();
        encode_write_compound_header(&mut out, &seq, fh.as_bytes(), &write.stateid, write.offset, write.stable, write.data.len() as u32);
        prop_assert!(out.len() <= WRITE_COMPOUND_HEADER_MAX);
        out.extend_from_slice(&write.data);
        out.resize(out.len() + pad_len(write.data.len()), 0);
        prop_assert_eq!(&out, &general(nfs_argop4::OP_WRITE(write)));
        out.clear();
        encode_commit_compound(&mut out, &seq, fh.as_bytes(), offset, count);
        prop_assert!(out.len() <= COMMIT_COMPOUND_MAX);
        prop_assert_eq!(&out, &general(nfs_argop4::OP_COMMIT(COMMIT4args { offset, count })));
        out.clear();
        encode_getattr_compound(&mut out, &seq, fh.as_bytes(), &attrs);
        prop_assert!(out.len() <= GETATTR_COMPOUND_MAX);
        prop_assert_eq!(&out, &general(nfs_argop4::OP_GETATTR(GETATTR4args { attr_request: attrs })));
    }

    #[test]
    fn cb_reply_follows_the_rules(x in cb_compound_args()) {
        let res = x.reply(|op| match op {
            nfs_cb_argop4::OP_CB_SEQUENCE(a) => Some(a.reply_ok(0)),
            nfs_cb_argop4::OP_CB_RECALL(_) => Some(nfs_cb_resop4::Status(nfs_cb_opnum4::OP_CB_RECALL, nfsstat4::NFS4_OK)),
            _ => None,
        });
        prop_assert_eq!(&res.tag, &x.tag);
        prop_assert!(res.resarray.len() <= x.argarray.len());
        // Only the last result may fail; the status is the last's.
        for r in res.resarray.iter().rev().skip(1) {
            prop_assert!(r.status().is_ok());
        }
        match res.resarray.last() {
            Some(last) => prop_assert_eq!(res.status, last.status()),
            None => prop_assert!(x.argarray.is_empty() || x.minorversion != 1),
        }
        if x.minorversion == 1 && !x.argarray.is_empty() && res.status.is_ok() {
            prop_assert_eq!(res.resarray.len(), x.argarray.len());
            prop_assert_eq!(res.resarray[0].opnum(), nfs_cb_opnum4::OP_CB_SEQUENCE);
        }
        roundtrip(&res)?;
    }
}
