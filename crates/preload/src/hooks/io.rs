//! `read`, `write` and their positional, vector and fortified forms,
//! `lseek`, `fsync`, sizes, `copy_file_range`, `sendfile`.

use libc::{c_char, c_int, c_uint, c_void, off64_t, off_t, size_t, ssize_t};

use super::{buf, buf_mut, chk_fail, on_path, st};
use crate::fail::{serve, serve_errnum, set_errno, Errno, Res};
use crate::fdtable::{self, Open};
use crate::links::local_first;
use crate::ops::io::{self as nfs, End};
use crate::ops::{meta, Out};
use crate::real;

#[no_mangle]
pub unsafe extern "C" fn read(fd: c_int, b: *mut c_void, n: size_t) -> ssize_t {
    let Some(open) = fdtable::get(fd) else {
        // SAFETY: plain forward.
        return unsafe { real::read(fd, b, n) };
    };
    // SAFETY: the caller's buffer of n bytes.
    serve("read", || {
        Ok(nfs::read(st()?, fd, &open, unsafe { buf_mut(b, n) }?)? as ssize_t)
    })
}

#[no_mangle]
pub unsafe extern "C" fn __read_chk(
    fd: c_int,
    b: *mut c_void,
    n: size_t,
    buflen: size_t,
) -> ssize_t {
    if !fdtable::is_nfs(fd) {
        // SAFETY: plain forward (glibc checks the length).
        return unsafe { real::__read_chk(fd, b, n, buflen) };
    }
    if n > buflen {
        chk_fail();
    }
    // SAFETY: as read.
    unsafe { read(fd, b, n) }
}

#[no_mangle]
pub unsafe extern "C" fn write(fd: c_int, b: *const c_void, n: size_t) -> ssize_t {
    let Some(open) = fdtable::get(fd) else {
        // SAFETY: plain forward.
        return unsafe { real::write(fd, b, n) };
    };
    // SAFETY: the caller's data of n bytes.
    serve("write", || {
        Ok(nfs::write(st()?, fd, &open, unsafe { buf(b, n) }?)? as ssize_t)
    })
}

macro_rules! pread_like {
    ($name:ident, $real:ident, $off:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(fd: c_int, b: *mut c_void, n: size_t, off: $off) -> ssize_t {
            let Some(open) = fdtable::get(fd) else {
                // SAFETY: plain forward.
                return unsafe { real::$real(fd, b, n, off) };
            };
            // SAFETY: the caller's buffer of n bytes.
            serve(stringify!($name), || {
                Ok(nfs::pread(st()?, &open, unsafe { buf_mut(b, n) }?, off)? as ssize_t)
            })
        }
    };
}
pread_like!(pread, pread, off_t);
pread_like!(pread64, pread64, off64_t);

macro_rules! pread_chk_like {
    ($name:ident, $real:ident, $plain:ident, $off:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            fd: c_int,
            b: *mut c_void,
            n: size_t,
            off: $off,
            buflen: size_t,
        ) -> ssize_t {
            if !fdtable::is_nfs(fd) {
                // SAFETY: plain forward.
                return unsafe { real::$real(fd, b, n, off, buflen) };
            }
            if n > buflen {
                chk_fail();
            }
            // SAFETY: as pread.
            unsafe { $plain(fd, b, n, off) }
        }
    };
}
pread_chk_like!(__pread_chk, __pread_chk, pread, off_t);
pread_chk_like!(__pread64_chk, __pread64_chk, pread64, off64_t);

macro_rules! pwrite_like {
    ($name:ident, $real:ident, $off:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            fd: c_int,
            b: *const c_void,
            n: size_t,
            off: $off,
        ) -> ssize_t {
            let Some(open) = fdtable::get(fd) else {
                // SAFETY: plain forward.
                return unsafe { real::$real(fd, b, n, off) };
            };
            // SAFETY: the caller's data of n bytes.
            serve(stringify!($name), || {
                Ok(nfs::pwrite(st()?, fd, &open, unsafe { buf(b, n) }?, off)? as ssize_t)
            })
        }
    };
}
pwrite_like!(pwrite, pwrite, off_t);
pwrite_like!(pwrite64, pwrite64, off64_t);

/// The caller's iovecs as mutable slices.
///
/// # Safety
/// `iov` points to `cnt` iovecs of valid buffers.
unsafe fn iovecs_mut<'a>(iov: *const libc::iovec, cnt: c_int) -> Res<Vec<&'a mut [u8]>> {
    if !(0..=libc::UIO_MAXIOV).contains(&cnt) {
        return Err(Errno(libc::EINVAL));
    }
    if cnt > 0 && iov.is_null() {
        return Err(Errno(libc::EFAULT));
    }
    (0..cnt as usize)
        // SAFETY: per the contract.
        .map(|i| unsafe {
            let v = *iov.add(i);
            buf_mut(v.iov_base, v.iov_len)
        })
        .collect()
}

