//! sqlbench — a TPC-B-like SQL benchmark (the pgbench default script) on
//! SQLite, run on directnfs (this crate's VFS) and on the local file
//! system, side by side.
//!
//! ```text
//! cargo build --release -p directnfs-sqlite --lib --examples
//! target/release/examples/sqlbench --url 'nfs://127.0.0.1/export?nfsport=2049&mountport=20048' \
//!     [--local-dir /var/tmp/sqlbench] [--scale 1] [--clients 1,4] [--duration 10] \
//!     [--journal delete|wal|truncate|persist] [--synchronous full|normal] [--json FILE] \
//!     [--calls N] [--cache-mib N] [--repeat N]
//! ```
//!
//! `--repeat N` runs every client count N times per engine, the engines
//! taking turns (directnfs, local, directnfs, ...), and reports each
//! engine's median TPS and the ratio of the medians: on a shared or small
//! machine one run's TPS moves by 10% or more from one run to the next.
//!
//! `--cache-mib N` sets every connection's page cache (`PRAGMA
//! cache_size`) to N MiB on both engines; the default is SQLite's own
//! (2 MiB). directnfs has no client cache by design (a database caches
//! its own pages), so a page missing from SQLite's cache is a READ round
//! trip, where the local engine finds it in the kernel's page cache: a
//! cache sized to the database is the setting a DBA moving a database to
//! directnfs would choose, and the benchmark shows both.
//!
//! `--calls N` first runs N transactions on one connection (after up to
//! 100 to warm up) and prints the NFS calls they made per transaction, by
//! procedure, for the client and per file (from the process's statistics
//! endpoint): counts, repeatable however busy the machine is. The per-file
//! lines count the application's operations (one xWrite is one WRITE
//! there, however many it was coalesced with); the client line counts RPCs.
//!
//! Per engine it creates `sqlbench.db` (pgbench_branches / tellers /
//! accounts / history, 100 000 accounts per scale unit), then runs each
//! client count for `--duration` seconds: every client is a thread with its
//! own connection running
//!
//! ```sql
//! BEGIN IMMEDIATE;
//! UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
//! SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
//! UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
//! UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
//! INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (...);
//! COMMIT;
//! ```
//!
//! and reports transactions per second, latency and the directnfs/local
//! ratio. A check at the end verifies that the branch, teller and account
//! balance sums equal the history's (no lost or partial transaction).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a benchmark program: fail loudly

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rusqlite::{params, Connection, OpenFlags};

#[derive(Debug, Clone)]
struct Args {
    url: Option<String>,
    local_dir: PathBuf,
    scale: i64,
    clients: Vec<usize>,
    duration: Duration,
    journal: String,
    synchronous: String,
    json: Option<PathBuf>,
    /// Transactions of the NFS-call count (`--calls N`; 0 = none).
    calls: u64,
    /// Page cache per connection in MiB (`--cache-mib`; None = SQLite's).
    cache_mib: Option<u64>,
    /// Runs per engine and client count (`--repeat`), interleaved.
    repeat: usize,
}

fn usage() -> ! {
    eprintln!(
        "usage: sqlbench --url NFS_URL [--local-dir DIR] [--scale N] [--clients 1,4] \
         [--duration SECS] [--journal delete|wal|truncate|persist] [--synchronous full|normal] [--json FILE] [--calls N] [--cache-mib N] [--repeat N]\n\
         (--url defaults to $DNFS_TEST_URL; --url none runs the local engine only)"
    );
    std::process::exit(2)
}

fn parse_args() -> Args {
    let mut a = Args {
        url: std::env::var("DNFS_TEST_URL")
            .ok()
            .filter(|u| !u.is_empty()),
        local_dir: std::env::temp_dir().join("sqlbench-local"),
        scale: 1,
        clients: vec![1, 4],
        duration: Duration::from_secs(10),
        journal: "delete".into(),
        synchronous: "full".into(),
        json: None,
        calls: 0,
        cache_mib: None,
        repeat: 1,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().unwrap_or_else(|| usage());
        match k.as_str() {
            "--url" => a.url = Some(v()).filter(|u| u != "none"),
            "--local-dir" => a.local_dir = PathBuf::from(v()),
            "--scale" => a.scale = v().parse().unwrap_or_else(|_| usage()),
            "--clients" => {
                a.clients = v()
                    .split(',')
                    .map(|c| c.parse().unwrap_or_else(|_| usage()))
                    .collect()
            }
            "--duration" => {
                a.duration = Duration::from_secs_f64(v().parse().unwrap_or_else(|_| usage()))
            }
            "--journal" => a.journal = v(),
            "--synchronous" => a.synchronous = v(),
            "--json" => a.json = Some(PathBuf::from(v())),
            "--calls" => a.calls = v().parse().unwrap_or_else(|_| usage()),
            "--cache-mib" => a.cache_mib = Some(v().parse().unwrap_or_else(|_| usage())),
            "--repeat" => {
                a.repeat = v()
                    .parse()
                    .ok()
                    .filter(|&n| n >= 1)
                    .unwrap_or_else(|| usage())
            }
            _ => usage(),
        }
    }
    a
}

