//! RPCSEC_GSS over one blocking TCP connection: the context creation
//! handshake (RFC 2203 §5.2) and sealed calls, one at a time. The
//! pipelined transport sets up each connection's context with it
//! (`sealer.rs`); the Kerberos tests make calls with it.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use directnfs_wire::rpc::auth::AuthFlavor;
use directnfs_wire::rpc::gss::{self, GSS_S_COMPLETE, GSS_S_CONTINUE_NEEDED};
use directnfs_wire::rpc::record::fragment_header;
use directnfs_wire::rpc::{RecordReader, MAX_FRAGMENT_LEN};

use super::gssapi::SecContext;
use super::rpcsec::{init_call, init_reply, service_of, GssContext, SealedCall};
use super::{Flavor, SecurityError};

/// Largest reply record taken (a 1 MiB READ with its wrapping).
const MAX_REPLY: usize = 4 << 20;

/// Context creation rounds before giving up (Kerberos needs one).
const MAX_INIT_ROUNDS: usize = 4;

/// A TCP connection to one RPC program with an established RPCSEC_GSS
/// context: every call on it is sealed and every reply checked.
#[derive(Debug)]
pub struct GssConnection {
    stream: TcpStream,
    prog: u32,
    vers: u32,
    context: GssContext,
    next_xid: u32,
}

impl GssConnection {
    /// Sets up a context on `stream` for program `prog` version `vers` of
    /// the server `host` (its Kerberos principal is `nfs/host`), with the
    /// protection of `flavor` (krb5, krb5i or krb5p). `timeout` bounds each
    /// reply. The credentials are the process's: its ticket cache
    /// (`KRB5CCNAME`) or client keytab (`KRB5_CLIENT_KTNAME`).
    pub fn establish(
        stream: TcpStream,
        host: &str,
        prog_vers: (u32, u32),
        flavor: Flavor,
        timeout: Duration,
    ) -> Result<Self, SecurityError> {
        Self::establish_bound(stream, host, prog_vers, flavor, timeout, None)
    }

    /// [`establish`](Self::establish) on a connection in TLS whose session's
    /// `tls-exporter` value (RFC 9266) is `tls_exporter`: the context is
    /// bound to that session with GSS-API channel bindings (RFC 9289
    /// §4.2.1, RFC 5056), so a server that checks them refuses a context
    /// made over another TLS session. `None`: no bindings (no TLS).
    pub fn establish_bound(
        mut stream: TcpStream,
        host: &str,
        (prog, vers): (u32, u32),
        flavor: Flavor,
        timeout: Duration,
        tls_exporter: Option<&[u8]>,
    ) -> Result<Self, SecurityError> {
        let server = stream
            .peer_addr()
            .map_or_else(|_| host.to_owned(), |a| a.to_string());
        if flavor == Flavor::Sys {
            return Err(SecurityError::NotKerberos);
        }
        let gss_failed = |source| SecurityError::Gss {
            server: server.clone(),
            source,
        };
        let mut sec = SecContext::new(&format!("nfs@{host}")).map_err(gss_failed)?;
        if let Some(exporter) = tls_exporter {
            sec.bind_channel(super::gssapi::tls_exporter_binding(exporter));
        }
        let service = service_of(flavor);
        let mut xid = 0x4753_0000 ^ std::process::id().rotate_left(12);
        let (mut token, mut complete) = sec.step(None).map_err(gss_failed)?;
        let mut handle = Vec::new();
        for _ in 0..MAX_INIT_ROUNDS {
            xid = xid.wrapping_add(1);
            let call = init_call(xid, (prog, vers), service, &handle, &token);
            let record =
                exchange(&mut stream, &call, timeout).map_err(|e| io_failed(&server, e))?;
            let (verf, res) = init_reply(&record, xid, &server)?;
            if res.gss_major != GSS_S_COMPLETE && res.gss_major != GSS_S_CONTINUE_NEEDED {
                let why = if res.gss_major & (0xff << 16) == super::gssapi::GSS_S_BAD_BINDINGS {
                    if tls_exporter.is_some() {
                        ": its channel bindings are not this TLS session's (GSS_S_BAD_BINDINGS; \
                         is something ending TLS between the client and the server?)"
                    } else {
                        ": it asks for channel bindings and the connection has none \
                         (GSS_S_BAD_BINDINGS; xprtsec=tls gives them)"
                    }
                } else {
                    ""
                };
                return Err(SecurityError::Malformed {
                    server,
                    detail: format!(
                        "the server's GSS-API refused the context (major {:#x}, minor {:#x}){why}",
                        res.gss_major, res.gss_minor
                    ),
                });
            }
            handle = res.handle;
            if !complete {
                let (next, done) = sec.step(Some(&res.gss_token)).map_err(gss_failed)?;
                token = next;
                complete = done;
            }
            if res.gss_major == GSS_S_COMPLETE && complete {
                // RFC 2203 §5.2.3.1: the final verifier is the checksum of
                // the window, proof that the server holds the context.
                if verf.flavor != AuthFlavor::RPCSEC_GSS {
                    return Err(SecurityError::BadVerifier {
                        server,
                        detail: "context creation reply without an RPCSEC_GSS verifier".into(),
                    });
                }
                sec.verify_mic(&gss::reply_verifier_input(res.seq_window), &verf.body)
                    .map_err(|e| SecurityError::BadVerifier {
                        server: server.clone(),
                        detail: e.to_string(),
                    })?;
                let context = GssContext::new(sec, handle, flavor, res.seq_window, server);
                return Ok(Self {
                    stream,
                    prog,
                    vers,
                    context,
                    next_xid: xid.wrapping_add(0x100),
                });
            }
        }
        Err(SecurityError::Malformed {
            server,
            detail: format!("no context after {MAX_INIT_ROUNDS} rounds"),
        })
    }

