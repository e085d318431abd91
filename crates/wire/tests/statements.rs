//! Behaviour the rest of directnfs relies on, one statement per test.

// Tests: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use directnfs_wire::mount::{self, mountres3, mountstat3};
use directnfs_wire::nfs3::*;
use directnfs_wire::portmap;
use directnfs_wire::xdr::{decode_exact, to_bytes, XdrWrite};
use directnfs_wire::{DecodeError, Procedure};

fn w(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|x| x.to_be_bytes()).collect()
}

#[test]
fn unknown_nfsstat_decodes_as_failure() {
    // status 0xdead, then READ3resfail { post_op_attr = FALSE }.
    let r: READ3res = decode_exact(&w(&[0xdead, 0]), "READ3res").unwrap();
    assert_eq!(r.status(), nfsstat3(0xdead));
    assert!(matches!(r, Nfs3Res::Fail(nfsstat3(0xdead), _)));
    assert_eq!(format!("{:?}", r.status()), "nfsstat3(0xdead)");

    let g: GETATTR3res = decode_exact(&w(&[77]), "GETATTR3res").unwrap();
    assert_eq!(g, Nfs3Res::Fail(nfsstat3(77), ()));

    let l: LOOKUP3res = decode_exact(&w(&[10009, 0]), "LOOKUP3res").unwrap();
    assert!(!l.is_ok());
}

#[test]
fn every_rfc_1813_status_has_its_name() {
    let codes = [
        (0, "NFS3_OK"),
        (1, "NFS3ERR_PERM"),
        (2, "NFS3ERR_NOENT"),
        (5, "NFS3ERR_IO"),
        (6, "NFS3ERR_NXIO"),
        (13, "NFS3ERR_ACCES"),
        (17, "NFS3ERR_EXIST"),
        (18, "NFS3ERR_XDEV"),
        (19, "NFS3ERR_NODEV"),
        (20, "NFS3ERR_NOTDIR"),
        (21, "NFS3ERR_ISDIR"),
        (22, "NFS3ERR_INVAL"),
        (27, "NFS3ERR_FBIG"),
        (28, "NFS3ERR_NOSPC"),
        (30, "NFS3ERR_ROFS"),
        (31, "NFS3ERR_MLINK"),
        (63, "NFS3ERR_NAMETOOLONG"),
        (66, "NFS3ERR_NOTEMPTY"),
        (69, "NFS3ERR_DQUOT"),
        (70, "NFS3ERR_STALE"),
        (71, "NFS3ERR_REMOTE"),
        (10001, "NFS3ERR_BADHANDLE"),
        (10002, "NFS3ERR_NOT_SYNC"),
        (10003, "NFS3ERR_BAD_COOKIE"),
        (10004, "NFS3ERR_NOTSUPP"),
        (10005, "NFS3ERR_TOOSMALL"),
        (10006, "NFS3ERR_SERVERFAULT"),
        (10007, "NFS3ERR_BADTYPE"),
        (10008, "NFS3ERR_JUKEBOX"),
    ];
    for (code, name) in codes {
        assert_eq!(nfsstat3(code).name(), Some(name));
    }
}

#[test]
fn rejects_fh_longer_than_64() {
    // A LOOKUP reply whose object handle claims 65 bytes.
    let mut v = w(&[0, 65]);
    v.extend_from_slice(&[0; 68]);
    v.extend_from_slice(&w(&[0, 0]));
    assert_eq!(
        decode_exact::<LOOKUP3res>(&v, "LOOKUP3res").unwrap_err(),
        DecodeError::TooLong {
            what: "nfs_fh3",
            len: 65,
            max: 64
        }
    );
}

#[test]
fn read_reply_rejects_more_data_than_requested() {
    let mut v = w(&[0, 0, 8, 1]);
    v.put_opaque(&[7; 8]);
    let err = decode_read_reply(&mut directnfs_wire::XdrReader::new(&v), 4).unwrap_err();
    assert_eq!(
        err,
        DecodeError::TooLong {
            what: "READ3resok data",
            len: 8,
            max: 4
        }
    );
    assert!(decode_read_reply(&mut directnfs_wire::XdrReader::new(&v), 8).is_ok());
}

#[test]
fn read_reply_whose_count_disagrees_with_its_data_is_an_error() {
    let mut v = w(&[0, 0, 7, 1]);
    v.put_opaque(&[7; 8]);
    let err = decode_read_reply(&mut directnfs_wire::XdrReader::new(&v), 100).unwrap_err();
    assert!(matches!(
        err,
        DecodeError::TooLong {
            what: "READ3resok data (longer than count)",
            len: 8,
            max: 7
        }
    ));
}

#[test]
fn write_args_whose_count_disagrees_with_data_is_an_error() {
    let mut v = w(&[0, 0, 0, 4, 2]);
    v.put_opaque(b"abc");
    assert!(decode_exact::<WRITE3args>(&v, "WRITE3args").is_err());
}

