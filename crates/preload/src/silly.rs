//! "Silly rename", host-wide: a file that any process of this host holds
//! open keeps working after some process of the host removes its name
//! (`unlink`, or `rename` over it), as on a kernel NFS mount, where all
//! processes share one client. NFSv3 has no open-file reference on the
//! server (and an NFSv4.1 OPEN is made here only at a descriptor's first
//! I/O), so a REMOVE would leave the other descriptors with a stale
//! handle (`ESTALE`). Like the kernel's client, the name is renamed aside
//! instead, to a hidden `.nfsPPPPPPPPNNNNNNNN` in the same directory (the
//! remover's pid and a counter), and that name is removed when the last
//! process of the host closes its last descriptor of the file.
//!
//! Who holds a file open is told by an *open marker*, one per NFS file in
//! the shadow directory (`root/o/NAME`, NAME as the shadow file's, see
//! shadow.rs): a process that opens a file (its first descriptor of that
//! handle, or descriptors inherited across `exec`) holds a shared `flock`
//! on the marker through one descriptor of its own. That descriptor's
//! open file description is shared with `fork` children and the kernel
//! drops the lock when the last holder closes it or dies: no pids to go
//! stale. The shadow file itself cannot serve: the program's own `flock`
//! and `fcntl` locks are mapped onto it (locks.rs).
//!
//! * A remover probes with `flock(LOCK_EX | LOCK_NB)` on a fresh
//!   descriptor of the marker (its own shared lock, if it holds the file,
//!   conflicts too). Held: the name is renamed aside and the hidden name
//!   appended to the marker (NUL-terminated), under a shared lock of the
//!   remover's own (so a holder's last close meanwhile cannot miss it),
//!   after which the remover tries the cleanup below itself. Free: the lock is kept
//!   across the REMOVE, so no process of the host opens the file between
//!   the probe and the REMOVE.
//! * At a process's last close of the file, it closes its marker
//!   descriptor (dropping its shared lock) and tries `LOCK_EX | LOCK_NB`;
//!   the process that gets it removes the hidden names written there.
//!
//! Costs: nothing on `read` or `write`; an open of a file this process
//! does not hold yet pays an `open`, `fchmod`, `flock` and `fstat` of the
//! marker (and a GETATTR when names changed on the host meanwhile, see
//! below), its last close a `close` and an `open` and `flock`, `unlink`
//! an `open` and `flock` of the marker, and `rename` a LOOKUP of the
//! target name (to know which file it would remove) and, when it is a
//! file, the same probe.
//!
//! A process that found a file by a LOOKUP (or on the board of names,
//! lookups.rs) and takes its marker lock only then could miss a remover
//! in between: `open` therefore asks the server for the file's attributes
//! when names changed on the host during the open (the board's counter
//! moved), and looks the name up again if the file is gone (ops/open.rs).
//!
//! Limits (docs/run-deviations.md, `removed-while-open`): processes of
//! other hosts are not seen (their reads get `ESTALE`). That re-check
//! sees only the names changed by the same user (the board is per user),
//! and a process between `exec` and the new program's taking over of its
//! inherited descriptors holds no marker lock. A process
//! killed while it holds the file (or one that `exec`s a program without
//! the library) drops its lock without removing the hidden name: it
//! stays, as on a kernel client after a crash, until a later process of
//! the host that opens and closes the same file (by the hidden name)
//! removes it at its last close, or someone removes it by hand.

use std::ffi::CString;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Mutex;

use dnfs::Handle;
use libc::c_int;

use crate::clients;
use crate::fail::Res;
use crate::fdtable;
use crate::paths::NfsPath;
use crate::real;
use crate::shadow::Kind;
use crate::state::State;

/// This process's shared lock on the marker of one file it holds open.
struct Held {
    mount: usize,
    handle: Handle,
    /// The marker descriptor (`O_CLOEXEC`; a `fork` child shares it).
    fd: c_int,
    /// The marker's identity, so that a descriptor the program closed
    /// behind the library's back (and the kernel gave out again) is never
    /// closed here.
    dev: u64,
    ino: u64,
}

static HELD: Mutex<Vec<Held>> = Mutex::new(Vec::new());
/// Set once this process took any marker lock: `close` of a process that
/// never did skips the table.
static ANY_HELD: AtomicBool = AtomicBool::new(false);
static COUNTER: AtomicU32 = AtomicU32::new(0);

/// True if this process has a descriptor of the file `handle` open.
pub fn held_open(mount: usize, handle: &Handle) -> bool {
    fdtable::any_open(|o| o.mount == mount && o.handle == *handle && o.kind == Kind::File)
}

fn marker_path(state: &State, mount: usize, handle: &Handle) -> Option<CString> {
    let m = state.config.mounts.get(mount)?;
    CString::new(state.shadow.marker_of(m, handle)).ok()
}

fn flock(fd: c_int, op: c_int) -> bool {
    // SAFETY: flock on a descriptor this module opened.
    unsafe { libc::syscall(libc::SYS_flock, fd as libc::c_long, op as libc::c_long) == 0 }
}

