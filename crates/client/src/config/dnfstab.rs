//! The dnfstab file: Oracle's oranfstab syntax, unchanged, plus directnfs
//! option keys. See the [module documentation](super) for the syntax.
//!
//! Parsing is pure ([`parse_str`]); [`load`] and [`find_config`] add the file
//! system: the lookup order, a size limit, and a warning when the file can be
//! changed by someone other than its owner.

use std::fmt;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use directnfs_engine::IoClass;

use super::options::{closest, did_you_mean, MountOptions, OptionError};
use super::url::{normalize_path, split_by_export};

/// Environment variable naming the config file.
pub const ENV_VAR: &str = "DIRECTNFS_TAB";

/// Files tried, in order, when neither `--config` nor [`ENV_VAR`] is given.
/// Both are optional.
pub const DEFAULT_PATHS: [&str; 2] = ["./dnfstab", "/etc/dnfstab"];

/// Largest config file read; anything bigger is a mistake (or `/dev/zero`).
pub const MAX_FILE_SIZE: u64 = 1 << 20;

/// A parsed dnfstab.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnfsTab {
    /// The file it was read from (as given, for messages).
    pub source: PathBuf,
    /// Server blocks, in file order.
    pub servers: Vec<ServerEntry>,
    /// Keys accepted for compatibility but without effect (`management:`,
    /// `community:`, libnfs-only keys): `(line, key as written)`, so a verbose
    /// caller can say they were ignored.
    pub ignored: Vec<(usize, String)>,
    /// Problems that do not stop the file from being used (see
    /// [`ConfigWarning`]). [`parse_str`] never adds any; [`load`] may.
    pub warnings: Vec<ConfigWarning>,
}

/// One `server:` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerEntry {
    /// The `server:` name.
    pub name: String,
    /// Network paths to the server, in file order. Never empty: a block
    /// without `path:` gets one path whose address is the server name.
    pub paths: Vec<PathEntry>,
    /// `export:`/`mount:` pairs, in file order (may be empty: the server can
    /// still be reached by URL with these paths and options).
    pub exports: Vec<ExportEntry>,
    /// Options for every path and export of this server. Options apply to the
    /// whole block wherever they appear in it.
    pub options: MountOptions,
    /// `log_files:`, `data_files:` and `bulk_files:` patterns, in file
    /// order: the I/O class `dnfs run` gives a file of this server when it
    /// opens it ([`ServerEntry::io_class_of`]).
    pub io_classes: Vec<ClassRule>,
    /// Line of the `server:` key.
    pub line: usize,
}

/// One `log_files:`, `data_files:` or `bulk_files:` pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassRule {
    /// The class of the files it matches.
    pub class: IoClass,
    /// The pattern, matched against the whole host path (`*` also crosses
    /// `/`, `?` is one character).
    pub pattern: String,
    /// Its line.
    pub line: usize,
}

impl ClassRule {
    /// True if `host_path` (normalised, absolute) matches the pattern.
    pub fn matches(&self, host_path: &str) -> bool {
        super::pattern::matches(&self.pattern, host_path)
    }
}

impl ServerEntry {
    /// The class of the first `*_files:` pattern that `host_path` (normalised,
    /// absolute) matches, in file order; `None` when none does (the file
    /// keeps the default, `data`).
    pub fn io_class_of(&self, host_path: &str) -> Option<IoClass> {
        self.io_classes
            .iter()
            .find(|r| r.matches(host_path))
            .map(|r| r.class)
    }
}

/// One network path: a `path:` address and the optional `local:` before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathEntry {
    /// Local address to bind (`local:`), if any.
    pub local: Option<String>,
    /// Server address for this path (`path:`), a name or an IP address.
    pub server: String,
    /// Line of the `path:` key (of `server:` for the implicit path).
    pub line: usize,
}

/// One `export: X mount: Y` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportEntry {
    /// Path exported by the server (normalised).
    pub export: String,
    /// Local prefix under which the export's files are named (normalised).
    pub mount: String,
    /// Line of the pair.
    pub line: usize,
}

/// The result of [`DnfsTab::resolve`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved<'a> {
    /// Server block owning the mount prefix.
    pub server: &'a ServerEntry,
    /// The export whose `mount:` prefix matched.
    pub export: &'a ExportEntry,
    /// The path below the export: `/` for the export's root, else `/a/b`.
    pub rest: String,
}

/// A config problem that does not prevent its use.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigWarning {
    /// The file is writable by its group or by others: they could redirect
    /// a database's I/O to another server.
    WritableByOthers {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
}

impl fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigWarning::WritableByOthers { path, mode } => write!(
                f,
                "{}: mode {:04o} lets group or others modify it and redirect database I/O; \
                 use chmod go-w",
                path.display(),
                mode & 0o7777
            ),
        }
    }
}

