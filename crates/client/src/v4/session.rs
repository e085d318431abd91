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
//! the pipelined batch (`batch/v41.rs`) runs apart: many requests started,
//! each settled when its reply is reaped.
//!
//! This file is the front: the [`Session`], its establishment, its
//! locked state and the steps above. The decisions it carries out live
//! beside it, none of them naming the session: `slots.rs` (who may take
//! a slot of the table, the batches' share, the peak), `sequence.rs`
//! (the request, SEQUENCE's encoding, the reply's SEQUENCE result and
//! what each status makes of the request), `recovery.rs` (which statuses
//! replace the session or the client ID, the bound on recoveries, the
//! test hold on reclaims) and `lease.rs` (when an idle client renews its
//! lease, and the thread that does).

use std::sync::atomic::AtomicU64;
use std::sync::{mpsc, Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

use directnfs_engine::session::{Next, Outcome, Ticket};
use directnfs_wire::nfs4::{
    self, callback_sec_parms4, channel_attrs4, client_owner4, nfs_argop4, nfs_opnum4, nfs_resop4,
    nfsstat4, sessionid4, state_protect4_a, COMPOUND4args, COMPOUND4res, CREATE_SESSION4args,
    DESTROY_CLIENTID4args, DESTROY_SESSION4args, EXCHANGE_ID4args, Nfs4Res, RECLAIM_COMPLETE4args,
    SEQUENCE4args, EXCHGID4_FLAG_USE_NON_PNFS,
};
use directnfs_wire::{Encode, XdrReader};

use crate::error::{Error, Result};
use crate::io::call::{Call, Group, Notify, Sink};
use crate::remote::Remote;

use super::lease::{self, Idle};
use super::open_state::OpenState;
use super::recovery::{self, ReclaimHold, Retry};
use super::sequence::{
    self, body_of, first_reply, nfs4_error, protocol, put_call_header, run, unexpected, Consumed,
    First, Refused, Request, Settled, STAT_OTHER,
};
use super::slots::{Slot, Table, Tally};
use super::trunk::Trunk;
use super::Host;

/// Slots asked for: the server grants what it can (Ganesha: 64).
const SLOTS_WANTED: u32 = 1024;
/// Largest COMPOUND request and reply asked for: a 1 MiB WRITE or READ
/// plus its operations.
const MAX_COMPOUND: u32 = (1 << 20) + 8192;
/// Reply cache size per slot asked for: room for every reply but READ's
/// and READDIR's (which are not cached, `cachethis` false).
const CACHED_REPLY: u32 = 8192;
/// Bound on the DESTROY_SESSION / DESTROY_CLIENTID wait when a client is
/// dropped (a dead server must not hang the drop).
const DESTROY_WAIT: Duration = Duration::from_secs(2);

/// Reclaims every open file of a session and its locks after recovery gave
/// a new client ID (`reclaim.rs`'s `reclaim`). Given to [`Session::establish`]
/// by `mount.rs`, so that the session names no module that names it.
pub(crate) type Reclaim = fn(&Session, &Remote) -> Result<()>;

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
    /// The export's security flavors as SECINFO_NO_NAME gave them
    /// (`sys`, `krb5`, `krb5i`, `krb5p`, or a number), asked under
    /// Kerberos only; empty when not asked or not answered.
    pub(crate) flavors: Vec<String>,
    /// When the last COMPOUND renewed the lease, and whether renewal is
    /// paused (for tests): the renewal thread sends a SEQUENCE when idle.
    idle: Idle,
    /// Dropped with the session: the renewal thread ends then.
    _renewal_stop: Mutex<Option<mpsc::Sender<()>>>,
    /// Distinguishes open owners of this client.
    pub(crate) next_open_owner: AtomicU64,
    /// The process that made the session: a `fork`ed child that drops
    /// its copy of the parent's client must not end the parent's state.
    pid: u32,
    /// The open files, for reclaim after a server restart.
    opens: Mutex<Vec<Weak<OpenState>>>,
    /// What reclaims them.
    reclaim: Reclaim,
    /// For tests: the statuses that made the client replace its session,
    /// in order.
    recoveries: Mutex<Vec<nfsstat4>>,
    /// For tests: a reclaim stops after its first file while `paused`,
    /// and says it is waiting there (`waiting`).
    pub(crate) reclaim_hold: ReclaimHold,
    /// The slots batches hold across sessions, and the most slots busy
    /// at once (`peak_busy`).
    tally: Tally,
}

