//! A WRITE reply as both protocol versions give it, decoded: what
//! `file.rs`, `rpcops.rs` and `v4/io.rs` pass between them. A leaf: it
//! names no other module of the crate.

use directnfs_wire::nfs3::writeverf3;

/// A WRITE reply, decoded (either version).
pub(crate) struct Written {
    /// Bytes the server took (at most the bytes sent).
    pub(crate) count: usize,
    /// FILE_SYNC or DATA_SYNC: on stable storage.
    pub(crate) durable: bool,
    /// The server's write verifier (NFSv4's `verifier4` has the same
    /// eight bytes).
    pub(crate) verf: writeverf3,
}
