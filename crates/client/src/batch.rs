//! The batch API: submit many reads and writes, then reap completions —
//! at least N of them, with a timeout — the `aio_waitn` model the Solaris
//! report credits for database I/O rates
//! (docs/design.md "Why it exists").
//!
//! ```no_run
//! # fn demo(file: &directnfs::File) -> directnfs::Result<()> {
//! let mut a = vec![0u8; 8192];
//! let mut b = vec![0u8; 8192];
//! file.client().batch_scope(|batch| {
//!     batch.read(file, 0, &mut a, 1)?;
//!     batch.read(file, 8192, &mut b, 2)?;
//!     for done in batch.wait(2, None) {
//!         println!("token {} -> {:?} bytes", done.token, done.result);
//!     }
//!     Ok::<_, directnfs::Error>(())
//! })?;
//! # Ok(()) }
//! ```
//!
//! # Buffers
//!
//! The server writes a READ's data straight into the caller's buffer, at
//! any time until the read completes, so a buffer must stay alive and
//! untouched until then. Three forms keep that promise:
//!
//! * **Scoped** ([`Client::batch_scope`], the `std::thread::scope`
//!   pattern): reads borrow their buffers; the batch lives inside the
//!   scope, which waits for every read before it returns, however the
//!   closure ends (unwinding included). The closure only ever holds a
//!   `&mut` [`ScopedBatch`], so the batch cannot be leaked
//!   (`std::mem::forget`), moved out or swapped for another scope's.
//! * **Owned** ([`Batch::read_owned`], [`Batch::write_owned`]): the batch
//!   owns the buffer until the completion hands it back. Forgetting a
//!   batch leaks its buffers with it — never frees them under the server.
//! * **Borrowed on a free-standing batch** ([`Batch::read`]): `unsafe`.
//!   Dropping the batch waits for its reads, but a batch that is never
//!   dropped (`std::mem::forget`, a reference cycle) would end the borrow
//!   while the server may still write: the `thread::scoped` mistake. The
//!   caller promises not to do that (the C library's contract does).
//!
//! Writes copy their data when submitted ([`Batch::write`] borrows only
//! for the call), so no write form has that hazard.
//!
//! The safe API cannot express a leaked borrowed read:
//!
//! ```compile_fail,E0133
//! # fn demo(file: &directnfs::File) -> directnfs::Result<()> {
//! let mut buf = vec![0u8; 8192];
//! let mut batch = directnfs::Batch::new(file.client());
//! batch.read(file, 0, &mut buf, 1)?; // error: `read` is unsafe
//! std::mem::forget(batch);
//! drop(buf); // (the server could still be writing here)
//! # Ok(()) }
//! ```
//!
//! ```compile_fail,E0521
//! # fn demo(file: &directnfs::File) -> directnfs::Result<()> {
//! let mut buf = vec![0u8; 8192];
//! let mut kept = None;
//! file.client().batch_scope(|batch| {
//!     batch.read(file, 0, &mut buf, 1)?;
//!     kept = Some(batch); // error: the batch cannot leave its scope
//!     Ok::<_, directnfs::Error>(())
//! })?;
//! std::mem::forget(kept);
//! # Ok(()) }
//! ```
//!
//! ```compile_fail,E0521
//! # fn demo(file: &directnfs::File) -> directnfs::Result<()> {
//! let mut buf = vec![0u8; 8192];
//! let client = file.client();
//! client.batch_scope(|outer| {
//!     client.batch_scope(|inner| {
//!         inner.read(file, 0, &mut buf, 1)?;
//!         // error: two scopes' batches are different types, so the
//!         // inner one cannot be swapped out to outlive its scope
//!         std::mem::swap(outer, inner);
//!         Ok::<_, directnfs::Error>(())
//!     })
//! })?;
//! # Ok(()) }
//! ```
//!
//! The same code without the offending line compiles (this is what the
//! three tests above would be if they did not fail for that line alone):
//!
//! ```no_run
//! # fn demo(file: &directnfs::File) -> directnfs::Result<()> {
//! let mut buf = vec![0u8; 8192];
//! let client = file.client();
//! client.batch_scope(|outer| {
//!     client.batch_scope(|inner| {
//!         inner.read(file, 0, &mut buf, 1)?;
//!         Ok::<_, directnfs::Error>(())
//!     })?;
//!     outer.submit();
//!     Ok::<_, directnfs::Error>(())
//! })?;
//! let mut batch = directnfs::Batch::new(file.client());
//! // SAFETY: the batch is dropped (waiting for the read) before `buf`.
//! unsafe { batch.read(file, 0, &mut buf, 1)? };
//! drop(batch);
//! # Ok(()) }
//! ```
//!
//! Dropping a batch waits for everything it submitted.
//!
//! # Ordering
//!
//! With write-behind (`stable=unstable`), submitting a read or write of a
//! file first waits for the file's write-behind writes over the same
//! bytes (sending those held for coalescing), as `read_at` and `write_at`
//! do: the read returns their data, the write lands after them.
//! Submitting a write also sends every write the client's files hold for
//! coalescing, made before it (as a `write_at` does). This costs an
//! atomic load or two when nothing is in flight or held, and a submission
//! over bytes in flight waits for their replies. A batch write is logged
//! like any unstable write, so the file's next `fsync` commits it. A batch operation itself is in flight until its completion
//! is reaped, as with `aio`: another write or read of its bytes —
//! `write_at`, `read_at`, another batch operation — is not ordered with
//! it before then.
//!
//! Submitted operations are queued and go to the server together — one
//! write per connection for the lot — when the batch is waited on, when
//! [`Batch::submit`] is called, or once [`SEND_QUEUE_MAX`] requests are
//! queued (the `io_uring` submit model). Sending each request on its own
//! costs a system call and, on the server, a wake-up per request.
//!
//! NFSv4.1's half of the pipeline is the child `batch/v41.rs`: it uses
//! the session's slots (`crate::v4`), which never name a batch.

