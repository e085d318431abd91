//! Byte-range locks on NFSv3 through the server's Network Lock Manager
//! (NLM version 4, program 100021: XNFS chapter 10, RFC 1813 appendix II),
//! what the kernel's client (lockd) does for a mount without `nolock`.
//!
//! * **Finding it.** The NLM port comes from `nlm_port=` or the server's
//!   portmapper (GETPORT for 100021 v4 over TCP, as for MOUNT). A server
//!   whose portmapper does not know NLM, or whose NLM port refuses
//!   connections, has no lock manager: the lock call fails with
//!   [`Error::NoLockManager`] (ENOLCK, as the kernel's client), whose
//!   message names `nolock` / `local_lock=`, the options that keep locks on
//!   this host instead. Nothing is remembered: the next lock call asks
//!   again (a server restarted with NLM on serves it).
//! * **One connection per server and process** (`io/kept.rs`), opened at
//!   the first lock call and kept; a broken one is opened again once per
//!   call (after a new GETPORT: a restarted server may listen elsewhere).
//! * **Over the mount's paths** (`Manager::call`): always to the lock
//!   manager's address (the first path's server), since a server keeps a
//!   client's locks per server address, but over the path whose local
//!   address the connection binds. A broken kept connection is opened
//!   again on the same path first; when that fails too (connect, call or
//!   timeout), or the mount's transport found the path dead, the call goes
//!   over the next path, each path at most twice per call. A
//!   dead path is not a restart: the held locks are checked over the next
//!   path as after any broken connection (below) and found ours. In the
//!   child of `fork` the parent's is forgotten (never closed from the
//!   child) and the child opens its own, with a table of held locks of
//!   its own (empty: the parent's locks are the parent's owners').
//! * **Owners.** An NLM lock belongs to (`caller_name`, `svid`, `oh`):
//!   `caller_name` is this host's name (the server's NSM monitors it, and
//!   when the host restarts its statd's SM_NOTIFY frees every lock the
//!   host held), `svid` the process id, `oh` bytes the caller chooses
//!   ([`NlmOwner`]): one per process for POSIX record locks, one per open
//!   file description for `flock` and OFD locks.
//! * **Blocking locks poll**: LOCK with `block = false`, and after
//!   NLM4_DENIED a pause of 10 ms doubling to 1 s, as the NFSv4.1 locks
//!   (`v4/lock.rs`). No GRANTED callback service is run (a queued blocking
//!   request the caller then abandons would stay granted to a caller that
//!   is gone), so a waiter is not woken at the instant of release.
//! * **Grace period**: after a server restart NLM4_DENIED_GRACE_PERIOD is
//!   waited out (polled like a conflict) by a new lock, and by an unlock
//!   of a lock reclaimed in that grace period.
//! * **Reclaim after a server restart.** Every lock the server granted is
//!   kept in a table ([`held`]: file handle, owner, range, mode), updated
//!   by lock and unlock. While the table is not empty a thread of the
//!   process (`dnfs-nlm-reclaim`) calls NLM4_NULL on the kept connection
//!   once a second ([`PROBE`]). A connection that broke (the server's
//!   lock manager died, or the network did) makes the held locks suspect:
//!   before the table is next used (by that thread or by a lock call),
//!   each held range is checked with NLM4_TEST in the name of a probe
//!   owner that holds nothing. The server names our own lock as the
//!   holder: it did not restart, nothing to do (a shared range for which
//!   it names another reader is asked for again, without `reclaim`: a
//!   lock the owner holds is granted again at once).
//!   NLM4_DENIED_GRACE_PERIOD: it restarted and is in its grace period,
//!   so the range is sent again as NLM4_LOCK with `reclaim = true`
//!   (answered NLM4_DENIED_GRACE_PERIOD, asked again up to
//!   [`held::GRACE_RETRIES`] times a second apart). Anything else — the
//!   range is free (the server forgot it and its grace period is over),
//!   another owner holds it, the reclaim is refused — and the lock is
//!   **lost**: one warning (tracing and the alert log) names the file
//!   handle, the owner and the range, and the owner's next lock or unlock
//!   on that file fails with [`Error::LockLost`] (EIO, as the kernel's
//!   client after a lost lock); the unlock acknowledges it. A lost lock is
//!   never taken again without a word, since another host may have
//!   written under it meanwhile. A server that stays out of reach for
//!   longer than its grace period loses the locks so.
//!   Why not SM_NOTIFY: a server's statd calls the statd of each client
//!   host it monitors when the *server host* rebooted; a process has no
//!   statd of its own to receive it, and a lock manager restarted alone
//!   (Ganesha's, here) sends none. Why not the server statd's state
//!   number (SM_STAT): it changes when statd restarts, not when the lock
//!   manager does. The connection break plus NLM4_TEST asks the lock
//!   manager itself whether it still holds each lock.

