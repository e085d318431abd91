//! Platform socket set-up: the only place that knows socket options.
//!
//! | feature | why | fallback |
//! |---|---|---|
//! | bind the local address before connect | multipath: each path leaves through its own NIC | none: a path with a bad `local:` fails |
//! | `TCP_NODELAY` | an RPC is a complete message; Nagle would hold it back | none needed |
//! | large `SO_SNDBUF`/`SO_RCVBUF` | hundreds of 1 MiB requests in flight | the kernel's clamp (`wmem_max`) |
//! | `SO_DONTROUTE` (`dontroute`) | oranfstab: keep storage traffic off the routed network | none |
//! | privileged source port (`resvport`) | servers that insist on ports < 1024 | an ordinary port, with a warning |
//! | connect timeout | a black-holed path hangs in SYN retries | none needed |
//! | route check (UDP connect, no packet sent) | a cut path is seen in ~0.1 s, not after `timeo` | `timeo` |

use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io;
use std::net::{SocketAddr, TcpStream};
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
}

/// Socket buffer size asked for; the kernel clamps it to its maximum.
const SOCKET_BUFFER_BYTES: usize = 4 << 20;

/// Opens a tuned TCP connection as `spec` says.
pub(crate) fn connect(spec: &ConnectSpec) -> io::Result<TcpStream> {
    let domain = Domain::for_address(spec.remote);
    let socket = Socket::new(domain, Type::STREAM, Some(Protocol::TCP))?;
    socket.set_tcp_nodelay(true)?;
    // Best effort: a smaller buffer is slower, not wrong.
    let _ = socket.set_send_buffer_size(SOCKET_BUFFER_BYTES);
    let _ = socket.set_recv_buffer_size(SOCKET_BUFFER_BYTES);
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
    Ok(crate::fdfloor::raise_owned(socket.into()))
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
        let socket = Socket::new(Domain::for_address(spec.remote), Type::DGRAM, None)?;
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
