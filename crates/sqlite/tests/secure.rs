//! The SQLite VFS under Kerberos and RPC-with-TLS, on NFSv3 and NFSv4.1: a
//! WAL database, transactions committed, closed, opened again, every row
//! there and `PRAGMA integrity_check` ok.
//!
//! * krb5p: against the Kerberos server's export that takes krb5p only
//!   (`DNFS_TEST_URL_KRB5P`): the same database at `sec=krb5i` is refused
//!   there, so the work done at `sec=krb5p` was sealed with krb5p;
//! * TLS: through the STARTTLS port of the test's TLS front
//!   (`DNFS_TEST_TLS_DIR`, `DNFS_TEST_TLS_PORT`), which closes a connection
//!   that does not begin with the AUTH_TLS probe: the same database
//!   without `xprtsec=tls` cannot be opened there.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failure

mod common;

use common::*;
use rusqlite::params;

/// Rows in each transaction, and transactions.
const ROWS: i64 = 50;
const TXNS: i64 = 20;

/// nfs://HOST/PATH?vers=4.1&nfsport=N from an NFSv3 URL of the same server.
fn v41(url: &str) -> String {
    let (head, query) = url.split_once('?').expect("a URL with ports");
    let port = query
        .split('&')
        .find_map(|kv| kv.strip_prefix("nfsport="))
        .expect("nfsport");
    format!("{head}?vers=4.1&nfsport={port}")
}

/// `url` with its NFS port replaced by `port`, its MOUNT port (if any) by
/// `port + 8` (the test front's STARTTLS port for MOUNT) and `extra` options added.
fn with_port(url: &str, port: u16, extra: &str) -> String {
    let (head, query) = url.split_once('?').expect("a URL with options");
    let mut kv: Vec<String> = query
        .split('&')
        .filter(|kv| !kv.starts_with("nfsport="))
        // MOUNT goes in TLS too: the test front's port for it is PORT+8.
        .map(|kv| match kv.strip_prefix("mountport=") {
            Some(_) => format!("mountport={}", port + 8),
            None => kv.to_string(),
        })
        .collect();
    kv.push(format!("nfsport={port}"));
    kv.push(extra.to_string());
    format!("{head}?{}", kv.join("&"))
}

/// A WAL database at `base` (a URL with the mount's options): created,
/// TXNS transactions of ROWS rows committed, closed; opened again, every
/// row there, integrity ok, one more transaction; removed.
fn wal_database(base: &str, test: &str) -> String {
    let db = fresh_db(base, test);
    {
        let c = open(&db).unwrap_or_else(|e| panic!("open {db}: {e}"));
        journal_mode(&c, "WAL");
        c.execute_batch("CREATE TABLE t(txn INTEGER, seq INTEGER, v TEXT, PRIMARY KEY(txn, seq))")
            .unwrap();
        for txn in 0..TXNS {
            c.execute_batch("BEGIN").unwrap();
            for seq in 0..ROWS {
                c.execute(
                    "INSERT INTO t VALUES(?1, ?2, ?3)",
                    params![txn, seq, format!("secret-{txn}-{seq}-{}", "x".repeat(64))],
                )
                .unwrap();
            }
            c.execute_batch("COMMIT").unwrap();
        }
    }
    let c = open(&db).unwrap_or_else(|e| panic!("reopen {db}: {e}"));
    let mode: String = c
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal", "the database left WAL mode");
    let (rows, txns): (i64, i64) = c
        .query_row("SELECT count(*), count(DISTINCT txn) FROM t", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!((rows, txns), (ROWS * TXNS, TXNS), "rows after reopening");
    assert_eq!(integrity(&c), "ok");
    c.execute_batch("BEGIN; DELETE FROM t WHERE txn % 2 = 0; COMMIT;")
        .unwrap();
    let left: i64 = c
        .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
        .unwrap();
    assert_eq!(left, ROWS * TXNS / 2);
    assert_eq!(integrity(&c), "ok");
    drop(c);
    db
}

/// The database's file name in its URL.
fn file_name(db: &str) -> &str {
    let path = db.split('?').next().unwrap_or(db);
    path.rsplit('/').next().unwrap_or(path)
}

/// Opening `db` must fail (the server or the front refuses the mount).
fn refused(db: &str) {
    match open(db).and_then(|c| c.execute_batch("CREATE TABLE r(x)").map(|_| c)) {
        Ok(_) => panic!("{db}: opened and written, expected a refusal"),
        Err(e) => eprintln!("{db}: refused as expected: {e}"),
    }
}

fn krb5p(test: &str, nfsv41: bool) {
    let Some(url) = directnfs_testkit::server::url_krb5p(test) else {
        return;
    };
    let url = if nfsv41 { v41(&url) } else { url };
    let base = format!("{url}&sec=krb5p&mnt_timeout=10");
    let db = wal_database(&base, test);
    // The same database at krb5i: the export takes krb5p only.
    refused(&db_url(
        &format!("{url}&sec=krb5i&mnt_timeout=10"),
        file_name(&db),
    ));
    remove_db(&base, &db);
}

#[test]
fn wal_database_at_krb5p_commits_reopens_and_checks_on_nfsv3() {
    krb5p(
        "wal_database_at_krb5p_commits_reopens_and_checks_on_nfsv3",
        false,
    );
}

#[test]
fn wal_database_at_krb5p_commits_reopens_and_checks_on_nfsv41() {
    krb5p(
        "wal_database_at_krb5p_commits_reopens_and_checks_on_nfsv41",
        true,
    );
}

fn tls(test: &str, nfsv41: bool) {
    let Some((dir, port)) = directnfs_testkit::server::tls_front(test) else {
        return;
    };
    let Some(url) = (if nfsv41 {
        directnfs_testkit::server::url_v41(test)
    } else {
        server_url(test)
    }) else {
        return;
    };
    let ca = dir.join("ca.pem");
    let base = with_port(
        &url,
        port,
        &format!("xprtsec=tls&tls_ca={}&mnt_timeout=5", ca.display()),
    );
    let db = wal_database(&base, test);
    // The same database without TLS: the front's STARTTLS port closes it.
    let plain = with_port(&url, port, "soft&timeo=30&retrans=1&mnt_timeout=1");
    refused(&db_url(&plain, file_name(&db)));
    remove_db(&base, &db);
}

#[test]
fn wal_database_over_tls_commits_reopens_and_checks_on_nfsv3() {
    tls(
        "wal_database_over_tls_commits_reopens_and_checks_on_nfsv3",
        false,
    );
}

#[test]
fn wal_database_over_tls_commits_reopens_and_checks_on_nfsv41() {
    tls(
        "wal_database_over_tls_commits_reopens_and_checks_on_nfsv41",
        true,
    );
}
