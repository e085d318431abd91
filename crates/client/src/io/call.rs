//! One RPC call as the driver holds it: the encoded request, where its
//! reply goes (a READ's data straight into the caller's buffer), who is
//! told when it completes, and its outcome.
//!
//! Its life between submission and completion belongs to the engine
//! (`directnfs_engine::lifecycle`): while in flight a call lives in
//! exactly one place there — one channel's in-flight table, the parked
//! list, the JUKEBOX list. Whoever *takes* it from there (the receiver
//! with its reply, the engine's timeout or failure handling) owns it and
//! either completes it or gives it back. Completion therefore happens
//! exactly once, and only the owner touches the caller's READ buffer;
//! completing is the last thing the owner does with it.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, AtomicUsize, Ordering};

use directnfs_engine::{IoClass, Request};
use std::sync::{Arc, Mutex};
use std::thread::Thread;

use super::call_error::CallError;

/// Where the result of a call goes.
#[derive(Debug)]
pub(crate) enum Sink {
    /// Keep the whole reply record for the caller to decode.
    Record,
    /// An NFSv3 READ: data goes straight into the caller's buffer.
    Read(ReadDest),
    /// An NFSv4.1 READ COMPOUND (SEQUENCE, PUTFH, READ): on success the
    /// data goes straight into the caller's buffer and the rest of the
    /// reply (what the session layer decodes) is kept; any other reply is
    /// kept whole, as [`Sink::Record`] keeps it.
    Read4(ReadDest),
    /// A WRITE: the reply is decoded where it is received (fixed size, no
    /// copy of the record).
    Write,
}

impl Sink {
    /// The caller's buffer of a READ of either protocol.
    pub(crate) fn read_dest(&self) -> Option<&ReadDest> {
        match self {
            Sink::Read(d) | Sink::Read4(d) => Some(d),
            Sink::Record | Sink::Write => None,
        }
    }
}

/// The caller's buffer for a READ.
#[derive(Debug)]
pub(crate) struct ReadDest {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: a ReadDest is only dereferenced by the single owner of the call
// (see the module doc), and the submitter keeps the buffer alive and
// unaliased until the call completes (blocking calls wait, on unwind too;
// a Batch owns the buffer or its scope waits in Drop).
unsafe impl Send for ReadDest {}
// SAFETY: as above: no two threads dereference it at once.
unsafe impl Sync for ReadDest {}

impl ReadDest {
    /// Wraps a caller buffer.
    ///
    /// # Safety
    /// The buffer must stay valid and not be accessed by anyone else until
    /// the call it is given to has completed.
    #[cfg(test)]
    pub(crate) unsafe fn new(buf: &mut [u8]) -> Self {
        Self {
            ptr: buf.as_mut_ptr(),
            len: buf.len(),
        }
    }

    /// Wraps `len` bytes at `ptr`.
    ///
    /// # Safety
    /// As [`new`](Self::new): `ptr..ptr + len` must be valid for writes,
    /// and accessed by nobody else, until the call completes.
    pub(crate) unsafe fn from_raw(ptr: *mut u8, len: usize) -> Self {
        Self { ptr, len }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The pointer and length, to lend the same buffer to another call
    /// (under the same contract as [`new`](Self::new)).
    pub(crate) fn as_raw(&self) -> (*mut u8, usize) {
        (self.ptr, self.len)
    }

    /// The part of the buffer from byte `from` on (a READ that came back
    /// short asks for the rest into it).
    ///
    /// # Safety
    /// As [`new`](Self::new): the buffer must still be lent for a call, as
    /// it is while the READ it belonged to is being completed in pieces.
    pub(crate) unsafe fn rest(&self, from: usize) -> Self {
        let from = from.min(self.len);
        Self {
            ptr: self.ptr.wrapping_add(from),
            len: self.len - from,
        }
    }

    /// The buffer from byte `from` on, to receive into directly.
    ///
    /// # Safety
    /// Only the current owner of the call may call this, before completing
    /// it, and must not keep the slice past that.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn tail(&self, from: usize) -> &mut [u8] {
        let from = from.min(self.len);
        // SAFETY: the caller guarantees exclusive access and liveness (see
        // `new`); `from..len` is within the buffer.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(from), self.len - from) }
    }

