//! One channel: a TCP connection to one server address over one path —
//! its sending half, its receiving half (driven by the leader, see
//! `transport/leader.rs`), and a handle to close it. Which requests it
//! carries, and when it is up, is the engine's business; a channel only
//! moves bytes, for the connection of one epoch at a time.

use std::borrow::Borrow;
use std::io::{self, IoSlice};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use directnfs_engine::stats::IoStats;
use directnfs_engine::{Delivered, LoadGauge};
use directnfs_wire::rpc::record::fragment_header;
use directnfs_wire::xdr::pad_len;

use crate::security::ConnectionSealer;

use super::call::Call;
use super::hook::ConnectHook;
use super::receive::{Claimed, RxState};
use super::socket::{send_all, send_all_vectored, ConnectSpec};

/// A READ reply the receiver took for a direct receive: the engine handed
/// its call over with the reply ([`Delivered`]), and gets it back with
/// `on_receive_lost` if the connection breaks first.
pub(crate) type ReadClaim = Delivered<Arc<Call>>;

impl Claimed for ReadClaim {
    fn call(&self) -> &Call {
        Delivered::<Arc<Call>>::call(self)
    }
}

/// A channel. See the module doc.
#[derive(Debug)]
pub(crate) struct Channel {
    pub id: usize,
    /// Index of the path this channel belongs to.
    pub path: usize,
    pub spec: ConnectSpec,
    /// Counters and latency of this channel (paths and servers add them
    /// up); shared with the engine, which counts what it decides.
    pub stats: Arc<IoStats>,
    /// The engine's published load of this channel (the receiver's
    /// batching reads it without the engine's lock).
    pub gauge: Arc<LoadGauge>,
    /// The sending half and the epoch of its connection; the lock orders
    /// whole records on the stream. A call put in the engine's table under
    /// one epoch is never written to a later connection (it was re-sent
    /// elsewhere when its own failed: writing it again could replay a
    /// stale WRITE).
    /// The third field is the generation of the protocol hook's binding
    /// the connection carries (`hook.rs`; 0: none).
    writer: Mutex<Option<(TcpStream, u64, u64)>>,
    /// The receiving half, driven by the transport's leader.
    pub rx: Mutex<Option<RxState<ReadClaim>>>,
    /// A handle on the live connection, to close it on failure without
    /// waiting for a sender blocked in `writev`.
    conn: Mutex<Option<(TcpStream, u64)>>,
    /// A connection attempt is running.
    pub connecting: AtomicBool,
    /// Calls written on the current connection (a spare is handed on only
    /// when every one was answered: `transport/spares.rs`).
    pub sent: AtomicU64,
    /// The RPCSEC_GSS context of the connection of an epoch (a Kerberos
    /// mount: `security/sealer.rs`); `None` for AUTH_SYS.
    gss: Mutex<Option<(u64, Arc<ConnectionSealer>)>>,
    /// Its path's log lane (`directnfs_engine::class`): a thread waiting
    /// for a log call receives it itself (`transport/leader.rs`).
    pub lane: bool,
}

impl Channel {
    pub(crate) fn new(
        id: usize,
        path: usize,
        spec: ConnectSpec,
        stats: Arc<IoStats>,
        gauge: Arc<LoadGauge>,
    ) -> Self {
        Self {
            id,
            path,
            spec,
            stats,
            gauge,
            writer: Mutex::new(None),
            rx: Mutex::new(None),
            conn: Mutex::new(None),
            connecting: AtomicBool::new(false),
            sent: AtomicU64::new(0),
            gss: Mutex::new(None),
            lane: false,
        }
    }

    /// Takes a fresh connection (connected and probed) as the one of
    /// `epoch`: its halves replace whatever was left of the previous one.
    /// `sealer`: the connection's RPCSEC_GSS context (every call written
    /// on it is sealed, every reply opened), `None` for AUTH_SYS.
    pub(crate) fn install(
        &self,
        stream: TcpStream,
        (epoch, bound): (u64, u64),
        max_record: usize,
        sealer: Option<Arc<ConnectionSealer>>,
    ) -> io::Result<()> {
        let reader = crate::fdfloor::made(|| stream.try_clone())?;
        let writer = crate::fdfloor::made(|| stream.try_clone())?;
        *lock(&self.gss) = sealer.map(|s| (epoch, s));
        *lock(&self.rx) = Some(RxState::new(reader, epoch, max_record));
        let mut w = lock(&self.writer);
        self.sent.store(0, Ordering::Relaxed);
        *w = Some((writer, epoch, bound));
        drop(w);
        *lock(&self.conn) = Some((stream, epoch));
        Ok(())
    }

