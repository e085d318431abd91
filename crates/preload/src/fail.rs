//! How a served call reports failure: an errno, set the way libc sets it,
//! and the failure value of the call's return type. Every entry point runs
//! its work inside [`serve`] (or, for the closing calls, [`contained`]),
//! which also turns a panic into `EIO`: nothing unwinds into the host
//! program.

use std::panic::{catch_unwind, AssertUnwindSafe};

use libc::{c_int, c_long, off_t, ssize_t};

/// A failed call: the errno to set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Errno(pub c_int);

/// The result of the work behind one call.
pub type Res<T> = Result<T, Errno>;

impl From<dnfs::Error> for Errno {
    fn from(e: dnfs::Error) -> Self {
        Errno(e.errno())
    }
}

/// Return types with a failure value (`-1`, `NULL`).
pub trait FailValue {
    /// The value returned with errno set.
    fn fail_value() -> Self;
}

impl FailValue for c_int {
    fn fail_value() -> Self {
        -1
    }
}
impl FailValue for ssize_t {
    fn fail_value() -> Self {
        -1
    }
}
impl FailValue for off_t {
    fn fail_value() -> Self {
        -1
    }
}
impl<T> FailValue for *mut T {
    fn fail_value() -> Self {
        std::ptr::null_mut()
    }
}
/// A result the entry point still has to turn into the C one (errno is
/// already set when it is `None`).
impl<T> FailValue for Option<T> {
    fn fail_value() -> Self {
        None
    }
}

/// Sets errno.
pub fn set_errno(e: c_int) {
    // SAFETY: errno is thread-local storage of the calling thread.
    unsafe { *libc::__errno_location() = e };
}

/// Reads errno.
pub fn errno() -> c_int {
    // SAFETY: as above.
    unsafe { *libc::__errno_location() }
}

/// Runs the work of a served call: its value, or errno set and the
/// failure value. A panic (a bug) is reported as `EIO` with a message.
pub fn serve<T: FailValue>(name: &'static str, work: impl FnOnce() -> Res<T>) -> T {
    match crate::tally::measured(name, || catch_unwind(AssertUnwindSafe(work))) {
        Ok(Ok(v)) => v,
        Ok(Err(Errno(e))) => {
            set_errno(e);
            T::fail_value()
        }
        Err(_) => {
            crate::warn::always(&format!("internal error in {name}; reported as EIO"));
            set_errno(libc::EIO);
            T::fail_value()
        }
    }
}

/// Runs library work that must not unwind into the host program but is
/// not a whole call: a panic (a bug) is said on stderr and gives
/// `otherwise`. `close` runs its NFS part (write-behind, the last
/// reference's CLOSE) in it and closes the kernel's descriptor whatever
/// happened; so do `close_range`, `closefrom`, `dup2` over an NFS
/// descriptor, and a stdio stream's close.
pub fn contained<T>(name: &'static str, otherwise: T, work: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(work)) {
        Ok(v) => v,
        Err(_) => {
            crate::warn::always(&format!("internal error in {name}; reported as EIO"));
            otherwise
        }
    }
}

/// [`serve`] for calls that return an error number instead of setting
/// errno (`posix_fallocate`, `posix_fadvise`, `readdir_r`).
pub fn serve_errnum(name: &'static str, work: impl FnOnce() -> Res<()>) -> c_int {
    match crate::tally::measured(name, || catch_unwind(AssertUnwindSafe(work))) {
        Ok(Ok(())) => 0,
        Ok(Err(Errno(e))) => e,
        Err(_) => {
            crate::warn::always(&format!("internal error in {name}; reported as EIO"));
            libc::EIO
        }
    }
}

/// A size or offset as `off_t`, or `EOVERFLOW`.
pub fn to_off(v: u64) -> Res<off_t> {
    off_t::try_from(v).map_err(|_| Errno(libc::EOVERFLOW))
}

/// A C `long` result.
pub fn as_long(v: c_long) -> c_long {
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contained_work_gives_its_value_and_a_panic_gives_the_fallback() {
        assert_eq!(contained("test", -1, || 7), 7);
        let quiet = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let v: Option<c_int> = contained("test", Some(libc::EIO), || panic!("a bug"));
        std::panic::set_hook(quiet);
        assert_eq!(v, Some(libc::EIO));
    }
}
