//! RPC-with-TLS (RFC 9289): the AUTH_TLS probe, the TLS 1.3 handshake
//! (rustls, ring provider) and a relay thread per connection.
//!
//! [`start`] takes a freshly connected TCP socket and returns a local
//! socket (one end of a `socketpair`) that the rest of the driver uses as
//! if it were the connection: plaintext RPC records go in and come out
//! there, and a thread of its own (`dnfs-tls`) moves them through the TLS
//! session to and from the server. So the channel, the receive state
//! machine and the oneshot calls stay as they are: what they write is
//! encrypted, whatever they read was decrypted and authenticated. The cost
//! is one extra copy each way through the kernel and a thread per
//! connection (see docs/security.md for the measurement).
//!
//! Steps on each connection (each one bounded by the connect timeout):
//! 1. `starttls`: an RPC NULL call with the credential flavour AUTH_TLS
//!    (RFC 9289 §4.1); the server must accept it with an AUTH_NONE
//!    verifier whose body is `STARTTLS`. Anything else is an error and
//!    nothing more is sent on that connection. Without `starttls` (TLS from
//!    the first byte, for a TLS terminator in front of the server) this
//!    step is skipped.
//! 2. The TLS 1.3 handshake, ALPN `sunrpc` offered (a server that ignores
//!    ALPN is accepted, RFC 9289 §5.2), the server's certificate checked
//!    against the CA and the name configured.
//! 3. A NULL call (AUTH_NONE) inside TLS: with TLS 1.3 the server judges
//!    the client's certificate after the client thinks the handshake is
//!    over, so a refusal (no certificate, an unknown one) arrives as an
//!    alert only when the first record is read. Reading it here gives the
//!    caller that alert as the error, not a connection closed later. A
//!    server that asked for a client certificate, got none (`xprtsec=tls`)
//!    and closed the connection without an alert (oncrpc4j does) fails
//!    the connection with EACCES saying so ([`NoCertificate`]), not with
//!    an end of file that a mount would retry until `mnt_timeout`.
//! 4. The session's `tls-exporter` value (RFC 9266) is kept with the
//!    returned stream ([`Started::exporter`]): a Kerberos context made on
//!    the connection is bound to this TLS session with it (RFC 9289 §4.2.1,
//!    `security/gssapi.rs`).

use std::fmt;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use directnfs_wire::rpc::auth::AuthFlavor;
use directnfs_wire::rpc::record::fragment_header;
use directnfs_wire::rpc::tls::{probe_answer, ProbeAnswer};
use directnfs_wire::rpc::ReplyHeader;
use directnfs_wire::{Decode, XdrReader};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore};

/// The ALPN protocol id of RPC-with-TLS (RFC 9289 §7.2).
const ALPN_SUNRPC: &[u8] = b"sunrpc";

/// Largest reply accepted for the probe or the NULL check.
const MAX_PROBE_REPLY: usize = 64 * 1024;

/// Where the system's CA bundle usually is (Debian and derivatives first),
/// when no `tls_ca` is given and `SSL_CERT_FILE` is not set.
const SYSTEM_CA_FILES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
];

/// What the user asked of TLS, as plain values (`config/` turns the
/// options into this; `io/` never names `config/`).
#[derive(Debug, Clone, Default)]
pub(crate) struct TlsRequest {
    /// PEM file of the CA(s) to trust; `None`: the system's bundle.
    pub ca: Option<PathBuf>,
    /// PEM client certificate chain and key (`mtls`).
    pub client: Option<(PathBuf, PathBuf)>,
    /// The name the server's certificate must carry; `None`: the server
    /// as the target names it.
    pub name: Option<String>,
    /// AUTH_TLS probe first (RFC 9289); false: TLS from the first byte.
    pub starttls: bool,
}

/// A ready TLS set-up for the connections of one server: the rustls
/// configuration (trust, client certificate), the name to check, and the
/// RPC program the probes name (NFS, or MOUNT, the portmapper or NLM:
/// RFC 9289 applies to every RPC program; [`TlsSpec::for_program`]).
#[derive(Clone)]
pub(crate) struct TlsSpec {
    config: Arc<ClientConfig>,
    /// Without a client certificate: how often a server asked for one.
    no_certificate: Option<Arc<NoCertificate>>,
    name: ServerName<'static>,
    starttls: bool,
    prog: u32,
    vers: u32,
}

