//! RPC-with-TLS (RFC 9289, `xprtsec=tls|mtls`) against NFS-Ganesha behind
//! the project's TLS front (`scripts/server/tls-front.py`: Ganesha has no
//! TLS). The front's STARTTLS ports close a connection whose first call is
//! not the AUTH_TLS probe, so a test that moves data through them shows
//! that every NFS connection used TLS (`front_refuses_a_client_without_tls`
//! checks the front itself). MOUNT goes to Ganesha directly, in clear.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::unique;
use common::versions::Version;
use directnfs::Client;

/// The front's ports: STARTTLS, STARTTLS requiring a client certificate,
/// TLS from the first byte, no TLS.
const STARTTLS: u16 = 0;
const MTLS: u16 = 1;
const DIRECT: u16 = 2;

/// Options that make a failing mount fail quickly.
const FAIL_FAST: &str = "soft&timeo=30&retrans=1&mnt_timeout=1";

/// Options of the mounts that must work: a mount that cannot start TLS
/// fails in seconds instead of waiting out the default `mnt_timeout`.
const SHORT_WAIT: &str = "mnt_timeout=5&rsize=64k&wsize=64k";

struct Front {
    dir: PathBuf,
    base: u16,
}

fn front(test: &str) -> Option<Front> {
    directnfs_testkit::server::tls_front(test).map(|(dir, base)| Front { dir, base })
}

impl Front {
    fn file(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }

    /// The test server's URL for `version` with its NFS port replaced by
    /// the front's port `which`, and `options` added.
    fn url(&self, version: Version, which: u16, options: &str) -> String {
        let url = version.url(options);
        with_nfs_port(&url, self.base + which)
    }
}

fn with_nfs_port(url: &str, port: u16) -> String {
    let (head, query) = url.split_once('?').expect("a URL with options");
    let query: Vec<String> = query
        .split('&')
        .map(|kv| match kv.split_once('=') {
            Some(("nfsport", _)) => format!("nfsport={port}"),
            _ => kv.to_string(),
        })
        .collect();
    format!("{head}?{}", query.join("&"))
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(29).wrapping_add(seed))
        .collect()
}

/// Writes and reads back, with many calls in flight at once: one 8 MiB
/// write and read split into 128 calls, and 16 threads doing 64 KiB I/O
/// of their own at the same time.
fn write_and_read_back(c: &Client) {
    let path = unique("tls");
    let f = Arc::new(c.create(&path).unwrap());
    let data = pattern(8 << 20, 3);
    assert_eq!(f.write_at(&data, 0).unwrap(), data.len());
    std::thread::scope(|s| {
        for t in 0..16u64 {
            let f = Arc::clone(&f);
            s.spawn(move || {
                let off = (8 << 20) + t * 65536;
                let mine = pattern(65536, t as u8);
                for _ in 0..4 {
                    assert_eq!(f.write_at(&mine, off).unwrap(), mine.len());
                    let mut back = vec![0u8; mine.len()];
                    assert_eq!(f.read_at(&mut back, off).unwrap(), mine.len());
                    assert!(back == mine, "thread {t}: data read back differs");
                }
            });
        }
    });
    let mut back = vec![0u8; data.len()];
    assert_eq!(f.read_at(&mut back, 0).unwrap(), data.len());
    assert!(back == data, "data read back differs");
    let stats = c.stats();
    let server = &stats.servers[0].totals;
    assert!(
        server.calls_by_proc.get("READ").copied().unwrap_or(0) >= 128
            || server.calls_by_proc.get("COMPOUND").copied().unwrap_or(0) >= 256,
        "{server:?}"
    );
    assert!(server.inflight_peak >= 8, "{server:?}");
    c.remove(&path).unwrap();
}

/// Mounts `url`, which must fail within `within`; returns the message.
fn mount_fails(url: &str, within: Duration) -> String {
    let started = Instant::now();
    let err = match Client::connect(url) {
        Ok(_) => panic!("{url}: mounted, expected a failure"),
        Err(e) => e.to_string(),
    };
    assert!(
        started.elapsed() < within,
        "{url}: took {:?} to fail: {err}",
        started.elapsed()
    );
    eprintln!("{url}: {err}");
    err
}

