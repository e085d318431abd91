//! Local symbolic links into a mount: `initdb --waldir=/db/wal` makes
//! `pg_wal` in a local data directory a link to an NFS directory, and
//! `CREATE TABLESPACE ... LOCATION '/db/ts'` makes `pg_tblspc/OID` one.
//! The kernel follows such a link to a path it cannot reach (the mount
//! prefix is not a kernel mount) and answers `ENOENT`.
//!
//! Routing looks at the path's text only (paths.rs): finding links on the
//! way would cost every local call an `lstat` per component. So the local
//! call runs first, and only when it fails with `ENOENT` is the path
//! walked for a link that leads into a mount ([`through_link`]): the
//! deepest directory of the path the kernel can open, and the name after
//! it, which is either missing (the `ENOENT` was right) or a link whose
//! target, with the rest of the path, is routed again. A local call that
//! succeeds costs nothing more; a local `ENOENT` costs two or three more
//! system calls per missing level.
//!
//! A link whose target exists locally too (a local directory at the mount
//! prefix's path, with the same names) is followed by the kernel, as
//! before.

use std::ffi::{CStr, CString};

use libc::{c_char, c_int};

use dnfs::config::normalize_bytes as normalize;

use crate::fail::{errno, set_errno, FailValue};
use crate::paths::{classify_absolute, descriptor_target, join, route, Route};
use crate::real;
use crate::state::{self, State};

/// Links followed before giving up with `ELOOP` (Linux's limit).
const MAX_LINKS: usize = 40;

/// Routes `path` (relative to `dirfd`); a local path's call is made
/// (`local`) and its result returned as `Ok`, unless it failed with
/// `ENOENT` because a local link on the way leads into a mount: then the
/// route through the link, as for an NFS path.
///
/// # Safety
/// `path` is NULL or a NUL-terminated string.
#[inline]
pub unsafe fn local_first<T: FailValue + PartialEq>(
    dirfd: c_int,
    path: *const c_char,
    local: impl FnOnce() -> T,
) -> Result<T, Route> {
    // SAFETY: per the contract.
    match unsafe { route(dirfd, path) } {
        Route::Local => {
            let v = local();
            if v != T::fail_value() || errno() != libc::ENOENT {
                return Ok(v);
            }
            // SAFETY: per the contract (not NULL: route gave Local for
            // NULL, and the call failed with ENOENT, not EFAULT).
            match unsafe { after_enoent(dirfd, path) } {
                Some(r) => Err(r),
                None => {
                    set_errno(libc::ENOENT);
                    Ok(v)
                }
            }
        }
        r => Err(r),
    }
}

/// The route through a local link, for a path whose local call failed
/// with `ENOENT`.
///
/// # Safety
/// `path` is NULL or a NUL-terminated string.
pub unsafe fn after_enoent(dirfd: c_int, path: *const c_char) -> Option<Route> {
    let state = state::get()?;
    if path.is_null() {
        return None;
    }
    // SAFETY: per the contract.
    let bytes = unsafe { CStr::from_ptr(path) }.to_bytes();
    through_link(state, dirfd, bytes)
}

/// Walks `path` (relative to `dirfd`) for a local link that leads into a
/// mount: the route of the path through it, `Bad(ELOOP)` for too many
/// links, or None (no such link: the path is simply missing).
pub fn through_link(state: &State, dirfd: c_int, path: &[u8]) -> Option<Route> {
    let mut dirfd = dirfd;
    let mut path = path.to_vec();
    for _ in 0..MAX_LINKS {
        let (dir, target, rest) = dangling_link(dirfd, &path)?;
        let mut next = if target.first() == Some(&b'/') {
            target
        } else {
            join(&dir, &target)
        };
        if !rest.is_empty() {
            next = join(&next, &rest);
        }
        match classify_absolute(state, &next) {
            Route::Local | Route::Redirect(_) => {
                // A local link to another local path: walk that one.
                path = normalize(&next);
                dirfd = libc::AT_FDCWD;
            }
            r => return Some(r),
        }
    }
    Some(Route::Bad(libc::ELOOP))
}

/// The link the kernel stopped at: the physical path of the directory
/// holding it, its target, and what followed it in `path`; None if the
/// name it stopped at is missing (or the directory cannot be opened for
/// another reason than a missing name).
fn dangling_link(dirfd: c_int, path: &[u8]) -> Option<(Vec<u8>, Vec<u8>, Vec<u8>)> {
    let absolute = path.first() == Some(&b'/');
    let names: Vec<&[u8]> = path
        .split(|&b| b == b'/')
        .filter(|c| !c.is_empty())
        .collect();
    for i in (0..names.len()).rev() {
        let dir = match (absolute, i) {
            (true, _) => [b"/".as_slice(), &names[..i].join(&b'/')].concat(),
            (false, 0) => b".".to_vec(),
            (false, _) => names[..i].join(&b'/'),
        };
        let fd = open_dir(dirfd, &dir)?;
        let Some(fd) = fd else {
            continue; // this directory is missing too: look one level up
        };
        let target = read_link(fd, names[i]);
        let physical = target.as_ref().and_then(|_| descriptor_target(fd));
        // SAFETY: our own descriptor.
        unsafe { real::close(fd) };
        return Some((physical?, target?, names[i + 1..].join(&b'/')));
    }
    None
}

