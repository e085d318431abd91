//! The scripted NFSv4.1 session both the live test and the `capture_v41`
//! example run against Ganesha: every operation of the codec once, the hot
//! path's READ/WRITE/COMMIT, a replay answered from the reply cache, and
//! the session errors. Each step is named; its records are what
//! `testdata/ganesha_v41_<name>_reply.bin` (and `_call.bin`) hold, and
//! `facts.rs` states what must be true of each.

// Test and capture harness, not the codec: it talks to a real server
// over a socket and reads the clock, which the crate's clippy.toml keeps
// out of the library itself.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::io;
use std::time::{SystemTime, UNIX_EPOCH};

use directnfs_wire::nfs4::*;
use directnfs_wire::xdr::{pad_len, XdrReader};

use super::client::{compound, decode_compound_reply, Conn, Exchange, Session, Target};

/// The 41 bytes written and read back (the NFSv3 vectors' `hello.txt`).
pub const HELLO: &[u8] = b"directnfs golden vector: hello, ganesha!\n";
/// The file the scenario creates.
pub const FILE: &str = "hello.txt";

/// One named step.
#[derive(Debug, Clone)]
pub struct Step {
    pub name: &'static str,
    pub exchange: Exchange,
    /// The call is worth keeping too (the hot path's encoders made it).
    pub keep_call: bool,
}

/// Everything the scenario captured.
#[derive(Debug, Default)]
pub struct Capture {
    pub steps: Vec<Step>,
}

impl Capture {
    fn add(&mut self, name: &'static str, exchange: Exchange) {
        self.steps.push(Step {
            name,
            exchange,
            keep_call: false,
        });
    }

    fn add_with_call(&mut self, name: &'static str, exchange: Exchange) {
        self.steps.push(Step {
            name,
            exchange,
            keep_call: true,
        });
    }

    /// The step of this name.
    pub fn step(&self, name: &str) -> Option<&Step> {
        self.steps.iter().find(|s| s.name == name)
    }
}

fn fail(what: &str, res: &COMPOUND4res) -> io::Error {
    io::Error::other(format!(
        "{what}: {:?} ({:?})",
        res.status,
        res.failed().map(|r| r.opnum())
    ))
}

fn ok(what: &str, res: COMPOUND4res) -> io::Result<COMPOUND4res> {
    if res.status.is_ok() {
        Ok(res)
    } else {
        Err(fail(what, &res))
    }
}

fn component(s: &str) -> component4 {
    component4::from(s)
}

fn putfh(fh: nfs_fh4) -> nfs_argop4 {
    nfs_argop4::OP_PUTFH(PUTFH4args { object: fh })
}

fn getattr(bits: &[u32]) -> nfs_argop4 {
    nfs_argop4::OP_GETATTR(GETATTR4args {
        attr_request: bitmap4::from_bits(bits),
    })
}

/// The result of operation `op` in `res` (the first of its kind).
pub fn result_of(res: &COMPOUND4res, op: nfs_opnum4) -> Option<&nfs_resop4> {
    res.resarray.iter().find(|r| r.opnum() == op)
}

fn fh_of(res: &COMPOUND4res) -> io::Result<nfs_fh4> {
    match result_of(res, nfs_opnum4::OP_GETFH) {
        Some(nfs_resop4::OP_GETFH(Nfs4Res::Ok(ok))) => Ok(ok.object),
        _ => Err(io::Error::other("no GETFH result")),
    }
}

