//! The client: one mounted export of one server, reached over one or more
//! paths with several channels each.
//!
//! This file holds the [`Client`] and its shared state (`Inner`: the
//! server end every version uses, `remote.rs`'s `Remote`, which `Inner`
//! dereferences to; the NFSv3 handles; the NFSv4.1 session), the call
//! path every NFSv3 procedure takes (`Inner::call`) and the statistics
//! snapshot. The rest of `Client`'s methods are in:
//!
//! | module | job |
//! |---|---|
//! | `client/discover.rs` | `connect`/`mount`: retry until `mnt_timeout`, ports and MOUNT over each path; the client of an NFSv4.1 mount (`v4/mount.rs`'s `Remote` and `Session`) |
//! | `client/namespace.rs` | `metadata`, `remove`, `rmdir`, `mkdir`, `rename`, `read_dir` |
//! | `client/handles.rs` | the path walk (one LOOKUP per component) and the handle cache |
//! | `client/credential.rs` | the AUTH_SYS credential (ids, groups, host name) |
//! | `client/session.rs` | the NFSv4.1 session's slots and server owners, its `*_for_test` hooks |
//!
//! Other modules add their own `impl Client`: opening files (`file.rs`),
//! SETATTR, ACCESS, FSSTAT and `mkdir_mode` (`attr_calls.rs`), links
//! (`links.rs`), file handles (`handle_calls.rs`), batches (`batch.rs`).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use directnfs_engine::idempotency::{classify_retried, RetriedStatus};
use directnfs_engine::stats::RawIoSnapshot;
use directnfs_wire::nfs3::{self, fattr3, nfs_fh3, nfsstat3, Nfs3Res};
use directnfs_wire::xdr::XdrWrite;
use directnfs_wire::{Decode, Encode, Procedure, XdrReader};

pub(crate) use crate::config::target::{PathSpec, Target};
use crate::config::MountOptions;
use crate::error::{Error, Result};
use crate::io::call::{Call, Group, Notify, Reply, Sink};
use crate::remote::{Remote, FALLBACK_TRANSFER};
use crate::stats::files::{FileRecord, FileStatsTable};
use crate::stats::{ChannelStats, IoSnapshot, PathStats, ServerStats, StatsSnapshot};

mod credential;
mod discover;
mod handles;
mod namespace;
mod session;

pub(crate) use discover::{start_v41, Publish};

use crate::remote::Limits;

/// A mounted export. Cheap to clone; every clone shares the connections.
/// `Send + Sync`: any number of threads may use it at once.
#[derive(Debug, Clone)]
pub struct Client {
    pub(crate) inner: Arc<Inner>,
}

/// The client's shared state: the server end every version uses (a
/// [`Remote`], which `Inner` dereferences to: `inner.transport`,
/// `inner.options`, ...), the NFSv3 root handle and handle cache, the file
/// statistics, write-behind's registry and, on NFSv4.1, the session.
#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) remote: Remote,
    pub(crate) root: nfs_fh3,
    /// Path (inside the export) -> handle. Handles only, never data.
    pub(crate) handles: RwLock<HashMap<String, nfs_fh3>>,
    /// Per-file statistics (v$dnfs_files), by path; bounded.
    pub(crate) files: std::sync::Mutex<FileStatsTable>,
    /// Open files that used write-behind (`remove`/`rename` wait for them).
    pub(crate) write_behind: crate::file::writebehind::Registry,
    /// The NFSv4.1 session, on a server mounted with `nfs_version: nfsv4.1`
    /// (then the methods hand their work to `crate::v4`).
    pub(crate) v4: Option<crate::v4::Session>,
    /// Reads and writes per I/O class, as their callers saw them.
    pub(crate) io_classes: crate::stats::classes::IoClassStats,
}

impl std::ops::Deref for Inner {
    type Target = Remote;

    fn deref(&self) -> &Remote {
        &self.remote
    }
}

/// What the NFSv4.1 modules ask of the client that holds their session
/// (an open file's and the lease renewal's way to it, `v4/mod.rs`).
impl crate::v4::Host for Inner {
    fn remote(&self) -> &Remote {
        &self.remote
    }

