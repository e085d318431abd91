//! The life of every request of one client, from submission to completion,
//! as a state machine: events in, actions out, time as an input.
//!
//! ```text
//!            submit
//!              |
//!              v            no channel up
//!   +------> Sending ---------------------------> Parked --(soft: timeo x (retrans+1))--> TimedOut
//!   |          | Send(channel, xid)                 ^  \--(a channel connects)--> Sending
//!   |          v                                    |
//!   |       InFlight(channel, attempt) ---(channel failed / no reply in timeo)--+
//!   |          |                                                               |
//!   |          | reply matched by XID                      retry (hard; soft: attempts <= retrans)
//!   |          v                                              else TimedOut
//!   |      NFS3ERR_JUKEBOX? --yes, may retry--> Delayed(200 ms doubling to 1.6 s)
//!   |          | no                                 |
//!   +----------+-------------------------<----------+
//!              v
//!          Delivered (the driver decodes the reply and completes the call)
//! ```
//!
//! [`Engine`] owns every request from [`Engine::submit`] until it hands it
//! back: in a [`Delivered`] reply, or in an [`Action::Complete`] with a
//! failure. In between the request sits in exactly one place — one
//! channel's in-flight table, the parked list or the JUKEBOX list — so it
//! completes exactly once, and a reply from a connection that failed (its
//! requests re-issued elsewhere) matches nothing and is dropped. The one
//! exception is a hedged READ ([`crate::hedge`]): two copies in two
//! channels' tables, linked, and the first reply takes both out, so it
//! too completes exactly once.
//!
//! The driver feeds the events — [`submit`](Engine::submit),
//! [`on_reply`](Engine::on_reply), [`on_channel_failed`](Engine::on_channel_failed),
//! [`on_connected`](Engine::on_connected), [`on_tick`](Engine::on_tick) —
//! and carries out the [`Action`]s queued by them ([`poll_action`](Engine::poll_action)):
//! send this request on that channel, complete that one with a failure,
//! close or (re)connect that channel, check the routes. It sleeps until
//! [`next_deadline`](Engine::next_deadline). Nothing here reads a clock,
//! touches a socket or spawns a thread; the tests (`tests/simulated.rs`)
//! run failover, timeouts and back-off in simulated time, in milliseconds.
//!
//! Policies: [`RetryPolicy`] (`timeo`, `retrans`, hard/soft), [`Backoff`]
//! between reconnects, [`jukebox_delay`], channel choice by load
//! ([`crate::choose`]), reply matching ([`crate::inflight`]), hedged
//! READs ([`crate::hedge`], [`Engine::set_hedge`]: sent again by
//! [`on_tick`](Engine::on_tick) once past the hedge delay).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use directnfs_wire::nfs3::NFSPROC3_NULL;

use crate::choose::{least_loaded_by, Candidate};
use crate::class::{admits, IoClass, LOG_HEADROOM};
use crate::health::Health;
use crate::hedge::{Budget, HedgePolicy, PathLatencies, GHOSTS, PROBE_EVERY};
use crate::inflight::InflightTable;
use crate::retry::{AfterFailure, Backoff, RetryPolicy};
use crate::stats::IoStats;

/// What the engine needs to know about a request; the driver's call type
/// implements it (the engine holds `Arc`s of it: cloning one is what a
/// send costs).
pub trait Request {
    /// NFS procedure number (statistics; NULL has no NFS status).
    fn proc_(&self) -> u32;
    /// Bytes counted against a channel's load (payload or data expected).
    fn weight(&self) -> u64;
    /// A lower-bound guess of the reply's size on the wire.
    fn reply_estimate(&self) -> u64;
    /// Its I/O class ([`crate::class`]); `data` unless said otherwise.
    fn class(&self) -> IoClass {
        IoClass::Data
    }
    /// May be sent a second time while the first is outstanding, the
    /// first reply winning ([`crate::hedge`]): idempotent and harmless to
    /// repeat (an NFSv3 READ). Never for anything that changes the server.
    fn hedgeable(&self) -> bool {
        false
    }
}

impl<T: Request + ?Sized> Request for Arc<T> {
    fn proc_(&self) -> u32 {
        (**self).proc_()
    }

    fn weight(&self) -> u64 {
        (**self).weight()
    }

    fn reply_estimate(&self) -> u64 {
        (**self).reply_estimate()
    }

    fn class(&self) -> IoClass {
        (**self).class()
    }

    fn hedgeable(&self) -> bool {
        (**self).hedgeable()
    }
}

/// How often the routes of the paths are checked while any is up.
pub const ROUTE_CHECK_INTERVAL: Duration = Duration::from_millis(100);

/// The pause before re-sending a request the server answered with
/// NFS3ERR_JUKEBOX ("try again later") for the `tries`-th time (1 for the
/// first): 200 ms doubling to 1.6 s, as the Linux client.
pub fn jukebox_delay(tries: u32) -> Duration {
    Duration::from_millis(100u64 << tries.min(4))
}

/// Limits and policies of one engine.
#[derive(Debug, Clone)]
pub struct Config {
    /// `timeo`, `retrans`, hard or soft.
    pub policy: RetryPolicy,
    /// Delays between reconnection attempts.
    pub backoff: Backoff,
    /// Requests in flight per channel (its in-flight table's capacity).
    pub max_inflight: usize,
    /// Requests in flight over all channels before [`Engine::submit`]
    /// refuses new ones (re-issued ones are never held back).
    pub max_client_inflight: usize,
}

/// A channel's load: what is sent on it and not yet answered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Load {
    /// Requests in flight.
    pub requests: u64,
    /// Their weight (bytes).
    pub bytes: u64,
    /// Bytes their replies are expected to take.
    pub reply_bytes: u64,
}

/// A channel's load as the engine last published it, readable without
/// the engine: the receiver sizes its waits by it several times per I/O,
/// and would otherwise take the engine's lock each time. Relaxed atomics:
/// a hint, never a decision.
#[derive(Debug, Default)]
pub struct LoadGauge {
    requests: AtomicU64,
    reply_bytes: AtomicU64,
}

