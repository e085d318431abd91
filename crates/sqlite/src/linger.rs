//! Keeping the process-wide lock for a moment after the last connection of
//! the process let go of a database ([`crate::lock`]).
//!
//! In a rollback-journal mode SQLite drops every lock at the end of each
//! transaction, and the process-wide lock went with it: on NFSv3 a REMOVE
//! of the lock file and a LOOKUP of the waiter file, then a SYMLINK at the
//! next transaction, three round trips of about 18 per TPC-B transaction;
//! and the mirror of the database's bytes ([`crate::mirror`]) was emptied,
//! so every transaction read its pages from the server again. Now the
//! lock is kept for [`period`] after it fell unused. A transaction that
//! starts meanwhile only asks whether another process wants the lock (one
//! LOOKUP of `<db>.dnfs-want`, or LOCKT on NFSv4.1), and keeps the lock
//! and the mirror if not; if so, it releases the lock and steps aside as
//! before. A lock unused for [`period`] is released by this module's
//! thread, and a process that exits normally releases what it kept
//! (`atexit`).
//!
//! What it costs: another process waits up to [`period`] (plus the
//! thread's wake-up) longer for a lock whose holder went idle; and a
//! process killed within [`period`] after a transaction leaves its lock as
//! one killed during a transaction does (broken by the next process of its
//! host, or by hand for another host's).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, Once, OnceLock};
use std::time::Duration;

/// Default of [`period`], in milliseconds: longer than the gap between
/// back-to-back transactions of one program, short next to SQLite's busy
/// handler's sleeps (1-100 ms) and a waiter's 50 ms of polling.
pub const DEFAULT_MS: u64 = 5;

/// How long an unused process-wide lock is kept: `DIRECTNFS_SQLITE_LINGER_MS`
/// (read once; 0 releases it at once, as before), else [`DEFAULT_MS`].
pub fn period() -> Duration {
    static PERIOD: OnceLock<Duration> = OnceLock::new();
    *PERIOD.get_or_init(|| {
        let ms = std::env::var("DIRECTNFS_SQLITE_LINGER_MS")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(DEFAULT_MS);
        Duration::from_millis(ms)
    })
}

/// The releasing thread of this process: the pid it runs in (a forked
/// child has none until it needs one), and whether a lock started to
/// linger since it last looked.
struct Reaper {
    pid: u32,
    pending: bool,
}

static REAPER: Mutex<Reaper> = Mutex::new(Reaper {
    pid: 0,
    pending: false,
});
static WAKE: Condvar = Condvar::new();

/// The thread's lock, held across a `fork` ([`crate::forked`]).
pub(crate) fn hold_for_fork() -> impl std::any::Any {
    REAPER.lock().unwrap_or_else(|p| p.into_inner())
}

/// A lock started to linger: make sure it is released in time. False if
/// the thread could not be started (the caller then releases at once).
pub fn watch() -> bool {
    let mut r = REAPER.lock().unwrap_or_else(|p| p.into_inner());
    let pid = std::process::id();
    if r.pid != pid {
        // Signals blocked: the program's signals are not ours to take.
        let started = dnfs::process::spawn_thread("dnfs-sqlite-linger", run).is_ok();
        if !started {
            return false;
        }
        r.pid = pid;
        at_exit_once();
    }
    r.pending = true;
    WAKE.notify_one();
    true
}

/// The thread: sleeps until some lock lingers, then sweeps every
/// [`period`] until none does.
fn run() {
    loop {
        {
            let mut r = REAPER.lock().unwrap_or_else(|p| p.into_inner());
            while !r.pending {
                r = WAKE.wait(r).unwrap_or_else(|p| p.into_inner());
            }
            r.pending = false;
        }
        loop {
            std::thread::sleep(period());
            if !crate::lock::release_lingering(period()) {
                break;
            }
        }
    }
}

/// Set while the process exits: lingering locks are released, not kept.
static EXITING: AtomicBool = AtomicBool::new(false);

/// True once the process runs its `atexit` handlers.
pub fn exiting() -> bool {
    EXITING.load(Ordering::Relaxed)
}

fn at_exit_once() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: registers a plain extern "C" function taking nothing.
        unsafe { libc::atexit(release_at_exit) };
    });
}

/// Releases every lock still kept when the process exits normally
/// (`exit`, a return from `main`); the handler is inherited by forked
/// children, whose own locks it releases.
extern "C" fn release_at_exit() {
    EXITING.store(true, Ordering::Relaxed);
    crate::lock::release_lingering(Duration::ZERO);
}
