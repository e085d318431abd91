//! One test body, run on each protocol version (as rustls runs its suite
//! once per crypto provider): [`on_each_version!`] expands a body into a
//! module of two tests, `on_nfsv3` and `on_nfsv41`, so that a fact is
//! asserted once and checked on both versions. What differs between the
//! versions is written in the body as a per-version expectation.
//!
//! The shared server's URLs: `DNFS_TEST_URL` for NFSv3 and
//! `DNFS_TEST_URL_V41` for NFSv4.1 (`scripts/test.sh` exports both), or,
//! when `DNFS_TEST_URL` is not set, the private server `common::server`
//! starts, which serves both. With `DNFS_TEST_URL` set and
//! `DNFS_TEST_URL_V41` not, the NFSv4.1 test skips loudly (`SKIPPED`), or
//! fails under `DNFS_TEST_REQUIRE_SERVER`.

use directnfs_testkit::ganesha::OwnGanesha;

/// A protocol version a test body runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V3,
    V41,
}

impl Version {
    /// The shared test server's URL for this version, with `options`
    /// (`key=value&...`, may be empty) appended. Call it from a body that
    /// [`on_each_version!`] runs (it checked the URL is there).
    pub fn url(self, options: &str) -> String {
        let url = match self {
            Version::V3 => super::server().url.clone(),
            Version::V41 => super::server()
                .url_v41
                .clone()
                .expect("checked by on_each_version!: the NFSv4.1 URL"),
        };
        with_options(&url, options)
    }

    /// The URL of `server` (started with `DNFS_NFS4=1`, see [`own_env`])
    /// for this version, with `options` appended.
    pub fn own_url(self, server: &OwnGanesha, options: &str) -> String {
        let url = match self {
            Version::V3 => server.url().to_string(),
            Version::V41 => super::url_v41_of(server.url()).expect("a URL with nfsport="),
        };
        with_options(&url, options)
    }

    /// A client of the shared test server for this version, with `options`.
    pub fn client(self, options: &str) -> directnfs::Client {
        let url = self.url(options);
        directnfs::Client::connect(&url).unwrap_or_else(|e| panic!("{url}: {e}"))
    }
}

/// `nfs-server.sh` settings for a server of a test's own that serves both
/// versions: a private rpcbind, the given ports, NFSv4.1 without a grace
/// period.
pub fn own_env<'a>(nfs_port: &'a str, mnt_port: &'a str) -> [(&'static str, &'a str); 5] {
    [
        ("DNFS_PRIVATE_RPCBIND", "1"),
        ("DNFS_NFS_PORT", nfs_port),
        ("DNFS_MNT_PORT", mnt_port),
        ("DNFS_NFS4", "1"),
        ("DNFS_NFS4_GRACE", "0"),
    ]
}

fn with_options(url: &str, options: &str) -> String {
    if options.is_empty() {
        url.to_string()
    } else if url.contains('?') {
        format!("{url}&{options}")
    } else {
        format!("{url}?{options}")
    }
}

/// Whether test `test` runs on `version`: always on NFSv3 (the server of
/// `DNFS_TEST_URL`, or the private one); on NFSv4.1 against the server of
/// `DNFS_TEST_URL` when `DNFS_TEST_URL_V41` is set too (else a loud skip,
/// or a failure under `DNFS_TEST_REQUIRE_SERVER`).
pub fn wanted(version: Version, test: &str) -> bool {
    match version {
        Version::V3 => true,
        Version::V41 => {
            std::env::var_os("DNFS_TEST_URL").is_none()
                || directnfs_testkit::server::url_v41(test).is_some()
        }
    }
}

/// `on_each_version!(fn name(version) { body })`: module `name` with the
/// tests `on_nfsv3` and `on_nfsv41`, each running `body` with `version`
/// ([`Version`]) set, where a server for it is known ([`wanted`]).
/// Attributes before `fn` (doc comments) go on the module.
#[macro_export]
macro_rules! on_each_version {
    ($(#[$attr:meta])* fn $name:ident($v:ident) $body:block) => {
        $(#[$attr])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            use $crate::common::versions::{wanted, Version};

            // A test's body, as a `#[test]` function's: unwrap is its way
            // to fail.
            #[allow(clippy::unwrap_used, clippy::expect_used)]
            fn body($v: Version) $body

            #[test]
            fn on_nfsv3() {
                if wanted(Version::V3, concat!(module_path!(), "::on_nfsv3")) {
                    body(Version::V3);
                }
            }

            #[test]
            fn on_nfsv41() {
                if wanted(Version::V41, concat!(module_path!(), "::on_nfsv41")) {
                    body(Version::V41);
                }
            }
        }
    };
}
