//! The public error type.

use std::io;

use directnfs_wire::mount::mountstat3;
use directnfs_wire::nfs3::nfsstat3;
use directnfs_wire::nfs4::nfsstat4;
use directnfs_wire::rpc::AuthStat;

use crate::config::{ConfigError, UrlError};
use crate::errno::{auth_errno, errno_kind, nfs_errno};
use crate::io::call_error::CallError;

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
    /// The server answered an NFSv4.1 operation with an error status.
    #[error("{op} {path}: {status} ({})", io::Error::from_raw_os_error(nfs4_errno(*status)))]
    Nfs4 {
        /// Operation that failed.
        op: &'static str,
        /// Path it was applied to.
        path: String,
        /// The NFSv4 status, unknown values included.
        status: nfsstat4,
    },
    /// MOUNT refused the export.
    #[error("MOUNT {export}: {status}")]
    Mount {
        /// Export asked for.
        export: String,
        /// MOUNT status.
        status: mountstat3,
    },
    /// The server refused the call's credentials (MSG_DENIED AUTH_ERROR:
    /// AUTH_BADCRED, AUTH_REJECTEDCRED, AUTH_TOOWEAK, ...). EACCES, as a
    /// permission problem: the uid/gid sent (`uid=`, `gid=`, `gids=`), the
    /// flavor (AUTH_SYS) or a privileged source port (`resvport`) is not
    /// accepted by the export. Not retried.
    #[error(
        "{op} {path}: server rejected the credentials: {status} ({})",
        io::Error::from_raw_os_error(auth_errno(*status))
    )]
    Auth {
        /// Operation.
        op: &'static str,
        /// Path.
        path: String,
        /// The `auth_stat` the server gave, unknown values included.
        status: AuthStat,
    },
    /// The RPC layer rejected the call (version mismatch, PROG_UNAVAIL,
    /// PROG_MISMATCH, PROC_UNAVAIL, GARBAGE_ARGS, SYSTEM_ERR, ...).
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
    #[error("{op} {path}: timed out: no reply after {attempts} attempt(s)")]
    TimedOut {
        /// Operation.
        op: &'static str,
        /// Path.
        path: String,
        /// Transmissions made (the first and every retransmission).
        attempts: u32,
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
    /// An `fsync` (or a FILE_SYNC write the server downgraded) could not
    /// prove the data durable: after a server restart lost unstable data,
    /// the server's write verifier kept changing while the data was sent
    /// again. Nothing is dropped: the next `fsync` tries again. EIO.
    #[error("{op} {path}: data not proven durable: {detail}")]
    NotDurable {
        /// Operation.
        op: &'static str,
        /// Path.
        path: String,
        /// What happened.
        detail: String,
    },
    /// NFSv4.1, soft mount: the server kept answering NFS4ERR_DELAY or
    /// NFS4ERR_GRACE (its grace period after a restart) for `timeo` x
    /// `retrans`. A hard mount waits for ever instead. ETIMEDOUT.
    #[error("{op} {path}: server still answered {status} after {waited:?} (soft mount: timeo x retrans)")]
    ServerBusy {
        /// Operation.
        op: &'static str,
        /// Path.
        path: String,
        /// The last answer.
        status: nfsstat4,
        /// Time since the first such answer.
        waited: std::time::Duration,
    },
    /// NFSv4.1: a byte-range lock this `File` held is gone — the server
    /// restarted and refused its reclaim, or the lease expired, or the
    /// server revoked the state — so another owner may have taken the
    /// range. Every I/O on the `File` (read, write, `set_len`, `fsync`,
    /// `lock`, `try_lock`) fails with this until `unlock` is called,
    /// which reports it once more and clears it. EIO.
    #[error("{op} {path}: byte-range lock lost: {detail} (unlock to acknowledge)")]
    LockLost {
        /// Operation.
        op: &'static str,
        /// Path.
        path: String,
        /// What happened.
        detail: String,
    },
    /// NFSv3: the server's lock manager (NLM) answered a lock call with
    /// a status other than NLM4_GRANTED: NLM4_DENIED (another owner
    /// holds a conflicting lock) is EAGAIN, NLM4_DEADLCK EDEADLK,
    /// NLM4_ROFS EROFS, NLM4_STALE_FH ESTALE, NLM4_FBIG EFBIG, the rest
    /// (no resources, grace period, failed) ENOLCK.
    #[error("{op} {path}: the server's lock manager answered {status}")]
    Nlm {
        /// NLM procedure.
        op: &'static str,
        /// Path (or handle) of the file.
        path: String,
        /// The NLM status.
        status: directnfs_wire::nlm4::nlm4_stats,
    },
    /// NFSv3: the server has no lock manager this client can use (NLM
    /// not registered with its portmapper, or not answering), so a lock
    /// that must exclude other hosts cannot be taken. ENOLCK, as the
    /// kernel's client; the message names the mount options (`nolock`,
    /// `local_lock=`) that keep locks on this host instead.
    #[error("{op} {path}: no lock manager (NLM) on the server: {detail}; locks that exclude other hosts cannot be taken (mount with `nolock` or `local_lock=posix|flock|all` to keep locks on this host only, as the kernel's `nolock`)")]
    NoLockManager {
        /// Operation.
        op: &'static str,
        /// Path.
        path: String,
        /// What was tried and how it failed.
        detail: String,
    },
    /// The call was not sent: no connection to the server can be made for
    /// want of credentials (the user's Kerberos ticket ran out, and no
    /// client keytab). EACCES; `detail` names the server, the ticket cache
    /// and its principal, and what to do (kinit). The next call tries
    /// again with the ticket cache as it is then.
    #[error("{op} {path}: {detail}")]
    NoCredentials {
        /// Operation.
        op: &'static str,
        /// Path.
        path: String,
        /// Why, in the words of `security::SecurityError`.
        detail: String,
        /// Whether the call had been written to a connection before (it
        /// may have reached the server, and run); false: never sent.
        sent: bool,
    },
    /// Could not reach the server at all, or (`PermissionDenied`, EACCES)
    /// could not authenticate to it: no Kerberos ticket.
    #[error("{}", connect_message(server, source))]
    Connect {
        /// Server address.
        server: String,
        /// The network error.
        source: io::Error,
    },
    /// An argument is out of range or malformed.
    #[error("invalid argument: {0}")]
    InvalidInput(String),
    /// A dnfstab, or a name or options resolved through one, that cannot
    /// be used. EINVAL.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// An `nfs://` URL that cannot be parsed. EINVAL.
    #[error(transparent)]
    Url(#[from] UrlError),
    /// The mount is read-only (`ro`): the operation would change the
    /// server and was not sent. EROFS.
    #[error("{op} {path}: read-only mount (ro)")]
    ReadOnly {
        /// Operation.
        op: &'static str,
        /// Path.
        path: String,
    },
    /// What was asked is not available (yet) on this server's protocol
    /// version; the message says what. ENOTSUP.
    #[error("{0}")]
    Unsupported(String),
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
            Error::Nfs4 { status, .. } => nfs4_errno(*status),
            Error::Unsupported(_) => libc::ENOTSUP,
            Error::Nlm { status, .. } => nlm_errno(*status),
            Error::NoLockManager { .. } => libc::ENOLCK,
            Error::Mount { status, .. } => match *status {
                mountstat3::MNT3ERR_NOENT => libc::ENOENT,
                mountstat3::MNT3ERR_ACCES | mountstat3::MNT3ERR_PERM => libc::EACCES,
                mountstat3::MNT3ERR_NOTDIR => libc::ENOTDIR,
                _ => libc::EIO,
            },
            Error::Auth { status, .. } => auth_errno(*status),
            Error::NoCredentials { .. } => libc::EACCES,
            Error::Rpc { .. }
            | Error::Protocol { .. }
            | Error::NotDurable { .. }
            | Error::LockLost { .. } => libc::EIO,
            Error::TimedOut { .. } | Error::ServerBusy { .. } => libc::ETIMEDOUT,
            Error::Connect { source, .. } => connect_errno(source),
            Error::InvalidInput(_) | Error::Config(_) | Error::Url(_) => libc::EINVAL,
            Error::Shutdown { .. } => libc::ESHUTDOWN,
            Error::ReadOnly { .. } => libc::EROFS,
        }
    }

    /// The NFS status, when the server sent one. An NFSv4 status is given
    /// as the NFSv3 status of the same number where the two protocols
    /// share it (NOENT, EXIST, NOTEMPTY, STALE, ... up to 10008,
    /// JUKEBOX/DELAY), so callers test one set of constants.
    pub fn nfs_status(&self) -> Option<nfsstat3> {
        match self {
            Error::Nfs { status, .. } => Some(*status),
            Error::Nfs4 { status, .. } if status.0 <= SHARED_WITH_V3 => Some(nfsstat3(status.0)),
            _ => None,
        }
    }

    /// The `io::ErrorKind` of this error.
    pub fn kind(&self) -> io::ErrorKind {
        match self {
            Error::TimedOut { .. } | Error::ServerBusy { .. } => io::ErrorKind::TimedOut,
            Error::Protocol { .. } => io::ErrorKind::InvalidData,
            Error::InvalidInput(_) | Error::Config(_) | Error::Url(_) => {
                io::ErrorKind::InvalidInput
            }
            Error::Unsupported(_) => io::ErrorKind::Unsupported,
            _ => errno_kind(self.errno()),
        }
    }

    pub(crate) fn from_call(op: &'static str, path: &str, e: CallError) -> Self {
        let path = path.to_string();
        match e {
            CallError::TimedOut { attempts } => Error::TimedOut { op, path, attempts },
            CallError::Shutdown => Error::Shutdown { op, path },
            CallError::Auth(status) => Error::Auth { op, path, status },
            CallError::NoCredentials { detail, sent } => Error::NoCredentials {
                op,
                path,
                detail,
                sent,
            },
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

/// The errno of an NLM status (the kernel's lockd mapping).
fn nlm_errno(status: directnfs_wire::nlm4::nlm4_stats) -> i32 {
    use directnfs_wire::nlm4::nlm4_stats as S;
    match status {
        S::NLM4_GRANTED => 0,
        S::NLM4_DENIED => libc::EAGAIN,
        S::NLM4_DEADLCK => libc::EDEADLK,
        S::NLM4_ROFS => libc::EROFS,
        S::NLM4_STALE_FH => libc::ESTALE,
        S::NLM4_FBIG => libc::EFBIG,
        _ => libc::ENOLCK,
    }
}

/// NFSv4 statuses up to this one have the numbers and meanings of
/// NFSv3's (RFC 8881 §15.1 kept them).
const SHARED_WITH_V3: u32 = 10008;

/// The errno of an NFSv4 status: NFSv3's for the shared numbers, EIO for
/// the rest but a few.
fn nfs4_errno(status: nfsstat4) -> i32 {
    match status {
        s if s.0 <= SHARED_WITH_V3 => nfs_errno(nfsstat3(s.0)),
        nfsstat4::NFS4ERR_SYMLINK => libc::ELOOP,
        nfsstat4::NFS4ERR_DENIED | nfsstat4::NFS4ERR_LOCKED | nfsstat4::NFS4ERR_SHARE_DENIED => {
            libc::EAGAIN
        }
        nfsstat4::NFS4ERR_WRONG_TYPE => libc::EINVAL,
        // The object's export does not take the mount's flavor (RFC 8881
        // §2.6.3.1), as AUTH_TOOWEAK on NFSv3.
        nfsstat4::NFS4ERR_WRONGSEC => libc::EACCES,
        nfsstat4::NFS4ERR_BADNAME | nfsstat4::NFS4ERR_BADCHAR => libc::EINVAL,
        _ => libc::EIO,
    }
}

/// The errno of a failure to reach the server: the OS error when there is
/// one (also inside a wrapping `io::Error`), else the nearest errno of its
/// kind (a cold-path deadline is ETIMEDOUT, a host name without an address
/// EHOSTUNREACH), else ECONNREFUSED.
/// `Connect`'s message: "cannot reach" unless the server was reached and
/// the credentials were what failed (the error says so, naming the server).
fn connect_message(server: &str, source: &io::Error) -> String {
    if source.kind() == io::ErrorKind::PermissionDenied {
        format!("{server}: {source}")
    } else {
        format!("cannot reach {server}: {source}")
    }
}

fn connect_errno(e: &io::Error) -> i32 {
    if let Some(n) = e.raw_os_error() {
        return n;
    }
    let inner = e
        .get_ref()
        .and_then(|i| i.downcast_ref::<io::Error>())
        .and_then(io::Error::raw_os_error);
    if let Some(n) = inner {
        return n;
    }
    match e.kind() {
        io::ErrorKind::TimedOut => libc::ETIMEDOUT,
        io::ErrorKind::PermissionDenied => libc::EACCES,
        io::ErrorKind::ConnectionReset | io::ErrorKind::UnexpectedEof => libc::ECONNRESET,
        io::ErrorKind::ConnectionAborted => libc::ECONNABORTED,
        io::ErrorKind::AddrNotAvailable => libc::EADDRNOTAVAIL,
        io::ErrorKind::NotFound => libc::EHOSTUNREACH,
        _ => libc::ECONNREFUSED,
    }
}

impl From<Error> for io::Error {
    fn from(e: Error) -> Self {
        io::Error::new(e.kind(), e)
    }
}

impl From<crate::io::oneshot::OneshotError> for Error {
    /// A one-shot call's failure (PORTMAP, MOUNT) in the caller's words,
    /// naming the procedure and the server.
    fn from(e: crate::io::oneshot::OneshotError) -> Self {
        use crate::io::oneshot::Failure;
        let (op, path) = (e.op, e.server);
        match e.failure {
            Failure::Io(source) => Error::Connect {
                server: path,
                source,
            },
            Failure::Malformed(detail) => Error::Protocol { op, path, detail },
            Failure::Auth(status) => Error::Auth { op, path, status },
            Failure::Refused(detail) => Error::Rpc { op, path, detail },
        }
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
    fn auth_errors_are_eacces_naming_the_auth_stat() {
        for status in [
            AuthStat::AUTH_BADCRED,
            AuthStat::AUTH_REJECTEDCRED,
            AuthStat::AUTH_TOOWEAK,
            AuthStat::AUTH_BADVERF,
            AuthStat(0x1234),
        ] {
            let e = Error::from_call("READ", "/db/f", CallError::Auth(status));
            assert!(matches!(e, Error::Auth { .. }), "{e:?}");
            assert_eq!(e.errno(), libc::EACCES, "{status:?}");
            assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
            let msg = e.to_string();
            assert!(
                msg.starts_with("READ /db/f: server rejected the credentials: ")
                    && msg.contains(&status.to_string()),
                "{msg}"
            );
        }
        let msg = Error::from_call("READ", "/f", CallError::Auth(AuthStat::AUTH_TOOWEAK));
        assert!(msg.to_string().contains("AUTH_TOOWEAK"), "{msg}");
        // Other RPC rejections stay EIO.
        let e = Error::from_call("READ", "/f", CallError::RpcMismatch { low: 2, high: 2 });
        assert_eq!(e.errno(), libc::EIO);
    }

    #[test]
    fn connect_errors_keep_the_os_errno_else_map_their_kind() {
        let c = |source: io::Error| Error::Connect {
            server: "h:111".into(),
            source,
        };
        let os = c(io::Error::from_raw_os_error(libc::EHOSTUNREACH));
        assert_eq!(os.errno(), libc::EHOSTUNREACH);
        let wrapped = c(io::Error::other(io::Error::from_raw_os_error(
            libc::ENETUNREACH,
        )));
        assert_eq!(wrapped.errno(), libc::ENETUNREACH);
        let deadline = c(io::Error::new(io::ErrorKind::TimedOut, "no reply"));
        assert_eq!(deadline.errno(), libc::ETIMEDOUT);
        assert_eq!(deadline.kind(), io::ErrorKind::TimedOut);
        let no_address = c(io::Error::new(io::ErrorKind::NotFound, "no address"));
        assert_eq!(no_address.errno(), libc::EHOSTUNREACH);
        let other = c(io::Error::other("not registered"));
        assert_eq!(other.errno(), libc::ECONNREFUSED);
        assert!(
            other.to_string().starts_with("cannot reach h:111: "),
            "{other}"
        );
    }

    /// The errno of every variant, as the book's reliability chapter 0 (`docs/book/src/reliability/rules.md`) lists them
    /// (the C library and the VFS return these).
    #[test]
    fn every_variant_has_the_errno_reliability_md_lists() {
        let (op, path) = ("OP", || "/f".to_string());
        let mount = |status| Error::Mount {
            export: "/e".into(),
            status,
        };
        assert_eq!(mount(mountstat3::MNT3ERR_NOENT).errno(), libc::ENOENT);
        assert_eq!(mount(mountstat3::MNT3ERR_ACCES).errno(), libc::EACCES);
        assert_eq!(mount(mountstat3::MNT3ERR_PERM).errno(), libc::EACCES);
        assert_eq!(mount(mountstat3::MNT3ERR_NOTDIR).errno(), libc::ENOTDIR);
        assert_eq!(mount(mountstat3::MNT3ERR_IO).errno(), libc::EIO);
        let detail = || "d".to_string();
        for e in [
            Error::Rpc {
                op,
                path: path(),
                detail: detail(),
            },
            Error::Protocol {
                op,
                path: path(),
                detail: detail(),
            },
            Error::NotDurable {
                op,
                path: path(),
                detail: detail(),
            },
            Error::LockLost {
                op,
                path: path(),
                detail: detail(),
            },
        ] {
            assert_eq!(e.errno(), libc::EIO, "{e:?}");
        }
        let busy = Error::ServerBusy {
            op,
            path: path(),
            status: nfsstat4::NFS4ERR_DELAY,
            waited: std::time::Duration::from_secs(2),
        };
        assert_eq!(busy.errno(), libc::ETIMEDOUT);
        assert_eq!(
            Error::Shutdown { op, path: path() }.errno(),
            libc::ESHUTDOWN
        );
        assert_eq!(Error::ReadOnly { op, path: path() }.errno(), libc::EROFS);
        assert_eq!(Error::Unsupported("locks".into()).errno(), libc::ENOTSUP);
        assert_eq!(Error::InvalidInput("x".into()).errno(), libc::EINVAL);
        let nfs4 = |status| Error::Nfs4 {
            op,
            path: path(),
            status,
        };
        assert_eq!(nfs4(nfsstat4::NFS4ERR_NOENT).errno(), libc::ENOENT);
        assert_eq!(nfs4(nfsstat4::NFS4ERR_DENIED).errno(), libc::EAGAIN);
        assert_eq!(nfs4(nfsstat4::NFS4ERR_SYMLINK).errno(), libc::ELOOP);
        assert_eq!(nfs4(nfsstat4::NFS4ERR_BADNAME).errno(), libc::EINVAL);
        assert_eq!(nfs4(nfsstat4::NFS4ERR_STALE_CLIENTID).errno(), libc::EIO);
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

    #[test]
    fn config_url_and_timeout_errors_carry_typed_payloads() {
        let url = match crate::config::NfsUrl::parse("http://h/e") {
            Err(e) => Error::from(e),
            Ok(u) => panic!("parsed {u:?}"),
        };
        assert!(
            matches!(&url, Error::Url(u) if u.kind == crate::config::UrlErrorKind::Scheme),
            "{url:?}"
        );
        assert_eq!(
            url.to_string(),
            "invalid nfs URL \"http://h/e\": must start with \"nfs://\""
        );
        assert_eq!(url.errno(), libc::EINVAL);
        assert_eq!(url.kind(), io::ErrorKind::InvalidInput);

        let config = Error::from(ConfigError::NotUnderMount {
            name: "/elsewhere/f".into(),
            file: "dnfstab".into(),
        });
        assert_eq!(
            config.to_string(),
            "/elsewhere/f: not under any mount: prefix of dnfstab"
        );
        assert_eq!(config.errno(), libc::EINVAL);
        assert_eq!(config.kind(), io::ErrorKind::InvalidInput);
        let options = crate::config::MountOptions {
            connections: 0,
            ..Default::default()
        };
        let Err(bad) = options.validate() else {
            panic!("0 connections accepted");
        };
        let text = bad.to_string();
        let e = Error::from(ConfigError::from(bad));
        assert!(matches!(e, Error::Config(ConfigError::Options(_))));
        assert_eq!(e.to_string(), text, "the option error's own text");

        let t = Error::from_call("READ", "/f", CallError::TimedOut { attempts: 4 });
        assert!(matches!(t, Error::TimedOut { attempts: 4, .. }), "{t:?}");
        assert_eq!(
            t.to_string(),
            "READ /f: timed out: no reply after 4 attempt(s)"
        );
        assert_eq!(t.errno(), libc::ETIMEDOUT);
    }
}
