//! NFSv4.1 (RFC 8881) behind the same `Client` and `File` API: a server
//! whose options say `nfs_version: nfsv4.1` (URL `vers=4.1`) is mounted
//! here, and the public methods hand their work to these modules.
//!
//! | module | job |
//! |---|---|
//! | `session.rs` | client ID, session, SEQUENCE on every COMPOUND (a slot, the call, its outcome settled), session error recovery, DESTROY on drop |
//! | `slots.rs` | who may take a slot of the session's table: blocking requests, a large I/O's extra pieces, batches (never the quarter kept for blocking calls), only the reclaim's during a reclaim; the peak |
//! | `sequence.rs` | the request, SEQUENCE encoded on its slot, the reply decoded as far as SEQUENCE's result and what each status makes of the request (settled, same slot again, a new request, recovery); NFSv4 status errors |
//! | `recovery.rs` | which statuses replace the session or the client ID, whether a new client ID reclaims, the bound on one request's recoveries, the test hold on reclaims |
//! | `lease.rs` | when an idle client renews its lease (a quarter of it idle), and the renewal thread |
//! | `wait.rs` | how long NFS4ERR_DELAY and NFS4ERR_GRACE are waited out: for ever (hard), `timeo` x `retrans` (soft) |
//! | `reclaim.rs` | after a new client ID: OPEN CLAIM_PREVIOUS and LOCK reclaim of every open file, RECLAIM_COMPLETE (handed to the session by `mount.rs`) |
//! | `mount.rs` | channels to the NFS port (no MOUNT protocol), the session, the export's handle and limits: a `Remote` and a `Session` for `client/discover.rs` to make the client of; a forked child's session |
//! | `ops.rs` | namespace operations and attributes, each one COMPOUND walking the path |
//! | `links.rs` | symbolic links (CREATE `NF4LNK`, READLINK), hard links (LINK), `lookup` and `metadata_of` by handle |
//! | `attrs.rs` | `set_attrs` (SETATTR by path or with the open stateid), `access` (ACCESS), `fsstat` (GETATTR of `space_*`/`files_*`) |
//! | `file.rs` | OPEN/CLOSE, SETATTR with the open stateid, the blocking READ, WRITE and COMMIT |
//! | `open_state.rs` | the state a reclaim needs of an open file (handle, access, open stateid, locks), listed by the session |
//! | `io.rs` | this version's per-RPC operations for `crate::rpcops`: a READ or WRITE piece on its own slot, settled; COMMIT of the file |
//! | `handles.rs` | `open_handle`: OPEN by handle (CLAIM_FH) |
//! | `lock.rs` | what `File::lock`/`try_lock`/`unlock`/`test_lock` (`file/lock.rs`) send: LOCK (polled while denied), LOCKU, LOCKT, released before CLOSE; lost locks reported |
//! | `trunk.rs` | session trunking: each path's server owner checked by EXCHANGE_ID, every connection bound to the session (BIND_CONN_TO_SESSION) |
//!
//! These modules sit below the client and its files, never above: none
//! names `crate::client`, `crate::file` or `crate::batch` (nor `Client`
//! or `File` by their root paths), so that the client and its files can
//! name `v4/` without an import knot (`scripts/ci/check-module-graph.py`).
//! What they need of a mount is the server end every version uses, a
//! [`Remote`] (`remote.rs`: transport, options, credential, limits),
//! taken by reference with the [`Session`]; what must keep or find the
//! client that holds both — an open file (CLOSE before the session's
//! DESTROY), the lease renewal thread — holds it as an `Arc` or `Weak` of
//! [`Host`], the trait defined here and implemented by the client, as
//! `publish/`'s `Published` is. The `Client` accessors and test hooks of
//! the session are `client/session.rs`'s, `File`'s lock methods
//! `file/lock.rs`'s, and the client of a mount is made by
//! `client/discover.rs` (of a forked child by `fork.rs`).
//!
//! Every request goes over the same transport as NFSv3's (program 100003
//! version 4); the engine's re-sends carry the same bytes, hence the same
//! slot and sequence id, so the server's reply cache makes them exactly
//! once.
//!
//! After a server restart (or an expired lease) recovery ends with a new
//! client ID; the open files and their byte-range locks are then
//! reclaimed before any other request goes (RFC 8881 §8.4.2.1). What the
//! server refuses to let us reclaim (NFS4ERR_NO_GRACE: no grace period,
//! or the lease expired without a restart) is lost: a file is opened
//! again by its handle at its next use, and a lost lock fails every I/O
//! of its `File` and its next `unlock` with `Error::LockLost` (EIO) until
//! that `unlock` — never silently. NFS4ERR_BAD_SEQID, which NFSv4.1
//! servers must not send (owner seqids are ignored in 4.1; this client
//! sends 0), becomes `Error::Protocol` naming it.
//!
//! Not yet on NFSv4.1: delegations are never asked for, so none is
//! reclaimed. A `Handle` holds up to NFSv4's 128 bytes
//! (`NFS4_FHSIZE`). Every public
//! method has an NFSv4.1 path; `Inner::call` still refuses, with
//! `unsupported`'s error (ENOTSUP), any NFSv3 call that would reach an
//! NFSv4.1 server: the one known case is a `File` from `open_handle`
//! whose OPEN the server refused (its `metadata`, `set_len`, `fsync`; a
//! `Batch` refuses its reads and writes the same way, in their
//! completions).

pub(crate) mod attrs;
pub(crate) mod handles;
pub(crate) mod io;
pub(crate) mod lease;
pub(crate) mod links;
pub(crate) mod lock;
pub(crate) mod mount;
pub(crate) mod open_file;
pub(crate) mod open_state;
pub(crate) mod ops;
pub(crate) mod owner_slot;
pub(crate) mod reclaim;
pub(crate) mod recovery;
pub(crate) mod sequence;
pub(crate) mod session;
pub(crate) mod slots;
pub mod trunk;
pub(crate) mod wait;

pub use lock::LockConflict;
pub(crate) use session::Session;

use crate::error::Error;
use crate::remote::Remote;

/// The error for a feature not available on NFSv4.1 yet.
pub(crate) fn unsupported(what: &str) -> Error {
    Error::Unsupported(format!("NFSv4.1: {what} not supported yet"))
}

/// What the NFSv4.1 modules need of the client that holds their session,
/// implemented by the client (`client.rs`'s `Inner`): the server end and
/// the session. An open file ([`open_file::OpenFile`]) holds its client as an
/// `Arc<dyn Host>` (CLOSE goes before the session's DESTROY, and its I/O
/// finds the session of the moment), the lease renewal as a `Weak<dyn
/// Host>`; everything else takes the [`Remote`] and the [`Session`] as
/// plain references. So `v4/` never names the client, which names it.
pub(crate) trait Host: Send + Sync + std::fmt::Debug {
    /// The server end: transport, options, credential, limits.
    fn remote(&self) -> &Remote;
    /// The session (`None` on NFSv3).
    fn session(&self) -> Option<&Session>;
}
