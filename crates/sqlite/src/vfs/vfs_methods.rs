//! The `sqlite3_vfs` table: the methods that work on names (open,
//! delete, access, full pathname); the rest of the table is answered by
//! [`super::os`].

use std::ffi::{c_char, c_int};
use std::sync::atomic::Ordering;

use super::conn::{open_conn, DnfsFile};
use super::entry::{c_str, fallible, io_error};
use super::file_methods::IO_METHODS;
use super::os::*;
use super::trace::Trace;
use crate::names;
use crate::report;
use crate::sys::*;

/// Builds the VFS structure (leaked: SQLite keeps it for the process).
pub fn make_vfs(os: *mut sqlite3_vfs) -> *mut sqlite3_vfs {
    // SAFETY: os is NULL or a registered, static VFS.
    let os_size = unsafe { os.as_ref() }.map_or(0, |v| v.szOsFile);
    let ours = std::mem::size_of::<DnfsFile>() as c_int;
    Box::into_raw(Box::new(sqlite3_vfs {
        iVersion: 2,
        szOsFile: ours.max(os_size),
        mxPathname: 1024,
        pNext: std::ptr::null_mut(),
        zName: c"directnfs".as_ptr(),
        pAppData: std::ptr::null_mut(),
        xOpen: Some(x_open),
        xDelete: Some(x_delete),
        xAccess: Some(x_access),
        xFullPathname: Some(x_full_pathname),
        xDlOpen: Some(x_dl_open),
        xDlError: Some(x_dl_error),
        xDlSym: Some(x_dl_sym),
        xDlClose: Some(x_dl_close),
        xRandomness: Some(x_randomness),
        xSleep: Some(x_sleep),
        xCurrentTime: Some(x_current_time),
        xGetLastError: Some(x_get_last_error),
        xCurrentTimeInt64: Some(x_current_time_int64),
        xSetSystemCall: None,
        xGetSystemCall: None,
        xNextSystemCall: None,
    }))
}

/// xOpen. "If xOpen fails, pMethods must be NULL" — set only on success.
/// A NULL name asks for a temporary file: it goes to the OS VFS, in our
/// storage (szOsFile covers both), which then owns the methods.
pub(super) unsafe extern "C" fn x_open(
    _vfs: *mut sqlite3_vfs,
    zname: *const c_char,
    file: *mut sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    fallible(SQLITE_CANTOPEN, || {
        // SAFETY: SQLite passes szOsFile writable bytes.
        unsafe {
            (*file).pMethods = std::ptr::null();
            (*file.cast::<DnfsFile>()).conn = std::ptr::null_mut();
        }
        if zname.is_null() {
            let os = OS_VFS.load(Ordering::Acquire);
            // SAFETY: the OS VFS is a registered, static sqlite3_vfs; our
            // file buffer is at least its szOsFile bytes.
            return match unsafe { os.as_ref().and_then(|v| v.xOpen) } {
                Some(open) => unsafe { open(os, zname, file, flags, out_flags) },
                None => SQLITE_CANTOPEN,
            };
        }
        // SAFETY: a NUL-terminated name (SQLite's contract).
        let Some(name) = (unsafe { c_str(zname) }) else {
            report(SQLITE_CANTOPEN, "directnfs: database name is not UTF-8");
            return SQLITE_CANTOPEN;
        };
        let _t = Trace::new("xOpen", name, flags as i64);
        match open_conn(name, flags) {
            Ok(conn) => {
                // SAFETY: as above; pMethods points to a static table.
                unsafe {
                    (*file.cast::<DnfsFile>()).conn = Box::into_raw(Box::new(conn));
                    (*file).pMethods = &IO_METHODS;
                    if !out_flags.is_null() {
                        *out_flags = flags;
                    }
                }
                SQLITE_OK
            }
            Err(e) => io_error(SQLITE_CANTOPEN, &format!("directnfs: open {name}"), &e),
        }
    })
}

