//! Names and attributes: `unlink`, `rmdir`, `mkdir`, `rename`, `link`,
//! `symlink`, `readlink`, `mknod`/`mkfifo`, `chmod`, `chown`, file times.

use dnfs::SetAttrs;
use libc::{c_char, c_int, c_uint, mode_t, size_t, ssize_t};

use super::{buf_mut, chk_fail, cstr, on_path, on_path_only, st};
use crate::fail::{serve, set_errno, Errno, Res};
use crate::fdtable;
use crate::links::{local_first, local_pair_first, Pair};
use crate::ops::{meta, names, Out, OutPair};
use crate::paths::{NfsPath, Route};
use crate::real;
use crate::state::State;
use crate::warn;

#[no_mangle]
pub unsafe extern "C" fn unlink(path: *const c_char) -> c_int {
    // SAFETY: the caller passes a C string.
    match unsafe { local_first(libc::AT_FDCWD, path, || real::unlink(path)) } {
        Ok(v) => v,
        // SAFETY: a local path the NFS path folded to.
        Err(r) => on_path(
            "unlink",
            r,
            |s, p| names::unlink(s, p).map(|o| o.map(|()| 0)),
            |p| unsafe { real::unlink(p) },
        ),
    }
}

#[no_mangle]
pub unsafe extern "C" fn rmdir(path: *const c_char) -> c_int {
    // SAFETY: the caller passes a C string.
    match unsafe { local_first(libc::AT_FDCWD, path, || real::rmdir(path)) } {
        Ok(v) => v,
        // SAFETY: a local path the NFS path folded to.
        Err(r) => on_path(
            "rmdir",
            r,
            |s, p| names::rmdir(s, p).map(|o| o.map(|()| 0)),
            |p| unsafe { real::rmdir(p) },
        ),
    }
}

