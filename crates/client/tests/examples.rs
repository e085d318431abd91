//! The examples of `crates/client/examples/` run against the test server
//! (`DNFS_TEST_URL`) and do what they print.
//!
//! `cargo test` builds the examples before it runs the tests; when only
//! this test was asked for (`--test examples`), the test builds the one it
//! needs with the same cargo and profile.

// Test code: a failed expectation is a test failure, said in words.
#![allow(clippy::expect_used)]

use std::path::PathBuf;
use std::process::{Command, Output};

/// The built example `name`, next to this test binary's profile directory
/// (`target/<profile>/examples/NAME`).
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps");
    let path = profile_dir.join("examples").join(name);
    if !path.is_file() {
        let profile = profile_dir
            .file_name()
            .and_then(|p| p.to_str())
            .expect("profile directory name");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "-p", "directnfs", "--example", name, "--profile"])
            .arg(if profile == "debug" { "dev" } else { profile })
            .status()
            .expect("run cargo build --example");
        assert!(status.success(), "cargo build --example {name} failed");
    }
    path
}

fn run(name: &str, args: &[&str]) -> (Output, String, String) {
    let out = Command::new(example(name))
        .args(args)
        .env_remove("DNFS_URL")
        .output()
        .expect("run the example");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, stdout, stderr)
}

#[test]
fn open_read_write_example_writes_reads_back_and_removes_its_file() {
    let Some(url) = directnfs_testkit::server::url("open_read_write_example") else {
        return;
    };
    let (out, stdout, stderr) = run("open_read_write", &[&url]);
    assert!(
        out.status.success(),
        "exit {:?}\n{stdout}{stderr}",
        out.status
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].starts_with("mounted "), "{stdout}");
    let created = lines[1].strip_prefix("created ").expect("a created line");
    assert_eq!(
        &lines[2..6],
        [
            "wrote 8197 bytes",
            "fsync: durable",
            "read back 8197 bytes: match",
            "size on the server: 8197 bytes"
        ],
        "{stdout}"
    );
    assert_eq!(lines[6], format!("removed {created}"));
    // It did remove it: the server no longer has the name.
    let client = directnfs::Client::connect(&url).expect("connect");
    let gone = client.metadata(created).expect_err("the file is gone");
    assert_eq!(gone.kind(), std::io::ErrorKind::NotFound, "{gone}");
}

#[test]
fn open_read_write_example_fails_with_a_message_on_a_bad_url() {
    let (out, stdout, stderr) = run("open_read_write", &["http://not-nfs/"]);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.starts_with("open_read_write: ") && stderr.contains("nfs://"),
        "{stderr}"
    );
    let (out, _, stderr) = run("open_read_write", &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr.contains("usage: open_read_write NFS_URL"),
        "{stderr}"
    );
}

#[test]
fn batch_example_reads_back_what_it_wrote() {
    let Some(url) = directnfs_testkit::server::url("batch_example") else {
        return;
    };
    let (out, stdout, stderr) = run("batch", &[&url]);
    assert!(
        out.status.success(),
        "exit {:?}\n{stdout}{stderr}",
        out.status
    );
    assert!(
        stdout.contains("read 32 blocks back in one batch: match"),
        "{stdout}"
    );
}
