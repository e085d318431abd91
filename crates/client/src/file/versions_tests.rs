//! The shared write path's unit tests, one body run over NFSv3 and over
//! NFSv4.1: `crate::testing`'s in-process server answers NFSv3 calls and
//! (`testing_v41.rs`) NFSv4.1 COMPOUNDs, so the per-version steps of
//! `rpcops.rs` (a WRITE3 call or a COMPOUND on a session slot, COMMIT3 or
//! COMMIT in a COMPOUND) all run,
//! and the policy of `file.rs`, `fsync.rs` and `writelog.rs` above them
//! is checked the same on both: the repair after a restart (newer bytes
//! win, with and without write-behind), the COMMIT verifier check, the
//! COMMIT after a FILE_SYNC write the server downgraded (`write_at`, and a
//! `Batch` WRITE: on NFSv4.1 `batch/v41.rs` has its own copy of that
//! rule), and the
//! serialisation of `fsync` (one COMMIT for two at once; a write
//! acknowledged during a COMMIT stays uncommitted). Each body runs under
//! `within_30s`: a hang fails the test.

use directnfs_wire::nfs3::stable_how;

use crate::client::Client;
use crate::config::{MountOptions, StableMode};
use crate::file::File;
use crate::testing::{late, serve, within_30s, Behaviour, FakeServer, Version};
use std::time::Duration;

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
    setup_with(version, options, Behaviour::default())
}

/// [`setup`] with these mount options and this server behaviour (made
/// honest: UNSTABLE data is kept until COMMIT).
fn setup_with(
    version: Version,
    options: MountOptions,
    behaviour: Behaviour,
) -> (FakeServer, Client, File) {
    let behaviour = Behaviour {
        honest_unstable: true,
        ..behaviour
    };
    serve(version, options, behaviour)
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
    within_30s("v3", || newer_bytes_win_after_a_restart(Version::V3, 0));
}

#[test]
fn newer_bytes_win_after_a_restart_v41() {
    within_30s("v41", || newer_bytes_win_after_a_restart(Version::V41, 0));
}

#[test]
fn newer_bytes_win_after_a_restart_with_write_behind_v3() {
    within_30s("v3", || {
        newer_bytes_win_after_a_restart(Version::V3, 1 << 20)
    });
}

/// It hung once: the fake server answered every SEQUENCE with the
/// client's highest slot in use as its target (one slot), and a
/// write-behind write of two pieces took that slot for the first piece
/// and waited for it to send the second (see the next test).
#[test]
fn newer_bytes_win_after_a_restart_with_write_behind_v41() {
    within_30s("v41", || {
        newer_bytes_win_after_a_restart(Version::V41, 1 << 20)
    });
}

/// NFSv4.1 only (slots): a server that wants one slot used
/// (`sr_target_highest_slotid` 0, RFC 8881 §2.10.6.1). A write-behind
/// write of two pieces must not take that slot for its first piece
/// (held until reaped) and then wait for a slot to send the second: the
/// batches leave a quarter of the slots the server wants used, at least
/// one, so here each piece is sent and waited for.
#[test]
fn write_behind_on_a_server_that_wants_one_slot_used_sends_everything_v41() {
    within_30s("write-behind on one slot", || {
        let options = MountOptions {
            stable: StableMode::Unstable,
            write_behind: 1 << 20,
            ..MountOptions::default()
        };
        let behaviour = Behaviour {
            target_highest_slot: Some(0),
            ..Behaviour::default()
        };
        let (server, _client, file) = setup_with(Version::V41, options, behaviour);
        assert_eq!(file.write_at(&[3u8; 6000], 0).unwrap(), 6000);
        assert_eq!(file.write_at(&[4u8; 100], 6000).unwrap(), 100);
        file.fsync().unwrap();
        let seen = server.seen();
        assert_eq!(seen.writes.len(), 3, "two pieces and the small write");
        let mut want = vec![3u8; 6000];
        want.extend_from_slice(&[4u8; 100]);
        assert_eq!(seen.store.durable, want);
    });
}

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
    within_30s("v3", || a_commit_verifier_mismatch_sends_again(Version::V3));
}

#[test]
fn a_commit_verifier_mismatch_sends_again_v41() {
    within_30s("v41", || {
        a_commit_verifier_mismatch_sends_again(Version::V41)
    });
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
    within_30s("v3", || {
        an_fsync_with_nothing_pending_sends_nothing(Version::V3)
    });
}

