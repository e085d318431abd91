//! The C boundary every entry point of the VFS crosses: panics caught
//! ([`fallible`]), client and lock errors turned into SQLite codes and
//! messages, and the raw arguments SQLite passes read back safely.

use std::ffi::{c_char, c_int, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

use dnfs::Error;

use super::conn::{Conn, DnfsFile};
use crate::lock::LockError;
use crate::sys::*;
use crate::{report, set_last_error};

/// Runs an entry point body; a panic becomes `on_panic` plus a message.
pub(super) fn fallible(on_panic: c_int, body: impl FnOnce() -> c_int) -> c_int {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(rc) => rc,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            let _ = catch_unwind(AssertUnwindSafe(move || drop(payload)));
            report(on_panic, &format!("directnfs VFS internal error: {what}"));
            on_panic
        }
    }
}

/// Reports a client error and returns `code` (SQLITE_FULL for ENOSPC).
pub(super) fn io_error(code: c_int, what: &str, e: &Error) -> c_int {
    let errno = e.errno();
    set_last_error(errno, &format!("{what}: {e}"));
    report(code, &format!("{what}: {e}"));
    if errno == libc::ENOSPC || errno == libc::EDQUOT {
        SQLITE_FULL
    } else {
        code
    }
}

pub(super) fn lock_error(e: LockError) -> c_int {
    match e {
        LockError::Busy(msg) => {
            // Who holds the lock (the lock file's owner on NFSv3), told
            // where a user sees it: SQLite's own message is only "database
            // is locked". The busy handler retries, often many times: one
            // line per holder, again after a while (report_busy).
            set_last_error(libc::EBUSY, &msg);
            crate::report_busy(&msg);
            SQLITE_BUSY
        }
        LockError::Io(code, msg) => {
            set_last_error(libc::EIO, &msg);
            report(code, &msg);
            code
        }
    }
}

/// The connection behind a file: None once closed, and for a connection
/// the parent of a fork opened ([`crate::forked`]; reported once).
///
/// # Safety
/// `f` is a file opened by [`super::vfs_methods::x_open`] on the NFS path (its methods are
/// ours), used by one thread at a time as SQLite guarantees.
pub(super) unsafe fn conn<'a>(f: *mut sqlite3_file) -> Option<&'a mut Conn> {
    // SAFETY: per the contract, f points to a DnfsFile whose conn is NULL
    // or a live Box<Conn> owned by it.
    let c = unsafe { (*f.cast::<DnfsFile>()).conn.as_mut() }?;
    c.ours().then_some(c)
}

/// C string argument; None if NULL or not UTF-8.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string valid for the call.
pub(super) unsafe fn c_str<'a>(p: *const c_char) -> Option<&'a str> {
    if p.is_null() {
        return None;
    }
    // SAFETY: per the contract.
    unsafe { CStr::from_ptr(p) }.to_str().ok()
}
