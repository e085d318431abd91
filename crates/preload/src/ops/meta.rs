//! Attributes: `stat` and friends (always fresh from the server: nothing
//! is cached), `statfs`/`statvfs` (FSSTAT), `access` (which may use the
//! board of names, lookups.rs), and the calls that change attributes
//! (SETATTR, said on the boards when they change a size or permissions).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use dnfs::{FileType, Metadata, SetAttrs, SetTimeTo};
use libc::c_int;

use super::access::{may, Who};
use super::Out;
use crate::clients;
use crate::fail::{Errno, Res};
use crate::fdtable::Open;
use crate::paths::NfsPath;
use crate::resolve::{self, Found, Resolved};
use crate::state::State;

/// `st_blksize` of NFS files: the preferred I/O size (one 1 MiB READ or
/// WRITE, the largest transfer directnfs sends).
pub const BLKSIZE: i64 = 1 << 20;
/// `f_type` of NFS file systems (`NFS_SUPER_MAGIC`, as the kernel reports).
pub const NFS_SUPER_MAGIC: i64 = 0x6969;
/// Block size reported by `statfs`.
const FS_BLOCK: u64 = 4096;

/// Attributes of an NFS path (`follow`: of a link's target).
pub fn stat_path(state: &State, path: NfsPath, follow: bool) -> Res<Out<(usize, Metadata)>> {
    match resolve::resolve(state, path, follow)? {
        Resolved::Nfs(f) => Ok(Out::Done((f.path.mount, f.meta))),
        Resolved::Local(p) => Ok(Out::Local(p)),
    }
}

/// Attributes of an NFS descriptor (GETATTR of its handle).
pub fn stat_fd(state: &State, open: &Open) -> Res<Metadata> {
    let client = clients::get(state, open.mount)?;
    Ok(client.metadata_of(&open.handle, &open.label())?)
}

/// Fills a `struct stat`.
pub fn fill_stat(state: &State, mount: usize, m: &Metadata, st: &mut libc::stat) {
    // SAFETY: all-zero is a valid struct stat.
    *st = unsafe { std::mem::zeroed() };
    st.st_dev = state.config.mounts[mount].dev;
    st.st_ino = m.fileid;
    st.st_mode = type_bits(m.file_type) | m.mode;
    st.st_nlink = u64::from(m.nlink);
    st.st_uid = m.uid;
    st.st_gid = m.gid;
    st.st_size = m.size.min(i64::MAX as u64) as i64;
    st.st_blksize = BLKSIZE;
    st.st_blocks = m.used.div_ceil(512).min(i64::MAX as u64) as i64;
    let (s, n) = split(m.atime);
    st.st_atime = s;
    st.st_atime_nsec = n;
    let (s, n) = split(m.mtime);
    st.st_mtime = s;
    st.st_mtime_nsec = n;
    let (s, n) = split(m.ctime);
    st.st_ctime = s;
    st.st_ctime_nsec = n;
}

/// Fills a `struct statx` (every basic field; no birth time: NFSv3 has
/// none).
pub fn fill_statx(state: &State, mount: usize, m: &Metadata, stx: &mut libc::statx) {
    // SAFETY: all-zero is a valid struct statx.
    *stx = unsafe { std::mem::zeroed() };
    let dev = state.config.mounts[mount].dev;
    stx.stx_mask = libc::STATX_BASIC_STATS;
    stx.stx_blksize = BLKSIZE as u32;
    stx.stx_nlink = m.nlink;
    stx.stx_uid = m.uid;
    stx.stx_gid = m.gid;
    stx.stx_mode = (type_bits(m.file_type) | m.mode) as u16;
    stx.stx_ino = m.fileid;
    stx.stx_size = m.size;
    stx.stx_blocks = m.used.div_ceil(512);
    stx.stx_dev_major = libc::major(dev);
    stx.stx_dev_minor = libc::minor(dev);
    for (dst, t) in [
        (&mut stx.stx_atime, m.atime),
        (&mut stx.stx_mtime, m.mtime),
        (&mut stx.stx_ctime, m.ctime),
    ] {
        let (s, n) = split(t);
        dst.tv_sec = s;
        dst.tv_nsec = n as u32;
    }
}

fn type_bits(t: FileType) -> u32 {
    match t {
        FileType::Dir => libc::S_IFDIR,
        FileType::Symlink => libc::S_IFLNK,
        _ => libc::S_IFREG,
    }
}

fn split(t: SystemTime) -> (i64, i64) {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => (d.as_secs() as i64, i64::from(d.subsec_nanos())),
        Err(_) => (0, 0),
    }
}

