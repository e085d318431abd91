//! The server side of locks on NFSv4.1 mounts (locks.rs decides when):
//! byte-range LOCK, LOCKU and LOCKT through the client's
//! [`File::lock`](dnfs::File::lock) family.
//!
//! Lock owners follow POSIX: `fcntl` record locks belong to the process
//! and any `close` of the file by the process releases them, so each
//! process has one open file per NFS file for them ([`OWNERS`], dropped —
//! its locks released — at the first `close` of a descriptor of that
//! file); open file description locks (`F_OFD_*`) and `flock` belong to the
//! description, so they are taken through the description's own open file
//! and go with its last descriptor. As with the kernel's NFS client,
//! `flock` is a lock of the whole file on the server, so it conflicts with
//! `fcntl` locks of other processes (and of the same process) there.
//!
//! A process that dies without closing keeps its NFS locks until the
//! server's lease for its client expires (its local locks go at once).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use dnfs::config::NfsVersion;
use dnfs::{File, Handle, LockConflict};
use libc::{c_int, c_short};

use crate::clients;
use crate::fail::{Errno, Res};
use crate::fdtable::Open;
use crate::shadow::Kind as ObjectKind;
use crate::state::{self, State};

/// Whose lock it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `fcntl` F_SETLK/F_SETLKW/F_GETLK: the process's.
    Process,
    /// `F_OFD_*` and `flock`: the open file description's.
    Description,
}

pub type Owners = HashMap<(usize, Handle), File>;

/// The process's record-lock owner per NFS file (mount, handle).
pub static OWNERS: Mutex<Option<Owners>> = Mutex::new(None);

fn owners() -> MutexGuard<'static, Option<Owners>> {
    OWNERS.lock().unwrap_or_else(|p| p.into_inner())
}

/// The server side of one lock call.
#[derive(Debug)]
pub struct Nfs {
    state: &'static State,
}

/// `Some` when `open` is a regular file of an NFSv4.1 mount.
pub fn on_v41(open: &Open) -> Res<Option<Nfs>> {
    let Some(state) = state::get() else {
        return Ok(None);
    };
    let v41 = state
        .config
        .mounts
        .get(open.mount)
        .is_some_and(|m| m.target.options.nfs_version == NfsVersion::V41);
    Ok((v41 && open.kind == ObjectKind::File).then_some(Nfs { state }))
}

impl Nfs {
    /// The range arithmetic of `state` (`range`), for NFSv3 locks too.
    pub fn of(state: &'static State) -> Nfs {
        Nfs { state }
    }

    /// The lock owner's open file.
    fn owner(&self, open: &Open, kind: Kind) -> Res<File> {
        match kind {
            Kind::Description => open.file(self.state).cloned(),
            Kind::Process => {
                let key = (open.mount, open.handle);
                if let Some(f) = owners().as_ref().and_then(|t| t.get(&key)) {
                    return Ok(f.clone());
                }
                let client = clients::get(self.state, open.mount)?;
                let f = client.open_handle(&open.handle, &open.label());
                let mut t = owners();
                Ok(t.get_or_insert_with(HashMap::new)
                    .entry(key)
                    .or_insert(f)
                    .clone())
            }
        }
    }

    /// `struct flock`'s range as (first byte, length; 0: to the end).
    pub fn range(&self, fd: c_int, open: &Open, fl: &libc::flock) -> Res<(u64, u64)> {
        let base: i64 = match c_int::from(fl.l_whence) {
            libc::SEEK_SET => 0,
            libc::SEEK_CUR => {
                // SAFETY: the shadow descriptor keeps the NFS offset.
                let at = unsafe { crate::real::lseek(fd, 0, libc::SEEK_CUR) };
                if at < 0 {
                    return Err(Errno(crate::fail::errno()));
                }
                at
            }
            libc::SEEK_END => {
                let size = open.file(self.state)?.metadata()?.size;
                i64::try_from(size).map_err(|_| Errno(libc::EOVERFLOW))?
            }
            _ => return Err(Errno(libc::EINVAL)),
        };
        let start = base.checked_add(fl.l_start).ok_or(Errno(libc::EOVERFLOW))?;
        let (start, len) = if fl.l_len < 0 {
            (start + fl.l_len, -fl.l_len)
        } else {
            (start, fl.l_len)
        };
        if start < 0 {
            return Err(Errno(libc::EINVAL));
        }
        Ok((start as u64, len as u64))
    }

    /// LOCKT: a lock of another owner that conflicts with `l_type`.
    pub fn test(
        &self,
        open: &Open,
        kind: Kind,
        start: u64,
        len: u64,
        l_type: c_short,
    ) -> Res<Option<LockConflict>> {
        let exclusive = l_type == libc::F_WRLCK as c_short;
        Ok(self.owner(open, kind)?.test_lock(start, len, exclusive)?)
    }

    /// LOCK, waiting (polling with back-off) if `wait`; `EAGAIN` when
    /// another owner holds a conflicting lock and `!wait`.
    pub fn lock(
        &self,
        open: &Open,
        kind: Kind,
        start: u64,
        len: u64,
        exclusive: bool,
        wait: bool,
    ) -> Res<()> {
        let f = self.owner(open, kind)?;
        let r = if wait {
            f.lock(start, len, exclusive)
        } else {
            f.try_lock(start, len, exclusive)
        };
        Ok(r?)
    }

    /// LOCKU, after the writes still held for write-behind left (the next
    /// holder, maybe on another host, reads them).
    pub fn unlock(&self, open: &Open, kind: Kind, start: u64, len: u64) -> Res<()> {
        if let Some(f) = open.opened_file() {
            f.flush_write_behind()?;
        }
        let f = match kind {
            Kind::Description => open.opened_file().cloned(),
            Kind::Process => owners()
                .as_ref()
                .and_then(|t| t.get(&(open.mount, open.handle)).cloned()),
        };
        let Some(f) = f else {
            // Never locked through this owner: nothing on the server.
            return Ok(());
        };
        match f.unlock(start, len) {
            Err(e @ dnfs::Error::LockLost { .. }) => {
                crate::warn::always(&format!("{e}"));
                Ok(())
            }
            other => Ok(other?),
        }
    }
}

/// `close` of a descriptor of `open`'s file: the process's record locks on
/// it go (the owner's open file is dropped, which releases them and
/// closes it).
pub fn release_process_locks(open: &Open) {
    let owner = owners()
        .as_mut()
        .and_then(|t| t.remove(&(open.mount, open.handle)));
    drop(owner);
}

/// In the child after `fork`: the owners belong to the parent's clients
/// (and fcntl record locks are not inherited); forgotten, never closed
/// from the child.
pub fn forget_in_child(owners: &mut Option<Owners>) {
    if let Some(t) = owners.take() {
        for (_, f) in t {
            std::mem::forget(f);
        }
    }
}
