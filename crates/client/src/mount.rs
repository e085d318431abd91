//! Finding the server and the export: PORTMAP GETPORT, MOUNT EXPORT and
//! MNT, each as a one-shot RPC over its own short-lived TCP connection
//! (cold path: done once per client).
//!
//! The export of a path is the longest prefix the server lets us MOUNT
//! (docs/design.md "Configuration"): ask EXPORT for the list; where the server
//! has no EXPORT procedure, or the list names nothing that fits, try MNT on
//! every prefix from the longest down to `/`. A MOUNT path is at most
//! `MNTPATHLEN` (1,024) bytes: longer prefixes cannot be exports and are
//! never sent, and an export named longer than that is refused before
//! anything is sent (a server would answer GARBAGE_ARGS).

use std::io::{self, Write};
use std::net::SocketAddr;
use std::time::Duration;

use directnfs_wire::mount::{self, dirpath, mountres3, MNTPATHLEN};
use directnfs_wire::nfs3::nfs_fh3;
use directnfs_wire::portmap::{self, Mapping};
use directnfs_wire::rpc::record::fragment_header;
use directnfs_wire::rpc::{
    encode_call_header, AcceptedReply, RejectedReply, ReplyBody, ReplyHeader,
};
use directnfs_wire::{Decode, Procedure, XdrReader};

use crate::error::{Error, Result};
use crate::io::socket::{connect, ConnectSpec};

/// Largest reply accepted on the cold path (an EXPORT list can be long).
const MAX_COLD_REPLY: usize = 4 << 20;

/// Calls procedure `P` once on a fresh connection to `spec.remote`.
pub(crate) fn rpc_once<P: Procedure>(
    spec: &ConnectSpec,
    cred: &[u8],
    args: &P::Args,
) -> Result<P::Res> {
    let server = spec.remote.to_string();
    let io_err = |e: io::Error| Error::Connect {
        server: server.clone(),
        source: e,
    };
    let mut stream = connect(spec).map_err(io_err)?;
    stream
        .set_read_timeout(Some(spec.timeout))
        .map_err(io_err)?;
    stream
        .set_write_timeout(Some(spec.timeout))
        .map_err(io_err)?;
    let xid = 0x6d00_0000 ^ std::process::id().rotate_left(8) ^ P::PROC;
    let mut body = Vec::with_capacity(256);
    encode_call_header(&mut body, xid, P::PROG, P::VERS, P::PROC, cred);
    directnfs_wire::Encode::encode(args, &mut body);
    let mut msg = fragment_header(body.len(), true).to_vec();
    msg.extend_from_slice(&body);
    stream.write_all(&msg).map_err(io_err)?;

    let deadline = std::time::Instant::now() + spec.timeout;
    let record = crate::io::oneshot::read_record(&mut stream, MAX_COLD_REPLY, deadline).map_err(
        |e| match e.kind() {
            io::ErrorKind::InvalidData => Error::Protocol {
                op: P::NAME,
                path: server.clone(),
                detail: e.to_string(),
            },
            _ => io_err(e),
        },
    )?;
    let protocol = |detail: String| Error::Protocol {
        op: P::NAME,
        path: server.clone(),
        detail,
    };
    let mut r = XdrReader::new(&record);
    let header = ReplyHeader::decode(&mut r).map_err(|e| protocol(e.to_string()))?;
    if header.xid != xid {
        return Err(protocol(format!(
            "reply XID {:#x} does not match call {xid:#x}",
            header.xid
        )));
    }
    match header.body {
        ReplyBody::Accepted {
            stat: AcceptedReply::Success,
            ..
        } => P::Res::decode(&mut r).map_err(|e| protocol(e.to_string())),
        ReplyBody::Denied(RejectedReply::AuthError(status)) => Err(Error::Auth {
            op: P::NAME,
            path: server.clone(),
            status,
        }),
        ReplyBody::Denied(RejectedReply::RpcMismatch { low, high }) => Err(Error::Rpc {
            op: P::NAME,
            path: server.clone(),
            detail: format!(
                "server rejected the call: RPC version mismatch (supports {low}..={high})"
            ),
        }),
        ReplyBody::Accepted { stat, .. } => Err(Error::Rpc {
            op: P::NAME,
            path: server.clone(),
            detail: match stat {
                AcceptedReply::ProgMismatch { low, high } => format!(
                    "server does not support version {} of program {} (supports {low}..={high})",
                    P::VERS,
                    P::PROG
                ),
                AcceptedReply::Error(s) => format!("server could not run the call: {s}"),
                AcceptedReply::Success => "success".to_string(),
            },
        }),
    }
}

