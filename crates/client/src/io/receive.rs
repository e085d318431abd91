//! Receiving the replies of one connection: a resumable state machine,
//! driven by whichever thread leads the transport at the moment (see
//! `lead.rs`). It never blocks: it takes what the socket holds, hands out
//! every complete reply, and says how many bytes are worth waiting for
//! next (`arm`, which sets `SO_RCVLOWAT` for the leader's `poll`).
//!
//! Wake-ups, not decoding, are what a reply costs, so the bytes waited for
//! are those expected soon — three quarters of what is outstanding on the
//! channel, at least one whole reply — and then everything queued is taken
//! in one `recv`. Bytes certain to come (the rest of a record already started)
//! are waited for without limit; the speculative part only briefly
//! ([`SPECULATIVE_WAIT`]), so a wrong guess (a short READ, an error
//! reply) costs at most that, and a lone reply never waits for anything
//! but itself.

use std::io;
use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use directnfs_wire::rpc::{RecordReader, ReplyHeader};
use directnfs_wire::{Decode, XdrReader};

use super::call::{Call, Reply, Sink};
use super::channel::Channel;
use super::transport::Shared;

/// Receive buffer of a channel: initial and largest size (room to take
/// many replies per wake-up).
const RX_BUFFER_START: usize = 256 * 1024;
const RX_BUFFER_MAX: usize = 4 << 20;
/// How long the leader waits for replies it only expects (not ones
/// already under way) before taking what has arrived. (500 µs was tried:
/// no better at 2 x 8 or 2 x 16 on this machine, within its noise.)
pub(crate) const SPECULATIVE_WAIT: std::time::Duration = std::time::Duration::from_millis(2);
/// Share of the outstanding replies the leader waits for before taking
/// them all in one receive: fewer wake-ups, `recv`s, `setsockopt`s and
/// `writev`s per I/O. Measured at 2 sessions x 64 random 8 KiB reads, waiting for
/// 1/2 gave 0.068 context switches and 3.5 µs of client CPU per I/O, 3/4
/// gave 0.050 and 3.1 µs, 9/10 0.041 and 2.9 µs, at the same IOPS (the
/// server is the bottleneck and keeps a backlog either way). 3/4 keeps a
/// quarter of the queue at the server while the leader works, and the
/// speculative wait stays bounded by [`SPECULATIVE_WAIT`].
const BATCH_NUM: usize = 3;
const BATCH_DEN: usize = 4;
/// READ replies at least this long are received straight into the
/// caller's buffer.
const DIRECT_MIN: usize = 64 * 1024;
/// Bytes of a large record read before deciding whether its data can be
/// received directly: the RPC reply header and the READ3resok head.
const DIRECT_HEAD: usize = 512;
/// Largest `SO_RCVLOWAT` set, and the share of the socket's receive
/// buffer it may take at most: a low-water mark the buffer cannot reach
/// would only be rescued by the speculative timeout. (`SO_RCVBUF` reads
/// back twice what the data may use; a quarter of it leaves room for the
/// kernel's per-packet overhead.)
const RCVLOWAT_MAX: usize = 512 * 1024;
const RCVLOWAT_BUFFER_SHARE: usize = 4;

/// A large READ reply whose data goes straight into the caller's buffer.
struct DirectRx {
    /// Taken from the in-flight table: ours until completed.
    call: Arc<Call>,
    got: usize,
    count: usize,
    eof: bool,
    /// Bytes of the record after the data (padding), to drop.
    after: usize,
}

/// Why a connection stopped delivering, and the call it was in the middle
/// of receiving directly (no longer in any table: the caller of `service`
/// must re-send it after failing the channel).
pub(crate) struct Lost {
    pub why: String,
    pub call: Option<Arc<Call>>,
}

/// The receive side of one live connection.
pub(crate) struct RxState {
    /// The channel epoch of this connection (a newer epoch owns the table).
    pub epoch: u64,
    stream: TcpStream,
    reader: RecordReader,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Bytes still to drop from the socket (what follows direct data).
    skip: usize,
    direct: Option<DirectRx>,
    lowat: usize,
    /// Largest low-water mark this socket's receive buffer allows.
    lowat_max: usize,
    /// Off after a speculative wait found nothing; on again after progress.
    speculate: bool,
    /// The armed wait includes a guess.
    speculative: bool,
}

