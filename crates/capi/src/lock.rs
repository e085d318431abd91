//! Byte-range locks of an open file (`dnfs_lock`, `dnfs_trylock`,
//! `dnfs_unlock` in directnfs.h): the client's `File::lock`, `try_lock`
//! and `unlock`, which are NFSv4.1 LOCK and LOCKU (RFC 8881 §9). On
//! NFSv3 they fail with ENOTSUP (the client's `Unsupported` error: NFSv3
//! would need the separate NLM protocol).

use std::ffi::c_int;

use crate::ffi::{ffi_try, Failure, FfiResult};
use crate::file::{offset_arg, DnfsFile};
use crate::owner::arg_own;

/// See `dnfs_lock` in directnfs.h.
#[no_mangle]
pub unsafe extern "C" fn dnfs_lock(
    file: *mut DnfsFile,
    offset: i64,
    len: i64,
    exclusive: c_int,
) -> c_int {
    // SAFETY: passed on under the header's contract.
    unsafe { lock(file, offset, len, exclusive, true) }
}

/// See `dnfs_trylock` in directnfs.h.
#[no_mangle]
pub unsafe extern "C" fn dnfs_trylock(
    file: *mut DnfsFile,
    offset: i64,
    len: i64,
    exclusive: c_int,
) -> c_int {
    // SAFETY: passed on under the header's contract.
    unsafe { lock(file, offset, len, exclusive, false) }
}

/// `dnfs_lock` (`wait`) or `dnfs_trylock`.
///
/// # Safety
/// `file` is NULL or a live `dnfs_file` (the header's contract).
unsafe fn lock(file: *mut DnfsFile, offset: i64, len: i64, exclusive: c_int, wait: bool) -> c_int {
    ffi_try(|| {
        // SAFETY: NULL or a live file, per this function's contract.
        let f = unsafe { arg_own(file, "file") }?;
        let (offset, len) = range(offset, len)?;
        if wait {
            f.file.lock(offset, len, exclusive != 0)?;
        } else {
            f.file.try_lock(offset, len, exclusive != 0)?;
        }
        Ok(0)
    })
}

/// See `dnfs_unlock` in directnfs.h.
#[no_mangle]
pub unsafe extern "C" fn dnfs_unlock(file: *mut DnfsFile, offset: i64, len: i64) -> c_int {
    ffi_try(|| {
        // SAFETY: NULL or a live file (header contract).
        let f = unsafe { arg_own(file, "file") }?;
        let (offset, len) = range(offset, len)?;
        f.file.unlock(offset, len)?;
        Ok(0)
    })
}

/// A range from C: neither part negative (EINVAL); `len` 0 means to the
/// end of the file.
fn range(offset: i64, len: i64) -> FfiResult<(u64, u64)> {
    let offset = offset_arg(offset)?;
    let len = u64::try_from(len).map_err(|_| Failure::invalid(format!("negative length {len}")))?;
    Ok((offset, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_offsets_and_lengths_are_einval() {
        assert_eq!(range(-1, 0).unwrap_err().errno, libc::EINVAL);
        assert_eq!(range(0, -5).unwrap_err().errno, libc::EINVAL);
        assert_eq!(range(7, 0).unwrap(), (7, 0));
    }

    #[test]
    fn a_null_file_is_einval() {
        // SAFETY: NULL is allowed by the header's contract.
        unsafe {
            assert_eq!(dnfs_lock(std::ptr::null_mut(), 0, 0, 1), -libc::EINVAL);
            assert_eq!(dnfs_trylock(std::ptr::null_mut(), 0, 0, 0), -libc::EINVAL);
            assert_eq!(dnfs_unlock(std::ptr::null_mut(), 0, 0), -libc::EINVAL);
        }
    }
}
