//! Locks of one database file in this process: the five SQLite lock levels
//! shared by every connection (a port of the unix VFS's `unixInodeInfo`
//! logic), the process-wide lock that excludes other processes (the
//! dot-file lock of [`crate::dotlock`] on NFSv3, a byte-range LOCK of
//! [`crate::rangelock`] on NFSv4.1), and the WAL-index shared memory.
//!
//! One [`Inode`] exists per database file (server + export + file id) while
//! any connection has it open, found through [`inode_for`].
//!
//! The process holds the process-wide lock while some connection holds
//! SHARED or more, or while any connection has the WAL-index mapped: the
//! first SHARED takes it. So another process can never see the database
//! between a writer's steps, and a WAL database is used by one process at
//! a time. Once unused, the lock is kept for a moment
//! ([`crate::linger`]: 5 ms by default) unless another process asks for
//! it, so back-to-back transactions neither take it again nor lose the
//! mirror.

use std::collections::HashMap;
use std::ffi::c_int;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::time::{Duration, Instant};

use dnfs::config::NfsVersion;
use dnfs::{Client, File};

use crate::dotlock::{self, Acquire, DotLock, Holder, Names, Owner};
use crate::mirror::{self, Mirror};
use crate::rangelock::RangeLock;
use crate::sys::*;

/// How long one xLock keeps retrying a lock held by another process
/// (every [`POLL_EVERY`]) before answering SQLITE_BUSY, whose busy handler
/// then sleeps 1..100 ms and calls again. Polling finely for a while is
/// what lets a waiter catch the lock between another process's
/// transactions; without a busy handler this is the only wait.
const POLL_FOR: Duration = Duration::from_millis(50);
const POLL_EVERY: Duration = Duration::from_millis(2);
/// How long a process that released a lock another process asked for
/// waits before taking it again (longer than the waiter's poll interval).
const STEP_ASIDE: Duration = Duration::from_millis(20);

/// Identifies a database file within the process.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct InodeKey {
    /// The mount (server, export, options) it was reached through.
    pub mount: String,
    /// NFS file id (inode number).
    pub fileid: u64,
}

/// A lock request that could not be granted.
#[derive(Debug)]
pub enum LockError {
    /// Held by another connection or process: SQLITE_BUSY (the busy
    /// handler retries).
    Busy(String),
    /// The server failed: an SQLITE_IOERR_* code and message.
    Io(c_int, String),
}

/// Shared state of one database file.
#[derive(Debug)]
pub struct Inode {
    client: Client,
    names: Names,
    /// This process, as named in the lock files it takes for this file.
    me: Owner,
    /// NFSv4.1: the byte-range lock that replaces the lock file.
    range: Option<RangeLock>,
    display: String,
    /// Where the database is (for [`wal_mirror_of`]).
    mount: String,
    db_path: String,
    /// The database's and the WAL's bytes known while this process holds
    /// the database ([`crate::mirror`]).
    pub db: Arc<Mirror>,
    wal: Arc<Mirror>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Strongest lock held by any connection of this process.
    level: c_int,
    /// Connections holding SHARED or more.
    n_shared: u32,
    /// The process-wide lock, when held.
    held: Option<Held>,
    /// WAL-index memory, while any connection has it mapped.
    shm: Option<Shm>,
    /// Another process asked for the lock at our last release: do not take
    /// it again before this instant.
    step_aside_until: Option<Instant>,
    /// The process-wide lock is held but unused since this instant
    /// ([`crate::linger`]).
    lingering: Option<Instant>,
}

/// The process-wide lock, held.
#[derive(Debug)]
enum Held {
    /// NFSv3: the lock file.
    Dot(DotLock),
    /// NFSv4.1: the byte-range lock of [`Inode::range`].
    Range,
}

