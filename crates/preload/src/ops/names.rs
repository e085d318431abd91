//! Calls that change or read names: `unlink`, `rmdir`, `mkdir`, `rename`,
//! `link`, `symlink`, `readlink` (REMOVE, RMDIR, MKDIR, RENAME, LINK,
//! SYMLINK, READLINK). Both names of `rename` and `link` must be on the
//! same mount; otherwise `EXDEV`, as between two local file systems.
//!
//! A symbolic link on NFS among a path's directories may lead to a local
//! directory (a PostgreSQL data directory on NFS whose `pg_wal` is a link
//! to a local disk, made by `initdb --waldir`): the call then goes to libc
//! with the local path ([`Out::Local`], [`OutPair::Local`]).

use dnfs::FileType;

use super::{Out, OutPair};
use crate::clients;
use crate::config;
use crate::fail::{Errno, Res};
use crate::paths::{Last, NfsPath};
use crate::resolve::{self, Place, Resolved, Through};
use crate::shadow::Kind;
use crate::state::State;

/// Longest symbolic link target made on NFS: Linux's, `PATH_MAX` less
/// the NUL (Ganesha stores as much, on both versions).
pub const SYMLINK_TARGET_MAX: usize = 4095;

/// `unlink(2)`. A directory is `EISDIR` (as on Linux). When the last name
/// of a file goes, so does its shadow file.
pub fn unlink(state: &State, path: NfsPath) -> Res<Out<()>> {
    let f = match resolve::resolve(state, path, false)? {
        Resolved::Nfs(f) => f,
        Resolved::Local(p) => return Ok(Out::Local(p)),
    };
    if f.meta.is_dir() {
        return Err(Errno(denied_first(state, &f.path, libc::EISDIR)));
    }
    let claim = if f.meta.file_type == FileType::File {
        crate::silly::claim(state, f.path.mount, &f.handle)
    } else {
        crate::silly::Claim::Free(None)
    };
    let claim = match claim {
        crate::silly::Claim::Busy(guard) => {
            // A process of this host still reads or writes it: renamed
            // aside until the last close (silly.rs).
            let hidden = crate::silly::hide(state, &f.path, f.handle);
            crate::silly::settle(state, f.path.mount, &f.handle, guard);
            hidden?;
            return Ok(Out::Done(()));
        }
        free => free,
    };
    let removed = clients::get(state, f.path.mount)?.remove(&f.path.rest);
    crate::lookups::changed(state);
    removed?;
    if f.meta.nlink <= 1 {
        let kind = if f.meta.file_type == FileType::Symlink {
            Kind::Link
        } else {
            Kind::File
        };
        state
            .shadow
            .forget(&state.config.mounts[f.path.mount], kind, &f.handle);
    }
    // The marker lock, if any, goes after the REMOVE.
    drop(claim);
    Ok(Out::Done(()))
}

/// `rmdir(2)`.
///
/// A last component `.` is `EINVAL` and `..` `ENOTEMPTY`, as on Linux,
/// once the directory they are in is found: folding made them name a
/// directory that must stay.
pub fn rmdir(state: &State, path: NfsPath) -> Res<Out<()>> {
    match path.last {
        Last::Dot => return dot_refused(state, path, libc::EINVAL),
        Last::DotDot => return dot_refused(state, path, libc::ENOTEMPTY),
        Last::Name => {}
    }
    if path.rest == "/" {
        return Err(Errno(libc::EBUSY));
    }
    let asked = path.clone();
    match with_parent_links(state, path, |client, p| client.rmdir(&p.rest)) {
        Err(Errno(e)) if e != libc::ENOENT => Err(Errno(denied_first(state, &asked, e))),
        other => other,
    }
}

/// The errno of an `unlink` or `rmdir` that failed with `errno` (not a
/// directory, not empty, a directory): `EACCES` if the caller may not
/// write or search the directory the name is in, which Linux checks first
/// (the server checks the name's type first).
fn denied_first(state: &State, path: &NfsPath, errno: i32) -> i32 {
    let mut dir = path.clone();
    dir.rest = crate::paths::parent(&path.rest).to_string();
    dir.last = Last::Name;
    match resolve::resolve(state, dir, true) {
        Ok(Resolved::Nfs(d)) if d.meta.is_dir() => {
            let who = super::access::Who::effective(state, d.path.mount);
            if super::access::may(who, &d.meta, libc::W_OK | libc::X_OK) {
                errno
            } else {
                libc::EACCES
            }
        }
        _ => errno,
    }
}

/// `mkdir(2)`: the mode less the umask.
///
/// A last component `.` or `..` names an existing directory or nothing:
/// `EEXIST` once it is found (not a MKDIR of the folded name).
pub fn mkdir(state: &State, path: NfsPath, mode: libc::mode_t) -> Res<Out<()>> {
    if path.last != Last::Name {
        return dot_refused(state, path, libc::EEXIST);
    }
    if path.rest == "/" {
        return Err(Errno(libc::EEXIST));
    }
    let mode = mode & 0o7777 & !config::umask();
    with_parent_links(state, path, |client, p| client.mkdir_mode(&p.rest, mode))
}

