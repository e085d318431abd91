//! A fault-injecting RPC proxy for NFSv3 over TCP: it sits on one network
//! path between a client and a real server, forwards every call and reply
//! unchanged, and, when told to, answers a share of the READ, WRITE and
//! COMMIT calls with `NFS3ERR_JUKEBOX` itself, or the next calls of one
//! procedure with a status of the test's choosing
//! ([`FaultProxy::fail_next_v3`]).
//!
//! Why a proxy: NFS-Ganesha cannot be told to answer JUKEBOX ("try again
//! later", RFC 1813 §2.6), yet a client must retry it, on a hard mount for
//! as long as it takes. The proxy answers *instead of* forwarding, so the
//! server never executed the call and a retry by the client is exactly
//! right: the proxy never makes a correct client see a contradiction
//! (what a server would do with a JUKEBOX after executing the call is the
//! server's bug, not the client's).
//!
//! What else it mirrors: each client connection gets its own connection
//! to the server, made when the client connects. When the server side
//! closes, fails or cannot be reached, the client side is closed too;
//! when the server side is silent (a black-holed path), so is the proxy.
//! An established connection across a path that goes down stays open on
//! both sides, as a kernel keeps it across a short link-down, so a client
//! sees a *cut* of the proxy's path as silence, not as a reset.
//!
//! Records are split with [`RecordReader`] and calls decoded with
//! [`CallHeader`]: a multi-fragment call is forwarded as one fragment, and
//! a stream that is not record-marked RPC closes the connection.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use directnfs_wire::nfs3::{
    nfsstat3, COMMIT3res, COMMIT3resfail, READ3res, READ3resfail, WRITE3res, WRITE3resfail,
    NFSPROC3_COMMIT, NFSPROC3_CREATE, NFSPROC3_MKDIR, NFSPROC3_READ, NFSPROC3_REMOVE,
    NFSPROC3_RMDIR, NFSPROC3_SYMLINK, NFSPROC3_WRITE, NFS_PROGRAM, NFS_V3,
};
use directnfs_wire::rpc::record::fragment_header;
use directnfs_wire::rpc::ReplyHeader;
use directnfs_wire::rpc::{AcceptedReply, CallHeader, OpaqueAuth, RecordReader, ReplyBody};
use directnfs_wire::{Decode, Encode, XdrReader};
use socket2::SockRef;

use crate::rng::{mix, GAMMA};

/// Largest record the proxy passes on: a 1 MiB READ reply or WRITE call
/// plus headers, with room to spare.
pub const MAX_RECORD: usize = (1 << 20) + 4096;

/// Where the proxy listens and where it forwards to.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// Address to listen on (port 0 picks a free one).
    pub listen: SocketAddr,
    /// The server's address.
    pub upstream: SocketAddr,
    /// Bound on connecting to the server; past it the client's connection
    /// is closed, as the server's refusal would close it.
    pub connect_timeout: Duration,
    /// Seed of the generator that picks which calls get JUKEBOX.
    pub seed: u64,
}

/// What the proxy did so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProxyCounts {
    /// Client connections accepted.
    pub connections: u64,
    /// Of those, closed because the server could not be reached.
    pub upstream_failures: u64,
    /// Calls forwarded to the server.
    pub forwarded: u64,
    /// READ calls answered with NFS3ERR_JUKEBOX by the proxy.
    pub jukebox_read: u64,
    /// WRITE calls answered with NFS3ERR_JUKEBOX by the proxy.
    pub jukebox_write: u64,
    /// COMMIT calls answered with NFS3ERR_JUKEBOX by the proxy.
    pub jukebox_commit: u64,
    /// NFSv4.1 COMPOUNDs answered NFS4ERR_DELAY (from their SEQUENCE) by
    /// the proxy.
    pub delay_v41: u64,
    /// Replies swallowed by [`FaultProxy::lose_reply`] (each one's
    /// connection closed).
    pub lost_replies: u64,
    /// NFSv4.1 COMPOUNDs answered with the status of
    /// [`FaultProxy::fail_sequence_v41`].
    pub failed_sequences_v41: u64,
    /// NFSv3 calls answered with the status of [`FaultProxy::fail_next_v3`].
    pub failed_v3: u64,
}

impl ProxyCounts {
    /// Every call answered with NFS3ERR_JUKEBOX.
    pub fn jukebox(&self) -> u64 {
        self.jukebox_read + self.jukebox_write + self.jukebox_commit
    }
}

/// A running proxy; stopped (every connection closed) when dropped.
#[derive(Debug)]
pub struct FaultProxy {
    shared: Arc<Shared>,
    addr: SocketAddr,
    accept: Option<JoinHandle<()>>,
}