    /// Copies `data` to the start of the buffer.
    ///
    /// # Safety
    /// Only the current owner of the call may call this, before completing it.
    pub(crate) unsafe fn fill(&self, data: &[u8]) {
        let n = data.len().min(self.len);
        // SAFETY: the caller guarantees exclusive access and liveness
        // (see `new`); `n` is within both buffers.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr, n) };
    }
}

/// True once nothing but the caller's own reference can reach `call`:
/// completed (completing is the last thing its owner does with it), or
/// never handed to the transport (a submission cut short by a panic). Only
/// then may the buffer a READ call writes into be used or freed again.
pub(crate) fn released(call: &Arc<Call>) -> bool {
    call.is_done() || Arc::strong_count(call) == 1
}

/// A successful RPC outcome (the RPC layer accepted it; the NFS status
/// inside is for the caller to check).
#[derive(Debug)]
pub(crate) enum Reply {
    /// The reply record, from the start of the procedure results.
    Results(Vec<u8>),
    /// READ results: status, and on success the byte count and EOF flag
    /// (the data is already in the caller's buffer).
    Read { status: u32, count: u32, eof: bool },
    /// A successful NFSv4.1 READ COMPOUND whose data is already in the
    /// caller's buffer: the reply from the procedure results up to the
    /// data (COMPOUND status, SEQUENCE, PUTFH and READ's `eof` and
    /// count), and the byte count and EOF flag.
    Read4 {
        head: Vec<u8>,
        count: u32,
        eof: bool,
    },
    /// WRITE results: status, and on success count, committed, verifier.
    Write {
        status: directnfs_wire::nfs3::nfsstat3,
        ok: Option<directnfs_wire::nfs3::WriteOk>,
    },
}

/// Who is told when a call completes.
#[derive(Debug, Clone)]
pub(crate) enum Notify {
    /// Unpark one thread when every call of a group has completed.
    Group(Arc<Group>),
    /// Queue the call's token on a batch.
    Batch(Arc<BatchQueue>, usize),
}

/// A set of calls a single thread waits for together (one blocking
/// request, or the pieces of one large split I/O).
#[derive(Debug)]
pub(crate) struct Group {
    pending: AtomicUsize,
    waiter: Thread,
    /// A log-class call is in it: its waiter receives the log lanes itself
    /// rather than wait for the leader (`transport/leader.rs`).
    log: AtomicBool,
}

impl Group {
    pub(crate) fn new(pending: usize) -> Arc<Self> {
        Arc::new(Self {
            pending: AtomicUsize::new(pending),
            waiter: std::thread::current(),
            log: AtomicBool::new(false),
        })
    }

    /// Whether a log-class call is in the group ([`Call::set_class`]).
    pub(crate) fn is_log(&self) -> bool {
        self.log.load(Ordering::Relaxed)
    }

    /// True once every call has completed. The creating thread waits for
    /// that with `Shared::wait_group` (which may receive the replies itself).
    pub(crate) fn is_done(&self) -> bool {
        self.pending.load(Ordering::Acquire) == 0
    }

    fn one_done(&self) {
        if self.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.waiter.unpark();
        }
    }
}

/// Completions of a batch, in the order they happened.
#[derive(Debug, Default)]
pub(crate) struct BatchQueue {
    pub(crate) ready: Mutex<Vec<usize>>,
    /// `ready.len()`, readable without the lock.
    pub(crate) count: AtomicUsize,
    /// The thread waiting in `Batch::wait` (unparked when `want` is met).
    pub(crate) waiter: Mutex<Option<Thread>>,
    /// How many queued completions the waiter needs before it is worth
    /// waking (0: nobody waits). Waking once per batch of replies instead of
    /// once per reply is most of the CPU saved per I/O.
    pub(crate) want: AtomicUsize,
}

impl BatchQueue {
    /// Moves every queued completion to `out` (whose capacity is kept, as
    /// the queue keeps its own).
    pub(crate) fn take_into(&self, out: &mut Vec<usize>) {
        let mut ready = self.ready.lock().unwrap_or_else(|p| p.into_inner());
        self.count.store(0, Ordering::Release);
        out.append(&mut ready);
    }
}

/// Finished calls kept for reuse by one submitter (a `Batch`): a call
/// and its body buffer cost two allocations and two frees otherwise, per
/// I/O. Only calls nobody else references are reused.
#[derive(Debug, Default)]
pub(crate) struct CallPool {
    free: Vec<Arc<Call>>,
}

/// Calls a pool keeps at most (beyond that, finished calls are freed).
const CALL_POOL_MAX: usize = 256;

