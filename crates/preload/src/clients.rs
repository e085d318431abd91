//! One directnfs client per mount, per process, made on the first NFS call
//! that needs it (a program that never touches NFS never connects), and
//! made again in a child after `fork` (see fork.rs) from what the parent's
//! client knew (`Client::after_fork`: no MOUNT, no FSINFO, the parent's
//! cached handles): a new PostgreSQL backend's first call costs only its
//! connects.
//!
//! A server that does not answer at that first call is waited for, as the
//! mount's `hard`/`soft` option says: `hard` (the default) retries until it
//! answers, saying so once on stderr; `soft` fails with `ETIMEDOUT` after
//! `timeo` x (`retrans` + 1).

use std::sync::RwLock;
use std::time::{Duration, Instant};

use dnfs::{Client, Error};

use crate::fail::{Errno, Res};
use crate::state::State;
use crate::warn;

/// The client of one mount in this process.
#[derive(Debug, Default, Clone)]
pub struct Slot {
    /// This process's client (`None`: not yet made).
    client: Option<Client>,
    /// The client of the process this one was forked from (never used or
    /// dropped here: only read by `Client::after_fork`).
    parent: Option<Client>,
}

/// The clients, by mount index.
pub static SLOTS: RwLock<Vec<Slot>> = RwLock::new(Vec::new());

/// Sizes the table for `n` mounts.
pub fn init(n: usize) {
    let mut slots = SLOTS.write().unwrap_or_else(|p| p.into_inner());
    slots.clear();
    slots.resize(n, Slot::default());
}

/// The client of mount `m`, made now if it is not yet.
pub fn get(state: &State, m: usize) -> Res<Client> {
    let parent = {
        let slots = SLOTS.read().unwrap_or_else(|p| p.into_inner());
        let slot = slots.get(m).ok_or(Errno(libc::EINVAL))?;
        if let Some(c) = &slot.client {
            return Ok(c.clone());
        }
        slot.parent.clone()
    };
    // Made outside the lock (it may wait for the server); if another
    // thread was quicker, its client is kept and ours dropped.
    let fresh = make(state, m, parent.as_ref());
    // The parent's client was cloned only to be read: never drop it here.
    std::mem::forget(parent);
    let fresh = fresh?;
    let mut slots = SLOTS.write().unwrap_or_else(|p| p.into_inner());
    let slot = slots.get_mut(m).ok_or(Errno(libc::EINVAL))?;
    Ok(slot.client.get_or_insert(fresh).clone())
}

/// In the child after `fork`: every client becomes the parent of the next
/// one, and is never dropped: the clients' threads do not exist here and
/// their sockets are the parent's, so running their destructors would wait
/// for nothing or shut the parent's connections down.
pub fn forget_all_in_child(slots: &mut [Slot]) {
    for slot in slots.iter_mut() {
        if let Some(c) = slot.client.take() {
            std::mem::forget(slot.parent.replace(c));
        }
    }
}

/// Environment variable: when set, each process says at exit how many
/// calls of each NFS procedure its clients made (one line per mount on
/// stderr): what a program's file calls cost on
/// the wire. `calls` also says which libc calls made them (tally.rs) and
/// names the process by its title.
pub const ENV_STATS: &str = "DIRECTNFS_PRELOAD_STATS";

/// NFS calls of this process's clients so far, by procedure, every mount
/// summed.
pub fn calls_by_proc() -> std::collections::BTreeMap<String, u64> {
    let mut sum = std::collections::BTreeMap::new();
    let Ok(slots) = SLOTS.try_read() else {
        return sum;
    };
    for c in slots.iter().filter_map(|s| s.client.as_ref()) {
        for server in c.stats().servers {
            for (k, v) in server.totals.calls_by_proc {
                *sum.entry(k).or_default() += v;
            }
        }
    }
    sum
}

/// The process's title as `ps` shows it (PostgreSQL rewrites its
/// arguments to say what each process is).
fn title() -> String {
    let raw = std::fs::read("/proc/self/cmdline").unwrap_or_default();
    let text = String::from_utf8_lossy(&raw);
    text.trim_end_matches('\0')
        .replace('\0', " ")
        .trim()
        .to_string()
}

