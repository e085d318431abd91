//! `dnfs stat PATH`: every attribute, one `key: value` per line.

use std::io::Write;

use crate::error::{CliError, Result};
use crate::format::{full_time, mode_string, type_char};
use crate::location::Resolver;

/// Prints the attributes of `arg`.
pub fn run(resolver: &Resolver, arg: &str) -> Result<()> {
    let (client, path) = resolver.nfs(arg, "stat")?;
    let m = client.metadata(&path)?;
    let text = format!(
        "path: {arg}\n\
         type: {}\n\
         size: {}\n\
         mode: {:04o} ({}{})\n\
         uid: {}\n\
         gid: {}\n\
         nlink: {}\n\
         fileid: {}\n\
         used: {}\n\
         atime: {}\n\
         mtime: {}\n\
         ctime: {}\n",
        m.file_type.name(),
        m.size,
        m.mode,
        type_char(m.file_type),
        mode_string(m.mode),
        m.uid,
        m.gid,
        m.nlink,
        m.fileid,
        m.used,
        full_time(m.atime),
        full_time(m.mtime),
        full_time(m.ctime),
    );
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    out.write_all(text.as_bytes()).map_err(CliError::stdout)?;
    out.flush().map_err(CliError::stdout)
}
