//! The client against a broken environment rather than a broken server:
//! no portmapper, a portmapper that does not know the program, a host name
//! that does not resolve, a process not allowed to bind a privileged port.
//!
//! | fault | expected client behaviour | test |
//! |---|---|---|
//! | nothing listening on port 111 (no rpcbind) | `Connect` (ECONNREFUSED) once `mnt_timeout` has passed (asked again meanwhile), naming the portmapper and `nfsport=`/`mountport=` | `portmapper_not_listening_*` |
//! | the portmapper has no TCP registration for NFS / MOUNT v3 | `Connect` (ECONNREFUSED) once `mnt_timeout` has passed (asked again meanwhile: a server taking over registers late), naming the program; for MOUNT also that an NFSv4-only server has none (`vers=4.1`) | `portmapper_without_*` |
//! | the registration appears 1 s after the client started | the mount waits for it and succeeds | `portmapper_that_registers_late_*` |
//! | the portmapper never answers | `Connect` (ETIMEDOUT) within `mnt_timeout` per question | `portmapper_that_never_answers_*` |
//! | the portmapper refuses GETPORT (PROG_UNAVAIL) | `Rpc` (EIO) naming the portmapper | `portmapper_refusing_*` |
//! | (control) a working portmapper | ports found, mounted, data read | `portmapper_that_knows_*` |
//! | a host name that does not exist (`*.invalid`: NXDOMAIN from the DNS server) | `Connect` at once, naming the host and the resolver's message | `unresolvable_host_name_*` |
//! | no DNS server reachable | `Connect` at once, naming the host | `host_name_with_no_dns_server_reachable_*` |
//! | `resvport` without the privilege to bind below 1024 | connects from an ordinary port, with one warning per connection naming `resvport` | `resvport_falls_back_*`, `resvport_binds_*` (control) |
//!
//! The portmapper and DNS tests run in a network namespace of their own
//! (made for the test's thread with `unshare(CLONE_NEWNET)`; threads it
//! starts inherit it), holding only a loopback interface: port 111 there
//! is ours whatever runs on the machine (an rpcbind for NFS-Ganesha), and
//! a DNS question cannot leave the namespace — the DNS server of
//! `/etc/resolv.conf` is answered by a fake one on the namespace's
//! loopback. Making a namespace needs root (CAP_SYS_ADMIN); without it
//! those tests print SKIPPED and pass.

// Test helpers panic on failure: that is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use directnfs_testkit::hostile as harness;

use std::io::ErrorKind;
use std::net::{IpAddr, UdpSocket};
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use directnfs::{Client, Error};
use directnfs_wire::rpc::{AcceptStat, AcceptedReply};

use harness::capture;
use harness::watch::{assert_no_internal_panic, within};
use harness::{pattern_at, Fault, HostileServer, Options, Plan, Proc, EXPORT, FILE};

/// Soft mount, 1 s per attempt, and 1 s for the mount (`mnt_timeout`).
const SOFT: &str = "timeo=10&retrans=1&soft&connections=1&mnt_timeout=1";
/// Hard deadline for one connect.
const LIMIT: Duration = Duration::from_secs(10);

fn connect(url: &str) -> (directnfs::Result<Client>, Duration) {
    let url = url.to_string();
    within("connect", LIMIT, move || Client::connect(&url))
}

// ---------------------------------------------------------------------------
// A network namespace of the test's own

/// Runs `f` on a thread in a new network namespace whose loopback is up.
/// `None` (after printing SKIPPED) when this process may not make one.
fn in_fresh_netns<T, F>(what: &str, f: F) -> Option<T>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let (tx, rx) = mpsc::channel();
    let name = what.to_string();
    let thread = std::thread::Builder::new()
        .name(format!("netns: {what}"))
        .spawn(move || {
            // SAFETY: unshare takes no pointers; CLONE_NEWNET moves only
            // this thread (and threads it starts later) to a new namespace.
            if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                let e = std::io::Error::last_os_error();
                directnfs_testkit::server::skipped(
                    &name,
                    &format!("cannot make a network namespace ({e}); needs root"),
                );
                let _ = tx.send(None);
                return;
            }
            // A child spawned from this thread is in its namespace.
            ip(&["link", "set", "lo", "up"]);
            let _ = tx.send(Some(f()));
        })
        .expect("spawn");
    let r = rx.recv();
    let _ = thread.join().map_err(std::panic::resume_unwind);
    r.expect("netns thread ended without a result")
}

