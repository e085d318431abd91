//! Replies to re-sent non-idempotent requests.
//!
//! When a request is re-sent (timeout, dead connection, failover to another
//! path) the first copy may already have been executed. The server's
//! duplicate request cache is per connection, so a copy sent on another
//! connection runs again and fails with an error that describes the state
//! *after* our own first copy. Mature clients (Linux `nfs3proc.c`,
//! Solaris) treat these as success; so do we. This is only applied when the
//! request was sent more than once.

/// NFSv3 status codes this module cares about (RFC 1813 §2.6).
mod status {
    pub const NFS3ERR_NOENT: u32 = 2;
    pub const NFS3ERR_EXIST: u32 = 17;
    #[cfg(test)]
    pub const NFS3ERR_NOTEMPTY: u32 = 66;
}
use status::*;

/// NFSv3 procedure numbers this module cares about (RFC 1813 §3.3).
mod proc_ {
    pub const CREATE: u32 = 8;
    pub const MKDIR: u32 = 9;
    pub const REMOVE: u32 = 12;
    pub const RMDIR: u32 = 13;
    pub const RENAME: u32 = 14;
}

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

/// Classifies the nfsstat3 `status` for procedure `proc_` sent `attempts` times.
pub fn classify_retried(proc_: u32, attempts: u32, status: u32) -> RetriedStatus {
    if attempts <= 1 {
        return RetriedStatus::AsIs;
    }
    match (proc_, status) {
        (proc_::REMOVE | proc_::RMDIR | proc_::RENAME, NFS3ERR_NOENT) => {
            RetriedStatus::TreatAsSuccess
        }
        (proc_::MKDIR | proc_::CREATE, NFS3ERR_EXIST) => RetriedStatus::ConfirmByLookup,
        _ => RetriedStatus::AsIs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retried_remove_that_finds_nothing_succeeded() {
        assert_eq!(
            classify_retried(proc_::REMOVE, 2, NFS3ERR_NOENT),
            RetriedStatus::TreatAsSuccess
        );
    }

    #[test]
    fn first_attempt_errors_are_reported_as_is() {
        assert_eq!(
            classify_retried(proc_::REMOVE, 1, NFS3ERR_NOENT),
            RetriedStatus::AsIs
        );
    }

    #[test]
    fn retried_mkdir_that_finds_the_directory_must_be_confirmed() {
        assert_eq!(
            classify_retried(proc_::MKDIR, 3, NFS3ERR_EXIST),
            RetriedStatus::ConfirmByLookup
        );
        assert_eq!(
            classify_retried(proc_::RMDIR, 3, NFS3ERR_NOTEMPTY),
            RetriedStatus::AsIs
        );
    }
}
