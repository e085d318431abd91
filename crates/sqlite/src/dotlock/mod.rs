//! The cross-process, cross-host lock: `<db>.dnfs-lock` next to the
//! database, a **symbolic link whose content is the owner record**.
//!
//! NFSv3 SYMLINK (RFC 1813 §3.3.10) creates the name and its content in
//! one request and fails with NFS3ERR_EXIST if the name exists: taking the
//! lock and recording who took it are one atomic step on the server, so no
//! process can ever see the lock without its owner, whenever its taker is
//! killed. (The lock used to be a file made by EXCLUSIVE CREATE and then
//! written: a taker killed between the two left a lock nobody could judge,
//! and the database stayed locked for ever.)
//!
//! The owner record ([`owner`]) names host, pid, process start time (so a
//! recycled pid is not taken for the owner) and a nonce fixed per database
//! file per process. A taker whose SYMLINK failed with EEXIST reads the
//! lock back ([`seen`]):
//! * its own nonce: the lock is ours. That is what a re-sent SYMLINK
//!   reports when its first copy created the link (the reply was lost and
//!   the copy went out on another connection, where the server's duplicate
//!   request cache does not know it), and what an earlier acquisition or
//!   release that failed half-way leaves;
//! * an owner on THIS host whose process is gone: stale, broken
//!   ([`breaking`]: one breaker of this host at a time, [`DEAD_GRACE`]
//!   after the judgement, and only if the lock still holds the owner that
//!   was judged dead);
//! * a live owner, or one on another host (whose liveness cannot be
//!   known): busy; the error names the owner and the file to remove once
//!   that process is gone;
//! * no owner record at all — a regular file left by an older directnfs
//!   (killed between its CREATE and its WRITE), or something that is not
//!   a directnfs lock: busy until it has been unchanged for
//!   [`OWNERLESS_AFTER`] by the server's clock, then broken with a
//!   warning naming it. This version never makes such a file, so the
//!   bound only has to outlast an older version's CREATE-to-WRITE window
//!   (three round trips);
//! * the record of a newer directnfs: busy, never broken.
//!
//! Waiters ask for a turn through a second file, `<db>.dnfs-want`
//! ([`mark_wanted`], [`DotLock::release`]).

mod breaking;
mod owner;
mod seen;

use std::time::Duration;

use dnfs::{Client, OpenOptions};

pub use owner::{random_u64, Owner};
use seen::{age_on_server, read_lock, Seen};

/// Suffix of the lock file, appended to the database's path.
pub const SUFFIX: &str = ".dnfs-lock";
/// Suffix of the waiter file: exists while some process waits for the lock.
pub const WANT_SUFFIX: &str = ".dnfs-want";

/// A lock file without an owner record is broken once it has been
/// unchanged this long (server time). This version never leaves one;
/// an older one took three round trips between creating the file and
/// writing its owner, which 10 s outlasts by far, while a user's
/// `busy_timeout` rides over it.
pub const OWNERLESS_AFTER: Duration = Duration::from_secs(10);

/// A lock of a dead process is broken no sooner than this after its owner
/// was judged dead. Requests the process sent before it died may still be
/// queued at the server (the kernel sends what was in its sockets; the
/// server runs what it received), and NFSv3 cannot fence them: a WRITE
/// landing after the next process rolled the journal back would undo the
/// rollback. Seen on the test machine under load: a killed writer's last
/// REMOVE still ran after the test had looked at the directory. Crash
/// recovery is rare; 300 ms is cheap there and long next to a server's
/// queue.
pub const DEAD_GRACE: Duration = Duration::from_millis(300);

/// The two files of one database's lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    /// `<db>.dnfs-lock`: the lock.
    pub lock: String,
    /// `<db>.dnfs-want`: "someone waits".
    pub want: String,
}

impl Names {
    /// The lock files of the database at `db_path` (inside its export).
    pub fn of_db(db_path: &str) -> Names {
        Names {
            lock: format!("{db_path}{SUFFIX}"),
            want: format!("{db_path}{WANT_SUFFIX}"),
        }
    }
}

/// The lock, held. Released with [`DotLock::release`].
#[derive(Debug)]
pub struct DotLock {
    names: Names,
}

/// Who holds a lock we could not take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Holder {
    /// A process that may be alive.
    Process(Owner),
    /// A newer directnfs (its record version).
    Newer(u32),
    /// A lock file without an owner record, unchanged for `age`.
    Ownerless { age: Duration },
    /// The lock changed while we read it.
    Unknown,
}

