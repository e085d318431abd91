//! Names for `open` and `access` without a LOOKUP each time, coherent among
//! the processes of one user on this host (all of PostgreSQL's).
//!
//! A new PostgreSQL backend opens about nine files another process of the
//! host opened just before (the relation map, the relation cache's init
//! files, `PG_VERSION`, the relations it plans), each a LOOKUP of the last
//! name. The board of names (`names.v1.UID` in the shadow directory,
//! mapped by every process of the user, see board.rs) keeps, per path, the
//! handle, type, mode and owners a LOOKUP returned, with one counter that
//! every process moves on after any call that changes names or
//! permissions: creating, removing, renaming or linking a name, making or
//! removing a directory or a symbolic link, `chmod`, `chown`.
//!
//! The rules are those of the size board (sizes.rs): the counter is read
//! *before* the LOOKUP and kept with its answer; changes move it *after*
//! the server answered, before the libc call returns; an entry serves
//! only while the counter has not moved since, and for at most
//! [`board::ttl`] (names changed by other hosts, other users, or programs
//! not using the library, are seen after that: until then an `open` can
//! give the old file, whose I/O then fails with `ESTALE` if it was
//! removed).
//!
//! Only what `open` and `access` need is kept: an entry's attributes have
//! no size or times (an `open` with `O_TRUNC` or `O_EXCL`, `stat` and
//! every other call still ask the server), negative answers (`ENOENT`) are
//! not kept, nor symbolic links or paths reached through one.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::UNIX_EPOCH;

use dnfs::{FileType, Handle, Metadata};

use crate::board::{self, monotonic_ns, young, Cell};
use crate::fail::Res;
use crate::paths::NfsPath;
use crate::resolve::{self, Found, Resolved};
use crate::state::State;

/// Slots on the board (256 bytes each: a 2 MiB file, of which tmpfs only
/// keeps the pages touched), after a first page holding the counter.
const SLOTS: usize = 1 << 13;
const HEADER: usize = 4096;
/// The board's file name in the shadow directory (versioned).
pub const BOARD_FILE: &str = "names.v1";
/// Words of the path key: its length and 16 words (the mount's key and at
/// most 120 bytes of path; longer paths are not kept).
const KEY: usize = 17;
/// Words of a handle: its length and 8 words (64 bytes).
const HANDLE: usize = 9;
/// Words of an entry: when asked, the counter then, the key, the handle,
/// and three words of attributes.
const WORDS: usize = 2 + KEY + HANDLE + 3;

#[repr(C)]
struct Slot {
    entry: Cell<WORDS>,
}

struct Board {
    /// Moved on after every change of names or permissions by a process
    /// of the user.
    counter: &'static AtomicU64,
    slots: &'static [Slot],
}

static BOARD: OnceLock<Option<Board>> = OnceLock::new();

fn board(state: &State) -> Option<&'static Board> {
    BOARD
        .get_or_init(|| {
            let len = HEADER + SLOTS * std::mem::size_of::<Slot>();
            let p = board::map(state, BOARD_FILE, len)?;
            // SAFETY: page-aligned mapping of `len` bytes, never unmapped:
            // an AtomicU64 at its start and `SLOTS` slots after the first
            // page, all AtomicU64s (zero is valid), every access atomic.
            unsafe {
                Some(Board {
                    counter: &*p.cast::<AtomicU64>(),
                    slots: std::slice::from_raw_parts(p.add(HEADER).cast::<Slot>(), SLOTS),
                })
            }
        })
        .as_ref()
}

/// The key words of a path: the mount's key, then the path in the export.
fn key(state: &State, path: &NfsPath) -> Option<[u64; KEY]> {
    let mount = state.config.mounts.get(path.mount)?;
    let mut bytes = Vec::with_capacity(8 + path.rest.len());
    bytes.extend_from_slice(&mount.key.to_le_bytes());
    bytes.extend_from_slice(path.rest.as_bytes());
    board::words::<KEY>(&bytes)
}

