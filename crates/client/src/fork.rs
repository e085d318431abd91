//! A client for the child of `fork`.
//!
//! After `fork` the child has a copy of the parent's client in memory but
//! none of its threads, and its sockets are shared with the parent: that
//! client must never be used (or dropped) in the child. What it knows is
//! still true, though — the server, the export's root handle, the transfer
//! sizes, the handles of the paths it looked up — so the child's own client
//! is made from it with new connections and no MOUNT or FSINFO: the first
//! call of a new process (a PostgreSQL backend) costs only its connects.
//! On NFSv3 the child connects one channel per path (the others stay idle
//! until the client's threads start), that connect sends no NULL probe,
//! and the client's threads and statistics endpoint wait until they are
//! needed (`io/transport/threads.rs`): a child that makes a few calls and
//! exits connects once and starts no thread at all.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use crate::client::{start_v41, Client, Inner, Publish};
use crate::error::{Error, Result};
use crate::io::transport::{Start, Transport};
use crate::remote::Remote;

impl Client {
    /// A new client in the child of `fork`, made from this (the parent's)
    /// client without calling it: same server, paths, options, export root
    /// and cached handles; new connections. Call it in the child only, on
    /// a client that existed at the `fork`; the parent's client itself must
    /// then be leaked in the child (`std::mem::forget`), never dropped or
    /// used. Fails as [`Client::mount`] does when no path connects.
    pub fn after_fork(&self) -> Result<Client> {
        let old = &self.inner;
        // Plain data of the parent's channels (no lock of theirs is taken:
        // a parent thread may have held one at the moment of fork).
        let (channels, mut config) = old.transport().plan();
        // The child's own alert context: the parent's path states may have
        // been locked by one of its threads at the moment of fork.
        config.alerts = crate::alert::Alerts::new(&old.name);
        // NFSv4.1: the child's own client owner, its paths checked again.
        let trunk = old.v4.as_ref().map(|s| s.trunk.fresh());
        config.hook = trunk
            .clone()
            .map(|t| t as Arc<dyn crate::io::transport::ConnectHook>);
        // NFSv3: the threads start when first needed, and the statistics
        // endpoint with them (io/transport/threads.rs); NFSv4.1's session
        // keeps them from the start.
        let start = match old.v4 {
            None => Start::WhenNeeded {
                then: crate::publish::start_deferred,
            },
            Some(_) => Start::Now,
        };
        let transport =
            Transport::start_with(channels, config, start).map_err(|e| Error::Connect {
                server: old.name.clone(),
                source: e,
            })?;
        let handles = match old.handles.try_read() {
            Ok(h) => h.clone(),
            Err(_) => HashMap::new(),
        };
        let mut inner = Inner {
            remote: Remote {
                transport,
                name: old.name.clone(),
                export: old.export.clone(),
                target_rest: old.target_rest.clone(),
                limits: old.limits,
                options: old.options.clone(),
                cred: old.cred.clone(),
            },
            root: old.root,
            handles: RwLock::new(handles),
            files: Mutex::new(Default::default()),
            write_behind: Default::default(),
            v4: None,
            io_classes: Default::default(),
        };
        match &old.v4 {
            // NFSv4.1: the parent's client ID and session are the parent's;
            // the child gets its own on its new connections.
            Some(parent) => match trunk {
                Some(trunk) => {
                    let session = crate::v4::mount::after_fork(&inner.remote, parent, trunk)?;
                    inner.v4 = Some(session);
                    Ok(start_v41(inner, Publish::WhenRenewing))
                }
                None => Err(crate::v4::unsupported("fork without a session")),
            },
            None => {
                let inner = Arc::new(inner);
                // The child publishes its own statistics endpoint (the
                // parent's thread and socket are not its own) once its
                // transport's threads start: a process that lives a few
                // calls never makes one.
                crate::publish::register_deferred(&inner);
                Ok(Client { inner })
            }
        }
    }
}

/// Moves in the child of every `fork` (a `pthread_atfork` handler).
static FORK_GENERATION: AtomicU64 = AtomicU64::new(0);

extern "C" fn forked_child() {
    FORK_GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// This process's fork generation: it changes in the child of every `fork`
/// that follows the first call. An object that records it when made (the
/// C library's clients and files, the SQLite VFS's connections) can tell
/// in a child that it is the parent's, to be neither used nor dropped
/// there. The first call registers the handler, without a lock a child
/// forked meanwhile could find held.
pub fn fork_generation() -> u64 {
    static REGISTERED: AtomicBool = AtomicBool::new(false);
    if !cfg!(miri) && !REGISTERED.swap(true, Ordering::AcqRel) {
        // SAFETY: registers a plain extern "C" function for the child.
        unsafe { libc::pthread_atfork(None, None, Some(forked_child)) };
    }
    FORK_GENERATION.load(Ordering::Relaxed)
}
