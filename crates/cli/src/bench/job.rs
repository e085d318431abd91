//! What the parent asks a worker to do, and what the worker answers, both as
//! JSON; and the result objects of the JSON output contract.

use serde::{Deserialize, Serialize};

/// Workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Workload {
    Oltp,
    Scan,
    Redo,
    Sweep,
}

impl Workload {
    pub fn name(self) -> &'static str {
        match self {
            Workload::Oltp => "oltp",
            Workload::Scan => "scan",
            Workload::Redo => "redo",
            Workload::Sweep => "sweep",
        }
    }
}

/// I/O engines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    Directnfs,
    Libnfs,
    Local,
}

impl Engine {
    pub fn name(self) -> &'static str {
        match self {
            Engine::Directnfs => "directnfs",
            Engine::Libnfs => "libnfs",
            Engine::Local => "local",
        }
    }

    pub fn parse(s: &str) -> Result<Engine, String> {
        match s.trim() {
            "directnfs" | "dnfs" => Ok(Engine::Directnfs),
            "libnfs" => Ok(Engine::Libnfs),
            "local" => Ok(Engine::Local),
            other => Err(format!(
                "unknown engine {other:?} (use directnfs, libnfs, local)"
            )),
        }
    }
}

/// Where the data file is, in each engine's terms.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Location {
    /// The target as given: an nfs:// URL or a path under a dnfstab
    /// `mount:` prefix.
    pub url: Option<String>,
    /// `--config FILE` (dnfstab) of the parent, for configured paths.
    #[serde(default)]
    pub config: Option<String>,
    /// NFS server host.
    pub host: Option<String>,
    pub nfs_port: Option<u16>,
    pub mount_port: Option<u16>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    /// The export mounted (from directnfs's discovery).
    pub export: Option<String>,
    /// The file path below the export, starting with `/`.
    pub rel_path: Option<String>,
    /// The same file on the local file system.
    pub local_path: Option<String>,
}

/// One run of one engine, done by a worker process.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Job {
    /// oltp, scan or redo (sweep steps are oltp jobs).
    pub workload: Workload,
    pub engine: Engine,
    pub loc: Location,
    pub sessions: usize,
    pub queue_depth: usize,
    /// I/O size; 0 for redo means the 8k..64k mix.
    pub block: u64,
    pub write_pct: u32,
    pub duration_s: f64,
    pub warmup_s: f64,
    pub file_size: u64,
    pub workers: usize,
    /// directnfs connections per session.
    pub connections: usize,
    pub server_pid: Option<u32>,
    pub verify: bool,
    /// Emit progress lines on stderr.
    pub progress: bool,
    /// Completions each session waits for before refilling its queue.
    #[serde(default = "one")]
    pub reap_min: usize,
    /// redo: fsync after every this many writes (0 = never).
    #[serde(default)]
    pub fsync_every: usize,
}

fn one() -> usize {
    1
}

/// Latency summary of a run, in microseconds.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Latency {
    pub mean: f64,
    pub p50: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
    #[serde(default)]
    pub p90: f64,
    #[serde(default)]
    pub min: f64,
}

/// One entry of `runs` in the JSON contract (fields may be added, never
/// renamed).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RunResult {
    pub engine: String,
    pub sessions: usize,
    pub queue_depth: usize,
    pub ops: u64,
    pub iops: f64,
    pub mb_per_s: f64,
    pub errors: u64,
    pub latency_us: Latency,
    pub cpu_us_per_io: f64,
    pub cpu_s_per_gb: f64,
    pub server_cpu_us_per_io: Option<f64>,
    pub verify: Option<String>,
    // --- additions ---
    /// Measured window in seconds.
    pub elapsed_s: f64,
    pub bytes: u64,
    pub reads: u64,
    pub writes: u64,
    /// Client user and system CPU seconds over the window.
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    /// Context switches (voluntary + involuntary, getrusage) per I/O over
    /// the window: the wake-ups an I/O costs.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub csw_per_io: Option<f64>,
    pub server_cpu_s: Option<f64>,
    /// scan: workers, full passes completed, and seconds per pass.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub workers: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub passes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub scan_elapsed_s: Option<f64>,
    /// directnfs connections per session (libnfs: 1).
    pub connections: usize,
    /// What verification found, when it failed.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub verify_detail: Option<String>,
    /// The first I/O error, if any.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub first_error: Option<String>,
    /// How this engine does its I/O (e.g. "pread/pwrite through the page cache").
    pub note: String,
}

impl RunResult {
    /// The throughput figure that matters for the workload.
    pub fn headline(&self, workload: Workload) -> f64 {
        match workload {
            Workload::Scan => self.mb_per_s,
            _ => self.iops,
        }
    }
}

/// The worker's answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum WorkerReply {
    Ok(Box<RunResult>),
    /// The engine cannot run here (e.g. libnfs not installed).
    Skipped(String),
    Failed(String),
}
