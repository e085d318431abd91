//! How long a request waits while the server answers NFS4ERR_DELAY
//! ("try again later") or NFS4ERR_GRACE (in its grace period after a
//! restart): pauses of 100 ms doubling to 2 s, for ever on a hard mount;
//! on a soft mount until `timeo` x `retrans` (at least one `timeo`) has
//! passed since the first such answer, then the request fails with
//! [`Error::ServerBusy`]
//! (ETIMEDOUT) — the bound NFSv3's JUKEBOX retries have on a soft mount.

use std::time::{Duration, Instant};

use directnfs_wire::nfs4::nfsstat4;

use crate::config::MountOptions;
use crate::error::{Error, Result};

/// Pauses after NFS4ERR_DELAY and NFS4ERR_GRACE: 100 ms doubling to 2 s.
const FIRST_PAUSE: Duration = Duration::from_millis(100);
const LONGEST_PAUSE: Duration = Duration::from_secs(2);

/// The waits of one request.
#[derive(Debug)]
pub(crate) struct Waits {
    /// `None` on a hard mount: no bound.
    limit: Option<Duration>,
    pause: Duration,
    /// The first DELAY or GRACE answer.
    since: Option<Instant>,
}

impl Waits {
    pub(crate) fn new(options: &MountOptions) -> Self {
        Self::with_limit((!options.hard).then(|| options.timeo * options.retrans.max(1)))
    }

    fn with_limit(limit: Option<Duration>) -> Self {
        Self {
            limit,
            pause: FIRST_PAUSE,
            since: None,
        }
    }

    /// The pause before trying again, `waited` after the first busy
    /// answer; `None` when a soft mount's bound would be passed.
    fn next(&mut self, waited: Duration) -> Option<Duration> {
        let pause = self.pause;
        if let Some(limit) = self.limit {
            if waited >= limit {
                return None;
            }
            self.pause = (pause * 2).min(LONGEST_PAUSE);
            // The last pause ends at the bound, not past it.
            return Some(pause.min(limit - waited));
        }
        self.pause = (pause * 2).min(LONGEST_PAUSE);
        Some(pause)
    }

    /// Sleeps before the next try after `status`, or fails `op` (soft
    /// mount past its bound).
    pub(crate) fn pause(&mut self, status: nfsstat4, op: &'static str, path: &str) -> Result<()> {
        let since = *self.since.get_or_insert_with(Instant::now);
        let waited = since.elapsed();
        match self.next(waited) {
            Some(p) => {
                std::thread::sleep(p);
                Ok(())
            }
            None => Err(Error::ServerBusy {
                op,
                path: path.to_string(),
                status,
                waited,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_hard_mount_waits_for_ever_doubling_to_two_seconds() {
        let mut w = Waits::with_limit(None);
        let pauses: Vec<_> = (0..7).map(|_| w.next(Duration::from_secs(3600))).collect();
        let want = [100, 200, 400, 800, 1600, 2000, 2000].map(|m| Some(ms(m)));
        assert_eq!(pauses, want);
    }

    #[test]
    fn a_soft_mount_gives_up_at_timeo_times_retrans() {
        let options = MountOptions {
            hard: false,
            timeo: Duration::from_secs(1),
            retrans: 3,
            ..MountOptions::default()
        };
        let mut w = Waits::new(&options);
        let mut waited = Duration::ZERO;
        let mut pauses = Vec::new();
        while let Some(p) = w.next(waited) {
            pauses.push(p);
            waited += p;
        }
        assert_eq!(pauses, [ms(100), ms(200), ms(400), ms(800), ms(1500)]);
        assert_eq!(waited, Duration::from_secs(3), "timeo x retrans, not more");
        assert_eq!(w.next(waited), None, "and stays given up");
    }

    #[test]
    fn the_default_mount_is_hard() {
        assert!(Waits::new(&MountOptions::default()).limit.is_none());
    }

    #[test]
    fn a_soft_mount_out_of_time_fails_with_etimedout_naming_the_status() {
        let mut w = Waits::with_limit(Some(Duration::ZERO));
        let e = w
            .pause(nfsstat4::NFS4ERR_GRACE, "OPEN", "/db/x")
            .unwrap_err();
        assert_eq!(e.errno(), libc::ETIMEDOUT);
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
        let text = e.to_string();
        assert!(
            text.contains("OPEN /db/x") && text.contains("NFS4ERR_GRACE"),
            "{text}"
        );
    }
}
