//! `stat` in all its forms, `statx`, `statfs`/`statvfs`, `access`.

use libc::{c_char, c_int, c_uint};

use super::{on_path, st};
use crate::fail::{serve, Errno, Res};
use crate::fdtable;
use crate::links::local_first;
use crate::ops::{meta, Out};
use crate::real::{self, Stat, Stat64};
use crate::state::State;

const _: () = assert!(std::mem::size_of::<Stat>() == std::mem::size_of::<Stat64>());

/// Attributes of an NFS path into `*buf`.
fn stat_into(s: &State, p: crate::paths::NfsPath, follow: bool, buf: *mut Stat) -> Res<Out<c_int>> {
    if buf.is_null() {
        return Err(Errno(libc::EFAULT));
    }
    Ok(match meta::stat_path(s, p, follow)? {
        Out::Done((mount, m)) => {
            // SAFETY: checked non-NULL; the caller's struct stat.
            meta::fill_stat(s, mount, &m, unsafe { &mut *buf });
            Out::Done(0)
        }
        Out::Local(l) => Out::Local(l),
    })
}

/// Attributes of an NFS descriptor into `*buf`.
fn fstat_into(fd: c_int, buf: *mut Stat) -> Res<c_int> {
    let open = fdtable::get(fd).ok_or(Errno(libc::EBADF))?;
    if buf.is_null() {
        return Err(Errno(libc::EFAULT));
    }
    let s = st()?;
    let m = meta::stat_fd(s, &open)?;
    // SAFETY: checked non-NULL.
    meta::fill_stat(s, open.mount, &m, unsafe { &mut *buf });
    Ok(0)
}

macro_rules! stat_like {
    ($name:ident, $real:ident, $ty:ty, $follow:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(path: *const c_char, buf: *mut $ty) -> c_int {
            // SAFETY: the caller passes a C string.
            match unsafe { local_first(libc::AT_FDCWD, path, || real::$real(path, buf)) } {
                Ok(v) => v,
                Err(r) => on_path(
                    stringify!($name),
                    r,
                    |s, p| stat_into(s, p, $follow, buf.cast()),
                    // SAFETY: a local path a link on NFS led to.
                    |p| unsafe { real::$real(p, buf) },
                ),
            }
        }
    };
}
stat_like!(stat, stat, Stat, true);
stat_like!(stat64, stat64, Stat64, true);
stat_like!(lstat, lstat, Stat, false);
stat_like!(lstat64, lstat64, Stat64, false);

macro_rules! fstat_like {
    ($name:ident, $ty:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(fd: c_int, buf: *mut $ty) -> c_int {
            if !fdtable::is_nfs(fd) {
                // SAFETY: plain forward.
                return unsafe { real::$name(fd, buf) };
            }
            serve(stringify!($name), || fstat_into(fd, buf.cast()))
        }
    };
}
fstat_like!(fstat, Stat);
fstat_like!(fstat64, Stat64);

/// `fstatat`: `AT_EMPTY_PATH` with `""` is `fstat` of `dirfd`;
/// `AT_SYMLINK_NOFOLLOW` is `lstat`.
unsafe fn fstatat_common(
    name: &'static str,
    dirfd: c_int,
    path: *const c_char,
    buf: *mut Stat,
    flags: c_int,
    local: impl Fn(c_int, *const c_char) -> c_int,
) -> c_int {
    // SAFETY: the caller passes a C string (or NULL with AT_EMPTY_PATH).
    let empty = path.is_null() || (!crate::paths::bad_pointer(path) && unsafe { *path } == 0);
    if empty && flags & libc::AT_EMPTY_PATH != 0 {
        if !fdtable::is_nfs(dirfd) {
            return local(dirfd, path);
        }
        return serve(name, || fstat_into(dirfd, buf));
    }
    // SAFETY: as above.
    match unsafe { local_first(dirfd, path, || local(dirfd, path)) } {
        Ok(v) => v,
        Err(r) => {
            let follow = flags & libc::AT_SYMLINK_NOFOLLOW == 0;
            on_path(
                name,
                r,
                |s, p| stat_into(s, p, follow, buf),
                |p| local(libc::AT_FDCWD, p),
            )
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn fstatat(
    dirfd: c_int,
    path: *const c_char,
    buf: *mut Stat,
    flags: c_int,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        fstatat_common("fstatat", dirfd, path, buf, flags, |d, p| {
            real::fstatat(d, p, buf, flags)
        })
    }
}

#[no_mangle]
pub unsafe extern "C" fn fstatat64(
    dirfd: c_int,
    path: *const c_char,
    buf: *mut Stat64,
    flags: c_int,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        fstatat_common("fstatat64", dirfd, path, buf.cast(), flags, |d, p| {
            real::fstatat64(d, p, buf, flags)
        })
    }
}

// glibc before 2.33 inlined stat() into calls of these; programs built then
// still bind to them.
macro_rules! xstat_like {
    ($name:ident, $ty:ty, $plain:ident) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(ver: c_int, path: *const c_char, buf: *mut $ty) -> c_int {
            // SAFETY: the caller passes a C string.
            match unsafe { local_first(libc::AT_FDCWD, path, || real::$name(ver, path, buf)) } {
                Ok(v) => v,
                // SAFETY: same contract as the plain function.
                _ => unsafe { $plain(path, buf) },
            }
        }
    };
}
xstat_like!(__xstat, Stat, stat);
xstat_like!(__xstat64, Stat64, stat64);
xstat_like!(__lxstat, Stat, lstat);
xstat_like!(__lxstat64, Stat64, lstat64);