mod held;

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use directnfs_wire::nlm4::{
    self, netobj, nlm4_cancargs, nlm4_lock, nlm4_lockargs, nlm4_res, nlm4_stats, nlm4_testargs,
    nlm4_testres, nlm4_unlockargs, Nlm4Cancel, Nlm4Lock, Nlm4Null, Nlm4Test, Nlm4Unlock,
};
use directnfs_wire::{Decode, Encode, Procedure, XdrReader};

use crate::config::MountOptions;
use crate::error::{Error, Result};
use crate::handle::Handle;
use crate::io::kept::Kept;
use crate::io::socket::{BufferRequest, ConnectSpec};
use crate::io::tls::TlsSpec;
use crate::remote::Remote;
use crate::v4::LockConflict;

/// Pause after a denied blocking lock: 10 ms doubling to 1 s.
const FIRST_POLL: Duration = Duration::from_millis(10);
const LONGEST_POLL: Duration = Duration::from_secs(1);

/// While locks are held, the lock manager is asked (NLM4_NULL) this
/// often whether the connection still stands: a restarted server is
/// found, and its locks reclaimed, within about this long.
pub const PROBE: Duration = Duration::from_secs(1);

/// The NSM state number sent with every LOCK. The same for every process
/// of the host: Ganesha keys a host's lock state on it, and a changed
/// number means "the host restarted".
const NSM_STATE: i32 = 1;

/// The owner of NLM locks: `svid` (a process id) and `oh` (opaque bytes,
/// at most 1024). Two owners conflict unless both are equal; the host's
/// name (`caller_name`) is added by the client.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NlmOwner {
    /// The process id the server shows as the holder.
    pub svid: i32,
    /// Bytes that tell this owner apart from the host's others.
    pub oh: Vec<u8>,
}

impl NlmOwner {
    /// The owner of this process's POSIX record locks (`fcntl`):
    /// svid = pid, oh = "posix:" host ":" pid.
    pub fn process() -> Self {
        Self::process_of(std::process::id())
    }

    /// The owner of process `pid`'s record locks on this host (to release
    /// those of a process that died holding them).
    pub fn process_of(pid: u32) -> Self {
        NlmOwner {
            svid: pid as i32,
            oh: format!("posix:{}:{pid}", host_name()).into_bytes(),
        }
    }

    /// The owner of one open file description's locks (`flock`, OFD
    /// locks): svid = pid, oh = "ofd:" host ":" pid ":" `id`.
    pub fn description(id: u64) -> Self {
        Self::description_of(std::process::id(), id)
    }

    /// [`description`](Self::description) of process `pid`.
    pub fn description_of(pid: u32, id: u64) -> Self {
        NlmOwner {
            svid: pid as i32,
            oh: format!("ofd:{}:{pid}:{id}", host_name()).into_bytes(),
        }
    }
}

/// The server's lock manager as one mount reaches it (the server's
/// name, the options and the credential of its [`Remote`]): what
/// `Client::nlm_*` (`nlm_calls.rs`) call.
pub(crate) struct Locks<'a>(pub(crate) &'a Remote);

