//! Session trunking (RFC 8881 §2.10.5): the paths of a server become
//! connections of one session, once each path proved it reaches the same
//! server.
//!
//! * **The check.** The first connection of each path sends EXCHANGE_ID
//!   (the client's one owner, so the same server gives back the same
//!   client ID) before it carries anything, and its `eir_server_owner`
//!   and `eir_server_scope` are compared with those of the session's
//!   path — the first path (in the dnfstab's order) that answered at
//!   mount. Same `so_major_id`, `so_minor_id` and scope: the path joins
//!   the session. Anything else is refused: another server (major id or
//!   scope differ), or the same server allowing only client-ID trunking
//!   (minor id differs: a session of its own would be needed). A refused
//!   path is never used; the error names it and both owners
//!   ([`ServerOwner`], `dnfs check`). At mount the paths connect in
//!   parallel, so the comparison waits for all of them
//!   ([`Trunk::settle`]); a path connecting later is judged at once.
//! * **The binding.** Every connection is bound to the current session
//!   with BIND_CONN_TO_SESSION (`CDFC4_FORE`: the session has no back
//!   channel; not RDMA) before any SEQUENCE goes on it: a connection made
//!   while a session exists (a reconnect, a path coming up) is bound on
//!   connect, waiting for the answer; a live connection (made before the
//!   session, or bound to a session since replaced) gets the call written
//!   first, before the batch that follows it, by the transport
//!   (`io/hook.rs`), which checks one generation number per
//!   write. A new session (recovery) bumps the generation, so every
//!   connection re-binds before its next request. A bind answered
//!   NFS4ERR_BADSESSION needs nothing of its own: the requests behind it
//!   carry the same session, meet the same status and recover the
//!   session (`session.rs`), and the next write binds to the new one.

use std::fmt;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use directnfs_engine::inflight::SLOT_BITS;
use directnfs_wire::nfs4::{
    channel_dir_from_client4, client_owner4, nfs_argop4, nfs_opnum4, nfs_resop4, nfsstat4,
    owner_id4, sessionid4, state_protect4_a, verifier4, BIND_CONN_TO_SESSION4args, COMPOUND4args,
    COMPOUND4res, EXCHANGE_ID4args, Nfs4Res, EXCHGID4_FLAG_USE_NON_PNFS, NFS4_PROGRAM,
    NFSPROC4_COMPOUND, NFS_V4,
};
use directnfs_wire::rpc::auth::AuthFlavor;
use directnfs_wire::rpc::record::fragment_header;
use directnfs_wire::rpc::ReplyHeader;
use directnfs_wire::rpc::{AuthSys, OpaqueAuth};
use directnfs_wire::xdr::XdrWrite;
use directnfs_wire::{Decode, Encode, XdrReader};

use super::owner_slot::OwnerSlot;
use crate::io::transport::{CallOn, ConnectHook, Refusal, HOOK_SLOT};

/// XID salts of the calls on a new connection (its NULL probe has 0).
const SALT_EXCHANGE_ID: u32 = 1;
const SALT_BIND: u32 = 2;

/// Distinguishes the client owners of several clients of one process.
static NEXT_OWNER: AtomicU64 = AtomicU64::new(0);

/// What EXCHANGE_ID says about the server behind a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerId {
    major: Vec<u8>,
    minor: u64,
    scope: Vec<u8>,
}

impl fmt::Display for ServerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "server owner {} (minor {}), scope {}",
            printable(&self.major),
            self.minor,
            printable(&self.scope)
        )
    }
}

/// Opaque bytes for a person: quoted text (NULs escaped as `\0`) when
/// every byte is printable ASCII or NUL, else hex.
pub fn printable(b: &[u8]) -> String {
    if b.iter().any(|&c| c != 0) && b.iter().all(|&c| c == 0 || (0x20..0x7f).contains(&c)) {
        format!("{:?}", String::from_utf8_lossy(b))
    } else {
        let hex: String = b.iter().map(|c| format!("{c:02x}")).collect();
        format!("0x{hex}")
    }
}

/// What a path's first connection found.
#[derive(Debug, Clone)]
enum Seen {
    Unchecked,
    Same(ServerId),
    Refused { server: ServerId, why: String },
}

/// The server owner a path reported, as `Client::server_owners` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerOwner {
    /// Index of the path (dnfstab order).
    pub path: usize,
    /// `so_major_id`: equal for paths to the same server.
    pub major_id: Vec<u8>,
    /// `so_minor_id`: equal for paths that may share a session.
    pub minor_id: u64,
    /// `eir_server_scope`.
    pub scope: Vec<u8>,
    /// Why the path is not used (another server), or `None`.
    pub refused: Option<String>,
}

