//! Kerberos (RPCSEC_GSS, RFC 2203) against a real KDC and NFS-Ganesha
//! (`scripts/server/kdc.sh`, `DNFS_KRB5=1 scripts/server/nfs-server.sh`): the context
//! handshake, then MOUNT and NFSv3 calls sealed with krb5, krb5i and
//! krb5p, their data read back; and what crosses the wire under krb5p.
//! Then the same through `Client` mounted with `sec=krb5*`, on NFSv3 and
//! NFSv4.1: the pipelined transport with many calls in flight, metadata,
//! and what crosses the wire. (Without a ticket: `kerberos_no_ticket.rs`;
//! a ticket that expires under load: `kerberos_renewal.rs`.)
//!
//! The environment is `scripts/test.sh`'s: `DNFS_TEST_URL_KRB5`, and the
//! realm's `KRB5_CONFIG` with the test user's ticket in `KRB5CCNAME`.

// Test code: a failed expectation is a test failure, said in words.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use directnfs::security::{Flavor, GssConnection, SecurityError};
use directnfs_wire::mount::{dirpath, mountres3, MOUNTPROC3_MNT, MOUNT_PROGRAM, MOUNT_V3};
use directnfs_wire::nfs3::{
    createhow3, diropargs3, filename3, nfs_fh3, sattr3, stable_how, CREATE3args, CREATE3res,
    Nfs3Res, READ3args, READ3res, WRITE3args, WRITE3res, NFSPROC3_CREATE, NFSPROC3_READ,
    NFSPROC3_WRITE, NFS_PROGRAM, NFS_V3,
};
use directnfs_wire::xdr::{decode_exact, to_bytes};

const TIMEOUT: Duration = Duration::from_secs(20);

/// The parts of a test URL (`nfs://HOST/PATH?nfsport=N&mountport=M`;
/// NFSv4.1's has no MOUNT port).
struct Target {
    host: String,
    path: String,
    nfs: SocketAddr,
    mount: SocketAddr,
}

fn target(url: &str) -> Target {
    let rest = url.strip_prefix("nfs://").expect("nfs:// URL");
    let (host_path, query) = rest.split_once('?').expect("URL with ports");
    let (host, path) = host_path.split_at(host_path.find('/').expect("URL path"));
    let port = |key: &str| -> Option<u16> {
        query
            .split('&')
            .find_map(|kv| kv.strip_prefix(key))
            .and_then(|v| v.strip_prefix('='))
            .map(|v| v.parse().expect("numeric port"))
    };
    let addr = |p: u16| (host, p).to_socket_addrs().unwrap().next().unwrap();
    let nfs = port("nfsport").expect("nfsport in URL");
    Target {
        host: host.to_owned(),
        path: path.to_owned(),
        nfs: addr(nfs),
        // An NFSv4.1 URL has none (no MOUNT protocol).
        mount: addr(port("mountport").unwrap_or(nfs)),
    }
}

fn connect(addr: SocketAddr, t: &Target, prog: (u32, u32), flavor: Flavor) -> GssConnection {
    let stream = TcpStream::connect_timeout(&addr, TIMEOUT).expect("connect");
    GssConnection::establish(stream, &t.host, prog, flavor, TIMEOUT)
        .unwrap_or_else(|e| panic!("{}: context with {addr}: {e}", flavor.name()))
}

/// MNT over a Kerberos context: the export's root handle.
fn mount_root(t: &Target, flavor: Flavor) -> nfs_fh3 {
    let mut conn = connect(t.mount, t, (MOUNT_PROGRAM, MOUNT_V3), flavor);
    let args = to_bytes(&dirpath(t.path.as_bytes().to_vec()));
    let res = conn.call(MOUNTPROC3_MNT, &args, TIMEOUT).expect("MNT");
    match decode_exact::<mountres3>(&res, "mountres3").expect("mountres3") {
        mountres3::Ok(ok) => ok.fhandle,
        mountres3::Err(s) => panic!("MNT {}: {s:?}", t.path),
    }
}