impl fmt::Debug for TlsSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsSpec")
            .field("name", &self.name)
            .field("starttls", &self.starttls)
            .field("prog", &self.prog)
            .field(
                "client_cert",
                &self.config.client_auth_cert_resolver.has_certs(),
            )
            .finish()
    }
}

impl TlsSpec {
    /// Reads the files `req` names and builds the configuration; `server`
    /// is the name to check when `req.name` is not set. Errors name the
    /// file or the value that failed (never a key's contents).
    pub(crate) fn new(req: &TlsRequest, server: &str, prog: u32, vers: u32) -> io::Result<Self> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let roots = load_roots(req.ca.as_deref())?;
        let builder = ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| io::Error::other(format!("TLS set-up: {e}")))?
            .with_root_certificates(roots);
        let mut no_certificate = None;
        let mut config = match &req.client {
            Some((cert, key)) => {
                let chain = load_certs(cert, "tls_cert")?;
                let key = PrivateKeyDer::from_pem_file(key).map_err(|e| {
                    invalid(format!(
                        "tls_key {}: no usable private key: {e}",
                        key.display()
                    ))
                })?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| invalid(format!("tls_cert/tls_key: {e}")))?
            }
            None => {
                let resolver = Arc::new(NoCertificate::default());
                no_certificate = Some(Arc::clone(&resolver));
                builder.with_client_cert_resolver(resolver)
            }
        };
        config.alpn_protocols = vec![ALPN_SUNRPC.to_vec()];
        let wanted = req.name.as_deref().unwrap_or(server);
        let name = ServerName::try_from(wanted.to_owned())
            .map_err(|e| invalid(format!("tls_name {wanted:?}: not a DNS name or IP: {e}")))?;
        Ok(TlsSpec {
            config: Arc::new(config),
            no_certificate,
            name,
            starttls: req.starttls,
            prog,
            vers,
        })
    }

    /// The same set-up (trust, certificate, name) for the connections of
    /// another RPC program of the same server: its probes and NULL check
    /// name `prog`/`vers`.
    pub(crate) fn for_program(&self, prog: u32, vers: u32) -> Self {
        TlsSpec {
            prog,
            vers,
            ..self.clone()
        }
    }
}

/// The client-certificate side of a set-up without one (`xprtsec=tls`):
/// sends none, as `with_no_client_auth` would, and counts the servers'
/// requests for one. The count is shared by the set-up's connections (one
/// server, one configuration): one that grew during a failed handshake
/// says the server asked.
#[derive(Debug, Default)]
pub(crate) struct NoCertificate {
    asked: AtomicU64,
}

impl NoCertificate {
    fn asked(&self) -> u64 {
        self.asked.load(Ordering::Relaxed)
    }
}

impl rustls::client::ResolvesClientCert for NoCertificate {
    fn resolve(
        &self,
        _root_hint_subjects: &[&[u8]],
        _sigschemes: &[rustls::SignatureScheme],
    ) -> Option<Arc<rustls::sign::CertifiedKey>> {
        self.asked.fetch_add(1, Ordering::Relaxed);
        None
    }

    fn has_certs(&self) -> bool {
        false
    }
}

/// The error of a handshake that ended without an alert after the server
/// asked for the client certificate this set-up does not have.
fn certificate_wanted(e: io::Error) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!(
            "the server asked for a client certificate and closed the connection when none \
             came ({e}): it wants xprtsec=mtls with tls_cert and tls_key"
        ),
    )
}

/// The program a connection is for, as errors name it.
fn program_name(prog: u32) -> &'static str {
    match prog {
        100_000 => "the portmapper",
        100_003 => "NFS",
        100_005 => "MOUNT",
        100_021 => "NLM",
        _ => "the RPC program",
    }
}

/// The label of the `tls-exporter` channel binding (RFC 9266 §2).
const EXPORTER_LABEL: &[u8] = b"EXPORTER-Channel-Binding";

