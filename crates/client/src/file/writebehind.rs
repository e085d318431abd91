//! Write-behind in unstable mode: `write_at` copies the data, sends the
//! UNSTABLE WRITE and returns without waiting for the reply, as a local
//! `write` returns once the page cache has the data. `fsync` is the
//! barrier: it waits for every write of the file still in flight, then
//! COMMITs as before (`fsync.rs`, `writelog.rs`).
//!
//! No thread of its own. The calls complete into a per-file queue (the
//! batch API's [`BatchQueue`]); their replies are received by whoever
//! waits on the transport, or by the driver's fallback receiver when
//! nobody does, and are *reaped* — checked, entered in the write log — by
//! the next caller that touches the file's write-behind state: a write, a
//! read overlapping them, `fsync`, `set_len`, a close.
//!
//! Either protocol version: the WRITE is the version's
//! (`rpcops.rs` `start_write_behind`/`finish_write_behind`). On NFSv4.1
//! each WRITE in flight holds a session slot until it is reaped, taken as
//! a pipelined batch takes one, so that the quarter of the slots kept for
//! blocking calls stays free of them (a thread that writes behind and then
//! makes a blocking call never waits for its own unreaped slots); when no
//! such slot is free, the write is sent and waited for under the file's
//! state lock, as with write-behind off, its error kept for the next
//! `fsync` like a write-behind WRITE's.
//!
//! The rules that make it behave like a local file:
//! * **Bounded.** At most [`MountOptions::write_behind`] bytes per file,
//!   and [`MountOptions::write_behind_client`] over all the client's
//!   files, are in flight (or held), and at most [`MAX_WRITES_IN_FLIGHT`]
//!   WRITEs per file; a writer finding no room waits for replies
//!   (backpressure), reaping the other files' replies while it waits for
//!   the client's. A single write larger than a bound waits for the
//!   writes under it to drain and is then sent as one. The count bound is
//!   for the calls that wait: a server works through what it received
//!   roughly in order of arrival, so a commit's FILE_SYNC WRITE (or a
//!   read) sent behind a SQLite checkpoint's hundreds of 4 KiB pages
//!   would wait for all of them.
//! * **Ordered.** A write or read overlapping bytes still in flight —
//!   `write_at`, `read_at`, or a [`Batch`](crate::Batch) operation
//!   submitted on the file — waits for those writes first (held ones are
//!   sent first): the server may execute concurrent calls in any order,
//!   so two overlapping WRITEs in flight could land the older one last,
//!   and a READ could overtake the WRITE it should see. The check is one
//!   atomic load when the file has nothing in flight or held.
//! * **Errors are kept, reported once.** A WRITE that fails after its
//!   `write_at` returned (ENOSPC, EDQUOT, EIO, a refusal, a soft timeout)
//!   is remembered and returned by the next `fsync` of the file — or
//!   [`File::flush_write_behind`], which the C library's close calls —
//!   once, as Linux reports a writeback error (`errseq_t`). Later errors
//!   before that report are folded into it.
//! * **Barriers.** `fsync`, `set_len`, and `Client::remove`/`rename` wait
//!   for the writes in flight first; dropping the last handle of a file
//!   waits for them too (reporting nothing, as closing a local file
//!   without `fsync` reports nothing).
//! * **Coalescing** (opt-in, [`File::set_write_coalescing`]): a write
//!   continuing the previous one back to back is held and joined to it;
//!   every barrier above, a write elsewhere (a `Batch` write too, in any
//!   file of the client) and a read over it send the run as one WRITE
//!   first, and an `fsync` that finds only held writes
//!   sends them as one FILE_SYNC WRITE, needing no COMMIT.
//!
//! [`MountOptions::write_behind`]: crate::config::MountOptions::write_behind
//! [`MountOptions::write_behind_client`]: crate::config::MountOptions::write_behind_client

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use directnfs_wire::nfs3;

use crate::error::{Error, Result};
use crate::file::inflight::{release_unreaped, InFlight};
use crate::file::{File, FileShared};
use crate::io::call::{BatchQueue, Call, Notify};

/// The most write-behind WRITEs of one file in flight at once (see the
/// module doc): 16 pages of 4 KiB keep a server busy without making a
/// call that waits queue behind much; larger writes meet the byte bound
/// first.
pub(crate) const MAX_WRITES_IN_FLIGHT: usize = 16;

/// A WRITE to send behind the writer's back.
struct Piece {
    offset: u64,
    data: Arc<[u8]>,
    /// The submission order of the write it is the rest of (short write).
    seq: Option<u64>,
}

/// One WRITE sent behind the writer's back.
#[derive(Debug)]
struct Pending {
    /// The version's WRITE (`rpcops.rs`): on NFSv4.1 it holds a slot of
    /// the session until it is reaped.
    piece: InFlight,
    offset: u64,
    data: Arc<[u8]>,
    /// Submission order, for `fsync` (waits for what was sent before it).
    seq: u64,
}

impl Pending {
    fn overlaps(&self, offset: u64, len: usize) -> bool {
        let end = offset.saturating_add(len as u64);
        self.offset < end && offset < self.offset + self.data.len() as u64
    }
}

#[derive(Debug, Default)]
struct State {
    /// Indexed by the call's token; `None` is a free slot (in `free`).
    slots: Vec<Option<Pending>>,
    free: Vec<usize>,
    next_seq: u64,
    /// The first error of a write-behind WRITE not yet reported.
    error: Option<Error>,
    /// Tokens taken from the queue (kept for its capacity).
    taken: Vec<usize>,
    /// Coalescing (see [`File::set_write_coalescing`]): the latest writes,
    /// back to back, not sent yet. Counted in `WriteBehind::bytes`.
    held: Option<Held>,
}

/// Adjacent writes kept to go as one WRITE.
#[derive(Debug)]
struct Held {
    offset: u64,
    data: Vec<u8>,
}

impl Held {
    fn end(&self) -> u64 {
        self.offset + self.data.len() as u64
    }

    fn overlaps(&self, offset: u64, len: usize) -> bool {
        offset < self.end() && self.offset < offset.saturating_add(len as u64)
    }
}

impl State {
    fn pending(&self) -> impl Iterator<Item = &Pending> {
        self.slots.iter().flatten()
    }
}

/// The write-behind state of one open file.
#[derive(Debug)]
pub(crate) struct WriteBehind {
    /// Bytes that may be in flight; 0 = write-behind off.
    limit: usize,
    /// Off for this file whatever the mount says (an `O_DSYNC` descriptor).
    disabled: AtomicBool,
    queue: Arc<BatchQueue>,
    state: Mutex<State>,
    /// Bytes in flight or held (readable without the lock: the fast
    /// paths).
    bytes: AtomicUsize,
    /// Bumped at every reap: a waiter whose writes someone else reaped
    /// sees that here (the queue it watched may be empty again).
    reaps: AtomicU64,
    /// Whether this file is in its client's registry (see `Registry`).
    registered: AtomicBool,
    /// Adjacent writes are held back and sent as one WRITE (opt-in:
    /// [`File::set_write_coalescing`]).
    coalesce: AtomicBool,
}