#[derive(Debug)]
struct Shared {
    config: ProxyConfig,
    stop: AtomicBool,
    /// Share of READ/WRITE/COMMIT calls answered JUKEBOX, per mille.
    jukebox_per_mille: AtomicU32,
    rng: AtomicU64,
    connections: AtomicU64,
    upstream_failures: AtomicU64,
    forwarded: AtomicU64,
    jukebox_read: AtomicU64,
    jukebox_write: AtomicU64,
    jukebox_commit: AtomicU64,
    delay_v41: AtomicU64,
    /// The status to fail SEQUENCEs with, how many more, how many so far.
    sequence_status: AtomicU32,
    sequence_failures: AtomicU32,
    failed_sequences_v41: AtomicU64,
    /// The NFSv3 procedure to fail, its status, how many more, how many so far.
    fail_proc_v3: AtomicU32,
    fail_status_v3: AtomicU32,
    fail_count_v3: AtomicU32,
    failed_v3: AtomicU64,
    /// Replies to pass before swallowing, still to swallow, swallowed.
    pass_replies: AtomicU32,
    lose_replies: AtomicU32,
    lost_replies: AtomicU64,
    /// Microseconds each call is held before it goes to the server.
    call_delay_us: AtomicU64,
    /// The `so_major_id` put in every NFSv4.1 EXCHANGE_ID reply, if any.
    server_owner_v41: Mutex<Option<Vec<u8>>>,
    /// Both sockets of every live connection, to close them on drop.
    live: Mutex<HashMap<u64, [TcpStream; 2]>>,
}

impl FaultProxy {
    /// Binds `config.listen` and starts accepting.
    pub fn start(config: ProxyConfig) -> io::Result<Self> {
        let listener = TcpListener::bind(config.listen)?;
        // Non-blocking, polled: the accept loop sees `stop` within a tick.
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            rng: AtomicU64::new(config.seed),
            config,
            stop: AtomicBool::new(false),
            jukebox_per_mille: AtomicU32::new(0),
            connections: AtomicU64::new(0),
            upstream_failures: AtomicU64::new(0),
            forwarded: AtomicU64::new(0),
            jukebox_read: AtomicU64::new(0),
            jukebox_write: AtomicU64::new(0),
            jukebox_commit: AtomicU64::new(0),
            delay_v41: AtomicU64::new(0),
            sequence_status: AtomicU32::new(0),
            sequence_failures: AtomicU32::new(0),
            failed_sequences_v41: AtomicU64::new(0),
            fail_proc_v3: AtomicU32::new(0),
            fail_status_v3: AtomicU32::new(0),
            fail_count_v3: AtomicU32::new(0),
            failed_v3: AtomicU64::new(0),
            pass_replies: AtomicU32::new(0),
            lose_replies: AtomicU32::new(0),
            lost_replies: AtomicU64::new(0),
            call_delay_us: AtomicU64::new(0),
            server_owner_v41: Mutex::new(None),
            live: Mutex::new(HashMap::new()),
        });
        let accept = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("fault-proxy".into())
                .spawn(move || accept_loop(&shared, &listener))?
        };
        Ok(Self {
            shared,
            addr,
            accept: Some(accept),
        })
    }

    /// The address clients connect to.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Holds every call forwarded from now on for `delay` before it goes
    /// to the server (each from when the proxy read it: calls in a row are
    /// each late by `delay`, not by its multiples), making this a slow
    /// path. `Duration::ZERO`: forward at once.
    pub fn set_call_delay(&self, delay: Duration) {
        let us = u64::try_from(delay.as_micros()).unwrap_or(u64::MAX);
        self.shared.call_delay_us.store(us, Ordering::Relaxed);
    }

    /// Answers `per_mille` out of 1000 READ, WRITE and COMMIT calls with
    /// NFS3ERR_JUKEBOX from now on (0: forward everything; capped at 1000),
    /// and as many NFSv4.1 COMPOUNDs with NFS4ERR_DELAY from SEQUENCE (the
    /// same number, 10008: "try again later", RFC 8881 §15.1.1.3).
    pub fn set_jukebox(&self, per_mille: u32) {
        self.shared
            .jukebox_per_mille
            .store(per_mille.min(1000), Ordering::Relaxed);
    }

    /// Answers the next `count` NFSv4.1 COMPOUNDs that start with
    /// SEQUENCE with that SEQUENCE failing with `status` (an `nfsstat4`:
    /// NFS4ERR_DEADSESSION, NFS4ERR_EXPIRED, ...), without forwarding
    /// them: the session errors a server sends when it lost the session
    /// or the client, while the real server still knows both.
    pub fn fail_sequence_v41(&self, status: u32, count: u32) {
        self.shared.sequence_status.store(status, Ordering::Relaxed);
        self.shared
            .sequence_failures
            .store(count, Ordering::Relaxed);
    }

    /// Answers the next `count` NFSv3 calls of procedure `proc_` with
    /// `status`, without forwarding them: the server never executed them.
    /// For the procedures whose failure reply is one `wcc_data` of the
    /// directory (CREATE, MKDIR, SYMLINK, REMOVE, RMDIR; sent with no
    /// attributes): NFS-Ganesha was seen to answer a SYMLINK racing a
    /// REMOVE of the same name with NFS3ERR_NOENT.
    pub fn fail_next_v3(&self, proc_: u32, status: nfsstat3, count: u32) {
        assert!(
            [
                NFSPROC3_CREATE,
                NFSPROC3_MKDIR,
                NFSPROC3_SYMLINK,
                NFSPROC3_REMOVE,
                NFSPROC3_RMDIR
            ]
            .contains(&proc_),
            "fail_next_v3: procedure {proc_} has another failure reply"
        );
        let s = &self.shared;
        s.fail_proc_v3.store(proc_, Ordering::Relaxed);
        s.fail_status_v3.store(status.0, Ordering::Relaxed);
        s.fail_count_v3.store(count, Ordering::Relaxed);
    }

    /// Passes `skip` more replies the server sends, then swallows the next
    /// one, on whichever connection, and closes that connection: the
    /// server executed the call and the client never hears of it — the
    /// lost reply a client must re-send into the server's reply cache
    /// (NFSv4.1) or guess about (NFSv3).
    pub fn lose_reply(&self, skip: u32) {
        self.shared.pass_replies.store(skip, Ordering::Relaxed);
        self.shared.lose_replies.fetch_add(1, Ordering::Relaxed);
    }

    /// Puts `major` as `eir_server_owner.so_major_id` into every NFSv4.1
    /// EXCHANGE_ID reply the server sends from now on (`None`: forward
    /// them unchanged): the path seems to lead to another server.
    pub fn set_server_owner_v41(&self, major: Option<&[u8]>) {
        *self
            .shared
            .server_owner_v41
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = major.map(<[u8]>::to_vec);
    }

    /// The counters so far.
    pub fn counts(&self) -> ProxyCounts {
        let s = &self.shared;
        ProxyCounts {
            connections: s.connections.load(Ordering::Relaxed),
            upstream_failures: s.upstream_failures.load(Ordering::Relaxed),
            forwarded: s.forwarded.load(Ordering::Relaxed),
            jukebox_read: s.jukebox_read.load(Ordering::Relaxed),
            jukebox_write: s.jukebox_write.load(Ordering::Relaxed),
            jukebox_commit: s.jukebox_commit.load(Ordering::Relaxed),
            lost_replies: s.lost_replies.load(Ordering::Relaxed),
            delay_v41: s.delay_v41.load(Ordering::Relaxed),
            failed_sequences_v41: s.failed_sequences_v41.load(Ordering::Relaxed),
            failed_v3: s.failed_v3.load(Ordering::Relaxed),
        }
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
        for [client, server] in self.shared.live().drain().map(|(_, s)| s) {
            let _ = client.shutdown(Shutdown::Both);
            let _ = server.shutdown(Shutdown::Both);
        }
    }
}

