//! Two hooks for tests, and nothing else.
//!
//! `DIRECTNFS_SQLITE_TEST_PAUSE_AFTER_LOCK=N` (N a positive integer): the
//! N-th time this process takes a lock file (or takes one it kept unused,
//! [`crate::linger`], back into use), it prints
//! `directnfs-sqlite: test pause after taking lock <file>` to stderr and
//! sleeps until it is killed, so that a test can SIGKILL it exactly
//! between taking the lock and using the database. Unset (or anything but
//! a positive integer), it costs one load of a cached value per lock taken.
//!
//! `DIRECTNFS_SQLITE_TEST_REPLACE_AFTER_OPEN=SUFFIX` (e.g. `-wal`): the
//! first time this process opens a file whose name ends in SUFFIX (not a
//! main database; database names given as `nfs://` URLs only), a client
//! of its own removes that file on the server and creates it again,
//! empty, before the open returns, and says
//! `directnfs-sqlite: test replaced <path> after opening it`. The handle
//! the open got is then stale at the server, and so is the one this
//! process's client keeps for the name: what NFS-Ganesha was seen to hand
//! out in a CREATE reply ([`crate::vfs`]'s `Conn::with_file`). Unset, it
//! costs one load of a cached value per open. `SUFFIX:remove` removes the
//! file and makes none in its place (says `test removed <path> after
//! opening it`): the stale handle of a CREATE that made no file, which
//! NFS-Ganesha was seen to answer too.
//!
//! The variables' names say what they are for; no other setting reaches
//! them.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

/// Name of the pause's environment variable (read once per process).
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

/// Name of the replacement's environment variable (read once per process).
pub const REPLACE_AFTER_OPEN: &str = "DIRECTNFS_SQLITE_TEST_REPLACE_AFTER_OPEN";

/// Called after each file the VFS opened (`path` in `client`'s export,
/// `name` as SQLite named it); replaces the first one whose name ends in
/// the suffix, through a client of its own.
pub fn opened(client: &dnfs::Client, path: &str, name: &str, main_db: bool) {
    static SUFFIX: OnceLock<Option<String>> = OnceLock::new();
    static DONE: AtomicBool = AtomicBool::new(false);
    let suffix = SUFFIX.get_or_init(|| {
        std::env::var(REPLACE_AFTER_OPEN)
            .ok()
            .filter(|s| !s.is_empty())
    });
    let Some(spec) = suffix else {
        return;
    };
    let (suffix, only_remove) = match spec.strip_suffix(":remove") {
        Some(s) => (s, true),
        None => (spec.as_str(), false),
    };
    if main_db || !name.ends_with(suffix) || DONE.swap(true, Ordering::Relaxed) {
        return;
    }
    let (url, _) = crate::names::split_url_suffix(name);
    let replaced = dnfs::Client::connect(url).and_then(|other| {
        if other.export() != client.export() {
            return Err(dnfs::Error::InvalidInput(format!(
                "{url} mounts {}, not {}",
                other.export(),
                client.export()
            )));
        }
        other.remove(path)?;
        if only_remove {
            return Ok(());
        }
        other.create(path).map(drop)
    });
    let done = if only_remove { "removed" } else { "replaced" };
    // Said either way: the test looks for the first line.
    match replaced {
        Ok(()) => eprintln!("directnfs-sqlite: test {done} {path} after opening it"),
        Err(e) => eprintln!("directnfs-sqlite: test could not replace {path}: {e}"),
    }
}
