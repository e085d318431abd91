//! Directory streams: `opendir`, `fdopendir`, `readdir` and the rest,
//! `scandir`.

use libc::{c_char, c_int, c_long, c_void, DIR};

use super::{on_path, st};
use crate::fail::{serve, set_errno, Errno, Res};
use crate::fdtable;
use crate::links::local_first;
use crate::ops::dirs::{self, NfsDir};
use crate::ops::{fds, open as nfs_open, Out};
use crate::real;

#[no_mangle]
pub unsafe extern "C" fn opendir(path: *const c_char) -> *mut DIR {
    // SAFETY: the caller passes a C string.
    match unsafe { local_first(libc::AT_FDCWD, path, || real::opendir(path)) } {
        Ok(v) => v,
        Err(r) => on_path(
            "opendir",
            r,
            |s, p| {
                let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC;
                let fd = match nfs_open::open(s, p, flags, 0)? {
                    Out::Done(fd) => fd,
                    Out::Local(l) => return Ok(Out::Local(l)),
                };
                match dirs::fdopendir(fd) {
                    Ok(d) => Ok(Out::Done(d)),
                    Err(e) => {
                        fds::close(fd);
                        Err(e)
                    }
                }
            },
            // SAFETY: a local path a link on NFS led to.
            |p| unsafe { real::opendir(p) },
        ),
    }
}

#[no_mangle]
pub unsafe extern "C" fn fdopendir(fd: c_int) -> *mut DIR {
    if !fdtable::is_nfs(fd) {
        // SAFETY: plain forward.
        return unsafe { real::fdopendir(fd) };
    }
    serve("fdopendir", || dirs::fdopendir(fd))
}

