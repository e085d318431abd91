//! Open files: positional reads and writes straight to the server.
//!
//! No data is cached. A read or write larger than the negotiated transfer
//! size is split into pieces that are all sent at once (spread over the
//! channels) and the caller waits for all of them. `&self` everywhere: any
//! number of threads may read and write one `File` concurrently; the
//! database orders its own I/O.

use std::sync::{Arc, Mutex};

use directnfs_engine::stats::IoStats;
use directnfs_wire::nfs3::{
    self, createhow3, createverf3, decode_write_reply, diropargs3, encode_read_args,
    encode_write_args_header, nfs_fh3, nfsstat3, sattr3, stable_how, writeverf3, Nfs3Res,
};
use directnfs_wire::XdrReader;

use crate::client::{is_jukebox, jukebox_delay, nfs_result, Client, Inner};
use crate::config::StableMode;
use crate::error::{Error, Result};
use crate::io::call::{Call, CallPool, Group, Notify, ReadDest, Reply, Sink};
use crate::io::error::CallError;
use crate::metadata::Metadata;

/// Uncommitted data kept in unstable mode is flushed (COMMIT) once it
/// exceeds this, so memory stays bounded between two `fsync`s.
const MAX_UNCOMMITTED_BYTES: usize = 64 << 20;

/// How to open a file; see [`Client::open_with`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpenOptions {
    /// Create the file if it does not exist.
    pub create: bool,
    /// Fail if the file exists (exclusive create; safe to retry).
    pub create_new: bool,
    /// Truncate to zero length.
    pub truncate: bool,
    /// Mode bits for a created file (default 0644).
    pub mode: Option<u32>,
}

/// An open file. Cheap to clone (shares the handle and the client).
#[derive(Debug, Clone)]
pub struct File {
    pub(crate) shared: Arc<FileShared>,
}

#[derive(Debug)]
pub(crate) struct FileShared {
    pub(crate) client: Client,
    pub(crate) fh: nfs_fh3,
    pub(crate) path: String,
    /// Unstable mode: writes acknowledged UNSTABLE and not yet committed.
    uncommitted: Mutex<Uncommitted>,
    /// This file's counters (v$dnfs_files).
    pub(crate) stats: Arc<IoStats>,
    /// Serialises `fsync`s of this file: a second caller must not return
    /// while the first one's COMMIT (which took its writes too) is still
    /// running or failed.
    fsync_lock: Mutex<()>,
}

/// Unstable mode's record of acknowledged writes since the last `fsync`,
/// in the order they were acknowledged.
#[derive(Debug, Default)]
struct Uncommitted {
    writes: Vec<Logged>,
    /// Bytes of the writes not yet known durable.
    bytes: usize,
    /// Bytes of every logged write (the memory held).
    logged: usize,
}

/// One acknowledged WRITE, kept until a COMMIT proves it durable.
#[derive(Debug, Clone)]
struct Logged {
    offset: u64,
    data: Arc<[u8]>,
    verf: writeverf3,
    /// The server already put it on stable storage (FILE_SYNC/DATA_SYNC
    /// reply). Kept only so an older write is never replayed over it.
    durable: bool,
}

impl Logged {
    fn end(&self) -> u64 {
        self.offset + self.data.len() as u64
    }
}

/// The parts of `[start, end)` not covered by any of `later`, in order.
fn uncovered<'a>(start: u64, end: u64, later: impl Iterator<Item = &'a Logged>) -> Vec<(u64, u64)> {
    let mut parts = vec![(start, end)];
    for w in later {
        let (ws, we) = (w.offset, w.end());
        parts = parts
            .into_iter()
            .flat_map(|(s, e)| {
                if we <= s || ws >= e {
                    vec![(s, e)]
                } else {
                    let mut keep = Vec::with_capacity(2);
                    if s < ws {
                        keep.push((s, ws));
                    }
                    if we < e {
                        keep.push((we, e));
                    }
                    keep
                }
            })
            .collect();
        if parts.is_empty() {
            break;
        }
    }
    parts
}

impl Client {
    /// Opens an existing file.
    pub fn open(&self, path: &str) -> Result<File> {
        self.open_with(path, OpenOptions::default())
    }