    fn session(&self) -> Option<&crate::v4::Session> {
        self.v4.as_ref()
    }
}

impl Drop for Inner {
    /// Ends an NFSv4.1 session and client ID (DESTROY_SESSION,
    /// DESTROY_CLIENTID) while the transport still runs.
    fn drop(&mut self) {
        if let Some(s) = self.v4.take() {
            s.destroy(&self.remote, true);
        }
    }
}

/// What the statistics endpoint asks of a client (`publish/server.rs`).
impl crate::publish::Published for Inner {
    fn publish_stats(&self) -> bool {
        self.options.publish_stats
    }

    fn snapshot(self: Arc<Self>) -> StatsSnapshot {
        Client { inner: self }.stats()
    }
}

impl Client {
    /// This client as the NFSv4.1 modules hold it (an open file's).
    pub(crate) fn host(&self) -> Arc<dyn crate::v4::Host> {
        Arc::clone(&self.inner) as Arc<dyn crate::v4::Host>
    }

    /// Runs `op`; if the server says a handle is stale (the file or a
    /// directory on its path was removed and re-created by someone else),
    /// forgets every cached handle and runs it once more with fresh LOOKUPs.
    pub(crate) fn fresh<T>(&self, op: impl Fn() -> Result<T>) -> Result<T> {
        match op() {
            Err(e) if e.nfs_status() == Some(nfsstat3::NFS3ERR_STALE) => {
                self.inner.forget_all();
                op()
            }
            other => other,
        }
    }

    /// Forgets the handle this client keeps for `path` (and for the names
    /// below it), so the next call naming `path` looks it up on the
    /// server again. For a front end that learned the handle is stale
    /// ([`crate::Error::errno`] `ESTALE`) from a call on an open file.
    pub fn forget_handle(&self, path: &str) {
        self.inner.forget(path);
    }

    /// Bytes of write-behind writes of all this client's files sent and
    /// not yet answered, or held for coalescing: what `write_behind_client`
    /// bounds. A writer checks the bound before it adds its write, so
    /// while several threads write at once the count can pass the bound
    /// by the writes the others are adding at that instant.
    pub fn write_behind_bytes(&self) -> usize {
        self.inner.write_behind.bytes()
    }

    /// The server's name (dnfstab `server:`, or the URL host).
    pub fn server_name(&self) -> &str {
        &self.inner.name
    }

    /// The export mounted.
    pub fn export(&self) -> &str {
        &self.inner.export
    }

    /// The target path below the export (from the URL or dnfstab path).
    pub fn target_path(&self) -> &str {
        &self.inner.target_rest
    }

    /// Negotiated transfer sizes.
    pub fn limits(&self) -> Limits {
        self.inner.limits
    }

    /// The options in force.
    pub fn options(&self) -> &MountOptions {
        &self.inner.options
    }

