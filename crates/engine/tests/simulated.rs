//! The request lifecycle ([`directnfs_engine::Engine`]) in simulated time:
//! a network of channels that deliver, fail, black-hole or refuse to
//! connect, driven by hand, with a clock that only moves when a test says
//! so. Failover, `timeo`, hard and soft mounts, parking and JUKEBOX
//! back-off are checked to the nanosecond, in milliseconds of real time.
//! The same behaviour against NFS-Ganesha and real network namespaces is
//! in `crates/client/tests/{hostile,multipath}.rs`.

use std::collections::HashMap;
use std::time::Duration;

use directnfs_engine::idempotency::{classify_retried, RetriedStatus};
use directnfs_engine::retry::{Backoff, RetryPolicy};
use directnfs_engine::{Action, Answer, Config, Engine, Failure, Request};
use directnfs_wire::nfs3::{nfsstat3, NFSPROC3_READ, NFSPROC3_REMOVE};
use proptest::prelude::*;

const MS: u64 = 1_000_000;
const TIMEO: u64 = 1_000 * MS;

/// A request of the simulation: an id and a procedure.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Req {
    id: u64,
    proc_: u32,
}

impl Request for Req {
    fn proc_(&self) -> u32 {
        self.proc_
    }
    fn weight(&self) -> u64 {
        8192
    }
    fn reply_estimate(&self) -> u64 {
        8192 + 120
    }
}

/// One send on the simulated wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Sent {
    channel: usize,
    epoch: u64,
    xid: u32,
    id: u64,
    attempt: u32,
}

/// How a request ended, as the driver would report it to its caller.
#[derive(Debug, Clone, PartialEq, Eq)]
enum End {
    Replied { attempts: u32 },
    Failed(Failure),
}

/// The engine with a simulated driver around it.
struct Sim {
    engine: Engine<Req>,
    now: u64,
    /// Sends not yet answered, oldest first.
    wire: Vec<Sent>,
    /// Every send ever made.
    sends: Vec<(u64, Sent)>,
    /// How each request ended; more than one entry is a double completion.
    ends: HashMap<u64, Vec<End>>,
    /// Per channel: connection attempts succeed.
    reachable: Vec<bool>,
    /// Connect actions not yet answered.
    connecting: Vec<usize>,
    /// Close actions seen: (channel, epoch).
    closed: Vec<(usize, u64)>,
    /// The `moved` count of each Close action seen.
    moved: Vec<usize>,
    next_id: u64,
}

fn config(hard: bool, retrans: u32) -> Config {
    Config {
        policy: RetryPolicy {
            timeo: Duration::from_nanos(TIMEO),
            retrans,
            hard,
        },
        backoff: Backoff::default(),
        max_inflight: 64,
        max_client_inflight: 1024,
    }
}

impl Sim {
    /// `channels` channels, all connected at time 0.
    fn new(channels: usize, config: Config) -> Self {
        let mut sim = Sim {
            engine: Engine::new(config, channels),
            now: 0,
            wire: Vec::new(),
            sends: Vec::new(),
            ends: HashMap::new(),
            reachable: vec![true; channels],
            connecting: Vec::new(),
            closed: Vec::new(),
            moved: Vec::new(),
            next_id: 0,
        };
        for c in 0..channels {
            sim.engine.begin_connect(c);
            sim.engine.on_connected(c, 0);
        }
        sim.pump();
        sim
    }

