//! Mounting an NFSv4.1 server: channels to its NFS port (2049 unless
//! `nfsport` says otherwise; NFSv4 has no MOUNT protocol and needs no
//! portmapper), the session, then the export's handle — the target path
//! walked in the pseudo file system from PUTROOTFH — with its transfer
//! sizes and lease time. What it makes is a [`Remote`] and a [`Session`];
//! the client that holds them is made by `client/discover.rs` (and by
//! `fork.rs` for a forked child).

use std::sync::Arc;

use directnfs_wire::nfs4::{
    bitmap4, nfs_argop4, nfs_fh4, nfs_ftype4, nfs_opnum4, nfs_resop4, nfsstat4, rpc_gss_svc_t,
    secinfo4, secinfo_style4, GETATTR4args, LOOKUP4args, Nfs4Res, PUTFH4args, SECINFO4args,
    FATTR4_FSID, FATTR4_LEASE_TIME, FATTR4_MAXREAD, FATTR4_MAXWRITE, FATTR4_TYPE, NFS4_PROGRAM,
    NFS_V4,
};
use directnfs_wire::Encode;

use super::ops::{self, STAT_GETATTR};
use super::owner_slot::OwnerSlot;
use super::reclaim::reclaim;
use super::sequence::{nfs4_error, results, Request};
use super::session::Session;
use super::trunk::Trunk;
use crate::config::target::Target;
use crate::config::MountOptions;
use crate::error::{Error, Result};
use crate::io::transport::ConnectHook;
use crate::remote::{start_transport, Limits, Remote, FALLBACK_TRANSFER};
use crate::security::Flavor;

/// The NFSv4 port (RFC 7530 §3.1).
const NFS4_PORT: u16 = 2049;

/// Operations a COMPOUND may carry (`ca_maxoperations` asked for).
const MAX_WALK_OPS: usize = 16;

/// What one NFSv4.1 mount attempt made, for the client to hold.
pub(crate) struct Established {
    /// The server end, with the export, the target path below it and
    /// the transfer sizes.
    pub(crate) remote: Remote,
    /// The session, with the export's handle and the lease time.
    pub(crate) session: Session,
    /// The state clients that died left behind, to be ended once the
    /// client runs ([`DeadClients::end`]).
    pub(crate) dead: DeadClients,
}

/// The owner slots of clients that died (`owner_reuse`), whose state is
/// ended after the mount.
pub(crate) struct DeadClients {
    slots: Vec<OwnerSlot>,
    nfs_port: u16,
    server: String,
}

impl DeadClients {
    /// Ends the state each dead client left (`end_dead_client`).
    pub(crate) fn end(self, target: &Target, options: &MountOptions, cred: &[u8]) {
        for slot in self.slots {
            end_dead_client(target, options, cred, self.nfs_port, &self.server, slot);
        }
    }
}