#[test]
fn an_fsync_with_nothing_pending_sends_nothing_v41() {
    within_30s("v41", || {
        an_fsync_with_nothing_pending_sends_nothing(Version::V41)
    });
}

/// A FILE_SYNC write (the default mode) the server takes only UNSTABLE:
/// `write_at` promised durable data, so it COMMITs before returning.
/// If that COMMIT fails, the write fails and the data stays logged; the
/// next `fsync` commits it.
fn a_file_sync_write_answered_unstable_is_committed_before_it_returns(version: Version) {
    let behaviour = Behaviour {
        downgrade_writes: true,
        ..Behaviour::default()
    };
    let (server, _client, file) = setup_with(version, MountOptions::default(), behaviour);
    assert_eq!(file.write_at(&[1u8; 6000], 0).unwrap(), 6000);
    {
        let seen = server.seen();
        assert!(
            seen.stables.iter().all(|s| *s == stable_how::FILE_SYNC),
            "{version:?}: {:?}",
            seen.stables
        );
        assert_eq!(seen.commits, 1, "{version:?}: committed before returning");
        assert_eq!(seen.store.durable, vec![1u8; 6000], "{version:?}");
        assert!(seen.store.pending.is_empty(), "{version:?}");
    }
    assert_eq!(file.uncommitted_bytes(), 0, "{version:?}");

    server.fail_commits(1);
    let e = file.write_at(&[2u8; 100], 0).unwrap_err();
    assert_eq!(e.errno(), libc::EIO, "{version:?}: {e}");
    assert!(e.to_string().contains("COMMIT"), "{version:?}: {e}");
    assert_eq!(file.uncommitted_bytes(), 100, "{version:?}: kept");
    file.fsync().unwrap();
    assert_eq!(file.uncommitted_bytes(), 0, "{version:?}");
    let seen = server.seen();
    assert_eq!(seen.commits, 2, "{version:?}");
    assert_eq!(&seen.store.durable[..100], &[2u8; 100][..], "{version:?}");
}

#[test]
fn a_file_sync_write_answered_unstable_is_committed_before_it_returns_v3() {
    within_30s("v3", || {
        a_file_sync_write_answered_unstable_is_committed_before_it_returns(Version::V3)
    });
}

#[test]
fn a_file_sync_write_answered_unstable_is_committed_before_it_returns_v41() {
    within_30s("v41", || {
        a_file_sync_write_answered_unstable_is_committed_before_it_returns(Version::V41)
    });
}

/// Two `fsync`s at once on one file: the second waits for the first's
/// COMMIT (answered `late()`) and finds nothing left to commit, so one
/// COMMIT serves both, and neither returns before it is answered.
fn two_fsyncs_at_once_send_one_commit_and_both_wait_for_it(version: Version) {
    let options = MountOptions {
        stable: StableMode::Unstable,
        write_behind: 0,
        ..MountOptions::default()
    };
    let behaviour = Behaviour {
        delay: late(),
        ..Behaviour::default()
    };
    let (server, _client, file) = setup_with(version, options, behaviour);
    file.write_at(&[7u8; 100], 0).unwrap();
    let before = server.taken();
    let first = {
        let file = file.clone();
        std::thread::spawn(move || file.fsync())
    };
    // The first fsync's COMMIT is on the wire (the server holds it
    // `late()` before answering).
    while server.taken() == before {
        std::thread::sleep(Duration::from_millis(1));
    }
    file.fsync().unwrap();
    assert_eq!(server.seen().commits, 1, "{version:?}: the second waited");
    first.join().unwrap().unwrap();
    let seen = server.seen();
    assert_eq!(seen.commits, 1, "{version:?}: one COMMIT for both");
    assert_eq!(seen.store.durable, vec![7u8; 100], "{version:?}");
}

#[test]
fn two_fsyncs_at_once_send_one_commit_and_both_wait_for_it_v3() {
    within_30s("v3", || {
        two_fsyncs_at_once_send_one_commit_and_both_wait_for_it(Version::V3)
    });
}

#[test]
fn two_fsyncs_at_once_send_one_commit_and_both_wait_for_it_v41() {
    within_30s("v41", || {
        two_fsyncs_at_once_send_one_commit_and_both_wait_for_it(Version::V41)
    });
}