/// `statfs` of a mount (FSSTAT).
pub fn statfs(state: &State, mount: usize) -> Res<libc::statfs> {
    let s = clients::get(state, mount)?.fsstat()?;
    // SAFETY: all-zero is a valid struct statfs.
    let mut out: libc::statfs = unsafe { std::mem::zeroed() };
    out.f_type = NFS_SUPER_MAGIC;
    out.f_bsize = FS_BLOCK as i64;
    out.f_frsize = FS_BLOCK as i64;
    out.f_blocks = s.total_bytes / FS_BLOCK;
    out.f_bfree = s.free_bytes / FS_BLOCK;
    out.f_bavail = s.avail_bytes / FS_BLOCK;
    out.f_files = s.total_files;
    out.f_ffree = s.free_files;
    out.f_namelen = 255;
    let key = state.config.mounts[mount].key;
    // SAFETY: fsid_t is two ints; written through its raw bytes.
    unsafe {
        let p = (&mut out.f_fsid as *mut libc::fsid_t).cast::<u32>();
        *p = key as u32;
        *p.add(1) = (key >> 32) as u32;
    }
    Ok(out)
}

/// `pathconf`/`fpathconf` of a file on NFS (which exists: the caller
/// looked it up): the values glibc gives for a file on a kernel NFS mount,
/// whose limits are the same on every NFS file system — `Ok(None)` for a
/// limit there is none of (-1, errno unchanged), `EINVAL` for an unknown
/// name.
pub fn pathconf(name: c_int) -> Res<Option<libc::c_long>> {
    Ok(Some(match name {
        libc::_PC_LINK_MAX => 127, // glibc's LINUX_LINK_MAX for NFS
        libc::_PC_MAX_CANON | libc::_PC_MAX_INPUT => 255,
        libc::_PC_NAME_MAX => 255, // as statfs says (f_namelen)
        libc::_PC_PATH_MAX => 4096,
        libc::_PC_PIPE_BUF => 4096,
        libc::_PC_CHOWN_RESTRICTED | libc::_PC_NO_TRUNC => 1,
        libc::_PC_VDISABLE => 0,
        libc::_PC_ASYNC_IO => 1,
        libc::_PC_FILESIZEBITS => 64,
        libc::_PC_2_SYMLINKS => 1,
        libc::_PC_REC_XFER_ALIGN | libc::_PC_ALLOC_SIZE_MIN => FS_BLOCK as libc::c_long,
        libc::_PC_SYNC_IO
        | libc::_PC_PRIO_IO
        | libc::_PC_SOCK_MAXBUF
        | libc::_PC_REC_INCR_XFER_SIZE
        | libc::_PC_REC_MAX_XFER_SIZE
        | libc::_PC_REC_MIN_XFER_SIZE
        | libc::_PC_SYMLINK_MAX => return Ok(None),
        _ => return Err(Errno(libc::EINVAL)),
    }))
}

/// `statvfs` of a mount, from [`statfs`].
pub fn statvfs(state: &State, mount: usize) -> Res<libc::statvfs> {
    let f = statfs(state, mount)?;
    // SAFETY: all-zero is a valid struct statvfs.
    let mut out: libc::statvfs = unsafe { std::mem::zeroed() };
    out.f_bsize = FS_BLOCK;
    out.f_frsize = FS_BLOCK;
    out.f_blocks = f.f_blocks;
    out.f_bfree = f.f_bfree;
    out.f_bavail = f.f_bavail;
    out.f_files = f.f_files;
    out.f_ffree = f.f_ffree;
    out.f_favail = f.f_ffree;
    out.f_fsid = state.config.mounts[mount].key;
    out.f_namemax = 255;
    Ok(out)
}

/// `access`/`faccessat`: `effective` checks with the effective ids
/// (`AT_EACCESS`, `euidaccess`).
pub fn access(
    state: &State,
    path: NfsPath,
    mode: c_int,
    follow: bool,
    effective: bool,
) -> Res<Out<()>> {
    if mode & !(libc::R_OK | libc::W_OK | libc::X_OK) != 0 {
        return Err(Errno(libc::EINVAL));
    }
    let f = match crate::lookups::resolve_for_open(state, path, follow)? {
        Resolved::Nfs(f) => f,
        Resolved::Local(p) => return Ok(Out::Local(p)),
    };
    if mode == libc::F_OK {
        return Ok(Out::Done(()));
    }
    let who = if effective {
        Who::effective(state, f.path.mount)
    } else {
        Who::real(state, f.path.mount)
    };
    if may(who, &f.meta, mode) {
        Ok(Out::Done(()))
    } else {
        Err(Errno(libc::EACCES))
    }
}

