//! Mount options: every tunable of a mount, with its default, its bounds and
//! the one parser ([`MountOptions::set`]) shared by `nfs://` URL queries and
//! dnfstab lines, so both accept the same keys with the same validation.
//!
//! Keys are case-insensitive and `-` is the same as `_` (`tcp-syncnt` ==
//! `tcp_syncnt`, `Max-Inflight` == `max_inflight`).
//!
//! The table of every key, its value and its default is
//! [`reference::OPTIONS`](super::reference::OPTIONS) (the book's options page
//! is written from it by `dnfs generate options`).
//!
//! Why these defaults: FILE_SYNC and hard mounts are what a database needs
//! (durable when acknowledged; never a spurious I/O error because a filer
//! failed over). A 10 s RPC timeout with 3 retransmissions notices a dead path
//! in seconds and fails over, where the Linux TCP default (60 s) would stall a
//! database for minutes. 4 channels x 256 in flight per path is far above what
//! one 10/25 GbE link needs for 8 KiB random I/O, yet bounded. 1 MiB is the
//! largest transfer common servers offer (FSINFO rtmax/wtmax). `mnt_timeout`
//! keeps Oracle's 600 s so that a database starting during a filer takeover
//! waits for it rather than failing, and so that an oranfstab behaves as it
//! did; interactive tools should pass a smaller value.

use std::fmt;
use std::time::Duration;

use crate::security::Flavor;

/// NFSv3: which locks stay on this host only (Linux `local_lock=`, whose
/// `nolock` is [`LocalLock::All`]); the others are taken on the server's
/// lock manager (NLM) too, after this host's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum LocalLock {
    /// Every lock goes to the server (the kernel's default).
    #[default]
    None,
    /// `fcntl` (POSIX) locks stay local; `flock` locks go to the server.
    Posix,
    /// `flock` locks stay local; `fcntl` locks go to the server.
    Flock,
    /// Every lock stays local (`nolock`).
    All,
}

impl LocalLock {
    /// True when `fcntl` record locks stay on this host.
    pub fn posix_local(self) -> bool {
        matches!(self, LocalLock::Posix | LocalLock::All)
    }

    /// True when `flock` locks stay on this host.
    pub fn flock_local(self) -> bool {
        matches!(self, LocalLock::Flock | LocalLock::All)
    }
}

/// How WRITEs are made durable (RFC 1813 §3.3.7 `stable_how`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum StableMode {
    /// Every WRITE is FILE_SYNC: durable when acknowledged, nothing to COMMIT.
    #[default]
    FileSync,
    /// WRITE UNSTABLE, then COMMIT on fsync; data is kept by the client and
    /// resent if the server's write verifier changes.
    Unstable,
}

impl fmt::Display for StableMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StableMode::FileSync => "file_sync",
            StableMode::Unstable => "unstable",
        })
    }
}

/// The TCP socket buffers of a channel's connection (`sockbuf=`).
///
/// Measured with `scripts/bench/sockbuf-bench.sh` (`dnfs bench scan` over
/// loopback, 4 workers x 4 reads of 1 MiB, medians of interleaved runs on
/// a busy 2-core machine; re-run it on an idle one for figures): 4 MiB
/// granted in full scanned at least as fast as autotuning, with a few
/// percent less client CPU per GB; a 4 MiB request capped to 208 KiB (a
/// stock `net.core.rmem_max`) scanned at about half the speed with over
/// twice the CPU per GB; over four 200 Mbit/s paths every setting ran at
/// the links' speed. Hence the default ([`Prefer`](Self::Prefer) 4 MiB): a
/// fixed size where the kernel grants it, autotuning where a fixed request
/// would be capped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SocketBuffers {
    /// Leave them to the kernel (`sockbuf=auto`): they start at
    /// `net.ipv4.tcp_wmem`/`tcp_rmem`'s default and grow with the
    /// connection's traffic up to their maximum (`tcp_rmem`'s is 32 MiB on
    /// common distributions).
    Auto,
    /// Ask for this many bytes each (SO_SNDBUF and SO_RCVBUF), before
    /// connecting. This turns the kernel's autotuning off for the socket,
    /// and the kernel silently caps the request at `net.core.wmem_max` /
    /// `rmem_max` (4 MiB on many systems, 208 KiB on some): what it granted
    /// is in the channel statistics and `dnfs check`.
    Fixed(u32),
    /// `sockbuf=prefer:SIZE`: this many bytes in each direction whose
    /// kernel maximum (`net.core.wmem_max` for sending, `rmem_max` for
    /// receiving) allows the request in full, and autotuning in a
    /// direction where it would be capped (a capped fixed buffer is worse
    /// than autotuning). The default, with 4 MiB.
    Prefer(u32),
}

impl fmt::Display for SocketBuffers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SocketBuffers::Auto => f.write_str("auto"),
            SocketBuffers::Fixed(n) => write!(f, "{n}"),
            SocketBuffers::Prefer(n) => write!(f, "prefer:{n}"),
        }
    }
}

/// NFS protocol version, chosen per server (oranfstab `nfs_version:`,
/// URL `vers=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum NfsVersion {
    /// NFS version 3 (RFC 1813), with the MOUNT protocol.
    #[default]
    V3,
    /// NFS version 4.1 (RFC 8881): a session with exactly-once semantics;
    /// paths are pseudo-file-system paths (no MOUNT protocol).
    V41,
}

impl NfsVersion {
    /// The name as `dnfs check` and the statistics show it.
    pub fn name(self) -> &'static str {
        match self {
            NfsVersion::V3 => "nfsv3",
            NfsVersion::V41 => "nfsv4.1",
        }
    }
}

