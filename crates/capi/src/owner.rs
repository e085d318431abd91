//! Which process an object belongs to. A client, file or batch shares its
//! process's connections (and on NFSv4.1 its session and locks); in the
//! child of `fork` they are the parent's, so the child must neither use
//! nor free them (freeing would close what the parent still uses). Every
//! object records the fork generation it was made in; the entry points
//! refuse one of another generation with EBADF, and the close functions
//! leave it alone.

use crate::ffi::{arg_ref, Failure, FfiResult};

/// This process's fork generation ([`dnfs::process::fork_generation`]), for an
/// object being made.
pub fn current() -> u64 {
    dnfs::process::fork_generation()
}

/// An object of this library that remembers its generation.
pub trait Owned {
    fn generation(&self) -> u64;
}

/// EBADF unless `obj` was made in this process.
pub fn check<T: Owned>(obj: &T, what: &str) -> FfiResult<()> {
    if obj.generation() == current() {
        return Ok(());
    }
    Err(Failure {
        errno: libc::EBADF,
        message: format!(
            "{what} belongs to the parent process (this is the child of a fork): it is neither used nor freed here; open a client of this process's own"
        ),
    })
}

/// A required object argument made in this process ([`arg_ref`], then
/// [`check`]).
///
/// # Safety
/// As [`arg_ref`].
pub unsafe fn arg_own<'a, T: Owned>(p: *const T, what: &str) -> FfiResult<&'a T> {
    // SAFETY: per this function's contract.
    let obj = unsafe { arg_ref(p, what) }?;
    check(obj, what)?;
    Ok(obj)
}
