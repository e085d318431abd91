//! Placeholder files: the real kernel descriptor behind every NFS
//! descriptor.
//!
//! Each NFS open is given a descriptor of a local, empty *shadow file*,
//! one per NFS file (named by mount and file handle) in a directory every
//! user of the host can use (`$DIRECTNFS_SHADOW_DIR`, default
//! `/dev/shm/directnfs`). The kernel then does for NFS descriptors what it
//! does for any file:
//!
//! * descriptor numbers never collide with sockets, pipes or local files;
//! * `dup`, `dup2`, `dup3`, `F_DUPFD`, `fork` and `exec` share or copy the
//!   open file description: its file offset (where the current NFS offset
//!   is kept, see io.rs), its status flags (`F_GETFL`/`F_SETFL`) and
//!   `FD_CLOEXEC`;
//! * locks (`fcntl` F_SETLK/F_SETLKW/F_GETLK and the `F_OFD_` forms,
//!   `flock`, `lockf`) are real locks on the shadow file, with blocking,
//!   deadlock detection, release on close and at process death, between
//!   all processes of this host (the same NFS file has the same shadow
//!   file in every process);
//! * after `exec`, a program that also has the library preloaded finds its
//!   inherited NFS descriptors by the shadow file names (fdtable.rs).
//!
//! A call the library does not intercept (a raw system call, a static
//! binary, io_uring) reaches the empty shadow file: reads see end of file
//! and writes land in it, not on the server. `close` checks for that and
//! says so on stderr.

use std::ffi::CString;
use std::sync::atomic::{AtomicBool, Ordering};

use dnfs::Handle;
use libc::c_int;

use crate::config::Mount;
use crate::fail::{errno, Errno, Res};
use crate::real;

/// Environment variable naming the shadow directory.
pub const ENV_DIR: &str = "DIRECTNFS_SHADOW_DIR";
/// Default shadow directory (tmpfs on every Linux system).
pub const DEFAULT_DIR: &str = "/dev/shm/directnfs";

/// The kind of object behind a descriptor, part of the shadow name so that
/// a descriptor inherited across `exec` knows it without a server call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file (or anything that is not a directory or link).
    File,
    /// A directory.
    Dir,
    /// A symbolic link opened with `O_PATH | O_NOFOLLOW`.
    Link,
}

impl Kind {
    fn letter(self) -> char {
        match self {
            Kind::File => 'f',
            Kind::Dir => 'd',
            Kind::Link => 'l',
        }
    }

    fn from_letter(c: u8) -> Option<Kind> {
        match c {
            b'f' => Some(Kind::File),
            b'd' => Some(Kind::Dir),
            b'l' => Some(Kind::Link),
            _ => None,
        }
    }
}

/// The shadow directories of this host.
#[derive(Debug)]
pub struct Shadow {
    /// The root (`/dev/shm/directnfs`).
    pub root: String,
    /// Shadow files: `root/f`.
    files: String,
    /// Open markers of regular files: `root/o` (see silly.rs).
    markers: String,
    /// The mirror of NFS working directories: `root/cwd` (see cwd.rs).
    pub cwd_root: String,
    made: AtomicBool,
}

/// What a shadow file's name says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShadowName {
    /// The mount's key.
    pub key: u64,
    /// The object's kind.
    pub kind: Kind,
    /// The file handle.
    pub handle: Vec<u8>,
}

impl Shadow {
    /// The shadow directory from `$DIRECTNFS_SHADOW_DIR` or the default.
    pub fn from_env() -> Shadow {
        let root = std::env::var(ENV_DIR)
            .ok()
            .filter(|d| d.starts_with('/'))
            .unwrap_or_else(|| DEFAULT_DIR.to_string());
        let root = root.trim_end_matches('/').to_string();
        Shadow {
            files: format!("{root}/f"),
            markers: format!("{root}/o"),
            cwd_root: format!("{root}/cwd"),
            root,
            made: AtomicBool::new(false),
        }
    }