mod v41;

use std::marker::PhantomData;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::client::Client;
use crate::completion::{contiguous, Completion, PieceResult};
use crate::error::{Error, Result};
use crate::file::File;
use crate::io::call::{released, BatchQueue, Call, CallPool, Notify, ReadDest, Sink};
use v41::{self as v4batch, Pipeline, WriteData};

#[derive(Debug)]
enum Kind {
    Read,
    Write,
}

#[derive(Debug)]
struct Piece {
    op: usize,
    call: Arc<Call>,
    offset: u64,
    len: usize,
    /// Index of this piece within its operation (reads assemble in order).
    seq: usize,
    data: Option<Arc<[u8]>>,
}

#[derive(Debug)]
struct Op {
    token: u64,
    kind: Kind,
    file: File,
    pending: usize,
    /// Per piece, in order: bytes wanted and bytes got (reads).
    got: Vec<PieceResult>,
    written: usize,
    /// A piece asked FILE_SYNC that the server only took UNSTABLE.
    downgraded: bool,
    error: Option<Error>,
    /// When the operation was submitted (file statistics).
    start_ns: u64,
    /// An owned buffer lent to the batch, returned with the completion.
    owned: Option<Vec<u8>>,
}

/// A set of asynchronous reads and writes; see the module docs (and
/// [`Client::batch_scope`] for reads into borrowed buffers).
#[derive(Debug)]
pub struct Batch<'buf> {
    client: Client,
    queue: Arc<BatchQueue>,
    pieces: Vec<Option<Piece>>,
    ops: Vec<Option<Op>>,
    in_flight: usize,
    ready: Vec<Completion>,
    /// Requests queued, not yet sent (see the module doc).
    unsent: Vec<Arc<Call>>,
    /// Free slots of `pieces` and `ops` (no search for one per I/O).
    free_pieces: Vec<usize>,
    free_ops: Vec<usize>,
    /// Finished calls and piece-result vectors kept for reuse: a steady
    /// stream of I/O allocates nothing per operation.
    calls: CallPool,
    got_pool: Vec<Vec<PieceResult>>,
    /// Completed piece slots taken from the queue (kept for its capacity).
    taken: Vec<usize>,
    /// The NFSv4.1 operations (`batch/v41.rs`): their replies come
    /// to `queue` too, marked with its `TOKEN_BIT`.
    v4: Pipeline,
    _buffers: PhantomData<&'buf mut [u8]>,
}

/// Requests a batch queues before sending them without waiting for
/// [`Batch::wait`] or [`Batch::submit`].
pub const SEND_QUEUE_MAX: usize = 64;

impl<'buf> Batch<'buf> {
    /// An empty batch on `client`.
    pub fn new(client: &Client) -> Self {
        Self {
            client: client.clone(),
            queue: Arc::new(BatchQueue::default()),
            pieces: Vec::new(),
            ops: Vec::new(),
            in_flight: 0,
            ready: Vec::new(),
            unsent: Vec::new(),
            free_pieces: Vec::new(),
            free_ops: Vec::new(),
            calls: CallPool::default(),
            got_pool: Vec::new(),
            taken: Vec::new(),
            v4: Pipeline::default(),
            _buffers: PhantomData,
        }
    }

    /// Operations submitted and not yet returned by [`wait`](Self::wait).
    pub fn outstanding(&self) -> usize {
        self.in_flight + self.v4.outstanding() + self.ready.len()
    }

    /// What the NFSv4.1 pipeline needs of this batch, and the pipeline.
    fn v4_ctx(&mut self) -> (&mut Pipeline, v4batch::Ctx<'_>) {
        (
            &mut self.v4,
            v4batch::Ctx {
                client: &self.client,
                queue: &self.queue,
                unsent: &mut self.unsent,
                ready: &mut self.ready,
            },
        )
    }

