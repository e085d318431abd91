//! `mmap` of an NFS descriptor.
//!
//! There is no page cache, so nothing can map the file itself: `mmap` of
//! an NFS descriptor is refused with `ENODEV`, unless the process runs
//! with `DIRECTNFS_PRELOAD_MMAP=copy` ([`crate::state::ENV_MMAP`]) and the
//! mapping is `MAP_PRIVATE`. That one is then served as a private copy:
//! anonymous memory filled with the file's bytes, read from the server
//! when `mmap` is called. It keeps what POSIX promises of `MAP_PRIVATE`
//! (the process's writes stay its own; whether it sees later changes to
//! the file is unspecified) but not what Linux adds (later writes to the
//! file show in the pages the process has not written), which is why it
//! is not the default. It is what programs that map files only to read
//! them need: git maps its index, objects and configuration. The copy
//! costs the mapped length in memory and one read of it up front.
//!
//! `MAP_SHARED` is always refused: its writes must reach the file and
//! other processes' mappings, and a reader mapping shared expects to see
//! what others write (LMDB's readers, SQLite's `-shm` wal-index).

use libc::{c_int, c_void, off_t};

use crate::fail::{errno, Errno, Res};
use crate::fdtable::Open;
use crate::real;
use crate::shadow::Kind;
use crate::state::State;
use crate::warn;

fn is_private(flags: c_int) -> bool {
    flags & libc::MAP_TYPE == libc::MAP_PRIVATE
}

/// Whether a mapping with `flags` is served: `MAP_PRIVATE`, and copies
/// allowed.
pub fn served(state: &State, flags: c_int) -> bool {
    state.map_copies && is_private(flags)
}

/// The refusal of a mapping of NFS descriptor `fd`, said once for shared
/// and once for private mappings.
pub fn refuse(fd: c_int, flags: c_int) -> Errno {
    let private = is_private(flags);
    warn::once(if private { "mmap private" } else { "mmap" }, || {
        format!(
            "mmap of NFS descriptor {fd} refused (ENODEV): directnfs has no page cache; use \
             read/write (for PostgreSQL: the default settings never map data files){}",
            if private {
                format!(
                    "; {}=copy serves MAP_PRIVATE as a private copy that never sees later \
                     writes to the file (right for git)",
                    crate::state::ENV_MMAP
                )
            } else {
                " (MAP_SHARED is never served)".to_string()
            }
        )
    });
    Errno(libc::ENODEV)
}

/// A `MAP_PRIVATE` mapping of `len` bytes of `open` from `off`: anonymous
/// memory with the caller's address hint, flags and protection, holding
/// the file's bytes (zeros past its end).
///
/// # Safety
/// As for `mmap` itself: with `MAP_FIXED`, whatever the process had
/// mapped at `addr..addr + len` is replaced.
pub unsafe fn private_copy(
    state: &State,
    open: &Open,
    addr: *mut c_void,
    len: usize,
    prot: c_int,
    flags: c_int,
    off: i64,
) -> Res<*mut c_void> {
    // The kernel's checks, in its order: the arguments, then the access.
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as i64;
    if len == 0 || off < 0 || off % page != 0 || off.checked_add(len as i64).is_none() {
        return Err(Errno(libc::EINVAL));
    }
    if !open.readable() {
        return Err(Errno(libc::EACCES));
    }
    if open.kind == Kind::Dir {
        return Err(Errno(libc::ENODEV));
    }
    let anonymous = (flags & !libc::MAP_TYPE) | libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
    // Writable while it is filled; the caller's protection after.
    // SAFETY: an anonymous mapping; with MAP_FIXED the caller asked for
    // whatever was at `addr` to be replaced (this function's contract).
    let p = unsafe {
        real::mmap(
            addr,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            anonymous,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(Errno(errno()));
    }
    // SAFETY: `p` is a fresh mapping of `len` writable bytes, ours alone
    // until it is returned.
    let filled = fill(
        state,
        open,
        unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), len) },
        off,
    )
    .and_then(|()| {
        if prot == libc::PROT_READ | libc::PROT_WRITE {
            return Ok(());
        }
        // SAFETY: the mapping made above.
        match unsafe { libc::mprotect(p, len, prot) } {
            0 => Ok(()),
            _ => Err(Errno(errno())),
        }
    });
    if let Err(e) = filled {
        // SAFETY: the mapping made above, not yet handed out.
        unsafe { libc::munmap(p, len) };
        return Err(e);
    }
    Ok(p)
}

/// Reads the file from `off` into `buf` until it is full or the file ends.
fn fill(state: &State, open: &Open, buf: &mut [u8], off: i64) -> Res<()> {
    let mut done = 0;
    while done < buf.len() {
        let at = off_t::try_from(off as u64 + done as u64).map_err(|_| Errno(libc::EOVERFLOW))?;
        match super::io::pread(state, open, &mut buf[done..], at)? {
            0 => break,
            n => done += n,
        }
    }
    Ok(())
}
