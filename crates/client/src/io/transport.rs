//! The transport: every channel to one server, and the logic that moves a
//! call between them.
//!
//! * `submit` picks the least-loaded channel that is up, puts the call in
//!   its in-flight table and writes it; with no channel up the call is
//!   parked until one comes back (hard) or its soft deadline passes.
//! * one receiver thread per live connection reads replies, finds each
//!   call by XID and completes it (READ data straight into the caller's
//!   buffer);
//! * one maintenance thread expires calls that waited longer than `timeo`
//!   (failing their channel, which re-sends its calls elsewhere), reconnects
//!   dead channels with backoff, and retries parked calls.

use std::io;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use directnfs_engine::choose::{least_loaded, Candidate};
use directnfs_engine::retry::{AfterFailure, Backoff, RetryPolicy};
use directnfs_wire::rpc::{AcceptedReply, RecordReader, RejectedReply, ReplyBody, ReplyHeader};
use directnfs_wire::{Decode, XdrReader};

use super::call::{Call, Reply, Sink};
use super::channel::Channel;
use super::error::CallError;

/// Receive buffer of a channel: initial and largest size (room to take
/// many replies per wake-up).
const RX_BUFFER_START: usize = 256 * 1024;
const RX_BUFFER_MAX: usize = 4 << 20;
/// How long a receiver waits for replies it only expects (not ones already
/// under way) before taking what has arrived.
const SPECULATIVE_WAIT_MS: libc::c_int = 2;
/// READ replies at least this long are received straight into the
/// caller's buffer.
const DIRECT_MIN: usize = 64 * 1024;
/// Bytes of a large record read before deciding whether its data can be
/// received directly: the RPC reply header and the READ3resok head.
const DIRECT_HEAD: usize = 512;

/// Outcome of [`Shared::receive_direct`].
enum Direct {
    /// Not a large READ reply in progress: use the normal path.
    NotApplicable,
    /// Delivered: drop `consumed` buffered bytes, then `skip` more from the
    /// socket (the record's padding).
    Done { consumed: usize, skip: usize },
    /// The connection failed mid-reply; the call (ours now) must be re-sent
    /// once the channel is failed.
    Failed(String, Arc<Call>),
}

/// Largest `SO_RCVLOWAT` set.
const RCVLOWAT_MAX: usize = 128 * 1024;

/// The socket side of a receiver: `poll` + non-blocking `recv` with an
/// adaptive `SO_RCVLOWAT` (see `Shared::receive_loop`).
struct Receiver<'a> {
    stream: &'a TcpStream,
    lowat: usize,
    /// Off after a speculative wait found nothing; on again after progress.
    speculate: bool,
}

impl<'a> Receiver<'a> {
    fn new(stream: &'a TcpStream) -> Self {
        Self {
            stream,
            lowat: 1,
            speculate: true,
        }
    }

    /// Bytes worth waiting for: half of what is expected on the channel,
    /// but at least one average reply, and never more than all of it.
    fn guess(&self, ch: &Channel) -> usize {
        if !self.speculate {
            return 0;
        }
        let expected = ch.expected_reply_bytes.load(Ordering::Relaxed) as usize;
        let n = ch.outstanding_requests.load(Ordering::Relaxed) as usize;
        if n == 0 {
            return 0;
        }
        (expected / 2).max(expected / n).min(expected)
    }

