//! The batch API: submit many reads and writes with caller-owned buffers,
//! then reap completions — at least N of them, with a timeout — the
//! `aio_waitn` model the Solaris report credits for database I/O rates
//! (docs/design.md "Why it exists").
//!
//! ```no_run
//! # fn demo(file: &directnfs::File) -> directnfs::Result<()> {
//! let mut a = vec![0u8; 8192];
//! let mut b = vec![0u8; 8192];
//! let mut batch = directnfs::Batch::new(file.client());
//! batch.read(file, 0, &mut a, 1)?;
//! batch.read(file, 8192, &mut b, 2)?;
//! for done in batch.wait(2, None) {
//!     println!("token {} -> {:?} bytes", done.token, done.result);
//! }
//! # Ok(()) }
//! ```
//!
//! Buffers are borrowed for the life of the batch (`'buf`): the borrow
//! checker keeps the caller from touching them while the server may still
//! write into them. Dropping a batch waits for everything it submitted.
//!
//! Submitted operations are queued and go to the server together — one
//! write per connection for the lot — when the batch is waited on, when
//! [`Batch::submit`] is called, or once [`SEND_QUEUE_MAX`] requests are
//! queued (the `io_uring` submit model). Sending each request on its own
//! costs a system call and, on the server, a wake-up per request.

use std::marker::PhantomData;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::client::Client;
use crate::error::{Error, Result};
use crate::file::File;
use crate::io::call::{BatchQueue, Call, CallPool, Notify, ReadDest};

/// One finished operation.
#[derive(Debug)]
pub struct Completion {
    /// The token given at submission.
    pub token: u64,
    /// Bytes transferred, or the error.
    pub result: Result<usize>,
    /// The buffer of a [`read_owned`](Batch::read_owned) or
    /// [`write_owned`](Batch::write_owned), handed back for reuse.
    pub buffer: Option<Vec<u8>>,
}

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

/// One piece of an operation: bytes asked, and once done, bytes got and EOF.
type PieceResult = (usize, Option<(usize, bool)>);

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

/// A set of asynchronous reads and writes; see the module docs.
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
            _buffers: PhantomData,
        }
    }

    /// Operations submitted and not yet returned by [`wait`](Self::wait).
    pub fn outstanding(&self) -> usize {
        self.in_flight + self.ready.len()
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
                .shared()
                .submit_many(self.unsent.drain(..));
        }
    }

    /// Submits a read of `buf.len()` bytes at `offset` into `buf`.
    pub fn read(
        &mut self,
        file: &File,
        offset: u64,
        buf: &'buf mut [u8],
        token: u64,
    ) -> Result<()> {
        file.check_range(offset, buf.len(), "READ")?;
        self.check_file(file)?;
        let op = self.new_op(file, token, Kind::Read);
        self.submit_read(file, op, offset, buf);
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
        let op = self.new_op(file, token, Kind::Read);
        let len = buf.len();
        // SAFETY: the Vec's heap block does not move when the Vec moves into
        // the op below, and the op keeps it until every piece has completed
        // (Drop of the batch waits for all pieces).
        let slice: &'buf mut [u8] =
            unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr(), len) };
        if let Some(Some(o)) = self.ops.get_mut(op) {
            o.owned = Some(buf);
        }
        self.submit_read(file, op, offset, slice);
        Ok(())
    }

    fn submit_read(&mut self, file: &File, op: usize, offset: u64, buf: &'buf mut [u8]) {
        if buf.is_empty() {
            self.finish_empty(op);
            return;
        }
        let rtmax = self.client.inner.limits.rtmax as usize;
        for (seq, chunk) in buf.chunks_mut(rtmax).enumerate() {
            let len = chunk.len();
            if let Some(Some(o)) = self.ops.get_mut(op) {
                o.got.push((len, None));
            }
            // SAFETY: the chunk is borrowed for 'buf, which outlives the
            // batch; the batch does not release the borrow (Drop waits for
            // every piece) before the call completes.
            let dest = unsafe { ReadDest::new(chunk) };
            let offset = offset + (seq * rtmax) as u64;
            self.queue_piece(op, offset, len, seq, None, |notify, pool, start_ns| {
                file.read_call_pooled(offset, dest, notify, pool, start_ns)
            });
        }
        self.in_flight += 1;
    }

    /// Submits a write of `buf` at `offset`.
    pub fn write(&mut self, file: &File, offset: u64, buf: &'buf [u8], token: u64) -> Result<()> {
        file.check_range(offset, buf.len(), "WRITE")?;
        self.check_file(file)?;
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
        self.check_file(file)?;
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
        self.queue_piece(
            op,
            offset,
            len,
            seq,
            Some(data),
            |notify, pool, start_ns| file.write_call_pooled(offset, sent, notify, pool, start_ns),
        );
    }

    /// Makes piece `seq` of op `op` with `make` (given the piece's
    /// completion notice, the call pool and the op's start time) and
    /// queues its call.
    fn queue_piece(
        &mut self,
        op: usize,
        offset: u64,
        len: usize,
        seq: usize,
        data: Option<Arc<[u8]>>,
        make: impl FnOnce(Notify, &mut CallPool, u64) -> Arc<Call>,
    ) {
        let start_ns = self.ops[op].as_ref().map_or(0, |o| o.start_ns);
        let (slot, notify) = self.piece_slot();
        let call = make(notify, &mut self.calls, start_ns);
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
    /// `min`. `min` larger than the outstanding count waits for all.
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
            self.submit();
            // Pieces of split operations make `need` a lower bound; the
            // loop re-checks.
            let need = min.saturating_sub(self.ready.len());
            let q = &self.queue;
            if q.count.load(Ordering::Acquire) < need {
                *q.waiter.lock().unwrap_or_else(|p| p.into_inner()) = Some(std::thread::current());
                q.want.store(need, Ordering::Release);
                // Receives the replies itself when nobody else does (a
                // zero timeout still takes what has arrived).
                self.client
                    .inner
                    .shared()
                    .wait_until(&|| q.count.load(Ordering::Acquire) >= need, deadline);
                q.want.store(0, Ordering::Release);
            }
            let mut taken = std::mem::take(&mut self.taken);
            self.queue.take_into(&mut taken);
            // One clock read for the completions handed out together.
            let now = self.client.inner.shared().now_ns();
            for slot in taken.drain(..) {
                self.piece_done(slot, now);
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
                Ok(p) => op.got[piece.seq].1 = Some((p.count, p.eof)),
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

/// Bytes read from the start of the operation up to the first short piece.
fn contiguous(got: &[PieceResult]) -> usize {
    let mut total = 0;
    for (want, got) in got {
        let (n, eof) = got.unwrap_or((0, true));
        total += n;
        if n < *want || eof {
            break;
        }
    }
    total
}

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        // The server may still be writing into borrowed buffers: wait.
        self.submit();
        let shared = self.client.inner.shared();
        for piece in self.pieces.iter().flatten() {
            shared.wait_until(&|| piece.call.is_done(), None);
        }
    }
}