fn create(conn: &mut GssConnection, dir: &nfs_fh3, name: &str) -> nfs_fh3 {
    let args = CREATE3args {
        where_: diropargs3 {
            dir: *dir,
            name: filename3(name.as_bytes().to_vec()),
        },
        how: createhow3::Unchecked(sattr3::default()),
    };
    let res = conn
        .call(NFSPROC3_CREATE, &to_bytes(&args), TIMEOUT)
        .expect("CREATE");
    match decode_exact::<CREATE3res>(&res, "CREATE3res").expect("CREATE3res") {
        Nfs3Res::Ok(ok) => ok.obj.expect("CREATE returns the handle"),
        Nfs3Res::Fail(s, _) => panic!("CREATE {name}: {s:?}"),
    }
}

fn write(conn: &mut GssConnection, fh: &nfs_fh3, offset: u64, data: &[u8]) {
    let args = WRITE3args {
        file: *fh,
        offset,
        count: data.len() as u32,
        stable: stable_how::FILE_SYNC,
        data: data.to_vec(),
    };
    let res = conn
        .call(NFSPROC3_WRITE, &to_bytes(&args), TIMEOUT)
        .expect("WRITE");
    match decode_exact::<WRITE3res>(&res, "WRITE3res").expect("WRITE3res") {
        Nfs3Res::Ok(ok) => assert_eq!(ok.count as usize, data.len(), "short WRITE"),
        Nfs3Res::Fail(s, _) => panic!("WRITE: {s:?}"),
    }
}

fn read(conn: &mut GssConnection, fh: &nfs_fh3, offset: u64, count: u32) -> Vec<u8> {
    let args = READ3args {
        file: *fh,
        offset,
        count,
    };
    let res = conn
        .call(NFSPROC3_READ, &to_bytes(&args), TIMEOUT)
        .expect("READ");
    match decode_exact::<READ3res>(&res, "READ3res").expect("READ3res") {
        Nfs3Res::Ok(ok) => ok.data,
        Nfs3Res::Fail(s, _) => panic!("READ: {s:?}"),
    }
}

/// A pattern no NFS header or Kerberos token would contain by chance.
fn pattern(len: usize) -> Vec<u8> {
    let text = b"directnfs-plaintext-marker-";
    (0..len)
        .map(|i| text[i % text.len()] ^ (i / 64) as u8)
        .collect()
}

fn write_and_read_back(flavor: Flavor) {
    let Some(url) = directnfs_testkit::server::url_krb5("kerberos") else {
        return;
    };
    let t = target(&url);
    let root = mount_root(&t, flavor);
    let mut conn = connect(t.nfs, &t, (NFS_PROGRAM, NFS_V3), flavor);
    assert!(conn.context().window().limit() >= 1);
    let name = format!("krb-{}-{}", flavor.name(), std::process::id());
    let fh = create(&mut conn, &root, &name);
    let data: Vec<u8> = (0..256 * 1024u32)
        .map(|i| (i * 7 + i / 251) as u8)
        .collect();
    write(&mut conn, &fh, 0, &data[..128 * 1024]);
    write(&mut conn, &fh, 128 * 1024, &data[128 * 1024..]);
    let mut back = read(&mut conn, &fh, 0, 200 * 1024);
    back.extend(read(&mut conn, &fh, 200 * 1024, 100 * 1024));
    assert_eq!(
        back.len(),
        data.len(),
        "{}: length read back",
        flavor.name()
    );
    assert!(back == data, "{}: data read back differs", flavor.name());
}

#[test]
fn krb5_writes_and_reads_a_file_on_nfsv3() {
    write_and_read_back(Flavor::Krb5);
}

#[test]
fn krb5i_writes_and_reads_a_file_on_nfsv3() {
    write_and_read_back(Flavor::Krb5i);
}

#[test]
fn krb5p_writes_and_reads_a_file_on_nfsv3() {
    write_and_read_back(Flavor::Krb5p);
}

