//! The transport: every channel to one server, the engine deciding what
//! goes where, and the threads that keep it moving. The front door of the
//! driver for the file and batch API.
//!
//! * [`Transport::submit_many`] hands calls to the engine, which picks a
//!   channel for each (or parks it while no channel is up); the sends of
//!   one batch go out together, one write per connection;
//! * replies are received by the waiting callers themselves, one leading
//!   at a time ([`Transport::wait_until`], `leader.rs`; the per-connection
//!   receive state machine is `io/receive.rs`), or by a fallback thread
//!   for calls nobody waits for;
//! * the maintenance thread (`maintenance.rs`) gives the engine its time:
//!   timeouts (failing the channel, whose calls the engine re-sends
//!   elsewhere), JUKEBOX re-sends, reconnections with backoff, parked
//!   calls;
//! * `shared.rs` is what they share, and where engine actions become I/O
//!   and received replies become engine events.

mod leader;
mod maintenance;
mod shared;
mod spares;
mod threads;

use std::io;
use std::sync::Arc;
use std::time::Instant;

use directnfs_engine::health::Health;
use directnfs_engine::stats::IoStats;
use directnfs_engine::Engine;

use super::call::{Call, Group};
use super::channel::Channel;
pub(crate) use super::hook::{CallOn, ConnectHook, Refusal, HOOK_SLOT};
use super::socket::ConnectSpec;
#[cfg(test)]
pub(crate) use shared::Sent;
pub(crate) use shared::{Shared, TransportConfig};

/// The threads' loops, given to `threads.rs` here so that it names neither
/// `shared.rs` (which owns the threads) nor the loops.
impl threads::Duties for Shared {
    fn is_shutdown(&self) -> bool {
        Shared::is_shutdown(self)
    }

    fn maintain(sh: &Arc<Self>) {
        maintenance::run(sh)
    }

    fn receive(sh: &Arc<Self>) {
        leader::fallback_loop(sh)
    }
}

/// One channel to open: its path and where to connect.
#[derive(Debug, Clone)]
pub(crate) struct ChannelSpec {
    /// Index of the path it belongs to.
    pub path: usize,
    pub connect: ConnectSpec,
}

/// A channel as statistics show it.
#[derive(Debug, Clone)]
pub(crate) struct ChannelView {
    pub id: usize,
    pub path: usize,
    pub spec: ConnectSpec,
    pub health: Health,
    pub queue_depth: u64,
    pub stats: Arc<IoStats>,
    /// Socket buffer sizes now (send, receive).
    pub buffers: (u64, u64),
}

/// Owner handle: shuts everything down when dropped.
#[derive(Debug)]
pub(crate) struct Transport {
    shared: Arc<Shared>,
}

/// When a transport starts its two threads (maintenance and the fallback
/// receiver).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Start {
    /// With the transport.
    Now,
    /// When first needed (a forked child's transport: a process that makes
    /// a few calls and exits, a PostgreSQL backend per connection, never
    /// pays for them), calling `then` once they run. See `threads.rs`.
    WhenNeeded { then: fn() },
}

impl Transport {
    /// Creates the transport and connects every channel in parallel. Fails
    /// only if no channel at all could connect.
    pub(crate) fn start(specs: Vec<ChannelSpec>, config: TransportConfig) -> io::Result<Self> {
        Self::start_with(specs, config, Start::Now)
    }

