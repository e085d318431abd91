//! `nfs://` URLs in the libnfs style:
//! `nfs://host[:port]/export/path/file?key=value&key=value`.
//!
//! * `host` is a name, an IPv4 address or a bracketed IPv6 address
//!   (`[fe80::1%25eth0]`); it is kept as a string (no DNS lookup here).
//! * `port` is the NFS port, the same as `?nfsport=`; giving both with
//!   different values is an error.
//! * The path is percent-decoded and normalised: duplicate slashes collapse,
//!   `.` components and a trailing slash are dropped, `..` is an error. So
//!   `nfs://host/file` and `nfs://host//file` both name `/file`, and
//!   `nfs://host` names `/`.
//! * Which prefix of the path is the export is only known after asking the
//!   server (see [`NfsUrl::export_candidates`] and [`split_by_export`]),
//!   unless the URL says so: a path written with `//` after the host
//!   (`nfs://host//file`, libnfs's way of naming a file in an export of
//!   `/`) sets [`NfsUrl::export`] to `/`, and nothing is guessed.
//! * The query holds [`MountOptions`] keys (see
//!   [`MountOptions::set`](super::MountOptions::set)), percent-decoded; a key
//!   without `=` is a flag (`?soft`). libnfs's `readahead`, `autoreconnect`
//!   and `tcp-syncnt` are accepted and ignored, and listed in
//!   [`NfsUrl::ignored`].
//! * User info (`user@host`) is not supported; a `#` must be written `%23`.

use std::fmt;
use std::net::Ipv6Addr;
use std::str::FromStr;

use super::options::{MountOptions, OptionError};

/// A parsed `nfs://` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NfsUrl {
    /// Server: a host name, an IPv4 address, or an IPv6 address without its
    /// brackets (with `%zone` if one was given).
    pub host: String,
    /// The NFS port from the URL (`host:port` or `?nfsport=`); the same value
    /// as `options.nfs_port`. `None` asks the portmapper.
    pub port: Option<u16>,
    /// Full, normalised path: export and file, always starting with `/`.
    pub path: String,
    /// The export, when the URL names it: `Some("/")` for a path written
    /// `//...`; `None` leaves it to be found by asking the server.
    pub export: Option<String>,
    /// Options from the query, applied over the defaults.
    pub options: MountOptions,
    /// Query keys that were accepted but have no effect, as written.
    pub ignored: Vec<String>,
}

/// A URL that could not be parsed: `invalid nfs URL "...": <reason>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid nfs URL \"{url}\": {kind}")]
pub struct UrlError {
    /// The URL as given.
    pub url: String,
    /// What is wrong with it.
    pub kind: UrlErrorKind,
}

