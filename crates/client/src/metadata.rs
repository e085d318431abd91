//! File attributes as the API shows them.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use directnfs_wire::nfs3::{fattr3, ftype3, nfstime3};

/// Most entries one `read_dir` returns (a bound on memory and time).
pub const MAX_DIR_LISTING: usize = 1 << 20;

/// The type of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FileType {
    /// Regular file.
    File,
    /// Directory.
    Dir,
    /// Symbolic link.
    Symlink,
    /// Block device, character device, socket or FIFO.
    Other,
}

impl FileType {
    fn from_wire(t: ftype3) -> Self {
        match t {
            ftype3::NF3REG => FileType::File,
            ftype3::NF3DIR => FileType::Dir,
            ftype3::NF3LNK => FileType::Symlink,
            _ => FileType::Other,
        }
    }

    /// A short name (`file`, `directory`, `symlink`, `other`).
    pub fn name(self) -> &'static str {
        match self {
            FileType::File => "file",
            FileType::Dir => "directory",
            FileType::Symlink => "symlink",
            FileType::Other => "other",
        }
    }
}

/// Attributes of a file, from the server (never cached by the client; the
/// interception library keeps sizes and permissions on its host-wide
/// boards, see its `sizes.rs` and `lookups.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metadata {
    /// File type.
    pub file_type: FileType,
    /// Size in bytes.
    pub size: u64,
    /// Permission bits (and setuid/setgid/sticky), as in `st_mode & 07777`.
    pub mode: u32,
    /// Owner uid.
    pub uid: u32,
    /// Owner gid.
    pub gid: u32,
    /// Hard links.
    pub nlink: u32,
    /// Bytes of storage used.
    pub used: u64,
    /// File id (inode number).
    pub fileid: u64,
    /// Last access.
    pub atime: SystemTime,
    /// Last data change.
    pub mtime: SystemTime,
    /// Last attribute change.
    pub ctime: SystemTime,
}

fn time(t: nfstime3) -> SystemTime {
    UNIX_EPOCH + Duration::new(t.seconds as u64, t.nseconds.min(999_999_999))
}

impl Metadata {
    pub(crate) fn from_fattr(a: &fattr3) -> Self {
        Self {
            file_type: FileType::from_wire(a.type_),
            size: a.size,
            mode: a.mode & 0o7777,
            uid: a.uid,
            gid: a.gid,
            nlink: a.nlink,
            used: a.used,
            fileid: a.fileid,
            atime: time(a.atime),
            mtime: time(a.mtime),
            ctime: time(a.ctime),
        }
    }

    /// True for a directory.
    pub fn is_dir(&self) -> bool {
        self.file_type == FileType::Dir
    }

    /// True for a regular file.
    pub fn is_file(&self) -> bool {
        self.file_type == FileType::File
    }
}

/// One directory entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// Name within the directory.
    pub name: String,
    /// File id.
    pub fileid: u64,
    /// Attributes, when the server sent them (READDIRPLUS usually does).
    pub metadata: Option<Metadata>,
}