/// Outcome of [`DotLock::acquire`].
#[derive(Debug)]
pub enum Acquire {
    /// We own the lock now. `broken`: a warning for each lock broken on
    /// the way, naming it (the caller logs them).
    Held { lock: DotLock, broken: Vec<String> },
    /// Someone else does.
    Busy(Holder),
}

impl DotLock {
    /// Tries once to take the lock (no waiting), as `me`, breaking a lock
    /// of a dead process of this host, or one without an owner record
    /// unchanged for `ownerless_after` ([`OWNERLESS_AFTER`]).
    pub fn acquire(
        client: &Client,
        names: &Names,
        me: &Owner,
        ownerless_after: Duration,
    ) -> dnfs::Result<Acquire> {
        let link = me.to_link();
        let mut broken = Vec::new();
        // One try, and one more after each lock broken or vanished (a
        // third lock broken in a row would be someone else's doing).
        for attempt in 0..3 {
            match client.symlink(link.as_bytes(), &names.lock) {
                Ok(()) => return Ok(held(names, broken)),
                Err(e) if e.errno() == libc::EEXIST => {}
                // NFS-Ganesha answered a SYMLINK racing the holder's
                // REMOVE of the same name with NFS3ERR_NOENT (captured in
                // a test run; SQLite then failed BEGIN with
                // SQLITE_IOERR_LOCK): the lock changed hands, try again.
                // A directory that is really missing says so three times.
                Err(e) if e.errno() == libc::ENOENT && attempt < 2 => continue,
                Err(e) => return Err(e),
            }
            let seen = read_lock(client, &names.lock)?;
            let why = match &seen {
                Seen::Gone => continue,
                Seen::Changing => return Ok(Acquire::Busy(Holder::Unknown)),
                Seen::Owner(o) if o == me => return Ok(held(names, broken)),
                Seen::Owner(o) if o.is_dead_here() => format!(
                    "breaking stale lock {} of {o} (process is gone)",
                    names.lock
                ),
                Seen::Owner(o) => return Ok(Acquire::Busy(Holder::Process(o.clone()))),
                Seen::Newer(v) => return Ok(Acquire::Busy(Holder::Newer(*v))),
                Seen::Ownerless { ctime, .. } => {
                    let age = age_on_server(client, names, *ctime)?;
                    if age < ownerless_after {
                        return Ok(Acquire::Busy(Holder::Ownerless { age }));
                    }
                    format!(
                        "breaking lock file {} that names no owner (left by an older directnfs killed while taking it, or not a directnfs lock), unchanged for {} s (bound {} s)",
                        names.lock,
                        age.as_secs(),
                        ownerless_after.as_secs()
                    )
                }
            };
            if matches!(seen, Seen::Owner(_)) {
                std::thread::sleep(DEAD_GRACE);
            }
            if breaking::break_if_unchanged(client, &names.lock, &seen)? {
                broken.push(why);
            }
        }
        Ok(Acquire::Busy(Holder::Unknown))
    }

    /// Removes the lock file. Returns true if another process asked for
    /// the lock meanwhile ([`mark_wanted`]; the request is consumed): the
    /// caller should then not take it again at once, or a process running
    /// back-to-back transactions would starve the others (the gap between
    /// our REMOVE and our next SYMLINK is one round trip).
    pub fn release(&self, client: &Client) -> dnfs::Result<bool> {
        let want = &self.names.want;
        let wanted = self.wanted(client);
        if wanted {
            let _ = client.remove(want);
        }
        match client.remove(&self.names.lock) {
            Err(e) if e.errno() == libc::ENOENT => {
                crate::report(
                    crate::sys::SQLITE_WARNING,
                    &format!(
                        "lock file {} had been removed by someone else while held",
                        self.names.lock
                    ),
                );
                Ok(wanted)
            }
            Err(e) => Err(e),
            Ok(()) => Ok(wanted),
        }
    }

    /// Whether another process asked for the lock ([`mark_wanted`]): one
    /// LOOKUP. A lookup that fails counts as "not asked" (fairness only).
    pub fn wanted(&self, client: &Client) -> bool {
        let want = &self.names.want;
        crate::names::fresh(client, want, || client.metadata(want)).is_ok()
    }
}

fn held(names: &Names, broken: Vec<String>) -> Acquire {
    Acquire::Held {
        lock: DotLock {
            names: names.clone(),
        },
        broken,
    }
}

/// What [`break_by_hand`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ByHand {
    /// There was no lock file.
    NotLocked,
    /// The lock file of this owner was removed.
    Removed(Owner),
    /// Left in place, and why (a sentence naming the lock file and owner).
    Refused(String),
}