/// A config file that cannot be used. Every parse error names the file, the
/// line and the offending token: `dnfstab:12: unknown key "conections" (did
/// you mean "connections"?)`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A syntax or value error at a line.
    #[error("{}:{line}: {message}", file.display())]
    Parse {
        /// The file.
        file: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The offending token as written (key, value or word).
        token: String,
        /// What is wrong.
        message: String,
    },
    /// A file named by `--config` or `$DIRECTNFS_TAB` does not exist.
    #[error("{}: config file (from {origin}) does not exist", path.display())]
    NotFound {
        /// The file.
        path: PathBuf,
        /// `"--config"` or `"$DIRECTNFS_TAB"`.
        origin: &'static str,
    },
    /// The file exists but could not be read.
    #[error("{}: cannot read config file: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The file is larger than [`MAX_FILE_SIZE`].
    #[error("{}: config file is larger than {MAX_FILE_SIZE} bytes", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
    },
    /// A `local:` address that is not an IP address (found when a target
    /// is built from its server block, [`DnfsTab::locate`]).
    #[error("{}:{line}: local address \"{address}\" is not an IP address", file.display())]
    LocalAddress {
        /// The file.
        file: PathBuf,
        /// Line of the `path:` the address belongs to.
        line: usize,
        /// The address as written.
        address: String,
    },
    /// A name that no `mount:` prefix of the file covers, where only NFS
    /// names make sense.
    #[error("{name}: not under any mount: prefix of {}", file.display())]
    NotUnderMount {
        /// The name as given.
        name: String,
        /// The file.
        file: PathBuf,
    },
    /// No dnfstab was found ([`find_config`]) where a name needs one.
    #[error(
        "no dnfstab found (${ENV_VAR}, {}): a name must be an nfs:// URL or a path under a mount: prefix",
        DEFAULT_PATHS.join(", ")
    )]
    Missing,
    /// Mount options (of a block or a URL) that are invalid or do not go
    /// together ([`MountOptions::validate`]).
    #[error(transparent)]
    Options(#[from] OptionError),
}

impl DnfsTab {
    /// Finds the export serving `path`: the longest `mount:` prefix that
    /// matches on whole path components (`/db/oradata2/x` does not match
    /// `/db/oradata`). `path` must be absolute; `//` and `.` are ignored and
    /// `..` is resolved lexically. `None` if no mount prefix matches (a local
    /// path).
    pub fn resolve(&self, path: &str) -> Option<Resolved<'_>> {
        let path = normalize_path(path, true).ok()?;
        let mut best: Option<(&ServerEntry, &ExportEntry, &str)> = None;
        for server in &self.servers {
            for export in &server.exports {
                let Some(rest) = split_by_export(&path, &export.mount) else {
                    continue;
                };
                if best.is_none_or(|(_, b, _)| export.mount.len() > b.mount.len()) {
                    best = Some((server, export, rest));
                }
            }
        }
        best.map(|(server, export, rest)| Resolved {
            server,
            export,
            rest: rest.to_owned(),
        })
    }

    /// The server block called `name` (case-insensitive), e.g. to use its
    /// paths and options for an `nfs://name/...` URL.
    pub fn server(&self, name: &str) -> Option<&ServerEntry> {
        self.servers
            .iter()
            .find(|s| s.name.eq_ignore_ascii_case(name))
    }
}

/// Finds and loads the config file, in the order `--config FILE` (`explicit`,
/// must exist), `$DIRECTNFS_TAB` (must exist if set and not empty),
/// `./dnfstab`, `/etc/dnfstab` (both optional). `Ok(None)` when there is no
/// config at all. The first file found is the only one read.
pub fn find_config(explicit: Option<&Path>) -> Result<Option<DnfsTab>, ConfigError> {
    let env = std::env::var_os(ENV_VAR);
    let defaults = DEFAULT_PATHS.map(Path::new);
    find_config_in(explicit, env.as_deref().map(Path::new), &defaults)
}

/// [`find_config`] with the environment and default list as parameters.
fn find_config_in(
    explicit: Option<&Path>,
    env: Option<&Path>,
    defaults: &[&Path],
) -> Result<Option<DnfsTab>, ConfigError> {
    let required = [(explicit, "--config"), (env, "$DIRECTNFS_TAB")];
    for (path, origin) in required {
        let Some(path) = path.filter(|p| !p.as_os_str().is_empty()) else {
            continue;
        };
        return match load(path) {
            Err(ConfigError::Io { path, source })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                Err(ConfigError::NotFound { path, origin })
            }
            other => other.map(Some),
        };
    }
    for path in defaults {
        match load(path) {
            Err(ConfigError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                continue
            }
            other => return other.map(Some),
        }
    }
    Ok(None)
}

/// Reads and parses one file, adding a warning if group or others can write
/// it.
pub fn load(path: &Path) -> Result<DnfsTab, ConfigError> {
    let io_err = |source| ConfigError::Io {
        path: path.to_owned(),
        source,
    };
    let file = crate::fdfloor::making(|| File::open(path)).map_err(io_err)?;
    let meta = file.metadata().map_err(io_err)?;
    if meta.is_dir() {
        return Err(io_err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "is a directory",
        )));
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_SIZE + 1)
        .read_to_end(&mut bytes)
        .map_err(io_err)?;
    if bytes.len() as u64 > MAX_FILE_SIZE {
        return Err(ConfigError::TooLarge {
            path: path.to_owned(),
        });
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        ConfigError::Parse {
            file: path.to_owned(),
            line: 1 + valid.iter().filter(|&&b| b == b'\n').count(),
            token: String::new(),
            message: "not valid UTF-8 text".to_owned(),
        }
    })?;
    let mut tab = parse_str(&text, path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode();
        if mode & 0o022 != 0 {
            tab.warnings.push(ConfigWarning::WritableByOthers {
                path: path.to_owned(),
                mode,
            });
        }
    }
    Ok(tab)
}

/// Parses dnfstab text; `source` is only used in messages and
/// [`DnfsTab::source`]. Pure and total: any input gives a value or an error,
/// never a panic (a fuzz entry point).
pub fn parse_str(text: &str, source: &Path) -> Result<DnfsTab, ConfigError> {
    let mut parser = Parser {
        source,
        tab: DnfsTab {
            source: source.to_owned(),
            servers: Vec::new(),
            ignored: Vec::new(),
            warnings: Vec::new(),
        },
        current: None,
    };
    for (index, raw) in text.lines().enumerate() {
        parser.line(index + 1, raw)?;
    }
    parser.finish_server()?;
    Ok(parser.tab)
}

