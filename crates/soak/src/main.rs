//! `dnfs-soak`: the fault soak (run it through `scripts/ci/soak.sh`).
//!
//! In the multipath topology of `scripts/server/netns.sh` (Ganesha in namespace
//! `dnfs-srv`, here with 3 paths), two clients on a hard mount — one
//! `file_sync`, one `unstable` with periodic fsync — each run blocking and
//! `Batch` workers over a file of checksummed blocks, while a schedule
//! drawn from one seed cuts paths, black-holes them, restores them, makes
//! the proxy on the last path answer NFS3ERR_JUKEBOX, and SIGKILLs and
//! restarts the server. Paths 1.. are direct; the last one goes through a
//! [`FaultProxy`] on the host, so JUKEBOX comes from a real server's path.
//!
//! At the end the clients are dropped, the server is SIGKILLed and
//! restarted once more, and a fresh client reads every block back:
//! it passes when every block verifies, no error reached a caller, and
//! nothing acknowledged as durable (a FILE_SYNC acknowledgement, or an
//! unstable write an fsync returned for) was lost. It prints the seed, the
//! faults injected by kind, the longest caller stall and the throughput,
//! and on failure the command that replays the run.

mod inject;
mod load;
mod report;
mod schedule;
mod topology;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::Parser;
use directnfs::config::MountOptions;
use directnfs::{Client, PathSpec, Target};
use directnfs_testkit::blocks::{Ledger, BLOCK_SIZE};
use directnfs_testkit::proxy::{FaultProxy, ProxyConfig};

use inject::inject;
use load::{Api, FileLoad, Shared, Worker, BLOCKS_PER_FILE};
use report::{report, watch, ClientTotals};
use schedule::{schedule, Event, Fault, FaultCounts};
use topology::Topology;

/// The fault soak of directnfs (see scripts/README.md, "soak.sh").
#[derive(Debug, Parser)]
#[command(name = "dnfs-soak")]
struct Args {
    /// Length of the faulted load, in minutes (fractions allowed).
    #[arg(long, default_value_t = 3.0, value_parser = positive_minutes)]
    minutes: f64,
    /// Seed of the fault schedule and the workers (default: from the clock).
    #[arg(long)]
    seed: Option<u64>,
    /// Paths in the topology (2-4); the last one goes through the proxy.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u8).range(2..=4))]
    paths: u8,
    /// Client `timeo` in deciseconds: how long a silent path holds a call.
    #[arg(long, default_value_t = 20)]
    timeo: u32,
    /// Blocking workers per file (each file also gets one Batch worker).
    #[arg(long, default_value_t = 2)]
    blocking: u64,
    /// Address the JUKEBOX proxy listens on (port: the server's NFS port).
    #[arg(long, default_value = "127.231.0.1")]
    proxy_addr: IpAddr,
    /// State directory of the topology (netns.sh).
    #[arg(long, default_value = "/tmp/dnfs-soak-netns")]
    state_dir: String,
    /// An operation unfinished for this many seconds is a hang: the soak
    /// stops and fails.
    #[arg(long, default_value_t = 120)]
    hang_secs: u64,
    /// Leave the topology up at the end (for a look at the server's log).
    #[arg(long)]
    keep_topology: bool,
    /// Kinds of fault to leave out, comma-separated (cut, blackhole,
    /// jukebox, kill): the schedule stays that of the seed, the faults of
    /// these kinds are skipped. Narrows down which fault a failure needs.
    #[arg(long, value_delimiter = ',', value_enum)]
    without: Vec<Kind>,
}

/// `--minutes`: a finite number above 0 (a negative or NaN length would
/// otherwise run the soak for a second and pass).
fn positive_minutes(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(m) if m.is_finite() && m > 0.0 => Ok(m),
        Ok(_) => Err(format!(
            "{s} is not a length: give a number of minutes above 0"
        )),
        Err(e) => Err(format!("{s}: {e}")),
    }
}

/// A kind of fault, for `--without`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Kind {
    Cut,
    Blackhole,
    Jukebox,
    Kill,
}

impl Kind {
    fn of(fault: Fault) -> Option<Kind> {
        match fault {
            Fault::Cut(_) => Some(Kind::Cut),
            Fault::Blackhole(_) => Some(Kind::Blackhole),
            Fault::JukeboxOn(_) => Some(Kind::Jukebox),
            Fault::KillServer { .. } => Some(Kind::Kill),
            // Restoring a path that was never faulted is harmless.
            Fault::Restore(_) | Fault::JukeboxOff => None,
        }
    }
}

impl Args {
    fn length(&self) -> Duration {
        Duration::from_secs_f64((self.minutes * 60.0).max(1.0))
    }

