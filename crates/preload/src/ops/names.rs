//! Calls that change or read names: `unlink`, `rmdir`, `mkdir`, `rename`,
//! `link`, `symlink`, `readlink` (REMOVE, RMDIR, MKDIR, RENAME, LINK,
//! SYMLINK, READLINK). Both names of `rename` and `link` must be on the
//! same mount; otherwise `EXDEV`, as between two local file systems.

use dnfs::FileType;

use super::Out;
use crate::clients;
use crate::config;
use crate::fail::{Errno, Res};
use crate::paths::NfsPath;
use crate::resolve::{self, Resolved};
use crate::shadow::Kind;
use crate::state::State;

/// `unlink(2)`. A directory is `EISDIR` (as on Linux). When the last name
/// of a file goes, so does its shadow file.
pub fn unlink(state: &State, path: NfsPath) -> Res<()> {
    let f = match resolve::resolve(state, path, false)? {
        Resolved::Nfs(f) => f,
        Resolved::Local(_) => return Err(Errno(libc::EXDEV)),
    };
    if f.meta.is_dir() {
        return Err(Errno(libc::EISDIR));
    }
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
    Ok(())
}

/// `rmdir(2)`.
pub fn rmdir(state: &State, path: NfsPath) -> Res<()> {
    if path.rest == "/" {
        return Err(Errno(libc::EBUSY));
    }
    if path.host.ends_with("/.") {
        return Err(Errno(libc::EINVAL));
    }
    with_parent_links(state, path, |client, p| client.rmdir(&p.rest))
}

/// `mkdir(2)`: the mode less the umask.
pub fn mkdir(state: &State, path: NfsPath, mode: libc::mode_t) -> Res<()> {
    if path.rest == "/" {
        return Err(Errno(libc::EEXIST));
    }
    let mode = mode & 0o7777 & !config::umask();
    with_parent_links(state, path, |client, p| client.mkdir_mode(&p.rest, mode))
}

/// `rename(2)` within one mount.
pub fn rename(state: &State, from: NfsPath, to: NfsPath) -> Res<()> {
    if from.mount != to.mount {
        return Err(Errno(libc::EXDEV));
    }
    if from.rest == "/" || to.rest == "/" {
        return Err(Errno(libc::EBUSY));
    }
    let client = clients::get(state, from.mount)?;
    let renamed = client.rename(&from.rest, &to.rest);
    crate::lookups::changed(state);
    Ok(renamed?)
}

/// `link(2)` within one mount (`follow`: of a link's target, `AT_SYMLINK_FOLLOW`).
pub fn link(state: &State, existing: NfsPath, new: NfsPath, follow: bool) -> Res<()> {
    let existing = match resolve::resolve(state, existing, follow)? {
        Resolved::Nfs(f) => f,
        Resolved::Local(_) => return Err(Errno(libc::EXDEV)),
    };
    if existing.path.mount != new.mount {
        return Err(Errno(libc::EXDEV));
    }
    if existing.meta.is_dir() {
        return Err(Errno(libc::EPERM));
    }
    if new.rest == "/" {
        return Err(Errno(libc::EEXIST));
    }
    let client = clients::get(state, new.mount)?;
    let linked = client.link(&existing.path.rest, &new.rest);
    crate::lookups::changed(state);
    Ok(linked?)
}

/// `symlink(2)`: a link at `path` whose content is `target`, as given.
pub fn symlink(state: &State, target: &[u8], path: NfsPath) -> Res<()> {
    if target.is_empty() {
        return Err(Errno(libc::ENOENT));
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
/// through a link among the directories on the way if there is one.
fn with_parent_links(
    state: &State,
    path: NfsPath,
    op: impl Fn(&dnfs::Client, &NfsPath) -> dnfs::Result<()>,
) -> Res<()> {
    let done = resolve::through_links(state, path, op).map(|((), _)| ());
    crate::lookups::changed(state);
    done
}
