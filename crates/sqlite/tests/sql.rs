//! The directnfs VFS under the real SQLite (the system's libsqlite3, through
//! rusqlite), against a real NFS server: `DNFS_TEST_URL` (skipped loudly
//! when unset).
//!
//! * bulk: schema, 200k rows in transactions, indexes, queries, rollback,
//!   `PRAGMA integrity_check` in DELETE and WAL (smaller runs in TRUNCATE
//!   and PERSIST);
//! * crash: a writer process of back-to-back small transactions killed
//!   with SIGKILL 24 times at varied points (every fourth exactly after it
//!   took the lock file), each time opened by another process: integrity
//!   ok, every committed transaction present, none of the uncommitted, the
//!   lock left behind broken with a warning naming it (DELETE and WAL,
//!   FILE_SYNC and unstable with write-behind, where the writer dies with
//!   WRITEs in flight and xSync is the barrier); a
//!   lock file without an owner (older versions) broken once 10 s old.
//!   On NFSv4.1 (where the lock is a byte-range LOCK, held by the server
//!   for a killed writer until another client takes over its owner, or
//!   its lease expires) [`CRASH_ROUNDS_V41`] kills per mode, each followed
//!   by an open that must get the lock within 2 s, though the server's
//!   lease is longer (scripts/test.sh uses 5 s);
//! * threads: readers and a writer in threads of one process;
//! * second process: behaves as the crate documents (serialized by the
//!   lock file, on NFSv4.1 by a byte-range lock and no lock file ever
//!   appears; refused with SQLITE_BUSY while a WAL database is open).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failure

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use rusqlite::{params, Connection, ErrorCode};

// ---------------------------------------------------------------------
// Child processes: this binary re-run with DNFS_SQL_CHILD=<role>.

/// Entry point of child processes; does nothing in a normal test run.
#[test]
fn child_process_entry() {
    let Some(role) = child_role() else {
        return;
    };
    let db = std::env::var("DNFS_SQL_DB").expect("DNFS_SQL_DB");
    match role.as_str() {
        "writer" => child_writer(&db),
        "incrementer" => child_incrementer(&db),
        "probe" => child_probe(&db),
        "verifier" => child_verifier(&db),
        "exec" => child_exec(&db),
        "forker" => child_forker(&db),
        "lingerer" => child_lingerer(&db),
        other => panic!("unknown child role {other}"),
    }
}

/// Small transactions, back to back: a kill lands in every phase of one.
const ROWS_PER_TXN: i64 = 10;

/// Commits transaction after transaction, each ROWS_PER_TXN rows tagged
/// with its number; prints "committed N" after each COMMIT returned.
fn child_writer(db: &str) {
    let c = open(db).expect("child open");
    let mut txn: i64 = c
        .query_row("SELECT coalesce(max(txn), 0) FROM rows", [], |r| r.get(0))
        .expect("max txn");
    let payload = "p".repeat(100);
    let mut out = std::io::stdout();
    loop {
        txn += 1;
        c.execute_batch("BEGIN").expect("begin");
        {
            let mut ins = c
                .prepare_cached("INSERT INTO rows(txn, seq, payload) VALUES(?1, ?2, ?3)")
                .expect("prepare");
            for seq in 0..ROWS_PER_TXN {
                ins.execute(params![txn, seq, payload]).expect("insert");
            }
        }
        c.execute("UPDATE meta SET total = total + ?1", [ROWS_PER_TXN])
            .expect("meta");
        c.execute_batch("COMMIT").expect("commit");
        // A line of its own: the test harness prints the test name first.
        writeln!(out, "\ncommitted {txn}").expect("stdout");
        out.flush().expect("flush");
    }
}

/// Increments the child's counter N times, one IMMEDIATE transaction each;
/// says "started" after the first.
fn child_incrementer(db: &str) {
    let n: u32 = std::env::var("DNFS_SQL_N")
        .expect("N")
        .parse()
        .expect("N number");
    let c = open(db).expect("child open");
    for i in 0..n {
        c.execute_batch("BEGIN IMMEDIATE; UPDATE counter SET c = c + 1; COMMIT")
            .expect("increment");
        if i == 0 {
            println!("\nstarted");
            std::io::stdout().flush().expect("flush");
        }
    }
    println!("\ndone {n}");
}

/// Runs the SQL in DNFS_SQL_EXEC on the database, then says "done".
fn child_exec(db: &str) {
    let sql = std::env::var("DNFS_SQL_EXEC").expect("DNFS_SQL_EXEC");
    let c = open(db).expect("child open");
    c.execute_batch(&sql).expect("child SQL");
    drop(c);
    println!("\ndone");
}

