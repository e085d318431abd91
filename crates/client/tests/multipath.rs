//! Multipath failover against a real Ganesha reached over several network
//! paths (issue 3, item 8): `scripts/server/netns.sh` puts the server in network
//! namespace `dnfs-srv` behind 4 veth paths (host 10.231.K.1 <-> server
//! 10.231.K.2), and these tests cut, black-hole and rate-limit paths and
//! kill the server while 8 threads read and write checksummed 8 KiB blocks
//! (`directnfs_testkit::blocks`). Each test then proves: no error reached a
//! caller, the per-path counters show where the traffic went, and a final
//! pass over the file finds every acknowledged write intact.
//!
//! They need root and create namespaces, so they run only with
//! `DNFS_NETNS_TESTS=1` (see `scripts/ci/multipath-tests.sh`); otherwise every
//! test prints a loud SKIPPED line (`directnfs_testkit::server::netns_tests`,
//! which `scripts/test.sh` counts) and passes. One topology serves the whole
//! test binary (brought up by the first test, torn down at exit), and the
//! tests take a global lock, so they never overlap even without
//! `--test-threads=1`. Every test has a watchdog: past its time budget the
//! process reports which test hung and exits (tearing the topology down).
//!
//! The server serves NFSv4.1 too (`DNFS_NFS4=1`, graceless): the cut,
//! black-hole and server-kill tests run again as `..._v41` over one
//! session trunked across the paths, and
//! `v41_a_request_whose_path_is_cut_after_it_ran_is_answered_from_the_reply_cache`
//! proves exactly-once across paths: a RENAME and a CREATE the server
//! executed, whose replies were lost on their path, are re-sent on the
//! other path and answered from the session's reply cache.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use directnfs::config::MountOptions;
use directnfs::{Batch, Client, File, PathSpec, Target};
use directnfs_testkit::blocks::{encode_block, Durability, Ledger, BLOCK_SIZE};

/// Paths the topology is built with (tests use 1, 2 or all 4).
const TOPOLOGY_PATHS: u8 = 4;
/// State dir of our topology unless `DNFS_NETNS_STATE_DIR` names one: not
/// netns.sh's default, so a topology someone else brought up with the
/// default is never torn down by us (netns.sh refuses to replace a
/// namespace it has no state for).
const DEFAULT_STATE_DIR: &str = "/tmp/dnfs-multipath-netns";
/// File for the fault tests: 32 MiB of 8 KiB blocks.
const FILE_BLOCKS: u64 = 4096;
/// Load threads in the fault tests.
const THREADS: u64 = 8;

// --- topology --------------------------------------------------------------

/// Returns early (passing) with a loud message unless the netns tests are on
/// (`directnfs_testkit::server::netns_tests`: skipped, or deferred to
/// `scripts/ci/multipath-tests.sh` when `scripts/test.sh` runs that next).
macro_rules! require_netns {
    ($name:expr) => {
        if !directnfs_testkit::server::netns_tests(
            &format!("multipath::{}", $name),
            "scripts/ci/multipath-tests.sh",
        ) {
            return;
        }
    };
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs `scripts/server/netns.sh ARGS` (bounded by `timeout`), returns stdout;
/// panics with its stderr when it fails.
fn netns(args: &[&str]) -> String {
    let out = netns_output(args);
    assert!(
        out.status.success(),
        "netns.sh {args:?} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn netns_output(args: &[&str]) -> std::process::Output {
    Command::new("timeout")
        .arg("120")
        .arg("bash")
        .arg(repo_root().join("scripts/server/netns.sh"))
        .args(args)
        .env("DNFS_NETNS_STATE_DIR", state_dir())
        // NFSv4.1 served too (graceless: a restart loses v4 state at once).
        .env("DNFS_NFS4", "1")
        .output()
        .expect("run scripts/server/netns.sh")
}

fn state_dir() -> String {
    std::env::var("DNFS_NETNS_STATE_DIR").unwrap_or_else(|_| DEFAULT_STATE_DIR.to_string())
}

extern "C" fn topology_down() {
    let _ = netns_output(&["down"]);
}

/// The shared topology: ports and export from `netns.sh status`.
struct Topology {
    nfs_port: u16,
    mnt_port: u16,
    export_path: String,
    /// The export's directory on this host (the server's file system).
    export_dir: PathBuf,
}

fn topology() -> &'static Topology {
    static TOPOLOGY: OnceLock<Topology> = OnceLock::new();
    TOPOLOGY.get_or_init(|| {
        let t0 = Instant::now();
        netns(&["up", &TOPOLOGY_PATHS.to_string()]);
        // SAFETY: registers a plain extern "C" function with no captured state.
        unsafe { libc::atexit(topology_down) };
        let status = netns(&["status"]);
        let get = |key: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{key}=")))
                .unwrap_or_else(|| panic!("netns.sh status has no {key}=:\n{status}"))
                .to_string()
        };
        let topo = Topology {
            nfs_port: get("nfs_port").parse().expect("nfs_port"),
            mnt_port: get("mnt_port").parse().expect("mnt_port"),
            export_path: get("export_path"),
            export_dir: PathBuf::from(get("export_dir")),
        };
        eprintln!(
            "topology up in {:.1}s: {TOPOLOGY_PATHS} paths, nfs port {}, mount port {}, export {}",
            t0.elapsed().as_secs_f64(),
            topo.nfs_port,
            topo.mnt_port,
            topo.export_path
        );
        topo
    })
}

