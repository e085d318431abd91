//! The alert log across `fork`: a child forked while another thread of
//! the parent is writing an alert line must be able to write its own (a
//! PostgreSQL postmaster starts backends while its client may be reporting
//! a failed path). Its own test binary: it points the process's alert log
//! at a FIFO.

use std::io::Read;
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

#[path = "common/wait_child.rs"]
mod wait_child;
use wait_child::wait_for;

use directnfs::alert::{self, Alerts, Sink};

/// Whether thread `tid` of this process is inside `openat` (blocked
/// opening the FIFO for writing, with the alert log's lock held).
fn in_openat(tid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/syscall"))
        .is_ok_and(|s| s.split_whitespace().next() == Some(&libc::SYS_openat.to_string()))
}

#[test]
fn a_child_forked_while_an_alert_line_is_written_can_write_its_own() {
    let dir = std::env::temp_dir().join(format!("dnfs-fork-alerts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("alerts.fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    alert::set_sink(Sink::File(fifo.clone()));

    // A thread writes a line: it blocks opening the FIFO (no reader yet),
    // inside the log's lock.
    let (tx, rx) = mpsc::channel();
    let writer = std::thread::spawn(move || {
        // SAFETY: gettid has no preconditions.
        tx.send(unsafe { libc::gettid() }).unwrap();
        Alerts::new("srv").mount_retry("/export", 1, Duration::from_millis(200), "refused");
    });
    let tid = rx.recv().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !in_openat(tid) {
        assert!(Instant::now() < deadline, "the writer never reached open");
        std::thread::sleep(Duration::from_millis(5));
    }
    // A reader comes along a little later and takes the line.
    let reader_path = fifo.clone();
    let reader = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        let mut text = String::new();
        std::fs::File::open(&reader_path)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        text
    });

    // SAFETY: the child only writes an alert line (to nowhere) and leaves
    // with _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        alert::set_sink(Sink::Off);
        Alerts::new("child").mount_retry("/export", 1, Duration::from_millis(200), "refused");
        // SAFETY: leaves the child without running the parent's destructors.
        unsafe { libc::_exit(0) };
    }
    let verdict = wait_for(pid, Duration::from_secs(20));
    writer.join().unwrap();
    let seen = reader.join().unwrap();
    let _ = std::fs::remove_dir_all(Path::new(&dir));
    assert_eq!(
        verdict,
        Some(0),
        "the child hung at its first alert line (killed after 20 s) or failed"
    );
    assert!(
        seen.contains("srv: MOUNT /export failed (refused)"),
        "the parent's line reached the log: {seen:?}"
    );
}