    fn submit(&mut self, proc_: u32) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let r = self.engine.submit(Req { id, proc_ }, self.now);
        assert!(r.is_ok(), "no room for request {id}");
        self.pump();
        id
    }

    /// Carries out every queued action.
    fn pump(&mut self) {
        while let Some(a) = self.engine.poll_action() {
            match a {
                Action::Send {
                    channel,
                    epoch,
                    xid,
                    call,
                    attempt,
                } => {
                    let s = Sent {
                        channel,
                        epoch,
                        xid,
                        id: call.id,
                        attempt,
                    };
                    self.wire.push(s);
                    self.sends.push((self.now, s));
                }
                Action::Complete { call, failure } => {
                    self.ends
                        .entry(call.id)
                        .or_default()
                        .push(End::Failed(failure));
                }
                Action::Close {
                    channel,
                    epoch,
                    moved,
                    ..
                } => {
                    self.closed.push((channel, epoch));
                    self.moved.push(moved);
                    // Whatever the closed connection still carried is gone.
                    self.wire
                        .retain(|s| !(s.channel == channel && s.epoch == epoch));
                }
                Action::Connect { channel } => self.connecting.push(channel),
                Action::CheckRoutes => {}
            }
        }
    }

    /// Answers the connection attempts the engine asked for.
    fn answer_connects(&mut self) {
        for c in std::mem::take(&mut self.connecting) {
            if self.reachable[c] {
                self.engine.on_connected(c, self.now);
            } else {
                self.engine.on_connect_failed(c, self.now);
            }
        }
        self.pump();
    }

    /// Delivers the reply to a send (which may be stale).
    fn reply(&mut self, s: Sent, answer: Answer) {
        self.wire.retain(|w| *w != s);
        if let Some(d) = self
            .engine
            .on_reply(s.channel, s.epoch, s.xid, answer, self.now)
        {
            // What the driver does with a reply: close its statistics on
            // the channel that carried it (the engine counts the sends).
            if let Some(stats) = self.engine.stats(d.channel()) {
                stats.on_complete(d.call().proc_(), d.latency_ns(), 0, 0, true);
            }
            let attempts = d.attempts();
            let id = d.into_call().id;
            self.ends
                .entry(id)
                .or_default()
                .push(End::Replied { attempts });
        }
        self.pump();
    }

    /// Answers everything on the wire except what `channel` carries.
    fn reply_all_but(&mut self, channel: Option<usize>) {
        for s in self.wire.clone() {
            if Some(s.channel) != channel {
                self.reply(s, Answer::Final);
            }
        }
    }

    /// Moves the clock to `t` and ticks, answering connection attempts.
    fn tick_at(&mut self, t: u64) {
        assert!(t >= self.now);
        self.now = t;
        self.engine.on_tick(t);
        self.pump();
        self.answer_connects();
    }

    /// Ticks at every deadline the engine announces up to `t`, as the
    /// driver's maintenance loop does, then at `t`.
    fn run_until(&mut self, t: u64) {
        while let Some(d) = self.engine.next_deadline() {
            if d > t {
                break;
            }
            self.tick_at(d.max(self.now));
            if d <= self.now && self.engine.next_deadline() == Some(d) {
                break;
            }
        }
        self.tick_at(t);
    }

    fn fail(&mut self, channel: usize) {
        let epoch = self.engine.epoch(channel);
        self.engine.on_channel_failed(channel, epoch, self.now);
        self.pump();
    }

    fn ends(&self, id: u64) -> &[End] {
        self.ends.get(&id).map_or(&[], |v| v.as_slice())
    }

    fn sends_of(&self, id: u64) -> Vec<(u64, Sent)> {
        self.sends
            .iter()
            .filter(|(_, s)| s.id == id)
            .copied()
            .collect()
    }

    fn assert_each_once(&self, ids: impl IntoIterator<Item = u64>) {
        for id in ids {
            assert_eq!(self.ends(id).len(), 1, "request {id}: {:?}", self.ends(id));
        }
    }
}

#[test]
fn a_channel_that_dies_with_calls_in_flight_has_them_all_reissued_elsewhere() {
    let mut sim = Sim::new(2, config(true, 3));
    let ids: Vec<u64> = (0..20).map(|_| sim.submit(NFSPROC3_READ)).collect();
    let on_0: Vec<Sent> = sim
        .wire
        .iter()
        .filter(|s| s.channel == 0)
        .copied()
        .collect();
    assert!(
        on_0.len() >= 5,
        "load is spread: {} on channel 0",
        on_0.len()
    );
    let gauge = std::sync::Arc::clone(sim.engine.gauge(0).unwrap());
    assert_eq!(gauge.requests() as usize, on_0.len(), "the published load");
    assert_eq!(sim.engine.load(0).requests, gauge.requests());
    sim.fail(0);
    assert_eq!(gauge.requests(), 0, "a failed channel carries nothing");
    assert!(
        sim.closed.contains(&(0, 1)),
        "the failed connection is closed"
    );
    for s in &on_0 {
        let again = sim.sends_of(s.id);
        assert_eq!(again.len(), 2, "request {} re-sent once", s.id);
        assert_eq!(again[1].1.channel, 1, "on the other channel");
        assert_eq!(again[1].0, 0, "at once, not after timeo");
    }
    sim.reply_all_but(None);
    sim.assert_each_once(ids);
    // The channel reconnects after its back-off (100 ms).
    sim.run_until(99 * MS);
    assert_eq!(sim.engine.epoch(0), 2, "still down before the back-off");
    sim.run_until(100 * MS);
    assert_eq!(sim.engine.epoch(0), 3, "reconnected at 100 ms");
}

