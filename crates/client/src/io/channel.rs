//! One channel: a TCP connection to one server address over one path, its
//! in-flight table, and the state of receiving its replies.

use std::io::{self, IoSlice, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use directnfs_engine::health::Health;
use directnfs_engine::inflight::InflightTable;
use directnfs_engine::stats::IoStats;
use directnfs_wire::rpc::record::fragment_header;
use directnfs_wire::xdr::pad_len;

use super::call::Call;
use super::receive::RxState;
use super::socket::ConnectSpec;

/// Mutable state of a channel, behind one short-held lock.
#[derive(Debug)]
pub(crate) struct ChannelState {
    pub table: InflightTable<Arc<Call>>,
    pub health: Health,
    /// Bumped on every failure; a receive state or sender holding an older
    /// epoch belongs to a dead connection and must not touch the table.
    pub epoch: u64,
    /// A handle on the live connection, kept to shut it down on failure.
    pub sock: Option<TcpStream>,
}

/// A channel. See the module doc.
#[derive(Debug)]
pub(crate) struct Channel {
    pub id: usize,
    /// Index of the path this channel belongs to.
    pub path: usize,
    pub spec: ConnectSpec,
    pub state: Mutex<ChannelState>,
    /// The sending half and the epoch of its connection; the lock orders
    /// whole records on the stream. A call inserted under one epoch is
    /// never written to a later connection (it was re-sent elsewhere when
    /// its own failed: writing it again could replay a stale WRITE).
    pub writer: Mutex<Option<(TcpStream, u64)>>,
    /// The receiving half, driven by the transport's leader (`lead.rs`).
    /// Lock order: `rx` before `state`.
    pub rx: Mutex<Option<RxState>>,
    /// Lock-free copies of what the chooser reads.
    pub up: AtomicBool,
    pub outstanding_bytes: AtomicU64,
    pub outstanding_requests: AtomicU64,
    /// A reconnect thread is running.
    pub reconnecting: AtomicBool,
    /// Estimated bytes of the replies still to come (receive batching).
    pub expected_reply_bytes: AtomicU64,
    /// Counters and latency of this channel (paths and servers add them up).
    pub stats: IoStats,
}

impl Channel {
    pub(crate) fn new(id: usize, path: usize, spec: ConnectSpec, max_inflight: usize) -> Self {
        Self {
            id,
            path,
            spec,
            state: Mutex::new(ChannelState {
                table: InflightTable::new(max_inflight, (id as u32).wrapping_mul(0x9e37_79b9)),
                health: Health::Down {
                    failures: 0,
                    retry_at_ns: 0,
                },
                epoch: 0,
                sock: None,
            }),
            writer: Mutex::new(None),
            rx: Mutex::new(None),
            up: AtomicBool::new(false),
            outstanding_bytes: AtomicU64::new(0),
            outstanding_requests: AtomicU64::new(0),
            reconnecting: AtomicBool::new(false),
            expected_reply_bytes: AtomicU64::new(0),
            stats: IoStats::new(),
        }
    }

    /// Locks the state. A poisoned lock (a panic while holding it) still
    /// hands out the state: every update to it is a few field writes that
    /// leave it consistent.
    pub(crate) fn lock(&self) -> MutexGuard<'_, ChannelState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn is_up(&self) -> bool {
        self.up.load(Ordering::Relaxed)
    }

    pub(crate) fn add_load(&self, call: &Call) {
        self.outstanding_bytes
            .fetch_add(call.weight, Ordering::Relaxed);
        self.outstanding_requests.fetch_add(1, Ordering::Relaxed);
        self.expected_reply_bytes
            .fetch_add(call.reply_estimate(), Ordering::Relaxed);
    }

    pub(crate) fn remove_load(&self, call: &Call) {
        let estimate = call.reply_estimate();
        let _ = self
            .expected_reply_bytes
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                Some(v.saturating_sub(estimate))
            });
        let weight = call.weight;
        // Saturating: a reset after failure may already have zeroed these.
        let _ = self
            .outstanding_bytes
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                Some(v.saturating_sub(weight))
            });
        let _ = self
            .outstanding_requests
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                Some(v.saturating_sub(1))
            });
    }

    /// Writes one call as one record: `[mark, xid] body payload pad`, with
    /// a single vectored write in the common case (no copy of the payload).
    pub(crate) fn send(&self, xid: u32, call: &Call, epoch: u64) -> io::Result<()> {
        let payload: &[u8] = call.payload.as_deref().unwrap_or(&[]);
        let pad = [0u8; 3];
        let pad = &pad[..pad_len(payload.len())];
        let len = 4 + call.body.len() + payload.len() + pad.len();
        let mut head = [0u8; 8];
        head[..4].copy_from_slice(&fragment_header(len, true));
        head[4..].copy_from_slice(&xid.to_be_bytes());
        let mut writer = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let stream = writer
            .as_mut()
            .filter(|(_, e)| *e == epoch)
            .map(|(s, _)| s)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotConnected, "channel is down"))?;
        let mut slices = [
            IoSlice::new(&head),
            IoSlice::new(&call.body),
            IoSlice::new(payload),
            IoSlice::new(pad),
        ];
        write_all_vectored(stream, &mut slices)
    }

    /// Writes several calls with as few `writev`s as possible (one per
    /// [`SEND_CHUNK`] calls). One system call, one TCP segment and one
    /// wake-up of the server for a whole batch instead of one each: on
    /// loopback the sender also pays for delivering each segment to the
    /// server. Record marks and iovecs are built on the stack: nothing is
    /// allocated per batch.
    pub(crate) fn send_many(&self, calls: &[(u32, Arc<Call>)], epoch: u64) -> io::Result<()> {
        const PAD: [u8; 3] = [0; 3];
        let mut writer = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let stream = writer
            .as_mut()
            .filter(|(_, e)| *e == epoch)
            .map(|(s, _)| s)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotConnected, "channel is down"))?;
        let mut heads = [[0u8; 8]; SEND_CHUNK];
        for chunk in calls.chunks(SEND_CHUNK) {
            for ((xid, call), head) in chunk.iter().zip(heads.iter_mut()) {
                let payload = call.payload.as_deref().map_or(0, <[u8]>::len);
                let len = 4 + call.body.len() + payload + pad_len(payload);
                head[..4].copy_from_slice(&fragment_header(len, true));
                head[4..].copy_from_slice(&xid.to_be_bytes());
            }
            let mut slices = [IoSlice::new(&[]); SEND_CHUNK * 4];
            let mut n = 0;
            for ((_, call), head) in chunk.iter().zip(heads.iter()) {
                slices[n] = IoSlice::new(head);
                slices[n + 1] = IoSlice::new(&call.body);
                n += 2;
                if let Some(p) = call.payload.as_deref() {
                    slices[n] = IoSlice::new(p);
                    slices[n + 1] = IoSlice::new(&PAD[..pad_len(p.len())]);
                    n += 2;
                }
            }
            write_all_vectored(stream, &mut slices[..n])?;
        }
        Ok(())
    }

    /// Sends a NULL call on a fresh connection and waits for its reply:
    /// proof that the server answers on this path, not just that TCP connected.
    pub(crate) fn probe(
        stream: &mut TcpStream,
        cred: &[u8],
        prog: u32,
        vers: u32,
        timeout: std::time::Duration,
    ) -> io::Result<()> {
        super::oneshot::null_probe(stream, cred, prog, vers, timeout)
    }

    /// Shuts down the socket of a *failed* connection and makes its close
    /// abortive (SO_LINGER 0: RST, send queue discarded).
    ///
    /// Its in-flight calls are about to be re-sent on other channels. A
    /// plain close would leave the kernel retransmitting whatever the
    /// socket still holds (calls not yet acknowledged by the server's TCP)
    /// as an orphan, for minutes: once a cut or black-holed path comes back,
    /// an old WRITE would reach the server *after* its re-sent copy, and
    /// after newer writes to the same blocks, and silently overwrite them
    /// (found by the multipath tests: an acknowledged write lost after a
    /// cut). With linger 0 the final close (when the receive state and
    /// the writer drop their handles, milliseconds later) discards it all.
    pub(crate) fn abort_socket(state: &mut ChannelState) {
        if let Some(s) = &state.sock {
            let _ = socket2::SockRef::from(s).set_linger(Some(std::time::Duration::ZERO));
        }
        Self::shutdown_socket(state);
    }

    /// Shuts the socket down so both the receiver and any blocked sender wake.
    pub(crate) fn shutdown_socket(state: &mut ChannelState) {
        if let Some(s) = state.sock.take() {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

/// Calls per `writev` in `send_many` (at most 4 iovecs each, far below
/// the kernel's `IOV_MAX` of 1024).
const SEND_CHUNK: usize = 64;

/// `write_all` for vectored writes (std's is unstable).
fn write_all_vectored(stream: &mut TcpStream, mut slices: &mut [IoSlice<'_>]) -> io::Result<()> {
    IoSlice::advance_slices(&mut slices, 0);
    while !slices.is_empty() {
        match stream.write_vectored(slices) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut slices, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
