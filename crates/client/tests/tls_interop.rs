//! RPC-with-TLS (RFC 9289, `xprtsec=tls|mtls`) against a peer the project
//! did not write: an oncrpc4j 3.4.2 server (dCache's ONC RPC library for
//! Java; `tests/interop/oncrpc4j/`, started by
//! `scripts/server/oncrpc4j-peer.sh`). The other TLS tests (`tls.rs`) go
//! through the project's own STARTTLS front, written by the same hands as
//! the client: a misreading of the RFC shared by both would pass there.
//!
//! The peer serves MOUNT v3 and NFSv3 (NULL, GETATTR, FSINFO, PATHCONF) for
//! one export, `/`, whose root has fixed attributes (fileid 9289), on its
//! first port (STARTTLS) and its second (STARTTLS, a client certificate
//! required). It refuses every call in clear but the AUTH_TLS probe
//! (AUTH_TOOWEAK: `the_peer_refuses_a_client_without_tls` checks it), so a
//! mount that works there made the probe, got STARTTLS, finished the TLS 1.3
//! handshake and sent its MOUNT and NFS calls in TLS. It logs every call
//! with its flavor and whether it came in TLS, which the first test reads.
//!
//! One peer serves the whole test binary, started on first use (built by
//! Maven the first time: its dependencies go into a directory of the
//! project, ignored by git) on `DNFS_TEST_ONCRPC4J_PORT` and the port after
//! it (default 2592, 2593), in `DNFS_TEST_ONCRPC4J_DIR` (default
//! `$TMPDIR/dnfs-test-oncrpc4j-PORT`), and stopped when the binary exits.
//! Without java and mvn (and not root to install them) the tests are
//! skipped, loudly, or fail where the tests must run
//! (`DNFS_TEST_REQUIRE_SERVER`, as in CI).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use common::mount_fails;
use directnfs::{Client, FileType};
use directnfs_testkit::server::{required, skipped};

/// The root's fileid the peer answers (`Peer.ROOT_FILEID`).
const ROOT_FILEID: u64 = 9289;

/// Options that make a failing mount fail within seconds: `mnt_timeout`
/// bounds each connect and handshake too, and a JVM just started, its code
/// not yet compiled, can take over a second for its first handshakes.
const FAIL_FAST: &str = "soft&timeo=30&retrans=1&mnt_timeout=5";

/// How long a mount that must fail may take (`FAIL_FAST`'s `mnt_timeout`
/// and a margin).
const FAILS_WITHIN: Duration = Duration::from_secs(15);

/// Options of the mounts that must work: one that cannot start TLS fails
/// in seconds instead of waiting out the default `mnt_timeout`.
const SHORT_WAIT: &str = "mnt_timeout=10";

/// The PEM files the peer's certificates came from (tls-front.py's set).
struct Peer {
    dir: PathBuf,
    port: u16,
}

impl Peer {
    fn file(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }

    /// The peer's export `/` (named as the export: `//`, so the client
    /// MOUNTs it without asking EXPORT), NFS and MOUNT on `port`.
    fn url(&self, port: u16, options: &str) -> String {
        format!("nfs://127.0.0.1//?nfsport={port}&mountport={port}&{options}")
    }

    /// The log's lines so far.
    fn log(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.join("peer.log"))
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/server/oncrpc4j-peer.sh")
}

fn run_script(args: &[&str]) -> std::process::Output {
    Command::new("bash")
        .arg(script())
        .args(args)
        .env("DNFS_ONCRPC4J_WATCH_PID", std::process::id().to_string())
        .output()
        .expect("run scripts/server/oncrpc4j-peer.sh")
}

static PEER: OnceLock<Result<Peer, String>> = OnceLock::new();

extern "C" fn stop_peer() {
    if let Some(Ok(peer)) = PEER.get() {
        let _ = run_script(&["stop", &peer.dir.display().to_string()]);
    }
}

