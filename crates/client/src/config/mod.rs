//! Configuration: the dnfstab file, `nfs://` URLs and the mount options both
//! share. Pure parsers: no sockets and no DNS (host names stay strings); only
//! [`load`] and [`find_config`] touch the file system.
//!
//! # dnfstab
//!
//! Oracle's oranfstab syntax, unchanged, plus a few directnfs keys. Looked up
//! by [`find_config`] in the order `--config FILE`, `$DIRECTNFS_TAB`,
//! `./dnfstab`, `/etc/dnfstab`.
//!
//! ```text
//! server: filer1
//! local: 10.231.1.1
//! path: 10.231.1.2
//! local: 10.231.2.1
//! path: 10.231.2.2
//! export: /vol/oradata  mount: /db/oradata
//! export: /vol/redo     mount: /db/redo
//! nfs_version: nfsv3
//! # directnfs keys
//! port: 2049
//! mount_port: 20048
//! connections: 4        # channels per path
//! stable: file_sync     # or unstable
//! ```
//!
//! * Lines are `key: value` (`key:value` too); flags (`dontroute`, `hard`,
//!   `soft`, `resvport`) stand alone. Keys are case-insensitive. `#` starts a
//!   comment; blank lines and surrounding whitespace are ignored.
//! * `server: NAME` opens a block; every other key belongs to the block above
//!   it (a key before the first `server:` is an error). Several blocks may
//!   follow each other, each with several paths and exports.
//! * `path: ADDR` is one network path to the server; a `local: ADDR` just
//!   before it names the local address to send from. A block without `path:`
//!   reaches the server at its `server:` name.
//! * `export: /vol/x  mount: /db/x` (one line) says that local paths under
//!   `/db/x` are files of the server's export `/vol/x`; the longest matching
//!   prefix wins, on whole path components ([`DnfsTab::resolve`]). A mount
//!   prefix may appear only once in the file.
//! * `nfs_version:` is `nfsv3` or `nfsv4.1`; `security_default:`/`security:`
//!   is `sys`, `krb5`, `krb5i` or `krb5p` (Kerberos on either version;
//!   either key sets the whole server block's flavor). `management:` and `community:` are accepted and ignored (listed in
//!   [`DnfsTab::ignored`]). `mnt_timeout:` (seconds) and `dontroute` work as
//!   in oranfstab: a mount keeps trying while the server cannot be reached
//!   (connections refused or timing out, programs not yet registered with
//!   its portmapper) until `mnt_timeout` has passed, 600 s by default
//!   (`Client::mount`).
//! * directnfs keys are those of [`MountOptions`] (table: [`reference::OPTIONS`]):
//!   `port`, `mount_port`, `connections`, `stable`, `timeo` (deciseconds),
//!   `retrans`, `hard`, `soft`, `uid`, `gid`, `gids`, `max_inflight`,
//!   `max_client_inflight`, `write_behind`, `write_behind_client`, `rsize`,
//!   `wsize`, `sockbuf`,
//!   `resvport`. They
//!   apply to the whole server block.
//!
//! Errors name the file, line and token, and suggest a key for a typo:
//! `dnfstab:12: unknown key "conections" (did you mean "connections"?)`.
//!
//! # URLs
//!
//! `nfs://host[:port]/export/path?key=value&...` in the libnfs style, with the
//! same option keys: see [`NfsUrl`]. The export is the longest prefix of
//! the path the server exports (asked with MOUNT EXPORT, else by MNT of
//! each prefix, never taking a file for an export); `nfs://host//path`
//! says it is `/`.
//!
//! # From a name to a target
//!
//! Every front end turns a name into what to mount the same way: an
//! `nfs://` URL with [`Located::from_url`], a local path under a `mount:`
//! prefix with [`DnfsTab::locate`] (after [`absolute`] for a relative
//! one); [`normalize`], [`join`] and [`relative_to`] are the lexical path
//! rules they share.

mod dnfstab;
pub mod kernel;
mod locate;
mod options;
mod paths;
mod pattern;
pub mod reference;
pub(crate) mod target;
mod url;

pub use dnfstab::{
    find_config, load, parse_str, ClassRule, ConfigError, ConfigWarning, DnfsTab, ExportEntry,
    PathEntry, Resolved, ServerEntry, DEFAULT_PATHS, ENV_VAR, MAX_FILE_SIZE,
};
pub use locate::Located;
pub use options::{
    LocalLock, MountOptions, NfsVersion, OptionError, SocketBuffers, StableMode, Xprtsec,
};
pub use paths::{absolute, join, normalize, normalize_bytes, relative_to};
pub use url::{split_by_export, NfsUrl, UrlError, UrlErrorKind};