    /// Creates a file, or truncates it if it exists.
    pub fn create(&self, path: &str) -> Result<File> {
        self.open_with(
            path,
            OpenOptions {
                create: true,
                truncate: true,
                ..Default::default()
            },
        )
    }

    /// Opens a file as `opts` says.
    pub fn open_with(&self, path: &str, opts: OpenOptions) -> Result<File> {
        self.fresh(|| self.open_with_once(path, opts))
    }

    fn open_with_once(&self, path: &str, opts: OpenOptions) -> Result<File> {
        let inner = &self.inner;
        let fh = if opts.create_new {
            self.create_exclusive(path, opts.mode.unwrap_or(0o644))?
        } else {
            match inner.lookup_path(path) {
                Ok(fh) => {
                    if opts.truncate {
                        self.setattr(
                            &fh,
                            path,
                            sattr3 {
                                size: Some(0),
                                ..Default::default()
                            },
                        )?;
                    }
                    fh
                }
                Err(e) if opts.create && e.nfs_status() == Some(nfsstat3::NFS3ERR_NOENT) => {
                    self.create_unchecked(path, opts.mode.unwrap_or(0o644))?
                }
                Err(e) => return Err(e),
            }
        };
        Ok(File {
            shared: Arc::new(FileShared {
                client: self.clone(),
                fh,
                path: path.to_string(),
                uncommitted: Mutex::new(Uncommitted::default()),
                stats: inner.file_stats(path),
                fsync_lock: Mutex::new(()),
            }),
        })
    }

    /// Creates a file that LOOKUP just did not find. GUARDED, not
    /// UNCHECKED: if another client created it in between, we open theirs
    /// instead of truncating it.
    fn create_unchecked(&self, path: &str, mode: u32) -> Result<nfs_fh3> {
        let (dir, name) = self.inner.parent_and_name(path)?;
        let how = createhow3::Guarded(sattr3 {
            mode: Some(mode),
            ..Default::default()
        });
        match self.create_call(path, dir, name, how) {
            Err(e) if e.nfs_status() == Some(nfsstat3::NFS3ERR_EXIST) => {
                self.inner.forget(path);
                self.inner.lookup_path(path)
            }
            other => other,
        }
    }

    /// EXCLUSIVE create with a random verifier: a retransmission that reaches
    /// the server after the first copy created the file gets NFS3_OK (same
    /// verifier), while a file created by someone else gets NFS3ERR_EXIST.
    /// Attributes cannot ride along (the verifier uses their space), so the
    /// mode is set afterwards.
    fn create_exclusive(&self, path: &str, mode: u32) -> Result<nfs_fh3> {
        let (dir, name) = self.inner.parent_and_name(path)?;
        let mut verf = [0u8; 8];
        fill_random(&mut verf);
        let fh = self.create_call(path, dir, name, createhow3::Exclusive(createverf3(verf)))?;
        self.setattr(
            &fh,
            path,
            sattr3 {
                mode: Some(mode),
                ..Default::default()
            },
        )?;
        Ok(fh)
    }

    fn create_call(
        &self,
        path: &str,
        dir: nfs_fh3,
        name: nfs3::filename3,
        how: createhow3,
    ) -> Result<nfs_fh3> {
        let args = nfs3::CREATE3args {
            where_: diropargs3 { dir, name },
            how,
        };
        match self.inner.call::<nfs3::Create>(&args, path)?.0 {
            Nfs3Res::Ok(ok) => {
                let fh = match ok.obj {
                    Some(fh) => fh,
                    // The server may omit the handle: look the name up.
                    None => {
                        self.inner.forget(path);
                        self.inner.lookup_path(path)?
                    }
                };
                self.inner.remember(path, &fh);
                Ok(fh)
            }
            Nfs3Res::Fail(status, _) => Err(Error::Nfs {
                op: "CREATE",
                path: path.to_string(),
                status,
            }),
        }
    }

    pub(crate) fn setattr(&self, fh: &nfs_fh3, path: &str, attrs: sattr3) -> Result<()> {
        let args = nfs3::SETATTR3args {
            object: *fh,
            new_attributes: attrs,
            guard: None,
        };
        let (res, _) = self.inner.call::<nfs3::Setattr>(&args, path)?;
        nfs_result(res.status(), "SETATTR", path)
    }
}

