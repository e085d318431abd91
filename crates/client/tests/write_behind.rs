//! Write-behind (unstable mode, `write_behind`) against a real Ganesha:
//! reads see the writes still in flight, `fsync` returns only once every
//! write is on the server, a full file system's ENOSPC is reported by
//! `fsync`, and a server killed with writes in flight loses nothing `fsync`
//! acknowledged. Each test is one body run on NFSv3 and on NFSv4.1
//! (`common/versions.rs`): `NAME::on_nfsv3` and `NAME::on_nfsv41`.
//!
//! The kill and ENOSPC tests start Ganesha servers of their own
//! (`OwnGanesha`, a private rpcbind each, serving both versions), on ports
//! no other test uses: one server per test and version.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;
#[path = "common/sync_writes.rs"]
mod sync_writes;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::versions::{own_env, Version};
use directnfs::Client;
use directnfs_testkit::ganesha::OwnGanesha;
use directnfs_testkit::server::wanted;

/// `len` bytes of `seed`'s pattern.
fn bytes(seed: u64, len: usize) -> Vec<u8> {
    (0..len as u64)
        .map(|i| (seed.wrapping_mul(31).wrapping_add(i * 7) % 251) as u8)
        .collect()
}

/// A server of the test's own named `name` (one per version: the
/// version's name is added), serving both versions on the given ports.
fn own_server(name: &str, version: Version, nfs_port: &str, mnt_port: &str) -> OwnGanesha {
    let name = format!("{name}-{version:?}").to_lowercase();
    OwnGanesha::start(&name, &own_env(nfs_port, mnt_port))
        .unwrap_or_else(|e| panic!("starting Ganesha {name}: {e}"))
}

/// A client of `server` for `version` in unstable mode with write-behind
/// (and `extra`, `&key=value...`).
fn unstable_client(server: &OwnGanesha, version: Version, extra: &str) -> Client {
    let url = version.own_url(server, &format!("stable=unstable{extra}"));
    Client::connect(&url).unwrap_or_else(|e| panic!("{url}: {e}"))
}

/// Ports of the servers of a test's own: NFSv3's and NFSv4.1's runs of a
/// test each have a server.
fn ports(
    version: Version,
    v3: (&'static str, &'static str),
    v41: (&'static str, &'static str),
) -> (&'static str, &'static str) {
    match version {
        Version::V3 => v3,
        Version::V41 => v41,
    }
}

on_each_version! {
    fn read_your_writes_under_concurrent_writers(version) {
        read_your_writes(version, false);
    }
}

on_each_version! {
    /// The same with coalescing: the writers' blocks interleave back to
    /// back, so a write often continues another thread's held write.
    fn read_your_writes_with_coalescing_under_concurrent_writers(version) {
        read_your_writes(version, true);
    }
}