impl LoadGauge {
    /// Requests in flight on the channel.
    pub fn requests(&self) -> u64 {
        self.requests.load(Relaxed)
    }

    /// Bytes their replies are expected to take.
    pub fn reply_bytes(&self) -> u64 {
        self.reply_bytes.load(Relaxed)
    }

    fn publish(&self, load: &Load) {
        self.requests.store(load.requests, Relaxed);
        self.reply_bytes.store(load.reply_bytes, Relaxed);
    }
}

/// How a matched reply reads, for the engine's purposes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Anything but NFS3ERR_JUKEBOX: hand it to the caller.
    Final,
    /// NFS3ERR_JUKEBOX: the server asks to try again later.
    Jukebox,
}

/// Why the engine completes a request without a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// A soft mount ran out of attempts (or of time while no channel was up).
    TimedOut {
        /// Times the request was sent.
        attempts: u32,
    },
    /// The engine was shut down.
    Shutdown,
    /// The driver refused the requests waiting for a channel: none can
    /// connect until someone acts (the user's Kerberos ticket ran out),
    /// so waiting on a hard mount would be for ever
    /// ([`Engine::refuse_parked`]).
    Refused {
        /// Times the request was sent.
        attempts: u32,
    },
}

/// Something the driver must do, queued by an event.
#[derive(Debug)]
pub enum Action<C> {
    /// Write `call` with this XID on `channel`, if its connection is still
    /// the one of `epoch` (a later one must never see it: the engine
    /// re-issued it elsewhere when that connection failed).
    Send {
        /// The channel.
        channel: usize,
        /// Its connection when the request was put in its table.
        epoch: u64,
        /// The XID of this attempt.
        xid: u32,
        /// The request.
        call: C,
        /// Times it was sent, this attempt included.
        attempt: u32,
    },
    /// Complete `call` with a failure: the engine is done with it.
    Complete {
        /// The request.
        call: C,
        /// Why.
        failure: Failure,
    },
    /// The connection of `epoch` failed: close it abortively (nothing it
    /// still holds may reach the server after its requests were re-issued).
    Close {
        /// The channel.
        channel: usize,
        /// The failed connection.
        epoch: u64,
        /// Requests that got no reply within `timeo` (0: the driver
        /// reported the failure, and said why).
        timed_out: usize,
        /// Requests that were in flight on it (the timed-out ones
        /// included): each is re-issued on another channel, parked, or
        /// failed on a soft mount out of attempts.
        moved: usize,
    },
    /// Connect `channel` (TCP connect and NULL probe), then report
    /// [`Engine::on_connected`] or [`Engine::on_connect_failed`].
    Connect {
        /// The channel.
        channel: usize,
    },
    /// Check that each path still has a route, and report the channels of
    /// any path that lost it with [`Engine::on_channel_failed`].
    CheckRoutes,
}

/// A reply the engine matched to its request: the request is the
/// driver's now, to complete — or to give back with
/// [`Engine::on_receive_lost`] if its connection fails before the reply
/// was received whole.
#[derive(Debug)]
pub struct Delivered<C> {
    flight: Flight<C>,
    channel: usize,
    latency_ns: u64,
}

impl<C> Delivered<C> {
    /// The request.
    pub fn call(&self) -> &C {
        &self.flight.call
    }

    /// Times it was sent (JUKEBOX re-sends included).
    pub fn attempts(&self) -> u32 {
        self.flight.attempts
    }

    /// From this attempt's send to the reply.
    pub fn latency_ns(&self) -> u64 {
        self.latency_ns
    }

    /// The channel the reply came on.
    pub fn channel(&self) -> usize {
        self.channel
    }

    /// The request, for the driver to complete.
    pub fn into_call(self) -> C {
        self.flight.call
    }
}

/// A request and its history.
#[derive(Debug)]
struct Flight<C> {
    call: C,
    /// Times sent.
    attempts: u32,
    /// NFS3ERR_JUKEBOX answers so far.
    jukebox: u32,
    /// First submission (the soft deadline of a parked request).
    submitted_ns: u64,
    /// This attempt's send.
    sent_ns: u64,
    /// The channel of the last attempt, avoided by the next.
    last_channel: Option<usize>,
    /// The other copy of a hedged request: its channel and XID
    /// ([`crate::hedge`]).
    twin: Option<(usize, u32)>,
    /// This copy is the hedge (the second send).
    hedge_copy: bool,
}

/// One channel as the engine sees it.
#[derive(Debug)]
struct Channel<C> {
    table: InflightTable<Flight<C>>,
    health: Health,
    /// Bumped on every failure and every connection.
    epoch: u64,
    load: Load,
    /// `load`, published for the driver.
    gauge: Arc<LoadGauge>,
    stats: Arc<IoStats>,
    /// The network path it belongs to (see [`Engine::set_path`]).
    path: usize,
    /// Its path's log lane (see [`Engine::set_lane`]).
    lane: bool,
    /// Copies dropped because their twin was answered first: (epoch, XID,
    /// sent at), the last [`GHOSTS`], so that their late replies are timed
    /// ([`crate::hedge`]).
    ghosts: VecDeque<(u64, u32, u64)>,
}

/// How the channel choice treats slow paths ([`Engine::choose`]); the
/// policy's `min` in nanoseconds. `Probe`: as `Avoid`, and a copy goes to
/// a slow path too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Steer {
    Any,
    Avoid(u64),
    Probe(u64),
}

