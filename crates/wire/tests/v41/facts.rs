//! What must hold of each step of the scenario, whether its records were
//! just received (the live test) or captured earlier (the golden test):
//! statuses, operation order, types, modes, sizes, data, verifiers, owner
//! names, the reply cache's answer. Handles, stateids, session ids, times,
//! fileids and change attributes differ with every run and are not
//! checked beyond their shape. [`check`] panics on a broken fact and
//! returns the facts as README lines.

use directnfs_wire::nfs4::*;
use directnfs_wire::rpc::ReplyHeader;
use directnfs_wire::xdr::{decode_exact, pad_len, Decode, Encode, XdrReader};

use super::client::Exchange;

use super::scenario::HELLO;
/// Short for the operation numbers the facts list.
use directnfs_wire::nfs4::nfs_opnum4 as O;

/// Calls macro `$m` with the name of every step the scenario captures, in
/// order (the golden test needs them as literals, for `include_bytes!`).
macro_rules! with_steps {
    ($m:ident) => {
        $m![
            "exchange_id",
            "create_session",
            "reclaim_complete",
            "putrootfh_getattr",
            "lookup_export",
            "lookup_noent",
            "open_create",
            "write",
            "commit",
            "read",
            "getattr",
            "setattr",
            "access",
            "lock",
            "lockt_denied",
            "locku",
            "test_stateid",
            "free_stateid",
            "close",
            "open_claim_fh",
            "open_claim_previous",
            "readdir",
            "link",
            "rename",
            "create_dir",
            "lookupp",
            "remove",
            "remove_link",
            "remove_link_replay",
            "secinfo_no_name",
            "delegreturn_bad_stateid",
            "putfh_bad_handle",
            "seq_misordered",
            "badsession",
            "no_sequence",
            "bind_conn_to_session",
            "destroy_session",
            "destroy_clientid",
        ]
    };
}
#[allow(unused_imports)] // used by the golden test only
pub(crate) use with_steps;

macro_rules! str_list {
    ($($name:literal),* $(,)?) => {
        &[$($name),*]
    };
}

/// Every step the scenario captures, in order.
pub const STEPS: &[&str] = with_steps!(str_list);

/// The steps whose calls are kept too (the hot path's encoders made them).
pub const CALLS: &[&str] = &["write", "commit", "read"];

/// The reader after the accepted-SUCCESS RPC reply header of a record.
fn body<'a>(name: &str, record: &'a [u8]) -> XdrReader<'a> {
    let mark = u32::from_be_bytes([record[0], record[1], record[2], record[3]]);
    assert_eq!(
        mark,
        0x8000_0000 | (record.len() as u32 - 4),
        "{name}: one fragment"
    );
    after_header(name, &record[4..])
}

/// The reader after the accepted-SUCCESS RPC reply header of `msg`.
fn after_header<'a>(name: &str, msg: &'a [u8]) -> XdrReader<'a> {
    let mut r = XdrReader::new(msg);
    let h = ReplyHeader::decode(&mut r).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(h.is_success(), "{name}: {h:?}");
    r
}

/// Decodes a reply record's COMPOUND4res, using every byte.
pub fn compound_res(name: &str, record: &[u8]) -> COMPOUND4res {
    let mut r = body(name, record);
    let res = COMPOUND4res::decode(&mut r).unwrap_or_else(|e| panic!("{name}: {e}"));
    r.finish("COMPOUND4res")
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    res
}

fn ops(res: &COMPOUND4res) -> Vec<nfs_opnum4> {
    res.resarray.iter().map(nfs_resop4::opnum).collect()
}

/// The SEQUENCE result every in-session reply starts with: slot 0 of a
/// 64-slot table, no status flags.
fn sequence_ok(name: &str, res: &COMPOUND4res) -> SEQUENCE4resok {
    let Some(nfs_resop4::OP_SEQUENCE(Nfs4Res::Ok(seq))) = res.resarray.first() else {
        panic!("{name}: no successful SEQUENCE first: {res:?}")
    };
    assert_eq!(seq.sr_slotid, 0, "{name}");
    assert_eq!(
        (seq.sr_highest_slotid, seq.sr_target_highest_slotid),
        (63, 63),
        "{name}"
    );
    assert_eq!(seq.sr_status_flags, 0, "{name}");
    *seq
}

