//! `dnfs bench hedge`: hedged reads side by side (issue 33 §2). Random
//! 8 KiB reads by `--sessions` threads, one read in flight each, first on
//! a mount of the target's first path alone (`healthy`: the reference the
//! issue's aim is against, so make a later path the slow one), then on one
//! of all its paths with `hedge=off`, then with `hedge=on`, in the same run;
//! per phase the latency percentiles, and the hedges sent and won (the
//! server's extra READs). The target is a multipath one (a dnfstab with two
//! `path:` lines or more): make one path slow outside (`tc ... tbf` on its
//! interface; `scripts/server/netns.sh rate K MBIT` in the test topology)
//! and compare. directnfs only.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use directnfs::{Client, File};

use super::BenchOpts;

/// A row of the table: one phase.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Row {
    /// `healthy` (the first path alone, hedge off), `off` or `on`.
    pub hedge: &'static str,
    pub ops: usize,
    pub iops: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    /// Second copies sent while measuring.
    pub hedges_sent: u64,
    /// Of those, answered before the first copy.
    pub hedges_won: u64,
    pub errors: u64,
}

/// Runs the hedged-read benchmark; `Ok(false)` when any read failed.
pub fn run(o: BenchOpts) -> Result<bool, String> {
    let url = o.target.clone().ok_or("hedge needs --target")?;
    let config = o
        .config
        .as_ref()
        .and_then(|p| p.to_str())
        .map(str::to_string);
    let size = o.size;
    let data = super::prepare::prepare_nfs(&url, config.as_deref(), size, true, "", o.quiet)?;
    let rel = data.rel_path.ok_or("no data file path")?;
    let duration = Duration::from_secs_f64(o.duration.unwrap_or(10.0));
    let warmup = Duration::from_secs_f64(o.warmup.unwrap_or(1.0));
    let sessions = o.sessions.unwrap_or(1).max(1);
    let connections = o.connections.unwrap_or(1).max(1);
    eprintln!(
        "hedge: {sessions} session(s) x 1 random 8k read in flight | {connections} connection(s) \
         per path | {:.0} s each, the first path alone, then all with hedge=off, then on",
        duration.as_secs_f64()
    );
    let mut rows = Vec::new();
    for (name, on) in [("healthy", false), ("off", false), ("on", true)] {
        let mut target = super::engines::target_of(&url, config.as_deref())?;
        if target.paths.len() < 2 {
            if name == "healthy" {
                eprintln!("hedge: the target has one path: hedges go to its other connections");
            }
        } else if name == "healthy" {
            target.paths.truncate(1);
        }
        target.options.connections = connections;
        target.options.hedge = Some(on);
        let client = Client::mount(&target).map_err(|e| format!("mount {url}: {e}"))?;
        let file = client.open(&rel).map_err(|e| format!("open {rel}: {e}"))?;
        rows.push(phase(
            &client, &file, name, size, sessions, warmup, duration,
        ));
    }
    print_table(&rows);
    if let Some(path) = &o.json {
        let text = serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())?;
        std::fs::write(path, text).map_err(|e| format!("write {}: {e}", path.display()))?;
    }
    Ok(rows.iter().all(|r| r.errors == 0))
}

