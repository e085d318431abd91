//! The parent process: options, data file, one child process per engine
//! run, then the table, the JSON and the plots.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::process::{Command, Stdio};
use std::time::Instant;

use directnfs::config::NfsUrl;

use super::block::BLOCK_SIZE;
use super::engines;
use super::job::{Engine, Job, Location, RunResult, WorkerReply, Workload};
use super::report::{self, Params, Report, Skip};
use super::worker::PROGRESS_TAG;
use super::BenchOpts;

/// Resolved settings for one invocation.
#[derive(Debug, Clone)]
struct Plan {
    engines: Vec<Engine>,
    sessions: usize,
    queue_depth: usize,
    block: u64,
    duration: f64,
    warmup: f64,
    connections: usize,
    steps: Vec<usize>,
}

fn plan(workload: Workload, o: &BenchOpts) -> Result<Plan, String> {
    let mut engines = Vec::new();
    for e in o.engine.split(',').filter(|s| !s.trim().is_empty()) {
        let e = Engine::parse(e)?;
        if !engines.contains(&e) {
            engines.push(e);
        }
    }
    if engines.is_empty() {
        return Err("--engine names no engine".into());
    }
    let (d_sess, d_qd, d_block, d_dur, d_warm, d_conn) = match workload {
        Workload::Oltp => (2, 16, 8192, 10.0, 2.0, 2),
        Workload::Sweep => (1, 8, 8192, 5.0, 1.0, 2),
        Workload::Scan => (1, 4, 1 << 20, 5.0, 1.0, 4),
        Workload::Redo => (1, 1, 0, 10.0, 1.0, 1),
    };
    // connections: --connections, else the URL's connections= or the
    // dnfstab's connections:, else the workload's default
    let cfg_conn = match o.target.as_deref() {
        Some(t) if t.starts_with("nfs://") => NfsUrl::parse(t)
            .ok()
            .filter(|_| t.contains("connections="))
            .map(|u| u.options.connections),
        Some(t) => engines::target_of(t, config_str(o).as_deref())
            .ok()
            .map(|t| t.options.connections),
        None => None,
    };
    let block = o.block.unwrap_or(d_block);
    let p = Plan {
        engines,
        sessions: o.sessions.unwrap_or(d_sess).max(1),
        queue_depth: o.queue_depth.unwrap_or(d_qd).max(1),
        block,
        duration: o.duration.unwrap_or(d_dur).max(0.0),
        warmup: o.warmup.unwrap_or(d_warm).max(0.0),
        connections: o.connections.or(cfg_conn).unwrap_or(d_conn).clamp(1, 64),
        steps: {
            let mut v = Vec::new();
            let mut s = 1;
            while s <= o.max_sessions.max(1) {
                v.push(s);
                s *= 2;
            }
            if v.last() != Some(&o.max_sessions.max(1)) {
                v.push(o.max_sessions.max(1));
            }
            v
        },
    };
    if o.size < BLOCK_SIZE as u64 || o.size % BLOCK_SIZE as u64 != 0 {
        return Err(format!("--size must be a multiple of {BLOCK_SIZE} bytes"));
    }
    match workload {
        Workload::Oltp | Workload::Sweep => {
            if block == 0 || block % BLOCK_SIZE as u64 != 0 || block > o.size {
                return Err(format!(
                    "--block must be a multiple of {BLOCK_SIZE} bytes, at most --size"
                ));
            }
            if o.write_pct > 100 {
                return Err("--write-pct must be 0..100".into());
            }
        }
        Workload::Scan => {
            if block < BLOCK_SIZE as u64 || block % BLOCK_SIZE as u64 != 0 || block > 16 << 20 {
                return Err("scan --block must be a multiple of 8k, at most 16m".into());
            }
            if o.workers == 0 {
                return Err("--workers must be at least 1".into());
            }
        }
        Workload::Redo => {
            if block != 0 && !(512..=(1 << 20)).contains(&block) {
                return Err("redo --block must be 512 bytes .. 1 MiB".into());
            }
            if o.fsync_every > 0 && p.engines.contains(&Engine::Libnfs) {
                return Err(
                    "redo --fsync-every: not supported by the libnfs engine (use -e directnfs,local)"
                        .into(),
                );
            }
            if o.fsync_every > 0 && p.queue_depth != 1 {
                return Err("redo --fsync-every needs queue depth 1 (-q 1)".into());
            }
        }
    }
    if workload != Workload::Redo && o.fsync_every > 0 {
        return Err("--fsync-every is for redo only".into());
    }
    Ok(p)
}

