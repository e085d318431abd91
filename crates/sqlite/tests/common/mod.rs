//! Shared by the SQL tests: the server URL, loading the extension into the
//! system's SQLite (through rusqlite, linked to libsqlite3), database names,
//! and re-running this test binary as a second process.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Once;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

pub use directnfs_testkit::server::url as server_url;

/// The built extension, next to the test binary's deps directory
/// (`target/<profile>/libdirectnfs_sqlite.so`), or `$DNFS_SQLITE_EXT`.
pub fn extension_path() -> PathBuf {
    if let Some(p) = std::env::var_os("DNFS_SQLITE_EXT") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("current_exe");
    let deps = exe.parent().expect("deps dir");
    for dir in [deps, deps.parent().expect("profile dir")] {
        let p = dir.join("libdirectnfs_sqlite.so");
        if p.exists() {
            return p;
        }
    }
    panic!(
        "libdirectnfs_sqlite.so not found near {} (cargo build -p directnfs-sqlite)",
        exe.display()
    );
}

/// Loads the extension into this process's SQLite once; the VFS stays
/// registered for every later connection.
pub fn load_vfs() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let c = Connection::open_in_memory().expect("memory db");
        // SAFETY: loading our own extension, built by this workspace.
        unsafe {
            c.load_extension_enable().expect("enable");
            c.load_extension(extension_path(), None::<&str>)
                .expect("load libdirectnfs_sqlite without an entry point");
            c.load_extension_disable().expect("disable");
        }
    });
}

/// `nfs://host/export/<dir>/<name>?query` from `nfs://host/export?query`.
pub fn db_url(base: &str, name: &str) -> String {
    let (path, query) = match base.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (base, None),
    };
    let mut u = format!("{}/{}", path.trim_end_matches('/'), name);
    if let Some(q) = query {
        u.push('?');
        u.push_str(q);
    }
    u
}

/// A fresh, unique database name for one test.
pub fn fresh_db(base: &str, test: &str) -> String {
    let name = format!(
        "sqltest-{test}-{}-{}.db",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
            % 1_000_000_000
    );
    db_url(base, &name)
}

/// Opens `name` through the directnfs VFS.
pub fn open(name: &str) -> rusqlite::Result<Connection> {
    load_vfs();
    let c = Connection::open_with_flags_and_vfs(
        name,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        "directnfs",
    )?;
    c.busy_timeout(Duration::from_secs(30))?;
    Ok(c)
}

pub fn integrity(c: &Connection) -> String {
    c.query_row("PRAGMA integrity_check", [], |r| r.get::<_, String>(0))
        .expect("integrity_check")
}

/// Sets the journal mode and checks SQLite accepted it.
pub fn journal_mode(c: &Connection, mode: &str) {
    let got: String = c
        .query_row(&format!("PRAGMA journal_mode={mode}"), [], |r| r.get(0))
        .expect("journal_mode");
    assert_eq!(got.to_lowercase(), mode.to_lowercase());
}

/// The URL of a test's own directnfs client (not the VFS's): `stats=off`,
/// so its files stay out of the statistics the tests read (`reads_of`).
/// The test binary links its own copy of directnfs beside the VFS's shared
/// object; each copy publishes its own endpoint and readers merge them.
pub fn helper_url(base: &str) -> String {
    let sep = if base.contains('?') { '&' } else { '?' };
    format!("{base}{sep}stats=off")
}

/// Removes a database and its companions (best effort), through the
/// directnfs client itself.
pub fn remove_db(base: &str, db: &str) {
    let Ok(client) = dnfs::Client::connect(&helper_url(base)) else {
        return;
    };
    let file = db
        .split('?')
        .next()
        .and_then(|p| p.rsplit('/').next())
        .unwrap_or_default()
        .to_string();
    let dir = client.target_path().trim_end_matches('/').to_string();
    for suffix in ["", "-journal", "-wal", "-shm", ".dnfs-lock", ".dnfs-want"] {
        let _ = client.remove(&format!("{dir}/{file}{suffix}"));
    }
}

/// Runs this test binary again as a child, executing the test `entry` with
/// `DNFS_SQL_CHILD=role` and the given extra environment.
pub fn spawn_child(entry: &str, role: &str, env: &[(&str, &str)]) -> Child {
    child_command(entry, role, env)
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn child test process")
}

/// [`spawn_child`], with the child's stderr piped too (to read what the
/// VFS reports there).
pub fn spawn_child_piped(entry: &str, role: &str, env: &[(&str, &str)]) -> Child {
    child_command(entry, role, env)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn child test process")
}

fn child_command(entry: &str, role: &str, env: &[(&str, &str)]) -> Command {
    let exe = std::env::current_exe().expect("current_exe");
    let mut cmd = Command::new(exe);
    cmd.args(["--exact", entry, "--nocapture", "--test-threads=1"])
        .env("DNFS_SQL_CHILD", role)
        .stdout(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// The role when running as a child, else None.
pub fn child_role() -> Option<String> {
    std::env::var("DNFS_SQL_CHILD").ok()
}