    /// Sends the queued requests once enough are queued (see `add_piece`).
    fn submit_if_full(&mut self) {
        if self.unsent.len() >= SEND_QUEUE_MAX {
            self.submit();
        }
    }

    /// A file of another client would send its calls on the wrong
    /// connections: refuse it.
    fn check_file(&self, file: &File) -> Result<()> {
        if std::sync::Arc::ptr_eq(&file.client().inner, &self.client.inner) {
            Ok(())
        } else {
            Err(Error::InvalidInput(format!(
                "{}: the file belongs to another client than this batch",
                file.path()
            )))
        }
    }

    fn new_op(&mut self, file: &File, token: u64, kind: Kind) -> usize {
        let proc_ = match kind {
            Kind::Read => directnfs_wire::nfs3::NFSPROC3_READ,
            Kind::Write => directnfs_wire::nfs3::NFSPROC3_WRITE,
        };
        let op = Op {
            start_ns: file.op_start(proc_),
            owned: None,
            token,
            kind,
            file: file.clone(),
            pending: 0,
            got: self.got_pool.pop().unwrap_or_default(),
            written: 0,
            downgraded: false,
            error: None,
        };
        // Reuse a free op slot so long-lived batches do not grow.
        match self.free_ops.pop() {
            Some(i) => {
                self.ops[i] = Some(op);
                i
            }
            None => {
                self.ops.push(Some(op));
                self.ops.len() - 1
            }
        }
    }

    /// Frees an op's slot, keeping its piece-result vector for reuse.
    fn release_op(&mut self, i: usize) -> Option<Op> {
        let mut op = self.ops.get_mut(i).and_then(Option::take)?;
        self.free_ops.push(i);
        let mut got = std::mem::take(&mut op.got);
        got.clear();
        self.got_pool.push(got);
        Some(op)
    }

    /// A free piece slot and the completion notice of a call made for it.
    fn piece_slot(&mut self) -> (usize, Notify) {
        let slot = self.free_pieces.pop().unwrap_or_else(|| {
            self.pieces.push(None);
            self.pieces.len() - 1
        });
        (slot, Notify::Batch(Arc::clone(&self.queue), slot))
    }

    /// Puts a piece in the slot `piece_slot` gave and queues its call.
    fn add_piece(&mut self, slot: usize, piece: Piece) {
        if let Some(Some(op)) = self.ops.get_mut(piece.op) {
            op.pending += 1;
        }
        self.unsent.push(Arc::clone(&piece.call));
        self.pieces[slot] = Some(piece);
        if self.unsent.len() >= SEND_QUEUE_MAX {
            self.submit();
        }
    }

    /// Sends every queued request now (waiting does this too).
    pub fn submit(&mut self) {
        if !self.unsent.is_empty() {
            self.client
                .inner
                .transport()
                .submit_many(self.unsent.drain(..));
        }
    }

    /// Submits a read of `buf.len()` bytes at `offset` into `buf`, which
    /// the server may write until the read completes.
    ///
    /// The safe forms are [`Client::batch_scope`] (borrowed buffers) and
    /// [`read_owned`](Self::read_owned); see the module docs.
    ///
    /// # Safety
    ///
    /// The batch must be dropped, or this read returned by
    /// [`wait`](Self::wait), before `buf` is used or freed again. Dropping
    /// the batch waits for the read, so the ordinary end of a borrow is
    /// fine; what is not is a batch that is never dropped while `'buf`
    /// ends: `std::mem::forget`, `Box::leak` of a batch whose buffers are
    /// then freed, a reference cycle.
    pub unsafe fn read(
        &mut self,
        file: &File,
        offset: u64,
        buf: &'buf mut [u8],
        token: u64,
    ) -> Result<()> {
        file.check_range(offset, buf.len(), "READ")?;
        self.check_file(file)?;
        if self.client.inner.v4.is_some() {
            let (v4, mut ctx) = self.v4_ctx();
            // SAFETY: as for the NFSv3 read below: `buf` outlives the
            // operation (this function's contract); the pipeline writes it
            // only while settling the operation's pieces.
            unsafe {
                v4.read(
                    &mut ctx,
                    file,
                    offset,
                    buf.as_mut_ptr(),
                    buf.len(),
                    token,
                    None,
                )
            };
            self.submit_if_full();
            return Ok(());
        }
        let op = self.new_op(file, token, Kind::Read);
        // SAFETY: `buf` is borrowed for 'buf, and the caller promises the
        // batch is dropped (which waits for every piece) or the read
        // reaped before that borrow ends.
        unsafe { self.submit_read(file, op, offset, buf.as_mut_ptr(), buf.len()) };
        Ok(())
    }

