//! One-shot RPCs for the cold paths: PORTMAP GETPORT and MOUNT EXPORT/MNT,
//! each on a short-lived connection of its own ([`rpc_once`]), and the NULL
//! probe of a new channel, on the connection it is about to hand over to
//! the channel ([`null_probe`]). One call, one reply, then done.
//!
//! The whole reply must arrive before one deadline: a server that trickles
//! a byte at a time cannot hold the caller longer than the timeout (a
//! per-`read()` timeout would restart with every byte). Replies are bounded
//! on the record-marking header, before anything is buffered.

use std::fmt;
use std::io::{self, Read};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use directnfs_wire::rpc::record::fragment_header;
use directnfs_wire::rpc::{
    encode_call_header, AcceptedReply, AuthStat, RecordReader, RejectedReply, ReplyBody,
    ReplyHeader,
};
use directnfs_wire::{Decode, Encode, Procedure, XdrReader};

use super::socket::{connect, ConnectSpec};
use crate::security::ConnectionSealer;

/// Largest reply accepted on a fresh cold-path connection (an EXPORT list
/// can be long).
const MAX_COLD_REPLY: usize = 4 << 20;

/// Largest reply accepted for a NULL probe (it has no results at all).
const MAX_PROBE_REPLY: usize = 64 * 1024;

/// Calls procedure `P` once on a fresh connection to `spec.remote`, within
/// `spec.timeout` for the connect and again for the reply.
///
/// Errors name `P` and the server address ([`OneshotError`]); as a
/// `crate::Error` (`From`, in `error.rs`), a connection that could not be
/// made, or broke, or a reply that did not come in time is `Connect` (with
/// the OS error, or ETIMEDOUT); a reply that does not decode is
/// `Protocol`; an AUTH_ERROR is `Auth`; any other rejection is `Rpc`.
pub(crate) fn rpc_once<P: Procedure>(
    spec: &ConnectSpec,
    cred: &[u8],
    args: &P::Args,
) -> Result<P::Res, OneshotError> {
    let server = spec.remote.to_string();
    let call = CallOf {
        prog: P::PROG,
        vers: P::VERS,
        proc_: P::PROC,
    };
    let reply = connect(spec).map_err(Failure::Io).and_then(|mut stream| {
        let mut body = Vec::with_capacity(256);
        args.encode(&mut body);
        exchange(&mut stream, call, cred, &body, MAX_COLD_REPLY, spec.timeout)
    });
    let failed = |failure: Failure| OneshotError {
        op: P::NAME,
        server: server.clone(),
        failure,
    };
    let reply = reply.map_err(failed)?;
    let mut r = XdrReader::new(&reply.record[reply.results..]);
    P::Res::decode(&mut r).map_err(|e| failed(Failure::Malformed(e.to_string())))
}

/// Sends a NULL call (procedure 0 of `prog`/`vers`) on a fresh connection
/// and waits for its reply: proof that the server answers on this path,
/// not just that TCP connected. Anything but an accepted SUCCESS is an
/// error: `InvalidData` for a reply that is malformed or refuses the call
/// (the message says which), the I/O error (`TimedOut` after `timeout`)
/// otherwise.
pub(crate) fn null_probe(
    stream: &mut TcpStream,
    cred: &[u8],
    prog: u32,
    vers: u32,
    timeout: Duration,
) -> io::Result<()> {
    let call = CallOf {
        prog,
        vers,
        proc_: 0,
    };
    match exchange(stream, call, cred, &[], MAX_PROBE_REPLY, timeout) {
        Ok(_) => Ok(()),
        Err(Failure::Io(e)) => Err(e),
        Err(other) => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("NULL probe: {}", other.describe()),
        )),
    }
}

/// Sends one call of `prog`/`vers` procedure `proc_` (`args` already
/// encoded) on a fresh connection before it is handed to its channel,
/// and waits for the reply: the results' bytes. `salt` tells the XIDs
/// of several calls on one connection apart (a server's duplicate
/// request cache keys on the XID). The NFSv4.1 session trunking check
/// (EXCHANGE_ID) and BIND_CONN_TO_SESSION of a new connection go here.
/// Any failure is an `io::Error` (`InvalidData` for a reply that is
/// malformed or refuses the call). With `sealer` (a Kerberos mount: the
/// connection's RPCSEC_GSS context) the call is sealed and its reply
/// checked and opened with it, as the transport's calls are.
pub(crate) fn call_on(
    stream: &mut TcpStream,
    cred: &[u8],
    (prog, vers, proc_): (u32, u32, u32),
    salt: u32,
    args: &[u8],
    timeout: Duration,
    sealer: Option<&ConnectionSealer>,
) -> io::Result<Vec<u8>> {
    let call = CallOf { prog, vers, proc_ };
    let sent = Sent {
        cred,
        args,
        salt,
        sealer,
    };
    match exchange_salted(stream, call, sent, MAX_PROBE_REPLY, timeout) {
        Ok(reply) => Ok(reply.record[reply.results..].to_vec()),
        Err(Failure::Io(e)) => Err(e),
        Err(other) => Err(io::Error::new(io::ErrorKind::InvalidData, other.describe())),
    }
}