/// Runs `ip ARGS` (in the calling thread's network namespace).
fn ip(args: &[&str]) {
    let out = Command::new("ip")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run ip {args:?}: {e} (iproute2 needed)"));
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

// ---------------------------------------------------------------------------
// The portmapper

#[test]
fn portmapper_not_listening_fails_connect_after_mnt_timeout_naming_it() {
    in_fresh_netns("portmapper_not_listening", || {
        // Nothing listens on 127.0.0.1:111 in this namespace.
        let (r, t) = connect(&format!("nfs://127.0.0.1{EXPORT}{FILE}?{SOFT}"));
        let e = r.unwrap_err();
        assert!(matches!(e, Error::Connect { .. }), "{e:?}");
        assert_eq!(e.errno(), libc::ECONNREFUSED, "{e}");
        assert_eq!(e.kind(), ErrorKind::ConnectionRefused);
        let msg = e.to_string();
        eprintln!("{msg}");
        for needle in [
            "127.0.0.1:111",
            "portmapper",
            "NFS v3",
            "nfsport=",
            "mnt_timeout is 1 s",
        ] {
            assert!(msg.contains(needle), "{needle:?} missing from: {msg}");
        }
        assert!(t >= Duration::from_millis(900), "gave up early: {t:?}");
        assert!(t < Duration::from_secs(3), "took {t:?}");
        // The same for the MOUNT port when only the NFS port is given.
        let (r, _) = connect(&format!(
            "nfs://127.0.0.1{EXPORT}{FILE}?nfsport=2049&{SOFT}"
        ));
        let msg = r.unwrap_err().to_string();
        for needle in ["127.0.0.1:111", "portmapper", "MOUNT v3", "mountport="] {
            assert!(msg.contains(needle), "{needle:?} missing from: {msg}");
        }
    });
    assert_no_internal_panic();
}

/// A hostile server on port 111 of the namespace: portmapper, MOUNT and
/// NFS on one port.
fn portmapper(plan: Plan) -> HostileServer {
    let opts = Options {
        port: 111,
        ..Options::default()
    };
    HostileServer::with(opts, plan)
}

#[test]
fn portmapper_that_knows_the_programs_is_used_to_find_the_ports() {
    in_fresh_netns("portmapper_that_knows", || {
        let server = portmapper(Plan::none());
        let (r, _) = connect(&format!("nfs://127.0.0.1{EXPORT}{FILE}?{SOFT}"));
        let client = r.unwrap_or_else(|e| panic!("mount via the portmapper failed: {e}"));
        assert_eq!(server.count(Proc::GETPORT), 2, "NFS and MOUNT asked");
        let c = client.clone();
        let file = within("open", LIMIT, move || c.open(FILE)).0.unwrap();
        let f = file.clone();
        let (r, _) = within("read", LIMIT, move || {
            let mut b = vec![0u8; 4096];
            f.read_exact_at(&mut b, 8192).map(|()| b)
        });
        assert!(r.unwrap() == pattern_at(8192, 4096));
    });
    assert_no_internal_panic();
}

#[test]
fn portmapper_without_the_program_registered_fails_connect_naming_it() {
    in_fresh_netns("portmapper_without_registration", || {
        let server = portmapper(Plan::always(Proc::GETPORT, Fault::Getport(0)));
        let (r, t) = connect(&format!("nfs://127.0.0.1{EXPORT}{FILE}?{SOFT}"));
        let e = r.unwrap_err();
        assert!(matches!(e, Error::Connect { .. }), "{e:?}");
        assert_eq!(e.errno(), libc::ECONNREFUSED, "{e}");
        let msg = e.to_string();
        eprintln!("{msg}");
        for needle in [
            "portmapper",
            "not registered",
            "NFS v3 (100003)",
            "nfsport=",
        ] {
            assert!(msg.contains(needle), "{needle:?} missing from: {msg}");
        }
        assert!(!msg.contains("vers=4.1"), "NFS itself missing: {msg}");
        assert!(t >= Duration::from_millis(900), "gave up early: {t:?}");
        assert!(t < Duration::from_secs(3), "took {t:?}");
        // Asked again within mnt_timeout (pauses of 0.25, 0.5 s, ...).
        assert!(server.count(Proc::GETPORT) >= 2, "not asked again");
        assert_eq!(server.count(Proc::MNT), 0);

        // MOUNT not registered (NFS port given).
        let p = server.port();
        let (r, _) = connect(&format!("nfs://127.0.0.1{EXPORT}{FILE}?nfsport={p}&{SOFT}"));
        let msg = r.unwrap_err().to_string();
        // An NFSv4-only server has no MOUNT: the message says what to set.
        for needle in [
            "not registered",
            "MOUNT v3 (100005)",
            "mountport=",
            "vers=4.1",
        ] {
            assert!(msg.contains(needle), "{needle:?} missing from: {msg}");
        }
    });
    assert_no_internal_panic();
}

#[test]
fn portmapper_that_registers_late_is_waited_for() {
    in_fresh_netns("portmapper_registers_late", || {
        let server = portmapper(Plan::always(Proc::GETPORT, Fault::Getport(0)));
        let url = format!("nfs://127.0.0.1{EXPORT}{FILE}?timeo=10&retrans=1&soft&mnt_timeout=20");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(Client::connect(&url));
        });
        std::thread::sleep(Duration::from_secs(1));
        assert!(server.count(Proc::GETPORT) >= 1);
        server.set_plan(Plan::none());
        let client = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("mount did not finish")
            .unwrap_or_else(|e| panic!("mount did not wait for the registration: {e}"));
        assert_eq!(client.export(), EXPORT);
        assert_eq!(server.count(Proc::MNT), 1);
    });
    assert_no_internal_panic();
}

