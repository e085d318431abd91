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
