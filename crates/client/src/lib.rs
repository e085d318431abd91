//! # directnfs
//!
//! An NFS client (NFSv3, and NFSv4.1 with `vers=4.1`: see the README's
//! NFSv4.1 section) that runs inside the process that uses it, built for
//! databases: reads and writes go straight to the server over many TCP
//! connections, with no kernel client, no page cache and no per-mount
//! queue in the way.
//!
//! * **Direct**: no data cache; an I/O is one RPC up to the negotiated
//!   transfer size (FSINFO, clamped to 1 MiB), larger ones are split and
//!   sent in parallel (on NFSv4.1 each piece on a session slot of its
//!   own: as many at once as the server granted slots, 64 on NFS-Ganesha).
//! * **Durable**: writes are FILE_SYNC by default — durable once
//!   acknowledged. `stable=unstable` writes UNSTABLE and commits on
//!   [`File::fsync`], re-sending anything a restarted server may have lost;
//!   there `write_at` writes behind on NFSv3 (`write_behind=`, 8 MiB per
//!   file by default; not on NFSv4.1): it returns once the WRITE is sent, `fsync` waits for the
//!   writes in flight and reports one that failed, reads see them.
//! * **Concurrent**: every method takes `&self`; any number of threads may
//!   read and write one file at once. Hundreds of requests are in flight
//!   per connection, matched to replies by XID in O(1).
//! * **Resilient**: hard mount by default — a dead connection's requests
//!   move to another; `soft` turns a stall into an error.
//!
//! ```no_run
//! use directnfs::Client;
//! let client = Client::connect("nfs://127.0.0.1/export?nfsport=2049&mountport=20048")?;
//! let file = client.create("/redo01.log")?;
//! file.write_at(b"hello", 0)?;            // durable when it returns
//! let mut buf = [0u8; 5];
//! assert_eq!(file.read_at(&mut buf, 0)?, 5);
//! # Ok::<(), directnfs::Error>(())
//! ```
//!
//! Runnable examples are in `examples/` (`open_read_write`, `batch`,
//! `multipath`).

// Every public item says what it is; `cargo doc` stays free of warnings.
#![warn(missing_docs)]

pub mod alert;
pub mod attrs;
pub mod batch;
pub mod client;
pub mod config;
pub mod errno;
pub mod error;
mod fdfloor;
pub mod file;
mod fork;
mod fsync;
pub mod handle;
mod io;
mod links;
pub mod metadata;
mod mount;
pub mod nlm;
pub mod publish;
mod rpcops;
mod signals;
mod stale;
pub mod stats;
#[cfg(test)]
mod testing;
mod v4;
mod writebehind;
mod writelog;

/// The repository README, whose Rust example `cargo test --doc` compiles
/// (`no_run`: it needs a server), so the README cannot show an API that
/// does not exist.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeExample;

pub use attrs::{FsStat, SetAttrs, SetTimeTo};
pub use batch::{Batch, Completion, ScopedBatch};
pub use client::{Client, Limits, PathSpec, Target};
pub use config::{DnfsTab, MountOptions, NfsUrl, SocketBuffers, StableMode};
pub use error::{Error, Result};
pub use fdfloor::{
    host_places, reset_in_child as reset_descriptor_windows_in_child, set_descriptor_floor,
};
pub use file::{File, OpenOptions};
pub use fork::fork_generation;
pub use handle::Handle;
pub use io::spare::hand_back_all as hand_back_spare_connections;
pub use metadata::{DirEntry, FileType, Metadata};
pub use nlm::NlmOwner;
pub use signals::{spawn as spawn_thread, with_signals_blocked, Joiner as ThreadJoiner};
pub use stale::retry_stale;
pub use v4::trunk::{printable, ServerOwner};
pub use v4::LockConflict;
