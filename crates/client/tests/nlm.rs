//! NFSv3 locks through the server's lock manager (NLM v4) against a real
//! NFS-Ganesha started with `Enable_NLM` and rpc.statd
//! (`DNFS_TEST_URL_NLM`, which `scripts/test.sh` exports as root; the
//! tests skip without it). The lock manager's port comes from the
//! server's portmapper (GETPORT), as on a filer.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use directnfs::{Client, NlmOwner};

fn url() -> Option<String> {
    directnfs_testkit::server::url_nlm("nlm")
}

/// A fresh file of its own for each test.
fn file(client: &Client, name: &str) -> directnfs::File {
    let path = format!("/nlm-{name}-{}", std::process::id());
    let _ = client.remove(&path);
    client.create(&path).unwrap()
}

#[test]
fn nlm_locks_of_two_owners_exclude_each_other_and_test_names_the_holder() {
    let Some(url) = url() else { return };
    let client = Client::connect(&url).unwrap();
    let f = file(&client, "two");
    let fh = f.handle();
    let (a, b) = (NlmOwner::process_of(4001), NlmOwner::process_of(4002));
    client.nlm_lock(&fh, &a, (0, 100), true, false).unwrap();
    let e = client.nlm_lock(&fh, &b, (50, 10), true, false).unwrap_err();
    assert_eq!(e.errno(), libc::EAGAIN, "{e}");
    assert!(directnfs::lock_should_wait(&e));
    let (conflict, svid) = client.nlm_test(&fh, &b, (50, 10), false).unwrap().unwrap();
    assert_eq!(
        (conflict.offset, conflict.len, conflict.exclusive),
        (0, 100, true)
    );
    assert_eq!(svid, 4001);
    // Its own lock never conflicts; bytes beyond the range are free.
    assert_eq!(client.nlm_test(&fh, &a, (0, 100), true).unwrap(), None);
    client.nlm_lock(&fh, &b, (200, 10), true, false).unwrap();
    client.nlm_unlock(&fh, &a, (0, 0)).unwrap();
    client.nlm_lock(&fh, &b, (50, 10), true, false).unwrap();
    client.nlm_unlock(&fh, &b, (0, 0)).unwrap();
    // Shared locks of two owners coexist.
    client.nlm_lock(&fh, &a, (0, 0), false, false).unwrap();
    client.nlm_lock(&fh, &b, (0, 0), false, false).unwrap();
    client.nlm_unlock(&fh, &a, (0, 0)).unwrap();
    client.nlm_unlock(&fh, &b, (0, 0)).unwrap();
}

#[test]
fn a_blocking_nlm_lock_waits_for_the_holders_unlock() {
    let Some(url) = url() else { return };
    let client = Client::connect(&url).unwrap();
    let f = file(&client, "wait");
    let fh = f.handle();
    let (a, b) = (NlmOwner::process_of(4101), NlmOwner::process_of(4102));
    client.nlm_lock(&fh, &a, (0, 0), true, false).unwrap();
    let (c2, fh2) = (client.clone(), fh);
    let started = Instant::now();
    let waiter = std::thread::spawn(move || {
        c2.nlm_lock(&fh2, &b, (0, 1), true, true).unwrap();
        started.elapsed()
    });
    std::thread::sleep(Duration::from_millis(500));
    client.nlm_unlock(&fh, &a, (0, 0)).unwrap();
    let waited = waiter.join().unwrap();
    assert!(waited >= Duration::from_millis(500), "{waited:?}");
    client
        .nlm_unlock(&fh, &NlmOwner::process_of(4102), (0, 0))
        .unwrap();
}

#[test]
fn nlm_lock_without_a_lock_manager_is_enolck_naming_nolock() {
    // The main test server runs without NLM (scripts/test.sh); only
    // meaningful beside an NLM server, the topology test.sh sets up.
    let Some(_) = url() else { return };
    let Some(main) = directnfs_testkit::server::url("nlm") else {
        return;
    };
    let client = Client::connect(&main).unwrap();
    let f = file(&client, "none");
    let e = client
        .nlm_lock(&f.handle(), &NlmOwner::process(), (0, 0), true, false)
        .unwrap_err();
    assert_eq!(e.errno(), libc::ENOLCK, "{e}");
    let text = e.to_string();
    assert!(
        text.contains("nolock") && text.contains("local_lock="),
        "{text}"
    );
}