/// The caller's iovecs as slices.
///
/// # Safety
/// As [`iovecs_mut`].
unsafe fn iovecs<'a>(iov: *const libc::iovec, cnt: c_int) -> Res<Vec<&'a [u8]>> {
    // SAFETY: per the contract.
    Ok(unsafe { iovecs_mut(iov, cnt) }?
        .into_iter()
        .map(|b| &*b)
        .collect())
}

fn readv_nfs(
    fd: c_int,
    open: &Open,
    iov: *const libc::iovec,
    cnt: c_int,
    off: Option<i64>,
) -> Res<ssize_t> {
    // SAFETY: the caller's iovecs.
    let mut bufs = unsafe { iovecs_mut(iov, cnt) }?;
    Ok(nfs::readv(st()?, fd, open, &mut bufs, off)? as ssize_t)
}

fn writev_nfs(
    fd: c_int,
    open: &Open,
    iov: *const libc::iovec,
    cnt: c_int,
    off: Option<i64>,
) -> Res<ssize_t> {
    // SAFETY: the caller's iovecs.
    let bufs = unsafe { iovecs(iov, cnt) }?;
    Ok(nfs::writev(st()?, fd, open, &bufs, off)? as ssize_t)
}

#[no_mangle]
pub unsafe extern "C" fn readv(fd: c_int, iov: *const libc::iovec, cnt: c_int) -> ssize_t {
    let Some(open) = fdtable::get(fd) else {
        // SAFETY: plain forward.
        return unsafe { real::readv(fd, iov, cnt) };
    };
    serve("readv", || readv_nfs(fd, &open, iov, cnt, None))
}

#[no_mangle]
pub unsafe extern "C" fn writev(fd: c_int, iov: *const libc::iovec, cnt: c_int) -> ssize_t {
    let Some(open) = fdtable::get(fd) else {
        // SAFETY: plain forward.
        return unsafe { real::writev(fd, iov, cnt) };
    };
    serve("writev", || writev_nfs(fd, &open, iov, cnt, None))
}

macro_rules! preadv_like {
    ($name:ident, $real:ident, $off:ty, $nfs:ident) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            fd: c_int,
            iov: *const libc::iovec,
            cnt: c_int,
            off: $off,
        ) -> ssize_t {
            let Some(open) = fdtable::get(fd) else {
                // SAFETY: plain forward.
                return unsafe { real::$real(fd, iov, cnt, off) };
            };
            serve(stringify!($name), || $nfs(fd, &open, iov, cnt, Some(off)))
        }
    };
}
preadv_like!(preadv, preadv, off_t, readv_nfs);
preadv_like!(preadv64, preadv64, off64_t, readv_nfs);
preadv_like!(pwritev, pwritev, off_t, writev_nfs);
preadv_like!(pwritev64, pwritev64, off64_t, writev_nfs);

macro_rules! preadv2_like {
    ($name:ident, $real:ident, $off:ty, $nfs:ident) => {
        /// Flags (`RWF_*`) are accepted and change nothing: every NFS
        /// write is already synchronous (`RWF_DSYNC`), nothing is cached
        /// (`RWF_HIPRI`, `RWF_NOWAIT` would not wait less). An offset of
        /// -1 uses and moves the file offset.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            fd: c_int,
            iov: *const libc::iovec,
            cnt: c_int,
            off: $off,
            flags: c_int,
        ) -> ssize_t {
            let Some(open) = fdtable::get(fd) else {
                // SAFETY: plain forward.
                return unsafe { real::$real(fd, iov, cnt, off, flags) };
            };
            let at = if off == -1 { None } else { Some(off) };
            serve(stringify!($name), || $nfs(fd, &open, iov, cnt, at))
        }
    };
}
preadv2_like!(preadv2, preadv2, off_t, readv_nfs);
preadv2_like!(preadv64v2, preadv64v2, off64_t, readv_nfs);
preadv2_like!(pwritev2, pwritev2, off_t, writev_nfs);
preadv2_like!(pwritev64v2, pwritev64v2, off64_t, writev_nfs);

#[no_mangle]
pub unsafe extern "C" fn lseek(fd: c_int, off: off_t, whence: c_int) -> off_t {
    let Some(open) = fdtable::get(fd) else {
        // SAFETY: plain forward.
        return unsafe { real::lseek(fd, off, whence) };
    };
    serve("lseek", || nfs::lseek(st()?, fd, &open, off, whence))
}

