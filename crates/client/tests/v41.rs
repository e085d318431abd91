//! The client on NFSv4.1 against a real NFS-Ganesha (`DNFS_TEST_URL_V41`,
//! which `scripts/test.sh` exports; the tests skip without it unless
//! `DNFS_TEST_REQUIRE_SERVER=1`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::ErrorKind;

use directnfs::{Client, OpenOptions};

/// The NFSv4.1 URL, or `None` (test skipped) when there is no server.
fn url() -> Option<String> {
    match std::env::var("DNFS_TEST_URL_V41") {
        Ok(u) if !u.is_empty() => Some(u),
        _ => {
            assert!(
                std::env::var("DNFS_TEST_REQUIRE_SERVER").as_deref() != Ok("1"),
                "DNFS_TEST_URL_V41 is not set and DNFS_TEST_REQUIRE_SERVER=1"
            );
            eprintln!("skipped: DNFS_TEST_URL_V41 not set");
            None
        }
    }
}

fn with(url: &str, options: &str) -> String {
    format!("{url}&{options}")
}

/// A directory of its own for each test, removed when done.
fn scratch(client: &Client, name: &str) -> String {
    let dir = format!("/v41-{name}-{}", std::process::id());
    let _ = remove_tree(client, &dir);
    client.mkdir(&dir).unwrap();
    dir
}

fn remove_tree(client: &Client, dir: &str) -> directnfs::Result<()> {
    for e in client.read_dir(dir)? {
        let p = format!("{dir}/{}", e.name);
        if e.metadata.is_some_and(|m| m.is_dir()) {
            remove_tree(client, &p)?;
        } else {
            client.remove(&p)?;
        }
    }
    client.rmdir(dir)
}

#[test]
fn mounts_with_a_session_and_reads_back_what_it_wrote() {
    let Some(url) = url() else { return };
    let client = Client::connect(&url).unwrap();
    let slots = client.session_slots().expect("an NFSv4.1 session");
    assert!(slots >= 1, "{slots}");
    let dir = scratch(&client, "rw");
    let path = format!("{dir}/data.bin");
    let file = client.create(&path).unwrap();
    let data: Vec<u8> = (0..3 * 1024 * 1024 + 123)
        .map(|i| (i * 7 % 251) as u8)
        .collect();
    assert_eq!(file.write_at(&data, 4096).unwrap(), data.len());
    file.fsync().unwrap();
    let mut back = vec![0u8; data.len() + 4096 + 10];
    let n = file.read_at(&mut back, 0).unwrap();
    assert_eq!(n, data.len() + 4096, "short read stops at EOF");
    assert!(back[..4096].iter().all(|&b| b == 0));
    assert_eq!(&back[4096..n], &data[..]);
    assert_eq!(file.metadata().unwrap().size, (data.len() + 4096) as u64);
    file.set_len(10).unwrap();
    assert_eq!(client.metadata(&path).unwrap().size, 10);
    drop(file);
    // A second open sees the data; create truncates.
    let again = client.open(&path).unwrap();
    let mut ten = [0u8; 16];
    assert_eq!(again.read_at(&mut ten, 0).unwrap(), 10);
    drop(again);
    let truncated = client.create(&path).unwrap();
    assert_eq!(truncated.metadata().unwrap().size, 0);
    drop(truncated);
    remove_tree(&client, &dir).unwrap();
}

#[test]
fn namespace_operations_and_their_errors() {
    let Some(url) = url() else { return };
    let client = Client::connect(&url).unwrap();
    let dir = scratch(&client, "ns");
    let a = format!("{dir}/a");
    let b = format!("{dir}/b");
    client.create(&a).unwrap().write_at(b"hello", 0).unwrap();
    let e = client.open(&format!("{dir}/missing")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(e.to_string().contains("missing"), "{e}");
    let exclusive = OpenOptions {
        create_new: true,
        ..Default::default()
    };
    let e = client.open_with(&a, exclusive).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AlreadyExists, "{e}");
    client.rename(&a, &b).unwrap();
    assert_eq!(client.metadata(&a).unwrap_err().kind(), ErrorKind::NotFound);
    assert_eq!(client.metadata(&b).unwrap().size, 5);
    client.mkdir(&format!("{dir}/sub")).unwrap();
    let mut names: Vec<String> = client
        .read_dir(&dir)
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    names.sort();
    assert_eq!(names, ["b", "sub"]);
    assert!(client.rmdir(&b).is_err(), "rmdir of a file");
    assert!(
        client.remove(&format!("{dir}/sub")).is_err(),
        "remove of a directory"
    );
    let e = client.rmdir(&dir).unwrap_err();
    assert_eq!(e.errno(), libc::ENOTEMPTY, "{e}");
    remove_tree(&client, &dir).unwrap();
    assert_eq!(
        client.metadata(&dir).unwrap_err().kind(),
        ErrorKind::NotFound
    );
}

#[test]
fn what_nfsv41_does_not_do_yet_is_refused_clearly() {
    let Some(url) = url() else { return };
    let client = Client::connect(&url).unwrap();
    let e = client.readlink("/whatever").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    assert!(e.to_string().starts_with("NFSv4.1: "), "{e}");
    let e = Client::connect(&with(&url, "stable=unstable")).unwrap_err();
    assert!(e.to_string().contains("stable=unstable"), "{e}");
    let dir = scratch(&client, "refuse");
    let f = client.create(&format!("{dir}/f")).unwrap();
    let mut batch = directnfs::Batch::new(&client);
    let e = batch.write(&f, 0, b"x", 1).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    drop(f);
    remove_tree(&client, &dir).unwrap();
}
