//! Reads, writes, offsets and sizes of NFS descriptors.
//!
//! The file offset of a descriptor is the offset of its shadow descriptor
//! in the kernel (set with `lseek` after each `read`/`write`), so it is
//! shared exactly as POSIX shares it: by `dup`'d descriptors, across `fork`
//! and `exec`. Within a process, `read`/`write`/`lseek` of one open file
//! description take turns (the offset moves atomically, as on Linux);
//! between processes sharing a description they do not
//! (docs/run-deviations.md, `shared-offset`).
//! `pread`/`pwrite` and their vector forms touch no offset and run fully in
//! parallel.

use libc::{c_int, off_t};

use crate::fail::{errno, Errno, Res};
use crate::fdtable::Open;
use crate::real;
use crate::shadow::Kind;
use crate::state::State;

/// Largest piece `copy_file_range`/`sendfile` move per step.
const COPY_CHUNK: usize = 1 << 20;

/// `read(2)`.
pub fn read(state: &State, fd: c_int, open: &Open, buf: &mut [u8]) -> Res<usize> {
    check_read(open)?;
    let _turn = open.offset_lock.lock().unwrap_or_else(|p| p.into_inner());
    let pos = kernel_offset(fd)?;
    let n = read_at(state, open, buf, pos as u64)?;
    set_kernel_offset(fd, pos + n as off_t)?;
    Ok(n)
}

/// `write(2)`; `O_APPEND` writes at the size the server reports now. The
/// flag is the kernel's (the shadow descriptor's status flags): a process
/// sharing the description may have set it with `F_SETFL`.
pub fn write(state: &State, fd: c_int, open: &Open, buf: &[u8]) -> Res<usize> {
    check_write(open)?;
    let _turn = open.offset_lock.lock().unwrap_or_else(|p| p.into_inner());
    // SAFETY: F_GETFL of our shadow descriptor.
    let kernel_flags = unsafe { real::fcntl(fd, libc::F_GETFL, 0) };
    if kernel_flags < 0 {
        return Err(Errno(errno()));
    }
    let pos = if kernel_flags & libc::O_APPEND != 0 {
        crate::fail::to_off(open.file(state)?.metadata()?.size)?
    } else {
        kernel_offset(fd)?
    };
    let n = write_at(state, open, buf, pos as u64)?;
    set_kernel_offset(fd, pos + n as off_t)?;
    Ok(n)
}

/// `pread(2)`.
pub fn pread(state: &State, open: &Open, buf: &mut [u8], off: off_t) -> Res<usize> {
    check_read(open)?;
    if off < 0 {
        return Err(Errno(libc::EINVAL));
    }
    read_at(state, open, buf, off as u64)
}

/// `pwrite(2)`. On a descriptor with `O_APPEND` the data goes at the end
/// of the file whatever `off` says, as Linux does (pwrite(2), BUGS); the
/// file offset does not move.
pub fn pwrite(state: &State, fd: c_int, open: &Open, buf: &[u8], off: off_t) -> Res<usize> {
    check_write(open)?;
    if off < 0 {
        return Err(Errno(libc::EINVAL));
    }
    // SAFETY: F_GETFL of our shadow descriptor.
    let kernel_flags = unsafe { real::fcntl(fd, libc::F_GETFL, 0) };
    if kernel_flags < 0 {
        return Err(Errno(errno()));
    }
    let pos = if kernel_flags & libc::O_APPEND != 0 {
        open.file(state)?.metadata()?.size
    } else {
        off as u64
    };
    write_at(state, open, buf, pos)
}

/// `readv` (`off` None) and `preadv` (`off` Some): one READ of the total,
/// scattered into the buffers.
pub fn readv(
    state: &State,
    fd: c_int,
    open: &Open,
    bufs: &mut [&mut [u8]],
    off: Option<off_t>,
) -> Res<usize> {
    let total: usize = bufs.iter().map(|b| b.len()).sum();
    if bufs.len() == 1 {
        return match off {
            Some(o) => pread(state, open, bufs[0], o),
            None => read(state, fd, open, bufs[0]),
        };
    }
    let mut tmp = vec![0u8; total];
    let n = match off {
        Some(o) => pread(state, open, &mut tmp, o)?,
        None => read(state, fd, open, &mut tmp)?,
    };
    let mut src = &tmp[..n];
    for b in bufs.iter_mut() {
        let k = b.len().min(src.len());
        b[..k].copy_from_slice(&src[..k]);
        src = &src[k..];
    }
    Ok(n)
}

