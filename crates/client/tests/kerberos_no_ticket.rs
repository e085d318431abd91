//! A user without Kerberos credentials (no ticket cache, no client
//! keytab) gets a clear EACCES that names the server and what is missing,
//! at once, never a hang: from a context, and from a `sec=krb5i` mount on
//! NFSv3 and on NFSv4.1. A test binary of its own: it points this
//! process's `KRB5CCNAME` and `KRB5_CLIENT_KTNAME` at files that do not
//! exist, before the GSS-API library is first used.

// Test code: a failed expectation is a test failure, said in words.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use directnfs::security::{Flavor, GssConnection, GssError, SecurityError};
use directnfs_wire::nfs3::{NFS_PROGRAM, NFS_V3};

#[test]
fn no_ticket_is_eacces_naming_the_server() {
    let Some(url) = directnfs_testkit::server::url_krb5("no_ticket_is_eacces_naming_the_server")
    else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("dnfs-no-ticket-{}", std::process::id()));
    std::env::set_var(
        "KRB5CCNAME",
        format!("FILE:{}/missing.ccache", dir.display()),
    );
    std::env::set_var(
        "KRB5_CLIENT_KTNAME",
        format!("FILE:{}/missing.keytab", dir.display()),
    );
    let rest = url.strip_prefix("nfs://").expect("nfs URL");
    let host = &rest[..rest.find('/').expect("path")];
    let port: u16 = rest
        .split(['?', '&'])
        .find_map(|kv| kv.strip_prefix("nfsport="))
        .expect("nfsport")
        .parse()
        .expect("port");
    let addr = (host, port).to_socket_addrs().unwrap().next().unwrap();
    let stream = TcpStream::connect(addr).expect("connect");
    let started = Instant::now();
    for flavor in [Flavor::Krb5, Flavor::Krb5p] {
        let stream = stream.try_clone().expect("clone");
        let e = GssConnection::establish(
            stream,
            host,
            (NFS_PROGRAM, NFS_V3),
            flavor,
            Duration::from_secs(20),
        )
        .expect_err("a context without credentials");
        assert!(
            matches!(
                e,
                SecurityError::Gss {
                    source: GssError::NoCredentials(_),
                    ..
                }
            ),
            "{}: not a missing-credentials error: {e}",
            flavor.name()
        );
        assert_eq!(e.errno(), libc::EACCES);
        let text = e.to_string();
        assert!(text.contains(&addr.to_string()), "names no server: {text}");
        assert!(
            text.contains("kinit") && text.contains("missing.ccache"),
            "says not what is missing: {text}"
        );
    }
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    // A mount (`Client`, as the C library, the VFS and `dnfs run` make
    // it): EACCES at once, naming the server; no fall-back to AUTH_SYS,
    // which this export would take, and no retrying until mnt_timeout.
    let started = Instant::now();
    let e = match directnfs::Client::connect(&format!("{url}&sec=krb5i&mnt_timeout=30")) {
        Ok(_) => panic!("mounted with sec=krb5i without a ticket"),
        Err(e) => e,
    };
    assert_eq!(e.errno(), libc::EACCES, "{e}");
    let text = e.to_string();
    // The MNT call is the first sealed one (MOUNT under RPCSEC_GSS): the
    // MOUNT port is named.
    let mount_port: u16 = rest
        .split(['?', '&'])
        .find_map(|kv| kv.strip_prefix("mountport="))
        .expect("mountport")
        .parse()
        .expect("port");
    assert!(
        text.contains(&format!("Kerberos to {host}:{mount_port}:"))
            && text.contains("permission denied")
            && text.contains("kinit")
            && !text.contains("cannot reach"),
        "{text}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "mount took {:?}",
        started.elapsed()
    );
    // NFSv4.1 (no MOUNT protocol): the first sealed call is on the NFS
    // port, whose context cannot be made; the same EACCES at once.
    let started = Instant::now();
    let v41 = format!(
        "nfs://{host}{}?vers=4.1&nfsport={port}",
        &rest[host.len()..rest.find('?').expect("query")]
    );
    let e = match directnfs::Client::connect(&format!("{v41}&sec=krb5i&mnt_timeout=30")) {
        Ok(_) => panic!("mounted NFSv4.1 with sec=krb5i without a ticket"),
        Err(e) => e,
    };
    assert_eq!(e.errno(), libc::EACCES, "{e}");
    let text = e.to_string();
    assert!(
        text.contains(&format!("{host}:{port}"))
            && text.contains("permission denied")
            && text.contains("kinit")
            && !text.contains("cannot reach"),
        "{text}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "NFSv4.1 mount took {:?}",
        started.elapsed()
    );
}
