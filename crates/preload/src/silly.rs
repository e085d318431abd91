//! "Silly rename": a file this process holds open keeps working after the
//! process removes its name (`unlink`, or `rename` over it), as on a
//! kernel NFS mount. NFSv3 has no open-file reference on the server (and
//! an NFSv4.1 OPEN is made here only at a descriptor's first I/O), so a
//! REMOVE would leave the descriptor with a stale handle (`ESTALE`).
//! Like the kernel's client, the name is renamed aside instead, to a
//! hidden `.nfsPPPPPPPPNNNNNNNN` in the same directory (the pid and a
//! counter), and that name is removed when the process closes its last
//! descriptor of the file.
//!
//! Only this process's descriptors are seen (each process is its own
//! client): another process's open file still goes away
//! (docs/run-deviations.md, `removed-while-open`). A process that ends
//! without closing, or `exec`s a program that does, leaves the hidden
//! name behind, as the kernel does after a crash; a child of `fork` never
//! removes its parent's hidden names.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use dnfs::Handle;

use crate::clients;
use crate::fail::Res;
use crate::fdtable;
use crate::paths::NfsPath;
use crate::shadow::Kind;
use crate::state::State;

/// A name renamed aside, to remove at the last close.
struct Hidden {
    mount: usize,
    handle: Handle,
    /// The hidden name's path in the export.
    rest: String,
    /// The process that renamed it (a child of `fork` inherits the list).
    pid: u32,
}

static HIDDEN: Mutex<Vec<Hidden>> = Mutex::new(Vec::new());
static COUNTER: AtomicU32 = AtomicU32::new(0);

/// True if this process has a descriptor of the file `handle` open.
pub fn held_open(mount: usize, handle: &Handle) -> bool {
    fdtable::any_open(|o| o.mount == mount && o.handle == *handle && o.kind == Kind::File)
}

/// True if this process has a descriptor open that was opened as `path`
/// (a cheap test before a LOOKUP: `rename` over a file held open).
pub fn maybe_held_open(path: &NfsPath) -> bool {
    fdtable::any_open(|o| {
        o.mount == path.mount
            && o.kind == Kind::File
            && o.path.as_ref().is_some_and(|p| p.rest == path.rest)
    })
}

/// Renames `path` (the file `handle`, held open by this process) aside
/// to a hidden name in its directory.
pub fn hide(state: &State, path: &NfsPath, handle: Handle) -> Res<()> {
    let pid = std::process::id();
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let dir = crate::paths::parent(&path.rest);
    let rest = format!("{}/.nfs{pid:08x}{n:08x}", dir.trim_end_matches('/'));
    let client = clients::get(state, path.mount)?;
    let renamed = client.rename(&path.rest, &rest);
    crate::lookups::changed(state);
    renamed?;
    lock().push(Hidden {
        mount: path.mount,
        handle,
        rest,
        pid,
    });
    Ok(())
}

/// Undoes [`hide`] of `path` (the file `handle`) when the call it made
/// room for failed: the hidden name gets its old name back, so a refused
/// `rename` changes nothing.
pub fn unhide(state: &State, path: &NfsPath, handle: &Handle) {
    let pid = std::process::id();
    let back = {
        let mut list = lock();
        let Some(i) = list
            .iter()
            .rposition(|h| h.mount == path.mount && h.handle == *handle && h.pid == pid)
        else {
            return;
        };
        list.remove(i)
    };
    if let Ok(client) = clients::get(state, path.mount) {
        // A failure leaves the hidden name, removed at the last close as
        // before.
        if client.rename(&back.rest, &path.rest).is_err() {
            lock().push(back);
        }
        crate::lookups::changed(state);
    }
}

/// After a descriptor of the file `handle` was closed (or replaced): its
/// hidden names go once this process holds it open no more.
pub fn closed(state: &State, mount: usize, handle: &Handle) {
    if lock().is_empty() || held_open(mount, handle) {
        return;
    }
    let pid = std::process::id();
    let gone: Vec<Hidden> = {
        let mut list = lock();
        if list.is_empty() {
            return;
        }
        let (gone, keep) = std::mem::take(&mut *list)
            .into_iter()
            .partition(|h| h.mount == mount && h.handle == *handle && h.pid == pid);
        *list = keep;
        gone
    };
    for h in gone {
        let Ok(client) = clients::get(state, h.mount) else {
            continue;
        };
        // A failure leaves a hidden name behind, as the kernel's client
        // does when its REMOVE fails: nothing to report to `close`.
        let _ = client.remove(&h.rest);
        crate::lookups::changed(state);
        state
            .shadow
            .forget(&state.config.mounts[h.mount], Kind::File, &h.handle);
    }
}

/// After descriptors were closed or replaced: [`closed`] for each
/// description, once they are gone from the table.
pub fn closed_all(opens: &[std::sync::Arc<fdtable::Open>]) {
    if lock().is_empty() {
        return;
    }
    let Some(state) = crate::state::get() else {
        return;
    };
    for o in opens {
        closed(state, o.mount, &o.handle);
    }
}

fn lock() -> std::sync::MutexGuard<'static, Vec<Hidden>> {
    HIDDEN.lock().unwrap_or_else(|p| p.into_inner())
}
