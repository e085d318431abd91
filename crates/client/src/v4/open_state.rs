//! What a server restart needs of an open NFSv4.1 file: its handle,
//! access, open stateid and locks. The session keeps a weak list of these
//! for `reclaim.rs`; `open_file.rs`'s open file holds one. A leaf of
//! `v4/`: it names only `crate::lock_ranges`, so the session can list open
//! files without naming the file module.

use std::sync::Mutex;

use directnfs_wire::nfs4::{nfs_fh4, owner_id4, stateid4};

use crate::lock_ranges::Ranges;

/// The server-side state of one open file, shared with the session's
/// list of open files (for reclaim). Its mutexes are held only for
/// moments, never across a request: a reclaim running in another thread
/// takes them while requests of this file wait for it to end.
#[derive(Debug)]
pub(crate) struct OpenState {
    pub(crate) fh: nfs_fh4,
    /// The share access the file was opened with.
    pub(crate) access: u32,
    pub(crate) path: String,
    /// The open stateid; replaced by a reclaim or a `reopen`.
    stateid: Mutex<stateid4>,
    locks: Mutex<Locks>,
}

/// The byte-range lock state of one open file (its own lock owner).
#[derive(Debug, Default)]
pub(crate) struct Locks {
    /// The lock stateid, once the file locked a range.
    pub(crate) stateid: Option<stateid4>,
    /// What the owner holds (`crate::lock_ranges`): reclaimed after a restart.
    pub(crate) held: Ranges,
    /// Why locks were lost, until `unlock` reports it.
    pub(crate) lost: Option<String>,
    /// Bumped when a reclaim or a loss replaces the lock state: a LOCK or
    /// LOCKU answered on the state before (it ran just before a server
    /// restart, after the reclaim took its snapshot) must not be recorded
    /// as if it were part of the state after.
    pub(crate) epoch: u64,
    /// The lock owner's name (`lock-N`), made at the first LOCK or LOCKT
    /// and kept for the life of the open file: a LOCKT names it so that
    /// the file's own locks are not reported as conflicts.
    pub(crate) owner: Option<owner_id4>,
}

impl Locks {
    /// The file's lock owner name, made by `make` on first use.
    pub(crate) fn owner(&mut self, make: impl FnOnce() -> owner_id4) -> owner_id4 {
        self.owner.get_or_insert_with(make).clone()
    }
}

impl OpenState {
    /// The state of a file the server just opened with `access`.
    pub(crate) fn new(fh: nfs_fh4, access: u32, path: &str, stateid: stateid4) -> Self {
        OpenState {
            fh,
            access,
            path: path.to_string(),
            stateid: Mutex::new(stateid),
            locks: Mutex::new(Locks::default()),
        }
    }

    pub(crate) fn stateid(&self) -> stateid4 {
        *self.stateid.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn set_stateid(&self, id: stateid4) {
        *self.stateid.lock().unwrap_or_else(|p| p.into_inner()) = id;
    }

    pub(crate) fn locks(&self) -> std::sync::MutexGuard<'_, Locks> {
        self.locks.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records that the locks held are gone, for `why` (nothing is lost
    /// when none were held).
    pub(crate) fn lose_locks(&self, why: &str) {
        let mut locks = self.locks();
        locks.stateid = None;
        locks.epoch += 1;
        if !locks.held.is_empty() {
            tracing::warn!("{}: byte-range locks lost: {why}", self.path);
            let ranges: Vec<String> = locks
                .held
                .ranges()
                .iter()
                .map(|r| format!("{}..{}", r.start, r.end))
                .collect();
            locks.held.clear();
            locks.lost = Some(format!("{why} (ranges {})", ranges.join(", ")));
        }
    }
}
