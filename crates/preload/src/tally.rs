//! `DIRECTNFS_PRELOAD_STATS=calls`: which libc calls cost which NFS calls.
//! Each served call (by the name of its entry point: `open`, `lseek`,
//! `pwrite64`, ...) is counted with the NFS calls of this process's clients
//! that happened while it ran, and the process says at exit, one line per
//! libc call, what they cost. It snapshots the clients' statistics before
//! and after every served call, so it is for measuring call counts, not
//! time.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::clients;

static ON: AtomicBool = AtomicBool::new(false);

/// Served calls and the NFS calls they made, by entry point.
pub type Table = BTreeMap<&'static str, (u64, BTreeMap<String, u64>)>;
static TABLE: Mutex<Table> = Mutex::new(BTreeMap::new());

/// Turns the tally on (at load, when asked).
pub fn enable() {
    ON.store(true, Ordering::Relaxed);
}

/// Runs `work`, the body of the served call `name`, counting the NFS calls
/// it makes when the tally is on.
#[inline]
pub fn measured<T>(name: &'static str, work: impl FnOnce() -> T) -> T {
    if !ON.load(Ordering::Relaxed) {
        return work();
    }
    let before = clients::calls_by_proc();
    let v = work();
    let after = clients::calls_by_proc();
    let mut table = lock();
    let (n, procs) = table.entry(name).or_default();
    *n += 1;
    for (proc_, count) in after {
        let d = count.saturating_sub(before.get(&proc_).copied().unwrap_or(0));
        if d > 0 {
            *procs.entry(proc_).or_default() += d;
        }
    }
    v
}

/// The report lines: `NAME xCOUNT: PROC=N ...` per libc call served.
pub fn lines() -> Vec<String> {
    if !ON.load(Ordering::Relaxed) {
        return Vec::new();
    }
    let Ok(table) = TABLE.try_lock() else {
        return Vec::new();
    };
    table
        .iter()
        .map(|(name, (n, procs))| {
            let calls: Vec<String> = procs.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("{name} x{n}: {}", calls.join(" "))
        })
        .collect()
}

/// The table, locked (held around `fork`: fork.rs).
pub fn lock() -> MutexGuard<'static, Table> {
    TABLE.lock().unwrap_or_else(|p| p.into_inner())
}

/// In a child after `fork`, with the table held across it: its calls are
/// its own (the parent's are not inherited).
pub fn reset_in_child(table: &mut Table) {
    table.clear();
}
