//! Attributes and names: `dnfs_stat`, `dnfs_fstat`, `dnfs_statfs`,
//! `dnfs_unlink`, `dnfs_mkdir`, `dnfs_rmdir`, `dnfs_rename`,
//! `dnfs_readdir`, and the C structs they fill.

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::time::{SystemTime, UNIX_EPOCH};

use dnfs::{Client, FileType, Metadata};

use crate::client::{cstring, DnfsClient, OpStats};
use crate::ffi::{arg_str, ffi_try, Failure};
use crate::file::DnfsFile;
use crate::owner::arg_own;

const DNFS_TYPE_FILE: u32 = 1;
const DNFS_TYPE_DIR: u32 = 2;
const DNFS_TYPE_SYMLINK: u32 = 3;
const DNFS_TYPE_OTHER: u32 = 4;

/// `struct dnfs_stat` (layout pinned by a test and by test_capi.c).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct DnfsStat {
    pub size: u64,
    pub used: u64,
    pub fileid: u64,
    pub mode: u32,
    pub type_: u32,
    pub uid: u32,
    pub gid: u32,
    pub nlink: u32,
    pub reserved: u32,
    pub atime_sec: i64,
    pub atime_nsec: i64,
    pub mtime_sec: i64,
    pub mtime_nsec: i64,
    pub ctime_sec: i64,
    pub ctime_nsec: i64,
}

/// `struct dnfs_statfs` (layout pinned by a test and by test_capi.c).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct DnfsStatfs {
    pub total_bytes: u64,
    pub free_bytes: u64,
    pub avail_bytes: u64,
    pub total_files: u64,
    pub free_files: u64,
    pub avail_files: u64,
}

impl From<&dnfs::FsStat> for DnfsStatfs {
    fn from(f: &dnfs::FsStat) -> Self {
        DnfsStatfs {
            total_bytes: f.total_bytes,
            free_bytes: f.free_bytes,
            avail_bytes: f.avail_bytes,
            total_files: f.total_files,
            free_files: f.free_files,
            avail_files: f.avail_files,
        }
    }
}

/// `struct dnfs_dirent`.
#[repr(C)]
#[derive(Debug)]
pub struct DnfsDirent {
    pub name: *const c_char,
    pub fileid: u64,
    pub has_stat: c_int,
    pub st: DnfsStat,
}

/// `dnfs_readdir_cb`.
pub type DnfsReaddirCb = Option<unsafe extern "C" fn(*mut c_void, *const DnfsDirent) -> c_int>;

fn split_time(t: SystemTime) -> (i64, i64) {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => (d.as_secs() as i64, d.subsec_nanos() as i64),
        Err(e) => {
            let d = e.duration();
            (-(d.as_secs() as i64), -(d.subsec_nanos() as i64))
        }
    }
}

impl From<&Metadata> for DnfsStat {
    fn from(m: &Metadata) -> Self {
        let (type_, ifmt) = match m.file_type {
            FileType::File => (DNFS_TYPE_FILE, libc::S_IFREG),
            FileType::Dir => (DNFS_TYPE_DIR, libc::S_IFDIR),
            FileType::Symlink => (DNFS_TYPE_SYMLINK, libc::S_IFLNK),
            _ => (DNFS_TYPE_OTHER, 0),
        };
        let (atime_sec, atime_nsec) = split_time(m.atime);
        let (mtime_sec, mtime_nsec) = split_time(m.mtime);
        let (ctime_sec, ctime_nsec) = split_time(m.ctime);
        DnfsStat {
            size: m.size,
            used: m.used,
            fileid: m.fileid,
            mode: ifmt | (m.mode & 0o7777),
            type_,
            uid: m.uid,
            gid: m.gid,
            nlink: m.nlink,
            reserved: 0,
            atime_sec,
            atime_nsec,
            mtime_sec,
            mtime_nsec,
            ctime_sec,
            ctime_nsec,
        }
    }
}

/// See `dnfs_fstat` in directnfs.h.
#[no_mangle]
pub unsafe extern "C" fn dnfs_fstat(file: *mut DnfsFile, st: *mut DnfsStat) -> c_int {
    ffi_try(|| {
        // SAFETY: NULL or a live file (header contract).
        let f = unsafe { arg_own(file, "file") }?;
        if st.is_null() {
            return Err(Failure::invalid("st is NULL"));
        }
        OpStats::add(&f.stats.metadata_ops, 1);
        let m = f.stats.check(f.file.metadata())?;
        // SAFETY: st is non-NULL and points to a writable dnfs_stat.
        unsafe { st.write(DnfsStat::from(&m)) };
        Ok(0)
    })
}

/// See `dnfs_stat` in directnfs.h.
#[no_mangle]
pub unsafe extern "C" fn dnfs_stat(
    client: *mut DnfsClient,
    path: *const c_char,
    st: *mut DnfsStat,
) -> c_int {
    ffi_try(|| {
        // SAFETY: NULL or a live client (header contract).
        let c = unsafe { arg_own(client, "client") }?;
        // SAFETY: a C string valid for this call.
        let path = unsafe { arg_str(path, "path") }?;
        if st.is_null() {
            return Err(Failure::invalid("st is NULL"));
        }
        OpStats::add(&c.stats.metadata_ops, 1);
        let path = c.path(path);
        let m = c.stats.check(dnfs::retry_stale(&c.client, &path, || {
            c.client.metadata(&path)
        }))?;
        // SAFETY: st is non-NULL and points to a writable dnfs_stat.
        unsafe { st.write(DnfsStat::from(&m)) };
        Ok(0)
    })
}

