//! Creating, sizing and filling the data file (self-describing 8 KiB
//! blocks, sequence 0), or reusing it when it already has the right size and
//! a sample of its blocks is valid, so repeated runs do not refill.

use std::os::unix::fs::FileExt;

use directnfs::{Batch, Client, File, OpenOptions};

use super::block::{self, BLOCK_SIZE};

const FILL_CHUNK: usize = 1 << 20;
const SAMPLES: u64 = 64;

/// What preparation found out about the target.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub export: Option<String>,
    pub rel_path: Option<String>,
}

fn samples(size: u64) -> Vec<u64> {
    let blocks = size / BLOCK_SIZE as u64;
    if blocks == 0 {
        return Vec::new();
    }
    let mut v: Vec<u64> = (0..SAMPLES).map(|i| i * blocks / SAMPLES).collect();
    v.push(blocks - 1);
    let mut r = super::driver::Rng::new(size ^ 0x5eed);
    v.extend((0..16).map(|_| r.below(blocks)));
    v.sort_unstable();
    v.dedup();
    v
}

fn bar(len: u64, msg: &str, quiet: bool) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if quiet || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let b = indicatif::ProgressBar::new(len);
    if let Ok(st) = indicatif::ProgressStyle::with_template(
        "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
    ) {
        b.set_style(st.progress_chars("=> "));
    }
    b.set_message(msg.to_string());
    b
}

/// Mounts the target's export (4 connections, for filling).
pub fn mount(arg: &str, config: Option<&str>) -> Result<Client, String> {
    let mut target = super::engines::target_of(arg, config)?;
    target.options.connections = target.options.connections.max(4);
    Client::mount(&target).map_err(|e| format!("mount {arg}: {e}"))
}

fn rel_of(client: &Client) -> Result<String, String> {
    let rel = client.target_path().to_string();
    if rel.trim_matches('/').is_empty() {
        return Err(format!(
            "the target names the export {} itself; give a file path, e.g. {}/bench.dat",
            client.export(),
            client.export().trim_end_matches('/')
        ));
    }
    Ok(if rel.starts_with('/') {
        rel
    } else {
        format!("/{rel}")
    })
}

/// Prepares the data file through directnfs. `fill`: fill with blocks
/// (data file) or only size it (redo log, `suffix` ".redo").
pub fn prepare_nfs(
    url: &str,
    config: Option<&str>,
    size: u64,
    fill: bool,
    suffix: &str,
    quiet: bool,
) -> Result<Prepared, String> {
    let client = mount(url, config)?;
    let rel = format!("{}{suffix}", rel_of(&client)?);
    let file = client
        .open_with(
            &rel,
            OpenOptions {
                create: true,
                ..Default::default()
            },
        )
        .map_err(|e| format!("open {rel}: {e}"))?;
    let meta = file.metadata().map_err(|e| format!("stat {rel}: {e}"))?;
    let cur = meta.size;
    if !fill {
        if cur != size {
            file.set_len(size)
                .map_err(|e| format!("truncate {rel}: {e}"))?;
        }
        // A database creates its redo logs full size and formatted, so no
        // log write allocates blocks. A sparse log would bill the block
        // allocation (and its journal commit on every FILE_SYNC write) to
        // whichever engine ran first.
        let used = if cur == size { meta.used } else { 0 };
        if used < size {
            eprintln!(
                "log file {rel}: formatting {} MiB (written once, as a database creates its logs)",
                size >> 20
            );
            fill_nfs(&client, &file, size, quiet)?;
        }
        return Ok(Prepared {
            export: Some(client.export().to_string()),
            rel_path: Some(rel),
        });
    }
    if cur == size && sample_ok_nfs(&file, size) {
        eprintln!(
            "data file {rel}: reused ({} MiB, sampled blocks valid)",
            size >> 20
        );
    } else {
        eprintln!(
            "data file {rel}: filling {} MiB with self-describing blocks{}",
            size >> 20,
            if cur == size {
                " (sample check failed)"
            } else {
                ""
            }
        );
        if cur != size {
            file.set_len(size)
                .map_err(|e| format!("truncate {rel}: {e}"))?;
        }
        fill_nfs(&client, &file, size, quiet)?;
    }
    Ok(Prepared {
        export: Some(client.export().to_string()),
        rel_path: Some(rel),
    })
}