/// What is wrong with an `nfs://` URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UrlErrorKind {
    /// The URL does not start with `nfs://`.
    #[error("must start with \"nfs://\"")]
    Scheme,
    /// Nothing between `nfs://` and the path.
    #[error("missing host")]
    MissingHost,
    /// The host is not a name, an IPv4 address or a bracketed IPv6 address.
    #[error("invalid host \"{host}\": {reason}")]
    InvalidHost {
        /// The host as written.
        host: String,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// The port is not a number from 1 to 65535.
    #[error("invalid port \"{0}\": must be a number from 1 to 65535")]
    InvalidPort(String),
    /// `user@host` was given.
    #[error("user names (\"user@host\") are not supported")]
    UserInfo,
    /// A `#` appeared; file names with `#` must be written `%23`.
    #[error("\"#\" is not allowed (write \"%23\" for a \"#\" in a file name)")]
    Fragment,
    /// A `%` not followed by two hex digits.
    #[error("invalid percent-escape \"{0}\"")]
    BadPercent(String),
    /// The path (after percent-decoding) is unusable.
    #[error("invalid path: {0}")]
    InvalidPath(&'static str),
    /// A query key or value was rejected.
    #[error("{0}")]
    Option(#[from] OptionError),
    /// `host:port` and `?nfsport=` disagree.
    #[error("port {authority} in the host part conflicts with nfsport={}", show_port(*.query))]
    PortConflict {
        /// Port in `host:port`.
        authority: u16,
        /// NFS port after applying the query (`None` = portmapper).
        query: Option<u16>,
    },
}

fn show_port(p: Option<u16>) -> String {
    p.map_or_else(|| "0".to_owned(), |p| p.to_string())
}

impl NfsUrl {
    /// Parses `nfs://host[:port]/path?key=value&...`. Pure: no DNS, no I/O.
    pub fn parse(input: &str) -> Result<NfsUrl, UrlError> {
        parse_inner(input).map_err(|kind| UrlError {
            url: input.to_owned(),
            kind,
        })
    }

    /// Every prefix of [`path`](Self::path) that could be the export, from the
    /// longest (the whole path) to `/`: the order in which to try MOUNT on a
    /// server that cannot list its exports. Only [`export`](Self::export)
    /// when the URL names it.
    ///
    /// `/vol/a/f` gives `["/vol/a/f", "/vol/a", "/vol", "/"]`; `//vol/a/f`
    /// gives `["/"]`.
    pub fn export_candidates(&self) -> Vec<String> {
        if let Some(export) = &self.export {
            return vec![export.clone()];
        }
        let mut out = Vec::new();
        let mut p = self.path.as_str();
        while p != "/" && !p.is_empty() {
            out.push(p.to_owned());
            p = match p.rfind('/') {
                Some(0) | None => "/",
                Some(i) => &p[..i],
            };
        }
        out.push("/".to_owned());
        out
    }
}

impl FromStr for NfsUrl {
    type Err = UrlError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        NfsUrl::parse(s)
    }
}

/// `nfs://host[:port]/path`, percent-encoded so that it parses back to the
/// same host, port, path and export (`//path` for an export of `/`).
/// Options are not shown.
impl fmt::Display for NfsUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("nfs://")?;
        if self.host.contains(':') {
            write!(f, "[{}]", self.host.replace('%', "%25"))?;
        } else {
            f.write_str(&self.host)?;
        }
        if let Some(port) = self.port {
            write!(f, ":{port}")?;
        }
        if self.export.as_deref() == Some("/") {
            f.write_str("/")?;
        }
        for &b in self.path.as_bytes() {
            if b.is_ascii_alphanumeric() || b"-._~/!$&'()*+,;=:@".contains(&b) {
                write!(f, "{}", b as char)?;
            } else {
                write!(f, "%{b:02X}")?;
            }
        }
        Ok(())
    }
}

/// The part of `path` below `export`, if `export` is a prefix of `path` on a
/// component boundary: `/` for the export's root, otherwise `/rest/of/path`.
/// Both are expected normalised (as [`NfsUrl::path`] and dnfstab `mount:`
/// values are); a trailing slash on `export` is tolerated.
///
/// `split_by_export("/vol/a/f", "/vol/a") == Some("/f")`, but
/// `split_by_export("/vol/ab", "/vol/a") == None`.
pub fn split_by_export<'a>(path: &'a str, export: &str) -> Option<&'a str> {
    let export = export.trim_end_matches('/');
    let rest = path.strip_prefix(export)?;
    if rest.is_empty() || rest == "/" {
        return Some("/");
    }
    rest.starts_with('/').then_some(rest)
}

/// Normalises an absolute path: collapses `//`, drops `.` components and a
/// trailing `/`. `..` is an error unless `resolve_dotdot`, in which case it
/// removes the previous component (stopping at `/`).
pub(crate) fn normalize_path(raw: &str, resolve_dotdot: bool) -> Result<String, &'static str> {
    if !raw.starts_with('/') {
        return Err("must be absolute (start with \"/\")");
    }
    if raw.contains('\0') {
        return Err("contains a NUL byte");
    }
    if !resolve_dotdot && raw.split('/').any(|part| part == "..") {
        return Err("\"..\" components are not allowed");
    }
    Ok(super::paths::normalize(raw))
}

