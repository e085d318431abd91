//! Database names and the mounts behind them.
//!
//! A name is either
//! * an `nfs://host[:port]/export/dir/db?key=value...` URL, or
//! * an absolute path under a `mount:` prefix of the dnfstab (found as
//!   everywhere: `$DIRECTNFS_TAB`, `./dnfstab`, `/etc/dnfstab`); a relative
//!   path is made absolute with the current directory first.
//!
//! SQLite names a database's companions by appending to the full name
//! (`-journal`, `-wal`, `-mjXXXXXX9XX`). For a URL with a query that
//! lands after the options (`...?nfsport=2049-journal`), so
//! [`split_url_suffix`] moves such a suffix back onto the path.
//!
//! Every name resolved to the same server, export and options shares one
//! mounted [`Client`] (its connections), kept for the life of the process;
//! a forked child makes its own from them before its first use.

use std::ffi::OsString;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use dnfs::config::{ConfigError, DnfsTab, Located, NfsUrl};
use dnfs::{Client, Error};

/// A mounted export, shared by every file opened through it.
#[derive(Debug)]
pub struct Mount {
    pub client: Client,
    /// Server + export + options: files with equal keys share locks.
    pub key: String,
    /// What names are matched on before mounting: for URLs the server and
    /// options (the export is known only after MOUNT), else `key`.
    lookup: String,
}

/// Where a name lives.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub mount: Arc<Mount>,
    /// Path inside the export.
    pub path: String,
}

/// The mounts of this process, and the process they belong to (see
/// [`mounts`]).
static MOUNTS: Mutex<(u32, Vec<Arc<Mount>>)> = Mutex::new((0, Vec::new()));

/// The mount table's lock, held across a `fork` ([`crate::forked`]).
pub(crate) fn hold_table_for_fork() -> MutexGuard<'static, (u32, Vec<Arc<Mount>>)> {
    MOUNTS.lock().unwrap_or_else(|p| p.into_inner())
}

/// The mount table, made the child's own first thing in the child of a
/// `fork`: the parent's clients share the parent's sockets (and on
/// NFSv4.1 its session), so the child must never call or drop them. Each
/// becomes the child's own client ([`Client::after_fork`]: new
/// connections, the handles it knew); the parent's are leaked in the
/// child, as that requires. One whose paths do not connect is left out
/// (the next open mounts it again, or says why not).
fn mounts() -> MutexGuard<'static, (u32, Vec<Arc<Mount>>)> {
    let mut t = hold_table_for_fork();
    let pid = std::process::id();
    if t.0 != pid {
        let parents = std::mem::take(&mut t.1);
        t.0 = pid;
        t.1 = parents
            .iter()
            .filter_map(|m| {
                let client = m.client.after_fork().ok()?;
                Some(Arc::new(Mount {
                    client,
                    key: m.key.clone(),
                    lookup: m.lookup.clone(),
                }))
            })
            .collect();
        std::mem::forget(parents);
    }
    t
}
/// The loaded dnfstab and the `$DIRECTNFS_TAB` it was loaded under.
type CachedConfig = Option<(Option<OsString>, Arc<DnfsTab>)>;
static CONFIG: OnceLock<Mutex<CachedConfig>> = OnceLock::new();

/// Suffixes SQLite appends to a database name.
fn sqlite_suffix(s: &str) -> Option<usize> {
    for fixed in ["-journal", "-wal", "-shm"] {
        if s.ends_with(fixed) {
            return Some(s.len() - fixed.len());
        }
    }
    // Super-journal: "-mj" + 6 hex digits + "9" + 2 hex digits.
    let i = s.rfind("-mj")?;
    let tail = &s[i + 3..];
    (tail.len() == 9 && tail.bytes().all(|b| b.is_ascii_hexdigit())).then_some(i)
}

/// Splits `nfs://h/p?query-journal` into (`nfs://h/p?query`, `-journal`).
/// Names without a query keep any suffix on the path (nothing to split).
pub fn split_url_suffix(name: &str) -> (&str, &str) {
    let Some(q) = name.find('?') else {
        return (name, "");
    };
    match sqlite_suffix(&name[q..]) {
        Some(i) => (&name[..q + i], &name[q + i..]),
        None => (name, ""),
    }
}

