//! The JSON report (docs/design.md "Machine-readable output", a contract: fields
//! may be added, never renamed) and the table printed on stdout.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::job::{RunResult, Workload};

/// `params` of the report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Params {
    pub sessions: usize,
    pub queue_depth: usize,
    /// I/O size in bytes (redo: 0 = the 8 KiB..64 KiB mix).
    pub block: u64,
    pub write_pct: u32,
    pub duration_s: f64,
    pub file_size: u64,
    pub target: Option<String>,
    // --- additions ---
    pub warmup_s: f64,
    pub engines: Vec<String>,
    pub workers: usize,
    pub max_sessions: usize,
    /// directnfs connections per session.
    pub connections: usize,
    pub local_path: Option<String>,
    pub server_pid: Option<u32>,
    pub verify: bool,
    pub repeat: usize,
    pub reap_min: usize,
    /// redo: fsync after every this many writes (0 = never).
    #[serde(default)]
    pub fsync_every: usize,
}

/// Ratios of one engine's figures over another's.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Ratio {
    pub iops: Option<f64>,
    pub mb_per_s: Option<f64>,
    pub latency_mean: Option<f64>,
    pub latency_p50: Option<f64>,
    pub latency_p99: Option<f64>,
    pub cpu_us_per_io: Option<f64>,
    pub cpu_s_per_gb: Option<f64>,
}

/// An engine that did not run, and why.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Skip {
    pub engine: String,
    pub reason: String,
}

/// The whole report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub workload: String,
    pub params: Params,
    pub runs: Vec<RunResult>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub iops_at_1ms: Option<BTreeMap<String, Option<f64>>>,
    // --- additions ---
    /// "directnfs/libnfs", "directnfs/local": same sessions, first match.
    pub ratios: BTreeMap<String, Ratio>,
    pub skipped: Vec<Skip>,
    pub failed: Vec<Skip>,
    /// How each engine does its I/O.
    pub engine_notes: BTreeMap<String, String>,
}

fn div(a: f64, b: f64) -> Option<f64> {
    (b > 0.0 && a.is_finite() && b.is_finite()).then(|| a / b)
}

pub fn ratio(a: &RunResult, b: &RunResult) -> Ratio {
    Ratio {
        iops: div(a.iops, b.iops),
        mb_per_s: div(a.mb_per_s, b.mb_per_s),
        latency_mean: div(a.latency_us.mean, b.latency_us.mean),
        latency_p50: div(a.latency_us.p50, b.latency_us.p50),
        latency_p99: div(a.latency_us.p99, b.latency_us.p99),
        cpu_us_per_io: div(a.cpu_us_per_io, b.cpu_us_per_io),
        cpu_s_per_gb: div(a.cpu_s_per_gb, b.cpu_s_per_gb),
    }
}

/// Ratios directnfs/libnfs and directnfs/local, at each sessions value
/// both have (the key carries "@N" for sweeps).
pub fn ratios(runs: &[RunResult], sweep: bool) -> BTreeMap<String, Ratio> {
    let mut out = BTreeMap::new();
    for other in ["libnfs", "local"] {
        for a in runs.iter().filter(|r| r.engine == "directnfs") {
            if let Some(b) = runs
                .iter()
                .find(|r| r.engine == other && r.sessions == a.sessions)
            {
                let key = if sweep {
                    format!("directnfs/{other}@{}", a.sessions)
                } else {
                    format!("directnfs/{other}")
                };
                out.insert(key, ratio(a, b));
            }
        }
    }
    out
}

/// Highest IOPS whose mean latency is at most 1 ms, per engine.
pub fn iops_at_1ms(runs: &[RunResult]) -> BTreeMap<String, Option<f64>> {
    let mut out: BTreeMap<String, Option<f64>> = BTreeMap::new();
    for r in runs {
        let e = out.entry(r.engine.clone()).or_insert(None);
        if r.errors == 0 && r.latency_us.mean <= 1000.0 && r.ops > 0 {
            *e = Some(e.map_or(r.iops, |v: f64| v.max(r.iops)));
        }
    }
    out
}

fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    if v >= 100.0 {
        format!("{:.0}", v)
    } else if v >= 10.0 {
        format!("{:.1}", v)
    } else {
        format!("{:.2}", v)
    }
}

fn fmt_ratio(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{x:.2}x"))
}

fn size_str(b: u64) -> String {
    if b == 0 {
        "8k..64k mix".into()
    } else if b >= 1 << 20 && b % (1 << 20) == 0 {
        format!("{} MiB", b >> 20)
    } else if b >= 1024 && b % 1024 == 0 {
        format!("{} KiB", b >> 10)
    } else {
        format!("{b} B")
    }
}

