//! The fault schedule: a list of timed faults drawn from one seed, so that
//! a failing run can be replayed with the same faults in the same order.
//!
//! Only the *sequence* is reproducible: the moments are "not before", and a
//! server restart (several seconds of `netns.sh`) delays what follows it.
//! The rules the generator keeps:
//!
//! * at least one path is healthy apart from server kills (a hard mount
//!   with every path gone only waits; the kills cover that case),
//! * a path carries one fault at a time and is restored after 1-8 s,
//! * a JUKEBOX burst (a share of the proxy path's READ/WRITE/COMMIT calls
//!   answered NFS3ERR_JUKEBOX) lasts 2-10 s,
//! * server kills are at least [`KILL_GAP`] apart; half of them start a
//!   JUKEBOX burst that outlasts the restart, so that the re-sends of the
//!   first fsync after it (the repair of what the server lost) meet
//!   JUKEBOX too,
//! * nothing starts in the first [`WARMUP`] or the last [`COOLDOWN`], and
//!   everything is undone by the end.

use std::fmt;
use std::time::Duration;

use directnfs_testkit::rng::SplitMix64;

/// No faults before the load has run this long.
pub const WARMUP: Duration = Duration::from_secs(5);
/// No new faults this close to the end (everything is restored by then).
pub const COOLDOWN: Duration = Duration::from_secs(8);
/// Shortest time between two server kills.
pub const KILL_GAP: Duration = Duration::from_secs(20);
/// Shares of JUKEBOX answers a burst may use, per mille.
const JUKEBOX_SHARES: [u32; 4] = [100, 300, 700, 1000];

/// One fault (or its undoing). Paths are numbered from 1 as in `netns.sh`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The path's host end goes down.
    Cut(u8),
    /// The path stays up and drops every packet.
    Blackhole(u8),
    /// The path is healthy again.
    Restore(u8),
    /// The proxy answers this share (per mille) of its I/O calls with
    /// NFS3ERR_JUKEBOX.
    JukeboxOn(u32),
    /// The proxy forwards everything again.
    JukeboxOff,
    /// SIGKILL the server, keep it down this many seconds, start it again.
    KillServer {
        /// Seconds down (at least 1, so that the write verifier changes).
        down_secs: u32,
    },
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::Cut(k) => write!(f, "cut path {k}"),
            Fault::Blackhole(k) => write!(f, "black-hole path {k}"),
            Fault::Restore(k) => write!(f, "restore path {k}"),
            Fault::JukeboxOn(pm) => {
                write!(f, "JUKEBOX on ({:.0}% of proxied I/O)", *pm as f64 / 10.0)
            }
            Fault::JukeboxOff => write!(f, "JUKEBOX off"),
            Fault::KillServer { down_secs } => {
                write!(f, "SIGKILL the server, restart after {down_secs} s")
            }
        }
    }
}

/// A fault and when to inject it, from the start of the load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// Not before this moment.
    pub at: Duration,
    /// What to do.
    pub fault: Fault,
}

/// The generator of schedules and workers.
pub type Rng = SplitMix64;

/// Uniform duration in `[lo, hi)`, in whole milliseconds.
fn between(rng: &mut Rng, lo: Duration, hi: Duration) -> Duration {
    let span = hi.saturating_sub(lo).as_millis().max(1) as u64;
    lo + Duration::from_millis(rng.below(span))
}

