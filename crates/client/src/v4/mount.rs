//! Mounting an NFSv4.1 server: channels to its NFS port (2049 unless
//! `nfsport` says otherwise; NFSv4 has no MOUNT protocol and needs no
//! portmapper), the session, then the export's handle — the target path
//! walked in the pseudo file system from PUTROOTFH — with its transfer
//! sizes and lease time.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use directnfs_wire::nfs4::{
    bitmap4, nfs_argop4, nfs_fh4, nfs_ftype4, nfs_opnum4, nfs_resop4, GETATTR4args, LOOKUP4args,
    Nfs4Res, FATTR4_LEASE_TIME, FATTR4_MAXREAD, FATTR4_MAXWRITE, FATTR4_TYPE, NFS4_PROGRAM, NFS_V4,
};
use directnfs_wire::Encode;

use super::ops::{self, STAT_GETATTR};
use super::session::{nfs4_error, results, Request, Session};
use crate::client::{start_transport, Client, Inner, Limits, Target};
use crate::config::{MountOptions, StableMode};
use crate::error::{Error, Result};

/// The NFSv4 port (RFC 7530 §3.1).
const NFS4_PORT: u16 = 2049;

/// Transfer size when the server gives none.
const FALLBACK_TRANSFER: u32 = 64 * 1024;

/// One attempt at mounting `target` over NFSv4.1.
pub(crate) fn mount_once(target: &Target, options: &MountOptions, cred: &[u8]) -> Result<Client> {
    if options.stable == StableMode::Unstable {
        return Err(super::unsupported("stable=unstable"));
    }
    let nfs_port = options.nfs_port.unwrap_or(NFS4_PORT);
    let transport = start_transport(target, options, cred, nfs_port, (NFS4_PROGRAM, NFS_V4))?;
    let mut inner = Inner {
        transport,
        name: target.name.clone(),
        export: String::new(),
        root: Default::default(),
        target_rest: String::new(),
        limits: Limits {
            rtmax: FALLBACK_TRANSFER,
            wtmax: FALLBACK_TRANSFER,
            server_rtmax: 0,
            server_wtmax: 0,
        },
        options: options.clone(),
        cred: cred.to_vec(),
        handles: RwLock::new(HashMap::new()),
        files: std::sync::Mutex::new(Default::default()),
        v4: None,
    };
    let mut session = Session::establish(&inner)?;
    let export = target.export.clone().unwrap_or_else(|| target.path.clone());
    // A URL naming a file (`dnfs cat nfs://host/export/f`): the export is
    // its directory, the file the target path below it.
    let (export, rest) = match find_export(&inner, &session, &export) {
        Err(Error::InvalidInput(_)) if target.export.is_none() => {
            let (parent, name) = ops::split(&export)?;
            let parent: Vec<String> = parent
                .iter()
                .map(|c| String::from_utf8_lossy(c.as_bytes()).into_owned())
                .collect();
            let name = String::from_utf8_lossy(name.as_bytes()).into_owned();
            (format!("/{}", parent.join("/")), Some(format!("/{name}")))
        }
        Err(e) => return Err(e),
        Ok(_) => (export, None),
    };
    let found = find_export(&inner, &session, &export)?;
    session.root = found.fh;
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
    inner.limits = Limits {
        rtmax: clamp(found.maxread, options.rsize),
        wtmax: clamp(found.maxwrite, options.wsize),
        server_rtmax: found.maxread.min(u32::MAX as u64) as u32,
        server_wtmax: found.maxwrite.min(u32::MAX as u64) as u32,
    };
    inner.export = export.clone();
    // The whole target path is the export on NFSv4 (a pseudo-file-system
    // path); below it is "/" unless dnfstab named the export apart.
    inner.target_rest = match (&target.export, rest) {
        (_, Some(rest)) => rest,
        (Some(e), None) => crate::config::split_by_export(&target.path, e)
            .unwrap_or("/")
            .to_string(),
        (None, None) => "/".into(),
    };
    inner.v4 = Some(session);
    let inner = Arc::new(inner);
    if let Some(s) = inner.v4.as_ref() {
        s.start_renewal(Arc::downgrade(&inner));
    }
    Ok(Client { inner })
}

struct Found {
    fh: nfs_fh4,
    maxread: u64,
    maxwrite: u64,
    lease: Option<u32>,
}

/// PUTROOTFH, a LOOKUP per component of `export`, GETFH and GETATTR of
/// the type, transfer sizes and lease time (of the export's own handle:
/// the pseudo root's differ, `docs/server-notes.md`).
fn find_export(inner: &Inner, s: &Session, export: &str) -> Result<Found> {
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
    let settled = s.compound(inner, &req)?;
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