/// Length of the `tls-exporter` value (RFC 9266 §2).
pub(crate) const EXPORTER_LEN: usize = 32;

/// The `tls-exporter` channel binding value of an established TLS 1.3
/// session (RFC 9266: the exporter with label `EXPORTER-Channel-Binding`,
/// no context, 32 bytes). Both ends of one session compute the same value;
/// another session (even to the same server) has another one.
pub(crate) fn exporter<D>(conn: &rustls::ConnectionCommon<D>) -> io::Result<[u8; EXPORTER_LEN]> {
    conn.export_keying_material([0u8; EXPORTER_LEN], EXPORTER_LABEL, None)
        .map_err(|e| io::Error::other(format!("TLS: no tls-exporter value: {e}")))
}

/// A connection in TLS: the driver's end of the relay and the session's
/// `tls-exporter` value.
pub(crate) struct Started {
    /// The driver's end: plaintext records in and out.
    pub stream: TcpStream,
    /// The session's `tls-exporter` channel binding value.
    pub exporter: [u8; EXPORTER_LEN],
}

/// Runs the probe, the handshake and the NULL check on `tcp` (all within
/// `timeout`), then hands the session to a relay thread: the returned
/// stream is the driver's end. Errors say which step failed and why.
pub(crate) fn start(tcp: TcpStream, spec: &TlsSpec, timeout: Duration) -> io::Result<Started> {
    let deadline = Instant::now() + timeout;
    let peer = tcp
        .peer_addr()
        .map_or_else(|_| "the server".to_owned(), |a| a.to_string());
    let peer = format!("{} at {peer}", program_name(spec.prog));
    if spec.starttls {
        starttls(&tcp, spec, deadline).map_err(|e| step(e, &peer, "AUTH_TLS probe"))?;
    }
    let mut conn = ClientConnection::new(Arc::clone(&spec.config), spec.name.clone())
        .map_err(|e| io::Error::other(format!("TLS set-up for {peer}: {e}")))?;
    // The NULL call is queued before the handshake: rustls sends it right
    // after the client's Finished, and the reply (or the server's alert)
    // ends the wait.
    let xid = next_xid();
    conn.writer()
        .write_all(&null_call(xid, spec.prog, spec.vers, AuthFlavor::AUTH_NONE))?;
    let asked_before = spec.no_certificate.as_ref().map(|n| n.asked());
    let reply = {
        let mut sock = NoSigpipe(&tcp);
        let mut tls = rustls::Stream::new(&mut conn, &mut sock);
        read_record(&mut tls, deadline)
    };
    let reply = reply
        .map_err(|e| {
            let asked = spec.no_certificate.as_ref().map(|n| n.asked()) > asked_before;
            let closed = matches!(
                e.kind(),
                io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset
            );
            if asked && closed {
                certificate_wanted(e)
            } else {
                e
            }
        })
        .map_err(|e| step(e, &peer, "TLS handshake"))?;
    if !matches!(decode_reply(&reply), Ok(h) if h.xid == xid) {
        return Err(step(
            invalid("the first reply inside TLS is not the answer to our NULL call".into()),
            &peer,
            "TLS handshake",
        ));
    }
    let exporter = exporter(&*conn).map_err(|e| step(e, &peer, "TLS handshake"))?;
    tcp.set_read_timeout(None)?;
    tcp.set_write_timeout(None)?;
    tcp.set_nonblocking(true)?;
    let (mine, theirs) = socketpair()?;
    let relay_end = mine;
    crate::signals::spawn("dnfs-tls", move || relay(conn, tcp, relay_end))?;
    Ok(Started {
        stream: TcpStream::from(theirs),
        exporter,
    })
}

