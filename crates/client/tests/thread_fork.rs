//! Threads the library starts in a child of `fork` while its parent was
//! starting and ending threads of its own (`signals::spawn`): in a Rust
//! program, `std::thread` takes a lock of the standard library's as each
//! thread starts and ends, and a child forked at that moment inherited it
//! held, so every thread it started waited for ever. The library makes its
//! threads with `pthread_create`. A test binary of its own: its thousand
//! forks and its threads load the machine for a few seconds, which would
//! upset the timing of tests running beside it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[path = "common/wait_child.rs"]
mod wait_child;
use wait_child::wait_for;

#[test]
fn a_forked_child_starts_threads_while_its_parent_was_starting_and_ending_threads() {
    // Threads of the parent start and end threads all along (each
    // start and end of a `std::thread` takes the standard library's
    // registry lock); each of 1,000 children of fork starts a library
    // thread and waits for it. A child that hangs is killed after 5 s.
    // With `std::thread` in the child, 7 of 1,000 hung here.
    let stop = Arc::new(AtomicBool::new(false));
    let churn: Vec<_> = (0..4)
        .map(|_| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let v: Vec<_> = (0..8).map(|_| std::thread::spawn(|| {})).collect();
                    for t in v {
                        let _ = t.join();
                    }
                }
            })
        })
        .collect();
    let (mut hung, mut failed) = (0, 0);
    for _ in 0..1000 {
        // SAFETY: the child only starts a thread, joins it and leaves
        // with _exit.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let ok = directnfs::process::spawn_thread("forked", || 7)
                .ok()
                .and_then(|t| t.join().ok())
                == Some(7);
            // SAFETY: leaves the child without the parent's destructors.
            unsafe { libc::_exit(i32::from(!ok)) };
        }
        match wait_for(pid, Duration::from_secs(5)) {
            None => hung += 1,
            Some(0) => {}
            Some(_) => failed += 1,
        }
    }
    stop.store(true, Ordering::Relaxed);
    for c in churn {
        c.join().unwrap();
    }
    assert_eq!((hung, failed), (0, 0), "children hung, failed");
}