fn parse_inner(input: &str) -> Result<NfsUrl, UrlErrorKind> {
    let rest = strip_scheme(input.trim()).ok_or(UrlErrorKind::Scheme)?;
    if rest.contains('#') {
        return Err(UrlErrorKind::Fragment);
    }
    let (before_query, query) = match rest.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (rest, None),
    };
    let (authority, raw_path) = match before_query.find('/') {
        Some(i) => before_query.split_at(i),
        None => (before_query, "/"),
    };
    let (host, authority_port) = parse_authority(authority)?;

    let decoded = percent_decode(raw_path)?;
    let path = normalize_path(&decoded, false).map_err(UrlErrorKind::InvalidPath)?;
    // `//` as written (not `%2F`): an empty first component, libnfs's
    // spelling of a path in an export of `/`.
    let export = raw_path.starts_with("//").then(|| "/".to_owned());

    let mut options = MountOptions {
        nfs_port: authority_port,
        ..MountOptions::default()
    };
    let mut ignored = Vec::new();
    for item in query.unwrap_or("").split('&').filter(|s| !s.is_empty()) {
        let (k, v) = item.split_once('=').unwrap_or((item, ""));
        let key = percent_decode(k)?;
        let value = percent_decode(v)?;
        options.set(&key, &value)?;
        if MountOptions::is_ignored_key(&key) {
            ignored.push(key);
        }
    }
    if let Some(a) = authority_port {
        if options.nfs_port != Some(a) {
            return Err(UrlErrorKind::PortConflict {
                authority: a,
                query: options.nfs_port,
            });
        }
    }
    Ok(NfsUrl {
        host,
        port: options.nfs_port,
        path,
        export,
        options,
        ignored,
    })
}

fn strip_scheme(s: &str) -> Option<&str> {
    const SCHEME: &str = "nfs://";
    let head = s.get(..SCHEME.len())?;
    head.eq_ignore_ascii_case(SCHEME)
        .then(|| &s[SCHEME.len()..])
}

/// `host`, `host:port`, `[v6]` or `[v6]:port`.
fn parse_authority(authority: &str) -> Result<(String, Option<u16>), UrlErrorKind> {
    if authority.contains('@') {
        return Err(UrlErrorKind::UserInfo);
    }
    if authority.is_empty() {
        return Err(UrlErrorKind::MissingHost);
    }
    let (host, port) = if let Some(inner) = authority.strip_prefix('[') {
        let (addr, after) = inner.split_once(']').ok_or(UrlErrorKind::InvalidHost {
            host: authority.to_owned(),
            reason: "missing \"]\"",
        })?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':').ok_or(UrlErrorKind::InvalidHost {
                host: authority.to_owned(),
                reason: "unexpected text after \"]\"",
            })?),
        };
        (parse_ipv6(addr)?, port)
    } else {
        let (name, port) = match authority.split_once(':') {
            Some((n, p)) => (n, Some(p)),
            None => (authority, None),
        };
        if port.is_some_and(|p| p.contains(':')) {
            return Err(UrlErrorKind::InvalidHost {
                host: authority.to_owned(),
                reason: "an IPv6 address must be in brackets: nfs://[addr]:port/",
            });
        }
        (parse_name(name)?, port)
    };
    let port = match port {
        None => None,
        Some(p) => Some(parse_port(p)?),
    };
    Ok((host, port))
}

fn parse_port(p: &str) -> Result<u16, UrlErrorKind> {
    let bad = || UrlErrorKind::InvalidPort(p.to_owned());
    if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    match p.parse::<u16>() {
        Ok(0) | Err(_) => Err(bad()),
        Ok(n) => Ok(n),
    }
}

/// A host name or IPv4 address: letters, digits, `-`, `_`, `.`.
fn parse_name(name: &str) -> Result<String, UrlErrorKind> {
    if name.is_empty() {
        return Err(UrlErrorKind::MissingHost);
    }
    let ok = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.';
    if !name.bytes().all(ok) {
        return Err(UrlErrorKind::InvalidHost {
            host: name.to_owned(),
            reason: "only letters, digits, \"-\", \"_\" and \".\" are allowed",
        });
    }
    Ok(name.to_owned())
}

