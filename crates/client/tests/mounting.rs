//! Mounting: finding the export, waiting for a server that is not there
//! yet, and the sockets it sets up. The client against the hostile server
//! of `directnfs_testkit::hostile` playing servers whose MOUNT says yes to more than
//! their export, and against a server that is down, comes up late, or
//! refuses.
//!
//! | server | expected client behaviour | test |
//! |---|---|---|
//! | no EXPORT procedure, MNT of any path answers the root handle | the export is `/` (MNT `/` gives the same handle as the longer prefix), the file is below it: `connect`, `create`, `open` and reads work on the file the URL names | `server_that_mounts_any_path_*`, `file_created_through_*` |
//! | the same, with `nfs://host//path` | the export is `/`; only `/` is sent to MNT | `double_slash_*` |
//! | no EXPORT procedure, MNT of a file answers the file's handle | the file's handle is not taken as an export (its GETATTR says it is no directory): the export is the prefix above it | `server_that_mounts_a_file_*` |
//! | EXPORT lists the export (the usual server) | one MNT, of the export listed: nothing more is asked | `listed_export_is_mounted_with_one_mnt` |
//! | nothing listening yet; the server starts 1.5 s after the client | the mount waits (retrying with a growing pause) and succeeds | `mount_waits_for_a_server_that_starts_late` |
//! | nothing listening, ever | `Connect` (ECONNREFUSED) after `mnt_timeout`, naming the address, the server, the attempts and `mnt_timeout` | `unreachable_server_fails_after_mnt_timeout_naming_it` |
//! | a server that answers and refuses (MNT3ERR_ACCES) | fails at once, however long `mnt_timeout` is | `refusal_fails_the_mount_at_once_whatever_mnt_timeout` |
//! | `sockbuf=64k` / `auto` / `prefer:SIZE` (the default `prefer:4m`) | each channel's SO_SNDBUF/SO_RCVBUF is what the kernel made of the request (64 KiB doubled), the autotuned size, or the size where the kernel's maximum allows it and autotuning where it would be capped; shown in the channel statistics (0 once the connection is gone) | `socket_buffers_are_set_as_asked_and_reported` |

// Test helpers panic on failure: that is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use directnfs_testkit::hostile as harness;

use std::net::TcpListener;
use std::time::{Duration, Instant};

use directnfs::{Client, Error};
use directnfs_wire::mount::mountstat3;

use harness::watch::{assert_no_internal_panic, within};
use harness::{pattern_at, Fault, HostileServer, MountAny, Options, Plan, Proc, FILE};

/// Soft mount, 1 s per attempt, one connection.
const SOFT: &str = "timeo=10&retrans=1&soft&connections=1";
/// Hard deadline for a mount that should succeed or fail quickly.
const LIMIT: Duration = Duration::from_secs(10);

fn server(mount_any: MountAny) -> HostileServer {
    let opts = Options {
        mount_any,
        store: true,
        ..Options::default()
    };
    HostileServer::with(opts, Plan::none())
}

fn connect(url: &str) -> Client {
    let u = url.to_string();
    within("connect", LIMIT, move || Client::connect(&u))
        .0
        .unwrap_or_else(|e| panic!("mount of {url} failed: {e}"))
}

/// Reads `len` bytes at `offset` of `path` through `client`.
fn read(client: &Client, path: &str, offset: u64, len: usize) -> Vec<u8> {
    let (c, p) = (client.clone(), path.to_string());
    within("read", LIMIT, move || {
        let mut b = vec![0u8; len];
        c.open(&p)?.read_exact_at(&mut b, offset).map(|()| b)
    })
    .0
    .unwrap_or_else(|e| panic!("read of {path} failed: {e}"))
}

// ---------------------------------------------------------------------------
// Servers whose MNT says yes to any path

#[test]
fn server_that_mounts_any_path_with_its_root_handle_is_mounted_at_root() {
    let server = server(MountAny::RootHandle);
    let client = connect(&server.url_of(FILE, SOFT));
    assert_eq!(client.export(), "/", "the file was taken for the export");
    assert_eq!(client.target_path(), FILE);
    assert!(read(&client, client.target_path(), 8192, 4096) == pattern_at(8192, 4096));
    assert!(client.metadata(FILE).unwrap().is_file());
    // The longest prefix first, then `/`, which gave the same handle.
    assert_eq!(server.mounted_paths(), [FILE, "/"]);
    assert_no_internal_panic();
}

