//! How a COMPOUND carries its SEQUENCE (RFC 8881 §2.10.6, §18.46): the
//! request as the session layer gets it, its call encoded with SEQUENCE
//! first on the slot it holds, the reply decoded as far as the SEQUENCE
//! result, and what that result and the COMPOUND status make of the
//! request — settled, sent again on the same slot, sent again as a new
//! request, or a session to recover (`recovery.rs`). The session
//! (`Session::settle`) carries these decisions out on its slot table.
//! Also the call header, the one-call `run` and the NFSv4 status errors.

use std::sync::Arc;

use directnfs_engine::session::{Next, Outcome};
use directnfs_wire::nfs4::{
    self, encode_compound_header, encode_sequence_op, nfs_argop4, nfs_opnum4, nfs_resop4, nfsstat4,
    COMPOUND4res, Nfs4Res, SEQUENCE4args, SEQUENCE4res,
};
use directnfs_wire::xdr::XdrWrite;
use directnfs_wire::XdrReader;

use crate::error::{Error, Result};
use crate::io::call::{Call, Group, Notify, ReadDest, Reply, Sink};
use crate::remote::Remote;

use super::recovery::recovers;
use super::slots::Slot;

/// Procedure number a COMPOUND is counted under in the statistics (the
/// NFSv3 procedure doing the same work, or "other").
pub(crate) type StatProc = u32;
/// Counted as "other": session upkeep, OPEN, CLOSE.
pub(crate) const STAT_OTHER: StatProc = 22;

/// What a COMPOUND carries besides its SEQUENCE: how to encode its other
/// operations, which operations they are (to check the reply), an
/// optional payload sent after them (WRITE data), and whether the server
/// is to cache the reply (non-idempotent requests).
pub(crate) struct Request<'a> {
    pub ops: &'a [nfs_opnum4],
    pub encode: &'a dyn Fn(&mut Vec<u8>),
    pub payload: Option<Arc<[u8]>>,
    pub cache: bool,
    pub stat: StatProc,
    pub op: &'static str,
    pub path: &'a str,
    /// Part of a reclaim (`reclaim.rs`): goes while others wait for it.
    pub reclaim: bool,
    /// A READ's buffer (pointer, length): a successful reply's data goes
    /// straight into it as it is received (`Sink::Read4`), and the
    /// settled reply says so ([`Settled::read`]). Whoever sets it keeps
    /// the buffer alive and untouched until every call of the request has
    /// completed (a blocking request waits for them; a batch owns its
    /// buffers or waits in its scope).
    pub read_into: Option<(*mut u8, usize)>,
    /// The I/O class its calls carry (the file's, for a COMMIT; data for
    /// everything else).
    pub class: directnfs_engine::IoClass,
}

impl<'a> Request<'a> {
    /// A request of ordinary operations (encoded with their `Encode`).
    pub(crate) fn ops(
        args: &'a [nfs_argop4],
        opnums: &'a [nfs_opnum4],
        encode: &'a dyn Fn(&mut Vec<u8>),
        op: &'static str,
        path: &'a str,
    ) -> Self {
        debug_assert_eq!(args.len(), opnums.len());
        Self {
            ops: opnums,
            encode,
            payload: None,
            cache: false,
            stat: STAT_OTHER,
            op,
            path,
            reclaim: false,
            read_into: None,
            class: directnfs_engine::IoClass::Data,
        }
    }

    /// Where the call's reply goes.
    fn sink(&self) -> Sink {
        match self.read_into {
            // SAFETY: the contract of `read_into` (see the field).
            Some((ptr, len)) => Sink::Read4(unsafe { ReadDest::from_raw(ptr, len) }),
            None => Sink::Record,
        }
    }
}

/// A settled reply: the record bytes (from the procedure results) and the
/// COMPOUND status. The SEQUENCE result was checked and consumed.
pub(crate) struct Settled {
    pub record: Vec<u8>,
    pub status: nfsstat4,
    /// A READ whose data is already in the request's buffer
    /// ([`Request::read_into`]); `record` then ends before the data.
    pub read: Option<ReadIn>,
}

