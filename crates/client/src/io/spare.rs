//! Spare connections: TCP connections to the server that a process keeps
//! ready for the children it forks, which take one instead of connecting,
//! and hand it back, clean, when they exit (NFSv3 only).
//!
//! A PostgreSQL backend is a child of the postmaster that makes a few calls
//! and exits. Connecting cost it a TCP handshake and teardown, and the
//! server an accept, its per-connection set-up and a teardown: about 130
//! µs of the server's CPU and 40 of the child's on loopback, per backend.
//! A socket is shared by every process that holds a descriptor of it, and
//! a child of `fork` holds its parent's: so the parent (the *owner*: the
//! first process of the tree that made a client, whose transport started
//! its threads) connects spares, and each child, at its first call, takes
//! one that is free. At its exit, if every call it made on the spare was
//! answered and nothing is left to read, it marks it free again; the next
//! child takes the same connection. The server sees a few long-lived
//! connections instead of one per backend.
//!
//! The slots live in a shared anonymous mapping made by the owner, which
//! every descendant inherits. A slot is
//!
//! * `EMPTY`: no connection;
//! * `FREE`: a connected, clean connection: its descriptor number in the
//!   owner (and in every child forked since it was made, the same number),
//!   the socket's inode (a child checks that its descriptor of that number
//!   is that socket: a program may have closed it and reused the number),
//!   and its sequence number (a child only takes one made before it was
//!   forked: it holds no descriptor of a later one);
//! * `CLAIMED` by a pid: in use;
//! * `DEAD`: no longer clean (a call unanswered, the connection failed, its
//!   user killed); the owner closes its descriptor.
//!
//! A child changes only the slots it claims (`FREE` → `CLAIMED` by a
//! compare-and-swap, `CLAIMED` by itself → `FREE` or `DEAD`); everything
//! else is the owner's, from its maintenance thread ([`tend`]): it
//! closes dead and broken connections, reclaims slots whose claimer died
//! without handing them back (`kill -9`), and, when a child found none
//! (children record that in the slot area's wants), has one more connected
//! by a thread of its own and [`install`]ed: the maintenance thread, which
//! times the owner's own calls out, never waits for a connect.
//!
//! `DIRECTNFS_FORK_SPARES=off` turns it off (every child connects).

use std::collections::HashMap;
use std::io;
use std::net::TcpStream;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{
    AtomicBool, AtomicI32, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, Ordering,
};
use std::sync::Mutex;

/// Slots in the shared area: spare connections of every client and path of
/// the owner together.
const SLOTS: usize = 32;
/// Most spares kept for one key (one path of one client).
const PER_KEY: usize = 16;
/// Keys whose misses the area can record at once.
const WANTS: usize = 16;

const EMPTY: u64 = 0;
const FREE: u64 = 1;
const DEAD: u64 = 2;
const CLAIMED: u64 = 3;
const MAGIC: u64 = 0x6469_7265_6374_6e66; // "directnf"

/// `CLAIMED` by `pid`.
fn claimed_by(pid: u32) -> u64 {
    (u64::from(pid) << 8) | CLAIMED
}

#[repr(C)]
struct Slot {
    state: AtomicU64,
    key: AtomicU64,
    fd: AtomicI32,
    ino: AtomicU64,
    seq: AtomicU64,
    /// Where the next user's XIDs start (`Engine::reseed`): past every XID
    /// sent on the connection so far, which a server's duplicate request
    /// cache keys on.
    salt: AtomicU32,
}

#[repr(C)]
struct Want {
    key: AtomicU64,
    misses: AtomicU32,
}

/// The shared area (one page).
#[repr(C)]
struct Area {
    magic: AtomicU64,
    owner: AtomicU32,
    /// Sequence numbers given to spares (the last one given).
    seq: AtomicU64,
    slots: [Slot; SLOTS],
    wants: [Want; WANTS],
}

/// This process's view of the area (inherited across `fork`).
static AREA: AtomicPtr<Area> = AtomicPtr::new(std::ptr::null_mut());
/// Spares with a sequence number up to this were made before this process
/// was forked (its descriptors of them are real); the owner's is the
/// largest there is.
static USABLE_UP_TO: AtomicU64 = AtomicU64::new(u64::MAX);