impl CallPool {
    /// Gives a finished call back for reuse (dropped if still shared or
    /// the pool is full).
    pub(crate) fn put(&mut self, mut call: Arc<Call>) {
        if self.free.len() >= CALL_POOL_MAX || !call.is_done() {
            return;
        }
        if let Some(c) = Arc::get_mut(&mut call) {
            // What it pointed to is released now, not at reuse: a WRITE's
            // data, a READ's (caller-owned) destination.
            c.payload = None;
            c.sink = Sink::Record;
            self.free.push(call);
        }
    }
}

/// One RPC call. The fields the receiver and the waiter touch when a reply
/// arrives come first, so that completing a call costs as few cache lines
/// as possible: with hundreds of calls in flight and their data streaming
/// through the caches, a call is usually cold by the time its reply comes.
#[derive(Debug)]
#[repr(C)]
pub(crate) struct Call {
    /// The outcome, once known (also tells whether the call completed).
    result: ResultSlot,
    /// Procedure number, for statistics and the idempotency rules.
    pub proc_: u32,
    /// Times the call was sent, as the engine counted them; set when it
    /// completes (the idempotency rules read it).
    pub attempts: AtomicU32,
    /// Size counted against channel load (payload or expected reply data).
    pub weight: u64,
    /// Written to a connection at least once (it may have reached the
    /// server); false: never sent ([`Call::written`]).
    written: AtomicBool,
    /// Its I/O class (`IoClass::index`; `directnfs_engine::class`), set by
    /// the file that makes it ([`Call::set_class`]); data by default.
    class: AtomicU8,
    pub sink: Sink,
    /// Payload sent after `body` (WRITE data), then padded.
    pub payload: Option<Arc<[u8]>>,
    notify: Notify,
    /// The call message after the XID: msg type, RPC header, credentials
    /// and arguments. The 8 bytes in front of it (record mark and XID)
    /// differ per attempt and are built when sending.
    pub body: Vec<u8>,
}

/// What the engine needs to know of a call (it holds `Arc`s of them).
impl Request for Call {
    fn proc_(&self) -> u32 {
        self.proc_
    }

    fn weight(&self) -> u64 {
        self.weight
    }

    fn reply_estimate(&self) -> u64 {
        Call::reply_estimate(self)
    }

    fn class(&self) -> IoClass {
        IoClass::from_index(self.class.load(Ordering::Relaxed) as usize)
    }

    /// An NFSv3 READ into a caller's buffer: idempotent, and its reply is
    /// delivered once however many copies are sent (`directnfs_engine::hedge`).
    /// Not an NFSv4.1 READ (`Sink::Read4`): its COMPOUND holds a session
    /// slot and sequence id a second copy would reuse.
    fn hedgeable(&self) -> bool {
        self.proc_ == directnfs_wire::nfs3::NFSPROC3_READ && matches!(self.sink, Sink::Read(_))
    }
}

/// A call's outcome: written once by whoever completes the call, taken
/// once by its waiter. Without a lock: a state word decides who may touch
/// the value, and its release/acquire orders the value's write before its
/// read.
struct ResultSlot {
    state: AtomicU8,
    value: UnsafeCell<Option<Result<Reply, CallError>>>,
}

const SLOT_EMPTY: u8 = 0;
const SLOT_WRITING: u8 = 1;
const SLOT_FULL: u8 = 2;
const SLOT_TAKEN: u8 = 3;

// SAFETY: `value` is only accessed by the one thread that moved `state`
// from EMPTY to WRITING (it writes, then publishes FULL with Release) or
// from FULL to TAKEN (it reads, after an Acquire that saw FULL), or through
// `&mut self`. No two threads ever access it at once.
unsafe impl Sync for ResultSlot {}

impl ResultSlot {
    fn new() -> Self {
        Self {
            state: AtomicU8::new(SLOT_EMPTY),
            value: UnsafeCell::new(None),
        }
    }

    /// Stores the outcome; false (and `v` dropped) if one was stored already.
    fn put(&self, v: Result<Reply, CallError>) -> bool {
        if self
            .state
            .compare_exchange(
                SLOT_EMPTY,
                SLOT_WRITING,
                Ordering::Acquire,
                Ordering::Relaxed,
            )
            .is_err()
        {
            return false;
        }
        // SAFETY: we moved the state to WRITING, so we alone access the value.
        unsafe { *self.value.get() = Some(v) };
        self.state.store(SLOT_FULL, Ordering::Release);
        true
    }