#[derive(Debug)]
struct State {
    clientid: u64,
    /// The next CREATE_SESSION's `csa_sequence`.
    create_seq: u32,
    sessionid: sessionid4,
    /// The slot table, and whether a reclaim holds it.
    slots: Table,
    /// Bumped at each new session: tickets of an older one are void.
    generation: u64,
}

impl Session {
    /// EXCHANGE_ID, CREATE_SESSION and RECLAIM_COMPLETE on `remote`'s
    /// transport; `root` and `lease` are filled in by the caller after.
    /// `reclaim` runs after each recovery that gave a new client ID.
    pub(crate) fn establish(remote: &Remote, trunk: Arc<Trunk>, reclaim: Reclaim) -> Result<Self> {
        let owner = trunk.owner().clone();
        let state = new_state(remote, &owner, None, true)?;
        trunk.set_session(state.sessionid);
        let (tx, _rx) = mpsc::channel();
        Ok(Self {
            state: Mutex::new(state),
            freed: Condvar::new(),
            owner,
            trunk,
            root: nfs4::nfs_fh4::default(),
            lease: Duration::from_secs(60),
            flavors: Vec::new(),
            idle: Idle::new(),
            _renewal_stop: Mutex::new(Some(tx)),
            next_open_owner: AtomicU64::new(1),
            pid: std::process::id(),
            opens: Mutex::new(Vec::new()),
            reclaim,
            recoveries: Mutex::new(Vec::new()),
            reclaim_hold: ReclaimHold::default(),
            tally: Tally::default(),
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
        self.lock().slots.granted()
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
        self.idle.pause(paused);
    }

    /// Starts the thread that renews the lease of an idle client: a
    /// SEQUENCE-only COMPOUND when nothing was sent for a quarter of the
    /// lease (RFC 8881 §8.3). It holds `client` weakly and ends when the
    /// client is dropped.
    pub(crate) fn start_renewal(&self, client: Weak<dyn Host>) {
        let period = lease::renewal_period(self.lease);
        let stop = lease::start(period, move || {
            let Some(host) = client.upgrade() else {
                return false;
            };
            let Some(session) = host.session() else {
                return false;
            };
            if session.idle.renewal_due(period) {
                if let Err(e) = session.renew(host.remote()) {
                    tracing::warn!("NFSv4.1 lease renewal failed: {e}");
                }
            }
            true
        });
        *self._renewal_stop.lock().unwrap_or_else(|p| p.into_inner()) = Some(stop);
    }

    /// A SEQUENCE-only COMPOUND: renews the lease.
    pub(crate) fn renew(&self, remote: &Remote) -> Result<()> {
        let encode = |_: &mut Vec<u8>| {};
        let req = Request::ops(&[], &[], &encode, "SEQUENCE", "/");
        self.compound(remote, &req).map(|_| ())
    }

    /// Sends `req` after a SEQUENCE and waits for its settled reply,
    /// recovering the session errors on the way.
    pub(crate) fn compound(&self, remote: &Remote, req: &Request<'_>) -> Result<Settled> {
        let mut retry = Retry::new(remote);
        loop {
            let slot = self.acquire(req.reclaim);
            let body = sequence::encode(remote, req, &slot);
            let first = self.send(remote, req, &body);
            if let Some(settled) = self.settle(remote, req, slot, &body, first, &mut retry)? {
                return Ok(settled);
            }
        }
    }

    /// What became of `req`, sent as `body` on `slot`, whose first reply
    /// (or failure) is `first`: the same bytes again on the same slot
    /// while SEQUENCE says DELAY, the slot released with what the reply
    /// said, the session recovered if it is gone (`sequence.rs` decides
    /// which). `Some` is the settled reply; `None` means send `req` again
    /// as a new request (a fresh slot); an error is the request's.
    pub(crate) fn settle(
        &self,
        remote: &Remote,
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
                // Never sent (no credentials to make a connection with):
                // the slot's sequence id was not used.
                Err(e @ Error::NoCredentials { sent: false, .. }) => {
                    self.finish_slot(&slot, Outcome::NotExecuted);
                    return Err(e);
                }
                Err(e) => {
                    self.finish_slot(&slot, Outcome::Lost);
                    return Err(e);
                }
            };
            if sequence::same_again(&sequence) {
                if let Err(e) = retry.waits.pause(nfsstat4::NFS4ERR_DELAY, req.op, req.path) {
                    // A retry of this request may still be running on the
                    // server (what DELAY from SEQUENCE says): in doubt, as
                    // a request whose reply was lost.
                    self.finish_slot(&slot, Outcome::Lost);
                    return Err(e);
                }
                sent = self.send(remote, req, body);
                continue;
            }
            break (record, sequence);
        };
        match sequence {
            Nfs4Res::Ok(ok) => {
                self.finish_slot(&slot, Outcome::Done);
                self.set_target(generation, ok.sr_target_highest_slotid);
                self.idle.used();
                let status = record.1;
                match sequence::consumed(req, status) {
                    // A later operation said DELAY or GRACE: a new
                    // request after a pause (the slot's sequence id was
                    // used).
                    Consumed::PauseThenNew => {
                        retry.waits.pause(status, req.op, req.path)?;
                        Ok(None)
                    }
                    Consumed::New => Ok(None),
                    Consumed::Deliver => Ok(Some(Settled {
                        record: record.0.record,
                        read: record.0.read,
                        status,
                    })),
                }
            }
            Nfs4Res::Fail(status) => {
                let next = self.finish_slot(&slot, sequence::refused_outcome(status));
                match sequence::refused(req, status, next) {
                    Refused::New => Ok(None),
                    Refused::Recover if retry.may_recover() => {
                        tracing::info!("NFSv4.1 {status} on {} {}: new session", req.op, req.path);
                        self.recover(remote, generation, status)?;
                        Ok(None)
                    }
                    Refused::Recover | Refused::Fail => Err(nfs4_error(req.op, req.path, status)),
                }
            }
        }
    }

