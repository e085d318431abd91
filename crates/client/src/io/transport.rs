//! The transport: every channel to one server, and the logic that moves a
//! call between them.
//!
//! * `submit` picks the least-loaded channel that is up, puts the call in
//!   its in-flight table and writes it; with no channel up the call is
//!   parked until one comes back (hard) or its soft deadline passes.
//! * replies are received by the waiting callers themselves, one leading
//!   at a time (`lead.rs`; the per-connection receive state machine is
//!   `receive.rs`), or by a fallback thread for calls nobody waits for;
//! * one maintenance thread expires calls that waited longer than `timeo`
//!   (failing their channel, which re-sends its calls elsewhere), reconnects
//!   dead channels with backoff, and retries parked calls.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use directnfs_engine::choose::{least_loaded_by, Candidate};
use directnfs_engine::retry::{AfterFailure, Backoff, RetryPolicy};
use directnfs_wire::rpc::{AcceptedReply, RejectedReply, ReplyBody, ReplyHeader};
use directnfs_wire::{Decode, XdrReader};

use super::call::{Call, Reply, Sink};
use super::channel::Channel;
use super::clock::monotonic_ns;
use super::error::CallError;
use super::lead::Lead;
use super::receive::RxState;

/// How often the maintenance thread checks that each path still has a route.
const ROUTE_CHECK_INTERVAL: Duration = Duration::from_millis(100);

/// What a transport needs to know at creation.
#[derive(Debug, Clone)]
pub(crate) struct TransportConfig {
    pub policy: RetryPolicy,
    pub backoff: Backoff,
    /// Largest reply record accepted.
    pub max_record: usize,
    /// Calls in flight over all channels before new ones wait.
    pub max_client_inflight: usize,
    /// Encoded credential and verifier, put in every call.
    pub cred: Vec<u8>,
    /// RPC program and version probed with NULL on (re)connect.
    pub prog: u32,
    pub vers: u32,
}

/// State shared by callers (who take turns receiving), the fallback receiver and the maintenance thread.
#[derive(Debug)]
pub(crate) struct Shared {
    pub channels: Vec<Arc<Channel>>,
    pub config: TransportConfig,
    /// `monotonic_ns()` when the transport started.
    origin_ns: u64,
    rotate: AtomicUsize,
    /// Calls waiting for any channel to come up.
    parked: Mutex<Vec<Arc<Call>>>,
    /// Replies handed out so far (callers waiting for room in a full
    /// in-flight table wait for this to move).
    completions: AtomicU64,
    /// Who receives (see lead.rs).
    pub(crate) lead: Lead,
    shutdown: AtomicBool,
    /// Wakes the maintenance thread early (shutdown), so dropping a client
    /// does not wait for its next tick.
    tick: (Mutex<()>, Condvar),
}

/// Per-thread vectors `submit_many` groups calls in.
#[derive(Default)]
struct SubmitScratch {
    per_channel: Vec<Vec<(u32, Arc<Call>)>>,
    epochs: Vec<u64>,
    rest: Vec<Arc<Call>>,
}

thread_local! {
    static SUBMIT_SCRATCH: std::cell::RefCell<SubmitScratch> =
        std::cell::RefCell::new(SubmitScratch::default());
}

/// Owner handle: shuts everything down when dropped.
#[derive(Debug)]
pub(crate) struct Transport {
    pub shared: Arc<Shared>,
    maintenance: Option<JoinHandle<()>>,
    fallback: Option<JoinHandle<()>>,
}

