//! Breaking a lock that nobody holds any more: removing it only if it is
//! still the very lock that was judged, one breaker of this host at a
//! time.

use dnfs::Client;

use super::seen::{read_lock, Seen};

/// Removes the lock at `path` if it still reads as `judged` (the same
/// owner record, nonce included, or the same ownerless file and change
/// time). Returns true if it removed it. Processes of this host break
/// locks one at a time (an exclusive `flock` on a local file), so two of
/// them that judged the same lock cannot remove each other's new one.
pub fn break_if_unchanged(client: &Client, path: &str, judged: &Seen) -> dnfs::Result<bool> {
    let _guard = LocalFlock::take();
    // Judge again through a fresh LOOKUP, not a cached handle that might
    // still name an earlier lock of that name: the RENAME of the name onto
    // itself changes nothing on the server (RFC 1813 §3.3.14, as POSIX
    // rename(2)) and drops the client's cached handle.
    let _ = client.rename(path, path);
    if read_lock(client, path)? != *judged {
        return Ok(false); // someone else broke it or took it meanwhile
    }
    match client.remove(path) {
        Ok(()) => Ok(true),
        Err(e) if e.errno() == libc::ENOENT => Ok(false),
        Err(e) => Err(e),
    }
}

/// An exclusive `flock` on `$TMPDIR/directnfs-sqlite-lockbreak`, released
/// on drop. If the file cannot be used, breaking proceeds without it (the
/// re-check of the lock still protects against most races).
struct LocalFlock(Option<std::fs::File>);

impl LocalFlock {
    fn take() -> Self {
        use std::os::unix::io::AsRawFd;
        let path = std::env::temp_dir().join("directnfs-sqlite-lockbreak");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .ok();
        if let Some(f) = &file {
            // SAFETY: flock on a valid, open descriptor we own.
            unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) };
        }
        LocalFlock(file)
    }
}

impl Drop for LocalFlock {
    fn drop(&mut self) {
        use std::os::unix::io::AsRawFd;
        if let Some(f) = &self.0 {
            // SAFETY: as in take(); closing would also release it.
            unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_UN) };
        }
    }
}
