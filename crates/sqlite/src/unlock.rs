//! Breaking a stuck NFSv3 lock by hand: the lock file of a database whose
//! holder ran on a host that is gone for good (`dnfs sqlite-unlock`). The
//! VFS breaks the lock of a dead process of its own host by itself; one
//! of another host it cannot judge, and waits for it.

use dnfs::Client;

use crate::dotlock::{self, ByHand, Names};

/// Removes the lock file of the database at `db_path` (a path inside the
/// export `client` mounted) if its owner is known to be gone: a process
/// of this host that no longer runs, or a process of the host `host_gone`
/// (which the caller says is down for good). Returns what was done, as a
/// sentence naming the lock file and its owner; an error when the lock is
/// left in place (its owner lives or may live, a newer directnfs wrote
/// it, ...) or cannot be read.
pub fn unlock(client: &Client, db_path: &str, host_gone: Option<&str>) -> Result<String, String> {
    let names = Names::of_db(db_path);
    match dotlock::break_by_hand(client, &names, host_gone) {
        Ok(ByHand::NotLocked) => Ok(format!(
            "{db_path} is not locked (no lock file {})",
            names.lock
        )),
        Ok(ByHand::Removed(owner)) => Ok(format!("removed lock file {} of {owner}", names.lock)),
        Ok(ByHand::Refused(why)) => Err(why),
        Err(e) => Err(format!("{}: cannot read the lock file: {e}", names.lock)),
    }
}
