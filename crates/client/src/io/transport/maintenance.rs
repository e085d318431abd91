//! The maintenance thread: gives the engine its time.
//!
//! It ticks the engine (`Engine::on_tick`: timeouts, JUKEBOX re-sends,
//! parked calls, reconnections, route checks) and sleeps until the
//! engine's next deadline. Events that make that deadline earlier (a
//! failure, a JUKEBOX pause, a parked call) wake it; a submission never
//! needs to (its deadline is `timeo` away, and the thread never sleeps
//! longer than `timeo`). One more duty has no deadline of its own: while
//! calls are in flight it checks every tick that someone receives them,
//! and wakes the fallback receiver when nobody has led for a tick.

use std::sync::Arc;
use std::time::Duration;

use super::shared::Shared;

/// Runs until the transport shuts down.
pub(crate) fn run(sh: &Arc<Shared>) {
    let timeo = sh.config.policy.timeo;
    // The orphan check's period (`threads.rs`, `tick`).
    let tick = sh.threads.tick;
    while !sh.is_shutdown() {
        sh.drive(|e, now| e.on_tick(now));
        let in_flight = check_orphans(sh, tick);
        // Spares for forked children (an owner's, io/spare.rs): their
        // misses are noticed within a tick once the process has forked.
        let spares = sh.tend_spares();
        let now = sh.now_ns();
        let deadline = sh.engine().next_deadline();
        let mut sleep = deadline.map_or(timeo, |d| Duration::from_nanos(d.saturating_sub(now)));
        sleep = sleep.min(if in_flight || spares { tick } else { timeo });
        // A deadline that passed while ticking is handled on the next
        // tick, not by spinning.
        sh.sleep_maintenance(sleep.max(Duration::from_micros(100)));
    }
}

/// Wakes the fallback receiver when calls are outstanding and nobody has
/// led for a tick. Returns whether calls are outstanding.
fn check_orphans(sh: &Shared, tick: Duration) -> bool {
    if sh.in_flight() == 0 {
        return false;
    }
    if !sh.lead.is_led() && sh.lead.unled_for_ns() >= tick.as_nanos() as u64 {
        sh.lead.signal_fallback();
    }
    true
}
