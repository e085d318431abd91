//! NFS version 4 minor version 1 (RFC 8881; XDR from RFC 5662), program
//! 100003 version 4: procedures NULL (0) and COMPOUND (1), and the
//! callback program's CB_COMPOUND.
//!
//! Types keep their RFC names (`OPEN4args`, `nfsstat4::NFS4ERR_BADSESSION`,
//! `nfs_opnum4::OP_SEQUENCE`) so the code reads side by side with the RFC
//! and with `spec/nfs4.x`. Layout:
//! * [`types`]: `nfsstat4`, `nfs_opnum4`, handles, stateids, session ids,
//!   bitmaps, names, times, owners;
//! * [`attr`]: `fattr4`, decoded by its bitmap;
//! * one module per group of operations: [`session`] (EXCHANGE_ID,
//!   CREATE_SESSION, SEQUENCE, BIND_CONN_TO_SESSION, DESTROY_SESSION,
//!   DESTROY_CLIENTID, RECLAIM_COMPLETE), [`fh`] (PUTROOTFH, PUTFH, GETFH,
//!   LOOKUP, LOOKUPP, SAVEFH, RESTOREFH, SECINFO, SECINFO_NO_NAME),
//!   [`getattr`] (GETATTR, SETATTR, ACCESS), [`open`] (OPEN, CLOSE, DELEGRETURN,
//!   FREE_STATEID, TEST_STATEID), [`io`] (READ, WRITE, COMMIT),
//!   [`namespace`] (CREATE, REMOVE, RENAME, LINK, READLINK), [`dir`] (READDIR),
//!   [`lock`] (LOCK, LOCKT, LOCKU);
//! * [`compound`]: `COMPOUND4args`/`COMPOUND4res` and the operation
//!   unions; [`callback`]: CB_COMPOUND and the back channel's answers;
//! * [`hotpath`]: allocation-free `SEQUENCE, PUTFH, READ|WRITE|COMMIT`
//!   encoders and borrowing decoders for the I/O driver.
//!
//! Not implemented (XDR in RFC 5662 §2): pNFS (layouts, devices),
//! directory delegations, NVERIFY/VERIFY, OPENATTR, OPEN_DOWNGRADE,
//! SET_SSV, WANT_DELEGATION, BACKCHANNEL_CTL, and the
//! NFSv4.0-only operations.
//!
//! # What a client layer does with these types
//!
//! The codec knows no state; a session layer drives it (RFC 8881 §2.10).
//!
//! **Client ID.** `EXCHANGE_ID` alone in its COMPOUND (no SEQUENCE), with a
//! `client_owner4` whose `co_ownerid` is stable across client restarts and
//! whose `co_verifier` changes with each one, `EXCHGID4_FLAG_USE_NON_PNFS`
//! and `SP4_NONE`. Keep `eir_clientid`, `eir_sequenceid`, and
//! `eir_server_owner` + `eir_server_scope`: two connections may join one
//! session (BIND_CONN_TO_SESSION, session trunking) only when both say the
//! same `so_major_id`, `so_minor_id` and scope (RFC 8881 §2.10.5).
//!
//! **Session.** `CREATE_SESSION` alone, `csa_sequence` = `eir_sequenceid`
//! for the first one and one more for each later one of the same client ID
//! (a one-slot replay cache of its own: a retry sends the same number).
//! Ask `ca_maxrequests` = the pipeline depth; the server's answer in
//! `csr_fore_chan_attrs` is the slot count, and `ca_maxrequestsize` /
//! `ca_maxresponsesize` bound every COMPOUND (so the READ and WRITE sizes,
//! with the `maxread`/`maxwrite` attributes of the export's handle, not
//! the pseudo root's). Then, once per client ID and before the first
//! non-reclaim OPEN or LOCK, `RECLAIM_COMPLETE(rca_one_fs = false)` (after
//! reclaiming, if the server restarted): RFC 8881 §18.51.3, else those get
//! `NFS4ERR_GRACE`. Every other COMPOUND starts with SEQUENCE;
//! EXCHANGE_ID, CREATE_SESSION, BIND_CONN_TO_SESSION and DESTROY_CLIENTID
//! go alone, and DESTROY_SESSION alone or last. Decode replies with
//! [`COMPOUND4res::decode_expecting`] (the operations sent), or with the
//! [`hotpath`] decoders for READ, WRITE and COMMIT.
//!
//! **Slots and sequence ids (exactly once, RFC 8881 §2.10.6).** Each slot
//! carries one request at a time and remembers the last sequence id used
//! (0 at creation, so the first request on a slot sends 1). A new request
//! takes a free slot and sends last + 1; a *retry* of a request whose reply
//! was lost (connection failure, failover to another connection of the
//! session) goes on the same slot with the same sequence id and the same
//! operations: the server answers it from its reply cache without running
//! it again — if `sa_cachethis` was true; otherwise a retry of an executed
//! request gets `NFS4ERR_RETRY_UNCACHED_REP` and its outcome is unknown.
//! So set `sa_cachethis` for every non-idempotent COMPOUND (OPEN, CLOSE,
//! LOCK, LOCKU, CREATE, REMOVE, RENAME, LINK, SETATTR, WRITE); replies
//! larger than `ca_maxresponsesize_cached` cannot be cached
//! (`NFS4ERR_REP_TOO_BIG_TO_CACHE`), which a READ is, so READs go
//! uncached and are simply re-sent. A slot whose request is in doubt must
//! not be reused with a new sequence id until the retry is answered.
//! `sa_highest_slotid` is the highest slot in use; keep below
//! `sr_target_highest_slotid` and never above `sr_highest_slotid`.
//! A SEQUENCE that succeeded consumed the sequence id, whatever the later
//! operations did; a SEQUENCE that failed did not (retry with the same
//! id, or recover the session).
//!
//! **What the errors mean** (status of SEQUENCE or of the COMPOUND):
//! * `NFS4ERR_BADSESSION`, `NFS4ERR_DEADSESSION`: the session is gone
//!   (server restart, or destroyed): CREATE_SESSION again and re-send the
//!   requests in flight on the new session's slots (no reply cache across
//!   sessions: a non-idempotent request may then run twice).
//!   `NFS4ERR_CONN_NOT_BOUND_TO_SESSION`: BIND_CONN_TO_SESSION on this
//!   connection first.
//! * `NFS4ERR_STALE_CLIENTID` (CREATE_SESSION), `NFS4ERR_EXPIRED`: the
//!   server lost the client ID (restart) or the lease expired: EXCHANGE_ID,
//!   CREATE_SESSION, then reclaim during the grace period — `OPEN` with
//!   `CLAIM_PREVIOUS` on each open file's handle, `LOCK` with
//!   `reclaim = true` — then RECLAIM_COMPLETE. `NFS4ERR_NO_GRACE`: too
//!   late to reclaim (state lost: report it).
//! * `NFS4ERR_GRACE`: the server is in its grace period: non-reclaim OPEN
//!   and LOCK (and I/O that needs them) wait and retry.
//! * `NFS4ERR_DELAY`: retry later. From SEQUENCE (the slot is busy with a
//!   retry still running) with the same sequence id; from a later
//!   operation as a new request.
//! * `NFS4ERR_SEQ_MISORDERED`, `NFS4ERR_BADSLOT`, `NFS4ERR_BAD_HIGH_SLOT`,
//!   `NFS4ERR_SEQ_FALSE_RETRY` (same slot and id, different request): the
//!   client's slot bookkeeping is wrong; `NFS4ERR_RETRY_UNCACHED_REP`: see
//!   above. `NFS4ERR_SEQUENCE_POS`, `NFS4ERR_OP_NOT_IN_SESSION`,
//!   `NFS4ERR_NOT_ONLY_OP`, `NFS4ERR_TOO_MANY_OPS`, `NFS4ERR_REQ_TOO_BIG`,
//!   `NFS4ERR_REP_TOO_BIG`: the COMPOUND was built wrong.
//! * `NFS4ERR_BAD_STATEID`, `NFS4ERR_OLD_STATEID`, `NFS4ERR_STALE_STATEID`,
//!   `NFS4ERR_ADMIN_REVOKED`, `NFS4ERR_DELEG_REVOKED`: the stateid is no
//!   good: TEST_STATEID, FREE_STATEID what was revoked, open again. Sending
//!   stateids with `seqid = 0` ("the current one", RFC 8881 §8.2.2) on
//!   READ and WRITE avoids `NFS4ERR_OLD_STATEID` races with OPEN.
//! * `sr_status_flags`: `SEQ4_STATUS_RESTART_RECLAIM_NEEDED` (reclaim),
//!   `SEQ4_STATUS_*_STATE_REVOKED` (TEST_STATEID), `SEQ4_STATUS_CB_PATH_DOWN*`
//!   (the back channel is gone: bind a connection for it).
//!
//! **Lease.** Every successful SEQUENCE renews the client's lease
//! (`lease_time` attribute, seconds); an idle client sends a SEQUENCE-only
//! COMPOUND well within it.
//!
//! **Open state.** OPEN with `share_access` matching the open mode,
//! `OPEN4_SHARE_DENY_NONE`, and `OPEN4_SHARE_ACCESS_WANT_NO_DELEG` unless
//! the client answers recalls; `seqid` fields are 0 in NFSv4.1. READ and
//! WRITE carry the open (or lock) stateid; CLOSE ends it. Paths are
//! pseudo-file-system paths: PUTROOTFH, one LOOKUP per component, GETFH.
//!
//! **Back channel.** With `CREATE_SESSION4_FLAG_CONN_BACK_CHAN` the server
//! sends RPC *calls* on the client's connection: a record whose
//! [`peek_msg_type`](crate::rpc::msg::peek_msg_type) is CALL is decoded with
//! [`CallHeader`](crate::rpc::CallHeader) and, for CB_COMPOUND,
//! [`callback::CB_COMPOUND4args`]; [`callback::CB_COMPOUND4args::reply`]
//! builds the answer and [`callback::encode_cb_reply`] the record. CB_SEQUENCE
//! has its own back-channel slots (`csr_back_chan_attrs`, usually one): a
//! call with the slot's last sequence id is a retry to answer with the
//! cached reply. A recalled delegation is returned with DELEGRETURN.