/// Structural keys of the file, besides [`MountOptions`] keys; used for
/// "did you mean" suggestions too.
const FILE_KEYS: &[&str] = &[
    "server",
    "local",
    "path",
    "export",
    "mount",
    "management",
    "community",
    "log_files",
    "data_files",
    "bulk_files",
];

/// One `key: value` (or bare `flag`) on a line.
#[derive(Debug, Clone, Copy)]
struct Pair<'a> {
    /// Key as written, without the colon.
    key: &'a str,
    /// Value, if any.
    value: Option<&'a str>,
}

/// A server block being built.
#[derive(Debug)]
struct Block {
    entry: ServerEntry,
    /// A `local:` waiting for its `path:`: (address, line).
    pending_local: Option<(String, usize)>,
}

/// Where an error is: the file and the line.
#[derive(Debug, Clone, Copy)]
struct Ctx<'a> {
    file: &'a Path,
    line: usize,
}

impl Ctx<'_> {
    fn error(&self, token: &str, message: impl Into<String>) -> ConfigError {
        ConfigError::Parse {
            file: self.file.to_owned(),
            line: self.line,
            token: token.to_owned(),
            message: message.into(),
        }
    }

    fn value<'v>(&self, pair: Pair<'v>) -> Result<&'v str, ConfigError> {
        pair.value
            .filter(|v| !v.is_empty())
            .ok_or_else(|| self.error(pair.key, format!("key \"{}\" needs a value", pair.key)))
    }

    /// A host name or IP address (IPv6 optionally in brackets, which are
    /// dropped). No DNS lookup.
    fn address(&self, pair: Pair<'_>) -> Result<String, ConfigError> {
        let value = self.value(pair)?;
        let addr = value
            .strip_prefix('[')
            .and_then(|v| v.strip_suffix(']'))
            .unwrap_or(value);
        let ok = |b: u8| b.is_ascii_alphanumeric() || b"-_.:%".contains(&b);
        if addr.is_empty() || !addr.bytes().all(ok) {
            return Err(self.error(
                value,
                format!(
                    "invalid address \"{value}\" for \"{}:\" (expected a host name or an IP address)",
                    pair.key
                ),
            ));
        }
        Ok(addr.to_owned())
    }

    /// An absolute path value, normalised.
    fn dir(&self, pair: Pair<'_>) -> Result<String, ConfigError> {
        let value = self.value(pair)?;
        normalize_path(value, false).map_err(|why| {
            self.error(
                value,
                format!("invalid path \"{value}\" for \"{}:\": {why}", pair.key),
            )
        })
    }
}

struct Parser<'s> {
    source: &'s Path,
    tab: DnfsTab,
    current: Option<Block>,
}

impl Parser<'_> {
    fn line(&mut self, line: usize, raw: &str) -> Result<(), ConfigError> {
        let cx = Ctx {
            file: self.source,
            line,
        };
        let text = raw.split('#').next().unwrap_or("").trim();
        if text.is_empty() {
            return Ok(());
        }
        let pairs = tokenize(text).map_err(|(token, msg)| cx.error(token, msg))?;
        let mut pairs = pairs.into_iter();
        while let Some(pair) = pairs.next() {
            let key = pair.key.to_ascii_lowercase().replace('-', "_");
            if key == "server" {
                self.start_server(cx, pair)?;
                continue;
            }
            let Some(block) = self.current.as_mut() else {
                return Err(cx.error(
                    pair.key,
                    format!(
                        "\"{}\" before the first \"server:\" line (every key belongs to a server block)",
                        pair.key
                    ),
                ));
            };
            match key.as_str() {
                "local" => block.local(cx, pair)?,
                "path" => block.path(cx, pair)?,
                "export" => block.export(cx, &self.tab.servers, pair, pairs.next())?,
                "mount" => {
                    return Err(cx.error(
                        pair.key,
                        "\"mount:\" must follow \"export:\" on the same line",
                    ))
                }
                "management" | "community" => self.tab.ignored.push((line, pair.key.to_owned())),
                "log_files" => block.class_rule(cx, pair, IoClass::Log)?,
                "data_files" => block.class_rule(cx, pair, IoClass::Data)?,
                "bulk_files" => block.class_rule(cx, pair, IoClass::Bulk)?,
                _ => {
                    block.option(cx, pair)?;
                    if MountOptions::is_ignored_key(pair.key) {
                        self.tab.ignored.push((line, pair.key.to_owned()));
                    }
                }
            }
        }
        Ok(())
    }

    fn start_server(&mut self, cx: Ctx<'_>, pair: Pair<'_>) -> Result<(), ConfigError> {
        let name = cx.address(pair)?;
        self.finish_server()?;
        if let Some(prev) = self.tab.server(&name) {
            let msg = format!("server \"{name}\" is already defined on line {}", prev.line);
            return Err(cx.error(&name, msg));
        }
        self.current = Some(Block {
            entry: ServerEntry {
                name,
                paths: Vec::new(),
                exports: Vec::new(),
                options: MountOptions::default(),
                io_classes: Vec::new(),
                line: cx.line,
            },
            pending_local: None,
        });
        Ok(())
    }

    /// Closes the current block: checks it and gives it its implicit path.
    fn finish_server(&mut self) -> Result<(), ConfigError> {
        let Some(block) = self.current.take() else {
            return Ok(());
        };
        if let Some((local, line)) = block.pending_local {
            let cx = Ctx {
                file: self.source,
                line,
            };
            let msg = format!("\"local: {local}\" is not followed by a \"path:\"");
            return Err(cx.error(&local, msg));
        }
        let mut entry = block.entry;
        // Keys that only make sense together (tls_cert with xprtsec=mtls)
        // are checked once the server's block is whole.
        entry.options.validate()?;
        if entry.paths.is_empty() {
            entry.paths.push(PathEntry {
                local: None,
                server: entry.name.clone(),
                line: entry.line,
            });
        }
        self.tab.servers.push(entry);
        Ok(())
    }
}

