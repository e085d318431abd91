//! A server that resets its connections must never kill the program: a
//! write on a connection the server has reset fails with EPIPE, and the
//! client reconnects. Unless every socket write asks the kernel not to
//! (MSG_NOSIGNAL), that write also raises SIGPIPE, whose default action
//! ends the process — and only Rust programs ignore SIGPIPE: a C program
//! on the C library, a program with the SQLite extension or one run
//! under `dnfs run` keeps the default. Before, a C program writing
//! through a Ganesha killed and restarted died of SIGPIPE (3 runs of 3).
//!
//! The same for an alert line written to a stderr pipe whose reader is
//! gone.
//!
//! The test runs the client in a child of `fork` with SIGPIPE at its
//! default action, writing from 4 threads over 2 connections while the
//! in-process test server (`directnfs_testkit::hostile`) is killed and
//! restarted three times.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use directnfs::Client;
use directnfs_testkit::hostile::{HostileServer, Plan, FILE};

/// The child: SIGPIPE at its default, then writes until `stop_after`.
/// Exits 0 when every write succeeded, 1 otherwise (and 2 if it could not
/// start); killed by SIGPIPE if a socket write raised it.
fn child(url: &str, stop_after: Duration) -> ! {
    // SAFETY: sets this process's SIGPIPE disposition to the default, and
    // closes every descriptor inherited from the test process: among them
    // the test server's listening socket, which would keep its port open
    // here (connections to it never answered) across its restarts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32);
    }
    let code = (|| {
        let client = Client::connect(url).ok()?;
        let file = client.open(FILE).ok()?;
        let stop = Arc::new(AtomicBool::new(false));
        let failed = Arc::new(AtomicBool::new(false));
        let workers: Vec<_> = (0..4u64)
            .map(|id| {
                let (file, stop, failed) = (file.clone(), stop.clone(), failed.clone());
                std::thread::spawn(move || {
                    let buf = vec![b'a' + id as u8; 32 * 1024];
                    let mut i = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let off = (id * 64 + i % 64) * buf.len() as u64;
                        if file.write_at(&buf, off).is_err() {
                            failed.store(true, Ordering::Relaxed);
                        }
                        i += 1;
                    }
                })
            })
            .collect();
        std::thread::sleep(stop_after);
        stop.store(true, Ordering::Relaxed);
        for w in workers {
            let _ = w.join();
        }
        Some(if failed.load(Ordering::Relaxed) { 1 } else { 0 })
    })()
    .unwrap_or(2);
    // SAFETY: leaves the child without running the parent's destructors.
    unsafe { libc::_exit(code) }
}

#[test]
fn server_resets_never_raise_sigpipe_in_a_program_that_keeps_its_default() {
    let server = HostileServer::start(Plan::none());
    let url = server.url("timeo=10&retrans=2&hard&connections=2");
    let load = Duration::from_secs(8);
    // SAFETY: the child runs `child` only and leaves with _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        child(&url, load);
    }
    let started = Instant::now();
    for _ in 0..3 {
        std::thread::sleep(Duration::from_millis(800));
        server.restart(Duration::from_millis(300));
    }
    let status = wait_for(pid, started + load + Duration::from_secs(30));
    assert!(
        !(libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGPIPE),
        "a socket write raised SIGPIPE and killed the program"
    );
    assert!(
        libc::WIFEXITED(status),
        "child ended by signal {}",
        libc::WTERMSIG(status)
    );
    assert_eq!(
        libc::WEXITSTATUS(status),
        0,
        "1: a write failed on the hard mount; 2: could not mount"
    );
    assert!(
        server.restarts() >= 3,
        "the server restarted {} times",
        server.restarts()
    );
}

/// An alert line written to a stderr whose reader is gone
/// (`prog 2>&1 | head -1`) must not end the program either.
#[test]
fn an_alert_line_to_a_closed_stderr_pipe_does_not_raise_sigpipe() {
    // SAFETY: the child only rewires its stderr, writes an alert line and
    // leaves with _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let mut fds = [0; 2];
        // SAFETY: SIGPIPE back to its default; a pipe whose read end is
        // closed becomes stderr.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            libc::pipe(fds.as_mut_ptr());
            libc::close(fds[0]);
            libc::dup2(fds[1], 2);
        }
        directnfs::alert::set_sink(directnfs::alert::Sink::Stderr);
        directnfs::alert::Alerts::new("srv").mount_retry(
            "/export",
            1,
            Duration::from_millis(200),
            "refused",
        );
        // SAFETY: leaves the child without running the parent's destructors.
        unsafe { libc::_exit(0) };
    }
    let status = wait_for(pid, Instant::now() + Duration::from_secs(20));
    assert!(
        !(libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGPIPE),
        "the alert line raised SIGPIPE and killed the program"
    );
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
}

/// The child's wait status; killed (and the test failed) at `deadline`.
fn wait_for(pid: libc::pid_t, deadline: Instant) -> i32 {
    let mut status = 0;
    loop {
        // SAFETY: waits for our own child without blocking.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            return status;
        }
        if Instant::now() > deadline {
            // SAFETY: our own child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            panic!("the child did not finish in time");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