/// WAL-index ("-shm") memory, in this process only.
#[derive(Debug)]
struct Shm {
    /// Regions never move once allocated: SQLite keeps pointers to them.
    regions: Vec<Box<[u8]>>,
    region_size: usize,
    /// Per lock slot: 0 free, n > 0 shared holders, -1 exclusive.
    slots: [i32; SQLITE_SHM_NLOCK],
    /// Connections that have it mapped.
    refs: u32,
}

/// One connection's view of the WAL-index.
#[derive(Debug, Default)]
pub struct ShmConn {
    pub mapped: bool,
    shared: u8,
    excl: u8,
}

impl ShmConn {
    /// Whether this connection holds any WAL-index lock exclusively (the
    /// writer's, a checkpointer's, a recovery's): only such a connection
    /// publishes what others read.
    pub fn holds_exclusive(&self) -> bool {
        self.excl != 0
    }
}

/// The inodes of this process, and the process they belong to: a forked
/// child inherits the table with the parent's memory, and must not find
/// the parent's inodes there (they name the parent as lock owner, so the
/// child would take the parent's lock file for its own).
static INODES: OnceLock<Mutex<Inodes>> = OnceLock::new();

/// The table's lock, held across a `fork` ([`crate::forked`]) so that the
/// child never inherits it locked by another thread (the linger thread
/// sweeps it every few milliseconds).
pub(crate) fn hold_table_for_fork() -> MutexGuard<'static, Inodes> {
    let table = INODES.get_or_init(|| Mutex::new((std::process::id(), HashMap::new())));
    table.lock().unwrap_or_else(|p| p.into_inner())
}

/// The pid the table belongs to, and its inodes.
type Inodes = (u32, HashMap<InodeKey, Weak<Inode>>);

fn inodes() -> MutexGuard<'static, Inodes> {
    let mut t = hold_table_for_fork();
    let pid = std::process::id();
    if t.0 != pid {
        // Forked: the parent's inodes stay with the parent's connections
        // (which SQLite forbids using in the child, and the VFS refuses:
        // `crate::forked`).
        *t = (pid, HashMap::new());
    }
    t
}

/// The inode of a database file, shared with other connections to it.
/// `file`: the database, open (on NFSv4.1 a clone of it is the owner of
/// the process's byte-range lock, kept as long as the inode).
pub fn inode_for(
    key: InodeKey,
    client: &Client,
    file: &File,
    db_path: &str,
    display: &str,
) -> Arc<Inode> {
    let mut guard = inodes();
    let t = &mut guard.1;
    if let Some(inode) = t.get(&key).and_then(Weak::upgrade) {
        return inode;
    }
    t.retain(|_, w| w.strong_count() > 0);
    let inode = Arc::new(Inode {
        client: client.clone(),
        names: Names::of_db(db_path),
        me: Owner::me(dotlock::random_u64()),
        range: (client.options().nfs_version == NfsVersion::V41)
            .then(|| RangeLock::new(file.clone())),
        display: display.to_string(),
        mount: key.mount.clone(),
        db_path: db_path.to_string(),
        db: Arc::new(Mirror::new(mirror::limit())),
        wal: Arc::new(Mirror::new(mirror::limit())),
        state: Mutex::new(State::default()),
    });
    t.insert(key, Arc::downgrade(&inode));
    inode
}

/// The mirror of the WAL file at `wal_path` (`<db>-wal`) of `mount`, if a
/// connection of this process has its database open (it always has when
/// SQLite opens the database's WAL).
pub fn wal_mirror_of(mount: &str, wal_path: &str) -> Option<Arc<Mirror>> {
    let db_path = wal_path.strip_suffix("-wal")?;
    inodes()
        .1
        .values()
        .filter_map(Weak::upgrade)
        .find(|i| i.mount == mount && i.db_path == db_path)
        .map(|i| Arc::clone(&i.wal))
}

