//! A user's Kerberos ticket that runs out under a hard `sec=krb5i` mount,
//! with no client keytab and no one to renew it: the calls fail with
//! EACCES within seconds of the ticket's end, naming the server, the
//! cache's principal and kinit (never a wait for a connection that cannot
//! be made); after a kinit the next call works, on the same mount. And a
//! renewable ticket (`kinit -r`), which the client renews in the cache
//! before it ends: I/O goes on past its first end with no error. NFSv3
//! and NFSv4.1 at once, against the real KDC and Kerberized Ganesha.
//!
//! A test binary of its own: it points this process's `KRB5CCNAME` at a
//! cache of its own and `KRB5_CLIENT_KTNAME` at a file that does not
//! exist, before the GSS-API library is first used. The tests refill the
//! cache with `kinit -k` from the keytabs of `scripts/server/kdc.sh`'s
//! `dnfsexp` (tickets of `DNFS_KDC_EXP_LIFE` seconds, never renewable)
//! and `dnfsrenew` (the same, renewable for 10 minutes); the client never
//! sees the keytabs. The two tests share the cache: they run one at a
//! time.
//!
//! The environment is `scripts/test.sh`'s: `DNFS_TEST_URL_KRB5`,
//! `KRB5_CONFIG`, `DNFS_KRB5_EXP_KEYTAB`, `DNFS_KRB5_RENEW_KEYTAB` and
//! `DNFS_KDC_EXP_LIFE`.

// Test code: a failed expectation is a test failure, said in words.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::io::Write;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The two tests share this process's ticket cache.
static CACHE: Mutex<()> = Mutex::new(());

/// A call's error after the ticket's end comes no later than this.
const BOUND: Duration = Duration::from_secs(5);

const PIECE: usize = 64 * 1024;

