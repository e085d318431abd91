//! Platform socket set-up: the only place that knows socket options.
//!
//! | feature | why | fallback |
//! |---|---|---|
//! | bind the local address before connect | multipath: each path leaves through its own NIC | none: a path with a bad `local:` fails |
//! | `TCP_NODELAY` | an RPC is a complete message; Nagle would hold it back | none needed |
//! | `SO_SNDBUF`/`SO_RCVBUF` as [`BufferRequest`] says (`sockbuf`) | a fixed size is there from the first byte; the kernel's autotuning grows buffers only with the traffic, but past `rmem_max` | the kernel's clamp (`wmem_max`/`rmem_max`), reported by [`buffer_sizes`]; `prefer` leaves a direction the clamp would cut to autotuning |
//! | `SO_DONTROUTE` (`dontroute`) | oranfstab: keep storage traffic off the routed network | none |
//! | privileged source port (`resvport`) | servers that insist on ports < 1024 | an ordinary port, with a warning |
//! | connect timeout | a black-holed path hangs in SYN retries | none needed |
//! | route check (UDP connect, no packet sent) | a cut path is seen in ~0.1 s, not after `timeo` | `timeo` |
//! | RPC-with-TLS (`spec.tls`) | `xprtsec=tls|mtls`: the probe, handshake and relay of `tls.rs` | none: a connection that cannot start TLS fails |
//! | `MSG_NOSIGNAL` on every write ([`send_all`], [`send_all_vectored`]) | a write on a connection the server reset must fail with EPIPE, not raise SIGPIPE: its default action ends the process, and only Rust programs ignore it (a C program, SQLite's shell or anything under `dnfs run` may not) | none needed |

use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io::{self, IoSlice};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// How to open one TCP connection.
#[derive(Debug, Clone)]
pub(crate) struct ConnectSpec {
    /// Server address.
    pub remote: SocketAddr,
    /// Local address to bind first (port 0), if any.
    pub local: Option<std::net::IpAddr>,
    /// Give up connecting after this long.
    pub timeout: Duration,
    /// Set `SO_DONTROUTE`.
    pub dontroute: bool,
    /// Try to bind a source port below 1024.
    pub resvport: bool,
    /// SO_SNDBUF and SO_RCVBUF to ask for.
    pub buffers: BufferRequest,
    /// RPC-with-TLS on this connection (`xprtsec=tls|mtls`): the socket
    /// [`connect`] returns is then the local end of the TLS relay
    /// (`tls.rs`). `None`: plain TCP.
    pub tls: Option<std::sync::Arc<super::tls::TlsSpec>>,
}

impl ConnectSpec {
    /// The path as the alert log names it: `LOCAL->REMOTE`, `*` for an
    /// unbound local address.
    pub(crate) fn label(&self) -> String {
        match self.local {
            Some(l) => format!("{l}->{}", self.remote),
            None => format!("*->{}", self.remote),
        }
    }
}

/// What to ask of the kernel for a connection's socket buffers. Setting a
/// size turns the kernel's autotuning off for that direction, and the
/// kernel caps the size at `net.core.wmem_max` (send) / `rmem_max`
/// (receive) without a word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BufferRequest {
    /// Nothing: autotuning both ways.
    Auto,
    /// This many bytes both ways, whatever the kernel grants.
    Fixed(usize),
    /// This many bytes in each direction whose maximum allows it in full;
    /// autotuning in a direction where it would be capped (or whose
    /// maximum cannot be read).
    Prefer(usize),
}

/// Opens a tuned TCP connection as `spec` says; with `spec.tls`, runs the
/// RPC-with-TLS start on it and returns the relay's local end.
pub(crate) fn connect(spec: &ConnectSpec) -> io::Result<TcpStream> {
    connect_bound(spec).map(|(stream, _)| stream)
}

