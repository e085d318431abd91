//! The server side of locks on NFSv3 mounts (locks.rs decides when): the
//! server's Network Lock Manager (NLM v4) through the client's
//! [`Client::nlm_lock`](dnfs::Client::nlm_lock) family, as the kernel's
//! client does for a mount without `nolock`.
//!
//! Which locks go there is the mount's `local_lock=` (Linux's meaning):
//! `none` (the default) sends `fcntl` and `flock` locks, `posix` keeps
//! `fcntl` locks on this host, `flock` keeps `flock` locks on this host,
//! `all` (`nolock`) keeps both.
//!
//! Owners follow POSIX, as on NFSv4.1 (nfs4locks.rs): `fcntl` record locks
//! belong to the process ([`dnfs::NlmOwner::process`]: svid = pid) and any
//! `close` of the file by the process releases them; `flock` and OFD locks
//! belong to the open file description (an owner per description) and go
//! with its last descriptor. A process that exits (`exit`, a return from
//! `main`) releases what it still holds on the server from an `atexit`
//! handler. A process killed by a signal cannot, and NLM has no lease, so
//! each process that takes NLM locks lists them in a file of this host's
//! shadow directory (`nlm/PID`, with the process's start time): the next
//! process of the host that takes an NLM lock, and a waiter that meets a
//! conflict (at most once a second), releases the locks of every listed
//! process that is gone (NLM4_UNLOCK of the whole file in the dead
//! owner's name: same host name, its pid and owner bytes) and removes its
//! list. So a killed holder's locks go as soon as another process of its
//! host wants a lock; until then other hosts wait, as they should. A host
//! that is gone for good leaves its locks until its statd notifies the
//! server or the server's administrator clears them (`docs/book/src/run/served.md`, "Locks on
//! NFSv3").
//!
//! A server without a lock manager makes the lock call fail with
//! `ENOLCK`, and the first such failure of the process says so on stderr,
//! naming the options (`nolock`, `local_lock=`) that keep locks local.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::sync::{Arc, Mutex, MutexGuard, Once};
use std::time::{Duration, Instant};

use dnfs::{Handle, LockConflict, NlmOwner};
use libc::c_short;

use crate::clients;
use crate::fail::{Errno, Res};
use crate::fdtable::Open;
use crate::shadow::Kind as ObjectKind;
use crate::state::{self, State};

use crate::nfs4locks::Kind;

/// What this process holds (or may hold) on servers' lock managers, to
/// release at `close` and at exit.
#[derive(Debug, Default)]
pub struct Held {
    /// Files on which this process took POSIX record locks: (mount, handle).
    process: HashSet<(usize, Handle)>,
    /// Descriptions with `flock`/OFD locks: their id -> (mount, handle).
    descriptions: HashMap<usize, (usize, Handle)>,
}

static HELD: Mutex<Option<Held>> = Mutex::new(None);

/// `HELD` locked (fork.rs holds it across `fork`).
pub type HeldGuard = MutexGuard<'static, Option<Held>>;

fn held() -> HeldGuard {
    HELD.lock().unwrap_or_else(|p| p.into_inner())
}

/// `HELD`, for fork.rs.
pub fn lock_held() -> HeldGuard {
    held()
}

/// In the child after `fork`: record locks are not inherited (POSIX), and
/// the descriptions' locks are the parent's owners, not the child's; the
/// child starts with none to release.
pub fn forget_in_child(held: &mut HeldGuard) {
    **held = None;
}

/// The server side of one lock call on an NFSv3 file.
#[derive(Debug)]
pub struct Nlm {
    state: &'static State,
}

/// `Some` when `open` is a regular file of an NFSv3 mount whose locks of
/// this kind (`posix`: `fcntl` record locks, else `flock`/OFD) go to the
/// server.
pub fn on_v3(open: &Open, posix: bool) -> Option<Nlm> {
    let state = state::get()?;
    let o = &state.config.mounts.get(open.mount)?.target.options;
    if o.nfs_version != dnfs::config::NfsVersion::V3 || open.kind != ObjectKind::File {
        return None;
    }
    let local = if posix {
        o.local_lock.posix_local()
    } else {
        o.local_lock.flock_local()
    };
    (!local).then_some(Nlm { state })
}

/// The owner id of a description: its address, unique while it lives.
fn description_id(open: &Open) -> usize {
    open as *const Open as usize
}

fn owner(open: &Open, kind: Kind) -> NlmOwner {
    match kind {
        Kind::Process => NlmOwner::process(),
        Kind::Description => NlmOwner::description(description_id(open) as u64),
    }
}

