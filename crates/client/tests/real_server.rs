//! The core client against a real NFS-Ganesha server (see common/mod.rs).

mod common;

use std::io::ErrorKind;
use std::sync::Arc;
use std::time::Duration;

use common::unique;
use directnfs::{Batch, Client, OpenOptions};

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

on_each_version! {
    fn write_then_read_back_large_file_split_into_parallel_pieces(version) {
        let c = version.client("");
        let path = unique("large");
        let f = c.create(&path).unwrap();
        let data = pattern(5 * 1024 * 1024 + 123, 7);
        assert_eq!(f.write_at(&data, 0).unwrap(), data.len());
        let mut back = vec![0u8; data.len()];
        assert_eq!(f.read_at(&mut back, 0).unwrap(), data.len());
        assert!(back == data, "data read back differs");
        assert_eq!(f.metadata().unwrap().size, data.len() as u64);
        // More than one READ and WRITE went out: the I/O was split at rtmax.
        let stats = c.stats();
        let file = stats.files.iter().find(|s| s.path == path).unwrap();
        assert!(file.totals.bytes_written >= data.len() as u64);
        let server = &stats.servers[0].totals;
        assert!(
            server.calls_by_proc.get("READ").copied().unwrap_or(0) >= 6,
            "{server:?}"
        );
        assert!(
            server.calls_by_proc.get("WRITE").copied().unwrap_or(0) >= 6,
            "{server:?}"
        );
        c.remove(&path).unwrap();
    }
}

on_each_version! {
    fn thirty_two_threads_write_disjoint_blocks_of_one_file_and_all_verify(version) {
        const BLOCK: usize = 8192;
        const THREADS: usize = 32;
        const PER_THREAD: usize = 32;
        let c = version.client("");
        let path = unique("concurrent");
        let f = Arc::new(c.create(&path).unwrap());
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let f = Arc::clone(&f);
                s.spawn(move || {
                    for i in 0..PER_THREAD {
                        let block = i * THREADS + t; // interleaved: neighbours race
                        let mut buf = pattern(BLOCK, block as u8);
                        buf[..8].copy_from_slice(&(block as u64).to_be_bytes());
                        f.write_at(&buf, (block * BLOCK) as u64).unwrap();
                    }
                });
            }
        });
        let total = THREADS * PER_THREAD;
        let mut all = vec![0u8; total * BLOCK];
        assert_eq!(f.read_at(&mut all, 0).unwrap(), all.len());
        for block in 0..total {
            let got = &all[block * BLOCK..(block + 1) * BLOCK];
            let mut want = pattern(BLOCK, block as u8);
            want[..8].copy_from_slice(&(block as u64).to_be_bytes());
            assert!(got == &want[..], "block {block} is wrong");
        }
        c.remove(&path).unwrap();
    }
}

on_each_version! {
    fn reads_across_eof_return_exactly_the_bytes_that_exist(version) {
        let c = version.client("");
        let path = unique("eof");
        let f = c.create(&path).unwrap();
        let data = pattern(10_000, 3);
        f.write_at(&data, 0).unwrap();
        let mut buf = vec![0xaau8; 8192];
        assert_eq!(f.read_at(&mut buf, 8192).unwrap(), 10_000 - 8192);
        assert_eq!(&buf[..10_000 - 8192], &data[8192..]);
        assert_eq!(f.read_at(&mut buf, 10_000).unwrap(), 0, "read at EOF");
        assert_eq!(f.read_at(&mut buf, 1 << 30).unwrap(), 0, "read past EOF");
        // A read spanning several rtmax pieces that ends past EOF.
        let mut big = vec![0u8; 3 << 20];
        assert_eq!(f.read_at(&mut big, 0).unwrap(), 10_000);
        let err = f.read_exact_at(&mut buf, 9_000).unwrap_err();
        assert!(err.to_string().contains("end of file"), "{err}");
        c.remove(&path).unwrap();
    }
}

on_each_version! {
    fn missing_file_is_not_found_with_op_and_path_in_message(version) {
        let c = version.client("");
        let path = unique("missing");
        let err = c.open(&path).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NotFound);
        assert_eq!(err.errno(), libc::ENOENT);
        let msg = err.to_string();
        // NFSv3 opens by LOOKUP; NFSv4.1 by OPEN, its errors NFS4ERR_*.
        let (op, status) = match version {
            Version::V3 => ("LOOKUP", "NFS3ERR_NOENT"),
            Version::V41 => ("OPEN", "NFS4ERR_NOENT"),
        };
        assert!(
            msg.contains(op) && msg.contains(&path) && msg.contains(status),
            "{msg}"
        );
        assert_eq!(c.remove(&path).unwrap_err().kind(), ErrorKind::NotFound);
    }
}