impl Shared {
    fn live(&self) -> MutexGuard<'_, HashMap<u64, [TcpStream; 2]>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// splitmix64 over a shared state: one draw per call decided, from
    /// whichever connection's thread.
    fn draw(&self) -> u64 {
        mix(self
            .rng
            .fetch_add(GAMMA, Ordering::Relaxed)
            .wrapping_add(GAMMA))
    }

    /// The framed JUKEBOX reply to `record`, if this call is to get one
    /// (`args`: the call's arguments).
    fn jukebox_reply(&self, call: &CallHeader, args: &[u8]) -> Option<Vec<u8>> {
        if call.prog == NFS_PROGRAM && call.vers == 4 && call.proc_ == 1 {
            if first_op_v4(args) == Some(OP_SEQUENCE) && take_one(&self.sequence_failures) {
                self.failed_sequences_v41.fetch_add(1, Ordering::Relaxed);
                let status = self.sequence_status.load(Ordering::Relaxed);
                return Some(sequence_reply_v41(call.xid, status));
            }
            let per_mille = u64::from(self.jukebox_per_mille.load(Ordering::Relaxed));
            if per_mille == 0 || self.draw() % 1000 >= per_mille {
                return None;
            }
            self.delay_v41.fetch_add(1, Ordering::Relaxed);
            return Some(delay_reply_v41(call.xid));
        }
        if call.prog != NFS_PROGRAM || call.vers != NFS_V3 {
            return None;
        }
        if call.proc_ == self.fail_proc_v3.load(Ordering::Relaxed) && take_one(&self.fail_count_v3)
        {
            self.failed_v3.fetch_add(1, Ordering::Relaxed);
            let status = self.fail_status_v3.load(Ordering::Relaxed);
            return Some(dir_wcc_failure_reply(call.xid, status));
        }
        let counter = match call.proc_ {
            NFSPROC3_READ => &self.jukebox_read,
            NFSPROC3_WRITE => &self.jukebox_write,
            NFSPROC3_COMMIT => &self.jukebox_commit,
            _ => return None,
        };
        let per_mille = u64::from(self.jukebox_per_mille.load(Ordering::Relaxed));
        if per_mille == 0 || self.draw() % 1000 >= per_mille {
            return None;
        }
        counter.fetch_add(1, Ordering::Relaxed);
        Some(jukebox_reply(call.xid, call.proc_))
    }
}