#[no_mangle]
pub unsafe extern "C" fn __fxstat(ver: c_int, fd: c_int, buf: *mut Stat) -> c_int {
    if !fdtable::is_nfs(fd) {
        // SAFETY: plain forward.
        return unsafe { real::__fxstat(ver, fd, buf) };
    }
    serve("__fxstat", || fstat_into(fd, buf))
}

#[no_mangle]
pub unsafe extern "C" fn __fxstat64(ver: c_int, fd: c_int, buf: *mut Stat64) -> c_int {
    if !fdtable::is_nfs(fd) {
        // SAFETY: plain forward.
        return unsafe { real::__fxstat64(ver, fd, buf) };
    }
    serve("__fxstat64", || fstat_into(fd, buf.cast()))
}

#[no_mangle]
pub unsafe extern "C" fn __fxstatat(
    ver: c_int,
    dirfd: c_int,
    path: *const c_char,
    buf: *mut Stat,
    flags: c_int,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        fstatat_common("__fxstatat", dirfd, path, buf, flags, |d, p| {
            real::__fxstatat(ver, d, p, buf, flags)
        })
    }
}

#[no_mangle]
pub unsafe extern "C" fn __fxstatat64(
    ver: c_int,
    dirfd: c_int,
    path: *const c_char,
    buf: *mut Stat64,
    flags: c_int,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        fstatat_common("__fxstatat64", dirfd, path, buf.cast(), flags, |d, p| {
            real::__fxstatat64(ver, d, p, buf, flags)
        })
    }
}

#[no_mangle]
pub unsafe extern "C" fn statx(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mask: c_uint,
    buf: *mut libc::statx,
) -> c_int {
    // SAFETY: the caller passes a C string (or "" with AT_EMPTY_PATH).
    let empty = path.is_null() || (!crate::paths::bad_pointer(path) && unsafe { *path } == 0);
    let fill = |s: &State, mount: usize, m: &dnfs::Metadata| -> Res<c_int> {
        if buf.is_null() {
            return Err(Errno(libc::EFAULT));
        }
        // SAFETY: checked non-NULL.
        meta::fill_statx(s, mount, m, unsafe { &mut *buf });
        Ok(0)
    };
    if empty && flags & libc::AT_EMPTY_PATH != 0 {
        let Some(open) = fdtable::get(dirfd) else {
            // SAFETY: plain forward.
            return unsafe { real::statx(dirfd, path, flags, mask, buf) };
        };
        return serve("statx", || {
            let s = st()?;
            fill(s, open.mount, &meta::stat_fd(s, &open)?)
        });
    }
    // SAFETY: as above.
    match unsafe { local_first(dirfd, path, || real::statx(dirfd, path, flags, mask, buf)) } {
        Ok(v) => v,
        Err(r) => on_path(
            "statx",
            r,
            |s, p| {
                let follow = flags & libc::AT_SYMLINK_NOFOLLOW == 0;
                Ok(match meta::stat_path(s, p, follow)? {
                    Out::Done((mount, m)) => Out::Done(fill(s, mount, &m)?),
                    Out::Local(l) => Out::Local(l),
                })
            },
            // SAFETY: a local path a link on NFS led to.
            |p| unsafe { real::statx(libc::AT_FDCWD, p, flags, mask, buf) },
        ),
    }
}

