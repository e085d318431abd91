//! The C contract of each method, called the way SQLite calls them,
//! against the server of `DNFS_TEST_URL` (skipped when unset).

use std::ffi::{c_char, c_int, CStr, CString};

use super::conn::DnfsFile;
use super::file_methods::*;
use super::lock_methods::*;
use super::os::*;
use super::shm_methods::*;
use super::vfs_methods::*;
use crate::sys::*;
use directnfs_testkit::server::url as base_url;

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

/// Waits up to 2 s for `name` to be gone: an unused process-wide lock is
/// kept for [`crate::linger::period`] (5 ms), then released by the linger
/// thread.
fn gone_soon(name: &CString) -> bool {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while exists(name) {
        if std::time::Instant::now() >= until {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    true
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
        assert!(
            gone_soon(&lock_name),
            "the lock file goes once the last unlock's linger has passed"
        );
        assert_linger_thread_blocks_signals();
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
        assert!(
            gone_soon(&lock_name),
            "lock file released once the last map's linger has passed"
        );
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

/// The linger thread (started by a lingering lock) takes none of the
/// program's signals: a process-directed SIGURG, SIGCHLD, SIGUSR1 or
/// SIGALRM meant for the host must reach the host's own threads.
fn assert_linger_thread_blocks_signals() {
    // Thread names are cut to 15 bytes.
    let linger = directnfs_testkit::threads::named("dnfs-sqlite-lin");
    assert!(
        !linger.is_empty(),
        "a lingering lock started the linger thread"
    );
    for t in linger {
        for sig in [
            libc::SIGURG,
            libc::SIGCHLD,
            libc::SIGUSR1,
            libc::SIGALRM,
            libc::SIGTERM,
        ] {
            assert!(t.blocks(sig), "the linger thread takes signal {sig}");
        }
    }
}

#[test]
fn journals_and_the_wal_are_the_log_class_and_the_database_is_data() {
    use super::conn::io_class_of;
    use dnfs::IoClass;
    assert_eq!(io_class_of(SQLITE_OPEN_MAIN_JOURNAL), IoClass::Log);
    assert_eq!(io_class_of(SQLITE_OPEN_SUPER_JOURNAL), IoClass::Log);
    assert_eq!(
        io_class_of(SQLITE_OPEN_WAL | SQLITE_OPEN_CREATE),
        IoClass::Log
    );
    assert_eq!(io_class_of(SQLITE_OPEN_MAIN_DB), IoClass::Data);
    assert_eq!(io_class_of(SQLITE_OPEN_TEMP_JOURNAL), IoClass::Data);
}
