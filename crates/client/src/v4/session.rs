//! The NFSv4.1 session of one client (RFC 8881 §2.10): its client ID,
//! its session and the fore channel's slot table, and the one way every
//! COMPOUND goes out — SEQUENCE first, on a slot held until the request
//! is settled, so that the engine's re-sends after a connection failure
//! (the same bytes, on any connection of the session: `trunk.rs` binds
//! each one with BIND_CONN_TO_SESSION) are answered from the server's reply
//! cache instead of being executed twice.
//!
//! Session errors are recovered here and never reach the caller:
//! NFS4ERR_BADSESSION / DEADSESSION (CREATE_SESSION again; after
//! NFS4ERR_STALE_CLIENTID, EXCHANGE_ID first), NFS4ERR_DELAY from SEQUENCE
//! (the same request again after a pause) or from a later operation (a
//! new request after a pause), NFS4ERR_GRACE (a new request after a
//! pause), NFS4ERR_SEQ_MISORDERED after a lost reply (the slot's sequence
//! id stepped back, `directnfs_engine::session`),
//! NFS4ERR_RETRY_UNCACHED_REP for a re-sent READ whose reply the server
//! did not cache (the sequence id counted as used; the READ sent again
//! as a new request), NFS4ERR_EXPIRED and
//! NFS4ERR_STALE_CLIENTID (a new client ID and session). The pauses are
//! `wait.rs`'s: bounded on a soft mount. A new client ID means the server
//! lost our state (it restarted, or the lease expired): before anything
//! else is sent on the new session, every open file and its locks are
//! reclaimed (`reclaim.rs`), then RECLAIM_COMPLETE.
//!
//! A request goes out in three steps — a slot (`acquire`, or `try_slot`
//! without waiting), the call (`encode`, `start`), its outcome settled
//! (`settle`) — which `compound` runs one after the other, waiting, and
//! the pipelined batch (`batch.rs`) runs apart: many requests started,
//! each settled when its reply is reaped.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

use directnfs_engine::session::{Next, Outcome, SlotTable, Ticket};
use directnfs_wire::nfs4::{
    self, callback_sec_parms4, channel_attrs4, client_owner4, encode_compound_header,
    encode_sequence_op, nfs_argop4, nfs_opnum4, nfs_resop4, nfsstat4, sessionid4, state_protect4_a,
    COMPOUND4args, COMPOUND4res, CREATE_SESSION4args, DESTROY_CLIENTID4args, DESTROY_SESSION4args,
    EXCHANGE_ID4args, Nfs4Res, RECLAIM_COMPLETE4args, SEQUENCE4args, SEQUENCE4res,
    EXCHGID4_FLAG_USE_NON_PNFS,
};
use directnfs_wire::xdr::XdrWrite;
use directnfs_wire::{Encode, XdrReader};

use crate::client::Inner;
use crate::error::{Error, Result};
use crate::io::call::{Call, Group, Notify, ReadDest, Reply, Sink};

use super::file::OpenState;
use super::trunk::Trunk;
use super::wait::Waits;

/// Slots asked for: the server grants what it can (Ganesha: 64).
const SLOTS_WANTED: u32 = 1024;
/// Largest COMPOUND request and reply asked for: a 1 MiB WRITE or READ
/// plus its operations.
const MAX_COMPOUND: u32 = (1 << 20) + 8192;
/// Reply cache size per slot asked for: room for every reply but READ's
/// and READDIR's (which are not cached, `cachethis` false).
const CACHED_REPLY: u32 = 8192;
/// Session recoveries one request may go through before its error is
/// reported (a server that destroys every new session).
const MAX_RECOVERIES: u32 = 8;
/// Bound on the DESTROY_SESSION / DESTROY_CLIENTID wait when a client is
/// dropped (a dead server must not hang the drop).
const DESTROY_WAIT: Duration = Duration::from_secs(2);

/// Procedure number a COMPOUND is counted under in the statistics (the
/// NFSv3 procedure doing the same work, or "other").
pub(crate) type StatProc = u32;
/// Counted as "other": session upkeep, OPEN, CLOSE.
pub(crate) const STAT_OTHER: StatProc = 22;