on_each_version! {
    fn exclusive_create_of_existing_file_is_already_exists(version) {
        let c = version.client("");
        let path = unique("exists");
        let opts = OpenOptions {
            create_new: true,
            ..Default::default()
        };
        let f = c.open_with(&path, opts).unwrap();
        f.write_at(b"x", 0).unwrap();
        let err = c.open_with(&path, opts).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::AlreadyExists, "{err}");
        assert_eq!(err.errno(), libc::EEXIST);
        // The file keeps its content: the failed create touched nothing.
        assert_eq!(c.metadata(&path).unwrap().size, 1);
        assert_eq!(c.metadata(&path).unwrap().mode, 0o644);
        c.remove(&path).unwrap();
    }
}

on_each_version! {
    fn directory_errors_map_to_posix_errors(version) {
        let c = version.client("");
        let dir = unique("dir");
        c.mkdir(&dir).unwrap();
        assert!(c.metadata(&dir).unwrap().is_dir());
        // Not a directory: a file used as a path component.
        let file = format!("{dir}/file");
        c.create(&file).unwrap().write_at(b"abc", 0).unwrap();
        let err = c.metadata(&format!("{file}/below")).unwrap_err();
        assert_eq!(err.errno(), libc::ENOTDIR, "{err}");
        // Directory not empty.
        let err = c.rmdir(&dir).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::DirectoryNotEmpty, "{err}");
        // Is a directory: writing to a directory handle (NFSv3 opens by
        // LOOKUP and the WRITE fails; NFSv4.1's OPEN refuses it).
        let err = match version {
            Version::V3 => c.open(&dir).unwrap().write_at(b"x", 0).unwrap_err(),
            Version::V41 => c.open(&dir).unwrap_err(),
        };
        assert_eq!(err.errno(), libc::EISDIR, "{err}");
        // Exists: mkdir twice.
        assert_eq!(c.mkdir(&dir).unwrap_err().kind(), ErrorKind::AlreadyExists);
        let names: Vec<String> = c
            .read_dir(&dir)
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, vec!["file".to_string()]);
        c.remove(&file).unwrap();
        c.rmdir(&dir).unwrap();
        assert_eq!(c.metadata(&dir).unwrap_err().kind(), ErrorKind::NotFound);
    }
}

on_each_version! {
    fn permission_denied_through_auth_sys_uid_and_gid(version) {
        let root = version.client("");
        let path = unique("private");
        let f = root
            .open_with(
                &path,
                OpenOptions {
                    create: true,
                    mode: Some(0o600),
                    ..Default::default()
                },
            )
            .unwrap();
        f.write_at(b"secret", 0).unwrap();
        let other = Client::connect(&version.url("uid=4321&gid=4321")).unwrap();
        // NFSv3: LOOKUP needs only search permission, the READ fails;
        // NFSv4.1's OPEN checks access at open.
        let err = match version {
            Version::V3 => {
                let g = other.open(&path).unwrap();
                let mut buf = [0u8; 6];
                g.read_at(&mut buf, 0).unwrap_err()
            }
            Version::V41 => other.open(&path).unwrap_err(),
        };
        assert_eq!(err.kind(), ErrorKind::PermissionDenied, "{err}");
        assert_eq!(err.errno(), libc::EACCES);
        root.remove(&path).unwrap();
    }
}

on_each_version! {
    fn rename_replaces_target_and_moves_content(version) {
        let c = version.client("");
        let a = unique("mv-a");
        let b = unique("mv-b");
        c.create(&a).unwrap().write_at(b"new", 0).unwrap();
        c.create(&b).unwrap().write_at(b"old content", 0).unwrap();
        c.rename(&a, &b).unwrap();
        assert_eq!(c.metadata(&a).unwrap_err().kind(), ErrorKind::NotFound);
        let mut buf = [0u8; 16];
        let n = c.open(&b).unwrap().read_at(&mut buf, 0).unwrap();
        assert_eq!(&buf[..n], b"new");
        c.remove(&b).unwrap();
    }
}

