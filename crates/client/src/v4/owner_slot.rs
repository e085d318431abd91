//! A host-local place for an NFSv4.1 client owner, taken over by the next
//! client of the same user once its holder is gone.
//!
//! Every client (every process) has a client owner of its own. A server
//! keeps the opens and locks of a client that died (SIGKILL, a crash) until
//! its lease expires, 60 s on NFS-Ganesha: a restarted database waits that
//! long for its own lock. RFC 8881 §18.35.4 gives the way out that a
//! rebooted host uses: the same owner again, with another verifier, and
//! the server drops the old instance's state as soon as the new one has a
//! session. A process's owner can be reused only once the process is
//! surely dead, and two live clients must never share one. So the owner
//! names a slot: a file `RUN_DIR/directnfs-UID/v4-owners/SERVER/N` under
//! an exclusive `flock` for as long as its client lives. The kernel drops the
//! lock when the holder dies, however it dies; the next client of the user
//! that finds the slot unlocked takes it, and with it the dead client's
//! owner. The owner string carries the file's device and inode numbers,
//! which no two live slots share (also across mount namespaces with a
//! private `/tmp`, or two `DIRECTNFS_RUN_DIR`s), and the AUTH_SYS
//! credential, so a client with another identity never takes over a
//! state it could not have owned.
//!
//! A slot's file holds one byte while its client may have state on a
//! server, and none once the client ended it (DESTROY_CLIENTID): a new
//! client takes a slot left with state first (the lowest), else the lowest
//! free one; a mount also takes the other free slots left with state and
//! ends their state (`mount.rs`), so the first client to start after a
//! crash frees every dead client's state on its server. A `fork`ed child
//! only takes its own slot.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Slots looked at before giving up (the client then has an owner of its
/// own, as if no slot existed): far more clients than one user runs.
const MAX_SLOTS: u32 = 4096;

/// A slot held by this client: its file, locked.
#[derive(Debug)]
pub(crate) struct OwnerSlot {
    /// `None` once closed in a `fork`ed child (the lock stays the parent's).
    file: Mutex<Option<File>>,
    number: u32,
    dev: u64,
    ino: u64,
}

/// What [`OwnerSlot::claim`] took: this client's slot, and the other free
/// slots left with state, to be ended (reaped) by the caller.
#[derive(Debug)]
pub(crate) struct Claimed {
    pub(crate) own: OwnerSlot,
    pub(crate) dead: Vec<OwnerSlot>,
}

impl OwnerSlot {
    /// Takes a slot of the calling user for server `server` (slots are per
    /// server: a dead client's state is on the server it used): one left
    /// with state first, else the lowest free. With `reap`, the other free
    /// slots left with state are taken too, for the caller to end their
    /// state; else they stay free. `None` (with a debug log) when the
    /// directory cannot be used; the caller then makes an owner of its own.
    pub(crate) fn claim(server: &str, reap: bool) -> Option<Claimed> {
        // SAFETY: geteuid has no preconditions.
        let uid = unsafe { libc::geteuid() };
        let name: String = server
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let dir = crate::publish::process_dir(uid)
            .join("v4-owners")
            .join(name);
        match crate::fdfloor::making(|| claim_in(&dir, uid, reap)) {
            Ok(slot) => slot,
            Err(e) => {
                tracing::debug!("NFSv4.1 owner slot in {}: {e}", dir.display());
                None
            }
        }
    }

    /// The part of the client owner that names this slot.
    pub(crate) fn id(&self) -> String {
        format!("{:x}:{:x}", self.dev, self.ino)
    }

    /// The slot's number in its directory.
    pub(crate) fn number(&self) -> u32 {
        self.number
    }

    /// The client ended its state on the server: a new client need not
    /// prefer this slot.
    pub(crate) fn mark_clean(&self) {
        if let Some(f) = self.lock().as_ref() {
            let _ = f.set_len(0);
        }
    }

