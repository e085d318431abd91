//! The server the unit tests use: `DNFS_TEST_URL`, shared by the tests of
//! the VFS methods and of the lock file.

/// `DNFS_TEST_URL`, or None after saying loudly that `test` is skipped
/// (a failure instead when `DNFS_TEST_REQUIRE_SERVER` is set).
pub fn url(test: &str) -> Option<String> {
    match std::env::var("DNFS_TEST_URL") {
        Ok(u) if !u.is_empty() => Some(u),
        _ => {
            assert!(
                std::env::var_os("DNFS_TEST_REQUIRE_SERVER").is_none(),
                "{test}: DNFS_TEST_REQUIRE_SERVER is set but DNFS_TEST_URL is not"
            );
            eprintln!("SKIPPED {test}: DNFS_TEST_URL is not set");
            None
        }
    }
}
