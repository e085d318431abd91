//! RPC-with-TLS (RFC 9289, `xprtsec=tls|mtls`) against NFS-Ganesha behind
//! the project's TLS front (`scripts/server/tls-front.py`: Ganesha has no
//! TLS). The front's STARTTLS ports close a connection whose first call is
//! not the AUTH_TLS probe, so a test that moves data through them shows
//! that every NFS connection used TLS (`front_refuses_a_client_without_tls`
//! checks the front itself). MOUNT goes through the front's pair for the
//! MOUNT port (RFC 9289 applies to every RPC program), the Kerberos tests
//! through its pairs for the Kerberized server's NFS and MOUNT ports.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use common::versions::Version;
use common::{mount_fails, unique};
use directnfs::config::NfsUrl;
use directnfs::{Client, PathSpec, Target};
use directnfs_testkit::tap::TapRelay;

/// The front's ports: STARTTLS, STARTTLS requiring a client certificate,
/// TLS from the first byte, no TLS.
const STARTTLS: u16 = 0;
const MTLS: u16 = 1;
const DIRECT: u16 = 2;
const PLAIN: u16 = 3;

/// Where the front's other pairs start, from its first port
/// (`scripts/test.sh`): the main server's MOUNT port, the Kerberized
/// server's NFS and MOUNT ports (`PORT+4` to `PORT+7` are the reconnect
/// test's own front's).
const MOUNT_PAIR: u16 = 8;
const KRB5_NFS_PAIR: u16 = 12;
const KRB5_MOUNT_PAIR: u16 = 16;

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

    /// The test server's URL for `version` with its NFS (and MOUNT) port
    /// replaced by the front's port `which` (of the MOUNT pair), and
    /// `options` added.
    fn url(&self, version: Version, which: u16, options: &str) -> String {
        let url = version.url(options);
        with_ports(&url, self.base + which, self.base + MOUNT_PAIR + which)
    }

    /// The Kerberized test server's URL for `version` through the front's
    /// port `which` of its pairs, with `options`; `None` (skipped, or a
    /// failure where the tests must run) without that server.
    fn krb5_url(&self, test: &str, version: Version, which: u16, options: &str) -> Option<String> {
        let url = directnfs_testkit::server::url_krb5(test)?;
        let (head, _) = url.split_once('?').expect("a URL with options");
        let nfs = self.base + KRB5_NFS_PAIR + which;
        Some(match version {
            Version::V3 => format!(
                "{head}?nfsport={nfs}&mountport={}&{options}",
                self.base + KRB5_MOUNT_PAIR + which
            ),
            Version::V41 => format!("{head}?vers=4.1&nfsport={nfs}&{options}"),
        })
    }
}

/// `url` with its `nfsport=` and `mountport=` (if any) replaced.
fn with_ports(url: &str, nfs: u16, mount: u16) -> String {
    let (head, query) = url.split_once('?').expect("a URL with options");
    let query: Vec<String> = query
        .split('&')
        .map(|kv| match kv.split_once('=') {
            Some(("nfsport", _)) => format!("nfsport={nfs}"),
            Some(("mountport", _)) => format!("mountport={mount}"),
            _ => kv.to_string(),
        })
        .collect();
    format!("{head}?{}", query.join("&"))
}

