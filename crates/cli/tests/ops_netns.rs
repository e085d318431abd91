//! A path cut while 8 directnfs processes do I/O over two paths (network
//! namespaces, `scripts/server/netns.sh`): within a second it shows in `dnfs
//! stats`, `dnfs top`, `dnfs exporter` and every process's alert log; the
//! path's return and a server restart are logged too, and no caller sees
//! an error (hard mount).
//!
//! Needs root and the namespace topology: `scripts/ci/ops-netns-tests.sh`
//! sets `DNFS_NETNS_TESTS=1` (run by `scripts/test.sh`; by hand only under
//! `flock /tmp/dnfs-heavy.lock`: one topology per machine). Otherwise the
//! test prints SKIPPED and passes.

mod common;
mod opskit;

use std::process::Command;
use std::time::{Duration, Instant};

use directnfs::stats::HostStats;

use common::Scratch;
use opskit::*;

ops_worker_entry!();

const STATE_DIR: &str = "/tmp/dnfs-ops-netns";

fn netns(args: &[&str]) -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new("timeout")
        .arg("120")
        .arg("bash")
        .arg(root.join("scripts/server/netns.sh"))
        .args(args)
        .env("DNFS_NETNS_STATE_DIR", STATE_DIR)
        .output()
        .unwrap_or_else(|e| panic!("cannot run netns.sh: {e}"));
    assert!(
        out.status.success(),
        "netns.sh {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Tears the topology down however the test ends.
struct Topology;

impl Drop for Topology {
    fn drop(&mut self) {
        let _ = std::panic::catch_unwind(|| netns(&["down"]));
    }
}

#[test]
fn a_cut_path_shows_everywhere_within_a_second() {
    if !directnfs_testkit::server::netns_tests(
        "a_cut_path_shows_everywhere_within_a_second",
        "scripts/ci/ops-netns-tests.sh",
    ) {
        return;
    }
    let _topology = Topology;
    netns(&["up", "2"]);
    let status = netns(&["status"]);
    let key = |k: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .unwrap_or_else(|| panic!("no {k}= in netns status:\n{status}"))
            .to_owned()
    };
    let (nfs_port, mnt_port, export) = (key("nfs_port"), key("mnt_port"), key("export_path"));
    let scratch = Scratch::new("netns");
    let run_dir = scratch.path("run");
    std::fs::create_dir_all(&run_dir).expect("run dir");
    let run_dir_s = run_dir.to_str().expect("utf8").to_owned();
    let tab = scratch.path("dnfstab");
    std::fs::write(
        &tab,
        format!(
            "server: filer1\nlocal: 10.231.1.1\npath: 10.231.1.2\nlocal: 10.231.2.1\npath: 10.231.2.2\n\
             export: {export} mount: /db\nport: {nfs_port}\nmount_port: {mnt_port}\n\
             connections: 2\ntimeo: 30\n"
        ),
    )
    .expect("dnfstab");
    let tab_s = tab.to_str().expect("utf8").to_owned();

    // Eight processes, each reading and writing 8 KiB blocks over both paths.
    let run = Workers::start_with("netns", 8, |name, release| {
        spawn_worker_with(
            release,
            &[
                ("DNFS_OPS_TAB", &tab_s),
                ("DNFS_OPS_FILE", &format!("/db/{name}")),
                ("DNFS_OPS_UNTIL_RELEASE", "1"),
                ("DNFS_OPS_PACE", "100"),
                ("DIRECTNFS_RUN_DIR", &run_dir_s),
            ],
        )
    });
    let dnfs_env = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_dnfs"))
            .env("DIRECTNFS_RUN_DIR", &run_dir)
            .args(args)
            .output()
            .expect("dnfs")
    };
    let exporter = Exporter::start(Some(&run_dir));
    let top = format!(
        "env DIRECTNFS_RUN_DIR={run_dir_s} {} top --interval 0.5",
        env!("CARGO_BIN_EXE_dnfs")
    );
    let tmux = Tmux::start(&top).expect("tmux (scripts/test.sh installs it)");
    let capture = || tmux.capture();
    let path1_state = || -> Option<String> {
        let out = dnfs_env(&["stats", "--json"]);
        let mut host: HostStats = serde_json::from_slice(&out.stdout).ok()?;
        host.processes.retain(|p| run.pids.contains(&p.pid));
        if host.processes.len() != run.pids.len() {
            return None;
        }
        let agg = host.aggregate();
        let p = agg
            .servers
            .first()?
            .paths
            .iter()
            .find(|p| p.remote.starts_with("10.231.1.2:"))?;
        Some(p.state.clone())
    };
    let exported_down = |pids: &[u32]| -> bool {
        let Some(body) = exporter.scrape() else {
            return false;
        };
        pids.iter().all(|pid| {
            body.lines().any(|l| {
                l.starts_with("directnfs_up{level=\"path\"")
                    && l.contains(&format!("pid=\"{pid}\""))
                    && l.contains("path=\"10.231.1.2:")
                    && l.ends_with(" 0")
            })
        })
    };

    // I/O flows over both paths.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(path1_state().as_deref(), Some("up"));

    // Cut path 1.
    netns(&["cut", "1"]);
    let cut = Instant::now();
    let (mut in_stats, mut in_exporter, mut in_top) = (None, None, None);
    while cut.elapsed() < Duration::from_secs(5)
        && (in_stats.is_none() || in_exporter.is_none() || in_top.is_none())
    {
        if in_stats.is_none() && path1_state().as_deref() == Some("down") {
            in_stats = Some(cut.elapsed());
        }
        if in_exporter.is_none() && exported_down(&run.pids) {
            in_exporter = Some(cut.elapsed());
        }
        if in_top.is_none()
            && capture()
                .lines()
                .any(|l| l.contains("10.231.1.2") && l.contains("[down]"))
        {
            in_top = Some(cut.elapsed());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let in_alerts = run
        .workers
        .iter()
        .map(|w| {
            w.alert(&["10.231.1.2", "DOWN"])
                .map(|(at, _)| at.saturating_duration_since(cut))
        })
        .collect::<Option<Vec<_>>>()
        .map(|v| v.into_iter().max().unwrap_or_default());
    eprintln!(
        "RESULT path cut seen after: stats {in_stats:?}, exporter {in_exporter:?}, top {in_top:?}, \
         alert log (last of 8) {in_alerts:?}"
    );
    for (what, seen) in [
        ("dnfs stats", in_stats),
        ("dnfs exporter", in_exporter),
        ("dnfs top", in_top),
        ("the alert log of every process", in_alerts),
    ] {
        let seen = seen.unwrap_or_else(|| panic!("{what} never showed the cut path"));
        assert!(
            seen < Duration::from_secs(1),
            "{what} showed it after {seen:?}"
        );
    }

    // Restore it: every process logs the path UP, stats says up.
    netns(&["restore", "1"]);
    wait_until(
        Duration::from_secs(20),
        "path UP in every alert log",
        || {
            run.workers
                .iter()
                .all(|w| w.alert(&["10.231.1.2", " UP"]).is_some())
        },
    );
    wait_until(Duration::from_secs(10), "path up in dnfs stats", || {
        path1_state().as_deref() == Some("up")
    });

    // A server restart (verifier change) is logged by every process.
    netns(&["restart-server", "--down", "1"]);
    wait_until(
        Duration::from_secs(40),
        "server restart in every alert log",
        || {
            run.workers
                .iter()
                .all(|w| w.alert(&["server restart detected"]).is_some())
        },
    );
    let sample: Vec<String> = run.workers[0]
        .alerts
        .lock()
        .expect("alerts")
        .iter()
        .map(|(_, l)| l.clone())
        .collect();
    eprintln!("RESULT alert log of one process:\n{}", sample.join("\n"));

    // Hard mount: no caller saw an error through all this.
    let out = dnfs_env(&["stats"]);
    eprintln!(
        "RESULT dnfs stats after the cut:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let finals = run.release_and_collect();
    assert_eq!(finals.len(), 8);
    for p in &finals {
        for f in &p.stats.files {
            assert_eq!(f.totals.errors, 0, "pid {}: {f:?}", p.pid);
        }
    }
    drop(tmux);
    drop(exporter);
}