impl WriteBehind {
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            limit,
            disabled: AtomicBool::new(false),
            queue: Arc::new(BatchQueue::default()),
            state: Mutex::new(State::default()),
            bytes: AtomicUsize::new(0),
            reaps: AtomicU64::new(0),
            registered: AtomicBool::new(false),
            coalesce: AtomicBool::new(false),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Bytes of write-behind WRITEs in flight or held.
    pub(crate) fn outstanding(&self) -> usize {
        self.bytes.load(Ordering::Acquire)
    }
}

/// The files of a client that have used write-behind, so that `remove`
/// and `rename` (which name paths, not files) can wait for their writes.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    files: Mutex<Vec<Weak<FileShared>>>,
    /// Bytes in flight or held of all the client's files (bounded by
    /// `MountOptions::write_behind_client`).
    bytes: AtomicUsize,
    /// Files holding writes for coalescing.
    holders: AtomicUsize,
}

impl Registry {
    /// Bytes in flight or held of all the client's files.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Acquire)
    }

    fn add(&self, file: &Arc<FileShared>) {
        let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        files.retain(|w| w.strong_count() > 0);
        files.push(Arc::downgrade(file));
    }

    /// Waits until no write-behind WRITE of any open file of the client is
    /// in flight (errors stay kept for each file's next `fsync`).
    pub(crate) fn settle_all(&self) {
        let files = self.live();
        for shared in files {
            if shared.wb.outstanding() > 0 {
                let file = File { shared };
                file.send_held();
                file.wb_wait(|st| st.slots.iter().all(Option::is_none));
            }
        }
    }

    /// Sends the writes every open file of the client holds for
    /// coalescing, without waiting for their replies.
    pub(crate) fn send_all_held(&self) {
        // Nothing held anywhere (the common case): no lock taken.
        if self.holders.load(Ordering::Acquire) == 0 {
            return;
        }
        for shared in self.live() {
            if shared.wb.outstanding() > 0 {
                File { shared }.send_held();
            }
        }
    }

    fn live(&self) -> Vec<Arc<FileShared>> {
        let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        files.retain(|w| w.strong_count() > 0);
        files.iter().filter_map(Weak::upgrade).collect()
    }
}

impl crate::client::Client {
    /// Sends the writes that files of this client opened with
    /// [`File::set_write_coalescing`] hold back, without waiting for the
    /// replies: what a program calls where the data must leave the
    /// process (a lock release, the end of a transaction), as a local
    /// `write` has handed it to the kernel.
    pub fn send_held_writes(&self) {
        self.inner.write_behind.send_all_held();
    }

    /// Waits until no write-behind write of any open file of this client
    /// is held back or in flight (errors stay kept for each file's next
    /// `fsync`): what publishing data to another reader of the same
    /// process needs — SQLite's WAL-index header, for one.
    pub fn wait_write_behind(&self) {
        self.inner.write_behind.settle_all();
    }
}

impl File {
    /// Whether `write_at` goes behind: unstable mode, a non-zero bound,
    /// and not disabled for this file (either protocol version: the
    /// version's WRITE is `rpcops.rs`'s).
    pub(crate) fn writes_behind(&self) -> bool {
        self.shared.wb.limit > 0
            && self.inner().options.stable == crate::config::StableMode::Unstable
            && !self.shared.wb.disabled.load(Ordering::Relaxed)
            && !self.sync_writes()
    }

    /// Turns write-behind off (or back on) for this file and its clones,
    /// as an `O_DSYNC`/`O_SYNC` descriptor needs: every `write_at` then
    /// waits for its reply. Turning it off waits for the writes in flight.
    pub fn set_write_behind(&self, on: bool) {
        self.shared.wb.disabled.store(!on, Ordering::Relaxed);
        if !on {
            self.settle(0, usize::MAX);
        }
    }

    /// Coalescing (write-behind only): a write that continues the previous
    /// one back to back is added to it and both go as one WRITE (up to the
    /// transfer size), so that SQLite's WAL frames — a 24-byte header, then
    /// the page — cost one call per transaction instead of two per page.
    /// The writes are *held* in this process until a barrier sends them:
    /// a write that does not continue them (a [`Batch`](crate::Batch)
    /// write too, to any file of the client), a read or write over them,
    /// `fsync` (which, when they are all that is not yet durable, sends
    /// them as one FILE_SYNC WRITE and needs no COMMIT), `set_len`,
    /// `metadata`, [`wait_write_behind`](Self::wait_write_behind),
    /// [`flush_write_behind`](Self::flush_write_behind), dropping the file,
    /// and the client-wide [`Client::send_held_writes`] and
    /// [`Client::wait_write_behind`], `remove`, `rename`. Off by default:
    /// held data is lost if the process dies before a barrier (a local
    /// `write` is not), and other openers of the file do not see it —
    /// turn it on only where the caller places those barriers, as the
    /// SQLite VFS does at every lock release and every WAL-index update.
    ///
    /// [`Client::send_held_writes`]: crate::Client::send_held_writes
    /// [`Client::wait_write_behind`]: crate::Client::wait_write_behind
    pub fn set_write_coalescing(&self, on: bool) {
        self.shared.wb.coalesce.store(on, Ordering::Relaxed);
        if !on {
            self.send_held();
        }
    }

    /// Waits for every write-behind write of this file in flight, without
    /// reporting their errors (kept for the next `fsync`): what a lock
    /// release needs, so that the next holder — another connection,
    /// another process — reads the data.
    pub fn wait_write_behind(&self) {
        self.settle(0, usize::MAX);
    }

    /// Bytes of write-behind writes of this file sent and not yet answered,
    /// or held for coalescing.
    pub fn write_behind_bytes(&self) -> usize {
        self.shared.wb.outstanding()
    }

