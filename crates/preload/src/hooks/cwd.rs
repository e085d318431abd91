//! The current directory: `chdir`, `fchdir`, `getcwd`, and the calls that
//! return absolute paths (`realpath`, `get_current_dir_name`).

use libc::{c_char, c_int, size_t};

use super::{on_path, st};
use crate::cwd;
use crate::fail::{serve, Errno, Res};
use crate::fdtable;
use crate::links::local_first;
use crate::ops::Out;
use crate::paths::NfsPath;
use crate::real;
use crate::resolve::{self, Resolved};
use crate::shadow::Kind;
use crate::state::{self, State};

/// Enters an NFS directory (links followed).
fn chdir_nfs(s: &State, p: NfsPath) -> Res<Out<c_int>> {
    let f = match resolve::resolve(s, p, true)? {
        Resolved::Nfs(f) => f,
        Resolved::Local(l) => return Ok(Out::Local(l)),
    };
    if !f.meta.is_dir() {
        return Err(Errno(libc::ENOTDIR));
    }
    let who = crate::ops::access::Who::effective(s, f.path.mount);
    if !crate::ops::access::may(who, &f.meta, libc::X_OK) {
        return Err(Errno(libc::EACCES));
    }
    cwd::enter_nfs(s, &f.path);
    Ok(Out::Done(0))
}

/// A local `chdir`/`fchdir` through libc, then the new directory noted.
fn local_chdir(r: c_int) -> c_int {
    if r == 0 {
        if let Some(s) = state::get() {
            cwd::refresh_from_kernel(s);
        }
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn chdir(path: *const c_char) -> c_int {
    // SAFETY: the caller passes a C string.
    match unsafe { local_first(libc::AT_FDCWD, path, || real::chdir(path)) } {
        Ok(v) => local_chdir(v),
        // SAFETY: a local path a link on NFS led to.
        Err(r) => on_path("chdir", r, chdir_nfs, |p| {
            local_chdir(unsafe { real::chdir(p) })
        }),
    }
}

#[no_mangle]
pub unsafe extern "C" fn fchdir(fd: c_int) -> c_int {
    let Some(open) = fdtable::get(fd) else {
        // SAFETY: plain forward.
        return local_chdir(unsafe { real::fchdir(fd) });
    };
    serve("fchdir", || {
        if open.kind != Kind::Dir {
            return Err(Errno(libc::ENOTDIR));
        }
        let Some(p) = open.path.clone() else {
            crate::warn::once("fchdir inherited", || {
                "fchdir to an NFS directory descriptor inherited across exec is not supported (EOPNOTSUPP)".into()
            });
            return Err(Errno(libc::EOPNOTSUPP));
        };
        match chdir_nfs(st()?, p)? {
            Out::Done(v) => Ok(v),
            Out::Local(_) => Err(Errno(libc::EXDEV)),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn getcwd(buf: *mut c_char, size: size_t) -> *mut c_char {
    // SAFETY: the caller's buffer, as getcwd's contract says.
    match unsafe { cwd::getcwd_nfs(buf, size) } {
        None => unsafe { real::getcwd(buf, size) },
        Some(r) => serve("getcwd", || r),
    }
}

#[no_mangle]
pub unsafe extern "C" fn __getcwd_chk(
    buf: *mut c_char,
    size: size_t,
    buflen: size_t,
) -> *mut c_char {
    if !cwd::answers_getcwd() {
        // SAFETY: plain forward.
        return unsafe { real::__getcwd_chk(buf, size, buflen) };
    }
    if size > buflen {
        super::chk_fail();
    }
    // SAFETY: as getcwd.
    unsafe { getcwd(buf, size) }
}

#[no_mangle]
pub unsafe extern "C" fn get_current_dir_name() -> *mut c_char {
    if !cwd::answers_getcwd() {
        // SAFETY: plain forward.
        return unsafe { real::get_current_dir_name() };
    }
    // SAFETY: NULL buffer: getcwd allocates.
    unsafe { getcwd(std::ptr::null_mut(), 0) }
}

/// `realpath` of an NFS path: links on NFS resolved, `.`/`..` folded; the
/// object must exist.
fn realpath_nfs(s: &State, p: NfsPath, resolved: *mut c_char) -> Res<Out<*mut c_char>> {
    let f = match resolve::resolve(s, p, true)? {
        Resolved::Nfs(f) => f,
        Resolved::Local(l) => return Ok(Out::Local(l)),
    };
    let host = f.path.host;
    if host.len() >= libc::PATH_MAX as usize {
        return Err(Errno(libc::ENAMETOOLONG));
    }
    let out = if resolved.is_null() {
        // SAFETY: malloc; the caller frees it.
        let p = unsafe { libc::malloc(host.len() + 1) } as *mut c_char;
        if p.is_null() {
            return Err(Errno(libc::ENOMEM));
        }
        p
    } else {
        resolved
    };
    // SAFETY: `out` holds PATH_MAX bytes (the caller's) or host.len() + 1.
    unsafe { cwd::copy_c(&host, out) };
    Ok(Out::Done(out))
}

#[no_mangle]
pub unsafe extern "C" fn realpath(path: *const c_char, resolved: *mut c_char) -> *mut c_char {
    // SAFETY: the caller passes a C string.
    match unsafe { local_first(libc::AT_FDCWD, path, || real::realpath(path, resolved)) } {
        Ok(v) => v,
        // SAFETY: a local path a link on NFS led to.
        Err(r) => on_path(
            "realpath",
            r,
            |s, p| realpath_nfs(s, p, resolved),
            |p| unsafe { real::realpath(p, resolved) },
        ),
    }
}

#[no_mangle]
pub unsafe extern "C" fn __realpath_chk(
    path: *const c_char,
    resolved: *mut c_char,
    resolvedlen: size_t,
) -> *mut c_char {
    // SAFETY: the caller passes a C string.
    match unsafe {
        local_first(libc::AT_FDCWD, path, || {
            real::__realpath_chk(path, resolved, resolvedlen)
        })
    } {
        Ok(v) => v,
        _ if !resolved.is_null() && resolvedlen < libc::PATH_MAX as size_t => super::chk_fail(),
        // SAFETY: as realpath.
        _ => unsafe { realpath(path, resolved) },
    }
}

#[no_mangle]
pub unsafe extern "C" fn canonicalize_file_name(path: *const c_char) -> *mut c_char {
    // SAFETY: the caller passes a C string.
    match unsafe { local_first(libc::AT_FDCWD, path, || real::canonicalize_file_name(path)) } {
        Ok(v) => v,
        // SAFETY: as realpath with a NULL buffer.
        _ => unsafe { realpath(path, std::ptr::null_mut()) },
    }
}
