//! A `Batch`'s reads and writes on NFSv4.1, pipelined: each piece (at
//! most `rtmax`/`wtmax` bytes) goes as its own COMPOUND — SEQUENCE, PUTFH,
//! READ or WRITE — on its own slot of the session, without waiting for
//! the others, and its reply is settled when the batch reaps it (its
//! queue token carries `TOKEN_BIT`; a batch on an NFSv4.1 client has no
//! other calls).
//!
//! The guarantees of the one-at-a-time path hold because what cannot be
//! settled at once is handed to that path, never half done here:
//!
//! * A reply whose SEQUENCE succeeded and whose COMPOUND did not say
//!   DELAY or GRACE, or a call that failed (a soft timeout), is settled
//!   as it comes (`Session::settle` releases the slot with what the reply
//!   said: nothing in it blocks).
//! * Anything else — SEQUENCE said DELAY (the same bytes again, same
//!   slot, after a pause), BADSESSION and the other session errors
//!   (recovery, with reclaim after a new client ID), SEQ_MISORDERED,
//!   DELAY or GRACE from READ/WRITE, a stateid the server no longer knows
//!   (`OpenFile::with_state`: the reclaimed one, or OPEN again by handle),
//!   a short READ or WRITE, a FILE_SYNC WRITE the server took only
//!   UNSTABLE — is *deferred*: settled, or redone by the blocking
//!   `OpenFile::read_at`/`write_at`, once none of this batch's calls is in
//!   flight. Those calls hold slots the batch has yet to release, and a
//!   blocking request waiting for a slot must not wait for them.
//! * A batch holds a slot until it reaps the reply, so batches together
//!   hold at most three quarters of the slots (`slots.rs` `reserved`):
//!   the rest stay for blocking calls, which a thread may make between
//!   submitting a batch and reaping it. A submission that finds no slot
//!   reaps the batch's own replies until one is free (its completions
//!   wait for `wait`); with none of its calls in flight, it blocks for an
//!   ordinary slot (held by blocking calls, which release them, or by
//!   other batches, which release them as they reap).
//! * Re-sends after a connection failure are the engine's: the same
//!   bytes, so the same slot and sequence id, answered from the server's
//!   reply cache (WRITE asks for its reply to be cached, as on the
//!   blocking path). A re-sent READ, whose reply is not cached, met with
//!   NFS4ERR_RETRY_UNCACHED_REP goes again as a new request.
//! * Writes go through the file's write log (`writelog.rs`), as
//!   `File::write_at`'s do: logged when submitted, their replies recorded
//!   (UNSTABLE ones kept with their verifier for `fsync`'s COMMIT and
//!   repair), a piece that goes again on the blocking path forgotten
//!   first.
//!
//! A READ's data goes into the caller's buffer as it is received
//! (`Sink::Read4`, as NFSv3's batch READs): by the thread receiving the
//! reply, while the piece's call is in flight, never after it completed;
//! the batch lends the buffer until then (owned buffers, or the scope
//! that waits). A reply that is not a plain success (an error, a reply
//! that does not decode) stays a record and nothing is written.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use directnfs_wire::nfs3::stable_how;
use directnfs_wire::nfs4::{nfs_opnum4, stable_how4};

use crate::client::Client;
use crate::completion::{contiguous, Completion, PieceResult};
use crate::error::{Error, Result};
use crate::file::File;
use crate::io::call::{BatchQueue, Call, Notify, ReadDest};
use crate::v4::open_file::{state_lost, OpenFile};
use crate::v4::ops::{STAT_READ, STAT_WRITE};
use crate::v4::recovery::Retry;
use crate::v4::sequence::{self, first_reply, First, Request, Settled};
use crate::v4::slots::Slot;

/// The bit that marks a batch queue token as an NFSv4.1 piece's (the
/// NFSv3 pieces' tokens are small indices).
pub(crate) const TOKEN_BIT: usize = 1 << (usize::BITS - 1);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Read,
    Write,
}

/// One operation of the batch.
#[derive(Debug)]
struct Op {
    token: u64,
    kind: Kind,
    file: File,
    pending: usize,
    /// Per piece, in order: bytes wanted, and once done bytes got and EOF.
    got: Vec<PieceResult>,
    written: usize,
    error: Option<Error>,
    start_ns: u64,
    owned: Option<Vec<u8>>,
}