/// Wraps `e` with the server and the step, keeping its kind.
fn step(e: io::Error, peer: &str, what: &str) -> io::Error {
    io::Error::new(
        e.kind(),
        format!("RPC-with-TLS to {peer}: {what} failed: {e}"),
    )
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

/// RFC 9289 §4.1: NULL with AUTH_TLS; the server must answer SUCCESS
/// with the verifier AUTH_NONE "STARTTLS".
fn starttls(tcp: &TcpStream, spec: &TlsSpec, deadline: Instant) -> io::Result<()> {
    let xid = next_xid();
    let msg = null_call(xid, spec.prog, spec.vers, AuthFlavor::AUTH_TLS);
    NoSigpipe(tcp).write_all(&msg)?;
    let record = read_record(&mut NoSigpipe(tcp), deadline)?;
    let answer = probe_answer(&record, xid)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("malformed reply: {e}")))?;
    let refused = |what: String| {
        // Not ConnectionRefused: a server that answers without STARTTLS
        // will not learn it by being asked again (no mount retry).
        io::Error::other(format!(
            "the server does not do RPC-with-TLS (RFC 9289): {what}; \
                 nothing else was sent on this connection"
        ))
    };
    match answer {
        ProbeAnswer::StartTls => Ok(()),
        ProbeAnswer::OtherXid(other) => Err(invalid(format!("reply to xid {other:#x}, not ours"))),
        ProbeAnswer::NoStartTls { flavor, len } => Err(refused(format!(
            "it accepted the AUTH_TLS probe without the STARTTLS verifier \
             (flavour {flavor:?}, {len} bytes)"
        ))),
        ProbeAnswer::NotSuccess(stat) => Err(refused(format!("probe answered {stat:?}"))),
        ProbeAnswer::Denied(r) => Err(refused(format!("probe refused: {r:?}"))),
    }
}

fn decode_reply(record: &[u8]) -> io::Result<ReplyHeader> {
    ReplyHeader::decode(&mut XdrReader::new(record))
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("malformed reply: {e}")))
}

/// A record-marked NULL call with credential `flavor` (empty body) and
/// an AUTH_NONE verifier.
fn null_call(xid: u32, prog: u32, vers: u32, flavor: AuthFlavor) -> Vec<u8> {
    let body = directnfs_wire::rpc::tls::null_call(xid, prog, vers, flavor);
    let mut out = fragment_header(body.len(), true).to_vec();
    out.extend_from_slice(&body);
    out
}

/// XIDs for the probes: distinct per call, never reused by the channel
/// (its XIDs are slot numbers, far below 2^31).
fn next_xid() -> u32 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0x9289_0000);
    NEXT.fetch_add(1, Ordering::Relaxed) | 0x8000_0000
}

/// Reads one whole record (all fragments, at most [`MAX_PROBE_REPLY`]
/// bytes) before `deadline`.
fn read_record(r: &mut (impl Read + TimedRead), deadline: Instant) -> io::Result<Vec<u8>> {
    let mut record = Vec::new();
    loop {
        let mut mark = [0u8; 4];
        read_exact_by(r, &mut mark, deadline)?;
        let word = u32::from_be_bytes(mark);
        let len = (word & 0x7fff_ffff) as usize;
        if record.len() + len > MAX_PROBE_REPLY {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("reply record over {MAX_PROBE_REPLY} bytes"),
            ));
        }
        let start = record.len();
        record.resize(start + len, 0);
        read_exact_by(r, &mut record[start..], deadline)?;
        if word & 0x8000_0000 != 0 {
            return Ok(record);
        }
    }
}

/// A reader whose underlying socket takes a read timeout.
trait TimedRead {
    fn set_timeout(&mut self, t: Duration) -> io::Result<()>;
}

impl TimedRead for NoSigpipe<'_> {
    fn set_timeout(&mut self, t: Duration) -> io::Result<()> {
        self.0.set_read_timeout(Some(t))?;
        self.0.set_write_timeout(Some(t))
    }
}

impl<'a> TimedRead for rustls::Stream<'_, ClientConnection, NoSigpipe<'a>> {
    fn set_timeout(&mut self, t: Duration) -> io::Result<()> {
        self.sock.set_timeout(t)
    }
}

