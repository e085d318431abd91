//! A name-based operation retried once after ESTALE, for front ends that
//! name files by path (the C library, the SQLite VFS).

use crate::client::Client;
use crate::error::Result;

/// Runs a name-based operation; if it fails with ESTALE, drops the
/// client's cached handle of `path` and tries once more.
///
/// The client caches path -> handle (never data). When another process or
/// host removes and re-creates a file (a journal, a lock file), a cached
/// handle goes stale. This drops it with a RENAME of the path onto itself,
/// which the server treats as a successful no-op (POSIX rename(2): "if
/// oldpath and newpath are existing hard links referring to the same file,
/// rename() does nothing") or fails with ENOENT; either way the cache
/// entry is gone. Not [`Client::forget_handle`], which forgets only the
/// path: the RENAME goes through the client's own retry, which forgets
/// every cached handle when a directory on the way is the stale one.
pub fn retry_stale<T>(client: &Client, path: &str, mut op: impl FnMut() -> Result<T>) -> Result<T> {
    match op() {
        Err(e) if e.errno() == libc::ESTALE => {
            let _ = client.rename(path, path);
            op()
        }
        other => other,
    }
}
