//! The `directnfs` VFS: its `sqlite3_vfs` and `sqlite3_io_methods`.
//!
//! Every C entry point runs through [`fallible`] (panics become an SQLite
//! error code, never an unwind into C). The SQLite rules each method keeps
//! are quoted beside the code that keeps them.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{fence, AtomicPtr, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use dnfs::{Error, File, OpenOptions};

use crate::lock::{inode_for, Inode, InodeKey, LockError, ShmConn};
use crate::names::{self, Mount};
use crate::sys::*;
use crate::{report, set_last_error};

/// The VFS SQLite had as default when we registered ("unix"): temporary
/// files (NULL names) and xDl* go there.
pub static OS_VFS: AtomicPtr<sqlite3_vfs> = AtomicPtr::new(std::ptr::null_mut());

/// Our `sqlite3_file`: SQLite allocates `szOsFile` bytes and we fill them.
#[repr(C)]
pub struct DnfsFile {
    base: sqlite3_file,
    conn: *mut Conn,
}

/// An open file of the VFS.
struct Conn {
    file: File,
    /// Keeps the client (and its connections) alive.
    _mount: Arc<Mount>,
    path: String,
    name: String,
    delete_on_close: bool,
    /// This connection's lock level (main databases only).
    lock: c_int,
    inode: Option<Arc<Inode>>,
    shm: ShmConn,
}

/// `DIRECTNFS_SQLITE_TRACE=1`: every VFS call on stderr with its time.
fn tracing_on() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("DIRECTNFS_SQLITE_TRACE").is_some())
}

/// Prints `op` and how long it took, when tracing.
struct Trace<'a> {
    op: &'static str,
    what: &'a str,
    arg: i64,
    start: Option<std::time::Instant>,
}

impl<'a> Trace<'a> {
    fn new(op: &'static str, what: &'a str, arg: i64) -> Self {
        let start = tracing_on().then(std::time::Instant::now);
        Trace {
            op,
            what,
            arg,
            start,
        }
    }
}

impl Drop for Trace<'_> {
    fn drop(&mut self) {
        if let Some(start) = self.start {
            eprintln!(
                "directnfs-sqlite: {:>14} {:>10} {:8.3} ms  {}",
                self.op,
                self.arg,
                start.elapsed().as_secs_f64() * 1e3,
                self.what
            );
        }
    }
}