    /// A snapshot of every counter: this server, each path, each channel,
    /// each file opened through this client (Oracle's v$dnfs_servers,
    /// v$dnfs_channels, v$dnfs_files and v$dnfs_stats, plus latency
    /// histograms, retransmits, per-path bytes, queue depth and each
    /// channel's socket buffers as the kernel reports them now). Rendered
    /// by the [`crate::stats`] module; every process also publishes it (see
    /// `dnfs stats`).
    pub fn stats(&self) -> StatsSnapshot {
        let inner = &self.inner;
        let channels = inner.transport.channels();
        let npaths = channels.iter().map(|c| c.path + 1).max().unwrap_or(0);
        let mut server_raw = RawIoSnapshot::default();
        let mut paths = Vec::with_capacity(npaths);
        for p in 0..npaths {
            let mut path_raw = RawIoSnapshot::default();
            let mut chans = Vec::new();
            let mut any_up = false;
            let mut spec = None;
            for ch in channels.iter().filter(|c| c.path == p) {
                let raw = ch.stats.raw_snapshot();
                path_raw.merge(&raw);
                any_up |= ch.health.is_up();
                spec.get_or_insert_with(|| ch.spec.clone());
                chans.push(ChannelStats {
                    id: ch.id as u32,
                    pid: None,
                    state: ch.health.name().to_string(),
                    totals: IoSnapshot::from_raw(&raw),
                    queue_depth: ch.queue_depth,
                    send_buffer: ch.buffers.0,
                    recv_buffer: ch.buffers.1,
                });
            }
            server_raw.merge(&path_raw);
            paths.push(PathStats {
                local: spec.as_ref().and_then(|s| s.local.map(|l| l.to_string())),
                remote: spec
                    .as_ref()
                    .map(|s| s.remote.to_string())
                    .unwrap_or_default(),
                state: if any_up { "up" } else { "down" }.to_string(),
                totals: IoSnapshot::from_raw(&path_raw),
                channels: chans,
            });
        }
        let mut addresses: Vec<String> = paths.iter().map(|p| p.remote.clone()).collect();
        addresses.dedup();
        let files = inner
            .files
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .snapshot(&inner.name);
        StatsSnapshot {
            servers: vec![ServerStats {
                name: inner.name.clone(),
                export: inner.export.clone(),
                // The version mounted: an NFSv4.1 session, or NFSv3.
                nfs_version: if inner.v4.is_some() { "4.1" } else { "3" }.to_owned(),
                rtmax: inner.limits.rtmax,
                wtmax: inner.limits.wtmax,
                clients: 1,
                addresses,
                totals: IoSnapshot::from_raw(&server_raw),
                paths,
                io_classes: inner.io_classes.snapshot(),
            }],
            files,
        }
    }

    /// Round trip of one NFS NULL call (no work on the server): the
    /// network and RPC latency of this client's paths, as `dnfs check`
    /// reports it.
    pub fn ping(&self) -> Result<Duration> {
        let start = std::time::Instant::now();
        if let Some(s) = &self.inner.v4 {
            s.renew(&self.inner.remote)?;
            return Ok(start.elapsed());
        }
        self.inner.call::<nfs3::Null>(&(), "NULL")?;
        Ok(start.elapsed())
    }
}

#[cfg(test)]
impl Client {
    /// A client on a [`Transport::detached`] (no server, no socket, no
    /// thread) with transfer sizes `rtmax`/`wtmax`, for unit tests of the
    /// file and batch API under Miri; `crate::testing` plays the server.
    pub(crate) fn detached(options: MountOptions, rtmax: u32, wtmax: u32) -> Client {
        let remote = Self::detached_remote(options, rtmax, wtmax, false);
        Client {
            inner: Arc::new(Inner::new(remote)),
        }
    }

    /// An NFSv4.1 client on a [`Transport::detached`], its session
    /// established with `crate::testing`'s server (started here with
    /// `behaviour`, returned first so that a test drops it last).
    pub(crate) fn detached_v41(
        options: MountOptions,
        rtmax: u32,
        wtmax: u32,
        behaviour: crate::testing::Behaviour,
    ) -> (crate::testing::FakeServer, Client) {
        let remote = Self::detached_remote(options, rtmax, wtmax, true);
        let server = crate::testing::FakeServer::start_on(&remote.transport, behaviour);
        let trunk = crate::v4::trunk::Trunk::new(
            vec!["*->detached".into()],
            &remote.cred,
            "detached:0",
            None,
        );
        let session = crate::v4::Session::establish(&remote, trunk, crate::v4::reclaim::reclaim)
            .unwrap_or_else(|e| panic!("session with the fake server: {e}"));
        let mut inner = Inner::new(remote);
        inner.v4 = Some(session);
        (
            server,
            Client {
                inner: Arc::new(inner),
            },
        )
    }

