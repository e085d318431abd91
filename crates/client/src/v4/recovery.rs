//! What a lost session or client ID asks of the client (RFC 8881
//! §2.10.13, §8.4.2): which SEQUENCE statuses replace the session,
//! whether the client ID survives (CREATE_SESSION on it) or must be
//! made anew (EXCHANGE_ID first, then a reclaim of every open file), how
//! many recoveries and pauses one request may go through, and the test
//! hold on reclaims. The recovery itself (`Session::recover`) runs on the
//! session, which asks these.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use directnfs_wire::nfs4::nfsstat4;

use crate::config::MountOptions;
use crate::error::Error;
use crate::remote::Remote;

use super::wait::Waits;

/// Session recoveries one request may go through before its error is
/// reported (a server that destroys every new session).
pub(super) const MAX_RECOVERIES: u32 = 8;

/// True when SEQUENCE failing with `status` says the session (or the
/// client ID behind it) is gone: the client replaces it and sends the
/// request again.
pub(super) fn recovers(status: nfsstat4) -> bool {
    matches!(
        status,
        nfsstat4::NFS4ERR_BADSESSION
            | nfsstat4::NFS4ERR_DEADSESSION
            | nfsstat4::NFS4ERR_STALE_CLIENTID
            | nfsstat4::NFS4ERR_EXPIRED
    )
}

/// True when the client ID outlives the session `status` said is gone
/// (BADSESSION, DEADSESSION): CREATE_SESSION on it; otherwise
/// EXCHANGE_ID first.
pub(super) fn keeps_client(status: nfsstat4) -> bool {
    matches!(
        status,
        nfsstat4::NFS4ERR_BADSESSION | nfsstat4::NFS4ERR_DEADSESSION
    )
}

/// True when `e`, from CREATE_SESSION on the old client ID, says the
/// client ID is gone too (a server restart): start over with
/// EXCHANGE_ID.
pub(super) fn stale_client(e: &Error) -> bool {
    matches!(
        e,
        Error::Nfs4 {
            status: nfsstat4::NFS4ERR_STALE_CLIENTID | nfsstat4::NFS4ERR_EXPIRED,
            ..
        }
    )
}

/// True when a recovery that ended with client ID `new` (having had
/// `old`) must reclaim the open files and their locks: the same client
/// ID back from EXCHANGE_ID means the server still holds our state (a
/// session lost, not the client), nothing to reclaim; a new one means
/// the state is gone or waits for reclaim.
pub(super) fn reclaims(old: u64, new: u64) -> bool {
    new != old
}

/// What one request may still spend on DELAY/GRACE pauses and session
/// recoveries, across its re-sends.
#[derive(Debug)]
pub(crate) struct Retry {
    recoveries: u32,
    pub(super) waits: Waits,
}

impl Retry {
    pub(crate) fn new(remote: &Remote) -> Self {
        Self::for_options(&remote.options)
    }

    fn for_options(options: &MountOptions) -> Self {
        Self {
            recoveries: 0,
            waits: Waits::new(options),
        }
    }

    /// True (counting it) when the request may go through one more
    /// session recovery; false after [`MAX_RECOVERIES`].
    pub(super) fn may_recover(&mut self) -> bool {
        if self.recoveries >= MAX_RECOVERIES {
            return false;
        }
        self.recoveries += 1;
        true
    }
}

/// A test's hold on reclaims (`Client::pause_reclaim_for_test`).
#[derive(Debug, Default)]
pub(crate) struct ReclaimHold {
    pub paused: AtomicBool,
    pub waiting: AtomicBool,
}

impl ReclaimHold {
    /// Waits while paused, saying so.
    pub(crate) fn wait(&self) {
        while self.paused.load(Ordering::Acquire) {
            self.waiting.store(true, Ordering::Release);
            std::thread::sleep(Duration::from_millis(5));
        }
        self.waiting.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn only_a_lost_session_or_client_id_replaces_the_session() {
        for status in [
            nfsstat4::NFS4ERR_BADSESSION,
            nfsstat4::NFS4ERR_DEADSESSION,
            nfsstat4::NFS4ERR_STALE_CLIENTID,
            nfsstat4::NFS4ERR_EXPIRED,
        ] {
            assert!(recovers(status), "{status}");
        }
        for status in [
            nfsstat4::NFS4_OK,
            nfsstat4::NFS4ERR_DELAY,
            nfsstat4::NFS4ERR_SEQ_MISORDERED,
            nfsstat4::NFS4ERR_BADSLOT,
            nfsstat4::NFS4ERR_RETRY_UNCACHED_REP,
            nfsstat4::NFS4ERR_GRACE,
            nfsstat4::NFS4ERR_BAD_SEQID,
        ] {
            assert!(!recovers(status), "{status}");
        }
    }

    #[test]
    fn a_lost_session_keeps_the_client_id_a_lost_client_does_not() {
        assert!(keeps_client(nfsstat4::NFS4ERR_BADSESSION));
        assert!(keeps_client(nfsstat4::NFS4ERR_DEADSESSION));
        assert!(!keeps_client(nfsstat4::NFS4ERR_STALE_CLIENTID));
        assert!(!keeps_client(nfsstat4::NFS4ERR_EXPIRED));
    }

    #[test]
    fn create_session_refused_for_a_stale_client_starts_over() {
        let err = |status| Error::Nfs4 {
            op: "CREATE_SESSION",
            path: "/".into(),
            status,
        };
        assert!(stale_client(&err(nfsstat4::NFS4ERR_STALE_CLIENTID)));
        assert!(stale_client(&err(nfsstat4::NFS4ERR_EXPIRED)));
        assert!(!stale_client(&err(nfsstat4::NFS4ERR_DELAY)));
        assert!(!stale_client(&Error::Protocol {
            op: "CREATE_SESSION",
            path: "/".into(),
            detail: "x".into(),
        }));
    }

    #[test]
    fn only_a_new_client_id_reclaims_the_open_files() {
        assert!(!reclaims(7, 7));
        assert!(reclaims(7, 8));
    }

    #[test]
    fn a_request_goes_through_at_most_eight_recoveries() {
        let mut retry = Retry::for_options(&MountOptions::default());
        let allowed = std::iter::from_fn(|| retry.may_recover().then_some(()))
            .take(100)
            .count();
        assert_eq!(allowed, MAX_RECOVERIES as usize);
        assert_eq!(MAX_RECOVERIES, 8);
        assert!(!retry.may_recover(), "still refused after the last");
    }

    #[test]
    fn a_held_reclaim_says_it_waits_until_released() {
        let hold = Arc::new(ReclaimHold::default());
        hold.paused.store(true, Ordering::Release);
        let waiter = {
            let hold = Arc::clone(&hold);
            std::thread::spawn(move || hold.wait())
        };
        while !hold.waiting.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(1));
        }
        hold.paused.store(false, Ordering::Release);
        waiter.join().expect("the waiter ends");
        assert!(!hold.waiting.load(Ordering::Acquire));
    }
}
