//! `fork` and this library.
//!
//! * Which process a connection belongs to. A connection's file and lock
//!   state are its process's (its client's sockets, on NFSv4.1 its
//!   session and open state); in the child of `fork` (SQLite forbids
//!   carrying a connection across it, but a program may still try, or
//!   close it) they must be neither used nor dropped there. Each
//!   connection records the fork generation it was opened in; the VFS's
//!   methods refuse one of another generation, and xClose leaves it to
//!   the parent.
//! * The process-wide tables (inodes, mounts, the linger thread's state)
//!   are locked around every `fork` (`pthread_atfork`), so the child never
//!   inherits one locked by a thread it does not have: the linger thread
//!   sweeps the inode table every few milliseconds while a lock is kept,
//!   and a child that opened a database right after such a fork waited
//!   for ever.

use std::any::Any;
use std::cell::RefCell;
use std::sync::Once;

thread_local! {
    /// The tables' guards, from `prepare` to `parent`/`child` (all three
    /// run in the thread that calls `fork`).
    static HELD: RefCell<Vec<Box<dyn Any>>> = const { RefCell::new(Vec::new()) };
}

extern "C" fn prepare() {
    // Always in this order; nothing takes two of them nested otherwise
    // (the inode table is never locked under the mounts' or the linger
    // thread's lock), so this cannot deadlock with another thread.
    let guards: Vec<Box<dyn Any>> = vec![
        Box::new(crate::lock::hold_table_for_fork()),
        Box::new(crate::names::hold_table_for_fork()),
        Box::new(crate::linger::hold_for_fork()),
    ];
    HELD.with(|h| *h.borrow_mut() = guards);
}

extern "C" fn release() {
    HELD.with(|h| h.borrow_mut().clear());
}

/// Registers the fork handlers (once per process; at the VFS's
/// registration, before any table is used).
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: registers plain extern "C" functions taking nothing.
        unsafe { libc::pthread_atfork(Some(prepare), Some(release), Some(release)) };
    });
}

/// This process's fork generation ([`dnfs::process::fork_generation`]): recorded
/// by a connection being opened, compared at each use.
pub fn current() -> u64 {
    install();
    dnfs::process::fork_generation()
}