/// The request lifecycle of one client; see the module doc.
#[derive(Debug)]
pub struct Engine<C> {
    config: Config,
    channels: Vec<Channel<C>>,
    /// Waiting for a channel to come up or to have room, oldest first.
    parked: VecDeque<Flight<C>>,
    /// Answered JUKEBOX, to be re-sent at their time.
    delayed: Vec<(u64, Flight<C>)>,
    actions: VecDeque<Action<C>>,
    /// Requests in all in-flight tables.
    in_flight: usize,
    /// Tie-break rotation of the channel choice.
    rotate: usize,
    next_route_check: u64,
    /// An event moved the next deadline earlier than a submission can.
    wake: bool,
    shutdown: bool,
    /// Scratch for failing a channel (kept for its capacity).
    drained: Vec<Flight<C>>,
    expired: Vec<(u32, Flight<C>)>,
    /// I/O classes are honoured ([`Engine::set_classes`]).
    classes: bool,
    /// Hedged reads ([`Engine::set_hedge`]); `None`: off.
    hedge: Option<HedgePolicy>,
    /// When each hedgeable request in flight is due for its hedge:
    /// (due, channel, XID), earliest first. Entries of requests answered
    /// since are found stale and skipped when they come due.
    hedge_due: BinaryHeap<Reverse<(u64, usize, u32)>>,
    /// Recent READ latencies per path (the hedge delay, steering).
    latencies: PathLatencies,
    /// The hedge budget ([`crate::hedge`]).
    budget: Budget,
    /// Hedges due and not sent for want of budget.
    over_budget: u64,
    /// Hedgeable requests placed while a path was slow (the probe count).
    steered: u64,
}

impl<C: Request + Clone> Engine<C> {
    /// An engine for `channels` channels (numbered from 0), all down until
    /// [`on_connected`](Self::on_connected).
    pub fn new(config: Config, channels: usize) -> Self {
        let channels = (0..channels)
            .map(|i| Channel {
                // Salted per channel: two channels never produce the same
                // XID sequence (a server's duplicate cache keys on XID).
                table: InflightTable::new(
                    config.max_inflight,
                    (i as u32).wrapping_mul(0x9e37_79b9),
                ),
                health: Health::Down {
                    failures: 0,
                    retry_at_ns: 0,
                },
                epoch: 0,
                load: Load::default(),
                gauge: Arc::new(LoadGauge::default()),
                stats: Arc::new(IoStats::new()),
                path: 0,
                lane: false,
                ghosts: VecDeque::new(),
            })
            .collect();
        Self {
            config,
            channels,
            parked: VecDeque::new(),
            delayed: Vec::new(),
            actions: VecDeque::new(),
            in_flight: 0,
            rotate: 0,
            next_route_check: 0,
            wake: false,
            shutdown: false,
            drained: Vec::new(),
            expired: Vec::new(),
            classes: false,
            hedge: None,
            hedge_due: BinaryHeap::new(),
            latencies: PathLatencies::default(),
            budget: Budget::default(),
            over_budget: 0,
            steered: 0,
        }
    }

    // ------------------------------------------------------------------
    // Events

    /// A new request. Sent on the least-loaded channel that is up (an
    /// [`Action::Send`]), or parked while none is. Given back (`Err`) when
    /// `max_client_inflight` requests are in flight or every channel that
    /// is up has a full table: the caller waits for a completion and tries
    /// again (backpressure; nothing queues without bound).
    pub fn submit(&mut self, call: C, now: u64) -> Result<(), C> {
        if self.shutdown {
            self.actions.push_back(Action::Complete {
                call,
                failure: Failure::Shutdown,
            });
            return Ok(());
        }
        let class = self.class_of(&call);
        let headroom = if class == IoClass::Log {
            LOG_HEADROOM
        } else {
            0
        };
        if self.in_flight >= self.config.max_client_inflight + headroom {
            return Err(call);
        }
        let flight = Flight {
            call,
            attempts: 0,
            jukebox: 0,
            submitted_ns: now,
            sent_ns: now,
            last_channel: None,
            twin: None,
            hedge_copy: false,
        };
        match self.place(flight, now, true) {
            Ok(()) => Ok(()),
            Err(flight) => Err(flight.call),
        }
    }

    /// A reply with `xid` arrived on the connection of `epoch` of
    /// `channel`. Returns the request it answers — the driver's to
    /// complete — or `None`: no request waits for it (a late reply to an
    /// attempt re-issued elsewhere, a duplicate, a connection that is no
    /// longer current), or it said JUKEBOX and will be re-sent later.
    pub fn on_reply(
        &mut self,
        channel: usize,
        epoch: u64,
        xid: u32,
        answer: Answer,
        now: u64,
    ) -> Option<Delivered<C>> {
        let ch = self.channels.get_mut(channel)?;
        if ch.epoch != epoch {
            return None;
        }
        let Some(mut flight) = ch.table.take(xid) else {
            // The late reply of a copy that lost to its twin: timed, so
            // that a slow path is seen slow (`crate::hedge`).
            if let Some(i) = ch.ghosts.iter().position(|g| g.0 == epoch && g.1 == xid) {
                let (_, _, sent) = ch.ghosts.remove(i)?;
                let path = ch.path;
                if let (Some(p), Answer::Final) = (self.hedge, answer) {
                    self.latencies
                        .record(path, now.saturating_sub(sent), nanos(p.min));
                }
            }
            return None;
        };
        self.in_flight -= 1;
        remove_load(&mut ch.load, &flight.call);
        ch.gauge.publish(&ch.load);
        let latency_ns = now.saturating_sub(flight.sent_ns);
        let path = ch.path;
        if let Some(twin) = flight.twin.take() {
            if answer == Answer::Jukebox {
                // This copy is told to wait; the other may still be
                // answered at once: it carries the request alone.
                ch.stats
                    .on_complete(flight.call.proc_(), latency_ns, 0, 0, false);
                self.unlink_twin(twin);
                if !self.parked.is_empty() {
                    self.kick_parked(now);
                }
                return None;
            }
            // First reply wins: the other copy leaves its table now, so
            // its reply matches nothing (`crate::hedge`).
            if flight.hedge_copy {
                ch.stats.on_hedge_won();
            }
            self.drop_twin(twin);
        }
        if let Some(p) = self.hedge.filter(|_| flight.call.hedgeable()) {
            if answer == Answer::Final {
                self.latencies.record(path, latency_ns, nanos(p.min));
            }
        }
        if !self.parked.is_empty() {
            // Room was made: requests parked for want of it go now.
            self.kick_parked(now);
        }
        if answer == Answer::Jukebox && flight.call.proc_() != NFSPROC3_NULL {
            let stats = Arc::clone(&self.channels[channel].stats);
            return self.on_jukebox(flight, &stats, latency_ns, now);
        }
        Some(Delivered {
            flight,
            channel,
            latency_ns,
        })
    }

