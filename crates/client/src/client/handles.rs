//! The path walk and the handle cache: a path below the export becomes a
//! file handle by one LOOKUP per component not yet cached (RFC 1813
//! §3.3.3). Only handles are cached, never data or attributes.

use directnfs_wire::nfs3::{self, diropargs3, filename3, nfs_fh3, Nfs3Res};

use super::Inner;
use crate::error::{Error, Result};
use crate::remote::components;

/// Most handles cached (path -> handle) before the cache is cleared.
const MAX_CACHED_HANDLES: usize = 65536;

impl Inner {
    /// Resolves a path below the export to a handle, one LOOKUP per
    /// component not yet cached.
    pub(crate) fn lookup_path(&self, path: &str) -> Result<nfs_fh3> {
        self.lookup_path_sized(path).map(|(fh, _)| fh)
    }

    /// [`lookup_path`](Self::lookup_path), with the file's size when the
    /// last component was looked up now (not taken from the handle cache)
    /// and the server sent its attributes.
    pub(crate) fn lookup_path_sized(&self, path: &str) -> Result<(nfs_fh3, Option<u64>)> {
        let comps = components(path)?;
        let key = format!("/{}", comps.join("/"));
        if let Some(fh) = self.handles.read().ok().and_then(|h| h.get(&key).cloned()) {
            return Ok((fh, None));
        }
        let mut fh = self.root;
        let mut size = None;
        let mut sofar = String::new();
        for c in comps {
            sofar.push('/');
            sofar.push_str(c);
            if let Some(cached) = self
                .handles
                .read()
                .ok()
                .and_then(|h| h.get(&sofar).cloned())
            {
                fh = cached;
                size = None;
                continue;
            }
            (fh, size) = self.lookup_one(&fh, c, &sofar)?;
            self.cache_handle(sofar.clone(), fh);
        }
        Ok((fh, size))
    }

    fn lookup_one(&self, dir: &nfs_fh3, name: &str, full: &str) -> Result<(nfs_fh3, Option<u64>)> {
        let args = nfs3::LOOKUP3args {
            what: diropargs3 {
                dir: *dir,
                name: filename3(name.as_bytes().to_vec()),
            },
        };
        match self.call::<nfs3::Lookup>(&args, full)?.0 {
            Nfs3Res::Ok(ok) => Ok((ok.object, ok.obj_attributes.map(|a| a.size))),
            Nfs3Res::Fail(status, _) => Err(Error::Nfs {
                op: "LOOKUP",
                path: full.to_string(),
                status,
            }),
        }
    }

    /// The handle of the parent directory and the last component's name.
    pub(crate) fn parent_and_name(&self, path: &str) -> Result<(nfs_fh3, filename3)> {
        let comps = components(path)?;
        let Some((last, parent)) = comps.split_last() else {
            return Err(Error::InvalidInput(format!(
                "{path:?} names the export root"
            )));
        };
        let dir = self.lookup_path(&parent.join("/"))?;
        Ok((dir, filename3(last.as_bytes().to_vec())))
    }

    /// Drops cached handles of `path` and everything below it.
    pub(crate) fn forget(&self, path: &str) {
        let Ok(comps) = components(path) else {
            return;
        };
        let key = format!("/{}", comps.join("/"));
        let prefix = format!("{key}/");
        if let Ok(mut h) = self.handles.write() {
            h.retain(|k, _| k != &key && !k.starts_with(&prefix));
        }
    }

    /// Drops every cached handle.
    pub(crate) fn forget_all(&self) {
        if let Ok(mut h) = self.handles.write() {
            h.clear();
        }
    }

    pub(crate) fn remember(&self, path: &str, fh: &nfs_fh3) {
        if let Ok(comps) = components(path) {
            self.cache_handle(format!("/{}", comps.join("/")), *fh);
        }
    }

    /// Caches a handle. Bounded: a runaway tree walk (or a program that
    /// only ever creates files) must not grow the cache forever, so it is
    /// cleared once it holds more than [`MAX_CACHED_HANDLES`].
    fn cache_handle(&self, key: String, fh: nfs_fh3) {
        if let Ok(mut h) = self.handles.write() {
            if h.len() > MAX_CACHED_HANDLES {
                h.clear();
            }
            h.insert(key, fh);
        }
    }
}