impl Transport {
    /// Creates the transport and connects every channel in parallel. Fails
    /// only if no channel at all could connect.
    pub(crate) fn start(channels: Vec<Channel>, config: TransportConfig) -> io::Result<Self> {
        let shared = Arc::new(Shared {
            channels: channels.into_iter().map(Arc::new).collect(),
            config,
            origin_ns: monotonic_ns(),
            rotate: AtomicUsize::new(0),
            parked: Mutex::new(Vec::new()),
            completions: AtomicU64::new(0),
            lead: Lead::new()?,
            shutdown: AtomicBool::new(false),
            tick: (Mutex::new(()), Condvar::new()),
        });
        let errors: Vec<io::Error> = std::thread::scope(|s| {
            let handles: Vec<_> = shared
                .channels
                .iter()
                .map(|ch| {
                    let shared = &shared;
                    s.spawn(move || shared.connect_channel(ch))
                })
                .collect();
            handles
                .into_iter()
                .filter_map(|h| h.join().ok().and_then(|r| r.err()))
                .collect()
        });
        if !shared.channels.iter().any(|c| c.is_up()) {
            shared.shutdown.store(true, Ordering::Relaxed);
            return Err(errors
                .into_iter()
                .next()
                .unwrap_or_else(|| io::Error::other("no channel to connect")));
        }
        for e in &errors {
            tracing::warn!("a channel failed to connect and will be retried: {e}");
        }
        let s2 = Arc::clone(&shared);
        let maintenance = std::thread::Builder::new()
            .name("dnfs-maint".into())
            .spawn(move || s2.maintenance_loop())?;
        let s3 = Arc::clone(&shared);
        let fallback = std::thread::Builder::new()
            .name("dnfs-rx".into())
            .spawn(move || s3.fallback_loop())?;
        Ok(Self {
            shared,
            maintenance: Some(maintenance),
            fallback: Some(fallback),
        })
    }
}

#[cfg(test)]
impl Transport {
    /// A transport with no channel and no thread, for unit tests of what
    /// sits above it (the batch, the file API): every call it is given is
    /// parked, where a test takes it ([`Shared::take_parked`]) and
    /// completes it as a server would. Runs under Miri (no socket).
    pub(crate) fn detached(config: TransportConfig) -> io::Result<Self> {
        let shared = Arc::new(Shared {
            channels: Vec::new(),
            config,
            origin_ns: monotonic_ns(),
            rotate: AtomicUsize::new(0),
            parked: Mutex::new(Vec::new()),
            completions: AtomicU64::new(0),
            lead: Lead::new()?,
            shutdown: AtomicBool::new(false),
            tick: (Mutex::new(()), Condvar::new()),
        });
        Ok(Self {
            shared,
            maintenance: None,
            fallback: None,
        })
    }
}

#[cfg(test)]
impl Shared {
    /// The calls parked so far (see [`Transport::detached`]).
    pub(crate) fn take_parked(&self) -> Vec<Arc<Call>> {
        std::mem::take(&mut *self.parked.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl Drop for Transport {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::Release);
        {
            let _g = self.shared.tick.0.lock().unwrap_or_else(|p| p.into_inner());
            self.shared.tick.1.notify_all();
        }
        self.shared.lead.signal_fallback();
        self.shared.lead.wake();
        for ch in &self.shared.channels {
            let mut st = ch.lock();
            Channel::shutdown_socket(&mut st);
            ch.up.store(false, Ordering::Relaxed);
        }
        for h in [self.maintenance.take(), self.fallback.take()]
            .into_iter()
            .flatten()
        {
            let _ = h.join();
        }
        // Anything still parked or in flight fails now rather than hanging.
        let parked =
            std::mem::take(&mut *self.shared.parked.lock().unwrap_or_else(|p| p.into_inner()));
        for c in parked {
            c.complete(Err(CallError::Shutdown));
        }
        for ch in &self.shared.channels {
            *ch.rx.lock().unwrap_or_else(|p| p.into_inner()) = None;
            let mut calls = Vec::new();
            ch.lock().table.drain_into(&mut calls);
            for c in calls {
                c.complete(Err(CallError::Shutdown));
            }
        }
    }
}

impl Shared {
    /// Monotonic nanoseconds since the transport started.
    pub(crate) fn now_ns(&self) -> u64 {
        monotonic_ns().saturating_sub(self.origin_ns)
    }

    pub(crate) fn is_shutdown(&self) -> bool {
        self.shutdown.load(Ordering::Acquire)
    }

