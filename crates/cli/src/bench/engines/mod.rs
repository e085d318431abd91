//! The three I/O engines behind one small asynchronous interface: a session
//! owns `depth()` slots, each with its own buffer; the driver submits an I/O
//! on a free slot and reaps completions.

mod dnfs;
mod libnfs;
mod local;

use std::time::Duration;

use super::job::{Engine, Job};

pub use libnfs::probe as probe_libnfs;

/// Read or write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Read,
    Write,
}

/// A finished I/O: the slot and the bytes transferred, or the error.
pub type Done = (usize, Result<usize, String>);

/// One session's I/O interface (one thread drives it).
pub trait Session {
    /// Slots (I/Os that may be in flight at once).
    fn depth(&self) -> usize;
    /// The buffer of a slot (at least the buffer length asked for at open).
    /// Must not be touched while the slot's I/O is in flight.
    fn buf(&mut self, slot: usize) -> &mut [u8];
    /// Starts an I/O of `len` bytes at `offset` on `slot`; a write sends the
    /// first `len` bytes of the slot's buffer, a read fills them.
    fn submit(&mut self, slot: usize, kind: Kind, offset: u64, len: usize) -> Result<(), String>;
    /// Waits up to `timeout` for at least `min` (>= 1) completions and
    /// appends every completion available.
    fn reap(&mut self, out: &mut Vec<Done>, min: usize, timeout: Duration) -> Result<(), String>;
    /// Makes the writes so far durable (redo `--fsync-every`).
    fn fsync(&mut self) -> Result<(), String>;
}

/// How an engine maps a session of queue depth `q` onto threads:
/// `(threads, depth per thread)`. The local file system has no
/// asynchronous pread here, so it runs `q` threads of depth 1.
pub fn threads_per_session(engine: Engine, q: usize) -> (usize, usize) {
    match engine {
        Engine::Local => (q.max(1), 1),
        _ => (1, q.max(1)),
    }
}

/// Opens one session of `engine` for `job`, `depth` slots of `buf_len` bytes.
/// For redo, `redo` selects the log file instead of the data file.
pub fn open(job: &Job, depth: usize, buf_len: usize) -> Result<Box<dyn Session>, String> {
    Ok(match job.engine {
        Engine::Directnfs => Box::new(dnfs::DnfsSession::open(job, depth, buf_len)?),
        Engine::Libnfs => Box::new(libnfs::LibnfsSession::open(job, depth, buf_len)?),
        Engine::Local => Box::new(local::LocalSession::open(job, depth, buf_len)?),
    })
}

/// A one-line description of how the engine does its I/O (for the output).
pub fn note(job: &Job) -> String {
    match job.engine {
        Engine::Directnfs if job.fsync_every > 0 => format!(
            "File::write_at (write-behind as the URL's stable=/write_behind= say), {} connection(s), fsync every {} writes",
            job.connections, job.fsync_every
        ),
        Engine::Directnfs => format!(
            "Batch API, {} connection(s) per session, FILE_SYNC writes",
            job.connections
        ),
        Engine::Local if job.fsync_every > 0 => format!(
            "pwrite through the page cache, fdatasync every {} writes",
            job.fsync_every
        ),
        Engine::Libnfs => "libnfs.so.13 async API, one context (1 connection) per session, O_SYNC (FILE_SYNC) writes".into(),
        Engine::Local => "pread/pwrite through the page cache (O_DSYNC writes), one thread per queue slot".into(),
    }
}

/// The mount target of an nfs:// URL or of a path under a dnfstab `mount:`
/// prefix (with its paths and options, multipath included).
pub fn target_of(arg: &str, config: Option<&str>) -> Result<directnfs::Target, String> {
    let resolver = crate::location::Resolver::new(config.map(std::path::PathBuf::from), false);
    match resolver.spec(arg).map_err(|e| e.to_string())? {
        crate::location::Spec::Nfs(n) => Ok(n.target),
        crate::location::Spec::Local(_) => Err(format!(
            "{arg}: not an nfs:// URL and no dnfstab mount: prefix matches it"
        )),
    }
}

/// Page-aligned zeroed buffer (helps O_DIRECT-free paths and copies alike).
pub(crate) fn alloc_buf(len: usize) -> Box<[u8]> {
    vec![0u8; len.max(1)].into_boxed_slice()
}