/// Breaks the lock of `names` by hand (`dnfs sqlite-unlock`): the owner
/// named by the lock file is judged as [`DotLock::acquire`] judges it,
/// except that an owner of another host, whose liveness this host cannot
/// know, is taken for gone when `host_gone` names its host (the user
/// says that host is down for good). A live owner of this host, a lock
/// of a newer directnfs and a lock that changes while read are left in
/// place; a lock file that names no owner is left to the next open (it
/// breaks it once unchanged for [`OWNERLESS_AFTER`]). The lock is removed
/// only if it still names the owner judged ([`breaking`]), [`DEAD_GRACE`]
/// after the judgement.
pub fn break_by_hand(
    client: &Client,
    names: &Names,
    host_gone: Option<&str>,
) -> dnfs::Result<ByHand> {
    let file = &names.lock;
    let seen = read_lock(client, file)?;
    let owner = match &seen {
        Seen::Gone => return Ok(ByHand::NotLocked),
        Seen::Changing => {
            return Ok(ByHand::Refused(format!(
                "lock file {file} changed while it was read (taken or released now): try again"
            )))
        }
        Seen::Newer(v) => {
            return Ok(ByHand::Refused(format!(
                "lock file {file} was written by a newer directnfs (record version {v}), whose rules this one does not know: not removed"
            )))
        }
        Seen::Ownerless { .. } => {
            return Ok(ByHand::Refused(format!(
                "lock file {file} names no owner: the next open of the database breaks it once it has been unchanged for {} s",
                OWNERLESS_AFTER.as_secs()
            )))
        }
        Seen::Owner(o) => o.clone(),
    };
    let here = owner::hostname();
    if owner.host == here {
        if !owner.is_dead_here() {
            return Ok(ByHand::Refused(format!(
                "lock file {file} is held by {owner}, which is alive on this host: not removed (end that process, or let it finish)"
            )));
        }
    } else if host_gone != Some(owner.host.as_str()) {
        return Ok(ByHand::Refused(format!(
            "lock file {file} is held by {owner}; this host ({here}) cannot know whether that process lives. \
             Only if host {} is down for good, or that process is gone, say so with --host-gone {}",
            owner.host, owner.host
        )));
    }
    std::thread::sleep(DEAD_GRACE);
    if breaking::break_if_unchanged(client, file, &seen)? {
        Ok(ByHand::Removed(owner))
    } else {
        Ok(ByHand::Refused(format!(
            "lock file {file} changed hands meanwhile (no longer held by {owner}): not removed"
        )))
    }
}

/// Tells the holder of the lock that we wait for it (best effort: the
/// waiter file is created if missing).
pub fn mark_wanted(client: &Client, names: &Names) {
    let opts = OpenOptions {
        create: true,
        mode: Some(0o644),
        ..Default::default()
    };
    let _ = crate::names::fresh(client, &names.want, || client.open_with(&names.want, opts));
}