/// Runs the benchmark; Ok(true) when everything ran clean.
pub fn run(workload: Workload, o: BenchOpts) -> Result<bool, String> {
    let p = plan(workload, &o)?;
    let redo = workload == Workload::Redo;
    let suffix = if redo { ".redo" } else { "" };
    let show = !o.quiet && std::io::stderr().is_terminal();

    // --- where the file is -------------------------------------------------
    let mut loc = Location {
        url: o.target.clone(),
        config: config_str(&o),
        host: None,
        nfs_port: None,
        mount_port: None,
        uid: None,
        gid: None,
        export: None,
        rel_path: None,
        local_path: o
            .local_path
            .as_ref()
            .map(|p| format!("{}{suffix}", p.display())),
    };
    if let Some(t) = &o.target {
        let target = engines::target_of(t, config_str(&o).as_deref())?;
        loc.host = target.paths.first().map(|p| p.server.clone());
        loc.nfs_port = target.options.nfs_port;
        loc.mount_port = target.options.mount_port;
        loc.uid = target.options.uid;
        loc.gid = target.options.gid;
        if target.paths.len() > 1 {
            eprintln!(
                "target {t}: {} paths to server {} (directnfs uses all; libnfs uses {})",
                target.paths.len(),
                target.name,
                loc.host.as_deref().unwrap_or("?")
            );
        }
        let prep = super::prepare::prepare_nfs(
            t,
            config_str(&o).as_deref(),
            o.size,
            !redo,
            suffix,
            o.quiet,
        )?;
        loc.export = prep.export;
        loc.rel_path = prep.rel_path;
        if let Some(lp) = &loc.local_path {
            match std::fs::metadata(lp) {
                Ok(m) if m.len() == o.size => {}
                Ok(m) => eprintln!(
                    "warning: --local-path {lp} has {} bytes, not {}: is it the same file as {t}?",
                    m.len(),
                    o.size
                ),
                Err(e) => eprintln!("warning: --local-path {lp}: {e}"),
            }
        }
    } else if let Some(lp) = &o.local_path {
        let lp = std::path::PathBuf::from(format!("{}{suffix}", lp.display()));
        super::prepare::prepare_local(&lp, o.size, !redo, o.quiet)?;
    } else {
        return Err("give --target nfs://... (and/or --local-path for the local engine)".into());
    }

    // --- which engines can run ----------------------------------------------
    let mut skipped = Vec::new();
    let mut engines_ok = Vec::new();
    for &e in &p.engines {
        let why = match e {
            Engine::Directnfs if o.target.is_none() => Some("no --target given".to_string()),
            Engine::Libnfs if o.target.is_none() => Some("no --target given".to_string()),
            Engine::Libnfs => engines::probe_libnfs().err(),
            Engine::Local if o.local_path.is_none() => Some(
                "no --local-path given (the data file as the local file system sees it)"
                    .to_string(),
            ),
            _ => None,
        };
        match why {
            Some(r) => {
                eprintln!("dnfs bench: engine {} SKIPPED: {r}", e.name());
                skipped.push(Skip {
                    engine: e.name().into(),
                    reason: r,
                });
            }
            None => engines_ok.push(e),
        }
    }

    // --- the runs -------------------------------------------------------------
    let steps: Vec<usize> = if workload == Workload::Sweep {
        p.steps.clone()
    } else {
        vec![p.sessions]
    };
    let total_runs = steps.len() * engines_ok.len() * o.repeat.max(1);
    let mut collected: BTreeMap<(usize, usize), Vec<RunResult>> = BTreeMap::new();
    let mut failed = Vec::new();
    let mut k = 0;
    let t_all = Instant::now();
    for &sessions in &steps {
        for rep in 0..o.repeat.max(1) {
            // Each repeat starts with the next engine: the first run after
            // a change of workload pays for whatever the previous one left
            // (dirty pages being written back, a cold cache), and no engine
            // may always be the one to pay.
            let n = engines_ok.len();
            for ei in (0..n).map(|i| (i + rep) % n) {
                let e = engines_ok[ei];
                k += 1;
                let job = Job {
                    workload: if workload == Workload::Sweep {
                        Workload::Oltp
                    } else {
                        workload
                    },
                    engine: e,
                    loc: loc.clone(),
                    sessions,
                    queue_depth: p.queue_depth,
                    block: p.block,
                    write_pct: if matches!(workload, Workload::Scan | Workload::Redo) {
                        if redo {
                            100
                        } else {
                            0
                        }
                    } else {
                        o.write_pct
                    },
                    duration_s: p.duration,
                    warmup_s: p.warmup,
                    file_size: o.size,
                    workers: o.workers,
                    connections: p.connections,
                    // the server does no work for the local engine
                    server_pid: o.server_pid.filter(|_| e != Engine::Local),
                    verify: o.verify,
                    progress: show,
                    reap_min: o.reap_min,
                    fsync_every: o.fsync_every,
                };
                let label = format!(
                    "[{k}/{total_runs}] {} {}{}",
                    e.name(),
                    workload.name(),
                    if workload == Workload::Sweep {
                        format!(" sessions={sessions}")
                    } else if o.repeat > 1 {
                        format!(" #{}", rep + 1)
                    } else {
                        String::new()
                    }
                );
                match run_child(&job, &label, show) {
                    Ok(WorkerReply::Ok(r)) => {
                        if !show {
                            eprintln!(
                                "{label}: {:.0} IOPS, {:.1} MB/s, mean {:.0} us, errors {}",
                                r.iops, r.mb_per_s, r.latency_us.mean, r.errors
                            );
                        }
                        collected.entry((sessions, ei)).or_default().push(*r);
                    }
                    Ok(WorkerReply::Skipped(why)) => {
                        eprintln!("dnfs bench: engine {} SKIPPED: {why}", e.name());
                        if !skipped.iter().any(|s: &Skip| s.engine == e.name()) {
                            skipped.push(Skip {
                                engine: e.name().into(),
                                reason: why,
                            });
                        }
                    }
                    Ok(WorkerReply::Failed(why)) | Err(why) => {
                        eprintln!("dnfs bench: {label} FAILED: {why}");
                        failed.push(Skip {
                            engine: e.name().into(),
                            reason: why,
                        });
                    }
                }
            }
        }
    }
    let mut runs = Vec::new();
    for (_, v) in collected {
        if let Some(m) = report::median_run(v, workload) {
            runs.push(m);
        }
    }
    let mut engine_notes = BTreeMap::new();
    for &e in &engines_ok {
        let j = Job {
            workload,
            engine: e,
            loc: loc.clone(),
            sessions: p.sessions,
            queue_depth: p.queue_depth,
            block: p.block,
            write_pct: o.write_pct,
            duration_s: p.duration,
            warmup_s: p.warmup,
            file_size: o.size,
            workers: o.workers,
            connections: p.connections,
            server_pid: o.server_pid,
            verify: o.verify,
            progress: false,
            reap_min: o.reap_min,
            fsync_every: o.fsync_every,
        };
        engine_notes.insert(e.name().to_string(), engines::note(&j));
    }
    let rep = Report {
        workload: workload.name().into(),
        params: Params {
            sessions: match workload {
                Workload::Scan => o.workers,
                Workload::Sweep => o.max_sessions,
                _ => p.sessions,
            },
            queue_depth: p.queue_depth,
            block: p.block,
            write_pct: match workload {
                Workload::Scan => 0,
                Workload::Redo => 100,
                _ => o.write_pct,
            },
            duration_s: p.duration,
            file_size: o.size,
            target: o.target.clone(),
            warmup_s: p.warmup,
            engines: p.engines.iter().map(|e| e.name().to_string()).collect(),
            workers: o.workers,
            max_sessions: o.max_sessions,
            connections: p.connections,
            local_path: loc.local_path.clone(),
            server_pid: o.server_pid,
            verify: o.verify,
            repeat: o.repeat.max(1),
            reap_min: o.reap_min,
            fsync_every: o.fsync_every,
        },
        ratios: report::ratios(&runs, workload == Workload::Sweep),
        iops_at_1ms: (workload == Workload::Sweep).then(|| report::iops_at_1ms(&runs)),
        runs,
        skipped,
        failed,
        engine_notes,
    };
    let ok = report::all_ok(&rep);
    let mut out = std::io::stdout().lock();
    let _ = write!(out, "{}", report::table(&rep));
    let _ = out.flush();
    eprintln!(
        "({} runs in {:.1} s)",
        total_runs,
        t_all.elapsed().as_secs_f64()
    );
    if let Some(path) = &o.json {
        let text = serde_json::to_string_pretty(&rep).map_err(|e| e.to_string())?;
        write_file(path, text.as_bytes())?;
        eprintln!("wrote {}", path.display());
    }
    if let Some(path) = &o.plot {
        if let Some(d) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            let _ = std::fs::create_dir_all(d);
        }
        match super::plot::draw(&rep, path) {
            Ok(()) => eprintln!("wrote {}", path.display()),
            Err(e) => {
                eprintln!("dnfs bench: plot {}: {e}", path.display());
                return Ok(false);
            }
        }
    }
    if !ok {
        eprintln!("dnfs bench: some runs had errors, failed verification or failed");
    }
    Ok(ok)
}

