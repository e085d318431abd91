//! Harness for `dnfs` tests against a real NFS server (NFS-Ganesha).
//!
//! The server comes from `DNFS_TEST_URL` (an `nfs://host/export?nfsport=N&mountport=M`
//! URL, as printed by `scripts/server/nfs-server.sh start`), read by
//! `directnfs_testkit::server`: without it the tests are skipped with a
//! loud message, unless `DNFS_TEST_REQUIRE_SERVER` is set, in which case
//! they fail.
//!
//! Ganesha caches directory entries, so every test works under names made
//! unique by [`unique`].

#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

/// The server under test.
#[derive(Debug)]
pub struct Server {
    /// `nfs://host/export`, without the query.
    pub base: String,
    /// `?nfsport=...&mountport=...` (may be empty).
    pub query: String,
    /// The parsed URL.
    pub url: directnfs::config::NfsUrl,
}

impl Server {
    /// URL of `rel` (relative to the export), e.g. `dir/file`.
    pub fn url(&self, rel: &str) -> String {
        let rel = rel.trim_start_matches('/');
        if rel.is_empty() {
            format!("{}{}", self.base, self.query)
        } else {
            format!("{}/{rel}{}", self.base, self.query)
        }
    }
}

/// The server, or `None` (with a message) when tests should be skipped.
pub fn server() -> Option<&'static Server> {
    static SERVER: OnceLock<Option<Server>> = OnceLock::new();
    SERVER
        .get_or_init(|| {
            // Once per test binary: the first test to ask says it is skipped.
            let url = directnfs_testkit::server::url("dnfs server tests")?;
            let parsed = match directnfs::config::NfsUrl::parse(&url) {
                Ok(u) => u,
                Err(e) => panic!("DNFS_TEST_URL: {e}"),
            };
            let (base, query) = match url.find('?') {
                Some(i) => (url[..i].to_string(), url[i..].to_string()),
                None => (url.clone(), String::new()),
            };
            Some(Server {
                base: base.trim_end_matches('/').to_string(),
                query,
                url: parsed,
            })
        })
        .as_ref()
}

/// `let s = server_or_skip!();` returns from the test when there is no server.
#[macro_export]
macro_rules! server_or_skip {
    () => {
        match common::server() {
            Some(s) => s,
            None => return,
        }
    };
}

/// A name no other test (or earlier run) used: `tag-pid-nanos-counter`.
pub fn unique(tag: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{tag}-{}-{nanos}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// A local scratch directory, removed on drop.
#[derive(Debug)]
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// A fresh directory under the system temp dir.
    pub fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(unique(&format!("dnfs-cli-{tag}")));
        if let Err(e) = std::fs::create_dir_all(&dir) {
            panic!("{}: {e}", dir.display());
        }
        Scratch(dir)
    }

    /// A path inside it.
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `dnfs ARGS` in a directory without a dnfstab, with no
/// `$DIRECTNFS_TAB`, so only the arguments decide what happens.
pub fn dnfs(args: &[&str]) -> Output {
    dnfs_in(std::env::temp_dir().as_path(), args)
}

/// Runs `dnfs ARGS` in `dir`.
pub fn dnfs_in(dir: &Path, args: &[&str]) -> Output {
    match Command::new(env!("CARGO_BIN_EXE_dnfs"))
        .args(args)
        .current_dir(dir)
        .env_remove("DIRECTNFS_TAB")
        .output()
    {
        Ok(o) => o,
        Err(e) => panic!("cannot run dnfs: {e}"),
    }
}

/// Runs `dnfs ARGS`, fails the test unless it succeeds quietly (nothing on
/// stderr: no progress bar when stderr is not a terminal), returns stdout.
pub fn ok(args: &[&str]) -> String {
    let out = dnfs(args);
    assert_success(&out, args);
    assert!(
        out.stderr.is_empty(),
        "dnfs {args:?} wrote to stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Fails the test unless `out` is a success.
pub fn assert_success(out: &Output, args: &[&str]) {
    assert!(
        out.status.success(),
        "dnfs {args:?} failed with {}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `dnfs ARGS`, which must fail with exit code 1 and exactly one line
/// `dnfs: ...` on stderr; returns that line.
pub fn fails(args: &[&str]) -> String {
    let out = dnfs(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.code(),
        Some(1),
        "dnfs {args:?}: want exit code 1, got {} (stderr: {stderr})",
        out.status
    );
    assert!(
        out.stdout.is_empty(),
        "dnfs {args:?}: unexpected stdout {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "dnfs {args:?}: stderr is not one line: {stderr:?}"
    );
    assert!(lines[0].starts_with("dnfs: "), "dnfs {args:?}: {stderr:?}");
    lines[0].to_string()
}

/// Deterministic pseudo-random bytes (xorshift64*), fast enough for
/// hundreds of MiB in a debug build.
pub fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        out.extend_from_slice(&x.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes());
    }
    out.truncate(len);
    out
}

/// Writes `len` random bytes to `path`; returns their SHA-256.
pub fn write_random_file(path: &Path, len: usize, seed: u64) -> [u8; 32] {
    const PIECE: usize = 8 << 20;
    let mut f = match std::fs::File::create(path) {
        Ok(f) => f,
        Err(e) => panic!("{}: {e}", path.display()),
    };
    let mut hash = Sha256::new();
    let mut done = 0;
    let mut piece = 0u64;
    while done < len {
        let n = PIECE.min(len - done);
        let data = random_bytes(
            n,
            seed.wrapping_add(piece.wrapping_mul(0x9e37_79b9_7f4a_7c15)),
        );
        hash.update(&data);
        if let Err(e) = f.write_all(&data) {
            panic!("{}: {e}", path.display());
        }
        done += n;
        piece += 1;
    }
    hash.finalize().into()
}

/// SHA-256 of a local file.
pub fn sha256_file(path: &Path) -> [u8; 32] {
    let mut f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) => panic!("{}: {e}", path.display()),
    };
    let mut hash = Sha256::new();
    if let Err(e) = std::io::copy(&mut f, &mut hash) {
        panic!("{}: {e}", path.display());
    }
    hash.finalize().into()
}

/// A directory of one test on the server, removed (with `dnfs rm -r`) when
/// the test ends, so runs do not fill the export. Derefs to its name.
#[derive(Debug)]
pub struct RemoteDir {
    name: String,
    url: String,
}

impl RemoteDir {
    /// Creates a fresh directory `tag-...` at the export root.
    pub fn new(s: &Server, tag: &str) -> Self {
        let name = unique(tag);
        let url = s.url(&name);
        ok(&["mkdir", &url]);
        RemoteDir { name, url }
    }
}

impl std::ops::Deref for RemoteDir {
    type Target = str;
    fn deref(&self) -> &str {
        &self.name
    }
}

impl std::fmt::Display for RemoteDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)
    }
}

impl Drop for RemoteDir {
    fn drop(&mut self) {
        let _ = dnfs(&["rm", "-r", "-f", &self.url]);
    }
}