/// Checks the common shape: `status`, then the operations `expect` (after
/// SEQUENCE when `in_session`).
fn shape(
    name: &str,
    res: &COMPOUND4res,
    status: nfsstat4,
    in_session: bool,
    expect: &[nfs_opnum4],
) -> Vec<String> {
    assert_eq!(res.status, status, "{name}: {res:?}");
    assert!(res.tag.as_bytes().is_empty(), "{name}: tag echoed empty");
    let mut want = Vec::new();
    if in_session {
        want.push(nfs_opnum4::OP_SEQUENCE);
        sequence_ok(name, res);
    }
    want.extend_from_slice(expect);
    assert_eq!(ops(res), want, "{name}");
    let names: Vec<String> = want.iter().map(|o| format!("{o:?}")).collect();
    let mut facts = vec![format!("status {status:?}; results {}", names.join(", "))];
    if in_session {
        facts.push("SEQUENCE: slot 0, highest and target highest slot 63, no status flags".into());
    }
    facts
}

/// [`shape`] of a reply to `SEQUENCE` + `expect`.
fn in_session(
    name: &str,
    res: &COMPOUND4res,
    status: nfsstat4,
    expect: &[nfs_opnum4],
) -> Vec<String> {
    shape(name, res, status, true, expect)
}

/// [`shape`] of a reply to a COMPOUND without SEQUENCE.
fn alone(name: &str, res: &COMPOUND4res, status: nfsstat4, expect: &[nfs_opnum4]) -> Vec<String> {
    shape(name, res, status, false, expect)
}