    /// Submits a read into an owned buffer (`buf.len()` bytes at `offset`);
    /// the buffer comes back in the [`Completion`], ready for reuse. This is
    /// the form for long-lived batches that recycle their buffers.
    pub fn read_owned(
        &mut self,
        file: &File,
        offset: u64,
        mut buf: Vec<u8>,
        token: u64,
    ) -> Result<()> {
        file.check_range(offset, buf.len(), "READ")?;
        self.check_file(file)?;
        if self.client.inner.v4.is_some() {
            let (ptr, len) = (buf.as_mut_ptr(), buf.len());
            let (v4, mut ctx) = self.v4_ctx();
            // SAFETY: the Vec's heap block does not move when the Vec moves
            // into the operation, which keeps it until it completes (Drop
            // waits for that; a forgotten batch leaks it).
            unsafe { v4.read(&mut ctx, file, offset, ptr, len, token, Some(buf)) };
            self.submit_if_full();
            return Ok(());
        }
        let op = self.new_op(file, token, Kind::Read);
        let (ptr, len) = (buf.as_mut_ptr(), buf.len());
        if let Some(Some(o)) = self.ops.get_mut(op) {
            o.owned = Some(buf);
        }
        // SAFETY: the Vec's heap block does not move when the Vec moves into
        // the op, which keeps it until every piece has completed (a
        // completion hands it back only then; Drop waits for every piece;
        // a forgotten batch leaks it rather than freeing it). Nothing else
        // touches it meanwhile.
        unsafe { self.submit_read(file, op, offset, ptr, len) };
        Ok(())
    }

    /// Splits a read into pieces of at most `rtmax` bytes and queues them.
    ///
    /// # Safety
    /// `ptr..ptr + len` must stay valid for writes, and be accessed by
    /// nobody else, until every piece of `op` has completed.
    unsafe fn submit_read(
        &mut self,
        file: &File,
        op: usize,
        offset: u64,
        ptr: *mut u8,
        len: usize,
    ) {
        if len == 0 {
            self.finish_empty(op);
            return;
        }
        // After the file's write-behind writes over these bytes.
        file.settle(offset, len);
        let rtmax = self.client.inner.limits.rtmax as usize;
        let mut seq = 0;
        let mut at = 0;
        while at < len {
            let n = rtmax.min(len - at);
            if let Some(Some(o)) = self.ops.get_mut(op) {
                o.got.push((n, None));
            }
            // SAFETY: `at + n <= len`, inside the caller's buffer, which
            // outlives the piece (this function's contract).
            let dest = unsafe { ReadDest::from_raw(ptr.add(at), n) };
            let piece_offset = offset + at as u64;
            self.queue_piece(op, piece_offset, n, seq, None, |notify, pool| {
                file.read_call_pooled(piece_offset, dest, notify, pool)
            });
            seq += 1;
            at += n;
        }
        self.in_flight += 1;
    }

    /// Submits a write of `buf` at `offset`. The data is copied when
    /// submitted: `buf` is free again when this returns.
    pub fn write(&mut self, file: &File, offset: u64, buf: &[u8], token: u64) -> Result<()> {
        file.check_range(offset, buf.len(), "WRITE")?;
        file.check_writable()?;
        self.check_file(file)?;
        if self.client.inner.v4.is_some() {
            let (v4, mut ctx) = self.v4_ctx();
            v4.write(&mut ctx, file, offset, WriteData::Borrowed(buf), token);
            self.submit_if_full();
            return Ok(());
        }
        let op = self.new_op(file, token, Kind::Write);
        self.submit_write(file, op, offset, buf);
        Ok(())
    }

    /// Submits a write of an owned buffer, handed back in the [`Completion`].
    pub fn write_owned(
        &mut self,
        file: &File,
        offset: u64,
        buf: Vec<u8>,
        token: u64,
    ) -> Result<()> {
        file.check_range(offset, buf.len(), "WRITE")?;
        file.check_writable()?;
        self.check_file(file)?;
        if self.client.inner.v4.is_some() {
            let (v4, mut ctx) = self.v4_ctx();
            // The pieces copy the data; the buffer is parked in the op.
            v4.write(&mut ctx, file, offset, WriteData::Owned(buf), token);
            self.submit_if_full();
            return Ok(());
        }
        let op = self.new_op(file, token, Kind::Write);
        // The pieces copy the data, so the buffer is only parked in the op.
        if !buf.is_empty() {
            self.submit_write(file, op, offset, &buf);
        }
        match self.ops.get_mut(op) {
            Some(Some(o)) => o.owned = Some(buf),
            // Empty: completes at once, buffer and all.
            _ => self.ready.push(Completion {
                token,
                result: Ok(0),
                buffer: Some(buf),
            }),
        }
        if let Some(Some(o)) = self.ops.get(op) {
            if o.pending == 0 {
                self.finish_empty(op);
            }
        }
        Ok(())
    }

