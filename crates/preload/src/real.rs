//! The functions this library stands in front of: the next definition of
//! each symbol (libc's, or another preloaded library's), found with
//! `dlsym(RTLD_NEXT)` on first use and kept.
//!
//! Every wrapper here is a plain forward: same arguments, same result, errno
//! set by the callee. Variadic C functions (`open`, `fcntl`, `ioctl`,
//! `syscall`) are declared with their optional arguments as fixed ones;
//! on x86-64 and AArch64 Linux the optional arguments travel in the same
//! registers, so the callee reads what the caller passed.

use std::ffi::CStr;
use std::sync::atomic::{AtomicUsize, Ordering};

use libc::{
    c_char, c_int, c_long, c_uint, c_ulong, c_void, mode_t, off64_t, off_t, size_t, ssize_t,
};

/// What a call returns when its function cannot be found (`ENOSYS`).
pub trait Missing {
    /// The failure value of this return type.
    fn missing() -> Self;
}

impl Missing for c_int {
    fn missing() -> Self {
        -1
    }
}
impl Missing for ssize_t {
    fn missing() -> Self {
        -1
    }
}
impl Missing for off_t {
    fn missing() -> Self {
        -1
    }
}
impl Missing for libc::mode_t {
    fn missing() -> Self {
        0
    }
}
impl Missing for () {
    fn missing() -> Self {}
}
impl<T> Missing for *mut T {
    fn missing() -> Self {
        std::ptr::null_mut()
    }
}

/// The address of the next definition of `name`, or 0.
pub fn next_symbol(name: &CStr) -> usize {
    // SAFETY: RTLD_NEXT with a NUL-terminated name; dlsym only reads it.
    unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) as usize }
}

/// Declares one forwarding function per symbol.
macro_rules! real {
    ($( $name:ident ( $($arg:ident : $ty:ty),* ) -> $ret:ty ; )*) => {
        $(
            /// Forwards to the next definition of the symbol of this name.
            ///
            /// # Safety
            /// As the C function: the caller passes what its contract asks.
            #[inline]
            pub unsafe fn $name($($arg: $ty),*) -> $ret {
                static ADDR: AtomicUsize = AtomicUsize::new(0);
                let mut addr = ADDR.load(Ordering::Relaxed);
                if addr == 0 {
                    // SAFETY: a literal, NUL-terminated below.
                    let name = unsafe {
                        CStr::from_bytes_with_nul_unchecked(concat!(stringify!($name), "\0").as_bytes())
                    };
                    addr = next_symbol(name);
                    if addr == 0 {
                        // SAFETY: errno is thread-local storage of this thread.
                        unsafe { *libc::__errno_location() = libc::ENOSYS };
                        return <$ret as Missing>::missing();
                    }
                    ADDR.store(addr, Ordering::Relaxed);
                }
                // SAFETY: `addr` is the address of the C function of this
                // name, whose prototype is the one declared here.
                let f: unsafe extern "C" fn($($ty),*) -> $ret = unsafe { std::mem::transmute(addr) };
                // SAFETY: the caller meets the C contract.
                unsafe { f($($arg),*) }
            }
        )*
    };
}

pub type Stat = libc::stat;
pub type Stat64 = libc::stat64;