#[test]
fn portmapper_that_never_answers_fails_connect_within_mnt_timeout() {
    in_fresh_netns("portmapper_silent", || {
        let server = portmapper(Plan::always(Proc::GETPORT, Fault::Silent));
        let (r, t) = connect(&format!("nfs://127.0.0.1{EXPORT}{FILE}?{SOFT}"));
        let e = r.unwrap_err();
        assert!(matches!(e, Error::Connect { .. }), "{e:?}");
        assert_eq!(e.errno(), libc::ETIMEDOUT, "{e}");
        assert_eq!(e.kind(), ErrorKind::TimedOut);
        assert!(e.to_string().contains("portmapper"), "{e}");
        // mnt_timeout=1: one GETPORT, 1 s (a server that accepted the
        // connection and stays silent is not asked again).
        assert!(t >= Duration::from_millis(900), "took only {t:?}");
        assert!(t < Duration::from_secs(3), "took {t:?}");
        assert_eq!(server.count(Proc::GETPORT), 1);
    });
    assert_no_internal_panic();
}

#[test]
fn portmapper_refusing_getport_fails_with_an_rpc_error_naming_it() {
    in_fresh_netns("portmapper_refusing", || {
        let _server = portmapper(Plan::always(
            Proc::GETPORT,
            Fault::Accepted(AcceptedReply::Error(AcceptStat::PROG_UNAVAIL)),
        ));
        let (r, _) = connect(&format!("nfs://127.0.0.1{EXPORT}{FILE}?{SOFT}"));
        let e = r.unwrap_err();
        assert!(matches!(e, Error::Rpc { .. }), "{e:?}");
        assert_eq!(e.errno(), libc::EIO);
        let msg = e.to_string();
        eprintln!("{msg}");
        for needle in ["GETPORT", "127.0.0.1:111", "portmapper", "PROG_UNAVAIL"] {
            assert!(msg.contains(needle), "{needle:?} missing from: {msg}");
        }
    });
    assert_no_internal_panic();
}

// ---------------------------------------------------------------------------
// Host names

