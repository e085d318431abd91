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
//!   call (after a new GETPORT: a restarted server may listen elsewhere). In the
//!   child of `fork` the parent's is forgotten (never closed from the
//!   child) and the child opens its own.
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
//!   waited out (polled like a conflict). Locks held before the restart are
//!   not reclaimed (see [`NlmOwner`] and the book's `docs/book/src/run/served.md`: the server forgets
//!   them and this client does not ask again), which the caller is told
//!   at its next `unlock` only if the server says so; NFSv4.1 mounts do
//!   reclaim.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use directnfs_wire::nlm4::{
    self, netobj, nlm4_cancargs, nlm4_lock, nlm4_lockargs, nlm4_res, nlm4_stats, nlm4_testargs,
    nlm4_testres, nlm4_unlockargs, Nlm4Cancel, Nlm4Lock, Nlm4Test, Nlm4Unlock,
};
use directnfs_wire::{Decode, Encode, Procedure, XdrReader};

use crate::error::{Error, Result};
use crate::io::kept::Kept;
use crate::io::socket::{BufferRequest, ConnectSpec};
use crate::{Client, Handle, LockConflict};

/// Pause after a denied blocking lock: 10 ms doubling to 1 s.
const FIRST_POLL: Duration = Duration::from_millis(10);
const LONGEST_POLL: Duration = Duration::from_secs(1);

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