/// A successful READ's outcome when its data went straight into the
/// caller's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ReadIn {
    pub count: u32,
    pub eof: bool,
}

/// A reply as the session layer gets it: the record from the procedure
/// results on (for a READ received into its buffer, up to the data), and
/// then that READ's outcome.
#[derive(Debug)]
pub(crate) struct Body {
    pub record: Vec<u8>,
    pub read: Option<ReadIn>,
}

/// True when `status` says the server has no reply cached for a re-send
/// of `req` (its reply was lost and the engine sent the same bytes
/// again), and `req` asked for none: an idempotent request (READ), sent
/// again as a new one. RFC 8881 §2.10.6.1.3.
fn uncached_retry(req: &Request<'_>, status: nfsstat4) -> bool {
    status == nfsstat4::NFS4ERR_RETRY_UNCACHED_REP && !req.cache
}

/// A reply decoded as far as its SEQUENCE result: ((reply, COMPOUND
/// status), SEQUENCE result).
pub(crate) type First = ((Body, nfsstat4), SEQUENCE4res);

/// The SEQUENCE of `req` on `slot` (RFC 8881 §18.46.1): the slot's
/// session, sequence id and slot, the highest slot in use when it was
/// taken, and whether the server is to cache the reply.
fn sequence_args(req: &Request<'_>, slot: &Slot) -> SEQUENCE4args {
    SEQUENCE4args {
        sa_sessionid: slot.sessionid,
        sa_sequenceid: slot.ticket.seqid,
        sa_slotid: slot.ticket.slot,
        sa_highest_slotid: slot.highest,
        sa_cachethis: req.cache,
    }
}

/// The call body of `req` on `slot`: RPC header, COMPOUND header,
/// SEQUENCE, then `req`'s operations (its payload goes separately).
pub(crate) fn encode(remote: &Remote, req: &Request<'_>, slot: &Slot) -> Arc<[u8]> {
    let mut body = Vec::with_capacity(256);
    put_call_header(remote, &mut body);
    encode_compound_header(&mut body, 1 + req.ops.len() as u32);
    encode_sequence_op(&mut body, &sequence_args(req, slot));
    (req.encode)(&mut body);
    body.into()
}

/// A call of `req` sent as `body` (on the slot it was encoded for),
/// telling `notify` when its reply comes, without waiting (the blocking
/// send waits on it; the pipelined batch reaps it later). Its outcome is
/// [`first_reply`]'s.
pub(crate) fn start(req: &Request<'_>, body: &Arc<[u8]>, notify: Notify) -> Arc<Call> {
    let weight = req.payload.as_ref().map_or(256, |p| p.len() as u64);
    Call::new(
        req.stat,
        body.to_vec(),
        req.payload.clone(),
        weight,
        req.sink(),
        notify,
    )
}

/// True when `Session::settle` settles `first`, the outcome of a
/// request, without a pause, a re-send or a session recovery: SEQUENCE
/// succeeded and no later operation said DELAY or GRACE, or the call
/// failed (the slot is released as in doubt, the error returned). The
/// pipelined batch (`batch/v41.rs`) settles such outcomes as they come and
/// leaves the others for when it may block.
pub(crate) fn settles_at_once(first: &Result<First>) -> bool {
    match first {
        Ok(((_, status), Nfs4Res::Ok(_))) => {
            *status != nfsstat4::NFS4ERR_DELAY && *status != nfsstat4::NFS4ERR_GRACE
        }
        Ok((_, Nfs4Res::Fail(_))) => false,
        Err(_) => true,
    }
}

/// True when SEQUENCE itself said NFS4ERR_DELAY: the request was not
/// executed (or a retry of it is still running), and the same bytes go
/// again on the same slot after a pause.
pub(super) fn same_again(sequence: &SEQUENCE4res) -> bool {
    sequence.status() == nfsstat4::NFS4ERR_DELAY
}

/// What becomes of a request whose SEQUENCE succeeded (its slot is
/// released, the sequence id used), by the COMPOUND `status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Consumed {
    /// The reply is the request's.
    Deliver,
    /// A later operation said DELAY or GRACE: a new request after a
    /// pause.
    PauseThenNew,
    /// The server had no reply cached for this re-send of an idempotent
    /// request: a new request now.
    New,
}