#[no_mangle]
pub unsafe extern "C" fn lseek64(fd: c_int, off: off64_t, whence: c_int) -> off64_t {
    let Some(open) = fdtable::get(fd) else {
        // SAFETY: plain forward.
        return unsafe { real::lseek64(fd, off, whence) };
    };
    serve("lseek64", || nfs::lseek(st()?, fd, &open, off, whence))
}

macro_rules! fsync_like {
    ($name:ident) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(fd: c_int) -> c_int {
            let Some(open) = fdtable::get(fd) else {
                // SAFETY: plain forward.
                return unsafe { real::$name(fd) };
            };
            serve(stringify!($name), || nfs::fsync(st()?, &open).map(|()| 0))
        }
    };
}
fsync_like!(fsync);
fsync_like!(fdatasync);

/// `syncfs` of an NFS descriptor: every file this process has open on its
/// mount, then the descriptor's own (ops/io.rs).
#[no_mangle]
pub unsafe extern "C" fn syncfs(fd: c_int) -> c_int {
    let Some(open) = fdtable::get(fd) else {
        // SAFETY: plain forward.
        return unsafe { real::syncfs(fd) };
    };
    serve("syncfs", || {
        let all = nfs::sync_open_files(Some(open.mount));
        nfs::fsync(st()?, &open)?;
        all.map(|()| 0)
    })
}

/// `sync`: every NFS file this process has open (ops/io.rs), then the
/// kernel's file systems. It returns nothing, so an error is only said.
#[no_mangle]
pub unsafe extern "C" fn sync() {
    if fdtable::any() {
        crate::fail::contained("sync", (), || {
            let synced = crate::tally::measured("sync", || nfs::sync_open_files(None));
            if let Err(Errno(e)) = synced {
                crate::warn::always(&format!(
                    "sync: a file could not be made durable on the server: {}",
                    std::io::Error::from_raw_os_error(e)
                ));
            }
        });
    }
    // SAFETY: plain forward.
    unsafe { real::sync() }
}

/// FILE_SYNC writes are on stable storage when they return, and in
/// `unstable` mode the next `fsync` commits; there is no dirty cache to
/// start writing back. With a `WAIT_*` flag the descriptor's write-behind
/// writes in flight are waited for (their errors stay for `fsync`, as
/// `sync_file_range` does not promise durability either).
#[no_mangle]
pub unsafe extern "C" fn sync_file_range(
    fd: c_int,
    off: off64_t,
    n: off64_t,
    flags: c_uint,
) -> c_int {
    let Some(open) = fdtable::get(fd) else {
        // SAFETY: plain forward.
        return unsafe { real::sync_file_range(fd, off, n, flags) };
    };
    if off < 0 || n < 0 {
        set_errno(libc::EINVAL);
        return -1;
    }
    let wait = libc::SYNC_FILE_RANGE_WAIT_BEFORE | libc::SYNC_FILE_RANGE_WAIT_AFTER;
    if flags & wait != 0 {
        if let Some(file) = open.opened_file() {
            file.wait_write_behind();
        }
    }
    0
}

macro_rules! ftruncate_like {
    ($name:ident, $off:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(fd: c_int, len: $off) -> c_int {
            let Some(open) = fdtable::get(fd) else {
                // SAFETY: plain forward.
                return unsafe { real::$name(fd, len) };
            };
            serve(stringify!($name), || {
                nfs::ftruncate(st()?, &open, len).map(|()| 0)
            })
        }
    };
}
ftruncate_like!(ftruncate, off_t);
ftruncate_like!(ftruncate64, off64_t);

macro_rules! truncate_like {
    ($name:ident, $off:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(path: *const c_char, len: $off) -> c_int {
            // SAFETY: the caller passes a C string.
            match unsafe { local_first(libc::AT_FDCWD, path, || real::$name(path, len)) } {
                Ok(v) => v,
                Err(r) => on_path(
                    stringify!($name),
                    r,
                    |s, p| {
                        if len < 0 {
                            return Err(Errno(libc::EINVAL));
                        }
                        let size = dnfs::SetAttrs {
                            size: Some(len as u64),
                            ..Default::default()
                        };
                        Ok(match meta::set_path(s, p, true, size)? {
                            Out::Done(()) => Out::Done(0),
                            Out::Local(l) => Out::Local(l),
                        })
                    },
                    // SAFETY: a local path a link on NFS led to.
                    |p| unsafe { real::$name(p, len) },
                ),
            }
        }
    };
}
truncate_like!(truncate, off_t);
truncate_like!(truncate64, off64_t);