/// `writev` (`off` None) and `pwritev` (`off` Some): gathered into one
/// WRITE (or as many as the transfer size needs).
pub fn writev(
    state: &State,
    fd: c_int,
    open: &Open,
    bufs: &[&[u8]],
    off: Option<off_t>,
) -> Res<usize> {
    let data: Vec<u8>;
    let one: &[u8] = if bufs.len() == 1 {
        bufs[0]
    } else {
        data = bufs.concat();
        &data
    };
    match off {
        Some(o) => pwrite(state, fd, open, one, o),
        None => write(state, fd, open, one),
    }
}

/// `lseek(2)`: `SEEK_SET`/`SEEK_CUR` on the kernel offset, `SEEK_END`,
/// `SEEK_DATA` and `SEEK_HOLE` from the size the server reports, or the
/// host's size board says (sizes.rs; a file has no holes as far as NFSv3
/// can tell).
pub fn lseek(state: &State, fd: c_int, open: &Open, off: off_t, whence: c_int) -> Res<off_t> {
    let _turn = open.offset_lock.lock().unwrap_or_else(|p| p.into_inner());
    let to = match whence {
        libc::SEEK_SET | libc::SEEK_CUR => {
            // SAFETY: lseek on our shadow descriptor.
            let r = unsafe { real::lseek(fd, off, whence) };
            return if r < 0 { Err(Errno(errno())) } else { Ok(r) };
        }
        libc::SEEK_END => {
            let size = size_of(state, open)?;
            size.checked_add(off).ok_or(Errno(libc::EOVERFLOW))?
        }
        libc::SEEK_DATA => {
            if off < 0 || off >= size_of(state, open)? {
                return Err(Errno(libc::ENXIO));
            }
            off
        }
        libc::SEEK_HOLE => {
            let size = size_of(state, open)?;
            if off < 0 || off >= size {
                return Err(Errno(libc::ENXIO));
            }
            size
        }
        _ => return Err(Errno(libc::EINVAL)),
    };
    if to < 0 {
        return Err(Errno(libc::EINVAL));
    }
    set_kernel_offset(fd, to)?;
    Ok(to)
}

/// `fsync`/`fdatasync`: in `unstable` mode waits for the descriptor's
/// write-behind writes (reporting one that failed, once), then COMMIT;
/// nothing to do with
/// FILE_SYNC writes (durable when acknowledged). Directory operations are
/// synchronous on the server (RFC 1813 §3.3), so a directory has nothing
/// to flush either.
pub fn fsync(state: &State, open: &Open) -> Res<()> {
    if open.kind == Kind::File && open.accmode != libc::O_PATH {
        open.file(state)?.fsync()?;
    }
    if open.accmode == libc::O_PATH {
        return Err(Errno(libc::EBADF));
    }
    Ok(())
}