fn port_of(url: &str, key: &str) -> u16 {
    let (_, query) = url.split_once('?').unwrap();
    query
        .split('&')
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{url}: no {key}="))
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

on_each_version! {
    fn front_refuses_a_client_without_tls(version) {
        // What makes the tests above proof that TLS was used: the same
        // mount without xprtsec fails at the front's STARTTLS port, on
        // NFSv4.1 at its NFS port, on NFSv3 at its MOUNT port (NFS goes
        // to Ganesha directly here: only MOUNT can fail).
        let Some(front) = front("front_refuses_a_client_without_tls") else {
            return;
        };
        let url = match version {
            Version::V3 => with_ports(
                &version.url(FAIL_FAST),
                port_of(&version.url(""), "nfsport"),
                front.base + MOUNT_PAIR + STARTTLS,
            ),
            Version::V41 => front.url(version, STARTTLS, FAIL_FAST),
        };
        let err = mount_fails(&url, Duration::from_secs(30));
        assert!(!err.is_empty());
        // The control: the same ports without the STARTTLS requirement.
        let plain = match version {
            Version::V3 => url.replace(
                &format!("mountport={}", front.base + MOUNT_PAIR + STARTTLS),
                &format!("mountport={}", front.base + MOUNT_PAIR + PLAIN),
            ),
            Version::V41 => front.url(version, PLAIN, SHORT_WAIT),
        };
        Client::connect(&plain).unwrap();
    }
}

#[test]
fn a_mount_port_without_starttls_fails_naming_mount() {
    // xprtsec=tls means nothing in clear: NFS through the front, MOUNT to
    // Ganesha itself, which answers the AUTH_TLS probe without STARTTLS.
    let Some(front) = front("a_mount_port_without_starttls_fails_naming_mount") else {
        return;
    };
    let options = format!("xprtsec=tls&tls_ca={}&{FAIL_FAST}", front.file("ca.pem"));
    let url = Version::V3.url(&options);
    let url = with_ports(&url, front.base + STARTTLS, port_of(&url, "mountport"));
    let err = mount_fails(&url, Duration::from_secs(10));
    assert!(
        err.contains("RPC-with-TLS to MOUNT at")
            && err.contains("AUTH_TLS probe")
            && err.contains("does not do RPC-with-TLS"),
        "{err}"
    );
}

#[test]
fn the_portmapper_is_asked_in_tls_too() {
    // No nfsport= or mountport=: GETPORT goes to the portmapper (port 111),
    // and with xprtsec=tls its connection must start with the AUTH_TLS
    // probe for program 100000. Where port 111 is free (root), a listener
    // of the test's own plays a portmapper without RPC-with-TLS and
    // records the first call; where an rpcbind holds it, that rpcbind
    // answers the probe, without STARTTLS. Either way the mount fails
    // naming the portmapper, and nothing was sent in clear.
    let test = "the_portmapper_is_asked_in_tls_too";
    let Some(front) = front(test) else {
        return;
    };
    let url = Version::V3.url("");
    let (head, _) = url.split_once('?').unwrap();
    let url = format!(
        "{head}?xprtsec=tls&tls_ca={}&{FAIL_FAST}",
        front.file("ca.pem")
    );
    for _ in 0..5 {
        match std::net::TcpListener::bind("127.0.0.1:111") {
            Ok(listener) => {
                let first =
                    std::thread::spawn(move || first_call_answered_without_starttls(&listener));
                let err = mount_fails(&url, Duration::from_secs(10));
                let words = first.join().unwrap();
                // xid, CALL, rpcvers 2, prog, vers, proc, credential flavour.
                assert_eq!(words[1..7], [0, 2, 100_000, 2, 0, 7], "{words:?}");
                assert!(
                    err.contains("RPC-with-TLS to the portmapper at 127.0.0.1:111")
                        && err.contains("does not do RPC-with-TLS"),
                    "{err}"
                );
                return;
            }
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
                let err = mount_fails(&url, Duration::from_secs(10));
                if err.contains("Connection refused") {
                    continue; // the rpcbind went away meanwhile
                }
                // Its probe refused (AUTH_TLS unknown), or answered and
                // then no TLS handshake: the start of TLS failed either way.
                assert!(
                    err.contains("RPC-with-TLS to the portmapper at 127.0.0.1:111")
                        && (err.contains("AUTH_TLS probe") || err.contains("TLS handshake")),
                    "{err}"
                );
                return;
            }
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                // As the NLM tests: only root may play a server on port 111.
                directnfs_testkit::server::skipped(
                    test,
                    &format!(
                        "not root: cannot listen on 127.0.0.1:111 to play the portmapper: {e}"
                    ),
                );
                return;
            }
            Err(e) => {
                directnfs_testkit::server::cannot_check(
                    test,
                    &format!("cannot listen on 127.0.0.1:111 to play the portmapper: {e}"),
                );
                return;
            }
        }
    }
    panic!("{test}: port 111 came and went five times");
}

