//! Symbolic and hard links and LOOKUP by path on NFSv4.1: CREATE of an
//! `NF4LNK` (RFC 8881 §18.4), READLINK (§18.24), LINK (§18.9) and a
//! path walk ending in GETFH and GETATTR, each one COMPOUND.
//!
//! CREATE and LINK are sent with `sa_cachethis`: a re-send after a lost
//! reply is answered from the session's reply cache with the first
//! answer, so NFSv3's "a re-sent SYMLINK that finds its own link reports
//! success" guess is not needed here.

use directnfs_wire::nfs3::{self, nfspath3};
use directnfs_wire::nfs4::{
    createtype4, fattr4, linktext4, nfs_argop4, nfs_fh4, nfs_resop4, CREATE4args, GETATTR4args,
    LINK4args, Nfs4Res, PUTFH4args,
};

use super::ops::{components, from_fattr, missing, split, stat_attrs, Ops};
use super::session::Session;
use crate::error::{Error, Result};
use crate::metadata::Metadata;
use crate::remote::Remote;

/// The target of the symbolic link `path`, as stored.
pub(crate) fn readlink(s: &Session, remote: &Remote, path: &str) -> Result<Vec<u8>> {
    let mut ops = Ops::default();
    ops.walk(&s.root, &components(path)?);
    ops.push(nfs_argop4::OP_READLINK);
    let res = ops.run(s, remote, "READLINK", path, nfs3::NFSPROC3_READLINK, false)?;
    match res.into_iter().last() {
        Some(nfs_resop4::OP_READLINK(Nfs4Res::Ok(ok))) => Ok(ok.link.as_bytes().to_vec()),
        _ => Err(missing("READLINK", path)),
    }
}

/// Creates the symbolic link `path` holding `target` (mode 0777, as
/// NFSv3's SYMLINK is sent). The same bound as NFSv3's: at most 4095
/// bytes (Linux's), no NUL.
pub(crate) fn symlink(s: &Session, remote: &Remote, target: &[u8], path: &str) -> Result<()> {
    remote.check_writable(nfs3::NFSPROC3_SYMLINK, "SYMLINK", path)?;
    if target.len() >= nfspath3::MAX || target.contains(&0) {
        return Err(Error::InvalidInput(format!(
            "SYMLINK {path}: the target must be at most {} bytes without NUL ({} given)",
            nfspath3::MAX - 1,
            target.len()
        )));
    }
    // Checked above: within linktext4's bound too.
    let text = linktext4::from(target);
    let (parent, name) = split(path)?;
    let mut ops = Ops::default();
    ops.walk(&s.root, &parent);
    ops.push(nfs_argop4::OP_CREATE(CREATE4args {
        objtype: createtype4::NF4LNK(text),
        objname: name,
        createattrs: fattr4 {
            mode: Some(0o777),
            ..Default::default()
        },
    }));
    ops.run(s, remote, "SYMLINK", path, nfs3::NFSPROC3_SYMLINK, true)
        .map(|_| ())
}

/// Makes `new` a second name of `existing`: SAVEFH holds the file while
/// the walk goes to `new`'s directory.
pub(crate) fn link(s: &Session, remote: &Remote, existing: &str, new: &str) -> Result<()> {
    remote.check_writable(nfs3::NFSPROC3_LINK, "LINK", new)?;
    let (parent, name) = split(new)?;
    let mut ops = Ops::default();
    ops.walk(&s.root, &components(existing)?);
    ops.push(nfs_argop4::OP_SAVEFH);
    ops.walk(&s.root, &parent);
    ops.push(nfs_argop4::OP_LINK(LINK4args { newname: name }));
    ops.run(s, remote, "LINK", new, nfs3::NFSPROC3_LINK, true)
        .map(|_| ())
}

/// The handle (up to 128 bytes) and attributes of `path` (a symbolic
/// link's own).
pub(crate) fn lookup(s: &Session, remote: &Remote, path: &str) -> Result<(nfs_fh4, Metadata)> {
    let mut ops = Ops::default();
    ops.walk(&s.root, &components(path)?);
    ops.push(nfs_argop4::OP_GETFH);
    ops.push(nfs_argop4::OP_GETATTR(GETATTR4args {
        attr_request: stat_attrs(),
    }));
    let res = ops.run(s, remote, "LOOKUP", path, nfs3::NFSPROC3_LOOKUP, false)?;
    let mut fh = None;
    let mut attrs = None;
    for r in res {
        match r {
            nfs_resop4::OP_GETFH(Nfs4Res::Ok(ok)) => fh = Some(ok.object),
            nfs_resop4::OP_GETATTR(Nfs4Res::Ok(ok)) => attrs = Some(from_fattr(&ok.obj_attributes)),
            _ => {}
        }
    }
    let (Some(fh), Some(attrs)) = (fh, attrs) else {
        return Err(missing("LOOKUP", path));
    };
    Ok((fh, attrs))
}

/// Attributes of the file a handle from [`lookup`] names.
pub(crate) fn metadata_of(
    s: &Session,
    remote: &Remote,
    handle: &nfs_fh4,
    path: &str,
) -> Result<Metadata> {
    let object = *handle;
    let mut ops = Ops::default();
    ops.push(nfs_argop4::OP_PUTFH(PUTFH4args { object }));
    ops.push(nfs_argop4::OP_GETATTR(GETATTR4args {
        attr_request: stat_attrs(),
    }));
    let res = ops.run(s, remote, "GETATTR", path, nfs3::NFSPROC3_GETATTR, false)?;
    match res.last() {
        Some(nfs_resop4::OP_GETATTR(Nfs4Res::Ok(ok))) => Ok(from_fattr(&ok.obj_attributes)),
        _ => Err(missing("GETATTR", path)),
    }
}