fn slot<'a>(board: &'a Board, key: &[u64; KEY]) -> &'a Slot {
    let mut h = DefaultHasher::new();
    key.hash(&mut h);
    &board.slots[(h.finish() as usize) % board.slots.len()]
}

fn type_code(t: FileType) -> Option<u64> {
    match t {
        FileType::File => Some(1),
        FileType::Dir => Some(2),
        FileType::Other => Some(3),
        // Links are followed or not by the caller: never kept.
        _ => None,
    }
}

fn type_of(code: u64) -> Option<FileType> {
    match code {
        1 => Some(FileType::File),
        2 => Some(FileType::Dir),
        3 => Some(FileType::Other),
        _ => None,
    }
}

/// What a path names, for `open` (without `O_TRUNC` or `O_EXCL`) and
/// `access`: from the board while no process of the user changed names or
/// permissions since another asked the server, else [`resolve::resolve`]
/// (whose answer is then put on the board).
pub fn resolve_for_open(state: &State, path: NfsPath, follow: bool) -> Res<Resolved> {
    let Some(board) = board(state).filter(|_| board::usable(state)) else {
        return resolve::resolve(state, path, follow);
    };
    let Some(key) = key(state, &path).filter(|_| !path.trailing_slash) else {
        return resolve::resolve(state, path, follow);
    };
    let slot = slot(board, &key);
    let now = monotonic_ns();
    if let Some(found) = kept(board, slot, &key, &path, now) {
        return Ok(Resolved::Nfs(found));
    }
    let counter = board.counter.load(Ordering::Acquire);
    let resolved = resolve::resolve(state, path.clone(), follow)?;
    if let Resolved::Nfs(f) = &resolved {
        let same_path = f.path.mount == path.mount && f.path.rest == path.rest;
        if same_path && board.counter.load(Ordering::Acquire) == counter {
            keep(slot, &key, f, counter, now);
        }
    }
    Ok(resolved)
}

/// The board's counter now (`None` without a board): it moves after every
/// change of names by a process of the user on this host.
pub fn generation(state: &State) -> Option<u64> {
    board(state)
        .filter(|_| board::usable(state))
        .map(|b| b.counter.load(Ordering::Acquire))
}

/// Says on the board that names or permissions may have changed (after
/// the server answered the call that changed them).
pub fn changed(state: &State) {
    if let Some(board) = board(state) {
        board.counter.fetch_add(1, Ordering::AcqRel);
    }
}

fn keep(slot: &Slot, key: &[u64; KEY], f: &Found, counter: u64, asked_at: u64) {
    let Some(code) = type_code(f.meta.file_type) else {
        return;
    };
    let Some(handle) = board::words::<HANDLE>(f.handle.as_bytes()) else {
        return;
    };
    let mut w = [0u64; WORDS];
    w[0] = asked_at;
    w[1] = counter;
    w[2..2 + KEY].copy_from_slice(key);
    w[2 + KEY..2 + KEY + HANDLE].copy_from_slice(&handle);
    let a = 2 + KEY + HANDLE;
    w[a] = code | u64::from(f.meta.mode) << 8 | u64::from(f.meta.nlink) << 32;
    w[a + 1] = u64::from(f.meta.uid) | u64::from(f.meta.gid) << 32;
    w[a + 2] = f.meta.fileid;
    slot.entry.write(&w);
}