impl Inode {
    /// Empties both mirrors: the process-wide lock is not held.
    fn forget(&self) {
        self.db.clear();
        self.wal.clear();
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Lock state stays consistent even if a holder panicked: every
        // update below is a few field stores with no panic in between.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes the process-wide lock if not held yet, polling for a short
    /// while if another process holds it (see [`POLL_FOR`]).
    fn hold(&self, st: &mut State) -> Result<(), LockError> {
        if st.held.is_some() {
            if st.lingering.take().is_none() {
                // In use by another connection.
                return Ok(());
            }
            if !self.wanted(st) {
                // Kept since this process's last transaction, and nobody
                // asked for it: in use again.
                match &self.range {
                    Some(_) => crate::test_hooks::lock_taken(&format!(
                        "{} (byte-range lock, kept)",
                        self.display
                    )),
                    None => crate::test_hooks::lock_taken(&self.names.lock),
                }
                return Ok(());
            }
            // Kept, and another process asked for a turn: release it
            // (stepping aside) before taking it again.
            if let Err(e) = self.release_now(st) {
                // Still held and unused: the linger thread tries again.
                if st.held.is_some() && crate::linger::watch() {
                    st.lingering = Some(Instant::now());
                }
                return Err(e);
            }
        }
        // Not held until now: another process may have changed the files.
        self.forget();
        if let Some(until) = st.step_aside_until.take() {
            std::thread::sleep(until.saturating_duration_since(Instant::now()));
        }
        if let Some(range) = &self.range {
            return self.hold_range(st, range);
        }
        let deadline = Instant::now() + POLL_FOR;
        let mut asked = false;
        loop {
            let holder = match DotLock::acquire(
                &self.client,
                &self.names,
                &self.me,
                dotlock::OWNERLESS_AFTER,
            ) {
                Ok(Acquire::Held { lock, broken }) => {
                    for warning in broken {
                        crate::report(SQLITE_WARNING, &warning);
                    }
                    st.held = Some(Held::Dot(lock));
                    crate::test_hooks::lock_taken(&self.names.lock);
                    return Ok(());
                }
                Ok(Acquire::Busy(holder)) => holder,
                Err(e) => {
                    return Err(LockError::Io(
                        SQLITE_IOERR_LOCK,
                        format!("{}: cannot take lock file: {e}", self.display),
                    ))
                }
            };
            if !asked {
                dotlock::mark_wanted(&self.client, &self.names);
                asked = true;
            }
            if Instant::now() >= deadline {
                return Err(LockError::Busy(self.busy_message(&holder)));
            }
            std::thread::sleep(POLL_EVERY);
        }
    }

    /// [`hold`](Self::hold) on NFSv4.1: the byte-range lock, polled the
    /// same way; a waiter's request for a turn lasts while it polls.
    fn hold_range(&self, st: &mut State, range: &RangeLock) -> Result<(), LockError> {
        let deadline = Instant::now() + POLL_FOR;
        let mut asked = false;
        let result = loop {
            match range.try_take() {
                Ok(true) => {
                    st.held = Some(Held::Range);
                    break Ok(());
                }
                Ok(false) => {}
                Err(e) => {
                    break Err(LockError::Io(
                        SQLITE_IOERR_LOCK,
                        format!("{}: cannot take the byte-range lock: {e}", self.display),
                    ))
                }
            }
            if !asked {
                range.mark_wanted();
                asked = true;
            }
            if Instant::now() >= deadline {
                break Err(LockError::Busy(format!(
                    "{}: locked by another process (NFSv4.1 byte-range lock; a process that died holding it keeps it until the next process of its user on its host starts, or its lease expires)",
                    self.display
                )));
            }
            std::thread::sleep(POLL_EVERY);
        };
        if asked {
            range.unmark_wanted();
        }
        if result.is_ok() {
            crate::test_hooks::lock_taken(&format!("{} (byte-range lock)", self.display));
        }
        result
    }

    /// Says who holds the lock file and what can be done about it.
    fn busy_message(&self, holder: &Holder) -> String {
        let (db, file) = (&self.display, &self.names.lock);
        match holder {
            Holder::Process(o) => format!(
                "{db}: locked by {o} (lock file {file}; if host {} is down for good: dnfs sqlite-unlock {db} --host-gone {})",
                o.host, o.host
            ),
            Holder::Ownerless { age } => format!(
                "{db}: locked by a lock file that names no owner ({file}, unchanged for {} s; broken once unchanged for {} s)",
                age.as_secs(),
                dotlock::OWNERLESS_AFTER.as_secs()
            ),
            Holder::Newer(v) => format!(
                "{db}: locked by a newer directnfs (lock file {file}, record version {v})"
            ),
            Holder::Unknown => format!("{db}: locked by another process (lock file {file})"),
        }
    }

    /// Whether another process asked for the process-wide lock we hold.
    fn wanted(&self, st: &State) -> bool {
        match (&st.held, &self.range) {
            (Some(Held::Dot(lock)), _) => lock.wanted(&self.client),
            (Some(Held::Range), Some(range)) => range.wanted(),
            _ => false,
        }
    }

    /// Once nothing in the process needs the process-wide lock: keeps it
    /// for [`crate::linger::period`], or drops it at once when lingering
    /// is off (or the process exits).
    fn release_if_unused(&self, st: &mut State) -> Result<(), LockError> {
        if st.n_shared > 0 || st.shm.is_some() || st.held.is_none() {
            return Ok(());
        }
        if !crate::linger::period().is_zero() && !crate::linger::exiting() && crate::linger::watch()
        {
            st.lingering = Some(Instant::now());
            return Ok(());
        }
        self.release_now(st)
    }

    /// [`crate::linger`]'s thread: releases the lock if it has been kept
    /// unused for `at_least`. Returns whether it is still kept (to be
    /// looked at again).
    fn release_if_lingered(&self, at_least: Duration) -> bool {
        let mut st = self.state();
        let Some(since) = st.lingering else {
            return false;
        };
        if since.elapsed() < at_least {
            return true;
        }
        match self.release_now(&mut st) {
            Ok(()) => false,
            Err(e) => {
                let (LockError::Io(_, why) | LockError::Busy(why)) = e;
                crate::report(SQLITE_WARNING, &why);
                // Still held (else the error said the lock was lost):
                // tried again at the next sweep.
                if st.held.is_some() {
                    st.lingering = Some(Instant::now());
                }
                st.held.is_some()
            }
        }
    }

    /// Drops the process-wide lock now.
    fn release_now(&self, st: &mut State) -> Result<(), LockError> {
        st.lingering = None;
        let wanted = match (&st.held, &self.range) {
            (None, _) => return Ok(()),
            (Some(Held::Dot(lock)), _) => lock.release(&self.client).map_err(|e| {
                // Keep it: the next release retries, and nobody may take
                // the database while the file may still exist.
                LockError::Io(
                    SQLITE_IOERR_UNLOCK,
                    format!("{}: cannot remove lock file: {e}", self.display),
                )
            })?,
            (Some(Held::Range), Some(range)) => match range.release() {
                Ok(wanted) => wanted,
                Err(e @ dnfs::Error::LockLost { .. }) => {
                    // Not held any more: say so (another process may have
                    // used the database meanwhile), and start afresh.
                    st.held = None;
                    self.forget();
                    return Err(LockError::Io(
                        SQLITE_IOERR_UNLOCK,
                        format!("{}: the byte-range lock was lost: {e}", self.display),
                    ));
                }
                // Keep it: the next release retries.
                Err(e) => {
                    return Err(LockError::Io(
                        SQLITE_IOERR_UNLOCK,
                        format!("{}: cannot release the byte-range lock: {e}", self.display),
                    ))
                }
            },
            (Some(Held::Range), None) => false,
        };
        st.held = None;
        self.forget();
        if wanted {
            st.step_aside_until = Some(Instant::now() + STEP_ASIDE);
        }
        Ok(())
    }

    /// xLock: raise connection lock `cur` to `want` (unixLock's rules).
    pub fn lock(&self, cur: &mut c_int, want: c_int) -> Result<(), LockError> {
        if *cur >= want {
            return Ok(());
        }
        let mut st = self.state();
        // Another connection of this process holds a lock that precludes
        // this one: a PENDING or stronger lock, or any lock above SHARED
        // when we want more than SHARED.
        if *cur != st.level && (st.level >= SQLITE_LOCK_PENDING || want > SQLITE_LOCK_SHARED) {
            return Err(LockError::Busy(format!(
                "{}: locked by another connection of this process",
                self.display
            )));
        }
        if want == SQLITE_LOCK_SHARED {
            if st.level == SQLITE_LOCK_NONE {
                // First lock in this process: exclude other processes.
                self.hold(&mut st)?;
                st.level = SQLITE_LOCK_SHARED;
            }
            st.n_shared += 1;
            *cur = SQLITE_LOCK_SHARED;
            return Ok(());
        }
        // RESERVED or EXCLUSIVE; here *cur == st.level >= SHARED.
        if want == SQLITE_LOCK_EXCLUSIVE && st.n_shared > 1 {
            // Readers of this process remain: PENDING keeps new ones out
            // until they finish; the busy handler retries.
            *cur = SQLITE_LOCK_PENDING;
            st.level = SQLITE_LOCK_PENDING;
            return Err(LockError::Busy(format!(
                "{}: waiting for readers of this process",
                self.display
            )));
        }
        *cur = want;
        st.level = want;
        Ok(())
    }

    /// xUnlock: lower connection lock `cur` to `want` (SHARED or NONE).
    pub fn unlock(&self, cur: &mut c_int, want: c_int) -> Result<(), LockError> {
        if *cur <= want {
            return Ok(());
        }
        let mut st = self.state();
        if *cur > SQLITE_LOCK_SHARED {
            st.level = SQLITE_LOCK_SHARED;
        }
        *cur = want;
        if want == SQLITE_LOCK_NONE {
            st.n_shared = st.n_shared.saturating_sub(1);
            if st.n_shared == 0 {
                st.level = SQLITE_LOCK_NONE;
                self.release_if_unused(&mut st)?;
            }
        }
        Ok(())
    }

    /// xCheckReservedLock: does any connection, here or elsewhere, hold
    /// RESERVED or more?
    pub fn reserved(&self) -> Result<bool, LockError> {
        let st = self.state();
        if st.level > SQLITE_LOCK_SHARED {
            return Ok(true);
        }
        if st.held.is_some() {
            // We hold the process lock: no other process holds anything.
            return Ok(false);
        }
        drop(st);
        let held = match &self.range {
            Some(range) => range.held_elsewhere(),
            None => dotlock::exists(&self.client, &self.names),
        };
        held.map_err(|e| {
            LockError::Io(
                SQLITE_IOERR_CHECKRESERVEDLOCK,
                format!("{}: {e}", self.display),
            )
        })
    }

    /// xShmMap: the address of WAL-index region `region`, allocating it if
    /// `extend`; NULL if it does not exist and `!extend`.
    pub fn shm_map(
        &self,
        conn: &mut ShmConn,
        region: usize,
        size: usize,
        extend: bool,
    ) -> Result<*mut u8, LockError> {
        let mut st = self.state();
        if !conn.mapped {
            // The WAL-index lives in this process's memory only, so no
            // other process may use the database while it exists: keep the
            // process lock for as long as it is mapped (normally already held,
            // since SQLite maps it while holding SHARED).
            self.hold(&mut st)?;
            let shm = st.shm.get_or_insert_with(|| Shm {
                regions: Vec::new(),
                region_size: size,
                slots: [0; SQLITE_SHM_NLOCK],
                refs: 0,
            });
            shm.refs += 1;
            conn.mapped = true;
        }
        let Some(shm) = st.shm.as_mut() else {
            return Err(LockError::Io(SQLITE_IOERR_SHMMAP, "no shm".into()));
        };
        if size != shm.region_size {
            return Err(LockError::Io(
                SQLITE_IOERR_SHMSIZE,
                format!(
                    "{}: WAL-index region size {size} != {}",
                    self.display, shm.region_size
                ),
            ));
        }
        if region >= shm.regions.len() {
            if !extend {
                return Ok(std::ptr::null_mut());
            }
            while shm.regions.len() <= region {
                shm.regions.push(vec![0u8; size].into_boxed_slice());
            }
        }
        Ok(shm.regions[region].as_mut_ptr())
    }

    /// xShmLock on slots `offset..offset+n`.
    pub fn shm_lock(&self, conn: &mut ShmConn, offset: usize, n: usize, flags: c_int) -> c_int {
        if n == 0 || offset + n > SQLITE_SHM_NLOCK {
            return SQLITE_MISUSE;
        }
        let mut st = self.state();
        let Some(shm) = st.shm.as_mut() else {
            return SQLITE_IOERR_SHMLOCK;
        };
        let mask = (((1u16 << n) - 1) << offset) as u8;
        let range = offset..offset + n;
        if flags & SQLITE_SHM_UNLOCK != 0 {
            for i in range {
                let bit = 1u8 << i;
                if conn.excl & bit != 0 {
                    shm.slots[i] = 0;
                } else if conn.shared & bit != 0 {
                    shm.slots[i] -= 1;
                }
            }
            conn.excl &= !mask;
            conn.shared &= !mask;
            return SQLITE_OK;
        }
        if flags & SQLITE_SHM_SHARED != 0 {
            for i in range.clone() {
                let bit = 1u8 << i;
                if conn.shared & bit == 0 && conn.excl & bit == 0 && shm.slots[i] < 0 {
                    return SQLITE_BUSY;
                }
            }
            for i in range {
                let bit = 1u8 << i;
                if conn.shared & bit == 0 && conn.excl & bit == 0 {
                    shm.slots[i] += 1;
                    conn.shared |= bit;
                }
            }
            return SQLITE_OK;
        }
        // Exclusive: all slots or none.
        for i in range.clone() {
            let bit = 1u8 << i;
            if conn.excl & bit != 0 {
                continue;
            }
            let mine = i32::from(conn.shared & bit != 0);
            if shm.slots[i] != mine {
                return SQLITE_BUSY;
            }
        }
        for i in range {
            let bit = 1u8 << i;
            shm.slots[i] = -1;
            conn.shared &= !bit;
            conn.excl |= bit;
        }
        SQLITE_OK
    }

    /// xShmUnmap: this connection is done with the WAL-index. The memory
    /// goes (and the process lock with it, if unused) with the last one.
    pub fn shm_unmap(&self, conn: &mut ShmConn) -> Result<(), LockError> {
        if !conn.mapped {
            return Ok(());
        }
        let mut st = self.state();
        if let Some(shm) = st.shm.as_mut() {
            for i in 0..SQLITE_SHM_NLOCK {
                let bit = 1u8 << i;
                if conn.excl & bit != 0 {
                    shm.slots[i] = 0;
                } else if conn.shared & bit != 0 {
                    shm.slots[i] -= 1;
                }
            }
            shm.refs = shm.refs.saturating_sub(1);
            if shm.refs == 0 {
                st.shm = None;
            }
        }
        *conn = ShmConn::default();
        self.release_if_unused(&mut st)
    }
}

/// Releases every process-wide lock kept unused for at least `at_least`
/// ([`crate::linger`]). Returns whether some lock is still kept.
pub(crate) fn release_lingering(at_least: Duration) -> bool {
    let held: Vec<Arc<Inode>> = inodes().1.values().filter_map(Weak::upgrade).collect();
    let mut kept = false;
    for inode in held {
        kept |= inode.release_if_lingered(at_least);
    }
    kept
}

impl Drop for Inode {
    fn drop(&mut self) {
        // Normally released already; a lock file left here would block
        // every other process until we exit. (The byte-range lock goes
        // with the last clone of its file, whose close releases it.)
        let st = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        if let Some(Held::Dot(lock)) = st.held.take() {
            let _ = lock.release(&self.client);
        }
    }
}
