//! NFSv3 locks through the server's lock manager (NLM v4) against a real
//! NFS-Ganesha started with `Enable_NLM` and rpc.statd
//! (`DNFS_TEST_URL_NLM`, which `scripts/test.sh` exports as root; the
//! tests skip without it). The lock manager's port comes from the
//! server's portmapper (GETPORT), as on a filer.
//!
//! The reclaim tests start an NLM server of their own (`OwnGanesha`, in
//! network namespace `nlm-reclaim`, 10.231.202.0/30, unless
//! `DNFS_TEST_NLM_RECLAIM_NETNS` / `DNFS_TEST_NLM_RECLAIM_NET` say
//! otherwise), SIGKILL it and restart it. The paths tests start one reached
//! over two paths (`DNFS_NLM_PATHS=2`: namespace `nlm-paths`, 10.231.203.0/30
//! and .4/30, unless `DNFS_TEST_NLM_PATHS_NETNS` / `DNFS_TEST_NLM_PATHS_NET`
//! say otherwise) and black-hole the first.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

#[path = "common/in_child.rs"]
mod in_child;

use directnfs::{Client, NlmOwner};
use directnfs_testkit::ganesha::OwnGanesha;
use in_child::in_child;

fn url() -> Option<String> {
    directnfs_testkit::server::url_nlm("nlm")
}

/// A fresh file of its own for each test.
fn file(client: &Client, name: &str) -> directnfs::File {
    let path = format!("/nlm-{name}-{}", std::process::id());
    let _ = client.remove(&path);
    client.create(&path).unwrap()
}

#[test]
fn nlm_locks_of_two_owners_exclude_each_other_and_test_names_the_holder() {
    let Some(url) = url() else { return };
    let client = Client::connect(&url).unwrap();
    let f = file(&client, "two");
    let fh = f.handle();
    let (a, b) = (NlmOwner::process_of(4001), NlmOwner::process_of(4002));
    client.nlm_lock(&fh, &a, (0, 100), true, false).unwrap();
    let e = client.nlm_lock(&fh, &b, (50, 10), true, false).unwrap_err();
    assert_eq!(e.errno(), libc::EAGAIN, "{e}");
    assert!(directnfs::lock_should_wait(&e));
    let (conflict, svid) = client.nlm_test(&fh, &b, (50, 10), false).unwrap().unwrap();
    assert_eq!(
        (conflict.offset, conflict.len, conflict.exclusive),
        (0, 100, true)
    );
    assert_eq!(svid, 4001);
    // Its own lock never conflicts; bytes beyond the range are free.
    assert_eq!(client.nlm_test(&fh, &a, (0, 100), true).unwrap(), None);
    client.nlm_lock(&fh, &b, (200, 10), true, false).unwrap();
    client.nlm_unlock(&fh, &a, (0, 0)).unwrap();
    client.nlm_lock(&fh, &b, (50, 10), true, false).unwrap();
    client.nlm_unlock(&fh, &b, (0, 0)).unwrap();
    // Shared locks of two owners coexist.
    client.nlm_lock(&fh, &a, (0, 0), false, false).unwrap();
    client.nlm_lock(&fh, &b, (0, 0), false, false).unwrap();
    client.nlm_unlock(&fh, &a, (0, 0)).unwrap();
    client.nlm_unlock(&fh, &b, (0, 0)).unwrap();
}

#[test]
fn a_blocking_nlm_lock_waits_for_the_holders_unlock() {
    let Some(url) = url() else { return };
    let client = Client::connect(&url).unwrap();
    let f = file(&client, "wait");
    let fh = f.handle();
    let (a, b) = (NlmOwner::process_of(4101), NlmOwner::process_of(4102));
    client.nlm_lock(&fh, &a, (0, 0), true, false).unwrap();
    let (c2, fh2) = (client.clone(), fh);
    let started = Instant::now();
    let waiter = std::thread::spawn(move || {
        c2.nlm_lock(&fh2, &b, (0, 1), true, true).unwrap();
        started.elapsed()
    });
    std::thread::sleep(Duration::from_millis(500));
    client.nlm_unlock(&fh, &a, (0, 0)).unwrap();
    let waited = waiter.join().unwrap();
    assert!(waited >= Duration::from_millis(500), "{waited:?}");
    client
        .nlm_unlock(&fh, &NlmOwner::process_of(4102), (0, 0))
        .unwrap();
}

