//! stdio streams on NFS files.
//!
//! glibc's streams read and write their descriptor with internal calls no
//! preloaded library can see, so a `FILE *` on an NFS file is made with
//! `fopencookie`: its read, write, seek and close functions are this
//! library's entry points on the descriptor. The stream's `_fileno` is set
//! to the descriptor, so `fileno(fp)` works (`fstat`, `fsync`, `flock` of
//! it are then served too); glibc only uses that field of a cookie stream
//! to know it is open.
//!
//! The standard streams follow their descriptors: when descriptor 0, 1 or
//! 2 is (or becomes, by `dup2` or an inherited redirection) an NFS
//! descriptor, `stdin`/`stdout`/`stderr` are replaced by such a stream.

use std::sync::atomic::{AtomicPtr, AtomicU8, Ordering};

use libc::{c_char, c_int, c_void, off64_t, size_t, ssize_t, FILE};

use super::open;
use super::Out;
use crate::fail::{Errno, Res};
use crate::paths::NfsPath;
use crate::state::State;

#[repr(C)]
#[derive(Clone, Copy)]
struct CookieIoFunctions {
    read: Option<unsafe extern "C" fn(*mut c_void, *mut c_char, size_t) -> ssize_t>,
    write: Option<unsafe extern "C" fn(*mut c_void, *const c_char, size_t) -> ssize_t>,
    seek: Option<unsafe extern "C" fn(*mut c_void, *mut off64_t, c_int) -> c_int>,
    close: Option<unsafe extern "C" fn(*mut c_void) -> c_int>,
}

extern "C" {
    fn fopencookie(cookie: *mut c_void, mode: *const c_char, funcs: CookieIoFunctions)
        -> *mut FILE;
    static mut stdin: *mut FILE;
    static mut stdout: *mut FILE;
    static mut stderr: *mut FILE;
}

/// Buffer of a stream on an NFS file.
const STREAM_BUFFER: usize = 256 << 10;

/// A stream buffer kept for the next stream of this process. Buffers are
/// mapped, not taken from `malloc`: freeing 256 KiB into the program's
/// heap made glibc consolidate its fast bins (touching pages a forked
/// child shares with its parent: copy-on-write faults) and move its
/// thresholds; and a PostgreSQL backend's three streams (`PG_VERSION`, two
/// relation cache files) reuse one buffer's pages instead of faulting in
/// fresh ones for each.
static SPARE_BUFFER: AtomicPtr<libc::c_char> = AtomicPtr::new(std::ptr::null_mut());

/// A stream buffer: the spare one, or a new mapping (null if none can be
/// made: the stream then has glibc's own).
fn take_buffer() -> *mut libc::c_char {
    let spare = SPARE_BUFFER.swap(std::ptr::null_mut(), Ordering::AcqRel);
    if !spare.is_null() {
        return spare;
    }
    // SAFETY: a fresh private anonymous mapping of a positive size.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            STREAM_BUFFER,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        std::ptr::null_mut()
    } else {
        p.cast()
    }
}

/// Gives back a buffer from [`take_buffer`]: kept as the spare, or
/// unmapped when there is one already.
fn give_buffer(buffer: *mut libc::c_char) {
    if buffer.is_null() {
        return;
    }
    if SPARE_BUFFER
        .compare_exchange(
            std::ptr::null_mut(),
            buffer,
            Ordering::AcqRel,
            Ordering::Relaxed,
        )
        .is_err()
    {
        // SAFETY: a mapping of STREAM_BUFFER bytes made by take_buffer,
        // used by nothing any more.
        unsafe { libc::munmap(buffer.cast(), STREAM_BUFFER) };
    }
}

/// Offset of `_fileno` in glibc's `struct _IO_FILE` on LP64 targets
/// (`_flags` and 11 buffer pointers, `_markers`, `_chain`).
const FILENO_OFFSET: usize = 112;

/// `fopen` of an NFS path.
pub fn fopen(state: &State, path: NfsPath, mode: &[u8]) -> Res<Out<*mut FILE>> {
    let flags = open_flags(mode)?;
    let fd = match open::open(state, path, flags, 0o666)? {
        Out::Done(fd) => fd,
        Out::Local(p) => return Ok(Out::Local(p)),
    };
    match stream(fd, mode) {
        Ok(f) => Ok(Out::Done(f)),
        Err(e) => {
            super::fds::close(fd);
            Err(e)
        }
    }
}