/// Commits 20 transactions back to back (run with a long
/// `DIRECTNFS_SQLITE_LINGER_MS`), printing after each the lock file's
/// change time as "lock <ns>" (NFSv3; "lock -" when there is none), then
/// "idle", then stays idle for 4 s before exiting.
fn child_lingerer(db: &str) {
    let base = std::env::var("DNFS_SQL_BASE").expect("DNFS_SQL_BASE");
    let c = open(db).expect("child open");
    c.execute_batch("CREATE TABLE t(x INTEGER)")
        .expect("schema");
    let helper = dnfs::Client::connect(&helper_url(&base)).expect("helper");
    let lock = format!(
        "{}/{}.dnfs-lock",
        helper.target_path().trim_end_matches('/'),
        db_file_name(db)
    );
    let mut out = std::io::stdout();
    for i in 0..20 {
        c.execute("INSERT INTO t VALUES(?1)", [i]).expect("insert");
        let ctime = helper
            .metadata(&lock)
            .ok()
            .and_then(|m| m.ctime.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or("-".to_string(), |d| d.as_nanos().to_string());
        writeln!(out, "\nlock {ctime}").expect("stdout");
    }
    writeln!(out, "idle").expect("stdout");
    out.flush().expect("flush");
    std::thread::sleep(Duration::from_secs(4));
}

/// Opens the database and commits once, then forks. The forked child
/// checks that the parent's connection is refused to it (exit status 2
/// if not) and closes it (which must leave it to the parent), opens a
/// connection of its own and holds the write lock (BEGIN
/// IMMEDIATE) while the parent tries to take it with no busy timeout:
/// prints "refused" or "granted" (two processes writing at once), then
/// "child N" with the child's exit status and "rows N".
fn child_forker(db: &str) {
    let c = open(db).expect("forker open");
    c.execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES(1);")
        .expect("setup");
    let (mut to_parent, mut to_child) = ([0; 2], [0; 2]);
    // SAFETY: plain pipe(2) calls on arrays of two fds.
    unsafe {
        assert_eq!(libc::pipe(to_parent.as_mut_ptr()), 0);
        assert_eq!(libc::pipe(to_child.as_mut_ptr()), 0);
    }
    let byte = |fd: i32| {
        let mut b = 0u8;
        // SAFETY: one byte into a live local.
        unsafe { libc::read(fd, (&mut b as *mut u8).cast(), 1) == 1 }
    };
    let send = |fd: i32| {
        // SAFETY: one byte from a live local.
        unsafe { libc::write(fd, b"x".as_ptr().cast(), 1) == 1 }
    };
    // SAFETY: this process runs one test (the child harness runs with
    // --test-threads=1); the forked child only uses SQLite and directnfs,
    // then leaves with _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    // Each side keeps its own ends: a side that exits closes the other's
    // pipe, so nobody waits for ever.
    let close = |fd: i32| {
        // SAFETY: our own pipe fd, closed once.
        unsafe { libc::close(fd) };
    };
    if pid == 0 {
        close(to_parent[0]);
        close(to_child[1]);
        // The parent's connection is the parent's: refused here.
        let inherited = c.query_row("SELECT count(*) FROM t", [], |r| r.get::<_, i64>(0));
        eprintln!("forked child, the parent's connection: {inherited:?}");
        let refused = matches!(
            inherited,
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.extended_code == rusqlite::ffi::SQLITE_IOERR_LOCK
        );
        if !refused {
            // SAFETY: as below.
            unsafe { libc::_exit(2) };
        }
        // Closing it here leaves it to the parent, which still uses it
        // below (on NFSv4.1 a CLOSE sent from here would end the parent's
        // open).
        if let Err((c, _)) = c.close() {
            std::mem::forget(c);
        }
        let code = (|| {
            let b = open(db).ok()?;
            b.execute_batch("BEGIN IMMEDIATE; INSERT INTO t VALUES(2);")
                .ok()?;
            send(to_parent[1]).then_some(())?;
            byte(to_child[0]).then_some(())?;
            b.execute_batch("COMMIT").ok()
        })()
        .map_or(1, |()| 0);
        // SAFETY: leaves the forked child without running the parent's
        // exit handlers or destructors.
        unsafe { libc::_exit(code) };
    }
    close(to_parent[1]);
    close(to_child[0]);
    assert!(byte(to_parent[0]), "the forked child did not take the lock");
    c.busy_timeout(Duration::ZERO).expect("busy timeout");
    match c.execute_batch("BEGIN IMMEDIATE") {
        Ok(()) => {
            println!("\ngranted");
            let _ = c.execute_batch("ROLLBACK");
        }
        Err(e) => println!("\nrefused {e}"),
    }
    assert!(send(to_child[1]));
    let mut status = 0;
    // SAFETY: waits for our own child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    println!("child {}", libc::WEXITSTATUS(status));
    c.busy_timeout(Duration::from_secs(30))
        .expect("busy timeout");
    let rows: i64 = c
        .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
        .expect("count");
    println!("rows {rows}");
}

/// Opens the database after a crash; prints "integrity R", then for the
/// crash tests' tables "txn T N" per transaction and "total N".
fn child_verifier(db: &str) {
    let c = open(db).expect("verifier open");
    println!("\nintegrity {}", integrity(&c));
    let has_rows: i64 = c
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name = 'rows'",
            [],
            |r| r.get(0),
        )
        .expect("schema");
    if has_rows == 0 {
        return;
    }
    let mut stmt = c
        .prepare("SELECT txn, count(*) FROM rows GROUP BY txn")
        .expect("prepare");
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))
        .expect("query");
    for row in rows {
        let (t, n) = row.expect("row");
        println!("txn {t} {n}");
    }
    let total: i64 = c
        .query_row("SELECT total FROM meta", [], |r| r.get(0))
        .expect("meta");
    println!("total {total}");
}

/// Tries to read the database with a short busy timeout; prints
/// "OK <count>" or "BUSY <message>".
fn child_probe(db: &str) {
    let c = open(db).expect("child open");
    c.busy_timeout(Duration::from_millis(300)).expect("timeout");
    match c.query_row("SELECT count(*) FROM t", [], |r| r.get::<_, i64>(0)) {
        Ok(n) => println!("\nOK {n}"),
        Err(rusqlite::Error::SqliteFailure(e, msg)) if e.code == ErrorCode::DatabaseBusy => {
            println!("\nBUSY {}", msg.unwrap_or_default())
        }
        Err(e) => println!("\nERROR {e}"),
    }
}

// ---------------------------------------------------------------------
// Bulk: schema, 200k rows, indexes, queries, integrity.

fn bulk(test: &str, mode: &str, rows: i64) {
    let Some(base) = server_url(test) else {
        return;
    };
    let db = fresh_db(&base, test);
    let started = Instant::now();
    let c = open(&db).expect("open");
    journal_mode(&c, mode);
    c.execute_batch(
        "CREATE TABLE customers(
             id INTEGER PRIMARY KEY, name TEXT NOT NULL, region INTEGER NOT NULL,
             balance INTEGER NOT NULL, note TEXT);
         CREATE TABLE orders(
             id INTEGER PRIMARY KEY, customer INTEGER NOT NULL REFERENCES customers(id),
             amount INTEGER NOT NULL);",
    )
    .expect("schema");

    let per_txn = 10_000;
    let mut id = 0i64;
    while id < rows {
        c.execute_batch("BEGIN").expect("begin");
        {
            let mut ins = c
                .prepare_cached("INSERT INTO customers VALUES(?1, ?2, ?3, ?4, ?5)")
                .expect("prepare");
            for _ in 0..per_txn.min(rows - id) {
                id += 1;
                let note = "n".repeat((id % 50) as usize);
                ins.execute(params![
                    id,
                    format!("customer-{id}"),
                    id % 97,
                    id * 3 % 1000,
                    note
                ])
                .expect("insert");
            }
        }
        c.execute_batch("COMMIT").expect("commit");
    }
    c.execute(
        "INSERT INTO orders(customer, amount) SELECT id, balance + 1 FROM customers WHERE id % 4 = 0",
        [],
    )
    .expect("orders");
    c.execute_batch(
        "CREATE INDEX customers_region ON customers(region);
         CREATE UNIQUE INDEX customers_name ON customers(name);
         CREATE INDEX orders_customer ON orders(customer);",
    )
    .expect("indexes");

    let check = |c: &Connection| {
        let count: i64 = c
            .query_row("SELECT count(*) FROM customers", [], |r| r.get(0))
            .unwrap();
        assert_eq!(count, rows);
        let sum: i64 = c
            .query_row("SELECT sum(balance) FROM customers", [], |r| r.get(0))
            .unwrap();
        assert_eq!(sum, (1..=rows).map(|i| i * 3 % 1000).sum::<i64>());
        let region: i64 = c
            .query_row(
                "SELECT count(*) FROM customers WHERE region = 42",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(region, (1..=rows).filter(|i| i % 97 == 42).count() as i64);
        let plan: String = c
            .query_row(
                "EXPLAIN QUERY PLAN SELECT count(*) FROM customers WHERE region = 42",
                [],
                |r| r.get(3),
            )
            .unwrap();
        assert!(plan.contains("customers_region"), "plan: {plan}");
        let (n, amount): (i64, i64) = c
            .query_row(
                "SELECT count(*), sum(o.amount) FROM orders o JOIN customers c ON c.id = o.customer WHERE c.region = 7",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        let want: Vec<i64> = (1..=rows).filter(|i| i % 4 == 0 && i % 97 == 7).collect();
        assert_eq!(n, want.len() as i64);
        assert_eq!(amount, want.iter().map(|i| i * 3 % 1000 + 1).sum::<i64>());
        let probe = rows / 2 + 1;
        let found: i64 = c
            .query_row(
                "SELECT id FROM customers WHERE name = ?1",
                [format!("customer-{probe}")],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(found, probe);
        assert_eq!(integrity(c), "ok");
    };
    check(&c);

    // A rolled-back transaction leaves no trace.
    c.execute_batch(
        "BEGIN; DELETE FROM customers WHERE region = 1; UPDATE customers SET balance = 0; ROLLBACK",
    )
    .expect("rollback");
    check(&c);
    drop(c);

    // Everything is on the server: a new connection sees it all.
    let c = open(&db).expect("reopen");
    check(&c);
    let mode_now: String = c
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    // WAL is a property of the file; the rollback modes are per connection.
    let expected = if mode == "wal" { "wal" } else { "delete" };
    assert_eq!(mode_now.to_lowercase(), expected);
    drop(c);
    eprintln!(
        "{test}: {rows} rows in {mode} mode: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    remove_db(&base, &db);
}

#[test]
fn bulk_200k_rows_in_delete_mode() {
    bulk("bulk_delete", "delete", 200_000);
}

#[test]
fn bulk_200k_rows_in_wal_mode() {
    bulk("bulk_wal", "wal", 200_000);
}

#[test]
fn bulk_rows_in_truncate_mode() {
    bulk("bulk_truncate", "truncate", 20_000);
}

#[test]
fn bulk_rows_in_persist_mode() {
    bulk("bulk_persist", "persist", 20_000);
}

// ---------------------------------------------------------------------
// Crash: SIGKILL a writer of back-to-back small transactions, at many
// points, then open the database from another process.

/// Kills per journal mode. Every fourth lands exactly after the writer took
/// the lock file (the test-only pause point), the others after a delay that
/// varies from round to round (0-239 ms after its first commit).
const CRASH_ROUNDS: usize = 24;
/// Kills per journal mode on NFSv4.1, the pause point still every fourth:
/// fewer, as each round there also checks the server's lock.
const CRASH_ROUNDS_V41: usize = 8;

/// The VFS's test-only pause point (crates/sqlite/src/test_hooks.rs).
const PAUSE_AFTER_LOCK: &str = "DIRECTNFS_SQLITE_TEST_PAUSE_AFTER_LOCK";

/// What a child process said, line by line.
enum Said {
    Out(String),
    Err(String),
}

/// Collects the stdout and stderr lines of `child` into one channel.
fn listen(
    child: &mut std::process::Child,
) -> (mpsc::Receiver<Said>, Vec<std::thread::JoinHandle<()>>) {
    let (tx, rx) = mpsc::channel();
    let out = child.stdout.take().expect("stdout");
    let err = child.stderr.take().expect("stderr");
    let tx2 = tx.clone();
    let readers = vec![
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(Said::Out(line));
            }
        }),
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let _ = tx2.send(Said::Err(line));
            }
        }),
    ];
    (rx, readers)
}

