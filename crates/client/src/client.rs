//! The client: one mounted export of one server, reached over one or more
//! paths with several channels each.
//!
//! This file holds the [`Client`] and its shared state (`Inner`), the
//! transport they start, the call path every NFSv3 procedure takes
//! (`Inner::call`) and the statistics snapshot. The rest of `Client`'s
//! methods are in:
//!
//! | module | job |
//! |---|---|
//! | `client/discover.rs` | `connect`/`mount`: retry until `mnt_timeout`, ports and MOUNT over each path |
//! | `client/namespace.rs` | `metadata`, `remove`, `rmdir`, `mkdir`, `rename`, `read_dir` |
//! | `client/handles.rs` | the path walk (one LOOKUP per component) and the handle cache |
//! | `client/credential.rs` | the AUTH_SYS credential (ids, groups, host name) |
//!
//! Other modules add their own `impl Client`: opening files (`file.rs`),
//! SETATTR, ACCESS, FSSTAT and `mkdir_mode` (`attr_calls.rs`), links
//! (`links.rs`), file handles (`handle_calls.rs`), batches (`batch.rs`).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use directnfs_engine::idempotency::{classify_retried, RetriedStatus};
use directnfs_engine::retry::{Backoff, RetryPolicy};
use directnfs_engine::stats::RawIoSnapshot;
use directnfs_wire::nfs3::{self, fattr3, nfs_fh3, nfsstat3, Nfs3Res};
use directnfs_wire::xdr::XdrWrite;
use directnfs_wire::{Decode, Encode, Procedure, XdrReader};

use crate::alert::Alerts;
pub(crate) use crate::config::target::{PathSpec, Target};
use crate::config::{MountOptions, Xprtsec};
use crate::error::{Error, Result};
use crate::io::call::{Call, Group, Notify, Reply, Sink};
use crate::io::socket::ConnectSpec;
use crate::io::tls::{TlsRequest, TlsSpec};
use crate::io::transport::{ChannelSpec, Transport, TransportConfig};
use crate::stats::files::{FileRecord, FileStatsTable};
use crate::stats::{ChannelStats, IoSnapshot, PathStats, ServerStats, StatsSnapshot};

mod credential;
mod discover;
mod handles;
mod namespace;

use discover::{resolve, socket_buffers};

/// Most entries one `read_dir` returns (a bound on memory and time).
pub const MAX_DIR_LISTING: usize = 1 << 20;

/// Transfer size used when the server's FSINFO gives none.
pub(crate) const FALLBACK_TRANSFER: u32 = 64 * 1024;
/// Record limit: the largest transfer plus room for RPC and NFS headers.
const RECORD_OVERHEAD: usize = 64 * 1024;

/// Transfer sizes and limits negotiated with FSINFO.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest READ sent (server rtmax clamped by `rsize`).
    pub rtmax: u32,
    /// Largest WRITE sent (server wtmax clamped by `wsize`).
    pub wtmax: u32,
    /// What the server advertised, before clamping.
    pub server_rtmax: u32,
    /// What the server advertised, before clamping.
    pub server_wtmax: u32,
}

/// A mounted export. Cheap to clone; every clone shares the connections.
/// `Send + Sync`: any number of threads may use it at once.
#[derive(Debug, Clone)]
pub struct Client {
    pub(crate) inner: Arc<Inner>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) transport: Transport,
    pub(crate) name: String,
    pub(crate) export: String,
    pub(crate) root: nfs_fh3,
    /// The part of the target path below the export.
    pub(crate) target_rest: String,
    pub(crate) limits: Limits,
    pub(crate) options: MountOptions,
    /// Encoded credential + verifier, prefixed to every call.
    pub(crate) cred: Vec<u8>,
    /// Path (inside the export) -> handle. Handles only, never data.
    pub(crate) handles: RwLock<HashMap<String, nfs_fh3>>,
    /// Per-file statistics (v$dnfs_files), by path; bounded.
    pub(crate) files: std::sync::Mutex<FileStatsTable>,
    /// Open files that used write-behind (`remove`/`rename` wait for them).
    pub(crate) write_behind: crate::file::writebehind::Registry,
    /// The NFSv4.1 session, on a server mounted with `nfs_version: nfsv4.1`
    /// (then the methods hand their work to `crate::v4`).
    pub(crate) v4: Option<crate::v4::Session>,
}