/// One COMPOUND's worth of an operation.
#[derive(Debug)]
struct Piece {
    op: usize,
    seq: usize,
    offset: u64,
    len: usize,
    /// A READ's part of the caller's buffer.
    dest: Option<ReadDest>,
    /// A WRITE's data.
    data: Option<Arc<[u8]>>,
    /// A FILE_SYNC WRITE the server took only UNSTABLE: `fsync` before the
    /// operation completes (the blocking path's rule).
    sync: bool,
    state: State,
}

#[derive(Debug)]
enum State {
    /// Waiting for a slot.
    Parked,
    /// Sent; the reply comes to the batch queue.
    Sent(Sent),
    /// Its reply needs what may block (see the module doc).
    Settle(Sent, Result<First>),
    /// Done up to `done` bytes; the rest by the blocking path.
    Redo(usize),
}

#[derive(Debug)]
struct Sent {
    call: Arc<Call>,
    slot: Slot,
    body: Arc<[u8]>,
}

/// What settling a reply leaves: a result, or the rest to redo.
enum Step {
    Done(Result<(usize, bool)>),
    Redo(usize),
}

/// The NFSv4.1 part of one `Batch`.
#[derive(Debug, Default)]
pub(crate) struct Pipeline {
    ops: Vec<Option<Op>>,
    free_ops: Vec<usize>,
    pieces: Vec<Option<Piece>>,
    free_pieces: Vec<usize>,
    parked: VecDeque<usize>,
    deferred: Vec<usize>,
    /// Calls sent (or queued to send) whose reply is not yet reaped.
    calls: usize,
    /// Operations submitted and not yet completed.
    open: usize,
}

/// A write's data: borrowed for the call, or owned by the operation.
pub(crate) enum WriteData<'a> {
    Borrowed(&'a [u8]),
    Owned(Vec<u8>),
}

/// What the pipeline needs of its batch: the client, the queue replies
/// are announced on, the calls waiting to be sent together, and the
/// completions handed out by `wait`.
pub(crate) struct Ctx<'a> {
    pub client: &'a Client,
    pub queue: &'a Arc<BatchQueue>,
    pub unsent: &'a mut Vec<Arc<Call>>,
    pub ready: &'a mut Vec<Completion>,
}

impl Pipeline {
    /// Operations submitted and not yet completed.
    pub(crate) fn outstanding(&self) -> usize {
        self.open
    }

    /// True when some piece waits for the batch's calls to drain:
    /// `wait` must then not wait for more replies than are coming, only
    /// for the next one.
    pub(crate) fn stalled(&self) -> bool {
        !self.deferred.is_empty()
    }

    /// Submits a read of `len` bytes at `offset` into `ptr`.
    ///
    /// # Safety
    /// `ptr..ptr + len` must stay valid for writes, and be accessed by
    /// nobody else, until the operation completes (`owned` is its
    /// buffer, if the batch owns it).
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn read(
        &mut self,
        ctx: &mut Ctx<'_>,
        file: &File,
        offset: u64,
        ptr: *mut u8,
        len: usize,
        token: u64,
        owned: Option<Vec<u8>>,
    ) {
        let Some(op) = self.new_op(ctx, file, token, Kind::Read, len, owned) else {
            return;
        };
        file.settle(offset, len);
        let rtmax = ctx.client.inner.limits.rtmax as usize;
        let mut at = 0;
        while at < len {
            let n = rtmax.min(len - at);
            // SAFETY: `at + n <= len`: inside the caller's buffer, which
            // outlives the operation (this function's contract).
            let dest = unsafe { ReadDest::from_raw(ptr.add(at), n) };
            self.add_piece(op, offset + at as u64, n, Some(dest), None);
            at += n;
        }
        self.start_parked(ctx);
    }