/// What another process finds when it opens the database.
struct Found {
    integrity: String,
    per_txn: BTreeMap<i64, i64>,
    total: i64,
    /// Its stderr (with DIRECTNFS_SQLITE_VERBOSE=1: the VFS's warnings).
    stderr: String,
}

/// Opens the database in a new process (the `verifier` role) and reports
/// what it found; `run_dir` is its `DIRECTNFS_RUN_DIR` when given, `more`
/// further environment variables.
fn open_elsewhere(db: &str, run_dir: Option<&str>, more: &[(&str, &str)]) -> Found {
    let mut env = vec![("DNFS_SQL_DB", db), ("DIRECTNFS_SQLITE_VERBOSE", "1")];
    env.extend(run_dir.map(|d| ("DIRECTNFS_RUN_DIR", d)));
    env.extend_from_slice(more);
    let mut child = spawn_child_piped("child_process_entry", "verifier", &env);
    let (rx, readers) = listen(&mut child);
    let status = child.wait().expect("verifier");
    for r in readers {
        r.join().expect("reader");
    }
    let mut found = Found {
        integrity: String::new(),
        per_txn: BTreeMap::new(),
        total: -1,
        stderr: String::new(),
    };
    for said in rx.try_iter() {
        match said {
            Said::Err(line) => {
                found.stderr.push_str(&line);
                found.stderr.push('\n');
            }
            Said::Out(line) => {
                let words: Vec<&str> = line.split(' ').collect();
                match words[..] {
                    ["integrity", v] => found.integrity = v.to_string(),
                    ["txn", t, n] => {
                        found.per_txn.insert(t.parse().unwrap(), n.parse().unwrap());
                    }
                    ["total", t] => found.total = t.parse().unwrap(),
                    _ => {}
                }
            }
        }
    }
    assert!(status.success(), "verifier failed: {}", found.stderr);
    found
}

