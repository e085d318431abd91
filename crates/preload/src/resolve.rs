//! From an NFS path to the object it names, following symbolic links on
//! NFS as the kernel would: the last component when the call follows links
//! (`stat`, `open` without `O_NOFOLLOW`), and any directory on the way.
//!
//! The server resolves one component per LOOKUP and never follows a link,
//! so links are found as they come: a link at the end by its attributes, a
//! link in the middle by the error its LOOKUP gets — `ENOTDIR` on NFSv3,
//! NFS4ERR_SYMLINK (`ELOOP`) on NFSv4.1 — and only then are the components
//! walked one by one. A link may lead anywhere, another mount
//! or a local path included: [`Resolved::Local`] says so and the caller
//! passes the call to libc with that path.

use std::ffi::CString;

use dnfs::{FileType, Handle, Metadata};

use crate::clients;
use crate::fail::{Errno, Res};
use crate::paths::{self, NfsPath, Route};
use crate::state::State;

/// Most links followed for one path (Linux's limit).
pub const MAX_LINKS: usize = 40;

/// An NFS object found.
#[derive(Debug, Clone)]
pub struct Found {
    /// Its path, links resolved.
    pub path: NfsPath,
    /// Its handle.
    pub handle: Handle,
    /// Its attributes, fresh from the server.
    pub meta: Metadata,
}

/// What a path resolved to.
// Returned once per call and matched at once: boxing `Found` would only
// add an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum Resolved {
    /// An NFS object.
    Nfs(Found),
    /// A link led to a local path.
    Local(CString),
}

