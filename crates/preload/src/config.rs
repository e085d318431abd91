//! The process's view of the dnfstab: each `mount:` prefix with the target
//! to mount for it, loaded once when the library is loaded (the file is
//! found as everywhere else: `$DIRECTNFS_TAB`, `./dnfstab`,
//! `/etc/dnfstab`; `dnfs run` sets `$DIRECTNFS_TAB`).

use std::sync::atomic::{AtomicU32, Ordering};

use dnfs::config::{ClassRule, DnfsTab};
use dnfs::{IoClass, Target};

use crate::warn;

/// One `export: E mount: M` line.
#[derive(Debug)]
pub struct Mount {
    /// The host path prefix (`mount:`), normalised, without a trailing `/`.
    pub prefix: String,
    /// What to mount (the export's root).
    pub target: Target,
    /// Identifies server and export in shadow file names; the same in
    /// every process with the same dnfstab.
    pub key: u64,
    /// `st_dev` of its files.
    pub dev: u64,
    /// `server:export` for messages.
    pub label: String,
    /// The server block's `log_files:`/`data_files:`/`bulk_files:`
    /// patterns: the I/O class of a file opened here
    /// ([`Mount::io_class_of`]).
    pub classes: Vec<ClassRule>,
}

impl Mount {
    /// The I/O class the dnfstab gives the file at `host_path`: the first
    /// pattern it matches, `data` when none does.
    pub fn io_class_of(&self, host_path: &str) -> IoClass {
        self.classes
            .iter()
            .find(|r| r.matches(host_path))
            .map_or(IoClass::Data, |r| r.class)
    }
}

/// Every mount of the dnfstab, longest prefix first.
#[derive(Debug)]
pub struct Config {
    /// The mounts.
    pub mounts: Vec<Mount>,
    /// Every component of every mount prefix (`db`, `ora` for `/db/ora`):
    /// a relative path from a local directory descriptor can reach a
    /// prefix without `..` only if it starts with one of them (paths.rs).
    pub prefix_names: Vec<Vec<u8>>,
    /// Every strict ancestor of a mount prefix but `/` (`/db` for
    /// `/db/pg`): the paths that stand for a directory when they do not
    /// exist locally (paths.rs); one comparison for any other path.
    pub ancestors: Vec<Vec<u8>>,
    /// The first component of every prefix (`db` for `/db/ora`), or `None`
    /// when a prefix is the root itself: a path whose first component is
    /// none of them (and does not start `//` or `/.`) is near no prefix,
    /// a few length comparisons for the common local path whatever the
    /// number of mounts (paths.rs `near_a_prefix`).
    pub first_names: Option<Vec<Vec<u8>>>,
    /// The first byte of each of `first_names`, as 256 bits: most local
    /// paths are turned away by one bit test before any comparison.
    pub first_bytes: [u64; 4],
}

impl Config {
    /// True if some prefix starts with the component `first`.
    #[inline]
    pub fn may_lead(&self, first: &[u8]) -> bool {
        let Some(names) = &self.first_names else {
            return true;
        };
        let Some(&b) = first.first() else {
            return false;
        };
        self.first_bytes[usize::from(b >> 6)] & (1u64 << (b & 63)) != 0
            && names.iter().any(|n| n == first)
    }
}

/// The dnfstab of this process, if there is one with at least one mount
/// (`None` leaves the library passing every call through). A broken file is
/// said once on stderr.
pub fn load() -> Option<Config> {
    match dnfs::config::find_config(None) {
        Ok(Some(tab)) => from_tab(&tab),
        Ok(None) => None,
        Err(e) => {
            warn::always(&format!("{e}; no NFS path is served"));
            None
        }
    }
}

/// The mounts of a parsed dnfstab.
pub fn from_tab(tab: &DnfsTab) -> Option<Config> {
    for w in &tab.warnings {
        warn::always(&w.to_string());
    }
    let mut mounts = Vec::new();
    for server in &tab.servers {
        for export in &server.exports {
            // Its own prefix always resolves (to this export, or to a
            // longer prefix of another that wins).
            let located = match tab.locate(&export.mount) {
                Ok(Some(l)) => l,
                Ok(None) => continue,
                Err(e) => {
                    warn::always(&format!("{e}; this export is not served"));
                    continue;
                }
            };
            let key = fnv64(&[server.name.as_bytes(), b"\0", export.export.as_bytes()]);
            mounts.push(Mount {
                prefix: export.mount.trim_end_matches('/').to_string(),
                target: located.target,
                key,
                // A device number no local file system has: major 0x6e66
                // ("nf"), minor from the key.
                dev: libc::makedev(0x6e66, (key & 0x000f_ffff) as u32),
                label: format!("{}:{}", server.name, export.export),
                classes: server.io_classes.clone(),
            });
        }
    }
    if mounts.is_empty() {
        return None;
    }
    mounts.sort_by_key(|m| std::cmp::Reverse(m.prefix.len()));
    let mut prefix_names: Vec<Vec<u8>> = mounts
        .iter()
        .flat_map(|m| m.prefix.split('/').filter(|c| !c.is_empty()))
        .map(|c| c.as_bytes().to_vec())
        .collect();
    prefix_names.sort();
    prefix_names.dedup();
    let mut ancestors: Vec<Vec<u8>> = mounts
        .iter()
        .flat_map(|m| {
            let p = m.prefix.as_bytes();
            (1..p.len())
                .filter(|&i| p[i] == b'/')
                .map(|i| p[..i].to_vec())
                .collect::<Vec<_>>()
        })
        .collect();
    ancestors.sort();
    ancestors.dedup();
    let mut first_names: Option<Vec<Vec<u8>>> = Some(Vec::new());
    for m in &mounts {
        match m.prefix.split('/').nth(1) {
            Some(first) if !first.is_empty() => {
                if let Some(names) = first_names.as_mut() {
                    names.push(first.as_bytes().to_vec());
                }
            }
            _ => first_names = None,
        }
    }
    let mut first_bytes = [0u64; 4];
    if let Some(names) = first_names.as_mut() {
        names.sort();
        names.dedup();
        for b in names.iter().filter_map(|n| n.first()) {
            first_bytes[usize::from(b >> 6)] |= 1u64 << (b & 63);
        }
    }
    Some(Config {
        mounts,
        prefix_names,
        ancestors,
        first_names,
        first_bytes,
    })
}

