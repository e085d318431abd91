//! Replies to re-sent non-idempotent requests.
//!
//! When a request is re-sent (timeout, dead connection, failover to another
//! path) the first copy may already have been executed. The server's
//! duplicate request cache is per connection, so a copy sent on another
//! connection runs again and fails with an error that describes the state
//! *after* our own first copy. Mature clients (Linux `nfs3proc.c`,
//! Solaris) treat these as success; so do we. This is only applied when the
//! request was sent more than once.

use directnfs_wire::nfs3::{
    nfsstat3, NFSPROC3_CREATE, NFSPROC3_MKDIR, NFSPROC3_REMOVE, NFSPROC3_RENAME, NFSPROC3_RMDIR,
};

/// How to read the status of a reply to a request sent `attempts` times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetriedStatus {
    /// Report the status as it is.
    AsIs,
    /// The error is the trace of our own earlier copy: report success.
    TreatAsSuccess,
    /// Success is likely but must be confirmed (MKDIR/CREATE that found the
    /// object existing): the caller looks the name up and checks its type.
    ConfirmByLookup,
}

/// Classifies the `status` of procedure `proc_` sent `attempts` times.
pub fn classify_retried(proc_: u32, attempts: u32, status: nfsstat3) -> RetriedStatus {
    if attempts <= 1 {
        return RetriedStatus::AsIs;
    }
    match (proc_, status) {
        (NFSPROC3_REMOVE | NFSPROC3_RMDIR | NFSPROC3_RENAME, nfsstat3::NFS3ERR_NOENT) => {
            RetriedStatus::TreatAsSuccess
        }
        (NFSPROC3_MKDIR | NFSPROC3_CREATE, nfsstat3::NFS3ERR_EXIST) => {
            RetriedStatus::ConfirmByLookup
        }
        _ => RetriedStatus::AsIs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retried_remove_that_finds_nothing_succeeded() {
        assert_eq!(
            classify_retried(NFSPROC3_REMOVE, 2, nfsstat3::NFS3ERR_NOENT),
            RetriedStatus::TreatAsSuccess
        );
    }

    #[test]
    fn first_attempt_errors_are_reported_as_is() {
        assert_eq!(
            classify_retried(NFSPROC3_REMOVE, 1, nfsstat3::NFS3ERR_NOENT),
            RetriedStatus::AsIs
        );
    }

    #[test]
    fn retried_mkdir_that_finds_the_directory_must_be_confirmed() {
        assert_eq!(
            classify_retried(NFSPROC3_MKDIR, 3, nfsstat3::NFS3ERR_EXIST),
            RetriedStatus::ConfirmByLookup
        );
        assert_eq!(
            classify_retried(NFSPROC3_RMDIR, 3, nfsstat3::NFS3ERR_NOTEMPTY),
            RetriedStatus::AsIs
        );
    }
}