/// xDelete. `syncDir` needs nothing: NFSv3 REMOVE is committed to stable
/// storage on the server before it replies (RFC 1813 §3.3.12).
pub(super) unsafe extern "C" fn x_delete(
    _vfs: *mut sqlite3_vfs,
    zname: *const c_char,
    _sync: c_int,
) -> c_int {
    fallible(SQLITE_IOERR_DELETE, || {
        // SAFETY: SQLite passes a NUL-terminated name.
        let Some(name) = (unsafe { c_str(zname) }) else {
            return SQLITE_IOERR_DELETE;
        };
        let _t = Trace::new("xDelete", name, 0);
        let r = match names::resolve(name) {
            Ok(r) => r,
            Err(e) => return io_error(SQLITE_IOERR_DELETE, &format!("delete {name}"), &e),
        };
        // A WAL file goes: what this process kept of it is not its content
        // any more (normally already cleared when the lock was released).
        if let Some(w) = crate::lock::wal_mirror_of(&r.mount.key, &r.path) {
            w.clear();
        }
        let client = &r.mount.client;
        match names::fresh(client, &r.path, || client.remove(&r.path)) {
            Ok(()) => SQLITE_OK,
            Err(e) if e.errno() == libc::ENOENT => SQLITE_IOERR_DELETE_NOENT,
            Err(e) => io_error(SQLITE_IOERR_DELETE, &format!("delete {name}"), &e),
        }
    })
}

/// xAccess: existence (READWRITE is answered like EXISTS: NFS checks
/// permissions per operation).
pub(super) unsafe extern "C" fn x_access(
    _vfs: *mut sqlite3_vfs,
    zname: *const c_char,
    _flags: c_int,
    out: *mut c_int,
) -> c_int {
    fallible(SQLITE_IOERR_ACCESS, || {
        // SAFETY: SQLite passes a NUL-terminated name and an int to set.
        let Some(name) = (unsafe { c_str(zname) }) else {
            return SQLITE_IOERR_ACCESS;
        };
        let _t = Trace::new("xAccess", name, 0);
        let r = match names::resolve(name) {
            Ok(r) => r,
            Err(e) => return io_error(SQLITE_IOERR_ACCESS, &format!("access {name}"), &e),
        };
        let client = &r.mount.client;
        let exists = match names::fresh(client, &r.path, || client.metadata(&r.path)) {
            Ok(_) => 1,
            Err(e) if e.errno() == libc::ENOENT => 0,
            Err(e) => return io_error(SQLITE_IOERR_ACCESS, &format!("access {name}"), &e),
        };
        // SAFETY: out is a valid int pointer (SQLite's contract).
        unsafe { *out = exists };
        SQLITE_OK
    })
}

/// xFullPathname: URLs as given; paths made absolute and normalized, and
/// refused unless under a `mount:` prefix.
pub(super) unsafe extern "C" fn x_full_pathname(
    _vfs: *mut sqlite3_vfs,
    zname: *const c_char,
    n_out: c_int,
    out: *mut c_char,
) -> c_int {
    fallible(SQLITE_CANTOPEN, || {
        // SAFETY: SQLite passes a NUL-terminated name.
        let Some(name) = (unsafe { c_str(zname) }) else {
            return SQLITE_CANTOPEN;
        };
        let full = match names::full_pathname(name) {
            Ok(f) => f,
            Err(e) => return io_error(SQLITE_CANTOPEN_FULLPATH, "directnfs", &e),
        };
        let n = full.len();
        if n + 1 > usize::try_from(n_out).unwrap_or(0) {
            report(
                SQLITE_CANTOPEN,
                &format!("directnfs: name longer than {n_out} bytes: {full}"),
            );
            return SQLITE_CANTOPEN;
        }
        // SAFETY: out has n_out >= n + 1 writable bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(full.as_ptr(), out.cast::<u8>(), n);
            *out.add(n) = 0;
        }
        SQLITE_OK
    })
}
