//! The `sqlite3_vfs` methods that need no server: dynamic loading
//! forwarded to the OS VFS, randomness, sleep, the clock and the last
//! error of this thread.

use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicPtr, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::sys::*;

/// The VFS SQLite had as default when we registered ("unix"): temporary
/// files (NULL names) and xDl* go there.
pub static OS_VFS: AtomicPtr<sqlite3_vfs> = AtomicPtr::new(std::ptr::null_mut());

/// The OS VFS, for the xDl* methods.
fn os_vfs() -> Option<(*mut sqlite3_vfs, &'static sqlite3_vfs)> {
    let p = OS_VFS.load(Ordering::Acquire);
    // SAFETY: NULL or a registered, static VFS.
    unsafe { p.as_ref() }.map(|v| (p, v))
}

pub(super) unsafe extern "C" fn x_dl_open(
    _vfs: *mut sqlite3_vfs,
    name: *const c_char,
) -> *mut c_void {
    match os_vfs().and_then(|(p, v)| v.xDlOpen.map(|f| (p, f))) {
        // SAFETY: forwarding SQLite's arguments to the OS VFS.
        Some((p, f)) => unsafe { f(p, name) },
        None => std::ptr::null_mut(),
    }
}

pub(super) unsafe extern "C" fn x_dl_error(_vfs: *mut sqlite3_vfs, n: c_int, msg: *mut c_char) {
    if let Some((p, f)) = os_vfs().and_then(|(p, v)| v.xDlError.map(|f| (p, f))) {
        // SAFETY: forwarding SQLite's arguments to the OS VFS.
        unsafe { f(p, n, msg) }
    }
}

pub(super) unsafe extern "C" fn x_dl_sym(
    _vfs: *mut sqlite3_vfs,
    h: *mut c_void,
    sym: *const c_char,
) -> Option<unsafe extern "C" fn()> {
    let (p, f) = os_vfs().and_then(|(p, v)| v.xDlSym.map(|f| (p, f)))?;
    // SAFETY: forwarding SQLite's arguments to the OS VFS.
    unsafe { f(p, h, sym) }
}

pub(super) unsafe extern "C" fn x_dl_close(_vfs: *mut sqlite3_vfs, h: *mut c_void) {
    if let Some((p, f)) = os_vfs().and_then(|(p, v)| v.xDlClose.map(|f| (p, f))) {
        // SAFETY: forwarding SQLite's arguments to the OS VFS.
        unsafe { f(p, h) }
    }
}

/// xRandomness: from the kernel.
pub(super) unsafe extern "C" fn x_randomness(
    _vfs: *mut sqlite3_vfs,
    n: c_int,
    out: *mut c_char,
) -> c_int {
    let n = usize::try_from(n).unwrap_or(0);
    if n == 0 || out.is_null() {
        return 0;
    }
    // SAFETY: out has n writable bytes (SQLite's contract).
    let got = unsafe { libc::getrandom(out.cast(), n, 0) };
    got.max(0) as c_int
}

/// xSleep: microseconds; returns the time slept.
pub(super) unsafe extern "C" fn x_sleep(_vfs: *mut sqlite3_vfs, micros: c_int) -> c_int {
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
pub(super) unsafe extern "C" fn x_current_time(_vfs: *mut sqlite3_vfs, out: *mut f64) -> c_int {
    // SAFETY: out is a valid double pointer (SQLite's contract).
    unsafe { *out = now_jd_ms() as f64 / 86_400_000.0 };
    SQLITE_OK
}

/// xCurrentTimeInt64: Julian day in milliseconds.
pub(super) unsafe extern "C" fn x_current_time_int64(
    _vfs: *mut sqlite3_vfs,
    out: *mut i64,
) -> c_int {
    // SAFETY: out is a valid int64 pointer (SQLite's contract).
    unsafe { *out = now_jd_ms() };
    SQLITE_OK
}

/// xGetLastError: this thread's last message and errno.
pub(super) unsafe extern "C" fn x_get_last_error(
    _vfs: *mut sqlite3_vfs,
    n: c_int,
    out: *mut c_char,
) -> c_int {
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