/// The IPv4 name servers of /etc/resolv.conf (what getaddrinfo asks).
fn name_servers() -> Vec<IpAddr> {
    std::fs::read_to_string("/etc/resolv.conf")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().strip_prefix("nameserver"))
        .filter_map(|a| a.trim().parse().ok())
        .collect()
}

/// A DNS server on `addr:53` answering every question NXDOMAIN; returns
/// how many questions it answered.
fn nxdomain_server(addr: IpAddr) -> std::sync::Arc<std::sync::atomic::AtomicUsize> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let sock = UdpSocket::bind((addr, 53)).expect("bind the fake DNS server");
    sock.set_read_timeout(Some(Duration::from_millis(200)))
        .expect("timeout");
    let answered = std::sync::Arc::new(AtomicUsize::new(0));
    let count = std::sync::Arc::clone(&answered);
    std::thread::spawn(move || {
        let mut buf = [0u8; 512];
        let end = Instant::now() + Duration::from_secs(30);
        while Instant::now() < end {
            let Ok((n, from)) = sock.recv_from(&mut buf) else {
                continue;
            };
            if n < 12 {
                continue;
            }
            // Same ID and question; QR, opcode 0, RD copied, RA, RCODE 3
            // (NXDOMAIN); no answers.
            let mut reply = buf[..n].to_vec();
            reply[2] = 0x80 | (buf[2] & 0x01);
            reply[3] = 0x83;
            reply[6..12].fill(0);
            let _ = sock.send_to(&reply, from);
            count.fetch_add(1, Ordering::SeqCst);
        }
    });
    answered
}

#[test]
fn unresolvable_host_name_fails_connect_at_once_naming_it() {
    in_fresh_netns("unresolvable_host_name", || {
        // The resolver's servers, played by one on this namespace's
        // loopback: the question never leaves the namespace.
        let servers: Vec<IpAddr> = name_servers().into_iter().filter(IpAddr::is_ipv4).collect();
        if servers.is_empty() {
            directnfs_testkit::server::skipped(
                "unresolvable_host_name",
                "no IPv4 nameserver in /etc/resolv.conf",
            );
            return;
        }
        let answered: Vec<_> = servers
            .iter()
            .map(|a| {
                if !a.is_loopback() {
                    ip(&["addr", "add", &format!("{a}/32"), "dev", "lo"]);
                }
                nxdomain_server(*a)
            })
            .collect();
        let (r, t) = connect(&format!(
            "nfs://no-such-host.invalid{EXPORT}{FILE}?nfsport=2049&mountport=20048&{SOFT}"
        ));
        let e = r.unwrap_err();
        assert!(matches!(e, Error::Connect { .. }), "{e:?}");
        let msg = e.to_string();
        eprintln!("{msg}");
        assert!(msg.contains("no-such-host.invalid"), "{msg}");
        assert_eq!(e.errno(), libc::EHOSTUNREACH, "{e}");
        assert!(
            msg.contains("lookup") || msg.contains("resolve"),
            "does not say the name did not resolve: {msg}"
        );
        assert!(t < Duration::from_secs(2), "took {t:?}");
        let asked: usize = answered
            .iter()
            .map(|a| a.load(std::sync::atomic::Ordering::SeqCst))
            .sum();
        assert!(asked > 0, "the resolver asked no DNS server (test set-up)");
    });
    assert_no_internal_panic();
}

#[test]
fn host_name_with_no_dns_server_reachable_fails_connect_at_once_naming_it() {
    in_fresh_netns("no_dns_server", || {
        // Only a loopback interface: the name servers cannot be reached.
        let (r, t) = connect(&format!(
            "nfs://no-such-host.invalid{EXPORT}{FILE}?nfsport=2049&mountport=20048&{SOFT}"
        ));
        let e = r.unwrap_err();
        assert!(matches!(e, Error::Connect { .. }), "{e:?}");
        assert!(e.to_string().contains("no-such-host.invalid"), "{e}");
        assert_eq!(e.errno(), libc::EHOSTUNREACH, "{e}");
        assert!(t < Duration::from_secs(5), "took {t:?}");
    });
    assert_no_internal_panic();
}

// ---------------------------------------------------------------------------
// resvport

