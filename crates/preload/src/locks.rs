//! Locks of NFS descriptors: the one place that decides how a lock on an
//! NFS file is taken.
//!
//! Every lock is first a real lock on the descriptor's shadow file
//! (shadow.rs): the kernel gives `fcntl` record locks (`F_SETLK`,
//! `F_SETLKW`, `F_GETLK`), open file description locks (`F_OFD_*`) and
//! `flock` their exact semantics — blocking, deadlock detection (`EDEADLK`),
//! release on close and at process death — among all processes of this
//! host.
//!
//! The same lock is then taken on the server, so that it also excludes
//! other hosts and other clients: on an NFSv4.1 mount a byte-range LOCK
//! (nfs4locks.rs), on an NFSv3 mount a lock of the server's lock manager,
//! NLM (nlmlocks.rs; unless the mount's `nolock`/`local_lock=` keeps that
//! kind of lock on this host, as the kernel's client does). After the
//! local lock is granted, the NFS one is asked for (polled with back-off
//! for `F_SETLKW` and blocking `flock`); if the server refuses it, the
//! local lock is undone and the call fails with `EAGAIN` (`EWOULDBLOCK`
//! for `flock`), or `ENOLCK` when an NFSv3 server has no lock manager. An
//! unlock releases the NFS lock, then the local one. `F_GETLK` asks the
//! kernel first, then the server (LOCKT, NLM4_TEST); a conflict found on
//! the server is reported with `l_pid` 0 on NFSv4.1 (a process of another
//! client) and the holder's process id on its host on NFSv3.

use libc::{c_int, c_short, c_ulong};

use crate::fail::{errno, Errno, Res};
use crate::fdtable::Open;
use crate::nfs4locks::{self, Kind};
use crate::nlmlocks;
use crate::real;
use crate::state;

/// Where the server side of a lock is taken.
enum Server {
    V41(nfs4locks::Nfs),
    V3(nlmlocks::Nlm),
}

/// The server side of `open`'s locks, if any (`posix`: a record lock,
/// else `flock`).
fn server(open: &Open, posix: bool) -> Res<Option<Server>> {
    if let Some(nfs) = nfs4locks::on_v41(open)? {
        return Ok(Some(Server::V41(nfs)));
    }
    Ok(nlmlocks::on_v3(open, posix).map(Server::V3))
}

impl Server {
    fn test(
        &self,
        open: &Open,
        kind: Kind,
        (start, len): (u64, u64),
        l_type: c_short,
    ) -> Res<Option<(dnfs::LockConflict, libc::pid_t)>> {
        match self {
            Server::V41(nfs) => Ok(nfs.test(open, kind, start, len, l_type)?.map(|c| (c, 0))),
            Server::V3(nlm) => nlm.test(open, kind, start, len, l_type),
        }
    }

    fn lock(
        &self,
        open: &Open,
        kind: Kind,
        range: (u64, u64),
        exclusive: bool,
        wait: bool,
    ) -> Res<()> {
        match self {
            Server::V41(nfs) => nfs.lock(open, kind, range.0, range.1, exclusive, wait),
            Server::V3(nlm) => nlm.lock(open, kind, range, exclusive, wait),
        }
    }

    fn unlock(&self, open: &Open, kind: Kind, (start, len): (u64, u64)) -> Res<()> {
        match self {
            Server::V41(nfs) => nfs.unlock(open, kind, start, len),
            Server::V3(nlm) => nlm.unlock(open, kind, start, len),
        }
    }
}

/// True for the `fcntl` commands that are locks.
pub fn is_lock_cmd(cmd: c_int) -> bool {
    matches!(
        cmd,
        libc::F_SETLK
            | libc::F_SETLKW
            | libc::F_GETLK
            | libc::F_OFD_SETLK
            | libc::F_OFD_SETLKW
            | libc::F_OFD_GETLK
    )
}

