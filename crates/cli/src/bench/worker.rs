//! The child process: runs one engine for one job and answers with JSON.
//! CPU is measured with getrusage(RUSAGE_SELF) over the measured window
//! only: connecting, filling, draining and verifying are outside it, and
//! no other engine ever ran in this process.

use std::io::{Read, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use super::block::{self, BLOCK_SIZE};
use super::driver::{self, Counters, Gen, OltpGen, RedoGen, RedoState, ScanGen, Shared};
use super::engines::{self, Kind, Session};
use super::job::{Engine, Job, Latency, RunResult, WorkerReply, Workload};

/// Prefix of progress lines on the worker's stderr.
pub const PROGRESS_TAG: &str = "@@dnfs-bench-progress ";

/// `dnfs bench worker`: job on stdin, reply on stdout.
pub fn main() -> ExitCode {
    // Started as /proc/self/exe, the kernel names this process "exe";
    // `dnfs stats` and `dnfs top` show the name, so say what it is.
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16
    // bytes, which the literal is; it changes only this thread's name.
    unsafe { libc::prctl(libc::PR_SET_NAME, c"dnfs-bench".as_ptr()) };
    let mut input = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut input) {
        eprintln!("bench worker: reading the job: {e}");
        return ExitCode::from(2);
    }
    let reply = match serde_json::from_str::<Job>(&input) {
        Ok(job) => run(&job),
        Err(e) => WorkerReply::Failed(format!("bad job: {e}")),
    };
    let out = serde_json::to_string(&reply).unwrap_or_else(|e| format!("{{\"Failed\":\"{e}\"}}"));
    let mut so = std::io::stdout().lock();
    let _ = writeln!(so, "{out}");
    let _ = so.flush();
    ExitCode::SUCCESS
}

/// CPU and time at one instant.
#[derive(Debug, Clone, Copy)]
struct Mark {
    at: Instant,
    user: f64,
    sys: f64,
    /// Voluntary + involuntary context switches of this process.
    csw: f64,
    server: Option<f64>,
}

/// User CPU, system CPU (seconds) and context switches of this process.
fn rusage_self() -> (f64, f64, f64) {
    // SAFETY: getrusage fills the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    if rc != 0 {
        return (0.0, 0.0, 0.0);
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (
        tv(ru.ru_utime),
        tv(ru.ru_stime),
        (ru.ru_nvcsw + ru.ru_nivcsw) as f64,
    )
}

/// utime + stime of a process in seconds, from /proc/PID/stat.
pub fn proc_cpu(pid: u32) -> Option<f64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // Fields after the command: state is field 3, utime 14, stime 15.
    let ut: f64 = f.get(11)?.parse().ok()?;
    let st: f64 = f.get(12)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let hz = if hz > 0 { hz as f64 } else { 100.0 };
    Some((ut + st) / hz)
}

fn mark(server_pid: Option<u32>) -> Mark {
    let (user, sys, csw) = rusage_self();
    Mark {
        at: Instant::now(),
        user,
        sys,
        csw,
        server: server_pid.and_then(proc_cpu),
    }
}

fn random_stamp() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1);
    let mut r = driver::Rng::new(t ^ (u64::from(std::process::id()) << 32));
    r.next_u64() | 1
}

fn progress(job: &Job, phase: &str, t: f64, of: f64, ops: u64) {
    if job.progress {
        eprintln!(
            "{PROGRESS_TAG}{{\"phase\":\"{phase}\",\"t\":{t:.2},\"of\":{of:.2},\"ops\":{ops}}}"
        );
    }
}

/// Runs the job; never panics out (errors become `Failed`).
pub fn run(job: &Job) -> WorkerReply {
    if job.engine == Engine::Libnfs {
        if let Err(e) = engines::probe_libnfs() {
            return WorkerReply::Skipped(e);
        }
    }
    match std::panic::catch_unwind(|| run_inner(job)) {
        Ok(Ok(r)) => WorkerReply::Ok(Box::new(r)),
        Ok(Err(e)) => WorkerReply::Failed(e),
        Err(_) => WorkerReply::Failed("worker panicked".into()),
    }
}

struct Windows {
    start: Mutex<Option<Mark>>,
    end: Mutex<Option<Mark>>,
    passes: AtomicU64,
}

