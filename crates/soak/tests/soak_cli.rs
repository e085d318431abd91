//! The soak's command line: bad arguments are refused before any topology
//! is made. (scripts/ci/soak.sh also builds the soak through this test
//! target, so that it is the binary of the workspace's test build.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

fn soak(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_dnfs-soak"))
        .args(args)
        .output()
        .expect("run dnfs-soak");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_length_of_zero_negative_or_not_a_number_is_refused() {
    for bad in ["0", "-1", "NaN", "inf", "three"] {
        let arg = format!("--minutes={bad}");
        let (code, err) = soak(&[&arg, "--state-dir", "/nonexistent/soak"]);
        assert_eq!(code, 2, "--minutes {bad}: {err}");
        assert!(err.contains("--minutes"), "--minutes {bad}: {err}");
    }
}

#[test]
fn paths_outside_two_to_four_and_unknown_fault_kinds_are_refused() {
    for args in [
        &["--paths", "1"][..],
        &["--paths", "5"],
        &["--without", "flood"],
    ] {
        let (code, err) = soak(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(args[0]), "{args:?}: {err}");
    }
}

#[test]
fn help_names_every_fault_kind_it_can_leave_out() {
    let out = Command::new(env!("CARGO_BIN_EXE_dnfs-soak"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for kind in ["cut", "blackhole", "jukebox", "kill"] {
        assert!(help.contains(kind), "{help}");
    }
}