/// A whole record-marked reply to call `xid` of NFSv3 procedure `proc_`
/// (READ, WRITE or COMMIT): accepted, SUCCESS at the RPC level, status
/// NFS3ERR_JUKEBOX with no attributes (RFC 1813 §3.3.6, §3.3.7, §3.3.21:
/// the resfail arms carry only optional attributes).
pub fn jukebox_reply(xid: u32, proc_: u32) -> Vec<u8> {
    let mut body = accepted(xid);
    let status = nfsstat3::NFS3ERR_JUKEBOX;
    match proc_ {
        NFSPROC3_READ => READ3res::Fail(status, READ3resfail::default()).encode(&mut body),
        NFSPROC3_WRITE => WRITE3res::Fail(status, WRITE3resfail::default()).encode(&mut body),
        _ => COMMIT3res::Fail(status, COMMIT3resfail::default()).encode(&mut body),
    }
    let mut out = fragment_header(body.len(), true).to_vec();
    out.extend_from_slice(&body);
    out
}

/// A whole record-marked reply to NFSv3 call `xid`: accepted, SUCCESS at
/// the RPC level, `status`, and a `wcc_data` with neither attribute (the
/// failure reply of CREATE, MKDIR, SYMLINK, REMOVE and RMDIR, RFC 1813).
pub fn dir_wcc_failure_reply(xid: u32, status: u32) -> Vec<u8> {
    let mut body = accepted(xid);
    for word in [status, 0, 0] {
        body.extend_from_slice(&word.to_be_bytes());
    }
    let mut out = fragment_header(body.len(), true).to_vec();
    out.extend_from_slice(&body);
    out
}

/// A whole record-marked reply to NFSv4.1 COMPOUND call `xid` whose
/// SEQUENCE failed with NFS4ERR_DELAY.
pub fn delay_reply_v41(xid: u32) -> Vec<u8> {
    const NFS4ERR_DELAY: u32 = 10008;
    sequence_reply_v41(xid, NFS4ERR_DELAY)
}

/// OP_SEQUENCE (RFC 8881 §16.2.2).
const OP_SEQUENCE: u32 = 53;

/// The first operation of a COMPOUND's arguments (tag, minor version,
/// operation count, then the first operation's number), if there is one.
fn first_op_v4(args: &[u8]) -> Option<u32> {
    let mut r = XdrReader::new(args);
    r.opaque(1024, "tag").ok()?;
    r.u32("minorversion").ok()?;
    if r.u32("argarray length").ok()? == 0 {
        return None;
    }
    r.u32("opnum").ok()
}

/// A whole record-marked reply to NFSv4.1 COMPOUND call `xid` whose
/// SEQUENCE failed with `status` (RFC 8881 §16.2.2: status, empty tag,
/// one result: OP_SEQUENCE and its status).
pub fn sequence_reply_v41(xid: u32, status: u32) -> Vec<u8> {
    let mut body = accepted(xid);
    for word in [status, 0, 1, OP_SEQUENCE, status] {
        body.extend_from_slice(&word.to_be_bytes());
    }
    let mut out = fragment_header(body.len(), true).to_vec();
    out.extend_from_slice(&body);
    out
}

/// The RPC header of an accepted, successful reply to `xid`.
fn accepted(xid: u32) -> Vec<u8> {
    let mut body = Vec::with_capacity(48);
    ReplyHeader {
        xid,
        body: ReplyBody::Accepted {
            verf: OpaqueAuth::default(),
            stat: AcceptedReply::Success,
        },
    }
    .encode(&mut body);
    body
}

