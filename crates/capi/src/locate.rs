//! From a name a user gives (an `nfs://` URL, or a path under a dnfstab
//! `mount:` prefix) to the [`Target`] to mount and the path inside it.
//!
//! Shared by the C library and the SQLite VFS (`#[path]`-included there),
//! because the `directnfs` crate has no public "target for a mount: path"
//! helper yet; it belongs there (next to `Target::from_url`), and this file
//! can go once it exists.

use std::net::IpAddr;
use std::path::Path;

use dnfs::config::{DnfsTab, NfsUrl};
use dnfs::{Client, Error, PathSpec, Target};

/// What a name resolved to.
#[derive(Debug, Clone)]
pub struct Located {
    /// What to mount.
    pub target: Target,
    /// The file's path inside the export (`/` separated, absolute).
    pub rest: String,
    /// Identifies the server, export and options: names with equal keys can
    /// share one mounted client.
    pub key: String,
}

/// Loads the dnfstab: `explicit` if given (must exist), else the default
/// search order. `Ok(None)` when there is none.
pub fn load_config(explicit: Option<&Path>) -> Result<Option<DnfsTab>, Error> {
    dnfs::config::find_config(explicit).map_err(|e| Error::Config(e.to_string()))
}

/// The target serving `path` (absolute, under a `mount:` prefix of `tab`).
pub fn locate_in_config(tab: &DnfsTab, path: &str) -> Result<Located, Error> {
    let r = tab.resolve(path).ok_or_else(|| {
        Error::Config(format!(
            "{path}: not under any mount: prefix of {}",
            tab.source.display()
        ))
    })?;
    let mut paths = Vec::with_capacity(r.server.paths.len().max(1));
    for p in &r.server.paths {
        let local = match &p.local {
            Some(l) => Some(l.parse::<IpAddr>().map_err(|e| {
                Error::Config(format!(
                    "{}:{}: local: {l:?} is not an IP address: {e}",
                    tab.source.display(),
                    p.line
                ))
            })?),
            None => None,
        };
        paths.push(PathSpec {
            local,
            server: p.server.clone(),
        });
    }
    if paths.is_empty() {
        paths.push(PathSpec {
            local: None,
            server: r.server.name.clone(),
        });
    }
    let export = r.export.export.clone();
    let full = join(&export, &r.rest);
    let key = format!(
        "config {} server {} export {}",
        tab.source.display(),
        r.server.name,
        export
    );
    Ok(Located {
        target: Target {
            name: r.server.name.clone(),
            paths,
            export: Some(export),
            path: full,
            options: r.server.options.clone(),
        },
        rest: r.rest,
        key,
    })
}

/// The target of an `nfs://` URL. The export is discovered at mount time,
/// so [`Located::rest`] is the whole URL path and `key` names only the
/// server and options (callers match exports after mounting).
pub fn locate_url(url: &str) -> Result<Located, Error> {
    let parsed = NfsUrl::parse(url).map_err(|e| Error::Config(e.to_string()))?;
    let target = Target::from_url(&parsed);
    let key = format!(
        "url {} port {:?} options {:?}",
        parsed.host, parsed.port, parsed.options
    );
    Ok(Located {
        rest: parsed.path.clone(),
        target,
        key,
    })
}

/// `base` + `/` + `rest` with exactly one slash between them.
pub fn join(base: &str, rest: &str) -> String {
    let base = base.trim_end_matches('/');
    let rest = rest.trim_start_matches('/');
    if rest.is_empty() {
        if base.is_empty() {
            "/".to_string()
        } else {
            base.to_string()
        }
    } else {
        format!("{base}/{rest}")
    }
}

/// A path relative to a client: absolute paths start at the export root,
/// relative ones at `target` (the client's target directory).
pub fn relative_to(target: &str, path: &str) -> String {
    if path.starts_with('/') {
        path.to_string()
    } else {
        join(if target.is_empty() { "/" } else { target }, path)
    }
}

/// Runs a name-based operation; if it fails with ESTALE, drops the
/// client's cached handle of `path` and tries once more.
///
/// The directnfs client caches path -> handle (never data). When another
/// process or host removes and re-creates a file (a journal, a lock file),
/// a cached handle goes stale. The client has no public "forget" yet (it
/// should re-LOOKUP on NFS3ERR_STALE by itself), so we use the one public
/// call that drops cached handles of a path: a RENAME of the path onto
/// itself, which the server treats as a successful no-op (POSIX rename(2):
/// "if oldpath and newpath are existing hard links referring to the same
/// file, rename() does nothing") or fails with ENOENT — either way the
/// cache entry is gone.
pub fn fresh<T>(
    client: &Client,
    path: &str,
    mut op: impl FnMut() -> Result<T, Error>,
) -> Result<T, Error> {
    match op() {
        Err(e) if e.errno() == libc::ESTALE => {
            let _ = client.rename(path, path);
            op()
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_puts_one_slash_between() {
        assert_eq!(join("/vol/a", "/f"), "/vol/a/f");
        assert_eq!(join("/vol/a/", "f"), "/vol/a/f");
        assert_eq!(join("/", "/f"), "/f");
        assert_eq!(join("/vol", "/"), "/vol");
        assert_eq!(join("/", "/"), "/");
    }

    #[test]
    fn relative_paths_start_at_the_target() {
        assert_eq!(relative_to("/dir", "f.dat"), "/dir/f.dat");
        assert_eq!(relative_to("/dir", "/f.dat"), "/f.dat");
        assert_eq!(relative_to("/", "f.dat"), "/f.dat");
    }

    #[test]
    fn mount_paths_resolve_to_the_server_block() {
        let tab = dnfs::config::parse_str(
            "server: filer1\nlocal: 10.0.0.1\npath: 10.0.0.2\nexport: /vol/ora mount: /db/ora\nport: 2049\nmount_port: 20048\n",
            Path::new("dnfstab"),
        )
        .unwrap();
        let l = locate_in_config(&tab, "/db/ora/sub/users.dbf").unwrap();
        assert_eq!(l.target.export.as_deref(), Some("/vol/ora"));
        assert_eq!(l.target.path, "/vol/ora/sub/users.dbf");
        assert_eq!(l.rest, "/sub/users.dbf");
        assert_eq!(l.target.paths.len(), 1);
        assert_eq!(l.target.paths[0].server, "10.0.0.2");
        assert!(locate_in_config(&tab, "/db/other").is_err());
    }
}