    fn detached_remote(options: MountOptions, rtmax: u32, wtmax: u32, v41: bool) -> Remote {
        // NFSv4.1's call header takes the credential and verifier as they
        // go on the wire (AUTH_NONE, twice); NFSv3's detached tests never
        // decode theirs.
        let cred = if v41 { vec![0u8; 16] } else { Vec::new() };
        let (prog, vers) = if v41 {
            (
                directnfs_wire::nfs4::NFS4_PROGRAM,
                directnfs_wire::nfs4::NFS_V4,
            )
        } else {
            (nfs3::NFS_PROGRAM, nfs3::NFS_V3)
        };
        use crate::io::transport::{Transport, TransportConfig};
        use directnfs_engine::retry::{Backoff, RetryPolicy};
        let transport = Transport::detached(TransportConfig {
            policy: RetryPolicy {
                timeo: options.timeo,
                retrans: options.retrans,
                hard: options.hard,
            },
            backoff: Backoff::default(),
            max_record: 1 << 20,
            max_inflight: options.max_inflight,
            max_client_inflight: options.max_client_inflight,
            cred: cred.clone(),
            prog,
            vers,
            alerts: crate::alert::Alerts::new("detached"),
            hook: None,
            spare_keys: Vec::new(),
            fork_spares: false,
            gss: None,
            io_classes: options.io_classes,
            hedge: None,
        })
        .unwrap_or_else(|e| panic!("detached transport: {e}"));
        Remote {
            transport,
            name: "detached".into(),
            export: "/".into(),
            target_rest: "/".into(),
            limits: Limits {
                rtmax,
                wtmax,
                server_rtmax: rtmax,
                server_wtmax: wtmax,
            },
            options,
            cred,
        }
    }
}

/// `Ok(())` for NFS3_OK, the matching error otherwise.
pub(crate) fn nfs_result(status: nfsstat3, op: &'static str, path: &str) -> Result<()> {
    if status.is_ok() {
        Ok(())
    } else {
        Err(Error::Nfs {
            op,
            path: path.to_string(),
            status,
        })
    }
}

impl Inner {
    /// A client of the server end `remote`, before its export is known:
    /// no root handle, no session.
    pub(crate) fn new(remote: Remote) -> Self {
        Inner {
            remote,
            root: nfs_fh3::default(),
            handles: RwLock::new(HashMap::new()),
            files: std::sync::Mutex::new(FileStatsTable::default()),
            write_behind: Default::default(),
            v4: None,
            io_classes: Default::default(),
        }
    }

    /// The call message after the XID: CALL, RPC version, program, version,
    /// procedure, credential and verifier; arguments are appended by the caller.
    pub(crate) fn call_body(&self, proc_: u32, capacity: usize) -> Vec<u8> {
        let mut b = Vec::with_capacity(20 + self.cred.len() + capacity);
        self.put_call_header(&mut b, proc_);
        b
    }

    /// Bytes of the encoded credential and verifier.
    pub(crate) fn cred_len(&self) -> usize {
        self.cred.len()
    }

    /// Appends the call header after the XID (message type, RPC, program,
    /// version, procedure) and the credential.
    pub(crate) fn put_call_header(&self, b: &mut Vec<u8>, proc_: u32) {
        b.put_u32(0); // CALL
        b.put_u32(directnfs_wire::rpc::RPC_VERSION);
        b.put_u32(nfs3::NFS_PROGRAM);
        b.put_u32(nfs3::NFS_V3);
        b.put_u32(proc_);
        b.extend_from_slice(&self.cred);
    }

    /// Calls NFS procedure `P` and waits. Returns the results and how many
    /// times the call was sent. (NFS3ERR_JUKEBOX, "try again later", was
    /// retried by the engine after a pause, as the Linux client does: for
    /// ever on a hard mount, `retrans` times on a soft one.)
    /// A `ro` mount refuses anything that would change the server (EROFS)
    /// before sending it.
    pub(crate) fn call<P: Procedure>(&self, args: &P::Args, path: &str) -> Result<(P::Res, u32)> {
        self.call_classed::<P>(args, path, directnfs_engine::IoClass::Data)
    }