/// The text table.
pub fn table(rep: &Report) -> String {
    let p = &rep.params;
    let wl = rep.workload.as_str();
    let mut s = String::new();
    let shape = match wl {
        "scan" => format!(
            "{} worker(s) x {} in flight, {} reads",
            p.workers,
            p.queue_depth,
            size_str(p.block)
        ),
        "redo" if p.fsync_every > 0 => format!(
            "1 writer x {} in flight, sequential writes of {}, fsync every {} writes",
            p.queue_depth,
            size_str(p.block),
            p.fsync_every
        ),
        "redo" => format!(
            "1 writer x {} in flight, sequential FILE_SYNC writes of {}",
            p.queue_depth,
            size_str(p.block)
        ),
        "sweep" => format!(
            "sessions 1..{} x {} in flight, {} I/O, {}% writes",
            p.max_sessions,
            p.queue_depth,
            size_str(p.block),
            p.write_pct
        ),
        _ => format!(
            "{} sessions x {} in flight, {} I/O, {}% writes",
            p.sessions,
            p.queue_depth,
            size_str(p.block),
            p.write_pct
        ),
    };
    let _ = writeln!(
        s,
        "{wl}: {shape}; {}s measured after {}s warm-up; file {} MiB",
        p.duration_s,
        p.warmup_s,
        p.file_size >> 20
    );
    let scan = wl == "scan";
    let _ = writeln!(
        s,
        "{:<10} {:>4} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>7} {:>9}{} {:>6} {:>6}",
        "engine",
        "sess",
        "ops",
        "IOPS",
        "MB/s",
        "mean",
        "p50",
        "p99",
        "p99.9",
        "max",
        "cpu/IO",
        "cpu s/GB",
        "csw/IO",
        "srv/IO",
        if scan { "  s/pass" } else { "" },
        "errors",
        "verify"
    );
    let _ = writeln!(
        s,
        "{:<10} {:>4} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>7} {:>9}{} {:>6} {:>6}",
        "", "", "", "", "", "us", "us", "us", "us", "us", "us", "", "", "us", if scan { "        " } else { "" }, "", ""
    );
    for r in &rep.runs {
        let _ = writeln!(
            s,
            "{:<10} {:>4} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>7} {:>9}{} {:>6} {:>6}",
            r.engine,
            r.sessions,
            r.ops,
            fmt_num(r.iops),
            fmt_num(r.mb_per_s),
            fmt_num(r.latency_us.mean),
            fmt_num(r.latency_us.p50),
            fmt_num(r.latency_us.p99),
            fmt_num(r.latency_us.p999),
            fmt_num(r.latency_us.max),
            fmt_num(r.cpu_us_per_io),
            fmt_num(r.cpu_s_per_gb),
            r.csw_per_io.map_or("-".into(), |v| format!("{v:.2}")),
            r.server_cpu_us_per_io.map_or("-".into(), fmt_num),
            if scan {
                format!("{:>8}", r.scan_elapsed_s.map_or("-".into(), |v| format!("{v:.3}")))
            } else {
                String::new()
            },
            r.errors,
            r.verify.as_deref().unwrap_or("-"),
        );
    }
    for sk in &rep.skipped {
        let _ = writeln!(s, "{:<10} skipped: {}", sk.engine, sk.reason);
    }
    for f in &rep.failed {
        let _ = writeln!(s, "{:<10} FAILED: {}", f.engine, f.reason);
    }
    if !rep.ratios.is_empty() {
        let _ = writeln!(s);
        // "directnfs/libnfs@16" after "@2": order by engine, then sessions
        let mut keys: Vec<(&String, &Ratio)> = rep.ratios.iter().collect();
        keys.sort_by_key(|(k, _)| {
            let (name, n) = k.split_once('@').unwrap_or((k.as_str(), "0"));
            (name.to_string(), n.parse::<u64>().unwrap_or(0))
        });
        for (k, r) in keys {
            let _ = writeln!(
                s,
                "{k:<22} IOPS {:>7}  MB/s {:>7}  mean lat {:>7}  p50 {:>7}  p99 {:>7}  cpu/IO {:>7}  cpu/GB {:>7}",
                fmt_ratio(r.iops),
                fmt_ratio(r.mb_per_s),
                fmt_ratio(r.latency_mean),
                fmt_ratio(r.latency_p50),
                fmt_ratio(r.latency_p99),
                fmt_ratio(r.cpu_us_per_io),
                fmt_ratio(r.cpu_s_per_gb),
            );
        }
    }
    if let Some(m) = &rep.iops_at_1ms {
        let _ = writeln!(s);
        let _ = write!(s, "IOPS at 1 ms mean latency:");
        for (e, v) in m {
            let _ = write!(s, "  {e} {}", v.map_or("none".into(), fmt_num));
        }
        let _ = writeln!(s);
        if let (Some(Some(a)), Some(Some(b))) = (m.get("directnfs"), m.get("libnfs")) {
            let _ = writeln!(s, "  directnfs/libnfs {}", fmt_ratio(div(*a, *b)));
        }
    }
    let _ = writeln!(s);
    for (e, n) in &rep.engine_notes {
        let _ = writeln!(s, "  {e}: {n}");
    }
    let _ = writeln!(
        s,
        "  latency per I/O from submission to completion; cpu/IO = client user+sys CPU (getrusage, measured window, own process) per I/O; csw/IO = its context switches per I/O; srv/IO = server CPU per I/O (--server-pid); MB/s = 10^6 bytes/s"
    );
    s
}

/// `true` when every run is clean (no errors, verify not failed, none failed).
pub fn all_ok(rep: &Report) -> bool {
    rep.failed.is_empty()
        && rep
            .runs
            .iter()
            .all(|r| r.errors == 0 && r.verify.as_deref() != Some("failed"))
}

/// For median-of-N: the run with the median headline figure.
pub fn median_run(mut runs: Vec<RunResult>, workload: Workload) -> Option<RunResult> {
    if runs.is_empty() {
        return None;
    }
    runs.sort_by(|a, b| {
        a.headline(workload)
            .partial_cmp(&b.headline(workload))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    // errors and failed verification must not be hidden by the median
    let errors: u64 = runs.iter().map(|r| r.errors).sum();
    let failed = runs
        .iter()
        .find(|r| r.verify.as_deref() == Some("failed"))
        .cloned();
    let mid = runs.len() / 2;
    let mut m = runs.swap_remove(mid);
    m.errors = m.errors.max(errors);
    if let Some(f) = failed {
        m.verify = f.verify;
        m.verify_detail = f.verify_detail;
    }
    Some(m)
}