impl Locks<'_> {
    /// NFSv3: locks `len` bytes at `offset` (0: to the end of the file) of
    /// the file `fh` on the server's lock manager for `owner`, shared or
    /// `exclusive`; with `wait`, waits (polling) while another owner holds
    /// a conflicting lock, else fails with [`Error::Nlm`] NLM4_DENIED
    /// (EAGAIN). No lock manager on the server: [`Error::NoLockManager`]
    /// (ENOLCK).
    pub(crate) fn lock(
        &self,
        fh: &Handle,
        owner: &NlmOwner,
        (offset, len): (u64, u64),
        exclusive: bool,
        wait: bool,
    ) -> Result<()> {
        let mgr = self.lock_manager("NLM4_LOCK")?;
        let key: held::Key = (fh.as_bytes().to_vec(), owner.clone());
        let mut pause = FIRST_POLL;
        loop {
            let mut book = mgr.book(self.0);
            if let Some(why) = book.held.lost(&key) {
                return Err(lost_error("NLM4_LOCK", fh, why));
            }
            let args = nlm4_lockargs {
                cookie: cookie(),
                block: false,
                exclusive,
                alock: alock(fh, owner, offset, len),
                reclaim: false,
                state: NSM_STATE,
            };
            let res: nlm4_res = mgr.call::<Nlm4Lock>(self.0, &args)?;
            match res.stat {
                nlm4_stats::NLM4_GRANTED => {
                    book.held
                        .locked(&key, held::Range::of(offset, len, exclusive));
                    mgr.watch(&mut book, self.0);
                    return Ok(());
                }
                nlm4_stats::NLM4_DENIED | nlm4_stats::NLM4_DENIED_GRACE_PERIOD if wait => {
                    drop(book);
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(LONGEST_POLL);
                }
                nlm4_stats::NLM4_BLOCKED => {
                    drop(book);
                    // Only a `block = true` request is queued; cancel it
                    // should a server queue this one anyway.
                    let _ = self.cancel(fh, owner, (offset, len), exclusive);
                    if !wait {
                        return Err(nlm_error("NLM4_LOCK", fh, nlm4_stats::NLM4_DENIED));
                    }
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(LONGEST_POLL);
                }
                status => return Err(nlm_error("NLM4_LOCK", fh, status)),
            }
        }
    }

    /// NFSv3: releases `owner`'s locks on `len` bytes at `offset` (0: to
    /// the end) of `fh` on the server's lock manager. Releasing what is not
    /// held succeeds.
    pub(crate) fn unlock(
        &self,
        fh: &Handle,
        owner: &NlmOwner,
        (offset, len): (u64, u64),
    ) -> Result<()> {
        let mgr = self.lock_manager("NLM4_UNLOCK")?;
        let key: held::Key = (fh.as_bytes().to_vec(), owner.clone());
        let whole = held::Range::of(offset, len, false);
        let mut book = mgr.book(self.0);
        let lost = book.held.acknowledge(&key);
        book.held.unlocked(&key, whole.start, whole.end);
        let mut pause = FIRST_POLL;
        let moves = mgr.moves.load(Ordering::SeqCst);
        loop {
            let args = nlm4_unlockargs {
                cookie: cookie(),
                alock: alock(fh, owner, offset, len),
            };
            let res: nlm4_res = mgr.call::<Nlm4Unlock>(self.0, &args)?;
            match res.stat {
                nlm4_stats::NLM4_GRANTED => break,
                // In a grace period: a restarted server. Not yet checked
                // (the table has no more of this range to reclaim): the
                // server holds none of it. Reclaimed in this grace period:
                // the unlock waits for its end.
                nlm4_stats::NLM4_DENIED_GRACE_PERIOD if mgr.suspect.load(Ordering::SeqCst) => break,
                nlm4_stats::NLM4_DENIED_GRACE_PERIOD => {
                    drop(book);
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(LONGEST_POLL);
                    book = mgr.book(self.0);
                }
                status => return Err(nlm_error("NLM4_UNLOCK", fh, status)),
            }
        }
        if mgr.moves.load(Ordering::SeqCst) != moves {
            // The unlock went over another path than the lock: released
            // only if the server sees the same client from there.
            let args = nlm4_testargs {
                cookie: cookie(),
                exclusive: true,
                alock: alock(fh, owner, offset, len),
            };
            let res: nlm4_testres = mgr.call::<Nlm4Test>(self.0, &args)?;
            if let Some(why) = held::judge_own_test(owner, res.stat, res.holder.as_ref()) {
                let file = hex(fh.as_bytes());
                let who = format!(
                    "{} (svid {})",
                    String::from_utf8_lossy(&owner.oh),
                    owner.svid
                );
                let range = held::Range::of(offset, len, true).to_string();
                tracing::warn!("NLM lock LOST: file handle {file}, owner {who}, {range}: {why}");
                crate::alert::Alerts::new(self.0.name()).nlm_lock_lost(&file, &who, &range, &why);
                return Err(Error::LockLost {
                    op: "NLM4_UNLOCK",
                    path: format!("file handle {file}"),
                    detail: format!("NLM unlock not done: {why}"),
                });
            }
        }
        match lost {
            Some(why) => Err(lost_error("NLM4_UNLOCK", fh, &why)),
            None => Ok(()),
        }
    }

    /// NFSv3: NLM4_TEST, the lock of another owner that would conflict
    /// with `owner` locking `len` bytes at `offset`, shared or
    /// `exclusive`, or None. The holder's process id (on its host) is in
    /// the conflict's `svid`.
    pub(crate) fn test(
        &self,
        fh: &Handle,
        owner: &NlmOwner,
        (offset, len): (u64, u64),
        exclusive: bool,
    ) -> Result<Option<(LockConflict, i32)>> {
        let mgr = self.lock_manager("NLM4_TEST")?;
        let args = nlm4_testargs {
            cookie: cookie(),
            exclusive,
            alock: alock(fh, owner, offset, len),
        };
        let res: nlm4_testres = mgr.call::<Nlm4Test>(self.0, &args)?;
        match (res.stat, res.holder) {
            (nlm4_stats::NLM4_GRANTED, _) => Ok(None),
            (nlm4_stats::NLM4_DENIED, Some(h)) => Ok(Some((
                LockConflict {
                    offset: h.l_offset,
                    len: h.l_len,
                    exclusive: h.exclusive,
                },
                h.svid,
            ))),
            (status, _) => Err(nlm_error("NLM4_TEST", fh, status)),
        }
    }

    /// NFSv3: NLM4_CANCEL of a queued blocking LOCK of `owner`.
    pub(crate) fn cancel(
        &self,
        fh: &Handle,
        owner: &NlmOwner,
        (offset, len): (u64, u64),
        exclusive: bool,
    ) -> Result<()> {
        let mgr = self.lock_manager("NLM4_CANCEL")?;
        let args = nlm4_cancargs {
            cookie: cookie(),
            block: true,
            exclusive,
            alock: alock(fh, owner, offset, len),
        };
        let res: nlm4_res = mgr.call::<Nlm4Cancel>(self.0, &args)?;
        match res.stat {
            nlm4_stats::NLM4_GRANTED | nlm4_stats::NLM4_DENIED => Ok(()),
            status => Err(nlm_error("NLM4_CANCEL", fh, status)),
        }
    }

    /// The lock manager of this client's server (one per server address
    /// and process).
    fn lock_manager(&self, op: &'static str) -> Result<Arc<Manager>> {
        let o = &self.0.options;
        if o.nfs_version != crate::config::NfsVersion::V3 {
            return Err(Error::Unsupported(format!(
                "{op}: NLM serves NFSv3 mounts; NFSv4.1 locks are File::lock"
            )));
        }
        let ip = server_ip(&self.0.name).map_err(|detail| Error::NoLockManager {
            op,
            path: self.0.name.clone(),
            detail,
        })?;
        let key = (ip, o.nlm_port.unwrap_or(0));
        let mut all = managers().lock().unwrap_or_else(|p| p.into_inner());
        let pid = std::process::id();
        let mgr = all
            .entry(key)
            .or_insert_with(|| Arc::new(Manager::new(ip, o.nlm_port)));
        if mgr.pid != pid {
            // The parent's connection, inherited by `fork`: never used
            // (nor closed) from the child.
            let old = std::mem::replace(mgr, Arc::new(Manager::new(ip, o.nlm_port)));
            std::mem::forget(old);
        }
        Ok(mgr.clone())
    }
}