fn identity(fd: c_int) -> Option<(u64, u64)> {
    // SAFETY: a zeroed stat buffer filled by fstat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    (unsafe { real::fstat(fd, &mut st) } == 0).then_some((st.st_dev, st.st_ino))
}

/// After a descriptor of a regular file was recorded: the first one of
/// that file in this process takes a shared lock on its marker. Failures
/// are silent (the file is then not seen by removers, as before).
pub fn opened(mount: usize, handle: &Handle) {
    let Some(state) = crate::state::get() else {
        return;
    };
    {
        let list = lock();
        if list.iter().any(|h| h.mount == mount && h.handle == *handle) {
            return;
        }
    }
    let Some(path) = marker_path(state, mount, handle) else {
        return;
    };
    // SAFETY: NUL-terminated path; a local file of the shadow directory.
    let fd = unsafe {
        real::open(
            path.as_ptr(),
            libc::O_RDWR | libc::O_CREAT | libc::O_CLOEXEC,
            0o666,
        )
    };
    if fd < 0 {
        return;
    }
    // Any user's process may append a hidden name (fails harmlessly when
    // another user made it).
    // SAFETY: fd was just opened; mode bits only.
    unsafe { real::fchmod(fd, 0o666) };
    let id = identity(fd);
    let Some((dev, ino)) = id.filter(|_| flock(fd, libc::LOCK_SH)) else {
        // SAFETY: our descriptor.
        unsafe { real::close(fd) };
        return;
    };
    let mut list = lock();
    if list.iter().any(|h| h.mount == mount && h.handle == *handle) {
        // Another thread took it meanwhile.
        drop(list);
        // SAFETY: our descriptor.
        unsafe { real::close(fd) };
        return;
    }
    list.push(Held {
        mount,
        handle: *handle,
        fd,
        dev,
        ino,
    });
    ANY_HELD.store(true, Ordering::Relaxed);
}

/// What a remover learns about a file before it removes a name of it.
#[derive(Debug)]
pub enum Claim {
    /// Some process of this host (maybe this one) holds it open: rename
    /// the name aside ([`hide`]), then [`settle`]. The shared lock held
    /// meanwhile (`None` when this process holds the file itself) keeps a
    /// holder's last close from cleaning up before the hidden name is in
    /// the marker.
    Busy(Option<Guard>),
    /// Nobody holds it; the exclusive lock (if there is a marker) is kept
    /// until this value is dropped, after the REMOVE.
    Free(Option<Guard>),
}

/// A marker lock, released when dropped.
#[derive(Debug)]
pub struct Guard(c_int);

impl Drop for Guard {
    fn drop(&mut self) {
        // SAFETY: our descriptor; closing it drops the lock.
        unsafe { real::close(self.0) };
    }
}

/// Probes whether any process of this host holds the file `handle` open.
pub fn claim(state: &State, mount: usize, handle: &Handle) -> Claim {
    if held_open(mount, handle) {
        return Claim::Busy(None);
    }
    let Some(path) = marker_path(state, mount, handle) else {
        return Claim::Free(None);
    };
    for _ in 0..100 {
        // SAFETY: NUL-terminated path.
        let fd = unsafe { real::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC, 0) };
        if fd < 0 {
            // No marker: no process of this host opened it since it was made.
            return Claim::Free(None);
        }
        let guard = Guard(fd);
        if flock(fd, libc::LOCK_EX | libc::LOCK_NB) {
            return Claim::Free(Some(guard));
        }
        if flock(fd, libc::LOCK_SH | libc::LOCK_NB) {
            return Claim::Busy(Some(guard));
        }
        // Another remover or a last close holds it exclusively for a
        // call to the server: wait for it, then probe again.
        flock(fd, libc::LOCK_SH);
    }
    Claim::Busy(None)
}

/// After [`hide`] for a [`Claim::Busy`]: drops the remover's shared lock;
/// if the holders closed the file meanwhile, the hidden names go now.
pub fn settle(state: &State, mount: usize, handle: &Handle, guard: Option<Guard>) {
    if let Some(g) = guard {
        drop(g);
        clean(state, mount, handle);
    }
}

/// Renames `path` (the file `handle`, held open by some process of this
/// host) aside to a hidden name in its directory, written into the
/// file's marker for whoever closes it last. Returns the hidden name.
pub fn hide(state: &State, path: &NfsPath, handle: Handle) -> Res<String> {
    let pid = std::process::id();
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let dir = crate::paths::parent(&path.rest);
    let rest = format!("{}/.nfs{pid:08x}{n:08x}", dir.trim_end_matches('/'));
    let client = clients::get(state, path.mount)?;
    let renamed = client.rename(&path.rest, &rest);
    crate::lookups::changed(state);
    renamed?;
    if let Some(marker) = marker_path(state, path.mount, &handle) {
        // SAFETY: NUL-terminated path.
        let fd = unsafe {
            real::open(
                marker.as_ptr(),
                libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT | libc::O_CLOEXEC,
                0o666,
            )
        };
        if fd >= 0 {
            let mut line = rest.clone().into_bytes();
            line.push(0);
            // One small O_APPEND write: whole, even beside other removers.
            // A failure leaves the hidden name behind (as after a crash).
            // SAFETY: a buffer of `line.len()` bytes; our descriptor.
            unsafe {
                real::write(fd, line.as_ptr().cast(), line.len());
                real::close(fd);
            }
        }
    }
    Ok(rest)
}

