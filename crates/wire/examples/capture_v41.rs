//! Captures the golden NFSv4.1 records of `crates/wire/testdata/` from a
//! real server: runs the scripted session of `tests/v41/scenario.rs` with
//! this crate's encoders, checks every reply against `tests/v41/facts.rs`,
//! and writes each step's reply (and the hot path's calls) as
//! `ganesha_v41_<step>_reply.bin` / `_call.bin`, plus `README-v41.md`.
//!
//! ```sh
//! scripts/vectors/capture-vectors-v41.sh       # starts a server and runs this
//! cargo run -p directnfs-wire --example capture_v41 -- URL OUTDIR
//! ```
//! URL is the server's v4.1 URL (`scripts/server/nfs-server.sh url --vers 4.1`).

// A dev tool: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/v41/mod.rs"]
mod v41;

use std::fmt::Write as _;
use std::path::Path;

use v41::client::Target;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(url), Some(outdir)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: capture_v41 NFS_URL OUTDIR");
        std::process::exit(2);
    };
    let target = Target::parse(url).unwrap_or_else(|e| panic!("{e}"));
    let cap =
        v41::scenario::run(&target, None).unwrap_or_else(|e| panic!("session against {url}: {e}"));
    let outdir = Path::new(outdir);
    let names: Vec<&str> = cap.steps.iter().map(|s| s.name).collect();
    assert_eq!(names, v41::facts::STEPS, "the scenario's steps");
    let mut readme = String::new();
    for step in &cap.steps {
        let facts = v41::facts::check(step.name, &step.exchange);
        let reply = format!("ganesha_v41_{}_reply.bin", step.name);
        std::fs::write(outdir.join(&reply), &step.exchange.reply).unwrap();
        writeln!(readme, "### `{reply}`\n").unwrap();
        for f in &facts {
            writeln!(readme, "- {f}").unwrap();
        }
        readme.push('\n');
        if step.keep_call {
            let call = format!("ganesha_v41_{}_call.bin", step.name);
            std::fs::write(outdir.join(&call), &step.exchange.call).unwrap();
            writeln!(
                readme,
                "### `{call}`\n\n- {} bytes: the call of `{reply}`, made by the hot-path encoder\n",
                step.exchange.call.len()
            )
            .unwrap();
        }
    }
    writeln!(readme, "### Across steps\n").unwrap();
    for f in v41::facts::check_across(|name| &cap.step(name).unwrap().exchange) {
        writeln!(readme, "- {f}").unwrap();
    }
    let header = std::env::var("DNFS_V41_README_HEADER")
        .ok()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .unwrap_or_default();
    std::fs::write(outdir.join("README-v41.md"), header + &readme).unwrap();
    eprintln!(
        "capture_v41: {} steps written to {}",
        cap.steps.len(),
        outdir.display()
    );
}