/// [`Consumed`] for `req`'s COMPOUND `status`.
pub(super) fn consumed(req: &Request<'_>, status: nfsstat4) -> Consumed {
    if status == nfsstat4::NFS4ERR_DELAY || status == nfsstat4::NFS4ERR_GRACE {
        return Consumed::PauseThenNew;
    }
    if uncached_retry(req, status) {
        return Consumed::New;
    }
    Consumed::Deliver
}

/// How a slot whose SEQUENCE failed with `status` is released.
pub(super) fn refused_outcome(status: nfsstat4) -> Outcome {
    match status {
        nfsstat4::NFS4ERR_SEQ_MISORDERED => Outcome::Misordered,
        // The request this one re-sends ran and used the sequence id:
        // the next request on the slot must not send it again (the
        // server would take it for yet another retry).
        nfsstat4::NFS4ERR_RETRY_UNCACHED_REP => Outcome::Done,
        _ => Outcome::NotExecuted,
    }
}

/// What becomes of a request whose SEQUENCE failed with `status`, once
/// its slot was released with [`refused_outcome`] and the table said
/// `next`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refused {
    /// A new request now: the slot's sequence id stepped back after a
    /// lost reply, or an idempotent request's reply was not cached.
    New,
    /// The session or client ID is gone: recover it (within the
    /// request's bound), then a new request.
    Recover,
    /// The status is the request's error.
    Fail,
}

/// [`Refused`] for `req` whose SEQUENCE failed with `status`.
pub(super) fn refused(req: &Request<'_>, status: nfsstat4, next: Next) -> Refused {
    if next == Next::Resend || uncached_retry(req, status) {
        return Refused::New;
    }
    if recovers(status) {
        return Refused::Recover;
    }
    Refused::Fail
}

/// Sends one call on `remote`'s transport and waits: the reply record from
/// the procedure results on.
pub(crate) fn run(
    remote: &Remote,
    stat: StatProc,
    body: Vec<u8>,
    payload: Option<Arc<[u8]>>,
    op: &'static str,
    path: &str,
) -> Result<Vec<u8>> {
    let weight = payload.as_ref().map_or(256, |p| p.len() as u64);
    let group = Group::new(1);
    let call = Call::new(
        stat,
        body,
        payload,
        weight,
        Sink::Record,
        Notify::Group(Arc::clone(&group)),
    );
    remote.run(Arc::clone(&call), &group);
    Ok(body_of(&call, op, path)?.record)
}

/// The reply of a completed COMPOUND call, from the procedure results on.
pub(super) fn body_of(call: &Call, op: &'static str, path: &str) -> Result<Body> {
    match call
        .take_result()
        .map_err(|e| Error::from_call(op, path, e))?
    {
        Reply::Results(record) => Ok(Body { record, read: None }),
        Reply::Read4 { head, count, eof } => Ok(Body {
            record: head,
            read: Some(ReadIn { count, eof }),
        }),
        Reply::Read { .. } | Reply::Write { .. } => Err(Error::Protocol {
            op,
            path: path.to_string(),
            detail: "an NFSv3 READ or WRITE sink on a COMPOUND".into(),
        }),
    }
}

/// The outcome of a completed call [`start`] made, as far as
/// the SEQUENCE result, for `Session::settle`.
pub(crate) fn first_reply(call: &Call, op: &'static str, path: &str) -> Result<First> {
    let body = body_of(call, op, path)?;
    let mut r = XdrReader::new(&body.record);
    let head = decode_sequence_head(&mut r).map_err(|e| Error::Protocol {
        op,
        path: path.to_string(),
        detail: e.to_string(),
    })?;
    Ok(((body, head.0), head.1))
}

/// The call header after the XID: CALL, RPC version 2, NFS program,
/// version 4, COMPOUND, and the credential.
pub(crate) fn put_call_header(remote: &Remote, b: &mut Vec<u8>) {
    b.put_u32(0); // CALL
    b.put_u32(directnfs_wire::rpc::RPC_VERSION);
    b.put_u32(nfs4::NFS4_PROGRAM);
    b.put_u32(nfs4::NFS_V4);
    b.put_u32(nfs4::NFSPROC4_COMPOUND);
    b.extend_from_slice(&remote.cred);
}

