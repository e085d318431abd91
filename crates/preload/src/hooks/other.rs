//! The rest: `umask`, extended attributes, temporary files, asynchronous
//! I/O, `posix_spawn` file actions (`syscall(2)` is in `raw.rs`).

use libc::{c_char, c_int, c_long, c_uint, c_void, mode_t, size_t, ssize_t};

use super::on_path_only;
use crate::config;
use crate::fail::{set_errno, Errno};
use crate::fdtable;
use crate::links::local_first;
use crate::ops::unsupported;
use crate::paths::{route, Route};
use crate::real;
use crate::warn;

#[no_mangle]
pub unsafe extern "C" fn umask(mask: mode_t) -> mode_t {
    config::set_umask(mask);
    // SAFETY: plain forward.
    unsafe { real::umask(mask) }
}

/// NFSv3 has no extended attributes: `ENOTSUP` (what `ls`, `cp -a` and
/// `tar --xattrs` expect of a file system without them).
fn no_xattrs<T: crate::fail::FailValue>(
    name: &'static str,
    r: Route,
    local: impl FnOnce(*const c_char) -> T,
) -> T {
    on_path_only(name, r, |_, _| Err(Errno(libc::ENOTSUP)), local)
}

macro_rules! xattr_path {
    ($name:ident, ($($arg:ident: $ty:ty),*) -> $ret:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(path: *const c_char $(, $arg: $ty)*) -> $ret {
            // SAFETY: the caller passes a C string.
            match unsafe { local_first(libc::AT_FDCWD, path, || real::$name(path $(, $arg)*)) } {
                Ok(v) => v,
                // SAFETY: a local path the NFS path folded to.
                Err(r) => no_xattrs(stringify!($name), r, |p| unsafe { real::$name(p $(, $arg)*) }),
            }
        }
    };
}
xattr_path!(getxattr, (name: *const c_char, value: *mut c_void, size: size_t) -> ssize_t);
xattr_path!(lgetxattr, (name: *const c_char, value: *mut c_void, size: size_t) -> ssize_t);
xattr_path!(listxattr, (list: *mut c_char, size: size_t) -> ssize_t);
xattr_path!(llistxattr, (list: *mut c_char, size: size_t) -> ssize_t);
xattr_path!(setxattr, (name: *const c_char, value: *const c_void, size: size_t, flags: c_int) -> c_int);
xattr_path!(lsetxattr, (name: *const c_char, value: *const c_void, size: size_t, flags: c_int) -> c_int);
xattr_path!(removexattr, (name: *const c_char) -> c_int);
xattr_path!(lremovexattr, (name: *const c_char) -> c_int);

macro_rules! xattr_fd {
    ($name:ident, ($($arg:ident: $ty:ty),*) -> $ret:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(fd: c_int $(, $arg: $ty)*) -> $ret {
            if !fdtable::is_nfs(fd) {
                // SAFETY: plain forward.
                return unsafe { real::$name(fd $(, $arg)*) };
            }
            set_errno(libc::ENOTSUP);
            <$ret as crate::fail::FailValue>::fail_value()
        }
    };
}
xattr_fd!(fgetxattr, (name: *const c_char, value: *mut c_void, size: size_t) -> ssize_t);
xattr_fd!(flistxattr, (list: *mut c_char, size: size_t) -> ssize_t);
xattr_fd!(fsetxattr, (name: *const c_char, value: *const c_void, size: size_t, flags: c_int) -> c_int);
xattr_fd!(fremovexattr, (name: *const c_char) -> c_int);

/// The `mkstemp` family on an NFS template: glibc's versions open with
/// internal calls, so the names are tried here (`O_CREAT | O_EXCL`, an
/// EXCLUSIVE CREATE on the server).
unsafe fn mkstemp_nfs(
    template: *mut c_char,
    suffix: c_int,
    flags: c_int,
    dir: bool,
) -> Option<c_int> {
    if template.is_null() {
        return None;
    }
    // SAFETY: the caller's template, NUL-terminated.
    let len = unsafe { libc::strlen(template) };
    let suffix = suffix.max(0) as usize;
    // SAFETY: the caller passes a C string.
    let r = unsafe { route(libc::AT_FDCWD, template) };
    let Route::Nfs(_) = r else {
        if let Route::Bad(e) = r {
            set_errno(e);
            return Some(-1);
        }
        return None;
    };
    if len < 6 + suffix {
        set_errno(libc::EINVAL);
        return Some(-1);
    }
    let xs = len - suffix - 6;
    // SAFETY: the six bytes before the suffix are inside the template.
    let tail = unsafe { std::slice::from_raw_parts_mut(template.add(xs) as *mut u8, 6) };
    if tail != b"XXXXXX" {
        set_errno(libc::EINVAL);
        return Some(-1);
    }
    const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    for _ in 0..100 {
        let mut rnd = [0u8; 6];
        // SAFETY: buffer of 6 bytes.
        unsafe { libc::getrandom(rnd.as_mut_ptr().cast(), 6, 0) };
        for (t, r) in tail.iter_mut().zip(rnd) {
            *t = CHARS[r as usize % CHARS.len()];
        }
        // SAFETY: the template is a C string again.
        let result = if dir {
            unsafe { crate::hooks::names::mkdir(template, 0o700) }
        } else {
            // SAFETY: as above.
            unsafe {
                crate::hooks::files::open(
                    template,
                    (flags & !libc::O_ACCMODE) | libc::O_RDWR | libc::O_CREAT | libc::O_EXCL,
                    0o600,
                )
            }
        };
        if result >= 0 || crate::fail::errno() != libc::EEXIST {
            return Some(result);
        }
    }
    set_errno(libc::EEXIST);
    Some(-1)
}