/// Outcome of one READ piece.
pub(crate) struct ReadPiece {
    pub count: usize,
    pub eof: bool,
}

impl File {
    /// The path this file was opened with.
    pub fn path(&self) -> &str {
        &self.shared.path
    }

    pub(crate) fn inner(&self) -> &Inner {
        &self.shared.client.inner
    }

    /// Reads up to `buf.len()` bytes at `offset`. Returns the number of
    /// bytes read: fewer than asked only at end of file (or when the server
    /// returns a short read), 0 at or past EOF.
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<usize> {
        let start = self.op_start(nfs3::NFSPROC3_READ);
        let mut jukebox = 0;
        let result = loop {
            if let Err(e) = self.check_range(offset, buf.len(), "READ") {
                break Err(e);
            }
            match self.read_at_once(buf, offset) {
                // JUKEBOX: the server asked us to retry later.
                Ok(None) if self.inner().may_retry_jukebox(jukebox) => {
                    jukebox += 1;
                    std::thread::sleep(jukebox_delay(jukebox));
                }
                Ok(None) => {
                    break Err(Error::Nfs {
                        op: "READ",
                        path: self.path().to_string(),
                        status: nfsstat3::NFS3ERR_JUKEBOX,
                    })
                }
                Ok(Some(n)) => break Ok(n),
                Err(e) => break Err(e),
            }
        };
        self.op_end(nfs3::NFSPROC3_READ, start, &result, true);
        result
    }

    /// Rejects a range whose end does not fit in a 64-bit offset (it would
    /// wrap around to the start of the file).
    pub(crate) fn check_range(&self, offset: u64, len: usize, op: &'static str) -> Result<()> {
        match offset.checked_add(len as u64) {
            Some(_) => Ok(()),
            None => Err(Error::InvalidInput(format!(
                "{op} {}: {len} bytes at offset {offset} run past the largest file offset",
                self.path()
            ))),
        }
    }

    /// Counts an operation on this file's statistics; returns its start time.
    pub(crate) fn op_start(&self, proc_: u32) -> u64 {
        self.shared.stats.on_submit(proc_);
        self.inner().shared().now_ns()
    }

    pub(crate) fn op_end(&self, proc_: u32, start: u64, result: &Result<usize>, read: bool) {
        let now = self.inner().shared().now_ns();
        self.op_end_at(proc_, start, now, result, read);
    }

    /// [`op_end`](Self::op_end) at a time the caller read already.
    pub(crate) fn op_end_at(
        &self,
        proc_: u32,
        start: u64,
        now: u64,
        result: &Result<usize>,
        read: bool,
    ) {
        let latency = now.saturating_sub(start);
        let n = *result.as_ref().unwrap_or(&0) as u64;
        let (r, w) = if read { (n, 0) } else { (0, n) };
        self.shared
            .stats
            .on_complete(proc_, latency, r, w, result.is_ok());
    }

    fn read_at_once(&self, buf: &mut [u8], offset: u64) -> Result<Option<usize>> {
        if buf.is_empty() {
            return Ok(Some(0));
        }
        let rtmax = self.inner().limits.rtmax as usize;
        let pieces = buf.len().div_ceil(rtmax);
        let group = Group::new(pieces);
        let mut calls = Vec::with_capacity(pieces);
        for (i, chunk) in buf.chunks_mut(rtmax).enumerate() {
            // SAFETY: `chunk` borrows the caller's buffer for this whole
            // function, and we return only after `wait_group` saw every
            // piece complete; nothing here can unwind in between.
            let dest = unsafe { ReadDest::new(chunk) };
            let call = self.read_call(
                offset + (i * rtmax) as u64,
                dest,
                Notify::Group(Arc::clone(&group)),
            );
            calls.push(call);
        }
        self.inner().shared().submit_many(calls.iter().cloned());
        self.inner().shared().wait_group(&group);
        let mut total = 0usize;
        let mut jukebox = false;
        let mut short = false;
        for (i, call) in calls.iter().enumerate() {
            let want = rtmax.min(buf.len() - i * rtmax);
            match self.finish_read(call) {
                Ok(p) if !short => {
                    total += p.count;
                    short = p.count < want || p.eof;
                }
                Ok(_) => {}
                Err(e) if e.nfs_status() == Some(nfsstat3::NFS3ERR_JUKEBOX) => jukebox = true,
                Err(e) => return Err(e),
            }
        }
        if jukebox {
            return Ok(None);
        }
        Ok(Some(total))
    }

