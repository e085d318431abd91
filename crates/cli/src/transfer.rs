//! Moving bytes: a parallel positional copy (for `cp`) and an ordered,
//! read-ahead stream (for `cat`).
//!
//! Both keep many requests in flight: each worker thread owns a buffer and
//! claims the next chunk from a shared counter. An NFS read or write of a
//! chunk larger than the transfer size is itself split into parallel RPCs by
//! the client, so `jobs` workers of `chunk` bytes keep about
//! `jobs * chunk / 1 MiB` RPCs outstanding, spread over all connections.
//! Workers claim chunks in increasing order, so the server sees a nearly
//! sequential stream.

use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Condvar, Mutex};

use crate::error::{CliError, Result};
use crate::progress::Progress;

/// Positional reads from a file, local or remote.
pub trait ReadAt: Sync {
    /// Reads up to `buf.len()` bytes at `offset`; fewer only at end of file.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<usize>;
}

/// Positional writes to a file, local or remote.
pub trait WriteAt: Sync {
    /// Writes all of `buf` at `offset`.
    fn write_all_at(&self, buf: &[u8], offset: u64) -> Result<()>;
}

impl ReadAt for directnfs::File {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<usize> {
        Ok(directnfs::File::read_at(self, buf, offset)?)
    }
}

impl WriteAt for directnfs::File {
    fn write_all_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        Ok(directnfs::File::write_all_at(self, buf, offset)?)
    }
}

/// Alignment of buffers, offsets and lengths for `O_DIRECT` writes: the
/// page size, a multiple of every common logical block size.
pub const DIRECT_ALIGN: usize = 4096;

/// A local file and its name (for messages).
#[derive(Debug)]
pub struct LocalFile {
    /// The open file.
    pub file: std::fs::File,
    /// Its path as given.
    pub path: PathBuf,
}

impl LocalFile {
    /// Opens `path` for reading.
    pub fn open(path: &Path) -> Result<Self> {
        let file = std::fs::File::open(path).map_err(|e| CliError::io(path, e))?;
        Ok(Self {
            file,
            path: path.to_owned(),
        })
    }
}

impl ReadAt for LocalFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<usize> {
        let mut done = 0;
        while done < buf.len() {
            match self.file.read_at(&mut buf[done..], offset + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(CliError::io(&self.path, e)),
            }
        }
        Ok(done)
    }
}

impl WriteAt for LocalFile {
    fn write_all_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        self.file
            .write_all_at(buf, offset)
            .map_err(|e| CliError::io(&self.path, e))
    }
}

/// A local destination written with `O_DIRECT` where it can be: aligned
/// pieces go straight to the device from the copy's buffers, without
/// filling the page cache with data nobody will read again (and without
/// the cost of page-cache allocation, which on these VMs made buffered
/// writes of a fresh 1 GiB file 5-20x slower than direct ones). The
/// unaligned tail, and everything on a file system that refuses
/// `O_DIRECT`, is written through a normal descriptor.
#[derive(Debug)]
pub struct LocalDest {
    buffered: LocalFile,
    direct: Option<std::fs::File>,
    direct_ok: AtomicBool,
}

impl LocalDest {
    /// Creates or truncates `path` with permission bits `mode`.
    pub fn create(path: &Path, mode: u32) -> Result<Self> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .open(path)
            .map_err(|e| CliError::io(path, e))?;
        let direct = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_DIRECT)
            .open(path)
            .ok();
        Ok(Self {
            buffered: LocalFile {
                file,
                path: path.to_owned(),
            },
            direct_ok: AtomicBool::new(direct.is_some()),
            direct,
        })
    }

    /// Reserves `size` bytes (as unwritten extents) before the copy. Besides
    /// failing early on a full disk, this turns the copy's direct writes
    /// into overwrites of allocated blocks, which ext4 lets run in parallel
    /// under a shared inode lock (extending writes take it exclusively).
    /// Best effort: file systems without `fallocate` simply skip it.
    pub fn preallocate(&self, size: u64) -> Result<()> {
        let Ok(len) = libc::off_t::try_from(size) else {
            return Ok(());
        };
        if len == 0 {
            return Ok(());
        }
        // SAFETY: plain syscall on a descriptor we own; no pointers.
        let rc = unsafe { libc::fallocate(self.buffered.file.as_raw_fd(), 0, 0, len) };
        if rc == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::ENOSPC) | Some(libc::EFBIG) => Err(CliError::io(&self.buffered.path, e)),
            _ => Ok(()),
        }
    }

    fn direct_part(&self, buf: &[u8], offset: u64) -> Option<(&std::fs::File, usize)> {
        let file = self.direct.as_ref()?;
        if !self.direct_ok.load(Ordering::Relaxed)
            || offset % DIRECT_ALIGN as u64 != 0
            || buf.as_ptr().align_offset(DIRECT_ALIGN) != 0
        {
            return None;
        }
        let n = buf.len() - buf.len() % DIRECT_ALIGN;
        (n > 0).then_some((file, n))
    }
}

