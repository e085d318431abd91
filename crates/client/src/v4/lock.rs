//! Byte-range locks on NFSv4.1 (RFC 8881 §9): LOCK, LOCKU, and their
//! release before CLOSE (the `File` methods that use them are
//! `file/lock.rs`'s). Each open `File` is its own lock owner (as Linux
//! OFD locks: two `File`s of one process contend like two processes).
//! A blocking lock polls with back-off (10 ms doubling to 1 s) using the
//! blocking lock types, which ask the server to hold the lock for the
//! poller (RFC 8881 §9.6). The ranges granted are kept (`crate::lock_ranges`) for
//! the reclaim after a server restart (`reclaim.rs`); a lock that could
//! not be reclaimed is reported by the next I/O and by `unlock`
//! ([`Error::LockLost`]).

use std::sync::atomic::Ordering;
use std::time::Duration;

use directnfs_wire::nfs4::{
    exist_lock_owner4, locker4, nfs_argop4, nfs_lock_type4, nfs_resop4, nfsstat4,
    open_to_lock_owner4, owner_id4, state_owner4, stateid4, FREE_STATEID4args, LOCK4args, LOCK4res,
    LOCKT4args, LOCKT4res, LOCKU4args, Nfs4Res, PUTFH4args, NFS4_UINT64_MAX,
};

use super::open_file::{state_lost, OpenFile};
use super::ops::Ops;
use super::sequence::{results, STAT_OTHER};
use super::session::Session;
use crate::error::{Error, Result};
use crate::lock_ranges::Range;

/// Pause after a denied blocking lock: 10 ms doubling to 1 s.
const FIRST_POLL: Duration = Duration::from_millis(10);
const LONGEST_POLL: Duration = Duration::from_secs(1);

impl OpenFile {
    /// LOCK, waiting while another owner holds a conflicting lock: each
    /// NFS4ERR_DENIED is polled again after a pause (10 ms doubling to
    /// 1 s), the blocking lock type asking the server to hold the lock
    /// for the poller.
    pub(crate) fn lock_waiting(&self, offset: u64, len: u64, exclusive: bool) -> Result<()> {
        let mut pause = FIRST_POLL;
        loop {
            match self.lock(offset, len, exclusive, true) {
                Err(Error::Nfs4 {
                    status: nfsstat4::NFS4ERR_DENIED,
                    ..
                }) => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(LONGEST_POLL);
                }
                other => return other,
            }
        }
    }
}

/// A conflicting lock found by [`File::test_lock`](crate::File::test_lock) (as the server
/// describes it; its owner is another client's or another file's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockConflict {
    /// First byte.
    pub offset: u64,
    /// Bytes; 0: to the end of the file.
    pub len: u64,
    /// A write (exclusive) lock, else a read (shared) one.
    pub exclusive: bool,
}

impl OpenFile {
    pub(crate) fn test_lock(
        &self,
        offset: u64,
        len: u64,
        exclusive: bool,
    ) -> Result<Option<LockConflict>> {
        let s = self.session()?;
        let owner = state_owner4 {
            clientid: s.clientid(),
            owner: self.state.locks().owner(|| new_owner_name(s)),
        };
        let mut ops = Ops::default();
        ops.push(nfs_argop4::OP_PUTFH(PUTFH4args { object: self.fh }));
        ops.push(nfs_argop4::OP_LOCKT(LOCKT4args {
            locktype: if exclusive {
                nfs_lock_type4::WRITE_LT
            } else {
                nfs_lock_type4::READ_LT
            },
            offset,
            length: length(len),
            owner,
        }));
        let settled = ops.send(s, self.remote(), "LOCKT", &self.path, STAT_OTHER, false)?;
        if settled.status.is_ok() {
            return Ok(None);
        }
        if settled.status != nfsstat4::NFS4ERR_DENIED {
            return Err(super::sequence::nfs4_error(
                "LOCKT",
                &self.path,
                settled.status,
            ));
        }
        match results(&settled, &ops.nums, "LOCKT")?.last() {
            Some(nfs_resop4::OP_LOCKT(LOCKT4res::Denied(d))) => Ok(Some(LockConflict {
                offset: d.offset,
                len: if d.length == NFS4_UINT64_MAX {
                    0
                } else {
                    d.length
                },
                exclusive: matches!(
                    d.locktype,
                    nfs_lock_type4::WRITE_LT | nfs_lock_type4::WRITEW_LT
                ),
            })),
            _ => Err(super::ops::missing("LOCKT", &self.path)),
        }
    }

