//! `open` and friends, `close`, `dup`, `fcntl`, `flock`, `ioctl`, `mmap`.

use libc::{c_char, c_int, c_uint, c_ulong, c_void, mode_t, off64_t, off_t};

use super::{on_path, st};
use crate::fail::{serve, set_errno};
use crate::fdtable;
use crate::links::local_first;
use crate::ops::{fds, mapped, open as nfs_open, unsupported};
use crate::real;

macro_rules! open_like {
    ($name:ident, $real:ident, (path $(, $arg:ident: $ty:ty)*), $dirfd:expr, $flags:expr, $mode:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(path: *const c_char $(, $arg: $ty)*) -> c_int {
            // SAFETY: the caller passes a C string.
            match unsafe { local_first($dirfd, path, || real::$real(path $(, $arg)*)) } {
                Ok(v) => v,
                Err(r) => on_path(
                    stringify!($name),
                    r,
                    |s, p| nfs_open::open(s, p, $flags, $mode),
                    // SAFETY: a link on NFS led to this local path.
                    |p| unsafe { real::$real(p $(, $arg)*) },
                ),
            }
        }
    };
}

open_like!(open, open, (path, flags: c_int, mode: mode_t), libc::AT_FDCWD, flags, mode);
open_like!(open64, open64, (path, flags: c_int, mode: mode_t), libc::AT_FDCWD, flags, mode);
open_like!(__open_2, __open_2, (path, flags: c_int), libc::AT_FDCWD, flags, 0);
open_like!(__open64_2, __open64_2, (path, flags: c_int), libc::AT_FDCWD, flags, 0);
open_like!(
    creat,
    creat,
    (path, mode: mode_t),
    libc::AT_FDCWD,
    libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC,
    mode
);
open_like!(
    creat64,
    creat64,
    (path, mode: mode_t),
    libc::AT_FDCWD,
    libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC,
    mode
);

macro_rules! openat_like {
    ($name:ident, $real:ident, ($($arg:ident: $ty:ty),*), $flags:expr, $mode:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(dirfd: c_int, path: *const c_char $(, $arg: $ty)*) -> c_int {
            // SAFETY: the caller passes a C string.
            match unsafe { local_first(dirfd, path, || real::$real(dirfd, path $(, $arg)*)) } {
                Ok(v) => v,
                Err(r) => on_path(
                    stringify!($name),
                    r,
                    |s, p| nfs_open::open(s, p, $flags, $mode),
                    // SAFETY: an absolute local path (a link on NFS led there).
                    |p| unsafe { real::$real(dirfd, p $(, $arg)*) },
                ),
            }
        }
    };
}

openat_like!(openat, openat, (flags: c_int, mode: mode_t), flags, mode);
openat_like!(openat64, openat64, (flags: c_int, mode: mode_t), flags, mode);
openat_like!(__openat_2, __openat_2, (flags: c_int), flags, 0);
openat_like!(__openat64_2, __openat64_2, (flags: c_int), flags, 0);

#[no_mangle]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    if !fdtable::is_nfs(fd) {
        unsupported::uring_closed(fd);
        // SAFETY: plain forward.
        return unsafe { real::close(fd) };
    }
    fds::close(fd)
}