#[test]
fn file_created_through_a_server_that_mounts_any_path_lands_at_its_name() {
    let server = server(MountAny::RootHandle);
    let client = connect(&server.url_of("/f.bin", SOFT));
    assert_eq!(client.export(), "/");
    assert_eq!(client.target_path(), "/f.bin");
    let data = pattern_at(0, 100_000);
    let (c, d) = (client.clone(), data.clone());
    within("create", LIMIT, move || {
        let f = c.create(c.target_path())?;
        f.write_at(&d, 0)?;
        f.fsync()
    })
    .0
    .unwrap();
    assert_eq!(server.created_names(), ["f.bin"]);
    assert!(server.created_content("f.bin").unwrap() == data);
    // A second client opening the same URL finds it (and it is a file).
    let again = connect(&server.url_of("/f.bin", SOFT));
    assert_eq!(again.metadata("/f.bin").unwrap().size, data.len() as u64);
    assert!(read(&again, "/f.bin", 0, data.len()) == data);
    assert_no_internal_panic();
}

#[test]
fn double_slash_names_the_root_export_and_nothing_is_guessed() {
    for mount_any in [MountAny::RootHandle, MountAny::OwnHandle] {
        let server = server(mount_any);
        let client = connect(&server.url_of(&format!("/{FILE}"), SOFT));
        assert_eq!(client.export(), "/", "{mount_any:?}");
        assert_eq!(client.target_path(), FILE, "{mount_any:?}");
        assert_eq!(server.mounted_paths(), ["/"], "{mount_any:?}");
        assert_eq!(server.count(Proc::EXPORT), 0, "{mount_any:?}");
        assert!(read(&client, FILE, 0, 4096) == pattern_at(0, 4096));
    }
    assert_no_internal_panic();
}

#[test]
fn server_that_mounts_a_file_with_its_own_handle_is_not_mounted_at_the_file() {
    let server = server(MountAny::OwnHandle);
    let client = connect(&server.url_of(FILE, SOFT));
    assert_eq!(client.export(), "/", "the file was taken for the export");
    assert_eq!(client.target_path(), FILE);
    assert!(read(&client, FILE, 4096, 4096) == pattern_at(4096, 4096));
    // MNT of the file said yes with the file's handle, not the root's
    // (MNT `/` is asked, and differs); only its GETATTR showed it is no
    // directory, and the prefixes above it were asked again.
    assert_eq!(server.mounted_paths(), [FILE, "/", "/"]);
    assert_eq!(
        server.count(Proc::GETATTR),
        2,
        "the file's, then the root's"
    );
    // A name that does not exist: MNT says no, `/` is the export.
    let client = connect(&server.url_of("/new.bin", SOFT));
    assert_eq!(client.export(), "/");
    assert_eq!(client.target_path(), "/new.bin");
    assert_no_internal_panic();
}

#[test]
fn listed_export_is_mounted_with_one_mnt() {
    let server = server(MountAny::Off);
    let client = connect(&server.url(SOFT));
    assert_eq!(client.export(), "/export");
    assert_eq!(client.target_path(), FILE);
    assert_eq!(server.mounted_paths(), ["/export"]);
    assert_eq!(
        server.count(Proc::GETATTR),
        0,
        "no root check for a listed export"
    );
    assert_no_internal_panic();
}

// ---------------------------------------------------------------------------
// mnt_timeout: a server that is down, late, or refusing

/// A port on 127.0.0.1 nothing listens on (bound, then released).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn mount_waits_for_a_server_that_starts_late() {
    let port = free_port();
    let url = format!(
        "nfs://127.0.0.1/export{FILE}?nfsport={port}&mountport={port}&{SOFT}&mnt_timeout=30"
    );
    let started = Instant::now();
    let late = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1500));
        let opts = Options {
            port,
            ..Options::default()
        };
        HostileServer::with(opts, Plan::none())
    });
    let (r, t) = within("connect", Duration::from_secs(20), move || {
        Client::connect(&url)
    });
    let client = r.unwrap_or_else(|e| panic!("mount did not wait for the server: {e}"));
    let server = late.join().unwrap();
    assert!(
        t >= Duration::from_millis(1400),
        "mounted before the server was up: {t:?}"
    );
    // Pauses of 0.25, 0.5, 1, 2 s: up within 1.5 s + 2 s + slack.
    assert!(started.elapsed() < Duration::from_secs(8), "{t:?}");
    assert!(read(&client, FILE, 0, 4096) == pattern_at(0, 4096));
    assert_eq!(server.count(Proc::MNT), 1);
    assert_no_internal_panic();
}