/// Draws the schedule of a run of `length` over `paths` paths (numbered
/// 1..=paths) from `seed`. Sorted by time; every path is restored and
/// JUKEBOX is off at the end.
pub fn schedule(seed: u64, paths: u8, length: Duration) -> Vec<Event> {
    let mut rng = Rng::new(seed);
    let mut events = Vec::new();
    // Per path: restored at this moment (None: healthy).
    let mut faulted: Vec<Option<Duration>> = vec![None; paths as usize];
    let mut jukebox_until: Option<Duration> = None;
    let mut last_kill: Option<Duration> = None;
    let last_start = length.saturating_sub(COOLDOWN);
    let mut t = WARMUP;
    while t < last_start {
        // Undo what is due by now.
        for (i, until) in faulted.iter_mut().enumerate() {
            if let Some(u) = *until {
                if u <= t {
                    events.push(Event {
                        at: u,
                        fault: Fault::Restore(i as u8 + 1),
                    });
                    *until = None;
                }
            }
        }
        if let Some(u) = jukebox_until {
            if u <= t {
                events.push(Event {
                    at: u,
                    fault: Fault::JukeboxOff,
                });
                jukebox_until = None;
            }
        }
        let healthy: Vec<u8> = (1..=paths)
            .filter(|k| faulted[*k as usize - 1].is_none())
            .collect();
        let kill_ok = last_kill.is_none_or(|k| t >= k + KILL_GAP);
        // Weights: cut 3, black-hole 3, JUKEBOX 2, kill 1.
        let mut choices: Vec<(u64, u8)> = Vec::new();
        if healthy.len() > 1 {
            choices.push((3, 0));
            choices.push((3, 1));
        }
        if jukebox_until.is_none() {
            choices.push((2, 2));
        }
        if kill_ok {
            choices.push((1, 3));
        }
        let total: u64 = choices.iter().map(|c| c.0).sum();
        let mut pick = rng.below(total);
        let mut kind = None;
        for (w, k) in &choices {
            if pick < *w {
                kind = Some(*k);
                break;
            }
            pick -= w;
        }
        let end_by = last_start;
        match kind {
            Some(k @ (0 | 1)) => {
                let path = healthy[rng.below(healthy.len() as u64) as usize];
                let until = (t + between(&mut rng, Duration::from_secs(1), Duration::from_secs(8)))
                    .min(end_by);
                faulted[path as usize - 1] = Some(until);
                let fault = if k == 0 {
                    Fault::Cut(path)
                } else {
                    Fault::Blackhole(path)
                };
                events.push(Event { at: t, fault });
            }
            Some(2) => {
                let share = JUKEBOX_SHARES[rng.below(JUKEBOX_SHARES.len() as u64) as usize];
                let until =
                    (t + between(&mut rng, Duration::from_secs(2), Duration::from_secs(10)))
                        .min(end_by);
                jukebox_until = Some(until);
                events.push(Event {
                    at: t,
                    fault: Fault::JukeboxOn(share),
                });
            }
            Some(_) => {
                last_kill = Some(t);
                let down_secs = 1 + rng.below(2) as u32;
                // Half the kills come with a JUKEBOX burst that outlasts the
                // restart: the first fsync after it re-sends what the server
                // lost, and those re-sends meet JUKEBOX too.
                if jukebox_until.is_none() && rng.below(2) == 0 {
                    let share = JUKEBOX_SHARES[rng.below(JUKEBOX_SHARES.len() as u64) as usize];
                    let lasts = Duration::from_secs(u64::from(down_secs) + 2)
                        + between(&mut rng, Duration::from_secs(2), Duration::from_secs(6));
                    jukebox_until = Some((t + lasts).min(end_by));
                    events.push(Event {
                        at: t,
                        fault: Fault::JukeboxOn(share),
                    });
                }
                events.push(Event {
                    at: t,
                    fault: Fault::KillServer { down_secs },
                });
            }
            None => {}
        }
        t += between(
            &mut rng,
            Duration::from_millis(1000),
            Duration::from_millis(4000),
        );
    }
    // Undo the rest by the start of the cool-down.
    for (i, until) in faulted.iter().enumerate() {
        if let Some(u) = until {
            events.push(Event {
                at: (*u).min(last_start),
                fault: Fault::Restore(i as u8 + 1),
            });
        }
    }
    if let Some(u) = jukebox_until {
        events.push(Event {
            at: u.min(last_start),
            fault: Fault::JukeboxOff,
        });
    }
    events.sort_by_key(|e| e.at);
    events
}

/// Counts of injected faults, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FaultCounts {
    /// Paths cut.
    pub cuts: u64,
    /// Paths black-holed.
    pub blackholes: u64,
    /// Paths restored.
    pub restores: u64,
    /// JUKEBOX bursts.
    pub jukebox_bursts: u64,
    /// Server SIGKILLs (each followed by a restart).
    pub kills: u64,
}

impl FaultCounts {
    /// Adds one fault.
    pub fn add(&mut self, fault: Fault) {
        match fault {
            Fault::Cut(_) => self.cuts += 1,
            Fault::Blackhole(_) => self.blackholes += 1,
            Fault::Restore(_) => self.restores += 1,
            Fault::JukeboxOn(_) => self.jukebox_bursts += 1,
            Fault::JukeboxOff => {}
            Fault::KillServer { .. } => self.kills += 1,
        }
    }