on_each_version! {
    fn unstable_writes_are_kept_until_fsync_commits_them(version) {
        let c = Client::connect(&version.url("stable=unstable")).unwrap();
        let path = unique("unstable");
        let f = c.create(&path).unwrap();
        let data = pattern(3 << 20, 11);
        f.write_at(&data, 0).unwrap();
        assert_eq!(
            f.uncommitted_bytes(),
            data.len(),
            "Ganesha answers UNSTABLE writes UNSTABLE"
        );
        f.fsync().unwrap();
        assert_eq!(f.uncommitted_bytes(), 0);
        let stats = c.stats();
        assert!(
            stats.servers[0]
                .totals
                .calls_by_proc
                .get("COMMIT")
                .copied()
                .unwrap_or(0)
                >= 1
        );
        // Another client sees the data.
        let mut back = vec![0u8; data.len()];
        let other = version.client("");
        assert_eq!(
            other.open(&path).unwrap().read_at(&mut back, 0).unwrap(),
            data.len()
        );
        assert!(back == data);
        c.remove(&path).unwrap();
    }
}

on_each_version! {
    fn set_len_truncates_and_extends(version) {
        let c = version.client("");
        let path = unique("len");
        let f = c.create(&path).unwrap();
        f.write_at(&pattern(100_000, 1), 0).unwrap();
        f.set_len(10).unwrap();
        assert_eq!(f.metadata().unwrap().size, 10);
        f.set_len(1 << 20).unwrap();
        let mut buf = vec![1u8; 100];
        assert_eq!(f.read_at(&mut buf, 500_000).unwrap(), 100);
        assert!(buf.iter().all(|&b| b == 0), "extension reads as zeros");
        c.remove(&path).unwrap();
    }
}

on_each_version! {
    fn batch_completes_each_operation_with_its_own_result(version) {
        let c = version.client("");
        let path = unique("batch");
        let f = c.create(&path).unwrap();
        let blocks: Vec<Vec<u8>> = (0..64).map(|i| pattern(8192, i as u8)).collect();
        {
            let mut batch = Batch::new(&c);
            for (i, b) in blocks.iter().enumerate() {
                batch.write(&f, (i * 8192) as u64, b, i as u64).unwrap();
            }
            let mut seen = [false; 64];
            let mut done = 0;
            while done < 64 {
                for comp in batch.wait(8, Some(Duration::from_secs(30))) {
                    assert_eq!(comp.result.as_ref().unwrap(), &8192);
                    assert!(
                        !seen[comp.token as usize],
                        "token {} completed twice",
                        comp.token
                    );
                    seen[comp.token as usize] = true;
                    done += 1;
                }
            }
            assert_eq!(batch.outstanding(), 0);
        }
        let mut bufs: Vec<Vec<u8>> = vec![vec![0u8; 8192]; 65];
        let (last, rest) = bufs.split_last_mut().unwrap();
        let mut results = std::collections::HashMap::new();
        c.batch_scope(|batch| {
            for (i, b) in rest.iter_mut().enumerate() {
                batch.read(&f, (i * 8192) as u64, b, i as u64).unwrap();
            }
            // One read entirely past EOF completes with 0 bytes, not an error.
            batch.read(&f, 64 * 8192, last, 999).unwrap();
            while results.len() < 65 {
                for comp in batch.wait(65, Some(Duration::from_secs(30))) {
                    results.insert(comp.token, comp.result.unwrap());
                }
            }
        });
        assert_eq!(results[&999], 0);
        for (i, b) in bufs[..64].iter().enumerate() {
            assert_eq!(results[&(i as u64)], 8192);
            assert!(b == &blocks[i], "block {i}");
        }
        c.remove(&path).unwrap();
    }
}

on_each_version! {
    fn batch_wait_with_timeout_returns_what_is_ready(version) {
        let c = version.client("");
        let mut batch = Batch::new(&c);
        // Nothing submitted: returns at once, empty.
        assert!(batch.wait(1, Some(Duration::from_millis(10))).is_empty());
    }
}

on_each_version! {
    fn transfer_sizes_come_from_fsinfo_clamped_to_one_mib(version) {
        let c = version.client("");
        let l = c.limits();
        assert!(l.rtmax <= 1 << 20 && l.wtmax <= 1 << 20, "{l:?}");
        assert!(l.rtmax >= 4096 && l.wtmax >= 4096, "{l:?}");
        let small = Client::connect(&version.url("rsize=65536&wsize=32768")).unwrap();
        assert_eq!(small.limits().rtmax, 65536);
        assert_eq!(small.limits().wtmax, 32768);
    }
}

