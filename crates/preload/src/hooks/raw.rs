//! `syscall(2)` of a file system call on an NFS descriptor or path: served
//! by the entry point of the libc call of the same name, or refused with
//! an errno (and one warning), never passed to the kernel, which would
//! apply it to the empty shadow file behind the descriptor (or to a local
//! path that does not exist). The numbers are x86_64's.
//!
//! Each arm names the descriptors and paths its system call takes: a call
//! whose descriptors are local and whose paths route locally is passed on
//! untouched (`None`), so local programs see the kernel's answers.

use libc::{c_char, c_int, c_long, c_void};

use super::{cwd, files, io, names, other, stat};
use crate::fail::set_errno;
use crate::fdtable;
use crate::ops::unsupported;
use crate::paths::{route, Route};
use crate::real;
use crate::warn;

/// `syscall(2)`: file system calls on NFS descriptors and paths are served
/// as the libc calls of the same name would be (programs that make raw
/// system calls through libc's `syscall` get NFS too), or refused with an
/// errno (hooks/raw.rs); io_uring submissions that name NFS descriptors
/// are refused. Everything else is passed on.
#[no_mangle]
pub unsafe extern "C" fn syscall(
    num: c_long,
    a1: c_long,
    a2: c_long,
    a3: c_long,
    a4: c_long,
    a5: c_long,
    a6: c_long,
) -> c_long {
    if crate::state::get().is_some() {
        // SAFETY: the arguments of the system call the caller meant.
        if let Some(r) = unsafe { served(num, [a1, a2, a3, a4, a5, a6]) } {
            return r;
        }
    }
    // SAFETY: plain forward.
    let r = unsafe { real::syscall(num, a1, a2, a3, a4, a5, a6) };
    if num == libc::SYS_io_uring_setup && r >= 0 {
        // SAFETY: a2 is the io_uring_params the kernel filled.
        unsafe { unsupported::uring_setup(r as c_int, a2 as *const u8) };
    }
    r
}

/// What [`served`] makes of a system call on NFS.
enum Raw {
    /// Pass it to the kernel.
    Kernel,
    /// Its result (the C convention of `syscall`: -1 with errno set).
    Done(c_long),
}

/// The system calls `syscall` serves itself (`None`: pass it on).
///
/// # Safety
/// The arguments are those of the system call `num`.
pub unsafe fn served(num: c_long, args: [c_long; 6]) -> Option<c_long> {
    // SAFETY: per the contract.
    match unsafe { dispatch(num, args) } {
        Raw::Kernel => None,
        Raw::Done(r) => Some(r),
    }
}

/// An NFS descriptor.
fn nfs(fd: c_long) -> bool {
    fd >= 0 && fd <= c_long::from(c_int::MAX) && fdtable::is_nfs(fd as c_int)
}

/// A path (relative to `dirfd`) that does not route to a local file: NFS,
/// a redirect or a bad NFS path, all of which the entry points answer.
///
/// # Safety
/// `path` is NULL or a C string.
unsafe fn not_local(dirfd: c_long, path: c_long) -> bool {
    // SAFETY: per the contract.
    !matches!(
        unsafe { route(dirfd as c_int, path as *const c_char) },
        Route::Local
    )
}

/// Refuses a system call that cannot be served on NFS: `errno`, and one
/// warning naming it.
fn refused(num: c_long, what: &'static str, errno: c_int) -> Raw {
    warn::once(&format!("syscall {num}"), || {
        format!(
            "syscall({num}) ({what}) on an NFS descriptor or path is not supported: {}",
            std::io::Error::from_raw_os_error(errno)
        )
    });
    set_errno(errno);
    Raw::Done(-1)
}

const AT: c_long = libc::AT_FDCWD as c_long;

