//! `decode(encode(x)) == x` for every argument and result type, and the
//! hot-path codecs agree with the general-purpose ones.

// Tests: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod props;

use common::*;
use directnfs_wire::mount::{dirpath, exports, mountres3};
use directnfs_wire::nfs3::*;
use directnfs_wire::portmap::Mapping;
use directnfs_wire::xdr::{pad_len, to_bytes, XdrReader};
use props::roundtrips;
use proptest::prelude::*;

roundtrips! {
    getattr_args_roundtrip: getattr_args();
    setattr_args_roundtrip: setattr_args();
    lookup_args_roundtrip: lookup_args();
    access_args_roundtrip: access_args();
    read_args_roundtrip: read_args();
    write_args_roundtrip: write_args();
    create_args_roundtrip: create_args();
    mkdir_args_roundtrip: mkdir_args();
    readlink_args_roundtrip: readlink_args();
    symlink_args_roundtrip: symlink_args();
    link_args_roundtrip: link_args();
    remove_args_roundtrip: remove_args();
    rmdir_args_roundtrip: rmdir_args();
    rename_args_roundtrip: rename_args();
    readdir_args_roundtrip: readdir_args();
    readdirplus_args_roundtrip: readdirplus_args();
    fsstat_args_roundtrip: fsstat_args();
    fsinfo_args_roundtrip: fsinfo_args();
    pathconf_args_roundtrip: pathconf_args();
    commit_args_roundtrip: commit_args();
    getport_args_roundtrip: mapping();
    mnt_args_roundtrip: mount_dirpath();

    getattr_res_roundtrip: getattr_res();
    setattr_res_roundtrip: setattr_res();
    lookup_res_roundtrip: lookup_res();
    access_res_roundtrip: access_res();
    read_res_roundtrip: read_res();
    write_res_roundtrip: write_res();
    create_res_roundtrip: create_res();
    mkdir_res_roundtrip: mkdir_res();
    readlink_res_roundtrip: readlink_res();
    symlink_res_roundtrip: symlink_res();
    link_res_roundtrip: link_res();
    remove_res_roundtrip: remove_res();
    rmdir_res_roundtrip: rmdir_res();
    rename_res_roundtrip: rename_res();
    readdir_res_roundtrip: readdir_res();
    readdirplus_res_roundtrip: readdirplus_res();
    fsstat_res_roundtrip: fsstat_res();
    fsinfo_res_roundtrip: fsinfo_res();
    pathconf_res_roundtrip: pathconf_res();
    commit_res_roundtrip: commit_res();
    getport_res_roundtrip: any::<u32>();
    mnt_res_roundtrip: mnt_res();
    export_res_roundtrip: export_res();
}

proptest! {
    #[test]
    fn hot_read_reply_agrees_with_read3res(x in read_res()) {
        let bytes = to_bytes(&x);
        let mut r = XdrReader::new(&bytes);
        let fast = decode_read_reply(&mut r, u32::MAX).unwrap();
        prop_assert_eq!(r.remaining(), 0);
        prop_assert_eq!(fast.status, x.status());
        match &x {
            Nfs3Res::Ok(ok) => {
                let f = fast.ok.unwrap();
                prop_assert_eq!(fast.file_attributes, ok.file_attributes);
                prop_assert_eq!((f.count, f.eof, f.data), (ok.count, ok.eof, &ok.data[..]));
            }
            Nfs3Res::Fail(_, fail) => {
                prop_assert!(fast.ok.is_none());
                prop_assert_eq!(fast.file_attributes, fail.file_attributes);
            }
        }
    }

    #[test]
    fn read_reply_status_agrees_with_the_head_on_replies(x in read_res(), max in any::<u32>()) {
        let bytes = to_bytes(&x);
        let head = decode_read_reply_head(&mut XdrReader::new(&bytes), max).map(|h| (h.status, h.ok));
        let lean = decode_read_reply_status(&mut XdrReader::new(&bytes), max);
        prop_assert_eq!(head, lean);
    }

    #[test]
    fn read_reply_status_agrees_with_the_head_on_any_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..200), max in any::<u32>()) {
        let mut a = XdrReader::new(&bytes);
        let mut b = XdrReader::new(&bytes);
        let head = decode_read_reply_head(&mut a, max).map(|h| (h.status, h.ok));
        let lean = decode_read_reply_status(&mut b, max);
        prop_assert_eq!(&head, &lean);
        if head.is_ok() {
            prop_assert_eq!(a.position(), b.position(), "both stop at the data");
        }
    }

    #[test]
    fn hot_read_reply_refuses_any_data_beyond_the_request(x in read_res(), short in 1u32..64) {
        if let Nfs3Res::Ok(ok) = &x {
            if ok.count >= short {
                let bytes = to_bytes(&x);
                let max = ok.count - short;
                let err = decode_read_reply(&mut XdrReader::new(&bytes), max).unwrap_err();
                let is_too_long = matches!(err, directnfs_wire::DecodeError::TooLong { what: "READ3resok data", .. });
                prop_assert!(is_too_long, "{:?}", err);
            }
        }
    }

    #[test]
    fn hot_write_reply_agrees_with_write3res(x in write_res()) {
        let bytes = to_bytes(&x);
        let mut r = XdrReader::new(&bytes);
        let fast = decode_write_reply(&mut r).unwrap();
        prop_assert_eq!(r.remaining(), 0);
        prop_assert_eq!(fast.status, x.status());
        match &x {
            Nfs3Res::Ok(ok) => {
                let f = fast.ok.unwrap();
                prop_assert_eq!(fast.file_wcc, ok.file_wcc);
                prop_assert_eq!((f.count, f.committed, f.verf), (ok.count, ok.committed, ok.verf));
            }
            Nfs3Res::Fail(_, fail) => {
                prop_assert!(fast.ok.is_none());
                prop_assert_eq!(fast.file_wcc, fail.file_wcc);
            }
        }
    }

    #[test]
    fn hot_commit_reply_agrees_with_commit3res(x in commit_res()) {
        let bytes = to_bytes(&x);
        let fast = decode_commit_reply(&mut XdrReader::new(&bytes)).unwrap();
        prop_assert_eq!(fast.status, x.status());
        prop_assert_eq!(fast.verf, x.ok().map(|o| o.verf));
    }

    #[test]
    fn hot_write_header_plus_data_equals_write3args(x in write_args()) {
        let mut out = Vec::new();
        encode_write_args_header(&mut out, x.file.as_bytes(), x.offset, x.count, x.stable);
        prop_assert!(out.len() <= WRITE_ARGS_HEADER_MAX);
        out.extend_from_slice(&x.data);
        out.resize(out.len() + pad_len(x.data.len()), 0);
        prop_assert_eq!(out, to_bytes(&x));
    }

    #[test]
    fn hot_read_commit_getattr_args_equal_structs(x in read_args(), c in commit_args(), g in getattr_args()) {
        let mut out = Vec::new();
        encode_read_args(&mut out, x.file.as_bytes(), x.offset, x.count);
        prop_assert_eq!(&out, &to_bytes(&x));
        out.clear();
        encode_commit_args(&mut out, c.file.as_bytes(), c.offset, c.count);
        prop_assert_eq!(&out, &to_bytes(&c));
        out.clear();
        encode_getattr_args(&mut out, g.object.as_bytes());
        prop_assert_eq!(&out, &to_bytes(&g));
    }
}

#[test]
fn types_named_in_roundtrips_exist() {
    // Keeps the imports honest: these are the MOUNT/PORTMAP types above.
    let _: Option<(dirpath, exports, mountres3, Mapping)> = None;
}
