//! What to mount: the server's network paths, the path to open and the
//! options. A dnfstab block (`locate.rs`) or an `nfs://` URL gives one;
//! `Client::mount` takes it.

use std::net::IpAddr;

use super::options::MountOptions;
use super::url::NfsUrl;

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
