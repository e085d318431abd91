//! An NFS-Ganesha of a test's own, for tests that need a server set up
//! differently from the shared one of `DNFS_TEST_URL` (an export of `/`,
//! a server the test stops and starts): started with
//! `scripts/server/nfs-server.sh` under a state directory of its own, stopped when
//! dropped.
//!
//! Two test runs at once on one machine (two checkouts) would share a
//! server's state directory and ports, and each start would stop the
//! other's server: a server of a name is taken under an exclusive lock on
//! `/tmp/dnfs-test-NAME.lock`, held until it is dropped, so the second run
//! waits for the first (the kernel releases the lock of a killed run).
//!
//! Such tests run where the real-server tests run ([`crate::server::wanted`]): they need
//! the Ganesha packages, which `scripts/test.sh` installs.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};

/// A running Ganesha; see the module doc.
#[derive(Debug)]
pub struct OwnGanesha {
    state_dir: PathBuf,
    export_dir: PathBuf,
    env: Vec<(String, String)>,
    url: String,
    /// The name's lock (see the module doc); released when dropped, after
    /// the server stopped (fields drop after `Drop::drop`).
    _lock: File,
}

impl OwnGanesha {
    /// Starts a server named `name` (state in `/tmp/dnfs-test-NAME`, files
    /// in `/tmp/dnfs-test-NAME-export`; `DNFS_TEST_OWN_PREFIX` replaces
    /// `/tmp/dnfs-test-`) with the `nfs-server.sh` settings in `env`
    /// (`DNFS_EXPORT_PATH`, `DNFS_NFS_PORT`, ...). The error holds the
    /// script's output.
    pub fn start(name: &str, env: &[(&str, &str)]) -> Result<Self, String> {
        let prefix =
            std::env::var("DNFS_TEST_OWN_PREFIX").unwrap_or_else(|_| "/tmp/dnfs-test-".into());
        let lock = take_lock(&format!("{prefix}{name}.lock"))?;
        let mut server = Self {
            state_dir: PathBuf::from(format!("{prefix}{name}")),
            export_dir: PathBuf::from(format!("{prefix}{name}-export")),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            url: String::new(),
            _lock: lock,
        };
        // A server left behind by an earlier run that was killed.
        let _ = server.run(&["stop"]);
        let export = server.export_dir.to_string_lossy().into_owned();
        let out = server.run(&["start", &export])?;
        server.url = String::from_utf8_lossy(&out.stdout)
            .lines()
            .rfind(|l| l.starts_with("nfs://"))
            .map(str::to_string)
            .ok_or_else(|| "nfs-server.sh start printed no URL".to_string())?;
        Ok(server)
    }

    /// The URL `start` printed: `nfs://127.0.0.1/EXPORT_PATH?nfsport=N&mountport=M`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The exported directory, as seen locally.
    pub fn export_dir(&self) -> &Path {
        &self.export_dir
    }

    /// The `key=value` lines of `nfs-server.sh status` (ports, and with
    /// `DNFS_NLM` the namespace and each path's interfaces and addresses).
    pub fn status(&self) -> Result<Vec<(String, String)>, String> {
        let out = self.run(&["status"])?;
        Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect())
    }

    /// Runs `nfs-server.sh restart ARGS` (`--kill`, `--down SECS`) in the
    /// background: the caller waits for it.
    pub fn spawn_restart(&self, args: &[&str]) -> std::io::Result<Child> {
        self.command(&[&["restart"], args].concat()).spawn()
    }

    fn command(&self, args: &[&str]) -> Command {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut cmd = Command::new("bash");
        cmd.arg(repo.join("scripts/server/nfs-server.sh"))
            .args(args)
            .env("DNFS_STATE_DIR", &self.state_dir);
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd
    }

    fn run(&self, args: &[&str]) -> Result<Output, String> {
        let out = self
            .command(args)
            .output()
            .map_err(|e| format!("nfs-server.sh {args:?}: {e}"))?;
        if out.status.success() {
            Ok(out)
        } else {
            Err(format!(
                "nfs-server.sh {args:?} failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    }
}

/// Opens `path` and waits for an exclusive lock on it.
fn take_lock(path: &str) -> Result<File, String> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| format!("{path}: {e}"))?;
    loop {
        // SAFETY: flock on a descriptor this function owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(file);
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(format!("flock {path}: {e}"));
        }
    }
}

impl Drop for OwnGanesha {
    fn drop(&mut self) {
        let _ = self.run(&["stop"]);
        let _ = std::fs::remove_dir_all(&self.export_dir);
    }
}