    /// The command that runs this soak again with the same faults.
    fn replay(&self, seed: u64) -> String {
        let mut cmd = format!(
            "scripts/ci/soak.sh --minutes {} --seed {seed}",
            self.minutes
        );
        if self.paths != 3 {
            cmd += &format!(" --paths {}", self.paths);
        }
        if self.timeo != 20 {
            cmd += &format!(" --timeo {}", self.timeo);
        }
        if self.blocking != 2 {
            cmd += &format!(" --blocking {}", self.blocking);
        }
        if !self.without.is_empty() {
            let kinds: Vec<String> = self
                .without
                .iter()
                .map(|k| format!("{k:?}").to_lowercase())
                .collect();
            cmd += &format!(" --without {}", kinds.join(","));
        }
        cmd
    }
}

fn main() {
    let args = Args::parse();
    let seed = args.seed.unwrap_or_else(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64 % 1_000_000_000)
            .unwrap_or(1)
    });
    let replay = args.replay(seed);
    println!("soak: seed {seed} (replay: {replay})");
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let topo = match Topology::up(&repo, &args.state_dir, args.paths) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("soak: the topology did not come up: {e}");
            std::process::exit(2);
        }
    };
    let ok = match run(&args, seed, &topo) {
        Ok(ok) => ok,
        Err(e) => {
            eprintln!("soak: {e}");
            false
        }
    };
    if !args.keep_topology {
        topo.down();
    }
    if ok {
        println!("soak: PASSED (seed {seed})");
    } else {
        println!("soak: FAILED (seed {seed}); replay with: {replay}");
        std::process::exit(1);
    }
}

/// The mount of one client: the direct paths, then the proxy's.
fn target(topo: &Topology, proxy: SocketAddr, opts: &[(&str, String)]) -> Result<Target, String> {
    let mut options = MountOptions::default();
    options.nfs_port = Some(topo.nfs_port);
    options.mount_port = Some(topo.mnt_port);
    for (k, v) in opts {
        options
            .set(k, v)
            .map_err(|e| format!("option {k}={v}: {e}"))?;
    }
    let mut paths: Vec<PathSpec> = (1..topo.paths)
        .map(|k| PathSpec {
            local: Some(IpAddr::V4(Topology::host_addr(k))),
            server: Topology::server_addr(k).to_string(),
        })
        .collect();
    paths.push(PathSpec {
        local: None,
        server: proxy.ip().to_string(),
    });
    Ok(Target {
        name: "dnfs-srv".into(),
        paths,
        export: Some(topo.export_path.clone()),
        path: topo.export_path.clone(),
        options,
    })
}