    /// The shadow file's path for a file of `mount`.
    pub fn path_of(&self, mount: &Mount, kind: Kind, handle: &Handle) -> String {
        // Built by hand: every `open` makes one, and a `format!` per
        // handle byte cost ~16,000 instructions per open (callgrind).
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let bytes = handle.as_bytes();
        let mut name = String::with_capacity(self.files.len() + 20 + 2 * bytes.len());
        name.push_str(&self.files);
        name.push('/');
        for shift in (0..16).rev() {
            name.push(HEX[(mount.key >> (shift * 4)) as usize & 0xf] as char);
        }
        name.push('-');
        name.push(kind.letter());
        name.push('-');
        for b in bytes {
            name.push(HEX[usize::from(b >> 4)] as char);
            name.push(HEX[usize::from(b & 0xf)] as char);
        }
        name
    }

    /// The open marker of a regular file of `mount` (silly.rs): the shadow
    /// file's name in `root/o`.
    pub fn marker_of(&self, mount: &Mount, handle: &Handle) -> String {
        let shadow = self.path_of(mount, Kind::File, handle);
        let mut path = self.markers.clone();
        path.push_str(&shadow[self.files.len()..]);
        path
    }

    /// What a descriptor's target path (`/proc/self/fd/N`) says, if it is
    /// one of our shadow files.
    pub fn parse(&self, target: &str) -> Option<ShadowName> {
        let name = target.strip_prefix(&self.files)?.strip_prefix('/')?;
        let (key, rest) = name.split_once('-')?;
        let (kind, hex) = rest.split_once('-')?;
        let kind = Kind::from_letter(*kind.as_bytes().first()?)?;
        if key.len() != 16 || hex.len() % 2 != 0 || hex.len() > 128 {
            return None;
        }
        let key = u64::from_str_radix(key, 16).ok()?;
        let handle = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
            .collect::<Option<Vec<u8>>>()?;
        Some(ShadowName { key, kind, handle })
    }

    /// Opens the shadow file of an NFS file: the descriptor the program
    /// gets. `flags` are the program's `open` flags; the access mode,
    /// `O_APPEND`, `O_NONBLOCK`, `O_CLOEXEC`, `O_SYNC`/`O_DSYNC` and `O_PATH`
    /// are given to the kernel (so `F_GETFL`, `FD_CLOEXEC` and lock modes
    /// are the kernel's); creation, truncation and the rest are the NFS
    /// side's business.
    pub fn open(&self, mount: &Mount, kind: Kind, handle: &Handle, flags: c_int) -> Res<c_int> {
        self.make_dirs()?;
        let path =
            CString::new(self.path_of(mount, kind, handle)).map_err(|_| Errno(libc::EINVAL))?;
        let keep = libc::O_ACCMODE
            | libc::O_APPEND
            | libc::O_NONBLOCK
            | libc::O_CLOEXEC
            | libc::O_SYNC
            | libc::O_DSYNC
            | libc::O_PATH
            | libc::O_NOCTTY;
        let mut kflags = flags & keep;
        if kind == Kind::Dir && kflags & libc::O_PATH == 0 {
            // A directory may only be opened for reading.
            kflags &= !libc::O_ACCMODE;
        }
        loop {
            // SAFETY: NUL-terminated path; plain open of a local file.
            let fd = unsafe { real::open(path.as_ptr(), kflags, 0) };
            if fd >= 0 {
                return Ok(fd);
            }
            if errno() != libc::ENOENT {
                return Err(Errno(errno()));
            }
            // First use of this file on this host: create it, readable and
            // writable by everyone (any user's process may lock it).
            // SAFETY: as above; O_EXCL so exactly one creator fixes the mode.
            let fd = unsafe {
                real::open(
                    path.as_ptr(),
                    libc::O_CREAT | libc::O_EXCL | libc::O_RDWR | libc::O_CLOEXEC,
                    0o666,
                )
            };
            if fd >= 0 {
                // SAFETY: fd was just opened; mode bits only.
                unsafe {
                    libc::fchmod(fd, 0o666);
                    real::close(fd);
                }
            } else if errno() != libc::EEXIST {
                return Err(Errno(errno()));
            }
        }
    }