fn read_exact_by(
    r: &mut (impl Read + TimedRead),
    mut buf: &mut [u8],
    deadline: Instant,
) -> io::Result<()> {
    while !buf.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "no answer before the connect timeout",
            ));
        }
        r.set_timeout(left)?;
        match r.read(buf) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the server closed the connection",
                ))
            }
            Ok(n) => buf = &mut buf[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "no answer before the connect timeout",
                ))
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The trust anchors: `ca`'s certificates, or the system bundle's.
fn load_roots(ca: Option<&Path>) -> io::Result<RootCertStore> {
    let mut roots = RootCertStore::empty();
    let (path, key) = match ca {
        Some(p) => (p.to_path_buf(), "tls_ca"),
        None => {
            let env = std::env::var_os("SSL_CERT_FILE").map(PathBuf::from);
            let found = env.or_else(|| {
                SYSTEM_CA_FILES
                    .iter()
                    .map(PathBuf::from)
                    .find(|p| p.is_file())
            });
            match found {
                Some(p) => (p, "the system CA bundle"),
                None => {
                    return Err(invalid(
                        "TLS: no tls_ca given and no system CA bundle found".into(),
                    ))
                }
            }
        }
    };
    for cert in load_certs(&path, key)? {
        roots
            .add(cert)
            .map_err(|e| invalid(format!("{key} {}: {e}", path.display())))?;
    }
    Ok(roots)
}

fn load_certs(path: &Path, key: &str) -> io::Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| invalid(format!("{key} {}: {e}", path.display())))?;
    if certs.is_empty() {
        return Err(invalid(format!(
            "{key} {}: no certificate in the file",
            path.display()
        )));
    }
    Ok(certs)
}

/// A connected pair of stream sockets, close-on-exec, above the
/// descriptor floor.
fn socketpair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two descriptors socketpair writes.
    let rc = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just made and are owned by nobody else.
    let (a, b) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    Ok((
        crate::fdfloor::raise_owned(a),
        crate::fdfloor::raise_owned(b),
    ))
}

/// Plaintext held for the driver's end before it is written (the relay
/// stops reading the server past it).
const HELD_MAX: usize = 4 << 20;

/// Moves bytes between the driver's end (`local`, plaintext) and the
/// server (`tcp`, TLS) until either side closes or fails; then closes
/// both (a TLS close_notify to the server when the driver closed).
fn relay(mut conn: ClientConnection, mut tcp: TcpStream, local: OwnedFd) {
    // SAFETY: `local` is a live socket owned here; the wrapper closes it
    // on drop as `local` would have.
    let mut local = unsafe { std::os::unix::net::UnixStream::from_raw_fd(into_raw(local)) };
    if local.set_nonblocking(true).is_err() {
        return;
    }
    conn.set_buffer_limit(None);
    let mut held: Vec<u8> = Vec::new();
    // Bytes of `held` already written to the driver's end.
    let mut sent = 0usize;
    let mut buf = vec![0u8; 256 * 1024];
    // TLS records as read from the server's socket, before rustls.
    let mut wire = vec![0u8; 256 * 1024];
    let why = loop {
        // 1. Driver -> server.
        if !conn.wants_write() {
            match local.read(&mut buf) {
                Ok(0) => {
                    conn.send_close_notify();
                    let _ = flush_tls(&mut conn, &mut tcp, true);
                    break None;
                }
                Ok(n) => {
                    let _ = conn.writer().write_all(&buf[..n]);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => break Some(format!("local end: {e}")),
            }
        }
        if let Err(e) = flush_tls(&mut conn, &mut tcp, false) {
            break Some(format!("sending: {e}"));
        }
        // 2. Server -> driver: all the socket holds now (up to HELD_MAX
        // pending), then as much as the driver's end takes. One record at
        // a time would cost a wake-up per 16 KiB record. The socket is
        // read here in large pieces and the bytes handed to rustls from
        // memory: its own `read_tls` reads at most 4 KiB per call, 256
        // system calls per 1 MiB READ reply.
        let mut ended = None;
        while held.len() - sent < HELD_MAX {
            let n = match (&tcp).read(&mut wire) {
                Ok(0) => {
                    ended = Some("the server closed the connection".to_owned());
                    break;
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    ended = Some(format!("receiving: {e}"));
                    break;
                }
            };
            match feed(&mut conn, &wire[..n], &mut held) {
                Ok(true) => {}
                Ok(false) => {
                    ended = Some("the server closed the TLS session".to_owned());
                    break;
                }
                Err(e) => {
                    let _ = flush_tls(&mut conn, &mut tcp, true);
                    ended = Some(e);
                    break;
                }
            }
        }
        while sent < held.len() {
            match local.write(&held[sent..]) {
                Ok(n) => sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    ended.get_or_insert(format!("local end: {e}"));
                    break;
                }
            }
        }
        if sent == held.len() {
            held.clear();
            sent = 0;
        } else if sent >= HELD_MAX {
            held.drain(..sent);
            sent = 0;
        }
        if ended.is_some() {
            break ended;
        }
        wait(&conn, &tcp, &local, &held[sent..]);
    };
    if let Some(why) = why {
        tracing::warn!(
            "RPC-with-TLS connection to {}: {why}; closing it",
            tcp.peer_addr()
                .map_or_else(|_| "the server".to_owned(), |a| a.to_string())
        );
    }
    let _ = tcp.shutdown(std::net::Shutdown::Both);
    let _ = local.shutdown(std::net::Shutdown::Both);
}

