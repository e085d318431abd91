//! The public error type.

use std::io;

use directnfs_wire::mount::mountstat3;
use directnfs_wire::nfs3::nfsstat3;

use crate::errno::{errno_kind, nfs_errno};
use crate::io::error::CallError;

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong, with the operation and path it concerns.
///
/// Convert to `std::io::Error` with `?` or `From`; [`Error::errno`] gives
/// the errno the C library and SQLite VFS report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The server answered the operation with an NFS error status.
    #[error("{op} {path}: {status} ({})", io::Error::from_raw_os_error(nfs_errno(*status)))]
    Nfs {
        /// NFS procedure (or client operation) that failed.
        op: &'static str,
        /// Path it was applied to.
        path: String,
        /// The NFSv3 status, unknown values included.
        status: nfsstat3,
    },
    /// MOUNT refused the export.
    #[error("MOUNT {export}: {status}")]
    Mount {
        /// Export asked for.
        export: String,
        /// MOUNT status.
        status: mountstat3,
    },
    /// The RPC layer rejected the call (version mismatch, auth error,
    /// PROC_UNAVAIL, GARBAGE_ARGS, SYSTEM_ERR, ...).
    #[error("{op} {path}: RPC failure: {detail}")]
    Rpc {
        /// Operation.
        op: &'static str,
        /// Path.
        path: String,
        /// What the server said.
        detail: String,
    },
    /// No reply within the soft-mount limit (`soft`, `timeo` x `retrans`).
    #[error("{op} {path}: timed out: {detail}")]
    TimedOut {
        /// Operation.
        op: &'static str,
        /// Path.
        path: String,
        /// Attempts made.
        detail: String,
    },
    /// The server sent something that is not a valid reply.
    #[error("{op} {path}: malformed reply from server: {detail}")]
    Protocol {
        /// Operation.
        op: &'static str,
        /// Path.
        path: String,
        /// Decoder message.
        detail: String,
    },
    /// Could not reach the server at all.
    #[error("cannot reach {server}: {source}")]
    Connect {
        /// Server address.
        server: String,
        /// The network error.
        source: io::Error,
    },
    /// An argument is out of range or malformed.
    #[error("invalid argument: {0}")]
    InvalidInput(String),
    /// A configuration file or URL error.
    #[error("{0}")]
    Config(String),
    /// The client was shut down while the operation waited.
    #[error("{op} {path}: client shut down")]
    Shutdown {
        /// Operation.
        op: &'static str,
        /// Path.
        path: String,
    },
}

impl Error {
    /// The errno a C caller sees for this error.
    pub fn errno(&self) -> i32 {
        match self {
            Error::Nfs { status, .. } => nfs_errno(*status),
            Error::Mount { status, .. } => match *status {
                mountstat3::MNT3ERR_NOENT => libc::ENOENT,
                mountstat3::MNT3ERR_ACCES | mountstat3::MNT3ERR_PERM => libc::EACCES,
                mountstat3::MNT3ERR_NOTDIR => libc::ENOTDIR,
                _ => libc::EIO,
            },
            Error::Rpc { .. } | Error::Protocol { .. } => libc::EIO,
            Error::TimedOut { .. } => libc::ETIMEDOUT,
            Error::Connect { source, .. } => source.raw_os_error().unwrap_or(libc::ECONNREFUSED),
            Error::InvalidInput(_) | Error::Config(_) => libc::EINVAL,
            Error::Shutdown { .. } => libc::ESHUTDOWN,
        }
    }

    /// The NFS status, when the server sent one.
    pub fn nfs_status(&self) -> Option<nfsstat3> {
        match self {
            Error::Nfs { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The `io::ErrorKind` of this error.
    pub fn kind(&self) -> io::ErrorKind {
        match self {
            Error::TimedOut { .. } => io::ErrorKind::TimedOut,
            Error::Protocol { .. } => io::ErrorKind::InvalidData,
            Error::InvalidInput(_) | Error::Config(_) => io::ErrorKind::InvalidInput,
            _ => errno_kind(self.errno()),
        }
    }

    pub(crate) fn from_call(op: &'static str, path: &str, e: CallError) -> Self {
        let path = path.to_string();
        match e {
            CallError::TimedOut { attempts } => Error::TimedOut {
                op,
                path,
                detail: format!("no reply after {attempts} attempt(s)"),
            },
            CallError::Shutdown => Error::Shutdown { op, path },
            CallError::Decode(d) => Error::Protocol {
                op,
                path,
                detail: d.to_string(),
            },
            other => Error::Rpc {
                op,
                path,
                detail: other.to_string(),
            },
        }
    }
}

impl From<Error> for io::Error {
    fn from(e: Error) -> Self {
        io::Error::new(e.kind(), e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nfs_error_message_names_op_path_and_status() {
        let e = Error::Nfs {
            op: "LOOKUP",
            path: "/db/users01.dbf".into(),
            status: nfsstat3::NFS3ERR_NOENT,
        };
        let msg = e.to_string();
        assert!(
            msg.starts_with("LOOKUP /db/users01.dbf: NFS3ERR_NOENT"),
            "{msg}"
        );
        assert_eq!(e.errno(), libc::ENOENT);
        assert_eq!(io::Error::from(e).kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn unknown_status_is_shown_in_hex() {
        let e = Error::Nfs {
            op: "READ",
            path: "/f".into(),
            status: nfsstat3(0x7777),
        };
        assert!(e.to_string().contains("nfsstat3(0x7777)"), "{e}");
        assert_eq!(e.errno(), libc::EIO);
    }
}
