//! Many reads and writes in flight at once, reaped as they complete: the
//! batch API (`Client::batch_scope`), as a database's I/O scheduler uses
//! it.
//!
//! ```text
//! cargo run -p directnfs --example batch -- 'nfs://127.0.0.1/export?nfsport=2049&mountport=20048'
//! ```
//!
//! The URL (argument, or `$DNFS_URL`) names the export or a directory in
//! it. The example writes 32 blocks of 8 KiB to a file of its own
//! (`directnfs-batch-PID`) in one batch, makes them durable, reads them
//! back in a second batch into buffers the batch borrows, checks every
//! byte and removes the file. Any error ends it with exit status 1.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Duration;

use directnfs::{Client, File};

const BLOCK: usize = 8192;
const BLOCKS: usize = 32;
/// How long one `wait` may take before the example gives up.
const WAIT: Duration = Duration::from_secs(60);

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("batch: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args()
        .nth(1)
        .or_else(|| std::env::var("DNFS_URL").ok())
        .ok_or("usage: batch NFS_URL (or set DNFS_URL)")?;
    let client = Client::connect(&url)?;
    let path = directnfs::config::join(
        client.target_path(),
        &format!("directnfs-batch-{}", std::process::id()),
    );
    let file = client.create(&path)?;
    println!(
        "created {path} on {}:{}",
        client.server_name(),
        client.export()
    );

    let blocks: Vec<Vec<u8>> = (0..BLOCKS).map(block).collect();
    write_all(&client, &file, &blocks)?;
    file.fsync()?;
    println!("wrote {BLOCKS} blocks of {BLOCK} bytes in one batch; fsync: durable");

    let mut back = vec![vec![0u8; BLOCK]; BLOCKS];
    read_all(&client, &file, &mut back)?;
    if back != blocks {
        return Err(format!("{path}: read back different bytes").into());
    }
    println!("read {BLOCKS} blocks back in one batch: match");

    drop(file);
    client.remove(&path)?;
    println!("removed {path}");
    Ok(())
}

/// Block `i`: bytes that say which block they are.
fn block(i: usize) -> Vec<u8> {
    (0..BLOCK).map(|j| (i * 7 + j) as u8).collect()
}

/// Writes every block at its offset, all in flight together. Writes copy
/// their data when queued, so the blocks are only borrowed for the call.
fn write_all(client: &Client, file: &File, blocks: &[Vec<u8>]) -> directnfs::Result<()> {
    client.batch_scope(|batch| {
        for (i, b) in blocks.iter().enumerate() {
            batch.write(file, (i * BLOCK) as u64, b, i as u64)?;
        }
        batch.submit();
        reap(batch.wait(BLOCKS, Some(WAIT)), BLOCKS, "write")
    })
}

/// Reads every block into `bufs`, which the batch borrows: the server
/// writes straight into them, and the scope does not return before every
/// read has completed.
fn read_all(client: &Client, file: &File, bufs: &mut [Vec<u8>]) -> directnfs::Result<()> {
    client.batch_scope(|batch| {
        for (i, b) in bufs.iter_mut().enumerate() {
            batch.read(file, (i * BLOCK) as u64, b, i as u64)?;
        }
        batch.submit();
        reap(batch.wait(BLOCKS, Some(WAIT)), BLOCKS, "read")
    })
}

/// Checks that `want` operations completed, each with a whole block.
fn reap(done: Vec<directnfs::Completion>, want: usize, op: &str) -> directnfs::Result<()> {
    let mut bytes = BTreeMap::new();
    for c in done {
        bytes.insert(c.token, c.result?);
    }
    if bytes.len() != want || bytes.values().any(|&n| n != BLOCK) {
        return Err(directnfs::Error::InvalidInput(format!(
            "{op}: {} of {want} completed whole within {WAIT:?}",
            bytes.values().filter(|&&n| n == BLOCK).count()
        )));
    }
    Ok(())
}
