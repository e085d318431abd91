//! Finding the server and the export: PORTMAP GETPORT, MOUNT EXPORT and
//! MNT, each a one-shot RPC over its own short-lived TCP connection
//! (`io::oneshot`; cold path: done once per mount). Under `sec=krb5*` the
//! MOUNT calls are sealed, each on a context of its own ([`MountAuth`]).
//!
//! The export of a path is the longest prefix of it that the server lists
//! in EXPORT and lets us MOUNT (docs/design.md "Configuration"). Where the server has no EXPORT procedure,
//! or the list names nothing that fits, MNT is tried on every prefix from
//! the longest down to `/`, and what it accepts is doubted twice, because
//! some servers answer MNT for paths they do not export:
//!
//! * a server that answers every path with its root handle would make a
//!   file name the export: a shorter prefix MNT answers with the *same*
//!   handle is the same directory, and the shortest such is the export
//!   ([`shortest_alias`]);
//! * a server that MOUNTs a file hands out the file's own handle: the
//!   caller checks that a probed export's root is a directory and asks for
//!   the export above it otherwise ([`mount_above`]).
//!
//! An export named by the configuration (dnfstab `export:`) or by the URL
//! (`nfs://host//path`: export `/`) is MOUNTed as it is. A MOUNT path is at
//! most `MNTPATHLEN` (1,024) bytes: longer prefixes cannot be exports and
//! are never sent, and an export named longer than that is refused before
//! anything is sent (a server would answer GARBAGE_ARGS).

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use directnfs_wire::mount::{self, dirpath, mountres3, MNTPATHLEN};
use directnfs_wire::nfs3::nfs_fh3;
use directnfs_wire::portmap::{self, Mapping};

use directnfs_wire::{Decode, Encode, Procedure, XdrReader};

use crate::error::{Error, Result};
use crate::io::oneshot::rpc_once;
use crate::io::socket::{connect_bound, ConnectSpec};
use crate::security::{Flavor, GssConnection, SecurityError};