/// What a call to the lock manager needs of the mount that makes it:
/// the server's name, the options and the credential.
trait Side {
    fn name(&self) -> &str;
    fn options(&self) -> &MountOptions;
    fn cred(&self) -> &[u8];
    /// The mount's paths to the server, in order: (server address, local
    /// address to bind). Empty: the lock manager's own address, unbound.
    fn routes(&self) -> Vec<Route>;
    /// The RPC-with-TLS set-up of the mount's NFS connections to `ip`
    /// (`xprtsec=`): NLM's connections there use the same trust and name,
    /// probing for the NLM program (RFC 9289 applies to every program).
    fn tls(&self, ip: IpAddr) -> Option<Arc<TlsSpec>>;
    /// True when the mount's NFS traffic found path `index` dead (every
    /// connection of it failed): lock calls leave it before they wait on
    /// it. False when not known.
    fn route_down(&self, index: usize) -> bool;
}

/// One path to the server's lock manager: its address on that path and
/// the local address to bind.
type Route = (IpAddr, Option<IpAddr>);

impl Side for Remote {
    fn name(&self) -> &str {
        &self.name
    }
    fn options(&self) -> &MountOptions {
        &self.options
    }
    fn cred(&self) -> &[u8] {
        &self.cred
    }
    fn routes(&self) -> Vec<Route> {
        self.transport.routes()
    }
    fn tls(&self, ip: IpAddr) -> Option<Arc<TlsSpec>> {
        self.transport.tls_to(ip)
    }
    fn route_down(&self, index: usize) -> bool {
        self.transport.route_down(index)
    }
}

/// A copy of a mount's [`Side`], kept by the watcher thread (which must
/// outlive the call that started it).
#[derive(Debug, Clone)]
struct Caller {
    name: String,
    options: MountOptions,
    cred: Vec<u8>,
    routes: Vec<Route>,
    tls: Vec<(IpAddr, Option<Arc<TlsSpec>>)>,
}

impl Caller {
    fn of(side: &dyn Side) -> Self {
        let routes = side.routes();
        Caller {
            name: side.name().to_owned(),
            options: side.options().clone(),
            cred: side.cred().to_vec(),
            tls: routes.iter().map(|&(ip, _)| (ip, side.tls(ip))).collect(),
            routes,
        }
    }
}

impl Side for Caller {
    fn name(&self) -> &str {
        &self.name
    }
    fn options(&self) -> &MountOptions {
        &self.options
    }
    fn cred(&self) -> &[u8] {
        &self.cred
    }
    fn routes(&self) -> Vec<Route> {
        self.routes.clone()
    }
    fn tls(&self, ip: IpAddr) -> Option<Arc<TlsSpec>> {
        self.tls
            .iter()
            .find(|(a, _)| *a == ip)
            .and_then(|(_, t)| t.clone())
    }
    /// The watcher has no transport to ask: its calls find a dead path
    /// by their own timeout.
    fn route_down(&self, _index: usize) -> bool {
        false
    }
}