/// One client ID and session with a server.
#[derive(Debug)]
pub(crate) struct Session {
    state: Mutex<State>,
    /// Signalled when a slot is freed or the session replaced.
    freed: Condvar,
    owner: client_owner4,
    /// The paths' trunking check and the connections' binding.
    pub(crate) trunk: Arc<Trunk>,
    /// The export's handle (the URL's pseudo-file-system path).
    pub(crate) root: nfs4::nfs_fh4,
    /// Lease time in seconds (the `lease_time` attribute).
    pub(crate) lease: Duration,
    /// Start of the session clock, and the last COMPOUND's time on it
    /// (milliseconds): the renewal thread sends a SEQUENCE when idle.
    epoch: Instant,
    last_used_ms: AtomicU64,
    /// Dropped with the session: the renewal thread ends then.
    _renewal_stop: Mutex<Option<mpsc::Sender<()>>>,
    /// Distinguishes open owners of this client.
    pub(crate) next_open_owner: AtomicU64,
    /// The process that made the session: a `fork`ed child that drops
    /// its copy of the parent's client must not end the parent's state.
    pid: u32,
    /// The open files, for reclaim after a server restart.
    opens: Mutex<Vec<Weak<OpenState>>>,
    /// For tests: the statuses that made the client replace its session,
    /// in order, and whether lease renewal is paused.
    recoveries: Mutex<Vec<nfsstat4>>,
    renewal_paused: std::sync::atomic::AtomicBool,
    /// For tests: a reclaim stops after its first file while `paused`,
    /// and says it is waiting there (`waiting`).
    pub(crate) reclaim_hold: ReclaimHold,
    /// Most slots busy at once (`peak_busy`).
    peak_busy: AtomicU32,
    /// Slots pipelined batches hold (`try_batch_slot`), across sessions
    /// (a recovery's new table starts empty; the old tickets still count
    /// here until settled).
    batch_held: AtomicU32,
}

#[derive(Debug)]
struct State {
    clientid: u64,
    /// The next CREATE_SESSION's `csa_sequence`.
    create_seq: u32,
    sessionid: sessionid4,
    slots: SlotTable,
    /// Bumped at each new session: tickets of an older one are void.
    generation: u64,
    /// Slots granted.
    granted: u32,
    /// A new client ID is reclaiming the old one's state: only reclaim
    /// requests may take slots (RFC 8881 §8.4.2.1: nothing else before
    /// RECLAIM_COMPLETE).
    reclaiming: bool,
}

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

/// A slot held for one request: the session generation it belongs to
/// (a ticket of an older session is void), the session, the ticket and
/// the highest slot in use when it was taken.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Slot {
    generation: u64,
    sessionid: sessionid4,
    ticket: Ticket,
    highest: u32,
    /// Taken by `try_batch_slot`: counted in `batch_held`.
    batch: bool,
}

/// Slots pipelined batches leave to everything else (blocking calls,
/// lease renewal, a batch's own blocking path): at least one, a quarter
/// of what the server granted. A batch holds its slots until it reaps
/// their replies, so without them a thread that submits a batch and then
/// makes a blocking call before reaping it would wait for itself.
fn reserved(granted: u32) -> u32 {
    (granted / 4).max(1)
}

/// A test's hold on reclaims (`Client::pause_reclaim_for_test`).
#[derive(Debug, Default)]
pub(crate) struct ReclaimHold {
    pub paused: std::sync::atomic::AtomicBool,
    pub waiting: std::sync::atomic::AtomicBool,
}

impl ReclaimHold {
    /// Waits while paused, saying so.
    pub(crate) fn wait(&self) {
        while self.paused.load(Ordering::Acquire) {
            self.waiting.store(true, Ordering::Release);
            std::thread::sleep(Duration::from_millis(5));
        }
        self.waiting.store(false, Ordering::Release);
    }
}

/// What one request may still spend on DELAY/GRACE pauses and session
/// recoveries, across its re-sends.
#[derive(Debug)]
pub(crate) struct Retry {
    recoveries: u32,
    waits: Waits,
}

impl Retry {
    pub(crate) fn new(inner: &Inner) -> Self {
        Self {
            recoveries: 0,
            waits: Waits::new(&inner.options),
        }
    }
}

