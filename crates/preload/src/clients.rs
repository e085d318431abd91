//! One directnfs client per mount, per process, made on the first NFS call
//! that needs it (a program that never touches NFS never connects), and
//! made again in a child after `fork` (see fork.rs).
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

/// The mounted clients, by mount index (`None`: not yet mounted).
pub static SLOTS: RwLock<Vec<Option<Client>>> = RwLock::new(Vec::new());

/// Sizes the table for `n` mounts.
pub fn init(n: usize) {
    let mut slots = SLOTS.write().unwrap_or_else(|p| p.into_inner());
    slots.clear();
    slots.resize(n, None);
}

/// The client of mount `m`, mounted now if it is not yet.
pub fn get(state: &State, m: usize) -> Res<Client> {
    if let Some(Some(c)) = SLOTS.read().unwrap_or_else(|p| p.into_inner()).get(m) {
        return Ok(c.clone());
    }
    // Mounted outside the lock (it may wait for the server); if another
    // thread was quicker, its client is kept and ours dropped.
    let fresh = mount(state, m)?;
    let mut slots = SLOTS.write().unwrap_or_else(|p| p.into_inner());
    let slot = slots.get_mut(m).ok_or(Errno(libc::EINVAL))?;
    Ok(slot.get_or_insert(fresh).clone())
}

/// Forgets every client without dropping it: in a child after `fork`, the
/// clients' threads do not exist and their sockets are the parent's, so
/// running their destructors would wait for nothing or shut the parent's
/// connections down.
pub fn forget_all_in_child(slots: &mut Vec<Option<Client>>) {
    let n = slots.len();
    let old = std::mem::replace(slots, vec![None; n]);
    std::mem::forget(old);
}

/// Mounts mount `m`, waiting for its server as `hard`/`soft` say.
fn mount(state: &State, m: usize) -> Res<Client> {
    let mount = state.config.mounts.get(m).ok_or(Errno(libc::EINVAL))?;
    let options = &mount.target.options;
    let patience = options
        .timeo
        .saturating_mul(options.retrans.saturating_add(1));
    let start = Instant::now();
    let mut pause = Duration::from_millis(100);
    loop {
        let result = with_signals_blocked(|| Client::mount(&mount.target));
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
/// yet. A refused export, a bad config or credential is the answer.
fn retryable(e: &Error) -> bool {
    !matches!(
        e,
        Error::Mount { .. } | Error::Auth { .. } | Error::Config(_) | Error::InvalidInput(_)
    )
}

/// Runs `f` with every signal blocked in this thread, so the threads it
/// starts (the client's receiver, maintenance and connect threads inherit
/// the mask) never take a signal meant for the program: PostgreSQL, for
/// one, relies on its own threads receiving them.
pub fn with_signals_blocked<T>(f: impl FnOnce() -> T) -> T {
    // SAFETY: sigset_t values initialised by sigfillset/sigemptyset before
    // use; pthread_sigmask only changes this thread's mask.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::sigemptyset(&mut old);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let v = f();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        v
    }
}