    /// Counts of a whole schedule.
    pub fn of(events: &[Event]) -> Self {
        let mut c = Self::default();
        for e in events {
            c.add(e.fault);
        }
        c
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    const LENGTH: Duration = Duration::from_secs(180);

    #[test]
    fn the_same_seed_gives_the_same_schedule() {
        assert_eq!(schedule(42, 3, LENGTH), schedule(42, 3, LENGTH));
        assert_ne!(schedule(42, 3, LENGTH), schedule(43, 3, LENGTH));
    }

    /// Replays a schedule and checks the rules of the module doc.
    fn check_rules(events: &[Event], paths: u8, length: Duration) {
        let mut faulted = vec![false; paths as usize];
        let mut jukebox = false;
        let mut last_kill: Option<Duration> = None;
        let mut prev = Duration::ZERO;
        for e in events {
            assert!(e.at >= prev, "sorted: {e:?}");
            prev = e.at;
            assert!(e.at <= length - COOLDOWN, "inside the run: {e:?}");
            match e.fault {
                Fault::Cut(k) | Fault::Blackhole(k) => {
                    assert!(e.at >= WARMUP);
                    assert!(!faulted[k as usize - 1], "one fault per path: {e:?}");
                    faulted[k as usize - 1] = true;
                    assert!(faulted.iter().any(|f| !f), "a path stays healthy: {e:?}");
                }
                Fault::Restore(k) => {
                    assert!(faulted[k as usize - 1], "restores a faulted path: {e:?}");
                    faulted[k as usize - 1] = false;
                }
                Fault::JukeboxOn(pm) => {
                    assert!(!jukebox && (1..=1000).contains(&pm));
                    jukebox = true;
                }
                Fault::JukeboxOff => {
                    assert!(jukebox);
                    jukebox = false;
                }
                Fault::KillServer { down_secs } => {
                    assert!((1..=2).contains(&down_secs));
                    if let Some(k) = last_kill {
                        assert!(e.at >= k + KILL_GAP, "kills apart: {e:?}");
                    }
                    last_kill = Some(e.at);
                }
            }
        }
        assert!(faulted.iter().all(|f| !f), "every path restored at the end");
        assert!(!jukebox, "JUKEBOX off at the end");
    }

    #[test]
    fn schedules_keep_their_rules_for_many_seeds() {
        for seed in 0..300 {
            for paths in [2, 3, 4] {
                check_rules(&schedule(seed, paths, LENGTH), paths, LENGTH);
            }
        }
        check_rules(
            &schedule(9, 3, Duration::from_secs(1800)),
            3,
            Duration::from_secs(1800),
        );
    }

    #[test]
    fn a_ci_length_run_injects_every_kind_of_fault() {
        // Over the seeds a CI run may draw, every kind shows up, at a rate of
        // one fault every few seconds.
        let mut total = FaultCounts::default();
        for seed in 0..20 {
            let c = FaultCounts::of(&schedule(seed, 3, LENGTH));
            assert!(
                c.cuts + c.blackholes + c.jukebox_bursts + c.kills >= 30,
                "{c:?}"
            );
            assert!(c.kills >= 1, "seed {seed}: {c:?}");
            total.cuts += c.cuts;
            total.blackholes += c.blackholes;
            total.jukebox_bursts += c.jukebox_bursts;
        }
        assert!(total.cuts > 0 && total.blackholes > 0 && total.jukebox_bursts > 0);
    }

    #[test]
    fn some_kills_come_with_a_jukebox_burst_that_outlasts_the_restart() {
        let mut with_burst = 0;
        for seed in 0..20 {
            let events = schedule(seed, 3, LENGTH);
            for (i, e) in events.iter().enumerate() {
                let Fault::KillServer { down_secs } = e.fault else {
                    continue;
                };
                let burst = events[..i]
                    .iter()
                    .rev()
                    .take_while(|b| b.at == e.at)
                    .any(|b| matches!(b.fault, Fault::JukeboxOn(_)));
                if burst {
                    with_burst += 1;
                    let off = events[i..]
                        .iter()
                        .find(|o| o.fault == Fault::JukeboxOff)
                        .expect("the burst ends");
                    assert!(off.at >= e.at + Duration::from_secs(u64::from(down_secs) + 2));
                }
            }
        }
        assert!(with_burst >= 5, "{with_burst}");
    }

    #[test]
    fn a_run_shorter_than_warmup_and_cooldown_has_no_faults() {
        assert!(schedule(1, 3, Duration::from_secs(10)).is_empty());
    }
}