/// One attempt at mounting `target` over NFSv4.1.
pub(crate) fn mount_once(
    target: &Target,
    options: &MountOptions,
    cred: &[u8],
    alerts: &crate::alert::Alerts,
) -> Result<Established> {
    let nfs_port = options.nfs_port.unwrap_or(NFS4_PORT);
    let labels = target
        .paths
        .iter()
        .map(|p| match p.local {
            Some(l) => format!("{l}->{}", p.server),
            None => format!("*->{}", p.server),
        })
        .collect();
    // Slots are kept per server: the first path's address and port.
    let server = format!(
        "{}:{nfs_port}",
        target.paths.first().map_or("", |p| p.server.as_str())
    );
    let claimed = if options.owner_reuse {
        OwnerSlot::claim(&server, true)
    } else {
        None
    };
    let (own, dead) = match claimed {
        Some(c) => (Some(c.own), c.dead),
        None => (None, Vec::new()),
    };
    let trunk = Trunk::new(labels, cred, &server, own);
    let transport = start_transport(
        target,
        options,
        cred,
        nfs_port,
        (NFS4_PROGRAM, NFS_V4),
        alerts.clone(),
        Some(Arc::clone(&trunk) as Arc<dyn ConnectHook>),
    )?;
    let mut remote = Remote::new(transport, target, options, cred);
    retire_refused(&remote, &trunk);
    let mut session = Session::establish(&remote, trunk, reclaim)?;
    let export = target.export.clone().unwrap_or_else(|| target.path.clone());
    // The export is the root of the file system the target path is in
    // (as NFSv3's MOUNT export): the target path itself may be a file, a
    // directory below the export or not exist yet (`dnfs cp` to it).
    // NFS4ERR_WRONGSEC on the way: the export does not take the mount's
    // flavor (AUTH_SYS included); EACCES naming those it takes.
    let refused = |e: Error, path: &str| match e {
        Error::Nfs4 {
            status: nfsstat4::NFS4ERR_WRONGSEC,
            ..
        } => wrong_flavor(&remote, &session, target, nfs_port, path, options.security),
        e => e,
    };
    let (export, rest) = match &target.export {
        Some(e) => (e.clone(), None),
        None => split_export(&remote, &session, &export).map_err(|e| refused(e, &export))?,
    };
    let found = find_export(&remote, &session, &export).map_err(|e| refused(e, &export))?;
    session.root = found.fh;
    if options.security != Flavor::Sys {
        session.flavors = export_flavors(&remote, &session, &export, found.fh);
        let ours = options.security.name();
        if !session.flavors.is_empty() && !session.flavors.iter().any(|f| f == ours) {
            return Err(Error::Connect {
                server: format!("{}:{nfs_port}", target.name),
                source: std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    format!(
                        "the export {export} takes sec={} (SECINFO_NO_NAME), not sec={ours}",
                        session.flavors.join(",")
                    ),
                ),
            });
        }
    }
    if let Some(lease) = found.lease {
        session.lease = std::time::Duration::from_secs(lease.clamp(5, 3600) as u64);
    }
    let clamp = |server: u64, ours: u32| {
        let v = if server == 0 {
            FALLBACK_TRANSFER
        } else {
            server.min(ours as u64) as u32
        };
        if v >= 4096 {
            v & !4095
        } else {
            v.max(512)
        }
    };
    remote.limits = Limits {
        rtmax: clamp(found.maxread, options.rsize),
        wtmax: clamp(found.maxwrite, options.wsize),
        server_rtmax: found.maxread.min(u32::MAX as u64) as u32,
        server_wtmax: found.maxwrite.min(u32::MAX as u64) as u32,
    };
    remote.export = export.clone();
    // The whole target path is the export on NFSv4 (a pseudo-file-system
    // path); below it is "/" unless dnfstab named the export apart.
    remote.target_rest = match (&target.export, rest) {
        (_, Some(rest)) => rest,
        (Some(e), None) => crate::config::split_by_export(&target.path, e)
            .unwrap_or("/")
            .to_string(),
        (None, None) => "/".into(),
    };
    Ok(Established {
        remote,
        session,
        dead: DeadClients {
            slots: dead,
            nfs_port,
            server,
        },
    })
}

/// Ends the state a client that died left under `slot`'s owner: a session
/// as that owner with a new verifier (the server then drops the dead
/// client's opens and locks, RFC 8881 §18.35.4), then DESTROY_SESSION and
/// DESTROY_CLIENTID, which mark the slot clean. One connection, nothing
/// else; a failure leaves the slot as it was (its state goes with the
/// lease), logged at debug level.
fn end_dead_client(
    target: &Target,
    options: &MountOptions,
    cred: &[u8],
    nfs_port: u16,
    server: &str,
    slot: OwnerSlot,
) {
    let number = slot.number();
    let labels = target.paths.iter().map(|p| p.server.clone()).collect();
    let trunk = Trunk::new(labels, cred, server, Some(slot));
    let options = MountOptions {
        connections: 1,
        publish_stats: false,
        ..options.clone()
    };
    let result = start_transport(
        target,
        &options,
        cred,
        nfs_port,
        (NFS4_PROGRAM, NFS_V4),
        crate::alert::Alerts::new(&target.name),
        Some(Arc::clone(&trunk) as Arc<dyn ConnectHook>),
    )
    .and_then(|transport| {
        let remote = Remote::new(transport, target, &options, cred);
        retire_refused(&remote, &trunk);
        let session = Session::establish(&remote, trunk, reclaim)?;
        // DESTROY_SESSION and DESTROY_CLIENTID, as a client's drop sends.
        session.destroy(&remote, true);
        Ok(())
    });
    match result {
        Ok(()) => {
            tracing::debug!("NFSv4.1: ended the state of the dead client of owner slot {number}")
        }
        Err(e) => tracing::debug!("NFSv4.1: owner slot {number}: {e}"),
    }
}

