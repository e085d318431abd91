//! Receiving the replies of one connection: a resumable state machine,
//! driven by whichever thread leads the transport at the moment (see
//! `transport/leader.rs`). It never blocks: it takes what the socket
//! holds, hands out every complete reply, and says how many bytes are
//! worth waiting for next (`arm`, which sets `SO_RCVLOWAT` for the
//! leader's `poll`).
//!
//! It knows nothing of channels, the engine or statistics: everything goes
//! through [`Replies`], which the transport implements for one connection
//! (and the tests below with a socketpair). It hands out each complete
//! record; and where a successful READ reply's data has not arrived yet —
//! a reply of any size whose head is in and whose data is still in the
//! socket — it asks for the call ([`Replies::claim_read`]) and receives
//! the data straight into the caller's buffer.
//!
//! Where the data lands first is decided by the `recv` that takes it, and
//! which buffer a READ's data belongs in is only known from its reply's
//! XID. Replies that arrive together are therefore taken together into
//! the connection's buffer (one `recv` for dozens of replies) and their
//! data copied from there; only a record of at least [`DIRECT_MIN`] bytes
//! is read head first, so that all its data goes straight to the caller.
//! Reading every reply head first would save that copy for small READs
//! too, but costs a `recv` per reply and defeats the low-water-mark
//! batching: measured with 2 sessions x 64 random 8 KiB reads, 6.2 to
//! 13.8 µs of client CPU per I/O instead of 2.6 to 3.3 (system time 3 to
//! 7 times higher), against about 800 instructions of `memcpy` saved.
//!
//! Wake-ups, not decoding, are what a reply costs, so the bytes waited for
//! are those expected soon — three quarters of what is outstanding on the
//! connection, at least one whole reply — and then everything queued is
//! taken in one `recv`. Bytes certain to come (the rest of a record already
//! started) are waited for without limit; the speculative part only
//! briefly ([`SPECULATIVE_WAIT`]), so a wrong guess (a short READ, an error
//! reply) costs at most that, and a lone reply never waits for anything
//! but itself.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use directnfs_wire::nfs3::decode_read_reply_status;
use directnfs_wire::nfs4;
use directnfs_wire::rpc::{RecordReader, ReplyHeader};
use directnfs_wire::{Decode, XdrReader};

use super::call::Call;

/// Receive buffer of a connection: initial and largest size (room to take
/// many replies per wake-up). It starts small and grows to what the
/// replies due need (`read_more`): a process that makes a few calls and
/// exits (a new PostgreSQL backend) zeroes 16 KiB, not 256 KiB (64 page
/// faults and a quarter of a million instructions less).
const RX_BUFFER_START: usize = 16 * 1024;
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
/// Records at least this long are read head first, so that all of a
/// READ's data can be received straight into the caller's buffer (see the
/// module doc for why smaller ones are not).
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

/// What the receiver of one connection reports to, and asks of, the rest
/// of the driver.
pub(crate) trait Replies {
    /// A READ call taken from the in-flight table for its data to be
    /// received directly: owned by the receiver until handed back.
    type Claim: Claimed;

    /// Transport time in nanoseconds (a reply is timed when its bytes were
    /// taken from the socket).
    fn now(&self) -> u64;

    /// Replies due on this connection.
    fn due(&self) -> Due;

    /// A whole reply record arrived.
    fn record(&mut self, rec: &[u8], now: u64);

    /// The head of a successful READ reply with `xid` and `count` data
    /// bytes arrived, and its data is still to come: the call it answers,
    /// taken, if that is a READ in flight on this connection asking for at
    /// least `count` bytes. `None` leaves the record to [`record`](Self::record).
    /// `v4` says the head decoded as an NFSv4.1 READ COMPOUND's, and the
    /// call must be one ([`Sink::Read4`]); otherwise an NFSv3 READ's.
    fn claim_read(&mut self, xid: u32, count: u32, v4: bool, now: u64) -> Option<Self::Claim>;

    /// A claimed READ's `count` bytes are in its buffer: complete it. An
    /// NFSv4.1 READ also hands over `head`, its reply up to the data.
    fn read_done(
        &mut self,
        claim: Self::Claim,
        count: u32,
        eof: bool,
        head: Option<Vec<u8>>,
        now: u64,
    );
}

