//! The calls that give and take a [`Handle`]: a LOOKUP that always asks
//! the server and returns the attributes with the handle, and opening a
//! file by a handle kept from earlier (after `fork`, or by another open of
//! the same file). Nothing names this module: it only adds methods to
//! `Client` and `File`.

use directnfs_wire::nfs3::{self, diropargs3, Nfs3Res};

use crate::client::Client;
use crate::error::{Error, Result};
use crate::file::File;
use crate::handle::Handle;
use crate::metadata::Metadata;

impl Client {
    /// The current handle and attributes of `path` (relative to the export
    /// root). The last component is always looked up on the server (the
    /// directories above it come from the handle cache), so a file another
    /// process replaced by `rename` is seen at once. A symbolic link is not
    /// followed: its own handle and attributes are returned.
    pub fn lookup(&self, path: &str) -> Result<(Handle, Metadata)> {
        if let Some(s) = &self.inner.v4 {
            return crate::v4::links::lookup(s, &self.inner, path).map(|(fh, m)| (Handle(fh), m));
        }
        self.fresh(|| self.lookup_once(path))
    }

    fn lookup_once(&self, path: &str) -> Result<(Handle, Metadata)> {
        let inner = &self.inner;
        if crate::remote::components(path)?.is_empty() {
            let attrs = inner.getattr(&inner.root, path)?;
            return Ok((Handle::from_v3(&inner.root), Metadata::from_fattr(&attrs)));
        }
        let (dir, name) = inner.parent_and_name(path)?;
        let args = nfs3::LOOKUP3args {
            what: diropargs3 { dir, name },
        };
        match inner.call::<nfs3::Lookup>(&args, path)?.0 {
            Nfs3Res::Ok(ok) => {
                inner.remember(path, &ok.object);
                let attrs = match ok.obj_attributes {
                    Some(a) => a,
                    None => inner.getattr(&ok.object, path)?,
                };
                Ok((Handle::from_v3(&ok.object), Metadata::from_fattr(&attrs)))
            }
            Nfs3Res::Fail(status, _) => {
                inner.forget(path);
                Err(Error::Nfs {
                    op: "LOOKUP",
                    path: path.to_string(),
                    status,
                })
            }
        }
    }

    /// Opens the file a handle names, without any call to the server
    /// on NFSv3 (on NFSv4.1: one OPEN by the handle, whose refusal is
    /// logged and makes the file's I/O fail); `path` is only used in
    /// messages and statistics. A handle of a file removed since fails
    /// its first I/O with `ESTALE`.
    pub fn open_handle(&self, handle: &Handle, path: &str) -> File {
        File::from_public_handle(self, handle, path)
    }

    /// Attributes of the file a handle names (GETATTR).
    pub fn metadata_of(&self, handle: &Handle, path: &str) -> Result<Metadata> {
        if let Some(s) = &self.inner.v4 {
            return crate::v4::links::metadata_of(s, &self.inner, &handle.0, path);
        }
        self.inner
            .getattr(&handle.v3("GETATTR", path)?, path)
            .map(|a| Metadata::from_fattr(&a))
    }
}

impl File {
    /// The file's handle (to open it again with [`Client::open_handle`]).
    pub fn handle(&self) -> Handle {
        if let Some(open) = &self.shared.v4 {
            return Handle(open.fh);
        }
        Handle::from_v3(&self.shared.fh)
    }
}
