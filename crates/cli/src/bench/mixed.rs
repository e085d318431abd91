//! `dnfs bench mixed`: the log lane's proof (issue 33 §1). In one process,
//! on one mount, at once: a redo writer (one write at a time, FILE_SYNC,
//! 8-64 KiB), OLTP sessions (random 8 KiB, 75% reads) and a scan (workers
//! reading 1 MiB pieces, `--queue-depth` in flight each). Each class's
//! latency is reported, with the redo writer alone as the reference, once
//! with `io_classes=off` and once with it on, in the same run.
//!
//! The redo file is the log class (`File::set_io_class`), the OLTP file
//! handle data and the scan's bulk; with classes off the engine treats
//! them all as data (`directnfs_engine::class`).
//!
//! Where the log's tail goes: for each log write the redo thread's own
//! wait for a CPU during it (the run-queue delay of
//! `/proc/thread-self/schedstat`), and over each phase the run-queue delay
//! of all the bench's threads and, with `--server-pid`, of the server's
//! (`/proc/PID/task/*/schedstat`), printed after the table. `--log-fifo`
//! runs the redo thread SCHED_FIFO.
//!
//! With `libnfs` among `--engine` (the default) and libnfs loadable, the
//! same mix runs a third time through libnfs for reference: its async API,
//! one context (one connection) per thread, as `dnfs bench oltp` runs it,
//! the redo file opened O_SYNC (FILE_SYNC writes). It has no classes; each
//! thread having its own connection, the log never shares a socket.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use directnfs::{Client, File, IoClass};

use super::engines::{self, Kind, Session};
use super::job::{Engine, Job, Location, Workload};
use super::BenchOpts;

/// One phase's samples per class (nanoseconds), and bytes moved.
#[derive(Debug, Default)]
struct Samples {
    lat: [Vec<u64>; 3],
    /// Per log write (as `lat[log]`): the redo thread's run-queue delay
    /// during it.
    log_wait: Vec<u64>,
    /// Run-queue delay over the measured time: the bench's threads, the
    /// server's (`--server-pid`).
    self_wait_ns: u64,
    server_wait_ns: Option<u64>,
    bytes: [u64; 3],
    errors: u64,
}

/// A row of the table: one class in one phase.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Row {
    /// `off` or `on`.
    pub classes: &'static str,
    /// `alone` (the redo writer only) or `mixed`.
    pub load: &'static str,
    /// `log`, `data` or `bulk`.
    pub class: &'static str,
    pub ops: usize,
    pub iops: f64,
    pub mb_s: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
}

