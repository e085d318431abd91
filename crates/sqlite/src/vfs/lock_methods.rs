//! xLock, xUnlock and xCheckReservedLock: a connection's lock level, kept
//! by its file's [`Inode`](crate::lock::Inode) (main databases) or by the
//! connection alone (journals and other files, which SQLite locks only
//! through their database).

use std::ffi::c_int;

use super::entry::{conn, fallible, lock_error};
use super::trace::Trace;
use crate::sys::*;

pub(super) unsafe extern "C" fn x_lock(f: *mut sqlite3_file, level: c_int) -> c_int {
    fallible(SQLITE_IOERR_LOCK, || {
        // SAFETY: our file, one thread at a time.
        let Some(c) = (unsafe { conn(f) }) else {
            return SQLITE_IOERR_LOCK;
        };
        let _t = Trace::new("xLock", &c.name, level as i64);
        match &c.inode {
            Some(inode) => match inode.lock(&mut c.lock, level) {
                Ok(()) => SQLITE_OK,
                Err(e) => lock_error(e),
            },
            None => {
                c.lock = c.lock.max(level);
                SQLITE_OK
            }
        }
    })
}

pub(super) unsafe extern "C" fn x_unlock(f: *mut sqlite3_file, level: c_int) -> c_int {
    fallible(SQLITE_IOERR_UNLOCK, || {
        // SAFETY: our file, one thread at a time.
        let Some(c) = (unsafe { conn(f) }) else {
            return SQLITE_IOERR_UNLOCK;
        };
        let _t = Trace::new("xUnlock", &c.name, level as i64);
        // Write-behind (unstable mode): the writes made under the lock
        // land before it is released, so the next holder reads them; those
        // of the connection's other files (its journal) held for
        // coalescing leave the process, as a local write has reached the
        // kernel when the transaction ends.
        c.file.client().send_held_writes();
        c.file.wait_write_behind();
        match &c.inode {
            Some(inode) => match inode.unlock(&mut c.lock, level) {
                Ok(()) => SQLITE_OK,
                Err(e) => lock_error(e),
            },
            None => {
                c.lock = c.lock.min(level);
                SQLITE_OK
            }
        }
    })
}

pub(super) unsafe extern "C" fn x_check_reserved_lock(
    f: *mut sqlite3_file,
    out: *mut c_int,
) -> c_int {
    fallible(SQLITE_IOERR_CHECKRESERVEDLOCK, || {
        // SAFETY: our file, one thread at a time.
        let Some(c) = (unsafe { conn(f) }) else {
            return SQLITE_IOERR_CHECKRESERVEDLOCK;
        };
        let _t = Trace::new("xCheckReserved", &c.name, 0);
        let reserved = match &c.inode {
            Some(inode) => match inode.reserved() {
                Ok(r) => r,
                Err(e) => return lock_error(e),
            },
            None => false,
        };
        // SAFETY: out is a valid int pointer (SQLite's contract).
        unsafe { *out = c_int::from(reserved) };
        SQLITE_OK
    })
}