impl std::fmt::Debug for RxState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RxState")
            .field("epoch", &self.epoch)
            .field("buffered", &(self.end - self.start))
            .field("skip", &self.skip)
            .field("direct", &self.direct.is_some())
            .finish()
    }
}

enum Recv {
    Data(usize),
    Empty,
}

impl RxState {
    pub(crate) fn new(stream: TcpStream, epoch: u64, max_record: usize) -> Self {
        let rcvbuf = socket2::SockRef::from(&stream)
            .recv_buffer_size()
            .unwrap_or(0);
        let lowat_max = (rcvbuf / RCVLOWAT_BUFFER_SHARE).clamp(16 * 1024, RCVLOWAT_MAX);
        Self {
            lowat_max,
            epoch,
            stream,
            reader: RecordReader::new(max_record),
            buf: vec![0; RX_BUFFER_START],
            start: 0,
            end: 0,
            skip: 0,
            direct: None,
            lowat: 1,
            speculate: true,
            speculative: false,
        }
    }

    pub(crate) fn fd(&self) -> RawFd {
        self.stream.as_raw_fd()
    }

    /// The last wait timed out: if it was a guess, stop guessing until
    /// data flows again.
    pub(crate) fn wait_timed_out(&mut self) {
        if self.speculative {
            self.speculate = false;
        }
    }

    /// Hands out every reply buffered, then (when `may_read`) reads what
    /// the socket holds and does it again, until the socket is empty.
    pub(crate) fn service(
        &mut self,
        sh: &Shared,
        ch: &Channel,
        mut may_read: bool,
    ) -> Result<(), Lost> {
        // Replies are timed when their bytes were taken from the socket.
        let mut now = sh.now_ns();
        loop {
            // A direct READ in progress: its data goes to the caller.
            if let Some(d) = &mut self.direct {
                if d.got >= d.count {
                    if let Some(d) = self.direct.take() {
                        sh.account_at(ch, &d.call, true, d.count as u64, now);
                        d.call.complete(Ok(Reply::Read {
                            status: 0,
                            count: d.count as u32,
                            eof: d.eof,
                        }));
                        self.skip = d.after;
                    }
                    continue;
                }
                if !may_read {
                    return Ok(());
                }
                let Sink::Read(dest) = &d.call.sink else {
                    return Err(self.lose_direct(sh, ch, "internal: direct call is not a READ"));
                };
                let want = d.count - d.got;
                // SAFETY: we took this call from the in-flight table, so we
                // are its only owner until `complete` (see call.rs); the
                // slice is dropped before then.
                let tail = unsafe { &mut dest.tail(d.got)[..want] };
                match recv_fd(self.stream.as_raw_fd(), tail) {
                    Ok(Recv::Data(0)) => {
                        return Err(self.lose_direct(sh, ch, "server closed the connection"))
                    }
                    Ok(Recv::Data(n)) => {
                        d.got += n;
                        self.speculate = true;
                        may_read = n == want;
                    }
                    Ok(Recv::Empty) => return Ok(()),
                    Err(e) => {
                        return Err(self.lose_direct(sh, ch, &format!("receive failed: {e}")))
                    }
                }
                continue;
            }
            // The rest of a directly received record: drop it.
            if self.skip > 0 {
                let n = self.skip.min(self.end - self.start);
                self.start += n;
                self.skip -= n;
                if self.skip > 0 {
                    (self.start, self.end) = (0, 0);
                    if !may_read {
                        return Ok(());
                    }
                    let len = self.skip.min(self.buf.len());
                    match recv_fd(self.fd(), &mut self.buf[..len]) {
                        Ok(Recv::Data(0)) => return Err(closed()),
                        Ok(Recv::Data(n)) => {
                            self.end = n;
                            may_read = n == len;
                        }
                        Ok(Recv::Empty) => return Ok(()),
                        Err(e) => return Err(failed(e)),
                    }
                }
                continue;
            }
            // A large READ reply not yet complete: receive its data straight
            // into the caller's buffer instead of through ours.
            if !self.reader.is_mid_record() {
                if let Some((d, consumed)) =
                    start_direct(sh, ch, self.epoch, &self.buf[self.start..self.end])
                {
                    self.start += consumed;
                    self.direct = Some(d);
                    continue;
                }
            }
            // Hand out the next complete record in the buffer.
            let step = self
                .reader
                .next(&self.buf[self.start..self.end])
                .map_err(|e| lost(e.to_string()))?;
            if step.consumed > 0 {
                if let Some(rec) = step.record {
                    sh.handle_record(ch, self.epoch, &rec, now);
                }
                self.start += step.consumed;
                continue;
            }
            if !may_read {
                return Ok(());
            }
            may_read = self.read_more(ch)?;
            now = sh.now_ns();
        }
    }