/// Runs the mixed benchmark; `Ok(false)` when any I/O failed.
pub fn run(o: BenchOpts) -> Result<bool, String> {
    let url = o.target.clone().ok_or("mixed needs --target")?;
    let config = o
        .config
        .as_ref()
        .and_then(|p| p.to_str())
        .map(str::to_string);
    let size = o.size;
    let data = super::prepare::prepare_nfs(&url, config.as_deref(), size, true, "", o.quiet)?;
    let redo_size: u64 = 64 << 20;
    super::prepare::prepare_nfs(&url, config.as_deref(), redo_size, false, ".redo", o.quiet)?;
    let rel = data.rel_path.clone().ok_or("no data file path")?;
    let duration = Duration::from_secs_f64(o.duration.unwrap_or(10.0));
    let warmup = Duration::from_secs_f64(o.warmup.unwrap_or(1.0));
    let sessions = o.sessions.unwrap_or(4).max(1);
    let workers = o.workers.max(1);
    let depth = o.queue_depth.unwrap_or(4).max(1);
    let scan_block = o.block.unwrap_or(1 << 20).clamp(4096, 1 << 20) as usize;
    let connections = o.connections.unwrap_or(4).max(1);
    eprintln!(
        "mixed: redo 1 writer FILE_SYNC 8-64k | oltp {sessions} sessions 8k {}% writes | \
         scan {workers} workers x {depth} x {} KiB | {connections} connections | {:.0} s each",
        o.write_pct,
        scan_block >> 10,
        duration.as_secs_f64()
    );
    let mut rows = Vec::new();
    let mut waits = Vec::new();
    let mut ok = true;
    for on in [false, true] {
        let mut target = super::engines::target_of(&url, config.as_deref())?;
        target.options.connections = connections;
        target.options.io_classes = on;
        let client = Client::mount(&target).map_err(|e| format!("mount {url}: {e}"))?;
        let label = if on { "on" } else { "off" };
        let plan = Plan {
            client: &client,
            rel: &rel,
            size,
            redo_size,
            sessions,
            workers,
            depth,
            scan_block,
            write_pct: o.write_pct,
            log_fifo: o.log_fifo,
            server_pid: o.server_pid,
        };
        for mixed in [false, true] {
            let s = plan.phase(mixed, warmup, duration)?;
            ok &= record(&mut rows, &mut waits, label, mixed, &s, duration);
        }
    }
    if o.engine.split(',').any(|e| e.trim() == "libnfs") {
        match engines::probe_libnfs() {
            Err(e) => eprintln!("mixed: libnfs not run: {e}"),
            Ok(()) => {
                let target = super::engines::target_of(&url, config.as_deref())?;
                let loc = Location {
                    url: Some(url.clone()),
                    config: config.clone(),
                    host: target.paths.first().map(|p| p.server.clone()),
                    nfs_port: target.options.nfs_port,
                    mount_port: target.options.mount_port,
                    uid: target.options.uid,
                    gid: target.options.gid,
                    export: data.export.clone(),
                    rel_path: Some(rel.clone()),
                    local_path: None,
                };
                let lib = LibPlan {
                    loc,
                    size,
                    redo_size,
                    sessions,
                    workers,
                    depth,
                    scan_block,
                    write_pct: o.write_pct,
                    log_fifo: o.log_fifo,
                    server_pid: o.server_pid,
                };
                for mixed in [false, true] {
                    let s = lib.phase(mixed, warmup, duration);
                    ok &= record(&mut rows, &mut waits, "libnfs", mixed, &s, duration);
                }
            }
        }
    }
    print_table(&rows);
    for w in &waits {
        println!("{w}");
    }
    if let Some(path) = &o.json {
        let text = serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())?;
        std::fs::write(path, text).map_err(|e| format!("write {}: {e}", path.display()))?;
    }
    Ok(ok)
}

struct Plan<'a> {
    client: &'a Client,
    rel: &'a str,
    size: u64,
    redo_size: u64,
    sessions: usize,
    workers: usize,
    depth: usize,
    scan_block: usize,
    write_pct: u32,
    log_fifo: bool,
    server_pid: Option<u32>,
}

impl Plan<'_> {
    fn open(&self, path: &str, class: IoClass) -> Result<File, String> {
        let f = self
            .client
            .open(path)
            .map_err(|e| format!("open {path}: {e}"))?;
        f.set_io_class(class);
        Ok(f)
    }

    /// One phase: the redo writer, and with `mixed` the OLTP sessions and
    /// the scan, for `warmup` (not counted) then `duration`.
    fn phase(&self, mixed: bool, warmup: Duration, duration: Duration) -> Result<Samples, String> {
        let redo = self.open(&format!("{}.redo", self.rel), IoClass::Log)?;
        redo.set_sync_writes(true);
        let oltp = self.open(self.rel, IoClass::Data)?;
        let scan = self.open(self.rel, IoClass::Bulk)?;
        let stop = AtomicBool::new(false);
        let measuring = AtomicBool::new(false);
        let out = Mutex::new(Samples::default());
        let next_scan = AtomicU64::new(0);
        let ctx = Ctx {
            stop: &stop,
            measuring: &measuring,
            out: &out,
            log_fifo: self.log_fifo,
        };
        let mut waited = (0, None);
        std::thread::scope(|s| {
            let ctx = &ctx;
            s.spawn(|| ctx.redo(&redo, self.redo_size));
            if mixed {
                for seed in 0..self.sessions {
                    let oltp = &oltp;
                    s.spawn(move || ctx.oltp(oltp, self.size, self.write_pct, seed as u64));
                }
                for _ in 0..self.workers {
                    let (scan, next) = (&scan, &next_scan);
                    s.spawn(move || ctx.scan(scan, self.size, self.scan_block, self.depth, next));
                }
            }
            waited = ctx.measure(warmup, duration, self.server_pid);
        });
        let mut s = out.into_inner().unwrap_or_else(|p| p.into_inner());
        (s.self_wait_ns, s.server_wait_ns) = waited;
        Ok(s)
    }
}