/// `options`: URL options of every process's client (`""`: the defaults,
/// FILE_SYNC; `"stable=unstable"`: UNSTABLE writes with write-behind, so
/// the writer is killed with WRITEs in flight and xSync is the barrier).
fn crash(test: &str, mode: &str, options: &str) {
    let Some(base) = server_url(test) else {
        return;
    };
    let base = match (options, base.contains('?')) {
        ("", _) => base,
        (o, true) => format!("{base}&{o}"),
        (o, false) => format!("{base}?{o}"),
    };
    let db = fresh_db(&base, test);
    {
        let c = open(&db).expect("open");
        journal_mode(&c, mode);
        c.execute_batch(
            "CREATE TABLE rows(txn INTEGER NOT NULL, seq INTEGER NOT NULL, payload TEXT,
                               PRIMARY KEY(txn, seq));
             CREATE TABLE meta(total INTEGER NOT NULL);
             INSERT INTO meta VALUES(0);",
        )
        .expect("schema");
    }
    let lock_name = format!("{}.dnfs-lock", db_file_name(&db));
    let v41 = is_v41(&base);
    // The writers and openers of this test keep their NFSv4.1 owner slots
    // apart from every other client of the user (the tests running beside
    // this one): only this test's next open may take over the killed
    // writer's owner, so the lock is surely still held when the observer
    // looks, and it is that open that ends it.
    let run_dir = std::env::temp_dir().join(format!("dnfs-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&run_dir).expect("run dir");
    let run_dir = run_dir.to_str().expect("run dir").to_owned();
    let rounds = if v41 { CRASH_ROUNDS_V41 } else { CRASH_ROUNDS };
    let started = Instant::now();
    let (mut hot_journals, mut stale_locks) = (0, 0);
    // Highest commit any writer reported so far.
    let mut committed = 0i64;
    for round in 0..rounds {
        // WAL: the writer takes the lock once, at its first read, and
        // keeps it (WAL-index). DELETE: once for that read, then once per
        // transaction, so the 2nd and 3rd land inside the writing.
        let pause_at = (round % 4 == 3).then(|| {
            if mode == "wal" {
                1
            } else {
                1 + (round / 4) % 3
            }
        });
        let pause_env = pause_at.map(|k| k.to_string());
        // Verbose: an I/O error the writer meets is printed with its file
        // and NFS error (a writer once failed its first query with
        // SQLITE_IOERR_FSTAT, and nothing said which file or why).
        let mut env = vec![
            ("DNFS_SQL_DB", db.as_str()),
            ("DIRECTNFS_RUN_DIR", &run_dir),
            ("DIRECTNFS_SQLITE_VERBOSE", "1"),
        ];
        if let Some(k) = &pause_env {
            env.push((PAUSE_AFTER_LOCK, k.as_str()));
        }
        let mut child = spawn_child_piped("child_process_entry", "writer", &env);
        let (rx, readers) = listen(&mut child);
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut first_commit = false;
        let mut paused = false;
        // Until the pause point is reached, or the first commit is seen.
        while !(paused || first_commit && pause_at.is_none()) {
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(Said::Out(line)) => {
                    if let Some(n) = line.strip_prefix("committed ") {
                        committed = committed.max(n.parse().expect("txn number"));
                        first_commit = true;
                    }
                }
                Ok(Said::Err(line)) => {
                    paused |= line.contains("test pause after taking lock");
                    eprintln!("{test} writer: {line}");
                }
                Err(_) => panic!("{test} round {round}: the writer neither committed nor paused"),
            }
        }
        let delay = Duration::from_millis((round as u64 * 53 + 11) % 240);
        if pause_at.is_none() {
            std::thread::sleep(delay);
        }
        child.kill().expect("SIGKILL"); // Child::kill sends SIGKILL on Unix
        child.wait().expect("wait");
        for r in readers {
            r.join().expect("reader");
        }
        for said in rx.try_iter() {
            if let Said::Out(line) = said {
                if let Some(n) = line.strip_prefix("committed ") {
                    committed = committed.max(n.parse().expect("txn number"));
                }
            }
        }
        // What the killed writer left on the server (as far as its last
        // requests, which the server may still be running, have landed).
        let left_journal = companion_exists(&base, &db, "-journal");
        let left_lock = if v41 {
            range_locked(&base, &db)
        } else {
            companion_exists(&base, &db, ".dnfs-lock")
        };
        hot_journals += usize::from(left_journal);
        if pause_at.is_some() {
            assert!(left_lock, "{test} round {round}: killed holding the lock");
        }

        let opened = Instant::now();
        let found = open_elsewhere(&db, Some(&run_dir), &[]);
        let waited = opened.elapsed();
        if v41 {
            // The next process takes over the killed writer's client owner
            // (an owner slot of this user on this host): the server drops
            // the writer's lock at once instead of after its lease (5 s in
            // scripts/test.sh; 4-6 s of waiting when this did not exist).
            assert!(
                waited < Duration::from_secs(2),
                "{test} round {round}: the next open waited {waited:?} for the killed writer's lock"
            );
        }
        assert_eq!(found.integrity, "ok", "{test} round {round}");
        let max = found.per_txn.keys().max().copied().unwrap_or(0);
        // Every reported commit is there; at most the one in flight beyond.
        assert!(
            max == committed || max == committed + 1,
            "{test} round {round}: last reported commit {committed}, database has up to {max}"
        );
        for t in 1..=max {
            assert_eq!(
                found.per_txn.get(&t),
                Some(&ROWS_PER_TXN),
                "{test} round {round}: transaction {t} is partial or missing"
            );
        }
        assert_eq!(
            found.total,
            max * ROWS_PER_TXN,
            "{test} round {round}: meta"
        );
        // A lock left by the writer is broken by that first open, which
        // says so naming it; none is left after it. (Only a writer stopped
        // at the pause point surely left one: one killed elsewhere may
        // have had the REMOVE of its lock on its way to the server.)
        let broke = found
            .stderr
            .lines()
            .any(|l| l.contains("breaking stale lock") && l.contains(&lock_name));
        if v41 {
            // No lock file to break: the server kept the dead writer's
            // byte-range lock until the next open took over its owner.
            assert!(!broke, "{test} round {round}: a lock file on NFSv4.1");
            no_lock_files(&base, &db);
            stale_locks += usize::from(left_lock);
            eprintln!(
                "{test} round {round}: lock held after the kill {left_lock}, the next open waited {:.1} s",
                waited.as_secs_f64()
            );
        } else {
            stale_locks += usize::from(broke);
        }
        if pause_at.is_some() && !v41 {
            assert!(
                broke,
                "{test} round {round}: no warning naming {lock_name}: {}",
                found.stderr
            );
        }
        assert!(
            !companion_exists(&base, &db, ".dnfs-lock"),
            "{test} round {round}: a lock file is left behind"
        );
        committed = max;
        eprintln!(
            "{test} round {round}: killed {} (left: journal {left_journal}, lock {left_lock}; lock broken {broke}); {max} transactions present, all complete",
            match pause_at {
                Some(k) => format!("right after taking the lock (lock number {k} of its life)"),
                None => format!("{} ms after its first commit", delay.as_millis()),
            }
        );
    }
    // The kills landed inside transactions: the writer held the lock file
    // (broken as stale by the next open, not only after the pause point)
    // and, in DELETE mode, left a hot journal that the next open rolled
    // back.
    assert!(
        stale_locks > rounds / 4,
        "{test}: only the pause point left locks ({stale_locks})"
    );
    if mode == "delete" {
        assert!(hot_journals > 0, "{test}: no hot journal was left");
    }
    eprintln!(
        "{test}: {rounds} kills, {stale_locks} locks broken (NFSv4.1: left by the writer, ended by the next open), {hot_journals} hot journals, {committed} transactions, {:.1} s",
        started.elapsed().as_secs_f64()
    );
    remove_db(&base, &db);
    let _ = std::fs::remove_dir_all(&run_dir);
}

/// `base` for a client that only looks: on NFSv4.1 it must not take over
/// the client owner of a killed writer (`owner_reuse`), which would end
/// the writer's locks before the test saw them.
fn observer(base: &str) -> String {
    let sep = if base.contains('?') { '&' } else { '?' };
    helper_url(&format!("{base}{sep}owner_reuse=off"))
}

/// Whether `base` is an NFSv4.1 URL (the lock is then a byte-range lock).
fn is_v41(base: &str) -> bool {
    dnfs::config::NfsUrl::parse(base)
        .is_ok_and(|u| u.options.nfs_version == dnfs::config::NfsVersion::V41)
}

/// NFSv4.1: does some other owner hold the VFS's byte-range lock on the
/// database (SQLite's lock bytes, exclusive), as LOCKT through a new
/// client sees it?
fn range_locked(base: &str, db: &str) -> bool {
    let client = dnfs::Client::connect(&observer(base)).expect("client");
    let path = format!(
        "{}/{}",
        client.target_path().trim_end_matches('/'),
        db_file_name(db)
    );
    let file = client.open(&path).expect("open the database");
    file.test_lock(0x4000_0000, 512, true)
        .expect("LOCKT")
        .is_some()
}

/// NFSv4.1: neither lock file nor waiter file exists, on the server and
/// (when the test knows it, `DNFS_TEST_EXPORT_DIR`) in the export
/// directory.
fn no_lock_files(base: &str, db: &str) {
    for suffix in [".dnfs-lock", ".dnfs-want"] {
        assert!(
            !companion_exists(base, db, suffix),
            "{db}: {suffix} file on NFSv4.1"
        );
    }
    if let Some(dir) = std::env::var_os("DNFS_TEST_EXPORT_DIR") {
        let name = db_file_name(db);
        for entry in std::fs::read_dir(dir).expect("export dir").flatten() {
            let n = entry.file_name().to_string_lossy().into_owned();
            assert!(
                !(n.starts_with(name) && n.contains(".dnfs-")),
                "{n} in the export directory on NFSv4.1"
            );
        }
    }
}