    /// Waits for every write-behind write of this file in flight and
    /// returns (once) the error of any that failed since the last report —
    /// what `fsync` does before its COMMIT, without the COMMIT. The C
    /// library's `dnfs_close` calls it, so a failed write is never lost by
    /// closing without `fsync`.
    pub fn flush_write_behind(&self) -> Result<()> {
        if self.shared.wb.outstanding() > 0 {
            self.send_held();
            self.wb_wait(|st| st.slots.iter().all(Option::is_none));
        }
        match self.shared.wb.lock().error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Bytes of write-behind writes in flight, after entering those
    /// already answered in the write log (without waiting).
    pub(crate) fn wb_in_flight(&self) -> usize {
        let wb = &self.shared.wb;
        if wb.outstanding() == 0 {
            return 0;
        }
        let again = self.reap(&mut wb.lock());
        if !again.is_empty() {
            self.send_behind(again);
        }
        wb.outstanding()
    }

    /// `fsync`'s first step: waits for every write-behind write sent before
    /// it (not for those other threads send meanwhile), counting the time
    /// in the file's statistics, and takes the error to report, if any.
    pub(crate) fn wb_barrier(&self) -> Option<Error> {
        let wb = &self.shared.wb;
        if wb.limit == 0 {
            return None;
        }
        if wb.outstanding() > 0 {
            let start = self.inner().transport().now_ns();
            if !self.sync_held() {
                self.send_held();
            }
            let before = wb.lock().next_seq;
            self.wb_wait(|st| st.pending().all(|p| p.seq >= before));
            let waited = self.inner().transport().now_ns().saturating_sub(start);
            self.shared.stats.on_fsync_wait(waited);
        }
        wb.lock().error.take()
    }

    /// Waits until no write-behind write overlapping `len` bytes at
    /// `offset` is in flight: a read there then sees their data, and a
    /// write there lands after them.
    pub(crate) fn settle(&self, offset: u64, len: usize) {
        if self.shared.wb.outstanding() == 0 {
            return;
        }
        if self
            .shared
            .wb
            .lock()
            .held
            .as_ref()
            .is_some_and(|h| h.overlaps(offset, len))
        {
            self.send_held();
        }
        self.wb_wait(|st| !st.pending().any(|p| p.overlaps(offset, len)));
    }

    /// Before a [`Batch`](crate::Batch) WRITE of `len` bytes at `offset`
    /// is queued, the rules a write-behind `write_at` follows: the writes
    /// held for coalescing (this file's and the client's other files')
    /// were made before it and are sent first, and the WRITEs in flight
    /// over its bytes are waited for, so that it lands after them. Two
    /// atomic loads when nothing is held or in flight.
    pub(crate) fn before_batch_write(&self, offset: u64, len: usize) {
        self.inner().write_behind.send_all_held();
        self.settle(offset, len);
    }

    /// Sends all of `buf` at `offset` behind the caller: returns once the
    /// data is copied and the WRITEs are sent. See the module doc.
    pub(crate) fn write_behind(&self, buf: &[u8], offset: u64) -> Result<usize> {
        self.check_range(offset, buf.len(), "WRITE")?;
        // Refused before anything is sent, as a write that waits is: a
        // `ro` mount, a lost NFSv4.1 lock.
        self.check_writable()?;
        self.check_write_behind()?;
        if buf.is_empty() {
            return Ok(0);
        }
        let wb = &self.shared.wb;
        if !wb.registered.swap(true, Ordering::Relaxed) {
            self.inner().write_behind.add(&self.shared);
        }
        let len = buf.len();
        let cap = self.coalesce_cap();
        self.send_others_held();
        if len < cap && self.append_held(buf, offset, cap) {
            return Ok(len);
        }
        // What is held was written before this: it goes first.
        self.send_held();
        // Room for it (or nothing in flight at all, for a write larger
        // than the bound), and nothing in flight under it.
        self.wb_wait(|st| {
            let bytes = wb.bytes.load(Ordering::Relaxed);
            let calls = st.slots.len() - st.free.len();
            (bytes == 0 || (bytes + len <= wb.limit && calls < MAX_WRITES_IN_FLIGHT))
                && !st.pending().any(|p| p.overlaps(offset, len))
        });
        self.wait_client_room(len);
        if len < cap && self.hold(buf, offset) {
            return Ok(len);
        }
        let wtmax = self.inner().limits.wtmax as usize;
        let pieces: Vec<Piece> = buf
            .chunks(wtmax)
            .enumerate()
            .map(|(i, c)| Piece {
                offset: offset + (i * wtmax) as u64,
                data: Arc::from(c),
                seq: None,
            })
            .collect();
        self.send_behind(pieces);
        // Acknowledged data waits in the write log for COMMIT: bounded.
        self.maybe_flush()?;
        Ok(len)
    }

    /// The most a coalesced WRITE carries (0: coalescing off).
    fn coalesce_cap(&self) -> usize {
        let wb = &self.shared.wb;
        if !wb.coalesce.load(Ordering::Relaxed) {
            return 0;
        }
        wb.limit.min(self.inner().limits.wtmax as usize)
    }

    /// Adds `buf` to the held writes if it continues them, fits, and no
    /// WRITE in flight overlaps it (that one must land first).
    fn append_held(&self, buf: &[u8], offset: u64, cap: usize) -> bool {
        let wb = &self.shared.wb;
        let mut st = wb.lock();
        let fits = st
            .held
            .as_ref()
            .is_some_and(|h| h.end() == offset && h.data.len() + buf.len() <= cap);
        if !fits
            || !self.client_room(buf.len())
            || st.pending().any(|p| p.overlaps(offset, buf.len()))
        {
            return false;
        }
        if let Some(h) = st.held.as_mut() {
            h.data.extend_from_slice(buf);
        }
        self.account(buf.len() as i64);
        true
    }

    /// Holds `buf` (the caller waited for room and for the WRITEs under
    /// it); false if another thread's writes are held meanwhile.
    fn hold(&self, buf: &[u8], offset: u64) -> bool {
        let mut st = self.shared.wb.lock();
        if st.held.is_some() {
            return false;
        }
        self.inner()
            .write_behind
            .holders
            .fetch_add(1, Ordering::AcqRel);
        st.held = Some(Held {
            offset,
            data: buf.to_vec(),
        });
        self.account(buf.len() as i64);
        true
    }

    fn released_hold(&self) {
        self.inner()
            .write_behind
            .holders
            .fetch_sub(1, Ordering::AcqRel);
    }

    /// Before a write: what other files of the client hold was written
    /// before it and goes first, so that writes leave the process in the
    /// order they were made across files (a process killed then loses
    /// only the latest run of one file's adjacent writes, not an earlier
    /// write another file's later one depends on — SQLite's journal
    /// record before the database page it protects).
    fn send_others_held(&self) {
        let reg = &self.inner().write_behind;
        let mine = usize::from(self.shared.wb.lock().held.is_some());
        if reg.holders.load(Ordering::Acquire) <= mine {
            return;
        }
        for shared in reg.live() {
            if !Arc::ptr_eq(&shared, &self.shared) {
                File { shared }.send_held();
            }
        }
    }

    /// Counts bytes that start (`delta` > 0) or stop being in flight or
    /// held: the file's bound, the client's, the statistics.
    fn account(&self, delta: i64) {
        let (wb, client) = (&self.shared.wb, &self.inner().write_behind.bytes);
        let n = delta.unsigned_abs() as usize;
        if delta >= 0 {
            wb.bytes.fetch_add(n, Ordering::AcqRel);
            client.fetch_add(n, Ordering::AcqRel);
        } else {
            wb.bytes.fetch_sub(n, Ordering::AcqRel);
            client.fetch_sub(n, Ordering::AcqRel);
        }
        self.shared.stats.on_write_behind(delta);
    }

    /// Whether `len` more bytes fit in the client-wide bound (or nothing
    /// is in flight at all, for a write larger than it).
    fn client_room(&self, len: usize) -> bool {
        let total = self.inner().write_behind.bytes.load(Ordering::Acquire);
        total == 0 || total + len <= self.inner().options.write_behind_client
    }

    /// Waits until `len` more bytes fit in the client-wide bound: the other
    /// files' answered WRITEs are reaped (their callers may be busy
    /// elsewhere) and their held writes sent (only replies free room).
    fn wait_client_room(&self, len: usize) {
        while !self.client_room(len) {
            let files = self.inner().write_behind.live();
            for shared in &files {
                let file = File {
                    shared: Arc::clone(shared),
                };
                file.send_held();
                file.wb_in_flight();
            }
            if self.client_room(len) {
                return;
            }
            // A reply to any of them, or a short pause: another thread
            // may have reaped one meanwhile.
            let until = std::time::Instant::now() + std::time::Duration::from_millis(5);
            self.inner().transport().wait_until(
                &|| {
                    files
                        .iter()
                        .any(|f| f.wb.queue.count.load(Ordering::Acquire) > 0)
                },
                Some(until),
            );
        }
    }

    /// Sends the held writes as one UNSTABLE write-behind WRITE. Taken and
    /// registered under one lock, so a reader never finds them neither
    /// held nor in flight.
    pub(crate) fn send_held(&self) {
        let calls = {
            let mut st = self.shared.wb.lock();
            let Some(h) = st.held.take() else {
                return;
            };
            self.released_hold();
            let n = h.data.len() as i64;
            let data: Arc<[u8]> = Arc::from(h.data);
            // Logged first (it may wait for a repair of the same bytes).
            self.log_submitted(std::iter::once((h.offset, &data)));
            let calls = self.register(
                &mut st,
                vec![Piece {
                    offset: h.offset,
                    data,
                    seq: None,
                }],
            );
            self.account(-n);
            calls
        };
        self.inner().transport().submit_many(calls);
    }

    /// `fsync` with writes held and nothing else of the file in flight or
    /// logged: sends the held writes as one FILE_SYNC WRITE and waits for
    /// it — durable on its reply, so `fsync` needs no COMMIT (a reply
    /// that is only UNSTABLE, or short, leaves the rest to the usual
    /// path). Called with `fsync_lock` held (no repair runs). Returns
    /// false if the case did not apply.
    fn sync_held(&self) -> bool {
        let wb = &self.shared.wb;
        let mut st = wb.lock();
        let again = self.reap(&mut st);
        if !again.is_empty() {
            drop(st);
            self.send_behind(again);
            return false;
        }
        if st.held.is_none() || st.pending().next().is_some() || !self.log().is_empty() {
            return false;
        }
        let Some(h) = st.held.take() else {
            return false;
        };
        self.released_hold();
        let n = h.data.len();
        let offset = h.offset;
        let data: Arc<[u8]> = Arc::from(h.data);
        self.log_submitted(std::iter::once((offset, &data)));
        // The state stays locked: a reader overlapping these bytes waits
        // for the reply here instead of overtaking the WRITE.
        let result = self.write_waited(offset, &data, nfs3::stable_how::FILE_SYNC);
        self.account(-(n as i64));
        let rest = match result {
            Ok((0, _)) => Err(self.wrote_nothing(offset, n)),
            Ok((k, _)) => Ok((k < n).then(|| Piece {
                offset: offset + k as u64,
                data: Arc::from(&data[k..]),
                seq: None,
            })),
            Err(e) => Err(e),
        };
        match rest {
            Ok(None) => {}
            Ok(Some(piece)) => {
                drop(st);
                self.send_behind(vec![piece]);
            }
            Err(e) => self.keep_error(&mut st, offset, e),
        }
        true
    }

    /// The error of a WRITE that takes nothing (it would loop for ever).
    fn wrote_nothing(&self, offset: u64, len: usize) -> Error {
        Error::Protocol {
            op: "WRITE",
            path: self.path().to_string(),
            detail: format!("server wrote 0 of {len} bytes at offset {offset}"),
        }
    }

    /// Keeps the error of a write-behind WRITE for the next `fsync`.
    fn keep_error(&self, st: &mut State, offset: u64, e: Error) {
        tracing::warn!(
            path = self.path(),
            offset,
            "write-behind WRITE failed (reported by the next fsync): {e}"
        );
        self.shared.stats.on_write_behind_error();
        st.error.get_or_insert(e);
    }

    /// Logs, registers and sends write-behind WRITEs.
    fn send_behind(&self, pieces: Vec<Piece>) {
        // Logged first (it may wait for a repair of the same bytes).
        self.log_submitted(pieces.iter().map(|p| (p.offset, &p.data)));
        let calls = self.register(&mut self.shared.wb.lock(), pieces);
        self.inner().transport().submit_many(calls);
    }

    /// One WRITE of `data` at `offset` asking `stable`, sent and waited
    /// for, its outcome entered in the write log (which the caller
    /// entered it in as submitted).
    fn write_waited(
        &self,
        offset: u64,
        data: &Arc<[u8]>,
        stable: nfs3::stable_how,
    ) -> Result<(usize, bool)> {
        let piece = [(offset, Arc::clone(data))];
        let result = self.write_round(&piece, stable).pop().unwrap_or_else(|| {
            Err(Error::InvalidInput(
                "a WRITE round without an outcome".into(),
            ))
        });
        self.record_write(offset, data, result)
    }

    /// A piece the version could not send behind the writer (no NFSv4.1
    /// slot to spare: see `rpcops.rs`), logged as submitted: sent and
    /// waited for, as with write-behind off, the rest of a short write
    /// too; an error is kept for the next `fsync`, as a write-behind
    /// WRITE's. Called with the state locked, so that nothing overlapping
    /// overtakes it.
    fn write_now(&self, st: &mut State, mut offset: u64, mut data: Arc<[u8]>) {
        loop {
            let result = match self.write_waited(offset, &data, nfs3::stable_how::UNSTABLE) {
                Ok((0, _)) => Err(self.wrote_nothing(offset, data.len())),
                other => other,
            };
            match result {
                Ok((n, _)) if n < data.len() => {
                    offset += n as u64;
                    data = Arc::from(&data[n..]);
                    self.log_submitted(std::iter::once((offset, &data)));
                }
                Ok(_) => return,
                Err(e) => return self.keep_error(st, offset, e),
            }
        }
    }

    /// Makes the WRITE calls of `pieces` and enters them in flight (a
    /// piece the version cannot send behind is written at once instead).
    fn register(&self, st: &mut State, pieces: Vec<Piece>) -> Vec<Arc<Call>> {
        let wb = &self.shared.wb;
        {
            pieces
                .into_iter()
                .filter_map(|Piece { offset, data, seq }| {
                    let token = st.free.pop().unwrap_or_else(|| {
                        st.slots.push(None);
                        st.slots.len() - 1
                    });
                    let notify = Notify::Batch(Arc::clone(&wb.queue), token);
                    let Some(piece) = self.start_write_behind(offset, &data, notify) else {
                        st.free.push(token);
                        self.write_now(st, offset, data);
                        return None;
                    };
                    let call = Arc::clone(piece.call());
                    self.account(data.len() as i64);
                    // The rest of a short write keeps its write's place
                    // (an fsync waiting for that write waits for it too).
                    let seq = seq.unwrap_or_else(|| {
                        st.next_seq += 1;
                        st.next_seq - 1
                    });
                    st.slots[token] = Some(Pending {
                        piece,
                        offset,
                        data,
                        seq,
                    });
                    Some(call)
                })
                .collect()
        }
    }

    /// Returns once `ready(state)` holds, reaping completions and receiving
    /// replies (or waiting for whoever receives) meanwhile.
    fn wb_wait(&self, ready: impl Fn(&State) -> bool) {
        let wb = &self.shared.wb;
        loop {
            let seen = {
                let mut st = wb.lock();
                let again = self.reap(&mut st);
                if again.is_empty() && ready(&st) {
                    return;
                }
                let seen = wb.reaps.load(Ordering::Acquire);
                drop(st);
                if !again.is_empty() {
                    // Short writes: the rest goes again, then re-check.
                    self.send_behind(again);
                    continue;
                }
                seen
            };
            let q = &wb.queue;
            *q.waiter.lock().unwrap_or_else(|p| p.into_inner()) = Some(std::thread::current());
            q.want.store(1, Ordering::Release);
            self.inner().transport().wait_until(
                &|| q.count.load(Ordering::Acquire) > 0 || wb.reaps.load(Ordering::Acquire) != seen,
                None,
            );
            q.want.store(0, Ordering::Release);
        }
    }

    /// Processes every completed write-behind WRITE: enters it in the write
    /// log (for COMMIT), keeps the first error. Returns the unwritten rest
    /// of short writes, to be sent again (without the lock held).
    fn reap(&self, st: &mut State) -> Vec<Piece> {
        let wb = &self.shared.wb;
        let mut again = Vec::new();
        if wb.queue.count.load(Ordering::Acquire) == 0 {
            return again;
        }
        let mut taken = std::mem::take(&mut st.taken);
        wb.queue.take_into(&mut taken);
        for token in taken.drain(..) {
            let Some(p) = st.slots.get_mut(token).and_then(Option::take) else {
                continue;
            };
            st.free.push(token);
            let result = match self.finish_write_behind(p.piece, p.offset, &p.data) {
                // A server that takes nothing would have us loop for ever.
                Ok((0, _)) => Err(self.wrote_nothing(p.offset, p.data.len())),
                Ok((n, _)) => {
                    if n < p.data.len() {
                        again.push(Piece {
                            offset: p.offset + n as u64,
                            data: Arc::from(&p.data[n..]),
                            seq: Some(p.seq),
                        });
                    }
                    Ok(())
                }
                Err(e) => Err(e),
            };
            if let Err(e) = result {
                self.keep_error(st, p.offset, e);
            }
            self.account(-(p.data.len() as i64));
        }
        st.taken = taken;
        wb.reaps.fetch_add(1, Ordering::AcqRel);
        again
    }
}

/// A handle is dropped: the writes held for coalescing are sent (they must
/// not wait for a barrier that may never come; the last handle's drop then
/// waits for them, below).
impl Drop for File {
    fn drop(&mut self) {
        if self.shared.wb.outstanding() > 0 {
            self.send_held();
        }
    }
}

/// The last handle of a file is gone: its writes in flight are waited for
/// (their outcome has nobody left to be reported to, as a local file
/// closed without `fsync`), so that they land before whatever the program
/// does next — a `remove`, another open's write to the same bytes.
impl Drop for FileShared {
    fn drop(&mut self) {
        if self.wb.outstanding() == 0 {
            return;
        }
        let calls: Vec<Arc<Call>> = self
            .wb
            .lock()
            .pending()
            .map(|p| Arc::clone(p.piece.call()))
            .collect();
        self.client
            .inner
            .transport()
            .wait_until(&|| calls.iter().all(|c| c.is_done()), None);
        // Their NFSv4.1 slots are released (the outcomes are not wanted).
        let pending: Vec<Pending> = self.wb.lock().slots.drain(..).flatten().collect();
        for p in pending {
            release_unreaped(self.v4.as_ref(), p.piece);
        }
        // Not reaped: take them off the file's (long-lived) statistics and
        // the client's bound.
        let n = self.wb.outstanding();
        self.stats.on_write_behind(-(n as i64));
        self.client
            .inner
            .write_behind
            .bytes
            .fetch_sub(n, Ordering::AcqRel);
    }
}

/// Write-behind against a server played in-process (`crate::testing`):
/// no socket, so these run under Miri too.
#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use directnfs_wire::nfs3::nfsstat3;

