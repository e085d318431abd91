//! Open files: positional reads and writes straight to the server.
//!
//! No data is cached. A read or write larger than the negotiated transfer
//! size is split into pieces that are all sent at once (spread over the
//! channels) and the caller waits for all of them. `&self` everywhere: any
//! number of threads may read and write one `File` concurrently; the
//! database orders its own I/O.
//!
//! Writes not yet known durable go to the write log (`writelog.rs`);
//! `fsync`, which commits them and repairs what a server restart lost, is
//! in `fsync.rs`. Writes that go behind (unstable mode) are
//! `file/writebehind.rs`'s, a child of this module: it and this file name
//! each other.

pub(crate) mod inflight;
mod lock;
#[cfg(test)]
mod versions_tests;
pub(crate) mod writebehind;

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use directnfs_engine::IoClass;
use directnfs_wire::nfs3::{
    self, createhow3, createverf3, diropargs3, nfs_fh3, nfsstat3, sattr3, stable_how, Nfs3Res,
};
use directnfs_wire::xdr::XdrWrite;

use crate::client::{nfs_result, Client, Inner};
use crate::config::StableMode;
use crate::error::{Error, Result};
use crate::io::call::{released, Call, CallPool, Group, Notify, ReadDest, Reply, Sink};
use crate::io::call_error::CallError;
use crate::metadata::Metadata;
use crate::open_options::OpenOptions;
use crate::writelog::WriteLog;
use crate::written::Written;
use writebehind::WriteBehind;

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
    /// Writes not yet known durable (unstable mode, or FILE_SYNC writes
    /// the server downgraded), and the newer writes that must not be
    /// overwritten by their replay; see `writelog.rs`.
    uncommitted: Mutex<WriteLog>,
    /// Signalled when a repair ends: writes overlapping it wait for that.
    pub(crate) repaired: Condvar,
    /// FILE_SYNC mode: the log is not empty, so new writes are logged too
    /// (an older write kept there may have to be sent again, and must not
    /// land on them). False on the default hot path: no lock taken.
    tracked: AtomicBool,
    /// Every write asks FILE_SYNC, also in unstable mode
    /// ([`File::set_sync_writes`]: an `O_DSYNC` descriptor).
    sync_writes: AtomicBool,
    /// The I/O class of this file's reads and writes
    /// ([`File::set_io_class`]), as `IoClass::index`.
    io_class: AtomicU8,
    /// This file's counters (v$dnfs_files).
    pub(crate) stats: Arc<crate::stats::files::FileRecord>,
    /// Serialises `fsync`s of this file: a second caller must not return
    /// while the first one's COMMIT (which took its writes too) is still
    /// running or failed.
    pub(crate) fsync_lock: Mutex<()>,
    /// The body of every READ and WRITE call of this file up to the
    /// offset — call header, credential, handle — encoded once at open:
    /// a call then costs a copy of it and three words.
    read_head: Vec<u8>,
    write_head: Vec<u8>,
    /// Writes sent and not yet answered (unstable mode; `writebehind.rs`).
    pub(crate) wb: WriteBehind,
    /// The NFSv4.1 open state, on an NFSv4.1 client (the methods then
    /// hand their work to `crate::v4::open_file`).
    pub(crate) v4: Option<crate::v4::open_file::OpenFile>,
    /// On an NFSv4.1 client, the handle (up to 128 bytes) a file opened
    /// by handle was given, kept also when its OPEN was refused (a
    /// directory or a link: attributes are still set by handle).
    pub(crate) v4_handle: Option<directnfs_wire::nfs4::nfs_fh4>,
}