#[test]
#[cfg_attr(miri, ignore = "slow under Miri: very large input")]
fn readdir_reply_with_more_than_65536_entries_is_too_long() {
    let entry = entry3::default();
    let mut ok = READDIR3resok::default();
    ok.reply.entries = vec![entry; MAX_DIR_ENTRIES];
    let at_cap: READDIR3res = Nfs3Res::Ok(ok.clone());
    // Exactly the cap decodes, iteratively (no stack overflow).
    let back: READDIR3res = decode_exact(&to_bytes(&at_cap), "READDIR3res").unwrap();
    assert_eq!(back.ok().unwrap().reply.entries.len(), MAX_DIR_ENTRIES);

    ok.reply.entries.push(entry3::default());
    let over: READDIR3res = Nfs3Res::Ok(ok);
    assert!(matches!(
        decode_exact::<READDIR3res>(&to_bytes(&over), "READDIR3res"),
        Err(DecodeError::TooLong { what: "entry3", .. })
    ));
}

#[test]
fn unterminated_entry_list_is_truncated_not_a_hang() {
    // status, dir attrs FALSE, cookieverf, TRUE, fileid, name "", cookie.
    let v = w(&[0, 0, 0, 0, 1, 0, 1, 0, 0, 2]);
    assert!(matches!(
        decode_exact::<READDIR3res>(&v, "READDIR3res"),
        Err(DecodeError::Truncated { .. })
    ));
}

#[test]
fn unknown_createmode_is_refused() {
    let mut v = w(&[0]);
    v.put_opaque(b"x");
    v.extend_from_slice(&w(&[3]));
    assert_eq!(
        decode_exact::<CREATE3args>(&v, "CREATE3args").unwrap_err(),
        DecodeError::BadDiscriminant {
            what: "createmode3",
            value: 3
        }
    );
}

#[test]
fn unknown_time_how_is_refused() {
    let v = w(&[0, 0, 0, 0, 7]);
    assert!(matches!(
        decode_exact::<sattr3>(&v, "sattr3"),
        Err(DecodeError::BadDiscriminant {
            what: "time_how",
            value: 7
        })
    ));
}

#[test]
fn unknown_stable_how_in_a_write_reply_is_kept() {
    let mut v = w(&[0, 0, 0, 5, 9]);
    v.extend_from_slice(&[0; 8]);
    let r: WRITE3res = decode_exact(&v, "WRITE3res").unwrap();
    assert_eq!(r.ok().unwrap().committed, stable_how(9));
}

#[test]
fn unknown_mountstat_decodes_as_failure() {
    let r: mountres3 = decode_exact(&w(&[4242]), "mountres3").unwrap();
    assert_eq!(r.status(), mountstat3(4242));
}

#[test]
fn procedure_numbers_are_the_rfc_ones() {
    fn n<P: Procedure>() -> (u32, u32, u32, &'static str) {
        (P::PROG, P::VERS, P::PROC, P::NAME)
    }
    assert_eq!(n::<Null>(), (100003, 3, 0, "NULL"));
    assert_eq!(n::<Getattr>(), (100003, 3, 1, "GETATTR"));
    assert_eq!(n::<Setattr>(), (100003, 3, 2, "SETATTR"));
    assert_eq!(n::<Lookup>(), (100003, 3, 3, "LOOKUP"));
    assert_eq!(n::<Access>(), (100003, 3, 4, "ACCESS"));
    assert_eq!(n::<Readlink>(), (100003, 3, 5, "READLINK"));
    assert_eq!(n::<Read>(), (100003, 3, 6, "READ"));
    assert_eq!(n::<Write>(), (100003, 3, 7, "WRITE"));
    assert_eq!(n::<Create>(), (100003, 3, 8, "CREATE"));
    assert_eq!(n::<Mkdir>(), (100003, 3, 9, "MKDIR"));
    assert_eq!(n::<Symlink>(), (100003, 3, 10, "SYMLINK"));
    assert_eq!(n::<Remove>(), (100003, 3, 12, "REMOVE"));
    assert_eq!(n::<Rmdir>(), (100003, 3, 13, "RMDIR"));
    assert_eq!(n::<Rename>(), (100003, 3, 14, "RENAME"));
    assert_eq!(n::<Readdir>(), (100003, 3, 16, "READDIR"));
    assert_eq!(n::<Readdirplus>(), (100003, 3, 17, "READDIRPLUS"));
    assert_eq!(n::<Fsstat>(), (100003, 3, 18, "FSSTAT"));
    assert_eq!(n::<Fsinfo>(), (100003, 3, 19, "FSINFO"));
    assert_eq!(n::<Pathconf>(), (100003, 3, 20, "PATHCONF"));
    assert_eq!(n::<Commit>(), (100003, 3, 21, "COMMIT"));
    assert_eq!(n::<mount::Null>().2, 0);
    assert_eq!(n::<mount::Mnt>(), (100005, 3, 1, "MNT"));
    assert_eq!(n::<mount::Umnt>(), (100005, 3, 3, "UMNT"));
    assert_eq!(n::<mount::Export>(), (100005, 3, 5, "EXPORT"));
    assert_eq!(n::<portmap::Null>().2, 0);
    assert_eq!(n::<portmap::Getport>(), (100000, 2, 3, "GETPORT"));
}