    /// Removes the shadow file of a file that no longer exists (its last
    /// name was removed through this library), so shadow files do not pile
    /// up. Descriptors still open keep theirs. A regular file's open marker
    /// goes too.
    pub fn forget(&self, mount: &Mount, kind: Kind, handle: &Handle) {
        if let Ok(path) = CString::new(self.path_of(mount, kind, handle)) {
            // SAFETY: NUL-terminated path.
            unsafe { real::unlink(path.as_ptr()) };
        }
        if kind == Kind::File {
            if let Ok(path) = CString::new(self.marker_of(mount, handle)) {
                // SAFETY: NUL-terminated path.
                unsafe { real::unlink(path.as_ptr()) };
            }
        }
    }

    /// Creates the shadow directories (mode 1777: every user's processes
    /// share them, as they share the NFS files).
    fn make_dirs(&self) -> Res<()> {
        if self.made.load(Ordering::Relaxed) {
            return Ok(());
        }
        for dir in [&self.root, &self.files, &self.markers, &self.cwd_root] {
            make_shared_dir(dir)?;
        }
        self.made.store(true, Ordering::Relaxed);
        Ok(())
    }
}

/// `mkdir DIR` with mode 1777 (sticky, like /tmp), if it does not exist.
pub fn make_shared_dir(dir: &str) -> Res<()> {
    let c = CString::new(dir).map_err(|_| Errno(libc::EINVAL))?;
    // SAFETY: NUL-terminated path.
    if unsafe { real::mkdir(c.as_ptr(), 0o1777) } == 0 {
        // The umask took bits away; only the creator may put them back.
        // SAFETY: as above.
        unsafe { real::chmod(c.as_ptr(), 0o1777) };
        return Ok(());
    }
    match errno() {
        libc::EEXIST => Ok(()),
        e => Err(Errno(e)),
    }
}

/// Bytes a call outside the library wrote into the shadow file behind
/// `fd` (they never reached the server); the file is emptied again.
pub fn stray_bytes(fd: c_int) -> u64 {
    // SAFETY: a zeroed stat buffer filled by fstat on a descriptor we own.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { real::fstat(fd, &mut st) } != 0 || st.st_size <= 0 {
        return 0;
    }
    // SAFETY: fd is a shadow file; emptying it loses nothing of the NFS
    // file. It fails harmlessly for descriptors without write access.
    unsafe { real::ftruncate(fd, 0) };
    st.st_size as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shadow() -> Shadow {
        Shadow {
            root: "/s".into(),
            files: "/s/f".into(),
            markers: "/s/o".into(),
            cwd_root: "/s/cwd".into(),
            made: AtomicBool::new(false),
        }
    }

    #[test]
    fn shadow_names_parse_back_to_key_kind_and_handle() {
        let s = shadow();
        let n = s.parse("/s/f/00000000deadbeef-d-01ff").unwrap();
        assert_eq!(n.key, 0xdead_beef);
        assert_eq!(n.kind, Kind::Dir);
        assert_eq!(n.handle, vec![1, 0xff]);
    }

    #[test]
    fn shadow_paths_spell_key_kind_and_handle_in_hex() {
        let s = shadow();
        let tab = dnfs::config::parse_str(
            "server: s\npath: 127.0.0.1\nexport: /e mount: /m\n",
            std::path::Path::new("t"),
        )
        .unwrap();
        let mut mount = crate::config::from_tab(&tab).unwrap().mounts.remove(0);
        mount.key = 0xdead_beef;
        let h = Handle::from_bytes(&[0x01, 0xff, 0x0a]).unwrap();
        let p = s.path_of(&mount, Kind::File, &h);
        assert_eq!(p, "/s/f/00000000deadbeef-f-01ff0a");
        assert_eq!(s.marker_of(&mount, &h), "/s/o/00000000deadbeef-f-01ff0a");
        let n = s.parse(&p).unwrap();
        assert_eq!(
            (n.key, n.kind, n.handle),
            (0xdead_beef, Kind::File, vec![1, 0xff, 0x0a])
        );
    }

    #[test]
    fn other_paths_are_not_shadow_names() {
        let s = shadow();
        for p in [
            "/etc/passwd",
            "/s/f/xyz",
            "/s/f/00000000deadbeef-q-01",
            "/s/f/00000000deadbeef-f-0",
            "/s/f/deadbeef-f-01",
            "/s/fx/00000000deadbeef-f-01",
            "socket:[1234]",
        ] {
            assert_eq!(s.parse(p), None, "{p}");
        }
    }
}
