//! `fork`: the child has none of the parent's threads, so none of its
//! clients can work there. Around `fork` (pthread_atfork) the library holds
//! its own locks, so the child never inherits one held by a thread that is
//! gone; in the child it then forgets every client (never dropping them:
//! their sockets are the parent's) and copies every open description
//! without its client file. The child's first NFS call mounts again
//! (clients.rs), and its descriptors reopen their files by handle.
//!
//! What the child keeps: its descriptors (the kernel's, with shared
//! offsets and status flags, see io.rs), the current directory, the
//! directory streams. Record locks are not inherited (the kernel's rule
//! for `fcntl` locks); `flock` and OFD locks are shared (also its rule).

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, MutexGuard, RwLockWriteGuard};

use libc::c_int;

use crate::clients;
use crate::fdtable::{self, Open};

type Table = Option<HashMap<c_int, Arc<Open>>>;

/// The locks held from `prepare` to `parent`/`child` (all in the forking
/// thread).
struct Held {
    table: RwLockWriteGuard<'static, Table>,
    slots: RwLockWriteGuard<'static, Vec<clients::Slot>>,
    // Held only to be released after the fork, in both processes.
    _cwd: RwLockWriteGuard<'static, String>,
    _said: MutexGuard<'static, Option<HashSet<String>>>,
    owners: MutexGuard<'static, Option<crate::nfs4locks::Owners>>,
    tally: MutexGuard<'static, crate::tally::Table>,
    _rings: MutexGuard<'static, Option<HashMap<c_int, crate::ops::unsupported::Ring>>>,
    nlm: crate::nlmlocks::HeldGuard,
}

thread_local! {
    static HELD: RefCell<Option<Held>> = const { RefCell::new(None) };
}

/// Registers the handlers (once, at load).
pub fn register() {
    // SAFETY: three plain extern "C" functions with no arguments.
    unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
}

extern "C" fn prepare() {
    crate::text::share_with_children();
    // Order: the table, the clients, the current directory, the warnings,
    // the NFSv4.1 owners (no code path takes two of them the other way
    // round), then the call tally, the io_uring rings and the NFSv3 (NLM)
    // lock owners (held without taking any other lock).
    let held = Held {
        table: fdtable::TABLE.write().unwrap_or_else(|p| p.into_inner()),
        slots: clients::SLOTS.write().unwrap_or_else(|p| p.into_inner()),
        _cwd: crate::cwd::CWD.write().unwrap_or_else(|p| p.into_inner()),
        _said: crate::warn::lock(),
        owners: crate::nfs4locks::OWNERS
            .lock()
            .unwrap_or_else(|p| p.into_inner()),
        tally: crate::tally::lock(),
        _rings: crate::ops::unsupported::lock_rings(),
        nlm: crate::nlmlocks::lock_held(),
    };
    HELD.with(|h| *h.borrow_mut() = Some(held));
}

extern "C" fn parent() {
    HELD.with(|h| drop(h.borrow_mut().take()));
}

extern "C" fn child() {
    dnfs::process::reset_descriptor_windows_in_child();
    HELD.with(|h| {
        if let Some(mut held) = h.borrow_mut().take() {
            fdtable::rebuild_in_child(&mut held.table);
            clients::forget_all_in_child(&mut held.slots);
            crate::tally::reset_in_child(&mut held.tally);
            crate::nfs4locks::forget_in_child(&mut held.owners);
            crate::nlmlocks::forget_in_child(&mut held.nlm);
        }
    });
}