    fn submit_write(&mut self, file: &File, op: usize, offset: u64, buf: &[u8]) {
        if buf.is_empty() {
            self.finish_empty(op);
            return;
        }
        // After the client's held writes and the file's write-behind
        // writes over these bytes.
        file.before_batch_write(offset, buf.len());
        let wtmax = self.client.inner.limits.wtmax as usize;
        for (seq, chunk) in buf.chunks(wtmax).enumerate() {
            self.write_piece(
                file,
                op,
                offset + (seq * wtmax) as u64,
                Arc::from(chunk),
                seq,
            );
        }
        self.in_flight += 1;
    }

    /// A zero-length operation completes at once with 0 bytes.
    fn finish_empty(&mut self, op: usize) {
        if let Some(mut o) = self.release_op(op) {
            self.ready.push(Completion {
                token: o.token,
                result: Ok(0),
                buffer: o.owned.take(),
            });
        }
    }

    fn write_piece(&mut self, file: &File, op: usize, offset: u64, data: Arc<[u8]>, seq: usize) {
        let len = data.len();
        let sent = Arc::clone(&data);
        self.queue_piece(op, offset, len, seq, Some(data), |notify, pool| {
            file.write_call_pooled(offset, sent, notify, pool)
        });
    }

    /// Makes piece `seq` of op `op` with `make` (given the piece's
    /// completion notice and the call pool) and queues its call.
    fn queue_piece(
        &mut self,
        op: usize,
        offset: u64,
        len: usize,
        seq: usize,
        data: Option<Arc<[u8]>>,
        make: impl FnOnce(Notify, &mut CallPool) -> Arc<Call>,
    ) {
        let (slot, notify) = self.piece_slot();
        let call = make(notify, &mut self.calls);
        self.add_piece(
            slot,
            Piece {
                op,
                call,
                offset,
                len,
                seq,
                data,
            },
        );
    }

    /// Waits until at least `min` operations have completed (or `timeout`
    /// passed), and returns every completion available, possibly more than
    /// `min`. `min` larger than the outstanding count waits for all. On
    /// NFSv4.1 a reply that needs a pause, a re-send or a session
    /// recovery is finished on the blocking path, which the timeout does
    /// not bound.
    pub fn wait(&mut self, min: usize, timeout: Option<Duration>) -> Vec<Completion> {
        let mut out = Vec::new();
        self.wait_into(&mut out, min, timeout);
        out
    }

    /// [`wait`](Self::wait), appending the completions to `out` instead of
    /// returning a new vector (a reused `out` keeps its capacity: the
    /// `aio_waitn` loop of a database then allocates nothing per call).
    pub fn wait_into(&mut self, out: &mut Vec<Completion>, min: usize, timeout: Option<Duration>) {
        let deadline = timeout.map(|t| Instant::now() + t);
        let min = min.min(self.outstanding());
        loop {
            // NFSv4.1: what may block waits for this batch's calls to
            // drain (`batch/v41.rs`); pieces parked or deferred make
            // only the next reply worth waiting for.
            let (v4, mut ctx) = self.v4_ctx();
            v4.progress(&mut ctx);
            self.submit();
            // Pieces of split operations make `need` a lower bound; the
            // loop re-checks.
            let mut need = min.saturating_sub(self.ready.len());
            if self.v4.stalled() {
                need = need.min(1);
            }
            let q = &self.queue;
            if q.count.load(Ordering::Acquire) < need {
                *q.waiter.lock().unwrap_or_else(|p| p.into_inner()) = Some(std::thread::current());
                q.want.store(need, Ordering::Release);
                // Receives the replies itself when nobody else does (a
                // zero timeout still takes what has arrived).
                self.client
                    .inner
                    .transport()
                    .wait_until(&|| q.count.load(Ordering::Acquire) >= need, deadline);
                q.want.store(0, Ordering::Release);
            }
            let mut taken = std::mem::take(&mut self.taken);
            self.queue.take_into(&mut taken);
            // One clock read for the completions handed out together.
            let now = self.client.inner.transport().now_ns();
            for slot in taken.drain(..) {
                if slot & v4batch::TOKEN_BIT != 0 {
                    let (v4, mut ctx) = self.v4_ctx();
                    v4.piece_done(&mut ctx, slot & !v4batch::TOKEN_BIT, now);
                } else {
                    self.piece_done(slot, now);
                }
            }
            self.taken = taken;
            let timed_out = deadline.is_some_and(|d| Instant::now() >= d);
            if self.ready.len() >= min || timed_out {
                out.append(&mut self.ready);
                return;
            }
        }
    }

    fn piece_done(&mut self, slot: usize, now_ns: u64) {
        let Some(piece) = self.pieces.get_mut(slot).and_then(Option::take) else {
            return;
        };
        self.free_pieces.push(slot);
        self.finish_piece(&piece, now_ns);
        self.calls.put(piece.call);
    }