    /// Waits until `certain` bytes (surely coming) or `guess` bytes (maybe,
    /// for at most a short while) are queued, then takes all that is there.
    /// `cap` is asked after the wait how many bytes to take at most (the
    /// replies due may have changed while waiting).
    fn receive(
        &mut self,
        buf: &mut [u8],
        certain: usize,
        guess: usize,
        cap: impl FnOnce() -> usize,
    ) -> io::Result<usize> {
        use std::os::fd::AsRawFd;
        let fd = self.stream.as_raw_fd();
        // Capped well below the socket's receive buffer: a low-water mark
        // the buffer cannot reach would only be rescued by the kernel's
        // memory-pressure rule.
        let certain = certain.min(RCVLOWAT_MAX);
        let target = certain.max(guess).min(buf.len()).clamp(1, RCVLOWAT_MAX);
        let speculative = target > certain;
        if target != self.lowat {
            let v = target as libc::c_int;
            // SAFETY: fd is this receiver's live socket; the option value
            // is a c_int that outlives the call, and its size is passed.
            let rc = unsafe {
                libc::setsockopt(
                    fd,
                    libc::SOL_SOCKET,
                    libc::SO_RCVLOWAT,
                    (&v as *const libc::c_int).cast(),
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                )
            };
            if rc != 0 {
                return Err(io::Error::last_os_error());
            }
            self.lowat = target;
        }
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let timeout = if speculative { SPECULATIVE_WAIT_MS } else { -1 };
        // SAFETY: one valid pollfd, count 1.
        let rc = unsafe { libc::poll(&mut pfd, 1, timeout) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        let len = buf.len().min(cap()).max(1);
        // SAFETY: the pointer and `len` <= buf.len() describe `buf`, valid for writes.
        let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), len, libc::MSG_DONTWAIT) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::WouldBlock && rc == 0 {
                // The guess was wrong: stop guessing until data flows.
                self.speculate = false;
            }
            return Err(e);
        }
        self.speculate = true;
        Ok(n as usize)
    }
}

/// Average size of the replies due on `ch`.
fn average_reply(ch: &Channel) -> usize {
    let n = ch.outstanding_requests.load(Ordering::Relaxed) as usize;
    let expected = ch.expected_reply_bytes.load(Ordering::Relaxed) as usize;
    expected.checked_div(n).unwrap_or(0)
}

/// How often the maintenance thread checks that each path still has a route.
const ROUTE_CHECK_INTERVAL: Duration = Duration::from_millis(100);

/// What a transport needs to know at creation.
#[derive(Debug, Clone)]
pub(crate) struct TransportConfig {
    pub policy: RetryPolicy,
    pub backoff: Backoff,
    /// Largest reply record accepted.
    pub max_record: usize,
    /// Encoded credential and verifier, put in every call.
    pub cred: Vec<u8>,
    /// RPC program and version probed with NULL on (re)connect.
    pub prog: u32,
    pub vers: u32,
}

/// State shared by callers, receiver threads and the maintenance thread.
#[derive(Debug)]
pub(crate) struct Shared {
    pub channels: Vec<Arc<Channel>>,
    pub config: TransportConfig,
    origin: Instant,
    rotate: AtomicUsize,
    /// Calls waiting for any channel to come up.
    parked: Mutex<Vec<Arc<Call>>>,
    /// Callers waiting for room in a full in-flight table.
    room: (Mutex<()>, Condvar),
    room_waiters: AtomicUsize,
    shutdown: AtomicBool,
    /// Wakes the maintenance thread early (shutdown), so dropping a client
    /// does not wait for its next tick.
    tick: (Mutex<()>, Condvar),
}

/// Owner handle: shuts everything down when dropped.
#[derive(Debug)]
pub(crate) struct Transport {
    pub shared: Arc<Shared>,
    maintenance: Option<JoinHandle<()>>,
}

impl Transport {
    /// Creates the transport and connects every channel in parallel. Fails
    /// only if no channel at all could connect.
    pub(crate) fn start(channels: Vec<Channel>, config: TransportConfig) -> io::Result<Self> {
        let shared = Arc::new(Shared {
            channels: channels.into_iter().map(Arc::new).collect(),
            config,
            origin: Instant::now(),
            rotate: AtomicUsize::new(0),
            parked: Mutex::new(Vec::new()),
            room: (Mutex::new(()), Condvar::new()),
            room_waiters: AtomicUsize::new(0),
            shutdown: AtomicBool::new(false),
            tick: (Mutex::new(()), Condvar::new()),
        });
        let errors: Vec<io::Error> = std::thread::scope(|s| {
            let handles: Vec<_> = shared
                .channels
                .iter()
                .map(|ch| {
                    let shared = &shared;
                    s.spawn(move || shared.connect_channel(ch))
                })
                .collect();
            handles
                .into_iter()
                .filter_map(|h| h.join().ok().and_then(|r| r.err()))
                .collect()
        });
        if !shared.channels.iter().any(|c| c.is_up()) {
            shared.shutdown.store(true, Ordering::Relaxed);
            return Err(errors
                .into_iter()
                .next()
                .unwrap_or_else(|| io::Error::other("no channel to connect")));
        }
        for e in &errors {
            tracing::warn!("a channel failed to connect and will be retried: {e}");
        }
        let s2 = Arc::clone(&shared);
        let maintenance = std::thread::Builder::new()
            .name("dnfs-maint".into())
            .spawn(move || s2.maintenance_loop())?;
        Ok(Self {
            shared,
            maintenance: Some(maintenance),
        })
    }
}