impl WriteAt for LocalDest {
    fn write_all_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        let mut done = 0;
        if let Some((file, n)) = self.direct_part(buf, offset) {
            match file.write_all_at(&buf[..n], offset) {
                Ok(()) => done = n,
                // The file system does not do direct I/O after all: from
                // now on write through the page cache.
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                    self.direct_ok.store(false, Ordering::Relaxed);
                }
                Err(e) => return Err(CliError::io(&self.buffered.path, e)),
            }
        }
        if done < buf.len() {
            self.buffered
                .write_all_at(&buf[done..], offset + done as u64)?;
        }
        Ok(())
    }
}

/// An NFS destination whose UNSTABLE writes are committed in the
/// background, every `every` bytes, by [`NfsDest::committer`] running in
/// its own thread.
///
/// Why: the client keeps every uncommitted WRITE's data until a COMMIT
/// (to re-send it if the server restarts) and commits on its own only past
/// 64 MiB, inside the writing thread, which then stalls. Committing smaller
/// amounts off the copy's path keeps that memory small and warm (reused,
/// not freshly faulted in) and overlaps the server's flush with the
/// transfer.
#[derive(Debug)]
pub struct NfsDest {
    file: directnfs::File,
    every: u64,
    pending: AtomicU64,
    state: Mutex<CommitState>,
    wake: Condvar,
}

#[derive(Debug, Default)]
struct CommitState {
    /// The copy is over: commit what is left and stop.
    done: bool,
    /// A background COMMIT failed: the copy must stop too.
    failed: bool,
}

impl NfsDest {
    /// Wraps `file`; commits after every `every` bytes written.
    pub fn new(file: directnfs::File, every: u64) -> Self {
        Self {
            file,
            every: every.max(1),
            pending: AtomicU64::new(0),
            state: Mutex::new(CommitState::default()),
            wake: Condvar::new(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, CommitState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The background loop: waits for `every` new bytes, then `fsync`s
    /// (COMMIT). Returns when [`finish`](Self::finish) is called, or at the
    /// first error (which also makes further writes fail).
    pub fn committer(&self) -> Result<()> {
        loop {
            {
                let mut st = self.state();
                while !st.done && self.pending.load(Ordering::Acquire) < self.every {
                    st = self.wake.wait(st).unwrap_or_else(|p| p.into_inner());
                }
                if st.done {
                    return Ok(());
                }
            }
            self.pending.swap(0, Ordering::AcqRel);
            if let Err(e) = self.file.fsync() {
                self.state().failed = true;
                return Err(e.into());
            }
        }
    }

    /// Stops the committer (call after the copy, then `fsync` once more).
    pub fn finish(&self) {
        self.state().done = true;
        self.wake.notify_all();
    }

    /// The file.
    pub fn file(&self) -> &directnfs::File {
        &self.file
    }
}

impl WriteAt for NfsDest {
    fn write_all_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        if self.state().failed {
            return Err(CliError::msg("copy stopped: a COMMIT failed"));
        }
        self.file.write_all_at(buf, offset)?;
        let before = self.pending.fetch_add(buf.len() as u64, Ordering::AcqRel);
        if before < self.every && before + buf.len() as u64 >= self.every {
            let _guard = self.state();
            self.wake.notify_all();
        }
        Ok(())
    }
}

/// A zeroed buffer of `len` bytes aligned for `O_DIRECT`, carved out of a
/// slightly larger vector (no unsafe allocation needed).
pub struct AlignedBuf {
    vec: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuf {
    /// A buffer of `len` bytes.
    pub fn new(len: usize) -> Self {
        let vec = vec![0u8; len + DIRECT_ALIGN];
        let start = vec.as_ptr().align_offset(DIRECT_ALIGN).min(DIRECT_ALIGN);
        Self { vec, start, len }
    }

    /// The aligned bytes.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.vec[self.start..self.start + self.len]
    }
}

/// How much to keep in flight.
#[derive(Debug, Clone, Copy)]
pub struct Parallel {
    /// Worker threads.
    pub jobs: usize,
    /// Bytes per chunk (one read then one write per chunk).
    pub chunk: usize,
}

/// Reads exactly `buf.len()` bytes at `offset`, or fails naming `what`.
fn read_full(src: &dyn ReadAt, buf: &mut [u8], offset: u64, what: &str) -> Result<()> {
    let mut done = 0;
    while done < buf.len() {
        let n = src.read_at(&mut buf[done..], offset + done as u64)?;
        if n == 0 {
            return Err(CliError::msg(format!(
                "{what}: file shrank while being copied (end of file at byte {})",
                offset + done as u64
            )));
        }
        done += n;
    }
    Ok(())
}

/// Reads until `buf` is full or end of file; returns the bytes read. A
/// short read (a server may return one before EOF) is followed by another.
fn fill(src: &dyn ReadAt, buf: &mut [u8], offset: u64) -> Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        let n = src.read_at(&mut buf[done..], offset + done as u64)?;
        if n == 0 {
            break;
        }
        done += n;
    }
    Ok(done)
}