/// The extension next to this example (target/<profile>/), or
/// $DNFS_SQLITE_EXT.
fn extension() -> PathBuf {
    if let Some(p) = std::env::var_os("DNFS_SQLITE_EXT") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(Path::parent).unwrap();
    dir.join("libdirectnfs_sqlite.so")
}

#[derive(Debug, Clone)]
enum Engine {
    Directnfs(String),
    Local(PathBuf),
}

impl Engine {
    fn name(&self) -> &'static str {
        match self {
            Engine::Directnfs(_) => "directnfs",
            Engine::Local(_) => "local",
        }
    }

    fn open(&self, a: &Args) -> Connection {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let c = match self {
            Engine::Directnfs(name) => {
                Connection::open_with_flags_and_vfs(name, flags, "directnfs").unwrap()
            }
            Engine::Local(path) => Connection::open_with_flags(path, flags).unwrap(),
        };
        c.busy_timeout(Duration::from_secs(60)).unwrap();
        c.execute_batch(&format!("PRAGMA synchronous={}", a.synchronous))
            .unwrap();
        if let Some(mib) = a.cache_mib {
            // Negative: KiB rather than pages.
            c.execute_batch(&format!("PRAGMA cache_size=-{}", mib * 1024))
                .unwrap();
        }
        c
    }
}

/// Database URL `nfs://host/export/sqlbench.db?query`.
fn nfs_db(url: &str) -> String {
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    let mut u = format!("{}/sqlbench.db", path.trim_end_matches('/'));
    if !query.is_empty() {
        u = format!("{u}?{query}");
    }
    u
}

fn remove_local(path: &Path) {
    for suffix in ["", "-journal", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

fn remove_nfs(url: &str) {
    // stats=off: this program's own client stays out of the process's
    // statistics endpoint, which the extension's client then owns
    // (`--calls` reads it).
    let sep = if url.contains('?') { '&' } else { '?' };
    let Ok(client) = dnfs::Client::connect(&format!("{url}{sep}stats=off")) else {
        return;
    };
    let dir = client.target_path().trim_end_matches('/').to_string();
    for suffix in ["", "-journal", "-wal", "-shm", ".dnfs-lock", ".dnfs-want"] {
        let _ = client.remove(&format!("{dir}/sqlbench.db{suffix}"));
    }
}

/// pgbench -i: schema and rows.
fn initialize(c: &Connection, a: &Args) {
    let got: String = c
        .query_row(&format!("PRAGMA journal_mode={}", a.journal), [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(got.to_lowercase(), a.journal.to_lowercase());
    c.execute_batch(
        "CREATE TABLE pgbench_branches(bid INTEGER PRIMARY KEY, bbalance INTEGER NOT NULL, filler TEXT);
         CREATE TABLE pgbench_tellers(tid INTEGER PRIMARY KEY, bid INTEGER NOT NULL, tbalance INTEGER NOT NULL, filler TEXT);
         CREATE TABLE pgbench_accounts(aid INTEGER PRIMARY KEY, bid INTEGER NOT NULL, abalance INTEGER NOT NULL, filler TEXT);
         CREATE TABLE pgbench_history(tid INTEGER, bid INTEGER, aid INTEGER, delta INTEGER, mtime INTEGER, filler TEXT);",
    )
    .unwrap();
    c.execute_batch("BEGIN").unwrap();
    for b in 1..=a.scale {
        c.execute("INSERT INTO pgbench_branches VALUES(?1, 0, NULL)", [b])
            .unwrap();
    }
    for t in 1..=10 * a.scale {
        c.execute(
            "INSERT INTO pgbench_tellers VALUES(?1, ?2, 0, NULL)",
            [t, (t - 1) / 10 + 1],
        )
        .unwrap();
    }
    {
        let filler = " ".repeat(84);
        let mut ins = c
            .prepare("INSERT INTO pgbench_accounts VALUES(?1, ?2, 0, ?3)")
            .unwrap();
        for aid in 1..=100_000 * a.scale {
            ins.execute(params![aid, (aid - 1) / 100_000 + 1, filler])
                .unwrap();
        }
    }
    c.execute_batch("COMMIT").unwrap();
}

/// A small, fast PRNG (xorshift64*), one per client.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo + 1) as u64) as i64
    }
}

#[derive(Debug, Default, Clone)]
struct RunResult {
    engine: &'static str,
    clients: usize,
    txns: u64,
    retries: u64,
    seconds: f64,
    tps: f64,
    lat_mean_ms: f64,
    lat_p50_ms: f64,
    lat_p99_ms: f64,
}

/// The median of `v` (the mean of the middle two for an even count).
fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    })
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _)
        if f.code == rusqlite::ErrorCode::DatabaseBusy || f.code == rusqlite::ErrorCode::DatabaseLocked)
}

