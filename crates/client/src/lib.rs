//! # directnfs
//!
//! An NFS client (NFSv3, and NFSv4.1 with `vers=4.1`: see the book's
//! NFSv4.1 chapter, `docs/book/src/nfsv41.md`) that runs inside the process that uses it, built for
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
//!   there `write_at` writes behind, on both versions (`write_behind=`,
//!   8 MiB per file by default): it returns once the WRITE is sent, `fsync` waits for the
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
//!
//! ## Where things are
//!
//! Each public item has one path.
//!
//! * At the root, what a program does I/O with: [`Client`] (and the
//!   [`Target`], [`PathSpec`] and [`Limits`] of a mount), [`File`] and
//!   [`OpenOptions`], [`Batch`], [`ScopedBatch`] and their [`Completion`]s,
//!   [`Metadata`], [`FileType`], [`DirEntry`], [`SetAttrs`], [`SetTimeTo`],
//!   [`FsStat`], [`Handle`], [`Error`] and [`Result`], byte-range locks
//!   ([`LockConflict`] on NFSv4.1, [`NlmOwner`] and [`lock_should_wait`]
//!   for NFSv3's NLM), the NFSv4.1 [`ServerOwner`] of each path (and
//!   [`printable`] for its opaque bytes), [`retry_stale`] and the bounds
//!   [`MAX_DIR_LISTING`] and [`SEND_QUEUE_MAX`].
//! * Namespaces, public modules whose items are not repeated at the root:
//!   [`config`] (the dnfstab, `nfs://` URLs, [`config::MountOptions`] and
//!   the name rules), [`stats`] (the statistics snapshot and its
//!   renderers), [`alert`] (the alert log) and [`publish`] (the local
//!   statistics endpoint `dnfs stats` reads).
//! * [`security`]: Kerberos (RPCSEC_GSS): the flavors of `sec=`, each
//!   connection's context and sealing (`sec=krb5*` mounts, both versions),
//!   its renewal before the ticket ends, and a
//!   blocking connection that makes sealed calls (docs/security.md).
//! * [`process`]: plumbing for the C library and the interception library
//!   (descriptor floor, signal-blocked threads, fork generation, spare
//!   connections); not needed by Rust programs.
//!
//! The `Client::*_for_test` hooks exist only with the cargo feature
//! `test-hooks`, which the crate's own integration tests turn on.

// Every public item says what it is; `cargo doc` stays free of warnings.
#![warn(missing_docs)]

pub mod alert;
mod attr_calls;
mod attrs;
mod batch;
mod client;
mod completion;
pub mod config;
mod errno;
mod error;
mod fdfloor;
mod file;
mod fork;
mod fsync;
mod handle;
mod handle_calls;
mod io;
mod links;
mod lock_ranges;
mod metadata;
mod mount;
mod nlm;
mod nlm_calls;
mod open_options;
pub mod process;
pub mod publish;
mod remote;
mod rpcops;
pub mod security;
mod signals;
mod stale;
pub mod stats;
#[cfg(test)]
mod testing;
#[cfg(test)]
mod testing_v41;
mod v4;
mod writelog;
mod written;

/// The repository README, whose Rust example `cargo test --doc` compiles
/// (`no_run`: it needs a server), so the README cannot show an API that
/// does not exist.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeExample;

/// The book's chapters that hold Rust snippets (`docs/book/src/`), compiled
/// by `cargo test --doc` as the README's example is. Whole programs enter
/// the book by mdBook's `{{#include}}` from `examples/`, which CI builds.
#[cfg(doctest)]
pub mod book {
    /// `getting-started.md`.
    #[doc = include_str!("../../../docs/book/src/getting-started.md")]
    pub struct GettingStarted;
}

pub use attrs::{FsStat, SetAttrs, SetTimeTo};
pub use batch::{Batch, ScopedBatch, SEND_QUEUE_MAX};
pub use client::Client;
pub use completion::Completion;
pub use config::target::{PathSpec, Target};
pub use directnfs_engine::IoClass;
pub use error::{Error, Result};
pub use file::File;
pub use handle::Handle;
pub use metadata::{DirEntry, FileType, Metadata, MAX_DIR_LISTING};
pub use nlm::{lock_should_wait, NlmOwner};
pub use open_options::OpenOptions;
pub use remote::Limits;
pub use stale::retry_stale;
pub use v4::trunk::{printable, ServerOwner};
pub use v4::LockConflict;