    use super::*;
    use crate::client::Client;
    use crate::config::{MountOptions, StableMode};
    use crate::testing::{late, open_on, serve, within_30s, Behaviour, FakeServer, Version};

    /// The server comes first so that it is dropped last: a test that
    /// fails with writes in flight reports instead of hanging in the
    /// file's drop, which waits for them.
    fn setup(write_behind: usize, behaviour: Behaviour) -> (FakeServer, Client, File) {
        let options = MountOptions {
            stable: StableMode::Unstable,
            write_behind,
            ..MountOptions::default()
        };
        let client = Client::detached(options, 4096, 4096);
        let file = File::detached(&client, "/f");
        let server = FakeServer::start(&client, behaviour);
        (server, client, file)
    }

    /// [`setup`] over `version` (`crate::testing::serve`), for the tests
    /// whose one body runs over NFSv3 and over NFSv4.1 (each write behind
    /// a COMPOUND on a batch slot of the session, held until reaped). On
    /// NFSv4.1 the session and the OPEN were answered first: counts of
    /// calls answered are taken from after them.
    fn setup_on(
        version: Version,
        write_behind: usize,
        behaviour: Behaviour,
    ) -> (FakeServer, Client, File) {
        let options = MountOptions {
            stable: StableMode::Unstable,
            write_behind,
            ..MountOptions::default()
        };
        serve(version, options, behaviour)
    }

