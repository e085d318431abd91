//! Whether the real-server tests run, read in one place.
//!
//! `DNFS_TEST_URL` names the shared test server (the export URL that
//! `scripts/server/nfs-server.sh start DIR` prints), `DNFS_TEST_EXPORT_DIR` the
//! directory it exports. Without a URL the real-server tests are skipped
//! with a loud line on stderr, unless `DNFS_TEST_REQUIRE_SERVER` is set
//! (as `scripts/test.sh` and CI do): then a missing server is a failure,
//! so a broken set-up cannot pass as a row of skipped tests.

use std::io::Write;
use std::path::PathBuf;

/// The variable, when set and not empty.
fn var(key: &str) -> Option<String> {
    std::env::var(key).ok().filter(|v| !v.is_empty())
}

/// True when the real-server tests must run (`DNFS_TEST_REQUIRE_SERVER`).
pub fn required() -> bool {
    var("DNFS_TEST_REQUIRE_SERVER").is_some()
}

/// Says loudly that `test` is skipped and why, on a line that begins with
/// [`SKIP_MARKER`]. Written straight to stderr: libtest captures
/// `eprintln!` of passing tests, which would hide it. Every test that skips
/// all or part of what it checks says so through this function:
/// `scripts/test.sh` counts these lines and fails a run that has any.
pub fn skipped(test: &str, why: &str) {
    let _ = writeln!(std::io::stderr(), "{SKIP_MARKER}{test}: {why}");
}

/// How a line saying that a test was skipped begins (`scripts/test.sh`
/// looks for it in the output of every test step).
pub const SKIP_MARKER: &str = "SKIPPED ";

/// For a test that can check something only where the machine allows it
/// (root, a local view of the export): panics with `why` when the tests
/// must run ([`required`]: CI, which has all of it), otherwise says that
/// `test` is skipped ([`skipped`]). For the tests that would otherwise
/// skip part of what they check without a word.
#[track_caller]
pub fn cannot_check(test: &str, why: &str) {
    assert!(
        !required(),
        "{test}: {why} (DNFS_TEST_REQUIRE_SERVER is set: the check must run)"
    );
    skipped(test, why);
}

/// Whether a test that needs root and the network-namespace topology
/// (`DNFS_NETNS_TESTS=1`, set by `script`) runs now. `DNFS_NETNS_TESTS=later`
/// (set by `scripts/test.sh` for its `cargo test` step, when it runs
/// `script` itself afterwards) says on stderr that the test is deferred to
/// `script`, which is not a skip; unset, the test is skipped ([`skipped`]).
pub fn netns_tests(test: &str, script: &str) -> bool {
    match var("DNFS_NETNS_TESTS").as_deref() {
        Some("1") => true,
        Some("later") => {
            let _ = writeln!(std::io::stderr(), "DEFERRED {test}: run by {script}");
            false
        }
        _ => {
            skipped(
                test,
                &format!(
                    "needs root and the network-namespace topology: run {script} \
                     (it sets DNFS_NETNS_TESTS=1)"
                ),
            );
            false
        }
    }
}

/// `DNFS_TEST_URL`, or `None` after saying that `test` is skipped. Panics
/// instead when the tests must run ([`required`]).
pub fn url(test: &str) -> Option<String> {
    url_of("DNFS_TEST_URL", test)
}

/// `DNFS_TEST_URL_V41` (the same server's NFSv4.1 URL, which
/// `scripts/test.sh` exports), as [`url`] reads `DNFS_TEST_URL`.
pub fn url_v41(test: &str) -> Option<String> {
    url_of("DNFS_TEST_URL_V41", test)
}

/// `DNFS_TEST_URL_NLM`: a server with a lock manager (NLM), which
/// `scripts/test.sh` starts as root (`DNFS_NLM=1`). Skipped without it,
/// unless `DNFS_TEST_REQUIRE_NLM` is set (test.sh sets it when it started
/// one): then a missing URL is a failure.
pub fn url_nlm(test: &str) -> Option<String> {
    if let Some(url) = var("DNFS_TEST_URL_NLM") {
        return Some(url);
    }
    assert!(
        var("DNFS_TEST_REQUIRE_NLM").is_none(),
        "{test}: DNFS_TEST_REQUIRE_NLM is set but DNFS_TEST_URL_NLM is not"
    );
    skipped(
        test,
        "DNFS_TEST_URL_NLM is not set (start a server with `DNFS_NLM=1 scripts/server/nfs-server.sh start DIR`, as root)",
    );
    None
}

/// `DNFS_TEST_URL_KRB5`: the NFSv3 URL of a server that takes Kerberos
/// (`DNFS_KRB5=1 scripts/server/nfs-server.sh start`, after `scripts/server/kdc.sh
/// start`), with the realm's `KRB5_CONFIG` and the test user's
/// `KRB5CCNAME` in the environment. Skipped without it, unless
/// `DNFS_TEST_REQUIRE_KRB5` is set (test.sh sets it when it started the
/// KDC): then a missing URL is a failure.
pub fn url_krb5(test: &str) -> Option<String> {
    if let Some(url) = var("DNFS_TEST_URL_KRB5") {
        return Some(url);
    }
    assert!(
        var("DNFS_TEST_REQUIRE_KRB5").is_none(),
        "{test}: DNFS_TEST_REQUIRE_KRB5 is set but DNFS_TEST_URL_KRB5 is not"
    );
    skipped(
        test,
        "DNFS_TEST_URL_KRB5 is not set (start scripts/server/kdc.sh, then a server with `DNFS_KRB5=1 scripts/server/nfs-server.sh start DIR`)",
    );
    None
}