/// One TPC-B transaction; Err(true) means "busy, retry".
fn transaction(c: &Connection, a: &Args, rng: &mut Rng) -> Result<(), bool> {
    let aid = rng.range(1, 100_000 * a.scale);
    let tid = rng.range(1, 10 * a.scale);
    let bid = rng.range(1, a.scale);
    let delta = rng.range(-5000, 5000);
    let run = || -> rusqlite::Result<()> {
        c.execute_batch("BEGIN IMMEDIATE")?;
        c.prepare_cached("UPDATE pgbench_accounts SET abalance = abalance + ?1 WHERE aid = ?2")?
            .execute([delta, aid])?;
        let _bal: i64 = c
            .prepare_cached("SELECT abalance FROM pgbench_accounts WHERE aid = ?1")?
            .query_row([aid], |r| r.get(0))?;
        c.prepare_cached("UPDATE pgbench_tellers SET tbalance = tbalance + ?1 WHERE tid = ?2")?
            .execute([delta, tid])?;
        c.prepare_cached("UPDATE pgbench_branches SET bbalance = bbalance + ?1 WHERE bid = ?2")?
            .execute([delta, bid])?;
        c.prepare_cached(
            "INSERT INTO pgbench_history(tid, bid, aid, delta, mtime) VALUES(?1, ?2, ?3, ?4, strftime('%s','now'))",
        )?
        .execute([tid, bid, aid, delta])?;
        c.execute_batch("COMMIT")
    };
    match run() {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = c.execute_batch("ROLLBACK");
            if is_busy(&e) {
                Err(true)
            } else {
                panic!("transaction failed: {e}")
            }
        }
    }
}

fn run(engine: &Engine, a: &Args, clients: usize) -> RunResult {
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let workers: Vec<_> = (0..clients)
        .map(|i| {
            let (engine, a, stop) = (engine.clone(), a.clone(), Arc::clone(&stop));
            std::thread::spawn(move || {
                let c = engine.open(&a);
                let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ ((i as u64 + 1) * 7919));
                let (mut lat, mut retries) = (Vec::new(), 0u64);
                while !stop.load(Ordering::Relaxed) {
                    let t = Instant::now();
                    loop {
                        match transaction(&c, &a, &mut rng) {
                            Ok(()) => break,
                            Err(_) => retries += 1,
                        }
                    }
                    lat.push(t.elapsed().as_secs_f64() * 1e3);
                }
                (lat, retries)
            })
        })
        .collect();
    std::thread::sleep(a.duration);
    stop.store(true, Ordering::Relaxed);
    let mut lat = Vec::new();
    let mut retries = 0;
    for w in workers {
        let (l, r) = w.join().unwrap();
        lat.extend(l);
        retries += r;
    }
    let seconds = start.elapsed().as_secs_f64();
    lat.sort_by(f64::total_cmp);
    let pct = |p: f64| {
        lat.get(((lat.len() as f64 * p) as usize).min(lat.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0.0)
    };
    RunResult {
        engine: engine.name(),
        clients,
        txns: lat.len() as u64,
        retries,
        seconds,
        tps: lat.len() as f64 / seconds,
        lat_mean_ms: lat.iter().sum::<f64>() / lat.len().max(1) as f64,
        lat_p50_ms: pct(0.5),
        lat_p99_ms: pct(0.99),
    }
}