/// The paths' verdicts and the session connections bind to.
#[derive(Debug)]
struct Paths {
    seen: Vec<Seen>,
    /// The path whose server holds the session, once settled.
    reference: Option<usize>,
}

/// See the module doc. One per client; the transport holds it as its
/// connection hook, the session tells it each new session id.
#[derive(Debug)]
pub(crate) struct Trunk {
    owner: client_owner4,
    /// The host-local slot the owner names (owner_slot.rs), if one could
    /// be taken; held (locked) for as long as the client lives.
    slot: Option<OwnerSlot>,
    /// The server the slots are kept for.
    server: String,
    cred: Vec<u8>,
    /// Path labels for the errors (`local->server`).
    labels: Vec<String>,
    paths: Mutex<Paths>,
    /// One per path: held while that path's EXCHANGE_ID is out, so that
    /// its other connections wait for the verdict instead of asking too.
    checking: Vec<Mutex<()>>,
    /// The session to bind to and its generation (0: none yet); the
    /// generation is mirrored in `generation` for the per-write check.
    session: Mutex<(sessionid4, u64)>,
    generation: AtomicU64,
    next_xid: AtomicU32,
    binds_sent: AtomicU64,
    binds_ok: AtomicU64,
}

impl Trunk {
    /// A trunk for paths labelled `labels`, with a new client owner: the
    /// one of `slot` (owner_slot.rs) when given, else one of its own.
    /// `server` keys the slots (its child after a `fork` takes one there).
    pub(crate) fn new(
        labels: Vec<String>,
        cred: &[u8],
        server: &str,
        slot: Option<OwnerSlot>,
    ) -> Arc<Self> {
        let host = crate::fdfloor::making(|| std::fs::read_to_string("/proc/sys/kernel/hostname"))
            .unwrap_or_default();
        let id = match &slot {
            // The slot's owner: the same as the dead client's that held it
            // last (with another verifier, so the server drops that one's
            // opens and locks once we have a session, RFC 8881 §18.35.4).
            // Another credential makes another owner: its state was never
            // ours to end.
            Some(slot) => {
                tracing::debug!("NFSv4.1: client owner slot {}", slot.number());
                format!(
                    "directnfs/{}/slot/{}/{:016x}",
                    host.trim(),
                    slot.id(),
                    principal(cred)
                )
            }
            None => {
                // No slot: an owner no other client can have. The counter's
                // address tells apart two copies of this library in one
                // process (the SQLite VFS's shared object beside a
                // program's own directnfs): with the same owner and
                // another verifier, a server takes the second client for
                // the first one rebooted and drops the first one's state.
                let n = NEXT_OWNER.fetch_add(1, Ordering::Relaxed);
                let copy = &NEXT_OWNER as *const AtomicU64 as usize;
                format!(
                    "directnfs/{}/{}/{copy:x}/{n}",
                    host.trim(),
                    std::process::id()
                )
            }
        };
        let owner = client_owner4 {
            co_verifier: verifier4(boot_verifier()),
            co_ownerid: owner_id4::from(id.as_str()),
        };
        Arc::new(Self {
            owner,
            slot,
            server: server.to_string(),
            cred: cred.to_vec(),
            paths: Mutex::new(Paths {
                seen: vec![Seen::Unchecked; labels.len()],
                reference: None,
            }),
            checking: labels.iter().map(|_| Mutex::new(())).collect(),
            labels,
            session: Mutex::new((sessionid4::default(), 0)),
            generation: AtomicU64::new(0),
            next_xid: AtomicU32::new(1),
            binds_sent: AtomicU64::new(0),
            binds_ok: AtomicU64::new(0),
        })
    }

    /// A trunk like this one (same paths) with a client owner of its
    /// own: the client of a `fork`ed child.
    pub(crate) fn fresh(&self) -> Arc<Self> {
        // The child takes a slot of its own (without ending dead clients'
        // state: its parent's mount did that).
        let slot = self.slot.as_ref().and_then(|parent| {
            parent.close_in_child();
            OwnerSlot::claim(&self.server, false).map(|c| c.own)
        });
        Self::new(self.labels.clone(), &self.cred, &self.server, slot)
    }

    /// This client ended its state on the server (DESTROY_CLIENTID).
    pub(crate) fn mark_clean(&self) {
        if let Some(slot) = &self.slot {
            slot.mark_clean();
        }
    }

    /// The client owner every EXCHANGE_ID of this client sends.
    pub(crate) fn owner(&self) -> &client_owner4 {
        &self.owner
    }