/// Hands `bytes` (TLS records from the server, in any cut) to `conn` and
/// appends the plaintext they carry to `held`, straight from rustls's
/// buffer. Not written to the driver's end here: the caller writes all
/// that one read brought at once (a write per 16 KiB record would wake
/// the driver once per record). False once the server ended the session
/// (close_notify).
fn feed(conn: &mut ClientConnection, mut bytes: &[u8], held: &mut Vec<u8>) -> Result<bool, String> {
    use std::io::BufRead;
    while !bytes.is_empty() {
        // `&[u8]` reads advance the slice: each call takes what fits in
        // rustls's buffer (a record at most) from the front.
        match conn.read_tls(&mut bytes) {
            Ok(0) => return Ok(false),
            Ok(_) => {}
            Err(e) => return Err(format!("TLS: {e}")),
        }
        let state = conn
            .process_new_packets()
            .map_err(|e| format!("TLS: {e}"))?;
        let mut reader = conn.reader();
        while let Ok(chunk @ [_, ..]) = reader.fill_buf() {
            let len = chunk.len();
            held.extend_from_slice(chunk);
            reader.consume(len);
        }
        if state.peer_has_closed() {
            return Ok(false);
        }
    }
    Ok(true)
}

fn into_raw(fd: OwnedFd) -> libc::c_int {
    use std::os::fd::IntoRawFd;
    fd.into_raw_fd()
}

/// Writes what rustls has for the server; with `all`, waits (briefly) for
/// a full socket buffer instead of leaving the rest for later.
fn flush_tls(conn: &mut ClientConnection, tcp: &mut TcpStream, all: bool) -> io::Result<()> {
    let give_up = Instant::now() + Duration::from_secs(1);
    while conn.wants_write() {
        match conn.write_tls(&mut NoSigpipe(tcp)) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if !all || Instant::now() > give_up {
                    return Ok(());
                }
                poll_one(tcp.as_raw_fd(), libc::POLLOUT, 10);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// A TCP socket whose writes never raise SIGPIPE (see `socket.rs`).
struct NoSigpipe<'a>(&'a TcpStream);

impl Read for NoSigpipe<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        (&mut &*self.0).read(buf)
    }
}