pub fn is_url(name: &str) -> bool {
    name.starts_with("nfs://")
}

/// The canonical full name SQLite should use (xFullPathname).
pub fn full_pathname(name: &str) -> Result<String, Error> {
    if is_url(name) {
        let (url, _) = split_url_suffix(name);
        NfsUrl::parse(url)?;
        return Ok(name.to_string());
    }
    let norm = dnfs::config::absolute(std::path::Path::new(name))
        .map_err(|e| Error::InvalidInput(format!("{name}: no current directory: {e}")))?
        .to_string_lossy()
        .into_owned();
    let tab = config()?;
    if tab.resolve(&norm).is_none() {
        return Err(Error::Config(ConfigError::NotUnderMount {
            name: norm,
            file: tab.source.clone(),
        }));
    }
    Ok(norm)
}

/// The dnfstab, cached until `$DIRECTNFS_TAB` changes.
fn config() -> Result<Arc<DnfsTab>, Error> {
    let env = std::env::var_os(dnfs::config::ENV_VAR);
    let cell = CONFIG.get_or_init(|| Mutex::new(None));
    let mut cached = cell.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((seen, tab)) = cached.as_ref() {
        if *seen == env {
            return Ok(Arc::clone(tab));
        }
    }
    let tab = dnfs::config::find_config(None)?.ok_or(ConfigError::Missing)?;
    let tab = Arc::new(tab);
    *cached = Some((env, Arc::clone(&tab)));
    Ok(tab)
}

/// Finds (or mounts) the export holding `name` (a full pathname).
pub fn resolve(name: &str) -> Result<Resolved, Error> {
    if is_url(name) {
        let (url, suffix) = split_url_suffix(name);
        let parsed = NfsUrl::parse(url)?;
        let located = Located::from_url(&parsed);
        {
            let mounts = mounts();
            for m in mounts.1.iter().filter(|m| m.lookup == located.key) {
                if let Some(rest) = dnfs::config::split_by_export(&located.rest, m.client.export())
                {
                    return Ok(Resolved {
                        mount: Arc::clone(m),
                        path: format!("{rest}{suffix}"),
                    });
                }
            }
        }
        let client = Client::mount(&located.target)?;
        let path = format!("{}{suffix}", client.target_path());
        let key = format!("{} export {}", located.key, client.export());
        let mount = remember(Mount {
            client,
            key,
            lookup: located.key,
        });
        return Ok(Resolved { mount, path });
    }
    let tab = config()?;
    let located = tab
        .locate(name)?
        .ok_or_else(|| ConfigError::NotUnderMount {
            name: name.to_string(),
            file: tab.source.clone(),
        })?;
    {
        let mounts = mounts();
        if let Some(m) = mounts.1.iter().find(|m| m.lookup == located.key) {
            return Ok(Resolved {
                mount: Arc::clone(m),
                path: located.rest,
            });
        }
    }
    let client = Client::mount(&located.target)?;
    let mount = remember(Mount {
        client,
        key: located.key.clone(),
        lookup: located.key,
    });
    Ok(Resolved {
        mount,
        path: located.rest,
    })
}

pub use dnfs::retry_stale as fresh;

/// Adds a mount unless another thread added an equal one meanwhile.
fn remember(mount: Mount) -> Arc<Mount> {
    let mut mounts = mounts();
    if let Some(m) = mounts.1.iter().find(|m| m.key == mount.key) {
        return Arc::clone(m);
    }
    let m = Arc::new(mount);
    mounts.1.push(Arc::clone(&m));
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixes_after_a_query_move_to_the_path() {
        let u = "nfs://h/e/db?nfsport=2049&mountport=20048";
        assert_eq!(split_url_suffix(&format!("{u}-journal")), (u, "-journal"));
        assert_eq!(split_url_suffix(&format!("{u}-wal")), (u, "-wal"));
        assert_eq!(
            split_url_suffix(&format!("{u}-mj0A1B2C9FF")),
            (u, "-mj0A1B2C9FF")
        );
        assert_eq!(split_url_suffix(u), (u, ""));
        assert_eq!(
            split_url_suffix("nfs://h/e/db-journal"),
            ("nfs://h/e/db-journal", "")
        );
    }
}