/// The whole soak; `Ok(false)` when a check failed.
fn run(args: &Args, seed: u64, topo: &Topology) -> Result<bool, String> {
    let length = args.length();
    let events: Vec<Event> = schedule(seed, topo.paths, length)
        .into_iter()
        .filter(|e| Kind::of(e.fault).is_none_or(|k| !args.without.contains(&k)))
        .collect();
    let proxied = topo.paths;
    let proxy = FaultProxy::start(ProxyConfig {
        listen: SocketAddr::new(args.proxy_addr, topo.nfs_port),
        upstream: SocketAddr::new(IpAddr::V4(Topology::server_addr(proxied)), topo.nfs_port),
        connect_timeout: Duration::from_secs(3),
        seed,
    })
    .map_err(|e| {
        format!(
            "the JUKEBOX proxy cannot listen on {}:{}: {e}",
            args.proxy_addr, topo.nfs_port
        )
    })?;
    let planned = FaultCounts::of(&events);
    println!(
        "soak: {:.1} min over {} paths (1..{} direct, {} through the JUKEBOX proxy at {}), timeo {} ds; \
         {} faults planned: {} cuts, {} black-holes, {} JUKEBOX bursts, {} server kills",
        length.as_secs_f64() / 60.0,
        topo.paths,
        topo.paths - 1,
        proxied,
        proxy.local_addr(),
        args.timeo,
        planned.cuts + planned.blackholes + planned.jukebox_bursts + planned.kills,
        planned.cuts,
        planned.blackholes,
        planned.jukebox_bursts,
        planned.kills
    );
    let common = [
        ("connections", "2".to_string()),
        ("timeo", args.timeo.to_string()),
        ("hard", "1".to_string()),
    ];
    let mut sync_opts = common.to_vec();
    sync_opts.push(("stable", "file_sync".into()));
    let mut unstable_opts = common.to_vec();
    unstable_opts.push(("stable", "unstable".into()));
    let sync_client = Client::mount(&target(topo, proxy.local_addr(), &sync_opts)?)
        .map_err(|e| format!("mount (file_sync): {e}"))?;
    let unstable_client = Client::mount(&target(topo, proxy.local_addr(), &unstable_opts)?)
        .map_err(|e| format!("mount (unstable): {e}"))?;

    let workers_per_file = args.blocking + 1;
    let files = [
        FileLoad {
            mode: "file_sync",
            path: format!("/soak-{seed}-file_sync.dat"),
            ledger: Ledger::new(BLOCKS_PER_FILE),
            unstable: false,
            workers: workers_per_file,
        },
        FileLoad {
            mode: "unstable",
            path: format!("/soak-{seed}-unstable.dat"),
            ledger: Ledger::new(BLOCKS_PER_FILE),
            unstable: true,
            workers: workers_per_file,
        },
    ];
    let t0 = Instant::now();
    for (f, c) in files.iter().zip([&sync_client, &unstable_client]) {
        let file = c
            .create(&f.path)
            .map_err(|e| format!("create {}: {e}", f.path))?;
        f.fill(&file).map_err(|e| format!("fill {}: {e}", f.path))?;
    }
    println!(
        "soak: 2 files of {} MiB filled in {:.1}s; {} workers ({} blocking + 1 Batch per file)",
        (BLOCKS_PER_FILE * BLOCK_SIZE as u64) >> 20,
        t0.elapsed().as_secs_f64(),
        2 * workers_per_file,
        args.blocking
    );

    let mut workers = Vec::new();
    for (fi, f) in files.iter().enumerate() {
        for slot in 0..workers_per_file {
            workers.push(Worker {
                id: workers.len(),
                file: f,
                slot,
                api: if slot < args.blocking {
                    Api::Blocking
                } else {
                    Api::Batch
                },
                seed: seed
                    ^ ((fi as u64 + 1) << 32)
                    ^ (slot + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15),
            });
        }
    }
    let shared = Shared::new(workers.len());
    let injected = Mutex::new(FaultCounts::default());
    let fault_failure: Mutex<Option<String>> = Mutex::new(None);
    std::thread::scope(|s| {
        for w in &workers {
            let client = if w.file.unstable {
                &unstable_client
            } else {
                &sync_client
            };
            let shared = &shared;
            s.spawn(move || w.run(shared, client));
        }
        s.spawn(|| {
            if let Err(e) = inject(&events, topo, &proxy, &shared, &injected) {
                eprintln!("soak: fault injection failed: {e}");
                *fault_failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
            }
        });
        watch(
            &shared,
            length,
            Duration::from_secs(args.hang_secs),
            &args.replay(seed),
        );
        shared.stop.store(true, Ordering::Relaxed);
    });
    let secs = shared.elapsed().as_secs_f64();
    let client_totals =
        [("file_sync", &sync_client), ("unstable", &unstable_client)].map(|(name, c)| {
            let totals = c.stats().servers.first().map(|s| {
                let t = &s.totals;
                ClientTotals {
                    calls: t.calls(),
                    retransmits: t.retransmits,
                    timeouts: t.timeouts,
                    failovers: t.failovers,
                    reconnects: t.reconnects,
                }
            });
            (name, totals)
        });
    drop(sync_client);
    drop(unstable_client);
    let proxy_counts = proxy.counts();
    drop(proxy);

    // A last crash with nothing running: what was acknowledged as durable
    // must be there after it.
    println!("soak: load stopped; SIGKILL the server once more, restart it, read every block back");
    topo.run(&["restart-server", "--kill", "--down", "1"])?;
    let verify_client = Client::mount(&Target {
        paths: vec![PathSpec {
            local: Some(IpAddr::V4(Topology::host_addr(1))),
            server: Topology::server_addr(1).to_string(),
        }],
        ..target(topo, SocketAddr::new(args.proxy_addr, 0), &[])?
    })
    .map_err(|e| format!("mount for the final pass: {e}"))?;
    let mut violations = 0usize;
    for f in &files {
        let file = verify_client
            .open(&f.path)
            .map_err(|e| format!("open {}: {e}", f.path))?;
        let report = f.ledger.check_all(BLOCK_SIZE, 128, |first, buf| {
            file.read_exact_at(buf, first * BLOCK_SIZE as u64)
        });
        println!(
            "soak: verify {}: {} blocks: {} at the latest acknowledged write, {} with an in-doubt write landed, \
             {} with an unsynced write lost; {} violation(s)",
            f.mode,
            report.blocks,
            report.latest,
            report.in_doubt_landed,
            report.uncommitted_lost,
            report.violations.len()
        );
        for v in report.violations.iter().take(20) {
            println!("soak:   {v}");
        }
        violations += report.violations.len();
        let _ = verify_client.remove(&f.path);
    }

    let injected = *injected.lock().unwrap_or_else(|p| p.into_inner());
    report(&shared, secs, &injected, &proxy_counts, &client_totals);
    let errors = shared.error_count.load(Ordering::Relaxed);
    let fault_failure = fault_failure
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    if let Some(e) = &fault_failure {
        println!("soak: the fault schedule could not be carried out: {e}");
    }
    Ok(errors == 0 && violations == 0 && fault_failure.is_none() && shared.ops() > 0)
}