/// See `dnfs_statfs` in directnfs.h.
#[no_mangle]
pub unsafe extern "C" fn dnfs_statfs(client: *mut DnfsClient, st: *mut DnfsStatfs) -> c_int {
    ffi_try(|| {
        // SAFETY: NULL or a live client (header contract).
        let c = unsafe { arg_own(client, "client") }?;
        if st.is_null() {
            return Err(Failure::invalid("st is NULL"));
        }
        OpStats::add(&c.stats.metadata_ops, 1);
        let f = c.stats.check(c.client.fsstat())?;
        // SAFETY: st is non-NULL and points to a writable dnfs_statfs.
        unsafe { st.write(DnfsStatfs::from(&f)) };
        Ok(0)
    })
}

/// Runs a namespace operation on one path.
unsafe fn path_op(
    client: *mut DnfsClient,
    path: *const c_char,
    op: impl Fn(&Client, &str) -> dnfs::Result<()>,
) -> c_int {
    ffi_try(|| {
        // SAFETY: NULL or a live client (header contract).
        let c = unsafe { arg_own(client, "client") }?;
        // SAFETY: a C string valid for this call.
        let path = unsafe { arg_str(path, "path") }?;
        OpStats::add(&c.stats.metadata_ops, 1);
        let path = c.path(path);
        c.stats
            .check(dnfs::retry_stale(&c.client, &path, || op(&c.client, &path)))?;
        Ok(0)
    })
}

/// See `dnfs_unlink` in directnfs.h.
#[no_mangle]
pub unsafe extern "C" fn dnfs_unlink(client: *mut DnfsClient, path: *const c_char) -> c_int {
    // SAFETY: arguments passed through under the same contract.
    unsafe { path_op(client, path, |c, p| c.remove(p)) }
}

/// See `dnfs_mkdir` in directnfs.h.
#[no_mangle]
pub unsafe extern "C" fn dnfs_mkdir(
    client: *mut DnfsClient,
    path: *const c_char,
    mode: c_uint,
) -> c_int {
    // As dnfs_open: 0 asks for the default, no umask is applied.
    let mode = if mode == 0 { 0o755 } else { mode & 0o7777 };
    // SAFETY: arguments passed through under the same contract.
    unsafe { path_op(client, path, |c, p| c.mkdir_mode(p, mode)) }
}

/// See `dnfs_rmdir` in directnfs.h.
#[no_mangle]
pub unsafe extern "C" fn dnfs_rmdir(client: *mut DnfsClient, path: *const c_char) -> c_int {
    // SAFETY: arguments passed through under the same contract.
    unsafe { path_op(client, path, |c, p| c.rmdir(p)) }
}

/// See `dnfs_rename` in directnfs.h.
#[no_mangle]
pub unsafe extern "C" fn dnfs_rename(
    client: *mut DnfsClient,
    from: *const c_char,
    to: *const c_char,
) -> c_int {
    ffi_try(|| {
        // SAFETY: NULL or a live client (header contract).
        let c = unsafe { arg_own(client, "client") }?;
        // SAFETY: C strings valid for this call.
        let (from, to) = unsafe { (arg_str(from, "from")?, arg_str(to, "to")?) };
        OpStats::add(&c.stats.metadata_ops, 1);
        c.stats.check(c.client.rename(&c.path(from), &c.path(to)))?;
        Ok(0)
    })
}

/// See `dnfs_readdir` in directnfs.h.
#[no_mangle]
pub unsafe extern "C" fn dnfs_readdir(
    client: *mut DnfsClient,
    path: *const c_char,
    cb: DnfsReaddirCb,
    ctx: *mut c_void,
) -> c_int {
    ffi_try(|| {
        // SAFETY: NULL or a live client (header contract).
        let c = unsafe { arg_own(client, "client") }?;
        // SAFETY: a C string valid for this call.
        let path = unsafe { arg_str(path, "path") }?;
        let cb = cb.ok_or_else(|| Failure::invalid("callback is NULL"))?;
        OpStats::add(&c.stats.metadata_ops, 1);
        let path = c.path(path);
        let entries = c.stats.check(dnfs::retry_stale(&c.client, &path, || {
            c.client.read_dir(&path)
        }))?;
        for e in entries {
            let name = cstring(&e.name);
            let st = e.metadata.as_ref().map(DnfsStat::from);
            let entry = DnfsDirent {
                name: name.as_ptr(),
                fileid: e.fileid,
                has_stat: c_int::from(st.is_some()),
                st: st.unwrap_or_default(),
            };
            // SAFETY: a C function pointer given by the caller; `entry`
            // and the name it points to live until after the call.
            let rc = unsafe { cb(ctx, &entry) };
            if rc != 0 {
                return Ok(rc);
            }
        }
        Ok(0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::DnfsCompletion;

    #[test]
    fn statfs_struct_layout_matches_the_header() {
        assert_eq!(std::mem::size_of::<DnfsStatfs>(), 48);
        assert_eq!(std::mem::align_of::<DnfsStatfs>(), 8);
    }

    #[test]
    fn stat_struct_layout_matches_the_header() {
        assert_eq!(std::mem::size_of::<DnfsStat>(), 96);
        assert_eq!(std::mem::offset_of!(DnfsStat, atime_sec), 48);
        assert_eq!(std::mem::size_of::<DnfsCompletion>(), 16);
    }
}
