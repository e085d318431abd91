//! Every thread the client starts has every signal blocked, whichever
//! thread of the program made it start them: a signal sent to the process
//! (PostgreSQL's SIGURG latch wake-ups, its postmaster's SIGCHLD and
//! SIGUSR1, a program's SIGALRM) must reach the program's own threads,
//! never run its handler in ours or be lost there. Checked in
//! `/proc/self/task/*/status` (`SigBlk`) for the transport's threads, the
//! statistics endpoint's and, on NFSv4.1, the lease renewal's.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

/// Signals a host program relies on receiving in its own threads.
const HOST_SIGNALS: [(i32, &str); 8] = [
    (libc::SIGHUP, "SIGHUP"),
    (libc::SIGINT, "SIGINT"),
    (libc::SIGUSR1, "SIGUSR1"),
    (libc::SIGUSR2, "SIGUSR2"),
    (libc::SIGALRM, "SIGALRM"),
    (libc::SIGTERM, "SIGTERM"),
    (libc::SIGCHLD, "SIGCHLD"),
    (libc::SIGURG, "SIGURG"),
];

#[test]
fn the_clients_threads_block_every_signal_of_the_program() {
    // Publishing on, in a run directory of this test's own.
    let run = std::env::temp_dir().join(format!("dnfs-thread-signals-{}", std::process::id()));
    std::fs::create_dir_all(&run).unwrap();
    std::env::set_var("DIRECTNFS_RUN_DIR", &run);
    std::env::remove_var("DIRECTNFS_STATS");

    let v3 = directnfs::Client::connect(&common::url_with("")).expect("connect");
    v3.metadata("/").expect("a call on NFSv3");
    let mut expected = vec!["dnfs-stats", "dnfs-maint", "dnfs-rx"];
    let v41 = directnfs_testkit::server::url_v41("thread_signals").map(|url| {
        let c = directnfs::Client::connect(&url).expect("connect NFSv4.1");
        c.metadata("/").expect("a call on NFSv4.1");
        c
    });
    if v41.is_some() {
        expected.push("dnfs-v41-renew");
    }

    // A thread names itself from inside, so right after the client is made
    // its name may not be there yet: wait (bounded) until every expected
    // name shows, then check them all.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let threads = loop {
        let threads = directnfs_testkit::threads::named("dnfs-");
        let all_named = expected
            .iter()
            .all(|name| threads.iter().any(|t| t.name == *name));
        if all_named || std::time::Instant::now() >= deadline {
            break threads;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    for name in expected {
        assert!(
            threads.iter().any(|t| t.name == name),
            "no thread {name}: {threads:?}"
        );
    }
    for t in &threads {
        for (sig, sig_name) in HOST_SIGNALS {
            assert!(
                t.blocks(sig),
                "thread {} takes {sig_name} (SigBlk {:016x})",
                t.name,
                t.blocked
            );
        }
    }
    drop((v3, v41));
    let _ = std::fs::remove_dir_all(&run);
}