impl Session {
    /// EXCHANGE_ID, CREATE_SESSION and RECLAIM_COMPLETE on `inner`'s
    /// transport; `root` and `lease` are filled in by the caller after.
    pub(crate) fn establish(inner: &Inner, trunk: Arc<Trunk>) -> Result<Self> {
        let owner = trunk.owner().clone();
        let state = new_state(inner, &owner, None, true)?;
        trunk.set_session(state.sessionid);
        let (tx, _rx) = mpsc::channel();
        Ok(Self {
            state: Mutex::new(state),
            freed: Condvar::new(),
            owner,
            trunk,
            root: nfs4::nfs_fh4::default(),
            lease: Duration::from_secs(60),
            epoch: Instant::now(),
            last_used_ms: AtomicU64::new(0),
            _renewal_stop: Mutex::new(Some(tx)),
            next_open_owner: AtomicU64::new(1),
            pid: std::process::id(),
            opens: Mutex::new(Vec::new()),
            recoveries: Mutex::new(Vec::new()),
            renewal_paused: std::sync::atomic::AtomicBool::new(false),
            reclaim_hold: ReclaimHold::default(),
            peak_busy: AtomicU32::new(0),
            batch_held: AtomicU32::new(0),
        })
    }

    /// True in the process that made the session (not in a `fork`ed
    /// child holding a copy).
    pub(crate) fn ours(&self) -> bool {
        self.pid == std::process::id()
    }

    /// The client ID (lock owners name it).
    pub(crate) fn clientid(&self) -> u64 {
        self.lock().clientid
    }

    /// Sessions this client has had (1 + recoveries).
    pub(crate) fn sessions(&self) -> u64 {
        self.lock().generation + 1
    }

    /// Slots the server granted.
    pub(crate) fn slots(&self) -> u32 {
        self.lock().granted
    }