/// One phase: `sessions` readers for `warmup` (not counted) then
/// `duration`.
fn phase(
    client: &Client,
    file: &File,
    name: &'static str,
    size: u64,
    sessions: usize,
    warmup: Duration,
    duration: Duration,
) -> Row {
    let stop = AtomicBool::new(false);
    let measuring = AtomicBool::new(false);
    let out = Mutex::new((Vec::<u64>::new(), 0u64));
    let mut before = (0, 0);
    std::thread::scope(|s| {
        for seed in 0..sessions {
            let (stop, measuring, out) = (&stop, &measuring, &out);
            s.spawn(move || reader(file, size, seed as u64, stop, measuring, out));
        }
        std::thread::sleep(warmup);
        before = hedges(client);
        measuring.store(true, Ordering::SeqCst);
        std::thread::sleep(duration);
        measuring.store(false, Ordering::SeqCst);
        stop.store(true, Ordering::SeqCst);
    });
    let after = hedges(client);
    let (mut lat, errors) = out.into_inner().unwrap_or_else(|p| p.into_inner());
    lat.sort_unstable();
    let pct = |p: f64| -> f64 {
        if lat.is_empty() {
            return 0.0;
        }
        let i = ((lat.len() as f64 * p).ceil() as usize).clamp(1, lat.len()) - 1;
        lat[i] as f64 / 1000.0
    };
    Row {
        hedge: name,
        ops: lat.len(),
        iops: lat.len() as f64 / duration.as_secs_f64().max(1e-9),
        p50_us: pct(0.50),
        p99_us: pct(0.99),
        p999_us: pct(0.999),
        // Hedges of reads still in flight when measuring stopped count
        // too: a read or two at most per session.
        hedges_sent: after.0.saturating_sub(before.0),
        hedges_won: after.1.saturating_sub(before.1),
        errors,
    }
}

fn reader(
    file: &File,
    size: u64,
    seed: u64,
    stop: &AtomicBool,
    measuring: &AtomicBool,
    out: &Mutex<(Vec<u64>, u64)>,
) {
    let mut buf = vec![0u8; 8192];
    let mut rng = 0x9e37_79b9_7f4a_7c15u64 ^ (seed + 1);
    let blocks = (size / 8192).max(1);
    let mut lat = Vec::with_capacity(1 << 16);
    let mut errors = 0u64;
    while !stop.load(Ordering::Relaxed) {
        // xorshift64*: reproducible offsets per session.
        rng ^= rng >> 12;
        rng ^= rng << 25;
        rng ^= rng >> 27;
        let off = rng.wrapping_mul(0x2545_f491_4f6c_dd1d) % blocks * 8192;
        let t = Instant::now();
        let r = file.read_at(&mut buf, off);
        let ns = t.elapsed().as_nanos() as u64;
        match r {
            Ok(_) if measuring.load(Ordering::Relaxed) => lat.push(ns),
            Ok(_) => {}
            Err(e) => {
                errors += 1;
                if errors == 1 {
                    eprintln!("hedge: read failed: {e}");
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
    let mut out = out.lock().unwrap_or_else(|p| p.into_inner());
    out.0.append(&mut lat);
    out.1 += errors;
}

/// Hedges sent and won so far by `client`.
fn hedges(client: &Client) -> (u64, u64) {
    client.stats().servers.iter().fold((0, 0), |(a, b), s| {
        (a + s.totals.hedges_sent, b + s.totals.hedges_won)
    })
}

fn print_table(rows: &[Row]) {
    println!(
        "{:<8} {:>8} {:>9} {:>9} {:>9} {:>10} {:>8} {:>8} {:>7}",
        "hedge", "ops", "IOPS", "p50 us", "p99 us", "p99.9 us", "hedges", "won", "extra"
    );
    for r in rows {
        println!(
            "{:<8} {:>8} {:>9.0} {:>9.0} {:>9.0} {:>10.0} {:>8} {:>8} {:>6.1}%",
            r.hedge,
            r.ops,
            r.iops,
            r.p50_us,
            r.p99_us,
            r.p999_us,
            r.hedges_sent,
            r.hedges_won,
            r.hedges_sent as f64 * 100.0 / r.ops.max(1) as f64
        );
    }
    if let [healthy, off, on] = rows {
        if on.p99_us > 0.0 && healthy.p99_us > 0.0 {
            println!(
                "hedge: p99 off / on = {:.0} / {:.0} us = {:.2}x; on / healthy path alone = {:.2}x \
                 (aim: 1.5x or less)",
                off.p99_us,
                on.p99_us,
                off.p99_us / on.p99_us,
                on.p99_us / healthy.p99_us
            );
        }
    }
}