/// Undoes [`hide`] of `path` (the file `handle`, renamed aside to
/// `hidden`) when the call it made room for failed: the hidden name gets
/// its old name back and leaves the marker, so a refused `rename` changes
/// nothing.
pub fn unhide(state: &State, path: &NfsPath, handle: &Handle, hidden: &str) {
    let Ok(client) = clients::get(state, path.mount) else {
        return;
    };
    // A failure leaves the hidden name, removed at the last close.
    let back = client.rename(hidden, &path.rest);
    crate::lookups::changed(state);
    if back.is_err() {
        return;
    }
    let Some(marker) = marker_path(state, path.mount, handle) else {
        return;
    };
    // SAFETY: NUL-terminated path.
    let fd = unsafe { real::open(marker.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC, 0) };
    if fd < 0 {
        return;
    }
    let names = read_names(fd);
    let keep: Vec<u8> = names
        .iter()
        .filter(|n| n.as_str() != hidden)
        .flat_map(|n| n.bytes().chain(std::iter::once(0)))
        .collect();
    // SAFETY: our descriptor and a buffer of `keep.len()` bytes. (A name
    // appended by another remover between the read and this write is
    // lost: two removes of one open file racing with a failed rename.)
    unsafe {
        real::ftruncate(fd, 0);
        real::pwrite(fd, keep.as_ptr().cast(), keep.len(), 0);
        real::close(fd);
    }
}

/// The hidden names written in a marker (bounded: a marker larger than
/// 1 MiB is read no further).
fn read_names(fd: c_int) -> Vec<String> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while buf.len() < 1 << 20 {
        // SAFETY: a buffer of `chunk.len()` bytes; our descriptor.
        let n =
            unsafe { real::pread(fd, chunk.as_mut_ptr().cast(), chunk.len(), buf.len() as i64) };
        if n <= 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n as usize]);
    }
    buf.split(|b| *b == 0)
        .filter(|n| !n.is_empty())
        .filter_map(|n| std::str::from_utf8(n).ok())
        .map(str::to_string)
        .collect()
}

/// After a descriptor of the file `handle` was closed (or replaced): once
/// this process holds it open no more, its marker lock goes, and if no
/// other process of the host holds it, the hidden names go too.
pub fn closed(state: &State, mount: usize, handle: &Handle) {
    if !ANY_HELD.load(Ordering::Relaxed) || held_open(mount, handle) {
        return;
    }
    let held = {
        let mut list = lock();
        let Some(i) = list
            .iter()
            .position(|h| h.mount == mount && h.handle == *handle)
        else {
            return;
        };
        list.swap_remove(i)
    };
    if identity(held.fd) == Some((held.dev, held.ino)) {
        // SAFETY: our marker descriptor (checked above).
        unsafe { real::close(held.fd) };
    }
    clean(state, mount, handle);
}

/// If no process of the host holds the file `handle` open (the marker's
/// exclusive lock is free), removes the hidden names its marker lists.
fn clean(state: &State, mount: usize, handle: &Handle) {
    let Some(path) = marker_path(state, mount, handle) else {
        return;
    };
    // SAFETY: NUL-terminated path.
    let fd = unsafe { real::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC, 0) };
    if fd < 0 {
        return;
    }
    let guard = Guard(fd);
    if !flock(fd, libc::LOCK_EX | libc::LOCK_NB) {
        // Another process (or a fork child) still holds it.
        return;
    }
    let names = read_names(fd);
    if names.is_empty() {
        return;
    }
    let Ok(client) = clients::get(state, mount) else {
        return;
    };
    for rest in &names {
        // A failure leaves a hidden name behind, as the kernel's client
        // does when its REMOVE fails: nothing to report to `close`.
        let _ = client.remove(rest);
    }
    crate::lookups::changed(state);
    // The file had no other name (it was renamed aside when removed):
    // its shadow file and marker go, the marker while still locked.
    state
        .shadow
        .forget(&state.config.mounts[mount], Kind::File, handle);
    drop(guard);
}

/// After descriptors were closed or replaced: [`closed`] for each
/// description, once they are gone from the table.
pub fn closed_all(opens: &[std::sync::Arc<fdtable::Open>]) {
    if !ANY_HELD.load(Ordering::Relaxed) {
        return;
    }
    let Some(state) = crate::state::get() else {
        return;
    };
    for o in opens {
        closed(state, o.mount, &o.handle);
    }
}

fn lock() -> std::sync::MutexGuard<'static, Vec<Held>> {
    HELD.lock().unwrap_or_else(|p| p.into_inner())
}