    fn timeo_ns(&self) -> u64 {
        self.config.policy.timeo.as_nanos() as u64
    }

    /// Sends a caller's call on the best channel, or parks it. With every
    /// in-flight table full, waits for room (receiving replies meanwhile).
    pub(crate) fn submit(&self, call: Arc<Call>) {
        self.send_call(call, true);
    }

    /// Re-sends a call from inside the transport (failover, parked calls),
    /// possibly on the lead: never waits for room, parks the call instead
    /// (the maintenance thread retries parked calls every tick).
    pub(crate) fn resubmit(&self, call: Arc<Call>) {
        self.send_call(call, false);
    }

    /// Sends a caller's calls, those going to the same channel in one
    /// write (see `Channel::send_many`). Calls that find no room or no
    /// channel up go through [`submit`](Self::submit) one by one.
    pub(crate) fn submit_many(&self, calls: impl IntoIterator<Item = Arc<Call>>) {
        // The grouping vectors are kept per thread: nothing is allocated per
        // batch. (Never re-entered: sending and failing a channel do not
        // come back here; if it ever were, the inner call gets fresh ones.)
        SUBMIT_SCRATCH.with(|cell| match cell.try_borrow_mut() {
            Ok(mut scratch) => self.submit_many_with(calls, &mut scratch),
            Err(_) => self.submit_many_with(calls, &mut SubmitScratch::default()),
        });
    }

    fn submit_many_with(
        &self,
        calls: impl IntoIterator<Item = Arc<Call>>,
        scratch: &mut SubmitScratch,
    ) {
        let n = self.channels.len();
        let SubmitScratch {
            per_channel,
            epochs,
            rest,
        } = scratch;
        if per_channel.len() < n {
            per_channel.resize_with(n, Vec::new);
        }
        epochs.clear();
        epochs.resize(n, 0);
        // One clock read for the whole batch: sent together, timed together.
        let now = self.now_ns();
        let deadline = now + self.timeo_ns();
        let mut in_flight = self.in_flight();
        for call in calls {
            if self.shutdown.load(Ordering::Acquire) {
                call.complete(Err(CallError::Shutdown));
                continue;
            }
            // Past the client-wide limit: `submit` below waits for room.
            if !rest.is_empty() || in_flight >= self.config.max_client_inflight {
                rest.push(call);
                continue;
            }
            let Some(idx) = self.choose(None) else {
                rest.push(call);
                continue;
            };
            let ch = &self.channels[idx];
            let inserted = {
                let mut st = ch.lock();
                if !st.health.is_up() {
                    None
                } else {
                    st.table
                        .insert(Arc::clone(&call), deadline)
                        .ok()
                        .map(|xid| (xid, st.epoch))
                }
            };
            let Some((xid, epoch)) = inserted else {
                rest.push(call);
                continue;
            };
            // A connection that changed between two calls of this batch:
            // send what was queued for the old one (it will fail and be
            // re-sent), then start over.
            if !per_channel[idx].is_empty() && epochs[idx] != epoch {
                self.send_queued(idx, epochs[idx], &mut per_channel[idx]);
            }
            epochs[idx] = epoch;
            call.attempts.fetch_add(1, Ordering::Relaxed);
            call.last_channel.store(idx, Ordering::Relaxed);
            call.sent_ns.store(now, Ordering::Relaxed);
            ch.stats.on_submit(call.proc_);
            ch.add_load(&call);
            in_flight += 1;
            per_channel[idx].push((xid, call));
        }
        for (idx, queued) in per_channel.iter_mut().enumerate().take(n) {
            if !queued.is_empty() {
                self.send_queued(idx, epochs[idx], queued);
            }
        }
        for call in rest.drain(..) {
            self.submit(call);
        }
    }

    fn send_queued(&self, idx: usize, epoch: u64, queued: &mut Vec<(u32, Arc<Call>)>) {
        let ch = &self.channels[idx];
        if let Err(e) = ch.send_many(queued, epoch) {
            // The calls sit in the table: failing the channel re-sends them.
            self.fail_channel(ch, epoch, &format!("send failed: {e}"));
        }
        queued.clear();
    }