/// The same mix through libnfs (see the module doc).
struct LibPlan {
    loc: Location,
    size: u64,
    redo_size: u64,
    sessions: usize,
    workers: usize,
    depth: usize,
    scan_block: usize,
    write_pct: u32,
    log_fifo: bool,
    server_pid: Option<u32>,
}

impl LibPlan {
    /// A libnfs session of `depth` slots of `buf` bytes on the data file,
    /// or the redo file (`redo`).
    fn open(&self, redo: bool, depth: usize, buf: usize) -> Result<Box<dyn Session>, String> {
        let mut loc = self.loc.clone();
        if redo {
            loc.rel_path = loc.rel_path.map(|r| format!("{r}.redo"));
        }
        let job = Job {
            workload: if redo { Workload::Redo } else { Workload::Oltp },
            engine: Engine::Libnfs,
            loc,
            sessions: 1,
            queue_depth: depth,
            block: buf as u64,
            write_pct: self.write_pct,
            duration_s: 0.0,
            warmup_s: 0.0,
            file_size: self.size,
            workers: 1,
            connections: 1,
            server_pid: None,
            verify: false,
            progress: false,
            reap_min: 1,
            fsync_every: 0,
        };
        engines::open(&job, depth, buf)
    }

    fn phase(&self, mixed: bool, warmup: Duration, duration: Duration) -> Samples {
        let stop = AtomicBool::new(false);
        let measuring = AtomicBool::new(false);
        let out = Mutex::new(Samples::default());
        let next_scan = AtomicU64::new(0);
        let ctx = Ctx {
            stop: &stop,
            measuring: &measuring,
            out: &out,
            log_fifo: self.log_fifo,
        };
        let mut waited = (0, None);
        let failed = |ctx: &Ctx, e: String| {
            eprintln!("mixed: libnfs: {e}");
            ctx.out.lock().unwrap_or_else(|p| p.into_inner()).errors += 1;
        };
        std::thread::scope(|s| {
            let ctx = &ctx;
            s.spawn(move || match self.open(true, 1, 64 << 10) {
                Ok(mut session) => {
                    let mut rng = Rng(0x0123_4567);
                    let mut off = 0u64;
                    ctx.redo_with(|| {
                        let len = 8192 * (1 + rng.below(8)) as usize;
                        if off + len as u64 > self.redo_size {
                            off = 0;
                        }
                        let n = one(&mut *session, Kind::Write, off, len)?;
                        off += len as u64;
                        Ok(n)
                    });
                }
                Err(e) => failed(ctx, e),
            });
            if mixed {
                for seed in 0..self.sessions {
                    s.spawn(move || match self.open(false, 1, 8192) {
                        Ok(mut session) => {
                            let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (seed as u64 + 1));
                            let blocks = (self.size / 8192).max(1);
                            ctx.each(IoClass::Data, || {
                                let off = rng.below(blocks) * 8192;
                                let kind = if (rng.below(100) as u32) < self.write_pct {
                                    Kind::Write
                                } else {
                                    Kind::Read
                                };
                                one(&mut *session, kind, off, 8192)
                            });
                        }
                        Err(e) => failed(ctx, e),
                    });
                }
                for _ in 0..self.workers {
                    let next = &next_scan;
                    s.spawn(
                        move || match self.open(false, self.depth, self.scan_block) {
                            Ok(mut session) => {
                                let len = (self.scan_block * self.depth) as u64;
                                ctx.each(IoClass::Bulk, || {
                                    let off =
                                        next.fetch_add(len, Ordering::Relaxed) % self.size.max(1);
                                    let mut n = 0;
                                    for slot in 0..self.depth {
                                        let at = off + (slot * self.scan_block) as u64;
                                        if at >= self.size {
                                            break;
                                        }
                                        let piece = (self.size - at).min(self.scan_block as u64);
                                        session.submit(slot, Kind::Read, at, piece as usize)?;
                                        n += 1;
                                    }
                                    reap(&mut *session, n)
                                });
                            }
                            Err(e) => failed(ctx, e),
                        },
                    );
                }
            }
            waited = ctx.measure(warmup, duration, self.server_pid);
        });
        let mut s = out.into_inner().unwrap_or_else(|p| p.into_inner());
        (s.self_wait_ns, s.server_wait_ns) = waited;
        s
    }
}