    fn a_write_returns_before_its_reply_and_fsync_waits_for_it(version: Version) {
        let (server, _client, file) = setup_on(
            version,
            1 << 20,
            Behaviour {
                delay: late(),
                ..Behaviour::default()
            },
        );
        let base = server.answered();
        let started = Instant::now();
        assert_eq!(file.write_at(&[7u8; 10_000], 5).unwrap(), 10_000);
        assert!(
            started.elapsed() < late(),
            "{version:?}: returned before the reply"
        );
        assert_eq!(server.answered(), base, "{version:?}");
        assert_eq!(file.write_behind_bytes(), 10_000, "{version:?}");
        file.fsync().unwrap();
        assert_eq!(file.write_behind_bytes(), 0, "{version:?}");
        assert_eq!(
            server.answered(),
            base + 3,
            "{version:?}: three 4 KiB pieces answered"
        );
        let seen = server.seen();
        let mut got: Vec<(u64, usize)> = seen.writes.iter().map(|(o, d)| (*o, d.len())).collect();
        got.sort_unstable();
        assert_eq!(
            got,
            vec![(5, 4096), (4101, 4096), (8197, 1808)],
            "{version:?}"
        );
        assert!(seen.writes.iter().all(|(_, d)| d.iter().all(|&b| b == 7)));
    }

    #[test]
    fn a_write_returns_before_its_reply_and_fsync_waits_for_it_v3() {
        within_30s("v3", || {
            a_write_returns_before_its_reply_and_fsync_waits_for_it(Version::V3)
        });
    }