impl Client {
    /// NFSv3: locks `len` bytes at `offset` (0: to the end of the file) of
    /// the file `fh` on the server's lock manager for `owner`, shared or
    /// `exclusive`; with `wait`, waits (polling) while another owner holds
    /// a conflicting lock, else fails with [`Error::Nlm`] NLM4_DENIED
    /// (EAGAIN). No lock manager on the server: [`Error::NoLockManager`]
    /// (ENOLCK).
    pub fn nlm_lock(
        &self,
        fh: &Handle,
        owner: &NlmOwner,
        (offset, len): (u64, u64),
        exclusive: bool,
        wait: bool,
    ) -> Result<()> {
        let mgr = self.lock_manager("NLM4_LOCK")?;
        let mut pause = FIRST_POLL;
        loop {
            let args = nlm4_lockargs {
                cookie: cookie(),
                block: false,
                exclusive,
                alock: alock(fh, owner, offset, len),
                reclaim: false,
                state: NSM_STATE,
            };
            let res: nlm4_res = mgr.call::<Nlm4Lock>(self, &args)?;
            match res.stat {
                nlm4_stats::NLM4_GRANTED => return Ok(()),
                nlm4_stats::NLM4_DENIED | nlm4_stats::NLM4_DENIED_GRACE_PERIOD if wait => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(LONGEST_POLL);
                }
                nlm4_stats::NLM4_BLOCKED => {
                    // Only a `block = true` request is queued; cancel it
                    // should a server queue this one anyway.
                    let _ = self.nlm_cancel(fh, owner, (offset, len), exclusive);
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
    pub fn nlm_unlock(
        &self,
        fh: &Handle,
        owner: &NlmOwner,
        (offset, len): (u64, u64),
    ) -> Result<()> {
        let mgr = self.lock_manager("NLM4_UNLOCK")?;
        let args = nlm4_unlockargs {
            cookie: cookie(),
            alock: alock(fh, owner, offset, len),
        };
        let res: nlm4_res = mgr.call::<Nlm4Unlock>(self, &args)?;
        match res.stat {
            nlm4_stats::NLM4_GRANTED => Ok(()),
            status => Err(nlm_error("NLM4_UNLOCK", fh, status)),
        }
    }

    /// NFSv3: NLM4_TEST, the lock of another owner that would conflict
    /// with `owner` locking `len` bytes at `offset`, shared or
    /// `exclusive`, or None. The holder's process id (on its host) is in
    /// the conflict's `svid`.
    pub fn nlm_test(
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
        let res: nlm4_testres = mgr.call::<Nlm4Test>(self, &args)?;
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
    pub fn nlm_cancel(
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
        let res: nlm4_res = mgr.call::<Nlm4Cancel>(self, &args)?;
        match res.stat {
            nlm4_stats::NLM4_GRANTED | nlm4_stats::NLM4_DENIED => Ok(()),
            status => Err(nlm_error("NLM4_CANCEL", fh, status)),
        }
    }

    /// The lock manager of this client's server (one per server address
    /// and process).
    fn lock_manager(&self, op: &'static str) -> Result<Arc<Manager>> {
        let o = &self.inner.options;
        if o.nfs_version != crate::config::NfsVersion::V3 {
            return Err(Error::Unsupported(format!(
                "{op}: NLM serves NFSv3 mounts; NFSv4.1 locks are File::lock"
            )));
        }
        let ip = server_ip(&self.inner.name).map_err(|detail| Error::NoLockManager {
            op,
            path: self.inner.name.clone(),
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
}

#[derive(Debug, Default)]
struct Conn {
    kept: Kept,
    /// The port found (or given).
    port: Option<u16>,
}

impl Manager {
    fn new(ip: IpAddr, port: Option<u16>) -> Self {
        Manager {
            ip,
            port,
            pid: std::process::id(),
            conn: Mutex::new(Conn::default()),
        }
    }

    /// Calls `P` on the lock manager, (re)connecting once if the kept
    /// connection broke.
    fn call<P: Procedure>(&self, client: &Client, args: &P::Args) -> Result<P::Res> {
        let o = &client.inner.options;
        let mut body = Vec::with_capacity(256);
        args.encode(&mut body);
        let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let mut last = None;
        for _ in 0..2 {
            if !conn.kept.is_open() {
                let port = match conn.port.or(self.port) {
                    Some(p) => p,
                    None => self.find_port(client, P::NAME)?,
                };
                let spec = self.spec(client, port);
                conn.kept.open(&spec).map_err(|e| Error::NoLockManager {
                    op: P::NAME,
                    path: client.inner.name.clone(),
                    detail: format!("cannot connect to {}: {e}", spec.remote),
                })?;
                conn.port = Some(port);
            }
            match conn.kept.call(
                &client.inner.cred,
                (P::PROG, P::VERS, P::PROC),
                &body,
                o.timeo,
            ) {
                Ok(results) => {
                    let mut r = XdrReader::new(&results);
                    return P::Res::decode(&mut r).map_err(|e| Error::Protocol {
                        op: P::NAME,
                        path: client.inner.name.clone(),
                        detail: e.to_string(),
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                    // The server refused the call (PROG_UNAVAIL: no NLM
                    // behind this port) or garbled the reply.
                    return Err(Error::NoLockManager {
                        op: P::NAME,
                        path: client.inner.name.clone(),
                        detail: e.to_string(),
                    });
                }
                Err(e) => {
                    conn.kept.close();
                    if self.port.is_none() {
                        conn.port = None;
                    }
                    last = Some(e);
                }
            }
        }
        Err(Error::Connect {
            server: format!("{} (the lock manager, {})", self.ip, P::NAME),
            source: last.unwrap_or_else(|| std::io::Error::other("no connection")),
        })
    }

    /// GETPORT for NLM v4 over TCP; any failure means "no lock manager".
    fn find_port(&self, client: &Client, op: &'static str) -> Result<u16> {
        let spec = self.spec(client, 0);
        crate::mount::getport(&spec, &client.inner.cred, nlm4::NLM_PROG, nlm4::NLM4_VERS).map_err(
            |e| Error::NoLockManager {
                op,
                path: client.inner.name.clone(),
                detail: format!("{e} (or set nlm_port=)"),
            },
        )
    }

    fn spec(&self, client: &Client, port: u16) -> ConnectSpec {
        let o = &client.inner.options;
        ConnectSpec {
            remote: SocketAddr::new(self.ip, port),
            local: None,
            timeout: o.timeo,
            dontroute: false,
            resvport: o.resvport,
            buffers: BufferRequest::Auto,
            tls: None,
        }
    }
}

/// True when a blocking lock should wait and ask again after `e` from
/// [`Client::nlm_lock`] without `wait`: another owner holds a
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
pub(crate) fn note_paths(target: &crate::Target) {
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