/// The session of a `fork`ed child's client: its own client ID and
/// session on `remote`'s new connections, with the parent's export handle
/// and lease time.
pub(crate) fn after_fork(remote: &Remote, parent: &Session, trunk: Arc<Trunk>) -> Result<Session> {
    retire_refused(remote, &trunk);
    let mut session = Session::establish(remote, trunk, reclaim)?;
    session.root = parent.root;
    session.lease = parent.lease;
    session.flavors = parent.flavors.clone();
    Ok(session)
}

/// After the transport's first connections: the paths that do not reach
/// the server of the first path that answered are taken out of use
/// (`trunk.rs`), before the session is made on the others.
fn retire_refused(remote: &Remote, trunk: &Trunk) {
    for (path, why) in trunk.settle() {
        remote.transport().retire_path(path, &why);
    }
}

/// The export's security flavors (RFC 8881 §18.45: PUTFH of its handle,
/// SECINFO_NO_NAME of the current handle), named as `sec=` names them;
/// empty when the server does not answer them (logged, not an error:
/// the mount's own calls are the proof that its flavor is taken).
fn export_flavors(remote: &Remote, s: &Session, export: &str, fh: nfs_fh4) -> Vec<String> {
    let args = [
        nfs_argop4::OP_PUTFH(PUTFH4args { object: fh }),
        nfs_argop4::OP_SECINFO_NO_NAME(secinfo_style4::SECINFO_STYLE4_CURRENT_FH),
    ];
    secinfo_call(remote, s, export, &args)
}

/// The error of a mount whose path met NFS4ERR_WRONGSEC: EACCES naming the
/// flavors the path takes, asked as RFC 8881 §2.6.3.1 says a client asks
/// after NFS4ERR_WRONGSEC on a LOOKUP: PUTROOTFH, LOOKUP of each
/// component but the last, SECINFO of the last one (the first on the way
/// the mount's flavor cannot enter gives the answer). A server that does
/// not say gets the error without the names.
fn wrong_flavor(
    remote: &Remote,
    s: &Session,
    target: &Target,
    nfs_port: u16,
    path: &str,
    ours: Flavor,
) -> Error {
    let mut takes = Vec::new();
    if let Ok(comps) = ops::components(path) {
        // The shortest prefix whose SECINFO answers: the first export on
        // the way that takes other flavors.
        for depth in 1..=comps.len() {
            let mut args = vec![nfs_argop4::OP_PUTROOTFH];
            args.extend(
                comps[..depth - 1]
                    .iter()
                    .map(|c| nfs_argop4::OP_LOOKUP(LOOKUP4args { objname: c.clone() })),
            );
            args.push(nfs_argop4::OP_SECINFO(SECINFO4args {
                name: comps[depth - 1].clone(),
            }));
            let listed = secinfo_call(remote, s, path, &args);
            if !listed.is_empty() && !listed.iter().any(|f| f == ours.name()) {
                takes = listed;
                break;
            }
        }
    }
    let detail = if takes.is_empty() {
        format!(
            "the export of {path} does not take sec={} (NFS4ERR_WRONGSEC)",
            ours.name()
        )
    } else {
        format!(
            "the export of {path} takes sec={} (SECINFO), not sec={}",
            takes.join(","),
            ours.name()
        )
    };
    Error::Connect {
        server: format!("{}:{nfs_port}", target.name),
        source: std::io::Error::new(std::io::ErrorKind::PermissionDenied, detail),
    }
}

/// The flavors the last operation of `args` (SECINFO or SECINFO_NO_NAME)
/// lists, named as `sec=` names them; empty when the server does not
/// answer (logged, not an error).
fn secinfo_call(remote: &Remote, s: &Session, export: &str, args: &[nfs_argop4]) -> Vec<String> {
    let nums: Vec<nfs_opnum4> = args.iter().map(nfs_argop4::opnum).collect();
    let op = match args.last() {
        Some(nfs_argop4::OP_SECINFO(_)) => "SECINFO",
        _ => "SECINFO_NO_NAME",
    };
    let encode = |out: &mut Vec<u8>| {
        for a in args {
            a.encode(out);
        }
    };
    let req = Request::ops(args, &nums, &encode, op, export);
    let found = s.compound(remote, &req).and_then(|settled| {
        if !settled.status.is_ok() {
            return Err(nfs4_error(op, export, settled.status));
        }
        Ok(results(&settled, &nums, op)?
            .into_iter()
            .find_map(|r| match r {
                nfs_resop4::OP_SECINFO_NO_NAME(Nfs4Res::Ok(ok))
                | nfs_resop4::OP_SECINFO(Nfs4Res::Ok(ok)) => Some(ok.0),
                _ => None,
            })
            .unwrap_or_default())
    });
    match found {
        Ok(list) => list.iter().map(flavor_name).collect(),
        Err(e) => {
            tracing::debug!("NFSv4.1 {op} of {export}: {e}");
            Vec::new()
        }
    }
}