    /// As [`start`](Self::start), with the threads started as `start` says.
    /// A lazy transport (`Start::WhenNeeded`) connects only the first
    /// channel of each path now; the others stay idle until the
    /// maintenance thread's first tick, so a process that makes a few calls
    /// and exits opens one connection per path, whatever `connections:`
    /// says, and one that lives on opens them all once its threads start.
    pub(crate) fn start_with(
        specs: Vec<ChannelSpec>,
        config: TransportConfig,
        start: Start,
    ) -> io::Result<Self> {
        let lazy = matches!(start, Start::WhenNeeded { .. });
        let paths: Vec<usize> = specs.iter().map(|s| s.path).collect();
        let mut config = config;
        if config.hook.is_some() || config.gss.is_some() {
            // NFSv4.1: a connection belongs to its client's session.
            // Kerberos: to its process's RPCSEC_GSS context.
            config.spare_keys.clear();
        } else if !lazy && config.fork_spares && crate::io::spare::own() {
            // The first transport of a process tree keeps spares for its
            // children (io/spare.rs); a child's inherits their keys.
            let n = paths.iter().max().map_or(0, |m| m + 1);
            config.spare_keys = (0..n).map(|_| crate::io::spare::new_key()).collect();
        }
        let shared = Self::build(specs, &config, false, start)?;
        if !lazy && !config.spare_keys.is_empty() {
            let me = Arc::downgrade(&shared);
            crate::io::spare::on_first_fork(Box::new(move || {
                me.upgrade().map(|sh| sh.wake_maintenance()).is_some()
            }));
        }
        let first: Vec<usize> = (0..paths.len())
            .filter(|&c| !lazy || !paths[..c].contains(&paths[c]))
            .collect();
        if first.len() < paths.len() {
            let mut e = shared.engine();
            for c in (0..paths.len()).filter(|c| !first.contains(c)) {
                e.defer_connect(c);
            }
        }
        // A child's channel that takes a spare needs no connect.
        let now: Vec<usize> = first
            .into_iter()
            .filter(|&c| !(lazy && shared.adopt_spare(c)))
            .collect();
        let errors: Vec<io::Error> = if now.is_empty() {
            Vec::new()
        } else if let [only] = now[..] {
            // One channel to connect (`connections: 1`, or a lazy
            // transport's one path): connected in this thread; a thread of
            // its own would only add its start and join to the first call
            // of a new process.
            shared.connect_channel(only).err().into_iter().collect()
        } else {
            Self::connect_all(&shared, &now)
        };
        let up = {
            let e = shared.engine();
            (0..shared.channels.len()).any(|c| e.health(c).is_some_and(|h| h.is_up()))
        };
        if !up {
            shared.shut_down();
            return Err(errors
                .into_iter()
                .next()
                .unwrap_or_else(|| io::Error::other("no channel to connect")));
        }
        for e in &errors {
            tracing::warn!("a channel failed to connect and will be retried: {e}");
        }
        // A channel that failed to connect is the maintenance thread's to
        // retry: a lazy transport starts it now too.
        if matches!(start, Start::Now) || !errors.is_empty() {
            shared.threads.start(&shared)?;
        }
        Ok(Self { shared })
    }