    fn finish_piece(&mut self, piece: &Piece, now_ns: u64) {
        let Some(Some(op)) = self.ops.get_mut(piece.op) else {
            return;
        };
        op.pending -= 1;
        match op.kind {
            Kind::Read => match op.file.finish_read(&piece.call) {
                Ok(p) => {
                    let before = op.got[piece.seq].1.map_or(0, |(n, _)| n);
                    op.got[piece.seq].1 = Some((before + p.count, p.eof));
                    if p.count < piece.len && !p.eof {
                        if p.count == 0 {
                            let e = op.file.read_without_progress(piece.offset);
                            op.error.get_or_insert(e);
                        } else if let Sink::Read(dest) = &piece.call.sink {
                            // Short before EOF: ask for the rest, into the
                            // rest of the piece's buffer (see File::read_at).
                            let file = op.file.clone();
                            // SAFETY: the rest of this piece's buffer, which
                            // the op keeps lent until all its pieces are done.
                            let rest = unsafe { dest.rest(p.count) };
                            let offset = piece.offset + p.count as u64;
                            let len = piece.len - p.count;
                            let op_index = piece.op;
                            self.queue_piece(op_index, offset, len, piece.seq, None, |n, pool| {
                                file.read_call_pooled(offset, rest, n, pool)
                            });
                            return;
                        }
                    }
                }
                Err(e) => {
                    op.error.get_or_insert(e);
                }
            },
            Kind::Write => {
                let file = op.file.clone();
                let data = piece.data.clone().unwrap_or_else(|| Arc::from(&[][..]));
                let result = file.finish_write_durable(&piece.call, piece.offset, &data);
                if let Ok((_, durable)) = &result {
                    op.downgraded |= !durable;
                }
                match result.map(|(n, _)| n) {
                    Ok(n) if n < piece.len && n > 0 => {
                        // Short write: send the rest as another piece.
                        op.written += n;
                        let op_index = piece.op;
                        self.write_piece(
                            &file,
                            op_index,
                            piece.offset + n as u64,
                            Arc::from(&data[n..]),
                            piece.seq,
                        );
                        return;
                    }
                    Ok(0) => {
                        op.error.get_or_insert(Error::Protocol {
                            op: "WRITE",
                            path: file.path().to_string(),
                            detail: "server wrote 0 bytes".into(),
                        });
                    }
                    Ok(n) => op.written += n,
                    Err(e) => {
                        op.error.get_or_insert(e);
                    }
                }
            }
        }
        let Some(Some(op)) = self.ops.get_mut(piece.op) else {
            return;
        };
        if op.pending > 0 {
            return;
        }
        // FILE_SYNC asked, UNSTABLE answered: the completion promises
        // durability, so COMMIT first (as `File::write_at` does); if that
        // fails the data stays logged for the next fsync.
        if op.error.is_none()
            && op.downgraded
            && op.file.stable() == directnfs_wire::nfs3::stable_how::FILE_SYNC
        {
            if let Err(e) = op.file.fsync() {
                op.error = Some(e);
            }
        }
        let result = match op.error.take() {
            Some(e) => Err(e),
            None => Ok(match op.kind {
                Kind::Write => op.written,
                Kind::Read => contiguous(&op.got),
            }),
        };
        let (proc_, read) = match op.kind {
            Kind::Read => (directnfs_wire::nfs3::NFSPROC3_READ, true),
            Kind::Write => (directnfs_wire::nfs3::NFSPROC3_WRITE, false),
        };
        op.file.op_end_at(proc_, op.start_ns, now_ns, &result, read);
        let buffer = op.owned.take();
        self.ready.push(Completion {
            token: op.token,
            result,
            buffer,
        });
        self.release_op(piece.op);
        self.in_flight -= 1;
    }
}

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        // NFSv4.1: every operation completes (its slots released, its
        // reads settled into their buffers) before the buffers go.
        if self.v4.outstanding() > 0 {
            let mut discarded = Vec::new();
            self.wait_into(&mut discarded, usize::MAX, None);
        }
        // The server may still be writing into the buffers of reads: wait.
        self.submit();
        let pieces = &self.pieces;
        self.client
            .inner
            .transport()
            .wait_until(&|| pieces.iter().flatten().all(|p| released(&p.call)), None);
    }
}

/// A batch whose reads may borrow their buffers: see
/// [`Client::batch_scope`]. Only ever reached through `&mut`, from inside
/// its scope; `'scope` is invariant, so two scopes' batches are different
/// types and cannot be swapped.
#[derive(Debug)]
pub struct ScopedBatch<'scope, 'env: 'scope> {
    batch: Batch<'env>,
    _scope: PhantomData<&'scope mut &'scope ()>,
}

impl Client {
    /// Runs `f` with a batch whose reads borrow their buffers for `'env`,
    /// and waits for every operation it submitted before returning —
    /// however `f` ends, a panic included. The `std::thread::scope`
    /// pattern: `f` only holds a `&mut` [`ScopedBatch`], which it can
    /// neither leak nor move out of the scope, so a buffer can never be
    /// freed while the server may still write into it.
    ///
    /// Completions not reaped inside `f` are discarded.
    pub fn batch_scope<'env, R>(
        &self,
        f: impl for<'scope> FnOnce(&'scope mut ScopedBatch<'scope, 'env>) -> R,
    ) -> R {
        let mut scoped = ScopedBatch {
            batch: Batch::new(self),
            _scope: PhantomData,
        };
        // `scoped` is dropped here on return and on unwind alike: Batch's
        // Drop waits for every piece.
        f(&mut scoped)
    }
}

