//! `dnfs ls PATH [-l]`: names sorted bytewise, one per line; `-l` adds type
//! and mode, uid, gid, size in bytes and mtime (UTC).

use std::io::Write;

use directnfs::{Client, Metadata};

use crate::error::{CliError, Result};
use crate::format::{mode_string, short_time, type_char};
use crate::location::{nfs_file_name, nfs_join, Resolver};

/// Lists `arg` (a directory's entries, or a file itself).
pub fn run(resolver: &Resolver, arg: &str, long: bool) -> Result<()> {
    let (client, path) = resolver.nfs(arg, "ls")?;
    let meta = client.metadata(&path)?;
    let mut rows: Vec<(String, Option<Metadata>)> = if meta.is_dir() {
        client
            .read_dir(&path)?
            .into_iter()
            .map(|e| (e.name, e.metadata))
            .collect()
    } else {
        let name = nfs_file_name(&path).unwrap_or(&path).to_string();
        vec![(name, Some(meta))]
    };
    rows.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    if long {
        write_long(&client, &path, &rows, &mut out)?;
    } else {
        for (name, _) in &rows {
            writeln!(out, "{name}").map_err(CliError::stdout)?;
        }
    }
    out.flush().map_err(CliError::stdout)
}

fn write_long(
    client: &Client,
    dir: &str,
    rows: &[(String, Option<Metadata>)],
    out: &mut impl Write,
) -> Result<()> {
    let mut lines = Vec::with_capacity(rows.len());
    for (name, meta) in rows {
        // READDIRPLUS may omit attributes: ask for them.
        let m = match meta {
            Some(m) => *m,
            None => client.metadata(&nfs_join(dir, name))?,
        };
        lines.push((m, name));
    }
    let w_uid = lines.iter().map(|(m, _)| digits(m.uid.into())).max();
    let w_gid = lines.iter().map(|(m, _)| digits(m.gid.into())).max();
    let w_size = lines.iter().map(|(m, _)| digits(m.size)).max();
    let (w_uid, w_gid, w_size) = (w_uid.unwrap_or(1), w_gid.unwrap_or(1), w_size.unwrap_or(1));
    for (m, name) in lines {
        writeln!(
            out,
            "{}{} {:>w_uid$} {:>w_gid$} {:>w_size$} {} {}",
            type_char(m.file_type),
            mode_string(m.mode),
            m.uid,
            m.gid,
            m.size,
            short_time(m.mtime),
            name
        )
        .map_err(CliError::stdout)?;
    }
    Ok(())
}

fn digits(n: u64) -> usize {
    n.to_string().len()
}
