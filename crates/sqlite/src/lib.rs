//! # directnfs SQLite VFS
//!
//! A SQLite loadable extension, `libdirectnfs_sqlite.so`, that registers a
//! VFS named `directnfs`: SQLite's database, journal and WAL files are
//! read and written by the in-process directnfs client, straight to an
//! NFSv3 server (or NFSv4.1: `vers=4.1` in the URL), without a kernel
//! mount.
//!
//! ```text
//! sqlite> .load target/release/libdirectnfs_sqlite
//! sqlite> .open --vfs directnfs nfs://127.0.0.1/export/app.db?nfsport=2049&mountport=20048
//! sqlite> .open --vfs directnfs /db/oradata/app.db        -- under a dnfstab mount: prefix
//! ```
//!
//! `.load` needs no entry point: SQLite derives `sqlite3_directnfssqlite_init`
//! from the file name (the letters after `lib`, up to the first dot); the
//! same function is also exported as `sqlite3_directnfs_init`. It returns
//! `SQLITE_OK_LOAD_PERMANENTLY`, so the library stays loaded after the
//! connection that loaded it closes. With `DIRECTNFS_SQLITE_DEFAULT=1` in
//! the environment at load time, `directnfs` also becomes the default VFS.
//!
//! Database names: an `nfs://host[:port]/export/path?options` URL, or a path
//! under a `mount:` prefix of the dnfstab ($DIRECTNFS_TAB, ./dnfstab,
//! /etc/dnfstab). Anything else is refused (SQLITE_CANTOPEN, with the
//! reason in `sqlite3_log` and xGetLastError). Temporary files (no name)
//! go to the default OS VFS, i.e. the local temp directory.
//!
//! ## Locking: what is supported, and how it is enforced
//!
//! * **Connections and threads of one process**: full SQLite semantics.
//!   A per-file lock table (`lock::Inode`, the unix VFS's inode table)
//!   implements SHARED / RESERVED / PENDING / EXCLUSIVE across all of the
//!   process's connections, so readers and writers in threads are correct
//!   in every journal mode, and WAL readers run concurrently with a writer.
//! * **Other processes and other hosts**: safe, by a lock file. While any
//!   connection of a process holds SHARED or more, the process owns
//!   `<db>.dnfs-lock`: a symbolic link made by one NFS SYMLINK, whose
//!   content is its owner (host, pid, process start time, nonce). Taking
//!   the lock and recording its owner are thus one atomic step on the
//!   server (SQLite's unix-dotfile scheme, without its window between
//!   creating the file and writing it); it is removed when the last lock
//!   is released. A second process gets SQLITE_BUSY ("database is
//!   locked"; the busy handler / `busy_timeout` waits) until then. So
//!   processes take turns transaction by transaction: readers of two
//!   processes do not overlap (this is coarser than POSIX locks, but never
//!   unsafe), and a hot journal left by a crash is rolled back by the next
//!   process that reads.
//! * **On NFSv4.1** the same process-wide lock is a byte-range LOCK on the
//!   database file (SQLite's lock bytes, exclusive; `rangelock`) and no
//!   lock file is made: the server enforces it between hosts, and keeps
//!   the lock of a process that died until the next process of its user
//!   on its host starts, else until its client's lease expires (other
//!   processes get SQLITE_BUSY until then; nothing to break by hand).
//! * **Stale lock files** (NFSv3): one left by a dead process of THIS host is
//!   broken automatically, with a warning naming it (see `dotlock`); one
//!   of another host is not (its owner's liveness cannot be known): a
//!   process waiting for it reports the owner and the lock file
//!   (`sqlite3_log` with SQLITE_BUSY, and stderr with
//!   `DIRECTNFS_SQLITE_VERBOSE`); once that host is gone for good,
//!   `dnfs sqlite-unlock DB --host-gone HOST` removes it ([`unlock`]). A lock file that names no owner
//!   (left by an older directnfs killed while taking it) is broken once
//!   unchanged for 10 s.
//! * **WAL**: the WAL-index ("-shm") lives in the memory of the process
//!   (an NFS server cannot give processes shared memory). So a WAL database
//!   is used by one process at a time, enforced: the process keeps its
//!   lock for as long as any of its connections has the WAL-index mapped,
//!   and other processes get SQLITE_BUSY until the last such connection
//!   closes. `PRAGMA locking_mode=EXCLUSIVE` (set before `journal_mode=WAL`)
//!   needs no WAL-index at all and is the cheapest mode for a single user.
//! * Journal modes DELETE, TRUNCATE, PERSIST and WAL are supported (and
//!   MEMORY / OFF as SQLite implements them, with their usual caveats).
//!
//! ## Durability
//!
//! xWrite is a FILE_SYNC write by default: durable when it returns, so
//! xSync has nothing left to do. With `stable=unstable` (URL or dnfstab)
//! writes are UNSTABLE and xSync is the COMMIT that makes them durable
//! ([`dnfs::File::fsync`]); write-behind is then on by default
//! (`write_behind=`, 8 MiB per file, `0` = off): xWrite returns once the
//! data is sent, xSync waits for every write in flight before its COMMIT
//! and reports a write that failed, xUnlock waits for them (the next lock
//! holder reads them), xFileSize asks only after them, and xClose reports
//! a failure no xSync reported. Directory syncs are no-ops: NFSv3 CREATE,
//! REMOVE and RENAME are committed by the server before it replies.
//!
//! ## What SQLite's NFS warnings still mean here
//!
//! SQLite warns that network file systems have broken POSIX advisory locks
//! and caching. Neither applies: locking never uses fcntl/NLM (lock
//! table + symbolic-link lock file, or NFSv4.1's own LOCK), and no cache
//! can go stale: xFileSize asks the server, and the only data kept is the
//! mirror of what this process wrote and read while it holds the database
//! (`mirror`: no other process can change the files meanwhile; emptied
//! when the lock is taken or released, `DIRECTNFS_SQLITE_MIRROR_MIB`
//! bounds it, 0 turns it off). What
//! still applies: the lock file protects only programs that use this VFS —
//! a program opening the same file through a kernel NFS mount or another
//! client ignores it (on NFSv4.1, one that locks SQLite's lock bytes
//! through the server does not); a stale lock of a crashed remote host
//! needs a human on NFSv3 and lasts until its lease expires on NFSv4.1;
//! and a network outage stalls (hard mount, the default) or fails (soft)
//! I/O instead of giving wrong data.
//!
//! ## What this VFS leaves out
//!
//! No memory-mapped I/O (xFetch/xUnfetch: iVersion 2), no
//! SQLITE_FCNTL_PERSIST_WAL/POWERSAFE toggles, xAccess does not check
//! permissions (NFS checks them per operation), and the mode of created
//! files is 0644.
//!
//! ## Why Rust with hand-declared SQLite types
//!
//! A loadable extension calls SQLite only through the routine table it is
//! given, so no libsqlite3 is linked and no C compiler or `sqlite3ext.h`
//! is needed to build; [`sys`] declares the few structures and slots used
//! (checked against `sqlite3ext.h` by a test).