impl Block {
    fn local(&mut self, cx: Ctx<'_>, pair: Pair<'_>) -> Result<(), ConfigError> {
        let addr = cx.address(pair)?;
        if let Some((prev, prev_line)) = &self.pending_local {
            let msg = format!(
                "\"local: {addr}\" follows \"local: {prev}\" (line {prev_line}) without a \"path:\" between them"
            );
            return Err(cx.error(&addr, msg));
        }
        self.pending_local = Some((addr, cx.line));
        Ok(())
    }

    fn path(&mut self, cx: Ctx<'_>, pair: Pair<'_>) -> Result<(), ConfigError> {
        let server = cx.address(pair)?;
        let local = self.pending_local.take().map(|(addr, _)| addr);
        self.entry.paths.push(PathEntry {
            local,
            server,
            line: cx.line,
        });
        Ok(())
    }

    /// `export: X` and the pair after it, which must be `mount: Y`. Mount
    /// prefixes must be unique across `done` servers and this one.
    fn export(
        &mut self,
        cx: Ctx<'_>,
        done: &[ServerEntry],
        export: Pair<'_>,
        mount: Option<Pair<'_>>,
    ) -> Result<(), ConfigError> {
        let export_path = cx.dir(export)?;
        let Some(mount) = mount.filter(|m| m.key.eq_ignore_ascii_case("mount")) else {
            let msg = format!(
                "\"export: {export_path}\" needs \"mount: /local/prefix\" after it on the same line"
            );
            return Err(cx.error(&export_path, msg));
        };
        let mount_path = cx.dir(mount)?;
        if mount_path == "/" {
            return Err(cx.error(
                &mount_path,
                "\"mount: /\" would send every local path to NFS; use a prefix such as /db",
            ));
        }
        let duplicate = done
            .iter()
            .chain(std::iter::once(&self.entry))
            .flat_map(|s| s.exports.iter().map(move |e| (s, e)))
            .find(|(_, e)| e.mount == mount_path);
        if let Some((server, prev)) = duplicate {
            let msg = format!(
                "mount prefix \"{mount_path}\" is already used on line {} (server \"{}\")",
                prev.line, server.name
            );
            return Err(cx.error(&mount_path, msg));
        }
        self.entry.exports.push(ExportEntry {
            export: export_path,
            mount: mount_path,
            line: cx.line,
        });
        Ok(())
    }

    /// Any other key: a [`MountOptions`] key, validated by
    /// [`MountOptions::set`]; unknown keys get a suggestion from every key the
    /// file accepts.
    /// `log_files: PATTERN` (or `data_files:`, `bulk_files:`).
    fn class_rule(
        &mut self,
        cx: Ctx<'_>,
        pair: Pair<'_>,
        class: IoClass,
    ) -> Result<(), ConfigError> {
        let Some(pattern) = pair.value else {
            let msg = format!(
                "\"{}:\" needs a path pattern (\"{}: */pg_wal/*\")",
                pair.key, pair.key
            );
            return Err(cx.error(pair.key, msg));
        };
        super::pattern::check(pattern)
            .map_err(|why| cx.error(pattern, format!("\"{}:\" {why}", pair.key)))?;
        self.entry.io_classes.push(ClassRule {
            class,
            pattern: pattern.to_owned(),
            line: cx.line,
        });
        Ok(())
    }

    fn option(&mut self, cx: Ctx<'_>, pair: Pair<'_>) -> Result<(), ConfigError> {
        let value = pair.value.unwrap_or("");
        match self.entry.options.set(pair.key, value) {
            Ok(()) => Ok(()),
            Err(OptionError::UnknownKey { key, .. }) => {
                let suggestion = closest(
                    &key,
                    FILE_KEYS.iter().copied().chain(MountOptions::known_keys()),
                );
                let msg = format!("unknown key \"{key}\"{}", did_you_mean(suggestion));
                Err(cx.error(&key, msg))
            }
            Err(e) => {
                let token = match &e {
                    OptionError::MissingValue { key } => key.as_str(),
                    _ => value,
                };
                Err(cx.error(token, e.to_string()))
            }
        }
    }
}

/// Splits a comment-free, trimmed line into `key: value` pairs and bare
/// flags. `key:value` and `key: value` are both accepted; a value is never a
/// word that starts with a known `key:`. On error returns (token, message).
fn tokenize(text: &str) -> Result<Vec<Pair<'_>>, (&str, String)> {
    let mut words = text.split_whitespace().peekable();
    let mut pairs = Vec::new();
    while let Some(word) = words.next() {
        let (key, inline) = match word.split_once(':') {
            Some((k, v)) => (k, Some(v)),
            None => (word, None),
        };
        if !is_key_word(key) {
            return Err((
                word,
                format!("unexpected \"{word}\" (expected \"key: value\" or a flag such as \"dontroute\")"),
            ));
        }
        let value = match inline {
            None => None,
            Some(v) if !v.is_empty() => Some(v),
            Some(_) => match words.peek() {
                Some(next) if !looks_like_key(next) => words.next(),
                _ => None,
            },
        };
        pairs.push(Pair { key, value });
    }
    Ok(pairs)
}

