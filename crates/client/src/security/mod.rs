//! Kerberos for NFS: RPCSEC_GSS (RFC 2203) with the Kerberos V5 mechanism
//! (RFC 2623 flavors krb5, krb5i, krb5p), through the system's MIT GSS-API
//! library for the context, and for each call's tokens this crate's own
//! RFC 4121 code when the context's enctype is an AES one ([`cfx`],
//! [`enctype`]; MIT's calls otherwise).
//!
//! The GSS-API binding ([`gssapi`]), one context's sealing and opening of
//! calls ([`rpcsec`]), the sequence window meter ([`window`]), a blocking
//! connection that sets up a context and makes sealed calls ([`exchange`]),
//! and what the pipelined transport does with each connection of a
//! `sec=krb5*` mount, NFSv3 or NFSv4.1 ([`sealer`]: with each context's
//! renewal before its ticket ends, and the renewal of a renewable ticket
//! in the cache, [`ccache`]). See docs/security.md.
//!
//! | module | job |
//! |---|---|
//! | `ccache.rs` | the user's ticket cache (MIT's Kerberos library): whose it is, renewing its ticket |
//! | `gssapi.rs` | the MIT GSS-API library, loaded at first use: names, context steps, MIC, wrap; the lucid export of a context's keys |
//! | `enctype.rs` | the AES enctypes (RFC 3961/3962/8009): key derivation, CBC-CTS, HMAC, encrypt and checksum |
//! | `cfx.rs` | RFC 4121 MIC and Wrap tokens made and checked in-process |
//! | `window.rs` | at most the server's window of calls in flight per context |
//! | `rpcsec.rs` | seal a call, open its reply; the INIT call and reply |
//! | `exchange.rs` | a TCP connection with a context: the handshake, then calls one at a time |
//! | `sealer.rs` | a transport connection's context: seal each call as it is written, open each reply |

pub mod ccache;
pub mod cfx;
pub mod enctype;
pub mod exchange;
pub mod gssapi;
pub mod rpcsec;
pub mod sealer;
pub mod window;

use std::fmt;
use std::io;

use directnfs_wire::rpc::AuthStat;

pub use exchange::GssConnection;
pub use gssapi::GssError;
pub use sealer::{counters, set_renew_before_expiry, ConnectionSealer, GssCounters, GssSetup};

/// A security flavor (the `sec=` mount option's values, RFC 2623 §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// AUTH_SYS: the client's word for its uid and gids.
    Sys,
    /// Kerberos V5 authentication; each call's header is checksummed.
    Krb5,
    /// krb5 and each call's and reply's body checksummed (integrity).
    Krb5i,
    /// krb5 and each body encrypted (privacy).
    Krb5p,
}

impl Flavor {
    /// Parses `sys`, `krb5`, `krb5i` or `krb5p` (any case).
    pub fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "sys" | "auth_sys" => Some(Flavor::Sys),
            "krb5" => Some(Flavor::Krb5),
            "krb5i" => Some(Flavor::Krb5i),
            "krb5p" => Some(Flavor::Krb5p),
            _ => None,
        }
    }

    /// The option value as written.
    pub fn name(self) -> &'static str {
        match self {
            Flavor::Sys => "sys",
            Flavor::Krb5 => "krb5",
            Flavor::Krb5i => "krb5i",
            Flavor::Krb5p => "krb5p",
        }
    }
}

/// Why a Kerberos call or context failed. Every message names the server.
#[derive(Debug)]
pub enum SecurityError {
    /// `sys` was given where a Kerberos flavor is needed.
    NotKerberos,
    /// The GSS-API library failed; [`GssError::NoCredentials`] when the
    /// user has no ticket and no keytab.
    Gss {
        /// The server's address.
        server: String,
        /// The library's error.
        source: GssError,
    },
    /// The server answered AUTH_ERROR.
    Rejected {
        /// The server's address.
        server: String,
        /// Its `auth_stat`.
        status: AuthStat,
    },
    /// A reply's verifier is not the context's checksum of the call's
    /// sequence number: not from the server, or altered.
    BadVerifier {
        /// The server's address.
        server: String,
        /// What was wrong.
        detail: String,
    },
    /// A reply that does not decode or does not match its call.
    Malformed {
        /// The server's address.
        server: String,
        /// What was wrong.
        detail: String,
    },
    /// The context used up its sequence numbers (RFC 2203 MAXSEQ).
    ContextExhausted {
        /// The server's address.
        server: String,
    },
    /// The connection failed or timed out.
    Io {
        /// The server's address.
        server: String,
        /// The error.
        source: io::Error,
    },
}

