//! A real NFSv4.1 session against the server of `DNFS_TEST_URL_V41`
//! (`scripts/server/nfs-server.sh url --vers 4.1` of a server started with
//! `DNFS_NFS4=1`; `scripts/test.sh` sets it): the scenario of
//! `v41/scenario.rs` runs with this crate's encoders and decoders, in a
//! directory of its own under the export, and every reply must show the
//! facts of `v41/facts.rs`, the same the golden vectors show. Skipped when
//! the variable is unset, unless `DNFS_TEST_REQUIRE_SERVER=1`.

// Tests: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod v41;

use v41::client::Target;
use v41::facts::{check, check_across, STEPS};

#[test]
fn session_against_ganesha_shows_the_golden_facts() {
    let Some(url) = std::env::var("DNFS_TEST_URL_V41")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        assert!(
            std::env::var("DNFS_TEST_REQUIRE_SERVER")
                .ok()
                .filter(|v| !v.is_empty())
                .is_none(),
            "DNFS_TEST_REQUIRE_SERVER is set but DNFS_TEST_URL_V41 is not"
        );
        // The line directnfs_testkit::server::skipped writes (this crate
        // does not depend on the test kit, which depends on it).
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED session_against_ganesha_shows_the_golden_facts: DNFS_TEST_URL_V41 is not set"
        );
        return;
    };
    let target = Target::parse(&url).unwrap();
    let workdir = format!("v41-live-{}", std::process::id());
    let cap = v41::scenario::run(&target, Some(&workdir)).unwrap_or_else(|e| panic!("{url}: {e}"));
    let names: Vec<&str> = cap.steps.iter().map(|s| s.name).collect();
    assert_eq!(names, STEPS);
    for step in &cap.steps {
        check(step.name, &step.exchange);
    }
    check_across(|name| &cap.step(name).unwrap().exchange);
}