on_each_version! {
    fn tls_write_then_read_back_with_many_calls_in_flight(version) {
        let Some(front) = front("tls_write_then_read_back_with_many_calls_in_flight") else {
            return;
        };
        let options = format!(
            "xprtsec=tls&tls_ca={}&connections=4&{SHORT_WAIT}",
            front.file("ca.pem")
        );
        let c = Client::connect(&front.url(version, STARTTLS, &options)).unwrap();
        write_and_read_back(&c);
    }
}

on_each_version! {
    fn mtls_with_a_client_certificate_writes_and_reads(version) {
        let Some(front) = front("mtls_with_a_client_certificate_writes_and_reads") else {
            return;
        };
        let options = format!(
            "xprtsec=mtls&tls_ca={}&tls_cert={}&tls_key={}&{SHORT_WAIT}",
            front.file("ca.pem"),
            front.file("client.pem"),
            front.file("client.key")
        );
        let c = Client::connect(&front.url(version, MTLS, &options)).unwrap();
        write_and_read_back(&c);
    }
}

#[test]
fn tls_from_the_first_byte_writes_and_reads() {
    let Some(front) = front("tls_from_the_first_byte_writes_and_reads") else {
        return;
    };
    let options = format!(
        "xprtsec=tls&tls_direct&tls_ca={}&{SHORT_WAIT}",
        front.file("ca.pem")
    );
    let c = Client::connect(&front.url(Version::V3, DIRECT, &options)).unwrap();
    write_and_read_back(&c);
}

#[test]
fn a_certificate_name_other_than_the_address_is_checked_by_tls_name() {
    let Some(front) = front("a_certificate_name_other_than_the_address_is_checked_by_tls_name")
    else {
        return;
    };
    let ca = front.file("ca.pem");
    let good = format!("xprtsec=tls&tls_ca={ca}&tls_name=nfs.test&{SHORT_WAIT}");
    let c = Client::connect(&front.url(Version::V3, STARTTLS, &good)).unwrap();
    write_and_read_back(&c);
    let wrong = format!("xprtsec=tls&tls_ca={ca}&tls_name=other.test&{FAIL_FAST}");
    let err = mount_fails(
        &front.url(Version::V3, STARTTLS, &wrong),
        Duration::from_secs(10),
    );
    assert!(
        err.contains("TLS handshake") && err.contains("not valid for name \"other.test\""),
        "{err}"
    );
}

on_each_version! {
    fn mtls_without_a_client_certificate_fails_with_a_clear_error(version) {
        let Some(front) = front("mtls_without_a_client_certificate_fails_with_a_clear_error")
        else {
            return;
        };
        let options = format!("xprtsec=tls&tls_ca={}&{FAIL_FAST}", front.file("ca.pem"));
        let err = mount_fails(&front.url(version, MTLS, &options), Duration::from_secs(10));
        assert!(
            err.contains("TLS handshake") && err.contains("CertificateRequired"),
            "{err}"
        );
    }
}

#[test]
fn an_unknown_ca_fails_with_a_clear_error() {
    let Some(front) = front("an_unknown_ca_fails_with_a_clear_error") else {
        return;
    };
    let options = format!(
        "xprtsec=tls&tls_ca={}&{FAIL_FAST}",
        front.file("other-ca.pem")
    );
    let err = mount_fails(
        &front.url(Version::V3, STARTTLS, &options),
        Duration::from_secs(10),
    );
    assert!(
        err.contains("TLS handshake") && err.contains("UnknownIssuer"),
        "{err}"
    );
}

on_each_version! {
    fn a_server_without_starttls_fails_with_a_clear_error(version) {
        // Ganesha itself, no front: it does not do RPC-with-TLS.
        let Some(front) = front("a_server_without_starttls_fails_with_a_clear_error") else {
            return;
        };
        let options = format!("xprtsec=tls&tls_ca={}&{FAIL_FAST}", front.file("ca.pem"));
        let err = mount_fails(&version.url(&options), Duration::from_secs(10));
        assert!(
            err.contains("AUTH_TLS probe") && err.contains("does not do RPC-with-TLS"),
            "{err}"
        );
    }
}

