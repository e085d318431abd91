//! The server side of locks on NFSv3 mounts (locks.rs decides when): the
//! server's Network Lock Manager (NLM v4) through the client's
//! [`Client::nlm_lock`](dnfs::Client::nlm_lock) family, as the kernel's
//! client does for a mount without `nolock`.
//!
//! Which locks go there is the mount's `local_lock=` (Linux's meaning):
//! `none` (the default) sends `fcntl` and `flock` locks, `posix` keeps
//! `fcntl` locks on this host, `flock` keeps `flock` locks on this host,
//! `all` (`nolock`) keeps both.
//!
//! Owners follow POSIX, as on NFSv4.1 (nfs4locks.rs): `fcntl` record locks
//! belong to the process ([`dnfs::NlmOwner::process`]: svid = pid) and any
//! `close` of the file by the process releases them; `flock` and OFD locks
//! belong to the open file description (an owner per description) and go
//! with its last descriptor. A process that exits (`exit`, a return from
//! `main`) releases what it still holds on the server from an `atexit`
//! handler. A process killed by a signal cannot: its NLM locks stay on the
//! server until this host's NSM tells the server it restarted, or until
//! the next process of this host with the same pid... (never): see the
//! README ("Locks on NFSv3") for what a DBA does then.
//!
//! A server without a lock manager makes the lock call fail with
//! `ENOLCK`, and the first such failure of the process says so on stderr,
//! naming the options (`nolock`, `local_lock=`) that keep locks local.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, Once};

use dnfs::{Handle, LockConflict, NlmOwner};
use libc::c_short;

use crate::clients;
use crate::fail::{Errno, Res};
use crate::fdtable::Open;
use crate::shadow::Kind as ObjectKind;
use crate::state::{self, State};

use crate::nfs4locks::Kind;

/// What this process holds (or may hold) on servers' lock managers, to
/// release at `close` and at exit.
#[derive(Default)]
struct Held {
    /// Files on which this process took POSIX record locks: (mount, handle).
    process: HashSet<(usize, Handle)>,
    /// Descriptions with `flock`/OFD locks: their id -> (mount, handle).
    descriptions: HashMap<usize, (usize, Handle)>,
}

static HELD: Mutex<Option<Held>> = Mutex::new(None);

fn held() -> MutexGuard<'static, Option<Held>> {
    HELD.lock().unwrap_or_else(|p| p.into_inner())
}

/// The server side of one lock call on an NFSv3 file.
#[derive(Debug)]
pub struct Nlm {
    state: &'static State,
}

/// `Some` when `open` is a regular file of an NFSv3 mount whose locks of
/// this kind (`posix`: `fcntl` record locks, else `flock`/OFD) go to the
/// server.
pub fn on_v3(open: &Open, posix: bool) -> Option<Nlm> {
    let state = state::get()?;
    let o = &state.config.mounts.get(open.mount)?.target.options;
    if o.nfs_version != dnfs::config::NfsVersion::V3 || open.kind != ObjectKind::File {
        return None;
    }
    let local = if posix {
        o.local_lock.posix_local()
    } else {
        o.local_lock.flock_local()
    };
    (!local).then_some(Nlm { state })
}

/// The owner id of a description: its address, unique while it lives.
fn description_id(open: &Open) -> usize {
    open as *const Open as usize
}

fn owner(open: &Open, kind: Kind) -> NlmOwner {
    match kind {
        Kind::Process => NlmOwner::process(),
        Kind::Description => NlmOwner::description(description_id(open) as u64),
    }
}

impl Nlm {
    /// NLM4_TEST: a lock of another owner that conflicts with `l_type`,
    /// and the holder's process id on its host.
    pub fn test(
        &self,
        open: &Open,
        kind: Kind,
        start: u64,
        len: u64,
        l_type: c_short,
    ) -> Res<Option<(LockConflict, i32)>> {
        let client = clients::get(self.state, open.mount)?;
        let exclusive = l_type == libc::F_WRLCK as c_short;
        client
            .nlm_test(&open.handle, &owner(open, kind), (start, len), exclusive)
            .map_err(|e| said(open, e))
    }

