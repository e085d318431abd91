//! A Kerberized NFS-Ganesha killed and restarted under a `sec=krb5i`
//! mount: the restarted server has lost every RPCSEC_GSS context, so each
//! connection's next call is refused (or its connection reset) and the
//! mount must make new contexts and send its calls again, with no error
//! reaching the caller on a hard mount and no byte lost. On NFSv3 and
//! NFSv4.1 (where the session is recovered with sealed calls too).
//!
//! A server of the test's own (`directnfs_testkit::ganesha::OwnGanesha`,
//! `DNFS_KRB5=1`) in the test realm of `scripts/test.sh`
//! (`DNFS_TEST_URL_KRB5` names the realm's server, `KRB5_CONFIG` its
//! `krb5.conf`, whose directory is the KDC's state dir).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::versions::Version;
use directnfs::Client;
use directnfs_testkit::ganesha::OwnGanesha;

/// Writer threads, each with its own 256 KiB region of the file.
const THREADS: u64 = 8;
const REGION: usize = 256 << 10;

/// A Kerberized server of the test's own, and its URL for `version` with
/// `options`; `None` where the test realm is not there (skipped, or a
/// failure with `DNFS_TEST_REQUIRE_KRB5`).
fn own_kerberized(
    test: &str,
    version: Version,
    nfs: &str,
    mnt: &str,
    options: &str,
) -> Option<(OwnGanesha, String)> {
    directnfs_testkit::server::url_krb5(test)?;
    let config = std::env::var("KRB5_CONFIG").expect("KRB5_CONFIG with DNFS_TEST_URL_KRB5");
    let kdc_dir = Path::new(&config)
        .parent()
        .expect("krb5.conf in the KDC's state dir")
        .display()
        .to_string();
    let mut env = vec![("DNFS_KRB5", "1"), ("DNFS_KDC_STATE_DIR", kdc_dir.as_str())];
    env.extend(common::versions::own_env(nfs, mnt));
    let server = OwnGanesha::start(test, &env)
        .unwrap_or_else(|e| panic!("{test}: a Kerberized server of its own: {e}"));
    // The test user has no account on this host: Ganesha maps it to the
    // anonymous id, which must be able to create files.
    std::fs::set_permissions(
        server.export_dir(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let url = version.own_url(&server, options);
    Some((server, url))
}

fn pattern(thread: u64, round: u64) -> Vec<u8> {
    (0..REGION)
        .map(|i| (i as u64 * 31 + thread * 7 + round * 13) as u8)
        .collect()
}

/// Writers keep writing and reading back their regions while the server
/// is SIGKILLed and restarted (down 2 s); then every region holds its
/// last write, no call failed, and new contexts were made.
fn krb5i_io_goes_on_across_a_server_restart(version: Version, nfs: &str, mnt: &str) {
    let test = format!("krb5-restart-{version:?}").to_lowercase();
    let Some((server, url)) = own_kerberized(
        &test,
        version,
        nfs,
        mnt,
        "sec=krb5i&connections=2&timeo=20&mnt_timeout=10",
    ) else {
        return;
    };
    let client = Client::connect(&url).unwrap_or_else(|e| panic!("{url}: {e}"));
    let path = format!("/krb5-restart-{}", std::process::id());
    let file = client.create(&path).unwrap();
    let stop = AtomicBool::new(false);
    let rounds = AtomicU64::new(0);
    let contexts_before = directnfs::security::counters().contexts;
    let last: Vec<u64> = std::thread::scope(|s| {
        let writers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (file, stop, rounds) = (&file, &stop, &rounds);
                s.spawn(move || {
                    let off = t * REGION as u64;
                    let mut round = 0;
                    let mut back = vec![0u8; REGION];
                    while !stop.load(Ordering::SeqCst) {
                        round += 1;
                        let data = pattern(t, round);
                        file.write_all_at(&data, off).unwrap_or_else(|e| {
                            panic!("{version:?} writer {t} round {round}: {e}")
                        });
                        file.read_exact_at(&mut back, off).unwrap_or_else(|e| {
                            panic!("{version:?} reader {t} round {round}: {e}")
                        });
                        assert!(
                            back == data,
                            "{version:?} writer {t} round {round}: read back differs"
                        );
                        rounds.fetch_add(1, Ordering::SeqCst);
                    }
                    round
                })
            })
            .collect();
        // Some rounds before the restart, then the restart, then some after.
        let until = Instant::now() + Duration::from_secs(20);
        while rounds.load(Ordering::SeqCst) < THREADS * 2 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut restart = server.spawn_restart(&["--kill", "--down", "2"]).unwrap();
        assert!(restart.wait().unwrap().success(), "nfs-server.sh restart");
        let after = rounds.load(Ordering::SeqCst);
        let until = Instant::now() + Duration::from_secs(60);
        while rounds.load(Ordering::SeqCst) < after + THREADS * 2 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        stop.store(true, Ordering::SeqCst);
        writers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let total = rounds.load(Ordering::SeqCst);
    assert!(
        total >= THREADS * 4,
        "{version:?}: only {total} rounds in all"
    );
    file.fsync().unwrap();
    let mut back = vec![0u8; REGION];
    for (t, round) in last.iter().enumerate() {
        file.read_exact_at(&mut back, t as u64 * REGION as u64)
            .unwrap();
        assert!(
            back == pattern(t as u64, *round),
            "{version:?}: region {t} does not hold its last write (round {round})"
        );
    }
    let made = directnfs::security::counters().contexts - contexts_before;
    assert!(
        made >= 4,
        "{version:?}: {made} contexts made (2 at the mount, new ones after the restart)"
    );
    drop(file);
    client.remove(&path).unwrap();
    drop(client);
    drop(server);
}

#[test]
fn krb5i_io_goes_on_across_a_server_restart_on_nfsv3() {
    krb5i_io_goes_on_across_a_server_restart(Version::V3, "2681", "20681");
}

#[test]
fn krb5i_io_goes_on_across_a_server_restart_on_nfsv41() {
    krb5i_io_goes_on_across_a_server_restart(Version::V41, "2682", "20682");
}