/// What the client sent and received through a recording relay while
/// writing and reading back `marker` with `flavor`.
fn wire_bytes(flavor: Flavor, marker: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let url = directnfs_testkit::server::url_krb5("kerberos")?;
    let t = target(&url);
    let root = mount_root(&t, flavor);
    let relay = directnfs_testkit::tap::TapRelay::start(t.nfs).expect("relay");
    let mut conn = connect(relay.local_addr(), &t, (NFS_PROGRAM, NFS_V3), flavor);
    let fh = create(
        &mut conn,
        &root,
        &format!("krb-wire-{}-{}", flavor.name(), std::process::id()),
    );
    write(&mut conn, &fh, 0, marker);
    assert_eq!(read(&mut conn, &fh, 0, marker.len() as u32), marker);
    drop(conn);
    Some((relay.sent(), relay.received()))
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn krb5p_sends_and_receives_no_plaintext() {
    let marker = pattern(4096);
    // The control: under krb5i the data crosses in clear, and the relay
    // sees it both ways, so the check below can see plaintext.
    let Some((sent, received)) = wire_bytes(Flavor::Krb5i, &marker) else {
        return;
    };
    assert!(
        contains(&sent, &marker[..64]),
        "krb5i WRITE data not seen by the relay"
    );
    assert!(
        contains(&received, &marker[..64]),
        "krb5i READ data not seen by the relay"
    );
    let (sent, received) = wire_bytes(Flavor::Krb5p, &marker).expect("same server");
    assert!(sent.len() > marker.len() && received.len() > marker.len());
    for window in [&marker[..16], &marker[1000..1016], &marker[4080..]] {
        assert!(!contains(&sent, window), "krb5p: plaintext sent");
        assert!(!contains(&received, window), "krb5p: plaintext received");
    }
}

#[test]
fn each_retransmission_needs_a_new_sequence_number() {
    let Some(url) = directnfs_testkit::server::url_krb5("kerberos") else {
        return;
    };
    let t = target(&url);
    let mut conn = connect(t.nfs, &t, (NFS_PROGRAM, NFS_V3), Flavor::Krb5i);
    let (_, a) = conn.seal(0, &[]).expect("seal");
    let (_, b) = conn.seal(0, &[]).expect("seal");
    assert_ne!(
        a.seq_num, b.seq_num,
        "two sealings of one call share a number"
    );
    assert_ne!(a.message, b.message);
}

#[test]
fn a_reply_whose_verifier_was_altered_is_refused() {
    let Some(url) = directnfs_testkit::server::url_krb5("kerberos") else {
        return;
    };
    let t = target(&url);
    let mut conn = connect(t.nfs, &t, (NFS_PROGRAM, NFS_V3), Flavor::Krb5);
    // NULL: the reply is the header and the verifier only.
    let (xid, sealed) = conn.seal(0, &[]).expect("seal");
    let record = conn.round_trip(&sealed.message, TIMEOUT).expect("NULL");
    let ctx = conn.context();
    assert_eq!(
        ctx.open(&record, xid, sealed.seq_num, 1 << 20)
            .expect("intact reply"),
        b""
    );
    // The verifier's body starts after xid, REPLY, MSG_ACCEPTED, its
    // flavor and its length.
    let mut altered = record.clone();
    altered[20] ^= 0x01;
    let e = ctx
        .open(&altered, xid, sealed.seq_num, 1 << 20)
        .unwrap_err();
    assert!(matches!(e, SecurityError::BadVerifier { .. }), "{e}");
    // The intact reply checked against another sequence number fails too:
    // the verifier is the checksum of the call's own number.
    let e = ctx
        .open(&record, xid, sealed.seq_num + 1, 1 << 20)
        .unwrap_err();
    assert!(matches!(e, SecurityError::BadVerifier { .. }), "{e}");
}

/// A reply whose protected body was altered on the way (its checksum
/// under krb5i, its wrap token under krb5p) is refused, though its
/// verifier is intact.
#[test]
fn a_reply_whose_protected_body_was_altered_is_refused() {
    let Some(url) = directnfs_testkit::server::url_krb5("kerberos") else {
        return;
    };
    let t = target(&url);
    for flavor in [Flavor::Krb5i, Flavor::Krb5p] {
        let mut conn = connect(t.nfs, &t, (NFS_PROGRAM, NFS_V3), flavor);
        let (xid, sealed) = conn.seal(0, &[]).expect("seal");
        let record = conn.round_trip(&sealed.message, TIMEOUT).expect("NULL");
        let ctx = conn.context();
        ctx.open(&record, xid, sealed.seq_num, 1 << 20)
            .unwrap_or_else(|e| panic!("{}: intact reply refused: {e}", flavor.name()));
        // The body ends the record; 4 bytes from the end is inside the
        // checksum or token whatever its padding.
        let mut altered = record.clone();
        let at = altered.len() - 4;
        altered[at] ^= 0x01;
        let e = ctx
            .open(&altered, xid, sealed.seq_num, 1 << 20)
            .expect_err("an altered body passed");
        assert!(
            matches!(e, SecurityError::Gss { .. }),
            "{}: {e}",
            flavor.name()
        );
    }
}

/// NFSv4.1 (program 100003 version 4) takes the same contexts: an
/// EXCHANGE_ID COMPOUND under krb5i and krb5p gets a client ID back.
/// (A mount's: `client_mount_with_krb5*` `on_nfsv41`.)
#[test]
fn nfsv41_exchange_id_under_krb5i_and_krb5p() {
    use directnfs_wire::nfs4::{
        client_owner4, nfs_argop4, nfs_resop4, owner_id4, verifier4, COMPOUND4args, COMPOUND4res,
        EXCHANGE_ID4args, Nfs4Res, EXCHGID4_FLAG_USE_NON_PNFS, NFSPROC4_COMPOUND, NFS_V4,
    };
    let Some(url) = directnfs_testkit::server::url_krb5("kerberos") else {
        return;
    };
    let t = target(&url);
    for flavor in [Flavor::Krb5i, Flavor::Krb5p] {
        let mut conn = connect(t.nfs, &t, (NFS_PROGRAM, NFS_V4), flavor);
        let args = COMPOUND4args {
            minorversion: 1,
            argarray: vec![nfs_argop4::OP_EXCHANGE_ID(EXCHANGE_ID4args {
                eia_clientowner: client_owner4 {
                    co_verifier: verifier4(*b"krb5test"),
                    co_ownerid: owner_id4(
                        format!(
                            "directnfs-kerberos-test-{}-{}",
                            flavor.name(),
                            std::process::id()
                        )
                        .into_bytes(),
                    ),
                },
                eia_flags: EXCHGID4_FLAG_USE_NON_PNFS,
                ..Default::default()
            })],
            ..Default::default()
        };
        let res = conn
            .call(NFSPROC4_COMPOUND, &to_bytes(&args), TIMEOUT)
            .unwrap_or_else(|e| panic!("{}: COMPOUND: {e}", flavor.name()));
        let res = decode_exact::<COMPOUND4res>(&res, "COMPOUND4res").expect("COMPOUND4res");
        assert!(res.status.is_ok(), "{}: {:?}", flavor.name(), res.status);
        match res.resarray.as_slice() {
            [nfs_resop4::OP_EXCHANGE_ID(Nfs4Res::Ok(ok))] => assert_ne!(ok.eir_clientid, 0),
            other => panic!("{}: {other:?}", flavor.name()),
        }
    }
}

// ---------------------------------------------------------------------
// Mounts through `Client` (`sec=krb5|krb5i|krb5p` in the URL): every call
// on the pipelined transport sealed, every reply opened.

/// The test URL with `sec=FLAVOR` added.
fn client_url(url: &str, flavor: Flavor) -> String {
    format!("{url}&sec={}", flavor.name())
}

/// A protocol version a Kerberos mount test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Vers {
    V3,
    V41,
}

