//! The calls behind `attrs.rs`'s values: SETATTR of mode, owner and times
//! (RFC 1813 §3.3.2), ACCESS (§3.3.4), FSSTAT (§3.3.18), and MKDIR with a
//! mode (§3.3.9), as methods of `Client` and `File`. Nothing names this
//! module: it only adds methods.

use std::time::UNIX_EPOCH;

use directnfs_engine::idempotency::{classify_retried, RetriedStatus};
use directnfs_wire::nfs3::{self, diropargs3, nfstime3, sattr3, Nfs3Res, SetTime};

use crate::attrs::{FsStat, SetAttrs, SetTimeTo};
use crate::client::{nfs_result, Client};
use crate::error::{Error, Result};
use crate::file::File;

impl Client {
    /// Changes attributes of `path` (relative to the export root); a
    /// symbolic link's own attributes when `path` names one.
    pub fn set_attrs(&self, path: &str, attrs: SetAttrs) -> Result<()> {
        if let Some(s) = &self.inner.v4 {
            return crate::v4::attrs::set_attrs(s, &self.inner, path, &attrs);
        }
        let sattr = to_sattr3(&attrs, path)?;
        self.fresh(|| {
            let (handle, _) = self.lookup(path)?;
            self.setattr(&handle.v3("SETATTR", path)?, path, sattr)
        })
    }

    /// Which of the `ACCESS3_*` bits in `mask` the server grants this
    /// client's credential on `path` (ACCESS: the server decides, with its
    /// own view of owners, groups and ACLs).
    pub fn access(&self, path: &str, mask: u32) -> Result<u32> {
        if let Some(s) = &self.inner.v4 {
            return crate::v4::attrs::access(s, &self.inner, path, mask);
        }
        self.fresh(|| {
            let (handle, _) = self.lookup(path)?;
            let args = nfs3::ACCESS3args {
                object: handle.v3("ACCESS", path)?,
                access: mask,
            };
            match self.inner.call::<nfs3::Access>(&args, path)?.0 {
                Nfs3Res::Ok(ok) => Ok(ok.access & mask),
                Nfs3Res::Fail(status, _) => Err(Error::Nfs {
                    op: "ACCESS",
                    path: path.to_string(),
                    status,
                }),
            }
        })
    }

    /// Space and file slots of the export's file system (FSSTAT, RFC 1813
    /// §3.3.18).
    pub fn fsstat(&self) -> Result<FsStat> {
        if let Some(s) = &self.inner.v4 {
            return crate::v4::attrs::fsstat(s, &self.inner);
        }
        let args = nfs3::FSSTAT3args {
            fsroot: self.inner.root,
        };
        match self.inner.call::<nfs3::Fsstat>(&args, "/")?.0 {
            Nfs3Res::Ok(ok) => Ok(FsStat {
                total_bytes: ok.tbytes,
                free_bytes: ok.fbytes,
                avail_bytes: ok.abytes,
                total_files: ok.tfiles,
                free_files: ok.ffiles,
                avail_files: ok.afiles,
            }),
            Nfs3Res::Fail(status, _) => Err(Error::Nfs {
                op: "FSSTAT",
                path: "/".to_string(),
                status,
            }),
        }
    }

    /// Creates a directory with permission bits `mode` (the caller applies
    /// its umask first). A re-sent MKDIR that finds a directory there
    /// reports success, as [`Client::mkdir`] does.
    pub fn mkdir_mode(&self, path: &str, mode: u32) -> Result<()> {
        if let Some(s) = &self.inner.v4 {
            return crate::v4::ops::mkdir(s, &self.inner, path, mode);
        }
        self.fresh(|| {
            let (dir, name) = self.inner.parent_and_name(path)?;
            let args = nfs3::MKDIR3args {
                where_: diropargs3 { dir, name },
                attributes: sattr3 {
                    mode: Some(mode & 0o7777),
                    ..Default::default()
                },
            };
            let (res, attempts) = self.inner.call::<nfs3::Mkdir>(&args, path)?;
            match classify_retried(nfs3::NFSPROC3_MKDIR, attempts, res.status()) {
                RetriedStatus::ConfirmByLookup if self.metadata(path).is_ok_and(|m| m.is_dir()) => {
                    Ok(())
                }
                _ => nfs_result(res.status(), "MKDIR", path),
            }
        })
    }
}

impl File {
    /// Changes attributes of this file (SETATTR on its handle).
    pub fn set_attrs(&self, attrs: SetAttrs) -> Result<()> {
        self.set_attrs_op(&attrs)
    }

    /// NFSv3's SETATTR on the file's handle (`rpcops.rs` `set_attrs_op`).
    pub(crate) fn set_attrs_v3(&self, attrs: &SetAttrs) -> Result<()> {
        let sattr = to_sattr3(attrs, self.path())?;
        self.client().setattr(&self.shared.fh, self.path(), sattr)
    }
}

fn to_sattr3(a: &SetAttrs, path: &str) -> Result<sattr3> {
    Ok(sattr3 {
        mode: a.mode.map(|m| m & 0o7777),
        uid: a.uid,
        gid: a.gid,
        size: a.size,
        atime: set_time(a.atime, path)?,
        mtime: set_time(a.mtime, path)?,
    })
}

fn set_time(t: SetTimeTo, path: &str) -> Result<SetTime> {
    Ok(match t {
        SetTimeTo::Keep => SetTime::DontChange,
        SetTimeTo::ServerNow => SetTime::SetToServerTime,
        SetTimeTo::At(at) => {
            let d = at.duration_since(UNIX_EPOCH).ok();
            let Some(seconds) = d.and_then(|d| u32::try_from(d.as_secs()).ok()) else {
                return Err(Error::InvalidInput(format!(
                    "SETATTR {path}: {at:?} is outside the NFSv3 time range (1970..2106)"
                )));
            };
            SetTime::SetToClientTime(nfstime3 {
                seconds,
                nseconds: d.map_or(0, |d| d.subsec_nanos()),
            })
        }
    })
}