#[test]
fn connect_to_a_closed_port_fails_with_a_clear_error() {
    // Refused connections are tried again until mnt_timeout (1 s here).
    let url = "nfs://127.0.0.1/nothing?nfsport=1&mountport=1&mnt_timeout=1";
    let err = Client::connect(url).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("127.0.0.1:1;"), "{msg}");
    assert!(msg.contains("mnt_timeout is 1 s"), "{msg}");
    assert_eq!(err.errno(), libc::ECONNREFUSED, "{msg}");
}

on_each_version! {
    fn a_file_replaced_by_another_client_is_found_again_not_stale(version) {
        let a = version.client("");
        let b = version.client("");
        let path = unique("replaced");
        a.create(&path).unwrap().write_at(b"first", 0).unwrap();
        assert_eq!(a.metadata(&path).unwrap().size, 5); // `a` caches the handle
        b.remove(&path).unwrap();
        b.create(&path).unwrap().write_at(b"second!", 0).unwrap();
        // `a`'s cached handle is stale now; it must look the name up again.
        assert_eq!(a.metadata(&path).unwrap().size, 7);
        let mut buf = [0u8; 7];
        assert_eq!(a.open(&path).unwrap().read_at(&mut buf, 0).unwrap(), 7);
        assert_eq!(&buf, b"second!");
        a.remove(&path).unwrap();
    }
}

on_each_version! {
    fn a_batch_refuses_a_file_of_another_client(version) {
        let a = version.client("");
        let b = version.client("");
        let path = unique("foreign");
        let f = b.create(&path).unwrap();
        let mut buf = [0u8; 8];
        let err = a
            .batch_scope(|batch| batch.read(&f, 0, &mut buf, 1))
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
        b.remove(&path).unwrap();
    }
}

on_each_version! {
    fn create_does_not_truncate_a_file_that_appeared_meanwhile(version) {
        let a = version.client("");
        let path = unique("appeared");
        // Simulates the race: the file exists but `open_with(create)` takes
        // the create path (its LOOKUP found nothing a moment ago).
        a.create(&path).unwrap().write_at(b"keep me", 0).unwrap();
        let f = a
            .open_with(
                &path,
                OpenOptions {
                    create: true,
                    ..Default::default()
                },
            )
            .unwrap();
        assert_eq!(f.metadata().unwrap().size, 7);
        a.remove(&path).unwrap();
    }
}

on_each_version! {
    /// Replies to a batch nobody waits for are still received (by the
    /// fallback receiver, lead.rs): after sleeping well past `timeo` the
    /// batch's operations are complete and none was timed out, retransmitted
    /// or failed over. Without a receiver they would sit unread in the socket,
    /// time out after `timeo` and be sent again.
    fn replies_nobody_waits_for_are_received_before_timeo(version) {
        let c = Client::connect(&version.url("timeo=5&connections=2")).unwrap();
        let path = unique("unreaped");
        let f = c.create(&path).unwrap();
        let data = pattern(64 * 8192, 9);
        f.write_at(&data, 0).unwrap();
        let mut bufs: Vec<Vec<u8>> = vec![vec![0u8; 8192]; 64];
        c.batch_scope(|batch| {
            for (i, b) in bufs.iter_mut().enumerate() {
                batch.read(&f, (i * 8192) as u64, b, i as u64).unwrap();
            }
            batch.submit();
            // timeo is 0.5 s: three of them pass with nobody waiting.
            std::thread::sleep(Duration::from_millis(1500));
            let done = batch.wait(0, Some(Duration::ZERO));
            assert_eq!(
                done.len(),
                64,
                "every reply was received while nobody waited"
            );
            for comp in done {
                assert_eq!(comp.result.unwrap(), 8192, "token {}", comp.token);
            }
        });
        for (i, b) in bufs.iter().enumerate() {
            assert!(b[..] == data[i * 8192..(i + 1) * 8192], "block {i}");
        }
        let t = &c.stats().servers[0].totals;
        assert_eq!(
            (t.timeouts, t.retransmits, t.failovers, t.reconnects),
            (0, 0, 0, 0),
            "no reply may be left unread until timeo: {t:?}"
        );
        c.remove(&path).unwrap();
    }
}