    #[test]
    fn a_write_returns_before_its_reply_and_fsync_waits_for_it_v41() {
        within_30s("v41", || {
            a_write_returns_before_its_reply_and_fsync_waits_for_it(Version::V41)
        });
    }

    fn a_writer_past_the_bound_waits_for_room(version: Version) {
        let (server, _client, file) = setup_on(
            version,
            8192,
            Behaviour {
                delay: Duration::from_millis(50),
                ..Behaviour::default()
            },
        );
        let base = server.answered();
        file.write_at(&[1u8; 4096], 0).unwrap();
        file.write_at(&[2u8; 4096], 4096).unwrap();
        assert!(file.write_behind_bytes() <= 8192, "{version:?}");
        // No room for a third: it waits until a reply made room (each
        // is answered 50 ms late; without the wait none would be yet).
        file.write_at(&[3u8; 4096], 8192).unwrap();
        let answered = server.answered() - base;
        assert!(answered >= 1, "{version:?}: {answered}");
        assert!(file.write_behind_bytes() <= 8192, "{version:?}");
        // A write larger than the whole bound waits for everything, then goes.
        file.write_at(&[4u8; 20_000], 20_000).unwrap();
        assert!(server.answered() - base >= 3, "{version:?}");
        file.fsync().unwrap();
    }

    #[test]
    fn a_writer_past_the_bound_waits_for_room_v3() {
        within_30s("v3", || a_writer_past_the_bound_waits_for_room(Version::V3));
    }

    #[test]
    fn a_writer_past_the_bound_waits_for_room_v41() {
        within_30s("v41", || {
            a_writer_past_the_bound_waits_for_room(Version::V41)
        });
    }

    fn a_writer_past_the_count_bound_waits_for_replies(version: Version) {
        // Room for 1 MiB, but small writes stop at MAX_WRITES_IN_FLIGHT.
        let (server, _client, file) = setup_on(
            version,
            1 << 20,
            Behaviour {
                delay: Duration::from_millis(50),
                ..Behaviour::default()
            },
        );
        let base = server.answered();
        for i in 0..MAX_WRITES_IN_FLIGHT {
            file.write_at(&[1u8; 512], (i * 4096) as u64).unwrap();
        }
        assert_eq!(
            server.answered(),
            base,
            "{version:?}: the first ones did not wait"
        );
        // One more waits until a reply made room.
        file.write_at(&[2u8; 512], (MAX_WRITES_IN_FLIGHT * 4096) as u64)
            .unwrap();
        let answered = server.answered() - base;
        assert!(answered >= 1, "{version:?}: {answered}");
        file.fsync().unwrap();
        assert_eq!(
            server.seen().writes.len(),
            MAX_WRITES_IN_FLIGHT + 1,
            "{version:?}"
        );
    }

    #[test]
    fn a_writer_past_the_count_bound_waits_for_replies_v3() {
        within_30s("v3", || {
            a_writer_past_the_count_bound_waits_for_replies(Version::V3)
        });
    }

    #[test]
    fn a_writer_past_the_count_bound_waits_for_replies_v41() {
        within_30s("v41", || {
            a_writer_past_the_count_bound_waits_for_replies(Version::V41)
        });
    }

    fn a_files_counters_count_write_at_calls_and_show_the_writes_on_the_wire_as_wb_out(
        version: Version,
    ) {
        let (server, client, file) = setup_on(
            version,
            1 << 20,
            Behaviour {
                delay: late(),
                ..Behaviour::default()
            },
        );
        let base = server.answered();
        // Two calls of 10,000 bytes: three 4 KiB WRITEs each.
        file.write_at(&[7u8; 10_000], 0).unwrap();
        file.write_at(&[8u8; 10_000], 20_000).unwrap();
        let stats = client.stats();
        let f = &stats.files[0].totals;
        assert_eq!(
            (f.writes, f.inflight, f.inflight_peak),
            (2, 0, 1),
            "{version:?}"
        );
        assert_eq!(f.write_behind_bytes, 20_000, "{version:?}");
        let on_wire: u64 = stats.servers[0].paths[0]
            .channels
            .iter()
            .map(|c| c.totals.inflight)
            .sum();
        assert_eq!(on_wire, 6, "{version:?}: the channels carry the six WRITEs");
        file.fsync().unwrap();
        assert_eq!(server.answered() - base, 6, "{version:?}");
        assert_eq!(
            client.stats().files[0].totals.write_behind_bytes,
            0,
            "{version:?}"
        );
    }

    #[test]
    fn a_files_counters_count_write_at_calls_and_show_the_writes_on_the_wire_as_wb_out_v3() {
        within_30s("v3", || {
            a_files_counters_count_write_at_calls_and_show_the_writes_on_the_wire_as_wb_out(
                Version::V3,
            )
        });
    }

    #[test]
    fn a_files_counters_count_write_at_calls_and_show_the_writes_on_the_wire_as_wb_out_v41() {
        within_30s("v41", || {
            a_files_counters_count_write_at_calls_and_show_the_writes_on_the_wire_as_wb_out(
                Version::V41,
            )
        });
    }

    fn a_write_over_bytes_in_flight_waits_for_them(version: Version) {
        let (server, _client, file) = setup_on(
            version,
            1 << 20,
            Behaviour {
                delay: Duration::from_millis(30),
                ..Behaviour::default()
            },
        );
        let base = server.answered();
        file.write_at(&[1u8; 100], 0).unwrap();
        file.write_at(&[2u8; 100], 50).unwrap();
        // The second was sent only once the first was answered.
        assert!(server.answered() > base, "{version:?}");
        file.fsync().unwrap();
        let seen = server.seen();
        assert_eq!(seen.writes.len(), 2, "{version:?}");
        assert_eq!(
            seen.writes[0].1[0], 1,
            "{version:?}: the older write reached the server first"
        );
    }

    #[test]
    fn a_write_over_bytes_in_flight_waits_for_them_v3() {
        within_30s("v3", || {
            a_write_over_bytes_in_flight_waits_for_them(Version::V3)
        });
    }

    #[test]
    fn a_write_over_bytes_in_flight_waits_for_them_v41() {
        within_30s("v41", || {
            a_write_over_bytes_in_flight_waits_for_them(Version::V41)
        });
    }

    fn a_failed_write_is_reported_by_the_next_fsync_once(version: Version) {
        let (_server, _client, file) = setup_on(
            version,
            1 << 20,
            Behaviour {
                write_error: Some(nfsstat3::NFS3ERR_NOSPC),
                ..Behaviour::default()
            },
        );
        file.write_at(&[1u8; 100], 0).unwrap();
        file.write_at(&[1u8; 100], 1000).unwrap();
        let err = file.fsync().unwrap_err();
        assert_eq!(err.errno(), libc::ENOSPC, "{version:?}: {err}");
        assert!(err.to_string().contains("WRITE /f"), "{version:?}: {err}");
        // Reported once, as Linux's writeback errors.
        file.fsync().unwrap();
        assert_eq!(
            file.client().stats().files[0].totals.write_behind_errors,
            2,
            "{version:?}"
        );
        // And by a flush (the C library's close) when no fsync came first.
        file.write_at(&[1u8; 100], 0).unwrap();
        assert_eq!(
            file.flush_write_behind().unwrap_err().errno(),
            libc::ENOSPC,
            "{version:?}"
        );
        file.flush_write_behind().unwrap();
    }