/// What a stream's cookie points to: its descriptor and the stream buffer
/// (given back with the cookie when the stream is closed).
struct Cookie {
    fd: c_int,
    buffer: *mut libc::c_char,
}

/// A stream on NFS descriptor `fd` (`fdopen`, and `fopen` above); closing
/// the stream closes `fd`.
pub fn stream(fd: c_int, mode: &[u8]) -> Res<*mut FILE> {
    let mut cmode: Vec<u8> = mode
        .iter()
        .copied()
        .filter(|&b| b != b'x' && b != b'e')
        .collect();
    cmode.push(0);
    let funcs = CookieIoFunctions {
        read: Some(cookie_read),
        write: Some(cookie_write),
        seek: Some(cookie_seek),
        close: Some(cookie_close),
    };
    // glibc gives a cookie stream BUFSIZ (8 KiB) of buffer, one READ or
    // WRITE per 8 KiB, and ignores setvbuf's size without a buffer: ours
    // makes reading a configuration or cache file one or two calls.
    // Given back by cookie_close.
    let buffer = take_buffer();
    let cookie = Box::into_raw(Box::new(Cookie { fd, buffer }));
    // SAFETY: the cookie lives until cookie_close; the mode is
    // NUL-terminated.
    let fp = unsafe { fopencookie(cookie.cast(), cmode.as_ptr().cast(), funcs) };
    if fp.is_null() {
        let e = crate::fail::errno();
        // SAFETY: not handed to any stream.
        unsafe {
            give_buffer(buffer);
            drop(Box::from_raw(cookie));
        }
        return Err(Errno(e));
    }
    set_fileno(fp, fd);
    if !buffer.is_null() {
        // SAFETY: a fresh stream, before any I/O; the buffer outlives it.
        unsafe { libc::setvbuf(fp, buffer, libc::_IOFBF, STREAM_BUFFER) };
    }
    Ok(fp)
}

/// The `open` flags of an `fopen` mode (`r`, `w`, `a`, `+`, and glibc's
/// `e` (close-on-exec) and `x` (exclusive); `b`, `m`, `c` change nothing).
pub fn open_flags(mode: &[u8]) -> Res<c_int> {
    let mut flags = match mode.first() {
        Some(b'r') => libc::O_RDONLY,
        Some(b'w') => libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC,
        Some(b'a') => libc::O_WRONLY | libc::O_CREAT | libc::O_APPEND,
        _ => return Err(Errno(libc::EINVAL)),
    };
    for &c in mode.get(1..).unwrap_or_default() {
        match c {
            b'+' => flags = (flags & !libc::O_ACCMODE) | libc::O_RDWR,
            b'e' => flags |= libc::O_CLOEXEC,
            b'x' => flags |= libc::O_EXCL,
            b',' => break,
            _ => {}
        }
    }
    Ok(flags)
}

/// Makes the standard stream of descriptor `fd` (0, 1, 2) a stream that
/// reaches NFS. The old stream is flushed by the caller before its
/// descriptor changed, and kept (never closed: it shares the descriptor).
pub fn rewire_standard_stream(fd: c_int) {
    let mode: &[u8] = match fd {
        0 => b"r",
        1 | 2 => b"a",
        _ => return,
    };
    let Ok(fp) = stream(fd, mode) else {
        return;
    };
    // SAFETY: the program's standard stream variables, replaced by a
    // valid stream; stderr is unbuffered as C requires.
    unsafe {
        match fd {
            0 => stdin = fp,
            1 => stdout = fp,
            _ => {
                libc::setvbuf(fp, std::ptr::null_mut(), libc::_IONBF, 0);
                stderr = fp;
            }
        }
    }
}

/// Flushes the standard stream of `fd` before the descriptor is replaced.
pub fn flush_standard_stream(fd: c_int) {
    // SAFETY: reads the program's stream variables; fflush of a valid
    // stream.
    unsafe {
        let fp = match fd {
            1 => stdout,
            2 => stderr,
            _ => return,
        };
        if !fp.is_null() {
            libc::fflush(fp);
        }
    }
}

/// At start: standard descriptors inherited as NFS descriptors.
pub fn rewire_inherited() {
    for fd in 0..=2 {
        if crate::fdtable::is_nfs(fd) {
            rewire_standard_stream(fd);
        }
    }
}