#[no_mangle]
pub unsafe extern "C" fn close_range(first: c_uint, last: c_uint, flags: c_int) -> c_int {
    // SAFETY: plain forward.
    let r = unsafe { real::close_range(first, last, flags) };
    if r == 0 && flags & libc::CLOSE_RANGE_CLOEXEC as c_int == 0 {
        let last = last.min(c_int::MAX as c_uint) as c_int;
        let first = first.min(c_int::MAX as c_uint) as c_int;
        crate::fail::contained("close_range", (), || {
            let gone: Vec<_> = fdtable::remove_range(first, last)
                .into_iter()
                .map(|(_, o)| o)
                .collect();
            crate::silly::closed_all(&gone);
        });
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn closefrom(lowfd: c_int) {
    crate::fail::contained("closefrom", (), || {
        let gone: Vec<_> = fdtable::remove_range(lowfd.max(0), c_int::MAX)
            .into_iter()
            .map(|(_, o)| o)
            .collect();
        crate::silly::closed_all(&gone);
    });
    // SAFETY: plain forward (void in glibc; our prototype's int is ignored).
    unsafe { real::closefrom(lowfd) };
}

#[no_mangle]
pub unsafe extern "C" fn dup(fd: c_int) -> c_int {
    // SAFETY: plain forward.
    let r = unsafe { real::dup(fd) };
    if r >= 0 && fdtable::is_nfs(fd) {
        fds::duplicated(fd, r);
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn dup2(fd: c_int, newfd: c_int) -> c_int {
    if !fdtable::is_nfs(fd) && !fdtable::is_nfs(newfd) {
        // SAFETY: plain forward.
        return dnfs::process::host_places(|| unsafe { real::dup2(fd, newfd) });
    }
    if fdtable::is_nfs(fd) && fd != newfd {
        crate::ops::stdio::flush_standard_stream(newfd);
    }
    // SAFETY: plain forward.
    let r = dnfs::process::host_places(|| unsafe { real::dup2(fd, newfd) });
    if r >= 0 {
        fds::duplicated(fd, newfd);
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn dup3(fd: c_int, newfd: c_int, flags: c_int) -> c_int {
    if !fdtable::is_nfs(fd) && !fdtable::is_nfs(newfd) {
        // SAFETY: plain forward.
        return dnfs::process::host_places(|| unsafe { real::dup3(fd, newfd, flags) });
    }
    if fdtable::is_nfs(fd) && fd != newfd {
        crate::ops::stdio::flush_standard_stream(newfd);
    }
    // SAFETY: plain forward.
    let r = dnfs::process::host_places(|| unsafe { real::dup3(fd, newfd, flags) });
    if r >= 0 {
        fds::duplicated(fd, newfd);
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn fcntl(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int {
    if !fdtable::is_nfs(fd) {
        // SAFETY: plain forward of the caller's argument.
        return unsafe { real::fcntl(fd, cmd, arg) };
    }
    serve("fcntl", || fds::fcntl(fd, cmd, arg))
}

#[no_mangle]
pub unsafe extern "C" fn fcntl64(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int {
    if !fdtable::is_nfs(fd) {
        // SAFETY: plain forward of the caller's argument.
        return unsafe { real::fcntl64(fd, cmd, arg) };
    }
    serve("fcntl64", || fds::fcntl(fd, cmd, arg))
}

#[no_mangle]
pub unsafe extern "C" fn flock(fd: c_int, op: c_int) -> c_int {
    if !fdtable::is_nfs(fd) {
        // SAFETY: plain forward.
        return unsafe { real::flock(fd, op) };
    }
    serve("flock", || {
        let open = fdtable::get(fd).ok_or(crate::fail::Errno(libc::EBADF))?;
        crate::locks::flock(fd, &open, op).map(|()| 0)
    })
}

/// FICLONE (`_IOW(0x94, 9, int)`).
const FICLONE: c_ulong = 0x4004_9409;
/// FICLONERANGE (`_IOW(0x94, 13, struct file_clone_range)`).
const FICLONERANGE: c_ulong = 0x4020_940d;
/// FIDEDUPERANGE (`_IOWR(0x94, 54, struct file_dedupe_range)`).
const FIDEDUPERANGE: c_ulong = 0xc018_9436;

#[no_mangle]
pub unsafe extern "C" fn ioctl(fd: c_int, request: c_ulong, arg: c_ulong) -> c_int {
    let source_is_nfs = match request {
        FICLONE => fdtable::is_nfs(arg as c_int),
        // SAFETY: struct file_clone_range starts with the source descriptor
        // (s64); the caller passes a valid struct for this request.
        FICLONERANGE if arg != 0 => fdtable::is_nfs(unsafe { *(arg as *const i64) } as c_int),
        _ => false,
    };
    if !fdtable::is_nfs(fd) && !source_is_nfs {
        // SAFETY: plain forward of the caller's argument.
        return unsafe { real::ioctl(fd, request, arg) };
    }
    match request {
        // Descriptor flags: the kernel's, on the shadow descriptor.
        libc::FIOCLEX | libc::FIONCLEX => {
            // SAFETY: plain forward.
            unsafe { real::ioctl(fd, request, arg) }
        }
        FICLONE | FICLONERANGE | FIDEDUPERANGE => {
            set_errno(libc::EOPNOTSUPP);
            -1
        }
        _ => {
            // Terminal, block device and file system ioctls: an NFS file is
            // none of them.
            set_errno(libc::ENOTTY);
            -1
        }
    }
}

/// `mmap` of an NFS descriptor: `ENODEV`, or a private copy when asked
/// for (ops/mapped.rs); `MAP_FAILED` with errno set on failure.
fn map_nfs(
    open: &fdtable::Open,
    fd: c_int,
    addr: *mut c_void,
    len: libc::size_t,
    prot: c_int,
    flags: c_int,
    off: i64,
) -> *mut c_void {
    let p: libc::ssize_t = serve("mmap", || {
        let state = st()?;
        if !mapped::served(state, flags) {
            return Err(mapped::refuse(fd, flags));
        }
        // SAFETY: the caller's own mmap arguments.
        let p = unsafe { mapped::private_copy(state, open, addr, len, prot, flags, off)? };
        Ok(p as libc::ssize_t)
    });
    // -1 is MAP_FAILED.
    p as *mut c_void
}

#[no_mangle]
pub unsafe extern "C" fn mmap(
    addr: *mut c_void,
    len: libc::size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: off_t,
) -> *mut c_void {
    if let Some(open) = fdtable::get(fd) {
        return map_nfs(&open, fd, addr, len, prot, flags, off);
    }
    // SAFETY: plain forward.
    let p = unsafe { real::mmap(addr, len, prot, flags, fd, off) };
    if p != libc::MAP_FAILED {
        unsupported::uring_mapped(fd, off, p);
    }
    p
}

#[no_mangle]
pub unsafe extern "C" fn mmap64(
    addr: *mut c_void,
    len: libc::size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: off64_t,
) -> *mut c_void {
    if let Some(open) = fdtable::get(fd) {
        return map_nfs(&open, fd, addr, len, prot, flags, off);
    }
    // SAFETY: plain forward.
    let p = unsafe { real::mmap64(addr, len, prot, flags, fd, off) };
    if p != libc::MAP_FAILED {
        unsupported::uring_mapped(fd, off, p);
    }
    p
}