/// Copies bytes `0..size` of `src` to the same offsets of `dst`, with
/// `par.jobs` chunks in flight. Stops at the first error and returns it.
pub fn copy(
    src: &dyn ReadAt,
    src_name: &str,
    dst: &dyn WriteAt,
    size: u64,
    par: Parallel,
    progress: &Progress,
) -> Result<()> {
    let chunk = par.chunk.max(4096) as u64;
    let chunks = size.div_ceil(chunk);
    let jobs = (par.jobs.max(1) as u64).min(chunks.max(1)) as usize;
    let next = AtomicU64::new(0);
    let failed = AtomicBool::new(false);
    let first_error: Mutex<Option<CliError>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| {
                let mut aligned = AlignedBuf::new(chunk as usize);
                let buf = aligned.as_mut_slice();
                while !failed.load(Ordering::Relaxed) {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if index >= chunks {
                        break;
                    }
                    let offset = index * chunk;
                    let len = chunk.min(size - offset) as usize;
                    let step = read_full(src, &mut buf[..len], offset, src_name)
                        .and_then(|()| dst.write_all_at(&buf[..len], offset));
                    if let Err(e) = step {
                        failed.store(true, Ordering::Relaxed);
                        let mut slot = first_error.lock().unwrap_or_else(|p| p.into_inner());
                        slot.get_or_insert(e);
                        break;
                    }
                    progress.add(len as u64);
                }
            });
        }
    });
    match first_error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Streams `src` from offset 0 to its end into `out`, in order, with
