//! The shared write path's unit tests, one body run over NFSv3 and over
//! NFSv4.1: `crate::testing`'s in-process server answers NFSv3 calls and
//! (`testing_v41.rs`) NFSv4.1 COMPOUNDs, so the per-version steps of
//! `rpcops.rs` (a WRITE3 call or a COMPOUND on a session slot, COMMIT3 or
//! COMMIT in a COMPOUND) all run,
//! and the policy of `file.rs`, `fsync.rs` and `writelog.rs` above them
//! is checked the same on both.

use crate::client::Client;
use crate::config::{MountOptions, StableMode};
use crate::file::File;
use crate::open_options::OpenOptions;
use crate::testing::{Behaviour, FakeServer};

#[derive(Debug, Clone, Copy)]
enum Version {
    V3,
    V41,
}

/// An honest server (`Behaviour::honest_unstable`), a client of it over
/// `version` in UNSTABLE mode with `write_behind` bytes of write-behind,
/// and a file open on it. The server comes first so that it is dropped
/// last (the file's CLOSE and the session's DESTROY are answered).
fn setup(version: Version, write_behind: usize) -> (FakeServer, Client, File) {
    let options = MountOptions {
        stable: StableMode::Unstable,
        write_behind,
        ..MountOptions::default()
    };
    let behaviour = Behaviour {
        honest_unstable: true,
        ..Behaviour::default()
    };
    match version {
        Version::V3 => {
            let client = Client::detached(options, 4096, 4096);
            let server = FakeServer::start(&client, behaviour);
            let file = File::detached(&client, "/f");
            (server, client, file)
        }
        Version::V41 => {
            let (server, client) = Client::detached_v41(options, 4096, 4096, behaviour);
            let file = client
                .open_with(
                    "/f",
                    OpenOptions {
                        create: true,
                        ..Default::default()
                    },
                )
                .expect("OPEN on the fake NFSv4.1 server");
            assert!(file.shared.v4.is_some(), "an NFSv4.1 open file");
            (server, client, file)
        }
    }
}

/// Two overlapping UNSTABLE writes, a server restart that loses them (a
/// new write verifier), then `fsync`: its COMMIT sees the new verifier,
/// the data is sent again and the newer bytes win where they overlap.
fn newer_bytes_win_after_a_restart(version: Version, write_behind: usize) {
    let (server, _client, file) = setup(version, write_behind);
    assert_eq!(file.write_at(&[1u8; 6000], 0).unwrap(), 6000);
    assert_eq!(file.write_at(&[2u8; 3000], 2000).unwrap(), 3000);
    file.wait_write_behind();
    {
        let seen = server.seen();
        assert_eq!(seen.store.pending.len(), seen.writes.len(), "all UNSTABLE");
        assert!(seen.store.durable.is_empty(), "nothing durable yet");
    }
    server.restart();
    let before = server.seen().writes.len();
    file.fsync().unwrap();
    let seen = server.seen();
    assert!(seen.writes.len() > before, "the lost data was sent again");
    assert!(seen.commits >= 1);
    let d = &seen.store.durable;
    assert_eq!(d.len(), 6000, "{version:?}");
    assert!(d[..2000].iter().all(|&b| b == 1), "{version:?}: head");
    assert!(
        d[2000..5000].iter().all(|&b| b == 2),
        "{version:?}: newer bytes win"
    );
    assert!(d[5000..].iter().all(|&b| b == 1), "{version:?}: tail");
    assert!(seen.store.pending.is_empty(), "{version:?}: all committed");
}

#[test]
fn newer_bytes_win_after_a_restart_v3() {
    newer_bytes_win_after_a_restart(Version::V3, 0);
}

#[test]
fn newer_bytes_win_after_a_restart_v41() {
    newer_bytes_win_after_a_restart(Version::V41, 0);
}

#[test]
fn newer_bytes_win_after_a_restart_with_write_behind_v3() {
    newer_bytes_win_after_a_restart(Version::V3, 1 << 20);
}

// Not yet over NFSv4.1 with write-behind: that variant hangs against the
// fake server (a write-behind WRITE on a batch slot is never reaped there;
// not yet known whether the fake or the client is at fault).

/// Without a restart, `fsync` sends one COMMIT and no WRITE again; a
/// restart between the WRITEs and the COMMIT makes the COMMIT's verifier
/// differ and the WRITEs go again, then a COMMIT proves them durable.
fn a_commit_verifier_mismatch_sends_again(version: Version) {
    let (server, _client, file) = setup(version, 0);
    file.write_at(&[5u8; 100], 0).unwrap();
    file.fsync().unwrap();
    {
        let seen = server.seen();
        assert_eq!(seen.writes.len(), 1, "{version:?}");
        assert_eq!(seen.commits, 1, "{version:?}");
        assert_eq!(seen.store.durable, vec![5u8; 100]);
    }
    file.write_at(&[6u8; 100], 100).unwrap();
    server.restart();
    file.fsync().unwrap();
    let seen = server.seen();
    assert_eq!(seen.writes.len(), 3, "{version:?}: the write sent again");
    assert_eq!(seen.writes[2], (100, vec![6u8; 100]), "{version:?}");
    assert!(seen.commits >= 2, "{version:?}");
    assert_eq!(&seen.store.durable[100..], &[6u8; 100][..], "{version:?}");
}

#[test]
fn a_commit_verifier_mismatch_sends_again_v3() {
    a_commit_verifier_mismatch_sends_again(Version::V3);
}

#[test]
fn a_commit_verifier_mismatch_sends_again_v41() {
    a_commit_verifier_mismatch_sends_again(Version::V41);
}

/// An `fsync` with nothing written, or nothing written since the last
/// one, sends nothing.
fn an_fsync_with_nothing_pending_sends_nothing(version: Version) {
    let (server, _client, file) = setup(version, 0);
    let start = server.answered();
    file.fsync().unwrap();
    assert_eq!(server.answered(), start, "{version:?}: nothing written");
    file.write_at(&[1u8; 10], 0).unwrap();
    file.fsync().unwrap();
    let after = server.answered();
    assert_eq!(server.seen().commits, 1, "{version:?}");
    file.fsync().unwrap();
    assert_eq!(server.answered(), after, "{version:?}: nothing since");
}

#[test]
fn an_fsync_with_nothing_pending_sends_nothing_v3() {
    an_fsync_with_nothing_pending_sends_nothing(Version::V3);
}

#[test]
fn an_fsync_with_nothing_pending_sends_nothing_v41() {
    an_fsync_with_nothing_pending_sends_nothing(Version::V41);
}