/// Runs an entry point body; a panic becomes `on_panic` plus a message.
fn fallible(on_panic: c_int, body: impl FnOnce() -> c_int) -> c_int {
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
fn io_error(code: c_int, what: &str, e: &Error) -> c_int {
    let errno = e.errno();
    set_last_error(errno, &format!("{what}: {e}"));
    report(code, &format!("{what}: {e}"));
    if errno == libc::ENOSPC || errno == libc::EDQUOT {
        SQLITE_FULL
    } else {
        code
    }
}

fn lock_error(e: LockError) -> c_int {
    match e {
        LockError::Busy(msg) => {
            // Not logged: the busy handler retries, often many times.
            set_last_error(libc::EBUSY, &msg);
            SQLITE_BUSY
        }
        LockError::Io(code, msg) => {
            set_last_error(libc::EIO, &msg);
            report(code, &msg);
            code
        }
    }
}

/// The connection behind a file.
///
/// # Safety
/// `f` is a file opened by [`x_open`] on the NFS path (its methods are
/// ours), used by one thread at a time as SQLite guarantees.
unsafe fn conn<'a>(f: *mut sqlite3_file) -> Option<&'a mut Conn> {
    // SAFETY: per the contract, f points to a DnfsFile whose conn is NULL
    // or a live Box<Conn> owned by it.
    unsafe { (*f.cast::<DnfsFile>()).conn.as_mut() }
}

/// C string argument; None if NULL or not UTF-8.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string valid for the call.
unsafe fn c_str<'a>(p: *const c_char) -> Option<&'a str> {
    if p.is_null() {
        return None;
    }
    // SAFETY: per the contract.
    unsafe { CStr::from_ptr(p) }.to_str().ok()
}

// ---------------------------------------------------------------------
// sqlite3_vfs methods

/// xOpen. "If xOpen fails, pMethods must be NULL" — set only on success.
/// A NULL name asks for a temporary file: it goes to the OS VFS, in our
/// storage (szOsFile covers both), which then owns the methods.
unsafe extern "C" fn x_open(
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

fn open_conn(name: &str, flags: c_int) -> Result<Conn, Error> {
    let r = names::resolve(name)?;
    let writable = flags & SQLITE_OPEN_READONLY == 0;
    let create = writable && flags & SQLITE_OPEN_CREATE != 0;
    let opts = OpenOptions {
        create,
        create_new: create && flags & SQLITE_OPEN_EXCLUSIVE != 0,
        truncate: false,
        mode: Some(0o644),
    };
    let client = &r.mount.client;
    let (file, fileid) = names::fresh(client, &r.path, || {
        let file = client.open_with(&r.path, opts)?;
        let fileid = if flags & SQLITE_OPEN_MAIN_DB != 0 {
            file.metadata()?.fileid
        } else {
            0
        };
        Ok((file, fileid))
    })?;
    let inode = if flags & SQLITE_OPEN_MAIN_DB != 0 {
        let key = InodeKey {
            mount: r.mount.key.clone(),
            fileid,
        };
        Some(inode_for(key, &r.mount.client, &r.path, name))
    } else {
        None
    };
    Ok(Conn {
        file,
        _mount: Arc::clone(&r.mount),
        path: r.path,
        name: name.to_string(),
        delete_on_close: flags & SQLITE_OPEN_DELETEONCLOSE != 0,
        lock: SQLITE_LOCK_NONE,
        inode,
        shm: ShmConn::default(),
    })
}

/// xDelete. `syncDir` needs nothing: NFSv3 REMOVE is committed to stable
/// storage on the server before it replies (RFC 1813 §3.3.12).
unsafe extern "C" fn x_delete(_vfs: *mut sqlite3_vfs, zname: *const c_char, _sync: c_int) -> c_int {
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
unsafe extern "C" fn x_access(
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
unsafe extern "C" fn x_full_pathname(
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

/// The OS VFS, for the xDl* methods.
fn os_vfs() -> Option<(*mut sqlite3_vfs, &'static sqlite3_vfs)> {
    let p = OS_VFS.load(Ordering::Acquire);
    // SAFETY: NULL or a registered, static VFS.
    unsafe { p.as_ref() }.map(|v| (p, v))
}

unsafe extern "C" fn x_dl_open(_vfs: *mut sqlite3_vfs, name: *const c_char) -> *mut c_void {
    match os_vfs().and_then(|(p, v)| v.xDlOpen.map(|f| (p, f))) {
        // SAFETY: forwarding SQLite's arguments to the OS VFS.
        Some((p, f)) => unsafe { f(p, name) },
        None => std::ptr::null_mut(),
    }
}

unsafe extern "C" fn x_dl_error(_vfs: *mut sqlite3_vfs, n: c_int, msg: *mut c_char) {
    if let Some((p, f)) = os_vfs().and_then(|(p, v)| v.xDlError.map(|f| (p, f))) {
        // SAFETY: forwarding SQLite's arguments to the OS VFS.
        unsafe { f(p, n, msg) }
    }
}

unsafe extern "C" fn x_dl_sym(
    _vfs: *mut sqlite3_vfs,
    h: *mut c_void,
    sym: *const c_char,
) -> Option<unsafe extern "C" fn()> {
    let (p, f) = os_vfs().and_then(|(p, v)| v.xDlSym.map(|f| (p, f)))?;
    // SAFETY: forwarding SQLite's arguments to the OS VFS.
    unsafe { f(p, h, sym) }
}

unsafe extern "C" fn x_dl_close(_vfs: *mut sqlite3_vfs, h: *mut c_void) {
    if let Some((p, f)) = os_vfs().and_then(|(p, v)| v.xDlClose.map(|f| (p, f))) {
        // SAFETY: forwarding SQLite's arguments to the OS VFS.
        unsafe { f(p, h) }
    }
}

/// xRandomness: from the kernel.
unsafe extern "C" fn x_randomness(_vfs: *mut sqlite3_vfs, n: c_int, out: *mut c_char) -> c_int {
    let n = usize::try_from(n).unwrap_or(0);
    if n == 0 || out.is_null() {
        return 0;
    }
    // SAFETY: out has n writable bytes (SQLite's contract).
    let got = unsafe { libc::getrandom(out.cast(), n, 0) };
    got.max(0) as c_int
}

/// xSleep: microseconds; returns the time slept.
unsafe extern "C" fn x_sleep(_vfs: *mut sqlite3_vfs, micros: c_int) -> c_int {
    let us = u64::try_from(micros).unwrap_or(0);
    std::thread::sleep(Duration::from_micros(us));
    micros
}

/// Julian day number of the Unix epoch, in milliseconds.
const UNIX_EPOCH_JD_MS: i64 = 210_866_760_000_000;

fn now_jd_ms() -> i64 {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    UNIX_EPOCH_JD_MS + ms
}

/// xCurrentTime: Julian day as a double.
unsafe extern "C" fn x_current_time(_vfs: *mut sqlite3_vfs, out: *mut f64) -> c_int {
    // SAFETY: out is a valid double pointer (SQLite's contract).
    unsafe { *out = now_jd_ms() as f64 / 86_400_000.0 };
    SQLITE_OK
}

/// xCurrentTimeInt64: Julian day in milliseconds.
unsafe extern "C" fn x_current_time_int64(_vfs: *mut sqlite3_vfs, out: *mut i64) -> c_int {
    // SAFETY: out is a valid int64 pointer (SQLite's contract).
    unsafe { *out = now_jd_ms() };
    SQLITE_OK
}

/// xGetLastError: this thread's last message and errno.
unsafe extern "C" fn x_get_last_error(_vfs: *mut sqlite3_vfs, n: c_int, out: *mut c_char) -> c_int {
    let (errno, msg) = crate::last_error();
    let cap = usize::try_from(n).unwrap_or(0);
    if cap > 0 && !out.is_null() {
        let len = msg.len().min(cap - 1);
        // SAFETY: out has cap writable bytes and len + 1 <= cap.
        unsafe {
            std::ptr::copy_nonoverlapping(msg.as_ptr(), out.cast::<u8>(), len);
            *out.add(len) = 0;
        }
    }
    errno
}

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

// ---------------------------------------------------------------------
// sqlite3_io_methods

/// Version 2: the xShm* methods (WAL) but no xFetch (no mmap over NFS).
static IO_METHODS: sqlite3_io_methods = sqlite3_io_methods {
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
unsafe extern "C" fn x_close(f: *mut sqlite3_file) -> c_int {
    fallible(SQLITE_IOERR_CLOSE, || {
        // SAFETY: f is one of our files; we take back the Box we made in
        // x_open and clear the pointer so a second close is harmless.
        let boxed = unsafe {
            let df = f.cast::<DnfsFile>();
            let p = std::mem::replace(&mut (*df).conn, std::ptr::null_mut());
            if p.is_null() {
                return SQLITE_OK;
            }
            Box::from_raw(p)
        };
        let mut c = *boxed;
        let mut rc = SQLITE_OK;
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
unsafe extern "C" fn x_read(f: *mut sqlite3_file, buf: *mut c_void, amt: c_int, off: i64) -> c_int {
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
        let mut done = 0;
        while done < amt {
            match c.file.read_at(&mut out[done..], off + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) => return io_error(SQLITE_IOERR_READ, &format!("read {}", c.name), &e),
            }
        }
        if done < amt {
            out[done..].fill(0);
            return SQLITE_IOERR_SHORT_READ;
        }
        SQLITE_OK
    })
}

/// xWrite: all or an error. Durable on return in FILE_SYNC mode.
unsafe extern "C" fn x_write(
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
        match c.file.write_at(data, off) {
            Ok(_) => SQLITE_OK,
            Err(e) => io_error(SQLITE_IOERR_WRITE, &format!("write {}", c.name), &e),
        }
    })
}

unsafe extern "C" fn x_truncate(f: *mut sqlite3_file, size: i64) -> c_int {
    fallible(SQLITE_IOERR_TRUNCATE, || {
        // SAFETY: our file, one thread at a time.
        let Some(c) = (unsafe { conn(f) }) else {
            return SQLITE_IOERR_TRUNCATE;
        };
        let _t = Trace::new("xTruncate", &c.name, size);
        let Some(size) = offset(size) else {
            return SQLITE_IOERR_TRUNCATE;
        };
        match c.file.set_len(size) {
            Ok(()) => SQLITE_OK,
            Err(e) => io_error(SQLITE_IOERR_TRUNCATE, &format!("truncate {}", c.name), &e),
        }
    })
}

/// xSync = File::fsync: nothing to do for FILE_SYNC writes (durable when
/// acknowledged), COMMIT (and resend after a server restart) in unstable
/// mode. The same for every sync flag: there is no cheaper "data only".
unsafe extern "C" fn x_sync(f: *mut sqlite3_file, _flags: c_int) -> c_int {
    fallible(SQLITE_IOERR_FSYNC, || {
        // SAFETY: our file, one thread at a time.
        let Some(c) = (unsafe { conn(f) }) else {
            return SQLITE_IOERR_FSYNC;
        };
        let _t = Trace::new("xSync", &c.name, 0);
        match c.file.fsync() {
            Ok(()) => SQLITE_OK,
            Err(e) => io_error(SQLITE_IOERR_FSYNC, &format!("fsync {}", c.name), &e),
        }
    })
}

/// xFileSize: from the server every time (no attribute cache: another
/// process may have changed it while we held no lock).
unsafe extern "C" fn x_file_size(f: *mut sqlite3_file, out: *mut i64) -> c_int {
    fallible(SQLITE_IOERR_FSTAT, || {
        // SAFETY: our file, one thread at a time.
        let Some(c) = (unsafe { conn(f) }) else {
            return SQLITE_IOERR_FSTAT;
        };
        let _t = Trace::new("xFileSize", &c.name, 0);
        match c.file.metadata() {
            Ok(m) => {
                // SAFETY: out is a valid int64 pointer (SQLite's contract).
                unsafe { *out = i64::try_from(m.size).unwrap_or(i64::MAX) };
                SQLITE_OK
            }
            Err(e) => io_error(SQLITE_IOERR_FSTAT, &format!("stat {}", c.name), &e),
        }
    })
}

unsafe extern "C" fn x_lock(f: *mut sqlite3_file, level: c_int) -> c_int {
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

unsafe extern "C" fn x_unlock(f: *mut sqlite3_file, level: c_int) -> c_int {
    fallible(SQLITE_IOERR_UNLOCK, || {
        // SAFETY: our file, one thread at a time.
        let Some(c) = (unsafe { conn(f) }) else {
            return SQLITE_IOERR_UNLOCK;
        };
        let _t = Trace::new("xUnlock", &c.name, level as i64);
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

unsafe extern "C" fn x_check_reserved_lock(f: *mut sqlite3_file, out: *mut c_int) -> c_int {
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

/// xFileControl: LOCKSTATE and VFSNAME; everything else is NOTFOUND ("VFS
/// implementations should return SQLITE_NOTFOUND for file control opcodes
/// that they do not recognize").
unsafe extern "C" fn x_file_control(f: *mut sqlite3_file, op: c_int, arg: *mut c_void) -> c_int {
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
unsafe extern "C" fn x_sector_size(_f: *mut sqlite3_file) -> c_int {
    4096
}

/// POWERSAFE_OVERWRITE: a write changes only the bytes written, as on any
/// server file system. Not SEQUENTIAL or ATOMIC: unstable mode reorders
/// until fsync, and a WRITE larger than the transfer size is several RPCs.
unsafe extern "C" fn x_device_characteristics(_f: *mut sqlite3_file) -> c_int {
    SQLITE_IOCAP_POWERSAFE_OVERWRITE
}

unsafe extern "C" fn x_shm_map(
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

unsafe extern "C" fn x_shm_lock(f: *mut sqlite3_file, off: c_int, n: c_int, flags: c_int) -> c_int {
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

/// xShmBarrier: a full memory fence (the memory is in this process).
unsafe extern "C" fn x_shm_barrier(_f: *mut sqlite3_file) {
    fence(Ordering::SeqCst);
}

unsafe extern "C" fn x_shm_unmap(f: *mut sqlite3_file, _delete: c_int) -> c_int {
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

#[cfg(test)]
mod tests {
    //! The C contract of each method, called the way SQLite calls them,
    //! against the server of `DNFS_TEST_URL` (skipped when unset).

    use super::*;
    use std::ffi::CString;

    fn base_url(test: &str) -> Option<String> {
        match std::env::var("DNFS_TEST_URL") {
            Ok(u) if !u.is_empty() => Some(u),
            _ => {
                assert!(
                    std::env::var_os("DNFS_TEST_REQUIRE_SERVER").is_none(),
                    "{test}: DNFS_TEST_REQUIRE_SERVER is set but DNFS_TEST_URL is not"
                );
                eprintln!("SKIPPED {test}: DNFS_TEST_URL is not set");
                None
            }
        }
    }

    fn name_in(base: &str, file: &str) -> CString {
        let (path, query) = base.split_once('?').unwrap_or((base, ""));
        let mut u = format!("{}/{file}", path.trim_end_matches('/'));
        if !query.is_empty() {
            u = format!("{u}?{query}");
        }
        CString::new(u).unwrap()
    }

    /// Room for one `sqlite3_file` of this VFS, aligned like SQLite's.
    #[repr(C, align(16))]
    struct Slot([u8; 256]);

    impl Slot {
        fn new() -> Box<Slot> {
            assert!(std::mem::size_of::<DnfsFile>() <= 256);
            Box::new(Slot([0; 256]))
        }
        fn file(&mut self) -> *mut sqlite3_file {
            self.0.as_mut_ptr().cast()
        }
    }

    const RW: c_int = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;

    fn open(name: &CString, flags: c_int) -> Box<Slot> {
        let mut slot = Slot::new();
        let mut out = 0;
        // SAFETY: a zeroed slot large enough for our file; a valid name.
        let rc = unsafe {
            x_open(
                std::ptr::null_mut(),
                name.as_ptr(),
                slot.file(),
                flags,
                &mut out,
            )
        };
        assert_eq!(rc, SQLITE_OK, "open {name:?}");
        slot
    }

    fn lockstate(f: *mut sqlite3_file) -> c_int {
        let mut level: c_int = -1;
        // SAFETY: LOCKSTATE writes one int.
        let rc =
            unsafe { x_file_control(f, SQLITE_FCNTL_LOCKSTATE, (&mut level as *mut c_int).cast()) };
        assert_eq!(rc, SQLITE_OK);
        level
    }

    fn exists(name: &CString) -> bool {
        let mut out = -1;
        // SAFETY: valid name and out pointer.
        let rc = unsafe { x_access(std::ptr::null_mut(), name.as_ptr(), 0, &mut out) };
        assert_eq!(rc, SQLITE_OK);
        out == 1
    }

    #[test]
    fn x_read_past_end_zero_fills_and_returns_short_read() {
        let Some(base) = base_url("x_read_short") else {
            return;
        };
        let name = name_in(&base, &format!("vfs-short-{}.tmp", std::process::id()));
        let mut slot = open(
            &name,
            RW | SQLITE_OPEN_DELETEONCLOSE | SQLITE_OPEN_MAIN_JOURNAL,
        );
        let f = slot.file();
        // SAFETY: f is an open file of this VFS; buffers are valid.
        unsafe {
            assert_eq!(x_write(f, b"hello".as_ptr().cast(), 5, 0), SQLITE_OK);
            let mut buf = [0xAAu8; 16];
            assert_eq!(
                x_read(f, buf.as_mut_ptr().cast(), 16, 0),
                SQLITE_IOERR_SHORT_READ
            );
            assert_eq!(&buf[..5], b"hello");
            assert!(
                buf[5..].iter().all(|&b| b == 0),
                "rest zero-filled: {buf:?}"
            );
            buf.fill(0xAA);
            assert_eq!(
                x_read(f, buf.as_mut_ptr().cast(), 16, 1000),
                SQLITE_IOERR_SHORT_READ
            );
            assert!(buf.iter().all(|&b| b == 0));
            assert_eq!(x_read(f, buf.as_mut_ptr().cast(), 5, 0), SQLITE_OK);
            let mut size = 0i64;
            assert_eq!(x_file_size(f, &mut size), SQLITE_OK);
            assert_eq!(size, 5);
            assert_eq!(x_truncate(f, 2), SQLITE_OK);
            assert_eq!(x_file_size(f, &mut size), SQLITE_OK);
            assert_eq!(size, 2);
            assert_eq!(x_sync(f, 2), SQLITE_OK);
            assert_eq!(x_close(f), SQLITE_OK);
        }
        assert!(!exists(&name), "DELETEONCLOSE removed the file");
    }

    #[test]
    fn lock_levels_follow_the_unix_vfs_rules() {
        let Some(base) = base_url("lock_levels") else {
            return;
        };
        let file = format!("vfs-locks-{}.db", std::process::id());
        let name = name_in(&base, &file);
        let lock_name = name_in(&base, &format!("{file}.dnfs-lock"));
        let (mut a, mut b, mut c) = (
            open(&name, RW | SQLITE_OPEN_MAIN_DB),
            open(&name, RW | SQLITE_OPEN_MAIN_DB),
            open(&name, RW | SQLITE_OPEN_MAIN_DB),
        );
        let (a, b, c) = (a.file(), b.file(), c.file());
        let mut reserved = -1;
        // SAFETY: open files of this VFS, used by this thread only.
        unsafe {
            assert_eq!(x_lock(a, SQLITE_LOCK_SHARED), SQLITE_OK);
            assert!(exists(&lock_name), "first SHARED takes the lock file");
            assert_eq!(x_lock(b, SQLITE_LOCK_SHARED), SQLITE_OK);
            assert_eq!(x_lock(a, SQLITE_LOCK_RESERVED), SQLITE_OK);
            assert_eq!(x_check_reserved_lock(b, &mut reserved), SQLITE_OK);
            assert_eq!(reserved, 1);
            assert_eq!(x_lock(b, SQLITE_LOCK_RESERVED), SQLITE_BUSY, "one RESERVED");
            // EXCLUSIVE waits for the other reader, as PENDING...
            assert_eq!(x_lock(a, SQLITE_LOCK_EXCLUSIVE), SQLITE_BUSY);
            assert_eq!(lockstate(a), SQLITE_LOCK_PENDING);
            // ...which keeps new readers out...
            assert_eq!(
                x_lock(c, SQLITE_LOCK_SHARED),
                SQLITE_BUSY,
                "PENDING blocks SHARED"
            );
            // ...until the reader leaves.
            assert_eq!(x_unlock(b, SQLITE_LOCK_NONE), SQLITE_OK);
            assert_eq!(x_lock(a, SQLITE_LOCK_EXCLUSIVE), SQLITE_OK);
            assert_eq!(lockstate(a), SQLITE_LOCK_EXCLUSIVE);
            assert_eq!(x_lock(c, SQLITE_LOCK_SHARED), SQLITE_BUSY);
            assert_eq!(x_unlock(a, SQLITE_LOCK_SHARED), SQLITE_OK);
            assert_eq!(x_check_reserved_lock(b, &mut reserved), SQLITE_OK);
            assert_eq!(reserved, 0);
            assert_eq!(x_lock(c, SQLITE_LOCK_SHARED), SQLITE_OK);
            assert_eq!(x_unlock(c, SQLITE_LOCK_NONE), SQLITE_OK);
            assert!(exists(&lock_name), "a still reads");
            assert_eq!(x_unlock(a, SQLITE_LOCK_NONE), SQLITE_OK);
            assert!(!exists(&lock_name), "last unlock removes the lock file");
            assert_eq!(x_close(a), SQLITE_OK);
            assert_eq!(x_close(b), SQLITE_OK);
            assert_eq!(x_close(c), SQLITE_OK);
            assert_eq!(x_delete(std::ptr::null_mut(), name.as_ptr(), 0), SQLITE_OK);
        }
    }

    #[test]
    fn shm_locks_exclude_as_sqlite_expects() {
        let Some(base) = base_url("shm_locks") else {
            return;
        };
        let file = format!("vfs-shm-{}.db", std::process::id());
        let name = name_in(&base, &file);
        let lock_name = name_in(&base, &format!("{file}.dnfs-lock"));
        let (mut sa, mut sb) = (
            open(&name, RW | SQLITE_OPEN_MAIN_DB),
            open(&name, RW | SQLITE_OPEN_MAIN_DB),
        );
        let (a, b) = (sa.file(), sb.file());
        let (sh, ex, un) = (
            SQLITE_SHM_LOCK | SQLITE_SHM_SHARED,
            SQLITE_SHM_LOCK | SQLITE_SHM_EXCLUSIVE,
            SQLITE_SHM_UNLOCK | SQLITE_SHM_SHARED,
        );
        let unx = SQLITE_SHM_UNLOCK | SQLITE_SHM_EXCLUSIVE;
        // SAFETY: open files of this VFS, used by this thread only.
        unsafe {
            let (mut pa, mut pb) = (std::ptr::null_mut(), std::ptr::null_mut());
            assert_eq!(x_shm_map(a, 0, 32768, 0, &mut pa), SQLITE_OK);
            assert!(pa.is_null(), "no region without extend");
            assert_eq!(x_shm_map(a, 0, 32768, 1, &mut pa), SQLITE_OK);
            assert_eq!(x_shm_map(b, 0, 32768, 1, &mut pb), SQLITE_OK);
            assert!(!pa.is_null() && pa == pb, "one region shared by both");
            *pa.cast::<u8>() = 42;
            x_shm_barrier(a);
            assert_eq!(*pb.cast::<u8>(), 42);
            assert!(exists(&lock_name), "mapped WAL-index holds the lock file");

            assert_eq!(x_shm_lock(a, 3, 1, sh), SQLITE_OK);
            assert_eq!(x_shm_lock(b, 3, 1, sh), SQLITE_OK);
            assert_eq!(x_shm_lock(b, 3, 1, ex), SQLITE_BUSY);
            assert_eq!(x_shm_lock(a, 3, 1, un), SQLITE_OK);
            assert_eq!(x_shm_lock(b, 3, 1, ex), SQLITE_OK, "sole reader upgrades");
            assert_eq!(x_shm_lock(a, 3, 1, sh), SQLITE_BUSY);
            assert_eq!(x_shm_lock(a, 0, 3, ex), SQLITE_OK);
            assert_eq!(x_shm_lock(b, 1, 1, ex), SQLITE_BUSY);
            assert_eq!(x_shm_lock(b, 2, 2, ex), SQLITE_BUSY, "all or nothing");
            assert_eq!(x_shm_lock(b, 4, 1, ex), SQLITE_OK, "slot 4 untouched");
            assert_eq!(x_shm_lock(a, 0, 3, unx), SQLITE_OK);
            assert_eq!(x_shm_lock(b, 1, 1, ex), SQLITE_OK);

            assert_eq!(x_shm_unmap(a, 0), SQLITE_OK);
            assert!(exists(&lock_name), "b still maps it");
            assert_eq!(x_shm_unmap(b, 0), SQLITE_OK);
            assert!(!exists(&lock_name), "lock file released with the last map");
            assert_eq!(x_close(a), SQLITE_OK);
            assert_eq!(x_close(b), SQLITE_OK);
            assert_eq!(x_delete(std::ptr::null_mut(), name.as_ptr(), 0), SQLITE_OK);
        }
    }

    #[test]
    fn full_pathname_refuses_local_paths_and_keeps_urls() {
        let url = c"nfs://127.0.0.1/export/db?nfsport=2049";
        let mut out = [0 as c_char; 256];
        // SAFETY: valid strings and buffer of the size passed.
        unsafe {
            assert_eq!(
                x_full_pathname(std::ptr::null_mut(), url.as_ptr(), 256, out.as_mut_ptr()),
                SQLITE_OK
            );
            assert_eq!(CStr::from_ptr(out.as_ptr()), url);
            assert_eq!(
                x_full_pathname(std::ptr::null_mut(), url.as_ptr(), 8, out.as_mut_ptr()),
                SQLITE_CANTOPEN,
                "too small a buffer"
            );
            let bad = c"nfs://";
            assert_ne!(
                x_full_pathname(std::ptr::null_mut(), bad.as_ptr(), 256, out.as_mut_ptr()),
                SQLITE_OK
            );
        }
    }

    #[test]
    fn current_time_is_the_julian_day() {
        let mut ms = 0i64;
        let mut day = 0f64;
        // SAFETY: valid out pointers.
        unsafe {
            assert_eq!(
                x_current_time_int64(std::ptr::null_mut(), &mut ms),
                SQLITE_OK
            );
            assert_eq!(x_current_time(std::ptr::null_mut(), &mut day), SQLITE_OK);
        }
        // 2020-01-01 is Julian day 2458849.5.
        assert!(day > 2_458_849.5 && day < 2_600_000.0, "{day}");
        assert!((ms as f64 / 86_400_000.0 - day).abs() < 0.01);
    }
}