/// Accepts one connection on `listener`, reads its first record and
/// answers it as a server without RPC-with-TLS would (accepted, AUTH_NONE
/// verifier with an empty body); returns the record's first words.
fn first_call_answered_without_starttls(listener: &std::net::TcpListener) -> Vec<u32> {
    use std::io::{Read, Write};
    let (mut s, _) = listener.accept().unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut mark = [0u8; 4];
    s.read_exact(&mut mark).unwrap();
    let len = (u32::from_be_bytes(mark) & 0x7fff_ffff) as usize;
    assert!((28..=4096).contains(&len), "record of {len} bytes");
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).unwrap();
    let words: Vec<u32> = body
        .chunks(4)
        .take(7)
        .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let mut reply = Vec::new();
    for w in [0x8000_0018u32, words[0], 1, 0, 0, 0, 0] {
        reply.extend_from_slice(&w.to_be_bytes());
    }
    s.write_all(&reply).unwrap();
    words
}

/// The first of the front's 12 ports before the NLM test server's NFS,
/// MOUNT and NLM ports (`DNFS_TEST_TLS_NLM_PORT`, which `scripts/test.sh`
/// sets where it starts that server, as root) and that server's URL;
/// `None` where there is none (skipped, or a failure under
/// `DNFS_TEST_REQUIRE_NLM`).
fn nlm_front(test: &str) -> Option<(String, u16)> {
    let url = directnfs_testkit::server::url_nlm(test)?;
    match std::env::var("DNFS_TEST_TLS_NLM_PORT")
        .ok()
        .and_then(|p| p.parse().ok())
    {
        Some(port) => Some((url, port)),
        None => {
            directnfs_testkit::server::cannot_check(
                test,
                "DNFS_TEST_URL_NLM is set but DNFS_TEST_TLS_NLM_PORT is not (a TLS front \
                 before the NLM server's NFS, MOUNT and NLM ports)",
            );
            None
        }
    }
}

#[test]
fn nlm_locks_go_through_tls_too() {
    // NFS, MOUNT and NLM each through the front's STARTTLS port, which
    // closes a connection whose first call is not the AUTH_TLS probe: a
    // lock granted and refused proves NLM's calls went through TLS.
    let test = "nlm_locks_go_through_tls_too";
    let Some(front) = front(test) else {
        return;
    };
    let Some((url, base)) = nlm_front(test) else {
        return;
    };
    let (head, _) = url.split_once('?').unwrap();
    let path = head.split_once("://").unwrap().1;
    let path = &path[path.find('/').unwrap()..];
    let url = format!(
        "nfs://127.0.0.1{path}?nfsport={base}&mountport={}&nlm_port={}&xprtsec=tls&tls_ca={}&{SHORT_WAIT}",
        base + 4,
        base + 8,
        front.file("ca.pem")
    );
    let c = Client::connect(&url).unwrap_or_else(|e| panic!("{url}: {e}"));
    let name = unique("tls-nlm");
    let f = c.create(&name).unwrap();
    let fh = f.handle();
    let (a, b) = (
        directnfs::NlmOwner::process_of(4101),
        directnfs::NlmOwner::process_of(4102),
    );
    c.nlm_lock(&fh, &a, (0, 100), true, false).unwrap();
    let e = c.nlm_lock(&fh, &b, (50, 10), true, false).unwrap_err();
    assert_eq!(e.errno(), libc::EAGAIN, "{e}");
    c.nlm_unlock(&fh, &a, (0, 0)).unwrap();
    c.nlm_lock(&fh, &b, (50, 10), true, false).unwrap();
    c.nlm_unlock(&fh, &b, (0, 0)).unwrap();
    drop(f);
    c.remove(&name).unwrap();
}

/// Kerberos contexts made so far in this process.
fn contexts() -> u64 {
    directnfs::security::counters().contexts
}

/// Of those, the ones bound to their connection's TLS session.
fn tls_bound_contexts() -> u64 {
    directnfs::security::counters().tls_bound
}

