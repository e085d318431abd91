//! Byte-range locks of a [`File`]: `lock`, `try_lock`, `unlock` and
//! `test_lock`, on NFSv4.1 the open file's LOCK, LOCKU and LOCKT
//! (`v4/lock.rs`); on NFSv3, which would need NLM (`crate::nlm`), ENOTSUP.

use super::File;
use crate::error::{Error, Result};
use crate::v4::open_file::OpenFile;
use crate::v4::LockConflict;

impl File {
    /// Locks `len` bytes at `offset` (`len` 0: to the end of the file,
    /// however far it grows), shared or `exclusive`, waiting while another
    /// owner holds a conflicting lock. NFSv4.1 only (ENOTSUP on NFSv3,
    /// which needs NLM for locks).
    pub fn lock(&self, offset: u64, len: u64, exclusive: bool) -> Result<()> {
        self.v41("lock")?.lock_waiting(offset, len, exclusive)
    }

    /// [`lock`](Self::lock) without waiting: a conflicting lock held by
    /// another owner is an error of kind `WouldBlock` (EAGAIN,
    /// NFS4ERR_DENIED).
    pub fn try_lock(&self, offset: u64, len: u64, exclusive: bool) -> Result<()> {
        self.v41("try_lock")?.lock(offset, len, exclusive, false)
    }

    /// Releases this file's locks on `len` bytes at `offset` (0: to the
    /// end). Locks still held are released when the last clone of the
    /// `File` is dropped. If a lock of this file was lost (a server
    /// restart whose reclaim failed, an expired lease), this returns
    /// [`Error::LockLost`] once, after releasing what is still held, and
    /// the file's I/O works again.
    pub fn unlock(&self, offset: u64, len: u64) -> Result<()> {
        self.v41("unlock")?.unlock(offset, len).map(|_| ())
    }

    /// LOCKT: the first lock of another owner that would conflict with a
    /// lock of `len` bytes at `offset` (0: to the end), shared or
    /// `exclusive`, or None if the lock could be granted now. Locks of this
    /// file (its own lock owner) never conflict. NFSv4.1 only.
    pub fn test_lock(
        &self,
        offset: u64,
        len: u64,
        exclusive: bool,
    ) -> Result<Option<LockConflict>> {
        self.v41("test_lock")?.test_lock(offset, len, exclusive)
    }

    fn v41(&self, op: &str) -> Result<&OpenFile> {
        self.shared.v4.as_ref().ok_or_else(|| {
            Error::Unsupported(format!(
                "{op} {}: byte-range locks need NFSv4.1 (vers=4.1); NFSv3 would need NLM",
                self.path()
            ))
        })
    }
}