/// EXCHANGE_ID and CREATE_SESSION on a new connection; the exchanges are
/// returned for capture.
pub fn establish(t: &Target, owner: &str) -> io::Result<(Session, Exchange, Exchange)> {
    let mut conn = Conn::connect(t)?;
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let exchange_id = EXCHANGE_ID4args {
        eia_clientowner: client_owner4 {
            co_verifier: verifier4((nanos as u64).to_be_bytes()),
            co_ownerid: owner_id4::from(owner),
        },
        eia_flags: EXCHGID4_FLAG_USE_NON_PNFS,
        eia_state_protect: state_protect4_a::SP4_NONE,
        eia_client_impl_id: Some(nfs_impl_id4 {
            nii_domain: "directnfs.invalid".into(),
            nii_name: "directnfs-wire test client".into(),
            nii_date: nfstime4::default(),
        }),
    };
    let (eid_ex, res) = conn.compound(&compound(vec![nfs_argop4::OP_EXCHANGE_ID(exchange_id)]))?;
    let res = ok("EXCHANGE_ID", res)?;
    let Some(nfs_resop4::OP_EXCHANGE_ID(Nfs4Res::Ok(eid))) = res.resarray.first() else {
        return Err(io::Error::other("EXCHANGE_ID: no result"));
    };
    let attrs = |maxrequests| channel_attrs4 {
        ca_headerpadsize: 0,
        ca_maxrequestsize: 1 << 20 | 4096,
        ca_maxresponsesize: 1 << 20 | 4096,
        ca_maxresponsesize_cached: 8192,
        ca_maxoperations: 16,
        ca_maxrequests: maxrequests,
        ca_rdma_ird: None,
    };
    let create = CREATE_SESSION4args {
        csa_clientid: eid.eir_clientid,
        csa_sequence: eid.eir_sequenceid,
        csa_flags: CREATE_SESSION4_FLAG_CONN_BACK_CHAN,
        csa_fore_chan_attrs: attrs(64),
        csa_back_chan_attrs: channel_attrs4 {
            ca_maxrequestsize: 4096,
            ca_maxresponsesize: 4096,
            ca_maxresponsesize_cached: 0,
            ..attrs(1)
        },
        csa_cb_program: NFS4_CALLBACK,
        csa_sec_parms: vec![callback_sec_parms4::AUTH_NONE],
    };
    let clientid = eid.eir_clientid;
    let (cs_ex, res) = conn.compound(&compound(vec![nfs_argop4::OP_CREATE_SESSION(create)]))?;
    let res = ok("CREATE_SESSION", res)?;
    let Some(nfs_resop4::OP_CREATE_SESSION(Nfs4Res::Ok(cs))) = res.resarray.first() else {
        return Err(io::Error::other("CREATE_SESSION: no result"));
    };
    let session = Session {
        conn,
        clientid,
        sessionid: cs.csr_sessionid,
        seqid: 0,
    };
    Ok((session, eid_ex, cs_ex))
}

/// A stable open owner or lock owner of `clientid`.
fn owner(clientid: clientid4, name: &str) -> state_owner4 {
    state_owner4 {
        clientid,
        owner: owner_id4::from(name),
    }
}