/// The COMPOUND status and the SEQUENCE result at the head of a reply
/// (RFC 8881 §16.2.2): status, tag, result count, then SEQUENCE's result.
/// A reply without one (an error before it, such as
/// NFS4ERR_MINOR_VERS_MISMATCH) gives the COMPOUND status as SEQUENCE's.
fn decode_sequence_head(
    r: &mut XdrReader<'_>,
) -> std::result::Result<(nfsstat4, SEQUENCE4res), directnfs_wire::DecodeError> {
    use directnfs_wire::Decode;
    let status = nfsstat4::decode(r)?;
    let _tag = nfs4::utf8str_cs::decode(r)?;
    let n = r.u32("COMPOUND4res resarray")?;
    if n == 0 {
        return Ok((
            status,
            Nfs4Res::Fail(if status.is_ok() {
                nfsstat4::NFS4ERR_SERVERFAULT
            } else {
                status
            }),
        ));
    }
    let op = nfs_opnum4::decode(r)?;
    if op != nfs_opnum4::OP_SEQUENCE {
        return Err(directnfs_wire::DecodeError::BadDiscriminant {
            what: "nfs_resop4 (not SEQUENCE at the head of a COMPOUND reply)",
            value: op.0,
        });
    }
    Ok((status, SEQUENCE4res::decode(r)?))
}

/// The results after SEQUENCE of a settled reply, checked against `ops`.
pub(crate) fn results(
    s: &Settled,
    ops: &[nfs_opnum4],
    op: &'static str,
) -> Result<Vec<nfs_resop4>> {
    let mut sent = Vec::with_capacity(ops.len() + 1);
    sent.push(nfs_opnum4::OP_SEQUENCE);
    sent.extend_from_slice(ops);
    let mut res = COMPOUND4res::decode_expecting(&mut XdrReader::new(&s.record), &sent)
        .map_err(|e| protocol(op, e))?;
    if !res.resarray.is_empty() {
        res.resarray.remove(0);
    }
    Ok(res.resarray)
}

/// The error for an NFSv4 status. NFS4ERR_BAD_SEQID is not passed on
/// raw: NFSv4.1 servers ignore the seqids of open and lock owners (RFC
/// 8881 §15.1.16.1, §18.16.3: this client sends 0), so it says the server
/// does not follow NFSv4.1 — a protocol error (EIO), not a status the
/// caller could act on. The client does not retry it: the same request
/// would carry the same seqid.
pub(crate) fn nfs4_error(op: &'static str, path: &str, status: nfsstat4) -> Error {
    if status == nfsstat4::NFS4ERR_BAD_SEQID {
        return Error::Protocol {
            op,
            path: path.to_string(),
            detail: "the server answered NFS4ERR_BAD_SEQID, but NFSv4.1 servers ignore \
                     owner seqids (RFC 8881 §15.1.16.1): it does not follow NFSv4.1"
                .into(),
        };
    }
    Error::Nfs4 {
        op,
        path: path.to_string(),
        status,
    }
}

pub(super) fn protocol(op: &'static str, e: directnfs_wire::DecodeError) -> Error {
    Error::Protocol {
        op,
        path: "/".into(),
        detail: e.to_string(),
    }
}