fn accept_loop(shared: &Arc<Shared>, listener: &TcpListener) {
    let mut next_id = 0u64;
    while !shared.stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((client, _)) => {
                next_id += 1;
                shared.connections.fetch_add(1, Ordering::Relaxed);
                let shared = Arc::clone(shared);
                let id = next_id;
                // A connection that cannot get its threads is dropped,
                // which the client sees as a reset: it reconnects.
                let _ = std::thread::Builder::new()
                    .name("fault-proxy-conn".into())
                    .spawn(move || connection(&shared, id, client));
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// One client connection: connect to the server, then pump calls one way
/// and replies the other until either side ends; then close both.
///
/// Three threads: this one reads calls from the client (never blocked by a
/// server that stopped reading, so it notices at once when the client gives
/// up the connection), one writes them to the server, one passes replies
/// back. The server side is closed with a reset and linger 0, as a client
/// resets a connection it gives up: calls still queued for a cut or
/// black-holed path are dropped, not delivered once the path is back
/// (after the client re-sent them elsewhere and wrote newer data since).
fn connection(shared: &Arc<Shared>, id: u64, client: TcpStream) {
    let upstream = shared.config.upstream;
    let server = match TcpStream::connect_timeout(&upstream, shared.config.connect_timeout) {
        Ok(s) => s,
        Err(_) => {
            shared.upstream_failures.fetch_add(1, Ordering::Relaxed);
            let _ = client.shutdown(Shutdown::Both);
            return;
        }
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let _ = SockRef::from(&server).set_linger(Some(Duration::ZERO));
    let Ok(handles) = Handles::of(&client, &server) else {
        let _ = client.shutdown(Shutdown::Both);
        return;
    };
    if shared.stop.load(Ordering::Relaxed) {
        return;
    }
    shared
        .live()
        .insert(id, [handles.client_keep, handles.server_keep]);
    let client_w = Arc::new(Mutex::new(handles.client_w));
    let (to_server, queued) = mpsc::channel::<(Instant, Vec<u8>)>();
    let writer = {
        let mut server_w = handles.server_w;
        std::thread::Builder::new()
            .name("fault-proxy-calls".into())
            .spawn(move || {
                for (due, chunk) in queued {
                    let wait = due.saturating_duration_since(Instant::now());
                    if !wait.is_zero() {
                        std::thread::sleep(wait);
                    }
                    if server_w.write_all(&chunk).is_err() {
                        break;
                    }
                }
                let _ = server_w.shutdown(Shutdown::Both);
            })
    };
    let replies = {
        let client_w = Arc::clone(&client_w);
        let server_r = handles.server_r;
        let shared = Arc::clone(shared);
        std::thread::Builder::new()
            .name("fault-proxy-replies".into())
            .spawn(move || pump_replies(&shared, server_r, &client_w))
    };
    pump_calls(shared, client, to_server, &client_w);
    // Either side is gone: close both; the last handle of the server side
    // dropped below sends the reset.
    let _ = server.shutdown(Shutdown::Both);
    if let Ok(writer) = writer {
        let _ = writer.join();
    }
    if let Ok(replies) = replies {
        let _ = replies.join();
    }
    shared.live().remove(&id);
}

/// The other handles of a connection's two sockets.
struct Handles {
    /// The client side, written by the reply pump and for JUKEBOX replies.
    client_w: TcpStream,
    /// The server side, read by the reply pump.
    server_r: TcpStream,
    /// The server side, written by the call writer.
    server_w: TcpStream,
    /// Both kept to close the connection from [`FaultProxy`]'s drop.
    client_keep: TcpStream,
    server_keep: TcpStream,
}

impl Handles {
    fn of(client: &TcpStream, server: &TcpStream) -> io::Result<Self> {
        Ok(Self {
            client_w: client.try_clone()?,
            server_r: server.try_clone()?,
            server_w: server.try_clone()?,
            client_keep: client.try_clone()?,
            server_keep: server.try_clone()?,
        })
    }
}

fn lock(w: &Mutex<TcpStream>) -> MutexGuard<'_, TcpStream> {
    w.lock().unwrap_or_else(|p| p.into_inner())
}

/// Calls from the client: each is queued for the server, or answered
/// JUKEBOX here. Returns when the client ends, fails or sends something
/// that is not an RPC call, or the server side is gone.
fn pump_calls(
    shared: &Shared,
    mut client: TcpStream,
    to_server: mpsc::Sender<(Instant, Vec<u8>)>,
    client_w: &Mutex<TcpStream>,
) {
    let mut forward = Vec::new();
    let mut to_client = Vec::new();
    let _ = for_each_record(&mut client, |event| match event {
        Event::Record(record) => {
            let mut r = XdrReader::new(record);
            let call = CallHeader::decode(&mut r)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
            match shared.jukebox_reply(&call, r.rest()) {
                Some(reply) => to_client.extend_from_slice(&reply),
                None => {
                    shared.forwarded.fetch_add(1, Ordering::Relaxed);
                    forward.extend_from_slice(&fragment_header(record.len(), true));
                    forward.extend_from_slice(record);
                }
            }
            Ok(())
        }
        // After each read: pass on what it produced (the JUKEBOX replies
        // need no ordering against the forwarded calls).
        Event::ReadDone => {
            if !forward.is_empty() {
                let delay = shared.call_delay_us.load(Ordering::Relaxed);
                let due = Instant::now() + Duration::from_micros(delay);
                to_server
                    .send((due, std::mem::take(&mut forward)))
                    .map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe))?;
            }
            if !to_client.is_empty() {
                lock(client_w).write_all(&to_client)?;
                to_client.clear();
            }
            Ok(())
        }
    });
    let _ = client.shutdown(Shutdown::Both);
}

/// Replies from the server, passed to the client whole records at a time
/// (so that they never interleave with the proxy's own replies).
fn pump_replies(shared: &Shared, mut server: TcpStream, client_w: &Mutex<TcpStream>) {
    let mut out = Vec::new();
    let _ = for_each_record(&mut server, |event| {
        match event {
            Event::Record(_)
                if shared.lose_replies.load(Ordering::Acquire) > 0
                    && !take_one(&shared.pass_replies)
                    && take_one(&shared.lose_replies) =>
            {
                shared.lost_replies.fetch_add(1, Ordering::Relaxed);
                // What came before it still goes; then the connection ends.
                let mut w = lock(client_w);
                let _ = w.write_all(&out);
                let _ = w.shutdown(Shutdown::Both);
                return Err(io::Error::from(io::ErrorKind::ConnectionAborted));
            }
            Event::Record(record) => {
                let major = shared
                    .server_owner_v41
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone();
                match major.and_then(|m| with_server_owner_v41(record, &m)) {
                    Some(changed) => {
                        out.extend_from_slice(&fragment_header(changed.len(), true));
                        out.extend_from_slice(&changed);
                    }
                    None => {
                        out.extend_from_slice(&fragment_header(record.len(), true));
                        out.extend_from_slice(record);
                    }
                }
            }
            Event::ReadDone if !out.is_empty() => {
                lock(client_w).write_all(&out)?;
                out.clear();
            }
            Event::ReadDone => {}
        }
        Ok(())
    });
    // The client sees the server's end as the end of its connection.
    let _ = lock(client_w).shutdown(Shutdown::Both);
    let _ = server.shutdown(Shutdown::Both);
}