/// The database's file name, without directory or URL query.
fn db_file_name(db: &str) -> &str {
    let path = db.split('?').next().unwrap_or(db);
    path.rsplit('/').next().unwrap_or(path)
}

/// Does `<db><suffix>` exist on the server (asked through a new client)?
fn companion_exists(base: &str, db: &str, suffix: &str) -> bool {
    let client = dnfs::Client::connect(&observer(base)).expect("client");
    let path = format!(
        "{}/{}{suffix}",
        client.target_path().trim_end_matches('/'),
        db_file_name(db)
    );
    client.metadata(&path).is_ok()
}

#[test]
fn sigkilled_writer_loses_no_commit_in_delete_mode() {
    crash("crash_delete", "delete", "");
}

#[test]
fn sigkilled_writer_loses_no_commit_in_wal_mode() {
    crash("crash_wal", "wal", "");
}

#[test]
fn sigkilled_writer_with_write_behind_loses_no_commit_in_delete_mode() {
    crash(
        "crash_wb_delete",
        "delete",
        "stable=unstable&write_behind=8m",
    );
}

#[test]
fn sigkilled_writer_with_write_behind_loses_no_commit_in_wal_mode() {
    crash("crash_wb_wal", "wal", "stable=unstable&write_behind=8m");
}

/// The lock file a directnfs before the symbolic-link lock left when it
/// was killed between creating the file and writing its owner (as observed:
/// 4095 zero bytes and the byte a waiter wrote at the end). Once it has
/// been unchanged for the bound, the first open breaks it and says so.
#[test]
fn ownerless_lock_file_of_an_older_version_is_broken_on_first_use_once_unchanged_for_10_s() {
    let Some(base) = server_url("ownerless_lock") else {
        return;
    };
    if is_v41(&base) {
        eprintln!("ownerless_lock: NFSv4.1 uses no lock file (byte-range locks)");
        return;
    }
    let db = fresh_db(&base, "ownerless");
    {
        let c = open(&db).unwrap();
        c.execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES(1),(2);")
            .unwrap();
    }
    let client = dnfs::Client::connect(&helper_url(&base)).unwrap();
    let lock_name = format!("{}.dnfs-lock", db_file_name(&db));
    let lock = format!("{}/{lock_name}", client.target_path().trim_end_matches('/'));
    let planted = Instant::now();
    let f = client
        .open_with(
            &lock,
            dnfs::OpenOptions {
                create: true,
                create_new: true,
                ..Default::default()
            },
        )
        .unwrap();
    f.write_at(b"W", 4095).unwrap();

    let seen = probe(&db);
    assert!(seen.starts_with("BUSY"), "a fresh ownerless lock: {seen}");
    std::thread::sleep(
        (planted + Duration::from_millis(10_500)).saturating_duration_since(Instant::now()),
    );
    let found = open_elsewhere(&db, None, &[]);
    assert_eq!(found.integrity, "ok");
    assert!(
        found
            .stderr
            .lines()
            .any(|l| l.contains("breaking lock file")
                && l.contains(&lock_name)
                && l.contains("names no owner")),
        "no warning naming {lock_name}: {}",
        found.stderr
    );
    assert!(
        !companion_exists(&base, &db, ".dnfs-lock"),
        "no lock file left behind"
    );
    remove_db(&base, &db);
}

/// A WAL file whose handle is stale before its first use (as NFS-Ganesha
/// once answered a CREATE of one): the VFS opens the name again and the
/// reader neither fails nor loses a row (NFSv3; on NFSv4.1 the handle
/// stays usable and no reopening is needed). The test hook replaces the `-wal`
/// file the reader's first read transaction opens, through a client of
/// its own, before that open returns; without the reopening, SQLite's
/// first look at the WAL's size failed with SQLITE_IOERR_FSTAT.
#[test]
fn a_wal_file_whose_handle_is_stale_before_its_first_use_is_opened_again_by_name() {
    stale_wal("stale_wal", "-wal", "replaced");
}

/// The stale handle of a CREATE that made no file (NFS-Ganesha answered a
/// WAL file's CREATE so, and the LOOKUP after it said NFS3ERR_NOENT: a
/// writer of `sigkilled_writer_with_write_behind_loses_no_commit_in_wal_mode`
/// failed its first query): the open again by name creates the file, as
/// the first open meant to.
#[test]
fn a_wal_file_whose_handle_is_stale_and_whose_name_is_gone_is_created_again() {
    stale_wal("stale_wal_gone", "-wal:remove", "removed");
}

/// A reader whose WAL file's handle the hook makes stale right after the
/// open (`hook`: the hook's value; `done`: the word it says) reads every
/// row.
fn stale_wal(test: &str, hook: &str, done: &str) {
    let Some(base) = server_url(test) else {
        return;
    };
    let db = fresh_db(&base, test);
    {
        let c = open(&db).expect("open");
        journal_mode(&c, "wal");
        c.execute_batch(
            "CREATE TABLE rows(txn INTEGER NOT NULL, seq INTEGER NOT NULL, payload TEXT,
                               PRIMARY KEY(txn, seq));
             CREATE TABLE meta(total INTEGER NOT NULL);
             INSERT INTO meta VALUES(3);
             INSERT INTO rows VALUES(1, 0, 'a'), (1, 1, 'b'), (2, 0, 'c');",
        )
        .expect("schema and rows");
    }
    let found = open_elsewhere(
        &db,
        None,
        &[("DIRECTNFS_SQLITE_TEST_REPLACE_AFTER_OPEN", hook)],
    );
    assert!(
        found.stderr.contains(&format!("test {done}"))
            && found.stderr.contains("-wal after opening it"),
        "the hook did not change the WAL file: {}",
        found.stderr
    );
    // NFSv4.1: the reader's OPEN keeps the removed file usable at the
    // server (as a local unlink would), so its handle never goes stale.
    let reopened = found
        .stderr
        .contains("the server called the handle it had just given stale; opened the name again");
    assert!(
        reopened || is_v41(&base),
        "no reopening reported: {}",
        found.stderr
    );
    assert_eq!(found.integrity, "ok");
    assert_eq!(found.per_txn, BTreeMap::from([(1, 2), (2, 1)]));
    assert_eq!(found.total, 3);
    remove_db(&base, &db);
}

// ---------------------------------------------------------------------
// Threads of one process: readers and a writer.