impl FileShared {
    fn new(client: &Client, fh: nfs_fh3, path: &str) -> Self {
        let inner = &client.inner;
        let head = |proc_: u32| {
            let mut b = Vec::with_capacity(64 + inner.cred_len() + fh.as_bytes().len());
            inner.put_call_header(&mut b, proc_);
            b.put_opaque(fh.as_bytes());
            b
        };
        Self {
            client: client.clone(),
            read_head: head(nfs3::NFSPROC3_READ),
            write_head: head(nfs3::NFSPROC3_WRITE),
            fh,
            path: path.to_string(),
            uncommitted: Mutex::new(WriteLog::default()),
            repaired: Condvar::new(),
            tracked: AtomicBool::new(false),
            sync_writes: AtomicBool::new(false),
            io_class: AtomicU8::new(IoClass::Data.index() as u8),
            stats: inner.file_stats(path),
            fsync_lock: Mutex::new(()),
            wb: WriteBehind::new(match inner.options.stable {
                StableMode::Unstable => inner.options.write_behind,
                _ => 0,
            }),
            v4: None,
            v4_handle: None,
        }
    }
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
        if self.inner.v4.is_some() {
            let open = crate::v4::open_file::open(&self.host(), path, opts)?;
            let mut shared = FileShared::new(self, nfs_fh3::default(), path);
            shared.v4 = Some(open);
            return Ok(File {
                shared: Arc::new(shared),
            });
        }
        self.fresh(|| self.open_with_once(path, opts))
    }

    fn open_with_once(&self, path: &str, opts: OpenOptions) -> Result<File> {
        let inner = &self.inner;
        // The size for v$dnfs_files: from LOOKUP's attributes, 0 when made
        // or truncated here; unknown when the handle came from the cache.
        let (fh, size) = if opts.create_new {
            (
                self.create_exclusive(path, opts.mode.unwrap_or(0o644))?,
                Some(0),
            )
        } else {
            match inner.lookup_path_sized(path) {
                Ok((fh, size)) => {
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
                    (fh, if opts.truncate { Some(0) } else { size })
                }
                Err(e) if opts.create && e.nfs_status() == Some(nfsstat3::NFS3ERR_NOENT) => (
                    self.create_unchecked(path, opts.mode.unwrap_or(0o644))?,
                    Some(0),
                ),
                Err(e) => return Err(e),
            }
        };
        let file = File::from_handle(self, fh, path);
        if let Some(size) = size {
            file.shared.stats.set_size(size);
        }
        Ok(file)
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
    /// mode is set afterwards, and the times too: the server keeps the
    /// verifier in them (RFC 1813 §3.3.8), which an empty file would show
    /// as a date far in the future.
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
                atime: nfs3::SetTime::SetToServerTime,
                mtime: nfs3::SetTime::SetToServerTime,
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

impl File {
    /// The open file of NFSv3 handle `fh`, known to the caller as `path`.
    pub(crate) fn from_handle(client: &Client, fh: nfs_fh3, path: &str) -> File {
        File {
            shared: Arc::new(FileShared::new(client, fh, path)),
        }
    }

    /// The open file of a public handle (`Client::open_handle`): on
    /// NFSv4.1 opened by it (OPEN CLAIM_FH, up to 128 bytes).
    pub(crate) fn from_public_handle(
        client: &Client,
        handle: &crate::handle::Handle,
        path: &str,
    ) -> File {
        // An NFSv3 handle longer than 64 bytes cannot be: such a `File`
        // fails at the server (an empty handle is stale).
        let fh = nfs_fh3::new(handle.as_bytes()).unwrap_or_default();
        let mut shared = FileShared::new(client, fh, path);
        shared.v4 = crate::v4::handles::open(&client.host(), &handle.0, path);
        if client.inner.v4.is_some() {
            shared.v4_handle = Some(handle.0);
        }
        File {
            shared: Arc::new(shared),
        }
    }
}

#[cfg(test)]
impl File {
    /// An open file of a [`Client::detached`], without asking any server.
    pub(crate) fn detached(client: &Client, path: &str) -> File {
        File {
            shared: Arc::new(FileShared::new(client, nfs_fh3::default(), path)),
        }
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
    /// bytes read: fewer than asked only at end of file, 0 at or past it.
    /// A server may answer a READ with fewer bytes than asked before the
    /// end of the file (RFC 1813 §3.3.6 allows it); the rest is asked for
    /// again until the buffer is full or the server says EOF. A READ that
    /// returns nothing without EOF would loop for ever: it is a `Protocol`
    /// error (EIO), as in the Linux client.
    ///
    /// Write-behind writes of this file still in flight over these bytes
    /// are waited for first, so the read returns their data.
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<usize> {
        self.settle(offset, buf.len());
        let start = self.op_start(nfs3::NFSPROC3_READ);
        let result = self
            .check_range(offset, buf.len(), "READ")
            .and_then(|()| self.read_full(buf, offset));
        self.op_end(nfs3::NFSPROC3_READ, start, &result, true);
        result
    }

    /// Reads until `buf` is full or the server says EOF (no statistics,
    /// no write-behind barrier: `read_at`'s body).
    pub(crate) fn read_full(&self, buf: &mut [u8], offset: u64) -> Result<usize> {
        let mut total = 0;
        while total < buf.len() {
            let at = offset + total as u64;
            let (n, eof) = self.read_at_once(&mut buf[total..], at)?;
            total += n;
            if eof {
                break;
            }
            if n == 0 {
                return Err(self.read_without_progress(at));
            }
        }
        Ok(total)
    }

    /// The error for a READ that returned no data and no EOF.
    pub(crate) fn read_without_progress(&self, offset: u64) -> Error {
        Error::Protocol {
            op: "READ",
            path: self.path().to_string(),
            detail: format!("server returned 0 bytes at offset {offset} without end of file"),
        }
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

    /// A `ro` mount refuses writes (EROFS) before anything is sent.
    pub(crate) fn check_writable(&self) -> Result<()> {
        self.inner()
            .check_writable(nfs3::NFSPROC3_WRITE, "WRITE", self.path())
    }

    /// Counts an operation on this file's statistics; returns its start time.
    pub(crate) fn op_start(&self, proc_: u32) -> u64 {
        self.shared.stats.on_submit(proc_);
        self.inner().transport().now_ns()
    }

    pub(crate) fn op_end(&self, proc_: u32, start: u64, result: &Result<usize>, read: bool) {
        let now = self.inner().transport().now_ns();
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
        self.inner()
            .io_classes
            .record(self.io_class(), proc_, latency, r, w, result.is_ok());
    }

    /// One round of READs over `buf` (one per `rtmax` piece, sent at
    /// once: as many at a time as the version's [`lanes`](Self::lanes)
    /// allow, all of them on NFSv3, one per free session slot on NFSv4.1).
    /// Returns the bytes read from the start up to the first short piece,
    /// and whether the server said EOF there (or at the end).
    fn read_at_once(&self, buf: &mut [u8], offset: u64) -> Result<(usize, bool)> {
        if buf.is_empty() {
            return Ok((0, false));
        }
        let rtmax = self.inner().limits.rtmax as usize;
        let len = buf.len();
        let pieces: Vec<(u64, *mut u8, usize)> = buf
            .chunks_mut(rtmax)
            .enumerate()
            .map(|(i, c)| (offset + (i * rtmax) as u64, c.as_mut_ptr(), c.len()))
            .collect();
        let transport = self.inner().transport();
        let mut total = 0usize;
        let mut next = 0;
        while next < pieces.len() {
            let mut lanes = self.lanes(pieces.len() - next, "READ")?;
            let round = &pieces[next..next + lanes.len().min(pieces.len() - next)];
            next += round.len();
            let group = Group::new(round.len());
            // Dropped (waiting) before `buf`'s borrow ends, however this
            // function ends: no reply lands in `buf` after it returned.
            let mut landing = Landing {
                transport,
                calls: Vec::with_capacity(round.len()),
            };
            let mut sent = Vec::with_capacity(round.len());
            for &(at, ptr, n) in round {
                // SAFETY: `ptr..ptr + n` is a piece of the caller's buffer,
                // borrowed for this whole function, and `landing` waits
                // (when dropped, on return or unwind) until no call can
                // write into it any more.
                let dest = unsafe { ReadDest::from_raw(ptr, n) };
                let piece =
                    self.start_read(&mut lanes, at, dest, Notify::Group(Arc::clone(&group)));
                landing.calls.push(Arc::clone(piece.call()));
                sent.push(piece);
            }
            transport.send_and_wait(landing.calls.iter().cloned(), &group);
            // Every piece settled (on NFSv4.1: its slot released) before
            // any error is returned.
            let outcomes = self.settle_round(sent);
            let mut results = Vec::with_capacity(round.len());
            for (outcome, &(at, ptr, n)) in outcomes.into_iter().zip(round) {
                // SAFETY: as above; every call of the round has completed
                // (settling re-sends only into the same piece, and waits),
                // so nobody else writes this piece of the buffer now.
                let piece = unsafe { std::slice::from_raw_parts_mut(ptr, n) };
                results.push(self.finish_read_piece(outcome, piece, at));
            }
            let mut stop: Option<bool> = None;
            for (result, &(_, _, want)) in results.into_iter().zip(round) {
                let p = result?;
                if stop.is_none() {
                    total += p.count;
                    if p.count < want || p.eof {
                        stop = Some(p.eof);
                    }
                }
            }
            if let Some(eof) = stop {
                return Ok((total, eof));
            }
        }
        debug_assert_eq!(total, len);
        Ok((total, false))
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

    /// [`read_call`](Self::read_call) reusing a finished call of `pool`.
    pub(crate) fn read_call_pooled(
        &self,
        offset: u64,
        dest: ReadDest,
        notify: Notify,
        pool: &mut CallPool,
    ) -> Arc<Call> {
        let head = &self.shared.read_head;
        let count = dest.len() as u32;
        let weight = dest.len() as u64;
        let call = Call::new_pooled(
            pool,
            nfs3::NFSPROC3_READ,
            // READ3args after the handle (RFC 1813 §3.3.6).
            |body| {
                body.extend_from_slice(head);
                body.put_u64(offset);
                body.put_u32(count);
            },
            None,
            weight,
            Sink::Read(dest),
            notify,
        );
        call.set_class(self.io_class());
        call
    }

    pub(crate) fn read_call(&self, offset: u64, dest: ReadDest, notify: Notify) -> Arc<Call> {
        // An empty pool: a new call, encoded the same way.
        self.read_call_pooled(offset, dest, notify, &mut CallPool::default())
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
            Reply::Results(_) | Reply::Read4 { .. } | Reply::Write { .. } => {
                Err(self.call_error("READ", CallError::Internal("non-READ reply for a READ")))
            }
        }
    }

    fn call_error(&self, op: &'static str, e: CallError) -> Error {
        Error::from_call(op, self.path(), e)
    }

    /// Writes all of `buf` at `offset`. Returns once the data is durable
    /// (FILE_SYNC mode, the default) or acknowledged (unstable mode: durable
    /// after the next [`fsync`](Self::fsync)). In unstable mode with
    /// write-behind on (`write_behind`, the default there) it returns once
    /// the data is copied and sent: an error of that WRITE is reported by
    /// the next `fsync` (see `writebehind.rs`). While an `fsync` of this file
    /// sends older data again after a server restart over bytes this write
    /// covers, it waits for that to finish first, so the newer data lands
    /// last.
    pub fn write_at(&self, buf: &[u8], offset: u64) -> Result<usize> {
        let start = self.op_start(nfs3::NFSPROC3_WRITE);
        let result = if self.writes_behind() {
            self.write_behind(buf, offset)
        } else {
            self.write_at_inner(buf, offset)
        };
        self.op_end(nfs3::NFSPROC3_WRITE, start, &result, false);
        if let Ok(n) = result {
            self.shared.stats.extend_to(offset.saturating_add(n as u64));
        }
        result
    }

    /// `write_at`'s body when it waits for the replies (no statistics).
    pub(crate) fn write_at_inner(&self, buf: &[u8], offset: u64) -> Result<usize> {
        self.check_range(offset, buf.len(), "WRITE")?;
        self.check_writable()?;
        let wtmax = self.inner().limits.wtmax as usize;
        let mut pending: Vec<(u64, Arc<[u8]>)> = buf
            .chunks(wtmax)
            .enumerate()
            .map(|(i, c)| (offset + (i * wtmax) as u64, Arc::from(c)))
            .collect();
        // A piece asked FILE_SYNC that the server only took UNSTABLE.
        let mut downgraded = false;
        while !pending.is_empty() {
            // All pieces logged at once (one lock), before any is sent.
            self.log_submitted(pending.iter().map(|(off, data)| (*off, data)));
            let results = self.write_round(&pending, self.stable());
            let mut again = Vec::new();
            for ((off, data), result) in pending.into_iter().zip(results) {
                match self.record_write(off, &data, result) {
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
                    Err(e) => return Err(e),
                }
            }
            pending = again;
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

    /// Sends `pieces` (offset, data) asking `stable`, as many at a time as
    /// the version's [`lanes`](Self::lanes) allow (all of them on NFSv3),
    /// and returns each one's reply, in order. Logging them is the
    /// caller's (`log_submitted` before, `record_write` after).
    pub(crate) fn write_round(
        &self,
        pieces: &[(u64, Arc<[u8]>)],
        stable: stable_how,
    ) -> Vec<Result<Written>> {
        let transport = self.inner().transport();
        let mut results = Vec::with_capacity(pieces.len());
        let mut next = 0;
        while next < pieces.len() {
            let mut lanes = match self.lanes(pieces.len() - next, "WRITE") {
                Ok(lanes) => lanes,
                Err(e) => {
                    results.push(Err(e));
                    next += 1;
                    continue;
                }
            };
            let round = &pieces[next..next + lanes.len().min(pieces.len() - next)];
            next += round.len();
            let group = Group::new(round.len());
            let sent: Vec<_> = round
                .iter()
                .map(|(off, data)| {
                    let notify = Notify::Group(Arc::clone(&group));
                    self.start_write(&mut lanes, *off, data, stable, notify)
                })
                .collect();
            transport.send_and_wait(sent.iter().map(|p| Arc::clone(p.call())), &group);
            let outcomes = self.settle_round(sent);
            for (outcome, (off, data)) in outcomes.into_iter().zip(round) {
                results.push(self.finish_write_piece(outcome, *off, data, stable));
            }
        }
        results
    }

    /// Same as [`write_at`](Self::write_at); named like `std`'s for symmetry.
    pub fn write_all_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        self.write_at(buf, offset).map(|_| ())
    }

    /// Every write of this file and its clones asks FILE_SYNC, also in
    /// unstable mode, and waits for its reply: durable when `write_at`
    /// returns, in one round trip and with no COMMIT — what an
    /// `O_DSYNC`/`O_SYNC` descriptor needs (an UNSTABLE WRITE and a COMMIT
    /// would be two). Write-behind is off meanwhile; turning this on waits
    /// for the writes in flight first. Unstable writes made before stay
    /// for the next [`fsync`](Self::fsync). No effect in FILE_SYNC mode.
    pub fn set_sync_writes(&self, on: bool) {
        let was = self.shared.sync_writes.swap(on, Ordering::Relaxed);
        if on && !was {
            self.settle(0, usize::MAX);
        }
    }

    /// Sets the I/O class of this file's reads and writes, and its
    /// clones' (default [`IoClass::Data`]): [`IoClass::Log`] for a redo
    /// log, WAL or journal (its requests go on each path's log lane and
    /// never wait behind bulk ones), [`IoClass::Bulk`] for a scan, copy or
    /// backup (kept off the log lanes). Honoured unless the mount says
    /// `io_classes=off`; see the book's I/O classes chapter.
    pub fn set_io_class(&self, class: IoClass) {
        self.shared
            .io_class
            .store(class.index() as u8, Ordering::Relaxed);
    }

    /// The I/O class of this file's reads and writes
    /// ([`set_io_class`](Self::set_io_class)).
    pub fn io_class(&self) -> IoClass {
        IoClass::from_index(self.shared.io_class.load(Ordering::Relaxed) as usize)
    }

    pub(crate) fn sync_writes(&self) -> bool {
        self.shared.sync_writes.load(Ordering::Relaxed)
    }

    pub(crate) fn stable(&self) -> stable_how {
        if self.sync_writes() {
            return stable_how::FILE_SYNC;
        }
        match self.inner().options.stable {
            StableMode::Unstable => stable_how::UNSTABLE,
            _ => stable_how::FILE_SYNC,
        }
    }

    fn unstable_mode(&self) -> bool {
        self.inner().options.stable == StableMode::Unstable
    }

    /// Whether writes go through the write log: always in unstable mode;
    /// in FILE_SYNC mode only while it holds something (one atomic load on
    /// the hot path, no lock).
    fn logs_writes(&self) -> bool {
        self.unstable_mode() || self.shared.tracked.load(Ordering::Acquire)
    }

    pub(crate) fn log(&self) -> MutexGuard<'_, WriteLog> {
        self.shared
            .uncommitted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// FILE_SYNC mode: keeps `tracked` equal to "the log holds something".
    /// Called with the log locked after every change, so a write that
    /// finds `tracked` false was submitted while the log was empty (or
    /// concurrently with the write that filled it).
    pub(crate) fn update_tracked(&self, log: &WriteLog) {
        if !self.unstable_mode() {
            self.shared
                .tracked
                .store(!log.is_empty(), Ordering::Release);
        }
    }

    /// Logs writes about to be sent (see `writelog.rs`). While a repair
    /// sends older data again over any of their bytes, waits for it to end
    /// first: sent now, they could be executed before the older data and
    /// be overwritten by it.
    pub(crate) fn log_submitted<'a>(
        &self,
        writes: impl Iterator<Item = (u64, &'a Arc<[u8]>)> + Clone,
    ) {
        if !self.logs_writes() {
            return;
        }
        let mut log = self.log();
        while writes
            .clone()
            .any(|(off, data)| log.blocks(off, data.len()))
        {
            log = self
                .shared
                .repaired
                .wait(log)
                .unwrap_or_else(|p| p.into_inner());
        }
        if !self.unstable_mode() && log.is_empty() {
            // FILE_SYNC mode, and the log emptied since `tracked` was read.
            return;
        }
        for (off, data) in writes {
            log.submit(off, data);
        }
        self.update_tracked(&log);
    }

    /// A WRITE call of `data` at `offset`, logged as submitted (in unstable
    /// mode; see [`log_submitted`](Self::log_submitted), which may wait
    /// for a repair of the same bytes to end), reusing a finished call of
    /// `pool`. Its reply must go to
    /// [`finish_write_durable`](Self::finish_write_durable) with the same
    /// `data`.
    pub(crate) fn write_call_pooled(
        &self,
        offset: u64,
        data: Arc<[u8]>,
        notify: Notify,
        pool: &mut CallPool,
    ) -> Arc<Call> {
        self.log_submitted(std::iter::once((offset, &data)));
        self.make_write_call(offset, data, notify, self.stable(), pool)
    }

    pub(crate) fn write_call_with(
        &self,
        offset: u64,
        data: Arc<[u8]>,
        notify: Notify,
        stable: stable_how,
    ) -> Arc<Call> {
        // An empty pool: a new call, encoded the same way.
        self.make_write_call(offset, data, notify, stable, &mut CallPool::default())
    }

    fn make_write_call(
        &self,
        offset: u64,
        data: Arc<[u8]>,
        notify: Notify,
        stable: stable_how,
        pool: &mut CallPool,
    ) -> Arc<Call> {
        let head = &self.shared.write_head;
        let count = data.len() as u32;
        // WRITE3args after the handle, up to the data's length word (RFC
        // 1813 §3.3.7); the data follows as its own iovec.
        let encode = |body: &mut Vec<u8>| {
            body.extend_from_slice(head);
            body.put_u64(offset);
            body.put_u32(count);
            body.put_u32(stable.0);
            body.put_u32(count);
        };
        let weight = data.len() as u64;
        let call = Call::new_pooled(
            pool,
            nfs3::NFSPROC3_WRITE,
            encode,
            Some(data),
            weight,
            Sink::Write,
            notify,
        );
        call.set_class(self.io_class());
        call
    }

    /// Checks the reply to a [`write_call_pooled`](Self::write_call_pooled)
    /// (or `write_at`'s own calls); returns the
    /// bytes the server took and whether it put them on stable storage
    /// (FILE_SYNC or DATA_SYNC reply). Data it did not is kept in the log
    /// for COMMIT (and a replay after a restart).
    pub(crate) fn finish_write_durable(
        &self,
        call: &Call,
        offset: u64,
        data: &Arc<[u8]>,
    ) -> Result<(usize, bool)> {
        self.record_write(offset, data, self.decode_write(call, data))
    }

    /// Logs the reply (`result`) to a WRITE of `data` at `offset`, either
    /// version: data not on stable storage is kept in the log for COMMIT
    /// (and a replay after a restart). Returns the bytes the server took
    /// and whether it put them on stable storage.
    pub(crate) fn record_write(
        &self,
        offset: u64,
        data: &Arc<[u8]>,
        result: Result<Written>,
    ) -> Result<(usize, bool)> {
        // FILE_SYNC mode's hot path: durable (or failed), nothing logged.
        let quiet = !self.logs_writes() && result.as_ref().map_or(true, |w| w.durable);
        if !quiet {
            let mut log = self.log();
            match &result {
                Ok(w) => log.acked(offset, data, w.count, w.verf, w.durable),
                Err(_) => log.failed(offset, data),
            }
            self.update_tracked(&log);
        }
        result.map(|w| (w.count, w.durable))
    }

    /// Forgets a logged write whose call will never be answered (it goes
    /// again as a new request, logged anew).
    pub(crate) fn forget_write(&self, offset: u64, data: &Arc<[u8]>) {
        if !self.logs_writes() {
            return;
        }
        let mut log = self.log();
        log.failed(offset, data);
        self.update_tracked(&log);
    }

    /// Decodes a WRITE reply (`data` is what the call sent).
    pub(crate) fn decode_write(&self, call: &Call, data: &[u8]) -> Result<Written> {
        let (status, ok) = match call
            .take_result()
            .map_err(|e| self.call_error("WRITE", e))?
        {
            // Decoded by the receiver (`Sink::Write`; a malformed reply
            // arrives as a decode error, reported as `Protocol`).
            Reply::Write { status, ok } => (status, ok),
            Reply::Results(_) | Reply::Read { .. } | Reply::Read4 { .. } => {
                return Err(
                    self.call_error("WRITE", CallError::Internal("non-WRITE reply for a WRITE"))
                )
            }
        };
        if status == nfsstat3::NFS3ERR_JUKEBOX {
            return Err(Error::Nfs {
                op: "WRITE",
                path: self.path().to_string(),
                status: nfsstat3::NFS3ERR_JUKEBOX,
            });
        }
        nfs_result(status, "WRITE", self.path())?;
        let Some(ok) = ok else {
            return Err(self.call_error("WRITE", CallError::Internal("WRITE OK without body")));
        };
        self.inner().note_verifier(ok.verf);
        Ok(Written {
            count: (ok.count as usize).min(data.len()),
            durable: ok.committed == stable_how::FILE_SYNC || ok.committed == stable_how::DATA_SYNC,
            verf: ok.verf,
        })
    }

    /// Bytes written in unstable mode (or FILE_SYNC writes the server
    /// downgraded) and not yet committed: acknowledged, or write-behind
    /// writes still in flight.
    pub fn uncommitted_bytes(&self) -> usize {
        let behind = self.wb_in_flight();
        self.log().bytes() + behind
    }

    /// Truncates or extends the file to `size` bytes (after the file's
    /// write-behind writes in flight, so none lands past a truncation).
    pub fn set_len(&self, size: u64) -> Result<()> {
        self.settle(0, usize::MAX);
        self.set_size_op(size)?;
        self.shared.stats.set_size(size);
        Ok(())
    }

    /// NFSv3's SETATTR of the size (`rpcops.rs` `set_size_op`).
    pub(crate) fn set_size_v3(&self, size: u64) -> Result<()> {
        self.shared.client.setattr(
            &self.shared.fh,
            self.path(),
            sattr3 {
                size: Some(size),
                ..Default::default()
            },
        )
    }

    /// Current attributes, from the server (after the file's write-behind
    /// writes in flight, which may change its size).
    pub fn metadata(&self) -> Result<Metadata> {
        self.settle(0, usize::MAX);
        let m = self.getattr_op()?;
        self.shared.stats.set_size(m.size);
        Ok(m)
    }

    /// The client this file belongs to.
    pub fn client(&self) -> &Client {
        &self.shared.client
    }
}

/// READ calls writing into a caller's buffer. Dropping this waits until
/// none of them can write any more (each completed, or never handed to the
/// transport), so the buffer is never written after the function that
/// lent it returned or unwound.
struct Landing<'a> {
    transport: &'a crate::io::transport::Transport,
    calls: Vec<Arc<Call>>,
}

impl Drop for Landing<'_> {
    fn drop(&mut self) {
        let calls = &self.calls;
        // Completed calls: nothing to wait for (the normal return).
        if calls.iter().all(released) {
            return;
        }
        self.transport
            .wait_until(&|| calls.iter().all(released), None);
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

/// The blocking read path against a server played in-process
/// (`crate::testing`): runs under Miri too.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::MountOptions;
    use crate::testing::{late, pattern, Behaviour, FakeServer};
    use std::time::Duration;

    fn setup(behaviour: Behaviour) -> (Client, File, FakeServer) {
        let client = Client::detached(MountOptions::default(), 4096, 4096);
        let file = File::detached(&client, "/f");
        let server = FakeServer::start(&client, behaviour);
        (client, file, server)
    }

    #[test]
    fn read_and_write_calls_encode_as_the_wire_encoders_do() {
        let client = Client::detached(MountOptions::default(), 4096, 4096);
        let fh = nfs_fh3::new(b"a handle of 24 bytes!!!!").expect("handle");
        let file = File {
            shared: Arc::new(FileShared::new(&client, fh, "/f")),
        };
        let mut buf = [0u8; 100];
        // SAFETY: the call is never sent; the buffer outlives it.
        let dest = unsafe { ReadDest::new(&mut buf) };
        let read = file.read_call(0x1234_5678_9abc, dest, Notify::Group(Group::new(1)));
        let mut want = Vec::new();
        client.inner.put_call_header(&mut want, nfs3::NFSPROC3_READ);
        nfs3::encode_read_args(&mut want, fh.as_bytes(), 0x1234_5678_9abc, 100);
        assert_eq!(read.body, want);
        let data: Arc<[u8]> = Arc::from(&[7u8; 10][..]);
        let write = file.write_call_with(
            99,
            data,
            Notify::Group(Group::new(1)),
            stable_how::DATA_SYNC,
        );
        let mut want = Vec::new();
        client
            .inner
            .put_call_header(&mut want, nfs3::NFSPROC3_WRITE);
        nfs3::encode_write_args_header(&mut want, fh.as_bytes(), 99, 10, stable_how::DATA_SYNC);
        assert_eq!(write.body, want);
    }

    #[test]
    fn read_at_fills_the_buffer_from_every_piece() {
        let (_client, file, _server) = setup(Behaviour {
            delay: Duration::from_millis(5),
            ..Behaviour::default()
        });
        let mut buf = vec![0u8; 3 * 4096 + 1];
        assert_eq!(file.read_at(&mut buf, 11).unwrap(), buf.len());
        assert!(buf
            .iter()
            .enumerate()
            .all(|(i, b)| *b == pattern(11 + i as u64)));
    }

    #[test]
    fn read_at_fills_the_buffer_when_the_server_returns_short_reads() {
        let (_client, file, server) = setup(Behaviour {
            short_reads_from: Some(1000),
            ..Behaviour::default()
        });
        let mut buf = vec![0u8; 3 * 4096 + 1];
        assert_eq!(file.read_at(&mut buf, 3).unwrap(), buf.len());
        assert!(buf
            .iter()
            .enumerate()
            .all(|(i, b)| *b == pattern(3 + i as u64)));
        assert!(server.seen().reads.len() > 4);
    }

    #[test]
    fn read_at_is_short_only_at_eof() {
        let (_client, file, _server) = setup(Behaviour {
            eof_at: Some(6000),
            short_reads_from: Some(3000),
            ..Behaviour::default()
        });
        let mut buf = vec![0u8; 4 * 4096];
        assert_eq!(file.read_at(&mut buf, 1000).unwrap(), 5000);
        assert!(buf[..5000]
            .iter()
            .enumerate()
            .all(|(i, b)| *b == pattern(1000 + i as u64)));
        assert_eq!(file.read_at(&mut buf, 6000).unwrap(), 0, "at EOF");
    }

    #[test]
    fn an_unwind_waits_for_the_reads_handed_over_and_not_for_the_others() {
        let (client, file, server) = setup(Behaviour {
            // Late enough that a caller which did not wait would be gone.
            delay: late(),
            ..Behaviour::default()
        });
        let mut buf = vec![0u8; 2 * 4096];
        let transport = client.inner.transport();
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let (a, b) = buf.split_at_mut(4096);
            let group = Group::new(2);
            let mut landing = Landing {
                transport,
                calls: Vec::new(),
            };
            for (offset, chunk) in [(0u64, a), (4096, b)] {
                // SAFETY: `landing` waits before the borrow of `buf` ends.
                let dest = unsafe { ReadDest::new(chunk) };
                let call = file.read_call(offset, dest, Notify::Group(Arc::clone(&group)));
                landing.calls.push(call);
            }
            // Only the first is handed to the transport before the panic.
            transport.submit_many(landing.calls[..1].iter().cloned());
            panic!("a failure between submitting and waiting");
        }));
        assert!(unwound.is_err());
        assert_eq!(server.answered(), 1, "the read handed over was waited for");
        assert!(buf[..4096]
            .iter()
            .enumerate()
            .all(|(i, b)| *b == pattern(i as u64)));
        assert!(
            buf[4096..].iter().all(|b| *b == 0),
            "the other was never sent"
        );
    }
}