    /// Submits a write of `data` at `offset` (copied now; an owned
    /// buffer is handed back with the completion).
    pub(crate) fn write(
        &mut self,
        ctx: &mut Ctx<'_>,
        file: &File,
        offset: u64,
        data: WriteData<'_>,
        token: u64,
    ) {
        let wtmax = ctx.client.inner.limits.wtmax.max(1) as usize;
        let split = |b: &[u8]| -> Vec<Arc<[u8]>> { b.chunks(wtmax).map(Arc::from).collect() };
        let (chunks, len, owned) = match data {
            WriteData::Borrowed(b) => (split(b), b.len(), None),
            WriteData::Owned(v) => (split(&v), v.len(), Some(v)),
        };
        let Some(op) = self.new_op(ctx, file, token, Kind::Write, len, owned) else {
            return;
        };
        // As on NFSv3 (`Batch::submit_write`): the writes every file of
        // the client holds for coalescing were made before this one and
        // go first, and the write-behind WRITEs over its bytes land first.
        file.before_batch_write(offset, len);
        let mut at = offset;
        file.log_submitted(chunks.iter().scan(offset, |at, c| {
            let off = *at;
            *at += c.len() as u64;
            Some((off, c))
        }));
        for chunk in chunks {
            let n = chunk.len();
            self.add_piece(op, at, n, None, Some(chunk));
            at += n as u64;
        }
        self.start_parked(ctx);
    }

    /// A new operation, or `None` when it completed at once (empty, or a
    /// lost lock refuses it as the blocking path would).
    fn new_op(
        &mut self,
        ctx: &mut Ctx<'_>,
        file: &File,
        token: u64,
        kind: Kind,
        len: usize,
        owned: Option<Vec<u8>>,
    ) -> Option<usize> {
        let proc_ = stat_proc(kind);
        let start_ns = file.op_start(proc_);
        let checked = match &file.shared.v4 {
            Some(open) => open.check_locks(if kind == Kind::Read { "READ" } else { "WRITE" }),
            // A file `open_handle` could not OPEN: no stateid to send.
            None => Err(crate::v4::unsupported(&format!(
                "batch I/O on {} (the server refused its OPEN)",
                file.path()
            ))),
        };
        if len == 0 || checked.is_err() {
            let result = checked.map(|()| 0);
            file.op_end(proc_, start_ns, &result, kind == Kind::Read);
            ctx.ready.push(Completion {
                token,
                result,
                buffer: owned,
            });
            return None;
        }
        let op = Op {
            token,
            kind,
            file: file.clone(),
            pending: 0,
            got: Vec::new(),
            written: 0,
            error: None,
            start_ns,
            owned,
        };
        self.open += 1;
        Some(match self.free_ops.pop() {
            Some(i) => {
                self.ops[i] = Some(op);
                i
            }
            None => {
                self.ops.push(Some(op));
                self.ops.len() - 1
            }
        })
    }

    fn add_piece(
        &mut self,
        op: usize,
        offset: u64,
        len: usize,
        dest: Option<ReadDest>,
        data: Option<Arc<[u8]>>,
    ) {
        let Some(Some(o)) = self.ops.get_mut(op) else {
            return;
        };
        let seq = o.got.len();
        o.got.push((len, None));
        o.pending += 1;
        let piece = Piece {
            op,
            seq,
            offset,
            len,
            dest,
            data,
            sync: false,
            state: State::Parked,
        };
        let i = match self.free_pieces.pop() {
            Some(i) => {
                self.pieces[i] = Some(piece);
                i
            }
            None => {
                self.pieces.push(Some(piece));
                self.pieces.len() - 1
            }
        };
        self.parked.push_back(i);
    }