macro_rules! statfs_like {
    ($name:ident, $fname:ident, $ty:ty, $make:ident) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(path: *const c_char, buf: *mut $ty) -> c_int {
            // SAFETY: the caller passes a C string.
            match unsafe { local_first(libc::AT_FDCWD, path, || real::$name(path, buf)) } {
                Ok(v) => v,
                Err(r) => on_path(
                    stringify!($name),
                    r,
                    |s, p| {
                        if buf.is_null() {
                            return Err(Errno(libc::EFAULT));
                        }
                        let v = meta::$make(s, p.mount)?;
                        // SAFETY: checked non-NULL; same layout on LP64.
                        unsafe {
                            std::ptr::copy_nonoverlapping(
                                &v as *const _ as *const u8,
                                buf as *mut u8,
                                std::mem::size_of::<$ty>(),
                            )
                        };
                        Ok(Out::Done(0))
                    },
                    // SAFETY: a local path a link on NFS led to.
                    |p| unsafe { real::$name(p, buf) },
                ),
            }
        }

        #[no_mangle]
        pub unsafe extern "C" fn $fname(fd: c_int, buf: *mut $ty) -> c_int {
            let Some(open) = fdtable::get(fd) else {
                // SAFETY: plain forward.
                return unsafe { real::$fname(fd, buf) };
            };
            serve(stringify!($fname), || {
                if buf.is_null() {
                    return Err(Errno(libc::EFAULT));
                }
                let v = meta::$make(st()?, open.mount)?;
                // SAFETY: checked non-NULL; same layout on LP64.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        &v as *const _ as *const u8,
                        buf as *mut u8,
                        std::mem::size_of::<$ty>(),
                    )
                };
                Ok(0)
            })
        }
    };
}
const _: () = assert!(std::mem::size_of::<libc::statfs>() == std::mem::size_of::<libc::statfs64>());
const _: () =
    assert!(std::mem::size_of::<libc::statvfs>() == std::mem::size_of::<libc::statvfs64>());
statfs_like!(statfs, fstatfs, libc::statfs, statfs);
statfs_like!(statfs64, fstatfs64, libc::statfs64, statfs);
statfs_like!(statvfs, fstatvfs, libc::statvfs, statvfs);
statfs_like!(statvfs64, fstatvfs64, libc::statvfs64, statvfs);

// glibc's pathconf asks statfs with its internal call, which no preloaded
// library sees: on an NFS path it found no file.
#[no_mangle]
pub unsafe extern "C" fn pathconf(path: *const c_char, name: c_int) -> libc::c_long {
    // SAFETY: the caller passes a C string.
    match unsafe { local_first(libc::AT_FDCWD, path, || real::pathconf(path, name)) } {
        Ok(v) => v,
        Err(r) => on_path(
            "pathconf",
            r,
            |s, p| {
                Ok(match meta::stat_path(s, p, true)? {
                    Out::Done(_) => Out::Done(meta::pathconf(name)?.unwrap_or(-1)),
                    Out::Local(l) => Out::Local(l),
                })
            },
            // SAFETY: a local path a link on NFS led to.
            |p| unsafe { real::pathconf(p, name) },
        ),
    }
}

#[no_mangle]
pub unsafe extern "C" fn fpathconf(fd: c_int, name: c_int) -> libc::c_long {
    if !fdtable::is_nfs(fd) {
        // SAFETY: plain forward.
        return unsafe { real::fpathconf(fd, name) };
    }
    serve("fpathconf", || Ok(meta::pathconf(name)?.unwrap_or(-1)))
}

macro_rules! access_like {
    ($name:ident, $effective:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(path: *const c_char, mode: c_int) -> c_int {
            // SAFETY: the caller passes a C string.
            match unsafe { local_first(libc::AT_FDCWD, path, || real::$name(path, mode)) } {
                Ok(v) => v,
                Err(r) => on_path(
                    stringify!($name),
                    r,
                    |s, p| {
                        Ok(match meta::access(s, p, mode, true, $effective)? {
                            Out::Done(()) => Out::Done(0),
                            Out::Local(l) => Out::Local(l),
                        })
                    },
                    // SAFETY: a local path a link on NFS led to.
                    |p| unsafe { real::$name(p, mode) },
                ),
            }
        }
    };
}
access_like!(access, false);
access_like!(euidaccess, true);
access_like!(eaccess, true);

#[no_mangle]
pub unsafe extern "C" fn faccessat(
    dirfd: c_int,
    path: *const c_char,
    mode: c_int,
    flags: c_int,
) -> c_int {
    // SAFETY: the caller passes a C string.
    match unsafe { local_first(dirfd, path, || real::faccessat(dirfd, path, mode, flags)) } {
        Ok(v) => v,
        Err(r) => on_path(
            "faccessat",
            r,
            |s, p| {
                let follow = flags & libc::AT_SYMLINK_NOFOLLOW == 0;
                let effective = flags & libc::AT_EACCESS != 0;
                Ok(match meta::access(s, p, mode, follow, effective)? {
                    Out::Done(()) => Out::Done(0),
                    Out::Local(l) => Out::Local(l),
                })
            },
            // SAFETY: a local path a link on NFS led to.
            |p| unsafe { real::faccessat(libc::AT_FDCWD, p, mode, flags) },
        ),
    }
}