/// Every tunable of a mount. Build one with [`MountOptions::default`], then
/// change it with [`MountOptions::set`] (validated, the same keys as URLs and
/// dnfstab) or by assigning fields and calling [`MountOptions::validate`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MountOptions {
    /// NFS server port; `None` asks the server's portmapper.
    pub nfs_port: Option<u16>,
    /// MOUNT server port; `None` asks the server's portmapper.
    pub mount_port: Option<u16>,
    /// NFSv3: the port of the server's lock manager (NLM v4, program
    /// 100021); `None` asks the server's portmapper.
    pub nlm_port: Option<u16>,
    /// NFSv3: which locks stay on this host only (Linux `local_lock=`);
    /// the others go to the server's lock manager. Default
    /// [`LocalLock::None`]: every lock goes to the server.
    pub local_lock: LocalLock,
    /// Channels (TCP connections) per network path, 1..=64. Default 4. A
    /// client made in a child of `fork` (`Client::after_fork`, NFSv3)
    /// opens one per path at first and the rest once its threads start.
    pub connections: usize,
    /// FILE_SYNC writes (default) or UNSTABLE + COMMIT.
    pub stable: StableMode,
    /// Time to wait for one RPC reply before retransmitting or failing over.
    /// Written `timeo=N` in deciseconds, as in Linux and oranfstab. Default 10 s.
    pub timeo: Duration,
    /// Retransmissions before a soft mount returns an error (and a hard mount
    /// logs that the server is not responding). Default 3.
    pub retrans: u32,
    /// Hard mount (default): I/O waits and retries for as long as it takes.
    /// `soft` sets this to false: I/O fails after `retrans` timeouts.
    pub hard: bool,
    /// AUTH_SYS uid; `None` = the calling process's effective uid.
    pub uid: Option<u32>,
    /// AUTH_SYS gid; `None` = the calling process's effective gid.
    pub gid: Option<u32>,
    /// AUTH_SYS supplementary groups (at most 16, RFC 5531 appendix A);
    /// `None` = the calling process's own.
    pub gids: Option<Vec<u32>>,
    /// RPCs in flight per channel, 1..=65536. Default 256.
    pub max_inflight: usize,
    /// RPCs in flight for the whole client, over all channels,
    /// 1..=1048576: new calls wait for room beyond it (retransmissions of
    /// calls already admitted do not). Default 4096.
    pub max_client_inflight: usize,
    /// Cap on READ size in bytes, 4 KiB..=16 MiB; the effective size is also
    /// capped by the server's FSINFO rtmax. Default 1 MiB.
    pub rsize: u32,
    /// Cap on WRITE size in bytes, 4 KiB..=16 MiB; the effective size is also
    /// capped by the server's FSINFO wtmax. Default 1 MiB.
    pub wsize: u32,
    /// Send from each path's `local:` address with SO_DONTROUTE (oranfstab
    /// `dontroute`). Default off.
    pub dontroute: bool,
    /// The TCP socket buffers of every channel. Default 4 MiB where the
    /// kernel grants it, else autotuning ([`SocketBuffers::Prefer`]).
    pub sockbuf: SocketBuffers,
    /// How long to keep trying to mount while the server cannot be reached
    /// (oranfstab `mnt_timeout:`, in seconds): connections refused, reset
    /// or timing out, programs not registered with its portmapper are
    /// tried again, with pauses of 0.25 s doubling to 5 s, until this much
    /// time has passed (see `Client::mount`). Default 600 s, as Oracle.
    pub mnt_timeout: Duration,
    /// Bind a privileged source port (< 1024), for servers that demand one
    /// (`secure` exports). Needs CAP_NET_BIND_SERVICE. Default off.
    pub resvport: bool,
    /// Protocol version: NFSv3 (default) or NFSv4.1.
    pub nfs_version: NfsVersion,
    /// Security flavor (`sec=`): AUTH_SYS (default), or Kerberos V5
    /// through RPCSEC_GSS (krb5, krb5i, krb5p), on NFSv3 and NFSv4.1.
    pub security: Flavor,
    /// Read-only mount (`ro`): every call that would change the server
    /// fails with EROFS before it is sent. Default off (`rw`).
    pub read_only: bool,
    /// Publish this client's statistics on the process's local endpoint
    /// (`stats=off` keeps it out). Default on.
    pub publish_stats: bool,
    /// NFSv4.1: take the client owner of a dead client of this user on
    /// this host, ending its state at once (`owner_reuse`).
    pub owner_reuse: bool,
    /// NFSv3: keep spare connections for the children this process forks
    /// (`fork_spares`; see `crate::io::spare`). Default on.
    pub fork_spares: bool,
    /// Honour the I/O class of each file ([`crate::File::set_io_class`]):
    /// one channel of each path with two or more is its log lane
    /// (`io_classes`; see `directnfs_engine::class`). Default on.
    pub io_classes: bool,
    /// Hedged reads (`hedge`; see `directnfs_engine::hedge`): an NFSv3
    /// READ outstanding past the lowest recent p95 READ latency of the
    /// paths, clamped to [`hedge_min`](Self::hedge_min)..=[`hedge_max`](Self::hedge_max),
    /// is sent again on another channel (another path first) and the first
    /// reply wins. Never writes, never NFSv4.1. `None` (the default,
    /// `hedge=auto`): on for a mount of two or more paths, off for one path
    /// (where a second copy goes to the same server by the same route and
    /// only adds to its load).
    pub hedge: Option<bool>,
    /// The shortest hedge delay (`hedge_min_ms`):
    /// [`MIN_HEDGE`](Self::MIN_HEDGE)..=[`MAX_HEDGE`](Self::MAX_HEDGE). Default 2 ms.
    pub hedge_min: Duration,
    /// The longest hedge delay, and the delay before enough READs were
    /// timed (`hedge_max_ms`): at least `hedge_min`, at most
    /// [`MAX_HEDGE`](Self::MAX_HEDGE). Default 200 ms.
    pub hedge_max: Duration,
    /// Where the process's alert lines go, when this option sets it; the
    /// last client mounted with it wins. Default: not set (stderr, or
    /// `DIRECTNFS_ALERT_LOG`).
    pub alert_log: Option<crate::alert::Sink>,
    /// Write-behind in unstable mode: bytes of writes per open file that
    /// may be in flight unacknowledged (`write_at` returns once the data is
    /// copied and sent; `fsync` waits for them and COMMITs; see the
    /// `writebehind` module). `0` turns it off; otherwise
    /// [`MIN_WRITE_BEHIND`](Self::MIN_WRITE_BEHIND)..=[`MAX_WRITE_BEHIND`](Self::MAX_WRITE_BEHIND).
    /// Never used in FILE_SYNC mode. On NFSv4.1 each WRITE in flight holds
    /// a session slot, and a write that finds none to spare waits for its
    /// reply. Default 8 MiB.
    pub write_behind: usize,
    /// Write-behind: bytes of the whole client (all its files) that may be
    /// in flight unacknowledged or held for coalescing; a writer past it
    /// waits for replies even where its file's `write_behind` leaves room.
    /// [`MIN_WRITE_BEHIND`](Self::MIN_WRITE_BEHIND)..=[`MAX_WRITE_BEHIND_CLIENT`](Self::MAX_WRITE_BEHIND_CLIENT).
    /// Default 64 MiB.
    pub write_behind_client: usize,
    /// RPC-with-TLS (RFC 9289) on every connection of the mount (`xprtsec=`,
    /// the Linux and libnfs key): NFS, and MOUNT, the portmapper and NLM
    /// too; a server that does not do it on one of them fails the mount.
    /// Default [`Xprtsec::None`].
    pub xprtsec: Xprtsec,
    /// PEM file of the CA(s) that sign the server's certificate
    /// (`tls_ca`); `None`: the system's CA bundle (`SSL_CERT_FILE`, or
    /// the distribution's file).
    pub tls_ca: Option<std::path::PathBuf>,
    /// PEM client certificate chain for `xprtsec=mtls` (`tls_cert`).
    pub tls_cert: Option<std::path::PathBuf>,
    /// PEM private key of `tls_cert` (`tls_key`).
    pub tls_key: Option<std::path::PathBuf>,
    /// The name the server's certificate must carry (`tls_name`); `None`:
    /// the server as the URL or dnfstab names it (a host name or an IP).
    pub tls_name: Option<String>,
    /// TLS from the first byte, without the AUTH_TLS probe
    /// (`tls_direct`): for a server reached through a TLS terminator.
    /// Default off.
    pub tls_direct: bool,
}

/// `xprtsec=`: the transport security of the NFS connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Xprtsec {
    /// Plain TCP (default).
    #[default]
    None,
    /// RPC-with-TLS: the server's certificate is checked; no client
    /// certificate.
    Tls,
    /// RPC-with-TLS with a client certificate (`tls_cert`, `tls_key`).
    Mtls,
}

impl Default for MountOptions {
    fn default() -> Self {
        MountOptions {
            nfs_port: None,
            mount_port: None,
            nlm_port: None,
            local_lock: LocalLock::None,
            connections: 4,
            stable: StableMode::FileSync,
            timeo: Duration::from_secs(10),
            retrans: 3,
            hard: true,
            uid: None,
            gid: None,
            gids: None,
            max_inflight: 256,
            max_client_inflight: 4096,
            rsize: 1 << 20,
            wsize: 1 << 20,
            dontroute: false,
            sockbuf: SocketBuffers::Prefer(4 << 20),
            mnt_timeout: Duration::from_secs(600),
            resvport: false,
            nfs_version: NfsVersion::V3,
            security: Flavor::Sys,
            read_only: false,
            publish_stats: true,
            owner_reuse: true,
            fork_spares: true,
            io_classes: true,
            hedge: None,
            hedge_min: Duration::from_millis(2),
            hedge_max: Duration::from_millis(200),
            alert_log: None,
            write_behind: 8 << 20,
            write_behind_client: 64 << 20,
            xprtsec: Xprtsec::None,
            tls_ca: None,
            tls_cert: None,
            tls_key: None,
            tls_name: None,
            tls_direct: false,
        }
    }
}

/// An option key or value that was not accepted. The message names the key
/// and the value as the user wrote them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OptionError {
    /// Not an option directnfs knows; `suggestion` is the closest known key.
    #[error("unknown key \"{key}\"{}", did_you_mean(*.suggestion))]
    UnknownKey {
        /// The key as written.
        key: String,
        /// The closest known key, if one is close enough to be a typo.
        suggestion: Option<&'static str>,
    },
    /// The key takes a value and none was given.
    #[error("key \"{key}\" needs a value")]
    MissingValue {
        /// The key as written.
        key: String,
    },
    /// The value does not parse or is out of range.
    #[error("invalid value \"{value}\" for key \"{key}\": {reason}")]
    InvalidValue {
        /// The key as written.
        key: String,
        /// The value as written.
        value: String,
        /// What was expected.
        reason: String,
    },
    /// An NFS version other than 3 and 4.1 was asked for.
    #[error(
        "unsupported NFS version \"{value}\" for key \"{key}\": nfsv3 and nfsv4.1 are supported"
    )]
    UnsupportedVersion {
        /// The key as written.
        key: String,
        /// The version as written.
        value: String,
    },
    /// An option of a kernel mount-option string (`options=`) that
    /// directnfs does not take, or whose value is invalid.
    #[error("mount option \"{option}\" rejected: {reason}")]
    RejectedKernelOption {
        /// The option as written (`udp`, `rsize=12`).
        option: String,
        /// Why.
        reason: String,
    },
    /// A security flavor that is none of sys, krb5, krb5i, krb5p.
    #[error(
        "unsupported security flavor \"{value}\" for key \"{key}\": use sys (AUTH_SYS), krb5, \
         krb5i or krb5p"
    )]
    UnsupportedSecurity {
        /// The key as written.
        key: String,
        /// The flavor as written.
        value: String,
    },
}

