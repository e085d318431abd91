//! Symbolic links: SYMLINK (RFC 1813 §3.3.10) and READLINK (§3.3.5).
//!
//! A SYMLINK creates a name together with its content in one request, so
//! nobody can see the name without the content. The SQLite VFS builds its
//! cross-process lock on that (a lock file whose owner record exists from
//! the instant the lock does).

use directnfs_wire::nfs3::{self, diropargs3, nfspath3, Nfs3Res};

use crate::client::{nfs_result, Client};
use crate::error::{Error, Result};

impl Client {
    /// Creates the symbolic link `path` with content `target` (stored by
    /// the server as is, never followed by directnfs; at most 1024 bytes,
    /// no NUL). Fails with EEXIST if `path` exists.
    ///
    /// A SYMLINK is not idempotent. If its reply is lost and the client
    /// sends it again on another connection (where the server's duplicate
    /// request cache does not know it), the second copy finds the link the
    /// first one made and fails with EEXIST. The client cannot tell that
    /// link from one someone else made, so it reports EEXIST as it is: a
    /// caller that must know reads the link back ([`Client::read_link`])
    /// and compares it with content only it writes.
    pub fn symlink(&self, target: &str, path: &str) -> Result<()> {
        if target.len() > nfspath3::MAX || target.contains('\0') {
            return Err(Error::InvalidInput(format!(
                "symbolic link content for {path} must be at most {} bytes without NUL ({} given)",
                nfspath3::MAX,
                target.len()
            )));
        }
        self.fresh(|| self.symlink_once(target, path))
    }

    fn symlink_once(&self, target: &str, path: &str) -> Result<()> {
        let (dir, name) = self.inner.parent_and_name(path)?;
        let args = nfs3::SYMLINK3args {
            where_: diropargs3 { dir, name },
            symlink: nfs3::symlinkdata3 {
                symlink_attributes: nfs3::sattr3 {
                    mode: Some(0o777),
                    ..Default::default()
                },
                symlink_data: nfspath3::from(target),
            },
        };
        let (res, _) = self.inner.call::<nfs3::Symlink>(&args, path)?;
        // A handle cached for an earlier object of this name is stale now.
        self.inner.forget(path);
        nfs_result(res.status(), "SYMLINK", path)
    }

    /// The content of the symbolic link `path` (bytes that are not UTF-8
    /// are replaced by U+FFFD). EINVAL if `path` is not a symbolic link.
    pub fn read_link(&self, path: &str) -> Result<String> {
        self.fresh(|| self.read_link_once(path))
    }

    fn read_link_once(&self, path: &str) -> Result<String> {
        let symlink = self.inner.lookup_path(path)?;
        let args = nfs3::READLINK3args { symlink };
        match self.inner.call::<nfs3::Readlink>(&args, path)?.0 {
            Nfs3Res::Ok(ok) => Ok(String::from_utf8_lossy(ok.data.as_bytes()).into_owned()),
            Nfs3Res::Fail(status, _) => nfs_result(status, "READLINK", path).map(|_| String::new()),
        }
    }
}