    #[test]
    fn a_failed_write_is_reported_by_the_next_fsync_once_v3() {
        within_30s("v3", || {
            a_failed_write_is_reported_by_the_next_fsync_once(Version::V3)
        });
    }

    #[test]
    fn a_failed_write_is_reported_by_the_next_fsync_once_v41() {
        within_30s("v41", || {
            a_failed_write_is_reported_by_the_next_fsync_once(Version::V41)
        });
    }

    fn dropping_the_file_waits_for_its_writes(version: Version) {
        let (server, client, file) = setup_on(
            version,
            1 << 20,
            Behaviour {
                delay: late(),
                ..Behaviour::default()
            },
        );
        file.write_at(&[1u8; 100], 0).unwrap();
        assert!(
            server.seen().writes.is_empty(),
            "{version:?}: not yet answered"
        );
        drop(file);
        // Answered before the drop returned (then, on NFSv4.1, the CLOSE).
        assert_eq!(server.seen().writes.len(), 1, "{version:?}");
        let stats = client.stats();
        assert_eq!(
            stats.files[0].totals.write_behind_bytes, 0,
            "{version:?}: gauge back to 0"
        );
    }

    #[test]
    fn dropping_the_file_waits_for_its_writes_v3() {
        within_30s("v3", || dropping_the_file_waits_for_its_writes(Version::V3));
    }

    #[test]
    fn dropping_the_file_waits_for_its_writes_v41() {
        within_30s("v41", || {
            dropping_the_file_waits_for_its_writes(Version::V41)
        });
    }

    /// Coalescing on: the test's file and server.
    fn coalescing(behaviour: Behaviour) -> (FakeServer, Client, File) {
        let (server, client, file) = setup(1 << 20, behaviour);
        file.set_write_coalescing(true);
        (server, client, file)
    }

    fn adjacent_writes_go_as_one_file_sync_write_at_fsync_without_commit(version: Version) {
        let (server, _client, file) = setup_on(version, 1 << 20, Behaviour::default());
        file.set_write_coalescing(true);
        let base = server.answered();
        // A WAL frame: a 24-byte header, then the page; then the next.
        let mut all = Vec::new();
        for (i, len) in [24usize, 1000, 24, 1000].into_iter().enumerate() {
            let data = vec![i as u8 + 1; len];
            file.write_at(&data, all.len() as u64).unwrap();
            all.extend_from_slice(&data);
        }
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(server.answered(), base, "{version:?}: held, not sent");
        assert_eq!(file.write_behind_bytes(), all.len(), "{version:?}");
        // No COMMIT: the single WRITE went FILE_SYNC (the NFSv3 fake
        // refuses COMMIT, so this fsync would fail otherwise).
        file.fsync().unwrap();
        assert_eq!(file.write_behind_bytes(), 0, "{version:?}");
        let seen = server.seen();
        assert_eq!(seen.writes, vec![(0, all)], "{version:?}");
        assert_eq!(
            seen.stables,
            vec![nfs3::stable_how::FILE_SYNC],
            "{version:?}"
        );
        assert_eq!(seen.commits, 0, "{version:?}");
        assert_eq!(server.answered(), base + 1, "{version:?}");
    }

    #[test]
    fn adjacent_writes_go_as_one_file_sync_write_at_fsync_without_commit_v3() {
        within_30s("v3", || {
            adjacent_writes_go_as_one_file_sync_write_at_fsync_without_commit(Version::V3)
        });
    }

    #[test]
    fn adjacent_writes_go_as_one_file_sync_write_at_fsync_without_commit_v41() {
        within_30s("v41", || {
            adjacent_writes_go_as_one_file_sync_write_at_fsync_without_commit(Version::V41)
        });
    }

    #[test]
    fn held_writes_go_before_a_write_elsewhere_and_before_a_read_over_them() {
        let (server, _client, file) = coalescing(Behaviour {
            delay: Duration::from_millis(10),
            ..Behaviour::default()
        });
        file.write_at(&[1u8; 100], 0).unwrap();
        file.write_at(&[2u8; 100], 500).unwrap();
        let mut buf = [0u8; 10];
        file.read_at(&mut buf, 550).unwrap();
        // Both went (the first when the second did not continue it), and
        // were answered, before the READ.
        {
            let seen = server.seen();
            assert_eq!(seen.writes[0], (0, vec![1u8; 100]));
            assert_eq!(seen.writes[1], (500, vec![2u8; 100]));
            assert_eq!(seen.reads, vec![(550, 10)]);
            assert!(seen
                .stables
                .iter()
                .all(|s| *s == nfs3::stable_how::UNSTABLE));
        }
        // A write past the transfer size is not held.
        file.write_at(&[3u8; 5000], 10_000).unwrap();
        file.fsync().unwrap();
        let seen = server.seen();
        assert_eq!(seen.writes.len(), 4);
        assert!(seen
            .stables
            .iter()
            .all(|s| *s == nfs3::stable_how::UNSTABLE));
    }

    fn a_write_sends_what_other_files_hold_first(version: Version) {
        let (server, client, a) = setup_on(version, 1 << 20, Behaviour::default());
        a.set_write_coalescing(true);
        let b = open_on(version, &client, "/b");
        b.set_write_coalescing(true);
        a.write_at(&[1u8; 100], 0).unwrap();
        b.write_at(&[2u8; 100], 0).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(
            server.seen().writes,
            vec![(0, vec![1u8; 100])],
            "{version:?}: a's write left before b's, which is held"
        );
        b.fsync().unwrap();
        a.fsync().unwrap();
        assert_eq!(server.seen().writes.len(), 2, "{version:?}");
    }

    #[test]
    fn a_write_sends_what_other_files_hold_first_v3() {
        within_30s("v3", || {
            a_write_sends_what_other_files_hold_first(Version::V3)
        });
    }

    #[test]
    fn a_write_sends_what_other_files_hold_first_v41() {
        within_30s("v41", || {
            a_write_sends_what_other_files_hold_first(Version::V41)
        });
    }

    fn a_batch_write_sends_the_held_writes_of_every_file_first(version: Version) {
        let (server, client, a) = setup_on(version, 1 << 20, Behaviour::default());
        a.set_write_coalescing(true);
        let b = open_on(version, &client, "/b");
        // Another file's held write was made before the batch's.
        a.write_at(&[1u8; 100], 0).unwrap();
        let mut batch = crate::Batch::new(&client);
        batch.write(&b, 0, &[2u8; 100], 1).unwrap();
        assert_eq!(
            batch.wait(1, None)[0].result.as_ref().ok(),
            Some(&100),
            "{version:?}"
        );
        // The same file's, elsewhere than the batch's bytes.
        a.write_at(&[3u8; 100], 1000).unwrap();
        batch.write(&a, 9000, &[4u8; 100], 2).unwrap();
        assert_eq!(
            batch.wait(1, None)[0].result.as_ref().ok(),
            Some(&100),
            "{version:?}"
        );
        a.fsync().unwrap();
        let order: Vec<(u64, u8)> = server
            .seen()
            .writes
            .iter()
            .map(|(o, d)| (*o, d[0]))
            .collect();
        assert_eq!(
            order,
            vec![(0, 1), (0, 2), (1000, 3), (9000, 4)],
            "{version:?}: the writes left in the order they were made"
        );
    }

