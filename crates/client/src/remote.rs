//! The server end of a mount, as every protocol version uses it: the
//! transport to the server, its name, the export and the target path
//! below it, the transfer sizes, the options and the credential — the
//! plain data the client (`client.rs`'s `Inner`, which holds a
//! [`Remote`]) and the NFSv4.1 modules (`v4/`, which take one) share.
//!
//! It is a leaf below both: it names neither the client, the files nor a
//! protocol version's state, so that `v4/` can take a `&Remote` without
//! naming the client that holds it (see `v4/mod.rs`).

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use directnfs_engine::retry::{Backoff, RetryPolicy};
use directnfs_wire::nfs3::{self, filename3};

use crate::alert::Alerts;
use crate::config::target::Target;
use crate::config::{MountOptions, SocketBuffers, Xprtsec};
use crate::error::{Error, Result};
use crate::io::call::{Call, Group};
use crate::io::socket::{BufferRequest, ConnectSpec};
use crate::io::tls::{TlsRequest, TlsSpec};
use crate::io::transport::{ChannelSpec, ConnectHook, Transport, TransportConfig};
use crate::security::{Flavor, GssSetup};

/// Transfer size used when the server's FSINFO gives none.
pub(crate) const FALLBACK_TRANSFER: u32 = 64 * 1024;
/// Record limit: the largest transfer plus room for RPC and NFS headers.
const RECORD_OVERHEAD: usize = 64 * 1024;

/// Calls in flight per connection on a Kerberos mount, at most: the
/// RPCSEC_GSS sequence window of NFS-Ganesha (Linux's nfsd has a larger
/// one). A server with a smaller one refuses the connection with a
/// message naming both (`max_inflight` can go lower).
const GSS_MAX_INFLIGHT: usize = 32;

/// Transfer sizes and limits negotiated with FSINFO.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest READ sent (server rtmax clamped by `rsize`).
    pub rtmax: u32,
    /// Largest WRITE sent (server wtmax clamped by `wsize`).
    pub wtmax: u32,
    /// What the server advertised, before clamping.
    pub server_rtmax: u32,
    /// What the server advertised, before clamping.
    pub server_wtmax: u32,
}

/// One mounted export's server end: what every protocol version's calls
/// need, whichever version the mount chose.
#[derive(Debug)]
pub(crate) struct Remote {
    pub(crate) transport: Transport,
    pub(crate) name: String,
    pub(crate) export: String,
    /// The part of the target path below the export.
    pub(crate) target_rest: String,
    pub(crate) limits: Limits,
    pub(crate) options: MountOptions,
    /// Encoded credential + verifier, prefixed to every call.
    pub(crate) cred: Vec<u8>,
}

impl Remote {
    /// The server end of `target` on `transport`, before its export is
    /// known: fallback transfer sizes.
    pub(crate) fn new(
        transport: Transport,
        target: &Target,
        options: &MountOptions,
        cred: &[u8],
    ) -> Self {
        Remote {
            transport,
            name: target.name.clone(),
            export: String::new(),
            target_rest: String::new(),
            limits: Limits {
                rtmax: FALLBACK_TRANSFER,
                wtmax: FALLBACK_TRANSFER,
                server_rtmax: 0,
                server_wtmax: 0,
            },
            options: options.clone(),
            cred: cred.to_vec(),
        }
    }

    pub(crate) fn transport(&self) -> &Transport {
        &self.transport
    }

    /// Sends a prepared call and waits for it.
    pub(crate) fn run(&self, call: Arc<Call>, group: &Group) {
        self.transport.run(call, group);
    }

    /// A `ro` mount refuses, before sending it, any call that would
    /// change the server: EROFS. `proc_` is the NFSv3 procedure the call
    /// is (NFSv4.1 names the NFSv3 procedure of the same change).
    pub(crate) fn check_writable(&self, proc_: u32, op: &'static str, path: &str) -> Result<()> {
        if self.options.read_only && modifies(proc_) {
            return Err(Error::ReadOnly {
                op,
                path: path.to_string(),
            });
        }
        Ok(())
    }
}

/// Procedures that change the server (RFC 1813 §3.3): SETATTR, WRITE,
/// CREATE, MKDIR, SYMLINK, MKNOD, REMOVE, RMDIR, RENAME, LINK, COMMIT.
fn modifies(proc_: u32) -> bool {
    matches!(
        proc_,
        nfs3::NFSPROC3_SETATTR
            | nfs3::NFSPROC3_WRITE
            | nfs3::NFSPROC3_CREATE
            | nfs3::NFSPROC3_MKDIR
            | nfs3::NFSPROC3_SYMLINK
            | nfs3::NFSPROC3_MKNOD
            | nfs3::NFSPROC3_REMOVE
            | nfs3::NFSPROC3_RMDIR
            | nfs3::NFSPROC3_RENAME
            | nfs3::NFSPROC3_LINK
            | nfs3::NFSPROC3_COMMIT
    )
}

/// The components of a path below the export (`.` dropped, `..` taking
/// the one before it away), each checked against NFS's name length.
pub(crate) fn components(path: &str) -> Result<Vec<&str>> {
    let mut out: Vec<&str> = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            c if c.len() > filename3::MAX => {
                return Err(Error::InvalidInput(format!(
                    "path component of {} bytes exceeds {} in {path}",
                    c.len(),
                    filename3::MAX
                )))
            }
            c => out.push(c),
        }
    }
    Ok(out)
}