impl SecurityError {
    /// The errno a POSIX front end reports: EACCES for missing or refused
    /// credentials, EIO for replies that fail their checks, the I/O
    /// error's own otherwise.
    pub fn errno(&self) -> i32 {
        match self {
            SecurityError::Gss {
                source: GssError::NoCredentials(_),
                ..
            }
            | SecurityError::Rejected { .. } => libc::EACCES,
            SecurityError::NotKerberos => libc::EINVAL,
            SecurityError::Io { source, .. } => source.raw_os_error().unwrap_or(libc::EIO),
            _ => libc::EIO,
        }
    }
}

impl fmt::Display for SecurityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SecurityError::NotKerberos => f.write_str("sec=sys has no Kerberos context"),
            SecurityError::Gss {
                server,
                source: GssError::NoCredentials(detail),
            } => write!(
                f,
                "Kerberos to {server}: permission denied: no Kerberos credentials (run kinit, or set KRB5_CLIENT_KTNAME to a client keytab): {detail}"
            ),
            SecurityError::Gss { server, source } => write!(f, "Kerberos to {server}: {source}"),
            SecurityError::Rejected { server, status } => write!(
                f,
                "Kerberos to {server}: permission denied: {} ({status})",
                rpcsec::describe_auth(*status)
            ),
            SecurityError::BadVerifier { server, detail } => {
                write!(f, "Kerberos to {server}: reply verifier does not check: {detail}")
            }
            SecurityError::Malformed { server, detail } => {
                write!(f, "Kerberos to {server}: bad reply: {detail}")
            }
            SecurityError::ContextExhausted { server } => write!(
                f,
                "Kerberos to {server}: context used up its sequence numbers"
            ),
            SecurityError::Io { server, source } => write!(f, "Kerberos to {server}: {source}"),
        }
    }
}

impl std::error::Error for SecurityError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SecurityError::Gss { source, .. } => Some(source),
            SecurityError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The function `name` (its C name, NUL-terminated) of the system library
/// `lib`, loaded from the file `file` (which the error names): how
/// [`gssapi`] and [`ccache`] resolve their entry points.
///
/// # Safety
/// `T` must be the C function type of the symbol `name`.
unsafe fn library_fn<T: Copy>(
    lib: &libloading::Library,
    file: &str,
    name: &[u8],
) -> Result<T, String> {
    // SAFETY: the caller names the right type.
    unsafe { lib.get::<T>(name) }
        .map(|s| *s)
        .map_err(|e| format!("{file} has no {}: {e}", String::from_utf8_lossy(name)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flavors_parse_and_print() {
        for f in [Flavor::Sys, Flavor::Krb5, Flavor::Krb5i, Flavor::Krb5p] {
            assert_eq!(Flavor::parse(f.name()), Some(f));
        }
        assert_eq!(Flavor::parse("KRB5P"), Some(Flavor::Krb5p));
        assert_eq!(Flavor::parse("krb4"), None);
    }

    #[test]
    fn missing_credentials_are_eacces_and_name_the_server() {
        let e = SecurityError::Gss {
            server: "10.0.0.1:2049".into(),
            source: GssError::NoCredentials("cache not found".into()),
        };
        assert_eq!(e.errno(), libc::EACCES);
        let text = e.to_string();
        assert!(
            text.contains("10.0.0.1:2049") && text.contains("kinit"),
            "{text}"
        );
    }
}