/// One I/O on slot 0 of `session`, waited for: the bytes moved.
fn one(session: &mut dyn Session, kind: Kind, off: u64, len: usize) -> Result<u64, String> {
    session.submit(0, kind, off, len)?;
    reap(session, 1)
}

/// Waits for `n` completions of `session`: the bytes they moved.
fn reap(session: &mut dyn Session, n: usize) -> Result<u64, String> {
    let mut done = Vec::with_capacity(n);
    let deadline = Instant::now() + Duration::from_secs(60);
    while done.len() < n {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err("no reply in 60 s".into());
        }
        let want = n - done.len();
        session.reap(&mut done, want, left)?;
    }
    let mut bytes = 0;
    for (_, r) in done {
        bytes += r? as u64;
    }
    Ok(bytes)
}

struct Ctx<'a> {
    stop: &'a AtomicBool,
    measuring: &'a AtomicBool,
    out: &'a Mutex<Samples>,
    log_fifo: bool,
}

/// The calling thread's run-queue delay so far, ns (the second field of
/// `/proc/thread-self/schedstat`).
fn thread_run_delay() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().nth(1)?.parse().ok()
}

/// The run-queue delay of every thread of process `pid` so far, ns.
fn run_delay_of(pid: u32) -> Option<u64> {
    let mut sum = 0u64;
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
    {
        let Ok(text) = std::fs::read_to_string(t.path().join("schedstat")) else {
            continue;
        };
        if let Some(v) = text
            .split_whitespace()
            .nth(1)
            .and_then(|v| v.parse::<u64>().ok())
        {
            sum += v;
        }
    }
    Some(sum)
}