#[no_mangle]
pub unsafe extern "C" fn unlinkat(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int {
    // SAFETY: the caller passes a C string.
    match unsafe { local_first(dirfd, path, || real::unlinkat(dirfd, path, flags)) } {
        Ok(v) => v,
        // SAFETY: a local path the NFS path folded to.
        Err(r) if flags & libc::AT_REMOVEDIR != 0 => on_path(
            "unlinkat",
            r,
            |s, p| names::rmdir(s, p).map(|o| o.map(|()| 0)),
            |p| unsafe { real::unlinkat(libc::AT_FDCWD, p, flags) },
        ),
        // SAFETY: as above.
        Err(r) => on_path(
            "unlinkat",
            r,
            |s, p| names::unlink(s, p).map(|o| o.map(|()| 0)),
            |p| unsafe { real::unlinkat(libc::AT_FDCWD, p, flags) },
        ),
    }
}

/// stdio's `remove`: `unlink`, or `rmdir` for a directory (glibc's calls
/// its own internal ones, which this library cannot see).
#[no_mangle]
pub unsafe extern "C" fn remove(path: *const c_char) -> c_int {
    // SAFETY: the caller passes a C string.
    match unsafe { local_first(libc::AT_FDCWD, path, || real::remove(path)) } {
        Ok(v) => v,
        Err(r) => on_path(
            "remove",
            r,
            |s, p| match names::unlink(s, p.clone()) {
                Err(Errno(libc::EISDIR)) => names::rmdir(s, p).map(|o| o.map(|()| 0)),
                other => other.map(|o| o.map(|()| 0)),
            },
            // SAFETY: a local path the NFS path folded to.
            |p| unsafe { real::remove(p) },
        ),
    }
}

#[no_mangle]
pub unsafe extern "C" fn mkdir(path: *const c_char, mode: mode_t) -> c_int {
    // SAFETY: the caller passes a C string.
    match unsafe { local_first(libc::AT_FDCWD, path, || real::mkdir(path, mode)) } {
        Ok(v) => v,
        // SAFETY: a local path the NFS path folded to.
        Err(r) => on_path(
            "mkdir",
            r,
            |s, p| names::mkdir(s, p, mode).map(|o| o.map(|()| 0)),
            |p| unsafe { real::mkdir(p, mode) },
        ),
    }
}

#[no_mangle]
pub unsafe extern "C" fn mkdirat(dirfd: c_int, path: *const c_char, mode: mode_t) -> c_int {
    // SAFETY: the caller passes a C string.
    match unsafe { local_first(dirfd, path, || real::mkdirat(dirfd, path, mode)) } {
        Ok(v) => v,
        // SAFETY: a local path the NFS path folded to.
        Err(r) => on_path(
            "mkdirat",
            r,
            |s, p| names::mkdir(s, p, mode).map(|o| o.map(|()| 0)),
            |p| unsafe { real::mkdir(p, mode) },
        ),
    }
}

/// Two paths: both local goes to libc; both NFS is served; one of each is
/// `EXDEV` (as between two file systems: `mv` then copies). A redirect
/// (an NFS path that folds to a local one) counts as local, with its
/// folded path.
fn two_paths(
    name: &'static str,
    a: Route,
    b: Route,
    work: impl FnOnce(&State, NfsPath, NfsPath) -> Res<OutPair>,
    local: impl FnOnce(*const c_char, *const c_char) -> c_int,
    original: (*const c_char, *const c_char),
) -> c_int {
    let local_path = |r: &Route, orig: *const c_char| match r {
        Route::Local => Some(orig),
        Route::Redirect(p) => Some(p.as_ptr()),
        _ => None,
    };
    // A bad pointer routes as local; beside an NFS path it would be EXDEV,
    // where the kernel says EFAULT.
    if crate::paths::bad_pointer(original.0) || crate::paths::bad_pointer(original.1) {
        set_errno(libc::EFAULT);
        return -1;
    }
    match (&a, &b) {
        (Route::Bad(e), _) | (_, Route::Bad(e)) => {
            set_errno(*e);
            return -1;
        }
        _ => {}
    }
    // A mount prefix's missing ancestor stands in the mirror tree, which
    // must not be renamed or linked: as a directory holding a mount
    // point, EBUSY.
    if let Ok(state) = st() {
        if crate::paths::is_ancestor_mirror(state, &a)
            || crate::paths::is_ancestor_mirror(state, &b)
        {
            set_errno(libc::EBUSY);
            return -1;
        }
    }
    if let (Some(x), Some(y)) = (local_path(&a, original.0), local_path(&b, original.1)) {
        return local(x, y);
    }
    match (a, b) {
        (Route::Nfs(a), Route::Nfs(b)) => {
            let checked = |s: &State| {
                crate::resolve::check_via(s, &a)?;
                crate::resolve::check_via(s, &b)?;
                work(s, a, b)
            };
            match serve(name, || checked(st()?).map(Some)) {
                Some(OutPair::Done(())) => 0,
                // Links on NFS led both names to local paths.
                Some(OutPair::Local(x, y)) => local(x.as_ptr(), y.as_ptr()),
                None => -1,
            }
        }
        _ => {
            set_errno(libc::EXDEV);
            -1
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn rename(old: *const c_char, new: *const c_char) -> c_int {
    // SAFETY: the caller passes C strings.
    let (a, b) = match unsafe {
        local_pair_first((libc::AT_FDCWD, old), (libc::AT_FDCWD, new), || {
            real::rename(old, new)
        })
    } {
        Pair::Done(v) => return v,
        Pair::Routes(a, b) => (a, b),
    };
    // SAFETY: local paths.
    two_paths(
        "rename",
        a,
        b,
        names::rename,
        |x, y| unsafe { real::rename(x, y) },
        (old, new),
    )
}

#[no_mangle]
pub unsafe extern "C" fn renameat(
    olddir: c_int,
    old: *const c_char,
    newdir: c_int,
    new: *const c_char,
) -> c_int {
    // SAFETY: the caller passes C strings.
    let (a, b) = match unsafe {
        local_pair_first((olddir, old), (newdir, new), || {
            real::renameat(olddir, old, newdir, new)
        })
    } {
        Pair::Done(v) => return v,
        Pair::Routes(a, b) => (a, b),
    };
    // SAFETY: local paths (absolute when redirected).
    two_paths(
        "renameat",
        a,
        b,
        names::rename,
        |x, y| unsafe { real::renameat(olddir, x, newdir, y) },
        (old, new),
    )
}

/// Flags (`RENAME_NOREPLACE`, `RENAME_EXCHANGE`, `RENAME_WHITEOUT`) on NFS
/// are `EINVAL`: NFSv3 RENAME always replaces. Callers (`mv`) fall back to
/// a plain rename.
#[no_mangle]
pub unsafe extern "C" fn renameat2(
    olddir: c_int,
    old: *const c_char,
    newdir: c_int,
    new: *const c_char,
    flags: c_uint,
) -> c_int {
    // SAFETY: the caller passes C strings.
    let (a, b) = match unsafe {
        local_pair_first((olddir, old), (newdir, new), || {
            real::renameat2(olddir, old, newdir, new, flags)
        })
    } {
        Pair::Done(v) => return v,
        Pair::Routes(a, b) => (a, b),
    };
    if flags != 0 && matches!((&a, &b), (Route::Nfs(_), Route::Nfs(_))) {
        set_errno(libc::EINVAL);
        return -1;
    }
    // SAFETY: local paths (absolute when redirected).
    two_paths(
        "renameat2",
        a,
        b,
        names::rename,
        |x, y| unsafe { real::renameat2(olddir, x, newdir, y, flags) },
        (old, new),
    )
}

#[no_mangle]
pub unsafe extern "C" fn link(old: *const c_char, new: *const c_char) -> c_int {
    // SAFETY: the caller passes C strings.
    let (a, b) = match unsafe {
        local_pair_first((libc::AT_FDCWD, old), (libc::AT_FDCWD, new), || {
            real::link(old, new)
        })
    } {
        Pair::Done(v) => return v,
        Pair::Routes(a, b) => (a, b),
    };
    // SAFETY: local paths.
    two_paths(
        "link",
        a,
        b,
        |s, a, b| names::link(s, a, b, false),
        |x, y| unsafe { real::link(x, y) },
        (old, new),
    )
}

#[no_mangle]
pub unsafe extern "C" fn linkat(
    olddir: c_int,
    old: *const c_char,
    newdir: c_int,
    new: *const c_char,
    flags: c_int,
) -> c_int {
    // SAFETY: the caller passes C strings.
    let (a, b) = match unsafe {
        local_pair_first((olddir, old), (newdir, new), || {
            real::linkat(olddir, old, newdir, new, flags)
        })
    } {
        Pair::Done(v) => return v,
        Pair::Routes(a, b) => (a, b),
    };
    let follow = flags & libc::AT_SYMLINK_FOLLOW != 0;
    // SAFETY: local paths (absolute when redirected).
    two_paths(
        "linkat",
        a,
        b,
        |s, a, b| names::link(s, a, b, follow),
        |x, y| unsafe { real::linkat(olddir, x, newdir, y, flags) },
        (old, new),
    )
}

#[no_mangle]
pub unsafe extern "C" fn symlink(target: *const c_char, path: *const c_char) -> c_int {
    // SAFETY: the caller passes C strings.
    match unsafe { local_first(libc::AT_FDCWD, path, || real::symlink(target, path)) } {
        Ok(v) => v,
        // SAFETY: as above.
        Err(r) => on_path(
            "symlink",
            r,
            |s, p| names::symlink(s, unsafe { cstr(target) }?, p).map(|o| o.map(|()| 0)),
            // SAFETY: a local path the NFS path folded to.
            |p| unsafe { real::symlink(target, p) },
        ),
    }
}

#[no_mangle]
pub unsafe extern "C" fn symlinkat(
    target: *const c_char,
    dirfd: c_int,
    path: *const c_char,
) -> c_int {
    // SAFETY: the caller passes C strings.
    match unsafe { local_first(dirfd, path, || real::symlinkat(target, dirfd, path)) } {
        Ok(v) => v,
        // SAFETY: as above.
        Err(r) => on_path(
            "symlinkat",
            r,
            |s, p| names::symlink(s, unsafe { cstr(target) }?, p).map(|o| o.map(|()| 0)),
            // SAFETY: a local path the NFS path folded to.
            |p| unsafe { real::symlink(target, p) },
        ),
    }
}

fn readlink_nfs(
    route: Route,
    b: *mut c_char,
    len: size_t,
    local: impl FnOnce(*const c_char) -> ssize_t,
) -> ssize_t {
    on_path(
        "readlink",
        route,
        // SAFETY: the caller's buffer of len bytes.
        |s, p| {
            Ok(
                match names::readlink(s, p, unsafe { buf_mut(b.cast(), len) }?)? {
                    Out::Done(n) => Out::Done(n as ssize_t),
                    Out::Local(l) => Out::Local(l),
                },
            )
        },
        local,
    )
}

#[no_mangle]
pub unsafe extern "C" fn readlink(path: *const c_char, b: *mut c_char, len: size_t) -> ssize_t {
    // SAFETY: the caller passes a C string.
    match unsafe { local_first(libc::AT_FDCWD, path, || real::readlink(path, b, len)) } {
        Ok(v) => v,
        // SAFETY: a local path a link on NFS led to.
        Err(r) => readlink_nfs(r, b, len, |p| unsafe { real::readlink(p, b, len) }),
    }
}

#[no_mangle]
pub unsafe extern "C" fn readlinkat(
    dirfd: c_int,
    path: *const c_char,
    b: *mut c_char,
    len: size_t,
) -> ssize_t {
    // SAFETY: the caller passes a C string.
    match unsafe { local_first(dirfd, path, || real::readlinkat(dirfd, path, b, len)) } {
        Ok(v) => v,
        // SAFETY: a local path a link on NFS led to.
        Err(r) => readlink_nfs(r, b, len, |p| unsafe { real::readlink(p, b, len) }),
    }
}

#[no_mangle]
pub unsafe extern "C" fn __readlink_chk(
    path: *const c_char,
    b: *mut c_char,
    len: size_t,
    buflen: size_t,
) -> ssize_t {
    // SAFETY: the caller passes a C string.
    match unsafe {
        local_first(libc::AT_FDCWD, path, || {
            real::__readlink_chk(path, b, len, buflen)
        })
    } {
        Ok(v) => v,
        _ if len > buflen => chk_fail(),
        // SAFETY: as readlink.
        _ => unsafe { readlink(path, b, len) },
    }
}

#[no_mangle]
pub unsafe extern "C" fn __readlinkat_chk(
    dirfd: c_int,
    path: *const c_char,
    b: *mut c_char,
    len: size_t,
    buflen: size_t,
) -> ssize_t {
    // SAFETY: the caller passes a C string.
    match unsafe {
        local_first(dirfd, path, || {
            real::__readlinkat_chk(dirfd, path, b, len, buflen)
        })
    } {
        Ok(v) => v,
        _ if len > buflen => chk_fail(),
        // SAFETY: as readlinkat.
        _ => unsafe { readlinkat(dirfd, path, b, len) },
    }
}

fn no_special_files(
    name: &'static str,
    r: Route,
    local: impl FnOnce(*const c_char) -> c_int,
) -> c_int {
    if let Route::Nfs(p) = &r {
        warn::once("mknod", || {
            format!("{name}({}): device nodes, FIFOs and sockets cannot be made on NFS here (EOPNOTSUPP)", p.host)
        });
    }
    on_path_only(
        name,
        r,
        |_, _| Err::<c_int, _>(Errno(libc::EOPNOTSUPP)),
        local,
    )
}

#[no_mangle]
pub unsafe extern "C" fn mknod(path: *const c_char, mode: mode_t, dev: libc::dev_t) -> c_int {
    // SAFETY: the caller passes a C string.
    match unsafe { local_first(libc::AT_FDCWD, path, || real::mknod(path, mode, dev)) } {
        Ok(v) => v,
        // SAFETY: a local path the NFS path folded to.
        Err(r) => no_special_files("mknod", r, |p| unsafe { real::mknod(p, mode, dev) }),
    }
}

#[no_mangle]
pub unsafe extern "C" fn mknodat(
    dirfd: c_int,
    path: *const c_char,
    mode: mode_t,
    dev: libc::dev_t,
) -> c_int {
    // SAFETY: the caller passes a C string.
    match unsafe { local_first(dirfd, path, || real::mknodat(dirfd, path, mode, dev)) } {
        Ok(v) => v,
        // SAFETY: a local path the NFS path folded to.
        Err(r) => no_special_files("mknodat", r, |p| unsafe { real::mknod(p, mode, dev) }),
    }
}

#[no_mangle]
pub unsafe extern "C" fn mkfifo(path: *const c_char, mode: mode_t) -> c_int {
    // SAFETY: the caller passes a C string.
    match unsafe { local_first(libc::AT_FDCWD, path, || real::mkfifo(path, mode)) } {
        Ok(v) => v,
        // SAFETY: a local path the NFS path folded to.
        Err(r) => no_special_files("mkfifo", r, |p| unsafe { real::mkfifo(p, mode) }),
    }
}

#[no_mangle]
pub unsafe extern "C" fn mkfifoat(dirfd: c_int, path: *const c_char, mode: mode_t) -> c_int {
    // SAFETY: the caller passes a C string.
    match unsafe { local_first(dirfd, path, || real::mkfifoat(dirfd, path, mode)) } {
        Ok(v) => v,
        // SAFETY: a local path the NFS path folded to.
        Err(r) => no_special_files("mkfifoat", r, |p| unsafe { real::mkfifo(p, mode) }),
    }
}

/// Sets attributes of an NFS path; a link on NFS to a local path hands the
/// call to `local`.
fn set_path(
    name: &'static str,
    r: Route,
    follow: bool,
    attrs: Res<SetAttrs>,
    local: impl FnOnce(*const c_char) -> c_int,
) -> c_int {
    on_path(
        name,
        r,
        |s, p| {
            Ok(match meta::set_path(s, p, follow, attrs?)? {
                Out::Done(()) => Out::Done(0),
                Out::Local(l) => Out::Local(l),
            })
        },
        local,
    )
}

/// Sets attributes of an NFS descriptor.
fn set_fd(name: &'static str, fd: c_int, attrs: Res<SetAttrs>) -> c_int {
    serve(name, || {
        let open = fdtable::get(fd).ok_or(Errno(libc::EBADF))?;
        meta::set_fd(st()?, &open, attrs?).map(|()| 0)
    })
}

fn mode_attrs(mode: mode_t) -> Res<SetAttrs> {
    Ok(SetAttrs {
        mode: Some(mode & 0o7777),
        ..Default::default()
    })
}

#[no_mangle]
pub unsafe extern "C" fn chmod(path: *const c_char, mode: mode_t) -> c_int {
    // SAFETY: the caller passes a C string.
    match unsafe { local_first(libc::AT_FDCWD, path, || real::chmod(path, mode)) } {
        Ok(v) => v,
        // SAFETY: a local path a link on NFS led to.
        Err(r) => set_path("chmod", r, true, mode_attrs(mode), |p| unsafe {
            real::chmod(p, mode)
        }),
    }
}

#[no_mangle]
pub unsafe extern "C" fn fchmod(fd: c_int, mode: mode_t) -> c_int {
    if !fdtable::is_nfs(fd) {
        // SAFETY: plain forward.
        return unsafe { real::fchmod(fd, mode) };
    }
    set_fd("fchmod", fd, mode_attrs(mode))
}

#[no_mangle]
pub unsafe extern "C" fn fchmodat(
    dirfd: c_int,
    path: *const c_char,
    mode: mode_t,
    flags: c_int,
) -> c_int {
    // SAFETY: the caller passes a C string.
    match unsafe { local_first(dirfd, path, || real::fchmodat(dirfd, path, mode, flags)) } {
        Ok(v) => v,
        Err(r) => {
            let follow = flags & libc::AT_SYMLINK_NOFOLLOW == 0;
            // SAFETY: a local path a link on NFS led to.
            set_path("fchmodat", r, follow, mode_attrs(mode), |p| unsafe {
                real::fchmodat(libc::AT_FDCWD, p, mode, flags)
            })
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn chown(path: *const c_char, uid: libc::uid_t, gid: libc::gid_t) -> c_int {
    // SAFETY: the caller passes a C string.
    match unsafe { local_first(libc::AT_FDCWD, path, || real::chown(path, uid, gid)) } {
        Ok(v) => v,
        // SAFETY: a local path a link on NFS led to.
        Err(r) => set_path("chown", r, true, Ok(meta::owner(uid, gid)), |p| unsafe {
            real::chown(p, uid, gid)
        }),
    }
}

#[no_mangle]
pub unsafe extern "C" fn lchown(path: *const c_char, uid: libc::uid_t, gid: libc::gid_t) -> c_int {
    // SAFETY: the caller passes a C string.
    match unsafe { local_first(libc::AT_FDCWD, path, || real::lchown(path, uid, gid)) } {
        Ok(v) => v,
        // SAFETY: a local path a link on NFS led to.
        Err(r) => set_path("lchown", r, false, Ok(meta::owner(uid, gid)), |p| unsafe {
            real::lchown(p, uid, gid)
        }),
    }
}

#[no_mangle]
pub unsafe extern "C" fn fchown(fd: c_int, uid: libc::uid_t, gid: libc::gid_t) -> c_int {
    if !fdtable::is_nfs(fd) {
        // SAFETY: plain forward.
        return unsafe { real::fchown(fd, uid, gid) };
    }
    set_fd("fchown", fd, Ok(meta::owner(uid, gid)))
}

#[no_mangle]
pub unsafe extern "C" fn fchownat(
    dirfd: c_int,
    path: *const c_char,
    uid: libc::uid_t,
    gid: libc::gid_t,
    flags: c_int,
) -> c_int {
    // SAFETY: the caller passes a C string.
    let empty = path.is_null() || (!crate::paths::bad_pointer(path) && unsafe { *path } == 0);
    if empty && flags & libc::AT_EMPTY_PATH != 0 && fdtable::is_nfs(dirfd) {
        return set_fd("fchownat", dirfd, Ok(meta::owner(uid, gid)));
    }
    // SAFETY: as above.
    match unsafe { local_first(dirfd, path, || real::fchownat(dirfd, path, uid, gid, flags)) } {
        Ok(v) => v,
        Err(r) => {
            let follow = flags & libc::AT_SYMLINK_NOFOLLOW == 0;
            // SAFETY: a local path a link on NFS led to.
            set_path(
                "fchownat",
                r,
                follow,
                Ok(meta::owner(uid, gid)),
                |p| unsafe { real::fchownat(libc::AT_FDCWD, p, uid, gid, flags) },
            )
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn utimensat(
    dirfd: c_int,
    path: *const c_char,
    times: *const libc::timespec,
    flags: c_int,
) -> c_int {
    if path.is_null() {
        // Linux: utimensat(fd, NULL, ...) is futimens(fd).
        if !fdtable::is_nfs(dirfd) {
            // SAFETY: plain forward.
            return unsafe { real::utimensat(dirfd, path, times, flags) };
        }
        // SAFETY: the caller's times, NULL or two timespecs.
        return set_fd("utimensat", dirfd, unsafe {
            meta::times_from_timespec(times)
        });
    }
    // SAFETY: the caller passes a C string.
    match unsafe { local_first(dirfd, path, || real::utimensat(dirfd, path, times, flags)) } {
        Ok(v) => v,
        Err(r) => {
            let follow = flags & libc::AT_SYMLINK_NOFOLLOW == 0;
            // SAFETY: the caller's times; a local path a link on NFS led to.
            set_path(
                "utimensat",
                r,
                follow,
                unsafe { meta::times_from_timespec(times) },
                |p| unsafe { real::utimensat(libc::AT_FDCWD, p, times, flags) },
            )
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn futimens(fd: c_int, times: *const libc::timespec) -> c_int {
    if !fdtable::is_nfs(fd) {
        // SAFETY: plain forward.
        return unsafe { real::futimens(fd, times) };
    }
    // SAFETY: the caller's times.
    set_fd("futimens", fd, unsafe { meta::times_from_timespec(times) })
}

macro_rules! utimes_like {
    ($name:ident, $follow:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(path: *const c_char, times: *const libc::timeval) -> c_int {
            // SAFETY: the caller passes a C string.
            match unsafe { local_first(libc::AT_FDCWD, path, || real::$name(path, times)) } {
                Ok(v) => v,
                // SAFETY: the caller's times; a local path a link on NFS led to.
                Err(r) => set_path(
                    stringify!($name),
                    r,
                    $follow,
                    unsafe { meta::times_from_timeval(times) },
                    |p| unsafe { real::$name(p, times) },
                ),
            }
        }
    };
}
utimes_like!(utimes, true);
utimes_like!(lutimes, false);

#[no_mangle]
pub unsafe extern "C" fn futimes(fd: c_int, times: *const libc::timeval) -> c_int {
    if !fdtable::is_nfs(fd) {
        // SAFETY: plain forward.
        return unsafe { real::futimes(fd, times) };
    }
    // SAFETY: the caller's times.
    set_fd("futimes", fd, unsafe { meta::times_from_timeval(times) })
}

#[no_mangle]
pub unsafe extern "C" fn futimesat(
    dirfd: c_int,
    path: *const c_char,
    times: *const libc::timeval,
) -> c_int {
    // SAFETY: the caller passes a C string.
    match unsafe { local_first(dirfd, path, || real::futimesat(dirfd, path, times)) } {
        Ok(v) => v,
        // SAFETY: the caller's times; a local path a link on NFS led to.
        Err(r) => set_path(
            "futimesat",
            r,
            true,
            unsafe { meta::times_from_timeval(times) },
            |p| unsafe { real::utimes(p, times) },
        ),
    }
}

#[no_mangle]
pub unsafe extern "C" fn utime(path: *const c_char, times: *const libc::utimbuf) -> c_int {
    // SAFETY: the caller passes a C string.
    match unsafe { local_first(libc::AT_FDCWD, path, || real::utime(path, times)) } {
        Ok(v) => v,
        Err(r) => {
            let tv = if times.is_null() {
                None
            } else {
                // SAFETY: the caller's utimbuf.
                let t = unsafe { *times };
                Some([
                    libc::timeval {
                        tv_sec: t.actime,
                        tv_usec: 0,
                    },
                    libc::timeval {
                        tv_sec: t.modtime,
                        tv_usec: 0,
                    },
                ])
            };
            let ptr = tv.as_ref().map_or(std::ptr::null(), |v| v.as_ptr());
            // SAFETY: ptr is NULL or two timevals; a local path a link on NFS led to.
            set_path(
                "utime",
                r,
                true,
                unsafe { meta::times_from_timeval(ptr) },
                |p| unsafe { real::utime(p, times) },
            )
        }
    }
}