/// Runs the scenario. `workdir`: a directory to create under the export
/// and work in (the live test, on a shared export), or `None` to work in
/// the export itself (the capture: stable names in the vectors).
pub fn run(t: &Target, workdir: Option<&str>) -> io::Result<Capture> {
    let mut cap = Capture::default();
    let (mut s, eid, cs) = establish(t, &format!("directnfs-v41-test/{}", std::process::id()))?;
    cap.add("exchange_id", eid);
    cap.add("create_session", cs);

    let (ex, res) = s.run(vec![nfs_argop4::OP_RECLAIM_COMPLETE(
        RECLAIM_COMPLETE4args { rca_one_fs: false },
    )])?;
    ok("RECLAIM_COMPLETE", res)?;
    cap.add("reclaim_complete", ex);

    let mut root_attrs = FS_ATTRS.to_vec();
    root_attrs.push(FATTR4_TYPE);
    let (ex, res) = s.run(vec![
        nfs_argop4::OP_PUTROOTFH,
        nfs_argop4::OP_GETFH,
        getattr(&root_attrs),
    ])?;
    ok("PUTROOTFH", res)?;
    cap.add("putrootfh_getattr", ex);

    // The export, by its pseudo-file-system path.
    let mut ops = vec![nfs_argop4::OP_PUTROOTFH];
    ops.extend(t.path.iter().map(|c| {
        nfs_argop4::OP_LOOKUP(LOOKUP4args {
            objname: component(c),
        })
    }));
    // The export's own limits: the pseudo root above it reports others.
    let mut export_attrs = STAT_ATTRS.to_vec();
    export_attrs.extend([
        FATTR4_LEASE_TIME,
        FATTR4_MAXFILESIZE,
        FATTR4_MAXREAD,
        FATTR4_MAXWRITE,
    ]);
    ops.extend([nfs_argop4::OP_GETFH, getattr(&export_attrs)]);
    let (ex, res) = s.run(ops)?;
    let mut dir = fh_of(&ok("LOOKUP of the export", res)?)?;
    cap.add("lookup_export", ex);

    if let Some(name) = workdir {
        let (_, res) = s.run(vec![
            putfh(dir),
            nfs_argop4::OP_CREATE(CREATE4args {
                objtype: createtype4::Other(nfs_ftype4::NF4DIR),
                objname: component(name),
                createattrs: fattr4 {
                    mode: Some(0o777),
                    ..Default::default()
                },
            }),
            nfs_argop4::OP_GETFH,
        ])?;
        dir = fh_of(&ok("CREATE of the work directory", res)?)?;
    }
    // Leftovers of an interrupted run (errors ignored).
    for name in [FILE, "renamed.txt", "hello.link", "subdir"] {
        s.run(vec![
            putfh(dir),
            nfs_argop4::OP_REMOVE(REMOVE4args {
                target: component(name),
            }),
        ])?;
    }

    let (ex, res) = s.run(vec![
        putfh(dir),
        nfs_argop4::OP_LOOKUP(LOOKUP4args {
            objname: component("missing.txt"),
        }),
    ])?;
    if res.status != nfsstat4::NFS4ERR_NOENT {
        return Err(fail("LOOKUP of a missing name", &res));
    }
    cap.add("lookup_noent", ex);

    // OPEN with create; the open owner is ours for the whole run.
    let open_owner = owner(s.clientid, "open-owner-1");
    let open = OPEN4args {
        seqid: 0,
        share_access: OPEN4_SHARE_ACCESS_BOTH | OPEN4_SHARE_ACCESS_WANT_NO_DELEG,
        share_deny: OPEN4_SHARE_DENY_NONE,
        owner: open_owner.clone(),
        openhow: openflag4::OPEN4_CREATE(createhow4::GUARDED4(fattr4 {
            mode: Some(0o644),
            ..Default::default()
        })),
        claim: open_claim4::CLAIM_NULL(component(FILE)),
    };
    let (ex, res) = s.run(vec![
        putfh(dir),
        nfs_argop4::OP_OPEN(open),
        nfs_argop4::OP_GETFH,
        getattr(STAT_ATTRS),
    ])?;
    let res = ok("OPEN (create)", res)?;
    let file = fh_of(&res)?;
    let Some(nfs_resop4::OP_OPEN(Nfs4Res::Ok(opened))) = result_of(&res, nfs_opnum4::OP_OPEN)
    else {
        return Err(io::Error::other("OPEN: no result"));
    };
    let open_stateid = opened.stateid;
    cap.add("open_create", ex);

    // The hot path: WRITE (header + data + pad), COMMIT, READ.
    let mut body = Vec::new();
    let seq = s.next_seq(true);
    encode_write_compound_header(
        &mut body,
        &seq,
        file.as_bytes(),
        &open_stateid,
        0,
        stable_how4::UNSTABLE4,
        HELLO.len() as u32,
    );
    body.extend_from_slice(HELLO);
    body.resize(body.len() + pad_len(HELLO.len()), 0);
    let ex = s.conn.call_raw(&body)?;
    let write = decode_write_reply(&mut reply_body(&ex)?).map_err(io::Error::other)?;
    let written = write
        .ok
        .ok_or_else(|| io::Error::other(format!("WRITE: {write:?}")))?;
    cap.add_with_call("write", ex);

    let mut body = Vec::new();
    let seq = s.next_seq(true);
    encode_commit_compound(&mut body, &seq, file.as_bytes(), 0, 0);
    let ex = s.conn.call_raw(&body)?;
    let commit = decode_commit_reply(&mut reply_body(&ex)?).map_err(io::Error::other)?;
    if commit.ok != Some(written.writeverf) {
        return Err(io::Error::other(format!(
            "COMMIT verifier {commit:?}, WRITE's {written:?}"
        )));
    }
    cap.add_with_call("commit", ex);

    let mut body = Vec::new();
    let seq = s.next_seq(false);
    encode_read_compound(&mut body, &seq, file.as_bytes(), &open_stateid, 0, 4096);
    let ex = s.conn.call_raw(&body)?;
    let read = decode_read_reply(&mut reply_body(&ex)?, 4096).map_err(io::Error::other)?;
    if read.ok.map(|r| r.data) != Some(HELLO) {
        return Err(io::Error::other(format!("READ returned {read:?}")));
    }
    cap.add_with_call("read", ex);

    let mut body = Vec::new();
    let seq = s.next_seq(false);
    encode_getattr_compound(
        &mut body,
        &seq,
        file.as_bytes(),
        &bitmap4::from_bits(STAT_ATTRS),
    );
    let ex = s.conn.call_raw(&body)?;
    ok(
        "GETATTR",
        decode_compound_reply(
            &ex,
            &[
                nfs_opnum4::OP_SEQUENCE,
                nfs_opnum4::OP_PUTFH,
                nfs_opnum4::OP_GETATTR,
            ],
        )?,
    )?;
    cap.add("getattr", ex);

    let (ex, res) = s.run(vec![
        putfh(file),
        nfs_argop4::OP_SETATTR(SETATTR4args {
            stateid: stateid4::ANONYMOUS,
            obj_attributes: fattr4 {
                mode: Some(0o600),
                ..Default::default()
            },
        }),
    ])?;
    ok("SETATTR", res)?;
    cap.add("setattr", ex);

    let (ex, res) = s.run(vec![
        putfh(file),
        nfs_argop4::OP_ACCESS(ACCESS4args {
            access: ACCESS4_READ | ACCESS4_MODIFY | ACCESS4_EXTEND,
        }),
    ])?;
    ok("ACCESS", res)?;
    cap.add("access", ex);

    // Locks: take one, see another owner denied, release, free.
    let (ex, res) = s.run(vec![
        putfh(file),
        nfs_argop4::OP_LOCK(LOCK4args {
            locktype: nfs_lock_type4::WRITE_LT,
            reclaim: false,
            offset: 0,
            length: 10,
            locker: locker4::open_owner(open_to_lock_owner4 {
                open_seqid: 0,
                open_stateid,
                lock_seqid: 0,
                lock_owner: owner(s.clientid, "lock-owner-1"),
            }),
        }),
    ])?;
    let res = ok("LOCK", res)?;
    let Some(nfs_resop4::OP_LOCK(LOCK4res::Ok(lock_stateid))) =
        result_of(&res, nfs_opnum4::OP_LOCK)
    else {
        return Err(io::Error::other("LOCK: no stateid"));
    };
    let lock_stateid = *lock_stateid;
    cap.add("lock", ex);

    let (ex, res) = s.run(vec![
        putfh(file),
        nfs_argop4::OP_LOCKT(LOCKT4args {
            locktype: nfs_lock_type4::READ_LT,
            offset: 5,
            length: NFS4_UINT64_MAX,
            owner: owner(s.clientid, "lock-owner-2"),
        }),
    ])?;
    if res.status != nfsstat4::NFS4ERR_DENIED {
        return Err(fail("LOCKT against a held lock", &res));
    }
    cap.add("lockt_denied", ex);

    let (ex, res) = s.run(vec![
        putfh(file),
        nfs_argop4::OP_LOCKU(LOCKU4args {
            locktype: nfs_lock_type4::WRITE_LT,
            seqid: 0,
            lock_stateid,
            offset: 0,
            length: 10,
        }),
    ])?;
    let res = ok("LOCKU", res)?;
    let Some(nfs_resop4::OP_LOCKU(Nfs4Res::Ok(unlocked))) = result_of(&res, nfs_opnum4::OP_LOCKU)
    else {
        return Err(io::Error::other("LOCKU: no stateid"));
    };
    let unlocked = *unlocked;
    cap.add("locku", ex);

    let (ex, res) = s.run(vec![nfs_argop4::OP_TEST_STATEID(TEST_STATEID4args {
        ts_stateids: vec![
            open_stateid,
            unlocked,
            stateid4 {
                seqid: 1,
                other: [0xee; 12],
            },
        ],
    })])?;
    ok("TEST_STATEID", res)?;
    cap.add("test_stateid", ex);

    let (ex, res) = s.run(vec![nfs_argop4::OP_FREE_STATEID(FREE_STATEID4args {
        fsa_stateid: unlocked,
    })])?;
    ok("FREE_STATEID", res)?;
    cap.add("free_stateid", ex);

    let (ex, res) = s.run(vec![
        putfh(file),
        nfs_argop4::OP_CLOSE(CLOSE4args {
            seqid: 0,
            open_stateid,
        }),
    ])?;
    ok("CLOSE", res)?;
    cap.add("close", ex);

    // OPEN by handle (no name), then close it again.
    let (ex, res) = s.run(vec![
        putfh(file),
        nfs_argop4::OP_OPEN(OPEN4args {
            seqid: 0,
            share_access: OPEN4_SHARE_ACCESS_READ | OPEN4_SHARE_ACCESS_WANT_NO_DELEG,
            share_deny: OPEN4_SHARE_DENY_NONE,
            owner: open_owner.clone(),
            openhow: openflag4::OPEN4_NOCREATE,
            claim: open_claim4::CLAIM_FH,
        }),
    ])?;
    let res = ok("OPEN (CLAIM_FH)", res)?;
    let Some(nfs_resop4::OP_OPEN(Nfs4Res::Ok(opened))) = result_of(&res, nfs_opnum4::OP_OPEN)
    else {
        return Err(io::Error::other("OPEN: no result"));
    };
    let fh_stateid = opened.stateid;
    cap.add("open_claim_fh", ex);
    let (_, res) = s.run(vec![
        putfh(file),
        nfs_argop4::OP_CLOSE(CLOSE4args {
            seqid: 0,
            open_stateid: fh_stateid,
        }),
    ])?;
    ok("CLOSE", res)?;

    // A reclaim outside any grace period.
    let (ex, res) = s.run(vec![
        putfh(file),
        nfs_argop4::OP_OPEN(OPEN4args {
            seqid: 0,
            share_access: OPEN4_SHARE_ACCESS_READ,
            share_deny: OPEN4_SHARE_DENY_NONE,
            owner: open_owner.clone(),
            openhow: openflag4::OPEN4_NOCREATE,
            claim: open_claim4::CLAIM_PREVIOUS(open_delegation_type4::OPEN_DELEGATE_NONE),
        }),
    ])?;
    if res.status.is_ok() {
        return Err(fail("OPEN CLAIM_PREVIOUS outside the grace period", &res));
    }
    cap.add("open_claim_previous", ex);

    let (ex, res) = s.run(vec![
        putfh(dir),
        nfs_argop4::OP_READDIR(READDIR4args {
            cookie: 0,
            cookieverf: verifier4::default(),
            dircount: 8192,
            maxcount: 32768,
            attr_request: bitmap4::from_bits(&[
                FATTR4_TYPE,
                FATTR4_SIZE,
                FATTR4_FILEID,
                FATTR4_MODE,
            ]),
        }),
    ])?;
    ok("READDIR", res)?;
    cap.add("readdir", ex);

    let (ex, res) = s.run(vec![
        putfh(file),
        nfs_argop4::OP_SAVEFH,
        putfh(dir),
        nfs_argop4::OP_LINK(LINK4args {
            newname: component("hello.link"),
        }),
    ])?;
    ok("LINK", res)?;
    cap.add("link", ex);

    let (ex, res) = s.run(vec![
        putfh(dir),
        nfs_argop4::OP_SAVEFH,
        putfh(dir),
        nfs_argop4::OP_RENAME(RENAME4args {
            oldname: component(FILE),
            newname: component("renamed.txt"),
        }),
    ])?;
    ok("RENAME", res)?;
    cap.add("rename", ex);

    let (ex, res) = s.run(vec![
        putfh(dir),
        nfs_argop4::OP_CREATE(CREATE4args {
            objtype: createtype4::Other(nfs_ftype4::NF4DIR),
            objname: component("subdir"),
            createattrs: fattr4 {
                mode: Some(0o755),
                ..Default::default()
            },
        }),
        nfs_argop4::OP_GETFH,
    ])?;
    let subdir = fh_of(&ok("CREATE (directory)", res)?)?;
    cap.add("create_dir", ex);

    let (ex, res) = s.run(vec![
        putfh(subdir),
        nfs_argop4::OP_LOOKUPP,
        nfs_argop4::OP_GETFH,
    ])?;
    let res = ok("LOOKUPP", res)?;
    if fh_of(&res)? != dir {
        return Err(io::Error::other("LOOKUPP of subdir is not the directory"));
    }
    cap.add("lookupp", ex);

    let (ex, res) = s.run(vec![
        putfh(dir),
        nfs_argop4::OP_REMOVE(REMOVE4args {
            target: component("subdir"),
        }),
    ])?;
    ok("REMOVE (directory)", res)?;
    cap.add("remove", ex);

    // Exactly once: a REMOVE sent again on its slot with its sequence id
    // (as after a lost reply, under a new XID) is answered from the reply
    // cache: the same success, not NFS4ERR_NOENT.
    let (ex, res) = s.run(vec![
        putfh(dir),
        nfs_argop4::OP_REMOVE(REMOVE4args {
            target: component("hello.link"),
        }),
    ])?;
    ok("REMOVE (link)", res)?;
    let replay = s.conn.resend_with_new_xid(&ex.call)?;
    cap.add("remove_link", ex);
    cap.add("remove_link_replay", replay);

    let (ex, res) = s.run(vec![
        putfh(dir),
        nfs_argop4::OP_SECINFO_NO_NAME(secinfo_style4::SECINFO_STYLE4_CURRENT_FH),
    ])?;
    ok("SECINFO_NO_NAME", res)?;
    cap.add("secinfo_no_name", ex);

    let (ex, res) = s.run(vec![
        putfh(file),
        nfs_argop4::OP_DELEGRETURN(DELEGRETURN4args {
            deleg_stateid: stateid4 {
                seqid: 1,
                other: [0xee; 12],
            },
        }),
    ])?;
    if res.status.is_ok() {
        return Err(fail("DELEGRETURN of a stateid never granted", &res));
    }
    cap.add("delegreturn_bad_stateid", ex);

    let (ex, res) = s.run(vec![putfh(
        nfs_fh4::new(&[0xde, 0xad, 0xbe, 0xef]).map_err(io::Error::other)?,
    )])?;
    if res.status.is_ok() {
        return Err(fail("PUTFH of a made-up handle", &res));
    }
    cap.add("putfh_bad_handle", ex);

    // Session errors: a sequence id ahead of the slot's, a session that
    // does not exist, an operation outside any session.
    let mut bad = s.next_seq(false);
    s.seqid -= 1;
    bad.sa_sequenceid += 10;
    let (ex, res) = s
        .conn
        .compound(&compound(vec![nfs_argop4::OP_SEQUENCE(bad)]))?;
    if res.status != nfsstat4::NFS4ERR_SEQ_MISORDERED {
        return Err(fail("SEQUENCE with a sequence id ahead", &res));
    }
    cap.add("seq_misordered", ex);

    let mut bad = s.next_seq(false);
    s.seqid -= 1;
    bad.sa_sessionid = sessionid4([0x42; 16]);
    let (ex, res) = s.conn.compound(&compound(vec![
        nfs_argop4::OP_SEQUENCE(bad),
        nfs_argop4::OP_PUTROOTFH,
    ]))?;
    if res.status != nfsstat4::NFS4ERR_BADSESSION {
        return Err(fail("SEQUENCE of an unknown session", &res));
    }
    cap.add("badsession", ex);

    let (ex, res) = s.conn.compound(&compound(vec![
        nfs_argop4::OP_PUTROOTFH,
        nfs_argop4::OP_GETFH,
    ]))?;
    if res.status.is_ok() {
        return Err(fail("PUTROOTFH without SEQUENCE", &res));
    }
    cap.add("no_sequence", ex);

    // Session trunking's building block: a second connection joins.
    let mut conn2 = Conn::connect(t)?;
    let (ex, res) = conn2.compound(&compound(vec![nfs_argop4::OP_BIND_CONN_TO_SESSION(
        BIND_CONN_TO_SESSION4args {
            bctsa_sessid: s.sessionid,
            bctsa_dir: channel_dir_from_client4::CDFC4_FORE_OR_BOTH,
            bctsa_use_conn_in_rdma_mode: false,
        },
    )]))?;
    ok("BIND_CONN_TO_SESSION", res)?;
    cap.add("bind_conn_to_session", ex);
    // The session's slot answers on the new connection too.
    let seq = s.next_seq(false);
    let (_, res) = conn2.compound(&compound(vec![
        nfs_argop4::OP_SEQUENCE(seq),
        nfs_argop4::OP_PUTROOTFH,
    ]))?;
    ok("SEQUENCE on the bound connection", res)?;

    // Clean up, then end the session and the client ID.
    let mut ops = vec![
        putfh(dir),
        nfs_argop4::OP_REMOVE(REMOVE4args {
            target: component("renamed.txt"),
        }),
    ];
    if let Some(name) = workdir {
        ops.extend([
            nfs_argop4::OP_LOOKUPP,
            nfs_argop4::OP_REMOVE(REMOVE4args {
                target: component(name),
            }),
        ]);
    }
    ok("cleanup", s.run(ops)?.1)?;

    let sessionid = s.sessionid;
    let (ex, res) = s
        .conn
        .compound(&compound(vec![nfs_argop4::OP_DESTROY_SESSION(
            DESTROY_SESSION4args {
                dsa_sessionid: sessionid,
            },
        )]))?;
    ok("DESTROY_SESSION", res)?;
    cap.add("destroy_session", ex);
    let (ex, res) = s
        .conn
        .compound(&compound(vec![nfs_argop4::OP_DESTROY_CLIENTID(
            DESTROY_CLIENTID4args {
                dca_clientid: s.clientid,
            },
        )]))?;
    ok("DESTROY_CLIENTID", res)?;
    cap.add("destroy_clientid", ex);
    Ok(cap)
}

/// The reader positioned after the RPC reply header of `ex`.
fn reply_body(ex: &Exchange) -> io::Result<XdrReader<'_>> {
    use directnfs_wire::xdr::Decode;
    let mut r = XdrReader::new(ex.reply_msg());
    let h = directnfs_wire::rpc::ReplyHeader::decode(&mut r).map_err(io::Error::other)?;
    if !h.is_success() {
        return Err(io::Error::other(format!("RPC error {h:?}")));
    }
    Ok(r)
}
