//! Unstable-mode durability across a server crash, one test body run on
//! each protocol version against a Ganesha of the test's own (SIGKILLed
//! and restarted, so its write verifier changes): the write log's rule —
//! a repair never sends older data over newer — holds on NFSv3 and on
//! NFSv4.1 alike, since both go through the same `fsync` repair; and
//! large reads and writes, their pieces in flight at once, go on across
//! such a restart on a hard mount.
//!
//! Skipped (loudly) where the real-server tests do not run; a failure when
//! `DNFS_TEST_REQUIRE_SERVER` is set and the server cannot be started.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use directnfs::config::NfsUrl;
use directnfs::Client;
use directnfs_testkit::ganesha::OwnGanesha;

/// The protocol versions every test here runs on.
#[derive(Debug, Clone, Copy)]
enum Version {
    V3,
    V41,
}

/// A Ganesha of the test's own (NFSv3 and NFSv4.1, no grace period) and
/// the URL of its export for `version` with `options`; `None` (skipped)
/// where the real-server tests do not run.
fn own_server(
    name: &str,
    nfs: &str,
    mnt: &str,
    version: Version,
    options: &str,
) -> Option<(OwnGanesha, String)> {
    if !directnfs_testkit::server::wanted(name) {
        return None;
    }
    let server = OwnGanesha::start(
        name,
        &[
            ("DNFS_PRIVATE_RPCBIND", "1"),
            ("DNFS_NFS_PORT", nfs),
            ("DNFS_MNT_PORT", mnt),
            ("DNFS_NFS4", "1"),
            ("DNFS_NFS4_GRACE", "0"),
        ],
    )
    .unwrap();
    let url = match version {
        Version::V3 => format!("{}&{options}", server.url()),
        Version::V41 => {
            let port = NfsUrl::parse(server.url())
                .unwrap()
                .options
                .nfs_port
                .unwrap();
            let (base, _) = server.url().split_once('?').unwrap();
            format!("{base}?vers=4.1&nfsport={port}&{options}")
        }
    };
    Some((server, url))
}

/// Two overlapping unstable writes (64 KiB of `A`, then 64 KiB of `B`, at
/// offset 0), the server SIGKILLed and restarted (down 2 s: its write
/// verifier, its start time in seconds, changes), then `fsync`: the
/// COMMIT shows the new verifier, so both writes are in doubt and the
/// repair must send `B` — and never `A` after it. `B` reads back.
fn newer_data_survives_a_restart_before_fsync(version: Version, nfs: &str, mnt: &str) {
    let name = format!("durable-{version:?}").to_lowercase();
    let Some((server, url)) = own_server(&name, nfs, mnt, version, "stable=unstable&timeo=20")
    else {
        return;
    };
    let client = Client::connect(&url).unwrap();
    let path = format!("/overlap-{}", std::process::id());
    let f = client.create(&path).unwrap();
    let a = vec![b'A'; 64 << 10];
    let b = vec![b'B'; 64 << 10];
    assert_eq!(f.write_at(&a, 0).unwrap(), a.len());
    assert_eq!(f.write_at(&b, 0).unwrap(), b.len());
    let mut restart = server.spawn_restart(&["--kill", "--down", "2"]).unwrap();
    assert!(restart.wait().unwrap().success(), "nfs-server.sh restart");
    f.fsync().unwrap();
    assert_eq!(f.uncommitted_bytes(), 0, "{version:?}: all durable");
    let mut back = vec![0u8; 64 << 10];
    assert_eq!(f.read_at(&mut back, 0).unwrap(), back.len());
    let a_bytes = back.iter().filter(|&&x| x == b'A').count();
    assert!(
        back.iter().all(|&x| x == b'B'),
        "{version:?}: the older write was sent again over the newer one \
         ({a_bytes} bytes of A)"
    );
    drop(f);
    client.remove(&path).unwrap();
    drop(client);
    drop(server);
}

#[test]
fn newer_data_survives_a_restart_before_fsync_on_nfsv3() {
    newer_data_survives_a_restart_before_fsync(Version::V3, "2671", "20671");
}

#[test]
fn newer_data_survives_a_restart_before_fsync_on_nfsv41() {
    newer_data_survives_a_restart_before_fsync(Version::V41, "2672", "20672");
}

/// Large reads and writes (each split into 64 pieces sent at once; on
/// NFSv4.1 each piece on a session slot of its own) from four threads
/// while the server is SIGKILLed and restarted: on a hard mount none
/// fails, and what each thread wrote reads back.
fn large_io_across_a_restart(version: Version, nfs: &str, mnt: &str) {
    let name = format!("durable-io-{version:?}").to_lowercase();
    let Some((server, url)) =
        own_server(&name, nfs, mnt, version, "rsize=65536&wsize=65536&timeo=20")
    else {
        return;
    };
    let client = Client::connect(&url).unwrap();
    let dir = format!("/io-restart-{}", std::process::id());
    client.mkdir(&dir).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let workers: Vec<_> = (0..4u8)
        .map(|t| {
            let f = client.create(&format!("{dir}/f{t}")).unwrap();
            let stop = std::sync::Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut rounds = 0u32;
                let mut back = vec![0u8; 4 << 20];
                while rounds < 2 || !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let fill = t.wrapping_mul(16).wrapping_add(rounds as u8);
                    let data = vec![fill; 4 << 20];
                    f.write_at(&data, 0)
                        .unwrap_or_else(|e| panic!("{version:?} thread {t}: write: {e}"));
                    let n = f
                        .read_at(&mut back, 0)
                        .unwrap_or_else(|e| panic!("{version:?} thread {t}: read: {e}"));
                    assert_eq!(n, back.len());
                    assert!(
                        back == data,
                        "{version:?} thread {t} round {rounds}: data differs"
                    );
                    rounds += 1;
                }
                rounds
            })
        })
        .collect();
    let mut restart = server.spawn_restart(&["--kill", "--down", "2"]).unwrap();
    assert!(restart.wait().unwrap().success(), "nfs-server.sh restart");
    std::thread::sleep(std::time::Duration::from_millis(500));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for w in workers {
        assert!(w.join().unwrap() >= 2);
    }
    for t in 0..4 {
        client.remove(&format!("{dir}/f{t}")).unwrap();
    }
    client.rmdir(&dir).unwrap();
    drop(client);
    drop(server);
}

#[test]
fn large_io_goes_on_across_a_restart_on_nfsv3() {
    large_io_across_a_restart(Version::V3, "2674", "20674");
}

#[test]
fn large_io_goes_on_across_a_restart_on_nfsv41() {
    large_io_across_a_restart(Version::V41, "2675", "20675");
}