impl Drop for Inner {
    /// Ends an NFSv4.1 session and client ID (DESTROY_SESSION,
    /// DESTROY_CLIENTID) while the transport still runs.
    fn drop(&mut self) {
        if let Some(s) = self.v4.take() {
            s.destroy(self, true);
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
            s.renew(&self.inner)?;
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
        let cred = Vec::new();
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
            prog: nfs3::NFS_PROGRAM,
            vers: nfs3::NFS_V3,
            alerts: Alerts::new("detached"),
            hook: None,
            spare_keys: Vec::new(),
            fork_spares: false,
        })
        .unwrap_or_else(|e| panic!("detached transport: {e}"));
        Client {
            inner: Arc::new(Inner {
                transport,
                name: "detached".into(),
                export: "/".into(),
                root: nfs_fh3::default(),
                target_rest: "/".into(),
                limits: Limits {
                    rtmax,
                    wtmax,
                    server_rtmax: rtmax,
                    server_wtmax: wtmax,
                },
                options,
                cred,
                handles: RwLock::new(HashMap::new()),
                files: std::sync::Mutex::new(FileStatsTable::default()),
                write_behind: Default::default(),
                v4: None,
            }),
        }
    }
}

/// Starts the transport: `connections` channels per path, all to
/// `nfs_port`, carrying program `prog` version `vers`; `hook` is what the
/// protocol does with each connection (NFSv4.1's trunking and binding).
pub(crate) fn start_transport(
    target: &Target,
    options: &MountOptions,
    cred: &[u8],
    nfs_port: u16,
    (prog, vers): (u32, u32),
    alerts: Alerts,
    hook: Option<Arc<dyn crate::io::transport::ConnectHook>>,
) -> Result<Transport> {
    // Channels: `connections` per path, all to the NFS port.
    let mut channels = Vec::new();
    for (pi, p) in target.paths.iter().enumerate() {
        let remote = resolve(&p.server, nfs_port)?;
        let tls = tls_spec(options, &p.server, (prog, vers))
            .map_err(|e| Error::InvalidInput(format!("xprtsec for {}: {e}", p.server)))?;
        for _ in 0..options.connections {
            let spec = ConnectSpec {
                remote,
                local: p.local,
                timeout: options
                    .timeo
                    .clamp(Duration::from_secs(1), Duration::from_secs(10)),
                dontroute: options.dontroute,
                resvport: options.resvport,
                buffers: socket_buffers(options),
                tls: tls.clone(),
            };
            channels.push(ChannelSpec {
                path: pi,
                connect: spec,
            });
        }
    }
    let max_record = (options.rsize.max(options.wsize) as usize) + RECORD_OVERHEAD;
    Transport::start(
        channels,
        TransportConfig {
            policy: RetryPolicy {
                timeo: options.timeo,
                retrans: options.retrans,
                hard: options.hard,
            },
            backoff: Backoff::default(),
            max_record,
            max_inflight: options.max_inflight,
            max_client_inflight: options.max_client_inflight,
            cred: cred.to_vec(),
            prog,
            vers,
            alerts,
            hook,
            spare_keys: Vec::new(),
            // A spare's TLS session lives in the relay thread of the
            // process that made it: not one to hand to a child.
            fork_spares: options.fork_spares && options.xprtsec == Xprtsec::None,
        },
    )
    .map_err(|e| Error::Connect {
        server: format!("{}:{nfs_port}", target.name),
        source: e,
    })
}