    /// Reads exactly `buf.len()` bytes at `offset`; hitting EOF first is an
    /// `UnexpectedEof`-kind error (`Error::InvalidInput` naming the offset).
    pub fn read_exact_at(&self, mut buf: &mut [u8], mut offset: u64) -> Result<()> {
        while !buf.is_empty() {
            let n = self.read_at(buf, offset)?;
            if n == 0 {
                return Err(Error::InvalidInput(format!(
                    "{}: end of file at offset {offset} with {} bytes still to read",
                    self.path(),
                    buf.len()
                )));
            }
            buf = &mut buf[n..];
            offset += n as u64;
        }
        Ok(())
    }

    /// [`read_call`](Self::read_call) reusing a finished call of `pool`,
    /// submitted at `now_ns` (the operation's start, already read).
    pub(crate) fn read_call_pooled(
        &self,
        offset: u64,
        dest: ReadDest,
        notify: Notify,
        pool: &mut CallPool,
        now_ns: u64,
    ) -> Arc<Call> {
        let inner = self.inner();
        let fh = self.shared.fh.as_bytes();
        let count = dest.len() as u32;
        let weight = dest.len() as u64;
        Call::new_pooled(
            pool,
            nfs3::NFSPROC3_READ,
            |body| {
                inner.put_call_header(body, nfs3::NFSPROC3_READ);
                encode_read_args(body, fh, offset, count);
            },
            None,
            weight,
            Sink::Read(dest),
            notify,
            now_ns,
        )
    }

    pub(crate) fn read_call(&self, offset: u64, dest: ReadDest, notify: Notify) -> Arc<Call> {
        let inner = self.inner();
        let mut body = inner.call_body(nfs3::NFSPROC3_READ, 80);
        encode_read_args(
            &mut body,
            self.shared.fh.as_bytes(),
            offset,
            dest.len() as u32,
        );
        let weight = dest.len() as u64;
        Call::new(
            nfs3::NFSPROC3_READ,
            body,
            None,
            weight,
            Sink::Read(dest),
            notify,
            inner.shared().now_ns(),
        )
    }

    pub(crate) fn finish_read(&self, call: &Call) -> Result<ReadPiece> {
        match call.take_result().map_err(|e| self.call_error("READ", e))? {
            Reply::Read {
                status, count, eof, ..
            } => {
                nfs_result(nfsstat3(status), "READ", self.path())?;
                Ok(ReadPiece {
                    count: count as usize,
                    eof,
                })
            }
            Reply::Results(_) => {
                Err(self.call_error("READ", CallError::Internal("record reply for a READ")))
            }
        }
    }

    fn call_error(&self, op: &'static str, e: CallError) -> Error {
        Error::from_call(op, self.path(), e)
    }

    /// Writes all of `buf` at `offset`. Returns once the data is durable
    /// (FILE_SYNC mode, the default) or acknowledged (unstable mode: durable
    /// after the next [`fsync`](Self::fsync)).
    pub fn write_at(&self, buf: &[u8], offset: u64) -> Result<usize> {
        let start = self.op_start(nfs3::NFSPROC3_WRITE);
        let result = self.write_at_inner(buf, offset);
        self.op_end(nfs3::NFSPROC3_WRITE, start, &result, false);
        result
    }

