//! What a PATH argument names: a file on an NFS server (an `nfs://` URL, or
//! a path under a `mount:` prefix of the dnfstab) or a local file.
//!
//! Resolution has two steps so a command can adjust the mount before it
//! happens (`cp` mounts its destination with `stable=unstable`): [`Resolver::spec`]
//! turns the argument into a [`Spec`] (no network), and [`Spec::open`]
//! mounts it, giving a [`Location`].

use std::cell::{OnceCell, RefCell};
use std::path::{Path, PathBuf};

use directnfs::config::{absolute, find_config, split_by_export, DnfsTab, NfsUrl};
use directnfs::{Client, Target};

use crate::error::{CliError, Result};

/// A resolved and, for NFS, mounted PATH argument.
#[derive(Debug)]
pub enum Location {
    /// A file on a server.
    Nfs {
        /// The mounted export.
        client: Client,
        /// Path below the export root (`/` is the export itself).
        path: String,
    },
    /// A local file.
    Local(PathBuf),
}

/// A PATH argument before mounting.
#[derive(Debug, Clone)]
pub enum Spec {
    /// A file on a server.
    Nfs(Box<NfsSpec>),
    /// A local file.
    Local(PathBuf),
}

/// Where an NFS PATH lives, ready to mount.
#[derive(Debug, Clone)]
pub struct NfsSpec {
    /// The argument as the user wrote it (for messages).
    pub arg: String,
    /// Server paths, export (when the dnfstab names it), path and options.
    pub target: Target,
}

/// Turns PATH arguments into locations; loads the dnfstab at most once, and
/// only when an argument is not an `nfs://` URL.
#[derive(Debug)]
pub struct Resolver {
    config: Option<PathBuf>,
    verbose: bool,
    tab: OnceCell<Option<DnfsTab>>,
    /// Every client mounted, kept alive until the process exits: dropping a
    /// `Client` joins its maintenance thread, which can take up to 100 ms
    /// (its tick), a long time for a command that itself takes 10 ms.
    /// `main` exits without dropping the resolver.
    mounted: RefCell<Vec<Client>>,
}

impl Resolver {
    /// A resolver using `--config FILE` (or the default lookup order).
    pub fn new(config: Option<PathBuf>, verbose: bool) -> Self {
        Self {
            config,
            verbose,
            tab: OnceCell::new(),
            mounted: RefCell::new(Vec::new()),
        }
    }

    /// Classifies `arg` without touching the network.
    pub fn spec(&self, arg: &str) -> Result<Spec> {
        if arg.starts_with("nfs://") {
            let url = NfsUrl::parse(arg).map_err(|e| CliError::msg(e.to_string()))?;
            for key in &url.ignored {
                self.note(&format!(
                    "URL option \"{key}\" is accepted but has no effect"
                ));
            }
            return Ok(Spec::Nfs(Box::new(NfsSpec {
                arg: arg.to_string(),
                target: Target::from_url(&url),
            })));
        }
        let Some(tab) = self.tab()? else {
            return Ok(Spec::Local(PathBuf::from(arg)));
        };
        let absolute = absolute(Path::new(arg)).map_err(|e| CliError::io(Path::new("."), e))?;
        let Some(text) = absolute.to_str() else {
            return Ok(Spec::Local(PathBuf::from(arg)));
        };
        let Some(located) = tab.locate(text)? else {
            return Ok(Spec::Local(PathBuf::from(arg)));
        };
        let target = located.target;
        let (export, path) = (target.export.as_deref().unwrap_or("/"), &target.path);
        self.note(&format!(
            "{arg}: server {} ({}), export {export}, path {path} (from {})",
            target.name,
            target
                .paths
                .iter()
                .map(|p| p.server.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            tab.source.display()
        ));
        Ok(Spec::Nfs(Box::new(NfsSpec {
            arg: arg.to_string(),
            target,
        })))
    }

    /// Resolves and mounts `arg`.
    pub fn locate(&self, arg: &str) -> Result<Location> {
        self.spec(arg)?.open(self)
    }

    /// Resolves and mounts `arg`, which must be on NFS (`command` names the
    /// command for the error message).
    pub fn nfs(&self, arg: &str, command: &str) -> Result<(Client, String)> {
        match self.locate(arg)? {
            Location::Nfs { client, path } => Ok((client, path)),
            Location::Local(_) => Err(self.not_nfs(arg, command)),
        }
    }

    /// The error for a local path given where only NFS makes sense.
    pub fn not_nfs(&self, arg: &str, command: &str) -> CliError {
        let config = match self.tab.get() {
            Some(Some(tab)) => format!("a mount: prefix of {}", tab.source.display()),
            _ => "a mount: prefix of a dnfstab (none found)".to_string(),
        };
        CliError::msg(format!(
            "{command}: {arg}: not an NFS path (expected an nfs:// URL or a path under {config})"
        ))
    }

    /// Every client mounted so far (for `--stats`).
    pub fn mounted(&self) -> Vec<Client> {
        self.mounted.borrow().clone()
    }

    /// Prints a `-v` note on stderr.
    pub fn note(&self, msg: &str) {
        if self.verbose {
            eprintln!("dnfs: {msg}");
        }
    }

    fn tab(&self) -> Result<Option<&DnfsTab>> {
        if self.tab.get().is_none() {
            let tab = find_config(self.config.as_deref())?;
            if let Some(t) = &tab {
                for w in &t.warnings {
                    eprintln!("dnfs: warning: {w}");
                }
                for (line, key) in &t.ignored {
                    self.note(&format!(
                        "{}:{line}: \"{key}\" is accepted but has no effect",
                        t.source.display()
                    ));
                }
            }
            // Cannot be set in between: the resolver is not shared.
            let _ = self.tab.set(tab);
        }
        Ok(self.tab.get().and_then(Option::as_ref))
    }
}

impl Spec {
    /// Mounts an NFS spec; a local one is returned as is.
    pub fn open(self, resolver: &Resolver) -> Result<Location> {
        match self {
            Spec::Local(p) => Ok(Location::Local(p)),
            Spec::Nfs(n) => n.open(resolver),
        }
    }
}

impl NfsSpec {
    /// Mounts the export and returns the location of the path in it.
    pub fn open(&self, resolver: &Resolver) -> Result<Location> {
        let client = Client::mount(&self.target)?;
        resolver.mounted.borrow_mut().push(client.clone());
        let limits = client.limits();
        resolver.note(&format!(
            "{}: mounted {}:{} (rtmax {} wtmax {}, {} connection(s) per path, stable={})",
            self.arg,
            self.target.name,
            client.export(),
            limits.rtmax,
            limits.wtmax,
            client.options().connections,
            client.options().stable,
        ));
        let path = client.target_path().to_string();
        Ok(Location::Nfs { client, path })
    }