    /// Sends the parked pieces. Without a free slot, reaps this batch's
    /// own replies (which frees theirs) while it has calls in flight —
    /// submission waits for room, as on NFSv3 when `max_client_inflight`
    /// is reached — and otherwise, its deferred pieces finished first,
    /// blocks for an ordinary slot (blocking calls or other batches hold
    /// them and release them).
    fn start_parked(&mut self, ctx: &mut Ctx<'_>) {
        let Some(s) = ctx.client.inner.v4.as_ref() else {
            return;
        };
        while let Some(&i) = self.parked.front() {
            let slot = match s.try_batch_slot() {
                Some(slot) => slot,
                None if self.calls > 0 => {
                    self.reap_some(ctx);
                    continue;
                }
                None => {
                    self.run_deferred_all(ctx);
                    s.acquire(false)
                }
            };
            self.parked.pop_front();
            let Some(piece) = self.pieces.get_mut(i).and_then(Option::as_mut) else {
                continue;
            };
            let Some(Some(op)) = self.ops.get(piece.op) else {
                continue;
            };
            let Some(open) = op.file.shared.v4.as_ref() else {
                continue;
            };
            let stateid = open.open_stateid();
            let (offset, len) = (piece.offset, piece.len as u32);
            let stable = stable_how4(op.file.stable().0);
            let encode = |out: &mut Vec<u8>| match op.kind {
                Kind::Read => open.encode_read(out, &stateid, offset, len),
                Kind::Write => open.encode_write(out, &stateid, offset, stable, len),
            };
            let req = request(open, op.kind, piece, &encode);
            let body = sequence::encode(&ctx.client.inner, &req, &slot);
            let notify = Notify::Batch(Arc::clone(ctx.queue), TOKEN_BIT | i);
            let call = sequence::start(&req, &body, notify);
            ctx.unsent.push(Arc::clone(&call));
            piece.state = State::Sent(Sent { call, slot, body });
            self.calls += 1;
        }
    }

    /// The reply to piece `i` came: settled now if nothing in it may
    /// block, deferred otherwise.
    pub(crate) fn piece_done(&mut self, ctx: &mut Ctx<'_>, i: usize, now_ns: u64) {
        let Some(piece) = self.pieces.get_mut(i).and_then(Option::as_mut) else {
            return;
        };
        let State::Sent(sent) = std::mem::replace(&mut piece.state, State::Parked) else {
            return;
        };
        self.calls -= 1;
        let Some(Some(op)) = self.ops.get(piece.op) else {
            return;
        };
        let Some(open) = op.file.shared.v4.as_ref() else {
            return;
        };
        let (name, path) = (op_name(op.kind), op.file.path());
        let first = first_reply(&sent.call, name, path);
        if !sequence::settles_at_once(&first) {
            piece.state = State::Settle(sent, first);
            self.deferred.push(i);
            return;
        }
        match settle_reply(ctx.client, open, &op.file, op.kind, piece, sent, first) {
            Step::Done(result) => self.piece_finished(ctx, i, result, now_ns),
            Step::Redo(done) => {
                piece.state = State::Redo(done);
                self.deferred.push(i);
            }
        }
    }

    /// Makes progress that may block: once none of this batch's calls is
    /// in flight, settles and redoes the deferred pieces.
    pub(crate) fn progress(&mut self, ctx: &mut Ctx<'_>) {
        if self.calls == 0 {
            self.run_deferred_all(ctx);
        }
    }

    fn run_deferred_all(&mut self, ctx: &mut Ctx<'_>) {
        for i in std::mem::take(&mut self.deferred) {
            self.run_deferred(ctx, i);
        }
    }

    /// Sends what is queued and waits for at least one reply to this
    /// batch's calls, then settles what came (as `Batch::wait` does; every
    /// call of a batch on an NFSv4.1 client is this pipeline's).
    fn reap_some(&mut self, ctx: &mut Ctx<'_>) {
        let transport = ctx.client.inner.transport();
        if !ctx.unsent.is_empty() {
            transport.submit_many(ctx.unsent.drain(..));
        }
        let q = Arc::clone(ctx.queue);
        if q.count.load(Ordering::Acquire) == 0 {
            *q.waiter.lock().unwrap_or_else(|p| p.into_inner()) = Some(std::thread::current());
            q.want.store(1, Ordering::Release);
            transport.wait_until(&|| q.count.load(Ordering::Acquire) > 0, None);
            q.want.store(0, Ordering::Release);
        }
        let mut taken = Vec::new();
        q.take_into(&mut taken);
        let now = transport.now_ns();
        for token in taken {
            debug_assert!(token & TOKEN_BIT != 0, "an NFSv3 call in an NFSv4.1 batch");
            self.piece_done(ctx, token & !TOKEN_BIT, now);
        }
    }