/// `par.jobs` chunks read ahead. Returns the bytes written.
///
/// Worker `i` reads chunks `i, i + jobs, i + 2*jobs, ...` and hands each to
/// the writer over its own one-slot channel; the writer visits the workers
/// in turn, so output is in order and memory is bounded (two buffers per
/// worker). The first chunk shorter than `chunk` marks the end of file.
pub fn stream(src: &dyn ReadAt, out: &mut dyn Write, par: Parallel) -> Result<u64> {
    let chunk = par.chunk.max(4096);
    let jobs = par.jobs.max(1);
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let mut lanes = Vec::with_capacity(jobs);
        for w in 0..jobs {
            let (full_tx, full_rx) = mpsc::sync_channel::<Result<Vec<u8>>>(1);
            let (empty_tx, empty_rx) = mpsc::channel::<Vec<u8>>();
            let stop = &stop;
            s.spawn(move || {
                let mut index = w as u64;
                while !stop.load(Ordering::Relaxed) {
                    let mut buf = empty_rx.try_recv().unwrap_or_else(|_| vec![0u8; chunk]);
                    buf.resize(chunk, 0);
                    let offset = index * chunk as u64;
                    let item = fill(src, &mut buf, offset).map(|n| {
                        buf.truncate(n);
                        buf
                    });
                    let last = !matches!(&item, Ok(b) if b.len() == chunk);
                    if full_tx.send(item).is_err() || last {
                        break;
                    }
                    index += jobs as u64;
                }
            });
            lanes.push((full_rx, empty_tx));
        }
        let result = (|| {
            let mut total = 0u64;
            for lane in (0..jobs).cycle() {
                let (full_rx, empty_tx) = &lanes[lane];
                let Ok(item) = full_rx.recv() else {
                    // A worker only leaves early after sending its last item.
                    return Ok(total);
                };
                let buf = item?;
                out.write_all(&buf).map_err(CliError::stdout)?;
                total += buf.len() as u64;
                if buf.len() < chunk {
                    return Ok(total);
                }
                let _ = empty_tx.send(buf);
            }
            Ok(total)
        })();
        stop.store(true, Ordering::Relaxed);
        // Dropping the receivers unblocks workers waiting to send.
        drop(lanes);
        result
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Mem(Vec<u8>);
    impl ReadAt for Mem {
        fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<usize> {
            let start = (offset as usize).min(self.0.len());
            let n = buf.len().min(self.0.len() - start);
            buf[..n].copy_from_slice(&self.0[start..start + n]);
            Ok(n)
        }
    }
    struct Sink(Mutex<Vec<u8>>);
    impl WriteAt for Sink {
        fn write_all_at(&self, buf: &[u8], offset: u64) -> Result<()> {
            let mut v = self.0.lock().unwrap_or_else(|p| p.into_inner());
            let end = offset as usize + buf.len();
            if v.len() < end {
                v.resize(end, 0);
            }
            v[offset as usize..end].copy_from_slice(buf);
            Ok(())
        }
    }

    fn data(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    #[test]
    fn copy_reproduces_every_size() {
        for size in [0, 1, 4095, 4096, 4097, 40_000, 65_536] {
            let src = Mem(data(size));
            let dst = Sink(Mutex::new(Vec::new()));
            let par = Parallel {
                jobs: 3,
                chunk: 4096,
            };
            let r = copy(&src, "src", &dst, size as u64, par, &Progress::hidden());
            assert!(r.is_ok(), "size {size}");
            assert_eq!(dst.0.into_inner().unwrap_or_default(), src.0, "size {size}");
        }
    }

    #[test]
    fn copy_fails_when_source_is_shorter_than_announced() {
        let src = Mem(data(5000));
        let dst = Sink(Mutex::new(Vec::new()));
        let par = Parallel {
            jobs: 2,
            chunk: 4096,
        };
        let r = copy(&src, "src", &dst, 9000, par, &Progress::hidden());
        assert!(matches!(r, Err(CliError::Msg(m)) if m.contains("shrank")));
    }

    #[test]
    fn aligned_buffers_are_aligned() {
        for len in [1, 4096, 5000, 1 << 20] {
            let mut b = AlignedBuf::new(len);
            let s = b.as_mut_slice();
            assert_eq!(s.len(), len);
            assert_eq!(s.as_ptr().align_offset(DIRECT_ALIGN), 0);
        }
    }

    #[test]
    fn local_dest_mixes_direct_and_buffered_writes_exactly() {
        let dir = std::env::temp_dir().join(format!("dnfs-localdest-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        for size in [0, 1, 4095, 4096, 4097, 3 * 8192 + 5] {
            let path = dir.join(format!("f{size}"));
            let src = Mem(data(size));
            let dst = LocalDest::create(&path, 0o644).unwrap_or_else(|e| panic!("{e}"));
            if size % 2 == 0 {
                assert!(dst.preallocate(size as u64).is_ok());
            }
            let par = Parallel {
                jobs: 3,
                chunk: 8192,
            };
            let r = copy(&src, "src", &dst, size as u64, par, &Progress::hidden());
            assert!(r.is_ok(), "size {size}");
            drop(dst);
            assert_eq!(
                std::fs::read(&path).unwrap_or_default(),
                src.0,
                "size {size}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn stream_is_in_order_for_every_size() {
        for size in [0, 1, 4095, 4096, 4097, 8192, 40_000, 65_536] {
            for jobs in [1, 2, 5] {
                let src = Mem(data(size));
                let mut out = Vec::new();
                let par = Parallel { jobs, chunk: 4096 };
                let n = stream(&src, &mut out, par).ok();
                assert_eq!(n, Some(size as u64), "size {size} jobs {jobs}");
                assert_eq!(out, src.0, "size {size} jobs {jobs}");
            }
        }
    }
}