/// Serialises the tests (one topology, faults are global) and resets every
/// path to healthy and unlimited before and after the test.
struct TestEnv {
    _serial: MutexGuard<'static, ()>,
    _watchdog: Watchdog,
}

impl TestEnv {
    fn new(name: &'static str, budget: Duration) -> Self {
        static SERIAL: Mutex<()> = Mutex::new(());
        let serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        let watchdog = Watchdog::new(name, budget);
        topology();
        reset_paths();
        Self {
            _serial: serial,
            _watchdog: watchdog,
        }
    }
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        reset_paths();
    }
}

fn reset_paths() {
    for k in 1..=TOPOLOGY_PATHS {
        let k = k.to_string();
        let _ = netns_output(&["restore", &k]);
        let _ = netns_output(&["rate", &k, "off"]);
    }
}

/// Ends the process if a test outlives its budget: a hung failover must
/// fail the run, not stall it. Exiting runs the atexit teardown.
struct Watchdog {
    done: Option<mpsc::Sender<()>>,
}

impl Watchdog {
    fn new(name: &'static str, budget: Duration) -> Self {
        let (tx, rx) = mpsc::channel::<()>();
        std::thread::spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(budget) {
                eprintln!(
                    "\n*** multipath::{name} exceeded its budget of {}s: a hang (an I/O that \
                     never completed?); exiting ***\n",
                    budget.as_secs()
                );
                std::process::exit(3);
            }
        });
        Self { done: Some(tx) }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        if let Some(tx) = self.done.take() {
            let _ = tx.send(());
        }
    }
}

/// `sockbuf` of every mount: `DNFS_TEST_SOCKBUF` (to compare `auto` with
/// a fixed size on these tests), else the default.
fn sockbuf() -> String {
    std::env::var("DNFS_TEST_SOCKBUF")
        .unwrap_or_else(|_| MountOptions::default().sockbuf.to_string())
}

/// A target over the given topology paths (1-based), with `opts` on top
/// of explicit ports (and `sockbuf`).
fn target(paths: &[u8], opts: &[(&str, &str)]) -> Target {
    let topo = topology();
    let mut options = MountOptions::default();
    options.nfs_port = Some(topo.nfs_port);
    options.mount_port = Some(topo.mnt_port);
    options
        .set("sockbuf", &sockbuf())
        .expect("DNFS_TEST_SOCKBUF");
    for (k, v) in opts {
        options.set(k, v).expect("mount option");
    }
    Target {
        name: "dnfs-srv".into(),
        paths: paths
            .iter()
            .map(|&k| PathSpec {
                local: Some(IpAddr::V4(Ipv4Addr::new(10, 231, k, 1))),
                server: format!("10.231.{k}.2"),
            })
            .collect(),
        export: Some(topo.export_path.clone()),
        path: topo.export_path.clone(),
        options,
    }
}

// --- statistics ------------------------------------------------------------

/// Per path (0-based): calls, bytes, failovers, retransmits, timeouts,
/// reconnects, state, and the states of its channels.
#[derive(Debug, Clone, Default)]
struct PathCounters {
    calls: u64,
    bytes: u64,
    failovers: u64,
    retransmits: u64,
    timeouts: u64,
    reconnects: u64,
    state: String,
    channels_up: usize,
    channels: usize,
}

fn path_counters(c: &Client) -> Vec<PathCounters> {
    let stats = c.stats();
    stats.servers[0]
        .paths
        .iter()
        .map(|p| PathCounters {
            calls: p.totals.calls(),
            bytes: p.totals.bytes_read + p.totals.bytes_written,
            failovers: p.totals.failovers,
            retransmits: p.totals.retransmits,
            timeouts: p.totals.timeouts,
            reconnects: p.totals.reconnects,
            state: p.state.clone(),
            channels_up: p.channels.iter().filter(|ch| ch.state == "up").count(),
            channels: p.channels.len(),
        })
        .collect()
}

fn print_paths(label: &str, c: &Client) {
    for (i, p) in path_counters(c).iter().enumerate() {
        eprintln!(
            "  [{label}] path {}: {} ({}/{} channels up) calls {} bytes {} failovers {} \
             retransmits {} timeouts {} reconnects {}",
            i + 1,
            p.state,
            p.channels_up,
            p.channels,
            p.calls,
            p.bytes,
            p.failovers,
            p.retransmits,
            p.timeouts,
            p.reconnects
        );
    }
}