on_each_version! {
    fn kerberos_over_tls_writes_and_reads_back_at_each_flavor(version) {
        // sec=krb5* and xprtsec=tls together: each connection does the
        // AUTH_TLS probe and the handshake, then sets up its Kerberos
        // context inside TLS, bound to the session (channel bindings,
        // which Ganesha ignores). The front refuses clear (above), and the
        // contexts counted show Kerberos was used, and bound.
        let test = "kerberos_over_tls_writes_and_reads_back_at_each_flavor";
        let Some(front) = front(test) else {
            return;
        };
        for flavor in ["krb5", "krb5i", "krb5p"] {
            let options = format!(
                "sec={flavor}&xprtsec=tls&tls_ca={}&connections=2&{SHORT_WAIT}",
                front.file("ca.pem")
            );
            let Some(url) = front.krb5_url(test, version, STARTTLS, &options) else {
                return;
            };
            let (before, bound_before) = (contexts(), tls_bound_contexts());
            let c = Client::connect(&url).unwrap_or_else(|e| panic!("{flavor}: {url}: {e}"));
            write_and_read_back(&c);
            let made = contexts() - before;
            assert!(made >= 2, "{flavor}: {made} Kerberos contexts made");
            let bound = tls_bound_contexts() - bound_before;
            assert!(bound >= 2, "{flavor}: {bound} of them bound to their TLS session");
        }
    }
}

on_each_version! {
    fn kerberos_over_tls_puts_no_plaintext_on_the_wire(version) {
        // sec=krb5 protects only the headers: its data crosses in clear
        // (the control, through the front's clear port), unless TLS
        // carries it. A recording relay sits between the client and the
        // front's NFS port.
        let test = "kerberos_over_tls_puts_no_plaintext_on_the_wire";
        let Some(front) = front(test) else {
            return;
        };
        let marker: Vec<u8> = b"tls-over-krb5-marker:"
            .iter()
            .copied()
            .cycle()
            .take(64 * 1024)
            .collect();
        let through = |which: u16, tls: bool| {
            let options = if tls {
                format!("sec=krb5&xprtsec=tls&tls_ca={}&connections=1&{SHORT_WAIT}",
                    front.file("ca.pem"))
            } else {
                format!("sec=krb5&connections=1&{SHORT_WAIT}")
            };
            let url = front.krb5_url(test, version, which, &options)?;
            let nfs = port_of(&url, "nfsport");
            let relay = directnfs_testkit::tap::TapRelay::start(
                std::net::SocketAddr::from(([127, 0, 0, 1], nfs)),
            )
            .unwrap();
            let url = url.replace(
                &format!("nfsport={nfs}"),
                &format!("nfsport={}", relay.local_addr().port()),
            );
            let before = contexts();
            let c = Client::connect(&url).unwrap_or_else(|e| panic!("{url}: {e}"));
            let path = unique("tls-krb5-wire");
            let f = c.create(&path).unwrap();
            f.write_all_at(&marker, 0).unwrap();
            let mut back = vec![0u8; marker.len()];
            f.read_exact_at(&mut back, 0).unwrap();
            assert!(back == marker, "read back differs");
            drop(f);
            c.remove(&path).unwrap();
            assert!(contexts() > before, "{url}: no Kerberos context made");
            drop(c);
            Some((relay.sent(), relay.received()))
        };
        let probe = &marker[..32];
        let Some((sent, received)) = through(PLAIN, false) else {
            return;
        };
        assert!(contains(&sent, probe), "control: the WRITE data not seen in clear");
        assert!(contains(&received, probe), "control: the READ data not seen in clear");
        let (sent, received) = through(STARTTLS, true).unwrap();
        assert!(sent.len() > marker.len(), "only {} bytes relayed", sent.len());
        assert!(!contains(&sent, probe), "TLS: WRITE data seen in clear");
        assert!(!contains(&received, probe), "TLS: READ data seen in clear");
    }
}