fn config_str(o: &BenchOpts) -> Option<String> {
    o.config.as_ref().map(|p| p.display().to_string())
}

fn write_file(path: &std::path::Path, bytes: &[u8]) -> Result<(), String> {
    if let Some(d) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))
}

#[derive(serde::Deserialize)]
struct ProgressLine {
    phase: String,
    t: f64,
    of: f64,
    ops: u64,
}

/// Runs one job in a child process (`dnfs bench worker`).
fn run_child(job: &Job, label: &str, show: bool) -> Result<WorkerReply, String> {
    // /proc/self/exe names this very binary even if a rebuild replaced the
    // file meanwhile: parent and workers always run the same code.
    let proc_exe = std::path::PathBuf::from("/proc/self/exe");
    let exe = if proc_exe.exists() {
        proc_exe
    } else {
        std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?
    };
    let mut child = Command::new(exe)
        .args(["bench", "worker"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("starting the worker: {e}"))?;
    let text = serde_json::to_string(job).map_err(|e| e.to_string())?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(text.as_bytes())
            .map_err(|e| format!("sending the job: {e}"))?;
    }
    let pb = if show {
        let b = indicatif::ProgressBar::new_spinner();
        b.set_message(format!("{label}: connecting"));
        b.enable_steady_tick(std::time::Duration::from_millis(200));
        b
    } else {
        indicatif::ProgressBar::hidden()
    };
    let stderr = child.stderr.take();
    let pb2 = pb.clone();
    let label2 = label.to_string();
    let scan = job.workload == Workload::Scan;
    let io_bytes = job.block as f64;
    let err_thread = std::thread::spawn(move || {
        let Some(se) = stderr else { return };
        let mut last: Option<(f64, u64)> = None;
        for line in BufReader::new(se).lines().map_while(Result::ok) {
            if let Some(js) = line.strip_prefix(PROGRESS_TAG) {
                if let Ok(pl) = serde_json::from_str::<ProgressLine>(js) {
                    let rate = match last {
                        Some((t, n)) if pl.t > t && pl.ops >= n => (pl.ops - n) as f64 / (pl.t - t),
                        _ => 0.0,
                    };
                    last = Some((pl.t, pl.ops));
                    let rate = if scan {
                        format!("{:.0} MB/s", rate * io_bytes / 1e6)
                    } else {
                        format!("{rate:.0} IOPS")
                    };
                    pb2.set_message(format!(
                        "{label2}: {} {:.1}/{:.0} s  {rate}",
                        pl.phase, pl.t, pl.of
                    ));
                }
            } else if pb2.is_hidden() {
                eprintln!("{line}");
            } else {
                pb2.println(line);
            }
        }
    });
    let mut stdout = String::new();
    if let Some(mut so) = child.stdout.take() {
        use std::io::Read;
        let _ = so.read_to_string(&mut stdout);
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    let _ = err_thread.join();
    pb.finish_and_clear();
    let line = stdout
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    serde_json::from_str::<WorkerReply>(line).map_err(|e| {
        format!(
            "worker exited with {status} and no valid reply ({e}): {}",
            line.chars().take(200).collect::<String>()
        )
    })
}