impl Nlm {
    /// NLM4_TEST: a lock of another owner that conflicts with `l_type`,
    /// and the holder's process id on its host.
    pub fn test(
        &self,
        open: &Open,
        kind: Kind,
        start: u64,
        len: u64,
        l_type: c_short,
    ) -> Res<Option<(LockConflict, i32)>> {
        let client = clients::get(self.state, open.mount)?;
        let exclusive = l_type == libc::F_WRLCK as c_short;
        client
            .nlm_test(&open.handle, &owner(open, kind), (start, len), exclusive)
            .map_err(|e| said(open, e))
    }

    /// NLM4_LOCK, waiting (polling with back-off) if `wait`; `EAGAIN`
    /// when another owner holds a conflicting lock and `!wait`.
    pub fn lock(
        &self,
        open: &Open,
        kind: Kind,
        (start, len): (u64, u64),
        exclusive: bool,
        wait: bool,
    ) -> Res<()> {
        let client = clients::get(self.state, open.mount)?;
        sweep_once(self.state);
        let mut pause = FIRST_POLL;
        let mut swept = Instant::now();
        loop {
            let r = client.nlm_lock(
                &open.handle,
                &owner(open, kind),
                (start, len),
                exclusive,
                false,
            );
            match r {
                Ok(()) => break,
                Err(e) if wait && dnfs::lock_should_wait(&e) => {
                    // A holder of this host may have died: its locks go.
                    if swept.elapsed() >= Duration::from_secs(1) {
                        sweep(self.state);
                        swept = Instant::now();
                    }
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(LONGEST_POLL);
                }
                Err(e) => return Err(said(open, e)),
            }
        }
        remember(self.state, open, kind);
        Ok(())
    }

    /// NLM4_UNLOCK, after the writes still held for write-behind left
    /// (the next holder, maybe on another host, reads them).
    pub fn unlock(&self, open: &Open, kind: Kind, start: u64, len: u64) -> Res<()> {
        if let Some(f) = open.opened_file() {
            f.flush_write_behind()?;
        }
        let client = clients::get(self.state, open.mount)?;
        client
            .nlm_unlock(&open.handle, &owner(open, kind), (start, len))
            .map_err(|e| said(open, e))
    }
}

/// Pause after a denied blocking lock: 10 ms doubling to 1 s (as
/// NFSv4.1's, v4/lock.rs).
const FIRST_POLL: Duration = Duration::from_millis(10);
const LONGEST_POLL: Duration = Duration::from_secs(1);

/// The error as an errno; the first "no lock manager" of the process is
/// said on stderr with the options that would keep locks local.
fn said(open: &Open, e: dnfs::Error) -> Errno {
    if matches!(e, dnfs::Error::NoLockManager { .. }) {
        crate::warn::once("nlm-missing", || {
            format!(
                "lock on {} failed with ENOLCK (this warning is given once): {e}",
                open.label()
            )
        });
    }
    Errno(e.errno())
}

fn remember(state: &State, open: &Open, kind: Kind) {
    let mut h = held();
    let h = h.get_or_insert_with(Held::default);
    let new = match kind {
        Kind::Process => h.process.insert((open.mount, open.handle)),
        Kind::Description => h
            .descriptions
            .insert(description_id(open), (open.mount, open.handle))
            .is_none(),
    };
    if new {
        write_list(state, h);
    }
    static AT_EXIT: Once = Once::new();
    AT_EXIT.call_once(|| {
        // SAFETY: `release_all_at_exit` is an `extern "C" fn()` that
        // never unwinds (it catches nothing that can panic: the client
        // calls return errors).
        unsafe { libc::atexit(release_all_at_exit) };
    });
}

/// `close` of a descriptor of `open`: the process's record locks on the
/// file go (POSIX), and the description's own locks if this was its last
/// descriptor in the process.
pub fn closing(open: &Arc<Open>) {
    let Some(state) = state::get() else {
        return;
    };
    let key = (open.mount, open.handle);
    let (posix, description) = {
        let mut h = held();
        let Some(h) = h.as_mut() else {
            return;
        };
        let posix = h.process.remove(&key);
        let last = Arc::strong_count(open) == 1;
        let description = last && h.descriptions.remove(&description_id(open)).is_some();
        (posix, description)
    };
    if !(posix || description) {
        return;
    }
    let Ok(client) = clients::get(state, open.mount) else {
        return;
    };
    if let Some(f) = open.opened_file() {
        let _ = f.flush_write_behind();
    }
    if posix {
        let _ = client.nlm_unlock(&open.handle, &NlmOwner::process(), (0, 0));
    }
    if description {
        let _ = client.nlm_unlock(
            &open.handle,
            &NlmOwner::description(description_id(open) as u64),
            (0, 0),
        );
    }
    if let Some(h) = held().as_ref() {
        write_list(state, h);
    }
}

