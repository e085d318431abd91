//! `dnfs cat PATH`: the file's bytes on stdout, read with 1 MiB READs, many
//! of them ahead of the writer.

use std::io::Write;

use crate::error::{CliError, Result};
use crate::location::Resolver;
use crate::transfer::{self, Parallel};

/// READs in flight ahead of stdout.
const READ_AHEAD: usize = 16;
/// Bytes per READ.
const CHUNK: usize = 1 << 20;

/// Writes the content of `arg` to stdout.
pub fn run(resolver: &Resolver, arg: &str) -> Result<()> {
    let (client, path) = resolver.nfs(arg, "cat")?;
    let meta = client.metadata(&path)?;
    if meta.is_dir() {
        return Err(CliError::msg(format!("cat: {arg}: is a directory")));
    }
    let file = client.open(&path)?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let chunk = CHUNK.min(client.limits().rtmax as usize);
    // No more readers than chunks (plus the one that finds EOF): a small
    // file should not start sixteen threads.
    let chunks = meta.size.div_ceil(chunk as u64).saturating_add(1);
    let par = Parallel {
        jobs: READ_AHEAD.min(usize::try_from(chunks).unwrap_or(READ_AHEAD)),
        chunk,
    };
    transfer::stream(&file, &mut out, par)?;
    out.flush().map_err(CliError::stdout)
}