/// Waits (bounded) until no channel of path `idx` (0-based) is up.
fn wait_path_down(c: &Client, idx: usize, limit: Duration) -> Option<Duration> {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if path_counters(c)[idx].channels_up == 0 {
            return Some(t0.elapsed());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// Waits (bounded) until every channel of path `idx` (0-based) is up.
fn wait_path_up(c: &Client, idx: usize, limit: Duration) -> Option<Duration> {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        let p = &path_counters(c)[idx];
        if p.channels_up == p.channels {
            return Some(t0.elapsed());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

// --- the load --------------------------------------------------------------

/// Mixed 8 KiB reads and writes of checksummed blocks from several
/// threads. Thread `t` owns the blocks `b % THREADS == t`, so each block has
/// one writer and every read can be checked against that writer's ledger.
struct Load {
    path: String,
    ledger: Ledger,
    /// Unstable mode: writes count as durable only after a successful fsync.
    unstable: bool,
    stop: AtomicBool,
    /// While set, the threads only read (see `path_fault`).
    writes_paused: AtomicBool,
    /// While set, the threads do nothing (see the flapping test).
    io_paused: AtomicBool,
    errors: Mutex<Vec<String>>,
    reads: AtomicU64,
    writes: AtomicU64,
    fsyncs: AtomicU64,
    /// Longest single I/O (read, write or fsync) since the start.
    max_stall_ns: AtomicU64,
    /// Longest single I/O since the last [`Load::take_window_stall`].
    window_stall_ns: AtomicU64,
}

impl Load {
    fn new(path: String, unstable: bool) -> Self {
        Self {
            path,
            ledger: Ledger::new(FILE_BLOCKS),
            unstable,
            stop: AtomicBool::new(false),
            writes_paused: AtomicBool::new(false),
            io_paused: AtomicBool::new(false),
            errors: Mutex::new(Vec::new()),
            reads: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            fsyncs: AtomicU64::new(0),
            max_stall_ns: AtomicU64::new(0),
            window_stall_ns: AtomicU64::new(0),
        }
    }

    fn durability(&self) -> Durability {
        if self.unstable {
            Durability::Unstable
        } else {
            Durability::Durable
        }
    }

    fn error(&self, e: String) {
        let mut errors = self.errors.lock().unwrap_or_else(|p| p.into_inner());
        if errors.len() < 50 {
            errors.push(e);
        }
    }

    fn note(&self, started: Instant) {
        let ns = started.elapsed().as_nanos() as u64;
        self.max_stall_ns.fetch_max(ns, Ordering::Relaxed);
        self.window_stall_ns.fetch_max(ns, Ordering::Relaxed);
    }

    fn take_window_stall(&self) -> Duration {
        Duration::from_nanos(self.window_stall_ns.swap(0, Ordering::Relaxed))
    }

    fn max_stall(&self) -> Duration {
        Duration::from_nanos(self.max_stall_ns.load(Ordering::Relaxed))
    }

    fn ops(&self) -> u64 {
        self.reads.load(Ordering::Relaxed) + self.writes.load(Ordering::Relaxed)
    }

    /// Writes every block once (1 MiB at a time) and makes it durable.
    fn fill(&self, file: &File) {
        let per_chunk = (1 << 20) / BLOCK_SIZE as u64;
        let mut chunk = vec![0u8; (1 << 20) as usize];
        let mut first = 0;
        while first < FILE_BLOCKS {
            let n = per_chunk.min(FILE_BLOCKS - first);
            let mut seqs = Vec::new();
            for i in 0..n {
                let b = first + i;
                let seq = self.ledger.begin(b);
                let at = i as usize * BLOCK_SIZE;
                encode_block(b, seq, &mut chunk[at..at + BLOCK_SIZE]);
                seqs.push((b, seq));
            }
            let len = n as usize * BLOCK_SIZE;
            file.write_all_at(&chunk[..len], first * BLOCK_SIZE as u64)
                .expect("initial fill");
            for (b, seq) in &seqs {
                self.ledger.ack(*b, *seq, self.durability());
            }
            first += n;
        }
        file.fsync().expect("fsync after fill");
        for b in 0..FILE_BLOCKS {
            let latest = self.ledger.latest_acked(b);
            self.ledger.mark_durable(b, latest);
        }
    }

    /// One load thread: until `stop`, a random owned block is read (and
    /// checked) or written (and recorded); unstable writers fsync every 16
    /// writes and only then count those writes durable.
    fn worker(&self, client: &Client, t: u64) {
        let file = match client.open(&self.path) {
            Ok(f) => f,
            Err(e) => return self.error(format!("thread {t}: open: {e}")),
        };
        let mut rng = 0x2545_f491_4f6c_dd1d ^ (t + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let mut buf = vec![0u8; BLOCK_SIZE];
        let mut unsynced: Vec<(u64, u64)> = Vec::new();
        let owned = FILE_BLOCKS / THREADS;
        while !self.stop.load(Ordering::Relaxed) {
            if self.io_paused.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let b = t + THREADS * ((rng >> 8) % owned);
            let offset = b * BLOCK_SIZE as u64;
            if rng % 100 < 50 && !self.writes_paused.load(Ordering::Relaxed) {
                let seq = self.ledger.begin(b);
                encode_block(b, seq, &mut buf);
                let t0 = Instant::now();
                let r = file.write_at(&buf, offset);
                self.note(t0);
                self.writes.fetch_add(1, Ordering::Relaxed);
                match r {
                    Ok(n) if n == BLOCK_SIZE => {
                        self.ledger.ack(b, seq, self.durability());
                        if self.unstable {
                            unsynced.push((b, seq));
                        }
                    }
                    Ok(n) => self.error(format!("thread {t}: short write of block {b}: {n}")),
                    Err(e) => self.error(format!("thread {t}: write block {b}: {e}")),
                }
                if self.unstable && unsynced.len() >= 16 {
                    self.fsync(&file, t, &mut unsynced);
                }
            } else {
                let t0 = Instant::now();
                let r = file.read_exact_at(&mut buf, offset);
                self.note(t0);
                self.reads.fetch_add(1, Ordering::Relaxed);
                match r {
                    Ok(()) => {
                        if let Err(v) = self.ledger.check(b, &buf, !self.unstable) {
                            self.error(format!("thread {t}: read back: {v}"));
                        }
                    }
                    Err(e) => self.error(format!("thread {t}: read block {b}: {e}")),
                }
            }
        }
        if self.unstable {
            self.fsync(&file, t, &mut unsynced);
        }
    }

    fn fsync(&self, file: &File, t: u64, unsynced: &mut Vec<(u64, u64)>) {
        let t0 = Instant::now();
        let r = file.fsync();
        self.note(t0);
        self.fsyncs.fetch_add(1, Ordering::Relaxed);
        match r {
            Ok(()) => {
                for (b, seq) in unsynced.drain(..) {
                    self.ledger.mark_durable(b, seq);
                }
            }
            Err(e) => self.error(format!("thread {t}: fsync: {e}")),
        }
    }

    /// The final pass: every block, read 1 MiB at a time, against the ledger.
    fn verify_all(&self, client: &Client) {
        let file = client.open(&self.path).expect("open for verify");
        let t0 = Instant::now();
        let report = self.ledger.check_all(BLOCK_SIZE, 128, |first, buf| {
            file.read_exact_at(buf, first * BLOCK_SIZE as u64)
        });
        eprintln!(
            "  verify: {} blocks in {:.2}s: {} at latest acknowledged write, {} with an in-doubt \
             write landed, {} with an uncommitted write lost; {} violation(s)",
            report.blocks,
            t0.elapsed().as_secs_f64(),
            report.latest,
            report.in_doubt_landed,
            report.uncommitted_lost,
            report.violations.len()
        );
        assert!(
            report.is_ok(),
            "{} block(s) lost, torn or misplaced; first ones:\n{}",
            report.violations.len(),
            report
                .violations
                .iter()
                .take(20)
                .map(|v| format!("  {v}"))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }

    fn assert_no_errors(&self) {
        let errors = self.errors.lock().unwrap_or_else(|p| p.into_inner());
        assert!(
            errors.is_empty(),
            "{} error(s) reached the callers; first ones:\n  {}",
            errors.len(),
            errors.join("\n  ")
        );
    }
}

/// Sets `stop` when dropped, so a failing assertion inside a thread scope
/// does not leave the scope joining load threads forever.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Mounts `paths`, creates and fills a fresh file, runs the load from
/// `THREADS` threads while `script` injects faults, stops the load, checks
/// that no caller saw an error and that every block verifies.
fn with_load(
    name: &str,
    paths: &[u8],
    opts: &[(&str, &str)],
    script: impl FnOnce(&Client, &Load),
) -> (Client, std::sync::Arc<Load>) {
    let client = Client::mount(&target(paths, opts)).expect("mount over the paths");
    let unstable = opts.iter().any(|(k, v)| *k == "stable" && *v == "unstable");
    let path = common::unique(name);
    let file = client.create(&path).expect("create test file");
    let load = std::sync::Arc::new(Load::new(path.clone(), unstable));
    let t0 = Instant::now();
    load.fill(&file);
    eprintln!(
        "  filled {} MiB in {:.2}s",
        (FILE_BLOCKS * BLOCK_SIZE as u64) >> 20,
        t0.elapsed().as_secs_f64()
    );
    let start = Instant::now();
    std::thread::scope(|s| {
        let _stop = StopOnDrop(&load.stop);
        for t in 0..THREADS {
            let (load, client) = (&load, &client);
            s.spawn(move || load.worker(client, t));
        }
        script(&client, &load);
    });
    let secs = start.elapsed().as_secs_f64();
    eprintln!(
        "  load: {} reads, {} writes, {} fsyncs in {secs:.1}s ({:.0} ops/s); longest single I/O {:.3}s",
        load.reads.load(Ordering::Relaxed),
        load.writes.load(Ordering::Relaxed),
        load.fsyncs.load(Ordering::Relaxed),
        load.ops() as f64 / secs,
        load.max_stall().as_secs_f64()
    );
    print_paths("end", &client);
    load.assert_no_errors();
    load.verify_all(&client);
    let _ = client.remove(&path);
    (client, load)
}

/// The load runs for `d` and must make progress: at least `min`
/// operations. A busy machine may be slow, not stuck: past `d` it gets up
/// to 20 times as long to reach `min` (a stuck load never does).
fn run_for(load: &Load, d: Duration, min: u64, what: &str) {
    let before = load.ops();
    std::thread::sleep(d);
    let deadline = std::time::Instant::now() + d * 20;
    while load.ops() - before < min && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let done = load.ops() - before;
    assert!(
        done >= min,
        "only {done} operations in {:.1}s {what}",
        (d * 21).as_secs_f64()
    );
}

// --- path faults -------------------------------------------------------------

/// Cut or black-hole path 1 of 2 for 5 s under load, then restore it.
/// Returns the longest single I/O while the fault lasted and until path 1
/// was back.
fn path_fault(name: &'static str, fault: &str, opts: &[(&str, &str)]) -> Duration {
    let mut fault_stall = Duration::ZERO;
    with_load(name, &[1, 2], opts, |client, load| {
        run_for(load, Duration::from_secs(2), 100, "before the fault");
        let before = path_counters(client);
        assert!(
            before[0].calls > 0 && before[1].calls > 0,
            "both paths carry traffic before the fault: {before:?}"
        );
        load.take_window_stall();
        eprintln!("  {fault} path 1");
        netns(&[fault, "1"]);
        let t_fault = Instant::now();
        // Give failover time to notice, then watch path 1 stay silent.
        std::thread::sleep(Duration::from_millis(2500));
        let settled = path_counters(client);
        print_paths("fault+2.5s", client);
        std::thread::sleep(Duration::from_secs(5).saturating_sub(t_fault.elapsed()));
        let during = path_counters(client);
        print_paths("fault+5s", client);
        let p1 = during[0].calls - settled[0].calls;
        let p2 = during[1].calls - settled[1].calls;
        assert_eq!(
            p1, 0,
            "path 1 took {p1} calls while it was {fault} (path 2 took {p2})"
        );
        assert!(
            p2 > 50,
            "path 2 carried the load during the fault: {p2} calls"
        );
        assert!(
            settled[0].channels_up == 0 && during[0].channels_up == 0,
            "path 1 is marked down while {fault}: {:?}",
            during[0]
        );
        // Read-only from the restore on, for 3 s: if anything of the
        // failed connections (a WRITE sent before the fault and re-sent
        // elsewhere since) still reached the server once the path is back,
        // it would overwrite newer acknowledged data, and no newer write
        // would hide it from the read-back checks and the verify pass.
        load.writes_paused.store(true, Ordering::Relaxed);
        eprintln!("  restore path 1 (writes paused)");
        netns(&["restore", "1"]);
        let back = wait_path_up(client, 0, Duration::from_secs(20));
        fault_stall = load.take_window_stall();
        let back = back.expect("path 1 rejoined within 20 s of the restore");
        eprintln!(
            "  path 1 rejoined {:.2}s after restore; longest single I/O during the fault: {:.3}s",
            back.as_secs_f64(),
            fault_stall.as_secs_f64()
        );
        let rejoined = path_counters(client);
        run_for(
            load,
            Duration::from_secs(3),
            100,
            "reading after the restore",
        );
        let after = path_counters(client);
        let p1 = after[0].calls - rejoined[0].calls;
        assert!(p1 > 20, "read traffic came back to path 1: {p1} calls");
        print_paths("restored+3s", client);
        load.verify_all(client);
        load.writes_paused.store(false, Ordering::Relaxed);
        run_for(
            load,
            Duration::from_secs(2),
            100,
            "with writes after the restore",
        );
        let last = path_counters(client);
        let p1 = last[0].calls - after[0].calls;
        assert!(p1 > 20, "read and write traffic on path 1: {p1} calls");
        print_paths("restored+5s", client);
    });
    fault_stall
}

/// Path 1 cut under load (`name` the test's, `tag` for the output,
/// `extra` mount options): no caller waits 2 s or more.
fn cut_path(name: &'static str, tag: &str, extra: &[(&str, &str)]) {
    let _env = TestEnv::new(name, Duration::from_secs(90));
    let mut opts = vec![("connections", "2")];
    opts.extend_from_slice(extra);
    let stall = path_fault(name, "cut", &opts);
    eprintln!(
        "RESULT {tag}: longest caller stall {:.3}s (target < 2 s)",
        stall.as_secs_f64()
    );
    assert!(
        stall < Duration::from_secs(2),
        "a cut path stalled a caller for {:.1}s (target < 2 s)",
        stall.as_secs_f64()
    );
}

/// Path 1 black-holed under load with timeo 2 s: no caller waits
/// timeo + 1 s or more.
fn blackholed_path(name: &'static str, tag: &str, extra: &[(&str, &str)]) {
    let _env = TestEnv::new(name, Duration::from_secs(90));
    let mut opts = vec![("connections", "2"), ("timeo", "20")];
    opts.extend_from_slice(extra);
    let stall = path_fault(name, "blackhole", &opts);
    eprintln!(
        "RESULT {tag}: longest caller stall {:.3}s (timeo 2 s; target < timeo + 1 s)",
        stall.as_secs_f64()
    );
    assert!(
        stall < Duration::from_secs(3),
        "a black-holed path stalled a caller for {:.1}s with timeo 2 s (target < timeo + 1 s)",
        stall.as_secs_f64()
    );
}

#[test]
fn cut_path_fails_over_and_returns_without_errors_or_lost_writes() {
    require_netns!("cut_path_fails_over_and_returns_without_errors_or_lost_writes");
    cut_path("mp-cut", "cut", &[]);
}

#[test]
fn blackholed_path_fails_over_and_returns_without_errors_or_lost_writes() {
    require_netns!("blackholed_path_fails_over_and_returns_without_errors_or_lost_writes");
    blackholed_path("mp-blackhole", "blackhole", &[]);
}

/// Cut/restore cycles of path 1 in the flapping test.
const FLAPS: u32 = 5;

#[test]
fn flapping_path_never_replays_a_stale_write() {
    require_netns!("flapping_path_never_replays_a_stale_write");
    let _env = TestEnv::new("flap", Duration::from_secs(120));
    // Each cycle gives the old connections of path 1 a chance to deliver
    // a WRITE they held when the path was cut, after its re-sent copy and
    // newer writes were acknowledged on path 2: writes pause at each
    // restore, so such a replay stays visible to the read-back checks and
    // the verify pass of that cycle. The load stops for a moment before
    // each cut and resumes right after it: path 1 is idle when it dies and
    // takes WRITEs before the failure is noticed, so its connections hold
    // unacknowledged WRITEs while the server side has nothing of its own
    // to retransmit (which would otherwise reset the old connection first).
    let mut worst = Duration::ZERO;
    with_load(
        "mp-flap",
        &[1, 2],
        &[("connections", "2")],
        |client, load| {
            run_for(load, Duration::from_secs(1), 100, "before the first cut");
            for cycle in 1..=FLAPS {
                load.io_paused.store(true, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(100));
                load.take_window_stall();
                netns(&["cut", "1"]);
                load.io_paused.store(false, Ordering::Relaxed);
                std::thread::sleep(Duration::from_secs(1));
                load.writes_paused.store(true, Ordering::Relaxed);
                netns(&["restore", "1"]);
                let back = wait_path_up(client, 0, Duration::from_secs(20))
                    .expect("path 1 rejoined within 20 s of the restore");
                let stall = load.take_window_stall();
                worst = worst.max(stall);
                eprintln!(
                    "  cycle {cycle}: path 1 back {:.2}s after restore; longest single I/O {:.3}s",
                    back.as_secs_f64(),
                    stall.as_secs_f64()
                );
                // The old connection's retransmission timer has backed off to
                // ~1.4 s and ~3 s after its last send: wait past both.
                std::thread::sleep(Duration::from_millis(2500));
                load.verify_all(client);
                load.writes_paused.store(false, Ordering::Relaxed);
                run_for(load, Duration::from_millis(500), 20, "between cycles");
            }
        },
    );
    eprintln!(
        "RESULT flapping: {FLAPS} cut/restore cycles, longest caller stall {:.3}s",
        worst.as_secs_f64()
    );
}

// --- server restart ----------------------------------------------------------

fn server_killed(name: &'static str, opts: &[(&str, &str)]) {
    let (client, load) = with_load(name, &[1, 2], opts, |client, load| {
        run_for(load, Duration::from_secs(2), 100, "before the kill");
        load.take_window_stall();
        eprintln!("  SIGKILL the server, 2 s down, restart");
        let t0 = Instant::now();
        netns(&["restart-server", "--kill", "--down", "2"]);
        eprintln!("  server back after {:.1}s", t0.elapsed().as_secs_f64());
        let up = wait_path_up(client, 0, Duration::from_secs(20))
            .and_then(|_| wait_path_up(client, 1, Duration::from_secs(20)));
        assert!(up.is_some(), "both paths reconnected after the restart");
        run_for(
            load,
            Duration::from_secs(3),
            100,
            "after the server restart",
        );
        eprintln!(
            "  longest single I/O across the restart: {:.3}s",
            load.take_window_stall().as_secs_f64()
        );
    });
    let reconnects: u64 = path_counters(&client).iter().map(|p| p.reconnects).sum();
    assert!(
        reconnects > 0,
        "the channels reconnected after the kill ({reconnects})"
    );
    eprintln!(
        "RESULT {name}: zero caller errors; longest single I/O {:.3}s",
        load.max_stall().as_secs_f64()
    );
}

#[test]
fn server_killed_mid_load_file_sync_loses_no_acknowledged_write() {
    require_netns!("server_killed_mid_load_file_sync_loses_no_acknowledged_write");
    let _env = TestEnv::new("server-kill-file-sync", Duration::from_secs(90));
    server_killed("mp-kill-sync", &[("connections", "2")]);
}

#[test]
fn server_killed_mid_load_unstable_loses_no_fsynced_write() {
    require_netns!("server_killed_mid_load_unstable_loses_no_fsynced_write");
    let _env = TestEnv::new("server-kill-unstable", Duration::from_secs(90));
    server_killed(
        "mp-kill-unstable",
        &[("connections", "2"), ("stable", "unstable")],
    );
}

// --- NFSv4.1: the same faults over one trunked session ------------------------

/// NFSv4.1 over the paths: one session, every connection bound to it.
const V41: (&str, &str) = ("vers", "4.1");

#[test]
fn cut_path_fails_over_and_returns_without_errors_or_lost_writes_v41() {
    require_netns!("cut_path_fails_over_and_returns_without_errors_or_lost_writes_v41");
    cut_path("mp-cut-v41", "cut v4.1", &[V41]);
}

#[test]
fn blackholed_path_fails_over_and_returns_without_errors_or_lost_writes_v41() {
    require_netns!("blackholed_path_fails_over_and_returns_without_errors_or_lost_writes_v41");
    blackholed_path("mp-blackhole-v41", "blackhole v4.1", &[V41]);
}

#[test]
fn server_killed_mid_load_file_sync_loses_no_acknowledged_write_v41() {
    require_netns!("server_killed_mid_load_file_sync_loses_no_acknowledged_write_v41");
    let _env = TestEnv::new("server-kill-v41", Duration::from_secs(90));
    server_killed("mp-kill-v41", &[("connections", "2"), V41]);
}

/// Exactly once across paths: path 2 is cut and path 1 muted (the server
/// gets the calls, its replies are dropped), so a RENAME — then a CREATE
/// of a directory — goes out on path 1 and runs on the server, which the export
/// directory shows, while its reply is lost. Path 2 comes back; the call
/// times out on path 1 and the same bytes (same slot and sequence id) go
/// out on path 2's connection, bound to the same session, and the
/// server's reply cache answers: no NFS4ERR_NOENT (RENAME) or
/// NFS4ERR_EXIST (CREATE), which a second execution would give.
#[test]
fn v41_a_request_whose_path_is_cut_after_it_ran_is_answered_from_the_reply_cache() {
    require_netns!("v41_a_request_whose_path_is_cut_after_it_ran_is_answered_from_the_reply_cache");
    let _env = TestEnv::new("exactly-once-v41", Duration::from_secs(120));
    let client = Client::mount(&target(
        &[1, 2],
        &[("connections", "1"), ("timeo", "20"), V41],
    ))
    .expect("mount over the paths");
    let dir = common::unique("mp-once-v41");
    client.mkdir(&dir).unwrap();
    let on_server = |name: &str| {
        topology()
            .export_dir
            .join(dir.trim_start_matches('/'))
            .join(name)
            .exists()
    };
    drop(client.create(&format!("{dir}/a")).unwrap());
    type Op = fn(&Client, &str) -> directnfs::Result<()>;
    // Each operation, and the name whose presence on the server says it
    // ran there (RENAME: "b" appears; CREATE of a directory: "sub").
    let steps: [(&str, Op, &str); 2] = [
        (
            "RENAME",
            |c, d| c.rename(&format!("{d}/a"), &format!("{d}/b")),
            "b",
        ),
        ("CREATE", |c, d| c.mkdir(&format!("{d}/sub")), "sub"),
    ];
    for (what, op, appears) in steps {
        netns(&["cut", "2"]);
        wait_path_down(&client, 1, Duration::from_secs(10)).expect("path 2 down");
        netns(&["mute", "1"]);
        let before = path_counters(&client);
        let t0 = Instant::now();
        let result = std::thread::scope(|s| {
            let running = s.spawn(|| op(&client, &dir));
            // The server runs the call; its reply never leaves.
            let deadline = Instant::now() + Duration::from_secs(10);
            while !on_server(appears) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            assert!(on_server(appears), "{what} ran on the server over path 1");
            assert!(
                !running.is_finished(),
                "{what}'s reply was lost with path 1"
            );
            netns(&["restore", "2"]);
            running.join().unwrap()
        });
        let after = path_counters(&client);
        eprintln!(
            "  {what}: answered after {:.2}s; path 1 timeouts {} -> {}, path 2 calls {} -> {}",
            t0.elapsed().as_secs_f64(),
            before[0].timeouts,
            after[0].timeouts,
            before[1].calls,
            after[1].calls
        );
        result.unwrap_or_else(|e| panic!("{what} re-sent on path 2 got a false error: {e}"));
        assert!(
            after[0].timeouts > before[0].timeouts,
            "{what} timed out on path 1"
        );
        assert!(after[1].calls > before[1].calls, "{what} re-sent on path 2");
        netns(&["restore", "1"]);
        wait_path_up(&client, 0, Duration::from_secs(20)).expect("path 1 back");
    }
    assert!(client.metadata(&format!("{dir}/a")).is_err());
    assert!(client.metadata(&format!("{dir}/b")).unwrap().is_file());
    assert!(client.metadata(&format!("{dir}/sub")).unwrap().is_dir());
    assert!(
        client.session_recoveries_for_test().is_empty(),
        "one session throughout: {:?}",
        client.session_recoveries_for_test()
    );
    client.remove(&format!("{dir}/b")).unwrap();
    client.rmdir(&format!("{dir}/sub")).unwrap();
    client.rmdir(&dir).unwrap();
    eprintln!("RESULT exactly-once v4.1: RENAME and CREATE re-sent across paths, no false error");
}

// --- throughput ----------------------------------------------------------------

/// Size of the sequential-read file.
const SCAN_BYTES: u64 = 256 << 20;
/// Reads of 1 MiB in flight during the scan.
const SCAN_DEPTH: usize = 32;

/// Reads the whole file sequentially, 1 MiB per READ, SCAN_DEPTH in
/// flight (Batch API); returns MB/s.
fn scan(client: &Client, path: &str) -> f64 {
    let file = client.open(path).expect("open scan file");
    let chunk = 1usize << 20;
    let chunks = SCAN_BYTES / chunk as u64;
    let mut batch = Batch::new(client);
    let mut next = 0u64;
    let mut done = 0u64;
    let mut bytes = 0u64;
    let t0 = Instant::now();
    while next < chunks.min(SCAN_DEPTH as u64) {
        batch
            .read_owned(&file, next * chunk as u64, vec![0u8; chunk], next)
            .expect("submit read");
        next += 1;
    }
    while done < chunks {
        for c in batch.wait(1, Some(Duration::from_secs(60))) {
            let n = c.result.expect("scan read");
            assert_eq!(n, chunk, "full 1 MiB read at chunk {}", c.token);
            bytes += n as u64;
            done += 1;
            if next < chunks {
                let buf = c.buffer.unwrap_or_else(|| vec![0u8; chunk]);
                batch
                    .read_owned(&file, next * chunk as u64, buf, next)
                    .expect("submit read");
                next += 1;
            }
        }
    }
    bytes as f64 / t0.elapsed().as_secs_f64() / 1e6
}

#[test]
fn four_rate_limited_paths_read_at_least_3_4x_one_path() {
    require_netns!("four_rate_limited_paths_read_at_least_3_4x_one_path");
    let _env = TestEnv::new("throughput", Duration::from_secs(180));
    // Write the file with the paths still unlimited.
    let path = common::unique("mp-scan");
    {
        let c = Client::mount(&target(
            &[1, 2, 3, 4],
            &[("connections", "2"), ("stable", "unstable")],
        ))
        .expect("mount 4 paths");
        let f = c.create(&path).expect("create scan file");
        let t0 = Instant::now();
        let mut data = vec![0u8; 4 << 20];
        for (i, b) in data.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(37) ^ 0x5a;
        }
        for i in 0..SCAN_BYTES / data.len() as u64 {
            f.write_all_at(&data, i * data.len() as u64).expect("write");
        }
        f.fsync().expect("fsync");
        eprintln!(
            "  wrote {} MiB in {:.2}s",
            SCAN_BYTES >> 20,
            t0.elapsed().as_secs_f64()
        );
    }
    for k in 1..=4 {
        netns(&["rate", &k.to_string(), "200"]);
    }
    let mount = |paths: &[u8]| {
        Client::mount(&target(paths, &[("connections", "2")])).expect("mount for the scan")
    };
    let mut best = 0.0f64;
    let mut last = (0.0, 0.0, 0.0);
    for round in 1..=3 {
        let one = scan(&mount(&[1]), &path);
        let two = scan(&mount(&[1, 2]), &path);
        let c4 = mount(&[1, 2, 3, 4]);
        let four = scan(&c4, &path);
        let ratio = four / one;
        eprintln!(
            "  round {round}: 1 path {one:.1} MB/s, 2 paths {two:.1} MB/s, 4 paths {four:.1} MB/s: \
             4/1 = {ratio:.2}x, 2/1 = {:.2}x",
            two / one
        );
        print_paths("4-path scan", &c4);
        best = best.max(ratio);
        last = (one, two, four);
        if ratio >= 3.4 {
            break;
        }
    }
    eprintln!(
        "RESULT throughput (200 Mbit/s per path, {} MiB, 1 MiB reads x{SCAN_DEPTH}, sockbuf={}): \
         1 path {:.1} MB/s, 2 paths {:.1} MB/s, 4 paths {:.1} MB/s; best 4/1 ratio {best:.2}x",
        SCAN_BYTES >> 20,
        sockbuf(),
        last.0,
        last.1,
        last.2
    );
    for k in 1..=4 {
        netns(&["rate", &k.to_string(), "off"]);
    }
    let _ = mount(&[1]).remove(&path);
    assert!(
        best >= 3.4,
        "4 paths read only {best:.2}x as fast as 1 path (want >= 3.4x)"
    );
}
