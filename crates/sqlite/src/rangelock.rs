//! The cross-process, cross-host lock on NFSv4.1: a byte-range LOCK on the
//! database file itself (RFC 8881 §9), in the role the lock file
//! ([`crate::dotlock`]) has on NFSv3 — one process at a time, from its
//! first SHARED lock to its last release (or for as long as it has the
//! WAL-index mapped).
//!
//! * The lock is an exclusive (write) lock on SQLite's lock bytes,
//!   [`LOCK_OFFSET`] for [`LOCK_LEN`] bytes (PENDING, RESERVED and the
//!   SHARED range of the unix VFS, on the lock-byte page SQLite never
//!   stores data in). So a process that uses SQLite's own unix VFS through
//!   a kernel NFSv4 mount of the same export, whose `fcntl` locks the
//!   kernel sends as NFSv4 locks on those bytes, is excluded by it and
//!   excludes it. (The mapping is one exclusive lock, not the unix VFS's
//!   finer levels: readers of two directnfs processes take turns, as with
//!   the lock file. The WAL-index lives in a process's memory, so a WAL
//!   database must be used by one process at a time anyway.)
//! * The lock's owner is the open file the process keeps for the database
//!   ([`crate::lock::Inode`]): one owner per process and database.
//! * Waiters ask for a turn with a shared lock on [`WANT_OFFSET`], far
//!   beyond any data, held while they poll; the holder tests for it
//!   (LOCKT) when it releases, as [`crate::dotlock::DotLock::release`]
//!   looks for the waiter file.
//! * The server drops the locks of a process that dies when the next
//!   directnfs client of its user on its host starts (it takes over the
//!   dead client's owner slot, `directnfs` `v4::owner_slot`), else when
//!   its client's lease expires (the server's lease time: 90 s by RFC
//!   8881's example, 60 s in NFS-Ganesha's default): until then other
//!   processes get SQLITE_BUSY. No lock file is left and none needs
//!   breaking, also not for a process of another host; and once the dead
//!   client's state is ended, the server refuses its stateids, so a WRITE
//!   of it still queued cannot land after the next process rolled its
//!   journal back.

use dnfs::File;

/// First lock byte: SQLite's PENDING_BYTE (0x40000000).
pub const LOCK_OFFSET: u64 = 0x4000_0000;
/// PENDING, RESERVED and SHARED_SIZE (510) bytes: the unix VFS's lock
/// bytes.
pub const LOCK_LEN: u64 = 512;
/// The waiters' byte: 2^62, beyond the largest SQLite database (2^32
/// pages of 64 KiB).
pub const WANT_OFFSET: u64 = 1 << 62;

/// The byte-range lock of one database, taken through `file`.
#[derive(Debug)]
pub struct RangeLock {
    file: File,
}

impl RangeLock {
    /// The lock of the database open as `file` (its owner: that open).
    pub fn new(file: File) -> RangeLock {
        RangeLock { file }
    }

    /// Tries once to take the lock: Ok(false) when another owner holds it.
    pub fn try_take(&self) -> dnfs::Result<bool> {
        match self.file.try_lock(LOCK_OFFSET, LOCK_LEN, true) {
            Ok(()) => Ok(true),
            Err(e) if e.errno() == libc::EAGAIN => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Asks the holder for a turn (best effort: a failure only costs
    /// fairness).
    pub fn mark_wanted(&self) {
        let _ = self.file.try_lock(WANT_OFFSET, 1, false);
    }

    /// Withdraws [`mark_wanted`](Self::mark_wanted) (best effort).
    pub fn unmark_wanted(&self) {
        let _ = self.file.unlock(WANT_OFFSET, 1);
    }

    /// Releases the lock. Returns true if another process asked for it
    /// meanwhile: the caller should then not take it again at once.
    /// [`dnfs::Error::LockLost`] if the server had dropped it (an expired
    /// lease, a restart whose reclaim failed): another process may have
    /// used the database meanwhile.
    pub fn release(&self) -> dnfs::Result<bool> {
        let wanted = self.wanted();
        self.file.unlock(LOCK_OFFSET, LOCK_LEN)?;
        Ok(wanted)
    }

    /// Whether another process asked for the lock
    /// ([`mark_wanted`](Self::mark_wanted)): one LOCKT. A test that fails
    /// counts as "not asked" (fairness only).
    pub fn wanted(&self) -> bool {
        matches!(self.file.test_lock(WANT_OFFSET, 1, true), Ok(Some(_)))
    }

    /// True if another owner holds the lock (or a lock on those bytes).
    pub fn held_elsewhere(&self) -> dnfs::Result<bool> {
        Ok(self.file.test_lock(LOCK_OFFSET, LOCK_LEN, true)?.is_some())
    }
}
