//! Golden byte vectors built by hand from the RFC layouts: each test spells
//! out the bytes word by word, decodes them, checks the fields, and checks
//! that encoding the decoded value gives the same bytes back.

// Tests: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use directnfs_wire::mount::{exports, mountres3, mountstat3, Export, Mnt};
use directnfs_wire::nfs3::*;
use directnfs_wire::portmap::{Getport, Mapping, IPPROTO_TCP};
use directnfs_wire::xdr::{decode_exact, to_bytes, Decode, Encode, XdrReader};
use directnfs_wire::Procedure;

/// Big-endian 4-byte words, the unit of XDR.
fn w(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|x| x.to_be_bytes()).collect()
}

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

/// Decodes `bytes` as `T`, requiring every byte to be used, and checks that
/// re-encoding gives the same bytes.
fn golden<T: Decode + Encode>(bytes: &[u8]) -> T {
    let v: T = decode_exact(bytes, "golden").unwrap();
    assert_eq!(to_bytes(&v), bytes, "re-encoding differs");
    v
}

/// A regular file: mode 0644, nlink 1, uid 1000, gid 100, size 8192,
/// used 8192, rdev 0/0, fsid 0x11, fileid 0x42, times 1..3.
#[rustfmt::skip]
fn fattr_words() -> Vec<u8> {
    w(&[
        1,                  // type NF3REG
        0o644, 1, 1000, 100, // mode nlink uid gid
        0, 8192,            // size
        0, 8192,            // used
        0, 0,               // rdev
        0, 0x11,            // fsid
        0, 0x42,            // fileid
        1, 0, 2, 0, 3, 0,   // atime mtime ctime
    ])
}

fn check_fattr(a: &fattr3) {
    assert_eq!(a.type_, ftype3::NF3REG);
    assert_eq!((a.mode, a.nlink, a.uid, a.gid), (0o644, 1, 1000, 100));
    assert_eq!((a.size, a.used, a.fsid, a.fileid), (8192, 8192, 0x11, 0x42));
    assert_eq!(
        a.ctime,
        nfstime3 {
            seconds: 3,
            nseconds: 0
        }
    );
}

const FH: [u8; 8] = [0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 1];

#[test]
fn getport_golden() {
    assert_eq!(
        (Getport::PROG, Getport::VERS, Getport::PROC),
        (100000, 2, 3)
    );
    let args = w(&[100005, 3, 6, 0]);
    let m: Mapping = golden(&args);
    assert_eq!(
        m,
        Mapping {
            prog: 100005,
            vers: 3,
            prot: IPPROTO_TCP,
            port: 0
        }
    );
    let port: u32 = golden(&w(&[20048]));
    assert_eq!(port, 20048);
}

#[test]
fn mnt_golden() {
    assert_eq!((Mnt::PROG, Mnt::VERS, Mnt::PROC), (100005, 3, 1));
    let args = cat(&[&w(&[7]), b"/export\0"]);
    let path: directnfs_wire::mount::dirpath = golden(&args);
    assert_eq!(path.as_bytes(), b"/export");

    let res = cat(&[&w(&[0, 8]), &FH, &w(&[2, 1, 390003])]);
    match golden::<mountres3>(&res) {
        mountres3::Ok(ok) => {
            assert_eq!(ok.fhandle.as_bytes(), FH);
            assert_eq!(ok.auth_flavors, vec![1, 390003]);
        }
        other => panic!("{other:?}"),
    }

    let denied: mountres3 = golden(&w(&[13]));
    assert_eq!(denied, mountres3::Err(mountstat3::MNT3ERR_ACCES));
}

#[test]
fn export_golden() {
    assert_eq!(Export::PROC, 5);
    #[rustfmt::skip]
    let res = cat(&[
        &w(&[1, 7]), b"/export\0",   // entry follows; ex_dir
        &w(&[1, 3]), b"db1\0",       // group follows; gr_name
        &w(&[1, 3]), b"db2\0",       // group follows; gr_name
        &w(&[0]),                    // no more groups
        &w(&[1, 4]), b"/vol",        // next export; ex_dir
        &w(&[0]),                    // no groups
        &w(&[0]),                    // no more exports
    ]);
    let e: exports = golden(&res);
    assert_eq!(e.0.len(), 2);
    assert_eq!(e.0[0].ex_dir.as_bytes(), b"/export");
    let groups: Vec<&[u8]> = e.0[0].ex_groups.iter().map(|g| g.as_bytes()).collect();
    assert_eq!(groups, [b"db1", b"db2"]);
    assert_eq!(e.0[1].ex_dir.as_bytes(), b"/vol");
    assert!(e.0[1].ex_groups.is_empty());
    // An empty list is one FALSE word.
    assert!(golden::<exports>(&w(&[0])).0.is_empty());
}