#[test]
fn nlm_lock_without_a_lock_manager_is_enolck_naming_nolock() {
    // The main test server runs without NLM (scripts/test.sh); only
    // meaningful beside an NLM server, the topology test.sh sets up.
    let Some(_) = url() else { return };
    let Some(main) = directnfs_testkit::server::url("nlm") else {
        return;
    };
    let client = Client::connect(&main).unwrap();
    let f = file(&client, "none");
    let e = client
        .nlm_lock(&f.handle(), &NlmOwner::process(), (0, 0), true, false)
        .unwrap_err();
    assert_eq!(e.errno(), libc::ENOLCK, "{e}");
    let text = e.to_string();
    assert!(
        text.contains("nolock") && text.contains("local_lock="),
        "{text}"
    );
}

/// An NLM server of the test's own (see the module doc), up with no grace
/// period; `None` (skipped, loudly) where the NLM tests do not run.
fn own_nlm_server(name: &str) -> Option<OwnGanesha> {
    url()?;
    let netns =
        std::env::var("DNFS_TEST_NLM_RECLAIM_NETNS").unwrap_or_else(|_| "nlm-reclaim".into());
    let net = std::env::var("DNFS_TEST_NLM_RECLAIM_NET").unwrap_or_else(|_| "10.231.202".into());
    let server = OwnGanesha::start(
        name,
        &[
            ("DNFS_NLM", "1"),
            ("DNFS_NLM_NETNS", &netns),
            ("DNFS_NLM_NET", &net),
            ("DNFS_NFS4", "1"),
            ("DNFS_NFS4_GRACE", "0"),
        ],
    )
    .unwrap();
    Some(server)
}

/// SIGKILLs the server and starts it again after 2 s with `grace` seconds
/// of grace period (0: none).
fn kill_and_restart(server: &OwnGanesha, grace: u32) {
    let grace = grace.to_string();
    let mut restart = server
        .spawn_restart(&["--kill", "--down", "2", "--grace", &grace])
        .unwrap();
    assert!(restart.wait().unwrap().success(), "nfs-server.sh restart");
}

/// In a child process of its own (another lock owner, with a lock manager
/// connection and lock table of its own: the other host), a non-blocking
/// exclusive lock of byte 0 of `fh`, asked again while the server is in
/// its grace period (at most 60 s); returns the errno (0: granted, then
/// released).
fn other_host_tries(client: &Client, fh: &directnfs::Handle) -> i32 {
    let (mut fds, fh) = ([0; 2], *fh);
    // SAFETY: `fds` has room for the two descriptors pipe writes.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    in_child(client, move |c| {
        let owner = NlmOwner::process();
        let deadline = Instant::now() + Duration::from_secs(60);
        let errno = loop {
            match c.nlm_lock(&fh, &owner, (0, 1), true, false) {
                Ok(()) => {
                    c.nlm_unlock(&fh, &owner, (0, 1))
                        .map_err(|e| format!("unlock: {e}"))?;
                    break 0;
                }
                Err(e) if e.to_string().contains("GRACE") && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(500));
                }
                Err(e) => break e.errno(),
            }
        };
        // SAFETY: writes 4 live bytes to our pipe.
        unsafe { libc::write(fds[1], errno.to_ne_bytes().as_ptr().cast(), 4) };
        Ok(())
    });
    let mut b = [0u8; 4];
    // SAFETY: reads into a live buffer; closes our pipe.
    unsafe {
        assert_eq!(libc::read(fds[0], b.as_mut_ptr().cast(), 4), 4);
        libc::close(fds[0]);
        libc::close(fds[1]);
    }
    i32::from_ne_bytes(b)
}

