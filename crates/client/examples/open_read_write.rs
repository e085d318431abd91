//! Mount an export, create a file, write it, read it back, make it
//! durable, remove it: the smallest complete use of the crate.
//!
//! ```text
//! cargo run -p directnfs --example open_read_write -- 'nfs://127.0.0.1/export?nfsport=2049&mountport=20048'
//! ```
//!
//! The URL (argument, or `$DNFS_URL`) names the export or a directory in
//! it; the example works on a file of its own there
//! (`directnfs-example-PID`) and removes it at the end. Every step prints
//! one line; any error ends it with exit status 1.

use std::process::ExitCode;

use directnfs::{Client, OpenOptions};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("open_read_write: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args()
        .nth(1)
        .or_else(|| std::env::var("DNFS_URL").ok())
        .ok_or("usage: open_read_write NFS_URL (or set DNFS_URL)")?;

    // One client per export: it owns the connections and is cheap to clone.
    let client = Client::connect(&url)?;
    let limits = client.limits();
    println!(
        "mounted {}:{} (rtmax {}, wtmax {})",
        client.server_name(),
        client.export(),
        limits.rtmax,
        limits.wtmax
    );

    // Paths are relative to the export root; put the file in the URL's
    // directory.
    let name = format!("directnfs-example-{}", std::process::id());
    let path = directnfs::config::join(client.target_path(), &name);
    let file = client.open_with(
        &path,
        OpenOptions {
            create: true,
            truncate: true,
            ..OpenOptions::default()
        },
    )?;
    println!("created {path}");

    // Positioned I/O, as a database does it: a block, then a tail after it.
    let block: Vec<u8> = (0..8192u32).map(|i| (i % 251) as u8).collect();
    let tail = b"hello";
    file.write_all_at(&block, 0)?;
    file.write_all_at(tail, block.len() as u64)?;
    let size = block.len() + tail.len();
    println!("wrote {size} bytes");

    // fsync: the data is on the server's stable storage when it returns
    // (COMMIT of what was written UNSTABLE, checked against the server's
    // write verifier).
    file.fsync()?;
    println!("fsync: durable");

    let mut back = vec![0u8; size];
    file.read_exact_at(&mut back, 0)?;
    if back[..block.len()] != block[..] || &back[block.len()..] != tail {
        return Err(format!("{path}: read back different bytes").into());
    }
    println!("read back {size} bytes: match");

    let meta = file.metadata()?;
    println!("size on the server: {} bytes", meta.size);

    drop(file);
    client.remove(&path)?;
    println!("removed {path}");
    Ok(())
}