/// The NFS calls of this process so far, from its statistics endpoint
/// (the extension's client publishes there): per server and per file.
fn own_stats() -> dnfs::stats::StatsSnapshot {
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let path = dnfs::publish::process_dir(uid).join(format!("{}.sock", std::process::id()));
    dnfs::publish::read_endpoint(&path)
        .unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
        .stats
}

/// `--calls N`: N transactions on one connection, then the NFS calls they
/// made, by procedure, per transaction: for the whole client and for each
/// file. Counts, not times: repeatable however busy the machine is.
fn count_calls(engine: &Engine, a: &Args) {
    let c = engine.open(a);
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    // Warm up: the page cache, the WAL past its first frames.
    for _ in 0..a.calls.min(100) {
        while transaction(&c, a, &mut rng).is_err() {}
    }
    let before = own_stats();
    for _ in 0..a.calls {
        while transaction(&c, a, &mut rng).is_err() {}
    }
    let after = own_stats();
    let n = a.calls as f64;
    let delta = |b: &dnfs::stats::IoSnapshot, a: &dnfs::stats::IoSnapshot| {
        a.calls_by_proc
            .iter()
            .filter_map(|(p, &v)| {
                let d = v - b.calls_by_proc.get(p).copied().unwrap_or(0);
                (d > 0).then(|| format!("{p} {:.2}", d as f64 / n))
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!(
        "  NFS calls per transaction ({} transactions, 1 client):",
        a.calls
    );
    let zero = dnfs::stats::IoSnapshot::default();
    // The client's totals (RPCs), then each file's (application calls).
    let servers = after.servers.iter().map(|s| {
        let then = before.servers.iter().find(|x| x.name == s.name);
        (None, &s.totals, then.map(|x| &x.totals))
    });
    let files = after.files.iter().map(|f| {
        let then = before.files.iter().find(|x| x.path == f.path);
        (Some(&f.path), &f.totals, then.map(|x| &x.totals))
    });
    for (path, now, then) in servers.chain(files) {
        let b = then.unwrap_or(&zero);
        let d = delta(b, now);
        let Some(path) = path else {
            println!("    client total: {d}");
            // Times are indicative only (a busy machine stretches them).
            let lat: Vec<String> = now
                .latency_us
                .iter()
                .filter_map(|(class, l)| {
                    let (c0, s0) = b
                        .latency_us
                        .get(class)
                        .map_or((0, 0.0), |x| (x.count, x.sum_us));
                    (l.count > c0)
                        .then(|| format!("{class} {:.0}", (l.sum_us - s0) / (l.count - c0) as f64))
                })
                .collect();
            println!("    mean latency, us (indicative): {}", lat.join(", "));
            continue;
        };
        if !d.is_empty() {
            let waits = now.fsync_waits - b.fsync_waits;
            println!(
                "    {path}: {d}; fsyncs that waited for write-behind {:.2}",
                waits as f64 / n
            );
        }
    }
}

/// Sums of branches, tellers and accounts all equal the history's.
fn verify(c: &Connection) -> bool {
    let q = |sql: &str| -> i64 { c.query_row(sql, [], |r| r.get(0)).unwrap() };
    let h = q("SELECT coalesce(sum(delta), 0) FROM pgbench_history");
    let ok = h == q("SELECT sum(bbalance) FROM pgbench_branches")
        && h == q("SELECT sum(tbalance) FROM pgbench_tellers")
        && h == q("SELECT sum(abalance) FROM pgbench_accounts");
    let integrity: String = c
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    ok && integrity == "ok"
}

fn main() {
    let a = parse_args();
    {
        let c = Connection::open_in_memory().unwrap();
        // SAFETY: loading this workspace's own extension.
        unsafe {
            c.load_extension_enable().unwrap();
            c.load_extension(extension(), None::<&str>)
                .unwrap_or_else(|e| panic!("load {}: {e}", extension().display()));
            c.load_extension_disable().unwrap();
        }
    }
    let mut engines = Vec::new();
    if let Some(url) = &a.url {
        remove_nfs(url);
        engines.push(Engine::Directnfs(nfs_db(url)));
    }
    std::fs::create_dir_all(&a.local_dir).unwrap();
    let local = a.local_dir.join("sqlbench.db");
    remove_local(&local);
    engines.push(Engine::Local(local.clone()));

    println!(
        "sqlbench: TPC-B-like, scale {} ({} accounts), journal_mode={}, synchronous={}, cache {}, {:?} s per run, SQLite {}",
        a.scale,
        100_000 * a.scale,
        a.journal,
        a.synchronous,
        a.cache_mib
            .map_or("SQLite's default (2 MiB)".to_string(), |m| format!("{m} MiB")),
        a.duration.as_secs_f64(),
        rusqlite::version()
    );
    for e in &engines {
        let c = e.open(&a);
        let t = Instant::now();
        initialize(&c, &a);
        println!(
            "  {:<9} initialized in {:.1} s ({})",
            e.name(),
            t.elapsed().as_secs_f64(),
            match e {
                Engine::Directnfs(u) => u.clone(),
                Engine::Local(p) => p.display().to_string(),
            }
        );
        drop(c);
        if a.calls > 0 && matches!(e, Engine::Directnfs(_)) {
            count_calls(e, &a);
        }
    }
    // The engines take turns run by run, so a slower minute of the machine
    // falls on both.
    let mut results = Vec::new();
    for &n in &a.clients {
        for round in 1..=a.repeat {
            for e in &engines {
                let r = run(e, &a, n);
                println!(
                    "  {:<9} clients {:>3}{}: {:>8.1} tps  ({} txns, {} busy retries, latency mean {:.2} ms p50 {:.2} ms p99 {:.2} ms)",
                    r.engine,
                    r.clients,
                    if a.repeat > 1 { format!(", run {round}") } else { String::new() },
                    r.tps,
                    r.txns,
                    r.retries,
                    r.lat_mean_ms,
                    r.lat_p50_ms,
                    r.lat_p99_ms
                );
                results.push(r);
            }
        }
    }
    let mut verified = Vec::new();
    for e in &engines {
        let ok = verify(&e.open(&a));
        println!(
            "  {:<9} verify: {}",
            e.name(),
            if ok { "ok" } else { "FAILED" }
        );
        verified.push((e.name(), ok));
    }
    let median_tps = |engine: &str, n: usize| {
        median(
            results
                .iter()
                .filter(|r| r.engine == engine && r.clients == n)
                .map(|r| r.tps)
                .collect(),
        )
    };
    println!(
        "\n  clients   directnfs tps   local tps   directnfs/local{}",
        if a.repeat > 1 {
            format!("   (medians of {} runs)", a.repeat)
        } else {
            String::new()
        }
    );
    let mut medians = Vec::new();
    for &n in &a.clients {
        if let (Some(d), Some(l)) = (median_tps("directnfs", n), median_tps("local", n)) {
            println!("  {:>7}   {:>13.1}   {:>9.1}   {:>15.2}", n, d, l, d / l);
            medians.push(format!(
                "{{\"clients\":{n},\"directnfs_tps\":{d:.1},\"local_tps\":{l:.1},\"ratio\":{:.3}}}",
                d / l
            ));
        }
    }
    if let Some(path) = &a.json {
        let runs: Vec<String> = results
            .iter()
            .map(|r| {
                format!(
                    "{{\"engine\":\"{}\",\"clients\":{},\"txns\":{},\"busy_retries\":{},\"seconds\":{:.3},\"tps\":{:.1},\"latency_ms\":{{\"mean\":{:.3},\"p50\":{:.3},\"p99\":{:.3}}}}}",
                    r.engine, r.clients, r.txns, r.retries, r.seconds, r.tps, r.lat_mean_ms, r.lat_p50_ms, r.lat_p99_ms
                )
            })
            .collect();
        let verify: Vec<String> = verified
            .iter()
            .map(|(e, ok)| format!("\"{e}\":\"{}\"", if *ok { "ok" } else { "failed" }))
            .collect();
        let json = format!(
            "{{\"workload\":\"tpcb\",\"params\":{{\"scale\":{},\"journal_mode\":\"{}\",\"synchronous\":\"{}\",\"cache_mib\":{},\"duration_s\":{},\"repeat\":{}}},\"runs\":[{}],\"medians\":[{}],\"verify\":{{{}}}}}\n",
            a.scale,
            a.journal,
            a.synchronous,
            a.cache_mib.map_or("null".to_string(), |m| m.to_string()),
            a.duration.as_secs_f64(),
            a.repeat,
            runs.join(","),
            medians.join(","),
            verify.join(",")
        );
        std::fs::write(path, json).unwrap();
    }
    if verified.iter().any(|(_, ok)| !ok) {
        std::process::exit(1);
    }
}