/// Registers the exit report when [`ENV_STATS`] is set.
pub fn report_at_exit_if_asked() {
    extern "C" fn report() {
        let Some(state) = crate::state::get() else {
            return;
        };
        {
            let slots = match SLOTS.try_read() {
                Ok(s) => s,
                Err(_) => return,
            };
            for (m, slot) in slots.iter().enumerate() {
                let Some(c) = &slot.client else { continue };
                let Some(server) = c.stats().servers.into_iter().next() else {
                    continue;
                };
                let prefix = &state.config.mounts[m].prefix;
                let calls: Vec<String> = server
                    .totals
                    .calls_by_proc
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect();
                warn::always(&format!("calls for {prefix}: {}", calls.join(" ")));
                // The reads and writes of each I/O class (the dnfstab's
                // `*_files:` patterns), as the program made them.
                let classes: Vec<String> = server
                    .io_classes
                    .iter()
                    .map(|(k, io)| format!("{k}={}r/{}w", io.reads, io.writes))
                    .collect();
                warn::always(&format!("io classes for {prefix}: {}", classes.join(" ")));
            }
        }
        let lines = crate::tally::lines();
        if !lines.is_empty() {
            warn::always(&format!("process: {}", title()));
        }
        for line in lines {
            warn::always(&format!("by libc call: {line}"));
        }
    }
    let Some(v) = std::env::var_os(ENV_STATS) else {
        return;
    };
    if v == "calls" {
        crate::tally::enable();
    }
    // SAFETY: registers a plain extern "C" function.
    unsafe { libc::atexit(report) };
}

/// How long one attempt to mount a server that cannot be reached lasts
/// (the client's shortest `mnt_timeout`) before [`make`] decides whether
/// to wait on.
const MOUNT_ATTEMPT: Duration = Duration::from_secs(1);

/// Makes the client of mount `m` (from the parent's when there is one),
/// waiting for its server as `hard`/`soft` say.
fn make(state: &State, m: usize, parent: Option<&Client>) -> Res<Client> {
    let mount = state.config.mounts.get(m).ok_or(Errno(libc::EINVAL))?;
    let options = &mount.target.options;
    let patience = options
        .timeo
        .saturating_mul(options.retrans.saturating_add(1));
    // This loop is the waiting policy (hard: as long as it takes, said
    // once; soft: timeo x (retrans + 1)), so each mount attempt is short:
    // left to `mnt_timeout` (600 s by default), a first call would wait
    // silently for ten minutes, on a soft mount too.
    let mut target = mount.target.clone();
    target.options.mnt_timeout = MOUNT_ATTEMPT;
    let start = Instant::now();
    let mut pause = Duration::from_millis(100);
    loop {
        // Its threads (the client's receiver, maintenance and connect
        // threads inherit the mask) never take a signal meant for the
        // program.
        let result = dnfs::process::with_signals_blocked(|| match parent {
            Some(p) => p.after_fork(),
            None => Client::mount(&target),
        });
        let e = match result {
            Ok(c) => return Ok(c),
            Err(e) => e,
        };
        if !retryable(&e) {
            warn::once(&format!("mount {}", mount.prefix), || {
                format!("cannot mount {} for {}: {e}", mount.label, mount.prefix)
            });
            return Err(Errno(e.errno()));
        }
        if !options.hard && start.elapsed() >= patience {
            warn::always(&format!(
                "server {} for {} not responding after {:?} (soft): {e}",
                mount.label,
                mount.prefix,
                start.elapsed()
            ));
            return Err(Errno(libc::ETIMEDOUT));
        }
        warn::once(&format!("down {}", mount.prefix), || {
            format!(
                "server {} for {} not responding ({e}); {}",
                mount.label,
                mount.prefix,
                if options.hard {
                    "hard mount: still trying"
                } else {
                    "soft mount: trying until timeo x (retrans + 1)"
                }
            )
        });
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_secs(2));
    }
}

/// Errors worth waiting out: the server (or the path to it) is not there
/// yet. A refused export, a bad config or credential is the answer: so is
/// EACCES (no Kerberos ticket, a flavor the export does not take) and a
/// connection the server refused to secure (RPC-with-TLS: no STARTTLS, a
/// certificate that does not check, InvalidData or InvalidInput), which
/// the client's own mount does not wait out either and a hard mount would
/// otherwise wait on for ever.
fn retryable(e: &Error) -> bool {
    match e {
        Error::Mount { .. } | Error::Auth { .. } | Error::Config(_) | Error::InvalidInput(_) => {
            false
        }
        Error::Connect { source, .. } => !matches!(
            source.kind(),
            std::io::ErrorKind::PermissionDenied
                | std::io::ErrorKind::InvalidData
                | std::io::ErrorKind::InvalidInput
        ),
        _ => e.errno() != libc::EACCES,
    }
}
