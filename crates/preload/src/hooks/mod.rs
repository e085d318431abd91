//! The C entry points: the symbols that stand in front of libc's. Each
//! one decides in a few instructions whether its call is an NFS call (a
//! path under a mount prefix, a descriptor in the NFS table, a stream or
//! `DIR *` of ours); if not, it calls libc's function with the same
//! arguments and returns its result untouched. NFS calls go to `ops` and
//! come back as a value or an errno.
//!
//! Every exported function is `unsafe extern "C"` with the prototype of
//! the glibc function of the same name (including glibc's `64`,
//! `__xstat`-style and `_chk` variants a Debian 12 program may bind to).

#![allow(clippy::missing_safety_doc)]

pub mod cwd;
pub mod dirs;
pub mod files;
pub mod io;
pub mod names;
pub mod other;
pub mod raw;
pub mod stat;
pub mod stdio;

use std::panic::{catch_unwind, AssertUnwindSafe};

use libc::{c_char, c_void, size_t};

use crate::fail::{set_errno, Errno, FailValue, Res};
use crate::ops::Out;
use crate::paths::{NfsPath, Route};
use crate::state::{self, State};
use crate::warn;

/// The state; NFS calls only happen when it exists.
pub fn st() -> Res<&'static State> {
    state::get().ok_or(Errno(libc::EBADF))
}

/// Serves a call on an NFS path (`route` is not `Local`): `work` on the
/// NFS path, or `local` when a link on NFS led to a local path.
pub fn on_path<T: FailValue>(
    name: &'static str,
    route: Route,
    work: impl FnOnce(&State, NfsPath) -> Res<Out<T>>,
    local: impl FnOnce(*const c_char) -> T,
) -> T {
    let path = match route {
        Route::Nfs(p) => p,
        Route::Redirect(p) => return local(p.as_ptr()),
        Route::Bad(e) => {
            set_errno(e);
            return T::fail_value();
        }
        Route::Local => {
            set_errno(libc::EINVAL);
            return T::fail_value();
        }
    };
    let outcome = crate::tally::measured(name, || {
        catch_unwind(AssertUnwindSafe(|| {
            let state = st()?;
            crate::resolve::check_via(state, &path)?;
            work(state, path)
        }))
    });
    match outcome {
        Ok(Ok(Out::Done(v))) => v,
        Ok(Ok(Out::Local(p))) => local(p.as_ptr()),
        Ok(Err(Errno(e))) => {
            set_errno(e);
            T::fail_value()
        }
        Err(_) => {
            warn::always(&format!("internal error in {name}; reported as EIO"));
            set_errno(libc::EIO);
            T::fail_value()
        }
    }
}

/// A path call whose work never leads to a local path (links are not
/// followed); `local` serves a [`Route::Redirect`].
pub fn on_path_only<T: FailValue>(
    name: &'static str,
    route: Route,
    work: impl FnOnce(&State, NfsPath) -> Res<T>,
    local: impl FnOnce(*const c_char) -> T,
) -> T {
    on_path(name, route, |s, p| work(s, p).map(Out::Done), local)
}

/// The caller's buffer as a slice (`EFAULT` for NULL with a length).
///
/// # Safety
/// `p` is NULL or valid for `n` bytes for `'a`.
pub unsafe fn buf_mut<'a>(p: *mut c_void, n: size_t) -> Res<&'a mut [u8]> {
    if n == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(Errno(libc::EFAULT));
    }
    // SAFETY: per the contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(p.cast(), n) })
}

/// The caller's data as a slice (`EFAULT` for NULL with a length).
///
/// # Safety
/// `p` is NULL or valid for `n` bytes for `'a`.
pub unsafe fn buf<'a>(p: *const c_void, n: size_t) -> Res<&'a [u8]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Errno(libc::EFAULT));
    }
    // SAFETY: per the contract.
    Ok(unsafe { std::slice::from_raw_parts(p.cast(), n) })
}

/// A C string's bytes (`EFAULT` for NULL and other pointers
/// `paths::bad_pointer` knows to be bad).
///
/// # Safety
/// `p` is NULL or NUL-terminated.
pub unsafe fn cstr<'a>(p: *const c_char) -> Res<&'a [u8]> {
    if crate::paths::bad_pointer(p) {
        return Err(Errno(libc::EFAULT));
    }
    // SAFETY: per the contract.
    Ok(unsafe { std::ffi::CStr::from_ptr(p) }.to_bytes())
}

/// `_FORTIFY_SOURCE`'s failure: glibc's `__chk_fail` (prints "buffer
/// overflow detected" and aborts).
pub fn chk_fail() -> ! {
    let addr = crate::real::next_symbol(c"__chk_fail");
    if addr != 0 {
        // SAFETY: glibc's `void __chk_fail(void)`, which does not return.
        let f: extern "C" fn() -> ! = unsafe { std::mem::transmute(addr) };
        f();
    }
    std::process::abort()
}