#[test]
fn getattr_golden() {
    let args = cat(&[&w(&[8]), &FH]);
    let a: GETATTR3args = golden(&args);
    assert_eq!(a.object.as_bytes(), FH);

    let res = cat(&[&w(&[0]), &fattr_words()]);
    let r: GETATTR3res = golden(&res);
    check_fattr(&r.ok().unwrap().obj_attributes);

    let stale: GETATTR3res = golden(&w(&[70]));
    assert_eq!(stale, Nfs3Res::Fail(nfsstat3::NFS3ERR_STALE, ()));
}

#[test]
fn lookup_golden() {
    let args = cat(&[&w(&[8]), &FH, &w(&[9]), b"hello.txt\0\0\0"]);
    let a: LOOKUP3args = golden(&args);
    assert_eq!(a.what.name.as_bytes(), b"hello.txt");

    #[rustfmt::skip]
    let ok = cat(&[
        &w(&[0, 8]), &FH,          // NFS3_OK, object
        &w(&[1]), &fattr_words(),  // obj_attributes follow
        &w(&[0]),                  // no dir_attributes
    ]);
    let r: LOOKUP3res = golden(&ok);
    let ok = r.ok().unwrap();
    assert_eq!(ok.object.as_bytes(), FH);
    check_fattr(ok.obj_attributes.as_ref().unwrap());
    assert!(ok.dir_attributes.is_none());

    let noent: LOOKUP3res = golden(&w(&[2, 0]));
    assert_eq!(noent.status(), nfsstat3::NFS3ERR_NOENT);
}

#[test]
fn read_golden() {
    let args = cat(&[&w(&[8]), &FH, &w(&[0, 4096, 5])]);
    let a: READ3args = golden(&args);
    assert_eq!((a.offset, a.count), (4096, 5));

    #[rustfmt::skip]
    let res = cat(&[
        &w(&[0, 1]), &fattr_words(), // NFS3_OK, attributes follow
        &w(&[5, 1, 5]),              // count, eof, data length
        b"hello\0\0\0",              // data and padding
    ]);
    let r: READ3res = golden(&res);
    let ok = r.ok().unwrap();
    assert_eq!((ok.count, ok.eof, &ok.data[..]), (5, true, &b"hello"[..]));

    let mut rd = XdrReader::new(&res);
    let fast = decode_read_reply(&mut rd, 5).unwrap();
    assert_eq!(fast.ok.unwrap().data, b"hello");
    check_fattr(fast.file_attributes.as_ref().unwrap());
}

#[test]
fn write_golden() {
    #[rustfmt::skip]
    let args = cat(&[
        &w(&[8]), &FH,
        &w(&[0, 8192, 3, 2, 3]), // offset, count, FILE_SYNC, data length
        b"abc\0",
    ]);
    let a: WRITE3args = golden(&args);
    assert_eq!(
        (a.offset, a.count, a.stable),
        (8192, 3, stable_how::FILE_SYNC)
    );
    assert_eq!(a.data, b"abc");

    #[rustfmt::skip]
    let res = cat(&[
        &w(&[0]),                        // NFS3_OK
        &w(&[1, 0, 8192, 2, 0, 3, 0]),   // before: size 8192, mtime, ctime
        &w(&[1]), &fattr_words(),        // after
        &w(&[3, 2]),                     // count 3, committed FILE_SYNC
        &[1, 2, 3, 4, 5, 6, 7, 8],       // verf
    ]);
    let r: WRITE3res = golden(&res);
    let ok = r.ok().unwrap();
    assert_eq!((ok.count, ok.committed), (3, stable_how::FILE_SYNC));
    assert_eq!(ok.verf, writeverf3([1, 2, 3, 4, 5, 6, 7, 8]));
    assert_eq!(ok.file_wcc.before.unwrap().size, 8192);

    let fast = decode_write_reply(&mut XdrReader::new(&res)).unwrap();
    assert_eq!(fast.ok.unwrap().count, 3);

    let nospc: WRITE3res = golden(&w(&[28, 0, 0]));
    assert_eq!(nospc.status(), nfsstat3::NFS3ERR_NOSPC);
}