/// The next entry of one of our streams (NULL at the end, errno kept).
unsafe fn next_entry(dir: *mut DIR) -> *mut libc::dirent64 {
    // SAFETY: the caller checked `is_ours`.
    let d = unsafe { dirs::ours(dir) };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(
        || -> Res<*mut libc::dirent64> {
            Ok(match d.next(st()?)? {
                Some(e) => e as *mut libc::dirent64,
                None => std::ptr::null_mut(),
            })
        },
    ));
    match result {
        Ok(Ok(p)) => p,
        Ok(Err(Errno(e))) => {
            set_errno(e);
            std::ptr::null_mut()
        }
        Err(_) => {
            set_errno(libc::EIO);
            std::ptr::null_mut()
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn readdir(dir: *mut DIR) -> *mut libc::dirent {
    // SAFETY: the caller passes a stream from opendir.
    if !unsafe { dirs::is_ours(dir) } {
        return unsafe { real::readdir(dir) };
    }
    // dirent and dirent64 have one layout on LP64 Linux.
    // SAFETY: checked ours.
    unsafe { next_entry(dir) }.cast()
}

#[no_mangle]
pub unsafe extern "C" fn readdir64(dir: *mut DIR) -> *mut libc::dirent64 {
    // SAFETY: the caller passes a stream from opendir.
    if !unsafe { dirs::is_ours(dir) } {
        return unsafe { real::readdir64(dir) };
    }
    // SAFETY: checked ours.
    unsafe { next_entry(dir) }
}

macro_rules! readdir_r_like {
    ($name:ident, $ty:ty) => {
        /// Returns an error number, as POSIX says.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            dir: *mut DIR,
            entry: *mut $ty,
            result: *mut *mut $ty,
        ) -> c_int {
            // SAFETY: the caller passes a stream from opendir.
            if !unsafe { dirs::is_ours(dir) } {
                return unsafe { real::$name(dir, entry, result) };
            }
            let saved = crate::fail::errno();
            set_errno(0);
            // SAFETY: checked ours.
            let e = unsafe { next_entry(dir) };
            let err = crate::fail::errno();
            set_errno(saved);
            // SAFETY: the caller's entry and result.
            unsafe {
                if e.is_null() {
                    *result = std::ptr::null_mut();
                    return err;
                }
                std::ptr::copy_nonoverlapping(e.cast::<$ty>(), entry, 1);
                *result = entry;
            }
            0
        }
    };
}
readdir_r_like!(readdir_r, libc::dirent);
readdir_r_like!(readdir64_r, libc::dirent64);

#[no_mangle]
pub unsafe extern "C" fn closedir(dir: *mut DIR) -> c_int {
    // SAFETY: the caller passes a stream from opendir.
    if !unsafe { dirs::is_ours(dir) } {
        return unsafe { real::closedir(dir) };
    }
    // SAFETY: ours, and the caller does not use it again.
    unsafe { NfsDir::close(dir) }
}

#[no_mangle]
pub unsafe extern "C" fn dirfd(dir: *mut DIR) -> c_int {
    // SAFETY: the caller passes a stream from opendir.
    if !unsafe { dirs::is_ours(dir) } {
        return unsafe { real::dirfd(dir) };
    }
    // SAFETY: checked ours.
    unsafe { dirs::ours(dir) }.fd()
}

#[no_mangle]
pub unsafe extern "C" fn rewinddir(dir: *mut DIR) {
    // SAFETY: the caller passes a stream from opendir.
    if !unsafe { dirs::is_ours(dir) } {
        return unsafe { real::rewinddir(dir) };
    }
    // SAFETY: checked ours.
    unsafe { dirs::ours(dir) }.rewind();
}

#[no_mangle]
pub unsafe extern "C" fn telldir(dir: *mut DIR) -> c_long {
    // SAFETY: the caller passes a stream from opendir.
    if !unsafe { dirs::is_ours(dir) } {
        return unsafe { real::telldir(dir) };
    }
    // SAFETY: checked ours.
    unsafe { dirs::ours(dir) }.tell()
}

#[no_mangle]
pub unsafe extern "C" fn seekdir(dir: *mut DIR, pos: c_long) {
    // SAFETY: the caller passes a stream from opendir.
    if !unsafe { dirs::is_ours(dir) } {
        return unsafe { real::seekdir(dir, pos) };
    }
    // SAFETY: checked ours.
    unsafe { dirs::ours(dir) }.seek(pos);
}

type Filter = unsafe extern "C" fn(*const libc::dirent64) -> c_int;
type Compar = unsafe extern "C" fn(*const c_void, *const c_void) -> c_int;

/// `scandir` of an NFS directory: our streams, glibc's contract (entries
/// and the list are `malloc`ed; the caller frees them).
unsafe fn scandir_nfs(
    path: *const c_char,
    list: *mut *mut *mut libc::dirent64,
    filter: *const c_void,
    compar: *const c_void,
) -> c_int {
    // SAFETY: the caller passes a C string.
    let dir = unsafe { opendir(path) };
    if dir.is_null() {
        return -1;
    }
    let mut entries: Vec<*mut libc::dirent64> = Vec::new();
    let filter: Option<Filter> = (!filter.is_null()).then(|| {
        // SAFETY: the caller's filter function.
        unsafe { std::mem::transmute::<*const c_void, Filter>(filter) }
    });
    let fail = |entries: &Vec<*mut libc::dirent64>, e: c_int| {
        for &p in entries {
            // SAFETY: malloc'ed below.
            unsafe { libc::free(p.cast()) };
        }
        // SAFETY: ours.
        unsafe { closedir(dir) };
        set_errno(e);
        -1
    };
    loop {
        set_errno(0);
        // SAFETY: ours.
        let e = unsafe { readdir64(dir) };
        if e.is_null() {
            let err = crate::fail::errno();
            if err != 0 {
                return fail(&entries, err);
            }
            break;
        }
        // SAFETY: the caller's filter on a valid entry.
        if let Some(f) = filter {
            if unsafe { f(e) } == 0 {
                continue;
            }
        }
        let size = std::mem::size_of::<libc::dirent64>();
        // SAFETY: malloc of a struct's size, filled from a valid entry.
        let copy = unsafe { libc::malloc(size) } as *mut libc::dirent64;
        if copy.is_null() {
            return fail(&entries, libc::ENOMEM);
        }
        unsafe { std::ptr::copy_nonoverlapping(e, copy, 1) };
        entries.push(copy);
    }
    // SAFETY: ours.
    unsafe { closedir(dir) };
    let n = entries.len();
    // SAFETY: malloc of n pointers (at least one byte), filled below.
    let array = unsafe { libc::malloc(n.max(1) * std::mem::size_of::<*mut libc::dirent64>()) }
        as *mut *mut libc::dirent64;
    if array.is_null() {
        return fail(&entries, libc::ENOMEM);
    }
    // SAFETY: array holds n pointers; qsort with the caller's comparison.
    unsafe {
        std::ptr::copy_nonoverlapping(entries.as_ptr(), array, n);
        if !compar.is_null() && n > 1 {
            let c = std::mem::transmute::<*const c_void, Compar>(compar);
            libc::qsort(
                array.cast(),
                n,
                std::mem::size_of::<*mut libc::dirent64>(),
                Some(c),
            );
        }
        *list = array;
    }
    n as c_int
}

#[no_mangle]
pub unsafe extern "C" fn scandir(
    path: *const c_char,
    list: *mut *mut *mut libc::dirent,
    filter: *const c_void,
    compar: *const c_void,
) -> c_int {
    // SAFETY: the caller passes a C string.
    match unsafe {
        local_first(libc::AT_FDCWD, path, || {
            real::scandir(path, list, filter, compar)
        })
    } {
        Ok(v) => v,
        // SAFETY: same contract; dirent is dirent64 on LP64.
        _ => unsafe { scandir_nfs(path, list.cast(), filter, compar) },
    }
}

#[no_mangle]
pub unsafe extern "C" fn scandir64(
    path: *const c_char,
    list: *mut *mut *mut libc::dirent64,
    filter: *const c_void,
    compar: *const c_void,
) -> c_int {
    // SAFETY: the caller passes a C string.
    match unsafe {
        local_first(libc::AT_FDCWD, path, || {
            real::scandir64(path, list, filter, compar)
        })
    } {
        Ok(v) => v,
        // SAFETY: same contract.
        _ => unsafe { scandir_nfs(path, list, filter, compar) },
    }
}
