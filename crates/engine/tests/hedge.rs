//! Hedged reads in simulated time (`directnfs_engine::hedge`): a READ
//! outstanding past the hedge delay is sent again on another channel, the
//! first reply wins, the other copy's reply matches nothing; writes are
//! never hedged; a copy lost with its channel leaves the other to carry
//! the request; shutdown completes a hedged request once.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use directnfs_engine::retry::{Backoff, RetryPolicy};
use directnfs_engine::{Action, Answer, Config, Engine, Failure, HedgePolicy, Request};
use directnfs_wire::nfs3::{NFSPROC3_READ, NFSPROC3_WRITE};

const MS: u64 = 1_000_000;

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
    fn hedgeable(&self) -> bool {
        self.proc_ == NFSPROC3_READ
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Sent {
    channel: usize,
    epoch: u64,
    xid: u32,
    id: u64,
}

/// An engine of `channels` channels, channel `i` on path `i`, all up.
fn engine(channels: usize, hedge: bool) -> (Engine<Req>, Vec<u64>) {
    let mut e = Engine::new(
        Config {
            policy: RetryPolicy {
                timeo: Duration::from_secs(10),
                retrans: 3,
                hard: true,
            },
            backoff: Backoff::default(),
            max_inflight: 64,
            max_client_inflight: 1024,
        },
        channels,
    );
    e.set_hedge(hedge.then_some(HedgePolicy {
        min: Duration::from_millis(2),
        max: Duration::from_millis(20),
    }));
    let epochs = (0..channels)
        .map(|c| {
            e.set_path(c, c);
            e.on_connected(c, 0)
        })
        .collect();
    // The first route check, out of the way of the deadlines.
    e.on_tick(0);
    while e.poll_action().is_some() {}
    (e, epochs)
}

/// The sends queued; panics on a completion.
fn sends(e: &mut Engine<Req>) -> Vec<Sent> {
    let mut out = Vec::new();
    while let Some(a) = e.poll_action() {
        match a {
            Action::Send {
                channel,
                epoch,
                xid,
                call,
                ..
            } => out.push(Sent {
                channel,
                epoch,
                xid,
                id: call.id,
            }),
            Action::Complete { call, failure } => panic!("{call:?} failed: {failure:?}"),
            _ => {}
        }
    }
    out
}

fn read(id: u64) -> Req {
    Req {
        id,
        proc_: NFSPROC3_READ,
    }
}

fn reply(e: &mut Engine<Req>, s: Sent, now: u64) -> Option<u64> {
    e.on_reply(s.channel, s.epoch, s.xid, Answer::Final, now)
        .map(|d| d.into_call().id)
}

/// Submits one READ and lets the hedge delay (20 ms before any latency
/// is known) pass: the first copy and the hedge.
fn hedged_read(e: &mut Engine<Req>) -> (Sent, Sent) {
    e.submit(read(1), 0).unwrap();
    let first = sends(e);
    assert_eq!(first.len(), 1);
    assert_eq!(e.next_deadline(), Some(20 * MS), "the hedge is due then");
    e.on_tick(19 * MS);
    assert!(sends(e).is_empty(), "not hedged before the delay");
    e.on_tick(20 * MS);
    let hedge = sends(e);
    assert_eq!(hedge.len(), 1, "hedged once the delay passed");
    assert_eq!(hedge[0].id, 1);
    assert_ne!(hedge[0].channel, first[0].channel, "on another channel");
    (first[0], hedge[0])
}

#[test]
fn a_hedge_answered_first_wins_and_the_late_first_copy_is_dropped() {
    let (mut e, _) = engine(2, true);
    let (first, hedge) = hedged_read(&mut e);
    assert_eq!(e.in_flight(), 2);
    assert_eq!(reply(&mut e, hedge, 21 * MS), Some(1));
    assert_eq!(e.in_flight(), 0, "the first copy left its table");
    assert_eq!(reply(&mut e, first, 50 * MS), None, "no double delivery");
    let h = e.stats(hedge.channel).unwrap().raw_snapshot();
    assert_eq!((h.hedges_sent, h.hedges_won), (1, 1));
    let f = e.stats(first.channel).unwrap().raw_snapshot();
    assert_eq!((f.lost, f.errors, f.inflight), (1, 0, 0));
    assert_eq!(e.load(first.channel).requests, 0);
}

#[test]
fn a_first_copy_answered_first_wins_and_the_late_hedge_is_dropped() {
    let (mut e, _) = engine(2, true);
    let (first, hedge) = hedged_read(&mut e);
    assert_eq!(reply(&mut e, first, 21 * MS), Some(1));
    assert_eq!(e.in_flight(), 0);
    assert_eq!(reply(&mut e, hedge, 22 * MS), None);
    let h = e.stats(hedge.channel).unwrap().raw_snapshot();
    assert_eq!((h.hedges_sent, h.hedges_won), (1, 0));
}

#[test]
fn a_read_answered_before_the_delay_is_never_hedged() {
    let (mut e, _) = engine(2, true);
    e.submit(read(1), 0).unwrap();
    let s = sends(&mut e);
    assert_eq!(reply(&mut e, s[0], MS), Some(1));
    e.on_tick(30 * MS);
    assert!(sends(&mut e).is_empty());
}

#[test]
fn writes_are_never_hedged() {
    let (mut e, _) = engine(2, true);
    e.submit(
        Req {
            id: 1,
            proc_: NFSPROC3_WRITE,
        },
        0,
    )
    .unwrap();
    assert_eq!(sends(&mut e).len(), 1);
    e.on_tick(100 * MS);
    assert!(sends(&mut e).is_empty());
}

#[test]
fn with_hedging_off_a_slow_read_waits_for_its_reply() {
    let (mut e, _) = engine(2, false);
    e.submit(read(1), 0).unwrap();
    assert_eq!(sends(&mut e).len(), 1);
    e.on_tick(100 * MS);
    assert!(sends(&mut e).is_empty());
}

#[test]
fn one_channel_up_means_no_hedge() {
    let (mut e, _) = engine(1, true);
    e.submit(read(1), 0).unwrap();
    assert_eq!(sends(&mut e).len(), 1);
    e.on_tick(100 * MS);
    assert!(sends(&mut e).is_empty());
}

#[test]
fn a_copy_lost_with_its_channel_leaves_the_other_to_carry_the_read() {
    let (mut e, epochs) = engine(2, true);
    let (first, hedge) = hedged_read(&mut e);
    e.on_channel_failed(first.channel, epochs[first.channel], 21 * MS);
    assert!(
        sends(&mut e).is_empty(),
        "not re-sent: the hedge is in flight"
    );
    assert_eq!(e.in_flight(), 1);
    assert_eq!(reply(&mut e, hedge, 22 * MS), Some(1));
    assert_eq!(e.in_flight(), 0);
}

#[test]
fn shutdown_completes_a_hedged_read_once() {
    let (mut e, _) = engine(2, true);
    let _ = hedged_read(&mut e);
    e.shutdown();
    let mut failed = 0;
    while let Some(a) = e.poll_action() {
        if let Action::Complete { call, failure } = a {
            assert_eq!((call.id, failure), (1, Failure::Shutdown));
            failed += 1;
        }
    }
    assert_eq!(failed, 1);
}

#[test]
fn the_hedge_delay_follows_the_fastest_paths_recent_reads() {
    let (mut e, _) = engine(2, true);
    let mut now = 0;
    // Enough 3 ms reads on each path for a full window.
    for id in 0..80 {
        e.submit(read(id), now).unwrap();
        let s = sends(&mut e);
        now += 3 * MS;
        assert_eq!(reply(&mut e, s[0], now), Some(id));
    }
    assert_eq!(e.hedge_delay(), Some(3 * MS));
    e.submit(read(100), now).unwrap();
    let first = sends(&mut e);
    e.on_tick(now + 3 * MS);
    let hedge = sends(&mut e);
    assert_eq!(hedge.len(), 1, "hedged after 3 ms, not 20");
    assert_ne!(hedge[0].channel, first[0].channel);
}

/// What a simulated run saw.
struct Run {
    /// Each read's latency, in the order they completed.
    latencies: Vec<u64>,
    /// First copies sent per channel.
    first: Vec<u64>,
    /// Hedges sent.
    hedges: u64,
    now: u64,
}

/// `reads` READs one at a time through `e` (channel `i` on path `i`),
/// each copy answered `latency(channel, now)` after it is sent, the
/// engine ticked every 100 µs; starts at `now`.
fn simulate(
    e: &mut Engine<Req>,
    reads: u64,
    mut now: u64,
    latency: impl Fn(usize, u64) -> u64,
) -> Run {
    const STEP: u64 = 100_000;
    let mut run = Run {
        latencies: Vec::new(),
        first: vec![0; e.channel_count()],
        hedges: 0,
        now,
    };
    // Replies due: (at, send).
    let mut due: Vec<(u64, Sent)> = Vec::new();
    let mut next_id = 1_000_000 * (now / MS + 1);
    let mut current: Option<(u64, u64)> = None;
    let mut done = 0;
    while done < reads {
        if current.is_none() {
            e.submit(read(next_id), now).unwrap();
            current = Some((next_id, now));
            next_id += 1;
        }
        e.on_tick(now);
        for s in sends(e) {
            if current.is_some_and(|(id, _)| id == s.id) && due.iter().any(|d| d.1.id == s.id) {
                run.hedges += 1;
            } else {
                run.first[s.channel] += 1;
            }
            due.push((now + latency(s.channel, now), s));
        }
        due.sort_by_key(|d| d.0);
        while due.first().is_some_and(|d| d.0 <= now) {
            let (_, s) = due.remove(0);
            if let Some(id) = reply(e, s, now) {
                let (cur, start) = current.take().unwrap();
                assert_eq!(id, cur, "delivered once, the read in flight");
                run.latencies.push(now - start);
                done += 1;
            }
        }
        now += STEP;
    }
    // The losers' late replies, for their timing.
    for (at, s) in due {
        assert_eq!(reply(e, s, at.max(now)), None, "no double delivery");
    }
    run.now = now + 100 * MS;
    run
}

fn p99(l: &[u64]) -> u64 {
    let mut l = l.to_vec();
    l.sort_unstable();
    l[(l.len() * 99).div_ceil(100) - 1]
}

#[test]
fn first_copies_avoid_a_path_far_slower_than_the_best() {
    let (mut e, _) = engine(2, true);
    // Path 0: 1 ms; path 1: 50 ms. Warm up until both windows are full
    // (path 1's from the late replies of its copies that lost).
    let slow = |c: usize, _| if c == 1 { 50 * MS } else { MS };
    let warm = simulate(&mut e, 200, 0, slow);
    assert!(e.path_steered_off(1), "path 1 is seen slow");
    assert!(!e.path_steered_off(0));
    let run = simulate(&mut e, 1000, warm.now, slow);
    // No first copy goes to the slow path; one READ in PROBE_EVERY sends
    // a probe copy there besides (counted as a second copy), and nothing
    // else is hedged.
    assert_eq!(run.first[1], 0, "first copies: {:?}", run.first);
    let probes = 1000 / directnfs_engine::hedge::PROBE_EVERY;
    assert!(
        (probes - 1..=probes + 1).contains(&run.hedges),
        "second copies: {}",
        run.hedges
    );
    // The p99 is the fast path's, not hedge delay plus a round trip.
    assert!(
        p99(&run.latencies) <= MS + MS / 5,
        "{}",
        p99(&run.latencies)
    );
}

#[test]
fn a_steered_off_path_is_probed_and_comes_back_once_it_answers_in_time() {
    let (mut e, _) = engine(2, true);
    let warm = simulate(&mut e, 200, 0, |c, _| if c == 1 { 50 * MS } else { MS });
    assert!(e.path_steered_off(1));
    // Path 1 recovers: 1.2 ms from now on.
    let run = simulate(
        &mut e,
        400,
        warm.now,
        |c, _| {
            if c == 1 {
                MS + MS / 5
            } else {
                MS
            }
        },
    );
    assert!(
        !e.path_steered_off(1),
        "a probe answered in time restored it"
    );
    assert!(
        run.first[1] >= 100,
        "first copies on path 1 again: {:?}",
        run.first
    );
}

#[test]
fn hedges_stay_within_the_budget_when_every_path_is_slow() {
    let (mut e, _) = engine(2, true);
    // Both paths 25 ms: the delay is clamped to 20 ms, so every READ is
    // past it: without a budget every one would be hedged.
    let run = simulate(&mut e, 400, 0, |_, _| 25 * MS);
    let allowed = 400 * directnfs_engine::hedge::BUDGET_PERCENT / 100
        + directnfs_engine::hedge::BUDGET_BURST
        + 1;
    assert!(
        run.hedges <= allowed && run.hedges >= allowed - 3,
        "{} hedges for 400 reads",
        run.hedges
    );
    assert!(e.hedges_over_budget() >= 300);
    assert!(!e.path_steered_off(0) && !e.path_steered_off(1));
}
