//! The attributes a program changes and asks about, beyond size, as
//! values: what SETATTR changes ([`SetAttrs`]) and what FSSTAT reports
//! ([`FsStat`]). A leaf, so that both versions' code can take them; the
//! calls are `attr_calls.rs`'s (NFSv3) and `v4/attrs.rs`'s.

use std::time::SystemTime;

/// Attributes to change with [`Client::set_attrs`](crate::Client::set_attrs) or
/// [`File::set_attrs`](crate::File::set_attrs);
/// `None` (and [`SetTimeTo::Keep`]) leaves one as it is. The default
/// changes nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SetAttrs {
    /// Permission bits (and setuid, setgid, sticky: `& 0o7777`).
    pub mode: Option<u32>,
    /// Owner.
    pub uid: Option<u32>,
    /// Group.
    pub gid: Option<u32>,
    /// Size: truncates or extends.
    pub size: Option<u64>,
    /// Last access time.
    pub atime: SetTimeTo,
    /// Last modification time.
    pub mtime: SetTimeTo,
}

/// A new value for a file time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SetTimeTo {
    /// Leave it.
    #[default]
    Keep,
    /// The server's current time.
    ServerNow,
    /// This time (between 1970 and 2106: NFSv3 times are unsigned 32-bit
    /// seconds).
    At(SystemTime),
}

/// Space and file slots of a server file system (FSSTAT3resok, RFC 1813
/// §3.3.18), for `statfs`, `dnfs df` and the C library's `dnfs_statfs`.
/// "Available" is what this user may use (quotas, reserved blocks); "free"
/// is what the file system has left.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FsStat {
    /// Size of the file system in bytes.
    pub total_bytes: u64,
    /// Free bytes.
    pub free_bytes: u64,
    /// Bytes this user may still write.
    pub avail_bytes: u64,
    /// File slots (inodes) in all.
    pub total_files: u64,
    /// Free file slots.
    pub free_files: u64,
    /// File slots this user may still use.
    pub avail_files: u64,
}