    /// After the mount's connections: the session's server is the first
    /// path that answered; every other path whose server differs is
    /// refused. Returns the refused paths and why (the caller takes them
    /// out of use).
    pub(crate) fn settle(&self) -> Vec<(usize, String)> {
        let mut paths = self.lock_paths();
        let Some(first) = paths.seen.iter().position(|s| matches!(s, Seen::Same(_))) else {
            return Vec::new();
        };
        paths.reference = Some(first);
        let Seen::Same(reference) = paths.seen[first].clone() else {
            return Vec::new();
        };
        let mut refused = Vec::new();
        for path in 0..paths.seen.len() {
            if let Seen::Same(server) = paths.seen[path].clone() {
                if let Some(why) = self.verdict(path, &server, first, &reference) {
                    paths.seen[path] = Seen::Refused {
                        server,
                        why: why.clone(),
                    };
                    refused.push((path, why));
                }
            }
        }
        refused
    }

    /// `None` when `server` (of `path`) may join the session of
    /// `reference` (of path `first`); else why not.
    fn verdict(
        &self,
        path: usize,
        server: &ServerId,
        first: usize,
        reference: &ServerId,
    ) -> Option<String> {
        if server == reference {
            return None;
        }
        let label = |p: usize| self.labels.get(p).map_or("?", String::as_str).to_string();
        let what = if server.major == reference.major && server.scope == reference.scope {
            "the same server, but its minor id differs: only client-ID trunking is \
             allowed, not session trunking (RFC 8881 §2.10.5)"
        } else {
            "not the same server (RFC 8881 §2.10.5: server owner major id and scope must match)"
        };
        Some(format!(
            "NFSv4.1 path {path} ({}) answers with {server}, but the session is on path {first} \
             ({}) with {reference}: {what}; the path is not used",
            label(path),
            label(first)
        ))
    }

    /// Every path's server owner so far (unchecked paths left out).
    pub(crate) fn owners(&self) -> Vec<ServerOwner> {
        let paths = self.lock_paths();
        paths
            .seen
            .iter()
            .enumerate()
            .filter_map(|(path, s)| {
                let (server, refused) = match s {
                    Seen::Unchecked => return None,
                    Seen::Same(server) => (server, None),
                    Seen::Refused { server, why } => (server, Some(why.clone())),
                };
                Some(ServerOwner {
                    path,
                    major_id: server.major.clone(),
                    minor_id: server.minor,
                    scope: server.scope.clone(),
                    refused,
                })
            })
            .collect()
    }

    /// A new session: every connection binds to it before its next
    /// request.
    pub(crate) fn set_session(&self, sessionid: sessionid4) {
        let mut s = self.session.lock().unwrap_or_else(|p| p.into_inner());
        s.0 = sessionid;
        s.1 += 1;
        self.generation.store(s.1, Ordering::Release);
    }

    /// For tests: BIND_CONN_TO_SESSION calls sent, and answered NFS4_OK.
    pub(crate) fn binds(&self) -> (u64, u64) {
        (
            self.binds_sent.load(Ordering::Relaxed),
            self.binds_ok.load(Ordering::Relaxed),
        )
    }

    fn lock_paths(&self) -> std::sync::MutexGuard<'_, Paths> {
        self.paths.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The EXCHANGE_ID of a path's first connection, recorded and judged.
    fn check_path(&self, path: usize, call: &mut CallOn<'_>) -> Result<(), Refusal> {
        let args = compound(nfs_argop4::OP_EXCHANGE_ID(EXCHANGE_ID4args {
            eia_clientowner: self.owner.clone(),
            eia_flags: EXCHGID4_FLAG_USE_NON_PNFS,
            eia_state_protect: state_protect4_a::SP4_NONE,
            eia_client_impl_id: None,
        }));
        let results = call(SALT_EXCHANGE_ID, &args).map_err(Refusal::Io)?;
        let server = match only_result(&results, nfs_opnum4::OP_EXCHANGE_ID)? {
            nfs_resop4::OP_EXCHANGE_ID(Nfs4Res::Ok(ok)) => ServerId {
                major: ok.eir_server_owner.so_major_id.as_bytes().to_vec(),
                minor: ok.eir_server_owner.so_minor_id,
                scope: ok.eir_server_scope.as_bytes().to_vec(),
            },
            other => {
                return Err(Refusal::Io(std::io::Error::other(format!(
                    "EXCHANGE_ID on a new connection: {}",
                    other.status()
                ))))
            }
        };
        let mut paths = self.lock_paths();
        if paths.seen.len() <= path {
            paths.seen.resize(path + 1, Seen::Unchecked);
        }
        let judged = paths.reference.and_then(|first| match &paths.seen[first] {
            Seen::Same(reference) => self.verdict(path, &server, first, reference),
            _ => None,
        });
        paths.seen[path] = match judged {
            None => Seen::Same(server),
            Some(why) => {
                paths.seen[path] = Seen::Refused {
                    server,
                    why: why.clone(),
                };
                return Err(Refusal::Path(why));
            }
        };
        Ok(())
    }