/// `" (did you mean "x"?)"` or nothing.
pub(crate) fn did_you_mean(suggestion: Option<&str>) -> String {
    match suggestion {
        Some(s) => format!(" (did you mean \"{s}\"?)"),
        None => String::new(),
    }
}

/// What a key does once its name has been normalised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    NfsPort,
    MountPort,
    Connections,
    Stable,
    Timeo,
    Retrans,
    Hard,
    Soft,
    Uid,
    Gid,
    Gids,
    MaxInflight,
    MaxClientInflight,
    WriteBehind,
    WriteBehindClient,
    Rsize,
    Wsize,
    Dontroute,
    Sockbuf,
    MntTimeout,
    Resvport,
    NoResvport,
    Version,
    Security,
    ReadOnly,
    ReadWrite,
    Options,
    Stats,
    OwnerReuse,
    ForkSpares,
    IoClasses,
    Hedge,
    HedgeMin,
    HedgeMax,
    AlertLog,
    NlmPort,
    LocalLock,
    NoLock,
    Lock,
    Xprtsec,
    TlsCa,
    TlsCert,
    TlsKeyFile,
    TlsName,
    TlsDirect,
    Ignored,
}

/// Every accepted key (normalised: lower case, `_` not `-`) and its meaning.
const KEYS: &[(&str, Key)] = &[
    ("port", Key::NfsPort),
    ("nfsport", Key::NfsPort),
    ("nfs_port", Key::NfsPort),
    ("mount_port", Key::MountPort),
    ("mountport", Key::MountPort),
    ("nlm_port", Key::NlmPort),
    ("nlmport", Key::NlmPort),
    ("local_lock", Key::LocalLock),
    ("nolock", Key::NoLock),
    ("lock", Key::Lock),
    ("connections", Key::Connections),
    ("stable", Key::Stable),
    ("timeo", Key::Timeo),
    ("retrans", Key::Retrans),
    ("hard", Key::Hard),
    ("soft", Key::Soft),
    ("uid", Key::Uid),
    ("gid", Key::Gid),
    ("gids", Key::Gids),
    ("max_inflight", Key::MaxInflight),
    ("max_client_inflight", Key::MaxClientInflight),
    ("write_behind", Key::WriteBehind),
    ("write_behind_client", Key::WriteBehindClient),
    ("rsize", Key::Rsize),
    ("wsize", Key::Wsize),
    ("dontroute", Key::Dontroute),
    ("sockbuf", Key::Sockbuf),
    ("mnt_timeout", Key::MntTimeout),
    ("resvport", Key::Resvport),
    ("noresvport", Key::NoResvport),
    ("nfs_version", Key::Version),
    ("version", Key::Version),
    ("vers", Key::Version),
    ("nfsvers", Key::Version),
    ("security", Key::Security),
    ("security_default", Key::Security),
    ("sec", Key::Security),
    ("ro", Key::ReadOnly),
    ("rw", Key::ReadWrite),
    ("options", Key::Options),
    ("stats", Key::Stats),
    ("publish_stats", Key::Stats),
    ("owner_reuse", Key::OwnerReuse),
    ("fork_spares", Key::ForkSpares),
    ("io_classes", Key::IoClasses),
    ("hedge", Key::Hedge),
    ("hedge_min_ms", Key::HedgeMin),
    ("hedge_max_ms", Key::HedgeMax),
    ("alert_log", Key::AlertLog),
    ("xprtsec", Key::Xprtsec),
    ("tls_ca", Key::TlsCa),
    ("tls_cert", Key::TlsCert),
    ("tls_key", Key::TlsKeyFile),
    ("tls_name", Key::TlsName),
    ("tls_direct", Key::TlsDirect),
    // libnfs URL keys that mean nothing here: the driver always reconnects
    // and fails over, never reads ahead (no cache), and connects without a
    // SYN-count knob.
    ("readahead", Key::Ignored),
    ("autoreconnect", Key::Ignored),
    ("tcp_syncnt", Key::Ignored),
];

fn normalise_key(key: &str) -> String {
    key.trim().to_ascii_lowercase().replace('-', "_")
}

fn lookup(key: &str) -> Option<Key> {
    let norm = normalise_key(key);
    KEYS.iter().find(|(name, _)| *name == norm).map(|&(_, k)| k)
}

impl super::kernel::SetByKey for MountOptions {
    fn set_key(&mut self, key: &str, value: &str) -> Result<(), String> {
        self.set(key, value).map_err(|e| e.to_string())
    }
}

impl MountOptions {
    /// Most channels per path.
    pub const MAX_CONNECTIONS: usize = 64;
    /// Most RPCs in flight per channel.
    pub const MAX_INFLIGHT: usize = 65536;
    /// Most RPCs in flight for one client.
    pub const MAX_CLIENT_INFLIGHT: usize = 1 << 20;
    /// Most supplementary groups AUTH_SYS can carry (RFC 5531 appendix A).
    pub const MAX_GIDS: usize = 16;
    /// Smallest `rsize`/`wsize`.
    pub const MIN_IO_SIZE: u32 = 4096;
    /// Largest `rsize`/`wsize`.
    pub const MAX_IO_SIZE: u32 = 16 << 20;
    /// Shortest `timeo`.
    pub const MIN_TIMEO: Duration = Duration::from_millis(100);
    /// Longest `timeo` (as Linux: 600 s).
    pub const MAX_TIMEO: Duration = Duration::from_secs(600);
    /// Most `retrans`.
    pub const MAX_RETRANS: u32 = 1000;
    /// Smallest non-zero `write_behind`.
    pub const MIN_WRITE_BEHIND: usize = 4096;
    /// Largest `write_behind` (1 GiB).
    pub const MAX_WRITE_BEHIND: usize = 1 << 30;
    /// Largest `write_behind_client` (16 GiB).
    pub const MAX_WRITE_BEHIND_CLIENT: usize = 16 << 30;
    /// Smallest fixed `sockbuf`.
    pub const MIN_SOCKBUF: u32 = 4096;
    /// Largest fixed `sockbuf`.
    pub const MAX_SOCKBUF: u32 = 256 << 20;
    /// Shortest `mnt_timeout`.
    pub const MIN_MNT_TIMEOUT: Duration = Duration::from_secs(1);
    /// Longest `mnt_timeout` (a day).
    pub const MAX_MNT_TIMEOUT: Duration = Duration::from_secs(86400);
    /// The shortest `hedge_min_ms` and `hedge_max_ms`.
    pub const MIN_HEDGE: Duration = Duration::from_millis(1);
    /// The longest `hedge_min_ms` and `hedge_max_ms`.
    pub const MAX_HEDGE: Duration = Duration::from_secs(10);