impl<'scope, 'env> ScopedBatch<'scope, 'env> {
    /// Submits a read of `buf.len()` bytes at `offset` into `buf`, which
    /// stays borrowed until the scope ends.
    pub fn read(
        &mut self,
        file: &File,
        offset: u64,
        buf: &'env mut [u8],
        token: u64,
    ) -> Result<()> {
        // SAFETY: this batch is dropped by `batch_scope` before it returns
        // (on unwind too), which waits for the read, and `f` cannot leak it:
        // it only ever has `&mut`, no constructor is public and two scopes'
        // batches have different types (invariant 'scope).
        unsafe { self.batch.read(file, offset, buf, token) }
    }

    /// See [`Batch::read_owned`].
    pub fn read_owned(&mut self, file: &File, offset: u64, buf: Vec<u8>, token: u64) -> Result<()> {
        self.batch.read_owned(file, offset, buf, token)
    }

    /// See [`Batch::write`].
    pub fn write(&mut self, file: &File, offset: u64, buf: &[u8], token: u64) -> Result<()> {
        self.batch.write(file, offset, buf, token)
    }

    /// See [`Batch::write_owned`].
    pub fn write_owned(
        &mut self,
        file: &File,
        offset: u64,
        buf: Vec<u8>,
        token: u64,
    ) -> Result<()> {
        self.batch.write_owned(file, offset, buf, token)
    }

    /// See [`Batch::submit`].
    pub fn submit(&mut self) {
        self.batch.submit()
    }

    /// See [`Batch::wait`].
    pub fn wait(&mut self, min: usize, timeout: Option<Duration>) -> Vec<Completion> {
        self.batch.wait(min, timeout)
    }

    /// See [`Batch::wait_into`].
    pub fn wait_into(&mut self, out: &mut Vec<Completion>, min: usize, timeout: Option<Duration>) {
        self.batch.wait_into(out, min, timeout)
    }

    /// See [`Batch::outstanding`].
    pub fn outstanding(&self) -> usize {
        self.batch.outstanding()
    }
}

