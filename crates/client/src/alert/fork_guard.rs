//! The alert log across `fork`.
//!
//! A line is written under the log's lock (the sink's write included). A
//! process that forks while one of its threads writes a line — a
//! PostgreSQL postmaster starting a backend while its client reports a
//! path going down — would give the child a lock held by a thread the
//! child does not have, and the child would hang at its first alert line
//! for ever. Around `fork` (pthread_atfork) the forking thread takes the
//! lock itself, so the fork waits for the line being written, and both
//! processes release it afterwards.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::MutexGuard;

use super::{Log, LOG};

thread_local! {
    /// The lock, held by the forking thread from `prepare` to
    /// `parent`/`child`.
    static HELD: RefCell<Option<MutexGuard<'static, Option<Log>>>> =
        const { RefCell::new(None) };
}

/// Registers the handlers, once per process image (the child inherits
/// them). Lock-free: a child forked while another thread registers cannot
/// find a half-done registration it would wait for.
pub(super) fn install() {
    // Miri (scripts/test.sh runs the client's unit tests under it) has no
    // pthread_atfork; it has no fork either.
    if cfg!(miri) {
        return;
    }
    static INSTALLED: AtomicBool = AtomicBool::new(false);
    if !INSTALLED.swap(true, Ordering::AcqRel) {
        // SAFETY: three extern "C" functions with no arguments that never
        // unwind.
        unsafe { libc::pthread_atfork(Some(prepare), Some(release), Some(release)) };
    }
}

extern "C" fn prepare() {
    let guard = LOG.lock().unwrap_or_else(|p| p.into_inner());
    HELD.with(|h| *h.borrow_mut() = Some(guard));
}

extern "C" fn release() {
    HELD.with(|h| drop(h.borrow_mut().take()));
}
