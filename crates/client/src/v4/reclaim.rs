//! Reclaim after the server lost this client's state (RFC 8881 §8.4.2.1
//! and §8.4.3): the session code calls [`reclaim`] when recovery gave a
//! new client ID, before any other request may use the new session. For
//! each open file: OPEN with CLAIM_PREVIOUS (delegation type none) on its
//! handle, then a LOCK with `reclaim = true` for each range it held (its
//! new lock owner opened from the reclaimed open stateid); then
//! RECLAIM_COMPLETE, after which the server lets other clients' new locks
//! through once its grace period ends.
//!
//! A reclaim cut short by another loss of the session (the server
//! restarted again while we reclaimed) stops where it is: the request
//! that met the loss recovered the session and reclaimed everything
//! again, from the start, on the newer client ID; what this older reclaim
//! was still to do (or re-sent after that recovery) must not count as
//! refused.
//!
//! A reclaim the server refuses — NFS4ERR_NO_GRACE (it did not restart:
//! the lease expired; or the grace period is over), NFS4ERR_RECLAIM_BAD,
//! NFS4ERR_RECLAIM_CONFLICT, or any other error — loses what it was for:
//! a lost open is opened again by its handle at its next use
//! (`file.rs`, `with_state`); a lost lock is recorded in the file's
//! `Locks::lost` and reported to the holder (`Error::LockLost`), never
//! dropped silently.

use directnfs_wire::nfs4::{
    nfs_argop4, nfs_lock_type4, nfs_resop4, nfsstat4, open_claim4, open_delegation_type4,
    openflag4, stateid4, LOCK4args, LOCK4res, Nfs4Res, PUTFH4args, RECLAIM_COMPLETE4args,
};
use directnfs_wire::Encode;

use super::lock::{locker, new_owner_name};
use super::open_file::open_op;
use super::open_state::OpenState;
use super::ops::{self, Ops};
use super::sequence::{nfs4_error, results, Request};
use super::session::Session;
use crate::error::{Error, Result};
use crate::lock_ranges::Range;
use crate::remote::Remote;

/// Reclaims every open file of `s` and its locks, then RECLAIM_COMPLETE.
/// Only RECLAIM_COMPLETE's failure is an error: the other failures are
/// recorded on their files.
pub(crate) fn reclaim(s: &Session, remote: &Remote) -> Result<()> {
    let files = s.open_files();
    if !files.is_empty() {
        tracing::info!(
            "NFSv4.1: new client ID: reclaiming {} open file(s)",
            files.len()
        );
    }
    let generation = s.generation();
    for (i, f) in files.iter().enumerate() {
        if i == 1 {
            s.reclaim_hold.wait();
        }
        if s.generation() != generation {
            return Ok(()); // a newer recovery reclaimed everything
        }
        reclaim_file(s, remote, f, generation);
    }
    if s.generation() != generation {
        return Ok(());
    }
    let mut ops = Ops::default();
    ops.push(nfs_argop4::OP_RECLAIM_COMPLETE(RECLAIM_COMPLETE4args {
        rca_one_fs: false,
    }));
    match send(s, remote, &ops, "RECLAIM_COMPLETE", "/") {
        Err(Error::Nfs4 {
            status: nfsstat4::NFS4ERR_COMPLETE_ALREADY,
            ..
        }) => Ok(()),
        other => other.map(|_| ()),
    }
}

