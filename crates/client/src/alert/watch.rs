//! What a client watches on its server to raise alerts that no single
//! reply shows: a changed write verifier (the server restarted) and a
//! storm of NFS3ERR_JUKEBOX replies. Lock-free; called on replies that
//! carry a verifier (WRITE, COMMIT) and on JUKEBOX replies only.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use super::Alerts;

/// JUKEBOX replies within [`STORM_WINDOW`] that make a storm.
pub const STORM_REPLIES: u64 = 20;
/// The window JUKEBOX replies are counted in.
pub const STORM_WINDOW: Duration = Duration::from_secs(1);

/// Per-client watch state. See the module doc.
#[derive(Debug, Default)]
pub(crate) struct ServerWatch {
    /// The last write verifier seen, as a big-endian u64; 0 = none yet.
    verifier: AtomicU64,
    /// Start of the current JUKEBOX window (ns, caller's clock), and the
    /// replies counted in it.
    window_start_ns: AtomicU64,
    window_replies: AtomicU64,
}

impl ServerWatch {
    /// A WRITE or COMMIT reply carried `verf`. The first verifier is
    /// remembered; a different one later means the server restarted
    /// (RFC 1813 §3.3.7: the verifier changes when the server loses
    /// unstable data, in practice at every restart).
    pub(crate) fn on_verifier(&self, verf: [u8; 8], alerts: &Alerts) {
        let new = u64::from_be_bytes(verf);
        // Read first: on every WRITE reply, the common case (no change)
        // must not write a cache line all writers share.
        if self.verifier.load(Relaxed) == new {
            return;
        }
        let old = self.verifier.swap(new, Relaxed);
        if old != 0 && old != new {
            alerts.server_restarted(old.to_be_bytes(), verf);
        }
    }

    /// A reply said NFS3ERR_JUKEBOX at `now_ns`. Alerts once per window
    /// when the window's count reaches [`STORM_REPLIES`].
    pub(crate) fn on_jukebox(&self, now_ns: u64, alerts: &Alerts) {
        let window = STORM_WINDOW.as_nanos() as u64;
        let start = self.window_start_ns.load(Relaxed);
        if now_ns.saturating_sub(start) >= window
            && self
                .window_start_ns
                .compare_exchange(start, now_ns, Relaxed, Relaxed)
                .is_ok()
        {
            self.window_replies.store(0, Relaxed);
        }
        if self.window_replies.fetch_add(1, Relaxed) + 1 == STORM_REPLIES {
            alerts.jukebox_storm(STORM_REPLIES, STORM_WINDOW);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alert::recent;

    fn mine(lines: Vec<String>, tag: &str) -> Vec<String> {
        lines.into_iter().filter(|l| l.contains(tag)).collect()
    }

    #[test]
    fn a_changed_verifier_is_a_restart_and_the_first_one_is_not() {
        crate::alert::set_sink(crate::alert::Sink::Off);
        let alerts = Alerts::new("watch-verf-test");
        let w = ServerWatch::default();
        w.on_verifier(*b"\x65\xf1\0\0\0\0\0\0", &alerts);
        w.on_verifier(*b"\x65\xf1\0\0\0\0\0\0", &alerts);
        assert!(mine(recent(), "watch-verf-test").is_empty());
        w.on_verifier(*b"\x65\xf2\0\0\0\0\0\0", &alerts);
        let lines = mine(recent(), "watch-verf-test");
        assert_eq!(lines.len(), 1);
        assert!(
            lines[0].contains(
                "server restart detected (write verifier 65f1000000000000 -> 65f2000000000000)"
            ),
            "{}",
            lines[0]
        );
    }

    #[test]
    fn jukebox_storms_alert_once_per_window() {
        crate::alert::set_sink(crate::alert::Sink::Off);
        let alerts = Alerts::new("watch-jukebox-test");
        let w = ServerWatch::default();
        let ms = 1_000_000u64;
        // 19 replies in a second: no storm.
        for i in 0..19 {
            w.on_jukebox(5_000 * ms + i * 10 * ms, &alerts);
        }
        assert!(mine(recent(), "watch-jukebox-test").is_empty());
        // A new window: 50 replies in 0.5 s, one line.
        for i in 0..50 {
            w.on_jukebox(7_000 * ms + i * 10 * ms, &alerts);
        }
        let lines = mine(recent(), "watch-jukebox-test");
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].contains("JUKEBOX storm: 20"), "{}", lines[0]);
    }
}
