//! Reading a lock file someone else holds: what it is, whose it is, and
//! how long it has been unchanged by the server's clock.

use std::time::{Duration, SystemTime};

use dnfs::{Client, FileType, OpenOptions};

use super::owner::{Owner, Record};
use super::Names;
use crate::names::fresh;

/// Largest part of a regular (version 1) lock file read: its owner text
/// is about 100 bytes.
const MAX_OWNER: usize = 1024;

/// A lock file as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// No lock file (any more).
    Gone,
    /// A lock with a complete owner record.
    Owner(Owner),
    /// A lock of a newer directnfs ([`Record::Newer`]).
    Newer(u32),
    /// A lock file that names no owner: a regular file left by an older
    /// directnfs killed between its CREATE and its WRITE, or anything else
    /// that is not an owner record. Identified by file id and change time,
    /// so that a breaker removes only the very file it judged.
    Ownerless { fileid: u64, ctime: SystemTime },
    /// Replaced while we read it: look again later.
    Changing,
}

/// Reads the lock file at `path`: its type first (a symbolic link is read
/// with READLINK, a regular file with READ), then its content.
pub fn read_lock(client: &Client, path: &str) -> dnfs::Result<Seen> {
    // Lock files come and go under other processes: `fresh` refreshes a
    // stale cached handle.
    let meta = match fresh(client, path, || client.metadata(path)) {
        Ok(m) => m,
        Err(e) if e.errno() == libc::ENOENT => return Ok(Seen::Gone),
        Err(e) => return Err(e),
    };
    let text = match meta.file_type {
        FileType::Symlink => fresh(client, path, || client.read_link(path)),
        _ => fresh(client, path, || {
            let mut buf = vec![0u8; MAX_OWNER];
            let n = client.open(path)?.read_at(&mut buf, 0)?;
            Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
        }),
    };
    let text = match text {
        Ok(t) => t,
        Err(e) if e.errno() == libc::ENOENT => return Ok(Seen::Gone),
        // Replaced by an object of another type (EINVAL), or again after
        // the refresh (ESTALE).
        Err(e) if e.errno() == libc::EINVAL || e.errno() == libc::ESTALE => {
            return Ok(Seen::Changing)
        }
        Err(e) => return Err(e),
    };
    Ok(match Record::parse(&text) {
        Record::Owner(o) => Seen::Owner(o),
        Record::Newer(v) => Seen::Newer(v),
        Record::None => Seen::Ownerless {
            fileid: meta.fileid,
            ctime: meta.ctime,
        },
    })
}

/// How long ago, by the server's clock, `ctime` was: the server's "now"
/// is the change time of the waiter file after one byte is written to it
/// (which also tells the holder, if any, that we wait). Comparing the
/// server's times with each other keeps any clock skew between this host
/// and the server out of the judgement.
pub fn age_on_server(client: &Client, names: &Names, ctime: SystemTime) -> dnfs::Result<Duration> {
    let opts = OpenOptions {
        create: true,
        mode: Some(0o644),
        ..Default::default()
    };
    let now = fresh(client, &names.want, || {
        let want = client.open_with(&names.want, opts)?;
        want.write_at(b"W", 0)?;
        Ok(want.metadata()?.ctime)
    })?;
    Ok(now.duration_since(ctime).unwrap_or(Duration::ZERO))
}