#[test]
fn fsinfo_golden() {
    #[rustfmt::skip]
    let res = cat(&[
        &w(&[0, 0]),                          // NFS3_OK, no attributes
        &w(&[1 << 20, 1 << 20, 512]),         // rtmax rtpref rtmult
        &w(&[1 << 20, 1 << 20, 512]),         // wtmax wtpref wtmult
        &w(&[16384]),                         // dtpref
        &w(&[0x7fff_ffff, 0xffff_ffff]),      // maxfilesize
        &w(&[0, 1]),                          // time_delta
        &w(&[0x1b]),                          // properties
    ]);
    let r: FSINFO3res = golden(&res);
    let ok = r.ok().unwrap();
    assert_eq!((ok.rtmax, ok.wtmax, ok.dtpref), (1 << 20, 1 << 20, 16384));
    assert_eq!(ok.maxfilesize, i64::MAX as u64);
    assert_eq!(
        ok.properties,
        FSF3_LINK | FSF3_SYMLINK | FSF3_HOMOGENEOUS | FSF3_CANSETTIME
    );
}

#[test]
fn readdirplus_golden() {
    #[rustfmt::skip]
    let args = cat(&[&w(&[8]), &FH, &w(&[0, 0, 0, 0, 8192, 32768])]);
    let a: READDIRPLUS3args = golden(&args);
    assert_eq!((a.dircount, a.maxcount), (8192, 32768));

    #[rustfmt::skip]
    let res = cat(&[
        &w(&[0, 0]),                       // NFS3_OK, no dir attributes
        &[9, 9, 9, 9, 9, 9, 9, 9],         // cookieverf
        &w(&[1]),                          // entry follows
        &w(&[0, 0x42, 4]), b"data",        // fileid, name
        &w(&[0, 7]),                       // cookie
        &w(&[1]), &fattr_words(),          // name_attributes
        &w(&[1, 8]), &FH,                  // name_handle
        &w(&[1]),                          // entry follows
        &w(&[0, 0x43, 1]), b".\0\0\0",     // fileid, name
        &w(&[0, 8]),                       // cookie
        &w(&[0]),                          // no attributes
        &w(&[0]),                          // no handle
        &w(&[0]),                          // no more entries
        &w(&[1]),                          // eof
    ]);
    let r: READDIRPLUS3res = golden(&res);
    let ok = r.ok().unwrap();
    assert_eq!(ok.cookieverf, cookieverf3([9; 8]));
    assert!(ok.reply.eof);
    let e = &ok.reply.entries;
    assert_eq!(e.len(), 2);
    assert_eq!(
        (e[0].fileid, e[0].name.as_bytes(), e[0].cookie),
        (0x42, &b"data"[..], 7)
    );
    check_fattr(e[0].name_attributes.as_ref().unwrap());
    assert_eq!(e[0].name_handle.unwrap().as_bytes(), FH);
    assert_eq!((e[1].name.as_bytes(), e[1].name_handle), (&b"."[..], None));
}

#[test]
fn create_exclusive_golden() {
    #[rustfmt::skip]
    let args = cat(&[
        &w(&[8]), &FH, &w(&[4]), b"new1",   // where
        &w(&[2]), &[1, 1, 2, 2, 3, 3, 4, 4], // EXCLUSIVE, verf
    ]);
    let a: CREATE3args = golden(&args);
    assert_eq!(
        a.how,
        createhow3::Exclusive(createverf3([1, 1, 2, 2, 3, 3, 4, 4]))
    );

    #[rustfmt::skip]
    let guarded = cat(&[
        &w(&[8]), &FH, &w(&[4]), b"new1",
        &w(&[1]),                 // GUARDED
        &w(&[1, 0o600]),          // mode
        &w(&[0, 0]),              // uid gid unset
        &w(&[1, 0, 0]),           // size 0
        &w(&[1]),                 // atime SET_TO_SERVER_TIME
        &w(&[2, 5, 6]),           // mtime SET_TO_CLIENT_TIME 5.6
    ]);
    let a: CREATE3args = golden(&guarded);
    let createhow3::Guarded(s) = a.how else {
        panic!("{:?}", a.how)
    };
    assert_eq!((s.mode, s.uid, s.size), (Some(0o600), None, Some(0)));
    assert_eq!(s.atime, SetTime::SetToServerTime);
    assert_eq!(
        s.mtime,
        SetTime::SetToClientTime(nfstime3 {
            seconds: 5,
            nseconds: 6
        })
    );
}