    fn send_call(&self, call: Arc<Call>, may_wait: bool) {
        let avoid = match call.last_channel.load(Ordering::Relaxed) {
            usize::MAX => None,
            c => Some(c),
        };
        loop {
            if self.shutdown.load(Ordering::Acquire) {
                call.complete(Err(CallError::Shutdown));
                return;
            }
            // The client-wide limit admits new calls only; a call being
            // re-sent was admitted already and must not wait behind it.
            if may_wait && self.in_flight() >= self.config.max_client_inflight {
                self.wait_for_room();
                continue;
            }
            let Some(idx) = self.choose(avoid) else {
                self.park(call);
                return;
            };
            let ch = &self.channels[idx];
            let (xid, epoch) = {
                let mut st = ch.lock();
                if !st.health.is_up() {
                    continue;
                }
                let deadline = self.now_ns() + self.timeo_ns();
                match st.table.insert(Arc::clone(&call), deadline) {
                    Ok(xid) => (xid, st.epoch),
                    Err(_) if may_wait => {
                        drop(st);
                        self.wait_for_room();
                        continue;
                    }
                    Err(_) => {
                        drop(st);
                        self.park(call);
                        return;
                    }
                }
            };
            if call.attempts.fetch_add(1, Ordering::Relaxed) > 0 {
                ch.stats.on_retransmit();
            }
            call.last_channel.store(idx, Ordering::Relaxed);
            call.sent_ns.store(self.now_ns(), Ordering::Relaxed);
            ch.stats.on_submit(call.proc_);
            ch.add_load(&call);
            if let Err(e) = ch.send(xid, &call, epoch) {
                // The call sits in the table: failing the channel re-sends it.
                self.fail_channel(ch, epoch, &format!("send failed: {e}"));
            }
            return;
        }
    }

    /// Calls in flight over all channels.
    fn in_flight(&self) -> usize {
        self.channels
            .iter()
            .map(|c| c.outstanding_requests.load(Ordering::Relaxed) as usize)
            .sum()
    }

    fn choose(&self, avoid: Option<usize>) -> Option<usize> {
        let n = self.channels.len();
        // One channel (a session with `connections=1`): no choice to make.
        if n == 1 {
            return self.channels[0].is_up().then_some(0);
        }
        least_loaded_by(
            n,
            |i| candidate(&self.channels[i]),
            self.rotate.fetch_add(1, Ordering::Relaxed),
            avoid,
        )
    }

    /// Waits until some reply was handed out (or 5 ms), leading the
    /// receive if nobody does.
    fn wait_for_room(&self) {
        let seen = self.completions.load(Ordering::Acquire);
        let until = Instant::now() + Duration::from_millis(5);
        self.wait_until(
            &|| self.completions.load(Ordering::Acquire) != seen,
            Some(until),
        );
    }

    fn park(&self, call: Arc<Call>) {
        self.parked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(call);
    }

    /// A call's attempt failed (timeout or dead channel): retry or give up.
    pub(crate) fn retry_or_fail(&self, call: Arc<Call>) {
        match self.config.policy.after_failure(call.attempts()) {
            AfterFailure::Retry => self.resubmit(call),
            AfterFailure::GiveUp => call.complete(Err(CallError::TimedOut {
                attempts: call.attempts(),
            })),
        }
    }