macro_rules! fallocate_like {
    ($name:ident, $off:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(fd: c_int, mode: c_int, off: $off, len: $off) -> c_int {
            let Some(open) = fdtable::get(fd) else {
                // SAFETY: plain forward.
                return unsafe { real::$name(fd, mode, off, len) };
            };
            serve(stringify!($name), || {
                nfs::fallocate(st()?, &open, mode, off, len).map(|()| 0)
            })
        }
    };
}
fallocate_like!(fallocate, off_t);
fallocate_like!(fallocate64, off64_t);

macro_rules! posix_fallocate_like {
    ($name:ident, $off:ty) => {
        /// Returns an error number (does not set errno), as POSIX says.
        #[no_mangle]
        pub unsafe extern "C" fn $name(fd: c_int, off: $off, len: $off) -> c_int {
            let Some(open) = fdtable::get(fd) else {
                // SAFETY: plain forward.
                return unsafe { real::$name(fd, off, len) };
            };
            serve_errnum(stringify!($name), || {
                nfs::fallocate(st()?, &open, 0, off, len)
            })
        }
    };
}
posix_fallocate_like!(posix_fallocate, off_t);
posix_fallocate_like!(posix_fallocate64, off64_t);

macro_rules! fadvise_like {
    ($name:ident, $off:ty) => {
        /// Accepted, no effect: there is no page cache to advise.
        #[no_mangle]
        pub unsafe extern "C" fn $name(fd: c_int, off: $off, len: $off, advice: c_int) -> c_int {
            if !fdtable::is_nfs(fd) {
                // SAFETY: plain forward.
                return unsafe { real::$name(fd, off, len, advice) };
            }
            if len < 0 || !(0..=5).contains(&advice) {
                return libc::EINVAL;
            }
            0
        }
    };
}
fadvise_like!(posix_fadvise, off_t);
fadvise_like!(posix_fadvise64, off64_t);

/// Accepted, no effect (no page cache to fill).
#[no_mangle]
pub unsafe extern "C" fn readahead(fd: c_int, off: off64_t, count: size_t) -> ssize_t {
    if !fdtable::is_nfs(fd) {
        // SAFETY: plain forward.
        return unsafe { real::readahead(fd, off, count) };
    }
    0
}

fn end(fd: c_int, open: &Option<std::sync::Arc<Open>>) -> End<'_> {
    match open {
        Some(o) => End::Nfs(fd, o),
        None => End::Local(fd),
    }
}

#[no_mangle]
pub unsafe extern "C" fn copy_file_range(
    fd_in: c_int,
    off_in: *mut off64_t,
    fd_out: c_int,
    off_out: *mut off64_t,
    len: size_t,
    flags: c_uint,
) -> ssize_t {
    let (a, b) = (fdtable::get(fd_in), fdtable::get(fd_out));
    if a.is_none() && b.is_none() {
        // SAFETY: plain forward.
        return unsafe { real::copy_file_range(fd_in, off_in, fd_out, off_out, len, flags) };
    }
    serve("copy_file_range", || {
        if flags != 0 {
            return Err(Errno(libc::EINVAL));
        }
        // SAFETY: the caller's offsets, NULL or valid.
        let (oi, oo) = unsafe { (off_in.as_mut(), off_out.as_mut()) };
        Ok(nfs::copy(st()?, end(fd_in, &a), oi, end(fd_out, &b), oo, len)? as ssize_t)
    })
}

macro_rules! sendfile_like {
    ($name:ident, $off:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            out_fd: c_int,
            in_fd: c_int,
            off: *mut $off,
            count: size_t,
        ) -> ssize_t {
            let (a, b) = (fdtable::get(in_fd), fdtable::get(out_fd));
            if a.is_none() && b.is_none() {
                // SAFETY: plain forward.
                return unsafe { real::$name(out_fd, in_fd, off, count) };
            }
            serve(stringify!($name), || {
                // SAFETY: the caller's offset, NULL or valid.
                let oi = unsafe { off.as_mut() };
                Ok(nfs::copy(st()?, end(in_fd, &a), oi, end(out_fd, &b), None, count)? as ssize_t)
            })
        }
    };
}
sendfile_like!(sendfile, off_t);
sendfile_like!(sendfile64, off64_t);

#[no_mangle]
pub unsafe extern "C" fn splice(
    fd_in: c_int,
    off_in: *mut off64_t,
    fd_out: c_int,
    off_out: *mut off64_t,
    len: size_t,
    flags: c_uint,
) -> ssize_t {
    if !fdtable::is_nfs(fd_in) && !fdtable::is_nfs(fd_out) {
        // SAFETY: plain forward.
        return unsafe { real::splice(fd_in, off_in, fd_out, off_out, len, flags) };
    }
    crate::warn::once("splice", || {
        "splice with an NFS descriptor is not supported (EINVAL): it moves pages the kernel has, and NFS data is not in the kernel".into()
    });
    set_errno(libc::EINVAL);
    -1
}
