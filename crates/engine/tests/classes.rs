//! I/O classes in the engine (`directnfs_engine::class`), in simulated
//! time: which channel each class goes on, the log headroom beyond
//! `max_client_inflight`, the parked queue's order, and that classes off
//! changes nothing. The same against NFS-Ganesha is
//! `crates/client/tests/classes.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use directnfs_engine::retry::{Backoff, RetryPolicy};
use directnfs_engine::{Action, Answer, Config, Engine, IoClass, Request};
use directnfs_wire::nfs3::NFSPROC3_READ;

const MS: u64 = 1_000_000;

#[derive(Debug, Clone, PartialEq, Eq)]
struct Req {
    id: u64,
    class: IoClass,
    weight: u64,
}

impl Request for Req {
    fn proc_(&self) -> u32 {
        NFSPROC3_READ
    }
    fn weight(&self) -> u64 {
        self.weight
    }
    fn reply_estimate(&self) -> u64 {
        self.weight + 120
    }
    fn class(&self) -> IoClass {
        self.class
    }
}

/// Two paths of three channels each (0-2, 3-5), all up; 2 and 5 are the
/// lanes when `classes` is on.
fn engine(classes: bool, max_client_inflight: usize) -> Engine<Req> {
    let mut e = Engine::new(
        Config {
            policy: RetryPolicy {
                timeo: Duration::from_secs(1),
                retrans: 3,
                hard: true,
            },
            backoff: Backoff::default(),
            max_inflight: 64,
            max_client_inflight,
        },
        6,
    );
    for c in 0..6 {
        e.set_path(c, c / 3);
        e.begin_connect(c);
        e.on_connected(c, 0);
    }
    e.set_classes(classes);
    if classes {
        e.set_lane(2, true);
        e.set_lane(5, true);
    }
    e
}

/// Submits one request and returns the channel it was sent on (None:
/// parked), or panics if it was refused.
fn send(e: &mut Engine<Req>, id: u64, class: IoClass, weight: u64) -> Option<usize> {
    e.submit(Req { id, class, weight }, MS).expect("refused");
    sent(e).into_iter().find(|s| s.1 == id).map(|s| s.0)
}

/// The sends queued: (channel, id, xid).
fn sent(e: &mut Engine<Req>) -> Vec<(usize, u64, u32)> {
    let mut out = Vec::new();
    while let Some(a) = e.poll_action() {
        if let Action::Send {
            channel, xid, call, ..
        } = a
        {
            out.push((channel, call.id, xid));
        }
    }
    out
}

#[test]
fn log_goes_on_the_lanes_bulk_never_and_data_anywhere() {
    let mut e = engine(true, 1024);
    let mut bulk = Vec::new();
    for id in 0..40 {
        bulk.push(send(&mut e, id, IoClass::Bulk, 1 << 20).unwrap());
    }
    assert!(
        bulk.iter().all(|&c| c != 2 && c != 5),
        "bulk on a lane: {bulk:?}"
    );
    // Bulk spread over the four other channels.
    for c in [0, 1, 3, 4] {
        assert!(bulk.contains(&c), "channel {c} carried no bulk: {bulk:?}");
    }
    // Log goes on a lane even though the lanes are what is idle anyway;
    // then a second log request goes on the other (less loaded) lane.
    let first = send(&mut e, 100, IoClass::Log, 8192).unwrap();
    let second = send(&mut e, 101, IoClass::Log, 8192).unwrap();
    assert!([2, 5].contains(&first) && [2, 5].contains(&second));
    assert_ne!(first, second);
    // Log stays on the lanes however loaded they get.
    for id in 102..140 {
        let c = send(&mut e, id, IoClass::Log, 1 << 20).unwrap();
        assert!(c == 2 || c == 5, "log request {id} on channel {c}");
    }
    // Data takes the least-loaded channel, lanes included: with the lanes
    // now the busiest, the other channels; with them idle, a lane.
    let mut e = engine(true, 1024);
    let lanes: Vec<_> = (0..6)
        .map(|id| send(&mut e, id, IoClass::Data, 8192).unwrap())
        .collect();
    assert!(lanes.contains(&2) && lanes.contains(&5), "{lanes:?}");
}

#[test]
fn with_classes_off_every_class_is_spread_like_data() {
    let mut e = engine(false, 1024);
    let mut used = Vec::new();
    for id in 0..6 {
        used.push(send(&mut e, id, IoClass::Bulk, 1 << 20).unwrap());
    }
    used.sort_unstable();
    assert_eq!(used, vec![0, 1, 2, 3, 4, 5]);
    // Log goes on the least loaded channel: one that carries no bulk
    // reply is none, so it lands behind a 1 MiB read.
    let c = send(&mut e, 10, IoClass::Log, 8192).unwrap();
    assert!(c < 6);
    // And the window is the window: no headroom for log.
    let mut e = engine(false, 4);
    for id in 0..4 {
        send(&mut e, id, IoClass::Bulk, 1 << 20);
    }
    let refused = e.submit(
        Req {
            id: 9,
            class: IoClass::Log,
            weight: 8192,
        },
        MS,
    );
    assert!(refused.is_err());
}