    /// NLM4_LOCK, waiting (polling with back-off) if `wait`; `EAGAIN`
    /// when another owner holds a conflicting lock and `!wait`.
    pub fn lock(
        &self,
        open: &Open,
        kind: Kind,
        (start, len): (u64, u64),
        exclusive: bool,
        wait: bool,
    ) -> Res<()> {
        let client = clients::get(self.state, open.mount)?;
        client
            .nlm_lock(
                &open.handle,
                &owner(open, kind),
                (start, len),
                exclusive,
                wait,
            )
            .map_err(|e| said(open, e))?;
        remember(open, kind);
        Ok(())
    }

    /// NLM4_UNLOCK, after the writes still held for write-behind left
    /// (the next holder, maybe on another host, reads them).
    pub fn unlock(&self, open: &Open, kind: Kind, start: u64, len: u64) -> Res<()> {
        if let Some(f) = open.opened_file() {
            f.flush_write_behind()?;
        }
        let client = clients::get(self.state, open.mount)?;
        client
            .nlm_unlock(&open.handle, &owner(open, kind), (start, len))
            .map_err(|e| said(open, e))
    }
}

/// The error as an errno; the first "no lock manager" of the process is
/// said on stderr with the options that would keep locks local.
fn said(open: &Open, e: dnfs::Error) -> Errno {
    if matches!(e, dnfs::Error::NoLockManager { .. }) {
        crate::warn::once("nlm-missing", || {
            format!(
                "lock on {} failed with ENOLCK (this warning is given once): {e}",
                open.label()
            )
        });
    }
    Errno(e.errno())
}

fn remember(open: &Open, kind: Kind) {
    let mut h = held();
    let h = h.get_or_insert_with(Held::default);
    match kind {
        Kind::Process => {
            h.process.insert((open.mount, open.handle));
        }
        Kind::Description => {
            h.descriptions
                .insert(description_id(open), (open.mount, open.handle));
        }
    }
    static AT_EXIT: Once = Once::new();
    AT_EXIT.call_once(|| {
        // SAFETY: `release_all_at_exit` is an `extern "C" fn()` that
        // never unwinds (it catches nothing that can panic: the client
        // calls return errors).
        unsafe { libc::atexit(release_all_at_exit) };
    });
}

/// `close` of a descriptor of `open`: the process's record locks on the
/// file go (POSIX), and the description's own locks if this was its last
/// descriptor in the process.
pub fn closing(open: &Arc<Open>) {
    let Some(state) = state::get() else {
        return;
    };
    let key = (open.mount, open.handle);
    let (posix, description) = {
        let mut h = held();
        let Some(h) = h.as_mut() else {
            return;
        };
        let posix = h.process.remove(&key);
        let last = Arc::strong_count(open) == 1;
        let description = last && h.descriptions.remove(&description_id(open)).is_some();
        (posix, description)
    };
    if !(posix || description) {
        return;
    }
    let Ok(client) = clients::get(state, open.mount) else {
        return;
    };
    if let Some(f) = open.opened_file() {
        let _ = f.flush_write_behind();
    }
    if posix {
        let _ = client.nlm_unlock(&open.handle, &NlmOwner::process(), (0, 0));
    }
    if description {
        let _ = client.nlm_unlock(
            &open.handle,
            &NlmOwner::description(description_id(open) as u64),
            (0, 0),
        );
    }
}

/// At exit: every NLM lock the process may still hold is released (the
/// kernel would release its local ones; the server knows nothing of the
/// exit).
extern "C" fn release_all_at_exit() {
    let Some(h) = held().take() else {
        return;
    };
    let Some(state) = state::get() else {
        return;
    };
    for (mount, handle) in h.process {
        if let Ok(client) = clients::get(state, mount) {
            let _ = client.nlm_unlock(&handle, &NlmOwner::process(), (0, 0));
        }
    }
    for (id, (mount, handle)) in h.descriptions {
        if let Ok(client) = clients::get(state, mount) {
            let _ = client.nlm_unlock(&handle, &NlmOwner::description(id as u64), (0, 0));
        }
    }
}
