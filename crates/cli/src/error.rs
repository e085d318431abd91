//! The one error type of the `dnfs` binary: everything a command can fail
//! with, displayed as a single line (`main` prefixes `dnfs: `).

use std::fmt;
use std::io;
use std::path::Path;

/// Result alias for commands.
pub type Result<T, E = CliError> = std::result::Result<T, E>;

/// A command failure. The directnfs errors already name the operation and
/// the path; local I/O errors get the path added here.
#[derive(Debug)]
pub enum CliError {
    /// From the NFS client (server status, connection, protocol...).
    Nfs(directnfs::Error),
    /// The dnfstab could not be used.
    Config(directnfs::config::ConfigError),
    /// A local file operation failed.
    Io {
        /// What was being done, with the path.
        what: String,
        /// The error.
        source: io::Error,
    },
    /// Anything else, already worded for the user.
    Msg(String),
    /// stdout was closed by the reader (`dnfs cat f | head`): not an error
    /// worth reporting.
    BrokenPipe,
}

impl CliError {
    /// A local I/O error on `path`.
    pub fn io(path: &Path, source: io::Error) -> Self {
        CliError::Io {
            what: path.display().to_string(),
            source,
        }
    }

    /// An error writing to stdout.
    pub fn stdout(source: io::Error) -> Self {
        if source.kind() == io::ErrorKind::BrokenPipe {
            CliError::BrokenPipe
        } else {
            CliError::Io {
                what: "writing to stdout".into(),
                source,
            }
        }
    }

    /// A message error.
    pub fn msg(m: impl Into<String>) -> Self {
        CliError::Msg(m.into())
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Nfs(e) => write!(f, "{e}"),
            CliError::Config(e) => write!(f, "{e}"),
            CliError::Io { what, source } => write!(f, "{what}: {source}"),
            CliError::Msg(m) => f.write_str(m),
            CliError::BrokenPipe => f.write_str("broken pipe"),
        }
    }
}

impl std::error::Error for CliError {}

impl From<directnfs::Error> for CliError {
    fn from(e: directnfs::Error) -> Self {
        CliError::Nfs(e)
    }
}

impl From<directnfs::config::ConfigError> for CliError {
    fn from(e: directnfs::config::ConfigError) -> Self {
        CliError::Config(e)
    }
}
