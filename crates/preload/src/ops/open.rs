//! `open` of an NFS path: look the name up on the server (or take what
//! another process of the host looked up while no name changed on the
//! host: lookups.rs), follow links, create (GUARDED, or EXCLUSIVE for
//! `O_EXCL`), truncate, check permissions, then give the program the
//! descriptor of the file's shadow file (shadow.rs).

use std::sync::Arc;

use dnfs::{FileType, Handle, OpenOptions};
use libc::{c_int, mode_t};

use super::access::{may, wanted_by_open, Who};
use super::Out;
use crate::clients;
use crate::config;
use crate::fail::{Errno, Res};
use crate::fdtable::{self, Open};
use crate::paths::NfsPath;
use crate::resolve::{self, Resolved, Through};
use crate::shadow::Kind;
use crate::state::State;
use crate::warn;

/// Opens `path` as `open(2)` does with `flags` and `mode`; returns the new
/// descriptor.
pub fn open(state: &State, path: NfsPath, flags: c_int, mode: mode_t) -> Res<Out<c_int>> {
    open_tries(state, path, flags, mode, 3)
}

/// [`open`], again (at most `tries` times in all) while the file found
/// was removed by another process of the host before this one took its
/// open marker lock (silly.rs): the name is then looked up anew.
fn open_tries(
    state: &State,
    path: NfsPath,
    flags: c_int,
    mode: mode_t,
    tries: u32,
) -> Res<Out<c_int>> {
    // Names changed on the host since this (lookups.rs) are the only way
    // the file found can be gone once its marker lock is held.
    let names_before = crate::lookups::generation(state);
    let again = path.clone();
    if flags & libc::O_TMPFILE == libc::O_TMPFILE {
        warn::once("O_TMPFILE", || {
            format!(
                "open({}, O_TMPFILE): unnamed temporary files cannot be made on NFS (EOPNOTSUPP)",
                path.host
            )
        });
        return Err(Errno(libc::EOPNOTSUPP));
    }
    if flags & libc::O_ACCMODE == libc::O_ACCMODE && flags & libc::O_PATH == 0 {
        return Err(Errno(libc::EINVAL));
    }
    let create = flags & libc::O_CREAT != 0 && flags & libc::O_PATH == 0;
    let excl = create && flags & libc::O_EXCL != 0;
    let follow = flags & libc::O_NOFOLLOW == 0 && !excl;
    // The board of names (lookups.rs) may answer, except where what the
    // open does depends on the file's size or absence.
    let looked_up = if flags & (libc::O_TRUNC | libc::O_EXCL) == 0 {
        crate::lookups::resolve_for_open(state, path.clone(), follow)
    } else {
        resolve::resolve(state, path.clone(), follow)
    };
    let found = match looked_up {
        Ok(Resolved::Local(p)) => return Ok(Out::Local(p)),
        Ok(Resolved::Nfs(f)) => Some(f),
        // `x/.` or `x/..` names a directory, never a file to make.
        Err(Errno(libc::ENOENT)) if create && path.last == crate::paths::Last::Name => None,
        Err(e) => return Err(e),
    };
    let existed = found.is_some();
    let (mount, handle, kind, file, where_) = match found {
        Some(f) => {
            if excl {
                return Err(Errno(libc::EEXIST));
            }
            let kind = kind_for_open(f.meta.file_type, flags)?;
            // O_TRUNC truncates a regular file whatever the access mode
            // (Linux: `O_RDONLY | O_TRUNC` too), and needs write
            // permission for it.
            let truncate =
                flags & libc::O_TRUNC != 0 && flags & libc::O_PATH == 0 && kind == Kind::File;
            if flags & libc::O_PATH == 0 {
                let who = Who::effective(state, f.path.mount);
                let want = wanted_by_open(flags) | if truncate { libc::W_OK } else { 0 };
                if !may(who, &f.meta, want) {
                    return Err(Errno(libc::EACCES));
                }
            }
            let mut file = None;
            if truncate && f.meta.size > 0 {
                let client = clients::get(state, f.path.mount)?;
                let opened = client.open_handle(&f.handle, &f.path.rest);
                let done = opened.set_len(0);
                crate::sizes::changed(state, &f.handle);
                done?;
                file = Some(opened);
            }
            (f.path.mount, f.handle, kind, file, f.path)
        }
        None => {
            if flags & libc::O_DIRECTORY != 0 {
                return Err(Errno(libc::EINVAL));
            }
            if path.trailing_slash {
                return Err(Errno(libc::EISDIR));
            }
            // A link whose target is missing: the target is made.
            let path = if follow {
                match resolve::create_place(state, path)? {
                    resolve::Place::Nfs(p) => p,
                    resolve::Place::Local(p) => return Ok(Out::Local(p)),
                }
            } else {
                path
            };
            match create_file(state, path, excl, mode)? {
                Through::Nfs(file, where_) => {
                    (where_.mount, file.handle(), Kind::File, Some(file), where_)
                }
                Through::Local(p) => return Ok(Out::Local(p)),
            }
        }
    };
    let fd = state
        .shadow
        .open(&state.config.mounts[mount], kind, &handle, flags)?;
    let rest = where_.rest.clone();
    install(fd, mount, handle, Some(where_), kind, flags, file);
    if existed
        && kind == Kind::File
        && tries > 1
        && names_before.is_some()
        && crate::lookups::generation(state) != names_before
    {
        let client = clients::get(state, mount)?;
        if let Err(e) = client.metadata_of(&handle, &rest) {
            if e.errno() == libc::ESTALE {
                // Removed between the LOOKUP and the marker lock: that
                // remover saw no holder. Undone, and looked up again.
                if let Some(o) = fdtable::remove(fd) {
                    // SAFETY: the descriptor this call just opened.
                    unsafe { crate::real::close(fd) };
                    crate::silly::closed_all(&[o]);
                }
                return open_tries(state, again, flags, mode, tries - 1);
            }
        }
    }
    Ok(Out::Done(fd))
}