/// A write acknowledged while an `fsync`'s COMMIT is in flight (the
/// server carried out the COMMIT, then took the WRITE, and answered the
/// WRITE first) was not covered by it: it stays uncommitted, and the next
/// `fsync` COMMITs it.
fn a_write_during_a_commit_is_not_counted_as_committed(version: Version) {
    let options = MountOptions {
        stable: StableMode::Unstable,
        write_behind: 0,
        ..MountOptions::default()
    };
    let behaviour = Behaviour {
        commit_reply_delay: late() * 10,
        ..Behaviour::default()
    };
    let (server, _client, file) = setup_with(version, options, behaviour);
    file.write_at(&[1u8; 100], 0).unwrap();
    let fsync = {
        let file = file.clone();
        std::thread::spawn(move || file.fsync())
    };
    // The COMMIT is carried out; its reply comes `late() * 10` after.
    while server.seen().commits == 0 {
        std::thread::sleep(Duration::from_millis(1));
    }
    file.write_at(&[2u8; 100], 100).unwrap();
    assert!(
        !fsync.is_finished(),
        "{version:?}: acknowledged before the COMMIT"
    );
    fsync.join().unwrap().unwrap();
    assert_eq!(
        file.uncommitted_bytes(),
        100,
        "{version:?}: the write after the COMMIT is not committed"
    );
    {
        let seen = server.seen();
        assert_eq!(
            seen.store.pending,
            vec![(100, vec![2u8; 100])],
            "{version:?}"
        );
    }
    file.fsync().unwrap();
    assert_eq!(file.uncommitted_bytes(), 0, "{version:?}");
    let seen = server.seen();
    assert_eq!(seen.commits, 2, "{version:?}");
    let mut want = vec![1u8; 100];
    want.extend_from_slice(&[2u8; 100]);
    assert_eq!(seen.store.durable, want, "{version:?}");
}

#[test]
fn a_write_during_a_commit_is_not_counted_as_committed_v3() {
    within_30s("v3", || {
        a_write_during_a_commit_is_not_counted_as_committed(Version::V3)
    });
}

#[test]
fn a_write_during_a_commit_is_not_counted_as_committed_v41() {
    within_30s("v41", || {
        a_write_during_a_commit_is_not_counted_as_committed(Version::V41)
    });
}

/// The same through a [`Batch`](crate::Batch) WRITE: its completion
/// promises durability, so a downgraded FILE_SYNC WRITE is COMMITted
/// before it completes; a failed COMMIT is the completion's error, and
/// the data stays logged for the next `fsync`.
fn a_file_sync_batch_write_answered_unstable_is_committed_before_it_completes(version: Version) {
    let behaviour = Behaviour {
        downgrade_writes: true,
        ..Behaviour::default()
    };
    let (server, client, file) = setup_with(version, MountOptions::default(), behaviour);
    let mut batch = crate::Batch::new(&client);
    batch.write(&file, 0, &[1u8; 6000], 1).unwrap();
    let done = batch.wait(1, None);
    assert_eq!(done[0].result.as_ref().ok(), Some(&6000), "{version:?}");
    {
        let seen = server.seen();
        assert!(
            seen.stables.iter().all(|s| *s == stable_how::FILE_SYNC),
            "{version:?}: {:?}",
            seen.stables
        );
        assert_eq!(seen.commits, 1, "{version:?}: committed before completing");
        assert_eq!(seen.store.durable, vec![1u8; 6000], "{version:?}");
    }
    assert_eq!(file.uncommitted_bytes(), 0, "{version:?}");

    server.fail_commits(1);
    batch.write(&file, 0, &[2u8; 100], 2).unwrap();
    let done = batch.wait(1, None);
    let e = done[0].result.as_ref().unwrap_err();
    assert_eq!(e.errno(), libc::EIO, "{version:?}: {e}");
    assert!(e.to_string().contains("COMMIT"), "{version:?}: {e}");
    assert_eq!(file.uncommitted_bytes(), 100, "{version:?}: kept");
    file.fsync().unwrap();
    assert_eq!(file.uncommitted_bytes(), 0, "{version:?}");
    assert_eq!(&server.seen().store.durable[..100], &[2u8; 100][..]);
}

#[test]
fn a_file_sync_batch_write_answered_unstable_is_committed_before_it_completes_v3() {
    within_30s("v3", || {
        a_file_sync_batch_write_answered_unstable_is_committed_before_it_completes(Version::V3)
    });
}

#[test]
fn a_file_sync_batch_write_answered_unstable_is_committed_before_it_completes_v41() {
    within_30s("v41", || {
        a_file_sync_batch_write_answered_unstable_is_committed_before_it_completes(Version::V41)
    });
}