/// # Safety
/// The arguments are those of the system call `num`.
unsafe fn dispatch(num: c_long, args: [c_long; 6]) -> Raw {
    let [a1, a2, a3, a4, a5, a6] = args;
    let done = |r: c_long| Raw::Done(r);
    let int = |r: c_int| Raw::Done(c_long::from(r));
    let size = |r: isize| Raw::Done(r as c_long);
    // posix_fadvise's convention: the error number as the result.
    let errno_result = |r: c_int| {
        if r == 0 {
            Raw::Done(0)
        } else {
            set_errno(r);
            Raw::Done(-1)
        }
    };
    // SAFETY: each arm calls this library's entry point of the same call
    // with the caller's arguments, converted to the C types of the libc
    // prototype (system call arguments are those values, widened).
    unsafe {
        match num {
            // Descriptors.
            libc::SYS_read if nfs(a1) => size(io::read(a1 as _, a2 as _, a3 as _)),
            libc::SYS_write if nfs(a1) => size(io::write(a1 as _, a2 as _, a3 as _)),
            libc::SYS_pread64 if nfs(a1) => size(io::pread64(a1 as _, a2 as _, a3 as _, a4)),
            libc::SYS_pwrite64 if nfs(a1) => size(io::pwrite64(a1 as _, a2 as _, a3 as _, a4)),
            libc::SYS_readv if nfs(a1) => size(io::readv(a1 as _, a2 as _, a3 as _)),
            libc::SYS_writev if nfs(a1) => size(io::writev(a1 as _, a2 as _, a3 as _)),
            libc::SYS_preadv if nfs(a1) => size(io::preadv64(a1 as _, a2 as _, a3 as _, a4)),
            libc::SYS_pwritev if nfs(a1) => size(io::pwritev64(a1 as _, a2 as _, a3 as _, a4)),
            // (fd, iov, cnt, pos_l, pos_h, flags): on x86_64 pos_l is the
            // whole offset.
            libc::SYS_preadv2 if nfs(a1) => {
                size(io::preadv64v2(a1 as _, a2 as _, a3 as _, a4, a6 as _))
            }
            libc::SYS_pwritev2 if nfs(a1) => {
                size(io::pwritev64v2(a1 as _, a2 as _, a3 as _, a4, a6 as _))
            }
            libc::SYS_lseek if nfs(a1) => done(io::lseek64(a1 as _, a2, a3 as _)),
            libc::SYS_fsync if nfs(a1) => int(io::fsync(a1 as _)),
            libc::SYS_fdatasync if nfs(a1) => int(io::fdatasync(a1 as _)),
            libc::SYS_syncfs if nfs(a1) => int(io::syncfs(a1 as _)),
            libc::SYS_sync_file_range if nfs(a1) => {
                int(io::sync_file_range(a1 as _, a2, a3, a4 as _))
            }
            libc::SYS_ftruncate if nfs(a1) => int(io::ftruncate64(a1 as _, a2)),
            libc::SYS_fallocate if nfs(a1) => int(io::fallocate64(a1 as _, a2 as _, a3, a4)),
            libc::SYS_fadvise64 if nfs(a1) => {
                errno_result(io::posix_fadvise64(a1 as _, a2, a3, a4 as _))
            }
            libc::SYS_readahead if nfs(a1) => size(io::readahead(a1 as _, a2, a3 as _)),
            libc::SYS_fstat if nfs(a1) => int(stat::fstat64(a1 as _, a2 as _)),
            libc::SYS_fstatfs if nfs(a1) => int(stat::fstatfs64(a1 as _, a2 as _)),
            libc::SYS_fchmod if nfs(a1) => int(names::fchmod(a1 as _, a2 as _)),
            libc::SYS_fchown if nfs(a1) => int(names::fchown(a1 as _, a2 as _, a3 as _)),
            libc::SYS_fchdir if nfs(a1) => int(cwd::fchdir(a1 as _)),
            libc::SYS_flock if nfs(a1) => int(files::flock(a1 as _, a2 as _)),
            libc::SYS_fcntl if nfs(a1) => int(files::fcntl(a1 as _, a2 as _, a3 as _)),
            libc::SYS_ioctl if nfs(a1) => int(files::ioctl(a1 as _, a2 as _, a3 as _)),
            libc::SYS_dup if nfs(a1) => int(files::dup(a1 as _)),
            libc::SYS_dup2 if nfs(a1) || nfs(a2) => int(files::dup2(a1 as _, a2 as _)),
            libc::SYS_dup3 if nfs(a1) || nfs(a2) => int(files::dup3(a1 as _, a2 as _, a3 as _)),
            libc::SYS_close if nfs(a1) => int(files::close(a1 as _)),
            // May close NFS descriptors in its range: the entry point
            // forgets them.
            libc::SYS_close_range => int(files::close_range(a1 as _, a2 as _, a3 as _)),
            libc::SYS_fgetxattr if nfs(a1) => {
                size(other::fgetxattr(a1 as _, a2 as _, a3 as _, a4 as _))
            }
            libc::SYS_fsetxattr if nfs(a1) => int(other::fsetxattr(
                a1 as _, a2 as _, a3 as _, a4 as _, a5 as _,
            )),
            libc::SYS_flistxattr if nfs(a1) => size(other::flistxattr(a1 as _, a2 as _, a3 as _)),
            libc::SYS_fremovexattr if nfs(a1) => int(other::fremovexattr(a1 as _, a2 as _)),
            libc::SYS_copy_file_range if nfs(a1) || nfs(a3) => size(io::copy_file_range(
                a1 as _, a2 as _, a3 as _, a4 as _, a5 as _, a6 as _,
            )),
            libc::SYS_sendfile if nfs(a1) || nfs(a2) => {
                size(io::sendfile64(a1 as _, a2 as _, a3 as _, a4 as _))
            }
            libc::SYS_splice if nfs(a1) || nfs(a3) => size(io::splice(
                a1 as _, a2 as _, a3 as _, a4 as _, a5 as _, a6 as _,
            )),
            libc::SYS_tee if nfs(a1) || nfs(a2) => refused(num, "tee", libc::EINVAL),
            libc::SYS_getdents | libc::SYS_getdents64 if nfs(a1) => refused(
                num,
                "getdents: read NFS directories with readdir",
                libc::EOPNOTSUPP,
            ),
            libc::SYS_open_by_handle_at if nfs(a1) => {
                refused(num, "open_by_handle_at", libc::EOPNOTSUPP)
            }
            libc::SYS_mmap if nfs(a5) => {
                done(files::mmap(a1 as _, a2 as _, a3 as _, a4 as _, a5 as _, a6) as c_long)
            }
            libc::SYS_getcwd if crate::cwd::answers_getcwd() => {
                let p = cwd::getcwd(a1 as _, a2 as _);
                if p.is_null() {
                    done(-1)
                } else {
                    done(std::ffi::CStr::from_ptr(p).to_bytes().len() as c_long + 1)
                }
            }

            // Paths.
            libc::SYS_open if not_local(AT, a1) => int(files::open64(a1 as _, a2 as _, a3 as _)),
            libc::SYS_creat if not_local(AT, a1) => int(files::creat64(a1 as _, a2 as _)),
            libc::SYS_openat if nfs(a1) || not_local(a1, a2) => {
                int(files::openat64(a1 as _, a2 as _, a3 as _, a4 as _))
            }
            libc::SYS_openat2 if nfs(a1) || not_local(a1, a2) => openat2(num, a1, a2, a3),
            libc::SYS_stat if not_local(AT, a1) => int(stat::stat64(a1 as _, a2 as _)),
            libc::SYS_lstat if not_local(AT, a1) => int(stat::lstat64(a1 as _, a2 as _)),
            libc::SYS_newfstatat
                if not_local(a1, a2) || (nfs(a1) && a4 as c_int & libc::AT_EMPTY_PATH != 0) =>
            {
                int(stat::fstatat64(a1 as _, a2 as _, a3 as _, a4 as _))
            }
            libc::SYS_statx
                if not_local(a1, a2) || (nfs(a1) && a3 as c_int & libc::AT_EMPTY_PATH != 0) =>
            {
                int(stat::statx(a1 as _, a2 as _, a3 as _, a4 as _, a5 as _))
            }
            libc::SYS_statfs if not_local(AT, a1) => int(stat::statfs64(a1 as _, a2 as _)),
            libc::SYS_access if not_local(AT, a1) => int(stat::access(a1 as _, a2 as _)),
            libc::SYS_faccessat if not_local(a1, a2) => {
                int(stat::faccessat(a1 as _, a2 as _, a3 as _, 0))
            }
            libc::SYS_faccessat2 if not_local(a1, a2) => {
                int(stat::faccessat(a1 as _, a2 as _, a3 as _, a4 as _))
            }
            libc::SYS_truncate if not_local(AT, a1) => int(io::truncate64(a1 as _, a2)),
            libc::SYS_chdir if not_local(AT, a1) => int(cwd::chdir(a1 as _)),
            libc::SYS_unlink if not_local(AT, a1) => int(names::unlink(a1 as _)),
            libc::SYS_unlinkat if not_local(a1, a2) => {
                int(names::unlinkat(a1 as _, a2 as _, a3 as _))
            }
            libc::SYS_rmdir if not_local(AT, a1) => int(names::rmdir(a1 as _)),
            libc::SYS_mkdir if not_local(AT, a1) => int(names::mkdir(a1 as _, a2 as _)),
            libc::SYS_mkdirat if not_local(a1, a2) => {
                int(names::mkdirat(a1 as _, a2 as _, a3 as _))
            }
            libc::SYS_mknod if not_local(AT, a1) => int(names::mknod(a1 as _, a2 as _, a3 as _)),
            libc::SYS_mknodat if not_local(a1, a2) => {
                int(names::mknodat(a1 as _, a2 as _, a3 as _, a4 as _))
            }
            libc::SYS_rename if not_local(AT, a1) || not_local(AT, a2) => {
                int(names::rename(a1 as _, a2 as _))
            }
            libc::SYS_renameat if not_local(a1, a2) || not_local(a3, a4) => {
                int(names::renameat(a1 as _, a2 as _, a3 as _, a4 as _))
            }
            libc::SYS_renameat2 if not_local(a1, a2) || not_local(a3, a4) => int(names::renameat2(
                a1 as _, a2 as _, a3 as _, a4 as _, a5 as _,
            )),
            libc::SYS_link if not_local(AT, a1) || not_local(AT, a2) => {
                int(names::link(a1 as _, a2 as _))
            }
            libc::SYS_linkat if not_local(a1, a2) || not_local(a3, a4) => {
                int(names::linkat(a1 as _, a2 as _, a3 as _, a4 as _, a5 as _))
            }
            libc::SYS_symlink if not_local(AT, a2) => int(names::symlink(a1 as _, a2 as _)),
            libc::SYS_symlinkat if not_local(a2, a3) => {
                int(names::symlinkat(a1 as _, a2 as _, a3 as _))
            }
            libc::SYS_readlink if not_local(AT, a1) => {
                size(names::readlink(a1 as _, a2 as _, a3 as _))
            }
            libc::SYS_readlinkat if not_local(a1, a2) => {
                size(names::readlinkat(a1 as _, a2 as _, a3 as _, a4 as _))
            }
            libc::SYS_chmod if not_local(AT, a1) => int(names::chmod(a1 as _, a2 as _)),
            // The kernel's fchmodat has no flags argument.
            libc::SYS_fchmodat if not_local(a1, a2) => {
                int(names::fchmodat(a1 as _, a2 as _, a3 as _, 0))
            }
            libc::SYS_fchmodat2 if not_local(a1, a2) => {
                int(names::fchmodat(a1 as _, a2 as _, a3 as _, a4 as _))
            }
            libc::SYS_chown if not_local(AT, a1) => int(names::chown(a1 as _, a2 as _, a3 as _)),
            libc::SYS_lchown if not_local(AT, a1) => int(names::lchown(a1 as _, a2 as _, a3 as _)),
            libc::SYS_fchownat if not_local(a1, a2) => {
                int(names::fchownat(a1 as _, a2 as _, a3 as _, a4 as _, a5 as _))
            }
            // utimensat(fd, NULL, ...) is futimens(fd).
            libc::SYS_utimensat if (a2 == 0 && nfs(a1)) || (a2 != 0 && not_local(a1, a2)) => {
                int(names::utimensat(a1 as _, a2 as _, a3 as _, a4 as _))
            }
            libc::SYS_futimesat if not_local(a1, a2) => {
                int(names::futimesat(a1 as _, a2 as _, a3 as _))
            }
            libc::SYS_utimes if not_local(AT, a1) => int(names::utimes(a1 as _, a2 as _)),
            libc::SYS_utime if not_local(AT, a1) => int(names::utime(a1 as _, a2 as _)),
            libc::SYS_getxattr if not_local(AT, a1) => {
                size(other::getxattr(a1 as _, a2 as _, a3 as _, a4 as _))
            }
            libc::SYS_lgetxattr if not_local(AT, a1) => {
                size(other::lgetxattr(a1 as _, a2 as _, a3 as _, a4 as _))
            }
            libc::SYS_setxattr if not_local(AT, a1) => {
                int(other::setxattr(a1 as _, a2 as _, a3 as _, a4 as _, a5 as _))
            }
            libc::SYS_lsetxattr if not_local(AT, a1) => int(other::lsetxattr(
                a1 as _, a2 as _, a3 as _, a4 as _, a5 as _,
            )),
            libc::SYS_listxattr if not_local(AT, a1) => {
                size(other::listxattr(a1 as _, a2 as _, a3 as _))
            }
            libc::SYS_llistxattr if not_local(AT, a1) => {
                size(other::llistxattr(a1 as _, a2 as _, a3 as _))
            }
            libc::SYS_removexattr if not_local(AT, a1) => int(other::removexattr(a1 as _, a2 as _)),
            libc::SYS_lremovexattr if not_local(AT, a1) => {
                int(other::lremovexattr(a1 as _, a2 as _))
            }
            libc::SYS_name_to_handle_at if nfs(a1) || not_local(a1, a2) => {
                refused(num, "name_to_handle_at", libc::EOPNOTSUPP)
            }
            libc::SYS_inotify_add_watch if not_local(AT, a2) => {
                refused(num, "inotify_add_watch", libc::EOPNOTSUPP)
            }
            libc::SYS_execve if not_local(AT, a1) => {
                refused(num, "execve of a program on NFS", libc::ENOENT)
            }
            libc::SYS_execveat if nfs(a1) || not_local(a1, a2) => {
                refused(num, "execveat of a program on NFS", libc::ENOENT)
            }

            // io_uring and kernel AIO.
            libc::SYS_io_uring_enter if unsupported::uring_enter_refused(a1 as _, a2 as u32) => {
                set_errno(libc::EBADF);
                done(-1)
            }
            libc::SYS_io_uring_register
                if unsupported::uring_register_refused(a2, a3 as *const c_void, a4) =>
            {
                set_errno(libc::EBADF);
                done(-1)
            }
            libc::SYS_io_submit if unsupported::io_submit_refused(a2, a3 as *mut *mut c_void) => {
                set_errno(libc::EOPNOTSUPP);
                done(-1)
            }
            _ => Raw::Kernel,
        }
    }
}

/// `openat2(dirfd, path, how, size)` on NFS: served as `openat` with the
/// `open_how`'s flags and mode when it asks for no `RESOLVE_*`
/// restriction; otherwise `ENOSYS`, which callers take as "no openat2"
/// and fall back to `openat`.
///
/// # Safety
/// The arguments are those of `openat2`.
unsafe fn openat2(num: c_long, dirfd: c_long, path: c_long, how: c_long) -> Raw {
    /// `struct open_how` (linux/openat2.h).
    #[repr(C)]
    struct OpenHow {
        flags: u64,
        mode: u64,
        resolve: u64,
    }
    let how = how as *const OpenHow;
    if how.is_null() {
        set_errno(libc::EFAULT);
        return Raw::Done(-1);
    }
    // SAFETY: the caller's open_how (at least its first version's size).
    let how = unsafe { &*how };
    if how.resolve != 0 {
        return refused(num, "openat2 with RESOLVE_ flags", libc::ENOSYS);
    }
    // SAFETY: the caller's arguments.
    let fd = unsafe { files::openat64(dirfd as _, path as _, how.flags as _, how.mode as _) };
    Raw::Done(c_long::from(fd))
}