/// Whether spares are used at all (`DIRECTNFS_FORK_SPARES=off`: never).
/// An atomic, not a `OnceLock`: a child forked while another thread was
/// filling a `OnceLock` would wait for that thread for ever; two threads
/// reading the variable at once is harmless.
pub(crate) fn enabled() -> bool {
    const UNKNOWN: u8 = 0;
    const ON: u8 = 1;
    const OFF: u8 = 2;
    static STATE: AtomicU8 = AtomicU8::new(UNKNOWN);
    match STATE.load(Ordering::Relaxed) {
        UNKNOWN => {
            let off = matches!(
                std::env::var("DIRECTNFS_FORK_SPARES").as_deref(),
                Ok("off" | "0" | "no")
            );
            STATE.store(if off { OFF } else { ON }, Ordering::Relaxed);
            !off
        }
        s => s == ON,
    }
}

fn my_pid() -> u32 {
    // SAFETY: getpid takes nothing and cannot fail.
    unsafe { libc::getpid() as u32 }
}

fn area() -> Option<&'static Area> {
    let p = AREA.load(Ordering::Acquire);
    // SAFETY: a non-null pointer is the area mapped below, never unmapped.
    (!p.is_null()).then(|| unsafe { &*p })
}

/// Makes this process the owner of a new area unless it already sees one
/// (its own, or its parent's). Returns whether it is the owner, i.e. may
/// give its transports spares to tend.
pub(crate) fn own() -> bool {
    if !enabled() {
        return false;
    }
    if let Some(a) = area() {
        return a.owner.load(Ordering::Relaxed) == my_pid();
    }
    static MAKING: Mutex<()> = Mutex::new(());
    let Ok(_one) = MAKING.try_lock() else {
        return false;
    };
    if let Some(a) = area() {
        return a.owner.load(Ordering::Relaxed) == my_pid();
    }
    let size = std::mem::size_of::<Area>();
    // SAFETY: a fresh shared anonymous mapping, zeroed by the kernel (all
    // zeros is a valid Area: every slot EMPTY); never unmapped.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return false;
    }
    let a = p.cast::<Area>();
    // SAFETY: just mapped, aligned to a page.
    let area = unsafe { &*a };
    area.owner.store(my_pid(), Ordering::Relaxed);
    area.magic.store(MAGIC, Ordering::Relaxed);
    // SAFETY: registers two plain extern "C" functions.
    unsafe { libc::pthread_atfork(Some(forking), None, Some(forked_child)) };
    AREA.store(a, Ordering::Release);
    true
}

/// The owner has forked: its transports tend spares from now on, every
/// tick (before, an idle one sleeps up to `timeo`).
static FORKED: AtomicBool = AtomicBool::new(false);

/// Wakes one owner transport's maintenance thread; false once the
/// transport is gone.
type Waker = Box<dyn Fn() -> bool + Send>;
static WAKERS: Mutex<Vec<Waker>> = Mutex::new(Vec::new());

/// Registers an owner transport, woken at the owner's first `fork`.
pub(crate) fn on_first_fork(wake: Waker) {
    if let Ok(mut w) = WAKERS.lock() {
        w.push(wake);
    }
}

/// Before every `fork` of the owner (and of its descendants, where it does
/// nothing): the first one wakes the owner's transports, so that the
/// children's misses are seen within a tick.
extern "C" fn forking() {
    if FORKED.swap(true, Ordering::AcqRel) {
        return;
    }
    if let Ok(mut w) = WAKERS.try_lock() {
        w.retain(|wake| wake());
    }
}

/// In the child of every `fork`: it holds descriptors of the spares made
/// so far and none of later ones; the transports holding spares it
/// inherited are its parent's.
extern "C" fn forked_child() {
    if let Some(a) = area() {
        USABLE_UP_TO.fetch_min(a.seq.load(Ordering::Acquire), Ordering::AcqRel);
    }
    if let Ok(mut holders) = HOLDERS.try_lock() {
        holders.clear();
    }
}

/// A spare a child took: its slot, its descriptor (the child's own copy,
/// inherited), and where its XIDs start.
#[derive(Debug)]
pub(crate) struct Taken {
    pub slot: usize,
    pub stream: TcpStream,
    pub salt: u32,
}

