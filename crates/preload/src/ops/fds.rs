//! Descriptor calls on NFS descriptors: `close`, `dup`, `dup2`, `dup3`,
//! `fcntl`. The kernel does the work on the shadow descriptors; the table
//! follows what it did.

use std::sync::Arc;

use libc::{c_int, c_ulong};

use crate::fail::{errno, Errno, Res};
use crate::fdtable;
use crate::locks;
use crate::real;
use crate::shadow;
use crate::warn;

/// `close(2)` of any descriptor: an NFS one leaves the table first; the
/// kernel then releases its locks as for any file. Write-behind writes of
/// an NFS descriptor (unstable mode) are waited for, and an error of one
/// that no `fsync` reported yet is returned, as `close` of a file on a
/// kernel NFS mount returns it; the descriptor is closed either way.
pub fn close(fd: c_int) -> c_int {
    // The description is dropped inside too: the last reference of an
    // NFSv4.1 file sends its CLOSE.
    let mut gone = None;
    let failed = crate::fail::contained("close", Some(libc::EIO), || {
        let open = fdtable::remove(fd)?;
        gone = Some((open.mount, open.handle));
        check_stray(fd, &open);
        crate::locks::closing(&open);
        let file = open.opened_file()?;
        file.flush_write_behind().err().map(|e| e.errno())
    });
    // SAFETY: plain forward.
    let r = unsafe { real::close(fd) };
    if let Some((mount, handle)) = gone {
        // The last descriptor of a file whose name this process removed:
        // the hidden name goes (silly.rs).
        crate::fail::contained("close", (), || {
            if let Some(state) = crate::state::get() {
                crate::silly::closed(state, mount, &handle);
            }
        });
    }
    match failed {
        Some(e) if r == 0 => {
            crate::fail::set_errno(e);
            -1
        }
        _ => r,
    }
}

/// Says on stderr if something wrote to the shadow file behind `fd`
/// without this library (the data never reached the server).
pub fn check_stray(fd: c_int, open: &fdtable::Open) {
    if !open.writable() {
        return;
    }
    let n = shadow::stray_bytes(fd);
    if n > 0 {
        warn::always(&format!(
            "{n} bytes were written to NFS descriptor {fd} ({}) by a call this library does \
             not intercept (a raw system call, io_uring, a static helper); they did not \
             reach the server",
            open.label()
        ));
    }
}

/// After the kernel made `new` a duplicate of `old` (dup, dup2, dup3,
/// F_DUPFD): the table says the same.
pub fn duplicated(old: c_int, new: c_int) {
    if new < 0 || new == old {
        return;
    }
    // `new` was closed by dup2/dup3 if it was open.
    crate::fail::contained("dup2", (), || {
        if let Some(o) = fdtable::remove(new) {
            crate::silly::closed_all(&[o]);
        }
    });
    if let Some(open) = fdtable::get(old) {
        fdtable::insert(new, Arc::clone(&open));
        if new <= 2 {
            crate::ops::stdio::rewire_standard_stream(new);
        }
    }
}

/// `fcntl` of an NFS descriptor.
pub fn fcntl(fd: c_int, cmd: c_int, arg: c_ulong) -> Res<c_int> {
    let open = fdtable::get(fd).ok_or(Errno(libc::EBADF))?;
    if locks::is_lock_cmd(cmd) {
        return locks::fcntl_lock(fd, &open, cmd, arg);
    }
    // SAFETY: forwarded to the shadow descriptor: descriptor flags, status
    // flags, duplication and the rest are the kernel's.
    let forward = |arg: c_ulong| unsafe { real::fcntl(fd, cmd, arg) };
    match cmd {
        libc::F_GETFL => {
            let r = forward(arg);
            if r < 0 {
                return Err(Errno(errno()));
            }
            Ok(r | (open.flags() & libc::O_DIRECT))
        }
        libc::F_SETFL => {
            let want = arg as c_int;
            // O_DIRECT is honoured here (there is no cache), whatever the
            // shadow file system thinks of it.
            let r = forward((want & !libc::O_DIRECT) as c_ulong);
            if r < 0 {
                return Err(Errno(errno()));
            }
            let keep = open.flags() & !(libc::O_APPEND | libc::O_DIRECT);
            open.status.store(
                keep | (want & (libc::O_APPEND | libc::O_DIRECT)),
                std::sync::atomic::Ordering::Relaxed,
            );
            Ok(r)
        }
        libc::F_DUPFD | libc::F_DUPFD_CLOEXEC => {
            let r = forward(arg);
            if r < 0 {
                return Err(Errno(errno()));
            }
            duplicated(fd, r);
            Ok(r)
        }
        libc::F_SETLEASE
        | libc::F_GETLEASE
        | libc::F_NOTIFY
        | libc::F_ADD_SEALS
        | libc::F_GET_SEALS => {
            warn::once("fcntl lease", || {
                format!("fcntl command {cmd} (leases, notifications, seals) is not supported on NFS descriptors (EINVAL)")
            });
            Err(Errno(libc::EINVAL))
        }
        _ => {
            let r = forward(arg);
            if r < 0 {
                Err(Errno(errno()))
            } else {
                Ok(r)
            }
        }
    }
}