#[test]
fn front_refuses_a_client_without_tls() {
    // What makes the tests above proof that TLS was used: the same mount
    // without xprtsec fails at the front's STARTTLS port.
    let Some(front) = front("front_refuses_a_client_without_tls") else {
        return;
    };
    let err = mount_fails(
        &front.url(Version::V3, STARTTLS, FAIL_FAST),
        Duration::from_secs(30),
    );
    assert!(!err.is_empty());
}

#[test]
fn mtls_without_tls_cert_is_refused_before_connecting() {
    let err = match Client::connect("nfs://127.0.0.1/x?nfsport=9&mountport=9&xprtsec=mtls") {
        Ok(_) => panic!("mounted"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("tls_cert and tls_key"), "{err}");
}

#[test]
fn a_missing_ca_file_is_named_in_the_error() {
    let Some(front) = front("a_missing_ca_file_is_named_in_the_error") else {
        return;
    };
    let missing = Path::new("/nonexistent/tls30-ca.pem");
    let options = format!("xprtsec=tls&tls_ca={}&{FAIL_FAST}", missing.display());
    let err = mount_fails(
        &front.url(Version::V3, STARTTLS, &options),
        Duration::from_secs(10),
    );
    assert!(err.contains("tls_ca /nonexistent/tls30-ca.pem"), "{err}");
}

/// A front of this test's own (ports PORT+4..PORT+7, its own directory
/// and certificates), stopped on drop.
struct OwnFront {
    dir: PathBuf,
    backend: u16,
    base: u16,
}

impl OwnFront {
    fn script() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/server/tls-front.py")
    }

    fn run(&self, what: &str) {
        let mut cmd = std::process::Command::new("python3");
        cmd.arg(Self::script()).arg(what).arg(&self.dir);
        if what == "start" {
            cmd.arg(self.backend.to_string()).arg(self.base.to_string());
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "tls-front.py {what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for OwnFront {
    fn drop(&mut self) {
        self.run("stop");
    }
}

fn nfs_port(url: &str) -> u16 {
    let (_, query) = url.split_once('?').unwrap();
    query
        .split('&')
        .find_map(|kv| kv.strip_prefix("nfsport="))
        .and_then(|p| p.parse().ok())
        .unwrap()
}

#[test]
fn tls_connections_come_back_after_the_server_side_drops_them() {
    let Some(front) = front("tls_connections_come_back_after_the_server_side_drops_them") else {
        return;
    };
    let own = OwnFront {
        dir: front.dir.with_file_name(format!(
            "{}-reconnect",
            front.dir.file_name().unwrap().to_string_lossy()
        )),
        backend: nfs_port(&Version::V3.url("")),
        base: front.base + 4,
    };
    own.run("start");
    let ca = own.dir.join("ca.pem").display().to_string();
    let url = with_nfs_port(
        &Version::V3.url(&format!(
            "xprtsec=tls&tls_ca={ca}&connections=2&{SHORT_WAIT}"
        )),
        own.base + STARTTLS,
    );
    let c = Client::connect(&url).unwrap();
    let path = unique("tls-reconnect");
    let f = c.create(&path).unwrap();
    let data = pattern(1 << 20, 9);
    assert_eq!(f.write_at(&data, 0).unwrap(), data.len());
    // Every TLS connection ends (the front's process and its sockets go),
    // then the front is back: a hard mount's next call reconnects, with
    // a new AUTH_TLS probe and handshake on each connection.
    own.run("stop");
    own.run("start");
    let mut back = vec![0u8; data.len()];
    assert_eq!(f.read_at(&mut back, 0).unwrap(), data.len());
    assert!(back == data, "data read back differs");
    let reconnects = c.stats().servers[0].totals.reconnects;
    assert!(reconnects >= 1, "no reconnect counted: {reconnects}");
    c.remove(&path).unwrap();
}
