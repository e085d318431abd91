//! I/O classes against a real NFS-Ganesha (see common/mod.rs): a log file's
//! writes go on the path's log lane and complete while bulk reads keep
//! every other connection full, and bulk never touches the lane. The
//! scheduling rule itself is tested in simulated time in
//! `crates/engine/tests/classes.rs`. Order and progress are asserted, never
//! timings.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::unique;
use directnfs::{Client, IoClass};

/// Channels of the mount; the last one is the lane.
const CONNECTIONS: usize = 3;
const LANE: usize = CONNECTIONS - 1;

/// (reads, writes) per channel of the one path.
type PerChannel = Vec<(u64, u64)>;

/// The counts of the mount's channels now.
fn per_channel(c: &Client) -> PerChannel {
    let stats = c.stats();
    stats.servers[0].paths[0]
        .channels
        .iter()
        .map(|ch| (ch.totals.reads, ch.totals.writes))
        .collect()
}

/// Runs 4 bulk readers over a 16 MiB file while `log` writes 20 times
/// (FILE_SYNC, 8 KiB, one at a time) once the readers are going. Returns
/// the per-channel (reads, writes) taken by the log writes alone (writes)
/// and by the whole run (reads).
fn run(c: &Client) -> (PerChannel, PerChannel) {
    let path = unique("classes");
    let f = c.create(&path).unwrap();
    f.write_at(&vec![7u8; 16 << 20], 0).unwrap();
    let bulk = c.open(&path).unwrap();
    bulk.set_io_class(IoClass::Bulk);
    assert_eq!(bulk.io_class(), IoClass::Bulk);
    let log = c.create(&format!("{path}.log")).unwrap();
    log.set_io_class(IoClass::Log);
    log.set_sync_writes(true);
    let stop = AtomicBool::new(false);
    let reads = AtomicU64::new(0);
    let before = per_channel(c);
    let (log_writes, after_log) = std::thread::scope(|s| {
        for w in 0..4u64 {
            let (bulk, stop, reads) = (&bulk, &stop, &reads);
            s.spawn(move || {
                let mut buf = vec![0u8; 4 << 20];
                let mut off = (w * (4 << 20)) % (16 << 20);
                while !stop.load(Ordering::Relaxed) {
                    bulk.read_exact_at(&mut buf, off).unwrap();
                    reads.fetch_add(1, Ordering::Relaxed);
                    off = (off + (4 << 20)) % (16 << 20);
                }
            });
        }
        let deadline = Instant::now() + Duration::from_secs(120);
        let wait_for = |n: u64| {
            while reads.load(Ordering::Relaxed) < n {
                assert!(Instant::now() < deadline, "bulk reads made no progress");
                std::thread::sleep(Duration::from_millis(1));
            }
        };
        // The readers are going: every connection but the lane is busy.
        wait_for(8);
        let start = per_channel(c);
        let block = vec![9u8; 8192];
        for i in 0..20u64 {
            assert_eq!(log.write_at(&block, i * 8192).unwrap(), 8192);
        }
        let end = per_channel(c);
        let seen = reads.load(Ordering::Relaxed);
        // Bulk still progresses after (and beside) the log writes.
        wait_for(seen + 8);
        stop.store(true, Ordering::Relaxed);
        let log_writes: PerChannel = start
            .iter()
            .zip(&end)
            .map(|(a, b)| (b.0 - a.0, b.1 - a.1))
            .collect();
        (log_writes, end)
    });
    let mut back = vec![0u8; 8192];
    log.read_exact_at(&mut back, 19 * 8192).unwrap();
    assert!(
        back.iter().all(|&b| b == 9),
        "the last log write is not there"
    );
    let whole: PerChannel = before
        .iter()
        .zip(&after_log)
        .map(|(a, b)| (b.0 - a.0, b.1 - a.1))
        .collect();
    c.remove(&format!("{path}.log")).unwrap();
    c.remove(&path).unwrap();
    (log_writes, whole)
}

on_each_version! {
    fn log_writes_take_the_lane_and_complete_while_bulk_reads_fill_the_rest(version) {
        let c = version.client(&format!("connections={CONNECTIONS}"));
        let (log_writes, whole) = run(&c);
        // Every log write went on the lane, none elsewhere.
        assert_eq!(log_writes[LANE].1, 20, "{log_writes:?}");
        let elsewhere: u64 = log_writes[..LANE].iter().map(|w| w.1).sum();
        assert_eq!(elsewhere, 0, "log writes off the lane: {log_writes:?}");
        // No bulk read ever went on the lane; the others carried them all.
        assert_eq!(whole[LANE].0, 0, "bulk reads on the lane: {whole:?}");
        for (i, ch) in whole[..LANE].iter().enumerate() {
            assert!(ch.0 > 0, "channel {i} carried no bulk read: {whole:?}");
        }
    }
}