    /// Takes the outcome, if stored and not taken before.
    fn take(&self) -> Option<Result<Reply, CallError>> {
        if self
            .state
            .compare_exchange(SLOT_FULL, SLOT_TAKEN, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return None;
        }
        // SAFETY: we moved the state from FULL to TAKEN, so we alone access
        // the value, and the Acquire saw the writer's Release.
        unsafe { (*self.value.get()).take() }
    }

    fn is_done(&self) -> bool {
        self.state.load(Ordering::Acquire) >= SLOT_FULL
    }

    /// Empties the slot for a reused call.
    fn reset(&mut self) {
        *self.state.get_mut() = SLOT_EMPTY;
        *self.value.get_mut() = None;
    }
}

impl std::fmt::Debug for ResultSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResultSlot")
            .field("state", &self.state.load(Ordering::Relaxed))
            .finish()
    }
}

impl Call {
    pub(crate) fn new(
        proc_: u32,
        body: Vec<u8>,
        payload: Option<Arc<[u8]>>,
        weight: u64,
        sink: Sink,
        notify: Notify,
    ) -> Arc<Self> {
        Arc::new(Self {
            proc_,
            body,
            payload,
            weight,
            class: AtomicU8::new(IoClass::Data.index() as u8),
            sink,
            attempts: AtomicU32::new(0),
            written: AtomicBool::new(false),
            notify,
            result: ResultSlot::new(),
        })
    }

    /// Sets the call's I/O class (before it is submitted: the engine reads
    /// it when it chooses a channel).
    pub(crate) fn set_class(&self, class: IoClass) {
        self.class.store(class.index() as u8, Ordering::Relaxed);
        if let (IoClass::Log, Notify::Group(g)) = (class, &self.notify) {
            g.log.store(true, Ordering::Relaxed);
        }
    }

    /// Makes a call, reusing one of `pool`'s finished calls (and its body's
    /// buffer) when there is one: the hot path then allocates nothing.
    /// `encode` appends the call body (RPC header, credential, arguments)
    /// to the empty buffer it is given.
    pub(crate) fn new_pooled(
        pool: &mut CallPool,
        proc_: u32,
        encode: impl FnOnce(&mut Vec<u8>),
        payload: Option<Arc<[u8]>>,
        weight: u64,
        sink: Sink,
        notify: Notify,
    ) -> Arc<Self> {
        while let Some(mut arc) = pool.free.pop() {
            // Unique again: nobody (table, leader, waiter) holds it now.
            let Some(c) = Arc::get_mut(&mut arc) else {
                continue;
            };
            c.proc_ = proc_;
            c.body.clear();
            encode(&mut c.body);
            c.payload = payload;
            c.weight = weight;
            *c.class.get_mut() = IoClass::Data.index() as u8;
            c.sink = sink;
            *c.attempts.get_mut() = 0;
            *c.written.get_mut() = false;
            c.notify = notify;
            c.result.reset();
            return arc;
        }
        let mut body = Vec::with_capacity(256);
        encode(&mut body);
        Self::new(proc_, body, payload, weight, sink, notify)
    }

    /// A lower-bound guess of the reply's size on the wire, for the receive
    /// batching in `receive.rs` (too high costs at most one short poll
    /// timeout, too low only an earlier wake-up).
    pub(crate) fn reply_estimate(&self) -> u64 {
        match &self.sink {
            // RPC header, status, post_op_attr, count, eof, length: ~136 bytes.
            Sink::Read(dest) => dest.len() as u64 + 120,
            // RPC header, COMPOUND status and tag, SEQUENCE, PUTFH, READ
            // status, eof and count: ~124 bytes.
            Sink::Read4(dest) => dest.len() as u64 + 120,
            // RPC header, status, wcc_data, count, committed, verifier: ~164 bytes.
            Sink::Write => 140,
            Sink::Record => 60,
        }
    }

    /// Notes that the call's bytes were written to a connection (whether
    /// it was sent at all decides what a failure leaves behind: an NFSv4.1
    /// slot's sequence id).
    pub(crate) fn mark_written(&self) {
        self.written.store(true, Ordering::Relaxed);
    }

    /// Whether the call was ever written to a connection.
    pub(crate) fn written(&self) -> bool {
        self.written.load(Ordering::Relaxed)
    }

    /// Records the outcome (and the attempts it took) and tells the waiter.
    /// Called once, by the owner, as the last thing it does with the call.
    pub(crate) fn complete_after(&self, attempts: u32, result: Result<Reply, CallError>) {
        self.attempts.store(attempts, Ordering::Relaxed);
        self.complete(result);
    }