/// Changes attributes of an NFS path (`follow`: of a link's target).
pub fn set_path(state: &State, path: NfsPath, follow: bool, attrs: SetAttrs) -> Res<Out<()>> {
    let f: Found = match resolve::resolve(state, path, follow)? {
        Resolved::Nfs(f) => f,
        Resolved::Local(p) => return Ok(Out::Local(p)),
    };
    if attrs.size.is_some() && f.meta.is_dir() {
        return Err(Errno(libc::EISDIR));
    }
    // `truncate` needs write permission, checked here as the kernel does
    // before it sends anything: an NFSv3 server lets the owner of a
    // read-only file change its size, NFSv4.1 answers EIO-like errors.
    if attrs.size.is_some()
        && !crate::ops::access::may(Who::effective(state, f.path.mount), &f.meta, libc::W_OK)
    {
        return Err(Errno(libc::EACCES));
    }
    // `chown(path, -1, -1)` changes nothing and succeeds for anyone (a
    // SETATTR with no attribute is EPERM for a non-owner on NFSv4.1).
    if attrs == SetAttrs::default() {
        return Ok(Out::Done(()));
    }
    let client = clients::get(state, f.path.mount)?;
    let sized = attrs.size.is_some();
    let permissions = changes_permissions(&attrs);
    let done = client.open_handle(&f.handle, &f.path.rest).set_attrs(attrs);
    if sized {
        crate::sizes::changed(state, &f.handle);
    }
    if permissions {
        crate::lookups::changed(state);
    }
    done?;
    Ok(Out::Done(()))
}

/// Changes attributes of an NFS descriptor.
pub fn set_fd(state: &State, open: &Open, attrs: SetAttrs) -> Res<()> {
    if attrs == SetAttrs::default() {
        return Ok(()); // `fchown(fd, -1, -1)`: see set_path
    }
    let client = clients::get(state, open.mount)?;
    let sized = attrs.size.is_some();
    let permissions = changes_permissions(&attrs);
    let done = client
        .open_handle(&open.handle, &open.label())
        .set_attrs(attrs);
    if sized {
        crate::sizes::changed(state, &open.handle);
    }
    if permissions {
        crate::lookups::changed(state);
    }
    Ok(done?)
}

/// True if a SETATTR changes what `open` and `access` check (mode,
/// owners), which the board of names keeps (lookups.rs).
fn changes_permissions(attrs: &SetAttrs) -> bool {
    attrs.mode.is_some() || attrs.uid.is_some() || attrs.gid.is_some()
}

/// The new owner of `chown` (`-1` leaves one as it is).
pub fn owner(uid: libc::uid_t, gid: libc::gid_t) -> SetAttrs {
    SetAttrs {
        uid: (uid != u32::MAX).then_some(uid),
        gid: (gid != u32::MAX).then_some(gid),
        ..Default::default()
    }
}

/// The new times of `utimensat` (`NULL`: both now; `UTIME_NOW`,
/// `UTIME_OMIT`).
///
/// # Safety
/// `times` is NULL or points to two timespecs.
pub unsafe fn times_from_timespec(times: *const libc::timespec) -> Res<SetAttrs> {
    if times.is_null() {
        return Ok(SetAttrs {
            atime: SetTimeTo::ServerNow,
            mtime: SetTimeTo::ServerNow,
            ..Default::default()
        });
    }
    // SAFETY: per the contract.
    let (a, m) = unsafe { (*times, *times.add(1)) };
    Ok(SetAttrs {
        atime: one_time(a)?,
        mtime: one_time(m)?,
        ..Default::default()
    })
}

fn one_time(t: libc::timespec) -> Res<SetTimeTo> {
    match t.tv_nsec {
        libc::UTIME_NOW => Ok(SetTimeTo::ServerNow),
        libc::UTIME_OMIT => Ok(SetTimeTo::Keep),
        n if !(0..1_000_000_000).contains(&n) || t.tv_sec < 0 => Err(Errno(libc::EINVAL)),
        n => Ok(SetTimeTo::At(
            UNIX_EPOCH + Duration::new(t.tv_sec as u64, n as u32),
        )),
    }
}

/// The new times of `utimes`/`futimes` (`NULL`: both now).
///
/// # Safety
/// `times` is NULL or points to two timevals.
pub unsafe fn times_from_timeval(times: *const libc::timeval) -> Res<SetAttrs> {
    if times.is_null() {
        // SAFETY: NULL is allowed.
        return unsafe { times_from_timespec(std::ptr::null()) };
    }
    // SAFETY: per the contract.
    let (a, m) = unsafe { (*times, *times.add(1)) };
    let conv = |t: libc::timeval| libc::timespec {
        tv_sec: t.tv_sec,
        tv_nsec: t.tv_usec * 1000,
    };
    let ts = [conv(a), conv(m)];
    // SAFETY: ts holds two timespecs.
    unsafe { times_from_timespec(ts.as_ptr()) }
}
