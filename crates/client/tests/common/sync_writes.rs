//! `File::set_sync_writes` (an `O_DSYNC` descriptor) in unstable mode, the
//! same on NFSv3 and NFSv4.1: each write is durable on return, one
//! FILE_SYNC WRITE and no COMMIT; turned off, writes are UNSTABLE again
//! and `fsync` COMMITs them.

use directnfs::Client;

/// Runs the check on a new file `path` of `client` (unstable mode), then
/// removes it.
pub fn sync_writes_are_one_write_and_no_commit(client: &Client, path: &str) {
    let calls = |p: &str| -> u64 {
        client.stats().servers[0]
            .totals
            .calls_by_proc
            .get(p)
            .copied()
            .unwrap_or(0)
    };
    let block = |seed: u64| -> Vec<u8> {
        (0..4096u64)
            .map(|i| ((seed * 131 + i) % 251) as u8)
            .collect()
    };
    let file = client.create(path).unwrap();
    let (writes0, commits0) = (calls("WRITE"), calls("COMMIT"));
    file.set_sync_writes(true);
    let mut all = Vec::new();
    for i in 0..20u64 {
        let b = block(i);
        file.write_at(&b, all.len() as u64).unwrap();
        assert_eq!(file.uncommitted_bytes(), 0, "write {i} durable on return");
        all.extend_from_slice(&b);
    }
    assert_eq!(
        (calls("WRITE") - writes0, calls("COMMIT") - commits0),
        (20, 0),
        "(WRITEs, COMMITs) of 20 sync writes"
    );
    file.set_sync_writes(false);
    let b = block(99);
    file.write_at(&b, all.len() as u64).unwrap();
    all.extend_from_slice(&b);
    assert!(
        file.uncommitted_bytes() > 0,
        "an unstable write waits for fsync"
    );
    file.fsync().unwrap();
    assert_eq!(file.uncommitted_bytes(), 0);
    assert_eq!(calls("COMMIT") - commits0, 1, "the unstable write's COMMIT");
    let mut back = vec![0u8; all.len()];
    file.read_exact_at(&mut back, 0).unwrap();
    assert!(back == all, "read back");
    drop(file);
    client.remove(path).unwrap();
}