/// A SECINFO entry as `sec=` names it: `sys`, `none`, `krb5`, `krb5i`,
/// `krb5p` (the Kerberos V5 mechanism, RFC 2623), else its numbers.
fn flavor_name(info: &secinfo4) -> String {
    // The Kerberos V5 mechanism's OID, 1.2.840.113554.1.2.2, DER encoded.
    const KRB5_OID: &[u8] = b"\x2a\x86\x48\x86\xf7\x12\x01\x02\x02";
    match info {
        secinfo4::Flavor(1) => "sys".into(),
        secinfo4::Flavor(0) => "none".into(),
        secinfo4::Flavor(f) => format!("flavor {f}"),
        secinfo4::RPCSEC_GSS(g) if g.oid.as_bytes().ends_with(KRB5_OID) => match g.service {
            rpc_gss_svc_t::RPC_GSS_SVC_NONE => "krb5".into(),
            rpc_gss_svc_t::RPC_GSS_SVC_INTEGRITY => "krb5i".into(),
            rpc_gss_svc_t::RPC_GSS_SVC_PRIVACY => "krb5p".into(),
            other => format!("krb5 service {other:?}"),
        },
        secinfo4::RPCSEC_GSS(g) => format!("RPCSEC_GSS mechanism {:02x?}", g.oid.as_bytes()),
    }
}

struct Found {
    fh: nfs_fh4,
    maxread: u64,
    maxwrite: u64,
    lease: Option<u32>,
}

/// Splits `path` into the export (the shortest prefix in the same file
/// system, by `fsid`, as the deepest existing component) and the rest:
/// one COMPOUND of PUTROOTFH and LOOKUP + GETATTR(fsid) per component,
/// which stops at the first that does not exist. Paths deeper than one
/// COMPOUND can walk are taken whole as the export.
fn split_export(remote: &Remote, s: &Session, path: &str) -> Result<(String, Option<String>)> {
    let comps = ops::components(path)?;
    if 1 + 2 * comps.len() + 1 > MAX_WALK_OPS {
        return Ok((path.to_string(), None));
    }
    let mut args = vec![nfs_argop4::OP_PUTROOTFH];
    for c in &comps {
        args.push(nfs_argop4::OP_LOOKUP(LOOKUP4args { objname: c.clone() }));
        args.push(nfs_argop4::OP_GETATTR(GETATTR4args {
            attr_request: bitmap4::from_bits(&[FATTR4_FSID]),
        }));
    }
    let nums: Vec<nfs_opnum4> = args.iter().map(nfs_argop4::opnum).collect();
    let encode = |out: &mut Vec<u8>| {
        for a in &args {
            a.encode(out);
        }
    };
    let req = Request::ops(&args, &nums, &encode, "LOOKUP", path);
    let settled = s.compound(remote, &req)?;
    // An export on the way that does not take the mount's flavor: no
    // shorter export stands in for it (RFC 8881 §2.6.3.1).
    if settled.status == nfsstat4::NFS4ERR_WRONGSEC {
        return Err(nfs4_error("LOOKUP", path, settled.status));
    }
    // The fsid of each component found, in order (a failed LOOKUP ends it).
    let fsids: Vec<_> = results(&settled, &nums, "LOOKUP")?
        .into_iter()
        .filter_map(|r| match r {
            nfs_resop4::OP_GETATTR(Nfs4Res::Ok(ok)) => Some(ok.obj_attributes.fsid),
            _ => None,
        })
        .collect();
    let Some(deepest) = fsids.last() else {
        return Err(nfs4_error("LOOKUP", path, settled.status));
    };
    let first = fsids.iter().position(|f| f == deepest).unwrap_or(0);
    let name =
        |c: &directnfs_wire::nfs4::component4| String::from_utf8_lossy(c.as_bytes()).into_owned();
    let export: Vec<String> = comps[..=first].iter().map(name).collect();
    let rest: Vec<String> = comps[first + 1..].iter().map(name).collect();
    Ok((
        format!("/{}", export.join("/")),
        Some(format!("/{}", rest.join("/"))),
    ))
}

