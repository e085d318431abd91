//! The multipath topology, driven through `scripts/server/netns.sh`: Ganesha in
//! network namespace `dnfs-srv`, path K from 10.231.K.1 (host) to
//! 10.231.K.2 (server). Every call is bounded in time.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Seconds any one `netns.sh` command may take (a server restart waits for
/// Ganesha to answer, bounded at 30 s by the script itself).
const COMMAND_LIMIT_SECS: &str = "120";

/// A topology this process brought up (and takes down on [`Topology::down`]).
#[derive(Debug)]
pub struct Topology {
    script: PathBuf,
    state_dir: String,
    /// NFS port of the server (the same on every path).
    pub nfs_port: u16,
    /// MOUNT port of the server.
    pub mnt_port: u16,
    /// The export's path, as clients mount it.
    pub export_path: String,
    /// Number of paths.
    pub paths: u8,
}

impl Topology {
    /// Runs `netns.sh up PATHS` with its state in `state_dir` and reads
    /// the ports and export from `netns.sh status`.
    pub fn up(repo: &Path, state_dir: &str, paths: u8) -> Result<Self, String> {
        let mut topo = Topology {
            script: repo.join("scripts/server/netns.sh"),
            state_dir: state_dir.to_string(),
            nfs_port: 0,
            mnt_port: 0,
            export_path: String::new(),
            paths,
        };
        topo.run(&["up", &paths.to_string()])?;
        let status = topo.run(&["status"])?;
        let get = |key: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{key}=")))
                .map(str::to_string)
                .ok_or_else(|| format!("netns.sh status has no {key}=:\n{status}"))
        };
        topo.nfs_port = get("nfs_port")?
            .parse()
            .map_err(|e| format!("nfs_port: {e}"))?;
        topo.mnt_port = get("mnt_port")?
            .parse()
            .map_err(|e| format!("mnt_port: {e}"))?;
        topo.export_path = get("export_path")?;
        Ok(topo)
    }

    /// Runs `netns.sh ARGS`; its stdout, or its stderr as the error.
    pub fn run(&self, args: &[&str]) -> Result<String, String> {
        let out = Command::new("timeout")
            .arg(COMMAND_LIMIT_SECS)
            .arg("bash")
            .arg(&self.script)
            .args(args)
            .env("DNFS_NETNS_STATE_DIR", &self.state_dir)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", self.script.display()))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(format!(
                "netns.sh {} failed ({}):\n{}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    }

    /// Tears the topology down (best effort).
    pub fn down(&self) {
        if let Err(e) = self.run(&["down"]) {
            eprintln!("soak: {e}");
        }
    }

    /// The server's address on path `k` (1-based).
    pub fn server_addr(k: u8) -> std::net::Ipv4Addr {
        std::net::Ipv4Addr::new(10, 231, k, 2)
    }

    /// The host's address on path `k` (1-based).
    pub fn host_addr(k: u8) -> std::net::Ipv4Addr {
        std::net::Ipv4Addr::new(10, 231, k, 1)
    }
}
