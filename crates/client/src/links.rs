//! Symbolic and hard links (RFC 1813 §3.3.5 READLINK, §3.3.10 SYMLINK,
//! §3.3.15 LINK).
//!
//! A SYMLINK creates a name together with its content in one request, so
//! nobody can see the name without the content. The SQLite VFS builds its
//! cross-process lock on that (a lock file whose owner record exists from
//! the instant the lock does).

use directnfs_wire::nfs3::{self, diropargs3, nfspath3, nfsstat3, sattr3, Nfs3Res};

use crate::client::{nfs_result, Client};
use crate::error::{Error, Result};

impl Client {
    /// The target of the symbolic link `path`, as stored (bytes, not
    /// necessarily UTF-8; relative targets are relative to the link's
    /// directory).
    pub fn readlink(&self, path: &str) -> Result<Vec<u8>> {
        if let Some(s) = &self.inner.v4 {
            return crate::v4::links::readlink(s, &self.inner, path);
        }
        self.fresh(|| {
            let (handle, _) = self.lookup(path)?;
            let args = nfs3::READLINK3args {
                symlink: handle.v3("READLINK", path)?,
            };
            match self.inner.call::<nfs3::Readlink>(&args, path)?.0 {
                Nfs3Res::Ok(ok) => Ok(ok.data.0),
                Nfs3Res::Fail(status, _) => Err(Error::Nfs {
                    op: "READLINK",
                    path: path.to_string(),
                    status,
                }),
            }
        })
    }

    /// Creates the symbolic link `path` pointing at `target` (stored by
    /// the server as is, never followed by directnfs; at most 4095 bytes,
    /// Linux's bound, no NUL). Fails with EEXIST if `path` exists.
    ///
    /// A SYMLINK is not idempotent. If its reply is lost and the client
    /// sends it again on another connection (where the server's duplicate
    /// request cache does not know it), the second copy finds the link the
    /// first one made: a re-sent SYMLINK that finds a link with exactly
    /// its own target reports success. A caller that must know the link is
    /// its own (a lock) puts content only it writes into the target.
    pub fn symlink(&self, target: &[u8], path: &str) -> Result<()> {
        if let Some(s) = &self.inner.v4 {
            return crate::v4::links::symlink(s, &self.inner, target, path);
        }
        if target.len() >= nfspath3::MAX || target.contains(&0) {
            return Err(Error::InvalidInput(format!(
                "SYMLINK {path}: the target must be at most {} bytes without NUL ({} given)",
                nfspath3::MAX - 1,
                target.len()
            )));
        }
        self.fresh(|| {
            let (dir, name) = self.inner.parent_and_name(path)?;
            let args = nfs3::SYMLINK3args {
                where_: diropargs3 { dir, name },
                symlink: nfs3::symlinkdata3 {
                    symlink_attributes: sattr3 {
                        mode: Some(0o777),
                        ..Default::default()
                    },
                    symlink_data: nfspath3(target.to_vec()),
                },
            };
            let (res, attempts) = self.inner.call::<nfs3::Symlink>(&args, path)?;
            // A handle cached for an earlier object of this name is stale now.
            self.inner.forget(path);
            let status = res.status();
            if status == nfsstat3::NFS3ERR_EXIST
                && attempts > 1
                && self.readlink(path).is_ok_and(|t| t == target)
            {
                return Ok(());
            }
            nfs_result(status, "SYMLINK", path)
        })
    }

    /// Makes `new` a second name of the file `existing` (both relative to
    /// the export root). A re-sent LINK that finds `new` naming the same
    /// file reports success.
    pub fn link(&self, existing: &str, new: &str) -> Result<()> {
        if let Some(s) = &self.inner.v4 {
            return crate::v4::links::link(s, &self.inner, existing, new);
        }
        self.fresh(|| {
            let (file, attrs) = self.lookup(existing)?;
            let (dir, name) = self.inner.parent_and_name(new)?;
            let args = nfs3::LINK3args {
                file: file.v3("LINK", existing)?,
                link: diropargs3 { dir, name },
            };
            let (res, attempts) = self.inner.call::<nfs3::Link>(&args, new)?;
            let status = res.status();
            if status == nfsstat3::NFS3ERR_EXIST
                && attempts > 1
                && self
                    .lookup(new)
                    .is_ok_and(|(_, m)| m.fileid == attrs.fileid)
            {
                return Ok(());
            }
            self.inner.forget(new);
            nfs_result(status, "LINK", new)
        })
    }
}