/// True when `e` says nothing answered at the address: the connection was
/// refused, reset or closed before a reply, the host or network is
/// unreachable, or the connect itself timed out (a host that is down drops
/// the SYNs). This is what a server that is down, restarting or taking
/// over from a failed partner looks like, so a caller that must wait for
/// it (`mnt_timeout`) tries again. A reply that did not come in time on an
/// accepted connection is not: the server is there and silent.
pub(crate) fn nobody_answered(e: &io::Error) -> bool {
    use io::ErrorKind as K;
    if matches!(
        e.raw_os_error(),
        Some(libc::EHOSTUNREACH | libc::ENETUNREACH | libc::ENETDOWN | libc::EHOSTDOWN)
    ) {
        return true;
    }
    match e.kind() {
        K::ConnectionRefused
        | K::ConnectionReset
        | K::ConnectionAborted
        | K::NotConnected
        | K::BrokenPipe
        | K::UnexpectedEof
        | K::HostUnreachable
        | K::NetworkUnreachable
        | K::NetworkDown => true,
        // The connect's own timeout is a bare error (the OS's ETIMEDOUT or
        // socket2's); a reply deadline carries [`ReplyDeadline`], and a
        // timeout a caller wrapped with words says nothing about which.
        K::TimedOut => e.get_ref().is_none(),
        _ => false,
    }
}

/// Program, version and procedure of a call.
#[derive(Clone, Copy)]
struct CallOf {
    prog: u32,
    vers: u32,
    proc_: u32,
}

/// A one-shot call that failed: the procedure, the server's address and
/// what went wrong. `error.rs` puts it in the caller's words (this module
/// names no error type above `io/`).
#[derive(Debug)]
pub(crate) struct OneshotError {
    /// The procedure's name.
    pub op: &'static str,
    /// The server's address.
    pub server: String,
    pub failure: Failure,
}

/// What went wrong with a one-shot call.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Connecting, sending or receiving failed, or the deadline passed.
    Io(io::Error),
    /// Not a valid reply.
    Malformed(String),
    /// MSG_DENIED AUTH_ERROR.
    Auth(AuthStat),
    /// Any other refusal, in words.
    Refused(String),
}

impl Failure {
    fn describe(&self) -> String {
        match self {
            Failure::Io(e) => e.to_string(),
            Failure::Malformed(d) => format!("malformed reply: {d}"),
            Failure::Auth(s) => format!("server rejected the credentials: {s}"),
            Failure::Refused(d) => d.clone(),
        }
    }
}

/// A reply record and where its results start.
struct Reply {
    record: Vec<u8>,
    results: usize,
}

/// Sends one call (`args` already encoded) on `stream` and reads its reply
/// within `timeout`.
fn exchange(
    stream: &mut TcpStream,
    call: CallOf,
    cred: &[u8],
    args: &[u8],
    max_record: usize,
    timeout: Duration,
) -> Result<Reply, Failure> {
    let sent = Sent {
        cred,
        args,
        salt: 0,
        sealer: None,
    };
    exchange_salted(stream, call, sent, max_record, timeout)
}

/// What [`exchange_salted`] sends: the credential and arguments, `salt`
/// mixed into the XID, and the connection's RPCSEC_GSS context if the
/// call is to be sealed with it.
struct Sent<'a> {
    cred: &'a [u8],
    args: &'a [u8],
    salt: u32,
    sealer: Option<&'a ConnectionSealer>,
}