    fn write_at_inner(&self, buf: &[u8], offset: u64) -> Result<usize> {
        self.check_range(offset, buf.len(), "WRITE")?;
        let wtmax = self.inner().limits.wtmax as usize;
        let mut pending: Vec<(u64, Arc<[u8]>)> = buf
            .chunks(wtmax)
            .enumerate()
            .map(|(i, c)| (offset + (i * wtmax) as u64, Arc::from(c)))
            .collect();
        let mut jukebox = 0;
        // A piece asked FILE_SYNC that the server only took UNSTABLE.
        let mut downgraded = false;
        while !pending.is_empty() {
            let group = Group::new(pending.len());
            let calls: Vec<_> = pending
                .iter()
                .map(|(off, data)| {
                    self.write_call(*off, Arc::clone(data), Notify::Group(Arc::clone(&group)))
                })
                .collect();
            self.inner().shared().submit_many(calls.iter().cloned());
            self.inner().shared().wait_group(&group);
            let mut again = Vec::new();
            let mut saw_jukebox = false;
            for ((off, data), call) in pending.into_iter().zip(calls) {
                match self.finish_write_durable(&call, off, &data) {
                    // A server that takes nothing would have us loop forever.
                    Ok((0, _)) => {
                        return Err(Error::Protocol {
                            op: "WRITE",
                            path: self.path().to_string(),
                            detail: format!(
                                "server wrote 0 of {} bytes at offset {off}",
                                data.len()
                            ),
                        })
                    }
                    Ok((n, durable)) => {
                        downgraded |= !durable;
                        if n < data.len() {
                            again.push((off + n as u64, Arc::from(&data[n..])));
                        }
                    }
                    Err(e)
                        if e.nfs_status() == Some(nfsstat3::NFS3ERR_JUKEBOX)
                            && self.inner().may_retry_jukebox(jukebox) =>
                    {
                        saw_jukebox = true;
                        again.push((off, data))
                    }
                    Err(e) => return Err(e),
                }
            }
            pending = again;
            if saw_jukebox {
                jukebox += 1;
                std::thread::sleep(jukebox_delay(jukebox));
            }
        }
        // FILE_SYNC asked, UNSTABLE answered: the caller was promised the
        // data is durable when this returns, so COMMIT it now (re-sending
        // it FILE_SYNC if the verifier shows a restart). If that fails the
        // data stays logged for the next fsync.
        if downgraded && self.stable() == stable_how::FILE_SYNC {
            self.fsync()?;
        }
        self.maybe_flush()?;
        Ok(buf.len())
    }