    /// [`call`](Self::call) of I/O class `class` (a file's COMMIT takes
    /// the file's).
    pub(crate) fn call_classed<P: Procedure>(
        &self,
        args: &P::Args,
        path: &str,
        class: directnfs_engine::IoClass,
    ) -> Result<(P::Res, u32)> {
        self.check_writable(P::PROC, P::NAME, path)?;
        // Every NFSv3 call passes here: what NFSv4.1 does not route to
        // `crate::v4` is refused, never sent with a v3 handle.
        if self.v4.is_some() {
            return Err(crate::v4::unsupported(&format!("{} ({path})", P::NAME)));
        }
        let mut body = self.call_body(P::PROC, 128);
        args.encode(&mut body);
        let group = Group::new(1);
        let call = Call::new(
            P::PROC,
            body,
            None,
            256,
            Sink::Record,
            Notify::Group(Arc::clone(&group)),
        );
        call.set_class(class);
        self.run(Arc::clone(&call), &group);
        let attempts = call.attempts();
        let bytes = match call
            .take_result()
            .map_err(|e| Error::from_call(P::NAME, path, e))?
        {
            Reply::Results(b) => b,
            Reply::Read { .. } | Reply::Read4 { .. } | Reply::Write { .. } => {
                return Err(Error::from_call(
                    P::NAME,
                    path,
                    crate::io::call_error::CallError::Internal(
                        "READ or WRITE sink on a record call",
                    ),
                ))
            }
        };
        let mut r = XdrReader::new(&bytes);
        let res = P::Res::decode(&mut r).map_err(|e| Error::Protocol {
            op: P::NAME,
            path: path.to_string(),
            detail: e.to_string(),
        })?;
        Ok((res, attempts))
    }

    /// A WRITE or COMMIT reply carried this write verifier (a change means
    /// the server restarted: alert).
    pub(crate) fn note_verifier(&self, verf: nfs3::writeverf3) {
        self.transport.note_verifier(verf.0);
    }

    /// Applies the retried-request rules to a namespace operation's status.
    fn check_retried(
        &self,
        proc_: u32,
        attempts: u32,
        status: nfsstat3,
        op: &'static str,
        path: &str,
    ) -> Result<()> {
        match classify_retried(proc_, attempts, status) {
            RetriedStatus::TreatAsSuccess => Ok(()),
            _ => nfs_result(status, op, path),
        }
    }

    fn fsinfo(&self) -> Result<Limits> {
        let args = nfs3::FSINFO3args { fsroot: self.root };
        let ok = match self.call::<nfs3::Fsinfo>(&args, &self.export)?.0 {
            Nfs3Res::Ok(ok) => ok,
            Nfs3Res::Fail(status, _) => {
                return nfs_result(status, "FSINFO", &self.export).map(|_| self.limits)
            }
        };
        // Never trust the server's maximum as an allocation size: clamp to
        // our own rsize/wsize (1 MiB by default), round down to 4 KiB.
        let clamp = |server: u32, ours: u32| {
            let v = if server == 0 {
                FALLBACK_TRANSFER
            } else {
                server.min(ours)
            };
            if v >= 4096 {
                v & !4095
            } else {
                v.max(512)
            }
        };
        Ok(Limits {
            rtmax: clamp(ok.rtmax, self.options.rsize),
            wtmax: clamp(ok.wtmax, self.options.wsize),
            server_rtmax: ok.rtmax,
            server_wtmax: ok.wtmax,
        })
    }

    pub(crate) fn getattr(&self, fh: &nfs_fh3, path: &str) -> Result<fattr3> {
        let args = nfs3::GETATTR3args { object: *fh };
        match self.call::<nfs3::Getattr>(&args, path)?.0 {
            Nfs3Res::Ok(ok) => Ok(ok.obj_attributes),
            Nfs3Res::Fail(status, _) => Err(Error::Nfs {
                op: "GETATTR",
                path: path.to_string(),
                status,
            }),
        }
    }

    /// The statistics record of a file path (created on first use;
    /// bounded, see [`MAX_FILE_STATS`](crate::stats::MAX_FILE_STATS)).
    pub(crate) fn file_stats(&self, path: &str) -> Arc<FileRecord> {
        self.files
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(path)
    }
}
