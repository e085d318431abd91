//! Reading a lock file someone else holds: what it is, whose it is, and
//! how long it has been unchanged by the server's clock.

use std::time::{Duration, SystemTime};

use dnfs::{Client, OpenOptions};

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

/// Reads the lock file at `path`. A lock of this version is a symbolic
/// link: one READLINK (the handle is usually cached), which with the
/// SYMLINK that failed is all a waiter polling a live lock sends.
/// READLINK fails with EINVAL on
/// anything else, such as an older version's regular file, which is then
/// read with READ. Attributes (for the age of an ownerless lock) are only
/// asked for when the content names no owner.
pub fn read_lock(client: &Client, path: &str) -> dnfs::Result<Seen> {
    // Lock files come and go under other processes: `fresh` refreshes a
    // stale cached handle.
    let text = match fresh(client, path, || {
        client
            .readlink(path)
            .map(|t| String::from_utf8_lossy(&t).into_owned())
    }) {
        Err(e) if e.errno() == libc::EINVAL => fresh(client, path, || {
            let mut buf = vec![0u8; MAX_OWNER];
            let n = client.open(path)?.read_at(&mut buf, 0)?;
            Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
        }),
        other => other,
    };
    let text = match text {
        Ok(t) => t,
        Err(e) => return seen_on_error(e),
    };
    let meta = match Record::parse(&text) {
        Record::Owner(o) => return Ok(Seen::Owner(o)),
        Record::Newer(v) => return Ok(Seen::Newer(v)),
        Record::None => fresh(client, path, || client.metadata(path)),
    };
    match meta {
        Ok(m) => Ok(Seen::Ownerless {
            fileid: m.fileid,
            ctime: m.ctime,
        }),
        Err(e) => seen_on_error(e),
    }
}

/// What an error while reading a lock file says about it.
fn seen_on_error(e: dnfs::Error) -> dnfs::Result<Seen> {
    match e.errno() {
        libc::ENOENT => Ok(Seen::Gone),
        // Replaced by an object of another type (EINVAL: a symbolic link
        // where a file was, or a directory), or again after the refresh
        // (ESTALE).
        libc::EINVAL | libc::ESTALE => Ok(Seen::Changing),
        _ => Err(e),
    }
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