/// The peer of this test binary, started on first use; `None` (skipped,
/// or a failure where the tests must run) without java and mvn.
fn peer(test: &str) -> Option<&'static Peer> {
    let started = PEER.get_or_init(|| {
        let port: u16 = std::env::var("DNFS_TEST_ONCRPC4J_PORT")
            .ok()
            .filter(|p| !p.is_empty())
            .map(|p| p.parse().expect("DNFS_TEST_ONCRPC4J_PORT: a port number"))
            .unwrap_or(2592);
        let dir = std::env::var("DNFS_TEST_ONCRPC4J_DIR")
            .ok()
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| std::env::temp_dir().join(format!("dnfs-test-oncrpc4j-{port}")));
        let d = dir.display().to_string();
        // A peer left by an earlier run of this binary is about to go
        // (it watched that run's PID): never reuse it.
        let _ = run_script(&["stop", &d]);
        let out = run_script(&["start", &d, &port.to_string()]);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        match out.status.code() {
            Some(0) => {}
            Some(3) => return Err(stderr),
            _ => panic!("oncrpc4j-peer.sh start {d} {port} failed:\n{stderr}"),
        }
        // SAFETY: registers a plain extern "C" function with no captured state.
        unsafe { libc::atexit(stop_peer) };
        Ok(Peer { dir, port })
    });
    match started {
        Ok(peer) => Some(peer),
        Err(why) => {
            assert!(
                !required(),
                "{test}: the oncrpc4j peer cannot run here ({}); DNFS_TEST_REQUIRE_SERVER is \
                 set: the check must run",
                why.trim()
            );
            skipped(
                test,
                &format!("the oncrpc4j peer cannot run here: {}", why.trim()),
            );
            None
        }
    }
}

/// The root's attributes came back as the peer serves them.
fn check_root(c: &Client) {
    let root = c.metadata("/").unwrap();
    assert_eq!(root.fileid, ROOT_FILEID, "{root:?}");
    assert_eq!(root.file_type, FileType::Dir, "{root:?}");
    assert_eq!((root.size, root.mode & 0o7777), (4096, 0o755), "{root:?}");
}

#[test]
fn a_mount_through_oncrpc4j_probes_starts_tls_and_calls_in_tls() {
    let test = "a_mount_through_oncrpc4j_probes_starts_tls_and_calls_in_tls";
    let Some(peer) = peer(test) else {
        return;
    };
    let options = format!("xprtsec=tls&tls_ca={}&{SHORT_WAIT}", peer.file("ca.pem"));
    let c = Client::connect(&peer.url(peer.port, &options)).unwrap();
    check_root(&c);
    c.ping().unwrap();
    drop(c);

    // What the peer saw, on this port (other tests use the mtls port or
    // fail before any call but the probe).
    let mine = format!("call port={} ", peer.port);
    let calls: Vec<String> = peer
        .log()
        .into_iter()
        .filter(|l| l.starts_with(&mine))
        .collect();
    let seen = |prog: u32, proc_: u32, flavor: u32, tls: bool| {
        let line = format!("{mine}prog={prog} vers=3 proc={proc_} flavor={flavor} tls={tls}");
        calls.contains(&line)
    };
    // Each program's connections begin with the AUTH_TLS probe (flavor 7,
    // in clear: RFC 9289 section 4.1), then the client's NULL inside TLS.
    for prog in [100005, 100003] {
        assert!(
            seen(prog, 0, 7, false),
            "no AUTH_TLS probe of {prog}: {calls:#?}"
        );
        assert!(
            seen(prog, 0, 0, true),
            "no NULL in TLS of {prog}: {calls:#?}"
        );
    }
    assert!(seen(100005, 1, 1, true), "no MNT in TLS: {calls:#?}");
    assert!(seen(100003, 19, 1, true), "no FSINFO in TLS: {calls:#?}");
    assert!(seen(100003, 1, 1, true), "no GETATTR in TLS: {calls:#?}");
    assert!(
        seen(100003, 0, 1, true),
        "no NULL (ping) in TLS: {calls:#?}"
    );
    // No NFS call in clear but probes (MOUNT calls in clear are the
    // no-TLS test's, refused).
    let clear: Vec<&String> = calls
        .iter()
        .filter(|l| l.ends_with("tls=false") && !l.contains(" flavor=7 "))
        .collect();
    assert!(
        clear.iter().all(|l| l.contains("prog=100005")),
        "calls in clear: {clear:#?}"
    );
}

