//! NFSv3 byte-range locks through the server's lock manager as methods of
//! `Client`: each hands its work to `nlm/`'s `Locks` on the client's
//! server end, so that `nlm/` never names the client. Nothing names this
//! module: it only adds methods.

use crate::client::Client;
use crate::error::Result;
use crate::handle::Handle;
use crate::nlm::{Locks, NlmOwner};
use crate::v4::LockConflict;

impl Client {
    /// NFSv3: locks `len` bytes at `offset` (0: to the end of the file) of
    /// the file `fh` on the server's lock manager for `owner`, shared or
    /// `exclusive`; with `wait`, waits (polling) while another owner holds
    /// a conflicting lock, else fails with [`Error::Nlm`](crate::Error::Nlm)
    /// NLM4_DENIED (EAGAIN). No lock manager on the server:
    /// [`Error::NoLockManager`](crate::Error::NoLockManager) (ENOLCK).
    pub fn nlm_lock(
        &self,
        fh: &Handle,
        owner: &NlmOwner,
        (offset, len): (u64, u64),
        exclusive: bool,
        wait: bool,
    ) -> Result<()> {
        Locks(&self.inner).lock(fh, owner, (offset, len), exclusive, wait)
    }

    /// NFSv3: releases `owner`'s locks on `len` bytes at `offset` (0: to
    /// the end) of `fh` on the server's lock manager. Releasing what is not
    /// held succeeds.
    pub fn nlm_unlock(
        &self,
        fh: &Handle,
        owner: &NlmOwner,
        (offset, len): (u64, u64),
    ) -> Result<()> {
        Locks(&self.inner).unlock(fh, owner, (offset, len))
    }

    /// NFSv3: NLM4_TEST, the lock of another owner that would conflict
    /// with `owner` locking `len` bytes at `offset`, shared or
    /// `exclusive`, or None. The holder's process id (on its host) is in
    /// the conflict's `svid`.
    pub fn nlm_test(
        &self,
        fh: &Handle,
        owner: &NlmOwner,
        (offset, len): (u64, u64),
        exclusive: bool,
    ) -> Result<Option<(LockConflict, i32)>> {
        Locks(&self.inner).test(fh, owner, (offset, len), exclusive)
    }

    /// NFSv3: NLM4_CANCEL of a queued blocking LOCK of `owner`.
    pub fn nlm_cancel(
        &self,
        fh: &Handle,
        owner: &NlmOwner,
        (offset, len): (u64, u64),
        exclusive: bool,
    ) -> Result<()> {
        Locks(&self.inner).cancel(fh, owner, (offset, len), exclusive)
    }
}