#[test]
fn a_log_request_is_admitted_past_a_window_full_of_bulk() {
    let mut e = engine(true, 8);
    for id in 0..8 {
        send(&mut e, id, IoClass::Bulk, 1 << 20);
    }
    let refused = e.submit(
        Req {
            id: 50,
            class: IoClass::Bulk,
            weight: 1 << 20,
        },
        MS,
    );
    assert!(refused.is_err(), "bulk admitted past the window");
    let refused = e.submit(
        Req {
            id: 51,
            class: IoClass::Data,
            weight: 8192,
        },
        MS,
    );
    assert!(refused.is_err(), "data admitted past the window");
    // Log: up to LOG_HEADROOM more, then refused too (bounded).
    for id in 0..directnfs_engine::class::LOG_HEADROOM as u64 {
        let c = send(&mut e, 100 + id, IoClass::Log, 8192).unwrap();
        assert!(c == 2 || c == 5);
    }
    let refused = e.submit(
        Req {
            id: 200,
            class: IoClass::Log,
            weight: 8192,
        },
        MS,
    );
    assert!(refused.is_err(), "log headroom is not bounded");
}

#[test]
fn without_its_lane_log_takes_any_channel_and_bulk_takes_a_lone_lane() {
    let mut e = engine(true, 1024);
    // Both lanes fail: log goes elsewhere rather than parking.
    for lane in [2, 5] {
        let epoch = e.epoch(lane);
        e.on_channel_failed(lane, epoch, MS);
    }
    let c = send(&mut e, 1, IoClass::Log, 8192).unwrap();
    assert!(c != 2 && c != 5);
    // Only the lanes up: bulk takes them rather than parking.
    let mut e = engine(true, 1024);
    for c in [0, 1, 3, 4] {
        let epoch = e.epoch(c);
        e.on_channel_failed(c, epoch, MS);
    }
    let c = send(&mut e, 2, IoClass::Bulk, 1 << 20).unwrap();
    assert!(c == 2 || c == 5);
}

#[test]
fn a_parked_log_request_is_sent_before_the_bulk_parked_ahead_of_it() {
    let mut e = engine(true, 1024);
    for c in 0..6 {
        let epoch = e.epoch(c);
        e.on_channel_failed(c, epoch, MS);
    }
    sent(&mut e);
    for id in 0..5 {
        assert_eq!(send(&mut e, id, IoClass::Bulk, 1 << 20), None);
    }
    assert_eq!(send(&mut e, 99, IoClass::Log, 8192), None);
    assert_eq!(e.waiting(), 6);
    // One channel comes back (not a lane): the log request goes first.
    e.begin_connect(0);
    e.on_connected(0, 2 * MS);
    let order: Vec<u64> = sent(&mut e).into_iter().map(|s| s.1).collect();
    assert_eq!(order.first(), Some(&99), "{order:?}");
    assert_eq!(order.len(), 6);
}

#[test]
fn bulk_still_progresses_while_log_flows_on_the_lane() {
    // The window full of bulk plus log requests on the lanes: each bulk
    // reply lets one more bulk request in once the log ones are answered.
    let mut e = engine(true, 8);
    let mut bulk = Vec::new();
    for id in 0..8 {
        e.submit(
            Req {
                id,
                class: IoClass::Bulk,
                weight: 1 << 20,
            },
            MS,
        )
        .unwrap();
        bulk.extend(sent(&mut e));
    }
    let mut logs = Vec::new();
    for id in 0..4 {
        e.submit(
            Req {
                id: 100 + id,
                class: IoClass::Log,
                weight: 8192,
            },
            MS,
        )
        .unwrap();
        logs.extend(sent(&mut e));
    }
    assert_eq!(e.in_flight(), 12);
    for (c, _, xid) in logs {
        let epoch = e.epoch(c);
        assert!(e.on_reply(c, epoch, xid, Answer::Final, 2 * MS).is_some());
    }
    let (c, _, xid) = bulk.remove(0);
    let epoch = e.epoch(c);
    assert!(e.on_reply(c, epoch, xid, Answer::Final, 2 * MS).is_some());
    let c = send(&mut e, 8, IoClass::Bulk, 1 << 20).unwrap();
    assert!(c != 2 && c != 5);
}