/// FNV-1a, 64 bits: a stable name for a server and export.
pub fn fnv64(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in *part {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// The process's umask, kept up to date by the `umask` entry point (files
/// and directories created on NFS get `mode & !umask`, as the kernel does).
static UMASK: AtomicU32 = AtomicU32::new(0o022);

/// The current umask.
pub fn umask() -> u32 {
    UMASK.load(Ordering::Relaxed)
}

/// Records a new umask.
pub fn set_umask(mask: u32) {
    UMASK.store(mask & 0o777, Ordering::Relaxed);
}

/// Reads the umask without changing it (`/proc/self/status`, Linux 4.7+).
pub fn read_umask() {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return;
    };
    let found = status
        .lines()
        .find_map(|l| l.strip_prefix("Umask:"))
        .and_then(|v| u32::from_str_radix(v.trim(), 8).ok());
    if let Some(mask) = found {
        set_umask(mask);
    }
}

/// Says once (in the first process of a `dnfs run`: its children inherit
/// a variable that says it was said) which mount prefixes stand over a
/// local directory that is not empty: its files are hidden, as under a
/// kernel mount, and a user who put them there would look for them.
/// Called before the process's state is published, so that the check's
/// own calls go to libc.
pub fn warn_hidden_local_dirs(config: &Config) {
    const SAID: &str = "DIRECTNFS_PRELOAD_SAID_HIDDEN";
    if std::env::var_os(SAID).is_some() {
        return;
    }
    let hidden: Vec<&str> = config
        .mounts
        .iter()
        .filter(|m| std::fs::read_dir(&m.prefix).is_ok_and(|mut d| d.next().is_some()))
        .map(|m| m.prefix.as_str())
        .collect();
    if hidden.is_empty() {
        return;
    }
    warn::once("hidden local directory", || {
        format!(
            "mount prefix {} is over a local directory that is not empty: its local files \
             are hidden while the library serves that path from NFS",
            hidden.join(", ")
        )
    });
    // SAFETY: at load time, before `main`: no other thread reads the
    // environment yet. Both strings are NUL-terminated literals.
    unsafe { libc::setenv(c"DIRECTNFS_PRELOAD_SAID_HIDDEN".as_ptr(), c"1".as_ptr(), 1) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn mounts_are_ordered_longest_prefix_first() {
        let tab = dnfs::config::parse_str(
            "server: s\npath: 127.0.0.1\nexport: /e1 mount: /db\nexport: /e2 mount: /db/redo\n",
            Path::new("t"),
        )
        .unwrap();
        let cfg = from_tab(&tab).unwrap();
        let prefixes: Vec<_> = cfg.mounts.iter().map(|m| m.prefix.as_str()).collect();
        assert_eq!(prefixes, ["/db/redo", "/db"]);
        assert_ne!(cfg.mounts[0].key, cfg.mounts[1].key);
        assert_ne!(cfg.mounts[0].dev, cfg.mounts[1].dev);
    }

    #[test]
    fn the_key_of_a_mount_is_the_same_in_every_process() {
        assert_eq!(fnv64(&[b"s", b"\0", b"/e1"]), fnv64(&[b"s\0/e1"]));
        assert_eq!(fnv64(&[b""]), 0xcbf2_9ce4_8422_2325);
    }

    #[test]
    fn only_a_prefixs_first_component_may_lead_to_it() {
        let tab = dnfs::config::parse_str(
            "server: s\npath: 127.0.0.1\nexport: /e1 mount: /db/pg\nexport: /e2 mount: /dnfs\n",
            Path::new("t"),
        )
        .unwrap();
        let cfg = from_tab(&tab).unwrap();
        assert!(cfg.may_lead(b"db") && cfg.may_lead(b"dnfs"));
        // Same first byte, other names; no first byte at all.
        assert!(!cfg.may_lead(b"dev") && !cfg.may_lead(b"dbx") && !cfg.may_lead(b"d"));
        assert!(!cfg.may_lead(b"usr") && !cfg.may_lead(b""));
        assert!(!cfg.may_lead(b"pg"), "pg is not a first component");
    }
}