fn reclaim_file(s: &Session, remote: &Remote, f: &OpenState, generation: u64) {
    let open = match reclaim_open(s, remote, f) {
        Ok(id) => id,
        // Superseded by a newer recovery, which reclaimed this file.
        Err(_) if s.generation() != generation => return,
        Err(e) => {
            tracing::warn!("{}: open not reclaimed: {e}", f.path);
            f.lose_locks(&format!(
                "the open was not reclaimed after a server restart: {e}"
            ));
            return;
        }
    };
    f.set_stateid(open);
    let held: Vec<Range> = {
        let mut locks = f.locks();
        locks.stateid = None;
        locks.epoch += 1;
        locks.held.ranges().to_vec()
    };
    let mut lock_stateid = None;
    let mut lost: Vec<(Range, Error)> = Vec::new();
    for r in held {
        match reclaim_lock(s, remote, f, open, lock_stateid, r) {
            Ok(id) => lock_stateid = Some(id),
            Err(e) => lost.push((r, e)),
        }
    }
    if s.generation() != generation {
        return; // superseded: the newer reclaim set the file's state
    }
    let mut locks = f.locks();
    locks.stateid = lock_stateid;
    if lost.is_empty() {
        return;
    }
    // What was not reclaimed is not held: `held` keeps the rest.
    for (r, _) in &lost {
        locks.held.remove(r.start, r.end);
    }
    let why: Vec<String> = lost
        .iter()
        .map(|(r, e)| format!("{}..{}: {e}", r.start, r.end))
        .collect();
    tracing::warn!("{}: locks not reclaimed: {}", f.path, why.join("; "));
    locks.lost = Some(format!(
        "not reclaimed after a server restart: {}",
        why.join("; ")
    ));
}

/// OPEN CLAIM_PREVIOUS of `f`'s handle with its access: the new open
/// stateid.
fn reclaim_open(s: &Session, remote: &Remote, f: &OpenState) -> Result<stateid4> {
    let mut ops = Ops::default();
    ops.push(nfs_argop4::OP_PUTFH(PUTFH4args { object: f.fh }));
    ops.push(open_op(
        s,
        f.access,
        openflag4::OPEN4_NOCREATE,
        open_claim4::CLAIM_PREVIOUS(open_delegation_type4::OPEN_DELEGATE_NONE),
    ));
    match send(s, remote, &ops, "OPEN", &f.path)?.last() {
        Some(nfs_resop4::OP_OPEN(Nfs4Res::Ok(ok))) => Ok(ok.stateid),
        _ => Err(ops::missing("OPEN", &f.path)),
    }
}

/// LOCK `reclaim = true` of one held range: the lock stateid.
fn reclaim_lock(
    s: &Session,
    remote: &Remote,
    f: &OpenState,
    open: stateid4,
    lock_stateid: Option<stateid4>,
    r: Range,
) -> Result<stateid4> {
    let owner = f.locks().owner(|| new_owner_name(s));
    let locker = locker(s, open, lock_stateid, owner);
    let mut ops = Ops::default();
    ops.push(nfs_argop4::OP_PUTFH(PUTFH4args { object: f.fh }));
    ops.push(nfs_argop4::OP_LOCK(LOCK4args {
        locktype: if r.exclusive {
            nfs_lock_type4::WRITE_LT
        } else {
            nfs_lock_type4::READ_LT
        },
        reclaim: true,
        offset: r.start,
        length: r.nfs4_length(),
        locker,
    }));
    match send(s, remote, &ops, "LOCK", &f.path)?.last() {
        Some(nfs_resop4::OP_LOCK(LOCK4res::Ok(id))) => Ok(*id),
        _ => Err(ops::missing("LOCK", &f.path)),
    }
}

/// Sends `ops` as part of the reclaim (through the gate other requests
/// wait at), reply cached: the results after SEQUENCE.
fn send(
    s: &Session,
    remote: &Remote,
    ops: &Ops,
    op: &'static str,
    path: &str,
) -> Result<Vec<nfs_resop4>> {
    let encode = |out: &mut Vec<u8>| {
        for a in &ops.args {
            a.encode(out);
        }
    };
    let mut req = Request::ops(&ops.args, &ops.nums, &encode, op, path);
    req.cache = true;
    req.reclaim = true;
    let settled = s.compound(remote, &req)?;
    if !settled.status.is_ok() {
        return Err(nfs4_error(op, path, settled.status));
    }
    results(&settled, &ops.nums, op)
}