pub(super) fn unexpected(op: &'static str, res: &nfs_resop4) -> Error {
    let status = res.status();
    if status.is_ok() {
        Error::Protocol {
            op,
            path: "/".into(),
            detail: format!("unexpected result {:?}", res.opnum()),
        }
    } else {
        nfs4_error(op, "/", status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use directnfs_engine::session::Ticket;
    use directnfs_wire::nfs4::{sessionid4, SEQUENCE4resok};
    use directnfs_wire::Encode;

    fn nothing(_: &mut Vec<u8>) {}

    fn req(cache: bool) -> Request<'static> {
        Request {
            cache,
            ..Request::ops(&[], &[], &nothing, "READ", "/db/x")
        }
    }

    fn sequence_ok() -> SEQUENCE4res {
        Nfs4Res::Ok(SEQUENCE4resok::default())
    }

    fn first(status: nfsstat4, sequence: SEQUENCE4res) -> Result<First> {
        let body = Body {
            record: Vec::new(),
            read: None,
        };
        Ok(((body, status), sequence))
    }

    #[test]
    fn bad_seqid_is_a_protocol_error_not_a_raw_status() {
        let e = nfs4_error("LOCK", "/db/x", nfsstat4::NFS4ERR_BAD_SEQID);
        assert!(matches!(e, Error::Protocol { .. }), "{e:?}");
        assert_eq!(e.errno(), libc::EIO);
        let text = e.to_string();
        assert!(
            text.contains("LOCK /db/x") && text.contains("NFS4ERR_BAD_SEQID"),
            "{text}"
        );
        let other = nfs4_error("OPEN", "/db/x", nfsstat4::NFS4ERR_NOENT);
        assert!(matches!(other, Error::Nfs4 { .. }), "{other:?}");
    }

    #[test]
    fn sequence_names_the_held_slot_and_caches_only_what_the_request_asks() {
        let slot = Slot {
            generation: 3,
            sessionid: sessionid4([7; 16]),
            ticket: Ticket { slot: 5, seqid: 42 },
            highest: 9,
            batch: false,
        };
        let args = sequence_args(&req(false), &slot);
        assert_eq!(args.sa_sessionid, sessionid4([7; 16]));
        assert_eq!((args.sa_slotid, args.sa_sequenceid), (5, 42));
        assert_eq!(args.sa_highest_slotid, 9);
        assert!(!args.sa_cachethis);
        assert!(sequence_args(&req(true), &slot).sa_cachethis);
    }

    #[test]
    fn only_success_without_delay_or_grace_and_failed_calls_settle_at_once() {
        assert!(settles_at_once(&first(nfsstat4::NFS4_OK, sequence_ok())));
        assert!(settles_at_once(&first(
            nfsstat4::NFS4ERR_NOENT,
            sequence_ok()
        )));
        assert!(!settles_at_once(&first(
            nfsstat4::NFS4ERR_DELAY,
            sequence_ok()
        )));
        assert!(!settles_at_once(&first(
            nfsstat4::NFS4ERR_GRACE,
            sequence_ok()
        )));
        assert!(!settles_at_once(&first(
            nfsstat4::NFS4ERR_BADSESSION,
            Nfs4Res::Fail(nfsstat4::NFS4ERR_BADSESSION)
        )));
        let failed: Result<First> = Err(Error::Protocol {
            op: "READ",
            path: "/db/x".into(),
            detail: "lost".into(),
        });
        assert!(settles_at_once(&failed));
    }

    #[test]
    fn only_delay_from_sequence_itself_sends_the_same_bytes_again() {
        assert!(same_again(&Nfs4Res::Fail(nfsstat4::NFS4ERR_DELAY)));
        assert!(!same_again(&sequence_ok()));
        assert!(!same_again(&Nfs4Res::Fail(nfsstat4::NFS4ERR_BADSESSION)));
        assert!(!same_again(&Nfs4Res::Fail(nfsstat4::NFS4ERR_GRACE)));
    }

    #[test]
    fn delay_or_grace_after_sequence_pauses_then_sends_a_new_request() {
        let r = req(false);
        assert_eq!(
            consumed(&r, nfsstat4::NFS4ERR_DELAY),
            Consumed::PauseThenNew
        );
        assert_eq!(
            consumed(&r, nfsstat4::NFS4ERR_GRACE),
            Consumed::PauseThenNew
        );
        assert_eq!(consumed(&r, nfsstat4::NFS4_OK), Consumed::Deliver);
        assert_eq!(consumed(&r, nfsstat4::NFS4ERR_NOENT), Consumed::Deliver);
    }

    #[test]
    fn an_uncached_reply_resends_only_an_idempotent_request() {
        let uncached = nfsstat4::NFS4ERR_RETRY_UNCACHED_REP;
        assert_eq!(consumed(&req(false), uncached), Consumed::New);
        assert_eq!(consumed(&req(true), uncached), Consumed::Deliver);
        assert_eq!(refused(&req(false), uncached, Next::Settled), Refused::New);
        assert_eq!(refused(&req(true), uncached, Next::Settled), Refused::Fail);
        // The sequence id was used by the request this one re-sends.
        assert_eq!(refused_outcome(uncached), Outcome::Done);
    }

    #[test]
    fn a_misordered_slot_in_doubt_sends_a_new_request() {
        let misordered = nfsstat4::NFS4ERR_SEQ_MISORDERED;
        assert_eq!(refused_outcome(misordered), Outcome::Misordered);
        assert_eq!(refused(&req(true), misordered, Next::Resend), Refused::New);
        assert_eq!(
            refused(&req(true), misordered, Next::Settled),
            Refused::Fail
        );
    }

    #[test]
    fn a_lost_session_or_client_is_recovered_other_refusals_fail() {
        for status in [
            nfsstat4::NFS4ERR_BADSESSION,
            nfsstat4::NFS4ERR_DEADSESSION,
            nfsstat4::NFS4ERR_STALE_CLIENTID,
            nfsstat4::NFS4ERR_EXPIRED,
        ] {
            assert_eq!(refused_outcome(status), Outcome::NotExecuted, "{status}");
            assert_eq!(
                refused(&req(false), status, Next::Settled),
                Refused::Recover,
                "{status}"
            );
        }
        for status in [nfsstat4::NFS4ERR_BADSLOT, nfsstat4::NFS4ERR_SEQUENCE_POS] {
            assert_eq!(refused_outcome(status), Outcome::NotExecuted, "{status}");
            assert_eq!(
                refused(&req(false), status, Next::Settled),
                Refused::Fail,
                "{status}"
            );
        }
    }

    #[test]
    fn the_head_of_a_reply_is_its_status_and_sequence_result() {
        let ok = SEQUENCE4resok {
            sr_slotid: 4,
            sr_target_highest_slotid: 31,
            ..SEQUENCE4resok::default()
        };
        let mut b = Vec::new();
        b.put_u32(nfsstat4::NFS4ERR_NOENT.0);
        b.put_u32(0); // empty tag
        b.put_u32(2);
        b.put_u32(nfs_opnum4::OP_SEQUENCE.0);
        Nfs4Res::<SEQUENCE4resok>::Ok(ok).encode(&mut b);
        let (status, sequence) =
            decode_sequence_head(&mut XdrReader::new(&b)).expect("a SEQUENCE head");
        assert_eq!(status, nfsstat4::NFS4ERR_NOENT);
        assert_eq!(sequence, Nfs4Res::Ok(ok));
    }

    #[test]
    fn a_reply_without_results_gives_its_status_as_sequences() {
        let head = |status: nfsstat4| {
            let mut b = Vec::new();
            b.put_u32(status.0);
            b.put_u32(0);
            b.put_u32(0);
            decode_sequence_head(&mut XdrReader::new(&b)).expect("a head")
        };
        let (status, sequence) = head(nfsstat4::NFS4ERR_MINOR_VERS_MISMATCH);
        assert_eq!(status, nfsstat4::NFS4ERR_MINOR_VERS_MISMATCH);
        assert_eq!(
            sequence,
            Nfs4Res::Fail(nfsstat4::NFS4ERR_MINOR_VERS_MISMATCH)
        );
        // No results and NFS4_OK: the server is at fault.
        let (_, sequence) = head(nfsstat4::NFS4_OK);
        assert_eq!(sequence, Nfs4Res::Fail(nfsstat4::NFS4ERR_SERVERFAULT));
    }

    #[test]
    fn a_reply_not_headed_by_sequence_is_refused() {
        let mut b = Vec::new();
        b.put_u32(0);
        b.put_u32(0);
        b.put_u32(1);
        b.put_u32(nfs_opnum4::OP_PUTROOTFH.0);
        b.put_u32(0);
        assert!(decode_sequence_head(&mut XdrReader::new(&b)).is_err());
    }
}