#[test]
fn calls_moved_off_a_failed_channel_are_counted_by_path_and_as_lost() {
    for (paths, other_path) in [([0, 1], true), ([0, 0], false)] {
        let mut sim = Sim::new(2, config(true, 3));
        for (c, p) in paths.into_iter().enumerate() {
            sim.engine.set_path(c, p);
        }
        let ids: Vec<u64> = (0..10).map(|_| sim.submit(NFSPROC3_READ)).collect();
        let on_0 = sim.wire.iter().filter(|s| s.channel == 0).count();
        assert!(on_0 > 0);
        sim.fail(0);
        assert_eq!(sim.moved, [on_0], "the Close says how many calls moved");
        sim.reply_all_but(None);
        sim.assert_each_once(ids);
        let t = sim.engine.stats(0).unwrap().raw_snapshot();
        let (same, other) = if other_path { (0, on_0) } else { (on_0, 0) };
        assert_eq!(
            (t.moved_same_path as usize, t.moved_other_path as usize),
            (same, other),
            "paths {paths:?}"
        );
        assert_eq!(t.lost as usize, on_0, "lost attempts are not replies");
        assert_eq!(t.receives(), 0, "channel 0 received nothing");
        let t1 = sim.engine.stats(1).unwrap().raw_snapshot();
        assert_eq!(
            (t1.moved_same_path, t1.moved_other_path, t1.lost),
            (0, 0, 0)
        );
        assert_eq!(t1.receives(), 10, "channel 1 answered every call");
        assert_eq!(t1.retransmits as usize, on_0);
    }
}

#[test]
fn a_black_holed_path_fails_over_at_exactly_timeo() {
    let mut sim = Sim::new(2, config(true, 3));
    let ids: Vec<u64> = (0..8).map(|_| sim.submit(NFSPROC3_READ)).collect();
    // Channel 0 swallows everything; channel 1 answers.
    sim.reply_all_but(Some(0));
    let silent: Vec<Sent> = sim.wire.clone();
    assert!(!silent.is_empty());
    sim.run_until(TIMEO - 1);
    assert!(sim.closed.is_empty(), "nothing fails before timeo");
    assert_eq!(
        sim.engine.next_deadline(),
        Some(TIMEO),
        "the deadline is timeo"
    );
    sim.run_until(TIMEO);
    assert_eq!(
        sim.closed,
        vec![(0, 1)],
        "the silent channel fails at timeo"
    );
    for s in &silent {
        let sends = sim.sends_of(s.id);
        assert_eq!(sends.len(), 2);
        assert_eq!(sends[1], (TIMEO, sends[1].1));
        assert_eq!(sends[1].1.channel, 1, "failed over to the other path");
    }
    let t = &sim.engine.stats(0).unwrap().raw_snapshot();
    assert_eq!(t.timeouts as usize, silent.len());
    sim.reply_all_but(Some(0));
    sim.assert_each_once(ids);
}

#[test]
fn with_every_path_down_a_hard_mount_parks_its_calls_until_one_reconnects() {
    let mut sim = Sim::new(2, config(true, 1));
    sim.reachable = vec![false, false];
    sim.fail(0);
    sim.fail(1);
    let ids: Vec<u64> = (0..4).map(|_| sim.submit(NFSPROC3_READ)).collect();
    assert!(sim.wire.is_empty(), "nothing can be sent");
    assert_eq!(sim.engine.waiting(), 4, "parked");
    // An hour of reconnects refused: still parked, never failed.
    sim.run_until(3_600_000 * MS);
    assert!(ids.iter().all(|id| sim.ends(*id).is_empty()));
    assert_eq!(sim.engine.waiting(), 4);
    sim.reachable[1] = true;
    let t = sim.engine.next_deadline().unwrap();
    assert!(t <= sim.now + 5_000 * MS, "back-off capped at 5 s");
    sim.run_until(t);
    assert_eq!(sim.wire.len(), 4, "sent as soon as channel 1 connected");
    assert!(sim.wire.iter().all(|s| s.channel == 1));
    sim.reply_all_but(None);
    sim.assert_each_once(ids.iter().copied());
    assert!(ids
        .iter()
        .all(|id| matches!(sim.ends(*id)[0], End::Replied { .. })));
}

