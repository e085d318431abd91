//! What every thread of a transport shares — the engine, the channels, the
//! lead — and the two translations between them: engine actions into I/O
//! ([`Shared::execute`]: writes, completions, closes, connects, route
//! checks) and what a connection received into engine events
//! ([`ChannelReplies`], the receiver's [`Replies`]).
//!
//! The engine (`directnfs_engine::lifecycle`) decides everything about a
//! request's life; it sits behind one mutex, held only for the event
//! itself, never across a system call. Lock order: a channel's receive
//! state, then the engine; nothing locks a receive state while holding the
//! engine.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};

use directnfs_engine::{Action, Answer, Engine, Failure};
use directnfs_wire::nfs3::{self, nfsstat3};
use directnfs_wire::rpc::{AcceptedReply, RejectedReply, ReplyBody, ReplyHeader};
use directnfs_wire::{Decode, XdrReader};

use crate::alert::{Alerts, ServerWatch};
use crate::io::call::{Call, ReadDest, Reply, Sink};
use crate::io::call_error::CallError;
use crate::io::channel::{lock, Channel, ReadClaim};
use crate::io::clock::monotonic_ns;
use crate::io::lead::Lead;
use crate::io::receive::{Due, Replies};

use super::threads::Threads;
use super::{Refusal, Start};
use directnfs_engine::retry::{Backoff, RetryPolicy};

/// What a transport needs to know at creation.
#[derive(Debug, Clone)]
pub(crate) struct TransportConfig {
    pub policy: RetryPolicy,
    pub backoff: Backoff,
    /// Largest reply record accepted.
    pub max_record: usize,
    /// Calls in flight per channel.
    pub max_inflight: usize,
    /// Calls in flight over all channels before new ones wait.
    pub max_client_inflight: usize,
    /// Encoded credential and verifier, put in every call.
    pub cred: Vec<u8>,
    /// RPC program and version probed with NULL on (re)connect.
    pub prog: u32,
    pub vers: u32,
    /// Where path and channel events go (the alert log).
    pub alerts: Alerts,
    /// What the protocol does with each connection (NFSv4.1: the
    /// trunking check and BIND_CONN_TO_SESSION); `None` on NFSv3.
    pub hook: Option<Arc<dyn super::ConnectHook>>,
    /// Per path, the key of the spare connections (`io/spare.rs`) its
    /// children take: given by an owner transport at its start, inherited
    /// by its children's (the configuration is copied at `fork`). Empty:
    /// none.
    pub spare_keys: Vec<u64>,
    /// Keep spares for forked children when this transport is a process
    /// tree's first (`fork_spares`).
    pub fork_spares: bool,
    /// Kerberos (`sec=krb5*`): each connection sets up an RPCSEC_GSS
    /// context, its calls are sealed and its replies opened
    /// (`security/sealer.rs`). `None`: AUTH_SYS, `cred` as it is.
    pub gss: Option<crate::security::GssSetup>,
    /// Honour I/O classes: the last channel of each path with two or more
    /// is its log lane (`io_classes`; `directnfs_engine::class`).
    pub io_classes: bool,
    /// Hedged reads (`hedge`; `directnfs_engine::hedge`); `None`: off.
    pub hedge: Option<directnfs_engine::HedgePolicy>,
}

/// State shared by callers (who take turns receiving), the fallback
/// receiver and the maintenance thread.
#[derive(Debug)]
pub(crate) struct Shared {
    pub channels: Vec<Channel>,
    pub config: TransportConfig,
    engine: Mutex<Engine<Arc<Call>>>,
    /// `monotonic_ns()` when the transport started.
    origin_ns: u64,
    /// Replies handed out so far (callers waiting for room in a full
    /// engine wait for this to move).
    completions: AtomicU64,
    /// Who receives (see lead.rs).
    pub lead: Lead,
    shutdown: AtomicBool,
    /// Wakes the maintenance thread before its deadline (an event moved
    /// the engine's next deadline earlier, or shutdown).
    maintenance: (Mutex<bool>, Condvar),
    /// Itself, to hand to the threads it spawns (connection attempts).
    me: Weak<Shared>,
    /// The server's write verifier and JUKEBOX replies, for the alerts
    /// (server restart, JUKEBOX storm).
    watch: ServerWatch,
    /// Paths taken out of use for good (`retire_path`).
    retired: Mutex<Vec<usize>>,
    /// Kerberos: the last connection attempt found no credentials (the
    /// user's ticket ran out: `security/sealer.rs`), and why. While set,
    /// calls waiting for a connection fail with it (EACCES) instead of
    /// waiting for ever, and a call submitted while no channel is up
    /// starts a connection attempt at once (the user may have run kinit).
    no_credentials: Mutex<Option<String>>,
    /// `no_credentials` is set (both change under its lock): read
    /// without that lock on every submission ([`Shared::retry_credentials`]).
    credentials_missing: AtomicBool,
    /// The maintenance and fallback threads (started with the transport
    /// or when first needed: threads.rs).
    pub threads: Threads,
    /// The first connection of each channel goes without its NULL probe
    /// (a forked child's transport: see `connect_channel`).
    skip_first_probe: bool,
    /// Spare connections this transport's channels run on: channel, slot
    /// (`io/spare.rs`), epoch, XID salt (`spares.rs`).
    pub(crate) spares: Mutex<Vec<(usize, usize, u64, u32)>>,
    /// An owner's thread is connecting a spare (`spares.rs`).
    pub(crate) making_spare: AtomicBool,
    /// Tests only: a transport with no socket, whose sends are kept here
    /// for an in-process server (`crate::testing`).
    #[cfg(test)]
    pub(crate) detached: Option<Mutex<Vec<Sent>>>,
}