/// Asks the portmapper at `host:111` for the TCP port of `prog`/`vers`.
///
/// Every failure names the portmapper, what was asked, and how to do
/// without it (`nfsport=`, `mountport=`): no rpcbind listening is
/// `Connect` with the OS error (ECONNREFUSED), a program not registered is
/// `Connect` (ECONNREFUSED) saying so, anything else keeps its kind (an
/// RPC or protocol error, a timeout after the cold-path timeout).
pub(crate) fn getport(base: &ConnectSpec, cred: &[u8], prog: u32, vers: u32) -> Result<u16> {
    let mut spec = base.clone();
    spec.remote = SocketAddr::new(base.remote.ip(), portmap::PMAP_PORT);
    let name = match prog {
        directnfs_wire::nfs3::NFS_PROGRAM => "NFS",
        mount::MOUNT_PROGRAM => "MOUNT",
        _ => "program",
    };
    let (key, asked) = match prog {
        mount::MOUNT_PROGRAM => ("mountport=", format!("{name} v{vers} ({prog})")),
        _ => ("nfsport=", format!("{name} v{vers} ({prog})")),
    };
    let context = format!(
        "{} (the portmapper, asked for the TCP port of {asked}; set {key} to do without it)",
        spec.remote
    );
    let port = rpc_once::<portmap::Getport>(&spec, cred, &Mapping::tcp(prog, vers)).map_err(
        |e| match e {
            Error::Connect { source, .. } => Error::Connect {
                server: context.clone(),
                source,
            },
            Error::Rpc { op, detail, .. } => Error::Rpc {
                op,
                path: context.clone(),
                detail,
            },
            Error::Protocol { op, detail, .. } => Error::Protocol {
                op,
                path: context.clone(),
                detail,
            },
            Error::Auth { op, status, .. } => Error::Auth {
                op,
                path: context.clone(),
                status,
            },
            other => other,
        },
    )?;
    match u16::try_from(port) {
        Ok(0) | Err(_) => Err(Error::Connect {
            server: context,
            source: io::Error::new(
                io::ErrorKind::ConnectionRefused,
                format!(
                    "{asked} is not registered with the portmapper over TCP (GETPORT answered {port}): is the server running?"
                ),
            ),
        }),
        Ok(p) => Ok(p),
    }
}

/// The export chosen for a path, its root handle, and the path's remainder
/// inside the export.
#[derive(Debug, Clone)]
pub(crate) struct Mounted {
    pub export: String,
    pub root: nfs_fh3,
    pub rest: String,
}

/// Finds the export holding `path` and MOUNTs it.
pub(crate) fn mount_path(
    spec: &ConnectSpec,
    cred: &[u8],
    path: &str,
    known_export: Option<&str>,
) -> Result<Mounted> {
    if let Some(export) = known_export {
        let root = mnt(spec, cred, export)?;
        let rest = crate::config::split_by_export(path, export)
            .unwrap_or("/")
            .to_string();
        return Ok(Mounted {
            export: export.to_string(),
            root,
            rest,
        });
    }
    // A prefix longer than MNTPATHLEN cannot be an export: never sent.
    let candidates: Vec<String> = prefixes(path)
        .into_iter()
        .filter(|c| c.len() <= MNTPATHLEN)
        .collect();
    // Prefer what EXPORT lists; fall back to probing every prefix.
    let listed: Vec<String> = match rpc_once::<mount::Export>(spec, cred, &()) {
        Ok(list) => list
            .0
            .iter()
            .map(|e| String::from_utf8_lossy(e.ex_dir.as_bytes()).into_owned())
            .collect(),
        Err(e) => {
            tracing::debug!("MOUNT EXPORT unavailable ({e}); probing prefixes");
            Vec::new()
        }
    };
    let ordered: Vec<&String> = candidates
        .iter()
        .filter(|c| listed.iter().any(|l| normalize(l) == **c))
        .chain(candidates.iter())
        .collect();
    let mut last_err = None;
    for export in ordered {
        match mnt(spec, cred, export) {
            Ok(root) => {
                let rest = crate::config::split_by_export(path, export)
                    .unwrap_or("/")
                    .to_string();
                return Ok(Mounted {
                    export: export.clone(),
                    root,
                    rest,
                });
            }
            Err(e @ Error::Mount { .. }) => last_err = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last_err
        .unwrap_or_else(|| Error::InvalidInput(format!("no export of the server contains {path}"))))
}

/// Refuses a MOUNT path the protocol cannot carry (RFC 1813 §5.1
/// `dirpath<MNTPATHLEN>`), before anything is sent.
fn check_mount_path(export: &str) -> Result<()> {
    if export.len() > MNTPATHLEN {
        return Err(Error::InvalidInput(format!(
            "export path of {} bytes exceeds the MOUNT protocol's limit of {MNTPATHLEN} bytes (MNTPATHLEN): {}...",
            export.len(),
            export.chars().take(64).collect::<String>()
        )));
    }
    Ok(())
}

fn mnt(spec: &ConnectSpec, cred: &[u8], export: &str) -> Result<nfs_fh3> {
    check_mount_path(export)?;
    match rpc_once::<mount::Mnt>(spec, cred, &dirpath(export.as_bytes().to_vec()))? {
        mountres3::Ok(ok) => Ok(ok.fhandle),
        mountres3::Err(status) => Err(Error::Mount {
            export: export.to_string(),
            status,
        }),
    }
}

/// Every prefix of `path` on component boundaries, longest first, ending with `/`.
fn prefixes(path: &str) -> Vec<String> {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let mut out: Vec<String> = (1..=parts.len())
        .rev()
        .map(|n| format!("/{}", parts[..n].join("/")))
        .collect();
    out.push("/".into());
    out
}

fn normalize(p: &str) -> String {
    let parts: Vec<&str> = p.split('/').filter(|p| !p.is_empty()).collect();
    format!("/{}", parts.join("/"))
}

/// Default connect timeout for the cold path.
pub(crate) const COLD_TIMEOUT: Duration = Duration::from_secs(10);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_paths_over_mntpathlen_are_refused_before_sending() {
        let long = format!("/{}", "a".repeat(MNTPATHLEN));
        assert_eq!(long.len(), MNTPATHLEN + 1);
        let e = check_mount_path(&long).unwrap_err();
        assert!(matches!(e, Error::InvalidInput(_)), "{e:?}");
        assert!(e.to_string().contains("MNTPATHLEN"), "{e}");
        assert!(check_mount_path(&long[..MNTPATHLEN]).is_ok());
    }

    #[test]
    fn prefixes_go_from_longest_to_root() {
        assert_eq!(prefixes("/a/b/c"), vec!["/a/b/c", "/a/b", "/a", "/"]);
        assert_eq!(prefixes("/"), vec!["/"]);
    }
}