    /// Marks a channel dead (if `epoch` is still its current connection),
    /// shuts its socket and re-sends everything that was in flight on it.
    pub(crate) fn fail_channel(&self, ch: &Channel, epoch: u64, why: &str) {
        let mut calls = Vec::new();
        {
            let mut st = ch.lock();
            if st.epoch != epoch || !st.health.is_up() {
                return;
            }
            tracing::warn!(channel = ch.id, path = ch.path, "channel failed: {why}");
            st.health.on_failure(self.now_ns(), &self.config.backoff);
            st.epoch += 1;
            ch.up.store(false, Ordering::Relaxed);
            // Abortive: nothing of this connection may reach the server
            // after its calls were re-sent elsewhere (see abort_socket).
            Channel::abort_socket(&mut st);
            st.table.drain_into(&mut calls);
        }
        *ch.writer.lock().unwrap_or_else(|p| p.into_inner()) = None;
        ch.outstanding_bytes.store(0, Ordering::Relaxed);
        ch.outstanding_requests.store(0, Ordering::Relaxed);
        ch.expected_reply_bytes.store(0, Ordering::Relaxed);
        let now = self.now_ns();
        for call in calls {
            self.account_lost(ch, &call, now);
            ch.stats.on_failover();
            self.retry_or_fail(call);
        }
    }

    /// A connection the leader was receiving on failed: fail its channel
    /// (re-sending its calls) and re-send the call it was receiving
    /// directly, if any.
    pub(crate) fn fail_from_lead(&self, ch: &Channel, epoch: u64, lost: super::receive::Lost) {
        self.fail_channel(ch, epoch, &lost.why);
        if let Some(call) = lost.call {
            ch.stats.on_failover();
            self.retry_or_fail(call);
        }
    }

    /// Connects (or reconnects) one channel: TCP connect, NULL probe, then
    /// its receive state for the leader. Marks it up only when the server
    /// answered.
    fn connect_channel(self: &Arc<Self>, ch: &Arc<Channel>) -> io::Result<()> {
        let result = (|| {
            let mut stream = super::socket::connect(&ch.spec)?;
            stream.set_write_timeout(Some(ch.spec.timeout))?;
            Channel::probe(
                &mut stream,
                &self.config.cred,
                self.config.prog,
                self.config.vers,
                ch.spec.timeout,
            )?;
            stream.set_write_timeout(None)?;
            stream.set_read_timeout(None)?;
            Ok::<_, io::Error>(stream)
        })();
        let stream = match result {
            Ok(s) => s,
            Err(e) => {
                ch.lock()
                    .health
                    .on_failure(self.now_ns(), &self.config.backoff);
                return Err(io::Error::new(
                    e.kind(),
                    format!("connect to {} failed: {e}", ch.spec.remote),
                ));
            }
        };
        let reader = stream.try_clone()?;
        let writer = stream.try_clone()?;
        let epoch = {
            // Lock order: receive state, then channel state (as the leader).
            let mut rx = ch.rx.lock().unwrap_or_else(|p| p.into_inner());
            let mut st = ch.lock();
            st.epoch += 1;
            st.sock = Some(stream);
            *ch.writer.lock().unwrap_or_else(|p| p.into_inner()) = Some((writer, st.epoch));
            *rx = Some(RxState::new(reader, st.epoch, self.config.max_record));
            st.health.on_connected();
            st.epoch
        };
        // A leader polling the other connections must add this one.
        self.lead.wake();
        if epoch > 1 {
            ch.stats.on_reconnect();
        }
        ch.up.store(true, Ordering::Release);
        self.kick_parked();
        Ok(())
    }

    /// Re-submits parked calls once a channel is up.
    fn kick_parked(&self) {
        let parked = std::mem::take(&mut *self.parked.lock().unwrap_or_else(|p| p.into_inner()));
        for call in parked {
            self.resubmit(call);
        }
    }

    /// Closes the statistics of a reply and frees its load and slot.
    pub(crate) fn account(&self, ch: &Channel, call: &Call, ok: bool, bytes_read: u64) {
        self.account_at(ch, call, ok, bytes_read, self.now_ns());
    }

    /// [`account`](Self::account) at a time the caller read already (the
    /// receiver reads the clock once per receive, not once per reply).
    pub(crate) fn account_at(
        &self,
        ch: &Channel,
        call: &Call,
        ok: bool,
        bytes_read: u64,
        now: u64,
    ) {
        ch.remove_load(call);
        let bytes_written = call.payload.as_ref().map_or(0, |p| p.len() as u64);
        let latency = now.saturating_sub(call.sent_ns.load(Ordering::Relaxed));
        ch.stats
            .on_complete(call.proc_, latency, bytes_read, bytes_written, ok);
        self.completions.fetch_add(1, Ordering::Release);
    }

