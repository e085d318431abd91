//! Namespace operations on paths below the export: attributes, remove,
//! rmdir, mkdir, rename, directory listing. Each runs again once with
//! fresh LOOKUPs when a cached handle turned stale (`Client::fresh`), and
//! hands its work to `crate::v4` on an NFSv4.1 mount.

use directnfs_wire::nfs3::{self, diropargs3, Nfs3Res};

use super::{nfs_result, Client};
use crate::error::{Error, Result};
use crate::metadata::MAX_DIR_LISTING;
use crate::metadata::{DirEntry, Metadata};

impl Client {
    /// Attributes of `path` (relative to the export root).
    pub fn metadata(&self, path: &str) -> Result<Metadata> {
        if let Some(s) = &self.inner.v4 {
            return crate::v4::ops::metadata(s, &self.inner, path);
        }
        self.fresh(|| self.metadata_once(path))
    }

    fn metadata_once(&self, path: &str) -> Result<Metadata> {
        let fh = self.inner.lookup_path(path)?;
        self.inner
            .getattr(&fh, path)
            .map(|a| Metadata::from_fattr(&a))
    }

    /// Removes a file.
    /// Write-behind writes in flight (any open file of this client) are
    /// waited for first.
    pub fn remove(&self, path: &str) -> Result<()> {
        self.inner.write_behind.settle_all();
        if let Some(s) = &self.inner.v4 {
            return crate::v4::ops::remove(s, &self.inner, path, false);
        }
        self.fresh(|| self.remove_once(path))
    }

    fn remove_once(&self, path: &str) -> Result<()> {
        let (dir, name) = self.inner.parent_and_name(path)?;
        let args = nfs3::REMOVE3args {
            object: diropargs3 { dir, name },
        };
        let (res, attempts) = self.inner.call::<nfs3::Remove>(&args, path)?;
        self.inner.forget(path);
        self.inner.check_retried(
            nfs3::NFSPROC3_REMOVE,
            attempts,
            res.status(),
            "REMOVE",
            path,
        )
    }

    /// Removes an empty directory.
    pub fn rmdir(&self, path: &str) -> Result<()> {
        if let Some(s) = &self.inner.v4 {
            return crate::v4::ops::remove(s, &self.inner, path, true);
        }
        self.fresh(|| self.rmdir_once(path))
    }

    fn rmdir_once(&self, path: &str) -> Result<()> {
        let (dir, name) = self.inner.parent_and_name(path)?;
        let args = nfs3::RMDIR3args {
            object: diropargs3 { dir, name },
        };
        let (res, attempts) = self.inner.call::<nfs3::Rmdir>(&args, path)?;
        self.inner.forget(path);
        self.inner
            .check_retried(nfs3::NFSPROC3_RMDIR, attempts, res.status(), "RMDIR", path)
    }

    /// Creates a directory (mode 0755; [`Client::mkdir_mode`] takes one).
    pub fn mkdir(&self, path: &str) -> Result<()> {
        self.mkdir_mode(path, 0o755)
    }

    /// Renames `from` to `to` (both relative to the export root), replacing
    /// `to` if it exists, atomically on the server. Write-behind writes in
    /// flight (any open file of this client) are waited for first.
    pub fn rename(&self, from: &str, to: &str) -> Result<()> {
        self.inner.write_behind.settle_all();
        if let Some(s) = &self.inner.v4 {
            return crate::v4::ops::rename(s, &self.inner, from, to);
        }
        self.fresh(|| self.rename_once(from, to))
    }

    fn rename_once(&self, from: &str, to: &str) -> Result<()> {
        let (fdir, fname) = self.inner.parent_and_name(from)?;
        let (tdir, tname) = self.inner.parent_and_name(to)?;
        let args = nfs3::RENAME3args {
            from: diropargs3 {
                dir: fdir,
                name: fname,
            },
            to: diropargs3 {
                dir: tdir,
                name: tname,
            },
        };
        let (res, attempts) = self.inner.call::<nfs3::Rename>(&args, from)?;
        self.inner.forget(from);
        self.inner.forget(to);
        self.inner.check_retried(
            nfs3::NFSPROC3_RENAME,
            attempts,
            res.status(),
            "RENAME",
            from,
        )
    }

    /// Lists a directory (without `.` and `..`), with attributes when the
    /// server provides them.
    pub fn read_dir(&self, path: &str) -> Result<Vec<DirEntry>> {
        if let Some(s) = &self.inner.v4 {
            return crate::v4::ops::read_dir(s, &self.inner, path);
        }
        self.fresh(|| self.read_dir_once(path))
    }

    fn read_dir_once(&self, path: &str) -> Result<Vec<DirEntry>> {
        let dir = self.inner.lookup_path(path)?;
        let mut out = Vec::new();
        let mut cookie = 0u64;
        let mut cookieverf = nfs3::cookieverf3::default();
        loop {
            let args = nfs3::READDIRPLUS3args {
                dir,
                cookie,
                cookieverf,
                dircount: 32 * 1024,
                maxcount: 256 * 1024,
            };
            let (res, _) = self.inner.call::<nfs3::Readdirplus>(&args, path)?;
            let ok = match res {
                Nfs3Res::Ok(ok) => ok,
                Nfs3Res::Fail(status, _) => {
                    return nfs_result(status, "READDIRPLUS", path).map(|_| Vec::new())
                }
            };
            cookieverf = ok.cookieverf;
            let n = ok.reply.entries.len();
            let previous = cookie;
            for e in ok.reply.entries {
                cookie = e.cookie;
                let name = String::from_utf8_lossy(e.name.as_bytes()).into_owned();
                if name == "." || name == ".." {
                    continue;
                }
                out.push(DirEntry {
                    name,
                    fileid: e.fileid,
                    metadata: e.name_attributes.as_ref().map(Metadata::from_fattr),
                });
            }
            if ok.reply.eof || n == 0 {
                return Ok(out);
            }
            // A server whose cookies do not advance, or whose directory
            // never ends, must not hold us (or our memory) forever.
            let bad = if cookie == previous {
                Some("the directory cookie did not advance")
            } else if out.len() > MAX_DIR_LISTING {
                Some("the directory has more entries than a listing may hold")
            } else {
                None
            };
            if let Some(detail) = bad {
                return Err(Error::Protocol {
                    op: "READDIRPLUS",
                    path: path.to_string(),
                    detail: format!("{detail} ({} entries so far)", out.len()),
                });
            }
        }
    }
}