real! {
    open(path: *const c_char, flags: c_int, mode: mode_t) -> c_int;
    open64(path: *const c_char, flags: c_int, mode: mode_t) -> c_int;
    openat(dirfd: c_int, path: *const c_char, flags: c_int, mode: mode_t) -> c_int;
    openat64(dirfd: c_int, path: *const c_char, flags: c_int, mode: mode_t) -> c_int;
    creat(path: *const c_char, mode: mode_t) -> c_int;
    creat64(path: *const c_char, mode: mode_t) -> c_int;
    __open_2(path: *const c_char, flags: c_int) -> c_int;
    __open64_2(path: *const c_char, flags: c_int) -> c_int;
    __openat_2(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int;
    __openat64_2(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int;
    close(fd: c_int) -> c_int;
    close_range(first: c_uint, last: c_uint, flags: c_int) -> c_int;
    closefrom(lowfd: c_int) -> c_int;
    read(fd: c_int, buf: *mut c_void, count: size_t) -> ssize_t;
    write(fd: c_int, buf: *const c_void, count: size_t) -> ssize_t;
    pread(fd: c_int, buf: *mut c_void, count: size_t, off: off_t) -> ssize_t;
    pread64(fd: c_int, buf: *mut c_void, count: size_t, off: off64_t) -> ssize_t;
    pwrite(fd: c_int, buf: *const c_void, count: size_t, off: off_t) -> ssize_t;
    pwrite64(fd: c_int, buf: *const c_void, count: size_t, off: off64_t) -> ssize_t;
    __read_chk(fd: c_int, buf: *mut c_void, count: size_t, buflen: size_t) -> ssize_t;
    __pread_chk(fd: c_int, buf: *mut c_void, count: size_t, off: off_t, buflen: size_t) -> ssize_t;
    __pread64_chk(fd: c_int, buf: *mut c_void, count: size_t, off: off64_t, buflen: size_t) -> ssize_t;
    readv(fd: c_int, iov: *const libc::iovec, cnt: c_int) -> ssize_t;
    writev(fd: c_int, iov: *const libc::iovec, cnt: c_int) -> ssize_t;
    preadv(fd: c_int, iov: *const libc::iovec, cnt: c_int, off: off_t) -> ssize_t;
    preadv64(fd: c_int, iov: *const libc::iovec, cnt: c_int, off: off64_t) -> ssize_t;
    pwritev(fd: c_int, iov: *const libc::iovec, cnt: c_int, off: off_t) -> ssize_t;
    pwritev64(fd: c_int, iov: *const libc::iovec, cnt: c_int, off: off64_t) -> ssize_t;
    preadv2(fd: c_int, iov: *const libc::iovec, cnt: c_int, off: off_t, flags: c_int) -> ssize_t;
    preadv64v2(fd: c_int, iov: *const libc::iovec, cnt: c_int, off: off64_t, flags: c_int) -> ssize_t;
    pwritev2(fd: c_int, iov: *const libc::iovec, cnt: c_int, off: off_t, flags: c_int) -> ssize_t;
    pwritev64v2(fd: c_int, iov: *const libc::iovec, cnt: c_int, off: off64_t, flags: c_int) -> ssize_t;
    lseek(fd: c_int, off: off_t, whence: c_int) -> off_t;
    lseek64(fd: c_int, off: off64_t, whence: c_int) -> off64_t;
    fsync(fd: c_int) -> c_int;
    fdatasync(fd: c_int) -> c_int;
    syncfs(fd: c_int) -> c_int;
    sync() -> ();
    sync_file_range(fd: c_int, off: off64_t, n: off64_t, flags: c_uint) -> c_int;
    ftruncate(fd: c_int, len: off_t) -> c_int;
    ftruncate64(fd: c_int, len: off64_t) -> c_int;
    truncate(path: *const c_char, len: off_t) -> c_int;
    truncate64(path: *const c_char, len: off64_t) -> c_int;
    fallocate(fd: c_int, mode: c_int, off: off_t, len: off_t) -> c_int;
    fallocate64(fd: c_int, mode: c_int, off: off64_t, len: off64_t) -> c_int;
    posix_fallocate(fd: c_int, off: off_t, len: off_t) -> c_int;
    posix_fallocate64(fd: c_int, off: off64_t, len: off64_t) -> c_int;
    posix_fadvise(fd: c_int, off: off_t, len: off_t, advice: c_int) -> c_int;
    posix_fadvise64(fd: c_int, off: off64_t, len: off64_t, advice: c_int) -> c_int;
    readahead(fd: c_int, off: off64_t, count: size_t) -> ssize_t;
    copy_file_range(fd_in: c_int, off_in: *mut off64_t, fd_out: c_int, off_out: *mut off64_t, len: size_t, flags: c_uint) -> ssize_t;
    sendfile(out_fd: c_int, in_fd: c_int, off: *mut off_t, count: size_t) -> ssize_t;
    sendfile64(out_fd: c_int, in_fd: c_int, off: *mut off64_t, count: size_t) -> ssize_t;
    splice(fd_in: c_int, off_in: *mut off64_t, fd_out: c_int, off_out: *mut off64_t, len: size_t, flags: c_uint) -> ssize_t;
    stat(path: *const c_char, buf: *mut Stat) -> c_int;
    stat64(path: *const c_char, buf: *mut Stat64) -> c_int;
    lstat(path: *const c_char, buf: *mut Stat) -> c_int;
    lstat64(path: *const c_char, buf: *mut Stat64) -> c_int;
    fstat(fd: c_int, buf: *mut Stat) -> c_int;
    fstat64(fd: c_int, buf: *mut Stat64) -> c_int;
    fstatat(dirfd: c_int, path: *const c_char, buf: *mut Stat, flags: c_int) -> c_int;
    fstatat64(dirfd: c_int, path: *const c_char, buf: *mut Stat64, flags: c_int) -> c_int;
    __xstat(ver: c_int, path: *const c_char, buf: *mut Stat) -> c_int;
    __xstat64(ver: c_int, path: *const c_char, buf: *mut Stat64) -> c_int;
    __lxstat(ver: c_int, path: *const c_char, buf: *mut Stat) -> c_int;
    __lxstat64(ver: c_int, path: *const c_char, buf: *mut Stat64) -> c_int;
    __fxstat(ver: c_int, fd: c_int, buf: *mut Stat) -> c_int;
    __fxstat64(ver: c_int, fd: c_int, buf: *mut Stat64) -> c_int;
    __fxstatat(ver: c_int, dirfd: c_int, path: *const c_char, buf: *mut Stat, flags: c_int) -> c_int;
    __fxstatat64(ver: c_int, dirfd: c_int, path: *const c_char, buf: *mut Stat64, flags: c_int) -> c_int;
    statx(dirfd: c_int, path: *const c_char, flags: c_int, mask: c_uint, buf: *mut libc::statx) -> c_int;
    statfs(path: *const c_char, buf: *mut libc::statfs) -> c_int;
    pathconf(path: *const c_char, name: c_int) -> libc::c_long;
    fpathconf(fd: c_int, name: c_int) -> libc::c_long;
    statfs64(path: *const c_char, buf: *mut libc::statfs64) -> c_int;
    fstatfs(fd: c_int, buf: *mut libc::statfs) -> c_int;
    fstatfs64(fd: c_int, buf: *mut libc::statfs64) -> c_int;
    statvfs(path: *const c_char, buf: *mut libc::statvfs) -> c_int;
    statvfs64(path: *const c_char, buf: *mut libc::statvfs64) -> c_int;
    fstatvfs(fd: c_int, buf: *mut libc::statvfs) -> c_int;
    fstatvfs64(fd: c_int, buf: *mut libc::statvfs64) -> c_int;
    access(path: *const c_char, mode: c_int) -> c_int;
    faccessat(dirfd: c_int, path: *const c_char, mode: c_int, flags: c_int) -> c_int;
    euidaccess(path: *const c_char, mode: c_int) -> c_int;
    eaccess(path: *const c_char, mode: c_int) -> c_int;
    unlink(path: *const c_char) -> c_int;
    unlinkat(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int;
    remove(path: *const c_char) -> c_int;
    rename(old: *const c_char, new: *const c_char) -> c_int;
    renameat(olddir: c_int, old: *const c_char, newdir: c_int, new: *const c_char) -> c_int;
    renameat2(olddir: c_int, old: *const c_char, newdir: c_int, new: *const c_char, flags: c_uint) -> c_int;
    link(old: *const c_char, new: *const c_char) -> c_int;
    linkat(olddir: c_int, old: *const c_char, newdir: c_int, new: *const c_char, flags: c_int) -> c_int;
    symlink(target: *const c_char, path: *const c_char) -> c_int;
    symlinkat(target: *const c_char, dirfd: c_int, path: *const c_char) -> c_int;
    readlink(path: *const c_char, buf: *mut c_char, len: size_t) -> ssize_t;
    readlinkat(dirfd: c_int, path: *const c_char, buf: *mut c_char, len: size_t) -> ssize_t;
    __readlink_chk(path: *const c_char, buf: *mut c_char, len: size_t, buflen: size_t) -> ssize_t;
    __readlinkat_chk(dirfd: c_int, path: *const c_char, buf: *mut c_char, len: size_t, buflen: size_t) -> ssize_t;
    mkdir(path: *const c_char, mode: mode_t) -> c_int;
    mkdirat(dirfd: c_int, path: *const c_char, mode: mode_t) -> c_int;
    rmdir(path: *const c_char) -> c_int;
    mknod(path: *const c_char, mode: mode_t, dev: libc::dev_t) -> c_int;
    mknodat(dirfd: c_int, path: *const c_char, mode: mode_t, dev: libc::dev_t) -> c_int;
    mkfifo(path: *const c_char, mode: mode_t) -> c_int;
    mkfifoat(dirfd: c_int, path: *const c_char, mode: mode_t) -> c_int;
    chmod(path: *const c_char, mode: mode_t) -> c_int;
    fchmod(fd: c_int, mode: mode_t) -> c_int;
    fchmodat(dirfd: c_int, path: *const c_char, mode: mode_t, flags: c_int) -> c_int;
    chown(path: *const c_char, uid: libc::uid_t, gid: libc::gid_t) -> c_int;
    lchown(path: *const c_char, uid: libc::uid_t, gid: libc::gid_t) -> c_int;
    fchown(fd: c_int, uid: libc::uid_t, gid: libc::gid_t) -> c_int;
    fchownat(dirfd: c_int, path: *const c_char, uid: libc::uid_t, gid: libc::gid_t, flags: c_int) -> c_int;
    utimensat(dirfd: c_int, path: *const c_char, times: *const libc::timespec, flags: c_int) -> c_int;
    futimens(fd: c_int, times: *const libc::timespec) -> c_int;
    utimes(path: *const c_char, times: *const libc::timeval) -> c_int;
    lutimes(path: *const c_char, times: *const libc::timeval) -> c_int;
    futimes(fd: c_int, times: *const libc::timeval) -> c_int;
    futimesat(dirfd: c_int, path: *const c_char, times: *const libc::timeval) -> c_int;
    utime(path: *const c_char, times: *const libc::utimbuf) -> c_int;
    opendir(path: *const c_char) -> *mut libc::DIR;
    fdopendir(fd: c_int) -> *mut libc::DIR;
    closedir(dir: *mut libc::DIR) -> c_int;
    readdir(dir: *mut libc::DIR) -> *mut libc::dirent;
    readdir64(dir: *mut libc::DIR) -> *mut libc::dirent64;
    readdir_r(dir: *mut libc::DIR, entry: *mut libc::dirent, result: *mut *mut libc::dirent) -> c_int;
    readdir64_r(dir: *mut libc::DIR, entry: *mut libc::dirent64, result: *mut *mut libc::dirent64) -> c_int;
    dirfd(dir: *mut libc::DIR) -> c_int;
    rewinddir(dir: *mut libc::DIR) -> ();
    telldir(dir: *mut libc::DIR) -> c_long;
    seekdir(dir: *mut libc::DIR, pos: c_long) -> ();
    scandir(path: *const c_char, list: *mut *mut *mut libc::dirent, filter: *const c_void, compar: *const c_void) -> c_int;
    scandir64(path: *const c_char, list: *mut *mut *mut libc::dirent64, filter: *const c_void, compar: *const c_void) -> c_int;
    chdir(path: *const c_char) -> c_int;
    fchdir(fd: c_int) -> c_int;
    getcwd(buf: *mut c_char, size: size_t) -> *mut c_char;
    __getcwd_chk(buf: *mut c_char, size: size_t, buflen: size_t) -> *mut c_char;
    get_current_dir_name() -> *mut c_char;
    realpath(path: *const c_char, resolved: *mut c_char) -> *mut c_char;
    __realpath_chk(path: *const c_char, resolved: *mut c_char, resolvedlen: size_t) -> *mut c_char;
    canonicalize_file_name(path: *const c_char) -> *mut c_char;
    dup(fd: c_int) -> c_int;
    dup2(fd: c_int, newfd: c_int) -> c_int;
    dup3(fd: c_int, newfd: c_int, flags: c_int) -> c_int;
    fcntl(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int;
    fcntl64(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int;
    flock(fd: c_int, op: c_int) -> c_int;
    ioctl(fd: c_int, request: c_ulong, arg: c_ulong) -> c_int;
    mmap(addr: *mut c_void, len: size_t, prot: c_int, flags: c_int, fd: c_int, off: off_t) -> *mut c_void;
    mmap64(addr: *mut c_void, len: size_t, prot: c_int, flags: c_int, fd: c_int, off: off64_t) -> *mut c_void;
    fopen(path: *const c_char, mode: *const c_char) -> *mut libc::FILE;
    fopen64(path: *const c_char, mode: *const c_char) -> *mut libc::FILE;
    freopen(path: *const c_char, mode: *const c_char, stream: *mut libc::FILE) -> *mut libc::FILE;
    freopen64(path: *const c_char, mode: *const c_char, stream: *mut libc::FILE) -> *mut libc::FILE;
    fdopen(fd: c_int, mode: *const c_char) -> *mut libc::FILE;
    umask(mask: mode_t) -> mode_t;
    mkstemp(template: *mut c_char) -> c_int;
    mkostemp(template: *mut c_char, flags: c_int) -> c_int;
    mkstemps(template: *mut c_char, suffixlen: c_int) -> c_int;
    mkostemps(template: *mut c_char, suffixlen: c_int, flags: c_int) -> c_int;
    mkstemp64(template: *mut c_char) -> c_int;
    mkostemp64(template: *mut c_char, flags: c_int) -> c_int;
    mkstemps64(template: *mut c_char, suffixlen: c_int) -> c_int;
    mkostemps64(template: *mut c_char, suffixlen: c_int, flags: c_int) -> c_int;
    mkdtemp(template: *mut c_char) -> *mut c_char;
    getxattr(path: *const c_char, name: *const c_char, value: *mut c_void, size: size_t) -> ssize_t;
    lgetxattr(path: *const c_char, name: *const c_char, value: *mut c_void, size: size_t) -> ssize_t;
    fgetxattr(fd: c_int, name: *const c_char, value: *mut c_void, size: size_t) -> ssize_t;
    listxattr(path: *const c_char, list: *mut c_char, size: size_t) -> ssize_t;
    llistxattr(path: *const c_char, list: *mut c_char, size: size_t) -> ssize_t;
    flistxattr(fd: c_int, list: *mut c_char, size: size_t) -> ssize_t;
    setxattr(path: *const c_char, name: *const c_char, value: *const c_void, size: size_t, flags: c_int) -> c_int;
    lsetxattr(path: *const c_char, name: *const c_char, value: *const c_void, size: size_t, flags: c_int) -> c_int;
    fsetxattr(fd: c_int, name: *const c_char, value: *const c_void, size: size_t, flags: c_int) -> c_int;
    removexattr(path: *const c_char, name: *const c_char) -> c_int;
    lremovexattr(path: *const c_char, name: *const c_char) -> c_int;
    fremovexattr(fd: c_int, name: *const c_char) -> c_int;
    io_setup(maxevents: c_int, ctx: *mut c_ulong) -> c_int;
    io_submit(ctx: c_ulong, nr: c_long, iocbs: *mut *mut c_void) -> c_int;
    io_uring_queue_init(entries: c_uint, ring: *mut c_void, flags: c_uint) -> c_int;
    io_uring_queue_init_params(entries: c_uint, ring: *mut c_void, params: *mut c_void) -> c_int;
    io_uring_queue_init_mem(entries: c_uint, ring: *mut c_void, params: *mut c_void, buf: *mut c_void, size: size_t) -> c_int;
    aio_read(cb: *mut libc::aiocb) -> c_int;
    aio_write(cb: *mut libc::aiocb) -> c_int;
    aio_fsync(op: c_int, cb: *mut libc::aiocb) -> c_int;
    aio_read64(cb: *mut libc::aiocb) -> c_int;
    aio_write64(cb: *mut libc::aiocb) -> c_int;
    aio_fsync64(op: c_int, cb: *mut libc::aiocb) -> c_int;
    lio_listio(mode: c_int, list: *const *mut libc::aiocb, n: c_int, sev: *mut libc::sigevent) -> c_int;
    lio_listio64(mode: c_int, list: *const *mut libc::aiocb, n: c_int, sev: *mut libc::sigevent) -> c_int;
    syscall(num: c_long, a1: c_long, a2: c_long, a3: c_long, a4: c_long, a5: c_long, a6: c_long) -> c_long;
    posix_spawn_file_actions_addopen(actions: *mut c_void, fd: c_int, path: *const c_char, flags: c_int, mode: mode_t) -> c_int;
    bind(fd: c_int, addr: *const libc::sockaddr, len: libc::socklen_t) -> c_int;
}