    pub(crate) fn handle_record(&self, ch: &Channel, epoch: u64, rec: &[u8], now: u64) {
        let mut r = XdrReader::new(rec);
        let header = ReplyHeader::decode(&mut r);
        let xid = match &header {
            Ok(h) => h.xid,
            // The XID is the first word even when the rest is garbage.
            Err(_) => match rec.get(..4) {
                Some(b) => u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
                None => return,
            },
        };
        let call = {
            let mut st = ch.lock();
            if st.epoch != epoch {
                return;
            }
            st.table.take(xid)
        };
        let Some(call) = call else {
            tracing::debug!(
                channel = ch.id,
                xid,
                "reply matches no call in flight; dropped"
            );
            return;
        };
        let ok = header.as_ref().is_ok_and(|h| h.is_success());
        let bytes_read = match (&call.sink, ok) {
            (Sink::Read(d), true) => d.len() as u64,
            _ => 0,
        };
        self.account_at(ch, &call, ok, bytes_read, now);
        let result = match header {
            Err(e) => Err(CallError::Decode(e)),
            Ok(h) => match h.body {
                ReplyBody::Accepted { stat, .. } => match stat {
                    AcceptedReply::Success => deliver(&call, r),
                    AcceptedReply::ProgMismatch { low, high } => {
                        Err(CallError::ProgMismatch { low, high })
                    }
                    AcceptedReply::Error(s) => Err(CallError::Accept(s)),
                },
                ReplyBody::Denied(RejectedReply::RpcMismatch { low, high }) => {
                    Err(CallError::RpcMismatch { low, high })
                }
                ReplyBody::Denied(RejectedReply::AuthError(s)) => Err(CallError::Auth(s)),
            },
        };
        call.complete(result);
    }

    /// Closes the statistics of an attempt that got no reply.
    pub(crate) fn account_lost(&self, ch: &Channel, call: &Call, now: u64) {
        let latency = now.saturating_sub(call.sent_ns.load(Ordering::Relaxed));
        ch.stats.on_complete(call.proc_, latency, 0, 0, false);
    }

    fn maintenance_loop(self: Arc<Self>) {
        let tick = (self.config.policy.timeo / 20)
            .clamp(Duration::from_millis(5), Duration::from_millis(100));
        let mut expired = Vec::new();
        let mut next_route_check = 0u64;
        while !self.shutdown.load(Ordering::Acquire) {
            {
                let g = self.tick.0.lock().unwrap_or_else(|p| p.into_inner());
                if self.shutdown.load(Ordering::Acquire) {
                    break;
                }
                let _ = self.tick.1.wait_timeout(g, tick);
            }
            let now = self.now_ns();
            if now >= next_route_check {
                next_route_check = now + ROUTE_CHECK_INTERVAL.as_nanos() as u64;
                self.check_routes();
            }
            for ch in &self.channels {
                // Timeouts: a call without a reply for `timeo` means the
                // connection (or path) is not delivering: fail the channel
                // so all its calls move elsewhere and it reconnects.
                let epoch = {
                    let mut st = ch.lock();
                    if st.health.is_up() {
                        st.table.take_expired(now, &mut expired);
                    }
                    st.epoch
                };
                if !expired.is_empty() {
                    // Fail the channel first so the retries go elsewhere.
                    let n = expired.len();
                    self.fail_channel(ch, epoch, &format!("{n} call(s) got no reply within timeo"));
                    for (_, call) in expired.drain(..) {
                        self.account_lost(ch, &call, now);
                        ch.stats.on_timeout();
                        self.retry_or_fail(call);
                    }
                }
                // Reconnect a dead channel when its backoff has passed.
                let due = ch.lock().health.start_reconnect_if_due(now).is_some();
                if due && !ch.reconnecting.swap(true, Ordering::AcqRel) {
                    let shared = Arc::clone(&self);
                    let ch = Arc::clone(ch);
                    let _ = std::thread::Builder::new()
                        .name(format!("dnfs-conn{}", ch.id))
                        .spawn(move || {
                            let _ = shared.connect_channel(&ch);
                            ch.reconnecting.store(false, Ordering::Release);
                        });
                }
            }
            self.expire_parked(now);
            self.check_orphans(tick);
        }
    }