/// `record` (a reply) with `so_major_id` set to `major`, if it is a
/// successful NFSv4.1 COMPOUND reply whose first result is EXCHANGE_ID's
/// (RFC 8881 §18.35.2); `None` for any other record.
fn with_server_owner_v41(record: &[u8], major: &[u8]) -> Option<Vec<u8>> {
    const OP_EXCHANGE_ID: u32 = 42;
    let mut r = XdrReader::new(record);
    let header = ReplyHeader::decode(&mut r).ok()?;
    if !header.is_success() {
        return None;
    }
    if r.u32("status").ok()? != 0 {
        return None;
    }
    r.opaque(1024, "tag").ok()?;
    if r.u32("resarray length").ok()? != 1
        || r.u32("opnum").ok()? != OP_EXCHANGE_ID
        || r.u32("eir_status").ok()? != 0
    {
        return None;
    }
    let start = r.position();
    let mut ok = directnfs_wire::nfs4::EXCHANGE_ID4resok::decode(&mut r).ok()?;
    let end = r.position();
    ok.eir_server_owner.so_major_id = directnfs_wire::nfs4::owner_id4::from(major);
    let mut out = record[..start].to_vec();
    ok.encode(&mut out);
    out.extend_from_slice(&record[end..]);
    Some(out)
}

/// Takes one from a counter that is above zero.
fn take_one(n: &AtomicU32) -> bool {
    n.fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| v.checked_sub(1))
        .is_ok()
}

/// What [`for_each_record`] hands its callback.
enum Event<'a> {
    /// A complete record (without its record marks).
    Record(&'a [u8]),
    /// Every complete record of the last read was handed over.
    ReadDone,
}

