//! The slice of SQLite's C interface this extension uses, declared by hand
//! from `sqlite3.h` / `sqlite3ext.h` (public domain; both are stable ABI:
//! structures only grow at the end, constants never change).
//!
//! A loadable extension does not link libsqlite3: SQLite hands the entry
//! point a `sqlite3_api_routines*`, a table of function pointers, and the
//! extension calls through it (what `SQLITE_EXTENSION_INIT2` sets up in C).
//! All its members are function pointers, so we read it as an array and name
//! the few slots we call by index ([`api`]); a test checks the indexes
//! against the system's `sqlite3ext.h` when one is installed.

#![allow(non_camel_case_types, non_snake_case, dead_code)]

use std::ffi::{c_char, c_int, c_void};

pub type sqlite3_int64 = i64;

// Result codes (sqlite3.h "Result Codes" and "Extended Result Codes").
pub const SQLITE_OK: c_int = 0;
pub const SQLITE_ERROR: c_int = 1;
pub const SQLITE_PERM: c_int = 3;
pub const SQLITE_BUSY: c_int = 5;
pub const SQLITE_NOMEM: c_int = 7;
pub const SQLITE_READONLY: c_int = 8;
pub const SQLITE_IOERR: c_int = 10;
pub const SQLITE_NOTFOUND: c_int = 12;
pub const SQLITE_FULL: c_int = 13;
pub const SQLITE_CANTOPEN: c_int = 14;
pub const SQLITE_MISUSE: c_int = 21;
pub const SQLITE_NOTICE: c_int = 27;
pub const SQLITE_WARNING: c_int = 28;
pub const SQLITE_IOERR_READ: c_int = SQLITE_IOERR | (1 << 8);
pub const SQLITE_IOERR_SHORT_READ: c_int = SQLITE_IOERR | (2 << 8);
pub const SQLITE_IOERR_WRITE: c_int = SQLITE_IOERR | (3 << 8);
pub const SQLITE_IOERR_FSYNC: c_int = SQLITE_IOERR | (4 << 8);
pub const SQLITE_IOERR_TRUNCATE: c_int = SQLITE_IOERR | (6 << 8);
pub const SQLITE_IOERR_FSTAT: c_int = SQLITE_IOERR | (7 << 8);
pub const SQLITE_IOERR_UNLOCK: c_int = SQLITE_IOERR | (8 << 8);
pub const SQLITE_IOERR_RDLOCK: c_int = SQLITE_IOERR | (9 << 8);
pub const SQLITE_IOERR_DELETE: c_int = SQLITE_IOERR | (10 << 8);
pub const SQLITE_IOERR_NOMEM: c_int = SQLITE_IOERR | (12 << 8);
pub const SQLITE_IOERR_ACCESS: c_int = SQLITE_IOERR | (13 << 8);
pub const SQLITE_IOERR_CHECKRESERVEDLOCK: c_int = SQLITE_IOERR | (14 << 8);
pub const SQLITE_IOERR_LOCK: c_int = SQLITE_IOERR | (15 << 8);
pub const SQLITE_IOERR_CLOSE: c_int = SQLITE_IOERR | (16 << 8);
pub const SQLITE_IOERR_SHMOPEN: c_int = SQLITE_IOERR | (18 << 8);
pub const SQLITE_IOERR_SHMSIZE: c_int = SQLITE_IOERR | (19 << 8);
pub const SQLITE_IOERR_SHMLOCK: c_int = SQLITE_IOERR | (20 << 8);
pub const SQLITE_IOERR_SHMMAP: c_int = SQLITE_IOERR | (21 << 8);
pub const SQLITE_IOERR_DELETE_NOENT: c_int = SQLITE_IOERR | (23 << 8);
pub const SQLITE_CANTOPEN_FULLPATH: c_int = SQLITE_CANTOPEN | (3 << 8);
pub const SQLITE_OK_LOAD_PERMANENTLY: c_int = SQLITE_OK | (1 << 8);

// xOpen flags.
pub const SQLITE_OPEN_READONLY: c_int = 0x0000_0001;
pub const SQLITE_OPEN_READWRITE: c_int = 0x0000_0002;
pub const SQLITE_OPEN_CREATE: c_int = 0x0000_0004;
pub const SQLITE_OPEN_DELETEONCLOSE: c_int = 0x0000_0008;
pub const SQLITE_OPEN_EXCLUSIVE: c_int = 0x0000_0010;
pub const SQLITE_OPEN_MAIN_DB: c_int = 0x0000_0100;
pub const SQLITE_OPEN_TEMP_DB: c_int = 0x0000_0200;
pub const SQLITE_OPEN_TRANSIENT_DB: c_int = 0x0000_0400;
pub const SQLITE_OPEN_MAIN_JOURNAL: c_int = 0x0000_0800;
pub const SQLITE_OPEN_TEMP_JOURNAL: c_int = 0x0000_1000;
pub const SQLITE_OPEN_SUBJOURNAL: c_int = 0x0000_2000;
pub const SQLITE_OPEN_SUPER_JOURNAL: c_int = 0x0000_4000;
pub const SQLITE_OPEN_WAL: c_int = 0x0008_0000;