    /// Every key [`set`](Self::set) accepts, aliases included, in normalised
    /// form (lower case, `_`).
    pub fn known_keys() -> impl Iterator<Item = &'static str> {
        KEYS.iter().map(|&(name, _)| name)
    }

    /// True for keys that are accepted for compatibility (libnfs URL keys
    /// `readahead`, `autoreconnect`, `tcp-syncnt`) but have no effect, so a
    /// verbose caller can say so.
    pub fn is_ignored_key(key: &str) -> bool {
        lookup(key) == Some(Key::Ignored)
    }

    /// Sets one option from its textual form, validating it. `value` is `""`
    /// for a bare flag (`hard`, `soft`, `dontroute`, `resvport`); flags also
    /// take `true/false`, `yes/no`, `on/off`, `1/0`. Unknown keys and
    /// out-of-range values are errors naming the key and the value; on error
    /// `self` is unchanged.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), OptionError> {
        let Some(k) = lookup(key) else {
            return Err(OptionError::UnknownKey {
                key: key.to_owned(),
                suggestion: closest(&normalise_key(key), Self::known_keys()),
            });
        };
        let v = value.trim();
        let p = ValueParser { key, value: v };
        match k {
            Key::NfsPort => self.nfs_port = p.port()?,
            Key::MountPort => self.mount_port = p.port()?,
            Key::NlmPort => self.nlm_port = p.port()?,
            Key::LocalLock => self.local_lock = p.local_lock()?,
            Key::NoLock => {
                self.local_lock = if p.flag()? {
                    LocalLock::All
                } else {
                    LocalLock::None
                }
            }
            Key::Lock => {
                self.local_lock = if p.flag()? {
                    LocalLock::None
                } else {
                    LocalLock::All
                }
            }
            Key::Connections => {
                self.connections = p.ranged(1, Self::MAX_CONNECTIONS as u64)? as usize
            }
            Key::Stable => self.stable = p.stable()?,
            Key::Timeo => {
                self.timeo = p.duration(Unit::Deciseconds, Self::MIN_TIMEO, Self::MAX_TIMEO)?
            }
            Key::Retrans => self.retrans = p.ranged(0, Self::MAX_RETRANS.into())? as u32,
            Key::Hard => self.hard = p.flag()?,
            Key::Soft => self.hard = !p.flag()?,
            Key::Uid => self.uid = Some(p.ranged(0, u32::MAX.into())? as u32),
            Key::Gid => self.gid = Some(p.ranged(0, u32::MAX.into())? as u32),
            Key::Gids => self.gids = Some(p.gids()?),
            Key::MaxInflight => {
                self.max_inflight = p.ranged(1, Self::MAX_INFLIGHT as u64)? as usize
            }
            Key::MaxClientInflight => {
                self.max_client_inflight = p.ranged(1, Self::MAX_CLIENT_INFLIGHT as u64)? as usize
            }
            Key::WriteBehind => self.write_behind = p.write_behind()?,
            Key::WriteBehindClient => self.write_behind_client = p.write_behind_client()?,
            Key::Rsize => self.rsize = p.io_size()?,
            Key::Wsize => self.wsize = p.io_size()?,
            Key::Dontroute => self.dontroute = p.flag()?,
            Key::Sockbuf => self.sockbuf = p.sockbuf()?,
            Key::MntTimeout => {
                self.mnt_timeout =
                    p.duration(Unit::Seconds, Self::MIN_MNT_TIMEOUT, Self::MAX_MNT_TIMEOUT)?
            }
            Key::Resvport => self.resvport = p.flag()?,
            Key::NoResvport => self.resvport = !p.flag()?,
            Key::Version => self.nfs_version = p.version()?,
            Key::Security => self.security = p.security()?,
            Key::ReadOnly => self.read_only = p.flag()?,
            Key::ReadWrite => self.read_only = !p.flag()?,
            Key::Options => {
                super::kernel::apply(self, p.required()?).map_err(|e| {
                    OptionError::RejectedKernelOption {
                        option: e.option,
                        reason: e.reason,
                    }
                })?;
            }
            Key::Stats => self.publish_stats = p.flag()?,
            Key::OwnerReuse => self.owner_reuse = p.flag()?,
            Key::ForkSpares => self.fork_spares = p.flag()?,
            Key::IoClasses => self.io_classes = p.flag()?,
            Key::Hedge => self.hedge = p.auto_flag()?,
            Key::HedgeMin => {
                self.hedge_min = Duration::from_millis(p.ranged(
                    Self::MIN_HEDGE.as_millis() as u64,
                    Self::MAX_HEDGE.as_millis() as u64,
                )?)
            }
            Key::HedgeMax => {
                self.hedge_max = Duration::from_millis(p.ranged(
                    Self::MIN_HEDGE.as_millis() as u64,
                    Self::MAX_HEDGE.as_millis() as u64,
                )?)
            }
            Key::AlertLog => {
                self.alert_log =
                    Some(crate::alert::Sink::parse(p.required()?).map_err(|e| p.invalid(e))?)
            }
            Key::Xprtsec => self.xprtsec = p.xprtsec()?,
            Key::TlsCa => self.tls_ca = Some(p.required()?.into()),
            Key::TlsCert => self.tls_cert = Some(p.required()?.into()),
            Key::TlsKeyFile => self.tls_key = Some(p.required()?.into()),
            Key::TlsName => self.tls_name = Some(p.required()?.to_owned()),
            Key::TlsDirect => self.tls_direct = p.flag()?,
            Key::Ignored => {}
        }
        Ok(())
    }

    /// Checks fields that were assigned directly against the bounds
    /// [`set`](Self::set) enforces.
    pub fn validate(&self) -> Result<(), OptionError> {
        let bad = |key: &str, value: String, reason: String| {
            Err(OptionError::InvalidValue {
                key: key.to_owned(),
                value,
                reason,
            })
        };
        if !(1..=Self::MAX_CONNECTIONS).contains(&self.connections) {
            return bad(
                "connections",
                self.connections.to_string(),
                format!("must be between 1 and {}", Self::MAX_CONNECTIONS),
            );
        }
        if !(1..=Self::MAX_INFLIGHT).contains(&self.max_inflight) {
            return bad(
                "max_inflight",
                self.max_inflight.to_string(),
                format!("must be between 1 and {}", Self::MAX_INFLIGHT),
            );
        }
        if !(1..=Self::MAX_CLIENT_INFLIGHT).contains(&self.max_client_inflight) {
            return bad(
                "max_client_inflight",
                self.max_client_inflight.to_string(),
                format!("must be between 1 and {}", Self::MAX_CLIENT_INFLIGHT),
            );
        }
        let durations = [
            ("timeo", self.timeo, Self::MIN_TIMEO, Self::MAX_TIMEO),
            (
                "mnt_timeout",
                self.mnt_timeout,
                Self::MIN_MNT_TIMEOUT,
                Self::MAX_MNT_TIMEOUT,
            ),
            (
                "hedge_min_ms",
                self.hedge_min,
                Self::MIN_HEDGE,
                Self::MAX_HEDGE,
            ),
            (
                "hedge_max_ms",
                self.hedge_max,
                self.hedge_min,
                Self::MAX_HEDGE,
            ),
        ];
        for (key, d, min, max) in durations {
            if d < min || d > max {
                return bad(
                    key,
                    format!("{d:?}"),
                    format!("must be between {min:?} and {max:?}"),
                );
            }
        }
        if self.retrans > Self::MAX_RETRANS {
            return bad(
                "retrans",
                self.retrans.to_string(),
                format!("must be between 0 and {}", Self::MAX_RETRANS),
            );
        }
        if let SocketBuffers::Fixed(n) | SocketBuffers::Prefer(n) = self.sockbuf {
            if !(Self::MIN_SOCKBUF..=Self::MAX_SOCKBUF).contains(&n) {
                return bad("sockbuf", n.to_string(), sockbuf_range());
            }
        }
        for (key, size) in [("rsize", self.rsize), ("wsize", self.wsize)] {
            if !(Self::MIN_IO_SIZE..=Self::MAX_IO_SIZE).contains(&size) {
                return bad(key, size.to_string(), io_size_range());
            }
        }
        if self.write_behind != 0
            && !(Self::MIN_WRITE_BEHIND..=Self::MAX_WRITE_BEHIND).contains(&self.write_behind)
        {
            return bad(
                "write_behind",
                self.write_behind.to_string(),
                write_behind_range(),
            );
        }
        if !(Self::MIN_WRITE_BEHIND..=Self::MAX_WRITE_BEHIND_CLIENT)
            .contains(&self.write_behind_client)
        {
            return bad(
                "write_behind_client",
                self.write_behind_client.to_string(),
                write_behind_client_range(),
            );
        }
        if self.xprtsec == Xprtsec::Mtls && (self.tls_cert.is_none() || self.tls_key.is_none()) {
            return bad(
                "xprtsec",
                "mtls".into(),
                "mtls needs a client certificate: set tls_cert and tls_key".into(),
            );
        }
        if self.xprtsec != Xprtsec::Mtls && (self.tls_cert.is_some() || self.tls_key.is_some()) {
            return bad(
                "tls_cert",
                "(set)".into(),
                "a client certificate is only sent with xprtsec=mtls".into(),
            );
        }
        if let Some(gids) = &self.gids {
            if gids.len() > Self::MAX_GIDS {
                return bad(
                    "gids",
                    format!("{} groups", gids.len()),
                    format!("AUTH_SYS carries at most {} groups", Self::MAX_GIDS),
                );
            }
        }
        Ok(())
    }
}

