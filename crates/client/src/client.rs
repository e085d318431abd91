//! The client: one mounted export of one server, reached over one or more
//! paths with several channels each.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use directnfs_engine::idempotency::{classify_retried, RetriedStatus};
use directnfs_engine::retry::{Backoff, RetryPolicy};
use directnfs_engine::stats::RawIoSnapshot;
use directnfs_wire::nfs3::{
    self, diropargs3, fattr3, filename3, ftype3, nfs_fh3, nfsstat3, Nfs3Res,
};
use directnfs_wire::rpc::{AuthSys, OpaqueAuth};
use directnfs_wire::xdr::XdrWrite;
use directnfs_wire::{Decode, Encode, Procedure, XdrReader};

use crate::alert::Alerts;
use crate::config::{ConfigError, MountOptions, NfsUrl, NfsVersion, SocketBuffers};
use crate::error::{Error, Result};
use crate::io::call::{Call, Group, Notify, Reply, Sink};
use crate::io::oneshot::nobody_answered;
use crate::io::socket::{BufferRequest, ConnectSpec};
use crate::io::transport::{ChannelSpec, Transport, TransportConfig};
use crate::metadata::{DirEntry, Metadata};
use crate::mount::{self, COLD_TIMEOUT};
use crate::stats::files::{FileRecord, FileStatsTable};
use crate::stats::{ChannelStats, IoSnapshot, PathStats, ServerStats, StatsSnapshot};

/// Most entries one `read_dir` returns (a bound on memory and time).
pub const MAX_DIR_LISTING: usize = 1 << 20;

/// Most handles cached (path -> handle) before the cache is cleared.
const MAX_CACHED_HANDLES: usize = 65536;

pub use crate::stats::{EVICTED_FILES, MAX_FILE_STATS};

/// Transfer size used when the server's FSINFO gives none.
pub(crate) const FALLBACK_TRANSFER: u32 = 64 * 1024;
/// Record limit: the largest transfer plus room for RPC and NFS headers.
const RECORD_OVERHEAD: usize = 64 * 1024;

/// One network path to the server: where to connect from and to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathSpec {
    /// Local address to bind before connecting (`local:` in dnfstab).
    pub local: Option<IpAddr>,
    /// Server address or host name (`path:` in dnfstab).
    pub server: String,
}

/// Everything needed to mount: paths, the path to open, options.
#[derive(Debug, Clone)]
pub struct Target {
    /// Display name of the server (dnfstab `server:`, or the URL host).
    pub name: String,
    /// One or more network paths to it.
    pub paths: Vec<PathSpec>,
    /// The export, when known (dnfstab `export:`); else discovered.
    pub export: Option<String>,
    /// The full server-side path the caller wants (export + file path).
    pub path: String,
    /// Mount options.
    pub options: MountOptions,
}

impl Target {
    /// A single-path target from an `nfs://` URL (its export when the URL
    /// names one: `nfs://host//path`).
    pub fn from_url(url: &NfsUrl) -> Self {
        let mut options = url.options.clone();
        if let Some(p) = url.port {
            options.nfs_port = Some(p);
        }
        Self {
            name: url.host.clone(),
            paths: vec![PathSpec {
                local: None,
                server: url.host.clone(),
            }],
            export: url.export.clone(),
            path: url.path.clone(),
            options,
        }
    }
}

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
    pub(crate) write_behind: crate::writebehind::Registry,
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

impl Client {
    /// Mounts the export of an `nfs://host[:port]/export/path?options` URL.
    /// The URL's path below the export is [`Client::target_path`]; see
    /// [`NfsUrl`] for how the export is found (`nfs://host//path` says it
    /// is `/`), and [`Client::mount`] for how long an unreachable server is
    /// waited for (`mnt_timeout`).
    ///
    /// ```no_run
    /// let client = directnfs::Client::connect("nfs://127.0.0.1/export/db?nfsport=2049&mountport=20048")?;
    /// let file = client.open("/db/users01.dbf")?;
    /// let mut block = vec![0u8; 8192];
    /// file.read_at(&mut block, 0)?;
    /// # Ok::<(), directnfs::Error>(())
    /// ```
    pub fn connect(url: &str) -> Result<Client> {
        let url = NfsUrl::parse(url)?;
        Self::mount(&Target::from_url(&url))
    }