/// The batch's logic against a server played in-process
/// (`crate::testing`): no socket, so these run under Miri too, which
/// proves no buffer is written after its owner let it go.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::MountOptions;
    use crate::testing::{late, pattern, Behaviour, FakeServer};

    const RTMAX: u32 = 4096;

    fn setup(behaviour: Behaviour) -> (Client, File, FakeServer) {
        let client = Client::detached(MountOptions::default(), RTMAX, RTMAX);
        let file = File::detached(&client, "/f");
        let server = FakeServer::start(&client, behaviour);
        (client, file, server)
    }

    fn expected(offset: u64, len: usize) -> Vec<u8> {
        (0..len as u64).map(|i| pattern(offset + i)).collect()
    }

    /// Answers late enough that a caller which did not wait would be gone
    /// (see `testing::late`): under Miri, a batch that did not wait would
    /// be reported as a write into freed memory.
    fn slow() -> Behaviour {
        Behaviour {
            delay: late(),
            ..Behaviour::default()
        }
    }

    #[test]
    fn scoped_reads_land_in_borrowed_buffers_before_the_scope_returns() {
        let (client, file, _server) = setup(slow());
        let mut a = vec![0u8; 1000];
        let mut b = vec![0u8; 3 * RTMAX as usize + 5];
        let done = client.batch_scope(|batch| {
            batch.read(&file, 7, &mut a, 1).unwrap();
            batch.read(&file, 50_000, &mut b, 2).unwrap();
            batch.wait(2, None)
        });
        let mut results: Vec<_> = done
            .iter()
            .map(|c| (c.token, *c.result.as_ref().unwrap()))
            .collect();
        results.sort();
        assert_eq!(results, vec![(1, 1000), (2, 3 * RTMAX as usize + 5)]);
        assert!(a == expected(7, a.len()));
        assert!(
            b == expected(50_000, b.len()),
            "a split read is assembled in order"
        );
    }

    #[test]
    fn a_scope_that_ends_without_reaping_still_waits_for_its_reads() {
        let (client, file, server) = setup(slow());
        let mut buf = vec![0u8; 2 * RTMAX as usize];
        client.batch_scope(|batch| {
            batch.read(&file, 0, &mut buf, 1).unwrap();
            batch.submit();
        });
        assert_eq!(
            server.answered(),
            2,
            "both pieces were answered before the scope returned"
        );
        assert!(buf == expected(0, buf.len()));
    }

    #[test]
    fn a_panic_inside_the_scope_waits_for_its_reads_before_unwinding_on() {
        let (client, file, server) = setup(slow());
        let mut buf = vec![0u8; RTMAX as usize];
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            client.batch_scope(|batch| {
                batch.read(&file, 0, &mut buf, 1).unwrap();
                batch.submit();
                panic!("the caller's code fails while the read is in flight");
            })
        }));
        assert!(unwound.is_err());
        assert_eq!(
            server.answered(),
            1,
            "the read was answered before the unwind left the scope"
        );
        // Under Miri a write into `buf` after this point (or after it is
        // freed below) would be reported.
        assert!(buf == expected(0, buf.len()));
        drop(buf);
    }

    #[test]
    fn owned_reads_come_back_with_their_buffers_filled() {
        let (client, file, _server) = setup(Behaviour::default());
        let mut batch = Batch::new(&client);
        for i in 0..4u64 {
            batch
                .read_owned(&file, i * 10_000, vec![0u8; 5000], i)
                .unwrap();
        }
        let mut done = Vec::new();
        while done.len() < 4 {
            batch.wait_into(&mut done, 4, None);
        }
        for c in done {
            let buf = c.buffer.expect("the owned buffer comes back");
            assert_eq!(c.result.unwrap(), 5000);
            assert!(buf == expected(c.token * 10_000, 5000), "token {}", c.token);
        }
    }

    #[test]
    fn dropping_a_batch_waits_for_its_owned_reads() {
        let (client, file, server) = setup(slow());
        let mut batch = Batch::new(&client);
        batch
            .read_owned(&file, 0, vec![0u8; 3 * RTMAX as usize], 1)
            .unwrap();
        batch.submit();
        drop(batch);
        assert_eq!(server.answered(), 3);
    }

    #[test]
    fn unsafe_borrowed_reads_are_waited_for_by_drop() {
        let (client, file, server) = setup(slow());
        let mut buf = vec![0u8; 100];
        {
            let mut batch = Batch::new(&client);
            // SAFETY: the batch is dropped at the end of this block,
            // before `buf` is used again.
            unsafe { batch.read(&file, 3, &mut buf, 1).unwrap() };
        }
        assert_eq!(server.answered(), 1);
        assert!(buf == expected(3, 100));
    }

    #[test]
    fn writes_copy_their_data_when_submitted() {
        let (client, file, server) = setup(slow());
        let mut data = vec![0x5au8; RTMAX as usize + 10];
        let mut batch = Batch::new(&client);
        batch.write(&file, 100, &data, 1).unwrap();
        // The borrow ended with `write`: the caller may reuse the buffer.
        data.fill(0);
        let done = batch.wait(1, None);
        assert_eq!(*done[0].result.as_ref().unwrap(), RTMAX as usize + 10);
        let seen = server.seen();
        let mut writes = seen.writes.clone();
        writes.sort();
        assert_eq!(writes.len(), 2, "split at wtmax");
        assert_eq!(writes[0], (100, vec![0x5a; RTMAX as usize]));
        assert_eq!(writes[1], (100 + RTMAX as u64, vec![0x5a; 10]));
    }

    #[test]
    fn a_short_read_before_eof_is_completed_into_the_rest_of_the_buffer() {
        let (client, file, server) = setup(Behaviour {
            short_reads_from: Some(1000),
            ..Behaviour::default()
        });
        let mut buf = vec![0u8; 2 * RTMAX as usize + 100];
        let done = client.batch_scope(|batch| {
            batch.read(&file, 77, &mut buf, 1).unwrap();
            batch.wait(1, None)
        });
        assert_eq!(*done[0].result.as_ref().unwrap(), buf.len(), "never short");
        assert!(buf == expected(77, buf.len()));
        assert!(
            server.seen().reads.len() > 3,
            "the rest was asked for again"
        );
    }

    #[test]
    fn a_read_across_eof_is_short_exactly_there() {
        let (client, file, _server) = setup(Behaviour {
            eof_at: Some(10_000),
            ..Behaviour::default()
        });
        let mut batch = Batch::new(&client);
        batch
            .read_owned(&file, 5_000, vec![0u8; 3 * RTMAX as usize], 1)
            .unwrap();
        let c = batch.wait(1, None).remove(0);
        assert_eq!(c.result.unwrap(), 5_000);
        assert!(c.buffer.unwrap()[..5_000] == expected(5_000, 5_000)[..]);
    }

    #[test]
    fn empty_operations_complete_at_once() {
        let (client, file, server) = setup(Behaviour::default());
        let mut batch = Batch::new(&client);
        batch.read_owned(&file, 0, Vec::new(), 1).unwrap();
        batch.write(&file, 0, &[], 2).unwrap();
        let done = batch.wait(2, None);
        assert_eq!(done.len(), 2);
        assert!(done.iter().all(|c| *c.result.as_ref().unwrap() == 0));
        assert_eq!(server.answered(), 0, "nothing was sent");
    }
}
