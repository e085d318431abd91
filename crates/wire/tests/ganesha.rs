//! Replies and calls captured from NFS-Ganesha (and rpcbind, and the libnfs
//! client) on loopback: see `testdata/README.md` for how and what. Each
//! file is one whole record, record mark included.
//!
//! Handles, XIDs, times and fileids change with every capture, so only the
//! facts that do not are checked: statuses, types, modes, sizes, transfer
//! sizes, names, file contents, and that every byte is accounted for.

// Tests: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use directnfs_wire::mount::{exports, mountres3};
use directnfs_wire::nfs3::*;
use directnfs_wire::portmap::{Mapping, IPPROTO_TCP};
use directnfs_wire::rpc::{CallHeader, RecordReader, ReplyHeader};
use directnfs_wire::xdr::{Decode, XdrReader};

const HELLO: &[u8] = b"directnfs golden vector: hello, ganesha!\n";

/// Strips the record mark: the file must hold exactly one record.
fn record(file: &[u8]) -> Vec<u8> {
    let (records, used) = RecordReader::new(1 << 20).drain(file).unwrap();
    assert_eq!(used, file.len(), "bytes after the record");
    assert_eq!(records.len(), 1);
    records.into_iter().next().unwrap()
}

/// Decodes an accepted SUCCESS reply carrying `T`, using every byte.
fn reply<T: Decode>(file: &[u8]) -> (u32, T) {
    let rec = record(file);
    let mut r = XdrReader::new(&rec);
    let h = ReplyHeader::decode(&mut r).unwrap();
    assert!(h.is_success(), "{h:?}");
    let res = T::decode(&mut r).unwrap();
    r.finish("captured reply").unwrap();
    (h.xid, res)
}

/// Decodes a call (AUTH_SYS) with arguments `T`, using every byte.
fn call<T: Decode>(file: &[u8], prog: u32, proc_: u32) -> (u32, T) {
    let rec = record(file);
    let mut r = XdrReader::new(&rec);
    let h = CallHeader::decode(&mut r).unwrap();
    assert_eq!((h.prog, h.proc_), (prog, proc_));
    assert_eq!(h.cred.flavor.0, 1, "AUTH_SYS");
    let args = T::decode(&mut r).unwrap();
    r.finish("captured call").unwrap();
    (h.xid, args)
}

fn is_file(a: &fattr3, size: u64) {
    assert_eq!(a.type_, ftype3::NF3REG);
    assert_eq!(a.mode & 0o7777, 0o660);
    assert_eq!(a.size, size);
}

fn is_export_root(a: &fattr3) {
    assert_eq!(a.type_, ftype3::NF3DIR);
    assert_eq!(a.mode & 0o7777, 0o777);
}

#[test]
fn ganesha_getport() {
    let (cx, m): (_, Mapping) = call(
        include_bytes!("../testdata/ganesha_getport_call.bin"),
        100000,
        3,
    );
    assert_eq!(m, Mapping::tcp(100005, 3));
    assert_eq!(m.prot, IPPROTO_TCP);
    let (rx, port): (_, u32) = reply(include_bytes!("../testdata/ganesha_getport_reply.bin"));
    assert_eq!(port, 20048);
    assert_eq!(cx, rx);
}

#[test]
fn ganesha_mnt() {
    let (cx, path): (_, directnfs_wire::mount::dirpath) = call(
        include_bytes!("../testdata/ganesha_mnt_call.bin"),
        100005,
        1,
    );
    assert_eq!(path.as_bytes(), b"/export");
    let (rx, res): (_, mountres3) = reply(include_bytes!("../testdata/ganesha_mnt_reply.bin"));
    assert_eq!(cx, rx);
    let mountres3::Ok(ok) = res else {
        panic!("{res:?}")
    };
    assert_eq!(ok.fhandle.len(), 24);
    assert_eq!(ok.auth_flavors, [1]);
}

#[test]
fn ganesha_export() {
    let (_, e): (_, exports) = reply(include_bytes!("../testdata/ganesha_export_reply.bin"));
    assert_eq!(e.0.len(), 1);
    assert_eq!(e.0[0].ex_dir.as_bytes(), b"/export");
    assert!(e.0[0].ex_groups.is_empty());
}

#[test]
fn ganesha_null() {
    let (_, ()) = reply::<()>(include_bytes!("../testdata/ganesha_null_reply.bin"));
}

#[test]
fn ganesha_getattr() {
    let (_, a): (_, GETATTR3args) = call(
        include_bytes!("../testdata/ganesha_getattr_call.bin"),
        100003,
        1,
    );
    assert_eq!(a.object.len(), 24);
    let (_, r): (_, GETATTR3res) = reply(include_bytes!("../testdata/ganesha_getattr_reply.bin"));
    let attrs = r.ok().unwrap().obj_attributes;
    is_file(&attrs, HELLO.len() as u64);
    let (_, r): (_, GETATTR3res) =
        reply(include_bytes!("../testdata/ganesha_getattr_dir_reply.bin"));
    is_export_root(&r.ok().unwrap().obj_attributes);
}

