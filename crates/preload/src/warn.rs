//! Messages on stderr: one-time warnings naming a call that cannot be
//! served (`mmap of an NFS file`), and the rare message that must always be
//! said. Written with one `write(2)` so they never go through the host
//! program's stdio buffers, and prefixed with `directnfs:` and the pid.

use std::collections::HashSet;
use std::sync::Mutex;

use crate::real;

static SAID: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// Says `message` on stderr the first time `key` is seen in this process.
pub fn once(key: &str, message: impl FnOnce() -> String) {
    let first = {
        let mut said = SAID.lock().unwrap_or_else(|p| p.into_inner());
        let said = said.get_or_insert_with(HashSet::new);
        !said.contains(key) && said.insert(key.to_string())
    };
    if first {
        always(&message());
    }
}

/// Says `message` on stderr.
pub fn always(message: &str) {
    let line = format!("directnfs[{}]: {message}\n", std::process::id());
    // SAFETY: the buffer is valid for its length; fd 2 may be anything,
    // and a failed write of a warning is ignored.
    let _ = unsafe { real::write(2, line.as_ptr().cast(), line.len()) };
}

/// Holds the set's lock across `fork` (see fork.rs), so the child never
/// inherits it locked by another thread.
pub fn lock() -> std::sync::MutexGuard<'static, Option<HashSet<String>>> {
    SAID.lock().unwrap_or_else(|p| p.into_inner())
}
