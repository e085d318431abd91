//! Files: `dnfs_open`, `dnfs_close`, `dnfs_pread`, `dnfs_pwrite`,
//! `dnfs_fsync`, `dnfs_ftruncate`.

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::Arc;

use dnfs::{File, OpenOptions};

use crate::client::{DnfsClient, OpStats};
use crate::ffi::{arg_str, ffi_try, Failure, FfiResult};
use crate::owner::arg_own;

/// `dnfs_open` flags; the values are ours, not the platform's `O_*`.
pub const DNFS_O_CREAT: c_int = 0x1;
/// Exclusive create.
pub const DNFS_O_EXCL: c_int = 0x2;
/// Truncate on open.
pub const DNFS_O_TRUNC: c_int = 0x4;

/// `dnfs_file`: an open file.
#[derive(Debug)]
pub struct DnfsFile {
    pub(crate) file: File,
    /// The process it belongs to (`owner.rs`).
    pub(crate) generation: u64,
    pub(crate) client_id: u64,
    pub(crate) stats: Arc<OpStats>,
}

impl crate::owner::Owned for DnfsFile {
    fn generation(&self) -> u64 {
        self.generation
    }
}

pub(crate) fn offset_arg(offset: i64) -> FfiResult<u64> {
    u64::try_from(offset).map_err(|_| Failure::invalid(format!("negative offset {offset}")))
}

pub(crate) fn len_arg(len: usize) -> FfiResult<usize> {
    if len > isize::MAX as usize {
        return Err(Failure::invalid(format!("length {len} exceeds SSIZE_MAX")));
    }
    Ok(len)
}

/// See `dnfs_open` in directnfs.h.
#[no_mangle]
pub unsafe extern "C" fn dnfs_open(
    client: *mut DnfsClient,
    path: *const c_char,
    flags: c_int,
    mode: c_uint,
) -> *mut DnfsFile {
    ffi_try(|| {
        // SAFETY: NULL or a live client (header contract).
        let c = unsafe { arg_own(client, "client") }?;
        // SAFETY: a C string valid for this call.
        let path = unsafe { arg_str(path, "path") }?;
        if flags & !(DNFS_O_CREAT | DNFS_O_EXCL | DNFS_O_TRUNC) != 0 {
            return Err(Failure::invalid(format!(
                "dnfs_open: unknown flags {flags:#x} (use DNFS_O_*)"
            )));
        }
        let create = flags & DNFS_O_CREAT != 0;
        let excl = flags & DNFS_O_EXCL != 0;
        if excl && !create {
            return Err(Failure::invalid("DNFS_O_EXCL without DNFS_O_CREAT"));
        }
        let opts = OpenOptions {
            create,
            create_new: excl,
            truncate: flags & DNFS_O_TRUNC != 0,
            mode: Some(if mode == 0 { 0o644 } else { mode & 0o7777 }),
        };
        OpStats::add(&c.stats.metadata_ops, 1);
        let path = c.path(path);
        let file = c.stats.check(dnfs::retry_stale(&c.client, &path, || {
            c.client.open_with(&path, opts)
        }))?;
        Ok(Box::into_raw(Box::new(DnfsFile {
            generation: c.generation,
            file,
            client_id: c.id,
            stats: Arc::clone(&c.stats),
        })))
    })
}

/// See `dnfs_close` in directnfs.h.
#[no_mangle]
pub unsafe extern "C" fn dnfs_close(file: *mut DnfsFile) -> c_int {
    ffi_try(|| {
        if !file.is_null() {
            // The parent's, in the child of a fork: left alone.
            // SAFETY: live until closed, per the header.
            crate::owner::check(unsafe { &*file }, "file")?;
            // SAFETY: created by Box::into_raw in dnfs_open, closed once.
            let f = unsafe { Box::from_raw(file) };
            // Write-behind (unstable mode): the WRITEs in flight are
            // waited for, and an error of one not yet reported by
            // dnfs_fsync is reported here, as close(2) on an NFS file
            // does. The file is closed either way.
            f.stats.check(f.file.flush_write_behind())?;
        }
        Ok(0)
    })
}

