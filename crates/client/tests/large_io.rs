//! A large read or write is split into `rsize`/`wsize` pieces that are
//! all sent at once (the crate doc's promise), on each protocol version:
//! one test body, run against the shared Ganesha over NFSv3
//! (`DNFS_TEST_URL`) and NFSv4.1 (`DNFS_TEST_URL_V41`). The measure is the
//! transport's peak of calls in flight (`inflight_peak`), which counts
//! NFSv3 calls and NFSv4.1 COMPOUNDs alike; a client that sent the pieces
//! one at a time would peak at 1 or 2.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use directnfs::Client;

const MIB: usize = 1 << 20;
const PIECE: usize = 64 << 10;

/// Calls in flight at the transport's peak so far.
fn peak(c: &Client) -> u64 {
    c.stats()
        .servers
        .iter()
        .map(|s| s.totals.inflight_peak)
        .max()
        .unwrap_or(0)
}

/// An 8 MiB write and an 8 MiB read at 64 KiB transfers (128 pieces each),
/// each by a client of its own so that the peak is the operation's: both
/// put every piece in flight at once (on NFSv4.1, as many as three quarters
/// of the session's slots allow) and the data reads back.
fn large_io_goes_in_parallel(url: &str, version: &str) {
    let url = format!("{url}&rsize={PIECE}&wsize={PIECE}");
    let writer = Client::connect(&url).unwrap();
    let path = format!("/large-io-{version}-{}", std::process::id());
    let data: Vec<u8> = (0..8 * MIB).map(|i| (i * 31 % 253) as u8).collect();
    let f = writer.create(&path).unwrap();
    assert_eq!(f.write_at(&data, 0).unwrap(), data.len());
    f.fsync().unwrap();
    let wrote = peak(&writer);
    drop(f);

    let reader = Client::connect(&url).unwrap();
    let f = reader.open(&path).unwrap();
    let mut back = vec![0u8; data.len()];
    assert_eq!(f.read_at(&mut back, 0).unwrap(), data.len());
    assert!(back == data, "{version}: the data read back differs");
    let read = peak(&reader);
    // The statistics (and `dnfs stats`) name the version.
    let named = reader.stats().servers[0].nfs_version.clone();
    assert_eq!(named, if version == "NFSv3" { "3" } else { "4.1" });
    // Every piece goes out at once on both versions. On NFSv4.1 each piece
    // needs a session slot of its own, and a client's batch may take at most
    // three quarters of the session's slots: the test servers grant 1024
    // (Ganesha's slot_table_size; its default, 64, would cap the session),
    // so the bound there is the 128 pieces too, as on NFSv3.
    let pieces = (data.len() / PIECE) as u64;
    let want = reader
        .session_slots()
        .map_or(pieces, |s| pieces.min(s as u64 * 3 / 4));
    eprintln!(
        "{version}: 8 MiB at 64 KiB: {read} calls in flight reading, {wrote} writing \
         (session slots: {:?})",
        reader.session_slots()
    );
    assert!(
        read >= want,
        "{version}: read peaked at {read} calls in flight"
    );
    assert!(
        wrote >= want,
        "{version}: write peaked at {wrote} calls in flight"
    );
    drop(f);
    reader.remove(&path).unwrap();
}

#[test]
fn an_8_mib_read_and_write_go_in_parallel_on_nfsv3() {
    let Some(url) = directnfs_testkit::server::url("large_io_v3") else {
        return;
    };
    large_io_goes_in_parallel(&url, "NFSv3");
}

#[test]
fn an_8_mib_read_and_write_go_in_parallel_on_nfsv41() {
    let Some(url) = directnfs_testkit::server::url_v41("large_io_v41") else {
        return;
    };
    large_io_goes_in_parallel(&url, "NFSv4.1");
}