#[test]
fn ganesha_lookup() {
    let (cx, a): (_, LOOKUP3args) = call(
        include_bytes!("../testdata/ganesha_lookup_call.bin"),
        100003,
        3,
    );
    assert_eq!(a.what.name.as_bytes(), b"hello.txt");
    let (rx, r): (_, LOOKUP3res) = reply(include_bytes!("../testdata/ganesha_lookup_reply.bin"));
    assert_eq!(cx, rx);
    let ok = r.ok().unwrap();
    assert_eq!(ok.object.len(), 24);
    assert_eq!(ok.obj_attributes.unwrap().type_, ftype3::NF3REG);
    is_export_root(ok.dir_attributes.as_ref().unwrap());
}

#[test]
fn ganesha_access() {
    let (_, r): (_, ACCESS3res) = reply(include_bytes!("../testdata/ganesha_access_reply.bin"));
    let ok = r.ok().unwrap();
    is_file(ok.obj_attributes.as_ref().unwrap(), HELLO.len() as u64);
    assert_eq!(ok.access & ACCESS3_READ, ACCESS3_READ);
}

#[test]
fn ganesha_fsinfo() {
    let (_, r): (_, FSINFO3res) = reply(include_bytes!("../testdata/ganesha_fsinfo_reply.bin"));
    let ok = r.ok().unwrap();
    is_export_root(ok.obj_attributes.as_ref().unwrap());
    assert_eq!((ok.rtmax, ok.rtpref, ok.rtmult), (1 << 20, 1 << 20, 512));
    assert_eq!((ok.wtmax, ok.wtpref, ok.wtmult), (1 << 20, 1 << 20, 512));
    assert_eq!(ok.dtpref, 16384);
    assert_eq!(ok.maxfilesize, i64::MAX as u64);
    assert_eq!(ok.properties, 0x1b);
}

#[test]
fn ganesha_create() {
    let (cx, a): (_, CREATE3args) = call(
        include_bytes!("../testdata/ganesha_create_call.bin"),
        100003,
        8,
    );
    assert_eq!(a.where_.name.as_bytes(), b"hello.txt");
    assert_eq!(a.how.mode(), createmode3::GUARDED);
    let (rx, r): (_, CREATE3res) = reply(include_bytes!("../testdata/ganesha_create_reply.bin"));
    assert_eq!(cx, rx);
    let ok = r.ok().unwrap();
    assert_eq!(ok.obj.unwrap().len(), 24);
    is_file(ok.obj_attributes.as_ref().unwrap(), 0);
    assert!(ok.dir_wcc.before.is_some());
    is_export_root(ok.dir_wcc.after.as_ref().unwrap());

    let (_, r): (_, CREATE3res) =
        reply(include_bytes!("../testdata/ganesha_create_exist_reply.bin"));
    let Nfs3Res::Fail(status, fail) = r else {
        panic!("{r:?}")
    };
    assert_eq!(status, nfsstat3::NFS3ERR_EXIST);
    is_export_root(fail.dir_wcc.after.as_ref().unwrap());
}

#[test]
fn ganesha_setattr() {
    let (_, r): (_, SETATTR3res) = reply(include_bytes!("../testdata/ganesha_setattr_reply.bin"));
    is_file(r.ok().unwrap().obj_wcc.after.as_ref().unwrap(), 0);
}

#[test]
fn ganesha_write_and_commit() {
    let (cx, a): (_, WRITE3args) = call(
        include_bytes!("../testdata/ganesha_write_call.bin"),
        100003,
        7,
    );
    assert_eq!((a.offset, a.count, a.stable), (0, 41, stable_how::UNSTABLE));
    assert_eq!(a.data, HELLO);

    let file = include_bytes!("../testdata/ganesha_write_reply.bin");
    let (rx, r): (_, WRITE3res) = reply(file);
    assert_eq!(cx, rx);
    let ok = r.ok().unwrap();
    assert_eq!((ok.count, ok.committed), (41, stable_how::UNSTABLE));
    is_file(ok.file_wcc.after.as_ref().unwrap(), 41);

    // The hot-path decoder reads the same reply the same way.
    let rec = record(file);
    let mut rd = XdrReader::new(&rec);
    ReplyHeader::decode(&mut rd).unwrap();
    let fast = decode_write_reply(&mut rd).unwrap();
    assert_eq!(rd.remaining(), 0);
    assert_eq!(fast.ok.unwrap().verf, ok.verf);

    let (_, c): (_, COMMIT3args) = call(
        include_bytes!("../testdata/ganesha_commit_call.bin"),
        100003,
        21,
    );
    assert_eq!((c.offset, c.count), (0, 0));
    let (_, cr): (_, COMMIT3res) = reply(include_bytes!("../testdata/ganesha_commit_reply.bin"));
    // Ganesha's write verifier is its boot time: WRITE and COMMIT agree.
    assert_eq!(cr.ok().unwrap().verf, ok.verf);
}