fn threads(test: &str, mode: &str) {
    let Some(base) = server_url(test) else {
        return;
    };
    let db = fresh_db(&base, test);
    const ACCOUNTS: i64 = 100;
    const TRANSFERS: i64 = 300;
    {
        let c = open(&db).expect("open");
        journal_mode(&c, mode);
        c.execute_batch(
            "CREATE TABLE accounts(id INTEGER PRIMARY KEY, balance INTEGER NOT NULL);
             CREATE TABLE log(n INTEGER PRIMARY KEY);",
        )
        .unwrap();
        c.execute_batch("BEGIN").unwrap();
        for id in 0..ACCOUNTS {
            c.execute("INSERT INTO accounts VALUES(?1, 1000)", [id])
                .unwrap();
        }
        c.execute_batch("COMMIT").unwrap();
    }
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let db = db.clone();
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let c = open(&db).expect("writer open");
            for n in 1..=TRANSFERS {
                let (a, b, amount) = (n * 7 % ACCOUNTS, n * 13 % ACCOUNTS, n % 50);
                c.execute_batch("BEGIN IMMEDIATE").unwrap();
                c.execute(
                    "UPDATE accounts SET balance = balance - ?1 WHERE id = ?2",
                    [amount, a],
                )
                .unwrap();
                c.execute(
                    "UPDATE accounts SET balance = balance + ?1 WHERE id = ?2",
                    [amount, b],
                )
                .unwrap();
                c.execute("INSERT INTO log VALUES(?1)", [n]).unwrap();
                c.execute_batch("COMMIT").unwrap();
            }
            done.store(true, Ordering::SeqCst);
        })
    };
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let db = db.clone();
            let done = Arc::clone(&done);
            std::thread::spawn(move || {
                let c = open(&db).expect("reader open");
                let mut last = 0i64;
                let mut reads = 0;
                while !done.load(Ordering::SeqCst) || reads == 0 {
                    c.execute_batch("BEGIN").unwrap();
                    let sum: i64 = c
                        .query_row("SELECT sum(balance) FROM accounts", [], |r| r.get(0))
                        .unwrap();
                    let n: i64 = c
                        .query_row("SELECT count(*) FROM log", [], |r| r.get(0))
                        .unwrap();
                    c.execute_batch("COMMIT").unwrap();
                    assert_eq!(sum, ACCOUNTS * 1000, "a reader saw a half-done transfer");
                    assert!(n >= last, "log went backwards: {n} after {last}");
                    last = n;
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    writer.join().expect("writer");
    let reads: i32 = readers.into_iter().map(|r| r.join().expect("reader")).sum();
    let c = open(&db).unwrap();
    assert_eq!(integrity(&c), "ok");
    let n: i64 = c
        .query_row("SELECT count(*) FROM log", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, TRANSFERS);
    let sum: i64 = c
        .query_row("SELECT sum(balance) FROM accounts", [], |r| r.get(0))
        .unwrap();
    assert_eq!(sum, ACCOUNTS * 1000);
    eprintln!("{test}: {TRANSFERS} transfers, {reads} consistent reads by 4 reader threads");
    drop(c);
    remove_db(&base, &db);
}

#[test]
fn readers_and_a_writer_in_threads_in_delete_mode() {
    threads("threads_delete", "delete");
}

#[test]
fn readers_and_a_writer_in_threads_in_wal_mode() {
    threads("threads_wal", "wal");
}

// ---------------------------------------------------------------------
// A second process.

#[test]
fn second_process_takes_turns_through_the_lock_file() {
    let Some(base) = server_url("second_process_turns") else {
        return;
    };
    let db = fresh_db(&base, "turns");
    let c = open(&db).unwrap();
    c.execute_batch(
        "CREATE TABLE counter(p INTEGER, c INTEGER); INSERT INTO counter VALUES(0, 0);",
    )
    .unwrap();
    const N: u32 = 150;
    let mut child = spawn_child(
        "child_process_entry",
        "incrementer",
        &[("DNFS_SQL_DB", &db), ("DNFS_SQL_N", &N.to_string())],
    );
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    // Both processes increment at full speed from here on.
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("child started");
        if line == "started" {
            break;
        }
    }
    let mut seen = Vec::new();
    for _ in 0..N {
        c.execute_batch("BEGIN IMMEDIATE; UPDATE counter SET p = p + 1;")
            .unwrap();
        seen.push(
            c.query_row("SELECT c FROM counter", [], |r| r.get::<_, u32>(0))
                .unwrap(),
        );
        c.execute_batch("COMMIT").unwrap();
    }
    let status = child.wait().unwrap();
    reader.join().unwrap();
    assert!(status.success());
    let (p, cc): (u32, u32) = c
        .query_row("SELECT p, c FROM counter", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!((p, cc), (N, N), "increments of two processes were lost");
    // Turns, not one process after the other: the child progressed while
    // we ran back-to-back transactions (the lock file is handed over).
    let progressed = seen.windows(2).filter(|w| w[1] > w[0]).count();
    assert!(
        progressed > 0 && seen.first() < seen.last(),
        "the other process never got a turn: {seen:?}"
    );
    eprintln!(
        "second_process_turns: child counter went {} -> {} during our {N} transactions ({progressed} hand-overs seen)",
        seen[0],
        seen[seen.len() - 1]
    );
    assert_eq!(integrity(&c), "ok");
    if is_v41(&base) {
        no_lock_files(&base, &db);
    }
    drop(c);
    remove_db(&base, &db);
}

fn probe(db: &str) -> String {
    let child = spawn_child("child_process_entry", "probe", &[("DNFS_SQL_DB", db)]);
    let out = child.wait_with_output().expect("probe");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find(|l| l.starts_with("OK") || l.starts_with("BUSY") || l.starts_with("ERROR"))
        .unwrap_or("")
        .to_string()
}

/// Whether the process-wide lock (the lock file on NFSv3, the byte-range
/// lock on NFSv4.1) is free within `within`: a process keeps its unused
/// lock for a few milliseconds (`DIRECTNFS_SQLITE_LINGER_MS`).
fn released_within(base: &str, db: &str, within: Duration) -> bool {
    let until = Instant::now() + within;
    loop {
        let held = if is_v41(base) {
            range_locked(base, db)
        } else {
            lock_file(base, db).is_some()
        };
        if !held {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The lock's owner record (the content of the symbolic link), read
/// through the plain directnfs client.
fn lock_file(base: &str, db: &str) -> Option<String> {
    let client = dnfs::Client::connect(&helper_url(base)).ok()?;
    let name = db.split('?').next()?.rsplit('/').next()?;
    let path = format!(
        "{}/{name}.dnfs-lock",
        client.target_path().trim_end_matches('/')
    );
    client
        .readlink(&path)
        .map(|t| String::from_utf8_lossy(&t).into_owned())
        .ok()
}

/// Back-to-back transactions keep the process-wide lock (no new lock file
/// per transaction), and a lock left unused is released after the linger
/// period by the process's thread, while the process lives on.
#[test]
fn an_unused_process_lock_is_kept_for_the_linger_period_then_released() {
    let Some(base) = server_url("linger") else {
        return;
    };
    let db = fresh_db(&base, "linger");
    let mut child = spawn_child(
        "child_process_entry",
        "lingerer",
        &[
            ("DNFS_SQL_DB", &db),
            ("DNFS_SQL_BASE", &base),
            ("DIRECTNFS_SQLITE_LINGER_MS", "1000"),
        ],
    );
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines().map_while(Result::ok);
    let mut ctimes = Vec::new();
    for line in lines.by_ref() {
        if line == "idle" {
            break;
        }
        if let Some(t) = line.strip_prefix("lock ") {
            ctimes.push(t.to_string());
        }
    }
    let idle = Instant::now();
    assert_eq!(ctimes.len(), 20, "one line per transaction: {ctimes:?}");
    if !is_v41(&base) {
        assert!(
            ctimes.iter().all(|t| t != "-" && *t == ctimes[0]),
            "one lock file kept through 20 back-to-back transactions: {ctimes:?}"
        );
    }
    // Kept while unused for a while, then released by the child's thread
    // (the child lives for 4 s after "idle").
    assert!(
        !released_within(&base, &db, Duration::from_millis(300)),
        "the unused lock is kept for its linger period"
    );
    assert!(
        released_within(&base, &db, Duration::from_millis(2500)),
        "released once unused for the linger period"
    );
    let took = idle.elapsed();
    assert!(
        took < Duration::from_millis(3500),
        "released by the living process, not at its exit ({took:?})"
    );
    for _ in lines {}
    assert!(child.wait().unwrap().success());
    remove_db(&base, &db);
}

/// A process that forks after using a database: the child is another
/// process to the lock, not the parent under another name. (The child
/// used to inherit the parent's lock owner record, so each took the
/// other's lock file for its own, and both wrote at once.) A connection
/// the parent opened is refused to the child, and the child's close of it
/// leaves it working in the parent.
#[test]
fn a_forked_child_and_its_parent_exclude_each_other() {
    let Some(base) = server_url("forked_child_lock") else {
        return;
    };
    let db = fresh_db(&base, "forked");
    let out = spawn_child("child_process_entry", "forker", &[("DNFS_SQL_DB", &db)])
        .wait_with_output()
        .expect("forker");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "forker failed: {text}");
    let line = |prefix: &str| {
        text.lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix:?} line in: {text}"))
            .to_string()
    };
    let granted = text.lines().any(|l| l == "granted");
    assert!(
        !granted,
        "the parent took the write lock while its forked child held it"
    );
    let refused = line("refused");
    assert!(refused.contains("locked"), "{refused}");
    assert_eq!(
        line("child "),
        "child 0",
        "the child's own transaction (status 2: it could use the parent's connection): {text}"
    );
    assert_eq!(line("rows "), "rows 2", "{text}");
    remove_db(&base, &db);
}

#[test]
fn second_process_waits_while_a_transaction_is_open_and_proceeds_after() {
    let Some(base) = server_url("second_process_txn") else {
        return;
    };
    let db = fresh_db(&base, "txn");
    let c = open(&db).unwrap();
    c.execute_batch(
        "CREATE TABLE t(x); INSERT INTO t VALUES(1),(2);
         CREATE TABLE counter(p INTEGER, c INTEGER); INSERT INTO counter VALUES(0, 0);",
    )
    .unwrap();
    assert_eq!(probe(&db), "OK 2", "no lock held: the other process reads");

    c.execute_batch("BEGIN; SELECT count(*) FROM t;").unwrap();
    let v41 = is_v41(&base);
    if v41 {
        assert!(
            range_locked(&base, &db),
            "byte-range lock during a transaction"
        );
        no_lock_files(&base, &db);
    } else {
        let owner = lock_file(&base, &db).expect("lock file exists during a transaction");
        assert!(
            owner.contains(&format!("pid={}", std::process::id())),
            "lock file names us: {owner}"
        );
    }
    let seen = probe(&db);
    assert!(seen.starts_with("BUSY"), "during our transaction: {seen}");
    // A writer of another process waits while we hold the lock, and goes
    // on once we commit.
    let writer = std::thread::spawn({
        let db = db.clone();
        move || {
            let started = Instant::now();
            let w = spawn_child(
                "child_process_entry",
                "incrementer",
                &[("DNFS_SQL_DB", db.as_str()), ("DNFS_SQL_N", "1")],
            );
            let out = w.wait_with_output().expect("incrementer");
            (out.status.success(), started.elapsed())
        }
    });
    std::thread::sleep(Duration::from_millis(1500));
    c.execute_batch("COMMIT").unwrap();
    let (ok, took) = writer.join().unwrap();
    assert!(ok, "the waiting writer failed");
    assert!(
        took >= Duration::from_millis(1400),
        "the writer of the other process did not wait for our transaction ({took:?})"
    );
    let incremented: u32 = c
        .query_row("SELECT c FROM counter", [], |r| r.get(0))
        .unwrap();
    assert_eq!(incremented, 1, "the other process's write after ours");
    assert!(
        released_within(&base, &db, Duration::from_secs(2)),
        "process lock released at the end (once its linger passed)"
    );
    if v41 {
        no_lock_files(&base, &db);
    }
    assert_eq!(probe(&db), "OK 2");

    // Exclusive locking mode: held from the first read until close.
    c.execute_batch("PRAGMA locking_mode=EXCLUSIVE; SELECT count(*) FROM t;")
        .unwrap();
    let seen = probe(&db);
    assert!(seen.starts_with("BUSY"), "exclusive locking mode: {seen}");
    drop(c);
    assert_eq!(probe(&db), "OK 2");
    remove_db(&base, &db);
}

#[test]
fn second_process_is_refused_while_a_wal_database_is_open() {
    let Some(base) = server_url("second_process_wal") else {
        return;
    };
    let db = fresh_db(&base, "wal2");
    let c = open(&db).unwrap();
    journal_mode(&c, "wal");
    c.execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES(1),(2),(3);")
        .unwrap();
    // Between transactions, but with the WAL-index mapped: still refused.
    let seen = probe(&db);
    assert!(seen.starts_with("BUSY"), "WAL database open here: {seen}");
    let v41 = is_v41(&base);
    if v41 {
        assert!(range_locked(&base, &db));
        no_lock_files(&base, &db);
    } else {
        assert!(lock_file(&base, &db).is_some());
    }
    drop(c);
    assert!(
        released_within(&base, &db, Duration::from_secs(2)),
        "lock released at close"
    );
    assert_eq!(probe(&db), "OK 3", "after close the other process reads");
    remove_db(&base, &db);
}

// ---------------------------------------------------------------------
// The process's mirror of a database it holds (crate::mirror).

/// This process's statistics as readers see them (every copy of the
/// library in it merged).
fn own_stats() -> dnfs::stats::ProcessStats {
    let me = std::process::id();
    let host = dnfs::publish::read_host(Some(me));
    host.processes
        .into_iter()
        .find(|p| p.pid == me)
        .unwrap_or_else(|| panic!("this process publishes nothing: {:?}", host.unreadable))
}

/// READs this process made on files whose path ends with `suffix`.
fn reads_of(suffix: &str) -> u64 {
    own_stats()
        .stats
        .files
        .iter()
        .filter(|f| f.path.ends_with(suffix))
        .map(|f| f.totals.calls_by_proc.get("READ").copied().unwrap_or(0))
        .sum()
}

/// The test binary links its own copy of directnfs and SQLite loads the
/// VFS's (libdirectnfs_sqlite.so): two copies of the library in one
/// process, as in a program on the C library that loads the extension.
/// Both publish (`PID.sock` and `PID.2.sock`) and readers see both copies'
/// files as one process. Before, the later copy's endpoint replaced the
/// other's, and one copy's clients vanished from `dnfs stats` and `top`.
#[test]
fn two_copies_of_the_library_in_one_process_both_publish() {
    let Some(base) = server_url("two_copies") else {
        return;
    };
    let db = fresh_db(&base, "twocopies");
    let name = db_file_name(&db).to_string();
    let c = open(&db).unwrap();
    c.execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (1);")
        .unwrap();
    // This binary's own copy, publishing (no stats=off).
    let mine = dnfs::Client::connect(&base).expect("client");
    let own_name = format!("two-copies-{}.dat", std::process::id());
    let own_file = format!("{}/{own_name}", mine.target_path().trim_end_matches('/'));
    let f = mine.create(&own_file).expect("create");
    f.write_at(b"x", 0).expect("write");
    let files: Vec<String> = own_stats()
        .stats
        .files
        .into_iter()
        .map(|f| f.path)
        .collect();
    assert!(
        files.iter().any(|p| p.ends_with(&name)),
        "the VFS's copy is seen: {files:?}"
    );
    assert!(
        files.iter().any(|p| p.ends_with(&own_name)),
        "this binary's copy is seen: {files:?}"
    );
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let me = std::process::id();
    let endpoints = dnfs::publish::endpoints()
        .into_iter()
        .filter(|e| e.pid == me && e.path.starts_with(dnfs::publish::process_dir(uid)))
        .count();
    assert!(endpoints >= 2, "one endpoint per copy, found {endpoints}");
    drop(f);
    let _ = mine.remove(&own_file);
    drop(c);
    remove_db(&base, &db);
}

#[test]
fn a_held_wal_database_is_read_back_from_memory_and_forgotten_once_released() {
    let Some(base) = server_url("held_mirror") else {
        return;
    };
    let db = fresh_db(&base, "mirror");
    let name = db_file_name(&db).to_string();
    let wal = format!("{name}-wal");
    // Keeps this process's lock state of the database (and its mirrors)
    // alive throughout, without ever holding the lock itself.
    let keep = open(&db).unwrap();
    let c1 = open(&db).unwrap();
    journal_mode(&c1, "wal");
    c1.execute_batch("PRAGMA wal_autocheckpoint=0; CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB);")
        .unwrap();
    for txn in 0..50 {
        c1.execute_batch("BEGIN").unwrap();
        for i in 0..10 {
            c1.execute(
                "INSERT INTO t VALUES(?1, randomblob(2000))",
                params![txn * 10 + i],
            )
            .unwrap();
        }
        c1.execute_batch("COMMIT").unwrap();
    }
    let (db_reads, wal_reads) = (reads_of(&name), reads_of(&wal));
    // A new connection's cache is empty: every page comes from the WAL.
    let c2 = open(&db).unwrap();
    let n: i64 = c2
        .query_row("SELECT count(*) FROM t WHERE length(v) = 2000", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(n, 500);
    // A checkpoint reads every frame back and copies it into the database;
    // then a third connection reads the pages from the database.
    let (busy, _, _): (i64, i64, i64) = c1
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap();
    assert_eq!(busy, 0, "checkpoint completed");
    let c3 = open(&db).unwrap();
    let sum: i64 = c3
        .query_row("SELECT sum(length(v)) FROM t", [], |r| r.get(0))
        .unwrap();
    assert_eq!(sum, 500 * 2000);
    assert_eq!(integrity(&c3), "ok");
    let (db_now, wal_now) = (reads_of(&name), reads_of(&wal));
    assert_eq!(
        (db_now - db_reads, wal_now - wal_reads),
        (0, 0),
        "READs of (database, WAL) while this process held the database"
    );
    // Released (every WAL connection closed): another process changes
    // every row; the connection opened next here must see its rows, not
    // what this process knew.
    drop((c1, c2, c3));
    let mut child = spawn_child(
        "child_process_entry",
        "exec",
        &[
            ("DNFS_SQL_DB", &db),
            ("DNFS_SQL_EXEC", "UPDATE t SET v = zeroblob(2000);"),
        ],
    );
    let status = child.wait().unwrap();
    assert!(status.success(), "the other process's update: {status:?}");
    let c4 = open(&db).unwrap();
    let zeros: i64 = c4
        .query_row("SELECT count(*) FROM t WHERE v = zeroblob(2000)", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(zeros, 500, "rows the other process changed, seen here");
    assert!(reads_of(&name) > db_now, "read from the server again");
    drop((c4, keep));
    remove_db(&base, &db);
}

// ---------------------------------------------------------------------
// Names.

#[test]
fn mount_prefix_names_work_and_other_paths_are_refused() {
    let Some(base) = server_url("mount_prefix_names") else {
        return;
    };
    let url = dnfs::config::NfsUrl::parse(&base).expect("DNFS_TEST_URL parses");
    let mut tab = format!(
        "server: sqltest\npath: {}\nexport: {} mount: /mnt/dnfs-sql-test\n",
        url.host, url.path
    );
    if let Some(p) = url.options.nfs_port.or(url.port) {
        tab.push_str(&format!("port: {p}\n"));
    }
    if let Some(p) = url.options.mount_port {
        tab.push_str(&format!("mount_port: {p}\n"));
    }
    // The same protocol as the URL's (DNFS_TEST_URL may be an NFSv4.1 one).
    if url.options.nfs_version == dnfs::config::NfsVersion::V41 {
        tab.push_str("nfs_version: nfsv4.1\n");
    }
    let tab_path = std::env::temp_dir().join(format!("dnfstab-sqltest-{}", std::process::id()));
    std::fs::write(&tab_path, tab).unwrap();
    // Only this test opens non-URL names, so setting the variable for the
    // whole test process does not affect the others.
    std::env::set_var("DIRECTNFS_TAB", &tab_path);

    let name = format!("/mnt/dnfs-sql-test/sqltest-mount-{}.db", std::process::id());
    let c = open(&name).expect("open under the mount: prefix");
    c.execute_batch("CREATE TABLE t(x); BEGIN; INSERT INTO t VALUES(1); COMMIT;")
        .unwrap();
    assert_eq!(integrity(&c), "ok");
    let file: String = c
        .query_row("PRAGMA database_list", [], |r| r.get(2))
        .unwrap();
    assert_eq!(file, name);
    drop(c);
    let c = open(&format!(
        "/mnt/dnfs-sql-test/./sub/../sqltest-mount-{}.db",
        std::process::id()
    ))
    .expect("same database by a non-canonical path");
    let n: i64 = c
        .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 1);
    drop(c);

    match open("/tmp/not-under-any-mount-prefix.db") {
        Err(rusqlite::Error::SqliteFailure(e, _)) => {
            assert_eq!(e.code, ErrorCode::CannotOpen)
        }
        Ok(c) => {
            // SQLite may open lazily: the first access must fail.
            let r = c.execute_batch("CREATE TABLE t(x)");
            assert!(r.is_err(), "a local path was accepted");
        }
        Err(e) => panic!("unexpected error {e}"),
    }
    remove_db(
        &base,
        &db_url(&base, &format!("sqltest-mount-{}.db", std::process::id())),
    );
    let _ = std::fs::remove_file(&tab_path);
}