/// A claimed READ call.
pub(crate) trait Claimed {
    /// The call (its [`Sink::Read`] is where the data goes).
    fn call(&self) -> &Call;
}

/// Replies due on a connection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Due {
    /// How many.
    pub requests: usize,
    /// The bytes they are expected to take.
    pub bytes: usize,
}

impl Due {
    /// Average size of the replies due.
    fn average(&self) -> usize {
        self.bytes.checked_div(self.requests).unwrap_or(0)
    }
}

/// Why a connection stopped delivering, and the READ it was in the middle
/// of receiving directly (no longer in any table: whoever handles this
/// must give it back after failing the connection).
#[derive(Debug)]
pub(crate) struct Lost<C> {
    pub why: String,
    pub claim: Option<C>,
}

/// A READ reply whose data goes straight into the caller's buffer.
#[derive(Debug)]
struct DirectRx<C> {
    /// Taken from the in-flight table: ours until handed back.
    claim: C,
    got: usize,
    count: usize,
    eof: bool,
    /// Bytes of the record after the data (padding), to drop.
    after: usize,
    /// An NFSv4.1 READ's reply up to its data (from the procedure results).
    head: Option<Vec<u8>>,
}

/// The receive side of one live connection.
pub(crate) struct RxState<C> {
    /// The channel epoch of this connection (a newer epoch owns the table).
    pub epoch: u64,
    sock: OwnedFd,
    reader: RecordReader,
    max_record: usize,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Bytes still to drop from the socket (the rest of a record whose
    /// data went to a caller's buffer).
    skip: usize,
    direct: Option<DirectRx<C>>,
    /// SO_RCVLOWAT as last set.
    lowat: usize,
    /// The largest SO_RCVLOWAT this socket's buffer can satisfy.
    lowat_max: usize,
    /// Guess what is coming (off after a speculative wait found nothing;
    /// on again after progress).
    speculate: bool,
    /// The armed wait includes a guess.
    speculative: bool,
    /// Reply records received whole (handed out, or a READ's received
    /// directly): compared with the calls written, to hand a spare
    /// connection on only when every call was answered.
    records: u64,
}

impl<C> std::fmt::Debug for RxState<C> {
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

/// Sets `SO_RCVLOWAT` of `fd` to `bytes`.
fn set_lowat(fd: RawFd, bytes: usize) -> io::Result<()> {
    let v = bytes as libc::c_int;
    // SAFETY: `fd` is a live socket of the caller's; the option value is a
    // c_int that outlives the call, and its size is passed.
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
    Ok(())
}

impl<C: Claimed> RxState<C> {
    /// Receives on `sock` (a connected stream socket) for the connection
    /// of `epoch`; records longer than `max_record` break the connection.
    pub(crate) fn new(sock: impl Into<OwnedFd>, epoch: u64, max_record: usize) -> Self {
        let sock: OwnedFd = sock.into();
        let rcvbuf = socket2::SockRef::from(&sock)
            .recv_buffer_size()
            .unwrap_or(0);
        let lowat_max = (rcvbuf / RCVLOWAT_BUFFER_SHARE).clamp(16 * 1024, RCVLOWAT_MAX);
        Self {
            lowat_max,
            epoch,
            sock,
            reader: RecordReader::new(max_record),
            max_record,
            buf: vec![0; RX_BUFFER_START],
            start: 0,
            end: 0,
            skip: 0,
            direct: None,
            lowat: 1,
            speculate: true,
            speculative: false,
            records: 0,
        }
    }

    /// Reply records received whole on this connection.
    pub(crate) fn records(&self) -> u64 {
        self.records
    }

    /// Nothing buffered, half-read or to drop: the stream is at a record
    /// boundary with everything received handed out.
    pub(crate) fn is_idle(&self) -> bool {
        self.direct.is_none()
            && self.skip == 0
            && self.start == self.end
            && !self.reader.is_mid_record()
    }

    /// Sets `SO_RCVLOWAT` back to 1, what a new receive state assumes of
    /// its socket (a spare handed on to the next process).
    pub(crate) fn reset_lowat(&mut self) -> io::Result<()> {
        if self.lowat == 1 {
            return Ok(());
        }
        set_lowat(self.fd(), 1)?;
        self.lowat = 1;
        Ok(())
    }