#[test]
fn ganesha_read() {
    let (cx, a): (_, READ3args) = call(
        include_bytes!("../testdata/ganesha_read_call.bin"),
        100003,
        6,
    );
    assert_eq!((a.offset, a.count), (0, 41));

    let file = include_bytes!("../testdata/ganesha_read_reply.bin");
    let (rx, r): (_, READ3res) = reply(file);
    assert_eq!(cx, rx);
    let ok = r.ok().unwrap();
    assert_eq!((ok.count, ok.eof, &ok.data[..]), (41, true, HELLO));
    is_file(ok.file_attributes.as_ref().unwrap(), 41);

    // Zero-copy: the data is a slice of the record.
    let rec = record(file);
    let mut rd = XdrReader::new(&rec);
    ReplyHeader::decode(&mut rd).unwrap();
    let fast = decode_read_reply(&mut rd, a.count).unwrap();
    assert_eq!(rd.remaining(), 0);
    assert_eq!(fast.ok.unwrap().data, HELLO);
    // Asking for fewer bytes than the server sent is refused.
    let mut rd = XdrReader::new(&rec);
    ReplyHeader::decode(&mut rd).unwrap();
    assert!(decode_read_reply(&mut rd, 40).is_err());
}

#[test]
fn ganesha_readdirplus() {
    let (_, a): (_, READDIRPLUS3args) = call(
        include_bytes!("../testdata/ganesha_readdirplus_call.bin"),
        100003,
        17,
    );
    assert_eq!((a.cookie, a.dircount, a.maxcount), (0, 8192, 8192));

    let (_, r): (_, READDIRPLUS3res) =
        reply(include_bytes!("../testdata/ganesha_readdirplus_reply.bin"));
    let ok = r.ok().unwrap();
    is_export_root(ok.dir_attributes.as_ref().unwrap());
    assert!(ok.reply.eof);
    let names: Vec<&[u8]> = ok.reply.entries.iter().map(|e| e.name.as_bytes()).collect();
    assert_eq!(names, [&b"."[..], b"..", b"hello.txt", b"big.bin"]);
    let sizes: Vec<(ftype3, u64)> = ok
        .reply
        .entries
        .iter()
        .map(|e| {
            let a = e.name_attributes.unwrap();
            (a.type_, a.size)
        })
        .collect();
    assert_eq!(sizes[2], (ftype3::NF3REG, 41));
    assert_eq!(sizes[3], (ftype3::NF3REG, 131072));
    for e in &ok.reply.entries {
        assert_eq!(e.name_handle.unwrap().len(), 24);
        assert_eq!(e.name_attributes.unwrap().fileid, e.fileid);
    }
}

#[test]
fn ganesha_mnt_of_unknown_export_is_acces() {
    // Ganesha answers ACCES, not NOENT, for an export it does not have.
    let (_, r): (_, mountres3) = reply(include_bytes!("../testdata/ganesha_mnt_acces_reply.bin"));
    assert_eq!(
        r,
        mountres3::Err(directnfs_wire::mount::mountstat3::MNT3ERR_ACCES)
    );
}

#[test]
fn ganesha_lookup_noent() {
    let (_, r): (_, LOOKUP3res) =
        reply(include_bytes!("../testdata/ganesha_lookup_noent_reply.bin"));
    let Nfs3Res::Fail(status, fail) = r else {
        panic!("{r:?}")
    };
    assert_eq!(status, nfsstat3::NFS3ERR_NOENT);
    is_export_root(fail.dir_attributes.as_ref().unwrap());
}

#[test]
fn ganesha_fsstat() {
    let (_, r): (_, FSSTAT3res) = reply(include_bytes!("../testdata/ganesha_fsstat_reply.bin"));
    let ok = r.ok().unwrap();
    is_export_root(ok.obj_attributes.as_ref().unwrap());
    assert!(ok.abytes <= ok.fbytes && ok.fbytes <= ok.tbytes && ok.tbytes > 0);
    assert!(ok.afiles <= ok.tfiles && ok.ffiles <= ok.tfiles && ok.tfiles > 0);
}

#[test]
#[cfg_attr(miri, ignore = "slow under Miri: very large input")]
fn ganesha_read_of_128k_borrows_all_of_it() {
    let file = include_bytes!("../testdata/ganesha_read_big_reply.bin");
    let rec = record(file);
    let mut rd = XdrReader::new(&rec);
    ReplyHeader::decode(&mut rd).unwrap();
    let fast = decode_read_reply(&mut rd, 131072).unwrap();
    assert_eq!(rd.remaining(), 0);
    is_file(fast.file_attributes.as_ref().unwrap(), 131072);
    let ok = fast.ok.unwrap();
    assert!(ok.eof);
    assert_eq!(ok.data.len(), 131072);
    assert!(ok
        .data
        .iter()
        .enumerate()
        .all(|(i, b)| *b as usize == i % 251));

    let (_, r): (_, READ3res) = reply(file);
    assert_eq!(r.ok().unwrap().data, ok.data);
}