/// Asks the portmapper at `host:111` for the TCP port of `prog`/`vers`;
/// in RPC-with-TLS when `base.tls` is set.
///
/// Every failure names the portmapper, what was asked, and how to do
/// without it (`nfsport=`, `mountport=`): no rpcbind listening is
/// `Connect` with the OS error (ECONNREFUSED), a program not registered is
/// `Connect` (ECONNREFUSED) saying so, anything else keeps its kind (an
/// RPC or protocol error, a timeout after the cold-path timeout).
pub(crate) fn getport(base: &ConnectSpec, cred: &[u8], prog: u32, vers: u32) -> Result<u16> {
    let mut spec = base.clone();
    spec.remote = SocketAddr::new(base.remote.ip(), portmap::PMAP_PORT);
    // RPC-with-TLS asked (`xprtsec=`): the portmapper too, its probe
    // naming the portmapper's program (RFC 9289 applies to every program).
    spec.tls = base
        .tls
        .as_ref()
        .map(|t| std::sync::Arc::new(t.for_program(portmap::PMAP_PROG, portmap::PMAP_VERS)));
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
    let port =
        rpc_once::<portmap::Getport>(&spec, cred, &Mapping::tcp(prog, vers)).map_err(|e| {
            match Error::from(e) {
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
            }
        })?;
    // A server that serves NFSv4 only has no MOUNT program at all.
    let hint = match prog {
        mount::MOUNT_PROGRAM => {
            " (or it serves NFSv4 only: `vers=4.1` in a URL, `nfs_version: nfsv4.1` in a dnfstab)"
        }
        _ => "",
    };
    match u16::try_from(port) {
        Ok(0) | Err(_) => Err(Error::Connect {
            server: context,
            source: io::Error::new(
                io::ErrorKind::ConnectionRefused,
                format!(
                    "{asked} is not registered with the portmapper over TCP (GETPORT answered {port}): is the server running?{hint}"
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
    /// The export was found by probing MNT (neither given nor listed by
    /// EXPORT): the caller must check that its root is a directory, since
    /// some servers MOUNT a file as willingly as a directory.
    pub probed: bool,
}

/// Finds the export holding `path` and MOUNTs it (`known_export`: the
/// export named by the configuration or by a URL's `//`, used as it is).
pub(crate) fn mount_path(
    spec: &ConnectSpec,
    cred: MountAuth<'_>,
    path: &str,
    known_export: Option<&str>,
) -> Result<Mounted> {
    match known_export {
        Some(export) => Ok(mounted(path, export, mnt(spec, cred, export)?, false)),
        None => discover(spec, cred, path, usize::MAX),
    }
}

/// Finds the export holding `path` among the prefixes shorter than
/// `not_export`: the server MOUNTed `not_export` but its root is not a
/// directory (a file), so it cannot be the export.
pub(crate) fn mount_above(
    spec: &ConnectSpec,
    cred: MountAuth<'_>,
    path: &str,
    not_export: &str,
) -> Result<Mounted> {
    discover(spec, cred, path, not_export.len())
}

/// The export of `path`: the longest of its prefixes (shorter than
/// `shorter_than` bytes) that the server lists in EXPORT and lets us MOUNT;
/// where there is none (no EXPORT procedure, or nothing listed fits), the
/// longest prefix MNT accepts, confirmed by [`shortest_alias`].
fn discover(
    spec: &ConnectSpec,
    cred: MountAuth<'_>,
    path: &str,
    shorter_than: usize,
) -> Result<Mounted> {
    // A prefix longer than MNTPATHLEN cannot be an export: never sent.
    let candidates: Vec<String> = prefixes(path)
        .into_iter()
        .filter(|c| c.len() <= MNTPATHLEN && c.len() < shorter_than)
        .collect();
    let listed: Vec<String> = match mount_rpc::<mount::Export>(spec, cred, &()) {
        Ok(list) => list
            .0
            .iter()
            .map(|e| normalize(&String::from_utf8_lossy(e.ex_dir.as_bytes())))
            .collect(),
        Err(e) => {
            tracing::debug!("MOUNT EXPORT unavailable ({e}); probing prefixes");
            Vec::new()
        }
    };
    let mut last_err = None;
    let mut refused = Vec::new();
    // What the server lists, it exports: no need to doubt its handle.
    for export in candidates.iter().filter(|c| listed.contains(c)) {
        match mnt(spec, cred, export) {
            Ok(root) => return Ok(mounted(path, export, root, false)),
            Err(e @ Error::Mount { .. }) => {
                refused.push(export.as_str());
                last_err = Some(e);
            }
            Err(e) => return Err(e),
        }
    }
    for export in candidates.iter().filter(|c| !refused.contains(&c.as_str())) {
        match mnt(spec, cred, export) {
            Ok(root) => {
                let export = shortest_alias(spec, cred, &candidates, export, &root)?;
                return Ok(mounted(path, export, root, true));
            }
            Err(e @ Error::Mount { .. }) => last_err = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last_err
        .unwrap_or_else(|| Error::InvalidInput(format!("no export of the server contains {path}"))))
}

/// The shortest prefix of `candidates` (longest first) that MNT answers
/// with the same `root` handle as `export`, or `export` itself.
///
/// Some servers have no EXPORT procedure and answer MNT of *any* path
/// with the handle of their one export (several small servers do): the
/// longest prefix they accept says nothing, and taking it would make a
/// file name (`nfs://host/f.bin`) the export, a directory that is in fact
/// the server's root. Two prefixes with the same handle are the same
/// directory, so the shorter one is the export and the rest of the path
/// lies below it. Shortest first: such a server answers `/` at once.
fn shortest_alias<'a>(
    spec: &ConnectSpec,
    cred: MountAuth<'_>,
    candidates: &'a [String],
    export: &'a str,
    root: &nfs_fh3,
) -> Result<&'a str> {
    for shorter in candidates.iter().rev().filter(|c| c.len() < export.len()) {
        // The flavors are `export`'s, checked already: the same handle is
        // the same export.
        match mnt_listing(spec, cred, shorter).map(|(h, _)| h) {
            Ok(h) if h == *root => {
                tracing::debug!(
                    "MNT {export} and MNT {shorter} give the same handle: the export is {shorter}"
                );
                return Ok(shorter);
            }
            // The server has answered for `export` already: a refusal of
            // a shorter prefix (a MOUNT status, an RPC or credential error,
            // a garbled reply) only says it is not the same directory.
            Ok(_) => {}
            Err(e @ Error::Connect { .. }) => return Err(e),
            Err(e) => tracing::debug!("MNT {shorter} while confirming {export}: {e}"),
        }
    }
    Ok(export)
}

fn mounted(path: &str, export: &str, root: nfs_fh3, probed: bool) -> Mounted {
    let rest = crate::config::split_by_export(path, export)
        .unwrap_or("/")
        .to_string();
    Mounted {
        export: export.to_string(),
        root,
        rest,
        probed,
    }
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

/// MNT of `export`: its root handle, once the flavors the reply lists
/// (RFC 1813 §5.2.1 `auth_flavors`) include the mount's own. A server
/// that lists none is taken at its word (its NFS calls are then the test
/// of the flavor).
fn mnt(spec: &ConnectSpec, cred: MountAuth<'_>, export: &str) -> Result<nfs_fh3> {
    let (root, flavors) = mnt_listing(spec, cred, export)?;
    let ours = cred.gss.map_or(Flavor::Sys, |(flavor, _)| flavor);
    if flavors.is_empty() || flavors.contains(&flavor_number(ours)) {
        return Ok(root);
    }
    let names: Vec<String> = flavors.iter().map(|&f| flavor_name(f)).collect();
    Err(Error::Connect {
        server: spec.remote.to_string(),
        source: io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "the export {export} takes sec={} (MOUNT), not sec={}",
                names.join(","),
                ours.name()
            ),
        ),
    })
}

/// MNT of `export`: its root handle and the flavors the reply lists.
fn mnt_listing(
    spec: &ConnectSpec,
    cred: MountAuth<'_>,
    export: &str,
) -> Result<(nfs_fh3, Vec<i32>)> {
    check_mount_path(export)?;
    match mount_rpc::<mount::Mnt>(spec, cred, &dirpath(export.as_bytes().to_vec()))? {
        mountres3::Ok(ok) => Ok((ok.fhandle, ok.auth_flavors)),
        mountres3::Err(status) => Err(Error::Mount {
            export: export.to_string(),
            status,
        }),
    }
}

/// The number MNT lists a flavor by: AUTH_SYS 1, the Kerberos V5
/// pseudo-flavors 390003-390005 (RFC 2623 §2.2).
fn flavor_number(flavor: Flavor) -> i32 {
    match flavor {
        Flavor::Sys => 1,
        Flavor::Krb5 => 390003,
        Flavor::Krb5i => 390004,
        Flavor::Krb5p => 390005,
    }
}

/// A listed flavor as `sec=` names it (`none` for AUTH_NONE), else its number.
fn flavor_name(number: i32) -> String {
    match number {
        0 => "none".into(),
        1 => "sys".into(),
        390003 => "krb5".into(),
        390004 => "krb5i".into(),
        390005 => "krb5p".into(),
        n => format!("flavor {n}"),
    }
}

/// How MOUNT calls (EXPORT, MNT) are authenticated.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MountAuth<'a> {
    /// The AUTH_SYS credential and verifier, encoded.
    pub cred: &'a [u8],
    /// A Kerberos flavor (`sec=krb5*`) and the server's host name (its
    /// principal is `nfs/HOST`): each call is made on a context of its own
    /// (RPCSEC_GSS on the MOUNT program). `None`: AUTH_SYS.
    pub gss: Option<(Flavor, &'a str)>,
}

/// Calls MOUNT procedure `P` once on a fresh connection to `spec.remote`:
/// with AUTH_SYS through `rpc_once`, with Kerberos sealed on a context set
/// up on that connection. A Kerberos failure keeps its meaning: no ticket
/// is `Connect` with EACCES (never retried until `mnt_timeout`), a broken
/// connection `Connect` with its I/O error, an AUTH_ERROR `Auth`,
/// anything else `Protocol`; every message names the server.
fn mount_rpc<P: Procedure>(
    spec: &ConnectSpec,
    auth: MountAuth<'_>,
    args: &P::Args,
) -> Result<P::Res> {
    let Some((flavor, host)) = auth.gss else {
        return rpc_once::<P>(spec, auth.cred, args).map_err(Error::from);
    };
    let server = spec.remote.to_string();
    let failed = |e: SecurityError| match e {
        SecurityError::Io { source, .. } => Error::Connect {
            server: server.clone(),
            source,
        },
        SecurityError::Rejected { status, .. } => Error::Auth {
            op: P::NAME,
            path: server.clone(),
            status,
        },
        e if e.errno() == libc::EACCES => Error::Connect {
            server: server.clone(),
            source: io::Error::new(io::ErrorKind::PermissionDenied, e.to_string()),
        },
        e => Error::Protocol {
            op: P::NAME,
            path: server.clone(),
            detail: e.to_string(),
        },
    };
    let (stream, tls_exporter) = connect_bound(spec).map_err(|source| Error::Connect {
        server: server.clone(),
        source,
    })?;
    let mut conn = GssConnection::establish_bound(
        stream,
        host,
        (P::PROG, P::VERS),
        flavor,
        spec.timeout,
        tls_exporter.as_ref().map(|e| &e[..]),
    )
    .map_err(failed)?;
    let mut body = Vec::with_capacity(256);
    args.encode(&mut body);
    let results = conn.call(P::PROC, &body, spec.timeout).map_err(failed)?;
    P::Res::decode(&mut XdrReader::new(&results)).map_err(|e| Error::Protocol {
        op: P::NAME,
        path: server.clone(),
        detail: e.to_string(),
    })
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
    fn mnt_lists_flavors_by_their_rfc_2623_numbers() {
        for f in [Flavor::Sys, Flavor::Krb5, Flavor::Krb5i, Flavor::Krb5p] {
            assert_eq!(flavor_name(flavor_number(f)), f.name());
        }
        assert_eq!(flavor_number(Flavor::Krb5p), 390005);
        assert_eq!(flavor_name(0), "none");
        assert_eq!(flavor_name(6), "flavor 6");
    }

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