/// The inside of `[...]`: an IPv6 address, optionally with a `%25zone`
/// (RFC 6874; a bare `%zone` is accepted too). Returned without brackets and
/// with the zone as `%zone`.
fn parse_ipv6(inner: &str) -> Result<String, UrlErrorKind> {
    let (addr, zone) = match inner.split_once('%') {
        Some((a, z)) => (a, Some(z.strip_prefix("25").unwrap_or(z))),
        None => (inner, None),
    };
    if addr.parse::<Ipv6Addr>().is_err() {
        return Err(UrlErrorKind::InvalidHost {
            host: format!("[{inner}]"),
            reason: "not an IPv6 address",
        });
    }
    match zone {
        None => Ok(addr.to_owned()),
        Some(z)
            if !z.is_empty()
                && z.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)) =>
        {
            Ok(format!("{addr}%{z}"))
        }
        Some(_) => Err(UrlErrorKind::InvalidHost {
            host: format!("[{inner}]"),
            reason: "invalid IPv6 zone",
        }),
    }
}

/// Decodes `%XX` escapes; the result must be UTF-8. `+` stays `+`.
fn percent_decode(s: &str) -> Result<String, UrlErrorKind> {
    if !s.contains('%') {
        return Ok(s.to_owned());
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'%' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        let hex = bytes.get(i + 1..i + 3);
        let value = hex
            .and_then(|h| std::str::from_utf8(h).ok())
            .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match value {
            Some(v) => out.push(v),
            None => {
                let end = s.len().min(i + 3);
                let snippet = s.get(i..end).unwrap_or("%");
                return Err(UrlErrorKind::BadPercent(snippet.to_owned()));
            }
        }
        i += 3;
    }
    String::from_utf8(out)
        .map_err(|_| UrlErrorKind::InvalidPath("not UTF-8 after percent-decoding"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::StableMode;
    use proptest::prelude::*;

    fn kind(url: &str) -> UrlErrorKind {
        NfsUrl::parse(url).unwrap_err().kind
    }

    #[test]
    fn parses_host_port_path() {
        let u = NfsUrl::parse("nfs://filer1:2049/vol/oradata/users01.dbf").unwrap();
        assert_eq!(u.host, "filer1");
        assert_eq!(u.port, Some(2049));
        assert_eq!(u.options.nfs_port, Some(2049));
        assert_eq!(u.path, "/vol/oradata/users01.dbf");
    }

    #[test]
    fn url_with_double_slash_names_root_export_file() {
        for url in ["nfs://host//file", "nfs://host/file", "nfs://host///file/"] {
            assert_eq!(NfsUrl::parse(url).unwrap().path, "/file", "{url}");
        }
    }

    #[test]
    fn double_slash_says_the_export_is_root_and_nothing_else_does() {
        for url in [
            "nfs://host//file",
            "nfs://h:2049///file/",
            "nfs://h//",
            "nfs://h//a/b?uid=1",
        ] {
            let u = NfsUrl::parse(url).unwrap();
            assert_eq!(u.export.as_deref(), Some("/"), "{url}");
            assert_eq!(u.export_candidates(), ["/"], "{url}");
        }
        for url in [
            "nfs://host/file",
            "nfs://h/",
            "nfs://h",
            "nfs://h/%2Ffile",
            "nfs://h?uid=1",
        ] {
            assert_eq!(
                NfsUrl::parse(url).unwrap_or_else(|e| panic!("{e}")).export,
                None,
                "{url}"
            );
        }
        let u = NfsUrl::parse("nfs://h//a/b").unwrap();
        assert_eq!(u.path, "/a/b");
        assert_eq!(u.to_string(), "nfs://h//a/b");
        assert_eq!(NfsUrl::parse(&u.to_string()).unwrap(), u);
    }

    #[test]
    fn url_without_path_names_root() {
        assert_eq!(NfsUrl::parse("nfs://host").unwrap().path, "/");
        assert_eq!(NfsUrl::parse("nfs://host/").unwrap().path, "/");
        assert_eq!(NfsUrl::parse("nfs://host?uid=0").unwrap().path, "/");
    }

    #[test]
    fn scheme_is_case_insensitive_and_other_schemes_are_rejected() {
        assert!(NfsUrl::parse("NFS://host/x").is_ok());
        assert_eq!(kind("http://host/x"), UrlErrorKind::Scheme);
        assert_eq!(kind("nfs:/host/x"), UrlErrorKind::Scheme);
        assert_eq!(kind("/db/x"), UrlErrorKind::Scheme);
    }

    #[test]
    fn parses_bracketed_ipv6_host() {
        let u = NfsUrl::parse("nfs://[fd00::2]:2050/vol").unwrap();
        assert_eq!((u.host.as_str(), u.port), ("fd00::2", Some(2050)));
        let u = NfsUrl::parse("nfs://[fe80::1%25eth0]/vol").unwrap();
        assert_eq!(u.host, "fe80::1%eth0");
        assert!(matches!(
            kind("nfs://[zz::1]/x"),
            UrlErrorKind::InvalidHost { .. }
        ));
        assert!(matches!(
            kind("nfs://[::1/x"),
            UrlErrorKind::InvalidHost { .. }
        ));
    }

    #[test]
    fn rejects_unbracketed_ipv6() {
        assert!(matches!(
            kind("nfs://fd00::2/vol"),
            UrlErrorKind::InvalidHost { .. }
        ));
    }

    #[test]
    fn rejects_bad_hosts_and_ports() {
        assert_eq!(kind("nfs:///vol"), UrlErrorKind::MissingHost);
        assert_eq!(kind("nfs://:2049/vol"), UrlErrorKind::MissingHost);
        assert_eq!(kind("nfs://user@host/vol"), UrlErrorKind::UserInfo);
        assert!(matches!(
            kind("nfs://ho st/vol"),
            UrlErrorKind::InvalidHost { .. }
        ));
        for port in ["", "0", "65536", "x", "+1"] {
            assert_eq!(
                kind(&format!("nfs://host:{port}/vol")),
                UrlErrorKind::InvalidPort(port.to_owned())
            );
        }
    }

    #[test]
    fn percent_decodes_path_and_query() {
        let u = NfsUrl::parse("nfs://h/vol/my%20file%2Bx?uid=%31").unwrap();
        assert_eq!(u.path, "/vol/my file+x");
        assert_eq!(u.options.uid, Some(1));
        assert_eq!(
            kind("nfs://h/vol/%zz"),
            UrlErrorKind::BadPercent("%zz".to_owned())
        );
        assert_eq!(
            kind("nfs://h/vol/%4"),
            UrlErrorKind::BadPercent("%4".to_owned())
        );
        assert!(matches!(
            kind("nfs://h/vol/%ff"),
            UrlErrorKind::InvalidPath(_)
        ));
        assert!(matches!(
            kind("nfs://h/vol/%00"),
            UrlErrorKind::InvalidPath(_)
        ));
    }

    #[test]
    fn rejects_dotdot_and_drops_dot() {
        assert!(matches!(
            kind("nfs://h/vol/../etc"),
            UrlErrorKind::InvalidPath(_)
        ));
        assert_eq!(NfsUrl::parse("nfs://h/./vol/.").unwrap().path, "/vol");
    }

    #[test]
    fn rejects_fragment() {
        assert_eq!(kind("nfs://h/vol/a#b"), UrlErrorKind::Fragment);
        assert_eq!(NfsUrl::parse("nfs://h/vol/a%23b").unwrap().path, "/vol/a#b");
    }

    #[test]
    fn query_options_are_applied() {
        let u = NfsUrl::parse(
            "nfs://h/vol/f?nfsport=2049&mountport=20048&uid=1000&gid=100&version=3\
             &connections=8&stable=unstable&timeo=20&retrans=5&soft&max_inflight=64\
             &rsize=64k&wsize=128k&resvport&gids=1,2,3&&",
        )
        .unwrap();
        let o = &u.options;
        assert_eq!(u.port, Some(2049));
        assert_eq!(o.mount_port, Some(20048));
        assert_eq!((o.uid, o.gid), (Some(1000), Some(100)));
        assert_eq!(o.connections, 8);
        assert_eq!(o.stable, StableMode::Unstable);
        assert_eq!(o.timeo, std::time::Duration::from_secs(2));
        assert_eq!(o.retrans, 5);
        assert!(!o.hard);
        assert_eq!(o.max_inflight, 64);
        assert_eq!((o.rsize, o.wsize), (65536, 131072));
        assert!(o.resvport);
        assert_eq!(o.gids, Some(vec![1, 2, 3]));
    }

    #[test]
    fn libnfs_only_keys_are_listed_as_ignored() {
        let u = NfsUrl::parse("nfs://h/v?readahead=1024&autoreconnect=-1&tcp-syncnt=2").unwrap();
        assert_eq!(u.ignored, ["readahead", "autoreconnect", "tcp-syncnt"]);
        assert_eq!(u.options, MountOptions::default());
    }

    #[test]
    fn rejects_version_4() {
        let err = NfsUrl::parse("nfs://h/v?version=4").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid nfs URL \"nfs://h/v?version=4\": unsupported NFS version \"4\" \
             for key \"version\": nfsv3 and nfsv4.1 are supported"
        );
    }

    #[test]
    fn unknown_query_key_suggests_closest() {
        let err = NfsUrl::parse("nfs://h/v?conections=4").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid nfs URL \"nfs://h/v?conections=4\": unknown key \"conections\" \
             (did you mean \"connections\"?)"
        );
    }

    #[test]
    fn conflicting_ports_are_rejected() {
        assert_eq!(
            kind("nfs://h:2049/v?nfsport=2050"),
            UrlErrorKind::PortConflict {
                authority: 2049,
                query: Some(2050)
            }
        );
        assert!(NfsUrl::parse("nfs://h:2049/v?nfsport=2049").is_ok());
        let u = NfsUrl::parse("nfs://h/v?port=2050").unwrap();
        assert_eq!(u.port, Some(2050));
    }

    #[test]
    fn export_candidates_go_from_longest_to_root() {
        let u = NfsUrl::parse("nfs://h/vol/a/f").unwrap();
        assert_eq!(u.export_candidates(), ["/vol/a/f", "/vol/a", "/vol", "/"]);
        let u = NfsUrl::parse("nfs://h/").unwrap();
        assert_eq!(u.export_candidates(), ["/"]);
    }

    #[test]
    fn split_by_export_respects_component_boundaries() {
        assert_eq!(split_by_export("/vol/a/f", "/vol/a"), Some("/f"));
        assert_eq!(split_by_export("/vol/a/f", "/vol/a/"), Some("/f"));
        assert_eq!(split_by_export("/vol/a", "/vol/a"), Some("/"));
        assert_eq!(split_by_export("/vol/ab", "/vol/a"), None);
        assert_eq!(split_by_export("/file", "/"), Some("/file"));
        assert_eq!(split_by_export("/", "/"), Some("/"));
        assert_eq!(split_by_export("/vol", "/vol/a"), None);
    }

    #[test]
    fn display_is_canonical() {
        let u = NfsUrl::parse("nfs://[fe80::1%25eth0]:2049/./vol//a%20b/?uid=1").unwrap();
        assert_eq!(u.to_string(), "nfs://[fe80::1%25eth0]:2049/vol/a%20b");
        assert_eq!(NfsUrl::parse(&u.to_string()).unwrap().path, u.path);
    }

    proptest! {
        #[test]
        fn parser_never_panics(s in any::<String>()) {
            let _ = NfsUrl::parse(&s);
        }

        #[test]
        fn parser_never_panics_after_scheme(s in "[a-z0-9:/\\[\\]%@?&=#.,_-]{0,64}") {
            let _ = NfsUrl::parse(&format!("nfs://{s}"));
        }

        #[test]
        fn display_round_trips(
            host in "[a-z][a-z0-9.-]{0,20}",
            port in proptest::option::of(1u16..),
            parts in proptest::collection::vec("[^/\u{0}]{1,12}", 0..5),
            root_export in any::<bool>(),
        ) {
            let parts: Vec<String> =
                parts.into_iter().filter(|p| p != "." && p != "..").collect();
            let path = format!("/{}", parts.join("/"));
            let u = NfsUrl {
                host,
                port,
                path: normalize_path(&path, false).map_err(TestCaseError::fail)?,
                export: root_export.then(|| "/".to_owned()),
                options: MountOptions::default(),
                ignored: Vec::new(),
            };
            let back = NfsUrl::parse(&u.to_string()).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(&back.host, &u.host);
            prop_assert_eq!(back.port, u.port);
            prop_assert_eq!(&back.path, &u.path);
            prop_assert_eq!(&back.export, &u.export);
        }
    }
}