    /// The connection broke while a [`Delivered`] reply was still being
    /// received (its data straight into the caller's buffer): the attempt
    /// is lost, and the request is re-issued or failed like any other on a
    /// failed connection. Report the failure of the channel too.
    pub fn on_receive_lost(&mut self, delivered: Delivered<C>, now: u64) {
        let channel = delivered.channel;
        let flight = delivered.flight;
        if let Some(ch) = self.channels.get(channel) {
            account_lost(&ch.stats, &flight, now);
            ch.stats.on_failover();
        }
        self.retry_or_fail(flight, now);
    }

    /// The connection of `epoch` of `channel` failed (closed, reset, a send
    /// failed, the byte stream broke, its route is gone). Everything in
    /// flight on it is re-issued on other channels (or parked, or failed on
    /// a soft mount out of attempts), and it reconnects after a back-off.
    /// A stale `epoch` (already failed) is ignored.
    pub fn on_channel_failed(&mut self, channel: usize, epoch: u64, now: u64) {
        self.fail_channel(channel, epoch, now, false);
    }

    /// `channel` connected and answered its NULL probe: it carries requests
    /// from now on, under the returned epoch (the driver tags the
    /// connection with it). Parked requests are sent.
    pub fn on_connected(&mut self, channel: usize, now: u64) -> u64 {
        let Some(ch) = self.channels.get_mut(channel) else {
            return 0;
        };
        ch.epoch += 1;
        ch.health.on_connected();
        ch.load = Load::default();
        ch.gauge.publish(&ch.load);
        if ch.epoch > 1 {
            ch.stats.on_reconnect();
        }
        let epoch = ch.epoch;
        self.kick_parked(now);
        epoch
    }

    /// A connection attempt of `channel` failed: try again after a back-off.
    pub fn on_connect_failed(&mut self, channel: usize, now: u64) {
        if let Some(ch) = self.channels.get_mut(channel) {
            ch.health.on_failure(now, &self.config.backoff);
            self.wake = true;
        }
    }

    /// Fails every request waiting for a channel, when no channel is up:
    /// the driver found that no connection can be made until someone acts
    /// (a connection attempt failed for want of credentials), so the
    /// requests would wait for ever on a hard mount. Each comes back in an
    /// [`Action::Complete`] with [`Failure::Refused`]; requests submitted
    /// later are parked and sent as usual when a channel comes up (the
    /// driver refuses them too if the next attempt fails the same way).
    /// Returns how many were refused.
    pub fn refuse_parked(&mut self) -> usize {
        if self.shutdown || self.channels.iter().any(|c| c.health.is_up()) {
            return 0;
        }
        let n = self.parked.len();
        for flight in self.parked.drain(..) {
            // A hedged request completes once: by its first copy (no
            // channel is up, so both wait here).
            if flight.hedge_copy && flight.twin.is_some() {
                continue;
            }
            self.actions.push_back(Action::Complete {
                failure: Failure::Refused {
                    attempts: flight.attempts,
                },
                call: flight.call,
            });
        }
        n
    }

    /// Takes `channel` out of use for good (the driver found that its
    /// path does not reach the server the requests are for): its
    /// connection fails as in [`on_channel_failed`](Self::on_channel_failed),
    /// its requests are re-issued elsewhere, and it is never reconnected.
    pub fn retire(&mut self, channel: usize, now: u64) {
        let Some(epoch) = self.channels.get(channel).map(|c| c.epoch) else {
            return;
        };
        self.fail_channel(channel, epoch, now, false);
        if let Some(ch) = self.channels.get_mut(channel) {
            ch.health = Health::Down {
                failures: 0,
                retry_at_ns: u64::MAX,
            };
        }
    }

    /// Says which network path `channel` belongs to (all are on path 0
    /// until told): a lost attempt re-sent on a channel of another path
    /// counts as moved to another path in the statistics.
    pub fn set_path(&mut self, channel: usize, path: usize) {
        if let Some(ch) = self.channels.get_mut(channel) {
            ch.path = path;
        }
    }

    /// Honours I/O classes (on) or treats every request as `data` (off,
    /// the default): see [`crate::class`].
    pub fn set_classes(&mut self, on: bool) {
        self.classes = on;
    }

    /// Makes `channel` its path's log lane (or not): with classes on, log
    /// requests go on lanes and bulk ones never do ([`crate::class`]).
    pub fn set_lane(&mut self, channel: usize, lane: bool) {
        if let Some(ch) = self.channels.get_mut(channel) {
            ch.lane = lane;
        }
    }

    /// Hedges READs ([`crate::hedge`]) with `policy`, or not (`None`, the
    /// default).
    pub fn set_hedge(&mut self, policy: Option<HedgePolicy>) {
        self.hedge = policy;
        if policy.is_none() {
            self.hedge_due.clear();
        }
    }

    /// Hedges that were due and not sent because the budget was spent
    /// ([`crate::hedge`]).
    pub fn hedges_over_budget(&self) -> u64 {
        self.over_budget
    }

    /// Whether first copies avoid `path` now (hedging on and the path
    /// slow, see [`crate::hedge`]).
    pub fn path_steered_off(&self, path: usize) -> bool {
        self.hedge
            .is_some_and(|p| self.latencies.slow(path, nanos(p.min)))
    }

    /// The current hedge delay in nanoseconds (`None`: hedging is off).
    pub fn hedge_delay(&self) -> Option<u64> {
        self.hedge.as_ref().map(|p| self.latencies.delay(p))
    }

    /// Whether I/O classes are honoured.
    pub fn classes(&self) -> bool {
        self.classes
    }

    /// Marks `channel` as connecting (the driver's first connection of it).
    pub fn begin_connect(&mut self, channel: usize) {
        if let Some(ch) = self.channels.get_mut(channel) {
            ch.health = Health::Connecting;
        }
    }