    /// BIND_CONN_TO_SESSION on a new connection, waiting for the answer:
    /// the generation it is bound to (0: not bound; the next write binds;
    /// a session the server no longer knows counts as bound: see below).
    fn bind_now(&self, call: &mut CallOn<'_>) -> Result<u64, Refusal> {
        let (sessionid, generation) = *self.session.lock().unwrap_or_else(|p| p.into_inner());
        if generation == 0 {
            return Ok(0);
        }
        self.binds_sent.fetch_add(1, Ordering::Relaxed);
        let results = call(SALT_BIND, &bind_args(sessionid)).map_err(Refusal::Io)?;
        let status = only_result(&results, nfs_opnum4::OP_BIND_CONN_TO_SESSION)?.status();
        if status.is_ok() {
            self.binds_ok.fetch_add(1, Ordering::Relaxed);
            return Ok(generation);
        }
        if status == nfsstat4::NFS4ERR_BADSESSION || status == nfsstat4::NFS4ERR_DEADSESSION {
            // The session is gone: the first request on the connection
            // meets the same status and recovers it, and the new session's
            // generation has the connection bind again. Binding to this
            // one again would only be refused again.
            tracing::info!("NFSv4.1 BIND_CONN_TO_SESSION of a new connection: {status}");
            return Ok(generation);
        }
        tracing::warn!("NFSv4.1 BIND_CONN_TO_SESSION of a new connection: {status}");
        Ok(0)
    }
}

impl ConnectHook for Trunk {
    fn on_connect(&self, path: usize, call: &mut CallOn<'_>) -> Result<u64, Refusal> {
        let checking = self
            .checking
            .get(path)
            .map(|m| m.lock().unwrap_or_else(|p| p.into_inner()));
        let seen = self
            .lock_paths()
            .seen
            .get(path)
            .cloned()
            .unwrap_or(Seen::Unchecked);
        match seen {
            Seen::Refused { why, .. } => return Err(Refusal::Path(why)),
            Seen::Unchecked => self.check_path(path, call)?,
            Seen::Same(_) => {}
        }
        drop(checking);
        self.bind_now(call)
    }

    fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    fn bind_record(&self, channel: usize, _generation: u64) -> Option<Vec<u8>> {
        let (sessionid, generation) = *self.session.lock().unwrap_or_else(|p| p.into_inner());
        if generation == 0 {
            return None;
        }
        let n = self.next_xid.fetch_add(1, Ordering::Relaxed);
        let xid = (n << SLOT_BITS) | HOOK_SLOT;
        let mut rec = Vec::with_capacity(128 + self.cred.len());
        rec.extend_from_slice(&[0; 4]);
        rec.put_u32(xid);
        rec.put_u32(0); // CALL
        rec.put_u32(directnfs_wire::rpc::RPC_VERSION);
        rec.put_u32(NFS4_PROGRAM);
        rec.put_u32(NFS_V4);
        rec.put_u32(NFSPROC4_COMPOUND);
        rec.extend_from_slice(&self.cred);
        rec.extend_from_slice(&bind_args(sessionid));
        let mark = fragment_header(rec.len() - 4, true);
        rec[..4].copy_from_slice(&mark);
        self.binds_sent.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(channel, generation, "NFSv4.1: BIND_CONN_TO_SESSION");
        Some(rec)
    }

    fn bind_reply(&self, channel: usize, record: &[u8]) {
        let mut r = XdrReader::new(record);
        let status = match ReplyHeader::decode(&mut r) {
            Ok(h) if h.is_success() => {
                match COMPOUND4res::decode_expecting(&mut r, &[nfs_opnum4::OP_BIND_CONN_TO_SESSION])
                {
                    Ok(res) => res.status,
                    Err(e) => {
                        tracing::warn!(channel, "NFSv4.1 BIND_CONN_TO_SESSION reply: {e}");
                        return;
                    }
                }
            }
            Ok(_) => {
                tracing::warn!(channel, "NFSv4.1 BIND_CONN_TO_SESSION refused by RPC");
                return;
            }
            Err(e) => {
                tracing::warn!(channel, "NFSv4.1 BIND_CONN_TO_SESSION reply: {e}");
                return;
            }
        };
        if status.is_ok() {
            self.binds_ok.fetch_add(1, Ordering::Relaxed);
        } else if status == nfsstat4::NFS4ERR_BADSESSION || status == nfsstat4::NFS4ERR_DEADSESSION
        {
            // The requests written after it carry the same session: they
            // recover it, and the next write binds to the new one.
            tracing::info!(channel, "NFSv4.1 BIND_CONN_TO_SESSION: {status}");
        } else {
            tracing::warn!(channel, "NFSv4.1 BIND_CONN_TO_SESSION: {status}");
        }
    }
}