impl Ctx<'_> {
    /// Lets the workers warm up, then counts their samples for `duration`
    /// and stops them: the run-queue delay of this process and of the
    /// server's (if its PID is known) over the measured window, ns.
    fn measure(
        &self,
        warmup: Duration,
        duration: Duration,
        server_pid: Option<u32>,
    ) -> (u64, Option<u64>) {
        std::thread::sleep(warmup);
        let me = std::process::id();
        let before = (run_delay_of(me), server_pid.and_then(run_delay_of));
        self.measuring.store(true, Ordering::SeqCst);
        std::thread::sleep(duration);
        self.measuring.store(false, Ordering::SeqCst);
        let after = (run_delay_of(me), server_pid.and_then(run_delay_of));
        self.stop.store(true, Ordering::SeqCst);
        (
            after.0.unwrap_or(0).saturating_sub(before.0.unwrap_or(0)),
            after.1.zip(before.1).map(|(a, b)| a.saturating_sub(b)),
        )
    }

    /// Runs `io` until stopped, timing each call; samples taken while
    /// measuring go to `class`.
    fn each(&self, class: IoClass, mut io: impl FnMut() -> Result<u64, String>) {
        let mut lat = Vec::with_capacity(1 << 16);
        let mut waits = Vec::new();
        let (mut bytes, mut errors) = (0u64, 0u64);
        let log = class == IoClass::Log;
        while !self.stop.load(Ordering::Relaxed) {
            let w0 = if log { thread_run_delay() } else { None };
            let t = Instant::now();
            let r = io();
            let ns = t.elapsed().as_nanos() as u64;
            let w1 = if log { thread_run_delay() } else { None };
            let counted = self.measuring.load(Ordering::Relaxed);
            match r {
                Ok(n) if counted => {
                    lat.push(ns);
                    if log {
                        waits.push(w1.zip(w0).map_or(0, |(a, b)| a.saturating_sub(b)));
                    }
                    bytes += n;
                }
                Ok(_) => {}
                Err(e) => {
                    errors += 1;
                    if errors == 1 {
                        eprintln!("mixed: {} I/O failed: {e}", class.name());
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        }
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        out.lat[class.index()].append(&mut lat);
        out.log_wait.append(&mut waits);
        out.bytes[class.index()] += bytes;
        out.errors += errors;
    }

    fn redo(&self, file: &File, size: u64) {
        let buf = vec![0x5au8; 64 << 10];
        let mut rng = Rng(0x0123_4567);
        let mut off = 0u64;
        self.redo_with(|| {
            let len = 8192 * (1 + rng.below(8)) as usize;
            if off + len as u64 > size {
                off = 0;
            }
            let n = file.write_at(&buf[..len], off).map_err(|e| e.to_string())?;
            off += len as u64;
            Ok(n as u64)
        });
    }

    /// The redo writer's loop around `write` (SCHED_FIFO first with
    /// `--log-fifo`).
    fn redo_with(&self, write: impl FnMut() -> Result<u64, String>) {
        if self.log_fifo {
            let param = libc::sched_param { sched_priority: 10 };
            // SAFETY: sets the calling thread's policy; `param` is valid.
            if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
                eprintln!(
                    "mixed: --log-fifo: sched_setscheduler: {}",
                    std::io::Error::last_os_error()
                );
                self.out.lock().unwrap_or_else(|p| p.into_inner()).errors += 1;
                return;
            }
        }
        self.each(IoClass::Log, write);
    }

    fn oltp(&self, file: &File, size: u64, write_pct: u32, seed: u64) {
        let mut buf = vec![0u8; 8192];
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (seed + 1));
        let blocks = (size / 8192).max(1);
        self.each(IoClass::Data, || {
            let off = rng.below(blocks) * 8192;
            let n = if (rng.below(100) as u32) < write_pct {
                file.write_at(&buf, off).map_err(|e| e.to_string())?
            } else {
                file.read_at(&mut buf, off).map_err(|e| e.to_string())?
            };
            Ok(n as u64)
        });
    }

    /// A scan worker: `depth` pieces of `block` in one `read_at` (the file
    /// sends them at once), over the file in turns shared by the workers.
    fn scan(&self, file: &File, size: u64, block: usize, depth: usize, next: &AtomicU64) {
        let len = block * depth;
        let mut buf = vec![0u8; len];
        self.each(IoClass::Bulk, || {
            let off = next.fetch_add(len as u64, Ordering::Relaxed) % size.max(1);
            let n = (size - off).min(len as u64) as usize;
            let got = file
                .read_at(&mut buf[..n], off)
                .map_err(|e| e.to_string())?;
            Ok(got as u64)
        });
    }
}

/// xorshift64*: the bench's offsets, reproducible per seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n.max(1)
    }
}

/// A phase's rows (the log alone, or every class under the mix) and its
/// run-queue line, labelled `classes` ("off", "on", "libnfs"); false if
/// it had I/O errors (said on stderr).
fn record(
    rows: &mut Vec<Row>,
    waits: &mut Vec<String>,
    classes: &'static str,
    mixed: bool,
    s: &Samples,
    d: Duration,
) -> bool {
    if s.errors > 0 {
        eprintln!("mixed: {} I/O errors ({classes})", s.errors);
    }
    let load = if mixed { "mixed" } else { "alone" };
    for class in IoClass::ALL {
        if mixed || class == IoClass::Log {
            rows.push(row(classes, load, class, s, d));
        }
    }
    waits.push(wait_line(classes, load, s, d));
    s.errors == 0
}

