//! A pause point for the crash tests, and nothing else.
//!
//! `DIRECTNFS_SQLITE_TEST_PAUSE_AFTER_LOCK=N` (N a positive integer): the
//! N-th time this process takes a lock file (or takes one it kept unused,
//! [`crate::linger`], back into use), it prints
//! `directnfs-sqlite: test pause after taking lock <file>` to stderr and
//! sleeps until it is killed, so that a test can SIGKILL it exactly
//! between taking the lock and using the database. Unset (or anything but
//! a positive integer), it costs one load of a cached value per lock taken.
//! The variable's name says what it is for; no other setting reaches it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

/// Name of the environment variable (read once per process).
pub const PAUSE_AFTER_LOCK: &str = "DIRECTNFS_SQLITE_TEST_PAUSE_AFTER_LOCK";

/// Called after each lock file taken; pauses for ever at the N-th.
pub fn lock_taken(lock_file: &str) {
    static AT: OnceLock<Option<u64>> = OnceLock::new();
    static TAKEN: AtomicU64 = AtomicU64::new(0);
    let at = AT.get_or_init(|| {
        std::env::var(PAUSE_AFTER_LOCK)
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .filter(|&n| n > 0)
    });
    let Some(at) = *at else {
        return;
    };
    if TAKEN.fetch_add(1, Ordering::Relaxed) + 1 != at {
        return;
    }
    eprintln!("directnfs-sqlite: test pause after taking lock {lock_file}");
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}