/// `capget`/`capset` header and data (linux/capability.h, version 3).
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
const CAP_NET_BIND_SERVICE: u32 = 10;

/// Whether the calling thread may bind ports below 1024.
fn can_bind_service() -> bool {
    let mut hdr = CapHeader {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: the header and a two-element data array, as version 3 asks.
    let rc = unsafe { libc::syscall(libc::SYS_capget, &mut hdr, data.as_mut_ptr()) };
    rc == 0 && data[0].effective & (1 << CAP_NET_BIND_SERVICE) != 0
}

/// Drops CAP_NET_BIND_SERVICE from the calling thread (capabilities are
/// per thread; threads it starts afterwards inherit the reduced set).
fn drop_bind_service() {
    let mut hdr = CapHeader {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: as in `can_bind_service`.
    let rc = unsafe { libc::syscall(libc::SYS_capget, &mut hdr, data.as_mut_ptr()) };
    assert_eq!(rc, 0, "capget: {}", std::io::Error::last_os_error());
    data[0].effective &= !(1 << CAP_NET_BIND_SERVICE);
    data[0].permitted &= !(1 << CAP_NET_BIND_SERVICE);
    // SAFETY: as above; capset reads the same structures.
    let rc = unsafe { libc::syscall(libc::SYS_capset, &mut hdr, data.as_ptr()) };
    assert_eq!(rc, 0, "capset: {}", std::io::Error::last_os_error());
    assert!(!can_bind_service());
}

/// Mounts `server` with `resvport` and reads; returns the source ports
/// the server saw.
fn mount_with_resvport(server: &HostileServer) -> Vec<u16> {
    let (r, _) = connect(&server.url(&format!("{SOFT}&resvport")));
    let client = r.unwrap_or_else(|e| panic!("mount with resvport failed: {e}"));
    let file = within("open", LIMIT, move || client.open(FILE)).0.unwrap();
    let (r, _) = within("read", LIMIT, move || {
        let mut b = vec![0u8; 4096];
        file.read_exact_at(&mut b, 0).map(|()| b)
    });
    assert!(r.unwrap() == pattern_at(0, 4096));
    server.peer_ports()
}

#[test]
fn resvport_binds_a_privileged_source_port_when_permitted() {
    if !can_bind_service() {
        directnfs_testkit::server::skipped(
            "resvport_binds_a_privileged_source_port",
            "no CAP_NET_BIND_SERVICE",
        );
        return;
    }
    let server = HostileServer::start(Plan::none());
    let ports = mount_with_resvport(&server);
    // MOUNT (EXPORT, MNT) and the NFS channel: every one below 1024.
    assert!(ports.len() >= 2, "{ports:?}");
    assert!(ports.iter().all(|&p| p < 1024), "{ports:?}");
    assert_no_internal_panic();
}

#[test]
fn resvport_falls_back_to_an_ordinary_port_with_a_warning_when_not_permitted() {
    capture::install();
    let server = HostileServer::start(Plan::none());
    let port = server.port();
    let ports = std::thread::spawn(move || {
        if can_bind_service() {
            drop_bind_service();
        }
        // Not permitted now, root or not: binding port 1023 is EACCES.
        let e = std::net::TcpListener::bind("0.0.0.0:1023").map(|_| ());
        assert_eq!(e.unwrap_err().kind(), ErrorKind::PermissionDenied);
        mount_with_resvport(&server)
    })
    .join()
    .unwrap_or_else(|p| std::panic::resume_unwind(p));
    assert!(ports.len() >= 2, "{ports:?}");
    assert!(ports.iter().all(|&p| p >= 1024), "{ports:?}");
    let warnings = capture::matching(
        tracing::Level::WARN,
        &["resvport", "below 1024", &format!("127.0.0.1:{port}")],
    );
    assert!(
        warnings.len() >= ports.len(),
        "{} connections, {} warnings: {warnings:?}\nall lines: {:?}",
        ports.len(),
        warnings.len(),
        capture::lines()
    );
    assert!(
        warnings[0].contains("CAP_NET_BIND_SERVICE"),
        "the warning does not say how to fix it: {}",
        warnings[0]
    );
    assert_no_internal_panic();
}
