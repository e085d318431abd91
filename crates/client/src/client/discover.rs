//! Mounting a target: the retry while the server cannot be reached
//! (`mnt_timeout`), one attempt over the paths in turn, and on each path
//! the discovery of the NFS port and the export (PORTMAP and MOUNT, in
//! `crate::mount`) before the transport starts. On an NFSv4.1 mount each
//! attempt is `crate::v4::mount`'s instead, which hands back the server
//! end and the session for the client made here (`start_v41`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use directnfs_engine::retry::Backoff;
use directnfs_wire::nfs3::{self, ftype3};

use super::credential::credential;
use super::{Client, Inner, PathSpec, Target};
use crate::alert::Alerts;
use crate::config::{ConfigError, MountOptions, NfsUrl, NfsVersion};
use crate::error::{Error, Result};
use crate::io::oneshot::nobody_answered;
use crate::io::socket::ConnectSpec;
use crate::mount::{self, COLD_TIMEOUT};
use crate::remote::{resolve, socket_buffers, start_transport, tls_spec, Remote};

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
            let m = crate::v4::mount::mount_once(target, options, cred, alerts)?;
            let mut inner = Inner::new(m.remote);
            inner.v4 = Some(m.session);
            let client = start_v41(inner, Publish::Now);
            m.dead.end(target, options, cred);
            return Ok(client);
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
            server,
        } = found;

        let transport = start_transport(
            target,
            options,
            cred,
            nfs_port,
            (nfs3::NFS_PROGRAM, nfs3::NFS_V3),
            alerts.clone(),
            None,
        )?;
        crate::nlm::note_paths(target);
        let mut inner = Inner::new(Remote::new(transport, target, options, cred));
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
            mounted = mount::mount_above(
                &mount_spec,
                mount_auth(options, cred, &server),
                &target.path,
                &mounted.export,
            )?;
        }
        inner.root = mounted.root;
        inner.remote.export = mounted.export;
        inner.remote.target_rest = mounted.rest;
        inner.remote.limits = inner.fsinfo()?;
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
        // RPC-with-TLS (`xprtsec=`) covers MOUNT and the portmapper too
        // (RFC 9289 applies to every RPC program): their connections make
        // the AUTH_TLS probe for their own program, and a server that
        // answers it without STARTTLS fails the mount, naming the program.
        let tls = tls_spec(
            options,
            &path.server,
            (
                directnfs_wire::mount::MOUNT_PROGRAM,
                directnfs_wire::mount::MOUNT_V3,
            ),
        )
        .map_err(|e| Error::InvalidInput(format!("xprtsec for {}: {e}", path.server)))?;
        let cold = |port: u16| ConnectSpec {
            remote: SocketAddr::new(ip, port),
            local: path.local,
            timeout,
            dontroute: options.dontroute,
            resvport: options.resvport,
            buffers: socket_buffers(options),
            tls: tls.clone(),
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
        let mounted = mount::mount_path(
            &mount_spec,
            mount_auth(options, cred, &path.server),
            &target.path,
            target.export.as_deref(),
        )?;
        Ok(Discovered {
            nfs_port,
            mount_spec,
            mounted,
            server: path.server.clone(),
        })
    }
}

/// Pauses between mount attempts while the server cannot be reached:
/// short at first (a restart takes seconds), then every 5 s.
const MOUNT_BACKOFF: Backoff = Backoff {
    initial: Duration::from_millis(250),
    max: Duration::from_secs(5),
};

/// When an NFSv4.1 client's statistics endpoint starts.
pub(crate) enum Publish {
    /// With the client.
    Now,
    /// At the lease renewal thread's first tick, a second after the client
    /// was made: a forked child (a PostgreSQL backend per connection) that
    /// makes a few calls and exits never publishes, as an NFSv3 child
    /// whose threads never start (the endpoint's socket and thread are
    /// about 13% of such a child's CPU).
    WhenRenewing,
}

/// The client of an NFSv4.1 `inner` (its session made), with its lease
/// renewal running; its statistics are published like an NFSv3
/// client's.
pub(crate) fn start_v41(inner: Inner, publish: Publish) -> Client {
    let inner = Arc::new(inner);
    if let Some(s) = inner.v4.as_ref() {
        s.start_renewal(Arc::downgrade(&inner) as std::sync::Weak<dyn crate::v4::Host>);
    }
    match publish {
        Publish::Now => crate::publish::register(&inner),
        Publish::WhenRenewing => crate::publish::register_deferred(&inner),
    }
    Client { inner }
}

/// What one path told us: the NFS port, where MOUNT is, the export, and
/// the path's server name (a Kerberos principal's host).
struct Discovered {
    nfs_port: u16,
    mount_spec: ConnectSpec,
    mounted: mount::Mounted,
    server: String,
}

/// How MOUNT calls to `server` are authenticated: as the mount's NFS
/// calls (`sec=`), AUTH_SYS with `cred` or Kerberos.
fn mount_auth<'a>(options: &MountOptions, cred: &'a [u8], server: &'a str) -> mount::MountAuth<'a> {
    mount::MountAuth {
        cred,
        gss: (options.security != crate::security::Flavor::Sys)
            .then_some((options.security, server)),
    }
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
