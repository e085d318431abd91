//! The NFSv4.1 side of `testing.rs`'s in-process server: a COMPOUND is
//! decoded with the wire crate's codecs and each operation answered in
//! order (SEQUENCE, EXCHANGE_ID, CREATE_SESSION, RECLAIM_COMPLETE,
//! PUTROOTFH/PUTFH, LOOKUP, OPEN, GETFH, GETATTR, WRITE, COMMIT, CLOSE,
//! DESTROY_SESSION, DESTROY_CLIENTID), stopping at the first that fails
//! (RFC 8881 §16.2.3). Enough for a client's session, an open file and
//! the write path; WRITE and COMMIT share the NFSv3 side's [`Store`] and
//! [`Seen`], so one test body runs over either version. The session has
//! at most 64 slots, all of them wanted (`sr_target_highest_slotid` 63)
//! unless [`Behaviour::target_highest_slot`] says fewer.
//!
//! [`Store`]: crate::testing::Store

use std::sync::Mutex;

use directnfs_wire::nfs3::stable_how;
use directnfs_wire::nfs4::{
    self, nfs_argop4, nfs_resop4, nfsstat4, stable_how4, stateid4, COMMIT4resok, COMPOUND4args,
    COMPOUND4res, CREATE_SESSION4resok, EXCHANGE_ID4resok, GETATTR4resok, GETFH4resok, Nfs4Res,
    OPEN4resok, SEQUENCE4resok, WRITE4resok,
};
use directnfs_wire::rpc::CallHeader;
use directnfs_wire::xdr::XdrReader;
use directnfs_wire::{Decode, Encode};

use crate::io::call::Call;
use crate::testing::{success_header, Behaviour, Seen};

/// The handle of the one file the fake serves.
const FILE_FH: &[u8] = b"fake41 file handle";

/// The fore channel slots the fake grants at most (a real server's
/// table: Ganesha's, for one, has 64).
const SLOTS: u32 = 64;

/// Whether `call` is an NFSv4 call (its program version, after CALL, the
/// RPC version and the program, which NFSv3 shares).
pub(crate) fn is_v4(call: &Call) -> bool {
    call.body.get(12..16) == Some(&nfs4::NFS_V4.to_be_bytes()[..])
}

/// The reply record to one COMPOUND; a call it cannot decode gets
/// NFS4ERR_BADXDR.
pub(crate) fn answer(xid: u32, call: &Call, behaviour: &Behaviour, seen: &Mutex<Seen>) -> Vec<u8> {
    let mut whole = xid.to_be_bytes().to_vec();
    whole.extend_from_slice(&call.body);
    if let Some(p) = &call.payload {
        whole.extend_from_slice(p);
        whole.resize(whole.len().next_multiple_of(4), 0);
    }
    let mut rec = success_header(xid);
    let mut r = XdrReader::new(&whole);
    let args = CallHeader::decode(&mut r).and_then(|_| COMPOUND4args::decode(&mut r));
    let res = match args {
        Ok(args) => compound(&args, behaviour, seen),
        Err(_) => COMPOUND4res {
            status: nfsstat4::NFS4ERR_BADXDR,
            ..Default::default()
        },
    };
    res.encode(&mut rec);
    rec
}

fn compound(args: &COMPOUND4args, behaviour: &Behaviour, seen: &Mutex<Seen>) -> COMPOUND4res {
    let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
    let mut out = COMPOUND4res {
        tag: args.tag.clone(),
        ..Default::default()
    };
    for op in &args.argarray {
        let res = one(op, behaviour, &mut seen);
        let status = res.status();
        out.resarray.push(res);
        if !status.is_ok() {
            out.status = status;
            break;
        }
    }
    out
}