impl Write for NoSigpipe<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // SAFETY: `buf` is valid for its length; the descriptor is a live
        // socket of `self.0`.
        let n = unsafe {
            libc::send(
                self.0.as_raw_fd(),
                buf.as_ptr().cast(),
                buf.len(),
                libc::MSG_NOSIGNAL,
            )
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Sleeps until one of the relay's next steps can make progress.
fn wait(
    conn: &ClientConnection,
    tcp: &TcpStream,
    local: &std::os::unix::net::UnixStream,
    held: &[u8],
) {
    let mut fds = [
        libc::pollfd {
            fd: tcp.as_raw_fd(),
            events: 0,
            revents: 0,
        },
        libc::pollfd {
            fd: local.as_raw_fd(),
            events: 0,
            revents: 0,
        },
    ];
    if held.len() < HELD_MAX {
        fds[0].events |= libc::POLLIN;
    }
    if conn.wants_write() {
        fds[0].events |= libc::POLLOUT;
    } else {
        fds[1].events |= libc::POLLIN;
    }
    if !held.is_empty() {
        fds[1].events |= libc::POLLOUT;
    }
    // SAFETY: two pollfds, valid for the call.
    unsafe { libc::poll(fds.as_mut_ptr(), 2, 1000) };
}

fn poll_one(fd: libc::c_int, events: libc::c_short, ms: libc::c_int) {
    let mut p = libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    // SAFETY: one pollfd, valid for the call.
    unsafe { libc::poll(&mut p, 1, ms) };
}

/// One TLS 1.3 session made in memory between this module's client
/// configuration and a rustls server (no socket), for tests of what both
/// ends derive from it.
#[cfg(test)]
pub(crate) mod sessions {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::sync::Arc;

    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
    use rustls::{ClientConnection, RootCertStore, ServerConfig, ServerConnection};

    // A throwaway CA and a certificate it signed for `server.test`
    // (P-256, valid until 2126), made with openssl for these tests only:
    // the key protects nothing.
    const CA: &str = "-----BEGIN CERTIFICATE-----\nMIIBnjCCAUWgAwIBAgIUKlPIAU6NrWsAhw5zxMz2D/tTlw4wCgYIKoZIzj0EAwIw\nHDEaMBgGA1UEAwwRZGlyZWN0bmZzIHRlc3QgQ0EwIBcNMjYxMTI5MTQyMjIxWhgP\nMjEyNjExMDUxNDIyMjFaMBwxGjAYBgNVBAMMEWRpcmVjdG5mcyB0ZXN0IENBMFkw\nEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAECj0xSBeDJCMJuBnJLeZnFXbRWn7dNezI\n8F8DZxK1n3axs93z4ESMmooHEpe3wRmVfdsqhJQF4twoMk9DVSP0R6NjMGEwHQYD\nVR0OBBYEFObhxpx5eV3Tf8Pey+jI2aHSfJXaMB8GA1UdIwQYMBaAFObhxpx5eV3T\nf8Pey+jI2aHSfJXaMA8GA1UdEwEB/wQFMAMBAf8wDgYDVR0PAQH/BAQDAgIEMAoG\nCCqGSM49BAMCA0cAMEQCICa+ftuEUFrZ+XVPVmT8XqIl39zShO41HUmH93qjuHGq\nAiB2h7q3uyVfkuobIqS4U/MNCVWXxcOKCR8PE4KtE9rZ6g==\n-----END CERTIFICATE-----\n";
    const CERT: &str = "-----BEGIN CERTIFICATE-----\nMIIBrzCCAVagAwIBAgIUYk/MWRfWjX1H+h68nGuRgWjF67cwCgYIKoZIzj0EAwIw\nHDEaMBgGA1UEAwwRZGlyZWN0bmZzIHRlc3QgQ0EwIBcNMjYxMTI5MTQyMjIxWhgP\nMjEyNjExMDUxNDIyMjFaMBYxFDASBgNVBAMMC3NlcnZlci50ZXN0MFkwEwYHKoZI\nzj0CAQYIKoZIzj0DAQcDQgAEntZZIrKEvEVJ1NcNmS6XpBtoB6IfbUdNLTsa7hAa\nNMtmdUY9Ow8/jg1PcNEEtaEqzDuHGxSNFIN+xbcMQDOq+qN6MHgwCQYDVR0TBAIw\nADAWBgNVHREEDzANggtzZXJ2ZXIudGVzdDATBgNVHSUEDDAKBggrBgEFBQcDATAd\nBgNVHQ4EFgQUkr9koj7wpFVy5iuA3hMaVii+S54wHwYDVR0jBBgwFoAU5uHGnHl5\nXdN/w97L6MjZodJ8ldowCgYIKoZIzj0EAwIDRwAwRAIgXWjJHN+Za9dQM2MMQzBe\nqkEOxtxDPpvwLDuhEUYE0yYCIAlkFiQP7hM+TlHRQ+0anviAwd7t7o+ODd7I2Qjz\nSR/x\n-----END CERTIFICATE-----\n";
    const KEY: &str = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg/KrJFEiYQa1/pq7M\nrbRBS6lUvBiSXTK27BkaN1b+UnehRANCAASe1lkisoS8RUnU1w2ZLpekG2gHoh9t\nR00tOxruEBo0y2Z1Rj07Dz+ODU9w0QS1oSrMO4cbFI0Ug37FtwxAM6r6\n-----END PRIVATE KEY-----\n";

    /// The test CA's certificate, PEM (for a `tls_ca` file).
    pub(crate) const CA_PEM: &str = CA;

    /// A TLS 1.3 server configuration with the certificate for
    /// `server.test`.
    pub(crate) fn server_config() -> Arc<ServerConfig> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        Arc::new(
            ServerConfig::builder_with_provider(provider)
                .with_protocol_versions(&[&rustls::version::TLS13])
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(
                    vec![CertificateDer::from_pem_slice(CERT.as_bytes()).unwrap()],
                    PrivateKeyDer::from_pem_slice(KEY.as_bytes()).unwrap(),
                )
                .unwrap(),
        )
    }

    /// Runs one handshake between a client and a server in memory and
    /// returns both ends, established.
    pub(crate) fn pair() -> (ClientConnection, ServerConnection) {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(CA.as_bytes()).unwrap())
            .unwrap();
        let client = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let name = ServerName::try_from("server.test").unwrap();
        let mut c = ClientConnection::new(Arc::new(client), name).unwrap();
        let mut s = ServerConnection::new(server_config()).unwrap();
        for _ in 0..10 {
            if !c.is_handshaking() && !s.is_handshaking() {
                break;
            }
            let mut wire = Vec::new();
            while c.wants_write() {
                c.write_tls(&mut wire).unwrap();
            }
            if !wire.is_empty() {
                s.read_tls(&mut &wire[..]).unwrap();
                s.process_new_packets()
                    .expect("server accepts the client's flight");
            }
            let mut wire = Vec::new();
            while s.wants_write() {
                s.write_tls(&mut wire).unwrap();
            }
            if !wire.is_empty() {
                c.read_tls(&mut &wire[..]).unwrap();
                c.process_new_packets()
                    .expect("client accepts the server's flight");
            }
        }
        assert!(!c.is_handshaking() && !s.is_handshaking(), "handshake done");
        (c, s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_is_a_null_call_with_auth_tls() {
        let m = null_call(0x8000_0001, 100003, 3, AuthFlavor::AUTH_TLS);
        let words: Vec<u32> = m
            .chunks(4)
            .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        // mark, xid, CALL, rpcvers 2, prog, vers, proc 0, cred AUTH_TLS/0,
        // verf AUTH_NONE/0.
        assert_eq!(
            words,
            vec![0x8000_0028, 0x8000_0001, 0, 2, 100003, 3, 0, 7, 0, 0, 0]
        );
    }

    #[test]
    fn rejects_missing_ca_file_naming_it() {
        let req = TlsRequest {
            ca: Some("/nonexistent/ca.pem".into()),
            ..TlsRequest::default()
        };
        let e = TlsSpec::new(&req, "127.0.0.1", 100003, 3).unwrap_err();
        assert!(e.to_string().contains("tls_ca /nonexistent/ca.pem"), "{e}");
    }

    #[test]
    fn both_ends_of_a_tls_session_derive_the_same_tls_exporter_value() {
        let (client, server) = sessions::pair();
        let ours = exporter(&client).unwrap();
        let theirs = exporter(&server).unwrap();
        assert_eq!(ours, theirs, "client and server of one session");
        assert_ne!(ours, [0u8; EXPORTER_LEN]);
        // RFC 9266's label and empty context, written out here: TLS 1.3
        // makes "no context" the same as an empty one (RFC 8446 §7.5),
        // which `exporter` relies on.
        let rfc9266 = server
            .export_keying_material([0u8; EXPORTER_LEN], b"EXPORTER-Channel-Binding", Some(&[]))
            .unwrap();
        assert_eq!(ours, rfc9266);
        // Another label is another value: the label is RFC 9266's.
        let other_label = client
            .export_keying_material([0u8; EXPORTER_LEN], b"EXPORTER-other", None)
            .unwrap();
        assert_ne!(ours, other_label);
        // Another session, another value.
        let (again, _) = sessions::pair();
        assert_ne!(ours, exporter(&again).unwrap(), "a second session");
    }
}