/// `mkstemp` and its forms: on NFS, the template's name made and created
/// here (glibc's own would open it with its internal `open`, which no
/// preloaded library sees); elsewhere, libc's. The `64` names are the
/// ones a program built with `_FILE_OFFSET_BITS=64` binds to (git does).
macro_rules! mkstemp_like {
    ($name:ident, $real:ident, ($($arg:ident: $ty:ty),*), $suffix:expr, $flags:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(template: *mut c_char $(, $arg: $ty)*) -> c_int {
            // SAFETY: forwarded contract.
            unsafe {
                mkstemp_nfs(template, $suffix, $flags, false)
                    .unwrap_or_else(|| real::$real(template $(, $arg)*))
            }
        }
    };
}
mkstemp_like!(mkstemp, mkstemp, (), 0, 0);
mkstemp_like!(mkstemp64, mkstemp64, (), 0, 0);
mkstemp_like!(mkostemp, mkostemp, (flags: c_int), 0, flags);
mkstemp_like!(mkostemp64, mkostemp64, (flags: c_int), 0, flags);
mkstemp_like!(mkstemps, mkstemps, (suffixlen: c_int), suffixlen, 0);
mkstemp_like!(mkstemps64, mkstemps64, (suffixlen: c_int), suffixlen, 0);
mkstemp_like!(mkostemps, mkostemps, (suffixlen: c_int, flags: c_int), suffixlen, flags);
mkstemp_like!(mkostemps64, mkostemps64, (suffixlen: c_int, flags: c_int), suffixlen, flags);

#[no_mangle]
pub unsafe extern "C" fn mkdtemp(template: *mut c_char) -> *mut c_char {
    // SAFETY: forwarded contract.
    match unsafe { mkstemp_nfs(template, 0, 0, true) } {
        None => unsafe { real::mkdtemp(template) },
        Some(r) if r >= 0 => template,
        Some(_) => std::ptr::null_mut(),
    }
}

/// libaio's `io_setup`: refused (`-ENOSYS`, libaio's convention) in a
/// process this library serves, unless allowed
/// (`unsupported::kernel_aio_allowed`).
#[no_mangle]
pub unsafe extern "C" fn io_setup(maxevents: c_int, ctx: *mut libc::c_ulong) -> c_int {
    if !unsupported::kernel_aio_allowed("io_setup") {
        return -libc::ENOSYS;
    }
    // SAFETY: plain forward.
    unsafe { real::io_setup(maxevents, ctx) }
}

/// libaio's `io_submit`: refused (`-EOPNOTSUPP`, libaio's convention) when
/// an iocb names an NFS descriptor.
#[no_mangle]
pub unsafe extern "C" fn io_submit(
    ctx: libc::c_ulong,
    nr: c_long,
    iocbs: *mut *mut c_void,
) -> c_int {
    // SAFETY: the caller's iocb array.
    if unsafe { unsupported::io_submit_refused(nr, iocbs) } {
        return -libc::EOPNOTSUPP;
    }
    // SAFETY: plain forward.
    unsafe { real::io_submit(ctx, nr, iocbs) }
}

/// liburing's ring set-up: refused (`-ENOSYS`, liburing's convention) in
/// a process this library serves, unless allowed
/// (`unsupported::kernel_aio_allowed`).
macro_rules! liburing_setup {
    ($name:ident, ($($arg:ident: $ty:ty),*)) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
            if !unsupported::kernel_aio_allowed(stringify!($name)) {
                return -libc::ENOSYS;
            }
            // SAFETY: plain forward.
            let r = unsafe { real::$name($($arg),*) };
            if r == 0 {
                unsupported::liburing_ring_made();
            }
            r
        }
    };
}
liburing_setup!(io_uring_queue_init, (entries: c_uint, ring: *mut c_void, flags: c_uint));
liburing_setup!(io_uring_queue_init_params, (entries: c_uint, ring: *mut c_void, params: *mut c_void));
liburing_setup!(
    io_uring_queue_init_mem,
    (entries: c_uint, ring: *mut c_void, params: *mut c_void, buf: *mut c_void, size: size_t)
);