    /// Writes several calls with as few `writev`s as possible (one per
    /// [`SEND_CHUNK`] calls). One system call, one TCP segment and one
    /// wake-up of the server for a whole batch instead of one each: on
    /// loopback the sender also pays for delivering each segment to the
    /// server. Record marks and iovecs are built on the stack: nothing is
    /// allocated per batch.
    ///
    /// With a `hook` (NFSv4.1), a connection not bound to the hook's
    /// current generation first gets the hook's binding record, under the
    /// same lock: nothing else is written on it before (RFC 8881 §2.10.3.1).
    /// The check is one atomic load per batch.
    pub(crate) fn send_many<C: Borrow<Call>>(
        &self,
        calls: &[(u32, C)],
        epoch: u64,
        hook: Option<&dyn ConnectHook>,
    ) -> io::Result<()> {
        const PAD: [u8; 3] = [0; 3];
        let mut writer = lock(&self.writer);
        let (stream, bound) = writer
            .as_mut()
            .filter(|(_, e, _)| *e == epoch)
            .map(|(s, _, b)| (s, b))
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotConnected, "channel is down"))?;
        let sealer = self.sealer(epoch);
        if sealer.as_ref().is_some_and(|s| s.renewal_due()) {
            // The ticket behind this context ends soon: a new connection
            // and context take these calls (the engine re-sends them).
            return Err(io::Error::other(
                "the Kerberos context expires soon: a new connection and context",
            ));
        }
        if let Some(hook) = hook {
            let generation = hook.generation();
            if generation != *bound {
                if let Some(record) = hook.bind_record(self.id, generation) {
                    match &sealer {
                        Some(sealer) => send_all(stream, &seal_record(sealer, &record)?)?,
                        None => send_all(stream, &record)?,
                    }
                }
                *bound = generation;
            }
        }
        if let Some(sealer) = sealer {
            return self.send_sealed(stream, calls, &sealer);
        }
        let mut heads = [[0u8; 8]; SEND_CHUNK];
        for chunk in calls.chunks(SEND_CHUNK) {
            for ((xid, call), head) in chunk.iter().zip(heads.iter_mut()) {
                let call: &Call = call.borrow();
                let payload = call.payload.as_deref().map_or(0, <[u8]>::len);
                let len = 4 + call.body.len() + payload + pad_len(payload);
                head[..4].copy_from_slice(&fragment_header(len, true));
                head[4..].copy_from_slice(&xid.to_be_bytes());
            }
            let mut slices = [IoSlice::new(&[]); SEND_CHUNK * 4];
            let mut n = 0;
            for ((_, call), head) in chunk.iter().zip(heads.iter()) {
                let call: &Call = call.borrow();
                slices[n] = IoSlice::new(head);
                slices[n + 1] = IoSlice::new(&call.body);
                n += 2;
                if let Some(p) = call.payload.as_deref() {
                    slices[n] = IoSlice::new(p);
                    slices[n + 1] = IoSlice::new(&PAD[..pad_len(p.len())]);
                    n += 2;
                }
            }
            send_all_vectored(stream, &mut slices[..n])?;
            for (_, call) in chunk {
                call.borrow().mark_written();
            }
            self.sent.fetch_add(chunk.len() as u64, Ordering::Relaxed);
        }
        Ok(())
    }

    /// The RPCSEC_GSS context of the channel's last connection, whatever
    /// its epoch: what a new connection's context replaces.
    pub(crate) fn last_sealer(&self) -> Option<Arc<ConnectionSealer>> {
        lock(&self.gss).as_ref().map(|(_, s)| Arc::clone(s))
    }

    /// The RPCSEC_GSS context of the connection of `epoch`, if it has one.
    pub(crate) fn sealer(&self, epoch: u64) -> Option<Arc<ConnectionSealer>> {
        lock(&self.gss)
            .as_ref()
            .filter(|(e, _)| *e == epoch)
            .map(|(_, s)| Arc::clone(s))
    }

    /// `send_many` on a connection with an RPCSEC_GSS context: each call is
    /// sealed now, under the writer's lock, so the server sees sequence
    /// numbers in the order they were drawn and a re-sent call gets a new
    /// one (RFC 2203 §5.3.3.1); one `writev` per [`SEND_CHUNK`] calls, as
    /// `send_many`'s. A call that cannot be sealed fails the connection
    /// (its calls are re-sent on another).
    fn send_sealed<C: Borrow<Call>>(
        &self,
        stream: &mut TcpStream,
        calls: &[(u32, C)],
        sealer: &ConnectionSealer,
    ) -> io::Result<()> {
        let mut sealed = Vec::with_capacity(calls.len().min(SEND_CHUNK));
        for chunk in calls.chunks(SEND_CHUNK) {
            sealed.clear();
            for (xid, call) in chunk {
                let call: &Call = call.borrow();
                let message = sealer
                    .seal(*xid, &call.body, call.payload.as_deref())
                    .map_err(|e| io::Error::new(io::ErrorKind::PermissionDenied, e.to_string()))?;
                sealed.push((fragment_header(message.len(), true), message));
            }
            let mut slices: Vec<IoSlice<'_>> = sealed
                .iter()
                .flat_map(|(head, message)| [IoSlice::new(head), IoSlice::new(message)])
                .collect();
            send_all_vectored(stream, &mut slices)?;
            for (_, call) in chunk {
                call.borrow().mark_written();
            }
            self.sent.fetch_add(chunk.len() as u64, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Closes the connection of `epoch` (if it is still this channel's)
    /// abortively: SO_LINGER 0, so the close sends RST and discards the
    /// send queue.
    ///
    /// Its in-flight calls are being re-sent on other channels. A plain
    /// close would leave the kernel retransmitting whatever the socket still
    /// holds (calls not yet acknowledged by the server's TCP) as an orphan,
    /// for minutes: once a cut or black-holed path comes back, an old WRITE
    /// would reach the server *after* its re-sent copy, and after newer
    /// writes to the same blocks, and silently overwrite them (found by the
    /// multipath tests: an acknowledged write lost after a cut). With linger
    /// 0 the final close (when the receiver drops its handle, milliseconds
    /// later) discards it all.
    pub(crate) fn close(&self, epoch: u64) {
        {
            let mut conn = lock(&self.conn);
            if conn.as_ref().is_some_and(|(_, e)| *e == epoch) {
                if let Some((s, _)) = conn.take() {
                    let _ = socket2::SockRef::from(&s).set_linger(Some(std::time::Duration::ZERO));
                    let _ = s.shutdown(Shutdown::Both);
                }
            }
        }
        let mut writer = lock(&self.writer);
        if writer.as_ref().is_some_and(|(_, e, _)| *e == epoch) {
            *writer = None;
        }
    }

    /// Lets go of the connection of `epoch` without closing the socket for
    /// the other processes that hold it (a spare connection handed on to
    /// the next process: `transport/spares.rs`) if it is clean: every call
    /// written on it answered, nothing buffered or half-received, nothing
    /// in the socket, `SO_RCVLOWAT` back to 1. Only this process's
    /// descriptors close. Returns whether it did; a connection in use
    /// (another thread sending or receiving) is not clean.
    pub(crate) fn hand_on(&self, epoch: u64) -> bool {
        let (Ok(mut rx), Ok(mut writer), Ok(mut conn)) = (
            self.rx.try_lock(),
            self.writer.try_lock(),
            self.conn.try_lock(),
        ) else {
            return false;
        };
        let sent = self.sent.load(Ordering::Relaxed);
        let clean = rx
            .as_ref()
            .is_some_and(|r| r.epoch == epoch && r.is_idle() && r.records() == sent)
            && writer.as_ref().is_some_and(|(_, e, _)| *e == epoch)
            && conn
                .as_ref()
                .is_some_and(|(s, e)| *e == epoch && super::socket::nothing_to_read(s));
        if !clean || rx.as_mut().is_some_and(|r| r.reset_lowat().is_err()) {
            return false;
        }
        *rx = None;
        *writer = None;
        *conn = None;
        true
    }

    /// Sends a NULL call on a fresh connection and waits for its reply:
    /// proof that the server answers on this path, not just that TCP
    /// connected.
    pub(crate) fn probe(
        stream: &mut TcpStream,
        cred: &[u8],
        prog: u32,
        vers: u32,
        timeout: std::time::Duration,
    ) -> io::Result<()> {
        super::oneshot::null_probe(stream, cred, prog, vers, timeout)
    }

    /// Shuts the connection down (the transport is stopping) so the
    /// receiver and any blocked sender wake.
    pub(crate) fn shut_down(&self) {
        if let Some((s, _)) = lock(&self.conn).take() {
            let _ = s.shutdown(Shutdown::Both);
        }
        *lock(&self.writer) = None;
    }
}

/// Locks a channel's mutex. A poisoned lock (a panic while holding it)
/// still hands out its value: every update to one is a single assignment.
impl Channel {
    /// The connection's socket buffer sizes as the kernel reports them now
    /// (send, receive); zeros while there is no connection.
    pub(crate) fn buffer_sizes(&self) -> (u64, u64) {
        lock(&self.conn)
            .as_ref()
            .map_or((0, 0), |(s, _)| super::socket::buffer_sizes(s))
    }
}

/// Locks `m`; a poisoned lock (a panic while holding it) still hands out
/// its value: every update of the state it guards is one assignment.
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Calls per `writev` in `send_many` (at most 4 iovecs each, far below
/// the kernel's `IOV_MAX` of 1024).
const SEND_CHUNK: usize = 64;

/// A whole record (mark, XID, AUTH_SYS call: a hook's binding record)
/// sealed with the connection's RPCSEC_GSS context: mark, XID, sealed
/// call.
fn seal_record(sealer: &ConnectionSealer, record: &[u8]) -> io::Result<Vec<u8>> {
    let (Some(xid), Some(body)) = (record.get(4..8), record.get(8..)) else {
        return Err(io::Error::other("internal: a record too short to seal"));
    };
    let xid = u32::from_be_bytes([xid[0], xid[1], xid[2], xid[3]]);
    let message = sealer
        .seal(xid, body, None)
        .map_err(|e| io::Error::new(io::ErrorKind::PermissionDenied, e.to_string()))?;
    let mut out = Vec::with_capacity(4 + message.len());
    out.extend_from_slice(&fragment_header(message.len(), true));
    out.extend_from_slice(&message);
    Ok(out)
}