    /// Same as [`write_at`](Self::write_at); named like `std`'s for symmetry.
    pub fn write_all_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        self.write_at(buf, offset).map(|_| ())
    }

    pub(crate) fn stable(&self) -> stable_how {
        match self.inner().options.stable {
            StableMode::Unstable => stable_how::UNSTABLE,
            _ => stable_how::FILE_SYNC,
        }
    }

    pub(crate) fn write_call(&self, offset: u64, data: Arc<[u8]>, notify: Notify) -> Arc<Call> {
        self.write_call_with(offset, data, notify, self.stable())
    }

    fn write_call_with(
        &self,
        offset: u64,
        data: Arc<[u8]>,
        notify: Notify,
        stable: stable_how,
    ) -> Arc<Call> {
        let inner = self.inner();
        let mut body = inner.call_body(nfs3::NFSPROC3_WRITE, 96);
        encode_write_args_header(
            &mut body,
            self.shared.fh.as_bytes(),
            offset,
            data.len() as u32,
            stable,
        );
        let weight = data.len() as u64;
        Call::new(
            nfs3::NFSPROC3_WRITE,
            body,
            Some(data),
            weight,
            Sink::Record,
            notify,
            inner.shared().now_ns(),
        )
    }

    /// Checks a WRITE reply; returns the bytes the server took. Data the
    /// server did not put on stable storage is remembered for COMMIT.
    pub(crate) fn finish_write(&self, call: &Call, offset: u64, data: &Arc<[u8]>) -> Result<usize> {
        self.finish_write_durable(call, offset, data)
            .map(|(n, _)| n)
    }

    /// [`finish_write`](Self::finish_write), also telling whether the server
    /// put the data on stable storage (FILE_SYNC or DATA_SYNC reply).
    pub(crate) fn finish_write_durable(
        &self,
        call: &Call,
        offset: u64,
        data: &Arc<[u8]>,
    ) -> Result<(usize, bool)> {
        let bytes = match call
            .take_result()
            .map_err(|e| self.call_error("WRITE", e))?
        {
            Reply::Results(b) => b,
            Reply::Read { .. } => {
                return Err(self.call_error("WRITE", CallError::Internal("READ reply for a WRITE")))
            }
        };
        if is_jukebox(&bytes) {
            return Err(Error::Nfs {
                op: "WRITE",
                path: self.path().to_string(),
                status: nfsstat3::NFS3ERR_JUKEBOX,
            });
        }
        let reply =
            decode_write_reply(&mut XdrReader::new(&bytes)).map_err(|e| Error::Protocol {
                op: "WRITE",
                path: self.path().to_string(),
                detail: e.to_string(),
            })?;
        nfs_result(reply.status, "WRITE", self.path())?;
        let Some(ok) = reply.ok else {
            return Err(self.call_error("WRITE", CallError::Internal("WRITE OK without body")));
        };
        let count = (ok.count as usize).min(data.len());
        let durable =
            ok.committed == stable_how::FILE_SYNC || ok.committed == stable_how::DATA_SYNC;
        // In unstable mode durable writes are logged too, so a replay of an
        // older write after a server restart never lands on top of them.
        let log = !durable || self.inner().options.stable == StableMode::Unstable;
        if log && count > 0 {
            let kept: Arc<[u8]> = if count == data.len() {
                Arc::clone(data)
            } else {
                Arc::from(&data[..count])
            };
            let mut u = self
                .shared
                .uncommitted
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if !durable {
                u.bytes += count;
            }
            u.logged += count;
            u.writes.push(Logged {
                offset,
                data: kept,
                verf: ok.verf,
                durable,
            });
        }
        Ok((count, durable))
    }

    fn maybe_flush(&self) -> Result<()> {
        let over = self
            .shared
            .uncommitted
            .lock()
            .map(|u| u.logged > MAX_UNCOMMITTED_BYTES)
            .unwrap_or(false);
        if over {
            self.fsync()?;
        }
        Ok(())
    }

    /// Makes every write acknowledged so far durable. In FILE_SYNC mode
    /// there is nothing to do. In unstable mode this sends COMMIT and
    /// compares the server's write verifier with the one each WRITE
    /// returned: writes whose verifier differs (the server restarted and
    /// may have lost them) are sent again with FILE_SYNC before returning.
    pub fn fsync(&self) -> Result<()> {
        let _serial = self
            .shared
            .fsync_lock
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let batch = {
            let mut u = self
                .shared
                .uncommitted
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            u.bytes = 0;
            u.logged = 0;
            std::mem::take(&mut u.writes)
        };
        if batch.is_empty() {
            return Ok(());
        }
        let result = self.commit_and_repair(&batch);
        if result.is_err() {
            // Keep the data: nothing acknowledged may be lost, and a later
            // fsync must try again.
            let mut u = self
                .shared
                .uncommitted
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            // Back in front of anything written since: order matters.
            u.bytes += batch
                .iter()
                .filter(|w| !w.durable)
                .map(|w| w.data.len())
                .sum::<usize>();
            u.logged += batch.iter().map(|w| w.data.len()).sum::<usize>();
            let newer = std::mem::replace(&mut u.writes, batch);
            u.writes.extend(newer);
        }
        result
    }

    /// COMMITs, then re-sends as FILE_SYNC every write whose verifier
    /// differs from the COMMIT's (the server restarted since and may have
    /// lost it) — but only the bytes that no later acknowledged write
    /// covers, oldest first, so a replay never puts old data over new.
    fn commit_and_repair(&self, batch: &[Logged]) -> Result<()> {
        if batch.iter().all(|w| w.durable) {
            return Ok(());
        }
        let verf = self.commit()?;
        if batch.iter().all(|w| w.durable || w.verf == verf) {
            return Ok(());
        }
        // Writes acknowledged after this batch was taken are newer still.
        let newer: Vec<Logged> = self
            .shared
            .uncommitted
            .lock()
            .map(|u| u.writes.clone())
            .unwrap_or_default();
        for (i, w) in batch.iter().enumerate() {
            if w.durable || w.verf == verf {
                continue;
            }
            let later = batch[i + 1..].iter().chain(newer.iter());
            for (s, e) in uncovered(w.offset, w.end(), later) {
                tracing::warn!(
                    path = self.path(),
                    offset = s,
                    "write verifier changed (server restart?): re-sending {} bytes with FILE_SYNC",
                    e - s
                );
                let from = (s - w.offset) as usize;
                let to = (e - w.offset) as usize;
                self.write_sync(s, &Arc::from(&w.data[from..to]))?;
            }
        }
        Ok(())
    }

    fn write_sync(&self, mut off: u64, data: &Arc<[u8]>) -> Result<()> {
        let mut rest = Arc::clone(data);
        while !rest.is_empty() {
            let group = Group::new(1);
            let call = self.write_call_with(
                off,
                Arc::clone(&rest),
                Notify::Group(Arc::clone(&group)),
                stable_how::FILE_SYNC,
            );
            self.inner().run(Arc::clone(&call), &group);
            let n = self.finish_write(&call, off, &rest)?;
            if n == 0 {
                return Err(Error::Protocol {
                    op: "WRITE",
                    path: self.path().to_string(),
                    detail: "server wrote 0 bytes".into(),
                });
            }
            off += n as u64;
            rest = Arc::from(&rest[n..]);
        }
        Ok(())
    }

    /// COMMIT of the whole file; returns the server's write verifier.
    /// (JUKEBOX retries and RPC errors are handled by `Inner::call`.)
    fn commit(&self) -> Result<writeverf3> {
        let args = nfs3::COMMIT3args {
            file: self.shared.fh,
            offset: 0,
            count: 0,
        };
        match self.inner().call::<nfs3::Commit>(&args, self.path())?.0 {
            Nfs3Res::Ok(ok) => Ok(ok.verf),
            Nfs3Res::Fail(status, _) => Err(Error::Nfs {
                op: "COMMIT",
                path: self.path().to_string(),
                status,
            }),
        }
    }

    /// Bytes written in unstable mode and not yet committed.
    pub fn uncommitted_bytes(&self) -> usize {
        self.shared.uncommitted.lock().map(|u| u.bytes).unwrap_or(0)
    }

    /// Truncates or extends the file to `size` bytes.
    pub fn set_len(&self, size: u64) -> Result<()> {
        self.shared.client.setattr(
            &self.shared.fh,
            self.path(),
            sattr3 {
                size: Some(size),
                ..Default::default()
            },
        )
    }

    /// Current attributes, from the server.
    pub fn metadata(&self) -> Result<Metadata> {
        self.inner()
            .getattr(&self.shared.fh, self.path())
            .map(|a| Metadata::from_fattr(&a))
    }

    /// The client this file belongs to.
    pub fn client(&self) -> &Client {
        &self.shared.client
    }
}