    /// Settles piece `i` on the blocking path (see the module doc).
    fn run_deferred(&mut self, ctx: &mut Ctx<'_>, i: usize) {
        let Some(piece) = self.pieces.get_mut(i).and_then(Option::as_mut) else {
            return;
        };
        let Some(Some(op)) = self.ops.get(piece.op) else {
            return;
        };
        let Some(open) = op.file.shared.v4.as_ref() else {
            return;
        };
        let step = match std::mem::replace(&mut piece.state, State::Parked) {
            State::Settle(sent, first) => {
                settle_reply(ctx.client, open, &op.file, op.kind, piece, sent, first)
            }
            State::Redo(done) => Step::Redo(done),
            other => {
                piece.state = other;
                return;
            }
        };
        let result = match step {
            Step::Done(result) => result,
            Step::Redo(done) => redo(&op.file, op.kind, piece, done),
        };
        let now = ctx.client.inner.transport().now_ns();
        self.piece_finished(ctx, i, result, now);
    }

    /// Records piece `i`'s result; the last piece of an operation
    /// completes it.
    fn piece_finished(
        &mut self,
        ctx: &mut Ctx<'_>,
        i: usize,
        result: Result<(usize, bool)>,
        now_ns: u64,
    ) {
        let Some(piece) = self.pieces.get_mut(i).and_then(Option::take) else {
            return;
        };
        self.free_pieces.push(i);
        let Some(Some(op)) = self.ops.get_mut(piece.op) else {
            return;
        };
        op.pending -= 1;
        match result {
            Ok((n, eof)) => {
                op.written += n;
                if let Some(g) = op.got.get_mut(piece.seq) {
                    g.1 = Some((n, eof));
                }
            }
            Err(e) => {
                op.error.get_or_insert(e);
            }
        }
        if op.pending > 0 {
            return;
        }
        let Some(mut op) = self.ops.get_mut(piece.op).and_then(Option::take) else {
            return;
        };
        self.free_ops.push(piece.op);
        self.open -= 1;
        let read = op.kind == Kind::Read;
        let result = match (op.error.take(), read) {
            (Some(e), _) => Err(e),
            (None, true) => Ok(contiguous(&op.got)),
            (None, false) => Ok(op.written),
        };
        let proc_ = stat_proc(op.kind);
        op.file.op_end_at(proc_, op.start_ns, now_ns, &result, read);
        ctx.ready.push(Completion {
            token: op.token,
            result,
            buffer: op.owned.take(),
        });
    }
}

/// The procedure an operation is counted under in the file statistics.
fn stat_proc(kind: Kind) -> u32 {
    match kind {
        Kind::Read => directnfs_wire::nfs3::NFSPROC3_READ,
        Kind::Write => directnfs_wire::nfs3::NFSPROC3_WRITE,
    }
}

fn op_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Read => "READ",
        Kind::Write => "WRITE",
    }
}

/// The request of a piece: the blocking path's READ or WRITE COMPOUND.
fn request<'a>(
    open: &'a OpenFile,
    kind: Kind,
    piece: &Piece,
    encode: &'a dyn Fn(&mut Vec<u8>),
) -> Request<'a> {
    const READ_OPS: [nfs_opnum4; 2] = [nfs_opnum4::OP_PUTFH, nfs_opnum4::OP_READ];
    const WRITE_OPS: [nfs_opnum4; 2] = [nfs_opnum4::OP_PUTFH, nfs_opnum4::OP_WRITE];
    let mut req = match kind {
        Kind::Read => open.request(&READ_OPS, encode, "READ", STAT_READ),
        Kind::Write => open.request(&WRITE_OPS, encode, "WRITE", STAT_WRITE),
    };
    req.payload = piece.data.clone();
    // The piece's part of the caller's buffer, lent until its operation
    // completes (see the module doc).
    req.read_into = piece.dest.as_ref().map(ReadDest::as_raw);
    req
}

/// Settles the reply (or failure) `first` of `piece`, sent as `sent`
/// (`Session::settle`: it blocks only when `first` does not settle at
/// once), and says what it means for the piece.
fn settle_reply(
    client: &Client,
    open: &OpenFile,
    file: &File,
    kind: Kind,
    piece: &mut Piece,
    sent: Sent,
    first: Result<First>,
) -> Step {
    let Some(s) = client.inner.v4.as_ref() else {
        return Step::Redo(0);
    };
    let req = request(open, kind, piece, &|_| {});
    let mut retry = Retry::new(&client.inner);
    let settled = s.settle(
        &client.inner,
        &req,
        sent.slot,
        &sent.body,
        first,
        &mut retry,
    );
    settle_piece(open, file, kind, piece, settled)
}