fn run_inner(job: &Job) -> Result<RunResult, String> {
    let (threads_per, depth) = engines::threads_per_session(job.engine, job.queue_depth);
    let groups = match job.workload {
        Workload::Scan => job.workers.max(1),
        Workload::Redo => 1,
        _ => job.sessions.max(1),
    };
    let nthreads = groups * threads_per;
    let io_len = match job.workload {
        Workload::Scan => job.block.max(BLOCK_SIZE as u64) as usize,
        Workload::Redo => {
            if job.block == 0 {
                driver::REDO_MAX
            } else {
                job.block as usize
            }
        }
        _ => (job.block.max(BLOCK_SIZE as u64) as usize) / BLOCK_SIZE * BLOCK_SIZE,
    };
    let blocks = (job.file_size / BLOCK_SIZE as u64) as usize;
    let stamp = random_stamp();
    let mut shared = Shared::new(
        stamp,
        if job.workload == Workload::Oltp {
            blocks
        } else {
            0
        },
        job.verify,
    );
    shared.reap_min = job.reap_min.max(1);
    shared.fsync_every = job.fsync_every;
    let shared = Arc::new(shared);
    let counters: Vec<Counters> = (0..nthreads).map(|_| Counters::default()).collect();
    let windows = Windows {
        start: Mutex::new(None),
        end: Mutex::new(None),
        passes: AtomicU64::new(0),
    };
    let redo = Arc::new(Mutex::new(RedoState::new(
        job.file_size,
        (job.block != 0).then_some(io_len),
        stamp,
    )));
    // scan: per-worker ranges in whole chunks
    let chunk = io_len as u64;
    let chunks_total = job.file_size.div_ceil(chunk);
    let ranges: Vec<(u64, u64)> = (0..groups as u64)
        .map(|w| {
            let a = chunks_total * w / groups as u64 * chunk;
            let b = (chunks_total * (w + 1) / groups as u64 * chunk).min(job.file_size);
            (a, b)
        })
        .collect();
    let cursors: Vec<Arc<AtomicU64>> = (0..groups).map(|_| Arc::new(AtomicU64::new(0))).collect();

    let ready = Barrier::new(nthreads + 1);
    let scan_barrier = Barrier::new(nthreads);
    let finished = AtomicUsize::new(0);
    let failure: Mutex<Option<String>> = Mutex::new(None);
    let total_lanes = (groups * threads_per * depth) as u64;

    std::thread::scope(|scope| -> Result<(), String> {
        for (t, ctr) in counters.iter().enumerate() {
            let (g, ti) = (t / threads_per, t % threads_per);
            let shared = Arc::clone(&shared);
            let ready = &ready;
            let scan_barrier = &scan_barrier;
            let finished = &finished;
            let failure = &failure;
            let windows = &windows;
            let redo = Arc::clone(&redo);
            let cursor = Arc::clone(&cursors[g]);
            let range = ranges[g];
            std::thread::Builder::new()
                .name(format!("bench-{g}.{ti}"))
                .spawn_scoped(scope, move || {
                    let fail = |e: String| {
                        let mut f = failure.lock().unwrap_or_else(|p| p.into_inner());
                        f.get_or_insert(e);
                    };
                    let sess = engines::open(job, depth, io_len);
                    ready.wait();
                    let mut sess = match sess {
                        Ok(s) => s,
                        Err(e) => {
                            fail(e);
                            shared.phase.store(driver::STOP, Relaxed);
                            finished.fetch_add(1, Relaxed);
                            if job.workload == Workload::Scan {
                                // keep the pass barriers balanced
                                scan_threads_idle(scan_barrier, &shared);
                            }
                            return;
                        }
                    };
                    let r = match job.workload {
                        Workload::Scan => scan_thread(
                            job,
                            sess.as_mut(),
                            &shared,
                            ctr,
                            scan_barrier,
                            windows,
                            &cursor,
                            range,
                            chunk,
                        ),
                        Workload::Redo => {
                            let mut gen = RedoGen { state: redo };
                            driver::drive(sess.as_mut(), &mut gen, &shared, ctr)
                        }
                        _ => {
                            let lane0 = ((g * threads_per + ti) * depth) as u64;
                            let lanes: Vec<u64> = (0..depth as u64).map(|i| lane0 + i).collect();
                            let mut gen = OltpGen::new(
                                &lanes,
                                total_lanes,
                                job.file_size,
                                io_len,
                                job.write_pct,
                                stamp ^ (t as u64) << 40,
                            );
                            driver::drive(sess.as_mut(), &mut gen, &shared, ctr)
                        }
                    };
                    if let Err(e) = r {
                        fail(e);
                        if job.workload == Workload::Scan {
                            // do not leave the others waiting at a barrier
                            shared.phase.store(driver::STOP, Relaxed);
                        }
                    }
                    drop(sess);
                    finished.fetch_add(1, Relaxed);
                })
                .map_err(|e| format!("spawn: {e}"))?;
        }
        ready.wait();
        let total = || counters.iter().map(|c| c.total.load(Relaxed)).sum::<u64>();
        let tick = Duration::from_millis(250);
        match job.workload {
            Workload::Scan => {
                let t0 = Instant::now();
                while finished.load(Relaxed) < nthreads {
                    std::thread::sleep(Duration::from_millis(50));
                    if job.progress && t0.elapsed().as_millis() % 250 < 50 {
                        let ph = if shared.phase() == driver::WARMUP {
                            "warmup"
                        } else {
                            "measure"
                        };
                        progress(job, ph, t0.elapsed().as_secs_f64(), job.duration_s, total());
                    }
                }
            }
            _ => {
                if failure.lock().map(|f| f.is_some()).unwrap_or(true) {
                    shared.phase.store(driver::STOP, Relaxed);
                } else {
                    let w0 = Instant::now();
                    let warm = Duration::from_secs_f64(job.warmup_s.max(0.0));
                    while w0.elapsed() < warm && shared.phase() != driver::STOP {
                        std::thread::sleep(tick.min(warm.saturating_sub(w0.elapsed())));
                        progress(
                            job,
                            "warmup",
                            w0.elapsed().as_secs_f64(),
                            job.warmup_s,
                            total(),
                        );
                    }
                    let m = mark(job.server_pid);
                    *windows.start.lock().unwrap_or_else(|p| p.into_inner()) = Some(m);
                    let _ = shared.phase.compare_exchange(
                        driver::WARMUP,
                        driver::MEASURE,
                        Relaxed,
                        Relaxed,
                    );
                    let dur = Duration::from_secs_f64(job.duration_s.max(0.1));
                    while m.at.elapsed() < dur && shared.phase() != driver::STOP {
                        std::thread::sleep(tick.min(dur.saturating_sub(m.at.elapsed())));
                        progress(
                            job,
                            "measure",
                            m.at.elapsed().as_secs_f64(),
                            job.duration_s,
                            total(),
                        );
                    }
                    let e = mark(job.server_pid);
                    *windows.end.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                    shared.phase.store(driver::STOP, Relaxed);
                }
            }
        }
        Ok(())
    })?;

    if let Some(e) = failure.lock().unwrap_or_else(|p| p.into_inner()).take() {
        return Err(e);
    }
    let start = windows
        .start
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take();
    let end = windows.end.lock().unwrap_or_else(|p| p.into_inner()).take();
    let (Some(start), Some(end)) = (start, end) else {
        return Err("no measured window (the run stopped early)".into());
    };

    let sum =
        |f: fn(&Counters) -> &AtomicU64| counters.iter().map(|c| f(c).load(Relaxed)).sum::<u64>();
    let ops = sum(|c| &c.ops);
    let bytes = sum(|c| &c.bytes);
    let errors = sum(|c| &c.errors);
    let read_verify_errors = sum(|c| &c.verify_errors);
    let elapsed = (end.at - start.at).as_secs_f64().max(1e-9);
    let user = end.user - start.user;
    let sys = end.sys - start.sys;
    let cpu = user + sys;
    let server = match (start.server, end.server) {
        (Some(a), Some(b)) => Some(b - a),
        _ => None,
    };
    let snap = shared.hist.snapshot();
    let s = directnfs::stats::LatencySummary::from_histogram(&snap);
    let passes = windows.passes.load(Relaxed);

    let (verify, verify_detail) = if job.verify {
        let redo_records = redo
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .live_records();
        match verify_pass(job, &shared, &redo_records) {
            Ok(()) if read_verify_errors == 0 => (Some("ok".to_string()), None),
            Ok(()) => (
                Some("failed".to_string()),
                Some(format!(
                    "{read_verify_errors} block(s) read during the run had a wrong header: {}",
                    shared
                        .first_error
                        .lock()
                        .map(|e| e.clone().unwrap_or_default())
                        .unwrap_or_default()
                )),
            ),
            Err(e) => (Some("failed".to_string()), Some(e)),
        }
    } else {
        (None, None)
    };
    let first_error = if errors > 0 {
        shared.first_error.lock().map(|e| e.clone()).unwrap_or(None)
    } else {
        None
    };

    Ok(RunResult {
        engine: job.engine.name().into(),
        sessions: match job.workload {
            Workload::Scan => job.workers,
            Workload::Redo => 1,
            _ => job.sessions,
        },
        queue_depth: job.queue_depth,
        ops,
        iops: ops as f64 / elapsed,
        mb_per_s: bytes as f64 / 1e6 / elapsed,
        errors,
        latency_us: Latency {
            mean: s.mean,
            p50: s.p50,
            p99: s.p99,
            p999: s.p999,
            max: s.max,
            p90: s.p90,
            min: s.min,
        },
        cpu_us_per_io: if ops > 0 { cpu * 1e6 / ops as f64 } else { 0.0 },
        cpu_s_per_gb: if bytes > 0 {
            cpu / (bytes as f64 / 1e9)
        } else {
            0.0
        },
        server_cpu_us_per_io: server.map(|s| if ops > 0 { s * 1e6 / ops as f64 } else { 0.0 }),
        verify,
        elapsed_s: elapsed,
        bytes,
        reads: sum(|c| &c.reads),
        writes: sum(|c| &c.writes),
        cpu_user_s: user,
        cpu_sys_s: sys,
        csw_per_io: (ops > 0).then(|| (end.csw - start.csw) / ops as f64),
        server_cpu_s: server,
        workers: (job.workload == Workload::Scan).then_some(job.workers),
        passes: (job.workload == Workload::Scan).then_some(passes),
        scan_elapsed_s: (job.workload == Workload::Scan && passes > 0)
            .then(|| elapsed / passes as f64),
        connections: if job.engine == Engine::Directnfs {
            job.connections
        } else {
            1
        },
        verify_detail,
        first_error,
        note: engines::note(job),
    })
}

