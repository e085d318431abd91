//! Opening a file by a handle kept from earlier (`Client::open_handle`)
//! on NFSv4.1: OPEN with `CLAIM_FH` (RFC 8881 §18.16.3), read and write
//! access, read only when write is denied, as `open` does by name.

use directnfs_wire::nfs4::{
    nfs_argop4, nfs_fh4, nfs_resop4, nfsstat4, open_claim4, openflag4, Nfs4Res, PUTFH4args,
    OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_ACCESS_READ,
};

use std::sync::Arc;

use super::open_file::{open_op, OpenFile};
use super::ops::{missing, Ops};
use super::sequence::STAT_OTHER;
use super::session::Session;
use super::Host;
use crate::error::{Error, Result};

/// The open state of the file `handle` names, or `None` on NFSv3 (whose
/// files need none). `open_handle` cannot fail, so an OPEN the server
/// refuses is logged and the `File`'s I/O then fails at the server.
pub(crate) fn open(host: &Arc<dyn Host>, handle: &nfs_fh4, path: &str) -> Option<OpenFile> {
    let s = host.session()?;
    match open_fh(host, s, handle, path) {
        Ok(open) => Some(open),
        Err(e) => {
            tracing::warn!("open_handle {path}: {e}");
            None
        }
    }
}

fn open_fh(host: &Arc<dyn Host>, s: &Session, handle: &nfs_fh4, path: &str) -> Result<OpenFile> {
    let fh = *handle;
    match open_once(host, s, fh, path, OPEN4_SHARE_ACCESS_BOTH) {
        Err(Error::Nfs4 {
            status: nfsstat4::NFS4ERR_ACCESS,
            ..
        }) => open_once(host, s, fh, path, OPEN4_SHARE_ACCESS_READ),
        other => other,
    }
}

fn open_once(
    host: &Arc<dyn Host>,
    s: &Session,
    fh: nfs_fh4,
    path: &str,
    access: u32,
) -> Result<OpenFile> {
    let mut ops = Ops::default();
    ops.push(nfs_argop4::OP_PUTFH(PUTFH4args { object: fh }));
    ops.push(open_op(
        s,
        access,
        openflag4::OPEN4_NOCREATE,
        open_claim4::CLAIM_FH,
    ));
    let res = ops.run(s, host.remote(), "OPEN", path, STAT_OTHER, true)?;
    match res.last() {
        Some(nfs_resop4::OP_OPEN(Nfs4Res::Ok(ok))) => {
            Ok(OpenFile::opened(host, s, fh, ok.stateid, access, path))
        }
        _ => Err(missing("OPEN", path)),
    }
}
