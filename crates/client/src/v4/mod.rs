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
//! | `mount.rs` | channels to the NFS port (no MOUNT protocol), the session, the export's handle and limits |
//! | `ops.rs` | namespace operations and attributes, each one COMPOUND walking the path |
//! | `links.rs` | symbolic links (CREATE `NF4LNK`, READLINK), hard links (LINK), `lookup` and `metadata_of` by handle |
//! | `attrs.rs` | `set_attrs` (SETATTR by path or with the open stateid), `access` (ACCESS), `fsstat` (GETATTR of `space_*`/`files_*`) |
//! | `file.rs` | OPEN/CLOSE, SETATTR with the open stateid, the blocking READ, WRITE and COMMIT |
//! | `open_state.rs` | the state a reclaim needs of an open file (handle, access, open stateid, locks), listed by the session |
//! | `io.rs` | this version's per-RPC operations for `crate::rpcops`: a READ or WRITE piece on its own slot, settled; COMMIT of the file |
//! | `handles.rs` | `open_handle`: OPEN by handle (CLAIM_FH) |
//! | `lock.rs` | `File::lock`/`try_lock`/`unlock`: LOCK, LOCKU, released before CLOSE; lost locks reported |
//! | `held.rs` | the byte ranges a lock owner holds (POSIX merge and split), for reclaim |
//! | `trunk.rs` | session trunking: each path's server owner checked by EXCHANGE_ID, every connection bound to the session (BIND_CONN_TO_SESSION) |
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
pub(crate) mod file;
pub(crate) mod handles;
pub(crate) mod held;
pub(crate) mod io;
pub(crate) mod lease;
pub(crate) mod links;
pub(crate) mod lock;
pub(crate) mod mount;
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

/// The error for a feature not available on NFSv4.1 yet.
pub(crate) fn unsupported(what: &str) -> Error {
    Error::Unsupported(format!("NFSv4.1: {what} not supported yet"))
}

/// Declares `Client` methods that only tests call: public with the cargo
/// feature `test-hooks` (which the crate's own integration tests turn on
/// through their dev-dependency on it), crate-private and allowed to go
/// unused without it, so that no other build offers them. Compiled either
/// way, so the session's accessors they read stay in use.
macro_rules! test_hooks {
    ($($(#[$doc:meta])* fn $name:ident $args:tt $(-> $ret:ty)? $body:block)*) => {
        #[cfg(feature = "test-hooks")]
        impl crate::Client {
            $($(#[$doc])* pub fn $name $args $(-> $ret)? $body)*
        }
        #[cfg(not(feature = "test-hooks"))]
        #[allow(dead_code)]
        impl crate::Client {
            $($(#[$doc])* pub(crate) fn $name $args $(-> $ret)? $body)*
        }
    };
}

impl crate::Client {
    /// The fore-channel slots of the NFSv4.1 session (as the server
    /// granted them); `None` on NFSv3.
    pub fn session_slots(&self) -> Option<u32> {
        self.inner.v4.as_ref().map(Session::slots)
    }
}

impl crate::Client {
    /// The NFSv4.1 server owner and scope each path's EXCHANGE_ID
    /// reported (paths not connected yet are left out), and why a path
    /// whose server is not the session's is not used; empty on NFSv3.
    pub fn server_owners(&self) -> Vec<trunk::ServerOwner> {
        self.inner
            .v4
            .as_ref()
            .map_or_else(Vec::new, |s| s.trunk.owners())
    }
}

test_hooks! {
    /// For tests: BIND_CONN_TO_SESSION calls sent so far, and those
    /// answered NFS4_OK ((0, 0) on NFSv3).
    fn binds_for_test(&self) -> (u64, u64) {
        self.inner.v4.as_ref().map_or((0, 0), |s| s.trunk.binds())
    }

    /// For tests: destroys the NFSv4.1 session behind the client's back,
    /// as a server restart would, so the next request meets
    /// NFS4ERR_BADSESSION and must recover. Returns how many sessions the
    /// client has had so far (0 on NFSv3, which has none).
    fn destroy_session_for_test(&self) -> u64 {
        match &self.inner.v4 {
            Some(s) => {
                s.destroy(&self.inner, false);
                s.sessions()
            }
            None => 0,
        }
    }

    /// For tests: the NFSv4 statuses (`NFS4ERR_BADSESSION`, ...) that
    /// made the client replace its session, in order; empty on NFSv3.
    fn session_recoveries_for_test(&self) -> Vec<String> {
        match &self.inner.v4 {
            Some(s) => s.recoveries().iter().map(|st| st.to_string()).collect(),
            None => Vec::new(),
        }
    }

    /// For tests: the most fore-channel slots of the NFSv4.1 session
    /// busy at once so far — requests the server had in flight together
    /// (0 on NFSv3).
    fn session_peak_slots_for_test(&self) -> u32 {
        self.inner.v4.as_ref().map_or(0, Session::peak_busy)
    }

    /// For tests: holds (`true`) or releases every reclaim after its
    /// first file, so that a test can restart the server in the middle
    /// of one; [`reclaim_waiting_for_test`](Self::reclaim_waiting_for_test)
    /// says when one waits.
    fn pause_reclaim_for_test(&self, paused: bool) {
        if let Some(s) = &self.inner.v4 {
            s.reclaim_hold
                .paused
                .store(paused, std::sync::atomic::Ordering::Release);
        }
    }

    /// For tests: true while a reclaim waits at the hold.
    fn reclaim_waiting_for_test(&self) -> bool {
        self.inner.v4.as_ref().is_some_and(|s| {
            s.reclaim_hold
                .waiting
                .load(std::sync::atomic::Ordering::Acquire)
        })
    }

    /// For tests: stops (`true`) or resumes the background lease
    /// renewal, so that an idle client's lease can expire.
    fn pause_lease_renewal_for_test(&self, paused: bool) {
        if let Some(s) = &self.inner.v4 {
            s.pause_renewal(paused);
        }
    }
}
