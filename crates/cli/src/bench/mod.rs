//! `dnfs bench oltp | scan | redo | sweep | mixed | hedge`: a SLOB-style database I/O
//! benchmark that runs the same workload through directnfs, libnfs (loaded
//! at run time) and the local file system, side by side.
//!
//! The parent process parses the options, prepares the data file, then runs
//! every engine in its own child process (`dnfs bench worker`, hidden), which
//! reads a job as JSON on stdin and prints its result as JSON on stdout. So
//! the CPU time billed to an engine (getrusage over the measured window) is
//! that engine's work only. The parent prints the table, writes the JSON
//! (docs/design.md "Machine-readable output") and draws the plots.

pub mod block;
mod driver;
mod engines;
mod hedge;
mod job;
mod mixed;
mod parent;
mod plot;
mod prepare;
mod report;
mod responder;
mod worker;

use std::process::ExitCode;

pub use job::Workload;

/// `dnfs bench ...`
#[derive(Debug, clap::Args)]
#[command(about = "Database I/O benchmark: directnfs vs libnfs vs the local file system")]
pub struct BenchArgs {
    #[command(subcommand)]
    pub command: BenchCommand,
}

/// The workloads (and the hidden worker used for child processes).
#[derive(Debug, clap::Subcommand)]
pub enum BenchCommand {
    /// Random 8 KiB reads and writes by N sessions with Q I/Os in flight each.
    Oltp(Box<BenchOpts>),
    /// Parallel full scan: P workers read disjoint ranges with 1 MiB I/O.
    Scan(Box<BenchOpts>),
    /// Log writer: one writer, sequential synchronous writes.
    Redo(Box<BenchOpts>),
    /// oltp at 1, 2, 4 .. --max-sessions sessions: the IOPS/latency curve.
    Sweep(Box<BenchOpts>),
    /// redo + oltp + scan at once in one process, on one mount: latency per
    /// I/O class, with `io_classes` off then on, then through libnfs.
    Mixed(Box<BenchOpts>),
    /// Random 8 KiB reads, one in flight per session, with `hedge` off
    /// then on (directnfs only; make one path of the target slow first).
    Hedge(Box<BenchOpts>),
    /// Internal: runs one engine for the parent (job on stdin, JSON on stdout).
    #[command(hide = true, name = "worker")]
    Worker,
    /// A minimal in-memory NFSv3 responder for measuring the client's own
    /// cost (benchmarking only: WRITEs are discarded; not a file server).
    Responder(responder::ResponderArgs),
}

