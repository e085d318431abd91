//! xShmMap, xShmLock, xShmBarrier and xShmUnmap: the WAL-index, in this
//! process's memory (see [`crate::lock`]).

use std::ffi::{c_int, c_void};
use std::sync::atomic::{fence, Ordering};

use super::entry::{conn, fallible, lock_error};
use crate::sys::*;

pub(super) unsafe extern "C" fn x_shm_map(
    f: *mut sqlite3_file,
    region: c_int,
    size: c_int,
    extend: c_int,
    pp: *mut *mut c_void,
) -> c_int {
    fallible(SQLITE_IOERR_SHMMAP, || {
        // SAFETY: our file, one thread at a time; pp is a valid pointer.
        let Some(c) = (unsafe { conn(f) }) else {
            return SQLITE_IOERR_SHMMAP;
        };
        unsafe { *pp = std::ptr::null_mut() };
        let Some(inode) = c.inode.clone() else {
            return SQLITE_IOERR_SHMOPEN;
        };
        let (Ok(region), Ok(size)) = (usize::try_from(region), usize::try_from(size)) else {
            return SQLITE_IOERR_SHMMAP;
        };
        match inode.shm_map(&mut c.shm, region, size, extend != 0) {
            Ok(p) => {
                // SAFETY: pp is valid (SQLite's contract); p is NULL or a
                // region that stays put while any connection maps it.
                unsafe { *pp = p.cast() };
                SQLITE_OK
            }
            Err(e) => lock_error(e),
        }
    })
}

pub(super) unsafe extern "C" fn x_shm_lock(
    f: *mut sqlite3_file,
    off: c_int,
    n: c_int,
    flags: c_int,
) -> c_int {
    fallible(SQLITE_IOERR_SHMLOCK, || {
        // SAFETY: our file, one thread at a time.
        let Some(c) = (unsafe { conn(f) }) else {
            return SQLITE_IOERR_SHMLOCK;
        };
        let Some(inode) = c.inode.clone() else {
            return SQLITE_IOERR_SHMLOCK;
        };
        let (Ok(off), Ok(n)) = (usize::try_from(off), usize::try_from(n)) else {
            return SQLITE_MISUSE;
        };
        inode.shm_lock(&mut c.shm, off, n, flags)
    })
}

/// xShmBarrier: a full memory fence (the memory is in this process). A
/// writer calls it between the two copies of a new WAL-index header, so a
/// connection holding a WAL-index lock exclusively first waits for the
/// client's write-behind WRITEs (the WAL frames the header points to, held
/// or in flight): another connection that reads the header then reads
/// those frames from the server. Readers (no exclusive lock) do not wait.
/// With nothing outstanding (xSync came first) this costs no call.
pub(super) unsafe extern "C" fn x_shm_barrier(f: *mut sqlite3_file) {
    // SAFETY: our file, one thread at a time.
    if let Some(c) = unsafe { conn(f) } {
        if c.shm.holds_exclusive() {
            c.file.client().wait_write_behind();
        }
    }
    fence(Ordering::SeqCst);
}

pub(super) unsafe extern "C" fn x_shm_unmap(f: *mut sqlite3_file, _delete: c_int) -> c_int {
    fallible(SQLITE_IOERR_SHMMAP, || {
        // SAFETY: our file, one thread at a time.
        let Some(c) = (unsafe { conn(f) }) else {
            return SQLITE_OK;
        };
        let Some(inode) = c.inode.clone() else {
            return SQLITE_OK;
        };
        match inode.shm_unmap(&mut c.shm) {
            Ok(()) => SQLITE_OK,
            Err(e) => lock_error(e),
        }
    })
}
