//! From a name a user gives to what it names, in one place for every front
//! end (`dnfs`, the C library, the SQLite VFS, the interception library,
//! the benchmark engines).
//!
//! A name is an `nfs://` URL ([`Located::from_url`]) or a local path under
//! a dnfstab `mount:` prefix ([`DnfsTab::locate`]); either gives the
//! [`Target`] to mount and the path inside the export. Paths are handled
//! lexically, by the rules of `paths.rs` ([`join`] builds the path inside
//! the export).

use std::net::IpAddr;

use super::dnfstab::{ConfigError, DnfsTab, ServerEntry};
use super::paths::join;
use super::target::{PathSpec, Target};
use super::url::NfsUrl;

/// What a name resolved to.
#[derive(Debug, Clone)]
pub struct Located {
    /// What to mount.
    pub target: Target,
    /// The file's path: for a dnfstab name, inside the export (`/` for the
    /// export's root, else `/a/b`); for a URL, the whole URL path (the
    /// export is found at mount time).
    pub rest: String,
    /// Identifies the server, export and options: names with equal keys
    /// can share one mounted client. A URL's key names only the server and
    /// options (callers match exports after mounting).
    pub key: String,
}

impl Located {
    /// The target of a parsed `nfs://` URL.
    pub fn from_url(url: &NfsUrl) -> Self {
        Self {
            target: Target::from_url(url),
            rest: url.path.clone(),
            key: format!(
                "url {} port {:?} options {:?}",
                url.host, url.port, url.options
            ),
        }
    }
}

impl DnfsTab {
    /// The target serving `path`: absolute, under a `mount:` prefix
    /// ([`DnfsTab::resolve`] picks the longest; `//`, `.` and `..` are
    /// folded first). `Ok(None)` when no prefix matches (a local path).
    /// The target has every `path:` of the server block, with the
    /// `local:` address parsed, the export and the block's options.
    ///
    /// # Errors
    /// [`ConfigError::LocalAddress`] for a `local:` address that is not an
    /// IP address (`crate::Error::Config` once converted).
    pub fn locate(&self, path: &str) -> Result<Option<Located>, ConfigError> {
        let Some(r) = self.resolve(path) else {
            return Ok(None);
        };
        let export = r.export.export.clone();
        let key = format!(
            "config {} server {} export {}",
            self.source.display(),
            r.server.name,
            export
        );
        Ok(Some(Located {
            target: Target {
                name: r.server.name.clone(),
                paths: self.path_specs(r.server)?,
                path: join(&export, &r.rest),
                export: Some(export),
                options: r.server.options.clone(),
            },
            rest: r.rest,
            key,
        }))
    }