    /// Records the outcome and tells the waiter. Called once, by the owner.
    pub(crate) fn complete(&self, result: Result<Reply, CallError>) {
        if !self.result.put(result) {
            // Completed twice: a broken invariant. The first outcome stands
            // and the waiter was told already.
            tracing::error!(proc_ = self.proc_, "a call was completed twice");
            return;
        }
        match &self.notify {
            Notify::Group(g) => g.one_done(),
            Notify::Batch(q, token) => {
                let len = {
                    let mut ready = q.ready.lock().unwrap_or_else(|p| p.into_inner());
                    ready.push(*token);
                    q.count.store(ready.len(), Ordering::Release);
                    ready.len()
                };
                let want = q.want.load(Ordering::Acquire);
                if want != 0 && len >= want {
                    if let Some(t) = &*q.waiter.lock().unwrap_or_else(|p| p.into_inner()) {
                        t.unpark();
                    }
                }
            }
        }
    }

    /// True once completed.
    pub(crate) fn is_done(&self) -> bool {
        self.result.is_done()
    }

    /// Takes the outcome of a completed call.
    pub(crate) fn take_result(&self) -> Result<Reply, CallError> {
        self.result.take().unwrap_or(Err(CallError::Internal(
            "call result taken twice or before completion",
        )))
    }

    /// Number of times this call was sent.
    pub(crate) fn attempts(&self) -> u32 {
        self.attempts.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok() -> Result<Reply, CallError> {
        Ok(Reply::Read {
            status: 0,
            count: 7,
            eof: true,
        })
    }

    #[test]
    fn result_slot_is_written_once_and_taken_once() {
        let mut slot = ResultSlot::new();
        assert!(!slot.is_done());
        assert!(slot.take().is_none(), "nothing to take before completion");
        assert!(slot.put(ok()));
        assert!(slot.is_done());
        assert!(
            !slot.put(Err(CallError::Shutdown)),
            "a second outcome must be refused"
        );
        match slot.take() {
            Some(Ok(Reply::Read { count: 7, .. })) => {}
            other => panic!("expected the first outcome, got {other:?}"),
        }
        assert!(slot.take().is_none(), "taken twice");
        assert!(slot.is_done(), "a taken outcome still means completed");
        slot.reset();
        assert!(!slot.is_done());
        assert!(slot.put(Err(CallError::Shutdown)));
        assert_eq!(
            slot.take().map(|r| r.err()),
            Some(Some(CallError::Shutdown))
        );
    }

    #[test]
    fn result_slot_hands_the_outcome_across_threads() {
        let slot = Arc::new(ResultSlot::new());
        let writer = {
            let slot = Arc::clone(&slot);
            std::thread::spawn(move || assert!(slot.put(ok())))
        };
        let taken = loop {
            if let Some(r) = slot.take() {
                break r;
            }
            std::hint::spin_loop();
        };
        writer.join().expect("writer thread");
        assert!(matches!(
            taken,
            Ok(Reply::Read {
                count: 7,
                eof: true,
                ..
            })
        ));
    }

    #[test]
    fn a_pooled_call_is_reused_only_once_finished_and_unshared() {
        let q = Arc::new(BatchQueue::default());
        let mut pool = CallPool::default();
        let body = |b: &mut Vec<u8>| b.extend_from_slice(&[1, 2, 3, 4]);
        let a = Call::new_pooled(
            &mut pool,
            6,
            body,
            None,
            1,
            Sink::Record,
            Notify::Batch(Arc::clone(&q), 0),
        );
        let a_ptr = Arc::as_ptr(&a);
        // Not finished: not kept.
        pool.put(Arc::clone(&a));
        assert!(pool.free.is_empty());
        a.complete(Err(CallError::Shutdown));
        // Finished but still shared: not kept.
        let extra = Arc::clone(&a);
        pool.put(Arc::clone(&a));
        assert!(pool.free.is_empty());
        drop(extra);
        pool.put(a);
        assert_eq!(pool.free.len(), 1);
        let b = Call::new_pooled(
            &mut pool,
            7,
            |b: &mut Vec<u8>| b.extend_from_slice(&[9]),
            None,
            2,
            Sink::Record,
            Notify::Batch(Arc::clone(&q), 1),
        );
        assert_eq!(Arc::as_ptr(&b), a_ptr, "the finished call was reused");
        assert_eq!(b.proc_, 7);
        assert_eq!(b.body, vec![9], "the body was re-encoded, not appended to");
        assert!(!b.is_done(), "a reused call starts unfinished");
        assert_eq!(b.attempts(), 0);
    }
}