struct Setup {
    /// NFSv3 and NFSv4.1 URLs of the Kerberized export.
    urls: [(String, &'static str); 2],
    /// host:port of the NFS service (both versions).
    nfs: String,
    exp_keytab: String,
    renew_keytab: String,
    /// The tickets' life.
    life: Duration,
    cache: PathBuf,
}

fn setup(test: &str) -> Option<Setup> {
    let url = directnfs_testkit::server::url_krb5(test)?;
    let keytab = |var: &str| match std::env::var(var) {
        Ok(v) => Some(v),
        Err(_) => {
            assert!(
                std::env::var_os("DNFS_TEST_REQUIRE_KRB5").is_none(),
                "{test}: DNFS_TEST_REQUIRE_KRB5 is set but {var} is not"
            );
            directnfs_testkit::server::skipped(test, &format!("{var} is not set"));
            None
        }
    };
    let exp_keytab = keytab("DNFS_KRB5_EXP_KEYTAB")?;
    let renew_keytab = keytab("DNFS_KRB5_RENEW_KEYTAB")?;
    let life = Duration::from_secs(
        std::env::var("DNFS_KDC_EXP_LIFE")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(20),
    );
    let dir = std::env::temp_dir().join(format!("dnfs-krb-expiry-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("cache dir");
    let cache = dir.join("ccache");
    std::env::set_var("KRB5CCNAME", format!("FILE:{}", cache.display()));
    std::env::set_var(
        "KRB5_CLIENT_KTNAME",
        format!("FILE:{}/missing.keytab", dir.display()),
    );
    let rest = url.strip_prefix("nfs://").expect("nfs URL");
    let (host_path, query) = rest.split_once('?').expect("query");
    let host = &host_path[..host_path.find('/').expect("path")];
    let nfsport = query
        .split('&')
        .find_map(|kv| kv.strip_prefix("nfsport="))
        .expect("nfsport");
    let v41 = format!("nfs://{host_path}?vers=4.1&nfsport={nfsport}");
    Some(Setup {
        urls: [(url.clone(), "v3"), (v41, "v41")],
        nfs: format!("{host}:{nfsport}"),
        exp_keytab,
        renew_keytab,
        life,
        cache,
    })
}

/// `kinit` into the test's cache from `keytab` (the test's own refill:
/// the client has no keytab).
fn kinit(s: &Setup, keytab: &str, principal: &str, renewable: bool) {
    let mut cmd = Command::new("kinit");
    if renewable {
        cmd.args(["-r", "10m"]);
    }
    let out = cmd
        .args(["-k", "-t", keytab, "-c"])
        .arg(format!("FILE:{}", s.cache.display()))
        .arg(principal)
        .output()
        .expect("kinit (krb5-user) runs");
    assert!(
        out.status.success(),
        "kinit {principal}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Ends the process (a test failure) if not dropped within `limit`: a
/// call that hangs is what these tests are about, and a thread blocked in
/// it would keep the test from ever failing.
struct Watchdog(Arc<AtomicBool>);

impl Watchdog {
    fn new(limit: Duration, what: &'static str) -> Self {
        let done = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&done);
        let until = Instant::now() + limit;
        std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                if Instant::now() >= until {
                    // Not eprintln!: the harness's capture would lose it.
                    let _ = writeln!(
                        std::io::stderr(),
                        "FAILED: {what}: still waiting after {limit:?} (a call hangs)"
                    );
                    std::process::exit(101);
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        Self(done)
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// One mount's file and the pattern written to it.
struct Mounted {
    client: directnfs::Client,
    file: directnfs::File,
    name: String,
    tag: &'static str,
}

impl Mounted {
    fn new(url: &str, tag: &'static str, test: &str) -> Self {
        let client = directnfs::Client::connect(&format!("{url}&sec=krb5i&hard"))
            .unwrap_or_else(|e| panic!("{tag}: mount: {e}"));
        let name = format!("/krb-expiry-{test}-{tag}-{}", std::process::id());
        let file = client.create(&name).expect("create");
        Self {
            client,
            file,
            name,
            tag,
        }
    }

    /// Writes piece `n` at the place of `slot` (one per thread) and reads
    /// it back; the data must match.
    fn piece(&self, slot: u64, n: u64) -> Result<(), directnfs::Error> {
        let offset = slot * PIECE as u64;
        let data: Vec<u8> = (0..PIECE)
            .map(|i| (i as u64 * 7 + n + slot * 131) as u8)
            .collect();
        self.file.write_all_at(&data, offset)?;
        let mut back = vec![0u8; PIECE];
        self.file.read_exact_at(&mut back, offset)?;
        assert!(back == data, "{}: piece {n} read back differs", self.tag);
        Ok(())
    }

    fn remove(self) {
        drop(self.file);
        self.client.remove(&self.name).expect("remove");
    }
}

/// A ticket that is not renewable runs out under load: EACCES within
/// [`BOUND`] of its end (not before it), the message naming the server,
/// the principal and kinit; the calls after it fail at once too (no
/// hang); after kinit the next call on the same mount works.
#[test]
fn a_ticket_that_ran_out_is_eacces_naming_kinit_until_kinit_again() {
    let test = "a_ticket_that_ran_out_is_eacces_naming_kinit_until_kinit_again";
    let Some(s) = setup(test) else {
        return;
    };
    let _one = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    let issued = Instant::now();
    kinit(&s, &s.exp_keytab, "dnfsexp", false);
    let end = issued + s.life;
    let before = directnfs::security::counters();
    let watchdog = Watchdog::new(s.life + BOUND * 6, "the calls across the ticket's end");
    let failures: Vec<(Mounted, u64, Instant, directnfs::Error)> = std::thread::scope(|sc| {
        let handles: Vec<_> = s
            .urls
            .iter()
            .map(|(url, tag)| {
                sc.spawn(move || {
                    let m = Mounted::new(url, tag, "ran-out");
                    let mut n = 0u64;
                    loop {
                        match m.piece(0, n) {
                            Ok(()) => n += 1,
                            Err(e) => return (m, n, Instant::now(), e),
                        }
                        assert!(
                            Instant::now() < end + BOUND * 3,
                            "{tag}: I/O still works {:?} after the ticket's end",
                            Instant::now() - end
                        );
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("I/O thread"))
            .collect()
    });
    let after = directnfs::security::counters();
    eprintln!("contexts {before:?} -> {after:?}");
    for (m, n, at, e) in &failures {
        let tag = m.tag;
        eprintln!(
            "{tag}: {n} pieces, then at {:?} after the ticket's end: {e}",
            at.saturating_duration_since(end)
        );
        assert!(*n > 0, "{tag}: no I/O before the ticket ran out");
        assert!(
            *at + Duration::from_secs(2) >= end,
            "{tag}: failed {:?} before the ticket's end: {e}",
            end - *at
        );
        assert!(
            *at <= end + BOUND,
            "{tag}: the error came {:?} after the ticket's end",
            *at - end
        );
        assert_eq!(e.errno(), libc::EACCES, "{tag}: {e}");
        let text = e.to_string();
        assert!(
            text.contains(&s.nfs)
                && text.contains("dnfsexp@")
                && text.contains("kinit")
                && text.contains("permission denied"),
            "{tag}: the message names not the server, the principal and kinit: {text}"
        );
    }
    // The calls after it: EACCES at once, each (no wait for a connection).
    for (m, n, _, _) in &failures {
        for k in 0..3 {
            let started = Instant::now();
            let e = m.piece(0, n + k).expect_err("a call without a ticket");
            assert_eq!(e.errno(), libc::EACCES, "{}: {e}", m.tag);
            assert!(
                started.elapsed() < BOUND,
                "{}: a call without a ticket took {:?}",
                m.tag,
                started.elapsed()
            );
        }
    }
    // kinit again: the next call on the same mount works, and more after.
    kinit(&s, &s.exp_keytab, "dnfsexp", false);
    for (m, n, _, _) in &failures {
        let started = Instant::now();
        m.piece(0, n + 10)
            .unwrap_or_else(|e| panic!("{}: the first call after kinit: {e}", m.tag));
        eprintln!(
            "{}: the first call after kinit took {:?}",
            m.tag,
            started.elapsed()
        );
        for k in 11..40 {
            m.piece(0, n + k)
                .unwrap_or_else(|e| panic!("{}: a call after kinit: {e}", m.tag));
        }
    }
    for (m, ..) in failures {
        m.remove();
    }
    drop(watchdog);
}

/// A renewable ticket (`kinit -r`) under load from 4 threads per version:
/// the client renews it in the cache before it ends, and the I/O goes on
/// past its first end (for a life and a half) with no error; the cache's
/// ticket was renewed (counted) and no context was used past its end.
#[test]
fn a_renewable_ticket_is_renewed_under_load_with_no_error() {
    let test = "a_renewable_ticket_is_renewed_under_load_with_no_error";
    let Some(s) = setup(test) else {
        return;
    };
    let _one = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    let issued = Instant::now();
    kinit(&s, &s.renew_keytab, "dnfsrenew", true);
    let first_end = issued + s.life;
    let run_until = first_end + s.life / 2;
    let before = directnfs::security::counters();
    let pieces: u64 = std::thread::scope(|sc| {
        let handles: Vec<_> = s
            .urls
            .iter()
            .map(|(url, tag)| {
                sc.spawn(move || {
                    let m = Mounted::new(url, tag, "renewable");
                    let n: u64 = std::thread::scope(|inner| {
                        let m = &m;
                        let threads: Vec<_> = (0..4u64)
                            .map(|t| {
                                inner.spawn(move || {
                                    let mut n = 0u64;
                                    while Instant::now() < run_until {
                                        m.piece(t, n).unwrap_or_else(|e| {
                                            panic!(
                                                "{tag}: piece {n} of thread {t}, {:?} after the \
                                                 first end: {e}",
                                                Instant::now().saturating_duration_since(first_end)
                                            )
                                        });
                                        n += 1;
                                    }
                                    n
                                })
                            })
                            .collect();
                        threads.into_iter().map(|h| h.join().expect("I/O")).sum()
                    });
                    m.remove();
                    n
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("I/O thread"))
            .sum()
    });
    let after = directnfs::security::counters();
    eprintln!("pieces {pieces}; contexts {before:?} -> {after:?}");
    assert!(pieces > 0, "no I/O");
    assert!(
        after.ticket_renewals > before.ticket_renewals,
        "the ticket was not renewed: {before:?} -> {after:?}"
    );
    assert_eq!(
        after.expired, before.expired,
        "a context ran out: {before:?} -> {after:?}"
    );
}