/// A record lock command (`arg` points to a `struct flock`).
pub fn fcntl_lock(fd: c_int, open: &Open, cmd: c_int, arg: c_ulong) -> Res<c_int> {
    let Some(nfs) = server(open, true)? else {
        return real_fcntl(fd, cmd, arg);
    };
    if arg == 0 {
        return Err(Errno(libc::EFAULT));
    }
    // SAFETY: for these commands `arg` is the caller's `struct flock`
    // (fcntl(2)); it is read and written only here, in the caller's thread.
    let fl = unsafe { &mut *(arg as *mut libc::flock) };
    let kind = match cmd {
        libc::F_OFD_SETLK | libc::F_OFD_SETLKW | libc::F_OFD_GETLK => Kind::Description,
        _ => Kind::Process,
    };
    // The range as absolute bytes (SEEK_END is the NFS file's end, not
    // the empty shadow file's); the kernel gets it in the same form.
    let Some(st) = state::get() else {
        return real_fcntl(fd, cmd, arg);
    };
    let (start, len) = nfs4locks::Nfs::of(st).range(fd, open, fl)?;
    let mut local = libc::flock {
        l_type: fl.l_type,
        l_whence: libc::SEEK_SET as c_short,
        l_start: start as libc::off_t,
        l_len: len as libc::off_t,
        l_pid: fl.l_pid,
    };
    match cmd {
        libc::F_GETLK | libc::F_OFD_GETLK => {
            real_fcntl(fd, cmd, arg_of(&mut local))?;
            if local.l_type == libc::F_UNLCK as c_short {
                if let Some((c, pid)) = nfs.test(open, kind, (start, len), fl.l_type)? {
                    local.l_type = if c.exclusive {
                        libc::F_WRLCK
                    } else {
                        libc::F_RDLCK
                    } as c_short;
                    local.l_start = c.offset as libc::off_t;
                    local.l_len = c.len as libc::off_t;
                    local.l_pid = pid;
                }
            }
            *fl = local;
            Ok(0)
        }
        _ if fl.l_type == libc::F_UNLCK as c_short => {
            nfs.unlock(open, kind, (start, len))?;
            real_fcntl(fd, cmd, arg_of(&mut local))
        }
        _ => {
            let exclusive = fl.l_type == libc::F_WRLCK as c_short;
            if !exclusive && fl.l_type != libc::F_RDLCK as c_short {
                return Err(Errno(libc::EINVAL));
            }
            real_fcntl(fd, cmd, arg_of(&mut local))?;
            let wait = matches!(cmd, libc::F_SETLKW | libc::F_OFD_SETLKW);
            if let Err(e) = nfs.lock(open, kind, (start, len), exclusive, wait) {
                // Undo the local lock: the call failed as a whole. (A
                // failed upgrade of a range this process held shared
                // loses the local shared lock too; the server's still
                // excludes other writers.)
                local.l_type = libc::F_UNLCK as c_short;
                let _ = real_fcntl(fd, cmd, arg_of(&mut local));
                return Err(e);
            }
            Ok(0)
        }
    }
}

/// `flock(2)`: the whole file.
pub fn flock(fd: c_int, open: &Open, op: c_int) -> Res<()> {
    let Some(nfs) = server(open, false)? else {
        return real_flock(fd, op);
    };
    if op & libc::LOCK_UN != 0 {
        nfs.unlock(open, Kind::Description, (0, 0))?;
        return real_flock(fd, op);
    }
    real_flock(fd, op)?;
    let exclusive = op & libc::LOCK_EX != 0;
    let wait = op & libc::LOCK_NB == 0;
    if let Err(e) = nfs.lock(open, Kind::Description, (0, 0), exclusive, wait) {
        let _ = real_flock(fd, libc::LOCK_UN);
        // flock(2) says EWOULDBLOCK for a conflict; the same number.
        return Err(e);
    }
    Ok(())
}

/// `close` of a descriptor: POSIX releases every record lock the process
/// holds on the file, whichever descriptor took it.
pub fn closing(open: &std::sync::Arc<Open>) {
    nfs4locks::release_process_locks(open);
    nlmlocks::closing(open);
}

/// A `struct flock` as `fcntl`'s argument.
fn arg_of(fl: &mut libc::flock) -> c_ulong {
    fl as *mut libc::flock as c_ulong
}

fn real_fcntl(fd: c_int, cmd: c_int, arg: c_ulong) -> Res<c_int> {
    // SAFETY: a `struct flock` pointer (the caller's or ours), forwarded.
    let r = unsafe { real::fcntl(fd, cmd, arg) };
    if r < 0 {
        Err(Errno(errno()))
    } else {
        Ok(r)
    }
}

fn real_flock(fd: c_int, op: c_int) -> Res<()> {
    // SAFETY: plain forward.
    if unsafe { real::flock(fd, op) } < 0 {
        Err(Errno(errno()))
    } else {
        Ok(())
    }
}