/// What a settled reply means for its piece, without blocking: the
/// result, or (a lost stateid, a short transfer, a FILE_SYNC write taken
/// UNSTABLE, a new request needed) the part to redo on the blocking path.
/// A WRITE's reply is recorded in the file's write log.
fn settle_piece(
    open: &OpenFile,
    file: &File,
    kind: Kind,
    piece: &mut Piece,
    settled: Result<Option<Settled>>,
) -> Step {
    let data = piece.data.clone().unwrap_or_else(|| Arc::from(&[][..]));
    let settled = match settled {
        Ok(Some(s)) if !state_lost(s.status) => s,
        // Not executed: sent again (whole) on the blocking path, which
        // logs it anew.
        Ok(_) => {
            if kind == Kind::Write {
                file.forget_write(piece.offset, &data);
            }
            return Step::Redo(0);
        }
        Err(e) => {
            if kind == Kind::Write {
                file.forget_write(piece.offset, &data);
            }
            return Step::Done(Err(e));
        }
    };
    match kind {
        Kind::Read => {
            let settled = match open.checked(settled, op_name(kind)) {
                Ok(s) => s,
                Err(e) => return Step::Done(Err(e)),
            };
            let Some(dest) = &piece.dest else {
                return Step::Done(Ok((0, true)));
            };
            // SAFETY: the piece's part of the caller's buffer, lent until
            // the operation completes; only the reaping thread touches it.
            let buf = unsafe { dest.tail(0) };
            match open.read_data(&settled, buf) {
                Ok((n, eof)) if n < piece.len && !eof => {
                    if n == 0 {
                        return Step::Done(Err(Error::Protocol {
                            op: "READ",
                            path: open.path.clone(),
                            detail: "the server returned no data and no EOF".into(),
                        }));
                    }
                    Step::Redo(n)
                }
                other => Step::Done(other),
            }
        }
        Kind::Write => {
            let stable = file.stable();
            let answer = Ok(Some(settled));
            let written = open.finish_write(answer, piece.offset, &data, stable);
            if let Ok(w) = &written {
                file.inner().note_verifier(w.verf);
            }
            match file.record_write(piece.offset, &data, written) {
                Ok((0, _)) => Step::Done(Err(Error::Protocol {
                    op: "WRITE",
                    path: open.path.clone(),
                    detail: "the server accepted no bytes".into(),
                })),
                Ok((n, durable)) => {
                    // Durability promised: `fsync` COMMITs what the server
                    // took less (and sends it again if a restart lost it).
                    piece.sync = !durable && stable == stable_how::FILE_SYNC;
                    if n < piece.len || piece.sync {
                        Step::Redo(n)
                    } else {
                        Step::Done(Ok((n, false)))
                    }
                }
                Err(e) => Step::Done(Err(e)),
            }
        }
    }
}

/// The blocking path for the bytes of `piece` from `done` on (and the
/// `fsync` a downgraded FILE_SYNC write needs).
fn redo(file: &File, kind: Kind, piece: &Piece, done: usize) -> Result<(usize, bool)> {
    let at = piece.offset + done as u64;
    match kind {
        Kind::Read => {
            let Some(dest) = &piece.dest else {
                return Ok((done, true));
            };
            // SAFETY: as in `settle_piece`: lent until the operation
            // completes, touched only by the reaping thread.
            let buf = unsafe { dest.tail(done) };
            let n = file.read_full(buf, at)?;
            let total = done + n;
            Ok((total, total < piece.len))
        }
        Kind::Write => {
            let data = piece.data.as_deref().unwrap_or_default();
            let rest = data.get(done..).unwrap_or_default();
            let n = if rest.is_empty() {
                0
            } else {
                file.write_at_inner(rest, at)?
            };
            if piece.sync {
                file.fsync()?;
            }
            Ok((done + n, false))
        }
    }
}