#![allow(clippy::missing_safety_doc)]

mod dotlock;
mod forked;
mod linger;
mod lock;
mod mirror;
mod names;
mod rangelock;
pub mod sys;
mod test_hooks;
pub mod unlock;
mod vfs;

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::{Mutex, OnceLock};

use sys::*;

static API: OnceLock<Api> = OnceLock::new();
static REGISTER: Mutex<bool> = Mutex::new(false);

/// SQLite's routine table, once an entry point ran.
pub(crate) fn api() -> Option<&'static Api> {
    API.get()
}

thread_local! {
    static LAST_ERROR: RefCell<(c_int, String)> = const { RefCell::new((0, String::new())) };
}

/// Remembers this thread's last failure for xGetLastError.
pub(crate) fn set_last_error(errno: i32, msg: &str) {
    let _ = LAST_ERROR.try_with(|e| {
        if let Ok(mut e) = e.try_borrow_mut() {
            *e = (errno, msg.to_string());
        }
    });
}

pub(crate) fn last_error() -> (c_int, String) {
    LAST_ERROR
        .try_with(|e| e.try_borrow().map(|e| e.clone()).unwrap_or_default())
        .unwrap_or_default()
}

/// Sends a message to the application's SQLite error log
/// (`sqlite3_config(SQLITE_CONFIG_LOG)`), and to stderr when
/// `DIRECTNFS_SQLITE_VERBOSE` is set.
pub(crate) fn report(code: c_int, msg: &str) {
    if std::env::var_os("DIRECTNFS_SQLITE_VERBOSE").is_some() {
        eprintln!("directnfs-sqlite: {msg}");
    }
    let Some(log) = api().and_then(|a| a.log()) else {
        return;
    };
    let text = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    // SAFETY: sqlite3_log with a "%s" format and one C string argument.
    unsafe { log(code, c"%s".as_ptr(), text.as_ptr()) };
}