    /// The network paths of `server` (a block of this file), with their
    /// `local:` addresses parsed.
    ///
    /// # Errors
    /// [`ConfigError::LocalAddress`] for a `local:` address that is not an
    /// IP address (`crate::Error::Config` once converted).
    pub fn path_specs(&self, server: &ServerEntry) -> Result<Vec<PathSpec>, ConfigError> {
        server
            .paths
            .iter()
            .map(|p| {
                let local = match &p.local {
                    None => None,
                    Some(l) => {
                        Some(l.parse::<IpAddr>().map_err(|_| ConfigError::LocalAddress {
                            file: self.source.clone(),
                            line: p.line,
                            address: l.clone(),
                        })?)
                    }
                };
                Ok(PathSpec {
                    local,
                    server: p.server.clone(),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse_str;
    use std::path::Path;

    fn tab(text: &str) -> DnfsTab {
        match parse_str(text, Path::new("dnfstab")) {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        }
    }

    const ORA: &str = "server: filer1\nlocal: 10.0.0.1\npath: 10.0.0.2\n\
                       export: /vol/ora mount: /db/ora\nport: 2049\nmount_port: 20048\n";

    #[test]
    fn mount_paths_resolve_to_the_server_block() {
        let t = tab(ORA);
        let Ok(Some(l)) = t.locate("/db/ora/sub/users.dbf") else {
            panic!("not located");
        };
        assert_eq!(l.target.name, "filer1");
        assert_eq!(l.target.export.as_deref(), Some("/vol/ora"));
        assert_eq!(l.target.path, "/vol/ora/sub/users.dbf");
        assert_eq!(l.rest, "/sub/users.dbf");
        assert_eq!(
            l.target.paths,
            vec![PathSpec {
                local: Some(IpAddr::from([10, 0, 0, 1])),
                server: "10.0.0.2".into()
            }]
        );
        assert_eq!(l.target.options.nfs_port, Some(2049));
        assert_eq!(l.target.options.mount_port, Some(20048));
        assert_eq!(l.key, "config dnfstab server filer1 export /vol/ora");
        assert!(matches!(t.locate("/db/other"), Ok(None)));
        assert!(matches!(t.locate("/elsewhere/f"), Ok(None)));
    }

    #[test]
    fn the_export_root_and_folded_names_are_located() {
        let t = tab(ORA);
        let Ok(Some(root)) = t.locate("/db/ora") else {
            panic!("root not located");
        };
        assert_eq!(root.rest, "/");
        assert_eq!(root.target.path, "/vol/ora");
        let Ok(Some(l)) = t.locate("/db//x/../ora/./a/b/../f") else {
            panic!("not located");
        };
        assert_eq!(l.rest, "/a/f");
        assert_eq!(l.target.path, "/vol/ora/a/f");
        // `..` above a prefix leaves it.
        assert!(matches!(t.locate("/db/ora/../f"), Ok(None)));
        // Relative names are never under a prefix.
        assert!(matches!(t.locate("db/ora/f"), Ok(None)));
    }

    #[test]
    fn every_path_of_a_multipath_block_is_in_the_target() {
        let t = tab(
            "server: f\nlocal: 10.231.1.1\npath: 10.231.1.2\npath: 10.231.2.2\n\
             export: / mount: /db\nconnections: 2\n",
        );
        let Ok(Some(l)) = t.locate("/db/x") else {
            panic!("not located");
        };
        let servers: Vec<_> = l.target.paths.iter().map(|p| p.server.as_str()).collect();
        assert_eq!(servers, ["10.231.1.2", "10.231.2.2"]);
        assert_eq!(l.target.paths[0].local, Some(IpAddr::from([10, 231, 1, 1])));
        assert_eq!(l.target.paths[1].local, None);
        assert_eq!(l.target.path, "/x");
        assert_eq!(l.target.options.connections, 2);
    }

    #[test]
    fn a_bad_local_address_names_file_and_line() {
        let t = tab("server: f\nlocal: eth0\npath: 10.0.0.2\nexport: /v mount: /db\n");
        let Err(e) = t.locate("/db/x").map_err(crate::Error::from) else {
            panic!("accepted a bad local address");
        };
        assert_eq!(
            e.to_string(),
            "dnfstab:3: local address \"eth0\" is not an IP address"
        );
        assert_eq!(e.errno(), libc::EINVAL);
        assert!(matches!(
            e,
            crate::Error::Config(ConfigError::LocalAddress { line: 3, ref address, .. }) if address == "eth0"
        ));
    }

    #[test]
    fn urls_keep_their_whole_path_and_key_on_server_and_options() {
        let Ok(u) = NfsUrl::parse("nfs://h:2050/e/dir/db?mountport=20048") else {
            panic!("URL rejected");
        };
        let l = Located::from_url(&u);
        assert_eq!(l.rest, "/e/dir/db");
        assert_eq!(l.target.path, "/e/dir/db");
        assert_eq!(l.target.export, None);
        assert_eq!(l.target.options.nfs_port, Some(2050));
        assert_eq!(l.target.paths.len(), 1);
        assert_eq!(l.target.paths[0].server, "h");
        assert!(l.key.starts_with("url h port Some(2050) options "));
        let Ok(same) = NfsUrl::parse("nfs://h:2050/other?mountport=20048") else {
            panic!("URL rejected");
        };
        assert_eq!(Located::from_url(&same).key, l.key);
        let Ok(root) = NfsUrl::parse("nfs://h//f") else {
            panic!("URL rejected");
        };
        assert_eq!(Located::from_url(&root).target.export.as_deref(), Some("/"));
    }
}