/// A scan thread whose session failed: take part in the barriers until the
/// others see STOP.
fn scan_threads_idle(barrier: &Barrier, shared: &Shared) {
    // pass barrier protocol: 2 waits per round; everybody breaks on STOP,
    // which the failing thread set before calling this.
    let _ = shared;
    barrier.wait();
    barrier.wait();
    barrier.wait();
    barrier.wait();
}

#[allow(clippy::too_many_arguments)]
fn scan_thread(
    job: &Job,
    sess: &mut dyn Session,
    shared: &Arc<Shared>,
    ctr: &Counters,
    barrier: &Barrier,
    windows: &Windows,
    cursor: &Arc<AtomicU64>,
    range: (u64, u64),
    chunk: u64,
) -> Result<(), String> {
    // Round protocol (all threads of all workers):
    //  A: leader resets cursors and, first time, opens the window
    //  B: everybody starts a pass
    //  C: leader counts the pass and decides whether to stop
    //  D: everybody checks STOP
    let warm_deadline = Instant::now() + Duration::from_secs_f64(job.warmup_s.max(0.0));
    // warm-up: partial pass bounded by --warmup
    if job.warmup_s > 0.0 {
        let mut gen = WarmScan {
            inner: ScanGen {
                cursor: Arc::new(AtomicU64::new(range.0)),
                end: range.1,
                chunk,
                only_in: None,
            },
            deadline: warm_deadline,
        };
        driver::drive(sess, &mut gen, shared, ctr)?;
    }
    let mut result = Ok(());
    loop {
        if barrier.wait().is_leader() {
            // A: reset every cursor: each thread resets its own below, after B
            let passes = windows.passes.load(Relaxed);
            if passes == 0 && shared.phase() == driver::WARMUP {
                let m = mark(job.server_pid);
                *windows.start.lock().unwrap_or_else(|p| p.into_inner()) = Some(m);
                shared.phase.store(driver::MEASURE, Relaxed);
            }
        }
        // the first thread of each worker resets its cursor; the rest wait
        cursor.store(range.0, Relaxed);
        barrier.wait(); // B
        if shared.phase() == driver::STOP {
            barrier.wait();
            barrier.wait();
            break;
        }
        if result.is_ok() {
            let mut gen = ScanGen {
                cursor: Arc::clone(cursor),
                end: range.1,
                chunk,
                only_in: None,
            };
            result = driver::drive(sess, &mut gen, shared, ctr);
        }
        if barrier.wait().is_leader() {
            // C
            let n = windows.passes.fetch_add(1, Relaxed) + 1;
            let started = windows
                .start
                .lock()
                .map(|s| s.map(|m| m.at))
                .ok()
                .flatten()
                .unwrap_or_else(Instant::now);
            if started.elapsed().as_secs_f64() >= job.duration_s || n >= 1_000_000 {
                let m = mark(job.server_pid);
                *windows.end.lock().unwrap_or_else(|p| p.into_inner()) = Some(m);
                shared.phase.store(driver::STOP, Relaxed);
            }
        }
        barrier.wait(); // D
        if shared.phase() == driver::STOP {
            break;
        }
    }
    result
}