/// `rename(2)` within one mount. When a directory on the way of either
/// name is a link, both are followed: to one mount, the RENAME is sent
/// again; both to local paths, libc renames there; otherwise `EXDEV`.
///
/// A last component `.` or `..` on either side is `EBUSY` (Linux), once
/// the directory it is in is found.
pub fn rename(state: &State, from: NfsPath, to: NfsPath) -> Res<OutPair> {
    if from.last != Last::Name {
        dot_refused(state, from, libc::EBUSY)?;
        return Err(Errno(libc::EBUSY));
    }
    if to.last != Last::Name {
        dot_refused(state, to, libc::EBUSY)?;
        return Err(Errno(libc::EBUSY));
    }
    if from.mount != to.mount {
        return Err(Errno(libc::EXDEV));
    }
    if from.rest == "/" || to.rest == "/" {
        return Err(Errno(libc::EBUSY));
    }
    let client = clients::get(state, from.mount)?;
    let hidden = hide_open_target(state, &client, &from, &to)?;
    let renamed = client.rename(&from.rest, &to.rest);
    crate::lookups::changed(state);
    if let (Err(_), Some((handle, name))) = (&renamed, &hidden) {
        crate::silly::unhide(state, &to, handle, name);
    }
    match renamed {
        Err(e) if resolve::through_a_link(&e) => {
            match both_through_links(state, &from, &to, e.errno())? {
                OutPair::Done((from, to)) => {
                    let renamed = clients::get(state, from.mount)?.rename(&from.rest, &to.rest);
                    crate::lookups::changed(state);
                    renamed?;
                    Ok(OutPair::Done(()))
                }
                OutPair::Local(x, y) => Ok(OutPair::Local(x, y)),
            }
        }
        other => Ok(OutPair::Done(other?)),
    }
}

/// Before a RENAME over `to`: a file there that a process of this host
/// holds open is renamed aside first, as `unlink` does (silly.rs); its
/// handle and hidden name are returned, for [`crate::silly::unhide`]
/// should the RENAME fail. Costs a LOOKUP of `to` per `rename`. A
/// directory renamed over that file is `ENOTDIR`, as the server would say
/// had the file not been moved aside.
fn hide_open_target(
    state: &State,
    client: &dnfs::Client,
    from: &NfsPath,
    to: &NfsPath,
) -> Res<Option<(dnfs::Handle, String)>> {
    let Ok((handle, meta)) = client.lookup(&to.rest) else {
        return Ok(None);
    };
    if meta.file_type != FileType::File {
        return Ok(None);
    }
    let guard = match crate::silly::claim(state, to.mount, &handle) {
        crate::silly::Claim::Free(_) => return Ok(None),
        crate::silly::Claim::Busy(guard) => guard,
    };
    match client.lookup(&from.rest) {
        // Nothing to rename: the RENAME fails with the server's answer.
        Err(_) => return Ok(None),
        // Renaming a file onto itself (another name of it) changes nothing.
        Ok((h, _)) if h == handle => return Ok(None),
        // A directory into itself is EINVAL before anything else.
        Ok((_, m)) if m.is_dir() && to.rest.starts_with(&format!("{}/", from.rest)) => {
            return Err(Errno(libc::EINVAL))
        }
        Ok((_, m)) if m.is_dir() => return Err(Errno(libc::ENOTDIR)),
        Ok(_) => {}
    }
    let hidden = crate::silly::hide(state, to, handle);
    crate::silly::settle(state, to.mount, &handle, guard);
    Ok(Some((handle, hidden?)))
}

/// The answer to a call that names `.` or `..` last: `errno`, once the
/// directory it folded to is found (its own errors first: `ENOENT`,
/// `ENOTDIR`, as the kernel's walk gives them).
fn dot_refused<T>(state: &State, path: NfsPath, errno: i32) -> Res<T> {
    match resolve::resolve(state, path, true)? {
        Resolved::Nfs(f) if !f.meta.is_dir() => Err(Errno(libc::ENOTDIR)),
        _ => Err(Errno(errno)),
    }
}

/// Where two names lead, links among their directories followed: both
/// to one mount, or both to local paths; `errno` (the first call's error)
/// when neither has a link to follow, `EXDEV` between a mount and a local
/// path or two mounts.
fn both_through_links(
    state: &State,
    a: &NfsPath,
    b: &NfsPath,
    errno: i32,
) -> Res<OutPair<(NfsPath, NfsPath)>> {
    let pa = resolve::through_parent(state, a)?;
    let pb = resolve::through_parent(state, b)?;
    match (pa, pb) {
        (Place::Nfs(x), Place::Nfs(y)) if x == *a && y == *b => Err(Errno(errno)),
        (Place::Nfs(x), Place::Nfs(y)) if x.mount == y.mount => Ok(OutPair::Done((x, y))),
        (Place::Local(x), Place::Local(y)) => Ok(OutPair::Local(x, y)),
        _ => Err(Errno(libc::EXDEV)),
    }
}