/// Reads `stream` until it ends or fails, handing `on` every complete
/// record and an [`Event::ReadDone`] after each read. Returns the error
/// that ended it (end of stream is `Ok`).
fn for_each_record(
    stream: &mut TcpStream,
    mut on: impl FnMut(Event<'_>) -> io::Result<()>,
) -> io::Result<()> {
    let mut reader = RecordReader::new(MAX_RECORD);
    let mut buf = vec![0u8; 256 << 10];
    let mut filled = 0usize;
    loop {
        if filled == buf.len() {
            // A fragment longer than the buffer (bounded by MAX_RECORD).
            let want = reader
                .bytes_needed(&buf[..filled])
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
            buf.resize(want.max(buf.len() + 1), 0);
        }
        let n = stream.read(&mut buf[filled..])?;
        if n == 0 {
            return Ok(());
        }
        filled += n;
        let mut start = 0;
        loop {
            let step = reader
                .next(&buf[start..filled])
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
            if step.consumed == 0 {
                break;
            }
            if let Some(record) = &step.record {
                on(Event::Record(record))?;
            }
            start += step.consumed;
        }
        buf.copy_within(start..filled, 0);
        filled -= start;
        on(Event::ReadDone)?;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use directnfs_wire::nfs3::NFSPROC3_GETATTR;
    use directnfs_wire::rpc::RecordWriter;

    /// A stand-in server: answers every call with a SUCCESS reply whose
    /// results are the procedure number, and counts the calls it got.
    struct Echo {
        addr: SocketAddr,
        calls: Arc<AtomicU64>,
    }

    fn echo_server() -> Echo {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let calls = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&calls);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let counter = Arc::clone(&counter);
                std::thread::spawn(move || {
                    let mut w = stream.try_clone().unwrap();
                    let _ = for_each_record(&mut stream, |event| {
                        let Event::Record(record) = event else {
                            return Ok(());
                        };
                        let call = CallHeader::decode(&mut XdrReader::new(record)).unwrap();
                        counter.fetch_add(1, Ordering::Relaxed);
                        let mut body = Vec::new();
                        ReplyHeader {
                            xid: call.xid,
                            body: ReplyBody::Accepted {
                                verf: OpaqueAuth::default(),
                                stat: AcceptedReply::Success,
                            },
                        }
                        .encode(&mut body);
                        body.extend_from_slice(&call.proc_.to_be_bytes());
                        let mut out = fragment_header(body.len(), true).to_vec();
                        out.extend_from_slice(&body);
                        w.write_all(&out)
                    });
                });
            }
        });
        Echo { addr, calls }
    }

    fn proxy_to(upstream: SocketAddr) -> FaultProxy {
        FaultProxy::start(ProxyConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            upstream,
            connect_timeout: Duration::from_secs(2),
            seed: 7,
        })
        .unwrap()
    }

    fn call(xid: u32, proc_: u32, payload: usize) -> Vec<u8> {
        let mut rec = Vec::new();
        CallHeader {
            xid,
            prog: NFS_PROGRAM,
            vers: NFS_V3,
            proc_,
            cred: OpaqueAuth::default(),
            verf: OpaqueAuth::default(),
        }
        .encode(&mut rec);
        rec.resize(rec.len() + payload, 0xab);
        rec
    }

    /// Sends `record` (in fragments of `max_fragment`) and returns the reply
    /// record.
    fn round_trip(s: &mut TcpStream, record: &[u8], max_fragment: usize) -> Vec<u8> {
        let mut out = Vec::new();
        RecordWriter::with_max_fragment(max_fragment).write_record(record, &mut out);
        s.write_all(&out).unwrap();
        let mut reply = None;
        let _ = for_each_record(s, |event| match event {
            Event::Record(r) => {
                reply = Some(r.to_vec());
                Err(io::Error::other("got one"))
            }
            Event::ReadDone => Ok(()),
        });
        reply.expect("a reply")
    }

    /// The XID and the NFS status of an accepted reply whose results are a
    /// `T` and nothing more.
    fn results<T: Decode>(reply: &[u8], status: fn(&T) -> nfsstat3) -> (u32, nfsstat3) {
        let (h, mut r) = reply_header(reply);
        assert!(h.is_success(), "{h:?}");
        let res = T::decode(&mut r).unwrap();
        r.finish("results").unwrap();
        (h.xid, status(&res))
    }

    fn reply_header(reply: &[u8]) -> (ReplyHeader, XdrReader<'_>) {
        let mut r = XdrReader::new(reply);
        let h = ReplyHeader::decode(&mut r).unwrap();
        (h, r)
    }

    #[test]
    fn forwards_calls_and_replies_unchanged_when_no_fault_is_set() {
        let echo = echo_server();
        let proxy = proxy_to(echo.addr);
        let mut s = TcpStream::connect(proxy.local_addr()).unwrap();
        for (xid, proc_) in [
            (1, NFSPROC3_READ),
            (2, NFSPROC3_WRITE),
            (3, NFSPROC3_COMMIT),
        ] {
            let reply = round_trip(&mut s, &call(xid, proc_, 100), usize::MAX);
            let (h, mut rest) = reply_header(&reply);
            assert_eq!(h.xid, xid);
            assert_eq!(rest.u32("proc").unwrap(), proc_, "the server's own results");
        }
        assert_eq!(echo.calls.load(Ordering::Relaxed), 3);
        let c = proxy.counts();
        assert_eq!((c.connections, c.forwarded, c.jukebox()), (1, 3, 0));
    }

    /// An NFSv4.1 COMPOUND whose first operation is `op`.
    fn compound(xid: u32, op: u32) -> Vec<u8> {
        let mut rec = Vec::new();
        CallHeader {
            xid,
            prog: NFS_PROGRAM,
            vers: 4,
            proc_: 1,
            cred: OpaqueAuth::default(),
            verf: OpaqueAuth::default(),
        }
        .encode(&mut rec);
        // Empty tag, minor version 1, one operation, its number, filler.
        for word in [0u32, 1, 1, op, 0xabab_abab] {
            rec.extend_from_slice(&word.to_be_bytes());
        }
        rec
    }

    #[test]
    fn fails_the_sequence_of_as_many_compounds_as_asked_and_forwards_the_rest() {
        const EXCHANGE_ID: u32 = 42;
        const DEADSESSION: u32 = 10078;
        let echo = echo_server();
        let proxy = proxy_to(echo.addr);
        proxy.fail_sequence_v41(DEADSESSION, 2);
        let mut s = TcpStream::connect(proxy.local_addr()).unwrap();
        // Not a SEQUENCE COMPOUND: forwarded, and not counted.
        let reply = round_trip(&mut s, &compound(1, EXCHANGE_ID), usize::MAX);
        assert_eq!(reply_header(&reply).1.u32("proc").unwrap(), 1);
        for xid in [2, 3] {
            let reply = round_trip(&mut s, &compound(xid, OP_SEQUENCE), usize::MAX);
            let (h, mut r) = reply_header(&reply);
            assert_eq!(h.xid, xid);
            let words: Vec<u32> = (0..5).map(|_| r.u32("w").unwrap()).collect();
            assert_eq!(words, [DEADSESSION, 0, 1, OP_SEQUENCE, DEADSESSION]);
            r.finish("reply").unwrap();
        }
        let reply = round_trip(&mut s, &compound(4, OP_SEQUENCE), usize::MAX);
        assert_eq!(reply_header(&reply).1.u32("proc").unwrap(), 1, "forwarded");
        assert_eq!(echo.calls.load(Ordering::Relaxed), 2);
        assert_eq!(proxy.counts().failed_sequences_v41, 2);
    }

    #[test]
    fn answers_io_calls_with_jukebox_itself_and_never_forwards_them() {
        let echo = echo_server();
        let proxy = proxy_to(echo.addr);
        proxy.set_jukebox(1000);
        let mut s = TcpStream::connect(proxy.local_addr()).unwrap();

        let jukebox = nfsstat3::NFS3ERR_JUKEBOX;
        let reply = round_trip(&mut s, &call(10, NFSPROC3_READ, 0), usize::MAX);
        assert_eq!(results(&reply, READ3res::status), (10, jukebox));
        let reply = round_trip(&mut s, &call(11, NFSPROC3_WRITE, 8192), usize::MAX);
        assert_eq!(results(&reply, WRITE3res::status), (11, jukebox));
        let reply = round_trip(&mut s, &call(12, NFSPROC3_COMMIT, 12), usize::MAX);
        assert_eq!(results(&reply, COMMIT3res::status), (12, jukebox));

        // Other procedures still reach the server.
        let reply = round_trip(&mut s, &call(13, NFSPROC3_GETATTR, 36), usize::MAX);
        let (h, mut r) = reply_header(&reply);
        assert_eq!((h.xid, r.u32("proc").unwrap()), (13, NFSPROC3_GETATTR));

        assert_eq!(
            echo.calls.load(Ordering::Relaxed),
            1,
            "only GETATTR was forwarded"
        );
        let c = proxy.counts();
        assert_eq!(
            (c.jukebox_read, c.jukebox_write, c.jukebox_commit),
            (1, 1, 1)
        );

        proxy.set_jukebox(0);
        let reply = round_trip(&mut s, &call(14, NFSPROC3_READ, 0), usize::MAX);
        let (_, mut r) = reply_header(&reply);
        assert_eq!(
            r.u32("proc").unwrap(),
            NFSPROC3_READ,
            "forwarded once the fault is off"
        );
    }

    #[test]
    fn a_share_of_calls_gets_jukebox() {
        let echo = echo_server();
        let proxy = proxy_to(echo.addr);
        proxy.set_jukebox(250);
        let mut s = TcpStream::connect(proxy.local_addr()).unwrap();
        for xid in 0..400 {
            round_trip(&mut s, &call(xid, NFSPROC3_WRITE, 16), usize::MAX);
        }
        let c = proxy.counts();
        assert_eq!(c.jukebox() + c.forwarded, 400);
        assert!((60..=140).contains(&c.jukebox()), "about a quarter: {c:?}");
    }

    #[test]
    fn multi_fragment_calls_are_forwarded_whole() {
        let echo = echo_server();
        let proxy = proxy_to(echo.addr);
        let mut s = TcpStream::connect(proxy.local_addr()).unwrap();
        let reply = round_trip(&mut s, &call(5, NFSPROC3_WRITE, 300_000), 1000);
        let (h, mut r) = reply_header(&reply);
        assert_eq!((h.xid, r.u32("proc").unwrap()), (5, NFSPROC3_WRITE));
    }

    #[test]
    fn a_server_that_cannot_be_reached_closes_the_client_connection() {
        // A port nothing listens on: bind, note it, close.
        let gone = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let proxy = proxy_to(gone);
        let mut s = TcpStream::connect(proxy.local_addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut b = [0u8; 4];
        assert!(matches!(s.read(&mut b), Ok(0) | Err(_)));
        assert_eq!(proxy.counts().upstream_failures, 1);
    }

    #[test]
    fn garbage_instead_of_a_call_closes_the_connection() {
        let echo = echo_server();
        let proxy = proxy_to(echo.addr);
        let mut s = TcpStream::connect(proxy.local_addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut out = fragment_header(8, true).to_vec();
        out.extend_from_slice(&[0xff; 8]);
        s.write_all(&out).unwrap();
        let mut b = [0u8; 4];
        assert!(matches!(s.read(&mut b), Ok(0) | Err(_)));
        assert_eq!(echo.calls.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn calls_still_queued_when_the_client_leaves_never_reach_the_server() {
        // A server that does not read stands for a stalled path: the
        // proxy's calls queue up. When the client gives the connection up
        // (having re-sent its calls elsewhere), those calls must be dropped
        // with a reset, not delivered once the path moves again.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let proxy = proxy_to(listener.local_addr().unwrap());
        let mut c = TcpStream::connect(proxy.local_addr()).unwrap();
        let (mut server_side, _) = listener.accept().unwrap();
        let mut out = Vec::new();
        let calls = 256;
        for xid in 0..calls {
            RecordWriter::default().write_record(&call(xid, NFSPROC3_WRITE, 128 << 10), &mut out);
        }
        c.write_all(&out).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        drop(c);
        std::thread::sleep(Duration::from_millis(300));
        server_side
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut got = 0usize;
        let mut b = vec![0u8; 1 << 20];
        let end = loop {
            match server_side.read(&mut b) {
                Ok(0) => break Ok(()),
                Ok(n) => got += n,
                Err(e) => break Err(e),
            }
        };
        assert!(
            matches!(&end, Err(e) if e.kind() == io::ErrorKind::ConnectionReset),
            "the server side was reset: {end:?}"
        );
        assert!(got < out.len(), "only {got} of {} bytes arrived", out.len());
    }

    #[test]
    fn dropping_the_proxy_closes_its_connections() {
        let echo = echo_server();
        let proxy = proxy_to(echo.addr);
        let mut s = TcpStream::connect(proxy.local_addr()).unwrap();
        round_trip(&mut s, &call(1, NFSPROC3_READ, 0), usize::MAX);
        drop(proxy);
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut b = [0u8; 4];
        assert!(matches!(s.read(&mut b), Ok(0) | Err(_)));
    }
}