#[test]
fn the_peer_refuses_a_client_without_tls() {
    let Some(peer) = peer("the_peer_refuses_a_client_without_tls") else {
        return;
    };
    // Its MNT in clear is refused: so the other tests' calls were in TLS.
    let err = mount_fails(&peer.url(peer.port, FAIL_FAST), FAILS_WITHIN);
    assert!(err.contains("MNT") && err.contains("AUTH_TOOWEAK"), "{err}");
}

#[test]
fn a_certificate_without_the_name_asked_for_fails_naming_it() {
    let Some(peer) = peer("a_certificate_without_the_name_asked_for_fails_naming_it") else {
        return;
    };
    let ca = peer.file("ca.pem");
    let good = format!("xprtsec=tls&tls_ca={ca}&tls_name=nfs.test&{SHORT_WAIT}");
    check_root(&Client::connect(&peer.url(peer.port, &good)).unwrap());
    let wrong = format!("xprtsec=tls&tls_ca={ca}&tls_name=other.test&{FAIL_FAST}");
    let err = mount_fails(&peer.url(peer.port, &wrong), FAILS_WITHIN);
    assert!(
        err.contains("TLS handshake") && err.contains("not valid for name \"other.test\""),
        "{err}"
    );
}

#[test]
fn a_certificate_from_another_ca_fails_naming_the_issuer() {
    let Some(peer) = peer("a_certificate_from_another_ca_fails_naming_the_issuer") else {
        return;
    };
    let options = format!(
        "xprtsec=tls&tls_ca={}&{FAIL_FAST}",
        peer.file("other-ca.pem")
    );
    let err = mount_fails(&peer.url(peer.port, &options), FAILS_WITHIN);
    assert!(
        err.contains("TLS handshake") && err.contains("UnknownIssuer"),
        "{err}"
    );
}

#[test]
fn mtls_with_a_client_certificate_mounts_and_calls_in_tls() {
    let Some(peer) = peer("mtls_with_a_client_certificate_mounts_and_calls_in_tls") else {
        return;
    };
    let options = format!(
        "xprtsec=mtls&tls_ca={}&tls_cert={}&tls_key={}&{SHORT_WAIT}",
        peer.file("ca.pem"),
        peer.file("client.pem"),
        peer.file("client.key")
    );
    let c = Client::connect(&peer.url(peer.port + 1, &options)).unwrap();
    check_root(&c);
    c.ping().unwrap();
}

/// oncrpc4j (Grizzly's TLS 1.3 server) closes the connection of a client
/// that sent no certificate without a TLS alert. The client saw the
/// server ask for a certificate it does not have, so the mount fails at
/// once, with EACCES saying that the server wants `xprtsec=mtls` (not an
/// end of file retried until `mnt_timeout`, here a minute: before, the
/// mount failed only then, saying that the TLS handshake had ended).
#[test]
fn mtls_without_a_client_certificate_fails_in_the_handshake() {
    let Some(peer) = peer("mtls_without_a_client_certificate_fails_in_the_handshake") else {
        return;
    };
    let options = format!(
        "xprtsec=tls&tls_ca={}&soft&timeo=30&retrans=1&mnt_timeout=60",
        peer.file("ca.pem")
    );
    let err = mount_fails(&peer.url(peer.port + 1, &options), FAILS_WITHIN);
    assert!(
        err.contains("RPC-with-TLS to MOUNT")
            && err.contains("asked for a client certificate")
            && err.contains("xprtsec=mtls"),
        "{err}"
    );
}