    pub(crate) fn fd(&self) -> RawFd {
        self.sock.as_raw_fd()
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
    pub(crate) fn service<R: Replies<Claim = C>>(
        &mut self,
        to: &mut R,
        mut may_read: bool,
    ) -> Result<(), Lost<C>> {
        // Replies are timed when their bytes were taken from the socket.
        let mut now = to.now();
        loop {
            // A direct READ in progress: its data goes to the caller.
            if let Some(d) = &mut self.direct {
                if d.got >= d.count {
                    if let Some(d) = self.direct.take() {
                        self.skip = d.after;
                        self.records += 1;
                        to.read_done(d.claim, d.count as u32, d.eof, d.head, now);
                    }
                    continue;
                }
                if !may_read {
                    return Ok(());
                }
                let Some(dest) = d.claim.call().sink.read_dest() else {
                    return Err(self.lose_direct("internal: direct call is not a READ"));
                };
                let want = d.count - d.got;
                // SAFETY: the claim took this call from the in-flight
                // table, so we are its only owner until `read_done` (see
                // call.rs); the slice is dropped before then.
                let tail = unsafe { &mut dest.tail(d.got)[..want] };
                match recv_fd(self.sock.as_raw_fd(), tail) {
                    Ok(Recv::Data(0)) => {
                        return Err(self.lose_direct("server closed the connection"))
                    }
                    Ok(Recv::Data(n)) => {
                        d.got += n;
                        self.speculate = true;
                        may_read = n == want;
                    }
                    Ok(Recv::Empty) => return Ok(()),
                    Err(e) => return Err(self.lose_direct(&format!("receive failed: {e}"))),
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
            // A READ reply not yet complete: receive its data straight into
            // the caller's buffer instead of through ours.
            if !self.reader.is_mid_record() {
                if let Some((d, consumed)) = self.start_direct(to, now)? {
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
                    self.records += 1;
                    to.record(&rec, now);
                }
                self.start += step.consumed;
                continue;
            }
            if !may_read {
                return Ok(());
            }
            may_read = self.read_more(to.due())?;
            now = to.now();
        }
    }

    /// Reads into the buffer (making room for the whole next fragment and
    /// for the replies expected). Returns whether the socket may hold more.
    fn read_more(&mut self, due: Due) -> Result<bool, Lost<C>> {
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
        let guess = self.guess(due).saturating_sub(have);
        if guess > self.buf.len() - self.end && self.buf.len() < RX_BUFFER_MAX {
            self.buf
                .resize((self.end + guess).min(RX_BUFFER_MAX).max(self.buf.len()), 0);
        }
        // A large record starting: take only its head, so a READ's data can
        // go straight to the caller. At a record boundary the size is not
        // known yet: expect a large one when the replies due are large.
        let boundary = !self.reader.is_mid_record() && have < DIRECT_HEAD;
        let large = need >= DIRECT_MIN || (have < 4 && due.average() >= DIRECT_MIN);
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
    /// of the calls outstanding on the connection (at least one), at their
    /// average expected size.
    fn guess(&self, due: Due) -> usize {
        if !self.speculate {
            return 0;
        }
        // A lone reply arrives in one piece on any sane link: waiting for
        // its first bytes is as good, and spares two setsockopt per I/O.
        if due.requests <= 1 {
            return 0;
        }
        let replies = (due.requests * BATCH_NUM / BATCH_DEN).max(1);
        due.average().saturating_mul(replies).min(due.bytes)
    }

    /// Sets `SO_RCVLOWAT` to the bytes worth waiting for next. Returns
    /// whether that includes a guess (the wait must then be short).
    pub(crate) fn arm(&mut self, due: Due) -> io::Result<bool> {
        let idle = self.direct.is_none()
            && self.skip == 0
            && self.start == self.end
            && !self.reader.is_mid_record()
            && due.requests == 0;
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
            let mut guess = self.guess(due).saturating_sub(have);
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
            set_lowat(self.fd(), target)?;
            self.lowat = target;
        }
        Ok(self.speculative)
    }

    /// Starts receiving a READ reply's data straight into the caller's
    /// buffer (one copy less per byte). Applies to a single-fragment record
    /// of any size not yet complete in the buffer whose head (RPC header
    /// and READ3resok up to the data) is, answering a READ in flight on
    /// this connection.
    /// Returns the receive and the bytes of the buffer it consumed, or
    /// `None`: anything else is left to the normal path.
    #[allow(clippy::type_complexity)]
    fn start_direct<R: Replies<Claim = C>>(
        &mut self,
        to: &mut R,
        now: u64,
    ) -> Result<Option<(DirectRx<C>, usize)>, Lost<C>> {
        let have = &self.buf[self.start..self.end];
        let Some((xid, head)) = direct_head(have, self.max_record) else {
            return Ok(None);
        };
        let v4 = head.results.is_some();
        let Some(claim) = to.claim_read(xid, head.count as u32, v4, now) else {
            return Ok(None);
        };
        let Some(dest) = claim.call().sink.read_dest() else {
            // The claim promised a READ: a broken invariant. Hand the call
            // back with the connection's failure (it is re-sent).
            return Err(Lost {
                why: "internal: a claimed call is not a READ".into(),
                claim: Some(claim),
            });
        };
        let DirectHead {
            data_at,
            count,
            eof,
            after,
            results,
        } = head;
        let head = results.map(|at| have[at..data_at].to_vec());
        // What is buffered already; the rest comes from the socket.
        let buffered = (have.len() - data_at).min(count);
        // SAFETY: the claim took this call from the in-flight table, so we
        // are its only owner until `read_done` (see call.rs).
        unsafe { dest.fill(&have[data_at..data_at + buffered]) };
        let consumed = (data_at + buffered).min(have.len());
        Ok(Some((
            DirectRx {
                claim,
                got: buffered,
                count,
                eof,
                after,
                head,
            },
            consumed,
        )))
    }

    /// The connection broke in the middle of a direct receive: the call is
    /// handed back with the loss (whoever fails the connection re-issues it).
    fn lose_direct(&mut self, why: &str) -> Lost<C> {
        Lost {
            why: why.to_string(),
            claim: self.direct.take().map(|d| d.claim),
        }
    }
}

/// Where a READ reply's data lies in its record.
struct DirectHead {
    /// Offset of the data in the buffer (record mark included).
    data_at: usize,
    count: usize,
    eof: bool,
    /// Bytes of the record after the data (padding).
    after: usize,
    /// For an NFSv4.1 READ COMPOUND: where its procedure results start in
    /// the buffer (its head, `results..data_at`, goes to the session layer).
    results: Option<usize>,
}

/// The XID and data layout of a successful READ reply that starts `have`
/// (a single-fragment record within `max_record`, of any size, not
/// complete in `have`, its head complete), or `None`: an NFSv3 READ's, or
/// an NFSv4.1 READ COMPOUND's (SEQUENCE, PUTFH, READ). Neither shape
/// decodes as the other (an NFSv3 reply's attributes are no COMPOUND
/// header with SEQUENCE first; a COMPOUND's result count is no valid
/// `eof`), and the claim checks the call is of the protocol decoded.
fn direct_head(have: &[u8], max_record: usize) -> Option<(u32, DirectHead)> {
    let h = have.get(..4)?;
    let mark = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
    let len = (mark & 0x7fff_ffff) as usize;
    let last = mark & 0x8000_0000 != 0;
    if !last || have.len() >= 4 + len || len > max_record {
        return None;
    }
    let mut r = XdrReader::new(&have[4..]);
    let header = ReplyHeader::decode(&mut r).ok()?;
    if !header.is_success() {
        return None;
    }
    // The count is checked against the caller's buffer by the claim.
    let results_at = 4 + r.position();
    let (count, eof, data_at, results) = match decode_read_reply_status(&mut r, u32::MAX) {
        Ok((_, Some(ok))) => (ok.count, ok.eof, 4 + r.position(), None),
        _ => {
            let mut r = XdrReader::new(&have[results_at..]);
            let ok = nfs4::decode_read_reply_head(&mut r, u32::MAX).ok()?.ok?;
            (
                ok.count,
                ok.eof,
                results_at + r.position(),
                Some(results_at),
            )
        }
    };
    let count = count as usize;
    let end = data_at.checked_add(count)?;
    if end > 4 + len {
        return None;
    }
    Some((
        header.xid,
        DirectHead {
            data_at,
            count,
            eof,
            after: 4 + len - end,
            results,
        },
    ))
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

fn lost<C>(why: String) -> Lost<C> {
    Lost { why, claim: None }
}

fn closed<C>() -> Lost<C> {
    lost("server closed the connection".into())
}

fn failed<C>(e: io::Error) -> Lost<C> {
    lost(format!("receive failed: {e}"))
}

/// The receiver alone, over a socketpair: what a server's bytes turn into.
#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::io::Write;
    use std::os::unix::net::UnixStream;
    use std::sync::Arc;

    use directnfs_wire::rpc::record::fragment_header;

    use super::*;
    use crate::io::call::{Group, Notify, ReadDest, Sink};

    const MAX_RECORD: usize = (1 << 20) + 65536;

    /// A claimed call, for the tests.
    #[derive(Debug)]
    struct Claim(Arc<Call>);

    impl Claimed for Claim {
        fn call(&self) -> &Call {
            &self.0
        }
    }

    /// Records what the receiver reports; READ calls it may claim by XID.
    #[derive(Default)]
    struct Sink_ {
        records: Vec<Vec<u8>>,
        reads: HashMap<u32, Arc<Call>>,
        done: Vec<(u32, u32, bool)>,
        /// The head handed over with each NFSv4.1 READ done.
        heads: Vec<Vec<u8>>,
        due: Due,
    }

    impl Replies for Sink_ {
        type Claim = Claim;
        fn now(&self) -> u64 {
            0
        }
        fn due(&self) -> Due {
            self.due
        }
        fn record(&mut self, rec: &[u8], _now: u64) {
            self.records.push(rec.to_vec());
        }
        fn claim_read(&mut self, xid: u32, count: u32, v4: bool, _now: u64) -> Option<Claim> {
            let call = self.reads.get(&xid)?;
            match (&call.sink, v4) {
                (Sink::Read(d), false) | (Sink::Read4(d), true) if d.len() >= count as usize => {}
                _ => return None,
            }
            self.reads.remove(&xid).map(Claim)
        }
        fn read_done(
            &mut self,
            claim: Claim,
            count: u32,
            eof: bool,
            head: Option<Vec<u8>>,
            _now: u64,
        ) {
            let xid = claim.0.proc_;
            self.done.push((xid, count, eof));
            self.heads.extend(head);
        }
    }

    /// A READ call writing into `buf`, remembered under `xid` (its `proc_`
    /// is set to the XID so `read_done` can say which one finished).
    fn read_call(to: &mut Sink_, xid: u32, buf: &mut [u8]) {
        // SAFETY: each test keeps `buf` alive and untouched until the
        // receiver reported the read done (or lost).
        let dest = unsafe { ReadDest::new(buf) };
        add_call(to, xid, Sink::Read(dest));
    }

    /// The same for an NFSv4.1 READ COMPOUND.
    fn read4_call(to: &mut Sink_, xid: u32, buf: &mut [u8]) {
        // SAFETY: as in `read_call`.
        let dest = unsafe { ReadDest::new(buf) };
        add_call(to, xid, Sink::Read4(dest));
    }

    fn add_call(to: &mut Sink_, xid: u32, sink: Sink) {
        let call = Call::new(xid, Vec::new(), None, 0, sink, Notify::Group(Group::new(1)));
        to.reads.insert(xid, call);
    }

    /// An accepted reply record (without mark) to a `SEQUENCE, PUTFH,
    /// READ` COMPOUND carrying `data`, and the length of its head (the
    /// procedure results up to the data).
    fn read4_reply(xid: u32, data: &[u8]) -> (Vec<u8>, std::ops::Range<usize>) {
        use directnfs_wire::xdr::XdrWrite;
        let mut rec = crate::testing::success_header(xid);
        let results = rec.len();
        rec.put_u32(0); // NFS4_OK
        rec.put_u32(0); // empty tag
        rec.put_u32(3); // three results
        rec.put_u32(53); // SEQUENCE
        rec.put_u32(0);
        rec.extend_from_slice(&[7; 16]); // session id
        for v in [1u32, 0, 63, 63, 0] {
            // sequence id, slot, highest slot, target highest, flags
            rec.put_u32(v);
        }
        rec.put_u32(22); // PUTFH
        rec.put_u32(0);
        rec.put_u32(25); // READ
        rec.put_u32(0);
        rec.put_u32(0); // eof false
        rec.put_u32(data.len() as u32);
        let head = results..rec.len();
        rec.extend_from_slice(data);
        rec.resize(rec.len() + (4 - data.len() % 4) % 4, 0);
        (rec, head)
    }

    /// An accepted READ reply record (without mark) carrying `data`.
    fn read_reply(xid: u32, data: &[u8]) -> Vec<u8> {
        crate::testing::read_reply(xid, data, false)
    }

    fn marked(rec: &[u8]) -> Vec<u8> {
        let mut out = fragment_header(rec.len(), true).to_vec();
        out.extend_from_slice(rec);
        out
    }

    fn pair() -> (RxState<Claim>, UnixStream) {
        let (a, b) = UnixStream::pair().expect("socketpair");
        (RxState::new(a, 1, MAX_RECORD), b)
    }

    #[test]
    fn a_record_in_several_fragments_is_handed_out_whole() {
        let (mut rx, mut server) = pair();
        let rec = read_reply(7, &[0x5a; 1000]);
        let mut to = Sink_::default();
        // Three fragments, written (and serviced) one at a time.
        let cuts = [0, 100, 600, rec.len()];
        for (i, w) in cuts.windows(2).enumerate() {
            let last = i == 2;
            server
                .write_all(&fragment_header(w[1] - w[0], last))
                .and_then(|()| server.write_all(&rec[w[0]..w[1]]))
                .expect("write");
            rx.service(&mut to, true).expect("service");
            assert_eq!(to.records.len(), usize::from(last), "after fragment {i}");
        }
        assert_eq!(to.records[0], rec);
    }

    #[test]
    fn many_replies_are_handed_out_from_one_receive() {
        let (mut rx, mut server) = pair();
        // 40 replies of 2 KiB: what fits in the socketpair's buffer.
        let mut bytes = Vec::new();
        for xid in 0..40u32 {
            bytes.extend(marked(&read_reply(xid, &[xid as u8; 2048])));
        }
        server.write_all(&bytes).expect("write");
        let mut to = Sink_::default();
        rx.service(&mut to, true).expect("service");
        assert_eq!(to.records.len(), 40, "all handed out by one service call");
        for (xid, rec) in to.records.iter().enumerate() {
            assert_eq!(rec, &read_reply(xid as u32, &[xid as u8; 2048]));
        }
    }

    #[test]
    fn a_large_read_reply_is_received_straight_into_the_callers_buffer() {
        let (mut rx, mut server) = pair();
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let rec = marked(&read_reply(42, &data));
        let mut buf = vec![0u8; data.len()];
        let mut to = Sink_::default();
        read_call(&mut to, 42, &mut buf);
        // The head and a little data first: the call is claimed.
        server.write_all(&rec[..300]).expect("write");
        rx.service(&mut to, true).expect("service");
        assert!(to.reads.is_empty(), "claimed once its head arrived");
        assert!(
            to.records.is_empty(),
            "no record handed out: the data goes direct"
        );
        // The rest in pieces.
        for chunk in rec[300..].chunks(70_000) {
            server.write_all(chunk).expect("write");
            rx.service(&mut to, true).expect("service");
        }
        assert_eq!(to.done, vec![(42, data.len() as u32, false)]);
        assert!(buf == data, "the data is in the caller's buffer");
        assert!(to.records.is_empty());
    }

    #[test]
    fn an_8k_read_reply_whose_data_is_still_to_come_goes_straight_to_the_buffer() {
        let (mut rx, mut server) = pair();
        let data: Vec<u8> = (0..8192u32).map(|i| (i % 253) as u8).collect();
        let rec = marked(&read_reply(5, &data));
        let mut buf = vec![0u8; 8192];
        let mut to = Sink_::default();
        read_call(&mut to, 5, &mut buf);
        // A whole reply before it, then this one's head and 1000 bytes.
        let first = marked(&read_reply(4, &[4; 8192]));
        let mut bytes = first.clone();
        bytes.extend_from_slice(&rec[..1200]);
        server.write_all(&bytes).expect("write");
        rx.service(&mut to, true).expect("service");
        assert_eq!(
            to.records,
            vec![first[4..].to_vec()],
            "the complete one is handed out"
        );
        assert!(to.reads.is_empty(), "the incomplete READ was claimed");
        server.write_all(&rec[1200..]).expect("write");
        rx.service(&mut to, true).expect("service");
        assert_eq!(to.done, vec![(5, 8192, false)]);
        assert!(buf == data);
        assert_eq!(
            to.records.len(),
            1,
            "its record never went through the buffer"
        );
    }

    #[test]
    fn a_large_nfsv41_read_reply_is_received_straight_into_the_callers_buffer() {
        let (mut rx, mut server) = pair();
        let data: Vec<u8> = (0..300_001u32).map(|i| (i % 249) as u8).collect();
        let (rec, head) = read4_reply(43, &data);
        let rec = marked(&rec);
        let mut buf = vec![0u8; data.len()];
        let mut to = Sink_::default();
        read4_call(&mut to, 43, &mut buf);
        server.write_all(&rec[..300]).expect("write");
        rx.service(&mut to, true).expect("service");
        assert!(to.reads.is_empty(), "claimed once its head arrived");
        for chunk in rec[300..].chunks(70_000) {
            server.write_all(chunk).expect("write");
            rx.service(&mut to, true).expect("service");
        }
        assert_eq!(to.done, vec![(43, data.len() as u32, false)]);
        assert!(buf == data, "the data is in the caller's buffer");
        assert!(to.records.is_empty(), "no record handed out");
        assert_eq!(
            to.heads,
            vec![rec[4 + head.start..4 + head.end].to_vec()],
            "the head up to the data goes to the session layer"
        );
        // The padding after the odd count was dropped: the next reply is
        // handed out whole.
        let next = marked(&read_reply(44, &[1; 10]));
        server.write_all(&next).expect("write");
        rx.service(&mut to, true).expect("service");
        assert_eq!(to.records, vec![next[4..].to_vec()]);
    }

    #[test]
    fn a_read_reply_of_the_other_protocol_is_not_claimed() {
        let (mut rx, mut server) = pair();
        let data = vec![9u8; 100_000];
        let mut to = Sink_::default();
        // An NFSv4.1 reply to an NFSv3 READ call, and the reverse.
        let mut buf3 = vec![0u8; data.len()];
        let mut buf4 = vec![0u8; data.len()];
        read_call(&mut to, 50, &mut buf3);
        read4_call(&mut to, 51, &mut buf4);
        let v4 = marked(&read4_reply(50, &data).0);
        let v3 = marked(&read_reply(51, &data));
        server.write_all(&v4).expect("write");
        server.write_all(&v3).expect("write");
        while to.records.len() < 2 {
            rx.service(&mut to, true).expect("service");
        }
        assert_eq!(to.reads.len(), 2, "neither call was claimed");
        assert!(to.done.is_empty());
        assert_eq!(to.records, vec![v4[4..].to_vec(), v3[4..].to_vec()]);
        assert!(buf3.iter().chain(&buf4).all(|&b| b == 0), "nothing written");
    }

    #[test]
    fn a_connection_closed_mid_record_is_lost_and_a_claimed_read_comes_back() {
        // Mid-record, nothing claimed.
        let (mut rx, mut server) = pair();
        let rec = marked(&read_reply(1, &[1; 1000]));
        server.write_all(&rec[..rec.len() / 2]).expect("write");
        drop(server);
        let mut to = Sink_::default();
        // The first receive takes the half record; the next one (the
        // leader's poll says readable) sees the close.
        rx.service(&mut to, true).expect("the bytes that came");
        let lost = rx
            .service(&mut to, true)
            .expect_err("the connection is lost");
        assert!(lost.claim.is_none());
        assert!(lost.why.contains("closed"), "{}", lost.why);
        assert!(to.records.is_empty());
        // Mid direct receive: the claimed call is handed back.
        let (mut rx, mut server) = pair();
        let rec = marked(&read_reply(9, &[9; 100_000]));
        let mut buf = vec![0u8; 100_000];
        let mut to = Sink_::default();
        read_call(&mut to, 9, &mut buf);
        server.write_all(&rec[..50_000]).expect("write");
        rx.service(&mut to, true).expect("service");
        drop(server);
        let lost = rx
            .service(&mut to, true)
            .expect_err("the connection is lost");
        let claim = lost.claim.expect("the claimed READ comes back");
        assert_eq!(claim.0.proc_, 9);
        assert!(to.done.is_empty(), "never reported done");
    }
}
