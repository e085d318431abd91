//! NFSv4.1 session trunking against a real NFS-Ganesha
//! (`DNFS_TEST_URL_V41`; skipped without it unless
//! `DNFS_TEST_REQUIRE_SERVER=1`): every connection bound to the session
//! once with BIND_CONN_TO_SESSION (again after a reconnect and after a
//! new session), and a path whose EXCHANGE_ID names another server
//! refused while the client carries on over the others.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use directnfs::config::NfsUrl;
use directnfs::{Client, PathSpec, Target};
use directnfs_testkit::proxy::{FaultProxy, ProxyConfig};

fn url() -> Option<String> {
    directnfs_testkit::server::url_v41("trunking")
}

/// The server's address of `url`.
fn upstream(parsed: &NfsUrl) -> SocketAddr {
    let port = parsed.options.nfs_port.or(parsed.port).unwrap_or(2049);
    format!("{}:{port}", parsed.host).parse().unwrap()
}

fn proxy(listen: SocketAddr, upstream: SocketAddr) -> FaultProxy {
    FaultProxy::start(ProxyConfig {
        listen,
        upstream,
        connect_timeout: Duration::from_secs(2),
        seed: 7,
    })
    .unwrap()
}

/// `parsed`'s mount over two paths, 127.0.0.1 and `second`, both to
/// `port` (the proxies), with `connections` per path.
fn two_paths(parsed: &NfsUrl, second: &str, port: u16, connections: usize) -> Target {
    let mut target = Target::from_url(parsed);
    target.paths = ["127.0.0.1", second]
        .into_iter()
        .map(|server| PathSpec {
            local: None,
            server: server.into(),
        })
        .collect();
    target.options.nfs_port = Some(port);
    target.options.connections = connections;
    target
}

/// Some namespace traffic in `dir`, enough to use every connection.
fn traffic(client: &Client, dir: &str, rounds: usize) {
    for i in 0..rounds {
        let p = format!("{dir}/f{i}");
        let f = client.create(&p).unwrap();
        f.write_at(b"trunk", 0).unwrap();
        drop(f);
        assert_eq!(client.metadata(&p).unwrap().size, 5);
        client.remove(&p).unwrap();
    }
}