/// `Some(Some(fd))` for an `O_PATH` descriptor of `dir`, `Some(None)` if
/// it is missing (or not a directory), None for any other failure.
fn open_dir(dirfd: c_int, dir: &[u8]) -> Option<Option<c_int>> {
    let c = CString::new(dir).ok()?;
    // SAFETY: NUL-terminated path; a descriptor of our own, closed by the caller.
    let fd = unsafe {
        real::openat(
            dirfd,
            c.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            0,
        )
    };
    if fd >= 0 {
        return Some(Some(fd));
    }
    matches!(errno(), libc::ENOENT | libc::ENOTDIR).then_some(None)
}

/// The target of the link `name` in the directory `fd`, if it is one.
fn read_link(fd: c_int, name: &[u8]) -> Option<Vec<u8>> {
    let c = CString::new(name).ok()?;
    let mut buf = vec![0u8; libc::PATH_MAX as usize];
    // SAFETY: NUL-terminated name; the buffer is ours and its length given.
    let n = unsafe { real::readlinkat(fd, c.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if n <= 0 || n as usize >= buf.len() {
        return None;
    }
    buf.truncate(n as usize);
    Some(buf)
}

/// What [`local_pair_first`] found.
#[derive(Debug)]
pub enum Pair {
    /// The local call's result.
    Done(c_int),
    /// The two routes, to serve.
    Routes(Route, Route),
}

/// [`local_first`] for a call on two paths (`rename`, `link`): the local
/// call's result when both route local, unless it failed with `ENOENT`
/// and a local link on either path leads into a mount; otherwise both
/// routes (a path with no such link stays `Local`).
///
/// # Safety
/// `a` and `b` are NULL or NUL-terminated strings.
pub unsafe fn local_pair_first(
    (dir_a, a): (c_int, *const c_char),
    (dir_b, b): (c_int, *const c_char),
    local: impl FnOnce() -> c_int,
) -> Pair {
    // SAFETY: per the contract.
    let (ra, rb) = unsafe { (route(dir_a, a), route(dir_b, b)) };
    if ra != Route::Local || rb != Route::Local {
        return Pair::Routes(ra, rb);
    }
    let v = local();
    if v != -1 || errno() != libc::ENOENT {
        return Pair::Done(v);
    }
    // SAFETY: per the contract.
    let (la, lb) = unsafe { (after_enoent(dir_a, a), after_enoent(dir_b, b)) };
    if la.is_none() && lb.is_none() {
        set_errno(libc::ENOENT);
        return Pair::Done(v);
    }
    Pair::Routes(la.unwrap_or(Route::Local), lb.unwrap_or(Route::Local))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nfs_rest(r: Option<Route>) -> Option<String> {
        match r {
            Some(Route::Nfs(n)) => Some(n.rest),
            _ => None,
        }
    }

    #[test]
    fn a_local_link_leads_into_a_mount_and_a_missing_name_stays_missing() {
        let st = State::for_tests(&["/dnfs-links-test/db"]);
        let dir = std::env::temp_dir().join(format!("dnfs-links-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let link = |name: &str, target: &str| {
            std::os::unix::fs::symlink(target, dir.join(name)).unwrap();
        };
        link("to-db", "/dnfs-links-test/db/x");
        link("chain", &dir.join("to-db").to_string_lossy());
        link("relative", "to-db/y");
        link("to-missing", &dir.join("missing").to_string_lossy());
        let d = dir.to_string_lossy().into_owned();
        let walk = |p: &str| through_link(&st, libc::AT_FDCWD, p.as_bytes());

        assert_eq!(
            nfs_rest(walk(&format!("{d}/to-db/a/b"))),
            Some("/x/a/b".into())
        );
        assert_eq!(nfs_rest(walk(&format!("{d}/to-db"))), Some("/x".into()));
        assert_eq!(nfs_rest(walk(&format!("{d}/chain/f"))), Some("/x/f".into()));
        assert_eq!(
            nfs_rest(walk(&format!("{d}/relative/f"))),
            Some("/x/y/f".into())
        );
        assert_eq!(walk(&format!("{d}/nothing/f")), None);
        assert_eq!(walk(&format!("{d}/nothing")), None);
        assert_eq!(walk(&format!("{d}/to-missing/f")), None);

        // Relative to a directory descriptor.
        let c = std::ffi::CString::new(d.clone()).unwrap();
        // SAFETY: a C string; the descriptor is closed below.
        let fd = unsafe { libc::open(c.as_ptr(), libc::O_PATH | libc::O_DIRECTORY) };
        assert!(fd >= 0);
        assert_eq!(
            nfs_rest(through_link(&st, fd, b"chain/g")),
            Some("/x/g".into())
        );
        assert_eq!(through_link(&st, fd, b"nothing/g"), None);
        // SAFETY: ours.
        unsafe { libc::close(fd) };
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