/// Sets a cookie stream's `_fileno`, if the layout is the one expected
/// (checked once: glibc marks a fresh cookie stream with -2 there).
fn set_fileno(fp: *mut FILE, fd: c_int) {
    static LAYOUT: AtomicU8 = AtomicU8::new(0); // 0 unknown, 1 ok, 2 not ok
                                                // SAFETY: fp is a cookie stream just made; the field is read and
                                                // written only when the check says it is `_fileno`.
    unsafe {
        let field = (fp as *mut u8).add(FILENO_OFFSET) as *mut c_int;
        if LAYOUT.load(Ordering::Relaxed) == 0 {
            let ok = *field == -2;
            LAYOUT.store(if ok { 1 } else { 2 }, Ordering::Relaxed);
        }
        if LAYOUT.load(Ordering::Relaxed) == 1 {
            *field = fd;
        }
    }
}

/// The descriptor of a cookie.
///
/// # Safety
/// `cookie` was made by [`stream`] and not yet closed.
unsafe fn fd_of(cookie: *mut c_void) -> c_int {
    // SAFETY: per the contract.
    unsafe { (*(cookie as *const Cookie)).fd }
}

unsafe extern "C" fn cookie_read(cookie: *mut c_void, buf: *mut c_char, size: size_t) -> ssize_t {
    // SAFETY: glibc passes its buffer and our cookie; our `read` entry
    // point serves it.
    unsafe { crate::hooks::io::read(fd_of(cookie), buf.cast(), size) }
}

unsafe extern "C" fn cookie_write(
    cookie: *mut c_void,
    buf: *const c_char,
    size: size_t,
) -> ssize_t {
    // SAFETY: our cookie.
    let fd = unsafe { fd_of(cookie) };
    let mut done = 0usize;
    while done < size {
        // SAFETY: glibc's buffer, `size` bytes.
        let n = unsafe { crate::hooks::io::write(fd, buf.add(done).cast(), size - done) };
        if n <= 0 {
            return if done > 0 { done as ssize_t } else { -1 };
        }
        done += n as usize;
    }
    done as ssize_t
}

unsafe extern "C" fn cookie_seek(cookie: *mut c_void, pos: *mut off64_t, whence: c_int) -> c_int {
    // SAFETY: glibc passes a valid position.
    unsafe {
        let r = crate::hooks::io::lseek64(fd_of(cookie), *pos, whence);
        if r < 0 {
            return -1;
        }
        *pos = r;
    }
    0
}

unsafe extern "C" fn cookie_close(cookie: *mut c_void) -> c_int {
    // SAFETY: our cookie, closed once by glibc; the stream no longer uses
    // its buffer once it calls close (it has flushed).
    let c = unsafe { Box::from_raw(cookie as *mut Cookie) };
    let r = super::fds::close(c.fd);
    give_buffer(c.buffer);
    r
}

/// The standard stream pointers now (to recognise `freopen` of one).
pub fn standard_stream_fd(fp: *mut FILE) -> Option<c_int> {
    // SAFETY: reads the program's stream variables.
    unsafe {
        if fp == stdin {
            Some(0)
        } else if fp == stdout {
            Some(1)
        } else if fp == stderr {
            Some(2)
        } else {
            None
        }
    }
}

/// The current standard stream of `fd`.
pub fn standard_stream(fd: c_int) -> *mut FILE {
    // SAFETY: reads the program's stream variables.
    unsafe {
        match fd {
            0 => stdin,
            1 => stdout,
            _ => stderr,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fopen_modes_give_the_open_flags_of_posix() {
        assert_eq!(open_flags(b"r").unwrap(), libc::O_RDONLY);
        assert_eq!(open_flags(b"rb+").unwrap(), libc::O_RDWR);
        assert_eq!(
            open_flags(b"w").unwrap(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC
        );
        assert_eq!(
            open_flags(b"a+e").unwrap(),
            libc::O_RDWR | libc::O_CREAT | libc::O_APPEND | libc::O_CLOEXEC
        );
        assert_eq!(
            open_flags(b"wx").unwrap(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_EXCL
        );
        assert_eq!(open_flags(b"z"), Err(Errno(libc::EINVAL)));
        assert_eq!(open_flags(b""), Err(Errno(libc::EINVAL)));
    }
}