/// [`connect`], and with `spec.tls` the TLS session's `tls-exporter`
/// value (RFC 9266), for a Kerberos context made on the connection to be
/// bound to it; `None` without TLS.
pub(crate) fn connect_bound(
    spec: &ConnectSpec,
) -> io::Result<(TcpStream, Option<[u8; super::tls::EXPORTER_LEN]>)> {
    let domain = Domain::for_address(spec.remote);
    // Moved above the descriptor floor at once: the connect may wait.
    let socket = crate::fdfloor::made(|| Socket::new(domain, Type::STREAM, Some(Protocol::TCP)))?;
    socket.set_tcp_nodelay(true)?;
    let (send, recv) = match spec.buffers {
        BufferRequest::Auto => (None, None),
        BufferRequest::Fixed(n) => (Some(n), Some(n)),
        BufferRequest::Prefer(n) => (
            kernel_max(&WMEM_MAX, "wmem_max")
                .filter(|&max| n <= max)
                .map(|_| n),
            kernel_max(&RMEM_MAX, "rmem_max")
                .filter(|&max| n <= max)
                .map(|_| n),
        ),
    };
    // Before connect: the receive buffer sets the window scale the SYN
    // announces. Best effort: a smaller buffer is slower, not wrong.
    if let Some(n) = send {
        let _ = socket.set_send_buffer_size(n);
    }
    if let Some(n) = recv {
        let _ = socket.set_recv_buffer_size(n);
    }
    if spec.dontroute {
        set_dontroute(&socket)?;
    }
    bind_local(&socket, spec)?;
    socket.connect_timeout(&SockAddr::from(spec.remote), spec.timeout)?;
    socket.set_tcp_keepalive(
        &socket2::TcpKeepalive::new()
            .with_time(Duration::from_secs(10))
            .with_interval(Duration::from_secs(2)),
    )?;
    match &spec.tls {
        Some(tls) => super::tls::start(socket.into(), tls, spec.timeout)
            .map(|started| (started.stream, Some(started.exporter))),
        None => Ok((socket.into(), None)),
    }
}

// Atomics, not a OnceLock: a child forked while another thread was
// filling a OnceLock would wait for that thread for ever at its first
// connect. Two threads reading the file at once is harmless.
static WMEM_MAX: AtomicUsize = AtomicUsize::new(NOT_READ);
static RMEM_MAX: AtomicUsize = AtomicUsize::new(NOT_READ);
const NOT_READ: usize = usize::MAX;
const UNREADABLE: usize = usize::MAX - 1;

/// `net.core.NAME` (the most SO_SNDBUF/SO_RCVBUF may ask for), read once
/// per process; `None` when it cannot be read.
fn kernel_max(cache: &AtomicUsize, name: &str) -> Option<usize> {
    let mut v = cache.load(Ordering::Relaxed);
    if v == NOT_READ {
        v = crate::fdfloor::making(|| {
            std::fs::read_to_string(format!("/proc/sys/net/core/{name}"))
        })
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .map_or(UNREADABLE, |n| n.min(UNREADABLE - 1));
        cache.store(v, Ordering::Relaxed);
    }
    (v != UNREADABLE).then_some(v)
}

/// The send and receive buffer sizes of a connection as the kernel reports
/// them now (SO_SNDBUF, SO_RCVBUF): what a fixed request was capped to,
/// doubled for the kernel's bookkeeping, or what autotuning has grown
/// them to so far. 0 for a size the kernel would not tell.
pub(crate) fn buffer_sizes(stream: &TcpStream) -> (u64, u64) {
    let s = socket2::SockRef::from(stream);
    let size = |r: io::Result<usize>| r.map_or(0, |n| n as u64);
    (size(s.send_buffer_size()), size(s.recv_buffer_size()))
}

/// Checks, without sending a packet, that the kernel can still route from
/// `spec.local` to `spec.remote`: a UDP socket bound and connected the way
/// a channel's TCP socket is (a connect of a UDP socket is only a route
/// lookup). Returns the error when the route is definitely gone: the path's
/// interface was taken down (its connected route went with it), or the
/// local address was removed. An established TCP connection does not
/// notice either: its segments are dropped locally and it waits in
/// retransmission, so without this check a cut path would cost callers a
/// full `timeo`. Anything else (out of descriptors, ...) says nothing about
/// the path and gives `None`.
pub(crate) fn route_lost(spec: &ConnectSpec) -> Option<io::Error> {
    let check = || -> io::Result<()> {
        let socket = crate::fdfloor::made(|| {
            Socket::new(Domain::for_address(spec.remote), Type::DGRAM, None)
        })?;
        if spec.dontroute {
            set_dontroute(&socket)?;
        }
        if let Some(ip) = spec.local {
            socket.bind(&SockAddr::from(SocketAddr::new(ip, 0)))?;
        }
        socket.connect(&SockAddr::from(spec.remote))
    };
    match check() {
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::ENETUNREACH | libc::EHOSTUNREACH | libc::ENETDOWN | libc::EADDRNOTAVAIL)
            ) =>
        {
            Some(e)
        }
        _ => None,
    }
}

