//! Shared set-up for tests against a real NFS-Ganesha server.
//!
//! The server URL comes from `DNFS_TEST_URL` (CI starts one server with
//! `scripts/server/nfs-server.sh` and exports it, with `DNFS_TEST_EXPORT_DIR` the
//! exported directory, and its NFSv4.1 URL as `DNFS_TEST_URL_V41`).
//! Without it, the first test starts a private server for this test
//! binary, serving both versions, on its own ports and state directory,
//! and stops it when the process exits.

#![allow(dead_code, clippy::expect_used, clippy::unwrap_used)]

pub mod versions;

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

/// A server for the tests: its URL (export root) and exported directory.
pub struct Server {
    pub url: String,
    /// The same export's NFSv4.1 URL, if known (`DNFS_TEST_URL_V41`).
    pub url_v41: Option<String>,
    pub export_dir: PathBuf,
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

const STATE_DIR: &str = "/tmp/dnfs-client-tests";

extern "C" fn stop_private_server() {
    let _ = Command::new("bash")
        .arg(repo_root().join("scripts/server/nfs-server.sh"))
        .arg("stop")
        .env("DNFS_STATE_DIR", STATE_DIR)
        .output();
}

/// The test server, started on first use when the environment names none.
pub fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        if let Ok(url) = std::env::var("DNFS_TEST_URL") {
            let export_dir = std::env::var("DNFS_TEST_EXPORT_DIR").unwrap_or_default();
            return Server {
                url,
                url_v41: std::env::var("DNFS_TEST_URL_V41").ok(),
                export_dir: PathBuf::from(export_dir),
            };
        }
        let export_dir = PathBuf::from("/tmp/dnfs-client-tests-export");
        let out = Command::new("bash")
            .arg(repo_root().join("scripts/server/nfs-server.sh"))
            .arg("start")
            .arg(&export_dir)
            .env("DNFS_STATE_DIR", STATE_DIR)
            .env("DNFS_NFS_PORT", "2449")
            .env("DNFS_MNT_PORT", "20448")
            .env("DNFS_NFS4", "1")
            .env("DNFS_NFS4_GRACE", "0")
            .output()
            .expect("run scripts/server/nfs-server.sh");
        assert!(
            out.status.success(),
            "starting Ganesha failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // SAFETY: registers a plain extern "C" function with no captured state.
        unsafe { libc::atexit(stop_private_server) };
        let url = String::from_utf8_lossy(&out.stdout)
            .lines()
            .last()
            .expect("URL line")
            .trim()
            .to_string();
        Server {
            url_v41: url_v41_of(&url),
            url,
            export_dir,
        }
    })
}

/// `nfs://HOST/PATH?vers=4.1&nfsport=N` from the NFSv3 URL
/// `nfs://HOST/PATH?nfsport=N&mountport=M` the server script prints.
fn url_v41_of(url: &str) -> Option<String> {
    let (base, query) = url.split_once('?')?;
    let port = query
        .split('&')
        .find_map(|kv| kv.strip_prefix("nfsport="))?;
    Some(format!("{base}?vers=4.1&nfsport={port}"))
}

/// The server URL with extra `key=value` options appended.
pub fn url_with(options: &str) -> String {
    let url = &server().url;
    if options.is_empty() {
        url.clone()
    } else if url.contains('?') {
        format!("{url}&{options}")
    } else {
        format!("{url}?{options}")
    }
}

/// A connected client with default options.
pub fn client() -> directnfs::Client {
    directnfs::Client::connect(&server().url).expect("connect to test server")
}

/// A name no other test (or earlier run) has used: Ganesha caches
/// directory entries, so tests never reuse names.
pub fn unique(prefix: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "/{prefix}-{}-{}-{}",
        std::process::id(),
        t % 1_000_000_000,
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Mounts `url`, which must fail within `within`; returns the message.
pub fn mount_fails(url: &str, within: std::time::Duration) -> String {
    let started = std::time::Instant::now();
    let err = match directnfs::Client::connect(url) {
        Ok(_) => panic!("{url}: mounted, expected a failure"),
        Err(e) => e.to_string(),
    };
    assert!(
        started.elapsed() < within,
        "{url}: took {:?} to fail: {err}",
        started.elapsed()
    );
    eprintln!("{url}: {err}");
    err
}