impl Drop for Transport {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::Release);
        {
            let _g = self.shared.tick.0.lock().unwrap_or_else(|p| p.into_inner());
            self.shared.tick.1.notify_all();
        }
        for ch in &self.shared.channels {
            let mut st = ch.lock();
            Channel::shutdown_socket(&mut st);
            ch.up.store(false, Ordering::Relaxed);
        }
        if let Some(h) = self.maintenance.take() {
            let _ = h.join();
        }
        // Anything still parked or in flight fails now rather than hanging.
        let parked =
            std::mem::take(&mut *self.shared.parked.lock().unwrap_or_else(|p| p.into_inner()));
        for c in parked {
            c.complete(Err(CallError::Shutdown));
        }
        for ch in &self.shared.channels {
            let mut calls = Vec::new();
            ch.lock().table.drain_into(&mut calls);
            for c in calls {
                c.complete(Err(CallError::Shutdown));
            }
        }
    }
}

impl Shared {
    /// Monotonic nanoseconds since the transport started.
    pub(crate) fn now_ns(&self) -> u64 {
        self.origin.elapsed().as_nanos() as u64
    }

    fn timeo_ns(&self) -> u64 {
        self.config.policy.timeo.as_nanos() as u64
    }

    /// Sends a call on the best channel, or parks it.
    pub(crate) fn submit(self: &Arc<Self>, call: Arc<Call>) {
        let avoid = match call.last_channel.load(Ordering::Relaxed) {
            usize::MAX => None,
            c => Some(c),
        };
        loop {
            if self.shutdown.load(Ordering::Acquire) {
                call.complete(Err(CallError::Shutdown));
                return;
            }
            let Some(idx) = self.choose(avoid) else {
                self.park(call);
                return;
            };
            let ch = &self.channels[idx];
            let (xid, epoch) = {
                let mut st = ch.lock();
                if !st.health.is_up() {
                    continue;
                }
                let deadline = self.now_ns() + self.timeo_ns();
                match st.table.insert(Arc::clone(&call), deadline) {
                    Ok(xid) => (xid, st.epoch),
                    Err(_) => {
                        drop(st);
                        self.wait_for_room();
                        continue;
                    }
                }
            };
            if call.attempts.fetch_add(1, Ordering::Relaxed) > 0 {
                ch.stats.on_retransmit();
            }
            call.last_channel.store(idx, Ordering::Relaxed);
            call.sent_ns.store(self.now_ns(), Ordering::Relaxed);
            ch.stats.on_submit(call.proc_);
            ch.add_load(&call);
            if let Err(e) = ch.send(xid, &call) {
                // The call sits in the table: failing the channel re-sends it.
                self.fail_channel(ch, epoch, &format!("send failed: {e}"));
            }
            return;
        }
    }

    fn choose(&self, avoid: Option<usize>) -> Option<usize> {
        // Small fixed array on the stack for the common case.
        let mut cands = [Candidate {
            up: false,
            outstanding_bytes: 0,
            outstanding_requests: 0,
        }; 64];
        let n = self.channels.len();
        if n > cands.len() {
            let v: Vec<Candidate> = self.channels.iter().map(candidate).collect();
            return least_loaded(&v, self.rotate.fetch_add(1, Ordering::Relaxed), avoid);
        }
        for (c, ch) in cands.iter_mut().zip(&self.channels) {
            *c = candidate(ch);
        }
        least_loaded(
            &cands[..n],
            self.rotate.fetch_add(1, Ordering::Relaxed),
            avoid,
        )
    }

