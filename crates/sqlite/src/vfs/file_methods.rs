//! The `sqlite3_io_methods` table and the methods that move data: close,
//! read, write, truncate, sync, size, file controls and device
//! properties. Locking is in [`super::lock_methods`], the WAL-index in
//! [`super::shm_methods`].

use std::ffi::{c_char, c_int, c_void};

use super::conn::DnfsFile;
use super::entry::{conn, fallible, io_error, lock_error};
use super::lock_methods::*;
use super::shm_methods::*;
use super::trace::Trace;
use crate::sys::*;

/// Version 2: the xShm* methods (WAL) but no xFetch (no mmap over NFS).
pub(super) static IO_METHODS: sqlite3_io_methods = sqlite3_io_methods {
    iVersion: 2,
    xClose: Some(x_close),
    xRead: Some(x_read),
    xWrite: Some(x_write),
    xTruncate: Some(x_truncate),
    xSync: Some(x_sync),
    xFileSize: Some(x_file_size),
    xLock: Some(x_lock),
    xUnlock: Some(x_unlock),
    xCheckReservedLock: Some(x_check_reserved_lock),
    xFileControl: Some(x_file_control),
    xSectorSize: Some(x_sector_size),
    xDeviceCharacteristics: Some(x_device_characteristics),
    xShmMap: Some(x_shm_map),
    xShmLock: Some(x_shm_lock),
    xShmBarrier: Some(x_shm_barrier),
    xShmUnmap: Some(x_shm_unmap),
    xFetch: None,
    xUnfetch: None,
};

/// xClose: releases what the connection still holds, removes a
/// delete-on-close file, frees the connection.
pub(super) unsafe extern "C" fn x_close(f: *mut sqlite3_file) -> c_int {
    fallible(SQLITE_IOERR_CLOSE, || {
        // SAFETY: f is one of our files; we take back the Box we made in
        // x_open and clear the pointer so a second close is harmless.
        let mut boxed = unsafe {
            let df = f.cast::<DnfsFile>();
            let p = std::mem::replace(&mut (*df).conn, std::ptr::null_mut());
            if p.is_null() {
                return SQLITE_OK;
            }
            Box::from_raw(p)
        };
        if !boxed.ours() {
            // The parent's (this is the child of a fork): its file, client
            // and locks stay the parent's; nothing of it is dropped here.
            std::mem::forget(boxed);
            return SQLITE_IOERR_CLOSE;
        }
        let mut c = *boxed;
        let mut rc = SQLITE_OK;
        // Write-behind: wait for the writes in flight (before the locks
        // go) and report an error none of them reported yet.
        if let Err(e) = c.file.flush_write_behind() {
            c.forget_mirror();
            rc = io_error(SQLITE_IOERR_CLOSE, &format!("close {}", c.name), &e);
        }
        if let Some(inode) = c.inode.clone() {
            if let Err(e) = inode.shm_unmap(&mut c.shm) {
                rc = lock_error(e);
            }
            if let Err(e) = inode.unlock(&mut c.lock, SQLITE_LOCK_NONE) {
                rc = lock_error(e);
            }
        }
        if c.delete_on_close {
            if let Err(e) = c.file.client().remove(&c.path) {
                if e.errno() != libc::ENOENT {
                    rc = io_error(SQLITE_IOERR_DELETE, &format!("delete {}", c.name), &e);
                }
            }
        }
        rc
    })
}

fn offset(off: i64) -> Option<u64> {
    u64::try_from(off).ok()
}

/// xRead. SQLite's rule: "If xRead() returns SQLITE_IOERR_SHORT_READ it
/// must also fill in the unread portions of the buffer with zeros", so a
/// read past end of file zero-fills and says so.
pub(super) unsafe extern "C" fn x_read(
    f: *mut sqlite3_file,
    buf: *mut c_void,
    amt: c_int,
    off: i64,
) -> c_int {
    fallible(SQLITE_IOERR_READ, || {
        // SAFETY: our file, one thread at a time.
        let Some(c) = (unsafe { conn(f) }) else {
            return SQLITE_IOERR_READ;
        };
        let _t = Trace::new("xRead", &c.name, off);
        let (Some(off), Ok(amt)) = (offset(off), usize::try_from(amt)) else {
            return SQLITE_IOERR_READ;
        };
        // SAFETY: SQLite passes amt writable bytes.
        let out = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), amt) };
        if c.mirror.as_ref().is_some_and(|m| m.read(off, out)) {
            return SQLITE_OK;
        }
        let generation = c.mirror.as_ref().map(|m| m.generation());
        let mut done = 0;
        while done < amt {
            match c.with_file(|f| f.read_at(&mut out[done..], off + done as u64)) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) => return io_error(SQLITE_IOERR_READ, &format!("read {}", c.name), &e),
            }
        }
        if done < amt {
            out[done..].fill(0);
            return SQLITE_IOERR_SHORT_READ;
        }
        if let (Some(m), Some(g)) = (&c.mirror, generation) {
            m.fill(g, off, out);
        }
        SQLITE_OK
    })
}