    /// Leaves `channel` unconnected until the first
    /// [`on_tick`](Self::on_tick), which asks for its connection: a
    /// channel a short-lived process need not open.
    pub fn defer_connect(&mut self, channel: usize) {
        if let Some(ch) = self.channels.get_mut(channel) {
            ch.health = Health::Idle;
        }
    }

    /// Time passed: expires attempts without a reply for `timeo` (failing
    /// their channel: a connection that does not deliver one reply in time
    /// is not trusted with the others), re-sends JUKEBOX requests whose
    /// pause is over, hedges READs past their hedge delay, fails parked
    /// requests past the soft deadline, sends parked ones when a channel
    /// is up, and asks for reconnections whose
    /// back-off passed, for the first connection of idle channels and for
    /// the route check.
    pub fn on_tick(&mut self, now: u64) {
        if self.shutdown {
            return;
        }
        for c in 0..self.channels.len() {
            let ch = &mut self.channels[c];
            if ch.health.is_up() && ch.table.next_deadline().is_some_and(|d| d <= now) {
                let epoch = ch.epoch;
                self.fail_channel(c, epoch, now, true);
            }
        }
        self.resend_delayed(now);
        self.send_hedges(now);
        self.expire_parked(now);
        if self.channels.iter().any(|c| c.health.is_up()) {
            self.kick_parked(now);
            if now >= self.next_route_check {
                self.next_route_check = now.saturating_add(nanos(ROUTE_CHECK_INTERVAL));
                self.actions.push_back(Action::CheckRoutes);
            }
        }
        for (c, ch) in self.channels.iter_mut().enumerate() {
            if ch.health.start_reconnect_if_due(now).is_some() {
                self.actions.push_back(Action::Connect { channel: c });
            }
        }
    }

    /// Fails everything: every request comes back in an
    /// [`Action::Complete`] with [`Failure::Shutdown`], and so does every
    /// one submitted later.
    pub fn shutdown(&mut self) {
        self.shutdown = true;
        let mut all = Vec::new();
        for ch in &mut self.channels {
            ch.table.drain_into(&mut all);
            ch.load = Load::default();
            ch.gauge.publish(&ch.load);
            ch.gauge.publish(&ch.load);
            ch.health = Health::Down {
                failures: 0,
                retry_at_ns: u64::MAX,
            };
        }
        self.in_flight = 0;
        all.extend(self.parked.drain(..));
        all.extend(self.delayed.drain(..).map(|(_, f)| f));
        self.hedge_due.clear();
        // A hedged request completes once: by its first copy.
        all.retain(|f| !(f.hedge_copy && f.twin.is_some()));
        for f in all {
            self.actions.push_back(Action::Complete {
                call: f.call,
                failure: Failure::Shutdown,
            });
        }
    }

    // ------------------------------------------------------------------
    // Outputs and queries

    /// The next action to carry out, oldest first.
    pub fn poll_action(&mut self) -> Option<Action<C>> {
        self.actions.pop_front()
    }

    /// True when actions are queued.
    pub fn has_actions(&self) -> bool {
        !self.actions.is_empty()
    }

    /// Moves every queued action, oldest first, to the end of `out`.
    pub fn take_actions(&mut self, out: &mut VecDeque<Action<C>>) {
        if out.is_empty() {
            std::mem::swap(out, &mut self.actions);
        } else {
            out.extend(self.actions.drain(..));
        }
    }

    /// When [`on_tick`](Self::on_tick) next has something to do: the
    /// earliest attempt deadline, JUKEBOX pause end, hedge due, soft
    /// deadline of a parked request, reconnection or route check. `None`:
    /// nothing to wait for (a new submission brings its own deadline,
    /// `timeo` later, and wakes the driver when its hedge is due sooner).
    pub fn next_deadline(&self) -> Option<u64> {
        let mut next: Option<u64> = None;
        let mut at = |t: u64| next = Some(next.map_or(t, |n| n.min(t)));
        let mut any_up = false;
        for ch in &self.channels {
            match ch.health {
                Health::Up => {
                    any_up = true;
                    if let Some(d) = ch.table.next_deadline() {
                        at(d);
                    }
                }
                Health::Down { retry_at_ns, .. } if !self.shutdown => at(retry_at_ns),
                _ => {}
            }
        }
        for (due, _) in &self.delayed {
            at(*due);
        }
        if let Some(Reverse((due, _, _))) = self.hedge_due.peek() {
            at(*due);
        }
        if let (Some(limit), false) = (self.config.policy.soft_deadline(), self.parked.is_empty()) {
            for f in &self.parked {
                at(f.submitted_ns.saturating_add(nanos(limit)));
            }
        }
        if any_up {
            at(self.next_route_check);
        }
        next
    }

    /// True (once) when an event since the last call moved the next
    /// deadline earlier than `timeo` after now — a failure, a JUKEBOX
    /// pause, a parked request: a driver sleeping toward the previous
    /// deadline should wake and ask again. Submissions never set it (their
    /// deadline is `timeo` away).
    pub fn take_wake(&mut self) -> bool {
        std::mem::take(&mut self.wake)
    }

    /// Requests in flight over all channels.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Requests waiting for a channel or a JUKEBOX pause.
    pub fn waiting(&self) -> usize {
        self.parked.len() + self.delayed.len()
    }

    /// The load of `channel`.
    pub fn load(&self, channel: usize) -> Load {
        self.channels
            .get(channel)
            .map(|c| c.load)
            .unwrap_or_default()
    }

    /// The health of `channel`.
    pub fn health(&self, channel: usize) -> Option<Health> {
        self.channels.get(channel).map(|c| c.health)
    }

    /// The current epoch of `channel`.
    pub fn epoch(&self, channel: usize) -> u64 {
        self.channels.get(channel).map_or(0, |c| c.epoch)
    }

    /// Seeds `channel`'s XIDs with `salt` (see [`InflightTable::new`]), if
    /// nothing is in flight on it: a connection another client used before
    /// (a spare connection one process hands on to the next) continues its
    /// XID sequence instead of repeating it, which a server's duplicate
    /// request cache would take for retransmissions. Returns whether it did.
    pub fn reseed(&mut self, channel: usize, salt: u32) -> bool {
        let capacity = self.config.max_inflight;
        match self.channels.get_mut(channel) {
            Some(c) if c.table.is_empty() => {
                c.table = InflightTable::new(capacity, salt);
                true
            }
            _ => false,
        }
    }