// Lock levels.
pub const SQLITE_LOCK_NONE: c_int = 0;
pub const SQLITE_LOCK_SHARED: c_int = 1;
pub const SQLITE_LOCK_RESERVED: c_int = 2;
pub const SQLITE_LOCK_PENDING: c_int = 3;
pub const SQLITE_LOCK_EXCLUSIVE: c_int = 4;

// xAccess flags.
pub const SQLITE_ACCESS_EXISTS: c_int = 0;
pub const SQLITE_ACCESS_READWRITE: c_int = 1;
pub const SQLITE_ACCESS_READ: c_int = 2;

// xShmLock flags.
pub const SQLITE_SHM_UNLOCK: c_int = 1;
pub const SQLITE_SHM_LOCK: c_int = 2;
pub const SQLITE_SHM_SHARED: c_int = 4;
pub const SQLITE_SHM_EXCLUSIVE: c_int = 8;
pub const SQLITE_SHM_NLOCK: usize = 8;

// Device characteristics.
pub const SQLITE_IOCAP_SEQUENTIAL: c_int = 0x0000_0400;
pub const SQLITE_IOCAP_POWERSAFE_OVERWRITE: c_int = 0x0000_1000;

// File controls.
pub const SQLITE_FCNTL_LOCKSTATE: c_int = 1;
pub const SQLITE_FCNTL_SIZE_HINT: c_int = 5;
pub const SQLITE_FCNTL_CHUNK_SIZE: c_int = 6;
pub const SQLITE_FCNTL_VFSNAME: c_int = 12;
pub const SQLITE_FCNTL_PRAGMA: c_int = 14;
pub const SQLITE_FCNTL_HAS_MOVED: c_int = 20;

/// `struct sqlite3_file`: the base every VFS file extends.
#[repr(C)]
#[derive(Debug)]
pub struct sqlite3_file {
    pub pMethods: *const sqlite3_io_methods,
}

pub type XClose = unsafe extern "C" fn(*mut sqlite3_file) -> c_int;

/// `struct sqlite3_io_methods` (versions 1-3).
#[repr(C)]
#[derive(Debug)]
pub struct sqlite3_io_methods {
    pub iVersion: c_int,
    pub xClose: Option<XClose>,
    pub xRead:
        Option<unsafe extern "C" fn(*mut sqlite3_file, *mut c_void, c_int, sqlite3_int64) -> c_int>,
    pub xWrite: Option<
        unsafe extern "C" fn(*mut sqlite3_file, *const c_void, c_int, sqlite3_int64) -> c_int,
    >,
    pub xTruncate: Option<unsafe extern "C" fn(*mut sqlite3_file, sqlite3_int64) -> c_int>,
    pub xSync: Option<unsafe extern "C" fn(*mut sqlite3_file, c_int) -> c_int>,
    pub xFileSize: Option<unsafe extern "C" fn(*mut sqlite3_file, *mut sqlite3_int64) -> c_int>,
    pub xLock: Option<unsafe extern "C" fn(*mut sqlite3_file, c_int) -> c_int>,
    pub xUnlock: Option<unsafe extern "C" fn(*mut sqlite3_file, c_int) -> c_int>,
    pub xCheckReservedLock: Option<unsafe extern "C" fn(*mut sqlite3_file, *mut c_int) -> c_int>,
    pub xFileControl: Option<unsafe extern "C" fn(*mut sqlite3_file, c_int, *mut c_void) -> c_int>,
    pub xSectorSize: Option<unsafe extern "C" fn(*mut sqlite3_file) -> c_int>,
    pub xDeviceCharacteristics: Option<unsafe extern "C" fn(*mut sqlite3_file) -> c_int>,
    pub xShmMap: Option<
        unsafe extern "C" fn(*mut sqlite3_file, c_int, c_int, c_int, *mut *mut c_void) -> c_int,
    >,
    pub xShmLock: Option<unsafe extern "C" fn(*mut sqlite3_file, c_int, c_int, c_int) -> c_int>,
    pub xShmBarrier: Option<unsafe extern "C" fn(*mut sqlite3_file)>,
    pub xShmUnmap: Option<unsafe extern "C" fn(*mut sqlite3_file, c_int) -> c_int>,
    pub xFetch: Option<
        unsafe extern "C" fn(*mut sqlite3_file, sqlite3_int64, c_int, *mut *mut c_void) -> c_int,
    >,
    pub xUnfetch:
        Option<unsafe extern "C" fn(*mut sqlite3_file, sqlite3_int64, *mut c_void) -> c_int>,
}

