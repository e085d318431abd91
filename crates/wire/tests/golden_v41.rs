//! NFSv4.1 byte vectors built by hand from the RFC 5662 layouts, word by
//! word, for what Ganesha could not be made to send: the back channel
//! (its FSAL VFS grants no delegations, so it never recalls one), and
//! attribute lists with padded strings.

// Tests: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use directnfs_wire::nfs4::*;
use directnfs_wire::rpc::msg::MsgType;
use directnfs_wire::rpc::{peek_msg_type, CallHeader};
use directnfs_wire::xdr::{decode_exact, to_bytes, Decode, XdrReader};

fn w(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|x| x.to_be_bytes()).collect()
}

const SESSION: [u32; 4] = [0x0100_0000, 0x4ba6_046b, 0x0100_0000, 0];

/// CB_COMPOUND(CB_SEQUENCE, CB_RECALL) as a server sends it to recall a
/// read delegation: RPC call header, then the arguments.
#[rustfmt::skip]
fn cb_recall_call() -> Vec<u8> {
    let mut v = w(&[
        0x7700_0001, 0,             // xid, CALL
        2, NFS4_CALLBACK, NFS_CB, CB_COMPOUND,
        0, 0, 0, 0,                 // cred AUTH_NONE, verf AUTH_NONE
        0,                          // tag ""
        1, 0,                       // minorversion 1, callback_ident 0
        2,                          // two operations
        11,                         // OP_CB_SEQUENCE
    ]);
    v.extend(w(&SESSION));
    v.extend(w(&[
        1, 0, 0,                    // sequenceid 1, slot 0, highest slot 0
        0,                          // cachethis false
        0,                          // no referring call lists
        4,                          // OP_CB_RECALL
        7, 0xaaaa_aaaa, 0xbbbb_bbbb, 0xcccc_cccc, // stateid seqid 7, other
        0,                          // truncate false
        8, 0xdead_beef, 0x0000_0001, // fh: 8 bytes
    ]));
    v
}

#[test]
fn cb_recall_call_decodes_and_gets_the_rfc_reply() {
    let msg = cb_recall_call();
    assert_eq!(peek_msg_type(&msg), Some(MsgType::CALL));
    let mut r = XdrReader::new(&msg);
    let h = CallHeader::decode(&mut r).unwrap();
    assert_eq!(
        (h.xid, h.prog, h.vers, h.proc_),
        (0x7700_0001, NFS4_CALLBACK, NFS_CB, CB_COMPOUND)
    );
    let args = CB_COMPOUND4args::decode(&mut r).unwrap();
    assert_eq!(r.remaining(), 0);
    assert_eq!(args.minorversion, 1);
    let [nfs_cb_argop4::OP_CB_SEQUENCE(seq), nfs_cb_argop4::OP_CB_RECALL(recall)] =
        &args.argarray[..]
    else {
        panic!("{args:?}")
    };
    assert_eq!(
        seq.csa_sessionid,
        sessionid4([1, 0, 0, 0, 0x4b, 0xa6, 4, 0x6b, 1, 0, 0, 0, 0, 0, 0, 0])
    );
    assert_eq!(
        (seq.csa_sequenceid, seq.csa_slotid, seq.csa_cachethis),
        (1, 0, false)
    );
    assert_eq!(recall.stateid.seqid, 7);
    assert_eq!(recall.fh.as_bytes(), [0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 1]);
    assert!(!recall.truncate);

    let res = args.reply(|op| match op {
        nfs_cb_argop4::OP_CB_SEQUENCE(a) => Some(a.reply_ok(0)),
        nfs_cb_argop4::OP_CB_RECALL(_) => Some(nfs_cb_resop4::Status(
            nfs_cb_opnum4::OP_CB_RECALL,
            nfsstat4::NFS4_OK,
        )),
        _ => None,
    });
    let mut out = Vec::new();
    encode_cb_reply(&mut out, h.xid, Some(&res));
    #[rustfmt::skip]
    let mut expect = w(&[
        0x7700_0001, 1,             // xid, REPLY
        0, 0, 0,                    // MSG_ACCEPTED, verifier AUTH_NONE (flavor, length)
        0,                          // SUCCESS
        0, 0,                       // NFS4_OK, tag ""
        2,                          // two results
        11, 0,                      // OP_CB_SEQUENCE, NFS4_OK
    ]);
    expect.extend(w(&SESSION));
    expect.extend(w(&[1, 0, 0, 0, 4, 0])); // seq, slot, highest, target; OP_CB_RECALL NFS4_OK
    assert_eq!(out, expect);
}

#[test]
fn cb_operation_without_a_decoder_gets_notsupp_and_its_arguments_stay_unread() {
    #[rustfmt::skip]
    let mut args = w(&[0, 1, 0, 2, 11]);
    args.extend(w(&SESSION));
    args.extend(w(&[1, 0, 0, 0, 0]));
    // OP_CB_NOTIFY_DEVICEID (14) with arguments this crate does not parse.
    args.extend(w(&[14, 0xffff_ffff, 0x1234_5678]));
    let mut r = XdrReader::new(&args);
    let a = CB_COMPOUND4args::decode(&mut r).unwrap();
    assert_eq!(
        r.remaining(),
        8,
        "the operation's arguments are left unread"
    );
    assert_eq!(
        a.argarray[1],
        nfs_cb_argop4::NotDecoded(nfs_cb_opnum4::OP_CB_NOTIFY_DEVICEID)
    );
    let res = a.reply(|op| match op {
        nfs_cb_argop4::OP_CB_SEQUENCE(_) => Some(nfs_cb_resop4::OP_CB_SEQUENCE(Nfs4Res::Ok(
            Default::default(),
        ))),
        _ => None,
    });
    assert_eq!(res.status, nfsstat4::NFS4ERR_NOTSUPP);
    assert_eq!(
        res.resarray[1],
        nfs_cb_resop4::Status(
            nfs_cb_opnum4::OP_CB_NOTIFY_DEVICEID,
            nfsstat4::NFS4ERR_NOTSUPP
        )
    );
    assert_eq!(&to_bytes(&res)[to_bytes(&res).len() - 8..], w(&[14, 10004]));
}

#[test]
fn fattr4_with_padded_owner_strings() {
    #[rustfmt::skip]
    let bytes = w(&[
        2, 0x0000_0012, 0x0000_0032, // bitmap: type(1) size(4) | mode(33) owner(36) owner_group(37)
        40,                          // attrlist4: 40 bytes
        1,                           // NF4REG
        0, 8192,                     // size
        0o640,                       // mode
        1, 0x3000_0000,              // owner "0" + 3 padding bytes
        10, 0x7573_6572, 0x7340_6c6f, 0x6361_0000, // owner_group "users@loca" + 2 padding bytes
    ]);
    let a: fattr4 = decode_exact(&bytes, "fattr4").unwrap();
    assert_eq!(a.type_, Some(nfs_ftype4::NF4REG));
    assert_eq!((a.size, a.mode), (Some(8192), Some(0o640)));
    assert_eq!(a.owner.as_ref().map(|o| o.as_bytes()), Some(&b"0"[..]));
    assert_eq!(
        a.owner_group.as_ref().map(|o| o.as_bytes()),
        Some(&b"users@loca"[..])
    );
    assert_eq!(to_bytes(&a), bytes);
}
