//! `dnfs stats`: the statistics every directnfs process of this host
//! publishes (the v$dnfs views), once or every few seconds.

use std::io::Write;
use std::time::{Duration, Instant};

use directnfs::publish;
use directnfs::stats::{HostStats, StatsFormat};

use super::rates;
use crate::error::{CliError, Result};

/// Options of `dnfs stats`.
#[derive(Debug, clap::Args)]
pub struct StatsArgs {
    /// Only this process.
    #[arg(long, value_name = "PID")]
    pub pid: Option<u32>,
    /// The model as JSON (`processes[].stats` is what `Client::stats`
    /// returns); with --watch, one line of rates per interval.
    #[arg(long, conflicts_with = "prometheus")]
    pub json: bool,
    /// Prometheus text exposition (what `dnfs exporter` serves).
    #[arg(long, conflicts_with = "watch")]
    pub prometheus: bool,
    /// Print rates (IOPS, MB/s, latency) every SECONDS instead of totals.
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds)]
    pub watch: Option<Duration>,
    /// With --watch: stop after this many intervals.
    #[arg(long, value_name = "N", requires = "watch")]
    pub count: Option<u64>,
    /// With --watch: show channels too.
    #[arg(long, requires = "watch")]
    pub channels: bool,
}

/// A duration in seconds, fractions allowed (`0.5`), 0.1 s to one day.
pub fn parse_seconds(s: &str) -> std::result::Result<Duration, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    if !(0.1..=86_400.0).contains(&v) {
        return Err(format!("{s} is outside 0.1..=86400 seconds"));
    }
    Ok(Duration::from_secs_f64(v))
}

/// Runs `dnfs stats`. Fails when `--pid` names no readable process.
pub fn run(args: &StatsArgs) -> Result<()> {
    match args.watch {
        None => once(args),
        Some(every) => watch(args, every),
    }
}

fn read(args: &StatsArgs) -> Result<HostStats> {
    let host = publish::read_host(args.pid);
    if let Some(pid) = args.pid {
        if host.processes.is_empty() {
            let why = host
                .unreadable
                .first()
                .map_or_else(String::new, |(_, why)| format!(": {why}"));
            return Err(CliError::msg(format!(
                "process {pid} publishes no statistics this user may read{why}"
            )));
        }
    }
    Ok(host)
}

fn once(args: &StatsArgs) -> Result<()> {
    let host = read(args)?;
    let format = if args.json {
        StatsFormat::Json
    } else if args.prometheus {
        StatsFormat::Prometheus
    } else {
        StatsFormat::Text
    };
    let mut text = format
        .render_host(&host)
        .map_err(|e| CliError::msg(e.to_string()))?;
    if !text.ends_with('\n') {
        text.push('\n');
    }
    print(&text)
}

fn watch(args: &StatsArgs, every: Duration) -> Result<()> {
    let mut prev = read(args)?;
    let mut at = Instant::now();
    let mut n = 0u64;
    loop {
        std::thread::sleep(every.saturating_sub(at.elapsed()));
        let cur = read(args)?;
        let now = Instant::now();
        let r = rates::between(&prev, &cur, now.duration_since(at).as_secs_f64());
        let text = if args.json {
            let line = serde_json::json!({
                "unix_ms": cur.processes.iter().map(|p| p.taken_unix_ms).max(),
                "rates": r,
            });
            format!("{line}\n")
        } else {
            format!(
                "--- {} processes, {:.1} s ---\n{}",
                r.processes,
                r.interval_s,
                rates::render(&r, 10, args.channels)
            )
        };
        print(&text)?;
        n += 1;
        if args.count.is_some_and(|c| n >= c) {
            return Ok(());
        }
        (prev, at) = (cur, now);
    }
}

fn print(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(CliError::stdout)
}