fn is_key_word(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// `key:` or `key:value` with a key this file knows: the start of the next
/// pair rather than a value. (An IPv6 address such as `fd00::1` starts with
/// a word that is no key.)
fn looks_like_key(word: &str) -> bool {
    word.split_once(':').is_some_and(|(k, _)| {
        let k = k.to_ascii_lowercase().replace('-', "_");
        FILE_KEYS.contains(&k.as_str()) || MountOptions::known_keys().any(|known| known == k)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{NfsVersion, StableMode};
    use proptest::prelude::*;
    use std::time::Duration;

    /// The example of docs/design.md "Configuration".
    const DESIGN_EXAMPLE: &str = "\
server: filer1
local: 10.231.1.1
path: 10.231.1.2
local: 10.231.2.1
path: 10.231.2.2
export: /vol/oradata  mount: /db/oradata
export: /vol/redo     mount: /db/redo
nfs_version: nfsv3
# directnfs keys
port: 2049
mount_port: 20048
connections: 4        # channels per path
stable: file_sync     # or unstable
";

    fn parse(text: &str) -> Result<DnfsTab, ConfigError> {
        parse_str(text, Path::new("dnfstab"))
    }

    fn err(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    #[test]
    fn parses_design_example() {
        let tab = parse(DESIGN_EXAMPLE).unwrap();
        assert_eq!(tab.servers.len(), 1);
        let s = &tab.servers[0];
        assert_eq!((s.name.as_str(), s.line), ("filer1", 1));
        assert_eq!(
            s.paths,
            [
                PathEntry {
                    local: Some("10.231.1.1".into()),
                    server: "10.231.1.2".into(),
                    line: 3
                },
                PathEntry {
                    local: Some("10.231.2.1".into()),
                    server: "10.231.2.2".into(),
                    line: 5
                },
            ]
        );
        assert_eq!(
            s.exports,
            [
                ExportEntry {
                    export: "/vol/oradata".into(),
                    mount: "/db/oradata".into(),
                    line: 6
                },
                ExportEntry {
                    export: "/vol/redo".into(),
                    mount: "/db/redo".into(),
                    line: 7
                },
            ]
        );
        assert_eq!(s.options.nfs_port, Some(2049));
        assert_eq!(s.options.mount_port, Some(20048));
        assert_eq!(s.options.connections, 4);
        assert_eq!(s.options.stable, StableMode::FileSync);
        assert!(tab.ignored.is_empty() && tab.warnings.is_empty());
    }

    #[test]
    fn path_without_local_is_accepted() {
        let tab = parse("server: f\npath: 10.0.0.1\npath: 10.0.0.2\n").unwrap();
        let paths = &tab.servers[0].paths;
        assert_eq!(paths.len(), 2);
        assert!(paths.iter().all(|p| p.local.is_none()));
    }

    #[test]
    fn local_applies_to_next_path_only() {
        let tab = parse("server: f\npath: a\nlocal: l\npath: b\npath: c\n").unwrap();
        let locals: Vec<_> = tab.servers[0]
            .paths
            .iter()
            .map(|p| p.local.as_deref())
            .collect();
        assert_eq!(locals, [None, Some("l"), None]);
    }

    #[test]
    fn local_without_path_is_rejected() {
        assert_eq!(
            err("server: f\nlocal: 10.0.0.1\nexport: /v mount: /m\n"),
            "dnfstab:2: \"local: 10.0.0.1\" is not followed by a \"path:\""
        );
        assert!(err("server: f\nlocal: a\nlocal: b\npath: c\n").starts_with("dnfstab:3: "));
        assert!(err("server: f\nlocal: a\nserver: g\n").starts_with("dnfstab:2: "));
    }

    #[test]
    fn server_without_path_uses_its_name() {
        let tab = parse("server: filer9\nexport: /v mount: /m\n").unwrap();
        assert_eq!(
            tab.servers[0].paths,
            [PathEntry {
                local: None,
                server: "filer9".into(),
                line: 1
            }]
        );
    }

    #[test]
    fn several_servers_with_several_exports() {
        let tab = parse(
            "server: a\nexport: /v1 mount: /db/1\nexport: /v2 mount: /db/2\n\
             server: b\nconnections: 8\nexport: /v3 mount: /db/3\n",
        )
        .unwrap();
        assert_eq!(tab.servers.len(), 2);
        assert_eq!(tab.servers[0].exports.len(), 2);
        assert_eq!(tab.servers[0].options.connections, 4);
        assert_eq!(tab.servers[1].options.connections, 8);
        assert_eq!(tab.servers[1].line, 4);
        assert_eq!(tab.server("B").map(|s| s.name.as_str()), Some("b"));
    }

    #[test]
    fn takes_security_krb5_and_rejects_unknown_flavors() {
        let tab = parse("server: f\nsecurity_default: krb5i\n").expect("krb5i");
        assert_eq!(
            tab.servers[0].options.security,
            crate::security::Flavor::Krb5i
        );
        assert_eq!(
            err("server: f\nsecurity_default: krb9\n"),
            "dnfstab:2: unsupported security flavor \"krb9\" for key \"security_default\": \
             use sys (AUTH_SYS), krb5, krb5i or krb5p"
        );
        assert!(err("server: f\nexport: /v mount: /m security: krb9\n").starts_with("dnfstab:2: "));
        assert!(parse("server: f\nexport: /v mount: /m security: krb5p\n").is_ok());
        assert!(
            parse("server: f\nsecurity_default: sys\nexport: /v mount: /m security: sys\n").is_ok()
        );
    }

    #[test]
    fn rejects_nfsv4_0_and_takes_nfsv41_per_server() {
        let e = err("server: f\nnfs_version: nfsv4\n");
        assert!(e.starts_with("dnfstab:2: "), "{e}");
        assert!(e.contains("nfsv3 and nfsv4.1 are supported"), "{e}");
        let tab = parse("server: a\nnfs_version: nfsv4.1\nserver: b\n").unwrap();
        assert_eq!(tab.servers[0].options.nfs_version, NfsVersion::V41);
        assert_eq!(tab.servers[1].options.nfs_version, NfsVersion::V3);
        match parse("server: f\nnfs_version: pNFS\n").unwrap_err() {
            ConfigError::Parse { token, line, .. } => {
                assert_eq!((token.as_str(), line), ("pNFS", 2))
            }
            other => panic!("{other}"),
        }
    }

    #[test]
    fn file_patterns_give_the_first_matching_class_in_file_order() {
        let tab = parse(
            "server: pg\nexport: /vol mount: /db/pg\n\
             log_files: */pg_wal/*\nbulk_files: /db/pg/backup/*\n\
             data_files: */pg_wal/archive_status/*  log_files: */ib_logfile?\n\
             server: other\nexport: /v2 mount: /db/o\n",
        )
        .unwrap();
        let pg = &tab.servers[0];
        let classes: Vec<_> = pg
            .io_classes
            .iter()
            .map(|r| (r.class, r.pattern.as_str(), r.line))
            .collect();
        assert_eq!(
            classes,
            [
                (IoClass::Log, "*/pg_wal/*", 3),
                (IoClass::Bulk, "/db/pg/backup/*", 4),
                (IoClass::Data, "*/pg_wal/archive_status/*", 5),
                (IoClass::Log, "*/ib_logfile?", 5),
            ]
        );
        assert_eq!(
            pg.io_class_of("/db/pg/data/pg_wal/000000010000000000000001"),
            Some(IoClass::Log)
        );
        // The first match wins: pg_wal/* comes before archive_status.
        assert_eq!(
            pg.io_class_of("/db/pg/data/pg_wal/archive_status/x.done"),
            Some(IoClass::Log)
        );
        assert_eq!(
            pg.io_class_of("/db/pg/backup/base.tar"),
            Some(IoClass::Bulk)
        );
        assert_eq!(pg.io_class_of("/db/pg/data/base/1/1259"), None);
        assert!(tab.servers[1].io_classes.is_empty());
    }

    #[test]
    fn a_file_pattern_without_a_value_or_that_can_match_nothing_is_an_error() {
        assert_eq!(
            err("server: f\nlog_files:\n"),
            "dnfstab:2: \"log_files:\" needs a path pattern (\"log_files: */pg_wal/*\")"
        );
        let e = err("server: f\nbulk_files: backup/*\n");
        assert!(
            e.starts_with("dnfstab:2: \"bulk_files:\" \"backup/*\" can match no file"),
            "{e}"
        );
        assert!(e.contains("\"*/backup/*\""), "{e}");
        assert_eq!(
            err("server: f\nlog_file: */pg_wal/*\n"),
            "dnfstab:2: unknown key \"log_file\" (did you mean \"log_files\"?)"
        );
    }

    #[test]
    fn unknown_key_suggests_closest() {
        assert_eq!(
            err("server: f\n\nconections: 4\n"),
            "dnfstab:3: unknown key \"conections\" (did you mean \"connections\"?)"
        );
        assert_eq!(
            err("server: f\nexprot: /v mount: /m\n"),
            "dnfstab:2: unknown key \"exprot\" (did you mean \"export\"?)"
        );
        assert_eq!(
            err("server: f\nwibble: 1\n"),
            "dnfstab:2: unknown key \"wibble\""
        );
    }

    #[test]
    fn errors_name_file_line_and_token() {
        match parse_str("server: f\nretrans: lots\n", Path::new("/etc/dnfstab")).unwrap_err() {
            ConfigError::Parse {
                file,
                line,
                token,
                message,
            } => {
                assert_eq!(file, Path::new("/etc/dnfstab"));
                assert_eq!(line, 2);
                assert_eq!(token, "lots");
                assert_eq!(
                    message,
                    "invalid value \"lots\" for key \"retrans\": not a number"
                );
            }
            other => panic!("{other}"),
        }
    }

    #[test]
    fn options_before_server_are_rejected() {
        assert_eq!(
            err("# header\nconnections: 4\nserver: f\n"),
            "dnfstab:2: \"connections\" before the first \"server:\" line \
             (every key belongs to a server block)"
        );
        assert!(err("path: 1.2.3.4\n").starts_with("dnfstab:1: "));
    }

    #[test]
    fn management_and_community_are_recorded_as_ignored() {
        let tab = parse(
            "server: f\nmanagement: 10.0.0.9\ncommunity: public\nreadahead: 4\nexport: /v mount: /m\n",
        )
        .unwrap();
        assert_eq!(
            tab.ignored,
            [
                (2, "management".to_owned()),
                (3, "community".to_owned()),
                (4, "readahead".to_owned())
            ]
        );
    }

    #[test]
    fn comments_blank_lines_and_whitespace_are_skipped() {
        let tab = parse(
            "# a comment\n\n   \n\tserver:   f   # trailing\n  path:10.0.0.1\n#export: /x mount: /y\n",
        )
        .unwrap();
        assert_eq!(tab.servers[0].name, "f");
        assert_eq!(tab.servers[0].paths[0].server, "10.0.0.1");
        assert!(tab.servers[0].exports.is_empty());
    }

    #[test]
    fn crlf_line_endings_are_accepted() {
        let tab = parse("server: f\r\nexport: /v mount: /m\r\n").unwrap();
        assert_eq!(tab.servers[0].exports[0].mount, "/m");
    }

    #[test]
    fn keys_are_case_insensitive() {
        let tab =
            parse("SERVER: f\nPath: a\nExport: /v MOUNT: /m\nConnections: 2\nDontRoute\n").unwrap();
        let s = &tab.servers[0];
        assert_eq!(s.options.connections, 2);
        assert!(s.options.dontroute);
        assert_eq!(s.exports.len(), 1);
    }

    #[test]
    fn flags_have_no_value() {
        let tab = parse("server: f\ndontroute\nsoft\nresvport\n").unwrap();
        let o = &tab.servers[0].options;
        assert!(o.dontroute && !o.hard && o.resvport);
        let tab = parse("server: f\nsoft\nhard:\n").unwrap();
        assert!(tab.servers[0].options.hard);
    }

    #[test]
    fn tls_keys_are_read_per_server() {
        let tab = parse(
            "server: f\nxprtsec: mtls\ntls_ca: /etc/ca.pem\ntls_cert: /etc/c.pem\n\
             tls_key: /etc/c.key\ntls_name: nfs.test\ntls_direct\n",
        )
        .unwrap();
        let o = &tab.servers[0].options;
        assert_eq!(o.xprtsec, crate::config::Xprtsec::Mtls);
        assert_eq!(
            o.tls_ca.as_deref(),
            Some(std::path::Path::new("/etc/ca.pem"))
        );
        assert_eq!(
            o.tls_key.as_deref(),
            Some(std::path::Path::new("/etc/c.key"))
        );
        assert_eq!(o.tls_name.as_deref(), Some("nfs.test"));
        assert!(o.tls_direct);
        assert_eq!(o.validate(), Ok(()));
        let err = parse("server: f\nxprtsec: ssl\n").unwrap_err().to_string();
        assert!(err.contains("expected none, tls or mtls"), "{err}");
    }

    #[test]
    fn directnfs_keys_go_through_mount_options() {
        let tab = parse(
            "server: f\ntimeo: 600\nretrans: 5\nuid: 54321\ngid: 54322\ngids: 1,2\n\
             max_inflight: 32\nmnt_timeout: 30\nstable: unstable\n",
        )
        .unwrap();
        let o = &tab.servers[0].options;
        assert_eq!(o.timeo, Duration::from_secs(60));
        assert_eq!(o.retrans, 5);
        assert_eq!((o.uid, o.gid), (Some(54321), Some(54322)));
        assert_eq!(o.gids, Some(vec![1, 2]));
        assert_eq!(o.max_inflight, 32);
        assert_eq!(o.mnt_timeout, Duration::from_secs(30));
        assert_eq!(o.stable, StableMode::Unstable);
    }

    #[test]
    fn missing_values_are_reported() {
        assert_eq!(
            err("server: f\nconnections:\n"),
            "dnfstab:2: key \"connections\" needs a value"
        );
        assert_eq!(err("server:\n"), "dnfstab:1: key \"server\" needs a value");
        assert_eq!(
            err("server: f\nlocal: path: 1.2.3.4\n"),
            "dnfstab:2: key \"local\" needs a value"
        );
    }

    #[test]
    fn ipv6_addresses_are_accepted() {
        let tab = parse("server: f\nlocal: fd00::1\npath: [fd00::2]\npath:fe80::\n").unwrap();
        let p = &tab.servers[0].paths;
        assert_eq!(p[0].local.as_deref(), Some("fd00::1"));
        assert_eq!(p[0].server, "fd00::2");
        assert_eq!(p[1].server, "fe80::");
    }

    #[test]
    fn export_without_mount_is_rejected() {
        assert!(err("server: f\nexport: /v\n").starts_with("dnfstab:2: \"export: /v\" needs"));
        assert!(err("server: f\nexport: /v\nmount: /m\n").starts_with("dnfstab:2: "));
        assert!(err("server: f\nexport: /v connections: 4\n").starts_with("dnfstab:2: "));
    }

    #[test]
    fn mount_without_export_is_rejected() {
        assert_eq!(
            err("server: f\nmount: /m export: /v\n"),
            "dnfstab:2: \"mount:\" must follow \"export:\" on the same line"
        );
    }

    #[test]
    fn export_and_mount_must_be_absolute() {
        assert!(err("server: f\nexport: vol mount: /m\n").contains("must be absolute"));
        assert!(err("server: f\nexport: /v mount: /db/../etc\n").contains("\"..\""));
    }

    #[test]
    fn rejects_mount_root() {
        assert!(err("server: f\nexport: /v mount: //\n").contains("every local path"));
    }

    #[test]
    fn stray_words_are_rejected() {
        assert_eq!(
            err("server: f\nexport: /v /m\n"),
            "dnfstab:2: unexpected \"/m\" (expected \"key: value\" or a flag such as \"dontroute\")"
        );
    }

    #[test]
    fn duplicate_mount_prefix_is_rejected() {
        assert_eq!(
            err("server: a\nexport: /v mount: /db/x\nserver: b\nexport: /w mount: /db/x/\n"),
            "dnfstab:4: mount prefix \"/db/x\" is already used on line 2 (server \"a\")"
        );
        assert!(
            err("server: a\nexport: /v mount: /m\nexport: /w mount: /m\n")
                .starts_with("dnfstab:3: ")
        );
    }

    #[test]
    fn duplicate_server_is_rejected() {
        assert_eq!(
            err("server: a\nserver: A\n"),
            "dnfstab:2: server \"A\" is already defined on line 1"
        );
    }

    #[test]
    fn mount_prefix_matches_only_whole_components() {
        let tab = parse("server: f\nexport: /vol/oradata mount: /db/oradata\n").unwrap();
        assert!(tab.resolve("/db/oradata2/users01.dbf").is_none());
        assert!(tab.resolve("/db").is_none());
        assert!(tab.resolve("db/oradata/x").is_none());
        let r = tab.resolve("/db/oradata/users01.dbf").unwrap();
        assert_eq!(r.server.name, "f");
        assert_eq!(r.export.export, "/vol/oradata");
        assert_eq!(r.rest, "/users01.dbf");
        assert_eq!(tab.resolve("/db/oradata").unwrap().rest, "/");
    }

    #[test]
    fn resolve_prefers_longest_prefix() {
        let tab =
            parse("server: a\nexport: /v mount: /db\nserver: b\nexport: /r mount: /db/redo\n")
                .unwrap();
        let r = tab.resolve("/db/redo/log1").unwrap();
        assert_eq!((r.server.name.as_str(), r.rest.as_str()), ("b", "/log1"));
        let r = tab.resolve("/db/data/f").unwrap();
        assert_eq!((r.server.name.as_str(), r.rest.as_str()), ("a", "/data/f"));
    }

    #[test]
    fn resolve_normalises_slashes_and_dotdot() {
        let tab = parse("server: f\nexport: /v mount: /db/data\n").unwrap();
        assert_eq!(tab.resolve("//db//data/./a//b/").unwrap().rest, "/a/b");
        assert_eq!(tab.resolve("/db/redo/../data/f").unwrap().rest, "/f");
        assert!(tab.resolve("/db/data/../../etc/passwd").is_none());
    }

    /// A fresh directory under the system temp dir for one test.
    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("directnfs-config-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn write(path: &Path, text: &str, mode: u32) {
        std::fs::write(path, text).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
        }
    }

    #[test]
    fn explicit_config_must_exist() {
        let dir = temp_dir("explicit");
        let missing = dir.join("nope");
        let e = find_config_in(Some(&missing), None, &[]).unwrap_err();
        assert!(
            matches!(
                e,
                ConfigError::NotFound {
                    origin: "--config",
                    ..
                }
            ),
            "{e}"
        );
        let e = find_config_in(None, Some(&missing), &[]).unwrap_err();
        assert!(
            matches!(
                e,
                ConfigError::NotFound {
                    origin: "$DIRECTNFS_TAB",
                    ..
                }
            ),
            "{e}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn lookup_order_is_explicit_env_then_defaults() {
        let dir = temp_dir("order");
        let (a, b, c) = (dir.join("a"), dir.join("b"), dir.join("c"));
        write(&a, "server: a\n", 0o644);
        write(&b, "server: b\n", 0o644);
        write(&c, "server: c\n", 0o644);
        let name = |t: Option<DnfsTab>| t.map(|t| t.servers[0].name.clone());
        let missing = dir.join("missing");
        let defaults = [missing.as_path(), c.as_path()];
        assert_eq!(
            name(find_config_in(Some(&a), Some(&b), &defaults).unwrap()),
            Some("a".into())
        );
        assert_eq!(
            name(find_config_in(None, Some(&b), &defaults).unwrap()),
            Some("b".into())
        );
        assert_eq!(
            name(find_config_in(None, Some(Path::new("")), &defaults).unwrap()),
            Some("c".into())
        );
        assert_eq!(
            name(find_config_in(None, None, &[missing.as_path()]).unwrap()),
            None
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn default_file_with_errors_is_not_skipped() {
        let dir = temp_dir("broken");
        let a = dir.join("dnfstab");
        write(&a, "server: a\nconections: 4\n", 0o644);
        let e = find_config_in(None, None, &[a.as_path()]).unwrap_err();
        assert!(
            e.to_string()
                .ends_with("dnfstab:2: unknown key \"conections\" (did you mean \"connections\"?)"),
            "{e}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn warns_when_writable_by_group_or_others() {
        let dir = temp_dir("perms");
        let a = dir.join("dnfstab");
        write(&a, "server: a\n", 0o664);
        let tab = load(&a).unwrap();
        assert!(matches!(
            tab.warnings[..],
            [ConfigWarning::WritableByOthers { .. }]
        ));
        assert!(tab.warnings[0].to_string().contains("chmod go-w"));
        write(&a, "server: a\n", 0o644);
        assert!(load(&a).unwrap().warnings.is_empty());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn rejects_non_utf8_and_directories() {
        let dir = temp_dir("bytes");
        let a = dir.join("dnfstab");
        std::fs::write(&a, b"server: a\npath: \xff\n").unwrap();
        let e = load(&a).unwrap_err();
        assert!(matches!(e, ConfigError::Parse { line: 2, .. }), "{e}");
        assert!(matches!(load(&dir).unwrap_err(), ConfigError::Io { .. }));
        std::fs::remove_dir_all(dir).unwrap();
    }

    fn line_strategy() -> impl Strategy<Value = String> {
        let key = prop::sample::select(
            FILE_KEYS
                .iter()
                .copied()
                .chain(MountOptions::known_keys())
                .chain(["nfsv3", "sys", "#", ""])
                .collect::<Vec<_>>(),
        );
        let value = "[ a-z0-9/:.,\\[\\]#-]{0,12}";
        prop::collection::vec((key, prop::bool::ANY, value), 0..4).prop_map(|parts| {
            parts
                .into_iter()
                .map(|(k, colon, v)| {
                    if colon {
                        format!("{k}: {v}")
                    } else {
                        format!("{k} {v}")
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
    }

    proptest! {
        #[test]
        fn parser_never_panics(text in any::<String>()) {
            let _ = parse(&text);
        }

        #[test]
        fn parser_never_panics_on_key_shaped_lines(
            lines in prop::collection::vec(line_strategy(), 0..12),
        ) {
            let text = format!("server: s\n{}", lines.join("\n"));
            if let Ok(tab) = parse(&text) {
                for server in &tab.servers {
                    prop_assert!(!server.paths.is_empty());
                    prop_assert_eq!(server.options.validate(), Ok(()));
                }
            }
        }
    }
}