/// The warm-up scan: stops at its deadline.
struct WarmScan {
    inner: ScanGen,
    deadline: Instant,
}

impl Gen for WarmScan {
    fn next(&mut self, slot: usize) -> Option<Op> {
        if Instant::now() >= self.deadline {
            return None;
        }
        self.inner.next(slot)
    }
}

use super::driver::Op;

/// Reads back the file (or the redo records) through a fresh session of the
/// same engine and checks every block.
fn verify_pass(job: &Job, shared: &Shared, records: &[driver::Record]) -> Result<(), String> {
    const CHUNK: usize = 1 << 20;
    let depth = 4;
    let mut sess = engines::open(job, depth, CHUNK.max(driver::REDO_MAX))?;
    let mut errors: Vec<String> = Vec::new();
    let mut n_bad = 0u64;
    let ranges: Vec<(u64, usize, u64)> = if job.workload == Workload::Redo {
        records.iter().map(|r| (r.offset, r.len, r.index)).collect()
    } else {
        let mut v = Vec::new();
        let mut off = 0;
        while off < job.file_size {
            let len = (job.file_size - off).min(CHUNK as u64) as usize;
            v.push((off, len, off / BLOCK_SIZE as u64));
            off += len as u64;
        }
        v
    };
    let mut next = 0usize;
    let mut busy: Vec<Option<(u64, usize, u64)>> = vec![None; depth];
    let mut done = Vec::new();
    loop {
        for (slot, b) in busy.iter_mut().enumerate() {
            if b.is_none() && next < ranges.len() {
                let r = ranges[next];
                next += 1;
                sess.submit(slot, Kind::Read, r.0, r.1)?;
                *b = Some(r);
            }
        }
        if busy.iter().all(Option::is_none) {
            break;
        }
        sess.reap(&mut done, 1, Duration::from_millis(500))?;
        for (slot, res) in done.drain(..) {
            let Some((off, len, first)) = busy.get_mut(slot).and_then(Option::take) else {
                continue;
            };
            match res {
                Ok(n) if n == len => {}
                Ok(n) => {
                    n_bad += 1;
                    errors.push(format!("short read at {off}: {n} of {len}"));
                    continue;
                }
                Err(e) => return Err(format!("verify read at {off}: {e}")),
            }
            let buf = &sess.buf(slot)[..len];
            if job.workload == Workload::Redo {
                let r = block::verify_write(buf, first, first + 1, shared.stamp);
                if let Err(e) = r {
                    n_bad += 1;
                    if errors.len() < 5 {
                        errors.push(format!("redo record #{first} at offset {off}: {e}"));
                    }
                }
                continue;
            }
            for (i, c) in buf.chunks(BLOCK_SIZE).enumerate() {
                let b = first + i as u64;
                let last = shared.table.get(b as usize).map_or(0, |t| t.load(Relaxed));
                let r = if last == 0 {
                    block::verify(c, b)
                } else {
                    block::verify_write(c, b, last, shared.stamp)
                };
                if let Err(e) = r {
                    n_bad += 1;
                    if errors.len() < 5 {
                        errors.push(format!("block {b} (offset {}): {e}", b * BLOCK_SIZE as u64));
                    }
                }
            }
        }
    }
    if n_bad > 0 {
        return Err(format!(
            "{n_bad} bad block(s); first: {}",
            errors.join("; ")
        ));
    }
    Ok(())
}
