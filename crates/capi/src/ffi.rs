//! The one way into Rust from C: [`ffi_try`] runs an entry point's body,
//! catches panics, and turns every failure into the C convention (negative
//! errno, or NULL + `errno`) plus the thread-local message behind
//! `dnfs_last_error`.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A failed call: the errno C sees and the message `dnfs_last_error` shows.
#[derive(Debug)]
pub struct Failure {
    pub errno: i32,
    pub message: String,
}

impl Failure {
    /// EINVAL with a message naming the bad argument.
    pub fn invalid(message: impl Into<String>) -> Self {
        Failure {
            errno: libc::EINVAL,
            message: message.into(),
        }
    }
}

impl From<dnfs::Error> for Failure {
    fn from(e: dnfs::Error) -> Self {
        Failure {
            errno: e.errno(),
            message: e.to_string(),
        }
    }
}

pub type FfiResult<T> = Result<T, Failure>;

/// How each C return type says "failed with errno".
pub trait FfiReturn {
    fn failure(errno: i32) -> Self;
}

impl FfiReturn for c_int {
    fn failure(errno: i32) -> Self {
        -errno
    }
}

impl FfiReturn for isize {
    fn failure(errno: i32) -> Self {
        -(errno as isize)
    }
}

impl<T> FfiReturn for *mut T {
    fn failure(_: i32) -> Self {
        std::ptr::null_mut()
    }
}

/// Longest message kept (bytes, without the NUL); longer ones are cut.
const MAX_MESSAGE: usize = 1023;

thread_local! {
    /// This thread's last message, NUL-terminated. A fixed buffer that is
    /// overwritten in place, so a pointer from `dnfs_last_error` never
    /// dangles while the thread lives (it may show a newer message).
    static LAST_ERROR: RefCell<[u8; MAX_MESSAGE + 1]> = const { RefCell::new([0; MAX_MESSAGE + 1]) };
}

/// Runs `body`; a failure or a panic becomes `R::failure(errno)`, with the
/// message stored for `dnfs_last_error` and `errno` set (for functions
/// returning pointers, whose only failure value is NULL).
pub fn ffi_try<R: FfiReturn>(body: impl FnOnce() -> FfiResult<R>) -> R {
    let failure = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(value)) => return value,
        Ok(Err(failure)) => failure,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            // Dropping a panic payload can itself panic (a payload with a
            // panicking Drop); keep that inside too.
            let _ = catch_unwind(AssertUnwindSafe(move || drop(payload)));
            Failure {
                errno: libc::EIO,
                message: format!("directnfs internal error (caught panic): {what}"),
            }
        }
    };
    record_error(failure.errno, &failure.message);
    R::failure(failure.errno)
}

/// Stores `message` for `dnfs_last_error` and sets `errno`.
pub fn record_error(errno: i32, message: &str) {
    let mut end = message.len().min(MAX_MESSAGE);
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    // `try_with`: the thread may be exiting and its locals gone.
    let _ = LAST_ERROR.try_with(|slot| {
        if let Ok(mut slot) = slot.try_borrow_mut() {
            for (dst, &src) in slot.iter_mut().zip(&message.as_bytes()[..end]) {
                // A NUL inside the message would end it early: show a space.
                *dst = if src == 0 { b' ' } else { src };
            }
            slot[end] = 0;
        }
    });
    // SAFETY: __errno_location returns this thread's errno slot, always
    // valid for writes.
    unsafe { *libc::__errno_location() = errno };
}

/// Pointer to this thread's message buffer (see [`LAST_ERROR`]).
pub fn last_error_ptr() -> *const c_char {
    static EMPTY: &CStr = c"";
    LAST_ERROR
        .try_with(|slot| slot.as_ptr().cast::<c_char>().cast_const())
        .unwrap_or(EMPTY.as_ptr())
}

/// A required string argument.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string valid for this call.
pub unsafe fn arg_str<'a>(p: *const c_char, what: &str) -> FfiResult<&'a str> {
    if p.is_null() {
        return Err(Failure::invalid(format!("{what} is NULL")));
    }
    // SAFETY: non-NULL and NUL-terminated per this function's contract.
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str()
        .map_err(|_| Failure::invalid(format!("{what} is not valid UTF-8")))
}

/// A required object argument.
///
/// # Safety
/// `p` is NULL or points to a live object of type `T` created by this
/// library and not yet freed.
pub unsafe fn arg_ref<'a, T>(p: *const T, what: &str) -> FfiResult<&'a T> {
    // SAFETY: per this function's contract.
    unsafe { p.as_ref() }.ok_or_else(|| Failure::invalid(format!("{what} is NULL")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_eio_with_a_message() {
        let rc: c_int = ffi_try(|| -> FfiResult<c_int> { panic!("boom") });
        assert_eq!(rc, -libc::EIO);
        // SAFETY: the pointer is this thread's message, NUL-terminated.
        let msg = unsafe { CStr::from_ptr(last_error_ptr()) }
            .to_str()
            .unwrap();
        assert!(msg.contains("boom"), "{msg}");
    }

    #[test]
    fn a_failure_sets_errno_and_message() {
        let p: *mut u8 = ffi_try(|| Err(Failure::invalid("bad thing")));
        assert!(p.is_null());
        // SAFETY: reading this thread's errno.
        assert_eq!(unsafe { *libc::__errno_location() }, libc::EINVAL);
        // SAFETY: as above.
        let msg = unsafe { CStr::from_ptr(last_error_ptr()) }
            .to_str()
            .unwrap();
        assert_eq!(msg, "bad thing");
    }

    #[test]
    fn null_string_argument_is_einval() {
        // SAFETY: NULL is allowed by arg_str's contract.
        let e = unsafe { arg_str(std::ptr::null(), "path") }.unwrap_err();
        assert_eq!(e.errno, libc::EINVAL);
    }
}