fn io_size_range() -> String {
    format!(
        "must be between {} (4k) and {} (16m) bytes",
        MountOptions::MIN_IO_SIZE,
        MountOptions::MAX_IO_SIZE
    )
}

fn write_behind_client_range() -> String {
    format!(
        "expected a size between {} (4k) and {} (16g) bytes",
        MountOptions::MIN_WRITE_BEHIND,
        MountOptions::MAX_WRITE_BEHIND_CLIENT
    )
}

fn write_behind_range() -> String {
    format!(
        "expected 0 (off) or a size between {} (4k) and {} (1024m) bytes",
        MountOptions::MIN_WRITE_BEHIND,
        MountOptions::MAX_WRITE_BEHIND
    )
}

fn sockbuf_range() -> String {
    format!(
        "expected auto, a size between {} (4k) and {} (256m) bytes, or prefer:SIZE",
        MountOptions::MIN_SOCKBUF,
        MountOptions::MAX_SOCKBUF
    )
}

/// The unit of a bare number in a duration option.
#[derive(Debug, Clone, Copy)]
enum Unit {
    Deciseconds,
    Seconds,
}

/// Parses one value, producing errors that name the key and the value.
struct ValueParser<'a> {
    key: &'a str,
    value: &'a str,
}

impl ValueParser<'_> {
    fn invalid(&self, reason: impl Into<String>) -> OptionError {
        OptionError::InvalidValue {
            key: self.key.to_owned(),
            value: self.value.to_owned(),
            reason: reason.into(),
        }
    }

    fn required(&self) -> Result<&str, OptionError> {
        if self.value.is_empty() {
            return Err(OptionError::MissingValue {
                key: self.key.to_owned(),
            });
        }
        Ok(self.value)
    }

    /// A decimal number, digits only.
    fn number(&self, text: &str) -> Result<u64, OptionError> {
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(self.invalid("not a number"));
        }
        text.parse::<u64>()
            .map_err(|_| self.invalid("number too large"))
    }

    fn ranged(&self, min: u64, max: u64) -> Result<u64, OptionError> {
        let n = self.number(self.required()?)?;
        if n < min || n > max {
            return Err(self.invalid(format!("must be between {min} and {max}")));
        }
        Ok(n)
    }

    /// A port; 0 means "ask the portmapper", as in Linux `port=0`.
    fn port(&self) -> Result<Option<u16>, OptionError> {
        let n = self.ranged(0, u16::MAX.into())? as u16;
        Ok((n != 0).then_some(n))
    }

    fn xprtsec(&self) -> Result<Xprtsec, OptionError> {
        match self.required()?.to_ascii_lowercase().as_str() {
            "none" => Ok(Xprtsec::None),
            "tls" => Ok(Xprtsec::Tls),
            "mtls" => Ok(Xprtsec::Mtls),
            _ => Err(self.invalid("expected none, tls or mtls")),
        }
    }

    fn local_lock(&self) -> Result<LocalLock, OptionError> {
        match self.value.to_ascii_lowercase().as_str() {
            "none" => Ok(LocalLock::None),
            "posix" => Ok(LocalLock::Posix),
            "flock" => Ok(LocalLock::Flock),
            "all" => Ok(LocalLock::All),
            _ => Err(self.invalid("expected none, posix, flock or all")),
        }
    }

    fn flag(&self) -> Result<bool, OptionError> {
        match self.value.to_ascii_lowercase().as_str() {
            "" | "1" | "true" | "yes" | "on" => Ok(true),
            "0" | "false" | "no" | "off" => Ok(false),
            _ => Err(self.invalid("expected no value or one of true/false, yes/no, on/off, 1/0")),
        }
    }

    /// `auto` (None), or a flag.
    fn auto_flag(&self) -> Result<Option<bool>, OptionError> {
        if self.value.eq_ignore_ascii_case("auto") {
            return Ok(None);
        }
        self.flag().map(Some).map_err(|_| {
            self.invalid("expected auto, or no value or one of true/false, yes/no, on/off, 1/0")
        })
    }

    fn stable(&self) -> Result<StableMode, OptionError> {
        match self.required()?.to_ascii_lowercase().as_str() {
            "file_sync" | "filesync" | "file-sync" | "sync" => Ok(StableMode::FileSync),
            "unstable" => Ok(StableMode::Unstable),
            _ => Err(self.invalid("expected file_sync or unstable")),
        }
    }

    /// A bare number in `unit`, or a number with an explicit `ms` or `s`.
    fn duration(&self, unit: Unit, min: Duration, max: Duration) -> Result<Duration, OptionError> {
        let text = self.required()?.to_ascii_lowercase();
        let (digits, millis_per) = if let Some(d) = text.strip_suffix("ms") {
            (d, 1)
        } else if let Some(d) = text.strip_suffix('s') {
            (d, 1000)
        } else {
            match unit {
                Unit::Deciseconds => (text.as_str(), 100),
                Unit::Seconds => (text.as_str(), 1000),
            }
        };
        let n = self.number(digits.trim_end())?;
        let d = n
            .checked_mul(millis_per)
            .map(Duration::from_millis)
            .ok_or_else(|| self.invalid("number too large"))?;
        if d < min || d > max {
            let unit_note = match unit {
                Unit::Deciseconds => " (a bare number is in deciseconds)",
                Unit::Seconds => " (a bare number is in seconds)",
            };
            return Err(self.invalid(format!("must be between {min:?} and {max:?}{unit_note}")));
        }
        Ok(d)
    }

    /// A byte count, optionally with a `k` (KiB) or `m` (MiB) suffix.
    fn io_size(&self) -> Result<u32, OptionError> {
        let n = self.bytes()?;
        let range = u64::from(MountOptions::MIN_IO_SIZE)..=u64::from(MountOptions::MAX_IO_SIZE);
        if !range.contains(&n) {
            return Err(self.invalid(io_size_range()));
        }
        Ok(n as u32)
    }

    /// `0` or a byte count within the write-behind bounds.
    fn write_behind(&self) -> Result<usize, OptionError> {
        let n = self
            .bytes()
            .map_err(|_| self.invalid(write_behind_range()))?;
        let range = MountOptions::MIN_WRITE_BEHIND as u64..=MountOptions::MAX_WRITE_BEHIND as u64;
        if n != 0 && !range.contains(&n) {
            return Err(self.invalid(write_behind_range()));
        }
        Ok(n as usize)
    }

    /// A byte count within the client-wide write-behind bounds.
    fn write_behind_client(&self) -> Result<usize, OptionError> {
        let n = self
            .bytes()
            .map_err(|_| self.invalid(write_behind_client_range()))?;
        let range =
            MountOptions::MIN_WRITE_BEHIND as u64..=MountOptions::MAX_WRITE_BEHIND_CLIENT as u64;
        if !range.contains(&n) {
            return Err(self.invalid(write_behind_client_range()));
        }
        Ok(n as usize)
    }

    /// `auto`, a byte count as [`io_size`](Self::io_size) takes, or
    /// `prefer:` and a byte count.
    fn sockbuf(&self) -> Result<SocketBuffers, OptionError> {
        let text = self.required()?.to_ascii_lowercase();
        if text == "auto" {
            return Ok(SocketBuffers::Auto);
        }
        let (size, make): (&str, fn(u32) -> SocketBuffers) = match text.strip_prefix("prefer:") {
            Some(size) => (size, SocketBuffers::Prefer),
            None => (&text, SocketBuffers::Fixed),
        };
        let n = self
            .bytes_of(size.trim())
            .map_err(|_| self.invalid(sockbuf_range()))?;
        let range = u64::from(MountOptions::MIN_SOCKBUF)..=u64::from(MountOptions::MAX_SOCKBUF);
        if !range.contains(&n) {
            return Err(self.invalid(sockbuf_range()));
        }
        Ok(make(n as u32))
    }

    /// The value as a number of bytes, with an optional `k` (KiB) or `m`
    /// (MiB) suffix.
    fn bytes(&self) -> Result<u64, OptionError> {
        self.bytes_of(&self.required()?.to_ascii_lowercase())
    }

    /// `text` (lower case) as a number of bytes, with an optional `k`, `m`
    /// or `g` suffix.
    fn bytes_of(&self, text: &str) -> Result<u64, OptionError> {
        let (digits, mult) = if let Some(d) = text.strip_suffix('k') {
            (d, 1u64 << 10)
        } else if let Some(d) = text.strip_suffix('m') {
            (d, 1u64 << 20)
        } else if let Some(d) = text.strip_suffix('g') {
            (d, 1u64 << 30)
        } else {
            (text, 1)
        };
        self.number(digits)?
            .checked_mul(mult)
            .ok_or_else(|| self.invalid("number too large"))
    }

    /// `1,2,3`; empty means "no supplementary groups".
    fn gids(&self) -> Result<Vec<u32>, OptionError> {
        if self.value.is_empty() {
            return Ok(Vec::new());
        }
        let mut gids = Vec::new();
        for part in self.value.split(',') {
            let part = part.trim();
            if gids.len() == MountOptions::MAX_GIDS {
                return Err(self.invalid(format!(
                    "AUTH_SYS carries at most {} groups",
                    MountOptions::MAX_GIDS
                )));
            }
            let n = self
                .number(part)
                .map_err(|_| self.invalid(format!("\"{part}\" is not a group id")))?;
            let gid = u32::try_from(n)
                .map_err(|_| self.invalid(format!("\"{part}\" is not a group id")))?;
            gids.push(gid);
        }
        Ok(gids)
    }

    fn version(&self) -> Result<NfsVersion, OptionError> {
        match self.required()?.to_ascii_lowercase().as_str() {
            "3" | "v3" | "nfsv3" | "nfs3" => Ok(NfsVersion::V3),
            "4.1" | "v4.1" | "nfsv4.1" | "nfs4.1" | "nfsv41" => Ok(NfsVersion::V41),
            _ => Err(OptionError::UnsupportedVersion {
                key: self.key.to_owned(),
                value: self.value.to_owned(),
            }),
        }
    }

    fn security(&self) -> Result<Flavor, OptionError> {
        Flavor::parse(self.required()?).ok_or_else(|| OptionError::UnsupportedSecurity {
            key: self.key.to_owned(),
            value: self.value.to_owned(),
        })
    }
}