fn attrs_of<'a>(name: &str, res: &'a COMPOUND4res) -> &'a fattr4 {
    res.resarray
        .iter()
        .find_map(|r| match r {
            nfs_resop4::OP_GETATTR(Nfs4Res::Ok(ok)) => Some(&ok.obj_attributes),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{name}: no GETATTR result"))
}

fn fh_of(name: &str, res: &COMPOUND4res) -> nfs_fh4 {
    res.resarray
        .iter()
        .find_map(|r| match r {
            nfs_resop4::OP_GETFH(Nfs4Res::Ok(ok)) => Some(ok.object),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{name}: no GETFH result"))
}

fn result<'a>(name: &str, res: &'a COMPOUND4res, op: nfs_opnum4) -> &'a nfs_resop4 {
    res.resarray
        .iter()
        .find(|r| r.opnum() == op)
        .unwrap_or_else(|| panic!("{name}: no {op:?} result"))
}

/// A handle of Ganesha's FSAL VFS: 16 to 64 bytes, not zero-padded to
/// 128 like the pseudo file system's.
fn vfs_handle(name: &str, fh: &nfs_fh4) {
    assert!(
        (16..=64).contains(&fh.len()),
        "{name}: handle of {} bytes",
        fh.len()
    );
}

/// The stat attributes of a file or directory the scenario made, as
/// Ganesha reports them with numeric owners.
fn stat(name: &str, a: &fattr4, type_: nfs_ftype4, mode: u32, size: Option<u64>) -> String {
    assert_eq!(a.type_, Some(type_), "{name}");
    assert_eq!(a.mode.map(|m| m & 0o7777), Some(mode), "{name}");
    if let Some(size) = size {
        assert_eq!(a.size, Some(size), "{name}");
    }
    assert_eq!(
        a.owner.as_ref().map(utf8string::as_bytes),
        Some(&b"0"[..]),
        "{name}: owner"
    );
    assert_eq!(
        a.owner_group.as_ref().map(utf8string::as_bytes),
        Some(&b"0"[..]),
        "{name}: owner_group"
    );
    for (what, present) in [
        ("change", a.change.is_some()),
        ("fsid", a.fsid.is_some()),
        ("fileid", a.fileid.is_some()),
        ("numlinks", a.numlinks.is_some()),
        ("space_used", a.space_used.is_some()),
        ("time_access", a.time_access.is_some()),
        ("time_metadata", a.time_metadata.is_some()),
        ("time_modify", a.time_modify.is_some()),
    ] {
        assert!(present, "{name}: {what} missing");
    }
    format!(
        "attributes: {type_:?} mode {mode:#o}{} owner \"0\" group \"0\" (numeric owners), all of STAT_ATTRS present",
        size.map(|s| format!(" size {s}")).unwrap_or_default()
    )
}

/// Checks the facts of step `name` and returns them as README lines.
pub fn check(name: &str, ex: &Exchange) -> Vec<String> {
    let res = compound_res(name, &ex.reply);
    let ok = nfsstat4::NFS4_OK;
    let mut f = match name {
        "exchange_id" => {
            let mut f = alone(name, &res, ok, &[O::OP_EXCHANGE_ID]);
            let nfs_resop4::OP_EXCHANGE_ID(Nfs4Res::Ok(e)) = &res.resarray[0] else {
                unreachable!()
            };
            assert_eq!(e.eir_sequenceid, 1, "{name}");
            assert_eq!(
                e.eir_flags,
                EXCHGID4_FLAG_USE_NON_PNFS | EXCHGID4_FLAG_SUPP_MOVED_REFER,
                "{name}"
            );
            assert_eq!(e.eir_state_protect, state_protect4_r::SP4_NONE, "{name}");
            assert_eq!(e.eir_server_owner.so_minor_id, 0, "{name}");
            assert!(
                !e.eir_server_owner.so_major_id.as_bytes().is_empty(),
                "{name}"
            );
            assert!(
                e.eir_server_scope.as_bytes().ends_with(b"_NFS-Ganesha\0"),
                "{name}"
            );
            assert_eq!(e.eir_server_impl_id, None, "{name}");
            f.push(format!(
                "eir_sequenceid 1; eir_flags {:#x} (USE_NON_PNFS | SUPP_MOVED_REFER, not CONFIRMED_R: a new client); SP4_NONE",
                e.eir_flags
            ));
            f.push("server owner: so_minor_id 0, so_major_id the host name; server scope \"<host>_NFS-Ganesha\\0\" (NUL included); no implementation id".into());
            f
        }
        "create_session" => {
            let mut f = alone(name, &res, ok, &[O::OP_CREATE_SESSION]);
            let nfs_resop4::OP_CREATE_SESSION(Nfs4Res::Ok(c)) = &res.resarray[0] else {
                unreachable!()
            };
            assert_eq!(c.csr_sequence, 1, "{name}");
            assert_eq!(c.csr_flags, CREATE_SESSION4_FLAG_CONN_BACK_CHAN, "{name}");
            let fore = c.csr_fore_chan_attrs;
            assert_eq!(
                (
                    fore.ca_maxrequestsize,
                    fore.ca_maxresponsesize,
                    fore.ca_maxresponsesize_cached
                ),
                (1052672, 1052672, 8192),
                "{name}"
            );
            assert_eq!(
                (fore.ca_maxoperations, fore.ca_maxrequests),
                (16, 64),
                "{name}"
            );
            let back = c.csr_back_chan_attrs;
            assert_eq!(
                (back.ca_maxrequestsize, back.ca_maxrequests),
                (4096, 1),
                "{name}"
            );
            f.push("csr_sequence 1; csr_flags CONN_BACK_CHAN (granted as asked)".into());
            f.push("fore channel as asked: maxrequestsize = maxresponsesize = 1052672, maxresponsesize_cached 8192, maxoperations 16, maxrequests (slots) 64".into());
            f.push("back channel as asked: maxrequestsize 4096, one slot".into());
            f
        }
        "reclaim_complete" => in_session(name, &res, ok, &[O::OP_RECLAIM_COMPLETE]),
        "putrootfh_getattr" => {
            let mut f = in_session(
                name,
                &res,
                ok,
                &[O::OP_PUTROOTFH, O::OP_GETFH, O::OP_GETATTR],
            );
            let a = attrs_of(name, &res);
            assert_eq!(a.type_, Some(nfs_ftype4::NF4DIR), "{name}");
            assert_eq!(a.lease_time, Some(60), "{name}");
            assert_eq!(
                (a.maxread, a.maxwrite, a.maxfilesize),
                (Some(64 << 20), Some(64 << 20), Some(512)),
                "{name}"
            );
            let supported = a
                .supported_attrs
                .unwrap_or_else(|| panic!("{name}: supported_attrs"));
            for bit in STAT_ATTRS.iter().chain(FS_ATTRS) {
                assert!(
                    supported.contains(*bit),
                    "{name}: attribute {bit} not supported"
                );
            }
            assert_eq!(fh_of(name, &res).len(), 128, "{name}");
            f.push(
                "the pseudo root: NF4DIR, lease_time 60, a 128-byte handle (zero-padded)".into(),
            );
            f.push("maxread = maxwrite = 64 MiB and maxfilesize 512: the pseudo file system's, not the export's (ask the export)".into());
            f.push("supported_attrs includes every attribute of STAT_ATTRS and FS_ATTRS".into());
            f
        }
        "lookup_export" => {
            // One LOOKUP per component of the export's path.
            let lookups = res.resarray.len().saturating_sub(4).max(1);
            let mut expect = vec![O::OP_PUTROOTFH];
            expect.extend(std::iter::repeat_n(O::OP_LOOKUP, lookups));
            expect.extend([O::OP_GETFH, O::OP_GETATTR]);
            let mut f = in_session(name, &res, ok, &expect);
            let a = attrs_of(name, &res);
            f.push(stat(
                name,
                a,
                nfs_ftype4::NF4DIR,
                a.mode.unwrap_or(0) & 0o7777,
                None,
            ));
            assert_eq!(a.lease_time, Some(60), "{name}");
            assert_eq!(
                (a.maxread, a.maxwrite),
                (Some(1 << 20), Some(1 << 20)),
                "{name}"
            );
            assert_eq!(a.maxfilesize, Some(i64::MAX as u64), "{name}");
            vfs_handle(name, &fh_of(name, &res));
            f.push("the export (a LOOKUP per path component below the root): a FSAL VFS handle (16 to 64 bytes; its length varies with the inode), maxread = maxwrite = 1 MiB (the export's MaxRead/MaxWrite), maxfilesize 2^63-1, lease_time 60".into());
            f
        }
        "lookup_noent" => in_session(
            name,
            &res,
            nfsstat4::NFS4ERR_NOENT,
            &[O::OP_PUTFH, O::OP_LOOKUP],
        ),
        "open_create" => {
            let mut f = in_session(
                name,
                &res,
                ok,
                &[O::OP_PUTFH, O::OP_OPEN, O::OP_GETFH, O::OP_GETATTR],
            );
            let nfs_resop4::OP_OPEN(Nfs4Res::Ok(o)) = result(name, &res, O::OP_OPEN) else {
                panic!("{name}")
            };
            assert_eq!(o.stateid.seqid, 1, "{name}");
            assert_eq!(o.rflags, OPEN4_RESULT_LOCKTYPE_POSIX, "{name}");
            assert_eq!(o.attrset, bitmap4::from_bits(&[FATTR4_MODE]), "{name}");
            assert_eq!(
                o.delegation,
                open_delegation4::OPEN_DELEGATE_NONE_EXT(open_none_delegation4::Why(
                    why_no_delegation4::WND4_NOT_WANTED
                )),
                "{name}"
            );
            vfs_handle(name, &fh_of(name, &res));
            f.push("OPEN: stateid seqid 1, rflags LOCKTYPE_POSIX, attrset {mode}, delegation NONE_EXT(WND4_NOT_WANTED)".into());
            f.push(stat(
                name,
                attrs_of(name, &res),
                nfs_ftype4::NF4REG,
                0o644,
                Some(0),
            ));
            f
        }
        "write" => {
            let mut f = in_session(name, &res, ok, &[O::OP_PUTFH, O::OP_WRITE]);
            let nfs_resop4::OP_WRITE(Nfs4Res::Ok(w)) = result(name, &res, O::OP_WRITE) else {
                panic!("{name}")
            };
            assert_eq!(
                (w.count, w.committed),
                (HELLO.len() as u32, stable_how4::UNSTABLE4),
                "{name}"
            );
            assert_eq!(w.writeverf.0[4..], [0; 4], "{name}");
            let fast = decode_write_reply(&mut body(name, &ex.reply)).unwrap();
            assert_eq!(fast.ok, Some(*w), "{name}: hot-path decoder");
            f.push("count 41, committed UNSTABLE4; writeverf: Ganesha's start time in seconds, little-endian, then 4 zero bytes".into());
            f.push("the hot-path decoder reads the same".into());
            f.extend(check_write_call(ex));
            f
        }
        "commit" => {
            let mut f = in_session(name, &res, ok, &[O::OP_PUTFH, O::OP_COMMIT]);
            let fast = decode_commit_reply(&mut body(name, &ex.reply)).unwrap();
            let nfs_resop4::OP_COMMIT(Nfs4Res::Ok(c)) = result(name, &res, O::OP_COMMIT) else {
                panic!("{name}")
            };
            assert_eq!(fast.ok, Some(c.writeverf), "{name}");
            f.push("writeverf: the WRITE's (see Across steps)".into());
            f.extend(check_call(name, ex, |args| {
                let nfs_argop4::OP_COMMIT(c) = &args.argarray[2] else {
                    panic!("{name}: {args:?}")
                };
                assert_eq!((c.offset, c.count), (0, 0));
                "call: SEQUENCE, PUTFH, COMMIT(offset 0, count 0)".into()
            }));
            f
        }
        "read" => {
            let mut f = in_session(name, &res, ok, &[O::OP_PUTFH, O::OP_READ]);
            let nfs_resop4::OP_READ(Nfs4Res::Ok(rd)) = result(name, &res, O::OP_READ) else {
                panic!("{name}")
            };
            assert!(rd.eof, "{name}");
            assert_eq!(rd.data, HELLO, "{name}");
            let record = &ex.reply;
            let fast = decode_read_reply(&mut body(name, record), 4096).unwrap();
            let data = fast.ok.unwrap().data;
            assert_eq!(data, HELLO, "{name}");
            let at = data.as_ptr() as usize - record.as_ptr() as usize;
            assert_eq!(
                at + data.len() + pad_len(data.len()),
                record.len(),
                "{name}: data ends the record"
            );
            let head =
                decode_read_reply_head(&mut after_header(name, &record[4..at]), 4096).unwrap();
            assert_eq!(
                head.ok,
                Some(ReadOkHead {
                    eof: true,
                    count: 41
                }),
                "{name}"
            );
            assert!(
                decode_read_reply(&mut body(name, record), 40).is_err(),
                "{name}: over the count asked"
            );
            f.push(
                "eof, data = hello.txt's 41 bytes; they (and 3 padding bytes) end the record"
                    .into(),
            );
            f.push("hot path: decode_read_reply borrows them; decode_read_reply_head stops at their first byte".into());
            f.extend(check_call(name, ex, |args| {
                let nfs_argop4::OP_READ(r) = &args.argarray[2] else { panic!("{name}: {args:?}") };
                assert_eq!((r.offset, r.count), (0, 4096));
                "call: SEQUENCE (sa_cachethis false), PUTFH, READ(open stateid, offset 0, count 4096)".into()
            }));
            f
        }
        "getattr" => {
            let mut f = in_session(name, &res, ok, &[O::OP_PUTFH, O::OP_GETATTR]);
            let a = attrs_of(name, &res);
            f.push(stat(name, a, nfs_ftype4::NF4REG, 0o644, Some(41)));
            assert_eq!(a.numlinks, Some(1), "{name}");
            f
        }
        "setattr" => {
            let mut f = in_session(name, &res, ok, &[O::OP_PUTFH, O::OP_SETATTR]);
            let nfs_resop4::OP_SETATTR(s) = result(name, &res, O::OP_SETATTR) else {
                panic!("{name}")
            };
            assert_eq!(s.attrsset, bitmap4::from_bits(&[FATTR4_MODE]), "{name}");
            f.push("attrsset {mode} (mode set to 0600 with the anonymous stateid)".into());
            f
        }
        "access" => {
            let mut f = in_session(name, &res, ok, &[O::OP_PUTFH, O::OP_ACCESS]);
            let nfs_resop4::OP_ACCESS(Nfs4Res::Ok(a)) = result(name, &res, O::OP_ACCESS) else {
                panic!("{name}")
            };
            let asked = ACCESS4_READ | ACCESS4_MODIFY | ACCESS4_EXTEND;
            assert_eq!((a.supported, a.access), (asked, asked), "{name}");
            f.push("READ | MODIFY | EXTEND asked, supported and granted (0xd)".into());
            f
        }
        "lock" => {
            let mut f = in_session(name, &res, ok, &[O::OP_PUTFH, O::OP_LOCK]);
            let nfs_resop4::OP_LOCK(LOCK4res::Ok(s)) = result(name, &res, O::OP_LOCK) else {
                panic!("{name}")
            };
            assert_eq!(s.seqid, 1, "{name}");
            f.push("WRITE_LT bytes 0..10 granted: a lock stateid with seqid 1".into());
            f
        }
        "lockt_denied" => {
            let mut f = in_session(
                name,
                &res,
                nfsstat4::NFS4ERR_DENIED,
                &[O::OP_PUTFH, O::OP_LOCKT],
            );
            let nfs_resop4::OP_LOCKT(LOCKT4res::Denied(d)) = result(name, &res, O::OP_LOCKT) else {
                panic!("{name}")
            };
            assert_eq!(
                (d.offset, d.length, d.locktype),
                (0, 10, nfs_lock_type4::WRITE_LT),
                "{name}"
            );
            assert_eq!(d.owner.owner.as_bytes(), b"lock-owner-1", "{name}");
            f.push("LOCK4denied: the holder's lock, offset 0 length 10 WRITE_LT, owner \"lock-owner-1\" of our client ID".into());
            f
        }
        "locku" => {
            let mut f = in_session(name, &res, ok, &[O::OP_PUTFH, O::OP_LOCKU]);
            let nfs_resop4::OP_LOCKU(Nfs4Res::Ok(s)) = result(name, &res, O::OP_LOCKU) else {
                panic!("{name}")
            };
            assert_eq!(s.seqid, 2, "{name}");
            f.push("the lock stateid, seqid bumped to 2".into());
            f
        }
        "test_stateid" => {
            let mut f = in_session(name, &res, ok, &[O::OP_TEST_STATEID]);
            let nfs_resop4::OP_TEST_STATEID(Nfs4Res::Ok(t)) =
                result(name, &res, O::OP_TEST_STATEID)
            else {
                panic!("{name}")
            };
            assert_eq!(
                t.tsr_status_codes,
                [
                    nfsstat4::NFS4_OK,
                    nfsstat4::NFS4_OK,
                    nfsstat4::NFS4ERR_STALE_STATEID
                ],
                "{name}"
            );
            f.push("open stateid OK, unlocked lock stateid OK (until FREE_STATEID), a made-up one NFS4ERR_STALE_STATEID (Ganesha checks its epoch in `other`)".into());
            f
        }
        "free_stateid" => in_session(name, &res, ok, &[O::OP_FREE_STATEID]),
        "close" => {
            let mut f = in_session(name, &res, ok, &[O::OP_PUTFH, O::OP_CLOSE]);
            let nfs_resop4::OP_CLOSE(Nfs4Res::Ok(s)) = result(name, &res, O::OP_CLOSE) else {
                panic!("{name}")
            };
            assert_eq!(
                *s,
                stateid4 {
                    seqid: u32::MAX,
                    other: [0; 12]
                },
                "{name}"
            );
            f.push("returns the special invalid stateid (seqid 0xffffffff, other all zero; RFC 8881 §8.2.3), not the closed one".into());
            f
        }
        "open_claim_fh" => {
            let mut f = in_session(name, &res, ok, &[O::OP_PUTFH, O::OP_OPEN]);
            let nfs_resop4::OP_OPEN(Nfs4Res::Ok(o)) = result(name, &res, O::OP_OPEN) else {
                panic!("{name}")
            };
            assert_eq!(o.rflags, OPEN4_RESULT_LOCKTYPE_POSIX, "{name}");
            f.push("CLAIM_FH (open by handle, no name): granted, rflags LOCKTYPE_POSIX".into());
            f
        }
        "open_claim_previous" => {
            let mut f = in_session(
                name,
                &res,
                nfsstat4::NFS4ERR_NO_GRACE,
                &[O::OP_PUTFH, O::OP_OPEN],
            );
            f.push("a reclaim outside any grace period (Graceless server)".into());
            f
        }
        "readdir" => {
            let mut f = in_session(name, &res, ok, &[O::OP_PUTFH, O::OP_READDIR]);
            let nfs_resop4::OP_READDIR(Nfs4Res::Ok(d)) = result(name, &res, O::OP_READDIR) else {
                panic!("{name}")
            };
            assert_eq!(d.cookieverf, verifier4::default(), "{name}");
            assert!(d.reply.eof, "{name}");
            let names: Vec<&[u8]> = d.reply.entries.iter().map(|e| e.name.as_bytes()).collect();
            assert_eq!(names, [b"hello.txt"], "{name}");
            let a = &d.reply.entries[0].attrs;
            assert_eq!(
                (a.type_, a.size, a.mode),
                (Some(nfs_ftype4::NF4REG), Some(41), Some(0o600)),
                "{name}"
            );
            assert!(a.fileid.is_some(), "{name}");
            f.push("one entry, \"hello.txt\" (no \".\" or \"..\"), NF4REG size 41 mode 0600 with its fileid; eof; cookieverf zero".into());
            f
        }
        "link" => in_session(
            name,
            &res,
            ok,
            &[O::OP_PUTFH, O::OP_SAVEFH, O::OP_PUTFH, O::OP_LINK],
        ),
        "rename" => in_session(
            name,
            &res,
            ok,
            &[O::OP_PUTFH, O::OP_SAVEFH, O::OP_PUTFH, O::OP_RENAME],
        ),
        "create_dir" => {
            let mut f = in_session(name, &res, ok, &[O::OP_PUTFH, O::OP_CREATE, O::OP_GETFH]);
            let nfs_resop4::OP_CREATE(Nfs4Res::Ok(c)) = result(name, &res, O::OP_CREATE) else {
                panic!("{name}")
            };
            assert_eq!(c.attrset, bitmap4::from_bits(&[FATTR4_MODE]), "{name}");
            f.push("CREATE NF4DIR \"subdir\": attrset {mode}".into());
            f
        }
        "lookupp" => in_session(name, &res, ok, &[O::OP_PUTFH, O::OP_LOOKUPP, O::OP_GETFH]),
        "remove" | "remove_link" => in_session(name, &res, ok, &[O::OP_PUTFH, O::OP_REMOVE]),
        "remove_link_replay" => {
            let mut f = in_session(name, &res, ok, &[O::OP_PUTFH, O::OP_REMOVE]);
            f.push("the REMOVE of remove_link re-sent on its slot with its sequence id under a new XID: answered from the reply cache, byte for byte the first reply (after the XID), not NFS4ERR_NOENT".into());
            f
        }
        "secinfo_no_name" => {
            let mut f = in_session(name, &res, ok, &[O::OP_PUTFH, O::OP_SECINFO_NO_NAME]);
            let nfs_resop4::OP_SECINFO_NO_NAME(Nfs4Res::Ok(s)) =
                result(name, &res, O::OP_SECINFO_NO_NAME)
            else {
                panic!("{name}")
            };
            assert_eq!(s.0, [secinfo4::Flavor(1)], "{name}");
            f.push("one flavor: AUTH_SYS (1)".into());
            f
        }
        "delegreturn_bad_stateid" => in_session(
            name,
            &res,
            nfsstat4::NFS4ERR_STALE_STATEID,
            &[O::OP_PUTFH, O::OP_DELEGRETURN],
        ),
        "putfh_bad_handle" => in_session(name, &res, nfsstat4::NFS4ERR_BADHANDLE, &[O::OP_PUTFH]),
        "seq_misordered" => {
            let mut f = alone(
                name,
                &res,
                nfsstat4::NFS4ERR_SEQ_MISORDERED,
                &[O::OP_SEQUENCE],
            );
            f.push("SEQUENCE with the slot's sequence id + 11".into());
            f
        }
        "badsession" => {
            let mut f = alone(name, &res, nfsstat4::NFS4ERR_BADSESSION, &[O::OP_SEQUENCE]);
            f.push("SEQUENCE of a session id that does not exist; nothing after it".into());
            f
        }
        "no_sequence" => {
            let mut f = alone(name, &res, nfsstat4::NFS4ERR_OP_NOT_IN_SESSION, &[]);
            f.push(
                "PUTROOTFH, GETFH without SEQUENCE: Ganesha answers with no results at all".into(),
            );
            f
        }
        "bind_conn_to_session" => {
            let mut f = alone(name, &res, ok, &[O::OP_BIND_CONN_TO_SESSION]);
            let nfs_resop4::OP_BIND_CONN_TO_SESSION(Nfs4Res::Ok(b)) = &res.resarray[0] else {
                unreachable!()
            };
            assert_eq!(b.bctsr_dir, channel_dir_from_server4::CDFS4_BOTH, "{name}");
            assert!(!b.bctsr_use_conn_in_rdma_mode, "{name}");
            f.push("a second connection bound with CDFC4_FORE_OR_BOTH: CDFS4_BOTH granted".into());
            f
        }
        "destroy_session" => alone(name, &res, ok, &[O::OP_DESTROY_SESSION]),
        "destroy_clientid" => alone(name, &res, ok, &[O::OP_DESTROY_CLIENTID]),
        other => panic!("no facts for step {other}"),
    };
    f.insert(0, format!("{} bytes, one fragment", ex.reply.len()));
    f
}

/// Decodes a kept call (the hot path's), checks it is a SEQUENCE, PUTFH,
/// op COMPOUND that re-encodes to the same bytes, and lets `more` check
/// the operation.
fn check_call(
    name: &str,
    ex: &Exchange,
    more: impl FnOnce(&COMPOUND4args) -> String,
) -> Vec<String> {
    let msg = &ex.call[4..];
    let mut r = XdrReader::new(msg);
    let h = directnfs_wire::rpc::CallHeader::decode(&mut r).unwrap();
    assert_eq!(
        (h.prog, h.vers, h.proc_),
        (NFS4_PROGRAM, NFS_V4, NFSPROC4_COMPOUND),
        "{name}"
    );
    assert_eq!(h.cred.flavor.0, 1, "{name}: AUTH_SYS");
    let at = r.position();
    let args: COMPOUND4args =
        decode_exact(r.rest(), "call").unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(args.minorversion, 1, "{name}");
    let opnums: Vec<nfs_opnum4> = args.argarray.iter().map(nfs_argop4::opnum).collect();
    assert_eq!(
        opnums[..2],
        [nfs_opnum4::OP_SEQUENCE, nfs_opnum4::OP_PUTFH],
        "{name}"
    );
    let mut again = Vec::new();
    args.encode(&mut again);
    assert_eq!(
        again,
        msg[at..],
        "{name}: the general encoder makes the same bytes"
    );
    vec![
        more(&args),
        "the general COMPOUND4args encoder makes the same bytes as the hot path did".into(),
    ]
}

fn check_write_call(ex: &Exchange) -> Vec<String> {
    check_call("write", ex, |args| {
        let nfs_argop4::OP_WRITE(w) = &args.argarray[2] else {
            panic!("write: {args:?}")
        };
        assert_eq!((w.offset, w.stable), (0, stable_how4::UNSTABLE4));
        assert_eq!(w.data, HELLO);
        assert_eq!(w.stateid.seqid, 1);
        "call: SEQUENCE (sa_cachethis), PUTFH, WRITE(open stateid, offset 0, UNSTABLE4, hello.txt's 41 bytes: header, data and padding sent as three pieces)".into()
    })
}

/// Facts that join steps: the session id of CREATE_SESSION is every
/// SEQUENCE's and BIND_CONN_TO_SESSION's; the client ID of EXCHANGE_ID
/// owns the lock LOCKT reports; COMMIT returns WRITE's verifier; the
/// replayed REMOVE got the first reply byte for byte (after the XID).
/// `step` finds a step's exchange.
pub fn check_across<'a>(step: impl Fn(&str) -> &'a Exchange) -> Vec<String> {
    let res = |name: &str| compound_res(name, &step(name).reply);
    let nfs_resop4::OP_EXCHANGE_ID(Nfs4Res::Ok(eid)) = &res("exchange_id").resarray[0] else {
        panic!("exchange_id")
    };
    let nfs_resop4::OP_CREATE_SESSION(Nfs4Res::Ok(cs)) = &res("create_session").resarray[0] else {
        panic!("create_session")
    };
    for name in STEPS {
        let r = res(name);
        if let Some(nfs_resop4::OP_SEQUENCE(Nfs4Res::Ok(seq))) = r.resarray.first() {
            assert_eq!(seq.sr_sessionid, cs.csr_sessionid, "{name}: session id");
        }
    }
    let nfs_resop4::OP_BIND_CONN_TO_SESSION(Nfs4Res::Ok(b)) =
        &res("bind_conn_to_session").resarray[0]
    else {
        panic!("bind_conn_to_session")
    };
    assert_eq!(b.bctsr_sessid, cs.csr_sessionid);
    let lockt = res("lockt_denied");
    let Some(nfs_resop4::OP_LOCKT(LOCKT4res::Denied(d))) = lockt.resarray.last() else {
        panic!("lockt_denied")
    };
    assert_eq!(d.owner.clientid, eid.eir_clientid);
    let Some(nfs_resop4::OP_WRITE(Nfs4Res::Ok(w))) = res("write").resarray.last().cloned() else {
        panic!("write")
    };
    let Some(nfs_resop4::OP_COMMIT(Nfs4Res::Ok(c))) = res("commit").resarray.last().cloned() else {
        panic!("commit")
    };
    assert_eq!(w.writeverf, c.writeverf, "COMMIT's verifier is WRITE's");
    let first = &step("remove_link").reply;
    let again = &step("remove_link_replay").reply;
    assert_eq!(
        first[8..],
        again[8..],
        "the replay is answered from the reply cache"
    );
    assert_ne!(first[4..8], again[4..8], "under a new XID");
    vec![
        "every SEQUENCE and BIND_CONN_TO_SESSION carries CREATE_SESSION's session id".into(),
        "LOCKT's conflicting owner belongs to EXCHANGE_ID's client ID".into(),
        "COMMIT's verifier equals WRITE's".into(),
        "remove_link_replay equals remove_link after the XID (reply cache)".into(),
    ]
}
