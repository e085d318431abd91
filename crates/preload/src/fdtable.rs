//! Which descriptors are NFS descriptors, and what each one is.
//!
//! A bitmap answers "is this descriptor ours?" with one atomic load (the
//! cost every `read`, `write` or `fstat` of a local descriptor pays); the
//! table behind it maps a descriptor to its [`Open`], shared by all
//! descriptors of one open file description (`dup` clones the `Arc`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use dnfs::{File, Handle};
use libc::c_int;

use crate::clients;
use crate::fail::{Errno, Res};
use crate::paths::NfsPath;
use crate::shadow::Kind;
use crate::sizes::Remembered;
use crate::state::State;

/// Descriptors below this are in the bitmap; higher ones (rare) are looked
/// up in the table.
const BITMAP_FDS: usize = 1 << 20;

static BITS: [AtomicU64; BITMAP_FDS / 64] = [const { AtomicU64::new(0) }; BITMAP_FDS / 64];
/// Set once any descriptor at or above `BITMAP_FDS` is ours.
static HIGH: AtomicBool = AtomicBool::new(false);
/// Set once any NFS descriptor was opened in this process.
static ANY: AtomicBool = AtomicBool::new(false);

/// Descriptor -> open file description.
pub static TABLE: RwLock<Option<HashMap<c_int, Arc<Open>>>> = RwLock::new(None);

/// One open NFS file description: what every descriptor sharing it sees.
#[derive(Debug)]
pub struct Open {
    /// Index of its mount.
    pub mount: usize,
    /// The file handle.
    pub handle: Handle,
    /// Where it was opened (host path and path in the export); `None` for a
    /// descriptor inherited across `exec`.
    pub path: Option<NfsPath>,
    /// File, directory or link.
    pub kind: Kind,
    /// `O_RDONLY`, `O_WRONLY`, `O_RDWR` or `O_PATH`.
    pub accmode: c_int,
    /// Status flags the NFS side honours: `O_APPEND`, `O_SYNC`, `O_DSYNC`,
    /// `O_DIRECT` (changed by `F_SETFL`).
    pub status: AtomicI32,
    /// The client's open file, made on first use in this process (again in
    /// a child after `fork`).
    file: OnceLock<File>,
    /// Orders `read`/`write`/`lseek` on the shared offset within this
    /// process (the offset itself is the shadow descriptor's).
    pub offset_lock: Mutex<()>,
    /// The size last asked for `lseek(SEEK_END)` (sizes.rs).
    pub size: Remembered,
}

/// Gives a client file the I/O class of the dnfstab's `*_files:` pattern
/// its path matches (a descriptor inherited across `exec` has no path: it
/// stays data).
fn give_io_class(file: &File, mount: usize, path: Option<&NfsPath>) {
    let Some(path) = path else { return };
    if let Some(m) = crate::state::get().and_then(|s| s.config.mounts.get(mount)) {
        file.set_io_class(m.io_class_of(&path.host));
    }
}

impl Open {
    /// A new description; `file` when the opener already has it.
    pub fn new(
        mount: usize,
        handle: Handle,
        path: Option<NfsPath>,
        kind: Kind,
        flags: c_int,
        file: Option<File>,
    ) -> Open {
        let accmode = if flags & libc::O_PATH != 0 {
            libc::O_PATH
        } else {
            flags & libc::O_ACCMODE
        };
        let cell = OnceLock::new();
        if let Some(f) = file {
            give_io_class(&f, mount, path.as_ref());
            let _ = cell.set(f);
        }
        Open {
            mount,
            handle,
            path,
            kind,
            accmode,
            status: AtomicI32::new(flags & STATUS_FLAGS),
            file: cell,
            offset_lock: Mutex::new(()),
            size: Remembered::default(),
        }
    }

    /// The same description for a child after `fork`: no client file (it
    /// belongs to the parent's connections), everything else kept.
    pub fn copy_for_child(&self) -> Open {
        Open {
            mount: self.mount,
            handle: self.handle,
            path: self.path.clone(),
            kind: self.kind,
            accmode: self.accmode,
            status: AtomicI32::new(self.status.load(Ordering::Relaxed)),
            file: OnceLock::new(),
            offset_lock: Mutex::new(()),
            size: Remembered::default(),
        }
    }

    /// The client's file if this process made it already (no I/O).
    pub fn opened_file(&self) -> Option<&File> {
        self.file.get()
    }

    /// The client's file, opened by handle on first use.
    pub fn file(&self, state: &State) -> Res<&File> {
        if let Some(f) = self.file.get() {
            return Ok(f);
        }
        let client = clients::get(state, self.mount)?;
        let file = client.open_handle(&self.handle, &self.label());
        give_io_class(&file, self.mount, self.path.as_ref());
        let _ = self.file.set(file);
        self.file.get().ok_or(Errno(libc::EIO))
    }

    /// The path in the export (for messages and statistics).
    pub fn label(&self) -> String {
        match &self.path {
            Some(p) => p.rest.clone(),
            None => format!("(inherited handle {:?})", self.handle),
        }
    }

    /// True if reads are allowed (`O_RDONLY` or `O_RDWR`).
    pub fn readable(&self) -> bool {
        self.accmode == libc::O_RDONLY || self.accmode == libc::O_RDWR
    }

    /// True if writes are allowed (`O_WRONLY` or `O_RDWR`).
    pub fn writable(&self) -> bool {
        self.accmode == libc::O_WRONLY || self.accmode == libc::O_RDWR
    }

    /// The status flags now.
    pub fn flags(&self) -> c_int {
        self.status.load(Ordering::Relaxed)
    }
}