/// `link(2)` within one mount (`follow`: of a link's target,
/// `AT_SYMLINK_FOLLOW`), through links among the directories of both
/// names as [`rename`] does.
pub fn link(state: &State, existing: NfsPath, new: NfsPath, follow: bool) -> Res<OutPair> {
    // Linux's order: the existing name first (ENOENT), then the new one
    // (EEXIST, also for `.` or `..` last), then the directory test (EPERM).
    let existing = match resolve::resolve(state, existing, follow)? {
        Resolved::Nfs(f) => f,
        Resolved::Local(x) => {
            return match resolve::through_parent(state, &new)? {
                Place::Local(y) => Ok(OutPair::Local(x, y)),
                Place::Nfs(_) => Err(Errno(libc::EXDEV)),
            }
        }
    };
    if new.last != Last::Name {
        return dot_refused(state, new, libc::EEXIST);
    }
    if new.rest == "/" {
        return Err(Errno(libc::EEXIST));
    }
    if existing.meta.is_dir() {
        return match resolve::resolve(state, new.clone(), false) {
            Ok(_) => Err(Errno(libc::EEXIST)),
            // The new name's directory must be there (ENOENT, ENOTDIR).
            Err(Errno(libc::ENOENT)) => match resolve::through_parent(state, &new)? {
                Place::Nfs(p) => {
                    let mut dir = p.clone();
                    dir.rest = crate::paths::parent(&p.rest).to_string();
                    match resolve::resolve(state, dir, true)? {
                        Resolved::Nfs(f) if !f.meta.is_dir() => Err(Errno(libc::ENOTDIR)),
                        _ => Err(Errno(libc::EPERM)),
                    }
                }
                Place::Local(_) => Err(Errno(libc::EXDEV)),
            },
            Err(e) => Err(e),
        };
    }
    let target = |new: &NfsPath| -> Res<()> {
        if existing.path.mount != new.mount {
            return Err(Errno(libc::EXDEV));
        }
        let client = clients::get(state, new.mount)?;
        let linked = client.link(&existing.path.rest, &new.rest);
        crate::lookups::changed(state);
        Ok(linked?)
    };
    match target(&new) {
        Err(Errno(e)) if resolve::through_a_link_errno(e) => {
            match resolve::through_parent(state, &new)? {
                Place::Nfs(other) if other != new => target(&other).map(OutPair::Done),
                Place::Nfs(_) => Err(Errno(e)),
                Place::Local(_) => Err(Errno(libc::EXDEV)),
            }
        }
        other => other.map(OutPair::Done),
    }
}

/// `symlink(2)`: a link at `path` whose content is `target`, as given.
pub fn symlink(state: &State, target: &[u8], path: NfsPath) -> Res<Out<()>> {
    if target.is_empty() {
        return Err(Errno(libc::ENOENT));
    }
    // Linux's bound (RFC 1813 leaves it to the implementation): a longer
    // target is ENAMETOOLONG, as Linux says, before any call.
    if target.len() > SYMLINK_TARGET_MAX {
        return Err(Errno(libc::ENAMETOOLONG));
    }
    if path.last != Last::Name {
        return dot_refused(state, path, libc::EEXIST);
    }
    if path.rest == "/" {
        return Err(Errno(libc::EEXIST));
    }
    with_parent_links(state, path, |client, p| client.symlink(target, &p.rest))
}

/// `readlink(2)`: copies at most `buf.len()` bytes, no NUL.
pub fn readlink(state: &State, path: NfsPath, buf: &mut [u8]) -> Res<Out<usize>> {
    if buf.is_empty() {
        return Err(Errno(libc::EINVAL));
    }
    let f = match resolve::resolve(state, path, false)? {
        Resolved::Nfs(f) => f,
        Resolved::Local(p) => return Ok(Out::Local(p)),
    };
    if f.meta.file_type != FileType::Symlink {
        return Err(Errno(libc::EINVAL));
    }
    let target = clients::get(state, f.path.mount)?.readlink(&f.path.rest)?;
    let n = target.len().min(buf.len());
    buf[..n].copy_from_slice(&target[..n]);
    Ok(Out::Done(n))
}

/// Runs a call that creates or removes the last component of `path`,
/// through a link among the directories on the way if there is one (to a
/// local directory: the caller's libc call does it there).
fn with_parent_links(
    state: &State,
    path: NfsPath,
    op: impl Fn(&dnfs::Client, &NfsPath) -> dnfs::Result<()>,
) -> Res<Out<()>> {
    let done = resolve::through_links(state, path, op);
    crate::lookups::changed(state);
    match done? {
        Through::Nfs((), _) => Ok(Out::Done(())),
        Through::Local(p) => Ok(Out::Local(p)),
    }
}