/// Options shared by every workload.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchOpts {
    // The help is an attribute, not a doc comment: rustdoc would read
    // `[:port]` as a link, and clap shows a doc comment's escapes as written.
    #[arg(
        long,
        short = 't',
        help = "The data file: nfs://host[:port]/export/file?nfsport=..&mountport=.. \
                or a path under a dnfstab mount: prefix (created and filled by the \
                bench if missing; redo uses FILE.redo)"
    )]
    pub target: Option<String>,
    /// Data file size (k/m/g suffixes); default 1g.
    #[arg(long, default_value = "1g", value_parser = parse_size)]
    pub size: u64,
    /// Sessions (database processes), each with its own connection(s).
    /// Default 2 (oltp), 1 (redo). For sweep: see --max-sessions.
    #[arg(long, short = 's')]
    pub sessions: Option<usize>,
    /// Asynchronous I/Os kept in flight per session (per worker for scan).
    /// Default 16 (oltp), 8 (sweep), 4 (scan), 1 (redo).
    #[arg(long, short = 'q')]
    pub queue_depth: Option<usize>,
    /// I/O size (k/m suffixes). Default 8k (oltp, sweep), 1m (scan), and for
    /// redo a random mix of 8k..64k unless given.
    #[arg(long, value_parser = parse_size)]
    pub block: Option<u64>,
    /// Percentage of writes (oltp, sweep).
    #[arg(long, default_value_t = 25)]
    pub write_pct: u32,
    /// Measured seconds per run. Default 10 (oltp, redo), 5 (scan, each
    /// sweep step). Scan repeats full passes until this is reached (0 = one
    /// pass).
    #[arg(long, short = 'd')]
    pub duration: Option<f64>,
    /// Seconds of unmeasured warm-up before each run. Default 2 (oltp), 1.
    #[arg(long, short = 'w')]
    pub warmup: Option<f64>,
    /// Engines to run one after the other: directnfs,libnfs,local.
    #[arg(long, short = 'e', default_value = "directnfs,libnfs,local")]
    pub engine: String,
    /// Write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
    /// Draw the results into this .svg or .png file.
    #[arg(long)]
    pub plot: Option<std::path::PathBuf>,
    /// After each run, read the whole file back and prove every block holds
    /// what was last written to it.
    #[arg(long)]
    pub verify: bool,
    /// PID of the NFS server: adds server CPU per I/O (from /proc/PID/stat).
    #[arg(long)]
    pub server_pid: Option<u32>,
    /// The same data file as the local file system sees it (for `local`).
    #[arg(long)]
    pub local_path: Option<std::path::PathBuf>,
    /// Scan workers (parallel query slaves).
    #[arg(long, short = 'p', default_value_t = 1)]
    pub workers: usize,
    /// Sweep: the largest number of sessions (1, 2, 4 .. this).
    #[arg(long, default_value_t = 16)]
    pub max_sessions: usize,
    /// directnfs connections per session. Default: the URL's
    /// `connections=` or the dnfstab's `connections:`, else 2 (scan 4,
    /// redo 1). libnfs always has one per session.
    #[arg(long)]
    pub connections: Option<usize>,
    /// Repeat each engine's run this many times (interleaved) and report the
    /// run with the median IOPS (MB/s for scan).
    #[arg(long, default_value_t = 1)]
    pub repeat: usize,
    /// Completions a session waits for before refilling its queue (the
    /// `min` of aio_waitn; 1 = refill as soon as anything completes).
    #[arg(long, default_value_t = 1)]
    pub reap_min: usize,
    /// redo: call fsync after every N writes (0 = never; writes are then
    /// durable one by one: FILE_SYNC, O_DSYNC). With N > 0 directnfs writes
    /// through `File::write_at` (in `stable=unstable` mode with
    /// write-behind, as the URL says: it returns once the WRITE is sent)
    /// and `fsync` is the barrier; the local engine writes to the page
    /// cache and calls fdatasync. Not for libnfs. The IOPS include the
    /// fsyncs; the latency is the writes'.
    #[arg(long, default_value_t = 0)]
    pub fsync_every: usize,
    /// Quiet: no progress line.
    #[arg(long)]
    pub quiet: bool,
    /// mixed: run the redo writer's thread SCHED_FIFO (priority 10; needs
    /// CAP_SYS_NICE), to see how much of its tail is the wait for a CPU.
    #[arg(long)]
    pub log_fifo: bool,
    /// The dnfstab given with the global `--config` (set by `run`).
    #[arg(skip)]
    pub config: Option<std::path::PathBuf>,
}

/// Parses `8192`, `8k`, `64m`, `1g`, `1GiB`, `512b`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let mut t = s.trim().to_ascii_lowercase();
    if let Some(r) = t.strip_suffix("ib") {
        t = r.to_string();
    } else if let Some(r) = t.strip_suffix('b') {
        t = r.to_string();
    }
    let t = t.as_str();
    let (num, mult) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 1u64 << 10),
        Some('m') => (&t[..t.len() - 1], 1 << 20),
        Some('g') => (&t[..t.len() - 1], 1 << 30),
        Some('t') => (&t[..t.len() - 1], 1 << 40),
        _ => (t, 1),
    };
    let n: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("invalid size {s:?} (use e.g. 8192, 8k, 64m, 1g)"))?;
    if !(n >= 0.0 && n.is_finite()) {
        return Err(format!("invalid size {s:?}"));
    }
    Ok((n * mult as f64).round() as u64)
}

/// Runs `dnfs bench ...`; the exit code is non-zero when a run failed, had
/// I/O errors or failed verification.
pub fn run(args: BenchArgs, config: Option<std::path::PathBuf>) -> ExitCode {
    let with = |mut o: Box<BenchOpts>| {
        o.config = config.clone();
        *o
    };
    let result = match args.command {
        BenchCommand::Worker => return worker::main(),
        BenchCommand::Responder(a) => return responder::main(a),
        BenchCommand::Oltp(o) => parent::run(Workload::Oltp, with(o)),
        BenchCommand::Scan(o) => parent::run(Workload::Scan, with(o)),
        BenchCommand::Redo(o) => parent::run(Workload::Redo, with(o)),
        BenchCommand::Sweep(o) => parent::run(Workload::Sweep, with(o)),
        BenchCommand::Mixed(o) => mixed::run(with(o)),
        BenchCommand::Hedge(o) => hedge::run(with(o)),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("dnfs bench: {e}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("8192"), Ok(8192));
        assert_eq!(parse_size("8k"), Ok(8192));
        assert_eq!(parse_size("8K"), Ok(8192));
        assert_eq!(parse_size("64m"), Ok(64 << 20));
        assert_eq!(parse_size("1g"), Ok(1 << 30));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("1gb"), Ok(1 << 30));
        assert_eq!(parse_size("512b"), Ok(512));
        assert_eq!(parse_size("0.5k"), Ok(512));
        assert!(parse_size("x").is_err());
        assert!(parse_size("-1k").is_err());
    }
}