#[test]
fn nlm_locks_are_reclaimed_after_a_server_restart_and_another_host_stays_refused() {
    let Some(server) = own_nlm_server("nlm-reclaim") else {
        return;
    };
    let a = Client::connect(server.url()).unwrap();
    let f = file(&a, "reclaim");
    let fh = f.handle();
    let owner = NlmOwner::process_of(4301);
    a.nlm_lock(&fh, &owner, (0, 0), true, false).unwrap();
    // A shared range of another file, reclaimed too.
    let g = file(&a, "reclaim-shared");
    a.nlm_lock(&g.handle(), &owner, (10, 10), false, false)
        .unwrap();
    assert_eq!(
        other_host_tries(&a, &fh),
        libc::EAGAIN,
        "before the restart"
    );
    kill_and_restart(&server, 8);
    // The other host waits out the grace period; by then A reclaimed.
    assert_eq!(
        other_host_tries(&a, &fh),
        libc::EAGAIN,
        "after the restart the other host got A's lock: not reclaimed"
    );
    assert!(
        directnfs::alert::recent()
            .iter()
            .any(|l| l.contains("2 NLM lock(s) reclaimed after a server restart")),
        "{:?}",
        directnfs::alert::recent()
    );
    let (conflict, svid) = a
        .nlm_test(&g.handle(), &NlmOwner::process_of(4302), (0, 0), true)
        .unwrap()
        .expect("the shared range is held again");
    assert_eq!((conflict.offset, conflict.len, svid), (10, 10, 4301));
    // A still holds it: its unlock is clean, then the other host gets it.
    a.nlm_unlock(&fh, &owner, (0, 0)).unwrap();
    a.nlm_unlock(&g.handle(), &owner, (0, 0)).unwrap();
    assert_eq!(other_host_tries(&a, &fh), 0);
}