    /// Connects `channels`, each in a thread of its own (in parallel);
    /// returns the errors of those that failed (a thread that could not
    /// be started: its channel connected here).
    fn connect_all(shared: &Arc<Shared>, channels: &[usize]) -> Vec<io::Error> {
        let handles: Vec<_> = channels
            .iter()
            .map(|&c| {
                let sh = Arc::clone(shared);
                (
                    c,
                    crate::signals::spawn("dnfs-connect", move || sh.connect_channel(c)),
                )
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|(c, h)| match h {
                Ok(h) => h.join().ok().and_then(|r| r.err()),
                Err(_) => shared.connect_channel(c).err(),
            })
            .collect()
    }

    /// A transport with one channel that has no socket and no thread, for
    /// unit tests of what sits above it (the batch, the file API): what it
    /// sends is kept for `crate::testing`'s in-process server, which
    /// answers through the real reply path. Runs under Miri.
    #[cfg(test)]
    pub(crate) fn detached(config: TransportConfig) -> io::Result<Self> {
        let spec = ChannelSpec {
            path: 0,
            connect: ConnectSpec {
                remote: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
                local: None,
                timeout: std::time::Duration::from_secs(1),
                dontroute: false,
                resvport: false,
                buffers: crate::io::socket::BufferRequest::Auto,
                tls: None,
            },
        };
        let shared = Self::build(vec![spec], &config, true, Start::Now)?;
        // No thread ever, as before threads could start lazily: the tests
        // drive it themselves, and Miri has neither the maintenance
        // thread's poll nor its route check.
        shared.threads.never();
        shared.drive(|e, now| {
            e.begin_connect(0);
            e.on_connected(0, now)
        });
        Ok(Self { shared })
    }

    fn build(
        specs: Vec<ChannelSpec>,
        config: &TransportConfig,
        detached: bool,
        start: Start,
    ) -> io::Result<Arc<Shared>> {
        let mut engine = Engine::new(
            directnfs_engine::Config {
                policy: config.policy,
                backoff: config.backoff,
                // A hook's calls use the last slot of the XID space.
                max_inflight: if config.hook.is_some() {
                    config.max_inflight.min(HOOK_SLOT as usize)
                } else {
                    config.max_inflight
                },
                max_client_inflight: config.max_client_inflight,
            },
            specs.len(),
        );
        engine.set_classes(config.io_classes);
        engine.set_hedge(config.hedge);
        let paths: Vec<usize> = specs.iter().map(|s| s.path).collect();
        let channels = specs
            .into_iter()
            .enumerate()
            .map(|(id, spec)| {
                engine.set_path(id, spec.path);
                // The last channel of a path with two or more is its log
                // lane (`directnfs_engine::class`).
                let of_path = paths.iter().filter(|&&p| p == spec.path).count();
                let last = !paths[id + 1..].contains(&spec.path);
                let lane = config.io_classes && of_path >= 2 && last;
                engine.set_lane(id, lane);
                engine.begin_connect(id);
                let stats = engine.stats(id).map(Arc::clone).unwrap_or_default();
                let gauge = engine.gauge(id).map(Arc::clone).unwrap_or_default();
                let mut channel = Channel::new(id, spec.path, spec.connect, stats, gauge);
                channel.lane = lane;
                channel
            })
            .collect();
        if detached {
            #[cfg(test)]
            return Shared::new_detached(channels, config.clone(), engine);
        }
        Shared::new(channels, config.clone(), engine, start)
    }

    /// The state the driver's threads share (tests reach in through it).
    #[cfg(test)]
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Monotonic nanoseconds since the transport started.
    pub(crate) fn now_ns(&self) -> u64 {
        self.shared.now_ns()
    }

    /// Sends a caller's call (see [`submit_many`](Self::submit_many)).
    pub(crate) fn submit(&self, call: Arc<Call>) {
        self.submit_many(std::iter::once(call));
    }

    /// Sends a caller's calls, those going to the same channel in one
    /// write. With `max_client_inflight` calls in flight (or every table of
    /// the channels up full) it waits for room, receiving replies meanwhile.
    /// The caller may not wait for them soon (the batch API, write-behind),
    /// so a lazy transport starts its threads (threads.rs).
    pub(crate) fn submit_many(&self, calls: impl IntoIterator<Item = Arc<Call>>) {
        self.send(calls);
        self.shared.start_threads();
    }

    /// Sends calls and waits until every call of `group` (theirs) has
    /// completed: the caller receives their replies itself.
    pub(crate) fn send_and_wait(&self, calls: impl IntoIterator<Item = Arc<Call>>, group: &Group) {
        self.send(calls);
        self.wait_group(group);
    }

    fn send(&self, calls: impl IntoIterator<Item = Arc<Call>>) {
        let mut refused = Vec::new();
        self.shared.submit_many(calls, &mut refused);
        while !refused.is_empty() {
            leader::wait_for_room(&self.shared);
            let again = std::mem::take(&mut refused);
            self.shared.submit_many(again, &mut refused);
        }
    }

    /// Sends a prepared call and waits for it.
    pub(crate) fn run(&self, call: Arc<Call>, group: &Group) {
        self.send_and_wait(std::iter::once(call), group);
    }

    /// Waits until every call of `group` has completed.
    pub(crate) fn wait_group(&self, group: &Group) {
        leader::wait_group(&self.shared, group);
    }

    /// Returns once `done()` holds (true) or `until` passed (false),
    /// receiving replies meanwhile whenever nobody else does.
    pub(crate) fn wait_until(&self, done: &dyn Fn() -> bool, until: Option<Instant>) -> bool {
        leader::wait_until(&self.shared, done, until)
    }

    /// A WRITE or COMMIT reply carried this write verifier (see
    /// `Shared::note_verifier`).
    pub(crate) fn note_verifier(&self, verf: [u8; 8]) {
        self.shared.note_verifier(verf);
    }

    /// What this transport was started with (its channels' specs and the
    /// configuration), read from plain data only — no lock is taken, so a
    /// child of `fork` may call it on the parent's transport, whose threads
    /// it does not have, to start its own.
    pub(crate) fn plan(&self) -> (Vec<ChannelSpec>, TransportConfig) {
        let specs = self
            .shared
            .channels
            .iter()
            .map(|c| ChannelSpec {
                path: c.path,
                connect: c.spec.clone(),
            })
            .collect();
        (specs, self.shared.config.clone())
    }

    /// Takes `path` out of use for good (its server is not the one the
    /// client's state lives on): its channels are failed (their calls
    /// re-sent on the other paths) and never reconnected.
    pub(crate) fn retire_path(&self, path: usize, why: &str) {
        self.shared.retire_path(path, why);
    }

    /// The RPC-with-TLS set-up of the connections to server address `ip`
    /// (`xprtsec=`), for a side protocol (NLM) to the same server: `None`
    /// when they are plain TCP or no channel goes there.
    pub(crate) fn tls_to(&self, ip: std::net::IpAddr) -> Option<Arc<super::tls::TlsSpec>> {
        self.shared
            .channels
            .iter()
            .find(|c| c.spec.remote.ip() == ip)
            .and_then(|c| c.spec.tls.clone())
    }

    /// The paths, in order: the server address each connects to and the
    /// local address it binds (a side protocol such as NLM goes over the
    /// same routes to the same server).
    pub(crate) fn routes(&self) -> Vec<(std::net::IpAddr, Option<std::net::IpAddr>)> {
        let mut out: Vec<(usize, std::net::IpAddr, Option<std::net::IpAddr>)> = Vec::new();
        for c in &self.shared.channels {
            if !out.iter().any(|(p, ..)| *p == c.path) {
                out.push((c.path, c.spec.remote.ip(), c.spec.local));
            }
        }
        out.sort_by_key(|(p, ..)| *p);
        out.into_iter().map(|(_, ip, local)| (ip, local)).collect()
    }

    /// True when every channel of path number `index` (in [`routes`]'
    /// order) failed and none is up again: the path is dead for now.
    ///
    /// [`routes`]: Self::routes
    pub(crate) fn route_down(&self, index: usize) -> bool {
        let mut paths: Vec<usize> = self.shared.channels.iter().map(|c| c.path).collect();
        paths.sort_unstable();
        paths.dedup();
        let Some(&path) = paths.get(index) else {
            return false;
        };
        let e = self.shared.engine();
        self.shared
            .channels
            .iter()
            .filter(|c| c.path == path)
            .all(|c| matches!(e.health(c.id), Some(Health::Down { .. })))
    }

    /// Every channel, for statistics.
    pub(crate) fn channels(&self) -> Vec<ChannelView> {
        let e = self.shared.engine();
        self.shared
            .channels
            .iter()
            .map(|c| ChannelView {
                id: c.id,
                path: c.path,
                spec: c.spec.clone(),
                health: e.health(c.id).unwrap_or(Health::Connecting),
                queue_depth: e.load(c.id).requests,
                stats: Arc::clone(&c.stats),
                buffers: c.buffer_sizes(),
            })
            .collect()
    }
}

impl Drop for Transport {
    fn drop(&mut self) {
        self.shared.give_back_spares();
        self.shared.shut_down();
        self.shared.threads.join();
        // Anything still parked or in flight fails now rather than hanging.
        self.shared.fail_all();
    }
}