/// The status flags kept in [`Open::status`].
pub const STATUS_FLAGS: c_int = libc::O_APPEND | libc::O_SYNC | libc::O_DSYNC | libc::O_DIRECT;

/// True if `fd` is an NFS descriptor. One atomic load for local ones.
#[inline(always)]
pub fn is_nfs(fd: c_int) -> bool {
    if !ANY.load(Ordering::Relaxed) || fd < 0 {
        return false;
    }
    let fd = fd as usize;
    if fd < BITMAP_FDS {
        return BITS[fd / 64].load(Ordering::Acquire) & (1 << (fd % 64)) != 0;
    }
    HIGH.load(Ordering::Relaxed) && lookup(fd as c_int).is_some()
}

/// True once any NFS descriptor was opened in this process.
pub fn any() -> bool {
    ANY.load(Ordering::Relaxed)
}

/// The description behind `fd`, if it is an NFS descriptor.
#[inline]
pub fn get(fd: c_int) -> Option<Arc<Open>> {
    if !is_nfs(fd) {
        return None;
    }
    lookup(fd)
}

fn lookup(fd: c_int) -> Option<Arc<Open>> {
    TABLE
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()?
        .get(&fd)
        .cloned()
}

/// Records `fd` as an NFS descriptor.
/// The first descriptor of a regular file in this process takes its open
/// marker lock (silly.rs).
pub fn insert(fd: c_int, open: Arc<Open>) {
    let (mount, handle, kind) = (open.mount, open.handle, open.kind);
    {
        let mut t = TABLE.write().unwrap_or_else(|p| p.into_inner());
        t.get_or_insert_with(HashMap::new).insert(fd, open);
        mark(fd, true);
    }
    if kind == Kind::File {
        crate::silly::opened(mount, &handle);
    }
}

/// Forgets `fd` (it was closed, or replaced by `dup2`); returns what it was.
pub fn remove(fd: c_int) -> Option<Arc<Open>> {
    if !is_nfs(fd) {
        return None;
    }
    let mut t = TABLE.write().unwrap_or_else(|p| p.into_inner());
    mark(fd, false);
    t.as_mut()?.remove(&fd)
}

/// True if any NFS descriptor's description satisfies `f`.
pub fn any_open(f: impl Fn(&Open) -> bool) -> bool {
    if !ANY.load(Ordering::Relaxed) {
        return false;
    }
    TABLE
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
        .is_some_and(|t| t.values().any(|o| f(o)))
}

/// Forgets every NFS descriptor in `first..=last` (`close_range`).
pub fn remove_range(first: c_int, last: c_int) -> Vec<(c_int, Arc<Open>)> {
    if !ANY.load(Ordering::Relaxed) {
        return Vec::new();
    }
    let mut t = TABLE.write().unwrap_or_else(|p| p.into_inner());
    let Some(map) = t.as_mut() else {
        return Vec::new();
    };
    let fds: Vec<c_int> = map
        .keys()
        .copied()
        .filter(|fd| (first..=last).contains(fd))
        .collect();
    fds.into_iter()
        .filter_map(|fd| {
            mark(fd, false);
            map.remove(&fd).map(|o| (fd, o))
        })
        .collect()
}

fn mark(fd: c_int, on: bool) {
    if fd < 0 {
        return;
    }
    let fd = fd as usize;
    if fd >= BITMAP_FDS {
        if on {
            HIGH.store(true, Ordering::Relaxed);
        }
    } else if on {
        BITS[fd / 64].fetch_or(1 << (fd % 64), Ordering::Release);
    } else {
        BITS[fd / 64].fetch_and(!(1 << (fd % 64)), Ordering::Release);
    }
    if on {
        ANY.store(true, Ordering::Relaxed);
    }
}

/// In a child after `fork`: every description copied without its client
/// file (dups stay shared), the parent's leaked, never dropped (see
/// clients.rs). Called with the table locked by the fork handlers.
pub fn rebuild_in_child(table: &mut Option<HashMap<c_int, Arc<Open>>>) {
    let Some(old) = table.take() else {
        return;
    };
    let mut copies: HashMap<*const Open, Arc<Open>> = HashMap::new();
    let mut fresh = HashMap::with_capacity(old.len());
    for (fd, open) in &old {
        let copy = copies
            .entry(Arc::as_ptr(open))
            .or_insert_with(|| Arc::new(open.copy_for_child()));
        fresh.insert(*fd, Arc::clone(copy));
    }
    std::mem::forget(old);
    *table = Some(fresh);
}

/// Finds the NFS descriptors this process inherited across `exec` (their
/// shadow files, see shadow.rs) and serves them again. Their paths are not
/// known: they serve I/O, `fstat`, locks and `dup`, but not `*at` calls or
/// `fchdir`. Offsets and flags are the kernel's, so they carry over.
pub fn take_over_inherited(state: &State) {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return;
    };
    for entry in dir.flatten() {
        let Some(fd) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<c_int>().ok())
        else {
            continue;
        };
        let Ok(target) = std::fs::read_link(entry.path()) else {
            continue;
        };
        let Some(name) = target.to_str().and_then(|t| state.shadow.parse(t)) else {
            continue;
        };
        let Some(mount) = state.config.mounts.iter().position(|m| m.key == name.key) else {
            continue;
        };
        let Ok(handle) = Handle::from_bytes(&name.handle) else {
            continue;
        };
        // SAFETY: F_GETFL on a descriptor of this process.
        let flags = unsafe { crate::real::fcntl(fd, libc::F_GETFL, 0) };
        if flags < 0 {
            continue;
        }
        insert(
            fd,
            Arc::new(Open::new(mount, handle, None, name.kind, flags, None)),
        );
    }
}
