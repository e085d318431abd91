//! Smoke test of `dnfs bench` against a real server.
//!
//! Needs `DNFS_TEST_URL` (the export URL printed by `scripts/server/nfs-server.sh
//! start DIR`) and `DNFS_TEST_EXPORT_DIR` (DIR, for the local engine);
//! without them the test says so loudly and passes as skipped (fails when
//! `DNFS_TEST_REQUIRE_SERVER` is set).

use std::process::Command;

fn env_or_skip() -> Option<(String, String)> {
    let (url, dir) = directnfs_testkit::server::url_and_export_dir("bench_smoke")?;
    Some((url, dir.display().to_string()))
}

/// `nfs://host/export?q` + `/name` -> `nfs://host/export/name?q`.
fn file_url(export_url: &str, name: &str) -> String {
    match export_url.split_once('?') {
        Some((base, q)) => format!("{}/{name}?{q}", base.trim_end_matches('/')),
        None => format!("{}/{name}", export_url.trim_end_matches('/')),
    }
}

#[test]
fn oltp_directnfs_and_local_verify() {
    let Some((url, dir)) = env_or_skip() else {
        return;
    };
    let name = format!("bench-smoke-{}.dat", std::process::id());
    let target = file_url(&url, &name);
    let local = format!("{}/{name}", dir.trim_end_matches('/'));
    let json = std::env::temp_dir().join(format!("bench-smoke-{}.json", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_dnfs"))
        .args([
            "bench",
            "oltp",
            "--target",
            &target,
            "--local-path",
            &local,
            "--size",
            "64m",
            "--duration",
            "2",
            "--warmup",
            "0",
            "--engine",
            "directnfs,local",
            "--verify",
            "--quiet",
            "--json",
        ])
        .arg(&json)
        .output()
        .expect("run dnfs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "dnfs bench failed: {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    assert!(stdout.contains("directnfs"), "table: {stdout}");
    let text = std::fs::read_to_string(&json).expect("json written");
    let v: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    assert_eq!(v["workload"], "oltp");
    for k in [
        "sessions",
        "queue_depth",
        "block",
        "write_pct",
        "duration_s",
        "file_size",
        "target",
    ] {
        assert!(v["params"].get(k).is_some(), "params.{k} missing: {text}");
    }
    let runs = v["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 2, "one run per engine: {text}");
    for r in runs {
        for k in [
            "engine",
            "sessions",
            "queue_depth",
            "ops",
            "iops",
            "mb_per_s",
            "errors",
            "latency_us",
            "cpu_us_per_io",
            "cpu_s_per_gb",
            "server_cpu_us_per_io",
            "verify",
        ] {
            assert!(r.get(k).is_some(), "runs[].{k} missing: {r}");
        }
        for k in ["mean", "p50", "p99", "p999", "max"] {
            assert!(r["latency_us"][k].as_f64().is_some(), "latency_us.{k}: {r}");
        }
        assert_eq!(r["errors"], 0, "{r}");
        assert_eq!(r["verify"], "ok", "{r}");
        assert!(r["iops"].as_f64().unwrap_or(0.0) > 0.0, "{r}");
        assert!(r["server_cpu_us_per_io"].is_null(), "{r}");
    }
    let engines: Vec<&str> = runs.iter().filter_map(|r| r["engine"].as_str()).collect();
    assert_eq!(engines, ["directnfs", "local"]);
    let _ = std::fs::remove_file(&json);
    // Remove the data file through NFS (Ganesha caches directory entries).
    let _ = Command::new(env!("CARGO_BIN_EXE_dnfs"))
        .args(["rm", &target])
        .output();
}

#[test]
fn redo_formats_its_log_once_and_repeats_rotate_the_engine_order() {
    let Some((url, dir)) = env_or_skip() else {
        return;
    };
    let name = format!("bench-smoke-redo-{}.dat", std::process::id());
    let target = file_url(&url, &name);
    let local = format!("{}/{name}", dir.trim_end_matches('/'));
    let log = format!("{local}.redo");
    let run = || {
        let out = Command::new(env!("CARGO_BIN_EXE_dnfs"))
            .args([
                "bench",
                "redo",
                "--target",
                &target,
                "--local-path",
                &local,
                "--size",
                "16m",
                "--duration",
                "1",
                "--warmup",
                "0",
                "--engine",
                "directnfs,local",
                "--repeat",
                "2",
                "--verify",
                "--quiet",
            ])
            .output()
            .expect("run dnfs");
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(
            out.status.success(),
            "dnfs bench redo failed: {}\nstderr:\n{stderr}",
            out.status
        );
        stderr
    };
    let first = run();
    assert!(
        first.contains("formatting"),
        "a new redo log is formatted at full size: {first}"
    );
    let meta = std::fs::metadata(&log).expect("redo log exists");
    assert_eq!(meta.len(), 16 << 20);
    assert!(
        std::os::unix::fs::MetadataExt::blocks(&meta) * 512 >= 16 << 20,
        "the redo log is allocated, not sparse"
    );
    // Run labels in order: each repeat starts with the next engine.
    let order: Vec<&str> = first
        .lines()
        .filter(|l| l.starts_with('['))
        .filter_map(|l| l.split_whitespace().nth(1))
        .collect();
    assert_eq!(
        order,
        ["directnfs", "local", "local", "directnfs"],
        "{first}"
    );
    let second = run();
    assert!(
        !second.contains("formatting"),
        "an allocated log is reused: {second}"
    );
    let _ = Command::new(env!("CARGO_BIN_EXE_dnfs"))
        .args(["rm", &target])
        .output();
    let _ = std::fs::remove_file(&log);
}

/// `redo --fsync-every`: directnfs in unstable mode with write-behind on
/// and off, and the local engine, each verified; JSON says the interval;
/// libnfs and other workloads are refused with a message.
#[test]
fn redo_fsync_every_runs_with_write_behind_on_and_off_and_verifies() {
    let Some((url, dir)) = env_or_skip() else {
        return;
    };
    let name = format!("bench-smoke-fsync-{}.dat", std::process::id());
    let local = format!("{}/{name}", dir.trim_end_matches('/'));
    let json = std::env::temp_dir().join(format!("bench-smoke-fsync-{}.json", std::process::id()));
    let bench = |url: &str, engines: &str, workload: &str| {
        let target = file_url(url, &name);
        let json = json.to_string_lossy().into_owned();
        Command::new(env!("CARGO_BIN_EXE_dnfs"))
            .args([
                "bench",
                workload,
                "--target",
                &target,
                "--local-path",
                &local,
                "--size",
                "16m",
                "--duration",
                "1",
                "--warmup",
                "0",
                "--engine",
                engines,
                "--fsync-every",
                "8",
                "--verify",
                "--quiet",
                "--json",
                &json,
            ])
            .output()
            .expect("run dnfs")
    };
    let sep = if url.contains('?') { '&' } else { '?' };
    for wb in ["8m", "0"] {
        let url = format!("{url}{sep}stable=unstable&write_behind={wb}");
        let out = bench(&url, "directnfs,local", "redo");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "write_behind={wb}: {}\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains("fsync every 8 writes"), "{stdout}");
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&json).expect("json")).expect("parse");
        assert_eq!(report["params"]["fsync_every"], 8);
        for run in report["runs"].as_array().expect("runs") {
            assert_eq!(run["verify"], "ok", "{run}");
            assert_eq!(run["errors"], 0, "{run}");
        }
    }
    let out = bench(&url, "directnfs,libnfs", "redo");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("libnfs"));
    let out = bench(&url, "directnfs", "oltp");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("redo only"));
    let _ = Command::new(env!("CARGO_BIN_EXE_dnfs"))
        .args(["rm", &file_url(&url, &name)])
        .output();
    let _ = std::fs::remove_file(format!("{local}.redo"));
    let _ = std::fs::remove_file(&json);
}

#[test]
fn mixed_reports_every_class_with_io_classes_off_on_and_through_libnfs() {
    let Some((url, dir)) = env_or_skip() else {
        return;
    };
    let name = format!("bench-mixed-{}.dat", std::process::id());
    let target = file_url(&url, &name);
    let json = std::env::temp_dir().join(format!("bench-mixed-{}.json", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_dnfs"))
        .args([
            "bench",
            "mixed",
            "--target",
            &target,
            "--size",
            "16m",
            "--duration",
            "1",
            "--warmup",
            "0.2",
            "-p",
            "2",
            "-s",
            "2",
            "--quiet",
            "--json",
        ])
        .arg(&json)
        .output()
        .expect("run dnfs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "dnfs bench mixed failed: {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    assert!(
        stdout.contains("classes on: log p99 mixed / alone"),
        "table: {stdout}"
    );
    let text = std::fs::read_to_string(&json).expect("json written");
    let rows: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let rows = rows.as_array().expect("rows");
    // Per mode (classes off, on, then the same mix through libnfs): the
    // log alone, then log, data and bulk under the mix.
    assert_eq!(rows.len(), 12, "{text}");
    let modes: Vec<_> = rows.iter().map(|r| r["classes"].as_str()).collect();
    assert_eq!(
        modes,
        [["off"; 4], ["on"; 4], ["libnfs"; 4]]
            .concat()
            .into_iter()
            .map(Some)
            .collect::<Vec<_>>(),
        "{text}"
    );
    for r in rows {
        assert!(
            r["ops"].as_u64().unwrap_or(0) > 0,
            "a class made no I/O: {r}"
        );
        assert!(r["p99_us"].as_f64().unwrap_or(0.0) > 0.0, "{r}");
    }
    for f in [name.clone(), format!("{name}.redo")] {
        let _ = std::fs::remove_file(std::path::Path::new(&dir).join(f));
    }
    let _ = std::fs::remove_file(&json);
}

#[test]
fn hedge_reports_the_healthy_path_then_hedging_off_and_on() {
    let Some((url, dir)) = env_or_skip() else {
        return;
    };
    let name = format!("bench-hedge-{}.dat", std::process::id());
    let target = file_url(&url, &name);
    let json = std::env::temp_dir().join(format!("bench-hedge-{}.json", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_dnfs"))
        .args([
            "bench",
            "hedge",
            "--target",
            &target,
            "--size",
            "4m",
            "--duration",
            "1",
            "--warmup",
            "0.2",
            "--connections",
            "2",
            "--quiet",
            "--json",
        ])
        .arg(&json)
        .output()
        .expect("run dnfs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "dnfs bench hedge failed: {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    assert!(stdout.contains("hedge: p99 off / on"), "table: {stdout}");
    let text = std::fs::read_to_string(&json).expect("json written");
    let rows: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let rows = rows.as_array().expect("rows");
    // The target's first path alone, then hedging off and on.
    assert_eq!(rows.len(), 3, "{text}");
    assert_eq!(
        rows.iter().map(|r| r["hedge"].as_str()).collect::<Vec<_>>(),
        [Some("healthy"), Some("off"), Some("on")]
    );
    for r in &rows[..2] {
        assert_eq!(
            r["hedges_sent"].as_u64(),
            Some(0),
            "hedged without hedge=on: {text}"
        );
    }
    for r in rows {
        assert!(r["ops"].as_u64().unwrap_or(0) > 0, "no reads: {r}");
        assert_eq!(r["errors"].as_u64(), Some(0), "{r}");
    }
    let _ = std::fs::remove_file(std::path::Path::new(&dir).join(&name));
    let _ = std::fs::remove_file(&json);
}