fn kept(board: &Board, slot: &Slot, key: &[u64; KEY], path: &NfsPath, now: u64) -> Option<Found> {
    let w = slot.entry.read()?;
    if w[2..2 + KEY] != key[..] || !young(w[0], now) {
        return None;
    }
    if board.counter.load(Ordering::Acquire) != w[1] {
        return None;
    }
    let h = &w[2 + KEY..2 + KEY + HANDLE];
    let len = usize::try_from(h[0]).ok().filter(|&n| n <= 64)?;
    let bytes: Vec<u8> = h[1..].iter().flat_map(|x| x.to_le_bytes()).collect();
    let handle = Handle::from_bytes(&bytes[..len]).ok()?;
    let a = 2 + KEY + HANDLE;
    let meta = Metadata {
        file_type: type_of(w[a] & 0xff)?,
        // Not kept: no caller of this module reads it.
        size: 0,
        mode: ((w[a] >> 8) & 0o7777) as u32,
        uid: w[a + 1] as u32,
        gid: (w[a + 1] >> 32) as u32,
        nlink: (w[a] >> 32) as u32,
        used: 0,
        fileid: w[a + 2],
        atime: UNIX_EPOCH,
        mtime: UNIX_EPOCH,
        ctime: UNIX_EPOCH,
    };
    Some(Found {
        path: path.clone(),
        handle,
        meta,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board() -> Board {
        let counter: &'static AtomicU64 = Box::leak(Box::new(AtomicU64::new(0)));
        // SAFETY: atomics, for which zero is valid.
        let slots: Vec<Slot> = (0..4).map(|_| unsafe { std::mem::zeroed() }).collect();
        Board {
            counter,
            slots: Box::leak(slots.into_boxed_slice()),
        }
    }

    fn found(path: &NfsPath) -> Found {
        Found {
            path: path.clone(),
            handle: Handle::from_bytes(&[9; 40]).unwrap(),
            meta: Metadata {
                file_type: FileType::File,
                size: 1234,
                mode: 0o640,
                uid: 105,
                gid: 110,
                nlink: 1,
                used: 4096,
                fileid: 77,
                atime: UNIX_EPOCH,
                mtime: UNIX_EPOCH,
                ctime: UNIX_EPOCH,
            },
        }
    }

    fn path(rest: &str) -> NfsPath {
        NfsPath {
            mount: 0,
            host: format!("/m{rest}"),
            rest: rest.to_string(),
            trailing_slash: false,
            last: crate::paths::Last::Name,
            via: Vec::new(),
        }
    }

    fn key_of(rest: &str) -> [u64; KEY] {
        board::words::<KEY>(&[&7u64.to_le_bytes()[..], rest.as_bytes()].concat()).unwrap()
    }

    #[test]
    fn a_kept_name_serves_until_any_name_changes() {
        let b = board();
        let p = path("/pg/data/global/pg_filenode.map");
        let k = key_of(&p.rest);
        let s = slot(&b, &k);
        let now = monotonic_ns();
        assert!(kept(&b, s, &k, &p, now).is_none(), "nothing kept yet");
        keep(s, &k, &found(&p), 0, now);
        let f = kept(&b, s, &k, &p, now).unwrap();
        assert_eq!(f.handle, found(&p).handle);
        assert_eq!(
            (
                f.meta.file_type,
                f.meta.mode,
                f.meta.uid,
                f.meta.gid,
                f.meta.fileid
            ),
            (FileType::File, 0o640, 105, 110, 77)
        );
        let other = key_of("/pg/data/global/pg_filenode.maq");
        assert!(kept(&b, s, &other, &p, now).is_none(), "another path");
        b.counter.fetch_add(1, Ordering::AcqRel);
        assert!(kept(&b, s, &k, &p, now).is_none(), "a name changed");
    }

    #[test]
    fn links_are_never_kept_and_entries_expire() {
        let b = board();
        let p = path("/link");
        let k = key_of(&p.rest);
        let s = slot(&b, &k);
        let mut l = found(&p);
        l.meta.file_type = FileType::Symlink;
        let now = monotonic_ns();
        keep(s, &k, &l, 0, now);
        assert!(kept(&b, s, &k, &p, now).is_none());
        keep(s, &k, &found(&p), 0, now);
        let later = now + board::ttl().as_nanos() as u64;
        assert!(kept(&b, s, &k, &p, later).is_none());
    }
}