/// The lock managers of a process, by (server address, `nlm_port`).
type Managers = Mutex<HashMap<(IpAddr, u16), Arc<Manager>>>;

/// The lock managers this process talks to.
fn managers() -> &'static Managers {
    static M: OnceLock<Managers> = OnceLock::new();
    M.get_or_init(Default::default)
}

/// One server's lock manager: its port and the connection to it.
#[derive(Debug)]
struct Manager {
    ip: IpAddr,
    port: Option<u16>,
    pid: u32,
    conn: Mutex<Conn>,
    /// The locks held here; taken before `conn`, and held across the
    /// call that changes them (a reclaim never crosses a lock or unlock).
    book: Mutex<Book>,
    /// The connection broke since the held locks were last checked: the
    /// server may have restarted and forgotten them.
    suspect: AtomicBool,
    /// Times the lock calls moved to another path (see `Locks::unlock`).
    moves: AtomicU64,
}

/// The held locks and their watcher.
#[derive(Debug, Default)]
struct Book {
    held: held::Held,
    /// A `dnfs-nlm-reclaim` thread runs (until the table is empty).
    watching: bool,
    /// The mount whose options and credential the watcher's calls use.
    client: Option<Caller>,
}

#[derive(Debug, Default)]
struct Conn {
    kept: Kept,
    /// The path (index in the mount's routes) the connection goes over,
    /// or goes over next.
    route: usize,
    /// The port found on each server address (a restarted server may
    /// listen elsewhere: forgotten when a connection breaks).
    ports: HashMap<IpAddr, u16>,
}

impl Manager {
    fn new(ip: IpAddr, port: Option<u16>) -> Self {
        Manager {
            ip,
            port,
            pid: std::process::id(),
            conn: Mutex::new(Conn::default()),
            book: Mutex::new(Book::default()),
            suspect: AtomicBool::new(false),
            moves: AtomicU64::new(0),
        }
    }