/// `struct sqlite3_vfs` (versions 1-3).
#[repr(C)]
#[derive(Debug)]
pub struct sqlite3_vfs {
    pub iVersion: c_int,
    pub szOsFile: c_int,
    pub mxPathname: c_int,
    pub pNext: *mut sqlite3_vfs,
    pub zName: *const c_char,
    pub pAppData: *mut c_void,
    pub xOpen: Option<
        unsafe extern "C" fn(
            *mut sqlite3_vfs,
            *const c_char,
            *mut sqlite3_file,
            c_int,
            *mut c_int,
        ) -> c_int,
    >,
    pub xDelete: Option<unsafe extern "C" fn(*mut sqlite3_vfs, *const c_char, c_int) -> c_int>,
    pub xAccess:
        Option<unsafe extern "C" fn(*mut sqlite3_vfs, *const c_char, c_int, *mut c_int) -> c_int>,
    pub xFullPathname:
        Option<unsafe extern "C" fn(*mut sqlite3_vfs, *const c_char, c_int, *mut c_char) -> c_int>,
    pub xDlOpen: Option<unsafe extern "C" fn(*mut sqlite3_vfs, *const c_char) -> *mut c_void>,
    pub xDlError: Option<unsafe extern "C" fn(*mut sqlite3_vfs, c_int, *mut c_char)>,
    pub xDlSym: Option<
        unsafe extern "C" fn(
            *mut sqlite3_vfs,
            *mut c_void,
            *const c_char,
        ) -> Option<unsafe extern "C" fn()>,
    >,
    pub xDlClose: Option<unsafe extern "C" fn(*mut sqlite3_vfs, *mut c_void)>,
    pub xRandomness: Option<unsafe extern "C" fn(*mut sqlite3_vfs, c_int, *mut c_char) -> c_int>,
    pub xSleep: Option<unsafe extern "C" fn(*mut sqlite3_vfs, c_int) -> c_int>,
    pub xCurrentTime: Option<unsafe extern "C" fn(*mut sqlite3_vfs, *mut f64) -> c_int>,
    pub xGetLastError: Option<unsafe extern "C" fn(*mut sqlite3_vfs, c_int, *mut c_char) -> c_int>,
    pub xCurrentTimeInt64:
        Option<unsafe extern "C" fn(*mut sqlite3_vfs, *mut sqlite3_int64) -> c_int>,
    pub xSetSystemCall: Option<unsafe extern "C" fn()>,
    pub xGetSystemCall: Option<unsafe extern "C" fn()>,
    pub xNextSystemCall: Option<unsafe extern "C" fn()>,
}

/// Opaque `sqlite3` connection and `sqlite3_api_routines`.
#[derive(Debug)]
pub enum sqlite3 {}
#[derive(Debug)]
pub enum sqlite3_api_routines {}

/// Slots of `struct sqlite3_api_routines` we call, by position (all
/// members are function pointers). Checked against `sqlite3ext.h` by
/// `api_indexes_match_sqlite3ext_h`.
pub mod api {
    pub const FREE: usize = 58;
    pub const MALLOC: usize = 68;
    pub const MPRINTF: usize = 69;
    pub const VFS_FIND: usize = 141;
    pub const VFS_REGISTER: usize = 142;
    pub const LOG: usize = 167;
    pub const LIBVERSION_NUMBER: usize = 67;

    /// (slot, member name in sqlite3ext.h).
    pub const ALL: &[(usize, &str)] = &[
        (FREE, "free"),
        (MALLOC, "malloc"),
        (MPRINTF, "mprintf"),
        (VFS_FIND, "vfs_find"),
        (VFS_REGISTER, "vfs_register"),
        (LOG, "log"),
        (LIBVERSION_NUMBER, "libversion_number"),
    ];
}

pub type VfsFindFn = unsafe extern "C" fn(*const c_char) -> *mut sqlite3_vfs;
pub type VfsRegisterFn = unsafe extern "C" fn(*mut sqlite3_vfs, c_int) -> c_int;
pub type LogFn = unsafe extern "C" fn(c_int, *const c_char, ...);
pub type MprintfFn = unsafe extern "C" fn(*const c_char, ...) -> *mut c_char;
pub type MallocFn = unsafe extern "C" fn(c_int) -> *mut c_void;
pub type LibversionNumberFn = unsafe extern "C" fn() -> c_int;