    /// In the child of `fork`: closes the child's copy of the descriptor
    /// (the parent still holds the lock through its own), so the parent's
    /// slot frees when the parent dies, whether or not the child lives on.
    pub(crate) fn close_in_child(&self) {
        // The parent's descriptor and lock are untouched: the open file
        // description stays referenced by the parent.
        self.lock().take();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<File>> {
        // A thread of the parent may have held it at the fork: the child
        // only ever takes it in `close_in_child`, on its one thread.
        self.file.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// [`OwnerSlot::claim`] in `dir`, made private to `uid` (with its parents
/// up to the user's directory) if needed.
fn claim_in(dir: &Path, uid: u32, reap: bool) -> io::Result<Option<Claimed>> {
    let owners = dir.parent().unwrap_or(dir);
    for d in owners.parent().into_iter().chain([owners, dir]) {
        crate::publish::ensure_private_dir(d, uid)?;
    }
    let existing = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .max();
    let end = existing.map_or(0, |n| n.saturating_add(1)).min(MAX_SLOTS);
    // Every free slot, locked: those left with state, and the lowest
    // without (the others are let go at once).
    let mut dead: Vec<(u32, File)> = Vec::new();
    let mut clean: Option<(u32, File)> = None;
    for n in 0..end {
        let Some(file) = try_lock(&slot_path(dir, n))? else {
            continue;
        };
        if file.metadata()?.len() > 0 {
            dead.push((n, file));
        } else if clean.is_none() {
            clean = Some((n, file));
        }
    }
    let mut dead = dead.into_iter();
    let own = match dead.next().or(clean) {
        Some(free) => Some(free),
        // Every slot is live: a new one (unless that makes too many).
        None if end < MAX_SLOTS => try_lock(&slot_path(dir, end))?.map(|f| (end, f)),
        None => None,
    };
    let Some((n, file)) = own else {
        return Ok(None);
    };
    let own = taken(n, file)?;
    let dead = if reap {
        dead.map(|(n, f)| taken(n, f)).collect::<io::Result<_>>()?
    } else {
        Vec::new()
    };
    Ok(Some(Claimed { own, dead }))
}

fn slot_path(dir: &Path, n: u32) -> PathBuf {
    dir.join(n.to_string())
}

/// Opens (creating) slot file `path` and takes its lock without waiting;
/// `None` when another client holds it.
fn try_lock(path: &Path) -> io::Result<Option<File>> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
        .open(path)?;
    // SAFETY: flock on a descriptor we own.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(Some(file));
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(None)
    } else {
        Err(e)
    }
}

/// Slot `n` is this client's: marked as possibly holding state (before any
/// EXCHANGE_ID), its descriptor moved out of the program's way.
fn taken(n: u32, file: File) -> io::Result<OwnerSlot> {
    file.set_len(1)?;
    let meta = file.metadata()?;
    let fd = crate::fdfloor::raise(file.into_raw_fd());
    // SAFETY: `fd` is the descriptor just released from `file` (or its
    // copy above the floor, the original closed); the lock is the open
    // file description's, so it moves with it.
    let file = unsafe { File::from_raw_fd(fd) };
    Ok(OwnerSlot {
        file: Mutex::new(Some(file)),
        number: n,
        dev: meta.dev(),
        ino: meta.ino(),
    })
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::DirBuilderExt;

    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "dnfs-owner-slot-{name}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::DirBuilder::new().mode(0o700).create(&d).unwrap();
        d.join("v4-owners").join("server")
    }

    fn uid() -> u32 {
        // SAFETY: no preconditions.
        unsafe { libc::geteuid() }
    }

    #[test]
    fn live_slots_are_never_shared_and_a_freed_one_is_taken_again() {
        let dir = scratch("live");
        let a = claim_in(&dir, uid(), false).unwrap().unwrap().own;
        let b = claim_in(&dir, uid(), false).unwrap().unwrap().own;
        assert_eq!((a.number(), b.number()), (0, 1));
        assert_ne!(a.id(), b.id());
        let a_id = a.id();
        drop(a); // as at the holder's death: the kernel drops the lock
        let c = claim_in(&dir, uid(), false).unwrap().unwrap().own;
        assert_eq!(c.number(), 0);
        assert_eq!(c.id(), a_id, "the same owner as the dead client's");
        drop(b);
        drop(c);
        let _ = std::fs::remove_dir_all(dir.parent().unwrap().parent().unwrap());
    }

    #[test]
    fn a_slot_left_with_state_is_taken_before_a_lower_clean_one() {
        let dir = scratch("state");
        let a = claim_in(&dir, uid(), false).unwrap().unwrap().own;
        let b = claim_in(&dir, uid(), false).unwrap().unwrap().own;
        a.mark_clean();
        drop(a); // ended its state: slot 0 clean
        let b_id = b.id();
        drop(b); // died with state: slot 1
        let c = claim_in(&dir, uid(), false).unwrap().unwrap().own;
        assert_eq!((c.number(), c.id()), (1, b_id));
        let d = claim_in(&dir, uid(), false).unwrap().unwrap().own;
        assert_eq!(d.number(), 0);
        let _ = std::fs::remove_dir_all(dir.parent().unwrap().parent().unwrap());
    }

    #[test]
    fn a_reaping_claim_takes_every_slot_left_with_state() {
        let dir = scratch("reap");
        let held: Vec<OwnerSlot> = (0..4)
            .map(|_| claim_in(&dir, uid(), false).unwrap().unwrap().own)
            .collect();
        let ids: Vec<String> = held.iter().map(OwnerSlot::id).collect();
        let mut held = held.into_iter();
        let first = held.next().unwrap();
        first.mark_clean();
        drop(first); // slot 0: ended cleanly
        let live = held.next().unwrap(); // slot 1: alive
        drop(held); // slots 2 and 3: died with state
        let c = claim_in(&dir, uid(), true).unwrap().unwrap();
        assert_eq!(c.own.id(), ids[2]);
        let dead: Vec<String> = c.dead.iter().map(OwnerSlot::id).collect();
        assert_eq!(dead, vec![ids[3].clone()]);
        // Without reaping, the dead ones stay free for others.
        drop(c);
        let d = claim_in(&dir, uid(), false).unwrap().unwrap();
        assert!(d.dead.is_empty());
        let e = claim_in(&dir, uid(), false).unwrap().unwrap();
        assert_eq!((d.own.id(), e.own.id()), (ids[2].clone(), ids[3].clone()));
        drop(live);
        let _ = std::fs::remove_dir_all(dir.parent().unwrap().parent().unwrap());
    }

    #[test]
    fn a_directory_others_can_enter_is_refused() {
        let dir = scratch("open");
        std::fs::DirBuilder::new()
            .mode(0o777)
            .recursive(true)
            .create(&dir)
            .unwrap();
        std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o777))
            .unwrap();
        assert!(claim_in(&dir, uid(), false).is_err());
        let _ = std::fs::remove_dir_all(dir.parent().unwrap().parent().unwrap());
    }
}