/// The RPC-with-TLS set-up of the connections to `server` that
/// `options` ask for (`xprtsec=`), shared by all of its channels; `None`
/// for plain TCP. Reads the CA, certificate and key files once, here.
fn tls_spec(
    options: &MountOptions,
    server: &str,
    (prog, vers): (u32, u32),
) -> std::io::Result<Option<Arc<TlsSpec>>> {
    let client = match options.xprtsec {
        Xprtsec::None => return Ok(None),
        Xprtsec::Tls => None,
        Xprtsec::Mtls => options.tls_cert.clone().zip(options.tls_key.clone()),
    };
    let request = TlsRequest {
        ca: options.tls_ca.clone(),
        client,
        name: options.tls_name.clone(),
        starttls: !options.tls_direct,
    };
    TlsSpec::new(&request, server, prog, vers).map(|t| Some(Arc::new(t)))
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
    /// A client of `target` on `transport`, before its export is known:
    /// no root handle, fallback transfer sizes.
    pub(crate) fn new(
        transport: Transport,
        target: &Target,
        options: &MountOptions,
        cred: &[u8],
    ) -> Self {
        Inner {
            transport,
            name: target.name.clone(),
            export: String::new(),
            root: nfs_fh3::default(),
            target_rest: String::new(),
            limits: Limits {
                rtmax: FALLBACK_TRANSFER,
                wtmax: FALLBACK_TRANSFER,
                server_rtmax: 0,
                server_wtmax: 0,
            },
            options: options.clone(),
            cred: cred.to_vec(),
            handles: RwLock::new(HashMap::new()),
            files: std::sync::Mutex::new(FileStatsTable::default()),
            write_behind: Default::default(),
            v4: None,
        }
    }

    pub(crate) fn transport(&self) -> &Transport {
        &self.transport
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

    /// Sends a prepared call and waits for it.
    pub(crate) fn run(&self, call: Arc<Call>, group: &Group) {
        self.transport.run(call, group);
    }

    /// Calls NFS procedure `P` and waits. Returns the results and how many
    /// times the call was sent. (NFS3ERR_JUKEBOX, "try again later", was
    /// retried by the engine after a pause, as the Linux client does: for
    /// ever on a hard mount, `retrans` times on a soft one.)
    /// A `ro` mount refuses anything that would change the server (EROFS)
    /// before sending it.
    pub(crate) fn call<P: Procedure>(&self, args: &P::Args, path: &str) -> Result<(P::Res, u32)> {
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
                    crate::io::error::CallError::Internal("READ or WRITE sink on a record call"),
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

    /// A `ro` mount refuses, before sending it, any call that would
    /// change the server: EROFS.
    pub(crate) fn check_writable(&self, proc_: u32, op: &'static str, path: &str) -> Result<()> {
        if self.options.read_only && modifies(proc_) {
            return Err(Error::ReadOnly {
                op,
                path: path.to_string(),
            });
        }
        Ok(())
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

/// Procedures that change the server (RFC 1813 §3.3): SETATTR, WRITE,
/// CREATE, MKDIR, SYMLINK, MKNOD, REMOVE, RMDIR, RENAME, LINK, COMMIT.
fn modifies(proc_: u32) -> bool {
    matches!(
        proc_,
        nfs3::NFSPROC3_SETATTR
            | nfs3::NFSPROC3_WRITE
            | nfs3::NFSPROC3_CREATE
            | nfs3::NFSPROC3_MKDIR
            | nfs3::NFSPROC3_SYMLINK
            | nfs3::NFSPROC3_MKNOD
            | nfs3::NFSPROC3_REMOVE
            | nfs3::NFSPROC3_RMDIR
            | nfs3::NFSPROC3_RENAME
            | nfs3::NFSPROC3_LINK
            | nfs3::NFSPROC3_COMMIT
    )
}