    /// The published load of `channel` (see [`LoadGauge`]).
    pub fn gauge(&self, channel: usize) -> Option<&Arc<LoadGauge>> {
        self.channels.get(channel).map(|c| &c.gauge)
    }

    /// The statistics of `channel` (the engine counts sends, retransmits,
    /// failovers, timeouts, reconnects, lost attempts and the calls moved
    /// off the channel, to the same path or another; the driver counts
    /// replies, with the bytes it received).
    pub fn stats(&self, channel: usize) -> Option<&Arc<IoStats>> {
        self.channels.get(channel).map(|c| &c.stats)
    }

    /// The request waiting for `xid` on the connection of `epoch` of
    /// `channel`, without taking it.
    pub fn peek(&self, channel: usize, epoch: u64, xid: u32) -> Option<&C> {
        let ch = self.channels.get(channel)?;
        (ch.epoch == epoch).then(|| ch.table.get(xid).map(|f| &f.call))?
    }

    /// Number of channels.
    pub fn channel_count(&self) -> usize {
        self.channels.len()
    }

    // ------------------------------------------------------------------
    // Transitions

    /// Puts a request in the table of the best channel and queues its
    /// send. `fresh`: a new submission, given back when there is no room
    /// (a re-issued request is parked instead: it must not wait behind new
    /// ones). With no channel up the request is parked.
    fn place(&mut self, mut flight: Flight<C>, now: u64, fresh: bool) -> Result<(), Flight<C>> {
        if self.shutdown {
            self.actions.push_back(Action::Complete {
                call: flight.call,
                failure: Failure::Shutdown,
            });
            return Ok(());
        }
        // Placed alone (never with a twin): a former hedge copy sent again
        // is the request's only copy, and may be hedged in turn.
        flight.hedge_copy = false;
        let class = self.class_of(&flight.call);
        let steer = self.steer_for(&flight.call);
        let Some(c) = self.choose(flight.last_channel, class, steer) else {
            self.park(flight);
            return Ok(());
        };
        let deadline = now.saturating_add(nanos(self.config.policy.timeo));
        let previous = flight.last_channel;
        flight.attempts += 1;
        flight.sent_ns = now;
        flight.last_channel = Some(c);
        let call = flight.call.clone();
        let attempt = flight.attempts;
        // Re-sent after a lost attempt (a JUKEBOX re-send is not one).
        let retransmit = attempt > 1 + flight.jukebox;
        // Where the lost attempt was: its channel counts the call as moved.
        let moved_from = previous
            .filter(|_| retransmit)
            .and_then(|p| self.channels.get(p))
            .map(|old| (Arc::clone(&old.stats), old.path));
        let ch = &mut self.channels[c];
        match ch.table.insert(flight, deadline) {
            Ok(xid) => {
                self.in_flight += 1;
                add_load(&mut ch.load, &call);
                ch.gauge.publish(&ch.load);
                if retransmit {
                    ch.stats.on_retransmit();
                }
                if let Some((old, old_path)) = moved_from {
                    old.on_moved(old_path != ch.path);
                }
                ch.stats.on_submit(call.proc_());
                if let Some(policy) = self.hedge.filter(|_| call.hedgeable()) {
                    self.budget.on_request();
                    let due = now.saturating_add(self.latencies.delay(&policy));
                    if self.hedge_due.peek().is_none_or(|Reverse(t)| t.0 > due) {
                        // Earlier than the maintenance thread's sleep.
                        self.wake = true;
                    }
                    self.hedge_due.push(Reverse((due, c, xid)));
                }
                self.actions.push_back(Action::Send {
                    channel: c,
                    epoch: ch.epoch,
                    xid,
                    call,
                    attempt,
                });
                if let Steer::Probe(min) = steer {
                    // A copy on a slow path at once: timed, it tells
                    // whether the path has recovered; the caller waits
                    // for whichever copy answers first.
                    if let Some(c2) = self.choose_probe(c, min) {
                        self.send_copy(c, xid, c2, now);
                    }
                }
                Ok(())
            }
            Err(mut flight) => {
                flight.attempts -= 1;
                if fresh {
                    Err(flight)
                } else {
                    self.park(flight);
                    Ok(())
                }
            }
        }
    }

    /// The class a request is treated as: its own with classes on,
    /// `data` with them off.
    fn class_of(&self, call: &C) -> IoClass {
        if self.classes {
            call.class()
        } else {
            IoClass::Data
        }
    }

    /// How the channel choice treats slow paths for `call`
    /// ([`crate::hedge`]): only hedgeable requests with hedging on are
    /// steered, and one in [`PROBE_EVERY`] of them probes a slow path.
    fn steer_for(&mut self, call: &C) -> Steer {
        let Some(p) = self.hedge.filter(|_| call.hedgeable()) else {
            return Steer::Any;
        };
        let min = nanos(p.min);
        if !self.latencies.any_slow(min) {
            return Steer::Any;
        }
        self.steered += 1;
        if self.steered % PROBE_EVERY == 0 {
            Steer::Probe(min)
        } else {
            Steer::Avoid(min)
        }
    }

