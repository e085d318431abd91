//! The NFSv4.1 session as a [`Client`] shows it: its slots and each path's
//! server owner, and the test hooks that destroy the session, pause a
//! reclaim or the lease renewal. Here, not in `v4/`, which never names the
//! client (`v4/mod.rs`).

use super::Client;
use crate::v4::session::Session;
use crate::v4::trunk;

/// Declares `Client` methods that only tests call: public with the cargo
/// feature `test-hooks` (which the crate's own integration tests turn on
/// through their dev-dependency on it), crate-private and allowed to go
/// unused without it, so that no other build offers them. Compiled either
/// way, so the session's accessors they read stay in use.
macro_rules! test_hooks {
    ($($(#[$doc:meta])* fn $name:ident $args:tt $(-> $ret:ty)? $body:block)*) => {
        #[cfg(feature = "test-hooks")]
        impl Client {
            $($(#[$doc])* pub fn $name $args $(-> $ret)? $body)*
        }
        #[cfg(not(feature = "test-hooks"))]
        #[allow(dead_code)]
        impl Client {
            $($(#[$doc])* pub(crate) fn $name $args $(-> $ret)? $body)*
        }
    };
}

impl Client {
    /// The fore-channel slots of the NFSv4.1 session (as the server
    /// granted them); `None` on NFSv3.
    pub fn session_slots(&self) -> Option<u32> {
        self.inner.v4.as_ref().map(Session::slots)
    }

    /// The security flavors the NFSv4.1 export takes, as its server's
    /// SECINFO_NO_NAME listed them at mount (`sys`, `krb5`, `krb5i`,
    /// `krb5p`, ...): asked on Kerberos mounts only. Empty on NFSv3, under
    /// `sec=sys`, or when the server did not answer.
    pub fn export_flavors(&self) -> Vec<String> {
        self.inner
            .v4
            .as_ref()
            .map_or_else(Vec::new, |s| s.flavors.clone())
    }
}

impl Client {
    /// The NFSv4.1 server owner and scope each path's EXCHANGE_ID
    /// reported (paths not connected yet are left out), and why a path
    /// whose server is not the session's is not used; empty on NFSv3.
    pub fn server_owners(&self) -> Vec<trunk::ServerOwner> {
        self.inner
            .v4
            .as_ref()
            .map_or_else(Vec::new, |s| s.trunk.owners())
    }
}

test_hooks! {
    /// For tests: BIND_CONN_TO_SESSION calls sent so far, and those
    /// answered NFS4_OK ((0, 0) on NFSv3).
    fn binds_for_test(&self) -> (u64, u64) {
        self.inner.v4.as_ref().map_or((0, 0), |s| s.trunk.binds())
    }

    /// For tests: destroys the NFSv4.1 session behind the client's back,
    /// as a server restart would, so the next request meets
    /// NFS4ERR_BADSESSION and must recover. Returns how many sessions the
    /// client has had so far (0 on NFSv3, which has none).
    fn destroy_session_for_test(&self) -> u64 {
        match &self.inner.v4 {
            Some(s) => {
                s.destroy(&self.inner.remote, false);
                s.sessions()
            }
            None => 0,
        }
    }

    /// For tests: the NFSv4 statuses (`NFS4ERR_BADSESSION`, ...) that
    /// made the client replace its session, in order; empty on NFSv3.
    fn session_recoveries_for_test(&self) -> Vec<String> {
        match &self.inner.v4 {
            Some(s) => s.recoveries().iter().map(|st| st.to_string()).collect(),
            None => Vec::new(),
        }
    }

    /// For tests: the most fore-channel slots of the NFSv4.1 session
    /// busy at once so far — requests the server had in flight together
    /// (0 on NFSv3).
    fn session_peak_slots_for_test(&self) -> u32 {
        self.inner.v4.as_ref().map_or(0, Session::peak_busy)
    }

    /// For tests: holds (`true`) or releases every reclaim after its
    /// first file, so that a test can restart the server in the middle
    /// of one; [`reclaim_waiting_for_test`](Self::reclaim_waiting_for_test)
    /// says when one waits.
    fn pause_reclaim_for_test(&self, paused: bool) {
        if let Some(s) = &self.inner.v4 {
            s.reclaim_hold
                .paused
                .store(paused, std::sync::atomic::Ordering::Release);
        }
    }

    /// For tests: true while a reclaim waits at the hold.
    fn reclaim_waiting_for_test(&self) -> bool {
        self.inner.v4.as_ref().is_some_and(|s| {
            s.reclaim_hold
                .waiting
                .load(std::sync::atomic::Ordering::Acquire)
        })
    }

    /// For tests: stops (`true`) or resumes the background lease
    /// renewal, so that an idle client's lease can expire.
    fn pause_lease_renewal_for_test(&self, paused: bool) {
        if let Some(s) = &self.inner.v4 {
            s.pause_renewal(paused);
        }
    }
}