    /// The table of held locks, checked first if the connection broke
    /// since (see the module doc).
    fn book(&self, remote: &dyn Side) -> MutexGuard<'_, Book> {
        let mut book = self.book.lock().unwrap_or_else(|p| p.into_inner());
        if self.suspect.load(Ordering::SeqCst) {
            self.recover(&mut book, remote);
        }
        book
    }

    /// Starts the watcher thread unless it runs.
    fn watch(self: &Arc<Self>, book: &mut Book, remote: &dyn Side) {
        if book.watching {
            return;
        }
        book.watching = true;
        book.client = Some(Caller::of(remote));
        let mgr = Arc::clone(self);
        if let Err(e) = crate::signals::spawn("dnfs-nlm-reclaim", move || mgr.watcher()) {
            book.watching = false;
            book.client = None;
            tracing::warn!(
                "NLM: cannot start the thread that reclaims locks after a server restart: {e}"
            );
        }
    }

    /// The watcher: a NULL call every [`PROBE`] while locks are held; a
    /// broken connection makes the held locks checked (and reclaimed).
    fn watcher(&self) {
        loop {
            std::thread::sleep(PROBE);
            let client = {
                let mut book = self.book.lock().unwrap_or_else(|p| p.into_inner());
                match book.client.clone() {
                    Some(c) if !book.held.is_empty() => c,
                    _ => {
                        book.watching = false;
                        book.client = None;
                        return;
                    }
                }
            };
            if !self.suspect.load(Ordering::SeqCst) {
                // A failure or a reconnect marks the suspect.
                let _ = self.call::<Nlm4Null>(&client, &());
            }
            if self.suspect.load(Ordering::SeqCst) {
                drop(self.book(&client));
            }
        }
    }

    /// Checks every held range after a broken connection and reclaims
    /// what a restarted server forgot (see the module doc). A call that
    /// fails on the way leaves the suspect for the next try.
    fn recover(&self, book: &mut Book, remote: &dyn Side) {
        if !self.suspect.swap(false, Ordering::SeqCst) {
            return;
        }
        let all = book.held.all();
        let mut reclaimed = 0;
        for (key, range) in all {
            match self.recover_one(remote, &key, range) {
                Ok(None) => {}
                Ok(Some(Reclaimed)) => reclaimed += 1,
                Err(RecoverError::Lost(why)) => {
                    let file = hex(&key.0);
                    let owner = String::from_utf8_lossy(&key.1.oh).into_owned();
                    tracing::warn!(
                        "NLM lock lost: file handle {file}, owner {owner} (svid {}), {range}: {why}",
                        key.1.svid
                    );
                    crate::alert::Alerts::new(remote.name()).nlm_lock_lost(
                        &file,
                        &format!("{owner} (svid {})", key.1.svid),
                        &range.to_string(),
                        &why,
                    );
                    book.held.lose(&key, range, &why);
                }
                Err(RecoverError::Call(e)) => {
                    tracing::debug!("NLM: checking held locks stopped ({e}); again later");
                    self.suspect.store(true, Ordering::SeqCst);
                    return;
                }
            }
        }
        if reclaimed > 0 {
            tracing::info!("NLM: {reclaimed} lock(s) reclaimed after a server restart");
            crate::alert::Alerts::new(remote.name()).nlm_locks_reclaimed(reclaimed);
        }
    }

    /// Checks one held range: `None` still held, `Reclaimed` held again
    /// by a reclaim (or a lock sent again), or why it is lost.
    fn recover_one(
        &self,
        remote: &dyn Side,
        (fh, owner): &held::Key,
        range: held::Range,
    ) -> std::result::Result<Option<Reclaimed>, RecoverError> {
        let handle = Handle::from_bytes(fh).map_err(RecoverError::Call)?;
        let (offset, len) = range.nlm4_offset_len();
        let args = nlm4_testargs {
            cookie: cookie(),
            exclusive: true,
            alock: alock(&handle, &probe_owner(), offset, len),
        };
        let res: nlm4_testres = self.call::<Nlm4Test>(remote, &args)?;
        let mut reclaim = match held::judge_test(owner, range, res.stat, res.holder.as_ref()) {
            held::Check::StillHeld => {
                // Still ours from here too? (A path change may have made
                // us another client to a server that keys them by address.)
                let args = nlm4_testargs {
                    cookie: cookie(),
                    exclusive: true,
                    alock: alock(&handle, owner, offset, len),
                };
                let res: nlm4_testres = self.call::<Nlm4Test>(remote, &args)?;
                return match held::judge_own_test(owner, res.stat, res.holder.as_ref()) {
                    None => Ok(None),
                    Some(why) => Err(RecoverError::Lost(why)),
                };
            }
            held::Check::Reclaim => true,
            held::Check::Relock => false,
            held::Check::Lost(why) => return Err(RecoverError::Lost(why)),
        };
        let mut graces = 0;
        loop {
            let args = nlm4_lockargs {
                cookie: cookie(),
                block: false,
                exclusive: range.exclusive,
                alock: alock(&handle, owner, offset, len),
                reclaim,
                state: NSM_STATE,
            };
            let res: nlm4_res = self.call::<Nlm4Lock>(remote, &args)?;
            match held::judge_lock(reclaim, res.stat) {
                held::Next::Held => return Ok(Some(Reclaimed)),
                held::Next::Again if !reclaim => reclaim = true,
                held::Next::Again if graces < held::GRACE_RETRIES => {
                    graces += 1;
                    std::thread::sleep(Duration::from_secs(1));
                }
                held::Next::Again => {
                    return Err(RecoverError::Lost(format!(
                        "its reclaim after a server restart was answered \
                         NLM4_DENIED_GRACE_PERIOD {} times (the grace period is over)",
                        graces + 1
                    )))
                }
                held::Next::Lost(why) => return Err(RecoverError::Lost(why)),
            }
        }
    }

    /// Calls `P` on the lock manager over the mount's paths: on the kept
    /// connection, else a new one over the current path; when a new one
    /// breaks too (connect, send or reply), over the next path. With one
    /// path, a broken connection is opened again once. A call that broke on a
    /// path may have run on the server: every NLM call is safe to send
    /// again (a lock the owner holds is granted again, an unlock of what
    /// is not held succeeds).
    fn call<P: Procedure>(&self, remote: &dyn Side, args: &P::Args) -> Result<P::Res> {
        let o = remote.options();
        let mut body = Vec::with_capacity(256);
        args.encode(&mut body);
        // Always to the lock manager's address: a server keeps a client's
        // locks per server address (Ganesha; Linux's lockd per client
        // address too), so only the route changes, by the local address
        // each path binds.
        let routes: Vec<Route> = match remote.routes() {
            r if r.is_empty() => vec![(self.ip, None)],
            r => r.into_iter().map(|(_, local)| (self.ip, local)).collect(),
        };
        let n = routes.len();
        let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        if conn.route >= n {
            conn.route = 0;
        }
        // The mount's NFS traffic found this path dead, another is not:
        // leave it before waiting on it.
        if n > 1 && remote.route_down(conn.route) {
            if let Some(next) = (1..n)
                .map(|i| (conn.route + i) % n)
                .find(|&i| !remote.route_down(i))
            {
                tracing::info!(
                    "NLM: path {} is down, lock calls go over path {}",
                    conn.route + 1,
                    next + 1
                );
                conn.kept.close();
                self.suspect.store(true, Ordering::SeqCst);
                conn.route = next;
                self.moves.fetch_add(1, Ordering::SeqCst);
            }
        }
        // Each path: its kept connection, then a new one (a server that
        // restarted, a connection ended: the path itself may be fine, and
        // lock calls stay where the locks were taken while it is).
        let tries = 2 * n;
        let mut last: Option<Error> = None;
        for attempt in 0..tries {
            let route = routes[conn.route];
            let mut fresh = false;
            if !conn.kept.is_open() {
                fresh = true;
                match self.open(&mut conn, remote, route, P::NAME) {
                    Ok(()) => {}
                    // Another path may reach it.
                    Err(e) if n > 1 && attempt + 1 < tries => {
                        tracing::debug!("NLM: {e}; trying the next path");
                        last = Some(e);
                        conn.route = (conn.route + 1) % n;
                        self.moves.fetch_add(1, Ordering::SeqCst);
                        continue;
                    }
                    Err(e) => return Err(e),
                }
            }
            match conn
                .kept
                .call(remote.cred(), (P::PROG, P::VERS, P::PROC), &body, o.timeo)
            {
                Ok(results) => {
                    let mut r = XdrReader::new(&results);
                    return P::Res::decode(&mut r).map_err(|e| Error::Protocol {
                        op: P::NAME,
                        path: remote.name().to_owned(),
                        detail: e.to_string(),
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                    // The server refused the call (PROG_UNAVAIL: no NLM
                    // behind this port) or garbled the reply; the
                    // connection is closed, so what it held is checked.
                    self.suspect.store(true, Ordering::SeqCst);
                    return Err(Error::NoLockManager {
                        op: P::NAME,
                        path: remote.name().to_owned(),
                        detail: e.to_string(),
                    });
                }
                Err(e) => {
                    // The connection broke (Kept closed it): the server
                    // may have restarted, or this path died.
                    conn.kept.close();
                    self.suspect.store(true, Ordering::SeqCst);
                    conn.ports.remove(&route.0);
                    if n > 1 && fresh {
                        tracing::info!(
                            "NLM: {} over path {} failed ({e}); next path",
                            P::NAME,
                            conn.route + 1
                        );
                        conn.route = (conn.route + 1) % n;
                        self.moves.fetch_add(1, Ordering::SeqCst);
                    }
                    last = Some(Error::Connect {
                        server: format!("{} (the lock manager, {})", route.0, P::NAME),
                        source: e,
                    });
                }
            }
        }
        Err(last.unwrap_or_else(|| Error::Connect {
            server: format!("{} (the lock manager, {})", self.ip, P::NAME),
            source: std::io::Error::other("no connection"),
        }))
    }

    /// Opens the kept connection over `route`, after a GETPORT on its
    /// address unless the port is given or known.
    fn open(
        &self,
        conn: &mut Conn,
        remote: &dyn Side,
        (ip, local): Route,
        op: &'static str,
    ) -> Result<()> {
        let port = match self.port.or_else(|| conn.ports.get(&ip).copied()) {
            Some(p) => p,
            None => self.find_port(remote, (ip, local), op)?,
        };
        let spec = self.spec(remote, (ip, local), port);
        conn.kept.open(&spec).map_err(|e| Error::NoLockManager {
            op,
            path: remote.name().to_owned(),
            detail: format!("cannot connect to {}: {e}", spec.remote),
        })?;
        conn.ports.insert(ip, port);
        Ok(())
    }

    /// GETPORT for NLM v4 over TCP; any failure means "no lock manager".
    fn find_port(&self, remote: &dyn Side, route: Route, op: &'static str) -> Result<u16> {
        let spec = self.spec(remote, route, 0);
        crate::mount::getport(&spec, remote.cred(), nlm4::NLM_PROG, nlm4::NLM4_VERS).map_err(|e| {
            Error::NoLockManager {
                op,
                path: remote.name().to_owned(),
                detail: format!("{e} (or set nlm_port=)"),
            }
        })
    }

    fn spec(&self, remote: &dyn Side, (ip, local): Route, port: u16) -> ConnectSpec {
        let o = remote.options();
        ConnectSpec {
            remote: SocketAddr::new(ip, port),
            local,
            timeout: o.timeo,
            dontroute: false,
            resvport: o.resvport,
            buffers: BufferRequest::Auto,
            // With `xprtsec=`, NLM in TLS too (and its GETPORT: `getport`
            // probes for the portmapper), as the mount's NFS connections
            // to the same address.
            tls: remote
                .tls(ip)
                .map(|t| Arc::new(t.for_program(nlm4::NLM_PROG, nlm4::NLM4_VERS))),
        }
    }
}

/// True when a blocking lock should wait and ask again after `e` from
/// [`Client::nlm_lock`](crate::Client::nlm_lock) without `wait`: another owner holds a
/// conflicting lock (NLM4_DENIED), or the server is in its grace period
/// after a restart (NLM4_DENIED_GRACE_PERIOD).
pub fn lock_should_wait(e: &Error) -> bool {
    matches!(
        e,
        Error::Nlm {
            status: nlm4_stats::NLM4_DENIED | nlm4_stats::NLM4_DENIED_GRACE_PERIOD,
            ..
        }
    )
}

/// A held range came back checked: reclaimed (or locked again).
struct Reclaimed;

/// Why a held range's check ended: lost, or a call failed (try again).
enum RecoverError {
    Lost(String),
    Call(Error),
}

impl From<Error> for RecoverError {
    fn from(e: Error) -> Self {
        RecoverError::Call(e)
    }
}

/// The owner in whose name held ranges are tested: it holds nothing, so
/// the server names whoever holds the range (us, we hope).
fn probe_owner() -> NlmOwner {
    let pid = std::process::id();
    NlmOwner {
        svid: pid as i32,
        oh: format!("probe:{}:{pid}", host_name()).into_bytes(),
    }
}

/// The owner's lock on `fh` was lost ([`Manager::recover`]).
fn lost_error(op: &'static str, fh: &Handle, why: &str) -> Error {
    Error::LockLost {
        op,
        path: format!("file handle {}", hex(fh.as_bytes())),
        detail: format!("NLM lock not held after a server restart: {why}"),
    }
}

fn nlm_error(op: &'static str, fh: &Handle, status: nlm4_stats) -> Error {
    Error::Nlm {
        op,
        path: format!("file handle {}", hex(fh.as_bytes())),
        status,
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn alock(fh: &Handle, owner: &NlmOwner, offset: u64, len: u64) -> nlm4_lock {
    nlm4_lock {
        caller_name: host_name().as_bytes().into(),
        fh: netobj(fh.as_bytes().to_vec()),
        oh: netobj(owner.oh.clone()),
        svid: owner.svid,
        l_offset: offset,
        l_len: len,
    }
}

/// The cookie is only echoed; replies are matched by XID.
fn cookie() -> netobj {
    netobj(std::process::id().to_be_bytes().to_vec())
}

/// This host's name (`uname -n`), the NLM `caller_name` the server's NSM
/// monitors: what the kernel's lockd sends.
pub(crate) fn host_name() -> &'static str {
    static NAME: OnceLock<String> = OnceLock::new();
    NAME.get_or_init(|| {
        let mut buf = [0u8; 256];
        // SAFETY: gethostname writes at most `buf.len()` bytes into `buf`.
        let r = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        match r {
            0 if end > 0 => String::from_utf8_lossy(&buf[..end]).into_owned(),
            _ => "localhost".to_owned(),
        }
    })
}

/// The first path's server of each mounted target, by the target's name
/// (a dnfstab `server:` name is a label, not a host name): where its lock
/// manager is asked for.
fn lock_hosts() -> &'static Mutex<HashMap<String, String>> {
    static H: OnceLock<Mutex<HashMap<String, String>>> = OnceLock::new();
    H.get_or_init(Default::default)
}

/// Called at mount: the target's first path is where its lock manager is.
pub(crate) fn note_paths(target: &crate::config::target::Target) {
    if let Some(p) = target.paths.first() {
        lock_hosts()
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(target.name.clone(), p.server.clone());
    }
}

/// The address of the lock manager of the target named `name`: its first
/// path's server, or the name itself (the URL host).
fn server_ip(name: &str) -> std::result::Result<IpAddr, String> {
    use std::net::ToSocketAddrs;
    let noted = lock_hosts()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(name)
        .cloned();
    let name = noted.as_deref().unwrap_or(name);
    let host = name.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = host.parse() {
        return Ok(ip);
    }
    (host, 0)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {host}: {e}"))?
        .next()
        .map(|a| a.ip())
        .ok_or_else(|| format!("{host} has no address"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_and_description_owners_differ() {
        let p = NlmOwner::process();
        let d = NlmOwner::description(7);
        assert_eq!(p.svid, d.svid);
        assert_ne!(p.oh, d.oh);
        assert_ne!(d.oh, NlmOwner::description(8).oh);
        assert!(p.oh.len() <= nlm4::MAXNETOBJ_SZ);
    }

    #[test]
    fn nlm_statuses_map_to_the_kernels_errnos() {
        let e = |s| nlm_error("NLM4_LOCK", &Handle::from_bytes(&[1]).unwrap(), s).errno();
        assert_eq!(e(nlm4_stats::NLM4_DENIED), libc::EAGAIN);
        assert_eq!(e(nlm4_stats::NLM4_DEADLCK), libc::EDEADLK);
        assert_eq!(e(nlm4_stats::NLM4_DENIED_NOLOCKS), libc::ENOLCK);
        assert_eq!(e(nlm4_stats::NLM4_STALE_FH), libc::ESTALE);
    }
}