#[test]
fn unreachable_server_fails_after_mnt_timeout_naming_it() {
    let port = free_port();
    let url = format!(
        "nfs://127.0.0.1/export{FILE}?nfsport={port}&mountport={port}&{SOFT}&mnt_timeout=2"
    );
    let (r, t) = within("connect", Duration::from_secs(10), move || {
        Client::connect(&url)
    });
    let e = r.unwrap_err();
    assert!(matches!(e, Error::Connect { .. }), "{e:?}");
    assert_eq!(e.errno(), libc::ECONNREFUSED, "{e}");
    let msg = e.to_string();
    eprintln!("{msg}");
    for needle in [
        format!("127.0.0.1:{port}"),
        "gave up on server \"127.0.0.1\"".to_string(),
        "attempts".to_string(),
        "mnt_timeout is 2 s".to_string(),
    ] {
        assert!(msg.contains(&needle), "{needle:?} missing from: {msg}");
    }
    assert!(t >= Duration::from_millis(1900), "gave up early: {t:?}");
    assert!(t < Duration::from_secs(4), "gave up late: {t:?}");
    assert_no_internal_panic();
}

#[test]
fn refusal_fails_the_mount_at_once_whatever_mnt_timeout() {
    let server = HostileServer::start(Plan::always(
        Proc::MNT,
        Fault::MountStatus(mountstat3::MNT3ERR_ACCES),
    ));
    let url = server.url(&format!("{SOFT}&mnt_timeout=600"));
    let (r, t) = within("connect", LIMIT, move || Client::connect(&url));
    let e = r.unwrap_err();
    assert!(matches!(e, Error::Mount { .. }), "{e:?}");
    assert!(t < Duration::from_secs(2), "{t:?}");
    assert_no_internal_panic();
}

// ---------------------------------------------------------------------------
// Socket buffers

/// The (send, recv) buffers of each channel, from the statistics.
fn buffers(client: &Client) -> Vec<(u64, u64)> {
    client
        .stats()
        .servers
        .iter()
        .flat_map(|s| &s.paths)
        .flat_map(|p| &p.channels)
        .map(|c| (c.send_buffer, c.recv_buffer))
        .collect()
}

#[test]
fn socket_buffers_are_set_as_asked_and_reported() {
    let server = HostileServer::start(Plan::none());
    // The kernel doubles what it grants (its bookkeeping), below rmem_max.
    let fixed = connect(&server.url("timeo=10&retrans=0&soft&connections=2&sockbuf=64k"));
    assert_eq!(buffers(&fixed), [(131072, 131072); 2]);
    // Autotuning: whatever the kernel chose, but not a fixed 64 KiB request.
    let auto = connect(&server.url("timeo=10&connections=1&sockbuf=auto"));
    let b = buffers(&auto);
    assert_eq!(b.len(), 1);
    assert!(b[0].0 > 0 && b[0].1 > 0, "{b:?}");
    // prefer: the size where the kernel grants it in full (64 KiB always
    // is), autotuning where it would be capped (256 MiB never fits):
    // unlike a fixed request, which the kernel silently caps.
    let small = connect(&server.url("timeo=10&connections=1&sockbuf=prefer:64k"));
    assert_eq!(buffers(&small), [(131072, 131072)]);
    let capped = connect(&server.url("timeo=10&connections=1&sockbuf=256m"));
    let huge = connect(&server.url("timeo=10&connections=1&sockbuf=prefer:256m"));
    let (capped, huge) = (buffers(&capped)[0], buffers(&huge)[0]);
    assert!(capped.1 < 512 << 20, "capped at rmem_max: {capped:?}");
    assert_eq!(huge.1, b[0].1, "autotuned like sockbuf=auto: {huge:?}");
    assert_ne!(huge.1, capped.1, "{huge:?} {capped:?}");
    // The default is prefer:4m.
    let default = connect(&server.url("timeo=10&connections=1"));
    let rmem_max: u64 = std::fs::read_to_string("/proc/sys/net/core/rmem_max")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let recv = buffers(&default)[0].1;
    if rmem_max >= 4 << 20 {
        assert_eq!(recv, 8 << 20, "4 MiB granted, reported doubled");
    } else {
        assert_eq!(recv, b[0].1, "autotuned");
    }
    // A channel without a connection reports 0.
    drop(server);
    let until = Instant::now() + Duration::from_secs(10);
    while buffers(&fixed).iter().any(|&(s, _)| s != 0) {
        let c = fixed.clone();
        let _ = within("ping", LIMIT, move || c.ping());
        assert!(Instant::now() < until, "{:?}", buffers(&fixed));
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_no_internal_panic();
}