// RFC 5662 names (`OPEN4args`, `nfs_fh4`) are kept so the code greps
// against the RFC.
#![allow(non_camel_case_types)]

pub mod attr;
pub mod callback;
pub mod compound;
pub mod dir;
pub mod fh;
pub mod getattr;
pub mod hotpath;
pub mod io;
pub mod lock;
pub mod namespace;
pub mod open;
pub mod result;
pub mod session;
pub mod types;

pub use attr::*;
pub use callback::*;
pub use compound::*;
pub use dir::*;
pub use fh::*;
pub use getattr::*;
pub use hotpath::*;
pub use io::*;
pub use lock::*;
pub use namespace::*;
pub use open::*;
pub use result::Nfs4Res;
pub use session::*;
pub use types::*;

/// RFC 8881 §16 `NFS4_PROGRAM` (the NFS program of every version).
pub const NFS4_PROGRAM: u32 = 100003;
/// RFC 8881 §16 `NFS_V4`.
pub const NFS_V4: u32 = 4;
/// RFC 8881 §16.1 `NFSPROC4_NULL`.
pub const NFSPROC4_NULL: u32 = 0;
/// RFC 8881 §16.2 `NFSPROC4_COMPOUND`.
pub const NFSPROC4_COMPOUND: u32 = 1;

/// RFC 8881 §16.2 `COMPOUND4res NFSPROC4_COMPOUND(COMPOUND4args) = 1;`
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Compound;
impl crate::Procedure for Compound {
    const PROG: u32 = NFS4_PROGRAM;
    const VERS: u32 = NFS_V4;
    const PROC: u32 = NFSPROC4_COMPOUND;
    const NAME: &'static str = "COMPOUND";
    type Args = COMPOUND4args;
    type Res = COMPOUND4res;
}
