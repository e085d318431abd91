//! Directory streams (`DIR *`) of NFS directories.
//!
//! `opendir`/`fdopendir` of an NFS directory return a stream of this
//! library's own making; every `DIR *` function checks the first word of
//! the stream to tell it from glibc's (whose first field is a descriptor,
//! never negative; ours is a negative magic number). The entries are read
//! with READDIRPLUS on the first `readdir` (and again after `rewinddir`),
//! `.` and `..` first, with their types (`d_type`) and file ids (`d_ino`).

use std::mem::offset_of;

use dnfs::FileType;
use libc::{c_int, c_long};

use crate::clients;
use crate::fail::{Errno, Res};
use crate::fdtable;
use crate::shadow::Kind;
use crate::state::State;

/// First word of an NFS directory stream.
const MAGIC: i32 = -0x02f5_d1f5;

/// An NFS directory stream.
#[repr(C)]
pub struct NfsDir {
    /// [`MAGIC`]: where glibc's `DIR` has its descriptor.
    magic: i32,
    /// The directory's descriptor (an NFS descriptor).
    fd: c_int,
    entries: Option<Vec<Entry>>,
    pos: usize,
    /// What `readdir` returns a pointer to.
    current: libc::dirent64,
}

impl std::fmt::Debug for NfsDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NfsDir")
            .field("fd", &self.fd)
            .field("pos", &self.pos)
            .finish()
    }
}

struct Entry {
    name: Vec<u8>,
    ino: u64,
    dtype: u8,
}

/// True if `dir` is one of ours.
///
/// # Safety
/// `dir` is NULL or a `DIR *` from `opendir`/`fdopendir` (glibc's or ours).
#[inline]
pub unsafe fn is_ours(dir: *mut libc::DIR) -> bool {
    // SAFETY: both kinds of stream start with a 4-byte field.
    !dir.is_null() && unsafe { *(dir as *const i32) } == MAGIC
}

/// The stream behind a `DIR *` of ours.
///
/// # Safety
/// `is_ours(dir)`.
pub unsafe fn ours<'a>(dir: *mut libc::DIR) -> &'a mut NfsDir {
    // SAFETY: made by `fdopendir` below from a Box<NfsDir>.
    unsafe { &mut *(dir as *mut NfsDir) }
}

/// `fdopendir` of an NFS descriptor.
pub fn fdopendir(fd: c_int) -> Res<*mut libc::DIR> {
    let open = fdtable::get(fd).ok_or(Errno(libc::EBADF))?;
    if open.kind != Kind::Dir {
        return Err(Errno(libc::ENOTDIR));
    }
    if open.accmode == libc::O_PATH {
        return Err(Errno(libc::EBADF));
    }
    let dir = Box::new(NfsDir {
        magic: MAGIC,
        fd,
        entries: None,
        pos: 0,
        // SAFETY: all-zero is a valid dirent64.
        current: unsafe { std::mem::zeroed() },
    });
    Ok(Box::into_raw(dir).cast())
}

impl NfsDir {
    /// The descriptor (`dirfd`).
    pub fn fd(&self) -> c_int {
        self.fd
    }

    /// The next entry, `None` at the end (`readdir`).
    pub fn next(&mut self, state: &State) -> Res<Option<&mut libc::dirent64>> {
        if self.entries.is_none() {
            self.entries = Some(self.load(state)?);
        }
        let Some(e) = self.entries.as_ref().and_then(|v| v.get(self.pos)) else {
            return Ok(None);
        };
        // SAFETY: all-zero is a valid dirent64.
        let mut d: libc::dirent64 = unsafe { std::mem::zeroed() };
        d.d_ino = e.ino;
        d.d_off = (self.pos + 1) as i64;
        d.d_type = e.dtype;
        let base = offset_of!(libc::dirent64, d_name);
        d.d_reclen = ((base + e.name.len() + 1).div_ceil(8) * 8) as u16;
        for (dst, &src) in d.d_name.iter_mut().zip(e.name.iter()) {
            *dst = src as libc::c_char;
        }
        self.pos += 1;
        self.current = d;
        Ok(Some(&mut self.current))
    }

    /// Starts over, reading the directory again (`rewinddir`).
    pub fn rewind(&mut self) {
        self.entries = None;
        self.pos = 0;
    }

    /// The position (`telldir`).
    pub fn tell(&self) -> c_long {
        self.pos as c_long
    }

    /// Moves to a position `telldir` gave (`seekdir`).
    pub fn seek(&mut self, pos: c_long) {
        self.pos = pos.max(0) as usize;
    }

    /// Closes the stream and its descriptor (`closedir`).
    ///
    /// # Safety
    /// `dir` is ours and not used again.
    pub unsafe fn close(dir: *mut libc::DIR) -> c_int {
        // SAFETY: made by Box::into_raw in `fdopendir`.
        let mut b = unsafe { Box::from_raw(dir as *mut NfsDir) };
        b.magic = 0;
        let fd = b.fd;
        drop(b);
        super::fds::close(fd)
    }

    fn load(&self, state: &State) -> Res<Vec<Entry>> {
        let open = fdtable::get(self.fd).ok_or(Errno(libc::EBADF))?;
        let Some(path) = &open.path else {
            crate::warn::once("readdir inherited", || {
                "readdir of an NFS directory descriptor inherited across exec is not supported (EOPNOTSUPP)".into()
            });
            return Err(Errno(libc::EOPNOTSUPP));
        };
        let client = clients::get(state, open.mount)?;
        let listing = client.read_dir(&path.rest)?;
        let here = client.metadata_of(&open.handle, &path.rest)?.fileid;
        let mut out = Vec::with_capacity(listing.len() + 2);
        out.push(Entry {
            name: b".".to_vec(),
            ino: here,
            dtype: libc::DT_DIR,
        });
        out.push(Entry {
            name: b"..".to_vec(),
            ino: here,
            dtype: libc::DT_DIR,
        });
        for e in listing {
            if e.name.len() > 255 {
                continue;
            }
            let dtype = match e.metadata.map(|m| m.file_type) {
                Some(FileType::Dir) => libc::DT_DIR,
                Some(FileType::File) => libc::DT_REG,
                Some(FileType::Symlink) => libc::DT_LNK,
                _ => libc::DT_UNKNOWN,
            };
            out.push(Entry {
                name: e.name.into_bytes(),
                ino: e.fileid,
                dtype,
            });
        }
        Ok(out)
    }
}
