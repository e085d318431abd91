//! `in_child`: runs a closure in a child of `fork` with a client made
//! from the parent's by `Client::after_fork` (what the interception
//! library makes in every new PostgreSQL backend), for the tests of
//! `forked.rs` (NFSv3, the in-process server) and `v41.rs` (Ganesha).

use directnfs::Client;

/// Runs `child` in a child of `fork` with a client made from `parent` by
/// `after_fork`, and returns what it said (`Ok` or its complaint).
pub fn in_child(parent: &Client, child: impl FnOnce(&Client) -> Result<(), String>) {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe writes.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: the child runs only the code below (no lock the parent's
    // other threads might hold is taken: the client's copy is only read)
    // and leaves with _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let verdict = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let copy = parent.clone();
            let mine = copy.after_fork().map_err(|e| format!("after_fork: {e}"))?;
            std::mem::forget(copy);
            let r = child(&mine);
            std::mem::forget(mine);
            r
        }))
        .unwrap_or_else(|_| Err("the child panicked".into()));
        let text = match verdict {
            Ok(()) => "ok".to_string(),
            Err(e) => e,
        };
        // SAFETY: writes a live buffer to our pipe, then leaves the child
        // without running the parent's destructors.
        unsafe {
            libc::write(fds[1], text.as_ptr().cast(), text.len());
            libc::_exit(0);
        }
    }
    // SAFETY: closes our copy of the write end.
    unsafe { libc::close(fds[1]) };
    let mut said = Vec::new();
    let mut buf = [0u8; 512];
    loop {
        // SAFETY: reads into a live buffer of the length given.
        let n = unsafe { libc::read(fds[0], buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            break;
        }
        said.extend_from_slice(&buf[..n as usize]);
    }
    let mut status = 0;
    // SAFETY: closes the read end; waits for our own child.
    unsafe {
        libc::close(fds[0]);
        libc::waitpid(pid, &mut status, 0);
    }
    assert_eq!(String::from_utf8_lossy(&said), "ok");
}
