//! Failures below the NFS layer, as seen by one call.

use directnfs_wire::rpc::{AcceptStat, AuthStat};
use directnfs_wire::DecodeError;

/// Why an RPC call produced no usable reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CallError {
    /// No reply within the soft-mount limit.
    #[error("no reply from the server after {attempts} attempts")]
    TimedOut { attempts: u32 },
    /// The client is shutting down.
    #[error("client is shut down")]
    Shutdown,
    /// No connection can be made for want of credentials (the user's
    /// Kerberos ticket ran out): the message names the server, the ticket
    /// cache and its principal, and what to do.
    /// `sent`: the call was written to a connection before (it may have
    /// reached the server); false: never sent.
    #[error("{detail}")]
    NoCredentials { detail: String, sent: bool },
    /// The server denied the call (RPC_MISMATCH).
    #[error("server rejected the call: RPC version mismatch (supports {low}..={high})")]
    RpcMismatch { low: u32, high: u32 },
    /// The server denied the call (AUTH_ERROR).
    #[error("server rejected the credentials: {0}")]
    Auth(AuthStat),
    /// PROG_MISMATCH.
    #[error("server does not support this program version (supports {low}..={high})")]
    ProgMismatch { low: u32, high: u32 },
    /// Any other accept_stat: PROG_UNAVAIL, PROC_UNAVAIL, GARBAGE_ARGS, SYSTEM_ERR.
    #[error("server could not run the call: {0}")]
    Accept(AcceptStat),
    /// The reply could not be decoded.
    #[error("malformed reply from server: {0}")]
    Decode(DecodeError),
    /// A broken invariant; never expected.
    #[error("internal error: {0}")]
    Internal(&'static str),
}