    /// Whether `other` reaches the same server the same way (same addresses
    /// and NFS port): a RENAME between them can work.
    pub fn same_server(&self, other: &NfsSpec) -> bool {
        let key = |t: &Target| {
            let mut servers: Vec<String> = t.paths.iter().map(|p| p.server.clone()).collect();
            servers.sort();
            (servers, t.options.nfs_port)
        };
        key(&self.target) == key(&other.target)
    }

    /// The path of this spec below `export`, if it lies in it.
    pub fn path_in_export(&self, export: &str) -> Option<String> {
        split_by_export(&self.target.path, export).map(str::to_string)
    }
}

/// True when the server said the path does not exist (NFS3ERR_NOENT).
pub fn is_not_found(e: &directnfs::Error) -> bool {
    e.kind() == std::io::ErrorKind::NotFound
}

/// `dir/name` for paths below an export.
pub fn nfs_join(dir: &str, name: &str) -> String {
    if dir.ends_with('/') {
        format!("{dir}{name}")
    } else {
        format!("{dir}/{name}")
    }
}

/// The last component of an NFS path (`None` for the export root).
pub fn nfs_file_name(path: &str) -> Option<&str> {
    path.rsplit('/').find(|c| !c.is_empty() && *c != ".")
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;

    use directnfs::PathSpec;

    use super::*;

    #[test]
    fn nfs_names_are_last_components() {
        assert_eq!(nfs_file_name("/a/b"), Some("b"));
        assert_eq!(nfs_file_name("/a/b/"), Some("b"));
        assert_eq!(nfs_file_name("/"), None);
        assert_eq!(nfs_join("/", "f"), "/f");
        assert_eq!(nfs_join("/d", "f"), "/d/f");
    }

    #[test]
    fn dnfstab_paths_become_targets() {
        let text = "server: filer1\nlocal: 10.0.0.1\npath: 10.0.0.2\n\
                    export: /vol/ora mount: /db/ora\nport: 2049\nmount_port: 20048\n";
        let tab = match directnfs::config::parse_str(text, Path::new("t")) {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        };
        let r = Resolver::new(None, false);
        let _ = r.tab.set(Some(tab));
        let Ok(Spec::Nfs(spec)) = r.spec("/db/ora/sub/f.dbf") else {
            panic!("not resolved to NFS");
        };
        assert_eq!(spec.target.name, "filer1");
        assert_eq!(spec.target.export.as_deref(), Some("/vol/ora"));
        assert_eq!(spec.target.path, "/vol/ora/sub/f.dbf");
        assert_eq!(
            spec.target.paths,
            vec![PathSpec {
                local: Some("10.0.0.1".parse().unwrap_or(IpAddr::from([0, 0, 0, 0]))),
                server: "10.0.0.2".into()
            }]
        );
        assert_eq!(spec.target.options.nfs_port, Some(2049));
        assert!(matches!(r.spec("/elsewhere/f"), Ok(Spec::Local(_))));
        assert_eq!(
            spec.path_in_export("/vol/ora").as_deref(),
            Some("/sub/f.dbf")
        );
    }
}