fn one(op: &nfs_argop4, behaviour: &Behaviour, seen: &mut Seen) -> nfs_resop4 {
    let ok = nfsstat4::NFS4_OK;
    match op {
        // The slots it keeps, and those it wants used (RFC 8881 §18.46.3:
        // the server's, not an echo of the client's highest slot in use).
        nfs_argop4::OP_SEQUENCE(a) => nfs_resop4::OP_SEQUENCE(Nfs4Res::Ok(SEQUENCE4resok {
            sr_sessionid: a.sa_sessionid,
            sr_sequenceid: a.sa_sequenceid,
            sr_slotid: a.sa_slotid,
            sr_highest_slotid: SLOTS - 1,
            sr_target_highest_slotid: behaviour.target_highest_slot.unwrap_or(SLOTS - 1),
            sr_status_flags: 0,
        })),
        nfs_argop4::OP_EXCHANGE_ID(_) => {
            nfs_resop4::OP_EXCHANGE_ID(Nfs4Res::Ok(EXCHANGE_ID4resok {
                eir_clientid: 41,
                eir_sequenceid: 1,
                eir_flags: nfs4::EXCHGID4_FLAG_USE_NON_PNFS,
                ..Default::default()
            }))
        }
        nfs_argop4::OP_CREATE_SESSION(a) => {
            nfs_resop4::OP_CREATE_SESSION(Nfs4Res::Ok(CREATE_SESSION4resok {
                csr_sessionid: Default::default(),
                csr_sequence: a.csa_sequence,
                csr_flags: 0,
                csr_fore_chan_attrs: nfs4::channel_attrs4 {
                    ca_maxrequests: a.csa_fore_chan_attrs.ca_maxrequests.min(SLOTS),
                    ..a.csa_fore_chan_attrs
                },
                csr_back_chan_attrs: a.csa_back_chan_attrs,
            }))
        }
        nfs_argop4::OP_RECLAIM_COMPLETE(_) => nfs_resop4::OP_RECLAIM_COMPLETE(ok),
        nfs_argop4::OP_DESTROY_SESSION(_) => nfs_resop4::OP_DESTROY_SESSION(ok),
        nfs_argop4::OP_DESTROY_CLIENTID(_) => nfs_resop4::OP_DESTROY_CLIENTID(ok),
        nfs_argop4::OP_PUTROOTFH => nfs_resop4::OP_PUTROOTFH(ok),
        nfs_argop4::OP_PUTFH(_) => nfs_resop4::OP_PUTFH(ok),
        nfs_argop4::OP_LOOKUP(_) => nfs_resop4::OP_LOOKUP(ok),
        nfs_argop4::OP_GETFH => nfs_resop4::OP_GETFH(Nfs4Res::Ok(GETFH4resok {
            object: nfs4::nfs_fh4::new(FILE_FH).unwrap_or_default(),
        })),
        nfs_argop4::OP_GETATTR(_) => nfs_resop4::OP_GETATTR(Nfs4Res::Ok(GETATTR4resok::default())),
        nfs_argop4::OP_OPEN(_) => nfs_resop4::OP_OPEN(Nfs4Res::Ok(OPEN4resok {
            stateid: stateid4 {
                seqid: 1,
                other: *b"fake41 open!",
            },
            ..Default::default()
        })),
        nfs_argop4::OP_CLOSE(a) => nfs_resop4::OP_CLOSE(Nfs4Res::Ok(a.open_stateid)),
        nfs_argop4::OP_WRITE(a) => {
            seen.writes.push((a.offset, a.data.clone()));
            seen.stables.push(stable_how(a.stable.0));
            // NFSv4 numbers the errors a test names (IO, NOSPC, DQUOT,
            // ACCES) as NFSv3 does.
            if let Some(status) = behaviour.write_error {
                return nfs_resop4::OP_WRITE(Nfs4Res::Fail(nfsstat4(status.0)));
            }
            let committed = if behaviour.honest_unstable {
                let unstable = behaviour.downgrade_writes || a.stable == stable_how4::UNSTABLE4;
                if seen.store.write(a.offset, &a.data, unstable) {
                    stable_how4::FILE_SYNC4
                } else {
                    stable_how4::UNSTABLE4
                }
            } else {
                stable_how4::FILE_SYNC4
            };
            nfs_resop4::OP_WRITE(Nfs4Res::Ok(WRITE4resok {
                count: a.data.len() as u32,
                committed,
                writeverf: nfs4::verifier4(seen.store.verf),
            }))
        }
        nfs_argop4::OP_COMMIT(_) if seen.failing_commits > 0 => {
            seen.failing_commits -= 1;
            nfs_resop4::OP_COMMIT(Nfs4Res::Fail(nfsstat4::NFS4ERR_IO))
        }
        nfs_argop4::OP_COMMIT(_) => {
            seen.commits += 1;
            seen.store.commit();
            nfs_resop4::OP_COMMIT(Nfs4Res::Ok(COMMIT4resok {
                writeverf: nfs4::verifier4(seen.store.verf),
            }))
        }
        _ => nfs_resop4::OP_ILLEGAL(nfsstat4::NFS4ERR_NOTSUPP),
    }
}