/// Takes a free spare of `key` for this process (a child of the owner or
/// of one of its descendants), or records the miss for the owner and
/// returns `None`.
pub(crate) fn claim(key: u64) -> Option<Taken> {
    if key == 0 || !enabled() {
        return None;
    }
    let a = area()?;
    let me = my_pid();
    if a.owner.load(Ordering::Relaxed) == me || a.magic.load(Ordering::Relaxed) != MAGIC {
        return None;
    }
    let usable = USABLE_UP_TO.load(Ordering::Acquire);
    for (i, s) in a.slots.iter().enumerate() {
        if s.state.load(Ordering::Acquire) != FREE || s.key.load(Ordering::Relaxed) != key {
            continue;
        }
        let seq = s.seq.load(Ordering::Relaxed);
        let fd = s.fd.load(Ordering::Relaxed);
        if seq == 0 || seq > usable || !is_socket(fd, s.ino.load(Ordering::Relaxed)) {
            continue;
        }
        if s.state
            .compare_exchange(FREE, claimed_by(me), Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            continue;
        }
        // Checked again now that it is ours: the owner may have replaced
        // it between the first look and the swap.
        if s.seq.load(Ordering::Relaxed) != seq || s.fd.load(Ordering::Relaxed) != fd {
            s.state.store(FREE, Ordering::Release);
            continue;
        }
        // SAFETY: `fd` is this process's descriptor of the spare's socket
        // (checked above), which nothing else in this process uses: ours
        // from now on.
        let stream = unsafe { TcpStream::from_raw_fd(fd) };
        let salt = s.salt.load(Ordering::Relaxed);
        return Some(Taken {
            slot: i,
            stream,
            salt,
        });
    }
    want(a, key);
    None
}

/// Records that a child found no spare of `key`.
fn want(a: &Area, key: u64) {
    for w in &a.wants {
        let k = w.key.load(Ordering::Acquire);
        if k == key
            || (k == 0
                && w.key
                    .compare_exchange(0, key, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok())
        {
            w.misses.fetch_add(1, Ordering::AcqRel);
            return;
        }
    }
}

/// Whether `fd` is a socket with inode `ino`.
fn is_socket(fd: RawFd, ino: u64) -> bool {
    if fd < 0 {
        return false;
    }
    // SAFETY: fstat into a zeroed struct; the result is checked.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::fstat(fd, &mut st) } == 0;
    ok && st.st_mode & libc::S_IFMT == libc::S_IFSOCK && st.st_ino == ino
}

/// Hands back the spares one transport of this process holds (see
/// [`at_exit`]).
type HandBack = Box<dyn Fn() + Send>;
/// The transports of this process holding spares.
static HOLDERS: Mutex<Vec<HandBack>> = Mutex::new(Vec::new());

/// Registers `hand_back`, which hands back the spares of one transport
/// (each with [`give_back`]): run at exit unless the transport stopped
/// first. Once per transport, at its first spare.
pub(crate) fn at_exit(hand_back: HandBack) {
    static REGISTERED: AtomicBool = AtomicBool::new(false);
    if !REGISTERED.swap(true, Ordering::AcqRel) {
        // SAFETY: registers a plain extern "C" function run at exit.
        unsafe { libc::atexit(give_back_all) };
    }
    // Never held across anything that could block: only a fork in the
    // middle of another thread's push leaves it held, and then this
    // process cannot hand its spares back (the owner reclaims them when
    // the process is gone).
    if let Ok(mut holders) = HOLDERS.try_lock() {
        holders.push(hand_back);
    }
}

/// Hands back this process's spare `slot`: free for the next child when
/// clean (`Some` of the XID salt it starts from), else dead (the owner
/// replaces it).
pub(crate) fn give_back(slot: usize, clean: Option<u32>) {
    let Some(a) = area() else { return };
    let Some(s) = a.slots.get(slot) else { return };
    if let Some(salt) = clean {
        s.salt.store(salt, Ordering::Relaxed);
    }
    let _ = s.state.compare_exchange(
        claimed_by(my_pid()),
        if clean.is_some() { FREE } else { DEAD },
        Ordering::AcqRel,
        Ordering::Relaxed,
    );
}

/// At exit: every spare this process still holds, handed back.
extern "C" fn give_back_all() {
    hand_back_all();
}

/// Every spare connection this process took, handed back: free for the
/// next child when clean, else dead. Runs at exit by itself (`atexit`); a
/// process that leaves with `_exit` calls it first, or its spares are
/// replaced by the owner instead of handed on.
pub fn hand_back_all() {
    let holders = match HOLDERS.try_lock() {
        Ok(mut h) => std::mem::take(&mut *h),
        Err(_) => return,
    };
    for hand_back in holders {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(hand_back));
    }
}

/// The owner's descriptors of its spares (slot → descriptor).
static OWNED: Mutex<Option<HashMap<usize, OwnedFd>>> = Mutex::new(None);

/// What [`tend`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tended {
    /// Spares are to be tended every tick (the owner has forked).
    pub active: bool,
    /// Children found no spare of the key since the last tick, and there
    /// is room for one more: connect one and [`install`] it.
    pub wanted: bool,
}