/// See `dnfs_pread` in directnfs.h.
#[no_mangle]
pub unsafe extern "C" fn dnfs_pread(
    file: *mut DnfsFile,
    buf: *mut c_void,
    len: usize,
    offset: i64,
) -> isize {
    ffi_try(|| {
        // SAFETY: NULL or a live file (header contract).
        let f = unsafe { arg_own(file, "file") }?;
        let len = len_arg(len)?;
        let offset = offset_arg(offset)?;
        if len == 0 {
            return Ok(0);
        }
        if buf.is_null() {
            return Err(Failure::invalid("buf is NULL"));
        }
        // SAFETY: buf is valid for writes of len bytes for this call
        // (header contract); len <= isize::MAX was checked.
        let slice = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), len) };
        let n = f.stats.check(f.file.read_at(slice, offset))?;
        OpStats::add(&f.stats.reads, 1);
        OpStats::add(&f.stats.bytes_read, n as u64);
        Ok(n as isize)
    })
}

/// See `dnfs_pwrite` in directnfs.h.
#[no_mangle]
pub unsafe extern "C" fn dnfs_pwrite(
    file: *mut DnfsFile,
    buf: *const c_void,
    len: usize,
    offset: i64,
) -> isize {
    ffi_try(|| {
        // SAFETY: NULL or a live file (header contract).
        let f = unsafe { arg_own(file, "file") }?;
        let len = len_arg(len)?;
        let offset = offset_arg(offset)?;
        if len == 0 {
            return Ok(0);
        }
        if buf.is_null() {
            return Err(Failure::invalid("buf is NULL"));
        }
        // SAFETY: buf is valid for reads of len bytes for this call
        // (header contract); len <= isize::MAX was checked.
        let slice = unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), len) };
        let n = f.stats.check(f.file.write_at(slice, offset))?;
        OpStats::add(&f.stats.writes, 1);
        OpStats::add(&f.stats.bytes_written, n as u64);
        Ok(n as isize)
    })
}

/// See `dnfs_fsync` in directnfs.h.
#[no_mangle]
pub unsafe extern "C" fn dnfs_fsync(file: *mut DnfsFile) -> c_int {
    ffi_try(|| {
        // SAFETY: NULL or a live file (header contract).
        let f = unsafe { arg_own(file, "file") }?;
        OpStats::add(&f.stats.fsyncs, 1);
        f.stats.check(f.file.fsync())?;
        Ok(0)
    })
}

/// `DNFS_IO_LOG` in directnfs.h.
pub const DNFS_IO_LOG: c_int = 0;
/// `DNFS_IO_DATA` in directnfs.h.
pub const DNFS_IO_DATA: c_int = 1;
/// `DNFS_IO_BULK` in directnfs.h.
pub const DNFS_IO_BULK: c_int = 2;

/// See `dnfs_set_io_class` in directnfs.h.
#[no_mangle]
pub unsafe extern "C" fn dnfs_set_io_class(file: *mut DnfsFile, io_class: c_int) -> c_int {
    ffi_try(|| {
        // SAFETY: NULL or a live file (header contract).
        let f = unsafe { arg_own(file, "file") }?;
        let class = match io_class {
            DNFS_IO_LOG => dnfs::IoClass::Log,
            DNFS_IO_DATA => dnfs::IoClass::Data,
            DNFS_IO_BULK => dnfs::IoClass::Bulk,
            _ => return Err(Failure::invalid("unknown I/O class")),
        };
        f.file.set_io_class(class);
        Ok(0)
    })
}

/// See `dnfs_ftruncate` in directnfs.h.
#[no_mangle]
pub unsafe extern "C" fn dnfs_ftruncate(file: *mut DnfsFile, size: i64) -> c_int {
    ffi_try(|| {
        // SAFETY: NULL or a live file (header contract).
        let f = unsafe { arg_own(file, "file") }?;
        let size = u64::try_from(size).map_err(|_| Failure::invalid("negative size"))?;
        OpStats::add(&f.stats.metadata_ops, 1);
        f.stats.check(f.file.set_len(size))?;
        Ok(0)
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn header_flags_match() {
        let h = include_str!("../../../include/directnfs.h");
        assert!(h.contains("#define DNFS_O_CREAT 0x1"));
        assert!(h.contains("#define DNFS_O_EXCL 0x2"));
        assert!(h.contains("#define DNFS_O_TRUNC 0x4"));
        assert!(h.contains("#define DNFS_IO_LOG 0 "));
        assert!(h.contains("#define DNFS_IO_DATA 1 "));
        assert!(h.contains("#define DNFS_IO_BULK 2 "));
    }
}