/// True if the lock file exists (someone, maybe us, holds the lock).
pub fn exists(client: &Client, names: &Names) -> dnfs::Result<bool> {
    match crate::names::fresh(client, &names.lock, || client.metadata(&names.lock)) {
        Ok(_) => Ok(true),
        Err(e) if e.errno() == libc::ENOENT => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    //! Against the server of `DNFS_TEST_URL` (skipped when unset).

    use super::*;
    use dnfs::FileType;

    /// A client, fresh lock names and an owner for one test; None
    /// (skipped) without a server.
    fn setup(test: &str) -> Option<(Client, Names, Owner)> {
        let url = directnfs_testkit::server::url(&format!("dotlock_{test}"))?;
        let c = Client::connect(&url).expect("connect");
        let n = names(&c, test);
        Some((c, n, Owner::me(random_u64())))
    }

    /// A regular file at `path`, as an older version's lock file was.
    fn plant_file(c: &Client, path: &str) -> dnfs::File {
        let opts = OpenOptions {
            create: true,
            create_new: true,
            ..Default::default()
        };
        c.open_with(path, opts).unwrap()
    }

    fn names(c: &Client, test: &str) -> Names {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
            % 1_000_000_000;
        let dir = c.target_path().trim_end_matches('/');
        Names::of_db(&format!(
            "{dir}/dotlock-{test}-{}-{t}.db",
            std::process::id()
        ))
    }

    /// A SYMLINK answered NFS3ERR_NOENT (as NFS-Ganesha answered one
    /// racing the holder's REMOVE) is tried again: the lock is taken.
    /// Three in a row (a directory really missing) are an error.
    #[test]
    fn a_symlink_answered_noent_while_the_lock_changes_hands_is_tried_again() {
        use directnfs_testkit::proxy::{FaultProxy, ProxyConfig};
        use directnfs_wire::nfs3::{nfsstat3, NFSPROC3_SYMLINK};
        let Some(url) = directnfs_testkit::server::url("dotlock_noent") else {
            return;
        };
        let parsed = dnfs::config::NfsUrl::parse(&url).expect("url");
        if parsed.options.nfs_version == dnfs::config::NfsVersion::V41 {
            eprintln!("dotlock_noent: NFSv4.1 uses no lock file (byte-range locks)");
            return;
        }
        let nfsport = parsed.options.nfs_port.expect("nfsport in DNFS_TEST_URL");
        let proxy = FaultProxy::start(ProxyConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            upstream: std::net::SocketAddr::from(([127, 0, 0, 1], nfsport)),
            connect_timeout: Duration::from_secs(5),
            seed: 1,
        })
        .expect("proxy");
        let through = url.replace(
            &format!("nfsport={nfsport}"),
            &format!("nfsport={}", proxy.local_addr().port()),
        );
        let c = Client::connect(&through).expect("connect through the proxy");
        let n = names(&c, "noent");
        let me = Owner::me(random_u64());

        proxy.fail_next_v3(NFSPROC3_SYMLINK, nfsstat3::NFS3ERR_NOENT, 2);
        let (lock, broken) = take(&c, &n, &me, OWNERLESS_AFTER);
        assert!(broken.is_empty());
        assert_eq!(proxy.counts().failed_v3, 2, "both NOENTs were answered");
        assert_eq!(read_lock(&c, &n.lock).unwrap(), Seen::Owner(me.clone()));
        lock.release(&c).unwrap();

        proxy.fail_next_v3(NFSPROC3_SYMLINK, nfsstat3::NFS3ERR_NOENT, 3);
        let Err(e) = DotLock::acquire(&c, &n, &me, OWNERLESS_AFTER) else {
            panic!("three NOENTs are an error");
        };
        assert_eq!(e.errno(), libc::ENOENT, "{e}");
        assert_eq!(proxy.counts().failed_v3, 5);
        assert_eq!(read_lock(&c, &n.lock).unwrap(), Seen::Gone);
    }

    fn take(c: &Client, n: &Names, me: &Owner, bound: Duration) -> (DotLock, Vec<String>) {
        match DotLock::acquire(c, n, me, bound).unwrap() {
            Acquire::Held { lock, broken } => (lock, broken),
            Acquire::Busy(h) => panic!("busy: {h:?}"),
        }
    }

    fn busy(c: &Client, n: &Names, me: &Owner, bound: Duration) -> Holder {
        match DotLock::acquire(c, n, me, bound).unwrap() {
            Acquire::Held { .. } => panic!("took a lock that is held"),
            Acquire::Busy(h) => h,
        }
    }

    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    fn cleanup(c: &Client, n: &Names) {
        let _ = c.remove(&n.lock);
        let _ = c.remove(&n.want);
    }

    #[test]
    fn the_lock_is_a_symlink_naming_its_owner_from_the_start() {
        let Some((c, n, me)) = setup("symlink") else {
            return;
        };
        let (lock, broken) = take(&c, &n, &me, OWNERLESS_AFTER);
        assert!(broken.is_empty());
        assert_eq!(c.metadata(&n.lock).unwrap().file_type, FileType::Symlink);
        assert_eq!(
            c.readlink(&n.lock)
                .map(|t| String::from_utf8_lossy(&t).into_owned())
                .unwrap(),
            me.to_link()
        );
        // Another database connection of this process (another nonce) and
        // any other process wait for it: its owner lives.
        let other = Owner::me(random_u64());
        assert_eq!(
            busy(&c, &n, &other, Duration::ZERO),
            Holder::Process(me.clone())
        );
        assert!(exists(&c, &n).unwrap());
        assert!(!lock.release(&c).unwrap(), "nobody asked for it");
        assert!(!exists(&c, &n).unwrap());
        cleanup(&c, &n);
    }

    #[test]
    fn a_link_already_naming_us_is_ours() {
        // What a re-sent SYMLINK meets when its first copy made the link
        // (the client reports EEXIST: it cannot tell whose link it is).
        let Some((c, n, me)) = setup("resent") else {
            return;
        };
        c.symlink(me.to_link().as_bytes(), &n.lock).unwrap();
        let (lock, broken) = take(&c, &n, &me, OWNERLESS_AFTER);
        assert!(broken.is_empty(), "nothing broken: it was ours");
        assert_eq!(
            c.readlink(&n.lock)
                .map(|t| String::from_utf8_lossy(&t).into_owned())
                .unwrap(),
            me.to_link()
        );
        lock.release(&c).unwrap();
        cleanup(&c, &n);
    }

    #[test]
    fn a_lock_of_a_dead_process_of_this_host_is_broken_with_a_warning() {
        let Some((c, n, me)) = setup("dead") else {
            return;
        };
        let mut dead = Owner::me(random_u64());
        dead.pid = dead_pid();
        dead.start = 1;
        c.symlink(dead.to_link().as_bytes(), &n.lock).unwrap();
        let (lock, broken) = take(&c, &n, &me, OWNERLESS_AFTER);
        assert_eq!(broken.len(), 1, "{broken:?}");
        assert!(broken[0].contains(&n.lock), "{broken:?}");
        assert!(broken[0].contains(&format!("pid {}", dead.pid)));
        assert_eq!(
            c.readlink(&n.lock)
                .map(|t| String::from_utf8_lossy(&t).into_owned())
                .unwrap(),
            me.to_link()
        );
        lock.release(&c).unwrap();

        // The same owner on another host is never judged dead.
        dead.host = "some-other-host".into();
        c.symlink(dead.to_link().as_bytes(), &n.lock).unwrap();
        assert_eq!(
            busy(&c, &n, &me, Duration::ZERO),
            Holder::Process(dead.clone())
        );
        cleanup(&c, &n);
    }

    #[test]
    fn an_older_versions_lock_file_of_a_dead_process_is_broken_even_when_a_waiter_marked_it() {
        let Some((c, n, me)) = setup("v1") else {
            return;
        };
        let pid = dead_pid();
        let f = plant_file(&c, &n.lock);
        let text = format!(
            "directnfs-sqlite-lock 1\nhost={}\npid={pid}\nstart=1\nnonce=00000000000000aa\n",
            owner::hostname()
        );
        f.write_at(text.as_bytes(), 0).unwrap();
        f.write_at(b"W", 4095).unwrap();
        let (lock, broken) = take(&c, &n, &me, OWNERLESS_AFTER);
        assert_eq!(broken.len(), 1, "{broken:?}");
        assert!(broken[0].contains(&format!("pid {pid}")), "{broken:?}");
        lock.release(&c).unwrap();
        cleanup(&c, &n);
    }

    #[test]
    fn an_ownerless_lock_file_waits_out_the_bound_then_is_broken_with_a_warning() {
        let Some((c, n, me)) = setup("ownerless") else {
            return;
        };
        // The leftover observed after a SIGKILL of an older version: 4095
        // zero bytes and the byte a waiter wrote at the end.
        let f = plant_file(&c, &n.lock);
        f.write_at(b"W", 4095).unwrap();
        let bound = Duration::from_secs(2);
        match busy(&c, &n, &me, bound) {
            Holder::Ownerless { age } => assert!(age < bound, "{age:?}"),
            other => panic!("{other:?}"),
        }
        std::thread::sleep(bound + Duration::from_millis(1100));
        let (lock, broken) = take(&c, &n, &me, bound);
        assert_eq!(broken.len(), 1, "{broken:?}");
        assert!(
            broken[0].contains(&n.lock) && broken[0].contains("names no owner"),
            "{broken:?}"
        );
        assert_eq!(
            c.readlink(&n.lock)
                .map(|t| String::from_utf8_lossy(&t).into_owned())
                .unwrap(),
            me.to_link()
        );
        // Judging its age marked us as waiting; our release consumes that.
        assert!(lock.release(&c).unwrap(), "the waiter file was seen");
        assert_eq!(c.metadata(&n.want).unwrap_err().errno(), libc::ENOENT);
        cleanup(&c, &n);
    }

    #[test]
    fn a_newer_versions_lock_is_never_broken() {
        let Some((c, n, me)) = setup("newer") else {
            return;
        };
        c.symlink("directnfs-sqlite-lock 3 something new".as_bytes(), &n.lock)
            .unwrap();
        assert_eq!(busy(&c, &n, &me, Duration::ZERO), Holder::Newer(3));
        cleanup(&c, &n);
    }

    #[test]
    fn a_waiter_is_seen_by_the_holder_at_release_and_its_request_consumed() {
        let Some((c, n, me)) = setup("want") else {
            return;
        };
        let (lock, _) = take(&c, &n, &me, OWNERLESS_AFTER);
        mark_wanted(&c, &n);
        assert!(lock.release(&c).unwrap(), "wanted");
        let (lock, _) = take(&c, &n, &me, OWNERLESS_AFTER);
        assert!(!lock.release(&c).unwrap(), "asked once, answered once");
        cleanup(&c, &n);
    }
}