/// The owner's duty for `key` (one path of one of its transports), from
/// its maintenance thread, never blocking: closes dead spares (a
/// `shutdown` first, so that the connection ends for the children that
/// still hold a descriptor of it), reclaims those whose claimer is gone,
/// retires free ones whose connection broke, and says whether children
/// missed. One more spare per tick while they do: children that come one
/// after the other (a miss each until the first spare is there) need
/// one, a burst of them as many as it takes ticks to stop missing.
pub(crate) fn tend(key: u64) -> Tended {
    let idle = Tended {
        active: false,
        wanted: false,
    };
    let Some(a) = area() else { return idle };
    if key == 0 || a.owner.load(Ordering::Relaxed) != my_pid() {
        return idle;
    }
    let Ok(mut owned) = OWNED.try_lock() else {
        return Tended {
            active: true,
            wanted: false,
        };
    };
    let owned = owned.get_or_insert_with(HashMap::new);
    let mut mine = 0;
    for (i, s) in a.slots.iter().enumerate() {
        let state = s.state.load(Ordering::Acquire);
        if state == EMPTY || s.key.load(Ordering::Relaxed) != key {
            continue;
        }
        mine += 1;
        if state == FREE && broken(s.fd.load(Ordering::Relaxed)) {
            let _ = s
                .state
                .compare_exchange(FREE, DEAD, Ordering::AcqRel, Ordering::Relaxed);
        } else if state & 0xff == CLAIMED && !alive((state >> 8) as u32) {
            let _ = s
                .state
                .compare_exchange(state, DEAD, Ordering::AcqRel, Ordering::Relaxed);
        }
        if s.state.load(Ordering::Acquire) == DEAD {
            if let Some(fd) = owned.remove(&i) {
                // SAFETY: shutdown of a socket we hold.
                unsafe { libc::shutdown(fd.as_raw_fd(), libc::SHUT_RDWR) };
            }
            s.seq.store(0, Ordering::Relaxed);
            s.key.store(0, Ordering::Relaxed);
            s.state.store(EMPTY, Ordering::Release);
            mine -= 1;
        }
    }
    let missed = a
        .wants
        .iter()
        .find(|w| w.key.load(Ordering::Acquire) == key)
        .map_or(0, |w| w.misses.swap(0, Ordering::AcqRel));
    Tended {
        active: FORKED.load(Ordering::Acquire) || mine > 0 || missed > 0,
        wanted: missed > 0 && mine < PER_KEY,
    }
}

/// Adds `stream` (connected and probed by the owner) as a free spare of
/// `key`, if a slot is empty; otherwise it is dropped.
pub(crate) fn install(key: u64, stream: TcpStream) {
    let Some(a) = area() else { return };
    if a.owner.load(Ordering::Relaxed) != my_pid() {
        return;
    }
    let Ok(mut owned) = OWNED.lock() else { return };
    let owned = owned.get_or_insert_with(HashMap::new);
    let Some((i, s)) = a
        .slots
        .iter()
        .enumerate()
        .find(|(_, s)| s.state.load(Ordering::Acquire) == EMPTY)
    else {
        return;
    };
    let fd = stream.as_raw_fd();
    // SAFETY: fstat into a zeroed struct of a descriptor we own.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return;
    }
    s.key.store(key, Ordering::Relaxed);
    s.fd.store(fd, Ordering::Relaxed);
    s.ino.store(st.st_ino, Ordering::Relaxed);
    s.salt.store(new_key() as u32, Ordering::Relaxed);
    s.seq
        .store(a.seq.fetch_add(1, Ordering::AcqRel) + 1, Ordering::Relaxed);
    owned.insert(i, stream.into());
    s.state.store(FREE, Ordering::Release);
}

/// A free spare's connection is of no use: the server closed it (or reset
/// it), or sent something nobody asked for.
fn broken(fd: RawFd) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN | libc::POLLRDHUP,
        revents: 0,
    };
    // SAFETY: one pollfd, valid for the call; no wait.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    n != 0
}

/// Whether process `pid` still exists.
fn alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// A key for one path of a new owner transport: random enough that two
/// transports (of this process or another owner) never share one.
pub(crate) fn new_key() -> u64 {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let n = COUNT.fetch_add(1, Ordering::Relaxed);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut x = t ^ (u64::from(my_pid()) << 32) ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    // splitmix64's finaliser.
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (x ^ (x >> 31)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_area_fits_a_page_and_states_encode_their_pid() {
        assert!(std::mem::size_of::<Area>() <= 4096);
        assert_eq!(claimed_by(1234) & 0xff, CLAIMED);
        assert_eq!(claimed_by(1234) >> 8, 1234);
        assert_ne!(new_key(), new_key());
    }
}