/// True (errno set) if a POSIX AIO control block names an NFS descriptor.
///
/// # Safety
/// `cb` is NULL or a valid control block.
unsafe fn aio_refused(cb: *const libc::aiocb, call: &'static str) -> bool {
    // SAFETY: per the contract.
    let fd = if cb.is_null() {
        -1
    } else {
        unsafe { (*cb).aio_fildes }
    };
    match unsupported::check_posix_aio(fd, call) {
        Ok(()) => false,
        Err(Errno(e)) => {
            set_errno(e);
            true
        }
    }
}

macro_rules! posix_aio {
    ($name:ident ($($arg:ident: $ty:ty),*)) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty,)* cb: *mut libc::aiocb) -> c_int {
            // SAFETY: the caller's control block.
            if unsafe { aio_refused(cb, stringify!($name)) } {
                return -1;
            }
            // SAFETY: plain forward.
            unsafe { real::$name($($arg,)* cb) }
        }
    };
}
posix_aio!(aio_read());
posix_aio!(aio_write());
posix_aio!(aio_read64());
posix_aio!(aio_write64());
posix_aio!(aio_fsync(op: c_int));
posix_aio!(aio_fsync64(op: c_int));

macro_rules! lio {
    ($name:ident) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            mode: c_int,
            list: *const *mut libc::aiocb,
            n: c_int,
            sev: *mut libc::sigevent,
        ) -> c_int {
            for i in 0..n.max(0) as usize {
                // SAFETY: the caller's list of n control blocks (NULL allowed).
                let cb = if list.is_null() {
                    std::ptr::null_mut()
                } else {
                    unsafe { *list.add(i) }
                };
                // SAFETY: as above (NULL entries are skipped by aio_refused).
                if unsafe { aio_refused(cb, stringify!($name)) } {
                    return -1;
                }
            }
            // SAFETY: plain forward.
            unsafe { real::$name(mode, list, n, sev) }
        }
    };
}
lio!(lio_listio);
lio!(lio_listio64);

/// `posix_spawn` opens its file actions' paths in the child with internal
/// calls; an NFS path there cannot be served: `EOPNOTSUPP`. (Open the file
/// first and use `posix_spawn_file_actions_adddup2`.)
#[no_mangle]
pub unsafe extern "C" fn posix_spawn_file_actions_addopen(
    actions: *mut c_void,
    fd: c_int,
    path: *const c_char,
    flags: c_int,
    mode: mode_t,
) -> c_int {
    // SAFETY: the caller passes a C string.
    match unsafe { route(libc::AT_FDCWD, path) } {
        Route::Local => unsafe {
            real::posix_spawn_file_actions_addopen(actions, fd, path, flags, mode)
        },
        _ => {
            warn::once("posix_spawn", || {
                "posix_spawn_file_actions_addopen with an NFS path is not supported (EOPNOTSUPP): the child opens it with internal calls".into()
            });
            libc::EOPNOTSUPP
        }
    }
}

/// `bind(2)` of a unix socket whose name is an NFS path (absolute, or
/// relative to an NFS current directory, which the kernel would put in
/// the empty local mirror of that directory, where no one on NFS finds
/// it): `EOPNOTSUPP`, as for `mknod` of a socket on NFS. Every other
/// `bind` is libc's.
#[no_mangle]
pub unsafe extern "C" fn bind(
    fd: c_int,
    addr: *const libc::sockaddr,
    len: libc::socklen_t,
) -> c_int {
    // SAFETY: the caller's address, of `len` bytes.
    if unsafe { unix_name_on_nfs(addr, len) } {
        warn::once("bind unix socket", || {
            "bind of a unix socket on an NFS path is not supported (EOPNOTSUPP): NFS holds no sockets".into()
        });
        set_errno(libc::EOPNOTSUPP);
        return -1;
    }
    // SAFETY: plain forward.
    unsafe { real::bind(fd, addr, len) }
}

/// True if `addr` is a unix socket address with a path name that routes
/// to NFS (not abstract, not unnamed).
///
/// # Safety
/// `addr` is NULL or valid for `len` bytes.
unsafe fn unix_name_on_nfs(addr: *const libc::sockaddr, len: libc::socklen_t) -> bool {
    let path_at = std::mem::offset_of!(libc::sockaddr_un, sun_path);
    let len = len as usize;
    if crate::state::get().is_none() || addr.is_null() || len <= path_at + 1 {
        return false;
    }
    // SAFETY: at least the family is within `len` bytes.
    if c_int::from(unsafe { (*addr).sa_family }) != libc::AF_UNIX {
        return false;
    }
    let max = len.min(std::mem::size_of::<libc::sockaddr_un>());
    // SAFETY: the bytes of the address within `len`.
    let bytes = unsafe { std::slice::from_raw_parts(addr.cast::<u8>(), max) };
    let name = &bytes[path_at..];
    if name[0] == 0 {
        return false; // abstract
    }
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    let Some(state) = crate::state::get() else {
        return false;
    };
    !matches!(
        crate::paths::route_bytes(state, libc::AT_FDCWD, &name[..end]),
        Route::Local
    )
}