/// Looks `path` up; `follow` follows a link at the end.
pub fn resolve(state: &State, path: NfsPath, follow: bool) -> Res<Resolved> {
    let mut path = path;
    let mut links = 0;
    loop {
        let client = clients::get(state, path.mount)?;
        match client.lookup(&path.rest) {
            Ok((handle, meta)) if meta.file_type == FileType::Symlink && follow => {
                let target = client.readlink(&path.rest)?;
                links += 1;
                match next_hop(state, &path.host, &target, "", links)? {
                    (Route::Nfs(next), _) => {
                        check_target_via(state, &path, &target, &next)?;
                        path = next
                    }
                    (Route::Local | Route::Redirect(_), full) => {
                        return Ok(Resolved::Local(local(full)?))
                    }
                    (Route::Bad(e), _) => return Err(Errno(e)),
                }
                let _ = handle;
            }
            Ok((handle, meta)) => {
                if path.trailing_slash && !meta.is_dir() && meta.file_type != FileType::Symlink {
                    return Err(Errno(libc::ENOTDIR));
                }
                return Ok(Resolved::Nfs(Found { path, handle, meta }));
            }
            Err(e) if through_a_link(&e) => {
                links += 1;
                match through_middle_link(state, &path, links, e.errno())? {
                    Place::Nfs(next) => path = next,
                    Place::Local(p) => return Ok(Resolved::Local(p)),
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Where `open(O_CREAT)` of `path`, which [`resolve`] did not find, makes
/// its file: `path` itself, or, when `path` is a link whose target does not
/// exist, that target (links leading on to links followed), as the kernel
/// does. Without this, a CREATE of the link's own name would find the link
/// and the descriptor would name it.
pub fn create_place(state: &State, path: NfsPath) -> Res<Place> {
    let mut path = path;
    let mut links = 0;
    loop {
        let client = clients::get(state, path.mount)?;
        match client.lookup(&path.rest) {
            Ok((_, meta)) if meta.file_type == FileType::Symlink => {
                let target = client.readlink(&path.rest)?;
                links += 1;
                match next_hop(state, &path.host, &target, "", links)? {
                    // The target's `missing/..` must exist, as for a path
                    // given to the call: a file is never made through it.
                    (Route::Nfs(next), _) => {
                        check_target_via(state, &path, &target, &next)?;
                        path = next
                    }
                    (Route::Local | Route::Redirect(_), full) => {
                        return Ok(Place::Local(local(full)?))
                    }
                    (Route::Bad(e), _) => return Err(Errno(e)),
                }
            }
            _ => return Ok(Place::Nfs(path)),
        }
    }
}

/// Checks the directories a link's `target` names before its `..` or `.`
/// (`missing/..`), as for a path given to a call: folding the target would
/// skip them. `link` is where the link is, `next` the folded target.
fn check_target_via(state: &State, link: &NfsPath, target: &[u8], next: &NfsPath) -> Res<()> {
    let written = if target.first() == Some(&b'/') {
        target.to_vec()
    } else {
        paths::join(paths::parent(&link.host).as_bytes(), target)
    };
    let via = paths::dirs_before_dots(&written);
    if via.is_empty() {
        return Ok(());
    }
    let mut probe = next.clone();
    probe.via = via;
    check_via(state, &probe)
}

/// The error a server gives a path with a link among its directories:
/// NFSv3's LOOKUP in a link is `ENOTDIR`, NFSv4.1's NFS4ERR_SYMLINK is
/// `ELOOP` (a server never follows links, so it is not a loop).
pub fn through_a_link(e: &dnfs::Error) -> bool {
    through_a_link_errno(e.errno())
}

/// [`through_a_link`] for the errno of a call that failed.
pub fn through_a_link_errno(errno: i32) -> bool {
    matches!(errno, libc::ENOTDIR | libc::ELOOP)
}

/// What [`through_links`] did.
#[derive(Debug)]
pub enum Through<T> {
    /// `op`'s result, and the NFS path it ran on.
    Nfs(T, NfsPath),
    /// A link among the directories led to this local path: the caller
    /// makes its libc call there.
    Local(CString),
}

/// Runs `op`, a call that creates or removes `path`'s last component in
/// its directory; when a directory on the way is a link (the server says
/// so: `through_a_link`), runs it again through the link, or gives the
/// local path the link led to.
pub fn through_links<T>(
    state: &State,
    path: NfsPath,
    op: impl Fn(&dnfs::Client, &NfsPath) -> dnfs::Result<T>,
) -> Res<Through<T>> {
    let mut path = path;
    let mut links = 0;
    loop {
        let client = clients::get(state, path.mount)?;
        match op(&client, &path) {
            Ok(v) => return Ok(Through::Nfs(v, path)),
            Err(e) if through_a_link(&e) => {
                links += 1;
                match through_middle_link(state, &path, links, e.errno())? {
                    Place::Nfs(next) => path = next,
                    Place::Local(p) => return Ok(Through::Local(p)),
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Where a path leads once the links among its directories are followed.
#[derive(Debug)]
pub enum Place {
    /// An NFS path.
    Nfs(NfsPath),
    /// A local path: the caller makes its libc call there.
    Local(CString),
}

/// Where `path`'s last component is, its directory's links followed (the
/// last component itself is not: `rename` and `link` act on a link, not on
/// what it names). For a call that failed with [`through_a_link`].
pub fn through_parent(state: &State, path: &NfsPath) -> Res<Place> {
    let Some(cut) = path.rest.trim_end_matches('/').rfind('/') else {
        return Ok(Place::Nfs(path.clone()));
    };
    if cut == 0 {
        // In the export's root, which is no link.
        return Ok(Place::Nfs(path.clone()));
    }
    let name = path.rest[cut + 1..].trim_end_matches('/');
    let dir = NfsPath {
        mount: path.mount,
        host: paths::parent(&path.host).to_string(),
        rest: path.rest[..cut].to_string(),
        trailing_slash: false,
        last: paths::Last::Name,
        via: Vec::new(),
    };
    match resolve(state, dir, true)? {
        Resolved::Nfs(f) if !f.meta.is_dir() => Err(Errno(libc::ENOTDIR)),
        Resolved::Nfs(f) => Ok(Place::Nfs(NfsPath {
            mount: f.path.mount,
            host: format!("{}/{name}", f.path.host.trim_end_matches('/')),
            rest: format!("{}/{name}", f.path.rest.trim_end_matches('/')),
            trailing_slash: path.trailing_slash,
            last: path.last,
            via: Vec::new(),
        })),
        Resolved::Local(dir) => {
            let mut full = dir.into_bytes();
            full.push(b'/');
            full.extend_from_slice(name.as_bytes());
            local(full).map(Place::Local)
        }
    }
}

/// `path` with the first link among its directories expanded, after the
/// server said `errno` (see [`through_a_link`]): the error stands when
/// there is none. A link to a local directory (a PostgreSQL data directory
/// on NFS whose `pg_wal` is a local disk's) leads to the local path.
fn through_middle_link(state: &State, path: &NfsPath, links: usize, errno: i32) -> Res<Place> {
    match expand_middle(state, path, links)? {
        Some((Route::Nfs(next), _)) => Ok(Place::Nfs(next)),
        Some((Route::Local | Route::Redirect(_), full)) => local(full).map(Place::Local),
        Some((Route::Bad(e), _)) => Err(Errno(e)),
        None => Err(Errno(errno)),
    }
}

/// Resolves the first link among the directories on the way to `path`:
/// the route of the path through it, and that path.
fn expand_middle(state: &State, path: &NfsPath, links: usize) -> Res<Option<(Route, Vec<u8>)>> {
    let client = clients::get(state, path.mount)?;
    let prefix = &state.config.mounts[path.mount].prefix;
    let comps: Vec<&str> = path.rest.split('/').filter(|c| !c.is_empty()).collect();
    for i in 1..comps.len() {
        let sub = format!("/{}", comps[..i].join("/"));
        let Ok((_, meta)) = client.lookup(&sub) else {
            return Ok(None);
        };
        match meta.file_type {
            FileType::Dir => continue,
            FileType::Symlink => {
                let target = client.readlink(&sub)?;
                let host = format!("{prefix}{sub}");
                let remaining = comps[i..].join("/");
                return next_hop(state, &host, &target, &remaining, links).map(Some);
            }
            _ => return Ok(None),
        }
    }
    Ok(None)
}

/// Where a link at `link_host` with `target` leads, with `remaining`
/// components after it: its route, and the folded path.
fn next_hop(
    state: &State,
    link_host: &str,
    target: &[u8],
    remaining: &str,
    links: usize,
) -> Res<(Route, Vec<u8>)> {
    if links > MAX_LINKS {
        return Err(Errno(libc::ELOOP));
    }
    let full = hop(link_host, target, remaining);
    Ok((paths::classify_absolute(state, &full), full))
}

/// The path a link at `link_host` with `target` names, with `remaining`
/// components after it, folded.
fn hop(link_host: &str, target: &[u8], remaining: &str) -> Vec<u8> {
    let mut next = if target.first() == Some(&b'/') {
        target.to_vec()
    } else {
        paths::join(paths::parent(link_host).as_bytes(), target)
    };
    if !remaining.is_empty() {
        next = paths::join(&next, remaining.as_bytes());
    }
    dnfs::config::normalize_bytes(&next)
}

/// A local path a link led to, for libc.
fn local(full: Vec<u8>) -> Res<CString> {
    CString::new(full).map_err(|_| Errno(libc::EINVAL))
}

/// Checks the directories a path named before each of its `..` or `.`
/// (see [`NfsPath::via`]): each must exist, be a directory and be
/// searchable by the caller, as the kernel finds when it walks through
/// them. Lexical folding would skip them: `rmdir("e/missing/..")` would
/// remove `e`, and `d/.` would name a directory the caller may not search.
pub fn check_via(state: &State, path: &NfsPath) -> Res<()> {
    for dir in &path.via {
        match paths::classify_absolute(state, dir) {
            Route::Nfs(p) => match resolve(state, p, true)? {
                Resolved::Nfs(f) if f.meta.is_dir() => {
                    let who = crate::ops::access::Who::effective(state, f.path.mount);
                    if !crate::ops::access::may(who, &f.meta, libc::X_OK) {
                        return Err(Errno(libc::EACCES));
                    }
                }
                Resolved::Nfs(_) => return Err(Errno(libc::ENOTDIR)),
                Resolved::Local(p) => local_dir(&p)?,
            },
            Route::Redirect(p) => local_dir(&p)?,
            Route::Local => local_dir(&local(dir.clone())?)?,
            Route::Bad(e) => return Err(Errno(e)),
        }
    }
    Ok(())
}

/// A local path names a directory (`ENOENT`, `ENOTDIR` otherwise).
fn local_dir(path: &std::ffi::CStr) -> Res<()> {
    // SAFETY: a zeroed `stat` is a valid out-buffer.
    let mut st: crate::real::Stat = unsafe { std::mem::zeroed() };
    // SAFETY: a C string and a buffer of the right type.
    if unsafe { crate::real::stat(path.as_ptr(), &mut st) } != 0 {
        return Err(Errno(crate::fail::errno()));
    }
    if st.st_mode & libc::S_IFMT != libc::S_IFDIR {
        return Err(Errno(libc::ENOTDIR));
    }
    Ok(())
}