/// The Kerberos server's URL for `vers` (its NFSv4.1 form: the export's
/// pseudo-file-system path, the NFS port, no MOUNT port).
fn krb_url(vers: Vers, test: &str) -> Option<String> {
    let url = directnfs_testkit::server::url_krb5(test)?;
    Some(match vers {
        Vers::V3 => url,
        Vers::V41 => {
            let t = target(&url);
            format!(
                "nfs://{}{}?vers=4.1&nfsport={}",
                t.host,
                t.path,
                t.nfs.port()
            )
        }
    })
}

/// `on_both_versions!(fn name(vers) { body })`: module `name` with the
/// tests `on_nfsv3` and `on_nfsv41`, each running `body` with `vers` set.
macro_rules! on_both_versions {
    ($(#[$attr:meta])* fn $name:ident($v:ident) $body:block) => {
        $(#[$attr])*
        mod $name {
            use super::*;

            fn body($v: Vers) $body

            #[test]
            fn on_nfsv3() {
                body(Vers::V3);
            }

            #[test]
            fn on_nfsv41() {
                body(Vers::V41);
            }
        }
    };
}

/// Writes a 4 MiB file through a Kerberos mount and reads it back with 64
/// READs of 64 KiB in flight at once (more than the 32 calls a context
/// may have in flight per connection: the transport keeps each within it),
/// then metadata: size, a directory made and listed, a rename, removes.
fn client_writes_and_reads_back(vers: Vers, flavor: Flavor) {
    let Some(url) = krb_url(vers, "kerberos") else {
        return;
    };
    let client = directnfs::Client::connect(&client_url(&url, flavor))
        .unwrap_or_else(|e| panic!("{vers:?} {}: mount: {e}", flavor.name()));
    if vers == Vers::V41 {
        let slots = client.session_slots().expect("an NFSv4.1 session");
        assert!(slots >= 1, "{slots}");
        // The test export's SecType (nfs-server.sh), by SECINFO_NO_NAME.
        let mut flavors = client.export_flavors();
        flavors.sort();
        assert_eq!(flavors, ["krb5", "krb5i", "krb5p", "sys"], "{flavors:?}");
    }
    let name = format!(
        "/krb-client-{vers:?}-{}-{}",
        flavor.name(),
        std::process::id()
    );
    let file = client.create(&name).expect("create");
    const PIECE: usize = 64 * 1024;
    const PIECES: usize = 64;
    let data: Vec<u8> = (0..PIECE * PIECES)
        .map(|i| (i * 13 + i / 4093) as u8)
        .collect();
    // Writes in flight together too: 64 threads, one piece each.
    std::thread::scope(|s| {
        for (i, piece) in data.chunks(PIECE).enumerate() {
            let file = &file;
            s.spawn(move || {
                file.write_all_at(piece, (i * PIECE) as u64)
                    .unwrap_or_else(|e| panic!("write piece {i}: {e}"))
            });
        }
    });
    file.fsync().expect("fsync");
    let back: Vec<Vec<u8>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..PIECES)
            .map(|i| {
                let file = &file;
                s.spawn(move || {
                    let mut buf = vec![0u8; PIECE];
                    file.read_exact_at(&mut buf, (i * PIECE) as u64)
                        .unwrap_or_else(|e| panic!("read piece {i}: {e}"));
                    buf
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("reader"))
            .collect()
    });
    let back = back.concat();
    assert_eq!(back.len(), data.len(), "{}: length", flavor.name());
    assert!(back == data, "{}: data read back differs", flavor.name());
    // Metadata under the same flavor.
    let meta = client.metadata(&name).expect("metadata");
    assert_eq!(meta.size, data.len() as u64, "{}: size", flavor.name());
    let dir = format!("{name}.d");
    client.mkdir(&dir).expect("mkdir");
    let moved = format!("{dir}/moved");
    drop(file);
    client.rename(&name, &moved).expect("rename");
    let names: Vec<String> = client
        .read_dir(&dir)
        .expect("read_dir")
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert!(names.iter().any(|n| n == "moved"), "{names:?}");
    drop(client);
    // A fresh client (new contexts) reads the same bytes.
    let client = directnfs::Client::connect(&client_url(&url, flavor)).expect("second mount");
    let mut again = vec![0u8; data.len()];
    client
        .open(&moved)
        .expect("open")
        .read_exact_at(&mut again, 0)
        .expect("read");
    assert!(
        again == data,
        "{}: second mount reads other data",
        flavor.name()
    );
    client.remove(&moved).expect("remove");
    client.rmdir(&dir).expect("rmdir");
}

on_both_versions! {
    fn client_mount_with_krb5_writes_and_reads_64_calls_in_flight(vers) {
        client_writes_and_reads_back(vers, Flavor::Krb5);
    }
}

on_both_versions! {
    fn client_mount_with_krb5i_writes_and_reads_64_calls_in_flight(vers) {
        client_writes_and_reads_back(vers, Flavor::Krb5i);
    }
}

on_both_versions! {
    fn client_mount_with_krb5p_writes_and_reads_64_calls_in_flight(vers) {
        client_writes_and_reads_back(vers, Flavor::Krb5p);
    }
}

/// What a `Client` mounted with `flavor` sent to and received from the
/// NFS port (through a recording relay) while writing and reading back
/// `marker`.
fn client_wire_bytes(url: &str, flavor: Flavor, marker: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let t = target(url);
    let relay = directnfs_testkit::tap::TapRelay::start(t.nfs).expect("relay");
    let relayed = url.replace(
        &format!("nfsport={}", t.nfs.port()),
        &format!("nfsport={}", relay.local_addr().port()),
    );
    // One connection: everything crosses the relay's one stream.
    let client =
        directnfs::Client::connect(&format!("{}&connections=1", client_url(&relayed, flavor)))
            .unwrap_or_else(|e| panic!("{}: mount through the relay: {e}", flavor.name()));
    // NFSv3 and NFSv4.1 run at once: a name each.
    let vers = if url.contains("vers=4.1") {
        "v41"
    } else {
        "v3"
    };
    let name = format!(
        "/krb-client-wire-{vers}-{}-{}",
        flavor.name(),
        std::process::id()
    );
    let file = client.create(&name).expect("create");
    file.write_all_at(marker, 0).expect("write");
    file.fsync().expect("fsync");
    let mut back = vec![0u8; marker.len()];
    file.read_exact_at(&mut back, 0).expect("read");
    assert!(back == marker, "{}: read back differs", flavor.name());
    drop(file);
    client.remove(&name).expect("remove");
    drop(client);
    (relay.sent(), relay.received())
}

on_both_versions! {
    /// Through `Client`, krb5p data crosses the wire encrypted both ways;
    /// the control, krb5i, shows the relay would see it in clear. On
    /// NFSv4.1 the client owner of EXCHANGE_ID (the connection's own, before
    /// the session, and the session's) is not seen in clear either: those
    /// calls are sealed too.
    fn client_mount_with_krb5p_sends_and_receives_no_plaintext(vers) {
        let Some(url) = krb_url(vers, "kerberos") else {
            return;
        };
        // Every client owner of this host starts so (v4/trunk.rs).
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").expect("hostname");
        let owner = format!("directnfs/{}/", host.trim());
        let marker = pattern(256 * 1024);
        let (sent, received) = client_wire_bytes(&url, Flavor::Krb5i, &marker);
        assert!(
            contains(&sent, &marker[..64]) && contains(&received, &marker[..64]),
            "krb5i: the relay did not see the data in clear"
        );
        if vers == Vers::V41 {
            assert!(
                contains(&sent, owner.as_bytes()),
                "krb5i: the relay did not see the client owner in clear"
            );
        }
        let (sent, received) = client_wire_bytes(&url, Flavor::Krb5p, &marker);
        assert!(sent.len() > marker.len() && received.len() > marker.len());
        for window in [
            &marker[..16],
            &marker[100_000..100_016],
            &marker[marker.len() - 16..],
        ] {
            assert!(!contains(&sent, window), "krb5p: plaintext sent");
            assert!(!contains(&received, window), "krb5p: plaintext received");
        }
        assert!(
            !contains(&sent, owner.as_bytes()),
            "krb5p: the client owner was sent in clear"
        );
    }
}

/// A relay to `server` that spoils the context handle of every RPCSEC_GSS
/// call on the first connection it relays once `after` calls went
/// through on it: the server then knows no such context, as after it
/// dropped one. Later connections are relayed as they are. Returns the
/// local port.
fn handle_spoiling_relay(server: SocketAddr, after: usize) -> u16 {
    use std::io::{Read, Write};
    use std::net::TcpListener;
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for (n, client) in listener.incoming().enumerate() {
            let Ok(mut client) = client else { return };
            let Ok(mut upstream) = TcpStream::connect(server) else {
                return;
            };
            let (mut c2, mut u2) = (client.try_clone().unwrap(), upstream.try_clone().unwrap());
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut u2, &mut c2);
                let _ = c2.shutdown(std::net::Shutdown::Both);
            });
            std::thread::spawn(move || {
                let mut calls = 0usize;
                loop {
                    let mut mark = [0u8; 4];
                    if client.read_exact(&mut mark).is_err() {
                        break;
                    }
                    let len = (u32::from_be_bytes(mark) & 0x7fff_ffff) as usize;
                    let mut rec = vec![0u8; len];
                    if client.read_exact(&mut rec).is_err() {
                        break;
                    }
                    calls += 1;
                    // xid, CALL, rpcvers, prog, vers, proc, then the
                    // credential: flavor 6 (RPCSEC_GSS), length, version,
                    // gss_proc 0 (DATA), seq_num, service, handle.
                    let word = |at: usize| {
                        rec.get(at..at + 4)
                            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
                    };
                    if n == 0
                        && calls > after
                        && word(24) == Some(6)
                        && word(36) == Some(0)
                        && word(48).is_some_and(|l| l > 0)
                        && rec.len() > 52
                    {
                        rec[52] ^= 0xff;
                    }
                    if upstream.write_all(&mark).is_err() || upstream.write_all(&rec).is_err() {
                        break;
                    }
                }
                let _ = upstream.shutdown(std::net::Shutdown::Both);
            });
        }
    });
    port
}