    /// The least-loaded channel that is up and has room, avoiding `avoid`
    /// when another one qualifies. With classes on, first among the
    /// channels `class` may use ([`admits`]: log on lanes, bulk off them),
    /// then, if none of those qualifies, among all. `steer`: first among
    /// the channels of paths that are not slow, then as without it.
    fn choose(&mut self, avoid: Option<usize>, class: IoClass, steer: Steer) -> Option<usize> {
        let channels = &self.channels;
        // One channel (`connections=1`, one path): no choice to make.
        if channels.len() == 1 {
            let ch = &channels[0];
            return (ch.health.is_up() && !ch.table.is_full()).then_some(0);
        }
        self.rotate = self.rotate.wrapping_add(1);
        let latencies = &self.latencies;
        let steered = |path: usize| match steer {
            Steer::Any => true,
            Steer::Avoid(min) | Steer::Probe(min) => !latencies.slow(path, min),
        };
        let pick = |only: bool, steering: bool| {
            least_loaded_by(
                channels.len(),
                |i| {
                    let ch = &channels[i];
                    Candidate {
                        up: ch.health.is_up()
                            && !ch.table.is_full()
                            && (!only || admits(class, ch.lane))
                            && (!steering || steered(ch.path)),
                        outstanding_bytes: ch.load.bytes,
                        outstanding_requests: ch.load.requests,
                    }
                },
                self.rotate,
                avoid,
            )
        };
        if steer != Steer::Any {
            if let Some(c) = pick(false, true) {
                return Some(c);
            }
        }
        if self.classes && class != IoClass::Data {
            if let Some(c) = pick(true, false) {
                return Some(c);
            }
        }
        pick(false, false)
    }

    /// Parks a request with no channel up, or none with room; it is sent
    /// when one connects or a reply makes room ([`kick_parked`](Self::kick_parked)).
    fn park(&mut self, flight: Flight<C>) {
        // A log request waits behind no other (`crate::class`).
        if self.class_of(&flight.call) == IoClass::Log {
            self.parked.push_front(flight);
        } else {
            self.parked.push_back(flight);
        }
        self.wake = true;
    }

    /// After a lost attempt: re-issue, or fail a soft mount's request that
    /// is out of attempts (JUKEBOX re-sends are not lost attempts).
    fn retry_or_fail(&mut self, flight: Flight<C>, now: u64) {
        let lost_attempts = flight.attempts.saturating_sub(flight.jukebox);
        match self.config.policy.after_failure(lost_attempts) {
            AfterFailure::Retry => {
                // Never refused: a re-issued request parks instead.
                let _ = self.place(flight, now, false);
            }
            AfterFailure::GiveUp => self.actions.push_back(Action::Complete {
                failure: Failure::TimedOut {
                    attempts: flight.attempts,
                },
                call: flight.call,
            }),
        }
    }

    /// A copy of a request lost with its channel: dropped when the
    /// request's other copy (a hedge, [`crate::hedge`]) is still in flight,
    /// which then carries it alone; else re-issued or failed.
    fn retry_or_fail_copy(&mut self, mut flight: Flight<C>, now: u64) {
        match flight.twin.take() {
            Some(twin) => self.unlink_twin(twin),
            None => self.retry_or_fail(flight, now),
        }
    }

    /// The other copy of a hedged request is answered: this one leaves
    /// its table (its reply, if any comes, matches nothing).
    fn drop_twin(&mut self, (channel, xid): (usize, u32)) {
        let Some(ch) = self.channels.get_mut(channel) else {
            return;
        };
        let Some(flight) = ch.table.take(xid) else {
            return;
        };
        self.in_flight -= 1;
        remove_load(&mut ch.load, &flight.call);
        ch.gauge.publish(&ch.load);
        ch.stats.on_hedge_dropped();
        if ch.ghosts.len() == GHOSTS {
            ch.ghosts.pop_front();
        }
        ch.ghosts.push_back((ch.epoch, xid, flight.sent_ns));
    }

    /// The other copy of a hedged request is gone: this one carries it
    /// alone from now on.
    fn unlink_twin(&mut self, (channel, xid): (usize, u32)) {
        if let Some(f) = self
            .channels
            .get_mut(channel)
            .and_then(|ch| ch.table.get_mut(xid))
        {
            f.twin = None;
        }
    }

    /// Sends the hedge of every READ whose hedge delay has passed and that
    /// is still unanswered, on another channel ([`crate::hedge`]).
    fn send_hedges(&mut self, now: u64) {
        while let Some(&Reverse((due, c, xid))) = self.hedge_due.peek() {
            if due > now {
                return;
            }
            self.hedge_due.pop();
            let alone = self
                .channels
                .get(c)
                .filter(|ch| ch.health.is_up())
                .and_then(|ch| ch.table.get(xid))
                .is_some_and(|f| f.twin.is_none() && !f.hedge_copy && f.call.hedgeable());
            if !alone {
                continue;
            }
            let Some(c2) = self.choose_hedge(c) else {
                continue;
            };
            if !self.budget.allows() {
                self.over_budget += 1;
                continue;
            }
            if self.send_copy(c, xid, c2, now) {
                self.budget.spend();
            }
        }
    }

    /// Sends a second copy of the request `xid` in flight on channel `c`
    /// on channel `c2`, the two twinned (first reply wins). False when `c2`
    /// has no room or the request is gone.
    fn send_copy(&mut self, c: usize, xid: u32, c2: usize, now: u64) -> bool {
        let Some(original) = self.channels.get(c).and_then(|ch| ch.table.get(xid)) else {
            return false;
        };
        let copy = Flight {
            call: original.call.clone(),
            attempts: original.attempts,
            jukebox: original.jukebox,
            submitted_ns: original.submitted_ns,
            sent_ns: now,
            last_channel: Some(c2),
            twin: Some((c, xid)),
            hedge_copy: true,
        };
        let attempt = copy.attempts;
        let call = copy.call.clone();
        let deadline = now.saturating_add(nanos(self.config.policy.timeo));
        let ch = &mut self.channels[c2];
        let Ok(xid2) = ch.table.insert(copy, deadline) else {
            return false;
        };
        self.in_flight += 1;
        add_load(&mut ch.load, &call);
        ch.gauge.publish(&ch.load);
        ch.stats.on_submit(call.proc_());
        ch.stats.on_hedge_sent();
        let epoch = ch.epoch;
        if let Some(f) = self.channels[c].table.get_mut(xid) {
            f.twin = Some((c2, xid2));
        }
        self.actions.push_back(Action::Send {
            channel: c2,
            epoch,
            xid: xid2,
            call,
            attempt,
        });
        true
    }

