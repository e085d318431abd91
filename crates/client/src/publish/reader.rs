//! The reading side: finding the endpoints of the host and asking them.

use std::io::{self, Read};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::dir;
use crate::stats::{HostStats, ProcessStats};

/// How long one process may take to answer.
const READ_TIMEOUT: Duration = Duration::from_secs(3);

/// Largest answer accepted from one process (a process with thousands of
/// open files sends a few MiB; a bound keeps a broken peer from filling
/// memory).
const MAX_ANSWER: u64 = 256 << 20;

/// A process's endpoint found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The publishing process.
    pub pid: u32,
    /// Its socket.
    pub path: PathBuf,
}

/// Every endpoint this user may read: its own directory, or every user's
/// when run as root. Sorted by pid. Directories that fail the privacy
/// checks are skipped.
pub fn endpoints() -> Vec<Endpoint> {
    // SAFETY: geteuid takes nothing and cannot fail.
    let uid = unsafe { libc::geteuid() };
    let dirs: Vec<(PathBuf, u32)> = if uid == 0 {
        std::fs::read_dir(dir::run_dir())
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .filter_map(|e| {
                        let name = e.file_name().into_string().ok()?;
                        let owner = name.strip_prefix(dir::DIR_PREFIX)?.parse().ok()?;
                        Some((e.path(), owner))
                    })
                    .collect()
            })
            .unwrap_or_default()
    } else {
        vec![(dir::process_dir(uid), uid)]
    };
    let mut out = Vec::new();
    for (d, owner) in dirs {
        if dir::check_private_dir(&d, owner).is_err() {
            continue;
        }
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.filter_map(|e| e.ok()) {
            let Some(pid) = e.file_name().to_str().and_then(dir::pid_of) else {
                continue;
            };
            out.push(Endpoint {
                pid,
                path: e.path(),
            });
        }
    }
    out.sort_by_key(|e| e.pid);
    out
}

/// Asks one endpoint for its process's statistics.
pub fn read_endpoint(path: &Path) -> io::Result<ProcessStats> {
    let stream = UnixStream::connect(path)?;
    stream.set_read_timeout(Some(READ_TIMEOUT))?;
    let mut body = Vec::new();
    stream.take(MAX_ANSWER).read_to_end(&mut body)?;
    if body.is_empty() {
        // The process refused us (another user) or is exiting.
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "the process closed the connection without answering",
        ));
    }
    serde_json::from_slice(&body).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// The statistics of every process this user may read (or only `pid`).
/// An endpoint whose process is gone is removed on the way (if this user
/// owns it) and left out; one that answers with an error is listed in
/// [`HostStats::unreadable`].
pub fn read_host(pid: Option<u32>) -> HostStats {
    let mut host = HostStats::default();
    for ep in endpoints() {
        if pid.is_some_and(|p| p != ep.pid) {
            continue;
        }
        match read_endpoint(&ep.path) {
            Ok(p) => host.processes.push(p),
            Err(e) if is_stale(&e) => {
                let _ = std::fs::remove_file(&ep.path);
            }
            Err(e) => host.unreadable.push((ep.pid, e.to_string())),
        }
    }
    host
}

/// Removes the endpoints in `dir` that nobody listens on any more.
pub(crate) fn remove_stale(dir: &Path) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.filter_map(|e| e.ok()) {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let stale = if dir::pid_of(name).is_some() {
            UnixStream::connect(e.path()).is_err_and(|err| is_stale(&err))
        } else {
            // A temporary name left by a process killed while it started.
            name.ends_with(".tmp")
                && name
                    .strip_prefix('.')
                    .and_then(|n| n.split('.').next())
                    .and_then(|p| p.parse::<u32>().ok())
                    .is_some_and(|p| !std::path::Path::new(&format!("/proc/{p}")).exists())
        };
        if stale {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Nobody listens on the socket: its process ended without removing it
/// (an endpoint is renamed into place only once it listens).
fn is_stale(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::ConnectionRefused
}