#[test]
fn an_nlm_lock_forgotten_by_a_graceless_restart_is_reported_lost_with_eio() {
    let Some(server) = own_nlm_server("nlm-reclaim") else {
        return;
    };
    let a = Client::connect(server.url()).unwrap();
    let f = file(&a, "lost");
    let fh = f.handle();
    let owner = NlmOwner::process_of(4401);
    a.nlm_lock(&fh, &owner, (0, 100), true, false).unwrap();
    // No grace period: the server forgot the lock and lets anyone take
    // it at once; the client must not take it back as if nothing had
    // happened.
    kill_and_restart(&server, 0);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !directnfs::alert::recent()
        .iter()
        .any(|l| l.contains("NLM lock LOST"))
    {
        assert!(
            Instant::now() < deadline,
            "no lost-lock alert: {:?}",
            directnfs::alert::recent()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let line = directnfs::alert::recent()
        .into_iter()
        .find(|l| l.contains("NLM lock LOST"))
        .unwrap();
    assert!(line.contains("bytes 0..100, exclusive"), "{line}");
    // The owner's next lock on the file fails with EIO, and so does its
    // unlock (which acknowledges); after that the file is usable again.
    let e = a.nlm_lock(&fh, &owner, (0, 1), true, false).unwrap_err();
    assert_eq!(e.errno(), libc::EIO, "{e}");
    let e = a.nlm_unlock(&fh, &owner, (0, 0)).unwrap_err();
    assert_eq!(e.errno(), libc::EIO, "{e}");
    assert!(e.to_string().contains("server restart"), "{e}");
    a.nlm_unlock(&fh, &owner, (0, 0)).unwrap();
    a.nlm_lock(&fh, &owner, (0, 1), true, false).unwrap();
    a.nlm_unlock(&fh, &owner, (0, 0)).unwrap();
}

#[test]
fn a_broken_lock_manager_connection_without_a_restart_keeps_every_lock() {
    let Some(server) = own_nlm_server("nlm-reclaim") else {
        return;
    };
    let a = Client::connect(server.url()).unwrap();
    let f = file(&a, "cut");
    let fh = f.handle();
    let owner = NlmOwner::process_of(4501);
    a.nlm_lock(&fh, &owner, (0, 0), true, false).unwrap();
    let host = server
        .url()
        .trim_start_matches("nfs://")
        .split('/')
        .next()
        .unwrap()
        .to_string();
    // The kernel ends this host's TCP connections to the server's lock
    // manager (port 32803, nfs-server.sh's default), as a network fault
    // would; the server keeps running and keeps the lock.
    let out = std::process::Command::new("ss")
        .args(["-K", "dst", &host, "dport", "=", "32803"])
        .output()
        .unwrap();
    assert!(out.status.success(), "ss -K: {out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&host),
        "ss -K ended no connection: {out:?}"
    );
    std::thread::sleep(Duration::from_secs(3));
    let lines = directnfs::alert::recent();
    assert!(
        !lines
            .iter()
            .any(|l| l.contains("NLM lock LOST") && l.contains("svid 4501")),
        "{lines:?}"
    );
    assert_eq!(other_host_tries(&a, &fh), libc::EAGAIN);
    a.nlm_unlock(&fh, &owner, (0, 0)).unwrap();
    assert_eq!(other_host_tries(&a, &fh), 0);
}

/// An NLM server of the test's own reached over two paths (network
/// namespace `nlm-paths`, path 1 10.231.203.1 <-> .2, path 2 .5 <-> .6,
/// unless `DNFS_TEST_NLM_PATHS_NETNS` / `DNFS_TEST_NLM_PATHS_NET` say
/// otherwise), and its `nfs-server.sh status` lines.
fn own_two_path_nlm_server(by_address: bool) -> Option<(OwnGanesha, Vec<(String, String)>)> {
    url()?;
    let netns = std::env::var("DNFS_TEST_NLM_PATHS_NETNS").unwrap_or_else(|_| "nlm-paths".into());
    let net = std::env::var("DNFS_TEST_NLM_PATHS_NET").unwrap_or_else(|_| "10.231.203".into());
    let server = OwnGanesha::start(
        "nlm-paths",
        &[
            ("DNFS_NLM", "1"),
            ("DNFS_NLM_NETNS", &netns),
            ("DNFS_NLM_NET", &net),
            ("DNFS_NLM_PATHS", "2"),
            // Graceless: locks granted at once after the start.
            ("DNFS_NFS4", "1"),
            ("DNFS_NFS4_GRACE", "0"),
            ("DNFS_NLM_BY_ADDRESS", if by_address { "1" } else { "0" }),
        ],
    )
    .unwrap();
    let status = server.status().unwrap();
    Some((server, status))
}

/// A black hole on one path of [`own_two_path_nlm_server`] (a tbf whose
/// burst is smaller than any packet, on both ends, as `netns.sh
/// blackhole`): the link stays up, every packet is dropped, connects and
/// calls hang. Lifted when dropped.
struct BlackHole {
    netns: String,
    host_if: String,
    server_if: String,
}

impl BlackHole {
    const TBF: [&'static str; 7] = ["tbf", "rate", "8bit", "burst", "64", "limit", "64"];

    fn on(status: &[(String, String)], path: u32) -> Self {
        let get = |k: &str| {
            status
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.clone())
                .unwrap_or_else(|| panic!("nfs-server.sh status has no {k}: {status:?}"))
        };
        let hole = BlackHole {
            netns: get("netns"),
            host_if: get(&format!("path{path}_host_if")),
            server_if: get(&format!("path{path}_server_if")),
        };
        let tbf = &Self::TBF[..];
        run(&[
            &["tc", "qdisc", "replace", "dev", &hole.host_if, "root"],
            tbf,
        ]
        .concat());
        run(&[
            &["ip", "netns", "exec", &hole.netns],
            &["tc", "qdisc", "replace", "dev", &hole.server_if, "root"][..],
            tbf,
        ]
        .concat());
        hole
    }
}

impl Drop for BlackHole {
    fn drop(&mut self) {
        let _ = std::process::Command::new("tc")
            .args(["qdisc", "del", "dev", &self.host_if, "root"])
            .status();
        let _ = std::process::Command::new("ip")
            .args(["netns", "exec", &self.netns, "tc", "qdisc", "del", "dev"])
            .args([&self.server_if, "root"])
            .status();
    }
}

fn run(args: &[&str]) {
    let out = std::process::Command::new(args[0])
        .args(&args[1..])
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {out:?}");
}

/// A mount of both paths of [`own_two_path_nlm_server`], `timeo` 2 s.
fn mount_two_paths(status: &[(String, String)]) -> Client {
    let get = |k: &str| {
        status
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("nfs-server.sh status has no {k}: {status:?}"))
    };
    let mut options = directnfs::config::MountOptions::default();
    options.nfs_port = Some(get("nfs_port").parse().unwrap());
    options.mount_port = Some(get("mnt_port").parse().unwrap());
    // A dead path is found after 2 s (NFS and NLM calls alike).
    options.set("timeo", "20").unwrap();
    let path = |k: u32| directnfs::PathSpec {
        local: Some(get(&format!("path{k}_host")).parse().unwrap()),
        server: get(&format!("path{k}_server")),
    };
    let export = get("export_path");
    let target = directnfs::Target {
        name: "nlm-paths".into(),
        paths: vec![path(1), path(2)],
        export: Some(export.clone()),
        path: export,
        options,
    };
    Client::mount(&target).unwrap()
}

#[test]
fn nlm_calls_go_over_another_path_when_theirs_is_blackholed_and_held_locks_stay_held() {
    let Some((server, status)) = own_two_path_nlm_server(false) else {
        return;
    };
    let a = mount_two_paths(&status);
    let f = file(&a, "paths");
    let fh = f.handle();
    let (owner, other) = (NlmOwner::process_of(4601), NlmOwner::process_of(4602));
    // Over path 1, the first.
    a.nlm_lock(&fh, &owner, (0, 0), true, false).unwrap();
    // This mount's alerts about reclaims and losses (the alert log is the
    // process's: other tests' lines name their own servers and owners).
    let recoveries = || {
        directnfs::alert::recent()
            .into_iter()
            .filter(|l| {
                (l.contains("NLM lock LOST") && l.contains("svid 460"))
                    || (l.contains("reclaimed") && l.contains("nlm-paths"))
            })
            .collect::<Vec<_>>()
    };
    let before = recoveries();
    let hole = BlackHole::on(&status, 1);
    let t0 = Instant::now();
    // (a) The server still holds the lock: another owner's TEST, sent
    // over path 2, names its holder.
    let (conflict, svid) = a
        .nlm_test(&fh, &other, (0, 1), true)
        .unwrap()
        .expect("the lock is still held after its path died");
    assert_eq!((conflict.exclusive, svid), (true, 4601));
    // (b) The unlock goes over path 2 and really releases it.
    a.nlm_unlock(&fh, &owner, (0, 0)).unwrap();
    assert_eq!(a.nlm_test(&fh, &other, (0, 1), true).unwrap(), None);
    // (c) A new lock, and a blocking lock that waits for its release.
    a.nlm_lock(&fh, &other, (0, 0), true, false).unwrap();
    let (a2, fh2, owner2) = (a.clone(), fh, owner.clone());
    let waiter = std::thread::spawn(move || {
        let t = Instant::now();
        a2.nlm_lock(&fh2, &owner2, (0, 1), true, true).unwrap();
        t.elapsed()
    });
    std::thread::sleep(Duration::from_millis(500));
    a.nlm_unlock(&fh, &other, (0, 0)).unwrap();
    let waited = waiter.join().unwrap();
    assert!(waited >= Duration::from_millis(400), "{waited:?}");
    let (_, svid) = a.nlm_test(&fh, &other, (0, 1), true).unwrap().unwrap();
    assert_eq!(svid, 4601);
    // The reclaim thread's probe broke on path 1 too: its check over
    // path 2 found the lock still held (no restart, nothing lost).
    std::thread::sleep(Duration::from_secs(3));
    let after = recoveries();
    assert!(after.iter().all(|l| before.contains(l)), "{after:?}");
    a.nlm_unlock(&fh, &owner, (0, 0)).unwrap();
    assert_eq!(a.nlm_test(&fh, &other, (0, 1), true).unwrap(), None);
    eprintln!(
        "nlm over a blackholed path: every call done {:.1}s after the black hole",
        t0.elapsed().as_secs_f64()
    );
    drop(hole);
    drop(f);
    drop(a);
    drop(server);
}

#[test]
fn an_nlm_lock_that_cannot_move_paths_is_reported_lost_not_released_silently() {
    // Ganesha's default: lock clients keyed by the caller's address, so
    // the calls that moved to path 2 (another local address) are another
    // client's, and an unlock from there would release nothing.
    let Some((server, status)) = own_two_path_nlm_server(true) else {
        return;
    };
    let a = mount_two_paths(&status);
    let f = file(&a, "by-address");
    let fh = f.handle();
    let owner = NlmOwner::process_of(4611);
    a.nlm_lock(&fh, &owner, (0, 0), true, false).unwrap();
    let hole = BlackHole::on(&status, 1);
    let e = a.nlm_unlock(&fh, &owner, (0, 0)).unwrap_err();
    assert_eq!(e.errno(), libc::EIO, "{e}");
    assert!(e.to_string().contains("NSM_Use_Caller_Name"), "{e}");
    assert!(
        directnfs::alert::recent()
            .iter()
            .any(|l| l.contains("NLM lock LOST") && l.contains("svid 4611")),
        "{:?}",
        directnfs::alert::recent()
    );
    drop(hole);
    drop(f);
    drop(a);
    drop(server);
}