    #[test]
    fn a_batch_write_sends_the_held_writes_of_every_file_first_v3() {
        within_30s("v3", || {
            a_batch_write_sends_the_held_writes_of_every_file_first(Version::V3)
        });
    }

    #[test]
    fn a_batch_write_sends_the_held_writes_of_every_file_first_v41() {
        within_30s("v41", || {
            a_batch_write_sends_the_held_writes_of_every_file_first(Version::V41)
        });
    }

    fn coalescing_stops_at_the_transfer_size(version: Version) {
        let (server, _client, file) = setup_on(version, 1 << 20, Behaviour::default());
        file.set_write_coalescing(true);
        for i in 0..5u64 {
            file.write_at(&[i as u8; 1000], i * 1000).unwrap();
        }
        file.fsync().unwrap();
        let got: Vec<(u64, usize)> = server
            .seen()
            .writes
            .iter()
            .map(|(o, d)| (*o, d.len()))
            .collect();
        assert_eq!(got, vec![(0, 4000), (4000, 1000)], "{version:?}");
    }

    #[test]
    fn coalescing_stops_at_the_transfer_size_v3() {
        within_30s("v3", || coalescing_stops_at_the_transfer_size(Version::V3));
    }

    #[test]
    fn coalescing_stops_at_the_transfer_size_v41() {
        within_30s("v41", || {
            coalescing_stops_at_the_transfer_size(Version::V41)
        });
    }

    fn dropping_the_handle_sends_and_waits_for_held_writes(version: Version) {
        let (server, client, file) = setup_on(version, 1 << 20, Behaviour::default());
        file.set_write_coalescing(true);
        file.write_at(&[5u8; 100], 0).unwrap();
        let clone = file.clone();
        drop(file);
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(
            server.seen().writes.len(),
            1,
            "{version:?}: sent when a handle went"
        );
        clone.write_at(&[6u8; 100], 100).unwrap();
        drop(clone);
        assert_eq!(
            server.seen().writes.len(),
            2,
            "{version:?}: the last handle sent and waited"
        );
        assert_eq!(
            client.stats().files[0].totals.write_behind_bytes,
            0,
            "{version:?}"
        );
    }

    #[test]
    fn dropping_the_handle_sends_and_waits_for_held_writes_v3() {
        within_30s("v3", || {
            dropping_the_handle_sends_and_waits_for_held_writes(Version::V3)
        });
    }

    #[test]
    fn dropping_the_handle_sends_and_waits_for_held_writes_v41() {
        within_30s("v41", || {
            dropping_the_handle_sends_and_waits_for_held_writes(Version::V41)
        });
    }

    fn a_failed_file_sync_write_of_held_writes_is_reported_by_fsync_once(version: Version) {
        let (_server, client, file) = setup_on(
            version,
            1 << 20,
            Behaviour {
                write_error: Some(nfsstat3::NFS3ERR_NOSPC),
                ..Behaviour::default()
            },
        );
        file.set_write_coalescing(true);
        file.write_at(&[1u8; 100], 0).unwrap();
        let err = file.fsync().unwrap_err();
        assert_eq!(err.errno(), libc::ENOSPC, "{version:?}: {err}");
        file.fsync().unwrap();
        // The client-wide barriers send and wait for held writes too.
        file.write_at(&[1u8; 100], 0).unwrap();
        client.send_held_writes();
        client.wait_write_behind();
        assert_eq!(file.write_behind_bytes(), 0, "{version:?}");
        assert_eq!(
            file.flush_write_behind().unwrap_err().errno(),
            libc::ENOSPC,
            "{version:?}"
        );
    }

    #[test]
    fn a_failed_file_sync_write_of_held_writes_is_reported_by_fsync_once_v3() {
        within_30s("v3", || {
            a_failed_file_sync_write_of_held_writes_is_reported_by_fsync_once(Version::V3)
        });
    }

    #[test]
    fn a_failed_file_sync_write_of_held_writes_is_reported_by_fsync_once_v41() {
        within_30s("v41", || {
            a_failed_file_sync_write_of_held_writes_is_reported_by_fsync_once(Version::V41)
        });
    }

    fn a_writer_waits_for_the_client_bound_while_its_file_has_room(version: Version) {
        let options = MountOptions {
            stable: StableMode::Unstable,
            write_behind: 1 << 20,
            write_behind_client: 8192,
            ..MountOptions::default()
        };
        let behaviour = Behaviour {
            delay: Duration::from_millis(50),
            ..Behaviour::default()
        };
        let (server, client, a) = serve(version, options, behaviour);
        let b = open_on(version, &client, "/b");
        let base = server.answered();
        a.write_at(&[1u8; 4096], 0).unwrap();
        b.write_at(&[2u8; 4096], 0).unwrap();
        assert_eq!(server.answered(), base, "{version:?}");
        // The client is full; `a` has 1 MiB - 4 KiB of room left, yet
        // its writer waits for a reply (to either file's WRITE).
        let started = Instant::now();
        a.write_at(&[3u8; 4096], 4096).unwrap();
        assert!(
            server.answered() > base,
            "{version:?}: returned before any reply"
        );
        assert!(
            started.elapsed() >= Duration::from_millis(40),
            "{version:?}"
        );
        assert!(
            a.write_behind_bytes() + b.write_behind_bytes() <= 8192,
            "{version:?}"
        );
        // B's caller never came back: the waiter reaped B's reply itself.
        a.fsync().unwrap();
        b.fsync().unwrap();
        assert_eq!(
            a.write_behind_bytes() + b.write_behind_bytes(),
            0,
            "{version:?}"
        );
        drop((a, b));
        drop(server);
    }

    #[test]
    fn a_writer_waits_for_the_client_bound_while_its_file_has_room_v3() {
        within_30s("v3", || {
            a_writer_waits_for_the_client_bound_while_its_file_has_room(Version::V3)
        });
    }

    #[test]
    fn a_writer_waits_for_the_client_bound_while_its_file_has_room_v41() {
        within_30s("v41", || {
            a_writer_waits_for_the_client_bound_while_its_file_has_room(Version::V41)
        });
    }

    #[test]
    fn off_when_zero_and_in_file_sync_mode() {
        let (_server, _client, file) = setup(0, Behaviour::default());
        assert!(!file.writes_behind());
        let client = Client::detached(MountOptions::default(), 4096, 4096);
        assert!(!File::detached(&client, "/g").writes_behind());
        let (_server, _client, file) = setup(4096, Behaviour::default());
        assert!(file.writes_behind());
        file.set_write_behind(false);
        assert!(!file.writes_behind());
    }
}