#[test]
fn refused_parked_calls_fail_on_a_hard_mount_only_while_no_channel_is_up() {
    let mut sim = Sim::new(2, config(true, 1));
    sim.tick_at(0);
    // A channel up: nothing is refused (the calls go there).
    assert_eq!(sim.engine.refuse_parked(), 0);
    sim.reachable = vec![false, false];
    sim.fail(0);
    sim.fail(1);
    let ids: Vec<u64> = (0..3).map(|_| sim.submit(NFSPROC3_READ)).collect();
    assert_eq!(sim.engine.waiting(), 3, "parked");
    // The driver found that no connection can be made (no credentials).
    assert_eq!(sim.engine.refuse_parked(), 3);
    sim.pump();
    assert_eq!(sim.engine.waiting(), 0);
    for id in &ids {
        assert_eq!(
            sim.ends(*id),
            &[End::Failed(Failure::Refused { attempts: 0 })]
        );
    }
    // A later call parks, and goes when a channel comes up.
    let later = sim.submit(NFSPROC3_READ);
    sim.reachable[0] = true;
    let t = sim.engine.next_deadline().unwrap();
    sim.run_until(t);
    assert_eq!(sim.wire.len(), 1, "sent once channel 0 connected");
    sim.reply_all_but(None);
    assert!(matches!(sim.ends(later)[0], End::Replied { .. }));
}

#[test]
fn with_every_path_down_a_soft_mount_fails_after_timeo_times_retrans_plus_one() {
    let retrans = 2;
    let mut sim = Sim::new(1, config(false, retrans));
    sim.reachable = vec![false];
    sim.fail(0);
    let id = sim.submit(NFSPROC3_READ);
    let limit = TIMEO * (retrans as u64 + 1);
    sim.run_until(limit - 1);
    assert!(
        sim.ends(id).is_empty(),
        "still waiting just before the limit"
    );
    sim.run_until(limit);
    assert_eq!(
        sim.ends(id),
        &[End::Failed(Failure::TimedOut { attempts: 0 })],
        "fails at timeo x (retrans + 1)"
    );
}

#[test]
fn a_soft_mount_gives_up_after_retrans_retransmissions_of_a_silent_call() {
    let mut sim = Sim::new(1, config(false, 2));
    let id = sim.submit(NFSPROC3_READ);
    // Every attempt times out; the channel reconnects in between.
    while sim.ends(id).is_empty() && sim.now < 60 * TIMEO {
        let Some(t) = sim.engine.next_deadline() else {
            break;
        };
        sim.tick_at(t.max(sim.now));
        sim.wire.clear(); // silence
    }
    assert_eq!(
        sim.ends(id),
        &[End::Failed(Failure::TimedOut { attempts: 3 })]
    );
    assert_eq!(sim.sends_of(id).len(), 3, "sent retrans + 1 times");
}

#[test]
fn jukebox_is_retried_after_200_ms_doubling_to_1600_ms_on_a_hard_mount() {
    let mut sim = Sim::new(1, config(true, 1));
    let id = sim.submit(NFSPROC3_READ);
    for pause in [200, 400, 800, 1600, 1600, 1600] {
        let s = sim.wire[0];
        sim.reply(s, Answer::Jukebox);
        assert!(
            sim.ends(id).is_empty(),
            "JUKEBOX is never handed out on a hard mount"
        );
        assert!(sim.engine.take_wake(), "the driver's timer must wake early");
        let t0 = sim.now;
        sim.run_until(t0 + pause * MS - 1);
        assert!(sim.wire.is_empty(), "not re-sent before {pause} ms");
        sim.run_until(t0 + pause * MS);
        assert_eq!(sim.wire.len(), 1, "re-sent after {pause} ms");
    }
    let s = sim.wire[0];
    sim.reply(s, Answer::Final);
    assert_eq!(sim.ends(id), &[End::Replied { attempts: 7 }]);
    let stats = sim.engine.stats(0).unwrap().raw_snapshot();
    assert_eq!(
        stats.retransmits, 0,
        "a JUKEBOX re-send is not a retransmission"
    );
}

