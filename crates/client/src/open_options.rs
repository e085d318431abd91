//! How to open a file, as a value both protocol versions' OPEN take. A
//! leaf: it names no other module of the crate.

/// How to open a file; see [`Client::open_with`](crate::Client::open_with).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpenOptions {
    /// Create the file if it does not exist.
    pub create: bool,
    /// Fail if the file exists (exclusive create; safe to retry).
    pub create_new: bool,
    /// Truncate to zero length.
    pub truncate: bool,
    /// Mode bits for a created file (default 0644).
    pub mode: Option<u32>,
}