    fn wait_for_room(&self) {
        self.room_waiters.fetch_add(1, Ordering::AcqRel);
        let guard = self.room.0.lock().unwrap_or_else(|p| p.into_inner());
        // Bounded wait: a completion may race past us; re-check soon anyway.
        let _ = self.room.1.wait_timeout(guard, Duration::from_millis(5));
        self.room_waiters.fetch_sub(1, Ordering::AcqRel);
    }

    fn park(&self, call: Arc<Call>) {
        self.parked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(call);
    }

    /// A call's attempt failed (timeout or dead channel): retry or give up.
    fn retry_or_fail(self: &Arc<Self>, call: Arc<Call>) {
        match self.config.policy.after_failure(call.attempts()) {
            AfterFailure::Retry => self.submit(call),
            AfterFailure::GiveUp => call.complete(Err(CallError::TimedOut {
                attempts: call.attempts(),
            })),
        }
    }

    /// Marks a channel dead (if `epoch` is still its current connection),
    /// shuts its socket and re-sends everything that was in flight on it.
    pub(crate) fn fail_channel(self: &Arc<Self>, ch: &Channel, epoch: u64, why: &str) {
        let mut calls = Vec::new();
        {
            let mut st = ch.lock();
            if st.epoch != epoch || !st.health.is_up() {
                return;
            }
            tracing::warn!(channel = ch.id, path = ch.path, "channel failed: {why}");
            st.health.on_failure(self.now_ns(), &self.config.backoff);
            st.epoch += 1;
            ch.up.store(false, Ordering::Relaxed);
            // Abortive: nothing of this connection may reach the server
            // after its calls were re-sent elsewhere (see abort_socket).
            Channel::abort_socket(&mut st);
            st.table.drain_into(&mut calls);
        }
        *ch.writer.lock().unwrap_or_else(|p| p.into_inner()) = None;
        ch.outstanding_bytes.store(0, Ordering::Relaxed);
        ch.outstanding_requests.store(0, Ordering::Relaxed);
        ch.expected_reply_bytes.store(0, Ordering::Relaxed);
        let now = self.now_ns();
        for call in calls {
            self.account_lost(ch, &call, now);
            ch.stats.on_failover();
            self.retry_or_fail(call);
        }
    }

    /// Connects (or reconnects) one channel: TCP connect, NULL probe, then a
    /// receiver thread. Marks it up only when the server answered.
    fn connect_channel(self: &Arc<Self>, ch: &Arc<Channel>) -> io::Result<()> {
        let result = (|| {
            let mut stream = super::socket::connect(&ch.spec)?;
            stream.set_write_timeout(Some(ch.spec.timeout))?;
            Channel::probe(
                &mut stream,
                &self.config.cred,
                self.config.prog,
                self.config.vers,
                ch.spec.timeout,
            )?;
            stream.set_write_timeout(None)?;
            stream.set_read_timeout(None)?;
            Ok::<_, io::Error>(stream)
        })();
        let stream = match result {
            Ok(s) => s,
            Err(e) => {
                ch.lock()
                    .health
                    .on_failure(self.now_ns(), &self.config.backoff);
                return Err(io::Error::new(
                    e.kind(),
                    format!("connect to {} failed: {e}", ch.spec.remote),
                ));
            }
        };
        let reader = stream.try_clone()?;
        let writer = stream.try_clone()?;
        let epoch = {
            let mut st = ch.lock();
            st.epoch += 1;
            st.sock = Some(stream);
            *ch.writer.lock().unwrap_or_else(|p| p.into_inner()) = Some(writer);
            st.health.on_connected();
            st.epoch
        };
        let shared = Arc::clone(self);
        let ch2 = Arc::clone(ch);
        std::thread::Builder::new()
            .name(format!("dnfs-rx{}", ch.id))
            .spawn(move || shared.receive_loop(&ch2, reader, epoch))?;
        if epoch > 1 {
            ch.stats.on_reconnect();
        }
        ch.up.store(true, Ordering::Release);
        self.kick_parked();
        Ok(())
    }