    /// Fails every channel of a path whose route is gone (see
    /// `socket::route_lost`): a cut path (interface down) is then left
    /// within ~0.1 s and its in-flight calls move to the other paths at
    /// once, instead of after `timeo`. Silent paths (black-holed, or a
    /// dead switch) still rely on `timeo`. The channels reconnect with
    /// backoff as after any failure; connects fail at once while the route
    /// is missing.
    fn check_routes(&self) {
        let mut checked: Vec<usize> = Vec::new();
        for first in &self.channels {
            if checked.contains(&first.path) {
                continue;
            }
            checked.push(first.path);
            let on_path = || self.channels.iter().filter(|c| c.path == first.path);
            if !on_path().any(|c| c.is_up()) {
                continue;
            }
            let Some(e) = super::socket::route_lost(&first.spec) else {
                continue;
            };
            for ch in on_path() {
                let epoch = ch.lock().epoch;
                self.fail_channel(
                    ch,
                    epoch,
                    &format!(
                        "no route to {} from {:?}: {e}",
                        ch.spec.remote, ch.spec.local
                    ),
                );
            }
        }
    }

    /// Soft mounts: parked calls fail once they have waited timeo x (retrans+1).
    fn expire_parked(&self, now: u64) {
        let Some(limit) = self.config.policy.soft_deadline() else {
            if self.channels.iter().any(|c| c.is_up()) {
                self.kick_parked();
            }
            return;
        };
        let limit = limit.as_nanos() as u64;
        let mut parked = self.parked.lock().unwrap_or_else(|p| p.into_inner());
        let (dead, live): (Vec<_>, Vec<_>) = parked
            .drain(..)
            .partition(|c| now.saturating_sub(c.submitted_ns) >= limit);
        *parked = live;
        drop(parked);
        for c in dead {
            let attempts = c.attempts();
            c.complete(Err(CallError::TimedOut { attempts }));
        }
        if self.channels.iter().any(|c| c.is_up()) {
            self.kick_parked();
        }
    }
}

fn candidate(ch: &Arc<Channel>) -> Candidate {
    Candidate {
        up: ch.is_up(),
        outstanding_bytes: ch.outstanding_bytes.load(Ordering::Relaxed),
        outstanding_requests: ch.outstanding_requests.load(Ordering::Relaxed),
    }
}

/// Hands a successful reply to its call: READ data into the caller's
/// buffer, anything else as the results' bytes.
fn deliver(call: &Call, mut r: XdrReader<'_>) -> Result<Reply, CallError> {
    match &call.sink {
        Sink::Record => Ok(Reply::Results(r.rest().to_vec())),
        Sink::Write => {
            let w = directnfs_wire::nfs3::decode_write_reply(&mut r).map_err(CallError::Decode)?;
            Ok(Reply::Write {
                status: w.status,
                ok: w.ok,
            })
        }
        Sink::Read(dest) => {
            let rr = directnfs_wire::nfs3::decode_read_reply(&mut r, dest.len() as u32)
                .map_err(CallError::Decode)?;
            let Some(ok) = rr.ok else {
                return Ok(Reply::Read {
                    status: rr.status.0,
                    count: 0,
                    eof: false,
                });
            };
            // SAFETY: we took this call from the in-flight table, so we are
            // its only owner until `complete` (see call.rs).
            unsafe { dest.fill(ok.data) };
            Ok(Reply::Read {
                status: 0,
                count: ok.data.len() as u32,
                eof: ok.eof,
            })
        }
    }
}