/// A COMPOUND (minor version 1) of the one operation `op`, encoded.
fn compound(op: nfs_argop4) -> Vec<u8> {
    let args = COMPOUND4args {
        minorversion: 1,
        argarray: vec![op],
        ..Default::default()
    };
    let mut out = Vec::with_capacity(128);
    args.encode(&mut out);
    out
}

/// BIND_CONN_TO_SESSION's COMPOUND: the fore channel only (the session
/// has no back channel: `session.rs` asks for no callbacks), not RDMA.
fn bind_args(sessionid: sessionid4) -> Vec<u8> {
    compound(nfs_argop4::OP_BIND_CONN_TO_SESSION(
        BIND_CONN_TO_SESSION4args {
            bctsa_sessid: sessionid,
            bctsa_dir: channel_dir_from_client4::CDFC4_FORE,
            bctsa_use_conn_in_rdma_mode: false,
        },
    ))
}

/// The one result of a one-operation COMPOUND reply (`results` from the
/// COMPOUND status on).
fn only_result(results: &[u8], op: nfs_opnum4) -> Result<nfs_resop4, Refusal> {
    let res = COMPOUND4res::decode_expecting(&mut XdrReader::new(results), &[op])
        .map_err(|e| Refusal::Io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?;
    let status = res.status;
    res.resarray.into_iter().next().ok_or_else(|| {
        Refusal::Io(std::io::Error::other(format!(
            "{op:?} on a new connection: {status}"
        )))
    })
}

/// A short digest (FNV-1a) of who the credential says the caller is: the
/// uid and gid of AUTH_SYS (not its stamp, which is the pid), else every
/// byte of it.
fn principal(cred: &[u8]) -> u64 {
    let fnv = |bytes: &[u8]| {
        bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    };
    let sys = OpaqueAuth::decode(&mut XdrReader::new(cred))
        .ok()
        .filter(|a| a.flavor == AuthFlavor::AUTH_SYS)
        .and_then(|a| AuthSys::decode(&mut XdrReader::new(&a.body)).ok());
    match sys {
        Some(a) => fnv(&[a.uid.to_be_bytes(), a.gid.to_be_bytes()].concat()),
        None => fnv(cred),
    }
}

/// A verifier that differs between runs of the program (RFC 8881 §2.4:
/// `co_verifier` changes when the client restarts): the start time.
fn boot_verifier() -> [u8; 8] {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    (t.as_nanos() as u64).to_be_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(major: &str, minor: u64, scope: &str) -> ServerId {
        ServerId {
            major: major.as_bytes().to_vec(),
            minor,
            scope: scope.as_bytes().to_vec(),
        }
    }

    #[test]
    fn another_server_or_minor_id_is_refused_with_both_owners() {
        let t = Trunk::new(vec!["a".into(), "b".into()], &[], "s", None);
        let same = t.verdict(1, &id("srv", 1, "s"), 0, &id("srv", 1, "s"));
        assert!(same.is_none());
        let other = t
            .verdict(1, &id("other", 1, "s"), 0, &id("srv", 1, "s"))
            .unwrap_or_default();
        assert!(
            other.contains("path 1 (b)")
                && other.contains("\"other\"")
                && other.contains("\"srv\"")
                && other.contains("not the same server"),
            "{other}"
        );
        let minor = t
            .verdict(1, &id("srv", 2, "s"), 0, &id("srv", 1, "s"))
            .unwrap_or_default();
        assert!(minor.contains("client-ID trunking"), "{minor}");
    }

    #[test]
    fn printable_or_hex() {
        assert_eq!(printable(b"ganesha"), "\"ganesha\"");
        assert_eq!(printable(&[0, 0xff]), "0x00ff");
        assert_eq!(printable(b"vm_NFS-Ganesha\0"), "\"vm_NFS-Ganesha\\0\"");
        assert_eq!(printable(b""), "0x");
    }
}
