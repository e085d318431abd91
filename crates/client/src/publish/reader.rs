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
/// [`HostStats::unreadable`]. The endpoints of one process (one per copy
/// of the library it holds: `PID.sock`, `PID.2.sock`, ...) are merged
/// into one entry.
pub fn read_host(pid: Option<u32>) -> HostStats {
    let mut host = HostStats::default();
    for ep in endpoints() {
        if pid.is_some_and(|p| p != ep.pid) {
            continue;
        }
        match read_endpoint(&ep.path) {
            Ok(p) => match host.processes.iter_mut().find(|q| q.pid == p.pid) {
                Some(q) => merge_copy(q, p),
                None => host.processes.push(p),
            },
            Err(e) if is_stale(&e) => {
                let _ = std::fs::remove_file(&ep.path);
            }
            Err(e) => host.unreadable.push((ep.pid, e.to_string())),
        }
    }
    host
}

/// Adds what another copy of the library in the same process published
/// to `into`: its clients' servers and files, and its alert lines (in time
/// order: each line starts with its UTC timestamp).
fn merge_copy(into: &mut ProcessStats, other: ProcessStats) {
    into.started_unix_ms = into.started_unix_ms.min(other.started_unix_ms);
    into.taken_unix_ms = into.taken_unix_ms.max(other.taken_unix_ms);
    into.stats.servers.extend(other.stats.servers);
    into.stats.files.extend(other.stats.files);
    into.alerts.extend(other.alerts);
    into.alerts.sort();
}

/// Removes the endpoints (and temporary names) in `dir` of processes that
/// no longer exist. Only `/proc` is looked at, never the sockets
/// themselves: a process starting to publish must not make every other
/// process compute a snapshot (a database may start hundreds). An endpoint
/// whose pid was reused by an unrelated process stays until a reader finds
/// it refusing connections.
pub(crate) fn remove_stale(dir: &Path) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.filter_map(|e| e.ok()) {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let pid = dir::pid_of(name).or_else(|| {
            // `.PID.MS.tmp`: left by a process killed while it started.
            name.strip_suffix(".tmp")?
                .strip_prefix('.')?
                .split('.')
                .next()?
                .parse()
                .ok()
        });
        if pid.is_some_and(|p| !Path::new(&format!("/proc/{p}")).exists()) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Nobody listens on the socket: its process ended without removing it
/// (an endpoint is renamed into place only once it listens).
fn is_stale(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::ConnectionRefused
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_of_dead_processes_are_removed_and_live_ones_kept() {
        let d = std::env::temp_dir().join(format!("dnfs-stale-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("mkdir");
        let me = format!("{}.sock", std::process::id());
        for name in [
            me.as_str(),
            "4000000000.sock",
            ".4000000000.17.tmp",
            "notes.txt",
        ] {
            std::fs::write(d.join(name), b"").expect("file");
        }
        remove_stale(&d);
        let mut left: Vec<String> = std::fs::read_dir(&d)
            .expect("read_dir")
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .collect();
        left.sort();
        let mut want = vec![me, "notes.txt".to_owned()];
        want.sort();
        assert_eq!(left, want);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_socket_nobody_listens_on_is_stale_and_a_missing_one_is_not() {
        let d = std::env::temp_dir().join(format!("dnfs-refused-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("mkdir");
        let path = d.join("1.sock");
        drop(std::os::unix::net::UnixListener::bind(&path).expect("bind"));
        let e = read_endpoint(&path).expect_err("refused");
        assert!(is_stale(&e), "{e}");
        let e = read_endpoint(&d.join("2.sock")).expect_err("missing");
        assert!(!is_stale(&e), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