/// A call a detached transport "sent": channel, epoch, XID, call.
#[cfg(test)]
pub(crate) type Sent = (usize, u64, u32, Arc<Call>);

/// Per-thread vectors the actions of one event are carried out with (kept
/// for their capacity: nothing is allocated per I/O).
#[derive(Default)]
struct Scratch {
    actions: VecDeque<Action<Arc<Call>>>,
    /// Sends grouped per channel, and the epoch they are for.
    sends: Vec<Vec<(u32, Arc<Call>)>>,
    epochs: Vec<u64>,
    /// Why the driver failed a connection (channel, epoch, why), for the
    /// alert line of its `Close` (failures only: never on the I/O path).
    reasons: Vec<(usize, u64, String)>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Runs `f` with this thread's scratch: a fresh one if it is in use
/// further up the stack, or if the thread's locals are gone — a file
/// closed by an exit handler (`sort -o FILE` closes its output in one),
/// which glibc runs after destroying the main thread's thread-locals.
fn with_scratch<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
    let mut f = Some(f);
    let ran = SCRATCH
        .try_with(|cell| match cell.try_borrow_mut() {
            Ok(mut s) => f.take().map(|f| f(&mut s)),
            Err(_) => None,
        })
        .ok()
        .flatten();
    match (ran, f.take()) {
        (Some(r), _) => r,
        (None, Some(f)) => f(&mut Scratch::default()),
        (None, None) => unreachable!("with_scratch: f ran but gave nothing back"),
    }
}

impl Shared {
    pub(crate) fn new(
        channels: Vec<Channel>,
        config: TransportConfig,
        engine: Engine<Arc<Call>>,
        start: Start,
    ) -> io::Result<Arc<Self>> {
        Self::build(channels, config, engine, false, start)
    }

    /// A transport whose one channel has no socket: its sends are kept in
    /// [`detached`](Self::detached) for an in-process server.
    #[cfg(test)]
    pub(crate) fn new_detached(
        channels: Vec<Channel>,
        config: TransportConfig,
        engine: Engine<Arc<Call>>,
    ) -> io::Result<Arc<Self>> {
        Self::build(channels, config, engine, true, Start::Now)
    }

    fn build(
        channels: Vec<Channel>,
        config: TransportConfig,
        engine: Engine<Arc<Call>>,
        #[allow(unused_variables)] detached: bool,
        start: Start,
    ) -> io::Result<Arc<Self>> {
        let lead = Lead::new()?;
        let threads = Threads::new(start, config.policy.timeo);
        // NFSv4.1's hook proves the server answers with its own calls.
        let skip_first_probe = matches!(start, Start::WhenNeeded { .. }) && config.hook.is_none();
        Ok(Arc::new_cyclic(|me| Shared {
            channels,
            config,
            engine: Mutex::new(engine),
            origin_ns: monotonic_ns(),
            completions: AtomicU64::new(0),
            lead,
            shutdown: AtomicBool::new(false),
            maintenance: (Mutex::new(false), Condvar::new()),
            me: me.clone(),
            watch: ServerWatch::default(),
            retired: Mutex::new(Vec::new()),
            no_credentials: Mutex::new(None),
            credentials_missing: AtomicBool::new(false),
            threads,
            skip_first_probe,
            spares: Mutex::new(Vec::new()),
            making_spare: AtomicBool::new(false),
            #[cfg(test)]
            detached: detached.then(|| Mutex::new(Vec::new())),
        }))
    }

    /// True for a transport without sockets (tests): nothing to poll.
    pub(crate) fn is_detached(&self) -> bool {
        #[cfg(test)]
        return self.detached.is_some();
        #[cfg(not(test))]
        false
    }

    /// Monotonic nanoseconds since the transport started.
    pub(crate) fn now_ns(&self) -> u64 {
        monotonic_ns().saturating_sub(self.origin_ns)
    }

    pub(crate) fn is_shutdown(&self) -> bool {
        self.shutdown.load(Ordering::Acquire)
    }

    /// Replies handed out so far.
    pub(crate) fn completions(&self) -> u64 {
        self.completions.load(Ordering::Acquire)
    }

