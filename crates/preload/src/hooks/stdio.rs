//! stdio on NFS files: `fopen`, `freopen`, `fdopen` (see ops/stdio.rs).

use libc::{c_char, c_int, FILE};

use super::{cstr, on_path, st};
use crate::fail::{serve, set_errno, Errno};
use crate::fdtable;
use crate::links::local_first;
use crate::ops::{fds, open as nfs_open, stdio, Out};
use crate::paths::{route, Route};
use crate::real;
use crate::warn;

macro_rules! fopen_like {
    ($name:ident) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(path: *const c_char, mode: *const c_char) -> *mut FILE {
            // SAFETY: the caller passes C strings.
            match unsafe { local_first(libc::AT_FDCWD, path, || real::$name(path, mode)) } {
                Ok(v) => v,
                Err(r) => on_path(
                    stringify!($name),
                    r,
                    // SAFETY: the caller's mode string.
                    |s, p| stdio::fopen(s, p, unsafe { cstr(mode) }?),
                    // SAFETY: a local path a link on NFS led to.
                    |p| unsafe { real::$name(p, mode) },
                ),
            }
        }
    };
}
fopen_like!(fopen);
fopen_like!(fopen64);

#[no_mangle]
pub unsafe extern "C" fn fdopen(fd: c_int, mode: *const c_char) -> *mut FILE {
    let Some(open) = fdtable::get(fd) else {
        // SAFETY: plain forward.
        return unsafe { real::fdopen(fd, mode) };
    };
    serve("fdopen", || {
        // SAFETY: the caller's mode string.
        let m = unsafe { cstr(mode) }?;
        let flags = stdio::open_flags(m)?;
        let wants_write = flags & libc::O_ACCMODE != libc::O_RDONLY;
        let wants_read = flags & libc::O_ACCMODE != libc::O_WRONLY;
        if (wants_write && !open.writable()) || (wants_read && !open.readable()) {
            return Err(Errno(libc::EINVAL));
        }
        if flags & libc::O_APPEND != 0 && open.flags() & libc::O_APPEND == 0 {
            // SAFETY: F_GETFL/F_SETFL of our descriptor.
            let cur = unsafe { real::fcntl(fd, libc::F_GETFL, 0) };
            fds::fcntl(fd, libc::F_SETFL, (cur | libc::O_APPEND) as libc::c_ulong)?;
        }
        stdio::stream(fd, m)
    })
}

macro_rules! freopen_like {
    ($name:ident) => {
        /// An NFS path onto `stdin`, `stdout` or `stderr` is served (the
        /// standard descriptor becomes the NFS file and the stream
        /// variable a stream that reaches it: use the returned pointer or
        /// the variable). An NFS path onto any other stream is
        /// `EOPNOTSUPP` (the stream is left open).
        #[no_mangle]
        pub unsafe extern "C" fn $name(path: *const c_char, mode: *const c_char, stream: *mut FILE) -> *mut FILE {
            let r = if path.is_null() {
                Route::Local
            } else {
                // SAFETY: the caller passes a C string.
                unsafe { route(libc::AT_FDCWD, path) }
            };
            // SAFETY: the caller's stream.
            let cur = if stream.is_null() { -1 } else { unsafe { libc::fileno(stream) } };
            match r {
                Route::Local if path.is_null() && fdtable::is_nfs(cur) => {
                    warn::once("freopen null", || {
                        "freopen(NULL, mode, stream) of a stream on an NFS file is not supported (EOPNOTSUPP)".into()
                    });
                    set_errno(libc::EOPNOTSUPP);
                    std::ptr::null_mut()
                }
                // SAFETY: plain forward.
                Route::Local => unsafe { real::$name(path, mode, stream) },
                r => {
                    let Some(std_fd) = stdio::standard_stream_fd(stream) else {
                        warn::once("freopen", || {
                            "freopen of an NFS file onto a stream other than stdin/stdout/stderr is not supported (EOPNOTSUPP)".into()
                        });
                        set_errno(libc::EOPNOTSUPP);
                        return std::ptr::null_mut();
                    };
                    on_path(
                        stringify!($name),
                        r,
                        |s, p| {
                            // SAFETY: the caller's mode string.
                            let flags = stdio::open_flags(unsafe { cstr(mode) }?)?;
                            // SAFETY: the caller's stream, flushed before its
                            // descriptor changes.
                            unsafe { libc::fflush(stream) };
                            let fd = match nfs_open::open(s, p, flags, 0o666)? {
                                Out::Done(fd) => fd,
                                Out::Local(l) => return Ok(Out::Local(l)),
                            };
                            let _ = st()?;
                            // SAFETY: our own dup2/close entry points.
                            let r = unsafe { crate::hooks::files::dup2(fd, std_fd) };
                            fds::close(fd);
                            if r < 0 {
                                return Err(Errno(crate::fail::errno()));
                            }
                            Ok(Out::Done(stdio::standard_stream(std_fd)))
                        },
                        // SAFETY: a local path a link on NFS led to.
                        |p| unsafe { real::$name(p, mode, stream) },
                    )
                }
            }
        }
    };
}
freopen_like!(freopen);
freopen_like!(freopen64);