    /// Reads into the buffer (making room for the whole next fragment and
    /// for the replies expected). Returns whether the socket may hold more.
    fn read_more(&mut self, ch: &Channel) -> Result<bool, Lost> {
        let need = self
            .reader
            .bytes_needed(&self.buf[self.start..self.end])
            .map_err(|e| lost(e.to_string()))?;
        if self.start > 0 && (self.start == self.end || self.buf.len() - self.start < need) {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.buf.len() - self.start < need {
            self.buf.resize(self.start + need, 0);
        }
        let have = self.end - self.start;
        let guess = self.guess(ch).saturating_sub(have);
        if guess > self.buf.len() - self.end && self.buf.len() < RX_BUFFER_MAX {
            self.buf
                .resize((self.end + guess).min(RX_BUFFER_MAX).max(self.buf.len()), 0);
        }
        // A large record starting: take only its head, so a READ's data can
        // go straight to the caller. At a record boundary the size is not
        // known yet: expect a large one when the replies due are large.
        let boundary = !self.reader.is_mid_record() && have < DIRECT_HEAD;
        let large = need >= DIRECT_MIN || (have < 4 && average_reply(ch) >= DIRECT_MIN);
        let room = self.buf.len() - self.end;
        let len = if boundary && large {
            (DIRECT_HEAD - have).min(room)
        } else {
            room
        }
        .max(1);
        let fd = self.fd();
        match recv_fd(fd, &mut self.buf[self.end..self.end + len]) {
            Ok(Recv::Data(0)) => Err(closed()),
            Ok(Recv::Data(n)) => {
                self.end += n;
                self.speculate = true;
                Ok(n == len)
            }
            Ok(Recv::Empty) => Ok(false),
            Err(e) => Err(failed(e)),
        }
    }

    /// Bytes worth waiting for: the replies of [`BATCH_NUM`]/[`BATCH_DEN`]
    /// of the calls outstanding on the channel (at least one), at their
    /// average expected size.
    fn guess(&self, ch: &Channel) -> usize {
        if !self.speculate {
            return 0;
        }
        let expected = ch.expected_reply_bytes.load(Ordering::Relaxed) as usize;
        let n = ch.outstanding_requests.load(Ordering::Relaxed) as usize;
        // A lone reply arrives in one piece on any sane link: waiting for
        // its first bytes is as good, and spares two setsockopt per I/O.
        if n <= 1 {
            return 0;
        }
        let replies = (n * BATCH_NUM / BATCH_DEN).max(1);
        (expected / n).saturating_mul(replies).min(expected)
    }

    /// Sets `SO_RCVLOWAT` to the bytes worth waiting for next. Returns
    /// whether that includes a guess (the wait must then be short).
    pub(crate) fn arm(&mut self, ch: &Channel) -> io::Result<bool> {
        let idle = self.direct.is_none()
            && self.skip == 0
            && self.start == self.end
            && !self.reader.is_mid_record()
            && ch.outstanding_requests.load(Ordering::Relaxed) == 0;
        if idle {
            // Nothing due: polled only to notice a close, which wakes
            // `poll` whatever the mark. Leave it as it is.
            self.speculative = false;
            return Ok(false);
        }
        let (certain, guess) = if let Some(d) = &self.direct {
            (d.count - d.got, 0)
        } else if self.skip > 0 {
            (self.skip, 0)
        } else {
            let have = self.end - self.start;
            let need = self
                .reader
                .bytes_needed(&self.buf[self.start..self.end])
                .unwrap_or(1);
            let mut certain = need.saturating_sub(have).max(1);
            let mut guess = self.guess(ch).saturating_sub(have);
            if !self.reader.is_mid_record() && have < DIRECT_HEAD && need >= DIRECT_MIN {
                certain = certain.min(DIRECT_HEAD - have);
                guess = 0;
            }
            (certain, guess)
        };
        let certain = certain.min(self.lowat_max);
        let target = certain.max(guess).clamp(1, self.lowat_max);
        self.speculative = target > certain;
        if target != self.lowat {
            let v = target as libc::c_int;
            // SAFETY: fd is this connection's live socket; the option value
            // is a c_int that outlives the call, and its size is passed.
            let rc = unsafe {
                libc::setsockopt(
                    self.fd(),
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
        Ok(self.speculative)
    }

    /// The connection broke in the middle of a direct receive: the call is
    /// ours; whoever fails the channel re-sends it.
    fn lose_direct(&mut self, sh: &Shared, ch: &Channel, why: &str) -> Lost {
        let call = self.direct.take().map(|d| {
            ch.remove_load(&d.call);
            sh.account_lost(ch, &d.call, sh.now_ns());
            d.call
        });
        Lost {
            why: why.to_string(),
            call,
        }
    }
}

fn recv_fd(fd: RawFd, buf: &mut [u8]) -> io::Result<Recv> {
    loop {
        // SAFETY: the pointer and length describe `buf`, valid for writes.
        let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) };
        if n >= 0 {
            return Ok(Recv::Data(n as usize));
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::Interrupted => continue,
            io::ErrorKind::WouldBlock => return Ok(Recv::Empty),
            _ => return Err(e),
        }
    }
}

fn lost(why: String) -> Lost {
    Lost { why, call: None }
}

fn closed() -> Lost {
    lost("server closed the connection".into())
}

fn failed(e: io::Error) -> Lost {
    lost(format!("receive failed: {e}"))
}

/// Average size of the replies due on `ch`.
fn average_reply(ch: &Channel) -> usize {
    let n = ch.outstanding_requests.load(Ordering::Relaxed) as usize;
    let expected = ch.expected_reply_bytes.load(Ordering::Relaxed) as usize;
    expected.checked_div(n).unwrap_or(0)
}

/// Starts receiving a large READ reply's data straight into the caller's
/// buffer (one copy less per byte: what `scan` pays for). Applies to a
/// single-fragment record of at least [`DIRECT_MIN`] bytes, not yet
/// complete in `have`, answering a READ in flight on this channel, once
/// its header is in `have`. Returns the receive and the bytes of `have`
/// it consumed; anything else is left to the normal path.
fn start_direct(sh: &Shared, ch: &Channel, epoch: u64, have: &[u8]) -> Option<(DirectRx, usize)> {
    let h = have.get(..4)?;
    let mark = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
    let len = (mark & 0x7fff_ffff) as usize;
    let last = mark & 0x8000_0000 != 0;
    if !last || len < DIRECT_MIN || have.len() >= 4 + len || len > sh.config.max_record {
        return None;
    }
    let mut r = XdrReader::new(&have[4..]);
    let header = ReplyHeader::decode(&mut r).ok()?;
    if !header.is_success() {
        return None;
    }
    // Peek first: only a READ of ours whose head is complete qualifies.
    let max = {
        let st = ch.lock();
        if st.epoch != epoch {
            return None;
        }
        match st.table.get(header.xid).map(|c| &c.sink) {
            Some(Sink::Read(dest)) => dest.len() as u32,
            _ => return None,
        }
    };
    let ok = directnfs_wire::nfs3::decode_read_reply_head(&mut r, max)
        .ok()?
        .ok?;
    let data_at = 4 + r.position();
    let count = ok.count as usize;
    if data_at + count > 4 + len {
        return None;
    }
    let call = {
        let mut st = ch.lock();
        if st.epoch != epoch {
            return None;
        }
        st.table.take(header.xid)?
    };
    let Sink::Read(dest) = &call.sink else {
        // Unreachable (peeked above under the same epoch); complete it
        // rather than lose it.
        sh.account(ch, &call, false, 0);
        call.complete(Err(super::error::CallError::Internal(
            "direct READ lost its sink",
        )));
        return None;
    };
    // What is buffered already; the rest comes from the socket.
    let buffered = (have.len() - data_at).min(count);
    // SAFETY: we took this call from the in-flight table, so we are its
    // only owner until `complete` (see call.rs).
    unsafe { dest.fill(&have[data_at..data_at + buffered]) };
    let consumed = (data_at + buffered).min(have.len());
    Some((
        DirectRx {
            call,
            got: buffered,
            count,
            eof: ok.eof,
            after: (4 + len) - (data_at + count),
        },
        consumed,
    ))
}