    /// Locks the engine. A poisoned lock (a panic inside an event) still
    /// hands it out: the engine's state is consistent between its steps.
    /// The engine, unless another thread holds it (an exit handler must
    /// not wait for a thread that may never run again).
    pub(crate) fn try_engine(&self) -> Option<MutexGuard<'_, Engine<Arc<Call>>>> {
        self.engine.try_lock().ok()
    }

    pub(crate) fn engine(&self) -> MutexGuard<'_, Engine<Arc<Call>>> {
        self.engine.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs one engine event, then carries out the actions it queued.
    pub(crate) fn drive<R>(&self, event: impl FnOnce(&mut Engine<Arc<Call>>, u64) -> R) -> R {
        let now = self.now_ns();
        with_scratch(|scratch| {
            let r = {
                let mut e = self.engine();
                let r = event(&mut e, now);
                self.take_actions(&mut e, scratch);
                r
            };
            self.execute(scratch);
            r
        })
    }

    /// Submits calls, those going to the same channel in one write.
    /// Calls the engine has no room for go to `refused` (the caller waits
    /// for a completion and submits them again).
    pub(crate) fn submit_many(
        &self,
        calls: impl IntoIterator<Item = Arc<Call>>,
        refused: &mut Vec<Arc<Call>>,
    ) {
        // One clock read for the whole batch: sent together, timed together.
        let now = self.drive(|e, now| {
            for call in calls {
                if let Err(call) = e.submit(call, now) {
                    refused.push(call);
                }
            }
            now
        });
        self.retry_credentials();
        if !self.threads.started() && self.threads.due(now) {
            self.start_threads();
        }
    }

    /// While the credentials are missing (see `no_credentials`) and no
    /// channel is up: a connection attempt now, with the ticket cache as
    /// it is now, for the calls just submitted: they go if the user ran
    /// kinit, and fail with EACCES if not, instead of waiting for the
    /// back-off (or, before, for ever).
    fn retry_credentials(&self) {
        if !self.credentials_missing.load(Ordering::Relaxed) {
            return;
        }
        // The first channel of a path in use, unless one is up.
        let mut first = None;
        {
            let e = self.engine();
            let retired = lock(&self.retired);
            for c in self.channels.iter().filter(|c| !retired.contains(&c.path)) {
                if e.health(c.id).is_some_and(|h| h.is_up()) {
                    return;
                }
                first.get_or_insert(c.id);
            }
        }
        if let Some(channel) = first {
            self.spawn_connect(channel);
        }
    }

    /// Starts the maintenance and fallback threads if they do not run yet
    /// (threads.rs says when). A failure to start them is retried at the
    /// next occasion.
    pub(crate) fn start_threads(&self) {
        if self.threads.started() {
            return;
        }
        if let Some(me) = self.me.upgrade() {
            if let Err(e) = self.threads.start(&me) {
                tracing::warn!("cannot start the client's threads (will try again): {e}");
            }
        }
    }

    /// Requests in flight over all channels.
    pub(crate) fn in_flight(&self) -> usize {
        self.engine().in_flight()
    }

    /// Stops everything: every call still held completes with `Shutdown`.
    pub(crate) fn shut_down(&self) {
        self.shutdown.store(true, Ordering::Release);
        self.wake_maintenance();
        self.lead.signal_fallback();
        self.lead.wake();
        for ch in &self.channels {
            ch.shut_down();
        }
    }

    /// Fails what is left after the threads stopped.
    pub(crate) fn fail_all(&self) {
        self.drive(|e, _| e.shutdown());
        for ch in &self.channels {
            *ch.rx.lock().unwrap_or_else(|p| p.into_inner()) = None;
        }
    }

    /// Moves the engine's queued actions to `scratch`, and wakes the
    /// maintenance thread if an event made its next deadline earlier.
    fn take_actions(&self, e: &mut Engine<Arc<Call>>, scratch: &mut Scratch) {
        e.take_actions(&mut scratch.actions);
        if e.take_wake() {
            self.wake_maintenance();
        }
    }

    /// Carries out the actions in `scratch` (and those they lead to: a
    /// failed write fails its channel, whose calls are re-sent).
    fn execute(&self, scratch: &mut Scratch) {
        let n = self.channels.len();
        if scratch.sends.len() < n {
            scratch.sends.resize_with(n, Vec::new);
            scratch.epochs.resize(n, 0);
        }
        while !scratch.actions.is_empty() {
            while let Some(action) = scratch.actions.pop_front() {
                match action {
                    Action::Send {
                        channel,
                        epoch,
                        xid,
                        call,
                        ..
                    } => {
                        // A connection that changed between two sends of
                        // this batch: write what was queued for the old
                        // one first (it will fail and be re-sent).
                        if !scratch.sends[channel].is_empty() && scratch.epochs[channel] != epoch {
                            self.flush(channel, scratch);
                        }
                        scratch.epochs[channel] = epoch;
                        scratch.sends[channel].push((xid, call));
                    }
                    Action::Complete { call, failure } => {
                        let (attempts, error) = match failure {
                            Failure::TimedOut { attempts } => {
                                (attempts, CallError::TimedOut { attempts })
                            }
                            Failure::Shutdown => (call.attempts(), CallError::Shutdown),
                            Failure::Refused { attempts } => (
                                attempts,
                                CallError::NoCredentials {
                                    detail: lock(&self.no_credentials).clone().unwrap_or_else(
                                        || "no Kerberos credentials (run kinit)".into(),
                                    ),
                                    sent: call.written(),
                                },
                            ),
                        };
                        call.complete_after(attempts, Err(error));
                    }
                    Action::Close {
                        channel,
                        epoch,
                        timed_out,
                        moved,
                    } => {
                        if let Some(ch) = self.channels.get(channel) {
                            let why = if timed_out > 0 {
                                tracing::warn!(
                                    channel = ch.id,
                                    path = ch.path,
                                    "channel failed: {timed_out} call(s) got no reply within timeo"
                                );
                                format!("{timed_out} call(s) got no reply within timeo")
                            } else {
                                take_reason(&mut scratch.reasons, channel, epoch)
                            };
                            ch.close(epoch);
                            self.alert_failed(ch, &why, moved);
                        }
                    }
                    Action::Connect { channel } => self.spawn_connect(channel),
                    Action::CheckRoutes => self.check_routes(scratch),
                }
            }
            for channel in 0..n {
                if !scratch.sends[channel].is_empty() {
                    self.flush(channel, scratch);
                }
            }
        }
    }

    /// Writes the sends queued for `channel`; a failed write fails the
    /// channel (its calls are still in the engine's table: re-sent).
    fn flush(&self, channel: usize, scratch: &mut Scratch) {
        let epoch = scratch.epochs[channel];
        let mut sends = std::mem::take(&mut scratch.sends[channel]);
        #[cfg(test)]
        if let Some(wire) = &self.detached {
            let mut wire = wire.lock().unwrap_or_else(|p| p.into_inner());
            wire.extend(
                sends
                    .drain(..)
                    .map(|(xid, call)| (channel, epoch, xid, call)),
            );
            scratch.sends[channel] = sends;
            return;
        }
        let result = self.channels[channel].send_many(&sends, epoch, self.config.hook.as_deref());
        sends.clear();
        scratch.sends[channel] = sends;
        if let Err(e) = result {
            self.fail_into(channel, epoch, &format!("send failed: {e}"), scratch);
        }
    }

    /// Fails the connection of `epoch` of `channel` (a stale epoch is
    /// ignored) and carries out the re-sends.
    pub(crate) fn fail(&self, channel: usize, epoch: u64, why: &str) {
        with_scratch(|scratch| {
            self.fail_into(channel, epoch, why, scratch);
            self.execute(scratch);
        });
    }

    fn fail_into(&self, channel: usize, epoch: u64, why: &str, scratch: &mut Scratch) {
        let now = self.now_ns();
        let mut e = self.engine();
        if e.epoch(channel) == epoch && e.health(channel).is_some_and(|h| h.is_up()) {
            let ch = &self.channels[channel];
            tracing::warn!(channel = ch.id, path = ch.path, "channel failed: {why}");
            // For the alert line of the Close this failure queues.
            scratch.reasons.push((channel, epoch, why.to_owned()));
        }
        e.on_channel_failed(channel, epoch, now);
        self.take_actions(&mut e, scratch);
    }

    /// The alert lines of a failed channel: the failover (with how many
    /// calls it carried), and the path DOWN if no channel of its path is
    /// up any more. Called without the engine's lock held.
    fn alert_failed(&self, ch: &Channel, why: &str, moved: usize) {
        let path_down = {
            let e = self.engine();
            !self
                .channels
                .iter()
                .filter(|c| c.path == ch.path)
                .any(|c| e.health(c.id).is_some_and(|h| h.is_up()))
        };
        self.config
            .alerts
            .channel_failed(ch.id, &ch.spec.label(), why, moved, path_down);
    }

    /// A WRITE or COMMIT reply carried this write verifier (a change means
    /// the server restarted: alert).
    pub(crate) fn note_verifier(&self, verf: [u8; 8]) {
        self.watch.on_verifier(verf, &self.config.alerts);
    }

    /// Fails every channel of a path whose route is gone (see
    /// `socket::route_lost`): a cut path (interface down) is then left
    /// within ~0.1 s and its in-flight calls move to the other paths at
    /// once, instead of after `timeo`. Silent paths (black-holed, or a dead
    /// switch) still rely on `timeo`. The channels reconnect with backoff as
    /// after any failure; connects fail at once while the route is missing.
    fn check_routes(&self, scratch: &mut Scratch) {
        let mut checked: Vec<usize> = Vec::new();
        for first in &self.channels {
            if checked.contains(&first.path) {
                continue;
            }
            checked.push(first.path);
            let on_path: Vec<(usize, u64)> = {
                let e = self.engine();
                self.channels
                    .iter()
                    .filter(|c| c.path == first.path)
                    .filter(|c| e.health(c.id).is_some_and(|h| h.is_up()))
                    .map(|c| (c.id, e.epoch(c.id)))
                    .collect()
            };
            if on_path.is_empty() {
                continue;
            }
            let Some(err) = crate::io::socket::route_lost(&first.spec) else {
                continue;
            };
            for (c, epoch) in on_path {
                let ch = &self.channels[c];
                let why = match ch.spec.local {
                    Some(local) => format!("no route to {} from {local}: {err}", ch.spec.remote),
                    None => format!("no route to {}: {err}", ch.spec.remote),
                };
                self.fail_into(c, epoch, &why, scratch);
            }
        }
    }

    /// Starts a connection attempt of `channel` on its own thread (a
    /// black-holed path hangs in SYN retries for the connect timeout).
    fn spawn_connect(&self, channel: usize) {
        let Some(me) = self.me.upgrade() else {
            return;
        };
        let Some(ch) = self.channels.get(channel) else {
            return;
        };
        if ch.connecting.swap(true, Ordering::AcqRel) {
            return;
        }
        // Started by whichever thread saw the failure, a program's own
        // included (a lazy transport's caller: threads.rs).
        let spawned = crate::signals::spawn(&format!("dnfs-conn{channel}"), move || {
            let _ = me.connect_channel(channel);
            me.channels[channel]
                .connecting
                .store(false, Ordering::Release);
        });
        if spawned.is_err() {
            ch.connecting.store(false, Ordering::Release);
            let now = self.now_ns();
            self.engine().on_connect_failed(channel, now);
        }
    }

    /// Connects (or reconnects) one channel: TCP connect, NULL probe, then
    /// its halves for the connection of the next epoch; the engine marks it
    /// up (sending what was parked) only once the server answered.
    pub(crate) fn connect_channel(&self, channel: usize) -> io::Result<()> {
        let ch = &self.channels[channel];
        let mut gss_sealer = None;
        let mut no_credentials = None;
        let result = (|| {
            let (mut stream, tls_exporter) = crate::io::socket::connect_bound(&ch.spec)?;
            stream.set_write_timeout(Some(ch.spec.timeout))?;
            // A forked child's first connection needs no proof that the
            // server answers NFS on it: its parent's client had that
            // proof, and the child's first call, timed and retried by the
            // engine like any other (hard or soft), is the next one. A
            // reconnection (a path that failed) is always probed before
            // calls move onto it.
            let first = self.engine().epoch(channel) == 0;
            if let Some(gss) = &self.config.gss {
                // The context's creation is the proof that the server
                // answers (its INIT is a NULL call).
                let host = gss.hosts.get(ch.path).map_or("", String::as_str);
                let previous = ch.last_sealer();
                let (s, sealer) = crate::security::ConnectionSealer::establish(
                    stream,
                    host,
                    (self.config.prog, self.config.vers),
                    gss.flavor,
                    ch.spec.timeout,
                    previous.as_deref(),
                    tls_exporter.as_ref().map(|e| &e[..]),
                )
                .map_err(|e| {
                    // A connection that broke is retried as any; no
                    // ticket (EACCES) or a refusal is the mount's answer.
                    let kind = match &e {
                        crate::security::SecurityError::Io { source, .. } => source.kind(),
                        _ if e.errno() == libc::EACCES => io::ErrorKind::PermissionDenied,
                        _ => io::ErrorKind::Other,
                    };
                    if let crate::security::SecurityError::Gss {
                        source: crate::security::GssError::NoCredentials(_),
                        ..
                    } = &e
                    {
                        no_credentials = Some(e.to_string());
                    }
                    io::Error::new(kind, e.to_string())
                })?;
                // Calls in flight per connection stay within the window
                // (RFC 2203 §5.3.3.1: a server drops a number more than
                // its window below the highest it has seen, and it may
                // take them in any order).
                if (sealer.window() as usize) < self.config.max_inflight {
                    return Err(Refusal::Io(io::Error::other(format!(
                        "the server's RPCSEC_GSS window is {} calls, below the {} in flight per \
                         connection this client keeps (max_inflight)",
                        sealer.window(),
                        self.config.max_inflight
                    ))));
                }
                stream = s;
                gss_sealer = Some(Arc::new(sealer));
            } else if !(self.skip_first_probe && first) {
                Channel::probe(
                    &mut stream,
                    &self.config.cred,
                    self.config.prog,
                    self.config.vers,
                    ch.spec.timeout,
                )?;
            }
            let bound = match &self.config.hook {
                Some(hook) => {
                    // Under Kerberos the hook's calls (EXCHANGE_ID,
                    // BIND_CONN_TO_SESSION) are sealed with the context
                    // just made, as every call after them.
                    let sealer = gss_sealer.as_deref();
                    let mut call = |salt: u32, args: &[u8]| {
                        crate::io::oneshot::call_on(
                            &mut stream,
                            &self.config.cred,
                            (self.config.prog, self.config.vers, 1),
                            salt,
                            args,
                            ch.spec.timeout,
                            sealer,
                        )
                    };
                    hook.on_connect(ch.path, &mut call)?
                }
                None => 0,
            };
            stream.set_write_timeout(None)?;
            stream.set_read_timeout(None)?;
            Ok::<_, Refusal>((stream, bound))
        })();
        let (stream, bound) = match result {
            Ok(s) => s,
            Err(Refusal::Path(why)) => {
                self.retire_path(ch.path, &why);
                return Err(io::Error::other(why));
            }
            Err(Refusal::Io(e)) => {
                let refuse = no_credentials.is_some();
                if let Some(why) = no_credentials {
                    let mut missing = lock(&self.no_credentials);
                    if missing.is_none() {
                        tracing::warn!(channel, "{why}");
                    }
                    *missing = Some(why);
                    self.credentials_missing.store(true, Ordering::Relaxed);
                }
                let refused = self.drive(|e, now| {
                    e.on_connect_failed(channel, now);
                    if refuse {
                        e.refuse_parked()
                    } else {
                        0
                    }
                });
                if refused > 0 {
                    tracing::warn!(channel, "{refused} call(s) failed for want of credentials");
                }
                return Err(io::Error::new(
                    e.kind(),
                    format!("connect to {} failed: {e}", ch.spec.remote),
                ));
            }
        };
        // The halves are in place, tagged with the epoch the engine gives
        // this connection, before the engine sends anything on it. (Only a
        // connection changes a channel's epoch while it is not up.)
        let epoch = self.engine().epoch(channel) + 1;
        if gss_sealer.is_some() && self.credentials_missing.load(Ordering::Relaxed) {
            // Cleared with the reason, under its lock, as it is set.
            let mut missing = lock(&self.no_credentials);
            if missing.take().is_some() {
                self.credentials_missing.store(false, Ordering::Relaxed);
                tracing::info!(channel, "Kerberos credentials found again: calls go on");
            }
        }
        if let Err(e) = ch.install(stream, (epoch, bound), self.config.max_record, gss_sealer) {
            self.drive(|e, now| e.on_connect_failed(channel, now));
            return Err(e);
        }
        let got = self.drive(|e, now| e.on_connected(channel, now));
        debug_assert_eq!(got, epoch);
        // Epoch 1 is the first connection; any later one is a reconnect.
        self.config
            .alerts
            .channel_connected(ch.id, &ch.spec.label(), got > 1);
        // A leader polling the other connections must add this one.
        self.lead.wake();
        Ok(())
    }

    /// Takes every channel of `path` out of use for good (see
    /// `Transport::retire_path`).
    pub(crate) fn retire_path(&self, path: usize, why: &str) {
        {
            let mut retired = lock(&self.retired);
            if retired.contains(&path) {
                return;
            }
            retired.push(path);
        }
        tracing::error!(path, "path not used: {why}");
        let any_up = {
            let e = self.engine();
            self.channels
                .iter()
                .any(|c| c.path == path && e.health(c.id).is_some_and(|h| h.is_up()))
        };
        // A path refused at its first connection has no connection whose
        // failure would report it: say it here.
        if let Some(first) = self.channels.iter().find(|c| c.path == path) {
            if !any_up {
                self.config
                    .alerts
                    .channel_failed(first.id, &first.spec.label(), why, 0, true);
            }
        }
        with_scratch(|scratch| {
            for ch in self.channels.iter().filter(|c| c.path == path) {
                let now = self.now_ns();
                let mut e = self.engine();
                let epoch = e.epoch(ch.id);
                if e.health(ch.id).is_some_and(|h| h.is_up()) {
                    scratch.reasons.push((ch.id, epoch, why.to_owned()));
                }
                e.retire(ch.id, now);
                self.take_actions(&mut e, scratch);
                drop(e);
                // One at a time: the path is reported DOWN once, with its
                // last channel.
                self.execute(scratch);
            }
        });
    }

    /// Wakes the maintenance thread before its deadline.
    pub(crate) fn wake_maintenance(&self) {
        if !self.threads.started() && !self.is_shutdown() {
            self.start_threads();
        }
        let (lock, cv) = &self.maintenance;
        *lock.lock().unwrap_or_else(|p| p.into_inner()) = true;
        cv.notify_one();
    }

    /// The maintenance thread sleeps here for at most `timeout`, or until
    /// woken.
    pub(crate) fn sleep_maintenance(&self, timeout: std::time::Duration) {
        let (lock, cv) = &self.maintenance;
        let mut woken = lock.lock().unwrap_or_else(|p| p.into_inner());
        if !*woken && !self.is_shutdown() {
            woken = cv
                .wait_timeout(woken, timeout)
                .map(|(g, _)| g)
                .unwrap_or_else(|p| p.into_inner().0);
        }
        *woken = false;
    }

    /// The receiver's view of the connection of `epoch` of `channel`.
    pub(crate) fn replies(&self, channel: usize, epoch: u64) -> ChannelReplies<'_> {
        ChannelReplies {
            shared: self,
            channel,
            epoch,
        }
    }

    /// A reply event, and the actions it led to (a parked call sent).
    fn on_reply(
        &self,
        channel: usize,
        epoch: u64,
        xid: u32,
        answer: Answer,
        now: u64,
    ) -> Option<ReadClaim> {
        let mut e = self.engine();
        let delivered = e.on_reply(channel, epoch, xid, answer, now);
        if e.has_actions() {
            with_scratch(|scratch| {
                self.take_actions(&mut e, scratch);
                drop(e);
                self.execute(scratch);
            });
        }
        delivered
    }

    /// Closes the statistics of a reply.
    fn account(&self, d: &ReadClaim, ok: bool, bytes_read: u64) {
        let call = d.call();
        let bytes_written = call.payload.as_ref().map_or(0, |p| p.len() as u64);
        self.channels[d.channel()].stats.on_complete(
            call.proc_,
            d.latency_ns(),
            bytes_read,
            bytes_written,
            ok,
        );
        self.completions.fetch_add(1, Ordering::Release);
    }

    /// Hands a connection's loss of a claimed READ back to the engine.
    pub(crate) fn receive_lost(&self, claim: ReadClaim) {
        self.drive(|e, now| e.on_receive_lost(claim, now));
    }
}