on_each_version! {
    fn kerberos_over_tls_on_two_paths_goes_on_when_one_is_cut(version) {
        // Every path of a multipath mount gets TLS and Kerberos contexts of
        // its own (principal nfs/<path's host>): two paths, 127.0.0.1 and
        // 127.0.0.2, each through a TCP relay of the test kit to the front's
        // STARTTLS port before the Kerberized server (the front closes a
        // connection without TLS; its certificate names nfs.test). Both
        // paths carry I/O (4 connections each); then the second relay is
        // cut (its connections closed, new ones closed at once) while
        // calls are in flight, and the I/O goes on over the first, with
        // no error reaching the caller.
        let test = "kerberos_over_tls_on_two_paths_goes_on_when_one_is_cut";
        let Some(front) = front(test) else {
            return;
        };
        let options = format!(
            "sec=krb5i&xprtsec=tls&tls_ca={}&tls_name=nfs.test&connections=4&{SHORT_WAIT}",
            front.file("ca.pem")
        );
        let Some(url) = front.krb5_url(test, version, STARTTLS, &options) else {
            return;
        };
        let upstream = SocketAddr::from(([127, 0, 0, 1], port_of(&url, "nfsport")));
        let (first, second) = two_relays(upstream);
        let parsed = NfsUrl::parse(&url).unwrap();
        let mut target = Target::from_url(&parsed);
        target.paths = ["127.0.0.1", "127.0.0.2"]
            .into_iter()
            .map(|server| PathSpec {
                local: None,
                server: server.into(),
            })
            .collect();
        target.options.nfs_port = Some(first.local_addr().port());
        let before = contexts();
        let c = Client::mount(&target).unwrap_or_else(|e| panic!("{url}: two paths: {e}"));
        write_and_read_back(&c);
        let replies = |c: &Client| -> Vec<(String, u64)> {
            c.stats().servers[0]
                .paths
                .iter()
                .map(|p| (p.remote.clone(), p.totals.receives))
                .collect()
        };
        let both = replies(&c);
        assert!(
            both.len() == 2 && both.iter().all(|(_, n)| *n > 0),
            "replies per path: {both:?}"
        );
        assert!(contexts() - before >= 8, "{} Kerberos contexts made", contexts() - before);
        // The cut lands while the 128 pieces of an 8 MiB write and 16
        // threads' I/O are in flight.
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(30));
                second.cut();
            });
            write_and_read_back(&c);
        });
        write_and_read_back(&c);
        let after = replies(&c);
        assert!(after[0].1 > both[0].1, "nothing more on the first path: {both:?} then {after:?}");
        drop(c);
        drop(first);
    }
}

/// Two relays of the test kit to `upstream` on the same port, one on
/// 127.0.0.1 and one on 127.0.0.2 (two paths to one server). Byte relays:
/// TLS passes through them unchanged.
fn two_relays(upstream: SocketAddr) -> (TapRelay, TapRelay) {
    for _ in 0..20 {
        let first = TapRelay::start(upstream).unwrap();
        let port = first.local_addr().port();
        if let Ok(second) = TapRelay::start_on(SocketAddr::from(([127, 0, 0, 2], port)), upstream) {
            return (first, second);
        }
    }
    panic!("no port free on both 127.0.0.1 and 127.0.0.2");
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
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

/// A front of this test's own (ports PORT+4..PORT+7, its own directory,
/// the shared front's certificates), stopped on drop.
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
        backend: port_of(&Version::V3.url(""), "nfsport"),
        base: front.base + 4,
    };
    // The shared front's certificates (tls-front.py makes none where they
    // are): MOUNT goes through the shared front's MOUNT pair.
    std::fs::create_dir_all(&own.dir).unwrap();
    for f in [
        "ca.pem",
        "ca.key",
        "server.pem",
        "server.key",
        "client.pem",
        "client.key",
    ] {
        std::fs::copy(front.dir.join(f), own.dir.join(f)).unwrap();
    }
    own.run("start");
    let ca = front.file("ca.pem");
    let url = with_ports(
        &Version::V3.url(&format!(
            "xprtsec=tls&tls_ca={ca}&connections=2&{SHORT_WAIT}"
        )),
        own.base + STARTTLS,
        front.base + MOUNT_PAIR + STARTTLS,
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