/// Records a new NFS descriptor (and gives the standard streams a stdio
/// stream that can reach NFS when it is 0, 1 or 2).
pub fn install(
    fd: c_int,
    mount: usize,
    handle: Handle,
    path: Option<NfsPath>,
    kind: Kind,
    flags: c_int,
    file: Option<dnfs::File>,
) {
    fdtable::insert(
        fd,
        Arc::new(Open::new(mount, handle, path, kind, flags, file)),
    );
    if fd <= 2 {
        crate::ops::stdio::rewire_standard_stream(fd);
    }
    crate::ops::unsupported::opened_nfs();
}

/// The kind of descriptor an existing object gives, or the error `open`
/// returns for it.
fn kind_for_open(t: FileType, flags: c_int) -> Res<Kind> {
    let path_only = flags & libc::O_PATH != 0;
    match t {
        FileType::Dir => {
            let write = flags & libc::O_ACCMODE != libc::O_RDONLY || flags & libc::O_CREAT != 0;
            if write && !path_only {
                return Err(Errno(libc::EISDIR));
            }
            Ok(Kind::Dir)
        }
        FileType::Symlink if path_only => Ok(Kind::Link),
        // Not followed: O_NOFOLLOW on a link.
        FileType::Symlink => Err(Errno(libc::ELOOP)),
        _ if flags & libc::O_DIRECTORY != 0 => Err(Errno(libc::ENOTDIR)),
        _ => Ok(Kind::File),
    }
}

/// Creates a regular file (GUARDED; EXCLUSIVE with `excl`, safe to resend),
/// through a link among the directories on the way if there is one (to a
/// local directory: the caller opens the local path).
fn create_file(state: &State, path: NfsPath, excl: bool, mode: mode_t) -> Res<Through<dnfs::File>> {
    let mode = mode & 0o7777 & !config::umask();
    let opts = OpenOptions {
        create: true,
        create_new: excl,
        truncate: false,
        mode: Some(mode),
    };
    let made = resolve::through_links(state, path, |client, p| client.open_with(&p.rest, opts));
    crate::lookups::changed(state);
    made
}