/// The routines SQLite passed to the entry point.
#[derive(Debug, Clone, Copy)]
pub struct Api {
    table: *const *const c_void,
}

// SAFETY: the table is SQLite's static, read-only array of function
// pointers, valid for the life of the process once the library is loaded.
unsafe impl Send for Api {}
// SAFETY: as above; it is never written.
unsafe impl Sync for Api {}

impl Api {
    /// # Safety
    /// `routines` is the non-NULL pointer SQLite passed to the entry point.
    pub unsafe fn new(routines: *const sqlite3_api_routines) -> Self {
        Api {
            table: routines.cast(),
        }
    }

    /// The function pointer in `slot`, or None if SQLite left it NULL.
    fn slot(&self, slot: usize) -> Option<*const c_void> {
        // SAFETY: every slot we name exists in every SQLite 3.x new enough
        // to load this extension (the table only grows; checked at init
        // against libversion_number).
        let p = unsafe { *self.table.add(slot) };
        (!p.is_null()).then_some(p)
    }

    pub fn vfs_find(&self) -> Option<VfsFindFn> {
        // SAFETY: the slot holds sqlite3_vfs_find, of this type.
        self.slot(api::VFS_FIND)
            .map(|p| unsafe { std::mem::transmute::<*const c_void, VfsFindFn>(p) })
    }

    pub fn vfs_register(&self) -> Option<VfsRegisterFn> {
        // SAFETY: the slot holds sqlite3_vfs_register, of this type.
        self.slot(api::VFS_REGISTER)
            .map(|p| unsafe { std::mem::transmute::<*const c_void, VfsRegisterFn>(p) })
    }

    pub fn log(&self) -> Option<LogFn> {
        // SAFETY: the slot holds sqlite3_log, of this type.
        self.slot(api::LOG)
            .map(|p| unsafe { std::mem::transmute::<*const c_void, LogFn>(p) })
    }

    pub fn mprintf(&self) -> Option<MprintfFn> {
        // SAFETY: the slot holds sqlite3_mprintf, of this type.
        self.slot(api::MPRINTF)
            .map(|p| unsafe { std::mem::transmute::<*const c_void, MprintfFn>(p) })
    }

    pub fn malloc(&self) -> Option<MallocFn> {
        // SAFETY: the slot holds sqlite3_malloc, of this type.
        self.slot(api::MALLOC)
            .map(|p| unsafe { std::mem::transmute::<*const c_void, MallocFn>(p) })
    }

    pub fn libversion_number(&self) -> Option<LibversionNumberFn> {
        // SAFETY: the slot holds sqlite3_libversion_number, of this type.
        self.slot(api::LIBVERSION_NUMBER)
            .map(|p| unsafe { std::mem::transmute::<*const c_void, LibversionNumberFn>(p) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Member names of `struct sqlite3_api_routines`, in order.
    fn members(header: &str) -> Vec<String> {
        let start = header
            .find("struct sqlite3_api_routines {")
            .expect("struct in header");
        let body = &header[start..];
        let body = &body[body.find('{').unwrap() + 1..body.find("\n};").unwrap()];
        // Drop comments.
        let mut text = String::new();
        let mut rest = body;
        while let Some(i) = rest.find("/*") {
            text.push_str(&rest[..i]);
            rest = &rest[i + 2..];
            rest = &rest[rest.find("*/").map(|j| j + 2).unwrap_or(rest.len())..];
        }
        text.push_str(rest);
        text.split(';')
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(|d| {
                let i = d.find("(*").expect("function pointer member");
                let name = &d[i + 2..];
                name[..name.find(')').unwrap()].trim().to_string()
            })
            .collect()
    }

    #[test]
    fn api_indexes_match_sqlite3ext_h() {
        let Ok(header) = std::fs::read_to_string("/usr/include/sqlite3ext.h") else {
            // scripts/test.sh installs it: a failure there, a skip said
            // loudly elsewhere.
            directnfs_testkit::server::cannot_check(
                "api_indexes_match_sqlite3ext_h",
                "/usr/include/sqlite3ext.h not installed (libsqlite3-dev)",
            );
            return;
        };
        let names = members(&header);
        assert!(names.len() > 200, "parsed {} members", names.len());
        for (slot, name) in api::ALL {
            assert_eq!(&names[*slot], name, "slot {slot}");
        }
    }

    #[test]
    fn struct_sizes_are_those_of_the_c_structs() {
        let p = std::mem::size_of::<usize>();
        assert_eq!(std::mem::size_of::<sqlite3_io_methods>(), 19 * p);
        assert_eq!(std::mem::size_of::<sqlite3_vfs>(), 4 + 4 + 4 + 4 + 19 * p);
    }
}
