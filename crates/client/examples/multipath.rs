//! A server reached over two network paths, named by a dnfstab: the
//! configuration a database uses, and what the client does with it.
//!
//! ```text
//! cargo run -p directnfs --example multipath -- DNFSTAB /db/ora
//! ```
//!
//! `DNFSTAB` (argument, or `$DIRECTNFS_TAB`) is a dnfstab such as
//!
//! ```text
//! server: filer1
//! local: 10.231.1.1
//! path: 10.231.1.2
//! local: 10.231.2.1
//! path: 10.231.2.2
//! export: /vol/ora mount: /db/ora
//! connections: 2
//! ```
//!
//! and `/db/ora` a directory under one of its `mount:` prefixes. The
//! example says which server, paths and export the name resolves to,
//! mounts it, spreads 64 reads and writes of a file of its own
//! (`directnfs-multipath-PID`) over the paths, prints each path's share,
//! and removes the file. Any error ends it with exit status 1.

use std::path::PathBuf;
use std::process::ExitCode;

use directnfs::Client;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("multipath: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: multipath DNFSTAB DIR (or set DIRECTNFS_TAB and give DIR)";
    let (tab_path, dir) = match (args.next(), args.next()) {
        (Some(tab), Some(dir)) => (Some(PathBuf::from(tab)), dir),
        (Some(dir), None) => (None, dir),
        _ => return Err(usage.into()),
    };

    // The same lookup as every front end: the given file, else
    // $DIRECTNFS_TAB, ./dnfstab, /etc/dnfstab.
    let tab = directnfs::config::find_config(tab_path.as_deref())?
        .ok_or("no dnfstab found (give one, or set DIRECTNFS_TAB)")?;
    let name =
        directnfs::config::join(&dir, &format!("directnfs-multipath-{}", std::process::id()));
    let located = tab.locate(&name)?.ok_or_else(|| {
        format!(
            "{dir}: not under a mount: prefix of {}",
            tab.source.display()
        )
    })?;
    let target = &located.target;
    println!(
        "{dir}: server {}, export {}, {} path(s):",
        target.name,
        target.export.as_deref().unwrap_or("?"),
        target.paths.len()
    );
    for p in &target.paths {
        match p.local {
            Some(local) => println!("  {local} -> {}", p.server),
            None => println!("  -> {}", p.server),
        }
    }

    // One client for the export, its channels spread over every path.
    let client = Client::mount(target)?;
    let file = client.create(&located.rest)?;
    let block = [0x5au8; 8192];
    for i in 0..64u64 {
        file.write_all_at(&block, i * 8192)?;
    }
    file.fsync()?;
    let mut buf = [0u8; 8192];
    for i in 0..64u64 {
        file.read_exact_at(&mut buf, i * 8192)?;
        if buf != block {
            return Err(format!("{}: block {i} read back different bytes", located.rest).into());
        }
    }
    println!("wrote, fsynced and read back 64 blocks of {}", located.rest);

    for server in client.stats().servers {
        for p in server.paths {
            println!(
                "  path {}: {}, {} call(s), {} reconnect(s)",
                p.remote,
                p.state,
                p.totals.calls_by_proc.values().sum::<u64>(),
                p.totals.reconnects
            );
        }
    }
    drop(file);
    client.remove(&located.rest)?;
    println!("removed {}", located.rest);
    Ok(())
}