on_each_version! {
    /// Many threads share one connection: one leads the receive at a time and
    /// hands the lead on (lead.rs); blocking calls, a batch and threads that
    /// come and go must all complete with their own data.
    fn threads_share_the_receive_and_hand_the_lead_on(version) {
        let c = Client::connect(&version.url("connections=1")).unwrap();
        let path = unique("lead");
        let f = c.create(&path).unwrap();
        let block = 4096usize;
        let blocks = 16 * 64;
        let data = pattern(blocks * block, 3);
        f.write_at(&data, 0).unwrap();
        let data = Arc::new(data);
        std::thread::scope(|s| {
            for t in 0..16usize {
                let (f, data) = (f.clone(), Arc::clone(&data));
                s.spawn(move || {
                    let mut buf = vec![0u8; block];
                    for round in 0..64usize {
                        let i = (t * 64 + round * 7) % blocks;
                        if t % 4 == 0 {
                            // A batch of 4 beside the blocking callers.
                            let mut bufs = vec![vec![0u8; block]; 4];
                            f.client().batch_scope(|batch| {
                                for (k, b) in bufs.iter_mut().enumerate() {
                                    let j = (i + k) % blocks;
                                    batch.read(&f, (j * block) as u64, b, j as u64).unwrap();
                                }
                                let mut n = 0;
                                while n < 4 {
                                    n += batch.wait(1, None).len();
                                }
                            });
                            for (k, b) in bufs.iter().enumerate() {
                                let j = (i + k) % blocks;
                                assert!(b[..] == data[j * block..(j + 1) * block], "block {j}");
                            }
                        } else {
                            assert_eq!(f.read_at(&mut buf, (i * block) as u64).unwrap(), block);
                            assert!(buf[..] == data[i * block..(i + 1) * block], "block {i}");
                        }
                    }
                });
            }
        });
        c.remove(&path).unwrap();
    }
}

on_each_version! {
    /// `max_client_inflight` holds a batch back: with one connection (whose
    /// own limit is 256) and a client limit of 8, never more than 8 READs are
    /// in flight, and all 64 still complete with their data.
    fn client_inflight_limit_makes_a_batch_wait_for_room(version) {
        let c = Client::connect(&version.url("connections=1&max_client_inflight=8")).unwrap();
        let path = unique("clientcap");
        let f = c.create(&path).unwrap();
        let data = pattern(64 * 8192, 5);
        f.write_at(&data, 0).unwrap();
        let mut bufs: Vec<Vec<u8>> = vec![vec![0u8; 8192]; 64];
        c.batch_scope(|batch| {
            for (i, b) in bufs.iter_mut().enumerate() {
                batch.read(&f, (i * 8192) as u64, b, i as u64).unwrap();
            }
            let mut n = 0;
            while n < 64 {
                for comp in batch.wait(64, Some(Duration::from_secs(30))) {
                    assert_eq!(comp.result.unwrap(), 8192, "token {}", comp.token);
                    n += 1;
                }
            }
        });
        for (i, b) in bufs.iter().enumerate() {
            assert!(b[..] == data[i * 8192..(i + 1) * 8192], "block {i}");
        }
        let peak = c.stats().servers[0].totals.inflight_peak;
        assert!(
            (1..=8).contains(&peak),
            "in-flight peak {peak} with max_client_inflight=8"
        );
        c.remove(&path).unwrap();
    }
}

on_each_version! {
    /// `stats=off` keeps a client out of its process's published statistics
    /// (the book's "Operating"); a client without it is in them.
    fn stats_off_keeps_a_client_out_of_the_process_statistics(version) {
        let on = version.client("");
        let off = Client::connect(&version.url("stats=off")).expect("connect with stats=off");
        let (seen, hidden) = (unique("stats-on"), unique("stats-off"));
        for (c, name) in [(&on, &seen), (&off, &hidden)] {
            let f = c.create(name).expect("create");
            f.write_at(b"counted?", 0).expect("write");
            // The client's own statistics have the file either way.
            assert!(c.stats().files.iter().any(|s| s.path == *name), "{name}");
        }
        let published = directnfs::publish::process_stats().stats.files;
        assert!(
            published.iter().any(|s| s.path == seen),
            "{seen} not published"
        );
        assert!(
            !published.iter().any(|s| s.path == hidden),
            "{hidden} of a stats=off client was published"
        );
        on.remove(&seen).expect("remove");
        off.remove(&hidden).expect("remove");
    }
}