on_both_versions! {
    /// A context the server no longer knows (its handle spoiled on the way,
    /// as after the server dropped it): the server's CREDPROBLEM or
    /// CTXPROBLEM on a context that had worked fails the connection, a new
    /// one with a new context takes its calls, and the caller of a hard
    /// mount sees no error; the data reads back.
    fn a_context_the_server_lost_is_replaced_without_an_error(vers) {
        let Some(url) = krb_url(vers, "kerberos") else {
            return;
        };
        let t = target(&url);
        let port = handle_spoiling_relay(t.nfs, 8);
        let relayed = url.replace(
            &format!("nfsport={}", t.nfs.port()),
            &format!("nfsport={port}"),
        );
        let before = directnfs::security::counters();
        let client = directnfs::Client::connect(&format!(
            "{}&connections=1&hard",
            client_url(&relayed, Flavor::Krb5i)
        ))
        .unwrap_or_else(|e| panic!("{vers:?}: mount through the relay: {e}"));
        let name = format!("/krb-lost-{vers:?}-{}", std::process::id());
        let file = client.create(&name).expect("create");
        let data = pattern(64 * 1024);
        for i in 0..16u64 {
            file.write_all_at(&data, i * data.len() as u64)
                .unwrap_or_else(|e| panic!("{vers:?}: write {i}: {e}"));
        }
        let mut back = vec![0u8; data.len()];
        for i in 0..16u64 {
            file.read_exact_at(&mut back, i * data.len() as u64)
                .unwrap_or_else(|e| panic!("{vers:?}: read {i}: {e}"));
            assert!(back == data, "{vers:?}: piece {i} read back differs");
        }
        drop(file);
        client.remove(&name).expect("remove");
        let after = directnfs::security::counters();
        assert!(after.lost > before.lost, "no context was lost: {before:?} -> {after:?}");
    }
}