fn wait_for(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Each connection sends BIND_CONN_TO_SESSION once (and nothing more
/// while it lives), a reconnect binds its new connection, and a new
/// session (after NFS4ERR_BADSESSION) has every connection bind again
/// before its next request; the server accepts every bind.
#[test]
fn every_connection_binds_once_and_again_after_a_reconnect_and_a_new_session() {
    let Some(url) = url() else { return };
    let parsed = NfsUrl::parse(&url).unwrap();
    let front = proxy("127.0.0.1:0".parse().unwrap(), upstream(&parsed));
    let mut target = Target::from_url(&parsed);
    target.options.nfs_port = Some(front.local_addr().port());
    target.options.connections = 4;
    target.options.timeo = Duration::from_secs(2);
    let client = Client::mount(&target).unwrap();
    let dir = format!("/trunk-bind-{}", std::process::id());
    client.mkdir(&dir).unwrap();
    traffic(&client, &dir, 24);
    let (sent, ok) = client.binds_for_test();
    assert_eq!((sent, ok), (4, 4), "one bind per connection");
    traffic(&client, &dir, 24);
    assert_eq!(
        client.binds_for_test(),
        (4, 4),
        "no bind on a bound connection"
    );

    // A connection cut (its reply lost): the channel reconnects and its
    // new connection is bound before it carries anything.
    let before = front.counts().connections;
    front.lose_reply(0);
    traffic(&client, &dir, 2);
    wait_for("the reconnect", || front.counts().connections > before);
    wait_for("the reconnect's bind", || client.binds_for_test().0 >= 5);
    traffic(&client, &dir, 8);
    let (sent, ok) = client.binds_for_test();
    assert_eq!((sent, ok), (5, 5), "one more bind, for the new connection");

    // A new session: every connection binds to it at its next request.
    client.destroy_session_for_test();
    traffic(&client, &dir, 24);
    assert_eq!(
        client.session_recoveries_for_test(),
        ["NFS4ERR_BADSESSION"],
        "a new session"
    );
    let (sent, ok) = client.binds_for_test();
    assert_eq!(sent, ok, "every bind accepted");
    assert_eq!(sent, 5 + 4, "each connection bound to the new session once");
    client.rmdir(&dir).unwrap();
}

/// A reconnect while the session is gone on the server: the new
/// connection's BIND_CONN_TO_SESSION is answered NFS4ERR_BADSESSION, the
/// request re-sent on it meets the same status and recovers the session,
/// and the connection binds to the new session; the caller sees no error.
#[test]
fn a_bind_refused_with_badsession_ends_in_a_new_session_and_a_new_bind() {
    let Some(url) = url() else { return };
    let parsed = NfsUrl::parse(&url).unwrap();
    let front = proxy("127.0.0.1:0".parse().unwrap(), upstream(&parsed));
    let mut target = Target::from_url(&parsed);
    target.options.nfs_port = Some(front.local_addr().port());
    target.options.connections = 1;
    target.options.timeo = Duration::from_secs(2);
    let client = Client::mount(&target).unwrap();
    let dir = format!("/trunk-badsession-{}", std::process::id());
    client.mkdir(&dir).unwrap();
    assert_eq!(client.binds_for_test(), (1, 1));
    // The server forgets the session; the reply saying so is lost with
    // the connection, so the client learns it only on the new one.
    client.destroy_session_for_test();
    front.lose_reply(0);
    traffic(&client, &dir, 4);
    assert_eq!(
        client.session_recoveries_for_test(),
        ["NFS4ERR_BADSESSION"],
        "one new session"
    );
    assert_eq!(
        client.binds_for_test(),
        (3, 2),
        "the first bind, the reconnect's (refused: BADSESSION), the new session's"
    );
    assert_eq!(front.counts().lost_replies, 1);
    client.rmdir(&dir).unwrap();
}

/// Two paths, the second through a proxy that makes its EXCHANGE_ID name
/// another server (`so_major_id`): the path is refused with an error
/// naming it and both owners, and the client works over the first path
/// only (the second's proxy sees nothing after the check).
#[test]
fn a_path_to_another_server_is_refused_and_the_client_keeps_working() {
    let Some(url) = url() else { return };
    let parsed = NfsUrl::parse(&url).unwrap();
    let server = upstream(&parsed);
    let good = proxy("127.0.0.1:0".parse().unwrap(), server);
    let port = good.local_addr().port();
    let other = proxy(SocketAddr::from(([127, 0, 0, 2], port)), server);
    other.set_server_owner_v41(Some(b"another-server"));
    let target = two_paths(&parsed, "127.0.0.2", port, 2);
    let client = Client::mount(&target).unwrap();
    let owners = client.server_owners();
    assert_eq!(owners.len(), 2, "{owners:?}");
    assert!(owners[0].refused.is_none(), "{owners:?}");
    assert_ne!(owners[0].major_id, b"another-server");
    assert_eq!(owners[1].major_id, b"another-server");
    let why = owners[1].refused.clone().expect("path 1 refused");
    assert!(
        why.contains("path 1")
            && why.contains("127.0.0.2")
            && why.contains("\"another-server\"")
            && why.contains(&directnfs::printable(&owners[0].major_id))
            && why.contains("not used"),
        "{why}"
    );
    let seen = other.counts().forwarded;
    let dir = format!("/trunk-refuse-{}", std::process::id());
    client.mkdir(&dir).unwrap();
    traffic(&client, &dir, 16);
    client.rmdir(&dir).unwrap();
    assert_eq!(
        other.counts().forwarded,
        seen,
        "nothing goes over the refused path"
    );
    assert!(good.counts().forwarded > 16 * 4);
}

/// The path of another server that comes up only after the mount is
/// judged at its first connection, and refused as well.
#[test]
fn a_path_that_comes_up_later_is_checked_at_its_first_connection() {
    let Some(url) = url() else { return };
    let parsed = NfsUrl::parse(&url).unwrap();
    let server = upstream(&parsed);
    let good = proxy("127.0.0.1:0".parse().unwrap(), server);
    let port = good.local_addr().port();
    let target = two_paths(&parsed, "127.0.0.3", port, 1);
    let client = Client::mount(&target).unwrap();
    assert_eq!(client.server_owners().len(), 1, "path 1 not connected yet");
    let late = proxy(SocketAddr::from(([127, 0, 0, 3], port)), server);
    late.set_server_owner_v41(Some(b"late-server"));
    wait_for("path 1's check", || client.server_owners().len() == 2);
    let owners = client.server_owners();
    let why = owners[1].refused.clone().expect("path 1 refused");
    assert!(why.contains("\"late-server\""), "{why}");
    let seen = late.counts().forwarded;
    let dir = format!("/trunk-late-{}", std::process::id());
    client.mkdir(&dir).unwrap();
    traffic(&client, &dir, 8);
    client.rmdir(&dir).unwrap();
    assert_eq!(late.counts().forwarded, seen);
}