    /// Re-submits parked calls once a channel is up.
    fn kick_parked(self: &Arc<Self>) {
        let parked = std::mem::take(&mut *self.parked.lock().unwrap_or_else(|p| p.into_inner()));
        for call in parked {
            self.submit(call);
        }
    }

    /// Receives and dispatches replies until the connection fails.
    ///
    /// Wake-ups, not decoding, are what a reply costs: so the thread sleeps
    /// in `poll` with `SO_RCVLOWAT` set to the bytes it can expect soon —
    /// half of what is outstanding on this channel, at least one whole
    /// reply — and then takes everything queued in one `recv`. Replies that
    /// are certain to come (the rest of a record already started) are
    /// waited for without a timeout; the speculative part has a 2 ms
    /// timeout, so a wrong guess (a short READ, an error reply) costs at
    /// most that, and a lone reply never waits for anything but itself.
    fn receive_loop(self: &Arc<Self>, ch: &Arc<Channel>, stream: TcpStream, epoch: u64) {
        let mut reader = RecordReader::new(self.config.max_record);
        let mut buf: Vec<u8> = vec![0; RX_BUFFER_START];
        let (mut start, mut end) = (0usize, 0usize);
        let mut rx = Receiver::new(&stream);
        // Bytes of a record received directly that are still to be dropped
        // (its padding, and anything after the data).
        let mut skip = 0usize;
        let mut lost = None;
        let why = loop {
            if skip > 0 {
                let n = skip.min(end - start);
                start += n;
                skip -= n;
                if skip > 0 {
                    start = 0;
                    end = 0;
                    match rx.receive(&mut buf[..skip.min(RX_BUFFER_START)], skip, 0, || {
                        usize::MAX
                    }) {
                        Ok(0) => break "server closed the connection".to_string(),
                        Ok(n) => end = n,
                        Err(e)
                            if matches!(
                                e.kind(),
                                io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
                            ) => {}
                        Err(e) => break format!("receive failed: {e}"),
                    }
                }
                continue;
            }
            // A large READ reply not yet complete: receive its data straight
            // into the caller's buffer instead of through ours.
            if !reader.is_mid_record() {
                match self.receive_direct(ch, epoch, &mut rx, &buf[start..end]) {
                    Direct::NotApplicable => {}
                    Direct::Done {
                        consumed,
                        skip: rest,
                    } => {
                        start += consumed;
                        skip = rest;
                        continue;
                    }
                    Direct::Failed(why, call) => {
                        lost = Some(call);
                        break why;
                    }
                }
            }
            // Hand out every complete record in the buffer.
            let step = match reader.next(&buf[start..end]) {
                Ok(s) => s,
                Err(e) => break format!("{e}"),
            };
            if step.consumed > 0 {
                if let Some(rec) = step.record {
                    self.handle_record(ch, epoch, &rec);
                }
                start += step.consumed;
                continue;
            }
            // Need more bytes: make room for the whole next fragment.
            let need = match reader.bytes_needed(&buf[start..end]) {
                Ok(n) => n,
                Err(e) => break format!("{e}"),
            };
            if start > 0 && (start == end || buf.len() - start < need) {
                buf.copy_within(start..end, 0);
                end -= start;
                start = 0;
            }
            if buf.len() - start < need {
                buf.resize(start + need, 0);
            }
            let have = end - start;
            let mut certain = need.saturating_sub(have).max(1);
            let mut guess = rx.guess(ch).saturating_sub(have);
            if guess > buf.len() - end && buf.len() < RX_BUFFER_MAX {
                buf.resize((end + guess).min(RX_BUFFER_MAX), 0);
            }
            // A large record starting: take only its head, so a READ's data
            // can go straight to the caller (receive_direct). At a record
            // boundary the size is not known yet: expect a large one when
            // the replies due on this channel are large — asked after the
            // wait, since the request may be sent while we wait.
            let boundary = !reader.is_mid_record() && have < DIRECT_HEAD;
            if boundary && need >= DIRECT_MIN {
                certain = certain.min(DIRECT_HEAD - have);
                guess = 0;
            }
            let cap = || {
                let large = need >= DIRECT_MIN || (have < 4 && average_reply(ch) >= DIRECT_MIN);
                if boundary && large {
                    DIRECT_HEAD - have
                } else {
                    usize::MAX
                }
            };
            match rx.receive(&mut buf[end..], certain, guess, cap) {
                Ok(0) => break "server closed the connection".to_string(),
                Ok(n) => end += n,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
                    ) => {}
                Err(e) => break format!("receive failed: {e}"),
            }
        };
        if !self.shutdown.load(Ordering::Acquire) {
            self.fail_channel(ch, epoch, &why);
        }
        if let Some(call) = lost {
            self.retry_or_fail(call);
        }
    }

    /// Receives a large READ reply's data straight into the caller's
    /// buffer (one copy less per byte: what `scan` pays for). Applies to a
    /// single-fragment record of at least [`DIRECT_MIN`] bytes, not yet
    /// complete in `have`, answering a READ in flight on this channel, once
    /// its header is in `have`. Anything else is left to the normal path.
    fn receive_direct(
        self: &Arc<Self>,
        ch: &Channel,
        epoch: u64,
        rx: &mut Receiver<'_>,
        have: &[u8],
    ) -> Direct {
        let Some(h) = have.get(..4) else {
            return Direct::NotApplicable;
        };
        let mark = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
        let len = (mark & 0x7fff_ffff) as usize;
        let last = mark & 0x8000_0000 != 0;
        if !last || len < DIRECT_MIN || have.len() >= 4 + len || len > self.config.max_record {
            return Direct::NotApplicable;
        }
        let mut r = XdrReader::new(&have[4..]);
        let Ok(header) = ReplyHeader::decode(&mut r) else {
            return Direct::NotApplicable;
        };
        if !header.is_success() {
            return Direct::NotApplicable;
        }
        // Peek first: only a READ of ours whose head is complete qualifies.
        let max = {
            let st = ch.lock();
            if st.epoch != epoch {
                return Direct::NotApplicable;
            }
            match st.table.get(header.xid).map(|c| &c.sink) {
                Some(Sink::Read(dest)) => dest.len() as u32,
                _ => return Direct::NotApplicable,
            }
        };
        let Ok(head) = directnfs_wire::nfs3::decode_read_reply_head(&mut r, max) else {
            return Direct::NotApplicable;
        };
        let Some(ok) = head.ok else {
            return Direct::NotApplicable;
        };
        let data_at = 4 + r.position();
        let count = ok.count as usize;
        if data_at + count > 4 + len {
            return Direct::NotApplicable;
        }
        let call = {
            let mut st = ch.lock();
            if st.epoch != epoch {
                return Direct::NotApplicable;
            }
            st.table.take(header.xid)
        };
        let Some(call) = call else {
            return Direct::NotApplicable;
        };
        let Sink::Read(dest) = &call.sink else {
            return Direct::NotApplicable;
        };
        // What is buffered already, then the rest from the socket.
        let buffered = (have.len() - data_at).min(count);
        // SAFETY: we took this call from the in-flight table, so we are its
        // only owner until `complete` (see call.rs).
        unsafe { dest.fill(&have[data_at..data_at + buffered]) };
        let mut got = buffered;
        while got < count {
            // SAFETY: as above; the slice is dropped before `complete`.
            let tail = unsafe { dest.tail(got) };
            let want = count - got;
            match rx.receive(&mut tail[..want], want, 0, || usize::MAX) {
                Ok(0) => return self.direct_lost(ch, call, "server closed the connection"),
                Ok(n) => got += n,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
                    ) => {}
                Err(e) => return self.direct_lost(ch, call, &format!("receive failed: {e}")),
            }
        }
        self.account(ch, &call, true, count as u64);
        call.complete(Ok(Reply::Read {
            status: 0,
            count: ok.count,
            eof: ok.eof,
        }));
        let consumed = data_at + buffered;
        Direct::Done {
            consumed: consumed.min(have.len()),
            skip: (4 + len) - (data_at + count),
        }
    }

    /// The connection broke in the middle of a direct receive: the call is
    /// ours; the receive loop fails the channel, then re-sends it.
    fn direct_lost(&self, ch: &Channel, call: Arc<Call>, why: &str) -> Direct {
        ch.remove_load(&call);
        self.account_lost(ch, &call, self.now_ns());
        Direct::Failed(why.to_string(), call)
    }

    /// Closes the statistics of a reply and frees its load and slot.
    fn account(&self, ch: &Channel, call: &Call, ok: bool, bytes_read: u64) {
        ch.remove_load(call);
        let bytes_written = call.payload.as_ref().map_or(0, |p| p.len() as u64);
        let latency = self
            .now_ns()
            .saturating_sub(call.sent_ns.load(Ordering::Relaxed));
        ch.stats
            .on_complete(call.proc_, latency, bytes_read, bytes_written, ok);
        if self.room_waiters.load(Ordering::Acquire) > 0 {
            self.room.1.notify_all();
        }
    }

    fn handle_record(self: &Arc<Self>, ch: &Channel, epoch: u64, rec: &[u8]) {
        let mut r = XdrReader::new(rec);
        let header = ReplyHeader::decode(&mut r);
        let xid = match &header {
            Ok(h) => h.xid,
            // The XID is the first word even when the rest is garbage.
            Err(_) => match rec.get(..4) {
                Some(b) => u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
                None => return,
            },
        };
        let call = {
            let mut st = ch.lock();
            if st.epoch != epoch {
                return;
            }
            st.table.take(xid)
        };
        let Some(call) = call else {
            tracing::debug!(
                channel = ch.id,
                xid,
                "reply matches no call in flight; dropped"
            );
            return;
        };
        let ok = header.as_ref().is_ok_and(|h| h.is_success());
        let bytes_read = match (&call.sink, ok) {
            (Sink::Read(d), true) => d.len() as u64,
            _ => 0,
        };
        self.account(ch, &call, ok, bytes_read);
        let result = match header {
            Err(e) => Err(CallError::Decode(e)),
            Ok(h) => match h.body {
                ReplyBody::Accepted { stat, .. } => match stat {
                    AcceptedReply::Success => deliver(&call, r),
                    AcceptedReply::ProgMismatch { low, high } => {
                        Err(CallError::ProgMismatch { low, high })
                    }
                    AcceptedReply::Error(s) => Err(CallError::Accept(s)),
                },
                ReplyBody::Denied(RejectedReply::RpcMismatch { low, high }) => {
                    Err(CallError::RpcMismatch { low, high })
                }
                ReplyBody::Denied(RejectedReply::AuthError(s)) => Err(CallError::Auth(s)),
            },
        };
        call.complete(result);
    }

    /// Closes the statistics of an attempt that got no reply.
    fn account_lost(&self, ch: &Channel, call: &Call, now: u64) {
        let latency = now.saturating_sub(call.sent_ns.load(Ordering::Relaxed));
        ch.stats.on_complete(call.proc_, latency, 0, 0, false);
    }

    fn maintenance_loop(self: Arc<Self>) {
        let tick = (self.config.policy.timeo / 20)
            .clamp(Duration::from_millis(5), Duration::from_millis(100));
        let mut expired = Vec::new();
        let mut next_route_check = 0u64;
        while !self.shutdown.load(Ordering::Acquire) {
            {
                let g = self.tick.0.lock().unwrap_or_else(|p| p.into_inner());
                if self.shutdown.load(Ordering::Acquire) {
                    break;
                }
                let _ = self.tick.1.wait_timeout(g, tick);
            }
            let now = self.now_ns();
            if now >= next_route_check {
                next_route_check = now + ROUTE_CHECK_INTERVAL.as_nanos() as u64;
                self.check_routes();
            }
            for ch in &self.channels {
                // Timeouts: a call without a reply for `timeo` means the
                // connection (or path) is not delivering: fail the channel
                // so all its calls move elsewhere and it reconnects.
                let epoch = {
                    let mut st = ch.lock();
                    if st.health.is_up() {
                        st.table.take_expired(now, &mut expired);
                    }
                    st.epoch
                };
                if !expired.is_empty() {
                    // Fail the channel first so the retries go elsewhere.
                    let n = expired.len();
                    self.fail_channel(ch, epoch, &format!("{n} call(s) got no reply within timeo"));
                    for (_, call) in expired.drain(..) {
                        self.account_lost(ch, &call, now);
                        ch.stats.on_timeout();
                        self.retry_or_fail(call);
                    }
                }
                // Reconnect a dead channel when its backoff has passed.
                let due = ch.lock().health.start_reconnect_if_due(now).is_some();
                if due && !ch.reconnecting.swap(true, Ordering::AcqRel) {
                    let shared = Arc::clone(&self);
                    let ch = Arc::clone(ch);
                    let _ = std::thread::Builder::new()
                        .name(format!("dnfs-conn{}", ch.id))
                        .spawn(move || {
                            let _ = shared.connect_channel(&ch);
                            ch.reconnecting.store(false, Ordering::Release);
                        });
                }
            }
            self.expire_parked(now);
        }
    }

    /// Fails every channel of a path whose route is gone (see
    /// `socket::route_lost`): a cut path (interface down) is then left
    /// within ~0.1 s and its in-flight calls move to the other paths at
    /// once, instead of after `timeo`. Silent paths (black-holed, or a
    /// dead switch) still rely on `timeo`. The channels reconnect with
    /// backoff as after any failure; connects fail at once while the route
    /// is missing.
    fn check_routes(self: &Arc<Self>) {
        let mut checked: Vec<usize> = Vec::new();
        for first in &self.channels {
            if checked.contains(&first.path) {
                continue;
            }
            checked.push(first.path);
            let on_path = || self.channels.iter().filter(|c| c.path == first.path);
            if !on_path().any(|c| c.is_up()) {
                continue;
            }
            let Some(e) = super::socket::route_lost(&first.spec) else {
                continue;
            };
            for ch in on_path() {
                let epoch = ch.lock().epoch;
                self.fail_channel(
                    ch,
                    epoch,
                    &format!(
                        "no route to {} from {:?}: {e}",
                        ch.spec.remote, ch.spec.local
                    ),
                );
            }
        }
    }

    /// Soft mounts: parked calls fail once they have waited timeo x (retrans+1).
    fn expire_parked(self: &Arc<Self>, now: u64) {
        let Some(limit) = self.config.policy.soft_deadline() else {
            if self.channels.iter().any(|c| c.is_up()) {
                self.kick_parked();
            }
            return;
        };
        let limit = limit.as_nanos() as u64;
        let mut parked = self.parked.lock().unwrap_or_else(|p| p.into_inner());
        let (dead, live): (Vec<_>, Vec<_>) = parked
            .drain(..)
            .partition(|c| now.saturating_sub(c.submitted_ns) >= limit);
        *parked = live;
        drop(parked);
        for c in dead {
            let attempts = c.attempts();
            c.complete(Err(CallError::TimedOut { attempts }));
        }
        if self.channels.iter().any(|c| c.is_up()) {
            self.kick_parked();
        }
    }
}

fn candidate(ch: &Arc<Channel>) -> Candidate {
    Candidate {
        up: ch.is_up(),
        outstanding_bytes: ch.outstanding_bytes.load(Ordering::Relaxed),
        outstanding_requests: ch.outstanding_requests.load(Ordering::Relaxed),
    }
}

/// Hands a successful reply to its call: READ data into the caller's
/// buffer, anything else as the results' bytes.
fn deliver(call: &Call, mut r: XdrReader<'_>) -> Result<Reply, CallError> {
    match &call.sink {
        Sink::Record => Ok(Reply::Results(r.rest().to_vec())),
        Sink::Read(dest) => {
            let rr = directnfs_wire::nfs3::decode_read_reply(&mut r, dest.len() as u32)
                .map_err(CallError::Decode)?;
            let Some(ok) = rr.ok else {
                return Ok(Reply::Read {
                    status: rr.status.0,
                    count: 0,
                    eof: false,
                });
            };
            // SAFETY: we took this call from the in-flight table, so we are
            // its only owner until `complete` (see call.rs).
            unsafe { dest.fill(ok.data) };
            Ok(Reply::Read {
                status: 0,
                count: ok.data.len() as u32,
                eof: ok.eof,
            })
        }
    }
}