/// How often the same busy message is reported again while a lock stays
/// held by the same owner.
const BUSY_REPORT_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

/// The last busy message [`report_busy`] reported, and when.
static LAST_BUSY: Mutex<Option<(String, std::time::Instant)>> = Mutex::new(None);

/// [`report`]s, with SQLITE_BUSY, who holds a lock this process waits
/// for (the owner and the lock file on NFSv3): once per message, and
/// again every [`BUSY_REPORT_EVERY`] while it lasts, since the busy
/// handler asks many times a second.
pub(crate) fn report_busy(msg: &str) {
    let now = std::time::Instant::now();
    {
        let mut last = LAST_BUSY.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((m, at)) = last.as_ref() {
            if m == msg && now.duration_since(*at) < BUSY_REPORT_EVERY {
                return;
            }
        }
        *last = Some((msg.to_owned(), now));
    }
    report(SQLITE_BUSY, msg);
}

/// Registers the VFS (once per process). Returns an error message.
fn register(routines: *const sqlite3_api_routines) -> Result<(), String> {
    if routines.is_null() {
        return Err("directnfs: no sqlite3_api_routines (not loaded by SQLite?)".into());
    }
    crate::forked::install();
    // SAFETY: the pointer SQLite passed to the entry point.
    let api = *API.get_or_init(|| unsafe { Api::new(routines) });
    let version = api.libversion_number().map_or(0, |f| {
        // SAFETY: sqlite3_libversion_number takes no arguments.
        unsafe { f() }
    });
    if version < 3_007_000 {
        return Err(format!(
            "directnfs: SQLite {version} is too old (3.7.0 or later needed)"
        ));
    }
    let (Some(find), Some(reg)) = (api.vfs_find(), api.vfs_register()) else {
        return Err("directnfs: SQLite lacks sqlite3_vfs_find/register".into());
    };
    let mut done = REGISTER.lock().unwrap_or_else(|p| p.into_inner());
    if *done {
        return Ok(());
    }
    // SAFETY: sqlite3_vfs_find with a C string or NULL (the default).
    let os = unsafe {
        let unix = find(c"unix".as_ptr());
        if unix.is_null() {
            find(std::ptr::null())
        } else {
            unix
        }
    };
    vfs::OS_VFS.store(os, Ordering::Release);
    let vfs = vfs::make_vfs(os);
    let make_default = std::env::var("DIRECTNFS_SQLITE_DEFAULT").is_ok_and(|v| v == "1");
    // SAFETY: vfs is a leaked, fully initialised sqlite3_vfs that lives for
    // the rest of the process, as SQLite requires.
    let rc = unsafe { reg(vfs, c_int::from(make_default)) };
    if rc != SQLITE_OK {
        return Err(format!("directnfs: sqlite3_vfs_register failed ({rc})"));
    }
    *done = true;
    Ok(())
}

/// The entry point SQLite derives from the file name
/// `libdirectnfs_sqlite.so`: `sqlite3_` + the letters of
/// `directnfs_sqlite` + `_init`.
#[no_mangle]
pub unsafe extern "C" fn sqlite3_directnfssqlite_init(
    _db: *mut sqlite3,
    err: *mut *mut c_char,
    routines: *const sqlite3_api_routines,
) -> c_int {
    let result = catch_unwind(AssertUnwindSafe(|| register(routines)))
        .unwrap_or_else(|_| Err("directnfs: internal error during registration".into()));
    match result {
        // Stay loaded: the VFS must outlive the connection that loaded it.
        Ok(()) => SQLITE_OK_LOAD_PERMANENTLY,
        Err(msg) => {
            if !err.is_null() {
                if let Some(mprintf) = api().and_then(|a| a.mprintf()) {
                    let text = CString::new(msg).unwrap_or_default();
                    // SAFETY: SQLite frees *err with sqlite3_free; mprintf
                    // allocates with its allocator.
                    unsafe { *err = mprintf(c"%s".as_ptr(), text.as_ptr()) };
                }
            }
            SQLITE_ERROR
        }
    }
}

/// The same entry point under the extension's short name, for
/// `.load libdirectnfs_sqlite sqlite3_directnfs_init` or static use.
#[no_mangle]
pub unsafe extern "C" fn sqlite3_directnfs_init(
    db: *mut sqlite3,
    err: *mut *mut c_char,
    routines: *const sqlite3_api_routines,
) -> c_int {
    // SAFETY: same contract.
    unsafe { sqlite3_directnfssqlite_init(db, err, routines) }
}