/// The receiver of one connection talking to its transport.
pub(crate) struct ChannelReplies<'a> {
    shared: &'a Shared,
    channel: usize,
    epoch: u64,
}

impl ChannelReplies<'_> {
    /// On a connection with an RPCSEC_GSS context, the reply `rec` opened
    /// (checked, unwrapped) into the plain record the rest decodes; a
    /// reply that fails its checks becomes an AUTH_ERROR for its call.
    /// `None`: use `rec` as it is (AUTH_SYS, or a reply the server did not
    /// accept).
    /// On a connection with an RPCSEC_GSS context that had worked, a
    /// reply saying the server lost it (or cannot use its credential):
    /// why the connection must be replaced.
    fn context_lost(&self, rec: &[u8]) -> Option<String> {
        self.shared.config.gss.as_ref()?;
        let ch = &self.shared.channels[self.channel];
        let status = ch.sealer(self.epoch)?.lost(rec)?;
        Some(format!(
            "the server dropped the Kerberos context ({status}): a new connection and context"
        ))
    }

    fn open(&self, rec: &[u8]) -> Option<Vec<u8>> {
        self.shared.config.gss.as_ref()?;
        let ch = &self.shared.channels[self.channel];
        let sealer = ch.sealer(self.epoch)?;
        match sealer.open(rec, self.shared.config.max_record) {
            Ok(plain) => plain,
            Err(e) => {
                let xid = rec
                    .get(..4)
                    .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
                tracing::warn!(
                    channel = ch.id,
                    xid,
                    "Kerberos reply from {} fails its checks: {e}",
                    ch.spec.remote
                );
                Some(crate::security::sealer::rejected_reply(xid))
            }
        }
    }
}

