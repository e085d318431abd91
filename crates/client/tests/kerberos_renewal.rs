//! A Kerberos ticket that expires under load: the client's contexts are
//! replaced before their ticket ends, with a new ticket the GSS-API
//! library gets from the client keytab (`KRB5_CLIENT_KTNAME`), and no
//! error reaches the caller of a hard mount, on NFSv3 and NFSv4.1 at once.
//! A test binary of its own: it points this process's `KRB5CCNAME` at an
//! empty cache and `KRB5_CLIENT_KTNAME` at the keytab of `dnfsshort`, whose
//! tickets live `DNFS_KDC_SHORT_LIFE` seconds (`scripts/server/kdc.sh`),
//! before the GSS-API library is first used.
//!
//! The environment is `scripts/test.sh`'s: `DNFS_TEST_URL_KRB5`,
//! `KRB5_CONFIG` and `DNFS_KRB5_SHORT_KEYTAB`.

// Test code: a failed expectation is a test failure, said in words.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::time::{Duration, Instant};

/// The Kerberos server's URL and the short-lived user's keytab, with this
/// process's credentials pointed at that keytab alone.
fn setup(test: &str) -> Option<(String, String)> {
    let url = directnfs_testkit::server::url_krb5(test)?;
    let Some(keytab) = std::env::var("DNFS_KRB5_SHORT_KEYTAB").ok() else {
        assert!(
            std::env::var_os("DNFS_TEST_REQUIRE_KRB5").is_none(),
            "{test}: DNFS_TEST_REQUIRE_KRB5 is set but DNFS_KRB5_SHORT_KEYTAB is not"
        );
        directnfs_testkit::server::skipped(test, "DNFS_KRB5_SHORT_KEYTAB is not set");
        return None;
    };
    let dir = std::env::temp_dir().join(format!("dnfs-krb-renewal-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("cache dir");
    std::env::set_var("KRB5CCNAME", format!("FILE:{}/ccache", dir.display()));
    std::env::set_var("KRB5_CLIENT_KTNAME", format!("FILE:{keytab}"));
    let v41 = {
        let rest = url.strip_prefix("nfs://").expect("nfs URL");
        let (host_path, query) = rest.split_once('?').expect("query");
        let nfsport = query
            .split('&')
            .find_map(|kv| kv.strip_prefix("nfsport="))
            .expect("nfsport");
        format!("nfs://{host_path}?vers=4.1&nfsport={nfsport}")
    };
    Some((url, v41))
}

/// Writes and reads back 64 KiB pieces from 4 threads through a mount of
/// `url` with `sec=krb5i` until `run` has passed; every call must succeed
/// and every piece read back must be the one written. The number of
/// pieces written.
fn io_across(url: &str, tag: &str, run: Duration) -> u64 {
    let client = directnfs::Client::connect(&format!("{url}&sec=krb5i&hard"))
        .unwrap_or_else(|e| panic!("{tag}: mount: {e}"));
    let name = format!("/krb-renewal-{tag}-{}", std::process::id());
    let file = client.create(&name).expect("create");
    const PIECE: usize = 64 * 1024;
    let end = Instant::now() + run;
    let pieces: u64 = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4u64)
            .map(|t| {
                let file = &file;
                s.spawn(move || {
                    let mut n = 0u64;
                    let mut back = vec![0u8; PIECE];
                    while Instant::now() < end {
                        let offset = (t * 16 + n % 16) * PIECE as u64;
                        let data: Vec<u8> = (0..PIECE)
                            .map(|i| (i as u64 * 7 + n + t * 131) as u8)
                            .collect();
                        file.write_all_at(&data, offset).unwrap_or_else(|e| {
                            panic!(
                                "{tag}: write {n} of thread {t} at {:?}: {e}",
                                Instant::now()
                            )
                        });
                        file.read_exact_at(&mut back, offset)
                            .unwrap_or_else(|e| panic!("{tag}: read {n} of thread {t}: {e}"));
                        assert!(
                            back == data,
                            "{tag}: piece {n} of thread {t} read back differs"
                        );
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("I/O thread"))
            .sum()
    });
    drop(file);
    client.remove(&name).expect("remove");
    pieces
}

/// Both versions at once, each with 4 connections (contexts) doing I/O
/// for the ticket's life and 10 s more: 0 errors, data checked, and every
/// connection replaced at least once before its context expired (a context
/// made on a ticket the library got anew from the keytab). With
/// `DNFS_KRB5_RENEW_EARLY=0` the contexts are left to expire (to see what
/// the server does then; NFS-Ganesha 4.3 keeps taking them: no context
/// is replaced) and only the I/O is checked.
#[test]
fn io_goes_on_across_ticket_expiry() {
    let Some((v3, v41)) = setup("io_goes_on_across_ticket_expiry") else {
        return;
    };
    let life: u64 = std::env::var("DNFS_KDC_SHORT_LIFE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    let renew = std::env::var("DNFS_KRB5_RENEW_EARLY").map_or(true, |v| v != "0");
    directnfs::security::set_renew_before_expiry(renew);
    let before = directnfs::security::counters();
    let run = Duration::from_secs(life + 10);
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| io_across(&v3, "v3", run));
        let b = s.spawn(|| io_across(&v41, "v41", run));
        (a.join().expect("NFSv3"), b.join().expect("NFSv4.1"))
    });
    let after = directnfs::security::counters();
    eprintln!("pieces written: NFSv3 {a}, NFSv4.1 {b}; contexts {before:?} -> {after:?}");
    assert!(a > 0 && b > 0, "no I/O: NFSv3 {a}, NFSv4.1 {b}");
    if !renew {
        return;
    }
    // 8 connections, each replaced at least once before its end.
    assert!(
        after.renewals - before.renewals >= 8,
        "renewals: {before:?} -> {after:?}"
    );
    assert!(
        after.contexts - before.contexts >= 16,
        "contexts: {before:?} -> {after:?}"
    );
}