/// `syncfs` of `open`'s mount (`Some`) or `sync` of every mount (`None`):
/// what a kernel client would flush there, as far as this process knows
/// it — each process is its own NFS client, so the uncommitted writes it
/// can make durable are those of the files it has open: each of those is
/// `fsync`ed (a COMMIT where `unstable` writes wait for one; nothing where
/// writes are FILE_SYNC). Every file is tried; the first error is returned.
pub fn sync_open_files(mount: Option<usize>) -> Res<()> {
    let opens: Vec<std::sync::Arc<Open>> = crate::fdtable::TABLE
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
        .map(|t| {
            t.values()
                .filter(|o| mount.is_none_or(|m| o.mount == m))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    let mut first = Ok(());
    for open in opens {
        // Only files this process wrote through have anything to commit.
        if open.kind != Kind::File || !open.writable() {
            continue;
        }
        let Some(file) = open.opened_file() else {
            continue;
        };
        if let Err(e) = file.fsync() {
            if first.is_ok() {
                first = Err(Errno::from(e));
            }
        }
    }
    first
}

/// `ftruncate(2)`.
pub fn ftruncate(state: &State, open: &Open, len: off_t) -> Res<()> {
    if len < 0 || open.kind != Kind::File {
        return Err(Errno(libc::EINVAL));
    }
    if !open.writable() {
        return Err(Errno(if open.accmode == libc::O_PATH {
            libc::EBADF
        } else {
            libc::EINVAL
        }));
    }
    set_len(state, open, len as u64)
}

/// `fallocate(2)`: mode 0 extends the file to `off + len` (NFSv3 has no
/// preallocation: the new range is a hole the server fills on write);
/// `FALLOC_FL_KEEP_SIZE` alone is accepted and does nothing; other modes
/// are `EOPNOTSUPP`.
pub fn fallocate(state: &State, open: &Open, mode: c_int, off: off_t, len: off_t) -> Res<()> {
    if off < 0 || len <= 0 {
        return Err(Errno(libc::EINVAL));
    }
    if !open.writable() {
        return Err(Errno(libc::EBADF));
    }
    if open.kind != Kind::File {
        return Err(Errno(libc::ENODEV));
    }
    match mode {
        0 => {
            let end = off.checked_add(len).ok_or(Errno(libc::EFBIG))?;
            if open.file(state)?.metadata()?.size < end as u64 {
                set_len(state, open, end as u64)?;
            }
            Ok(())
        }
        libc::FALLOC_FL_KEEP_SIZE => Ok(()),
        _ => {
            crate::warn::once(&format!("fallocate mode {mode:#x}"), || {
                format!(
                    "fallocate mode {mode:#x} ({}) is not supported on NFS files (EOPNOTSUPP)",
                    fallocate_mode_names(mode)
                )
            });
            Err(Errno(libc::EOPNOTSUPP))
        }
    }
}

/// The `FALLOC_FL_*` flags set in `mode`, by name.
fn fallocate_mode_names(mode: c_int) -> String {
    let names = [
        (libc::FALLOC_FL_KEEP_SIZE, "KEEP_SIZE"),
        (libc::FALLOC_FL_PUNCH_HOLE, "PUNCH_HOLE"),
        (libc::FALLOC_FL_COLLAPSE_RANGE, "COLLAPSE_RANGE"),
        (libc::FALLOC_FL_ZERO_RANGE, "ZERO_RANGE"),
        (libc::FALLOC_FL_INSERT_RANGE, "INSERT_RANGE"),
        (libc::FALLOC_FL_UNSHARE_RANGE, "UNSHARE_RANGE"),
    ];
    let mut said: Vec<String> = names
        .iter()
        .filter(|(bit, _)| mode & bit != 0)
        .map(|(_, n)| format!("FALLOC_FL_{n}"))
        .collect();
    let known = names.iter().fold(0, |a, (bit, _)| a | bit);
    if mode & !known != 0 {
        said.push(format!("unknown bits {:#x}", mode & !known));
    }
    said.join(" | ")
}

/// One side of a copy: an NFS description or a local descriptor.
#[derive(Debug)]
pub enum End<'a> {
    /// An NFS descriptor.
    Nfs(c_int, &'a Open),
    /// A local descriptor.
    Local(c_int),
}

/// `copy_file_range`/`sendfile` with an NFS side, served by reading and
/// writing: at most `len` bytes (1 MiB per step), from `*off_in` (or the
/// input's offset) to `*off_out` (or the output's). Returns the bytes
/// copied; 0 at the input's end.
pub fn copy(
    state: &State,
    input: End<'_>,
    off_in: Option<&mut i64>,
    output: End<'_>,
    off_out: Option<&mut i64>,
    len: usize,
) -> Res<usize> {
    let mut buf = vec![0u8; len.min(COPY_CHUNK)];
    let n = match (&input, off_in.as_deref()) {
        (End::Nfs(_, o), Some(&at)) => pread(state, o, &mut buf, at)?,
        (End::Nfs(fd, o), None) => read(state, *fd, o, &mut buf)?,
        (End::Local(fd), at) => local_read(*fd, &mut buf, at.copied())?,
    };
    if n == 0 {
        return Ok(0);
    }
    let data = &buf[..n];
    let written = match (&output, off_out.as_deref()) {
        (End::Nfs(fd, o), Some(&at)) => pwrite(state, *fd, o, data, at)?,
        (End::Nfs(fd, o), None) => write(state, *fd, o, data)?,
        (End::Local(fd), at) => local_write(*fd, data, at.copied())?,
    };
    if written < n {
        // The output took less (a full local disk): put the input back.
        if off_in.is_none() {
            rewind_input(state, &input, (n - written) as i64)?;
        }
    }
    if let Some(o) = off_in {
        *o += written as i64;
    }
    if let Some(o) = off_out {
        *o += written as i64;
    }
    Ok(written)
}

fn rewind_input(state: &State, input: &End<'_>, by: i64) -> Res<()> {
    match input {
        End::Nfs(fd, o) => lseek(state, *fd, o, -by, libc::SEEK_CUR).map(|_| ()),
        // SAFETY: lseek of the caller's descriptor.
        End::Local(fd) => match unsafe { real::lseek(*fd, -by, libc::SEEK_CUR) } {
            r if r < 0 => Err(Errno(errno())),
            _ => Ok(()),
        },
    }
}

fn local_read(fd: c_int, buf: &mut [u8], at: Option<i64>) -> Res<usize> {
    // SAFETY: buf is valid for its length.
    let r = unsafe {
        match at {
            Some(o) => real::pread(fd, buf.as_mut_ptr().cast(), buf.len(), o),
            None => real::read(fd, buf.as_mut_ptr().cast(), buf.len()),
        }
    };
    if r < 0 {
        Err(Errno(errno()))
    } else {
        Ok(r as usize)
    }
}

fn local_write(fd: c_int, buf: &[u8], at: Option<i64>) -> Res<usize> {
    // SAFETY: buf is valid for its length.
    let r = unsafe {
        match at {
            Some(o) => real::pwrite(fd, buf.as_ptr().cast(), buf.len(), o),
            None => real::write(fd, buf.as_ptr().cast(), buf.len()),
        }
    };
    if r < 0 {
        Err(Errno(errno()))
    } else {
        Ok(r as usize)
    }
}

fn check_read(open: &Open) -> Res<()> {
    if !open.readable() {
        return Err(Errno(libc::EBADF));
    }
    if open.kind == Kind::Dir {
        return Err(Errno(libc::EISDIR));
    }
    Ok(())
}

fn check_write(open: &Open) -> Res<()> {
    if !open.writable() {
        return Err(Errno(libc::EBADF));
    }
    Ok(())
}

fn read_at(state: &State, open: &Open, buf: &mut [u8], off: u64) -> Res<usize> {
    if buf.is_empty() {
        return Ok(0);
    }
    // At or past the end of the file as this process knows it, exactly as
    // fresh as for lseek(SEEK_END) (sizes.rs): end of file, no READ.
    if open
        .size
        .size(state, &open.handle)
        .is_some_and(|size| off >= size)
    {
        return Ok(0);
    }
    let file = open.file(state)?;
    open.size.observe(state, &open.handle, || {
        let n = file.read_at(buf, off)?;
        // Short only at the end of the file: the size, if a byte came back
        // or nothing was before `off` (an empty answer past the end says
        // only that the size is at most `off`).
        let size = (n < buf.len() && (n > 0 || off == 0)).then_some(off + n as u64);
        Ok((n, size))
    })
}

fn write_at(state: &State, open: &Open, buf: &[u8], off: u64) -> Res<usize> {
    if buf.is_empty() {
        return Ok(0);
    }
    if off
        .checked_add(buf.len() as u64)
        .is_none_or(|end| end > i64::MAX as u64)
    {
        return Err(Errno(libc::EFBIG));
    }
    let file = open.file(state)?;
    let sync = open.flags() & (libc::O_SYNC | libc::O_DSYNC) != 0;
    // O_SYNC/O_DSYNC (at open or by F_SETFL): durable before returning,
    // also in unstable mode — each write a FILE_SYNC WRITE that waits for
    // its reply (one round trip, no COMMIT; a server that answers with
    // less is sent a COMMIT by the client), no write-behind. Without the
    // opt-in (state.rs, ENV_WRITE_BEHIND) no write-behind at all: other
    // processes would not see the WRITEs in flight.
    file.set_sync_writes(sync);
    file.set_write_behind(!sync && state.write_behind);
    let written = file.write_at(buf, off);
    // Also after a failure: part of it may have reached the file.
    let end = off + written.as_ref().map_or(buf.len(), |n| *n) as u64;
    open.size.wrote(state, &open.handle, end);
    Ok(written?)
}

/// The size for `lseek`: remembered while no process of this host changed
/// it (sizes.rs), else a GETATTR.
fn size_of(state: &State, open: &Open) -> Res<off_t> {
    if let Some(size) = open.size.size(state, &open.handle) {
        return crate::fail::to_off(size);
    }
    let size = open.size.ask(state, &open.handle, || {
        Ok(open.file(state)?.metadata()?.size)
    })?;
    crate::fail::to_off(size)
}

/// Sets the size of `open`'s file (SETATTR) and says so on the board.
fn set_len(state: &State, open: &Open, len: u64) -> Res<()> {
    let done = open.file(state)?.set_len(len);
    crate::sizes::changed(state, &open.handle);
    Ok(done?)
}

fn kernel_offset(fd: c_int) -> Res<off_t> {
    // SAFETY: lseek on our shadow descriptor.
    let r = unsafe { real::lseek(fd, 0, libc::SEEK_CUR) };
    if r < 0 {
        Err(Errno(errno()))
    } else {
        Ok(r)
    }
}

fn set_kernel_offset(fd: c_int, to: off_t) -> Res<()> {
    // SAFETY: lseek on our shadow descriptor.
    if unsafe { real::lseek(fd, to, libc::SEEK_SET) } < 0 {
        return Err(Errno(errno()));
    }
    Ok(())
}