    pub(crate) fn lock(
        &self,
        offset: u64,
        len: u64,
        exclusive: bool,
        blocking: bool,
    ) -> Result<()> {
        let s = self.session()?;
        let locktype = match (exclusive, blocking) {
            (true, true) => nfs_lock_type4::WRITEW_LT,
            (true, false) => nfs_lock_type4::WRITE_LT,
            (false, true) => nfs_lock_type4::READW_LT,
            (false, false) => nfs_lock_type4::READ_LT,
        };
        let _one = self.lock_op.lock().unwrap_or_else(|p| p.into_inner());
        // A stateid the server no longer knows (a restart: the reclaim
        // replaced it meanwhile) is taken care of by `with_state`.
        self.with_state("LOCK", |open_stateid| {
            // The lock state of this file: its first LOCK names the lock
            // owner and the open it comes from; later ones its lock
            // stateid.
            let (epoch, lock_stateid, owner) = {
                let mut locks = self.state.locks();
                (
                    locks.epoch,
                    locks.stateid,
                    locks.owner(|| new_owner_name(s)),
                )
            };
            let locker = locker(s, *open_stateid, lock_stateid, owner);
            let mut ops = Ops::default();
            ops.push(nfs_argop4::OP_PUTFH(PUTFH4args { object: self.fh }));
            ops.push(nfs_argop4::OP_LOCK(LOCK4args {
                locktype,
                reclaim: false,
                offset,
                length: length(len),
                locker,
            }));
            let res = ops.run(s, self.remote(), "LOCK", &self.path, STAT_OTHER, true)?;
            if let Some(nfs_resop4::OP_LOCK(LOCK4res::Ok(id))) = res.last() {
                let mut locks = self.state.locks();
                let r = Range::of(offset, len, exclusive);
                if locks.epoch == epoch {
                    locks.stateid = Some(*id);
                    locks.held.add(r);
                } else {
                    // Granted by the server before it restarted, and
                    // missed by the reclaim that followed: not held now.
                    locks.lost = Some(format!(
                        "{}..{}: granted just before a server restart and not reclaimed",
                        r.start, r.end
                    ));
                    return Err(Error::LockLost {
                        op: "LOCK",
                        path: self.path.clone(),
                        detail: locks.lost.clone().unwrap_or_default(),
                    });
                }
            }
            Ok(())
        })
    }

    /// LOCKU of a range; false when this file holds no lock state. A lock
    /// lost since the last call (`Locks::lost`) is reported here, once,
    /// after the LOCKU of what is still held.
    pub(crate) fn unlock(&self, offset: u64, len: u64) -> Result<bool> {
        let s = self.session()?;
        let _one = self.lock_op.lock().unwrap_or_else(|p| p.into_inner());
        let lost = self.state.locks().lost.take();
        let result = self.unlock_held(s, offset, len);
        match lost {
            Some(detail) => Err(Error::LockLost {
                op: "LOCKU",
                path: self.path.clone(),
                detail,
            }),
            None => result,
        }
    }

    fn unlock_held(&self, s: &Session, offset: u64, len: u64) -> Result<bool> {
        let mut tries = 0;
        loop {
            let (epoch, lock_stateid) = {
                let locks = self.state.locks();
                (locks.epoch, locks.stateid)
            };
            let Some(lock_stateid) = lock_stateid else {
                return Ok(false);
            };
            let mut ops = Ops::default();
            ops.push(nfs_argop4::OP_PUTFH(PUTFH4args { object: self.fh }));
            ops.push(nfs_argop4::OP_LOCKU(LOCKU4args {
                locktype: nfs_lock_type4::WRITE_LT,
                seqid: 0,
                lock_stateid,
                offset,
                length: length(len),
            }));
            match ops.run(s, self.remote(), "LOCKU", &self.path, STAT_OTHER, true) {
                // Answered before a server restart whose reclaim took the
                // range again: unlock it on the new state too.
                Ok(_) if tries == 0 && self.state.locks().epoch != epoch => tries += 1,
                Ok(res) => {
                    let mut locks = self.state.locks();
                    if let Some(nfs_resop4::OP_LOCKU(Nfs4Res::Ok(id))) = res.last() {
                        locks.stateid = Some(*id);
                    }
                    let r = Range::of(offset, len, false);
                    locks.held.remove(r.start, r.end);
                    return Ok(true);
                }
                // The stateid was replaced while the LOCKU waited (a
                // reclaim after a server restart): again with the new one.
                Err(Error::Nfs4 { status, .. })
                    if state_lost(status)
                        && tries == 0
                        && self.state.locks().stateid != Some(lock_stateid) =>
                {
                    tries += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Before CLOSE (which a server refuses with NFS4ERR_LOCKS_HELD):
    /// every lock released and the lock stateid freed.
    pub(crate) fn release_locks(&self) -> Result<()> {
        match self.unlock(0, 0) {
            Ok(false) => return Ok(()),
            Ok(true) | Err(Error::LockLost { .. }) => {}
            Err(e) => return Err(e),
        }
        let s = self.session()?;
        let Some(id) = self.state.locks().stateid.take() else {
            return Ok(());
        };
        let mut ops = Ops::default();
        ops.push(nfs_argop4::OP_FREE_STATEID(FREE_STATEID4args {
            fsa_stateid: stateid4 { seqid: 0, ..id },
        }));
        ops.run(
            s,
            self.remote(),
            "FREE_STATEID",
            &self.path,
            STAT_OTHER,
            true,
        )
        .map(|_| ())
    }
}

/// Who a LOCK is for: the file's lock owner by its `lock_stateid`, or,
/// for the file's first LOCK, the lock owner named `owner` and the `open`
/// stateid it comes from.
pub(crate) fn locker(
    s: &Session,
    open: stateid4,
    lock_stateid: Option<stateid4>,
    owner: owner_id4,
) -> locker4 {
    match lock_stateid {
        Some(lock_stateid) => locker4::lock_owner(exist_lock_owner4 {
            lock_stateid,
            lock_seqid: 0,
        }),
        None => locker4::open_owner(open_to_lock_owner4 {
            open_seqid: 0,
            open_stateid: open,
            lock_seqid: 0,
            lock_owner: state_owner4 {
                clientid: s.clientid(),
                owner,
            },
        }),
    }
}

/// A lock owner name of its own for one open file (`lock-N`, N unique
/// within the client).
pub(crate) fn new_owner_name(s: &Session) -> owner_id4 {
    owner_id4::from(format!("lock-{}", s.next_open_owner.fetch_add(1, Ordering::Relaxed)).as_str())
}

/// RFC 8881 §18.10.3: a length of all ones means "to the end of file".
fn length(len: u64) -> u64 {
    if len == 0 {
        NFS4_UINT64_MAX
    } else {
        len
    }
}