/// PUTROOTFH, a LOOKUP per component of `export`, GETFH and GETATTR of
/// the type, transfer sizes and lease time (of the export's own handle:
/// the pseudo root's differ, `docs/server-notes.md`).
fn find_export(remote: &Remote, s: &Session, export: &str) -> Result<Found> {
    let comps = ops::components(export)?;
    let mut args = vec![nfs_argop4::OP_PUTROOTFH];
    for c in comps {
        args.push(nfs_argop4::OP_LOOKUP(LOOKUP4args { objname: c }));
    }
    args.push(nfs_argop4::OP_GETFH);
    args.push(nfs_argop4::OP_GETATTR(GETATTR4args {
        attr_request: bitmap4::from_bits(&[
            FATTR4_TYPE,
            FATTR4_LEASE_TIME,
            FATTR4_MAXREAD,
            FATTR4_MAXWRITE,
        ]),
    }));
    let nums: Vec<nfs_opnum4> = args.iter().map(nfs_argop4::opnum).collect();
    let encode = |out: &mut Vec<u8>| {
        for a in &args {
            a.encode(out);
        }
    };
    let mut req = Request::ops(&args, &nums, &encode, "LOOKUP", export);
    req.stat = STAT_GETATTR;
    let settled = s.compound(remote, &req)?;
    if !settled.status.is_ok() {
        return Err(nfs4_error("LOOKUP", export, settled.status));
    }
    let mut fh = None;
    let mut attrs = None;
    for r in results(&settled, &nums, "LOOKUP")? {
        match r {
            nfs_resop4::OP_GETFH(Nfs4Res::Ok(ok)) => fh = Some(ok.object),
            nfs_resop4::OP_GETATTR(Nfs4Res::Ok(ok)) => attrs = Some(ok.obj_attributes),
            _ => {}
        }
    }
    let (Some(fh), Some(a)) = (fh, attrs) else {
        return Err(ops::missing("LOOKUP", export));
    };
    if a.type_ != Some(nfs_ftype4::NF4DIR) {
        return Err(Error::InvalidInput(format!(
            "NFSv4.1 path {export} is not a directory: name the directory to mount in the URL"
        )));
    }
    Ok(Found {
        fh,
        maxread: a.maxread.unwrap_or(0),
        maxwrite: a.maxwrite.unwrap_or(0),
        lease: a.lease_time,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use directnfs_wire::nfs4::rpcsec_gss_info;

    #[test]
    fn secinfo_entries_are_named_as_sec_names_them() {
        let krb5 = |der: bool, service| {
            let mut oid = if der { vec![0x06, 0x09] } else { Vec::new() };
            oid.extend_from_slice(b"\x2a\x86\x48\x86\xf7\x12\x01\x02\x02");
            secinfo4::RPCSEC_GSS(rpcsec_gss_info {
                oid: oid.into(),
                qop: 0,
                service,
            })
        };
        assert_eq!(flavor_name(&secinfo4::Flavor(1)), "sys");
        assert_eq!(flavor_name(&secinfo4::Flavor(0)), "none");
        assert_eq!(flavor_name(&secinfo4::Flavor(390_003)), "flavor 390003");
        assert_eq!(
            flavor_name(&krb5(true, rpc_gss_svc_t::RPC_GSS_SVC_NONE)),
            "krb5"
        );
        assert_eq!(
            flavor_name(&krb5(false, rpc_gss_svc_t::RPC_GSS_SVC_INTEGRITY)),
            "krb5i"
        );
        assert_eq!(
            flavor_name(&krb5(true, rpc_gss_svc_t::RPC_GSS_SVC_PRIVACY)),
            "krb5p"
        );
        let other = secinfo4::RPCSEC_GSS(rpcsec_gss_info {
            oid: vec![0x06, 0x01, 0x2b].into(),
            qop: 0,
            service: rpc_gss_svc_t::RPC_GSS_SVC_NONE,
        });
        assert!(flavor_name(&other).starts_with("RPCSEC_GSS mechanism"));
    }
}
