//! Locks of NFS descriptors: the one place that decides how a lock on an
//! NFS file is taken, so that NFSv4.1's LOCK can replace it.
//!
//! Today every lock is a real lock on the descriptor's shadow file
//! (shadow.rs): the kernel gives `fcntl` record locks (`F_SETLK`,
//! `F_SETLKW`, `F_GETLK`), open file description locks (`F_OFD_*`) and
//! `flock` their exact semantics — blocking, deadlock detection (`EDEADLK`),
//! release on close and at process death — among all processes of this
//! host. They do not reach other hosts: two hosts writing one NFS file each
//! believe they hold the lock.

use libc::{c_int, c_ulong};

use crate::fail::{errno, Errno, Res};
use crate::real;

/// True for the `fcntl` commands that are locks.
pub fn is_lock_cmd(cmd: c_int) -> bool {
    matches!(
        cmd,
        libc::F_SETLK
            | libc::F_SETLKW
            | libc::F_GETLK
            | libc::F_OFD_SETLK
            | libc::F_OFD_SETLKW
            | libc::F_OFD_GETLK
    )
}

/// A record lock command (`arg` points to a `struct flock`).
pub fn fcntl_lock(fd: c_int, cmd: c_int, arg: c_ulong) -> Res<c_int> {
    // SAFETY: the caller's struct flock, passed on unchanged.
    let r = unsafe { real::fcntl(fd, cmd, arg) };
    if r < 0 {
        Err(Errno(errno()))
    } else {
        Ok(r)
    }
}

/// `flock(2)`.
pub fn flock(fd: c_int, op: c_int) -> Res<()> {
    // SAFETY: plain forward.
    if unsafe { real::flock(fd, op) } < 0 {
        Err(Errno(errno()))
    } else {
        Ok(())
    }
}