    /// One send of `body` and the wait for its reply, decoded as far as
    /// the SEQUENCE result.
    fn send(&self, remote: &Remote, req: &Request<'_>, body: &Arc<[u8]>) -> Result<First> {
        let group = Group::new(1);
        let call = sequence::start(req, body, Notify::Group(Arc::clone(&group)));
        call.set_class(req.class);
        remote.run(Arc::clone(&call), &group);
        first_reply(&call, req.op, req.path)
    }

    /// A free slot for a pipelined batch now, or `None` when every slot
    /// is busy, batches hold all but the `reserved` ones, or a reclaim is
    /// in progress (the batch does not block for one while its own
    /// requests hold slots it has yet to release).
    pub(crate) fn try_batch_slot(&self) -> Option<Slot> {
        let mut st = self.lock();
        let ticket = st.slots.take_for_batch(self.tally.batch_held())?;
        self.tally.batch_took();
        let mut slot = self.slot_of(&st, ticket);
        slot.batch = true;
        Some(slot)
    }

    /// Releases `slot` with `outcome` (and its place among the batches').
    fn finish_slot(&self, slot: &Slot, outcome: Outcome) -> Next {
        self.tally.released(slot);
        self.finish(slot.generation, slot.ticket, outcome)
    }

    fn slot_of(&self, st: &State, ticket: Ticket) -> Slot {
        self.tally.busy_now(st.slots.busy());
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
        self.tally.peak()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A free slot (waiting for one, and, unless for a `reclaim`
    /// request, for a reclaim in progress to end).
    pub(crate) fn acquire(&self, reclaim: bool) -> Slot {
        let mut st = self.lock();
        loop {
            if let Some(t) = st.slots.take(reclaim) {
                return self.slot_of(&st, t);
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
        let ticket = st.slots.try_take()?;
        Some(self.slot_of(&st, ticket))
    }

    /// Waits while a reclaim is in progress.
    pub(crate) fn wait_reclaimed(&self) {
        let mut st = self.lock();
        while st.slots.reclaiming {
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
        let reclaiming = st.slots.reclaiming;
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
    fn recover(&self, remote: &Remote, generation: u64, status: nfsstat4) -> Result<()> {
        let mut st = self.lock();
        if st.generation != generation {
            return Ok(()); // another request recovered it already
        }
        self.recoveries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(status);
        let old_client = st.clientid;
        let reuse = recovery::keeps_client(status).then_some((st.clientid, st.create_seq));
        let fresh = match new_state(remote, &self.owner, reuse, false) {
            Ok(s) => s,
            // The client ID is gone too (a server restart): start over.
            Err(e) if reuse.is_some() && recovery::stale_client(&e) => {
                if let Error::Nfs4 { status, .. } = e {
                    self.recoveries
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(status);
                }
                new_state(remote, &self.owner, None, false)?
            }
            Err(e) => return Err(e),
        };
        let reclaim = recovery::reclaims(old_client, fresh.clientid);
        let generation = st.generation + 1;
        *st = State {
            generation,
            ..fresh
        };
        st.slots.reclaiming = reclaim;
        // Every connection binds to the new session before its next
        // request (the reclaim's included).
        self.trunk.set_session(st.sessionid);
        drop(st);
        self.freed.notify_all();
        if reclaim {
            let done = (self.reclaim)(self, remote);
            self.lock().slots.reclaiming = false;
            self.freed.notify_all();
            done?;
        }
        Ok(())
    }

    /// DESTROY_SESSION and (`client_too`) DESTROY_CLIENTID, waiting at
    /// most a few seconds for each (the client is going away).
    pub(crate) fn destroy(&self, remote: &Remote, client_too: bool) {
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
            put_call_header(remote, &mut body);
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
            remote.transport().submit(Arc::clone(&call));
            let deadline = Instant::now() + DESTROY_WAIT;
            if !remote
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
    remote: &Remote,
    owner: &client_owner4,
    reuse: Option<(u64, u32)>,
    complete: bool,
) -> Result<State> {
    let (clientid, create_seq) = match reuse {
        Some(v) => v,
        None => {
            let res = bare_compound(
                remote,
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
        remote,
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
    let mut state = State {
        clientid,
        create_seq: create_seq.wrapping_add(1),
        sessionid: ok.csr_sessionid,
        slots: Table::new(ok.csr_fore_chan_attrs.ca_maxrequests),
        generation: 0,
    };
    if reuse.is_none() && complete {
        reclaim_complete(remote, &mut state)?;
    }
    Ok(state)
}

/// RECLAIM_COMPLETE (RFC 8881 §18.51) of a new client ID with nothing to
/// reclaim, so non-reclaim OPENs are allowed. Sent on the new session's
/// slot 0 (`reclaim.rs` sends its own after a reclaim).
fn reclaim_complete(remote: &Remote, st: &mut State) -> Result<()> {
    let Some(t) = st.slots.take(true) else {
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
    put_call_header(remote, &mut body);
    args.encode(&mut body);
    let record = run(remote, STAT_OTHER, body, None, "RECLAIM_COMPLETE", "/")?;
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
fn bare_compound(remote: &Remote, op: nfs_argop4, name: &'static str) -> Result<nfs_resop4> {
    let opnum = op.opnum();
    let args = COMPOUND4args {
        minorversion: 1,
        argarray: vec![op],
        ..Default::default()
    };
    let mut body = Vec::with_capacity(256);
    put_call_header(remote, &mut body);
    args.encode(&mut body);
    let record = run(remote, STAT_OTHER, body, None, name, "/")?;
    let res = COMPOUND4res::decode_expecting(&mut XdrReader::new(&record), &[opnum])
        .map_err(|e| protocol(name, e))?;
    match res.resarray.into_iter().next() {
        Some(r) => Ok(r),
        None => Err(nfs4_error(name, "/", res.status)),
    }
}