/// COMMIT calls per channel of the one path.
fn commits(c: &Client) -> Vec<u64> {
    c.stats().servers[0].paths[0]
        .channels
        .iter()
        .map(|ch| ch.totals.calls_by_proc.get("COMMIT").copied().unwrap_or(0))
        .collect()
}

/// Ten unstable 8 KiB writes of `f`, each followed by an `fsync` (its
/// COMMIT); the COMMITs per channel they took.
fn ten_commits(c: &Client, f: &directnfs::File) -> Vec<u64> {
    let before = commits(c);
    for i in 0..10u64 {
        f.write_at(&[3u8; 8192], i * 8192).unwrap();
        f.fsync().unwrap();
    }
    commits(c).iter().zip(&before).map(|(a, b)| a - b).collect()
}

on_each_version! {
    fn a_log_files_commits_take_the_lane_and_a_data_files_do_not_all(version) {
        let c = version.client(&format!("connections={CONNECTIONS}&stable=unstable"));
        let path = unique("class-commit");
        let log = c.create(&format!("{path}.log")).unwrap();
        log.set_io_class(IoClass::Log);
        let on_log = ten_commits(&c, &log);
        assert_eq!(on_log[LANE], 10, "log COMMITs off the lane: {on_log:?}");
        // A data file's COMMITs go to the least-loaded channel, the tie
        // rotating: not all on the lane (what makes the above a test).
        let data = c.create(&path).unwrap();
        let on_data = ten_commits(&c, &data);
        assert_eq!(on_data.iter().sum::<u64>(), 10, "{on_data:?}");
        assert!(on_data[LANE] < 10, "data COMMITs all on the lane: {on_data:?}");
        c.remove(&format!("{path}.log")).unwrap();
        c.remove(&path).unwrap();
    }
}

on_each_version! {
    fn with_io_classes_off_bulk_reads_share_every_connection(version) {
        let c = version.client(&format!("connections={CONNECTIONS}&io_classes=off"));
        let (_, whole) = run(&c);
        assert!(
            whole.iter().all(|ch| ch.0 > 0),
            "some connection carried no read with classes off: {whole:?}"
        );
    }
}

on_each_version! {
    fn stats_count_each_classes_reads_and_writes_as_the_caller_made_them(version) {
        let c = version.client("");
        let path = unique("class-stats");
        let data = c.create(&path).unwrap();
        // A data file: 3 writes of 64 KiB (the default class).
        for i in 0..3u64 {
            data.write_at(&vec![1u8; 64 << 10], i * (64 << 10)).unwrap();
        }
        let log = c.create(&format!("{path}.log")).unwrap();
        log.set_io_class(IoClass::Log);
        for i in 0..5u64 {
            log.write_at(&[2u8; 8192], i * 8192).unwrap();
        }
        // A bulk reader of the data file: 2 reads of all 192 KiB, each
        // counted once however many READ calls it took.
        let bulk = c.open(&path).unwrap();
        bulk.set_io_class(IoClass::Bulk);
        let mut buf = vec![0u8; 192 << 10];
        for _ in 0..2 {
            bulk.read_exact_at(&mut buf, 0).unwrap();
            assert!(buf.iter().all(|&b| b == 1));
        }
        let classes = c.stats().servers.remove(0).io_classes;
        let got: Vec<(&str, u64, u64, u64, u64)> = classes
            .iter()
            .map(|(k, io)| (k.as_str(), io.reads, io.writes, io.bytes_read, io.bytes_written))
            .collect();
        assert_eq!(
            got,
            [
                ("bulk", 2, 0, 2 * (192 << 10), 0),
                ("data", 0, 3, 0, 3 * (64 << 10)),
                ("log", 0, 5, 0, 5 * 8192),
            ]
        );
        assert_eq!(classes["log"].latency_us["write"].count, 5);
        assert_eq!(classes["bulk"].latency_us["read"].count, 2);
        c.remove(&format!("{path}.log")).unwrap();
        c.remove(&path).unwrap();
    }
}