/// [`exchange`] with `salt` mixed into the XID, sealed with `sealer`.
fn exchange_salted(
    stream: &mut TcpStream,
    call: CallOf,
    Sent {
        cred,
        args,
        salt,
        sealer,
    }: Sent<'_>,
    max_record: usize,
    timeout: Duration,
) -> Result<Reply, Failure> {
    // Any XID will do (one call per connection, or `salt` apart); this
    // one differs between processes and procedures, which helps when
    // reading a capture.
    let xid = 0x6d00_0000 ^ std::process::id().rotate_left(8) ^ call.proc_ ^ salt.rotate_left(16);
    let mut msg = Vec::with_capacity(64 + cred.len() + args.len());
    msg.extend_from_slice(&[0; 4]);
    encode_call_header(&mut msg, xid, call.prog, call.vers, call.proc_, cred);
    msg.extend_from_slice(args);
    if let Some(sealer) = sealer {
        // From the message type on: the sealer builds the RPCSEC_GSS
        // message around the procedure and its arguments.
        let sealed = sealer.seal(xid, &msg[8..], None).map_err(|e| {
            Failure::Io(io::Error::new(
                io::ErrorKind::PermissionDenied,
                e.to_string(),
            ))
        })?;
        msg.truncate(4);
        msg.extend_from_slice(&sealed);
    }
    let mark = fragment_header(msg.len() - 4, true);
    msg[..4].copy_from_slice(&mark);
    let deadline = Instant::now() + timeout;
    stream
        .set_write_timeout(Some(timeout))
        .and_then(|()| super::socket::send_all(stream, &msg))
        .map_err(Failure::Io)?;
    let record = read_record(stream, max_record, deadline).map_err(|e| match e.kind() {
        io::ErrorKind::InvalidData => Failure::Malformed(e.to_string()),
        _ => Failure::Io(e),
    })?;
    let record = match sealer.map(|s| s.open(&record, max_record)) {
        None | Some(Ok(None)) => record,
        Some(Ok(Some(plain))) => plain,
        Some(Err(e)) => return Err(Failure::Malformed(e.to_string())),
    };
    let mut r = XdrReader::new(&record);
    let header = ReplyHeader::decode(&mut r).map_err(|e| Failure::Malformed(e.to_string()))?;
    if header.xid != xid {
        return Err(Failure::Malformed(format!(
            "reply XID {:#x} does not match call {xid:#x}",
            header.xid
        )));
    }
    let refused = match header.body {
        ReplyBody::Accepted {
            stat: AcceptedReply::Success,
            ..
        } => {
            let results = r.position();
            return Ok(Reply { record, results });
        }
        ReplyBody::Denied(RejectedReply::AuthError(status)) => return Err(Failure::Auth(status)),
        ReplyBody::Denied(RejectedReply::RpcMismatch { low, high }) => {
            format!("server rejected the call: RPC version mismatch (supports {low}..={high})")
        }
        ReplyBody::Accepted {
            stat: AcceptedReply::ProgMismatch { low, high },
            ..
        } => format!(
            "server does not support version {} of program {} (supports {low}..={high})",
            call.vers, call.prog
        ),
        ReplyBody::Accepted {
            stat: AcceptedReply::Error(s),
            ..
        } => format!("server could not run the call: {s}"),
    };
    Err(Failure::Refused(refused))
}

/// The error of a reply that did not arrive in time on a connection that
/// was made: told apart from a connect timeout by [`nobody_answered`].
#[derive(Debug)]
struct ReplyDeadline;

impl fmt::Display for ReplyDeadline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("no complete reply before the deadline")
    }
}

impl std::error::Error for ReplyDeadline {}

fn deadline_passed() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, ReplyDeadline)
}

/// Reads from `stream` until one complete record (of at most `max_record`
/// bytes) has arrived, or fails at `deadline`.
fn read_record(
    stream: &mut TcpStream,
    max_record: usize,
    deadline: Instant,
) -> io::Result<Vec<u8>> {
    let mut reader = RecordReader::new(max_record);
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        // Hand out complete fragments first; keep only what is left.
        loop {
            let step = reader
                .next(&buf)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            if step.consumed == 0 {
                break;
            }
            let record = step.record.map(|r| r.into_owned());
            buf.drain(..step.consumed);
            if let Some(r) = record {
                return Ok(r);
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(deadline_passed());
        }
        stream.set_read_timeout(Some(left))?;
        let n = match stream.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(deadline_passed())
            }
            Err(e) => return Err(e),
        };
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "server closed the connection before its reply was complete",
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_deadline_is_not_a_server_that_is_absent() {
        assert!(!nobody_answered(&deadline_passed()));
        // A connect that timed out (SYNs dropped) is.
        assert!(nobody_answered(&io::Error::from(io::ErrorKind::TimedOut)));
        for errno in [libc::ECONNREFUSED, libc::ECONNRESET, libc::EHOSTUNREACH] {
            assert!(nobody_answered(&io::Error::from_raw_os_error(errno)));
        }
        assert!(!nobody_answered(&io::Error::new(
            io::ErrorKind::InvalidData,
            "garbage"
        )));
        assert!(!nobody_answered(&io::Error::from_raw_os_error(
            libc::EADDRNOTAVAIL
        )));
    }
}