fn bind_local(socket: &Socket, spec: &ConnectSpec) -> io::Result<()> {
    let ip = match spec.local {
        Some(ip) => ip,
        None if spec.resvport => match spec.remote {
            SocketAddr::V4(_) => std::net::Ipv4Addr::UNSPECIFIED.into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::UNSPECIFIED.into(),
        },
        None => return Ok(()),
    };
    if spec.resvport {
        // Walk down from 1023 like the classic bindresvport(); EADDRINUSE
        // means try the next one, EACCES means we are not privileged.
        for port in (512..1024).rev() {
            match socket.bind(&SockAddr::from(SocketAddr::new(ip, port))) {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::AddrInUse => continue,
                Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                    tracing::warn!(
                        "resvport: not permitted to bind a source port below 1024 for {} ({e}): \
                         connecting from an ordinary port instead; binding below 1024 needs \
                         root or CAP_NET_BIND_SERVICE, and a server that insists on a \
                         privileged port will refuse this connection's calls",
                        spec.remote
                    );
                    break;
                }
                Err(e) => return Err(e),
            }
        }
    }
    socket.bind(&SockAddr::from(SocketAddr::new(ip, 0)))
}

fn set_dontroute(socket: &Socket) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let one: libc::c_int = 1;
    // SAFETY: the fd is a live socket owned by `socket`; the option value
    // points to a c_int that outlives the call, and its size is passed.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_DONTROUTE,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Writes all of `buf` to the stream socket `sock` without raising
/// SIGPIPE (`send(MSG_NOSIGNAL)`; see the module doc).
pub(crate) fn send_all(sock: &impl AsRawFd, buf: &[u8]) -> io::Result<()> {
    send_all_vectored(sock, &mut [IoSlice::new(buf)])
}

/// Writes all of `slices` to the stream socket `sock`, as few system
/// calls as the kernel allows, without raising SIGPIPE
/// (`sendmsg(MSG_NOSIGNAL)`: `writev`, which std's `write_vectored` uses,
/// has no such flag).
pub(crate) fn send_all_vectored(
    sock: &impl AsRawFd,
    mut slices: &mut [IoSlice<'_>],
) -> io::Result<()> {
    IoSlice::advance_slices(&mut slices, 0);
    while !slices.is_empty() {
        // SAFETY: an all-zero msghdr is valid (no name, no control data).
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        // IoSlice is ABI-compatible with iovec on unix; sendmsg only reads.
        msg.msg_iov = slices.as_ptr() as *mut libc::iovec;
        msg.msg_iovlen = slices.len().min(1024) as _;
        // SAFETY: `msg` describes live buffers for the length given; the
        // descriptor belongs to `sock`.
        let n = unsafe { libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
        match n {
            0 => return Err(io::ErrorKind::WriteZero.into()),
            n if n > 0 => IoSlice::advance_slices(&mut slices, n as usize),
            _ => {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
    Ok(())
}

/// Nothing to read on `stream` and no sign of its end: no byte queued
/// (`FIONREAD`), no hang-up or error (`poll` without waiting).
pub(crate) fn nothing_to_read(stream: &TcpStream) -> bool {
    let fd = stream.as_raw_fd();
    let mut queued: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int into `queued`.
    if unsafe { libc::ioctl(fd, libc::FIONREAD, &mut queued) } != 0 || queued != 0 {
        return false;
    }
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN | libc::POLLRDHUP,
        revents: 0,
    };
    // SAFETY: one pollfd, valid for the call; no wait.
    unsafe { libc::poll(&mut p, 1, 0) == 0 }
}