    /// The least-loaded channel up with room on a slow path, for a probe
    /// copy ([`crate::hedge`]); never `from`.
    fn choose_probe(&self, from: usize, min: u64) -> Option<usize> {
        self.channels
            .iter()
            .enumerate()
            .filter(|(i, ch)| {
                *i != from
                    && ch.health.is_up()
                    && !ch.table.is_full()
                    && self.latencies.slow(ch.path, min)
            })
            .min_by_key(|(_, ch)| {
                ch.load.bytes.saturating_add(
                    ch.load
                        .requests
                        .saturating_mul(crate::choose::REQUEST_COST_BYTES),
                )
            })
            .map(|(i, _)| i)
    }

    /// The channel a hedge of a request in flight on `from` goes on: the
    /// least-loaded one up with room on another path that is not slow,
    /// else on the same path, else on a slow path; never `from` itself.
    fn choose_hedge(&self, from: usize) -> Option<usize> {
        let path = self.channels.get(from)?.path;
        let min = self.hedge.map_or(0, |p| nanos(p.min));
        let mut best: Option<(bool, bool, u64, usize)> = None;
        for (i, ch) in self.channels.iter().enumerate() {
            if i == from || !ch.health.is_up() || ch.table.is_full() {
                continue;
            }
            let load = ch.load.bytes.saturating_add(
                ch.load
                    .requests
                    .saturating_mul(crate::choose::REQUEST_COST_BYTES),
            );
            let slow = ch.path != path && self.latencies.slow(ch.path, min);
            let key = (slow, ch.path == path, load, i);
            if best.is_none_or(|b| key < b) {
                best = Some(key);
            }
        }
        best.map(|(_, _, _, i)| i)
    }

    /// NFS3ERR_JUKEBOX: pause and re-send while the mount allows (hard:
    /// always; soft: `retrans` times), else deliver the answer.
    fn on_jukebox(
        &mut self,
        mut flight: Flight<C>,
        stats: &IoStats,
        latency_ns: u64,
        now: u64,
    ) -> Option<Delivered<C>> {
        let channel = flight.last_channel.unwrap_or(0);
        if !self.config.policy.hard && flight.jukebox >= self.config.policy.retrans {
            return Some(Delivered {
                flight,
                channel,
                latency_ns,
            });
        }
        // The attempt got its answer: it counts as a completed call.
        stats.on_complete(flight.call.proc_(), latency_ns, 0, 0, false);
        flight.jukebox += 1;
        let due = now.saturating_add(nanos(jukebox_delay(flight.jukebox)));
        self.delayed.push((due, flight));
        self.wake = true;
        None
    }

    fn resend_delayed(&mut self, now: u64) {
        if self.delayed.iter().all(|(due, _)| *due > now) {
            return;
        }
        let mut i = 0;
        while i < self.delayed.len() {
            if self.delayed[i].0 <= now {
                let (_, flight) = self.delayed.swap_remove(i);
                let _ = self.place(flight, now, false);
            } else {
                i += 1;
            }
        }
    }

    /// Fails a channel's connection of `epoch`; with `timed_out`, its
    /// attempts past their deadline count as timeouts (re-issued after
    /// the others, so that they avoid this channel).
    fn fail_channel(&mut self, channel: usize, epoch: u64, now: u64, timed_out: bool) {
        let Some(ch) = self.channels.get_mut(channel) else {
            return;
        };
        if ch.epoch != epoch || !ch.health.is_up() {
            return;
        }
        let mut expired = std::mem::take(&mut self.expired);
        let mut drained = std::mem::take(&mut self.drained);
        if timed_out {
            ch.table.take_expired(now, &mut expired);
        }
        ch.table.drain_into(&mut drained);
        ch.health.on_failure(now, &self.config.backoff);
        ch.epoch += 1;
        ch.load = Load::default();
        ch.gauge.publish(&ch.load);
        self.in_flight -= drained.len() + expired.len();
        self.wake = true;
        let stats = Arc::clone(&ch.stats);
        self.actions.push_back(Action::Close {
            channel,
            epoch,
            timed_out: expired.len(),
            moved: drained.len() + expired.len(),
        });
        for flight in drained.drain(..) {
            account_lost(&stats, &flight, now);
            stats.on_failover();
            self.retry_or_fail_copy(flight, now);
        }
        for (_, flight) in expired.drain(..) {
            account_lost(&stats, &flight, now);
            stats.on_timeout();
            self.retry_or_fail_copy(flight, now);
        }
        self.expired = expired;
        self.drained = drained;
    }

    /// Sends parked requests, oldest first, while a channel is up with room.
    fn kick_parked(&mut self, now: u64) {
        while !self.parked.is_empty() && self.choose(None, IoClass::Data, Steer::Any).is_some() {
            if let Some(flight) = self.parked.pop_front() {
                let _ = self.place(flight, now, false);
            }
        }
    }

    /// Soft mounts: a parked request fails once it has waited
    /// `timeo x (retrans + 1)` since its submission.
    fn expire_parked(&mut self, now: u64) {
        let Some(limit) = self.config.policy.soft_deadline() else {
            return;
        };
        let limit = nanos(limit);
        let mut i = 0;
        while i < self.parked.len() {
            if now.saturating_sub(self.parked[i].submitted_ns) < limit {
                i += 1;
                continue;
            }
            if let Some(flight) = self.parked.remove(i) {
                self.actions.push_back(Action::Complete {
                    failure: Failure::TimedOut {
                        attempts: flight.attempts,
                    },
                    call: flight.call,
                });
            }
        }
    }
}

fn add_load<C: Request>(load: &mut Load, call: &C) {
    load.requests += 1;
    load.bytes += call.weight();
    load.reply_bytes += call.reply_estimate();
}

fn remove_load<C: Request>(load: &mut Load, call: &C) {
    load.requests = load.requests.saturating_sub(1);
    load.bytes = load.bytes.saturating_sub(call.weight());
    load.reply_bytes = load.reply_bytes.saturating_sub(call.reply_estimate());
}

/// Closes the statistics of an attempt that got no reply (an error
/// completion, counted apart as lost: replies received are the sends
/// neither lost nor in flight).
fn account_lost<C: Request>(stats: &IoStats, flight: &Flight<C>, now: u64) {
    let latency = now.saturating_sub(flight.sent_ns);
    stats.on_lost(flight.call.proc_(), latency);
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