impl Replies for ChannelReplies<'_> {
    type Claim = ReadClaim;

    fn now(&self) -> u64 {
        self.shared.now_ns()
    }

    fn due(&self) -> Due {
        let gauge = &self.shared.channels[self.channel].gauge;
        Due {
            requests: gauge.requests() as usize,
            bytes: gauge.reply_bytes() as usize,
        }
    }

    fn record(&mut self, rec: &[u8], now: u64) {
        if let Some(why) = self.context_lost(rec) {
            // Its calls, this one too, go to a connection with a new
            // context (the engine re-sends them).
            self.shared.fail(self.channel, self.epoch, &why);
            return;
        }
        let opened;
        let rec = match self.open(rec) {
            Some(plain) => {
                opened = plain;
                &opened[..]
            }
            None => rec,
        };
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
        if crate::io::hook::is_hook_xid(xid) {
            if let Some(hook) = &self.shared.config.hook {
                hook.bind_reply(self.channel, rec);
                return;
            }
        }
        let ok = header.as_ref().is_ok_and(|h| h.is_success());
        // Every NFS procedure's results start with its status (NULL's are
        // empty, and the engine never retries NULL). Not on NFSv4.1: its
        // NFS4ERR_DELAY (the same number) is the session layer's to retry,
        // with a new sequence id when SEQUENCE itself succeeded.
        let answer = if ok
            && self.shared.config.vers == nfs3::NFS_V3
            && r.rest().get(..4) == Some(&nfsstat3::NFS3ERR_JUKEBOX.0.to_be_bytes()[..])
        {
            // Every JUKEBOX reply, retried by the engine or handed out.
            self.shared
                .watch
                .on_jukebox(now, &self.shared.config.alerts);
            Answer::Jukebox
        } else {
            Answer::Final
        };
        let Some(d) = self
            .shared
            .on_reply(self.channel, self.epoch, xid, answer, now)
        else {
            tracing::debug!(
                channel = self.channel,
                xid,
                "reply matches no call in flight; dropped"
            );
            return;
        };
        let bytes_read = match (&d.call().sink, ok) {
            (Sink::Read(dest) | Sink::Read4(dest), true) => dest.len() as u64,
            _ => 0,
        };
        self.shared.account(&d, ok, bytes_read);
        let result = match header {
            Err(e) => Err(CallError::Decode(e)),
            Ok(h) => match h.body {
                ReplyBody::Accepted { stat, .. } => match stat {
                    AcceptedReply::Success => deliver(d.call(), r),
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
        let attempts = d.attempts();
        d.into_call().complete_after(attempts, result);
    }

    fn claim_read(&mut self, xid: u32, count: u32, v4: bool, now: u64) -> Option<ReadClaim> {
        // A Kerberos reply is checked whole before any of it is used.
        if self.shared.config.gss.is_some() {
            return None;
        }
        {
            let e = self.shared.engine();
            let call = e.peek(self.channel, self.epoch, xid)?;
            match (&call.sink, v4) {
                (Sink::Read(dest), false) | (Sink::Read4(dest), true)
                    if dest.len() >= count as usize => {}
                // More data than asked (an error the whole record will
                // report), not a READ, or a READ of the other protocol.
                _ => return None,
            }
        }
        self.shared
            .on_reply(self.channel, self.epoch, xid, Answer::Final, now)
    }

    fn read_done(
        &mut self,
        claim: ReadClaim,
        count: u32,
        eof: bool,
        head: Option<Vec<u8>>,
        _now: u64,
    ) {
        self.shared.account(&claim, true, count as u64);
        let attempts = claim.attempts();
        let reply = match head {
            Some(head) => Reply::Read4 { head, count, eof },
            None => Reply::Read {
                status: 0,
                count,
                eof,
            },
        };
        claim.into_call().complete_after(attempts, Ok(reply));
    }
}

/// Why the driver failed the connection of `epoch` of `channel`, taken
/// from `reasons` (a connection closed for a reason not recorded there —
/// none is expected — gets a generic one).
fn take_reason(reasons: &mut Vec<(usize, u64, String)>, channel: usize, epoch: u64) -> String {
    match reasons
        .iter()
        .position(|(c, e, _)| *c == channel && *e == epoch)
    {
        Some(i) => reasons.swap_remove(i).2,
        None => "connection failed".to_owned(),
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
            // `decode_read_reply` without building the attributes (unused).
            let (status, ok) =
                directnfs_wire::nfs3::decode_read_reply_status(&mut r, dest.len() as u32)
                    .map_err(CallError::Decode)?;
            let Some(ok) = ok else {
                return Ok(Reply::Read {
                    status: status.0,
                    count: 0,
                    eof: false,
                });
            };
            let data = r
                .opaque_fixed(ok.count as usize, "READ3resok data")
                .map_err(CallError::Decode)?;
            // SAFETY: the engine handed this call over with its reply, so
            // we are its only owner until `complete` (see call.rs).
            unsafe { dest.fill(data) };
            Ok(Reply::Read {
                status: 0,
                count: ok.count,
                eof: ok.eof,
            })
        }
        Sink::Read4(dest) => Ok(deliver_read4(dest, r.rest())),
    }
}

/// An NFSv4.1 READ COMPOUND's reply (`results`, from the procedure
/// results on): a successful one's data into the caller's buffer and the
/// rest kept; anything else (an operation failed, or the reply does not
/// decode) kept whole for the session layer to judge, as a
/// [`Sink::Record`] call's would be.
fn deliver_read4(dest: &ReadDest, results: &[u8]) -> Reply {
    let mut r = XdrReader::new(results);
    let head = directnfs_wire::nfs4::decode_read_reply_head(&mut r, dest.len() as u32);
    let data_at = r.position();
    if let Ok(directnfs_wire::nfs4::SequencedReply { ok: Some(ok), .. }) = head {
        if let Ok(data) = r.opaque_fixed(ok.count as usize, "READ4resok data") {
            // SAFETY: the engine handed this call over with its reply, so
            // we are its only owner until `complete` (see call.rs).
            unsafe { dest.fill(data) };
            return Reply::Read4 {
                head: results[..data_at].to_vec(),
                count: ok.count,
                eof: ok.eof,
            };
        }
    }
    Reply::Results(results.to_vec())
}

#[cfg(test)]
mod tests {
    use directnfs_wire::xdr::XdrWrite;

    use super::*;

    /// The procedure results of a `SEQUENCE, PUTFH, READ` COMPOUND whose
    /// READ says `read_status`, with `data` on success.
    fn read4_results(read_status: u32, data: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        b.put_u32(read_status); // COMPOUND status: the last result's
        b.put_u32(0); // tag
        b.put_u32(3);
        b.put_u32(53); // SEQUENCE
        b.put_u32(0);
        b.extend_from_slice(&[3; 16]);
        for v in [9u32, 2, 10, 10, 0] {
            b.put_u32(v);
        }
        b.put_u32(22); // PUTFH
        b.put_u32(0);
        b.put_u32(25); // READ
        b.put_u32(read_status);
        if read_status == 0 {
            b.put_u32(1); // eof
            b.put_u32(data.len() as u32);
            b.extend_from_slice(data);
            b.resize(b.len() + (4 - data.len() % 4) % 4, 0);
        }
        b
    }

    #[test]
    fn a_successful_nfsv41_read_puts_its_data_in_the_buffer_and_keeps_the_head() {
        let data: Vec<u8> = (0..8191u32).map(|i| (i % 241) as u8).collect();
        let results = read4_results(0, &data);
        let mut buf = vec![0u8; 8192];
        // SAFETY: `buf` outlives the call and nothing else touches it.
        let dest = unsafe { ReadDest::new(&mut buf) };
        match deliver_read4(&dest, &results) {
            Reply::Read4 { head, count, eof } => {
                assert_eq!((count, eof), (8191, true));
                assert_eq!(head, results[..results.len() - 8192]);
            }
            other => panic!("expected Read4, got {other:?}"),
        }
        assert_eq!(&buf[..8191], &data[..]);
    }

    #[test]
    fn a_failed_or_malformed_nfsv41_read_is_kept_whole_and_writes_nothing() {
        let mut buf = vec![0u8; 64];
        // SAFETY: as above.
        let dest = unsafe { ReadDest::new(&mut buf) };
        // NFS4ERR_ACCESS from READ.
        let failed = read4_results(13, &[]);
        assert!(matches!(deliver_read4(&dest, &failed), Reply::Results(r) if r == failed));
        // More data than the buffer asked for, and a truncated reply.
        let long = read4_results(0, &[1; 100]);
        assert!(matches!(deliver_read4(&dest, &long), Reply::Results(r) if r == long));
        let cut = &long[..long.len() - 40];
        assert!(matches!(deliver_read4(&dest, cut), Reply::Results(r) if r == cut));
        assert!(buf.iter().all(|&b| b == 0), "nothing written");
    }
}