/// `DNFS_TEST_URL_KRB5P`: the NFSv3 URL of an export of the Kerberos
/// server that takes krb5p only (`DNFS_KRB5P_EXPORT` of
/// `scripts/server/nfs-server.sh`): a mount at any other flavor is
/// refused, so I/O that works there was sealed with krb5p. Skipped
/// without it, unless `DNFS_TEST_REQUIRE_KRB5` is set: then a failure.
pub fn url_krb5p(test: &str) -> Option<String> {
    if let Some(url) = var("DNFS_TEST_URL_KRB5P") {
        return Some(url);
    }
    assert!(
        var("DNFS_TEST_REQUIRE_KRB5").is_none(),
        "{test}: DNFS_TEST_REQUIRE_KRB5 is set but DNFS_TEST_URL_KRB5P is not"
    );
    skipped(
        test,
        "DNFS_TEST_URL_KRB5P is not set (a Kerberos server started with \
         DNFS_KRB5P_EXPORT=DIR: its krb5p-only export)",
    );
    None
}

/// The RPC-with-TLS front of the tests (`scripts/server/tls-front.py`, in
/// front of the main server's NFS port): its state directory (the CA,
/// server and client certificates) from `DNFS_TEST_TLS_DIR` and its first
/// port (STARTTLS; +1 mtls, +2 TLS from the first byte, +3 no TLS) from
/// `DNFS_TEST_TLS_PORT`. Skipped without them, unless
/// `DNFS_TEST_REQUIRE_TLS` is set (test.sh sets it when it started the
/// front): then missing ones are a failure.
pub fn tls_front(test: &str) -> Option<(PathBuf, u16)> {
    let dir = var("DNFS_TEST_TLS_DIR");
    let port = var("DNFS_TEST_TLS_PORT").and_then(|p| p.parse::<u16>().ok());
    if let (Some(dir), Some(port)) = (dir, port) {
        return Some((PathBuf::from(dir), port));
    }
    assert!(
        var("DNFS_TEST_REQUIRE_TLS").is_none(),
        "{test}: DNFS_TEST_REQUIRE_TLS is set but DNFS_TEST_TLS_DIR or DNFS_TEST_TLS_PORT is not"
    );
    skipped(
        test,
        "DNFS_TEST_TLS_DIR/DNFS_TEST_TLS_PORT are not set (start \
         `scripts/server/tls-front.py start DIR NFS_PORT PORT` in front of the test server)",
    );
    None
}

fn url_of(key: &str, test: &str) -> Option<String> {
    if let Some(url) = var(key) {
        return Some(url);
    }
    assert!(
        !required(),
        "{test}: DNFS_TEST_REQUIRE_SERVER is set but {key} is not"
    );
    skipped(
        test,
        &format!(
            "{key} is not set (start a server with `scripts/server/nfs-server.sh start DIR` \
             and export the URL it prints; DNFS_TEST_REQUIRE_SERVER=1 makes this a failure)"
        ),
    );
    None
}

/// `DNFS_TEST_URL` and `DNFS_TEST_EXPORT_DIR`, for tests that also look at
/// the exported files directly; `None` (skipped, or a panic when
/// [`required`]) when either is missing.
pub fn url_and_export_dir(test: &str) -> Option<(String, PathBuf)> {
    let url = url(test)?;
    if let Some(dir) = var("DNFS_TEST_EXPORT_DIR") {
        return Some((url, PathBuf::from(dir)));
    }
    assert!(
        !required(),
        "{test}: DNFS_TEST_REQUIRE_SERVER is set but DNFS_TEST_EXPORT_DIR is not"
    );
    skipped(
        test,
        "DNFS_TEST_EXPORT_DIR (the directory the server of DNFS_TEST_URL exports) is not set",
    );
    None
}

/// True when tests that start a Ganesha of their own should run: where the
/// real-server tests run (`DNFS_TEST_URL` or `DNFS_TEST_REQUIRE_SERVER`
/// set), since they need the same packages. Otherwise says that `test` is
/// skipped.
pub fn wanted(test: &str) -> bool {
    if var("DNFS_TEST_URL").is_some() || required() {
        return true;
    }
    skipped(
        test,
        "set DNFS_TEST_URL (scripts/test.sh does) to run real-server tests",
    );
    false
}

/// A tool the tests need from `PATH`, or `None` after saying `test` is
/// skipped; a failure when the tests must run ([`required`]), since
/// `scripts/test.sh` installs it.
pub fn tool(test: &str, name: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(name))
            .find(|c| c.is_file())
    });
    if found.is_none() {
        assert!(
            !required(),
            "{test}: {name} is not installed (scripts/test.sh installs it)"
        );
        skipped(test, &format!("{name} is not installed"));
    }
    found
}