/// xWrite: all or an error. Durable on return in FILE_SYNC mode.
pub(super) unsafe extern "C" fn x_write(
    f: *mut sqlite3_file,
    buf: *const c_void,
    amt: c_int,
    off: i64,
) -> c_int {
    fallible(SQLITE_IOERR_WRITE, || {
        // SAFETY: our file, one thread at a time.
        let Some(c) = (unsafe { conn(f) }) else {
            return SQLITE_IOERR_WRITE;
        };
        let _t = Trace::new("xWrite", &c.name, off);
        let (Some(off), Ok(amt)) = (offset(off), usize::try_from(amt)) else {
            return SQLITE_IOERR_WRITE;
        };
        // SAFETY: SQLite passes amt readable bytes.
        let data = unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), amt) };
        match c.with_file(|f| f.write_at(data, off)) {
            Ok(_) => {
                if let Some(m) = &c.mirror {
                    m.write(off, data);
                }
                SQLITE_OK
            }
            Err(e) => {
                c.forget_mirror();
                io_error(SQLITE_IOERR_WRITE, &format!("write {}", c.name), &e)
            }
        }
    })
}

pub(super) unsafe extern "C" fn x_truncate(f: *mut sqlite3_file, size: i64) -> c_int {
    fallible(SQLITE_IOERR_TRUNCATE, || {
        // SAFETY: our file, one thread at a time.
        let Some(c) = (unsafe { conn(f) }) else {
            return SQLITE_IOERR_TRUNCATE;
        };
        let _t = Trace::new("xTruncate", &c.name, size);
        let Some(size) = offset(size) else {
            return SQLITE_IOERR_TRUNCATE;
        };
        match c.with_file(|f| f.set_len(size)) {
            Ok(()) => {
                if let Some(m) = &c.mirror {
                    m.truncate(size);
                }
                SQLITE_OK
            }
            Err(e) => {
                c.forget_mirror();
                io_error(SQLITE_IOERR_TRUNCATE, &format!("truncate {}", c.name), &e)
            }
        }
    })
}

/// xSync = File::fsync: nothing to do for FILE_SYNC writes (durable when
/// acknowledged), COMMIT (and resend after a server restart) in unstable
/// mode, after waiting for the file's write-behind writes (the barrier:
/// xWrite returned before their replies; a failed one is reported here).
/// The same for every sync flag: there is no cheaper "data only".
pub(super) unsafe extern "C" fn x_sync(f: *mut sqlite3_file, _flags: c_int) -> c_int {
    fallible(SQLITE_IOERR_FSYNC, || {
        // SAFETY: our file, one thread at a time.
        let Some(c) = (unsafe { conn(f) }) else {
            return SQLITE_IOERR_FSYNC;
        };
        let _t = Trace::new("xSync", &c.name, 0);
        match c.with_file(|f| f.fsync()) {
            Ok(()) => SQLITE_OK,
            Err(e) => {
                c.forget_mirror();
                io_error(SQLITE_IOERR_FSYNC, &format!("fsync {}", c.name), &e)
            }
        }
    })
}

/// xFileSize: from the server every time (no attribute cache: another
/// process may have changed it while we held no lock).
pub(super) unsafe extern "C" fn x_file_size(f: *mut sqlite3_file, out: *mut i64) -> c_int {
    fallible(SQLITE_IOERR_FSTAT, || {
        // SAFETY: our file, one thread at a time.
        let Some(c) = (unsafe { conn(f) }) else {
            return SQLITE_IOERR_FSTAT;
        };
        let _t = Trace::new("xFileSize", &c.name, 0);
        match c.with_file(|f| f.metadata()) {
            Ok(m) => {
                // SAFETY: out is a valid int64 pointer (SQLite's contract).
                unsafe { *out = i64::try_from(m.size).unwrap_or(i64::MAX) };
                SQLITE_OK
            }
            Err(e) => io_error(SQLITE_IOERR_FSTAT, &format!("stat {}", c.name), &e),
        }
    })
}

/// xFileControl: LOCKSTATE and VFSNAME; everything else is NOTFOUND ("VFS
/// implementations should return SQLITE_NOTFOUND for file control opcodes
/// that they do not recognize").
pub(super) unsafe extern "C" fn x_file_control(
    f: *mut sqlite3_file,
    op: c_int,
    arg: *mut c_void,
) -> c_int {
    fallible(SQLITE_ERROR, || {
        // SAFETY: our file, one thread at a time.
        let Some(c) = (unsafe { conn(f) }) else {
            return SQLITE_NOTFOUND;
        };
        match op {
            SQLITE_FCNTL_LOCKSTATE => {
                // SAFETY: for this opcode arg points to an int.
                unsafe { *arg.cast::<c_int>() = c.lock };
                SQLITE_OK
            }
            SQLITE_FCNTL_VFSNAME => {
                let Some(mprintf) = crate::api().and_then(|a| a.mprintf()) else {
                    return SQLITE_NOTFOUND;
                };
                // SAFETY: for this opcode arg points to a char* that SQLite
                // frees with sqlite3_free; mprintf allocates with its
                // allocator.
                unsafe {
                    *arg.cast::<*mut c_char>() = mprintf(c"%s".as_ptr(), c"directnfs".as_ptr())
                };
                SQLITE_OK
            }
            SQLITE_FCNTL_SIZE_HINT | SQLITE_FCNTL_CHUNK_SIZE => SQLITE_OK,
            _ => SQLITE_NOTFOUND,
        }
    })
}

/// 4096: what the unix VFS reports; journal headers are padded to it.
pub(super) unsafe extern "C" fn x_sector_size(_f: *mut sqlite3_file) -> c_int {
    4096
}

/// POWERSAFE_OVERWRITE: a write changes only the bytes written, as on any
/// server file system. Not SEQUENTIAL or ATOMIC: unstable mode reorders
/// until fsync, and a WRITE larger than the transfer size is several RPCs.
pub(super) unsafe extern "C" fn x_device_characteristics(_f: *mut sqlite3_file) -> c_int {
    SQLITE_IOCAP_POWERSAFE_OVERWRITE
}
