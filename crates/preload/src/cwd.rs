//! The current directory, which may be an NFS directory.
//!
//! The kernel cannot hold an NFS directory as a working directory, so the
//! library keeps the host path of the current directory itself, and the
//! kernel's working directory is moved to a *mirror* of it under the
//! shadow directory (`/dev/shm/directnfs/cwd/<host path>`, created empty).
//! That is what carries it across `exec`: a preloaded program that starts
//! in a mirror directory takes the NFS path as its current directory. A
//! program without the library (or a raw system call) sees an empty local
//! directory.
//!
//! The library also tracks local working directories (after every
//! `chdir`/`fchdir`), because a relative path from a local directory above
//! a mount prefix (`/db` above `/db/ora`) leads into NFS.

use std::ffi::CString;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::RwLock;

use libc::{c_char, size_t};

use crate::fail::{Errno, Res};
use crate::paths::{NfsPath, Route};
use crate::real;
use crate::shadow::make_shared_dir;
use crate::state::State;
use crate::warn;

/// Local, and no relative path without `..` reaches a mount prefix.
const FAR: u8 = 0;
/// Local, above (or at the parent of) a mount prefix.
const ABOVE: u8 = 1;
/// An NFS directory.
const NFS: u8 = 2;

static MODE: AtomicU8 = AtomicU8::new(FAR);
/// The kernel's working directory is a mirror directory standing for a
/// local path (a mount prefix's missing ancestor, paths.rs): `getcwd`
/// answers with the path it stands for.
static MIRRORED: AtomicBool = AtomicBool::new(false);
/// The host path of the current directory.
pub static CWD: RwLock<String> = RwLock::new(String::new());

/// True if a relative path may lead to NFS (one atomic load).
#[inline(always)]
pub fn may_reach_nfs() -> bool {
    MODE.load(Ordering::Relaxed) != FAR
}

/// True if the current directory is an NFS directory.
pub fn is_nfs() -> bool {
    MODE.load(Ordering::Relaxed) == NFS
}

/// True if `getcwd` is answered by the library: the current directory is
/// an NFS directory or a mirror standing for a local path.
pub fn answers_getcwd() -> bool {
    is_nfs() || MIRRORED.load(Ordering::Relaxed)
}

/// The host path of the current directory.
pub fn host() -> String {
    CWD.read().unwrap_or_else(|p| p.into_inner()).clone()
}

/// Reads the working directory the process started in.
pub fn init(state: &State) {
    refresh_from_kernel(state);
}

/// After a local `chdir`/`fchdir` (or at start): what the kernel says,
/// with a mirror directory read back as the NFS path it mirrors.
pub fn refresh_from_kernel(state: &State) {
    let mut buf = vec![0u8; libc::PATH_MAX as usize + 1];
    // SAFETY: the buffer is valid for its length.
    let p = unsafe { real::getcwd(buf.as_mut_ptr().cast(), buf.len()) };
    if p.is_null() {
        return;
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    let Ok(kernel) = String::from_utf8(buf[..end].to_vec()) else {
        set(String::new(), FAR);
        return;
    };
    let host = match kernel.strip_prefix(&state.shadow.cwd_root) {
        Some("") => "/".to_string(),
        Some(rest) if rest.starts_with('/') => rest.to_string(),
        _ => kernel.clone(),
    };
    MIRRORED.store(host != kernel, Ordering::Relaxed);
    let mode = match crate::paths::classify_absolute(state, host.as_bytes()) {
        Route::Nfs(_) => NFS,
        _ if above_a_prefix(state, &host) => ABOVE,
        _ => FAR,
    };
    set(host, mode);
}

/// After a `chdir` into an NFS directory (already checked to exist and be
/// a directory).
pub fn enter_nfs(state: &State, dir: &NfsPath) {
    let mirror = format!("{}{}", state.shadow.cwd_root, dir.host);
    if let Err(Errno(e)) = make_mirror(state, &mirror) {
        warn::once("cwd mirror", || {
            format!(
                "cannot create {mirror} ({}); programs started from {} without the \
                 library will not start in it",
                std::io::Error::from_raw_os_error(e),
                dir.host
            )
        });
    }
    MIRRORED.store(false, Ordering::Relaxed);
    set(dir.host.clone(), NFS);
}

/// `getcwd` of an NFS current directory: `None` when it is local.
///
/// # Safety
/// `buf` is NULL or valid for `size` bytes (`getcwd`'s contract).
pub unsafe fn getcwd_nfs(buf: *mut c_char, size: size_t) -> Option<Res<*mut c_char>> {
    if !answers_getcwd() {
        return None;
    }
    let host = host();
    let need = host.len() + 1;
    if buf.is_null() {
        // glibc's extension: allocate (at least `size` bytes if given).
        let len = need.max(size);
        // SAFETY: malloc of a positive size; the caller frees it.
        let p = unsafe { libc::malloc(len) } as *mut c_char;
        if p.is_null() {
            return Some(Err(Errno(libc::ENOMEM)));
        }
        // SAFETY: p holds `len >= need` bytes.
        unsafe { copy_c(&host, p) };
        return Some(Ok(p));
    }
    if size < need {
        return Some(Err(Errno(libc::ERANGE)));
    }
    // SAFETY: per the contract, the buffer holds `size >= need` bytes.
    unsafe { copy_c(&host, buf) };
    Some(Ok(buf))
}

/// Copies `s` and a NUL to `dst`.
///
/// # Safety
/// `dst` is valid for `s.len() + 1` bytes.
pub unsafe fn copy_c(s: &str, dst: *mut c_char) {
    // SAFETY: per the contract.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr(), dst.cast(), s.len());
        *dst.add(s.len()) = 0;
    }
}

fn set(host: String, mode: u8) {
    *CWD.write().unwrap_or_else(|p| p.into_inner()) = host;
    MODE.store(mode, Ordering::Relaxed);
}

fn above_a_prefix(state: &State, dir: &str) -> bool {
    let dir = dir.trim_end_matches('/');
    state.config.mounts.iter().any(|m| {
        m.prefix
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
    })
}

/// Creates the mirror directory (each component mode 1777, as any user
/// may need it) and moves the kernel's working directory there.
fn make_mirror(state: &State, mirror: &str) -> Res<()> {
    make_mirror_dirs(state, mirror)?;
    let c = CString::new(mirror).map_err(|_| Errno(libc::EINVAL))?;
    // SAFETY: NUL-terminated path.
    if unsafe { real::chdir(c.as_ptr()) } != 0 {
        return Err(Errno(crate::fail::errno()));
    }
    Ok(())
}

/// Creates a mirror directory and those above it (each mode 1777).
pub fn make_mirror_dirs(state: &State, mirror: &str) -> Res<()> {
    let mut at = state.shadow.root.len();
    make_shared_dir(&state.shadow.root)?;
    while at < mirror.len() {
        let next = mirror[at + 1..]
            .find('/')
            .map_or(mirror.len(), |i| at + 1 + i);
        make_shared_dir(&mirror[..next])?;
        at = next;
    }
    Ok(())
}
