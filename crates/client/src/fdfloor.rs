//! Where the client's own descriptors live.
//!
//! A program that hosts the client does not know about its sockets and
//! wake-up descriptor; it may `dup2` onto any small number it likes (a shell
//! running `exec 3< file` takes descriptor 3 whatever it was). With a
//! floor set, every descriptor the client keeps (connections, their
//! reader and writer copies, the wake-up eventfd) is moved to the lowest
//! free number at or above it, out of the way of numbers programs pick
//! themselves. The default (0) changes nothing. The interception library
//! sets one; other callers rarely need to.

use std::os::fd::{FromRawFd, IntoRawFd, RawFd};
use std::sync::atomic::{AtomicI32, Ordering};

static FLOOR: AtomicI32 = AtomicI32::new(0);

/// Sets the lowest descriptor number the client uses for descriptors it
/// creates from now on (0: wherever the kernel puts them). A floor the
/// process's descriptor limit does not allow is ignored for that
/// descriptor (it stays where it is).
pub fn set_descriptor_floor(floor: i32) {
    FLOOR.store(floor.max(0), Ordering::Relaxed);
}

/// Moves `fd` to the floor or above (close-on-exec), closing the original;
/// returns it unchanged when there is no floor, it is already above, or
/// the move fails.
pub(crate) fn raise(fd: RawFd) -> RawFd {
    let floor = FLOOR.load(Ordering::Relaxed);
    if floor == 0 || fd >= floor || fd < 0 {
        return fd;
    }
    // SAFETY: F_DUPFD_CLOEXEC of a descriptor this crate owns; on success
    // the original is closed and only the copy is used.
    unsafe {
        let high = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, floor);
        if high < 0 {
            return fd;
        }
        libc::close(fd);
        high
    }
}

/// [`raise`] for an owned descriptor type.
pub(crate) fn raise_owned<T: IntoRawFd + FromRawFd>(owned: T) -> T {
    let fd = raise(owned.into_raw_fd());
    // SAFETY: `fd` is the descriptor just released from `owned` (or its
    // copy, the original closed): owned by nobody else.
    unsafe { T::from_raw_fd(fd) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_move_to_the_floor_and_back_to_normal_without_one() {
        let f = std::fs::File::open("/dev/null").unwrap();
        set_descriptor_floor(300);
        let f = raise_owned(f);
        assert!(std::os::fd::AsRawFd::as_raw_fd(&f) >= 300);
        set_descriptor_floor(0);
        let g = raise_owned(std::fs::File::open("/dev/null").unwrap());
        assert!(std::os::fd::AsRawFd::as_raw_fd(&g) < 300);
    }
}
