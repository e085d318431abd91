//! `wait_for`: a child of `fork` waited for with a time limit, for the
//! tests whose failure is a child that never ends (`fork_alerts.rs`,
//! `thread_fork.rs`).

use std::time::{Duration, Instant};

/// The child's exit status, or `None` if it did not exit (it was killed
/// after `limit`, or ended by a signal).
pub fn wait_for(pid: libc::pid_t, limit: Duration) -> Option<i32> {
    let deadline = Instant::now() + limit;
    loop {
        let mut status = 0;
        // SAFETY: waits for our own child without blocking.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            return libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
        }
        if Instant::now() > deadline {
            // SAFETY: our own child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return None;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}