#[test]
fn jukebox_on_a_soft_mount_is_retried_retrans_times_then_handed_out() {
    let mut sim = Sim::new(1, config(false, 2));
    let id = sim.submit(NFSPROC3_READ);
    for pause in [200, 400] {
        let s = sim.wire[0];
        sim.reply(s, Answer::Jukebox);
        let t = sim.now + pause * MS;
        sim.run_until(t);
    }
    let s = sim.wire[0];
    sim.reply(s, Answer::Jukebox);
    assert_eq!(
        sim.ends(id),
        &[End::Replied { attempts: 3 }],
        "the third JUKEBOX goes to the caller (EAGAIN)"
    );
}

#[test]
fn a_late_reply_from_a_failed_channel_after_the_reissue_is_dropped() {
    let mut sim = Sim::new(2, config(true, 3));
    let id = sim.submit(NFSPROC3_READ);
    let first = sim.wire[0];
    sim.fail(first.channel);
    let second = *sim.wire.last().unwrap();
    assert_ne!(second.channel, first.channel);
    // The old connection's reply shows up after all (same epoch tag as
    // when it was sent), and again after the channel reconnected.
    sim.reply(first, Answer::Final);
    assert!(
        sim.ends(id).is_empty(),
        "dropped: the request lives elsewhere now"
    );
    sim.run_until(100 * MS);
    let new_epoch = sim.engine.epoch(first.channel);
    sim.reply(
        Sent {
            epoch: new_epoch,
            ..first
        },
        Answer::Final,
    );
    assert!(
        sim.ends(id).is_empty(),
        "an old XID matches nothing on the new connection"
    );
    sim.reply(second, Answer::Final);
    sim.reply(second, Answer::Final);
    assert_eq!(
        sim.ends(id),
        &[End::Replied { attempts: 2 }],
        "delivered once"
    );
}

#[test]
fn a_retried_remove_answering_noent_counts_as_success() {
    let mut sim = Sim::new(2, config(true, 3));
    let id = sim.submit(NFSPROC3_REMOVE);
    let first = sim.wire[0];
    // The server ran the first copy, its reply was lost with the channel.
    sim.fail(first.channel);
    let again = *sim.wire.last().unwrap();
    sim.reply(again, Answer::Final);
    let [End::Replied { attempts }] = sim.ends(id) else {
        panic!("{:?}", sim.ends(id));
    };
    assert_eq!(*attempts, 2);
    assert_eq!(
        classify_retried(NFSPROC3_REMOVE, *attempts, nfsstat3::NFS3ERR_NOENT),
        RetriedStatus::TreatAsSuccess
    );
}

#[test]
fn submissions_beyond_the_client_limit_are_given_back() {
    let mut cfg = config(true, 3);
    cfg.max_client_inflight = 3;
    let mut sim = Sim::new(1, cfg);
    for _ in 0..3 {
        sim.submit(NFSPROC3_READ);
    }
    let refused = sim.engine.submit(
        Req {
            id: 99,
            proc_: NFSPROC3_READ,
        },
        0,
    );
    assert!(refused.is_err(), "the caller waits for room");
    let s = sim.wire[0];
    sim.reply(s, Answer::Final);
    assert!(sim
        .engine
        .submit(
            Req {
                id: 99,
                proc_: NFSPROC3_READ
            },
            0
        )
        .is_ok());
}

#[test]
fn the_next_deadline_is_the_earliest_attempt_and_nothing_when_idle() {
    let mut sim = Sim::new(1, config(true, 3));
    // Idle: only the route check (every 100 ms while a path is up).
    assert_eq!(sim.engine.next_deadline(), Some(0));
    sim.tick_at(0);
    assert_eq!(sim.engine.next_deadline(), Some(100 * MS));
    sim.now = 30 * MS;
    sim.submit(NFSPROC3_READ);
    sim.tick_at(100 * MS);
    assert_eq!(sim.engine.next_deadline(), Some(200 * MS));
    sim.engine.shutdown();
    sim.pump();
    assert_eq!(
        sim.engine.next_deadline(),
        None,
        "nothing to wait for after shutdown"
    );
    assert_eq!(sim.ends(0), &[End::Failed(Failure::Shutdown)]);
}