/// Random bytes for verifiers, from the kernel.
pub(crate) fn fill_random(buf: &mut [u8]) {
    // SAFETY: the pointer and length describe `buf`, valid for writes.
    let n = unsafe { libc::getrandom(buf.as_mut_ptr().cast(), buf.len(), 0) };
    if n != buf.len() as isize {
        // Fall back to something unique per process and moment.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0)
            ^ (std::process::id() as u64) << 32;
        for (i, b) in buf.iter_mut().enumerate() {
            *b = (t >> ((i % 8) * 8)) as u8;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(offset: u64, len: usize) -> Logged {
        Logged {
            offset,
            data: Arc::from(vec![0u8; len]),
            verf: writeverf3([0; 8]),
            durable: false,
        }
    }

    #[test]
    fn replay_skips_bytes_a_later_write_covers() {
        let later = [w(10, 10), w(30, 5)];
        assert_eq!(
            uncovered(0, 40, later.iter()),
            vec![(0, 10), (20, 30), (35, 40)]
        );
    }

    #[test]
    fn replay_of_a_fully_rewritten_block_sends_nothing() {
        let later = [w(0, 8192)];
        assert!(uncovered(0, 8192, later.iter()).is_empty());
        assert_eq!(uncovered(0, 8192, [].iter()), vec![(0, 8192)]);
    }
}