    /// The statuses that made the client replace its session (and, after
    /// NFS4ERR_STALE_CLIENTID or EXPIRED from CREATE_SESSION, its client
    /// ID), in order.
    pub(crate) fn recoveries(&self) -> Vec<nfsstat4> {
        self.recoveries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The current session's generation (bumped by every recovery).
    pub(crate) fn generation(&self) -> u64 {
        self.lock().generation
    }

    /// Stops or resumes the background lease renewal.
    pub(crate) fn pause_renewal(&self, paused: bool) {
        self.renewal_paused.store(paused, Ordering::Relaxed);
    }

    /// Starts the thread that renews the lease of an idle client: a
    /// SEQUENCE-only COMPOUND when nothing was sent for a quarter of the
    /// lease (RFC 8881 §8.3). It holds `client` weakly and ends when the
    /// client is dropped.
    pub(crate) fn start_renewal(&self, client: Weak<Inner>) {
        let (tx, rx) = mpsc::channel::<()>();
        *self._renewal_stop.lock().unwrap_or_else(|p| p.into_inner()) = Some(tx);
        let period = (self.lease / 4).max(Duration::from_secs(1));
        let mut first = true;
        let spawned = crate::signals::spawn("dnfs-v41-renew", move || loop {
            // The first tick comes after a second: a forked child's
            // statistics endpoint starts there (`publish::start_deferred`;
            // a no-op for a client that published at once).
            let wait = if first {
                period.min(Duration::from_secs(1))
            } else {
                period
            };
            match rx.recv_timeout(wait) {
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                _ => return,
            }
            if std::mem::take(&mut first) {
                crate::publish::start_deferred();
            }
            let Some(inner) = client.upgrade() else {
                return;
            };
            let Some(session) = inner.v4.as_ref() else {
                return;
            };
            if session.idle_for() >= period && !session.renewal_paused.load(Ordering::Relaxed) {
                if let Err(e) = session.renew(&inner) {
                    tracing::warn!("NFSv4.1 lease renewal failed: {e}");
                }
            }
        });
        if let Err(e) = spawned {
            tracing::warn!(
                "NFSv4.1: no lease renewal thread ({e}): an idle client may lose its lease"
            );
        }
    }

    fn idle_for(&self) -> Duration {
        let now = self.epoch.elapsed().as_millis() as u64;
        Duration::from_millis(now.saturating_sub(self.last_used_ms.load(Ordering::Relaxed)))
    }

    /// A SEQUENCE-only COMPOUND: renews the lease.
    pub(crate) fn renew(&self, inner: &Inner) -> Result<()> {
        let encode = |_: &mut Vec<u8>| {};
        let req = Request::ops(&[], &[], &encode, "SEQUENCE", "/");
        self.compound(inner, &req).map(|_| ())
    }

    /// Sends `req` after a SEQUENCE and waits for its settled reply,
    /// recovering the session errors on the way.
    pub(crate) fn compound(&self, inner: &Inner, req: &Request<'_>) -> Result<Settled> {
        let mut retry = Retry::new(inner);
        loop {
            let slot = self.acquire(req.reclaim);
            let body = self.encode(inner, req, &slot);
            let first = self.send(inner, req, &body);
            if let Some(settled) = self.settle(inner, req, slot, &body, first, &mut retry)? {
                return Ok(settled);
            }
        }
    }

    /// The call body of `req` on `slot`: RPC header, COMPOUND header,
    /// SEQUENCE, then `req`'s operations (its payload goes separately).
    pub(crate) fn encode(&self, inner: &Inner, req: &Request<'_>, slot: &Slot) -> Arc<[u8]> {
        let seq = SEQUENCE4args {
            sa_sessionid: slot.sessionid,
            sa_sequenceid: slot.ticket.seqid,
            sa_slotid: slot.ticket.slot,
            sa_highest_slotid: slot.highest,
            sa_cachethis: req.cache,
        };
        let mut body = Vec::with_capacity(256);
        put_call_header(inner, &mut body);
        encode_compound_header(&mut body, 1 + req.ops.len() as u32);
        encode_sequence_op(&mut body, &seq);
        (req.encode)(&mut body);
        body.into()
    }

    /// True when [`settle`](Self::settle) settles `first`, the outcome
    /// of a request, without a pause, a re-send or a session recovery:
    /// SEQUENCE succeeded and no later operation said DELAY or GRACE, or
    /// the call failed (the slot is released as in doubt, the error
    /// returned). The pipelined batch (`batch.rs`) settles such outcomes
    /// as they come and leaves the others for when it may block.
    pub(crate) fn settles_at_once(first: &Result<First>) -> bool {
        match first {
            Ok(((_, status), Nfs4Res::Ok(_))) => {
                *status != nfsstat4::NFS4ERR_DELAY && *status != nfsstat4::NFS4ERR_GRACE
            }
            Ok((_, Nfs4Res::Fail(_))) => false,
            Err(_) => true,
        }
    }

    /// What became of `req`, sent as `body` on `slot`, whose first reply
    /// (or failure) is `first`: the same bytes again on the same slot
    /// while SEQUENCE says DELAY, the slot released with what the reply
    /// said, the session recovered if it is gone. `Some` is the settled
    /// reply; `None` means send `req` again as a new request (a fresh
    /// slot); an error is the request's.
    pub(crate) fn settle(
        &self,
        inner: &Inner,
        req: &Request<'_>,
        slot: Slot,
        body: &Arc<[u8]>,
        first: Result<First>,
        retry: &mut Retry,
    ) -> Result<Option<Settled>> {
        let generation = slot.generation;
        // SEQUENCE said DELAY: the same request, same slot, again.
        let mut sent = first;
        let (record, sequence) = loop {
            let (record, sequence) = match sent {
                Ok(v) => v,
                Err(e) => {
                    self.finish_slot(&slot, Outcome::Lost);
                    return Err(e);
                }
            };
            if sequence.status() == nfsstat4::NFS4ERR_DELAY {
                if let Err(e) = retry.waits.pause(nfsstat4::NFS4ERR_DELAY, req.op, req.path) {
                    // A retry of this request may still be running on the
                    // server (what DELAY from SEQUENCE says): in doubt, as
                    // a request whose reply was lost.
                    self.finish_slot(&slot, Outcome::Lost);
                    return Err(e);
                }
                sent = self.send(inner, req, body);
                continue;
            }
            break (record, sequence);
        };
        match sequence {
            Nfs4Res::Ok(ok) => {
                self.finish_slot(&slot, Outcome::Done);
                self.set_target(generation, ok.sr_target_highest_slotid);
                self.last_used_ms
                    .store(self.epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
                let status = record.1;
                // A later operation said DELAY or GRACE: a new request
                // after a pause (the slot's sequence id was used).
                if status == nfsstat4::NFS4ERR_DELAY || status == nfsstat4::NFS4ERR_GRACE {
                    retry.waits.pause(status, req.op, req.path)?;
                    return Ok(None);
                }
                if uncached_retry(req, status) {
                    return Ok(None);
                }
                Ok(Some(Settled {
                    record: record.0.record,
                    read: record.0.read,
                    status,
                }))
            }
            Nfs4Res::Fail(status) => {
                let outcome = match status {
                    nfsstat4::NFS4ERR_SEQ_MISORDERED => Outcome::Misordered,
                    // The request this one re-sends ran and used the
                    // sequence id: the next request on the slot must not
                    // send it again (the server would take it for yet
                    // another retry).
                    nfsstat4::NFS4ERR_RETRY_UNCACHED_REP => Outcome::Done,
                    _ => Outcome::NotExecuted,
                };
                let next = self.finish_slot(&slot, outcome);
                let recover = matches!(
                    status,
                    nfsstat4::NFS4ERR_BADSESSION
                        | nfsstat4::NFS4ERR_DEADSESSION
                        | nfsstat4::NFS4ERR_STALE_CLIENTID
                        | nfsstat4::NFS4ERR_EXPIRED
                );
                if next == Next::Resend || uncached_retry(req, status) {
                    return Ok(None);
                }
                if recover && retry.recoveries < MAX_RECOVERIES {
                    retry.recoveries += 1;
                    tracing::info!("NFSv4.1 {status} on {} {}: new session", req.op, req.path);
                    self.recover(inner, generation, status)?;
                    return Ok(None);
                }
                Err(nfs4_error(req.op, req.path, status))
            }
        }
    }

    /// One send of `body` and the wait for its reply, decoded as far as
    /// the SEQUENCE result.
    fn send(&self, inner: &Inner, req: &Request<'_>, body: &Arc<[u8]>) -> Result<First> {
        let group = Group::new(1);
        let call = Self::start(req, body, Notify::Group(Arc::clone(&group)));
        inner.run(Arc::clone(&call), &group);
        first_reply(&call, req.op, req.path)
    }

    /// A call of `req` sent as `body` (on the slot it was encoded for),
    /// telling `notify` when its reply comes, without waiting (the
    /// blocking send waits on it; the pipelined batch reaps it later). Its
    /// outcome is [`first_reply`]'s.
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

    /// A free slot for a pipelined batch now, or `None` when every slot
    /// is busy, batches hold all but the `reserved` ones, or a reclaim is
    /// in progress (the batch does not block for one while its own
    /// requests hold slots it has yet to release).
    pub(crate) fn try_batch_slot(&self) -> Option<Slot> {
        let mut st = self.lock();
        let held = self.batch_held.load(Ordering::Relaxed);
        if st.reclaiming || held + reserved(st.granted) >= st.granted {
            return None;
        }
        let ticket = st.slots.acquire()?;
        self.batch_held.fetch_add(1, Ordering::Relaxed);
        let mut slot = self.slot_of(&mut st, ticket);
        slot.batch = true;
        Some(slot)
    }

    /// Releases `slot` with `outcome` (and its place among the batches').
    fn finish_slot(&self, slot: &Slot, outcome: Outcome) -> Next {
        if slot.batch {
            self.batch_held.fetch_sub(1, Ordering::Relaxed);
        }
        self.finish(slot.generation, slot.ticket, outcome)
    }

    fn slot_of(&self, st: &mut State, ticket: Ticket) -> Slot {
        let busy = st.slots.busy() as u32;
        self.peak_busy.fetch_max(busy, Ordering::Relaxed);
        Slot {
            generation: st.generation,
            sessionid: st.sessionid,
            ticket,
            highest: st.slots.highest_busy(),
            batch: false,
        }
    }

    /// Most slots busy at once so far (requests in flight on the session).
    pub(crate) fn peak_busy(&self) -> u32 {
        self.peak_busy.load(Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A free slot (waiting for one, and, unless for a `reclaim`
    /// request, for a reclaim in progress to end).
    pub(crate) fn acquire(&self, reclaim: bool) -> Slot {
        let mut st = self.lock();
        loop {
            if !st.reclaiming || reclaim {
                if let Some(t) = st.slots.acquire() {
                    return self.slot_of(&mut st, t);
                }
            }
            st = self.freed.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// A free slot now, or `None` when every slot is busy or a reclaim is
    /// in progress. A large read or write takes its first slot with
    /// [`acquire`](Self::acquire) and the others with this, so that a
    /// thread never waits for a slot while it holds one (two large reads
    /// each holding half the table would wait for each other for ever).
    pub(crate) fn try_acquire(&self) -> Option<Slot> {
        let mut st = self.lock();
        if st.reclaiming {
            return None;
        }
        let ticket = st.slots.acquire()?;
        Some(self.slot_of(&mut st, ticket))
    }

    /// Waits while a reclaim is in progress.
    pub(crate) fn wait_reclaimed(&self) {
        let mut st = self.lock();
        while st.reclaiming {
            st = self.freed.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Registers an open file for reclaim after a server restart.
    pub(crate) fn register(&self, open: &Arc<OpenState>) {
        let mut opens = self.opens.lock().unwrap_or_else(|p| p.into_inner());
        opens.retain(|w| w.strong_count() > 0);
        opens.push(Arc::downgrade(open));
    }

    /// The open files still open.
    pub(crate) fn open_files(&self) -> Vec<Arc<OpenState>> {
        let opens = self.opens.lock().unwrap_or_else(|p| p.into_inner());
        opens.iter().filter_map(Weak::upgrade).collect()
    }

    fn finish(&self, generation: u64, t: Ticket, outcome: Outcome) -> Next {
        let mut st = self.lock();
        if st.generation != generation {
            return Next::Settled;
        }
        let next = st.slots.finish(t, outcome);
        let reclaiming = st.reclaiming;
        drop(st);
        // During a reclaim the waiters that may go are the reclaim's,
        // wherever they are in the queue.
        if reclaiming {
            self.freed.notify_all();
        } else {
            self.freed.notify_one();
        }
        next
    }

    fn set_target(&self, generation: u64, target: u32) {
        let mut st = self.lock();
        if st.generation == generation {
            st.slots.set_target_highest(target);
        }
    }

    /// Replaces the session `generation` after `status` said it is gone:
    /// CREATE_SESSION on the same client ID, or a new client ID first.
    /// A new client ID reclaims the open files and their locks before
    /// any other request is let through.
    fn recover(&self, inner: &Inner, generation: u64, status: nfsstat4) -> Result<()> {
        let mut st = self.lock();
        if st.generation != generation {
            return Ok(()); // another request recovered it already
        }
        self.recoveries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(status);
        let keep_client = matches!(
            status,
            nfsstat4::NFS4ERR_BADSESSION | nfsstat4::NFS4ERR_DEADSESSION
        );
        let old_client = st.clientid;
        let reuse = keep_client.then_some((st.clientid, st.create_seq));
        let fresh = match new_state(inner, &self.owner, reuse, false) {
            Ok(s) => s,
            // The client ID is gone too (a server restart): start over.
            Err(e) if reuse.is_some() && stale_client(&e) => {
                if let Error::Nfs4 { status, .. } = e {
                    self.recoveries
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(status);
                }
                new_state(inner, &self.owner, None, false)?
            }
            Err(e) => return Err(e),
        };
        // The same client ID back from EXCHANGE_ID: the server still
        // holds our state (a session lost, not the client), nothing to
        // reclaim; a new one: the state is gone or waits for reclaim.
        let reclaim = fresh.clientid != old_client;
        let generation = st.generation + 1;
        *st = State {
            generation,
            reclaiming: reclaim,
            ..fresh
        };
        // Every connection binds to the new session before its next
        // request (the reclaim's included).
        self.trunk.set_session(st.sessionid);
        drop(st);
        self.freed.notify_all();
        if reclaim {
            let done = super::reclaim::reclaim(self, inner);
            self.lock().reclaiming = false;
            self.freed.notify_all();
            done?;
        }
        Ok(())
    }

    /// DESTROY_SESSION and (`client_too`) DESTROY_CLIENTID, waiting at
    /// most a few seconds for each (the client is going away).
    pub(crate) fn destroy(&self, inner: &Inner, client_too: bool) {
        if !self.ours() {
            return;
        }
        let st = self.lock();
        let (sessionid, clientid) = (st.sessionid, st.clientid);
        drop(st);
        let mut ops = vec![nfs_argop4::OP_DESTROY_SESSION(DESTROY_SESSION4args {
            dsa_sessionid: sessionid,
        })];
        if client_too {
            ops.push(nfs_argop4::OP_DESTROY_CLIENTID(DESTROY_CLIENTID4args {
                dca_clientid: clientid,
            }));
        }
        let mut ended = false;
        for op in ops {
            let destroys_client = matches!(op, nfs_argop4::OP_DESTROY_CLIENTID(_));
            let args = COMPOUND4args {
                minorversion: 1,
                argarray: vec![op],
                ..Default::default()
            };
            let mut body = Vec::with_capacity(128);
            put_call_header(inner, &mut body);
            args.encode(&mut body);
            let group = Group::new(1);
            let call = Call::new(
                STAT_OTHER,
                body,
                None,
                256,
                Sink::Record,
                Notify::Group(Arc::clone(&group)),
            );
            inner.transport().submit(Arc::clone(&call));
            let deadline = Instant::now() + DESTROY_WAIT;
            if !inner
                .transport()
                .wait_until(&|| group.is_done(), Some(deadline))
            {
                tracing::debug!(
                    "NFSv4.1: no answer to DESTROY_SESSION/CLIENTID; leaving it to the lease"
                );
                return;
            }
            if destroys_client {
                ended = body_of(&call, "DESTROY_CLIENTID", "/").is_ok_and(|b| {
                    COMPOUND4res::decode_expecting(
                        &mut XdrReader::new(&b.record),
                        &[nfs_opnum4::OP_DESTROY_CLIENTID],
                    )
                    .is_ok_and(|r| r.status == nfsstat4::NFS4_OK)
                });
            }
        }
        if ended {
            // Nothing of ours is left on the server: the next client of
            // this user need not prefer our slot (owner_slot.rs).
            self.trunk.mark_clean();
        }
    }
}

/// A new client ID (unless `reuse` gives one and its next CREATE_SESSION
/// sequence) and session, and (`complete`: nothing to reclaim)
/// RECLAIM_COMPLETE for a new client ID.
fn new_state(
    inner: &Inner,
    owner: &client_owner4,
    reuse: Option<(u64, u32)>,
    complete: bool,
) -> Result<State> {
    let (clientid, create_seq) = match reuse {
        Some(v) => v,
        None => {
            let res = bare_compound(
                inner,
                nfs_argop4::OP_EXCHANGE_ID(EXCHANGE_ID4args {
                    eia_clientowner: owner.clone(),
                    eia_flags: EXCHGID4_FLAG_USE_NON_PNFS,
                    eia_state_protect: state_protect4_a::SP4_NONE,
                    eia_client_impl_id: None,
                }),
                "EXCHANGE_ID",
            )?;
            match res {
                nfs_resop4::OP_EXCHANGE_ID(Nfs4Res::Ok(ok)) => (ok.eir_clientid, ok.eir_sequenceid),
                other => return Err(unexpected("EXCHANGE_ID", &other)),
            }
        }
    };
    let fore = channel_attrs4 {
        ca_headerpadsize: 0,
        ca_maxrequestsize: MAX_COMPOUND,
        ca_maxresponsesize: MAX_COMPOUND,
        ca_maxresponsesize_cached: CACHED_REPLY,
        ca_maxoperations: 16,
        ca_maxrequests: SLOTS_WANTED,
        ca_rdma_ird: None,
    };
    // No back channel: no delegations are asked for (OPEN says
    // WANT_NO_DELEG), so the server has nothing to call back about.
    let back = channel_attrs4 {
        ca_maxrequestsize: 4096,
        ca_maxresponsesize: 4096,
        ca_maxresponsesize_cached: 0,
        ca_maxoperations: 2,
        ca_maxrequests: 1,
        ..fore
    };
    let res = bare_compound(
        inner,
        nfs_argop4::OP_CREATE_SESSION(CREATE_SESSION4args {
            csa_clientid: clientid,
            csa_sequence: create_seq,
            csa_flags: 0,
            csa_fore_chan_attrs: fore,
            csa_back_chan_attrs: back,
            csa_cb_program: nfs4::NFS4_CALLBACK,
            csa_sec_parms: vec![callback_sec_parms4::AUTH_NONE],
        }),
        "CREATE_SESSION",
    )?;
    let ok = match res {
        nfs_resop4::OP_CREATE_SESSION(Nfs4Res::Ok(ok)) => ok,
        other => return Err(unexpected("CREATE_SESSION", &other)),
    };
    let granted = ok.csr_fore_chan_attrs.ca_maxrequests;
    let mut state = State {
        clientid,
        create_seq: create_seq.wrapping_add(1),
        sessionid: ok.csr_sessionid,
        slots: SlotTable::new(granted),
        generation: 0,
        granted,
        reclaiming: false,
    };
    if reuse.is_none() && complete {
        reclaim_complete(inner, &mut state)?;
    }
    Ok(state)
}

/// RECLAIM_COMPLETE (RFC 8881 §18.51) of a new client ID with nothing to
/// reclaim, so non-reclaim OPENs are allowed. Sent on the new session's
/// slot 0 (`reclaim.rs` sends its own after a reclaim).
fn reclaim_complete(inner: &Inner, st: &mut State) -> Result<()> {
    let Some(t) = st.slots.acquire() else {
        return Ok(());
    };
    let args = COMPOUND4args {
        minorversion: 1,
        argarray: vec![
            nfs_argop4::OP_SEQUENCE(SEQUENCE4args {
                sa_sessionid: st.sessionid,
                sa_sequenceid: t.seqid,
                sa_slotid: t.slot,
                sa_highest_slotid: t.slot,
                sa_cachethis: false,
            }),
            nfs_argop4::OP_RECLAIM_COMPLETE(RECLAIM_COMPLETE4args { rca_one_fs: false }),
        ],
        ..Default::default()
    };
    let mut body = Vec::with_capacity(128);
    put_call_header(inner, &mut body);
    args.encode(&mut body);
    let record = run(inner, STAT_OTHER, body, None, "RECLAIM_COMPLETE", "/")?;
    let res = COMPOUND4res::decode_expecting(
        &mut XdrReader::new(&record),
        &[nfs_opnum4::OP_SEQUENCE, nfs_opnum4::OP_RECLAIM_COMPLETE],
    )
    .map_err(|e| protocol("RECLAIM_COMPLETE", e))?;
    let consumed = matches!(
        res.resarray.first(),
        Some(nfs_resop4::OP_SEQUENCE(Nfs4Res::Ok(_)))
    );
    st.slots.finish(
        t,
        if consumed {
            Outcome::Done
        } else {
            Outcome::NotExecuted
        },
    );
    // COMPLETE_ALREADY: a server that counts it per client ID, fine.
    if res.status.is_ok() || res.status == nfsstat4::NFS4ERR_COMPLETE_ALREADY {
        Ok(())
    } else {
        Err(nfs4_error("RECLAIM_COMPLETE", "/", res.status))
    }
}

/// A COMPOUND of one operation that goes without SEQUENCE (EXCHANGE_ID,
/// CREATE_SESSION): its result.
fn bare_compound(inner: &Inner, op: nfs_argop4, name: &'static str) -> Result<nfs_resop4> {
    let opnum = op.opnum();
    let args = COMPOUND4args {
        minorversion: 1,
        argarray: vec![op],
        ..Default::default()
    };
    let mut body = Vec::with_capacity(256);
    put_call_header(inner, &mut body);
    args.encode(&mut body);
    let record = run(inner, STAT_OTHER, body, None, name, "/")?;
    let res = COMPOUND4res::decode_expecting(&mut XdrReader::new(&record), &[opnum])
        .map_err(|e| protocol(name, e))?;
    match res.resarray.into_iter().next() {
        Some(r) => Ok(r),
        None => Err(nfs4_error(name, "/", res.status)),
    }
}

/// Sends one call on `inner`'s transport and waits: the reply record from
/// the procedure results on.
pub(crate) fn run(
    inner: &Inner,
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
    inner.run(Arc::clone(&call), &group);
    Ok(body_of(&call, op, path)?.record)
}

/// The reply of a completed COMPOUND call, from the procedure results on.
fn body_of(call: &Call, op: &'static str, path: &str) -> Result<Body> {
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

/// The outcome of a completed call [`Session::start`] made, as far as
/// the SEQUENCE result, for [`Session::settle`].
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
pub(crate) fn put_call_header(inner: &Inner, b: &mut Vec<u8>) {
    b.put_u32(0); // CALL
    b.put_u32(directnfs_wire::rpc::RPC_VERSION);
    b.put_u32(nfs4::NFS4_PROGRAM);
    b.put_u32(nfs4::NFS_V4);
    b.put_u32(nfs4::NFSPROC4_COMPOUND);
    b.extend_from_slice(&inner.cred);
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

fn protocol(op: &'static str, e: directnfs_wire::DecodeError) -> Error {
    Error::Protocol {
        op,
        path: "/".into(),
        detail: e.to_string(),
    }
}

fn unexpected(op: &'static str, res: &nfs_resop4) -> Error {
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

fn stale_client(e: &Error) -> bool {
    matches!(
        e,
        Error::Nfs4 {
            status: nfsstat4::NFS4ERR_STALE_CLIENTID | nfsstat4::NFS4ERR_EXPIRED,
            ..
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