fn read_your_writes(version: Version, coalesce: bool) {
    // A small bound, so writers also wait for room.
    let client = version.client("stable=unstable&write_behind=64k");
    let name = common::unique("wb-ryw");
    let file = client.create(&name).unwrap();
    file.set_write_coalescing(coalesce);
    assert!(file.client().options().write_behind == 64 << 10);
    const THREADS: u64 = 4;
    const BLOCK: usize = 4096;
    const BLOCKS: u64 = 16;
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let file = file.clone();
            std::thread::spawn(move || {
                let mut back = vec![0u8; BLOCK];
                for round in 0..40u64 {
                    for b in 0..BLOCKS {
                        // Thread t's blocks: t, t + THREADS, ... (interleaved
                        // with the other writers' on the file).
                        let off = (b * THREADS + t) * BLOCK as u64;
                        let data = bytes(round * 1000 + b * 10 + t, BLOCK);
                        file.write_at(&data, off).unwrap();
                        // Read back at once: the WRITE may still be in flight.
                        file.read_exact_at(&mut back, off).unwrap();
                        assert!(back == data, "thread {t} round {round} block {b}");
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    // Another thread reads what this one just wrote behind.
    let data = bytes(99, 3 * BLOCK + 5);
    file.write_at(&data, 1_000_000).unwrap();
    let f = file.clone();
    let back = std::thread::spawn(move || {
        let mut back = vec![0u8; 3 * BLOCK + 5];
        f.read_exact_at(&mut back, 1_000_000).unwrap();
        back
    })
    .join()
    .unwrap();
    assert!(back == data);
    file.fsync().unwrap();
    assert_eq!(file.write_behind_bytes(), 0);
    let stats = client.stats();
    let mine = stats.files.iter().find(|f| f.path == name).unwrap();
    assert_eq!(mine.totals.write_behind_bytes, 0);
    client.remove(&name).unwrap();
}

on_each_version! {
    /// `Batch` reads and writes mixed with write-behind writes of the same
    /// blocks, by 4 threads on two connections, coalescing off and on: a
    /// batch read returns the latest `write_at` (in flight or held), a
    /// batch write lands after it, and what the server holds after `fsync`
    /// is each block's last batch write.
    fn batch_reads_and_writes_order_after_write_behind_writes(version) {
        for coalesce in [false, true] {
            batch_after_write_behind(version, coalesce);
        }
    }
}

fn batch_after_write_behind(version: Version, coalesce: bool) {
    let client = version.client("stable=unstable&write_behind=64k&connections=2");
    let name = common::unique("wb-batch");
    let file = client.create(&name).unwrap();
    file.set_write_coalescing(coalesce);
    const THREADS: u64 = 4;
    const BLOCK: usize = 2000;
    const BLOCKS: u64 = 8;
    let last = |t: u64, b: u64| bytes(9_000_000 + b * 10 + t, BLOCK);
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let file = file.clone();
            std::thread::spawn(move || {
                let mut batch = directnfs::Batch::new(file.client());
                let one = |batch: &mut directnfs::Batch<'_>, what: &str| {
                    let c = batch.wait(1, None).remove(0);
                    assert_eq!(c.result.as_ref().copied().unwrap(), BLOCK, "{what}");
                    c.buffer.unwrap()
                };
                for round in 0..20u64 {
                    for b in 0..BLOCKS {
                        let off = (b * THREADS + t) * BLOCK as u64;
                        let what =
                            format!("coalesce {coalesce} thread {t} round {round} block {b}");
                        let behind = bytes(round * 1000 + b * 10 + t, BLOCK);
                        file.write_at(&behind, off).unwrap();
                        batch.read_owned(&file, off, vec![0u8; BLOCK], 0).unwrap();
                        assert!(one(&mut batch, &what) == behind, "{what}: old data");
                        let behind = bytes(round * 1000 + b * 10 + t + 500_000, BLOCK);
                        file.write_at(&behind, off).unwrap();
                        let batched = if round == 19 {
                            last(t, b)
                        } else {
                            bytes(round * 1000 + b * 10 + t + 700_000, BLOCK)
                        };
                        batch.write_owned(&file, off, batched.clone(), 1).unwrap();
                        one(&mut batch, &what);
                        batch.read_owned(&file, off, vec![0u8; BLOCK], 2).unwrap();
                        assert!(one(&mut batch, &what) == batched, "{what}: overwritten");
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    file.fsync().unwrap();
    assert_eq!(file.write_behind_bytes(), 0);
    assert_eq!(file.uncommitted_bytes(), 0);
    drop(file);
    // A fresh client: nothing of this one's state between us and the server.
    let other = version.client("");
    let f = other.open(&name).unwrap();
    for t in 0..THREADS {
        for b in 0..BLOCKS {
            let mut back = vec![0u8; BLOCK];
            f.read_exact_at(&mut back, (b * THREADS + t) * BLOCK as u64)
                .unwrap();
            assert!(
                back == last(t, b),
                "coalesce {coalesce}: block {b} of thread {t}"
            );
        }
    }
    client.remove(&name).unwrap();
}

on_each_version! {
    /// Coalescing: 2,000 small writes back to back (WAL frames: a 24-byte
    /// header, then a 1000-byte page) become a few WRITEs of up to the
    /// transfer size; each `fsync` finds only held writes and sends them
    /// as one FILE_SYNC WRITE, with no COMMIT; what the server has is
    /// exactly what was written.
    fn coalesced_frames_are_few_writes_and_fsync_needs_no_commit(version) {
        coalesced_frames(version);
    }
}

fn coalesced_frames(version: Version) {
    let client = version.client("stable=unstable");
    let name = common::unique("wb-coalesce");
    let file = client.create(&name).unwrap();
    file.set_write_coalescing(true);
    let calls = |proc_: &str| -> u64 {
        let stats = client.stats();
        stats.servers[0]
            .totals
            .calls_by_proc
            .get(proc_)
            .copied()
            .unwrap_or(0)
    };
    let (writes0, commits0) = (calls("WRITE"), calls("COMMIT"));
    let mut all = Vec::new();
    for txn in 0..100u64 {
        for frame in 0..10u64 {
            let seed = txn * 10 + frame;
            for data in [bytes(seed, 24), bytes(seed + 5000, 1000)] {
                file.write_at(&data, all.len() as u64).unwrap();
                all.extend_from_slice(&data);
            }
        }
        file.fsync().unwrap();
    }
    assert_eq!(calls("WRITE") - writes0, 100, "one WRITE per transaction");
    assert_eq!(calls("COMMIT") - commits0, 0, "FILE_SYNC, no COMMIT");
    assert_eq!(file.uncommitted_bytes(), 0);
    let mut back = vec![0u8; all.len()];
    file.read_exact_at(&mut back, 0).unwrap();
    assert!(back == all);
    // Held writes are read back before any fsync (read-your-writes).
    let tail = bytes(77, 300);
    file.write_at(&tail, all.len() as u64).unwrap();
    let mut got = vec![0u8; 300];
    file.read_exact_at(&mut got, all.len() as u64).unwrap();
    assert!(got == tail);
    client.remove(&name).unwrap();
}

on_each_version! {
    /// An `O_DSYNC` descriptor's writes in unstable mode: one FILE_SYNC
    /// WRITE each, no COMMIT, write-behind off meanwhile.
    fn sync_writes_are_durable_on_return_with_one_write_and_no_commit(version) {
        let client = version.client("stable=unstable");
        sync_writes::sync_writes_are_one_write_and_no_commit(&client, &common::unique("wb-sync"));
    }
}

on_each_version! {
    /// The client-wide bound: two files with 1 MiB of room each, a client
    /// bound of 64 KiB. Two writers stream 4 KiB blocks, one per file; the
    /// bytes in flight over both files (the client's count, sampled while
    /// they write) never pass the client's bound by more than the blocks
    /// the two writers may be adding at that instant, though each file
    /// stays far below its own; everything is on the server after `fsync`.
    fn the_client_bound_holds_over_files_with_room(version) {
        client_bound(version);
    }
}

fn client_bound(version: Version) {
    const BOUND: usize = 64 << 10;
    const BLOCK: usize = 4096;
    let client = version.client("stable=unstable&write_behind=1m&write_behind_client=64k");
    assert_eq!(client.options().write_behind_client, BOUND);
    let names = [common::unique("wb-client-a"), common::unique("wb-client-b")];
    let files: Vec<_> = names.iter().map(|n| client.create(n).unwrap()).collect();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let (client, done) = (client.clone(), std::sync::Arc::clone(&done));
        std::thread::spawn(move || {
            // The client-wide count the bound applies to, read at one
            // instant (the files' statistics, summed, were read at
            // different instants: a CI run under load summed 3 blocks
            // over the bound that were never in flight together).
            let mut peak = 0usize;
            while !done.load(std::sync::atomic::Ordering::Acquire) {
                peak = peak.max(client.write_behind_bytes());
                std::thread::sleep(Duration::from_micros(200));
            }
            peak
        })
    };
    // The writers sample it too, right after each write: on a busy
    // machine the sampler may not run while they write (a run once saw
    // nothing in flight).
    let after_writes = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let writers: Vec<_> = files
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let f = f.clone();
            let after_writes = std::sync::Arc::clone(&after_writes);
            std::thread::spawn(move || {
                for b in 0..400u64 {
                    f.write_at(&bytes(b + 1000 * i as u64, BLOCK), b * BLOCK as u64)
                        .unwrap();
                    after_writes.fetch_max(
                        f.client().write_behind_bytes(),
                        std::sync::atomic::Ordering::AcqRel,
                    );
                }
                f.fsync().unwrap();
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    done.store(true, std::sync::atomic::Ordering::Release);
    let peak = sampler
        .join()
        .unwrap()
        .max(after_writes.load(std::sync::atomic::Ordering::Acquire));
    eprintln!("peak bytes in flight over both files: {peak}");
    assert!(peak > 0, "the sampler saw nothing in flight");
    assert!(
        peak <= BOUND + 2 * BLOCK,
        "{peak} bytes in flight, bound {BOUND}"
    );
    for (i, f) in files.iter().enumerate() {
        let mut back = vec![0u8; BLOCK];
        f.read_exact_at(&mut back, 399 * BLOCK as u64).unwrap();
        assert!(back == bytes(399 + 1000 * i as u64, BLOCK));
        client.remove(&names[i]).unwrap();
    }
}

on_each_version! {
    /// 400 scattered 4 KiB writes behind (room for all of them in bytes,
    /// no coalescing): never more than 16 WRITEs of the file in flight at
    /// once, so a call that waits (a commit, a read) does not queue at the
    /// server behind hundreds; several were in flight, and every byte is
    /// there.
    fn at_most_16_write_behind_writes_of_a_file_are_in_flight(version) {
        at_most_16(version);
    }
}

fn at_most_16(version: Version) {
    const BLOCK: usize = 4096;
    // One connection: its in-flight peak is the file's WRITEs in flight
    // (on NFSv4.1, a lease renewal may add one).
    let client = version.client("stable=unstable&write_behind=8m&connections=1");
    let name = common::unique("wb-count");
    let file = client.create(&name).unwrap();
    for b in 0..400u64 {
        // Every other block: no two writes adjacent.
        file.write_at(&bytes(b, BLOCK), 2 * b * BLOCK as u64)
            .unwrap();
    }
    file.fsync().unwrap();
    let stats = client.stats();
    let channels = &stats.servers[0].paths[0].channels;
    assert_eq!(channels.len(), 1);
    let peak = channels[0].totals.inflight_peak;
    eprintln!("peak WRITEs of the file in flight: {peak}");
    assert!(
        peak > 1,
        "write-behind had nothing in flight beside the writer"
    );
    let renewal = u64::from(version == Version::V41);
    assert!(
        peak <= 16 + renewal,
        "{peak} WRITEs of the file in flight at once"
    );
    let mut back = vec![0u8; BLOCK];
    for b in [0u64, 199, 399] {
        file.read_exact_at(&mut back, 2 * b * BLOCK as u64).unwrap();
        assert!(back == bytes(b, BLOCK), "block {b}");
    }
    client.remove(&name).unwrap();
}

on_each_version! {
    /// 10,000 small writes behind, `fsync`, SIGKILL of the server the
    /// moment `fsync` returns: every write is in the exported file (read
    /// locally while the server is down) and through a new client after
    /// the restart.
    fn fsync_after_10000_small_writes_survives_a_sigkill_of_the_server(version) {
        fsync_after_10000(version);
    }
}

fn fsync_after_10000(version: Version) {
    if !wanted("write_behind::fsync_after_10000") {
        return;
    }
    let (nfs, mnt) = ports(version, ("2661", "20661"), ("2664", "20664"));
    let server = own_server("wb-kill", version, nfs, mnt);
    let client = unstable_client(&server, version, "");
    let file = client.create("/redo.log").unwrap();
    const N: usize = 10_000;
    const LEN: usize = 512;
    let mut all = Vec::with_capacity(N * LEN);
    for i in 0..N {
        let data = bytes(i as u64, LEN);
        file.write_at(&data, (i * LEN) as u64).unwrap();
        all.extend_from_slice(&data);
    }
    file.fsync().unwrap();
    let mut restart = server.spawn_restart(&["--kill", "--down", "1"]).unwrap();
    wait_for_down(nfs);
    let local = std::fs::read(server.export_dir().join("redo.log")).unwrap();
    assert_eq!(local.len(), all.len(), "writes missing after fsync");
    assert!(local == all, "wrong data after fsync");
    assert!(restart.wait().unwrap().success());
    drop(file);
    drop(client);
    let client = unstable_client(&server, version, "");
    let file = client.open("/redo.log").unwrap();
    let mut back = vec![0u8; all.len()];
    file.read_exact_at(&mut back, 0).unwrap();
    assert!(back == all);
}

on_each_version! {
    /// The server is SIGKILLed (down 1 s, so its write verifier changes)
    /// with write-behind WRITEs in flight, before `fsync`: the hard mount
    /// sends them again once it is back (on NFSv4.1 in a new session, the
    /// file's state reclaimed), `fsync` waits for them, COMMITs, sees the
    /// new verifier, sends everything again FILE_SYNC and succeeds; the
    /// data is all in the exported file.
    fn server_killed_with_writes_in_flight_then_fsync_resends_and_succeeds(version) {
        killed_with_writes_in_flight(version);
    }
}

fn killed_with_writes_in_flight(version: Version) {
    if !wanted("write_behind::server_killed_with_writes_in_flight") {
        return;
    }
    let (nfs, mnt) = ports(version, ("2663", "20663"), ("2665", "20665"));
    let server = own_server("wb-inflight", version, nfs, mnt);
    let client = unstable_client(&server, version, "&timeo=20");
    let file = client.create("/data.dbf").unwrap();
    const BLOCK: usize = 8192;
    const N: usize = 512;
    let mut all = Vec::with_capacity(N * BLOCK);
    let mut restart = None;
    for i in 0..N {
        let data = bytes(i as u64 + 7, BLOCK);
        file.write_at(&data, (i * BLOCK) as u64).unwrap();
        all.extend_from_slice(&data);
        if i == N / 2 {
            restart = Some(server.spawn_restart(&["--kill", "--down", "1"]).unwrap());
            wait_for_down(nfs);
        }
    }
    // The second half went to a dead server: still in flight.
    let in_flight = file.write_behind_bytes();
    assert!(in_flight > 0, "nothing in flight before fsync");
    eprintln!("{in_flight} bytes in flight before fsync");
    file.fsync().unwrap();
    assert!(restart.unwrap().wait().unwrap().success());
    assert_eq!(file.uncommitted_bytes(), 0);
    let local = std::fs::read(server.export_dir().join("data.dbf")).unwrap();
    assert_eq!(local.len(), all.len());
    assert!(local == all, "data lost across the restart");
}

on_each_version! {
    /// A tmpfs of 1 MiB exported: writes behind past its end fail with
    /// ENOSPC on the server after `write_at` returned; the next `fsync`
    /// reports it (once), and the data that fitted is durable.
    fn enospc_of_a_full_export_is_reported_by_fsync(version) {
        enospc(version);
    }
}

fn enospc(version: Version) {
    if !wanted("write_behind::enospc") {
        return;
    }
    let name = format!("wb-enospc-{version:?}").to_lowercase();
    // The export directory of `own_server`'s server of that name (its
    // prefix as `OwnGanesha::start` takes it).
    let prefix = std::env::var("DNFS_TEST_OWN_PREFIX").unwrap_or_else(|_| "/tmp/dnfs-test-".into());
    let export = format!("{prefix}{name}-export");
    let export = Path::new(&export);
    let _ = Command::new("umount").arg(export).status();
    std::fs::create_dir_all(export).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(export)
        .status()
        .unwrap();
    assert!(mounted.success(), "mount -t tmpfs (needs root)");
    let _unmount = Unmount(export);
    let (nfs, mnt) = ports(version, ("2662", "20662"), ("2666", "20666"));
    let server = own_server("wb-enospc", version, nfs, mnt);
    let client = unstable_client(&server, version, "");
    let file = client.create("/full.dbf").unwrap();
    let block = bytes(3, 64 << 10);
    // 2 MiB into 1 MiB: every write_at returns (behind), some WRITEs fail.
    for i in 0..32u64 {
        file.write_at(&block, i * (64 << 10)).unwrap();
    }
    let e = file.fsync().unwrap_err();
    assert_eq!(e.errno(), libc::ENOSPC, "{e}");
    assert!(e.to_string().contains("WRITE /full.dbf"), "{e}");
    // Reported once.
    file.fsync().unwrap();
    // Room again: a write behind that fits, then fsync, succeeds.
    file.set_len(0).unwrap();
    file.write_at(&block, 0).unwrap();
    file.fsync().unwrap();
    let mut back = vec![0u8; block.len()];
    file.read_exact_at(&mut back, 0).unwrap();
    assert!(back == block);
    drop(file);
    drop(client);
    drop(server);
}

/// Unmounts the tmpfs when the test ends, however it ends.
struct Unmount<'a>(&'a Path);

impl Drop for Unmount<'_> {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0).status();
    }
}

/// Waits until the server on NFS port `nfs_port` refuses connections
/// (killed).
fn wait_for_down(nfs_port: &str) {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], nfs_port.parse::<u16>().unwrap()));
    let until = std::time::Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
        assert!(
            std::time::Instant::now() < until,
            "the server did not go down"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}