/// Starts the transport: `connections` channels per path, all to
/// `nfs_port`, carrying program `prog` version `vers`; `hook` is what the
/// protocol does with each connection (NFSv4.1's trunking and binding).
pub(crate) fn start_transport(
    target: &Target,
    options: &MountOptions,
    cred: &[u8],
    nfs_port: u16,
    (prog, vers): (u32, u32),
    alerts: Alerts,
    hook: Option<Arc<dyn ConnectHook>>,
) -> Result<Transport> {
    // Channels: `connections` per path, all to the NFS port.
    let mut channels = Vec::new();
    for (pi, p) in target.paths.iter().enumerate() {
        let remote = resolve(&p.server, nfs_port)?;
        let tls = tls_spec(options, &p.server, (prog, vers))
            .map_err(|e| Error::InvalidInput(format!("xprtsec for {}: {e}", p.server)))?;
        for _ in 0..options.connections {
            let spec = ConnectSpec {
                remote,
                local: p.local,
                timeout: options
                    .timeo
                    .clamp(Duration::from_secs(1), Duration::from_secs(10)),
                dontroute: options.dontroute,
                resvport: options.resvport,
                buffers: socket_buffers(options),
                tls: tls.clone(),
            };
            channels.push(ChannelSpec {
                path: pi,
                connect: spec,
            });
        }
    }
    let max_record = (options.rsize.max(options.wsize) as usize) + RECORD_OVERHEAD;
    let gss = (options.security != Flavor::Sys).then(|| GssSetup {
        flavor: options.security,
        hosts: target.paths.iter().map(|p| p.server.clone()).collect(),
    });
    // Kerberos: calls in flight per connection stay within the server's
    // RPCSEC_GSS sequence window (checked when each context is made).
    // NFSv4.1 (a hook): one place of the window is kept for the hook's
    // BIND_CONN_TO_SESSION, written on a live connection ahead of its
    // calls when the session is replaced.
    let max_inflight = match (&gss, &hook) {
        (Some(_), None) => options.max_inflight.min(GSS_MAX_INFLIGHT),
        (Some(_), Some(_)) => options.max_inflight.min(GSS_MAX_INFLIGHT - 1),
        (None, _) => options.max_inflight,
    };
    Transport::start(
        channels,
        TransportConfig {
            policy: RetryPolicy {
                timeo: options.timeo,
                retrans: options.retrans,
                hard: options.hard,
            },
            backoff: Backoff::default(),
            max_record,
            max_inflight,
            max_client_inflight: options.max_client_inflight,
            cred: cred.to_vec(),
            prog,
            vers,
            alerts,
            hook,
            spare_keys: Vec::new(),
            // A spare's TLS session lives in the relay thread of the
            // process that made it: not one to hand to a child.
            fork_spares: options.fork_spares && gss.is_none() && options.xprtsec == Xprtsec::None,
            gss,
            io_classes: options.io_classes,
            // NFSv3 only: an NFSv4.1 READ's second copy would reuse its
            // session slot and sequence id. Auto: on with two or more paths.
            hedge: (options.hedge.unwrap_or(target.paths.len() >= 2) && vers == nfs3::NFS_V3)
                .then_some(directnfs_engine::HedgePolicy {
                    min: options.hedge_min,
                    max: options.hedge_max,
                }),
        },
    )
    .map_err(|e| Error::Connect {
        server: format!("{}:{nfs_port}", target.name),
        source: e,
    })
}

/// The RPC-with-TLS set-up of the connections to `server` that
/// `options` ask for (`xprtsec=`), shared by all of its channels; `None`
/// for plain TCP. Reads the CA, certificate and key files once, here.
pub(crate) fn tls_spec(
    options: &MountOptions,
    server: &str,
    (prog, vers): (u32, u32),
) -> std::io::Result<Option<Arc<TlsSpec>>> {
    let client = match options.xprtsec {
        Xprtsec::None => return Ok(None),
        Xprtsec::Tls => None,
        Xprtsec::Mtls => options.tls_cert.clone().zip(options.tls_key.clone()),
    };
    let request = TlsRequest {
        ca: options.tls_ca.clone(),
        client,
        name: options.tls_name.clone(),
        starttls: !options.tls_direct,
    };
    TlsSpec::new(&request, server, prog, vers).map(|t| Some(Arc::new(t)))
}

/// SO_SNDBUF/SO_RCVBUF to ask for (`sockbuf=`).
pub(crate) fn socket_buffers(options: &MountOptions) -> BufferRequest {
    match options.sockbuf {
        SocketBuffers::Auto => BufferRequest::Auto,
        SocketBuffers::Fixed(n) => BufferRequest::Fixed(n as usize),
        SocketBuffers::Prefer(n) => BufferRequest::Prefer(n as usize),
    }
}

/// The first address of `host` (brackets of an IPv6 literal dropped) at
/// `port`.
pub(crate) fn resolve(host: &str, port: u16) -> Result<SocketAddr> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    (host, port)
        .to_socket_addrs()
        .map_err(|e| Error::Connect {
            server: host.to_string(),
            // getaddrinfo's failures carry no errno: NotFound makes it
            // EHOSTUNREACH for C callers (error.rs `connect_errno`).
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("cannot resolve the host name: {e}"),
            ),
        })?
        .next()
        .ok_or_else(|| Error::Connect {
            server: host.to_string(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "host name has no address"),
        })
}