/// At exit: every NLM lock the process may still hold is released (the
/// kernel would release its local ones; the server knows nothing of the
/// exit).
extern "C" fn release_all_at_exit() {
    let Some(h) = held().take() else {
        return;
    };
    let Some(state) = state::get() else {
        return;
    };
    let _ = std::fs::remove_file(list_path(state, std::process::id()));
    for (mount, handle) in h.process {
        if let Ok(client) = clients::get(state, mount) {
            let _ = client.nlm_unlock(&handle, &NlmOwner::process(), (0, 0));
        }
    }
    for (id, (mount, handle)) in h.descriptions {
        if let Ok(client) = clients::get(state, mount) {
            let _ = client.nlm_unlock(&handle, &NlmOwner::description(id as u64), (0, 0));
        }
    }
}

/// This host's lists of NLM lock holders: `SHADOW/nlm`.
fn list_dir(state: &State) -> String {
    format!("{}/nlm", state.shadow.root)
}

fn list_path(state: &State, pid: u32) -> String {
    format!("{}/{pid}", list_dir(state))
}

/// A process's start time (clock ticks since boot, `/proc/PID/stat` field
/// 22): a pid reused by another process is not the holder.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces: count after its ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split(' ').nth(19)?.parse().ok()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Writes this process's list of lock owners (`h`), as a whole: its size
/// follows what is held, however many files the process locked and
/// closed before. The start time is on the first line. Written aside and
/// renamed, so a sweeper never reads half a list.
fn write_list(state: &State, h: &Held) {
    let pid = std::process::id();
    let path = list_path(state, pid);
    if h.process.is_empty() && h.descriptions.is_empty() {
        let _ = std::fs::remove_file(&path);
        return;
    }
    let dir = list_dir(state);
    if crate::shadow::make_shared_dir(&state.shadow.root).is_err()
        || crate::shadow::make_shared_dir(&dir).is_err()
    {
        return;
    }
    let key = |mount: usize| state.config.mounts.get(mount).map(|m| m.key);
    let mut text = format!("{}\n", start_time(pid).unwrap_or(0));
    for (mount, handle) in &h.process {
        if let Some(k) = key(*mount) {
            text.push_str(&format!("P {k:016x} {}\n", hex(handle.as_bytes())));
        }
    }
    for (id, (mount, handle)) in &h.descriptions {
        if let Some(k) = key(*mount) {
            text.push_str(&format!("D {k:016x} {} {id}\n", hex(handle.as_bytes())));
        }
    }
    let aside = format!("{dir}/.{pid}");
    let written = std::fs::File::create(&aside).and_then(|mut f| f.write_all(text.as_bytes()));
    if written.is_ok() {
        let _ = std::fs::rename(&aside, &path);
    }
}

/// [`sweep`] once per process, at its first NLM lock.
fn sweep_once(state: &State) {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| sweep(state));
}

/// Releases the NLM locks of every listed process of this host that is
/// gone, and removes its list.
fn sweep(state: &State) {
    let Ok(entries) = std::fs::read_dir(list_dir(state)) else {
        return;
    };
    let me = std::process::id();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(entry.path()) else {
            continue;
        };
        let mut lines = text.lines();
        let started = lines.next().and_then(|l| l.parse::<u64>().ok());
        if started.is_some() && start_time(pid) == started {
            continue; // alive
        }
        for line in lines {
            release_dead(state, pid, line);
        }
        let _ = std::fs::remove_file(entry.path());
    }
}

/// One line of a dead process's list: NLM4_UNLOCK of the whole file in
/// its owner's name.
fn release_dead(state: &State, pid: u32, line: &str) {
    let words: Vec<&str> = line.split(' ').collect();
    let (owner, key, fh) = match words.as_slice() {
        ["P", key, fh] => (NlmOwner::process_of(pid), *key, *fh),
        ["D", key, fh, id] => {
            let Ok(id) = id.parse::<u64>() else {
                return;
            };
            (NlmOwner::description_of(pid, id), *key, *fh)
        }
        _ => return,
    };
    let Ok(key) = u64::from_str_radix(key, 16) else {
        return;
    };
    let Some(handle) = unhex(fh).and_then(|b| Handle::from_bytes(&b).ok()) else {
        return;
    };
    let Some(mount) = state.config.mounts.iter().position(|m| m.key == key) else {
        return;
    };
    if let Ok(client) = clients::get(state, mount) {
        let _ = client.nlm_unlock(&handle, &owner, (0, 0));
    }
}