/// One step of a random schedule.
#[derive(Debug, Clone)]
enum Step {
    Submit,
    /// Answer the n-th send on the wire (mod its length), maybe JUKEBOX.
    Reply(usize, bool),
    /// Answer a send that was answered (or lost) before.
    Replay(usize),
    Fail(usize),
    Cut(usize),
    Restore(usize),
    Tick(u64),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => Just(Step::Submit),
        4 => (any::<usize>(), prop::bool::weighted(0.1)).prop_map(|(n, j)| Step::Reply(n, j)),
        1 => any::<usize>().prop_map(Step::Replay),
        1 => (0..3usize).prop_map(Step::Fail),
        1 => (0..3usize).prop_map(Step::Cut),
        1 => (0..3usize).prop_map(Step::Restore),
        2 => (0..3 * TIMEO).prop_map(Step::Tick),
    ]
}

proptest! {
    /// Any interleaving of submissions, replies (JUKEBOX too), replayed
    /// replies, channel failures, unreachable channels and time completes
    /// every request exactly once: never twice during the schedule, and
    /// each once all channels are reachable again and every send answered.
    #[test]
    fn any_schedule_completes_every_request_exactly_once(
        steps in prop::collection::vec(step(), 1..200),
        hard in any::<bool>(),
    ) {
        let mut sim = Sim::new(3, config(hard, 2));
        for st in steps {
            match st {
                Step::Submit => {
                    let id = sim.next_id;
                    sim.next_id += 1;
                    if sim.engine.submit(Req { id, proc_: NFSPROC3_READ }, sim.now).is_err() {
                        sim.ends.entry(id).or_default().push(End::Failed(Failure::Shutdown));
                    }
                    sim.pump();
                }
                Step::Reply(n, jukebox) if !sim.wire.is_empty() => {
                    let s = sim.wire[n % sim.wire.len()];
                    sim.reply(s, if jukebox { Answer::Jukebox } else { Answer::Final });
                }
                Step::Replay(n) if !sim.sends.is_empty() => {
                    let s = sim.sends[n % sim.sends.len()].1;
                    sim.reply(s, Answer::Final);
                }
                Step::Fail(c) => sim.fail(c),
                Step::Cut(c) => sim.reachable[c] = false,
                Step::Restore(c) => sim.reachable[c] = true,
                Step::Tick(dt) => {
                    let t = sim.now + dt;
                    sim.run_until(t);
                }
                _ => {}
            }
            for (id, ends) in &sim.ends {
                prop_assert!(ends.len() <= 1, "request {} completed twice: {:?}", id, ends);
            }
        }
        // Heal: everything reachable, answer everything, let time pass.
        sim.reachable = vec![true; 3];
        for _ in 0..50 {
            sim.reply_all_but(None);
            let t = sim.now + 2 * TIMEO;
            sim.run_until(t);
            if sim.wire.is_empty() && sim.engine.waiting() == 0 && sim.engine.in_flight() == 0 {
                break;
            }
        }
        for id in 0..sim.next_id {
            prop_assert_eq!(sim.ends(id).len(), 1, "request {} ended {:?}", id, sim.ends(id));
        }
    }
}

#[test]
fn a_reseeded_channel_continues_past_every_xid_of_its_previous_user() {
    // Two engines on one connection, one after the other (a spare
    // connection handed on: crates/client/src/io/spare.rs). The second,
    // seeded past what the first used, repeats none of its XIDs.
    let mut first = Sim::new(1, config(true, 3));
    let mut used = Vec::new();
    for _ in 0..10 {
        first.submit(NFSPROC3_READ);
    }
    for s in std::mem::take(&mut first.wire) {
        used.push(s.xid);
        first.reply(s, Answer::Final);
    }
    let mut second = Sim::new(1, config(true, 3));
    // Seeded as spare.rs does: past the XIDs sent and the table's slots.
    assert!(second.engine.reseed(0, 10 + 64));
    for _ in 0..10 {
        second.submit(NFSPROC3_READ);
    }
    for s in &second.wire {
        assert!(!used.contains(&s.xid), "XID {:#x} repeated", s.xid);
    }
    // Without the reseed the second repeats the first's XIDs.
    let mut third = Sim::new(1, config(true, 3));
    third.submit(NFSPROC3_READ);
    assert!(used.contains(&third.wire[0].xid));
    // Not with calls in flight: their XIDs would no longer match.
    assert!(!second.engine.reseed(0, 1));
}