fn sample_ok_nfs(file: &File, size: u64) -> bool {
    let mut buf = vec![0u8; BLOCK_SIZE];
    samples(size).into_iter().all(|b| {
        file.read_exact_at(&mut buf, b * BLOCK_SIZE as u64).is_ok()
            && block::verify(&buf, b).is_ok()
    })
}

fn fill_nfs(client: &Client, file: &File, size: u64, quiet: bool) -> Result<(), String> {
    const DEPTH: usize = 8;
    let pb = bar(size, "filling", quiet);
    let mut bufs: Vec<Vec<u8>> = (0..DEPTH).map(|_| vec![0u8; FILL_CHUNK]).collect();
    let mut off = 0u64;
    while off < size {
        // one batch per round of DEPTH chunks (buffers are borrowed per batch)
        let mut batch = Batch::new(client);
        let mut n = 0;
        for buf in bufs.iter_mut() {
            if off >= size {
                break;
            }
            let len = (size - off).min(FILL_CHUNK as u64) as usize;
            let b = &mut buf[..len];
            block::encode_run(b, off / BLOCK_SIZE as u64, 0, 0);
            batch
                .write(file, off, b, off)
                .map_err(|e| format!("fill write at {off}: {e}"))?;
            off += len as u64;
            n += 1;
        }
        for c in batch.wait(n, None) {
            let w = c
                .result
                .map_err(|e| format!("fill write at {}: {e}", c.token))?;
            pb.inc(w as u64);
        }
    }
    pb.finish_and_clear();
    Ok(())
}

/// Prepares the data file on the local file system (when only the local
/// engine runs).
pub fn prepare_local(
    path: &std::path::Path,
    size: u64,
    fill: bool,
    quiet: bool,
) -> Result<(), String> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| format!("open {}: {e}", path.display()))?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    let cur = meta.len();
    if !fill {
        if cur != size {
            file.set_len(size).map_err(|e| e.to_string())?;
        }
        // Full size and allocated, as for an NFS log (see prepare_nfs).
        let used = if cur == size {
            std::os::unix::fs::MetadataExt::blocks(&meta) * 512
        } else {
            0
        };
        if used >= size {
            return Ok(());
        }
        eprintln!("log file {}: formatting {} MiB", path.display(), size >> 20);
    } else {
        let mut buf = vec![0u8; BLOCK_SIZE];
        let ok = cur == size
            && samples(size).into_iter().all(|b| {
                file.read_exact_at(&mut buf, b * BLOCK_SIZE as u64).is_ok()
                    && block::verify(&buf, b).is_ok()
            });
        if ok {
            eprintln!("data file {}: reused", path.display());
            return Ok(());
        }
        eprintln!("data file {}: filling {} MiB", path.display(), size >> 20);
    }
    file.set_len(size).map_err(|e| e.to_string())?;
    let pb = bar(size, "filling", quiet);
    let mut chunk = vec![0u8; FILL_CHUNK];
    let mut off = 0u64;
    while off < size {
        let len = (size - off).min(FILL_CHUNK as u64) as usize;
        block::encode_run(&mut chunk[..len], off / BLOCK_SIZE as u64, 0, 0);
        file.write_all_at(&chunk[..len], off)
            .map_err(|e| e.to_string())?;
        off += len as u64;
        pb.inc(len as u64);
    }
    file.sync_all().map_err(|e| e.to_string())?;
    pb.finish_and_clear();
    Ok(())
}