/// The candidate closest to `key` by edit distance, if it is close enough to
/// be a typo (one edit for short keys, up to three for long ones).
pub(crate) fn closest<'c>(
    key: &str,
    candidates: impl IntoIterator<Item = &'c str>,
) -> Option<&'c str> {
    let key = normalise_key(key);
    let len = key.chars().count();
    // Long garbage is never a typo of a short key; skip the quadratic work.
    if len == 0 || len > 64 {
        return None;
    }
    let limit = match len {
        0..=3 => 1,
        4..=7 => 2,
        _ => 3,
    };
    candidates
        .into_iter()
        .map(|c| (edit_distance(&key, c), c))
        .filter(|&(d, _)| d <= limit)
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

/// Optimal string alignment distance: insertions, deletions, substitutions
/// and transpositions of adjacent characters each cost one.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let width = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * width];
    for (i, row) in d.chunks_mut(width).enumerate() {
        row[0] = i;
    }
    for (j, cell) in d.iter_mut().take(width).enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[(i - 1) * width + j] + 1)
                .min(d[i * width + j - 1] + 1)
                .min(d[(i - 1) * width + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[(i - 2) * width + j - 2] + 1);
            }
            d[i * width + j] = best;
        }
    }
    d[a.len() * width + b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(pairs: &[(&str, &str)]) -> Result<MountOptions, OptionError> {
        let mut o = MountOptions::default();
        for (k, v) in pairs {
            o.set(k, v)?;
        }
        Ok(o)
    }

    #[test]
    fn defaults_match_documentation() {
        let o = MountOptions::default();
        assert_eq!(o.nfs_port, None);
        assert_eq!(o.mount_port, None);
        assert_eq!(o.connections, 4);
        assert_eq!(o.stable, StableMode::FileSync);
        assert_eq!(o.timeo, Duration::from_secs(10));
        assert_eq!(o.retrans, 3);
        assert!(o.hard);
        assert_eq!((o.uid, o.gid, o.gids.clone()), (None, None, None));
        assert_eq!(o.max_inflight, 256);
        assert_eq!(o.max_client_inflight, 4096);
        assert_eq!((o.rsize, o.wsize), (1 << 20, 1 << 20));
        assert!(!o.dontroute);
        assert_eq!(o.mnt_timeout, Duration::from_secs(600));
        assert_eq!(o.sockbuf, SocketBuffers::Prefer(4 << 20));
        assert!(!o.resvport);
        assert_eq!(o.nfs_version, NfsVersion::V3);
        assert_eq!(o.write_behind, 8 << 20);
        assert_eq!(o.write_behind_client, 64 << 20);
        assert!(!o.read_only);
        assert!(o.publish_stats);
        assert_eq!(o.alert_log, None);
        assert_eq!(o.validate(), Ok(()));
    }

    #[test]
    fn write_behind_client_takes_a_bounded_size() {
        assert_eq!(
            set(&[("write_behind_client", "16m")])
                .unwrap()
                .write_behind_client,
            16 << 20
        );
        for bad in ["0", "100", "17g", "lots", ""] {
            let err = set(&[("write_behind_client", bad)])
                .unwrap_err()
                .to_string();
            assert!(err.contains("write_behind_client"), "{bad}: {err}");
        }
    }

    #[test]
    fn write_behind_takes_zero_or_a_bounded_size() {
        assert_eq!(set(&[("write_behind", "0")]).unwrap().write_behind, 0);
        assert_eq!(
            set(&[("write-behind", "64k")]).unwrap().write_behind,
            64 << 10
        );
        assert_eq!(
            set(&[("write_behind", "1024m")]).unwrap().write_behind,
            1 << 30
        );
        for bad in ["100", "1025m", "lots", "", "-1"] {
            let err = set(&[("write_behind", bad)]).unwrap_err().to_string();
            assert!(err.contains("write_behind"), "{bad}: {err}");
        }
        let o = MountOptions {
            write_behind: 10,
            ..MountOptions::default()
        };
        assert!(o.validate().unwrap_err().to_string().contains("0 (off)"));
    }

    #[test]
    fn every_known_key_accepts_a_sane_value() {
        for key in MountOptions::known_keys() {
            let value = match key {
                "hard" | "soft" | "dontroute" | "resvport" | "noresvport" | "ro" | "rw"
                | "stats" | "publish_stats" | "owner_reuse" | "fork_spares" | "io_classes"
                | "hedge" | "lock" | "nolock" | "tls_direct" => "",
                "local_lock" => "posix",
                "options" => "rw,bg,hard,tcp,vers=3",
                "alert_log" => "off",
                "stable" => "unstable",
                "nfs_version" | "version" | "vers" | "nfsvers" => "3",
                "security" | "security_default" | "sec" => "sys",
                "gids" => "1,2",
                "rsize" | "wsize" | "write_behind" | "write_behind_client" => "65536",
                "sockbuf" => "auto",
                "xprtsec" => "tls",
                "tls_ca" | "tls_name" => "x",
                // A client certificate alone is refused without mtls.
                "tls_cert" | "tls_key" => continue,
                _ => "7",
            };
            let mut o = MountOptions::default();
            assert_eq!(o.set(key, value), Ok(()), "{key}={value}");
            assert_eq!(o.validate(), Ok(()), "{key}={value}");
        }
    }

    #[test]
    fn xprtsec_takes_none_tls_mtls_and_mtls_needs_a_certificate() {
        assert_eq!(set(&[("xprtsec", "TLS")]).unwrap().xprtsec, Xprtsec::Tls);
        assert_eq!(set(&[("xprtsec", "none")]).unwrap().xprtsec, Xprtsec::None);
        let err = set(&[("xprtsec", "ssl")]).unwrap_err().to_string();
        assert!(err.contains("expected none, tls or mtls"), "{err}");
        let o = set(&[("xprtsec", "mtls")]).unwrap();
        assert!(o
            .validate()
            .unwrap_err()
            .to_string()
            .contains("tls_cert and tls_key"));
        let o = set(&[
            ("xprtsec", "mtls"),
            ("tls_cert", "/c.pem"),
            ("tls_key", "/c.key"),
        ])
        .unwrap();
        assert_eq!(o.validate(), Ok(()));
        let o = set(&[("tls_cert", "/c.pem"), ("tls_key", "/c.key")]).unwrap();
        assert!(o
            .validate()
            .unwrap_err()
            .to_string()
            .contains("only sent with xprtsec=mtls"));
        assert!(set(&[("tls_ca", "")]).is_err());
    }

    #[test]
    fn ro_options_stats_and_alert_log_keys_are_parsed() {
        let o = set(&[("options", "ro,hard,timeo=600,tcp")]).unwrap();
        assert!(o.read_only && o.hard);
        assert_eq!(o.timeo, Duration::from_secs(60));
        let o = set(&[("ro", ""), ("rw", "")]).unwrap();
        assert!(!o.read_only);
        let o = set(&[("stats", "off")]).unwrap();
        assert!(!o.publish_stats);
        let o = set(&[("fork_spares", "off")]).unwrap();
        assert!(!o.fork_spares);
        assert!(MountOptions::default().fork_spares);
        let o = set(&[("io_classes", "off")]).unwrap();
        assert!(!o.io_classes);
        assert!(MountOptions::default().io_classes);
        assert!(MountOptions::default().publish_stats);
        let o = set(&[("alert_log", "syslog")]).unwrap();
        assert_eq!(
            o.alert_log,
            Some(crate::alert::Sink::Syslog("/dev/log".into()))
        );
        assert!(matches!(
            set(&[("alert_log", "mail")]),
            Err(OptionError::InvalidValue { .. })
        ));
        assert!(matches!(
            set(&[("options", "rw,udp")]),
            Err(OptionError::RejectedKernelOption { .. })
        ));
    }

    #[test]
    fn lock_options_have_the_kernels_meanings() {
        assert_eq!(MountOptions::default().local_lock, LocalLock::None);
        assert_eq!(set(&[("nolock", "")]).unwrap().local_lock, LocalLock::All);
        assert_eq!(
            set(&[("nolock", ""), ("lock", "")]).unwrap().local_lock,
            LocalLock::None
        );
        let o = set(&[("local_lock", "posix")]).unwrap();
        assert!(o.local_lock.posix_local() && !o.local_lock.flock_local());
        let o = set(&[("local-lock", "FLOCK")]).unwrap();
        assert!(!o.local_lock.posix_local() && o.local_lock.flock_local());
        assert!(set(&[("local_lock", "some")]).is_err());
        assert_eq!(set(&[("nlmport", "4045")]).unwrap().nlm_port, Some(4045));
        assert_eq!(set(&[("nlm_port", "0")]).unwrap().nlm_port, None);
    }

    #[test]
    fn ports_are_set_and_zero_means_portmapper() {
        let o = set(&[("nfsport", "2049"), ("mountport", "20048")]).unwrap();
        assert_eq!((o.nfs_port, o.mount_port), (Some(2049), Some(20048)));
        let o = set(&[("port", "2049"), ("port", "0")]).unwrap();
        assert_eq!(o.nfs_port, None);
        assert!(matches!(
            set(&[("port", "65536")]),
            Err(OptionError::InvalidValue { .. })
        ));
    }

    #[test]
    fn connections_accepts_one_to_sixty_four() {
        assert_eq!(set(&[("connections", "1")]).unwrap().connections, 1);
        assert_eq!(set(&[("connections", "64")]).unwrap().connections, 64);
        for bad in ["0", "65", "-1", "four", "", "1e3"] {
            assert!(set(&[("connections", bad)]).is_err(), "{bad}");
        }
    }

    #[test]
    fn out_of_range_error_names_key_value_and_range() {
        let err = set(&[("connections", "65")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid value \"65\" for key \"connections\": must be between 1 and 64"
        );
    }

    #[test]
    fn retrans_and_mnt_timeout_are_bounded() {
        assert_eq!(set(&[("retrans", "0")]).unwrap().retrans, 0);
        assert_eq!(set(&[("retrans", "1000")]).unwrap().retrans, 1000);
        let err = set(&[("retrans", "1001")]).unwrap_err().to_string();
        assert!(err.contains("must be between 0 and 1000"), "{err}");
        let secs = |v: &str| set(&[("mnt_timeout", v)]).map(|o| o.mnt_timeout);
        assert_eq!(secs("1"), Ok(Duration::from_secs(1)));
        assert_eq!(secs("86400"), Ok(Duration::from_secs(86400)));
        assert_eq!(secs("1500ms"), Ok(Duration::from_millis(1500)));
        for bad in ["0", "999ms", "86401", "-1", "soon"] {
            let err = secs(bad).unwrap_err().to_string();
            assert!(err.contains("mnt_timeout"), "{bad}: {err}");
        }
    }

    #[test]
    fn missing_value_is_reported() {
        let err = set(&[("retrans", "")]).unwrap_err();
        assert_eq!(err.to_string(), "key \"retrans\" needs a value");
    }

    #[test]
    fn stable_accepts_file_sync_and_unstable() {
        for v in ["file_sync", "FILE_SYNC", "filesync", "sync"] {
            assert_eq!(set(&[("stable", v)]).unwrap().stable, StableMode::FileSync);
        }
        assert_eq!(
            set(&[("stable", "unstable")]).unwrap().stable,
            StableMode::Unstable
        );
        assert!(set(&[("stable", "data_sync")]).is_err());
    }

    #[test]
    fn timeo_is_in_deciseconds() {
        assert_eq!(
            set(&[("timeo", "600")]).unwrap().timeo,
            Duration::from_secs(60)
        );
        assert_eq!(
            set(&[("timeo", "5")]).unwrap().timeo,
            Duration::from_millis(500)
        );
        assert!(set(&[("timeo", "0")]).is_err());
        assert!(set(&[("timeo", "6001")]).is_err());
    }

    #[test]
    fn durations_accept_explicit_units() {
        assert_eq!(
            set(&[("timeo", "2s")]).unwrap().timeo,
            Duration::from_secs(2)
        );
        assert_eq!(
            set(&[("timeo", "250ms")]).unwrap().timeo,
            Duration::from_millis(250)
        );
        assert_eq!(
            set(&[("mnt_timeout", "30")]).unwrap().mnt_timeout,
            Duration::from_secs(30)
        );
        assert!(set(&[("timeo", "50ms")]).is_err());
        assert!(set(&[("timeo", "18446744073709551615s")]).is_err());
    }

    #[test]
    fn hedge_is_auto_by_default_and_its_bounds_are_checked() {
        let d = MountOptions::default();
        assert_eq!(d.hedge, None);
        assert_eq!(set(&[("hedge", "auto")]).unwrap().hedge, None);
        assert_eq!(set(&[("hedge", "off")]).unwrap().hedge, Some(false));
        assert!(set(&[("hedge", "sometimes")]).is_err());
        assert_eq!(
            (d.hedge_min, d.hedge_max),
            (Duration::from_millis(2), Duration::from_millis(200))
        );
        let o = set(&[
            ("hedge", "on"),
            ("hedge_min_ms", "5"),
            ("hedge_max_ms", "50"),
        ])
        .unwrap();
        assert_eq!(o.hedge, Some(true));
        assert_eq!(
            (o.hedge_min, o.hedge_max),
            (Duration::from_millis(5), Duration::from_millis(50))
        );
        assert!(set(&[("hedge_min_ms", "0")]).is_err());
        assert!(set(&[("hedge_max_ms", "10001")]).is_err());
        let e = set(&[("hedge_min_ms", "50"), ("hedge_max_ms", "10")])
            .unwrap()
            .validate()
            .unwrap_err();
        assert!(e.to_string().contains("hedge_max_ms"), "{e}");
    }

    #[test]
    fn soft_clears_hard_and_last_flag_wins() {
        assert!(!set(&[("soft", "")]).unwrap().hard);
        assert!(set(&[("soft", ""), ("hard", "")]).unwrap().hard);
        assert!(!set(&[("hard", "false")]).unwrap().hard);
        assert!(set(&[("soft", "no")]).unwrap().hard);
    }

    #[test]
    fn flags_reject_other_values() {
        assert!(matches!(
            set(&[("dontroute", "maybe")]),
            Err(OptionError::InvalidValue { .. })
        ));
        let o = set(&[("dontroute", ""), ("resvport", "on")]).unwrap();
        assert!(o.dontroute && o.resvport);
        assert!(
            !set(&[("resvport", ""), ("noresvport", "")])
                .unwrap()
                .resvport
        );
    }

    #[test]
    fn uid_gid_and_gids_are_parsed() {
        let o = set(&[("uid", "0"), ("gid", "4294967295"), ("gids", "1, 2,3")]).unwrap();
        assert_eq!(o.uid, Some(0));
        assert_eq!(o.gid, Some(u32::MAX));
        assert_eq!(o.gids, Some(vec![1, 2, 3]));
        assert_eq!(set(&[("gids", "")]).unwrap().gids, Some(vec![]));
        assert!(set(&[("uid", "4294967296")]).is_err());
        assert!(set(&[("gids", "1,,2")]).is_err());
        assert!(set(&[("gids", "1,x")]).is_err());
    }

    #[test]
    fn rejects_more_than_16_gids() {
        let sixteen: Vec<String> = (0..16).map(|g| g.to_string()).collect();
        assert!(set(&[("gids", &sixteen.join(","))]).is_ok());
        let seventeen: Vec<String> = (0..17).map(|g| g.to_string()).collect();
        let err = set(&[("gids", &seventeen.join(","))]).unwrap_err();
        assert!(err.to_string().contains("at most 16 groups"), "{err}");
    }

    #[test]
    fn max_client_inflight_is_bounded() {
        assert_eq!(MountOptions::default().max_client_inflight, 4096);
        assert_eq!(
            set(&[("max_client_inflight", "8")])
                .unwrap()
                .max_client_inflight,
            8
        );
        assert!(set(&[("max_client_inflight", "0")]).is_err());
        assert!(set(&[("max_client_inflight", "1048577")]).is_err());
        let o = MountOptions {
            max_client_inflight: 0,
            ..MountOptions::default()
        };
        assert!(o.validate().is_err());
    }

    #[test]
    fn max_inflight_is_bounded() {
        assert_eq!(
            set(&[("max_inflight", "65536")]).unwrap().max_inflight,
            65536
        );
        assert!(set(&[("max_inflight", "0")]).is_err());
        assert!(set(&[("max_inflight", "65537")]).is_err());
    }

    #[test]
    fn io_sizes_accept_suffixes_and_are_bounded() {
        let o = set(&[("rsize", "64k"), ("wsize", "2M")]).unwrap();
        assert_eq!((o.rsize, o.wsize), (65536, 2 << 20));
        assert_eq!(set(&[("rsize", "4096")]).unwrap().rsize, 4096);
        assert_eq!(set(&[("wsize", "16m")]).unwrap().wsize, 16 << 20);
        assert!(set(&[("rsize", "4095")]).is_err());
        assert!(set(&[("wsize", "17m")]).is_err());
        assert!(set(&[("wsize", "99999999999999999m")]).is_err());
    }

    #[test]
    fn sockbuf_is_auto_or_a_bounded_size() {
        assert_eq!(
            set(&[("sockbuf", "auto")]).unwrap().sockbuf,
            SocketBuffers::Auto
        );
        assert_eq!(
            set(&[("sockbuf", "AUTO")]).unwrap().sockbuf,
            SocketBuffers::Auto
        );
        let fixed = |v: &str| set(&[("sockbuf", v)]).map(|o| o.sockbuf);
        assert_eq!(fixed("64k").unwrap(), SocketBuffers::Fixed(65536));
        assert_eq!(fixed("4m").unwrap(), SocketBuffers::Fixed(4 << 20));
        assert_eq!(fixed("4096").unwrap(), SocketBuffers::Fixed(4096));
        assert_eq!(fixed("prefer:4m").unwrap(), SocketBuffers::Prefer(4 << 20));
        assert_eq!(fixed("Prefer: 64K").unwrap(), SocketBuffers::Prefer(65536));
        for bad in [
            "4095",
            "257m",
            "",
            "big",
            "-1",
            "prefer:",
            "prefer:1",
            "prefer:auto",
        ] {
            let e = fixed(bad).unwrap_err().to_string();
            assert!(e.contains("sockbuf"), "{bad}: {e}");
        }
        assert!(fixed("1")
            .unwrap_err()
            .to_string()
            .contains("expected auto"));
        let o = MountOptions {
            sockbuf: SocketBuffers::Fixed(1),
            ..MountOptions::default()
        };
        assert!(o.validate().is_err());
        assert_eq!(SocketBuffers::Auto.to_string(), "auto");
        assert_eq!(SocketBuffers::Fixed(65536).to_string(), "65536");
        let default = MountOptions::default().sockbuf;
        assert_eq!(default.to_string(), "prefer:4194304");
        assert_eq!(fixed(&default.to_string()).unwrap(), default);
    }

    #[test]
    fn accepts_nfsv3_and_nfsv41_and_rejects_the_rest() {
        for v in ["4", "nfsv4", "4.0", "4.2", "pNFS", "2"] {
            let err = set(&[("nfs_version", v)]).unwrap_err();
            assert!(matches!(err, OptionError::UnsupportedVersion { .. }), "{v}");
            assert!(err.to_string().contains("nfsv3 and nfsv4.1 are supported"));
        }
        for v in ["3", "nfsv3", "NFSv3", "v3"] {
            assert_eq!(set(&[("version", v)]).unwrap().nfs_version, NfsVersion::V3);
        }
        for v in ["4.1", "nfsv4.1", "NFSv4.1", "v4.1", "nfsv41"] {
            assert_eq!(set(&[("vers", v)]).unwrap().nfs_version, NfsVersion::V41);
        }
    }

    #[test]
    fn takes_security_krb5_and_refuses_unknown_flavors() {
        for (name, flavor) in [
            ("krb5", Flavor::Krb5),
            ("krb5i", Flavor::Krb5i),
            ("KRB5P", Flavor::Krb5p),
        ] {
            assert_eq!(set(&[("security", name)]).unwrap().security, flavor);
        }
        assert_eq!(MountOptions::default().security, Flavor::Sys);
        let err = set(&[("sec", "krb6")]).unwrap_err();
        assert!(matches!(err, OptionError::UnsupportedSecurity { .. }));
        assert!(set(&[("sec", "sys")]).is_ok());
        assert!(set(&[("sec", "AUTH_SYS")]).is_ok());
    }

    #[test]
    fn libnfs_keys_are_accepted_and_ignored() {
        let o = set(&[
            ("readahead", "131072"),
            ("autoreconnect", "-1"),
            ("tcp-syncnt", "3"),
        ])
        .unwrap();
        assert_eq!(o, MountOptions::default());
        assert!(MountOptions::is_ignored_key("TCP-SYNCNT"));
        assert!(!MountOptions::is_ignored_key("connections"));
    }

    #[test]
    fn keys_are_case_insensitive_and_dash_equals_underscore() {
        let o = set(&[("Max-Inflight", "8"), ("CONNECTIONS", "2")]).unwrap();
        assert_eq!((o.max_inflight, o.connections), (8, 2));
    }

    #[test]
    fn unknown_key_suggests_closest() {
        let err = set(&[("conections", "4")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown key \"conections\" (did you mean \"connections\"?)"
        );
        let err = set(&[("retarns", "4")]).unwrap_err();
        assert!(err.to_string().contains("\"retrans\""), "{err}");
    }

    #[test]
    fn unknown_key_without_close_match_has_no_suggestion() {
        let err = set(&[("frobnicate", "1")]).unwrap_err();
        assert_eq!(err.to_string(), "unknown key \"frobnicate\"");
    }

    #[test]
    fn failed_set_leaves_options_unchanged() {
        let mut o = MountOptions::default();
        assert!(o.set("gids", "1,2,x").is_err());
        assert_eq!(o, MountOptions::default());
    }

    #[test]
    fn validate_catches_directly_assigned_out_of_range_fields() {
        let bad = [
            MountOptions {
                connections: 0,
                ..MountOptions::default()
            },
            MountOptions {
                rsize: 1,
                ..MountOptions::default()
            },
            MountOptions {
                gids: Some(vec![0; 17]),
                ..MountOptions::default()
            },
            MountOptions {
                timeo: Duration::ZERO,
                ..MountOptions::default()
            },
        ];
        for o in bad {
            assert!(o.validate().is_err(), "{o:?}");
        }
    }

    #[test]
    fn edit_distance_counts_transpositions_as_one() {
        assert_eq!(edit_distance("connections", "conenctions"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("abc", "abc"), 0);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