on_both_versions! {
    /// The Kerberos server's second export takes krb5p only
    /// (`DNFS_TEST_URL_KRB5P`): a mount at krb5, krb5i or sys fails at once
    /// with EACCES naming krb5p (NFSv3: MNT's flavor list; NFSv4.1: SECINFO
    /// after NFS4ERR_WRONGSEC), and one at krb5p works.
    fn a_flavor_the_export_does_not_take_is_eacces_naming_the_ones_it_does(vers) {
        let Some(url) = directnfs_testkit::server::url_krb5p("kerberos") else {
            return;
        };
        let url = match vers {
            Vers::V3 => url,
            Vers::V41 => {
                let t = target(&url);
                format!("nfs://{}{}?vers=4.1&nfsport={}", t.host, t.path, t.nfs.port())
            }
        };
        for flavor in ["krb5", "krb5i", "sys"] {
            let started = std::time::Instant::now();
            let e = match directnfs::Client::connect(&format!("{url}&sec={flavor}&mnt_timeout=30")) {
                Ok(_) => panic!("{vers:?}: the krb5p-only export took sec={flavor}"),
                Err(e) => e,
            };
            let text = e.to_string();
            assert_eq!(e.errno(), libc::EACCES, "{text}");
            assert!(
                text.contains("takes sec=krb5p") && text.contains(&format!("not sec={flavor}")),
                "{text}"
            );
            assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
        }
        let c = directnfs::Client::connect(&format!("{url}&sec=krb5p&mnt_timeout=10"))
            .expect("a krb5p mount of the krb5p-only export");
        if vers == Vers::V41 {
            assert_eq!(c.export_flavors(), ["krb5p"], "SECINFO_NO_NAME of the export");
        }
        let name = format!("/krb5p-only-{vers:?}-{}", std::process::id());
        let f = c.create(&name).expect("create at krb5p");
        assert_eq!(f.write_at(b"sealed", 0).expect("write"), 6);
        drop(f);
        c.remove(&name).expect("remove");
    }
}