    /// Mounts a target (one or more paths, options).
    ///
    /// While the server cannot be reached — connections refused, reset or
    /// timing out, the portmapper not (yet) knowing the programs, every
    /// path alike — the mount is tried again, with a growing pause (0.25 s
    /// doubling up to 5 s), until `mnt_timeout` (600 s by default, as
    /// oranfstab) has passed: a database started during a filer takeover
    /// waits for the filer instead of failing. The error then names the
    /// server, the attempts and the time spent. A server that answers and
    /// refuses (MOUNT or RPC errors, bad credentials, a malformed or no
    /// reply on a connection it accepted) fails the mount at once.
    pub fn mount(target: &Target) -> Result<Client> {
        let options = target.options.clone();
        options.validate().map_err(ConfigError::from)?;
        let cred = credential(&options);
        if let Some(sink) = &options.alert_log {
            crate::alert::set_sink(sink.clone());
        }
        let alerts = Alerts::new(&target.name);
        if target.paths.is_empty() {
            return Err(Error::InvalidInput(
                "a server needs at least one path".into(),
            ));
        }
        let started = Instant::now();
        let deadline = started + options.mnt_timeout;
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            let e = match Self::mount_once(target, &options, &cred, deadline, &alerts) {
                Ok(client) => return Ok(client),
                Err(e) if server_absent(&e) => e,
                Err(e) => return Err(e),
            };
            let now = Instant::now();
            if now >= deadline {
                return Err(gave_up(e, target, attempts, started.elapsed(), &options));
            }
            let pause = MOUNT_BACKOFF
                .delay(attempts)
                .min(deadline.saturating_duration_since(now));
            if attempts == 1 {
                tracing::warn!(
                    "server {} not reachable ({e}): trying again until mnt_timeout ({:?}) has passed",
                    target.name,
                    options.mnt_timeout
                );
            } else {
                tracing::debug!("server {} still not reachable: {e}", target.name);
            }
            let export = target.export.as_deref().unwrap_or(&target.path);
            alerts.mount_retry(export, attempts, pause, &e.to_string());
            std::thread::sleep(pause);
        }
    }

    /// One attempt at [`mount`](Self::mount): ports and MOUNT, channels,
    /// FSINFO; cold-path calls end by `deadline` (at least 1 s each).
    fn mount_once(
        target: &Target,
        options: &MountOptions,
        cred: &[u8],
        deadline: Instant,
        alerts: &Alerts,
    ) -> Result<Client> {
        if options.nfs_version == NfsVersion::V41 {
            return crate::v4::mount::mount_once(target, options, cred, alerts);
        }
        let cold_timeout = deadline
            .saturating_duration_since(Instant::now())
            .clamp(Duration::from_secs(1), COLD_TIMEOUT);
        // Ports and MOUNT over the first path that answers: a dead path
        // must not stop a database from starting on the others.
        let mut errors = Vec::new();
        let mut found = None;
        for p in &target.paths {
            match Self::discover(p, options, cred, target, cold_timeout) {
                Ok(v) => {
                    found = Some(v);
                    break;
                }
                // A refused export is the server's answer, not a path problem.
                Err(e @ (Error::Mount { .. } | Error::Config(_) | Error::InvalidInput(_))) => {
                    return Err(e)
                }
                Err(e) => {
                    tracing::warn!("path {} unusable for MOUNT: {e}", p.server);
                    errors.push(e);
                }
            }
        }
        let Some(found) = found else {
            // A path whose server answered and refused says more than
            // paths where nobody answered (only those are tried again).
            let pick = errors.iter().position(|e| !server_absent(e)).unwrap_or(0);
            return Err(if errors.is_empty() {
                Error::InvalidInput("no path".into())
            } else {
                errors.swap_remove(pick)
            });
        };
        let Discovered {
            nfs_port,
            mount_spec,
            mut mounted,
        } = found;

        let transport = start_transport(
            target,
            options,
            cred,
            nfs_port,
            (nfs3::NFS_PROGRAM, nfs3::NFS_V3),
            alerts.clone(),
        )?;
        let mut inner = Inner::new(transport, target, options, cred);
        inner.root = mounted.root;
        // An export found by probing MNT must be a directory: a server
        // that MOUNTs a file (`nfs://host/export/f.bin`) has told us
        // nothing about where the export is, only that the file exists.
        while mounted.probed
            && inner.getattr(&mounted.root, &mounted.export)?.type_ != ftype3::NF3DIR
        {
            tracing::debug!(
                "MNT {} gave the handle of a file, not a directory: looking for the export above it",
                mounted.export
            );
            mounted = mount::mount_above(&mount_spec, cred, &target.path, &mounted.export)?;
        }
        inner.root = mounted.root;
        inner.export = mounted.export;
        inner.target_rest = mounted.rest;
        inner.limits = inner.fsinfo()?;
        let inner = Arc::new(inner);
        crate::publish::register(&inner);
        Ok(Client { inner })
    }

    /// Finds the NFS port and MOUNTs the target's export over one path.
    fn discover(
        path: &PathSpec,
        options: &MountOptions,
        cred: &[u8],
        target: &Target,
        timeout: Duration,
    ) -> Result<Discovered> {
        let ip = resolve(&path.server, 0)?.ip();
        let cold = |port: u16| ConnectSpec {
            remote: SocketAddr::new(ip, port),
            local: path.local,
            timeout,
            dontroute: options.dontroute,
            resvport: options.resvport,
            buffers: socket_buffers(options),
        };
        let nfs_port = match options.nfs_port {
            Some(p) => p,
            None => mount::getport(&cold(0), cred, nfs3::NFS_PROGRAM, nfs3::NFS_V3)?,
        };
        let mount_port = match options.mount_port {
            Some(p) => p,
            None => mount::getport(
                &cold(0),
                cred,
                directnfs_wire::mount::MOUNT_PROGRAM,
                directnfs_wire::mount::MOUNT_V3,
            )?,
        };
        let mount_spec = cold(mount_port);
        let mounted = mount::mount_path(&mount_spec, cred, &target.path, target.export.as_deref())?;
        Ok(Discovered {
            nfs_port,
            mount_spec,
            mounted,
        })
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

    /// Attributes of `path` (relative to the export root).
    pub fn metadata(&self, path: &str) -> Result<Metadata> {
        if let Some(s) = &self.inner.v4 {
            return crate::v4::ops::metadata(s, &self.inner, path);
        }
        self.fresh(|| self.metadata_once(path))
    }

    fn metadata_once(&self, path: &str) -> Result<Metadata> {
        let fh = self.inner.lookup_path(path)?;
        self.inner
            .getattr(&fh, path)
            .map(|a| Metadata::from_fattr(&a))
    }

    /// Removes a file.
    /// Write-behind writes in flight (any open file of this client) are
    /// waited for first.
    pub fn remove(&self, path: &str) -> Result<()> {
        self.inner.write_behind.settle_all();
        if let Some(s) = &self.inner.v4 {
            return crate::v4::ops::remove(s, &self.inner, path, false);
        }
        self.fresh(|| self.remove_once(path))
    }

    fn remove_once(&self, path: &str) -> Result<()> {
        let (dir, name) = self.inner.parent_and_name(path)?;
        let args = nfs3::REMOVE3args {
            object: diropargs3 { dir, name },
        };
        let (res, attempts) = self.inner.call::<nfs3::Remove>(&args, path)?;
        self.inner.forget(path);
        self.inner.check_retried(
            nfs3::NFSPROC3_REMOVE,
            attempts,
            res.status(),
            "REMOVE",
            path,
        )
    }

    /// Removes an empty directory.
    pub fn rmdir(&self, path: &str) -> Result<()> {
        if let Some(s) = &self.inner.v4 {
            return crate::v4::ops::remove(s, &self.inner, path, true);
        }
        self.fresh(|| self.rmdir_once(path))
    }

    fn rmdir_once(&self, path: &str) -> Result<()> {
        let (dir, name) = self.inner.parent_and_name(path)?;
        let args = nfs3::RMDIR3args {
            object: diropargs3 { dir, name },
        };
        let (res, attempts) = self.inner.call::<nfs3::Rmdir>(&args, path)?;
        self.inner.forget(path);
        self.inner
            .check_retried(nfs3::NFSPROC3_RMDIR, attempts, res.status(), "RMDIR", path)
    }

    /// Creates a directory (mode 0755; [`Client::mkdir_mode`] takes one).
    pub fn mkdir(&self, path: &str) -> Result<()> {
        self.mkdir_mode(path, 0o755)
    }

    /// Renames `from` to `to` (both relative to the export root), replacing
    /// `to` if it exists, atomically on the server. Write-behind writes in
    /// flight (any open file of this client) are waited for first.
    pub fn rename(&self, from: &str, to: &str) -> Result<()> {
        self.inner.write_behind.settle_all();
        if let Some(s) = &self.inner.v4 {
            return crate::v4::ops::rename(s, &self.inner, from, to);
        }
        self.fresh(|| self.rename_once(from, to))
    }

    fn rename_once(&self, from: &str, to: &str) -> Result<()> {
        let (fdir, fname) = self.inner.parent_and_name(from)?;
        let (tdir, tname) = self.inner.parent_and_name(to)?;
        let args = nfs3::RENAME3args {
            from: diropargs3 {
                dir: fdir,
                name: fname,
            },
            to: diropargs3 {
                dir: tdir,
                name: tname,
            },
        };
        let (res, attempts) = self.inner.call::<nfs3::Rename>(&args, from)?;
        self.inner.forget(from);
        self.inner.forget(to);
        self.inner.check_retried(
            nfs3::NFSPROC3_RENAME,
            attempts,
            res.status(),
            "RENAME",
            from,
        )
    }

    /// Lists a directory (without `.` and `..`), with attributes when the
    /// server provides them.
    pub fn read_dir(&self, path: &str) -> Result<Vec<DirEntry>> {
        if let Some(s) = &self.inner.v4 {
            return crate::v4::ops::read_dir(s, &self.inner, path);
        }
        self.fresh(|| self.read_dir_once(path))
    }

    fn read_dir_once(&self, path: &str) -> Result<Vec<DirEntry>> {
        let dir = self.inner.lookup_path(path)?;
        let mut out = Vec::new();
        let mut cookie = 0u64;
        let mut cookieverf = nfs3::cookieverf3::default();
        loop {
            let args = nfs3::READDIRPLUS3args {
                dir,
                cookie,
                cookieverf,
                dircount: 32 * 1024,
                maxcount: 256 * 1024,
            };
            let (res, _) = self.inner.call::<nfs3::Readdirplus>(&args, path)?;
            let ok = match res {
                Nfs3Res::Ok(ok) => ok,
                Nfs3Res::Fail(status, _) => {
                    return nfs_result(status, "READDIRPLUS", path).map(|_| Vec::new())
                }
            };
            cookieverf = ok.cookieverf;
            let n = ok.reply.entries.len();
            let previous = cookie;
            for e in ok.reply.entries {
                cookie = e.cookie;
                let name = String::from_utf8_lossy(e.name.as_bytes()).into_owned();
                if name == "." || name == ".." {
                    continue;
                }
                out.push(DirEntry {
                    name,
                    fileid: e.fileid,
                    metadata: e.name_attributes.as_ref().map(Metadata::from_fattr),
                });
            }
            if ok.reply.eof || n == 0 {
                return Ok(out);
            }
            // A server whose cookies do not advance, or whose directory
            // never ends, must not hold us (or our memory) forever.
            let bad = if cookie == previous {
                Some("the directory cookie did not advance")
            } else if out.len() > MAX_DIR_LISTING {
                Some("the directory has more entries than a listing may hold")
            } else {
                None
            };
            if let Some(detail) = bad {
                return Err(Error::Protocol {
                    op: "READDIRPLUS",
                    path: path.to_string(),
                    detail: format!("{detail} ({} entries so far)", out.len()),
                });
            }
        }
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
                nfs_version: "3".to_owned(),
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
/// `nfs_port`, carrying program `prog` version `vers`.
pub(crate) fn start_transport(
    target: &Target,
    options: &MountOptions,
    cred: &[u8],
    nfs_port: u16,
    (prog, vers): (u32, u32),
    alerts: Alerts,
) -> Result<Transport> {
    // Channels: `connections` per path, all to the NFS port.
    let mut channels = Vec::new();
    for (pi, p) in target.paths.iter().enumerate() {
        let remote = resolve(&p.server, nfs_port)?;
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
        },
    )
    .map_err(|e| Error::Connect {
        server: format!("{}:{nfs_port}", target.name),
        source: e,
    })
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
            Reply::Read { .. } | Reply::Write { .. } => {
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

    /// Splits a path into its components, rejecting what NFS cannot name.
    pub(crate) fn components(path: &str) -> Result<Vec<&str>> {
        let mut out: Vec<&str> = Vec::new();
        for c in path.split('/') {
            match c {
                "" | "." => {}
                ".." => {
                    out.pop();
                }
                c if c.len() > filename3::MAX => {
                    return Err(Error::InvalidInput(format!(
                        "path component of {} bytes exceeds {} in {path}",
                        c.len(),
                        filename3::MAX
                    )))
                }
                c => out.push(c),
            }
        }
        Ok(out)
    }

    /// Resolves a path below the export to a handle, one LOOKUP per
    /// component not yet cached.
    pub(crate) fn lookup_path(&self, path: &str) -> Result<nfs_fh3> {
        self.lookup_path_sized(path).map(|(fh, _)| fh)
    }

    /// [`lookup_path`](Self::lookup_path), with the file's size when the
    /// last component was looked up now (not taken from the handle cache)
    /// and the server sent its attributes.
    pub(crate) fn lookup_path_sized(&self, path: &str) -> Result<(nfs_fh3, Option<u64>)> {
        let comps = Self::components(path)?;
        let key = format!("/{}", comps.join("/"));
        if let Some(fh) = self.handles.read().ok().and_then(|h| h.get(&key).cloned()) {
            return Ok((fh, None));
        }
        let mut fh = self.root;
        let mut size = None;
        let mut sofar = String::new();
        for c in comps {
            sofar.push('/');
            sofar.push_str(c);
            if let Some(cached) = self
                .handles
                .read()
                .ok()
                .and_then(|h| h.get(&sofar).cloned())
            {
                fh = cached;
                size = None;
                continue;
            }
            (fh, size) = self.lookup_one(&fh, c, &sofar)?;
            self.cache_handle(sofar.clone(), fh);
        }
        Ok((fh, size))
    }

    fn lookup_one(&self, dir: &nfs_fh3, name: &str, full: &str) -> Result<(nfs_fh3, Option<u64>)> {
        let args = nfs3::LOOKUP3args {
            what: diropargs3 {
                dir: *dir,
                name: filename3(name.as_bytes().to_vec()),
            },
        };
        match self.call::<nfs3::Lookup>(&args, full)?.0 {
            Nfs3Res::Ok(ok) => Ok((ok.object, ok.obj_attributes.map(|a| a.size))),
            Nfs3Res::Fail(status, _) => Err(Error::Nfs {
                op: "LOOKUP",
                path: full.to_string(),
                status,
            }),
        }
    }

    /// The handle of the parent directory and the last component's name.
    pub(crate) fn parent_and_name(&self, path: &str) -> Result<(nfs_fh3, filename3)> {
        let comps = Self::components(path)?;
        let Some((last, parent)) = comps.split_last() else {
            return Err(Error::InvalidInput(format!(
                "{path:?} names the export root"
            )));
        };
        let dir = self.lookup_path(&parent.join("/"))?;
        Ok((dir, filename3(last.as_bytes().to_vec())))
    }

    /// Drops cached handles of `path` and everything below it.
    pub(crate) fn forget(&self, path: &str) {
        let Ok(comps) = Self::components(path) else {
            return;
        };
        let key = format!("/{}", comps.join("/"));
        let prefix = format!("{key}/");
        if let Ok(mut h) = self.handles.write() {
            h.retain(|k, _| k != &key && !k.starts_with(&prefix));
        }
    }

    /// The statistics record of a file path (created on first use;
    /// bounded, see [`MAX_FILE_STATS`]).
    pub(crate) fn file_stats(&self, path: &str) -> Arc<FileRecord> {
        self.files
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(path)
    }

    /// Drops every cached handle.
    pub(crate) fn forget_all(&self) {
        if let Ok(mut h) = self.handles.write() {
            h.clear();
        }
    }

    pub(crate) fn remember(&self, path: &str, fh: &nfs_fh3) {
        if let Ok(comps) = Self::components(path) {
            self.cache_handle(format!("/{}", comps.join("/")), *fh);
        }
    }

    /// Caches a handle. Bounded: a runaway tree walk (or a program that
    /// only ever creates files) must not grow the cache forever, so it is
    /// cleared once it holds more than [`MAX_CACHED_HANDLES`].
    fn cache_handle(&self, key: String, fh: nfs_fh3) {
        if let Ok(mut h) = self.handles.write() {
            if h.len() > MAX_CACHED_HANDLES {
                h.clear();
            }
            h.insert(key, fh);
        }
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

/// Pauses between mount attempts while the server cannot be reached:
/// short at first (a restart takes seconds), then every 5 s.
const MOUNT_BACKOFF: Backoff = Backoff {
    initial: Duration::from_millis(250),
    max: Duration::from_secs(5),
};

/// SO_SNDBUF/SO_RCVBUF to ask for (`sockbuf=`).
fn socket_buffers(options: &MountOptions) -> BufferRequest {
    match options.sockbuf {
        SocketBuffers::Auto => BufferRequest::Auto,
        SocketBuffers::Fixed(n) => BufferRequest::Fixed(n as usize),
        SocketBuffers::Prefer(n) => BufferRequest::Prefer(n as usize),
    }
}

/// What one path told us: the NFS port, where MOUNT is, the export.
struct Discovered {
    nfs_port: u16,
    mount_spec: ConnectSpec,
    mounted: mount::Mounted,
}

/// True for the failures that mean the server could not be reached at all
/// (see [`nobody_answered`]), as opposed to a server that answered.
fn server_absent(e: &Error) -> bool {
    matches!(e, Error::Connect { source, .. } if nobody_answered(source))
}

/// The last failure of a mount that gave up at `mnt_timeout`, naming the
/// server, the attempts and the time spent.
fn gave_up(
    e: Error,
    target: &Target,
    attempts: u32,
    spent: Duration,
    options: &MountOptions,
) -> Error {
    match e {
        Error::Connect { server, source } => Error::Connect {
            server: format!(
                "{server}; gave up on server \"{}\" after {attempts} attempt{} over {:.1} s \
                 (mnt_timeout is {} s)",
                target.name,
                if attempts == 1 { "" } else { "s" },
                spent.as_secs_f64(),
                options.mnt_timeout.as_secs_f64()
            ),
            source,
        },
        other => other,
    }
}

fn resolve(host: &str, port: u16) -> Result<SocketAddr> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    (host, port)
        .to_socket_addrs()
        .map_err(|e| Error::Connect {
            server: host.to_string(),
            // getaddrinfo's failures carry no errno: NotFound makes it
            // EHOSTUNREACH for C callers (error.rs `connect_errno`).
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("cannot resolve the host name: {e}"),
            ),
        })?
        .next()
        .ok_or_else(|| Error::Connect {
            server: host.to_string(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "host name has no address"),
        })
}

/// AUTH_SYS from the options, defaulting to the calling process's ids.
fn credential(options: &MountOptions) -> Vec<u8> {
    // SAFETY: these libc calls take no pointers and cannot fail.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    let gids = options.gids.clone().unwrap_or_else(process_groups);
    let auth = AuthSys {
        stamp: std::process::id(),
        machine_name: hostname().into_bytes(),
        uid: options.uid.unwrap_or(uid),
        gid: options.gid.unwrap_or(gid),
        gids,
    };
    let mut out = Vec::with_capacity(128);
    auth.to_opaque_auth().encode(&mut out);
    OpaqueAuth::none().encode(&mut out);
    out
}

fn process_groups() -> Vec<u32> {
    let mut groups = vec![0 as libc::gid_t; 64];
    // SAFETY: the buffer holds `groups.len()` gid_t values, as passed.
    let n = unsafe { libc::getgroups(groups.len() as libc::c_int, groups.as_mut_ptr()) };
    if n < 0 {
        return Vec::new();
    }
    groups.truncate(n as usize);
    groups.truncate(16);
    groups
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its full length, which is passed.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "directnfs".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}