fn row(classes: &'static str, load: &'static str, class: IoClass, s: &Samples, d: Duration) -> Row {
    let mut lat = s.lat[class.index()].clone();
    lat.sort_unstable();
    let pct = |p: f64| -> f64 {
        if lat.is_empty() {
            return 0.0;
        }
        let i = ((lat.len() as f64 * p).ceil() as usize).clamp(1, lat.len()) - 1;
        lat[i] as f64 / 1000.0
    };
    let secs = d.as_secs_f64().max(1e-9);
    Row {
        classes,
        load,
        class: class.name(),
        ops: lat.len(),
        iops: lat.len() as f64 / secs,
        mb_s: s.bytes[class.index()] as f64 / secs / 1e6,
        p50_us: pct(0.50),
        p99_us: pct(0.99),
        p999_us: pct(0.999),
    }
}

/// Where the log writes' tail went in one phase: the writes at or above
/// their p99, their mean latency and the redo thread's mean wait for a CPU
/// during them; the threads waiting for a CPU on average (the bench's, the
/// server's).
fn wait_line(classes: &str, load: &str, s: &Samples, d: Duration) -> String {
    let lat = &s.lat[IoClass::Log.index()];
    let mut order: Vec<usize> = (0..lat.len().min(s.log_wait.len())).collect();
    order.sort_unstable_by_key(|&i| lat[i]);
    let tail = &order[order.len() * 99 / 100..];
    let n = tail.len().max(1) as f64;
    let mean_lat = tail.iter().map(|&i| lat[i]).sum::<u64>() as f64 / n / 1000.0;
    let mean_wait = tail.iter().map(|&i| s.log_wait[i]).sum::<u64>() as f64 / n / 1000.0;
    let all_wait = s.log_wait.iter().sum::<u64>() as f64 / s.log_wait.len().max(1) as f64 / 1000.0;
    let secs = d.as_nanos().max(1) as f64;
    let server = s
        .server_wait_ns
        .map_or_else(|| "-".to_owned(), |w| format!("{:.2}", w as f64 / secs));
    format!(
        "wait {classes}/{load}: log writes >= p99: {} of {}, mean {mean_lat:.0} us, of it the redo \
         thread's wait for a CPU {mean_wait:.0} us ({:.0}%); all log writes' mean wait {all_wait:.0} us; \
         threads waiting for a CPU on average: bench {:.2}, server {server}",
        tail.len(),
        lat.len(),
        if mean_lat > 0.0 { mean_wait * 100.0 / mean_lat } else { 0.0 },
        s.self_wait_ns as f64 / secs,
    )
}

fn print_table(rows: &[Row]) {
    println!(
        "{:<8} {:<6} {:<5} {:>8} {:>9} {:>8} {:>9} {:>9} {:>10}",
        "classes", "load", "class", "ops", "IOPS", "MB/s", "p50 us", "p99 us", "p99.9 us"
    );
    for r in rows {
        println!(
            "{:<8} {:<6} {:<5} {:>8} {:>9.0} {:>8.1} {:>9.0} {:>9.0} {:>10.0}",
            r.classes, r.load, r.class, r.ops, r.iops, r.mb_s, r.p50_us, r.p99_us, r.p999_us
        );
    }
    for classes in ["off", "on"] {
        let p99 = |load: &str| {
            rows.iter()
                .find(|r| r.classes == classes && r.load == load && r.class == "log")
                .map_or(0.0, |r| r.p99_us)
        };
        let (alone, mixed) = (p99("alone"), p99("mixed"));
        if alone > 0.0 {
            println!(
                "classes {classes}: log p99 mixed / alone = {:.0} / {:.0} us = {:.2}x",
                mixed,
                alone,
                mixed / alone
            );
        }
    }
}
