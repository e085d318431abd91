//! `dnfs sqlite-unlock DB`: the NFSv3 lock file of a SQLite database
//! (`DB.dnfs-lock`, a symbolic link naming its owner) is removed only when
//! its owner is known to be gone: a process of this host that no longer
//! runs, or one of the host `--host-gone` names. A live owner of this
//! host, or one of another host not named, is never removed, and the
//! refusal names the owner. Against the real server; the lock files are
//! planted as the VFS makes them (one SYMLINK).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{dnfs, server, RemoteDir};

/// The owner record of a lock of `pid` (process start time `start`) on
/// `host`, as the VFS writes it.
fn record(pid: u32, start: u64, host: &str) -> String {
    format!("directnfs-sqlite-lock 2 pid={pid} start={start} nonce=00000000000000ab host={host}")
}

/// This host's name, as the VFS records it.
fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its full length, which is passed.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    assert_eq!(rc, 0, "gethostname");
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// A pid no process has now: a child that has exited and been reaped.
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

/// Runs `dnfs sqlite-unlock ARGS`: (success, stdout, stderr).
fn unlock(args: &[&str]) -> (bool, String, String) {
    let mut all = vec!["sqlite-unlock"];
    all.extend_from_slice(args);
    let out = dnfs(&all);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn sqlite_unlock_removes_only_a_lock_whose_owner_is_known_to_be_gone() {
    let Some(s) = server() else { return };
    let dir = RemoteDir::new(s, "sqlite-unlock");
    let client = directnfs::Client::connect(&s.url("")).unwrap();
    let db_rel = format!("{dir}/app.db");
    let db = s.url(&db_rel);
    let lock = format!("/{db_rel}.dnfs-lock");
    let exists = |c: &directnfs::Client| c.readlink(&lock).is_ok();

    // No lock file: said, and a success.
    let (ok, out, err) = unlock(&[&db]);
    assert!(ok, "{err}");
    assert!(out.contains("is not locked"), "{out}");

    // A process of another host: never judged without --host-gone HOST.
    client
        .symlink(record(4242, 1, "gone-host.invalid").as_bytes(), &lock)
        .unwrap();
    let (ok, _, err) = unlock(&[&db]);
    assert!(!ok, "refused");
    assert!(
        err.contains("pid 4242 on host gone-host.invalid")
            && err.contains(".dnfs-lock")
            && err.contains("--host-gone gone-host.invalid"),
        "names the owner, the file and what to do: {err}"
    );
    assert!(exists(&client), "left in place");
    let (ok, _, err) = unlock(&[&db, "--host-gone", "another-host.invalid"]);
    assert!(!ok && err.contains("gone-host.invalid"), "{err}");
    assert!(exists(&client), "left in place for another host's name");
    let (ok, out, err) = unlock(&[&db, "--host-gone", "gone-host.invalid"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("removed lock file") && out.contains("pid 4242 on host gone-host.invalid"),
        "{out}"
    );
    assert!(!exists(&client), "removed");

    // A live process of this host (this one; start 0: not compared).
    let here = hostname();
    client
        .symlink(record(std::process::id(), 0, &here).as_bytes(), &lock)
        .unwrap();
    let (ok, _, err) = unlock(&[&db, "--host-gone", &here]);
    assert!(!ok, "a live owner of this host is never removed");
    assert!(err.contains("alive on this host"), "{err}");
    assert!(exists(&client), "left in place");
    client.remove(&lock).unwrap();

    // A process of this host that is gone: removed without being told.
    let dead = dead_pid();
    client
        .symlink(record(dead, 1, &here).as_bytes(), &lock)
        .unwrap();
    let (ok, out, err) = unlock(&[&db]);
    assert!(ok, "{err}");
    assert!(out.contains(&format!("pid {dead} on host {here}")), "{out}");
    assert!(!exists(&client), "removed");
}