    /// The context (its window and handle).
    pub fn context(&self) -> &GssContext {
        &self.context
    }

    /// The connection and its context, for a caller that makes the calls
    /// itself (the pipelined transport: `sealer.rs`).
    pub fn into_parts(self) -> (TcpStream, GssContext) {
        (self.stream, self.context)
    }

    /// Seals a call of procedure `proc_` without sending it (what would go
    /// on the wire).
    pub fn seal(&mut self, proc_: u32, args: &[u8]) -> Result<(u32, SealedCall), SecurityError> {
        self.next_xid = self.next_xid.wrapping_add(1);
        let xid = self.next_xid;
        Ok((
            xid,
            self.context
                .seal(xid, (self.prog, self.vers, proc_), &[args])?,
        ))
    }

    /// Calls procedure `proc_` with `args` (encoded) and returns the
    /// checked results' bytes. Within the server's window by
    /// construction: one call at a time, and the window is entered first.
    pub fn call(
        &mut self,
        proc_: u32,
        args: &[u8],
        timeout: Duration,
    ) -> Result<Vec<u8>, SecurityError> {
        let (xid, sealed, record) = {
            let _slot = self.context.window().enter();
            self.next_xid = self.next_xid.wrapping_add(1);
            let xid = self.next_xid;
            let sealed = self
                .context
                .seal(xid, (self.prog, self.vers, proc_), &[args])?;
            let record = exchange(&mut self.stream, &sealed.message, timeout)
                .map_err(|e| io_failed(&self.context_server(), e))?;
            (xid, sealed, record)
        };
        self.context.open(&record, xid, sealed.seq_num, MAX_REPLY)
    }

    /// Sends `message` (a call sealed by [`seal`](Self::seal)) as it is
    /// and returns the reply record unopened, for a caller that checks it
    /// with [`GssContext::open`] itself.
    pub fn round_trip(
        &mut self,
        message: &[u8],
        timeout: Duration,
    ) -> Result<Vec<u8>, SecurityError> {
        exchange(&mut self.stream, message, timeout)
            .map_err(|e| io_failed(&self.context_server(), e))
    }

    fn context_server(&self) -> String {
        self.stream
            .peer_addr()
            .map_or_else(|_| "server".to_owned(), |a| a.to_string())
    }
}

fn io_failed(server: &str, source: io::Error) -> SecurityError {
    SecurityError::Io {
        server: server.to_owned(),
        source,
    }
}

/// Sends `message` as one record and reads one reply record within
/// `timeout` per read.
fn exchange(stream: &mut TcpStream, message: &[u8], timeout: Duration) -> io::Result<Vec<u8>> {
    let len = message.len();
    if len > MAX_FRAGMENT_LEN {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "call too large for one fragment",
        ));
    }
    let mut out = Vec::with_capacity(4 + len);
    out.extend_from_slice(&fragment_header(len, true));
    out.extend_from_slice(message);
    stream.set_write_timeout(Some(timeout))?;
    stream.write_all(&out)?;
    stream.set_read_timeout(Some(timeout))?;
    let mut reader = RecordReader::new(MAX_REPLY);
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let step = reader
            .next(&buf)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        if step.consumed > 0 {
            let record = step.record.map(|r| r.into_owned());
            buf.drain(..step.consumed);
            if let Some(r) = record {
                return Ok(r);
            }
            continue;
        }
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "server closed the connection before its reply was complete",
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}
