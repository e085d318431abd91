//! `mnt_timeout` against a real Ganesha: a client started while the server
//! is down waits for it (a database starting during a filer takeover).
//! (A server that never comes: `mounting::unreachable_server_*`.)

use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use directnfs::config::NfsUrl;
use directnfs::Client;
use directnfs_testkit::ganesha::OwnGanesha;
use directnfs_testkit::server::wanted;

#[test]
fn client_started_while_the_server_is_down_opens_once_it_is_up() {
    if !wanted("late_server") {
        return;
    }
    let server = OwnGanesha::start(
        "late-server",
        &[
            ("DNFS_PRIVATE_RPCBIND", "1"),
            ("DNFS_NFS_PORT", "2652"),
            ("DNFS_MNT_PORT", "20652"),
        ],
    )
    .unwrap();
    let data: Vec<u8> = (0..1_000_000u32).map(|i| (i % 241) as u8).collect();
    std::fs::write(server.export_dir().join("db.dat"), &data).unwrap();
    let url = NfsUrl::parse(server.url()).unwrap();
    let nfs = SocketAddr::from(([127, 0, 0, 1], url.options.nfs_port.unwrap()));
    let mnt = SocketAddr::from(([127, 0, 0, 1], url.options.mount_port.unwrap()));

    // Killed now, started again 3 s later (the script waits until it is up).
    let mut restart = server.spawn_restart(&["--kill", "--down", "3"]).unwrap();
    let refused = |a: &SocketAddr| TcpStream::connect_timeout(a, Duration::from_secs(1)).is_err();
    let until = Instant::now() + Duration::from_secs(20);
    while !(refused(&nfs) && refused(&mnt)) {
        assert!(Instant::now() < until, "the server did not go down");
        std::thread::sleep(Duration::from_millis(20));
    }

    let started = Instant::now();
    let (base, query) = server.url().split_once('?').unwrap();
    let file_url = format!("{base}/db.dat?{query}&mnt_timeout=60");
    let client = Client::connect(&file_url).unwrap_or_else(|e| panic!("{file_url}: {e}"));
    let waited = started.elapsed();
    let file = client.open(client.target_path()).unwrap();
    let mut back = vec![0u8; data.len()];
    file.read_exact_at(&mut back, 0).unwrap();
    assert!(back == data, "wrong data after the wait");
    assert!(
        restart.wait().unwrap().success(),
        "nfs-server.sh restart failed"
    );
    // Down for 3 s (less the moment the kill took to be seen).
    assert!(
        waited >= Duration::from_millis(2500),
        "did not wait: {waited:?}"
    );
    assert!(waited < Duration::from_secs(30), "{waited:?}");
    eprintln!("mount waited {waited:?} for the server");
    drop(server);
}
